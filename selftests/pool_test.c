// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: /dev/kxfer QUERY, POOL_ATTACH, POOL_DETACH and mmap.
 *
 * Runs as root in a guest with kxfer.ko loaded and kxferctl on PATH
 * (pools are created through the control plane).  Every invalid input
 * is checked alone, with its exact errno.  Output structures are
 * poisoned first so that a field the kernel did not write shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kxfer.h>

#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"

#define POOL_SIZE	(4UL << 20)
#define NOBODY		65534

static int attach(int fd, const char *name, struct kxfer_pool_attach *a)
{
	memset(a, 0xcc, sizeof(*a));
	memset(a->name, 0, sizeof(a->name));
	strncpy(a->name, name, sizeof(a->name) - 1);
	a->flags = 0;
	memset(a->reserved, 0, sizeof(a->reserved));
	return ioctl(fd, KXFER_IOC_POOL_ATTACH, a);
}

/* Run fn in a child as uid/gid, without capabilities; its exit code. */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Child body: try to attach the pool; exit with the errno (0: attached). */
static int try_attach(void *name)
{
	struct kxfer_pool_attach a;
	int fd = open("/dev/kxfer", O_RDWR);

	if (fd < 0)
		return 101;
	return attach(fd, name, &a) ? errno : 0;
}

static unsigned long long mem_used(int fd)
{
	struct kxfer_query q;

	memset(&q, 0, sizeof(q));
	if (ioctl(fd, KXFER_IOC_QUERY, &q))
		return ~0ULL;
	return q.pool_mem_used;
}

FIXTURE(kxfer) {
	int fd;
	char pool[KXFER_NAME_MAX];
};

FIXTURE_SETUP(kxfer)
{
	snprintf(self->pool, sizeof(self->pool), "t%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 4M mode 0600", self->pool));
	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(kxfer)
{
	close(self->fd);
	run("kxferctl pool del %s", self->pool);
}

TEST_F(kxfer, query)
{
	struct kxfer_query q;

	memset(&q, 0xcc, sizeof(q));
	q.flags = 0;
	q.reserved0 = 0;
	memset(q.reserved, 0, sizeof(q.reserved));
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_EQ(KXFER_API_VERSION, q.api_version);
	EXPECT_EQ(0, q.flags);
	EXPECT_TRUE(q.features & KXFER_FEAT_POOLS);
	EXPECT_EQ(1024, q.max_pools_per_fd);
	EXPECT_LT(0, q.pool_mem_max);
	EXPECT_LE(POOL_SIZE, q.pool_mem_used);
	EXPECT_GE(q.pool_mem_max, q.pool_mem_used);
	EXPECT_EQ(0, q.reserved[0]);
	EXPECT_EQ(0, q.reserved[2]);
	EXPECT_EQ(1024, q.max_notify_len);
}

