// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: jobs, the data path (DESIGN §4).
 *
 * A job moves the bytes of an array of segments between an attached
 * pool and a remote export of one peer, with one-sided RDMA WRITE or
 * READ.  In order:
 *
 * 1. Validate everything before anything is posted (kxfer_job_prepare):
 *    handles, op, flags, reserved fields, counts, every range inside the
 *    pool and the export (overflow-safe), the access the op needs.
 * 2. Plan (plan.c): merge segments contiguous on both sides, gather
 *    remote-contiguous ones into multi-SGE work requests, split at the
 *    stripe size, the local chunk and the remote MR boundaries.
 * 3. Stripe the WRs over the session's QPs, each QP's share a "part" of
 *    the job; a job whose destination ranges overlap stays on one QP, so
 *    that its writes land in order.  Each part is cut into batches of
 *    up to KXFER_JOB_BATCH WRs (fewer for big WRs: at most about
 *    KXFER_JOB_BATCH_BYTES, so that completions, which are also the
 *    session's sign of life, come often on a slow link) whose last WR
 *    alone is signaled; a part posts
 *    its batches as one chain (one doorbell) as far as send-queue slots
 *    allow, and waits on the QP's backlog, in submission order, for the
 *    rest.
 * 4. Complete: when every batch of every part has completed, post
 *    exactly one event {user_data, status, bytes} to the submitting
 *    file.  Unsignaled WRs point at an error sink that only records a
 *    failure.
 *
 * Exactly one event per accepted job, whatever happens: a WR error
 * fails its batch and, through the session, flushes the rest; session
 * teardown marks the QPs dead, drains them (every posted batch
 * completes, flushed), then fails what never got posted.  Jobs hold
 * the file, the session and the pool, so a job outlives an early
 * close(); its pages stay alive until the hardware is done with them.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/llist.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/hrtimer.h>

#include "kxfer.h"
#include "plan.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

#define KXFER_JOB_BATCH		32
#define KXFER_JOB_BATCH_BYTES	(4U << 20)
#define KXFER_JOB_MAX_WRS	65536	/* 64 GiB with a 1 MiB stripe */

struct kxfer_task;

/* A run of WRs of one part, the last of which is signaled. */
struct kxfer_job_batch {
	struct ib_cqe		b_cqe;
	struct kxfer_job_part	*b_part;
	u32			b_nwr;
	u32			b_bytes;
};

/* A job's share of one QP: WRs in plan order, posted in order. */
struct kxfer_job_part {
	struct list_head	p_node;		/* on q_backlog */
	struct kxfer_task	*p_job;
	struct kxfer_qp		*p_qp;
	struct ib_rdma_wr	*p_wrs;
	struct ib_atomic_wr	*p_atomic;	/* instead, for CAS and FADD */
	u32			p_nwr;
	u32			p_posted;	/* WRs posted */
	u32			p_batch;	/* WRs per batch */
	u64			p_bytes;
	struct kxfer_job_batch	*p_batches;
	u32			p_nbatches;
	bool			p_broken;	/* a post failed: wait for teardown */
};

/*
 * FENCE: the jobs of one file to one session, counted from submission
 * to completion event.  A FENCE job waits until that count is zero, and
 * every job submitted after a waiting one waits behind it, in order.
 */
struct kxfer_gate {
	struct list_head	g_node;		/* on kf_gates */
	struct kxfer_file	*g_file;
	struct kxfer_session	*g_sess;	/* referenced */
	unsigned int		g_inflight;	/* under kf_lock */
	struct list_head	g_held;		/* jobs waiting, under kf_lock */
	struct work_struct	g_work;		/* starts the jobs waiting */
};

struct kxfer_task {
	struct kxfer_file	*j_file;
	struct kxfer_gate	*j_gate;
	struct list_head	j_held_node;	/* on g_held */
	u64			j_conn_gen;	/* s_conn_gen it was built for */
	bool			j_fence;
	struct kxfer_session	*j_sess;
	struct kxfer_pool	*j_pool;
	u64			j_user_data;
	u64			j_bytes;
	atomic_t		j_left;		/* batches not yet completed */
	int			j_status;
	u32			j_wc_status;
	struct ib_cqe		j_err_cqe;	/* unsignaled WRs */
	struct llist_node	j_free;
	struct list_head	j_notify_node;	/* on s_notifyq */
	bool			j_notify;
	bool			j_imm;		/* NOTIFY by WRITE_WITH_IMM */
	u32			j_op;
	u64			j_notify_value;
	void			*j_msg;		/* NOTIFY_MSG: its bytes */
	u32			j_msg_len;
	u64			j_rgen;
	char			j_rname[KXFER_NAME_MAX];
	u32			j_nparts;
	struct ib_atomic_wr	j_atomic;
	struct kxfer_job_part	j_parts[KXFER_MAX_QPS];
	/* WRs, SGEs and batches follow in one allocation */
};

static LLIST_HEAD(kxfer_job_free_list);

static void kxfer_file_refill(struct kxfer_file *kf);
static void kxfer_job_batches_done(struct kxfer_task *job, unsigned int n);

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

static void kxfer_job_set_error(struct kxfer_task *job, int err, u32 wc_status)
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
static void kxfer_job_post(struct kxfer_task *job)
{
	struct kxfer_file *kf = job->j_file;
	struct kxfer_gate *g = job->j_gate;
	struct kxfer_event *ev;
	unsigned long flags;

	kxfer_job_count(job);
	trace_job_complete(job->j_sess->s_id, job->j_user_data, job->j_status,
			   job->j_wc_status, job->j_status ? 0 : job->j_bytes);
	spin_lock_irqsave(&kf->kf_lock, flags);
	/* The last job ahead of a FENCE: start what waits (holds the file). */
	if (!--g->g_inflight && !list_empty(&g->g_held) &&
	    queue_work(kxfer_wq, &g->g_work))
		kref_get(&kf->kf_ref);
	ev = &kf->kf_ring[kf->kf_head++ & (kf->kf_ring_size - 1)];
	ev->type = KXFER_EV_COMPLETION;
	ev->status = job->j_status;
	ev->user_data = job->j_user_data;
	ev->bytes = job->j_status ? 0 : job->j_bytes;
	ev->wc_status = job->j_wc_status;
	ev->sub = 0;
	ev->peer = 0;
	ev->msg_len = 0;
	kf->kf_inflight--;
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	wake_up_interruptible(&kf->kf_wait);

	if (llist_add(&job->j_free, &kxfer_job_free_list))
		queue_work(kxfer_wq, &kxfer_job_free);
}

/* What a NOTIFY job tells the peer, in either way of sending it. */
static void kxfer_job_notify_msg(const struct kxfer_task *job,
				 struct kxfer_msg_notify *n)
{
	memcpy(n->mn_name, job->j_rname, sizeof(n->mn_name));
	n->mn_gen = cpu_to_le64(job->j_rgen);
	n->mn_value = cpu_to_le64(job->j_notify_value);
	n->mn_bytes = cpu_to_le64(job->j_bytes);
}

/* A NOTIFY job's notification reached the peer's NIC. */
static void kxfer_job_notified(const struct kxfer_task *job)
{
	atomic64_inc(&job->j_sess->s_stats.notify_sent);
	trace_notify(job->j_sess->s_id, true, job->j_rname,
		     job->j_notify_value, job->j_bytes);
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

/**
 * kxfer_job_sent - a NOTIFY job's notification was sent, or cannot be
 * @job: the job
 * @status: 0 when the peer's NIC acknowledged it, else a negative errno
 *
 * Any context.
 */
void kxfer_job_sent(struct kxfer_task *job, int status)
{
	if (job->j_imm) {
		/* The description of a WRITE_WITH_IMM: one more to wait for. */
		if (status)
			kxfer_job_set_error(job, status, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(job, 1);
		return;
	}
	if (status)
		kxfer_job_set_error(job, status, IB_WC_WR_FLUSH_ERR);
	else
		kxfer_job_notified(job);
	kxfer_job_post(job);
}

/* A NOTIFY with the job's message; it fits a control message. */
static void kxfer_job_send_msg(struct kxfer_session *s, struct kxfer_task *job)
{
	struct kxfer_msg_notify_msg *nm;
	size_t len = sizeof(*nm) + job->j_msg_len;

	BUILD_BUG_ON(sizeof(*nm) + KXFER_NOTIFY_MSG_MAX > KXFER_CTRL_MSG_SIZE);
	nm = kzalloc(len, GFP_KERNEL);
	if (!nm) {
		kxfer_job_sent(job, -ENOMEM);
		return;
	}
	kxfer_job_notify_msg(job, &nm->nm_notify);
	nm->nm_len = cpu_to_le16(job->j_msg_len);
	memcpy(nm->nm_data, job->j_msg, job->j_msg_len);
	kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY_MSG, nm->nm_notify.mn_name,
			    len - sizeof(nm->nm_notify.mn_hdr), job);
	kfree(nm);
}

/**
 * kxfer_session_notify_flush - send the notifications of landed jobs
 * @s: the session
 *
 * Caller holds s_mutex.
 */
void kxfer_session_notify_flush(struct kxfer_session *s)
{
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&s->s_lock, flags);
	list_splice_tail_init(&s->s_notifyq, &list);
	spin_unlock_irqrestore(&s->s_lock, flags);

	list_for_each_entry_safe(job, tmp, &list, j_notify_node) {
		struct kxfer_msg_notify n = {};

		list_del_init(&job->j_notify_node);
		if (!s->s_ctrl_up) {
			kxfer_job_sent(job, -ECONNRESET);
			continue;
		}
		if (job->j_msg) {
			kxfer_job_send_msg(s, job);
			continue;
		}
		kxfer_job_notify_msg(job, &n);
		kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY, n.mn_name,
				    sizeof(n) - sizeof(n.mn_hdr), job);
	}
}

