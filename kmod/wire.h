/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: the session protocol on the wire, kernel to kernel (DESIGN §3).
 *
 * Pure C: this header and wire.c build both into the module and into the
 * host-side unit tests (selftests/host/), so nothing here may depend on
 * more than fixed-width types and byte-order helpers, which the host
 * build provides through selftests/host/kernel_shim.h.
 *
 * All multi-byte fields are little endian.  Every message is checked by
 * kxfer_wire_check() before any field is used: length, magic, version,
 * type, sequence, and each type's own bounds.  A message that fails ends
 * the session; nothing outside the receive buffer is ever touched.
 */
#ifndef _KXFER_WIRE_H
#define _KXFER_WIRE_H

#define KXFER_WIRE_MAGIC	0x6b786672	/* "kxfr" */
#define KXFER_WIRE_VERSION	1

#define KXFER_WIRE_NAME_MAX	32		/* == KXFER_NAME_MAX */
#define KXFER_CTRL_MSG_SIZE	4096		/* receive buffer size */

/*
 * Control receives a side may say it posted (wc_recv_credits,
 * wa_recv_credits).  An ordinary message needs two credits, the last
 * being kept for a CREDIT (ctrl.c), so a peer granting one could never
 * be sent anything.
 */
#define KXFER_WIRE_MIN_CREDITS	2
#define KXFER_WIRE_MAX_CREDITS	1024

static inline bool kxfer_wire_credits_ok(__le16 credits)
{
	u16 n = le16_to_cpu(credits);

	return n >= KXFER_WIRE_MIN_CREDITS && n <= KXFER_WIRE_MAX_CREDITS;
}

/*
 * Private data of rdma_connect() (one per QP).  rdma_cm leaves 56 bytes
 * of an IB CM REQ for the consumer; this uses all 56, and the CM pads
 * shorter private data with zeros.
 */
struct kxfer_wire_conn {
	__le32	wc_magic;
	__le16	wc_version;
	__u8	wc_qp_index;	/* this QP's index in the session */
	__u8	wc_qp_count;	/* QPs the session will have, 1..16 */
	__le64	wc_session_id;	/* random, the same on every QP of a session */
	__le16	wc_recv_credits; /* control receives posted on QP 0 */
	__le16	wc_flags;	/* KXFER_CONN_F_*, 0 but for a rail's join */
	__u8	wc_node[KXFER_WIRE_NAME_MAX]; /* NUL-padded node name */
	__le32	wc_incarnation;	/* random per module load, 0: not told */
};

/*
 * wc_flags: the connection is one more rail of a logical session whose
 * token the connector holds (KXFER_WIRE_F_RAILS): the acceptor answers
 * with a nonce and waits for RAIL_JOIN instead of a handshake of its own.
 * Sent only to an acceptor that gave a token; older ones refuse it.
 */
#define KXFER_CONN_F_JOIN	(1U << 0)
#define KXFER_CONN_FLAGS	KXFER_CONN_F_JOIN

#define KXFER_AUTH_NONCE_LEN	32
#define KXFER_AUTH_MAC_LEN	32	/* HMAC-SHA256 */

/*
 * rdma_accept() private data: the acceptor's identity, what it speaks
 * beyond version 1 (KXFER_WIRE_F_*) and, for a session it authenticates,
 * its nonce.  It sends wa_nonce only then (76 bytes; else 44, as a kxfer
 * without authentication does).  An older acceptor sends neither
 * wa_features nor wa_nonce: the IB CM pads the reply's private data with
 * zeros, so they read as none.
 */
struct kxfer_wire_accept {
	__le32	wa_magic;
	__le16	wa_version;
	__le16	wa_recv_credits;
	__u8	wa_node[KXFER_WIRE_NAME_MAX];
	__le32	wa_features;
	/* random, with KXFER_WIRE_F_AUTH only; the same on every QP */
	__u8	wa_nonce[KXFER_AUTH_NONCE_LEN];
};

/*
 * Features beyond version 1.  The acceptor says what it speaks in its
 * accept; a connector that speaks any of them answers with a HELLO as its
 * first control message (an older acceptor would refuse one, and an older
 * connector sends none).  Either side uses a feature only once the other
 * said it speaks it.
 */
