// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: the mapped event ring (KXFER_IOC_RING_SETUP, mmap at
 * KXFER_RING_MMAP_OFFSET, KXFER_IOC_RING_MSG, KXFER_REAP_WAIT).
 *
 * Runs as root in one guest, over what suite-1.sh's t_upool_setup makes:
 * the session "uself" of this node to itself and the kernel pool "usrc"
 * exported as "usrc-x".  Every test counts events per job: exactly one
 * each, on every path (the ring, its overflow list, close, munmap, a
 * session that goes away under a batch), whatever user space writes
 * into the ring.
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

#include "kxfer.h"	/* libkxfer */
#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"
#include "test_peer.h"

#define SRC_POOL	"usrc"
#define SRC_EXPORT	"usrc-x"
#define SRC_SIZE	(4UL << 20)
#define PG		4096UL
#define MAXJ		256

static int set_param(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/kxfer/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fputs(val, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

static int lookup(int fd, const char *peer_name, uint32_t *peer,
		  uint32_t *remote)
{
	struct kxfer_peer_lookup p;
	struct kxfer_remote_lookup r;
	uint64_t end = now_ms() + 30000;

	do {
		memset(&p, 0, sizeof(p));
		strcpy(p.name, peer_name);
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

/* Jobs accepted, or -errno when none was. */
static int submit(int fd, struct kxfer_job *jobs, unsigned int n)
{
	struct kxfer_submit s = { .jobs = (uintptr_t)jobs, .njobs = n };

	if (ioctl(fd, KXFER_IOC_SUBMIT, &s))
		return -errno;
	return s.accepted;
}

static int reap(int fd, struct kxfer_event *ev, unsigned int max,
		unsigned int min, int64_t timeout_ns)
{
	struct kxfer_reap r = {
		.events = (uintptr_t)ev, .max = max, .min = min,
		.timeout_ns = timeout_ns,
	};

	if (ioctl(fd, KXFER_IOC_REAP, &r))
		return -errno;
	return r.count;
}

/* KXFER_REAP_WAIT: events ready after waiting for @min, or -errno. */
static int reap_wait(int fd, unsigned int min, int64_t timeout_ns)
{
	struct kxfer_reap r = {
		.min = min, .timeout_ns = timeout_ns, .flags = KXFER_REAP_WAIT,
	};

	if (ioctl(fd, KXFER_IOC_REAP, &r))
		return -errno;
	return r.count;
}

struct ring {
	struct kxfer_ring *hdr;
	struct kxfer_event *ev;
	size_t len;
};

static int ring_map(int fd, struct ring *rg)
{
	struct kxfer_ring_setup rs = { 0 };

	if (ioctl(fd, KXFER_IOC_RING_SETUP, &rs))
		return -errno;
	rg->len = rs.mmap_len;
	rg->hdr = mmap(NULL, rs.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, rs.mmap_offset);
	if (rg->hdr == MAP_FAILED)
		return -errno;
	rg->ev = (void *)((char *)rg->hdr + rs.events_off);
	return 0;
}

/* Take one event from the ring, or return 0 when it is empty. */
static int ring_take(struct ring *rg, struct kxfer_event *ev, uint32_t *idx)
{
	uint32_t tail = rg->hdr->tail;
	uint32_t head = __atomic_load_n(&rg->hdr->head, __ATOMIC_ACQUIRE);

	if (head == tail)
		return 0;
	*ev = rg->ev[tail & rg->hdr->mask];
	if (idx)
		*idx = tail;
	__atomic_store_n(&rg->hdr->tail, tail + 1, __ATOMIC_RELEASE);
	return 1;
}

static void write_job(struct kxfer_job *j, struct kxfer_segment *seg,
		      uint32_t pool, uint32_t peer, uint32_t remote,
		      unsigned int i, uint64_t user_data)
{
	*seg = (struct kxfer_segment){ (i % 256) * PG,
				       SRC_SIZE / 2 + (i % 256) * PG, PG };
	memset(j, 0, sizeof(*j));
	j->op = KXFER_OP_WRITE;
	j->pool = pool;
	j->peer = peer;
	j->remote = remote;
	j->segs = (uintptr_t)seg;
	j->nsegs = 1;
	j->user_data = user_data;
}

FIXTURE(ring) {
	int fd;
	uint32_t pool, peer, remote, sub;
	struct kxfer_segment segs[MAXJ];
	struct kxfer_job jobs[MAXJ];
	unsigned int seen[MAXJ];
};

FIXTURE_SETUP(ring)
{
	struct kxfer_pool_attach a;

	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
	memset(&a, 0, sizeof(a));
	strcpy(a.name, SRC_POOL);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	self->pool = a.handle;
	ASSERT_EQ(0, lookup(self->fd, PEER, &self->peer, &self->remote));
	memset(self->seen, 0, sizeof(self->seen));
}

FIXTURE_TEARDOWN(ring)
{
	close(self->fd);
}

/* Make @n WRITE jobs, user_data 1000 + i. */
static void make_jobs(FIXTURE_DATA(ring) *self, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		write_job(&self->jobs[i], &self->segs[i], self->pool,
			  self->peer, self->remote, i, 1000 + i);
}

/* Count one completion; 0 if it is one of ours and the first. */
static int count_ev(FIXTURE_DATA(ring) *self, const struct kxfer_event *ev,
		    unsigned int n)
{
	if (ev->type != KXFER_EV_COMPLETION || ev->user_data < 1000 ||
	    ev->user_data >= 1000 + n)
		return -1;
	return self->seen[ev->user_data - 1000]++ ? -1 : 0;
}

/* Take @n completions from the ring, sleeping in REAP when it is empty. */
static int drain_ring(FIXTURE_DATA(ring) *self, struct ring *rg,
		      unsigned int n)
{
	uint64_t end = now_ms() + 30000;
	struct kxfer_event ev;
	unsigned int got = 0;

	while (got < n && now_ms() < end) {
		if (!ring_take(rg, &ev, NULL)) {
			if (reap_wait(self->fd, 1, 1000000000LL) < 0)
				return -1;
			continue;
		}
		if (count_ev(self, &ev, n) || ev.status)
			return -1;
		got++;
	}
	return got;
}

TEST_F(ring, query)
{
	struct kxfer_query q = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & KXFER_FEAT_RING);
}

/* Each bad input: its errno, and nothing changed. */
TEST_F(ring, bad_input)
{
	struct kxfer_ring_setup rs = { 0 };
	struct kxfer_ring_msg m = { 0 };
	struct kxfer_event ev;
	struct kxfer_reap r;
	struct ring rg;
	void *p;

	/* No ring yet: not mappable. */
	p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);

	rs.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_SETUP, &rs));
	EXPECT_EQ(EINVAL, errno);
	rs.flags = 0;
	rs.reserved0 = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_SETUP, &rs));
	EXPECT_EQ(EINVAL, errno);
	rs.reserved0 = 0;
	rs.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_SETUP, &rs));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_SETUP, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);

	memset(&rs, 0, sizeof(rs));
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_RING_SETUP, &rs));
	EXPECT_LT(0, rs.entries);
	EXPECT_EQ(0, rs.entries & (rs.entries - 1));
	EXPECT_EQ(KXFER_RING_MMAP_OFFSET, rs.mmap_offset);
	EXPECT_EQ(sizeof(struct kxfer_ring), rs.events_off);
	EXPECT_EQ(0, rs.mmap_len % PG);
	EXPECT_LE(rs.events_off + rs.entries * sizeof(ev), rs.mmap_len);

	/* Length, offset, sharing, protection. */
	errno = 0;
	p = mmap(NULL, rs.mmap_len - PG, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, rs.mmap_len + PG, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, rs.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, PG);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, rs.mmap_len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, rs.mmap_len, PROT_READ | PROT_EXEC, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);

	/* Twice is the same ring; it maps. */
	ASSERT_EQ(0, ring_map(self->fd, &rg));
	EXPECT_EQ(rs.mmap_len, rg.len);
	EXPECT_EQ(rs.entries, rg.hdr->entries);
	EXPECT_EQ(rs.entries - 1, rg.hdr->mask);
	EXPECT_EQ(rs.events_off, rg.hdr->events_off);
	EXPECT_EQ(rg.hdr->head, rg.hdr->tail);

	/* RING_MSG: flags, reserved, no such event, fault. */
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_MSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.reserved[0] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_MSG, &m));
	EXPECT_EQ(EINVAL, errno);
	m.reserved[0] = 0;
	m.index = rg.hdr->head;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_MSG, &m));
	EXPECT_EQ(ENOENT, errno);
	m.index = rg.hdr->head - 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_MSG, &m));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_RING_MSG, (void *)8));
	EXPECT_EQ(EFAULT, errno);

	/* REAP_WAIT takes nothing, so it names no buffer. */
	memset(&r, 0, sizeof(r));
	r.flags = KXFER_REAP_WAIT;
	r.events = (uintptr_t)&ev;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REAP, &r));
	EXPECT_EQ(EINVAL, errno);
	r.events = 0;
	r.max = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REAP, &r));
	EXPECT_EQ(EINVAL, errno);
	r.max = 0;
	r.msgs_len = 8;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REAP, &r));
	EXPECT_EQ(EINVAL, errno);
	r.msgs_len = 0;
	r.min = rs.entries + 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REAP, &r));
	EXPECT_EQ(EINVAL, errno);
	r.min = 0;
	r.flags = 1U << 7;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REAP, &r));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, reap_wait(self->fd, 0, 0));
	/* Without the flag, a REAP with no room is refused as before. */
	EXPECT_EQ(-EINVAL, reap(self->fd, &ev, 0, 0, 0));
	munmap(rg.hdr, rg.len);
}

