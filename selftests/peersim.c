// SPDX-License-Identifier: GPL-2.0-only
/*
 * peersim: many well-behaved kxfer nodes in one process, for scale tests
 * (issue 44).
 *
 * Written from Documentation/wire-protocol.rst, over librdmacm and
 * libibverbs, as selftests/hostile.c is; where hostile breaks the protocol
 * on purpose, peersim keeps every rule of it, and plays N nodes at once
 * against one kxfer listener (the kernel node):
 *
 *   - each node has its own name (PREFIX-000, PREFIX-001, ...), random
 *     incarnation, protection domain and, with -K, its own key, and opens
 *     a session of Q QPs (-q, default 2) to the listener;
 *   - the connect private data, the accept it reads, HELLO (only the
 *     feature bits peersim speaks: NOTIFY_MSG and AUTH, so that to a newer
 *     kxfer it is an older peer for every other bit), the authentication
 *     handshake (with the node's key, or without one), credits, sequence
 *     numbers, export tables (multi-message MR tables, EXPORT_DEL),
 *     SYNC_DONE, keepalives both ways, notifications (NOTIFY, and with -i
 *     WRITE_WITH_IMM + NOTIFY_DESC on QP 0) are those of the document, and
 *     everything the kernel sends is checked against it;
 *   - traffic: one-sided WRITEs of a fresh pattern into the node's own
 *     slice of the kernel's exports (with the rkeys of their adverts), each
 *     read back with an RDMA READ and compared, striped over the QPs.
 *
 * One thread, one epoll: one rdma_cm event channel for every cm_id, one
 * completion channel for every CQ, CQs shared by up to PEERS_PER_CQ
 * nodes, a 10 ms timerfd for keepalives, deadlines and backoff.
 *
 * Usage: peersim [OPTIONS]
 *   -a ADDR      the kernel node's listener (default 10.99.0.1)
 *   -p PORT      its port (default 19875)
 *   -n N         simulated nodes (default 16, at most 4096)
 *   -q Q         QPs per session (default 2)
 *   -N PREFIX    node names PREFIX-NNN (default "sim")
 *   -K DIR       authenticate: node X proves the key in DIR/X.key
 *   -w W         sessions connecting at once (default 16, the kernel's
 *                max_half_open; 0: all at once)
 *   -E PREFIX    traffic targets: the kernel's exports whose names start
 *                with PREFIX, in name order, all of one length L, taken
 *                as one space of count x L bytes; node i owns
 *                [i x S, (i + 1) x S) of it (default "e")
 *   -S BYTES     S, bytes of that space each node owns (default 32K)
 *   -B BYTES     bytes per job (default 4K, a power of two <= S)
 *   -D N         jobs in flight per node (default 2)
 *   -t SEC       traffic for SEC seconds once every session is up (0)
 *   -k N         a NOTIFY every N verified jobs of a node (0: none)
 *   -m EXPORT    the export notifications name (default: the first
 *                traffic target)
 *   -i           notifications by WRITE_WITH_IMM + NOTIFY_DESC on QP 0
 *   -F SEED      after the traffic, fill each node's slice with xfer's
 *                seed:SEED pattern (its offsets those of the space), so
 *                that the kernel node can check it with `xfer check`
 *   -x LEN       each node exports LEN bytes of its own memory, as "sx"
 *   -W EXPORT    after all are up, wait until every node has EXPORT
 *                (repeatable, in order)
 *   -C DIR       files to talk with the kernel node's script: peersim
 *                writes DIR/peersim.STEP when a step is done (up,
 *                advert.EXPORT, traffic, filled) and then, until DIR/stop
 *                appears (or -T runs out), holds the sessions, and kills
 *                node N (its QPs destroyed without a word, as a dead
 *                host) when DIR/kill.N appears, writing DIR/killed.N
 *   -T SEC       hold the sessions SEC seconds at the end (with -C: at
 *                most, a failure if DIR/stop did not come first)
 *   -U SEC       every session must be up within SEC (default 600)
 *   -L SEC       a kernel node silent this long on a session (not even
 *                its NIC acknowledging) is a failure (default 20: kxfer
 *                itself ends a session after 5, but peersim measures the
 *                kernel node, and a host running many guests under TCG
 *                can starve one for longer)
 *   -j FILE      the results as JSON
 *   -v           verbose
 *
 * KXFER_SLOW (an integer) multiplies every wait for the kernel node.
 * Output: one line per step; "FAIL ..." and "VIOLATION: ..." lines for
 * what went wrong.  Exit status 0 when every session came up, no job was
 * lost, every byte read back matched and the kernel broke no rule; 1
 * otherwise; 2 for usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rdma/rdma_cma.h>

#ifndef __packed
#define __packed	__attribute__((packed))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------- */
/* The wire format (Documentation/wire-protocol.rst)                       */
/* ---------------------------------------------------------------------- */

#define WIRE_MAGIC	0x6b786672
#define WIRE_VERSION	1
#define NAME_LEN	32
#define MSG_SIZE	4096
#define MAX_QPS		16
#define MAX_MRS		4096
#define NONCE_LEN	32
#define MAC_LEN		32
#define IMM_MAX		16	/* KXFER_NOTIFY_IMM_MAX */

enum { REJ_MALFORMED = 1, REJ_VERSION, REJ_NOT_ALLOWED, REJ_BUSY, REJ_DEVICE,
	REJ_AUTH, REJ_MAX };
enum { MSG_CREDIT = 1, MSG_EXPORT_ADD, MSG_EXPORT_DEL, MSG_SYNC_DONE,
	MSG_KEEPALIVE, MSG_KEEPALIVE_ACK, MSG_NOTIFY, MSG_NOTIFY_DESC,
	MSG_HELLO, MSG_NOTIFY_MSG, MSG_AUTH_CHALLENGE, MSG_AUTH_REPLY,
	MSG_AUTH_FAIL };

#define F_NOTIFY_MSG	(1u << 0)
#define F_AUTH		(1u << 1)
/* What peersim speaks: never offer a bit it does not implement. */
#define F_SPOKEN	(F_NOTIFY_MSG | F_AUTH)

#define ACCESS_READ	1u
#define ACCESS_WRITE	2u
#define ACCESS_ATOMIC	4u
#define ACCESS_ALL	(ACCESS_READ | ACCESS_WRITE | ACCESS_ATOMIC)

#define AUTH_F_KEY	1u
enum { ROLE_ACCEPTOR = 1, ROLE_CONNECTOR };

struct wire_conn {
	uint32_t magic;
	uint16_t version;
	uint8_t qp_index;
	uint8_t qp_count;
	uint64_t session_id;
	uint16_t recv_credits;
	uint16_t flags;
	char node[NAME_LEN];
	uint32_t incarnation;
} __packed;

struct wire_accept {
	uint32_t magic;
	uint16_t version;
	uint16_t recv_credits;
	char node[NAME_LEN];
	uint32_t features;
	uint8_t nonce[NONCE_LEN];
} __packed;

struct msg_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t len;
	uint32_t seq;
	uint16_t credits;
	uint16_t pad;
} __packed;

struct wire_mr {
	uint64_t off;
	uint64_t len;
	uint64_t iova;
	uint32_t rkey;
	uint32_t pad;
} __packed;

struct msg_export {
	struct msg_hdr h;
	char name[NAME_LEN];
	uint64_t len;
	uint64_t gen;
	uint32_t access;
	uint16_t nmrs;
	uint16_t first;
	uint16_t count;
	uint16_t pad[3];
	struct wire_mr mrs[];
} __packed;

struct msg_export_del {
	struct msg_hdr h;
	char name[NAME_LEN];
	uint64_t gen;
} __packed;

struct msg_notify {
	struct msg_hdr h;
	char name[NAME_LEN];
	uint64_t gen;
	uint64_t value;
	uint64_t bytes;
} __packed;

struct msg_notify_desc {
	struct msg_notify n;
	uint32_t token;
	uint32_t pad;
} __packed;

struct msg_notify_msg {
	struct msg_notify n;
	uint16_t len;
	uint16_t pad[3];
	uint8_t data[];
} __packed;

struct msg_keepalive {
	struct msg_hdr h;
	uint64_t stamp;
} __packed;

struct msg_hello {
	struct msg_hdr h;
	uint32_t features;
	uint32_t pad;
} __packed;

struct msg_auth_challenge {
	struct msg_hdr h;
	uint32_t flags;
	uint32_t pad;
	uint8_t nonce[NONCE_LEN];
	uint8_t mac[MAC_LEN];
} __packed;

struct msg_auth_reply {
	struct msg_hdr h;
	uint32_t flags;
	uint32_t pad;
	uint8_t mac[MAC_LEN];
} __packed;

struct msg_auth_fail {
	struct msg_hdr h;
	uint32_t reason;
	uint32_t pad;
} __packed;

struct auth_mac {
	char label[16];
	uint32_t role;
	uint32_t nqps;
	uint64_t session_id;
	uint32_t incarnation;
	uint32_t pad;
	uint8_t cnonce[NONCE_LEN];
	uint8_t anonce[NONCE_LEN];
	char cnode[NAME_LEN];
	char anode[NAME_LEN];
	uint32_t qpn[MAX_QPS][2];
} __packed;

#define MRS_PER_MSG	((MSG_SIZE - sizeof(struct msg_export)) / sizeof(struct wire_mr))

