// SPDX-License-Identifier: GPL-2.0-only
/*
 * plan_test: host-side unit tests of kmod/plan.c, the job planner
 * (DESIGN §4.2).  Built from the module's own source.
 *
 * Every plan is checked twice: against its invariants (SGEs inside one
 * local run, WRs inside one remote run, lengths, SGE counts, stripe, and
 * the plan's byte stream equal to the segments' byte stream, piece by
 * piece, in order), and by a byte model: the segments are executed one by
 * one on one copy of the memory, the plan WR by WR and SGE by SGE on
 * another, and the copies must be equal, for WRITE and for READ.
 *
 * Jobs planned as the module plans them, ordered first by
 * kxfer_plan_order(), are checked against the job's own segments: the
 * order is a permutation of them, the job's own when destinations (or,
 * for a READ, remote ranges) overlap; the plan moves every byte of every
 * segment exactly once; the byte model, executing the job's segments in
 * the job's order, agrees; and the plan has no more WRs than the job's
 * own order gives.
 *
 * The random cases use a fixed seed, printed; KXFER_PLAN_SEED and
 * KXFER_PLAN_CASES override it and the number of cases.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel_shim.h"
#include "plan.h"

#include "kselftest_harness.h"
/*
 * Planning 655,360 segments (seed003_page1_contiguous), or 1M, takes a few
 * seconds of CPU; beside two guests and a compiler on two cores the
 * harness's 30 s were not enough once.  Nothing here waits on anything.
 */
#define KXFER_HARNESS_TIMEOUT	300
#include "../harness_main.h"

/*
 * kmod/plan.c once more, renamed, with the sort's quicksort depth a
 * variable: its static plan_sort() can be tested directly, and with depth
 * 0 the heapsort that bounds its worst case (which median-of-three
 * quicksort practically never reaches) is tested too.
 */
static u32 test_sort_depth = 2;
#define PLAN_SORT_DEPTH		test_sort_depth
#define kxfer_plan_build	copy_plan_build
#define kxfer_plan_count	copy_plan_count
#define kxfer_plan_bound	copy_plan_bound
#define kxfer_plan_overlap	copy_plan_overlap
#define kxfer_plan_order	copy_plan_order
#include "plan.c"
#undef kxfer_plan_build
#undef kxfer_plan_count
#undef kxfer_plan_bound
#undef kxfer_plan_overlap
#undef kxfer_plan_order

#define KIB	(1ULL << 10)
#define MIB	(1ULL << 20)
#define GIB	(1ULL << 30)

#define DEFAULT_SEED	0x6b78666572003ULL
#define DEFAULT_CASES	400

/* --- random numbers: splitmix64 --- */

static u64 rng_state;