#define KXFER_WIRE_F_NOTIFY_MSG	(1U << 0)	/* KXFER_MSG_NOTIFY_MSG */
/*
 * The KXFER_MSG_AUTH_* handshake.  An acceptor sets it in its accept,
 * with a nonce, only for a session it will authenticate (it holds a key
 * for the connector's node, or its listener requires authentication);
 * the connector then answers with a HELLO that has it and a CHALLENGE.
 */
#define KXFER_WIRE_F_AUTH	(1U << 1)
/*
 * Withdrawal that drains: the exporter announces a withdrawal
 * (EXPORT_WITHDRAW), the peer refuses new jobs to the export, lets the
 * ones it posted finish and answers (EXPORT_WITHDRAWN); only then are the
 * keys invalidated.  Without it, the keys die first and a peer still
 * writing loses its session.
 */
#define KXFER_WIRE_F_DRAIN	(1U << 2)
/*
 * Export MR tables of more than KXFER_WIRE_MAX_MRS entries: EXPORT_ADD's
 * counts take 32 bits (me_nmrs_hi, me_first_hi), up to
 * KXFER_WIRE_MAX_MRS32.  Sent only to a peer that speaks it.
 */
#define KXFER_WIRE_F_MRS32	(1U << 3)
/*
 * Capability-scoped exports: an export made with a token is advertised
 * only to a peer that speaks this, each advertisement of it preceded by
 * EXPORT_TOKEN, so that the peer's kernel can check its processes'
 * lookups; a peer without it is not given such an export at all.
 */
#define KXFER_WIRE_F_TOKEN	(1U << 4)
/*
 * Rails: one logical session over several connections, each its own
 * devices, QPs and PD (wire-protocol.rst, Rails).  The acceptor gives a
 * connector whose HELLO has it a token for the session (RAIL_TOKEN); a
 * later connection that says KXFER_CONN_F_JOIN proves it (RAIL_JOIN,
 * RAIL_JOINED) instead of authenticating on its own.
 */
#define KXFER_WIRE_F_RAILS	(1U << 5)
#define KXFER_WIRE_FEATURES	(KXFER_WIRE_F_NOTIFY_MSG | KXFER_WIRE_F_AUTH | \
				 KXFER_WIRE_F_DRAIN | KXFER_WIRE_F_MRS32 | \
				 KXFER_WIRE_F_TOKEN | KXFER_WIRE_F_RAILS)

/* rdma_reject() private data: why. */
struct kxfer_wire_reject {
	__le32	wr_magic;
	__le32	wr_reason;	/* enum kxfer_reject_reason */
};

enum kxfer_reject_reason {
	KXFER_REJ_MALFORMED = 1,	/* private data short or garbled */
	KXFER_REJ_VERSION,		/* magic or version mismatch */
	KXFER_REJ_NOT_ALLOWED,		/* source outside the allow list */
	KXFER_REJ_BUSY,			/* no resources, or a duplicate */
	KXFER_REJ_DEVICE,		/* QPs of one session on two devices */
	KXFER_REJ_AUTH,			/* authentication required, no key */
};

/* Control messages: SEND/RECV on QP 0 of a session. */
enum kxfer_msg_type {
	KXFER_MSG_CREDIT = 1,		/* only returns credits */
	KXFER_MSG_EXPORT_ADD,		/* an export, or part of its MR table */
	KXFER_MSG_EXPORT_DEL,		/* an export withdrawn */
	KXFER_MSG_SYNC_DONE,		/* the initial table is complete */
	KXFER_MSG_KEEPALIVE,		/* probe; answered at once */
	KXFER_MSG_KEEPALIVE_ACK,	/* answer; echoes the probe's stamp */
	KXFER_MSG_NOTIFY,		/* a NOTIFY job's data has landed */
	KXFER_MSG_NOTIFY_DESC,		/* what a WRITE_WITH_IMM notifies */
	KXFER_MSG_HELLO,		/* the connector's features */
	KXFER_MSG_NOTIFY_MSG,		/* a NOTIFY with the sender's bytes */
	KXFER_MSG_AUTH_CHALLENGE,	/* connector: its nonce and proof */
	KXFER_MSG_AUTH_REPLY,		/* acceptor: its proof */
	KXFER_MSG_AUTH_FAIL,		/* either: why it ends the session */
	KXFER_MSG_EXPORT_WITHDRAW,	/* an export goes: drain, then answer */
	KXFER_MSG_EXPORT_WITHDRAWN,	/* nothing of ours is left in flight */
	KXFER_MSG_EXPORT_TOKEN = 16,	/* the token of the next EXPORT_ADD */
	KXFER_MSG_RAIL_TOKEN,		/* acceptor: the session's join token */
	KXFER_MSG_RAIL_JOIN,		/* connector: this connection joins */
	KXFER_MSG_RAIL_JOINED,		/* acceptor: it did, and its proof */
	KXFER_MSG_RAIL_NOTIFY,		/* a NOTIFY numbered for the session */
	KXFER_MSG_RAIL_FENCE,		/* connector: end your side of a rail */
	KXFER_MSG_RAIL_FENCED,		/* acceptor: it is ended */
	__KXFER_MSG_MAX,
};

