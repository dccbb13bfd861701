// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: sessions, the connection manager side (DESIGN §3).
 *
 * A session is N RC QPs to one remote kxfer, each QP its own rdma_cm
 * connection, all on one protection domain of the session's own.  The
 * connecting side ("peer add") resolves, connects and, after any
 * failure, reconnects with exponential backoff and jitter; the
 * accepting side builds a session when the first QP of a new session id
 * arrives at a listener (listen.c) and drops it when it fails.
 *
 * Everything that changes a session runs in its work item (s_work) or
 * its timer (s_timer, keepalive and reconnect) under s_mutex.  The
 * rdma_cm event handler takes no mutex: it records what happened and
 * queues s_work, so that s_work may destroy cm_ids (which waits for
 * their handlers) while holding s_mutex.
 *
 * Lock order: kxfer_sess_mutex, then s_mutex, then kxfer_obj_mutex.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/utsname.h>
#include <linux/timekeeping.h>
#include <linux/inet.h>
#include <net/ipv6.h>
#include <rdma/ib_cm.h>

#include "kxfer.h"
#include "job.h"

struct workqueue_struct *kxfer_wq;
static struct workqueue_struct *kxfer_reap_wq;
struct workqueue_struct *kxfer_post_wq;
/* protects kxfer_sessions */
DEFINE_MUTEX(kxfer_sess_mutex);
LIST_HEAD(kxfer_sessions);

char kxfer_node_name[KXFER_NAME_MAX];
module_param_string(node_name, kxfer_node_name, sizeof(kxfer_node_name), 0444);
MODULE_PARM_DESC(node_name, "This node's name in sessions (default: host name)");

/*
 * Told to listeners on connect: a listener that sees a node come back
 * with another incarnation knows the old one's sessions are dead.
 */
u32 kxfer_incarnation;

#define KXFER_KEEPALIVE_MAX_MS	86400000U	/* a day */

/*
 * A new keepalive interval or timeout holds for the sessions already
 * connecting or up, at once: each session's timer sleeps a quarter of
 * the interval it last read, and a timer armed while the interval was
 * ten minutes would otherwise watch a dead peer for minutes after the
 * interval was set back.  Their timers run now and re-arm with the new
 * values; a session down waits out its reconnect backoff as it was.
 * Both are 1 ms to a day: a timeout of 0 would end every session at its
 * first tick, and the load or the write fails with EINVAL instead.
 */
static int kxfer_keepalive_set(const char *val, const struct kernel_param *kp)
{
	struct kxfer_session *s;
	int ret = param_set_uint_minmax(val, kp, 1, KXFER_KEEPALIVE_MAX_MS);

	if (ret)
		return ret;
	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		mutex_lock(&s->s_mutex);
		if (s->s_state == KXFER_PEER_CONNECTING ||
		    s->s_state == KXFER_PEER_UP)
			mod_delayed_work(kxfer_wq, &s->s_timer, 0);
		mutex_unlock(&s->s_mutex);
	}
	mutex_unlock(&kxfer_sess_mutex);
	return 0;
}

static const struct kernel_param_ops kxfer_keepalive_ops = {
	.set = kxfer_keepalive_set,
	.get = param_get_uint,
};

unsigned int kxfer_keepalive_ms = 1000;
module_param_cb(keepalive_ms, &kxfer_keepalive_ops, &kxfer_keepalive_ms, 0644);
MODULE_PARM_DESC(keepalive_ms, "Probe a session idle this long, 1..86400000 (default 1000)");

unsigned int kxfer_keepalive_timeout_ms = 5000;
module_param_cb(keepalive_timeout_ms, &kxfer_keepalive_ops,
		&kxfer_keepalive_timeout_ms, 0644);
MODULE_PARM_DESC(keepalive_timeout_ms,
		 "Declare a peer dead after this long without a sign of life, 1..86400000 (default 5000)");

/*
 * What this node speaks beyond protocol version 1: all, unless tested.
 * Only bits this kxfer knows: the connect data and HELLO offer the value
 * as it is, and a node must not claim a feature it does not speak.
 */
static int kxfer_wire_features_set(const char *val,
				   const struct kernel_param *kp)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret)
		return ret;
	if (v & ~KXFER_WIRE_FEATURES)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops kxfer_wire_features_ops = {
	.set = kxfer_wire_features_set,
	.get = param_get_uint,
};

unsigned int kxfer_wire_features = KXFER_WIRE_FEATURES;
module_param_cb(wire_features, &kxfer_wire_features_ops, &kxfer_wire_features,
		0644);
MODULE_PARM_DESC(wire_features,
		 "Protocol features offered to new sessions, KXFER_WIRE_F_* bits (default all; 0 behaves as a kxfer of protocol version 1, for tests)");

unsigned int kxfer_reconnect_max_ms = 5000;
module_param_named(reconnect_max_ms, kxfer_reconnect_max_ms, uint, 0644);
MODULE_PARM_DESC(reconnect_max_ms, "Longest reconnect backoff (default 5000)");

static unsigned int kxfer_max_half_open = 16;
module_param_named(max_half_open, kxfer_max_half_open, uint, 0644);
MODULE_PARM_DESC(max_half_open,
		 "Accepted sessions still connecting, per source address (default 16, 0: no bound)");

static unsigned int kxfer_default_depth = 256;
module_param_named(default_depth, kxfer_default_depth, uint, 0444);
MODULE_PARM_DESC(default_depth, "Send queue depth per QP (default 256)");

#define KXFER_CM_TIMEOUT_MS	2000
/* An attempt's QPs connect within this, and it is up within the next. */
#define KXFER_CONNECT_TIMEOUT_MS 10000
#define KXFER_UP_TIMEOUT_MS	40000
#define KXFER_RECONNECT_MIN_MS	100
/* A keepalive answer later than this many keepalive timeouts ends a session. */
#define KXFER_KA_ANSWER_MAX	4
/* The timeout stretches to this many recent probe round trips. */
#define KXFER_KA_RTT_FACTOR	4

/**
 * kxfer_session_ka_timeout_ns - how long a session may go without a sign
 *	of life
 * @s: the session
 *
 * keepalive_timeout_ms, or KXFER_KA_RTT_FACTOR times the recent round
 * trip of the probes when that is longer: under one-sided traffic the
 * signs of life this side gets (the peer's answers, and its NIC's
 * acknowledgments of our probes) ride the peer's queue behind its data,
 * and a queue that the probes measured seconds deep is no dead peer.  At
 * most KXFER_KA_ANSWER_MAX keepalive timeouts, so that a peer that dies
 * after a busy spell is still noticed within that.  Any context.
 *
 * Return: nanoseconds.
 */
u64 kxfer_session_ka_timeout_ns(const struct kxfer_session *s)
{
	u64 base = (u64)READ_ONCE(kxfer_keepalive_timeout_ms) * NSEC_PER_MSEC;
	u64 rtt = READ_ONCE(s->s_ka_rtt_recent_ns) * KXFER_KA_RTT_FACTOR;

	return clamp(rtt, base, base * KXFER_KA_ANSWER_MAX);
}

/**
 * kxfer_drain_timeout_ms - how long a peer may take to drain an export
 *
 * The peer answers a withdrawal once its jobs to the export completed: the
 * data it had in flight (bounded by qp_inflight_mb per QP) is acknowledged,
 * then the answer rides its QP 0 behind what it queued there.  A keepalive
 * answer waits behind the same queue and may take KXFER_KA_ANSWER_MAX
 * keepalive timeouts before the session ends; a drain gets one timeout
 * more, for the request's own way there.
 *
 * Return: milliseconds (25000 with the default keepalive_timeout_ms).
 */
unsigned int kxfer_drain_timeout_ms(void)
{
	return (KXFER_KA_ANSWER_MAX + 1) * READ_ONCE(kxfer_keepalive_timeout_ms);
}
/* A connector failing again for the same reason says so this often. */
#define KXFER_SAY_AGAIN_MS	30000

/*
 * Transport ACK timeout, 4.096 us << ack_timeout: 16 gives 268 ms, so a
 * lost packet is sent again well inside the keepalive window instead of
 * after the seconds a RoCE path record's packet lifetime gives.  A host
 * whose peer answers slower than that (a sanitizer kernel under TCG)
 * sends packets again that were never lost; it loads with a larger one.
 * main.c checks the range at load.
 */
unsigned int kxfer_ack_timeout = 16;
module_param_named(ack_timeout, kxfer_ack_timeout, uint, 0444);
MODULE_PARM_DESC(ack_timeout,
		 "QP transport ACK timeout, 4.096 us << N, N in 8..24 (default 16: 268 ms)");

static const char * const kxfer_state_names[] = {
	[KXFER_PEER_CONNECTING]	= "connecting",
	[KXFER_PEER_UP]		= "up",
	[KXFER_PEER_DOWN]	= "down",
	[KXFER_PEER_CLOSING]	= "closing",
};

/**
 * kxfer_peer_state_name - printable session state
 * @st: the state
 *
 * Return: a static string.
 */
const char *kxfer_peer_state_name(enum kxfer_peer_state st)
{
	return st < ARRAY_SIZE(kxfer_state_names) ? kxfer_state_names[st] : "?";
}

static u64 kxfer_now_ns(void)
{
	return ktime_get_ns();
}

static void kxfer_session_release(struct kref *ref)
{
	struct kxfer_session *s = container_of(ref, struct kxfer_session,
					       s_ref);

	kxfer_auth_release(s);
	kxfer_rails_leave(s);
	mutex_destroy(&s->s_poll_mutex);
	mutex_destroy(&s->s_mutex);
	kfree(s);
}

/*
 * A connecting peer's rail other than the first: the peer is named, shown
 * and deleted by its first rail's session (rail.c).
 */
static bool kxfer_session_is_rail(const struct kxfer_session *s)
{
	return s->s_rails && s->s_role == KXFER_PEER_CONNECTOR && s->s_rail;
}

/* How much a session of a looked-up name is worth: more is better. */
static int kxfer_session_rank(struct kxfer_session *s)
{
	if (s->s_role == KXFER_PEER_CONNECTOR)
		return 3;
	if (test_bit(KXFER_SE_FAIL, &s->s_events))
		return 0;
	return READ_ONCE(s->s_state) == KXFER_PEER_UP ? 2 : 1;
}

/*
 * A session by name: the connecting one if there is one, else the oldest
 * accepting one that is up, else the oldest that is not failing, else the
 * oldest.  A session that failed (a superseded incarnation's) gives way
 * to its successor, and a name claimed by a newcomer does not take over
 * a session that works.  Caller holds kxfer_sess_mutex.
 */
static struct kxfer_session *kxfer_session_by_name(const char *name)
{
	struct kxfer_session *s, *found = NULL;

	lockdep_assert_held(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		/* A peer over rails is its first rail's session. */
		if (strcmp(s->s_name, name) || kxfer_session_is_rail(s))
			continue;
		if (!found || kxfer_session_rank(s) > kxfer_session_rank(found))
			found = s;
	}
	return found;
}

/**
 * kxfer_session_get - take a reference to a session
 * @s: the session
 */
void kxfer_session_get(struct kxfer_session *s)
{
	kref_get(&s->s_ref);
}

/**
 * kxfer_session_put - drop a reference to a session
 * @s: the session; freed with the last reference, once stopped
 */
void kxfer_session_put(struct kxfer_session *s)
{
	kref_put(&s->s_ref, kxfer_session_release);
}

/**
 * kxfer_session_find - a session by name, referenced
 * @name: a connecting session's name, or an accepting one's
 *
 * Return: the session (a connecting one if both exist), or %NULL.
 * May sleep.
 */
struct kxfer_session *kxfer_session_find(const char *name)
{
	struct kxfer_session *found;

	mutex_lock(&kxfer_sess_mutex);
	found = kxfer_session_by_name(name);
	if (found)
		kxfer_session_get(found);
	mutex_unlock(&kxfer_sess_mutex);
	return found;
}

/*
 * The accepting session of @node's connection @sid (its requests'
 * wc_session_id), or %NULL.  Caller holds kxfer_sess_mutex.
 */
static struct kxfer_session *kxfer_session_find_sid(const char *node, u64 sid)
{
	struct kxfer_session *s;