static u64 rnd(void)
{
	u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 rnd_below(u64 n)
{
	return n ? rnd() % n : 0;
}

static u64 env_u64(const char *name, u64 dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : dflt;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static u64 min64(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* --- the hardware model: local pool chunks, remote memory regions --- */

struct runs {
	u64	span;		/* aligned runs of span bytes; 0: bounds */
	u64	*bounds;	/* sorted run ends; unlimited past the last */
	u32	nbounds;
	u64	min_gap;	/* boundaries are at least this far apart */
	u64	calls;
	const char *name;
};

static u64 runs_at(const struct runs *m, u64 off)
{
	u32 lo = 0, hi = m->nbounds;

	if (m->span)
		return m->span - off % m->span;
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (m->bounds[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == m->nbounds ? U64_MAX - off : m->bounds[lo] - off;
}

static void runs_span(struct runs *m, u64 span, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->span = span;
	m->min_gap = span;
	m->name = name;
}

static void runs_unlimited(struct runs *m)
{
	memset(m, 0, sizeof(*m));
	m->min_gap = U64_MAX;
	m->name = "unlimited";
}

/* Runs of random sizes from @sizes (or 1..@sizes[0] bytes if !@n). */
static void runs_random(struct runs *m, u64 size, const u64 *sizes, u32 n,
			const char *name)
{
	u64 off = 0;
	u32 cap = 16;

	memset(m, 0, sizeof(*m));
	m->bounds = malloc(cap * sizeof(u64));
	m->min_gap = U64_MAX;
	m->name = name;
	while (off < size) {
		u64 gap = n ? sizes[rnd_below(n)] : 1 + rnd_below(sizes[0]);

		if (m->nbounds == cap) {
			cap *= 2;
			m->bounds = realloc(m->bounds, cap * sizeof(u64));
		}
		off += gap;
		m->bounds[m->nbounds++] = off;
		m->min_gap = min64(m->min_gap, gap);
	}
}

static void runs_free(struct runs *m)
{
	free(m->bounds);
	m->bounds = NULL;
}

struct world {
	struct runs	local;
	struct runs	remote;
};

static u64 local_cb(void *ctx, u64 off)
{
	struct world *w = ctx;

	w->local.calls++;
	return runs_at(&w->local, off);
}

static u64 remote_cb(void *ctx, u64 off)
{
	struct world *w = ctx;

	w->remote.calls++;
	return runs_at(&w->remote, off);
}

/* --- plans and their checks --- */

struct result {
	struct kxfer_plan_wr	*wrs;
	struct kxfer_plan_sge	*sges;
	u32	nwr;
	u32	nsge;
	u64	bytes;
};

static void result_free(struct result *r)
{
	free(r->wrs);
	free(r->sges);
	memset(r, 0, sizeof(*r));
}

static char why[512];

#define FAIL(...)	({ snprintf(why, sizeof(why), __VA_ARGS__); why; })

/* Assert that a checker found nothing wrong, printing what it found. */
#define OK(expr) do {							\
	const char *__e = (expr);					\
	if (__e)							\
		TH_LOG("%s", __e);					\
	ASSERT_TRUE(__e == NULL);					\
} while (0)

#define CANARY	0xa5

static bool canary_ok(const void *p, size_t len)
{
	const u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != CANARY)
			return false;
	return true;
}

static void plan_init(struct kxfer_plan *p, struct world *w, u32 max_sge,
		      u64 stripe)
{
	memset(p, 0, sizeof(*p));
	p->max_sge = max_sge;
	p->stripe = stripe;
	p->local_run = local_cb;
	p->remote_run = remote_cb;
	p->ctx = w;
}

/*
 * Two passes: count, then build into arrays of exactly that size (with
 * canaries behind them).
 */
static const char *plan_job(struct world *w, const struct kxfer_plan_seg *segs,
			    u32 n, u32 max_sge, u64 stripe, struct result *res)
{
	struct kxfer_plan p;
	u32 nwr, nsge;
	int err;

	memset(res, 0, sizeof(*res));
	plan_init(&p, w, max_sge, stripe);
	err = kxfer_plan_count(&p, segs, n);
	if (err)
		return FAIL("count: %d", err);
	nwr = p.nwr;
	nsge = p.nsge;
	res->wrs = malloc((nwr + 4) * sizeof(*res->wrs));
	res->sges = malloc((nsge + 4) * sizeof(*res->sges));
	memset(res->wrs, CANARY, (nwr + 4) * sizeof(*res->wrs));
	memset(res->sges, CANARY, (nsge + 4) * sizeof(*res->sges));
	p.wrs = res->wrs;
	p.wr_cap = nwr;
	p.sges = res->sges;
	p.sge_cap = nsge;
	err = kxfer_plan_build(&p, segs, n);
	if (err)
		return FAIL("build: %d", err);
	if (p.nwr != nwr || p.nsge != nsge)
		return FAIL("build made %u WRs %u SGEs, count said %u %u",
			    p.nwr, p.nsge, nwr, nsge);
	if (p.pos.seg != n || p.pos.off)
		return FAIL("build ended at %u+%llu", p.pos.seg,
			    (unsigned long long)p.pos.off);
	if (!canary_ok(res->wrs + nwr, 4 * sizeof(*res->wrs)) ||
	    !canary_ok(res->sges + nsge, 4 * sizeof(*res->sges)))
		return FAIL("build wrote past its arrays");
	res->nwr = nwr;
	res->nsge = nsge;
	res->bytes = p.bytes;
	return NULL;
}

struct piece {
	u64	l;
	u64	r;
	u64	len;
};

/* Append a piece, merging it into the last one if both sides continue. */
static void canon_push(struct piece *v, u64 *n, u64 l, u64 r, u64 len)
{
	struct piece *last = *n ? &v[*n - 1] : NULL;

	if (last && last->l + last->len == l && last->r + last->len == r) {
		last->len += len;
		return;
	}
	v[*n].l = l;
	v[*n].r = r;
	v[*n].len = len;
	(*n)++;
}

static const char *check_plan(const struct world *w,
			      const struct kxfer_plan_seg *segs, u32 n,
			      u32 max_sge, u64 stripe, const struct result *res)
{
	struct piece *a = NULL, *b = NULL;
	u64 na = 0, nb = 0, total = 0, seg_total = 0;
	const char *err = NULL;
	u32 i, next = 0;

	for (i = 0; i < res->nwr; i++) {
		const struct kxfer_plan_wr *wr = &res->wrs[i];
		u64 sum = 0;
		u32 k;

		if (wr->nsge < 1 || wr->nsge > max_sge)
			return FAIL("WR %u: %u SGEs, max %u", i, wr->nsge,
				    max_sge);
		if (wr->first_sge != next)
			return FAIL("WR %u: first SGE %u, expected %u", i,
				    wr->first_sge, next);
		if (!wr->len || wr->len > stripe)
			return FAIL("WR %u: length %u, stripe %llu", i,
				    wr->len, (unsigned long long)stripe);
		if (runs_at(&w->remote, wr->remote_off) < wr->len)
			return FAIL("WR %u: [%#llx +%u) crosses a remote region",
				    i, (unsigned long long)wr->remote_off,
				    wr->len);
		for (k = 0; k < wr->nsge; k++) {
			const struct kxfer_plan_sge *s = &res->sges[next + k];

			if (!s->len)
				return FAIL("WR %u SGE %u: empty", i, k);
			if (runs_at(&w->local, s->local_off) < s->len)
				return FAIL("WR %u SGE %u: [%#llx +%u) crosses a local chunk",
					    i, k,
					    (unsigned long long)s->local_off,
					    s->len);
			sum += s->len;
		}
		if (sum != wr->len)
			return FAIL("WR %u: length %u, SGEs sum to %llu", i,
				    wr->len, (unsigned long long)sum);
		next += wr->nsge;
		total += wr->len;
	}
	if (next != res->nsge)
		return FAIL("WRs use %u SGEs of %u", next, res->nsge);
	for (i = 0; i < n; i++)
		seg_total += segs[i].len;
	if (total != res->bytes || total != seg_total)
		return FAIL("bytes: WRs %llu, reported %llu, segments %llu",
			    (unsigned long long)total,
			    (unsigned long long)res->bytes,
			    (unsigned long long)seg_total);

	/* The same byte stream, in the same order. */
	a = malloc((n + 1) * sizeof(*a));
	b = malloc((res->nsge + 1) * sizeof(*b));
	for (i = 0; i < n; i++)
		canon_push(a, &na, segs[i].local_off, segs[i].remote_off,
			   segs[i].len);
	for (i = 0; i < res->nwr; i++) {
		const struct kxfer_plan_wr *wr = &res->wrs[i];
		u64 r = wr->remote_off;
		u32 k;

		for (k = 0; k < wr->nsge; k++) {
			const struct kxfer_plan_sge *s =
				&res->sges[wr->first_sge + k];

			canon_push(b, &nb, s->local_off, r, s->len);
			r += s->len;
		}
	}
	if (na != nb) {
		err = FAIL("byte stream: %llu runs in segments, %llu in plan",
			   (unsigned long long)na, (unsigned long long)nb);
	} else {
		for (i = 0; i < na; i++) {
			if (a[i].l != b[i].l || a[i].r != b[i].r ||
			    a[i].len != b[i].len) {
				err = FAIL("byte stream differs at run %u", i);
				break;
			}
		}
	}
	free(a);
	free(b);
	return err;
}

/* --- the byte model --- */

struct mem {
	u8	*la, *lb;	/* two copies of the local pool */
	u8	*ra, *rb;	/* two copies of the remote export */
	u64	lsize, rsize;
};

static void fill_random(u8 *p, u64 len)
{
	u64 i, x;

	for (i = 0; i + 8 <= len; i += 8) {
		x = rnd();
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = rnd();
}

static void mem_init(struct mem *m, u64 lsize, u64 rsize)
{
	m->lsize = lsize;
	m->rsize = rsize;
	m->la = malloc(lsize);
	m->lb = malloc(lsize);
	m->ra = malloc(rsize);
	m->rb = malloc(rsize);
	fill_random(m->la, lsize);
	memcpy(m->lb, m->la, lsize);
	fill_random(m->ra, rsize);
	memcpy(m->rb, m->ra, rsize);
}

static void mem_free(struct mem *m)
{
	free(m->la);
	free(m->lb);
	free(m->ra);
	free(m->rb);
	memset(m, 0, sizeof(*m));
}

/*
 * WRITE (local to remote) or READ (remote to local): the segments one by
 * one into copy a, the plan into copy b, then compare every byte the
 * segments name.  The copies are equal before (the model keeps them so),
 * and only those bytes may change.
 */
static const char *check_bytes(struct mem *m, const struct kxfer_plan_seg *segs,
			       u32 n, const struct result *res, bool read)
{
	u8 *src = read ? m->ra : m->la;		/* == rb, lb */
	u8 *da = read ? m->la : m->ra;
	u8 *db = read ? m->lb : m->rb;
	u32 i, k;

	for (i = 0; i < n; i++) {
		const struct kxfer_plan_seg *s = &segs[i];

		if (read)
			memcpy(da + s->local_off, src + s->remote_off, s->len);
		else
			memcpy(da + s->remote_off, src + s->local_off, s->len);
	}
	for (i = 0; i < res->nwr; i++) {
		const struct kxfer_plan_wr *wr = &res->wrs[i];
		u64 r = wr->remote_off;

		for (k = 0; k < wr->nsge; k++) {
			const struct kxfer_plan_sge *s =
				&res->sges[wr->first_sge + k];

			if (read)
				memcpy(db + s->local_off, src + r, s->len);
			else
				memcpy(db + r, src + s->local_off, s->len);
			r += s->len;
		}
	}
	for (i = 0; i < n; i++) {
		u64 off = read ? segs[i].local_off : segs[i].remote_off;

		if (memcmp(da + off, db + off, segs[i].len))
			return FAIL("%s: bytes differ in segment %u",
				    read ? "READ" : "WRITE", i);
	}
	return NULL;
}

/* --- overlap references --- */

static int range_cmp(const void *x, const void *y)
{
	const struct kxfer_plan_range *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

static bool overlap_ref(const struct kxfer_plan_seg *segs, u32 n, bool local)
{
	struct kxfer_plan_range *v = malloc((n + 1) * sizeof(*v));
	bool hit = false;
	u32 i;

	for (i = 0; i < n; i++) {
		v[i].start = local ? segs[i].local_off : segs[i].remote_off;
		v[i].end = v[i].start + segs[i].len;
	}
	qsort(v, n, sizeof(*v), range_cmp);
	for (i = 1; i < n && !hit; i++)
		hit = v[i].start < v[i - 1].end;
	free(v);
	return hit;
}

static bool overlap_brute(const struct kxfer_plan_seg *segs, u32 n, bool local)
{
	u32 i, j;

	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			u64 a = local ? segs[i].local_off : segs[i].remote_off;
			u64 b = local ? segs[j].local_off : segs[j].remote_off;

			if (a < b + segs[j].len && b < a + segs[i].len)
				return true;
		}
	}
	return false;
}

static const char *check_overlap(const struct kxfer_plan_seg *segs, u32 n,
				 bool *remote_overlap)
{
	struct kxfer_plan_range *scratch = malloc(n * sizeof(*scratch));
	const char *err = NULL;
	int local;

	for (local = 0; local < 2 && !err; local++) {
		bool got = kxfer_plan_overlap(segs, n, local, scratch);
		bool ref = overlap_ref(segs, n, local);

		if (got != ref)
			err = FAIL("overlap(%s): %d, reference %d",
				   local ? "local" : "remote", got, ref);
		else if (n <= 300 && ref != overlap_brute(segs, n, local))
			err = FAIL("overlap references disagree");
		else if (ref && !kxfer_plan_overlap(segs, n, local, NULL))
			err = FAIL("overlap without scratch: not conservative");
		if (!local)
			*remote_overlap = ref;
	}
	free(scratch);
	return err;
}

/*
 * Plan again in small batches (kxfer_plan_build() resumed at p->pos) and
 * compare with the one-shot plan.
 */
static const char *check_batches(struct world *w,
				 const struct kxfer_plan_seg *segs, u32 n,
				 u32 max_sge, u64 stripe,
				 const struct result *res)
{
	struct kxfer_plan p;
	u32 wr_cap = 1 + rnd_below(8);
	u32 sge_cap = max_sge + rnd_below(8);
	struct kxfer_plan_wr *wrs = malloc((wr_cap + 1) * sizeof(*wrs));
	struct kxfer_plan_sge *sges = malloc((sge_cap + 1) * sizeof(*sges));
	const char *err = NULL;
	u32 done_wr = 0, done_sge = 0, i, k;
	int ret;

	plan_init(&p, w, max_sge, stripe);
	p.wrs = wrs;
	p.wr_cap = wr_cap;
	p.sges = sges;
	p.sge_cap = sge_cap;
	do {
		memset(wrs, CANARY, (wr_cap + 1) * sizeof(*wrs));
		memset(sges, CANARY, (sge_cap + 1) * sizeof(*sges));
		ret = kxfer_plan_build(&p, segs, n);
		if (ret && ret != -E2BIG) {
			err = FAIL("batch: %d", ret);
			break;
		}
		if (!canary_ok(wrs + wr_cap, sizeof(*wrs)) ||
		    !canary_ok(sges + sge_cap, sizeof(*sges))) {
			err = FAIL("batch wrote past its arrays");
			break;
		}
		if (ret && !p.nwr) {
			err = FAIL("batch made no progress");
			break;
		}
		if (done_wr + p.nwr > res->nwr) {
			err = FAIL("batches make more WRs");
			break;
		}
		for (i = 0; i < p.nwr && !err; i++) {
			const struct kxfer_plan_wr *x = &wrs[i];
			const struct kxfer_plan_wr *y = &res->wrs[done_wr + i];

			if (x->remote_off != y->remote_off || x->len != y->len ||
			    x->nsge != y->nsge ||
			    x->first_sge + done_sge != y->first_sge) {
				err = FAIL("batch WR %u differs", done_wr + i);
				break;
			}
			for (k = 0; k < x->nsge; k++) {
				const struct kxfer_plan_sge *s =
					&sges[x->first_sge + k];
				const struct kxfer_plan_sge *t =
					&res->sges[y->first_sge + k];

				if (s->local_off != t->local_off ||
				    s->len != t->len) {
					err = FAIL("batch SGE differs");
					break;
				}
			}
		}
		done_wr += p.nwr;
		done_sge += p.nsge;
	} while (!err && ret == -E2BIG);
	if (!err && (done_wr != res->nwr || done_sge != res->nsge))
		err = FAIL("batches made %u WRs %u SGEs, expected %u %u",
			   done_wr, done_sge, res->nwr, res->nsge);
	free(wrs);
	free(sges);
	return err;
}

/* --- random jobs --- */

enum gen_mode { G_RANDOM, G_BOTH, G_REMOTE, G_LOCAL, G_OVERLAP, G_PAGE,
		G_NMODES };

static u64 pick_off(u64 size, u64 len, u64 align)
{
	u64 off = rnd_below(size - len + 1);

	return off - off % align;
}

static u32 gen_job(struct kxfer_plan_seg *segs, u32 n, u64 lsize, u64 rsize,
		   u64 budget)
{
	u32 weight[G_NMODES], wsum = 0, i, m;
	u64 total = 0;

	for (m = 0; m < G_NMODES; m++) {
		weight[m] = rnd_below(4) ? rnd_below(10) : 0;
		wsum += weight[m];
	}
	if (!wsum) {
		weight[G_RANDOM] = 1;
		wsum = 1;
	}
	for (i = 0; i < n; i++) {
		struct kxfer_plan_seg *s = &segs[i];
		const struct kxfer_plan_seg *prev = i ? &segs[i - 1] : NULL;
		u64 len = 1 + rnd_below(1ULL << rnd_below(23));	/* <= 4 MiB */
		u32 pick = rnd_below(wsum);
		u64 lend, rend;

		for (m = 0; pick >= weight[m]; m++)
			pick -= weight[m];
		if (total + len > budget)
			len = 1 + rnd_below(4096);
		if (m == G_PAGE)
			len = 4096 * (1 + rnd_below(4));
		len = min64(len, min64(lsize, rsize) / 2);
		s->len = len;
		s->local_off = pick_off(lsize, len, m == G_PAGE ? 4096 : 1);
		s->remote_off = pick_off(rsize, len, m == G_PAGE ? 4096 : 1);
		if (prev) {
			lend = prev->local_off + prev->len;
			rend = prev->remote_off + prev->len;
			if ((m == G_BOTH || m == G_LOCAL) && lend + len <= lsize)
				s->local_off = lend;
			if ((m == G_BOTH || m == G_REMOTE) && rend + len <= rsize)
				s->remote_off = rend;
			if (m == G_OVERLAP) {
				u64 lo = prev->remote_off > len - 1 ?
					 prev->remote_off - (len - 1) : 0;
				u64 r = lo + rnd_below(rend - lo);

				s->remote_off = min64(r, rsize - len);
			}
		}
		total += len;
	}
	return n;
}

static void gen_world(struct world *w, u64 lsize, u64 rsize)
{
	static const u64 folios[] = { 4 * KIB, 16 * KIB, 64 * KIB, 2 * MIB };
	static const u64 big[] = { 2 * MIB };
	static const u64 mrs[] = { 4 * KIB, 64 * KIB, 1 * MIB, 2 * MIB,
				   16 * MIB };
	static const u64 odd[] = { 64 * KIB };
	static const u64 tiny[] = { 8 * KIB };

	switch (rnd_below(5)) {
	case 0:
		runs_span(&w->local, 2 * MIB, "local 2M");
		break;
	case 1:
		runs_random(&w->local, lsize, folios, 4, "local folios");
		break;
	case 2:
		runs_random(&w->local, lsize, big, 1, "local 2M list");
		break;
	case 3:
		runs_random(&w->local, lsize, odd, 0, "local odd");
		break;
	default:
		runs_unlimited(&w->local);
		break;
	}
	switch (rnd_below(5)) {
	case 0:
		runs_span(&w->remote, 2 * MIB, "remote 2M");
		break;
	case 1:
		runs_span(&w->remote, GIB, "remote 1G");
		break;
	case 2:
		runs_random(&w->remote, rsize, mrs, 5, "remote MRs");
		break;
	case 3:
		runs_random(&w->remote, rsize, tiny, 0, "remote odd");
		break;
	default:
		runs_unlimited(&w->remote);
		break;
	}
}

TEST(random_jobs)
{
	u64 seed = env_u64("KXFER_PLAN_SEED", DEFAULT_SEED);
	u64 cases = env_u64("KXFER_PLAN_CASES", DEFAULT_CASES);
	u64 space = 64 * MIB, segs_in = 0, wrs_out = 0, sges_out = 0;
	u32 nmax = 4096, c, overlapping = 0;
	struct kxfer_plan_seg *segs = malloc(nmax * sizeof(*segs));
	double t0 = now();
	struct mem m;

	rng_state = seed;
	TH_LOG("seed %#llx, %llu cases (KXFER_PLAN_SEED, KXFER_PLAN_CASES)",
	       (unsigned long long)seed, (unsigned long long)cases);
	mem_init(&m, space, space);
	for (c = 0; c < cases; c++) {
		static const u32 sizes[] = { 1, 16, 256, 2048, 4096 };
		u32 n = 1 + rnd_below(sizes[rnd_below(5)]);
		u64 lsize = rnd_below(4) ? space : 8 * MIB;
		u64 rsize = rnd_below(4) ? space : 8 * MIB;
		u32 max_sge = 1 + rnd_below(32);
		u64 stripe = 4096ULL << rnd_below(13);	/* 4 KiB..16 MiB */
		u64 budget = MIB << rnd_below(5);
		struct world w;
		struct result res;
		const char *err;
		bool ovl = false;
		u64 bound;

		gen_world(&w, lsize, rsize);
		gen_job(segs, n, lsize, rsize, budget);
		err = plan_job(&w, segs, n, max_sge, stripe, &res);
		if (!err)
			err = check_plan(&w, segs, n, max_sge, stripe, &res);
		if (!err) {
			bound = kxfer_plan_bound(segs, n, stripe, w.local.min_gap,
						 w.remote.min_gap);
			if (bound < res.nsge || res.nsge < res.nwr)
				err = FAIL("bound %llu < %u SGEs",
					   (unsigned long long)bound, res.nsge);
		}
		if (!err)
			err = check_batches(&w, segs, n, max_sge, stripe, &res);
		if (!err)
			err = check_bytes(&m, segs, n, &res, false);
		if (!err && c % 4 == 0)
			err = check_bytes(&m, segs, n, &res, true);
		if (!err)
			err = check_overlap(segs, n, &ovl);
		if (err)
			TH_LOG("case %u: %u segments, max_sge %u, stripe %llu, %s, %s",
			       c, n, max_sge, (unsigned long long)stripe,
			       w.local.name, w.remote.name);
		OK(err);
		segs_in += n;
		wrs_out += res.nwr;
		sges_out += res.nsge;
		overlapping += ovl;
		result_free(&res);
		runs_free(&w.local);
		runs_free(&w.remote);
	}
	TH_LOG("%llu segments -> %llu WRs, %llu SGEs; %u jobs overlapping; %.2f s",
	       (unsigned long long)segs_in, (unsigned long long)wrs_out,
	       (unsigned long long)sges_out, overlapping, now() - t0);
	mem_free(&m);
	free(segs);
}

/* --- seed 003: the KV push of a 4K prompt, 70B, TP=8 --- */

#define LAYERS		80
#define TOKENS		4096
#define HEAD_BYTES	256		/* one token's K (or V) on one GPU */
#define PAGE16		(16 * HEAD_BYTES)	/* 16 tokens of K: 4 KiB */
#define PAGES		(TOKENS / 16)

struct kv {
	struct kxfer_plan_seg	*segs;
	u32	n;
	u64	lsize, rsize;
};

static void kv_add(struct kv *kv, u64 l, u64 r, u64 len)
{
	struct kxfer_plan_seg *s = &kv->segs[kv->n++];

	s->local_off = l;
	s->remote_off = r;
	s->len = len;
	kv->lsize = kv->lsize > l + len ? kv->lsize : l + len;
	kv->rsize = kv->rsize > r + len ? kv->rsize : r + len;
}

/*
 * Plan a seed-003 job with unlimited runs (1 GiB regions), check it
 * everywhere, and return its counts.
 */
static const char *kv_plan(struct kv *kv, u32 max_sge, u64 stripe,
			   struct result *res)
{
	struct world w;
	const char *err;
	struct mem m;

	runs_span(&w.local, GIB, "local 1G");
	runs_span(&w.remote, GIB, "remote 1G");
	err = plan_job(&w, kv->segs, kv->n, max_sge, stripe, res);
	if (!err)
		err = check_plan(&w, kv->segs, kv->n, max_sge, stripe, res);
	if (!err) {
		mem_init(&m, kv->lsize, kv->rsize);
		err = check_bytes(&m, kv->segs, kv->n, res, false);
		if (!err)
			err = check_bytes(&m, kv->segs, kv->n, res, true);
		mem_free(&m);
	}
	return err;
}

static struct kv *kv_new(u32 n)
{
	struct kv *kv = calloc(1, sizeof(*kv));

	kv->segs = malloc(n * sizeof(*kv->segs));
	return kv;
}

static void kv_free(struct kv *kv)
{
	free(kv->segs);
	free(kv);
}

/*
 * Page size 1, both sides contiguous: per layer, the K of every token in
 * order, then the V of every token; V right after K on both sides; the
 * layers apart on both sides.  One WR per layer (2 MiB each).  @kv_gap
 * puts a gap between K and V, @interleave orders K0 V0 K1 V1 ...
 */
static struct kv *kv_page1(u64 kv_gap, bool interleave)
{
	u64 kv_bytes = (u64)TOKENS * HEAD_BYTES;	/* 1 MiB of K */
	u64 lstride = 2 * kv_bytes + kv_gap + 64 * KIB;
	u64 rstride = 2 * kv_bytes + kv_gap + 128 * KIB;
	struct kv *kv = kv_new(LAYERS * TOKENS * 2);
	u32 layer, t, half;

	for (layer = 0; layer < LAYERS; layer++) {
		u64 l = layer * lstride, r = layer * rstride;
		u64 v = kv_bytes + kv_gap;

		if (interleave) {
			for (t = 0; t < TOKENS; t++) {
				u64 o = (u64)t * HEAD_BYTES;

				kv_add(kv, l + o, r + o, HEAD_BYTES);
				kv_add(kv, l + v + o, r + v + o, HEAD_BYTES);
			}
			continue;
		}
		for (half = 0; half < 2; half++)
			for (t = 0; t < TOKENS; t++) {
				u64 o = half * v + (u64)t * HEAD_BYTES;

				kv_add(kv, l + o, r + o, HEAD_BYTES);
			}
	}
	return kv;
}

TEST(seed003_page1_contiguous)
{
	struct kv *kv = kv_page1(0, false);
	struct result res;
	u32 i;

	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("page 1, K+V adjacent, both sides contiguous: %u segments -> %u WRs (%u SGEs), %u KiB each, %ux fewer",
	       kv->n, res.nwr, res.nsge, res.wrs[0].len >> 10,
	       kv->n / res.nwr);
	ASSERT_EQ(LAYERS * TOKENS * 2, kv->n);
	EXPECT_EQ(LAYERS, res.nwr);
	EXPECT_EQ(LAYERS, res.nsge);
	for (i = 0; i < res.nwr; i++)
		EXPECT_EQ(2 * MIB, res.wrs[i].len);
	result_free(&res);
	kv_free(kv);

	/* K and V apart: one WR each. */
	kv = kv_page1(4 * KIB, false);
	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("page 1, K and V apart: %u WRs", res.nwr);
	EXPECT_EQ(2 * LAYERS, res.nwr);
	result_free(&res);
	kv_free(kv);

	/*
	 * K and V of each token in turn: nothing is consecutive and
	 * contiguous, and the planner never reorders: one WR per token per
	 * layer for K and for V, the seed's 655360.
	 */
	kv = kv_page1(0, true);
	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("page 1, K0 V0 K1 V1 ... order: %u WRs", res.nwr);
	EXPECT_EQ(LAYERS * TOKENS * 2, res.nwr);
	result_free(&res);
	kv_free(kv);
}

/*
 * Page size 16: page j (layer-major) of K is 4 KiB, V follows it (@kv_apart
 * false) or lives in another region.  Slots are j * mult mod LAYERS * PAGES:
 * consecutive pages are never adjacent on a scattered side.
 */
#define NPAGES	(LAYERS * PAGES)

static u64 slot_of(u64 j, u64 mult)
{
	return j * mult % NPAGES;
}

static struct kv *kv_page16(bool local_scattered, bool remote_scattered,
			    bool kv_apart)
{
	struct kv *kv = kv_new(NPAGES * 2);
	u64 slot = kv_apart ? PAGE16 : 2 * PAGE16;
	u64 v_region = kv_apart ? (u64)NPAGES * PAGE16 + 64 * KIB : PAGE16;
	u64 layer_stride = (u64)PAGES * slot + 64 * KIB;
	u64 j;

	for (j = 0; j < NPAGES; j++) {
		u64 layer = j / PAGES, p = j % PAGES;
		u64 l = local_scattered ? slot_of(j, 4099) * slot :
			layer * layer_stride + p * slot;
		u64 r = remote_scattered ? slot_of(j, 7919) * slot :
			layer * layer_stride + p * slot;
		u64 vl = kv_apart ? l + v_region : l + PAGE16;
		u64 vr = kv_apart ? r + v_region : r + PAGE16;

		kv_add(kv, l, r, PAGE16);
		kv_add(kv, vl, vr, PAGE16);
	}
	return kv;
}

TEST(seed003_page16_scattered)
{
	struct kv *kv = kv_page16(true, true, false);
	struct result res;

	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("page 16, K+V adjacent, pages scattered on both sides: %u segments -> %u WRs of %u KiB",
	       kv->n, res.nwr, res.wrs[0].len >> 10);
	EXPECT_EQ(LAYERS * PAGES, res.nwr);
	EXPECT_EQ(LAYERS * PAGES, res.nsge);
	result_free(&res);
	kv_free(kv);

	kv = kv_page16(true, true, true);
	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("page 16, K and V apart, scattered: %u WRs", res.nwr);
	EXPECT_EQ(2 * LAYERS * PAGES, res.nwr);
	result_free(&res);
	kv_free(kv);
}

TEST(seed003_page16_remote_contiguous)
{
	struct kv *kv = kv_page16(true, false, false);
	struct result res;

	/* the seed's "merge 8 pages": 8 SGEs of 8 KiB per WR */
	OK(kv_plan(kv, 8, 4 * MIB, &res));
	TH_LOG("page 16, remote contiguous, local scattered, max_sge 8: %u WRs of %u KiB, %u SGEs",
	       res.nwr, res.wrs[0].len >> 10, res.nsge);
	EXPECT_EQ(LAYERS * PAGES / 8, res.nwr);
	EXPECT_EQ(LAYERS * PAGES, res.nsge);
	EXPECT_EQ(64 * KIB, res.wrs[0].len);
	result_free(&res);

	/* max_sge 30: 256 pages a layer = 8 WRs of 30 + 1 of 16 */
	OK(kv_plan(kv, 30, 4 * MIB, &res));
	TH_LOG("max_sge 30: %u WRs", res.nwr);
	EXPECT_EQ(LAYERS * 9, res.nwr);
	EXPECT_EQ(LAYERS * PAGES, res.nsge);
	result_free(&res);

	/* a 16 KiB stripe: two pages per WR */
	OK(kv_plan(kv, 8, 16 * KIB, &res));
	TH_LOG("max_sge 8, stripe 16 KiB: %u WRs", res.nwr);
	EXPECT_EQ(LAYERS * PAGES / 2, res.nwr);
	result_free(&res);

	/* both sides contiguous: one WR per layer again */
	kv_free(kv);
	kv = kv_page16(false, false, false);
	OK(kv_plan(kv, 8, 4 * MIB, &res));
	TH_LOG("page 16, both sides contiguous: %u WRs", res.nwr);
	EXPECT_EQ(LAYERS, res.nwr);
	EXPECT_EQ(LAYERS, res.nsge);
	result_free(&res);
	kv_free(kv);
}

/* --- small exact cases --- */

static const char *small_plan(struct kxfer_plan_seg *segs, u32 n,
			      u32 max_sge, u64 stripe, struct result *res)
{
	struct kv kv = { .segs = segs, .n = n };
	u32 i;

	for (i = 0; i < n; i++) {
		kv.lsize = kv.lsize > segs[i].local_off + segs[i].len ?
			   kv.lsize : segs[i].local_off + segs[i].len;
		kv.rsize = kv.rsize > segs[i].remote_off + segs[i].len ?
			   kv.rsize : segs[i].remote_off + segs[i].len;
	}
	return kv_plan(&kv, max_sge, stripe, res);
}

/*
 * Segment 3 continues segment 1 on both sides, but segment 2 comes in
 * between and overlaps both on the remote side: merging 1 and 3 would
 * reorder writes.  The result must be in-order execution.
 */
TEST(merge_never_reorders)
{
	struct kxfer_plan_seg a[] = {
		{ .local_off = 0,	.remote_off = 1000, .len = 100 },
		{ .local_off = 5000,	.remote_off = 1090, .len = 30 },
		{ .local_off = 100,	.remote_off = 1100, .len = 50 },
	};
	/* 2 gathers onto 1 (remote contiguous); 3 overwrites 2 */
	struct kxfer_plan_seg b[] = {
		{ .local_off = 0,	.remote_off = 1000, .len = 100 },
		{ .local_off = 5000,	.remote_off = 1100, .len = 50 },
		{ .local_off = 100,	.remote_off = 1100, .len = 50 },
	};
	struct result res;

	OK(small_plan(a, 3, 8, 4096, &res));
	EXPECT_EQ(3, res.nwr);
	EXPECT_TRUE(kxfer_plan_overlap(a, 3, false, NULL));
	result_free(&res);

	OK(small_plan(b, 3, 8, 4096, &res));
	EXPECT_EQ(2, res.nwr);
	EXPECT_EQ(3, res.nsge);
	EXPECT_EQ(2, res.wrs[0].nsge);
	EXPECT_EQ(1100, res.wrs[1].remote_off);
	EXPECT_EQ(100, res.sges[2].local_off);
	EXPECT_TRUE(kxfer_plan_overlap(b, 3, false, NULL));
	result_free(&res);
}

/* Merging, gathering and every cut, on one small job. */
TEST(cuts)
{
	struct kxfer_plan_seg segs[] = {
		/* 3 segments contiguous on both sides: one 12 KiB range */
		{ .local_off = 0,	.remote_off = 0,	.len = 4096 },
		{ .local_off = 4096,	.remote_off = 4096,	.len = 4096 },
		{ .local_off = 8192,	.remote_off = 8192,	.len = 4096 },
		/* remote contiguous, local elsewhere: gathered */
		{ .local_off = 65536,	.remote_off = 12288,	.len = 100 },
	};
	struct world w;
	struct result res;
	struct kxfer_plan p;

	/* local chunks of 6 KiB, remote regions of 1 GiB, stripe 8 KiB */
	runs_span(&w.local, 6144, "6K");
	runs_span(&w.remote, GIB, "1G");
	OK(plan_job(&w, segs, 4, 4, 8192, &res));
	OK(check_plan(&w, segs, 4, 4, 8192, &res));
	/* WR0 [0, 8K): SGEs 0+6K, 6K+2K; WR1 [8K, 12K+100): 8K+4K (crosses
	 * no chunk: 8K..12K is inside chunk [6K, 12K)), 64K+100
	 */
	ASSERT_EQ(2, res.nwr);
	EXPECT_EQ(8192, res.wrs[0].len);
	EXPECT_EQ(2, res.wrs[0].nsge);
	EXPECT_EQ(6144, res.sges[0].len);
	EXPECT_EQ(2048, res.sges[1].len);
	EXPECT_EQ(8192, res.wrs[1].remote_off);
	EXPECT_EQ(4196, res.wrs[1].len);
	EXPECT_EQ(2, res.wrs[1].nsge);
	EXPECT_EQ(65536, res.sges[3].local_off);
	/* each segment: itself plus one possible cut of each kind */
	EXPECT_EQ(16, kxfer_plan_bound(segs, 4, 8192, 6144, GIB));
	result_free(&res);

	/* max_sge 1: [0, 6K) [6K, 12K) [12K, 12K + 100) */
	OK(plan_job(&w, segs, 4, 1, 8192, &res));
	OK(check_plan(&w, segs, 4, 1, 8192, &res));
	EXPECT_EQ(3, res.nwr);
	EXPECT_EQ(6144, res.wrs[1].len);
	result_free(&res);

	/* remote regions of 5000 bytes cut WRs, not SGEs across them */
	runs_span(&w.remote, 5000, "5000");
	OK(plan_job(&w, segs, 4, 4, 8192, &res));
	OK(check_plan(&w, segs, 4, 4, 8192, &res));
	EXPECT_EQ(5000, res.wrs[0].len);
	result_free(&res);

	/* the callbacks are asked once per run entered, not per segment */
	runs_span(&w.local, 2 * MIB, "2M");
	runs_span(&w.remote, GIB, "1G");
	plan_init(&p, &w, 4, 8192);
	ASSERT_EQ(0, kxfer_plan_count(&p, segs, 4));
	EXPECT_EQ(2, p.nwr);
	EXPECT_EQ(1, w.local.calls);	/* 0, then 8K and 64K from the cache */
	EXPECT_EQ(1, w.remote.calls);
}

static u64 zero_cb(void *ctx, u64 off)
{
	return 0;
}

TEST(einval)
{
	struct kxfer_plan_seg seg = { .local_off = 0, .remote_off = 0,
				      .len = 4096 };
	struct kxfer_plan_seg two[2];
	struct kxfer_plan_wr wrs[2];
	struct kxfer_plan_sge sges[2];
	struct world w;
	struct kxfer_plan p;
	static const u64 bad_stripes[] = { 0, 1, 2048, 4095, 4097, 12288,
					   1ULL << 32, 1ULL << 40 };
	u32 i;

	runs_span(&w.local, 2 * MIB, "2M");
	runs_span(&w.remote, 2 * MIB, "2M");
#define RESET() do {							\
	plan_init(&p, &w, 4, 65536);					\
	p.wrs = wrs; p.wr_cap = 2; p.sges = sges; p.sge_cap = 2;	\
} while (0)
	RESET();
	EXPECT_EQ(0, kxfer_plan_build(&p, &seg, 1));
	EXPECT_EQ(1, p.nwr);
	RESET();
	p.max_sge = 0;
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	EXPECT_EQ(-EINVAL, kxfer_plan_count(&p, &seg, 1));
	for (i = 0; i < sizeof(bad_stripes) / sizeof(bad_stripes[0]); i++) {
		RESET();
		p.stripe = bad_stripes[i];
		EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	}
	RESET();
	p.stripe = KXFER_PLAN_STRIPE_MAX;
	EXPECT_EQ(0, kxfer_plan_build(&p, &seg, 1));
	RESET();
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 0));
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, NULL, 1));
	RESET();
	p.wrs = NULL;
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	EXPECT_EQ(0, kxfer_plan_count(&p, &seg, 1));	/* counting needs none */
	RESET();
	p.local_run = NULL;
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	RESET();
	p.pos.off = 4096;				/* past the segment */
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	RESET();
	p.pos.seg = 2;
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	RESET();
	p.pos.seg = 1;					/* already done */
	EXPECT_EQ(0, kxfer_plan_build(&p, &seg, 1));
	EXPECT_EQ(0, p.nwr);
	RESET();
	two[0] = seg;
	two[1] = seg;
	two[1].len = 0;			/* caught when the planner gets there */
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, two, 2));
	EXPECT_EQ(-EINVAL, kxfer_plan_count(&p, two, 2));
	two[1].len = 1;
	two[1].local_off = U64_MAX;	/* wraps */
	EXPECT_EQ(-EINVAL, kxfer_plan_count(&p, two, 2));
	seg.remote_off = U64_MAX - 100;			/* wraps */
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	seg.remote_off = 0;
	/* a run callback that says 0 */
	RESET();
	p.local_run = zero_cb;
	EXPECT_EQ(-EINVAL, kxfer_plan_build(&p, &seg, 1));
	RESET();
	p.remote_run = zero_cb;
	EXPECT_EQ(-EINVAL, kxfer_plan_count(&p, &seg, 1));