/**
 * kxfer_session_notify_fail - end the NOTIFY jobs that never sent
 * @s: the session, torn down
 *
 * Caller holds s_mutex.
 */
void kxfer_session_notify_fail(struct kxfer_session *s)
{
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&s->s_lock, flags);
	list_splice_tail_init(&s->s_notifyq, &list);
	spin_unlock_irqrestore(&s->s_lock, flags);
	list_for_each_entry_safe(job, tmp, &list, j_notify_node) {
		list_del_init(&job->j_notify_node);
		kxfer_job_sent(job, -ECONNRESET);
	}
}

static void kxfer_job_batches_done(struct kxfer_task *job, unsigned int n)
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

static void kxfer_job_wc_batch(struct ib_cq *cq, struct ib_wc *wc)
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
static void kxfer_job_wc_error(struct ib_cq *cq, struct ib_wc *wc)
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

/*
 * A NOTIFY WRITE whose WRs are all on QP 0: its last WR becomes a
 * WRITE_WITH_IMM carrying a token, and a NOTIFY_DESC message on the same
 * QP tells the receiver what the token notifies (see wire.h).  The
 * receiver's completion of the WRITE_WITH_IMM comes after every earlier
 * WRITE of the QP was placed, so no acknowledgment needs to come back
 * before the notification leaves, unlike kxfer_job_finish()'s way.  The
 * WRITE_WITH_IMM consumes one of the peer's control receives: it takes
 * a control credit.  Without a credit to spare, or with
 * KXFER_NOTIFY_IMM_MAX tokens outstanding, the job notifies the other
 * way.  Caller holds s_mutex; the job is not posted yet.
 */
static void kxfer_job_imm(struct kxfer_task *job)
{
	struct kxfer_session *s = job->j_sess;
	struct kxfer_job_part *p = &job->j_parts[0];
	struct kxfer_msg_notify_desc nd = {};
	struct ib_rdma_wr *last;
	unsigned long flags;
	u32 token, i;

	lockdep_assert_held(&s->s_mutex);
	if (!job->j_notify || job->j_msg || job->j_op != KXFER_OP_WRITE ||
	    !job->j_nparts || !p->p_nwr)
		return;
	/* Only QP 0 has receives posted: every WR must be on it. */
	for (i = 1; i < job->j_nparts; i++)
		if (job->j_parts[i].p_nwr)
			return;
	spin_lock_irqsave(&s->s_lock, flags);
	if (!s->s_ctrl_up || s->s_imm_outstanding >= KXFER_NOTIFY_IMM_MAX ||
	    s->s_credits < 3) {
		spin_unlock_irqrestore(&s->s_lock, flags);
		return;
	}
	s->s_credits--;
	s->s_imm_outstanding++;
	token = ++s->s_imm_token;
	spin_unlock_irqrestore(&s->s_lock, flags);

	last = &p->p_wrs[p->p_nwr - 1];
	last->wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	last->wr.ex.imm_data = cpu_to_be32(token);
	job->j_imm = true;
	atomic_inc(&job->j_left);		/* the description */

	kxfer_job_notify_msg(job, &nd.nd_notify);
	nd.nd_token = cpu_to_le32(token);
	kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY_DESC, nd.nd_notify.mn_name,
			    sizeof(nd) - sizeof(nd.nd_notify.mn_hdr), job);
	kxfer_ctrl_flush(s);
}

/* Hand the job's parts to their QPs; from here it completes by itself. */
static void kxfer_job_start(struct kxfer_task *job)
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
static void kxfer_job_abort(struct kxfer_task *job, int err)
{
	u32 i, n = 0;

	for (i = 0; i < job->j_nparts; i++)
		n += job->j_parts[i].p_nbatches;
	kxfer_job_set_error(job, err, IB_WC_WR_FLUSH_ERR);
	/* One more for a job without batches (a notification alone). */
	atomic_inc(&job->j_left);
	kxfer_job_batches_done(job, n + 1);
}

static struct kxfer_rexport *kxfer_rexport_find(struct kxfer_session *s,
						const char *name);

/*
 * Start the jobs that waited behind a FENCE, in order, up to the next
 * FENCE that still has jobs ahead of it.  A job built for an earlier
 * connection of the session (other keys, other PD), or for an export
 * since withdrawn, ends in error instead.
 */
