// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_nl: a fuzzer of the "kxfer" generic netlink family.
 *
 * Random commands (valid and not), random attributes (the right types
 * with wrong lengths, unknown types, nested garbage, oversized and
 * unterminated strings, missing ones), random flags (NLM_F_DUMP on a
 * doit-only command...), over a raw socket, as root or, with --unpriv,
 * after dropping to uid/gid 65534 in a child.
 *
 * Checked: the answer is an error the family documents for the command
 * (kmod/netlink.c and what it calls, and the generic netlink core's
 * EINVAL/ERANGE/EOPNOTSUPP), exactly EPERM for every configuration
 * change made without CAP_NET_ADMIN, exactly EOPNOTSUPP for unknown
 * commands; every reply is well formed (attribute lengths and types of
 * the command's attribute set, nests included) and holds no value that
 * looks like a kernel address, and no key's secret: every secret the
 * fuzzer gives (key-new, key-set) is looked for in every reply, and in
 * the request a refusal of the module's echoes back (wiped by then).
 * Objects the fuzzer creates are named "nz..." (listeners: on the
 * addresses it picks); --cleanup removes them and checks that what is
 * left is what was there before.
 *
 * Exit status 0 when all held, 1 otherwise (the seed and the message
 * are printed), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "nl.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

#define NOBODY		65534
#define MAXMSG		8192

static __u64 opt_seed;
static unsigned long opt_iters = 5000;
static unsigned int opt_time = 30;
static int opt_unpriv, opt_cleanup, opt_verbose;
static int unpriv;	/* this process runs without privilege */
static __u64 rng;
static int failures;
static unsigned long iter;
static char desc[2048];

static unsigned long n_sent, n_ok, n_err[256], n_replies, n_eperm;

static __u64 rnd(void)
{
	__u64 x = rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static __u64 rbelow(__u64 n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int one_in)
{
	return rbelow(one_in) == 0;
}

static __printf(1, 2) void fail(const char *fmt, ...);

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL seed %llu%s iteration %lu: ", (unsigned long long)opt_seed,
	       unpriv ? " (unprivileged)" : "", iter);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n  request: %s\n", desc);
	fflush(stdout);
	failures++;
}

/* ---------------------------------------------------------------------- */
/* What the family looks like                                              */
/* ---------------------------------------------------------------------- */

/*
 * T_S64: a signed 64-bit value, which may be negative: no pointer check.
 * T_SECRET: a key's secret, which replies never carry.
 * T_FLAG: a flag, no payload.
 */
enum t { T_NONE, T_U8, T_U16, T_U32, T_S32, T_U64, T_S64, T_STR, T_BIN,
	 T_NEST, T_PAD, T_SECRET, T_HIST, T_FLAG };

enum aset { S_DEV, S_PORT, S_POOL, S_CHUNK, S_POOLDEV, S_EXPORT, S_LISTEN,
	    S_PREFIX, S_PEER, S_QP, S_REXP, S_STATS, S_KEY, S_CONNECT, S_NSETS };

struct attr {
	enum t		type;
	enum aset	nest;	/* for T_NEST */
};

static const struct attr a_dev[] = {
	[KXFER_A_DEV_NAME] = { T_STR },
	[KXFER_A_DEV_NODE_GUID] = { T_U64 },
	[KXFER_A_DEV_PORTS] = { T_NEST, S_DEV },
	[KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN] = { T_U32 },
	[KXFER_A_DEV_MAX_SEND_SGE] = { T_U32 },
	[KXFER_A_DEV_MAX_QP_WR] = { T_U32 },
	[KXFER_A_DEV_MAX_MR_SIZE] = { T_U64 },
	[KXFER_A_DEV_PORT] = { T_NEST, S_PORT },
	[KXFER_A_DEV_PAD] = { T_PAD },
};

static const struct attr a_port[] = {
	[KXFER_A_PORT_NUM] = { T_U32 },
	[KXFER_A_PORT_STATE] = { T_U32 },
	[KXFER_A_PORT_LINK_LAYER] = { T_U32 },
	[KXFER_A_PORT_ACTIVE_MTU] = { T_U32 },
	[KXFER_A_PORT_GID_TBL_LEN] = { T_U32 },
	[KXFER_A_PORT_NETDEV] = { T_STR },
};

static const struct attr a_pool[] = {
	[KXFER_A_POOL_NAME] = { T_STR },
	[KXFER_A_POOL_SIZE] = { T_U64 },
	[KXFER_A_POOL_OWNER] = { T_U32 },
	[KXFER_A_POOL_GROUP] = { T_U32 },
	[KXFER_A_POOL_MODE] = { T_U32 },
	[KXFER_A_POOL_NUMA_NODE] = { T_S32 },
	[KXFER_A_POOL_CHUNKS] = { T_NEST, S_POOL },
	[KXFER_A_POOL_CHUNK] = { T_NEST, S_CHUNK },
	[KXFER_A_POOL_ATTACH_COUNT] = { T_U32 },
	[KXFER_A_POOL_EXPORT_COUNT] = { T_U32 },
	[KXFER_A_POOL_DEVICES] = { T_NEST, S_POOL },
	[KXFER_A_POOL_DEVICE] = { T_NEST, S_POOLDEV },
	[KXFER_A_POOL_ALLOC_NS] = { T_U64 },
	[KXFER_A_POOL_MAP_NS] = { T_U64 },
	[KXFER_A_POOL_KIND] = { T_U32 },
	[KXFER_A_POOL_PID] = { T_U32 },
	[KXFER_A_POOL_COMM] = { T_STR },
	[KXFER_A_POOL_NEAR] = { T_STR },
	[KXFER_A_POOL_PAD] = { T_PAD },
};

static const struct attr a_chunk[] = {
	[KXFER_A_CHUNK_SIZE] = { T_U64 },
	[KXFER_A_CHUNK_COUNT] = { T_U32 },
	[KXFER_A_CHUNK_PAD] = { T_PAD },
};

static const struct attr a_pooldev[] = {
	[KXFER_A_POOL_DEV_NAME] = { T_STR },
	[KXFER_A_POOL_DEV_MAP_NS] = { T_U64 },
	[KXFER_A_POOL_DEV_PAD] = { T_PAD },
};