	lockdep_assert_held(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node)
		if (s->s_role == KXFER_PEER_ACCEPTOR && s->s_sid == sid &&
		    !strcmp(s->s_remote_node, node))
			return s;
	return NULL;
}

/**
 * kxfer_session_get_sid - an accepting session by its connection
 * @node: the remote node's name
 * @sid: the connector's wc_session_id
 *
 * Return: the session, referenced, or %NULL.  May sleep.
 */
struct kxfer_session *kxfer_session_get_sid(const char *node, u64 sid)
{
	struct kxfer_session *s;

	mutex_lock(&kxfer_sess_mutex);
	s = kxfer_session_find_sid(node, sid);
	if (s)
		kxfer_session_get(s);
	mutex_unlock(&kxfer_sess_mutex);
	return s;
}

/**
 * kxfer_session_qps_error - move the session's QPs to the error state
 * @s: the session
 *
 * From then on its QPs drop what arrives for them; the teardown that
 * follows finds them there.  Caller holds s_mutex.
 */
void kxfer_session_qps_error(struct kxfer_session *s)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned int i;

	lockdep_assert_held(&s->s_mutex);
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (qp->q_id && qp->q_id->qp &&
		    ib_modify_qp(qp->q_id->qp, &attr, IB_QP_STATE))
			kxfer_warn("peer %s: QP %u not moved to error\n",
				   s->s_name, i);
	}
}

/**
 * kxfer_session_fail - report a failure; s_work tears the session down
 * @s: the session
 * @err: negative errno kept for diagnosis
 * @why: a short reason kept for diagnosis; the first one wins
 *
 * Any context.
 */
void kxfer_session_fail(struct kxfer_session *s, int err, const char *why)
{
	unsigned long flags;

	spin_lock_irqsave(&s->s_lock, flags);
	/*
	 * Another session's work may fail this one (rail.c) while it is
	 * being stopped: once stopped, its work is not queued again.
	 */
	if (!test_bit(KXFER_SE_STOPPED, &s->s_events)) {
		if (!test_bit(KXFER_SE_FAIL, &s->s_events)) {
			strscpy(s->s_fail_why, why, sizeof(s->s_fail_why));
			s->s_fail_errno = err;
			set_bit(KXFER_SE_FAIL, &s->s_events);
		}
		queue_work(kxfer_wq, &s->s_work);
	}
	spin_unlock_irqrestore(&s->s_lock, flags);
}

/**
 * kxfer_session_wc_failed - a work request of the session did not succeed
 * @s: the session
 * @wc: its completion
 * @err: the errno to fail the session with, if the status tells why
 *
 * A flushed work request means the QP is in error, whether this side
 * put it there (teardown, which has failed the session already) or the
 * peer's NIC did: one RDMA WRITE under a key that is not valid here
 * moves the responder's QP to error, and rxe raises no event for it.
 * Once the control channel is up, the session cannot go on.  Before,
 * the CM's event that follows (rejected, unreachable) says better why,
 * and the connect timeout bounds the wait for it.  Any context.
 */
void kxfer_session_wc_failed(struct kxfer_session *s, const struct ib_wc *wc,
			     int err)
{
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		kxfer_session_fail(s, err, ib_wc_status_msg(wc->status));
	else if (READ_ONCE(s->s_ctrl_up))
		kxfer_session_fail(s, -ECONNRESET,
				   "QP in error, work requests flushed");
}

static void kxfer_session_notify(struct kxfer_session *s)
{
	kxfer_nl_notify_peer(s, false);
}

/* ---------------------------------------------------------------------- */
/* QP setup and teardown                                                   */
/* ---------------------------------------------------------------------- */

/*
 * Destroying a connected cm_id waits for the CM's disconnect exchange,
 * which takes as long as the CM's timeouts when the peer is gone.  So
 * cm_ids are destroyed by a reaper, one work item each, after their QP
 * and everything else is gone; the session goes on (and reconnects)
 * meanwhile.  Unload waits for the reaper.
 *
 * No CM message goes into a link that is down: on rxe a MAD that cannot
 * be sent puts the port's GSI QP in the error state, which flushes its
 * receive buffers (6.1) or keeps every later send failing (6.12), and
 * ib_mad never recovers it: that port completes no connection any more,
 * kxfer's or anyone's, until the device is made again.  Destroying an
 * id sends a DREQ (or a REJ), so an id whose port is down is held until
 * the port is active again.  And a link that goes down shows first as
 * a failed session, some milliseconds before the port is down (6.12
 * flushes the QPs first): the ids of a session that failed as a link
 * going down fails it (kxfer_err_link()) are held KXFER_REAP_SETTLE_MS
 * before the port is looked at.  Held ids wait on kxfer_reap_held, looked at every
 * KXFER_REAP_HOLD_MS; their device going away, or unload, lets them go
 * at once.
 */
#define KXFER_REAP_HOLD_MS	250
#define KXFER_REAP_SETTLE_MS	1000

struct kxfer_cm_reap {
	struct work_struct	r_work;
	struct rdma_cm_id	*r_id;
	struct list_head	r_node;		/* on kxfer_reap_held */
	unsigned long		r_after;	/* jiffies: not before */
};

static enum kxfer_cm_kind kxfer_cm_dead = KXFER_CM_DEAD;
static atomic_t kxfer_session_ids = ATOMIC_INIT(0);

/* protects kxfer_reap_held and kxfer_reap_exiting */
static DEFINE_MUTEX(kxfer_reap_mutex);
static LIST_HEAD(kxfer_reap_held);
static bool kxfer_reap_exiting;
static void kxfer_reap_held_work(struct work_struct *work);
static DECLARE_DELAYED_WORK(kxfer_reap_held_dwork, kxfer_reap_held_work);

static struct kxfer_device *kxfer_device_from_ib(struct ib_device *ibdev)
{
	struct kxfer_device *kd, *found = NULL;

	mutex_lock(&kxfer_dev_mutex);
	list_for_each_entry(kd, &kxfer_devices, kd_node) {
		if (kd->kd_ibdev != ibdev)
			continue;
		if (!test_bit(KXFER_DEV_REMOVING, &kd->kd_flags) &&
		    kref_get_unless_zero(&kd->kd_ref))
			found = kd;
		break;
	}
	mutex_unlock(&kxfer_dev_mutex);
	return found;
}

/*
 * The port of @id: 1 down (a MAD sent now would not leave), 0 active,
 * -1 no device of ours (none bound, or being removed).  May sleep.
 */
static int kxfer_cm_id_port(struct rdma_cm_id *id)
{
	struct kxfer_device *kd;
	struct ib_port_attr attr;
	int down;

	if (!id->device || !rdma_is_port_valid(id->device, id->port_num))
		return -1;
	kd = kxfer_device_from_ib(id->device);
	if (!kd)
		return -1;
	down = !ib_query_port(id->device, id->port_num, &attr) &&
	       attr.state != IB_PORT_ACTIVE;
	kxfer_device_put(kd);
	return down;
}

static void kxfer_reap_work(struct work_struct *work)
{
	struct kxfer_cm_reap *r = container_of(work, struct kxfer_cm_reap, r_work);

	rdma_destroy_id(r->r_id);
	kfree(r);
}

/* Destroy the held cm_ids whose port is up (or that must go). */
static void kxfer_reap_held_work(struct work_struct *work)
{
	struct kxfer_cm_reap *r, *tmp;
	LIST_HEAD(go);
	int port;

	mutex_lock(&kxfer_reap_mutex);
	list_for_each_entry_safe(r, tmp, &kxfer_reap_held, r_node) {
		port = kxfer_reap_exiting ? -1 : kxfer_cm_id_port(r->r_id);
		if (port < 0 || (!port && time_after_eq(jiffies, r->r_after)))
			list_move_tail(&r->r_node, &go);
	}
	if (!list_empty(&kxfer_reap_held))
		queue_delayed_work(kxfer_reap_wq, &kxfer_reap_held_dwork,
				   msecs_to_jiffies(KXFER_REAP_HOLD_MS));
	mutex_unlock(&kxfer_reap_mutex);

	/* Each in its own work item: a DREQ may wait for the CM's timeouts */
	list_for_each_entry_safe(r, tmp, &go, r_node)
		queue_work(kxfer_reap_wq, &r->r_work);
}

/**
 * kxfer_cm_reap_kick - look at the held cm_ids now
 *
 * A device is being removed: rdma_cm waits for its cm_ids to be
 * destroyed, which need not wait for the next look.
 */
void kxfer_cm_reap_kick(void)
{
	mod_delayed_work(kxfer_reap_wq, &kxfer_reap_held_dwork, 0);
}

/**
 * kxfer_cm_id_reap - destroy a cm_id in the background
 * @id: a cm_id whose QP is destroyed; not in its own event handler
 * @settle: its session failed: wait KXFER_REAP_SETTLE_MS first, for a
 *	link going down to show as its port going down
 *
 * Its events are ignored from now on.  May sleep.
 */
void kxfer_cm_id_reap(struct rdma_cm_id *id, bool settle)
{
	struct kxfer_cm_reap *r;
	int port;

	/* Wait out a running handler; later ones see a dead context. */
	rdma_lock_handler(id);
	id->context = &kxfer_cm_dead;
	rdma_unlock_handler(id);

	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		rdma_destroy_id(id);
		return;
	}
	INIT_WORK(&r->r_work, kxfer_reap_work);
	r->r_id = id;
	r->r_after = jiffies + (settle ? msecs_to_jiffies(KXFER_REAP_SETTLE_MS) : 0);
	port = kxfer_cm_id_port(id);
	if (port > 0 || (!port && settle)) {
		mutex_lock(&kxfer_reap_mutex);
		if (!kxfer_reap_exiting) {
			list_add_tail(&r->r_node, &kxfer_reap_held);
			queue_delayed_work(kxfer_reap_wq, &kxfer_reap_held_dwork,
					   msecs_to_jiffies(KXFER_REAP_HOLD_MS));
			r = NULL;
		}
		mutex_unlock(&kxfer_reap_mutex);
		if (!r)
			return;
	}
	queue_work(kxfer_reap_wq, &r->r_work);
}

static void kxfer_qp_event(struct ib_event *ev, void *ctx)
{
	struct kxfer_qp *qp = ctx;

	switch (ev->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		kxfer_session_fail(qp->q_sess, -EIO, ib_event_msg(ev->event));
		break;
	default:
		break;
	}
}

/* Send queue slots one QP needs: data depth, control, registration, drain */
static unsigned int kxfer_qp_send_slots(struct kxfer_session *s)
{
	return s->s_depth + KXFER_CTRL_SENDS + KXFER_REG_BATCH + 1;
}

/*
 * Create the PD (first QP), the CQ and the QP on a cm_id whose route is
 * known, and post the control receives on QP 0.  Caller holds s_mutex.
 */
static int kxfer_qp_setup(struct kxfer_session *s, struct kxfer_qp *qp)
{
	struct rdma_cm_id *id = qp->q_id;
	struct ib_device *ibdev = id->device;
	struct ib_qp_init_attr attr = {};
	unsigned int cqe, vec;
	int ret;

	if (!s->s_dev) {
		s->s_dev = kxfer_device_from_ib(ibdev);
		if (!s->s_dev)
			return -ENODEV;
		s->s_pd = ib_alloc_pd(ibdev, 0);
		if (IS_ERR(s->s_pd)) {
			ret = PTR_ERR(s->s_pd);
			s->s_pd = NULL;
			return ret;
		}
		s->s_port_num = id->port_num;
		ret = kxfer_ctrl_alloc(s);
		if (ret)
			return ret;
	} else if (s->s_dev->kd_ibdev != ibdev) {
		return -EXDEV;
	}

	/*
	 * A polled session's sends complete on a CQ its users poll
	 * (poll.c), its receives on one of their own, interrupt-driven.
	 */
	vec = qp->q_index % ibdev->num_comp_vectors;
	cqe = kxfer_qp_send_slots(s) + 1;
	if (s->s_poll) {
		qp->q_rcq = ib_alloc_cq(ibdev, qp, KXFER_CTRL_RECVS + 2, vec,
					IB_POLL_SOFTIRQ);
		if (IS_ERR(qp->q_rcq)) {
			ret = PTR_ERR(qp->q_rcq);
			qp->q_rcq = NULL;
			return ret;
		}
	} else {
		cqe += KXFER_CTRL_RECVS + 1;
	}
	qp->q_cq = ib_alloc_cq(ibdev, qp, cqe, vec,
			       s->s_poll ? IB_POLL_DIRECT : IB_POLL_SOFTIRQ);
	if (IS_ERR(qp->q_cq)) {
		ret = PTR_ERR(qp->q_cq);
		qp->q_cq = NULL;
		return ret;
	}

	attr.event_handler = kxfer_qp_event;
	attr.qp_context = qp;
	attr.send_cq = qp->q_cq;
	attr.recv_cq = qp->q_rcq ?: qp->q_cq;
	attr.cap.max_send_wr = kxfer_qp_send_slots(s);
	attr.cap.max_recv_wr = KXFER_CTRL_RECVS + 1;
	attr.cap.max_send_sge = min_t(u32, ibdev->attrs.max_send_sge, 32);
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, s->s_pd, &attr);
	if (ret)
		return ret;
	kxfer_qp_data_init(s, qp);
	kxfer_session_poll_enable(s, qp);

	if (qp->q_index == 0)
		return kxfer_ctrl_post_recvs(s);
	return 0;
}

