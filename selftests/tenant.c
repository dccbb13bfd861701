// SPDX-License-Identifier: GPL-2.0-only
/*
 * tenant: services that share a node's sessions and come and go, for the
 * guest suites (issue 40: a tenant leaving costs no other tenant a job).
 *
 *   tenant own [-a ACTION] [-g GOFILE] [-n NOTES] [-d MS] [-t TOKENFILE]
 *	[-c LEN] NAME SIZE
 *	A service with an export of its own memory: SIZE bytes of its
 *	address space made a pool ("NAME-pool") and exported as NAME (read
 *	and write, any peer), subscribed to its notifications as it is
 *	made; with -t capability-scoped, with a random token written to
 *	TOKENFILE in hex (the out-of-band channel of the tests).  Prints
 *	"ready", then waits MS milliseconds (default 0) before it reaps:
 *	with -n it then takes NOTES notifications (none may be lost to the
 *	wait) and prints "notes N".  Then it waits for GOFILE to exist,
 *	with -c checks that the first LEN bytes are the pattern a peer's
 *	"tenant scoped" wrote (prints "check: ok"), and does ACTION: del,
 *	del-nowait (withdraw the export), detach, detach-nowait (end the
 *	pool), wait (nothing: it waits to be killed), exit (return at once);
 *	it prints "ACTION: ERRNAME in T ms" and exits.
 *   tenant stream [-s SECS] [-j INFLIGHT] [-l LEN] [-o LOFF] [-x ERRNAME]
 *	PEER EXPORT POOL
 *	A service that keeps INFLIGHT WRITE jobs of LEN bytes in flight from
 *	its pool (attached by name) to EXPORT of PEER, round the export,
 *	each remote byte from the pool byte at LOFF plus its offset (a
 *	pattern filled first), for SECS seconds.  Every job must end with
 *	exactly one event.  Without -x no job may fail or be refused, and
 *	the export is read back and checked at the end.  With -x the stream
 *	must end with that refusal at submission (its export went), and jobs
 *	may end with 0 or that errno only.  Prints
 *	"stream: jobs N ok N failed N refused ERRNAME|0 ...".
 *   tenant notify PEER EXPORT COUNT
 *	As soon as PEER advertises EXPORT (looked up every millisecond),
 *	sends COUNT notifications alone to it, values 1..COUNT.
 *   tenant scoped -g GOFILE PEER EXPORT POOL TOKENFILE LEN
 *	A capability-scoped export's reach: looked up without a token, with
 *	a wrong one (one bit off), and a name that does not exist with the
 *	token, each must fail with ENOENT; with the token (from TOKENFILE)
 *	it must be found, and LEN bytes of the pattern written from the
 *	pool (attached by name) to it, read back and compared.  Prints
 *	"ready", waits for GOFILE (the owner withdrew the export), then a
 *	write on the handle must be refused with ESTALE and the token must
 *	find nothing (ENOENT).  Prints one line per check.
 *   tenant lookup PEER EXPORT [TOKEN]
 *	One KXFER_IOC_REMOTE_LOOKUP of EXPORT on PEER, with TOKEN (32 hex
 *	digits) if given: prints "lookup: ERRNAME" (0 if found), exits 0.
 *   tenant handles -g GOFILE PEER EXPORT POOL
 *	Handles that end: looks PEER and EXPORT up and writes through them,
 *	prints "ready", waits for GOFILE (the session reconnected meanwhile),
 *	then the remote handle must be stale (ESTALE), a new one must work,
 *	and KXFER_IOC_RELEASE must give each handle back once, refuse what
 *	it does not know with its errno, and leave released handles unusable
 *	(ENOENT).  Prints one line per check.
 *
 * Exit status: 0 success, 1 failure (reason on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kxfer.h"

#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

#define SLOTS_MAX	1024

static _Noreturn __printf(1, 2) void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tenant: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static _Noreturn void usage(const char *why)
{
	fprintf(stderr, "tenant: %s\n"
		"usage: tenant own [-a ACTION] [-g GOFILE] [-n NOTES] [-d MS] [-t TOKENFILE]\n"
		"                  [-c LEN] NAME SIZE\n"
		"       tenant stream [-s SECS] [-j INFLIGHT] [-l LEN] [-o LOFF] [-x ERRNAME]\n"
		"                     PEER EXPORT POOL\n"
		"       tenant notify PEER EXPORT COUNT\n"
		"       tenant scoped -g GOFILE PEER EXPORT POOL TOKENFILE LEN\n"
		"       tenant lookup PEER EXPORT [TOKEN]\n"
		"       tenant handles -g GOFILE PEER EXPORT POOL\n", why);
	exit(2);
}

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

static int errparse(const char *s)
{
	int e;

	for (e = 1; e < 4096; e++)
		if (strerrorname_np(e) && !strcmp(strerrorname_np(e), s))
			return e;
	usage("unknown errno name");
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		usage("bad number");
	switch (*end) {
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'M':
		v <<= 20;
		end++;
		break;
	}
	if (*end)
		usage("bad number");
	return v;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* KXFER_SLOW, as the other tools: timeouts scale with it. */