static const struct attr a_export[] = {
	[KXFER_A_EXPORT_NAME] = { T_STR },
	[KXFER_A_EXPORT_POOL] = { T_STR },
	[KXFER_A_EXPORT_OFFSET] = { T_U64 },
	[KXFER_A_EXPORT_LEN] = { T_U64 },
	[KXFER_A_EXPORT_PEER] = { T_STR },
	[KXFER_A_EXPORT_ACCESS] = { T_U32 },
	[KXFER_A_EXPORT_PAD] = { T_PAD },
	[KXFER_A_EXPORT_FROM] = { T_NEST, S_PREFIX },
	[KXFER_A_EXPORT_PID] = { T_U32 },
	[KXFER_A_EXPORT_AUTH] = { T_U32 },
	[KXFER_A_EXPORT_MR_PAGE] = { T_U64 },
	[KXFER_A_EXPORT_MRS] = { T_U32 },
	[KXFER_A_EXPORT_SCOPED] = { T_FLAG },
};

static const struct attr a_listen[] = {
	[KXFER_A_LISTEN_ADDR] = { T_BIN },
	[KXFER_A_LISTEN_PORT] = { T_U16 },
	[KXFER_A_LISTEN_ALLOW] = { T_NEST, S_PREFIX },
	[KXFER_A_LISTEN_STATE] = { T_U32 },
	[KXFER_A_LISTEN_ACCEPTED] = { T_U32 },
	[KXFER_A_LISTEN_REJECTED] = { T_U32 },
	[KXFER_A_LISTEN_KEY] = { T_STR },
	[KXFER_A_LISTEN_AUTH] = { T_U32 },
	[KXFER_A_LISTEN_AUTH_OK] = { T_U32 },
	[KXFER_A_LISTEN_AUTH_FAILED] = { T_U32 },
	[KXFER_A_LISTEN_POLL] = { T_FLAG },
	[KXFER_A_LISTEN_EVICTED] = { T_U32 },
};

static const struct attr a_prefix[] = {
	[KXFER_A_PREFIX_ADDR] = { T_BIN },
	[KXFER_A_PREFIX_LEN] = { T_U8 },
};

static const struct attr a_peer[] = {
	[KXFER_A_PEER_NAME] = { T_STR },
	[KXFER_A_PEER_ADDR] = { T_BIN },
	[KXFER_A_PEER_PORT] = { T_U16 },
	[KXFER_A_PEER_QPS] = { T_U32 },
	[KXFER_A_PEER_DEPTH] = { T_U32 },
	[KXFER_A_PEER_STATE] = { T_U32 },
	[KXFER_A_PEER_ROLE] = { T_U32 },
	[KXFER_A_PEER_DEV] = { T_STR },
	[KXFER_A_PEER_PORT_NUM] = { T_U32 },
	[KXFER_A_PEER_REMOTE_NODE] = { T_STR },
	[KXFER_A_PEER_RECONNECTS] = { T_U32 },
	[KXFER_A_PEER_LAST_ERROR] = { T_STR },
	[KXFER_A_PEER_LAST_ERRNO] = { T_S32 },
	[KXFER_A_PEER_KEEPALIVE_RTT_NS] = { T_U64 },
	[KXFER_A_PEER_UP_NS] = { T_U64 },
	[KXFER_A_PEER_QP] = { T_NEST, S_QP },
	[KXFER_A_PEER_REMOTE_EXPORT] = { T_NEST, S_REXP },
	[KXFER_A_PEER_PAD] = { T_PAD },
	[KXFER_A_PEER_ID] = { T_U32 },
	[KXFER_A_PEER_STATS] = { T_NEST, S_STATS },
	[KXFER_A_PEER_ATTEMPTS] = { T_U32 },
	[KXFER_A_PEER_NEXT_TRY_NS] = { T_S64 },
	[KXFER_A_PEER_KEY] = { T_STR },
	[KXFER_A_PEER_AUTH] = { T_U32 },
	[KXFER_A_PEER_AUTH_FAILURES] = { T_U32 },
	[KXFER_A_PEER_POLL] = { T_FLAG },
	[KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS] = { T_U64 },
	[KXFER_A_PEER_EXPORTS_WITHHELD] = { T_U32 },
	[KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS] = { T_U32 },
	[KXFER_A_PEER_HANDLES] = { T_U32 },
	[KXFER_A_PEER_DRAINING] = { T_U32 },
	[KXFER_A_PEER_LOCAL_EXPORT] = { T_NEST, S_REXP },
	[KXFER_A_PEER_EXPORTS_OMITTED] = { T_FLAG },
	[KXFER_A_PEER_REMOTE_SCOPED] = { T_U32 },
	[KXFER_A_PEER_ON_DEMAND] = { T_FLAG },
	[KXFER_A_PEER_IDLE_TIMEOUT] = { T_U32 },
	[KXFER_A_PEER_IDLE_MS] = { T_U32 },
};

static const struct attr a_qp[] = {
	[KXFER_A_QP_INDEX] = { T_U32 },
	[KXFER_A_QP_NUM] = { T_U32 },
	[KXFER_A_QP_REMOTE_NUM] = { T_U32 },
	[KXFER_A_QP_STATE] = { T_U32 },
	[KXFER_A_QP_PARTS] = { T_U64 },
	[KXFER_A_QP_BYTES] = { T_U64 },
	[KXFER_A_QP_WRS] = { T_U64 },
	[KXFER_A_QP_DOORBELLS] = { T_U64 },
	[KXFER_A_QP_PAD] = { T_PAD },
	[KXFER_A_QP_SIGNALED] = { T_U64 },
	[KXFER_A_QP_HANDOFFS] = { T_U64 },
};

static const struct attr a_stats[] = {
	[KXFER_A_STATS_JOBS] = { T_U64 },
	[KXFER_A_STATS_BYTES] = { T_U64 },
	[KXFER_A_STATS_SEGS] = { T_U64 },
	[KXFER_A_STATS_WRS] = { T_U64 },
	[KXFER_A_STATS_OK] = { T_U64 },
	[KXFER_A_STATS_NOTIFY_SENT] = { T_U64 },
	[KXFER_A_STATS_NOTIFY_RECV] = { T_U64 },
	[KXFER_A_STATS_ERR_FLUSH] = { T_U64 },
	[KXFER_A_STATS_ERR_ACCESS] = { T_U64 },
	[KXFER_A_STATS_ERR_TIMEOUT] = { T_U64 },
	[KXFER_A_STATS_ERR_REMOTE] = { T_U64 },
	[KXFER_A_STATS_ERR_STALE] = { T_U64 },
	[KXFER_A_STATS_ERR_OTHER] = { T_U64 },
	[KXFER_A_STATS_PAD] = { T_PAD },
	[KXFER_A_STATS_NOTIFY_IMM] = { T_U64 },
	[KXFER_A_STATS_LAT_QUEUE] = { T_HIST },
	[KXFER_A_STATS_LAT_DONE] = { T_HIST },
	[KXFER_A_STATS_POLLED] = { T_U64 },
	[KXFER_A_STATS_POLLED_WORK] = { T_U64 },
};