TEST_F(kxfer, query_unknown_flag)
{
	struct kxfer_query q;

	memset(&q, 0, sizeof(q));
	q.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, query_reserved_nonzero)
{
	struct kxfer_query q;

	memset(&q, 0, sizeof(q));
	q.reserved[2] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, query_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_QUERY, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(kxfer, unknown_ioctl)
{
	char buf[256] = {};

	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(KXFER_IOC_MAGIC, 0x7f, buf), buf));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(kxfer, query_wrong_size)
{
	char buf[256] = {};

	/* The same number with another size is another command. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(KXFER_IOC_MAGIC, 0x00,
					    char[sizeof(struct kxfer_query) + 8]),
			    buf));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(kxfer, attach)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_LT(0, a.handle);
	EXPECT_EQ(POOL_SIZE, a.size);
	EXPECT_EQ((uint64_t)a.handle << KXFER_MMAP_WINDOW_SHIFT, a.mmap_offset);
	EXPECT_EQ(0, a.flags);
	EXPECT_EQ(0, a.reserved[0]);
	EXPECT_EQ(0, a.reserved[1]);
}

TEST_F(kxfer, attach_unknown_pool)
{
	struct kxfer_pool_attach a;

	EXPECT_EQ(-1, attach(self->fd, "no-such-pool", &a));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(kxfer, attach_empty_name)
{
	struct kxfer_pool_attach a;

	EXPECT_EQ(-1, attach(self->fd, "", &a));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, attach_unterminated_name)
{
	struct kxfer_pool_attach a;

	memset(&a, 0, sizeof(a));
	memset(a.name, 'x', sizeof(a.name));
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, attach_unknown_flag)
{
	struct kxfer_pool_attach a;

	memset(&a, 0, sizeof(a));
	strcpy(a.name, self->pool);
	a.flags = 0x80000000u;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, attach_reserved_nonzero)
{
	struct kxfer_pool_attach a;

	memset(&a, 0, sizeof(a));
	strcpy(a.name, self->pool);
	a.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, attach_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

/* max_pools_per_fd attachments (1024 by default, issue 44), then EMFILE */
TEST_F(kxfer, attach_limit)
{
	struct kxfer_pool_attach a;
	struct kxfer_query q = {};
	unsigned int i;

	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	ASSERT_GE(q.max_pools_per_fd, 1024);
	for (i = 0; i < q.max_pools_per_fd; i++)
		ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(q.max_pools_per_fd, a.handle);
	EXPECT_EQ(-1, attach(self->fd, self->pool, &a));
	EXPECT_EQ(EMFILE, errno);
}

TEST_F(kxfer, attach_denied_to_other_user)
{
	/* mode 0600, owner root: nobody may not attach */
	EXPECT_EQ(EACCES, as_user(NOBODY, NOBODY, try_attach, self->pool));
}

TEST_F(kxfer, attach_by_owner)
{
	char name[KXFER_NAME_MAX];

	snprintf(name, sizeof(name), "o%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 64K owner %d mode 0600",
			 name, NOBODY));
	EXPECT_EQ(0, as_user(NOBODY, NOBODY, try_attach, name));
	EXPECT_EQ(EACCES, as_user(1000, 1000, try_attach, name));
	EXPECT_EQ(0, run("kxferctl pool del %s", name));
}

TEST_F(kxfer, attach_by_group)
{
	char name[KXFER_NAME_MAX];

	snprintf(name, sizeof(name), "g%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 64K group 1234 mode 0060",
			 name));
	EXPECT_EQ(0, as_user(NOBODY, 1234, try_attach, name));
	EXPECT_EQ(EACCES, as_user(NOBODY, 1235, try_attach, name));
	EXPECT_EQ(0, run("kxferctl pool del %s", name));
}

TEST_F(kxfer, attach_read_only_mode_is_not_enough)
{
	char name[KXFER_NAME_MAX];

	snprintf(name, sizeof(name), "r%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 64K mode 0644", name));
	EXPECT_EQ(EACCES, as_user(NOBODY, NOBODY, try_attach, name));
	EXPECT_EQ(0, run("kxferctl pool del %s", name));
}

TEST_F(kxfer, detach)
{
	struct kxfer_pool_attach a;
	struct kxfer_pool_detach d = {};

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	d.handle = a.handle;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
	EXPECT_EQ(ENOENT, errno);
	/* A detached window cannot be mapped. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED,
				   self->fd, a.mmap_offset));
	EXPECT_EQ(ENXIO, errno);
}

TEST_F(kxfer, detach_unknown_flag)
{
	struct kxfer_pool_attach a;
	struct kxfer_pool_detach d = {};

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	d.handle = a.handle;
	d.flags = KXFER_POOL_DETACH_NOWAIT << 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
	EXPECT_EQ(EINVAL, errno);
	/* KXFER_POOL_DETACH_NOWAIT is known (a kernel pool ends nothing) */
	d.flags = KXFER_POOL_DETACH_NOWAIT;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
}

TEST_F(kxfer, detach_reserved_nonzero)
{
	struct kxfer_pool_attach a;
	struct kxfer_pool_detach d = {};

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	d.handle = a.handle;
	d.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, mmap_whole_pool_is_zeroed)
{
	struct kxfer_pool_attach a;
	unsigned char *p;
	size_t i;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	p = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < POOL_SIZE; i++)
		if (p[i])
			break;
	EXPECT_EQ(POOL_SIZE, i);
	munmap(p, POOL_SIZE);
}