/* ---------------------------------------------------------------------- */
/* State                                                                   */
/* ---------------------------------------------------------------------- */

#define RECVS		32	/* control receives each node posts on QP 0 */
#define SENDS		16	/* its control send buffers */
#define CREDIT_BATCH	(RECVS / 2)
#define DATA_WRS	64	/* send queue slots per QP for data */
#define PEERS_PER_CQ	32
#define MAX_PEERS	4096
#define MAX_INFLIGHT	32
#define KA_MS		1000	/* probe every second, as kxfer's default */
#define KA_TIMEOUT_MS	5000	/* no sign of life for this long: dead */
#define CONNECT_MS	10000	/* QPs connected within, per attempt */
#define UP_MS		40000	/* up within, per attempt */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000

enum wr_kind { WR_RECV = 1, WR_SEND, WR_DATA, WR_IMM };

/*
 * wr_id: kind (8 bits), the node's attempt (8), the node (16), an index
 * (32): a completion of an attempt torn down is told from the next's.
 */
static uint64_t wr_id(enum wr_kind k, unsigned int gen, unsigned int peer,
		      unsigned int idx)
{
	return (uint64_t)k << 56 | (uint64_t)(gen & 0xff) << 48 |
	       (uint64_t)peer << 32 | idx;
}

struct rexport {
	char name[NAME_LEN];
	uint64_t len;
	uint64_t gen;
	uint32_t access;
	unsigned int nmrs, have;
	struct wire_mr *mrs;	/* host order */
};

struct qpc {
	struct peer *p;
	unsigned int idx;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t remote_qpn;
	bool established;
};

struct txmsg {
	struct txmsg *next;
	unsigned int len;
	uint8_t data[];		/* header written when posted */
};

enum peer_state {
	P_WAIT,		/* waiting for its turn or its backoff */
	P_CONNECTING,	/* resolving, connecting its QPs */
	P_CTRL,		/* control channel up, tables being exchanged */
	P_UP,
	P_DEAD,		/* killed on request (-C): its QPs are gone */
	P_FAILED,	/* gave up */
};

enum job_state { J_FREE, J_WRITE, J_READ };

struct job {
	enum job_state state;
	unsigned int qp;
	uint64_t off;		/* in the node's slice */
	uint64_t seq;
	int token;		/* WRITE_WITH_IMM token slot, or -1 */
};

struct imm_tok {
	bool used, wwi_done, desc_done;
	uint32_t token;
};

struct peer {
	unsigned int i;
	char node[NAME_LEN];
	uint32_t incarnation;
	uint8_t key[64];
	unsigned int key_len;
	enum peer_state state;
	int64_t next_ms;	/* P_WAIT: connect then */
	int64_t start_ms;	/* this attempt's start */
	int64_t up_ms;
	unsigned int attempts, backoff_ms;
	unsigned int gen;	/* attempt number, in every wr_id */
	uint64_t sid;
	struct qpc q[MAX_QPS];
	unsigned int nestablished;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;	/* the arena, local access */
	uint8_t *arena;
	struct ibv_mr *xmr;	/* -x: the node's own export */
	uint8_t *xbuf;
	/* control channel */
	char a_node[NAME_LEN];
	uint32_t features;	/* both speak */
	uint8_t a_nonce[NONCE_LEN];
	uint8_t c_nonce[NONCE_LEN];
	bool auth_wait;		/* challenge sent, reply awaited */
	bool ctrl_up, sent_sync, got_sync;
	int credits, credits_max;
	unsigned int owed;
	uint32_t tx_seq, rx_seq;
	struct txmsg *txq, **txq_tail;
	struct txmsg *ka_ack;	/* a KEEPALIVE_ACK queued */
	unsigned int free_sends;	/* bitmap of SENDS */
	unsigned int sending;
	int64_t last_life_ms;
	int64_t ka_sent_ms, ka_last_ms;
	uint64_t ka_rtt_max_us;
	struct rexport *rx;
	unsigned int nrx, rx_cap;
	/* traffic targets, sorted by name: indices into rx */
	unsigned int *tg, ntg;
	bool tg_stale;
	int send_token[SENDS];	/* the token a NOTIFY_DESC in a send slot ends */
	/* traffic */
	struct job jobs[MAX_INFLIGHT];
	unsigned int rotor;
	uint64_t seq;
	uint64_t verified, since_notify;
	uint64_t fill_off;	/* -F: the next block to fill */
	struct imm_tok imm[IMM_MAX];
	uint32_t next_token;
	bool dirty;
};

/* Options */
static struct sockaddr_storage dst;
static const char *dst_addr = "10.99.0.1";
static unsigned int dst_port = 19875;
static unsigned int npeers = 16, nqps = 2, window = 16;
static const char *prefix = "sim";
static const char *key_dir;
static const char *target_prefix = "e";
static uint64_t slice = 32768, block = 4096;
static unsigned int depth = 2;
static unsigned int traffic_secs, notify_every, hold_secs;
static unsigned int up_secs = 600;
static unsigned int silent_secs = 20;
static const char *notify_export;
static bool notify_imm;
static bool do_fill;
static uint64_t fill_seed;
static uint64_t own_export_len;
static const char *wait_exports[16];
static unsigned int nwait_exports;
static const char *cmd_dir;
static const char *json_path;
static bool verbose;
static int slow = 1;

/* The process */
static struct rdma_event_channel *ec;
static struct ibv_comp_channel *cc;
static struct ibv_context *verbs;
static struct ibv_cq *cqs[MAX_PEERS / PEERS_PER_CQ];
static struct peer *peers;
static int epfd, tfd;

/* Results */
static unsigned int n_up, n_violations, n_failed;
static unsigned int n_rejected[REJ_MAX + 1], n_cm_errors, n_attempts;
static uint64_t n_jobs, n_writes, n_reads, n_bad, n_lost, n_werr;
static uint64_t n_notify_sent, n_notify_imm, n_notify_acked, n_notify_rx;
static uint64_t n_msgs_rx, n_msgs_tx, n_ka_rx;
static int64_t t0_ms, t_up_ms, t_first_up_ms;
static bool traffic_on, fill_on;
static char json_adverts[4096];

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

static __printf(1, 2) void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t rand64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = ((uint64_t)random() << 33) ^ (uint64_t)random();
	return v;
}

static __printf(2, 3) void violation(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	n_violations++;
	printf("VIOLATION: %s: ", p->node);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define NAME_CHARS \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:"

/* 1..31 of the name characters, then NULs to the end of the field. */
static bool name_ok(const char *n)
{
	unsigned int i;

	if (!n[0])
		return false;
	for (i = 0; i < NAME_LEN && n[i]; i++)
		if (!strchr(NAME_CHARS, n[i]))
			return false;
	if (i == NAME_LEN)
		return false;
	for (; i < NAME_LEN; i++)
		if (n[i])
			return false;
	return true;
}

/* xfer's seed:N pattern (selftests/xfer.c): byte o of word o / 8. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void pattern_fill(uint64_t key, uint8_t *buf, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++, off++)
		buf[i] = (uint8_t)(mix64(key + (off >> 3) * 0x9e3779b97f4a7c15ULL) >>
				   ((off & 7) * 8));
}

static uint64_t seed_key(uint64_t seed)
{
	return mix64(seed ^ 0x6b78666572ULL);
}

/* A job's own bytes: what it writes is nothing any other job wrote. */
static uint64_t job_key(const struct peer *p, uint64_t seq)
{
	return mix64(((uint64_t)p->i << 40) ^ seq ^ 0x5e551u);
}

static void status_file(const char *step, const char *fmt, ...) __printf(2, 3);
static void status_file(const char *step, const char *fmt, ...)
{
	char path[512], tmp[520];
	va_list ap;
	FILE *f;

	if (!cmd_dir)
		return;
	snprintf(path, sizeof(path), "%s/peersim.%s", cmd_dir, step);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		say("FAIL: cannot write %s: %s\n", tmp, strerror(errno));
		n_failed++;
		return;
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	rename(tmp, path);
}

static bool cmd_file(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", cmd_dir, name);
	return !access(path, F_OK);
}

/* Arena of a node: receives, send buffers, data (2 buffers per job). */
#define OFF_SENDS	((size_t)RECVS * MSG_SIZE)
#define OFF_DATA	(OFF_SENDS + (size_t)SENDS * MSG_SIZE)
static size_t arena_size(void)
{
	return OFF_DATA + (size_t)2 * depth * block;
}

static uint8_t *job_src(struct peer *p, unsigned int j)
{
	return p->arena + OFF_DATA + (size_t)2 * j * block;
}

static uint8_t *job_dst(struct peer *p, unsigned int j)
{
	return job_src(p, j) + block;
}

/* ---------------------------------------------------------------------- */
/* Sessions: connect, tear down, retry                                     */
/* ---------------------------------------------------------------------- */

static void peer_flush(struct peer *p);

static void rexports_clear(struct peer *p)
{
	unsigned int i;

	for (i = 0; i < p->nrx; i++)
		free(p->rx[i].mrs);
	p->nrx = 0;
	p->tg_stale = true;
}

static void txq_clear(struct peer *p)
{
	struct txmsg *m;

	while ((m = p->txq)) {
		p->txq = m->next;
		free(m);
	}
	p->txq_tail = &p->txq;
	p->ka_ack = NULL;
}

/* Every QP and cm_id of the attempt, gone; the node waits @delay_ms. */
static void peer_teardown(struct peer *p, bool disconnect)
{
	unsigned int i;

	for (i = 0; i < nqps; i++) {
		struct qpc *c = &p->q[i];

		if (c->id && c->established && disconnect)
			rdma_disconnect(c->id);
	}
	for (i = 0; i < nqps; i++) {
		struct qpc *c = &p->q[i];

		if (c->qp)
			rdma_destroy_qp(c->id);
		if (c->id)
			rdma_destroy_id(c->id);
		c->id = NULL;
		c->qp = NULL;
		c->established = false;
		c->remote_qpn = 0;
	}
	p->nestablished = 0;
	p->ctrl_up = p->sent_sync = p->got_sync = p->auth_wait = false;
	p->sending = 0;
	p->free_sends = (1u << SENDS) - 1;
	txq_clear(p);
	rexports_clear(p);
	memset(p->jobs, 0, sizeof(p->jobs));
	memset(p->imm, 0, sizeof(p->imm));
}

static void peer_retry(struct peer *p, const char *why)
{
	unsigned int ms = p->backoff_ms ?: BACKOFF_MIN_MS;
	unsigned int jitter = ms / 4;

	if (verbose || p->state == P_UP)
		say("%s: %s; again in about %u ms\n", p->node, why, ms);
	if (p->state == P_UP) {
		n_up--;
		violation(p, "a session that was up went down: %s", why);
	}
	peer_teardown(p, true);
	p->backoff_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
	p->state = P_WAIT;
	p->next_ms = now_ms() + ms - jitter + (int64_t)(rand64() % (2 * jitter + 1));
}

static void conn_pdata(struct peer *p, struct wire_conn *w, unsigned int idx)
{
	memset(w, 0, sizeof(*w));
	w->magic = htole32(WIRE_MAGIC);
	w->version = htole16(WIRE_VERSION);
	w->qp_index = idx;
	w->qp_count = nqps;
	w->session_id = htole64(p->sid);
	w->recv_credits = htole16(RECVS);
	memcpy(w->node, p->node, strlen(p->node));
	w->incarnation = htole32(p->incarnation);
}

static int post_recv(struct peer *p, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->arena + (size_t)i * MSG_SIZE),
		.length = MSG_SIZE,
		.lkey = p->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id(WR_RECV, p->gen, p->i, i), .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(p->q[0].qp, &wr, &bad);
}

