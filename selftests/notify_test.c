// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: notifications that carry the sender's bytes
 * (KXFER_JOB_NOTIFY_MSG), notifications without data, and the reap's
 * message buffer.
 *
 * Runs as root in one guest, over what suite-1.sh's t_upool_setup makes:
 * the session "uself" of this node to itself and the kernel pool "usrc"
 * exported as "usrc-x".  The test subscribes to usrc-x and sends to it:
 * each notification it sends comes back to it, once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kxfer.h>

#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"
#include "test_peer.h"

#define SRC_POOL	"usrc"
#define SRC_EXPORT	"usrc-x"
#define SRC_SIZE	(4UL << 20)
#define PG		4096UL

/* What wire_features was, to give it back: "all it knows" by default. */
static int get_features(char *buf, int len)
{
	FILE *f = fopen("/sys/module/kxfer/parameters/wire_features", "r");
	int ret;

	if (!f)
		return -1;
	ret = fgets(buf, len, f) ? 0 : -1;
	fclose(f);
	return ret;
}

static int set_features(const char *val)
{
	FILE *f = fopen("/sys/module/kxfer/parameters/wire_features", "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(val, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/* A peer handle and the export's remote handle, once the session has it. */
static int lookup(int fd, uint32_t *peer, uint32_t *remote)
{
	struct kxfer_peer_lookup p;
	struct kxfer_remote_lookup r;
	uint64_t end = now_ms() + 30000;

	do {
		memset(&p, 0, sizeof(p));
		strcpy(p.name, PEER);
		memset(&r, 0, sizeof(r));
		strcpy(r.name, SRC_EXPORT);
		if (!ioctl(fd, KXFER_IOC_PEER_LOOKUP, &p) &&
		    p.state == KXFER_PEER_UP) {
			r.peer = p.handle;
			if (!ioctl(fd, KXFER_IOC_REMOTE_LOOKUP, &r)) {
				*peer = p.handle;
				*remote = r.handle;
				return 0;
			}
		}
		usleep(50000);
	} while (now_ms() < end);
	return -1;
}

static int submit(int fd, struct kxfer_job *jobs, unsigned int n)
{
	struct kxfer_submit s = { .jobs = (uintptr_t)jobs, .njobs = n };

	if (ioctl(fd, KXFER_IOC_SUBMIT, &s))
		return -errno;
	return s.accepted == n ? 0 : s.error;
}

/* One REAP call: up to @max events, at least @min within 20 s. */
static int reap(int fd, struct kxfer_event *ev, unsigned int max,
		unsigned int min, void *msgs, uint32_t msgs_len)
{
	struct kxfer_reap r = {
		.events = (uintptr_t)ev, .max = max, .min = min,
		.timeout_ns = 20000000000LL, .msgs = (uintptr_t)msgs,
		.msgs_len = msgs_len,
	};

	memset(ev, 0xcc, max * sizeof(*ev));
	if (ioctl(fd, KXFER_IOC_REAP, &r))
		return -errno;
	return r.count;
}

static void msg_job(struct kxfer_job *j, uint32_t pool, uint32_t peer,
		    uint32_t remote, struct kxfer_segment *seg,
		    const char *msg, uint64_t user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = KXFER_OP_WRITE;
	j->pool = seg ? pool : 0;
	j->peer = peer;
	j->remote = remote;
	j->segs = (uintptr_t)seg;
	j->nsegs = seg ? 1 : 0;
	j->user_data = user_data;
	j->flags = KXFER_JOB_NOTIFY | KXFER_JOB_NOTIFY_MSG;
	j->notify_value = (uintptr_t)msg;
	j->notify_len = strlen(msg);
}

FIXTURE(notify) {
	int fd;
	uint32_t pool, peer, remote, sub;
	uint8_t *map;
};

FIXTURE_SETUP(notify)
{
	struct kxfer_pool_attach a;
	struct kxfer_notify_sub ns;

	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
	memset(&a, 0, sizeof(a));
	strcpy(a.name, SRC_POOL);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	self->pool = a.handle;
	self->map = mmap(NULL, SRC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, lookup(self->fd, &self->peer, &self->remote));
	memset(&ns, 0, sizeof(ns));
	strcpy(ns.export, SRC_EXPORT);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns));
	self->sub = ns.handle;
}