static void kxfer_conn_param(struct kxfer_session *s,
			     struct rdma_conn_param *p,
			     const void *pdata, u8 pdata_len)
{
	const struct ib_device_attr *a = &s->s_dev->kd_ibdev->attrs;

	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = pdata_len;
	p->responder_resources = min_t(u32, a->max_qp_rd_atom, 16);
	p->initiator_depth = min_t(u32, a->max_qp_init_rd_atom, 16);
	p->retry_count = 7;
	/* Two-sided traffic is credit based: a receiver never runs dry. */
	p->rnr_retry_count = 0;
}

static int kxfer_qp_connect(struct kxfer_session *s, struct kxfer_qp *qp)
{
	struct kxfer_wire_conn wc = {};
	struct rdma_conn_param param;

	/* What rdma_cm leaves of an IB CM REQ for the consumer. */
	BUILD_BUG_ON(sizeof(wc) > 56);
	wc.wc_magic = cpu_to_le32(KXFER_WIRE_MAGIC);
	wc.wc_version = cpu_to_le16(KXFER_WIRE_VERSION);
	wc.wc_qp_index = qp->q_index;
	wc.wc_qp_count = s->s_nqps;
	wc.wc_session_id = cpu_to_le64(s->s_sid);
	wc.wc_recv_credits = cpu_to_le16(KXFER_CTRL_RECVS);
	wc.wc_flags = cpu_to_le16(s->s_join ? KXFER_CONN_F_JOIN : 0);
	strscpy(wc.wc_node, kxfer_node_name, sizeof(wc.wc_node));
	wc.wc_incarnation = cpu_to_le32(kxfer_incarnation);
	kxfer_conn_param(s, &param, &wc, sizeof(wc));
	rdma_set_ack_timeout(qp->q_id, kxfer_ack_timeout);
	return rdma_connect(qp->q_id, &param);
}

/*
 * Could a session have failed with @err for its link going down?  Its
 * QPs flushed or in error, transport retries or keepalive exhausted,
 * rdma_cm unable to reach the peer.  Not a protocol error, a refusal or
 * a lack of memory: the link worked for those, and the peer is told at
 * once.
 */
static bool kxfer_err_link(int err)
{
	switch (err) {
	case -ECONNRESET:
	case -ETIMEDOUT:
	case -EIO:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENETDOWN:
		return true;
	default:
		return false;
	}
}

/*
 * Release everything the session holds on the device, in the order the
 * hardware needs: disconnect, drain, deregister, destroy the QPs, free
 * the CQs and buffers, deallocate the PD.  Safe on a half-built session.
 * Caller holds s_mutex.
 */
static void kxfer_session_teardown(struct kxfer_session *s)
{
	/*
	 * Failed in a way a link going down fails it, neither stopped on
	 * purpose nor disconnected by the peer (whose DREQ came: the link
	 * works): kxfer_cm_id_reap()
	 */
	bool settle = s->s_state != KXFER_PEER_CLOSING &&
		      !test_and_clear_bit(KXFER_SE_PEER_DISC, &s->s_events) &&
		      kxfer_err_link(s->s_last_errno);
	unsigned long drain = 0;
	unsigned int i;

	/* Jobs: nothing new is posted; what was posted is flushed below. */
	kxfer_qps_data_stop(s);
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		/*
		 * A session stopped on purpose tells the peer now; one that
		 * failed, from the reaper (kxfer_cm_id_reap()): its link may
		 * be going down.  The drain below moves the QP to the error
		 * state all the same.
		 */
		if (qp->q_id && qp->q_established && !settle &&
		    !kxfer_cm_id_port(qp->q_id))
			rdma_disconnect(qp->q_id);
	}
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (qp->q_id && qp->q_id->qp && qp->q_established)
			drain |= BIT(i);
	}
	/* Then no user polls the CQs, which go below. */
	kxfer_session_poll_drain(s, drain, true);
	/* Notifications that came: their jobs ended at the peer. */
	kxfer_ctrl_last_words(s);
	/* Every posted batch has completed: fail what never got posted. */
	kxfer_qps_data_fail(s);
	kxfer_regs_release(s);
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (qp->q_id && qp->q_id->qp)
			rdma_destroy_qp(qp->q_id);
		if (qp->q_id)
			kxfer_cm_id_reap(qp->q_id, settle);
		if (qp->q_cq)
			ib_free_cq(qp->q_cq);
		if (qp->q_rcq)
			ib_free_cq(qp->q_rcq);
		qp->q_id = NULL;
		qp->q_cq = NULL;
		qp->q_rcq = NULL;
		qp->q_events = 0;
		qp->q_established = false;
		qp->q_remote_qpn = 0;
	}
	kxfer_ctrl_free(s);
	kxfer_session_notify_fail(s);
	kxfer_rexports_clear(s);
	if (s->s_pd) {
		ib_dealloc_pd(s->s_pd);
		s->s_pd = NULL;
	}
	if (s->s_dev) {
		kxfer_device_put(s->s_dev);
		s->s_dev = NULL;
	}
	s->s_nestablished = 0;
	s->s_ctrl_up = false;
	s->s_sent_sync = false;
	s->s_got_sync = false;
	s->s_got_hello = false;
	s->s_peer_features = 0;
	kxfer_auth_reset(s);
	/* Handlers of the destroyed ids may have left bits behind. */
	clear_bit(KXFER_SE_RX, &s->s_events);
	clear_bit(KXFER_SE_TX, &s->s_events);
	clear_bit(KXFER_SE_REGS, &s->s_events);
	clear_bit(KXFER_SE_DRAIN, &s->s_events);
	clear_bit(KXFER_SE_FAIL, &s->s_events);
	clear_bit(KXFER_SE_PEER_DISC, &s->s_events);
}

/* ---------------------------------------------------------------------- */
/* State machine                                                           */
/* ---------------------------------------------------------------------- */

static unsigned int kxfer_backoff_next(struct kxfer_session *s)
{
	unsigned int ms = s->s_backoff_ms ?: KXFER_RECONNECT_MIN_MS;
	unsigned int jitter = ms / 4;

	s->s_backoff_ms = min_t(unsigned int, ms * 2,
				max_t(unsigned int, kxfer_reconnect_max_ms,
				      KXFER_RECONNECT_MIN_MS));
	/* ms +- 25% */
	return ms - jitter + get_random_u32_below(2 * jitter + 1);
}

/*
 * Deadlines of a connecting session (either role), from the start of the
 * attempt: its QPs are connected within KXFER_CONNECT_TIMEOUT_MS, and it
 * is up (export tables exchanged) within KXFER_UP_TIMEOUT_MS, so that a
 * peer that answers keepalives but never ends its export table cannot
 * hold it "connecting" for good.  Caller holds s_mutex.
 *
 * Return: the time left until the deadline that applies (0: passed), or
 * U64_MAX if none applies (not connecting).
 */
static u64 kxfer_session_time_left(struct kxfer_session *s, u64 now)
{
	u64 end = s->s_start_ns;

	if (s->s_state != KXFER_PEER_CONNECTING)
		return U64_MAX;
	end += (u64)(s->s_ctrl_up ? KXFER_UP_TIMEOUT_MS :
		     KXFER_CONNECT_TIMEOUT_MS) * NSEC_PER_MSEC;
	return now < end ? end - now : 0;
}

/* The same, and fail the session if the deadline has passed. */
static u64 kxfer_session_deadline(struct kxfer_session *s, u64 now)
{
	u64 left = kxfer_session_time_left(s, now);

	if (!left)
		kxfer_session_fail(s, -ETIMEDOUT, s->s_ctrl_up ?
				   "export exchange timed out" :
				   "connection timed out");
	return left;
}

/*
 * Caller holds s_mutex.  Look again in @ms, or at the deadline if that
 * comes first: the keepalive interval is a parameter, 600 s in a test,
 * and must not stretch a connection attempt.
 */
static void kxfer_session_timer_in(struct kxfer_session *s, unsigned int ms,
				   u64 left_ns)
{
	u64 left_ms = div_u64(left_ns, NSEC_PER_MSEC) + 1;

	mod_delayed_work(kxfer_wq, &s->s_timer,
			 msecs_to_jiffies(min_t(u64, ms, left_ms)));
}

/* Caller holds s_mutex. */
static void kxfer_session_connect(struct kxfer_session *s)
{
	unsigned int i;
	int ret = 0;

	s->s_state = KXFER_PEER_CONNECTING;
	s->s_start_ns = kxfer_now_ns();
	s->s_sid = get_random_u64();
	s->s_attempts++;
	s->s_next_try_ns = 0;
	kxfer_session_notify(s);

	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];
		struct rdma_cm_id *id;

		qp->q_kind = KXFER_CM_QP;
		qp->q_sess = s;
		qp->q_index = i;
		id = rdma_create_id(&init_net, kxfer_cm_handler, qp,
				    RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(id)) {
			ret = PTR_ERR(id);
			break;
		}
		qp->q_id = id;
		ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&s->s_dst,
					KXFER_CM_TIMEOUT_MS);
		if (ret)
			break;
	}
	if (ret)
		kxfer_session_fail(s, ret, "cannot start address resolution");
	kxfer_session_timer_in(s, kxfer_keepalive_ms,
			       kxfer_session_time_left(s, s->s_start_ns));
}

/*
 * Caller holds s_mutex.  A peer can make a session fail at will: say it
 * once per change of reason, rate-limited.  A connector that keeps
 * failing for the same reason says so again every KXFER_SAY_AGAIN_MS,
 * with the attempts it made, so that retrying in vain is seen in the
 * log too and not only in peer show.
 */
static void kxfer_session_say_down(struct kxfer_session *s,
				   enum kxfer_peer_state prev, bool same,
				   unsigned int delay_ms)
{
	u64 now = kxfer_now_ns();

	if (prev == KXFER_PEER_UP) {
		kxfer_info("peer %s: down: %s (%d)\n", s->s_name,
			   s->s_last_error, s->s_last_errno);
	} else if (s->s_role != KXFER_PEER_CONNECTOR) {
		if (!same)
			pr_info_ratelimited("kxfer: peer %s: %s (%d)\n", s->s_name,
					    s->s_last_error, s->s_last_errno);
		return;
	} else if (!same) {
		pr_info_ratelimited("kxfer: peer %s: %s (%d), attempt %u, next in %u ms\n",
				    s->s_name, s->s_last_error,
				    s->s_last_errno, s->s_attempts, delay_ms);
	} else if (now - s->s_said_ns >=
		   (u64)KXFER_SAY_AGAIN_MS * NSEC_PER_MSEC) {
		pr_info_ratelimited("kxfer: peer %s: still failing after %u attempts: %s (%d), next in %u ms\n",
				    s->s_name, s->s_attempts, s->s_last_error,
				    s->s_last_errno, delay_ms);
	} else {
		return;
	}
	s->s_said_ns = now;
}

static void kxfer_penalty_add(const struct sockaddr_storage *src);