/* PD, MRs and the CQ of a node, once, on the device of its first route. */
static int peer_verbs(struct peer *p, struct ibv_context *ctx)
{
	unsigned int c = p->i / PEERS_PER_CQ;

	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 };

	if (!verbs) {
		verbs = ctx;
		cc = ibv_create_comp_channel(ctx);
		if (!cc)
			return -errno;
		fcntl(cc->fd, F_SETFL, fcntl(cc->fd, F_GETFL) | O_NONBLOCK);
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, cc->fd, &ev))
			return -errno;
	} else if (verbs != ctx) {
		say("FAIL: %s: routed over a second device\n", p->node);
		return -EXDEV;
	}
	if (!cqs[c]) {
		int cqe = PEERS_PER_CQ * (nqps * (DATA_WRS + SENDS + 2) + RECVS + 2);

		cqs[c] = ibv_create_cq(ctx, cqe, NULL, cc, 0);
		if (!cqs[c] || ibv_req_notify_cq(cqs[c], 0))
			return -errno;
	}
	p->cq = cqs[c];
	if (p->pd)
		return 0;
	p->pd = ibv_alloc_pd(ctx);
	if (!p->pd)
		return -errno;
	p->arena = aligned_alloc(4096, arena_size());
	if (!p->arena)
		return -ENOMEM;
	memset(p->arena, 0, arena_size());
	p->mr = ibv_reg_mr(p->pd, p->arena, arena_size(),
			   IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr)
		return -errno;
	if (own_export_len) {
		p->xbuf = aligned_alloc(4096, own_export_len);
		if (!p->xbuf)
			return -ENOMEM;
		memset(p->xbuf, 0, own_export_len);
		/* Remote addresses are offsets, as kxfer's own exports' are. */
		p->xmr = ibv_reg_mr_iova(p->pd, p->xbuf, own_export_len, 0,
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_WRITE);
		if (!p->xmr)
			return -errno;
	}
	return 0;
}

static int qp_create(struct peer *p, struct qpc *c)
{
	struct ibv_qp_init_attr qa = {
		.cap = {
			.max_send_wr = DATA_WRS + SENDS + 1,
			.max_recv_wr = c->idx ? 1 : RECVS + 1,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
	};
	unsigned int i;
	int ret;

	ret = peer_verbs(p, c->id->verbs);
	if (ret)
		return ret;
	qa.send_cq = p->cq;
	qa.recv_cq = p->cq;
	if (rdma_create_qp(c->id, p->pd, &qa))
		return -errno;
	c->qp = c->id->qp;
	if (c->idx)
		return 0;
	for (i = 0; i < RECVS; i++)
		if (post_recv(p, i))
			return -EIO;
	return 0;
}

static int qp_connect(struct peer *p, struct qpc *c)
{
	struct wire_conn w;
	struct rdma_conn_param cp = {
		.private_data = &w, .private_data_len = sizeof(w),
		.responder_resources = 16, .initiator_depth = 16,
		/* two-sided traffic is credit based: an RNR is a bug */
		.retry_count = 7, .rnr_retry_count = 0,
	};
	uint8_t tmo = 16;

	conn_pdata(p, &w, c->idx);
	rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			&tmo, sizeof(tmo));
	return rdma_connect(c->id, &cp) ? -errno : 0;
}

