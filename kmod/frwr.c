// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: fast-registration memory regions for exports (DESIGN §2, §3).
 *
 * When a session's control channel comes up, and whenever exports
 * change, every export whose peer selector matches the session is
 * registered on the session's own PD: FRWR MRs (ib_alloc_mr,
 * ib_map_mr_sg, IB_WR_REG_MR) covering exactly the export's range, as
 * many as the device's page-list reach requires, each with an iova that
 * starts at the byte's offset within its first page, so that remote
 * addresses are offsets and never kernel addresses.  The key is rotated
 * (ib_inc_rkey) before every registration.
 *
 * An rkey given to one peer is refused on every other peer's QPs: the
 * MRs live in this session's PD only.  Withdrawal posts LOCAL_INV and
 * waits for it before anyone is told the export is gone.
 *
 * Registration and invalidation are posted on QP 0 in batches of
 * KXFER_REG_BATCH work requests, the last of each signaled and waited
 * for, so that the send queue never overflows.
 */
#include <linux/slab.h>
#include <linux/scatterlist.h>

#include "kxfer.h"

#define KXFER_REG_TIMEOUT_MS	5000

static void kxfer_mr_wc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kxfer_mr_reg *m = container_of(wc->wr_cqe, struct kxfer_mr_reg,
					      mr_cqe);

	m->mr_status = wc->status;
	complete(&m->mr_done);
}

/*
 * Node names are claimed, not proven, unless the session proved the key
 * of its name: an export scoped to addresses as well ("from") is given
 * only to sessions whose far end is there, and one that requires
 * authentication only to sessions that authenticated, and proved the
 * key of the name it is scoped to if it is.
 */
static bool kxfer_export_matches(struct kxfer_session *s,
				 struct kxfer_export *exp)
{
	/* A peer that cannot check the token would give it to anyone. */
	if (exp->ke_scoped && !(s->s_peer_features & KXFER_WIRE_F_TOKEN))
		return false;
	if (exp->ke_peer[0] && strcmp(exp->ke_peer, s->s_name))
		return false;
	if (exp->ke_auth == KXFER_AUTH_REQUIRED &&
	    kxfer_auth_strength(s) < (exp->ke_peer[0] ? 2 : 1))
		return false;
	return !exp->ke_has_from ||
	       kxfer_prefix_match(&exp->ke_from, (struct sockaddr *)&s->s_dst);
}

static int kxfer_ib_access(u32 access)
{
	int flags = IB_ACCESS_LOCAL_WRITE;

	if (access & KXFER_ACCESS_READ)
		flags |= IB_ACCESS_REMOTE_READ;
	if (access & KXFER_ACCESS_WRITE)
		flags |= IB_ACCESS_REMOTE_WRITE;
	if (access & KXFER_ACCESS_ATOMIC)
		flags |= IB_ACCESS_REMOTE_ATOMIC;
	return flags;
}

/*
 * Post a chain of work requests on QP 0 and wait for the last, which is
 * signaled with @wait's CQE.
 */
static int kxfer_reg_post_wait(struct kxfer_session *s,
			       struct ib_send_wr *first,
			       struct kxfer_mr_reg *wait)
{
	unsigned long tmo = msecs_to_jiffies(KXFER_REG_TIMEOUT_MS);
	struct ib_qp *qp = s->s_qps[0].q_id->qp;
	int ret;

	reinit_completion(&wait->mr_done);
	wait->mr_status = IB_WC_SUCCESS;
	ret = ib_post_send(qp, first, NULL);
	if (!ret && !kxfer_session_poll_wait(s, &wait->mr_done, tmo))
		ret = -ETIMEDOUT;
	if (!ret && wait->mr_status != IB_WC_SUCCESS)
		ret = -EIO;
	if (!ret)
		return 0;
	/*
	 * The QP is in error (a peer's access violation moves it there
	 * at any moment), or part of the chain may still be in flight and
	 * its completions point into memory the caller is about to free:
	 * flush it out.  The session cannot go on either way.
	 */
	kxfer_session_fail(s, ret, "registration work request failed");
	kxfer_qps_data_stop(s);
	kxfer_session_poll_drain(s, BIT(0), false);
	return ret;
}

