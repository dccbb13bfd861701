// SPDX-License-Identifier: GPL-2.0-only
/*
 * xfer: kxfer data-plane tool for the guest suites, built on libkxfer.
 *
 *   xfer fill POOL OFF LEN PATTERN     write PATTERN into a pool range
 *   xfer check POOL OFF LEN PATTERN    verify a pool range against PATTERN
 *   xfer dump POOL OFF LEN             print a pool range as characters
 *   xfer job ...                       submit one job, reap its completion
 *   xfer random ...                    verified random WRITE stream
 *   xfer refuse ...                    every invalid job of DESIGN §4.1
 *   xfer fence ...                     FENCE orders a READ after WRITEs
 *   xfer regs ...                      N pools of this process's memory,
 *                                      each exported: their cost, and
 *                                      the bytes peers wrote into them
 *
 * (xfer help prints the full syntax.)  Exit status: 0 success, 1 failure
 * with a one-line reason on stderr naming the errno symbolically
 * ("xfer: job refused: EACCES"), 2 usage error.
 *
 * PATTERN is byte:0xNN (every byte NN), char:X (every byte the character
 * X) or seed:N: a pseudo-random stream whose byte at pool offset o is a
 * function of (N, o) alone, so that any sub-range of a filled range
 * checks on its own, and a range copied elsewhere by a job can be
 * predicted from the offsets it was copied from.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#include "kxfer.h"

#define USER_DATA	42

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

/* ---------------------------------------------------------------------- */
/* Errors, usage                                                           */
/* ---------------------------------------------------------------------- */

/* "EACCES" for 13 or -13, "0" for 0, "E<n>" for what has no name. */
static const char *errname(int err)
{
	static char buf[16];
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

/* An errno by name (EACCES) or number (13, E13): its positive value. */
static bool errparse(const char *s, int *err)
{
	/* other names of errnos, accepted but never printed */
	static const struct {
		const char *name;
		int num;
	} aliases[] = {
		{ "EWOULDBLOCK", EWOULDBLOCK }, { "ENOTSUP", ENOTSUP },
		{ "EDEADLOCK", EDEADLOCK },
	};
	unsigned long v;
	char *end;
	size_t i;
	int n;

	for (n = 1; n <= 4095; n++) {
		const char *name = strerrorname_np(n);

		if (name && !strcmp(s, name)) {
			*err = n;
			return true;
		}
	}
	for (i = 0; i < ARRAY_SIZE(aliases); i++) {
		if (!strcmp(s, aliases[i].name)) {
			*err = aliases[i].num;
			return true;
		}
	}
	if (s[0] == 'E')
		s++;
	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > 4095)
		return false;
	*err = (int)v;
	return true;
}

static const char usage_text[] =
"usage: xfer fill POOL OFF LEN PATTERN\n"
"       xfer check POOL OFF LEN PATTERN\n"
"       xfer dump POOL OFF LEN\n"
"       xfer job [-t SECONDS] [-e ERRNAME | -x ERRNAME] [-N VALUE] [-F] [-T]\n"
"                [-c COMPARE_ADD] [-s SWAP] [-o OLD]\n"
"                PEER EXPORT POOL write|read|cas|fadd LOFF:ROFF:LEN...\n"
"       xfer fence [-n ROUNDS] [-j JOBS] [-l LEN] PEER EXPORT POOL\n"
"       xfer random PEER EXPORT POOL -s SEED -n JOBS [-m MAXSEGS]\n"
"                [-l MAXLEN] [-b BATCH] [-t SECONDS] [-q] [-O]\n"
"       xfer refuse [-w EXPORT_WO] [-r EXPORT_RO] [-m EXPORT_MR]\n"
"                [-t SECONDS] PEER EXPORT POOL\n"
"       xfer notify-wait [-n COUNT] [-t SECONDS] EXPORT\n"
"       xfer notify-send [-n JOBS] [-l LEN] [-k SEGS] [-w WINDOW] [-r RAIL]\n"
"                        PEER EXPORT POOL\n"
"       xfer notify-recv [-o EXPORT_OFF] [-n JOBS] [-l LEN] POOL EXPORT\n"
"       xfer regs [-n POOLS] [-l LEN] [-w FILE -s SEED] [-t SECONDS] PREFIX\n"
"\n"
"PATTERN   byte:0xNN | char:X | seed:N\n"
"numbers   decimal, or hex with 0x; K, M, G suffixes (powers of 1024)\n"
"-t        seconds to wait for a completion (default 30; 0: for ever),\n"
"          times KXFER_SLOW (an integer, default 1) from the environment\n"
"-e        job: expect this completion status or SUBMIT refusal\n"
"-x        job: expect this SUBMIT refusal (struct kxfer_submit.error)\n"
"-F        job: with KXFER_JOB_FENCE\n"
"-T        job: print the time from submit to completion\n"
"-c, -s    job: the operands of cas and fadd (compare_add, swap)\n"
"-o        job: a cas or fadd must return this old value (8 bytes at\n"
"          LOFF, printed as \"old 0x...\" either way)\n"
"-O        random: segments of one job may overlap (applied in order)\n"
"-w, -r    refuse: a write-only (read-only) export of PEER, for the\n"
"          READ (WRITE) access check\n"
"-m        refuse: a writable export of PEER with a memory region\n"
"          boundary 2 MiB from its start (mapped with 4 KiB pages), for\n"
"          the 65536 work requests check (default: EXPORT)\n"
"regs      POOLS pools (default 256) of LEN bytes (default 64K) of its own\n"
"          memory, PREFIX-pNNNN, each exported whole as PREFIXNNNN: the time\n"
"          of each POOL_USER and EXPORT_ADD and the kernel memory a pool\n"
"          takes; with -w, prints \"ready\", waits for FILE, then checks\n"
"          that pool k holds xfer's seed:SEED pattern at offsets k x LEN on\n"
"          (what peersim -F SEED -E PREFIX writes)\n"
"PEER      a session's name, or @ADDR, @ADDR:PORT, @[ADDR]:PORT: a session\n"
"          on demand to that address (kxfer_connect(), kxferctl connect)\n"
"exit      0 success, 1 failure (reason on stderr), 2 usage\n";

static _Noreturn __printf(1, 2) void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("xfer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static _Noreturn __printf(1, 2) void usage(const char *fmt, ...)
{
	va_list ap;

	fputs("xfer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	fputs(usage_text, stderr);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory: ENOMEM");
	return p;
}

/* ---------------------------------------------------------------------- */
/* Arguments                                                               */
/* ---------------------------------------------------------------------- */

/* Decimal or 0x hex, optional K/M/G suffix; no sign, no overflow. */
static bool parse_u64(const char *s, uint64_t *v)
{
	unsigned long long n;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!isxdigit((unsigned char)s[2]))
			return false;
		n = strtoull(s + 2, &end, 16);
	} else {
		n = strtoull(s, &end, 10);
	}
	if (errno || end == s)
		return false;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		return false;
	}
	if (*end && end[1])
		return false;
	if (shift && n > (UINT64_MAX >> shift))
		return false;
	*v = (uint64_t)n << shift;
	return true;
}

static uint64_t arg_u64(const char *what, const char *s)
{
	uint64_t v;

	if (!parse_u64(s, &v))
		usage("bad %s: %s", what, s);
	return v;
}

static unsigned int arg_uint(const char *what, const char *s,
			     unsigned int min)
{
	uint64_t v = arg_u64(what, s);

	if (v < min || v > UINT32_MAX)
		usage("bad %s: %s", what, s);
	return (unsigned int)v;
}

/* -t SECONDS as a REAP timeout: < 0 waits for ever. */
static int64_t arg_timeout(const char *s)
{
	char *end;
	double t;

	errno = 0;
	t = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(t) || t < 0 || t > 1e9)
		usage("bad timeout: %s", s);
	return t == 0 ? -1 : (int64_t)(t * 1e9);
}

static int arg_err(const char *s)
{
	int err;

	if (!errparse(s, &err))
		usage("bad errno name: %s", s);
	return err;
}

/* ---------------------------------------------------------------------- */
/* Patterns                                                                */
/* ---------------------------------------------------------------------- */

enum { PAT_BYTE, PAT_SEED };

struct pattern {
	int kind;
	uint8_t byte;
	uint64_t key;		/* PAT_SEED: derived from the seed */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void pattern_seed(struct pattern *p, uint64_t seed)
{
	p->kind = PAT_SEED;
	p->key = mix64(seed ^ 0x6b78666572ULL);
}

/* The 8 pattern bytes of the pool's 8-byte word number w. */
static uint64_t seed_word(const struct pattern *p, uint64_t w)
{
	return mix64(p->key + w * 0x9e3779b97f4a7c15ULL);
}

static uint8_t pattern_at(const struct pattern *p, uint64_t off)
{
	if (p->kind == PAT_BYTE)
		return p->byte;
	return (uint8_t)(seed_word(p, off >> 3) >> ((off & 7) * 8));
}

/* buf holds the pattern's bytes for pool offsets [off, off + len). */
static void pattern_fill(const struct pattern *p, uint8_t *buf, uint64_t off,
			 uint64_t len)
{
	uint64_t h;
	int k;

	if (p->kind == PAT_BYTE) {
		memset(buf, p->byte, len);
		return;
	}
	for (; len && (off & 7); off++, len--)
		*buf++ = pattern_at(p, off);
	for (; len >= 8; off += 8, len -= 8) {
		h = seed_word(p, off >> 3);
		for (k = 0; k < 8; k++)
			*buf++ = (uint8_t)(h >> (k * 8));
	}
	for (; len; off++, len--)
		*buf++ = pattern_at(p, off);
}

/* Bytes of buf (pool offsets [off, off + len)) that differ; first one. */
static uint64_t pattern_diff(const struct pattern *p, const uint8_t *buf,
			     uint64_t off, uint64_t len, uint64_t *first)
{
	uint64_t i, o, h = 0, bad = 0;

	for (i = 0; i < len; i++) {
		o = off + i;
		if (p->kind == PAT_SEED && (!i || !(o & 7)))
			h = seed_word(p, o >> 3);
		if (buf[i] != (p->kind == PAT_BYTE ? p->byte :
			       (uint8_t)(h >> ((o & 7) * 8)))) {
			if (!bad++)
				*first = o;
		}
	}
	return bad;
}

static void arg_pattern(const char *s, struct pattern *p)
{
	uint64_t v;

	memset(p, 0, sizeof(*p));
	if (!strncmp(s, "byte:", 5)) {
		if (!parse_u64(s + 5, &v) || v > 0xff)
			usage("bad pattern: %s", s);
		p->kind = PAT_BYTE;
		p->byte = (uint8_t)v;
	} else if (!strncmp(s, "char:", 5)) {
		if (!s[5] || s[6])
			usage("bad pattern: %s (char:X takes one character)",
			      s);
		p->kind = PAT_BYTE;
		p->byte = (uint8_t)s[5];
	} else if (!strncmp(s, "seed:", 5)) {
		if (!parse_u64(s + 5, &v))
			usage("bad pattern: %s", s);
		pattern_seed(p, v);
	} else {
		usage("bad pattern: %s", s);
	}
}

/* ---------------------------------------------------------------------- */
/* Device, pool, peer                                                      */
/* ---------------------------------------------------------------------- */

struct ctx {
	struct kxfer *kx;
	const struct kxfer_query *q;
	const char *pool_name;
	struct kxfer_pool_map pool;
	const char *peer_name;
	uint32_t peer;
	uint32_t peer_state;
	const char *export;
	struct kxfer_remote_lookup rx;
	int64_t timeout_ns;
};

static void ctx_open(struct ctx *c, const char *pool)
{
	int ret;

	ret = kxfer_open(&c->kx);
	if (ret)
		die("open /dev/%s: %s", KXFER_DEVICE_NAME, errname(ret));
	c->q = kxfer_limits(c->kx);
	c->pool_name = pool;
	ret = kxfer_pool_attach(c->kx, pool, &c->pool);
	if (ret)
		die("attach pool %s: %s", pool, errname(ret));
}

static void ctx_remote(struct ctx *c, const char *export,
		       struct kxfer_remote_lookup *rx)
{
	int ret = kxfer_remote_lookup(c->kx, c->peer, export, rx);