static void peer_connect(struct peer *p)
{
	unsigned int i;

	p->state = P_CONNECTING;
	p->start_ms = now_ms();
	p->gen++;
	p->sid = rand64();
	p->attempts++;
	n_attempts++;
	for (i = 0; i < nqps; i++) {
		struct qpc *c = &p->q[i];

		c->p = p;
		c->idx = i;
		if (rdma_create_id(ec, &c->id, c, RDMA_PS_TCP) ||
		    rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst,
				      2000 * slow)) {
			peer_retry(p, "cannot start address resolution");
			return;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* The control channel                                                     */
/* ---------------------------------------------------------------------- */

static struct txmsg *msg_queue(struct peer *p, unsigned int type,
			       const void *body, unsigned int body_len)
{
	unsigned int len = sizeof(struct msg_hdr) + body_len;
	struct txmsg *m = calloc(1, sizeof(*m) + len);

	if (!m) {
		say("FAIL: out of memory\n");
		exit(1);
	}
	m->len = len;
	((struct msg_hdr *)m->data)->type = type;
	if (body_len)
		memcpy(m->data + sizeof(struct msg_hdr), body, body_len);
	*p->txq_tail = m;
	p->txq_tail = &m->next;
	p->dirty = true;
	return m;
}

/* Put a CREDIT ahead of the queue. */
static void msg_queue_credit_first(struct peer *p)
{
	struct txmsg *m = calloc(1, sizeof(*m) + sizeof(struct msg_hdr));

	if (!m)
		exit(1);
	m->len = sizeof(struct msg_hdr);
	((struct msg_hdr *)m->data)->type = MSG_CREDIT;
	m->next = p->txq;
	if (!p->txq)
		p->txq_tail = &m->next;
	p->txq = m;
}

static uint8_t msg_type(const struct txmsg *m)
{
	return ((const struct msg_hdr *)m->data)->type;
}

/*
 * Credits we owe go back with any message, alone when half the receives
 * are owed and nothing waits, and alone, first, when the next message
 * waits for its credits with one left (the one kept for a CREDIT).
 */
static bool credit_due(struct peer *p)
{
	if (!p->owed)
		return false;
	if (!p->txq)
		return p->owed >= CREDIT_BATCH;
	if (msg_type(p->txq) == MSG_CREDIT)
		return false;
	return p->credits == 1;
}

static void peer_flush(struct peer *p)
{
	p->dirty = false;
	if (!p->ctrl_up || p->state == P_DEAD)
		return;
	if (credit_due(p))
		msg_queue_credit_first(p);
	while (p->txq) {
		struct txmsg *m = p->txq;
		uint8_t type = msg_type(m);
		struct msg_hdr *h;
		unsigned int slot;
		struct ibv_sge sge;
		struct ibv_send_wr wr = {}, *bad;

		if (!p->free_sends ||
		    p->credits < (type == MSG_CREDIT ? 1 : 2))
			break;
		slot = __builtin_ctz(p->free_sends);
		p->free_sends &= ~(1u << slot);
		p->txq = m->next;
		if (!p->txq)
			p->txq_tail = &p->txq;
		if (m == p->ka_ack)
			p->ka_ack = NULL;
		p->credits--;
		h = (struct msg_hdr *)(p->arena + OFF_SENDS + (size_t)slot * MSG_SIZE);
		memcpy(h, m->data, m->len);
		h->magic = htole32(WIRE_MAGIC);
		h->version = WIRE_VERSION;
		h->type = type;
		h->len = htole16(m->len);
		h->seq = htole32(++p->tx_seq);
		h->credits = htole16(p->owed);
		h->pad = 0;
		p->owed = 0;
		sge.addr = (uintptr_t)h;
		sge.length = m->len;
		sge.lkey = p->mr->lkey;
		wr.wr_id = wr_id(WR_SEND, p->gen, p->i, slot);
		p->send_token[slot] = -1;
		if (type == MSG_NOTIFY_DESC) {
			const struct msg_notify_desc *d = (const void *)h;
			unsigned int t;

			for (t = 0; t < IMM_MAX; t++)
				if (p->imm[t].used &&
				    htole32(p->imm[t].token) == d->token)
					p->send_token[slot] = t;
		}
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		free(m);
		if (ibv_post_send(p->q[0].qp, &wr, &bad)) {
			peer_retry(p, "cannot post a control send");
			return;
		}
		p->sending++;
		n_msgs_tx++;
	}
}

/* The proof of @role, HMAC-SHA256 of struct auth_mac with the node's key. */
static bool auth_proof(struct peer *p, uint32_t role, uint8_t *mac)
{
	struct auth_mac m;
	unsigned int i, len = MAC_LEN;

	memset(&m, 0, sizeof(m));
	strcpy(m.label, "kxfer auth v1");
	m.role = htole32(role);
	m.nqps = htole32(nqps);
	m.session_id = htole64(p->sid);
	m.incarnation = htole32(p->incarnation);
	memcpy(m.cnonce, p->c_nonce, NONCE_LEN);
	memcpy(m.anonce, p->a_nonce, NONCE_LEN);
	memcpy(m.cnode, p->node, strlen(p->node));
	memcpy(m.anode, p->a_node, NAME_LEN);
	for (i = 0; i < nqps; i++) {
		m.qpn[i][0] = htole32(p->q[i].qp->qp_num);
		m.qpn[i][1] = htole32(p->q[i].remote_qpn);
	}
	return HMAC(EVP_sha256(), p->key, (int)p->key_len, (const uint8_t *)&m,
		    sizeof(m), mac, &len) && len == MAC_LEN;
}

/* The node's own export table (-x), then its end. */
static void send_table(struct peer *p)
{
	if (own_export_len) {
		uint8_t buf[sizeof(struct msg_export) + sizeof(struct wire_mr)];
		struct msg_export *e = (void *)buf;

		memset(buf, 0, sizeof(buf));
		strcpy(e->name, "sx");
		e->len = htole64(own_export_len);
		e->gen = htole64(1);
		e->access = htole32(ACCESS_READ | ACCESS_WRITE);
		e->nmrs = htole16(1);
		e->count = htole16(1);
		e->mrs[0].len = htole64(own_export_len);
		e->mrs[0].rkey = htole32(p->xmr->rkey);
		msg_queue(p, MSG_EXPORT_ADD, buf + sizeof(struct msg_hdr),
			  sizeof(buf) - sizeof(struct msg_hdr));
	}
	msg_queue(p, MSG_SYNC_DONE, NULL, 0);
	p->sent_sync = true;
}

/* Every QP connected: HELLO first, then the handshake or the table. */
static void ctrl_start(struct peer *p)
{
	p->ctrl_up = true;
	p->state = P_CTRL;
	p->last_life_ms = now_ms();
	p->ka_last_ms = p->last_life_ms;
	if (p->features) {
		struct msg_hello h = { .features = htole32(p->features) };

		msg_queue(p, MSG_HELLO, &h.features,
			  sizeof(h) - sizeof(h.h));
	}
	if (p->features & F_AUTH) {
		struct msg_auth_challenge c = {};

		if (p->key_len) {
			if (getrandom(p->c_nonce, NONCE_LEN, 0) != NONCE_LEN) {
				peer_retry(p, "no random bytes");
				return;
			}
			memcpy(c.nonce, p->c_nonce, NONCE_LEN);
			c.flags = htole32(AUTH_F_KEY);
			if (!auth_proof(p, ROLE_CONNECTOR, c.mac)) {
				peer_retry(p, "HMAC failed");
				return;
			}
		}
		msg_queue(p, MSG_AUTH_CHALLENGE, &c.flags, sizeof(c) - sizeof(c.h));
		p->auth_wait = true;
	} else if (!p->key_len) {
		send_table(p);
	} else {
		/* kxfer's connector gives up on a peer that does not prove */
		say("FAIL: %s: the listener offers no authentication\n", p->node);
		n_failed++;
		peer_teardown(p, true);
		p->state = P_FAILED;
		return;
	}
	peer_flush(p);
}

static struct rexport *rexport_find(struct peer *p, const char *name)
{
	unsigned int i;

	for (i = 0; i < p->nrx; i++)
		if (!strncmp(p->rx[i].name, name, NAME_LEN))
			return &p->rx[i];
	return NULL;
}

static void rx_export(struct peer *p, const struct msg_export *m, unsigned int len)
{
	unsigned int nmrs = le16toh(m->nmrs), first = le16toh(m->first);
	unsigned int count = le16toh(m->count), i;
	struct rexport *rx;

	if (len < sizeof(*m) || !name_ok(m->name) || !m->len || !m->access ||
	    (le32toh(m->access) & ~ACCESS_ALL) || !nmrs || nmrs > MAX_MRS ||
	    !count || first >= nmrs || count > nmrs - first ||
	    count > MRS_PER_MSG ||
	    len != sizeof(*m) + count * sizeof(m->mrs[0]) ||
	    m->pad[0] || m->pad[1] || m->pad[2]) {
		violation(p, "malformed EXPORT_ADD (%u bytes)", len);
		return;
	}
	if (p->auth_wait)
		violation(p, "export %.31s before the handshake ended", m->name);
	rx = rexport_find(p, m->name);
	if (!first) {
		if (rx && le64toh(m->gen) <= rx->gen)
			violation(p, "export %s: generation went backwards", m->name);
		if (!rx) {
			if (p->nrx == p->rx_cap) {
				p->rx_cap = p->rx_cap ? 2 * p->rx_cap : 64;
				p->rx = realloc(p->rx, p->rx_cap * sizeof(*p->rx));
				if (!p->rx)
					exit(1);
			}
			rx = &p->rx[p->nrx++];
			rx->mrs = NULL;
		}
		free(rx->mrs);
		memset(rx, 0, sizeof(*rx));
		memcpy(rx->name, m->name, NAME_LEN);
		rx->len = le64toh(m->len);
		rx->gen = le64toh(m->gen);
		rx->access = le32toh(m->access);
		rx->nmrs = nmrs;
		rx->mrs = calloc(nmrs, sizeof(*rx->mrs));
		if (!rx->mrs)
			exit(1);
	} else if (!rx || rx->gen != le64toh(m->gen) || rx->nmrs != nmrs ||
		   rx->have != first || rx->len != le64toh(m->len)) {
		violation(p, "export %s: continuation does not follow its start",
			  m->name);
		return;
	}
	for (i = 0; i < count; i++) {
		struct wire_mr *d = &rx->mrs[first + i];
		const struct wire_mr *s = &m->mrs[i];

		d->off = le64toh(s->off);
		d->len = le64toh(s->len);
		d->iova = le64toh(s->iova);
		d->rkey = le32toh(s->rkey);
		if (s->pad || !d->len || d->off + d->len > rx->len ||
		    (first + i && d->off < d[-1].off + d[-1].len))
			violation(p, "export %s: MR %u out of place", m->name,
				  first + i);
	}
	rx->have = first + count;
	if (rx->have == rx->nmrs)
		p->tg_stale = true;
}

static void rx_export_del(struct peer *p, const struct msg_export_del *m)
{
	struct rexport *rx = rexport_find(p, m->name);

	if (!name_ok(m->name)) {
		violation(p, "EXPORT_DEL with a bad name");
		return;
	}
	if (!rx || rx->gen > le64toh(m->gen))
		return;
	free(rx->mrs);
	*rx = p->rx[--p->nrx];
	p->tg_stale = true;
}

static void rx_auth_reply(struct peer *p, const struct msg_auth_reply *r)
{
	uint8_t mac[MAC_LEN];

	if (!p->auth_wait) {
		violation(p, "AUTH_REPLY out of turn");
		return;
	}
	p->auth_wait = false;
	if (r->pad || (le32toh(r->flags) & ~AUTH_F_KEY)) {
		violation(p, "AUTH_REPLY with padding or unknown flags");
		return;
	}
	if (!(le32toh(r->flags) & AUTH_F_KEY)) {
		if (p->key_len) {
			say("FAIL: %s: the listener proves no key\n", p->node);
			n_failed++;
			peer_teardown(p, true);
			p->state = P_FAILED;
			return;
		}
	} else if (!p->key_len || !auth_proof(p, ROLE_ACCEPTOR, mac) ||
		   memcmp(mac, r->mac, MAC_LEN)) {
		violation(p, "the listener's proof does not match");
		return;
	}
	send_table(p);
}

static const unsigned int msg_len_of[] = {
	[MSG_CREDIT] = sizeof(struct msg_hdr),
	[MSG_EXPORT_DEL] = sizeof(struct msg_export_del),
	[MSG_SYNC_DONE] = sizeof(struct msg_hdr),
	[MSG_KEEPALIVE] = sizeof(struct msg_keepalive),
	[MSG_KEEPALIVE_ACK] = sizeof(struct msg_keepalive),
	[MSG_NOTIFY] = sizeof(struct msg_notify),
	[MSG_NOTIFY_DESC] = sizeof(struct msg_notify_desc),
	[MSG_AUTH_REPLY] = sizeof(struct msg_auth_reply),
	[MSG_AUTH_FAIL] = sizeof(struct msg_auth_fail),
};

/* A notification for our own export (-x), from the kernel node. */
static void rx_notify(struct peer *p, const struct msg_notify *n)
{
	if (!own_export_len || strcmp(n->name, "sx") || le64toh(n->gen) != 1)
		violation(p, "notification for an export it was not given");
	n_notify_rx++;
}

static void rx_msg(struct peer *p, const uint8_t *buf, unsigned int len)
{
	const struct msg_hdr *h = (const void *)buf;
	unsigned int type, want = 0;

	n_msgs_rx++;
	if (len < sizeof(*h) || le32toh(h->magic) != WIRE_MAGIC ||
	    h->version != WIRE_VERSION || le16toh(h->len) != len || h->pad) {
		violation(p, "bad header (%u bytes)", len);
		return;
	}
	if (le32toh(h->seq) != p->rx_seq + 1)
		violation(p, "sequence %u after %u", le32toh(h->seq), p->rx_seq);
	p->rx_seq = le32toh(h->seq);
	p->credits += le16toh(h->credits);
	if (p->credits > p->credits_max)
		violation(p, "%d credits returned of %d lent", p->credits,
			  p->credits_max);
	type = h->type;
	if (type == MSG_EXPORT_ADD) {
		rx_export(p, (const void *)buf, len);
		return;
	}
	if (type == MSG_NOTIFY_MSG) {
		const struct msg_notify_msg *nm = (const void *)buf;

		if (len < sizeof(*nm) || !le16toh(nm->len) ||
		    le16toh(nm->len) > 1024 ||
		    len != sizeof(*nm) + le16toh(nm->len))
			violation(p, "malformed NOTIFY_MSG");
		else
			rx_notify(p, &nm->n);
		return;
	}
	if (type < ARRAY_SIZE(msg_len_of))
		want = msg_len_of[type];
	if (!want) {
		/* HELLO and AUTH_CHALLENGE are the connector's: ours */
		violation(p, "message type %u", type);
		return;
	}
	if (len != want) {
		violation(p, "type %u of %u bytes", type, len);
		return;
	}
	if (p->auth_wait && type != MSG_CREDIT && type != MSG_KEEPALIVE &&
	    type != MSG_KEEPALIVE_ACK && type != MSG_AUTH_REPLY &&
	    type != MSG_AUTH_FAIL)
		violation(p, "type %u before the handshake ended", type);
	switch (type) {
	case MSG_SYNC_DONE:
		if (p->got_sync)
			violation(p, "a second SYNC_DONE");
		p->got_sync = true;
		break;
	case MSG_EXPORT_DEL:
		rx_export_del(p, (const void *)buf);
		break;
	case MSG_KEEPALIVE:
		n_ka_rx++;
		/* at most one answer waits: a newer probe's stamp replaces */
		if (p->ka_ack)
			memcpy(p->ka_ack->data + sizeof(*h), buf + sizeof(*h), 8);
		else
			p->ka_ack = msg_queue(p, MSG_KEEPALIVE_ACK,
					      buf + sizeof(*h), 8);
		break;
	case MSG_KEEPALIVE_ACK: {
		uint64_t stamp;

		memcpy(&stamp, buf + sizeof(*h), 8);
		stamp = le64toh(stamp);
		if (p->ka_sent_ms && stamp >= (uint64_t)p->ka_sent_ms * 1000000) {
			uint64_t rtt = (now_ns() - (uint64_t)p->ka_sent_ms * 1000000) / 1000;

			if (rtt > p->ka_rtt_max_us)
				p->ka_rtt_max_us = rtt;
			p->ka_sent_ms = 0;
		}
		break;
	}
	case MSG_NOTIFY:
		rx_notify(p, (const void *)buf);
		break;
	case MSG_NOTIFY_DESC: {
		const struct msg_notify_desc *d = (const void *)buf;

		if (d->pad)
			violation(p, "NOTIFY_DESC padding");
		rx_notify(p, &d->n);
		break;
	}
	case MSG_AUTH_REPLY:
		rx_auth_reply(p, (const void *)buf);
		break;
	case MSG_AUTH_FAIL:
		say("FAIL: %s: the listener refused the handshake (reason %u)\n",
		    p->node, le32toh(((const struct msg_auth_fail *)buf)->reason));
		n_failed++;
		peer_teardown(p, true);
		p->state = P_FAILED;
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------------------- */
/* Traffic                                                                 */
/* ---------------------------------------------------------------------- */

static const struct rexport *tg_sort_rx;

static int tg_cmp(const void *a, const void *b)
{
	return strcmp(tg_sort_rx[*(const unsigned int *)a].name,
		      tg_sort_rx[*(const unsigned int *)b].name);
}

/* The complete exports named PREFIX..., in name order. */
static void targets_sort(struct peer *p)
{
	unsigned int i;

	free(p->tg);
	p->tg = calloc(p->nrx + 1, sizeof(*p->tg));
	if (!p->tg)
		exit(1);
	p->ntg = 0;
	for (i = 0; i < p->nrx; i++)
		if (!strncmp(p->rx[i].name, target_prefix, strlen(target_prefix)) &&
		    p->rx[i].have == p->rx[i].nmrs)
			p->tg[p->ntg++] = i;
	tg_sort_rx = p->rx;
	qsort(p->tg, p->ntg, sizeof(*p->tg), tg_cmp);
	p->tg_stale = false;
}

/*
 * Byte @space_off of the traffic space: the targets laid end to end, all
 * of the first one's length.  Its export and the offset in it.
 */
static const struct rexport *target_of(struct peer *p, uint64_t space_off,
				    uint64_t *off)
{
	const struct rexport *rx;
	uint64_t len, k;

	if (p->tg_stale)
		targets_sort(p);
	if (!p->ntg)
		return NULL;
	len = p->rx[p->tg[0]].len;
	k = space_off / len;
	if (k >= p->ntg)
		return NULL;
	rx = &p->rx[p->tg[k]];
	if (rx->len != len) {
		violation(p, "traffic target %s is not %" PRIu64 " bytes long",
			  rx->name, len);
		return NULL;
	}
	*off = space_off % len;
	return rx;
}

/* The MR of @rx that holds [off, off + len), or NULL. */
static const struct wire_mr *mr_of(const struct rexport *rx, uint64_t off,
				   uint64_t len)
{
	unsigned int lo = 0, hi = rx->nmrs;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		const struct wire_mr *m = &rx->mrs[mid];

		if (off < m->off)
			hi = mid;
		else if (off >= m->off + m->len)
			lo = mid + 1;
		else
			return off + len <= m->off + m->len ? m : NULL;
	}
	return NULL;
}

/* Post one WRITE (or WRITE_WITH_IMM) or READ of job @j. */
static int job_post(struct peer *p, unsigned int j, bool write, int token,
		    uint64_t len, const uint8_t *local, uint64_t space_off)
{
	struct job *job = &p->jobs[j];
	const struct rexport *rx;
	const struct wire_mr *m;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {}, *bad;
	uint64_t off;

	rx = target_of(p, space_off, &off);
	m = rx ? mr_of(rx, off, len) : NULL;
	if (!m) {
		violation(p, "no export MR for byte %" PRIu64 " of the space",
			  space_off);
		return -ENOENT;
	}
	sge.addr = (uintptr_t)local;
	sge.length = len;
	sge.lkey = p->mr->lkey;
	wr.wr_id = wr_id(WR_DATA, p->gen, p->i, j);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = m->iova + (off - m->off);
	wr.wr.rdma.rkey = m->rkey;
	if (!write) {
		wr.opcode = IBV_WR_RDMA_READ;
	} else if (token >= 0) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(p->imm[token].token);
	} else {
		wr.opcode = IBV_WR_RDMA_WRITE;
	}
	if (ibv_post_send(p->q[job->qp].qp, &wr, &bad))
		return -errno;
	return 0;
}

static const struct rexport *notify_target(struct peer *p)
{
	uint64_t off;

	if (notify_export)
		return rexport_find(p, notify_export);
	return target_of(p, 0, &off);
}

static void notify_fill(struct peer *p, struct msg_notify *n,
			const struct rexport *rx)
{
	memcpy(n->name, rx->name, NAME_LEN);
	n->gen = htole64(rx->gen);
	n->value = htole64((uint64_t)p->i << 32 | (p->verified & 0xffffffff));
	n->bytes = htole64(block);
}

/*
 * A WRITE_WITH_IMM token for this job, if it is to notify, lands on QP 0,
 * and there are three credits and a free token (else it notifies by
 * message once its data is acknowledged).
 */
static int imm_take(struct peer *p, unsigned int j)
{
	struct msg_notify_desc d = {};
	const struct rexport *rx;
	unsigned int t;

	if (!notify_imm || !notify_every || p->jobs[j].qp ||
	    p->since_notify + 1 < notify_every || p->credits < 3)
		return -1;
	rx = notify_target(p);
	if (!rx)
		return -1;
	for (t = 0; t < IMM_MAX; t++)
		if (!p->imm[t].used)
			break;
	if (t == IMM_MAX)
		return -1;
	p->imm[t].used = true;
	p->imm[t].wwi_done = p->imm[t].desc_done = false;
	p->imm[t].token = p->next_token++;
	notify_fill(p, &d.n, rx);
	d.token = htole32(p->imm[t].token);
	/* the description goes first; either half may arrive first */
	msg_queue(p, MSG_NOTIFY_DESC, d.n.name, sizeof(d) - sizeof(d.n.h));
	p->credits--;		/* the WRITE_WITH_IMM takes a receive */
	p->since_notify = 0;
	n_notify_sent++;
	n_notify_imm++;
	return (int)t;
}

/* -F: the next block of the node's slice, xfer's seed:SEED pattern. */
static void fill_start(struct peer *p, unsigned int j)
{
	struct job *job = &p->jobs[j];
	uint64_t space = (uint64_t)p->i * slice + p->fill_off;

	job->qp = p->rotor++ % nqps;
	job->seq = 0;
	job->token = -1;
	job->off = p->fill_off;
	p->fill_off += block;
	pattern_fill(seed_key(fill_seed), job_src(p, j), space, block);
	job->state = J_WRITE;
	if (job_post(p, j, true, -1, block, job_src(p, j), space)) {
		job->state = J_FREE;
		n_lost++;
	}
}

static void job_start(struct peer *p, unsigned int j)
{
	struct job *job = &p->jobs[j];
	uint64_t nblocks = slice / block / depth, space;
	int ret;

	if (fill_on) {
		if (p->fill_off < slice)
			fill_start(p, j);
		return;
	}
	job->qp = p->rotor++ % nqps;
	job->seq = ++p->seq;
	/* job j owns blocks j, j + depth, ...: no two in flight overlap */
	job->off = ((rand64() % nblocks) * depth + j) * block;
	job->token = imm_take(p, j);
	space = (uint64_t)p->i * slice + job->off;
	pattern_fill(job_key(p, job->seq), job_src(p, j), 0, block);
	job->state = J_WRITE;
	ret = job_post(p, j, true, job->token, block, job_src(p, j), space);
	if (ret) {
		job->state = J_FREE;
		n_lost++;
		return;
	}
	n_writes++;
	p->dirty |= job->token >= 0;
}

static void imm_done(struct peer *p, unsigned int t, bool wwi)
{
	struct imm_tok *k = &p->imm[t];

	if (wwi)
		k->wwi_done = true;
	else
		k->desc_done = true;
	if (k->wwi_done && k->desc_done) {
		k->used = false;
		n_notify_acked++;
	}
}

static void job_done(struct peer *p, unsigned int j, const struct ibv_wc *wc)
{
	struct job *job = &p->jobs[j];
	uint8_t want[65536];

	if (job->state == J_FREE)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		if (p->state == P_UP)
			say("FAIL: %s: job %" PRIu64 " %s: %s\n", p->node, job->seq,
			    job->state == J_WRITE ? "WRITE" : "READ",
			    ibv_wc_status_str(wc->status));
		job->state = J_FREE;
		n_lost++;
		n_werr++;
		return;
	}
	if (fill_on) {
		job->state = J_FREE;
		if (p->state == P_UP)
			job_start(p, j);
		return;
	}
	n_jobs++;
	if (job->state == J_WRITE) {
		if (job->token >= 0)
			imm_done(p, job->token, true);
		else if (notify_every && ++p->since_notify >= notify_every) {
			/* by message, now that the NIC acknowledged the data */
			const struct rexport *rx = notify_target(p);

			if (rx) {
				struct msg_notify n = {};

				notify_fill(p, &n, rx);
				msg_queue(p, MSG_NOTIFY, n.name, sizeof(n) - sizeof(n.h));
				n_notify_sent++;
				p->since_notify = 0;
			}
		}
		job->state = J_READ;
		memset(job_dst(p, j), 0, block);
		if (job_post(p, j, false, -1, block, job_dst(p, j),
			     (uint64_t)p->i * slice + job->off)) {
			job->state = J_FREE;
			n_lost++;
			return;
		}
		n_reads++;
		return;
	}
	pattern_fill(job_key(p, job->seq), want, 0, block);
	if (memcmp(want, job_dst(p, j), block)) {
		n_bad++;
		say("FAIL: %s: job %" PRIu64 ": the bytes read back differ\n",
		    p->node, job->seq);
	}
	p->verified++;
	job->state = J_FREE;
	if (traffic_on && p->state == P_UP)
		job_start(p, j);
}

/* ---------------------------------------------------------------------- */
/* Events                                                                  */
/* ---------------------------------------------------------------------- */

static void on_established(struct qpc *c, const struct rdma_cm_event *ev)
{
	struct peer *p = c->p;
	const struct wire_accept *wa = ev->param.conn.private_data;
	unsigned int len = ev->param.conn.private_data_len;

	c->established = true;
	c->remote_qpn = ev->param.conn.qp_num;
	p->nestablished++;
	if (!c->idx) {
		if (!wa || len < offsetof(struct wire_accept, features) ||
		    le32toh(wa->magic) != WIRE_MAGIC ||
		    le16toh(wa->version) != WIRE_VERSION ||
		    le16toh(wa->recv_credits) < 2 ||
		    le16toh(wa->recv_credits) > 1024 || !name_ok(wa->node)) {
			violation(p, "bad accept private data (%u bytes)", len);
			peer_retry(p, "bad accept");
			return;
		}
		p->credits = p->credits_max = le16toh(wa->recv_credits);
		memcpy(p->a_node, wa->node, NAME_LEN);
		p->features = 0;
		if (len >= offsetof(struct wire_accept, nonce))
			p->features = le32toh(wa->features) & F_SPOKEN;
		if (p->features & F_AUTH) {
			if (len < sizeof(*wa)) {
				violation(p, "accept offers authentication without a nonce");
				peer_retry(p, "bad accept");
				return;
			}
			memcpy(p->a_nonce, wa->nonce, NONCE_LEN);
		}
		p->rx_seq = p->tx_seq = 0;
		p->owed = 0;
	}
	if (p->nestablished == nqps)
		ctrl_start(p);
}

static const char *reject_why(int reason)
{
	static const char * const why[] = {
		[REJ_MALFORMED] = "malformed", [REJ_VERSION] = "version",
		[REJ_NOT_ALLOWED] = "not allowed", [REJ_BUSY] = "busy",
		[REJ_DEVICE] = "device", [REJ_AUTH] = "authentication",
	};

	return reason > 0 && reason < REJ_MAX ? why[reason] : "not kxfer's";
}

static void on_cm_event(struct rdma_cm_event *ev)
{
	struct qpc *c = ev->id->context;
	struct peer *p = c->p;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status, reason = 0, ret = 0;

	if (verbose)
		say("%s: QP %u: %s (%d)\n", p->node, c->idx, rdma_event_str(type),
		    status);
	if (p->state == P_DEAD || p->state == P_FAILED) {
		rdma_ack_cm_event(ev);
		return;
	}
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(c->id, 2000 * slow) ? -errno : 0;
		rdma_ack_cm_event(ev);
		if (ret)
			peer_retry(p, "cannot resolve the route");
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rdma_ack_cm_event(ev);
		ret = qp_create(p, c);
		if (!ret)
			ret = qp_connect(p, c);
		if (ret)
			peer_retry(p, "cannot set up a QP");
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(c, ev);
		rdma_ack_cm_event(ev);
		return;
	case RDMA_CM_EVENT_REJECTED: {
		const uint8_t *d = ev->param.conn.private_data;
		uint32_t magic, r;

		if (d && ev->param.conn.private_data_len >= 8) {
			memcpy(&magic, d, 4);
			memcpy(&r, d + 4, 4);
			if (le32toh(magic) == WIRE_MAGIC && le32toh(r) < REJ_MAX)
				reason = le32toh(r);
		}
		n_rejected[reason]++;
		rdma_ack_cm_event(ev);
		if (reason != REJ_BUSY)
			say("%s: rejected: %s\n", p->node, reject_why(reason));
		peer_retry(p, "rejected");
		return;
	}
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		n_cm_errors++;
		rdma_ack_cm_event(ev);
		if (p->state == P_UP || verbose)
			say("%s: QP %u: %s (%d)\n", p->node, c->idx,
			    rdma_event_str(type), status);
		peer_retry(p, rdma_event_str(type));
		return;
	default:
		rdma_ack_cm_event(ev);
		return;
	}
}

