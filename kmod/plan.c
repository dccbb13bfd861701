// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the job planner (DESIGN §4.2).
 *
 * Pure logic, built into the module and into the host unit tests
 * (selftests/host/plan_test.c).  It reads the segments it is given, calls
 * the two run callbacks, and writes only inside the output arrays within
 * the capacities it is given.
 *
 * One greedy pass over the segments, in order.  Each byte range of a
 * segment either extends the SGE under construction (its local and remote
 * ends meet the range: the merge of step 1, also across segments), or
 * becomes a new SGE of the WR under construction (the remote end meets
 * it: the gather of step 2), or opens a new WR.  A piece ends at whichever
 * comes first: the end of the segment, the end of the local run of its
 * SGE, the stripe length of its WR, the end of the remote run of its WR.
 * Every constraint only ever shortens what the current WR may take, so
 * taking as much as possible at every step gives the fewest WRs.
 *
 * Byte semantics: the plan is the segments' bytes, in the segments' order,
 * cut into pieces; nothing is reordered or moved between segments.  Within
 * one WR the remote range is contiguous and each remote byte is written
 * once.  Executing the WRs in order on one QP therefore writes every
 * remote byte in the same order as executing the segments one by one: when
 * segments overlap on the remote side the later one wins, as it should.
 * Across QPs there is no order, hence kxfer_plan_overlap().
 *
 * Which order the segments come in is decided before, by
 * kxfer_plan_order(): the job's own, or the same segments sorted by
 * remote offset when that changes no byte of the result.
 *
 * Cost: O(nsegs + nwr + nsge) time plus one callback call per local run
 * and per remote run entered (each callback's last answer is reused while
 * offsets stay inside it), O(1) memory besides the output.
 */
#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/limits.h>
#else
#include "kernel_shim.h"
#endif

#include "plan.h"

static inline u64 plan_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* The last answer of a run callback: [start, start + run) is one run. */
struct plan_run_cache {
	u64	start;
	u64	run;
	u64	(*fn)(void *ctx, u64 off);
	void	*ctx;
};

/* Bytes of the run from @off on; 0 if the callback broke its contract. */
static u64 plan_run(struct plan_run_cache *c, u64 off)
{
	u64 d = off - c->start;	/* huge if off < start: a miss */

	if (d < c->run)
		return c->run - d;
	c->start = off;
	c->run = c->fn(c->ctx, off);
	return c->run;
}

/* The WR and the SGE under construction, and the output so far. */
struct plan_cur {
	struct kxfer_plan_wr	*wrs;
	struct kxfer_plan_sge	*sges;
	u32	nwr;		/* WRs closed */
	u32	nsge;		/* SGEs opened */
	u64	bytes;
	bool	open;		/* a WR is under construction */
	struct kxfer_plan_pos wr_pos;	/* where it started */
	u64	wr_roff;
	u64	wr_len;
	u64	wr_rleft;	/* bytes left in its remote run */
	u32	wr_first;
	u32	wr_nsge;
	u64	sge_loff;	/* its last SGE */
	u64	sge_len;
	u64	sge_lleft;	/* bytes left in that SGE's local run */
};

static void plan_close_sge(struct plan_cur *c)
{
	if (c->sges) {
		struct kxfer_plan_sge *e = &c->sges[c->nsge - 1];

		e->local_off = c->sge_loff;
		e->len = (u32)c->sge_len;
	}
}

static void plan_close_wr(struct plan_cur *c)
{
	plan_close_sge(c);
	if (c->wrs) {
		struct kxfer_plan_wr *w = &c->wrs[c->nwr];

		w->remote_off = c->wr_roff;
		w->len = (u32)c->wr_len;
		w->first_sge = c->wr_first;
		w->nsge = c->wr_nsge;
	}
	c->nwr++;
	c->bytes += c->wr_len;
	c->open = false;
}

