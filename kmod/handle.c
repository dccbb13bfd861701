// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: a file's handles on peers and their exports.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <crypto/algapi.h>

#include "kxfer.h"

/* ---------------------------------------------------------------------- */
/* Lookups                                                                 */
/* ---------------------------------------------------------------------- */

/* A peer handle, off kf_peers: its count, its gate and its reference. */
static void kxfer_peer_handle_put(struct kxfer_file *kf,
				  struct kxfer_session *s)
{
	atomic_dec(&s->s_handles);
	kxfer_gate_unhold(kf, s);
	kxfer_session_put(s);
}

/* A remote handle, off kf_remotes (no reader holds it: see job.c). */
static void kxfer_remote_handle_put(struct kxfer_rhandle *rh)
{
	atomic_dec(&rh->rh_sess->s_handles);
	kxfer_session_put(rh->rh_sess);
	kfree(rh);
}

/**
 * kxfer_peer_handle_new - a new peer handle of a file
 * @kf: the file
 * @s: the session, whose reference the handle takes (or drops, on
 *	failure)
 * @handle: out, its number
 *
 * Return: 0, %-EMFILE (4096 peer handles), %-ENOMEM.  May sleep.
 */
int kxfer_peer_handle_new(struct kxfer_file *kf, struct kxfer_session *s,
			  u32 *handle)
{
	int ret;

	/* Its FENCE gate lives as long as a peer handle names the session. */
	ret = kxfer_gate_hold(kf, s);
	if (ret) {
		kxfer_session_put(s);
		return ret;
	}
	ret = xa_alloc(&kf->kf_peers, handle, s, XA_LIMIT(1, 4096),
		       GFP_KERNEL);
	if (ret) {
		kxfer_gate_unhold(kf, s);
		kxfer_session_put(s);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	atomic_inc(&s->s_handles);
	return 0;
}

/**
 * kxfer_peer_handle_drop - give back a peer handle just made
 * @kf: the file
 * @handle: from kxfer_peer_handle_new()
 * @s: its session
 *
 * For a call that fails after making it (copy_to_user()); unless another
 * thread of the file released it meanwhile.  May sleep.
 */
void kxfer_peer_handle_drop(struct kxfer_file *kf, u32 handle,
			    struct kxfer_session *s)
{
	bool mine;

	xa_lock(&kf->kf_peers);
	mine = xa_load(&kf->kf_peers, handle) == s;
	if (mine)
		__xa_erase(&kf->kf_peers, handle);
	xa_unlock(&kf->kf_peers);
	if (mine)
		kxfer_peer_handle_put(kf, s);
}

/**
 * kxfer_ioc_peer_lookup - KXFER_IOC_PEER_LOOKUP
 * @kf: the file
 * @uarg: struct kxfer_peer_lookup in user memory
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT, %-EMFILE.  May sleep.
 */
long kxfer_ioc_peer_lookup(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_peer_lookup pl;
	struct kxfer_session *s;
	u32 handle;
	int ret;

	if (copy_from_user(&pl, uarg, sizeof(pl)))
		return -EFAULT;
	if (pl.flags || !kxfer_zero(pl.reserved, sizeof(pl.reserved)) ||
	    !pl.name[0] || !memchr(pl.name, '\0', sizeof(pl.name)))
		return -EINVAL;
	s = kxfer_session_find(pl.name);
	if (!s)
		return -ENOENT;
	ret = kxfer_peer_handle_new(kf, s, &handle);
	if (ret)
		return ret;
	pl.handle = handle;
	pl.state = kxfer_peer_state(s);
	pl.qps = s->s_nqps;
	if (copy_to_user(uarg, &pl, sizeof(pl))) {
		kxfer_peer_handle_drop(kf, handle, s);
		return -EFAULT;
	}
	return 0;
}

/*
 * Whether a lookup that presents @token (or none, %NULL) may find @rx:
 * an export made with a token only with that token, compared in
 * constant time; one made without, only without.
 */
static bool kxfer_rexport_token_ok(const struct kxfer_rexport *rx,
				   const u8 *token)
{
	if (!rx->rx_scoped || !token)
		return !rx->rx_scoped && !token;
	return !crypto_memneq(rx->rx_token, token, KXFER_TOKEN_LEN);
}

/**
 * kxfer_rhandle_fill - look up a remote export for a handle
 * @s: the session
 * @name: the export's name
 * @token: the token the lookup presents, or %NULL
 * @rh: filled: generation, length, access, and the connection the
 *	handle is valid on
 *
 * A capability-scoped export that is not asked for with its token is
 * not found.  Caller holds s_mutex.
 *
 * Return: 0 or %-ENOENT.
 */
int kxfer_rhandle_fill(struct kxfer_session *s, const char *name,
		       const u8 *token, struct kxfer_rhandle *rh)
{
	struct kxfer_rexport *rx;

	lockdep_assert_held(&s->s_mutex);
	rx = kxfer_rexport_find(s, name);
	if (!rx || !kxfer_rexport_token_ok(rx, token))
		return -ENOENT;	/* as if there were no such name */
	rh->rh_gen = rx->rx_gen;
	rh->rh_len = rx->rx_len;
	rh->rh_access = rx->rx_access;
	/* Valid on this connection (or peer over rails) only: its keys. */
	rh->rh_conn_gen = kxfer_peer_conn_gen(s);
	return 0;
}

/**
 * kxfer_ioc_remote_lookup - KXFER_IOC_REMOTE_LOOKUP
 * @kf: the file
 * @uarg: struct kxfer_remote_lookup in user memory
 *
 * A capability-scoped export that is not asked for with its token is
 * answered as a name the peer never advertised.
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT (no such peer handle, or no
 * such export for the token given), %-EMFILE.  May sleep.
 */
long kxfer_ioc_remote_lookup(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_remote_lookup rl;
	struct kxfer_rhandle *rh;
	struct kxfer_session *s;
	bool has_token;
	u32 handle;
	int ret;

	if (copy_from_user(&rl, uarg, sizeof(rl)))
		return -EFAULT;
	has_token = rl.flags & KXFER_LOOKUP_TOKEN;
	/* A token is all zeros only when there is none. */
	if ((rl.flags & ~KXFER_LOOKUP_TOKEN) ||
	    kxfer_zero(rl.token, sizeof(rl.token)) == has_token ||
	    !rl.name[0] || !memchr(rl.name, '\0', sizeof(rl.name)))
		return -EINVAL;
	xa_lock(&kf->kf_peers);
	s = rl.peer ? xa_load(&kf->kf_peers, rl.peer) : NULL;
	if (s)
		kxfer_session_get(s);
	xa_unlock(&kf->kf_peers);
	if (!s)
		return -ENOENT;

	rh = kzalloc(sizeof(*rh), GFP_KERNEL);
	ret = -ENOMEM;
	if (!rh)
		goto out_put;
	if (s->s_rails && s->s_role == KXFER_PEER_CONNECTOR) {
		/* A peer over rails: on any of them (rail.c). */
		ret = kxfer_rails_lookup(s, rl.name,
					 has_token ? rl.token : NULL, rh);
	} else {
		mutex_lock(&s->s_mutex);
		ret = kxfer_rhandle_fill(s, rl.name,
					 has_token ? rl.token : NULL, rh);
		mutex_unlock(&s->s_mutex);
	}
	/* The caller's own, but kept no longer than needed. */
	memzero_explicit(rl.token, sizeof(rl.token));
	if (ret)
		goto out_free;
	rh->rh_sess = s;
	rh->rh_peer = rl.peer;
	strscpy(rh->rh_name, rl.name, sizeof(rh->rh_name));
	/* Filled before it is visible: RELEASE may take it at once. */
	rl.access = rh->rh_access;
	rl.len = rh->rh_len;
	rl.gen = rh->rh_gen;
	atomic_inc(&s->s_handles);
	ret = xa_alloc(&kf->kf_remotes, &handle, rh, XA_LIMIT(1, 65536),
		       GFP_KERNEL);
	if (ret) {
		atomic_dec(&s->s_handles);
		ret = ret == -EBUSY ? -EMFILE : ret;
		goto out_free;
	}
	rl.handle = handle;
	if (copy_to_user(uarg, &rl, sizeof(rl))) {
		rh = xa_erase(&kf->kf_remotes, handle);
		if (rh)
			kxfer_remote_handle_put(rh);
		return -EFAULT;
	}
	return 0;

out_free:
	kfree(rh);
out_put:
	kxfer_session_put(s);
	return ret;
}

/**
 * kxfer_ioc_release - KXFER_IOC_RELEASE: give back a peer or remote handle
 * @kf: the file
 * @uarg: struct kxfer_release in user memory
 *
 * Return: 0, %-EFAULT, %-EINVAL, %-ENOENT.  May sleep.
 */
long kxfer_ioc_release(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_release r;
	struct kxfer_rhandle *rh;
	struct kxfer_session *s;

	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	if (r.flags || r.reserved)
		return -EINVAL;
	switch (r.kind) {
	case KXFER_HANDLE_PEER:
		s = r.handle ? xa_erase(&kf->kf_peers, r.handle) : NULL;
		if (!s)
			return -ENOENT;
		kxfer_peer_handle_put(kf, s);
		return 0;
	case KXFER_HANDLE_REMOTE:
		rh = r.handle ? xa_erase(&kf->kf_remotes, r.handle) : NULL;
		if (!rh)
			return -ENOENT;
		kxfer_remote_handle_put(rh);
		return 0;
	default:
		return -EINVAL;
	}
}

/**
 * kxfer_file_drop_handles - release the peer and remote handles (close)
 * @kf: the file
 */
void kxfer_file_drop_handles(struct kxfer_file *kf)
{
	struct kxfer_rhandle *rh;
	struct kxfer_session *s;
	unsigned long h;

	xa_for_each(&kf->kf_remotes, h, rh) {
		xa_erase(&kf->kf_remotes, h);
		kxfer_remote_handle_put(rh);
	}
	xa_for_each(&kf->kf_peers, h, s) {
		xa_erase(&kf->kf_peers, h);
		kxfer_peer_handle_put(kf, s);
	}
}
