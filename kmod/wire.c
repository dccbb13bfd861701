// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: checks of everything a remote peer sends (DESIGN §3).
 *
 * Pure logic, built into the module and into the host unit tests
 * (selftests/host/wire_test.c).  Every function here reads only the
 * bytes it is given, within the length it is given.
 */
#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <asm/byteorder.h>
#else
#include "kernel_shim.h"
#endif

#include <linux/kxfer.h>
#include "wire.h"

/**
 * kxfer_wire_check_name - is a fixed-size name field a valid name?
 * @name: KXFER_WIRE_NAME_MAX bytes
 *
 * 1 to 31 characters out of letters, digits and ". _ - :", NUL-padded.
 *
 * Return: 0 or -EINVAL.
 */
int kxfer_wire_check_name(const __u8 *name)
{
	unsigned int i;

	if (!name[0])
		return -EINVAL;
	for (i = 0; i < KXFER_WIRE_NAME_MAX && name[i]; i++) {
		__u8 c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-' || c == ':'))
			return -EINVAL;
	}
	if (i == KXFER_WIRE_NAME_MAX)
		return -EINVAL;		/* no terminating NUL */
	for (; i < KXFER_WIRE_NAME_MAX; i++)
		if (name[i])
			return -EINVAL;	/* garbage after the NUL */
	return 0;
}

/**
 * kxfer_wire_check_conn - check connection private data
 * @buf: the private data
 * @len: its length as received (may exceed the structure: CM pads)
 * @why: set to a reason on failure
 *
 * Return: 0, -EPROTO for a wrong magic or version, -EINVAL otherwise.
 */
int kxfer_wire_check_conn(const void *buf, unsigned int len, const char **why)
{
	const struct kxfer_wire_conn *c = buf;
	unsigned int count;

	/* wc_incarnation came last: a peer that does not send it is older */
	if (!buf || len < sizeof(*c) - sizeof(c->wc_incarnation)) {
		*why = "private data too short";
		return -EINVAL;
	}
	if (le32_to_cpu(c->wc_magic) != KXFER_WIRE_MAGIC) {
		*why = "bad magic";
		return -EPROTO;
	}
	if (le16_to_cpu(c->wc_version) != KXFER_WIRE_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTO;
	}
	count = c->wc_qp_count;
	if (!count || count > KXFER_MAX_QPS || c->wc_qp_index >= count) {
		*why = "bad QP index or count";
		return -EINVAL;
	}
	if (!kxfer_wire_credits_ok(c->wc_recv_credits)) {
		*why = "bad credit count";
		return -EINVAL;
	}
	if (le16_to_cpu(c->wc_flags) & ~KXFER_CONN_FLAGS) {
		*why = "unknown flags";
		return -EINVAL;
	}
	if (kxfer_wire_check_name(c->wc_node)) {
		*why = "bad node name";
		return -EINVAL;
	}
	return 0;
}

/* An export's name in a message.  Return: 0, or -EINVAL with @why. */
static int kxfer_wire_check_export_name(const __u8 *name, const char **why)
{
	if (!kxfer_wire_check_name(name))
		return 0;
	*why = "bad export name";
	return -EINVAL;
}

/* A message whose length its type does not allow. */
static int kxfer_wire_bad_len(const char **why)
{
	*why = "wrong length for the message type";
	return -EINVAL;
}

