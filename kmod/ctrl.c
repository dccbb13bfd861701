// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the control channel of a session, SEND/RECV on QP 0.
 *
 * Receives are posted before the QP connects ("post receives first").
 * Sending is credit based so that the peer never runs out of receives:
 * each side starts with the number of receives the other posted (from
 * the connection's private data), spends one per message, and gets them
 * back in the mh_credits field of the peer's messages.  The last credit
 * is kept for a CREDIT message, which only returns credits, so that two
 * sides that both ran low can always unblock each other.  The QPs are
 * connected with rnr_retry_count 0: an RNR would be a bug, and it ends
 * the session rather than slowing it down.
 *
 * Completions (softirq) only move buffers between lists; everything
 * else runs in the session's work under s_mutex.
 */
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "kxfer.h"

static void kxfer_ctrl_wc_recv(struct ib_cq *cq, struct ib_wc *wc);
static void kxfer_ctrl_wc_send(struct ib_cq *cq, struct ib_wc *wc);

static void kxfer_ctrl_bufs_free(struct kxfer_session *s,
				 struct kxfer_ctrl_buf *bufs, unsigned int n,
				 enum dma_data_direction dir)
{
	struct ib_device *ibdev = s->s_dev->kd_ibdev;
	unsigned int i;

	if (!bufs)
		return;
	for (i = 0; i < n; i++) {
		if (!bufs[i].cb_buf)
			continue;
		if (bufs[i].cb_dma)
			ib_dma_unmap_single(ibdev, bufs[i].cb_dma,
					    KXFER_CTRL_MSG_SIZE, dir);
		kfree(bufs[i].cb_buf);
	}
	kfree(bufs);
}

static struct kxfer_ctrl_buf *kxfer_ctrl_bufs_alloc(struct kxfer_session *s,
						    unsigned int n,
						    enum dma_data_direction dir,
						    void (*done)(struct ib_cq *,
								 struct ib_wc *))
{
	struct ib_device *ibdev = s->s_dev->kd_ibdev;
	struct kxfer_ctrl_buf *bufs;
	unsigned int i;

	bufs = kcalloc(n, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < n; i++) {
		struct kxfer_ctrl_buf *cb = &bufs[i];

		cb->cb_sess = s;
		cb->cb_cqe.done = done;
		INIT_LIST_HEAD(&cb->cb_node);
		cb->cb_buf = kzalloc(KXFER_CTRL_MSG_SIZE, GFP_KERNEL);
		if (!cb->cb_buf)
			goto out_free;
		cb->cb_dma = ib_dma_map_single(ibdev, cb->cb_buf,
					       KXFER_CTRL_MSG_SIZE, dir);
		if (ib_dma_mapping_error(ibdev, cb->cb_dma)) {
			cb->cb_dma = 0;
			goto out_free;
		}
	}
	return bufs;

out_free:
	kxfer_ctrl_bufs_free(s, bufs, n, dir);
	return NULL;
}

/**
 * kxfer_ctrl_alloc - allocate and map the control buffers of a session
 * @s: the session; s_dev and s_pd are set
 *
 * Return: 0 or %-ENOMEM.  Caller holds s_mutex.
 */
int kxfer_ctrl_alloc(struct kxfer_session *s)
{
	unsigned int i;

	s->s_recvs = kxfer_ctrl_bufs_alloc(s, KXFER_CTRL_RECVS,
					   DMA_FROM_DEVICE, kxfer_ctrl_wc_recv);
	if (!s->s_recvs)
		return -ENOMEM;
	s->s_sends = kxfer_ctrl_bufs_alloc(s, KXFER_CTRL_SENDS,
					   DMA_TO_DEVICE, kxfer_ctrl_wc_send);
	if (!s->s_sends)
		return -ENOMEM;
	for (i = 0; i < KXFER_CTRL_SENDS; i++)
		list_add_tail(&s->s_sends[i].cb_node, &s->s_free_sends);
	s->s_credits = 0;
	s->s_credits_owed = 0;
	s->s_ctrl_sending = 0;
	s->s_tx_seq = 0;
	s->s_rx_seq = 0;
	s->s_ka_sent_ns = 0;
	s->s_ka_last_ns = 0;
	memset(s->s_imm_halves, 0, sizeof(s->s_imm_halves));
	return 0;
}

/**
 * kxfer_ctrl_free - release the control buffers and queued messages
 * @s: the session; its QPs and CQs are destroyed already
 *
 * Safe on a session that never allocated them.  Caller holds s_mutex.
 */
void kxfer_ctrl_free(struct kxfer_session *s)
{
	struct kxfer_ctrl_msg *m, *tmp;

	list_for_each_entry_safe(m, tmp, &s->s_txq, cm_node) {
		list_del(&m->cm_node);
		if (m->cm_job)
			kxfer_job_sent(m->cm_job, -ECONNRESET);
		kfree(m);
	}
	s->s_ka_ack = NULL;
	INIT_LIST_HEAD(&s->s_rxq);
	INIT_LIST_HEAD(&s->s_free_sends);
	if (s->s_dev) {
		kxfer_ctrl_bufs_free(s, s->s_recvs, KXFER_CTRL_RECVS,
				     DMA_FROM_DEVICE);
		kxfer_ctrl_bufs_free(s, s->s_sends, KXFER_CTRL_SENDS,
				     DMA_TO_DEVICE);
	}
	s->s_recvs = NULL;
	s->s_sends = NULL;
}

static int kxfer_ctrl_post_recv(struct kxfer_session *s,
				struct kxfer_ctrl_buf *cb)
{
	struct ib_sge sge = {
		.addr	= cb->cb_dma,
		.length	= KXFER_CTRL_MSG_SIZE,
		.lkey	= s->s_pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe	 = &cb->cb_cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(s->s_dev->kd_ibdev, cb->cb_dma,
				      KXFER_CTRL_MSG_SIZE, DMA_FROM_DEVICE);
	return ib_post_recv(s->s_qps[0].q_id->qp, &wr, NULL);
}

/**
 * kxfer_ctrl_post_recvs - post every control receive on QP 0
 * @s: the session; QP 0 exists and is not yet connected
 *
 * Return: 0 or the error of ib_post_recv().  Caller holds s_mutex.
 */
int kxfer_ctrl_post_recvs(struct kxfer_session *s)
{
	unsigned int i;
	int ret;

	for (i = 0; i < KXFER_CTRL_RECVS; i++) {
		ret = kxfer_ctrl_post_recv(s, &s->s_recvs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void kxfer_ctrl_wc_recv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_ctrl_buf *cb = container_of(wc->wr_cqe,
						 struct kxfer_ctrl_buf, cb_cqe);
	struct kxfer_session *s = cb->cb_sess;
	unsigned long flags;

	if (wc->status != IB_WC_SUCCESS) {
		kxfer_session_wc_failed(s, wc, -EIO);
		return;
	}
	if (wc->opcode != IB_WC_RECV &&
	    wc->opcode != IB_WC_RECV_RDMA_WITH_IMM) {
		kxfer_session_fail(s, -EPROTO, "unexpected receive opcode");
		return;
	}
	cb->cb_is_imm = wc->opcode == IB_WC_RECV_RDMA_WITH_IMM;
	cb->cb_imm = be32_to_cpu(wc->ex.imm_data);
	cb->cb_len = wc->byte_len;
	/* Alive, even if the work that reads the message runs late. */
	WRITE_ONCE(s->s_last_rx_ns, ktime_get_ns());
	spin_lock_irqsave(&s->s_lock, flags);
	list_add_tail(&cb->cb_node, &s->s_rxq);
	spin_unlock_irqrestore(&s->s_lock, flags);
	set_bit(KXFER_SE_RX, &s->s_events);
	queue_work(kxfer_wq, &s->s_work);
}

static void kxfer_ctrl_wc_send(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_ctrl_buf *cb = container_of(wc->wr_cqe,
						 struct kxfer_ctrl_buf, cb_cqe);
	struct kxfer_session *s = cb->cb_sess;
	struct kxfer_task *job = cb->cb_job;
	unsigned long flags;

	if (wc->status == IB_WC_SUCCESS)
		/* Acknowledged by the peer's NIC: it is alive. */
		WRITE_ONCE(s->s_last_rx_ns, ktime_get_ns());
	else
		kxfer_session_wc_failed(s, wc, -EIO);
	/* A NOTIFY job ends when its notification reached the peer. */
	cb->cb_job = NULL;
	if (job)
		kxfer_job_sent(job, wc->status == IB_WC_SUCCESS ? 0 : -ECONNRESET);
	spin_lock_irqsave(&s->s_lock, flags);
	list_add_tail(&cb->cb_node, &s->s_free_sends);
	s->s_ctrl_sending--;
	spin_unlock_irqrestore(&s->s_lock, flags);
	/* A message may be waiting for this buffer. */
	set_bit(KXFER_SE_TX, &s->s_events);
	queue_work(kxfer_wq, &s->s_work);
}

/**
 * kxfer_ctrl_send - queue a control message
 * @s: the session
 * @type: message type
 * @body: what follows the header, or NULL
 * @body_len: its length
 *
 * The header (sequence number, returned credits) is written when the
 * message is posted, by kxfer_ctrl_flush().  An allocation failure ends
 * the session.  Caller holds s_mutex.
 */
void kxfer_ctrl_send(struct kxfer_session *s, enum kxfer_msg_type type,
		     const void *body, unsigned int body_len)
{
	kxfer_ctrl_send_job(s, type, body, body_len, NULL);
}

/* The type of a queued message (the rest of its header is written when posted). */
static u8 kxfer_ctrl_msg_type(const struct kxfer_ctrl_msg *m)
{
	return m->cm_data[offsetof(struct kxfer_msg_hdr, mh_type)];
}

/**
 * kxfer_ctrl_send_job - queue a control message that ends a job when sent
 * @s: the session
 * @type: message type
 * @body: what follows the header, or NULL
 * @body_len: its length
 * @job: ended with kxfer_job_sent() when the peer's NIC acknowledged the
 *	message (0) or when it cannot be sent (-ECONNRESET); may be NULL
 *
 * Caller holds s_mutex.
 */
void kxfer_ctrl_send_job(struct kxfer_session *s, enum kxfer_msg_type type,
			 const void *body, unsigned int body_len,
			 struct kxfer_task *job)
{
	unsigned int len = sizeof(struct kxfer_msg_hdr) + body_len;
	struct kxfer_ctrl_msg *m;

	if (WARN_ON_ONCE(len > KXFER_CTRL_MSG_SIZE))
		return;
	m = kzalloc(sizeof(*m) + len, GFP_KERNEL);
	if (!m) {
		if (job)
			kxfer_job_sent(job, -ENOMEM);
		kxfer_session_fail(s, -ENOMEM, "out of memory for a message");
		return;
	}
	m->cm_job = job;
	m->cm_len = len;
	m->cm_data[offsetof(struct kxfer_msg_hdr, mh_type)] = type;
	if (body_len)
		memcpy(m->cm_data + sizeof(struct kxfer_msg_hdr), body,
		       body_len);
	list_add_tail(&m->cm_node, &s->s_txq);
}

/*
 * Owed credits go back with any message, and alone when many pile up
 * with nothing to send.  They also go alone when the next message waits
 * for credits (one left, the one kept for a CREDIT): the peer may be
 * waiting the same way for the credits we owe it, each side's messages
 * queued behind its own, and neither would ever send.
 */
static bool kxfer_ctrl_credit_due(struct kxfer_session *s)
{
	const struct kxfer_ctrl_msg *m;
	unsigned long flags;
	bool blocked;

	if (!s->s_credits_owed)
		return false;
	if (list_empty(&s->s_txq))
		return s->s_credits_owed >= KXFER_CTRL_RECVS / 2;
	m = list_first_entry(&s->s_txq, struct kxfer_ctrl_msg, cm_node);
	if (kxfer_ctrl_msg_type(m) == KXFER_MSG_CREDIT)
		return false;
	spin_lock_irqsave(&s->s_lock, flags);
	blocked = s->s_credits == 1;
	spin_unlock_irqrestore(&s->s_lock, flags);
	return blocked;
}

/**
 * kxfer_ctrl_flush - post queued messages as credits and buffers allow
 * @s: the session, control channel up
 *
 * Caller holds s_mutex.
 */
void kxfer_ctrl_flush(struct kxfer_session *s)
{
	struct ib_device *ibdev;
	unsigned long flags;

	if (!s->s_ctrl_up || test_bit(KXFER_SE_FAIL, &s->s_events))
		return;
	ibdev = s->s_dev->kd_ibdev;

	if (kxfer_ctrl_credit_due(s)) {
		kxfer_ctrl_send(s, KXFER_MSG_CREDIT, NULL, 0);
		if (test_bit(KXFER_SE_FAIL, &s->s_events))
			return;		/* out of memory */
		/* Ahead of what waits: it is what unblocks the peer. */
		list_move(s->s_txq.prev, &s->s_txq);
	}

	while (!list_empty(&s->s_txq)) {
		struct kxfer_ctrl_msg *m = list_first_entry(&s->s_txq,
							    struct kxfer_ctrl_msg,
							    cm_node);
		u8 type = kxfer_ctrl_msg_type(m);
		struct kxfer_ctrl_buf *cb;
		struct ib_sge sge;
		struct ib_send_wr wr = {};
		int ret;

		spin_lock_irqsave(&s->s_lock, flags);
		cb = list_first_entry_or_null(&s->s_free_sends,
					      struct kxfer_ctrl_buf, cb_node);
		if (!cb || s->s_credits < (type == KXFER_MSG_CREDIT ? 1 : 2)) {
			spin_unlock_irqrestore(&s->s_lock, flags);
			break;
		}
		list_del_init(&cb->cb_node);
		s->s_credits--;
		s->s_ctrl_sending++;
		spin_unlock_irqrestore(&s->s_lock, flags);

		list_del(&m->cm_node);
		if (m == s->s_ka_ack)
			s->s_ka_ack = NULL;
		cb->cb_job = m->cm_job;
		memcpy(cb->cb_buf, m->cm_data, m->cm_len);
		kxfer_wire_hdr_init(cb->cb_buf, type, m->cm_len,
				    ++s->s_tx_seq, s->s_credits_owed);
		s->s_credits_owed = 0;
		sge.addr = cb->cb_dma;
		sge.length = m->cm_len;
		sge.lkey = s->s_pd->local_dma_lkey;
		kfree(m);

		ib_dma_sync_single_for_device(ibdev, cb->cb_dma, sge.length,
					      DMA_TO_DEVICE);
		wr.wr_cqe = &cb->cb_cqe;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IB_WR_SEND;
		wr.send_flags = IB_SEND_SIGNALED;
		ret = ib_post_send(s->s_qps[0].q_id->qp, &wr, NULL);
		if (ret) {
			if (cb->cb_job)
				kxfer_job_sent(cb->cb_job, -ECONNRESET);
			cb->cb_job = NULL;
			spin_lock_irqsave(&s->s_lock, flags);
			list_add(&cb->cb_node, &s->s_free_sends);
			s->s_ctrl_sending--;
			spin_unlock_irqrestore(&s->s_lock, flags);
			kxfer_session_fail(s, ret, "cannot post a control send");
			return;
		}
		kxfer_session_poll_arm(s);
	}
}

static void kxfer_rexport_free(struct kxfer_session *s,
			       struct kxfer_rexport *rx)
{
	s->s_rexport_mrs -= rx->rx_nmrs;
	kvfree(rx->rx_mrs);
	kfree_sensitive(rx);	/* its token */
}

/*
 * EXPORT_TOKEN: kept for the EXPORT_ADD that starts its export, the next
 * export message; only from a peer that agreed on KXFER_WIRE_F_TOKEN.
 * Like any other malformed message, one out of place ends the session.
 */
static int kxfer_rexport_token(struct kxfer_session *s,
			       const struct kxfer_msg_export_token *m,
			       const char **why)
{
	if (!(s->s_peer_features & KXFER_WIRE_F_TOKEN)) {
		*why = "export token, which was not agreed on";
		return -EPROTO;
	}
	if (s->s_token_pending) {
		*why = "export token without its export";
		return -EPROTO;
	}
	memcpy(&s->s_token, m, sizeof(*m));
	s->s_token_pending = true;
	return 0;
}

/*
 * Whether an export message @m may follow what came before: a token
 * pending is for the start (me_first 0) of the export of its name and
 * generation, and for nothing else.
 */
static int kxfer_rexport_token_check(struct kxfer_session *s,
				     const struct kxfer_msg_export *m,
				     unsigned int first, const char **why)
{
	if (!s->s_token_pending)
		return 0;
	if (first || strcmp(s->s_token.mt_name, m->me_name) ||
	    s->s_token.mt_gen != m->me_gen) {
		s->s_token_pending = false;
		memzero_explicit(&s->s_token, sizeof(s->s_token));
		*why = "export token without its export";
		return -EPROTO;
	}
	return 0;
}

/* The pending token, checked by kxfer_rexport_token_check(), to @rx. */
static void kxfer_rexport_take_token(struct kxfer_session *s,
				     struct kxfer_rexport *rx)
{
	if (!s->s_token_pending)
		return;
	s->s_token_pending = false;
	rx->rx_scoped = true;
	memcpy(rx->rx_token, s->s_token.mt_token, sizeof(rx->rx_token));
	memzero_explicit(&s->s_token, sizeof(s->s_token));
}

/* Tell the exporter that nothing of ours to an export is left in flight. */
static void kxfer_rexport_answer(struct kxfer_session *s, const u8 *name,
				 u64 gen)
{
	struct kxfer_msg_export_del m = {};

	memcpy(m.md_name, name, sizeof(m.md_name));
	m.md_gen = cpu_to_le64(gen);
	kxfer_ctrl_send(s, KXFER_MSG_EXPORT_WITHDRAWN, m.md_name,
			sizeof(m) - sizeof(m.md_hdr));
}

/*
 * An export the peer withdrew (@answer: EXPORT_WITHDRAW, which it waits
 * on), deleted (EXPORT_DEL) or replaced: lookups no longer find it, what
 * was not posted of the jobs to it ends with -ESTALE, and it goes when its
 * last job started on it has ended (kxfer_rexport_job_end()), with the
 * answer if one is due.  Caller holds s_mutex.
 */
static void kxfer_rexport_retire(struct kxfer_session *s,
				 struct kxfer_rexport *rx, bool answer)
{
	rx->rx_answer = answer;
	list_move_tail(&rx->rx_node, &s->s_rx_draining);
	kxfer_qps_cut_rexport(s, rx);
	if (atomic_dec_and_test(&rx->rx_jobs))
		kxfer_rexports_drained(s);
}

/**
 * kxfer_rexport_job_end - a job started on a remote export ended
 * @s: the session the job held
 * @rx: the export, which the job counted in rx_jobs
 *
 * The last job of a withdrawn export has the session's work answer the
 * exporter and free it.  Any context.
 */
void kxfer_rexport_job_end(struct kxfer_session *s, struct kxfer_rexport *rx)
{
	if (atomic_dec_and_test(&rx->rx_jobs)) {
		set_bit(KXFER_SE_DRAIN, &s->s_events);
		queue_work(kxfer_wq, &s->s_work);
	}
}

/**
 * kxfer_rexports_drained - answer and free withdrawn exports without jobs
 * @s: the session
 *
 * Caller holds s_mutex.
 */
void kxfer_rexports_drained(struct kxfer_session *s)
{
	struct kxfer_rexport *rx, *tmp;

	list_for_each_entry_safe(rx, tmp, &s->s_rx_draining, rx_node) {
		if (atomic_read(&rx->rx_jobs))
			continue;
		list_del(&rx->rx_node);
		if (rx->rx_answer && s->s_ctrl_up)
			kxfer_rexport_answer(s, rx->rx_name, rx->rx_gen);
		kxfer_rexport_free(s, rx);
	}
}

/*
 * EXPORT_WITHDRAW: the exporter waits for our answer before its keys go.
 * An export we do not hold (nothing can be in flight to it) is answered
 * at once.  Caller holds s_mutex.
 */
static void kxfer_rexport_withdraw(struct kxfer_session *s,
				   const struct kxfer_msg_export_del *m)
{
	u64 gen = le64_to_cpu(m->md_gen);
	struct kxfer_rexport *rx;

	list_for_each_entry(rx, &s->s_rexports, rx_node)
		if (!strcmp(rx->rx_name, (const char *)m->md_name) &&
		    rx->rx_gen == gen) {
			kxfer_rexport_retire(s, rx, true);
			return;
		}
	kxfer_rexport_answer(s, m->md_name, gen);
}

/* Apply (part of) an export advertisement. */
static int kxfer_rexport_add(struct kxfer_session *s,
			     const struct kxfer_msg_export *m,
			     const char **why)
{
	unsigned int nmrs = kxfer_wire_export_nmrs(m);
	unsigned int first = kxfer_wire_export_first(m);
	unsigned int count = le16_to_cpu(m->me_count);
	u64 gen = le64_to_cpu(m->me_gen);
	struct kxfer_rexport *rx;
	unsigned int i;
	int ret;

	ret = kxfer_rexport_token_check(s, m, first, why);
	if (ret)
		return ret;
	list_for_each_entry(rx, &s->s_rexports, rx_node)
		if (!strcmp(rx->rx_name, m->me_name))
			break;
	if (list_entry_is_head(rx, &s->s_rexports, rx_node))
		rx = NULL;

	if (first == 0) {
		if (rx && gen <= rx->rx_gen) {
			*why = "export generation went backwards";
			return -EPROTO;
		}
		if (rx)
			kxfer_rexport_retire(s, rx, false);
		/* What a peer makes us hold is bounded. */
		if (nmrs > kxfer_max_remote_mrs - s->s_rexport_mrs) {
			*why = "peer advertised too many memory regions";
			return -EPROTO;
		}
		rx = kzalloc(sizeof(*rx), GFP_KERNEL);
		if (!rx)
			return -ENOMEM;
		rx->rx_mrs = kvcalloc(nmrs, sizeof(*rx->rx_mrs), GFP_KERNEL);
		if (!rx->rx_mrs) {
			kfree(rx);
			return -ENOMEM;
		}
		atomic_set(&rx->rx_jobs, 1);
		memcpy(rx->rx_name, m->me_name, sizeof(rx->rx_name));
		rx->rx_len = le64_to_cpu(m->me_len);
		rx->rx_gen = gen;
		rx->rx_access = le32_to_cpu(m->me_access);
		rx->rx_nmrs = nmrs;
		s->s_rexport_mrs += nmrs;
		list_add_tail(&rx->rx_node, &s->s_rexports);
		kxfer_rexport_take_token(s, rx);
	} else if (!rx || rx->rx_gen != gen || rx->rx_nmrs != nmrs ||
		   rx->rx_have != first ||
		   rx->rx_len != le64_to_cpu(m->me_len)) {
		*why = "export continuation does not follow its start";
		return -EPROTO;
	}

	for (i = 0; i < count; i++) {
		struct kxfer_rmr *dst = &rx->rx_mrs[first + i];
		const struct kxfer_wire_mr *src = &m->me_mrs[i];

		if (first + i && le64_to_cpu(src->wm_off) <
		    dst[-1].rm_off + dst[-1].rm_len) {
			*why = "export MRs overlap";
			return -EPROTO;
		}
		dst->rm_off = le64_to_cpu(src->wm_off);
		dst->rm_len = le64_to_cpu(src->wm_len);
		dst->rm_iova = le64_to_cpu(src->wm_iova);
		dst->rm_rkey = le32_to_cpu(src->wm_rkey);
	}
	rx->rx_have = first + count;
	return 0;
}

static void kxfer_rexport_del(struct kxfer_session *s,
			      const struct kxfer_msg_export_del *m)
{
	struct kxfer_rexport *rx;

	list_for_each_entry(rx, &s->s_rexports, rx_node) {
		if (strcmp(rx->rx_name, m->md_name))
			continue;
		if (rx->rx_gen <= le64_to_cpu(m->md_gen))
			kxfer_rexport_retire(s, rx, false);
		return;
	}
}

/**
 * kxfer_rexports_clear - forget what the remote advertised
 * @s: the session
 *
 * Caller holds s_mutex.
 */
void kxfer_rexports_clear(struct kxfer_session *s)
{
	struct kxfer_rexport *rx, *tmp;

	/* Teardown ended every job: none holds them any more. */
	list_for_each_entry_safe(rx, tmp, &s->s_rexports, rx_node) {
		list_del(&rx->rx_node);
		WARN_ON_ONCE(atomic_read(&rx->rx_jobs) != 1);
		kxfer_rexport_free(s, rx);
	}
	list_for_each_entry_safe(rx, tmp, &s->s_rx_draining, rx_node) {
		list_del(&rx->rx_node);
		WARN_ON_ONCE(atomic_read(&rx->rx_jobs));
		kxfer_rexport_free(s, rx);
	}
	s->s_rexport_mrs = 0;
	s->s_token_pending = false;
	memzero_explicit(&s->s_token, sizeof(s->s_token));
}

/*
 * A notification must name an export this session was given, at the
 * generation it was given (the peer has it from our EXPORT_ADD): a peer
 * cannot wake the subscribers of an export that is not exported to it.
 * One for an export withdrawn since the peer sent it is dropped as well:
 * its keys are gone, and so is what its subscribers would wait for.
 */
static bool kxfer_notify_allowed(struct kxfer_session *s,
				 const struct kxfer_msg_notify *n)
{
	u64 gen = le64_to_cpu(n->mn_gen);
	struct kxfer_reg *rg;

	list_for_each_entry(rg, &s->s_regs, rg_node)
		if (rg->rg_gen == gen &&
		    !strcmp(rg->rg_name, (const char *)n->mn_name))
			return true;
	pr_notice_ratelimited("kxfer: peer %s: notification for export %s (generation %llu), which it was not given: dropped\n",
			      s->s_name, (const char *)n->mn_name, gen);
	return false;
}

/* A notification from the peer, and its message: delivered if allowed. */
static void kxfer_notify_recv(struct kxfer_session *s,
			      const struct kxfer_msg_notify *n,
			      const void *msg, u32 msg_len)
{
	if (kxfer_notify_allowed(s, n))
		kxfer_notify_deliver(s, n->mn_name, le64_to_cpu(n->mn_value),
				     le64_to_cpu(n->mn_bytes), msg, msg_len);
}

/*
 * One half of a NOTIFY by WRITE_WITH_IMM arrived: @desc (the message) or
 * the immediate @token alone.  Deliver when the other half is here.  The
 * WRITE_WITH_IMM completes only after every earlier WRITE on the QP was
 * placed, so the job's data is visible whichever half comes last.
 */
static int kxfer_notify_half(struct kxfer_session *s, u32 token,
			     const struct kxfer_msg_notify *desc,
			     const char **why)
{
	struct kxfer_imm_half *h, *free = NULL;
	unsigned int i;

	for (i = 0; i < KXFER_NOTIFY_IMM_MAX; i++) {
		h = &s->s_imm_halves[i];
		if (!h->ih_used) {
			free = free ?: h;
			continue;
		}
		if (h->ih_token != token)
			continue;
		if (h->ih_have_desc == !!desc) {
			*why = "notification token repeated";
			return -EPROTO;
		}
		if (desc)
			kxfer_notify_recv(s, desc, NULL, 0);
		else if (h->ih_allowed)
			kxfer_notify_deliver(s, h->ih_name, h->ih_value,
					     h->ih_bytes, NULL, 0);
		h->ih_used = false;
		return 0;
	}
	if (!free) {
		*why = "too many notifications half-received";
		return -EPROTO;
	}
	free->ih_used = true;
	free->ih_token = token;
	free->ih_have_desc = !!desc;
	if (desc) {
		free->ih_allowed = kxfer_notify_allowed(s, desc);
		memcpy(free->ih_name, desc->mn_name, sizeof(free->ih_name));
		free->ih_value = le64_to_cpu(desc->mn_value);
		free->ih_bytes = le64_to_cpu(desc->mn_bytes);
	}
	return 0;
}

/* A connector's NOTIFY over rails: delivered the first time it comes. */
static int kxfer_notify_rail(struct kxfer_session *s,
			     const struct kxfer_msg_rail_notify *rn,
			     const char **why)
{
	u32 len = le16_to_cpu(rn->rn_len);

	if (s->s_role != KXFER_PEER_ACCEPTOR || !s->s_rails ||
	    (len && !(s->s_peer_features & KXFER_WIRE_F_NOTIFY_MSG))) {
		*why = "unexpected RAIL_NOTIFY";
		return -EPROTO;
	}
	if (kxfer_rails_notify_first(s, le64_to_cpu(rn->rn_seq)))
		kxfer_notify_recv(s, &rn->rn_notify, len ? rn->rn_data : NULL,
				  len);
	return 0;
}

/* The connector's HELLO, once, before its export table ends. */
static int kxfer_ctrl_hello(struct kxfer_session *s,
			    const struct kxfer_msg_hello *mo, const char **why)
{
	if (s->s_role != KXFER_PEER_ACCEPTOR || s->s_got_hello ||
	    s->s_got_sync) {
		*why = "unexpected HELLO";
		return -EPROTO;
	}
	s->s_got_hello = true;
	s->s_peer_features = kxfer_wire_features &
			     le32_to_cpu(mo->mo_features);
	if (s->s_peer_features & KXFER_WIRE_F_RAILS)
		s->s_hello_rail = le32_to_cpu(mo->mo_rail);
	/*
	 * A sync that ran before it came passed over the exports that need
	 * a feature (a token's, more than 4096 regions): the session's work
	 * looks again once this is applied.
	 */
	if (s->s_peer_features)
		set_bit(KXFER_SE_REGS, &s->s_events);
	return 0;
}

/* The end of the peer's export table, once. */
static int kxfer_ctrl_sync_done(struct kxfer_session *s, const char **why)
{
	if (s->s_got_sync) {
		*why = "second end of the export table";
		return -EPROTO;
	}
	s->s_got_sync = true;
	return 0;
}

/*
 * A keepalive probe: answer it.  One answer waits at most: a peer that
 * probes faster than it returns credits gets its latest probe answered,
 * and cannot make us queue without bound.
 */
static void kxfer_ctrl_keepalive(struct kxfer_session *s,
				 const struct kxfer_msg_keepalive *mk)
{
	const __le64 *stamp = &mk->mk_stamp;
	struct kxfer_ctrl_msg *m;

	if (s->s_ka_ack) {
		memcpy(s->s_ka_ack->cm_data +
		       offsetof(struct kxfer_msg_keepalive, mk_stamp),
		       stamp, sizeof(*stamp));
		return;
	}
	kxfer_ctrl_send(s, KXFER_MSG_KEEPALIVE_ACK, stamp, sizeof(*stamp));
	m = list_empty(&s->s_txq) ? NULL :
	    list_last_entry(&s->s_txq, struct kxfer_ctrl_msg, cm_node);
	if (m && kxfer_ctrl_msg_type(m) == KXFER_MSG_KEEPALIVE_ACK)
		s->s_ka_ack = m;	/* (not queued if out of memory) */
}

/*
 * The answer to a keepalive probe.  The peer answers the latest probe it
 * saw: any one sent since the first unanswered one.  The round trip
 * counts from that first one, which is how long the peer took to answer.
 */
static void kxfer_ctrl_keepalive_ack(struct kxfer_session *s,
				     const struct kxfer_msg_keepalive *mk)
{
	u64 stamp = le64_to_cpu(mk->mk_stamp);

	if (!s->s_ka_sent_ns || stamp < s->s_ka_sent_ns ||
	    stamp > s->s_ka_last_ns)
		return;
	s->s_ka_rtt_ns = ktime_get_ns() - s->s_ka_sent_ns;
	s->s_ka_rtt_max_ns = max(s->s_ka_rtt_max_ns, s->s_ka_rtt_ns);
	/* Decays an eighth per answer: a queue that drained. */
	s->s_ka_rtt_recent_ns = max(s->s_ka_rtt_ns, s->s_ka_rtt_recent_ns -
				    (s->s_ka_rtt_recent_ns >> 3));
	s->s_ka_sent_ns = 0;
}

/*
 * Apply one control message that kxfer_wire_check() passed.  Return: 0,
 * or a negative errno with @why saying what was wrong: the session ends.
 */
static int kxfer_ctrl_dispatch(struct kxfer_session *s, const void *buf,
			       const char **why)
{
	const struct kxfer_msg_hdr *h = buf;
	int ret;

	/* Nothing but the handshake until the peer authenticated. */
	ret = kxfer_auth_gate(s, h->mh_type, why);
	if (ret)
		return ret < 0 ? ret : 0;

	switch (h->mh_type) {
	case KXFER_MSG_CREDIT:
		return 0;
	case KXFER_MSG_AUTH_CHALLENGE:
	case KXFER_MSG_AUTH_REPLY:
	case KXFER_MSG_AUTH_FAIL:
	case KXFER_MSG_RAIL_JOIN:
	case KXFER_MSG_RAIL_JOINED:
		return kxfer_auth_recv(s, buf, why);
	case KXFER_MSG_RAIL_TOKEN:
	case KXFER_MSG_RAIL_FENCE:
	case KXFER_MSG_RAIL_FENCED:
		return kxfer_rails_recv(s, buf, why);
	case KXFER_MSG_RAIL_NOTIFY:
		return kxfer_notify_rail(s, buf, why);
	case KXFER_MSG_EXPORT_ADD:
		return kxfer_rexport_add(s, buf, why);
	case KXFER_MSG_EXPORT_DEL:
		kxfer_rexport_del(s, buf);
		return 0;
	case KXFER_MSG_EXPORT_WITHDRAW:
		kxfer_rexport_withdraw(s, buf);
		return 0;
	case KXFER_MSG_EXPORT_WITHDRAWN:
		return kxfer_reg_withdrawn(s, buf, why);
	case KXFER_MSG_EXPORT_TOKEN:
		return kxfer_rexport_token(s, buf, why);
	case KXFER_MSG_NOTIFY:
		kxfer_notify_recv(s, buf, NULL, 0);
		return 0;
	case KXFER_MSG_NOTIFY_MSG: {
		const struct kxfer_msg_notify_msg *nm = buf;

		kxfer_notify_recv(s, &nm->nm_notify, nm->nm_data,
				  le16_to_cpu(nm->nm_len));
		return 0;
	}
	case KXFER_MSG_HELLO:
		return kxfer_ctrl_hello(s, buf, why);
	case KXFER_MSG_NOTIFY_DESC: {
		const struct kxfer_msg_notify_desc *nd = buf;

		return kxfer_notify_half(s, le32_to_cpu(nd->nd_token),
					 &nd->nd_notify, why);
	}
	case KXFER_MSG_SYNC_DONE:
		return kxfer_ctrl_sync_done(s, why);
	case KXFER_MSG_KEEPALIVE:
		kxfer_ctrl_keepalive(s, buf);
		return 0;
	case KXFER_MSG_KEEPALIVE_ACK:
		kxfer_ctrl_keepalive_ack(s, buf);
		return 0;
	default:
		*why = "unknown message type";
		return -EPROTO;
	}
}

/* What a session's last words may be (kxfer_ctrl_last_words()). */
static bool kxfer_ctrl_is_notify(const struct kxfer_ctrl_buf *cb)
{
	const struct kxfer_msg_hdr *h = cb->cb_buf;

	if (cb->cb_is_imm)
		return true;
	switch (h->mh_type) {
	case KXFER_MSG_NOTIFY:
	case KXFER_MSG_NOTIFY_MSG:
	case KXFER_MSG_NOTIFY_DESC:
	case KXFER_MSG_RAIL_NOTIFY:
		return true;
	default:
		return false;
	}
}

/*
 * Check and apply every received control message; @last: the session is
 * going, its QPs drained: apply only notifications, repost nothing.
 */
static void kxfer_ctrl_run(struct kxfer_session *s, bool last)
{
	struct ib_device *ibdev = s->s_dev->kd_ibdev;
	unsigned long flags;

	for (;;) {
		const struct kxfer_msg_hdr *h;
		struct kxfer_ctrl_buf *cb;
		const char *why = "bad message";
		int ret;

		spin_lock_irqsave(&s->s_lock, flags);
		cb = list_first_entry_or_null(&s->s_rxq, struct kxfer_ctrl_buf,
					      cb_node);
		if (cb)
			list_del_init(&cb->cb_node);
		spin_unlock_irqrestore(&s->s_lock, flags);
		if (!cb)
			break;

		if (cb->cb_is_imm) {
			/* A WRITE_WITH_IMM: no message, no sequence number. */
			ret = kxfer_auth_gate(s, 0, &why);
			if (!ret)
				ret = kxfer_notify_half(s, cb->cb_imm, NULL,
							&why);
			else if (ret > 0)
				ret = 0;
			goto done;
		}
		ib_dma_sync_single_for_cpu(ibdev, cb->cb_dma,
					   KXFER_CTRL_MSG_SIZE,
					   DMA_FROM_DEVICE);
		h = cb->cb_buf;
		ret = kxfer_wire_check(cb->cb_buf, cb->cb_len,
				       s->s_rx_seq + 1, &why);
		if (!ret) {
			s->s_rx_seq++;
			WRITE_ONCE(s->s_last_rx_ns, ktime_get_ns());
			spin_lock_irqsave(&s->s_lock, flags);
			s->s_credits += le16_to_cpu(h->mh_credits);
			if (s->s_credits > s->s_credits_max) {
				why = "more credits returned than lent";
				ret = -EPROTO;
			}
			spin_unlock_irqrestore(&s->s_lock, flags);
			if (!ret && (!last || kxfer_ctrl_is_notify(cb)))
				ret = kxfer_ctrl_dispatch(s, cb->cb_buf, &why);
		}
done:
		if (ret) {
			pr_warn_ratelimited("kxfer: peer %s: bad control message: %s\n",
					    s->s_name, why);
			kxfer_session_fail(s, ret, why);
			return;
		}
		if (last)
			continue;
		ret = kxfer_ctrl_post_recv(s, cb);
		if (ret) {
			kxfer_session_fail(s, ret, "cannot repost a receive");
			return;
		}
		s->s_credits_owed++;
	}
}

/**
 * kxfer_ctrl_process - check and apply every received control message
 * @s: the session, control channel up
 *
 * A message that fails its checks ends the session with a logged reason
 * and is not looked at any further.  Caller holds s_mutex.
 */
void kxfer_ctrl_process(struct kxfer_session *s)
{
	kxfer_ctrl_run(s, false);
}

/**
 * kxfer_ctrl_last_words - deliver what a dying session was told
 * @s: the session, its QPs drained, its control buffers not yet freed
 *
 * The peer's NIC acknowledged every message received here, so its jobs
 * have completed: their notifications are delivered, not dropped with
 * the session (the rest of what came is of no use now).  Caller holds
 * s_mutex.
 */
void kxfer_ctrl_last_words(struct kxfer_session *s)
{
	if (s->s_ctrl_up && s->s_recvs)
		kxfer_ctrl_run(s, true);
}