/* Every job's event comes through the ring, once, and not again by REAP. */
TEST_F(ring, one_to_one)
{
	struct kxfer_event ev[4];
	unsigned int i, n = 200, done = 0;
	struct ring rg;

	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, n);
	while (done < n) {
		int k = submit(self->fd, self->jobs + done,
			       n - done > 32 ? 32 : n - done);

		ASSERT_LT(0, k);
		done += k;
	}
	ASSERT_EQ(n, drain_ring(self, &rg, n));
	for (i = 0; i < n; i++)
		EXPECT_EQ(1, self->seen[i]);
	EXPECT_EQ(0, reap(self->fd, ev, 4, 0, 0));
	EXPECT_EQ(0, reap_wait(self->fd, 1, 200000000LL));
	EXPECT_EQ(rg.hdr->head, rg.hdr->tail);
	munmap(rg.hdr, rg.len);
}

/*
 * A sleeping REAP, one job at a time, then one that asks for more than
 * will come.  On the polled session (ring_test_poll) these are the
 * hybrid waits of event.c: a first sleep of half the learnt wait, a spin,
 * slices; every job still gets its one event, and a timeout is kept,
 * never cut short, by whichever phase it falls in.
 */
TEST_F(ring, sleeping_reap)
{
	struct kxfer_event ev[8];
	unsigned int i, n = 100, got = 0;
	unsigned long long t0, took;
	int k;

	make_jobs(self, n);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(1, submit(self->fd, &self->jobs[i], 1));
		k = reap(self->fd, ev, 8, 1, 30000000000LL);
		ASSERT_EQ(1, k);
		EXPECT_EQ(0, ev[0].status);
		EXPECT_EQ(0, count_ev(self, &ev[0], n));
	}
	for (i = 0; i < n; i++)
		EXPECT_EQ(1, self->seen[i]);

	/* Four jobs, a REAP for five: the four, at the timeout. */
	memset(self->seen, 0, sizeof(self->seen));
	ASSERT_EQ(4, submit(self->fd, self->jobs, 4));
	t0 = now_ms();
	k = reap(self->fd, ev, 8, 5, 200000000LL);
	took = now_ms() - t0;
	ASSERT_LE(0, k);
	got = k;
	/* a job's event may come after a short timeout on a slow host */
	while (got < 4) {
		k = reap(self->fd, ev + got, 8 - got, 1, 30000000000LL);
		ASSERT_LT(0, k);
		got += k;
	}
	EXPECT_EQ(4, got);
	for (i = 0; i < got; i++) {
		EXPECT_EQ(0, ev[i].status);
		EXPECT_EQ(0, count_ev(self, &ev[i], 4));
	}
	/* the clock read is in ms: 200 ms is at least 199 of them */
	EXPECT_LE(199, took);
	TH_LOG("a REAP for 5 of 4 jobs returned after %llu ms", took);
	EXPECT_EQ(0, reap(self->fd, ev, 8, 0, 0));
}