static void on_wc(const struct ibv_wc *wc)
{
	enum wr_kind kind = wc->wr_id >> 56;
	unsigned int gen = (wc->wr_id >> 48) & 0xff;
	unsigned int pi = (wc->wr_id >> 32) & 0xffff;
	unsigned int idx = wc->wr_id & 0xffffffff;
	struct peer *p;

	if (pi >= npeers)
		return;
	p = &peers[pi];
	if (p->state == P_DEAD || p->state == P_FAILED ||
	    gen != (p->gen & 0xff))
		return;
	if (wc->status == IBV_WC_SUCCESS && kind != WR_RECV)
		p->last_life_ms = now_ms();
	switch (kind) {
	case WR_RECV:
		if (wc->status != IBV_WC_SUCCESS) {
			if (p->ctrl_up && wc->status != IBV_WC_WR_FLUSH_ERR)
				peer_retry(p, ibv_wc_status_str(wc->status));
			return;
		}
		p->last_life_ms = now_ms();
		if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			n_notify_rx++;	/* the token half of a notification */
		else if (wc->opcode == IBV_WC_RECV)
			rx_msg(p, p->arena + (size_t)idx * MSG_SIZE, wc->byte_len);
		else
			violation(p, "receive opcode %d", wc->opcode);
		if (p->ctrl_up && p->q[0].qp) {
			if (post_recv(p, idx))
				peer_retry(p, "cannot repost a receive");
			else
				p->owed++;
		}
		p->dirty = true;
		return;
	case WR_SEND:
		p->free_sends |= 1u << idx;
		p->sending--;
		if (wc->status != IBV_WC_SUCCESS) {
			if (wc->status != IBV_WC_WR_FLUSH_ERR)
				peer_retry(p, ibv_wc_status_str(wc->status));
			return;
		}
		if (p->send_token[idx] >= 0)
			imm_done(p, p->send_token[idx], false);
		p->dirty = true;
		return;
	case WR_DATA:
		if (idx < MAX_INFLIGHT)
			job_done(p, idx, wc);
		return;
	default:
		return;
	}
}