/* Caller holds s_mutex.  The session failed: tear down, then retry. */
static void kxfer_session_down(struct kxfer_session *s)
{
	enum kxfer_peer_state prev = s->s_state;
	unsigned int delay_ms = 0;
	unsigned long flags;
	bool same;

	spin_lock_irqsave(&s->s_lock, flags);
	same = !strcmp(s->s_last_error, s->s_fail_why);
	strscpy(s->s_last_error, s->s_fail_why, sizeof(s->s_last_error));
	s->s_last_errno = s->s_fail_errno;
	spin_unlock_irqrestore(&s->s_lock, flags);

	kxfer_auth_session_down(s);
	if (s->s_rails)
		kxfer_rails_down(s, prev == KXFER_PEER_UP);
	/* A handshake that failed counts against its address. */
	if (s->s_role == KXFER_PEER_ACCEPTOR &&
	    s->s_auth.sa_result == KXFER_PEER_AUTH_FAILED)
		kxfer_penalty_add(&s->s_dst);
	/*
	 * Down before the teardown, which may wait long on a device (rxe's
	 * QP destroy, up to 50 s per QP, for packets a downed netdev
	 * holds): meanwhile no job, failover or peer show takes this rail
	 * for one that is up, to wait for its mutex.
	 */
	WRITE_ONCE(s->s_state, KXFER_PEER_DOWN);
	kxfer_session_teardown(s);
	if (prev == KXFER_PEER_UP)
		s->s_attempts = 0;
	if (s->s_role == KXFER_PEER_CONNECTOR) {
		delay_ms = kxfer_backoff_next(s);
		s->s_next_try_ns = kxfer_now_ns() +
				   (u64)delay_ms * NSEC_PER_MSEC;
	}
	kxfer_session_say_down(s, prev, same, delay_ms);
	kxfer_session_notify(s);

	if (s->s_role == KXFER_PEER_CONNECTOR) {
		mod_delayed_work(kxfer_wq, &s->s_timer,
				 msecs_to_jiffies(delay_ms));
	} else {
		/* The connector comes back with a new session. */
		kref_get(&s->s_ref);
		if (!queue_work(kxfer_wq, &s->s_destroy_work))
			kxfer_session_put(s);
	}
}

/* Caller holds s_mutex.  All QPs are connected: start the control channel. */
static void kxfer_session_ctrl_start(struct kxfer_session *s)
{
	u64 now;

	s->s_ctrl_up = true;
	/* Handles and held jobs of the last connection are stale now. */
	s->s_conn_gen++;
	kxfer_rails_conn_start(s);
	/* The last connection's queue says nothing of this one's. */
	s->s_ka_rtt_recent_ns = 0;
	/* First of all: tell a newer acceptor what we speak too. */
	if (s->s_role == KXFER_PEER_CONNECTOR && s->s_peer_features) {
		struct kxfer_msg_hello h = {
			.mo_features = cpu_to_le32(s->s_peer_features),
		};

		if (s->s_rails && (s->s_peer_features & KXFER_WIRE_F_RAILS))
			h.mo_rail = cpu_to_le32(s->s_rail + 1);

		kxfer_ctrl_send(s, KXFER_MSG_HELLO, &h.mo_features,
				sizeof(h) - sizeof(h.mo_hdr));
	}
	/* Then prove who we are, before any export goes either way. */
	kxfer_auth_start(s);
	now = kxfer_now_ns();
	s->s_last_rx_ns = now;
	set_bit(KXFER_SE_REGS, &s->s_events);
	/* The handshake's deadline, too, comes before the attempt's. */
	kxfer_session_timer_in(s, kxfer_keepalive_ms / 2,
			       min(kxfer_session_time_left(s, now),
				   kxfer_auth_time_left(s, now)));
}

static void kxfer_session_work(struct work_struct *work)
{
	struct kxfer_session *s = container_of(work, struct kxfer_session,
					       s_work);
	unsigned int i;
	int ret;

	mutex_lock(&s->s_mutex);
	if (s->s_state == KXFER_PEER_CLOSING)
		goto out_unlock;
	if (test_bit(KXFER_SE_FAIL, &s->s_events)) {
		if (s->s_state != KXFER_PEER_DOWN)
			kxfer_session_down(s);
		else
			clear_bit(KXFER_SE_FAIL, &s->s_events);
		goto out_unlock;
	}
	if (s->s_state == KXFER_PEER_DOWN)
		goto out_unlock;

	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (!test_and_clear_bit(KXFER_QPE_ROUTED, &qp->q_events))
			continue;
		/* A request into a link that is down: kxfer_cm_id_reap() */
		if (kxfer_cm_id_port(qp->q_id) > 0) {
			kxfer_session_fail(s, -ENETDOWN, "the link is down");
			goto out_unlock;
		}
		ret = kxfer_qp_setup(s, qp);
		if (!ret)
			ret = kxfer_qp_connect(s, qp);
		if (ret) {
			kxfer_session_fail(s, ret, ret == -EXDEV ?
					   "QPs routed over two devices" :
					   "cannot set up a QP");
			goto out_unlock;
		}
	}
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (test_and_clear_bit(KXFER_QPE_ESTABLISHED, &qp->q_events) &&
		    !qp->q_established) {
			qp->q_established = true;
			s->s_nestablished++;
		}
	}
	if (!s->s_ctrl_up) {
		if (s->s_nestablished < s->s_nqps)
			goto out_unlock;
		kxfer_session_ctrl_start(s);
	}

	if (test_and_clear_bit(KXFER_SE_RX, &s->s_events))
		kxfer_ctrl_process(s);
	if (test_bit(KXFER_SE_FAIL, &s->s_events))
		goto out_unlock;
	/* A connector of several rails gets the token of the session. */
	if (s->s_role == KXFER_PEER_ACCEPTOR && !s->s_rails && !s->s_join &&
	    s->s_got_hello && (s->s_peer_features & KXFER_WIRE_F_RAILS) &&
	    kxfer_auth_ready(s))
		kxfer_rails_issue(s);
	/* Nothing is advertised to a peer that has yet to authenticate. */
	if (kxfer_auth_ready(s) &&
	    test_and_clear_bit(KXFER_SE_REGS, &s->s_events)) {
		ret = kxfer_regs_sync(s);
		if (ret) {
			kxfer_session_fail(s, ret, "export registration failed");
			goto out_unlock;
		}
		if (!s->s_sent_sync) {
			kxfer_ctrl_send(s, KXFER_MSG_SYNC_DONE, NULL, 0);
			s->s_sent_sync = true;
		}
	}
	if (test_and_clear_bit(KXFER_SE_NOTIFY, &s->s_events))
		kxfer_session_notify_flush(s);
	if (test_and_clear_bit(KXFER_SE_DRAIN, &s->s_events))
		kxfer_rexports_drained(s);
	clear_bit(KXFER_SE_TX, &s->s_events);
	kxfer_ctrl_flush(s);

	if (s->s_state == KXFER_PEER_CONNECTING && s->s_sent_sync &&
	    s->s_got_sync && !test_bit(KXFER_SE_FAIL, &s->s_events)) {
		/* Its place first: placement reads it once the rail is up. */
		kxfer_rails_up(s);
		s->s_state = KXFER_PEER_UP;
		s->s_up_ns = kxfer_now_ns() - s->s_start_ns;
		s->s_backoff_ms = 0;
		kxfer_info("peer %s: up, %u QP%s on %s, remote node %s\n",
			   s->s_name, s->s_nqps, s->s_nqps > 1 ? "s" : "",
			   s->s_dev->kd_name, s->s_remote_node);
		kxfer_session_notify(s);
	}
out_unlock:
	mutex_unlock(&s->s_mutex);
	if (test_and_clear_bit(KXFER_SE_SUPERSEDE, &s->s_events))
		kxfer_sessions_supersede_late(s);
}

/*
 * Probe once per interval, whatever else flows, so that both ends measure
 * the round trip.  The answer rides the peer's QP 0 behind everything the
 * peer queued there before it, so under a deep queue it comes late while
 * the peer is well: probe again while it is late, a third of the timeout
 * apart (at least an interval), because each probe sent is acknowledged
 * by the peer's NIC at once, and that acknowledgment is a sign of life
 * (kxfer_ctrl_wc_send) where a session only receiving RDMA WRITEs has no
 * other.  A repeat waits for an empty control queue (a probe that cannot
 * be sent proves nothing) and for more than half the peer's receive
 * credits (each repeat holds one until the late answer returns it, and
 * answers, notifications and export updates need them too).  The NIC of
 * a peer whose kxfer no longer answers would acknowledge repeats for
 * ever: kxfer_session_timer bounds the wait for an answer.  Caller holds
 * s_mutex.
 */
static bool kxfer_session_probe_due(struct kxfer_session *s, u64 now)
{
	u64 every = kxfer_keepalive_ms;
	unsigned long flags;
	bool credits;

	if (s->s_ka_sent_ns) {
		if (!list_empty(&s->s_txq))
			return false;
		spin_lock_irqsave(&s->s_lock, flags);
		credits = s->s_credits > s->s_credits_max / 2;
		spin_unlock_irqrestore(&s->s_lock, flags);
		if (!credits)
			return false;
		every = max(every, (u64)(kxfer_keepalive_timeout_ms / 3));
	}
	return now - s->s_ka_last_ns >= every * NSEC_PER_MSEC;
}

/*
 * Milliseconds until the timer must look again, with the control
 * channel up: when the next probe is due, when the peer will have been
 * silent for the timeout in force (signs of life move that on: the timer
 * then finds it not reached and looks again later), when a late answer
 * will be overdue, or when a withdrawal's answer will be (frwr.c),
 * whichever comes first.  A probe due now that may not
 * go yet (kxfer_session_probe_due()) is looked at again a quarter
 * interval on.  A session looks about once per interval, not four
 * times: at 256 sessions the quarter-interval ticks alone were a
 * thousand work items a second.  Caller holds s_mutex.
 */
static unsigned int kxfer_session_next_look(struct kxfer_session *s,
					    u64 now, u64 last)
{
	u64 tmo = (u64)kxfer_keepalive_timeout_ms * NSEC_PER_MSEC;
	u64 every = (u64)kxfer_keepalive_ms * NSEC_PER_MSEC;
	u64 next = last + kxfer_session_ka_timeout_ns(s) + 1;

	if (s->s_ka_sent_ns) {
		every = max(every, tmo / 3);
		next = min(next, s->s_ka_sent_ns + tmo * KXFER_KA_ANSWER_MAX + 1);
	}
	next = min(next, s->s_ka_last_ns + every);
	/* the answer to a withdrawal, when one is awaited */
	next = min(next, kxfer_regs_drain_next(s) + 1);
	if (next <= now)
		return max(kxfer_keepalive_ms / 4, 10U);
	return max_t(u64, DIV_ROUND_UP_ULL(next - now, NSEC_PER_MSEC), 10);
}

/* Jobs accepted on the session that have not ended yet. */
static u64 kxfer_session_jobs(struct kxfer_session *s)
{
	struct kxfer_sess_stats *st = &s->s_stats;
	u64 ended;

	/*
	 * Unordered counters: a job counted one way and not yet the other
	 * is seen on the next tick.  Ended read first, so that a job
	 * accepted meanwhile counts as in flight.
	 */
	ended = atomic64_read(&st->ok) + atomic64_read(&st->err_flush) +
		atomic64_read(&st->err_access) +
		atomic64_read(&st->err_timeout) +
		atomic64_read(&st->err_remote) +
		atomic64_read(&st->err_stale) + atomic64_read(&st->err_other);
	return atomic64_read(&st->jobs) - ended;
}

/**
 * kxfer_session_idle_ns - how long a session made on demand is unused
 * @s: the session
 *
 * Return: ns since it last had a handle or a job (as its timer saw), 0
 * while it has one or if it was not made on demand.  Any context.
 */
u64 kxfer_session_idle_ns(const struct kxfer_session *s)
{
	u64 since = READ_ONCE(s->s_idle_since_ns), now = kxfer_now_ns();

	return s->s_ondemand && since && now > since ? now - since : 0;
}

/* End a session made on demand: off the list, stopped, by s_destroy_work. */
static void kxfer_session_idle_stop(struct kxfer_session *s)
{
	lockdep_assert_held(&s->s_mutex);
	WRITE_ONCE(s->s_idle_ended, true);
	kxfer_session_get(s);
	queue_work(kxfer_wq, &s->s_destroy_work);
}