static int64_t slow(int64_t ns)
{
	const char *s = getenv("KXFER_SLOW");
	long f = s ? strtol(s, NULL, 10) : 1;

	return ns * (f > 0 ? f : 1);
}

/* One byte of the pattern at pool offset @off: any sub-range checks alone. */
static uint8_t pat(uint64_t off)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ULL;

	return (uint8_t)(x >> 56) ^ (uint8_t)off;
}

/* ---------------------------------------------------------------------- */
/* own                                                                     */
/* ---------------------------------------------------------------------- */

/* A token to @path in hex, whole or not at all (written, then renamed). */
static void token_write(const char *path, const uint8_t *token)
{
	char tmp[4096];
	FILE *f;
	int i;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		usage("own: TOKENFILE too long");
	f = fopen(tmp, "w");
	if (!f)
		die("%s: %s", tmp, errname(errno));
	for (i = 0; i < KXFER_TOKEN_LEN; i++)
		fprintf(f, "%02x", token[i]);
	fputc('\n', f);
	if (fclose(f) || rename(tmp, path))
		die("%s: %s", path, errname(errno));
}

static int take_notes(struct kxfer *kx, uint32_t sub, unsigned int want)
{
	struct kxfer_event ev[64];
	int64_t end = now_ns() + slow(30000000000LL);
	unsigned int got = 0;
	int n, i;

	while (got < want && now_ns() < end) {
		n = kxfer_reap(kx, ev, 64, 1, 1000000000LL, 0);
		if (n < 0 && n != -EINTR)
			die("reap: %s", errname(n));
		for (i = 0; i < n; i++) {
			if (ev[i].type != KXFER_EV_NOTIFY || ev[i].sub != sub)
				die("event type %u sub %u, expected a notification of subscription %u",
				    ev[i].type, ev[i].sub, sub);
			if (ev[i].user_data != got + 1)
				die("notification %" PRIu64 ", expected %u",
				    (uint64_t)ev[i].user_data, got + 1);
			got++;
		}
	}
	return got;
}