static void kxfer_gate_work(struct work_struct *work)
{
	struct kxfer_gate *g = container_of(work, struct kxfer_gate, g_work);
	struct kxfer_file *kf = g->g_file;
	struct kxfer_session *s = g->g_sess;
	struct kxfer_rexport *rx;
	struct kxfer_task *job;
	unsigned long flags;

	mutex_lock(&s->s_mutex);
	for (;;) {
		spin_lock_irqsave(&kf->kf_lock, flags);
		job = list_first_entry_or_null(&g->g_held, struct kxfer_task,
					       j_held_node);
		if (job && job->j_fence && g->g_inflight)
			job = NULL;
		if (job) {
			list_del_init(&job->j_held_node);
			g->g_inflight++;
		}
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		if (!job)
			break;

		if (s->s_state != KXFER_PEER_UP ||
		    s->s_conn_gen != job->j_conn_gen) {
			kxfer_job_abort(job, -ECONNRESET);
			continue;
		}
		rx = kxfer_rexport_find(s, job->j_rname);
		if (!rx || rx->rx_gen != job->j_rgen) {
			kxfer_job_abort(job, -ESTALE);
			continue;
		}
		kxfer_job_start(job);
	}
	mutex_unlock(&s->s_mutex);
	kxfer_file_put(kf);
}

/* The file's gate for a session, made on first use.  May sleep. */
static struct kxfer_gate *kxfer_gate_get(struct kxfer_file *kf,
					 struct kxfer_session *s)
{
	struct kxfer_gate *g, *new;
	unsigned long flags;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node) {
		if (g->g_sess == s) {
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			kfree(new);
			return g;
		}
	}
	if (new) {
		new->g_file = kf;
		new->g_sess = s;
		kxfer_session_get(s);
		INIT_LIST_HEAD(&new->g_held);
		INIT_WORK(&new->g_work, kxfer_gate_work);
		list_add(&new->g_node, &kf->kf_gates);
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	return new;
}

/**
 * kxfer_file_free_gates - free a file's FENCE state
 * @kf: the file, its last reference gone (no job, no gate work left)
 */
void kxfer_file_free_gates(struct kxfer_file *kf)
{
	struct kxfer_gate *g, *tmp;

	list_for_each_entry_safe(g, tmp, &kf->kf_gates, g_node) {
		WARN_ON_ONCE(g->g_inflight || !list_empty(&g->g_held));
		kxfer_session_put(g->g_sess);
		kfree(g);
	}
}

/* ---------------------------------------------------------------------- */
/* Building a job                                                          */
/* ---------------------------------------------------------------------- */

struct kxfer_plan_ctx {
	struct kxfer_pool	*pool;
	struct kxfer_rexport	*rx;
	bool			gap;	/* a remote offset outside every MR */
};

static u64 kxfer_local_run(void *ctx, u64 off)
{
	struct kxfer_plan_ctx *c = ctx;
	const struct kxfer_chunk *ch = kxfer_pool_chunk_at(c->pool, off);

	return ch->kc_off + ch->kc_len - off;
}

