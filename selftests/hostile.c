// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostile: a malicious kxfer peer, for the two-guest suite (issue 7).
 *
 * Speaks the session protocol of kmod/wire.h from user space with
 * librdmacm and libibverbs, and breaks it on purpose:
 *
 *   hostile [OPTIONS] pdata       malformed connection private data
 *   hostile [OPTIONS] halfopen    a session whose other QPs never come,
 *                                 duplicate and mismatched QPs
 *   hostile [OPTIONS] ctrl        malformed control messages on QP 0, and
 *                                 export tokens out of place on sessions
 *                                 that agreed on tokens
 *   hostile [OPTIONS] overrun     more control messages than credits
 *   hostile [OPTIONS] rdma        guessed keys and addresses, exports of
 *                                 other peers, used across sessions
 *   hostile [OPTIONS] ackflood N  N keepalives, never a credit back
 *   hostile [OPTIONS] expflood N  N exports of 4096 MRs, one MR each
 *   hostile [OPTIONS] halfflood N MAX  N sessions left half open: the
 *                                 first MAX are accepted, the rest refused
 *   hostile [OPTIONS] hold N NODE  N sessions as NODE whose handshake never
 *                                 ends, opened again when a ends them (-H)
 *   hostile [OPTIONS] claim NODE  connect as node NODE (any name), and with
 *                                 -e check the exports a advertises to it
 *   hostile [OPTIONS] poison      as node "evilw", break a's QP 0 with a bad
 *                                 key, then wait (-H) for a to end it
 *   hostile [OPTIONS] standoff    answers that wait for credits on both
 *                                 sides: a must return its own alone
 *   hostile [OPTIONS] mute MS     credits back, no keepalive ever
 *                                 answered: a must end the session 4
 *                                 timeouts (MS, a's) after the first probe
 *   hostile [OPTIONS] auth [CASE] the authentication handshake (a listener
 *                                 that requires it, -p; -K its key): the
 *                                 right key, a wrong one, none, replayed,
 *                                 stale and wrong-role proofs, messages
 *                                 before or out of the handshake, an
 *                                 AUTH_FAIL after a's reply, truncated
 *                                 and malformed ones, silence
 *   hostile [OPTIONS] supersede NODE  as NODE (incarnation -I), from this
 *                                 address, through the handshake with -K's
 *                                 key (none without -K): up, or refused
 *
 * Options: -a ADDR (10.99.0.1), -p PORT (KXFER_PORT), -L FILE: append
 * the kernel log lines the listener must print, one a line; -e LIST:
 * rdma, the exact sorted comma-separated export names the hostile node
 * must be told about; -g EXPORT: rdma, the export granted to node
 * "evil" (read, write); -H SEC: the floods hold the session this long
 * after their last message, printing "holding" first; -S ADDR: connect
 * from this local address; -K FILE: the secret of the listener's key
 * (auth, supersede); -I N: the incarnation to connect with (default 0:
 * none told).  KXFER_SLOW (an integer, as the rig's lib.sh takes it) makes
 * every wait for a, and every bound on how long a may take, that many times
 * longer: a sanitizer kernel under TCG is that much slower.
 *
 * Everything received from the kernel (private data of accept and
 * reject, every control message) is checked against the protocol and
 * scanned for values that look like kernel addresses.  Each case prints
 * one line "case NAME: ok ..." or "case NAME: FAIL ..."; the exit status
 * is 0 when every case met its expectation, 1 otherwise, 2 for usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rdma/rdma_cma.h>

#include <linux/kxfer.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#ifndef __packed
#define __packed	__attribute__((packed))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

/* ---------------------------------------------------------------------- */
/* The wire format, written down again from kmod/wire.h                    */
/* ---------------------------------------------------------------------- */

#define WIRE_MAGIC	0x6b786672
#define WIRE_VERSION	1
#define NAME_MAX_	32
#define MSG_SIZE	4096
#define A_RECVS		32		/* KXFER_CTRL_RECVS of the module */

enum { REJ_MALFORMED = 1, REJ_VERSION, REJ_NOT_ALLOWED, REJ_BUSY, REJ_DEVICE,
	REJ_AUTH };
enum { MSG_CREDIT = 1, MSG_EXPORT_ADD, MSG_EXPORT_DEL, MSG_SYNC_DONE,
	MSG_KEEPALIVE, MSG_KEEPALIVE_ACK, MSG_NOTIFY, MSG_NOTIFY_DESC,
	MSG_HELLO, MSG_NOTIFY_MSG, MSG_AUTH_CHALLENGE, MSG_AUTH_REPLY,
	MSG_AUTH_FAIL, MSG_EXPORT_WITHDRAW, MSG_EXPORT_WITHDRAWN,
	MSG_EXPORT_TOKEN, MSG_RAIL_TOKEN, MSG_RAIL_JOIN, MSG_RAIL_JOINED,
	MSG_RAIL_NOTIFY, MSG_RAIL_FENCE, MSG_RAIL_FENCED, MSG_FIRST_UNKNOWN };

/* Feature bits of the accept and of HELLO */
#define F_NOTIFY_MSG	(1u << 0)
#define F_AUTH		(1u << 1)
#define F_DRAIN		(1u << 2)	/* a offers these two; we never */
#define F_MRS32		(1u << 3)	/* take them up */
#define F_TOKEN		(1u << 4)	/* taken up by ctrl's token cases */
#define F_RAILS		(1u << 5)	/* a offers it; we never take it up */
#define F_KNOWN		(F_NOTIFY_MSG | F_AUTH | F_DRAIN | F_MRS32 | F_TOKEN | \
			 F_RAILS)

#define AUTH_F_KEY	1u
#define NONCE_LEN	32
#define MAC_LEN		32
enum { AUTH_FAIL_MAC = 1, AUTH_FAIL_NO_KEY, AUTH_FAIL_NEED_KEY };
enum { ROLE_ACCEPTOR = 1, ROLE_CONNECTOR };

struct wire_conn {
	uint32_t magic;
	uint16_t version;
	uint8_t qp_index;
	uint8_t qp_count;
	uint64_t session_id;
	uint16_t recv_credits;
	uint16_t flags;
	char node[NAME_MAX_];
	uint32_t incarnation;
} __packed;

struct wire_accept {
	uint32_t magic;
	uint16_t version;
	uint16_t recv_credits;
	char node[NAME_MAX_];
	uint32_t features;
	uint8_t nonce[32];	/* NONCE_LEN, with F_AUTH only */
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
	char name[NAME_MAX_];
	uint64_t len;
	uint64_t gen;
	uint32_t access;
	uint16_t nmrs;
	uint16_t first;
	uint16_t count;
	uint16_t nmrs_hi;	/* KXFER_WIRE_F_MRS32 */
	uint16_t first_hi;
	uint16_t pad;
	struct wire_mr mrs[];
} __packed;

struct msg_export_del {
	struct msg_hdr h;
	char name[NAME_MAX_];
	uint64_t gen;
} __packed;

struct msg_notify {
	struct msg_hdr h;
	char name[NAME_MAX_];
	uint64_t gen;
	uint64_t value;
	uint64_t bytes;
} __packed;

struct msg_notify_desc {
	struct msg_notify n;
	uint32_t token;
	uint32_t pad;
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

/* What a proof is the HMAC-SHA256 of (struct kxfer_wire_auth_mac) */
struct auth_mac {
	char label[16];
	uint32_t role;
	uint32_t nqps;
	uint64_t session_id;
	uint32_t incarnation;
	uint32_t pad;
	uint8_t cnonce[NONCE_LEN];
	uint8_t anonce[NONCE_LEN];
	char cnode[NAME_MAX_];
	char anode[NAME_MAX_];
	uint32_t qpn[16][2];
} __packed;

#define MRS_PER_MSG ((MSG_SIZE - sizeof(struct msg_export)) / sizeof(struct wire_mr))

/* ---------------------------------------------------------------------- */
/* State                                                                   */
/* ---------------------------------------------------------------------- */

#define MAX_QPS		16
#define MAX_EXPORTS	32
#define MAX_MRS		64
#define RECVS		64		/* receives we post on QP 0 */
#define SMALL_SLOTS	256
#define SMALL_SIZE	256
#define BIG_SIZE	8192
#define RDMA_SIZE	(64 << 10)

#define WR_RECV		(1ULL << 32)
#define WR_SEND		(2ULL << 32)
#define WR_BIG		(3ULL << 32)
#define WR_RDMA		(4ULL << 32)

struct rexport {
	char name[NAME_MAX_];
	uint64_t len;
	uint64_t gen;
	uint32_t access;
	unsigned int nmrs, have;
	struct wire_mr mrs[MAX_MRS];
};

struct conn {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	bool manual;		/* our QP, moved through its states by us */
	bool established, disconnected;
	int rej_reason;		/* kxfer reason of a REJECTED, -1 if none */
	int rej_status;
	uint32_t remote_qpn;	/* a's QP number, from the accept */
};

struct sess {
	char node[NAME_MAX_];
	uint64_t sid;
	unsigned int nqps;
	struct conn c[MAX_QPS];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;		/* recvs, small sends, big send, rdma area */
	unsigned int next_small;
	uint32_t tx_seq, rx_seq;
	unsigned int credits;	/* messages we may send to a */
	unsigned int owed;	/* receives reposted, not yet returned */
	bool got_sync, ka_acked, big_busy;
	unsigned int ka_pending;
	uint64_t ka_stamp;
	unsigned int sends_ok, sends_err;
	enum ibv_wc_status first_send_err;
	bool rdma_done;
	enum ibv_wc_status rdma_status;
	struct rexport ex[MAX_EXPORTS];
	unsigned int nex;
	struct timespec t_disc;
	bool no_ack;		/* answer no keepalive */
	unsigned int n_credit;	/* CREDIT messages received */
	struct timespec t_ka;	/* when a's first unanswered probe came */
	/* authentication */
	uint32_t a_features;	/* what a's accept said it speaks */
	uint32_t hello;		/* the features our HELLO said, if any */
	char a_node[NAME_MAX_];
	uint8_t a_nonce[NONCE_LEN];	/* a's, from the accept */
	bool auth_open;		/* no export may come from a yet */
	bool got_reply, got_fail;
	struct msg_auth_reply reply;
	uint32_t fail_reason;
	uint8_t cnonce[NONCE_LEN];
};

static struct sockaddr_in dst, src;
static uint32_t incarnation;	/* -I */
static uint8_t key[64];		/* -K */
static unsigned int key_len;
static const char *auth_expect;	/* -e for "auth right" */
static FILE *logf_;
static unsigned int n_conns, n_msgs, n_rdma, n_rejected, n_pointers;
static unsigned int n_violations, n_fail, n_cases;
static bool verbose;

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

static __printf(2, 3) void result(const char *name, const char *fmt, ...)
{
	va_list ap;

	n_cases++;
	printf("case %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!strncmp(fmt, "FAIL", 4))
		n_fail++;
	fflush(stdout);
}

static __printf(1, 2) void expect_log(const char *fmt, ...)
{
	va_list ap;

	if (!logf_)
		return;
	va_start(ap, fmt);
	vfprintf(logf_, fmt, ap);
	va_end(ap);
	fputc('\n', logf_);
	fflush(logf_);
}

/*
 * KXFER_SLOW: the waits for a and the upper bounds on a's timing are
 * multiplied by it; the lower bounds (a must not give up early) are a's
 * own constants and stay.
 */
static int slow = 1;

static int slow_ms(int ms)
{
	return ms * slow;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static uint64_t rand64(void)
{
	return ((uint64_t)random() << 33) ^ ((uint64_t)random() << 11) ^
	       (uint64_t)random();
}

/*
 * Values that look like kernel addresses: the upper canonical half.  Every
 * 8-byte window is looked at, so random bytes match one window in 2^17:
 * fields that are random by design (a's nonce, its MAC) are blanked by the
 * caller with scan_pointers_but().
 */
static void scan_pointers(const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i++) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		v = le64toh(v);
		if (v >= 0xffff800000000000ULL) {
			n_pointers++;
			say("LEAK: %s: bytes %zu..%zu hold 0x%016" PRIx64 "\n",
			    what, i, i + 7, v);
		}
	}
}

/* scan_pointers() of @buf with @skip_len bytes from @skip_off taken as 0 */
static void scan_pointers_but(const void *buf, size_t len, size_t skip_off,
			      size_t skip_len, const char *what)
{
	uint8_t copy[MSG_SIZE];

	if (!buf || len > sizeof(copy)) {
		scan_pointers(buf, len, what);
		return;
	}
	memcpy(copy, buf, len);
	if (skip_off < len)
		memset(copy + skip_off, 0,
		       skip_len < len - skip_off ? skip_len : len - skip_off);
	scan_pointers(copy, len, what);
}

static __printf(2, 3) void violation(struct sess *s, const char *fmt, ...)
{
	va_list ap;

	n_violations++;
	printf("VIOLATION: from a to %s: ", s->node);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define NAME_CHARS \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:"

/* The module's name rule: 1..31 of [A-Za-z0-9._:-], NUL-padded. */
static bool name_ok(const char *n)
{
	unsigned int i;

	if (!n[0])
		return false;
	for (i = 0; i < NAME_MAX_ && n[i]; i++)
		if (!strchr(NAME_CHARS, n[i]))
			return false;
	if (i == NAME_MAX_)
		return false;
	for (; i < NAME_MAX_; i++)
		if (n[i])
			return false;
	return true;
}

/* ---------------------------------------------------------------------- */
/* Connections                                                             */
/* ---------------------------------------------------------------------- */

/* The next event of @c within @ms, or NULL.  Caller acks it. */
static struct rdma_cm_event *conn_event(struct conn *c, int ms)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = c->ec->fd, .events = POLLIN };

	for (;;) {
		if (!rdma_get_cm_event(c->ec, &ev))
			return ev;
		if (errno != EAGAIN)
			return NULL;
		if (poll(&pfd, 1, slow_ms(ms)) <= 0)
			return NULL;
	}
}

static struct rdma_cm_event *conn_wait(struct conn *c, enum rdma_cm_event_type want,
				       int ms)
{
	struct rdma_cm_event *ev = conn_event(c, ms);

	if (!ev) {
		say("  no event (wanted %s) within %d ms\n", rdma_event_str(want),
		    slow_ms(ms));
		return NULL;
	}
	if (ev->event != want) {
		say("  event %s (status %d), wanted %s\n",
		    rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static int conn_resolve(struct conn *c)
{
	struct rdma_cm_event *ev;
	uint8_t tmo = 16;
	int fl;

	c->rej_reason = -1;
	c->ec = rdma_create_event_channel();
	if (!c->ec)
		return -errno;
	fl = fcntl(c->ec->fd, F_GETFL);
	fcntl(c->ec->fd, F_SETFL, fl | O_NONBLOCK);
	if (rdma_create_id(c->ec, &c->id, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(c->id, src.sin_family ? (struct sockaddr *)&src : NULL,
			      (struct sockaddr *)&dst, 2000))
		return -errno;
	ev = conn_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, 5000);
	if (!ev)
		return -EHOSTUNREACH;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(c->id, 2000))
		return -errno;
	ev = conn_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	if (!ev)
		return -EHOSTUNREACH;
	rdma_ack_cm_event(ev);
	rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			&tmo, sizeof(tmo));
	return 0;
}

static int post_recv(struct sess *s, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->buf + i * MSG_SIZE),
		.length = MSG_SIZE,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WR_RECV | i, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(s->c[0].qp, &wr, &bad);
}

#define OFF_SMALL	((size_t)RECVS * MSG_SIZE)
#define OFF_BIG		(OFF_SMALL + (size_t)SMALL_SLOTS * SMALL_SIZE)
#define OFF_RDMA	(OFF_BIG + BIG_SIZE)
#define BUF_SIZE	(OFF_RDMA + RDMA_SIZE)

/* PD, CQ, buffer on the device of the first resolved id. */
static int sess_verbs(struct sess *s, struct ibv_context *ctx)
{
	s->pd = ibv_alloc_pd(ctx);
	if (!s->pd)
		return -errno;
	s->cq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	if (!s->cq)
		return -errno;
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->buf)
		return -ENOMEM;
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	return s->mr ? 0 : -errno;
}

