// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: pools over memory the process already has
 * (KXFER_IOC_POOL_USER, KXFER_IOC_POOL_DMABUF) and their exports
 * (KXFER_IOC_EXPORT_ADD, KXFER_IOC_EXPORT_DEL).
 *
 * Runs as root in one guest with kxfer.ko loaded, kxferctl on PATH, and
 * what suite-1.sh's t_upool sets up: a session "uself" of this node to
 * itself (2 QPs, rxe loopback), a kernel pool "usrc" (4 MiB, mode 0666)
 * exported as "usrc-x" (read, write, atomic).  Peers reach the user
 * pools through that session: every byte the NIC moves is checked in
 * the owner's own mapping.  Every invalid input is checked alone, with
 * its exact errno, and changes nothing (the module's pinned bytes stay).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include <linux/kxfer.h>

#include "kmod/kxfer_testbuf.h"

#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"
#include "test_peer.h"

#define SRC_POOL	"usrc"
#define SRC_EXPORT	"usrc-x"
#define SRC_SIZE	(4UL << 20)
#define NOBODY		65534
#define PG		4096UL

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

static uint64_t pool_mem_used(int fd)
{
	struct kxfer_query q = { 0 };

	if (ioctl(fd, KXFER_IOC_QUERY, &q))
		return ~0ULL;
	return q.pool_mem_used;
}

/* VmPin of this process, in kB, or -1. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void user_args(struct kxfer_pool_user *u, const char *name, void *addr,
		      uint64_t len)
{
	memset(u, 0, sizeof(*u));
	strncpy(u->name, name, sizeof(u->name) - 1);
	u->addr = (uintptr_t)addr;
	u->len = len;
	u->handle = 0xcccccccc;
}

static int reg_user(int fd, const char *name, void *addr, uint64_t len,
		    uint32_t *handle)
{
	struct kxfer_pool_user u;
	int ret;

	user_args(&u, name, addr, len);
	ret = ioctl(fd, KXFER_IOC_POOL_USER, &u);
	if (!ret && handle)
		*handle = u.handle;
	return ret ? -errno : 0;
}

static void export_args(struct kxfer_export_add *e, const char *name,
			uint32_t pool, uint64_t off, uint64_t len,
			uint32_t access)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->name, name, strnlen(name, sizeof(e->name) - 1));
	e->pool = pool;
	e->offset = off;
	e->len = len;
	e->access = access;
}

static int export_add(int fd, const char *name, uint32_t pool, uint64_t off,
		      uint64_t len, uint32_t access)
{
	struct kxfer_export_add e;

	export_args(&e, name, pool, off, len, access);
	return ioctl(fd, KXFER_IOC_EXPORT_ADD, &e) ? -errno : 0;
}

static int export_del(int fd, const char *name)
{
	struct kxfer_export_del d;

	memset(&d, 0, sizeof(d));
	strncpy(d.name, name, sizeof(d.name) - 1);
	return ioctl(fd, KXFER_IOC_EXPORT_DEL, &d) ? -errno : 0;
}

static int detach(int fd, uint32_t handle)
{
	struct kxfer_pool_detach d = { .handle = handle };

	return ioctl(fd, KXFER_IOC_POOL_DETACH, &d) ? -errno : 0;
}

static int peer_lookup(int fd, uint32_t *handle)
{
	struct kxfer_peer_lookup p;

	memset(&p, 0, sizeof(p));
	strcpy(p.name, PEER);
	if (ioctl(fd, KXFER_IOC_PEER_LOOKUP, &p))
		return -errno;
	*handle = p.handle;
	return 0;
}

/*
 * The remote export as the session learned it, waiting up to 20 s for
 * the advertisement (and for the session, which a withdrawn export
 * under traffic may have sent through a reconnect).
 */
static int remote_wait(int fd, uint32_t peer, const char *name,
		       struct kxfer_remote_lookup *r)
{
	uint64_t end = now_ms() + 20000;
	int ret;

	do {
		memset(r, 0, sizeof(*r));
		r->peer = peer;
		strncpy(r->name, name, sizeof(r->name) - 1);
		ret = ioctl(fd, KXFER_IOC_REMOTE_LOOKUP, r) ? -errno : 0;
		if (!ret)
			return 0;
		usleep(20000);
	} while (now_ms() < end);
	return ret;
}

/* Until the remote export is gone from the session's table. */
static int remote_gone(int fd, uint32_t peer, const char *name)
{
	struct kxfer_remote_lookup r;
	uint64_t end = now_ms() + 20000;

	do {
		memset(&r, 0, sizeof(r));
		r.peer = peer;
		strncpy(r.name, name, sizeof(r.name) - 1);
		if (ioctl(fd, KXFER_IOC_REMOTE_LOOKUP, &r) && errno == ENOENT)
			return 0;
		usleep(20000);
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

/* Reap exactly @n events within 20 s; how many came. */
static int reap(int fd, struct kxfer_event *ev, unsigned int n)
{
	unsigned int got = 0;
	uint64_t end = now_ms() + 20000;

	while (got < n && now_ms() < end) {
		struct kxfer_reap r = {
			.events = (uintptr_t)(ev + got), .max = n - got,
			.min = 1, .timeout_ns = 100000000,
		};

		if (ioctl(fd, KXFER_IOC_REAP, &r) && errno != EINTR)
			return -errno;
		got += r.count;
	}
	return got;
}

/* One job, its one completion; the event's status. */
static int job_run(int fd, struct kxfer_job *job)
{
	struct kxfer_event ev;
	int ret = submit(fd, job, 1);

	if (ret)
		return ret;
	if (reap(fd, &ev, 1) != 1 || ev.type != KXFER_EV_COMPLETION ||
	    ev.user_data != job->user_data)
		return -EPROTO;
	return ev.status;
}

static void job_init(struct kxfer_job *j, uint32_t op, uint32_t pool,
		     uint32_t peer, uint32_t remote, struct kxfer_segment *segs,
		     uint32_t nsegs, uint64_t user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = op;
	j->pool = pool;
	j->peer = peer;
	j->remote = remote;
	j->segs = (uintptr_t)segs;
	j->nsegs = nsegs;
	j->user_data = user_data;
}

static void fill(void *p, size_t len, uint32_t seed)
{
	uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

static int check(const void *p, size_t len, uint32_t seed)
{
	const uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		if (w[i] != seed * 2654435761u + (uint32_t)i)
			return -1;
	return 0;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---------------------------------------------------------------------- */

FIXTURE(upool) {
	int fd;
	uint32_t peer;
	uint32_t src;		/* usrc, attached */
	uint8_t *src_map;
	uint64_t used0;
};

FIXTURE_SETUP(upool)
{
	struct kxfer_pool_attach a;

	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, peer_lookup(self->fd, &self->peer));
	memset(&a, 0, sizeof(a));
	strcpy(a.name, SRC_POOL);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	self->src = a.handle;
	self->src_map = mmap(NULL, SRC_SIZE, PROT_READ | PROT_WRITE,
			     MAP_SHARED, self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->src_map);
	self->used0 = pool_mem_used(self->fd);
}

FIXTURE_TEARDOWN(upool)
{
	munmap(self->src_map, SRC_SIZE);
	close(self->fd);
	set_param("user_pool_mem_max", "1099511627776");
	set_param("user_exports", "Y");
}

TEST_F(upool, query_features)
{
	struct kxfer_query q = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & KXFER_FEAT_USER_POOLS);
	EXPECT_TRUE(q.features & KXFER_FEAT_DMABUF_POOLS);
}

/* Every bad argument alone, with its errno; nothing is pinned by any. */
TEST_F(upool, register_refusals)
{
	size_t len = 64 * PG;
	uint8_t *buf = map_anon(len), *ro, *hole;
	struct kxfer_pool_user u;

	ASSERT_NE(NULL, buf);
	user_args(&u, "ubad", buf, len);
	u.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_USER, &u));
	EXPECT_EQ(EINVAL, errno);
	user_args(&u, "ubad", buf, len);
	u.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_USER, &u));
	EXPECT_EQ(EINVAL, errno);
	user_args(&u, "", buf, len);
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_USER, &u));
	EXPECT_EQ(EINVAL, errno);
	user_args(&u, "ubad", buf, len);
	memset(u.name, 'x', sizeof(u.name));	/* no NUL */
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_USER, &u));
	EXPECT_EQ(EINVAL, errno);
	/* Names travel to peers: only what every interface takes */
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "u bad", buf, len, NULL));
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "ubad\n", buf, len, NULL));
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "ubad", buf + 8, len - PG, NULL));
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "ubad", buf, 0, NULL));
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "ubad", buf, PG + 512, NULL));
	EXPECT_EQ(-EINVAL, reg_user(self->fd, "ubad", (void *)-PG, 2 * PG,
				    NULL));
	/* The name of a kernel pool */
	EXPECT_EQ(-EEXIST, reg_user(self->fd, SRC_POOL, buf, len, NULL));

	/* A hole in the middle: nothing of it stays pinned */
	hole = map_anon(3 * PG);
	ASSERT_NE(NULL, hole);
	ASSERT_EQ(0, munmap(hole + PG, PG));
	EXPECT_EQ(-EFAULT, reg_user(self->fd, "ubad", hole, 3 * PG, NULL));
	/* Not writable */
	ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EACCES, reg_user(self->fd, "ubad", ro, len, NULL));

	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	EXPECT_NE(0, run("kxferctl pool show ubad >/dev/null 2>&1"));
	munmap(ro, len);
	munmap(hole, PG);
	munmap(hole + 2 * PG, PG);
	munmap(buf, len);
}