static void poll_cqs(void)
{
	struct ibv_cq *ev_cq;
	void *ctx;
	unsigned int c, i;

	while (!ibv_get_cq_event(cc, &ev_cq, &ctx)) {
		ibv_ack_cq_events(ev_cq, 1);
		ibv_req_notify_cq(ev_cq, 0);
	}
	for (c = 0; c < ARRAY_SIZE(cqs); c++) {
		struct ibv_wc wc[64];
		int n;

		if (!cqs[c])
			continue;
		while ((n = ibv_poll_cq(cqs[c], ARRAY_SIZE(wc), wc)) > 0)
			for (i = 0; i < (unsigned int)n; i++)
				on_wc(&wc[i]);
	}
	for (i = 0; i < npeers; i++) {
		if (peers[i].dirty)
			peer_flush(&peers[i]);
	}
}

static void poll_cm(void)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(ec, &ev))
		on_cm_event(ev);
}

/*
 * A probe every second, as kxfer's; while its answer is late, another
 * every third of the timeout, if nothing waits to be sent and more than
 * half the credits are here: the kernel's NIC acknowledges each at once,
 * and its arrival is a sign of life to the kernel, whose answer may wait
 * behind work of its own.
 */
static bool probe_due(struct peer *p, int64_t now)
{
	int64_t every = KA_MS;

	if (p->ka_sent_ms) {
		if (p->txq || p->credits <= p->credits_max / 2)
			return false;
		if (every < KA_TIMEOUT_MS / 3)
			every = KA_TIMEOUT_MS / 3;
	}
	return now - p->ka_last_ms >= every;
}