static int cmd_own(int argc, char **argv)
{
	const char *action = "wait", *go = NULL, *tokfile = NULL;
	unsigned int notes = 0, delay = 0;
	uint8_t token[KXFER_TOKEN_LEN];
	struct kxfer_export_add e;
	uint64_t check = 0, i;
	char pool_name[KXFER_NAME_MAX];
	uint32_t pool, sub;
	struct kxfer *kx;
	uint64_t size;
	int64_t t0;
	void *mem;
	int opt, ret;

	while ((opt = getopt(argc, argv, "a:g:n:d:t:c:")) != -1) {
		switch (opt) {
		case 'a':
			action = optarg;
			break;
		case 'g':
			go = optarg;
			break;
		case 'n':
			notes = num(optarg);
			break;
		case 'd':
			delay = num(optarg);
			break;
		case 't':
			tokfile = optarg;
			break;
		case 'c':
			check = num(optarg);
			break;
		default:
			usage("own: unknown option");
		}
	}
	if (argc - optind != 2)
		usage("own: NAME SIZE expected");
	size = num(argv[optind + 1]);
	if (check > size)
		usage("own: -c LEN larger than SIZE");
	if (snprintf(pool_name, sizeof(pool_name), "%s-pool",
		     argv[optind]) >= (int)sizeof(pool_name))
		usage("own: NAME too long");

	ret = kxfer_open(&kx);
	if (ret)
		die("open: %s", errname(ret));
	if (posix_memalign(&mem, 4096, size))
		die("no memory: ENOMEM");
	memset(mem, 0, size);
	ret = kxfer_pool_register(kx, pool_name, mem, size, &pool);
	if (ret)
		die("pool %s: %s", pool_name, errname(ret));
	ret = kxfer_export_init(&e, argv[optind], pool, 0, size, NULL,
				KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
	if (!ret && tokfile)
		ret = kxfer_export_add_token(kx, &e, token, &sub);
	else if (!ret)
		ret = kxfer_export_add_subscribe(kx, &e, &sub);
	if (ret)
		die("export %s: %s", argv[optind], errname(ret));
	if (tokfile)
		token_write(tokfile, token);
	printf("ready\n");
	fflush(stdout);

	/* Anything the service does before it reaps: nothing may be lost. */
	sleep_ms(delay);
	if (notes) {
		ret = take_notes(kx, sub, notes);
		printf("notes %d\n", ret);
		fflush(stdout);
		if (ret != (int)notes)
			die("%d of %u notifications: ENOMSG", ret, notes);
	}

	while (go && access(go, F_OK))
		sleep_ms(10);
	for (i = 0; i < check; i++)
		if (((uint8_t *)mem)[i] != pat(i))
			die("byte %" PRIu64 " of the export is 0x%02x, not 0x%02x: EBADMSG",
			    i, ((uint8_t *)mem)[i], pat(i));
	if (check) {
		printf("check: ok\n");
		fflush(stdout);
	}
	ret = 0;
	t0 = now_ns();
	if (!strcmp(action, "del"))
		ret = kxfer_export_del(kx, argv[optind]);
	else if (!strcmp(action, "del-nowait"))
		ret = kxfer_export_del_flags(kx, argv[optind],
					     KXFER_EXPORT_DEL_NOWAIT);
	else if (!strcmp(action, "detach"))
		ret = kxfer_pool_unregister(kx, pool);
	else if (!strcmp(action, "detach-nowait"))
		ret = kxfer_pool_unregister_flags(kx, pool,
						  KXFER_POOL_DETACH_NOWAIT);
	else if (!strcmp(action, "wait"))
		for (;;)
			pause();
	else if (strcmp(action, "exit"))
		usage("own: unknown action");
	printf("%s: %s in %" PRId64 " ms\n", action, errname(ret),
	       (now_ns() - t0) / 1000000);
	fflush(stdout);
	kxfer_close(kx);
	return ret ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* stream                                                                  */
/* ---------------------------------------------------------------------- */

struct stream {
	struct kxfer *kx;
	struct kxfer_pool_map map;
	uint32_t peer;
	struct kxfer_remote_lookup rx;
	uint64_t loff, len;
	unsigned int inflight;
	uint8_t slot_busy[SLOTS_MAX];
	uint64_t jobs, ok, failed, failed_expected;
	int first_fail;
};

/* Reap at least @min events; each must end a job in flight, once. */
static void st_reap(struct stream *st, unsigned int min, int expect)
{
	struct kxfer_event ev[64];
	int n, i;

	n = kxfer_reap(st->kx, ev, 64, min, slow(30000000000LL), 0);
	if (n == -EINTR)
		return;
	if (n < 0)
		die("reap: %s", errname(n));
	if ((unsigned int)n < min)
		die("no completion within 30 s (%u jobs in flight): ETIMEDOUT",
		    st->inflight);
	for (i = 0; i < n; i++) {
		uint64_t slot = ev[i].user_data;

		if (ev[i].type != KXFER_EV_COMPLETION || slot >= SLOTS_MAX ||
		    !st->slot_busy[slot])
			die("event type %u user_data %" PRIu64 " for no job in flight",
			    ev[i].type, (uint64_t)ev[i].user_data);
		st->slot_busy[slot] = 0;
		st->inflight--;
		if (!ev[i].status) {
			if (ev[i].bytes != st->len)
				die("job done with %" PRIu64 " bytes, expected %" PRIu64,
				    (uint64_t)ev[i].bytes, st->len);
			st->ok++;
			continue;
		}
		st->failed++;
		if (ev[i].status == -expect)
			st->failed_expected++;
		if (!st->first_fail)
			st->first_fail = ev[i].status;
	}
}

/* READ the export back over what the pool holds past the source, check. */
static void st_verify(struct stream *st)
{
	uint8_t *src = (uint8_t *)st->map.base + st->loff;
	uint8_t *back = src + st->rx.len;
	struct kxfer_job job;
	struct kxfer_segment seg;
	uint64_t off, n, i;
	unsigned int acc;
	int ret;

	memset(back, 0, st->rx.len);
	for (off = 0; off < st->rx.len; off += n) {
		n = st->rx.len - off < (1 << 20) ? st->rx.len - off : 1 << 20;
		seg.local_off = st->loff + st->rx.len + off;
		seg.remote_off = off;
		seg.len = n;
		kxfer_job_init(&job, KXFER_OP_READ, st->map.handle, st->peer,
			       st->rx.handle, &seg, 1, 0);
		st->slot_busy[0] = 1;
		st->inflight++;
		st->len = n;
		ret = kxfer_submit(st->kx, &job, 1, &acc);
		if (ret)
			die("read back: %s", errname(ret));
		st_reap(st, 1, 0);
		if (st->failed)
			die("read back: %s", errname(st->first_fail));
	}
	for (i = 0; i < st->rx.len; i++)
		if (back[i] != src[i])
			die("export byte %" PRIu64 " is 0x%02x, expected 0x%02x",
			    i, back[i], src[i]);
}

static int cmd_stream(int argc, char **argv)
{
	struct stream st = { .inflight = 0, .len = 64 << 10 };
	unsigned int want = 8, acc;
	uint64_t secs = 10, i, roff = 0;
	int expect = 0, refused = 0, opt, ret;
	uint32_t state;
	int64_t end;

	while ((opt = getopt(argc, argv, "s:j:l:o:x:")) != -1) {
		switch (opt) {
		case 's':
			secs = num(optarg);
			break;
		case 'j':
			want = num(optarg);
			break;
		case 'l':
			st.len = num(optarg);
			break;
		case 'o':
			st.loff = num(optarg);
			break;
		case 'x':
			expect = errparse(optarg);
			break;
		default:
			usage("stream: unknown option");
		}
	}
	if (argc - optind != 3)
		usage("stream: PEER EXPORT POOL expected");
	if (!want || want >= SLOTS_MAX || !st.len)
		usage("stream: bad -j or -l");

	ret = kxfer_open(&st.kx);
	if (ret)
		die("open: %s", errname(ret));
	ret = kxfer_pool_attach(st.kx, argv[optind + 2], &st.map);
	if (ret)
		die("pool %s: %s", argv[optind + 2], errname(ret));
	ret = kxfer_peer_lookup(st.kx, argv[optind], &st.peer, &state);
	if (ret)
		die("peer %s: %s", argv[optind], errname(ret));
	ret = kxfer_remote_lookup(st.kx, st.peer, argv[optind + 1], &st.rx);
	if (ret)
		die("export %s: %s", argv[optind + 1], errname(ret));
	if (st.rx.len < st.len || st.loff + 2 * st.rx.len > st.map.size)
		die("export of %" PRIu64 " bytes, pool of %" PRIu64 ": EFBIG",
		    (uint64_t)st.rx.len, (uint64_t)st.map.size);
	for (i = 0; i < st.rx.len; i++)
		((uint8_t *)st.map.base)[st.loff + i] = pat(st.loff + i);

	end = now_ns() + (int64_t)secs * 1000000000LL;
	while (!refused && now_ns() < end) {
		struct kxfer_segment seg;
		struct kxfer_job job;
		unsigned int slot;

		while (st.inflight >= want)
			st_reap(&st, 1, expect);
		for (slot = 0; st.slot_busy[slot]; slot++)
			;
		if (roff + st.len > st.rx.len)
			roff = 0;
		seg.local_off = st.loff + roff;
		seg.remote_off = roff;
		seg.len = st.len;
		kxfer_job_init(&job, KXFER_OP_WRITE, st.map.handle, st.peer,
			       st.rx.handle, &seg, 1, slot);
		ret = kxfer_submit(st.kx, &job, 1, &acc);
		if (ret == -EAGAIN) {
			st_reap(&st, 1, expect);
			continue;
		}
		if (ret) {
			refused = ret;
			break;
		}
		st.slot_busy[slot] = 1;
		st.inflight++;
		st.jobs++;
		roff += st.len;
		/* A failure ends the stream unless it is the one expected. */
		if (st.failed > st.failed_expected)
			break;
	}
	while (st.inflight)
		st_reap(&st, 1, expect);
	/* One event per job: nothing more comes. */
	{
		struct kxfer_event ev;

		ret = kxfer_reap(st.kx, &ev, 1, 0, 0, 0);
		if (ret)
			die("%d stray event(s) after the last completion", ret);
	}
	printf("stream: jobs %" PRIu64 " ok %" PRIu64 " failed %" PRIu64 " (%s first) refused %s\n",
	       st.jobs, st.ok, st.failed, errname(st.first_fail),
	       errname(refused));
	fflush(stdout);

	if (st.ok + st.failed != st.jobs)
		die("%" PRIu64 " jobs, %" PRIu64 " events", st.jobs,
		    st.ok + st.failed);
	if (expect) {
		if (refused != -expect)
			die("the stream ended with %s, expected a refusal %s",
			    errname(refused), errname(expect));
		if (st.failed != st.failed_expected)
			die("jobs failed with %s, expected 0 or %s",
			    errname(st.first_fail), errname(expect));
		return 0;
	}
	if (refused || st.failed)
		die("failed %" PRIu64 " (first %s), refused %s", st.failed,
		    errname(st.first_fail), errname(refused));
	st_verify(&st);
	printf("stream: export verified\n");
	kxfer_close(st.kx);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* handles                                                                 */
/* ---------------------------------------------------------------------- */

/* One job of @len bytes between pool offset @loff and export offset 0:
 * its SUBMIT refusal or status. */
static int one_job(struct kxfer *kx, uint32_t op, uint32_t pool,
		   uint64_t loff, uint32_t peer, uint32_t remote, uint64_t len)
{
	struct kxfer_segment seg = { .local_off = loff, .remote_off = 0,
				     .len = len };
	struct kxfer_event ev;
	struct kxfer_job job;
	unsigned int acc;
	int ret;

	kxfer_job_init(&job, op, pool, peer, remote, &seg, 1, 9);
	ret = kxfer_submit(kx, &job, 1, &acc);
	if (ret)
		return ret;
	ret = kxfer_reap(kx, &ev, 1, 1, slow(30000000000LL), 0);
	if (ret != 1)
		die("no completion: %s", errname(ret < 0 ? ret : -ETIMEDOUT));
	return ev.status;
}

/* One 4 KiB WRITE through the handles. */
static int one_write(struct kxfer *kx, uint32_t pool, uint32_t peer,
		     uint32_t remote)
{
	return one_job(kx, KXFER_OP_WRITE, pool, 0, peer, remote, 4096);
}

static void expect(const char *what, int got, int want)
{
	printf("%s: %s\n", what, errname(got));
	if (got != -want)
		die("%s: %s, expected %s", what, errname(got), errname(want));
}

/* KXFER_IOC_RELEASE as it is, with fields libkxfer never sets. */
static int release_raw(struct kxfer *kx, uint32_t kind, uint32_t handle,
		       uint32_t flags, uint32_t reserved)
{
	struct kxfer_release r = { kind, handle, flags, reserved };

	return ioctl(kxfer_fd(kx), KXFER_IOC_RELEASE, &r) ? -errno : 0;
}

static int cmd_handles(int argc, char **argv)
{
	struct kxfer_remote_lookup rx, rx2;
	struct kxfer_pool_map map;
	uint32_t peer, state;
	const char *go = NULL;
	struct kxfer *kx;
	int opt, ret;

	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt != 'g')
			usage("handles: unknown option");
		go = optarg;
	}
	if (argc - optind != 3 || !go)
		usage("handles: -g GOFILE PEER EXPORT POOL expected");
	ret = kxfer_open(&kx);
	if (!ret)
		ret = kxfer_pool_attach(kx, argv[optind + 2], &map);
	if (!ret)
		ret = kxfer_peer_lookup(kx, argv[optind], &peer, &state);
	if (!ret)
		ret = kxfer_remote_lookup(kx, peer, argv[optind + 1], &rx);
	if (ret)
		die("lookups: %s", errname(ret));
	expect("write before", one_write(kx, map.handle, peer, rx.handle), 0);
	printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK))
		sleep_ms(10);

	/* Looked up on the last connection: other keys now. */
	expect("write after the reconnect",
	       one_write(kx, map.handle, peer, rx.handle), ESTALE);
	ret = kxfer_remote_lookup(kx, peer, argv[optind + 1], &rx2);
	if (ret)
		die("lookup again: %s", errname(ret));
	expect("write, looked up again",
	       one_write(kx, map.handle, peer, rx2.handle), 0);

	expect("release kind 0", release_raw(kx, 0, rx.handle, 0, 0), EINVAL);
	expect("release kind 3", release_raw(kx, 3, rx.handle, 0, 0), EINVAL);
	expect("release with flags",
	       release_raw(kx, KXFER_HANDLE_REMOTE, rx.handle, 1, 0), EINVAL);
	expect("release with reserved",
	       release_raw(kx, KXFER_HANDLE_REMOTE, rx.handle, 0, 1), EINVAL);
	expect("release handle 0",
	       release_raw(kx, KXFER_HANDLE_REMOTE, 0, 0, 0), ENOENT);
	expect("release a peer handle as remote",
	       kxfer_remote_release(kx, 4096 + 1), ENOENT);
	expect("release stale remote", kxfer_remote_release(kx, rx.handle), 0);
	expect("release it again", kxfer_remote_release(kx, rx.handle), ENOENT);
	expect("release remote", kxfer_remote_release(kx, rx2.handle), 0);
	expect("write on the released remote",
	       one_write(kx, map.handle, peer, rx2.handle), ENOENT);
	ret = kxfer_remote_lookup(kx, peer, argv[optind + 1], &rx);
	if (ret)
		die("lookup for the peer's release: %s", errname(ret));
	expect("release peer", kxfer_peer_release(kx, peer), 0);
	expect("release it again", kxfer_peer_release(kx, peer), ENOENT);
	expect("write on the released peer",
	       one_write(kx, map.handle, peer, rx.handle), ENOENT);
	kxfer_close(kx);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* scoped                                                                  */