static const struct kxfer_rmr *kxfer_rmr_at(const struct kxfer_rexport *rx,
					    u64 off)
{
	unsigned int lo = 0, hi = rx->rx_nmrs;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct kxfer_rmr *m = &rx->rx_mrs[mid];

		if (off < m->rm_off)
			hi = mid;
		else if (off - m->rm_off >= m->rm_len)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

static u64 kxfer_remote_run(void *ctx, u64 off)
{
	struct kxfer_plan_ctx *c = ctx;
	const struct kxfer_rmr *m = kxfer_rmr_at(c->rx, off);

	if (!m) {
		/* A hole in the advertised MR table: the planner stops. */
		c->gap = true;
		return 0;
	}
	return m->rm_off + m->rm_len - off;
}

static const u64 *kxfer_pool_dma(struct kxfer_pool *pool,
				 struct kxfer_device *kd)
{
	struct kxfer_pool_map *pm;
	const u64 *dma = NULL;

	kxfer_pool_map_device(pool, kd);
	mutex_lock(&pool->kp_map_lock);
	list_for_each_entry(pm, &pool->kp_maps, pm_node)
		if (pm->pm_dev == kd)
			dma = pm->pm_dma;
	mutex_unlock(&pool->kp_map_lock);
	/*
	 * The mapping lives until the device goes, and the device removal
	 * ends every session on it (so this job) first.
	 */
	return dma;
}

static struct kxfer_rexport *kxfer_rexport_find(struct kxfer_session *s,
						const char *name)
{
	struct kxfer_rexport *rx;

	lockdep_assert_held(&s->s_mutex);
	list_for_each_entry(rx, &s->s_rexports, rx_node)
		if (!strcmp(rx->rx_name, name) && rx->rx_have == rx->rx_nmrs)
			return rx;
	return NULL;
}

static bool kxfer_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/*
 * A CAS or FADD job: one signaled atomic WR from the 8 bytes at the
 * segment's local offset (where the old value lands) to the remote's.
 * The segment is checked already: 8 bytes, aligned, inside both sides.
 */
static int kxfer_job_build_atomic(struct kxfer_session *s,
				  struct kxfer_pool *pool, const u64 *dma,
				  const struct kxfer_rexport *rx,
				  const struct kxfer_job *uj,
				  const struct kxfer_plan_seg *seg,
				  struct kxfer_task **out)
{
	const struct kxfer_rmr *m = kxfer_rmr_at(rx, seg->remote_off);
	const struct kxfer_chunk *c = kxfer_pool_chunk_at(pool,
							  seg->local_off);
	struct kxfer_job_batch *b;
	struct kxfer_job_part *p;
	struct ib_atomic_wr *aw;
	struct kxfer_task *job;
	struct ib_sge *sge;
	u64 raddr;

	if (!m || seg->remote_off + 8 > m->rm_off + m->rm_len)
		return -ERANGE;
	/* The NIC needs the remote address itself aligned. */
	raddr = m->rm_iova + (seg->remote_off - m->rm_off);
	if (raddr & 7)
		return -EINVAL;

	job = kvzalloc(sizeof(*job) + sizeof(*sge) + sizeof(*b), GFP_KERNEL);
	if (!job)
		return -ENOMEM;
	sge = (void *)(job + 1);
	b = (void *)(sge + 1);
	sge->addr = dma[c - pool->kp_chunks] + (seg->local_off - c->kc_off);
	sge->length = 8;
	sge->lkey = s->s_pd->local_dma_lkey;

	aw = &job->j_atomic;
	aw->wr.opcode = uj->op == KXFER_OP_CAS ? IB_WR_ATOMIC_CMP_AND_SWP :
						 IB_WR_ATOMIC_FETCH_AND_ADD;
	aw->wr.sg_list = sge;
	aw->wr.num_sge = 1;
	aw->wr.send_flags = IB_SEND_SIGNALED;
	aw->wr.wr_cqe = &b->b_cqe;
	aw->remote_addr = raddr;
	aw->rkey = m->rm_rkey;
	aw->compare_add = uj->compare_add;
	aw->swap = uj->swap;

	/* Spread over the QPs like the WRs of the other jobs. */
	p = &job->j_parts[0];
	p->p_job = job;
	p->p_qp = &s->s_qps[s->s_rotor++ % s->s_nqps];
	p->p_atomic = aw;
	p->p_nwr = 1;
	p->p_batch = 1;
	p->p_bytes = 8;
	p->p_batches = b;
	p->p_nbatches = 1;
	INIT_LIST_HEAD(&p->p_node);
	b->b_cqe.done = kxfer_job_wc_batch;
	b->b_part = p;
	b->b_nwr = 1;
	b->b_bytes = 8;
	job->j_err_cqe.done = kxfer_job_wc_error;
	atomic_set(&job->j_left, 1);
	job->j_nparts = 1;
	*out = job;
	return 0;
}

/*
 * A notification's message, and a notification alone: a WRITE without
 * a pool or segments.
 */
static int kxfer_job_check_notify(const struct kxfer_job *uj)
{
	if (uj->flags & KXFER_JOB_NOTIFY_MSG) {
		if (!(uj->flags & KXFER_JOB_NOTIFY) || !uj->notify_len ||
		    uj->notify_len > KXFER_NOTIFY_MSG_MAX)
			return -EINVAL;
	} else if (uj->notify_len) {
		return -EINVAL;
	}
	if (uj->nsegs)
		return 0;
	if (!(uj->flags & KXFER_JOB_NOTIFY) || uj->op != KXFER_OP_WRITE ||
	    uj->pool || uj->segs)
		return -EINVAL;
	return 0;
}

/*
 * Validate one job, build its work requests and start it.  The start
 * happens under s_mutex, so that the session cannot be torn down and
 * reconnected (new PD, new remote keys) between building and posting.
 * Return: 0, or the refusal's errno; then nothing was posted.
 */
static int kxfer_job_submit_one(struct kxfer_file *kf,
				const struct kxfer_job *uj)
{
	struct kxfer_plan_ctx pctx = {};
	struct kxfer_plan plan = {};
	struct kxfer_plan_seg *segs = NULL;
	const struct kxfer_plan_seg *order;
	struct kxfer_plan_scratch *scratch = NULL;
	bool overlap;
	bool bare = !uj->nsegs;		/* a notification alone */
	void *msg = NULL;
	struct kxfer_rhandle *rh;
	struct kxfer_session *s;
	struct kxfer_pool *pool;
	struct kxfer_task *job = NULL;
	struct kxfer_gate *gate;
	u32 i, nq, rotor, counts[KXFER_MAX_QPS] = {}, fill[KXFER_MAX_QPS] = {};
	bool atomic = uj->op == KXFER_OP_CAS || uj->op == KXFER_OP_FADD;
	u32 need, batch;
	u64 wr_max;
	bool hold;
	unsigned long flags;
	struct ib_rdma_wr *wrs;
	struct ib_sge *sges;
	struct kxfer_job_batch *batches;
	const u64 *dma;
	u64 total = 0;
	size_t size;
	int ret;

	switch (uj->op) {
	case KXFER_OP_WRITE:
		need = KXFER_ACCESS_WRITE;
		break;
	case KXFER_OP_READ:
		need = KXFER_ACCESS_READ;
		break;
	case KXFER_OP_CAS:
	case KXFER_OP_FADD:
		need = KXFER_ACCESS_ATOMIC;
		break;
	default:
		return -EINVAL;
	}
	if ((uj->flags & ~KXFER_JOB_FLAGS) || uj->reserved ||
	    kxfer_job_check_notify(uj))
		return -EINVAL;
	/* Operands only where the op has them. */
	if ((!atomic && uj->compare_add) ||
	    (uj->op != KXFER_OP_CAS && uj->swap))
		return -EINVAL;
	if (uj->nsegs > kxfer_max_segments || (atomic && uj->nsegs != 1))
		return -EINVAL;

	if (uj->flags & KXFER_JOB_NOTIFY_MSG) {
		msg = memdup_user(u64_to_user_ptr(uj->notify_value),
				  uj->notify_len);
		if (IS_ERR(msg))
			return PTR_ERR(msg);
	}
	if (bare)
		goto handles;
	segs = kvmalloc_array(uj->nsegs, sizeof(*segs), GFP_KERNEL);
	ret = -ENOMEM;
	if (!segs)
		goto out_segs;
	/* struct kxfer_segment and struct kxfer_plan_seg share one layout */
	BUILD_BUG_ON(sizeof(struct kxfer_segment) != sizeof(*segs));
	if (copy_from_user(segs, u64_to_user_ptr(uj->segs),
			   (size_t)uj->nsegs * sizeof(*segs))) {
		ret = -EFAULT;
		goto out_segs;
	}
	if (atomic && (segs[0].len != 8 || (segs[0].local_off & 7) ||
		       (segs[0].remote_off & 7))) {
		ret = -EINVAL;
		goto out_segs;
	}

handles:
	/* Handles: each lookup takes its own reference. */
	xa_lock(&kf->kf_pools);
	pool = uj->pool ? xa_load(&kf->kf_pools, uj->pool) : NULL;
	if (pool)
		kref_get(&pool->kp_ref);
	xa_unlock(&kf->kf_pools);
	if (!pool && !bare) {
		ret = -ENOENT;
		goto out_segs;
	}
	xa_lock(&kf->kf_peers);
	s = uj->peer ? xa_load(&kf->kf_peers, uj->peer) : NULL;
	if (s)
		kxfer_session_get(s);
	xa_unlock(&kf->kf_peers);
	if (!s) {
		ret = -ENOENT;
		goto out_pool;
	}
	gate = kxfer_gate_get(kf, s);
	if (!gate) {
		ret = -ENOMEM;
		goto out_sess;
	}

	mutex_lock(&s->s_mutex);
	xa_lock(&kf->kf_remotes);
	rh = uj->remote ? xa_load(&kf->kf_remotes, uj->remote) : NULL;
	ret = !rh ? -ENOENT : (rh->rh_sess != s ? -EINVAL : 0);
	xa_unlock(&kf->kf_remotes);
	if (ret)
		goto out_unlock;
	/* Handles go only at release(), which no ioctl can overlap. */
	ret = -ENOTCONN;
	if (s->s_state != KXFER_PEER_UP)
		goto out_unlock;
	pctx.rx = kxfer_rexport_find(s, rh->rh_name);
	ret = -ESTALE;
	if (!pctx.rx || pctx.rx->rx_gen != rh->rh_gen)
		goto out_unlock;
	ret = -EACCES;
	if (!(pctx.rx->rx_access & need))
		goto out_unlock;
	/* A peer whose kxfer is older cannot take a message. */
	ret = -EOPNOTSUPP;
	if (msg && !(s->s_peer_features & KXFER_WIRE_F_NOTIFY_MSG))
		goto out_unlock;

	for (i = 0; i < uj->nsegs; i++) {
		u64 lend, rend;

		if (!segs[i].len) {
			ret = -EINVAL;
			goto out_unlock;
		}
		if (check_add_overflow(segs[i].local_off, segs[i].len, &lend) ||
		    lend > pool->kp_size ||
		    check_add_overflow(segs[i].remote_off, segs[i].len, &rend) ||
		    rend > pctx.rx->rx_len ||
		    check_add_overflow(total, segs[i].len, &total)) {
			ret = -ERANGE;
			goto out_unlock;
		}
	}

	if (bare) {
		job = kvzalloc(sizeof(*job), GFP_KERNEL);
		ret = -ENOMEM;
		if (!job)
			goto out_unlock;
		nq = 0;
		goto ready;
	}
	dma = kxfer_pool_dma(pool, s->s_dev);
	ret = -ENOMEM;
	if (!dma)
		goto out_unlock;
	if (atomic) {
		ret = kxfer_job_build_atomic(s, pool, dma, pctx.rx, uj, segs,
					     &job);
		if (ret)
			goto out_unlock;
		plan.nwr = 1;
		nq = 1;
		goto ready;
	}

	pctx.pool = pool;
	/* The QPs were made with min(max_send_sge, 32); READs need max_sge_rd. */
	plan.max_sge = min_t(u32, s->s_dev->kd_ibdev->attrs.max_send_sge, 32);
	if (uj->op == KXFER_OP_READ)
		plan.max_sge = min_t(u32, plan.max_sge,
				     s->s_dev->kd_ibdev->attrs.max_sge_rd);
	plan.max_sge = max_t(u32, plan.max_sge, 1);
	plan.stripe = kxfer_stripe;
	plan.local_run = kxfer_local_run;
	plan.remote_run = kxfer_remote_run;
	plan.ctx = &pctx;
	/* In remote order unless that could change the result (plan.c). */
	order = kxfer_plan_order(segs, uj->nsegs, uj->op == KXFER_OP_READ,
				 NULL, &overlap);
	if (!order) {
		scratch = kvmalloc(struct_size(scratch, segs,
					       2 * (size_t)uj->nsegs),
				   GFP_KERNEL);
		ret = -ENOMEM;
		if (!scratch)
			goto out_unlock;
		order = kxfer_plan_order(segs, uj->nsegs,
					 uj->op == KXFER_OP_READ, scratch,
					 &overlap);
	}
	ret = kxfer_plan_count(&plan, order, uj->nsegs);
	if (pctx.gap)
		ret = -ERANGE;
	/* The job's memory grows with its WRs: bound it. */
	if (!ret && plan.nwr > KXFER_JOB_MAX_WRS)
		ret = -E2BIG;
	if (ret)
		goto out_unlock;

	/* Striped over the QPs unless the destinations overlap. */
	nq = overlap ? 1 : s->s_nqps;

	size = sizeof(*job);
	size += (size_t)plan.nwr * sizeof(*wrs);
	size += (size_t)plan.nsge * sizeof(*sges);
	/* A WR is at most a stripe: batches of about BATCH_BYTES at most. */
	wr_max = max_t(u64, 1, min_t(u64, total, plan.stripe));
	batch = clamp_t(u64, KXFER_JOB_BATCH_BYTES / wr_max, 1,
			KXFER_JOB_BATCH);
	size += (size_t)(DIV_ROUND_UP(plan.nwr, batch) + nq) *
		sizeof(*batches);
	size += (size_t)plan.nwr * sizeof(struct kxfer_plan_wr);
	size += (size_t)plan.nsge * sizeof(struct kxfer_plan_sge);
	job = kvzalloc(size, GFP_KERNEL | __GFP_NOWARN);
	ret = -ENOMEM;
	if (!job)
		goto out_unlock;
	wrs = (void *)(job + 1);
	sges = (void *)(wrs + plan.nwr);
	batches = (void *)(sges + plan.nsge);
	plan.wrs = (void *)(batches + DIV_ROUND_UP(plan.nwr, batch) +
			    nq);
	plan.wr_cap = plan.nwr;
	plan.sges = (void *)(plan.wrs + plan.nwr);
	plan.sge_cap = plan.nsge;
	memset(&plan.pos, 0, sizeof(plan.pos));
	ret = kxfer_plan_build(&plan, order, uj->nsegs);
	if (ret || pctx.gap) {
		ret = ret ?: -ERANGE;
		goto out_job;
	}

	/* Round-robin WRs over the QPs, starting where the last job left. */
	rotor = s->s_rotor;
	s->s_rotor += plan.nwr;
	for (i = 0; i < plan.nwr; i++)
		counts[(rotor + i) % nq]++;
	for (i = 0; i < nq; i++) {
		struct kxfer_job_part *p = &job->j_parts[i];

		p->p_wrs = wrs;
		p->p_nwr = counts[i];
		wrs += counts[i];
		p->p_job = job;
		p->p_qp = &s->s_qps[i];
		INIT_LIST_HEAD(&p->p_node);
	}
	for (i = 0; i < plan.nwr; i++) {
		const struct kxfer_plan_wr *pw = &plan.wrs[i];
		u32 q = (rotor + i) % nq, k;
		struct kxfer_job_part *p = &job->j_parts[q];
		struct ib_rdma_wr *wr = &p->p_wrs[fill[q]];
		const struct kxfer_rmr *m = kxfer_rmr_at(pctx.rx,
							 pw->remote_off);

		for (k = 0; k < pw->nsge; k++) {
			const struct kxfer_plan_sge *ps =
				&plan.sges[pw->first_sge + k];
			const struct kxfer_chunk *c =
				kxfer_pool_chunk_at(pool, ps->local_off);

			p->p_bytes += ps->len;
			sges[pw->first_sge + k].addr =
				dma[c - pool->kp_chunks] +
				(ps->local_off - c->kc_off);
			sges[pw->first_sge + k].length = ps->len;
			sges[pw->first_sge + k].lkey = s->s_pd->local_dma_lkey;
		}
		wr->wr.opcode = uj->op == KXFER_OP_WRITE ? IB_WR_RDMA_WRITE :
							    IB_WR_RDMA_READ;
		wr->wr.sg_list = &sges[pw->first_sge];
		wr->wr.num_sge = pw->nsge;
		wr->wr.wr_cqe = &job->j_err_cqe;
		wr->remote_addr = m->rm_iova + (pw->remote_off - m->rm_off);
		wr->rkey = m->rm_rkey;
		fill[q]++;
	}

	/* Batches: the last WR of each is signaled with the batch's CQE. */
	job->j_err_cqe.done = kxfer_job_wc_error;
	for (i = 0; i < nq; i++) {
		struct kxfer_job_part *p = &job->j_parts[i];
		u32 w, k;

		p->p_batches = batches;
		p->p_batch = batch;
		p->p_nbatches = DIV_ROUND_UP(p->p_nwr, batch);
		batches += p->p_nbatches;
		for (w = 0; w < p->p_nwr; w++) {
			struct kxfer_job_batch *b =
				&p->p_batches[w / batch];

			b->b_nwr++;
			for (k = 0; k < p->p_wrs[w].wr.num_sge; k++)
				b->b_bytes += p->p_wrs[w].wr.sg_list[k].length;
			if (w + 1 < p->p_nwr)
				p->p_wrs[w].wr.next = &p->p_wrs[w + 1].wr;
			if (w + 1 == p->p_nwr || (w + 1) % batch == 0) {
				b->b_cqe.done = kxfer_job_wc_batch;
				b->b_part = p;
				p->p_wrs[w].wr.wr_cqe = &b->b_cqe;
				p->p_wrs[w].wr.send_flags = IB_SEND_SIGNALED;
			}
		}
		atomic_add(p->p_nbatches, &job->j_left);
	}
	job->j_nparts = nq;
ready:
	INIT_LIST_HEAD(&job->j_notify_node);
	job->j_notify = uj->flags & KXFER_JOB_NOTIFY;
	job->j_op = uj->op;
	job->j_notify_value = msg ? 0 : uj->notify_value;
	job->j_msg = msg;
	job->j_msg_len = msg ? uj->notify_len : 0;
	job->j_rgen = pctx.rx->rx_gen;
	memcpy(job->j_rname, pctx.rx->rx_name, sizeof(job->j_rname));
	job->j_user_data = uj->user_data;
	job->j_bytes = total;
	job->j_sess = s;
	job->j_pool = pool;
	kref_get(&kf->kf_ref);
	job->j_file = kf;
	job->j_gate = gate;
	job->j_fence = uj->flags & KXFER_JOB_FENCE;
	job->j_conn_gen = s->s_conn_gen;
	INIT_LIST_HEAD(&job->j_held_node);

	atomic64_inc(&s->s_stats.jobs);
	atomic64_add(total, &s->s_stats.bytes);
	atomic64_add(uj->nsegs, &s->s_stats.segs);
	atomic64_add(plan.nwr, &s->s_stats.wrs);
	trace_job_submit(s->s_id, uj->user_data, uj->op, uj->flags, uj->nsegs,
			 plan.nwr, nq, total);

	/* Behind a FENCE that waits, or a FENCE with jobs ahead: wait. */
	spin_lock_irqsave(&kf->kf_lock, flags);
	hold = !list_empty(&gate->g_held) ||
	       (job->j_fence && gate->g_inflight);
	if (hold)
		list_add_tail(&job->j_held_node, &gate->g_held);
	else
		gate->g_inflight++;
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (!hold)
		kxfer_job_start(job);
	mutex_unlock(&s->s_mutex);
	kvfree(scratch);
	kvfree(segs);
	return 0;

out_job:
	kvfree(job);
out_unlock:
	mutex_unlock(&s->s_mutex);
out_sess:
	kxfer_session_put(s);
out_pool:
	if (pool)
		kxfer_pool_put(pool);
out_segs:
	kvfree(scratch);
	kvfree(segs);
	kfree(msg);
	return ret;
}

/**
 * kxfer_ioc_submit - KXFER_IOC_SUBMIT
 * @kf: the file
 * @uarg: struct kxfer_submit in user memory
 *
 * Return: 0 if at least one job (or every job) was accepted, else the
 * first refusal's negative errno.  May sleep.
 */
long kxfer_ioc_submit(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_submit sub;
	int err = 0;
	u32 i;

	if (copy_from_user(&sub, uarg, sizeof(sub)))
		return -EFAULT;
	/* Where the answer goes must be writable before a job is taken. */
	if (put_user(0U, &((struct kxfer_submit __user *)uarg)->accepted))
		return -EFAULT;
	i = 0;
	if (sub.flags || !kxfer_zero(sub.reserved, sizeof(sub.reserved)) ||
	    !sub.njobs || sub.njobs > kxfer_max_jobs_per_submit)
		err = -EINVAL;

	for (; !err && i < sub.njobs; i++) {
		struct kxfer_job uj;
		unsigned long flags;

		if (copy_from_user(&uj, u64_to_user_ptr(sub.jobs) +
				   (size_t)i * sizeof(uj), sizeof(uj))) {
			err = -EFAULT;
			break;
		}
		/* Room for its event, whatever happens to it. */
		spin_lock_irqsave(&kf->kf_lock, flags);
		if (kf->kf_inflight + (kf->kf_head - kf->kf_tail) >=
		    kf->kf_ring_size)
			err = -EAGAIN;
		else
			kf->kf_inflight++;
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		if (err)
			break;

		err = kxfer_job_submit_one(kf, &uj);
		if (err) {
			spin_lock_irqsave(&kf->kf_lock, flags);
			kf->kf_inflight--;
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			break;
		}
	}

	sub.accepted = i;
	sub.error = err;
	if (copy_to_user(uarg, &sub, sizeof(sub)))
		return i ? 0 : -EFAULT;	/* accepted jobs will still complete */
	return i ? 0 : err;
}

/* ---------------------------------------------------------------------- */
/* Cancelling                                                              */
/* ---------------------------------------------------------------------- */

static bool kxfer_cancel_match(const struct kxfer_cancel *c,
			       const struct kxfer_task *job)
{
	return !((job->j_user_data ^ c->user_data) & c->mask);
}

/* Jobs held behind a FENCE: never started, they end here. */
static u32 kxfer_cancel_held(struct kxfer_file *kf,
			     const struct kxfer_cancel *c)
{
	struct kxfer_task *job, *tmp;
	struct kxfer_gate *g;
	unsigned long flags;
	LIST_HEAD(taken);
	u32 n = 0;

	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node)
		list_for_each_entry_safe(job, tmp, &g->g_held, j_held_node) {
			if (!kxfer_cancel_match(c, job))
				continue;
			/* As kxfer_gate_work() does: it counts until it ends. */
			list_move_tail(&job->j_held_node, &taken);
			g->g_inflight++;
		}
	spin_unlock_irqrestore(&kf->kf_lock, flags);

	list_for_each_entry_safe(job, tmp, &taken, j_held_node) {
		list_del_init(&job->j_held_node);
		kxfer_job_abort(job, -ECANCELED);
		n++;
	}
	return n;
}

