// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: polled send completion queues (peer add's and listen's "cq poll").
 *
 * A polled session's QPs take their send completions (data WRs, control
 * sends, registrations) on IB_POLL_DIRECT CQs that no interrupt or
 * softirq polls: the files with jobs in flight on the session poll them
 * from their own SUBMIT and REAP, as nvme-rdma's poll queues are polled
 * by the submitter, so that a completion reaches the reaper without a
 * softirq or a ksoftirqd wake-up in between.  Receives keep an
 * interrupt-driven CQ of their own: the control channel, and with it
 * keepalive, never waits for a user.  Nor does anything else: a delayed
 * work polls a tick after anything is posted, and again every tick while
 * something is outstanding, for the backlog, the control channel and
 * files that do not call in.  A REAP that sleeps does it in the hybrid
 * way of event.c: half the wait it learnt, a spin, then slices of sleep
 * that double from 16 us to a tick, polling after each.
 *
 * One poller at a time, as ib_process_cq_direct() requires: users and
 * the work try s_poll_mutex and go on if someone else has it (that one
 * reaps for everybody).  q_pcq names the CQs that may be polled; it is
 * set once a QP exists and cleared, under the mutex, once teardown has
 * drained it (polling the CQ itself, under the mutex).
 */
#include "kxfer.h"
#include "job.h"

/* Completions taken per CQ by one poll: a bound on the time in it. */
#define KXFER_POLL_BUDGET	64

/* Poll every polled CQ of the session once.  Caller holds s_poll_mutex. */
static int kxfer_poll_cqs(struct kxfer_session *s)
{
	unsigned int i;
	int n = 0;

	lockdep_assert_held(&s->s_poll_mutex);
	/*
	 * As the CQ's softirq would: what the handlers post makes the
	 * provider defer work (rxe's tasklets on 6.1), which then runs
	 * here, at local_bh_enable().
	 */
	local_bh_disable();
	for (i = 0; i < s->s_nqps; i++) {
		struct ib_cq *cq = s->s_qps[i].q_pcq;

		if (cq)
			n += ib_process_cq_direct(cq, KXFER_POLL_BUDGET);
	}
	local_bh_enable();
	return n;
}

/*
 * Something posted may still complete: data WRs or control sends out on
 * a QP that may be polled.  Racy reads: a post after a wrong "no" arms
 * the work again.
 */
static bool kxfer_poll_outstanding(struct kxfer_session *s)
{
	unsigned int i;

	if (READ_ONCE(s->s_ctrl_sending))
		return true;
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (READ_ONCE(qp->q_pcq) &&
		    (READ_ONCE(qp->q_sq_free) != s->s_depth ||
		     !list_empty_careful(&qp->q_quiet)))
			return true;
	}
	return false;
}

static void kxfer_poll_work(struct work_struct *work)
{
	struct kxfer_session *s = container_of(to_delayed_work(work),
					       struct kxfer_session,
					       s_poll_work);
	int n = -1;

	if (mutex_trylock(&s->s_poll_mutex)) {
		n = kxfer_poll_cqs(s);
		mutex_unlock(&s->s_poll_mutex);
		if (n > 0)
			atomic64_add(n, &s->s_stats.polled_work);
	}
	/* Busy elsewhere, or reaped something: more may come. */
	if (n || kxfer_poll_outstanding(s))
		kxfer_session_poll_arm(s);
}

/**
 * kxfer_session_poll_init - set up a session's polling
 * @s: a new session; s_poll is set by its maker (peer add, or the
 *	listener that accepted it) before its first QP is set up
 */
void kxfer_session_poll_init(struct kxfer_session *s)
{
	mutex_init(&s->s_poll_mutex);
	INIT_DELAYED_WORK(&s->s_poll_work, kxfer_poll_work);
}

/**
 * kxfer_session_poll_stop - no poll work runs after this
 * @s: the session, torn down for good
 */
void kxfer_session_poll_stop(struct kxfer_session *s)
{
	cancel_delayed_work_sync(&s->s_poll_work);
}