/*
 * Map one MR over pool bytes [start, end): its DMA ranges, one per chunk,
 * in pages of 1 << @shift bytes (kxfer_reg_shape() chose a size every
 * chunk boundary inside the export falls on).
 */
static int kxfer_mr_map(struct kxfer_pool *pool, const u64 *dma,
			struct ib_mr *mr, u64 start, u64 end, unsigned int shift)
{
	const struct kxfer_chunk *c = kxfer_pool_chunk_at(pool, start);
	unsigned int i, n = 0, first = c - pool->kp_chunks;
	struct scatterlist *sgl, *sg;
	u64 off;
	int ret;

	for (off = c->kc_off; off < end; n++)
		off += pool->kp_chunks[first + n].kc_len;
	sgl = kcalloc(n, sizeof(*sgl), GFP_KERNEL);
	if (!sgl)
		return -ENOMEM;
	sg_init_table(sgl, n);

	for (i = 0, sg = sgl; i < n; i++, sg = sg_next(sg)) {
		const struct kxfer_chunk *ci = &pool->kp_chunks[first + i];
		u64 cstart = max(start, ci->kc_off);
		u64 cend = min(end, ci->kc_off + ci->kc_len);

		sg_dma_address(sg) = dma[first + i] + (cstart - ci->kc_off);
		sg_dma_len(sg) = cend - cstart;
		sg->length = cend - cstart;
	}
	ret = ib_map_mr_sg(mr, sgl, n, NULL, 1UL << shift);
	kfree(sgl);
	return ret == n ? 0 : (ret < 0 ? ret : -EINVAL);
}

/*
 * The registration holds its own reference to the pool, so that the
 * pages stay while the MRs map them, even if the export and the pool
 * are deleted first (by a session that the withdrawal did not see: one
 * being stopped is off kxfer_sessions).  Not the last reference where
 * kxfer_obj_mutex is held: the export still holds one there.
 */
static void kxfer_reg_dereg(struct kxfer_reg *rg)
{
	unsigned int i;

	for (i = 0; i < rg->rg_nmrs; i++)
		if (rg->rg_mrs[i].mr_ibmr)
			ib_dereg_mr(rg->rg_mrs[i].mr_ibmr);
	rg->rg_nmrs = 0;
	if (rg->rg_pool)
		kxfer_pool_put(rg->rg_pool);
	rg->rg_pool = NULL;
}

static void kxfer_reg_free(struct kxfer_reg *rg)
{
	kxfer_reg_dereg(rg);
	kvfree(rg);
}

/**
 * kxfer_mr_shift - the largest MR page an export's memory allows
 * @pool: the export's pool
 * @dma: its DMA addresses on a device, or %NULL for its pages' physical
 *	ones (an export's bound, before any device is known)
 * @off: the export's first byte in the pool
 * @end: the byte past its last
 *
 * ib_map_mr_sg() takes pages: every chunk the range crosses must lie at the
 * same offset in a page in the pool and in DMA space, and start and end on
 * a page.  Kernel pools of 2 MiB folios, a process's memory on huge pages
 * and GPU memory allow large pages; memory of scattered 4 KiB pages does
 * not.  At most mr_max_page.
 *
 * Return: log2 of the page, PAGE_SHIFT to KXFER_MR_MAX_PAGE_SHIFT.
 */
unsigned int kxfer_mr_shift(const struct kxfer_pool *pool, const u64 *dma,
			    u64 off, u64 end)
{
	const struct kxfer_chunk *c = kxfer_pool_chunk_at(pool, off);
	const struct kxfer_chunk *last = pool->kp_chunks + pool->kp_nchunks;
	unsigned int max;
	u64 bad = 0, at;

	for (; c < last && c->kc_off < end; c++) {
		if (dma)
			at = dma[c - pool->kp_chunks];
		else if (c->kc_page)
			at = page_to_phys(c->kc_page);
		else
			at = c->kc_off;	/* a device's ranges: checked there */
		/*
		 * The chunk's own ends too, not only those inside the range:
		 * a page reaching past its chunk would name memory the pool
		 * does not hold, even if the MR's bounds keep peers out.
		 */
		bad |= (at - c->kc_off) | c->kc_off | (c->kc_off + c->kc_len);
	}
	max = ilog2(READ_ONCE(kxfer_mr_max_page));
	if (!bad)
		return max;
	return clamp_t(unsigned int, __ffs64(bad), PAGE_SHIFT, max);
}