TEST_F(kxfer, mmap_past_end)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, POOL_SIZE + 4096, PROT_READ,
				   MAP_SHARED, self->fd, a.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, mmap_offset_past_end)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED,
				   self->fd, a.mmap_offset + POOL_SIZE));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, mmap_unattached_window)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   a.mmap_offset + KXFER_MMAP_WINDOW));
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED,
				   self->fd, 0));
	EXPECT_EQ(ENXIO, errno);
}

TEST_F(kxfer, mmap_misaligned_offset)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED,
				   self->fd, a.mmap_offset + 100));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, mmap_private_refused)
{
	struct kxfer_pool_attach a;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, a.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(kxfer, mmap_part_of_pool)
{
	struct kxfer_pool_attach a;
	unsigned char *whole, *part;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	whole = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		     self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, whole);
	/* 3 pages from the pool's 2 MiB boundary minus one page */
	part = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, self->fd,
		    a.mmap_offset + (2 << 20) - 4096);
	ASSERT_NE(MAP_FAILED, part);
	whole[(2 << 20) - 4096] = 0x5a;
	whole[(2 << 20) + 4096] = 0xa5;
	EXPECT_EQ(0x5a, part[0]);
	EXPECT_EQ(0xa5, part[2 * 4096]);
	munmap(part, 3 * 4096);
	munmap(whole, POOL_SIZE);
}

/* Two processes, each with its own open file: one writes, one reads. */
TEST_F(kxfer, shared_between_processes)
{
	struct kxfer_pool_attach a;
	int pipefd[2], st;
	uint64_t *p;
	size_t i, n = POOL_SIZE / sizeof(*p);
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open("/dev/kxfer", O_RDWR);

		if (fd < 0 || attach(fd, self->pool, &a))
			_exit(1);
		p = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, a.mmap_offset);
		if (p == MAP_FAILED)
			_exit(2);
		for (i = 0; i < n; i++)
			p[i] = i * 0x9e3779b97f4a7c15ULL;
		_exit(write(pipefd[1], "w", 1) == 1 ? 0 : 3);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	p = mmap(NULL, POOL_SIZE, PROT_READ, MAP_SHARED, self->fd,
		 a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < n; i++)
		if (p[i] != i * 0x9e3779b97f4a7c15ULL)
			break;
	EXPECT_EQ(n, i);
	munmap(p, POOL_SIZE);
}

/* A mapping keeps the pool in use after detach and close. */
TEST_F(kxfer, mapping_keeps_pool_busy)
{
	struct kxfer_pool_attach a;
	struct kxfer_pool_detach d = {};
	void *p;

	ASSERT_EQ(0, attach(self->fd, self->pool, &a));
	EXPECT_EQ(1, run("kxferctl pool del %s 2>/dev/null", self->pool));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	d.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
	EXPECT_EQ(1, run("kxferctl pool del %s 2>/dev/null", self->pool));
	munmap(p, 4096);
	EXPECT_EQ(0, run("kxferctl pool del %s", self->pool));
}

/* Closing the file detaches everything it attached. */
TEST_F(kxfer, close_detaches)
{
	struct kxfer_pool_attach a;
	int fd = open("/dev/kxfer", O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, attach(fd, self->pool, &a));
	ASSERT_EQ(0, attach(fd, self->pool, &a));
	EXPECT_EQ(1, run("kxferctl pool del %s 2>/dev/null", self->pool));
	close(fd);
	EXPECT_EQ(0, run("kxferctl pool del %s", self->pool));
}

/* Pool memory is accounted while the pool exists and returned after. */
TEST_F(kxfer, accounting)
{
	unsigned long long before = mem_used(self->fd), with;
	char name[KXFER_NAME_MAX];

	snprintf(name, sizeof(name), "m%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 8M", name));
	with = mem_used(self->fd);
	EXPECT_EQ(before + (8ULL << 20), with);
	ASSERT_EQ(0, run("kxferctl pool del %s", name));
	EXPECT_EQ(before, mem_used(self->fd));
}

KXFER_HARNESS_MAIN
