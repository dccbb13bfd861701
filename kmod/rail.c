// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: a peer over several rails (DESIGN §13).
 *
 * A node with one RDMA NIC per GPU, each on its own subnet and switch,
 * reaches a peer over several rails.  kxferctl peer add NAME A0,A1,...
 * makes one session per address (each its own device, QPs, PD and export
 * registrations), grouped here into one logical peer: one name, one
 * handle for /dev/kxfer, one authentication, one FENCE order.
 *
 * On the wire (Documentation/wire-protocol.rst, Rails): the first
 * connection to come up authenticates as any session does, and the
 * acceptor gives it a token (RAIL_TOKEN) for the logical session; every
 * other rail connects with KXFER_CONN_F_JOIN and proves the token
 * (RAIL_JOIN, RAIL_JOINED: HMAC-SHA256 over both nonces and the
 * connection), which stands for the handshake and carries its result.
 *
 * Jobs: each goes to one rail, the one nearest its memory (rail_rank()),
 * or the one it names (KXFER_JOB_RAIL); a WRITE or READ of rail_stripe
 * bytes or more is striped over the nearest rails up, in a share each
 * (kxfer_rails_stripe()), and ends and notifies once every share ended.
 * A WRITE or READ (or a share) whose rail fails
 * before it completed is built again and posted on a rail that is up, as
 * often as rails fail under it, and ends (one event) only once it
 * completed or no rail is left; atomics are not posted twice.
 *
 * Locking: r_lock (a spinlock, taken from completion handlers) guards a
 * group's slots, token and queue; kxfer_rails_lock the acceptor's list of
 * groups.  A session's s_mutex is never taken under either; its s_lock
 * may be, under r_lock (kxfer_rails_kick()), and r_lock is never taken
 * under an s_lock.
 */
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/string.h>
#include <crypto/algapi.h>
#include <crypto/hash.h>

#include "kxfer.h"
#include "job.h"
#include "plan.h"

/* Acceptor: the logical sessions a rail may join, by r_group. */
static LIST_HEAD(kxfer_rails_list);
static DEFINE_SPINLOCK(kxfer_rails_lock);
/* Jobs that wait on a group's r_retry, of every group (unload waits). */
static atomic_t kxfer_rails_held = ATOMIC_INIT(0);

/* A job is posted again at most this often (rails that keep failing). */
#define KXFER_RAIL_RETRIES	16
/* A rail waiting for the first connection's token looks again after this. */
#define KXFER_RAIL_WAIT_MS	100
/*
 * A job waits for the acceptor to fence the connection it failed on
 * (RAIL_FENCE) at most this long, then ends with its error; a fence not
 * answered is asked again after KXFER_RAIL_FENCE_AGAIN_MS, and jobs that
 * wait are looked at again every KXFER_RAIL_HOLD_MS.
 */
#define KXFER_RAIL_FENCE_MS		10000
#define KXFER_RAIL_FENCE_AGAIN_MS	1000
#define KXFER_RAIL_HOLD_MS		20
/* Acceptor: RAIL_FENCEs of one connection being carried out at once. */
#define KXFER_RAIL_FENCE_REQS		(2 * KXFER_RAIL_SLOTS)

/* Connector: a failed connection of a rail, to be fenced by the acceptor. */
struct kxfer_rail_fence {
	struct list_head	f_node;		/* on r_fences */
	u64			f_sid;		/* the connection's s_sid */
	u32			f_rail;
	bool			f_done;		/* RAIL_FENCED came */
	unsigned long		f_sent;		/* jiffies, 0: not yet */
};

/* Acceptor: a RAIL_FENCE to carry out, then answer. */
struct kxfer_rail_fence_req {
	struct work_struct	fr_work;
	struct kxfer_session	*fr_sess;	/* it came on; referenced */
	struct kxfer_msg_rail_fence fr_msg;
};

static void kxfer_rails_retry_work(struct work_struct *work);
static void kxfer_rails_retry_kick(struct kxfer_rails *r, unsigned long delay);
static void kxfer_rails_fences_free(struct kxfer_rails *r, bool done_only);
static int kxfer_rails_fence_recv(struct kxfer_session *s,
				  const struct kxfer_msg_rail_fence *rf,
				  const char **why);
static int kxfer_rails_fenced_recv(struct kxfer_session *s,
				   const struct kxfer_msg_rail_fence *rf,
				   const char **why);

/**
 * kxfer_rails_alloc - a new logical session over rails
 * @role: which side of it this node is
 * @name: the peer's name (connector) or the remote node's (acceptor)
 * @nrails: connector: its rails; acceptor: 0
 *
 * Return: the group with one reference, or %NULL.
 */
struct kxfer_rails *kxfer_rails_alloc(enum kxfer_peer_role role,
				      const char *name, unsigned int nrails)
{
	struct kxfer_rails *r;

	BUILD_BUG_ON(KXFER_RAIL_SLOTS < KXFER_MAX_RAILS);
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	refcount_set(&r->r_ref, 1);
	INIT_LIST_HEAD(&r->r_node);
	INIT_LIST_HEAD(&r->r_retry);
	INIT_LIST_HEAD(&r->r_stripe);
	spin_lock_init(&r->r_lock);
	INIT_DELAYED_WORK(&r->r_retry_work, kxfer_rails_retry_work);
	INIT_LIST_HEAD(&r->r_fences);
	r->r_role = role;
	strscpy(r->r_name, name, sizeof(r->r_name));
	r->r_nrails = nrails;
	r->r_lead = -1;
	return r;
}

/* Forget the fences asked (@done_only: those answered).  Any context. */
static void kxfer_rails_fences_free(struct kxfer_rails *r, bool done_only)
{
	struct kxfer_rail_fence *f, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&r->r_lock, flags);
	list_for_each_entry_safe(f, tmp, &r->r_fences, f_node)
		if (f->f_done || !done_only)
			list_move(&f->f_node, &list);
	spin_unlock_irqrestore(&r->r_lock, flags);
	list_for_each_entry_safe(f, tmp, &list, f_node)
		kfree(f);
}

/**
 * kxfer_rails_put - drop a reference to a group
 * @r: the group, or %NULL
 *
 * The last one takes it off the acceptor's list and frees it.  Any
 * context.
 */
void kxfer_rails_put(struct kxfer_rails *r)
{
	unsigned long flags;

	if (!r || !refcount_dec_and_test(&r->r_ref))
		return;
	/* A lookup meanwhile finds it at 0 and passes (kxfer_rails_find()). */
	spin_lock_irqsave(&kxfer_rails_lock, flags);
	list_del_init(&r->r_node);
	spin_unlock_irqrestore(&kxfer_rails_lock, flags);
	kxfer_rails_fences_free(r, false);
	bitmap_free(r->r_seen);
	memzero_explicit(r->r_token, sizeof(r->r_token));
	kfree(r);
}

/**
 * kxfer_rails_leave - a session of a group is freed
 * @s: the session, its last reference gone
 *
 * Any context.
 */
void kxfer_rails_leave(struct kxfer_session *s)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	unsigned int i;

	if (!r)
		return;
	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < KXFER_RAIL_SLOTS; i++)
		if (r->r_sess[i] == s)
			r->r_sess[i] = NULL;
	spin_unlock_irqrestore(&r->r_lock, flags);
	s->s_rails = NULL;
	kxfer_rails_put(r);
}

/* The session in slot @i, referenced, or %NULL.  Caller holds r_lock. */
static struct kxfer_session *kxfer_rails_slot_get(struct kxfer_rails *r,
						  unsigned int i)
{
	struct kxfer_session *s = r->r_sess[i];

	return s && kref_get_unless_zero(&s->s_ref) ? s : NULL;
}

/**
 * kxfer_rails_snapshot - the sessions of a peer's rails, referenced
 * @s: any session of the peer
 * @out: KXFER_RAIL_SLOTS entries; the caller puts each
 *
 * Return: how many; a session that is no rail of a group is its own one.
 */