/* Keepalives, deadlines, the connect window and backoff: every tick. */
static void tick(void)
{
	int64_t now = now_ms();
	unsigned int i, connecting = 0;

	for (i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		if (p->state == P_CONNECTING || p->state == P_CTRL)
			connecting++;
	}
	for (i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		switch (p->state) {
		case P_WAIT:
			if (now < p->next_ms ||
			    (window && connecting >= window))
				break;
			connecting++;
			peer_connect(p);
			break;
		case P_CONNECTING:
			if (now - p->start_ms > CONNECT_MS * slow)
				peer_retry(p, "connection timed out");
			break;
		case P_CTRL:
			if (now - p->start_ms > UP_MS * slow) {
				peer_retry(p, "export exchange timed out");
				break;
			}
			if (p->sent_sync && p->got_sync) {
				p->state = P_UP;
				p->up_ms = now - p->start_ms;
				p->backoff_ms = 0;
				if (!n_up++)
					t_first_up_ms = now - t0_ms;
				if (verbose)
					say("%s: up in %" PRId64 " ms\n", p->node,
					    p->up_ms);
			}
			/* fall through */
		case P_UP:
			if (now - p->last_life_ms > silent_secs * 1000LL * slow) {
				say("FAIL: %s: the kernel node went silent\n", p->node);
				n_failed++;
				peer_retry(p, "keepalive timeout");
				break;
			}
			if (probe_due(p, now)) {
				struct msg_keepalive k = {};

				if (!p->ka_sent_ms)
					p->ka_sent_ms = now;
				p->ka_last_ms = now;
				k.stamp = htole64((uint64_t)now * 1000000);
				msg_queue(p, MSG_KEEPALIVE, &k.stamp, 8);
			}
			if (p->dirty)
				peer_flush(p);
			break;
		default:
			break;
		}
	}
}