/*
 * Events posted before the ring was set up are in it; REAP and the ring
 * share one tail.
 */
TEST_F(ring, setup_after_jobs)
{
	struct kxfer_event ev[8];
	struct ring rg;
	unsigned int i;
	int k;

	make_jobs(self, 16);
	ASSERT_EQ(16, submit(self->fd, self->jobs, 16));
	ASSERT_EQ(16, reap_wait(self->fd, 16, 20000000000LL));
	k = reap(self->fd, ev, 4, 4, 0);
	ASSERT_EQ(4, k);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, count_ev(self, &ev[i], 16));
	ASSERT_EQ(0, ring_map(self->fd, &rg));
	EXPECT_EQ(12, rg.hdr->head - rg.hdr->tail);
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(1, ring_take(&rg, &ev[0], NULL));
		ASSERT_EQ(0, count_ev(self, &ev[0], 16));
	}
	/* REAP goes on from the ring's tail and moves it. */
	ASSERT_EQ(6, reap(self->fd, ev, 8, 0, 0));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, count_ev(self, &ev[i], 16));
	EXPECT_EQ(rg.hdr->head, rg.hdr->tail);
	for (i = 0; i < 16; i++)
		EXPECT_EQ(1, self->seen[i]);
	munmap(rg.hdr, rg.len);
}