static int plan_check(const struct kxfer_plan *p,
		      const struct kxfer_plan_seg *segs, u32 nsegs)
{
	if (!segs || !nsegs || !p->max_sge || !p->local_run || !p->remote_run)
		return -EINVAL;
	if (p->stripe < KXFER_PLAN_STRIPE_MIN ||
	    p->stripe > KXFER_PLAN_STRIPE_MAX ||
	    (p->stripe & (p->stripe - 1)))
		return -EINVAL;
	if (p->pos.seg > nsegs || (p->pos.seg == nsegs && p->pos.off) ||
	    (p->pos.seg < nsegs && p->pos.off >= segs[p->pos.seg].len))
		return -EINVAL;
	return 0;
}

/*
 * Plan from p->pos on into @c (arrays or NULL), with room for @wr_cap WRs
 * and @sge_cap SGEs.  Leaves in *@pos where to continue.
 */
static int plan_run_job(const struct kxfer_plan *p,
			const struct kxfer_plan_seg *segs, u32 nsegs,
			struct plan_cur *c, u32 wr_cap, u32 sge_cap,
			struct kxfer_plan_pos *pos)
{
	struct plan_run_cache lc = { .fn = p->local_run, .ctx = p->ctx };
	struct plan_run_cache rc = { .fn = p->remote_run, .ctx = p->ctx };
	u64 stripe = p->stripe;
	u64 off = p->pos.off;
	u32 i;

	for (i = p->pos.seg; i < nsegs; i++, off = 0) {
		const struct kxfer_plan_seg *s = &segs[i];

		if (!s->len || s->local_off + s->len < s->local_off ||
		    s->remote_off + s->len < s->remote_off)
			return -EINVAL;

		while (off < s->len) {
			u64 l = s->local_off + off;
			u64 r = s->remote_off + off;
			u64 n = s->len - off;
			bool cont = c->open && r == c->wr_roff + c->wr_len &&
				    c->wr_len < stripe && c->wr_rleft;

			if (!cont || l != c->sge_loff + c->sge_len ||
			    !c->sge_lleft) {
				if (!cont || c->wr_nsge == p->max_sge) {
					if (c->open)
						plan_close_wr(c);
					if (c->nwr == wr_cap) {
						pos->seg = i;
						pos->off = off;
						return -E2BIG;
					}
					c->wr_rleft = plan_run(&rc, r);
					if (!c->wr_rleft)
						return -EINVAL;
					c->open = true;
					c->wr_pos.seg = i;
					c->wr_pos.off = off;
					c->wr_roff = r;
					c->wr_len = 0;
					c->wr_first = c->nsge;
					c->wr_nsge = 0;
				} else {
					plan_close_sge(c);
				}
				if (c->nsge == sge_cap) {
					/* drop the open WR: a prefix of whole WRs */
					c->nsge = c->wr_first;
					c->open = false;
					*pos = c->wr_pos;
					return -E2BIG;
				}
				c->sge_lleft = plan_run(&lc, l);
				if (!c->sge_lleft)
					return -EINVAL;
				c->nsge++;
				c->wr_nsge++;
				c->sge_loff = l;
				c->sge_len = 0;
			}
			n = plan_min(n, c->sge_lleft);
			n = plan_min(n, stripe - c->wr_len);
			n = plan_min(n, c->wr_rleft);
			c->sge_len += n;
			c->sge_lleft -= n;
			c->wr_len += n;
			c->wr_rleft -= n;
			off += n;
		}
	}
	if (c->open)
		plan_close_wr(c);
	pos->seg = nsegs;
	pos->off = 0;
	return 0;
}