/* Parts waiting whole in a QP's backlog: nothing of them was posted. */
static u32 kxfer_cancel_backlog(struct kxfer_file *kf, struct kxfer_session *s,
				const struct kxfer_cancel *c)
{
	struct kxfer_job_part *p, *tmp;
	unsigned long flags;
	LIST_HEAD(taken);
	u32 i, n = 0;

	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		list_for_each_entry_safe(p, tmp, &qp->q_backlog, p_node)
			/*
			 * Not a NOTIFY by WRITE_WITH_IMM: its description is
			 * on its way, and the peer would wait for the other
			 * half for ever.
			 */
			if (p->p_job->j_file == kf && !p->p_posted &&
			    !p->p_broken && !p->p_job->j_imm &&
			    kxfer_cancel_match(c, p->p_job))
				list_move_tail(&p->p_node, &taken);
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
	}
	list_for_each_entry_safe(p, tmp, &taken, p_node) {
		list_del_init(&p->p_node);
		kxfer_job_set_error(p->p_job, -ECANCELED, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(p->p_job, p->p_nbatches);
		n++;
	}
	return n;
}

/**
 * kxfer_ioc_cancel - KXFER_IOC_CANCEL
 * @kf: the file
 * @uarg: struct kxfer_cancel in user memory
 *
 * Return: 0, %-EFAULT or %-EINVAL.  May sleep.
 */