unsigned int kxfer_rails_snapshot(struct kxfer_session *s,
				  struct kxfer_session **out)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	unsigned int i, n = 0;

	if (!r) {
		kxfer_session_get(s);
		out[0] = s;
		return 1;
	}
	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < ARRAY_SIZE(r->r_sess); i++) {
		out[n] = kxfer_rails_slot_get(r, i);
		if (out[n])
			n++;
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Connecting side                                                         */
/* ---------------------------------------------------------------------- */

static bool kxfer_rails_connector(const struct kxfer_session *s)
{
	return s->s_rails && s->s_rails->r_role == KXFER_PEER_CONNECTOR;
}

/*
 * Rails that wait for a token look again now.  A rail being stopped
 * stays in r_sess until its last reference goes, after its timer's last
 * cancel: KXFER_SE_STOPPED, tested under its s_lock as the stop sets
 * it, keeps the timer from being queued again then.
 */
static void kxfer_rails_kick(struct kxfer_rails *r, struct kxfer_session *self)
{
	struct kxfer_session *s;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < r->r_nrails; i++) {
		s = r->r_sess[i];
		if (!s || s == self || READ_ONCE(s->s_state) != KXFER_PEER_DOWN)
			continue;
		spin_lock(&s->s_lock);
		if (!test_bit(KXFER_SE_STOPPED, &s->s_events))
			mod_delayed_work(kxfer_wq, &s->s_timer, 0);
		spin_unlock(&s->s_lock);
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
}

/**
 * kxfer_rails_may_connect - may a rail connect now, and how?
 * @s: a connecting session, down
 *
 * With a token of the logical session, it joins it; without, one rail at
 * a time makes the first connection (and learns the token), the others
 * wait for it and look again every KXFER_RAIL_WAIT_MS.  Caller holds
 * s_mutex.
 *
 * Return: true to connect now (s_join says how), false to wait.
 */
bool kxfer_rails_may_connect(struct kxfer_session *s)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	bool ok = true;

	s->s_join = false;
	if (!r)
		return true;
	spin_lock_irqsave(&r->r_lock, flags);
	if (r->r_group)
		s->s_join = true;
	else if (r->r_lead < 0 || r->r_lead == (int)s->s_rail)
		r->r_lead = s->s_rail;
	else
		ok = false;
	spin_unlock_irqrestore(&r->r_lock, flags);
	if (!ok)
		mod_delayed_work(kxfer_wq, &s->s_timer,
				 msecs_to_jiffies(KXFER_RAIL_WAIT_MS));
	return ok;
}

/**
 * kxfer_rails_conn_start - a rail's control channel starts
 * @s: the session
 *
 * A connection that does not join starts a new logical session: remote
 * handles of the last one are stale from now on, whatever rail they were
 * used on.  Caller holds s_mutex.
 */
void kxfer_rails_conn_start(struct kxfer_session *s)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;

	if (!kxfer_rails_connector(s) || s->s_join)
		return;
	spin_lock_irqsave(&r->r_lock, flags);
	r->r_epoch++;
	spin_unlock_irqrestore(&r->r_lock, flags);
}

/**
 * kxfer_rails_up - a rail is about to be up
 * @s: the session
 *
 * Placement needs to know its device.  Caller holds s_mutex.
 */
void kxfer_rails_up(struct kxfer_session *s)
{
	if (!s->s_rails || !s->s_dev)
		return;
	kxfer_ibdev_path(s->s_dev->kd_ibdev, s->s_port_num, &s->s_rail_path);
	WRITE_ONCE(s->s_rail_kd, s->s_dev);
	WRITE_ONCE(s->s_rail_node, ibdev_to_node(s->s_dev->kd_ibdev));
	/* Before the rail is up (kxfer_rail_up()): placement reads them. */
	smp_wmb();
	if (s->s_rails->r_nrails > 1 && s->s_join)
		kxfer_info("peer %s: rail %u up on %s, joined\n", s->s_name,
			   s->s_rail, s->s_dev->kd_name);
}

/**
 * kxfer_rails_down - a rail failed, before its teardown
 * @s: the session
 * @was_up: it was up
 *
 * A rail that made the first connection lets another try.  Caller holds
 * s_mutex.
 */
void kxfer_rails_down(struct kxfer_session *s, bool was_up)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	bool lead = false;

	WRITE_ONCE(s->s_rail_kd, NULL);
	s->s_got_token = false;
	if (!kxfer_rails_connector(s))
		return;
	spin_lock_irqsave(&r->r_lock, flags);
	if (r->r_lead == (int)s->s_rail) {
		r->r_lead = -1;
		lead = true;
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	if (lead)
		kxfer_rails_kick(r, s);
	if (was_up && r->r_nrails > 1)
		kxfer_info("peer %s: rail %u down: %s\n", s->s_name, s->s_rail,
			   s->s_fail_why);
}

/* Connector: the acceptor's token, on the first connection. */
static int kxfer_rails_token(struct kxfer_session *s,
			     const struct kxfer_msg_rail_token *rt,
			     const char **why)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;

	if (!kxfer_rails_connector(s) || s->s_join || s->s_got_token ||
	    !(s->s_peer_features & KXFER_WIRE_F_RAILS)) {
		*why = "unexpected RAIL_TOKEN";
		return -EPROTO;
	}
	s->s_got_token = true;
	spin_lock_irqsave(&r->r_lock, flags);
	r->r_group = le64_to_cpu(rt->rt_group);
	memcpy(r->r_token, rt->rt_token, sizeof(r->r_token));
	r->r_auth = s->s_auth.sa_result;
	r->r_named = kxfer_auth_named(s);
	if (r->r_lead == (int)s->s_rail)
		r->r_lead = -1;
	spin_unlock_irqrestore(&r->r_lock, flags);
	kxfer_rails_kick(r, s);
	return 0;
}

/**
 * kxfer_rails_join_refused - the acceptor knows no session to join
 * @s: a connecting rail whose join was refused
 *
 * The token is stale (the acceptor restarted, or all its rails went):
 * the next attempt makes a first connection again, at once.  Caller
 * holds s_mutex.
 */
void kxfer_rails_join_refused(struct kxfer_session *s)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;

	if (!kxfer_rails_connector(s))
		return;
	spin_lock_irqsave(&r->r_lock, flags);
	if (r->r_group == s->s_join_group) {
		r->r_group = 0;
		memzero_explicit(r->r_token, sizeof(r->r_token));
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	s->s_backoff_ms = 0;
}

/* ---------------------------------------------------------------------- */
/* The join's proofs                                                       */
/* ---------------------------------------------------------------------- */

/*
 * The proof of @role for a connection joining @group as rail @rail, keyed
 * with @token: HMAC-SHA256 of struct kxfer_wire_rail_mac, which binds it
 * to both nonces, both nodes and this connection's QPs.
 */
static int kxfer_rails_mac(struct kxfer_session *s, const u8 *token,
			   u64 group, u32 rail, u32 role, u8 *out)
{
	const struct kxfer_sess_auth *a = &s->s_auth;
	bool conn = s->s_role == KXFER_PEER_CONNECTOR;
	struct kxfer_wire_rail_mac m = {};
	struct crypto_shash *tfm;
	unsigned int i;
	int ret;

	BUILD_BUG_ON(sizeof(KXFER_RAIL_LABEL) > sizeof(m.rm_label));
	memcpy(m.rm_label, KXFER_RAIL_LABEL, sizeof(KXFER_RAIL_LABEL));
	m.rm_role = cpu_to_le32(role);
	m.rm_rail = cpu_to_le32(rail);
	m.rm_group = cpu_to_le64(group);
	m.rm_session_id = cpu_to_le64(s->s_sid);
	m.rm_incarnation = cpu_to_le32(conn ? kxfer_incarnation :
				       s->s_incarnation);
	m.rm_nqps = cpu_to_le32(s->s_nqps);
	memcpy(m.rm_cnonce, conn ? a->sa_nonce : a->sa_peer_nonce,
	       sizeof(m.rm_cnonce));
	memcpy(m.rm_anonce, conn ? a->sa_peer_nonce : a->sa_nonce,
	       sizeof(m.rm_anonce));
	strscpy_pad(m.rm_cnode, conn ? kxfer_node_name : s->s_remote_node,
		    sizeof(m.rm_cnode));
	strscpy_pad(m.rm_anode, conn ? s->s_remote_node : kxfer_node_name,
		    sizeof(m.rm_anode));
	for (i = 0; i < s->s_nqps; i++) {
		const struct kxfer_qp *qp = &s->s_qps[i];
		u32 mine = qp->q_id && qp->q_id->qp ? qp->q_id->qp->qp_num : 0;

		m.rm_qpn[i][conn ? 0 : 1] = cpu_to_le32(mine);
		m.rm_qpn[i][conn ? 1 : 0] = cpu_to_le32(qp->q_remote_qpn);
	}

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	ret = crypto_shash_setkey(tfm, token, KXFER_RAIL_TOKEN_LEN);
	if (!ret)
		ret = crypto_shash_tfm_digest(tfm, (const u8 *)&m, sizeof(m),
					      out);
	crypto_free_shash(tfm);		/* wipes the keyed state */
	return ret;
}

/* A copy of the connector's token, if it is still that of @group. */
static bool kxfer_rails_token_copy(struct kxfer_rails *r, u64 group, u8 *token)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&r->r_lock, flags);
	ok = group && r->r_group == group;
	if (ok)
		memcpy(token, r->r_token, KXFER_RAIL_TOKEN_LEN);
	spin_unlock_irqrestore(&r->r_lock, flags);
	return ok;
}