/* The administrator's bounds */
TEST_F(upool, admin_bounds)
{
	size_t len = 64 * PG;
	uint8_t *buf = map_anon(len);
	uint32_t h;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, set_param("user_pool_mem_max", "0"));
	EXPECT_EQ(-EPERM, reg_user(self->fd, "ubound", buf, len, NULL));
	ASSERT_EQ(0, set_param("user_pool_mem_max", "131072"));
	EXPECT_EQ(-ENOSPC, reg_user(self->fd, "ubound", buf, len, NULL));
	EXPECT_EQ(0, reg_user(self->fd, "ubound", buf, 32 * PG, &h));
	EXPECT_EQ(-ENOSPC, reg_user(self->fd, "ubound2", buf + 32 * PG,
				    32 * PG, NULL));
	ASSERT_EQ(0, set_param("user_exports", "N"));
	EXPECT_EQ(-EPERM, export_add(self->fd, "ubound-x", h, 0, PG,
				     KXFER_ACCESS_WRITE));
	ASSERT_EQ(0, set_param("user_exports", "Y"));
	EXPECT_EQ(0, export_add(self->fd, "ubound-x", h, 0, PG,
				KXFER_ACCESS_WRITE));
	/* Its end ends the export too */
	EXPECT_EQ(0, detach(self->fd, h));
	EXPECT_NE(0, run("kxferctl export show ubound-x >/dev/null 2>&1"));
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	munmap(buf, len);
}

/* Child as nobody: RLIMIT_MEMLOCK of 64 KiB, no CAP_IPC_LOCK. */
static int memlock_child(void)
{
	struct rlimit rl = { 64 * 1024, 64 * 1024 };
	uint8_t *buf = map_anon(64 * PG);
	uint32_t h;
	int fd;

	if (!buf || setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return 10;
	fd = open("/dev/kxfer", O_RDWR);
	if (fd < 0)
		return 11;
	if (reg_user(fd, "umemlock", buf, 64 * PG, NULL) != -ENOMEM)
		return 12;
	if (vm_pin_kb() != 0)
		return 13;
	if (reg_user(fd, "umemlock", buf, 16 * PG, &h))
		return 14;
	if (vm_pin_kb() != 64)
		return 15;
	/* 64 KiB is all the limit allows */
	if (reg_user(fd, "umemlock2", buf + 16 * PG, PG, NULL) != -ENOMEM)
		return 16;
	if (detach(fd, h) || vm_pin_kb() != 0)
		return 17;
	/* Back to zero: the whole limit is there again */
	if (reg_user(fd, "umemlock", buf, 16 * PG, &h))
		return 18;
	close(fd);
	return vm_pin_kb() == 0 ? 0 : 19;
}

TEST_F(upool, memlock_limit)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_child());
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
}

TEST_F(upool, export_refusals)
{
	uint8_t *buf = map_anon(16 * PG);
	struct kxfer_notify_sub ns = {};
	struct kxfer_export_del d = {};
	struct kxfer_pool_attach a;
	struct kxfer_export_add e;
	uint32_t h;
	int fd2, sub;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, reg_user(self->fd, "uexp", buf, 16 * PG, &h));
	/* A kernel pool this file attached is not its to export */
	EXPECT_EQ(-EPERM, export_add(self->fd, "uexp-x", self->src, 0, PG,
				     KXFER_ACCESS_READ));
	EXPECT_EQ(-ENOENT, export_add(self->fd, "uexp-x", 999, 0, PG,
				      KXFER_ACCESS_READ));
	EXPECT_EQ(-ENOENT, export_add(self->fd, "uexp-x", 0, 0, PG,
				      KXFER_ACCESS_READ));
	EXPECT_EQ(-EINVAL, export_add(self->fd, "uexp x", h, 0, PG,
				      KXFER_ACCESS_READ));
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	strcpy(e.peer, "b/c");
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, export_add(self->fd, "uexp-x", h, 0, PG, 0));
	EXPECT_EQ(-EINVAL, export_add(self->fd, "uexp-x", h, 0, PG, 1U << 7));
	EXPECT_EQ(-EINVAL, export_add(self->fd, "uexp-x", h, 0, 0,
				      KXFER_ACCESS_READ));
	EXPECT_EQ(-ERANGE, export_add(self->fd, "uexp-x", h, 8 * PG, 9 * PG,
				      KXFER_ACCESS_READ));
	EXPECT_EQ(-ERANGE, export_add(self->fd, "uexp-x", h, -PG, 2 * PG,
				      KXFER_ACCESS_READ));
	EXPECT_EQ(-EEXIST, export_add(self->fd, SRC_EXPORT, h, 0, PG,
				      KXFER_ACCESS_READ));
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.flags = KXFER_EXPORT_TOKEN << 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	/* a token without its flag, and the flag with a token of zeros */
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.token[15] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.flags = KXFER_EXPORT_TOKEN;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.from_family = 99;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.from_family = AF_INET;
	e.from_prefix = 33;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.from_prefix = 8;	/* a length without a family */
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_NE(0, run("kxferctl export show uexp-x >/dev/null 2>&1"));

	/* Scoped to an address: shown with it and the maker's pid */
	export_args(&e, "uexp-x", h, 0, PG, KXFER_ACCESS_READ);
	e.from_family = AF_INET;
	e.from_prefix = 24;
	e.from_addr[0] = 10;
	e.from_addr[1] = 77;
	e.from_addr[3] = 9;
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(0, run("kxferctl -j export show uexp-x | jq -e '.[0].from == \"10.77.0.0/24\" and .[0].pid == %d and .[0].pool == \"uexp\"' >/dev/null",
			 getpid()));
	EXPECT_EQ(-EPERM, export_del(self->fd, SRC_EXPORT));
	EXPECT_EQ(-ENOENT, export_del(self->fd, "nosuch"));
	strcpy(d.name, "uexp-x");
	d.flags = KXFER_EXPORT_DEL_NOWAIT << 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_DEL, &d));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, export_del(self->fd, "uexp-x"));
	EXPECT_EQ(-ENOENT, export_del(self->fd, "uexp-x"));
	/*
	 * Subscribed as it exports: the answer is the subscription's handle,
	 * which NOTIFY_UNSUBSCRIBE takes like any other.
	 */
	export_args(&e, "uexp-s", h, 0, PG, KXFER_ACCESS_WRITE);
	e.flags = KXFER_EXPORT_SUBSCRIBE;
	sub = ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e);
	EXPECT_LT(0, sub);
	ns.handle = sub;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_NOTIFY_UNSUBSCRIBE, &ns));
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_NOTIFY_UNSUBSCRIBE, &ns));
	EXPECT_EQ(ENOENT, errno);
	/* EEXIST: no export, and no subscription left behind */
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	EXPECT_EQ(EEXIST, errno);
	strcpy(d.name, "uexp-s");
	d.flags = KXFER_EXPORT_DEL_NOWAIT;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_EXPORT_DEL, &d));
	/* A process's pool is its own: nobody else attaches or deletes it */
	EXPECT_EQ(0, run("kxferctl -j pool show uexp | jq -e '.[0].kind == \"user\" and .[0].pid == %d and .[0].comm != null' >/dev/null",
			 getpid()));
	EXPECT_NE(0, run("kxferctl pool del uexp 2>/dev/null"));
	fd2 = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, fd2);
	memset(&a, 0, sizeof(a));
	strcpy(a.name, "uexp");
	EXPECT_EQ(-1, ioctl(fd2, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(EACCES, errno);
	close(fd2);
	/* ... nor is it mmap()ed through /dev/kxfer */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ, MAP_SHARED, self->fd,
				   (off_t)h << KXFER_MMAP_WINDOW_SHIFT));
	EXPECT_EQ(0, detach(self->fd, h));
	munmap(buf, 16 * PG);
}