long kxfer_ioc_cancel(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_session **sess;
	struct kxfer_cancel c;
	unsigned int ns = 0, i;
	struct kxfer_gate *g;
	unsigned long flags;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (c.flags || !kxfer_zero(c.reserved, sizeof(c.reserved)))
		return -EINVAL;

	c.count = kxfer_cancel_held(kf, &c);

	/* The sessions this file used: a gate each, never freed before it. */
	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node)
		ns++;
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	sess = kcalloc(ns, sizeof(*sess), GFP_KERNEL);
	if (ns && !sess)
		return -ENOMEM;
	i = 0;
	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node) {
		if (i == ns)
			break;
		kxfer_session_get(g->g_sess);
		sess[i++] = g->g_sess;
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	ns = i;
	for (i = 0; i < ns; i++) {
		c.count += kxfer_cancel_backlog(kf, sess[i], &c);
		kxfer_session_put(sess[i]);
	}
	kfree(sess);
	return copy_to_user(uarg, &c, sizeof(c)) ? -EFAULT : 0;
}

/* ---------------------------------------------------------------------- */
/* Events                                                                  */
/* ---------------------------------------------------------------------- */

static unsigned int kxfer_events_ready(struct kxfer_file *kf)
{
	return READ_ONCE(kf->kf_head) - READ_ONCE(kf->kf_tail);
}