#undef RESET
}

TEST(e2big)
{
	struct kxfer_plan_seg segs[64];
	struct kxfer_plan_wr wrs[64 + 1];
	struct kxfer_plan_sge sges[64 + 1];
	struct world w;
	struct kxfer_plan p;
	u32 i, need_wr, need_sge;

	/* 64 scattered 4 KiB pages, remote pairs contiguous: 32 WRs of 2 */
	for (i = 0; i < 64; i++) {
		segs[i].local_off = (u64)i * 3 * 4096;
		segs[i].remote_off = (u64)(i / 2) * 3 * 8192 + (i % 2) * 4096;
		segs[i].len = 4096;
	}
	runs_span(&w.local, 2 * MIB, "2M");
	runs_span(&w.remote, GIB, "1G");
	plan_init(&p, &w, 4, MIB);
	ASSERT_EQ(0, kxfer_plan_count(&p, segs, 64));
	need_wr = p.nwr;
	need_sge = p.nsge;
	EXPECT_EQ(32, need_wr);
	EXPECT_EQ(64, need_sge);

	/* one WR short, one SGE short: -E2BIG, nothing past the arrays */
	for (i = 0; i < 2; i++) {
		memset(wrs, CANARY, sizeof(wrs));
		memset(sges, CANARY, sizeof(sges));
		plan_init(&p, &w, 4, MIB);
		p.wrs = wrs;
		p.wr_cap = need_wr - (i == 0);
		p.sges = sges;
		p.sge_cap = need_sge - (i == 1);
		EXPECT_EQ(-E2BIG, kxfer_plan_build(&p, segs, 64));
		EXPECT_TRUE(canary_ok(&wrs[p.wr_cap],
				      sizeof(wrs) - p.wr_cap * sizeof(wrs[0])));
		EXPECT_TRUE(canary_ok(&sges[p.sge_cap],
				      sizeof(sges) - p.sge_cap * sizeof(sges[0])));
		/* a prefix of whole WRs, and where to go on */
		EXPECT_EQ(31, p.nwr);
		EXPECT_EQ(62, p.nsge);
		EXPECT_EQ(62, p.pos.seg);
		EXPECT_EQ(0, p.pos.off);
	}
	/* exactly enough */
	plan_init(&p, &w, 4, MIB);
	p.wrs = wrs;
	p.wr_cap = need_wr;
	p.sges = sges;
	p.sge_cap = need_sge;
	EXPECT_EQ(0, kxfer_plan_build(&p, segs, 64));
	EXPECT_EQ(need_wr, p.nwr);
	/* too few SGEs for one WR: no progress, said so */
	plan_init(&p, &w, 4, MIB);
	p.wrs = wrs;
	p.wr_cap = 8;
	p.sges = sges;
	p.sge_cap = 1;
	EXPECT_EQ(-E2BIG, kxfer_plan_build(&p, segs, 64));
	EXPECT_EQ(0, p.nwr);
	EXPECT_EQ(0, p.pos.seg);
	/* the bound holds */
	EXPECT_EQ(4 * 64, kxfer_plan_bound(segs, 64, MIB, 2 * MIB, GIB));
}