/*
 * A session made on demand ends once no handle of any file names it and
 * no job uses it for its rule's idle time, as its timer sees (at least
 * every reconnect interval while it is down, every keepalive interval
 * while it is up).  Whoever wants it again asks again.  Caller holds
 * s_mutex.
 */
static bool kxfer_session_idle_end(struct kxfer_session *s, u64 now)
{
	if (!s->s_ondemand || s->s_idle_ended)
		return false;
	if (atomic_read(&s->s_handles) || kxfer_session_jobs(s)) {
		WRITE_ONCE(s->s_idle_since_ns, 0);
		return false;
	}
	if (!s->s_idle_since_ns) {
		WRITE_ONCE(s->s_idle_since_ns, now);
		return false;
	}
	if (now - s->s_idle_since_ns < (u64)s->s_idle_s * NSEC_PER_SEC)
		return false;
	kxfer_info("peer %s: made on demand and unused for %u s: ended\n",
		   s->s_name, s->s_idle_s);
	kxfer_session_idle_stop(s);
	return true;
}

/* Keepalive while connected, reconnect while down. */
static void kxfer_session_timer(struct work_struct *work)
{
	struct kxfer_session *s = container_of(to_delayed_work(work),
					       struct kxfer_session, s_timer);
	u64 now, last, idle, left;
	const char *why;

	mutex_lock(&s->s_mutex);
	if (s->s_state != KXFER_PEER_CLOSING &&
	    kxfer_session_idle_end(s, kxfer_now_ns())) {
		mutex_unlock(&s->s_mutex);
		return;
	}
	/*
	 * Read the last sign of life first: CQ handlers move it forward at
	 * any time, and a stamp newer than "now" must not wrap into a huge
	 * idle time.
	 */
	last = READ_ONCE(s->s_last_rx_ns);
	now = kxfer_now_ns();
	idle = now > last ? now - last : 0;
	switch (s->s_state) {
	case KXFER_PEER_DOWN:
		/* A rail may wait for another's first connection (rail.c). */
		if (s->s_role == KXFER_PEER_CONNECTOR &&
		    kxfer_rails_may_connect(s)) {
			s->s_reconnects++;
			kxfer_session_connect(s);
		}
		break;
	case KXFER_PEER_CONNECTING:
	case KXFER_PEER_UP:
		/*
		 * A handshake out of time first: its reason says more than the
		 * attempt's deadline, which comes later.
		 */
		why = s->s_ctrl_up ? kxfer_auth_expired(s, now) : NULL;
		if (why) {
			kxfer_session_fail(s, -EACCES, why);
			break;
		}
		/* Failed: s_work tears down and schedules the next attempt. */
		left = kxfer_session_deadline(s, now);
		if (!left)
			break;
		if (s->s_ctrl_up)
			left = min(left, kxfer_auth_time_left(s, now));
		if (!s->s_ctrl_up) {
			kxfer_session_timer_in(s, kxfer_keepalive_ms, left);
			break;
		}
		if (idle > kxfer_session_ka_timeout_ns(s)) {
			kxfer_session_fail(s, -ETIMEDOUT, "keepalive timeout");
			break;
		}
		/*
		 * Signs of life without an answer: the peer's NIC takes the
		 * probes, its kxfer does not answer them (or its queue is
		 * deeper than any data path should be).
		 */
		if (s->s_ka_sent_ns && now - s->s_ka_sent_ns >
		    (u64)kxfer_keepalive_timeout_ms * KXFER_KA_ANSWER_MAX *
		    NSEC_PER_MSEC) {
			kxfer_session_fail(s, -ETIMEDOUT,
					   "keepalive answer overdue");
			break;
		}
		/* A peer that does not drain what we withdraw: the only way. */
		if (kxfer_regs_drain_overdue(s, now))
			break;
		if (kxfer_session_probe_due(s, now)) {
			struct kxfer_msg_keepalive ka = {};

			if (!s->s_ka_sent_ns)
				s->s_ka_sent_ns = now;
			s->s_ka_last_ns = now;
			ka.mk_stamp = cpu_to_le64(now);
			kxfer_ctrl_send(s, KXFER_MSG_KEEPALIVE,
					&ka.mk_stamp, sizeof(ka.mk_stamp));
			kxfer_ctrl_flush(s);
		}
		kxfer_session_timer_in(s, kxfer_session_next_look(s, now, last),
				       left);
		break;
	default:
		break;
	}
	mutex_unlock(&s->s_mutex);
}

static void kxfer_session_destroy_work(struct work_struct *work);

static struct kxfer_session *kxfer_session_alloc(const char *name,
						 enum kxfer_peer_role role,
						 unsigned int nqps,
						 unsigned int depth)
{
	struct kxfer_session *s;
	unsigned int i;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	kref_init(&s->s_ref);
	strscpy(s->s_name, name, sizeof(s->s_name));
	s->s_role = role;
	s->s_state = KXFER_PEER_DOWN;
	s->s_nqps = nqps;
	s->s_depth = depth;
	mutex_init(&s->s_mutex);
	spin_lock_init(&s->s_lock);
	INIT_WORK(&s->s_work, kxfer_session_work);
	INIT_DELAYED_WORK(&s->s_timer, kxfer_session_timer);
	INIT_WORK(&s->s_destroy_work, kxfer_session_destroy_work);
	INIT_LIST_HEAD(&s->s_free_sends);
	INIT_LIST_HEAD(&s->s_rxq);
	INIT_LIST_HEAD(&s->s_txq);
	INIT_LIST_HEAD(&s->s_regs);
	INIT_LIST_HEAD(&s->s_rexports);
	INIT_LIST_HEAD(&s->s_rx_draining);
	INIT_LIST_HEAD(&s->s_notifyq);
	kxfer_session_poll_init(s);
	s->s_id = atomic_inc_return(&kxfer_session_ids);
	for (i = 0; i < KXFER_MAX_QPS; i++) {
		spin_lock_init(&s->s_qps[i].q_post_lock);
		INIT_LIST_HEAD(&s->s_qps[i].q_backlog);
		INIT_LIST_HEAD(&s->s_qps[i].q_quiet);
		s->s_qps[i].q_dead = true;
		INIT_WORK(&s->s_qps[i].q_kick_work, kxfer_qp_kick_work);
	}
	return s;
}

/*
 * Stop a session for good, once it is off kxfer_sessions: no work runs
 * after this and everything on the device is released.  The caller
 * holds no session lock.
 */
static void kxfer_session_stop(struct kxfer_session *s)
{
	unsigned long flags;

	/* Work that starts after this sees CLOSING and does nothing. */
	mutex_lock(&s->s_mutex);
	s->s_state = KXFER_PEER_CLOSING;
	mutex_unlock(&s->s_mutex);
	cancel_delayed_work_sync(&s->s_timer);
	cancel_work_sync(&s->s_work);

	mutex_lock(&s->s_mutex);
	kxfer_session_teardown(s);
	mutex_unlock(&s->s_mutex);
	spin_lock_irqsave(&s->s_lock, flags);
	set_bit(KXFER_SE_STOPPED, &s->s_events);
	spin_unlock_irqrestore(&s->s_lock, flags);

	/* No handler can queue anything any more. */
	cancel_work_sync(&s->s_work);
	cancel_delayed_work_sync(&s->s_timer);
	kxfer_session_poll_stop(s);
	kxfer_nl_notify_peer(s, true);
}

/*
 * An accepting session failed, or one made on demand is unused: drop it.
 * Holds a reference of its own.
 */
static void kxfer_session_destroy_work(struct work_struct *work)
{
	struct kxfer_session *s = container_of(work, struct kxfer_session,
					       s_destroy_work);
	bool listed;

	mutex_lock(&kxfer_sess_mutex);
	listed = !list_empty(&s->s_node);
	list_del_init(&s->s_node);
	mutex_unlock(&kxfer_sess_mutex);

	/* If it was not listed, peer del or unload is stopping it. */
	if (listed) {
		kxfer_session_stop(s);
		kxfer_session_put(s);
	}
	kxfer_session_put(s);
}

/* ---------------------------------------------------------------------- */
/* rdma_cm events                                                          */
/* ---------------------------------------------------------------------- */

static const char *kxfer_reject_why(struct rdma_cm_id *id,
				    struct rdma_cm_event *ev)
{
	const struct kxfer_wire_reject *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(id, ev, &len);
	if (rej && len >= sizeof(*rej) &&
	    le32_to_cpu(rej->wr_magic) == KXFER_WIRE_MAGIC) {
		switch (le32_to_cpu(rej->wr_reason)) {
		case KXFER_REJ_VERSION:
			return "rejected: protocol version mismatch";
		case KXFER_REJ_NOT_ALLOWED:
			return "rejected: not in the listener's allow list";
		case KXFER_REJ_BUSY:
			return "rejected: peer busy";
		case KXFER_REJ_DEVICE:
			return "rejected: QPs on two devices";
		case KXFER_REJ_AUTH:
			return "rejected: authentication required, no key for us there";
		default:
			return "rejected: malformed request";
		}
	}
	return rdma_reject_msg(id, ev->status);
}

/* The connector learns the acceptor's identity from its private data. */
static int kxfer_qp_established(struct kxfer_qp *qp, struct rdma_cm_event *ev)
{
	struct kxfer_session *s = qp->q_sess;
	const struct kxfer_wire_accept *wa = ev->param.conn.private_data;
	unsigned long flags;

	/* An acceptor's ESTABLISHED (RTU) carries none: it kept the REQ's. */
	if (ev->param.conn.qp_num)
		qp->q_remote_qpn = ev->param.conn.qp_num;
	if (s->s_role != KXFER_PEER_CONNECTOR || qp->q_index)
		return 0;
	if (!wa || ev->param.conn.private_data_len <
		   offsetof(struct kxfer_wire_accept, wa_features) ||
	    le32_to_cpu(wa->wa_magic) != KXFER_WIRE_MAGIC ||
	    le16_to_cpu(wa->wa_version) != KXFER_WIRE_VERSION ||
	    !kxfer_wire_credits_ok(wa->wa_recv_credits) ||
	    kxfer_wire_check_name(wa->wa_node))
		return -EPROTO;
	spin_lock_irqsave(&s->s_lock, flags);
	/* Zero from an acceptor that predates it: the CM pads with zeros. */
	if (ev->param.conn.private_data_len >= offsetofend(typeof(*wa),
							  wa_features))
		s->s_peer_features = le32_to_cpu(wa->wa_features) &
				     READ_ONCE(kxfer_wire_features);
	/* Rails only for a peer of several: no token is asked for then. */
	if (!s->s_rails)
		s->s_peer_features &= ~KXFER_WIRE_F_RAILS;
	if (kxfer_auth_accepted(s, wa, ev->param.conn.private_data_len)) {
		spin_unlock_irqrestore(&s->s_lock, flags);
		return -EPROTO;
	}
	s->s_credits = le16_to_cpu(wa->wa_recv_credits);
	s->s_credits_max = s->s_credits;
	memcpy(s->s_remote_node, wa->wa_node, sizeof(s->s_remote_node));
	spin_unlock_irqrestore(&s->s_lock, flags);
	return 0;
}

/**
 * kxfer_cm_handler - rdma_cm event handler of every kxfer cm_id
 * @id: the cm_id
 * @ev: the event
 *
 * Listener events go to listen.c.  For QPs, record what happened and
 * let s_work act on it; no mutex is taken here.
 *
 * Return: 0; non-zero only from the listener path, to refuse a request.
 */