/* Writes, reads, atomics and a notification, into and out of user memory. */
TEST_F(upool, transfers)
{
	size_t len = 512 * PG;	/* 2 MiB */
	uint8_t *buf = map_anon(len), *orig = malloc(len);
	struct kxfer_segment segs[3];
	struct kxfer_remote_lookup r, rs;
	struct kxfer_notify_sub sub;
	struct kxfer_event ev[2];
	struct kxfer_job job;
	uint64_t v;
	uint32_t h;
	int i, n;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, orig);
	fill(buf, len, 1);
	memcpy(orig, buf, len);
	ASSERT_EQ(0, reg_user(self->fd, "uxfer", buf, len, &h));
	EXPECT_EQ(len / 1024, (size_t)vm_pin_kb());
	ASSERT_EQ(0, export_add(self->fd, "uxfer-x", h, 0, len,
				KXFER_ACCESS_ALL));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "uxfer-x", &r));
	EXPECT_EQ(len, r.len);

	/* WRITE: kernel pool -> user memory, three scattered segments */
	fill(self->src_map, SRC_SIZE, 2);
	segs[0] = (struct kxfer_segment){ 0, 100 * PG, 3 * PG };
	segs[1] = (struct kxfer_segment){ 8 * PG, 10, 4000 };
	segs[2] = (struct kxfer_segment){ 64 * PG, len - 64 * PG, 64 * PG };
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, r.handle, segs,
		 3, 1);
	ASSERT_EQ(0, job_run(self->fd, &job));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, memcmp(buf + segs[i].remote_off,
				    self->src_map + segs[i].local_off,
				    segs[i].len));
	/* ... and nothing else */
	EXPECT_EQ(0, memcmp(buf + 200 * PG, orig + 200 * PG, 100 * PG));
	EXPECT_EQ(0, memcmp(buf, orig, 10));
	EXPECT_EQ(0, memcmp(buf + 10 + 4000, orig + 10 + 4000, 100));

	/* READ: user memory -> kernel pool */
	fill(buf + 300 * PG, 16 * PG, 3);
	segs[0] = (struct kxfer_segment){ SRC_SIZE - 16 * PG, 300 * PG,
					  16 * PG };
	job_init(&job, KXFER_OP_READ, self->src, self->peer, r.handle, segs,
		 1, 2);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map + SRC_SIZE - 16 * PG, 16 * PG, 3));

	/* FADD and CAS on user memory; the old value lands locally */
	memcpy(buf + 400 * PG, &(uint64_t){ 40 }, 8);
	segs[0] = (struct kxfer_segment){ 0, 400 * PG, 8 };
	job_init(&job, KXFER_OP_FADD, self->src, self->peer, r.handle, segs,
		 1, 3);
	job.compare_add = 2;
	ASSERT_EQ(0, job_run(self->fd, &job));
	memcpy(&v, buf + 400 * PG, 8);
	EXPECT_EQ(42, v);
	memcpy(&v, self->src_map, 8);
	EXPECT_EQ(40, v);
	job_init(&job, KXFER_OP_CAS, self->src, self->peer, r.handle, segs, 1,
		 4);
	job.compare_add = 42;
	job.swap = 7;
	ASSERT_EQ(0, job_run(self->fd, &job));
	memcpy(&v, buf + 400 * PG, 8);
	EXPECT_EQ(7, v);

	/* The user pool as the local side: user memory -> kernel export */
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, SRC_EXPORT, &rs));
	fill(buf, 32 * PG, 4);
	segs[0] = (struct kxfer_segment){ 0, 64 * PG, 32 * PG };
	job_init(&job, KXFER_OP_WRITE, h, self->peer, rs.handle, segs, 1, 5);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map + 64 * PG, 32 * PG, 4));

	/* NOTIFY into user memory: the owner subscribes to its export */
	memset(&sub, 0, sizeof(sub));
	strcpy(sub.name, "uxfer-x");
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &sub));
	fill(self->src_map, 8 * PG, 5);
	segs[0] = (struct kxfer_segment){ 0, 500 * PG, 8 * PG };
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, r.handle, segs,
		 1, 6);
	job.flags = KXFER_JOB_NOTIFY;
	job.notify_value = 0x5eed;
	ASSERT_EQ(0, submit(self->fd, &job, 1));
	n = reap(self->fd, ev, 2);
	ASSERT_EQ(2, n);
	for (i = 0; i < 2; i++) {
		if (ev[i].type == KXFER_EV_NOTIFY) {
			EXPECT_EQ(0x5eed, ev[i].user_data);
			EXPECT_EQ(8 * PG, ev[i].bytes);
			EXPECT_EQ(sub.handle, ev[i].sub);
			/* Visible once the notification is */
			EXPECT_EQ(0, check(buf + 500 * PG, 8 * PG, 5));
		} else {
			EXPECT_EQ(KXFER_EV_COMPLETION, ev[i].type);
			EXPECT_EQ(0, ev[i].status);
		}
	}
	EXPECT_NE(ev[0].type, ev[1].type);

	/* Withdrawn: the session forgets it, the pool goes, nothing pinned */
	EXPECT_EQ(0, export_del(self->fd, "uxfer-x"));
	EXPECT_EQ(0, remote_gone(self->fd, self->peer, "uxfer-x"));
	EXPECT_EQ(0, detach(self->fd, h));
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	munmap(buf, len);
	free(orig);
}

/* A line "KEY: N" of /proc/meminfo, or -1. */
static long meminfo(const char *key)
{
	char line[256], fmt[64];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	snprintf(fmt, sizeof(fmt), "%s: %%ld", key);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &v) == 1)
			break;
	fclose(f);
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%ld", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"
#define HUGE		(2UL << 20)

/*
 * A process's memory in 2 MiB huge pages (a hugetlb memfd) is mapped in
 * memory regions of 2 MiB pages, and the same memory from 4 KiB into a
 * huge page, where no larger page lines up with the pool, in 4 KiB
 * pages: export show and peer show say so.  A range that does not
 * start on a huge page keeps them (the MR starts on the page before,
 * its bounds at the range), and data lands where it should across a
 * page's end.  Four huge pages are reserved for it and given back.
 */
TEST_F(upool, huge_pages_mr_page)
{
	const size_t len = 4 * HUGE, off = 3 * PG;
	long nr0 = -1, free0 = meminfo("HugePages_Free");
	FILE *f = fopen(NR_HUGEPAGES, "r");
	struct kxfer_segment segs[2];
	struct kxfer_remote_lookup r;
	struct kxfer_job job;
	uint8_t *mem;
	uint32_t h, hs;
	int mfd;

	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, "%ld", &nr0));
	fclose(f);
	ASSERT_LE(0, free0);
	if (free0 < 4)
		ASSERT_EQ(0, write_long(NR_HUGEPAGES, nr0 + 4 - free0));
	ASSERT_LE(4, meminfo("HugePages_Free")) {
		TH_LOG("the kernel gave no 4 huge pages of 2 MiB");
	}
	mfd = memfd_create("kxfer-huge", MFD_HUGETLB);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, len));
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, mem);
	memset(mem, 0, len);

	ASSERT_EQ(0, reg_user(self->fd, "uhuge", mem, len, &h));
	ASSERT_EQ(0, reg_user(self->fd, "usub", mem + PG, 2 * HUGE, &hs));
	ASSERT_EQ(0, export_add(self->fd, "uhuge-x", h, off, len - off,
				KXFER_ACCESS_READ | KXFER_ACCESS_WRITE));
	ASSERT_EQ(0, export_add(self->fd, "usub-x", hs, 0, 2 * HUGE,
				KXFER_ACCESS_READ));
	EXPECT_EQ(0, run("kxferctl -j export show uhuge-x | jq -e '.[0] | .mr_page == 2097152 and .mrs == 1' >/dev/null"));
	/* 512 pages of 4 KiB each */
	EXPECT_EQ(0, run("kxferctl -j export show usub-x | jq -e '.[0] | .mr_page == 4096 and .mrs == 2' >/dev/null"));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "usub-x", &r));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "uhuge-x", &r));
	EXPECT_EQ(len - off, r.len);
	EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0].local_exports | (.[] | select(.name == \"uhuge-x\") | .mr_page == 2097152 and .mrs == 1) and (.[] | select(.name == \"usub-x\") | .mr_page == 4096 and .mrs == 2)' >/dev/null",
			 PEER));

	/* The export's first bytes, and across the first huge page's end */
	fill(self->src_map, 32 * PG, 40);
	segs[0] = (struct kxfer_segment){ 0, 0, 4 * PG };
	segs[1] = (struct kxfer_segment){ 8 * PG, HUGE - off - 8 * PG,
					  16 * PG };
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, r.handle, segs,
		 2, 1);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, memcmp(mem + off, self->src_map, 4 * PG));
	EXPECT_EQ(0, memcmp(mem + HUGE - 8 * PG, self->src_map + 8 * PG,
			    16 * PG));
	/* nothing before the export's start */
	EXPECT_EQ(0, mem[off - 1]);
	/* and back, from the last bytes */
	fill(mem + len - 4 * PG, 4 * PG, 41);
	segs[0] = (struct kxfer_segment){ 64 * PG, len - off - 4 * PG, 4 * PG };
	job_init(&job, KXFER_OP_READ, self->src, self->peer, r.handle, segs,
		 1, 2);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map + 64 * PG, 4 * PG, 41));

	EXPECT_EQ(0, export_del(self->fd, "uhuge-x"));
	EXPECT_EQ(0, export_del(self->fd, "usub-x"));
	EXPECT_EQ(0, detach(self->fd, h));
	EXPECT_EQ(0, detach(self->fd, hs));
	munmap(mem, len);
	close(mfd);
	EXPECT_EQ(0, write_long(NR_HUGEPAGES, nr0));
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
}