static int kxfer_wire_check_export(const struct kxfer_msg_export *m,
				   unsigned int len, const char **why)
{
	unsigned int nmrs, first, count, i;
	__u64 end = 0;

	if (len < sizeof(*m)) {
		*why = "export message too short";
		return -EINVAL;
	}
	if (kxfer_wire_check_export_name(m->me_name, why))
		return -EINVAL;
	if (!le64_to_cpu(m->me_len)) {
		*why = "empty export";
		return -EINVAL;
	}
	if (!le32_to_cpu(m->me_access) ||
	    (le32_to_cpu(m->me_access) & ~KXFER_ACCESS_ALL)) {
		*why = "bad export access";
		return -EINVAL;
	}
	nmrs = kxfer_wire_export_nmrs(m);
	first = kxfer_wire_export_first(m);
	count = le16_to_cpu(m->me_count);
	if (!nmrs || nmrs > KXFER_WIRE_MAX_MRS32 || !count ||
	    count > KXFER_WIRE_MRS_PER_MSG || first >= nmrs ||
	    count > nmrs - first) {
		*why = "bad MR table bounds";
		return -EINVAL;
	}
	if (len != sizeof(*m) + count * sizeof(m->me_mrs[0])) {
		*why = "export message length does not match its MR count";
		return -EINVAL;
	}
	if (m->me_pad) {
		*why = "non-zero padding";
		return -EINVAL;
	}
	/* Each MR lies inside the export and follows the one before. */
	for (i = 0; i < count; i++) {
		const struct kxfer_wire_mr *mr = &m->me_mrs[i];
		__u64 off = le64_to_cpu(mr->wm_off);
		__u64 mlen = le64_to_cpu(mr->wm_len);

		if (!mlen || off < end || off > le64_to_cpu(m->me_len) ||
		    mlen > le64_to_cpu(m->me_len) - off || mr->wm_pad) {
			*why = "MR outside its export";
			return -EINVAL;
		}
		end = off + mlen;
	}
	return 0;
}