TEST(overlap)
{
	struct kxfer_plan_seg s[4];
	struct kxfer_plan_range scratch[4];

#define SEG(i, l, r, n) (s[i] = (struct kxfer_plan_seg){ l, r, n })
	/* ascending, touching: no overlap, no sort */
	SEG(0, 0, 0, 10); SEG(1, 100, 10, 10); SEG(2, 50, 20, 5);
	EXPECT_FALSE(kxfer_plan_overlap(s, 3, false, NULL));
	/* descending, disjoint: needs the sort */
	SEG(0, 0, 40, 10); SEG(1, 100, 20, 10); SEG(2, 50, 0, 5);
	EXPECT_FALSE(kxfer_plan_overlap(s, 3, false, scratch));
	EXPECT_TRUE(kxfer_plan_overlap(s, 3, false, NULL));	/* conservative */
	/* one byte shared, far apart in the job */
	SEG(0, 0, 40, 10); SEG(1, 100, 20, 10); SEG(2, 50, 0, 5);
	SEG(3, 70, 49, 1);
	EXPECT_TRUE(kxfer_plan_overlap(s, 4, false, scratch));
	/* nested */
	SEG(0, 0, 100, 50); SEG(1, 0, 0, 10); SEG(2, 0, 110, 5);
	EXPECT_TRUE(kxfer_plan_overlap(s, 3, false, scratch));
	/* a range hidden behind a long one: [0,100) [10,20) [50,60) */
	SEG(0, 0, 50, 10); SEG(1, 0, 0, 100); SEG(2, 0, 200, 1);
	EXPECT_TRUE(kxfer_plan_overlap(s, 3, false, scratch));
	/* READ: the destination is local */
	SEG(0, 0, 0, 10); SEG(1, 5, 10, 10);
	EXPECT_FALSE(kxfer_plan_overlap(s, 2, false, scratch));
	EXPECT_TRUE(kxfer_plan_overlap(s, 2, true, scratch));
	EXPECT_FALSE(kxfer_plan_overlap(s, 0, false, scratch));
	EXPECT_FALSE(kxfer_plan_overlap(s, 1, false, NULL));
#undef SEG
}

