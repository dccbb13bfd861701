// SPDX-License-Identifier: GPL-2.0-only
/*
 * storm: a verified WRITE stream that survives faults, built on libkxfer.
 *
 *   storm [-d SECONDS] [-T THREADS] [-s SEED] [-m MAXSEGS] [-l MAXLEN]
 *         [-b BATCH] [-C SECONDS] [-w SECONDS] [-N] [-q]
 *         -R EXPORT_OFF -S SLICE_LEN -L POOL_OFF PEER EXPORT POOL
 *
 * Every thread opens /dev/kxfer on its own and owns a disjoint part of
 * the export range [EXPORT_OFF, EXPORT_OFF + SLICE_LEN).  For SECONDS (or
 * until storm gets SIGUSR1, whichever comes first) it submits batches of
 * WRITE jobs of random segments inside its part and reaps their
 * completions, while the session may go down, be deleted and re-added,
 * or lose its device under it:
 *
 *  - a refused SUBMIT (ENOTCONN, ESTALE) is retried after a back-off,
 *    with the peer and the export looked up again by name;
 *  - a job that fails (ECONNRESET, ENOTCONN, ETIMEDOUT, ESTALE, EACCES)
 *    is counted by its errno; any other errno is a failure of the run;
 *  - every accepted job must get exactly one completion: a second one,
 *    or one for no job, is "dup"; a job without one after the drain
 *    timeout is "lost".
 *
 * The data: POOL bytes [POOL_OFF, POOL_OFF + SLICE_LEN + SHIFT_MAX) hold
 * a fixed pseudo-random pattern of SEED.  Job n copies to export offset r
 * the pool byte at POOL_OFF + (r - EXPORT_OFF) + shift(n), where shift(n)
 * is a function of (SEED, n) below SHIFT_MAX: what a byte of the export
 * must hold follows from the job that wrote it last.  Jobs in flight never
 * overlap, so that "last" is well defined.  Each thread records, per byte
 * of its part, the last job that wrote it and that job's outcome; at the
 * end (the session up again) it READs its part back into
 * [POOL_OFF + SLICE_LEN + SHIFT_MAX, ...) and checks every byte whose last
 * writer succeeded.  Bytes whose last writer failed are unknown: skipped
 * and counted (as runs, "regions").
 *
 * -C SECONDS: every SECONDS a thread stops reaping, fills its in-flight
 * window, and closes its file with the jobs still in flight (they are
 * "abandoned": their outcome is unknown), then opens a new one.  Each
 * close moves the thread to the other half of its part, so that jobs of
 * a closed file never race with jobs of its successor.
 *
 * -N: the peer may die and come back with its memory lost (a killed
 * guest): no readback, completions are counted and checked only.
 *
 * The last line of output:
 *   storm: seed S threads T submitted N accepted N ok N failed N (ERR n ...)
 *   refused N (ERR n ...) abandoned N unsent N closes N maxinflight N
 *   verified_bytes N skipped_regions N skipped_bytes N unwritten_bytes N
 *   bad_bytes 0 lost 0 dup 0
 * Exit status: 0 if nothing was lost, duplicated or corrupted and some
 * bytes were verified (with -N: some job succeeded), 1 otherwise, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kxfer.h"

#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

#define SHIFT_MAX	65536		/* source offsets: r + [0, SHIFT_MAX) */
#define READ_PIECE	65536		/* readback job size */
#define READ_TAG	(1ULL << 63)	/* user_data of readback jobs */
#define NERR		134		/* errno values counted */
#define MAX_THREADS	64
#define LOOKUP_GAP_NS	200000000LL	/* between two lookups by name */
#define CLOSE_MAXLEN	16		/* segments of the jobs before a close */

/* Outcome of a job, by its sequence number */
enum {
	J_NONE,
	J_PENDING,	/* generated: in the batch or in flight */
	J_OK,
	J_FAILED,
	J_ABANDONED,	/* in flight when its file was closed */
	J_UNSENT,	/* never accepted */
};

struct opts {
	const char *peer;
	const char *export;
	const char *pool;
	uint64_t roff;		/* -R */
	uint64_t slice;		/* -S */
	uint64_t loff;		/* -L */
	uint64_t seed;
	uint64_t key;		/* pattern key from seed */
	unsigned int threads;
	unsigned int maxsegs;
	uint64_t maxlen;
	unsigned int batch;
	int64_t duration_ns;
	int64_t close_ns;	/* -C, 0: never */
	int64_t wait_ns;	/* -w: drain and session-up bound */
	bool no_readback;	/* -N: count completions only */
	bool quiet;
};