/*
 * Move a QP we manage to @state with what rdma_cm says, and with our
 * own RNR retry count (@rnr >= 0) rather than the one a asked for.
 */
static int qp_move(struct conn *c, enum ibv_qp_state state, int rnr)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask;

	if (rdma_init_qp_attr(c->id, &attr, &mask))
		return -errno;
	if (state == IBV_QPS_RTS && rnr >= 0)
		attr.rnr_retry = rnr;
	return ibv_modify_qp(c->qp, &attr, mask) ? -errno : 0;
}

static int conn_qp(struct sess *s, struct conn *c)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 300, .max_recv_wr = RECVS + 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	};

	if (!s->pd) {
		int ret = sess_verbs(s, c->id->verbs);

		if (ret)
			return ret;
	}
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	if (!c->manual) {
		if (rdma_create_qp(c->id, s->pd, &qa))
			return -errno;
		c->qp = c->id->qp;
		return 0;
	}
	c->qp = ibv_create_qp(s->pd, &qa);
	if (!c->qp)
		return -errno;
	return qp_move(c, IBV_QPS_INIT, -1);
}

/*
 * The RNR retry count of a REQ is for a's QP; ours is what a answers
 * (0 for kxfer), unless we manage our QP ourselves.
 */
static int conn_connect(struct conn *c, const void *pd, uint8_t pd_len)
{
	struct rdma_conn_param p = {
		.private_data = pd, .private_data_len = pd_len,
		.responder_resources = 16, .initiator_depth = 16,
		.retry_count = 7, .rnr_retry_count = 7,
		.qp_num = c->manual ? c->qp->qp_num : 0,
	};

	n_conns++;
	return rdma_connect(c->id, &p) ? -errno : 0;
}

/* Check and scan what a accepted with. */
/*
 * Version 1's 40 bytes and the features: 44 bytes; the nonce follows only
 * with F_AUTH (76 bytes).  The IB CM pads the rest with zeros.
 */
static void check_accept(struct sess *s, struct rdma_cm_event *ev)
{
	const struct wire_accept *wa = ev->param.conn.private_data;
	unsigned int len = ev->param.conn.private_data_len;
	unsigned int need = offsetof(struct wire_accept, nonce);

	scan_pointers_but(wa, len, offsetof(struct wire_accept, nonce),
			  sizeof(wa->nonce), "accept private data");
	if (!wa || len < need || le32toh(wa->magic) != WIRE_MAGIC ||
	    le16toh(wa->version) != WIRE_VERSION || !name_ok(wa->node)) {
		violation(s, "bad accept private data (%u bytes)", len);
		return;
	}
	if (!s->credits)
		s->credits = le16toh(wa->recv_credits);
	s->a_features = le32toh(wa->features);
	memcpy(s->a_node, wa->node, NAME_MAX_);
	if (s->a_features & ~F_KNOWN)
		violation(s, "accept private data: unknown features %#x",
			  s->a_features);
	if (s->a_features & F_AUTH) {
		need = sizeof(*wa);
		if (len < need) {
			violation(s, "accept offers authentication without a nonce (%u bytes)",
				  len);
			return;
		}
		memcpy(s->a_nonce, wa->nonce, NONCE_LEN);
	}
	/* Nothing but zeros after what it says: no nonce without F_AUTH. */
	for (; len > need; len--)
		if (((const uint8_t *)wa)[len - 1]) {
			violation(s, "accept private data: byte %u not zero", len - 1);
			break;
		}
}

static void conn_close(struct conn *c)
{
	struct rdma_cm_event *ev;

	if (c->id) {
		if (c->established && !c->disconnected)
			rdma_disconnect(c->id);
		while ((ev = conn_event(c, 0)))
			rdma_ack_cm_event(ev);
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		else if (c->qp)
			ibv_destroy_qp(c->qp);
		rdma_destroy_id(c->id);
	}
	if (c->ec)
		rdma_destroy_event_channel(c->ec);
	memset(c, 0, sizeof(*c));
}

static void sess_close(struct sess *s)
{
	unsigned int i;

	for (i = 0; i < MAX_QPS; i++)
		conn_close(&s->c[i]);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static void conn_pdata(struct wire_conn *w, const char *node, uint64_t sid,
		       unsigned int idx, unsigned int count)
{
	memset(w, 0, sizeof(*w));
	w->magic = htole32(WIRE_MAGIC);
	w->version = htole16(WIRE_VERSION);
	w->qp_index = idx;
	w->qp_count = count;
	w->session_id = htole64(sid);
	w->recv_credits = htole16(RECVS);
	memcpy(w->node, node, strnlen(node, sizeof(w->node) - 1));
	w->incarnation = htole32(incarnation);
}

/* Remember the kxfer reason of a rejection. */
static void conn_rejected(struct conn *c, struct rdma_cm_event *ev)
{
	const uint8_t *p = ev->param.conn.private_data;
	unsigned int len = ev->param.conn.private_data_len;
	uint32_t magic, reason;

	c->rej_status = ev->status;
	scan_pointers(p, len, "reject private data");
	if (!p || len < 8)
		return;
	memcpy(&magic, p, 4);
	memcpy(&reason, p + 4, 4);
	if (le32toh(magic) == WIRE_MAGIC)
		c->rej_reason = le32toh(reason);
}

/*
 * Connect one QP with the given private data and wait for the outcome:
 * 0 established, -ECONNREFUSED rejected (c->rej_reason), else an error.
 */
static int conn_try(struct sess *s, struct conn *c, const void *pd,
		    uint8_t pd_len, int own_rnr, bool post_recvs)
{
	struct rdma_cm_event *ev;
	unsigned int i;
	int ret;

	c->manual = own_rnr >= 0;
	ret = conn_resolve(c);
	if (!ret)
		ret = conn_qp(s, c);
	if (ret)
		return ret;
	if (post_recvs)
		for (i = 0; i < RECVS; i++)
			if (post_recv(s, i))
				return -EIO;
	ret = conn_connect(c, pd, pd_len);
	if (ret)
		return ret;
	ev = conn_event(c, 10000);
	if (!ev)
		return -ETIMEDOUT;
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = true;
		c->remote_qpn = ev->param.conn.qp_num;
		check_accept(s, ev);
		ret = 0;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		c->remote_qpn = ev->param.conn.qp_num;
		check_accept(s, ev);
		ret = qp_move(c, IBV_QPS_RTR, -1);
		if (!ret)
			ret = qp_move(c, IBV_QPS_RTS, own_rnr);
		if (!ret)
			ret = rdma_establish(c->id) ? -errno : 0;
		c->established = !ret;
		break;
	case RDMA_CM_EVENT_REJECTED:
		conn_rejected(c, ev);
		n_rejected++;
		ret = -ECONNREFUSED;
		break;
	default:
		say("  connect: %s (status %d)\n", rdma_event_str(ev->event),
		    ev->status);
		ret = -EPROTO;
		break;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* The control channel                                                     */
/* ---------------------------------------------------------------------- */

static struct rexport *rexport_find(struct sess *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->nex; i++)
		if (!strncmp(s->ex[i].name, name, NAME_MAX_))
			return &s->ex[i];
	return NULL;
}

static void rx_export(struct sess *s, const struct msg_export *m, unsigned int len)
{
	unsigned int nmrs, first, count, i;
	struct rexport *rx;

	if (len < sizeof(*m)) {
		violation(s, "export message of %u bytes", len);
		return;
	}
	if (s->auth_open)
		violation(s, "export %.31s advertised before authentication",
			  m->name);
	/* the high halves are 0 unless both sides speak F_MRS32 */
	nmrs = le16toh(m->nmrs) | (unsigned int)le16toh(m->nmrs_hi) << 16;
	first = le16toh(m->first) | (unsigned int)le16toh(m->first_hi) << 16;
	count = le16toh(m->count);
	if (!name_ok(m->name) || !m->len || !m->access ||
	    (le32toh(m->access) & ~KXFER_ACCESS_ALL) || !nmrs || !count ||
	    first >= nmrs || count > nmrs - first || count > MRS_PER_MSG ||
	    len != sizeof(*m) + count * sizeof(m->mrs[0]) ||
	    m->pad) {
		violation(s, "malformed export message");
		return;
	}
	for (i = 0; i < count; i++)
		if (m->mrs[i].pad)
			violation(s, "export %s: MR padding not zero", m->name);
	rx = rexport_find(s, m->name);
	if (!rx) {
		if (s->nex == MAX_EXPORTS)
			return;
		rx = &s->ex[s->nex++];
	}
	if (!first) {
		memset(rx, 0, sizeof(*rx));
		memcpy(rx->name, m->name, NAME_MAX_);
		rx->len = le64toh(m->len);
		rx->gen = le64toh(m->gen);
		rx->access = le32toh(m->access);
		rx->nmrs = nmrs;
	}
	for (i = 0; i < count; i++)
		if (first + i < MAX_MRS) {
			rx->mrs[first + i] = m->mrs[i];
			rx->mrs[first + i].off = le64toh(m->mrs[i].off);
			rx->mrs[first + i].len = le64toh(m->mrs[i].len);
			rx->mrs[first + i].iova = le64toh(m->mrs[i].iova);
			rx->mrs[first + i].rkey = le32toh(m->mrs[i].rkey);
		}
	rx->have = first + count;
}

/* Check, scan and apply one message from a. */
static void rx_msg(struct sess *s, const uint8_t *p, unsigned int len)
{
	const struct msg_hdr *h = (const void *)p;
	unsigned int want = 0;

	if (len >= sizeof(*h) && h->type == MSG_AUTH_REPLY)
		scan_pointers_but(p, len, offsetof(struct msg_auth_reply, mac),
				  MAC_LEN, "control message");
	else
		scan_pointers(p, len, "control message");
	if (len < sizeof(*h) || len > MSG_SIZE) {
		violation(s, "message of %u bytes", len);
		return;
	}
	if (le32toh(h->magic) != WIRE_MAGIC || h->version != WIRE_VERSION ||
	    le16toh(h->len) != len || h->pad) {
		violation(s, "bad header (type %u, %u bytes)", h->type, len);
		return;
	}
	if (le32toh(h->seq) != s->rx_seq + 1)
		violation(s, "sequence %u after %u", le32toh(h->seq), s->rx_seq);
	s->rx_seq = le32toh(h->seq);
	s->credits += le16toh(h->credits);
	switch (h->type) {
	case MSG_CREDIT:
	case MSG_SYNC_DONE:
		want = sizeof(*h);
		s->n_credit += h->type == MSG_CREDIT;
		s->got_sync |= h->type == MSG_SYNC_DONE;
		if (h->type == MSG_SYNC_DONE && s->auth_open)
			violation(s, "end of the export table before authentication");
		break;
	case MSG_AUTH_REPLY: {
		const struct msg_auth_reply *r = (const void *)p;

		want = sizeof(*r);
		if (len != want)
			break;
		if (r->pad || (le32toh(r->flags) & ~AUTH_F_KEY))
			violation(s, "authentication reply: padding or flags");
		if (s->got_reply)
			violation(s, "a second authentication reply");
		s->got_reply = true;
		s->reply = *r;
		/* a advertises right after its reply */
		s->auth_open = false;
		break;
	}
	case MSG_AUTH_FAIL:
		want = sizeof(struct msg_auth_fail);
		if (len != want)
			break;
		s->got_fail = true;
		s->fail_reason = le32toh(((const struct msg_auth_fail *)p)->reason);
		break;
	case MSG_KEEPALIVE:
	case MSG_KEEPALIVE_ACK:
		want = sizeof(struct msg_keepalive);
		if (len != want)
			break;
		if (h->type == MSG_KEEPALIVE_ACK) {
			s->ka_acked = true;
		} else {
			if (!s->ka_pending++ && s->no_ack)
				clock_gettime(CLOCK_MONOTONIC, &s->t_ka);
			memcpy(&s->ka_stamp, p + sizeof(*h), 8);
		}
		break;
	case MSG_EXPORT_ADD:
		rx_export(s, (const void *)p, len);
		return;
	case MSG_EXPORT_DEL:
		want = sizeof(struct msg_export_del);
		if (len == want && !name_ok(((const struct msg_export_del *)p)->name))
			violation(s, "export del with a bad name");
		break;
	case MSG_NOTIFY:
		want = sizeof(struct msg_notify);
		break;
	case MSG_EXPORT_TOKEN:
		/* only to a peer that said it speaks tokens */
		want = sizeof(struct msg_export_del) + 16;
		if (!(s->hello & F_TOKEN))
			violation(s, "export token, which was not agreed on");
		else if (len == want && !name_ok(((const struct msg_export_del *)p)->name))
			violation(s, "export token with a bad name");
		break;
	default:
		violation(s, "message type %u", h->type);
		return;
	}
	if (len != want)
		violation(s, "type %u of %u bytes", h->type, len);
}

static void hdr_init(struct msg_hdr *h, unsigned int type, unsigned int len,
		     uint32_t seq, unsigned int credits)
{
	h->magic = htole32(WIRE_MAGIC);
	h->version = WIRE_VERSION;
	h->type = type;
	h->len = htole16(len);
	h->seq = htole32(seq);
	h->credits = htole16(credits);
	h->pad = 0;
}

/* Post @len bytes of @msg as one SEND on QP 0 (the header untouched). */
static int send_raw(struct sess *s, const void *msg, unsigned int len)
{
	struct ibv_sge sge = { .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint8_t *slot;

	if (len > SMALL_SIZE) {
		if (len > BIG_SIZE || s->big_busy)
			return -EINVAL;
		slot = s->buf + OFF_BIG;
		s->big_busy = true;
		wr.wr_id = WR_BIG;
	} else {
		unsigned int i = s->next_small++ % SMALL_SLOTS;

		slot = s->buf + OFF_SMALL + (size_t)i * SMALL_SIZE;
		wr.wr_id = WR_SEND | i;
	}
	memcpy(slot, msg, len);
	sge.addr = (uintptr_t)slot;
	n_msgs++;
	return ibv_post_send(s->c[0].qp, &wr, &bad) ? -errno : 0;
}

/* A well-formed message: next sequence number, owed credits returned. */
static int send_msg(struct sess *s, unsigned int type, const void *body,
		    unsigned int body_len)
{
	uint8_t m[MSG_SIZE];

	hdr_init((void *)m, type, sizeof(struct msg_hdr) + body_len,
		 ++s->tx_seq, s->owed);
	s->owed = 0;
	if (body_len)
		memcpy(m + sizeof(struct msg_hdr), body, body_len);
	if (s->credits)
		s->credits--;
	return send_raw(s, m, sizeof(struct msg_hdr) + body_len);
}

static void poll_events(struct sess *s)
{
	struct rdma_cm_event *ev;
	unsigned int i;

	for (i = 0; i < s->nqps; i++) {
		struct conn *c = &s->c[i];

		if (!c->ec)
			continue;
		while ((ev = conn_event(c, 0))) {
			if (verbose)
				say("  %s: QP %u: %s\n", s->node, i,
				    rdma_event_str(ev->event));
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
				if (!c->disconnected && !i)
					clock_gettime(CLOCK_MONOTONIC, &s->t_disc);
				c->disconnected = true;
			}
			rdma_ack_cm_event(ev);
		}
	}
}

/*
 * Poll completions and events for @ms or until @done says so; a wait for
 * @done is KXFER_SLOW times longer, a plain drain (no @done) is not.
 */
static bool pump(struct sess *s, int ms, bool (*done)(struct sess *))
{
	int64_t end = now_ms() + (done ? slow_ms(ms) : ms);

	do {
		struct ibv_wc wc[32];
		int n, i;

		n = ibv_poll_cq(s->cq, ARRAY_SIZE(wc), wc);
		for (i = 0; i < n; i++) {
			uint64_t kind = wc[i].wr_id & ~0xffffffffULL;
			unsigned int idx = wc[i].wr_id & 0xffffffff;

			if (verbose)
				say("  %s: wc %#" PRIx64 " %s, %u bytes\n", s->node,
				    wc[i].wr_id, ibv_wc_status_str(wc[i].status),
				    wc[i].byte_len);
			if (kind == WR_RECV) {
				if (wc[i].status != IBV_WC_SUCCESS)
					continue;
				rx_msg(s, s->buf + idx * MSG_SIZE, wc[i].byte_len);
				if (!post_recv(s, idx))
					s->owed++;
			} else if (kind == WR_RDMA) {
				s->rdma_done = true;
				s->rdma_status = wc[i].status;
			} else {
				if (kind == WR_BIG)
					s->big_busy = false;
				if (wc[i].status == IBV_WC_SUCCESS) {
					s->sends_ok++;
				} else {
					if (!s->sends_err++)
						s->first_send_err = wc[i].status;
				}
			}
		}
		/* Keepalives are answered, unless told not to. */
		while (s->ka_pending && !s->no_ack && s->credits >= 2 &&
		       !s->c[0].disconnected) {
			s->ka_pending--;
			send_msg(s, MSG_KEEPALIVE_ACK, &s->ka_stamp, 8);
		}
		poll_events(s);
		if (done && done(s))
			return true;
		if (!n)
			usleep(200);
	} while (now_ms() < end);
	return false;
}

static bool is_synced(struct sess *s)
{
	return s->got_sync && s->ka_acked;
}

static bool is_acked(struct sess *s)
{
	return s->ka_acked;
}

static bool is_disconnected(struct sess *s)
{
	return s->c[0].disconnected;
}

static bool has_credits(struct sess *s)
{
	return s->credits >= 2;
}

/*
 * The completion alone: a ending the session does not end the wait, as
 * its disconnect can overtake the NAK's completion on a busy host (seen
 * under a CPU hog: poison's WRITE "ended" before its access error came).
 */
static bool rdma_done(struct sess *s)
{
	return s->rdma_done;
}

/*
 * Open a session of @nqps QPs as @node and bring it up: both export
 * tables exchanged, and a keepalive answered, so that a has marked it
 * up when this returns 0.
 */
/* Connect the @nqps QPs of a session as @node. */
static int sess_connect(struct sess *s, const char *node, unsigned int nqps,
			int own_rnr)
{
	struct wire_conn w;
	unsigned int i;
	int ret;

	memset(s, 0, sizeof(*s));
	memcpy(s->node, node, strnlen(node, sizeof(s->node) - 1));
	s->sid = rand64();
	s->nqps = nqps;
	for (i = 0; i < nqps; i++) {
		conn_pdata(&w, node, s->sid, i, nqps);
		ret = conn_try(s, &s->c[i], &w, sizeof(w), own_rnr, !i);
		if (ret) {
			say("  %s: QP %u: %s (reason %d)\n", node, i,
			    strerror(-ret), s->c[i].rej_reason);
			return ret;
		}
	}
	return 0;
}

static void send_hello(struct sess *s, uint32_t features);

/* A session up to the end of both export tables; HELLO @hello first if not 0. */
static int sess_open_hello(struct sess *s, const char *node, unsigned int nqps,
			   int own_rnr, uint32_t hello)
{
	uint64_t stamp;
	int ret;

	ret = sess_connect(s, node, nqps, own_rnr);
	if (ret)
		return ret;
	if (hello) {
		if (!(s->a_features & hello))
			return -EPROTONOSUPPORT;
		s->hello = hello & s->a_features;
		send_hello(s, s->hello);
	}
	if (send_msg(s, MSG_SYNC_DONE, NULL, 0))
		return -EIO;
	stamp = htole64(0x5eed);
	if (send_msg(s, MSG_KEEPALIVE, &stamp, 8))
		return -EIO;
	if (!pump(s, 15000, is_synced)) {
		say("  %s: no export table or keepalive answer\n", node);
		return -ETIMEDOUT;
	}
	return 0;
}

static int sess_open(struct sess *s, const char *node, unsigned int nqps,
		     int own_rnr)
{
	return sess_open_hello(s, node, nqps, own_rnr, 0);
}

/* ---------------------------------------------------------------------- */
/* pdata: malformed connection requests                                    */
/* ---------------------------------------------------------------------- */

struct pdata_case {
	const char *name;
	int reason;		/* REJ_* a must answer with */
	const char *why;	/* what a logs */
	void (*make)(struct wire_conn *w, uint8_t *len);
};

static void pd_empty(struct wire_conn *w, uint8_t *len)
{
	*len = 0;
}

static void pd_short(struct wire_conn *w, uint8_t *len)
{
	*len = 8;	/* magic and version; the CM pads the rest with zeros */
}

static void pd_magic(struct wire_conn *w, uint8_t *len)
{
	w->magic = htole32(WIRE_MAGIC ^ 0x01000000);
}

static void pd_version(struct wire_conn *w, uint8_t *len)
{
	w->version = htole16(2);
}

static void pd_version0(struct wire_conn *w, uint8_t *len)
{
	w->version = 0;
}

static void pd_count0(struct wire_conn *w, uint8_t *len)
{
	w->qp_count = 0;
}

static void pd_count17(struct wire_conn *w, uint8_t *len)
{
	w->qp_count = 17;
	w->qp_index = 0;
}

static void pd_count255(struct wire_conn *w, uint8_t *len)
{
	w->qp_count = 255;
}

static void pd_index(struct wire_conn *w, uint8_t *len)
{
	w->qp_count = 2;
	w->qp_index = 2;
}

static void pd_index255(struct wire_conn *w, uint8_t *len)
{
	w->qp_count = 16;
	w->qp_index = 255;
}

static void pd_credits0(struct wire_conn *w, uint8_t *len)
{
	w->recv_credits = 0;
}

/* one credit is never enough for a message: the last is kept for a CREDIT */
static void pd_credits1(struct wire_conn *w, uint8_t *len)
{
	w->recv_credits = htole16(1);
}

static void pd_credits_big(struct wire_conn *w, uint8_t *len)
{
	w->recv_credits = htole16(1025);
}

static void pd_credits_max(struct wire_conn *w, uint8_t *len)
{
	w->recv_credits = htole16(0xffff);
}

static void pd_flags(struct wire_conn *w, uint8_t *len)
{
	w->flags = htole16(0x8000);
}

static void pd_node_empty(struct wire_conn *w, uint8_t *len)
{
	memset(w->node, 0, sizeof(w->node));
}

static void pd_node_unterm(struct wire_conn *w, uint8_t *len)
{
	memset(w->node, 'e', sizeof(w->node));
}

static void pd_node_char(struct wire_conn *w, uint8_t *len)
{
	strcpy(w->node, "evil/../a");
}

static void pd_node_space(struct wire_conn *w, uint8_t *len)
{
	strcpy(w->node, "evil one");
}

static void pd_node_high(struct wire_conn *w, uint8_t *len)
{
	strcpy(w->node, "evil\xc3\xa9");
}

static void pd_node_garbage(struct wire_conn *w, uint8_t *len)
{
	strcpy(w->node, "evil");
	w->node[20] = 'x';	/* after the NUL */
}

static void pd_node_pct(struct wire_conn *w, uint8_t *len)
{
	strcpy(w->node, "%s%s%n%p");
}

static const struct pdata_case pdata_cases[] = {
	{ "empty", REJ_VERSION, "bad magic", pd_empty },
	{ "count0", REJ_MALFORMED, "bad QP index or count", pd_count0 },
	{ "magic", REJ_VERSION, "bad magic", pd_magic },
	{ "short", REJ_MALFORMED, "bad QP index or count", pd_short },
	{ "version", REJ_VERSION, "unsupported protocol version", pd_version },
	{ "count17", REJ_MALFORMED, "bad QP index or count", pd_count17 },
	{ "version0", REJ_VERSION, "unsupported protocol version", pd_version0 },
	{ "count255", REJ_MALFORMED, "bad QP index or count", pd_count255 },
	{ "index", REJ_MALFORMED, "bad QP index or count", pd_index },
	{ "index255", REJ_MALFORMED, "bad QP index or count", pd_index255 },
	{ "credits0", REJ_MALFORMED, "bad credit count", pd_credits0 },
	{ "credits1", REJ_MALFORMED, "bad credit count", pd_credits1 },
	{ "credits1025", REJ_MALFORMED, "bad credit count", pd_credits_big },
	{ "credits65535", REJ_MALFORMED, "bad credit count", pd_credits_max },
	{ "flags", REJ_MALFORMED, "unknown flags", pd_flags },
	{ "node-empty", REJ_MALFORMED, "bad node name", pd_node_empty },
	{ "node-unterminated", REJ_MALFORMED, "bad node name", pd_node_unterm },
	{ "node-slash", REJ_MALFORMED, "bad node name", pd_node_char },
	{ "node-space", REJ_MALFORMED, "bad node name", pd_node_space },
	{ "node-8bit", REJ_MALFORMED, "bad node name", pd_node_high },
	{ "node-garbage", REJ_MALFORMED, "bad node name", pd_node_garbage },
	{ "node-format", REJ_MALFORMED, "bad node name", pd_node_pct },
};

static const char *a_listener(void)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s:%u", inet_ntoa(dst.sin_addr),
		 ntohs(dst.sin_port));
	return buf;
}