FIXTURE_TEARDOWN(notify)
{
	munmap(self->map, SRC_SIZE);
	close(self->fd);
}

TEST_F(notify, query)
{
	struct kxfer_query q = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & KXFER_FEAT_NOTIFY_MSG);
	EXPECT_EQ(1024, q.max_notify_len);
}

/* A WRITE's message comes with its notification, after its data. */
TEST_F(notify, write_with_message)
{
	struct kxfer_segment seg = { 0, 2 * SRC_SIZE / 4, 16 * PG };
	const char *msg = "req-42:layer-7:done";
	struct kxfer_event ev[2];
	char msgs[64];
	struct kxfer_job j;
	int i, n, got = 0;

	memset(self->map, 0x5a, 16 * PG);
	msg_job(&j, self->pool, self->peer, self->remote, &seg, msg, 1);
	ASSERT_EQ(0, submit(self->fd, &j, 1));
	n = 0;
	while (n < 2) {
		int k = reap(self->fd, ev + n, 2 - n, 1, msgs, sizeof(msgs));

		ASSERT_LT(0, k);
		n += k;
	}
	for (i = 0; i < 2; i++) {
		if (ev[i].type == KXFER_EV_COMPLETION) {
			EXPECT_EQ(1, ev[i].user_data);
			EXPECT_EQ(0, ev[i].status);
			continue;
		}
		ASSERT_EQ(KXFER_EV_NOTIFY, ev[i].type);
		got++;
		EXPECT_EQ(strlen(msg), ev[i].msg_len);
		ASSERT_GE(sizeof(msgs) - ev[i].msg_len, ev[i].msg_off);
		EXPECT_EQ(0, memcmp(msgs + ev[i].msg_off, msg, strlen(msg)));
		EXPECT_EQ(16 * PG, ev[i].bytes);
		EXPECT_EQ(self->sub, ev[i].sub);
		EXPECT_EQ(0, ev[i].user_data);
		/* The data is there when its notification is */
		EXPECT_EQ(0x5a, self->map[2 * SRC_SIZE / 4 + 16 * PG - 1]);
	}
	EXPECT_EQ(1, got);
	EXPECT_EQ(0, reap(self->fd, ev, 1, 0, msgs, sizeof(msgs)));
}

/*
 * A notification alone, fenced: it follows every earlier job of the file
 * to the peer, so it comes after their completions and their data.
 */
TEST_F(notify, alone_after_fence)
{
	struct kxfer_segment segs[8];
	struct kxfer_job jobs[9];
	struct kxfer_event ev[9];
	char msgs[2048];
	int i, n = 0, note = -1;

	for (i = 0; i < 8; i++) {
		segs[i] = (struct kxfer_segment){ i * 64 * PG,
						  SRC_SIZE / 2 + i * 64 * PG,
						  64 * PG };
		memset(self->map + i * 64 * PG, 0x10 + i, 64 * PG);
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].op = KXFER_OP_WRITE;
		jobs[i].pool = self->pool;
		jobs[i].peer = self->peer;
		jobs[i].remote = self->remote;
		jobs[i].segs = (uintptr_t)&segs[i];
		jobs[i].nsegs = 1;
		jobs[i].user_data = 100 + i;
	}
	msg_job(&jobs[8], 0, self->peer, self->remote, NULL, "all-8-done", 9);
	jobs[8].flags |= KXFER_JOB_FENCE;
	ASSERT_EQ(0, submit(self->fd, jobs, 9));
	while (n < 10) {
		int k = reap(self->fd, ev, 9, 1, msgs, sizeof(msgs));

		ASSERT_LT(0, k);
		for (i = 0; i < k; i++, n++) {
			if (ev[i].type == KXFER_EV_NOTIFY) {
				EXPECT_EQ(-1, note);
				note = n;
				EXPECT_EQ(10, ev[i].msg_len);
				EXPECT_EQ(0, memcmp(msgs + ev[i].msg_off,
						    "all-8-done", 10));
				EXPECT_EQ(0, ev[i].bytes);
				EXPECT_EQ(0x17, self->map[SRC_SIZE / 2 +
							  8 * 64 * PG - 1]);
				continue;
			}
			EXPECT_EQ(0, ev[i].status);
			/* The writes ended before it left (9: either way) */
			if (ev[i].user_data != 9)
				EXPECT_EQ(-1, note);
		}
	}
	EXPECT_LE(8, note);
}