/*
 * A tail past the head, "negative", huge, or moved backwards is ignored:
 * no event is freed by it, lost or given twice, and the room kept for
 * jobs in flight stays.  The head is the kernel's own.
 */
TEST_F(ring, hostile_tail)
{
	uint32_t bad[5], t0, h0, i;
	struct kxfer_event ev[8];
	struct ring rg;
	int k;

	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, 64);
	ASSERT_EQ(8, submit(self->fd, self->jobs, 8));
	ASSERT_EQ(8, reap_wait(self->fd, 8, 20000000000LL));
	t0 = rg.hdr->tail;
	h0 = rg.hdr->head;
	ASSERT_EQ(8, h0 - t0);
	bad[0] = h0 + 1;
	bad[1] = (uint32_t)-1 + t0;	/* one behind */
	bad[2] = t0 + 0x80000000U;
	bad[3] = h0 + rg.hdr->entries;
	bad[4] = 0xffffffffU;
	for (i = 0; i < 5; i++) {
		rg.hdr->tail = bad[i];
		rg.hdr->head = t0 + 3;	/* never read back */
		EXPECT_EQ(8, reap_wait(self->fd, 0, 0));
		/*
		 * Just past the head becomes a valid tail once an event gets
		 * there; the others stay out of reach (the head never runs
		 * more than the ring's entries past the kernel's tail).
		 */
		if (i == 0)
			rg.hdr->tail = t0;
		/* Submitting takes the tail too: still only room for the rest. */
		k = submit(self->fd, self->jobs + 8, 1);
		EXPECT_EQ(1, k);
		if (k == 1)
			ASSERT_EQ(9, reap_wait(self->fd, 9, 20000000000LL));
		/* The earlier events are intact. */
		rg.hdr->tail = t0;
		k = reap(self->fd, ev, 1, 1, 0);
		ASSERT_EQ(1, k);
		EXPECT_EQ(0, count_ev(self, &ev[0], 64));
		/* Give the next a fresh job id. */
		self->jobs[8].user_data = self->jobs[9 + i].user_data;
		t0++;
	}
	/* Back to a valid tail: 8 - 5 + 5 ready, each once. */
	EXPECT_EQ(t0, rg.hdr->tail);
	EXPECT_EQ(8, reap_wait(self->fd, 0, 0));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(1, ring_take(&rg, &ev[0], NULL));
		EXPECT_EQ(0, count_ev(self, &ev[0], 64));
	}
	EXPECT_EQ(0, ring_take(&rg, &ev[0], NULL));
	EXPECT_EQ(0, reap(self->fd, ev, 8, 0, 0));
	for (i = 0; i < 13; i++)
		EXPECT_EQ(1, self->seen[i]);
	munmap(rg.hdr, rg.len);
}

/*
 * A ring too small for the notifications: they wait on the overflow list
 * (KXFER_RING_F_NEED_REAP) and come in as room is made, each once, with
 * its message (KXFER_IOC_RING_MSG).
 */