static const struct attr a_rexp[] = {
	[KXFER_A_REXP_NAME] = { T_STR },
	[KXFER_A_REXP_LEN] = { T_U64 },
	[KXFER_A_REXP_ACCESS] = { T_U32 },
	[KXFER_A_REXP_GEN] = { T_U64 },
	[KXFER_A_REXP_MRS] = { T_U32 },
	[KXFER_A_REXP_PAD] = { T_PAD },
	[KXFER_A_REXP_MR_PAGE] = { T_U64 },
};

static const struct attr a_key[] = {
	[KXFER_A_KEY_NAME] = { T_STR },
	[KXFER_A_KEY_SECRET] = { T_SECRET },	/* never in a reply */
	[KXFER_A_KEY_PEER] = { T_STR },
	[KXFER_A_KEY_GEN] = { T_U32 },
	[KXFER_A_KEY_LISTENER] = { T_NEST, S_LISTEN },
	[KXFER_A_KEY_USER] = { T_STR },
};

static const struct attr a_connect[] = {
	[KXFER_A_CONNECT_PREFIX] = { T_NEST, S_PREFIX },
	[KXFER_A_CONNECT_PORT] = { T_U16 },
	[KXFER_A_CONNECT_KEY] = { T_STR },
	[KXFER_A_CONNECT_QPS] = { T_U32 },
	[KXFER_A_CONNECT_IDLE] = { T_U32 },
	[KXFER_A_CONNECT_MADE] = { T_U32 },
	[KXFER_A_CONNECT_REFUSED] = { T_U32 },
};

#define SET(a) { a, ARRAY_SIZE(a) - 1 }
static const struct {
	const struct attr	*a;
	unsigned int		max;
} sets[S_NSETS] = {
	[S_DEV] = SET(a_dev), [S_PORT] = SET(a_port), [S_POOL] = SET(a_pool),
	[S_CHUNK] = SET(a_chunk), [S_POOLDEV] = SET(a_pooldev),
	[S_EXPORT] = SET(a_export), [S_LISTEN] = SET(a_listen),
	[S_PREFIX] = SET(a_prefix), [S_PEER] = SET(a_peer), [S_QP] = SET(a_qp),
	[S_REXP] = SET(a_rexp), [S_STATS] = SET(a_stats), [S_KEY] = SET(a_key),
	[S_CONNECT] = SET(a_connect),
};

/* The ports nest holds KXFER_A_DEV_PORT entries of the port set. */
static enum aset nest_set(enum aset parent, unsigned int type)
{
	if (parent == S_DEV && type == KXFER_A_DEV_PORTS)
		return S_DEV;
	if (parent == S_POOL && type == KXFER_A_POOL_CHUNKS)
		return S_POOL;
	if (parent == S_POOL && type == KXFER_A_POOL_DEVICES)
		return S_POOL;
	return sets[parent].a[type].nest;
}

/* Errors of each command; the first five: the core's and the policies'. */
static const int e_dev_get[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, ENODEV, 0 };
static const int e_pool_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, ENOSPC, 0 };
static const int e_pool_del[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, ENOENT, EBUSY, 0 };
static const int e_get[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, ENOENT, 0 };
static const int e_export_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, ENOENT, 0 };
static const int e_del[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, ENOENT, 0 };
static const int e_listen_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, EADDRNOTAVAIL, EADDRINUSE,
				    ENODEV, EAFNOSUPPORT, ENOENT, 0 };
static const int e_peer_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, ENOENT, 0 };
static const int e_key_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, 0 };
static const int e_key_del[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, ENOENT, EBUSY, 0 };
static const int e_connect_new[] = { EINVAL, ERANGE, EOPNOTSUPP, ENOMEM, EMSGSIZE, EEXIST, ENOENT, ENOSPC, 0 };

struct cmd {
	const char	*name;
	enum aset	set;
	bool		admin;	/* GENL_ADMIN_PERM */
	bool		doit, dumpit;
	const int	*errs;
};

static const struct cmd cmds[KXFER_CMD_MAX + 1] = {
	[KXFER_CMD_DEV_GET] = { "dev-get", S_DEV, false, true, true, e_dev_get },
	[KXFER_CMD_POOL_NEW] = { "pool-new", S_POOL, true, true, false, e_pool_new },
	[KXFER_CMD_POOL_DEL] = { "pool-del", S_POOL, true, true, false, e_pool_del },
	[KXFER_CMD_POOL_GET] = { "pool-get", S_POOL, false, true, true, e_get },
	[KXFER_CMD_EXPORT_NEW] = { "export-new", S_EXPORT, true, true, false,
				   e_export_new },
	[KXFER_CMD_EXPORT_DEL] = { "export-del", S_EXPORT, true, true, false, e_del },
	[KXFER_CMD_EXPORT_GET] = { "export-get", S_EXPORT, false, true, true, e_get },
	[KXFER_CMD_LISTEN_NEW] = { "listen-new", S_LISTEN, true, true, false,
				   e_listen_new },
	[KXFER_CMD_LISTEN_DEL] = { "listen-del", S_LISTEN, true, true, false, e_del },
	[KXFER_CMD_LISTEN_GET] = { "listen-get", S_LISTEN, false, false, true, e_get },
	[KXFER_CMD_PEER_NEW] = { "peer-new", S_PEER, true, true, false, e_peer_new },
	[KXFER_CMD_PEER_DEL] = { "peer-del", S_PEER, true, true, false, e_del },
	[KXFER_CMD_PEER_GET] = { "peer-get", S_PEER, false, true, true, e_get },
	[KXFER_CMD_STATS_GET] = { "stats-get", S_PEER, false, true, true, e_get },
	[KXFER_CMD_KEY_NEW] = { "key-new", S_KEY, true, true, false, e_key_new },
	[KXFER_CMD_KEY_SET] = { "key-set", S_KEY, true, true, false, e_del },
	[KXFER_CMD_KEY_DEL] = { "key-del", S_KEY, true, true, false, e_key_del },
	[KXFER_CMD_KEY_GET] = { "key-get", S_KEY, false, true, true, e_get },
	[KXFER_CMD_CONNECT_NEW] = { "connect-new", S_CONNECT, true, true, false,
				    e_connect_new },
	[KXFER_CMD_CONNECT_DEL] = { "connect-del", S_CONNECT, true, true, false, e_del },
	[KXFER_CMD_CONNECT_GET] = { "connect-get", S_CONNECT, false, false, true, e_get },
};