/* An export name of 31 characters, the longest, numbered */
static void long_name(char *name, unsigned int i)
{
	char num[16];
	int n = snprintf(num, sizeof(num), "many-%04u-", i);

	memset(name, 'x', KXFER_NAME_MAX - 1);
	name[KXFER_NAME_MAX - 1] = '\0';
	memcpy(name, num, (size_t)n);
}

/*
 * peer show of a session with many exports: 150 exports both ways (this
 * node's registered on the session, and the same advertised back to it)
 * are listed whole when the peer is named, about 23 KiB, more than a
 * page; 450 (68 KiB) do not fit the 64 KiB a reply is given, and are
 * left out of it and of a dump, which say so, while lookups still find
 * every export.
 */
#define MANY_FEW	150
#define MANY_ALL	450

TEST_F(upool, many_exports_show)
{
	const size_t len = 256 * PG;
	uint8_t *buf = map_anon(len);
	char name[KXFER_NAME_MAX];
	struct kxfer_remote_lookup r;
	unsigned int i;
	uint32_t h;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, reg_user(self->fd, "umany", buf, len, &h));
	for (i = 0; i < MANY_ALL; i++) {
		if (i == MANY_FEW) {
			ASSERT_EQ(0, remote_wait(self->fd, self->peer, name, &r));
			EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0] | (.remote_exports | map(select(.name | startswith(\"many-\"))) | length) == %u and (.local_exports | map(select(.name | startswith(\"many-\"))) | length) == %u and has(\"exports\") == false' >/dev/null",
					 PEER, MANY_FEW, MANY_FEW));
		}
		long_name(name, i);
		ASSERT_EQ(0, export_add(self->fd, name, h, (i % 256) * PG, PG,
					KXFER_ACCESS_READ)) {
			TH_LOG("export %u", i);
		}
	}
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, name, &r));
	long_name(name, 0);
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, name, &r));
	/* named, and in a dump: the state, and no lists */
	EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0] | .exports == \"omitted\" and .state == \"up\" and (.remote_exports | length) == 0 and has(\"local_exports\") == false' >/dev/null",
			 PEER));
	EXPECT_EQ(0, run("kxferctl -j peer show | jq -e '.[] | select(.name == \"%s\") | .exports == \"omitted\" and .state == \"up\"' >/dev/null",
			 PEER));
	EXPECT_EQ(0, run("kxferctl peer show %s | grep -q 'exports omitted'",
			 PEER));
	for (i = 0; i < MANY_ALL; i++) {
		long_name(name, i);
		EXPECT_EQ(0, export_del(self->fd, name));
	}
	EXPECT_EQ(0, remote_gone(self->fd, self->peer, name));
	EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0] | has(\"exports\") == false' >/dev/null",
			 PEER));
	EXPECT_EQ(0, detach(self->fd, h));
	munmap(buf, len);
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
}

/* A lookup of @name with @token (or none, NULL); its errno or 0. */
static int lookup_token(int fd, uint32_t peer, const char *name,
			const uint8_t *token, struct kxfer_remote_lookup *r)
{
	memset(r, 0, sizeof(*r));
	r->peer = peer;
	strncpy(r->name, name, sizeof(r->name) - 1);
	if (token) {
		r->flags = KXFER_LOOKUP_TOKEN;
		memcpy(r->token, token, KXFER_TOKEN_LEN);
	}
	return ioctl(fd, KXFER_IOC_REMOTE_LOOKUP, r) ? -errno : 0;
}

/* Whether kxferctl's output (peer show, export show) holds the token. */
static int shows_token(const uint8_t *token)
{
	char hex[2 * KXFER_TOKEN_LEN + 1];
	int i;

	for (i = 0; i < KXFER_TOKEN_LEN; i++)
		sprintf(hex + 2 * i, "%02x", token[i]);
	return !run(
		"{ kxferctl -j peer show; kxferctl peer show; kxferctl -j export show; kxferctl export show; kxferctl -j stats show; dmesg; cat /sys/kernel/tracing/trace 2>/dev/null; } 2>&1 | grep -qi %s",
		hex);
}

/* The integer a shell command prints (kxferctl -j ... | jq ...), or -1. */
static int __attribute__((format(printf, 1, 2))) cmd_int(const char *fmt, ...)
{
	char cmd[256];
	int n = -1;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

/* The peer and remote handles files hold on session PEER, or -1. */
static int peer_handles(void)
{
	return cmd_int("kxferctl -j peer show %s | jq '.[0].handles'", PEER);
}

/* Draw a token as a process would: random, not all zeros. */
static void draw_token(uint8_t *token)
{
	int i;

	do {
		for (i = 0; i < KXFER_TOKEN_LEN; i++)
			token[i] = (uint8_t)random();
	} while (!token[0] && !memcmp(token, token + 1, KXFER_TOKEN_LEN - 1));
}

/*
 * A capability-scoped export (KXFER_EXPORT_TOKEN): found only with its
 * token, by this file or any other process; every other lookup is
 * ENOENT, as for a name that does not exist; neither kxferctl nor peer
 * show tell its name or token; withdrawing it revokes the token.
 */
TEST_F(upool, scoped_exports)
{
	size_t len = 16 * PG;
	uint8_t *buf = map_anon(len), token[KXFER_TOKEN_LEN], bad[KXFER_TOKEN_LEN];
	uint8_t token2[KXFER_TOKEN_LEN];
	struct kxfer_segment seg = { 0, PG, 2 * PG };
	struct kxfer_remote_lookup r, rs;
	struct kxfer_export_add e;
	struct kxfer_job job;
	uint64_t end;
	uint32_t h;
	pid_t pid;
	int st, ret, handles;

	ASSERT_NE(NULL, buf);
	srandom(getpid() ^ now_ms());
	draw_token(token);
	do
		draw_token(token2);
	while (!memcmp(token, token2, sizeof(token)));
	memcpy(bad, token, sizeof(bad));
	bad[KXFER_TOKEN_LEN - 1] ^= 1;
	ASSERT_EQ(0, reg_user(self->fd, "uscope", buf, len, &h));
	export_args(&e, "uscope-x", h, 0, len, KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
	e.flags = KXFER_EXPORT_TOKEN;
	memcpy(e.token, token, sizeof(token));
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));

	/* Advertised: found with the token, at once or within 20 s */
	end = now_ms() + 20000;
	while ((ret = lookup_token(self->fd, self->peer, "uscope-x", token, &rs)) == -ENOENT &&
	       now_ms() < end)
		usleep(20000);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(len, rs.len);

	/* Every other lookup, one wrong thing each: as no such name, no handle */
	handles = peer_handles();
	EXPECT_LT(0, handles);
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-x", NULL, &r));
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-x", bad, &r));
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-y", token, &r));
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-y", NULL, &r));
	/* a token does not open an export made without one */
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, SRC_EXPORT, token, &r));
	/* malformed: a token without its flag, an unknown flag */
	lookup_token(self->fd, self->peer, "uscope-x", NULL, &r);
	r.token[3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REMOTE_LOOKUP, &r));
	EXPECT_EQ(EINVAL, errno);
	lookup_token(self->fd, self->peer, "uscope-x", bad, &r);
	r.flags |= KXFER_LOOKUP_TOKEN << 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REMOTE_LOOKUP, &r));
	EXPECT_EQ(EINVAL, errno);
	/* the flag with a token of zeros: no token */
	lookup_token(self->fd, self->peer, "uscope-x", NULL, &r);
	r.flags = KXFER_LOOKUP_TOKEN;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_REMOTE_LOOKUP, &r));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(handles, peer_handles());

	/* Another process of this node, root too: the same, by the token alone */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open("/dev/kxfer", O_RDWR);
		uint32_t p;

		_exit(fd < 0 || peer_lookup(fd, &p) ? 10 :
		      lookup_token(fd, p, "uscope-x", NULL, &r) != -ENOENT ? 11 :
		      lookup_token(fd, p, "uscope-x", bad, &r) != -ENOENT ? 12 :
		      lookup_token(fd, p, "uscope-x", token, &r) ? 13 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));

	/* Not listed, counted; the token nowhere; the owner sees it scoped */
	EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0] | .remote_scoped >= 1 and (.remote_exports | map(select(.name == \"uscope-x\")) | length) == 0' >/dev/null",
			 PEER));
	EXPECT_EQ(0, run("kxferctl peer show %s | grep -q 'remote_scoped [1-9]'", PEER));
	EXPECT_NE(0, run("kxferctl peer show | grep -q 'remote_export uscope-x'"));
	EXPECT_EQ(0, run("kxferctl -j export show uscope-x | jq -e '.[0].lookup == \"token\"' >/dev/null"));
	EXPECT_EQ(0, shows_token(token));

	/* The handle moves data like any other */
	fill(self->src_map, 2 * PG, 9);
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, rs.handle, &seg, 1, 1);
	EXPECT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(buf + PG, 2 * PG, 9));

	/* Withdrawn: the token finds nothing; the handle is stale */
	EXPECT_EQ(0, export_del(self->fd, "uscope-x"));
	end = now_ms() + 20000;
	while (!lookup_token(self->fd, self->peer, "uscope-x", token, &r) && now_ms() < end)
		usleep(20000);
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-x", token, &r));
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, rs.handle, &seg, 1, 2);
	EXPECT_EQ(-ESTALE, submit(self->fd, &job, 1));

	/* Made again with a new token: the revoked one finds nothing */
	e.flags = KXFER_EXPORT_TOKEN;
	memcpy(e.token, token2, sizeof(token2));
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_EXPORT_ADD, &e));
	end = now_ms() + 20000;
	while ((ret = lookup_token(self->fd, self->peer, "uscope-x", token2, &r)) == -ENOENT &&
	       now_ms() < end)
		usleep(20000);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-x", token, &r));
	EXPECT_EQ(-ESTALE, submit(self->fd, &job, 1));
	EXPECT_EQ(0, export_del(self->fd, "uscope-x"));
	end = now_ms() + 20000;
	while (!lookup_token(self->fd, self->peer, "uscope-x", token2, &r) && now_ms() < end)
		usleep(20000);
	EXPECT_EQ(-ENOENT, lookup_token(self->fd, self->peer, "uscope-x", token2, &r));
	EXPECT_EQ(0, detach(self->fd, h));
	munmap(buf, len);
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
}