TEST_F(ring, overflow_notes)
{
	struct kxfer_notify_sub ns = { 0 };
	unsigned int i, comps = 0, notes = 0, need = 0, n = 16;
	unsigned int note_seen[16] = { 0 };
	struct kxfer_ring_msg m;
	struct kxfer_event ev;
	char msgs[16][16], buf[64];
	uint64_t end;
	struct ring rg;
	uint32_t idx;
	int fd;

	/* A file whose ring has 16 entries. */
	ASSERT_EQ(0, set_param("max_inflight", "16"));
	fd = open("/dev/kxfer", O_RDWR);
	ASSERT_EQ(0, set_param("max_inflight", "1024"));
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lookup(fd, PEER, &self->peer, &self->remote));
	strcpy(ns.name, SRC_EXPORT);
	ASSERT_EQ(0, ioctl(fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns));
	ASSERT_EQ(0, ring_map(fd, &rg));
	ASSERT_EQ(16, rg.hdr->entries);
	for (i = 0; i < n; i++) {
		struct kxfer_job *j = &self->jobs[i];

		snprintf(msgs[i], sizeof(msgs[i]), "note-%u", i);
		memset(j, 0, sizeof(*j));
		j->op = KXFER_OP_WRITE;
		j->peer = self->peer;
		j->remote = self->remote;
		j->user_data = 1000 + i;
		j->flags = KXFER_JOB_NOTIFY | KXFER_JOB_NOTIFY_MSG;
		j->notify_value = (uintptr_t)msgs[i];
		j->notify_len = strlen(msgs[i]);
	}
	/*
	 * Notifications that come back while the SUBMIT runs take free
	 * slots, and a job is accepted only with a slot kept for its
	 * completion: at worst each job's notification came back before
	 * the next was submitted, a slot for each, so half are accepted.
	 */
	n = submit(fd, self->jobs, n);
	ASSERT_LE(8, (int)n);
	TH_LOG("%u of 16 jobs accepted", n);
	/* The ring fills with completions and notes; wait for 16. */
	ASSERT_EQ(16, reap_wait(fd, 16, 20000000000LL));
	usleep(300000);
	end = now_ms() + 30000;
	while ((comps < n || notes < n) && now_ms() < end) {
		if (rg.hdr->flags & KXFER_RING_F_NEED_REAP)
			need++;
		if (rg.hdr->head == rg.hdr->tail) {
			/* Room made: REAP moves the waiting notes in. */
			ASSERT_LE(0, reap_wait(fd, 1, 1000000000LL));
			continue;
		}
		idx = rg.hdr->tail;
		ev = rg.ev[idx & rg.hdr->mask];
		if (ev.type == KXFER_EV_NOTIFY) {
			ASSERT_EQ(KXFER_MSG_RING, ev.msg_off);
			memset(&m, 0, sizeof(m));
			m.index = idx;
			m.buf = (uintptr_t)buf;
			m.len = 2;
			ASSERT_EQ(-1, ioctl(fd, KXFER_IOC_RING_MSG, &m));
			EXPECT_EQ(ENOSPC, errno);
			EXPECT_EQ(ev.msg_len, m.msg_len);
			memset(buf, 0, sizeof(buf));
			m.len = sizeof(buf);
			ASSERT_EQ(0, ioctl(fd, KXFER_IOC_RING_MSG, &m));
			ASSERT_EQ(ev.msg_len, m.msg_len);
			ASSERT_EQ(0, strncmp(buf, "note-", 5));
			i = atoi(buf + 5);
			ASSERT_GT(n, i);
			EXPECT_EQ(0, note_seen[i]++);
			EXPECT_EQ(ns.handle, ev.sub);
			notes++;
		} else {
			ASSERT_EQ(KXFER_EV_COMPLETION, ev.type);
			EXPECT_EQ(0, ev.status);
			EXPECT_EQ(0, count_ev(self, &ev, n));
			comps++;
		}
		__atomic_store_n(&rg.hdr->tail, idx + 1, __ATOMIC_RELEASE);
		/* Read past: its message is gone. */
		if (ev.type == KXFER_EV_NOTIFY) {
			m.index = idx;
			EXPECT_EQ(-1, ioctl(fd, KXFER_IOC_RING_MSG, &m));
			EXPECT_EQ(ENOENT, errno);
		}
	}
	EXPECT_EQ(n, comps);
	EXPECT_EQ(n, notes);
	/* More events than entries: notes waited on the overflow list. */
	EXPECT_TRUE(need > 0 || 2 * n <= 16);
	EXPECT_EQ(0, rg.hdr->flags & KXFER_RING_F_NEED_REAP);
	/* Set on a file that used a polled session, and only there. */
	EXPECT_EQ(!strcmp(PEER, "upoll") ? KXFER_RING_F_POLL : 0,
		  rg.hdr->flags & KXFER_RING_F_POLL);
	EXPECT_EQ(0, reap_wait(fd, 1, 300000000LL));
	munmap(rg.hdr, rg.len);
	close(fd);
}