/*
 * Secrets given to the module, the last SECRETS of them: none may come
 * back.  Each starts with a marker, so that even a piece of one shows.
 */
#define SECRETS		64
#define SECRET_MARK	"nzS3cr"
static unsigned char secrets[SECRETS][16];
static unsigned int n_secrets;

/* Is any secret given (or its first 16 bytes) in @p[0..@len)? */
static bool has_secret(const void *p, size_t len)
{
	unsigned int i;

	if (memmem(p, len, SECRET_MARK, sizeof(SECRET_MARK) - 1))
		return true;
	for (i = 0; i < n_secrets && i < SECRETS; i++)
		if (memmem(p, len, secrets[i], sizeof(secrets[i])))
			return true;
	return false;
}

static bool in_set(int e, const int *set)
{
	for (; *set; set++)
		if (*set == e)
			return true;
	return false;
}

/* ---------------------------------------------------------------------- */
/* Building requests                                                       */
/* ---------------------------------------------------------------------- */

static const char *const names[] = {
	"nz0", "nz1", "nz.a", "nz-b:c", "nz_0123456789012345678901234567",
	"", "nz 0", "nz/0", "nz\n", "fze", "rxe0", "nosuch",
	"nz_01234567890123456789012345678",	/* 32 characters */
};

static __u64 val64(void)
{
	static const __u64 v[] = {
		0, 1, 4095, 4096, 8192, 65536, 1 << 20, (1 << 20) + 1,
		1ULL << 30, 1ULL << 40, (1ULL << 40) - 4096, 1ULL << 63,
		~0ULL, ~0ULL - 4095,
	};

	if (chance(4))
		return rnd();
	return v[rbelow(ARRAY_SIZE(v))];
}

static __u32 val32(void)
{
	static const __u32 v[] = {
		0, 1, 2, 3, 4, 7, 15, 16, 17, 0600, 0666, 0777, 01000, 1000,
		NOBODY, 16384, 16385, 0x7fffffff, 0x80000000, 0xffffffff,
	};

	if (chance(4))
		return rnd();
	return v[rbelow(ARRAY_SIZE(v))];
}

static void put_addr(struct knl *nl, __u16 type)
{
	static const char *const a4[] = {
		"10.99.0.1", "0.0.0.0", "127.0.0.1", "10.99.0.2", "255.255.255.255",
		"224.0.0.1",
	};
	unsigned char b[20];
	size_t len;

	switch (rbelow(5)) {
	case 0:
		len = rbelow(20);
		for (size_t i = 0; i < len; i++)
			b[i] = rnd();
		break;
	case 1:
		len = 16;
		memset(b, 0, sizeof(b));
		if (chance(2))
			b[15] = 1;	/* ::1 */
		break;
	default:
		len = 4;
		inet_pton(AF_INET, a4[rbelow(ARRAY_SIZE(a4))], b);
	}
	knl_put(nl, type, b, len);
}

/* A payload for an attribute of type @t: right most of the time. */
static void put_value(struct knl *nl, __u16 type, enum t t, enum aset nest,
		      int depth);

static void put_nest(struct knl *nl, __u16 type, enum aset set, int depth)
{
	struct nlattr *a = (struct nlattr *)(nl->buf + nl->len);
	unsigned int n = rbelow(4), i;

	a->nla_type = type | (chance(4) ? 0 : NLA_F_NESTED);
	nl->len += NLA_HDRLEN;
	for (i = 0; i < n && depth < 3 && nl->len < MAXMSG - 512; i++) {
		unsigned int at = rbelow(sets[set].max + 3);
		enum t t = at <= sets[set].max ? sets[set].a[at].type : T_U32;

		put_value(nl, at, t, at <= sets[set].max ?
			  nest_set(set, at) : set, depth + 1);
	}
	a->nla_len = (char *)nl->buf + nl->len - (char *)a;
}

static void put_value(struct knl *nl, __u16 type, enum t t, enum aset nest,
		      int depth)
{
	char s[4200];
	size_t len;

	if (chance(8))
		type |= NLA_F_NET_BYTEORDER;
	if (chance(7)) {
		/* the wrong length, random bytes */
		len = rbelow(chance(4) ? 300 : 12);
		for (size_t i = 0; i < len; i++)
			s[i] = rnd();
		knl_put(nl, type, s, len);
		return;
	}
	switch (t) {
	case T_U8: {
		__u8 v = chance(2) ? rbelow(140) : rnd();

		knl_put(nl, type, &v, 1);
		break;
	}
	case T_U16: {
		__u16 v = chance(2) ? 19875 + rbelow(4) : rnd();

		knl_put(nl, type, &v, 2);
		break;
	}
	case T_U32:
	case T_S32:
		knl_put_u32(nl, type, val32());
		break;
	case T_U64:
	case T_S64:
	case T_PAD:
		knl_put_u64(nl, type, val64());
		break;
	case T_STR:
		switch (rbelow(6)) {
		case 0:		/* long, terminated or not */
			len = 1 + rbelow(chance(2) ? 40 : 4100);
			memset(s, 'a' + rbelow(26), len);
			if (chance(2))
				s[len - 1] = 0;
			knl_put(nl, type, s, len);
			break;
		case 1:		/* unterminated short */
			knl_put(nl, type, "nz0", 3);
			break;
		default:
			knl_put_str(nl, type,
				    names[rbelow(ARRAY_SIZE(names))]);
		}
		break;
	case T_BIN:
		put_addr(nl, type);
		break;
	case T_HIST:
		/* reply-only: any bytes, mostly not a histogram's length */
		len = rbelow(2 * KXFER_LAT_BUCKETS * 8);
		for (size_t i = 0; i < len; i++)
			s[i] = rnd();
		knl_put(nl, type, s, len);
		break;
	case T_FLAG:
		knl_put(nl, type, s, 0);
		break;
	case T_SECRET:
		/* mostly the right size (16..64), sometimes not */
		len = chance(4) ? rbelow(100) : 16 + rbelow(49);
		for (size_t i = 0; i < len; i++)
			s[i] = rnd();
		memcpy(s, SECRET_MARK, len < 6 ? len : 6);
		if (len >= 16)
			memcpy(secrets[n_secrets++ % SECRETS], s, 16);
		knl_put(nl, type, s, len);
		break;
	case T_NEST:
		put_nest(nl, type, nest, depth);
		break;
	default:
		knl_put_u32(nl, type, rnd());
	}
}