/*
 * The kernel copies pinned anonymous pages for the child at fork: the
 * parent keeps the pages the NIC uses, whatever the child writes.
 */
TEST_F(upool, fork_keeps_parent_view)
{
	size_t len = 16 * PG;
	uint8_t *buf = map_anon(len);
	struct kxfer_segment seg = { 0, 0, len };
	struct kxfer_remote_lookup r;
	struct kxfer_job job;
	pid_t pid;
	uint32_t h;
	int st;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, reg_user(self->fd, "ufork", buf, len, &h));
	ASSERT_EQ(0, export_add(self->fd, "ufork-x", h, 0, len,
				KXFER_ACCESS_READ | KXFER_ACCESS_WRITE));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "ufork-x", &r));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		memset(buf, 0xee, len);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	/* The parent writes after the fork: its copy-on-write must not move it */
	fill(buf, len, 6);
	job_init(&job, KXFER_OP_READ, self->src, self->peer, r.handle, &seg,
		 1, 1);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map, len, 6));
	fill(self->src_map, len, 7);
	job.op = KXFER_OP_WRITE;
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(buf, len, 7));
	EXPECT_EQ(0, detach(self->fd, h));
	munmap(buf, len);
}

#define INFLIGHT	64

/* Jobs into the export of @owner_fd's pool, @n of 64 KiB each; 0 or errno. */
static int push_many(int fd, uint32_t src, uint32_t peer, uint32_t remote,
		     struct kxfer_segment *segs, struct kxfer_job *jobs)
{
	int i;

	for (i = 0; i < INFLIGHT; i++) {
		segs[i] = (struct kxfer_segment){ (i % 32) * 16 * PG,
						  (i % 8) * 16 * PG, 16 * PG };
		job_init(&jobs[i], KXFER_OP_WRITE, src, peer, remote,
			 &segs[i], 1, 100 + i);
	}
	return submit(fd, jobs, INFLIGHT);
}

/* Each job exactly once: @ev holds @n events of jobs 100..100+n-1. */
static int each_once(const struct kxfer_event *ev, int n)
{
	char seen[INFLIGHT] = { 0 };
	int i;

	for (i = 0; i < n; i++) {
		uint64_t k = ev[i].user_data - 100;

		if (ev[i].type != KXFER_EV_COMPLETION || k >= INFLIGHT ||
		    seen[k]++)
			return -1;
	}
	return 0;
}

/* The owner unmaps its memory with writes into it in flight: all land. */
TEST_F(upool, munmap_with_jobs_in_flight)
{
	size_t len = 128 * PG;
	uint8_t *buf = map_anon(len);
	struct kxfer_segment segs[INFLIGHT];
	struct kxfer_job jobs[INFLIGHT];
	struct kxfer_event ev[INFLIGHT + 1];
	struct kxfer_remote_lookup r;
	uint32_t h;
	int i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, reg_user(self->fd, "umunmap", buf, len, &h));
	ASSERT_EQ(0, export_add(self->fd, "umunmap-x", h, 0, len,
				KXFER_ACCESS_WRITE));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "umunmap-x", &r));
	ASSERT_EQ(0, push_many(self->fd, self->src, self->peer, r.handle,
			       segs, jobs));
	ASSERT_EQ(0, munmap(buf, len));
	ASSERT_EQ(INFLIGHT, reap(self->fd, ev, INFLIGHT));
	EXPECT_EQ(0, each_once(ev, INFLIGHT));
	for (i = 0; i < INFLIGHT; i++)
		EXPECT_EQ(0, ev[i].status);
	/* Still pinned: the pool is alive until its owner ends it */
	EXPECT_EQ(len / 1024, (size_t)vm_pin_kb());
	EXPECT_EQ(0, detach(self->fd, h));
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(0, reap(self->fd, ev, 0));
}

/*
 * The owner dies with writes into its memory in flight: its export is
 * withdrawn (LOCAL_INV) before its pages are let go, every job ends
 * exactly once, and the module's pinned bytes come back.
 */
TEST_F(upool, owner_exit_with_jobs_in_flight)
{
	struct kxfer_segment segs[INFLIGHT];
	struct kxfer_job jobs[INFLIGHT];
	struct kxfer_event ev[INFLIGHT];
	struct kxfer_remote_lookup r;
	int ready[2], hold[2], n;
	uint64_t end;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 128 * PG;
		uint8_t *buf = map_anon(len);
		int fd = open("/dev/kxfer", O_RDWR);
		uint32_t h;

		if (!buf || fd < 0 || reg_user(fd, "uexit", buf, len, &h) ||
		    export_add(fd, "uexit-x", h, 0, len, KXFER_ACCESS_WRITE))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		(void)read(hold[0], &c, 1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "uexit-x", &r));
	ASSERT_EQ(0, push_many(self->fd, self->src, self->peer, r.handle,
			       segs, jobs));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));

	n = reap(self->fd, ev, INFLIGHT);
	ASSERT_EQ(INFLIGHT, n);
	EXPECT_EQ(0, each_once(ev, n));
	EXPECT_EQ(0, reap(self->fd, ev, 0));
	EXPECT_NE(0, run("kxferctl pool show uexit >/dev/null 2>&1"));
	EXPECT_NE(0, run("kxferctl export show uexit-x >/dev/null 2>&1"));
	end = now_ms() + 20000;
	while (pool_mem_used(self->fd) != self->used0 && now_ms() < end)
		usleep(20000);
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	/* The session may have gone through a reconnect: it comes back */
	EXPECT_EQ(0, remote_wait(self->fd, self->peer, SRC_EXPORT, &r));
	close(hold[1]);
	close(ready[0]);
}

/*
 * EXPORT_ADD racing the pool's end (DETACH) on one file: the export is
 * made before the pool ends, and withdrawn with it, or refused; never
 * left behind over a pool that is gone, holding the owner's pages.
 */