int kxfer_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	enum kxfer_cm_kind *kind = id->context;
	struct kxfer_qp *qp;
	struct kxfer_session *s;
	int ret;

	if (*kind == KXFER_CM_DEAD || *kind == KXFER_CM_PENDING)
		return 0;
	if (*kind == KXFER_CM_LISTENER ||
	    ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return kxfer_listener_cm_handler(id, ev);

	qp = id->context;
	s = qp->q_sess;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, KXFER_CM_TIMEOUT_MS);
		if (ret)
			kxfer_session_fail(s, ret, "cannot resolve the route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		set_bit(KXFER_QPE_ROUTED, &qp->q_events);
		queue_work(kxfer_wq, &s->s_work);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (kxfer_qp_established(qp, ev)) {
			kxfer_session_fail(s, -EPROTO,
					   "peer accepted with bad private data");
			break;
		}
		set_bit(KXFER_QPE_ESTABLISHED, &qp->q_events);
		queue_work(kxfer_wq, &s->s_work);
		break;
	case RDMA_CM_EVENT_REJECTED:
		kxfer_session_fail(s, -ECONNREFUSED, kxfer_reject_why(id, ev));
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		kxfer_session_fail(s, ev->status ?: -EHOSTUNREACH,
				   rdma_event_msg(ev->event));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		set_bit(KXFER_SE_PEER_DISC, &s->s_events);
		kxfer_session_fail(s, -ECONNRESET, "disconnected by the peer");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		kxfer_session_fail(s, -ENODEV, "device removed");
		break;
	case RDMA_CM_EVENT_ADDR_CHANGE:
		kxfer_session_fail(s, -ENETUNREACH, "address changed");
		break;
	default:
		break;
	}
	return 0;
}

/* The same host address, ports aside (an IPv4-mapped IPv6 one is IPv4). */
static bool kxfer_same_host(const struct sockaddr_storage *a,
			    const struct sockaddr_storage *b)
{
	unsigned int alen, blen;
	const u8 *ab = kxfer_sa_bytes((const struct sockaddr *)a, &alen);
	const u8 *bb = kxfer_sa_bytes((const struct sockaddr *)b, &blen);

	return ab && bb && alen == blen && !memcmp(ab, bb, alen);
}

/*
 * A node that connects with another incarnation from the address an
 * earlier incarnation's sessions came from has restarted (a reboot or a
 * module reload): those sessions are dead, whatever keepalive has yet to
 * see, and their jobs end now rather than at the keepalive timeout.  A
 * node that does not tell its incarnation (0) supersedes nothing, and a
 * name claimed from another address is not enough.  It takes one
 * connect request: whoever can send from that address can do it, as they
 * could break the node's RoCE traffic anyway, unless the sessions it
 * would end are authenticated: then it must have proven as much as they
 * did (auth.c), and a session that authenticates supersedes only once
 * it has (kxfer_sessions_supersede_late()).  Caller holds
 * kxfer_sess_mutex.
 */
static void kxfer_sessions_supersede(struct kxfer_session *new)
{
	struct kxfer_session *s;

	lockdep_assert_held(&kxfer_sess_mutex);
	if (!new->s_incarnation)
		return;
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		if (s->s_role != KXFER_PEER_ACCEPTOR || !s->s_incarnation ||
		    s->s_incarnation == new->s_incarnation ||
		    strcmp(s->s_remote_node, new->s_remote_node) ||
		    !kxfer_same_host(&s->s_dst, &new->s_dst) ||
		    kxfer_auth_strength(s) > kxfer_auth_strength(new))
			continue;
		kxfer_session_fail(s, -ECONNRESET, "the peer restarted");
	}
}

/**
 * kxfer_sessions_supersede_late - supersede once authentication decided
 * @new: an accepting session whose handshake decided
 *
 * Now it may end its node's older incarnations.  Called from its s_work
 * with no session lock held.
 */
void kxfer_sessions_supersede_late(struct kxfer_session *new)
{
	mutex_lock(&kxfer_sess_mutex);
	if (!list_empty(&new->s_node) &&
	    !test_bit(KXFER_SE_FAIL, &new->s_events))
		kxfer_sessions_supersede(new);
	mutex_unlock(&kxfer_sess_mutex);
}

/*
 * Addresses whose accepting sessions failed their handshake (a proof that
 * does not match, a message out of turn or before it ended, a handshake
 * out of time, an eviction): an address with max_half_open such failures
 * in a row, none KXFER_PENALTY_MS apart, is slowed down to one half-open
 * session at a time for the names no key is bound to, until it has gone
 * KXFER_PENALTY_MS without a failure.  A node whose name has a key is not
 * slowed down: it proves who it is (kxfer_half_open_admit()).  A small
 * table, the least recently failing address making room.
 */
#define KXFER_PENALTY_SLOTS	64
#define KXFER_PENALTY_MS	30000

struct kxfer_penalty {
	struct sockaddr_storage	pe_addr;
	u64			pe_last_ns;	/* last failure, 0: unused */
	unsigned int		pe_fails;	/* in a row */
};

static struct kxfer_penalty kxfer_penalties[KXFER_PENALTY_SLOTS];
static DEFINE_SPINLOCK(kxfer_penalty_lock);

static bool kxfer_penalty_live(const struct kxfer_penalty *pe, u64 now)
{
	return pe->pe_last_ns &&
	       now - pe->pe_last_ns < (u64)KXFER_PENALTY_MS * NSEC_PER_MSEC;
}

/* An accepting session from @src failed its handshake. */
static void kxfer_penalty_add(const struct sockaddr_storage *src)
{
	struct kxfer_penalty *pe, *slot = &kxfer_penalties[0];
	u64 now = kxfer_now_ns();
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&kxfer_penalty_lock, flags);
	for (i = 0; i < KXFER_PENALTY_SLOTS; i++) {
		pe = &kxfer_penalties[i];
		if (pe->pe_last_ns && kxfer_same_host(&pe->pe_addr, src)) {
			slot = pe;
			break;
		}
		if (pe->pe_last_ns < slot->pe_last_ns)
			slot = pe;
	}
	if (!kxfer_penalty_live(slot, now) ||
	    !kxfer_same_host(&slot->pe_addr, src)) {
		memcpy(&slot->pe_addr, src, sizeof(slot->pe_addr));
		slot->pe_fails = 0;
	}
	slot->pe_fails++;
	slot->pe_last_ns = now;
	spin_unlock_irqrestore(&kxfer_penalty_lock, flags);
}

/* Is @src slowed down to one half-open session of an unkeyed name? */
static bool kxfer_penalized(const struct sockaddr_storage *src,
			    unsigned int max)
{
	u64 now = kxfer_now_ns();
	unsigned long flags;
	bool slow = false;
	unsigned int i;

	spin_lock_irqsave(&kxfer_penalty_lock, flags);
	for (i = 0; i < KXFER_PENALTY_SLOTS; i++) {
		const struct kxfer_penalty *pe = &kxfer_penalties[i];

		if (kxfer_penalty_live(pe, now) &&
		    kxfer_same_host(&pe->pe_addr, src)) {
			slow = pe->pe_fails >= max;
			break;
		}
	}
	spin_unlock_irqrestore(&kxfer_penalty_lock, flags);
	return slow;
}

static bool kxfer_half_open(struct kxfer_session *s,
			    const struct sockaddr_storage *src)
{
	return s->s_role == KXFER_PEER_ACCEPTOR &&
	       READ_ONCE(s->s_state) == KXFER_PEER_CONNECTING &&
	       (!READ_ONCE(s->s_ctrl_up) || kxfer_auth_pending(s)) &&
	       !test_bit(KXFER_SE_FAIL, &s->s_events) &&
	       kxfer_same_host(&s->s_dst, src);
}

/*
 * A session whose other QPs never come, or whose handshake never ends,
 * holds its QPs and receive buffers until its deadline: bound how many
 * one address can leave so (max_half_open, 0 for no bound; one at a time
 * from an address that keeps failing handshakes, kxfer_penalty_add()).
 * Sessions failing already (a superseded incarnation's) do not count.
 * A connector claiming a name a key is bound to (@node) gets in all the
 * same: it will prove the key or fail, and the oldest half-open session
 * of its address makes room for it, so that a neighbour on its host
 * cannot keep a node out by holding the slots of their common address.
 * Caller holds kxfer_sess_mutex.
 *
 * Return: 0, or -EUSERS to refuse the session.
 */
static int kxfer_half_open_admit(const struct sockaddr_storage *src,
				 const char *node, struct kxfer_listener *l)
{
	unsigned int n = 0, max = READ_ONCE(kxfer_max_half_open);
	struct kxfer_session *s, *oldest = NULL;
	bool keyed = kxfer_auth_node_keyed(node);

	lockdep_assert_held(&kxfer_sess_mutex);
	if (!keyed && kxfer_penalized(src, max ?: 16))
		max = 1;
	if (!max)
		return 0;
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		if (!kxfer_half_open(s, src))
			continue;
		n++;
		if (!oldest || s->s_start_ns < oldest->s_start_ns)
			oldest = s;
	}
	if (n < max)
		return 0;
	if (!keyed || !oldest)
		return -EUSERS;
	pr_info_ratelimited("kxfer: listener: evicting half-open session %s of the address of a node with a key (%s)\n",
			    oldest->s_name, node);
	atomic_inc(&l->l_evicted);
	kxfer_session_fail(oldest, -EUSERS,
			   "evicted: its address's half-open sessions are full");
	return 0;
}

/*
 * The accepting session for (@node, the request's session id): the one
 * listed, or a new one, listed, if the source may have one more
 * half-open session (kxfer_half_open_admit()).  Takes kxfer_sess_mutex,
 * then the session's s_mutex, and drops the first.
 *
 * Return: the session, its s_mutex held; ERR_PTR(%-EUSERS or %-ENOMEM).
 */
static struct kxfer_session *
kxfer_session_accept_find(struct rdma_cm_id *id,
			  const struct kxfer_wire_conn *conn, const char *node,
			  struct kxfer_listener *l)
{
	u64 sid = le64_to_cpu(conn->wc_session_id);
	struct kxfer_session *s;
	int ret;

	mutex_lock(&kxfer_sess_mutex);
	s = kxfer_session_find_sid(node, sid);
	if (!s) {
		ret = kxfer_half_open_admit(&id->route.addr.dst_addr, node, l);
		if (ret) {
			mutex_unlock(&kxfer_sess_mutex);
			return ERR_PTR(ret);
		}
		s = kxfer_session_alloc(node, KXFER_PEER_ACCEPTOR,
					conn->wc_qp_count, kxfer_default_depth);
		if (!s) {
			mutex_unlock(&kxfer_sess_mutex);
			return ERR_PTR(-ENOMEM);
		}
		s->s_sid = sid;
		s->s_join = le16_to_cpu(conn->wc_flags) & KXFER_CONN_F_JOIN;
		s->s_incarnation = le32_to_cpu(conn->wc_incarnation);
		memcpy(s->s_remote_node, node, sizeof(s->s_remote_node));
		s->s_state = KXFER_PEER_CONNECTING;
		s->s_start_ns = kxfer_now_ns();
		memcpy(&s->s_dst, &id->route.addr.dst_addr, sizeof(s->s_dst));
		/* before its first QP is set up, as peer add sets it */
		s->s_poll = l->l_poll;
		kxfer_auth_accept_init(s, l);
		if (!kxfer_auth_pending(s))
			kxfer_sessions_supersede(s);
		list_add_tail(&s->s_node, &kxfer_sessions);
		kxfer_session_timer_in(s, kxfer_keepalive_ms,
				       kxfer_session_time_left(s, s->s_start_ns));
	}
	mutex_lock(&s->s_mutex);
	mutex_unlock(&kxfer_sess_mutex);
	return s;
}

/*
 * Accept @id's request for @qp, whose QP is set up: our private data,
 * then, under the id's handler mutex, its events go to @qp.  On an
 * error the id's context is the one it had.  Caller holds s_mutex.
 */
static int kxfer_session_accept_qp(struct kxfer_session *s,
				   struct kxfer_qp *qp, struct rdma_cm_id *id,
				   u32 remote_qpn)
{
	struct kxfer_wire_accept wa = {};
	struct rdma_conn_param param;
	void *pending;
	int ret;

	/*
	 * Version 1's 40 bytes, then wa_features (44 bytes in all), then,
	 * only for a session we authenticate, wa_nonce (76): an IB CM REP
	 * leaves 196 bytes to the consumer, MPA (iWARP) more.
	 */
	BUILD_BUG_ON(offsetof(struct kxfer_wire_accept, wa_features) != 40);
	BUILD_BUG_ON(offsetof(struct kxfer_wire_accept, wa_nonce) != 44);
	BUILD_BUG_ON(sizeof(wa) != 76);
	BUILD_BUG_ON(sizeof(wa) > 196);
	wa.wa_magic = cpu_to_le32(KXFER_WIRE_MAGIC);
	wa.wa_version = cpu_to_le16(KXFER_WIRE_VERSION);
	wa.wa_recv_credits = cpu_to_le16(KXFER_CTRL_RECVS);
	strscpy(wa.wa_node, kxfer_node_name, sizeof(wa.wa_node));
	kxfer_conn_param(s, &param, &wa, kxfer_auth_accept_fill(s, &wa));
	qp->q_remote_qpn = remote_qpn;
	rdma_lock_handler(id);
	/* Events for this id come to the QP from now on. */
	pending = id->context;
	id->context = qp;
	rdma_set_ack_timeout(id, kxfer_ack_timeout);
	ret = rdma_accept(id, &param);
	if (ret)
		id->context = pending;
	rdma_unlock_handler(id);
	return ret;
}