/*
 * How @exp is cut into MRs on the session's device (@sh): the largest page
 * both its memory and the device allow (page_size_cap), pages per MR
 * (max_fast_reg_page_list_len, mr_max_pages, KXFER_MR_MAX_PAGES) and how
 * many MRs that makes.  0 MRs, said in the log, if the device has no fast
 * registration, the pool cannot be mapped there, or @exp needs more MRs
 * than the peer takes (KXFER_WIRE_MAX_MRS, or KXFER_WIRE_MAX_MRS32 to a
 * peer that speaks KXFER_WIRE_F_MRS32); export add bounded it by the
 * largest page its memory allows, a device with smaller pages or shorter
 * lists can need more.  Caller holds s_mutex and obj_mutex.
 */
struct kxfer_reg_shape {
	const u64	*rs_dma;
	unsigned int	rs_shift;
	unsigned int	rs_max_pages;
	u64		rs_nmrs;
};

static u64 kxfer_reg_shape(struct kxfer_session *s,
			   const struct kxfer_export *exp,
			   struct kxfer_reg_shape *sh)
{
	const struct ib_device_attr *attrs = &s->s_dev->kd_ibdev->attrs;
	u64 end = exp->ke_off + exp->ke_len, cap, max_mrs;
	struct kxfer_pool *pool = exp->ke_pool;
	struct kxfer_pool_map *pm;

	sh->rs_max_pages = min3(attrs->max_fast_reg_page_list_len,
				READ_ONCE(kxfer_mr_max_pages),
				(u32)KXFER_MR_MAX_PAGES);
	if (!sh->rs_max_pages) {
		pr_warn_ratelimited("kxfer: peer %s: %s has no fast registration: export %s not offered\n",
				    s->s_name, s->s_dev->kd_name, exp->ke_name);
		return 0;
	}
	kxfer_pool_map_device(pool, s->s_dev);
	sh->rs_dma = NULL;
	mutex_lock(&pool->kp_map_lock);
	list_for_each_entry(pm, &pool->kp_maps, pm_node)
		if (pm->pm_dev == s->s_dev)
			sh->rs_dma = pm->pm_dma;
	mutex_unlock(&pool->kp_map_lock);
	/* The map lives until the device goes, which ends this session. */
	if (!sh->rs_dma)
		return 0;

	/*
	 * No larger than at export add (export show's mr_page): every
	 * session maps it alike, whatever mr_max_page says by now.
	 */
	sh->rs_shift = min(kxfer_mr_shift(pool, sh->rs_dma, exp->ke_off, end),
			   exp->ke_mr_shift);
	/* The largest the device takes, down to the smallest page. */
	cap = attrs->page_size_cap & GENMASK_ULL(sh->rs_shift, PAGE_SHIFT);
	sh->rs_shift = cap ? fls64(cap) - 1 : PAGE_SHIFT;
	sh->rs_nmrs = DIV_ROUND_UP(end - round_down(exp->ke_off,
						    1ULL << sh->rs_shift),
				   (u64)sh->rs_max_pages << sh->rs_shift);
	max_mrs = s->s_peer_features & KXFER_WIRE_F_MRS32 ?
		  KXFER_WIRE_MAX_MRS32 : KXFER_WIRE_MAX_MRS;
	if (sh->rs_nmrs <= max_mrs)
		return sh->rs_nmrs;
	pr_warn_ratelimited("kxfer: peer %s: export %s needs %llu memory regions of %u pages of %lu KiB on %s, more than the %llu a peer takes: not offered\n",
			    s->s_name, exp->ke_name, sh->rs_nmrs,
			    sh->rs_max_pages, 1UL << (sh->rs_shift - 10),
			    s->s_dev->kd_name, max_mrs);
	return 0;
}