struct export_racer {
	_Atomic uint32_t handle;	/* 0: stop */
	_Atomic int round;		/* bumped when handle is set */
	_Atomic int done;		/* the round the racer ended */
	int fd;
};

static void *export_race(void *arg)
{
	struct export_racer *x = arg;
	int seen = 0, round;
	uint32_t h;

	for (;;) {
		while ((round = atomic_load(&x->round)) == seen)
			;
		seen = round;
		h = atomic_load(&x->handle);
		if (!h)
			return NULL;
		/* until the pool is gone from the file */
		while (export_add(x->fd, "urace-x", h, 0, PG,
				  KXFER_ACCESS_READ) != -ENOENT)
			;
		atomic_store(&x->done, round);
	}
}

TEST_F(upool, export_add_races_detach)
{
	struct export_racer x = { .fd = self->fd };
	uint8_t *buf = map_anon(4 * PG);
	int i, left = 0, rounds = 0;
	uint64_t end = now_ms() + 8000;
	pthread_t t;
	uint32_t h;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pthread_create(&t, NULL, export_race, &x));
	for (i = 0; i < 2000 && now_ms() < end; i++, rounds++) {
		ASSERT_EQ(0, reg_user(self->fd, "urace", buf, 4 * PG, &h));
		atomic_store(&x.handle, h);
		atomic_fetch_add(&x.round, 1);
		/* let the racer in, sometimes before, sometimes after */
		if (i & 1)
			usleep(i % 7 * 10);
		ASSERT_EQ(0, detach(self->fd, h));
		/* the racer stops at ENOENT; then no export is left */
		while (atomic_load(&x.done) != atomic_load(&x.round))
			;
		if (!export_del(self->fd, "urace-x"))
			left++;
	}
	atomic_store(&x.handle, 0);
	atomic_fetch_add(&x.round, 1);
	pthread_join(t, NULL);
	TH_LOG("%d rounds, %d exports left over an ended pool", rounds, left);
	EXPECT_EQ(0, left);
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	munmap(buf, 4 * PG);
}

/*
 * POOL_USER filling a handle it reserved while another thread DETACHes
 * every handle and POOL_ATTACHes a kernel pool into the freed ones: a
 * reserved handle is no pool (ENOENT) and stays reserved, so that no
 * attachment overwrites another.  Once the file is closed, no user pool
 * is left and the kernel pool counts the users it had.
 */
struct handle_racer {
	_Atomic int stop;
	int fd;
	int attached;
};

static void *detach_attach_race(void *arg)
{
	struct handle_racer *x = arg;
	struct kxfer_pool_attach a;
	uint32_t h;

	while (!atomic_load(&x->stop)) {
		for (h = 1; h <= 8; h++)
			detach(x->fd, h);
		memset(&a, 0, sizeof(a));
		strcpy(a.name, SRC_POOL);
		if (!ioctl(x->fd, KXFER_IOC_POOL_ATTACH, &a))
			x->attached++;
	}
	return NULL;
}

static int pool_users(const char *pool)
{
	return cmd_int("kxferctl -j pool show %s | jq '.[0].attach_count'", pool);
}

TEST_F(upool, pool_user_races_detach)
{
	struct handle_racer x = { 0 };
	uint8_t *buf = map_anon(4 * PG);
	int users0 = pool_users(SRC_POOL), made = 0, i;
	uint64_t end;
	pthread_t t;
	char name[32];

	ASSERT_NE(NULL, buf);
	ASSERT_LT(0, users0);
	x.fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, x.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, detach_attach_race, &x));
	/*
	 * 6 s from here, not from the start: pool_users() runs kxferctl and
	 * jq, seconds on a loaded guest; and 100 rounds however slow.
	 */
	end = now_ms() + 6000;
	for (i = 0; i < 3000 && (i < 100 || now_ms() < end); i++) {
		snprintf(name, sizeof(name), "urace.%d", i);
		if (!reg_user(x.fd, name, buf, 4 * PG, NULL))
			made++;
	}
	atomic_store(&x.stop, 1);
	pthread_join(t, NULL);
	TH_LOG("%d user pools made, %d attachments", made, x.attached);
	EXPECT_LT(0, made);
	close(x.fd);
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	EXPECT_EQ(0, run("kxferctl -j pool show | %s >/dev/null",
			 "jq -e 'map(select(.kind != \"kernel\")) | length == 0'"));
	EXPECT_EQ(users0, pool_users(SRC_POOL));
	munmap(buf, 4 * PG);
}

/* ---------------------------------------------------------------------- */
/* dma-buf                                                                 */

static int reg_dmabuf(int fd, const char *name, int dfd, uint64_t off,
		      uint64_t len, const char *dev, uint32_t *handle)
{
	struct kxfer_pool_dmabuf d;

	memset(&d, 0, sizeof(d));
	strncpy(d.name, name, sizeof(d.name) - 1);
	d.fd = dfd;
	d.offset = off;
	d.len = len;
	if (dev)
		strncpy(d.dev, dev, sizeof(d.dev) - 1);
	d.handle = 0xcccccccc;
	if (ioctl(fd, KXFER_IOC_POOL_DMABUF, &d))
		return -errno;
	if (handle)
		*handle = d.handle;
	return 0;
}

/* A udmabuf over a sealed memfd of @len bytes, mapped at *@map; or -1. */
static int make_udmabuf(size_t len, uint8_t **map, int *memfd)
{
	struct udmabuf_create c = { 0 };
	int dev, mfd, dfd;

	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		return -1;
	mfd = memfd_create("kxfer-udmabuf", MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, len) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -1;
	c.memfd = mfd;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.size = len;
	dfd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (dfd < 0 || *map == MAP_FAILED)
		return -1;
	*memfd = mfd;
	return dfd;
}

/* Refusals that need no dma-buf exporter (both kernels) */
TEST_F(upool, dmabuf_refusals)
{
	struct kxfer_pool_dmabuf d;
	int mfd = memfd_create("kxfer-notdmabuf", 0);

	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, 16 * PG));
	EXPECT_EQ(-EBADF, reg_dmabuf(self->fd, "udb", 999, 0, PG, NULL, NULL));
	EXPECT_EQ(-EBADF, reg_dmabuf(self->fd, "udb", -1, 0, PG, NULL, NULL));
	EXPECT_EQ(-EINVAL, reg_dmabuf(self->fd, "udb", mfd, 0, PG, NULL, NULL));
	EXPECT_EQ(-EINVAL, reg_dmabuf(self->fd, "udb", mfd, 0, 0, NULL, NULL));
	EXPECT_EQ(-EINVAL, reg_dmabuf(self->fd, "udb", mfd, 100, PG, NULL,
				      NULL));
	memset(&d, 0, sizeof(d));
	strcpy(d.name, "udb");
	d.fd = mfd;
	d.len = PG;
	d.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_DMABUF, &d));
	EXPECT_EQ(EINVAL, errno);
	d.pad = 0;
	memset(d.dev, 'x', sizeof(d.dev));	/* no NUL */
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_DMABUF, &d));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	close(mfd);
}

/*
 * What every dma-buf pool must do, whoever exported it: @dfd (@len
 * bytes, seen by the test at @map) as a pool through soft-RoCE named
 * (it does no DMA: the buffer's pages serve), with the descriptor
 * closed once the pool holds the buffer; written by the peer and read
 * back in @map, read by the peer, the local side of a WRITE; detached,
 * with nothing left pinned.  Closes @dfd.
 */
static void dmabuf_transfers(struct __test_metadata *_metadata,
			     FIXTURE_DATA(upool) *self, int dfd, uint8_t *map,
			     size_t len, const char *kind)
{
	struct kxfer_segment seg = { 0, 8 * PG, 32 * PG };
	struct kxfer_remote_lookup r;
	struct kxfer_job job;
	uint32_t h;

	ASSERT_LE(64 * PG, len);
	/* Beyond the buffer; a device that does not exist */
	EXPECT_EQ(-EINVAL, reg_dmabuf(self->fd, "udb", dfd, PG, len, NULL,
				      NULL));
	EXPECT_EQ(-ENODEV, reg_dmabuf(self->fd, "udb", dfd, 0, len, "nosuch0",
				      NULL));
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	ASSERT_EQ(0, reg_dmabuf(self->fd, "udb", dfd, 0, len, "rxe0", &h));
	/* The buffer's descriptor may go: the pool holds the buffer */
	close(dfd);
	EXPECT_EQ(0, run("kxferctl -j pool show udb | jq -e '.[0].kind == \"dmabuf\" and .[0].size == %zu' >/dev/null",
			 len));
	ASSERT_EQ(0, export_add(self->fd, "udb-x", h, 0, len,
				KXFER_ACCESS_READ | KXFER_ACCESS_WRITE));
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, "udb-x", &r));
	fill(self->src_map, 32 * PG, 8);
	job_init(&job, KXFER_OP_WRITE, self->src, self->peer, r.handle, &seg,
		 1, 1);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(map + 8 * PG, 32 * PG, 8));
	fill(map, 8 * PG, 9);
	seg = (struct kxfer_segment){ 0, 0, 8 * PG };
	job.op = KXFER_OP_READ;
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map, 8 * PG, 9));
	/* The dma-buf pool as the local side */
	ASSERT_EQ(0, remote_wait(self->fd, self->peer, SRC_EXPORT, &r));
	seg = (struct kxfer_segment){ 0, 128 * PG, 8 * PG };
	job_init(&job, KXFER_OP_WRITE, h, self->peer, r.handle, &seg, 1, 2);
	ASSERT_EQ(0, job_run(self->fd, &job));
	EXPECT_EQ(0, check(self->src_map + 128 * PG, 8 * PG, 9));
	EXPECT_EQ(0, detach(self->fd, h));
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
	TH_LOG("%s: %zu bytes written, read and sent by the NIC, checked in the buffer's own mapping",
	       kind, len);
}