struct counts {
	uint64_t submitted;	/* jobs generated and offered */
	uint64_t accepted;
	uint64_t ok;
	uint64_t failed;
	uint64_t abandoned;
	uint64_t unsent;
	uint64_t closes;
	uint64_t lookups;
	uint64_t maxinflight;
	uint64_t verified;
	uint64_t skipped_regions;
	uint64_t skipped_bytes;
	uint64_t unwritten;
	uint64_t bad;
	uint64_t lost;
	uint64_t dup;
	uint64_t unexpected;	/* completions with an errno not tolerated */
	uint64_t fail_err[NERR];
	uint64_t refuse_err[NERR];
};

struct thr {
	const struct opts *o;
	unsigned int id;
	uint64_t st;			/* random state */
	struct kxfer *kx;
	struct kxfer_pool_map pool;
	uint32_t peer;
	uint32_t remote;
	bool need_lookup;
	int64_t next_lookup;
	uint64_t lo, hi;		/* part, relative to opts.roff */
	uint64_t alo, ahi;		/* active range (a half with -C) */
	uint64_t maxlen;		/* of segments now */
	uint32_t *tag;			/* per byte of the part: last writer */
	uint8_t *status;		/* per job sequence */
	uint64_t nstatus;
	uint64_t seq;			/* last sequence used */
	uint64_t inflight;
	struct kxfer_job *batch;
	struct kxfer_segment *segs;	/* batch * maxsegs */
	uint64_t *jbytes;		/* per batch slot */
	unsigned int head, n;		/* batch[head, n) not accepted yet */
	struct kxfer_event *ev;
	unsigned int evmax;
	uint64_t *bytes;		/* per sequence: the job's bytes */
	struct counts c;
	char err[256];			/* fatal error, else empty */
};

