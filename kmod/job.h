/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: what the data path's files share (job.c builds jobs, post.c
 * posts and completes them, notify.c notifies, fence.c orders, event.c
 * reports).  Not for the rest of the module.
 */
#ifndef _KXFER_JOB_H
#define _KXFER_JOB_H

#define KXFER_JOB_BATCH		32
#define KXFER_JOB_BATCH_BYTES	(4U << 20)
#define KXFER_JOB_MAX_WRS	65536	/* 64 GiB with a 1 MiB stripe */
/*
 * A SUBMIT of one job of at most KXFER_INLINE_WRS WRs and
 * KXFER_INLINE_BYTES is latency-bound: its posting runs the provider's
 * deferred work (softirq) in the submitter's context (for rxe, copying
 * the bytes: a big job would hold the SUBMIT for it).  A SUBMIT of
 * several jobs posts each QP's share once, at its end, and leaves the
 * provider's work to softirq, on whichever CPU, so that posting and the
 * NIC's work overlap.
 */
#define KXFER_INLINE_WRS	8
#define KXFER_INLINE_BYTES	(64U << 10)
/* Segments of a job copied to the stack rather than allocated. */
#define KXFER_FEW_SEGS		4
/*
 * In one post, a batch end is signaled when at least this many WRs, or
 * KXFER_JOB_BATCH_BYTES, went since the last signaled one, and at the end
 * of the post: the other batch ends of a SUBMIT of many small jobs make
 * no completion of their own (selective signaling, as RDS and xprtrdma
 * do).  The send queue then holds at most this plus one batch of WRs
 * with no completion to free their slots.
 */
#define KXFER_SIGNAL_WRS	16

struct kxfer_task;

/*
 * A run of WRs of one part, the last of which is signaled, or, when more
 * WRs follow it in the same post, quiet: then the completion of the next
 * signaled batch of the QP retires it (a QP completes in order).
 */
struct kxfer_job_batch {
	struct ib_cqe		b_cqe;
	struct kxfer_job_part	*b_part;
	u32			b_nwr;
	u32			b_bytes;
	bool			b_quiet;
	u64			b_seq;		/* of the QP's batches posted */
	struct list_head	b_node;		/* on q_quiet */
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
	u32			p_chain;	/* WRs in the chain being posted */
	struct ib_send_wr	*p_saved;	/* its last WR's next, meanwhile */
	bool			p_broken;	/* a post failed: wait for teardown */
};

/*
 * FENCE: the jobs of one file to one session, counted from submission
 * to completion event.  A FENCE job waits until that count is zero, and
 * every job submitted after a waiting one waits behind it, in order.
 * A gate lives while the file holds a peer handle on its session, a
 * SUBMIT uses it, or a job counts in it; then it goes (kxfer_gates_gc()),
 * so that a file that meets many sessions does not hold them all.
 */
struct kxfer_gate {
	struct list_head	g_node;		/* on kf_gates */
	struct kxfer_file	*g_file;
	struct kxfer_session	*g_sess;	/* referenced */
	unsigned int		g_inflight;	/* under kf_lock */
	unsigned int		g_handles;	/* peer handles, under kf_lock */
	unsigned int		g_busy;		/* SUBMITs using it, kf_lock */
	struct list_head	g_held;		/* jobs waiting, under kf_lock */
	struct work_struct	g_work;		/* starts the jobs waiting */
};