/**
 * kxfer_plan_build - plan the work requests of a job
 * @p: parameters and output arrays; @p->pos is where to start (zero it for
 *	a new job)
 * @segs: the job's segments, validated: each @len > 0, no range wraps
 * @nsegs: entries of @segs, >= 1
 *
 * Writes the WRs, in execution order, to @p->wrs and their SGEs to
 * @p->sges (the SGEs of one WR are consecutive, WR after WR), never more
 * than @p->wr_cap and @p->sge_cap entries.  Sets @p->nwr, @p->nsge and
 * @p->bytes to what was written, and @p->pos to where a next call would
 * continue.
 *
 * When the arrays are too small the call stops at a WR boundary: the
 * arrays hold a valid prefix of the plan (whole WRs, exactly as an
 * unbounded call would have made them) and a next call, with @p->pos
 * untouched, plans the rest.  It always makes progress when @p->wr_cap
 * >= 1 and @p->sge_cap >= @p->max_sge.  A caller that wants the whole
 * plan at once treats %-E2BIG as an error, or sizes the arrays first with
 * kxfer_plan_count() or kxfer_plan_bound().
 *
 * Return: 0 when the plan is complete (@p->pos.seg == @nsegs); %-E2BIG
 * when the arrays are full first; %-EINVAL for bad arguments (@max_sge 0,
 * @stripe not a power of two in [%KXFER_PLAN_STRIPE_MIN,
 * %KXFER_PLAN_STRIPE_MAX], no segments, a missing array or callback, a
 * @pos outside the job, a segment of length 0 or wrapping around, a
 * callback that returned 0), in which case the outputs are undefined.
 */
int kxfer_plan_build(struct kxfer_plan *p, const struct kxfer_plan_seg *segs,
		     u32 nsegs)
{
	struct plan_cur c = { .wrs = p->wrs, .sges = p->sges };
	int err;

	p->nwr = 0;
	p->nsge = 0;
	p->bytes = 0;
	err = plan_check(p, segs, nsegs);
	if (err)
		return err;
	if (!p->wrs || !p->sges)
		return -EINVAL;
	err = plan_run_job(p, segs, nsegs, &c, p->wr_cap, p->sge_cap, &p->pos);
	if (err && err != -E2BIG)
		return err;
	p->nwr = c.nwr;
	p->nsge = c.nsge;
	p->bytes = c.bytes;
	return err;
}

/**
 * kxfer_plan_count - count the work requests a plan needs, writing none
 * @p: parameters as for kxfer_plan_build(); @p->wrs, @p->sges and the
 *	capacities are ignored, @p->pos is where to start and is not changed
 * @segs: the job's segments
 * @nsegs: entries of @segs
 *
 * Sets @p->nwr, @p->nsge and @p->bytes to what kxfer_plan_build() would
 * write from @p->pos to the end of the job with unbounded arrays: exact
 * sizes for a two-pass caller.  Costs as much as planning.
 *
 * Return: 0; %-E2BIG if a count would reach U32_MAX; %-EINVAL as for
 * kxfer_plan_build().
 */
int kxfer_plan_count(struct kxfer_plan *p, const struct kxfer_plan_seg *segs,
		     u32 nsegs)
{
	struct plan_cur c = { };
	struct kxfer_plan_pos pos;
	int err;

	p->nwr = 0;
	p->nsge = 0;
	p->bytes = 0;
	err = plan_check(p, segs, nsegs);
	if (err)
		return err;
	err = plan_run_job(p, segs, nsegs, &c, U32_MAX, U32_MAX, &pos);
	if (err)
		return err;
	p->nwr = c.nwr;
	p->nsge = c.nsge;
	p->bytes = c.bytes;
	return 0;
}

/* Cut positions strictly inside a range of @len bytes, @unit apart. */
static u64 plan_cuts(u64 len, u64 unit)
{
	u64 x = len - 1;

	return x / unit + (x % unit != 0);
}

static u64 plan_add_sat(u64 a, u64 b)
{
	return a + b < a ? U64_MAX : a + b;
}