/*
 * Register one export on the session, in the MRs kxfer_reg_shape() cut
 * it into.  Caller holds s_mutex, obj_mutex.
 */
static struct kxfer_reg *kxfer_reg_export(struct kxfer_session *s,
					  struct kxfer_export *exp,
					  const struct kxfer_reg_shape *sh)
{
	struct kxfer_pool *pool = exp->ke_pool;
	u64 page = 1ULL << sh->rs_shift, span = sh->rs_max_pages * page;
	u64 base = round_down(exp->ke_off, page);
	u64 end = exp->ke_off + exp->ke_len;
	unsigned int i, nmrs = sh->rs_nmrs, batch = 0;
	struct ib_reg_wr *wrs;
	struct kxfer_reg *rg;
	int ret = -ENOMEM;

	rg = kvzalloc(struct_size(rg, rg_mrs, nmrs), GFP_KERNEL);
	wrs = kcalloc(KXFER_REG_BATCH, sizeof(*wrs), GFP_KERNEL);
	if (!rg || !wrs)
		goto out_free;
	rg->rg_export = exp;
	rg->rg_pool = pool;
	kref_get(&pool->kp_ref);
	rg->rg_gen = exp->ke_gen;
	strscpy(rg->rg_name, exp->ke_name, sizeof(rg->rg_name));
	rg->rg_nmrs = nmrs;
	rg->rg_shift = sh->rs_shift;

	for (i = 0; i < nmrs; i++) {
		struct kxfer_mr_reg *m = &rg->rg_mrs[i];
		u64 start = max(exp->ke_off, base + i * span);
		u64 stop = min(end, base + (i + 1) * span);
		struct ib_reg_wr *wr = &wrs[batch];
		struct ib_mr *mr;

		/*
		 * Sized for its own pages, not for the longest MR: a provider
		 * may allocate its page list up front (rxe on 6.1: 4 KiB per
		 * 256 pages), and a session holds one MR per export it has.
		 */
		mr = ib_alloc_mr(s->s_pd, IB_MR_TYPE_MEM_REG,
				 (round_up(stop, page) - round_down(start, page)) >>
				 sh->rs_shift);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr);
			goto out_free;
		}
		m->mr_ibmr = mr;
		m->mr_cqe.done = kxfer_mr_wc_done;
		/*
		 * Only the last of a chain is signaled and waited for, but a
		 * QP in error completes every work request, flushed: each
		 * MR's completion must be valid to complete.
		 */
		init_completion(&m->mr_done);
		ret = kxfer_mr_map(pool, sh->rs_dma, mr, start, stop,
				   sh->rs_shift);
		if (ret)
			goto out_free;
		/* Zero-based: keep only the offset within the first page. */
		mr->iova &= page - 1;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		m->mr_off = start - exp->ke_off;
		m->mr_len = stop - start;
		m->mr_iova = mr->iova;

		memset(wr, 0, sizeof(*wr));
		wr->wr.opcode = IB_WR_REG_MR;
		wr->wr.wr_cqe = &m->mr_cqe;
		wr->mr = mr;
		wr->key = mr->rkey;
		wr->access = kxfer_ib_access(exp->ke_access);
		if (batch)
			wrs[batch - 1].wr.next = &wr->wr;
		if (++batch == KXFER_REG_BATCH || i + 1 == nmrs) {
			wr->wr.send_flags = IB_SEND_SIGNALED;
			ret = kxfer_reg_post_wait(s, &wrs[0].wr, m);
			if (ret)
				goto out_free;
			batch = 0;
		}
	}
	kfree(wrs);
	return rg;

out_free:
	kfree(wrs);
	if (rg)
		kxfer_reg_free(rg);
	return ERR_PTR(ret);
}

/* A scoped export's token, right before its first EXPORT_ADD. */
static void kxfer_reg_advertise_token(struct kxfer_session *s,
				      struct kxfer_reg *rg)
{
	struct kxfer_msg_export_token t = {};

