// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: posting a job's work requests and completing the job.
 *
 * A job's parts go to their QPs' send queues in batches (kxfer_qp_kick:
 * one chain, one doorbell, for every part that fits), wait on a QP's backlog when the queue or the
 * bytes in flight are full, complete batch by batch in the CQ handlers,
 * and end with exactly one event to the file (kxfer_job_post).  Session
 * teardown stops posting, drains the QPs and fails what never got posted
 * (kxfer_qps_data_stop, kxfer_qps_data_fail).
 */
#include <linux/slab.h>
#include <linux/llist.h>
#include <linux/moduleparam.h>

#include "kxfer.h"
#include "job.h"
#include "trace.h"

static LLIST_HEAD(kxfer_job_free_list);

/*
 * Where a multi-job SUBMIT's chains are posted.  A software provider does
 * the NIC's work on the CPU that posts: rxe, while its QP tasks were
 * tasklets (before Linux 6.4), runs a QP's requester, and on loopback the
 * responder and completer, as softirqs of the posting CPU, so that every
 * QP of a session shares the submitter's CPU while the others idle.  With
 * spreading, each QP has a home CPU (spread as nvme-rdma spreads its
 * queues) and a SUBMIT's chain for it is posted there, by a work item
 * when the submitter runs elsewhere.  A SUBMIT of one job always posts
 * at once, from the submitter: it is the latency path.  A NIC that takes
 * a post as a doorbell gains nothing but a wake-up from it.
 */
static int kxfer_post_spread = -1;

static int kxfer_post_spread_set(const char *val, const struct kernel_param *kp)
{
	int v, ret = kstrtoint(val, 0, &v);

	if (ret)
		return ret;
	if (v < -1 || v > 1)
		return -EINVAL;
	WRITE_ONCE(kxfer_post_spread, v);
	return 0;
}

static const struct kernel_param_ops kxfer_post_spread_ops = {
	.set = kxfer_post_spread_set,
	.get = param_get_int,
};
module_param_cb(post_spread, &kxfer_post_spread_ops, &kxfer_post_spread, 0644);
MODULE_PARM_DESC(post_spread,
		 "Post a multi-job SUBMIT's work requests on each QP's home CPU: -1 where the provider works on the posting CPU (rxe before Linux 6.4; default), 0 never, 1 always");

static void kxfer_job_free_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kxfer_job_free_list);
	struct kxfer_task *job, *tmp;

	llist_for_each_entry_safe(job, tmp, list, j_free) {
		kxfer_rails_job_free(job);
		if (job->j_pool)
			kxfer_pool_put(job->j_pool);
		kfree(job->j_msg);
		if (job->j_sess)
			kxfer_session_put(job->j_sess);
		atomic_dec(&job->j_file->kf_freeing);
		kxfer_file_put(job->j_file);
		kvfree(job);
	}
}

static DECLARE_WORK(kxfer_job_free, kxfer_job_free_work);

/*
 * Free an ended job where it ended, in whatever context that is, when none
 * of its references is the last one (the releases of pools, sessions and
 * files may sleep): most jobs, which then cost no kworker wake-up.
 * Returns false, with what is left to drop still in the job (j_pool,
 * j_sess set), for the free work to finish.
 */
static bool kxfer_job_free_now(struct kxfer_task *job)
{
	if (is_vmalloc_addr(job) || is_vmalloc_addr(job->j_segs))
		return false;
	if (job->j_pool) {
		if (!refcount_dec_not_one(&job->j_pool->kp_ref.refcount))
			return false;
		job->j_pool = NULL;
	}
	if (!refcount_dec_not_one(&job->j_sess->s_ref.refcount))
		return false;
	job->j_sess = NULL;
	/* After the pool's hold: see kxfer_file_jobs_settle(). */
	atomic_dec(&job->j_file->kf_freeing);
	if (!refcount_dec_not_one(&job->j_file->kf_ref.refcount)) {
		/* The work drops kf_freeing again: take it back. */
		atomic_inc(&job->j_file->kf_freeing);
		return false;
	}
	kxfer_rails_job_free(job);
	kfree(job->j_msg);
	kfree(job);
	return true;
}

