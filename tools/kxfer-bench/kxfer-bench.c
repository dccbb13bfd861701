// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer-bench: measure the kxfer data plane through libkxfer.
 *
 *   kxfer-bench [OPTIONS] bw     WRITE/READ bandwidth per message size
 *   kxfer-bench [OPTIONS] rate   small messages per second, batched jobs
 *   kxfer-bench [OPTIONS] lat    one small job, submit to completion
 *   kxfer-bench [OPTIONS] kv     seed 003's KV push, against one big write
 *   kxfer-bench [OPTIONS] push   the demo's push (examples/kv-prefill), timed
 *   kxfer-bench [OPTIONS] plan   the job planner alone (no device needed)
 *
 * (kxfer-bench -h prints the options.)  Every mode but plan needs a peer
 * session that is up, a local pool this process may attach and an export
 * of the peer that grants read and write.  Each result row carries two
 * CPU figures for the measured part only: the whole machine's busy time
 * from /proc/stat (user, nice, system, irq, softirq and steal of every
 * CPU: what the kernel does for the job in softirqs, kworkers and the
 * provider's tasklets or workqueues counts, as perftest's would), and
 * this process's user + system time (getrusage), so that the cost of
 * waiting shows: a blocking reap should cost next to nothing, a
 * busy-polling one a whole CPU.  `make bench` compares the first.
 *
 * Output: a table, or with -j one JSON array of rows.  Exit status 0,
 * 1 when a job or a call failed (reason on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kxfer.h"
#include "kv-demo.h"

#include "kernel_shim.h"
#include "plan.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#define __printf(a, b)	__attribute__((format(printf, a, b)))

#define KIB		((uint64_t)1024)
#define MIB		((uint64_t)1024 * 1024)
#define MAX_SIZES	16
#define MAX_QD		4096

/* ---------------------------------------------------------------------- */
/* Options, errors                                                         */
/* ---------------------------------------------------------------------- */

static struct {
	const char *peer;
	const char *pool;
	const char *export;
	bool json;
	double secs;		/* per measured point */
	unsigned int qd;	/* jobs in flight */
	unsigned int batch;	/* jobs per SUBMIT */
	unsigned int reap_min;	/* bw, rate: events a REAP waits for; 0: batch */
	const char *layouts;	/* kv: the layouts to run; NULL: all */
	unsigned int iters;	/* lat */
	unsigned int ops;	/* bit 0 WRITE, bit 1 READ */
	unsigned int reaps;	/* lat: bit 0 blocking, bit 1 busy-poll */
	uint64_t sizes[MAX_SIZES];
	unsigned int nsizes;
	/* kv */
	unsigned int layers;
	unsigned int tokens;
	unsigned int tok_bytes;	/* bytes of K (and of V) per token per layer */
	/* planner parameters, for counting WRs as the module plans them */
	unsigned int max_sge;
	uint64_t stripe;
	uint64_t chunk;		/* local pool chunk size; 0: one run */
	uint64_t mr;		/* remote MR size; 0: one run */
	/* plan */
	unsigned int plan_segs;
	unsigned int seed;
	/* push */
	unsigned int push_min;
} opt = {
	.peer = "self",
	.pool = "bench",
	.export = "bench",
	.secs = 2.0,
	.qd = 64,
	.batch = 8,
	.iters = 2000,
	.layers = 16,
	.tokens = 512,
	.tok_bytes = 256,
	.max_sge = 32,
	.stripe = MIB,
	.plan_segs = 1 << 20,
	.seed = 1,
};

static const char usage_text[] =
"usage: kxfer-bench [OPTIONS] bw|rate|lat|kv|push|plan\n"
"  -p PEER     peer session (default self)\n"
"  -P POOL     local pool to attach (default bench)\n"
"  -e EXPORT   the peer's export, read and write (default bench)\n"
"  -j          JSON output (one array of rows)\n"
"  -t SEC      seconds per measured point (default 2)\n"
"  -o OPS      write, read or write,read (bw, rate, lat; default write)\n"
"  -s SIZES    message sizes, comma separated, K/M suffixes\n"
"              (bw: 4K,64K,1M,4M; rate: 4K; lat: 8)\n"
"  -q QD       jobs in flight (bw, rate; default 64)\n"
"  -b N        jobs per SUBMIT (bw, rate; default 8)\n"
"  -w N        bw, rate: a REAP waits for N events (default: the batch,\n"
"              as perftest's CQ moderation; 1 reaps whatever is there)\n"
"  -n N        lat: iterations per reap mode (default 2000);\n"
"              push: pushes at least, and -t seconds (default 3);\n"
"              plan: segments per job (default 1048576)\n"
"  -m MODES    lat: block, poll or block,poll (default both); bw, rate:\n"
"              poll reaps with KXFER_REAP_BUSY_POLL (default block)\n"
"  -L N -T N -B N  kv: layers, tokens, bytes of K per token and layer\n"
"              (default 16 x 512 x 256: 4 MiB of K and V)\n"
"  -G N        planner: SGEs per WR (default 32, the module's cap)\n"
"  -S BYTES    planner: stripe (default 1M, the module's default)\n"
"  -C BYTES    planner: local pool chunk size (default: one run)\n"
"  -M BYTES    planner: remote MR size (default: one run)\n"
"  -r SEED     kv, plan: seed of the scattered layouts (default 1)\n"
"  -k LAYOUTS  kv: the layouts to run, comma separated (default all:\n"
"              one-big-write, p{1,16}-{contig,scattered}-kv-{together,apart})\n";

static const char *prog = "kxfer-bench";

static __printf(1, 2) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static __printf(1, 2) void usage(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		fprintf(stderr, "%s: ", prog);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fputs(usage_text, stderr);
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		usage("bad size: %s", s);
	switch (*end) {
	case 'k': case 'K':
		v *= KIB;
		end++;
		break;
	case 'm': case 'M':
		v *= MIB;
		end++;
		break;
	case 'g': case 'G':
		v *= 1024 * MIB;
		end++;
		break;
	}
	if (*end || !v)
		usage("bad size: %s", s);
	return v;
}

static unsigned int parse_uint(const char *s, unsigned int max)
{
	uint64_t v = parse_size(s);

	if (v > max)
		usage("%s is larger than %u", s, max);
	return v;
}

static void parse_sizes(char *s)
{
	char *tok, *save = NULL;

	opt.nsizes = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nsizes == MAX_SIZES)
			usage("at most %d sizes", MAX_SIZES);
		opt.sizes[opt.nsizes++] = parse_size(tok);
	}
}