/**
 * kxfer_rails_join_start - a joining rail's first words after its HELLO
 * @s: a connecting session made with KXFER_CONN_F_JOIN; the acceptor's
 *	nonce came with its accept
 *
 * Sends RAIL_JOIN with a nonce of ours and our proof of the token, and
 * waits for the acceptor's.  Caller holds s_mutex.
 */
void kxfer_rails_join_start(struct kxfer_session *s)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	struct kxfer_msg_rail_join rj = {};
	u8 token[KXFER_RAIL_TOKEN_LEN];
	unsigned long flags;
	u64 group;
	int ret;

	spin_lock_irqsave(&s->s_rails->r_lock, flags);
	group = s->s_rails->r_group;
	spin_unlock_irqrestore(&s->s_rails->r_lock, flags);
	if (!kxfer_rails_token_copy(s->s_rails, group, token)) {
		kxfer_session_fail(s, -EAGAIN, "rail join: the session ended");
		return;
	}
	s->s_join_group = group;
	get_random_bytes(a->sa_nonce, sizeof(a->sa_nonce));
	ret = kxfer_rails_mac(s, token, group, s->s_rail,
			      KXFER_AUTH_ROLE_CONNECTOR, rj.rj_mac);
	memzero_explicit(token, sizeof(token));
	if (ret) {
		kxfer_session_fail(s, ret, "cannot compute HMAC-SHA256");
		return;
	}
	rj.rj_group = cpu_to_le64(group);
	rj.rj_rail = cpu_to_le32(s->s_rail);
	memcpy(rj.rj_nonce, a->sa_nonce, sizeof(rj.rj_nonce));
	kxfer_auth_join_wait(s);
	kxfer_ctrl_send(s, KXFER_MSG_RAIL_JOIN, &rj.rj_group,
			sizeof(rj) - sizeof(rj.rj_hdr));
}

/* Acceptor: the group of that id whose remote node is @node, referenced. */
static struct kxfer_rails *kxfer_rails_find(u64 group, const char *node,
					    u8 *token)
{
	struct kxfer_rails *r, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&kxfer_rails_lock, flags);
	list_for_each_entry(r, &kxfer_rails_list, r_node) {
		if (r->r_group != group || strcmp(r->r_name, node) ||
		    !refcount_inc_not_zero(&r->r_ref))
			continue;
		found = r;
		memcpy(token, r->r_token, KXFER_RAIL_TOKEN_LEN);
		break;
	}
	spin_unlock_irqrestore(&kxfer_rails_lock, flags);
	return found;
}

/*
 * Acceptor: @s takes a slot of @r, as rail @rail.  An older connection
 * of the same rail (the connector tore it down before connecting again)
 * ends now rather than at its keepalive timeout.
 *
 * Return: 0, or -EUSERS if every slot is taken.
 */
static int kxfer_rails_take_slot(struct kxfer_rails *r,
				 struct kxfer_session *s, u32 rail)
{
	struct kxfer_session *old = NULL, *it;
	unsigned long flags;
	int i, free = -1;

	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < KXFER_RAIL_SLOTS; i++) {
		it = r->r_sess[i];
		if (!it) {
			free = free < 0 ? i : free;
		} else if (it->s_rail == rail && !old) {
			old = kxfer_rails_slot_get(r, i);
			if (old)
				free = i;
		}
	}
	if (free >= 0)
		r->r_sess[free] = s;
	spin_unlock_irqrestore(&r->r_lock, flags);
	if (old) {
		kxfer_session_fail(old, -ECONNRESET,
				   "its rail connected again");
		kxfer_session_put(old);
	}
	return free < 0 ? -EUSERS : 0;
}

/* Acceptor: a connection proves the token of a session it joins. */
static int kxfer_rails_join(struct kxfer_session *s,
			    const struct kxfer_msg_rail_join *rj,
			    const char **why)
{
	struct kxfer_msg_rail_joined rd = {};
	u64 group = le64_to_cpu(rj->rj_group);
	u32 rail = le32_to_cpu(rj->rj_rail);
	u8 token[KXFER_RAIL_TOKEN_LEN], mac[KXFER_AUTH_MAC_LEN];
	struct kxfer_rails *r;
	int ret;

	if (s->s_role != KXFER_PEER_ACCEPTOR ||
	    s->s_auth.sa_state != KXFER_AUTH_S_WAIT_JOIN ||
	    !s->s_got_hello || !(s->s_peer_features & KXFER_WIRE_F_RAILS)) {
		*why = "unexpected RAIL_JOIN";
		return -EPROTO;
	}
	r = kxfer_rails_find(group, s->s_remote_node, token);
	if (!r) {
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_JOIN,
				  "rail join: no such session here");
		return 0;
	}
	memcpy(s->s_auth.sa_peer_nonce, rj->rj_nonce,
	       sizeof(s->s_auth.sa_peer_nonce));
	ret = kxfer_rails_mac(s, token, group, rail, KXFER_AUTH_ROLE_CONNECTOR,
			      mac);
	if (!ret && crypto_memneq(mac, rj->rj_mac, sizeof(mac))) {
		memzero_explicit(token, sizeof(token));
		kxfer_rails_put(r);
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_JOIN,
				  "rail join: the proof does not match the session's token");
		return 0;
	}
	if (!ret)
		ret = kxfer_rails_mac(s, token, group, rail,
				      KXFER_AUTH_ROLE_ACCEPTOR, rd.rd_mac);
	memzero_explicit(token, sizeof(token));
	if (ret) {
		kxfer_rails_put(r);
		*why = "cannot compute HMAC-SHA256";
		return ret;
	}
	/* The listener it came through may ask more than the first's did. */
	if (s->s_auth.sa_required && r->r_auth != KXFER_PEER_AUTH_OK &&
	    r->r_auth != KXFER_PEER_AUTH_SHARED) {
		kxfer_rails_put(r);
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_JOIN_REFUSED,
				  "rail join: the listener requires authentication");
		return 0;
	}
	s->s_rail = rail;
	if (kxfer_rails_take_slot(r, s, rail)) {
		kxfer_rails_put(r);
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_JOIN_REFUSED,
				  "rail join: the session has too many rails");
		return 0;
	}
	s->s_rails = r;
	kxfer_ctrl_send(s, KXFER_MSG_RAIL_JOINED, rd.rd_mac,
			sizeof(rd) - sizeof(rd.rd_hdr));
	kxfer_ctrl_flush(s);
	kxfer_auth_join_ok(s, r->r_auth, r->r_named);
	kxfer_info("peer %s: rail %u joined the session of peer id %u\n",
		   s->s_name, rail, r->r_id);
	return 0;
}

/* Connector: the acceptor's proof. */
static int kxfer_rails_joined(struct kxfer_session *s,
			      const struct kxfer_msg_rail_joined *rd,
			      const char **why)
{
	struct kxfer_rails *r = s->s_rails;
	u8 token[KXFER_RAIL_TOKEN_LEN], mac[KXFER_AUTH_MAC_LEN];
	unsigned long flags;
	enum kxfer_peer_auth auth;
	bool named;
	int ret;

	if (!kxfer_rails_connector(s) ||
	    s->s_auth.sa_state != KXFER_AUTH_S_WAIT_JOINED) {
		*why = "unexpected RAIL_JOINED";
		return -EPROTO;
	}
	if (!kxfer_rails_token_copy(r, s->s_join_group, token)) {
		kxfer_session_fail(s, -EAGAIN, "rail join: the session ended");
		return 0;
	}
	ret = kxfer_rails_mac(s, token, s->s_join_group, s->s_rail,
			      KXFER_AUTH_ROLE_ACCEPTOR, mac);
	memzero_explicit(token, sizeof(token));
	if (ret) {
		*why = "cannot compute HMAC-SHA256";
		return ret;
	}
	if (crypto_memneq(mac, rd->rd_mac, sizeof(mac))) {
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_JOIN,
				  "rail join: the peer's proof does not match");
		return 0;
	}
	spin_lock_irqsave(&r->r_lock, flags);
	auth = r->r_auth;
	named = r->r_named;
	spin_unlock_irqrestore(&r->r_lock, flags);
	kxfer_auth_join_ok(s, auth, named);
	return 0;
}

/**
 * kxfer_rails_issue - give a connector the token of its logical session
 * @s: an accepting session that did not join one, whose connector's
 *	HELLO had KXFER_WIRE_F_RAILS, once it authenticated (or needs not)
 *
 * Other rails of the connector's then join it (kxfer_rails_join()).
 * Caller holds s_mutex.
 */