struct kxfer_msg_hdr {
	__le32	mh_magic;
	__u8	mh_version;
	__u8	mh_type;	/* enum kxfer_msg_type */
	__le16	mh_len;		/* whole message, header included */
	__le32	mh_seq;		/* 1, 2, ... per direction */
	__le16	mh_credits;	/* receives reposted since the last message */
	__le16	mh_pad;		/* 0 */
};

/* One memory region of an export: remote offset range and its key. */
struct kxfer_wire_mr {
	__le64	wm_off;		/* first byte of the export it covers */
	__le64	wm_len;
	__le64	wm_iova;	/* remote address of wm_off */
	__le32	wm_rkey;
	__le32	wm_pad;
};

struct kxfer_msg_export {
	struct kxfer_msg_hdr	me_hdr;
	__u8	me_name[KXFER_WIRE_NAME_MAX];
	__le64	me_len;
	__le64	me_gen;		/* generation: a newer one replaces */
	__le32	me_access;	/* KXFER_ACCESS_* */
	__le16	me_nmrs;	/* MRs of the whole export (low 16 bits) */
	__le16	me_first;	/* index of its first MR here (low 16 bits) */
	__le16	me_count;	/* MRs in this message */
	__le16	me_nmrs_hi;	/* KXFER_WIRE_F_MRS32: high 16 bits, else 0 */
	__le16	me_first_hi;	/* KXFER_WIRE_F_MRS32: high 16 bits, else 0 */
	__le16	me_pad;		/* 0 */
	struct kxfer_wire_mr me_mrs[];
};

static inline __u32 kxfer_wire_export_nmrs(const struct kxfer_msg_export *m)
{
	return le16_to_cpu(m->me_nmrs) |
	       (__u32)le16_to_cpu(m->me_nmrs_hi) << 16;
}

static inline __u32 kxfer_wire_export_first(const struct kxfer_msg_export *m)
{
	return le16_to_cpu(m->me_first) |
	       (__u32)le16_to_cpu(m->me_first_hi) << 16;
}

#define KXFER_WIRE_MRS_PER_MSG \
	((KXFER_CTRL_MSG_SIZE - sizeof(struct kxfer_msg_export)) / \
	 sizeof(struct kxfer_wire_mr))

/*
 * EXPORT_DEL, and with KXFER_WIRE_F_DRAIN, EXPORT_WITHDRAW (the exporter:
 * this export is going) and EXPORT_WITHDRAWN (the peer: none of its jobs
 * to it is left in flight, it forgot it), which have the same layout.
 */
struct kxfer_msg_export_del {
	struct kxfer_msg_hdr	md_hdr;
	__u8	md_name[KXFER_WIRE_NAME_MAX];
	__le64	md_gen;
};

/*
 * EXPORT_TOKEN (KXFER_WIRE_F_TOKEN): the export the next EXPORT_ADD
 * starts (me_first 0) is capability-scoped, found only by a lookup that
 * presents this token.  It comes right before that EXPORT_ADD, of the
 * same name and generation, each time the export is advertised.
 */
#define KXFER_WIRE_TOKEN_LEN	16		/* == KXFER_TOKEN_LEN */