	strscpy(t.mt_name, rg->rg_export->ke_name, sizeof(t.mt_name));
	t.mt_gen = cpu_to_le64(rg->rg_gen);
	memcpy(t.mt_token, rg->rg_export->ke_token, sizeof(t.mt_token));
	kxfer_ctrl_send(s, KXFER_MSG_EXPORT_TOKEN, t.mt_name,
			sizeof(t) - sizeof(t.mt_hdr));
	memzero_explicit(&t, sizeof(t));
}

/* Tell the peer about a registered export, as many messages as it takes. */
static void kxfer_reg_advertise(struct kxfer_session *s, struct kxfer_reg *rg)
{
	struct kxfer_export *exp = rg->rg_export;
	unsigned int first, i, count;
	struct kxfer_msg_export *m;
	size_t body = KXFER_CTRL_MSG_SIZE - sizeof(m->me_hdr);

	m = kzalloc(KXFER_CTRL_MSG_SIZE, GFP_KERNEL);
	if (!m) {
		kxfer_session_fail(s, -ENOMEM, "out of memory for a message");
		return;
	}
	if (exp->ke_scoped)
		kxfer_reg_advertise_token(s, rg);
	for (first = 0; first < rg->rg_nmrs; first += count) {
		count = min_t(unsigned int, rg->rg_nmrs - first,
			      KXFER_WIRE_MRS_PER_MSG);
		memset(m, 0, KXFER_CTRL_MSG_SIZE);
		strscpy(m->me_name, exp->ke_name, sizeof(m->me_name));
		m->me_len = cpu_to_le64(exp->ke_len);
		m->me_gen = cpu_to_le64(rg->rg_gen);
		m->me_access = cpu_to_le32(exp->ke_access);
		/* past 65535 only to a peer that speaks KXFER_WIRE_F_MRS32 */
		m->me_nmrs = cpu_to_le16(rg->rg_nmrs & 0xffff);
		m->me_nmrs_hi = cpu_to_le16(rg->rg_nmrs >> 16);
		m->me_first = cpu_to_le16(first & 0xffff);
		m->me_first_hi = cpu_to_le16(first >> 16);
		m->me_count = cpu_to_le16(count);
		for (i = 0; i < count; i++) {
			const struct kxfer_mr_reg *r = &rg->rg_mrs[first + i];

			m->me_mrs[i].wm_off = cpu_to_le64(r->mr_off);
			m->me_mrs[i].wm_len = cpu_to_le64(r->mr_len);
			m->me_mrs[i].wm_iova = cpu_to_le64(r->mr_iova);
			m->me_mrs[i].wm_rkey = cpu_to_le32(r->mr_ibmr->rkey);
		}
		body = sizeof(*m) - sizeof(m->me_hdr) +
		       count * sizeof(m->me_mrs[0]);
		kxfer_ctrl_send(s, KXFER_MSG_EXPORT_ADD, m->me_name, body);
	}
	kfree(m);
}

/**
 * kxfer_regs_sync - register and advertise every export the session lacks
 * @s: the session, control channel up
 *
 * Exports for other peers are skipped, and so are those this device
 * would need too many MRs for (counted in s_exports_withheld); exports
 * already registered at their current generation are left alone.
 *
 * Return: 0 or a negative errno (the session should fail).  Caller
 * holds s_mutex.  May sleep (waits for registrations).
 */
int kxfer_regs_sync(struct kxfer_session *s)
{
	struct kxfer_reg_shape sh;
	unsigned int withheld = 0;
	struct kxfer_export *exp;
	struct kxfer_reg *rg;
	int ret = 0;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(exp, &kxfer_exports, ke_node) {
		if (!kxfer_export_matches(s, exp))
			continue;
		list_for_each_entry(rg, &s->s_regs, rg_node)
			if (rg->rg_export == exp && rg->rg_gen == exp->ke_gen)
				break;
		if (!list_entry_is_head(rg, &s->s_regs, rg_node))
			continue;
		/* Too large for this device: the others still go. */
		if (!kxfer_reg_shape(s, exp, &sh)) {
			withheld++;
			continue;
		}
		rg = kxfer_reg_export(s, exp, &sh);
		if (IS_ERR(rg)) {
			ret = PTR_ERR(rg);
			kxfer_warn("peer %s: cannot register export %s: %d\n",
				   s->s_name, exp->ke_name, ret);
			break;
		}
		list_add_tail(&rg->rg_node, &s->s_regs);
		kxfer_reg_advertise(s, rg);
	}
	mutex_unlock(&kxfer_obj_mutex);
	/* Withheld exports are never registered: each pass counts them all. */
	s->s_exports_withheld = withheld;
	return ret;
}