static int range_cmp_full(const void *x, const void *y)
{
	const struct kxfer_plan_range *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

enum { P_RANDOM, P_REVERSE, P_SORTED, P_ORGAN, P_SAW, P_FEW, P_NPATTERNS };

/* Disjoint ranges [8i, 8i + 8) in some order; P_FEW: many equal starts. */
static void gen_pattern(struct kxfer_plan_seg *segs, u32 n, int pattern)
{
	u32 i, j;

	for (i = 0; i < n; i++) {
		u64 k = i;

		switch (pattern) {
		case P_REVERSE:
			k = n - 1 - i;
			break;
		case P_ORGAN:
			k = i < n / 2 ? 2 * i : 2 * (n - 1 - i) + 1;
			break;
		case P_SAW:
			k = (i % 64) * ((n + 63) / 64) + i / 64;
			break;
		case P_FEW:
			k = rnd_below(7);
			break;
		}
		segs[i].local_off = 0;
		segs[i].remote_off = k * 8;
		segs[i].len = 8;
	}
	if (pattern == P_RANDOM) {
		for (i = n; i > 1; i--) {
			struct kxfer_plan_seg t;

			j = rnd_below(i);
			t = segs[i - 1];
			segs[i - 1] = segs[j];
			segs[j] = t;
		}
	}
}

/*
 * The sort itself, at every depth setting (pure quicksort, the
 * introsort, pure heapsort), on sizes around the insertion-sort cutoff
 * and on large adversarial patterns; and kxfer_plan_overlap() on them,
 * with one overlap hidden or none.
 */
TEST(sort_and_overlap_patterns)
{
	static const u32 sizes[] = { 0, 1, 2, 3, 15, 16, 17, 18, 33, 100,
				     1000, 100000 };
	static const u32 depths[] = { 2, 1, 0, 64 };
	u32 nmax = 100000, si, di, i;
	struct kxfer_plan_seg *segs = malloc(nmax * sizeof(*segs));
	struct kxfer_plan_range *v = malloc(nmax * sizeof(*v));
	struct kxfer_plan_range *ref = malloc(nmax * sizeof(*ref));
	int pat, hide;

	rng_state = DEFAULT_SEED;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		u32 n = sizes[si];

		for (pat = 0; pat < P_NPATTERNS; pat++) {
			for (di = 0; di < sizeof(depths) / sizeof(depths[0]);
			     di++) {
				gen_pattern(segs, n, pat);
				for (i = 0; i < n; i++) {
					v[i].start = segs[i].remote_off;
					v[i].end = v[i].start + segs[i].len +
						   rnd_below(2);
				}
				memcpy(ref, v, n * sizeof(*v));
				test_sort_depth = depths[di];
				plan_sort(v, n);
				for (i = 1; i < n; i++)
					ASSERT_LE(v[i - 1].start, v[i].start);
				/* the same multiset */
				qsort(v, n, sizeof(*v), range_cmp_full);
				qsort(ref, n, sizeof(*ref), range_cmp_full);
				ASSERT_EQ(0, memcmp(v, ref, n * sizeof(*v)));

				for (hide = 0; hide < 2 && n > 1; hide++) {
					bool want;

					gen_pattern(segs, n, pat);
					if (hide) {	/* one range onto another */
						u32 x = rnd_below(n);
						u32 y = (x + 1 + rnd_below(n - 1)) % n;

						segs[x].remote_off =
							segs[y].remote_off +
							rnd_below(8);
					}
					want = overlap_ref(segs, n, false);
					if (pat != P_FEW)
						ASSERT_EQ(hide, want);
					EXPECT_EQ(want, copy_plan_overlap(segs, n,
						  false, v));
					EXPECT_EQ(want, kxfer_plan_overlap(segs,
						  n, false, v));
				}
			}
		}
	}
	test_sort_depth = 2;
	free(segs);
	free(v);
	free(ref);
}

/* --- planning in remote order: kxfer_plan_order() --- */

struct ordered {
	struct kxfer_plan_scratch	*sc;
	const struct kxfer_plan_seg	*order;
	bool	overlap;
};

/* Exactly the module's size, so that ASan sees any write past it. */
static struct kxfer_plan_scratch *scratch_new(u32 n)
{
	size_t size = sizeof(struct kxfer_plan_scratch) +
		      2 * (size_t)n * sizeof(struct kxfer_plan_seg);
	struct kxfer_plan_scratch *sc = malloc(size);

	memset(sc, CANARY, size);
	return sc;
}

static void ordered_free(struct ordered *o)
{
	free(o->sc);
	memset(o, 0, sizeof(*o));
}

static int seg_cmp(const void *x, const void *y)
{
	const struct kxfer_plan_seg *a = x, *b = y;

	if (a->remote_off != b->remote_off)
		return a->remote_off < b->remote_off ? -1 : 1;
	if (a->local_off != b->local_off)
		return a->local_off < b->local_off ? -1 : 1;
	return a->len < b->len ? -1 : a->len > b->len;
}

/* @b holds the segments of @a, each once, in any order. */
static bool same_segments(const struct kxfer_plan_seg *a,
			  const struct kxfer_plan_seg *b, u32 n)
{
	struct kxfer_plan_seg *x = malloc((n + 1) * sizeof(*x));
	struct kxfer_plan_seg *y = malloc((n + 1) * sizeof(*y));
	bool same;

	memcpy(x, a, n * sizeof(*x));
	memcpy(y, b, n * sizeof(*y));
	qsort(x, n, sizeof(*x), seg_cmp);
	qsort(y, n, sizeof(*y), seg_cmp);
	same = !memcmp(x, y, n * sizeof(*x));
	free(x);
	free(y);
	return same;
}