	if (ret)
		die("export %s of peer %s: %s", export, c->peer_name,
		    errname(ret));
}

static int64_t now_ns(void);

/*
 * PEER "@ADDR", "@ADDR:PORT" (IPv4) or "@[ADDR]:PORT": a session on
 * demand (kxfer_connect()), whose exports are waited for up to 30 s (it
 * need not be up yet).
 */
static void ctx_connect(struct ctx *c, const char *peer, const char *export)
{
	char addr[INET6_ADDRSTRLEN + 2], *colon;
	struct kxfer_connect kc;
	unsigned long port = 0;
	int64_t end;
	int ret;

	snprintf(addr, sizeof(addr), "%s", peer + 1);
	colon = strrchr(addr, ':');
	if (addr[0] == '[') {
		if (!colon || colon[-1] != ']')
			usage("bad peer: %s (@[ADDR]:PORT)", peer);
		colon[-1] = '\0';
		memmove(addr, addr + 1, strlen(addr));
		port = arg_u64("port", colon + 1);
	} else if (colon && colon == strchr(addr, ':')) {
		*colon = '\0';
		port = arg_u64("port", colon + 1);
	}
	if (port > 65535)
		usage("bad port in %s", peer);
	ret = kxfer_connect(c->kx, addr, port, &kc);
	if (ret)
		die("peer %s: %s", peer, errname(ret));
	c->peer = kc.handle;
	c->peer_state = kc.state;
	fprintf(stderr, "xfer: session %.*s for %s\n", (int)sizeof(kc.name),
		kc.name, peer);
	c->export = export;
	end = now_ns() + 30 * 1000000000LL;
	while ((ret = kxfer_remote_lookup(c->kx, c->peer, export, &c->rx)) ==
	       -ENOENT && now_ns() < end)
		usleep(20000);
	if (ret)
		die("export %s of peer %s: %s", export, peer, errname(ret));
}

static void ctx_peer(struct ctx *c, const char *peer, const char *export)
{
	int ret;

	c->peer_name = peer;
	if (peer[0] == '@') {
		ctx_connect(c, peer, export);
		return;
	}
	ret = kxfer_peer_lookup(c->kx, peer, &c->peer, &c->peer_state);
	if (ret)
		die("peer %s: %s", peer, errname(ret));
	c->export = export;
	ctx_remote(c, export, &c->rx);
}

/* Unmap, detach, close: a failure there is a failure of the command. */
static void ctx_close(struct ctx *c)
{
	int ret = kxfer_pool_detach(c->kx, &c->pool);

	if (ret)
		die("detach pool %s: %s", c->pool_name, errname(ret));
	kxfer_close(c->kx);
	c->kx = NULL;
}

/* [off, off + len) inside the pool, overflow-safe. */
static void ctx_range(struct ctx *c, uint64_t off, uint64_t len)
{
	if (off > c->pool.size || len > c->pool.size - off)
		die("range %" PRIu64 "+%" PRIu64 " beyond pool %s of %" PRIu64
		    " bytes: ERANGE", off, len, c->pool_name, c->pool.size);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The factor of every completion wait: KXFER_SLOW, as the test rig's
 * lib.sh takes it (an integer, default 1), for a kernel that much slower.
 */
static int64_t slow_factor(void)
{
	static int64_t factor;

	if (!factor) {
		const char *s = getenv("KXFER_SLOW");
		long v = s ? atol(s) : 1;

		factor = v > 1 && v <= 100 ? v : 1;
	}
	return factor;
}

/*
 * kxfer_reap() for at least min events within timeout_ns (< 0: no
 * limit) times KXFER_SLOW, restarted after signals.  Count, or negative
 * errno.
 */
static int reap_wait(struct kxfer *kx, struct kxfer_event *ev,
		     unsigned int max, unsigned int min, int64_t timeout_ns)
{
	int64_t deadline;
	int n;

	if (timeout_ns > 0)
		timeout_ns *= slow_factor();
	deadline = timeout_ns < 0 ? 0 : now_ns() + timeout_ns;

	for (;;) {
		n = kxfer_reap(kx, ev, max, min, timeout_ns, 0);
		if (n != -EINTR)
			return n;
		if (timeout_ns > 0) {
			timeout_ns = deadline - now_ns();
			if (timeout_ns <= 0)
				timeout_ns = 0;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* fill, check, dump                                                       */
/* ---------------------------------------------------------------------- */

static int cmd_range(int argc, char **argv, const char *cmd)
{
	bool dump = !strcmp(cmd, "dump");
	struct pattern p;
	uint64_t off, len, i, bad, first = 0;
	const uint8_t *b;
	struct ctx c = { 0 };

	if (argc != (dump ? 4 : 5))
		usage("%s: wrong number of arguments", cmd);
	off = arg_u64("offset", argv[2]);
	len = arg_u64("length", argv[3]);
	if (!dump)
		arg_pattern(argv[4], &p);

	ctx_open(&c, argv[1]);
	ctx_range(&c, off, len);
	b = (uint8_t *)c.pool.base + off;

	if (!strcmp(cmd, "fill")) {
		pattern_fill(&p, (uint8_t *)c.pool.base + off, off, len);
	} else if (!strcmp(cmd, "check")) {
		bad = pattern_diff(&p, b, off, len, &first);
		if (bad)
			die("pool %s: %" PRIu64 " of %" PRIu64 " bytes differ, first at offset %" PRIu64 " (0x%02x, expected 0x%02x)",
			    c.pool_name, bad, len, first, b[first - off],
			    pattern_at(&p, first));
	} else {
		for (i = 0; i < len; i++)
			putchar(!b[i] ? '.' : isprint(b[i]) ? b[i] : '?');
		putchar('\n');
	}
	ctx_close(&c);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* job                                                                     */
/* ---------------------------------------------------------------------- */

static uint32_t arg_op(const char *s)
{
	if (!strcmp(s, "write"))
		return KXFER_OP_WRITE;
	if (!strcmp(s, "read"))
		return KXFER_OP_READ;
	if (!strcmp(s, "cas"))
		return KXFER_OP_CAS;
	if (!strcmp(s, "fadd"))
		return KXFER_OP_FADD;
	usage("bad op: %s (write, read, cas or fadd)", s);
}

/* LOFF:ROFF:LEN */
static void arg_seg(const char *s, struct kxfer_segment *seg)
{
	char buf[96], *f[3];
	uint64_t v[3];
	int i;

	if (strlen(s) >= sizeof(buf))
		usage("bad segment: %s", s);
	strcpy(buf, s);
	f[0] = buf;
	for (i = 1; i < 3; i++) {
		f[i] = strchr(f[i - 1], ':');
		if (!f[i])
			usage("bad segment: %s (LOFF:ROFF:LEN)", s);
		*f[i]++ = '\0';
	}
	for (i = 0; i < 3; i++)
		if (!parse_u64(f[i], &v[i]))
			usage("bad segment: %s (LOFF:ROFF:LEN)", s);
	seg->local_off = v[0];
	seg->remote_off = v[1];
	seg->len = v[2];
}

static int cmd_job(int argc, char **argv)
{
	int opt, ret, expect = 0, expect_refusal = 0, n;
	struct kxfer_segment *segs;
	struct kxfer_event ev[2];
	struct kxfer_job job;
	struct ctx c = { .timeout_ns = 30000000000LL };
	unsigned int nsegs, i, accepted;
	uint64_t total = 0, notify = 0, cmp = 0, swap = 0, old = 0, got;
	bool notifying = false, fence = false, check_old = false, timed = false;
	int64_t t0;
	uint32_t op;

	opterr = 0;
	while ((opt = getopt(argc, argv, "t:e:x:N:Fc:s:o:T")) != -1) {
		switch (opt) {
		case 'T':
			timed = true;
			break;
		case 'F':
			fence = true;
			break;
		case 'c':
			cmp = arg_u64("compare_add", optarg);
			break;
		case 's':
			swap = arg_u64("swap", optarg);
			break;
		case 'o':
			old = arg_u64("old value", optarg);
			check_old = true;
			break;
		case 'N':
			if (!parse_u64(optarg, &notify))
				usage("job: bad notify value %s", optarg);
			notifying = true;
			break;
		case 't':
			c.timeout_ns = arg_timeout(optarg);
			break;
		case 'e':
			expect = arg_err(optarg);
			break;
		case 'x':
			expect_refusal = arg_err(optarg);
			break;
		default:
			usage("job: unknown option -%c", optopt);
		}
	}
	if (expect && expect_refusal)
		usage("job: -e and -x exclude each other");
	argc -= optind;
	argv += optind;
	if (argc < 5)
		usage("job: PEER EXPORT POOL OP SEG... expected");
	op = arg_op(argv[3]);
	nsegs = argc - 4;
	segs = xcalloc(nsegs, sizeof(*segs));
	for (i = 0; i < nsegs; i++) {
		arg_seg(argv[4 + i], &segs[i]);
		total += segs[i].len;
	}

	ctx_open(&c, argv[2]);
	ctx_peer(&c, argv[0], argv[1]);
	kxfer_job_init(&job, op, c.pool.handle, c.peer, c.rx.handle, segs,
		       nsegs, USER_DATA);
	if (notifying) {
		job.flags |= KXFER_JOB_NOTIFY;
		job.notify_value = notify;
	}
	if (fence)
		job.flags |= KXFER_JOB_FENCE;
	job.compare_add = cmp;
	job.swap = swap;

	t0 = now_ns();
	ret = kxfer_submit(c.kx, &job, 1, &accepted);
	if (ret) {
		printf("refused %s\n", errname(ret));
		if (expect_refusal ? -ret == expect_refusal : -ret == expect)
			return 0;
		if (expect || expect_refusal)
			die("job refused: %s, expected %s", errname(ret),
			    errname(expect ? expect : expect_refusal));
		die("job refused: %s", errname(ret));
	}

	n = reap_wait(c.kx, ev, 1, 1, c.timeout_ns);
	if (n < 0)
		die("reap: %s", errname(n));
	if (!n)
		die("no completion within the timeout: ETIMEDOUT");
	if (ev[0].type != KXFER_EV_COMPLETION)
		die("event type %u, expected a completion (%u)", ev[0].type,
		    KXFER_EV_COMPLETION);
	if (ev[0].user_data != USER_DATA)
		die("completion user_data %" PRIu64 ", expected %d",
		    (uint64_t)ev[0].user_data, USER_DATA);
	if (timed)
		printf("time %" PRId64 " us\n", (now_ns() - t0) / 1000);
	printf("status %s bytes %" PRIu64 " wc_status %u\n",
	       errname(ev[0].status), (uint64_t)ev[0].bytes, ev[0].wc_status);

	/* Exactly one completion per job. */
	n = kxfer_reap(c.kx, ev, 2, 0, 0, 0);
	if (n < 0)
		die("reap: %s", errname(n));
	if (n)
		die("%d more event(s) after the job's completion", n);

	if (expect_refusal)
		die("job accepted (status %s), expected refusal %s",
		    errname(ev[0].status), errname(expect_refusal));
	if (ev[0].status != -expect)
		die("job status %s, expected %s", errname(ev[0].status),
		    errname(expect));
	if (!ev[0].status && ev[0].bytes != total)
		die("completion bytes %" PRIu64 ", expected %" PRIu64,
		    (uint64_t)ev[0].bytes, total);
	if (op == KXFER_OP_CAS || op == KXFER_OP_FADD) {
		/* The remote's old value, little-endian, at LOFF. */
		ctx_range(&c, segs[0].local_off, 8);
		memcpy(&got, (char *)c.pool.base + segs[0].local_off, 8);
		got = le64toh(got);
		printf("old 0x%" PRIx64 "\n", got);
		if (check_old && got != old)
			die("old value 0x%" PRIx64 ", expected 0x%" PRIx64, got,
			    old);
	}

	ctx_close(&c);
	free(segs);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* fence: a FENCE READ sees every earlier WRITE                            */
/* ---------------------------------------------------------------------- */

/*
 * fence PEER EXPORT POOL [-n ROUNDS] [-j JOBS] [-l LEN]: each round r
 * fills the pool's [0, LEN) with seed r, then submits in one call JOBS
 * WRITE jobs covering the export's [0, LEN) (each in 16 reversed pieces,
 * so that they stripe over every QP) and a FENCE READ of the export's
 * [0, LEN) into the pool's [LEN, 2 * LEN).  The READ's completion must
 * come last, and what it read must be seed r.  Without the fence the
 * READ may run on one QP while WRITEs of another have not landed.
 */
static int cmd_fence(int argc, char **argv)
{
	struct ctx c = { .timeout_ns = 30000000000LL };
	uint64_t rounds = 20, njobs = 4, len = 1 << 20, r, j, first;
	struct kxfer_segment *segs;
	struct kxfer_event *ev;
	struct kxfer_job *jobs;
	struct pattern pat;
	unsigned int accepted, got, i, k;
	int opt, n, ret;

	opterr = 0;
	while ((opt = getopt(argc, argv, "n:j:l:")) != -1) {
		switch (opt) {
		case 'n':
			rounds = arg_uint("rounds", optarg, 1);
			break;
		case 'j':
			njobs = arg_uint("jobs", optarg, 1);
			if (njobs > 64)
				usage("fence: at most 64 jobs");
			break;
		case 'l':
			len = arg_u64("length", optarg);
			break;
		default:
			usage("fence: unknown option -%c", optopt);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 3)
		usage("fence: PEER EXPORT POOL expected");
	if (!len || len % (njobs * 16))
		usage("fence: LEN must be a multiple of 16 * JOBS");
	ctx_open(&c, argv[2]);
	ctx_peer(&c, argv[0], argv[1]);
	ctx_range(&c, 0, 2 * len);
	if (c.rx.len < len)
		die("export %s is shorter than %" PRIu64, argv[1], len);

	segs = xcalloc(njobs * 16 + 1, sizeof(*segs));
	jobs = xcalloc(njobs + 1, sizeof(*jobs));
	ev = xcalloc(njobs + 1, sizeof(*ev));
	for (r = 0; r < rounds; r++) {
		uint64_t piece = len / njobs / 16;

		pattern_seed(&pat, r + 1);
		pattern_fill(&pat, c.pool.base, 0, len);
		memset((char *)c.pool.base + len, 0, len);
		for (j = 0; j < njobs; j++) {
			struct kxfer_segment *js = &segs[j * 16];

			for (k = 0; k < 16; k++) {
				uint64_t off = (j * 16 + 15 - k) * piece;

				js[k].local_off = off;
				js[k].remote_off = off;
				js[k].len = piece;
			}
			kxfer_job_write(&jobs[j], c.pool.handle, c.peer,
					c.rx.handle, js, 16, j);
		}
		segs[njobs * 16].local_off = len;
		segs[njobs * 16].remote_off = 0;
		segs[njobs * 16].len = len;
		kxfer_job_read(&jobs[njobs], c.pool.handle, c.peer, c.rx.handle,
			       &segs[njobs * 16], 1, njobs);
		jobs[njobs].flags = KXFER_JOB_FENCE;

		ret = kxfer_submit(c.kx, jobs, njobs + 1, &accepted);
		if (ret || accepted != njobs + 1)
			die("round %" PRIu64 ": submit: %s, %u accepted", r,
			    errname(ret), accepted);
		for (got = 0; got < njobs + 1; got += n) {
			n = reap_wait(c.kx, ev + got, njobs + 1 - got, 1,
				      c.timeout_ns);
			if (n < 0)
				die("reap: %s", errname(n));
			if (!n)
				die("round %" PRIu64 ": %u of %" PRIu64
				    " completions: ETIMEDOUT", r, got, njobs + 1);
		}
		for (i = 0; i <= njobs; i++)
			if (ev[i].type != KXFER_EV_COMPLETION || ev[i].status)
				die("round %" PRIu64 ": job %" PRIu64
				    " ended with %s", r,
				    (uint64_t)ev[i].user_data,
				    errname(ev[i].status));
		if (ev[njobs].user_data != njobs)
			die("round %" PRIu64 ": the FENCE READ completed before job %" PRIu64,
			    r, (uint64_t)ev[njobs].user_data);
		if (pattern_diff(&pat, (uint8_t *)c.pool.base + len, 0, len,
				 &first))
			die("round %" PRIu64 ": the FENCE READ missed written data at %" PRIu64,
			    r, first);
	}
	printf("%" PRIu64 " rounds of %" PRIu64 " WRITEs and a FENCE READ: ordered\n",
	       rounds, njobs);
	free(ev);
	free(jobs);
	free(segs);
	ctx_close(&c);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* random: a verified random WRITE stream                                  */
/* ---------------------------------------------------------------------- */

/*
 * The engine keeps up to nslots jobs between generation and completion.
 * A job's segments live in its slot until it completes; its user_data
 * is (sequence number << SLOT_BITS) | slot, checked on completion.
 *
 * Jobs whose remote ranges overlap must not be in flight together:
 * across QPs the engine does not order them, and the expected image
 * assumes job order.  busy[] counts, per BUSY_SHIFT-sized block of the
 * export, the segments of generated but uncompleted jobs touching it;
 * a job touching a busy block waits (its batch is submitted, then
 * completions are reaped) until none is.
 */
#define SLOT_BITS	24
#define BUSY_SHIFT	6
#define PIECE		(1ULL << 20)	/* baseline and read-back jobs */
#define SEG_MEM		(64UL << 20)	/* segment storage of the slots */

struct slot {
	uint64_t seq;		/* 0: free */
	uint64_t bytes;
	unsigned int nsegs;
};

struct engine {
	struct ctx *c;
	uint32_t op;
	unsigned int maxsegs;
	unsigned int nslots;
	struct slot *slots;
	struct kxfer_segment *segstore;
	unsigned int *freelist;
	unsigned int nfree;
	struct kxfer_job *batch;
	unsigned int nbatch;
	unsigned int batchmax;
	uint32_t *busy;
	unsigned int inflight;
	uint64_t seq;
	struct kxfer_event *ev;
	unsigned int evmax;
	/* totals of the current phase */
	uint64_t jobs, segs, bytes, eagain, waits;
};

static struct kxfer_segment *eng_segs(struct engine *e, unsigned int slot)
{
	return e->segstore + (size_t)slot * e->maxsegs;
}

static void eng_busy(struct engine *e, const struct kxfer_segment *s,
		     unsigned int n, int delta)
{
	uint64_t b;
	unsigned int i;

	for (i = 0; i < n; i++)
		for (b = s[i].remote_off >> BUSY_SHIFT;
		     b <= (s[i].remote_off + s[i].len - 1) >> BUSY_SHIFT; b++)
			e->busy[b] += delta;
}

static bool eng_conflict(struct engine *e, const struct kxfer_segment *s,
			 unsigned int n)
{
	uint64_t b;
	unsigned int i;

	for (i = 0; i < n; i++)
		for (b = s[i].remote_off >> BUSY_SHIFT;
		     b <= (s[i].remote_off + s[i].len - 1) >> BUSY_SHIFT; b++)
			if (e->busy[b])
				return true;
	return false;
}

static void eng_complete(struct engine *e, const struct kxfer_event *ev)
{
	unsigned int slot = ev->user_data & ((1U << SLOT_BITS) - 1);
	uint64_t seq = ev->user_data >> SLOT_BITS;
	struct slot *s;

	if (ev->type != KXFER_EV_COMPLETION)
		die("event type %u, expected a completion", ev->type);
	if (slot >= e->nslots || !seq || e->slots[slot].seq != seq ||
	    !e->inflight)
		die("completion for no job in flight (user_data 0x%" PRIx64 ")",
		    (uint64_t)ev->user_data);
	s = &e->slots[slot];
	if (ev->status)
		die("job %" PRIu64 ": %s (wc_status %u)", seq,
		    errname(ev->status), ev->wc_status);
	if (ev->bytes != s->bytes)
		die("job %" PRIu64 ": completion bytes %" PRIu64 ", expected %" PRIu64,
		    seq, (uint64_t)ev->bytes, s->bytes);
	eng_busy(e, eng_segs(e, slot), s->nsegs, -1);
	s->seq = 0;
	e->freelist[e->nfree++] = slot;
	e->inflight--;
}

/* Reap at least one completion; needs a job in flight. */
static void eng_reap(struct engine *e)
{
	int n, i;

	if (!e->inflight)
		die("internal error: waiting with no job in flight");
	n = reap_wait(e->c->kx, e->ev, e->evmax, 1, e->c->timeout_ns);
	if (n < 0)
		die("reap: %s", errname(n));
	if (!n)
		die("no completion within the timeout (%u jobs in flight): ETIMEDOUT",
		    e->inflight);
	for (i = 0; i < n; i++)
		eng_complete(e, &e->ev[i]);
}

/* Submit the batch, reaping on -EAGAIN until all of it is accepted. */
static void eng_flush(struct engine *e)
{
	unsigned int acc;
	int ret;

	while (e->nbatch) {
		ret = kxfer_submit(e->c->kx, e->batch, e->nbatch, &acc);
		e->inflight += acc;
		e->nbatch -= acc;
		memmove(e->batch, e->batch + acc, e->nbatch * sizeof(*e->batch));
		if (!ret)
			continue;
		if (ret != -EAGAIN)
			die("job %" PRIu64 " refused: %s",
			    (uint64_t)(e->batch[0].user_data >> SLOT_BITS),
			    errname(ret));
		e->eagain++;
		if (!e->inflight)
			die("SUBMIT: EAGAIN with no job in flight");
		eng_reap(e);
	}
}

static void eng_drain(struct engine *e)
{
	eng_flush(e);
	while (e->inflight)
		eng_reap(e);
}

static unsigned int eng_slot(struct engine *e)
{
	while (!e->nfree) {
		if (e->nbatch)
			eng_flush(e);
		else
			eng_reap(e);
	}
	return e->freelist[--e->nfree];
}

/* Queue the job whose nsegs segments are in its slot's storage. */
static void eng_add(struct engine *e, unsigned int slot, unsigned int nsegs)
{
	struct kxfer_segment *segs = eng_segs(e, slot);
	struct slot *s = &e->slots[slot];
	struct ctx *c = e->c;
	unsigned int i;
	bool waited = false;

	while (eng_conflict(e, segs, nsegs)) {
		waited = true;
		if (e->nbatch)
			eng_flush(e);
		else
			eng_reap(e);
	}
	e->waits += waited;
	eng_busy(e, segs, nsegs, 1);

	s->seq = ++e->seq;
	s->nsegs = nsegs;
	s->bytes = 0;
	for (i = 0; i < nsegs; i++)
		s->bytes += segs[i].len;
	kxfer_job_init(&e->batch[e->nbatch++], e->op, c->pool.handle, c->peer,
		       c->rx.handle, segs, nsegs,
		       (s->seq << SLOT_BITS) | slot);
	e->jobs++;
	e->segs += nsegs;
	e->bytes += s->bytes;
	if (e->nbatch == e->batchmax)
		eng_flush(e);
}

/* One job per piece: local [loff, loff + len) <-> remote [roff, ...). */
static void eng_bulk(struct engine *e, uint32_t op, uint64_t loff,
		     uint64_t roff, uint64_t len)
{
	struct kxfer_segment *seg;
	uint64_t done, n;
	unsigned int slot;

	e->op = op;
	for (done = 0; done < len; done += n) {
		n = len - done < PIECE ? len - done : PIECE;
		slot = eng_slot(e);
		seg = eng_segs(e, slot);
		seg->local_off = loff + done;
		seg->remote_off = roff + done;
		seg->len = n;
		eng_add(e, slot, 1);
	}
	eng_drain(e);
}

static void eng_reset_totals(struct engine *e)
{
	e->jobs = 0;
	e->segs = 0;
	e->bytes = 0;
	e->eagain = 0;
	e->waits = 0;
}

/* splitmix64: the stream's generator, apart from the data pattern. */
static uint64_t rnd_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ULL;
	return mix64(*state);
}

static uint64_t rnd_below(uint64_t *state, uint64_t n)
{
	return n ? rnd_next(state) % n : 0;
}

struct rparams {
	uint64_t half;		/* local source range: [0, half) */
	uint64_t elen;		/* export length */
	uint64_t maxlen;
	unsigned int maxsegs;
	bool overlap;		/* segments of one job may overlap remotely */
};

/*
 * One random segment.  Mostly independent offsets and lengths; one in
 * three continues the previous segment remotely (and half of those
 * locally too) so that the planner's merging and gathering run; one in
 * eight is page-aligned, like KV-cache blocks.
 */
static void rnd_seg(uint64_t *st, const struct rparams *rp,
		    const struct kxfer_segment *prev, struct kxfer_segment *s)
{
	uint64_t len = 1 + rnd_below(st, rp->maxlen);

	if (!rnd_below(st, 8) && rp->maxlen >= 4096) {
		len = (len + 4095) & ~4095ULL;
		if (len > rp->maxlen)
			len -= 4096;
		s->len = len;
		s->local_off = rnd_below(st, (rp->half - len) / 4096 + 1) * 4096;
		s->remote_off = rnd_below(st, (rp->elen - len) / 4096 + 1) * 4096;
		return;
	}
	s->len = len;
	if (prev && !rnd_below(st, 3) &&
	    prev->remote_off + prev->len <= rp->elen - len) {
		s->remote_off = prev->remote_off + prev->len;
		if (rnd_below(st, 2) && prev->local_off + prev->len <= rp->half - len)
			s->local_off = prev->local_off + prev->len;
		else
			s->local_off = rnd_below(st, rp->half - len + 1);
		return;
	}
	s->local_off = rnd_below(st, rp->half - len + 1);
	s->remote_off = rnd_below(st, rp->elen - len + 1);
}

static bool seg_overlap(const struct kxfer_segment *a,
			const struct kxfer_segment *b)
{
	return a->remote_off < b->remote_off + b->len &&
	       b->remote_off < a->remote_off + a->len;
}

/*
 * A job's segments: 1..maxsegs, pairwise disjoint on the remote side
 * unless rp->overlap (then they land in segment order: the module keeps
 * such a job on one QP).  Fewer when eight tries in a row find no room.
 */
static unsigned int rnd_job(uint64_t *st, const struct rparams *rp,
			    struct kxfer_segment *segs)
{
	unsigned int want = 1 + rnd_below(st, rp->maxsegs), n = 0, i, try;

	while (n < want) {
		for (try = 0; try < 8; try++) {
			rnd_seg(st, rp, n ? &segs[n - 1] : NULL, &segs[n]);
			if (rp->overlap)
				break;
			for (i = 0; i < n; i++)
				if (seg_overlap(&segs[i], &segs[n]))
					break;
			if (i == n)
				break;
		}
		if (try == 8)
			break;
		n++;
	}
	return n;
}

static double secs(int64_t ns)
{
	return ns / 1e9;
}

static int cmd_random(int argc, char **argv)
{
	unsigned int maxsegs = 0, batch = 16, slot, nsegs, i;
	uint64_t seed = 0, njobs = 0, maxlen = 64 << 10, j, bad, first = 0;
	uint64_t s_jobs, s_segs, s_bytes;
	bool have_seed = false, have_n = false, quiet = false;
	struct ctx c = { .timeout_ns = 30000000000LL };
	struct engine e = { .c = &c };
	struct kxfer_segment *segs;
	uint8_t *src, *expect, *back;
	struct rparams rp = { .overlap = false };
	struct pattern pat;
	int64_t t0, t_stream;
	uint64_t st;
	int opt;

	opterr = 0;
	while ((opt = getopt(argc, argv, "s:n:m:l:b:t:qO")) != -1) {
		switch (opt) {
		case 's':
			seed = arg_u64("seed", optarg);
			have_seed = true;
			break;
		case 'n':
			njobs = arg_u64("job count", optarg);
			have_n = true;
			break;
		case 'm':
			maxsegs = arg_uint("segment count", optarg, 1);
			break;
		case 'l':
			maxlen = arg_u64("segment length", optarg);
			if (!maxlen)
				usage("bad segment length: %s", optarg);
			break;
		case 'b':
			batch = arg_uint("batch", optarg, 1);
			break;
		case 't':
			c.timeout_ns = arg_timeout(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'O':
			rp.overlap = true;
			break;
		default:
			usage("random: unknown option -%c", optopt);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 3)
		usage("random: PEER EXPORT POOL expected");
	if (!have_seed || !have_n)
		usage("random: -s SEED and -n JOBS are required");

	ctx_open(&c, argv[2]);
	ctx_peer(&c, argv[0], argv[1]);

	rp.half = c.pool.size / 2;
	rp.elen = c.rx.len;
	if (!rp.elen)
		die("export %s is empty: EINVAL", c.export);
	if (rp.elen > rp.half)
		die("export %s (%" PRIu64 " bytes) is larger than half of pool %s (%" PRIu64 " of %" PRIu64 "): EFBIG",
		    c.export, rp.elen, c.pool_name, rp.half, c.pool.size);
	if ((c.rx.access & (KXFER_ACCESS_READ | KXFER_ACCESS_WRITE)) !=
	    (KXFER_ACCESS_READ | KXFER_ACCESS_WRITE))
		die("export %s must grant read and write (access 0x%x): EACCES",
		    c.export, c.rx.access);
	if (maxsegs && c.q->max_segments && maxsegs > c.q->max_segments)
		die("-m %u exceeds the module's max_segments %u: EINVAL",
		    maxsegs, c.q->max_segments);
	if (!maxsegs) {
		maxsegs = 8;
		if (c.q->max_segments && maxsegs > c.q->max_segments)
			maxsegs = c.q->max_segments;
	}
	rp.maxsegs = maxsegs;
	rp.maxlen = maxlen < rp.elen ? maxlen : rp.elen;

	/*
	 * Room for the module's in-flight bound plus a batch, so that
	 * SUBMIT's -EAGAIN path runs; fewer if the segments would need more
	 * than SEG_MEM bytes.
	 */
	e.maxsegs = maxsegs;
	e.batchmax = batch;
	e.nslots = c.q->max_inflight ? c.q->max_inflight : 1024;
	e.nslots = e.nslots > 4096 ? 4096 + batch : e.nslots + batch;
	if (e.nslots > SEG_MEM / (maxsegs * sizeof(*e.segstore)))
		e.nslots = SEG_MEM / (maxsegs * sizeof(*e.segstore)) + 1;
	e.slots = xcalloc(e.nslots, sizeof(*e.slots));
	e.segstore = xcalloc((size_t)e.nslots * maxsegs, sizeof(*e.segstore));
	e.freelist = xcalloc(e.nslots, sizeof(*e.freelist));
	for (i = 0; i < e.nslots; i++)
		e.freelist[e.nfree++] = e.nslots - 1 - i;
	e.batch = xcalloc(batch, sizeof(*e.batch));
	e.evmax = 256;
	e.ev = xcalloc(e.evmax, sizeof(*e.ev));
	e.busy = xcalloc((rp.elen >> BUSY_SHIFT) + 1, sizeof(*e.busy));
	src = xcalloc(rp.half, 1);
	expect = xcalloc(rp.elen, 1);
	back = (uint8_t *)c.pool.base + rp.half;

	if (!quiet)
		printf("random: pool %s %" PRIu64 " bytes, export %s %" PRIu64 " bytes, seed %" PRIu64 ", %" PRIu64 " jobs of 1..%u segments of 1..%" PRIu64 " bytes, batch %u\n",
		       c.pool_name, c.pool.size, c.export, rp.elen, seed,
		       njobs, maxsegs, rp.maxlen, batch);

	/*
	 * The source: the first half of the pool, seed pattern.  src is a
	 * private copy: what is expected never comes from pool memory.
	 */
	pattern_seed(&pat, seed);
	pattern_fill(&pat, src, 0, rp.half);
	memcpy(c.pool.base, src, rp.half);

	/* A known start: the whole export from the source's first bytes. */
	t0 = now_ns();
	eng_bulk(&e, KXFER_OP_WRITE, 0, 0, rp.elen);
	memcpy(expect, src, rp.elen);
	if (!quiet)
		printf("baseline: %" PRIu64 " jobs, %" PRIu64 " bytes, %.3f s\n",
		       e.jobs, e.bytes, secs(now_ns() - t0));

	/*
	 * The stream.  Each job is applied to the expected image when it
	 * is generated, in job order; overlapping jobs are never in flight
	 * together, so the export sees them in that order too.
	 */
	eng_reset_totals(&e);
	e.op = KXFER_OP_WRITE;
	st = seed ^ 0x72616e646f6dULL;
	t0 = now_ns();
	for (j = 0; j < njobs; j++) {
		slot = eng_slot(&e);
		segs = eng_segs(&e, slot);
		nsegs = rnd_job(&st, &rp, segs);
		for (i = 0; i < nsegs; i++)
			memcpy(expect + segs[i].remote_off,
			       src + segs[i].local_off, segs[i].len);
		eng_add(&e, slot, nsegs);
	}
	eng_drain(&e);
	t_stream = now_ns() - t0;
	if (!quiet)
		printf("stream: %" PRIu64 " jobs, %" PRIu64 " segments, %" PRIu64 " bytes, %.3f s, %.2f MB/s, %.0f jobs/s, %" PRIu64 " EAGAIN, %" PRIu64 " overlap waits\n",
		       e.jobs, e.segs, e.bytes, secs(t_stream),
		       t_stream ? e.bytes / 1e6 / secs(t_stream) : 0,
		       t_stream ? e.jobs / secs(t_stream) : 0, e.eagain,
		       e.waits);

	/*
	 * Read the export back into the second half, over bytes that all
	 * differ from what is expected: a byte READ did not deliver shows.
	 */
	s_jobs = e.jobs;
	s_segs = e.segs;
	s_bytes = e.bytes;
	for (j = 0; j < rp.elen; j++)
		back[j] = (uint8_t)~expect[j];
	eng_reset_totals(&e);
	t0 = now_ns();
	eng_bulk(&e, KXFER_OP_READ, rp.half, 0, rp.elen);
	if (!quiet)
		printf("readback: %" PRIu64 " jobs, %" PRIu64 " bytes, %.3f s\n",
		       e.jobs, e.bytes, secs(now_ns() - t0));

	if (memcmp(back, expect, rp.elen)) {
		for (bad = 0, j = 0; j < rp.elen; j++)
			if (back[j] != expect[j] && !bad++)
				first = j;
		die("export %s: %" PRIu64 " of %" PRIu64 " bytes differ, first at offset %" PRIu64 ": 0x%02x, expected 0x%02x%s",
		    c.export, bad, rp.elen, first, back[first], expect[first],
		    (back[first] ^ expect[first]) == 0xff ?
		    " (not read back)" : "");
	}
	/* WRITE must leave its source alone. */
	bad = memcmp(c.pool.base, src, rp.half) ?
	      pattern_diff(&pat, c.pool.base, 0, rp.half, &first) : 0;
	if (bad)
		die("pool %s: %" PRIu64 " source bytes changed, first at offset %" PRIu64,
		    c.pool_name, bad, first);
	/* Every job had its one completion; nothing else came. */
	opt = kxfer_reap(c.kx, e.ev, e.evmax, 0, 0, 0);
	if (opt < 0)
		die("reap: %s", errname(opt));
	if (opt)
		die("%d stray event(s) after the last completion", opt);

	printf("random: jobs %" PRIu64 " segments %" PRIu64 " bytes %" PRIu64 " time %.3f s, export verified\n",
	       s_jobs, s_segs, s_bytes, secs(t_stream));

	ctx_close(&c);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* refuse: one invalid job per check                                       */
/* ---------------------------------------------------------------------- */

struct refuse {
	struct ctx *c;
	struct kxfer_job base;		/* a valid job: each check breaks one thing */
	struct kxfer_segment seg;
	unsigned int failed;
	unsigned int strays;		/* wrongly accepted jobs */
};

static void __printf(4, 5) report(struct refuse *r, bool ok, const char *name,
				  const char *fmt, ...)
{
	va_list ap;

	printf("%s %s ", ok ? "ok" : "FAIL", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	r->failed += !ok;
}

/*
 * Submit s as given, accepted and error poisoned; expect -err from the
 * ioctl and, for a refused job (@job), error == -err and accepted == 0
 * as well.  A refusal of the SUBMIT structure itself (flags, reserved,
 * njobs) looks at no job: only its errno is checked.
 */
static void check_submit(struct refuse *r, const char *name, int err,
			 struct kxfer_submit *s, bool job)
{
	int ret;

	s->accepted = 0xcccccccc;
	s->error = (int32_t)0xcccccccc;
	ret = kxfer_submit_raw(r->c->kx, s);
	if (!ret) {
		if (s->accepted <= s->njobs)
			r->strays += s->accepted;
		report(r, false, name, "expected %s got accepted (accepted %u error %d)",
		       errname(err), s->accepted, s->error);
	} else if (ret != -err) {
		report(r, false, name, "expected %s got %s", errname(err),
		       errname(ret));
	} else if (job && (s->error != -err || s->accepted)) {
		report(r, false, name, "expected %s got %s but error %d accepted %u",
		       errname(err), errname(ret), s->error, s->accepted);
	} else {
		report(r, true, name, "%s", errname(err));
	}
}

static void check_jobs(struct refuse *r, const char *name, int err,
		       const struct kxfer_job *jobs, unsigned int n)
{
	struct kxfer_submit s = { .jobs = (uintptr_t)jobs, .njobs = n };

	check_submit(r, name, err, &s, true);
}

/* base, with one segment replaced. */
static void check_seg(struct refuse *r, const char *name, int err,
		      uint64_t loff, uint64_t roff, uint64_t len)
{
	struct kxfer_segment seg = {
		.local_off = loff, .remote_off = roff, .len = len,
	};
	struct kxfer_job job = r->base;

	job.segs = (uintptr_t)&seg;
	check_jobs(r, name, err, &job, 1);
}

/* Reap one completion of a valid job: expect status 0 and its bytes. */
static void check_completion(struct refuse *r, const char *name,
			     uint64_t user_data, uint64_t bytes)
{
	struct kxfer_event ev;
	int n;

	n = reap_wait(r->c->kx, &ev, 1, 1, r->c->timeout_ns);
	if (n <= 0)
		report(r, false, name, "expected 0 got no completion (%s)",
		       errname(n ? n : -ETIMEDOUT));
	else if (ev.type != KXFER_EV_COMPLETION || ev.user_data != user_data)
		report(r, false, name, "expected 0 got event type %u user_data %" PRIu64,
		       ev.type, (uint64_t)ev.user_data);
	else if (ev.status)
		report(r, false, name, "expected 0 got %s (wc_status %u)",
		       errname(ev.status), ev.wc_status);
	else if (ev.bytes != bytes)
		report(r, false, name, "expected 0 got 0 but bytes %" PRIu64 " for %" PRIu64,
		       (uint64_t)ev.bytes, bytes);
	else
		report(r, true, name, "0");
}

/* An export of the peer that must lack one access bit: its handle. */
static bool refuse_export(struct refuse *r, const char *name,
			  const char *export, uint32_t lacks,
			  struct kxfer_remote_lookup *rx)
{
	int ret = kxfer_remote_lookup(r->c->kx, r->c->peer, export, rx);

	if (ret) {
		report(r, false, name, "lookup of export %s: %s", export,
		       errname(ret));
		return false;
	}
	if (rx->access & lacks) {
		report(r, false, name, "export %s grants %s (access 0x%x)",
		       export, lacks == KXFER_ACCESS_READ ? "read" : "write",
		       rx->access);
		return false;
	}
	return true;
}

static int cmd_refuse(int argc, char **argv)
{
	const char *wo = NULL, *ro = NULL, *mo = NULL;
	struct ctx c = { .timeout_ns = 30000000000LL };
	struct refuse r = { .c = &c };
	struct kxfer_remote_lookup wx = { 0 }, rox = { 0 }, mx = { 0 };
	struct kxfer_segment *many, atom;
	struct kxfer_submit s;
	struct kxfer_job job, *jobs, pair[2];
	struct kxfer_event ev[8];
	uint32_t maxh, n, k;
	uint64_t len;
	int opt, got;

	opterr = 0;
	while ((opt = getopt(argc, argv, "w:r:m:t:")) != -1) {
		switch (opt) {
		case 'w':
			wo = optarg;
			break;
		case 'm':
			mo = optarg;
			break;
		case 'r':
			ro = optarg;
			break;
		case 't':
			c.timeout_ns = arg_timeout(optarg);
			break;
		default:
			usage("refuse: unknown option -%c", optopt);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 3)
		usage("refuse: PEER EXPORT POOL expected");

	ctx_open(&c, argv[2]);
	ctx_peer(&c, argv[0], argv[1]);
	if (!(c.rx.access & (KXFER_ACCESS_READ | KXFER_ACCESS_WRITE)))
		die("export %s grants neither read nor write: EACCES",
		    c.export);

	/*
	 * The base job moves len bytes between offset 0 of the pool and
	 * offset 0 of the export: a READ when the export allows it, so
	 * that the one job that runs changes only the local pool.
	 */
	len = c.pool.size < c.rx.len ? c.pool.size : c.rx.len;
	len = len < 8 ? len : 8;
	if (!len)
		die("pool %s or export %s is empty: EINVAL", c.pool_name,
		    c.export);
	r.seg.len = len;
	kxfer_job_init(&r.base,
		       c.rx.access & KXFER_ACCESS_READ ? KXFER_OP_READ :
							  KXFER_OP_WRITE,
		       c.pool.handle, c.peer, c.rx.handle, &r.seg, 1, 1);

	/* The control: the base job runs. */
	got = kxfer_submit(c.kx, &r.base, 1, NULL);
	if (got)
		report(&r, false, "valid", "expected 0 got refused %s",
		       errname(got));
	else
		check_completion(&r, "valid", 1, len);

	/*
	 * A REAP whose header cannot be written back is refused before it
	 * takes an event: the completion is still there afterwards.
	 */
	got = kxfer_submit(c.kx, &r.base, 1, NULL);
	if (got) {
		report(&r, false, "reap-readonly", "expected EFAULT got refused %s",
		       errname(got));
	} else {
		struct kxfer_event rev;
		struct kxfer_reap *ro;
		struct pollfd pfd = { .fd = kxfer_fd(c.kx), .events = POLLIN };

		ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ro == MAP_FAILED)
			die("mmap: %s", errname(-errno));
		memset(ro, 0, sizeof(*ro));
		ro->events = (uintptr_t)&rev;
		ro->max = 1;
		if (mprotect(ro, 4096, PROT_READ))
			die("mprotect: %s", errname(-errno));
		if (poll(&pfd, 1, 30000) != 1)
			die("no completion to reap: ETIMEDOUT");
		got = ioctl(kxfer_fd(c.kx), KXFER_IOC_REAP, ro) ? errno : 0;
		report(&r, got == EFAULT, "reap-readonly", "expected EFAULT got %s",
		       errname(got));
		munmap(ro, 4096);
		check_completion(&r, "reap-readonly-kept", 1, len);
	}

	check_seg(&r, "pool-offset", ERANGE, c.pool.size, 0, len);
	check_seg(&r, "remote-offset", ERANGE, 0, c.rx.len, len);
	check_seg(&r, "pool-end", ERANGE, c.pool.size - len + 1, 0, len);
	check_seg(&r, "remote-end", ERANGE, 0, c.rx.len - len + 1, len);
	check_seg(&r, "local-overflow", ERANGE, -4096ULL, 0, 8192);
	check_seg(&r, "remote-overflow", ERANGE, 0, -4096ULL, 8192);
	check_seg(&r, "zero-length", EINVAL, 0, 0, 0);

	job = r.base;
	job.nsegs = 0;
	check_jobs(&r, "zero-segments", EINVAL, &job, 1);

	n = c.q->max_segments;
	if (!n || n >= 1U << 20) {
		report(&r, false, "too-many-segments", "expected EINVAL but QUERY reports max_segments %u",
		       n);
	} else {
		many = xcalloc(n + 1, sizeof(*many));
		for (k = 0; k <= n; k++)
			many[k] = r.seg;
		job = r.base;
		job.segs = (uintptr_t)many;
		job.nsegs = n + 1;
		check_jobs(&r, "too-many-segments", EINVAL, &job, 1);
		free(many);
	}

	/*
	 * More than 65536 work requests: 65535 scattered 8-byte segments,
	 * one WR each, and one across an MR boundary 2 MiB into the export,
	 * which takes two.  Exports map pages of up to 1 GiB now, so -m
	 * names one that its node mapped with 4 KiB pages (512 per MR).
	 */
	mx = c.rx;
	if (mo && (got = kxfer_remote_lookup(c.kx, c.peer, mo, &mx))) {
		report(&r, false, "too-many-wrs", "lookup of export %s: %s", mo,
		       errname(got));
		mx = c.rx;
	}
	if (n >= 65536 && mx.len >= (2 << 20) + 8 && c.pool.size >= 65536 * 8) {
		many = xcalloc(65536, sizeof(*many));
		for (k = 0; k < 65535; k++) {
			many[k].local_off = (uint64_t)k * 8;
			many[k].remote_off = (uint64_t)k * 16;
			many[k].len = 8;
		}
		many[65535].local_off = 0;
		many[65535].remote_off = (2 << 20) - 8;
		many[65535].len = 16;
		job = r.base;
		job.op = KXFER_OP_WRITE;
		job.remote = mx.handle;
		job.segs = (uintptr_t)many;
		job.nsegs = 65536;
		if (mx.access & KXFER_ACCESS_WRITE)
			check_jobs(&r, "too-many-wrs", E2BIG, &job, 1);
		else
			printf("skip too-many-wrs (export not writable)\n");
		free(many);
	} else {
		printf("skip too-many-wrs (export or pool too small)\n");
	}

	job = r.base;
	job.op = 99;
	check_jobs(&r, "unknown-op", EINVAL, &job, 1);
	job = r.base;
	job.op = 0;
	check_jobs(&r, "op-zero", EINVAL, &job, 1);
	job = r.base;
	job.flags = 1U << 31;
	check_jobs(&r, "unknown-flag", EINVAL, &job, 1);
	job = r.base;
	job.rail = 1U << 31;
	check_jobs(&r, "reserved", EINVAL, &job, 1);

	/* A notification's message, and a notification alone. */
	job = r.base;
	job.notify_len = 8;
	check_jobs(&r, "notify-len-without-msg", EINVAL, &job, 1);
	job = r.base;
	job.flags = KXFER_JOB_NOTIFY_MSG;
	job.notify_value = (uintptr_t)"12345678";
	job.notify_len = 8;
	check_jobs(&r, "msg-without-notify", EINVAL, &job, 1);
	job.flags |= KXFER_JOB_NOTIFY;
	job.notify_len = 0;
	check_jobs(&r, "msg-empty", EINVAL, &job, 1);
	job.notify_len = 1025;
	check_jobs(&r, "msg-too-long", EINVAL, &job, 1);
	job.notify_len = 8;
	job.notify_value = 8;
	check_jobs(&r, "msg-unreadable", EFAULT, &job, 1);
	job = r.base;
	job.nsegs = 0;
	job.segs = 0;
	job.pool = 0;
	check_jobs(&r, "bare-without-notify", EINVAL, &job, 1);
	job.flags = KXFER_JOB_NOTIFY;
	job.op = KXFER_OP_READ;
	check_jobs(&r, "bare-read", EINVAL, &job, 1);
	job.op = KXFER_OP_WRITE;
	job.pool = r.base.pool;
	check_jobs(&r, "bare-with-pool", EINVAL, &job, 1);

	/* Atomic operands only where the op has them; atomics' shape. */
	job = r.base;
	job.compare_add = 1;
	check_jobs(&r, "operand-on-transfer", EINVAL, &job, 1);
	atom = r.seg;
	atom.local_off = 0;
	atom.remote_off = 0;
	atom.len = 8;
	job = r.base;
	job.segs = (uintptr_t)&atom;
	job.op = KXFER_OP_FADD;
	job.swap = 1;
	check_jobs(&r, "swap-on-fadd", EINVAL, &job, 1);
	job.op = KXFER_OP_CAS;
	job.swap = 0;
	atom.len = 4;
	check_jobs(&r, "atomic-len-4", EINVAL, &job, 1);
	atom.len = 8;
	atom.local_off = 4;
	check_jobs(&r, "atomic-local-misaligned", EINVAL, &job, 1);
	atom.local_off = 0;
	atom.remote_off = 4;
	check_jobs(&r, "atomic-remote-misaligned", EINVAL, &job, 1);
	atom.remote_off = 0;
	job.nsegs = 2;
	check_jobs(&r, "atomic-two-segments", EINVAL, &job, 1);
	job.nsegs = 1;
	if (c.rx.len >= 8 && c.pool.size >= 8 &&
	    !(c.rx.access & KXFER_ACCESS_ATOMIC))
		check_jobs(&r, "atomic-no-access", EACCES, &job, 1);
	else
		printf("skip atomic-no-access (the export grants atomics)\n");

	job = r.base;
	job.segs = 16;
	check_jobs(&r, "bad-segs", EFAULT, &job, 1);
	check_jobs(&r, "bad-jobs", EFAULT, (const struct kxfer_job *)16, 1);

	maxh = c.rx.handle > mx.handle ? c.rx.handle : mx.handle;
	if (wo || ro) {
		if (wo && refuse_export(&r, "read-write-only", wo,
					KXFER_ACCESS_READ, &wx)) {
			job = r.base;
			job.op = KXFER_OP_READ;
			job.remote = wx.handle;
			check_jobs(&r, "read-write-only", EACCES, &job, 1);
		}
		if (ro && refuse_export(&r, "write-read-only", ro,
					KXFER_ACCESS_WRITE, &rox)) {
			job = r.base;
			job.op = KXFER_OP_WRITE;
			job.remote = rox.handle;
			check_jobs(&r, "write-read-only", EACCES, &job, 1);
		}
		if (wx.handle > maxh)
			maxh = wx.handle;
		if (rox.handle > maxh)
			maxh = rox.handle;
	}
	if (!wo)
		printf("skip read-write-only (no -w EXPORT_WO)\n");
	if (!ro)
		printf("skip write-read-only (no -r EXPORT_RO)\n");

	job = r.base;
	job.pool = c.pool.handle + 1;
	check_jobs(&r, "unknown-pool", ENOENT, &job, 1);
	job = r.base;
	job.peer = c.peer + 1;
	check_jobs(&r, "unknown-peer", ENOENT, &job, 1);
	job = r.base;
	job.remote = maxh + 1;
	check_jobs(&r, "unknown-remote", ENOENT, &job, 1);

	/* The SUBMIT structure itself. */
	memset(&s, 0, sizeof(s));
	s.jobs = (uintptr_t)&r.base;
	s.njobs = 1;
	s.flags = 1U << 31;
	check_submit(&r, "submit-flags", EINVAL, &s, false);
	memset(&s, 0, sizeof(s));
	s.jobs = (uintptr_t)&r.base;
	s.njobs = 1;
	s.reserved[1] = 1;
	check_submit(&r, "submit-reserved", EINVAL, &s, false);
	n = c.q->max_jobs_per_submit;
	if (!n || n >= 1U << 20) {
		report(&r, false, "submit-too-many-jobs", "expected EINVAL but QUERY reports max_jobs_per_submit %u",
		       n);
	} else {
		jobs = xcalloc(n + 1, sizeof(*jobs));
		for (k = 0; k <= n; k++)
			jobs[k] = r.base;
		memset(&s, 0, sizeof(s));
		s.jobs = (uintptr_t)jobs;
		s.njobs = n + 1;
		check_submit(&r, "submit-too-many-jobs", EINVAL, &s, false);
		free(jobs);
	}

	/* A valid job, then a refused one: the first runs, error names the second. */
	pair[0] = r.base;
	pair[0].user_data = 2;
	pair[1] = r.base;
	pair[1].op = 99;
	memset(&s, 0xcc, sizeof(s));
	s.jobs = (uintptr_t)pair;
	s.njobs = 2;
	s.flags = 0;
	memset(s.reserved, 0, sizeof(s.reserved));
	got = kxfer_submit_raw(c.kx, &s);
	if (got || s.accepted != 1 || s.error != -EINVAL) {
		report(&r, false, "partial", "expected return 0 accepted 1 error -EINVAL got return %s accepted %u error %d",
		       errname(got), s.accepted, s.error);
		if (!got && s.accepted <= 2)
			r.strays += s.accepted;
	} else {
		report(&r, true, "partial", "EINVAL");
		check_completion(&r, "partial-first-runs", 2, len);
	}

	/* Refused jobs leave no event; wrongly accepted ones are drained. */
	while (r.strays) {
		got = reap_wait(c.kx, ev, 8, 1, c.timeout_ns);
		if (got <= 0)
			break;
		r.strays -= (unsigned int)got < r.strays ? (unsigned int)got :
							   r.strays;
	}
	got = kxfer_reap(c.kx, ev, 8, 0, 0, 0);
	if (got < 0)
		report(&r, false, "no-stray-events", "expected none got %s",
		       errname(got));
	else if (got)
		report(&r, false, "no-stray-events", "expected none got %d event(s)",
		       got);
	else
		report(&r, true, "no-stray-events", "0");

	ctx_close(&c);
	if (r.failed)
		die("refuse: %u check(s) failed", r.failed);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Notifications                                                           */
/* ---------------------------------------------------------------------- */

static uint32_t notify_subscribe(struct kxfer *kx, const char *export)
{
	struct kxfer_notify_sub ns;

	memset(&ns, 0, sizeof(ns));
	if (strlen(export) >= sizeof(ns.export))
		usage("export name too long: %s", export);
	strcpy(ns.export, export);
	if (ioctl(kxfer_fd(kx), KXFER_IOC_NOTIFY_SUBSCRIBE, &ns))
		die("subscribe to %s: %s", export, errname(-errno));
	return ns.handle;
}

/*
 * notify-wait EXPORT -n COUNT [-t S]: exactly COUNT notifications of the
 * local EXPORT arrive (and no more within a second after them).
 */
static int cmd_notify_wait(int argc, char **argv)
{
	int64_t timeout_ns = 30000000000LL;
	uint64_t count = 1, got = 0;
	struct kxfer_event ev[16];
	struct kxfer *kx;
	uint32_t handle;
	int opt, n, i, ret;

	opterr = 0;
	while ((opt = getopt(argc, argv, "n:t:")) != -1) {
		switch (opt) {
		case 'n':
			if (!parse_u64(optarg, &count))
				usage("notify-wait: bad count %s", optarg);
			break;
		case 't':
			timeout_ns = arg_timeout(optarg);
			break;
		default:
			usage("notify-wait: unknown option -%c", optopt);
		}
	}
	if (argc - optind != 1)
		usage("notify-wait: EXPORT expected");
	ret = kxfer_open(&kx);
	if (ret)
		die("open /dev/%s: %s", KXFER_DEVICE_NAME, errname(ret));
	handle = notify_subscribe(kx, argv[optind]);
	printf("subscribed %s handle %u\n", argv[optind], handle);
	fflush(stdout);

	while (got < count) {
		n = reap_wait(kx, ev, 16, 1, timeout_ns);
		if (n < 0)
			die("reap: %s", errname(n));
		if (!n)
			die("%" PRIu64 " of %" PRIu64 " notifications: ETIMEDOUT",
			    got, count);
		for (i = 0; i < n; i++) {
			if (ev[i].type != KXFER_EV_NOTIFY || ev[i].sub != handle)
				die("unexpected event type %u sub %u", ev[i].type,
				    ev[i].sub);
			printf("notify peer %u value %" PRIu64 " bytes %" PRIu64 "\n",
			       ev[i].peer, (uint64_t)ev[i].user_data,
			       (uint64_t)ev[i].bytes);
			got++;
		}
		fflush(stdout);
	}
	n = reap_wait(kx, ev, 16, 1, 1000000000LL);
	if (n)
		die("%d notification(s) more than %" PRIu64, n, count);
	kxfer_close(kx);
	return 0;
}

/* Segment i of job k: a shuffled (reversed) slice of region k. */
static void notify_segs(struct kxfer_segment *segs, unsigned int nsegs,
			uint64_t k, uint64_t len)
{
	uint64_t piece = len / nsegs;
	unsigned int i;

	for (i = 0; i < nsegs; i++) {
		uint64_t idx = nsegs - 1 - i;

		segs[i].local_off = k * len + idx * piece;
		segs[i].remote_off = segs[i].local_off;
		segs[i].len = idx == nsegs - 1 ? len - idx * piece : piece;
	}
}

/*
 * notify-send PEER EXPORT POOL -n N -l LEN -k SEGS: N WRITE jobs, job k
 * writing region k ([k * LEN, (k + 1) * LEN) of the export, in SEGS
 * pieces in reverse order, so that they stripe over the QPs) with the
 * pattern of seed k, each with NOTIFY value k; -w W of them in flight
 * (1: each completes before the next starts); -r RAIL: each asks for
 * that rail of a peer over rails (KXFER_JOB_RAIL).
 */
static int cmd_notify_send(int argc, char **argv)
{
	struct ctx c = { .timeout_ns = 30000000000LL };
	uint64_t n = 10, len = 65536, nsegs = 16, win = 1, rail = ~0ULL, k;
	uint64_t done = 0, inflight = 0;
	struct kxfer_segment *segs;
	uint8_t *ended;
	struct kxfer_event ev;
	struct kxfer_job job;
	struct pattern p;
	unsigned int acc;
	int opt, ret;

	opterr = 0;
	while ((opt = getopt(argc, argv, "n:l:k:t:w:r:")) != -1) {
		switch (opt) {
		case 'w':
			if (!parse_u64(optarg, &win) || !win || win > 256)
				usage("notify-send: bad -w");
			break;
		case 'r':
			if (!parse_u64(optarg, &rail) || rail > 7)
				usage("notify-send: bad -r");
			break;
		case 'n':
			if (!parse_u64(optarg, &n))
				usage("notify-send: bad -n");
			break;
		case 'l':
			if (!parse_u64(optarg, &len))
				usage("notify-send: bad -l");
			break;
		case 'k':
			if (!parse_u64(optarg, &nsegs) || !nsegs || nsegs > 4096)
				usage("notify-send: bad -k");
			break;
		case 't':
			c.timeout_ns = arg_timeout(optarg);
			break;
		default:
			usage("notify-send: unknown option -%c", optopt);
		}
	}
	if (argc - optind != 3)
		usage("notify-send: PEER EXPORT POOL expected");
	if (len < nsegs)
		usage("notify-send: -l below -k");
	ctx_open(&c, argv[optind + 2]);
	ctx_peer(&c, argv[optind], argv[optind + 1]);
	if (n * len > c.rx.len || n * len > c.pool.size)
		die("notify-send: %" PRIu64 " x %" PRIu64 " bytes do not fit",
		    n, len);
	segs = xcalloc(nsegs, sizeof(*segs));
	ended = xcalloc(n, 1);
	for (k = 0; done < n;) {
		if (k < n && inflight < win) {
			pattern_seed(&p, k);
			pattern_fill(&p, (uint8_t *)c.pool.base + k * len,
				     k * len, len);
			notify_segs(segs, nsegs, k, len);
			kxfer_job_init(&job, KXFER_OP_WRITE, c.pool.handle,
				       c.peer, c.rx.handle, segs, nsegs, k);
			job.flags = KXFER_JOB_NOTIFY;
			job.notify_value = k;
			if (rail != ~0ULL) {
				job.flags |= KXFER_JOB_RAIL;
				job.rail = rail;
			}
			ret = kxfer_submit(c.kx, &job, 1, &acc);
			if (ret)
				die("job %" PRIu64 " refused: %s", k,
				    errname(ret));
			k++;
			inflight++;
			continue;
		}
		ret = reap_wait(c.kx, &ev, 1, 1, c.timeout_ns);
		if (ret != 1)
			die("job %" PRIu64 ": no completion: %s", done,
			    ret < 0 ? errname(ret) : "ETIMEDOUT");
		/* one event per job, each of its own job, in any order */
		if (ev.type != KXFER_EV_COMPLETION || ev.user_data >= k ||
		    ev.status || ev.bytes != len)
			die("job %" PRIu64 ": status %s bytes %" PRIu64,
			    (uint64_t)ev.user_data, errname(ev.status),
			    (uint64_t)ev.bytes);
		if (ended[ev.user_data]++)
			die("job %" PRIu64 ": a second event",
			    (uint64_t)ev.user_data);
		done++;
		inflight--;
	}
	printf("notify-send: %" PRIu64 " jobs of %" PRIu64 " bytes in %" PRIu64 " segments\n",
	       n, len, nsegs);
	return 0;
}

/*
 * notify-recv POOL EXPORT -o OFF -n N -l LEN: subscribe to EXPORT (which
 * starts at pool offset OFF) and, the moment each notification k
 * arrives, check that region k already holds seed k's pattern; exactly N
 * notifications, each value once, bytes == LEN.
 */
static int cmd_notify_recv(int argc, char **argv)
{
	struct ctx c = { .timeout_ns = 60000000000LL };
	uint64_t n = 10, len = 65536, off = 0, got = 0, bad, first = 0;
	struct kxfer_event ev[16];
	struct pattern p;
	uint8_t *seen;
	uint32_t handle;
	int opt, i, m;

	opterr = 0;
	while ((opt = getopt(argc, argv, "o:n:l:t:")) != -1) {
		switch (opt) {
		case 'o':
			if (!parse_u64(optarg, &off))
				usage("notify-recv: bad -o");
			break;
		case 'n':
			if (!parse_u64(optarg, &n))
				usage("notify-recv: bad -n");
			break;
		case 'l':
			if (!parse_u64(optarg, &len))
				usage("notify-recv: bad -l");
			break;
		case 't':
			c.timeout_ns = arg_timeout(optarg);
			break;
		default:
			usage("notify-recv: unknown option -%c", optopt);
		}
	}
	if (argc - optind != 2)
		usage("notify-recv: POOL EXPORT expected");
	ctx_open(&c, argv[optind]);
	if (off + n * len > c.pool.size)
		die("notify-recv: the regions do not fit the pool");
	handle = notify_subscribe(c.kx, argv[optind + 1]);
	printf("subscribed %s handle %u\n", argv[optind + 1], handle);
	fflush(stdout);
	seen = xcalloc(n, 1);
	while (got < n) {
		m = reap_wait(c.kx, ev, 16, 1, c.timeout_ns);
		if (m < 0)
			die("reap: %s", errname(m));
		if (!m)
			die("%" PRIu64 " of %" PRIu64 " notifications: ETIMEDOUT",
			    got, n);
		for (i = 0; i < m; i++) {
			uint64_t k = ev[i].user_data;

			if (ev[i].type != KXFER_EV_NOTIFY || ev[i].sub != handle)
				die("unexpected event type %u", ev[i].type);
			if (k >= n || seen[k]++)
				die("notification value %" PRIu64 " unexpected or repeated", k);
			if (ev[i].bytes != len)
				die("notification %" PRIu64 ": bytes %" PRIu64, k,
				    (uint64_t)ev[i].bytes);
			pattern_seed(&p, k);
			bad = pattern_diff(&p, (uint8_t *)c.pool.base + off + k * len,
					   k * len, len, &first);
			if (bad)
				die("notification %" PRIu64 " arrived before its data: %" PRIu64 " bytes differ, first at export offset %" PRIu64,
				    k, bad, first);
			got++;
		}
	}
	m = reap_wait(c.kx, ev, 16, 1, 1000000000LL);
	if (m)
		die("%d notification(s) more than %" PRIu64, m, n);
	printf("notify-recv: %" PRIu64 " notifications, each after all of its data\n",
	       got);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* regs: many pools of the process's own memory (issue 44)                 */
/* ---------------------------------------------------------------------- */

/* Slab and vmalloc of the whole kernel, in KiB (/proc/meminfo). */
static uint64_t kernel_kb(void)
{
	char line[256];
	uint64_t v, sum = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %" SCNu64, &v) == 1 ||
		    sscanf(line, "VmallocUsed: %" SCNu64, &v) == 1)
			sum += v;
	fclose(f);
	return sum;
}

struct regs_time {
	int64_t sum, max;
};

static void regs_time_add(struct regs_time *t, int64_t ns)
{
	t->sum += ns;
	if (ns > t->max)
		t->max = ns;
}

/* Pool k holds seed:SEED at offsets k x len on: what peers wrote. */
static uint64_t regs_check(uint8_t **mem, uint64_t n, uint64_t len,
			   uint64_t seed)
{
	struct pattern p;
	uint64_t k, bad = 0, first, nbad;

	pattern_seed(&p, seed);
	for (k = 0; k < n; k++) {
		nbad = pattern_diff(&p, mem[k], k * len, len, &first);
		if (nbad && !bad)
			fprintf(stderr, "xfer: regs: pool %" PRIu64 ": %" PRIu64
				" bytes differ, first at offset %" PRIu64 "\n",
				k, nbad, first - k * len);
		bad += nbad;
	}
	return bad;
}

static int cmd_regs(int argc, char **argv)
{
	uint64_t n = 256, len = 65536, seed = 0, k, kb0, kb1;
	int64_t timeout_ns = 600000000000LL, t0, t1;
	struct regs_time tp = {}, te = {};
	const char *wait_file = NULL;
	bool have_seed = false;
	struct kxfer_export_add e;
	struct kxfer *kx;
	uint8_t **mem;
	uint32_t handle;
	char name[KXFER_NAME_MAX];
	int opt, ret;

	opterr = 0;
	while ((opt = getopt(argc, argv, "n:l:w:s:t:")) != -1) {
		switch (opt) {
		case 'n':
			if (!parse_u64(optarg, &n) || !n || n > 65536)
				usage("regs: bad count %s", optarg);
			break;
		case 'l':
			if (!parse_u64(optarg, &len) || !len || len % 4096)
				usage("regs: bad length %s", optarg);
			break;
		case 'w':
			wait_file = optarg;
			break;
		case 's':
			if (!parse_u64(optarg, &seed))
				usage("regs: bad seed %s", optarg);
			have_seed = true;
			break;
		case 't':
			timeout_ns = arg_timeout(optarg);
			break;
		default:
			usage("regs: unknown option -%c", optopt);
		}
	}
	if (argc - optind != 1 || !!wait_file != have_seed)
		usage("regs: PREFIX expected, and -w with -s");
	if (strlen(argv[optind]) > KXFER_NAME_MAX - 8)
		usage("regs: prefix too long");
	ret = kxfer_open(&kx);
	if (ret)
		die("open /dev/%s: %s", KXFER_DEVICE_NAME, errname(ret));
	mem = xcalloc(n, sizeof(*mem));
	for (k = 0; k < n; k++) {
		mem[k] = mmap(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (mem[k] == MAP_FAILED)
			die("mmap: ENOMEM");
	}
	kb0 = kernel_kb();
	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%s-p%04" PRIu64, argv[optind], k);
		t0 = now_ns();
		ret = kxfer_pool_register(kx, name, mem[k], len, &handle);
		t1 = now_ns();
		if (ret)
			die("regs: pool %" PRIu64 " of %" PRIu64 ": %s", k, n,
			    errname(ret));
		regs_time_add(&tp, t1 - t0);
		snprintf(name, sizeof(name), "%s%04" PRIu64, argv[optind], k);
		ret = kxfer_export_init(&e, name, handle, 0, len, NULL,
					KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
		t0 = now_ns();
		if (!ret)
			ret = kxfer_export_add(kx, &e);
		t1 = now_ns();
		if (ret)
			die("regs: export %s: %s", name, errname(ret));
		regs_time_add(&te, t1 - t0);
	}
	kb1 = kernel_kb();
	printf("regs: %" PRIu64 " pools of %" PRIu64 " bytes, each exported: ",
	       n, len);
	printf("POOL_USER %.1f us (max %.1f), EXPORT_ADD %.1f us (max %.1f); ",
	       tp.sum / 1e3 / n, tp.max / 1e3, te.sum / 1e3 / n, te.max / 1e3);
	printf("kernel memory %" PRIu64 " KiB more, %.1f KiB a pool\n",
	       kb1 > kb0 ? kb1 - kb0 : 0,
	       kb1 > kb0 ? (double)(kb1 - kb0) / n : 0.0);
	if (wait_file) {
		printf("ready\n");
		fflush(stdout);
		t0 = now_ns();
		while (access(wait_file, F_OK)) {
			if (timeout_ns && now_ns() - t0 > timeout_ns)
				die("regs: no %s: ETIMEDOUT", wait_file);
			usleep(100000);
		}
		k = regs_check(mem, n, len, seed);
		if (k)
			die("regs: %" PRIu64 " bytes differ", k);
		printf("regs: every byte of the %" PRIu64 " pools as written\n", n);
	}
	t0 = now_ns();
	kxfer_close(kx);
	printf("regs: closed in %.1f ms\n", (now_ns() - t0) / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		usage("no command");
	cmd = argv[1];
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "--help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(cmd, "fill") || !strcmp(cmd, "check") ||
	    !strcmp(cmd, "dump"))
		return cmd_range(argc - 1, argv + 1, cmd);
	if (!strcmp(cmd, "job"))
		return cmd_job(argc - 1, argv + 1);
	if (!strcmp(cmd, "random"))
		return cmd_random(argc - 1, argv + 1);
	if (!strcmp(cmd, "fence"))
		return cmd_fence(argc - 1, argv + 1);
	if (!strcmp(cmd, "refuse"))
		return cmd_refuse(argc - 1, argv + 1);
	if (!strcmp(cmd, "notify-wait"))
		return cmd_notify_wait(argc - 1, argv + 1);
	if (!strcmp(cmd, "notify-send"))
		return cmd_notify_send(argc - 1, argv + 1);
	if (!strcmp(cmd, "notify-recv"))
		return cmd_notify_recv(argc - 1, argv + 1);
	if (!strcmp(cmd, "regs"))
		return cmd_regs(argc - 1, argv + 1);
	usage("unknown command: %s", cmd);
}