/**
 * kxfer_reg_invalidate - invalidate an export's MRs and free them
 * @s: the session
 * @rg: the registration, already off s_regs
 *
 * LOCAL_INV is posted and waited for while the QP works; whatever
 * happens, deregistration follows, which revokes the keys for good.
 *
 * Return: 0 if the invalidation completed, else a negative errno (the
 * keys are dead all the same).  Caller holds s_mutex.
 */
int kxfer_reg_invalidate(struct kxfer_session *s, struct kxfer_reg *rg)
{
	struct ib_send_wr *wrs = NULL;
	unsigned int i, batch = 0;
	int ret = -ENOTCONN;

	if (!s->s_ctrl_up || test_bit(KXFER_SE_FAIL, &s->s_events))
		goto out_dereg;
	wrs = kcalloc(KXFER_REG_BATCH, sizeof(*wrs), GFP_KERNEL);
	if (!wrs) {
		ret = -ENOMEM;
		goto out_dereg;
	}
	for (i = 0; i < rg->rg_nmrs; i++) {
		struct kxfer_mr_reg *m = &rg->rg_mrs[i];
		struct ib_send_wr *wr = &wrs[batch];

		memset(wr, 0, sizeof(*wr));
		wr->opcode = IB_WR_LOCAL_INV;
		wr->ex.invalidate_rkey = m->mr_ibmr->rkey;
		wr->wr_cqe = &m->mr_cqe;
		if (batch)
			wrs[batch - 1].next = wr;
		if (++batch == KXFER_REG_BATCH || i + 1 == rg->rg_nmrs) {
			wr->send_flags = IB_SEND_SIGNALED;
			ret = kxfer_reg_post_wait(s, &wrs[0], m);
			if (ret)
				break;
			batch = 0;
		}
	}
	kfree(wrs);
out_dereg:
	kxfer_reg_dereg(rg);
	return ret;
}

/**
 * kxfer_reg_drain_start - withdraw an export from a peer that drains
 * @s: the session
 * @rg: the export's registration on it
 *
 * The peer is told (EXPORT_WITHDRAW): it refuses new jobs to the export,
 * lets those it posted finish and answers (kxfer_reg_withdrawn()).  The
 * keys stay valid until then; the registration holds the export, which
 * counts as the session's drain, and a session whose peer does not
 * answer by the deadline (kxfer_drain_timeout_ms()) ends.
 *
 * Return: true if the drain started; false if the peer does not speak
 * KXFER_WIRE_F_DRAIN or the session cannot send (the caller invalidates
 * at once).  Caller holds s_mutex.
 */
bool kxfer_reg_drain_start(struct kxfer_session *s, struct kxfer_reg *rg)
{
	struct kxfer_msg_export_del m = {};
	struct kxfer_export *exp = rg->rg_export;

	lockdep_assert_held(&s->s_mutex);
	if (!(s->s_peer_features & KXFER_WIRE_F_DRAIN) || !s->s_ctrl_up ||
	    test_bit(KXFER_SE_FAIL, &s->s_events))
		return false;
	rg->rg_draining = true;
	rg->rg_drain_end = ktime_get_ns() +
			   (u64)kxfer_drain_timeout_ms() * NSEC_PER_MSEC;
	s->s_drains++;
	kref_get(&exp->ke_ref);
	strscpy(m.md_name, rg->rg_name, sizeof(m.md_name));
	m.md_gen = cpu_to_le64(rg->rg_gen);
	kxfer_ctrl_send(s, KXFER_MSG_EXPORT_WITHDRAW, m.md_name,
			sizeof(m) - sizeof(m.md_hdr));
	kxfer_ctrl_flush(s);
	return true;
}