/*
 * A reader without room: never stalls, loses only what cannot fit.  A
 * second file that only subscribes sees the notifications alone.
 */
TEST_F(notify, reap_room)
{
	struct kxfer_notify_sub ns;
	struct kxfer_job j[2];
	struct kxfer_event ev[4];
	char msgs[16];
	int fd2, n;

	fd2 = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, fd2);
	memset(&ns, 0, sizeof(ns));
	strcpy(ns.export, SRC_EXPORT);
	ASSERT_EQ(0, ioctl(fd2, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns));
	msg_job(&j[0], 0, self->peer, self->remote, NULL, "first-message", 1);
	msg_job(&j[1], 0, self->peer, self->remote, NULL, "second-message",
		2);
	j[1].flags |= KXFER_JOB_FENCE;
	ASSERT_EQ(0, submit(self->fd, j, 2));
	/* Both completions and both notifications at the sender */
	for (n = 0; n < 4;) {
		int k = reap(self->fd, ev, 4, 1, msgs, sizeof(msgs));

		ASSERT_LT(0, k);
		n += k;
	}
	/* 16 bytes at the other file: the first (13) fits, the second waits */
	n = reap(fd2, ev, 4, 2, msgs, sizeof(msgs));
	ASSERT_EQ(1, n);
	EXPECT_EQ(KXFER_EV_NOTIFY, ev[0].type);
	EXPECT_EQ(ns.handle, ev[0].sub);
	EXPECT_EQ(0, ev[0].msg_off);
	EXPECT_EQ(13, ev[0].msg_len);
	EXPECT_EQ(0, memcmp(msgs, "first-message", 13));
	/* No buffer at all: the first event of a call comes without it */
	ASSERT_EQ(1, reap(fd2, ev, 4, 1, NULL, 0));
	EXPECT_EQ(KXFER_EV_NOTIFY, ev[0].type);
	EXPECT_EQ(KXFER_MSG_NONE, ev[0].msg_off);
	EXPECT_EQ(14, ev[0].msg_len);
	EXPECT_EQ(0, reap(fd2, ev, 4, 0, msgs, sizeof(msgs)));
	close(fd2);
}

/*
 * Cancel: a FENCE job held behind 24 MiB of writes is taken back and
 * ends with ECANCELED; the writes, and a job held behind it, complete.
 * Every job ends exactly once whatever the timing; that the fenced job
 * was still held when CANCEL came is what 24 MiB ahead of it makes
 * near certain (it is required of one try in three).
 */
#define NCANCEL	6	/* 4 MiB writes ahead of the FENCE job */