/*
 * Order a job for a WRITE (@dst_local false) or a READ, and check the
 * answer against references: the overlap is the reference's; the order
 * is the job's own when the destination or the remote ranges overlap,
 * else ascending on the remote side; it is the job's segments, each
 * once; the call without scratch agrees, and asks for one only when the
 * job is not ascending already.
 */
static const char *order_job(const struct kxfer_plan_seg *segs, u32 n,
			     bool dst_local, struct ordered *o)
{
	bool dst_ref = overlap_ref(segs, n, dst_local);
	bool rem_ref = overlap_ref(segs, n, false);
	bool asc = plan_ascending(segs, n, false) &&
		   plan_ascending(segs, n, dst_local);
	const struct kxfer_plan_seg *quick;
	bool quick_ovl = !dst_ref;
	u32 i;

	memset(o, 0, sizeof(*o));
	o->sc = scratch_new(n);
	o->overlap = !dst_ref;
	o->order = kxfer_plan_order(segs, n, dst_local, o->sc, &o->overlap);
	if (!o->order)
		return FAIL("order: NULL with scratch");
	if (o->overlap != dst_ref)
		return FAIL("order: overlap %d, reference %d", o->overlap,
			    dst_ref);
	quick = kxfer_plan_order(segs, n, dst_local, NULL, &quick_ovl);
	if (!quick != !asc)
		return FAIL("order without scratch: %s, ascending %d",
			    quick ? "answered" : "asked for scratch", asc);
	if (quick && (quick != segs || o->order != segs ||
		      quick_ovl != dst_ref))
		return FAIL("order without scratch: a different answer");
	if (dst_ref || rem_ref) {
		if (o->order != segs)
			return FAIL("order: reordered a job whose %s ranges overlap",
				    dst_ref ? "destination" : "remote");
		return NULL;
	}
	if (o->order != segs && o->order != o->sc->segs &&
	    o->order != o->sc->segs + n)
		return FAIL("order: neither the job nor a half of the scratch");
	for (i = 1; i < n; i++)
		if (o->order[i].remote_off <
		    o->order[i - 1].remote_off + o->order[i - 1].len)
			return FAIL("order: not ascending on the remote side at %u",
				    i);
	if (o->order != segs && !same_segments(segs, o->order, n))
		return FAIL("order: not the job's segments");
	return NULL;
}

/* As (dst, src, len) pieces sorted by destination, merged where both go on. */
static int piece_cmp(const void *x, const void *y)
{
	const struct piece *a = x, *b = y;

	return a->r < b->r ? -1 : a->r > b->r;
}

static struct piece *canon_by_dst(struct piece *v, u64 n, u64 *out)
{
	struct piece *c = malloc((n + 1) * sizeof(*c));
	u64 i;

	qsort(v, n, sizeof(*v), piece_cmp);
	*out = 0;
	for (i = 0; i < n; i++)
		canon_push(c, out, v[i].l, v[i].r, v[i].len);
	return c;
}

/*
 * Every byte of every segment moved exactly once, from its own source:
 * when no two destinations overlap, the plan's pieces and the segments,
 * both sorted by destination and merged where both sides continue, are
 * one list.  (When they overlap the job keeps its order, and
 * check_plan() compares both byte streams in that order.)
 */
static const char *check_cover(const struct kxfer_plan_seg *segs, u32 n,
			       const struct result *res, bool dst_local)
{
	struct piece *a = malloc((n + 1) * sizeof(*a));
	struct piece *b = malloc((res->nsge + 1) * sizeof(*b));
	struct piece *ca, *cb;
	const char *err = NULL;
	u64 na, nb, i, k = 0;

	for (i = 0; i < n; i++) {
		a[i].r = dst_local ? segs[i].local_off : segs[i].remote_off;
		a[i].l = dst_local ? segs[i].remote_off : segs[i].local_off;
		a[i].len = segs[i].len;
	}
	for (i = 0; i < res->nwr; i++) {
		const struct kxfer_plan_wr *wr = &res->wrs[i];
		u64 r = wr->remote_off;
		u32 j;

		for (j = 0; j < wr->nsge; j++, k++) {
			const struct kxfer_plan_sge *s =
				&res->sges[wr->first_sge + j];

			b[k].r = dst_local ? s->local_off : r;
			b[k].l = dst_local ? r : s->local_off;
			b[k].len = s->len;
			r += s->len;
		}
	}
	ca = canon_by_dst(a, n, &na);
	cb = canon_by_dst(b, k, &nb);
	if (na != nb || memcmp(ca, cb, na * sizeof(*ca)))
		err = FAIL("cover: the plan moves other bytes than the segments (%llu and %llu runs)",
			   (unsigned long long)na, (unsigned long long)nb);
	free(a);
	free(b);
	free(ca);
	free(cb);
	return err;
}

/*
 * Plan a job as the module does (ordered, counted, built) and check it:
 * the order, the plan of the ordered segments, the cover when the
 * destinations are disjoint, and, on @m, the bytes against the job's
 * segments executed one by one in the job's order.
 */
static const char *ordered_plan(struct world *w, struct mem *m,
				const struct kxfer_plan_seg *segs, u32 n,
				bool dst_local, u32 max_sge, u64 stripe,
				struct ordered *o, struct result *res)
{
	const char *err;

	memset(res, 0, sizeof(*res));
	err = order_job(segs, n, dst_local, o);
	if (!err)
		err = plan_job(w, o->order, n, max_sge, stripe, res);
	if (!err)
		err = check_plan(w, o->order, n, max_sge, stripe, res);
	if (!err && !o->overlap)
		err = check_cover(segs, n, res, dst_local);
	if (!err && m)
		err = check_bytes(m, segs, n, res, dst_local);
	return err;
}

static void mem_for(struct mem *m, const struct kxfer_plan_seg *segs, u32 n)
{
	u64 lsize = 1, rsize = 1;
	u32 i;

	for (i = 0; i < n; i++) {
		lsize = lsize > segs[i].local_off + segs[i].len ?
			lsize : segs[i].local_off + segs[i].len;
		rsize = rsize > segs[i].remote_off + segs[i].len ?
			rsize : segs[i].remote_off + segs[i].len;
	}
	mem_init(m, lsize, rsize);
}

/* The WRs of planning @segs in the job's own order. */
static u32 nwr_in_order(struct world *w, const struct kxfer_plan_seg *segs,
			u32 n, u32 max_sge, u64 stripe)
{
	struct kxfer_plan p;

	plan_init(&p, w, max_sge, stripe);
	if (kxfer_plan_count(&p, segs, n))
		return 0;
	return p.nwr;
}

#define BLOCK	PAGE16		/* a 16-token page of K: 4 KiB */

/*
 * Seed 003's own example: prefill blocks A, B, C (adjacent in the
 * prefill pool) written to decode blocks 4, 1, 5.  In the job's order
 * that is three WRs; in remote order, two: B alone, then A and C
 * gathered, since decode blocks 4 and 5 are adjacent.
 */
TEST(order_seed003_example)
{
	struct kxfer_plan_seg segs[] = {
		{ .local_off = 0 * BLOCK, .remote_off = 4 * BLOCK, .len = BLOCK },
		{ .local_off = 1 * BLOCK, .remote_off = 1 * BLOCK, .len = BLOCK },
		{ .local_off = 2 * BLOCK, .remote_off = 5 * BLOCK, .len = BLOCK },
	};
	struct world w;
	struct ordered o;
	struct result res;
	struct mem m;
	int read;

	runs_span(&w.local, 2 * MIB, "local 2M");
	runs_span(&w.remote, GIB, "remote 1G");
	EXPECT_EQ(3, nwr_in_order(&w, segs, 3, 30, MIB));
	mem_for(&m, segs, 3);
	for (read = 0; read < 2; read++) {
		OK(ordered_plan(&w, &m, segs, 3, read, 30, MIB, &o, &res));
		EXPECT_FALSE(o.overlap);
		EXPECT_TRUE(o.order != segs);
		ASSERT_EQ(2, res.nwr);
		ASSERT_EQ(3, res.nsge);
		/* B alone */
		EXPECT_EQ(1 * BLOCK, res.wrs[0].remote_off);
		EXPECT_EQ(BLOCK, res.wrs[0].len);
		EXPECT_EQ(0, res.wrs[0].first_sge);
		EXPECT_EQ(1, res.wrs[0].nsge);
		EXPECT_EQ(1 * BLOCK, res.sges[0].local_off);
		EXPECT_EQ(BLOCK, res.sges[0].len);
		/* A and C, one WR to blocks 4 and 5, A's bytes first */
		EXPECT_EQ(4 * BLOCK, res.wrs[1].remote_off);
		EXPECT_EQ(2 * BLOCK, res.wrs[1].len);
		EXPECT_EQ(1, res.wrs[1].first_sge);
		EXPECT_EQ(2, res.wrs[1].nsge);
		EXPECT_EQ(0 * BLOCK, res.sges[1].local_off);
		EXPECT_EQ(BLOCK, res.sges[1].len);
		EXPECT_EQ(2 * BLOCK, res.sges[2].local_off);
		EXPECT_EQ(BLOCK, res.sges[2].len);
		result_free(&res);
		ordered_free(&o);
	}

	/* One SGE a WR: nothing to gather, three WRs still. */
	OK(ordered_plan(&w, &m, segs, 3, false, 1, MIB, &o, &res));
	EXPECT_EQ(3, res.nwr);
	result_free(&res);
	ordered_free(&o);

	/* A stripe of one block cuts A+C in two: three again. */
	OK(ordered_plan(&w, &m, segs, 3, false, 30, BLOCK, &o, &res));
	EXPECT_EQ(3, res.nwr);
	result_free(&res);
	ordered_free(&o);

	/* So does a remote MR that ends between decode blocks 4 and 5. */
	runs_span(&w.remote, 5 * BLOCK, "remote 20K");
	OK(ordered_plan(&w, &m, segs, 3, false, 30, MIB, &o, &res));
	EXPECT_EQ(3, res.nwr);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);
}