static bool kxfer_wire_zero(const __u8 *p, unsigned int n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * The handshake's messages: exact lengths, zero padding, known flags, and
 * without KXFER_AUTH_F_KEY nothing but zeros where a key would matter.
 */
static int kxfer_wire_check_auth(const void *buf, unsigned int len,
				 const char **why)
{
	const struct kxfer_msg_hdr *h = buf;
	const struct kxfer_msg_auth_challenge *ac = buf;
	const struct kxfer_msg_auth_reply *ar = buf;
	const struct kxfer_msg_auth_fail *af = buf;
	__u32 flags;

	switch (h->mh_type) {
	case KXFER_MSG_AUTH_CHALLENGE:
		if (len != sizeof(*ac))
			break;
		if (ac->ac_pad) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		flags = le32_to_cpu(ac->ac_flags);
		if (flags & ~KXFER_AUTH_F_KEY) {
			*why = "unknown authentication flags";
			return -EINVAL;
		}
		if (!(flags & KXFER_AUTH_F_KEY) &&
		    (!kxfer_wire_zero(ac->ac_nonce, sizeof(ac->ac_nonce)) ||
		     !kxfer_wire_zero(ac->ac_mac, sizeof(ac->ac_mac)))) {
			*why = "nonce or proof without a key";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_AUTH_REPLY:
		if (len != sizeof(*ar))
			break;
		if (ar->ar_pad) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		flags = le32_to_cpu(ar->ar_flags);
		if (flags & ~KXFER_AUTH_F_KEY) {
			*why = "unknown authentication flags";
			return -EINVAL;
		}
		if (!(flags & KXFER_AUTH_F_KEY) &&
		    !kxfer_wire_zero(ar->ar_mac, sizeof(ar->ar_mac))) {
			*why = "nonce or proof without a key";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_AUTH_FAIL:
		if (len != sizeof(*af))
			break;
		if (af->af_pad) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		if (!af->af_reason) {
			*why = "authentication failure without a reason";
			return -EINVAL;
		}
		return 0;
	}
	return kxfer_wire_bad_len(why);
}

/* Rails: exact lengths, zero padding, a group and a rail in range. */
static int kxfer_wire_check_rail(const void *buf, unsigned int len,
				 const char **why)
{
	const struct kxfer_msg_hdr *h = buf;
	const struct kxfer_msg_rail_token *rt = buf;
	const struct kxfer_msg_rail_join *rj = buf;
	const struct kxfer_msg_rail_notify *rn = buf;
	const struct kxfer_msg_rail_fence *rf = buf;
	__u32 rail, n;

	switch (h->mh_type) {
	case KXFER_MSG_RAIL_TOKEN:
		if (len != sizeof(*rt))
			break;
		if (!rt->rt_group) {
			*why = "rail token without a session";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_RAIL_JOIN:
		if (len != sizeof(*rj))
			break;
		if (rj->rj_pad) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		rail = le32_to_cpu(rj->rj_rail);
		if (!rj->rj_group || rail >= KXFER_MAX_RAILS) {
			*why = "bad rail or session in a join";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_RAIL_JOINED:
		if (len != sizeof(struct kxfer_msg_rail_joined))
			break;
		return 0;
	case KXFER_MSG_RAIL_NOTIFY:
		if (len < sizeof(*rn))
			break;
		n = le16_to_cpu(rn->rn_len);
		if (n > KXFER_NOTIFY_MSG_MAX || len != sizeof(*rn) + n)
			break;
		if (kxfer_wire_check_export_name(rn->rn_notify.mn_name, why))
			return -EINVAL;
		if (rn->rn_pad[0] || rn->rn_pad[1] || rn->rn_pad[2]) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		if (!rn->rn_seq) {
			*why = "notification without a number";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_RAIL_FENCE:
	case KXFER_MSG_RAIL_FENCED:
		if (len != sizeof(*rf))
			break;
		if (rf->rf_pad) {
			*why = "non-zero padding";
			return -EINVAL;
		}
		if (le32_to_cpu(rf->rf_rail) >= KXFER_MAX_RAILS) {
			*why = "bad rail in a fence";
			return -EINVAL;
		}
		return 0;
	}
	return kxfer_wire_bad_len(why);
}

/* The header of any message: its fields, and the sequence number. */
static int kxfer_wire_check_hdr(const struct kxfer_msg_hdr *h,
				unsigned int len, __u32 expect_seq,
				const char **why)
{
	if (len < sizeof(*h)) {
		*why = "message shorter than its header";
		return -EINVAL;
	}
	if (len > KXFER_CTRL_MSG_SIZE) {
		*why = "message too long";
		return -EINVAL;
	}
	if (le32_to_cpu(h->mh_magic) != KXFER_WIRE_MAGIC) {
		*why = "bad magic";
		return -EPROTO;
	}
	if (h->mh_version != KXFER_WIRE_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTO;
	}
	if (le16_to_cpu(h->mh_len) != len) {
		*why = "length field does not match the bytes received";
		return -EINVAL;
	}
	if (h->mh_pad) {
		*why = "non-zero padding";
		return -EINVAL;
	}
	if (le32_to_cpu(h->mh_seq) != expect_seq) {
		*why = "message out of sequence";
		return -EBADMSG;
	}
	return 0;
}

/* A notification with its message: 1 to KXFER_NOTIFY_MSG_MAX bytes. */
static int kxfer_wire_check_notify_msg(const struct kxfer_msg_notify_msg *nm,
				       unsigned int len, const char **why)
{
	unsigned int n;

	if (len < sizeof(*nm))
		return kxfer_wire_bad_len(why);
	n = le16_to_cpu(nm->nm_len);
	if (!n || n > KXFER_NOTIFY_MSG_MAX || len != sizeof(*nm) + n)
		return kxfer_wire_bad_len(why);
	if (kxfer_wire_check_export_name(nm->nm_notify.mn_name, why))
		return -EINVAL;
	if (nm->nm_pad[0] || nm->nm_pad[1] || nm->nm_pad[2]) {
		*why = "non-zero padding";
		return -EINVAL;
	}
	return 0;
}

/* The description half of a NOTIFY by WRITE_WITH_IMM. */
static int kxfer_wire_check_notify_desc(const struct kxfer_msg_notify_desc *nd,
					unsigned int len, const char **why)
{
	if (len != sizeof(*nd))
		return kxfer_wire_bad_len(why);
	if (kxfer_wire_check_export_name(nd->nd_notify.mn_name, why))
		return -EINVAL;
	if (nd->nd_pad) {
		*why = "non-zero padding";
		return -EINVAL;
	}
	return 0;
}

/* An export's lookup token, before the EXPORT_ADD that starts it. */
static int kxfer_wire_check_export_token(const struct kxfer_msg_export_token *t,
					 unsigned int len, const char **why)
{
	unsigned int i;
	u8 any = 0;

	if (len != sizeof(*t))
		return kxfer_wire_bad_len(why);
	if (kxfer_wire_check_export_name(t->mt_name, why))
		return -EINVAL;
	/* All zeros is no token: a lookup never presents it. */
	for (i = 0; i < sizeof(t->mt_token); i++)
		any |= t->mt_token[i];
	if (!any) {
		*why = "export token of zeros";
		return -EINVAL;
	}
	return 0;
}

/**
 * kxfer_wire_check - check a received control message
 * @buf: the receive buffer
 * @len: bytes received
 * @expect_seq: the sequence number the next message must carry
 * @why: set to a reason on failure
 *
 * Return: 0 if every field may be used; -EPROTO for a wrong magic or
 * version, -EBADMSG for an out-of-sequence message, -EINVAL otherwise.
 */
int kxfer_wire_check(const void *buf, unsigned int len, __u32 expect_seq,
		     const char **why)
{
	const struct kxfer_msg_export_del *md = buf;
	const struct kxfer_msg_notify *n = buf;
	const struct kxfer_msg_hello *mo = buf;
	const struct kxfer_msg_hdr *h = buf;
	int ret;

	ret = kxfer_wire_check_hdr(h, len, expect_seq, why);
	if (ret)
		return ret;

	switch (h->mh_type) {
	case KXFER_MSG_CREDIT:
	case KXFER_MSG_SYNC_DONE:
		if (len != sizeof(*h))
			goto bad_len;
		return 0;
	case KXFER_MSG_KEEPALIVE:
	case KXFER_MSG_KEEPALIVE_ACK:
		if (len != sizeof(struct kxfer_msg_keepalive))
			goto bad_len;
		return 0;
	case KXFER_MSG_EXPORT_ADD:
		return kxfer_wire_check_export(buf, len, why);
	case KXFER_MSG_NOTIFY:
		if (len != sizeof(*n))
			goto bad_len;
		return kxfer_wire_check_export_name(n->mn_name, why);
	case KXFER_MSG_NOTIFY_MSG:
		return kxfer_wire_check_notify_msg(buf, len, why);
	case KXFER_MSG_HELLO:
		if (len != sizeof(*mo))
			goto bad_len;
		if (le32_to_cpu(mo->mo_rail) > KXFER_MAX_RAILS ||
		    (mo->mo_rail && !(le32_to_cpu(mo->mo_features) &
				      KXFER_WIRE_F_RAILS))) {
			*why = "bad rail in a HELLO";
			return -EINVAL;
		}
		return 0;
	case KXFER_MSG_AUTH_CHALLENGE:
	case KXFER_MSG_AUTH_REPLY:
	case KXFER_MSG_AUTH_FAIL:
		return kxfer_wire_check_auth(buf, len, why);
	case KXFER_MSG_NOTIFY_DESC:
		return kxfer_wire_check_notify_desc(buf, len, why);
	case KXFER_MSG_EXPORT_TOKEN:
		return kxfer_wire_check_export_token(buf, len, why);
	case KXFER_MSG_RAIL_TOKEN:
	case KXFER_MSG_RAIL_JOIN:
	case KXFER_MSG_RAIL_JOINED:
	case KXFER_MSG_RAIL_NOTIFY:
	case KXFER_MSG_RAIL_FENCE:
	case KXFER_MSG_RAIL_FENCED:
		return kxfer_wire_check_rail(buf, len, why);
	case KXFER_MSG_EXPORT_DEL:
	case KXFER_MSG_EXPORT_WITHDRAW:
	case KXFER_MSG_EXPORT_WITHDRAWN:
		if (len != sizeof(*md))
			goto bad_len;
		return kxfer_wire_check_export_name(md->md_name, why);
	default:
		*why = "unknown message type";
		return -EINVAL;
	}

bad_len:
	return kxfer_wire_bad_len(why);
}

/**
 * kxfer_wire_hdr_init - fill a message header
 * @h: the header
 * @type: message type
 * @len: whole message length
 * @seq: its sequence number
 * @credits: receives the sender returns with it
 */
void kxfer_wire_hdr_init(struct kxfer_msg_hdr *h, enum kxfer_msg_type type,
			 unsigned int len, __u32 seq, unsigned int credits)
{
	h->mh_magic = cpu_to_le32(KXFER_WIRE_MAGIC);
	h->mh_version = KXFER_WIRE_VERSION;
	h->mh_type = type;
	h->mh_len = cpu_to_le16(len);
	h->mh_seq = cpu_to_le32(seq);
	h->mh_credits = cpu_to_le16(credits);
	h->mh_pad = 0;
}