/* Free an ended job, now or by the free work. */
static void kxfer_job_release(struct kxfer_task *job)
{
	if (!kxfer_job_free_now(job) &&
	    llist_add(&job->j_free, &kxfer_job_free_list))
		queue_work(kxfer_wq, &kxfer_job_free);
}

/*
 * A share of a striped job ended, for good (rail.c failed it over as
 * long as a rail was left): its error is the job's; the last share to
 * end ends the job's data.
 */
static void kxfer_job_share_end(struct kxfer_task *job)
{
	struct kxfer_task *parent = job->j_parent;

	if (job->j_status)
		kxfer_job_set_error(parent, job->j_status, job->j_wc_status);
	/* Its holds count until dropped: see kxfer_file_jobs_settle(). */
	atomic_inc(&job->j_file->kf_freeing);
	kxfer_job_release(job);
	kxfer_job_batches_done(parent, 1);
}

static int kxfer_wc_errno(enum ib_wc_status st)
{
	switch (st) {
	case IB_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
	case IB_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IB_WC_RETRY_EXC_ERR:
	case IB_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IB_WC_REM_INV_REQ_ERR:
	case IB_WC_REM_OP_ERR:
		return -EREMOTEIO;
	default:
		return -EIO;
	}
}

void kxfer_job_set_error(struct kxfer_task *job, int err, u32 wc_status)
{
	if (!cmpxchg(&job->j_status, 0, err))
		WRITE_ONCE(job->j_wc_status, wc_status);
}

static void kxfer_job_count(struct kxfer_task *job)
{
	struct kxfer_sess_stats *st = &job->j_sess->s_stats;

	switch (job->j_status) {
	case 0:
		atomic64_inc(&st->ok);
		break;
	case -ECONNRESET:
	case -ENOTCONN:
		atomic64_inc(&st->err_flush);
		break;
	case -EACCES:
		atomic64_inc(&st->err_access);
		break;
	case -ETIMEDOUT:
		atomic64_inc(&st->err_timeout);
		break;
	case -EREMOTEIO:
		atomic64_inc(&st->err_remote);
		break;
	case -ESTALE:
		atomic64_inc(&st->err_stale);
		break;
	default:
		atomic64_inc(&st->err_other);
		break;
	}
}

/* Bucket of a time for KXFER_A_STATS_LAT_*: log2 of microseconds. */
static unsigned int kxfer_lat_bucket(u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);

	return us > 1 ? min_t(unsigned int, ilog2(us),
			      KXFER_LAT_BUCKETS - 1) : 0;
}

/* Where a posted job's time went: waiting to be posted, then the NIC. */
static void kxfer_job_lat(struct kxfer_task *job)
{
	struct kxfer_sess_stats *st = &job->j_sess->s_stats;
	u64 post = READ_ONCE(job->j_post_ns), now;

	if (!post)
		return;
	now = ktime_get_ns();
	atomic64_inc(&st->lat_queue[kxfer_lat_bucket(post - job->j_submit_ns)]);
	atomic64_inc(&st->lat_done[kxfer_lat_bucket(now - post)]);
}