/* ---------------------------------------------------------------------- */

/* 32 hex digits to a token; false if @hex is not that */
static bool token_parse(const char *hex, uint8_t *token)
{
	unsigned int v;
	int i;

	if (strspn(hex, "0123456789abcdefABCDEF") < 2 * KXFER_TOKEN_LEN)
		return false;
	for (i = 0; i < KXFER_TOKEN_LEN; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		token[i] = (uint8_t)v;
	}
	return true;
}

static void token_read(const char *path, uint8_t *token)
{
	char hex[2 * KXFER_TOKEN_LEN + 2];
	FILE *f = fopen(path, "r");

	if (!f)
		die("%s: %s", path, errname(errno));
	if (!fgets(hex, sizeof(hex), f) || !token_parse(hex, token))
		die("%s: no token: EINVAL", path);
	fclose(f);
}

static int cmd_lookup(int argc, char **argv)
{
	uint8_t token[KXFER_TOKEN_LEN];
	struct kxfer_remote_lookup r;
	uint32_t peer, state;
	struct kxfer *kx;
	int ret;

	if (argc != 3 && argc != 4)
		usage("lookup: PEER EXPORT [TOKEN] expected");
	if (argc == 4 && !token_parse(argv[3], token))
		usage("lookup: TOKEN is 32 hex digits");
	ret = kxfer_open(&kx);
	if (!ret)
		ret = kxfer_peer_lookup(kx, argv[1], &peer, &state);
	if (ret)
		die("peer %s: %s", argv[1], errname(ret));
	ret = argc == 4 ? kxfer_remote_lookup_token(kx, peer, argv[2], token, &r) :
			  kxfer_remote_lookup(kx, peer, argv[2], &r);
	printf("lookup: %s\n", errname(ret));
	kxfer_close(kx);
	return 0;
}