struct kxfer_msg_export_token {
	struct kxfer_msg_hdr	mt_hdr;
	__u8	mt_name[KXFER_WIRE_NAME_MAX];
	__le64	mt_gen;
	__u8	mt_token[KXFER_WIRE_TOKEN_LEN];
};

/*
 * Sent on QP 0 only after every work request of the job completed, that
 * is, after the peer's NIC acknowledged all of its data, on every QP.
 */
struct kxfer_msg_notify {
	struct kxfer_msg_hdr	mn_hdr;
	__u8	mn_name[KXFER_WIRE_NAME_MAX];	/* the receiver's export */
	__le64	mn_gen;
	__le64	mn_value;
	__le64	mn_bytes;
};

/*
 * A NOTIFY job on a session of one QP ends with a WRITE_WITH_IMM whose
 * immediate is a token; this message, sent on the same QP before or
 * after it, says what the token notifies.  The receiver delivers the
 * notification when it has both.  A sender has at most
 * KXFER_NOTIFY_IMM_MAX tokens outstanding (sent and not yet ended), so
 * a receiver never holds more halves than that.
 */
#define KXFER_NOTIFY_IMM_MAX	16

struct kxfer_msg_notify_desc {
	struct kxfer_msg_notify	nd_notify;	/* its mn_hdr is the header */
	__le32	nd_token;
	__le32	nd_pad;		/* 0 */
};

/* Bytes a notification may carry (KXFER_MSG_NOTIFY_MSG) */
#define KXFER_NOTIFY_MSG_MAX	1024

/* A NOTIFY, sent as kxfer_msg_notify is, with the job's message. */
struct kxfer_msg_notify_msg {
	struct kxfer_msg_notify	nm_notify;	/* its mn_hdr is the header */
	__le16	nm_len;		/* bytes at nm_data, 1..KXFER_NOTIFY_MSG_MAX */
	__le16	nm_pad[3];	/* 0 */
	__u8	nm_data[];
};

/*
 * The connector's features (KXFER_WIRE_F_*), its first control message.
 * With KXFER_WIRE_F_RAILS, a rail of a peer over several says which one,
 * so that the acceptor knows the first connection's rail as well as a
 * join's (RAIL_FENCE names rails).
 */
struct kxfer_msg_hello {
	struct kxfer_msg_hdr	mo_hdr;
	__le32	mo_features;	/* unknown bits are ignored */
	__le32	mo_rail;	/* its rail + 1 (KXFER_WIRE_F_RAILS), else 0 */
};

/*
 * Authentication (KXFER_WIRE_F_AUTH): each side proves that it holds the
 * secret both share with HMAC-SHA256 over struct kxfer_wire_auth_mac, so
 * that a proof holds for one session only.  The connector proves first,
 * answering the acceptor's nonce of the accept, so that an acceptor
 * gives its proof to no one who has not proven the key.  Before the
 * handshake ends, only CREDIT, KEEPALIVE, KEEPALIVE_ACK, HELLO and these
 * messages may be sent; no export is advertised
 * (Documentation/wire-protocol.rst).
 */
#define KXFER_AUTH_F_KEY	(1U << 0)	/* the sender holds a key */

/*
 * The connector's first message after its HELLO: its nonce, and its
 * proof for the acceptor's nonce.  Without KXFER_AUTH_F_KEY (it holds no
 * key for this peer), zeros.
 */
struct kxfer_msg_auth_challenge {
	struct kxfer_msg_hdr	ac_hdr;
	__le32	ac_flags;		/* KXFER_AUTH_F_KEY or 0 */
	__le32	ac_pad;			/* 0 */
	__u8	ac_nonce[KXFER_AUTH_NONCE_LEN];
	__u8	ac_mac[KXFER_AUTH_MAC_LEN];
};

/*
 * The acceptor's answer, once it checked the connector's proof: with
 * KXFER_AUTH_F_KEY, its own proof; without (the session goes on
 * unauthenticated), zeros.
 */
struct kxfer_msg_auth_reply {
	struct kxfer_msg_hdr	ar_hdr;
	__le32	ar_flags;		/* KXFER_AUTH_F_KEY or 0 */
	__le32	ar_pad;			/* 0 */
	__u8	ar_mac[KXFER_AUTH_MAC_LEN];
};