/*
 * A NOTIFY event's message goes to the reap's buffer.  -ENOSPC when it
 * does not fit after events already taken by this call: the next call
 * gets it; the first event of a call is never held back (its message is
 * lost, KXFER_MSG_NONE), so that a reader without room cannot stall.
 */
static int kxfer_reap_msg(struct kxfer_reap *r, struct kxfer_event *ev,
			  const void *msg, u32 *used)
{
	if (ev->type != KXFER_EV_NOTIFY || !ev->msg_len)
		return 0;
	if (!msg || !r->msgs || ev->msg_len > r->msgs_len - *used) {
		if (r->count)
			return -ENOSPC;
		ev->msg_off = KXFER_MSG_NONE;
		return 0;
	}
	if (copy_to_user(u64_to_user_ptr(r->msgs) + *used, msg, ev->msg_len))
		return -EFAULT;
	ev->msg_off = *used;
	*used += ev->msg_len;
	return 0;
}

/**
 * kxfer_ioc_reap - KXFER_IOC_REAP
 * @kf: the file
 * @uarg: struct kxfer_reap in user memory
 *
 * Return: 0, or a negative errno (%-EINTR if a signal came before @min
 * events; events already copied out are kept and reported in @count).
 * May sleep.
 */
long kxfer_ioc_reap(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_event __user *uev;
	u32 msgs_used = 0;
	struct kxfer_reap r;
	ktime_t deadline;
	long ret = 0;

	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	if ((r.flags & ~KXFER_REAP_BUSY_POLL) || r.reserved)
		return -EINVAL;
	if (!r.max || r.min > r.max)
		return -EINVAL;
	uev = u64_to_user_ptr(r.events);
	deadline = ktime_add_ns(ktime_get(), r.timeout_ns > 0 ? r.timeout_ns : 0);

	/* Wait for @min events, or the timeout, or a signal. */
	while (kxfer_events_ready(kf) < r.min && r.timeout_ns) {
		if (r.flags & KXFER_REAP_BUSY_POLL) {
			if (signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			if (r.timeout_ns > 0 && ktime_after(ktime_get(), deadline))
				break;
			cond_resched();
			continue;
		}
		if (r.timeout_ns < 0) {
			ret = wait_event_interruptible(kf->kf_wait,
						       kxfer_events_ready(kf) >= r.min);
			if (ret)
				ret = -EINTR;
		} else {
			ktime_t left = ktime_sub(deadline, ktime_get());

			if (ktime_to_ns(left) <= 0)
				break;
			ret = wait_event_interruptible_hrtimeout(kf->kf_wait,
								 kxfer_events_ready(kf) >= r.min,
								 left);
			if (ret == -ETIME)
				ret = 0;
			else if (ret)
				ret = -EINTR;
		}
		if (ret)
			break;
	}

	/* Copy out, then consume: an event is taken once it reached the user. */
	if (put_user(0U, &((struct kxfer_reap __user *)uarg)->count))
		return -EFAULT;
	mutex_lock(&kf->kf_reap_mutex);
	r.count = 0;
	while (r.count < r.max) {
		unsigned int tail = READ_ONCE(kf->kf_tail), slot;
		struct kxfer_event ev;
		unsigned long flags;
		int err;

		spin_lock_irqsave(&kf->kf_lock, flags);
		if (kf->kf_head == tail) {
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			break;
		}
		slot = tail & (kf->kf_ring_size - 1);
		ev = kf->kf_ring[slot];
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		/* Only the reaper, which we are, takes kf_msgs[slot]. */
		err = kxfer_reap_msg(&r, &ev, kf->kf_msgs[slot], &msgs_used);
		if (err == -ENOSPC)
			break;		/* the next call takes it */
		if (err || copy_to_user(&uev[r.count], &ev, sizeof(ev))) {
			ret = r.count ? ret : -EFAULT;
			break;
		}
		spin_lock_irqsave(&kf->kf_lock, flags);
		kf->kf_tail = tail + 1;
		kfree(kf->kf_msgs[slot]);
		kf->kf_msgs[slot] = NULL;
		kxfer_file_refill(kf);
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		r.count++;
	}
	mutex_unlock(&kf->kf_reap_mutex);

	if (r.count && ret == -EINTR)
		ret = 0;
	if (copy_to_user(uarg, &r, sizeof(r)))
		return -EFAULT;
	return ret;
}

/**
 * kxfer_file_poll - POLLIN when events are ready
 * @kf: the file's context
 * @filp: the file
 * @wait: poll table
 *
 * Return: the poll mask.
 */
__poll_t kxfer_file_poll(struct kxfer_file *kf, struct file *filp,
			 poll_table *wait)
{
	poll_wait(filp, &kf->kf_wait, wait);
	return kxfer_events_ready(kf) ? EPOLLIN | EPOLLRDNORM : 0;
}

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

/* ---------------------------------------------------------------------- */
/* Notifications                                                           */
/* ---------------------------------------------------------------------- */

/* A notification subscription of a file to a local export. */
struct kxfer_sub {
	struct list_head	sb_node;	/* on kxfer_subs */
	char			sb_export[KXFER_NAME_MAX];
	struct kxfer_file	*sb_file;	/* referenced */
	u32			sb_handle;
};

/* An event that waits outside the ring, which had no room for it. */
struct kxfer_note {
	struct list_head	n_node;
	struct kxfer_event	n_ev;
	void			*n_msg;		/* its message, or NULL */
};

#define KXFER_MAX_NOTES		65536	/* per file, past the ring */

static LIST_HEAD(kxfer_subs);
static DEFINE_MUTEX(kxfer_sub_mutex);	/* protects kxfer_subs */

/*
 * Post a NOTIFY event.  The ring keeps room for the completions of jobs
 * in flight, so a notification goes to the ring only when there is room
 * beyond those, else to the file's overflow list; past KXFER_MAX_NOTES
 * unreaped notifications the reader is not keeping up and the event is
 * dropped, loudly.
 */
static void kxfer_file_post_note(struct kxfer_file *kf,
				 const struct kxfer_event *ev, void *msg)
{
	struct kxfer_note *n = NULL;
	unsigned long flags;
	bool dropped = false;

	spin_lock_irqsave(&kf->kf_lock, flags);
	if (list_empty(&kf->kf_notes) &&
	    kf->kf_inflight + (kf->kf_head - kf->kf_tail) < kf->kf_ring_size) {
		unsigned int slot = kf->kf_head++ & (kf->kf_ring_size - 1);

		kf->kf_ring[slot] = *ev;
		kf->kf_msgs[slot] = msg;
	} else if (kf->kf_nnotes < KXFER_MAX_NOTES) {
		n = kmalloc(sizeof(*n), GFP_ATOMIC);
		if (n) {
			n->n_ev = *ev;
			n->n_msg = msg;
			list_add_tail(&n->n_node, &kf->kf_notes);
			kf->kf_nnotes++;
		} else {
			dropped = true;
		}
	} else {
		dropped = true;
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (dropped) {
		kfree(msg);
		pr_warn_ratelimited("kxfer: a notification was dropped: its reader is not reaping\n");
	}
	wake_up_interruptible(&kf->kf_wait);
}

/* Move waiting notifications into the ring.  Caller holds kf_lock. */
static void kxfer_file_refill(struct kxfer_file *kf)
{
	struct kxfer_note *n;

	while ((n = list_first_entry_or_null(&kf->kf_notes, struct kxfer_note,
					     n_node)) &&
	       kf->kf_inflight + (kf->kf_head - kf->kf_tail) <
	       kf->kf_ring_size) {
		unsigned int slot = kf->kf_head++ & (kf->kf_ring_size - 1);

		kf->kf_ring[slot] = n->n_ev;
		kf->kf_msgs[slot] = n->n_msg;
		list_del(&n->n_node);
		kf->kf_nnotes--;
		kfree(n);
	}
}

/**
 * kxfer_file_free_notes - free notifications nobody reaped, and their
 *	messages (last put)
 * @kf: the file's context
 */
void kxfer_file_free_notes(struct kxfer_file *kf)
{
	struct kxfer_note *n, *tmp;

	unsigned int i;

	list_for_each_entry_safe(n, tmp, &kf->kf_notes, n_node) {
		kfree(n->n_msg);
		kfree(n);
	}
	INIT_LIST_HEAD(&kf->kf_notes);
	for (i = 0; i < kf->kf_ring_size; i++)
		kfree(kf->kf_msgs[i]);
}

/**
 * kxfer_notify_deliver - a peer's NOTIFY job landed in a local export
 * @s: the session it came over
 * @export: the local export's name (checked by wire.c)
 * @value: the job's notify value
 * @bytes: the job's bytes
 * @msg: the job's message (checked by wire.c), or %NULL
 * @msg_len: its bytes
 *
 * One event to each file subscribed to @export, each with its own copy
 * of @msg (a subscriber without memory for it gets the event without it).
 * Caller holds s_mutex.
 */
void kxfer_notify_deliver(struct kxfer_session *s, const char *export,
			  u64 value, u64 bytes, const void *msg, u32 msg_len)
{
	struct kxfer_event ev = {
		.type = KXFER_EV_NOTIFY,
		.user_data = value,
		.bytes = bytes,
		.peer = s->s_id,
		.msg_len = msg_len,
	};
	struct kxfer_sub *sb;

	atomic64_inc(&s->s_stats.notify_recv);
	trace_notify(s->s_id, false, export, value, bytes);
	mutex_lock(&kxfer_sub_mutex);
	list_for_each_entry(sb, &kxfer_subs, sb_node) {
		void *copy = NULL;

		if (strcmp(sb->sb_export, export))
			continue;
		ev.sub = sb->sb_handle;
		if (msg_len) {
			copy = kmemdup(msg, msg_len, GFP_KERNEL);
			ev.msg_off = copy ? 0 : KXFER_MSG_NONE;
		}
		kxfer_file_post_note(sb->sb_file, &ev, copy);
	}
	mutex_unlock(&kxfer_sub_mutex);
}

/**
 * kxfer_ioc_notify_sub - KXFER_IOC_NOTIFY_SUBSCRIBE
 * @kf: the file
 * @uarg: struct kxfer_notify_sub in user memory
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT (no such export), %-EACCES (the
 * caller may not attach the export's pool), %-EMFILE.  May sleep.
 */
long kxfer_ioc_notify_sub(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_notify_sub ns;
	struct kxfer_export *exp;
	struct kxfer_sub *sb;
	u32 handle;
	int ret;

	if (copy_from_user(&ns, uarg, sizeof(ns)))
		return -EFAULT;
	if (ns.flags || !kxfer_zero(ns.reserved, sizeof(ns.reserved)) ||
	    !ns.export[0] || !memchr(ns.export, '\0', sizeof(ns.export)))
		return -EINVAL;

	mutex_lock(&kxfer_obj_mutex);
	ret = -ENOENT;
	list_for_each_entry(exp, &kxfer_exports, ke_node) {
		if (strcmp(exp->ke_name, ns.export))
			continue;
		ret = kxfer_pool_check_access(exp->ke_pool);
		break;
	}
	mutex_unlock(&kxfer_obj_mutex);
	if (ret)
		return ret;

	sb = kzalloc(sizeof(*sb), GFP_KERNEL);
	if (!sb)
		return -ENOMEM;
	strscpy(sb->sb_export, ns.export, sizeof(sb->sb_export));
	kref_get(&kf->kf_ref);
	sb->sb_file = kf;
	/*
	 * Complete before the handle is visible: another thread may
	 * UNSUBSCRIBE it (by guessing) the moment xa_alloc() returns, and
	 * kxfer_sub_destroy() takes kxfer_sub_mutex, held here until the
	 * subscription is on the list.
	 */
	mutex_lock(&kxfer_sub_mutex);
	ret = xa_alloc(&kf->kf_subs, &handle, sb, XA_LIMIT(1, 4096),
		       GFP_KERNEL);
	if (ret) {
		mutex_unlock(&kxfer_sub_mutex);
		kxfer_file_put(kf);
		kfree(sb);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	sb->sb_handle = handle;
	list_add_tail(&sb->sb_node, &kxfer_subs);
	mutex_unlock(&kxfer_sub_mutex);

	ns.handle = handle;
	if (copy_to_user(uarg, &ns, sizeof(ns)))
		return -EFAULT;	/* subscribed all the same; close() ends it */
	return 0;
}

static void kxfer_sub_destroy(struct kxfer_sub *sb)
{
	mutex_lock(&kxfer_sub_mutex);
	list_del(&sb->sb_node);
	mutex_unlock(&kxfer_sub_mutex);
	kxfer_file_put(sb->sb_file);
	kfree(sb);
}

/**
 * kxfer_ioc_notify_unsub - KXFER_IOC_NOTIFY_UNSUBSCRIBE
 * @kf: the file
 * @uarg: struct kxfer_notify_sub in user memory (handle, flags, reserved)
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT.  May sleep.
 */
long kxfer_ioc_notify_unsub(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_notify_sub ns;
	struct kxfer_sub *sb;

	if (copy_from_user(&ns, uarg, sizeof(ns)))
		return -EFAULT;
	if (ns.flags || !kxfer_zero(ns.reserved, sizeof(ns.reserved)))
		return -EINVAL;
	sb = ns.handle ? xa_erase(&kf->kf_subs, ns.handle) : NULL;
	if (!sb)
		return -ENOENT;
	kxfer_sub_destroy(sb);
	return 0;
}

/**
 * kxfer_file_drop_subs - end every subscription of a file (close)
 * @kf: the file
 */
void kxfer_file_drop_subs(struct kxfer_file *kf)
{
	struct kxfer_sub *sb;
	unsigned long h;

	xa_for_each(&kf->kf_subs, h, sb) {
		xa_erase(&kf->kf_subs, h);
		kxfer_sub_destroy(sb);
	}
}

/**
 * kxfer_jobs_flush - wait until every finished job is freed (unload)
 */
void kxfer_jobs_flush(void)
{
	flush_work(&kxfer_job_free);
}