/**
 * kxfer_plan_bound - an upper bound of the WRs and SGEs of a plan, cheaply
 * @segs: the job's segments
 * @nsegs: entries of @segs
 * @stripe: the stripe the plan will use
 * @local_min: the smallest local chunk: local run boundaries are at least
 *	this many bytes apart (PAGE_SIZE is always safe for a pool)
 * @remote_min: the smallest remote memory region: remote run boundaries
 *	are at least this many bytes apart
 *
 * No callback is called.  A plan's SGEs are cut out of the segments; a
 * segment of length L holds at most ceil((L - 1) / m) cut positions of a
 * kind whose cuts are m bytes apart or more: local chunk ends, remote
 * region ends, and stripe ends (a WR that ends at the stripe started at
 * the previous cut or earlier).  Merging adds no cut; gathering and the
 * SGE limit only end WRs where an SGE ends.  Hence
 *
 *	nwr <= nsge <= sum over segments of
 *		1 + cuts(L, local_min) + cuts(L, remote_min) + cuts(L, stripe)
 *
 * that is at most 4 per segment no longer than the smallest of the three
 * units (any segment may straddle a boundary), and about L / unit for
 * long ones.  The bound is for sizing; kxfer_plan_count() is exact.
 *
 * Return: the bound, saturated at U64_MAX; a zero @stripe, @local_min or
 * @remote_min counts as 1.
 */
u64 kxfer_plan_bound(const struct kxfer_plan_seg *segs, u32 nsegs,
		     u64 stripe, u64 local_min, u64 remote_min)
{
	u64 sum = 0;
	u32 i;

	stripe = stripe ? stripe : 1;
	local_min = local_min ? local_min : 1;
	remote_min = remote_min ? remote_min : 1;
	for (i = 0; i < nsegs; i++) {
		u64 len = segs[i].len;
		u64 n = 1;

		if (len > 1) {
			n = plan_add_sat(n, plan_cuts(len, local_min));
			n = plan_add_sat(n, plan_cuts(len, remote_min));
			n = plan_add_sat(n, plan_cuts(len, stripe));
		}
		sum = plan_add_sat(sum, n);
	}
	return sum;
}

/*
 * Sorting ranges by start, in place, without recursion or allocation:
 * an introsort.  Quicksort (median of three, Hoare partition) with an
 * explicit stack that always keeps the larger part and goes on with the
 * smaller one, so it never holds more than log2(n) <= 32 entries; a part
 * that has been split 2 * log2(n) times without getting small is
 * heapsorted instead, which bounds the worst case to O(n log n); small
 * parts are insertion-sorted.  Quicksort scans memory in order, which
 * makes it several times faster than heapsort alone on large jobs.
 */
#define PLAN_SORT_SMALL	16
#ifndef PLAN_SORT_DEPTH
#define PLAN_SORT_DEPTH	2	/* quicksort levels per bit of n; tests set 0 */
#endif

static void plan_swap(struct kxfer_plan_range *a, struct kxfer_plan_range *b)
{
	struct kxfer_plan_range t = *a;

	*a = *b;
	*b = t;
}

static void plan_sift_down(struct kxfer_plan_range *v, u32 root, u32 n)
{
	struct kxfer_plan_range x = v[root];

	for (;;) {
		u64 child = 2 * (u64)root + 1;

		if (child >= n)
			break;
		if (child + 1 < n && v[child].start < v[child + 1].start)
			child++;
		if (v[child].start <= x.start)
			break;
		v[root] = v[child];
		root = (u32)child;
	}
	v[root] = x;
}

static void plan_heapsort(struct kxfer_plan_range *v, u32 n)
{
	u32 i;

	for (i = n / 2; i-- > 0; )
		plan_sift_down(v, i, n);
	for (i = n; i-- > 1; ) {
		plan_swap(&v[0], &v[i]);
		plan_sift_down(v, 0, i);
	}
}

