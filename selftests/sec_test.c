// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: local security.
 *
 * A user other than a pool's owner (mode 0600, owner root) can neither
 * attach it nor reach it through guessed handles of any ioctl or mmap
 * window; a user without CAP_NET_ADMIN changes no configuration through
 * netlink (EPERM for every such command, reads still work); no ioctl
 * result and no netlink reply holds a value that looks like a kernel
 * address.  pool_test and netlink_test check the rest (attach by owner
 * and group, pool add/del unprivileged).
 *
 * Runs as root in a guest with kxfer.ko loaded and kxferctl on PATH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"
#include "nl.h"

#define NOBODY		65534
#define POOL_SIZE	(1UL << 20)

/* Become uid/gid @id without capabilities; 0 or -1. */
static int drop_to(unsigned int id)
{
	if (setgroups(0, NULL) || setresgid(id, id, id) || setresuid(id, id, id))
		return -1;
	return 0;
}

/* Run @fn(@arg) as @id in a child: its exit status (0: all held). */
static int as_user(unsigned int id, int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(drop_to(id) ? 100 : fn(arg));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Something that looks like a kernel address (not ~0 and not -errno). */
static int kptr_like(__u64 v)
{
	return v >= 0xffff800000000000ULL && v < 0xfffffffffff00000ULL;
}

/* Every 8-byte word of @buf: no kernel address. */
static int scan(const void *buf, size_t len, const char *what)
{
	const char *p = buf;
	size_t off;
	__u64 v;

	for (off = 0; off + 8 <= len; off += 8) {
		memcpy(&v, p + off, 8);
		if (kptr_like(v)) {
			fprintf(stderr, "# %s: 0x%llx at offset %zu looks like a kernel address\n",
				what, (unsigned long long)v, off);
			return 1;
		}
	}
	return 0;
}

/* Do @len bytes at @p parse exactly as attributes? */
static int attrs_exact(const struct nlattr *a, int rem)
{
	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem))
		;
	return rem == 0;
}

/*
 * Netlink attributes: every 8-byte payload (u64) must not be a kernel
 * address; payloads that parse as attributes are nests, scanned too.
 */
static int scan_attrs(const struct nlattr *a, int rem, const char *what)
{
	int bad = 0;

	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem)) {
		int plen = a->nla_len - NLA_HDRLEN;

		if (plen == 8)
			bad |= scan(KNL_NLA_DATA(a), 8, what);
		else if (plen > 8 && attrs_exact(KNL_NLA_DATA(a), plen))
			bad |= scan_attrs(KNL_NLA_DATA(a), plen, what);
	}
	return bad;
}

FIXTURE(sec) {
	int fd;			/* root's file, the pool attached and mapped */
	void *map;
	char pool[KXFER_NAME_MAX];
	char exp[KXFER_NAME_MAX];
	struct kxfer_pool_attach att;
};

FIXTURE_SETUP(sec)
{
	snprintf(self->pool, sizeof(self->pool), "sec%d", getpid());
	snprintf(self->exp, sizeof(self->exp), "sece%d", getpid());
	ASSERT_EQ(0, run("kxferctl pool add %s size 1M mode 0600", self->pool));
	ASSERT_EQ(0, run("kxferctl export add %s pool %s access read,write",
			 self->exp, self->pool));
	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
	memset(&self->att, 0, sizeof(self->att));
	strcpy(self->att.name, self->pool);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &self->att));
	self->map = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, self->att.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->map);
	memset(self->map, 0x5a, POOL_SIZE);
}

FIXTURE_TEARDOWN(sec)
{
	munmap(self->map, POOL_SIZE);
	close(self->fd);
	run("kxferctl export del %s", self->exp);
	run("kxferctl pool del %s", self->pool);
}

static int try_attach(void *name)
{
	struct kxfer_pool_attach a = {};
	int fd = open("/dev/kxfer", O_RDWR);

	if (fd < 0)
		return 101;
	strncpy(a.name, name, sizeof(a.name) - 1);
	return ioctl(fd, KXFER_IOC_POOL_ATTACH, &a) ? errno : 0;
}

/* Not the owner, nor root's group member with 0600: no attach. */
TEST_F(sec, other_users_cannot_attach)
{
	EXPECT_EQ(EACCES, as_user(NOBODY, try_attach, self->pool));
	EXPECT_EQ(EACCES, as_user(1000, try_attach, self->pool));
}

static int try_subscribe(void *name)
{
	struct kxfer_notify_sub ns = {};
	int fd = open("/dev/kxfer", O_RDWR);

	if (fd < 0)
		return 101;
	strncpy(ns.export, name, sizeof(ns.export) - 1);
	return ioctl(fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns) ? errno : 0;
}

/* The export's notifications need access to its pool too. */
TEST_F(sec, other_users_cannot_subscribe)
{
	EXPECT_EQ(EACCES, as_user(NOBODY, try_subscribe, self->exp));
}

/* @ret, errno of a call with handle @h: it must have failed with @want. */
static int refused(int ret, int want, const char *what, __u32 h)
{
	if (!ret || errno != want) {
		fprintf(stderr, "# %s with handle %u: %s, expected %s\n", what,
			h, ret ? strerror(errno) : "success", strerror(want));
		return 0;
	}
	return 1;
}