void kxfer_rails_issue(struct kxfer_session *s)
{
	struct kxfer_msg_rail_token rt = {};
	struct kxfer_rails *r;
	unsigned long flags;

	r = kxfer_rails_alloc(KXFER_PEER_ACCEPTOR, s->s_remote_node, 0);
	if (r)
		r->r_seen = bitmap_zalloc(KXFER_RAIL_NOTIFY_WINDOW, GFP_KERNEL);
	if (!r || !r->r_seen) {
		kxfer_rails_put(r);
		kxfer_session_fail(s, -ENOMEM, "no memory for the session's rails");
		return;
	}
	do {
		r->r_group = get_random_u64();
	} while (!r->r_group);
	get_random_bytes(r->r_token, sizeof(r->r_token));
	r->r_id = s->s_id;
	r->r_auth = s->s_auth.sa_result;
	r->r_named = kxfer_auth_named(s);
	r->r_sess[0] = s;
	/* Its HELLO said which rail it is (0: a peer of one rail). */
	s->s_rail = s->s_hello_rail ? s->s_hello_rail - 1 : KXFER_MAX_RAILS;
	s->s_rails = r;
	spin_lock_irqsave(&kxfer_rails_lock, flags);
	list_add(&r->r_node, &kxfer_rails_list);
	spin_unlock_irqrestore(&kxfer_rails_lock, flags);

	rt.rt_group = cpu_to_le64(r->r_group);
	memcpy(rt.rt_token, r->r_token, sizeof(rt.rt_token));
	kxfer_ctrl_send(s, KXFER_MSG_RAIL_TOKEN, &rt.rt_group,
			sizeof(rt) - sizeof(rt.rt_hdr));
	memzero_explicit(&rt, sizeof(rt));
}

/* ---------------------------------------------------------------------- */
/* Notifications numbered, fences                                          */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_rails_notify_seq - the number of a job's notification
 * @job: a NOTIFY job of a connector over rails
 *
 * Given when it is first sent and kept when the job is posted again on
 * another rail, so that the acceptor delivers it once.  Any context.
 *
 * Return: the number, not 0.
 */
u64 kxfer_rails_notify_seq(struct kxfer_task *job)
{
	struct kxfer_rails *r = job->j_rails;
	unsigned long flags;

	if (!job->j_notify_seq) {
		spin_lock_irqsave(&r->r_lock, flags);
		job->j_notify_seq = ++r->r_notify_seq;
		spin_unlock_irqrestore(&r->r_lock, flags);
	}
	return job->j_notify_seq;
}

/**
 * kxfer_rails_notify_stale - has a job's number fallen too far behind?
 * @job: a NOTIFY job of a connector over rails
 *
 * Posted again so late that the acceptor may have forgotten its number
 * (half a window behind the newest, wire.h): it would take it as seen
 * and drop it, so the job ends with an error instead.  Any context.
 */
bool kxfer_rails_notify_stale(const struct kxfer_task *job)
{
	return job->j_notify_seq &&
	       READ_ONCE(job->j_rails->r_notify_seq) - job->j_notify_seq >=
	       KXFER_RAIL_NOTIFY_WINDOW / 2;
}

/* Numbers @from to @to - 1 (fewer than the window) are not seen yet. */
static void kxfer_rails_seen_clear(unsigned long *seen, u64 from, u64 to)
{
	const u64 w = KXFER_RAIL_NOTIFY_WINDOW;
	unsigned int start = from % w, n = to - from;

	if (!n)
		return;
	if (start + n <= w) {
		bitmap_clear(seen, start, n);
	} else {
		bitmap_clear(seen, start, w - start);
		bitmap_clear(seen, 0, n - (w - start));
	}
}

/**
 * kxfer_rails_notify_first - is this the first time a number comes?
 * @s: an accepting session
 * @seq: a RAIL_NOTIFY's number
 *
 * The numbers of the last KXFER_RAIL_NOTIFY_WINDOW are remembered for
 * the whole logical session, whatever rail they came on; one older than
 * that is taken as seen (the connector does not send one so late, see
 * kxfer_rails_repost_on()).  Caller holds s_mutex.
 *
 * Return: true to deliver it.
 */