/**
 * kxfer_session_accept - take a QP of a session a listener received
 * @id: the new cm_id, in its CONNECT_REQUEST handler
 * @conn: its private data, already checked
 * @remote_qpn: the connecting QP's number
 * @l: the listener, whose authentication policy a new session takes
 *
 * Finds or makes the accepting session for (node, session id), builds
 * the QP and accepts.  Called from kxfer_accept_work, outside any
 * rdma_cm handler; takes kxfer_sess_mutex, s_mutex, then the id's
 * handler mutex (rdma_lock_handler()) to accept, the order in which a
 * connecting session takes them.
 *
 * Return: 0 (the id now belongs to the session) or a negative errno
 * (the caller refuses the request and destroys the id): %-EUSERS when
 * the source has as many half-open sessions as it may
 * (kxfer_half_open_admit()).
 */
int kxfer_session_accept(struct rdma_cm_id *id,
			 const struct kxfer_wire_conn *conn, u32 remote_qpn,
			 struct kxfer_listener *l)
{
	unsigned int idx = conn->wc_qp_index;
	struct kxfer_session *s;
	struct kxfer_qp *qp;
	char node[KXFER_NAME_MAX];
	int ret;

	memcpy(node, conn->wc_node, sizeof(node));
	s = kxfer_session_accept_find(id, conn, node, l);
	if (IS_ERR(s))
		return PTR_ERR(s);

	ret = -EBUSY;
	if (s->s_state != KXFER_PEER_CONNECTING ||
	    conn->wc_qp_count != s->s_nqps || s->s_qps[idx].q_id ||
	    s->s_join != !!(le16_to_cpu(conn->wc_flags) & KXFER_CONN_F_JOIN))
		goto out_unlock;

	qp = &s->s_qps[idx];
	qp->q_kind = KXFER_CM_QP;
	qp->q_sess = s;
	qp->q_index = idx;
	qp->q_id = id;
	ret = kxfer_qp_setup(s, qp);
	if (ret)
		goto out_undo;
	if (idx == 0) {
		s->s_credits = le16_to_cpu(conn->wc_recv_credits);
		s->s_credits_max = s->s_credits;
	}
	ret = kxfer_session_accept_qp(s, qp, id, remote_qpn);
	if (ret)
		goto out_undo;
	mutex_unlock(&s->s_mutex);
	return 0;

out_undo:
	/* The caller refuses the request and destroys the id. */
	if (id->qp)
		rdma_destroy_qp(id);
	/* Nothing was posted on its send CQ: nobody may poll it now. */
	kxfer_session_poll_unhook(s, qp);
	if (qp->q_cq)
		ib_free_cq(qp->q_cq);
	if (qp->q_rcq)
		ib_free_cq(qp->q_rcq);
	qp->q_cq = NULL;
	qp->q_rcq = NULL;
	qp->q_id = NULL;
	qp->q_remote_qpn = 0;
	kxfer_session_fail(s, ret, "cannot accept a QP");
out_unlock:
	mutex_unlock(&s->s_mutex);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Peers: the connecting side                                              */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_peer_create - add a peer and start connecting to it
 * @name: unique among connecting sessions
 * @dst: the remote listener's address and port
 * @nqps: QPs, 1..KXFER_MAX_QPS
 * @depth: send queue depth per QP, or 0 for the default
 * @key: the key the session proves (kxfer_key_get()), or %NULL; the
 *	session takes the reference, or drops it on failure
 * @poll: its send CQs are polled by its users (poll.c)
 * @extack: for the reason of a refusal
 *
 * Return: 0, %-EEXIST, %-EINVAL or %-ENOMEM.  May sleep.
 */
int kxfer_peer_create(const char *name, const struct sockaddr_storage *dst,
		      unsigned int nqps, unsigned int depth,
		      struct kxfer_key *key, bool poll,
		      struct netlink_ext_ack *extack)
{
	struct kxfer_session *s, *it;

	if (!nqps || nqps > KXFER_MAX_QPS) {
		kxfer_key_put(key);
		NL_SET_ERR_MSG(extack, "qps must be 1 to 16");
		return -EINVAL;
	}
	s = kxfer_session_alloc(name, KXFER_PEER_CONNECTOR, nqps,
				depth ?: kxfer_default_depth);
	if (!s) {
		kxfer_key_put(key);
		return -ENOMEM;
	}
	s->s_auth.sa_key = key;
	s->s_poll = poll;
	memcpy(&s->s_dst, dst, sizeof(s->s_dst));

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(it, &kxfer_sessions, s_node) {
		if (it->s_role == KXFER_PEER_CONNECTOR &&
		    !strcmp(it->s_name, name)) {
			mutex_unlock(&kxfer_sess_mutex);
			kxfer_session_put(s);
			NL_SET_ERR_MSG(extack, "peer already exists");
			return -EEXIST;
		}
	}
	list_add_tail(&s->s_node, &kxfer_sessions);
	mutex_lock(&s->s_mutex);
	kxfer_session_connect(s);
	mutex_unlock(&s->s_mutex);
	mutex_unlock(&kxfer_sess_mutex);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Sessions on demand (ondemand.c holds the policy)                        */
/* ---------------------------------------------------------------------- */

static u16 kxfer_sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/*
 * A session a request on demand may use: one to @dst's address and port,
 * else one the node there opened to us, the best by rank; never one that
 * ends.  Caller holds kxfer_sess_mutex.
 */
static struct kxfer_session *
kxfer_session_by_dst(const struct sockaddr_storage *dst)
{
	struct kxfer_session *s, *found = NULL;

	lockdep_assert_held(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		if (READ_ONCE(s->s_idle_ended) ||
		    !kxfer_same_host(&s->s_dst, dst))
			continue;
		if (s->s_role == KXFER_PEER_CONNECTOR &&
		    kxfer_sa_port(&s->s_dst) != kxfer_sa_port(dst))
			continue;
		if (!found || kxfer_session_rank(s) > kxfer_session_rank(found))
			found = s;
	}
	return found;
}

/*
 * The name of a session made on demand: its address (and port, if not
 * the default), else, if that is too long or taken, a number.  Caller
 * holds kxfer_sess_mutex.
 */
static void kxfer_on_demand_name(struct kxfer_session *s)
{
	const struct sockaddr_in6 *sin6 = (const void *)&s->s_dst;
	const struct sockaddr_in *sin = (const void *)&s->s_dst;
	u16 port = kxfer_sa_port(&s->s_dst);
	char name[64];

	if (s->s_dst.ss_family == AF_INET && port == KXFER_PORT)
		snprintf(name, sizeof(name), "%pI4", &sin->sin_addr);
	else if (s->s_dst.ss_family == AF_INET)
		snprintf(name, sizeof(name), "%pI4:%u", &sin->sin_addr, port);
	else if (port == KXFER_PORT)
		snprintf(name, sizeof(name), "%pI6c", &sin6->sin6_addr);
	else
		snprintf(name, sizeof(name), "[%pI6c]:%u", &sin6->sin6_addr,
			 port);
	if (strlen(name) >= sizeof(s->s_name) || kxfer_session_by_name(name))
		snprintf(name, sizeof(name), "on-demand-%u", s->s_id);
	strscpy(s->s_name, name, sizeof(s->s_name));
}

/*
 * One of @dst's sessions that is not ending, held for the caller: a
 * reference and a use (s_handles), so that its idle timer cannot end it
 * before the caller's handle names it.  Caller holds kxfer_sess_mutex.
 */
static struct kxfer_session *
kxfer_session_on_demand_find(const struct sockaddr_storage *dst)
{
	struct kxfer_session *s = kxfer_session_by_dst(dst);

	if (!s)
		return NULL;
	mutex_lock(&s->s_mutex);
	if (s->s_idle_ended) {
		mutex_unlock(&s->s_mutex);
		return NULL;
	}
	atomic_inc(&s->s_handles);
	WRITE_ONCE(s->s_idle_since_ns, 0);
	mutex_unlock(&s->s_mutex);
	kxfer_session_get(s);
	return s;
}

/* How many sessions made on demand exist.  Caller holds kxfer_sess_mutex. */
static unsigned int kxfer_sessions_on_demand(void)
{
	struct kxfer_session *s;
	unsigned int n = 0;

	list_for_each_entry(s, &kxfer_sessions, s_node)
		n += s->s_ondemand && !READ_ONCE(s->s_idle_ended);
	return n;
}

/**
 * kxfer_session_on_demand - a session to an address, made if need be
 * @dst: the remote listener's address and port
 * @nqps: QPs, 1..KXFER_MAX_QPS, of a session made now
 * @key: the key a session made now proves (a reference it takes; it is
 *	dropped otherwise), or %NULL
 * @idle_s: seconds unused after which a session made now ends
 * @made: out, whether it was made now
 *
 * The session is connected as peer add would (keepalive, reconnects,
 * @key proven); the call does not wait for it to come up.
 *
 * Return: the session, with a reference and a use (s_handles) that the
 * caller gives back with kxfer_session_on_demand_done();
 * ERR_PTR(%-ENOSPC) when KXFER_CONNECT_MAX sessions made on demand
 * exist, or %-ENOMEM.  May sleep.
 */
struct kxfer_session *kxfer_session_on_demand(const struct sockaddr_storage *dst,
					      unsigned int nqps,
					      struct kxfer_key *key,
					      u32 idle_s, bool *made)
{
	struct kxfer_session *s;

	*made = false;
	mutex_lock(&kxfer_sess_mutex);
	s = kxfer_session_on_demand_find(dst);
	if (s)
		goto out_key;
	s = ERR_PTR(-ENOSPC);
	if (kxfer_sessions_on_demand() >= KXFER_CONNECT_MAX)
		goto out_key;
	s = kxfer_session_alloc("", KXFER_PEER_CONNECTOR, nqps,
				kxfer_default_depth);
	if (!s) {
		s = ERR_PTR(-ENOMEM);
		goto out_key;
	}
	s->s_auth.sa_key = key;
	s->s_ondemand = true;
	s->s_idle_s = idle_s;
	memcpy(&s->s_dst, dst, sizeof(s->s_dst));
	kxfer_on_demand_name(s);
	atomic_inc(&s->s_handles);
	list_add_tail(&s->s_node, &kxfer_sessions);
	kxfer_session_get(s);
	mutex_lock(&s->s_mutex);
	kxfer_session_connect(s);
	mutex_unlock(&s->s_mutex);
	mutex_unlock(&kxfer_sess_mutex);
	kxfer_info("peer %s: made on demand\n", s->s_name);
	*made = true;
	return s;

out_key:
	mutex_unlock(&kxfer_sess_mutex);
	kxfer_key_put(key);
	return s;
}

/**
 * kxfer_session_on_demand_done - give back kxfer_session_on_demand()'s use
 * @s: the session
 * @made: it was made by that call
 * @used: a handle of the caller's names it now
 *
 * A session made for a call that then failed ends at once: the call
 * changes nothing.  Drops the caller's reference.  May sleep.
 */
void kxfer_session_on_demand_done(struct kxfer_session *s, bool made,
				  bool used)
{
	mutex_lock(&s->s_mutex);
	if (atomic_dec_and_test(&s->s_handles) && made && !used &&
	    !s->s_idle_ended && s->s_state != KXFER_PEER_CLOSING) {
		kxfer_info("peer %s: made on demand for nothing: ended\n",
			   s->s_name);
		kxfer_session_idle_stop(s);
	}
	mutex_unlock(&s->s_mutex);
	kxfer_session_put(s);
}

/**
 * kxfer_peer_create_rails - add a peer over several rails
 * @name: unique among connecting sessions
 * @dsts: the remote listener's address and port on each rail, 2 or more
 * @ndst: how many, at most KXFER_MAX_RAILS
 * @nqps: QPs per rail, 1..KXFER_MAX_QPS
 * @depth: send queue depth per QP, or 0 for the default
 * @keys: the key every rail proves when it connects first, or %NULL
 *	(@ndst references, kxfer_key_get(); taken, or dropped on failure)
 * @poll: its send CQs are polled by its users (poll.c)
 * @extack: for the reason of a refusal
 *
 * One session per rail, each its own device, QPs and PD, in one logical
 * peer (rail.c); the first rail is the peer's session (handles, peer
 * show), the others follow it.
 *
 * Return: 0, %-EEXIST, %-EINVAL, %-EOPNOTSUPP or %-ENOMEM.  May sleep.
 */
int kxfer_peer_create_rails(const char *name,
			    const struct sockaddr_storage *dsts,
			    unsigned int ndst, unsigned int nqps,
			    unsigned int depth, struct kxfer_key **keys,
			    bool poll, struct netlink_ext_ack *extack)
{
	struct kxfer_session *rails[KXFER_MAX_RAILS] = {}, *it;
	struct kxfer_rails *r = NULL;
	unsigned int i;
	int ret;

	ret = -EINVAL;
	if (!nqps || nqps > KXFER_MAX_QPS) {
		NL_SET_ERR_MSG(extack, "qps must be 1 to 16");
		goto out_keys;
	}
	if (ndst < 2 || ndst > KXFER_MAX_RAILS) {
		NL_SET_ERR_MSG(extack, "a peer has 1 to 8 rails");
		goto out_keys;
	}
	ret = -EOPNOTSUPP;
	if (!(READ_ONCE(kxfer_wire_features) & KXFER_WIRE_F_RAILS)) {
		NL_SET_ERR_MSG(extack, "rails are off (module parameter wire_features)");
		goto out_keys;
	}
	ret = -ENOMEM;
	r = kxfer_rails_alloc(KXFER_PEER_CONNECTOR, name, ndst);
	if (!r)
		goto out_keys;
	for (i = 0; i < ndst; i++) {
		rails[i] = kxfer_session_alloc(name, KXFER_PEER_CONNECTOR, nqps,
					       depth ?: kxfer_default_depth);
		if (!rails[i])
			goto out_free;
		rails[i]->s_auth.sa_key = keys ? keys[i] : NULL;
		if (keys)
			keys[i] = NULL;
		rails[i]->s_poll = poll;
		memcpy(&rails[i]->s_dst, &dsts[i], sizeof(rails[i]->s_dst));
		refcount_inc(&r->r_ref);
		rails[i]->s_rails = r;
		rails[i]->s_rail = i;
		r->r_sess[i] = rails[i];
	}
	r->r_id = rails[0]->s_id;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(it, &kxfer_sessions, s_node) {
		if (it->s_role == KXFER_PEER_CONNECTOR &&
		    !strcmp(it->s_name, name)) {
			mutex_unlock(&kxfer_sess_mutex);
			NL_SET_ERR_MSG(extack, "peer already exists");
			ret = -EEXIST;
			goto out_free;
		}
	}
	for (i = 0; i < ndst; i++) {
		list_add_tail(&rails[i]->s_node, &kxfer_sessions);
		/* The first rail connects first; the others follow its token. */
		mutex_lock(&rails[i]->s_mutex);
		if (kxfer_rails_may_connect(rails[i]))
			kxfer_session_connect(rails[i]);
		mutex_unlock(&rails[i]->s_mutex);
	}
	mutex_unlock(&kxfer_sess_mutex);
	kxfer_rails_put(r);
	return 0;

out_free:
	for (i = 0; i < ndst; i++)
		if (rails[i])
			kxfer_session_put(rails[i]);
	kxfer_rails_put(r);
out_keys:
	for (i = 0; keys && i < ndst; i++)
		kxfer_key_put(keys[i]);
	return ret;
}

/**
 * kxfer_peer_delete - disconnect and forget a peer
 * @name: a connecting session's name, or an accepting session's
 * @extack: for the reason of a refusal
 *
 * A peer over rails goes with all of them.
 *
 * Return: 0 or %-ENOENT.  May sleep: waits for the teardown.
 */
int kxfer_peer_delete(const char *name, struct netlink_ext_ack *extack)
{
	struct kxfer_session *found, *it, *tmp;
	LIST_HEAD(victims);

	mutex_lock(&kxfer_sess_mutex);
	found = kxfer_session_by_name(name);
	if (found && found->s_rails &&
	    found->s_role == KXFER_PEER_CONNECTOR) {
		list_for_each_entry_safe(it, tmp, &kxfer_sessions, s_node)
			if (it->s_rails == found->s_rails)
				list_move_tail(&it->s_node, &victims);
	} else if (found) {
		list_move_tail(&found->s_node, &victims);
	}
	mutex_unlock(&kxfer_sess_mutex);
	if (!found) {
		NL_SET_ERR_MSG(extack, "no such peer");
		return -ENOENT;
	}
	list_for_each_entry_safe(it, tmp, &victims, s_node) {
		list_del_init(&it->s_node);
		kxfer_session_stop(it);
		kxfer_session_put(it);
	}
	return 0;
}

/* Take every session off the list for the caller to stop. */
static void kxfer_sessions_stop_if(bool (*match)(struct kxfer_session *,
						 void *), void *arg)
{
	struct kxfer_session *s, *tmp;
	LIST_HEAD(victims);

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry_safe(s, tmp, &kxfer_sessions, s_node)
		if (match(s, arg))
			list_move_tail(&s->s_node, &victims);
	mutex_unlock(&kxfer_sess_mutex);

	list_for_each_entry_safe(s, tmp, &victims, s_node) {
		list_del_init(&s->s_node);
		kxfer_session_stop(s);
		kxfer_session_put(s);
	}
}

/**
 * kxfer_sessions_device_removed - end every session on a departing device
 * @kd: the device, KXFER_DEV_REMOVING set
 *
 * Accepting sessions are dropped; connecting sessions are torn down and
 * retry with backoff, so they come back when the device does.
 */
void kxfer_sessions_device_removed(struct kxfer_device *kd)
{
	struct kxfer_session *s;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		mutex_lock(&s->s_mutex);
		if (s->s_dev == kd && s->s_state != KXFER_PEER_CLOSING) {
			kxfer_session_fail(s, -ENODEV, "device removed");
			kxfer_session_down(s);
		}
		mutex_unlock(&s->s_mutex);
	}
	mutex_unlock(&kxfer_sess_mutex);
}

/**
 * kxfer_sessions_exports_changed - register and advertise new exports
 *
 * Every session with a live control channel looks again.  May sleep.
 */
void kxfer_sessions_exports_changed(void)
{
	struct kxfer_session *s;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		set_bit(KXFER_SE_REGS, &s->s_events);
		queue_work(kxfer_wq, &s->s_work);
	}
	mutex_unlock(&kxfer_sess_mutex);
}

