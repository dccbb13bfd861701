// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: a file's handles on peers and their exports.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kxfer.h"

/* ---------------------------------------------------------------------- */
/* Lookups                                                                 */
/* ---------------------------------------------------------------------- */

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
	ret = xa_alloc(&kf->kf_peers, &handle, s, XA_LIMIT(1, 4096),
		       GFP_KERNEL);
	if (ret) {
		kxfer_session_put(s);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	pl.handle = handle;
	pl.state = READ_ONCE(s->s_state);
	pl.qps = s->s_nqps;
	if (copy_to_user(uarg, &pl, sizeof(pl))) {
		if (xa_erase(&kf->kf_peers, handle) == s)
			kxfer_session_put(s);
		return -EFAULT;
	}
	return 0;
}

/**
 * kxfer_ioc_remote_lookup - KXFER_IOC_REMOTE_LOOKUP
 * @kf: the file
 * @uarg: struct kxfer_remote_lookup in user memory
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT (no such peer handle or export),
 * %-EMFILE.  May sleep.
 */
long kxfer_ioc_remote_lookup(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_remote_lookup rl;
	struct kxfer_rhandle *rh;
	struct kxfer_rexport *rx;
	struct kxfer_session *s;
	u32 handle;
	int ret;

	if (copy_from_user(&rl, uarg, sizeof(rl)))
		return -EFAULT;
	if (rl.flags || !kxfer_zero(rl.reserved, sizeof(rl.reserved)) ||
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
	mutex_lock(&s->s_mutex);
	rx = kxfer_rexport_find(s, rl.name);
	if (rx) {
		rh->rh_gen = rx->rx_gen;
		rh->rh_len = rx->rx_len;
		rh->rh_access = rx->rx_access;
	}
	mutex_unlock(&s->s_mutex);
	ret = -ENOENT;
	if (!rx)
		goto out_free;
	rh->rh_sess = s;
	rh->rh_peer = rl.peer;
	strscpy(rh->rh_name, rl.name, sizeof(rh->rh_name));
	ret = xa_alloc(&kf->kf_remotes, &handle, rh, XA_LIMIT(1, 65536),
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -EMFILE : ret;
		goto out_free;
	}
	rl.handle = handle;
	rl.access = rh->rh_access;
	rl.len = rh->rh_len;
	rl.gen = rh->rh_gen;
	if (copy_to_user(uarg, &rl, sizeof(rl))) {
		if (xa_erase(&kf->kf_remotes, handle) == rh) {
			kfree(rh);
			kxfer_session_put(s);
		}
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
		kxfer_session_put(rh->rh_sess);
		kfree(rh);
	}
	xa_for_each(&kf->kf_peers, h, s) {
		xa_erase(&kf->kf_peers, h);
		kxfer_session_put(s);
	}
}