static const char *errname(int err)
{
	static __thread char buf[16];
	const char *s;

	if (err < 0)
		err = -err;
	if (!err)
		return "0";
	s = strerrorname_np(err);
	if (s)
		return s;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

static int errslot(int err)
{
	if (err < 0)
		err = -err;
	return err < NERR ? err : 0;
}

static _Noreturn __printf(1, 2) void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("storm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static _Noreturn void usage(const char *why)
{
	fprintf(stderr, "storm: %s\n"
		"usage: storm [-d SECONDS] [-T THREADS] [-s SEED] [-m MAXSEGS] [-l MAXLEN]\n"
		"             [-b BATCH] [-C SECONDS] [-w SECONDS] [-N] [-q]\n"
		"             -R EXPORT_OFF -S SLICE_LEN -L POOL_OFF PEER EXPORT POOL\n",
		why);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory: ENOMEM");
	return p;
}

/* Decimal or 0x hex, optional K/M/G suffix. */
static uint64_t arg_u64(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		usage("bad number");
	switch (*end) {
	case 'k': case 'K':
		v <<= 10;
		end++;
		break;
	case 'm': case 'M':
		v <<= 20;
		end++;
		break;
	case 'g': case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end)
		usage("bad number");
	return v;
}

static int64_t arg_secs(const char *s)
{
	char *end;
	double t;

	errno = 0;
	t = strtod(s, &end);
	if (errno || end == s || *end || t < 0 || t > 1e6)
		usage("bad number of seconds");
	return (int64_t)(t * 1e9);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---------------------------------------------------------------------- */
/* Pattern and randomness                                                  */
/* ---------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rnd_next(uint64_t *st)
{
	*st += 0x9e3779b97f4a7c15ULL;
	return mix64(*st);
}

static uint64_t rnd_below(uint64_t *st, uint64_t n)
{
	return n ? rnd_next(st) % n : 0;
}

/* The source pattern's byte at source offset x. */
static uint8_t pat_at(const struct opts *o, uint64_t x)
{
	uint64_t w = mix64(o->key + (x >> 3) * 0x9e3779b97f4a7c15ULL);

	return (uint8_t)(w >> ((x & 7) * 8));
}

/* Where job seq of thread id takes the byte of relative offset 0 from. */
static uint64_t job_shift(const struct opts *o, unsigned int id, uint64_t seq)
{
	return mix64(o->key ^ ((uint64_t)id << 40) ^ (seq * 0x2545f4914f6cdd1dULL)) %
	       SHIFT_MAX;
}

/* ---------------------------------------------------------------------- */
/* A thread's file                                                         */
/* ---------------------------------------------------------------------- */

static void thr_fail(struct thr *t, const char *fmt, ...) __printf(2, 3);

static void thr_fail(struct thr *t, const char *fmt, ...)
{
	va_list ap;

	if (t->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
}

/*
 * Look the peer and the export up by name; a new handle is taken only
 * when the session is up and the export known.  Rate-limited.
 */
static int thr_lookup(struct thr *t)
{
	const struct opts *o = t->o;
	struct kxfer_remote_lookup rx;
	uint32_t h, state;
	int64_t now = now_ns();
	int ret;

	if (now < t->next_lookup)
		return -EAGAIN;
	t->next_lookup = now + LOOKUP_GAP_NS;
	t->c.lookups++;
	ret = kxfer_peer_lookup(t->kx, o->peer, &h, &state);
	if (ret)
		return ret;
	if (state != KXFER_PEER_UP) {
		kxfer_peer_release(t->kx, h);
		return -ENOTCONN;
	}
	ret = kxfer_remote_lookup(t->kx, h, o->export, &rx);
	if (ret) {
		kxfer_peer_release(t->kx, h);
		return ret;
	}
	if (rx.len < o->roff + o->slice ||
	    (rx.access & (KXFER_ACCESS_READ | KXFER_ACCESS_WRITE)) !=
	    (KXFER_ACCESS_READ | KXFER_ACCESS_WRITE)) {
		thr_fail(t, "export %s: len %" PRIu64 " access 0x%x: too short or not read,write",
			 o->export, (uint64_t)rx.len, rx.access);
		return -EINVAL;
	}
	/* The last lookup's handles go: jobs on them hold what they need. */
	if (t->remote && kxfer_remote_release(t->kx, t->remote))
		thr_fail(t, "release remote handle %u", t->remote);
	if (t->peer && kxfer_peer_release(t->kx, t->peer))
		thr_fail(t, "release peer handle %u", t->peer);
	t->peer = h;
	t->remote = rx.handle;
	t->need_lookup = false;
	return 0;
}

static int thr_open(struct thr *t)
{
	int ret;

	ret = kxfer_open(&t->kx);
	if (ret) {
		thr_fail(t, "open /dev/kxfer: %s", errname(ret));
		return ret;
	}
	ret = kxfer_pool_attach(t->kx, t->o->pool, &t->pool);
	if (ret) {
		thr_fail(t, "attach pool %s: %s", t->o->pool, errname(ret));
		return ret;
	}
	/* A new file: the old one's handles went with it. */
	t->peer = 0;
	t->remote = 0;
	t->need_lookup = true;
	t->next_lookup = 0;
	return 0;
}

static void thr_status_grow(struct thr *t, uint64_t seq)
{
	uint64_t n = t->nstatus;

	if (seq < n)
		return;
	while (n <= seq)
		n = n ? n * 2 : 4096;
	t->status = realloc(t->status, n);
	t->bytes = realloc(t->bytes, n * sizeof(*t->bytes));
	if (!t->status || !t->bytes)
		die("out of memory: ENOMEM");
	memset(t->status + t->nstatus, 0, n - t->nstatus);
	t->nstatus = n;
}

/* ---------------------------------------------------------------------- */
/* Completions                                                             */
/* ---------------------------------------------------------------------- */

static bool err_tolerated(int err)
{
	switch (-err) {
	case ECONNRESET:
	case ENOTCONN:
	case ETIMEDOUT:
	case ESTALE:
	case EACCES:
		return true;
	}
	return false;
}

static void thr_complete(struct thr *t, const struct kxfer_event *ev)
{
	uint64_t seq = ev->user_data;

	if (ev->type != KXFER_EV_COMPLETION || (seq & READ_TAG) || !seq ||
	    seq > t->seq || t->status[seq] != J_PENDING || !t->inflight) {
		t->c.dup++;
		fprintf(stderr, "storm: thread %u: completion type %u for no job in flight: user_data 0x%" PRIx64 " (last job %" PRIu64 ", state %u), status %s\n",
			t->id, ev->type, seq, t->seq,
			seq && seq <= t->seq && !(seq & READ_TAG) ?
			t->status[seq] : 0, errname(ev->status));
		return;
	}
	t->inflight--;
	if (!ev->status) {
		if (ev->bytes != t->bytes[seq]) {
			thr_fail(t, "job %" PRIu64 ": completion bytes %" PRIu64 ", expected %" PRIu64,
				 seq, (uint64_t)ev->bytes, t->bytes[seq]);
			t->status[seq] = J_FAILED;
			return;
		}
		t->status[seq] = J_OK;
		t->c.ok++;
		return;
	}
	t->status[seq] = J_FAILED;
	t->c.failed++;
	t->c.fail_err[errslot(ev->status)]++;
	if (!err_tolerated(ev->status)) {
		t->c.unexpected++;
		fprintf(stderr, "storm: thread %u: job %" PRIu64 " failed: %s (wc_status %u)\n",
			t->id, seq, errname(ev->status), ev->wc_status);
	}
	if (ev->status == -ENOTCONN || ev->status == -ESTALE)
		t->need_lookup = true;
}

/* Reap what is there, waiting up to timeout_ns for min events. */
static int thr_reap(struct thr *t, unsigned int min, int64_t timeout_ns)
{
	int n, i;

	if (!t->inflight)
		min = 0;
	if (min > t->evmax)
		min = t->evmax;
	if (!min)
		timeout_ns = 0;
	n = kxfer_reap(t->kx, t->ev, t->evmax, min, timeout_ns, 0);
	if (n == -EINTR)
		return 0;
	if (n < 0) {
		thr_fail(t, "reap: %s", errname(n));
		return n;
	}
	for (i = 0; i < n; i++)
		thr_complete(t, &t->ev[i]);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Jobs                                                                    */
/* ---------------------------------------------------------------------- */

/* [off, off + len) of the part is free of jobs not yet completed. */
static bool range_free(struct thr *t, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = off; i < off + len; i++)
		if (t->tag[i - t->lo] && t->status[t->tag[i - t->lo]] == J_PENDING)
			return false;
	return true;
}

/*
 * Generate one job into batch slot k: 1..maxsegs segments inside the
 * active range, none over a byte of a job not yet completed (its own
 * segments included).  False if not even one segment found room.
 */
static bool thr_gen(struct thr *t, unsigned int k)
{
	const struct opts *o = t->o;
	struct kxfer_segment *segs = t->segs + (size_t)k * o->maxsegs;
	uint64_t span = t->ahi - t->alo, want, len, off, shift, seq, total = 0, i;
	unsigned int n = 0, try;

	seq = t->seq + 1;
	if (seq >= UINT32_MAX) {
		thr_fail(t, "sequence numbers exhausted");
		return false;
	}
	thr_status_grow(t, seq);
	t->status[seq] = J_PENDING;	/* its own segments conflict */
	shift = job_shift(o, t->id, seq);
	want = 1 + rnd_below(&t->st, o->maxsegs);
	while (n < want) {
		for (try = 0; try < 8; try++) {
			len = 1 + rnd_below(&t->st, t->maxlen < span ? t->maxlen : span);
			/* one in four continues the previous segment */
			if (n && !rnd_below(&t->st, 4) &&
			    segs[n - 1].remote_off - o->roff + segs[n - 1].len + len <= t->ahi)
				off = segs[n - 1].remote_off - o->roff + segs[n - 1].len;
			else
				off = t->alo + rnd_below(&t->st, span - len + 1);
			if (range_free(t, off, len))
				break;
		}
		if (try == 8)
			break;
		segs[n].remote_off = o->roff + off;
		segs[n].local_off = o->loff + off + shift;
		segs[n].len = len;
		for (i = off; i < off + len; i++)
			t->tag[i - t->lo] = (uint32_t)seq;
		total += len;
		n++;
	}
	if (!n) {
		t->status[seq] = J_NONE;
		return false;
	}
	t->seq = seq;
	t->bytes[seq] = total;
	t->jbytes[k] = total;
	kxfer_job_write(&t->batch[k], t->pool.handle, t->peer, t->remote,
			segs, n, seq);
	t->c.submitted++;
	return true;
}

static void thr_fill_batch(struct thr *t)
{
	unsigned int k;

	t->head = 0;
	t->n = 0;
	for (k = 0; k < t->o->batch; k++) {
		if (!thr_gen(t, k))
			break;
		t->n++;
	}
}

/*
 * Submit the batch's rest.  0: progress or nothing to do; else the
 * refusal after which to back off.
 */
static int thr_submit(struct thr *t)
{
	unsigned int acc = 0, k;
	int ret;

	if (t->head == t->n)
		return 0;
	if (t->need_lookup) {
		ret = thr_lookup(t);
		if (ret)
			return ret;
	}
	for (k = t->head; k < t->n; k++) {
		t->batch[k].peer = t->peer;
		t->batch[k].remote = t->remote;
	}
	ret = kxfer_submit(t->kx, t->batch + t->head, t->n - t->head, &acc);
	t->head += acc;
	t->c.accepted += acc;
	t->inflight += acc;
	if (t->inflight > t->c.maxinflight)
		t->c.maxinflight = t->inflight;
	if (!ret)
		return 0;
	t->c.refuse_err[errslot(ret)]++;
	switch (-ret) {
	case EAGAIN:
		break;
	case ENOTCONN:
	case ESTALE:
		t->need_lookup = true;
		break;
	default:
		thr_fail(t, "job %" PRIu64 " refused: %s",
			 (uint64_t)t->batch[t->head].user_data, errname(ret));
	}
	return ret;
}

/* Jobs of the batch never accepted: their bytes are unknown now. */
static void thr_drop_batch(struct thr *t)
{
	for (; t->head < t->n; t->head++) {
		t->status[t->batch[t->head].user_data] = J_UNSENT;
		t->c.unsent++;
	}
}

/*
 * -C: fill the in-flight window without reaping (two seconds at most),
 * with jobs of short segments so that thousands fit, then close the file
 * with the jobs in it, and open a new one on the other half of the part.
 */
static void thr_close_reopen(struct thr *t)
{
	int64_t until = now_ns() + 2000000000LL;
	uint64_t s;
	int ret;

	t->maxlen = t->o->maxlen > CLOSE_MAXLEN ? CLOSE_MAXLEN : t->o->maxlen;
	while (!t->err[0] && now_ns() < until) {
		if (t->head == t->n)
			thr_fill_batch(t);
		if (t->head == t->n)
			break;
		ret = thr_submit(t);
		if (ret == -EAGAIN || (ret && !t->need_lookup))
			break;
		if (ret)
			sleep_ns(50000000);
	}
	t->maxlen = t->o->maxlen;
	thr_drop_batch(t);
	if (!t->o->quiet)
		printf("storm: thread %u closes its file with %" PRIu64 " jobs in flight\n",
		       t->id, t->inflight);
	kxfer_close(t->kx);
	munmap(t->pool.base, t->pool.size);
	t->kx = NULL;
	for (s = 1; s <= t->seq; s++) {
		if (t->status[s] == J_PENDING) {
			t->status[s] = J_ABANDONED;
			t->c.abandoned++;
		}
	}
	t->inflight = 0;
	t->c.closes++;
	if (t->alo == t->lo) {
		t->alo = t->lo + (t->hi - t->lo) / 2;
		t->ahi = t->hi;
	} else {
		t->alo = t->lo;
		t->ahi = t->lo + (t->hi - t->lo) / 2;
	}
	thr_open(t);
}

/* ---------------------------------------------------------------------- */
/* Readback                                                                */
/* ---------------------------------------------------------------------- */

/* READ the part into the readback area; each piece until it succeeds. */
static int thr_readback(struct thr *t, int64_t deadline)
{
	const struct opts *o = t->o;
	uint64_t npieces = (t->hi - t->lo + READ_PIECE - 1) / READ_PIECE, p, left;
	uint64_t rbase = o->loff + o->slice + SHIFT_MAX;
	struct kxfer_segment *segs = xcalloc(npieces, sizeof(*segs));
	struct kxfer_job *jobs = xcalloc(npieces, sizeof(*jobs));
	uint8_t *done = xcalloc(npieces, 1);
	unsigned int acc, inflight, k;
	int ret, n, i;

	for (p = 0; p < npieces; p++) {
		segs[p].remote_off = o->roff + t->lo + p * READ_PIECE;
		segs[p].local_off = rbase + t->lo + p * READ_PIECE;
		segs[p].len = t->hi - t->lo - p * READ_PIECE;
		if (segs[p].len > READ_PIECE)
			segs[p].len = READ_PIECE;
	}
	left = npieces;
	t->need_lookup = true;
	while (left && !t->err[0]) {
		if (now_ns() > deadline) {
			thr_fail(t, "readback: %" PRIu64 " of %" PRIu64 " pieces not read within the wait bound: ETIMEDOUT",
				 left, npieces);
			break;
		}
		if (t->need_lookup) {
			ret = thr_lookup(t);
			if (ret) {
				if (ret == -EINVAL || ret == -EMFILE)
					thr_fail(t, "lookup: %s", errname(ret));
				sleep_ns(50000000);
				continue;
			}
		}
		k = 0;
		for (p = 0; p < npieces; p++)
			if (!done[p])
				kxfer_job_read(&jobs[k++], t->pool.handle, t->peer,
					       t->remote, &segs[p], 1, READ_TAG | p);
		ret = kxfer_submit(t->kx, jobs, k, &acc);
		if (ret && ret != -EAGAIN && ret != -ENOTCONN && ret != -ESTALE) {
			thr_fail(t, "readback refused: %s", errname(ret));
			break;
		}
		if (ret && ret != -EAGAIN)
			t->need_lookup = true;
		inflight = acc;
		while (inflight) {
			n = kxfer_reap(t->kx, t->ev, t->evmax, 1,
				       deadline - now_ns() > 0 ? deadline - now_ns() : 0, 0);
			if (n == -EINTR)
				continue;
			if (n <= 0) {
				thr_fail(t, "readback: %u reads without completion: %s",
					 inflight, n ? errname(n) : "ETIMEDOUT");
				t->c.lost += inflight;
				goto out;
			}
			for (i = 0; i < n; i++) {
				p = t->ev[i].user_data & ~READ_TAG;
				if (!(t->ev[i].user_data & READ_TAG) || p >= npieces ||
				    done[p] == 1) {
					t->c.dup++;
					fprintf(stderr, "storm: thread %u: readback: unexpected completion user_data 0x%" PRIx64 "\n",
						t->id, (uint64_t)t->ev[i].user_data);
					continue;
				}
				inflight--;
				if (t->ev[i].status) {
					if (!err_tolerated(t->ev[i].status))
						thr_fail(t, "readback: %s",
							 errname(t->ev[i].status));
					t->need_lookup = true;
					continue;
				}
				done[p] = 1;
				left--;
			}
		}
		if (ret == -EAGAIN || (ret && left))
			sleep_ns(50000000);
	}
out:
	free(segs);
	free(jobs);
	free(done);
	return t->err[0] ? -1 : 0;
}

static void thr_verify(struct thr *t, const uint8_t *base)
{
	const struct opts *o = t->o;
	const uint8_t *back = base + o->loff + o->slice + SHIFT_MAX;
	uint64_t x, prev_tag = 0, seq, src;
	bool prev_skip = false;
	uint8_t want;

	for (x = t->lo; x < t->hi; x++) {
		seq = t->tag[x - t->lo];
		if (!seq) {
			t->c.unwritten++;
			prev_skip = false;
			continue;
		}
		if (t->status[seq] != J_OK) {
			if (!prev_skip || prev_tag != seq)
				t->c.skipped_regions++;
			t->c.skipped_bytes++;
			prev_skip = true;
			prev_tag = seq;
			continue;
		}
		prev_skip = false;
		src = x + job_shift(o, t->id, seq);
		want = pat_at(o, src);
		if (back[x] == want) {
			t->c.verified++;
			continue;
		}
		if (!t->c.bad++)
			fprintf(stderr, "storm: thread %u: export offset %" PRIu64 ": 0x%02x, expected 0x%02x from job %" PRIu64 " (%" PRIu64 " bytes)\n",
				t->id, o->roff + x, back[x], want, seq,
				t->bytes[seq]);
	}
}

/*
 * SIGUSR1: stop submitting now, as if -d had run out.  A script whose
 * stream must outlast an event it waits for (a peer killed mid-stream)
 * gives a long -d and sends it once the event is seen.  Only the main
 * thread takes it (the workers block it), so no worker's wait is cut.
 */
static int stop_submitting;	/* lock-free: safe in a handler */

static void on_sigusr1(int sig)
{
	(void)sig;
	__atomic_store_n(&stop_submitting, 1, __ATOMIC_RELAXED);
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	const struct opts *o = t->o;
	int64_t end = now_ns() + o->duration_ns, next_close = 0, deadline;
	int64_t backoff = 10000000;
	int ret;

	if (o->close_ns)
		next_close = now_ns() + o->close_ns;
	while (!t->err[0] && now_ns() < end &&
	       !__atomic_load_n(&stop_submitting, __ATOMIC_RELAXED)) {
		if (o->close_ns && now_ns() >= next_close) {
			thr_close_reopen(t);
			next_close = now_ns() + o->close_ns;
			continue;
		}
		if (thr_reap(t, 0, 0) < 0)
			break;
		if (t->head == t->n)
			thr_fill_batch(t);
		if (t->head == t->n) {
			/* everything free is taken by jobs in flight */
			thr_reap(t, 1, 100000000);
			continue;
		}
		ret = thr_submit(t);
		if (!ret) {
			backoff = 10000000;
			continue;
		}
		if (ret == -EAGAIN && !t->need_lookup) {
			thr_reap(t, 1, 100000000);
			continue;
		}
		if (ret == -EINVAL || ret == -EMFILE || t->err[0]) {
			thr_fail(t, "lookup: %s", errname(ret));
			break;
		}
		/* session down or gone: back off, reaping what ends */
		if (t->inflight)
			thr_reap(t, t->inflight, backoff);
		else
			sleep_ns(backoff);
		backoff = backoff * 2 > 200000000 ? 200000000 : backoff * 2;
	}
	thr_drop_batch(t);

	/* Every accepted job ends, failed or not, within the wait bound. */
	deadline = now_ns() + o->wait_ns;
	while (t->inflight && now_ns() < deadline)
		if (thr_reap(t, t->inflight, deadline - now_ns()) < 0)
			break;
	if (t->inflight) {
		t->c.lost += t->inflight;
		fprintf(stderr, "storm: thread %u: %" PRIu64 " jobs without a completion after %.0f s\n",
			t->id, t->inflight, o->wait_ns / 1e9);
	}
	/* and no event more */
	ret = kxfer_reap(t->kx, t->ev, t->evmax, 0, 0, 0);
	if (ret > 0) {
		int i;

		for (i = 0; i < ret; i++)
			thr_complete(t, &t->ev[i]);
	}
	if (t->err[0] || t->c.lost || o->no_readback)
		return NULL;
	if (!thr_readback(t, now_ns() + o->wait_ns))
		thr_verify(t, t->pool.base);
	return NULL;
}

/* ---------------------------------------------------------------------- */

static void add_counts(struct counts *a, const struct counts *b)
{
	int i;

	a->submitted += b->submitted;
	a->accepted += b->accepted;
	a->ok += b->ok;
	a->failed += b->failed;
	a->abandoned += b->abandoned;
	a->unsent += b->unsent;
	a->closes += b->closes;
	a->lookups += b->lookups;
	a->maxinflight += b->maxinflight;
	a->verified += b->verified;
	a->skipped_regions += b->skipped_regions;
	a->skipped_bytes += b->skipped_bytes;
	a->unwritten += b->unwritten;
	a->bad += b->bad;
	a->lost += b->lost;
	a->dup += b->dup;
	a->unexpected += b->unexpected;
	for (i = 0; i < NERR; i++) {
		a->fail_err[i] += b->fail_err[i];
		a->refuse_err[i] += b->refuse_err[i];
	}
}

static void print_errs(const char *what, uint64_t total, const uint64_t *e)
{
	bool any = false;
	int i;

	printf(" %s %" PRIu64 " (", what, total);
	for (i = 0; i < NERR; i++) {
		if (!e[i])
			continue;
		printf("%s%s %" PRIu64, any ? " " : "", i ? errname(i) : "other",
		       e[i]);
		any = true;
	}
	printf(")");
}

int main(int argc, char **argv)
{
	struct opts o = {
		.threads = 4, .maxsegs = 4, .maxlen = 1024, .batch = 64,
		.duration_ns = 30000000000LL, .wait_ns = 120000000000LL,
		.roff = UINT64_MAX, .slice = 0, .loff = UINT64_MAX,
	};
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct kxfer_pool_map map;
	struct counts tot = { 0 };
	sigset_t usr1;
	struct thr *thr;
	pthread_t *tid;
	struct kxfer *kx;
	bool have_seed = false, failed = false;
	uint64_t part, x, lim, need;
	unsigned int i;
	uint8_t *src;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:T:s:m:l:b:C:w:NqR:S:L:")) != -1) {
		switch (opt) {
		case 'd':
			o.duration_ns = arg_secs(optarg);
			break;
		case 'T':
			o.threads = (unsigned int)arg_u64(optarg);
			break;
		case 's':
			o.seed = arg_u64(optarg);
			have_seed = true;
			break;
		case 'm':
			o.maxsegs = (unsigned int)arg_u64(optarg);
			break;
		case 'l':
			o.maxlen = arg_u64(optarg);
			break;
		case 'b':
			o.batch = (unsigned int)arg_u64(optarg);
			break;
		case 'C':
			o.close_ns = arg_secs(optarg);
			break;
		case 'w':
			o.wait_ns = arg_secs(optarg);
			break;
		case 'N':
			o.no_readback = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'R':
			o.roff = arg_u64(optarg);
			break;
		case 'S':
			o.slice = arg_u64(optarg);
			break;
		case 'L':
			o.loff = arg_u64(optarg);
			break;
		default:
			usage("unknown option");
		}
	}
	if (argc - optind != 3)
		usage("PEER EXPORT POOL expected");
	o.peer = argv[optind];
	o.export = argv[optind + 1];
	o.pool = argv[optind + 2];
	if (o.roff == UINT64_MAX || o.loff == UINT64_MAX || !o.slice)
		usage("-R, -S and -L are required");
	if (!o.threads || o.threads > MAX_THREADS || !o.maxsegs ||
	    o.maxsegs > 1024 || !o.maxlen || !o.batch || o.batch > 4096)
		usage("bad -T, -m, -l or -b");
	part = o.slice / o.threads;
	if (part < 2 * o.maxlen || part < 16)
		usage("slice too small for the threads and -l");
	if (!have_seed)
		o.seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	o.key = mix64(o.seed ^ 0x73746f726dULL);

	/* The source pattern, written once through a mapping of our own. */
	ret = kxfer_open(&kx);
	if (ret)
		die("open /dev/kxfer: %s", errname(ret));
	ret = kxfer_pool_attach(kx, o.pool, &map);
	if (ret)
		die("attach pool %s: %s", o.pool, errname(ret));
	need = 2 * o.slice + SHIFT_MAX;
	if (o.loff > map.size || need > map.size - o.loff)
		die("pool %s (%" PRIu64 " bytes) has no room for %" PRIu64 " bytes at %" PRIu64 ": ERANGE",
		    o.pool, map.size, need, o.loff);
	src = (uint8_t *)map.base + o.loff;
	lim = o.slice + SHIFT_MAX;
	for (x = 0; x < lim; x++)
		src[x] = pat_at(&o, x);

	printf("storm: seed %" PRIu64 " peer %s export %s [%" PRIu64 ", +%" PRIu64 ") pool %s at %" PRIu64 ", %u threads, %.1f s, segments 1..%u of 1..%" PRIu64 " bytes, batch %u%s\n",
	       o.seed, o.peer, o.export, o.roff, o.slice, o.pool, o.loff,
	       o.threads, o.duration_ns / 1e9, o.maxsegs, o.maxlen, o.batch,
	       o.close_ns ? ", closing files with jobs in flight" : "");
	fflush(stdout);

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	thr = xcalloc(o.threads, sizeof(*thr));
	tid = xcalloc(o.threads, sizeof(*tid));
	for (i = 0; i < o.threads; i++) {
		struct thr *t = &thr[i];

		t->o = &o;
		t->id = i;
		t->st = mix64(o.seed + i);
		t->lo = i * part;
		t->hi = i + 1 == o.threads ? o.slice : (i + 1) * part;
		t->maxlen = o.maxlen;
		t->alo = t->lo;
		t->ahi = o.close_ns ? t->lo + (t->hi - t->lo) / 2 : t->hi;
		t->tag = xcalloc(t->hi - t->lo, sizeof(*t->tag));
		t->batch = xcalloc(o.batch, sizeof(*t->batch));
		t->segs = xcalloc((size_t)o.batch * o.maxsegs, sizeof(*t->segs));
		t->jbytes = xcalloc(o.batch, sizeof(*t->jbytes));
		t->evmax = 512;
		t->ev = xcalloc(t->evmax, sizeof(*t->ev));
		thr_status_grow(t, 1);
		if (thr_open(t))
			die("thread %u: %s", i, t->err);
		ret = pthread_create(&tid[i], NULL, thr_main, t);
		if (ret)
			die("pthread_create: %s", strerror(ret));
	}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	printf("storm: started\n");
	fflush(stdout);

	for (i = 0; i < o.threads; i++) {
		pthread_join(tid[i], NULL);
		if (thr[i].err[0]) {
			fprintf(stderr, "storm: thread %u: %s\n", i, thr[i].err);
			failed = true;
		}
		if (!o.quiet)
			printf("storm: thread %u: accepted %" PRIu64 " ok %" PRIu64 " failed %" PRIu64 " abandoned %" PRIu64 " maxinflight %" PRIu64 " lookups %" PRIu64 " verified %" PRIu64 "\n",
			       i, thr[i].c.accepted, thr[i].c.ok, thr[i].c.failed,
			       thr[i].c.abandoned, thr[i].c.maxinflight,
			       thr[i].c.lookups, thr[i].c.verified);
		add_counts(&tot, &thr[i].c);
	}

	if (tot.accepted != tot.ok + tot.failed + tot.abandoned + tot.lost) {
		fprintf(stderr, "storm: accepted %" PRIu64 " != ok + failed + abandoned + lost\n",
			tot.accepted);
		failed = true;
	}
	if (tot.lost || tot.dup || tot.bad || tot.unexpected ||
	    !(o.no_readback ? tot.ok : tot.verified))
		failed = true;

	printf("storm: seed %" PRIu64 " threads %u submitted %" PRIu64 " accepted %" PRIu64 " ok %" PRIu64,
	       o.seed, o.threads, tot.submitted, tot.accepted, tot.ok);
	print_errs("failed", tot.failed, tot.fail_err);
	x = 0;
	for (i = 0; i < NERR; i++)
		x += tot.refuse_err[i];
	print_errs("refused", x, tot.refuse_err);
	printf(" abandoned %" PRIu64 " unsent %" PRIu64 " closes %" PRIu64 " maxinflight %" PRIu64 " verified_bytes %" PRIu64 " skipped_regions %" PRIu64 " skipped_bytes %" PRIu64 " unwritten_bytes %" PRIu64 " bad_bytes %" PRIu64 " lost %" PRIu64 " dup %" PRIu64 "%s\n",
	       tot.abandoned, tot.unsent, tot.closes, tot.maxinflight,
	       tot.verified, tot.skipped_regions, tot.skipped_bytes,
	       tot.unwritten, tot.bad, tot.lost, tot.dup,
	       failed ? " FAILED" : "");
	fflush(stdout);
	return failed ? 1 : 0;
}