/*
 * A kernel without an exporter must be one built without it: its
 * configuration says so (the headers of the running kernel, which the
 * guest sees through the host's root; for a debug kernel of `make
 * check-debug`, its build next to the modules, $KXFER_MODROOT/../obj);
 * anything else fails.
 */
static int config_lacks(const char *opt)
{
	return run("c=/usr/src/linux-headers-$(uname -r)/.config; "
		   "test -r $c || c=${KXFER_MODROOT:-/nonexistent}/../obj/.config; "
		   "test -r $c && grep -q '^# %s is not set' $c",
		   opt);
}

/* A udmabuf over a memfd, read back through the memfd (6.12). */
TEST_F(upool, udmabuf_transfers)
{
	size_t len = 64 * PG;
	uint8_t *map;
	int dfd, mfd;

	if (access("/dev/udmabuf", F_OK)) {
		/* 6.1: testbuf_transfers covers dma-buf pools there */
		ASSERT_EQ(0, config_lacks("CONFIG_UDMABUF"));
		TH_LOG("no /dev/udmabuf: this kernel is built without it");
		return;
	}
	dfd = make_udmabuf(len, &map, &mfd);
	ASSERT_LE(0, dfd);
	close(mfd);
	dmabuf_transfers(_metadata, self, dfd, map, len, "udmabuf");
	munmap(map, len);
}

/* A buffer of the system dma-heap, checked through its own mapping. */
TEST_F(upool, dma_heap_transfers)
{
	struct dma_heap_allocation_data a = { .len = 64 * PG,
					      .fd_flags = O_RDWR | O_CLOEXEC };
	uint8_t *map;
	int heap;

	heap = open("/dev/dma_heap/system", O_RDWR);
	if (heap < 0) {
		ASSERT_EQ(0, config_lacks("CONFIG_DMABUF_HEAPS"));
		TH_LOG("no system dma-heap: this kernel is built without it");
		return;
	}
	ASSERT_EQ(0, ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a));
	close(heap);
	map = mmap(NULL, a.len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	dmabuf_transfers(_metadata, self, a.fd, map, a.len, "dma-heap");
	munmap(map, a.len);
}

/*
 * kxfer_testbuf (selftests/kmod), loaded by suite-1.sh: a dma-buf of
 * @len bytes shaped by @flags, mapped at *@map when it has pages; or a
 * negative errno.
 */
static int make_testbuf(size_t len, uint32_t flags, uint8_t **map)
{
	struct kxfer_testbuf_create c = { .size = len, .flags = flags };
	int dev, ret = 0;

	dev = open("/dev/kxfer_testbuf", O_RDWR);
	if (dev < 0)
		return -errno;
	if (ioctl(dev, KXFER_TESTBUF_CREATE, &c))
		ret = -errno;
	close(dev);
	if (ret)
		return ret;
	if (map) {
		*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    c.fd, 0);
		if (*map == MAP_FAILED) {
			close(c.fd);
			return -ENOMEM;
		}
	}
	return c.fd;
}

/* Both kernels: an exporter of system pages */
TEST_F(upool, testbuf_transfers)
{
	size_t len = 64 * PG;
	uint8_t *map;
	int dfd;

	dfd = make_testbuf(len, 0, &map);
	ASSERT_LE(0, dfd);
	dmabuf_transfers(_metadata, self, dfd, map, len, "kxfer_testbuf");
	munmap(map, len);
}

/*
 * Buffers a device without DMA cannot use, each refused alone with its
 * errno, and nothing is left pinned or listed: pieces with no page
 * (device memory, a GPU's), a piece that does not start on a page, a
 * table shorter than the buffer, an exporter that fails to map.
 */
TEST_F(upool, testbuf_refusals)
{
	static const struct {
		uint32_t flags;
		int err;
	} bad[] = {
		{ KXFER_TESTBUF_PAGELESS, -EOPNOTSUPP },
		{ KXFER_TESTBUF_UNALIGNED, -EOPNOTSUPP },
		{ KXFER_TESTBUF_SHORT, -EINVAL },
		{ KXFER_TESTBUF_FAIL_MAP, -ENOMEM },
	};
	size_t len = 16 * PG;
	unsigned int i;
	uint32_t h;
	int dfd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dfd = make_testbuf(len, bad[i].flags, NULL);
		ASSERT_LE(0, dfd);
		EXPECT_EQ(bad[i].err, reg_dmabuf(self->fd, "udb", dfd, 0, len,
						 "rxe0", NULL)) {
			TH_LOG("testbuf flags %#x", bad[i].flags);
		}
		EXPECT_EQ(bad[i].err, reg_dmabuf(self->fd, "udb", dfd, 0, len,
						 NULL, NULL));
		close(dfd);
		EXPECT_EQ(self->used0, pool_mem_used(self->fd));
		EXPECT_EQ(0, run("kxferctl -j pool show | jq -e 'map(select(.name == \"udb\")) | length == 0' >/dev/null"));
	}
	/* The page-less refusal says why, in the kernel log */
	EXPECT_EQ(0, run("dmesg | grep 'pool udb of upool_test.*no pages of system memory' >/dev/null"));
	/* A short table is fine where it covers what is asked */
	dfd = make_testbuf(len, KXFER_TESTBUF_SHORT, NULL);
	ASSERT_LE(0, dfd);
	EXPECT_EQ(0, reg_dmabuf(self->fd, "udb", dfd, 0, len - PG, "rxe0",
				&h));
	EXPECT_EQ(0, detach(self->fd, h));
	close(dfd);
	EXPECT_EQ(self->used0, pool_mem_used(self->fd));
}

/* ---------------------------------------------------------------------- */
/*
 * bigpool: a dma-buf pool of 256 GiB and 6 MiB of memory (kxfer_testbuf's
 * ALIAS: three 2 MiB pieces over and over), for an export of the size of
 * a GPU node's KV cache, offsets far beyond 32 bits, and memory regions
 * of 2 MiB pages; and one of 513 GiB for the longest export of 4 KiB
 * pages.  Needs pool_mem_max above 513 GiB: suite-1 loads kxfer
 * so and runs this fixture alone (-f bigpool); the other runs leave it
 * out (-F bigpool).  KXFER_BIG_GIB sets another size: rxe since Linux
 * 6.4 keeps 16 bytes for every 4 KiB of a memory region, whatever its
 * page (1 GiB for 256 GiB, more than a test guest has), so suite-1 gives
 * 6.12 a smaller pool, and shorter MRs (mr_max_pages): rxe allocates each
 * MR's table in one piece.
 */

#define BIG_MEM		(KXFER_TESTBUF_ALIAS_PIECES * KXFER_TESTBUF_ALIAS_PIECE)

static uint64_t big_size(void)
{
	const char *e = getenv("KXFER_BIG_GIB");

	return (e && *e ? strtoull(e, NULL, 0) : 256) << 30;
}

/* The MRs the export takes: pages of 2 MiB, mr_max_pages of them each. */
static unsigned int big_mrs(uint64_t size)
{
	FILE *f = fopen("/sys/module/kxfer/parameters/mr_max_pages", "r");
	unsigned int pages = 512;

	if (f) {
		if (fscanf(f, "%u", &pages) != 1)
			pages = 512;
		fclose(f);
	}
	return size / ((uint64_t)pages * KXFER_TESTBUF_ALIAS_PIECE);
}

FIXTURE(bigpool) {
	FIXTURE_DATA(upool) u;
};

FIXTURE_SETUP(bigpool)
{
	upool_setup(_metadata, &self->u, NULL);
}

