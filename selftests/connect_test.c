// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: sessions on demand (KXFER_IOC_CONNECT) and the
 * administrator's policy that allows them (KXFER_CMD_CONNECT_*).
 *
 * Runs as root in one guest with kxfer.ko loaded, kxferctl on PATH and no
 * session.  Each test has a listener on port CT_PORT of this guest's
 * address ($KXFER_SELF_ADDR), which no session reaches until one is made
 * (on demand, or by the test), and a kernel pool "ct" exported as
 * "ct-x".  Every invalid input is checked alone, with its exact errno
 * (and, for netlink, its extack message).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "kselftest_harness.h"
/* kxferctl runs and sessions that come and go under TCG */
#define KXFER_HARNESS_TIMEOUT	180
#include "harness_main.h"
#include "test_util.h"
#include "nl.h"

#define CT_PORT		19880
#define NOBODY		65534

static const char *self_addr(void)
{
	const char *a = getenv("KXFER_SELF_ADDR");

	return a && *a ? a : "10.99.0.1";
}

/* A request for @addr (IPv4 or IPv6 text) and @port. */
static void conn_args(struct kxfer_connect *c, const char *addr, uint16_t port)
{
	memset(c, 0, sizeof(*c));
	c->port = port;
	if (inet_pton(AF_INET, addr, c->addr) == 1) {
		c->family = AF_INET;
	} else {
		c->family = AF_INET6;
		inet_pton(AF_INET6, addr, c->addr);
	}
}

static int conn(int fd, struct kxfer_connect *c)
{
	return ioctl(fd, KXFER_IOC_CONNECT, c) ? -errno : 0;
}

static int conn_to(int fd, const char *addr, uint16_t port)
{
	struct kxfer_connect c;

	conn_args(&c, addr, port);
	return conn(fd, &c);
}

static int release_peer(int fd, uint32_t h)
{
	struct kxfer_release r = { .kind = KXFER_HANDLE_PEER, .handle = h };

	return ioctl(fd, KXFER_IOC_RELEASE, &r) ? -errno : 0;
}

/* A CONNECT_NEW or _DEL of prefix @addr/@plen, port, and the rest if > 0. */
static int rule(struct knl *nl, uint8_t cmd, const char *addr, uint8_t plen,
		uint16_t port, const char *key, int qps, int idle)
{
	struct nlattr *a;
	unsigned char b[16];
	int v6 = !!strchr(addr, ':');

	inet_pton(v6 ? AF_INET6 : AF_INET, addr, b);
	knl_begin(nl, nl->family, cmd, 0);
	a = (struct nlattr *)(nl->buf + nl->len);
	a->nla_type = KXFER_A_CONNECT_PREFIX | NLA_F_NESTED;
	nl->len += NLA_HDRLEN;
	knl_put(nl, KXFER_A_PREFIX_ADDR, b, v6 ? 16 : 4);
	knl_put(nl, KXFER_A_PREFIX_LEN, &plen, 1);
	a->nla_len = (char *)nl->buf + nl->len - (char *)a;
	if (port)
		knl_put(nl, KXFER_A_CONNECT_PORT, &port, 2);
	if (key)
		knl_put_str(nl, KXFER_A_CONNECT_KEY, key);
	if (qps >= 0)
		knl_put_u32(nl, KXFER_A_CONNECT_QPS, qps);
	if (idle >= 0)
		knl_put_u32(nl, KXFER_A_CONNECT_IDLE, idle);
	return knl_xfer(nl, NULL, NULL);
}

/* Whether kxferctl lists a session of that name (and what jq says of it). */
static int peer_is(const char *name, const char *jq)
{
	return run("kxferctl -j peer show | jq -e '.[] | select(.name == \"%s\") | %s'"
		   " >/dev/null 2>&1", name, jq);
}

static int peer_gone(const char *name, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (run("kxferctl -j peer show | jq -e 'map(select(.name == \"%s\")) | length == 0'"
			" >/dev/null", name) == 0)
			return 0;
		usleep(100000);
	}
	return -1;
}

FIXTURE(conn) {
	int fd;
	struct knl nl;
	char name[KXFER_NAME_MAX];	/* the session made on demand */
};