/**
 * kxfer_sessions_export_removed - withdraw an export from every session
 * @exp: the export, already off kxfer_exports; the caller holds it
 * @drain: let peers that speak KXFER_WIRE_F_DRAIN finish their jobs first
 *
 * On a session whose peer drains (with @drain), the peer is told
 * (EXPORT_WITHDRAW) and the registration stays, holding a reference to
 * @exp, until the peer answers or the session ends
 * (kxfer_reg_drain_start()).  On the others its memory regions are
 * invalidated (LOCAL_INV, waited for) and the peer is told, before this
 * returns.  A session that has it nowhere but withholds exports counts
 * them again.  May sleep.
 */
void kxfer_sessions_export_removed(struct kxfer_export *exp, bool drain)
{
	struct kxfer_msg_export_del del = {};
	struct kxfer_session *s;
	struct kxfer_reg *rg;
	bool had;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		mutex_lock(&s->s_mutex);
		had = false;
		list_for_each_entry(rg, &s->s_regs, rg_node) {
			if (rg->rg_export != exp || rg->rg_draining)
				continue;
			had = true;
			if (drain && kxfer_reg_drain_start(s, rg))
				break;
			list_del(&rg->rg_node);
			kxfer_reg_invalidate(s, rg);
			strscpy(del.md_name, exp->ke_name, sizeof(del.md_name));
			del.md_gen = cpu_to_le64(rg->rg_gen);
			kvfree(rg);
			if (s->s_ctrl_up) {
				kxfer_ctrl_send(s, KXFER_MSG_EXPORT_DEL,
						del.md_name,
						sizeof(del) - sizeof(del.md_hdr));
				kxfer_ctrl_flush(s);
			}
			break;
		}
		/* Perhaps one it withheld: kxfer_regs_sync() counts again. */
		if (!had && s->s_exports_withheld) {
			set_bit(KXFER_SE_REGS, &s->s_events);
			queue_work(kxfer_wq, &s->s_work);
		}
		mutex_unlock(&s->s_mutex);
	}
	mutex_unlock(&kxfer_sess_mutex);
}

/**
 * kxfer_sessions_pool_revoked - invalidate what still drains of a pool
 * @pool: a pool whose memory its exporter took back (upool.c)
 *
 * Exports of @pool withdrawn earlier may still wait for a peer's answer,
 * their keys valid: they die now.  The registrations stay, without MRs,
 * until the answers come or the sessions end, so that an answer is still
 * one to a withdrawal this side asked for.  May sleep.
 */
void kxfer_sessions_pool_revoked(struct kxfer_pool *pool)
{
	struct kxfer_session *s;
	struct kxfer_reg *rg;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		mutex_lock(&s->s_mutex);
		list_for_each_entry(rg, &s->s_regs, rg_node)
			if (rg->rg_draining && rg->rg_pool == pool)
				kxfer_reg_invalidate(s, rg);
		mutex_unlock(&s->s_mutex);
	}
	mutex_unlock(&kxfer_sess_mutex);
}

/**
 * kxfer_sessions_init - the workqueue and the node name
 *
 * Return: 0 or %-ENOMEM.
 */
int kxfer_sessions_init(void)
{
	char *p;

	if (!kxfer_node_name[0])
		strscpy(kxfer_node_name, utsname()->nodename,
			sizeof(kxfer_node_name));
	/* Keep to the characters a name may hold. */
	for (p = kxfer_node_name; *p; p++)
		if (!kxfer_name_char(*p))
			*p = '-';
	if (!kxfer_node_name[0])
		strscpy(kxfer_node_name, "kxfer", sizeof(kxfer_node_name));
	kxfer_incarnation = get_random_u32() ?: 1;

	kxfer_wq = alloc_workqueue("kxfer", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!kxfer_wq)
		return -ENOMEM;
	kxfer_reap_wq = alloc_workqueue("kxfer_reap", WQ_UNBOUND, 0);
	if (!kxfer_reap_wq)
		goto out_wq;
	/* Bound to a CPU: a QP's posts run on its home CPU (post.c). */
	kxfer_post_wq = alloc_workqueue("kxfer_post",
					WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!kxfer_post_wq)
		goto out_reap_wq;
	return 0;

out_reap_wq:
	destroy_workqueue(kxfer_reap_wq);
out_wq:
	destroy_workqueue(kxfer_wq);
	return -ENOMEM;
}

static bool kxfer_session_any(struct kxfer_session *s, void *arg)
{
	return true;
}

/**
 * kxfer_sessions_stop_all - stop and free every session (unload)
 */
void kxfer_sessions_stop_all(void)
{
	kxfer_sessions_stop_if(kxfer_session_any, NULL);
}

/**
 * kxfer_sessions_exit - destroy the workqueues; sessions are gone
 *
 * Waits for the reaper to destroy the last cm_ids.
 */
void kxfer_sessions_exit(void)
{
	/* Held cm_ids go now, whatever their ports. */
	mutex_lock(&kxfer_reap_mutex);
	kxfer_reap_exiting = true;
	mutex_unlock(&kxfer_reap_mutex);
	kxfer_cm_reap_kick();
	flush_delayed_work(&kxfer_reap_held_dwork);
	destroy_workqueue(kxfer_post_wq);
	destroy_workqueue(kxfer_wq);
	destroy_workqueue(kxfer_reap_wq);
}