/* Tell the file the job ended, then free it in process context. */
void kxfer_job_post(struct kxfer_task *job)
{
	struct kxfer_file *kf = job->j_file;
	struct kxfer_gate *g = job->j_gate;
	struct kxfer_pool *pool = job->j_pool;
	struct kxfer_event ev = { .type = KXFER_EV_COMPLETION };
	unsigned long flags;

	/* Nothing of it is in flight: a withdrawal may be answered. */
	if (job->j_rx)
		kxfer_rexport_job_end(job->j_sess, job->j_rx);
	job->j_rx = NULL;
	/* Its memory was revoked while it ran: what it moved is lost. */
	if (pool && READ_ONCE(pool->kp_revoked))
		kxfer_job_set_error(job, -ESTALE, 0);
	/* Its rail failed: another of the peer's rails takes it (rail.c). */
	if (job->j_rails && kxfer_rails_job_retry(job))
		return;
	/* A striped job counts in its shares, which count on their rails. */
	if (!job->j_striped) {
		kxfer_job_count(job);
		kxfer_job_lat(job);
	}
	if (job->j_parent) {
		kxfer_job_share_end(job);
		return;
	}
	trace_job_complete(job->j_sess->s_id, job->j_user_data, job->j_status,
			   job->j_wc_status, job->j_status ? 0 : job->j_bytes);
	ev.status = job->j_status;
	ev.user_data = job->j_user_data;
	ev.bytes = job->j_status ? 0 : job->j_bytes;
	ev.wc_status = job->j_wc_status;
	/* Before the event: see kxfer_file_jobs_settle(). */
	atomic_inc(&kf->kf_freeing);
	spin_lock_irqsave(&kf->kf_lock, flags);
	/* The last job ahead of a FENCE: start what waits (holds the file). */
	if (!--g->g_inflight && !list_empty(&g->g_held) &&
	    queue_work(kxfer_wq, &g->g_work))
		kref_get(&kf->kf_ref);
	kxfer_file_complete_locked(kf, &ev);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	wake_up_interruptible(&kf->kf_wait);
	if (pool)
		kxfer_pool_job_end(pool);
	kxfer_job_release(job);
}

/*
 * The last batch is done.  A NOTIFY job whose data all landed first has
 * its notification sent, by the session's work, on QP 0: every data WR
 * was acknowledged by the peer's NIC, on whatever QP, so the data is
 * visible there before the notification can arrive.
 */
static void kxfer_job_finish(struct kxfer_task *job)
{
	struct kxfer_session *s = job->j_sess;
	unsigned long flags;

	if (job->j_imm) {
		/* Its WRITE_WITH_IMM and its description were acknowledged. */
		spin_lock_irqsave(&s->s_lock, flags);
		s->s_imm_outstanding--;
		spin_unlock_irqrestore(&s->s_lock, flags);
		if (!job->j_status) {
			kxfer_job_notified(job);
			atomic64_inc(&s->s_stats.notify_imm);
		}
		kxfer_job_post(job);
		return;
	}
	if (!job->j_notify || job->j_status) {
		kxfer_job_post(job);
		return;
	}
	/* A striped job's shares all landed: notified on a rail up (rail.c). */
	if (job->j_striped && !job->j_data_done) {
		kxfer_rails_stripe(job);
		return;
	}
	/* Posted again on another rail, it only notifies (rail.c). */
	job->j_data_done = true;
	spin_lock_irqsave(&s->s_lock, flags);
	list_add_tail(&job->j_notify_node, &s->s_notifyq);
	spin_unlock_irqrestore(&s->s_lock, flags);
	set_bit(KXFER_SE_NOTIFY, &s->s_events);
	queue_work(kxfer_wq, &s->s_work);
}

void kxfer_job_batches_done(struct kxfer_task *job, unsigned int n)
{
	if (n && atomic_sub_and_test(n, &job->j_left))
		kxfer_job_finish(job);
}

/* The @i-th WR of a part, as the send queue takes it. */
static struct ib_send_wr *kxfer_part_wr(struct kxfer_job_part *p, u32 i)
{
	return p->p_atomic ? &p->p_atomic->wr : &p->p_wrs[i].wr;
}

/*
 * WRs of the part's next whole batches that fit in @sq slots and @room
 * bytes in flight (an idle QP, @idle, takes any one batch), their bytes
 * to @bytes.
 */
static u32 kxfer_part_fit(const struct kxfer_job_part *p, u32 sq, s64 room,
			  bool idle, s64 *bytes)
{
	u32 b, n = 0;

	*bytes = 0;
	for (b = p->p_posted / p->p_batch; b < p->p_nbatches; b++) {
		const struct kxfer_job_batch *jb = &p->p_batches[b];

		if (n + jb->b_nwr > sq)
			break;
		if (*bytes + jb->b_bytes > room && (n || !idle))
			break;
		n += jb->b_nwr;
		*bytes += jb->b_bytes;
	}
	return n;
}