/* A plausible valid request of @cmd, then perhaps mutated. */
static void build(struct knl *nl, unsigned int cmd, __u16 flags)
{
	enum aset set = cmd <= KXFER_CMD_MAX && cmds[cmd].name ? cmds[cmd].set :
			rbelow(S_NSETS);
	unsigned int n, i;

	knl_begin(nl, nl->family, cmd, flags);
	if (chance(10))
		((struct genlmsghdr *)(nl->buf + NLMSG_HDRLEN))->version = rnd();
	if (chance(30))
		((struct genlmsghdr *)(nl->buf + NLMSG_HDRLEN))->reserved = rnd();

	/* The attributes a valid request carries, in random order, some missing. */
	switch (cmd) {
	case KXFER_CMD_POOL_NEW:
		if (!chance(10))
			put_value(nl, KXFER_A_POOL_NAME, T_STR, 0, 0);
		if (!chance(10)) {
			static const __u64 sz[] = { 4096, 8192, 65536, 1 << 20 };
			__u64 v = chance(3) ? val64() : sz[rbelow(4)];

			/* no big pool: allocating it is slow under TCG */
			if (v > (1 << 20) && v < (1ULL << 40))
				v = 1ULL << 40;
			knl_put_u64(nl, KXFER_A_POOL_SIZE, v);
		}
		break;
	case KXFER_CMD_EXPORT_NEW:
		put_value(nl, KXFER_A_EXPORT_NAME, T_STR, 0, 0);
		if (!chance(10))
			put_value(nl, KXFER_A_EXPORT_POOL, T_STR, 0, 0);
		if (!chance(10))
			knl_put_u32(nl, KXFER_A_EXPORT_ACCESS, chance(2) ?
				    1 + rbelow(7) : val32());
		break;
	case KXFER_CMD_LISTEN_NEW:
	case KXFER_CMD_LISTEN_DEL:
		if (!chance(10))
			put_addr(nl, KXFER_A_LISTEN_ADDR);
		if (cmd == KXFER_CMD_LISTEN_NEW && chance(3))
			put_value(nl, KXFER_A_LISTEN_KEY, T_STR, 0, 0);
		break;
	case KXFER_CMD_PEER_NEW:
		put_value(nl, KXFER_A_PEER_NAME, T_STR, 0, 0);
		if (!chance(10))
			put_addr(nl, KXFER_A_PEER_ADDR);
		if (chance(3))
			put_value(nl, KXFER_A_PEER_KEY, T_STR, 0, 0);
		break;
	case KXFER_CMD_CONNECT_NEW:
	case KXFER_CMD_CONNECT_DEL:
		/* a prefix, often one of a unicast address, at times valid */
		if (!chance(10)) {
			struct nlattr *a = (struct nlattr *)(nl->buf + nl->len);
			__u8 plen = chance(2) ? 32 : rnd();

			a->nla_type = KXFER_A_CONNECT_PREFIX | NLA_F_NESTED;
			nl->len += NLA_HDRLEN;
			put_addr(nl, KXFER_A_PREFIX_ADDR);
			knl_put(nl, KXFER_A_PREFIX_LEN, &plen, 1);
			a->nla_len = (char *)nl->buf + nl->len - (char *)a;
		}
		if (cmd == KXFER_CMD_CONNECT_NEW && chance(3))
			put_value(nl, KXFER_A_CONNECT_KEY, T_STR, 0, 0);
		break;
	case KXFER_CMD_KEY_NEW:
	case KXFER_CMD_KEY_SET:
		if (!chance(10))
			put_value(nl, KXFER_A_KEY_NAME, T_STR, 0, 0);
		if (!chance(10))
			put_value(nl, KXFER_A_KEY_SECRET, T_SECRET, 0, 0);
		if (cmd == KXFER_CMD_KEY_NEW && chance(3))
			put_value(nl, KXFER_A_KEY_PEER, T_STR, 0, 0);
		break;
	default:
		if (cmd <= KXFER_CMD_MAX && cmds[cmd].name && chance(2))
			put_value(nl, 1, T_STR, 0, 0);	/* every set's NAME/ADDR is 1 */
	}
	/* Random attributes of the set, and unknown ones. */
	n = rbelow(5);
	for (i = 0; i < n && nl->len < MAXMSG - 4400; i++) {
		unsigned int at = rbelow(sets[set].max + (chance(5) ? 40 : 2));
		enum t t = at <= sets[set].max ? sets[set].a[at].type : T_U32;

		put_value(nl, at, t, at <= sets[set].max ? nest_set(set, at) :
			  set, 0);
	}
}

/* ---------------------------------------------------------------------- */
/* Replies                                                                 */
/* ---------------------------------------------------------------------- */

static bool kptr_like(__u64 v)
{
	return v >= 0xffff800000000000ULL && v < 0xfffffffffff00000ULL;
}