/*
 * Closed with jobs in flight: the mapping keeps the file, and the ring
 * still gets each job's event.
 */
TEST_F(ring, close_inflight)
{
	struct kxfer_event ev;
	unsigned int i, got = 0, n = 128;
	uint64_t end;
	struct ring rg;

	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, n);
	for (i = 0; i < n; i += 32)
		ASSERT_EQ(32, submit(self->fd, self->jobs + i, 32));
	close(self->fd);
	self->fd = open("/dev/null", O_RDONLY);
	end = now_ms() + 30000;
	while (got < n && now_ms() < end) {
		if (!ring_take(&rg, &ev, NULL)) {
			usleep(1000);
			continue;
		}
		EXPECT_EQ(0, count_ev(self, &ev, n));
		got++;
	}
	EXPECT_EQ(n, got);
	usleep(200000);
	EXPECT_EQ(0, ring_take(&rg, &ev, NULL));
	munmap(rg.hdr, rg.len);
}

/* Closed and unmapped with jobs in flight: they end, nothing is left. */
TEST_F(ring, close_unmap_inflight)
{
	struct ring rg;
	unsigned int i;

	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, 128);
	for (i = 0; i < 128; i += 32)
		ASSERT_EQ(32, submit(self->fd, self->jobs + i, 32));
	munmap(rg.hdr, rg.len);
	close(self->fd);
	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
}

/* Unmapped: REAP takes what the ring held, and what comes after. */
TEST_F(ring, munmap_then_reap)
{
	struct kxfer_event ev[64];
	unsigned int i, got = 0;
	struct ring rg;
	int k;

	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, 64);
	ASSERT_EQ(32, submit(self->fd, self->jobs, 32));
	ASSERT_EQ(32, reap_wait(self->fd, 32, 20000000000LL));
	ASSERT_EQ(1, ring_take(&rg, &ev[0], NULL));
	ASSERT_EQ(0, count_ev(self, &ev[0], 64));
	munmap(rg.hdr, rg.len);
	ASSERT_EQ(32, submit(self->fd, self->jobs + 32, 32));
	while (got < 63) {
		k = reap(self->fd, ev, 64, 1, 20000000000LL);
		ASSERT_LT(0, k);
		for (i = 0; i < (unsigned int)k; i++)
			EXPECT_EQ(0, count_ev(self, &ev[i], 64));
		got += k;
	}
	EXPECT_EQ(0, reap(self->fd, ev, 64, 0, 0));
	/* Mapped again: the same ring, empty. */
	ASSERT_EQ(0, ring_map(self->fd, &rg));
	EXPECT_EQ(rg.hdr->head, rg.hdr->tail);
	munmap(rg.hdr, rg.len);
	for (i = 0; i < 64; i++)
		EXPECT_EQ(1, self->seen[i]);
}

/*
 * A session that goes away under a batch: every accepted job still ends
 * once, through the ring.
 */
TEST_F(ring, session_lost_mid_batch)
{
	const char *addr = getenv("KXFER_SELF_ADDR");
	unsigned int i, done = 0, n = 192, failed = 0;
	struct kxfer_event ev;
	uint64_t end;
	struct ring rg;
	int k;

	if (!addr)
		SKIP(return, "KXFER_SELF_ADDR is not set");
	ASSERT_EQ(0, run("kxferctl peer add rlost %s qps 2 %s", addr,
			 test_peer_opts()));
	ASSERT_EQ(0, lookup(self->fd, "rlost", &self->peer, &self->remote));
	ASSERT_EQ(0, ring_map(self->fd, &rg));
	make_jobs(self, n);
	for (i = 0; i < n; i++)
		self->segs[i].len = 16 * PG;
	while (done < n) {
		k = submit(self->fd, self->jobs + done, 64);
		if (k <= 0)
			break;
		done += k;
		if (done == 64)
			ASSERT_EQ(0, run("kxferctl peer del rlost"));
	}
	end = now_ms() + 30000;
	for (i = 0; i < done && now_ms() < end;) {
		if (!ring_take(&rg, &ev, NULL)) {
			ASSERT_LE(0, reap_wait(self->fd, 1, 1000000000LL));
			continue;
		}
		EXPECT_EQ(0, count_ev(self, &ev, n));
		if (ev.status)
			failed++;
		i++;
	}
	EXPECT_EQ(done, i);
	EXPECT_LE(64, done);
	EXPECT_EQ(0, reap_wait(self->fd, 1, 300000000LL));
	TH_LOG("%u jobs accepted, %u failed", done, failed);
	munmap(rg.hdr, rg.len);
}