/* @n more WRs of the part were taken by the send queue at @now. */
static void kxfer_part_account(struct kxfer_qp *qp, struct kxfer_job_part *p,
			       u32 n, u64 now)
{
	u32 b, end = DIV_ROUND_UP(p->p_posted + n, p->p_batch);

	/* The job's first WR posted, on whichever of its QPs. */
	if (n && !p->p_posted)
		cmpxchg64(&p->p_job->j_post_ns, 0, now);

	for (b = p->p_posted / p->p_batch; b < end; b++) {
		struct kxfer_job_batch *jb = &p->p_batches[b];

		qp->q_bytes_free -= jb->b_bytes;
		jb->b_seq = ++qp->q_seq;
		if (jb->b_quiet)
			list_add_tail(&jb->b_node, &qp->q_quiet);
		else
			qp->q_signaled++;
	}
	qp->q_sq_free -= n;
	qp->q_wrs += n;
	p->p_posted += n;
}

/*
 * Selective signaling over the chain about to be posted: a batch end that
 * is not the chain's last, with fewer than KXFER_SIGNAL_WRS WRs and
 * KXFER_JOB_BATCH_BYTES since the last signaled one, is made quiet.  Its
 * WR still points at its job's error sink, so that an error names the
 * job.  Atomics keep their completion.  Caller holds q_post_lock.
 */
static void kxfer_chain_quiet(struct kxfer_qp *qp,
			      const struct kxfer_job_part *last)
{
	struct kxfer_job_part *p;
	u32 run = 0;
	u64 bytes = 0;

	list_for_each_entry(p, &qp->q_backlog, p_node) {
		u32 b, end = DIV_ROUND_UP(p->p_posted + p->p_chain, p->p_batch);

		for (b = p->p_posted / p->p_batch; b < end; b++) {
			struct kxfer_job_batch *jb = &p->p_batches[b];
			struct ib_rdma_wr *wr;

			run += jb->b_nwr;
			bytes += jb->b_bytes;
			if (p->p_atomic || (p == last && b + 1 == end) ||
			    run >= KXFER_SIGNAL_WRS ||
			    bytes >= KXFER_JOB_BATCH_BYTES) {
				run = 0;
				bytes = 0;
				continue;
			}
			wr = &p->p_wrs[min((b + 1) * p->p_batch, p->p_nwr) - 1];
			wr->wr.send_flags &= ~IB_SEND_SIGNALED;
			wr->wr.wr_cqe = &p->p_job->j_err_cqe;
			jb->b_quiet = true;
		}
		if (p == last)
			break;
	}
}

/*
 * Post the QP's backlog in order, as far as slots and bytes in flight
 * allow, as one chain: every part's next whole batches, linked, one
 * ib_post_send() (one doorbell) for all.  A part not fully posted stops
 * the chain: nothing passes it.  A part fully posted leaves the backlog.
 * On a post error, what precedes the bad WR is posted; the part it
 * belongs to keeps its whole batches before it and is broken (it stays:
 * teardown, which the error starts, accounts for it and what follows).
 * Caller holds q_post_lock.
 */