FIXTURE_SETUP(conn)
{
	int one = 1;

	self->fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, knl_open(&self->nl));
	setsockopt(self->nl.fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	/* what a test that timed out (no teardown) may have left */
	run("{ kxferctl connect del %s port %u; kxferctl peer del ct-admin;"
	    " kxferctl listen del %s port %u; kxferctl export del ct-x;"
	    " kxferctl pool del ct; } 2>/dev/null", self_addr(), CT_PORT,
	    self_addr(), CT_PORT);
	ASSERT_EQ(0, run("kxferctl pool add ct size 64K && kxferctl export add ct-x pool ct"
			 " access read,write"));
	snprintf(self->name, sizeof(self->name), "%s:%u", self_addr(), CT_PORT);
	ASSERT_EQ(0, run("kxferctl listen %s port %u", self_addr(), CT_PORT));
}

FIXTURE_TEARDOWN(conn)
{
	close(self->fd);
	run("kxferctl connect del %s port %u 2>/dev/null", self_addr(), CT_PORT);
	run("kxferctl peer del %s 2>/dev/null", self->name);
	run("kxferctl peer del ct-admin 2>/dev/null");
	run("kxferctl listen del %s port %u", self_addr(), CT_PORT);
	peer_gone(self->name, 15000);
	run("kxferctl export del ct-x; kxferctl pool del ct");
	knl_close(&self->nl);
}

TEST_F(conn, query_feature)
{
	struct kxfer_query q = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, KXFER_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & KXFER_FEAT_CONNECT);
}

/* Malformed requests: EINVAL each, whatever the policy. */
TEST_F(conn, refusals)
{
	static const char *const bad[] = {
		"0.0.0.0", "127.0.0.1", "224.0.0.1", "255.255.255.255",
		"::", "::1", "ff02::1", "::ffff:10.99.0.1",
	};
	struct kxfer_connect c;
	unsigned int i;

	ASSERT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_NEW, self_addr(), 32,
			  CT_PORT, NULL, -1, -1));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		conn_args(&c, bad[i], CT_PORT);
		if (conn(self->fd, &c) != -EINVAL) {
			TH_LOG("%s: not EINVAL", bad[i]);
			_metadata->passed = 0;
		}
	}
	conn_args(&c, self_addr(), CT_PORT);
	c.flags = 1;
	EXPECT_EQ(-EINVAL, conn(self->fd, &c));
	conn_args(&c, self_addr(), CT_PORT);
	c.reserved0 = 1;
	EXPECT_EQ(-EINVAL, conn(self->fd, &c));
	conn_args(&c, self_addr(), CT_PORT);
	c.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, conn(self->fd, &c));
	conn_args(&c, self_addr(), CT_PORT);
	c.family = AF_UNIX;
	EXPECT_EQ(-EINVAL, conn(self->fd, &c));
	conn_args(&c, self_addr(), CT_PORT);
	c.addr[15] = 1;		/* bytes past an IPv4 address */
	EXPECT_EQ(-EINVAL, conn(self->fd, &c));
	EXPECT_EQ(-1, ioctl(self->fd, KXFER_IOC_CONNECT, NULL));
	EXPECT_EQ(EFAULT, errno);
	/* Nothing was made */
	EXPECT_EQ(0, peer_gone(self->name, 0 + 1));
}

/* What the policy does not allow: EACCES, and nothing is made. */
TEST_F(conn, policy)
{
	/* no rule */
	EXPECT_EQ(-EACCES, conn_to(self->fd, self_addr(), CT_PORT));
	/* a rule of another port; of another prefix */
	ASSERT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_NEW, self_addr(), 32,
			  CT_PORT + 1, NULL, -1, -1));
	EXPECT_EQ(-EACCES, conn_to(self->fd, self_addr(), CT_PORT));
	ASSERT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_NEW, "10.98.0.0", 16,
			  CT_PORT, NULL, -1, -1));
	EXPECT_EQ(-EACCES, conn_to(self->fd, self_addr(), CT_PORT));
	EXPECT_EQ(-EACCES, conn_to(self->fd, "fd00::1", CT_PORT));
	EXPECT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_DEL, self_addr(), 32,
			  CT_PORT + 1, NULL, -1, -1));
	EXPECT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_DEL, "10.98.0.0", 16,
			  CT_PORT, NULL, -1, -1));
	EXPECT_EQ(0, peer_gone(self->name, 1));
}