bool kxfer_rails_notify_first(struct kxfer_session *s, u64 seq)
{
	const u64 w = KXFER_RAIL_NOTIFY_WINDOW;
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	bool first;
	u64 n;

	if (!r || !r->r_seen)
		return true;
	spin_lock_irqsave(&r->r_lock, flags);
	if (seq > r->r_seen_top) {
		/* Numbers between the last and this one: not seen yet. */
		n = max(r->r_seen_top + 1, seq > w ? seq - w + 1 : 1);
		kxfer_rails_seen_clear(r->r_seen, n, seq);
		__set_bit(seq % w, r->r_seen);
		r->r_seen_top = seq;
		first = true;
	} else if (r->r_seen_top - seq >= w) {
		first = false;
	} else {
		first = !__test_and_set_bit(seq % w, r->r_seen);
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	if (!first) {
		atomic64_inc(&s->s_notify_dups);
		pr_info_ratelimited("kxfer: peer %s: notification %llu came again, not delivered\n",
				    s->s_name, seq);
	}
	return first;
}

/* Acceptor: end the connection of @sid, then answer on the one it came. */
static void kxfer_rails_fence_work(struct work_struct *work)
{
	struct kxfer_rail_fence_req *fr =
		container_of(work, struct kxfer_rail_fence_req, fr_work);
	struct kxfer_session *s = fr->fr_sess, *old;

	old = kxfer_session_get_sid(s->s_remote_node,
				    le64_to_cpu(fr->fr_msg.rf_sid));
	/* Only a connection of the same logical session. */
	if (old && old->s_rails == s->s_rails) {
		mutex_lock(&old->s_mutex);
		if (old->s_state != KXFER_PEER_CLOSING) {
			kxfer_session_qps_error(old);
			kxfer_session_fail(old, -ECONNRESET,
					   "the peer fenced this rail");
			atomic64_inc(&old->s_fenced);
			kxfer_info("peer %s: rail %u fenced at the peer's request\n",
				   old->s_name,
				   le32_to_cpu(fr->fr_msg.rf_rail));
		}
		mutex_unlock(&old->s_mutex);
	}
	if (old)
		kxfer_session_put(old);
	mutex_lock(&s->s_mutex);
	if (s->s_ctrl_up && !test_bit(KXFER_SE_FAIL, &s->s_events)) {
		kxfer_ctrl_send(s, KXFER_MSG_RAIL_FENCED, &fr->fr_msg.rf_rail,
				sizeof(fr->fr_msg) - sizeof(fr->fr_msg.rf_hdr));
		kxfer_ctrl_flush(s);
	}
	mutex_unlock(&s->s_mutex);
	atomic_dec(&s->s_fence_reqs);
	kxfer_session_put(s);
	kfree(fr);
}

/* Acceptor: the connector asks to fence a failed connection of its. */
static int kxfer_rails_fence_recv(struct kxfer_session *s,
				  const struct kxfer_msg_rail_fence *rf,
				  const char **why)
{
	struct kxfer_rail_fence_req *fr;

	if (s->s_role != KXFER_PEER_ACCEPTOR || !s->s_rails) {
		*why = "unexpected RAIL_FENCE";
		return -EPROTO;
	}
	/* A connector has a fence to ask per failed connection, not more. */
	if (atomic_read(&s->s_fence_reqs) >= KXFER_RAIL_FENCE_REQS) {
		*why = "too many fences asked at once";
		return -EPROTO;
	}
	fr = kzalloc(sizeof(*fr), GFP_KERNEL);
	if (!fr) {
		*why = "no memory for a fence";
		return -ENOMEM;
	}
	INIT_WORK(&fr->fr_work, kxfer_rails_fence_work);
	memcpy(&fr->fr_msg, rf, sizeof(fr->fr_msg));
	kxfer_session_get(s);
	atomic_inc(&s->s_fence_reqs);
	fr->fr_sess = s;
	queue_work(kxfer_wq, &fr->fr_work);
	return 0;
}

/* Connector: the acceptor fenced a failed connection; its jobs may go. */
static int kxfer_rails_fenced_recv(struct kxfer_session *s,
				   const struct kxfer_msg_rail_fence *rf,
				   const char **why)
{
	struct kxfer_rails *r = s->s_rails;
	u32 rail = le32_to_cpu(rf->rf_rail);
	u64 sid = le64_to_cpu(rf->rf_sid);
	struct kxfer_rail_fence *f;
	unsigned long flags;
	bool hit = false;

	if (!kxfer_rails_connector(s)) {
		*why = "unexpected RAIL_FENCED";
		return -EPROTO;
	}
	spin_lock_irqsave(&r->r_lock, flags);
	list_for_each_entry(f, &r->r_fences, f_node) {
		if (f->f_rail != rail || f->f_sid != sid || f->f_done)
			continue;
		f->f_done = true;
		hit = true;
		if (rail < r->r_nrails && r->r_sess[rail])
			atomic64_inc(&r->r_sess[rail]->s_fenced);
		break;
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	/* An answer to a fence asked twice, or forgotten: nothing to do. */
	if (hit)
		kxfer_rails_retry_kick(r, 0);
	return 0;
}

/**
 * kxfer_rails_recv - apply a message of the rails
 * @s: the session
 * @buf: RAIL_TOKEN, RAIL_JOIN or RAIL_JOINED, checked by kxfer_wire_check()
 *	and, for the join's, by kxfer_auth_gate()
 * @why: set to a reason on failure
 *
 * Caller holds s_mutex.
 *
 * Return: 0, or a negative errno that ends the session.
 */
int kxfer_rails_recv(struct kxfer_session *s, const void *buf,
		     const char **why)
{
	const struct kxfer_msg_hdr *h = buf;

	switch (h->mh_type) {
	case KXFER_MSG_RAIL_TOKEN:
		return kxfer_rails_token(s, buf, why);
	case KXFER_MSG_RAIL_JOIN:
		return kxfer_rails_join(s, buf, why);
	case KXFER_MSG_RAIL_JOINED:
		return kxfer_rails_joined(s, buf, why);
	case KXFER_MSG_RAIL_FENCE:
		return kxfer_rails_fence_recv(s, buf, why);
	case KXFER_MSG_RAIL_FENCED:
		return kxfer_rails_fenced_recv(s, buf, why);
	default:
		*why = "unknown message type";
		return -EPROTO;
	}
}

/* ---------------------------------------------------------------------- */
/* What files see                                                          */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_peer_conn_gen - the connection remote handles are valid on
 * @s: a session
 *
 * A connecting peer over rails: its logical session, which outlives the
 * connections of its rails while one of them is up; otherwise the
 * session's current connection.  Caller holds s_mutex.
 *
 * Return: a number that changes when handles looked up before go stale.
 */
u64 kxfer_peer_conn_gen(struct kxfer_session *s)
{
	struct kxfer_rails *r = s->s_rails;
	unsigned long flags;
	u64 epoch;

	if (!kxfer_rails_connector(s))
		return s->s_conn_gen;
	spin_lock_irqsave(&r->r_lock, flags);
	epoch = r->r_epoch;
	spin_unlock_irqrestore(&r->r_lock, flags);
	return epoch;
}

/**
 * kxfer_peer_id - the peer id events name a session's peer by
 * @s: a session
 *
 * Return: the id of the logical session's first rail, or the session's.
 */
u32 kxfer_peer_id(const struct kxfer_session *s)
{
	return s->s_rails ? s->s_rails->r_id : s->s_id;
}

/**
 * kxfer_peer_state - a peer's state as a whole
 * @s: a session
 *
 * Return: up if one of its rails is, else the session's own state.
 */
enum kxfer_peer_state kxfer_peer_state(struct kxfer_session *s)
{
	struct kxfer_session *rails[KXFER_RAIL_SLOTS];
	enum kxfer_peer_state st = READ_ONCE(s->s_state);
	unsigned int i, n;

	if (!kxfer_rails_connector(s))
		return st;
	n = kxfer_rails_snapshot(s, rails);
	for (i = 0; i < n; i++) {
		if (READ_ONCE(rails[i]->s_state) == KXFER_PEER_UP)
			st = KXFER_PEER_UP;
		kxfer_session_put(rails[i]);
	}
	return st;
}

/**
 * kxfer_rails_lookup - a remote export of a peer over rails
 * @s: a connecting session of a group (the peer's handle names it)
 * @name: the export's name
 * @token: the token the lookup presents, or %NULL
 * @rh: filled: generation, length, access and the logical session
 *
 * Looked up on the first rail that is up and has it.  May sleep.
 *
 * Return: 0 or %-ENOENT.
 */
int kxfer_rails_lookup(struct kxfer_session *s, const char *name,
		       const u8 *token, struct kxfer_rhandle *rh)
{
	struct kxfer_session *rails[KXFER_RAIL_SLOTS];
	unsigned int i, n;
	int ret = -ENOENT;

	n = kxfer_rails_snapshot(s, rails);
	for (i = 0; i < n; i++) {
		struct kxfer_session *r = rails[i];

		mutex_lock(&r->s_mutex);
		if (ret && r->s_state == KXFER_PEER_UP)
			ret = kxfer_rhandle_fill(r, name, token, rh);
		mutex_unlock(&r->s_mutex);
		kxfer_session_put(r);
	}
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Placement                                                               */
/* ---------------------------------------------------------------------- */

/* The NUMA node of a pool's memory, or NUMA_NO_NODE. */
static int kxfer_pool_node(const struct kxfer_pool *pool)
{
	if (!pool)
		return NUMA_NO_NODE;
	if (pool->kp_numa != NUMA_NO_NODE)
		return pool->kp_numa;
	if (pool->kp_nchunks && pool->kp_chunks[0].kc_page)
		return page_to_nid(pool->kp_chunks[0].kc_page);
	return NUMA_NO_NODE;
}

/*
 * Ranks of kxfer_rail_rank(): PCIe distance counts from KXFER_RANK_HOPS
 * down (times two, the NUMA bit below it); a dma-buf pool's own device
 * and the rail a job names rank above any distance.
 */
#define KXFER_RANK_HOPS		256
#define KXFER_RANK_DEVICE	(1 << 10)
#define KXFER_RANK_WANT		(1 << 11)
static_assert((KXFER_RANK_HOPS << 1 | 1) < KXFER_RANK_DEVICE);

/*
 * How near a rail is to a job's memory, the higher the nearer: first the
 * device a dma-buf pool was imported for (GPU memory that only that
 * device reaches); then, for a pool that says what it is near (a GPU's
 * PCI function, an RDMA device), the fewer PCIe links between that and
 * the rail's NIC (kxfer_pci_hops()); then the NUMA node of the pool's
 * pages.  Caller holds r_lock (the rail is up).
 */
static int kxfer_rail_rank(const struct kxfer_session *r,
			   const struct kxfer_pool *pool, int node)
{
	const struct kxfer_device *kd = READ_ONCE(r->s_rail_kd);
	int rank = 0, hops;

	if (pool && pool->kp_kind == KXFER_POOL_KIND_DMABUF &&
	    pool->kp_src.ps_dev && pool->kp_src.ps_dev == kd)
		return KXFER_RANK_DEVICE;
	if (pool && pool->kp_near.pp_depth) {
		hops = kxfer_pci_hops(&pool->kp_near, &r->s_rail_path);
		if (hops >= 0 && hops < KXFER_RANK_HOPS)
			rank = (KXFER_RANK_HOPS - hops) << 1;
	}
	if (node != NUMA_NO_NODE && READ_ONCE(r->s_rail_node) == node)
		rank |= 1;
	return rank;
}

/* Is rail @i of @r up?  Caller holds r_lock. */
static bool kxfer_rail_up(const struct kxfer_rails *r, unsigned int i)
{
	return r->r_sess[i] && READ_ONCE(r->r_sess[i]->s_state) == KXFER_PEER_UP;
}

/*
 * The rail for a job: @want if it is up, else the nearest one up, the
 * equally near taking turns; not one of @tried, which gets the one
 * chosen.  Any context.
 *
 * Return: the rail's session, referenced, or %NULL if none is left.
 */
static struct kxfer_session *kxfer_rails_pick(struct kxfer_rails *r,
					      const struct kxfer_pool *pool,
					      int want, unsigned long *tried)
{
	int node = kxfer_pool_node(pool), best = -1, best_rank = -1;
	struct kxfer_session *s = NULL;
	unsigned int k, i, start;
	unsigned long flags;

	spin_lock_irqsave(&r->r_lock, flags);
	start = r->r_rotor++;
	for (k = 0; k < r->r_nrails; k++) {
		int rank;

		i = (start + k) % r->r_nrails;
		if (test_bit(i, tried) || !kxfer_rail_up(r, i))
			continue;
		rank = i == want ? KXFER_RANK_WANT :
				   kxfer_rail_rank(r->r_sess[i], pool, node);
		if (rank > best_rank) {
			best = i;
			best_rank = rank;
		}
	}
	if (best >= 0) {
		set_bit(best, tried);
		s = kxfer_rails_slot_get(r, best);
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	return s;
}

/**
 * kxfer_job_route - the session a job is built for, locked
 * @sp: in, the session of the job's peer handle (referenced); out, the
 *	rail chosen (referenced; the handle's reference is dropped), its
 *	s_mutex held
 * @pool: the job's pool, or %NULL
 * @rh: the job's remote handle, copied
 * @uj: the job
 *
 * A peer of one rail is its own session.  Of a peer over rails, the rail
 * of kxfer_rails_pick() that is still up once locked and has the export
 * at the handle's generation; if none has, the last one tried, for the
 * caller to refuse the job (-ENOTCONN, -ESTALE).  May sleep.
 *
 * Return: 0 with *@sp locked, or %-EINVAL (KXFER_JOB_RAIL names a rail
 * the peer does not have) with nothing locked.
 */
int kxfer_job_route(struct kxfer_session **sp, const struct kxfer_pool *pool,
		    const struct kxfer_rhandle *rh, const struct kxfer_job *uj)
{
	struct kxfer_session *s = *sp, *r;
	int want = uj->flags & KXFER_JOB_RAIL ? (int)uj->rail : -1;
	struct kxfer_rexport *rx;
	unsigned long tried = 0;

	if (!kxfer_rails_connector(s)) {
		if (want > 0)
			return -EINVAL;
		mutex_lock(&s->s_mutex);
		return 0;
	}
	if (want >= (int)s->s_rails->r_nrails)
		return -EINVAL;
	for (;;) {
		r = kxfer_rails_pick(s->s_rails, pool, want, &tried);
		if (r) {
			kxfer_session_put(s);
			*sp = s = r;
		}
		mutex_lock(&s->s_mutex);
		if (!r)
			return 0;
		rx = s->s_state == KXFER_PEER_UP ?
		     kxfer_rexport_find(s, rh->rh_name) : NULL;
		if (rx && rx->rx_gen == rh->rh_gen)
			return 0;
		mutex_unlock(&s->s_mutex);
	}
}

/* ---------------------------------------------------------------------- */
/* Failover                                                                */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_rails_job_keep - what a job needs to be posted on another rail
 * @job: a job made for @s, not started
 * @s: a rail of a connecting peer, or any other session
 * @segs: the job's segments
 * @uj: the job as submitted
 *
 * Caller holds @s's s_mutex.
 *
 * Return: 0 or %-ENOMEM; then nothing is kept.
 */
int kxfer_rails_job_keep(struct kxfer_task *job, struct kxfer_session *s,
			 const struct kxfer_plan_seg *segs,
			 const struct kxfer_job *uj)
{
	INIT_LIST_HEAD(&job->j_retry_node);
	if (!kxfer_rails_connector(s))
		return 0;
	if (uj->nsegs && (uj->op == KXFER_OP_WRITE || uj->op == KXFER_OP_READ)) {
		job->j_segs = kvmalloc_array(uj->nsegs, sizeof(*segs),
					     GFP_KERNEL);
		if (!job->j_segs)
			return -ENOMEM;
		memcpy(job->j_segs, segs, (size_t)uj->nsegs * sizeof(*segs));
		job->j_nsegs = uj->nsegs;
	}
	refcount_inc(&s->s_rails->r_ref);
	job->j_rails = s->s_rails;
	job->j_epoch = kxfer_peer_conn_gen(s);
	job->j_sid = s->s_sid;
	return 0;
}

/**
 * kxfer_rails_job_free - drop what a job kept for its rails
 * @job: an ended job
 *
 * Any context.
 */
void kxfer_rails_job_free(struct kxfer_task *job)
{
	kvfree(job->j_segs);
	job->j_segs = NULL;
	kxfer_rails_put(job->j_rails);
	job->j_rails = NULL;
}

/*
 * A job whose rail failed under it: WRITE and READ move the same bytes
 * again (what landed lands again, the same), atomics would not.
 */
static bool kxfer_rails_retryable(const struct kxfer_task *job)
{
	if (job->j_op != KXFER_OP_WRITE && job->j_op != KXFER_OP_READ)
		return false;
	if (job->j_retries >= KXFER_RAIL_RETRIES)
		return false;
	switch (job->j_status) {
	case -ECONNRESET:	/* flushed: the rail went down */
	case -ENOTCONN:		/* its QPs were dead when it started */
	case -ETIMEDOUT:	/* the transport gave up: the path is gone */
		return true;
	case -EIO:
		/*
		 * rxe's status for a work request it could not send, its
		 * link being down; on a NIC, one the QP could not execute,
		 * which would fail again: posted again once, not more.
		 */
		return job->j_wc_status == IB_WC_LOC_QP_OP_ERR &&
		       !job->j_local_retried;
	default:
		return false;
	}
}

/**
 * kxfer_rails_wait_idle - wait until no job waits to be posted again
 *
 * Unload, once every session is stopped: the jobs that wait end (no
 * rail is up) before their pools go.
 */
void kxfer_rails_wait_idle(void)
{
	wait_var_event(&kxfer_rails_held, !atomic_read(&kxfer_rails_held));
}

/* Run the retry work after @delay jiffies, or now if 0.  Any context. */
static void kxfer_rails_retry_kick(struct kxfer_rails *r, unsigned long delay)
{
	bool pending;

	refcount_inc(&r->r_ref);
	if (delay)
		pending = !queue_delayed_work(kxfer_wq, &r->r_retry_work, delay);
	else
		pending = mod_delayed_work(kxfer_wq, &r->r_retry_work, 0);
	if (pending)
		kxfer_rails_put(r);
}

/**
 * kxfer_rails_job_retry - post a failed job on another rail instead
 * @job: a job of a peer over rails, ended, its event not yet posted
 *
 * Any context: the peer's retry work builds it again.
 *
 * Return: true if the job was taken (no event now), false to end it.
 */
bool kxfer_rails_job_retry(struct kxfer_task *job)
{
	struct kxfer_rails *r = job->j_rails;
	unsigned long flags;

	/* Its memory is gone: it ends here, with -ESTALE. */
	if (job->j_pool && READ_ONCE(job->j_pool->kp_revoked)) {
		job->j_status = -ESTALE;
		return false;
	}
	/* The peer is being deleted, or the module unloaded: no other rail. */
	if (READ_ONCE(job->j_sess->s_state) == KXFER_PEER_CLOSING)
		return false;
	if (!kxfer_rails_retryable(job))
		return false;
	/* Its shares failed over as long as they could: no more. */
	if (job->j_stripe_started && !job->j_data_done)
		return false;
	atomic_inc(&kxfer_rails_held);
	atomic64_inc(&job->j_sess->s_failovers);
	if (!job->j_retry_since)
		job->j_retry_since = jiffies ?: 1;
	spin_lock_irqsave(&r->r_lock, flags);
	list_add_tail(&job->j_retry_node, &r->r_retry);
	spin_unlock_irqrestore(&r->r_lock, flags);
	kxfer_rails_retry_kick(r, 0);
	return true;
}

/*
 * @dst, a job built anew, is @src again: what it moves where, for whom,
 * since when; it takes over @src's file, pool and rails pointers (the
 * caller owns their references).
 */
static void kxfer_rails_job_inherit(struct kxfer_task *dst,
				    const struct kxfer_task *src)
{
	INIT_LIST_HEAD(&dst->j_notify_node);
	INIT_LIST_HEAD(&dst->j_held_node);
	INIT_LIST_HEAD(&dst->j_retry_node);
	dst->j_file = src->j_file;
	dst->j_pool = src->j_pool;
	dst->j_rails = src->j_rails;
	dst->j_epoch = src->j_epoch;
	dst->j_op = src->j_op;
	dst->j_rgen = src->j_rgen;
	memcpy(dst->j_rname, src->j_rname, sizeof(dst->j_rname));
	dst->j_user_data = src->j_user_data;
	dst->j_submit_ns = src->j_submit_ns;
}

/*
 * Build @old again for rail @s and start it there; @old's holds (file,
 * pool, message, segments, gate count) move to the new job and @old is
 * freed.  @old failed on another rail (@failover), or is the shell of
 * a share of a striped job, made to be built here.  Caller holds s_mutex.
 *
 * Return: 0, or why @s cannot take it (then @old is untouched).
 */
static int kxfer_rails_repost_on(struct kxfer_session *s,
				 struct kxfer_task *old, bool failover)
{
	struct kxfer_task *job;
	struct kxfer_rexport *rx;
	u32 nwr = 0;
	int ret;

	if (s->s_state != KXFER_PEER_UP ||
	    kxfer_peer_conn_gen(s) != old->j_epoch)
		return -ENOTCONN;
	rx = kxfer_rexport_find(s, old->j_rname);
	if (!rx || rx->rx_gen != old->j_rgen)
		return -ESTALE;
	if (old->j_msg && !(s->s_peer_features & KXFER_WIRE_F_NOTIFY_MSG))
		return -EOPNOTSUPP;
	if (kxfer_rails_notify_stale(old))
		return -ETIMEDOUT;
	/*
	 * Its data was acknowledged, its notification's fate is unknown:
	 * only the notification goes again (the peer delivers its number
	 * once), not the data, which the peer may own by now.
	 */
	if (old->j_nsegs && !old->j_data_done) {
		ret = kxfer_job_remake(s, old->j_pool, rx, old->j_op,
				       old->j_segs, old->j_nsegs, old->j_bytes,
				       &job, &nwr);
		if (ret)
			return ret;
	} else {
		/* A notification alone: nothing to build. */
		job = kvzalloc(sizeof(*job), GFP_KERNEL);
		if (!job)
			return -ENOMEM;
	}
	kxfer_rails_job_inherit(job, old);
	job->j_gate = old->j_gate;
	job->j_msg = old->j_msg;
	job->j_msg_len = old->j_msg_len;
	job->j_segs = old->j_segs;
	job->j_nsegs = old->j_nsegs;
	job->j_sid = s->s_sid;
	job->j_notify_seq = old->j_notify_seq;
	job->j_data_done = old->j_data_done;
	job->j_retry_since = old->j_retry_since;
	job->j_retries = old->j_retries + failover;
	job->j_parent = old->j_parent;
	/* Once its shares ended, a striped job only notifies. */
	job->j_striped = old->j_striped && old->j_data_done;
	job->j_stripe_started = job->j_striped;
	job->j_local_retried = old->j_local_retried ||
			       old->j_wc_status == IB_WC_LOC_QP_OP_ERR;
	job->j_notify = old->j_notify;
	job->j_notify_value = old->j_notify_value;
	job->j_bytes = old->j_bytes;
	kxfer_session_get(s);
	job->j_sess = s;
	job->j_conn_gen = s->s_conn_gen;

	if (failover)
		atomic64_inc(&s->s_taken);
	else if (job->j_parent)
		atomic64_inc(&s->s_shares);
	/* A striped job's notification: its shares counted. */
	if (!job->j_striped) {
		atomic64_inc(&s->s_stats.jobs);
		atomic64_add(job->j_bytes, &s->s_stats.bytes);
		atomic64_add(job->j_nsegs, &s->s_stats.segs);
		atomic64_add(nwr, &s->s_stats.wrs);
	}
	if (job->j_parent && !failover) {
		/*
		 * A share goes from its QPs' home CPUs (kxfer_kick_flush()),
		 * as a SUBMIT's jobs do: the shares of one job then move on
		 * their rails at once, not one after the other on this CPU.
		 */
		struct kxfer_kick kick = { .k_sess = s };

		kxfer_session_get(s);
		kxfer_job_start(job, rx, &kick);
		kxfer_kick_flush(&kick);
	} else {
		kxfer_job_start(job, rx, NULL);
	}

	/* Only the shell of @old is left: its rail's reference. */
	kxfer_session_put(old->j_sess);
	kvfree(old);
	return 0;
}

/*
 * Post a job on rail @want (< 0: none), or the nearest rail that takes
 * it, or end it: a failed job (@failover), a share's shell or a striped
 * job's notification.  May sleep.
 */
static void kxfer_rails_repost(struct kxfer_rails *r, struct kxfer_task *old,
			       int want, bool failover)
{
	struct kxfer_session *s;
	unsigned long tried = 0;
	int ret = -ENOTCONN;

	while ((s = kxfer_rails_pick(r, old->j_pool, want, &tried))) {
		mutex_lock(&s->s_mutex);
		ret = kxfer_rails_repost_on(s, old, failover);
		mutex_unlock(&s->s_mutex);
		kxfer_session_put(s);
		if (!ret)
			return;
	}
	/*
	 * No rail is left: it ends with the error its rail gave it (a
	 * share's shell, with why the last rail tried could not take it).
	 */
	kxfer_job_set_error(old, ret, IB_WC_WR_FLUSH_ERR);
	old->j_retries = KXFER_RAIL_RETRIES;
	kxfer_job_post(old);
}

/* Is any rail of @r up?  Any context. */
static bool kxfer_rails_any_up(struct kxfer_rails *r)
{
	unsigned long flags;
	bool up = false;
	unsigned int i;

	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < r->r_nrails && !up; i++)
		up = kxfer_rail_up(r, i);
	spin_unlock_irqrestore(&r->r_lock, flags);
	return up;
}

/*
 * Has the acceptor fenced the connection @job failed on?  The first to
 * ask makes the fence to ask for.  Any context but atomic.
 *
 * Return: 1 yes, 0 not yet, -ENOMEM.
 */
static int kxfer_rails_fenced(struct kxfer_rails *r, struct kxfer_task *job)
{
	struct kxfer_rail_fence *f, *new = NULL;
	u32 rail = job->j_sess->s_rail;
	unsigned long flags;
	int ret = -ENOMEM;

	for (;;) {
		spin_lock_irqsave(&r->r_lock, flags);
		list_for_each_entry(f, &r->r_fences, f_node)
			if (f->f_rail == rail && f->f_sid == job->j_sid) {
				ret = f->f_done;
				goto out;
			}
		if (new) {
			list_add_tail(&new->f_node, &r->r_fences);
			new = NULL;
			ret = 0;
			goto out;
		}
		spin_unlock_irqrestore(&r->r_lock, flags);
		new = kzalloc(sizeof(*new), GFP_KERNEL);
		if (!new)
			return -ENOMEM;
		new->f_rail = rail;
		new->f_sid = job->j_sid;
	}
out:
	spin_unlock_irqrestore(&r->r_lock, flags);
	kfree(new);
	return ret;
}

/* Ask for the fences not asked yet, or not answered for a while. */
static void kxfer_rails_fence_ask(struct kxfer_rails *r)
{
	unsigned long again = msecs_to_jiffies(KXFER_RAIL_FENCE_AGAIN_MS);
	struct kxfer_msg_rail_fence rf;
	struct kxfer_rail_fence *f;
	struct kxfer_session *s;
	unsigned long flags, tried;
	bool found, sent;

	for (;;) {
		found = false;
		memset(&rf, 0, sizeof(rf));
		spin_lock_irqsave(&r->r_lock, flags);
		list_for_each_entry(f, &r->r_fences, f_node) {
			if (f->f_done || (f->f_sent &&
					  time_before(jiffies, f->f_sent + again)))
				continue;
			f->f_sent = jiffies ?: 1;
			rf.rf_rail = cpu_to_le32(f->f_rail);
			rf.rf_sid = cpu_to_le64(f->f_sid);
			found = true;
			break;
		}
		spin_unlock_irqrestore(&r->r_lock, flags);
		if (!found)
			return;
		/*
		 * On a rail up that is not failing itself; with none, asked
		 * again later.
		 */
		tried = 0;
		sent = false;
		while (!sent && (s = kxfer_rails_pick(r, NULL, -1, &tried))) {
			mutex_lock(&s->s_mutex);
			if (s->s_state == KXFER_PEER_UP && s->s_ctrl_up &&
			    !test_bit(KXFER_SE_FAIL, &s->s_events)) {
				kxfer_ctrl_send(s, KXFER_MSG_RAIL_FENCE,
						&rf.rf_rail,
						sizeof(rf) - sizeof(rf.rf_hdr));
				kxfer_ctrl_flush(s);
				sent = true;
			}
			mutex_unlock(&s->s_mutex);
			kxfer_session_put(s);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Striping                                                                */
/* ---------------------------------------------------------------------- */

/* The rails up nearest a pool's memory (kxfer_rail_rank()): a mask. */
static unsigned long kxfer_rails_nearest(struct kxfer_rails *r,
					 const struct kxfer_pool *pool)
{
	int node = kxfer_pool_node(pool), best = -1;
	unsigned long flags, mask = 0;
	unsigned int i;

	spin_lock_irqsave(&r->r_lock, flags);
	for (i = 0; i < r->r_nrails; i++) {
		int rank;

		if (!kxfer_rail_up(r, i))
			continue;
		rank = kxfer_rail_rank(r->r_sess[i], pool, node);
		if (rank > best) {
			best = rank;
			mask = 0;
		}
		if (rank == best)
			mask |= BIT(i);
	}
	spin_unlock_irqrestore(&r->r_lock, flags);
	return mask;
}

/**
 * kxfer_rails_stripes - is a job striped over its peer's rails?
 * @s: the rail it was routed to
 * @pool: its local memory
 * @uj: the job
 * @total: its bytes
 *
 * A WRITE or READ of kxfer_rail_stripe bytes or more to a connecting
 * peer, that names no rail, when more than one rail nearest its memory
 * is up.  Any context.
 */
bool kxfer_rails_stripes(const struct kxfer_session *s,
			 const struct kxfer_pool *pool,
			 const struct kxfer_job *uj, u64 total)
{
	unsigned int min = READ_ONCE(kxfer_rail_stripe);

	if (!kxfer_rails_connector(s) || !min || total < min ||
	    (uj->flags & KXFER_JOB_RAIL) ||
	    (uj->op != KXFER_OP_WRITE && uj->op != KXFER_OP_READ))
		return false;
	return hweight_long(kxfer_rails_nearest(s->s_rails, pool)) > 1;
}

/**
 * kxfer_rails_stripe - a striped job is started, or its data landed
 * @job: the job; started, it holds no remote export
 *
 * The retry work makes its shares, or, once they all ended, sends its
 * notification on a rail that is up: it locks one rail at a time, where
 * the caller may hold one.  Any context.
 */
void kxfer_rails_stripe(struct kxfer_task *job)
{
	struct kxfer_rails *r = job->j_rails;
	unsigned long flags;

	if (job->j_stripe_started)
		job->j_data_done = true;
	job->j_stripe_started = true;
	atomic_inc(&kxfer_rails_held);
	spin_lock_irqsave(&r->r_lock, flags);
	list_add_tail(&job->j_retry_node, &r->r_stripe);
	spin_unlock_irqrestore(&r->r_lock, flags);
	kxfer_rails_retry_kick(r, 0);
}

/* Where the next share's segments start: a segment, and bytes into it. */
struct kxfer_seg_pos {
	u32	sp_seg;
	u64	sp_off;
};

/*
 * The next @bytes of @nsegs segments from @pos, cut where they end: into
 * @out, moving @pos past them, or, with @out %NULL, only counted.
 *
 * Return: how many segments.
 */
static u32 kxfer_segs_take(const struct kxfer_plan_seg *segs, u32 nsegs,
			   struct kxfer_seg_pos *pos, u64 bytes,
			   struct kxfer_plan_seg *out)
{
	struct kxfer_seg_pos p = *pos;
	u32 n = 0;

	while (bytes && p.sp_seg < nsegs) {
		const struct kxfer_plan_seg *sg = &segs[p.sp_seg];
		u64 len = min(sg->len - p.sp_off, bytes);

		if (len) {
			if (out) {
				out[n].local_off = sg->local_off + p.sp_off;
				out[n].remote_off = sg->remote_off + p.sp_off;
				out[n].len = len;
			}
			n++;
			bytes -= len;
			p.sp_off += len;
		}
		if (p.sp_off == sg->len) {
			p.sp_seg++;
			p.sp_off = 0;
		}
	}
	if (out)
		*pos = p;
	return n;
}

/*
 * The share of @job of @bytes from @pos, for rail @want: a shell that
 * kxfer_rails_repost() builds there, or on the nearest rail that takes
 * it; with no rail left it ends, with an error for @job.  May sleep.
 *
 * Return: 0, or %-ENOMEM with nothing made.
 */
static int kxfer_rails_share(struct kxfer_rails *r, struct kxfer_task *job,
			     struct kxfer_seg_pos *pos, u64 bytes, int want)
{
	u32 n = kxfer_segs_take(job->j_segs, job->j_nsegs, pos, bytes, NULL);
	struct kxfer_task *sh;

	sh = kvzalloc(sizeof(*sh), GFP_KERNEL);
	if (!sh)
		return -ENOMEM;
	sh->j_segs = kvmalloc_array(n, sizeof(*sh->j_segs), GFP_KERNEL);
	if (!sh->j_segs) {
		kvfree(sh);
		return -ENOMEM;
	}
	sh->j_nsegs = kxfer_segs_take(job->j_segs, job->j_nsegs, pos, bytes,
				      sh->j_segs);
	kref_get(&job->j_file->kf_ref);
	if (job->j_pool)
		kref_get(&job->j_pool->kp_ref);
	refcount_inc(&r->r_ref);
	kxfer_rails_job_inherit(sh, job);
	sh->j_parent = job;
	sh->j_bytes = bytes;
	kxfer_session_get(job->j_sess);
	sh->j_sess = job->j_sess;
	/* It counts in the job until it ended (kxfer_job_share_end()). */
	atomic_inc(&job->j_left);
	kxfer_rails_repost(r, sh, want, false);
	return 0;
}

/*
 * A share for each rail nearest the job's memory that is up, of whole
 * stripes (kxfer_stripe bytes, a WR's most: no more WRs than the job
 * whole), or whole pages for a job of fewer stripes than rails; the
 * last share the rest.  The job's data ends once every share ended.
 * May sleep.
 */
static void kxfer_rails_stripe_start(struct kxfer_rails *r,
				     struct kxfer_task *job)
{
	unsigned long rails = kxfer_rails_nearest(r, job->j_pool);
	unsigned int n = hweight_long(rails), i;
	struct kxfer_seg_pos pos = {};
	u64 left = job->j_bytes, share, unit;
	int ret;

	/* Until every share is made: one that ends at once must not end it. */
	atomic_inc(&job->j_left);
	if (!n) {
		kxfer_job_set_error(job, -ENOTCONN, IB_WC_WR_FLUSH_ERR);
		goto out;
	}
	/* Of whole pages when that leaves a rail without one. */
	unit = left >= (u64)n * kxfer_stripe ? kxfer_stripe : PAGE_SIZE;
	share = round_up(div_u64(left + n - 1, n), unit);
	for_each_set_bit(i, &rails, KXFER_RAIL_SLOTS) {
		u64 bytes = min(share, left);

		if (!bytes)
			break;
		ret = kxfer_rails_share(r, job, &pos, bytes, i);
		if (ret) {
			kxfer_job_set_error(job, ret, 0);
			break;
		}
		left -= bytes;
	}
out:
	kxfer_job_batches_done(job, 1);
}

/* The striped jobs queued: their shares made, or their notification sent. */
static void kxfer_rails_stripes_start(struct kxfer_rails *r)
{
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&r->r_lock, flags);
	list_splice_init(&r->r_stripe, &list);
	spin_unlock_irqrestore(&r->r_lock, flags);
	list_for_each_entry_safe(job, tmp, &list, j_retry_node) {
		list_del_init(&job->j_retry_node);
		if (job->j_data_done)
			kxfer_rails_repost(r, job, -1, false);
		else
			kxfer_rails_stripe_start(r, job);
		if (atomic_dec_and_test(&kxfer_rails_held))
			wake_up_var(&kxfer_rails_held);
	}
}

/*
 * Jobs whose rail failed are posted again once the acceptor fenced the
 * connection they failed on: none of its packets still on the way can
 * then land after the new ones (a late WRITE of old bytes over what the
 * caller wrote there since).  A job that waits KXFER_RAIL_FENCE_MS for
 * it ends with its error.
 */
static void kxfer_rails_retry_work(struct work_struct *work)
{
	struct kxfer_rails *r = container_of(to_delayed_work(work),
					     struct kxfer_rails, r_retry_work);
	unsigned long limit = msecs_to_jiffies(KXFER_RAIL_FENCE_MS);
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(held);
	LIST_HEAD(list);
	bool empty;

	kxfer_rails_stripes_start(r);
	spin_lock_irqsave(&r->r_lock, flags);
	list_splice_init(&r->r_retry, &list);
	spin_unlock_irqrestore(&r->r_lock, flags);
	list_for_each_entry_safe(job, tmp, &list, j_retry_node) {
		list_del_init(&job->j_retry_node);
		if ((job->j_pool && READ_ONCE(job->j_pool->kp_revoked)) ||
		    time_after(jiffies, job->j_retry_since + limit)) {
			/* It ends with its error (-ESTALE if revoked). */
			job->j_retries = KXFER_RAIL_RETRIES;
			kxfer_job_post(job);
		} else if (kxfer_rails_fenced(r, job) > 0 ||
			   !kxfer_rails_any_up(r)) {
			/* With no rail up, it ends now (kxfer_rails_repost()). */
			kxfer_rails_repost(r, job, -1, true);
		} else {
			list_add_tail(&job->j_retry_node, &held);
			continue;
		}
		if (atomic_dec_and_test(&kxfer_rails_held))
			wake_up_var(&kxfer_rails_held);
	}
	kxfer_rails_fence_ask(r);

	spin_lock_irqsave(&r->r_lock, flags);
	list_splice(&held, &r->r_retry);
	empty = list_empty(&r->r_retry);
	spin_unlock_irqrestore(&r->r_lock, flags);
	if (empty)
		kxfer_rails_fences_free(r, true);
	else
		kxfer_rails_retry_kick(r, msecs_to_jiffies(KXFER_RAIL_HOLD_MS));
	kxfer_rails_put(r);
}
