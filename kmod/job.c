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
				const struct kxfer_job *uj,
				struct kxfer_kick *kick)
{
	struct kxfer_plan_ctx pctx = {};
	struct kxfer_plan plan = {};
	struct kxfer_plan_seg *segs = NULL, few[KXFER_FEW_SEGS];
	const struct kxfer_plan_seg *order;
	struct kxfer_plan_scratch *scratch = NULL;
	bool overlap;
	bool bare = !uj->nsegs;		/* a notification alone */
	void *msg = NULL;
	struct kxfer_rhandle *rh, rhc;
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
	/* A small job's segments stay on the stack. */
	segs = uj->nsegs <= ARRAY_SIZE(few) ? few :
	       kvmalloc_array(uj->nsegs, sizeof(*segs), GFP_KERNEL);
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
	/* Counted before its memory is looked at: see upool.c's revoke. */
	if (pool && !kxfer_pool_job_begin(pool)) {
		kxfer_pool_put(pool);
		ret = -ESTALE;
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
	/* A copy: another thread of the file may release the handle. */
	xa_lock(&kf->kf_remotes);
	rh = uj->remote ? xa_load(&kf->kf_remotes, uj->remote) : NULL;
	ret = !rh ? -ENOENT : (rh->rh_sess != s ? -EINVAL : 0);
	if (!ret)
		rhc = *rh;
	xa_unlock(&kf->kf_remotes);
	if (ret)
		goto out_unlock;
	ret = -ENOTCONN;
	if (s->s_state != KXFER_PEER_UP)
		goto out_unlock;
	/*
	 * Looked up on another connection (other keys, and a peer that
	 * restarted may have reused the name and generation), or withdrawn.
	 */
	ret = -ESTALE;
	if (rhc.rh_conn_gen != s->s_conn_gen)
		goto out_unlock;
	pctx.rx = kxfer_rexport_find(s, rhc.rh_name);
	if (!pctx.rx || pctx.rx->rx_gen != rhc.rh_gen)
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
	job->j_submit_ns = ktime_get_ns();
	job->j_bytes = total;
	job->j_sess = s;
	job->j_pool = pool;
	kref_get(&kf->kf_ref);
	job->j_file = kf;
	job->j_gate = gate;
	job->j_fence = uj->flags & KXFER_JOB_FENCE;
	job->j_inline = !kick && plan.nwr <= KXFER_INLINE_WRS &&
			total <= KXFER_INLINE_BYTES;
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
	kxfer_gate_unbusy_locked(gate);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (!hold && kick && kick->k_sess != s) {
		/* A SUBMIT's jobs to another session: post theirs first. */
		kxfer_kick_flush(kick);
		kxfer_session_get(s);
		kick->k_sess = s;
	}
	if (!hold)
		kxfer_job_start(job, pctx.rx, kick);
	if (!hold && kick && ++kick->k_jobs >= KXFER_KICK_JOBS) {
		kxfer_kick_flush(kick);
		kick->k_jobs = 0;
	}
	mutex_unlock(&s->s_mutex);
	kvfree(scratch);
	if (segs != few)
		kvfree(segs);
	return 0;

out_job:
	kvfree(job);
out_unlock:
	mutex_unlock(&s->s_mutex);
	kxfer_gate_unbusy(kf, gate);
out_sess:
	kxfer_session_put(s);
out_pool:
	if (pool) {
		kxfer_pool_job_end(pool);
		kxfer_pool_put(pool);
	}
out_segs:
	kvfree(scratch);
	if (segs != few)
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