/*
 * A file of another user's process: every handle root's file holds (and
 * every other) names nothing here: no mmap window, no detach, no job, no
 * remote lookup, no unsubscribe.
 */
static int guess_handles(void *name)
{
	struct kxfer_segment seg = { .local_off = 0, .remote_off = 0, .len = 64 };
	struct kxfer_query q = {};
	int fd = open("/dev/kxfer", O_RDWR);
	__u32 h, max;

	if (fd < 0 || ioctl(fd, KXFER_IOC_QUERY, &q))
		return 101;
	max = q.max_pools_per_fd + 2;
	for (h = 0; h <= max; h++) {
		struct kxfer_pool_detach d = { .handle = h };
		struct kxfer_job job = {
			.op = KXFER_OP_WRITE, .pool = h, .peer = h, .remote = h,
			.nsegs = 1, .segs = (unsigned long)&seg,
		};
		struct kxfer_submit s = {
			.jobs = (unsigned long)&job, .njobs = 1,
		};
		struct kxfer_remote_lookup rl = { .peer = h };
		struct kxfer_notify_sub ns = { .handle = h };
		void *m;

		errno = 0;
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
			 (off_t)h << KXFER_MMAP_WINDOW_SHIFT);
		if (m != MAP_FAILED || errno != ENXIO) {
			fprintf(stderr, "# mmap of window %u: %s\n", h,
				m != MAP_FAILED ? "mapped" : strerror(errno));
			return 1;
		}
		if (!refused(ioctl(fd, KXFER_IOC_POOL_DETACH, &d), ENOENT,
			     "POOL_DETACH", h) ||
		    !refused(ioctl(fd, KXFER_IOC_SUBMIT, &s), ENOENT, "SUBMIT", h))
			return 1;
		if (s.accepted || s.error != -ENOENT) {
			fprintf(stderr, "# SUBMIT: accepted %u error %d\n",
				s.accepted, s.error);
			return 1;
		}
		strncpy(rl.name, name, sizeof(rl.name) - 1);
		if (!refused(ioctl(fd, KXFER_IOC_REMOTE_LOOKUP, &rl), ENOENT,
			     "REMOTE_LOOKUP", h) ||
		    !refused(ioctl(fd, KXFER_IOC_NOTIFY_UNSUBSCRIBE, &ns), ENOENT,
			     "NOTIFY_UNSUBSCRIBE", h))
			return 1;
	}
	return 0;
}

TEST_F(sec, other_users_cannot_guess_handles)
{
	EXPECT_EQ(0, as_user(NOBODY, guess_handles, self->exp));
	/* and root's pool is untouched */
	EXPECT_EQ(0x5a, ((unsigned char *)self->map)[0]);
	EXPECT_EQ(0x5a, ((unsigned char *)self->map)[POOL_SIZE - 1]);
}

/* Root's own file and mapping were not affected either. */
TEST_F(sec, owner_still_reaches_pool)
{
	struct kxfer_pool_detach d = { .handle = self->att.handle };

	ASSERT_EQ(0, as_user(NOBODY, guess_handles, self->exp));
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_DETACH, &d));
}

/* ---------------------------------------------------------------------- */
/* Netlink without CAP_NET_ADMIN                                           */
/* ---------------------------------------------------------------------- */

struct nl_req {
	const char *what;
	unsigned int cmd;
	const char *pool, *exp;
};

static void put_addr(struct knl *nl, __u16 type, const char *a)
{
	struct in_addr in;

	inet_pton(AF_INET, a, &in);
	knl_put(nl, type, &in, 4);
}