static void kxfer_qp_kick(struct kxfer_qp *qp)
{
	struct ib_send_wr *head = NULL, *tail = NULL;
	const struct ib_send_wr *bad = NULL;
	struct kxfer_job_part *p, *tmp, *last_p = NULL;
	s64 room = qp->q_bytes_free;
	u32 sq = qp->q_sq_free;
	bool failed;
	u64 now;
	int ret;

	lockdep_assert_held(&qp->q_post_lock);
	list_for_each_entry(p, &qp->q_backlog, p_node) {
		struct ib_send_wr *last;
		s64 bytes;
		u32 n;

		if (p->p_broken)
			break;
		n = kxfer_part_fit(p, sq, room,
				   !head && room == qp->q_bytes_max,
				   &bytes);
		if (!n)
			break;
		/* Cut after the last whole batch; restored below. */
		last = kxfer_part_wr(p, p->p_posted + n - 1);
		p->p_saved = last->next;
		last->next = NULL;
		if (tail)
			tail->next = kxfer_part_wr(p, p->p_posted);
		else
			head = kxfer_part_wr(p, p->p_posted);
		tail = last;
		last_p = p;
		p->p_chain = n;
		sq -= n;
		room -= bytes;
		if (p->p_posted + n < p->p_nwr)
			break;
	}
	if (!head)
		return;

	kxfer_chain_quiet(qp, last_p);
	qp->q_doorbells++;
	ret = ib_post_send(qp->q_id->qp, head, &bad);
	now = ktime_get_ns();
	failed = false;
	list_for_each_entry_safe(p, tmp, &qp->q_backlog, p_node) {
		u32 n = p->p_chain, k;
		struct ib_send_wr *last;

		if (!n)
			break;
		last = kxfer_part_wr(p, p->p_posted + n - 1);
		last->next = p->p_saved;
		p->p_saved = NULL;
		p->p_chain = 0;
		if (failed)
			continue;	/* after the bad WR: not posted */
		if (ret) {
			/* Is the bad WR (or, unknown, the first) in this part? */
			for (k = 0; k < n; k++)
				if (!bad || bad == kxfer_part_wr(p, p->p_posted + k))
					break;
			if (k < n) {
				kxfer_part_account(qp, p,
						   rounddown(k, p->p_batch), now);
				p->p_broken = true;
				failed = true;
				continue;
			}
		}
		kxfer_part_account(qp, p, n, now);
		if (p->p_posted == p->p_nwr)
			list_del_init(&p->p_node);
	}
	/* What was posted before a bad WR completes too. */
	kxfer_session_poll_arm(qp->q_sess);
	if (ret)
		kxfer_session_fail(qp->q_sess, ret, "cannot post a work request");
}

void kxfer_job_wc_batch(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_job_batch *b = container_of(wc->wr_cqe,
						 struct kxfer_job_batch, b_cqe);
	struct kxfer_job_part *p = b->b_part;
	struct kxfer_task *job = p->p_job;
	struct kxfer_qp *qp = p->p_qp;
	struct kxfer_job_batch *qb, *tmp;
	unsigned long flags;
	LIST_HEAD(retired);

	if (wc->status == IB_WC_SUCCESS) {
		/* The peer's NIC acknowledged: the session is alive. */
		WRITE_ONCE(qp->q_sess->s_last_rx_ns, ktime_get_ns());
	} else {
		trace_wr_error(qp->q_sess->s_id, wc->qp->qp_num, wc->status,
			       wc->vendor_err);
		kxfer_job_set_error(job, kxfer_wc_errno(wc->status), wc->status);
		kxfer_session_wc_failed(qp->q_sess, wc,
					kxfer_wc_errno(wc->status));
	}
	spin_lock_irqsave(&qp->q_post_lock, flags);
	/* The quiet batches posted before it completed before it. */
	while ((qb = list_first_entry_or_null(&qp->q_quiet,
					      struct kxfer_job_batch,
					      b_node)) &&
	       qb->b_seq < b->b_seq) {
		list_move_tail(&qb->b_node, &retired);
		qp->q_sq_free += qb->b_nwr;
		qp->q_bytes_free += qb->b_bytes;
	}
	qp->q_sq_free += b->b_nwr;
	qp->q_bytes_free += b->b_bytes;
	if (!qp->q_dead)
		kxfer_qp_kick(qp);
	spin_unlock_irqrestore(&qp->q_post_lock, flags);

	/* In post order; a batch's job may be gone once it is done. */
	list_for_each_entry_safe(qb, tmp, &retired, b_node)
		kxfer_job_batches_done(qb->b_part->p_job, 1);
	kxfer_job_batches_done(job, 1);
}