struct kxfer_task {
	struct kxfer_file	*j_file;
	struct kxfer_gate	*j_gate;
	struct list_head	j_held_node;	/* on g_held */
	u64			j_conn_gen;	/* s_conn_gen it was built for */
	bool			j_fence;
	bool			j_inline;	/* post with the provider's work */
	struct kxfer_session	*j_sess;
	struct kxfer_pool	*j_pool;
	u64			j_user_data;
	u64			j_submit_ns;
	u64			j_post_ns;	/* its first WR posted, or 0 */
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
	/* the remote export it was started on, counted in its rx_jobs */
	struct kxfer_rexport	*j_rx;
	u32			j_nparts;
	/*
	 * A job to a peer over several rails (rail.c): the peer, what it
	 * takes to build the job again for another rail, and how often it
	 * was; on the peer's r_retry while it waits to be
	 */
	struct kxfer_rails	*j_rails;
	struct kxfer_plan_seg	*j_segs;
	u32			j_nsegs;
	u64			j_epoch;	/* kxfer_peer_conn_gen() then */
	u64			j_sid;		/* its connection's s_sid */
	u64			j_notify_seq;	/* RAIL_NOTIFY's, once sent */
	bool			j_data_done;	/* all acknowledged: notifying */
	unsigned long		j_retry_since;	/* jiffies, first failover */
	u32			j_retries;
	bool			j_local_retried; /* after IB_WC_LOC_QP_OP_ERR */
	struct list_head	j_retry_node;	/* or on r_stripe */
	/*
	 * A job striped over rails: its data goes in shares, one per rail,
	 * each a job of its own (j_parent) that counts in its j_left; it
	 * ends, and notifies, once they all ended.
	 */
	bool			j_striped;
	bool			j_stripe_started; /* its shares were made */
	struct kxfer_task	*j_parent;	/* a share: the striped job */
	struct ib_atomic_wr	j_atomic;
	struct kxfer_job_part	j_parts[KXFER_MAX_QPS];
	/* WRs, SGEs and batches follow in one allocation */
};

/* The QPs of one session that a SUBMIT's jobs wait on, to post at its end. */
struct kxfer_kick {
	struct kxfer_session	*k_sess;	/* referenced */
	unsigned long		k_qps;		/* bit i: s_qps[i] */
	unsigned int		k_jobs;
};

/*
 * A long SUBMIT posts every so many jobs, so that the NIC starts on the
 * first ones while the rest are built.
 */
#define KXFER_KICK_JOBS		64

/* job.c */
struct kxfer_plan_seg;
int kxfer_job_remake(struct kxfer_session *s, struct kxfer_pool *pool,
		     struct kxfer_rexport *rx, u32 op,
		     struct kxfer_plan_seg *segs, u32 nsegs, u64 total,
		     struct kxfer_task **out, u32 *nwr);

/* rail.c */
int kxfer_job_route(struct kxfer_session **sp, const struct kxfer_pool *pool,
		    const struct kxfer_rhandle *rh, const struct kxfer_job *uj);
int kxfer_rails_job_keep(struct kxfer_task *job, struct kxfer_session *s,
			 const struct kxfer_plan_seg *segs,
			 const struct kxfer_job *uj);
bool kxfer_rails_job_retry(struct kxfer_task *job);
bool kxfer_rails_stripes(const struct kxfer_session *s,
			 const struct kxfer_pool *pool,
			 const struct kxfer_job *uj, u64 total);
void kxfer_rails_stripe(struct kxfer_task *job);
void kxfer_rails_job_free(struct kxfer_task *job);

/* post.c */
void kxfer_job_set_error(struct kxfer_task *job, int err, u32 wc_status);
void kxfer_job_batches_done(struct kxfer_task *job, unsigned int n);
void kxfer_job_post(struct kxfer_task *job);
void kxfer_job_wc_batch(struct ib_cq *cq, struct ib_wc *wc);
void kxfer_job_wc_error(struct ib_cq *cq, struct ib_wc *wc);
void kxfer_job_start(struct kxfer_task *job, struct kxfer_rexport *rx,
		     struct kxfer_kick *kick);
void kxfer_qp_kick_work(struct work_struct *work);
void kxfer_kick_flush(struct kxfer_kick *kick);
void kxfer_job_abort(struct kxfer_task *job, int err);

/* notify.c */
void kxfer_job_notify_msg(const struct kxfer_task *job,
			  struct kxfer_msg_notify *n);
void kxfer_job_notified(const struct kxfer_task *job);
void kxfer_job_imm(struct kxfer_task *job);

/* fence.c */
struct kxfer_gate *kxfer_gate_get(struct kxfer_file *kf,
				  struct kxfer_session *s);
void kxfer_gate_unbusy_locked(struct kxfer_gate *g);
void kxfer_gate_unbusy(struct kxfer_file *kf, struct kxfer_gate *g);

/* event.c */
void kxfer_file_complete_locked(struct kxfer_file *kf,
				const struct kxfer_event *ev);
void kxfer_file_post_note(struct kxfer_file *kf, const struct kxfer_event *ev,
			  void *msg);

#endif /* _KXFER_JOB_H */