/* The rules themselves: each bad one alone, its errno and reason. */
TEST_F(conn, rules)
{
	struct knl *nl = &self->nl;
	const char *a = self_addr();

	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, "0.0.0.0", 0, 0, NULL, -1, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "length 0"));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, "10.99.0.1", 24, 0, NULL, -1, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "bits set past its length"));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, "10.99.0.1", 33, 0, NULL, -1, -1));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, "224.0.0.0", 8, 0, NULL, -1, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "unicast"));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, "127.0.0.0", 8, 0, NULL, -1, -1));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, 0, NULL, 0, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "qps"));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, 0, NULL, 17, -1));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, 0, NULL, -1, 0));
	EXPECT_NE(NULL, strstr(nl->extack, "idle"));
	EXPECT_EQ(-EINVAL, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, 0, NULL, -1, 86401));
	EXPECT_EQ(-ENOENT, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, 0, "ct-nosuch", -1, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "no such key"));
	/* port 0 is no port */
	knl_begin(nl, nl->family, KXFER_CMD_CONNECT_NEW, 0);
	knl_put(nl, KXFER_A_CONNECT_PORT, &(uint16_t){ 0 }, 2);
	EXPECT_EQ(-ERANGE, knl_xfer(nl, NULL, NULL));
	/* no prefix */
	knl_begin(nl, nl->family, KXFER_CMD_CONNECT_NEW, 0);
	EXPECT_EQ(-EINVAL, knl_xfer(nl, NULL, NULL));
	EXPECT_EQ(-ENOENT, rule(nl, KXFER_CMD_CONNECT_DEL, a, 32, CT_PORT, NULL, -1, -1));
	EXPECT_NE(NULL, strstr(nl->extack, "no rule"));

	ASSERT_EQ(0, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, CT_PORT, NULL, 2, 7));
	EXPECT_EQ(-EEXIST, rule(nl, KXFER_CMD_CONNECT_NEW, a, 32, CT_PORT, NULL, -1, -1));
	EXPECT_EQ(0, run("kxferctl -j connect show | jq -e '.[] | select(.prefix == \"%s/32\""
			 " and .port == %u) | .qps == 2 and .idle == 7 and .made == 0'"
			 " >/dev/null", a, CT_PORT));
	EXPECT_EQ(0, run("kxferctl connect show | grep -q 'connect allow %s/32 port %u'",
			 a, CT_PORT));
	/* kxferctl's own checks */
	EXPECT_EQ(2, run("kxferctl connect allow 10.0.0.0/0 2>/dev/null"));
	EXPECT_EQ(2, run("kxferctl connect allow 10.99.0.1/24 2>/dev/null"));
	EXPECT_EQ(2, run("kxferctl connect allow %s qps 17 2>/dev/null", a));
	EXPECT_EQ(2, run("kxferctl connect allow %s idle 0 2>/dev/null", a));
	/* Unprivileged: no change, EPERM (GENL_ADMIN_PERM); show works */
	EXPECT_EQ(0, run("setpriv --reuid=%d --regid=%d --clear-groups kxferctl connect allow"
			 " %s port %u 2>&1 | grep -q 'Operation not permitted'",
			 NOBODY, NOBODY, a, CT_PORT + 2));
	EXPECT_EQ(0, run("setpriv --reuid=%d --regid=%d --clear-groups kxferctl connect del"
			 " %s port %u 2>&1 | grep -q 'Operation not permitted'",
			 NOBODY, NOBODY, a, CT_PORT));
	EXPECT_EQ(0, run("setpriv --reuid=%d --regid=%d --clear-groups kxferctl -j connect show"
			 " | jq -e 'length >= 1' >/dev/null", NOBODY, NOBODY));
	EXPECT_EQ(0, rule(nl, KXFER_CMD_CONNECT_DEL, a, 32, CT_PORT, NULL, -1, -1));
}

/*
 * Under a rule, an unprivileged process has a session made: listed as
 * made on demand, named after the address, with the rule's QPs; a second
 * request gets the same session; it carries jobs; once no handle names
 * it for the rule's idle time, it ends (and a request after that makes
 * a new one).
 */