static int cmd_pdata(void)
{
	unsigned int i, logged = 0;
	int last_reason = 0;

	for (i = 0; i < ARRAY_SIZE(pdata_cases); i++) {
		const struct pdata_case *pc = &pdata_cases[i];
		struct sess s = {};
		struct wire_conn w;
		uint8_t len = sizeof(w);
		int ret;

		conn_pdata(&w, "evil-pdata", rand64(), 0, 1);
		pc->make(&w, &len);
		s.nqps = 1;
		ret = conn_try(&s, &s.c[0], &w, len, -1, false);
		if (ret == -ECONNREFUSED && s.c[0].rej_reason == pc->reason &&
		    s.c[0].rej_status == 28)
			result(pc->name, "ok, rejected, reason %d", pc->reason);
		else
			result(pc->name, "FAIL: %s, reason %d, status %d (want reason %d)",
			       ret ? strerror(-ret) : "established",
			       s.c[0].rej_reason, s.c[0].rej_status, pc->reason);
		/*
		 * The listener logs once per source and reason in a row,
		 * rate-limited (10 in 5 s): only the changes, and few.
		 */
		if (pc->reason != last_reason && logged < 6) {
			expect_log("kxfer: listener %s: refused %s: %s", a_listener(),
				   "10.99.0.2", pc->why);
			logged++;
		}
		last_reason = pc->reason;
		sess_close(&s);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* halfopen: a session that never completes; duplicate QPs                */
/* ---------------------------------------------------------------------- */

static int cmd_halfopen(void)
{
	struct sess s = {}, t = {};
	struct wire_conn w;
	int64_t t0;
	int ret;

	strcpy(s.node, "evil-half");
	s.sid = rand64();
	s.nqps = 3;
	conn_pdata(&w, s.node, s.sid, 0, 3);
	t0 = now_ms();
	ret = conn_try(&s, &s.c[0], &w, sizeof(w), -1, true);
	if (ret) {
		result("halfopen", "FAIL: QP 0 of 3: %s", strerror(-ret));
		goto out;
	}
	result("half-qp0", "ok, QP 0 of 3 accepted");

	/* The same QP index again: refused, busy. */
	t.nqps = 1;
	ret = conn_try(&t, &t.c[0], &w, sizeof(w), -1, false);
	if (ret == -ECONNREFUSED && t.c[0].rej_reason == REJ_BUSY)
		result("half-dup-index", "ok, rejected busy");
	else
		result("half-dup-index", "FAIL: %s, reason %d",
		       ret ? strerror(-ret) : "established", t.c[0].rej_reason);
	sess_close(&t);

	/* Another QP count for the same session: refused, busy. */
	conn_pdata(&w, s.node, s.sid, 1, 2);
	t.nqps = 1;
	ret = conn_try(&t, &t.c[0], &w, sizeof(w), -1, false);
	if (ret == -ECONNREFUSED && t.c[0].rej_reason == REJ_BUSY)
		result("half-count-mismatch", "ok, rejected busy");
	else
		result("half-count-mismatch", "FAIL: %s, reason %d",
		       ret ? strerror(-ret) : "established", t.c[0].rej_reason);
	sess_close(&t);
	expect_log("kxfer: listener %s: refused %s: cannot accept", a_listener(),
		   "10.99.0.2");

	/* Nothing else comes: a gives up after its connect timeout (10 s). */
	if (!pump(&s, 16000, is_disconnected)) {
		result("half-timeout", "FAIL: still connected after %d s",
		       slow_ms(16000) / 1000);
	} else {
		int64_t dt = s.t_disc.tv_sec * 1000LL + s.t_disc.tv_nsec / 1000000 - t0;

		if (dt >= 9000 && dt <= slow_ms(14000))
			result("half-timeout", "ok, a disconnected after %" PRId64 " ms", dt);
		else
			result("half-timeout", "FAIL: a disconnected after %" PRId64 " ms",
			       dt);
		expect_log("kxfer: peer evil-half: connection timed out (-110)");
	}
out:
	sess_close(&s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* ctrl: malformed control messages                                        */
/* ---------------------------------------------------------------------- */

/* A message for case builders: header filled, next sequence number. */
struct cbuf {
	uint8_t b[BIG_SIZE];
	unsigned int len;
};

static struct msg_hdr *cb_hdr(struct sess *s, struct cbuf *m, unsigned int type,
			      unsigned int len)
{
	memset(m, 0, sizeof(*m));
	hdr_init((void *)m->b, type, len, s->tx_seq + 1, 0);
	m->len = len;
	return (void *)m->b;
}

/* A valid one-MR export message, for the builders to spoil. */
static struct msg_export *cb_export(struct sess *s, struct cbuf *m,
				    const char *name, unsigned int nmrs,
				    unsigned int first, unsigned int count)
{
	struct msg_export *e;
	unsigned int i;

	cb_hdr(s, m, MSG_EXPORT_ADD, sizeof(*e) + count * sizeof(e->mrs[0]));
	e = (void *)m->b;
	memcpy(e->name, name, strnlen(name, sizeof(e->name) - 1));
	e->len = htole64((uint64_t)nmrs << 12);
	e->gen = htole64(1);
	e->access = htole32(KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
	e->nmrs = htole16(nmrs);
	e->first = htole16(first);
	e->count = htole16(count);
	for (i = 0; i < count; i++) {
		e->mrs[i].off = htole64((uint64_t)(first + i) << 12);
		e->mrs[i].len = htole64(4096);
		e->mrs[i].iova = htole64(0);
		e->mrs[i].rkey = htole32(0x1234 + i);
	}
	return e;
}

#define CB(n) static void n(struct sess *s, struct cbuf *m)

CB(c_trunc0) { m->len = 0; }
CB(c_trunc8) { cb_hdr(s, m, MSG_CREDIT, 16); m->len = 8; }
CB(c_trunc15) { cb_hdr(s, m, MSG_CREDIT, 15); m->len = 15; }
CB(c_oversize) { cb_hdr(s, m, MSG_CREDIT, 4097); m->len = 4097; }
CB(c_lenfield) { cb_hdr(s, m, MSG_CREDIT, 16)->len = htole16(17); }
CB(c_lenfield0) { cb_hdr(s, m, MSG_CREDIT, 16)->len = 0; }
CB(c_magic) { cb_hdr(s, m, MSG_CREDIT, 16)->magic = htole32(0x72666b78); }
CB(c_version) { cb_hdr(s, m, MSG_CREDIT, 16)->version = 2; }
CB(c_pad) { cb_hdr(s, m, MSG_CREDIT, 16)->pad = htole16(1); }
CB(c_type0) { cb_hdr(s, m, 0, 16); }
CB(c_type_unknown) { cb_hdr(s, m, MSG_FIRST_UNKNOWN, 16); }
CB(c_type255) { cb_hdr(s, m, 255, 16); }
CB(c_seq_skip) { cb_hdr(s, m, MSG_CREDIT, 16)->seq = htole32(s->tx_seq + 2); }
CB(c_seq_old) { cb_hdr(s, m, MSG_CREDIT, 16)->seq = htole32(s->tx_seq); }
CB(c_seq0) { cb_hdr(s, m, MSG_CREDIT, 16)->seq = 0; }
CB(c_seq_max) { cb_hdr(s, m, MSG_CREDIT, 16)->seq = htole32(0xffffffff); }
CB(c_credit_len) { cb_hdr(s, m, MSG_CREDIT, 24); }
CB(c_sync_len) { cb_hdr(s, m, MSG_SYNC_DONE, 24); }
CB(c_ka_len) { cb_hdr(s, m, MSG_KEEPALIVE, 16); }
CB(c_ka_long) { cb_hdr(s, m, MSG_KEEPALIVE_ACK, 32); }
CB(c_credits) { cb_hdr(s, m, MSG_CREDIT, 16)->credits = htole16(1000); }
CB(c_credits_max) { cb_hdr(s, m, MSG_CREDIT, 16)->credits = htole16(0xffff); }
CB(c_credits_one) { cb_hdr(s, m, MSG_CREDIT, 16)->credits = htole16(s->owed + 4); }
CB(c_sync2) { cb_hdr(s, m, MSG_SYNC_DONE, 16); }
CB(c_del_len) { cb_hdr(s, m, MSG_EXPORT_DEL, sizeof(struct msg_export_del) - 1); }

CB(c_del_name)
{
	struct msg_export_del *d;

	cb_hdr(s, m, MSG_EXPORT_DEL, sizeof(*d));
	d = (void *)m->b;
	memset(d->name, 'k', sizeof(d->name));
}

/* EXPORT_TOKEN, well formed, though we never said we speak tokens */
CB(c_token_unagreed)
{
	/* the layout of EXPORT_DEL (name, gen), then 16 bytes of token */
	cb_hdr(s, m, MSG_EXPORT_TOKEN, sizeof(struct msg_export_del) + 16);
	memcpy(m->b + sizeof(struct msg_hdr), "hp-scoped", 10);
	memset(m->b + sizeof(struct msg_export_del), 0x5a, 16);
}

/* A valid EXPORT_TOKEN for export @name, generation @gen. */
static void cb_token(struct sess *s, struct cbuf *m, const char *name,
		     uint64_t gen)
{
	struct msg_export_del *t;

	cb_hdr(s, m, MSG_EXPORT_TOKEN, sizeof(*t) + 16);
	t = (void *)m->b;
	memcpy(t->name, name, strnlen(name, sizeof(t->name) - 1));
	t->gen = htole64(gen);
	memset(m->b + sizeof(*t), 0xa5, 16);
}

/*
 * On a session that agreed on tokens, after a valid EXPORT_TOKEN for
 * "eg" generation 1 (the prelude of token_cases): what must follow is
 * the start of that export, and nothing else.
 */
CB(c_tk_twice) { cb_token(s, m, "eg", 1); }
CB(c_tk_name) { cb_export(s, m, "eh", 3, 0, 1); }
CB(c_tk_gen) { cb_export(s, m, "eg", 3, 0, 1)->gen = htole64(2); }
CB(c_tk_cont) { cb_export(s, m, "eg", 3, 1, 1); }

/* EXPORT_TOKEN of zeros: no token, malformed before anything else */
CB(c_token_zero)
{
	cb_hdr(s, m, MSG_EXPORT_TOKEN, sizeof(struct msg_export_del) + 16);
	memcpy(m->b + sizeof(struct msg_hdr), "hp-scoped", 10);
}

CB(c_notify_name)
{
	struct msg_notify *n;

	cb_hdr(s, m, MSG_NOTIFY, sizeof(*n));
	n = (void *)m->b;
	strcpy(n->name, "kvw\n");
}

CB(c_notify_len) { cb_hdr(s, m, MSG_NOTIFY, sizeof(struct msg_notify) + 8); }
CB(c_desc_len) { cb_hdr(s, m, MSG_NOTIFY_DESC, sizeof(struct msg_notify)); }

CB(c_desc_pad)
{
	struct msg_notify_desc *d;

	cb_hdr(s, m, MSG_NOTIFY_DESC, sizeof(*d));
	d = (void *)m->b;
	strcpy(d->n.name, "kvw");
	d->token = htole32(1);
	d->pad = htole32(1);
}
/* A HELLO is the connector's first message; this one comes too late. */
CB(c_hello_late) { cb_hdr(s, m, MSG_HELLO, sizeof(struct msg_hdr) + 8); }
CB(c_hello_len) { cb_hdr(s, m, MSG_HELLO, sizeof(struct msg_hdr) + 4); }

/* NOTIFY_MSG: a notify, a 16-bit length, 6 bytes of padding, the bytes. */
static uint8_t *cb_notify_msg(struct sess *s, struct cbuf *m,
			      unsigned int len, unsigned int nm_len)
{
	struct msg_notify *n;
	uint8_t *tail;

	cb_hdr(s, m, MSG_NOTIFY_MSG, len);
	n = (void *)m->b;
	strcpy(n->name, "kvw");
	tail = m->b + sizeof(*n);
	tail[0] = nm_len & 0xff;
	tail[1] = nm_len >> 8;
	return tail;
}

CB(c_nmsg_empty) { cb_notify_msg(s, m, sizeof(struct msg_notify) + 8, 0); }
CB(c_nmsg_len) { cb_notify_msg(s, m, sizeof(struct msg_notify) + 8 + 5, 10); }
CB(c_nmsg_big) { cb_notify_msg(s, m, sizeof(struct msg_notify) + 8 + 1025, 1025); }
CB(c_nmsg_pad) { cb_notify_msg(s, m, sizeof(struct msg_notify) + 8 + 5, 5)[7] = 1; }

/*
 * Rails' messages to an acceptor that gave this session no rails (we
 * never say F_RAILS): each refused as out of turn, or malformed.
 */
CB(c_rail_token)
{
	cb_hdr(s, m, MSG_RAIL_TOKEN, sizeof(struct msg_hdr) + 8 + 32);
	m->b[sizeof(struct msg_hdr)] = 7;	/* a session */
}

/* RAIL_FENCE and RAIL_FENCED: a rail, 4 bytes of padding, a session id. */
static uint8_t *cb_fence(struct sess *s, struct cbuf *m, unsigned int type,
			 unsigned int rail)
{
	uint8_t *body = m->b + sizeof(struct msg_hdr);

	cb_hdr(s, m, type, sizeof(struct msg_hdr) + 16);
	body[0] = rail;
	body[8] = 1;
	return body;
}

CB(c_rail_fence) { cb_fence(s, m, MSG_RAIL_FENCE, 1); }
CB(c_rail_fence_rail) { cb_fence(s, m, MSG_RAIL_FENCE, 8); }
CB(c_rail_fence_pad) { cb_fence(s, m, MSG_RAIL_FENCE, 1)[4] = 1; }
CB(c_rail_fenced) { cb_fence(s, m, MSG_RAIL_FENCED, 0); }

/* RAIL_NOTIFY: a notify, a 64-bit number, 16-bit length, 6 bytes pad. */
static uint8_t *cb_rail_notify(struct sess *s, struct cbuf *m, uint64_t seq)
{
	struct msg_notify *n;
	uint8_t *tail;

	cb_hdr(s, m, MSG_RAIL_NOTIFY, sizeof(struct msg_notify) + 16);
	n = (void *)m->b;
	strcpy(n->name, "kvw");
	tail = m->b + sizeof(*n);
	seq = htole64(seq);
	memcpy(tail, &seq, 8);
	return tail;
}

CB(c_rail_notify) { cb_rail_notify(s, m, 1); }
CB(c_rail_notify_seq0) { cb_rail_notify(s, m, 0); }

CB(c_exp_short) { cb_hdr(s, m, MSG_EXPORT_ADD, sizeof(struct msg_export) - 1); }
CB(c_exp_hdr_only) { cb_hdr(s, m, MSG_EXPORT_ADD, 16); }

CB(c_exp_name_unterm)
{
	memset(cb_export(s, m, "x", 1, 0, 1)->name, 'x', NAME_MAX_);
}

CB(c_exp_name_empty) { cb_export(s, m, "", 1, 0, 1); }
CB(c_exp_name_char) { cb_export(s, m, "kv w", 1, 0, 1); }

CB(c_exp_name_garbage)
{
	cb_export(s, m, "kvw", 1, 0, 1)->name[30] = 'z';
}

CB(c_exp_len0) { cb_export(s, m, "e0", 1, 0, 1)->len = 0; }
CB(c_exp_access0) { cb_export(s, m, "ea", 1, 0, 1)->access = 0; }
CB(c_exp_access8) { cb_export(s, m, "ea", 1, 0, 1)->access = htole32(8); }
CB(c_exp_nmrs0) { cb_export(s, m, "en", 1, 0, 1)->nmrs = 0; }
/* 262145 regions (4 << 16 | 1), one more than any export may have */
CB(c_exp_nmrs_big) { cb_export(s, m, "en", 1, 0, 1)->nmrs_hi = htole16(4); }

CB(c_exp_nmrs_max)
{
	struct msg_export *e = cb_export(s, m, "en", 1, 0, 1);

	e->nmrs = htole16(0xffff);
	e->nmrs_hi = htole16(0xffff);
}

/* the first region 65536 of an export of 1 */
CB(c_exp_first_hi) { cb_export(s, m, "ef", 1, 0, 1)->first_hi = htole16(1); }
CB(c_exp_count0) { cb_export(s, m, "ec", 1, 0, 1)->count = 0; }
CB(c_exp_first) { cb_export(s, m, "ef", 2, 0, 1)->first = htole16(2); }
CB(c_exp_count_past) { cb_export(s, m, "ec", 2, 1, 2)->nmrs = htole16(2); }

CB(c_exp_count_huge)
{
	struct msg_export *e = cb_export(s, m, "eh", 1, 0, 1);

	e->nmrs = htole16(4096);
	e->count = htole16(4096);
}

CB(c_exp_count_msg)
{
	struct msg_export *e = cb_export(s, m, "eh", 1, 0, 1);

	e->nmrs = htole16(MRS_PER_MSG + 1);
	e->count = htole16(MRS_PER_MSG + 1);
}

CB(c_exp_len_mismatch) { cb_export(s, m, "el", 2, 0, 2)->count = htole16(1); }
CB(c_exp_pad) { cb_export(s, m, "ep", 1, 0, 1)->pad = htole16(1); }

CB(c_exp_mr_outside)
{
	cb_export(s, m, "eo", 1, 0, 1)->mrs[0].len = htole64(4097);
}

CB(c_exp_mr_wrap)
{
	struct msg_export *e = cb_export(s, m, "ew", 1, 0, 1);

	e->mrs[0].off = htole64(8);
	e->mrs[0].len = htole64(0xfffffffffffffffcULL);
}

CB(c_exp_mr_off)
{
	cb_export(s, m, "eo", 1, 0, 1)->mrs[0].off = htole64(4097);
}

CB(c_exp_mr_len0) { cb_export(s, m, "ez", 1, 0, 1)->mrs[0].len = 0; }

CB(c_exp_mr_overlap)
{
	cb_export(s, m, "ev", 2, 0, 2)->mrs[1].off = htole64(4095);
}

CB(c_exp_mr_back)
{
	struct msg_export *e = cb_export(s, m, "eb", 2, 0, 2);

	e->mrs[0].off = htole64(4096);
	e->mrs[1].off = 0;
}

CB(c_exp_mr_pad) { cb_export(s, m, "eq", 1, 0, 1)->mrs[0].pad = htole32(1); }
CB(c_exp_cont) { cb_export(s, m, "ek", 3, 1, 1); }

/* Two-message cases: the first is valid and sent by the case runner. */
CB(c_exp_cont_gen) { cb_export(s, m, "eg", 3, 1, 1)->gen = htole64(2); }
CB(c_exp_cont_gap) { cb_export(s, m, "eg", 3, 2, 1); }
CB(c_exp_cont_nmrs) { cb_export(s, m, "eg", 4, 1, 1); }

CB(c_exp_cont_overlap)
{
	cb_export(s, m, "eg", 3, 1, 1)->mrs[0].off = htole64(4095);
}

CB(c_exp_gen_back) { cb_export(s, m, "eg", 3, 0, 1); }

struct ctrl_case {
	const char *name;
	void (*make)(struct sess *s, struct cbuf *m);
	const char *why;	/* a logs "peer NODE: down: WHY (ERRNO)" */
	int err;		/* 0: WHY is only the start of the reason */
	bool prelude;		/* send a valid start of export "eg" first */
};

#define WHY_LEN "length field does not match the bytes received"

static const struct ctrl_case ctrl_cases[] = {
	{ "trunc0", c_trunc0, "message shorter than its header", -EINVAL, false },
	{ "trunc8", c_trunc8, "message shorter than its header", -EINVAL, false },
	{ "trunc15", c_trunc15, "message shorter than its header", -EINVAL, false },
	/* rxe says "local length error" or "local QP operation error" */
	{ "oversize", c_oversize, "local ", 0, false },
	{ "lenfield", c_lenfield, WHY_LEN, -EINVAL, false },
	{ "lenfield0", c_lenfield0, WHY_LEN, -EINVAL, false },
	{ "magic", c_magic, "bad magic", -EPROTO, false },
	{ "version", c_version, "unsupported protocol version", -EPROTO, false },
	{ "pad", c_pad, "non-zero padding", -EINVAL, false },
	{ "type0", c_type0, "unknown message type", -EINVAL, false },
	{ "type-unknown", c_type_unknown, "unknown message type", -EINVAL, false },
	{ "type255", c_type255, "unknown message type", -EINVAL, false },
	{ "seq-skip", c_seq_skip, "message out of sequence", -EBADMSG, false },
	{ "seq-replay", c_seq_old, "message out of sequence", -EBADMSG, false },
	{ "seq0", c_seq0, "message out of sequence", -EBADMSG, false },
	{ "seq-max", c_seq_max, "message out of sequence", -EBADMSG, false },
	{ "credit-len", c_credit_len, "wrong length for the message type", -EINVAL, false },
	{ "sync-len", c_sync_len, "wrong length for the message type", -EINVAL, false },
	{ "keepalive-short", c_ka_len, "wrong length for the message type", -EINVAL, false },
	{ "keepalive-ack-long", c_ka_long, "wrong length for the message type", -EINVAL, false },
	{ "credits-1000", c_credits, "more credits returned than lent", -EPROTO, false },
	{ "credits-65535", c_credits_max, "more credits returned than lent", -EPROTO, false },
	{ "credits-over", c_credits_one, "more credits returned than lent", -EPROTO, false },
	{ "sync-twice", c_sync2, "second end of the export table", -EPROTO, false },
	{ "del-len", c_del_len, "wrong length for the message type", -EINVAL, false },
	{ "del-name", c_del_name, "bad export name", -EINVAL, false },
	{ "token-unagreed", c_token_unagreed, "export token, which was not agreed on",
	  -EPROTO, false },
	{ "token-zero", c_token_zero, "export token of zeros", -EINVAL, false },
	{ "notify-name", c_notify_name, "bad export name", -EINVAL, false },
	{ "notify-len", c_notify_len, "wrong length for the message type", -EINVAL, false },
	{ "desc-len", c_desc_len, "wrong length for the message type", -EINVAL, false },
	{ "desc-pad", c_desc_pad, "non-zero padding", -EINVAL, false },
	{ "hello-late", c_hello_late, "unexpected HELLO", -EPROTO, false },
	{ "hello-len", c_hello_len, "wrong length for the message type", -EINVAL, false },
	{ "rail-token", c_rail_token, "unexpected RAIL_TOKEN", -EPROTO, false },
	{ "rail-fence", c_rail_fence, "unexpected RAIL_FENCE", -EPROTO, false },
	{ "rail-fence-rail", c_rail_fence_rail, "bad rail in a fence", -EINVAL, false },
	{ "rail-fence-pad", c_rail_fence_pad, "non-zero padding", -EINVAL, false },
	{ "rail-fenced", c_rail_fenced, "unexpected RAIL_FENCED", -EPROTO, false },
	{ "rail-notify", c_rail_notify, "unexpected RAIL_NOTIFY", -EPROTO, false },
	{ "rail-notify-seq0", c_rail_notify_seq0, "notification without a number",
	  -EINVAL, false },
	{ "notify-msg-empty", c_nmsg_empty, "wrong length for the message type", -EINVAL, false },
	{ "notify-msg-len", c_nmsg_len, "wrong length for the message type", -EINVAL, false },
	{ "notify-msg-big", c_nmsg_big, "wrong length for the message type", -EINVAL, false },
	{ "notify-msg-pad", c_nmsg_pad, "non-zero padding", -EINVAL, false },
	{ "exp-short", c_exp_short, "export message too short", -EINVAL, false },
	{ "exp-hdr-only", c_exp_hdr_only, "export message too short", -EINVAL, false },
	{ "exp-name-unterminated", c_exp_name_unterm, "bad export name", -EINVAL, false },
	{ "exp-name-empty", c_exp_name_empty, "bad export name", -EINVAL, false },
	{ "exp-name-space", c_exp_name_char, "bad export name", -EINVAL, false },
	{ "exp-name-garbage", c_exp_name_garbage, "bad export name", -EINVAL, false },
	{ "exp-len0", c_exp_len0, "empty export", -EINVAL, false },
	{ "exp-access0", c_exp_access0, "bad export access", -EINVAL, false },
	{ "exp-access8", c_exp_access8, "bad export access", -EINVAL, false },
	{ "exp-nmrs0", c_exp_nmrs0, "bad MR table bounds", -EINVAL, false },
	{ "exp-nmrs262145", c_exp_nmrs_big, "bad MR table bounds", -EINVAL, false },
	{ "exp-nmrs-max", c_exp_nmrs_max, "bad MR table bounds", -EINVAL, false },
	{ "exp-first-hi", c_exp_first_hi, "bad MR table bounds", -EINVAL, false },
	{ "exp-count0", c_exp_count0, "bad MR table bounds", -EINVAL, false },
	{ "exp-first", c_exp_first, "bad MR table bounds", -EINVAL, false },
	{ "exp-count-past", c_exp_count_past, "bad MR table bounds", -EINVAL, false },
	{ "exp-count4096", c_exp_count_huge, "bad MR table bounds", -EINVAL, false },
	{ "exp-count-msg", c_exp_count_msg, "bad MR table bounds", -EINVAL, false },
	{ "exp-len-mismatch", c_exp_len_mismatch,
	  "export message length does not match its MR count", -EINVAL, false },
	{ "exp-pad", c_exp_pad, "non-zero padding", -EINVAL, false },
	{ "exp-mr-outside", c_exp_mr_outside, "MR outside its export", -EINVAL, false },
	{ "exp-mr-wrap", c_exp_mr_wrap, "MR outside its export", -EINVAL, false },
	{ "exp-mr-off", c_exp_mr_off, "MR outside its export", -EINVAL, false },
	{ "exp-mr-len0", c_exp_mr_len0, "MR outside its export", -EINVAL, false },
	{ "exp-mr-overlap", c_exp_mr_overlap, "MR outside its export", -EINVAL, false },
	{ "exp-mr-backwards", c_exp_mr_back, "MR outside its export", -EINVAL, false },
	{ "exp-mr-pad", c_exp_mr_pad, "MR outside its export", -EINVAL, false },
	{ "exp-continuation", c_exp_cont,
	  "export continuation does not follow its start", -EPROTO, false },
	{ "exp-cont-gen", c_exp_cont_gen,
	  "export continuation does not follow its start", -EPROTO, true },
	{ "exp-cont-gap", c_exp_cont_gap,
	  "export continuation does not follow its start", -EPROTO, true },
	{ "exp-cont-nmrs", c_exp_cont_nmrs,
	  "export continuation does not follow its start", -EPROTO, true },
	{ "exp-cont-overlap", c_exp_cont_overlap, "export MRs overlap", -EPROTO, true },
	{ "exp-gen-back", c_exp_gen_back, "export generation went backwards", -EPROTO, true },
};

#define WHY_TOKEN "export token without its export"

/* Each after HELLO with F_TOKEN and a valid EXPORT_TOKEN ("prelude") */
static const struct ctrl_case token_cases[] = {
	{ "token-twice", c_tk_twice, WHY_TOKEN, -EPROTO, false },
	{ "token-other-name", c_tk_name, WHY_TOKEN, -EPROTO, false },
	{ "token-other-gen", c_tk_gen, WHY_TOKEN, -EPROTO, false },
	/* a continuation whose start never came: the token is checked first */
	{ "token-continuation", c_tk_cont, WHY_TOKEN, -EPROTO, false },
};

/*
 * One case on a fresh session: a must end it at once, and say why.  With
 * @token, the session agrees on tokens (HELLO) and an EXPORT_TOKEN comes
 * first.
 */
static void ctrl_case(const struct ctrl_case *cc, bool token)
{
	char node[NAME_MAX_];
	struct sess s;
	struct cbuf m;
	int64_t t0;

	snprintf(node, sizeof(node), "hc-%s", cc->name);
	if (sess_open_hello(&s, node, 1, -1, token ? F_TOKEN : 0)) {
		result(cc->name, "FAIL: the session did not come up");
		goto out;
	}
	if (token) {
		cb_token(&s, &m, "eg", 1);
		send_msg(&s, MSG_EXPORT_TOKEN, m.b + sizeof(struct msg_hdr),
			 m.len - sizeof(struct msg_hdr));
	}
	if (cc->prelude) {
		cb_export(&s, &m, "eg", 3, 0, 1);
		send_msg(&s, MSG_EXPORT_ADD, m.b + sizeof(struct msg_hdr),
			 m.len - sizeof(struct msg_hdr));
	}
	cc->make(&s, &m);
	t0 = now_ms();
	send_raw(&s, m.b, m.len);
	s.tx_seq++;
	if (!pump(&s, 8000, is_disconnected)) {
		result(cc->name, "FAIL: a did not end the session within %d s",
		       slow_ms(8000) / 1000);
	} else {
		result(cc->name, "ok, a disconnected after %" PRId64 " ms", now_ms() - t0);
		if (cc->err)
			expect_log("kxfer: peer %s: down: %s (%d)", node, cc->why,
				   cc->err);
		else
			expect_log("kxfer: peer %s: down: %s", node, cc->why);
	}
out:
	sess_close(&s);
}

static int cmd_ctrl(const char *only)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ctrl_cases); i++)
		if (!only || !strcmp(only, ctrl_cases[i].name))
			ctrl_case(&ctrl_cases[i], false);
	for (i = 0; i < ARRAY_SIZE(token_cases); i++)
		if (!only || !strcmp(only, token_cases[i].name))
			ctrl_case(&token_cases[i], true);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* overrun: more messages than credits                                     */
/* ---------------------------------------------------------------------- */

/*
 * Valid CREDIT messages, three times as many as a has receives, posted
 * at once on a QP with the RNR retry count a asked for (0): if a cannot
 * repost fast enough, the excess meets an empty receive queue, our QP
 * fails with an RNR error, and a must notice the dead session by itself
 * and end it.  If a keeps up, the session must still work.
 */
static int cmd_overrun(void)
{
	unsigned int i, n = 3 * A_RECVS;
	struct sess s;
	int64_t t0;

	if (sess_open(&s, "hc-overrun", 1, -1)) {
		result("overrun", "FAIL: the session did not come up");
		goto out;
	}
	t0 = now_ms();
	for (i = 0; i < n; i++)
		send_msg(&s, MSG_CREDIT, NULL, 0);
	pump(&s, 3000, NULL);
	say("  overrun: %u sent, %u acknowledged, %u failed (first: %s)\n", n,
	    s.sends_ok, s.sends_err,
	    s.sends_err ? ibv_wc_status_str(s.first_send_err) : "-");
	if (!s.sends_err) {
		/* a kept up with us: the session must still work. */
		uint64_t stamp = htole64(1);

		s.ka_acked = false;
		send_msg(&s, MSG_KEEPALIVE, &stamp, 8);
		if (pump(&s, 5000, is_synced))
			result("overrun", "ok, a kept up, session alive");
		else
			result("overrun", "FAIL: no keepalive answer after the burst");
		goto out;
	}
	if (s.first_send_err != IBV_WC_RNR_RETRY_EXC_ERR) {
		result("overrun", "FAIL: send error %s, wanted an RNR",
		       ibv_wc_status_str(s.first_send_err));
		goto out;
	}
	/* Our QP is in error: a notices by its keepalive. */
	if (pump(&s, 12000, is_disconnected))
		result("overrun", "ok, RNR after %u sends, a ended the session after %"
		       PRId64 " ms", s.sends_ok, now_ms() - t0);
	else
		result("overrun", "FAIL: a kept the dead session for %d s",
		       slow_ms(12000) / 1000);
out:
	sess_close(&s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* rdma: one-sided operations with guessed keys and addresses              */
/* ---------------------------------------------------------------------- */

static int rdma_op(struct sess *s, unsigned int qi, enum ibv_wr_opcode op,
		   uint64_t addr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->buf + OFF_RDMA), .length = len,
		.lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_RDMA | qi, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = addr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		sge.length = 8;
	} else {
		wr.wr.rdma.remote_addr = addr;
		wr.wr.rdma.rkey = rkey;
	}
	s->rdma_done = false;
	n_rdma++;
	if (ibv_post_send(s->c[qi].qp, &wr, &bad))
		return -errno;
	if (!pump(s, 10000, rdma_done))
		return s->c[0].disconnected ? -ENOTCONN : -ETIMEDOUT;
	return s->rdma_status;
}

struct attack {
	char what[96];
	enum ibv_wr_opcode op;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	bool on_other;		/* from the second hostile session */
};

static bool key_known(struct sess *s, uint32_t k)
{
	unsigned int i, j;

	for (i = 0; i < s->nex; i++)
		for (j = 0; j < s->ex[i].have && j < MAX_MRS; j++)
			if (s->ex[i].mrs[j].rkey == k)
				return true;
	return false;
}

static void add_attack(struct attack *a, unsigned int *n, const char *what,
		       enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		       uint32_t len, bool other)
{
	struct attack *x = &a[(*n)++];

	snprintf(x->what, sizeof(x->what), "%s", what);
	x->op = op;
	x->addr = addr;
	x->rkey = rkey;
	x->len = len;
	x->on_other = other;
}

static const char *op_name(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE ? "WRITE" :
	       op == IBV_WR_RDMA_READ ? "READ" : "FADD";
}

static bool list_eq(struct sess *s, const char *want)
{
	char got[1024] = "", *names[MAX_EXPORTS];
	unsigned int i, j;

	for (i = 0; i < s->nex; i++)
		names[i] = s->ex[i].name;
	for (i = 0; i < s->nex; i++)
		for (j = i + 1; j < s->nex; j++)
			if (strcmp(names[i], names[j]) > 0) {
				char *t = names[i];

				names[i] = names[j];
				names[j] = t;
			}
	for (i = 0; i < s->nex; i++) {
		if (i)
			strcat(got, ",");
		strncat(got, names[i], NAME_MAX_);
	}
	say("  %s was told about: %s\n", s->node, got);
	return !strcmp(got, want);
}

/* A well-formed NOTIFY naming @name at @gen, carrying @value. */
static int notify_send(struct sess *s, const char *name, uint64_t gen,
		       uint64_t value)
{
	struct msg_notify n;

	memset(&n, 0, sizeof(n));
	snprintf(n.name, sizeof(n.name), "%s", name);
	n.gen = htole64(gen);
	n.value = htole64(value);
	return send_msg(s, MSG_NOTIFY, (uint8_t *)&n + sizeof(n.h),
			sizeof(n) - sizeof(n.h));
}

static int cmd_rdma(const char *expect, const char *granted)
{
	static struct attack at[64];
	struct sess s, o;
	const struct rexport *g, *wo, *ro, *ow;
	unsigned int n = 0, i, qi = 1, oqi = 1;
	uint64_t gbase;
	uint32_t gkey, rkey;
	char what[96];
	int st;

	memset(&o, 0, sizeof(o));
	if (sess_open(&s, "evil", MAX_QPS, -1) || sess_open(&o, "evil2", MAX_QPS, -1)) {
		result("rdma", "FAIL: the sessions did not come up");
		return 0;
	}
	if (expect) {
		if (list_eq(&s, expect))
			result("rdma-advertised", "ok, exactly %s", expect);
		else
			result("rdma-advertised", "FAIL: wanted %s", expect);
	}
	g = rexport_find(&s, granted);
	if (!g || g->have != g->nmrs || rexport_find(&o, granted)) {
		result("rdma", "FAIL: %s is not (only) advertised to evil", granted);
		goto out;
	}
	gbase = g->mrs[0].iova;
	gkey = g->mrs[0].rkey;

	/* What evil was granted works: write a pattern, read it back. */
	for (i = 0; i < 4096; i++)
		s.buf[OFF_RDMA + i] = 0xe0 ^ i;
	st = rdma_op(&s, 0, IBV_WR_RDMA_WRITE, gbase + 4096, gkey, 4096);
	memset(s.buf + OFF_RDMA, 0, 4096);
	if (!st)
		st = rdma_op(&s, 0, IBV_WR_RDMA_READ, gbase + 4096, gkey, 4096);
	for (i = 0; i < 4096 && !st; i++)
		if (s.buf[OFF_RDMA + i] != (uint8_t)(0xe0 ^ i))
			st = -EILSEQ;
	if (st)
		result("rdma-granted", "FAIL: %d", st);
	else
		result("rdma-granted", "ok, 4 KiB written and read back at %s+4096",
		       granted);

	/*
	 * Notifications: a delivers only those for an export it gave evil,
	 * at the generation it gave (hostile.sh subscribes to both names
	 * on a and checks that only the last arrives, value 0x6b3).
	 */
	st = notify_send(&s, "hxc", 1, 0x6b1);
	if (!st)
		st = notify_send(&s, granted, g->gen + 1, 0x6b2);
	if (!st)
		st = notify_send(&s, granted, g->gen, 0x6b3);
	/* a answers a keepalive after it has read the three (one queue) */
	s.ka_acked = false;
	if (!st)
		st = send_msg(&s, MSG_KEEPALIVE, &(uint64_t){ htole64(0x6b4) }, 8);
	if (!st && !pump(&s, 30000, is_acked))
		st = -ETIMEDOUT;
	if (st) {
		result("rdma-notify", "FAIL: %d", st);
	} else {
		expect_log("kxfer: peer evil: notification for export hxc (generation 1), which it was not given: dropped");
		expect_log("kxfer: peer evil: notification for export %s (generation %" PRIu64 "), which it was not given: dropped",
			   granted, g->gen + 1);
		result("rdma-notify", "ok, sent for hxc, for %s at a wrong generation, and for %s",
		       granted, granted);
	}

	/* Each of these must end with a remote access error. */
	add_attack(at, &n, "granted, straddling its end", IBV_WR_RDMA_WRITE,
		   gbase + g->len - 8, gkey, 16, false);
	add_attack(at, &n, "granted, just past its end", IBV_WR_RDMA_WRITE,
		   gbase + g->len, gkey, 8, false);
	add_attack(at, &n, "granted, before its start", IBV_WR_RDMA_WRITE,
		   gbase - 4096, gkey, 8, false);
	add_attack(at, &n, "granted, a kernel address", IBV_WR_RDMA_WRITE,
		   0xffff888000000000ULL, gkey, 8, false);
	add_attack(at, &n, "granted, READ of a kernel address", IBV_WR_RDMA_READ,
		   0xffffffff81000000ULL, gkey, 64, false);
	add_attack(at, &n, "granted, FADD without atomic access",
		   IBV_WR_ATOMIC_FETCH_AND_ADD, gbase, gkey, 8, false);
	wo = rexport_find(&s, "kvw");
	ro = rexport_find(&s, "kvro");
	if (wo)
		add_attack(at, &n, "kvw (write only), READ", IBV_WR_RDMA_READ,
			   wo->mrs[0].iova, wo->mrs[0].rkey, 64, false);
	if (ro)
		add_attack(at, &n, "kvro (read only), WRITE", IBV_WR_RDMA_WRITE,
			   ro->mrs[0].iova, ro->mrs[0].rkey, 64, false);
	/* The key of evil's export, from the other session's QPs. */
	add_attack(at, &n, "evil's key, from evil2", IBV_WR_RDMA_WRITE,
		   gbase, gkey, 8, true);
	add_attack(at, &n, "evil's key, READ from evil2", IBV_WR_RDMA_READ,
		   gbase, gkey, 8, true);
	ow = rexport_find(&o, "kvw");
	if (wo && ow && ow->mrs[0].rkey != wo->mrs[0].rkey)
		add_attack(at, &n, "kvw key of evil, from evil2", IBV_WR_RDMA_WRITE,
			   wo->mrs[0].iova, wo->mrs[0].rkey, 8, true);
	/*
	 * Guessed keys, from evil2: the neighbours of a key it was told
	 * (other MRs of a: evil's, b's sessions', the PD's own), and random.
	 */
	if (ow) {
		static const int64_t d[] = { 1, -1, 0x100, -0x100, 0x200, -0x200,
					     0x300, 0x400, -0x300 };
		uint32_t okey = ow->mrs[0].rkey;
		unsigned int k;

		for (k = 0; k < ARRAY_SIZE(d); k++) {
			uint32_t key = okey + d[k];

			if (key_known(&o, key))
				continue;
			snprintf(what, sizeof(what), "guessed key (0x%x%+" PRId64 ")",
				 okey, d[k]);
			add_attack(at, &n, what, IBV_WR_RDMA_WRITE, ow->mrs[0].iova,
				   key, 8, true);
		}
	}
	rkey = (uint32_t)rand64();
	if (!key_known(&o, rkey))
		add_attack(at, &n, "random key", IBV_WR_RDMA_WRITE,
			   rand64() & 0xfffff, rkey, 8, true);
	add_attack(at, &n, "key 0, address 0", IBV_WR_RDMA_WRITE, 0, 0, 8, true);

	for (i = 0; i < n; i++) {
		struct attack *x = &at[i];
		struct sess *via = x->on_other ? &o : &s;
		unsigned int *q = x->on_other ? &oqi : &qi;
		char name[32];

		/* One QP per attempt: an access error kills the QP. */
		if (*q == MAX_QPS) {
			result("rdma", "FAIL: out of QPs");
			break;
		}
		memset(s.buf + OFF_RDMA, 0x5a, 4096);
		memset(o.buf + OFF_RDMA, 0x5a, 4096);
		st = rdma_op(via, (*q)++, x->op, x->addr, x->rkey, x->len);
		snprintf(name, sizeof(name), "rdma-%u", i + 1);
		if (st == IBV_WC_REM_ACCESS_ERR)
			result(name, "ok, %s %s (0x%" PRIx64 ", key 0x%x): remote access error",
			       op_name(x->op), x->what, x->addr, x->rkey);
		else
			result(name, "FAIL: %s %s (0x%" PRIx64 ", key 0x%x): %s",
			       op_name(x->op), x->what, x->addr, x->rkey,
			       st < 0 ? strerror(-st) :
			       ibv_wc_status_str((enum ibv_wc_status)st));
	}

	/* QP 0 of evil is untouched: the granted export still works. */
	st = rdma_op(&s, 0, IBV_WR_RDMA_READ, gbase + 4096, gkey, 4096);
	for (i = 0; i < 4096 && !st; i++)
		if (s.buf[OFF_RDMA + i] != (uint8_t)(0xe0 ^ i))
			st = -EILSEQ;
	if (st)
		result("rdma-granted-after", "FAIL: %d", st);
	else
		result("rdma-granted-after", "ok, read back again");
out:
	sess_close(&s);
	sess_close(&o);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Floods: what a peer can make a allocate                                 */
/* ---------------------------------------------------------------------- */

/*
 * Keep the session for @sec seconds; with @probe, a KEEPALIVE every
 * second, credits or not, so that a's keepalive timeout does not end it.
 */
static void hold(struct sess *s, int sec, bool probe)
{
	int i;

	say("holding\n");
	for (i = 0; i < sec && !s->c[0].disconnected; i++) {
		if (probe) {
			uint8_t m[sizeof(struct msg_keepalive)];

			hdr_init((void *)m, MSG_KEEPALIVE, sizeof(m), ++s->tx_seq, 0);
			memset(m + sizeof(struct msg_hdr), 0, 8);
			send_raw(s, m, sizeof(m));
		}
		pump(s, 1000, is_disconnected);
	}
}

/*
 * KEEPALIVEs past every credit, never a credit back, from a QP moved to
 * RTS by us with an RNR retry count of 7 (for ever: the NIC waits for
 * a's reposts) whatever a asked for: a queues an answer to each.
 */
static int cmd_ackflood(unsigned int n, int hold_s)
{
	unsigned int i, inflight = 0, done0;
	uint64_t stamp;
	struct sess s;

	if (sess_open(&s, "hf-acks", 1, 7)) {
		result("ackflood", "FAIL: the session did not come up");
		goto out;
	}
	s.no_ack = true;
	done0 = s.sends_ok + s.sends_err;
	for (i = 0; i < n && !s.c[0].disconnected; i++) {
		uint8_t m[sizeof(struct msg_keepalive)];

		stamp = htole64(i + 1);
		hdr_init((void *)m, MSG_KEEPALIVE, sizeof(m), ++s.tx_seq, 0);
		memcpy(m + sizeof(struct msg_hdr), &stamp, 8);
		send_raw(&s, m, sizeof(m));
		inflight++;
		/* Mostly within a's receives: an RNR costs its RNR timer. */
		while (inflight - (s.sends_ok + s.sends_err - done0) >= 24 &&
		       !s.c[0].disconnected)
			pump(&s, 10, NULL);
	}
	pump(&s, 3000, NULL);
	if (s.c[0].disconnected || s.sends_err)
		result("ackflood",
		       "ok, a ended the session after %u of %u messages (%u errors, first %s)",
		       s.sends_ok - done0, n, s.sends_err,
		       s.sends_err ? ibv_wc_status_str(s.first_send_err) : "-");
	else
		result("ackflood", "%u keepalives delivered, no credit returned, session up",
		       s.sends_ok - done0);
	hold(&s, hold_s, true);
out:
	sess_close(&s);
	return 0;
}

static bool acked_or_credit(struct sess *s)
{
	return s->ka_acked || s->n_credit || s->c[0].disconnected;
}

/*
 * A peer that, like a, returns credits only with a message of its own
 * while it has one waiting for credits: KEEPALIVEs that carry no credit,
 * one at a time, each answered by a, whose answers return ours.  a's
 * credits run down to the one it keeps for a CREDIT, and the next
 * answer waits for credits we do not return.  a owes us the receive of
 * that KEEPALIVE: it must send it back alone, or the two sides would
 * wait on each other for ever.  Then we return ours, and a's answer
 * comes.
 */
static int cmd_standoff(void)
{
	unsigned int i, answered = 0;
	struct sess s;

	if (sess_open(&s, "hf-stand", 1, -1)) {
		result("standoff", "FAIL: the session did not come up");
		goto out;
	}
	s.no_ack = true;
	for (i = 0; i < 2 * A_RECVS; i++) {
		uint8_t m[sizeof(struct msg_keepalive)];
		uint64_t stamp = htole64(0x57a0 + i);

		if (!s.credits) {
			result("standoff", "FAIL: a's answers returned no credit (%u answered)",
			       answered);
			goto out;
		}
		s.ka_acked = false;
		s.n_credit = 0;
		hdr_init((void *)m, MSG_KEEPALIVE, sizeof(m), ++s.tx_seq, 0);
		memcpy(m + sizeof(struct msg_hdr), &stamp, 8);
		send_raw(&s, m, sizeof(m));
		s.credits--;
		pump(&s, 3000, acked_or_credit);
		if (s.c[0].disconnected) {
			result("standoff", "FAIL: a ended the session after %u answers",
			       answered);
			goto out;
		}
		if (s.n_credit)
			break;
		if (!s.ka_acked) {
			result("standoff",
			       "FAIL: a answered %u keepalives, then for %d ms neither the next nor its credit: deadlock",
			       answered, slow_ms(3000));
			goto out;
		}
		answered++;
	}
	if (!s.n_credit) {
		result("standoff", "FAIL: a answered %u keepalives without a credit back",
		       answered);
		goto out;
	}
	/* Our credits back: the waiting answer must come. */
	s.ka_acked = false;
	send_msg(&s, MSG_CREDIT, NULL, 0);
	if (!pump(&s, 3000, is_acked) || s.c[0].disconnected)
		result("standoff",
		       "FAIL: a returned a credit after %u answers, then no answer came",
		       answered);
	else
		result("standoff",
		       "ok, a answered %u keepalives, returned a credit alone when out of them, then answered",
		       answered);
out:
	sess_close(&s);
	return 0;
}

static double ts_ms(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e3 + (b->tv_nsec - a->tv_nsec) / 1e6;
}

/*
 * A peer whose NIC takes every probe and whose kxfer never answers one:
 * credits come back (a CREDIT for each message of a), so a's keepalive
 * timeout never fires, its sends completing.  a must end the session
 * when the first unanswered probe is KXFER_KA_ANSWER_MAX (4) keepalive
 * timeouts old (@timeout_ms, as a's keepalive_timeout_ms is set), at its
 * next timer tick: between 4 and 5 timeouts after it came, the upper
 * bound KXFER_SLOW times wider.
 */
static int cmd_mute(int timeout_ms)
{
	int lo = 4 * timeout_ms - timeout_ms / 2;
	int hi = 4 * timeout_ms + slow_ms(timeout_ms);
	int64_t end;
	double t;
	struct sess s;

	if (sess_open(&s, "hf-mute", 1, -1)) {
		result("mute", "FAIL: the session did not come up");
		goto out;
	}
	s.no_ack = true;
	s.ka_pending = 0;
	end = now_ms() + 5 * slow_ms(timeout_ms) + 10000;
	while (!s.c[0].disconnected && now_ms() < end) {
		if (s.owed && s.credits)
			send_msg(&s, MSG_CREDIT, NULL, 0);
		pump(&s, 50, NULL);
	}
	if (!s.ka_pending) {
		result("mute", "FAIL: a sent no keepalive");
		goto out;
	}
	if (!s.c[0].disconnected) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		result("mute", "FAIL: the session outlived its first unanswered probe by %.0f ms",
		       ts_ms(&s.t_ka, &now));
		goto out;
	}
	t = ts_ms(&s.t_ka, &s.t_disc);
	if (t < lo || t > hi)
		result("mute",
		       "FAIL: a ended the session %.0f ms after the first unanswered probe, not in [%d, %d]",
		       t, lo, hi);
	else
		result("mute",
		       "ok, a ended the session %.0f ms after the first unanswered probe (%u, timeout %d ms)",
		       t, s.ka_pending, timeout_ms);
out:
	sess_close(&s);
	return 0;
}

/* A session as NODE: what a gives a name claimed from this address. */
static int cmd_claim(const char *node, const char *expect)
{
	struct sess s;

	if (sess_open(&s, node, 1, -1)) {
		result("claim", "FAIL: the session as %s did not come up", node);
		goto out;
	}
	if (!expect)
		result("claim", "ok, up as %s", node);
	else if (list_eq(&s, expect))
		result("claim", "ok, as %s: exactly %s", node, expect);
	else
		result("claim", "FAIL: as %s: wanted %s", node, expect);
out:
	sess_close(&s);
	return 0;
}

/*
 * Break the session's QP under a's feet: an RDMA WRITE with a key a
 * never gave moves a's end of QP 0 to error, and nothing is sent from
 * here after that.  a must end the session by itself (its receives are
 * flushed), and withdraw GRANTED, an export of several MRs, unhurt.
 * Prints "broken" once a's QP is in error, then holds up to HOLD_S
 * seconds for a to end the session.
 */
static int cmd_poison(const char *granted, int hold_s)
{
	const struct rexport *g;
	uint32_t bad;
	struct sess s;
	int st;

	if (sess_open(&s, "evilw", 1, -1)) {
		result("poison", "FAIL: the session did not come up");
		goto out;
	}
	g = rexport_find(&s, granted);
	if (!g || g->have != g->nmrs || g->nmrs < 2) {
		result("poison", "FAIL: %s is not advertised, or in fewer than 2 MRs",
		       granted);
		goto out;
	}
	bad = g->mrs[0].rkey;
	do
		bad = (bad & ~0xffu) | ((bad + 1) & 0xffu);
	while (key_known(&s, bad));
	st = rdma_op(&s, 0, IBV_WR_RDMA_WRITE, g->mrs[0].iova, bad, 64);
	if (st != IBV_WC_REM_ACCESS_ERR) {
		result("poison", "FAIL: a WRITE with key %#x ended %d, not %s",
		       bad, st, ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		goto out;
	}
	say("broken: %u MRs of %s advertised\n", g->nmrs, granted);
	hold(&s, hold_s, false);
	if (s.c[0].disconnected)
		result("poison", "ok, a ended the session");
	else
		result("poison", "FAIL: the session outlived %d s", hold_s);
out:
	sess_close(&s);
	return 0;
}

/*
 * Sessions of two QPs whose second QP never comes, from one address: a
 * accepts max_half_open (MAX) of them and refuses the rest, busy, until
 * some complete or time out.
 */
static int cmd_halfflood(unsigned int n, unsigned int max, int hold_s)
{
	struct sess *ss = calloc(n, sizeof(*ss));
	unsigned int i, acc = 0, busy = 0, other = 0;
	struct wire_conn w;
	int ret;

	if (!ss) {
		result("halfflood", "FAIL: out of memory");
		return 0;
	}
	for (i = 0; i < n; i++) {
		snprintf(ss[i].node, sizeof(ss[i].node), "hf-half");
		ss[i].sid = rand64();
		ss[i].nqps = 2;
		conn_pdata(&w, ss[i].node, ss[i].sid, 0, 2);
		ret = conn_try(&ss[i], &ss[i].c[0], &w, sizeof(w), -1, true);
		if (!ret)
			acc++;
		else if (ret == -ECONNREFUSED && ss[i].c[0].rej_reason == REJ_BUSY)
			busy++;
		else
			other++;
	}
	if (acc == max && busy == n - max)
		result("halfflood", "ok, %u of %u half-open sessions accepted, %u refused busy",
		       acc, n, busy);
	else
		result("halfflood", "FAIL: %u of %u accepted (want %u), %u refused busy, %u other",
		       acc, n, max, busy, other);
	if (hold_s > 0) {
		say("holding\n");
		sleep((unsigned int)hold_s);
	}
	for (i = 0; i < n; i++)
		sess_close(&ss[i]);
	free(ss);
	return 0;
}

/*
 * Distinct exports that each claim 4096 MRs and bring one: every message
 * of 112 bytes asks a for a table of 4096 entries.
 */
static int cmd_expflood(unsigned int n, int hold_s)
{
	unsigned int i, sent = 0;
	struct sess s;
	struct cbuf m;

	if (sess_open(&s, "hf-exports", 1, -1)) {
		result("expflood", "FAIL: the session did not come up");
		goto out;
	}
	for (i = 0; i < n && !s.c[0].disconnected; i++) {
		char name[NAME_MAX_];
		struct msg_export *e;

		/* Within a's credits: it returns them in CREDIT messages. */
		while (s.credits < 2 && !s.c[0].disconnected)
			if (!pump(&s, 5000, has_credits))
				break;
		snprintf(name, sizeof(name), "flood%u", i);
		e = cb_export(&s, &m, name, 4096, 0, 1);
		e->len = htole64(4096ULL << 12);
		send_msg(&s, MSG_EXPORT_ADD, m.b + sizeof(struct msg_hdr),
			 m.len - sizeof(struct msg_hdr));
		sent++;
		pump(&s, 0, NULL);
	}
	pump(&s, 2000, NULL);
	if (s.c[0].disconnected)
		result("expflood", "ok, a ended the session after %u exports", sent);
	else
		result("expflood", "%u exports of 4096 MRs accepted, session up", sent);
	hold(&s, hold_s, false);
out:
	sess_close(&s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* auth: the authentication handshake                                      */
/* ---------------------------------------------------------------------- */

/*
 * The proof of @role for @s, with @k: HMAC-SHA256 of struct auth_mac,
 * written down again from kmod/wire.h, computed with OpenSSL rather than
 * the kernel's crypto API.  @qpn: the QP numbers to bind it to, [i][0]
 * ours, [i][1] a's; NULL for the session's own.
 */
static void auth_mac(const struct sess *s, uint32_t role, const uint8_t *k,
		     unsigned int klen, const uint32_t (*qpn)[2], uint8_t *out)
{
	struct auth_mac m;
	unsigned int i, olen = MAC_LEN;

	memset(&m, 0, sizeof(m));
	strcpy(m.label, "kxfer auth v1");
	m.role = htole32(role);
	m.nqps = htole32(s->nqps);
	m.session_id = htole64(s->sid);
	m.incarnation = htole32(incarnation);
	memcpy(m.cnonce, s->cnonce, NONCE_LEN);
	memcpy(m.anonce, s->a_nonce, NONCE_LEN);
	memcpy(m.cnode, s->node, NAME_MAX_);
	memcpy(m.anode, s->a_node, NAME_MAX_);
	for (i = 0; i < s->nqps; i++) {
		m.qpn[i][0] = htole32(qpn ? qpn[i][0] : s->c[i].qp->qp_num);
		m.qpn[i][1] = htole32(qpn ? qpn[i][1] : s->c[i].remote_qpn);
	}
	if (!HMAC(EVP_sha256(), k, (int)klen, (const uint8_t *)&m, sizeof(m),
		  out, &olen) || olen != MAC_LEN) {
		say("HMAC failed\n");
		exit(1);
	}
}

static bool auth_answered(struct sess *s)
{
	return s->got_reply || s->got_fail || s->c[0].disconnected;
}

static void send_hello(struct sess *s, uint32_t features)
{
	struct msg_hello h = { .features = htole32(features) };

	send_msg(s, MSG_HELLO, (uint8_t *)&h + sizeof(h.h), sizeof(h) - sizeof(h.h));
}

/*
 * A challenge: a fresh nonce of ours and our proof for a's nonce, made
 * with @k (the role and QP numbers as given, NULL for the session's
 * own); without @k, zeros.  Kept in @c.
 */
static void send_challenge(struct sess *s, const uint8_t *k, uint32_t role,
			   const uint32_t (*qpn)[2],
			   struct msg_auth_challenge *c)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	if (k) {
		for (i = 0; i < NONCE_LEN; i++)
			s->cnonce[i] = (uint8_t)random();
		c->flags = htole32(AUTH_F_KEY);
		memcpy(c->nonce, s->cnonce, NONCE_LEN);
		auth_mac(s, role, k, key_len, qpn, c->mac);
	}
	send_msg(s, MSG_AUTH_CHALLENGE, (uint8_t *)c + sizeof(c->h),
		 sizeof(*c) - sizeof(c->h));
}

/* Connect as @node; a must offer authentication, with a nonce. */
static int auth_connect(struct sess *s, const char *node)
{
	static const uint8_t zero[NONCE_LEN];

	if (sess_connect(s, node, 1, -1))
		return -1;
	if (!(s->a_features & F_AUTH) || !memcmp(s->a_nonce, zero, NONCE_LEN)) {
		say("  %s: a's accept offers no authentication (%#x)\n", node,
		    s->a_features);
		return -1;
	}
	s->auth_open = true;
	send_hello(s, F_AUTH);
	return 0;
}

/*
 * How long a may take to answer, or to end a session, in the auth cases: it
 * takes milliseconds (a second where it delays a failure on purpose), but a
 * guest on a loaded host may not run for seconds.
 */
#define AUTH_WAIT_MS	20000

/* Wait for a's answer to a challenge: its REPLY or its AUTH_FAIL. */
static int auth_wait(struct sess *s)
{
	if (!pump(s, AUTH_WAIT_MS, auth_answered) || (!s->got_reply && !s->got_fail)) {
		say("  %s: no answer to the challenge\n", s->node);
		return -1;
	}
	return 0;
}

/* Did a prove -K's key in its REPLY? */
static bool auth_reply_ok(struct sess *s)
{
	uint8_t want[MAC_LEN];

	if (!s->got_reply || !(le32toh(s->reply.flags) & AUTH_F_KEY))
		return false;
	auth_mac(s, ROLE_ACCEPTOR, key, key_len, NULL, want);
	return !memcmp(want, s->reply.mac, MAC_LEN);
}

/*
 * a must end the session: tell us why with AUTH_FAIL @reason (0: with no
 * message), give us no export, and log "peer NODE: WHY (ERR)".
 */
static void auth_expect_end(struct sess *s, const char *name, uint32_t reason,
			    const char *why, int err)
{
	int64_t t0 = now_ms();

	if (!pump(s, AUTH_WAIT_MS, is_disconnected)) {
		result(name, "FAIL: a did not end the session within %d s",
		       slow_ms(AUTH_WAIT_MS) / 1000);
		return;
	}
	if (reason && (!s->got_fail || s->fail_reason != reason))
		result(name, "FAIL: a ended the session without AUTH_FAIL %u (%s %u)",
		       reason, s->got_fail ? "got" : "none", s->fail_reason);
	else if (s->nex || s->got_sync || s->got_reply)
		result(name, "FAIL: a answered, or advertised %u exports", s->nex);
	else
		result(name, "ok, a ended the session after %" PRId64 " ms%s",
		       now_ms() - t0, reason ? ", saying why" : "");
	expect_log("kxfer: peer %s: %s (%d)", s->node, why, err);
}

/* A full handshake with -K's key; our challenge is kept in @c. */
static int auth_login(struct sess *s, const char *node,
		      struct msg_auth_challenge *c)
{
	if (auth_connect(s, node))
		return -1;
	send_challenge(s, key, ROLE_CONNECTOR, NULL, c);
	if (auth_wait(s))
		return -1;
	if (!auth_reply_ok(s)) {
		say("  %s: %s\n", node, s->got_fail ? "a refused our proof" :
		    "a's proof does not match our key");
		return -1;
	}
	return 0;
}

#define WHY_MAC		"peer's proof does not match our key"
#define WHY_EARLY	"message before authentication"
#define WHY_LENGTH	"wrong length for the message type"

struct auth_case {
	const char *name;
	void (*run)(const struct auth_case *ac);
};

/* The right key: a accepts our proof, proves it too, then advertises. */
static void a_right(const struct auth_case *ac)
{
	struct msg_auth_challenge c;
	uint64_t stamp = htole64(1);
	struct sess s;

	if (auth_login(&s, "ha-right", &c)) {
		result(ac->name, "FAIL: no handshake with the right key");
		goto out;
	}
	send_msg(&s, MSG_SYNC_DONE, NULL, 0);
	send_msg(&s, MSG_KEEPALIVE, &stamp, 8);
	if (!pump(&s, AUTH_WAIT_MS, is_synced))
		result(ac->name, "FAIL: no export table after the handshake");
	else if (auth_expect && !list_eq(&s, auth_expect))
		result(ac->name, "FAIL: wanted exactly %s", auth_expect);
	else
		result(ac->name, "ok, a accepted our proof, proved the key, told %u exports",
		       s.nex);
	expect_log("kxfer: peer ha-right: authenticated in ");
out:
	sess_close(&s);
}

/* A wrong key: a refuses our proof, and proves nothing to us. */
static void a_wrong_key(const struct auth_case *ac)
{
	struct msg_auth_challenge c;
	uint8_t saved = key[0];
	struct sess s;

	if (auth_connect(&s, "ha-wrong-key")) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	key[0] ^= 1;
	send_challenge(&s, key, ROLE_CONNECTOR, NULL, &c);
	key[0] = saved;
	auth_expect_end(&s, ac->name, AUTH_FAIL_MAC, WHY_MAC, -EACCES);
out:
	sess_close(&s);
}

/* No key at all: a requires one. */
static void a_no_key(const struct auth_case *ac)
{
	struct msg_auth_challenge c;
	struct sess s;

	if (auth_connect(&s, "ha-no-key")) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	send_challenge(&s, NULL, ROLE_CONNECTOR, NULL, &c);
	auth_expect_end(&s, ac->name, AUTH_FAIL_NEED_KEY,
			"peer holds no key, and the listener requires one", -EACCES);
out:
	sess_close(&s);
}

/* An older peer: no HELLO, no challenge, straight to the export table. */
static void a_skip(const struct auth_case *ac)
{
	struct sess s;

	if (sess_connect(&s, "ha-skip", 1, -1)) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	s.auth_open = true;
	send_msg(&s, MSG_SYNC_DONE, NULL, 0);
	auth_expect_end(&s, ac->name, 0,
			"peer does not authenticate, and the listener requires it",
			-EACCES);
out:
	sess_close(&s);
}

/*
 * HELLO says authentication, then the end of an export table, or an
 * export, instead of a challenge.
 */
static void a_early(const struct auth_case *ac)
{
	struct sess s;
	struct cbuf m;

	if (auth_connect(&s, !strcmp(ac->name, "hello-skip") ? "ha-hello-skip" :
			 "ha-early-export")) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	if (!strcmp(ac->name, "hello-skip")) {
		send_msg(&s, MSG_SYNC_DONE, NULL, 0);
	} else {
		cb_export(&s, &m, "early", 1, 0, 1);
		send_msg(&s, MSG_EXPORT_ADD, m.b + sizeof(struct msg_hdr),
			 m.len - sizeof(struct msg_hdr));
	}
	auth_expect_end(&s, ac->name, 0, WHY_EARLY, -EACCES);
out:
	sess_close(&s);
}

/*
 * A challenge that held on one session, replayed on the next one; one
 * made with the right key and the new nonces but the old session's QP
 * numbers; one made for the acceptor's role: none holds.
 */
static void a_replay(const struct auth_case *ac)
{
	struct msg_auth_challenge c, d;
	char node[NAME_MAX_];
	uint32_t qpn[1][2];
	struct sess s, t;

	snprintf(node, sizeof(node), "ha-%s", ac->name);
	if (auth_login(&s, node, &c)) {
		result(ac->name, "FAIL: no handshake with the right key");
		sess_close(&s);
		return;
	}
	pump(&s, 300, NULL);
	qpn[0][0] = s.c[0].qp->qp_num;
	qpn[0][1] = s.c[0].remote_qpn;
	sess_close(&s);

	if (auth_connect(&t, node)) {
		result(ac->name, "FAIL: no second session");
		goto out;
	}
	if (!strcmp(ac->name, "replay")) {
		send_msg(&t, MSG_AUTH_CHALLENGE, (uint8_t *)&c + sizeof(c.h),
			 sizeof(c) - sizeof(c.h));
	} else if (!strcmp(ac->name, "stale-qpn")) {
		if (qpn[0][0] == t.c[0].qp->qp_num &&
		    qpn[0][1] == t.c[0].remote_qpn) {
			result(ac->name, "FAIL: both sessions had the same QP numbers");
			goto out;
		}
		send_challenge(&t, key, ROLE_CONNECTOR,
			       (const uint32_t (*)[2])qpn, &d);
	} else {
		send_challenge(&t, key, ROLE_ACCEPTOR, NULL, &d);
	}
	auth_expect_end(&t, ac->name, AUTH_FAIL_MAC, WHY_MAC, -EACCES);
out:
	sess_close(&t);
}

/* A second challenge, once authenticated. */
static void a_challenge_twice(const struct auth_case *ac)
{
	struct msg_auth_challenge c;
	struct sess s;

	if (auth_login(&s, "ha-challenge-twice", &c)) {
		result(ac->name, "FAIL: no handshake with the right key");
		goto out;
	}
	send_challenge(&s, key, ROLE_CONNECTOR, NULL, &c);
	if (!pump(&s, AUTH_WAIT_MS, is_disconnected))
		result(ac->name, "FAIL: a did not end the session within %d s",
		       slow_ms(AUTH_WAIT_MS) / 1000);
	else
		result(ac->name, "ok, a ended the session");
	expect_log("kxfer: peer ha-challenge-twice: unexpected authentication message (-71)");
out:
	sess_close(&s);
}

/*
 * AUTH_FAIL after a's REPLY: at once, it is our refusal of a's proof, and
 * a ends the session for that reason; after our SYNC_DONE (we took the
 * proof, and the session is up), it is out of turn, and a ends the
 * session as a protocol error.  "Up" as in sess_open: a's export table
 * alone is not enough, as a marks the session up only after the batch of
 * messages holding our SYNC_DONE; an answered keepalive sent behind it
 * is (a AUTH_FAIL sent before that made a end a session not yet up,
 * logged without "down:", in one 6.12 run of make check).
 */
static void a_fail_after(const struct auth_case *ac)
{
	bool late = !strcmp(ac->name, "fail-late");
	struct msg_auth_fail f = { .reason = htole32(AUTH_FAIL_MAC) };
	uint64_t stamp = htole64(0x1a7e);
	struct msg_auth_challenge c;
	char node[NAME_MAX_];
	struct sess s;

	snprintf(node, sizeof(node), "ha-%s", ac->name);
	if (auth_login(&s, node, &c)) {
		result(ac->name, "FAIL: no handshake with the right key");
		goto out;
	}
	if (late) {
		send_msg(&s, MSG_SYNC_DONE, NULL, 0);
		send_msg(&s, MSG_KEEPALIVE, &stamp, 8);
		if (!pump(&s, AUTH_WAIT_MS, is_synced)) {
			result(ac->name, "FAIL: no export table after the handshake");
			goto out;
		}
	}
	send_msg(&s, MSG_AUTH_FAIL, (uint8_t *)&f + sizeof(f.h),
		 sizeof(f) - sizeof(f.h));
	if (!pump(&s, AUTH_WAIT_MS, is_disconnected))
		result(ac->name, "FAIL: a did not end the session within %d s",
		       slow_ms(AUTH_WAIT_MS) / 1000);
	else
		result(ac->name, "ok, a ended the session");
	if (late)
		expect_log("kxfer: peer %s: down: unexpected authentication message (%d)",
			   node, -EPROTO);
	else
		expect_log("kxfer: peer %s: peer refused our proof: the keys differ (%d)",
			   node, -EACCES);
out:
	sess_close(&s);
}

/* One malformed or misplaced message right after HELLO. */
struct auth_raw {
	const char *name;
	unsigned int type, len;		/* len: what the header says and is sent */
	unsigned int flags;
	bool nonce, pad;
	const char *why;
	int err;
};

static const struct auth_raw auth_raws[] = {
	{ "trunc-challenge", MSG_AUTH_CHALLENGE, 87, AUTH_F_KEY, true, false,
	  WHY_LENGTH, -EINVAL },
	{ "long-challenge", MSG_AUTH_CHALLENGE, 89, AUTH_F_KEY, true, false,
	  WHY_LENGTH, -EINVAL },
	{ "hdr-challenge", MSG_AUTH_CHALLENGE, 16, 0, false, false,
	  WHY_LENGTH, -EINVAL },
	{ "challenge-pad", MSG_AUTH_CHALLENGE, 88, AUTH_F_KEY, true, true,
	  "non-zero padding", -EINVAL },
	{ "challenge-flags", MSG_AUTH_CHALLENGE, 88, AUTH_F_KEY | 4, true, false,
	  "unknown authentication flags", -EINVAL },
	{ "nonce-without-key", MSG_AUTH_CHALLENGE, 88, 0, true, false,
	  "nonce or proof without a key", -EINVAL },
	{ "reply-from-connector", MSG_AUTH_REPLY, 56, 0, false, false,
	  "unexpected authentication reply", -EPROTO },
	{ "trunc-reply", MSG_AUTH_REPLY, 55, 0, false, false, WHY_LENGTH, -EINVAL },
	{ "fail-no-reason", MSG_AUTH_FAIL, 24, 0, false, false,
	  "authentication failure without a reason", -EINVAL },
};

static void a_raw(const struct auth_case *ac)
{
	const struct auth_raw *r = NULL;
	char node[NAME_MAX_];
	struct sess s;
	struct cbuf m;
	uint32_t v;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(auth_raws); i++)
		if (!strcmp(auth_raws[i].name, ac->name))
			r = &auth_raws[i];
	snprintf(node, sizeof(node), "ha-%s", r->name);
	if (auth_connect(&s, node)) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	cb_hdr(&s, &m, r->type, r->len);
	v = htole32(r->flags);
	if (r->len >= 20)
		memcpy(m.b + sizeof(struct msg_hdr), &v, 4);
	if (r->pad)
		m.b[sizeof(struct msg_hdr) + 4] = 1;
	if (r->nonce)
		memset(m.b + sizeof(struct msg_hdr) + 8, 0x5a,
		       r->len - sizeof(struct msg_hdr) - 8);
	send_raw(&s, m.b, m.len);
	s.tx_seq++;
	auth_expect_end(&s, ac->name, 0, r->why, r->err);
out:
	sess_close(&s);
}

/*
 * HELLO, then nothing: a gives up after its handshake timeout (10 s).  The
 * bound above it is loose (a guest on a loaded host may not run for seconds)
 * but below the 40 s of a connection attempt, which ends a stalled handshake
 * too if nothing else does (auth.sh's t_auth_slow_keepalive).
 */
static void a_silent(const struct auth_case *ac)
{
	struct sess s;
	int64_t t0 = now_ms(), dt;

	if (auth_connect(&s, "ha-silent")) {
		result(ac->name, "FAIL: not connected");
		goto out;
	}
	/* keepalives are answered by pump(): only the handshake stalls */
	if (!pump(&s, 30000, is_disconnected)) {
		result(ac->name, "FAIL: still connected after %d s",
		       slow_ms(30000) / 1000);
		goto out;
	}
	dt = now_ms() - t0;
	if (dt >= 9000 && dt <= slow_ms(25000) && !s.nex && !s.got_reply)
		result(ac->name, "ok, a gave up after %" PRId64 " ms", dt);
	else
		result(ac->name, "FAIL: a gave up after %" PRId64 " ms, %u exports",
		       dt, s.nex);
	expect_log("kxfer: peer ha-silent: authentication timed out (-13)");
out:
	sess_close(&s);
}

static const struct auth_case auth_cases[] = {
	{ "right", a_right },
	{ "wrong-key", a_wrong_key },
	{ "no-key", a_no_key },
	{ "skip", a_skip },
	{ "hello-skip", a_early },
	{ "early-export", a_early },
	{ "replay", a_replay },
	{ "stale-qpn", a_replay },
	{ "wrong-role", a_replay },
	{ "challenge-twice", a_challenge_twice },
	{ "fail-refusal", a_fail_after },
	{ "fail-late", a_fail_after },
	{ "trunc-challenge", a_raw },
	{ "long-challenge", a_raw },
	{ "hdr-challenge", a_raw },
	{ "challenge-pad", a_raw },
	{ "challenge-flags", a_raw },
	{ "nonce-without-key", a_raw },
	{ "reply-from-connector", a_raw },
	{ "trunc-reply", a_raw },
	{ "fail-no-reason", a_raw },
	{ "silent", a_silent },
};

/*
 * A neighbour on a node's host: @n sessions as @node that announce the
 * handshake (HELLO with authentication) and never prove anything, each
 * opened again as soon as a ends it (its handshake timeout, 10 s), for
 * @hold_s seconds.  It holds every half-open slot of the address that it
 * can; prints "holding" once @n were accepted, and what a did: sessions
 * accepted, refused busy, and ended by a.  Needs no privilege: rdma_cm
 * and uverbs are open to every user.
 */
static int cmd_hold(unsigned int n, const char *node, int hold_s)
{
	struct sess *ss = calloc(n, sizeof(*ss));
	unsigned int i, up = 0, acc = 0, busy = 0, ended = 0;
	bool *open_ = calloc(n, sizeof(*open_)), said = false;
	int64_t end = now_ms() + (int64_t)hold_s * 1000;

	if (!ss || !open_) {
		result("hold", "FAIL: out of memory");
		return 0;
	}
	while (now_ms() < end) {
		for (i = 0; i < n; i++) {
			if (open_[i] && ss[i].c[0].disconnected) {
				sess_close(&ss[i]);
				open_[i] = false;
				up--;
				ended++;
			}
			if (!open_[i]) {
				if (!auth_connect(&ss[i], node)) {
					open_[i] = true;
					up++;
					acc++;
				} else {
					if (ss[i].c[0].rej_reason == REJ_BUSY)
						busy++;
					sess_close(&ss[i]);
				}
			}
			if (open_[i])
				pump(&ss[i], 0, NULL);
		}
		if (up == n && !said) {
			say("holding %u\n", n);
			said = true;
		}
		usleep(50000);
	}
	result("hold", "ok, %u sessions accepted, %u refused busy, %u ended by a",
	       acc, busy, ended);
	for (i = 0; i < n; i++)
		if (open_[i])
			sess_close(&ss[i]);
	free(open_);
	free(ss);
	return 0;
}

static int cmd_auth(const char *only)
{
	unsigned int i;

	if (!key_len) {
		result("auth", "FAIL: no key (-K)");
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(auth_cases); i++) {
		if (only && strcmp(only, auth_cases[i].name))
			continue;
		auth_cases[i].run(&auth_cases[i]);
		/* a's logging is rate-limited: 10 lines in 5 s */
		usleep(600000);
	}
	return 0;
}

/*
 * A session as @node (incarnation -I) through the handshake, with -K's
 * key or none: prints "up" (a took us for @node) or "refused" (and why).
 * Holds an up session -H seconds.
 */
static int cmd_supersede(const char *node, int hold_s)
{
	struct msg_auth_challenge c;
	uint64_t stamp = htole64(1);
	struct sess s;

	if (sess_connect(&s, node, 1, -1)) {
		result("supersede", "ok, refused at connect, reason %d",
		       s.c[0].rej_reason);
		goto out;
	}
	if (!(s.a_features & F_AUTH)) {
		result("supersede", "FAIL: a does not authenticate %s", node);
		goto out;
	}
	s.auth_open = true;
	send_hello(&s, F_AUTH);
	send_challenge(&s, key_len ? key : NULL, ROLE_CONNECTOR, NULL, &c);
	if (auth_wait(&s) || !auth_reply_ok(&s)) {
		pump(&s, AUTH_WAIT_MS, is_disconnected);
		result("supersede", "ok, refused: %s",
		       s.got_fail ? "AUTH_FAIL" : "disconnected");
		goto out;
	}
	send_msg(&s, MSG_SYNC_DONE, NULL, 0);
	send_msg(&s, MSG_KEEPALIVE, &stamp, 8);
	if (!pump(&s, AUTH_WAIT_MS, is_synced)) {
		result("supersede", "FAIL: after the handshake: export table %s, keepalive ack %s",
		       s.got_sync ? "seen" : "missing",
		       s.ka_acked ? "seen" : "missing");
		goto out;
	}
	result("supersede", "ok, up as %s", node);
	hold(&s, hold_s, true);
out:
	sess_close(&s);
	return 0;
}

static int read_key(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	n = fread(key, 1, sizeof(key), f);
	fclose(f);
	if (n < 16 || n > 64)
		return -1;
	key_len = (unsigned int)n;
	return 0;
}

/* ---------------------------------------------------------------------- */

static void print_usage(void)
{
	fputs("usage: hostile [-a ADDR] [-p PORT] [-L FILE] [-e EXPORTS] [-g EXPORT]\n"
	      "               [-H SEC] [-s SEED] [-S SRCADDR]\n"
	      "               pdata | halfopen | ctrl [CASE] | overrun | rdma |\n"
	      "               ackflood N | expflood N | halfflood N MAX | claim NODE |\n"
	      "               poison | standoff | mute TIMEOUT_MS | auth [CASE] |\n"
	      "               supersede NODE | hold N NODE\n"
	      "       (-K KEYFILE: the listener's secret; -I N: our incarnation)\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = "10.99.0.1", *expect = NULL, *granted = "hxe";
	unsigned int port = KXFER_PORT, seed = 0;
	const char *env = getenv("KXFER_SLOW");
	int opt, hold_s = 0, v = env ? atoi(env) : 1;
	int64_t t0 = now_ms();

	if (v > 1 && v <= 100)
		slow = v;

	while ((opt = getopt(argc, argv, "a:p:L:e:g:H:s:S:K:I:v")) != -1) {
		switch (opt) {
		case 'v':
			verbose = true;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = strtoul(optarg, NULL, 0);
			break;
		case 'L':
			logf_ = fopen(optarg, "a");
			if (!logf_) {
				perror(optarg);
				return 1;
			}
			break;
		case 'e':
			expect = optarg;
			break;
		case 'g':
			granted = optarg;
			break;
		case 'H':
			hold_s = atoi(optarg);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'K':
			if (read_key(optarg)) {
				fprintf(stderr, "%s: cannot read a key of 16 to 64 bytes\n",
					optarg);
				return 2;
			}
			break;
		case 'I':
			incarnation = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			src.sin_family = AF_INET;
			if (inet_pton(AF_INET, optarg, &src.sin_addr) != 1)
				print_usage();
			break;
		default:
			print_usage();
		}
	}
	if (optind >= argc)
		print_usage();
	if (!seed)
		seed = (unsigned int)time(NULL) ^ getpid();
	srandom(seed);
	say("seed %u\n", seed);
	dst.sin_family = AF_INET;
	dst.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1)
		print_usage();

	auth_expect = expect;
	if (!strcmp(argv[optind], "pdata"))
		cmd_pdata();
	else if (!strcmp(argv[optind], "halfopen"))
		cmd_halfopen();
	else if (!strcmp(argv[optind], "ctrl"))
		cmd_ctrl(argv[optind + 1]);
	else if (!strcmp(argv[optind], "overrun"))
		cmd_overrun();
	else if (!strcmp(argv[optind], "rdma"))
		cmd_rdma(expect, granted);
	else if (!strcmp(argv[optind], "ackflood") && argv[optind + 1])
		cmd_ackflood(strtoul(argv[optind + 1], NULL, 0), hold_s);
	else if (!strcmp(argv[optind], "expflood") && argv[optind + 1])
		cmd_expflood(strtoul(argv[optind + 1], NULL, 0), hold_s);
	else if (!strcmp(argv[optind], "claim") && argv[optind + 1] &&
		 strlen(argv[optind + 1]) < NAME_MAX_)
		cmd_claim(argv[optind + 1], expect);
	else if (!strcmp(argv[optind], "poison"))
		cmd_poison(granted, hold_s);
	else if (!strcmp(argv[optind], "standoff"))
		cmd_standoff();
	else if (!strcmp(argv[optind], "mute") && argv[optind + 1])
		cmd_mute(atoi(argv[optind + 1]));
	else if (!strcmp(argv[optind], "auth"))
		cmd_auth(argv[optind + 1]);
	else if (!strcmp(argv[optind], "supersede") && argv[optind + 1] &&
		 strlen(argv[optind + 1]) < NAME_MAX_)
		cmd_supersede(argv[optind + 1], hold_s);
	else if (!strcmp(argv[optind], "hold") && argv[optind + 1] &&
		 argv[optind + 2] && strlen(argv[optind + 2]) < NAME_MAX_)
		cmd_hold(strtoul(argv[optind + 1], NULL, 0), argv[optind + 2],
			 hold_s);
	else if (!strcmp(argv[optind], "halfflood") && argv[optind + 1] &&
		 argv[optind + 2])
		cmd_halfflood(strtoul(argv[optind + 1], NULL, 0),
			      strtoul(argv[optind + 2], NULL, 0), hold_s);
	else
		print_usage();

	say("summary: %u cases, %u failed; %u connections (%u rejected), %u control messages sent, "
	    "%u RDMA operations; from a: %u protocol violations, %u kernel-looking values; %"
	    PRId64 " ms\n",
	    n_cases, n_fail, n_conns, n_rejected, n_msgs, n_rdma, n_violations,
	    n_pointers, now_ms() - t0);
	return n_fail || n_violations || n_pointers ? 1 : 0;
}