/**
 * kxfer_session_poll_arm - have the work poll a tick from now
 * @s: the session; nothing happens unless it is polled
 *
 * Called after anything is posted on its QPs.  Any context.
 */
void kxfer_session_poll_arm(struct kxfer_session *s)
{
	if (s->s_poll)
		queue_delayed_work(kxfer_wq, &s->s_poll_work, 1);
}

/**
 * kxfer_session_poll - reap a polled session's send completions
 * @s: the session
 *
 * Return: the completions handled; 0 as well when another thread is
 * polling it (which reaps them).  Process context.
 */
int kxfer_session_poll(struct kxfer_session *s)
{
	int n;

	if (!s->s_poll || !mutex_trylock(&s->s_poll_mutex))
		return 0;
	n = kxfer_poll_cqs(s);
	mutex_unlock(&s->s_poll_mutex);
	if (n)
		atomic64_add(n, &s->s_stats.polled);
	return n;
}

/**
 * kxfer_session_poll_enable - let a new QP's send CQ be polled
 * @s: the session
 * @qp: its QP, just created
 *
 * Caller holds s_mutex.
 */
void kxfer_session_poll_enable(struct kxfer_session *s, struct kxfer_qp *qp)
{
	lockdep_assert_held(&s->s_mutex);
	if (!s->s_poll)
		return;
	mutex_lock(&s->s_poll_mutex);
	WRITE_ONCE(qp->q_pcq, qp->q_cq);
	mutex_unlock(&s->s_poll_mutex);
}

/**
 * kxfer_session_poll_unhook - let nobody poll a QP's send CQ again
 * @s: the session
 * @qp: its QP, whose CQ is about to be freed; destroyed, or never used
 *
 * What is left in the CQ is reaped first.  Caller holds s_mutex.
 */
void kxfer_session_poll_unhook(struct kxfer_session *s, struct kxfer_qp *qp)
{
	lockdep_assert_held(&s->s_mutex);
	if (!s->s_poll)
		return;
	mutex_lock(&s->s_poll_mutex);
	if (qp->q_pcq)
		ib_process_cq_direct(qp->q_pcq, -1);
	WRITE_ONCE(qp->q_pcq, NULL);
	mutex_unlock(&s->s_poll_mutex);
}

struct kxfer_poll_drain {
	struct ib_cqe		cqe;
	struct completion	done;
};

static void kxfer_poll_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_poll_drain *d = container_of(wc->wr_cqe,
						  struct kxfer_poll_drain, cqe);

	complete(&d->done);
}

/*
 * ib_drain_sq() for a polled send CQ, as its own version does (the QP to
 * the error state, a marker WR behind everything posted, wait for its
 * flush), but polling every few tens of microseconds: the core's waits
 * 100 ms before it polls a direct CQ, for each QP, while the session's
 * locks are held.  Caller holds s_poll_mutex.
 */