static void check_attrs(const void *data, int len, enum aset set, int depth,
			const char *where)
{
	const struct nlattr *a = data;
	int rem = len;

	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem)) {
		unsigned int type = a->nla_type & NLA_TYPE_MASK;
		int plen = a->nla_len - NLA_HDRLEN;
		const char *p = KNL_NLA_DATA(a);
		enum t t;

		if (!type || type > sets[set].max) {
			fail("%s: attribute type %u unknown in its set", where, type);
			return;
		}
		t = sets[set].a[type].type;
		switch (t) {
		case T_U8:
			if (plen != 1)
				goto bad_len;
			break;
		case T_U16:
			if (plen != 2)
				goto bad_len;
			break;
		case T_U32:
		case T_S32:
			if (plen != 4)
				goto bad_len;
			break;
		case T_U64:
			if (plen != 8)
				goto bad_len;
			if (kptr_like(*(const __u64 *)p))
				fail("%s: attribute %u is 0x%llx, a kernel address?",
				     where, type, *(const unsigned long long *)p);
			break;
		case T_S64:
			if (plen != 8)
				goto bad_len;
			break;
		case T_STR:
			if (plen < 1 || p[plen - 1] || strlen(p) + 1 != (size_t)plen)
				fail("%s: string attribute %u malformed", where, type);
			break;
		case T_BIN:
			if (plen != 4 && plen != 16)
				goto bad_len;
			break;
		case T_HIST:
			if (plen != KXFER_LAT_BUCKETS * 8)
				goto bad_len;
			break;
		case T_FLAG:
			if (plen)
				goto bad_len;
			break;
		case T_PAD:
			break;
		case T_SECRET:
			fail("%s: a key's secret (attribute %u) in a reply", where,
			     type);
			break;
		case T_NEST:
			if (depth > 4)
				fail("%s: nests too deep", where);
			else
				check_attrs(p, plen, nest_set(set, type), depth + 1,
					    where);
			break;
		default:
			fail("%s: attribute %u", where, type);
		}
		continue;
bad_len:
		fail("%s: attribute %u of length %d", where, type, plen);
	}
	if (rem)
		fail("%s: %d bytes left after the attributes", where, rem);
}

static char rbuf[1 << 17];

/*
 * Send the request, read to its end.  Return: the errno answered (0 for
 * success), or -1 when nothing came back (a request the kernel drops).
 */
static int xfer(struct knl *nl, unsigned int cmd, bool expect_none)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h = (struct nlmsghdr *)nl->buf;
	__u32 seq = h->nlmsg_seq;
	enum aset set = cmd <= KXFER_CMD_MAX && cmds[cmd].name ?
			cmds[cmd].set : S_DEV;
	struct pollfd pfd = { .fd = nl->fd, .events = POLLIN };

	if (!expect_none)
		h->nlmsg_len = nl->len;
	if (sendto(nl->fd, nl->buf, nl->len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
		fail("sendto: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (poll(&pfd, 1, expect_none ? 200 : 20000) != 1) {
			if (!expect_none)
				fail("no answer in 20 s");
			return -1;
		}
		n = recv(nl->fd, rbuf, sizeof(rbuf), 0);
		if (n < 0) {
			fail("recv: %s", strerror(errno));
			return -1;
		}
		for (h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq) {
				fail("reply of sequence %u to request %u",
				     h->nlmsg_seq, seq);
				continue;
			}
			if (h->nlmsg_type == NLMSG_DONE) {
				int err = h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) ?
					  *(int *)NLMSG_DATA(h) : 0;

				return -err;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				/*
				 * A refusal by the module itself (past the
				 * policies) echoes a request whose secret the
				 * module wiped once it had it.
				 */
				if ((cmd == KXFER_CMD_KEY_NEW ||
				     cmd == KXFER_CMD_KEY_SET) &&
				    (e->error == -EEXIST || e->error == -ENOENT) &&
				    has_secret(&e->msg, h->nlmsg_len -
					       NLMSG_LENGTH(sizeof(e->error))))
					fail("the echo of a refused %s holds its secret",
					     cmds[cmd].name);
				return -e->error;
			}
			n_replies++;
			if (has_secret(h, h->nlmsg_len))
				fail("a reply holds a key's secret");
			if (h->nlmsg_type != nl->family) {
				fail("reply of type %u", h->nlmsg_type);
				continue;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN)) {
				fail("reply without a genl header");
				continue;
			}
			check_attrs((char *)NLMSG_DATA(h) + GENL_HDRLEN,
				    h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), set,
				    0, "reply");
		}
		if (n)
			fail("%zd bytes of a truncated reply", n);
	}
}

/* ---------------------------------------------------------------------- */
/* One request                                                             */
/* ---------------------------------------------------------------------- */

static void describe(struct knl *nl, unsigned int cmd, __u16 flags)
{
	size_t i, o;

	o = snprintf(desc, sizeof(desc), "cmd %u (%s) flags 0x%x len %zu:",
		     cmd, cmd <= KXFER_CMD_MAX && cmds[cmd].name ?
		     cmds[cmd].name : "unknown", flags, nl->len);
	for (i = NLMSG_HDRLEN; i < nl->len && o < sizeof(desc) - 4; i++)
		o += snprintf(desc + o, sizeof(desc) - o, " %02x",
			      (unsigned char)nl->buf[i]);
}

static void one(struct knl *nl)
{
	static const __u16 fl[] = {
		NLM_F_DUMP, NLM_F_ROOT, NLM_F_MATCH, NLM_F_ATOMIC, NLM_F_ECHO,
		NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE, NLM_F_APPEND,
	};
	unsigned int cmd;
	__u16 flags = 0;
	const struct cmd *c;
	bool short_hdr = false, dump, garbage_len = false, bad_hdr;
	int err;

	if (chance(8))
		cmd = rbelow(256);
	else
		cmd = 1 + rbelow(KXFER_CMD_MAX);
	c = cmd <= KXFER_CMD_MAX && cmds[cmd].name ? &cmds[cmd] : NULL;
	if (c && c->dumpit && chance(2))
		flags |= NLM_F_DUMP;
	if (chance(5))
		flags |= fl[rbelow(ARRAY_SIZE(fl))];
	build(nl, cmd, flags);
	/* Truncations: no room for the genl header; trailing bytes. */
	if (chance(60)) {
		nl->len = NLMSG_HDRLEN + rbelow(GENL_HDRLEN);
		short_hdr = true;
	} else if (chance(40)) {
		nl->len += 1 + rbelow(3);
	} else if (chance(80)) {
		garbage_len = true;
	}
	describe(nl, cmd, flags);
	dump = (flags & NLM_F_DUMP) == NLM_F_DUMP;
	/*
	 * The genl core checks the header first (genl_header_check(), the
	 * family has no resv_start_op): reserved must be 0, and the only
	 * flags allowed are REQUEST, ACK, ECHO and a whole DUMP.
	 */
	bad_hdr = ((struct genlmsghdr *)(nl->buf + NLMSG_HDRLEN))->reserved ||
		  ((flags & ~(dump ? NLM_F_DUMP : 0)) & ~NLM_F_ECHO);
	if (garbage_len) {
		/* a length past what is sent: the kernel drops it */
		((struct nlmsghdr *)nl->buf)->nlmsg_len = nl->len + 4 + rbelow(100);
	}
	n_sent++;
	err = xfer(nl, cmd, garbage_len);
	if (garbage_len) {
		if (err >= 0)
			fail("a message longer than the datagram was answered: %d",
			     err);
		return;
	}
	if (err < 0)
		return;
	if (err < 256)
		n_err[err]++;
	if (!err) {
		n_ok++;
		if (short_hdr || bad_hdr || !c)
			fail("accepted");
		else if (unpriv && c->admin)
			fail("%s succeeded without CAP_NET_ADMIN", c->name);
		else if (dump && !c->dumpit)
			fail("dump of a command without one succeeded");
		else if (!dump && !c->doit)
			fail("do of a dump-only command succeeded");
		return;
	}
	if (short_hdr || bad_hdr) {
		if (err != EINVAL)
			fail("%s genl header: %s, expected EINVAL",
			     short_hdr ? "short" : "reserved bits in the", strerror(err));
		return;
	}
	if (!c) {
		if (err != EOPNOTSUPP)
			fail("unknown command: %s, expected EOPNOTSUPP",
			     strerror(err));
		return;
	}
	if (unpriv && c->admin) {
		/* 6.12 looks the operation up with its do/dump kind first */
		if (err == EPERM || (err == EOPNOTSUPP && dump && !c->dumpit))
			n_eperm++;
		else
			fail("%s without CAP_NET_ADMIN: %s, expected EPERM",
			     c->name, strerror(err));
		return;
	}
	if (err == EPERM && !unpriv)
		fail("EPERM as root");
	if ((dump && !c->dumpit) || (!dump && !c->doit)) {
		if (err != EOPNOTSUPP)
			fail("%s without a %s: %s, expected EOPNOTSUPP", c->name,
			     dump ? "dump" : "do", strerror(err));
		return;
	}
	if (!in_set(err, c->errs) && err != EPERM)
		fail("%s: undocumented error %d (%s)", c->name, err,
		     strerror(err));
}

