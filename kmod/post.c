// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: posting a job's work requests and completing the job.
 *
 * A job's parts go to their QPs' send queues in batches (kxfer_part_post,
 * one chain per doorbell), wait on a QP's backlog when the queue or the
 * bytes in flight are full, complete batch by batch in the CQ handlers,
 * and end with exactly one event to the file (kxfer_job_post).  Session
 * teardown stops posting, drains the QPs and fails what never got posted
 * (kxfer_qps_data_stop, kxfer_qps_data_fail).
 */
#include <linux/slab.h>
#include <linux/llist.h>

#include "kxfer.h"
#include "job.h"
#include "trace.h"

static LLIST_HEAD(kxfer_job_free_list);

static void kxfer_job_free_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kxfer_job_free_list);
	struct kxfer_task *job, *tmp;

	llist_for_each_entry_safe(job, tmp, list, j_free) {
		if (job->j_pool)
			kxfer_pool_put(job->j_pool);
		kfree(job->j_msg);
		kxfer_session_put(job->j_sess);
		kxfer_file_put(job->j_file);
		kvfree(job);
	}
}

static DECLARE_WORK(kxfer_job_free, kxfer_job_free_work);

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

/* Tell the file the job ended, then free it in process context. */
void kxfer_job_post(struct kxfer_task *job)
{
	struct kxfer_file *kf = job->j_file;
	struct kxfer_gate *g = job->j_gate;
	struct kxfer_pool *pool = job->j_pool;
	struct kxfer_event ev = { .type = KXFER_EV_COMPLETION };
	unsigned long flags;

	/* Its memory was revoked while it ran: what it moved is lost. */
	if (pool && READ_ONCE(pool->kp_revoked))
		kxfer_job_set_error(job, -ESTALE, 0);
	kxfer_job_count(job);
	trace_job_complete(job->j_sess->s_id, job->j_user_data, job->j_status,
			   job->j_wc_status, job->j_status ? 0 : job->j_bytes);
	ev.status = job->j_status;
	ev.user_data = job->j_user_data;
	ev.bytes = job->j_status ? 0 : job->j_bytes;
	ev.wc_status = job->j_wc_status;
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

	if (llist_add(&job->j_free, &kxfer_job_free_list))
		queue_work(kxfer_wq, &kxfer_job_free);
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

/*
 * Post as many whole batches of the part as the QP has slots for, as one
 * chain.  Caller holds q_post_lock.  Return: true if the part is fully
 * posted (or broken: teardown will account for it).
 */
static bool kxfer_part_post(struct kxfer_job_part *p)
{
	struct kxfer_qp *qp = p->p_qp;
	const struct ib_send_wr *bad = NULL;
	u32 first_batch = p->p_posted / p->p_batch, b, n = 0;
	struct ib_rdma_wr *last;
	struct ib_send_wr *saved;
	s64 bytes = 0;
	int ret;

	lockdep_assert_held(&qp->q_post_lock);
	if (p->p_broken)
		return true;
	for (b = first_batch; b < p->p_nbatches; b++) {
		const struct kxfer_job_batch *jb = &p->p_batches[b];

		if (n + jb->b_nwr > qp->q_sq_free)
			break;
		/* Within the bytes in flight; an idle QP takes any batch. */
		if (bytes + jb->b_bytes > qp->q_bytes_free &&
		    (n || qp->q_bytes_free != KXFER_QP_INFLIGHT_BYTES))
			break;
		n += jb->b_nwr;
		bytes += jb->b_bytes;
	}
	if (!n)
		return false;

	qp->q_doorbells++;
	if (p->p_atomic) {
		/* One WR, one batch. */
		ret = ib_post_send(qp->q_id->qp, &p->p_atomic->wr, &bad);
		bad = NULL;
		goto posted;
	}
	/* Cut the chain after the last whole batch, post, restore. */
	last = &p->p_wrs[p->p_posted + n - 1];
	saved = last->wr.next;
	last->wr.next = NULL;
	ret = ib_post_send(qp->q_id->qp, &p->p_wrs[p->p_posted].wr, &bad);
	last->wr.next = saved;
posted:
	if (ret) {
		u32 done = bad ? (u32)(container_of(bad, struct ib_rdma_wr, wr) -
				       p->p_wrs) : p->p_posted;

		/* Whole batches before @bad are posted and will complete. */
		done = rounddown(done, p->p_batch);
		for (b = first_batch; b < done / p->p_batch; b++)
			qp->q_bytes_free -= p->p_batches[b].b_bytes;
		qp->q_sq_free -= done - p->p_posted;
		qp->q_wrs += done - p->p_posted;
		p->p_posted = done;
		p->p_broken = true;
		kxfer_session_fail(qp->q_sess, ret, "cannot post a work request");
		return true;
	}
	qp->q_wrs += n;
	qp->q_sq_free -= n;
	qp->q_bytes_free -= bytes;
	p->p_posted += n;
	return p->p_posted == p->p_nwr;
}

/* Post the backlog of a QP in order.  Caller holds q_post_lock. */
static void kxfer_qp_kick(struct kxfer_qp *qp)
{
	struct kxfer_job_part *p;

	while ((p = list_first_entry_or_null(&qp->q_backlog,
					     struct kxfer_job_part, p_node))) {
		if (!kxfer_part_post(p))
			break;
		if (p->p_broken)
			break;		/* stays: teardown accounts for it */
		list_del_init(&p->p_node);
	}
}

void kxfer_job_wc_batch(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_job_batch *b = container_of(wc->wr_cqe,
						 struct kxfer_job_batch, b_cqe);
	struct kxfer_job_part *p = b->b_part;
	struct kxfer_task *job = p->p_job;
	struct kxfer_qp *qp = p->p_qp;
	unsigned long flags;

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
	qp->q_sq_free += b->b_nwr;
	qp->q_bytes_free += b->b_bytes;
	if (!qp->q_dead)
		kxfer_qp_kick(qp);
	spin_unlock_irqrestore(&qp->q_post_lock, flags);

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
	unsigned long flags;

	spin_lock_irqsave(&qp->q_post_lock, flags);
	qp->q_sq_free = s->s_depth;
	qp->q_bytes_free = KXFER_QP_INFLIGHT_BYTES;
	qp->q_dead = false;
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
	struct kxfer_job_part *p, *tmp;
	unsigned long flags;
	unsigned int i;
	LIST_HEAD(dead);

	for (i = 0; i < KXFER_MAX_QPS; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		list_splice_tail_init(&qp->q_backlog, &dead);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
	}
	list_for_each_entry_safe(p, tmp, &dead, p_node) {
		u32 posted = DIV_ROUND_UP(p->p_posted, p->p_batch);

		list_del_init(&p->p_node);
		kxfer_job_set_error(p->p_job, -ECONNRESET, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(p->p_job, p->p_nbatches - posted);
	}
}

/* Hand the job's parts to their QPs; from here it completes by itself. */
void kxfer_job_start(struct kxfer_task *job)
{
	unsigned long flags;
	bool dead;
	u32 i;

	kxfer_job_imm(job);

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
		/* Behind older parts, or not all posted: wait in order. */
		if (!dead && (!list_empty(&qp->q_backlog) ||
			      !kxfer_part_post(p) || p->p_broken))
			list_add_tail(&p->p_node, &qp->q_backlog);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
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