/* A uniformly random permutation of @v[0..@n). */
static void shuffle_segs(struct kxfer_plan_seg *v, u32 n)
{
	u32 i, j;

	for (i = n; i > 1; i--) {
		struct kxfer_plan_seg t;

		j = rnd_below(i);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/*
 * A decode allocator that hands out blocks in any order: N blocks,
 * adjacent on the remote side (or N of 4N slots), listed in a random
 * order, from prefill blocks in job order (or scattered).  Planned in
 * remote order, the job makes exactly the plan of the same segments
 * sorted by remote offset, and never more WRs than in its own order.
 */
TEST(order_permuted_blocks)
{
	static const u32 counts[] = { 2, 3, 17, 31, 100, 1000, 4096 };
	static const u32 sges[] = { 1, 2, 8, 30, 32 };
	struct kxfer_plan_seg *segs = malloc(4096 * sizeof(*segs));
	struct kxfer_plan_seg *sorted = malloc(4096 * sizeof(*sorted));
	u32 ci, si, i, j, layout, gained = 0, cases = 0;

	rng_state = DEFAULT_SEED;
	for (ci = 0; ci < ARRAY_SIZE(counts); ci++) {
		for (layout = 0; layout < 4; layout++) {
			u32 n = counts[ci];
			u32 *slot = malloc(4 * n * sizeof(*slot));
			bool sparse = layout & 1, lscatter = layout & 2;
			struct world w;
			struct mem m;

			for (i = 0; i < 4 * n; i++)
				slot[i] = i;
			for (i = 0; i < n; i++) {	/* n of n (or 4n) slots */
				u32 t = slot[i];

				j = i + rnd_below((sparse ? 4 * n : n) - i);
				slot[i] = slot[j];
				slot[j] = t;
			}
			for (i = 0; i < n; i++) {
				segs[i].local_off = (lscatter ?
						     (u64)i * 7919 % n : i) * BLOCK;
				segs[i].remote_off = 64 * KIB +
						     (u64)slot[i] * BLOCK;
				segs[i].len = BLOCK;
			}
			memcpy(sorted, segs, n * sizeof(*segs));
			qsort(sorted, n, sizeof(*sorted), seg_cmp);
			runs_span(&w.local, 2 * MIB, "local 2M");
			runs_span(&w.remote, 2 * MIB, "remote 2M");
			mem_for(&m, segs, n);
			for (si = 0; si < ARRAY_SIZE(sges); si++) {
				struct ordered o;
				struct result res, ref;
				u32 own = nwr_in_order(&w, segs, n, sges[si], MIB);

				OK(ordered_plan(&w, &m, segs, n, si & 1,
						sges[si], MIB, &o, &res));
				OK(plan_job(&w, sorted, n, sges[si], MIB, &ref));
				ASSERT_EQ(ref.nwr, res.nwr);
				ASSERT_EQ(ref.nsge, res.nsge);
				ASSERT_EQ(0, memcmp(ref.wrs, res.wrs,
						    res.nwr * sizeof(*res.wrs)));
				ASSERT_EQ(0, memcmp(ref.sges, res.sges,
						    res.nsge * sizeof(*res.sges)));
				ASSERT_LE(res.nwr, own);
				/* adjacent blocks: max_sge a WR, 2M MRs */
				if (!sparse && !lscatter && sges[si] == 30)
					TH_LOG("%u blocks in a random order: %u WRs in job order, %u in remote order",
					       n, own, res.nwr);
				gained += res.nwr < own;
				cases++;
				result_free(&res);
				result_free(&ref);
				ordered_free(&o);
			}
			mem_free(&m);
			free(slot);
		}
	}
	TH_LOG("%u of %u cases fewer WRs in remote order", gained, cases);
	free(segs);
	free(sorted);
}

/*
 * Seed 003 at scale: the decode side's pages handed out in a scattered
 * order (page j of 80 layers x 256 in slot j * 7919 mod 20480, K and V
 * of a page adjacent), the prefill side's scattered too.  In the job's
 * order one WR a page; in remote order the plan of the sorted job: the
 * slots are all used, so 30 pages a WR.
 */
TEST(order_seed003_page16_allocator)
{
	struct kv *kv = kv_page16(true, true, false);
	struct kxfer_plan_seg *sorted = malloc(kv->n * sizeof(*sorted));
	struct result res, ref;
	struct ordered o;
	struct world w;
	struct mem m;

	runs_span(&w.local, GIB, "local 1G");
	runs_span(&w.remote, GIB, "remote 1G");
	memcpy(sorted, kv->segs, kv->n * sizeof(*sorted));
	qsort(sorted, kv->n, sizeof(*sorted), seg_cmp);
	mem_init(&m, kv->lsize, kv->rsize);
	OK(ordered_plan(&w, &m, kv->segs, kv->n, false, 30, 4 * MIB, &o,
			&res));
	OK(plan_job(&w, sorted, kv->n, 30, 4 * MIB, &ref));
	TH_LOG("page 16, pages scattered on both sides: %u segments -> %u WRs in job order, %u in remote order",
	       kv->n, nwr_in_order(&w, kv->segs, kv->n, 30, 4 * MIB),
	       res.nwr);
	EXPECT_EQ(LAYERS * PAGES,
		  nwr_in_order(&w, kv->segs, kv->n, 30, 4 * MIB));
	EXPECT_EQ(ref.nwr, res.nwr);
	EXPECT_EQ((LAYERS * PAGES + 29) / 30, res.nwr);
	EXPECT_EQ(LAYERS * PAGES, res.nsge);
	result_free(&res);
	result_free(&ref);
	ordered_free(&o);
	mem_free(&m);
	free(sorted);
	kv_free(kv);
}

/*
 * Where order matters it is kept: destinations that overlap (the later
 * segment wins), and, for a READ, remote ranges that overlap.
 */
TEST(order_keeps_overlapping)
{
	struct kxfer_plan_seg s[4];
	struct world w;
	struct ordered o;
	struct result res;
	struct mem m;

	runs_span(&w.local, 2 * MIB, "local 2M");
	runs_span(&w.remote, GIB, "remote 1G");
#define SEG(i, l, r, n) (s[i] = (struct kxfer_plan_seg){ l, r, n })
	/*
	 * WRITE: segment 1 overwrites part of segment 0 and lies before it
	 * on the remote side; sorted, segment 0 would win.  Segment 2 is
	 * adjacent to segment 0, and would be gathered with it.
	 */
	SEG(0, 0, 5000, 4096); SEG(1, 8192, 4096, 4096);
	SEG(2, 65536, 9096, 100);
	mem_for(&m, s, 3);
	OK(ordered_plan(&w, &m, s, 3, false, 30, MIB, &o, &res));
	EXPECT_TRUE(o.overlap);
	EXPECT_TRUE(o.order == s);
	ASSERT_EQ(3, res.nwr);
	EXPECT_EQ(5000, res.wrs[0].remote_off);
	EXPECT_EQ(4096, res.wrs[1].remote_off);
	EXPECT_EQ(8192, res.sges[1].local_off);
	EXPECT_EQ(9096, res.wrs[2].remote_off);
	result_free(&res);
	ordered_free(&o);
	/* the same job read: local ranges disjoint, remote ones not */
	OK(ordered_plan(&w, &m, s, 3, true, 30, MIB, &o, &res));
	EXPECT_FALSE(o.overlap);
	EXPECT_TRUE(o.order == s);
	EXPECT_EQ(3, res.nwr);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);

	/* A and C both to decode block 4: C must win. */
	SEG(0, 0, 4 * BLOCK, BLOCK); SEG(1, BLOCK, 1 * BLOCK, BLOCK);
	SEG(2, 2 * BLOCK, 4 * BLOCK, BLOCK);
	mem_for(&m, s, 3);
	OK(ordered_plan(&w, &m, s, 3, false, 30, MIB, &o, &res));
	EXPECT_TRUE(o.overlap);
	EXPECT_TRUE(o.order == s);
	ASSERT_EQ(3, res.nwr);
	EXPECT_EQ(2 * BLOCK, res.sges[2].local_off);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);

	/*
	 * READ: remote ranges disjoint and out of order, local ranges
	 * overlapping (segment 2 lands on segment 0): kept in order.
	 */
	SEG(0, 0, 4 * BLOCK, BLOCK); SEG(1, BLOCK, 1 * BLOCK, BLOCK);
	SEG(2, 100, 5 * BLOCK, BLOCK);
	mem_for(&m, s, 3);
	OK(ordered_plan(&w, &m, s, 3, true, 30, MIB, &o, &res));
	EXPECT_TRUE(o.overlap);
	EXPECT_TRUE(o.order == s);
	EXPECT_EQ(3, res.nwr);
	result_free(&res);
	ordered_free(&o);
	/* the same job written: the sources may overlap, it is sorted */
	OK(ordered_plan(&w, &m, s, 3, false, 30, MIB, &o, &res));
	EXPECT_FALSE(o.overlap);
	EXPECT_TRUE(o.order != s);
	EXPECT_EQ(2, res.nwr);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);

	/* Touching is not overlapping: [8K, 12K) [4K, 8K) [0, 4K) */
	SEG(0, 0, 2 * BLOCK, BLOCK); SEG(1, 5 * BLOCK, BLOCK, BLOCK);
	SEG(2, 9 * BLOCK, 0, BLOCK);
	mem_for(&m, s, 3);
	OK(ordered_plan(&w, &m, s, 3, false, 30, MIB, &o, &res));
	EXPECT_FALSE(o.overlap);
	EXPECT_EQ(1, res.nwr);
	EXPECT_EQ(3, res.nsge);
	EXPECT_EQ(9 * BLOCK, res.sges[0].local_off);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);

	/* One byte shared, far apart in the job and out of order. */
	SEG(0, 0, 40, 10); SEG(1, 100, 20, 10); SEG(2, 50, 0, 5);
	SEG(3, 70, 49, 1);
	mem_for(&m, s, 4);
	OK(ordered_plan(&w, &m, s, 4, false, 30, MIB, &o, &res));
	EXPECT_TRUE(o.overlap);
	EXPECT_TRUE(o.order == s);
	result_free(&res);
	ordered_free(&o);
	mem_free(&m);
#undef SEG
}

/*
 * Jobs of disjoint or overlapping ranges, in random, reversed, nearly
 * sorted and sorted orders, planned as the module plans them, for
 * WRITE and READ, in random worlds: every check of ordered_plan(), the
 * plan resumed in small batches, and never more WRs than in the job's
 * own order.
 */
enum { O_SHUFFLE, O_REVERSE, O_SWAPS, O_KEEP, O_NORDERS };

static u32 gen_carved(struct kxfer_plan_seg *segs, u32 n, u64 lsize,
		      u64 rsize, u64 budget)
{
	u64 unit = rnd_below(3) ? BLOCK : 1 + rnd_below(9000);
	u64 lgap = rnd_below(2) ? 0 : 1 + rnd_below(2 * unit);
	u64 rgap = rnd_below(3) ? 0 : 1 + rnd_below(2 * unit);
	bool lrandom = !rnd_below(4), varied = rnd_below(2);
	u64 l = rnd_below(4096), r = rnd_below(4096), total = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		u64 len = varied ? unit * (1 + rnd_below(4)) : unit;

		if (total + len > budget || r + len > rsize ||
		    l + len > lsize)
			break;
		segs[i].local_off = lrandom ? pick_off(lsize, len, 1) : l;
		segs[i].remote_off = r;
		segs[i].len = len;
		l += len + (rnd_below(2) ? lgap : 0);
		r += len + (rnd_below(2) ? rgap : 0);
		total += len;
	}
	return i ? i : gen_job(segs, 1, lsize, rsize, budget);
}