/* ---------------------------------------------------------------------- */
/* Objects: list, clean up                                                 */
/* ---------------------------------------------------------------------- */

struct objlist {
	char	s[256][80];
	int	n;
	bool	listen;
	bool	connect;	/* rules: "ADDR/LEN port PORT" */
};

/* A connect rule as "ADDR/LEN port PORT", from its prefix nest and port. */
static void list_connect(struct objlist *l, const struct nlattr *pfx,
			 const struct nlattr *port)
{
	const struct nlattr *a = KNL_NLA_DATA(pfx), *addr = NULL, *len = NULL;
	int rem = pfx->nla_len - NLA_HDRLEN;
	char txt[64];

	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem)) {
		if ((a->nla_type & NLA_TYPE_MASK) == KXFER_A_PREFIX_ADDR)
			addr = a;
		else if ((a->nla_type & NLA_TYPE_MASK) == KXFER_A_PREFIX_LEN)
			len = a;
	}
	if (!addr || !len)
		return;
	inet_ntop(addr->nla_len - NLA_HDRLEN == 4 ? AF_INET : AF_INET6,
		  KNL_NLA_DATA(addr), txt, sizeof(txt));
	snprintf(l->s[l->n++], 80, "%s/%u port %u", txt,
		 *(__u8 *)KNL_NLA_DATA(len),
		 port ? *(__u16 *)KNL_NLA_DATA(port) : 0);
}

static void list_cb(struct nlmsghdr *h, void *arg)
{
	struct objlist *l = arg;
	struct nlattr *a = knl_attr(h, 1), *p = knl_attr(h, 2);
	char txt[64];

	if (!a || l->n >= 256)
		return;
	if (l->connect) {
		list_connect(l, a, p);
		return;
	}
	if (!l->listen) {
		snprintf(l->s[l->n++], 80, "%.63s", (char *)KNL_NLA_DATA(a));
		return;
	}
	inet_ntop(a->nla_len - NLA_HDRLEN == 4 ? AF_INET : AF_INET6,
		  KNL_NLA_DATA(a), txt, sizeof(txt));
	snprintf(l->s[l->n++], 80, "%s%s%s:%u", l->listen &&
		 a->nla_len - NLA_HDRLEN == 16 ? "[" : "", txt,
		 a->nla_len - NLA_HDRLEN == 16 ? "]" : "",
		 p ? *(__u16 *)KNL_NLA_DATA(p) : 0);
}

static int list(struct knl *nl, unsigned int cmd, struct objlist *l)
{
	memset(l, 0, sizeof(*l));
	l->listen = cmd == KXFER_CMD_LISTEN_GET;
	l->connect = cmd == KXFER_CMD_CONNECT_GET;
	knl_begin(nl, nl->family, cmd, NLM_F_DUMP);
	return knl_xfer(nl, list_cb, l);
}

static bool listed(const struct objlist *l, const char *s)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->s[i], s))
			return true;
	return false;
}

/* In the order they can go: keys last, once nothing uses them. */
static const unsigned int list_cmds[] = {
	KXFER_CMD_PEER_GET, KXFER_CMD_LISTEN_GET, KXFER_CMD_EXPORT_GET,
	KXFER_CMD_POOL_GET, KXFER_CMD_CONNECT_GET, KXFER_CMD_KEY_GET,
};
#define NLISTS	ARRAY_SIZE(list_cmds)

static const char *const list_names[] = { "peers", "listeners", "exports",
					  "pools", "connect rules", "keys" };

/* The request that deletes the connect rule @s ("ADDR/LEN port PORT"). */
static void put_connect_del(struct knl *nl, const char *s)
{
	struct nlattr *a = (struct nlattr *)(nl->buf + nl->len);
	unsigned int plen = 0, port = 0;
	unsigned char b[16];
	char host[80];
	int v6;

	if (sscanf(s, "%79[^/]/%u port %u", host, &plen, &port) != 3)
		return;
	v6 = !!strchr(host, ':');
	inet_pton(v6 ? AF_INET6 : AF_INET, host, b);
	a->nla_type = KXFER_A_CONNECT_PREFIX | NLA_F_NESTED;
	nl->len += NLA_HDRLEN;
	knl_put(nl, KXFER_A_PREFIX_ADDR, b, v6 ? 16 : 4);
	knl_put(nl, KXFER_A_PREFIX_LEN, &(__u8){ plen }, 1);
	a->nla_len = (char *)nl->buf + nl->len - (char *)a;
	knl_put(nl, KXFER_A_CONNECT_PORT, &(__u16){ port }, 2);
}