/* The registration drained, or its session ends: let the export go. */
static void kxfer_reg_drain_end(struct kxfer_session *s, struct kxfer_reg *rg)
{
	struct kxfer_export *exp = rg->rg_export;

	s->s_drains--;
	rg->rg_draining = false;
	rg->rg_export = NULL;
	kxfer_export_drained(exp);
}

/**
 * kxfer_reg_withdrawn - the peer drained an export we withdrew
 * @s: the session
 * @m: its EXPORT_WITHDRAWN, checked by wire.c
 * @why: set to a reason when it ends the session
 *
 * No job of the peer's to the export is in flight any more: its keys are
 * invalidated (LOCAL_INV, waited for), then the export may go.
 *
 * Return: 0, or -EPROTO for an answer to nothing we withdrew.  Caller
 * holds s_mutex.
 */
int kxfer_reg_withdrawn(struct kxfer_session *s,
			const struct kxfer_msg_export_del *m, const char **why)
{
	u64 gen = le64_to_cpu(m->md_gen);
	struct kxfer_reg *rg;

	list_for_each_entry(rg, &s->s_regs, rg_node) {
		if (!rg->rg_draining || rg->rg_gen != gen ||
		    strcmp(rg->rg_name, (const char *)m->md_name))
			continue;
		list_del(&rg->rg_node);
		kxfer_reg_invalidate(s, rg);
		kxfer_reg_drain_end(s, rg);
		kvfree(rg);
		return 0;
	}
	*why = "answer to a withdrawal never asked";
	return -EPROTO;
}

/**
 * kxfer_regs_drain_overdue - end a session whose peer does not drain
 * @s: the session, control channel up
 * @now: ktime_get_ns()
 *
 * A peer that has not answered a withdrawal by its deadline holds keys
 * the export's owner wants gone: the session fails, naming the export,
 * and its teardown invalidates them.
 *
 * Return: true if the session was failed.  Caller holds s_mutex.
 */
bool kxfer_regs_drain_overdue(struct kxfer_session *s, u64 now)
{
	char why[64];
	struct kxfer_reg *rg;

	if (!s->s_drains)
		return false;
	list_for_each_entry(rg, &s->s_regs, rg_node) {
		if (!rg->rg_draining || now < rg->rg_drain_end)
			continue;
		kxfer_warn("peer %s: no answer to the withdrawal of export %s within %u ms: ending the session\n",
			   s->s_name, rg->rg_name, kxfer_drain_timeout_ms());
		snprintf(why, sizeof(why), "withdrawal of export %s unanswered",
			 rg->rg_name);
		kxfer_session_fail(s, -ETIMEDOUT, why);
		return true;
	}
	return false;
}

/**
 * kxfer_regs_drain_next - when the first awaited withdrawal answer is due
 * @s: the session
 *
 * Return: the earliest drain deadline (ktime_get_ns()), or U64_MAX - 1
 * when no answer is awaited.  Caller holds s_mutex.
 */
u64 kxfer_regs_drain_next(struct kxfer_session *s)
{
	u64 next = U64_MAX - 1;
	struct kxfer_reg *rg;

	if (!s->s_drains)
		return next;
	list_for_each_entry(rg, &s->s_regs, rg_node)
		if (rg->rg_draining)
			next = min(next, rg->rg_drain_end);
	return next;
}

/**
 * kxfer_regs_release - deregister every export MR of a session
 * @s: the session; its QPs are drained
 *
 * Exports being drained are let go: their keys die here too.  Caller
 * holds s_mutex.
 */
void kxfer_regs_release(struct kxfer_session *s)
{
	struct kxfer_reg *rg, *tmp;

	list_for_each_entry_safe(rg, tmp, &s->s_regs, rg_node) {
		list_del(&rg->rg_node);
		kxfer_reg_dereg(rg);
		if (rg->rg_draining)
			kxfer_reg_drain_end(s, rg);
		kvfree(rg);
	}
	s->s_exports_withheld = 0;
}