enum kxfer_auth_fail_reason {
	KXFER_AUTH_FAIL_MAC = 1,	/* your proof does not match my key */
	KXFER_AUTH_FAIL_NO_KEY,		/* I hold no key for you, and need one */
	KXFER_AUTH_FAIL_NEED_KEY,	/* you hold no key, and I need one */
	/* a rail's join: no such session here, or the proof does not match */
	KXFER_AUTH_FAIL_JOIN,
	/* a rail's join to a session that exists, refused for now */
	KXFER_AUTH_FAIL_JOIN_REFUSED,
};

/* Either side's last message: why it ends the session. */
struct kxfer_msg_auth_fail {
	struct kxfer_msg_hdr	af_hdr;
	__le32	af_reason;		/* enum kxfer_auth_fail_reason, not 0 */
	__le32	af_pad;			/* 0 */
};

#define KXFER_AUTH_LABEL	"kxfer auth v1"
enum {
	KXFER_AUTH_ROLE_ACCEPTOR = 1,	/* the proof in AUTH_REPLY */
	KXFER_AUTH_ROLE_CONNECTOR,	/* the proof in AUTH_CHALLENGE */
};

/*
 * What a proof is the HMAC-SHA256 of, keyed with the secret: never sent,
 * built by both sides from what they know of the session.  The nonces
 * make it fresh, the role keeps one side's proof from serving as the
 * other's, and the names, session id, incarnation and QP numbers bind it
 * to this one session: a proof seen on one session is worth nothing on
 * another.
 */
struct kxfer_wire_auth_mac {
	__u8	am_label[16];		/* KXFER_AUTH_LABEL, NUL-padded */
	__le32	am_role;		/* KXFER_AUTH_ROLE_* */
	__le32	am_nqps;		/* the session's QP count */
	__le64	am_session_id;		/* wc_session_id */
	__le32	am_incarnation;		/* the connector's wc_incarnation */
	__le32	am_pad;			/* 0 */
	__u8	am_cnonce[KXFER_AUTH_NONCE_LEN];	/* ac_nonce */
	__u8	am_anonce[KXFER_AUTH_NONCE_LEN];	/* wa_nonce */
	__u8	am_cnode[KXFER_WIRE_NAME_MAX];	/* wc_node */
	__u8	am_anode[KXFER_WIRE_NAME_MAX];	/* wa_node */
	/* [i][0] the connector's QP number of QP i, [i][1] the acceptor's */
	__le32	am_qpn[KXFER_MAX_QPS][2];	/* 0 past am_nqps */
};

/*
 * Rails (KXFER_WIRE_F_RAILS).  The acceptor's RAIL_TOKEN, once the
 * connection it is sent on has authenticated (or needs not): the id of
 * the logical session here and a secret a later connection proves to
 * join it.  Sent once per connection that has no session yet, only to a
 * connector whose HELLO had KXFER_WIRE_F_RAILS.
 */
#define KXFER_RAIL_TOKEN_LEN	32

struct kxfer_msg_rail_token {
	struct kxfer_msg_hdr	rt_hdr;
	__le64	rt_group;		/* random, not 0 */
	__u8	rt_token[KXFER_RAIL_TOKEN_LEN];
};

/*
 * The connector's first message after its HELLO on a connection made
 * with KXFER_CONN_F_JOIN: which session it joins as which rail, its
 * nonce, and its proof of the token (HMAC-SHA256 keyed with it, over
 * struct kxfer_wire_rail_mac, role KXFER_AUTH_ROLE_CONNECTOR).
 */
struct kxfer_msg_rail_join {
	struct kxfer_msg_hdr	rj_hdr;
	__le64	rj_group;		/* rt_group */
	__le32	rj_rail;		/* 0..KXFER_MAX_RAILS - 1 (uapi) */
	__le32	rj_pad;			/* 0 */
	__u8	rj_nonce[KXFER_AUTH_NONCE_LEN];
	__u8	rj_mac[KXFER_AUTH_MAC_LEN];
};