static void plan_insertion_sort(struct kxfer_plan_range *v, u32 n)
{
	u32 i, j;

	for (i = 1; i < n; i++) {
		struct kxfer_plan_range x = v[i];

		for (j = i; j && v[j - 1].start > x.start; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Partition around a median of three; returns the pivot's index. */
static u32 plan_partition(struct kxfer_plan_range *a, u32 n)
{
	u32 mid = n / 2, i = 0, j = n;
	u64 pivot;

	if (a[mid].start < a[0].start)
		plan_swap(&a[mid], &a[0]);
	if (a[n - 1].start < a[0].start)
		plan_swap(&a[n - 1], &a[0]);
	if (a[n - 1].start < a[mid].start)
		plan_swap(&a[n - 1], &a[mid]);
	plan_swap(&a[0], &a[mid]);
	pivot = a[0].start;
	for (;;) {
		do
			i++;
		while (i < n && a[i].start < pivot);
		do
			j--;
		while (a[j].start > pivot);
		if (i >= j)
			break;
		plan_swap(&a[i], &a[j]);
	}
	plan_swap(&a[0], &a[j]);
	return j;
}

static void plan_sort(struct kxfer_plan_range *v, u32 n)
{
	struct {
		u32	lo;
		u32	n;
		u32	depth;
	} stack[33];
	u32 sp = 0, depth = 0, m, lo, k, p;

	for (m = n; m; m >>= 1)
		depth += PLAN_SORT_DEPTH;
	lo = 0;
	k = n;
	for (;;) {
		if (k <= PLAN_SORT_SMALL) {
			plan_insertion_sort(v + lo, k);
		} else if (!depth) {
			plan_heapsort(v + lo, k);
		} else {
			depth--;
			p = plan_partition(v + lo, k);
			/* keep the larger part, go on with the smaller */
			stack[sp].depth = depth;
			if (p < k - p - 1) {
				stack[sp].lo = lo + p + 1;
				stack[sp].n = k - p - 1;
				k = p;
			} else {
				stack[sp].lo = lo;
				stack[sp].n = p;
				lo += p + 1;
				k -= p + 1;
			}
			sp++;
			continue;
		}
		if (!sp)
			break;
		sp--;
		lo = stack[sp].lo;
		k = stack[sp].n;
		depth = stack[sp].depth;
	}
}

/* Folded destination ranges, in job order. */
struct plan_fold {
	struct kxfer_plan_range	*scratch;
	u32	k;
	u64	prev_end;
	bool	sorted;		/* ascending and disjoint so far */
};

static void plan_fold_push(struct plan_fold *f, u64 start, u64 end)
{
	if (f->k && start < f->prev_end)
		f->sorted = false;
	if (f->scratch) {
		f->scratch[f->k].start = start;
		f->scratch[f->k].end = end;
	}
	f->prev_end = end;
	f->k++;
}

/**
 * kxfer_plan_overlap - whether two segments overlap on the destination side
 * @segs: the job's segments, validated
 * @nsegs: entries of @segs
 * @dst_local: compare local ranges (the destination of a READ) instead of
 *	remote ranges (the destination of a WRITE)
 * @scratch: @nsegs entries the function may overwrite, or NULL
 *
 * Segments whose destination ranges overlap must be executed in order, so
 * such a job must not be striped over several QPs (RC orders work only
 * within one QP).  A single-QP session need not ask.
 *
 * First, consecutive segments contiguous on the destination side are
 * folded into one range (they cannot overlap each other), and the ranges
 * are checked to be ascending and disjoint, in O(nsegs): the common case,
 * a job written front to back, ends here.  Otherwise the ranges are
 * copied to @scratch, sorted by start in place (an introsort: O(n log n)
 * worst case, no recursion, no allocation, a 400-byte stack) and swept
 * once.  In start order, if a range overlaps a later one it also overlaps
 * the next one (which starts between them), so comparing neighbours is
 * exact.
 *
 * Return: true if two segments' destination ranges share a byte; false if
 * none do.  With a NULL @scratch, a job that is not ascending is reported
 * as overlapping: a conservative answer.
 */
bool kxfer_plan_overlap(const struct kxfer_plan_seg *segs, u32 nsegs,
			bool dst_local, struct kxfer_plan_range *scratch)
{
	struct plan_fold f = { .scratch = scratch, .sorted = true };
	u64 start, end;
	u32 i;

	if (!nsegs)
		return false;
	start = dst_local ? segs[0].local_off : segs[0].remote_off;
	end = start + segs[0].len;
	for (i = 1; i < nsegs; i++) {
		u64 s = dst_local ? segs[i].local_off : segs[i].remote_off;

		if (s == end) {
			end += segs[i].len;
			continue;
		}
		plan_fold_push(&f, start, end);
		if (!f.sorted && !scratch)
			return true;
		start = s;
		end = s + segs[i].len;
	}
	plan_fold_push(&f, start, end);
	if (f.sorted)
		return false;
	if (!scratch)
		return true;

	plan_sort(scratch, f.k);
	for (i = 1; i < f.k; i++)
		if (scratch[i].start < scratch[i - 1].end)
			return true;
	return false;
}

/*
 * Ordering a job for the planner.  The key of a segment is its offset on
 * one side; the sort is a stable least-significant-digit radix sort, 8
 * bits a pass, over only the bytes in which some keys differ (at most 8
 * passes, 3 for offsets below 4 GiB aligned to 256 bytes), from the job
 * into the two halves of the scratch, turn about; tiny jobs are
 * insertion-sorted.  O(nsegs) time per pass and no recursion, whatever
 * the input, and a stack of a few words.
 */
#define PLAN_ORDER_SMALL	16

static inline u64 plan_key(const struct kxfer_plan_seg *s, bool local)
{
	return local ? s->local_off : s->remote_off;
}

/* Whether one side's ranges, in job order, are ascending and disjoint. */
static bool plan_ascending(const struct kxfer_plan_seg *segs, u32 n,
			   bool local)
{
	u64 end = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		u64 start = plan_key(&segs[i], local);

		if (i && start < end)
			return false;
		end = start + segs[i].len;
	}
	return true;
}

/*
 * Whether two ranges of one side share a byte, the segments sorted by
 * that side: a range that overlaps a later one overlaps the next one,
 * which starts between them.
 */
static bool plan_sorted_overlap(const struct kxfer_plan_seg *v, u32 n,
				bool local)
{
	u32 i;

	for (i = 1; i < n; i++)
		if (plan_key(&v[i], local) <
		    plan_key(&v[i - 1], local) + v[i - 1].len)
			return true;
	return false;
}

/* Stable; copies @src (@n > 0) into @dst, sorted by one side. */
static void plan_order_insertion(const struct kxfer_plan_seg *src, u32 n,
				 bool local, struct kxfer_plan_seg *dst)
{
	u32 i, j;

	for (i = 0; i < n; i++) {
		u64 k = plan_key(&src[i], local);

		for (j = i; j && plan_key(&dst[j - 1], local) > k; j--)
			dst[j] = dst[j - 1];
		dst[j] = src[i];
	}
}

/*
 * The segments @src[0..@n) sorted by one side, stably: @src itself when
 * every key is equal, else one of the two halves of @sc->segs.
 */
static const struct kxfer_plan_seg *
plan_order_sort(const struct kxfer_plan_seg *src, u32 n, bool local,
		struct kxfer_plan_scratch *sc)
{
	struct kxfer_plan_seg *out = sc->segs, *other = sc->segs + n;
	const struct kxfer_plan_seg *in = src;
	u64 all_or = 0, all_and = U64_MAX, diff;
	unsigned int shift;
	u32 i, d, sum;

	for (i = 0; i < n; i++) {
		u64 k = plan_key(&src[i], local);

		all_or |= k;
		all_and &= k;
	}
	diff = n ? all_or ^ all_and : 0;
	if (!diff)
		return src;
	if (n <= PLAN_ORDER_SMALL) {
		plan_order_insertion(src, n, local, out);
		return out;
	}
	/* Each pass goes into the other half, the first into sc->segs. */
	for (shift = 0; shift < 64; shift += 8) {
		struct kxfer_plan_seg *t;

		if (!((diff >> shift) & (KXFER_PLAN_RADIX - 1)))
			continue;
		for (d = 0; d < KXFER_PLAN_RADIX; d++)
			sc->count[d] = 0;
		for (i = 0; i < n; i++)
			sc->count[(plan_key(&in[i], local) >> shift) &
				  (KXFER_PLAN_RADIX - 1)]++;
		for (d = 0, sum = 0; d < KXFER_PLAN_RADIX; d++) {
			u32 c = sc->count[d];

			sc->count[d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			out[sc->count[(plan_key(&in[i], local) >> shift) &
				      (KXFER_PLAN_RADIX - 1)]++] = in[i];
		in = out;
		t = other;
		other = out;
		out = t;
	}
	return in;
}

/**
 * kxfer_plan_order - the order in which to plan a job's segments
 * @segs: the job's segments, validated: each @len > 0, no range wraps
 * @nsegs: entries of @segs
 * @dst_local: the local side is the destination (a READ), not the remote
 *	side (a WRITE)
 * @scratch: working memory for 2 * @nsegs segments (see struct
 *	kxfer_plan_scratch), or NULL
 * @overlap: out, whether two segments' destination ranges share a byte,
 *	exactly as kxfer_plan_overlap() answers it
 *
 * When no two segments share a destination byte, nor a remote byte, the
 * order in which they are executed changes nothing in the result, and
 * the segments sorted by remote offset plan into the fewest WRs: every
 * run of remote-contiguous segments, wherever the job lists its parts,
 * becomes one WR of up to max_sge SGEs (or fewer, longer ones), as it
 * would for a job listed in remote order.  Otherwise the job's own order
 * is kept, and with it the rule that a later segment wins.
 *
 * (Sorted, the WRs are never more, when the run callbacks describe fixed
 * boundaries: with disjoint remote ranges each WR of the job's own plan
 * is a remote-contiguous run of its bytes, hence also a run of the
 * sorted bytes, and the greedy planner makes the fewest WRs of a given
 * byte order.)
 *
 * A job whose ranges are already ascending on the sides that matter
 * needs no scratch and costs one or two passes over @segs.  Otherwise
 * the segments are copied into @scratch and sorted, in O(@nsegs) per
 * byte of key that varies: at most 8 passes, no recursion, no allocation.
 * With a NULL @scratch the function says only whether it needs one.
 *
 * The planner's positions (&struct kxfer_plan.pos) then index the
 * returned array; each of its segments is one of @segs, whole, so SGEs
 * keep the local offsets that go with their remote ones.
 *
 * Return: the segments to plan, @nsegs of them: @segs itself, or a
 * sorted copy inside @scratch (valid while @scratch is); NULL only when
 * @scratch is NULL and needed, in which case *@overlap is not set.
 */
const struct kxfer_plan_seg *
kxfer_plan_order(const struct kxfer_plan_seg *segs, u32 nsegs, bool dst_local,
		 struct kxfer_plan_scratch *scratch, bool *overlap)
{
	bool remote_asc = plan_ascending(segs, nsegs, false);
	bool dst_asc = dst_local ? plan_ascending(segs, nsegs, true) :
				   remote_asc;
	const struct kxfer_plan_seg *v;

	if (dst_asc && remote_asc) {
		*overlap = false;
		return segs;
	}
	if (!scratch)
		return NULL;
	if (!dst_asc) {
		v = plan_order_sort(segs, nsegs, dst_local, scratch);
		*overlap = plan_sorted_overlap(v, nsegs, dst_local);
		if (*overlap)
			return segs;
		if (!dst_local)
			return v;	/* a WRITE: sorted by remote already */
	}
	*overlap = false;
	if (remote_asc)
		return segs;
	/* A READ to disjoint local ranges: its remote ranges may overlap. */
	v = plan_order_sort(segs, nsegs, false, scratch);
	return plan_sorted_overlap(v, nsegs, false) ? segs : v;
}