TEST_F(notify, cancel_held)
{
	struct kxfer_segment seg = { 0, 0, SRC_SIZE };
	struct kxfer_cancel c;
	struct kxfer_event ev[NCANCEL + 2];
	struct kxfer_job jobs[NCANCEL + 2];
	int try, i, n, taken = 0;

	for (try = 0; try < 3 && !taken; try++) {
		for (i = 0; i < NCANCEL + 2; i++) {
			memset(&jobs[i], 0, sizeof(jobs[i]));
			jobs[i].op = KXFER_OP_WRITE;
			jobs[i].pool = self->pool;
			jobs[i].peer = self->peer;
			jobs[i].remote = self->remote;
			jobs[i].segs = (uintptr_t)&seg;
			jobs[i].nsegs = 1;
			jobs[i].user_data = i;
		}
		jobs[NCANCEL].flags = KXFER_JOB_FENCE;
		jobs[NCANCEL].user_data = 0xabc0000000000000ULL | NCANCEL;
		ASSERT_EQ(0, submit(self->fd, jobs, NCANCEL + 2));
		memset(&c, 0, sizeof(c));
		c.user_data = 0xabc0000000000000ULL;
		c.mask = 0xfff0000000000000ULL;
		c.count = 99;
		ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_CANCEL, &c));
		ASSERT_GE(1, c.count);
		taken += c.count;
		for (n = 0; n < NCANCEL + 2;) {
			int k = reap(self->fd, ev + n, NCANCEL + 2 - n, 1,
				     NULL, 0);

			ASSERT_LT(0, k);
			n += k;
		}
		for (i = 0; i < NCANCEL + 2; i++) {
			int want = 0;

			ASSERT_EQ(KXFER_EV_COMPLETION, ev[i].type);
			if (ev[i].user_data == jobs[NCANCEL].user_data &&
			    c.count)
				want = -ECANCELED;
			EXPECT_EQ(want, ev[i].status);
		}
		EXPECT_EQ(0, reap(self->fd, ev, 1, 0, NULL, 0));
	}
	EXPECT_EQ(1, taken);
	/* Bad arguments */
	memset(&c, 0, sizeof(c));
	c.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_CANCEL, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0;
	c.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_CANCEL, &c));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing in flight: nothing taken */
	c.reserved[1] = 0;
	c.count = 99;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_CANCEL, &c));
	EXPECT_EQ(0, c.count);
}

/*
 * A peer of protocol version 1 cannot take a message: the job is refused
 * before anything moves, while plain notifications keep working.
 */
TEST_F(notify, older_peer)
{
	const char *addr = getenv("KXFER_SELF_ADDR");
	struct kxfer_event ev[2];
	struct kxfer_job j;
	char msgs[64], features[32];
	int n = 0;

	ASSERT_NE(NULL, addr);
	ASSERT_EQ(0, get_features(features, sizeof(features)));
	ASSERT_EQ(0, set_features("0"));
	ASSERT_EQ(0, run("kxferctl peer del %s && kxferctl peer add %s %s qps 2 %s",
			 PEER, PEER, addr, test_peer_opts()));
	ASSERT_EQ(0, lookup(self->fd, &self->peer, &self->remote));
	msg_job(&j, 0, self->peer, self->remote, NULL, "no-can-do", 1);
	EXPECT_EQ(-EOPNOTSUPP, submit(self->fd, &j, 1));
	j.flags = KXFER_JOB_NOTIFY;
	j.notify_value = 77;
	j.notify_len = 0;
	ASSERT_EQ(0, submit(self->fd, &j, 1));
	while (n < 2) {
		int k = reap(self->fd, ev + n, 2 - n, 1, msgs, sizeof(msgs));

		ASSERT_LT(0, k);
		n += k;
	}
	EXPECT_NE(ev[0].type, ev[1].type);
	EXPECT_EQ(77, ev[ev[0].type == KXFER_EV_NOTIFY ? 0 : 1].user_data);
	EXPECT_EQ(0, ev[ev[0].type == KXFER_EV_NOTIFY ? 0 : 1].msg_len);
	ASSERT_EQ(0, set_features(features));
	ASSERT_EQ(0, run("kxferctl peer del %s && kxferctl peer add %s %s qps 2 %s",
			 PEER, PEER, addr, test_peer_opts()));
	ASSERT_EQ(0, lookup(self->fd, &self->peer, &self->remote));
	msg_job(&j, 0, self->peer, self->remote, NULL, "back-again", 3);
	EXPECT_EQ(0, submit(self->fd, &j, 1));
	EXPECT_EQ(2, reap(self->fd, ev, 2, 2, msgs, sizeof(msgs)));
}

KXFER_HARNESS_MAIN
