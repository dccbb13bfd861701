// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: jobs, the data path (DESIGN §4).
 *
 * A job moves the bytes of an array of segments between an attached
 * pool and a remote export of one peer, with one-sided RDMA WRITE or
 * READ.  In order:
 *
 * 1. Validate everything before anything is posted: op, flags, reserved
 *    fields, counts (kxfer_job_check), handles (kxfer_job_get_handles,
 *    kxfer_job_find_export), the access the op needs, every range inside
 *    the pool and the export, overflow-safe (kxfer_job_check_ranges).
 * 2. Plan (kxfer_job_plan, plan.c): merge segments contiguous on both
 *    sides, gather remote-contiguous ones into multi-SGE work requests,
 *    split at the stripe size, the local chunk and the remote MR
 *    boundaries.
 * 3. Stripe the WRs over the session's QPs (kxfer_job_stripe), each
 *    QP's share a "part" of the job; a job whose destination ranges
 *    overlap stays on one QP, so that its writes land in order.  Each
 *    part is cut into batches (kxfer_job_build_batches) of up to
 *    KXFER_JOB_BATCH WRs (fewer for big WRs: at most about
 *    KXFER_JOB_BATCH_BYTES, so that completions, which are also the
 *    session's sign of life, come often on a slow link) whose last WR
 *    alone is signaled; a part posts its batches as one chain (one
 *    doorbell) as far as send-queue slots allow, and waits on the QP's
 *    backlog, in submission order, for the rest (post.c).
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
#include "job.h"
#include "plan.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

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

struct kxfer_rexport *kxfer_rexport_find(struct kxfer_session *s,
					 const char *name)
{
	struct kxfer_rexport *rx;

	lockdep_assert_held(&s->s_mutex);
	list_for_each_entry(rx, &s->s_rexports, rx_node)
		if (!strcmp(rx->rx_name, name) && rx->rx_have == rx->rx_nmrs)
			return rx;
	return NULL;
}

/*
 * A job being built by kxfer_job_submit_one(): what each stage finds or
 * makes, for the stages after it.  The pool, session and gate are held
 * from kxfer_job_get_handles() on; the job, once made, takes them.
 */
struct kxfer_job_build {
	struct kxfer_file		*jb_file;
	const struct kxfer_job		*jb_uj;		/* the user's */
	u32				jb_need;	/* KXFER_ACCESS_* */
	bool				jb_atomic;	/* CAS or FADD */
	bool				jb_bare;	/* notification only */
	bool				jb_submit;	/* a user's, not a remake */
	void				*jb_msg;	/* NOTIFY_MSG's bytes */
	struct kxfer_plan_seg		*jb_segs;	/* jb_few if small */
	struct kxfer_plan_seg		jb_few[KXFER_FEW_SEGS];
	struct kxfer_pool		*jb_pool;	/* NULL when bare */
	struct kxfer_session		*jb_sess;	/* its rail, routed */
	struct kxfer_gate		*jb_gate;	/* busy */
	struct kxfer_rhandle		jb_rh;		/* a copy */
	/* from here on, found and made under s_mutex */
	struct kxfer_plan_ctx		jb_pctx;	/* its rx: the export */
	u64				jb_total;	/* bytes */
	struct kxfer_plan		jb_plan;
	const struct kxfer_plan_seg	*jb_order;	/* segments, planned */
	struct kxfer_plan_scratch	*jb_scratch;	/* if sorted */
	bool				jb_overlap;	/* targets overlap */
	const u64			*jb_dma;	/* pool's, on s_dev */
	struct kxfer_task		*jb_job;
	u32				jb_nq;		/* QPs striped over */
	u32				jb_batch;	/* WRs per batch */
	u32				jb_rotor;	/* its first WR's QP */
	/* in jb_job's allocation */
	struct ib_rdma_wr		*jb_wrs;
	struct ib_sge			*jb_sges;
	struct kxfer_job_batch		*jb_batches;
};

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
 * The job as the user gave it: its op (and the access that needs),
 * flags, rail, notification, the operands only where the op
 * has them, and its count of segments.  Return: 0 or %-EINVAL.
 */
static int kxfer_job_check(struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;

	switch (uj->op) {
	case KXFER_OP_WRITE:
		jb->jb_need = KXFER_ACCESS_WRITE;
		break;
	case KXFER_OP_READ:
		jb->jb_need = KXFER_ACCESS_READ;
		break;
	case KXFER_OP_CAS:
	case KXFER_OP_FADD:
		jb->jb_need = KXFER_ACCESS_ATOMIC;
		jb->jb_atomic = true;
		break;
	default:
		return -EINVAL;
	}
	jb->jb_bare = !uj->nsegs;
	if ((uj->flags & ~KXFER_JOB_FLAGS) || kxfer_job_check_notify(uj))
		return -EINVAL;
	/* A rail only with KXFER_JOB_RAIL; whether the peer has it, later. */
	if (uj->flags & KXFER_JOB_RAIL ? uj->rail >= KXFER_MAX_RAILS :
	    uj->rail)
		return -EINVAL;
	/* Operands only where the op has them. */
	if ((!jb->jb_atomic && uj->compare_add) ||
	    (uj->op != KXFER_OP_CAS && uj->swap))
		return -EINVAL;
	if (uj->nsegs > kxfer_max_segments ||
	    (jb->jb_atomic && uj->nsegs != 1))
		return -EINVAL;
	return 0;
}

/*
 * Copy in what the job points at: its notification's message and its
 * segments.  An atomic's one segment must be 8 aligned bytes.
 * Return: 0, %-EFAULT, %-ENOMEM or %-EINVAL; what was copied stays in
 * @jb for the caller to free.
 */
static int kxfer_job_copy_in(struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;
	struct kxfer_plan_seg *segs;
	void *msg;

	if (uj->flags & KXFER_JOB_NOTIFY_MSG) {
		msg = memdup_user(u64_to_user_ptr(uj->notify_value),
				  uj->notify_len);
		if (IS_ERR(msg))
			return PTR_ERR(msg);
		jb->jb_msg = msg;
	}
	if (jb->jb_bare)
		return 0;
	/* A small job's segments stay on the stack. */
	segs = uj->nsegs <= ARRAY_SIZE(jb->jb_few) ? jb->jb_few :
	       kvmalloc_array(uj->nsegs, sizeof(*segs), GFP_KERNEL);
	if (!segs)
		return -ENOMEM;
	jb->jb_segs = segs;
	/* struct kxfer_segment and struct kxfer_plan_seg share one layout */
	BUILD_BUG_ON(sizeof(struct kxfer_segment) != sizeof(*segs));
	if (copy_from_user(segs, u64_to_user_ptr(uj->segs),
			   (size_t)uj->nsegs * sizeof(*segs)))
		return -EFAULT;
	if (jb->jb_atomic && (segs[0].len != 8 || (segs[0].local_off & 7) ||
			      (segs[0].remote_off & 7)))
		return -EINVAL;
	return 0;
}

/* A pool the job held, when it will not run: its count, its reference. */
static void kxfer_job_pool_end(struct kxfer_pool *pool)
{
	if (!pool)
		return;
	kxfer_pool_job_end(pool);
	kxfer_pool_put(pool);
}

/*
 * The job's pool and peer handles, each lookup with its own reference,
 * and the file's gate for that session, busy until the job starts or
 * waits.  Return: 0, or %-ENOENT, %-ESTALE or %-ENOMEM with nothing
 * held.  Undone by kxfer_job_put_handles().
 */
static int kxfer_job_get_handles(struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;
	struct kxfer_file *kf = jb->jb_file;
	struct kxfer_session *s;
	struct kxfer_pool *pool;
	int ret;

	xa_lock(&kf->kf_pools);
	pool = uj->pool ? xa_load(&kf->kf_pools, uj->pool) : NULL;
	if (pool)
		kref_get(&pool->kp_ref);
	xa_unlock(&kf->kf_pools);
	if (!pool && !jb->jb_bare)
		return -ENOENT;
	/* Counted before its memory is looked at: see upool.c's revoke. */
	if (pool && !kxfer_pool_job_begin(pool)) {
		kxfer_pool_put(pool);
		return -ESTALE;
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
	jb->jb_gate = kxfer_gate_get(kf, s);
	if (!jb->jb_gate) {
		ret = -ENOMEM;
		goto out_sess;
	}
	jb->jb_pool = pool;
	jb->jb_sess = s;
	return 0;

out_sess:
	kxfer_session_put(s);
out_pool:
	kxfer_job_pool_end(pool);
	return ret;
}

/* Drop what kxfer_job_get_handles() took, for a job that will not run. */
static void kxfer_job_put_handles(struct kxfer_job_build *jb)
{
	kxfer_gate_unbusy(jb->jb_file, jb->jb_gate);
	kxfer_session_put(jb->jb_sess);
	kxfer_job_pool_end(jb->jb_pool);
}

/*
 * The session the job is built and started on, locked: the peer handle's
 * own, or for a peer over several rails the rail kxfer_job_route()
 * chooses.  The remote handle, which must be of the same peer handle's
 * session, is copied first: another thread of the file may release it.
 * Return: 0 with jb_sess's s_mutex held (jb_sess may now be another
 * session, referenced in its stead), or %-ENOENT or %-EINVAL with
 * nothing locked.
 */
static int kxfer_job_lock_session(struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;
	struct kxfer_file *kf = jb->jb_file;
	struct kxfer_rhandle *rh;
	int ret;

	xa_lock(&kf->kf_remotes);
	rh = uj->remote ? xa_load(&kf->kf_remotes, uj->remote) : NULL;
	ret = !rh ? -ENOENT : (rh->rh_sess != jb->jb_sess ? -EINVAL : 0);
	if (!ret)
		jb->jb_rh = *rh;
	xa_unlock(&kf->kf_remotes);
	if (ret)
		return ret;
	return kxfer_job_route(&jb->jb_sess, jb->jb_pool, &jb->jb_rh, uj);
}

/*
 * The remote export the job's remote handle names, on the session as it
 * is now: up, on the connection the handle was looked up on, the export
 * still there, granting the access the op needs, and a peer that speaks
 * messages if the job has one.  Return: 0, %-ENOTCONN, %-ESTALE,
 * %-EACCES or %-EOPNOTSUPP.  Caller holds s_mutex.
 */
static int kxfer_job_find_export(struct kxfer_job_build *jb)
{
	const struct kxfer_rhandle *rh = &jb->jb_rh;
	struct kxfer_session *s = jb->jb_sess;
	struct kxfer_rexport *rx;

	lockdep_assert_held(&s->s_mutex);
	if (s->s_state != KXFER_PEER_UP)
		return -ENOTCONN;
	/*
	 * Looked up on another connection (other keys, and a peer that
	 * restarted may have reused the name and generation), or withdrawn.
	 * A peer over rails: on another of its logical sessions (rail.c).
	 */
	if (rh->rh_conn_gen != kxfer_peer_conn_gen(s))
		return -ESTALE;
	rx = kxfer_rexport_find(s, rh->rh_name);
	if (!rx || rx->rx_gen != rh->rh_gen)
		return -ESTALE;
	if (!(rx->rx_access & jb->jb_need))
		return -EACCES;
	/* A peer whose kxfer is older cannot take a message. */
	if (jb->jb_msg && !(s->s_peer_features & KXFER_WIRE_F_NOTIFY_MSG))
		return -EOPNOTSUPP;
	jb->jb_pctx.rx = rx;
	return 0;
}

/*
 * Every segment non-empty and inside both the pool and the export, with
 * overflow-safe arithmetic, and the job's bytes.  Return: 0, %-EINVAL
 * or %-ERANGE.
 */
static int kxfer_job_check_ranges(struct kxfer_job_build *jb)
{
	const struct kxfer_plan_seg *segs = jb->jb_segs;
	const struct kxfer_pool *pool = jb->jb_pool;	/* NULL: no segments */
	u64 rx_len = jb->jb_pctx.rx->rx_len;
	u64 total = 0;
	u32 i;

	for (i = 0; i < jb->jb_uj->nsegs; i++) {
		u64 lend, rend;

		if (!segs[i].len)
			return -EINVAL;
		if (check_add_overflow(segs[i].local_off, segs[i].len, &lend) ||
		    lend > pool->kp_size ||
		    check_add_overflow(segs[i].remote_off, segs[i].len, &rend) ||
		    rend > rx_len ||
		    check_add_overflow(total, segs[i].len, &total))
			return -ERANGE;
	}
	jb->jb_total = total;
	return 0;
}

/*
 * A CAS or FADD job: one signaled atomic WR from the 8 bytes at the
 * segment's local offset (where the old value lands) to the remote's.
 * The segment is checked already: 8 bytes, aligned, inside both sides.
 * Return: 0, %-ERANGE, %-EINVAL or %-ENOMEM.
 */
static int kxfer_job_build_atomic(struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;
	const struct kxfer_plan_seg *seg = &jb->jb_segs[0];
	struct kxfer_session *s = jb->jb_sess;
	struct kxfer_pool *pool = jb->jb_pool;
	const struct kxfer_rmr *m = kxfer_rmr_at(jb->jb_pctx.rx,
						 seg->remote_off);
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
	sge->addr = jb->jb_dma[c - pool->kp_chunks] +
		    (seg->local_off - c->kc_off);
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
	jb->jb_job = job;
	return 0;
}

/*
 * Plan the job (plan.c) as far as counting its WRs and SGEs, in remote
 * order unless that could change the result.  Return: 0, %-ENOMEM,
 * %-ERANGE (a segment over a hole between the export's MRs) or %-E2BIG.
 */
static int kxfer_job_plan(struct kxfer_job_build *jb)
{
	struct ib_device *ibdev = jb->jb_sess->s_dev->kd_ibdev;
	bool read = jb->jb_uj->op == KXFER_OP_READ;
	struct kxfer_plan *plan = &jb->jb_plan;
	u32 nsegs = jb->jb_uj->nsegs;
	int ret;

	jb->jb_pctx.pool = jb->jb_pool;
	/* The QPs were made with min(max_send_sge, 32); READs need max_sge_rd. */
	plan->max_sge = min_t(u32, ibdev->attrs.max_send_sge, 32);
	if (read)
		plan->max_sge = min_t(u32, plan->max_sge,
				      ibdev->attrs.max_sge_rd);
	plan->max_sge = max_t(u32, plan->max_sge, 1);
	plan->stripe = kxfer_stripe;
	plan->local_run = kxfer_local_run;
	plan->remote_run = kxfer_remote_run;
	plan->ctx = &jb->jb_pctx;

	jb->jb_order = kxfer_plan_order(jb->jb_segs, nsegs, read, NULL,
					&jb->jb_overlap);
	if (!jb->jb_order) {
		jb->jb_scratch = kvmalloc(struct_size(jb->jb_scratch, segs,
						      2 * (size_t)nsegs),
					  GFP_KERNEL);
		if (!jb->jb_scratch)
			return -ENOMEM;
		jb->jb_order = kxfer_plan_order(jb->jb_segs, nsegs, read,
						jb->jb_scratch,
						&jb->jb_overlap);
	}
	ret = kxfer_plan_count(plan, jb->jb_order, nsegs);
	if (jb->jb_pctx.gap)
		ret = -ERANGE;
	/* The job's memory grows with its WRs: bound it. */
	if (!ret && plan->nwr > KXFER_JOB_MAX_WRS)
		ret = -E2BIG;
	return ret;
}

/*
 * One allocation for the job, its WRs, SGEs and batches, and the plan's
 * WRs and SGEs behind them, sized by kxfer_job_plan()'s count.
 * Return: 0 or %-ENOMEM.
 */
static int kxfer_job_alloc(struct kxfer_job_build *jb)
{
	struct kxfer_plan *plan = &jb->jb_plan;
	struct kxfer_task *job;
	u32 nbatches;
	size_t size;
	u64 wr_max;

	/* Striped over the QPs unless the destinations overlap. */
	jb->jb_nq = jb->jb_overlap ? 1 : jb->jb_sess->s_nqps;
	/* A WR is at most a stripe: batches of about BATCH_BYTES at most. */
	wr_max = max_t(u64, 1, min_t(u64, jb->jb_total, plan->stripe));
	jb->jb_batch = clamp_t(u64, KXFER_JOB_BATCH_BYTES / wr_max, 1,
			       KXFER_JOB_BATCH);
	nbatches = DIV_ROUND_UP(plan->nwr, jb->jb_batch) + jb->jb_nq;

	size = sizeof(*job);
	size += (size_t)plan->nwr * sizeof(*jb->jb_wrs);
	size += (size_t)plan->nsge * sizeof(*jb->jb_sges);
	size += (size_t)nbatches * sizeof(*jb->jb_batches);
	size += (size_t)plan->nwr * sizeof(struct kxfer_plan_wr);
	size += (size_t)plan->nsge * sizeof(struct kxfer_plan_sge);
	job = kvzalloc(size, GFP_KERNEL | __GFP_NOWARN);
	if (!job)
		return -ENOMEM;
	jb->jb_job = job;
	jb->jb_wrs = (void *)(job + 1);
	jb->jb_sges = (void *)(jb->jb_wrs + plan->nwr);
	jb->jb_batches = (void *)(jb->jb_sges + plan->nsge);
	plan->wrs = (void *)(jb->jb_batches + nbatches);
	plan->wr_cap = plan->nwr;
	plan->sges = (void *)(plan->wrs + plan->nwr);
	plan->sge_cap = plan->nsge;
	memset(&plan->pos, 0, sizeof(plan->pos));
	return 0;
}

/*
 * Round-robin the WRs over the QPs, starting where the session's last
 * job left off: each QP's share is a part of the job, its WRs one run
 * of the job's.
 */
static void kxfer_job_stripe(struct kxfer_job_build *jb)
{
	struct kxfer_session *s = jb->jb_sess;
	struct kxfer_task *job = jb->jb_job;
	struct ib_rdma_wr *wrs = jb->jb_wrs;
	u32 counts[KXFER_MAX_QPS] = {};
	u32 i;

	jb->jb_rotor = s->s_rotor;
	s->s_rotor += jb->jb_plan.nwr;
	for (i = 0; i < jb->jb_plan.nwr; i++)
		counts[(jb->jb_rotor + i) % jb->jb_nq]++;
	for (i = 0; i < jb->jb_nq; i++) {
		struct kxfer_job_part *p = &job->j_parts[i];

		p->p_wrs = wrs;
		p->p_nwr = counts[i];
		wrs += counts[i];
		p->p_job = job;
		p->p_qp = &s->s_qps[i];
		INIT_LIST_HEAD(&p->p_node);
	}
}

/* The SGEs of a planned WR, with their DMA addresses.  Return: its bytes. */
static u64 kxfer_job_build_sges(const struct kxfer_job_build *jb,
				const struct kxfer_plan_wr *pw)
{
	const struct kxfer_pool *pool = jb->jb_pool;
	u32 lkey = jb->jb_sess->s_pd->local_dma_lkey;
	u64 bytes = 0;
	u32 k;

	for (k = 0; k < pw->nsge; k++) {
		const struct kxfer_plan_sge *ps =
			&jb->jb_plan.sges[pw->first_sge + k];
		const struct kxfer_chunk *c =
			kxfer_pool_chunk_at(pool, ps->local_off);
		struct ib_sge *sge = &jb->jb_sges[pw->first_sge + k];

		bytes += ps->len;
		sge->addr = jb->jb_dma[c - pool->kp_chunks] +
			    (ps->local_off - c->kc_off);
		sge->length = ps->len;
		sge->lkey = lkey;
	}
	return bytes;
}

/* Each planned WR, with its SGEs, in its part, in plan order. */
static void kxfer_job_build_wrs(struct kxfer_job_build *jb)
{
	const struct kxfer_plan *plan = &jb->jb_plan;
	struct kxfer_task *job = jb->jb_job;
	enum ib_wr_opcode opcode = jb->jb_uj->op == KXFER_OP_WRITE ?
				   IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
	u32 fill[KXFER_MAX_QPS] = {};
	u32 i;

	for (i = 0; i < plan->nwr; i++) {
		const struct kxfer_plan_wr *pw = &plan->wrs[i];
		u32 q = (jb->jb_rotor + i) % jb->jb_nq;
		struct kxfer_job_part *p = &job->j_parts[q];
		struct ib_rdma_wr *wr = &p->p_wrs[fill[q]++];
		const struct kxfer_rmr *m = kxfer_rmr_at(jb->jb_pctx.rx,
							 pw->remote_off);

		p->p_bytes += kxfer_job_build_sges(jb, pw);
		wr->wr.opcode = opcode;
		wr->wr.sg_list = &jb->jb_sges[pw->first_sge];
		wr->wr.num_sge = pw->nsge;
		wr->wr.wr_cqe = &job->j_err_cqe;
		wr->remote_addr = m->rm_iova + (pw->remote_off - m->rm_off);
		wr->rkey = m->rm_rkey;
	}
}

/*
 * Cut each part into batches of up to jb_batch WRs, chained in order:
 * the last WR of each is signaled with the batch's CQE, the others
 * report only an error, to the job's sink.
 */
static void kxfer_job_build_batches(struct kxfer_job_build *jb)
{
	struct kxfer_job_batch *batches = jb->jb_batches;
	struct kxfer_task *job = jb->jb_job;
	u32 batch = jb->jb_batch;
	u32 i;

	job->j_err_cqe.done = kxfer_job_wc_error;
	for (i = 0; i < jb->jb_nq; i++) {
		struct kxfer_job_part *p = &job->j_parts[i];
		u32 w, k;

		p->p_batches = batches;
		p->p_batch = batch;
		p->p_nbatches = DIV_ROUND_UP(p->p_nwr, batch);
		batches += p->p_nbatches;
		for (w = 0; w < p->p_nwr; w++) {
			struct kxfer_job_batch *b = &p->p_batches[w / batch];
			struct ib_send_wr *wr = &p->p_wrs[w].wr;

			b->b_nwr++;
			for (k = 0; k < wr->num_sge; k++)
				b->b_bytes += wr->sg_list[k].length;
			if (w + 1 < p->p_nwr)
				wr->next = &p->p_wrs[w + 1].wr;
			if (w + 1 == p->p_nwr || (w + 1) % batch == 0) {
				b->b_cqe.done = kxfer_job_wc_batch;
				b->b_part = p;
				wr->wr_cqe = &b->b_cqe;
				wr->send_flags = IB_SEND_SIGNALED;
			}
		}
		atomic_add(p->p_nbatches, &job->j_left);
	}
	job->j_nparts = jb->jb_nq;
}

/*
 * Make the job and its work requests: none for a notification alone,
 * one for an atomic, else as planned, striped over the QPs and cut into
 * batches.  Return: 0, or the refusal's errno with no job made.  Caller
 * holds s_mutex (the session's QPs, PD and rotor).
 */
static int kxfer_job_make(struct kxfer_job_build *jb)
{
	struct kxfer_plan *plan = &jb->jb_plan;
	int ret;

	if (jb->jb_bare) {
		jb->jb_job = kvzalloc(sizeof(*jb->jb_job), GFP_KERNEL);
		return jb->jb_job ? 0 : -ENOMEM;
	}
	jb->jb_dma = kxfer_pool_dma(jb->jb_pool, jb->jb_sess->s_dev);
	if (!jb->jb_dma)
		return -ENOMEM;
	if (jb->jb_atomic) {
		plan->nwr = 1;
		jb->jb_nq = 1;
		return kxfer_job_build_atomic(jb);
	}

	ret = kxfer_job_plan(jb);
	if (ret)
		return ret;
	/*
	 * Large, to a peer over rails, and its destinations apart: its
	 * shares are made for their rails when it starts (rail.c).
	 */
	if (jb->jb_submit && !jb->jb_overlap &&
	    kxfer_rails_stripes(jb->jb_sess, jb->jb_pool, jb->jb_uj,
				jb->jb_total)) {
		jb->jb_job = kvzalloc(sizeof(*jb->jb_job), GFP_KERNEL);
		if (!jb->jb_job)
			return -ENOMEM;
		jb->jb_job->j_striped = true;
		return 0;
	}
	ret = kxfer_job_alloc(jb);
	if (ret)
		return ret;
	ret = kxfer_plan_build(plan, jb->jb_order, jb->jb_uj->nsegs);
	if (ret || jb->jb_pctx.gap) {
		kvfree(jb->jb_job);
		jb->jb_job = NULL;
		return ret ?: -ERANGE;
	}
	kxfer_job_stripe(jb);
	kxfer_job_build_wrs(jb);
	kxfer_job_build_batches(jb);
	return 0;
}

/**
 * kxfer_job_remake - build a WRITE or READ again, on another session
 * @s: the session it is for, up
 * @pool: the local side
 * @rx: the remote side, one of @s's remote exports
 * @op: %KXFER_OP_WRITE or %KXFER_OP_READ
 * @segs: the segments, checked against @pool and @rx when submitted
 * @nsegs: how many, at least 1
 * @total: their bytes
 * @out: the job made, its WRs striped over @s's QPs and cut into batches
 * @nwr: its work requests
 *
 * A job of a peer over several rails whose rail failed under it is made
 * anew for another rail (rail.c), as kxfer_job_make() made it for the
 * first.  It is not started; the caller fills in the rest.  Caller holds
 * @s's s_mutex.  May sleep.
 *
 * Return: 0, %-ENOMEM, %-ERANGE (a hole in the export's memory regions)
 * or %-E2BIG (too many work requests).
 */
int kxfer_job_remake(struct kxfer_session *s, struct kxfer_pool *pool,
		     struct kxfer_rexport *rx, u32 op,
		     struct kxfer_plan_seg *segs, u32 nsegs, u64 total,
		     struct kxfer_task **out, u32 *nwr)
{
	const struct kxfer_job uj = { .op = op, .nsegs = nsegs };
	struct kxfer_job_build jb = {
		.jb_uj = &uj, .jb_segs = segs, .jb_pool = pool, .jb_sess = s,
		.jb_total = total,
	};
	int ret;

	lockdep_assert_held(&s->s_mutex);
	jb.jb_pctx.rx = rx;
	ret = kxfer_job_make(&jb);
	kvfree(jb.jb_scratch);
	if (ret)
		return ret;
	*out = jb.jb_job;
	*nwr = jb.jb_plan.nwr;
	return 0;
}

/*
 * What every job carries: its notification, where it goes, its file,
 * and the message, pool, session and gate it takes over from @jb.  A
 * lone job that is small posts with the provider's work (j_inline).
 */
static void kxfer_job_init(struct kxfer_job_build *jb,
			   const struct kxfer_kick *kick)
{
	const struct kxfer_job *uj = jb->jb_uj;
	const struct kxfer_rexport *rx = jb->jb_pctx.rx;
	struct kxfer_task *job = jb->jb_job;
	void *msg = jb->jb_msg;

	INIT_LIST_HEAD(&job->j_notify_node);
	job->j_notify = uj->flags & KXFER_JOB_NOTIFY;
	job->j_op = uj->op;
	job->j_notify_value = msg ? 0 : uj->notify_value;
	job->j_msg = msg;
	job->j_msg_len = msg ? uj->notify_len : 0;
	job->j_rgen = rx->rx_gen;
	memcpy(job->j_rname, rx->rx_name, sizeof(job->j_rname));
	job->j_user_data = uj->user_data;
	job->j_submit_ns = ktime_get_ns();
	job->j_bytes = jb->jb_total;
	job->j_sess = jb->jb_sess;
	job->j_pool = jb->jb_pool;
	kref_get(&jb->jb_file->kf_ref);
	job->j_file = jb->jb_file;
	job->j_gate = jb->jb_gate;
	job->j_fence = uj->flags & KXFER_JOB_FENCE;
	job->j_inline = !kick && jb->jb_plan.nwr <= KXFER_INLINE_WRS &&
			jb->jb_total <= KXFER_INLINE_BYTES;
	job->j_conn_gen = jb->jb_sess->s_conn_gen;
	INIT_LIST_HEAD(&job->j_held_node);
}

/* The session's counters, and the submission's tracepoint. */
static void kxfer_job_account(const struct kxfer_job_build *jb)
{
	const struct kxfer_job *uj = jb->jb_uj;
	struct kxfer_session *s = jb->jb_sess;

	/* A striped job's shares count on their rails. */
	if (jb->jb_job->j_striped) {
		atomic64_inc(&s->s_rails->r_striped);
	} else {
		atomic64_inc(&s->s_stats.jobs);
		atomic64_add(jb->jb_total, &s->s_stats.bytes);
		atomic64_add(uj->nsegs, &s->s_stats.segs);
		atomic64_add(jb->jb_plan.nwr, &s->s_stats.wrs);
	}
	trace_job_submit(s->s_id, uj->user_data, uj->op, uj->flags, uj->nsegs,
			 jb->jb_plan.nwr, jb->jb_nq, jb->jb_total);
}

/*
 * Start the job, or hold it behind a FENCE that waits, or as a FENCE
 * with jobs ahead of it; either way the SUBMIT is done with the gate.
 * A job of a SUBMIT of several waits in its QPs' backlogs for @kick,
 * flushed first if it holds another session's, and every
 * KXFER_KICK_JOBS jobs.  Caller holds s_mutex.
 */
static void kxfer_job_start_or_hold(struct kxfer_job_build *jb,
				    struct kxfer_kick *kick)
{
	struct kxfer_file *kf = jb->jb_file;
	struct kxfer_session *s = jb->jb_sess;
	struct kxfer_gate *gate = jb->jb_gate;
	struct kxfer_task *job = jb->jb_job;
	unsigned long flags;
	bool hold;

	spin_lock_irqsave(&kf->kf_lock, flags);
	hold = !list_empty(&gate->g_held) ||
	       (job->j_fence && gate->g_inflight);
	if (hold)
		list_add_tail(&job->j_held_node, &gate->g_held);
	else
		gate->g_inflight++;
	kxfer_gate_unbusy_locked(gate);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (hold)
		return;

	if (kick && kick->k_sess != s) {
		/* A SUBMIT's jobs to another session: post theirs first. */
		kxfer_kick_flush(kick);
		kxfer_session_get(s);
		kick->k_sess = s;
	}
	kxfer_job_start(job, jb->jb_pctx.rx, kick);
	if (kick && ++kick->k_jobs >= KXFER_KICK_JOBS) {
		kxfer_kick_flush(kick);
		kick->k_jobs = 0;
	}
}

/* Free what only building the job needed: its segments, the scratch. */
static void kxfer_job_free_scratch(struct kxfer_job_build *jb)
{
	kvfree(jb->jb_scratch);
	if (jb->jb_segs != jb->jb_few)
		kvfree(jb->jb_segs);
}

/*
 * Submit one job: check it, copy in its segments, take its handles,
 * choose its rail, then, under s_mutex, find its remote export, check its ranges, make
 * its work requests and start it or hold it.  The start happens under
 * s_mutex, so that the session cannot be torn down and reconnected (new
 * PD, new remote keys) between building and posting.
 * Return: 0, or the refusal's errno; then nothing was posted.
 */
static int kxfer_job_submit_one(struct kxfer_file *kf,
				const struct kxfer_job *uj,
				struct kxfer_kick *kick)
{
	struct kxfer_job_build jb = {
		.jb_file = kf, .jb_uj = uj, .jb_submit = true,
	};
	struct kxfer_session *s;
	int ret;

	ret = kxfer_job_check(&jb);
	if (ret)
		return ret;
	ret = kxfer_job_copy_in(&jb);
	if (ret)
		goto out_free;
	ret = kxfer_job_get_handles(&jb);
	if (ret)
		goto out_free;

	/* A peer over several rails: the job goes to one of them (rail.c). */
	ret = kxfer_job_lock_session(&jb);
	if (ret)
		goto out_put;
	s = jb.jb_sess;
	ret = kxfer_job_find_export(&jb);
	if (ret)
		goto out_unlock;
	ret = kxfer_job_check_ranges(&jb);
	if (ret)
		goto out_unlock;
	ret = kxfer_job_make(&jb);
	if (ret)
		goto out_unlock;
	/* What it takes to post it again on another rail if this one fails. */
	ret = kxfer_rails_job_keep(jb.jb_job, s, jb.jb_segs, uj);
	if (ret) {
		kvfree(jb.jb_job);
		goto out_unlock;
	}
	/* The job holds the message, pool, session and gate from here. */
	kxfer_job_init(&jb, kick);
	kxfer_job_account(&jb);
	kxfer_job_start_or_hold(&jb, kick);
	mutex_unlock(&s->s_mutex);
	kxfer_job_free_scratch(&jb);
	return 0;

out_unlock:
	mutex_unlock(&s->s_mutex);
out_put:
	kxfer_job_put_handles(&jb);
out_free:
	kxfer_job_free_scratch(&jb);
	kfree(jb.jb_msg);
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
	struct kxfer_kick kick = {};
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

		err = kxfer_job_submit_one(kf, &uj,
					   sub.njobs > 1 ? &kick : NULL);
		if (err) {
			spin_lock_irqsave(&kf->kf_lock, flags);
			kf->kf_inflight--;
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			break;
		}
	}

	/* The jobs taken wait in their QPs' backlogs: one post per QP. */
	kxfer_kick_flush(&kick);
	/* Polled sessions: reap what already completed. */
	if (i)
		kxfer_file_poll_cqs(kf);
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

/*
 * The backlogs of every rail of the peer a gate is for (of just its
 * session, for a peer of one rail): a job goes to any of them (rail.c).
 */
static u32 kxfer_cancel_rails(struct kxfer_file *kf, struct kxfer_session *s,
			      const struct kxfer_cancel *c)
{
	struct kxfer_session *rails[KXFER_RAIL_SLOTS];
	u32 i, n, count = 0;

	n = kxfer_rails_snapshot(s, rails);
	for (i = 0; i < n; i++) {
		count += kxfer_cancel_backlog(kf, rails[i], c);
		kxfer_session_put(rails[i]);
	}
	return count;
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
		c.count += kxfer_cancel_rails(kf, sess[i], &c);
		kxfer_session_put(sess[i]);
	}
	kfree(sess);
	return copy_to_user(uarg, &c, sizeof(c)) ? -EFAULT : 0;
}