static unsigned int parse_words(char *s, const char *const *words,
				const char *what)
{
	unsigned int bits = 0, i;
	char *tok, *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; words[i]; i++)
			if (!strcmp(tok, words[i]))
				break;
		if (!words[i])
			usage("bad %s: %s", what, tok);
		bits |= 1U << i;
	}
	if (!bits)
		usage("no %s given", what);
	return bits;
}

/* ---------------------------------------------------------------------- */
/* Clocks, CPU time, results                                               */
/* ---------------------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double proc_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/*
 * The whole machine's CPU time so far, all CPUs, from /proc/stat's first
 * line: busy (user, nice, system, irq, softirq, steal; guest time is in
 * user already) and idle (idle, iowait), in seconds; zeros without
 * /proc/stat.
 */
static void sys_cpu(double *busy, double *idle)
{
	unsigned long long v[8] = { 0 };
	static long hz;
	FILE *f;

	*busy = *idle = 0;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	f = fopen("/proc/stat", "r");
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]) == 8 && hz > 0) {
		*busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
		*idle = (double)(v[3] + v[4]) / hz;
	}
	fclose(f);
}

/* CPU time at the start of a measured part: this process's, the machine's */
struct cpu_mark {
	double proc, busy, idle;
};

static struct cpu_mark cpu_now(void)
{
	struct cpu_mark m;

	m.proc = proc_cpu();
	sys_cpu(&m.busy, &m.idle);
	return m;
}

/*
 * One result row.  Fields that do not apply to a mode stay zero and are
 * left out of its output.
 */
struct row {
	const char *mode;
	const char *op;		/* write, read */
	const char *variant;	/* lat: block, poll; kv: layout */
	uint64_t size;		/* bytes per job (kv: total) */
	unsigned int qps;
	unsigned int qd;
	unsigned int batch;
	unsigned int reap_min;
	uint64_t jobs;
	uint64_t bytes;
	double secs;
	double cpu;		/* user + sys seconds of this process */
	double sys_busy;	/* seconds all CPUs were busy (/proc/stat) */
	double sys_idle;	/* seconds all CPUs were idle */
	uint64_t msgs;		/* messages moved: jobs, or kv segments */
	double avg_us;		/* lat, push: mean */
	double p50_us, p99_us, min_us;
	uint64_t segs, wrs;	/* kv, plan */
	double ref_secs;	/* kv: one big write of the same bytes */
	double avg_secs;	/* kv: mean of the repetitions (secs: best) */
};

/* The CPU time since @m, divided by @div (kv: per push) */
static void row_cpu(struct row *r, const struct cpu_mark *m, double div)
{
	struct cpu_mark e = cpu_now();

	r->cpu = (e.proc - m->proc) / div;
	r->sys_busy = (e.busy - m->busy) / div;
	r->sys_idle = (e.idle - m->idle) / div;
}

static struct row rows[256];
static unsigned int nrows;

static struct row *row_new(const char *mode)
{
	struct row *r;

	if (nrows == ARRAY_SIZE(rows))
		die("too many result rows");
	r = &rows[nrows++];
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	return r;
}

static double mbps(const struct row *r)
{
	return r->secs > 0 ? r->bytes / r->secs / 1e6 : 0;
}

static double per_sec(const struct row *r)
{
	return r->secs > 0 ? r->jobs / r->secs : 0;
}

static double cpu_pct(const struct row *r)
{
	double secs = r->avg_secs > 0 ? r->avg_secs : r->secs;

	return secs > 0 ? 100.0 * r->cpu / secs : 0;
}