/* Wait for events for @ms, or until @done() */
static bool run(int ms, bool (*done)(void))
{
	int64_t end = now_ms() + ms;

	for (;;) {
		struct epoll_event evs[4];
		int n, i;

		if (done && done())
			return true;
		if (now_ms() >= end)
			return false;
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), 100);
		for (i = 0; i < n; i++) {
			if (evs[i].data.u32 == 0) {
				poll_cm();
			} else if (evs[i].data.u32 == 1) {
				poll_cqs();
			} else {
				uint64_t x;

				if (read(tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
					exit(1);
				tick();
			}
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Steps                                                                   */
/* ---------------------------------------------------------------------- */

static bool all_up(void)
{
	unsigned int i;

	for (i = 0; i < npeers; i++)
		if (peers[i].state != P_UP && peers[i].state != P_FAILED)
			return false;
	return true;
}

static const char *advert_name;
static int64_t advert_first_ms;

static bool has_advert(struct peer *p)
{
	const struct rexport *rx = rexport_find(p, advert_name);

	return rx && rx->have == rx->nmrs;
}

static bool all_have_advert(void)
{
	unsigned int i, have = 0;

	for (i = 0; i < npeers; i++)
		if (peers[i].state == P_UP && has_advert(&peers[i]))
			have++;
	if (have && !advert_first_ms)
		advert_first_ms = now_ms();
	return have == n_up;
}

static bool jobs_idle(void)
{
	unsigned int i, j;

	for (i = 0; i < npeers; i++)
		for (j = 0; j < depth; j++)
			if (peers[i].jobs[j].state != J_FREE)
				return false;
	return true;
}

static void step_traffic(void)
{
	uint64_t jobs0 = n_jobs;
	int64_t t0 = now_ms(), t1;
	unsigned int i, j;

	traffic_on = true;
	for (i = 0; i < npeers; i++)
		if (peers[i].state == P_UP)
			for (j = 0; j < depth; j++)
				job_start(&peers[i], j);
	for (i = 0; i < npeers; i++)
		peer_flush(&peers[i]);
	run(traffic_secs * 1000, NULL);
	traffic_on = false;
	t1 = now_ms();
	if (!run(30000 * slow, jobs_idle)) {
		for (i = 0; i < npeers; i++)
			for (j = 0; j < depth; j++)
				if (peers[i].jobs[j].state != J_FREE)
					n_lost++;
		say("FAIL: jobs still in flight 30 s after the traffic stopped\n");
	}
	/* the notifications' last messages go out with the idle loop */
	run(500, NULL);
	say("traffic: %u nodes, %u s: %" PRIu64 " jobs (%" PRIu64 " WRITEs, %" PRIu64
	    " READs), %.0f jobs/s, %" PRIu64 " lost, %" PRIu64
	    " blocks differ; notifications %" PRIu64 " (%" PRIu64
	    " by WRITE_WITH_IMM)\n", n_up, traffic_secs, n_jobs - jobs0, n_writes,
	    n_reads, (double)(n_jobs - jobs0) * 1000.0 / (double)(t1 - t0),
	    n_lost, n_bad, n_notify_sent, n_notify_imm);
	status_file("traffic", "jobs %" PRIu64 " ms %" PRId64 " lost %" PRIu64
		    " bad %" PRIu64 " notify %" PRIu64 "\n", n_jobs - jobs0,
		    t1 - t0, n_lost, n_bad, n_notify_sent);
}

static bool fills_done(void)
{
	unsigned int i;

	for (i = 0; i < npeers; i++)
		if (peers[i].state == P_UP && peers[i].fill_off < slice)
			return false;
	return jobs_idle();
}

/* The final pattern, xfer's seed:SEED at the offsets of the space. */
static void step_fill(void)
{
	unsigned int i, j;

	fill_on = true;
	for (i = 0; i < npeers; i++)
		if (peers[i].state == P_UP)
			for (j = 0; j < depth; j++)
				job_start(&peers[i], j);
	if (!run(120000 * slow, fills_done)) {
		say("FAIL: the fill did not end within 120 s\n");
		n_failed++;
	}
	fill_on = false;
	say("filled: %u slices of %" PRIu64 " bytes with seed:%" PRIu64 "\n",
	    n_up, slice, fill_seed);
	status_file("filled", "%u\n", n_up);
}

static void kill_peer(unsigned int i)
{
	struct peer *p = &peers[i];
	unsigned int q;

	/* A host gone: nothing said, its QPs answer nothing any more. */
	for (q = 0; q < nqps; q++)
		if (p->q[q].qp) {
			rdma_destroy_qp(p->q[q].id);
			p->q[q].qp = NULL;
		}
	if (p->state == P_UP)
		n_up--;
	p->state = P_DEAD;
	say("killed %s\n", p->node);
	status_file("killed", "%u\n", i);
}

static void step_hold(void)
{
	int64_t end = now_ms() + hold_secs * 1000LL;

	for (;;) {
		char name[64];
		unsigned int i;

		if (cmd_dir && cmd_file("stop"))
			break;
		if ((!cmd_dir || hold_secs) && now_ms() >= end) {
			if (cmd_dir) {
				say("FAIL: no %s/stop within %u s\n", cmd_dir,
				    hold_secs);
				n_failed++;
			}
			break;
		}
		for (i = 0; cmd_dir && i < npeers; i++) {
			snprintf(name, sizeof(name), "kill.%u", i);
			if (peers[i].state != P_DEAD && cmd_file(name))
				kill_peer(i);
		}
		run(100, NULL);
	}
}

/* ---------------------------------------------------------------------- */
/* Set-up, results                                                         */
/* ---------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "Usage: peersim [-a ADDR] [-p PORT] [-n N] [-q Q] [-N PREFIX] [-K DIR]\n"
		"  [-w W] [-E PREFIX] [-S BYTES] [-B BYTES] [-D N] [-t SEC] [-k N]\n"
		"  [-m EXPORT] [-i] [-F SEED] [-x LEN] [-W EXPORT]... [-C DIR] [-T SEC]\n"
		"  [-U SEC] [-L SEC] [-j FILE] [-v]\n");
	exit(2);
}

static uint64_t arg_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	}
	if (*end || !v)
		usage();
	return v;
}

static void load_key(struct peer *p)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s.key", key_dir, p->node);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		say("FAIL: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	n = read(fd, p->key, sizeof(p->key));
	close(fd);
	if (n < 16) {
		say("FAIL: %s: a key is 16 to 64 bytes\n", path);
		exit(1);
	}
	p->key_len = n;
}

static void write_json(void)
{
	uint64_t rtt_max = 0;
	unsigned int i;
	FILE *f;

	if (!json_path)
		return;
	for (i = 0; i < npeers; i++)
		if (peers[i].ka_rtt_max_us > rtt_max)
			rtt_max = peers[i].ka_rtt_max_us;
	f = fopen(json_path, "w");
	if (!f)
		return;
	fprintf(f, "{\"peers\": %u, \"qps\": %u, \"window\": %u, \"up\": %u,\n"
		" \"up_ms\": %" PRId64 ", \"first_up_ms\": %" PRId64
		", \"attempts\": %u, \"rejected_busy\": %u, \"cm_errors\": %u,\n"
		" \"adverts\": [%s],\n"
		" \"traffic_secs\": %u, \"jobs\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"bad\": %" PRIu64 ",\n \"notify_sent\": %" PRIu64
		", \"notify_imm\": %" PRIu64 ", \"msgs_rx\": %" PRIu64
		", \"msgs_tx\": %" PRIu64 ", \"keepalives_rx\": %" PRIu64
		", \"keepalive_rtt_max_us\": %" PRIu64 ",\n \"violations\": %u, \"failed\": %u}\n",
		npeers, nqps, window, n_up, t_up_ms, t_first_up_ms, n_attempts,
		n_rejected[REJ_BUSY], n_cm_errors, json_adverts, traffic_secs,
		n_jobs, n_lost, n_bad, n_notify_sent, n_notify_imm, n_msgs_rx,
		n_msgs_tx, n_ka_rx, rtt_max, n_violations, n_failed);
	fclose(f);
}

static void setup(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = {
		.it_interval = { .tv_nsec = 10000000 },
		.it_value = { .tv_nsec = 10000000 },
	};
	struct sockaddr_in *sin = (struct sockaddr_in *)&dst;
	unsigned int i;

	sin->sin_family = AF_INET;
	sin->sin_port = htons(dst_port);
	if (inet_pton(AF_INET, dst_addr, &sin->sin_addr) != 1)
		usage();
	epfd = epoll_create1(0);
	ec = rdma_create_event_channel();
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (epfd < 0 || !ec || tfd < 0 || timerfd_settime(tfd, 0, &its, NULL)) {
		say("FAIL: set-up: %s\n", strerror(errno));
		exit(1);
	}
	fcntl(ec->fd, F_SETFL, fcntl(ec->fd, F_GETFL) | O_NONBLOCK);
	ev.data.u32 = 0;
	epoll_ctl(epfd, EPOLL_CTL_ADD, ec->fd, &ev);
	ev.data.u32 = 2;
	epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);

	peers = calloc(npeers, sizeof(*peers));
	if (!peers)
		exit(1);
	for (i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		p->i = i;
		snprintf(p->node, sizeof(p->node), "%s-%03u", prefix, i);
		if (!name_ok(p->node)) {
			say("FAIL: bad node name %s\n", p->node);
			exit(2);
		}
		p->incarnation = (uint32_t)rand64() ?: 1;
		p->txq_tail = &p->txq;
		p->free_sends = (1u << SENDS) - 1;
		p->state = P_WAIT;
		if (key_dir)
			load_key(p);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("KXFER_SLOW");
	char step[64];
	unsigned int i;
	int c;

	while ((c = getopt(argc, argv, "a:p:n:q:N:K:w:E:S:B:D:t:k:m:iF:x:W:C:T:U:L:j:v")) != -1) {
		switch (c) {
		case 'a':
			dst_addr = optarg;
			break;
		case 'p':
			dst_port = atoi(optarg);
			break;
		case 'n':
			npeers = atoi(optarg);
			break;
		case 'q':
			nqps = atoi(optarg);
			break;
		case 'N':
			prefix = optarg;
			break;
		case 'K':
			key_dir = optarg;
			break;
		case 'w':
			window = atoi(optarg);
			break;
		case 'E':
			target_prefix = optarg;
			break;
		case 'S':
			slice = arg_size(optarg);
			break;
		case 'B':
			block = arg_size(optarg);
			break;
		case 'D':
			depth = atoi(optarg);
			break;
		case 't':
			traffic_secs = atoi(optarg);
			break;
		case 'k':
			notify_every = atoi(optarg);
			break;
		case 'm':
			notify_export = optarg;
			break;
		case 'i':
			notify_imm = true;
			break;
		case 'F':
			do_fill = true;
			fill_seed = strtoull(optarg, NULL, 0);
			break;
		case 'x':
			own_export_len = arg_size(optarg);
			break;
		case 'W':
			if (nwait_exports == ARRAY_SIZE(wait_exports))
				usage();
			wait_exports[nwait_exports++] = optarg;
			break;
		case 'C':
			cmd_dir = optarg;
			break;
		case 'T':
			hold_secs = atoi(optarg);
			break;
		case 'U':
			up_secs = atoi(optarg);
			break;
		case 'L':
			silent_secs = atoi(optarg);
			break;
		case 'j':
			json_path = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !npeers || npeers > MAX_PEERS || !nqps ||
	    nqps > MAX_QPS || !depth || depth > MAX_INFLIGHT ||
	    (block & (block - 1)) || block > 65536 || slice % block ||
	    slice / block < depth || strlen(prefix) > 26 || npeers > 65535)
		usage();
	if (env && atoi(env) > 1)
		slow = atoi(env);
	setup();

	say("peersim: %u nodes %s-000.., %u QPs each, to %s port %u, %u connecting at once\n",
	    npeers, prefix, nqps, dst_addr, dst_port, window);
	t0_ms = now_ms();
	if (!run(up_secs * 1000 * slow, all_up)) {
		say("FAIL: %u of %u sessions up after %u s\n", n_up, npeers,
		    up_secs * slow);
		n_failed++;
	}
	t_up_ms = now_ms() - t0_ms;
	say("up: %u of %u sessions in %" PRId64 " ms (first %" PRId64
	    " ms), %u attempts, %u refused busy, %u CM errors\n", n_up, npeers,
	    t_up_ms, t_first_up_ms, n_attempts, n_rejected[REJ_BUSY],
	    n_cm_errors);
	status_file("up", "%u %" PRId64 "\n", n_up, t_up_ms);

	for (i = 0; i < nwait_exports && n_up; i++) {
		int64_t t = now_ms();
		size_t len = strlen(json_adverts);

		advert_name = wait_exports[i];
		advert_first_ms = 0;
		if (!run(300000 * slow, all_have_advert)) {
			say("FAIL: export %s did not reach every node\n", advert_name);
			n_failed++;
			continue;
		}
		say("advert %s: every node has it, %" PRId64
		    " ms from the first to the last (waited %" PRId64 " ms)\n",
		    advert_name, now_ms() - advert_first_ms, now_ms() - t);
		snprintf(step, sizeof(step), "advert.%s", advert_name);
		status_file(step, "%" PRId64 "\n", now_ms() - advert_first_ms);
		snprintf(json_adverts + len, sizeof(json_adverts) - len,
			 "%s{\"name\": \"%s\", \"spread_ms\": %" PRId64 "}",
			 len ? ", " : "", advert_name, now_ms() - advert_first_ms);
	}
	if (traffic_secs && n_up)
		step_traffic();
	if (do_fill && n_up)
		step_fill();
	step_hold();

	for (i = 0; i < npeers; i++)
		if (peers[i].state != P_DEAD)
			peer_teardown(&peers[i], true);
	run(200, NULL);
	say("summary: %u up, %" PRIu64 " jobs, %" PRIu64 " lost, %" PRIu64
	    " differ, %u violations, %u failed\n", n_up, n_jobs, n_lost, n_bad,
	    n_violations, n_failed);
	write_json();
	return n_lost || n_bad || n_violations || n_failed ? 1 : 0;
}