TEST_F(conn, on_demand)
{
	struct kxfer_release rel = { .kind = KXFER_HANDLE_REMOTE };
	struct kxfer_remote_lookup rl;
	struct kxfer_connect c, c2;
	uint64_t t0;
	pid_t pid;
	int st;

	ASSERT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_NEW, self_addr(), 32,
			  CT_PORT, NULL, 2, 2));

	/* nobody: made, and a handle it uses and gives back */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(10);
		fd = open("/dev/kxfer", O_RDWR);
		conn_args(&c, self_addr(), CT_PORT);
		_exit(fd < 0 ? 11 : conn(fd, &c) ? 12 :
		      strcmp(c.name, self->name) ? 13 : c.qps != 2 ? 14 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	EXPECT_EQ(0, peer_is(self->name, ".made == \"on-demand\" and .idle_timeout == 2 and"
			     " .role == \"connector\" and .qps == 2"));
	EXPECT_EQ(0, run("kxferctl peer show %s | grep -q 'made on-demand'", self->name));

	/* root, here: the same session, up, and jobs on it */
	conn_args(&c, self_addr(), CT_PORT);
	ASSERT_EQ(0, conn(self->fd, &c));
	EXPECT_STREQ(self->name, c.name);
	conn_args(&c2, self_addr(), CT_PORT);
	ASSERT_EQ(0, conn(self->fd, &c2));
	EXPECT_NE(c.handle, c2.handle);
	EXPECT_EQ(0, release_peer(self->fd, c2.handle));
	t0 = now_ms();
	do {
		memset(&rl, 0, sizeof(rl));
		rl.peer = c.handle;
		strcpy(rl.name, "ct-x");
		if (!ioctl(self->fd, KXFER_IOC_REMOTE_LOOKUP, &rl))
			break;
		usleep(50000);
	} while (now_ms() - t0 < 20000);
	ASSERT_NE(0, rl.handle);
	EXPECT_EQ(0, run("kxferctl -j connect show | jq -e '.[] | select(.port == %u) |"
			 " .made == 1' >/dev/null", CT_PORT));

	/* Used: it stays past its idle time */
	sleep(3);
	EXPECT_EQ(0, peer_is(self->name, ".idle_ms == null or .idle_ms == 0"));
	/* Unused: it ends within its idle time and a timer tick or two */
	EXPECT_EQ(0, release_peer(self->fd, c.handle));
	rel.handle = rl.handle;
	EXPECT_EQ(0, ioctl(self->fd, KXFER_IOC_RELEASE, &rel));
	t0 = now_ms();
	EXPECT_EQ(0, peer_gone(self->name, 15000));
	EXPECT_LE(1500, now_ms() - t0);
	EXPECT_EQ(0, run("dmesg | grep -q 'peer %s: made on demand and unused for 2 s: ended'",
			 self->name));
	/* asked again: made again */
	conn_args(&c, self_addr(), CT_PORT);
	ASSERT_EQ(0, conn(self->fd, &c));
	EXPECT_EQ(0, peer_is(self->name, ".made == \"on-demand\""));
	EXPECT_EQ(0, release_peer(self->fd, c.handle));
	EXPECT_EQ(0, peer_gone(self->name, 15000));
	EXPECT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_DEL, self_addr(), 32,
			  CT_PORT, NULL, -1, -1));
}

/*
 * A session there is already (an administrator's, to that address and
 * port) is what CONNECT gives, under a rule: nothing is made, and it does
 * not end when unused.
 */
TEST_F(conn, existing_session)
{
	struct kxfer_connect c;

	ASSERT_EQ(0, run("kxferctl peer add ct-admin %s port %u", self_addr(), CT_PORT));
	ASSERT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_NEW, self_addr(), 32,
			  CT_PORT, NULL, -1, 1));
	conn_args(&c, self_addr(), CT_PORT);
	ASSERT_EQ(0, conn(self->fd, &c));
	EXPECT_STREQ("ct-admin", c.name);
	EXPECT_EQ(0, release_peer(self->fd, c.handle));
	sleep(3);
	EXPECT_EQ(0, peer_is("ct-admin", ".made == null"));
	EXPECT_EQ(0, run("kxferctl -j connect show | jq -e '.[0].made == 0' >/dev/null"));
	EXPECT_EQ(0, rule(&self->nl, KXFER_CMD_CONNECT_DEL, self_addr(), 32,
			  CT_PORT, NULL, -1, -1));
}

KXFER_HARNESS_MAIN