/* The acceptor's answer: its proof, role KXFER_AUTH_ROLE_ACCEPTOR. */
struct kxfer_msg_rail_joined {
	struct kxfer_msg_hdr	rd_hdr;
	__u8	rd_mac[KXFER_AUTH_MAC_LEN];
};

#define KXFER_RAIL_LABEL	"kxfer rail v1"

/*
 * A NOTIFY of a connector's job over rails, whose job may be posted again
 * on another rail when its rail fails (and so notify again): as NOTIFY,
 * or NOTIFY_MSG with rn_len bytes, with a number for the notification,
 * 1, 2, ... per logical session, the same each time it is sent.  The
 * acceptor delivers each number once, whatever rail it comes on, and
 * remembers the last KXFER_RAIL_NOTIFY_WINDOW numbers: a connector does
 * not send a number again once it numbered that many more after it.
 */
#define KXFER_RAIL_NOTIFY_WINDOW	65536

struct kxfer_msg_rail_notify {
	struct kxfer_msg_notify	rn_notify;	/* its mn_hdr is the header */
	__le64	rn_seq;		/* not 0 */
	__le16	rn_len;		/* bytes at rn_data, 0..KXFER_NOTIFY_MSG_MAX */
	__le16	rn_pad[3];	/* 0 */
	__u8	rn_data[];
};

/*
 * RAIL_FENCE, the connector's, on a rail that is up: a connection of its
 * rail rf_rail failed, end it here, its QPs in the error state, so
 * that no packet of it still on the way lands after a job posted again
 * on another rail.  RAIL_FENCED, the acceptor's answer once it did (or
 * had no such connection), with the same body.
 */
struct kxfer_msg_rail_fence {
	struct kxfer_msg_hdr	rf_hdr;
	__le32	rf_rail;		/* 0..KXFER_MAX_RAILS - 1 */
	__le32	rf_pad;			/* 0 */
	__le64	rf_sid;		/* the failed connection's wc_session_id */
};

/*
 * What a join's proofs are the HMAC of, keyed with the token: as struct
 * kxfer_wire_auth_mac, with the session and the rail; never sent.
 */
struct kxfer_wire_rail_mac {
	__u8	rm_label[16];		/* KXFER_RAIL_LABEL, NUL-padded */
	__le32	rm_role;		/* KXFER_AUTH_ROLE_* */
	__le32	rm_rail;		/* rj_rail */
	__le64	rm_group;		/* rj_group */
	__le64	rm_session_id;		/* this connection's wc_session_id */
	__le32	rm_incarnation;		/* the connector's wc_incarnation */
	__le32	rm_nqps;		/* this connection's QP count */
	__u8	rm_cnonce[KXFER_AUTH_NONCE_LEN];	/* rj_nonce */
	__u8	rm_anonce[KXFER_AUTH_NONCE_LEN];	/* wa_nonce */
	__u8	rm_cnode[KXFER_WIRE_NAME_MAX];	/* wc_node */
	__u8	rm_anode[KXFER_WIRE_NAME_MAX];	/* wa_node */
	__le32	rm_qpn[KXFER_MAX_QPS][2];	/* as am_qpn */
};

struct kxfer_msg_keepalive {
	struct kxfer_msg_hdr	mk_hdr;
	__le64	mk_stamp;	/* sender's clock, echoed back */
};

/*
 * Memory regions of one export a sender offers a peer: KXFER_WIRE_MAX_MRS
 * to one without KXFER_WIRE_F_MRS32, else KXFER_WIRE_MAX_MRS32.  A
 * receiver takes up to KXFER_WIRE_MAX_MRS32 either way; max_remote_mrs
 * (its default the same) bounds all of a session's exports together.
 */
#define KXFER_WIRE_MAX_MRS	4096
#define KXFER_WIRE_MAX_MRS32	262144

int kxfer_wire_check_name(const __u8 *name);
int kxfer_wire_check(const void *buf, unsigned int len, __u32 expect_seq,
		     const char **why);
int kxfer_wire_check_conn(const void *buf, unsigned int len,
			  const char **why);
void kxfer_wire_hdr_init(struct kxfer_msg_hdr *h, enum kxfer_msg_type type,
			 unsigned int len, __u32 seq, unsigned int credits);

#endif /* _KXFER_WIRE_H */
