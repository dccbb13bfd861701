/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: planning the work requests of a job (DESIGN §4.2).
 *
 * Pure C: this header and plan.c build both into the module and into the
 * host-side unit tests (selftests/host/plan_test.c), so nothing here may
 * depend on more than fixed-width types, which the host build provides
 * through selftests/host/kernel_shim.h.
 *
 * A job moves bytes between a local pool and one remote export, as an
 * ordered array of segments.  The planner turns it into an ordered list of
 * work requests (WRs), each one remote range and a gather list of local
 * ranges (SGEs), with as few WRs as the constraints allow:
 *
 *  1. consecutive segments contiguous on both sides are merged;
 *  2. consecutive segments contiguous on the remote side are gathered into
 *     one WR of up to @max_sge SGEs;
 *  3. no WR is longer than @stripe bytes;
 *  4. no SGE crosses a local chunk boundary (@local_run) and no WR crosses
 *     a remote memory region boundary (@remote_run).
 *
 * Executing the WRs in order, and each WR's SGEs in order, moves the same
 * bytes in the same order as executing the segments one by one, so even
 * segments that overlap on the destination side give the same result
 * (the later one wins): the planner never reorders anything.
 *
 * The order is chosen before planning, by kxfer_plan_order(): when no
 * destination byte is named by two segments (and no remote byte either),
 * the order of the segments changes no result, and planning them sorted
 * by remote offset gathers every remote-contiguous run of segments, in
 * whatever order the job listed them, into as few WRs as a job listed in
 * remote order gets.  Otherwise they are planned as the job lists them.
 */
#ifndef _KXFER_PLAN_H
#define _KXFER_PLAN_H

/* Stripe sizes the planner accepts: powers of two in this range. */
#define KXFER_PLAN_STRIPE_MIN	4096ULL
#define KXFER_PLAN_STRIPE_MAX	0x80000000ULL	/* 2 GiB: WR, SGE lengths fit u32 */

/**
 * struct kxfer_plan_seg - one segment of a job, validated before planning
 * @local_off: first byte in the local pool
 * @remote_off: first byte in the remote export
 * @len: bytes, > 0; neither range wraps around
 */
struct kxfer_plan_seg {
	u64	local_off;
	u64	remote_off;
	u64	len;
};

/**
 * struct kxfer_plan_sge - one gather/scatter element of a work request
 * @local_off: first byte in the local pool; the bytes lie in one local run
 * @len: bytes, 1..stripe
 */
struct kxfer_plan_sge {
	u64	local_off;
	u32	len;
};

/**
 * struct kxfer_plan_wr - one work request
 * @remote_off: first byte in the remote export; the WR lies in one remote run
 * @len: bytes, the sum of its SGEs' lengths, 1..stripe
 * @first_sge: index of its first SGE in the output SGE array
 * @nsge: SGEs, 1..max_sge, consecutive in the output SGE array
 */
struct kxfer_plan_wr {
	u64	remote_off;
	u32	len;
	u32	first_sge;
	u32	nsge;
};

/**
 * struct kxfer_plan_pos - where planning stopped, or starts
 * @seg: index of a segment
 * @off: byte offset inside that segment
 */
struct kxfer_plan_pos {
	u32	seg;
	u64	off;
};

/**
 * struct kxfer_plan - the parameters, outputs and position of a plan
 * @max_sge: in, SGEs per WR at most (the QP's max_send_sge), >= 1
 * @stripe: in, bytes per WR at most, a power of two in
 *	[KXFER_PLAN_STRIPE_MIN, KXFER_PLAN_STRIPE_MAX]
 * @local_run: in, bytes that are physically contiguous from a local
 *	offset (the rest of its pool chunk), >= 1
 * @remote_run: in, bytes from a remote offset that lie in the same remote
 *	memory region (one rkey), >= 1
 * @ctx: in, passed to @local_run and @remote_run
 * @wrs: in, where WRs go; NULL to count only
 * @wr_cap: in, entries of @wrs
 * @sges: in, where SGEs go; NULL to count only
 * @sge_cap: in, entries of @sges
 * @pos: in/out, where planning starts (zero for a new job) and, after a
 *	call, where the next call continues; an index into the segment
 *	array the calls are given (the one kxfer_plan_order() returned),
 *	which must be the same for every call of one plan
 * @nwr: out, WRs written by the last call
 * @nsge: out, SGEs written by the last call
 * @bytes: out, bytes covered by those WRs
 *
 * The planner reuses the last answer of each callback for later offsets
 * inside the same run (if [x, x + n) is one run, so is [y, x + n) for y in
 * it), which is always safe; the SGEs and WRs are the longest possible
 * when the callbacks describe fixed boundaries (a run from x ends at the
 * first chunk or region end after x), as pools and exports do.
 */
struct kxfer_plan {
	u32			max_sge;
	u64			stripe;
	u64			(*local_run)(void *ctx, u64 local_off);
	u64			(*remote_run)(void *ctx, u64 remote_off);
	void			*ctx;
	struct kxfer_plan_wr	*wrs;
	u32			wr_cap;
	struct kxfer_plan_sge	*sges;
	u32			sge_cap;
	struct kxfer_plan_pos	pos;
	u32			nwr;
	u32			nsge;
	u64			bytes;
};

/**
 * struct kxfer_plan_range - scratch entry of kxfer_plan_overlap()
 * @start: first byte
 * @end: one past the last byte
 */
struct kxfer_plan_range {
	u64	start;
	u64	end;
};

/* Digits of the radix sort of kxfer_plan_order(): 8 bits. */
#define KXFER_PLAN_RADIX	256

/**
 * struct kxfer_plan_scratch - working memory of kxfer_plan_order()
 * @count: the radix sort's histogram
 * @segs: room for 2 * nsegs segments: two sorted copies of the job
 *
 * Sized for a job of nsegs segments by struct_size(s, segs, 2 * nsegs),
 * that is 1 KiB + 48 bytes a segment.
 */
struct kxfer_plan_scratch {
	u32			count[KXFER_PLAN_RADIX];
	struct kxfer_plan_seg	segs[];
};

int kxfer_plan_build(struct kxfer_plan *p, const struct kxfer_plan_seg *segs,
		     u32 nsegs);
int kxfer_plan_count(struct kxfer_plan *p, const struct kxfer_plan_seg *segs,
		     u32 nsegs);
u64 kxfer_plan_bound(const struct kxfer_plan_seg *segs, u32 nsegs,
		     u64 stripe, u64 local_min, u64 remote_min);
bool kxfer_plan_overlap(const struct kxfer_plan_seg *segs, u32 nsegs,
			bool dst_local, struct kxfer_plan_range *scratch);
const struct kxfer_plan_seg *
kxfer_plan_order(const struct kxfer_plan_seg *segs, u32 nsegs, bool dst_local,
		 struct kxfer_plan_scratch *scratch, bool *overlap);

#endif /* _KXFER_PLAN_H */