static int cmd_scoped(int argc, char **argv)
{
	uint8_t token[KXFER_TOKEN_LEN], bad[KXFER_TOKEN_LEN];
	char none[KXFER_NAME_MAX];
	struct kxfer_remote_lookup rx, r;
	struct kxfer_pool_map map;
	const char *go = NULL, *name;
	uint32_t peer, state;
	uint64_t len, i;
	struct kxfer *kx;
	uint8_t *base;
	int64_t end;
	int opt, ret;

	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt != 'g')
			usage("scoped: unknown option");
		go = optarg;
	}
	if (argc - optind != 5 || !go)
		usage("scoped: -g GOFILE PEER EXPORT POOL TOKENFILE LEN expected");
	name = argv[optind + 1];
	token_read(argv[optind + 3], token);
	len = num(argv[optind + 4]);
	memcpy(bad, token, sizeof(bad));
	bad[7] ^= 0x10;
	if (snprintf(none, sizeof(none), "%s.no", name) >= (int)sizeof(none))
		usage("scoped: EXPORT too long");
	ret = kxfer_open(&kx);
	if (!ret)
		ret = kxfer_pool_attach(kx, argv[optind + 2], &map);
	if (!ret)
		ret = kxfer_peer_lookup(kx, argv[optind], &peer, &state);
	if (ret)
		die("lookups: %s", errname(ret));
	if (!len || 2 * len > map.size)
		usage("scoped: LEN must be at most half the pool");
	base = map.base;

	/* As soon as it is advertised: the token finds it */
	end = now_ns() + slow(60000000000LL);
	while ((ret = kxfer_remote_lookup_token(kx, peer, name, token, &rx)) == -ENOENT &&
	       now_ns() < end)
		sleep_ms(10);
	expect("token", ret, 0);
	if (rx.len < len)
		die("export of %" PRIu64 " bytes, %" PRIu64 " expected", (uint64_t)rx.len, len);
	/* Everything else: as a name that does not exist */
	expect("no token", kxfer_remote_lookup(kx, peer, name, &r), ENOENT);
	expect("wrong token", kxfer_remote_lookup_token(kx, peer, name, bad, &r), ENOENT);
	expect("no such name", kxfer_remote_lookup(kx, peer, none, &r), ENOENT);
	expect("no such name, token",
	       kxfer_remote_lookup_token(kx, peer, none, token, &r), ENOENT);

	/* Bytes there and back */
	for (i = 0; i < len; i++) {
		base[i] = pat(i);
		base[len + i] = 0;
	}
	expect("write", one_job(kx, KXFER_OP_WRITE, map.handle, 0, peer, rx.handle, len), 0);
	expect("read", one_job(kx, KXFER_OP_READ, map.handle, len, peer, rx.handle, len), 0);
	if (memcmp(base, base + len, len))
		die("read back differs from what was written: EBADMSG");
	printf("bytes: %" PRIu64 " checked\n", len);
	printf("ready\n");
	fflush(stdout);

	while (access(go, F_OK))
		sleep_ms(10);
	/* Withdrawn: the handle is stale, the token revoked */
	expect("write after the withdrawal",
	       one_job(kx, KXFER_OP_WRITE, map.handle, 0, peer, rx.handle, len), ESTALE);
	expect("token after the withdrawal",
	       kxfer_remote_lookup_token(kx, peer, name, token, &r), ENOENT);
	kxfer_close(kx);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* notify                                                                  */