/* Unsignaled WRs complete only on error; the batch's CQE follows. */
void kxfer_job_wc_error(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_task *job = container_of(wc->wr_cqe, struct kxfer_task,
					     j_err_cqe);

	trace_wr_error(job->j_sess->s_id, wc->qp->qp_num, wc->status,
		       wc->vendor_err);
	kxfer_job_set_error(job, kxfer_wc_errno(wc->status), wc->status);
	kxfer_session_wc_failed(job->j_sess, wc, kxfer_wc_errno(wc->status));
}

/**
 * kxfer_qp_data_init - make a new QP ready for data work requests
 * @s: the session
 * @qp: the QP, just created
 *
 * Caller holds s_mutex.
 */
void kxfer_qp_data_init(struct kxfer_session *s, struct kxfer_qp *qp)
{
	struct ib_device *ibdev = s->s_dev->kd_ibdev;
	unsigned int home = nr_cpu_ids;
	unsigned long flags;

	/* One CPU has nowhere to spread to. */
	if (num_online_cpus() > 1)
		home = cpumask_local_spread(s->s_id + qp->q_index,
					    ibdev_to_node(ibdev));
	spin_lock_irqsave(&qp->q_post_lock, flags);
	qp->q_sq_free = s->s_depth;
	qp->q_bytes_max = (s64)READ_ONCE(kxfer_qp_inflight_mb) << 20;
	qp->q_bytes_free = qp->q_bytes_max;
	qp->q_dead = false;
	qp->q_home = home;
#ifdef KXFER_RXE_TASKLETS
	qp->q_soft = ibdev->ops.driver_id == RDMA_DRIVER_RXE;
#else
	qp->q_soft = false;
#endif
	spin_unlock_irqrestore(&qp->q_post_lock, flags);
}

/**
 * kxfer_qps_data_stop - post nothing more on the session's QPs
 * @s: the session, about to be drained
 *
 * Caller holds s_mutex.
 */
void kxfer_qps_data_stop(struct kxfer_session *s)
{
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < KXFER_MAX_QPS; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		qp->q_dead = true;
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
		/* Its reference: the caller holds another. */
		if (cancel_work_sync(&qp->q_kick_work))
			kxfer_session_put(s);
	}
}

/**
 * kxfer_qps_data_fail - end every job part that never got posted
 * @s: the session; its QPs are drained, so every posted batch completed
 *
 * Caller holds s_mutex.
 */