static void gen_order(struct kxfer_plan_seg *segs, u32 n, int how)
{
	struct kxfer_plan_seg t;
	u32 i, j;

	switch (how) {
	case O_SHUFFLE:
		shuffle_segs(segs, n);
		break;
	case O_REVERSE:
		for (i = 0; i < n / 2; i++) {
			t = segs[i];
			segs[i] = segs[n - 1 - i];
			segs[n - 1 - i] = t;
		}
		break;
	case O_SWAPS:
		for (i = 0; i < 1 + n / 16 && n > 1; i++) {
			j = rnd_below(n - 1);
			t = segs[j];
			segs[j] = segs[j + 1];
			segs[j + 1] = t;
		}
		break;
	}
}

TEST(order_random_jobs)
{
	u64 seed = env_u64("KXFER_PLAN_SEED", DEFAULT_SEED);
	u64 cases = env_u64("KXFER_PLAN_CASES", DEFAULT_CASES);
	u64 space = 64 * MIB, wrs_own = 0, wrs_out = 0;
	u32 nmax = 4096, c, reordered = 0, kept = 0;
	struct kxfer_plan_seg *segs = malloc(nmax * sizeof(*segs));
	double t0 = now();
	struct mem m;

	rng_state = seed ^ 0x0de7;
	TH_LOG("seed %#llx, %llu cases (KXFER_PLAN_SEED, KXFER_PLAN_CASES)",
	       (unsigned long long)seed, (unsigned long long)cases);
	mem_init(&m, space, space);
	for (c = 0; c < cases; c++) {
		static const u32 sizes[] = { 1, 3, 16, 256, 2048, 4096 };
		u32 n = 1 + rnd_below(sizes[rnd_below(6)]);
		u32 max_sge = 1 + rnd_below(32);
		u64 stripe = 4096ULL << rnd_below(13);
		u64 budget = MIB << rnd_below(5);
		int how = rnd_below(O_NORDERS);
		bool read = !rnd_below(3);
		struct ordered o;
		struct result res;
		struct world w;
		const char *err;
		u32 own;

		gen_world(&w, space, space);
		if (rnd_below(4))
			n = gen_carved(segs, n, space, space, budget);
		else
			n = gen_job(segs, n, space, space, budget);
		gen_order(segs, n, how);
		own = nwr_in_order(&w, segs, n, max_sge, stripe);
		err = ordered_plan(&w, &m, segs, n, read, max_sge, stripe,
				   &o, &res);
		if (!err)
			err = check_batches(&w, o.order, n, max_sge, stripe,
					    &res);
		if (!err && res.nwr > own)
			err = FAIL("%u WRs in remote order, %u in the job's",
				   res.nwr, own);
		if (err)
			TH_LOG("case %u: %u segments, %s, order %d, max_sge %u, stripe %llu, %s, %s",
			       c, n, read ? "READ" : "WRITE", how, max_sge,
			       (unsigned long long)stripe, w.local.name,
			       w.remote.name);
		OK(err);
		reordered += o.order != segs;
		kept += o.order == segs && how != O_KEEP;
		wrs_own += own;
		wrs_out += res.nwr;
		result_free(&res);
		ordered_free(&o);
		runs_free(&w.local);
		runs_free(&w.remote);
	}
	TH_LOG("%u jobs reordered, %u out of order kept; %llu WRs in job order, %llu planned; %.2f s",
	       reordered, kept, (unsigned long long)wrs_own,
	       (unsigned long long)wrs_out, now() - t0);
	EXPECT_GT(reordered, cases / 4);
	EXPECT_GT(kept, 0);
	mem_free(&m);
	free(segs);
}

static u64 sort_key(u32 kind, u32 i, u32 n)
{
	switch (kind) {
	case 0:		/* every byte differs */
		return rnd();
	case 1:		/* 4 KiB pages below 4 GiB */
		return rnd_below(1 << 20) << 12;
	case 2:		/* the top byte only */
		return rnd() & 0xff00000000000000ULL;
	case 3:		/* the bottom byte only */
		return rnd_below(256);
	case 4:		/* few distinct keys: stability */
		return rnd_below(7) << 40;
	case 5:		/* all equal */
		return 12345;
	case 6:		/* descending */
		return (u64)(n - i) * 4096;
	case 7:		/* ascending */
		return (u64)i * 4096;
	default:	/* every other byte */
		return rnd() & 0x00ff00ff00ff00ffULL;
	}
}

/*
 * The radix sort alone: keys that differ in every byte, in a few bytes,
 * in the top or the bottom byte only, few distinct keys, equal keys;
 * sizes around the insertion-sort cutoff.  Sorted, stable (the other
 * side holds the segment's index), a permutation, and inside the
 * scratch (ASan watches its end).
 */
TEST(order_sort)
{
	static const u32 sizes[] = { 1, 2, 3, 15, 16, 17, 18, 100, 1000,
				     65537 };
	u32 nmax = 65537, si, i, kind;
	struct kxfer_plan_seg *segs = malloc(nmax * sizeof(*segs));
	u8 *seen = malloc(nmax);
	int local;

	rng_state = DEFAULT_SEED;
	for (si = 0; si < ARRAY_SIZE(sizes); si++) {
		u32 n = sizes[si];
		struct kxfer_plan_scratch *sc = scratch_new(n);

		for (kind = 0; kind < 9; kind++) {
			for (local = 0; local < 2; local++) {
				const struct kxfer_plan_seg *v;
				bool all_equal = true;

				for (i = 0; i < n; i++) {
					u64 k;

					k = sort_key(kind, i, n);
					segs[i].local_off = local ? k : i;
					segs[i].remote_off = local ? i : k;
					segs[i].len = 1;
					all_equal &= plan_key(&segs[i], local) ==
						     plan_key(&segs[0], local);
				}
				v = plan_order_sort(segs, n, local, sc);
				if (all_equal) {
					ASSERT_TRUE(v == segs);
					continue;
				}
				ASSERT_TRUE(v == sc->segs || v == sc->segs + n);
				memset(seen, 0, n);
				for (i = 0; i < n; i++) {
					u64 tag = plan_key(&v[i], !local);

					ASSERT_LT(tag, n);
					ASSERT_FALSE(seen[tag]);
					seen[tag] = 1;
					ASSERT_EQ(plan_key(&segs[tag], local),
						  plan_key(&v[i], local));
					if (!i)
						continue;
					ASSERT_LE(plan_key(&v[i - 1], local),
						  plan_key(&v[i], local));
					if (plan_key(&v[i - 1], local) ==
					    plan_key(&v[i], local))
						ASSERT_LT(plan_key(&v[i - 1],
								   !local),
							  tag);
				}
			}
		}
		free(sc);
	}
	free(segs);
	free(seen);
}

/* --- micro-benchmark: no timing assertion --- */

#define BENCH_SEGS	(1u << 20)

static void bench(struct __test_metadata *_metadata, const char *what,
		  struct kxfer_plan_seg *segs, u32 n, u32 max_sge, u64 stripe)
{
	struct kxfer_plan_range *scratch = malloc(n * sizeof(*scratch));
	struct kxfer_plan_scratch *sc = scratch_new(n);
	const struct kxfer_plan_seg *order = NULL;
	struct world w;
	struct kxfer_plan p;
	struct result res;
	double t0, t_count, t_build, t_ovl, t_order;
	int rounds = 3, i;
	bool ovl = false;
	u32 own;

	runs_span(&w.local, 2 * MIB, "2M");
	runs_span(&w.remote, GIB, "1G");
	own = nwr_in_order(&w, segs, n, max_sge, stripe);
	t0 = now();
	for (i = 0; i < rounds; i++)
		order = kxfer_plan_order(segs, n, false, sc, &ovl);
	t_order = (now() - t0) / rounds;
	ASSERT_FALSE(ovl);
	plan_init(&p, &w, max_sge, stripe);
	t0 = now();
	for (i = 0; i < rounds; i++)
		ASSERT_EQ(0, kxfer_plan_count(&p, order, n));
	t_count = (now() - t0) / rounds;
	res.wrs = malloc(p.nwr * sizeof(*res.wrs));
	res.sges = malloc(p.nsge * sizeof(*res.sges));
	p.wrs = res.wrs;
	p.wr_cap = p.nwr;
	p.sges = res.sges;
	p.sge_cap = p.nsge;
	w.local.calls = 0;
	w.remote.calls = 0;
	t0 = now();
	for (i = 0; i < rounds; i++) {
		p.pos.seg = 0;
		p.pos.off = 0;
		ASSERT_EQ(0, kxfer_plan_build(&p, order, n));
	}
	t_build = (now() - t0) / rounds;
	ovl = false;
	t0 = now();
	for (i = 0; i < rounds; i++)
		ovl |= kxfer_plan_overlap(segs, n, false, scratch);
	t_ovl = (now() - t0) / rounds;
	TH_LOG("%s: %u segments -> %u WRs (%u in job order), %u SGEs; %llu local, %llu remote callbacks a plan",
	       what, n, p.nwr, own, p.nsge,
	       (unsigned long long)w.local.calls / rounds,
	       (unsigned long long)w.remote.calls / rounds);
	TH_LOG("  order %.1f ms (%s), build %.1f ms (%.1f M segments/s, %.1f plans/s), count %.1f ms, overlap %.1f ms (%s)",
	       t_order * 1e3, order == sc->segs || order == sc->segs + n ?
	       "sorted" : "as listed",
	       t_build * 1e3, n / t_build / 1e6, 1 / t_build, t_count * 1e3,
	       t_ovl * 1e3, ovl ? "overlap" : "none");
	free(res.wrs);
	free(res.sges);
	free(scratch);
	free(sc);
}

TEST(bench_1m_segments)
{
	struct kxfer_plan_seg *segs = malloc(BENCH_SEGS * sizeof(*segs));
	u32 j;

	TH_LOG("built with -O1 and ASan/UBSan: figures are pessimistic");
	/* 1 M scattered 4 KiB pages on both sides */
	for (j = 0; j < BENCH_SEGS; j++) {
		segs[j].local_off = (u64)j * 4099 % BENCH_SEGS * 4096;
		segs[j].remote_off = (u64)j * 7919 % BENCH_SEGS * 4096;
		segs[j].len = 4096;
	}
	bench(_metadata, "scattered 4 KiB pages", segs, BENCH_SEGS, 30, MIB);
	/* 1 M remote-contiguous 4 KiB pages, local scattered: gathered */
	for (j = 0; j < BENCH_SEGS; j++)
		segs[j].remote_off = (u64)j * 4096;
	bench(_metadata, "remote-contiguous 4 KiB pages", segs, BENCH_SEGS,
	      30, MIB);
	/* 1 M contiguous 256 B tokens: merged */
	for (j = 0; j < BENCH_SEGS; j++) {
		segs[j].local_off = (u64)j * 256;
		segs[j].remote_off = (u64)j * 256;
		segs[j].len = 256;
	}
	bench(_metadata, "contiguous 256 B tokens", segs, BENCH_SEGS, 30,
	      4 * MIB);
	free(segs);
}

KXFER_HARNESS_MAIN