/*
 * libkxfer reads the ring when the module has it: the same events, each
 * once, with their messages; LIBKXFER_NO_RING=1 keeps REAP.
 */
TEST_F(ring, libkxfer)
{
	unsigned int i, which, comps = 0, notes = 0, n = 40, nn = 4;
	struct kxfer_notify_sub ns = { 0 };
	struct kxfer_pool_attach a;
	unsigned int note_seen[4] = { 0 };
	struct kxfer_event ev[8];
	char msgs[4][16], buf[256];
	struct kxfer *kx, *kx2;
	uint64_t end;
	int fd, k;

	ASSERT_EQ(0, kxfer_open(&kx));
	ASSERT_EQ(1, kxfer_ring_mapped(kx));
	fd = kxfer_fd(kx);
	memset(&a, 0, sizeof(a));
	strcpy(a.name, SRC_POOL);
	ASSERT_EQ(0, ioctl(fd, KXFER_IOC_POOL_ATTACH, &a));
	ASSERT_EQ(0, lookup(fd, PEER, &self->peer, &self->remote));
	strcpy(ns.name, SRC_EXPORT);
	ASSERT_EQ(0, ioctl(fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns));
	for (i = 0; i < n; i++)
		write_job(&self->jobs[i], &self->segs[i], a.handle,
			  self->peer, self->remote, i, 1000 + i);
	for (i = 0; i < nn; i++) {
		struct kxfer_job *j = &self->jobs[n - nn + i];

		snprintf(msgs[i], sizeof(msgs[i]), "lib-%u", i);
		j->flags = KXFER_JOB_NOTIFY | KXFER_JOB_NOTIFY_MSG;
		j->notify_value = (uintptr_t)msgs[i];
		j->notify_len = strlen(msgs[i]);
	}
	ASSERT_EQ(0, kxfer_submit(kx, self->jobs, n, NULL));
	end = now_ms() + 30000;
	while ((comps < n || notes < nn) && now_ms() < end) {
		k = kxfer_reap_msgs(kx, ev, 8, 1, 1000000000LL, 0, buf,
				    sizeof(buf));
		ASSERT_LE(0, k);
		for (i = 0; i < (unsigned int)k; i++) {
			if (ev[i].type == KXFER_EV_COMPLETION) {
				EXPECT_EQ(0, ev[i].status);
				EXPECT_EQ(0, count_ev(self, &ev[i], n));
				comps++;
				continue;
			}
			ASSERT_EQ(KXFER_EV_NOTIFY, ev[i].type);
			ASSERT_GE(sizeof(buf) - ev[i].msg_len, ev[i].msg_off);
			ASSERT_EQ(0, strncmp(buf + ev[i].msg_off, "lib-", 4));
			which = buf[ev[i].msg_off + 4] - '0';
			ASSERT_GT(nn, which);
			EXPECT_EQ(0, note_seen[which]++);
			notes++;
		}
	}
	EXPECT_EQ(n, comps);
	EXPECT_EQ(nn, notes);
	EXPECT_EQ(0, kxfer_reap(kx, ev, 8, 0, 0, 0));
	/* A timeout with nothing to come: 0 events, no error. */
	EXPECT_EQ(0, kxfer_reap(kx, ev, 8, 1, 100000000LL, 0));
	EXPECT_EQ(-EINVAL, kxfer_reap(kx, ev, 0, 0, 0, 0));
	EXPECT_EQ(-EINVAL, kxfer_reap(kx, ev, 2, 3, 0, 0));
	EXPECT_EQ(-EINVAL, kxfer_reap(kx, ev, 2, 1, 0, KXFER_REAP_WAIT));
	kxfer_close(kx);

	setenv("LIBKXFER_NO_RING", "1", 1);
	ASSERT_EQ(0, kxfer_open(&kx2));
	unsetenv("LIBKXFER_NO_RING");
	EXPECT_EQ(0, kxfer_ring_mapped(kx2));
	EXPECT_EQ(0, kxfer_reap(kx2, ev, 8, 0, 0, 0));
	kxfer_close(kx2);
}

KXFER_HARNESS_MAIN