void kxfer_qps_data_fail(struct kxfer_session *s)
{
	struct kxfer_job_batch *qb, *qtmp;
	struct kxfer_job_part *p, *tmp;
	unsigned long flags;
	unsigned int i;
	LIST_HEAD(quiet);
	LIST_HEAD(dead);

	for (i = 0; i < KXFER_MAX_QPS; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		list_splice_tail_init(&qp->q_backlog, &dead);
		/* Quiet batches with no signaled one posted after them. */
		list_splice_tail_init(&qp->q_quiet, &quiet);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
	}
	list_for_each_entry_safe(qb, qtmp, &quiet, b_node) {
		struct kxfer_task *job = qb->b_part->p_job;

		kxfer_job_set_error(job, -ECONNRESET, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(job, 1);
	}
	list_for_each_entry_safe(p, tmp, &dead, p_node) {
		u32 posted = DIV_ROUND_UP(p->p_posted, p->p_batch);

		list_del_init(&p->p_node);
		kxfer_job_set_error(p->p_job, -ECONNRESET, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(p->p_job, p->p_nbatches - posted);
	}
}

/**
 * kxfer_qps_cut_rexport - end what was not posted of jobs to an export
 * @s: the session
 * @rx: a remote export the peer withdrew
 *
 * Parts of jobs started on @rx that wait in a backlog are taken out and
 * end their jobs with -ESTALE once what was posted of them completed: a
 * peer that drains waits only for the data already on the wire.  Not a
 * NOTIFY by WRITE_WITH_IMM, whose description is on its way (the peer
 * would wait for the other half for ever): it is posted whole.  Caller
 * holds s_mutex.
 */
void kxfer_qps_cut_rexport(struct kxfer_session *s,
			   const struct kxfer_rexport *rx)
{
	struct kxfer_job_part *p, *tmp;
	unsigned long flags;
	LIST_HEAD(taken);
	unsigned int i;

	lockdep_assert_held(&s->s_mutex);
	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		list_for_each_entry_safe(p, tmp, &qp->q_backlog, p_node)
			if (p->p_job->j_rx == rx && !p->p_broken &&
			    !p->p_job->j_imm)
				list_move_tail(&p->p_node, &taken);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
	}
	list_for_each_entry_safe(p, tmp, &taken, p_node) {
		u32 posted = DIV_ROUND_UP(p->p_posted, p->p_batch);

		list_del_init(&p->p_node);
		kxfer_job_set_error(p->p_job, -ESTALE, 0);
		kxfer_job_batches_done(p->p_job, p->p_nbatches - posted);
	}
}

/**
 * kxfer_job_start - hand the job's parts to their QPs
 * @job: the job, built for the session's current connection
 * @rx: the remote export it addresses, found by the caller under s_mutex;
 *	the job counts in its rx_jobs until it ends
 * @kick: %NULL to post now; else the parts wait in their QPs' backlogs
 *	and @kick collects the QPs, for kxfer_kick_flush() to post once
 *
 * From here the job completes by itself.  Caller holds s_mutex.
 */
void kxfer_job_start(struct kxfer_task *job, struct kxfer_rexport *rx,
		     struct kxfer_kick *kick)
{
	bool inline_post = job->j_inline;
	unsigned long flags;
	bool dead;
	u32 i;

	lockdep_assert_held(&job->j_sess->s_mutex);
	/*
	 * Striped over rails: rail.c makes and starts its shares, which
	 * count in their rails' exports; the job itself in none (its rail's
	 * teardown does not wait for it).
	 */
	if (job->j_striped && !job->j_stripe_started) {
		kxfer_rails_stripe(job);
		return;
	}
	atomic_inc(&rx->rx_jobs);
	job->j_rx = rx;
	kxfer_job_imm(job);

	/*
	 * A small job: what the provider defers to softirq when it is
	 * posted (rxe's requester on 6.1, then the completion) runs at
	 * local_bh_enable(), here, rather than after a context switch to
	 * ksoftirqd.
	 */
	if (inline_post)
		local_bh_disable();
	/*
	 * The last batch may complete, and the job be freed, as soon as
	 * its part is posted: hold it until the loop is done with it.
	 */
	atomic_inc(&job->j_left);
	for (i = 0; i < job->j_nparts; i++) {
		struct kxfer_job_part *p = &job->j_parts[i];
		struct kxfer_qp *qp = p->p_qp;

		/* A part without WRs has no batches to wait for. */
		if (!p->p_nwr)
			continue;
		spin_lock_irqsave(&qp->q_post_lock, flags);
		dead = qp->q_dead;
		qp->q_parts++;
		qp->q_bytes += p->p_bytes;
		/* In order behind older parts; posted as far as it fits. */
		if (!dead) {
			list_add_tail(&p->p_node, &qp->q_backlog);
			if (!kick)
				kxfer_qp_kick(qp);
		}
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
		if (kick && !dead)
			kick->k_qps |= BIT(qp - job->j_sess->s_qps);
		/*
		 * The session is going or gone: nothing of this part was
		 * posted, and teardown may have swept the backlog already.
		 */
		if (dead) {
			kxfer_job_set_error(job, -ENOTCONN, IB_WC_WR_FLUSH_ERR);
			kxfer_job_batches_done(job, p->p_nbatches);
		}
	}
	kxfer_job_batches_done(job, 1);
	if (inline_post)
		local_bh_enable();
}

/**
 * kxfer_qp_kick_work - post a QP's backlog on its home CPU
 * @work: the QP's q_kick_work
 */
void kxfer_qp_kick_work(struct work_struct *work)
{
	struct kxfer_qp *qp = container_of(work, struct kxfer_qp, q_kick_work);
	struct kxfer_session *s = qp->q_sess;
	unsigned long flags;

	spin_lock_irqsave(&qp->q_post_lock, flags);
	if (!qp->q_dead) {
		u64 doorbells = qp->q_doorbells;

		/* Only if it posted: a completion may have posted it first. */
		kxfer_qp_kick(qp);
		if (qp->q_doorbells != doorbells)
			qp->q_handoffs++;
	}
	spin_unlock_irqrestore(&qp->q_post_lock, flags);
	kxfer_session_put(s);
}

/*
 * Hand the QP's post to its home CPU when posts are spread and this is
 * not it.  Whatever sits in the backlog when the work runs goes in its
 * chain, this SUBMIT's and any queued behind it.
 */
static bool kxfer_qp_handoff(struct kxfer_qp *qp)
{
	int spread = READ_ONCE(kxfer_post_spread);
	unsigned int home = READ_ONCE(qp->q_home);

	if (spread < 0)
		spread = READ_ONCE(qp->q_soft);
	if (!spread || home >= nr_cpu_ids ||
	    home == raw_smp_processor_id())
		return false;
	kxfer_session_get(qp->q_sess);
	/* Already queued: that run posts this SUBMIT's part too. */
	if (!queue_work_on(home, kxfer_post_wq, &qp->q_kick_work))
		kxfer_session_put(qp->q_sess);
	return true;
}

/**
 * kxfer_kick_flush - post what kxfer_job_start() left in the backlogs
 * @kick: the QPs of one session; emptied, its session reference dropped
 *
 * One chain per QP for every job of a SUBMIT, posted here or on the
 * QP's home CPU (kxfer_qp_handoff).  Needs no s_mutex: a QP torn down
 * meanwhile is dead (its backlog swept), and one connected again has in
 * its backlog only what was built for the new connection.
 */
void kxfer_kick_flush(struct kxfer_kick *kick)
{
	struct kxfer_session *s = kick->k_sess;
	unsigned long flags;
	unsigned int i;

	if (!s)
		return;
	for_each_set_bit(i, &kick->k_qps, KXFER_MAX_QPS) {
		struct kxfer_qp *qp = &s->s_qps[i];

		if (kxfer_qp_handoff(qp))
			continue;
		spin_lock_irqsave(&qp->q_post_lock, flags);
		if (!qp->q_dead)
			kxfer_qp_kick(qp);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
	}
	kick->k_qps = 0;
	kick->k_sess = NULL;
	kxfer_session_put(s);
}

/* End a job that was built but will never be posted. */
void kxfer_job_abort(struct kxfer_task *job, int err)
{
	u32 i, n = 0;

	for (i = 0; i < job->j_nparts; i++)
		n += job->j_parts[i].p_nbatches;
	kxfer_job_set_error(job, err, IB_WC_WR_FLUSH_ERR);
	/* One more for a job without batches (a notification alone). */
	atomic_inc(&job->j_left);
	kxfer_job_batches_done(job, n + 1);
}

/**
 * kxfer_jobs_flush - wait until every finished job is freed (unload)
 */
void kxfer_jobs_flush(void)
{
	flush_work(&kxfer_job_free);
}

/**
 * kxfer_file_jobs_settle - let the file's completed jobs drop their holds
 * @kf: the file
 *
 * A job's event is posted before its holds on the pool and the session
 * are dropped, right after it or, when one is the last, by the free work
 * in process context (kxfer_job_free_now()).  A caller who reaped
 * every event and detaches a pool expects its memory released when
 * DETACH returns: wait, a second at most (the free work of other
 * threads' jobs could keep the count up), until those holds are gone.
 * May sleep.
 */
void kxfer_file_jobs_settle(struct kxfer_file *kf)
{
	unsigned long end = jiffies + HZ;

	while (atomic_read(&kf->kf_freeing) && time_before(jiffies, end)) {
		flush_work(&kxfer_job_free);
		cond_resched();
	}
}