/* A valid request of each configuration command: only EPERM stops it. */
static int config_request(struct knl *nl, unsigned int cmd, const char *pool,
			  const char *exp)
{
	knl_begin(nl, nl->family, cmd, 0);
	switch (cmd) {
	case KXFER_CMD_POOL_NEW:
		knl_put_str(nl, KXFER_A_POOL_NAME, "secnew");
		knl_put_u64(nl, KXFER_A_POOL_SIZE, 4096);
		break;
	case KXFER_CMD_POOL_DEL:
		knl_put_str(nl, KXFER_A_POOL_NAME, pool);
		break;
	case KXFER_CMD_EXPORT_NEW:
		knl_put_str(nl, KXFER_A_EXPORT_NAME, "secnewe");
		knl_put_str(nl, KXFER_A_EXPORT_POOL, pool);
		knl_put_u32(nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
		break;
	case KXFER_CMD_EXPORT_DEL:
		knl_put_str(nl, KXFER_A_EXPORT_NAME, exp);
		break;
	case KXFER_CMD_LISTEN_NEW:
	case KXFER_CMD_LISTEN_DEL:
		put_addr(nl, KXFER_A_LISTEN_ADDR, "10.99.0.1");
		knl_put(nl, KXFER_A_LISTEN_PORT, &(__u16){ 7777 }, 2);
		break;
	case KXFER_CMD_PEER_NEW:
		knl_put_str(nl, KXFER_A_PEER_NAME, "secpeer");
		put_addr(nl, KXFER_A_PEER_ADDR, "10.99.0.1");
		break;
	case KXFER_CMD_PEER_DEL:
		knl_put_str(nl, KXFER_A_PEER_NAME, "secpeer");
		break;
	}
	return knl_xfer(nl, NULL, NULL);
}

static int unpriv_config(void *arg)
{
	static const unsigned int config[] = {
		KXFER_CMD_POOL_NEW, KXFER_CMD_POOL_DEL, KXFER_CMD_EXPORT_NEW,
		KXFER_CMD_EXPORT_DEL, KXFER_CMD_LISTEN_NEW, KXFER_CMD_LISTEN_DEL,
		KXFER_CMD_PEER_NEW, KXFER_CMD_PEER_DEL,
	};
	static const unsigned int reads[] = {
		KXFER_CMD_DEV_GET, KXFER_CMD_POOL_GET, KXFER_CMD_EXPORT_GET,
		KXFER_CMD_LISTEN_GET, KXFER_CMD_PEER_GET,
	};
	const struct nl_req *r = arg;
	struct knl nl;
	unsigned int i;
	int ret;

	/* A socket of the unprivileged user itself. */
	if (knl_open(&nl))
		return 101;
	for (i = 0; i < ARRAY_SIZE(config); i++) {
		ret = config_request(&nl, config[i], r->pool, r->exp);
		if (ret != -EPERM) {
			fprintf(stderr, "# command %u: %s, expected EPERM\n",
				config[i], strerror(-ret));
			return 1;
		}
	}
	for (i = 0; i < ARRAY_SIZE(reads); i++) {
		knl_begin(&nl, nl.family, reads[i], NLM_F_DUMP);
		ret = knl_xfer(&nl, NULL, NULL);
		if (ret) {
			fprintf(stderr, "# dump %u: %s\n", reads[i], strerror(-ret));
			return 1;
		}
	}
	return 0;
}

TEST_F(sec, unprivileged_changes_nothing)
{
	struct nl_req r = { .pool = self->pool, .exp = self->exp };

	EXPECT_EQ(0, as_user(NOBODY, unpriv_config, &r));
	/* still there, nothing new */
	EXPECT_EQ(0, run("kxferctl pool show %s >/dev/null", self->pool));
	EXPECT_EQ(0, run("kxferctl export show %s >/dev/null", self->exp));
	EXPECT_NE(0, run("kxferctl pool show secnew >/dev/null 2>&1"));
	EXPECT_NE(0, run("kxferctl peer show secpeer >/dev/null 2>&1"));
}

/* ---------------------------------------------------------------------- */
/* Kernel addresses                                                        */
/* ---------------------------------------------------------------------- */

struct scan_ctx {
	int bad, msgs;
	const char *what;
};

static void scan_cb(struct nlmsghdr *h, void *arg)
{
	struct scan_ctx *c = arg;

	c->msgs++;
	c->bad |= scan_attrs((void *)((char *)NLMSG_DATA(h) + GENL_HDRLEN),
			     h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, c->what);
}

TEST_F(sec, no_kernel_address_in_netlink)
{
	static const struct { unsigned int cmd; const char *what; } d[] = {
		{ KXFER_CMD_DEV_GET, "dev dump" },
		{ KXFER_CMD_POOL_GET, "pool dump" },
		{ KXFER_CMD_EXPORT_GET, "export dump" },
		{ KXFER_CMD_LISTEN_GET, "listen dump" },
		{ KXFER_CMD_PEER_GET, "peer dump" },
	};
	struct scan_ctx c = {};
	struct knl nl;
	unsigned int i;

	ASSERT_EQ(0, knl_open(&nl));
	for (i = 0; i < ARRAY_SIZE(d); i++) {
		c.what = d[i].what;
		knl_begin(&nl, nl.family, d[i].cmd, NLM_F_DUMP);
		EXPECT_EQ(0, knl_xfer(&nl, scan_cb, &c));
	}
	knl_begin(&nl, nl.family, KXFER_CMD_POOL_GET, 0);
	knl_put_str(&nl, KXFER_A_POOL_NAME, self->pool);
	c.what = "pool get";
	EXPECT_EQ(0, knl_xfer(&nl, scan_cb, &c));
	EXPECT_LE(3, c.msgs);
	EXPECT_EQ(0, c.bad);
	knl_close(&nl);
}

TEST_F(sec, no_kernel_address_in_ioctls)
{
	struct kxfer_query q;
	struct kxfer_pool_attach a;
	struct kxfer_notify_sub ns;

	memset(&q, 0, sizeof(q));
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_EQ(0, scan(&q, sizeof(q), "QUERY"));
	memset(&a, 0, sizeof(a));
	strcpy(a.name, self->pool);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(0, scan(&a, sizeof(a), "POOL_ATTACH"));
	memset(&ns, 0, sizeof(ns));
	strcpy(ns.export, self->exp);
	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns));
	EXPECT_EQ(0, scan(&ns, sizeof(ns), "NOTIFY_SUBSCRIBE"));
}

KXFER_HARNESS_MAIN