FIXTURE_TEARDOWN(bigpool)
{
	/* export_too_long's, whatever became of it */
	set_param("mr_max_page", "1073741824");
	upool_teardown(_metadata, &self->u, NULL);
}

/* Byte @off of the pool in its memory (the mapping of the first 6 MiB) */
static size_t big_mem_at(uint64_t off)
{
	return off % BIG_MEM;
}

/*
 * The whole 256 GiB exported: its memory lies in 2 MiB pieces, so its
 * memory regions map 2 MiB pages, 256 of 1 GiB rather than the 131072 of
 * 2 MiB that 4 KiB pages would take (export show and peer show say so);
 * writes near its start, across the MR boundary in its middle and at its
 * end, and a read 200 GiB into it, checked byte for byte in the whole of
 * the pool's memory (a truncated offset lands on another piece); and the
 * pool as the local side there.
 */
TEST_F(bigpool, export_256g)
{
	const uint64_t size = big_size();
	const unsigned int nmrs = big_mrs(size);
	struct kxfer_segment segs[3] = {
		/* near the start */
		{ 0, 3 * PG, 8 * PG },
		/* across the boundary of the two middle MRs */
		{ 64 * PG, (size / 2) - 8 * PG, 16 * PG },
		/* the last bytes, in the last MR */
		{ 128 * PG, size - 16 * PG, 16 * PG },
	};
	FIXTURE_DATA(upool) *u = &self->u;
	/* 200 GiB of 256, as far into a smaller one */
	uint64_t rd_off = size / 256 * 200 + 4 * PG;
	struct kxfer_remote_lookup r;
	uint8_t *mem, *want;
	struct kxfer_job job;
	unsigned int i;
	uint32_t h;
	size_t at;
	int dfd;

	dfd = make_testbuf(size, KXFER_TESTBUF_ALIAS, NULL);
	ASSERT_LE(0, dfd);
	mem = mmap(NULL, BIG_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, reg_dmabuf(u->fd, "ubig", dfd, 0, size, "rxe0", &h));
	close(dfd);

	ASSERT_EQ(0, export_add(u->fd, "ubig-x", h, 0, size,
				KXFER_ACCESS_READ | KXFER_ACCESS_WRITE));
	/* export show counts MRs of 512 pages; a session, of its own */
	EXPECT_EQ(0, run("kxferctl -j export show ubig-x | jq -e '.[0] | .mr_page == 2097152 and .mrs == %llu' >/dev/null",
			 (unsigned long long)(size >> 30)));
	ASSERT_EQ(0, remote_wait(u->fd, u->peer, "ubig-x", &r));
	EXPECT_EQ(size, r.len);
	/* What the session registered, and what its peer (itself) learnt */
	EXPECT_EQ(0, run("kxferctl -j peer show %s | jq -e '.[0] | (.local_exports[] | select(.name == \"ubig-x\") | .mrs == %d and .mr_page == 2097152) and (.remote_exports[] | select(.name == \"ubig-x\") | .mrs == %d)' >/dev/null",
			 PEER, nmrs, nmrs));

	/* Writes: usrc to three places of the export, in one job */
	want = calloc(1, BIG_MEM);
	ASSERT_NE(NULL, want);
	memcpy(want, mem, BIG_MEM);
	for (i = 0; i < 3; i++) {
		fill(u->src_map + segs[i].local_off, segs[i].len, 20 + i);
		at = big_mem_at(segs[i].remote_off);
		ASSERT_LE(at + segs[i].len, BIG_MEM);
		fill(want + at, segs[i].len, 20 + i);
	}
	job_init(&job, KXFER_OP_WRITE, u->src, u->peer, r.handle, segs, 3, 1);
	ASSERT_EQ(0, job_run(u->fd, &job));
	for (at = 0; at < BIG_MEM && mem[at] == want[at]; at++)
		;
	EXPECT_EQ(BIG_MEM, at) {
		TH_LOG("the pool's memory differs from what was written at byte %zu (piece %zu)",
		       at, (size_t)(at / KXFER_TESTBUF_ALIAS_PIECE));
	}
	free(want);

	/* A read 200 GiB into the pool, to usrc */
	fill(mem + big_mem_at(rd_off), 8 * PG, 30);
	segs[0] = (struct kxfer_segment){ 256 * PG, rd_off, 8 * PG };
	job_init(&job, KXFER_OP_READ, u->src, u->peer, r.handle, segs, 1, 2);
	ASSERT_EQ(0, job_run(u->fd, &job));
	EXPECT_EQ(0, check(u->src_map + 256 * PG, 8 * PG, 30));

	/* The pool as the local side, 200 GiB into it */
	ASSERT_EQ(0, remote_wait(u->fd, u->peer, SRC_EXPORT, &r));
	segs[0] = (struct kxfer_segment){ rd_off, 512 * PG, 8 * PG };
	job_init(&job, KXFER_OP_WRITE, h, u->peer, r.handle, segs, 1, 3);
	ASSERT_EQ(0, job_run(u->fd, &job));
	EXPECT_EQ(0, check(u->src_map + 512 * PG, 8 * PG, 30));

	EXPECT_EQ(0, export_del(u->fd, "ubig-x"));
	EXPECT_EQ(0, detach(u->fd, h));
	munmap(mem, BIG_MEM);
	EXPECT_EQ(u->used0, pool_mem_used(u->fd));
	TH_LOG("a %llu GiB export in %u MRs of 2 MiB pages: writes at 12 KiB, its middle - 32 KiB and its end, a read at %llu MiB, checked in all of its memory",
	       (unsigned long long)(size >> 30), nmrs,
	       (unsigned long long)(rd_off >> 20));
}

/*
 * The longest export: 262144 MRs of 512 pages of what the memory allows.
 * With mr_max_page at 4096 (a driver that mishandles large pages), a pool
 * of 513 GiB is longer than one export can map (512 GiB), whoever asks,
 * and says so; with large pages back, the same range takes 513 MRs of
 * 2 MiB pages.  Scoped to a peer that never comes, it is registered on no
 * session: a guest could not hold the tables (upool_test.c, bigpool).
 */
#define BIG_4K_MAX	(512ULL << 30)	/* 262144 MRs of 512 pages of 4 KiB */

TEST_F(bigpool, export_too_long)
{
	const uint64_t size = BIG_4K_MAX + (1ULL << 30);
	FIXTURE_DATA(upool) *u = &self->u;
	struct kxfer_export_add e;
	uint32_t h;
	int dfd;

	dfd = make_testbuf(size, KXFER_TESTBUF_ALIAS, NULL);
	ASSERT_LE(0, dfd);
	ASSERT_EQ(0, reg_dmabuf(u->fd, "ubig", dfd, 0, size, "rxe0", &h));
	close(dfd);

	ASSERT_EQ(0, set_param("mr_max_page", "4096"));
	/* the pool; a page more than the most; the most, from byte 8 */
	EXPECT_EQ(-E2BIG, export_add(u->fd, "ubig-x", h, 0, size,
				     KXFER_ACCESS_READ));
	EXPECT_EQ(-E2BIG, export_add(u->fd, "ubig-x", h, 0, BIG_4K_MAX + PG,
				     KXFER_ACCESS_READ));
	EXPECT_EQ(-E2BIG, export_add(u->fd, "ubig-x", h, 8, BIG_4K_MAX,
				     KXFER_ACCESS_READ));
	/* The administrator's way, with the reason */
	EXPECT_EQ(0, run("out=$(kxferctl export add ubig-y pool ubig access read 2>&1); "
			 "s=$?; "
			 "echo \"$out\"; "
			 "test $s -ne 0 && echo \"$out\" | grep -q 'longer than one export can map'"));
	EXPECT_EQ(0, run("j=$(kxferctl -j export show); "
			 "echo \"$j\" | jq -e 'all(.[]; .name | test(\"^ubig\") | not)'"));

	/* Large pages again: the whole pool, for no session */
	ASSERT_EQ(0, set_param("mr_max_page", "1073741824"));
	export_args(&e, "ubig-x", h, 0, size, KXFER_ACCESS_READ);
	strcpy(e.peer, "nosuchpeer");
	EXPECT_EQ(0, ioctl(u->fd, KXFER_IOC_EXPORT_ADD, &e) ? -errno : 0);
	EXPECT_EQ(0, run("kxferctl -j export show ubig-x | jq -e '.[0] | .mr_page == 2097152 and .mrs == %llu' >/dev/null",
			 (unsigned long long)(size >> 30)));
	EXPECT_EQ(0, export_del(u->fd, "ubig-x"));
	EXPECT_EQ(0, detach(u->fd, h));
	EXPECT_EQ(u->used0, pool_mem_used(u->fd));
}

KXFER_HARNESS_MAIN