static void size_str(char *buf, size_t len, uint64_t v)
{
	if (v >= MIB && !(v % MIB))
		snprintf(buf, len, "%" PRIu64 "M", v / MIB);
	else if (v >= KIB && !(v % KIB))
		snprintf(buf, len, "%" PRIu64 "K", v / KIB);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

static void print_row_text(const struct row *r, bool head)
{
	char sz[32];

	size_str(sz, sizeof(sz), r->size);
	if (!strcmp(r->mode, "bw") || !strcmp(r->mode, "rate")) {
		if (head)
			printf("%-5s %-6s %6s %4s %5s %5s %10s %10s %12s %7s %6s %7s\n",
			       "mode", "op", "size", "qps", "qd", "batch",
			       "jobs", "MB/s", "jobs/s", "cpu_s", "cpu%",
			       "sys_s");
		printf("%-5s %-6s %6s %4u %5u %5u %10" PRIu64 " %10.2f %12.0f %7.3f %6.1f %7.2f\n",
		       r->mode, r->op, sz, r->qps, r->qd, r->batch, r->jobs,
		       mbps(r), per_sec(r), r->cpu, cpu_pct(r), r->sys_busy);
	} else if (!strcmp(r->mode, "lat")) {
		if (head)
			printf("%-5s %-6s %-6s %6s %4s %8s %9s %9s %9s %9s %7s %6s %7s\n",
			       "mode", "op", "reap", "size", "qps", "iters",
			       "min_us", "p50_us", "avg_us", "p99_us",
			       "cpu_s", "cpu%", "sys_s");
		printf("%-5s %-6s %-6s %6s %4u %8" PRIu64 " %9.2f %9.2f %9.2f %9.2f %7.3f %6.1f %7.2f\n",
		       r->mode, r->op, r->variant, sz, r->qps, r->jobs,
		       r->min_us, r->p50_us, r->avg_us, r->p99_us, r->cpu,
		       cpu_pct(r), r->sys_busy);
	} else if (!strcmp(r->mode, "push")) {
		if (head)
			printf("%-4s %7s %5s %5s %6s %9s %9s %9s %7s\n",
			       "mode", "bytes", "segs", "jobs", "pushes",
			       "min_us", "p50_us", "p99_us", "cpu_s");
		printf("%-4s %7" PRIu64 " %5" PRIu64 " %5u %6" PRIu64 " %9.2f %9.2f %9.2f %7.3f\n",
		       r->mode, r->size, r->segs, LAYERS, r->jobs, r->min_us,
		       r->p50_us, r->p99_us, r->cpu);
	} else if (!strcmp(r->mode, "kv")) {
		if (head)
			printf("%-4s %-22s %6s %8s %8s %9s %9s %8s %7s %7s\n",
			       "mode", "layout", "bytes", "segs", "wrs",
			       "secs", "big_secs", "vs_big", "MB/s", "cpu_s");
		printf("%-4s %-22s %6s %8" PRIu64 " %8" PRIu64 " %9.4f %9.4f %8.3f %7.2f %7.3f\n",
		       r->mode, r->variant, sz, r->segs, r->wrs, r->secs,
		       r->ref_secs, r->ref_secs > 0 ? r->secs / r->ref_secs : 0,
		       mbps(r), r->cpu);
	} else {
		if (head)
			printf("%-4s %-6s %9s %9s %10s %14s %7s\n", "mode",
			       "step", "segs", "wrs", "secs", "segs/s", "cpu_s");
		printf("%-4s %-6s %9" PRIu64 " %9" PRIu64 " %10.4f %14.0f %7.3f\n",
		       r->mode, r->variant, r->segs, r->wrs, r->secs,
		       r->secs > 0 ? r->segs * (double)r->jobs / r->secs : 0,
		       r->cpu);
	}
}

static void print_row_json(const struct row *r)
{
	printf("{\"mode\":\"%s\"", r->mode);
	if (r->op)
		printf(",\"op\":\"%s\"", r->op);
	if (r->variant)
		printf(",\"variant\":\"%s\"", r->variant);
	if (r->size)
		printf(",\"size\":%" PRIu64, r->size);
	if (r->qps)
		printf(",\"qps\":%u", r->qps);
	if (r->qd)
		printf(",\"qd\":%u,\"batch\":%u,\"reap_min\":%u", r->qd,
		       r->batch, r->reap_min);
	printf(",\"jobs\":%" PRIu64 ",\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"secs\":%.6f", r->jobs, r->msgs, r->bytes, r->secs);
	printf(",\"cpu_secs\":%.6f,\"cpu_pct\":%.2f", r->cpu, cpu_pct(r));
	/* kv: per push, like cpu_secs */
	printf(",\"sys_busy_secs\":%.4f,\"sys_idle_secs\":%.4f,\"ncpus\":%ld",
	       r->sys_busy, r->sys_idle, sysconf(_SC_NPROCESSORS_ONLN));
	if (!strcmp(r->mode, "bw") || !strcmp(r->mode, "rate"))
		printf(",\"mb_per_sec\":%.3f,\"jobs_per_sec\":%.1f", mbps(r),
		       per_sec(r));
	if (!strcmp(r->mode, "lat") || !strcmp(r->mode, "push"))
		printf(",\"min_us\":%.3f,\"p50_us\":%.3f,\"p99_us\":%.3f"
		       ",\"avg_us\":%.3f", r->min_us, r->p50_us, r->p99_us,
		       r->avg_us);
	if (!strcmp(r->mode, "push"))
		printf(",\"layers\":%u,\"segs\":%" PRIu64 ",\"wrs\":%" PRIu64,
		       LAYERS, r->segs, r->wrs);
	if (!strcmp(r->mode, "kv"))
		printf(",\"segs\":%" PRIu64 ",\"wrs\":%" PRIu64
		       ",\"big_secs\":%.6f,\"vs_big\":%.4f,\"mb_per_sec\":%.3f"
		       ",\"avg_secs\":%.6f,\"avg_mb_per_sec\":%.3f",
		       r->segs, r->wrs, r->ref_secs,
		       r->ref_secs > 0 ? r->secs / r->ref_secs : 0, mbps(r),
		       r->avg_secs, r->avg_secs > 0 ?
		       r->bytes / r->avg_secs / 1e6 : 0);
	if (!strcmp(r->mode, "plan"))
		printf(",\"segs\":%" PRIu64 ",\"wrs\":%" PRIu64
		       ",\"segs_per_sec\":%.1f", r->segs, r->wrs,
		       r->secs > 0 ? r->segs * (double)r->jobs / r->secs : 0);
	putchar('}');
}

static void print_rows(void)
{
	const char *last = NULL;
	unsigned int i;

	if (opt.json) {
		putchar('[');
		for (i = 0; i < nrows; i++) {
			if (i)
				putchar(',');
			print_row_json(&rows[i]);
		}
		puts("]");
		return;
	}
	for (i = 0; i < nrows; i++) {
		print_row_text(&rows[i], !last || strcmp(last, rows[i].mode));
		last = rows[i].mode;
	}
}

/* ---------------------------------------------------------------------- */
/* The device: pool, peer, export                                          */
/* ---------------------------------------------------------------------- */

static struct {
	struct kxfer *kx;
	struct kxfer_pool_map pool;
	uint32_t peer;
	unsigned int qps;
	struct kxfer_remote_lookup rx;
} dev;

static const char *errname(int err)
{
	static char buf[32];
	const char *s = strerrorname_np(err);

	if (s)
		return s;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static void dev_open(void)
{
	struct kxfer_peer_lookup pl;
	int ret;

	ret = kxfer_open(&dev.kx);
	if (ret)
		die("open /dev/kxfer: %s", strerror(-ret));
	ret = kxfer_pool_attach(dev.kx, opt.pool, &dev.pool);
	if (ret)
		die("pool %s: %s", opt.pool, strerror(-ret));
	/* The raw lookup, for the QP count the library does not return. */
	memset(&pl, 0, sizeof(pl));
	if (strlen(opt.peer) >= sizeof(pl.name))
		die("peer name too long: %s", opt.peer);
	strcpy(pl.name, opt.peer);
	if (ioctl(kxfer_fd(dev.kx), KXFER_IOC_PEER_LOOKUP, &pl))
		die("peer %s: %s", opt.peer, strerror(errno));
	dev.peer = pl.handle;
	dev.qps = pl.qps;
	ret = kxfer_remote_lookup(dev.kx, dev.peer, opt.export, &dev.rx);
	if (ret)
		die("export %s of peer %s: %s", opt.export, opt.peer,
		    strerror(-ret));
}

/* Submit all @n jobs; -EAGAIN is not expected when the caller keeps count. */
static void submit_all(const struct kxfer_job *jobs, unsigned int n)
{
	unsigned int acc;
	int ret;

	while (n) {
		ret = kxfer_submit(dev.kx, jobs, n, &acc);
		if (ret && ret != -EAGAIN)
			die("submit refused: %s", errname(-ret));
		if (ret == -EAGAIN && !acc)
			die("submit: EAGAIN with nothing in flight to reap");
		jobs += acc;
		n -= acc;
	}
}

static unsigned int reap_some(struct kxfer_event *ev, unsigned int max,
			      unsigned int min, unsigned int flags,
			      uint64_t *bytes)
{
	int i, n;

	do
		n = kxfer_reap(dev.kx, ev, max, min, -1, flags);
	while (n == -EINTR);
	if (n < 0)
		die("reap: %s", strerror(-n));
	for (i = 0; i < n; i++) {
		if (ev[i].type != KXFER_EV_COMPLETION)
			continue;
		if (ev[i].status)
			die("job %" PRIu64 " failed: %s (wc_status %u)",
			    (uint64_t)ev[i].user_data,
			    errname(-ev[i].status), ev[i].wc_status);
		if (bytes)
			*bytes += ev[i].bytes;
	}
	return n;
}

/* ---------------------------------------------------------------------- */
/* bw, rate                                                                */
/* ---------------------------------------------------------------------- */

static const char *op_name(uint32_t op)
{
	return op == KXFER_OP_READ ? "read" : "write";
}

/*
 * Keep @qd jobs of @size bytes in flight for opt.secs, @batch per SUBMIT;
 * the local and remote offsets walk over the pool and the export so that
 * the jobs do not all hit the same bytes.
 */
static void run_stream(const char *mode, uint32_t op, uint64_t size)
{
	static struct kxfer_segment segs[MAX_QD];
	static struct kxfer_job jobs[MAX_QD];
	static struct kxfer_event ev[MAX_QD];
	uint64_t span, slots, next = 0, bytes = 0, done = 0;
	unsigned int qd = opt.qd, batch = opt.batch, inflight = 0, i, min;
	bool busy = opt.reaps == 2;	/* -m poll */
	struct cpu_mark c0;
	double t0, end;
	struct row *r;

	span = dev.pool.size < dev.rx.len ? dev.pool.size : dev.rx.len;
	if (size > span)
		die("%" PRIu64 " bytes do not fit the pool and the export", size);
	slots = span / size;
	if (batch > qd)
		batch = qd;
	min = opt.reap_min ? opt.reap_min : batch;
	if (min > qd)
		min = qd;

	c0 = cpu_now();
	t0 = now();
	end = t0 + opt.secs;
	for (;;) {
		bool more = now() < end;

		while (more && inflight + batch <= qd) {
			for (i = 0; i < batch; i++) {
				struct kxfer_segment *s = &segs[i];
				uint64_t off = (next++ % slots) * size;

				/* read by the kernel during SUBMIT only */
				s->local_off = off;
				s->remote_off = off;
				s->len = size;
				kxfer_job_init(&jobs[i], op, dev.pool.handle,
					       dev.peer, dev.rx.handle, s, 1,
					       next);
			}
			submit_all(jobs, batch);
			inflight += batch;
		}
		if (!inflight)
			break;
		/*
		 * Wait for a batch's worth (or what is left): one REAP per
		 * batch, as perftest polls its CQ once per moderation.
		 */
		i = reap_some(ev, MAX_QD, inflight < min ? inflight : min,
			      busy ? KXFER_REAP_BUSY_POLL : 0, &bytes);
		inflight -= i;
		done += i;
	}
	r = row_new(mode);
	r->secs = now() - t0;
	row_cpu(r, &c0, 1);
	r->op = op_name(op);
	r->size = size;
	r->qps = dev.qps;
	r->qd = qd;
	r->batch = batch;
	r->reap_min = min;
	if (busy)
		r->variant = "poll";
	r->jobs = done;
	r->msgs = done;
	r->bytes = bytes;
}

static uint32_t ops_list(uint32_t *out)
{
	uint32_t n = 0;

	if (opt.ops & 1)
		out[n++] = KXFER_OP_WRITE;
	if (opt.ops & 2)
		out[n++] = KXFER_OP_READ;
	return n;
}

static void mode_stream(const char *mode)
{
	uint32_t ops[2], nops = ops_list(ops), o;
	unsigned int i;

	dev_open();
	for (o = 0; o < nops; o++)
		for (i = 0; i < opt.nsizes; i++)
			run_stream(mode, ops[o], opt.sizes[i]);
}

/* ---------------------------------------------------------------------- */
/* lat                                                                     */
/* ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void run_lat(uint32_t op, uint64_t size, bool poll)
{
	unsigned int flags = poll ? KXFER_REAP_BUSY_POLL : 0, i, warm = 50;
	struct kxfer_segment seg = { 0, 0, size };
	struct kxfer_event ev;
	struct kxfer_job job;
	double *us, t0, tstart, sum = 0;
	struct cpu_mark c0;
	struct row *r;

	if (size > dev.pool.size || size > dev.rx.len)
		die("%" PRIu64 " bytes do not fit the pool and the export", size);
	us = calloc(opt.iters, sizeof(*us));
	if (!us)
		die("out of memory");
	kxfer_job_init(&job, op, dev.pool.handle, dev.peer, dev.rx.handle,
		       &seg, 1, 1);
	for (i = 0; i < warm; i++) {
		submit_all(&job, 1);
		reap_some(&ev, 1, 1, flags, NULL);
	}
	c0 = cpu_now();
	tstart = now();
	for (i = 0; i < opt.iters; i++) {
		t0 = now();
		submit_all(&job, 1);
		reap_some(&ev, 1, 1, flags, NULL);
		us[i] = (now() - t0) * 1e6;
	}
	r = row_new("lat");
	r->secs = now() - tstart;
	row_cpu(r, &c0, 1);
	for (i = 0; i < opt.iters; i++)
		sum += us[i];
	r->avg_us = sum / opt.iters;
	qsort(us, opt.iters, sizeof(*us), cmp_double);
	r->op = op_name(op);
	r->variant = poll ? "poll" : "block";
	r->size = size;
	r->qps = dev.qps;
	r->jobs = opt.iters;
	r->msgs = opt.iters;
	r->bytes = size * opt.iters;
	r->min_us = us[0];
	r->p50_us = us[opt.iters / 2];
	r->p99_us = us[(opt.iters * 99) / 100];
	free(us);
}

static void mode_lat(void)
{
	uint32_t ops[2], nops = ops_list(ops), o;
	unsigned int i;

	dev_open();
	for (o = 0; o < nops; o++)
		for (i = 0; i < opt.nsizes; i++) {
			if (opt.reaps & 1)
				run_lat(ops[o], opt.sizes[i], false);
			if (opt.reaps & 2)
				run_lat(ops[o], opt.sizes[i], true);
		}
}

/* ---------------------------------------------------------------------- */
/* Counting WRs with the module's planner                                  */
/* ---------------------------------------------------------------------- */

static u64 run_to(uint64_t unit, u64 off)
{
	return unit ? unit - off % unit : U64_MAX - off;
}

static u64 local_run(void *ctx, u64 off)
{
	(void)ctx;
	return run_to(opt.chunk, off);
}

static u64 remote_run(void *ctx, u64 off)
{
	(void)ctx;
	return run_to(opt.mr, off);
}

static void plan_init(struct kxfer_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->max_sge = opt.max_sge;
	p->stripe = opt.stripe;
	p->local_run = local_run;
	p->remote_run = remote_run;
}

static struct kxfer_plan_scratch *plan_scratch(unsigned int n)
{
	struct kxfer_plan_scratch *sc;

	sc = malloc(sizeof(*sc) + 2 * (size_t)n * sizeof(sc->segs[0]));
	if (!sc)
		die("out of memory");
	return sc;
}

/*
 * WRs the planner makes of one WRITE job; the module plans the same way:
 * in remote order unless the remote ranges overlap, then counted.
 */
static uint64_t plan_wrs(const struct kxfer_segment *segs, unsigned int n)
{
	struct kxfer_plan_scratch *sc = plan_scratch(n);
	const struct kxfer_plan_seg *order;
	struct kxfer_plan p;
	bool overlap;
	int ret;

	plan_init(&p);
	/* struct kxfer_segment and kxfer_plan_seg are the same three u64s */
	order = kxfer_plan_order((const struct kxfer_plan_seg *)segs, n, false,
				 sc, &overlap);
	ret = kxfer_plan_count(&p, order, n);
	if (ret)
		die("planner: %s", strerror(-ret));
	free(sc);
	return p.nwr;
}

/* ---------------------------------------------------------------------- */
/* kv                                                                      */
/* ---------------------------------------------------------------------- */

/*
 * Seed 003's push, scaled down: prefill holds, for each layer, the K and
 * the V of every token (tokens x tok_bytes each), contiguous in its pool;
 * decode has allocated pages of @page tokens for the request, in order
 * (contiguous) or anywhere among four times as many (scattered).  K and
 * V are stored either together (each page: its K, then its V: one
 * segment per page and layer) or apart (a K area and a V area per layer:
 * two segments per page and layer).  Prefill pushes one job per layer,
 * all layers in flight, as it would while computing the next ones.
 *
 * Local (prefill) layout, layer l, page p of P:
 *   together: l * 2TB + p * 2pgB  [K of page p][V of page p]
 *   apart:    l * 2TB + p * pgB (K),  l * 2TB + TB + p * pgB (V)
 * Remote (decode) layout: the same, with page p at slot[p] of 4P slots
 * (scattered) or slot p (contiguous), on a layer stride of 4 * 2TB.
 */
struct kv_case {
	unsigned int page;
	bool scattered;
	bool together;
};

static uint64_t kv_slots_span(void)
{
	return 4ULL * 2 * opt.tokens * opt.tok_bytes;
}

static unsigned int kv_build(const struct kv_case *c, unsigned int layer,
			     const unsigned int *slot,
			     struct kxfer_segment *segs)
{
	uint64_t tb = (uint64_t)opt.tokens * opt.tok_bytes;
	uint64_t pgb = (uint64_t)c->page * opt.tok_bytes;
	uint64_t lbase = layer * 2 * tb, rbase = layer * kv_slots_span();
	unsigned int pages = opt.tokens / c->page, p, n = 0;

	for (p = 0; p < pages; p++) {
		uint64_t rs = slot[p];

		if (c->together) {
			segs[n].local_off = lbase + p * 2 * pgb;
			segs[n].remote_off = rbase + rs * 2 * pgb;
			segs[n++].len = 2 * pgb;
		} else {
			segs[n].local_off = lbase + p * pgb;
			segs[n].remote_off = rbase + rs * pgb;
			segs[n++].len = pgb;
		}
	}
	if (!c->together) {
		/* the V areas: after the K area of the layer, on both sides */
		for (p = 0; p < pages; p++) {
			segs[n].local_off = lbase + tb + p * pgb;
			segs[n].remote_off = rbase + kv_slots_span() / 2 +
					     (uint64_t)slot[p] * pgb;
			segs[n++].len = pgb;
		}
	}
	return n;
}

static uint32_t rnd_state;

static uint32_t rnd(void)
{
	/* xorshift32: a fixed, seeded layout, identical from run to run */
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

/* @n distinct slots out of @range, in random order */
static void pick_slots(unsigned int *slot, unsigned int n, unsigned int range)
{
	unsigned int *all, i, j, t;

	all = malloc(range * sizeof(*all));
	if (!all)
		die("out of memory");
	for (i = 0; i < range; i++)
		all[i] = i;
	for (i = 0; i < n; i++) {
		j = i + rnd() % (range - i);
		t = all[i];
		all[i] = all[j];
		all[j] = t;
		slot[i] = all[i];
	}
	free(all);
}

/* One job per layer, all in flight; returns the seconds to the last one. */
static double kv_push(struct kxfer_job *jobs, unsigned int njobs,
		      uint64_t *bytes)
{
	static struct kxfer_event ev[64];
	unsigned int left = njobs;
	double t0 = now();

	*bytes = 0;
	submit_all(jobs, njobs);
	while (left)
		left -= reap_some(ev, ARRAY_SIZE(ev), 1, 0, bytes);
	return now() - t0;
}

/* page size 1 and 16; contig or scattered; K and V together or apart */
static const struct kv_case cases[] = {
	{ 1, false, true }, { 1, false, false },
	{ 1, true, false }, { 1, true, true },
	{ 16, false, true }, { 16, false, false },
	{ 16, true, false }, { 16, true, true },
};

static char *kv_name(const struct kv_case *c)
{
	char *name;

	if (asprintf(&name, "p%u-%s-%s", c->page,
		     c->scattered ? "scattered" : "contig",
		     c->together ? "kv-together" : "kv-apart") < 0)
		die("out of memory");
	return name;
}

/* Is layout @name among -k's (all without -k)? */
static bool kv_wanted(const char *name)
{
	size_t len = strlen(name);
	const char *p = opt.layouts;

	if (!p)
		return true;
	while ((p = strstr(p, name))) {
		if ((p == opt.layouts || p[-1] == ',') &&
		    (p[len] == ',' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

/* Every layout -k names must exist: a typo is not an empty result. */
static void kv_check_layouts(const struct kv_case *cases, unsigned int n)
{
	char *list, *tok, *save = NULL;
	unsigned int i;

	if (!opt.layouts)
		return;
	list = strdup(opt.layouts);
	if (!list)
		die("out of memory");
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		bool found = !strcmp(tok, "one-big-write");

		for (i = 0; i < n && !found; i++) {
			char *name = kv_name(&cases[i]);

			found = !strcmp(tok, name);
			free(name);
		}
		if (!found)
			usage("kv: no layout %s", tok);
	}
	free(list);
}

static void run_kv(const struct kv_case *c, double big)
{
	unsigned int pages = opt.tokens / c->page, l, reps = 0;
	struct kxfer_segment *segs;
	struct kxfer_job *jobs;
	unsigned int *slot, per_layer = c->together ? pages : 2 * pages;
	uint64_t nsegs = 0, nwrs = 0, bytes = 0, total_bytes = 0;
	double secs = 0, best = 0;
	struct cpu_mark c0;
	struct row *r;
	char *name;

	slot = calloc(pages, sizeof(*slot));
	segs = calloc((size_t)opt.layers * per_layer, sizeof(*segs));
	jobs = calloc(opt.layers, sizeof(*jobs));
	if (!slot || !segs || !jobs)
		die("out of memory");
	if (c->scattered) {
		rnd_state = opt.seed;
		pick_slots(slot, pages, 4 * pages);
	} else {
		for (l = 0; l < pages; l++)
			slot[l] = l;
	}
	for (l = 0; l < opt.layers; l++) {
		struct kxfer_segment *s = segs + (size_t)l * per_layer;
		unsigned int n = kv_build(c, l, slot, s);

		nsegs += n;
		nwrs += plan_wrs(s, n);
		kxfer_job_write(&jobs[l], dev.pool.handle, dev.peer,
				dev.rx.handle, s, n, l);
	}
	/* Repeat for opt.secs, at least 3 times; the fastest counts. */
	c0 = cpu_now();
	do {
		double t = kv_push(jobs, opt.layers, &bytes);

		if (!reps || t < best)
			best = t;
		secs += t;
		total_bytes += bytes;
		reps++;
	} while (reps < 3 || secs < opt.secs);

	r = row_new("kv");
	name = kv_name(c);
	r->variant = name;
	r->op = "write";
	r->size = bytes;
	r->qps = dev.qps;
	r->jobs = reps;
	r->bytes = bytes;
	r->secs = best;
	r->avg_secs = secs / reps;
	row_cpu(r, &c0, reps);
	r->msgs = nsegs;
	r->segs = nsegs;
	r->wrs = nwrs;
	r->ref_secs = big;
	free(slot);
	free(segs);
	free(jobs);
}

static void mode_kv(void)
{
	uint64_t total = 2ULL * opt.layers * opt.tokens * opt.tok_bytes;
	struct kxfer_segment seg = { 0, 0, total };
	unsigned int i, reps = 0;
	double big = 0, secs = 0;
	struct cpu_mark c0;
	struct kxfer_job job;
	struct row *r;
	uint64_t bytes;

	kv_check_layouts(cases, ARRAY_SIZE(cases));
	dev_open();
	if (total > dev.pool.size)
		die("kv: %" PRIu64 " bytes do not fit pool %s", total, opt.pool);
	if (opt.layers * kv_slots_span() > dev.rx.len)
		die("kv: export %s needs %" PRIu64 " bytes", opt.export,
		    opt.layers * kv_slots_span());
	if (opt.tokens % 16)
		usage("kv: tokens must be a multiple of 16");
	if (!kv_wanted("one-big-write"))
		goto layouts;

	/* The reference: the same bytes as one job with one segment. */
	kxfer_job_write(&job, dev.pool.handle, dev.peer, dev.rx.handle,
			&seg, 1, 0);
	c0 = cpu_now();
	do {
		double t = kv_push(&job, 1, &bytes);

		if (!reps || t < big)
			big = t;
		secs += t;
		reps++;
	} while (reps < 3 || secs < opt.secs);
	r = row_new("kv");
	r->variant = "one-big-write";
	r->op = "write";
	r->size = total;
	r->qps = dev.qps;
	r->jobs = reps;
	r->bytes = total;
	r->secs = big;
	r->avg_secs = secs / reps;
	row_cpu(r, &c0, reps);
	r->msgs = 1;
	r->segs = 1;
	r->wrs = plan_wrs(&seg, 1);
	r->ref_secs = big;

layouts:
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *name = kv_name(&cases[i]);

		if (kv_wanted(name))
			run_kv(&cases[i], big);
		free(name);
	}
}

/* ---------------------------------------------------------------------- */
/* push                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * The demo's push (examples/kv-prefill.c, kv-demo.h), as kxfer-bench
 * times it: request of 100 tokens, 8 layers, the K and the V of each of
 * its 7 blocks per layer (the last one partly filled) from prefill's
 * blocks to decode's, 409600 bytes in 112 segments; one WRITE job per
 * layer, one SUBMIT each; the last layer's job, with the notification,
 * once the others have completed (its notification speaks for its own
 * data only); a push ends when the notification is here.  Here the pool
 * is prefill's cache and the export decode's, on a session of this node
 * to itself, so this process subscribes to the export and sees the
 * notification as decode would.  Each push is timed, from the first
 * SUBMIT to the notification; the row has the fastest, the median and
 * the 99th percentile.  examples/kv-nixl.py does the same push through
 * NIXL and its KXFER backend (selftests/bench/kv-nixl-bench.py times it
 * so, for make bench's comparison).
 */
#define PUSH_TOKENS	100
#define PUSH_REQUEST	7
#define PUSH_BLOCKS	((PUSH_TOKENS + BLOCK_TOKENS - 1) / BLOCK_TOKENS)

/* kv-prefill's and kv-decode's allocators: the blocks they pick */
#define PUSH_PREFILL_BUSY	(0x000003ffU | 0xffU << 12)
#define PUSH_DECODE_BUSY	(0x0000000fU | 1U << 8 | 0x3ffU << 10)

static unsigned int push_layer(struct kxfer_segment *segs, unsigned int l,
			       const uint32_t *mine, const uint32_t *theirs)
{
	unsigned int i, kind, n = 0;

	for (kind = 0; kind < 2; kind++)
		for (i = 0; i < PUSH_BLOCKS; i++) {
			segs[n].local_off = kind ? kv_v_off(l, mine[i]) :
						   kv_k_off(l, mine[i]);
			segs[n].remote_off = kind ? kv_v_off(l, theirs[i]) :
						    kv_k_off(l, theirs[i]);
			segs[n].len = kv_block_tokens(PUSH_TOKENS, i) * TOKEN_BYTES;
			n++;
		}
	return n;
}

/* One push; returns its seconds, the notification's bytes in @bytes. */
static double push_once(struct kxfer_job *jobs, uint32_t sub, uint64_t *bytes)
{
	struct kxfer_event ev[16];
	unsigned int l, done = 0;
	bool notified = false;
	double t0 = now();
	int i, n;

	*bytes = 0;
	for (l = 0; l < LAYERS; l++) {
		if (l == LAYERS - 1) {
			/* the notification speaks for its own job's data */
			while (done < LAYERS - 1)
				done += reap_some(ev, ARRAY_SIZE(ev), 1, 0, bytes);
		}
		submit_all(&jobs[l], 1);
	}
	while (done < LAYERS || !notified) {
		do
			n = kxfer_reap(dev.kx, ev, ARRAY_SIZE(ev), 1, -1, 0);
		while (n == -EINTR);
		if (n < 0)
			die("reap: %s", strerror(-n));
		for (i = 0; i < n; i++) {
			if (ev[i].type == KXFER_EV_NOTIFY && ev[i].sub == sub &&
			    ev[i].user_data == PUSH_REQUEST) {
				notified = true;
				continue;
			}
			if (ev[i].type != KXFER_EV_COMPLETION)
				continue;
			if (ev[i].status)
				die("layer %" PRIu64 " failed: %s",
				    (uint64_t)ev[i].user_data,
				    errname(-ev[i].status));
			*bytes += ev[i].bytes;
			done++;
		}
	}
	return now() - t0;
}

static void mode_push(void)
{
	struct kxfer_segment segs[LAYERS][2 * PUSH_BLOCKS];
	struct kxfer_job jobs[LAYERS];
	uint32_t mine[PUSH_BLOCKS], theirs[PUSH_BLOCKS], sub;
	unsigned int l, i, reps = 0, warm = 3, cap = 1024;
	uint64_t nsegs = 0, nwrs = 0, bytes = 0;
	double *us, secs = 0, sum = 0;
	struct cpu_mark c0;
	struct row *r;
	int ret;

	dev_open();
	if (dev.pool.size < KV_BYTES || dev.rx.len < KV_BYTES)
		die("push: pool %s and export %s need %u bytes", opt.pool,
		    opt.export, KV_BYTES);
	ret = kxfer_notify_subscribe(dev.kx, opt.export, &sub);
	if (ret)
		die("push: subscribe to export %s: %s (it must be this node's: a session of the node to itself)",
		    opt.export, strerror(-ret));
	if (kv_alloc_blocks(PUSH_PREFILL_BUSY, PUSH_BLOCKS, mine) ||
	    kv_alloc_blocks(PUSH_DECODE_BUSY, PUSH_BLOCKS, theirs))
		die("push: no blocks");
	for (l = 0; l < LAYERS; l++) {
		unsigned int n = push_layer(segs[l], l, mine, theirs);

		nsegs += n;
		nwrs += plan_wrs(segs[l], n);
		kxfer_job_write(&jobs[l], dev.pool.handle, dev.peer,
				dev.rx.handle, segs[l], n, l);
	}
	jobs[LAYERS - 1].flags = KXFER_JOB_NOTIFY;
	jobs[LAYERS - 1].notify_value = PUSH_REQUEST;

	for (i = 0; i < warm; i++)
		push_once(jobs, sub, &bytes);
	us = malloc(cap * sizeof(*us));
	if (!us)
		die("out of memory");
	c0 = cpu_now();
	do {
		double t = push_once(jobs, sub, &bytes);

		if (bytes != 2ULL * LAYERS * PUSH_TOKENS * TOKEN_BYTES)
			die("push: %" PRIu64 " bytes", bytes);
		if (reps == cap) {
			cap *= 2;
			us = realloc(us, cap * sizeof(*us));
			if (!us)
				die("out of memory");
		}
		us[reps++] = t * 1e6;
		secs += t;
	} while (reps < 3 || reps < opt.push_min || secs < opt.secs);

	r = row_new("push");
	r->variant = "kxfer";
	r->op = "write";
	r->size = bytes;
	r->qps = dev.qps;
	r->jobs = reps;
	r->bytes = bytes;
	r->secs = secs;
	row_cpu(r, &c0, 1);
	r->segs = nsegs;
	r->wrs = nwrs;
	r->msgs = (uint64_t)reps * LAYERS;
	for (i = 0; i < reps; i++)
		sum += us[i];
	r->avg_us = sum / reps;
	qsort(us, reps, sizeof(*us), cmp_double);
	r->min_us = us[0];
	r->p50_us = us[reps / 2];
	r->p99_us = us[(reps * 99) / 100];
	free(us);
	kxfer_notify_unsubscribe(dev.kx, sub);
}

/* ---------------------------------------------------------------------- */
/* plan                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * One job of opt.plan_segs scattered 256-byte segments: local offsets in
 * order, remote offsets a random permutation of slots (nothing merges;
 * in the job's order a few neighbours gather, in remote order all do),
 * planned again and again for opt.secs, in the module's two passes:
 * "count" orders the segments (kxfer_plan_order(), a WRITE) and counts
 * the plan, "build" builds it from the ordered segments.
 */
static void mode_plan(void)
{
	unsigned int n = opt.plan_segs, i, *slot;
	struct kxfer_plan_seg *segs;
	struct kxfer_plan_wr *wrs;
	struct kxfer_plan_sge *sges;
	struct kxfer_plan_scratch *sc;
	const struct kxfer_plan_seg *order = NULL;
	static const char *const steps[] = { "count", "build" };
	unsigned int step;
	bool overlap;

	segs = calloc(n, sizeof(*segs));
	slot = calloc(n, sizeof(*slot));
	wrs = calloc(n, sizeof(*wrs));
	sges = calloc(n, sizeof(*sges));
	sc = plan_scratch(n);
	if (!segs || !slot || !wrs || !sges)
		die("out of memory");
	rnd_state = opt.seed;
	pick_slots(slot, n, n);
	for (i = 0; i < n; i++) {
		segs[i].local_off = (uint64_t)i * 256;
		segs[i].remote_off = (uint64_t)slot[i] * 256;
		segs[i].len = 256;
	}
	for (step = 0; step < ARRAY_SIZE(steps); step++) {
		struct cpu_mark c0 = cpu_now();
		double t0 = now(), t;
		uint64_t reps = 0, nwr = 0;
		struct kxfer_plan p;
		struct row *r;
		int ret;

		do {
			plan_init(&p);
			if (step) {
				p.wrs = wrs;
				p.wr_cap = n;
				p.sges = sges;
				p.sge_cap = n;
				ret = kxfer_plan_build(&p, order, n);
			} else {
				order = kxfer_plan_order(segs, n, false, sc,
							 &overlap);
				ret = kxfer_plan_count(&p, order, n);
			}
			if (ret)
				die("planner: %s", strerror(-ret));
			nwr = p.nwr;
			reps++;
			t = now() - t0;
		} while (reps < 2 || t < opt.secs);
		r = row_new("plan");
		r->variant = steps[step];
		r->secs = t;
		row_cpu(r, &c0, 1);
		r->jobs = reps;
		r->segs = n;
		r->wrs = nwr;
	}
	free(segs);
	free(slot);
	free(wrs);
	free(sges);
	free(sc);
}

/* ---------------------------------------------------------------------- */

/* One command-line option; @sizes takes -s until the mode is known. */
static void parse_opt(int c, char **sizes)
{
	static const char *const op_words[] = { "write", "read", NULL };
	static const char *const reap_words[] = { "block", "poll", NULL };

	switch (c) {
	case 'h':
		usage(NULL);
		break;
	case 'j':
		opt.json = true;
		break;
	case 'p':
		opt.peer = optarg;
		break;
	case 'P':
		opt.pool = optarg;
		break;
	case 'e':
		opt.export = optarg;
		break;
	case 't':
		opt.secs = strtod(optarg, NULL);
		if (!(opt.secs > 0 && opt.secs < 3600))
			usage("bad seconds: %s", optarg);
		break;
	case 'o':
		opt.ops = parse_words(optarg, op_words, "op");
		break;
	case 's':
		*sizes = optarg;
		break;
	case 'q':
		opt.qd = parse_uint(optarg, MAX_QD);
		break;
	case 'b':
		opt.batch = parse_uint(optarg, MAX_QD);
		break;
	case 'w':
		opt.reap_min = parse_uint(optarg, MAX_QD);
		break;
	case 'k':
		opt.layouts = optarg;
		break;
	case 'n':
		opt.iters = parse_uint(optarg, 1U << 24);
		opt.plan_segs = opt.iters;
		opt.push_min = opt.iters;
		break;
	case 'm':
		opt.reaps = parse_words(optarg, reap_words, "reap mode");
		break;
	case 'L':
		opt.layers = parse_uint(optarg, 1024);
		break;
	case 'T':
		opt.tokens = parse_uint(optarg, 1U << 20);
		break;
	case 'B':
		opt.tok_bytes = parse_uint(optarg, 1U << 20);
		break;
	case 'G':
		opt.max_sge = parse_uint(optarg, 1024);
		break;
	case 'S':
		opt.stripe = parse_size(optarg);
		break;
	case 'C':
		opt.chunk = parse_size(optarg);
		break;
	case 'M':
		opt.mr = parse_size(optarg);
		break;
	case 'r':
		opt.seed = parse_uint(optarg, UINT32_MAX);
		if (!opt.seed)
			usage("the seed must not be 0");
		break;
	default:
		usage(NULL);
	}
}

/* The message sizes: -s's, or the mode's default. */
static void set_sizes(const char *mode, char *sizes)
{
	if (sizes) {
		parse_sizes(sizes);
	} else if (!strcmp(mode, "bw")) {
		static const uint64_t def[] = { 4 * KIB, 64 * KIB, MIB, 4 * MIB };

		memcpy(opt.sizes, def, sizeof(def));
		opt.nsizes = ARRAY_SIZE(def);
	} else {
		opt.sizes[0] = !strcmp(mode, "rate") ? 4 * KIB : 8;
		opt.nsizes = 1;
	}
}

/* Run the mode named on the command line. */
static void run_mode(const char *mode)
{
	if (!strcmp(mode, "bw") || !strcmp(mode, "rate"))
		mode_stream(mode);
	else if (!strcmp(mode, "lat"))
		mode_lat();
	else if (!strcmp(mode, "kv"))
		mode_kv();
	else if (!strcmp(mode, "push"))
		mode_push();
	else if (!strcmp(mode, "plan"))
		mode_plan();
	else
		usage("unknown mode: %s", mode);
}

int main(int argc, char **argv)
{
	const char *mode;
	char *sizes = NULL;
	int c;

	opt.ops = 1;
	opt.reaps = 3;
	while ((c = getopt(argc, argv, "hjp:P:e:t:o:s:q:b:w:n:m:L:T:B:G:S:C:M:r:k:")) != -1)
		parse_opt(c, &sizes);
	if (optind != argc - 1)
		usage("one mode expected");
	mode = argv[optind];
	set_sizes(mode, sizes);
	if (!opt.qd || !opt.batch || !opt.iters)
		usage("-q, -b and -n must be at least 1");

	run_mode(mode);
	print_rows();
	if (dev.kx) {
		kxfer_pool_detach(dev.kx, &dev.pool);
		kxfer_close(dev.kx);
	}
	return 0;
}