static void kxfer_poll_drain_sq(struct kxfer_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp *ibqp = qp->q_id->qp;
	struct kxfer_poll_drain d;
	struct ib_rdma_wr swr = {
		.wr = {
			.wr_cqe = &d.cqe,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	unsigned long warn = jiffies + 10 * HZ;
	int ret;

	d.cqe.done = kxfer_poll_drain_done;
	init_completion(&d.done);
	ret = ib_modify_qp(ibqp, &attr, IB_QP_STATE);
	if (!ret)
		ret = ib_post_send(ibqp, &swr.wr, NULL);
	if (WARN_ONCE(ret, "kxfer: cannot drain a polled QP: %d\n", ret))
		return;
	while (!try_wait_for_completion(&d.done)) {
		ib_process_cq_direct(qp->q_cq, -1);
		if (try_wait_for_completion(&d.done))
			break;
		/* as the core's drain, which waits as long as it takes */
		if (time_after(jiffies, warn)) {
			pr_warn_ratelimited("kxfer: peer %s: QP %u is slow to drain\n",
					    qp->q_sess->s_name, qp->q_index);
			warn = jiffies + 10 * HZ;
		}
		usleep_range(20, 100);
	}
}

/**
 * kxfer_session_poll_drain - drain QPs with nobody else polling
 * @s: the session
 * @qps: bit i: drain s_qps[i]
 * @disable: then let nobody poll any of the session's CQs again
 *
 * A polled session's send queues are drained polling their CQs here;
 * users and the work find the mutex taken and go on.  With @disable,
 * whatever is left in those CQs is reaped before they are unhooked, so
 * that no completion is freed with its CQ.  Caller holds s_mutex.
 */
void kxfer_session_poll_drain(struct kxfer_session *s, unsigned long qps,
			      bool disable)
{
	unsigned int i;

	lockdep_assert_held(&s->s_mutex);
	if (!s->s_poll) {
		for_each_set_bit(i, &qps, KXFER_MAX_QPS)
			ib_drain_qp(s->s_qps[i].q_id->qp);
		return;
	}
	mutex_lock(&s->s_poll_mutex);
	for_each_set_bit(i, &qps, KXFER_MAX_QPS) {
		kxfer_poll_drain_sq(&s->s_qps[i]);
		/* the receive CQ is interrupt-driven: the core's drain */
		ib_drain_rq(s->s_qps[i].q_id->qp);
	}
	mutex_unlock(&s->s_poll_mutex);
	if (disable)
		for (i = 0; i < KXFER_MAX_QPS; i++)
			kxfer_session_poll_unhook(s, &s->s_qps[i]);
}

/**
 * kxfer_session_poll_wait - wait for a completion a polled CQ may hold
 * @s: the session
 * @done: completed by the handler of the work request waited for
 * @tmo: in jiffies
 *
 * A polled session's is polled for every few tens of microseconds (a
 * registration takes microseconds; a tick would be milliseconds each).
 * Return: true if @done completed in time.  May sleep.
 */
bool kxfer_session_poll_wait(struct kxfer_session *s, struct completion *done,
			     unsigned long tmo)
{
	unsigned long end = jiffies + tmo;

	if (!s->s_poll)
		return wait_for_completion_timeout(done, tmo);
	for (;;) {
		kxfer_session_poll(s);
		if (try_wait_for_completion(done))
			return true;
		if (time_after(jiffies, end))
			return false;
		usleep_range(20, 100);
	}
}

/*
 * The polled sessions the file has jobs on, the first @max of them, into
 * @ss (may be NULL: then none is referenced), each referenced; their
 * number.  A gate may go once its jobs ended (fence.c): not its session
 * while we poll it.
 */
static unsigned int kxfer_file_polled(struct kxfer_file *kf,
				      struct kxfer_session **ss,
				      unsigned int max)
{
	struct kxfer_gate *g;
	unsigned long flags;
	unsigned int n = 0;

	if (!READ_ONCE(kf->kf_poll))
		return 0;
	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node) {
		if (!g->g_sess->s_poll || !g->g_inflight)
			continue;
		if (ss) {
			ss[n] = g->g_sess;
			kxfer_session_get(ss[n]);
		}
		if (++n == max)
			break;
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	return n;
}

/**
 * kxfer_file_polled_inflight - whether the file has jobs on a polled session
 * @kf: the file
 */
bool kxfer_file_polled_inflight(struct kxfer_file *kf)
{
	return kxfer_file_polled(kf, NULL, 1);
}

/**
 * kxfer_file_poll_cqs - poll the polled sessions a file has jobs on
 * @kf: the file
 *
 * Return: the completions handled.  Process context.
 */
int kxfer_file_poll_cqs(struct kxfer_file *kf)
{
	struct kxfer_session *ss[KXFER_FILE_POLL_MAX];
	unsigned int i, n = kxfer_file_polled(kf, ss, ARRAY_SIZE(ss));
	int done = 0;

	for (i = 0; i < n; i++) {
		done += kxfer_session_poll(ss[i]);
		kxfer_session_put(ss[i]);
	}
	return done;
}