/* ---------------------------------------------------------------------- */

static int cmd_notify(int argc, char **argv)
{
	struct kxfer_remote_lookup rx;
	struct kxfer_event ev[64];
	uint32_t peer, state;
	uint64_t count, i, done = 0;
	struct kxfer *kx;
	int64_t end;
	int ret, n;

	if (argc != 4)
		usage("notify: PEER EXPORT COUNT expected");
	count = num(argv[3]);
	ret = kxfer_open(&kx);
	if (!ret)
		ret = kxfer_peer_lookup(kx, argv[1], &peer, &state);
	if (ret)
		die("peer %s: %s", argv[1], errname(ret));
	end = now_ns() + slow(60000000000LL);
	while ((ret = kxfer_remote_lookup(kx, peer, argv[2], &rx)) == -ENOENT &&
	       now_ns() < end)
		sleep_ms(1);
	if (ret)
		die("export %s: %s", argv[2], errname(ret));
	for (i = 1; i <= count; i++) {
		struct kxfer_job job;
		unsigned int acc;

		kxfer_job_init(&job, KXFER_OP_WRITE, 0, peer, rx.handle, NULL,
			       0, i);
		job.flags = KXFER_JOB_NOTIFY;
		job.notify_value = i;
		ret = kxfer_submit(kx, &job, 1, &acc);
		if (ret)
			die("notification %" PRIu64 ": %s", i, errname(ret));
	}
	while (done < count) {
		n = kxfer_reap(kx, ev, 64, 1, slow(30000000000LL), 0);
		if (n < 0)
			die("reap: %s", errname(n));
		if (!n)
			die("no completion within 30 s: ETIMEDOUT");
		for (ret = 0; ret < n; ret++, done++)
			if (ev[ret].status)
				die("notification %" PRIu64 ": %s",
				    (uint64_t)ev[ret].user_data,
				    errname(ev[ret].status));
	}
	printf("notify: %" PRIu64 " sent\n", count);
	kxfer_close(kx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage("a command is expected");
	if (!strcmp(argv[1], "own"))
		return cmd_own(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stream"))
		return cmd_stream(argc - 1, argv + 1);
	if (!strcmp(argv[1], "notify"))
		return cmd_notify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "handles"))
		return cmd_handles(argc - 1, argv + 1);
	if (!strcmp(argv[1], "scoped"))
		return cmd_scoped(argc - 1, argv + 1);
	if (!strcmp(argv[1], "lookup"))
		return cmd_lookup(argc - 1, argv + 1);
	usage("unknown command");
}