/* Delete what is not in @base; then compare. */
static int cleanup(struct knl *nl, struct objlist *base)
{
	static const unsigned int del[] = {
		KXFER_CMD_PEER_DEL, KXFER_CMD_LISTEN_DEL, KXFER_CMD_EXPORT_DEL,
		KXFER_CMD_POOL_DEL, KXFER_CMD_CONNECT_DEL, KXFER_CMD_KEY_DEL,
	};
	struct objlist now;
	int k, i, pass, ret = 0;

	for (k = 0; k < (int)NLISTS; k++) {
		for (pass = 0; pass < 50; pass++) {
			int left = 0;

			if (list(nl, list_cmds[k], &now))
				return -1;
			for (i = 0; i < now.n; i++) {
				char host[80], *colon;
				unsigned int port;

				if (listed(&base[k], now.s[i]))
					continue;
				left++;
				knl_begin(nl, nl->family, del[k], 0);
				if (list_cmds[k] == KXFER_CMD_CONNECT_GET) {
					put_connect_del(nl, now.s[i]);
				} else if (k != 1) {
					knl_put_str(nl, 1, now.s[i]);
				} else {
					unsigned char b[16];
					int v6 = now.s[i][0] == '[';

					snprintf(host, sizeof(host), "%s",
						 now.s[i] + v6);
					colon = strrchr(host, ':');
					*colon = 0;
					port = atoi(colon + 1);
					if (v6)
						host[strlen(host) - 1] = 0;
					inet_pton(v6 ? AF_INET6 : AF_INET, host, b);
					knl_put(nl, KXFER_A_LISTEN_ADDR, b, v6 ? 16 : 4);
					knl_put(nl, KXFER_A_LISTEN_PORT,
						&(__u16){ port }, 2);
				}
				if (knl_xfer(nl, NULL, NULL) && opt_verbose)
					printf("# delete %s: %s\n", now.s[i],
					       nl->extack);
			}
			if (!left)
				break;
			usleep(200000);
		}
		if (list(nl, list_cmds[k], &now))
			return -1;
		if (now.n != base[k].n) {
			printf("FAIL: %d %s after the cleanup, %d before\n",
			       now.n, list_names[k], base[k].n);
			for (i = 0; i < now.n; i++)
				printf("#   %s\n", now.s[i]);
			ret = -1;
		}
	}
	return ret;
}

/* ---------------------------------------------------------------------- */

static int fuzz(void)
{
	struct timespec t0, t;
	struct knl nl;
	int ret, one_ = 1;

	ret = knl_open(&nl);
	if (ret) {
		printf("FAIL: the kxfer family: %s\n", strerror(-ret));
		return 1;
	}
	setsockopt(nl.fd, SOL_NETLINK, NETLINK_EXT_ACK, &one_, sizeof(one_));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (iter = 0; iter < opt_iters && failures < 20; iter++) {
		if ((iter & 63) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= opt_time)
				break;
		}
		one(&nl);
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	printf("# %s: %lu requests in %.1f s: %lu succeeded, %lu reply messages; EINVAL %lu ERANGE %lu ENOENT %lu EEXIST %lu EOPNOTSUPP %lu EPERM %lu (%lu for admin commands unprivileged) ENODEV %lu EBUSY %lu ENOSPC %lu EADDRNOTAVAIL %lu\n",
	       unpriv ? "unprivileged" : "root", n_sent,
	       (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9, n_ok,
	       n_replies, n_err[EINVAL], n_err[ERANGE], n_err[ENOENT],
	       n_err[EEXIST], n_err[EOPNOTSUPP], n_err[EPERM], n_eperm,
	       n_err[ENODEV], n_err[EBUSY], n_err[ENOSPC], n_err[EADDRNOTAVAIL]);
	knl_close(&nl);
	return failures ? 1 : 0;
}

static void help(void)
{
	fprintf(stderr,
		"usage: fuzz_nl [-s SEED] [-i ITERATIONS] [-T SECONDS] [-u] [-v]\n"
		"  -u  also fuzz as uid/gid 65534 (a child), after root\n"
		"  the objects it made are removed at the end and the lists of\n"
		"  pools, exports, listeners, peers and keys compared with the start\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct objlist base[NLISTS];
	struct knl nl;
	int c, ret = 0, k, st;
	pid_t pid;

	opt_seed = (__u64)time(NULL) ^ ((__u64)getpid() << 32);
	while ((c = getopt(argc, argv, "s:i:T:uv")) != -1) {
		switch (c) {
		case 's':
			opt_seed = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			opt_iters = strtoul(optarg, NULL, 0);
			break;
		case 'T':
			opt_time = strtoul(optarg, NULL, 0);
			break;
		case 'u':
			opt_unpriv = 1;
			break;
		case 'v':
			opt_verbose = 1;
			break;
		default:
			help();
		}
	}
	if (!opt_seed)
		help();
	opt_cleanup = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# fuzz_nl: seed %llu, %lu requests, %u s at most, then %s\n",
	       (unsigned long long)opt_seed, opt_iters, opt_time,
	       opt_unpriv ? "unprivileged" : "done");

	if (knl_open(&nl)) {
		printf("FAIL: no kxfer family\n");
		return 1;
	}
	for (k = 0; k < (int)NLISTS; k++)
		if (list(&nl, list_cmds[k], &base[k])) {
			printf("FAIL: cannot list %s\n", list_names[k]);
			return 1;
		}

	rng = opt_seed;
	if (fuzz())
		ret = 1;

	if (opt_unpriv) {
		fflush(stdout);
		pid = fork();
		if (!pid) {
			if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
			    setresuid(NOBODY, NOBODY, NOBODY)) {
				printf("FAIL: cannot become uid %d\n", NOBODY);
				_exit(1);
			}
			unpriv = 1;
			failures = 0;
			rng = opt_seed ^ 0x5555555555555555ULL;
			memset(n_err, 0, sizeof(n_err));
			n_sent = 0;
			n_ok = 0;
			n_replies = 0;
			_exit(fuzz());
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			ret = 1;
	}
	if (opt_cleanup && cleanup(&nl, base))
		ret = 1;
	knl_close(&nl);
	printf("# %s (seed %llu)\n", ret ? "FAILED" : "OK",
	       (unsigned long long)opt_seed);
	return ret;
}
