// SPDX-License-Identifier: GPL-2.0-only
/*
 * wire_test: host-side unit tests of kmod/wire.c, the checks applied to
 * everything a remote peer sends.  Built from the module's own source.
 *
 * Each check feeds one defect into an otherwise valid message and
 * expects its exact error; a generated corpus of truncations and random
 * byte flips must never be accepted with a length the checker did not
 * verify (run under -fsanitize=address,undefined by the Makefile).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_shim.h"
#include <linux/kxfer.h>
#include "wire.h"

#include "kselftest_harness.h"

static void put_name(__u8 *dst, const char *name)
{
	memset(dst, 0, KXFER_WIRE_NAME_MAX);
	memcpy(dst, name, strlen(name));
}

static unsigned int make_export(void *buf, unsigned int count, __u32 seq)
{
	struct kxfer_msg_export *m = buf;
	unsigned int len = sizeof(*m) + count * sizeof(m->me_mrs[0]);
	unsigned int i;

	memset(buf, 0, KXFER_CTRL_MSG_SIZE);
	kxfer_wire_hdr_init(&m->me_hdr, KXFER_MSG_EXPORT_ADD, len, seq, 0);
	put_name(m->me_name, "kv");
	m->me_len = cpu_to_le64((uint64_t)count << 21);
	m->me_gen = cpu_to_le64(1);
	m->me_access = cpu_to_le32(KXFER_ACCESS_WRITE);
	m->me_nmrs = cpu_to_le16(count);
	m->me_first = 0;
	m->me_count = cpu_to_le16(count);
	for (i = 0; i < count; i++) {
		m->me_mrs[i].wm_off = cpu_to_le64((uint64_t)i << 21);
		m->me_mrs[i].wm_len = cpu_to_le64(1 << 21);
		m->me_mrs[i].wm_rkey = cpu_to_le32(0x100 + i);
	}
	return len;
}

static void make_conn(struct kxfer_wire_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->wc_magic = cpu_to_le32(KXFER_WIRE_MAGIC);
	c->wc_version = cpu_to_le16(KXFER_WIRE_VERSION);
	c->wc_qp_index = 1;
	c->wc_qp_count = 4;
	c->wc_recv_credits = cpu_to_le16(32);
	put_name(c->wc_node, "node-b");
}

FIXTURE(wire) {
	unsigned char buf[KXFER_CTRL_MSG_SIZE];
	const char *why;
};

FIXTURE_SETUP(wire)
{
	memset(self->buf, 0, sizeof(self->buf));
	self->why = NULL;
}

FIXTURE_TEARDOWN(wire)
{
}

TEST_F(wire, name_ok)
{
	__u8 n[KXFER_WIRE_NAME_MAX];

	put_name(n, "kv-cache_0.1:a");
	EXPECT_EQ(0, kxfer_wire_check_name(n));
	memset(n, 'x', sizeof(n));
	n[31] = 0;
	EXPECT_EQ(0, kxfer_wire_check_name(n));
}

TEST_F(wire, name_bad)
{
	__u8 n[KXFER_WIRE_NAME_MAX];

	put_name(n, "");
	EXPECT_EQ(-EINVAL, kxfer_wire_check_name(n));
	put_name(n, "a b");
	EXPECT_EQ(-EINVAL, kxfer_wire_check_name(n));
	put_name(n, "a/b");
	EXPECT_EQ(-EINVAL, kxfer_wire_check_name(n));
	memset(n, 'x', sizeof(n));		/* no NUL */
	EXPECT_EQ(-EINVAL, kxfer_wire_check_name(n));
	put_name(n, "ab");
	n[5] = 'z';				/* garbage after the NUL */
	EXPECT_EQ(-EINVAL, kxfer_wire_check_name(n));
}

TEST_F(wire, conn_ok)
{
	struct kxfer_wire_conn c;

	make_conn(&c);
	EXPECT_EQ(0, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	/* CM may hand over more bytes than were sent (padding). */
	EXPECT_EQ(0, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
}

TEST_F(wire, conn_defects)
{
	struct kxfer_wire_conn c;

	make_conn(&c);
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(NULL, 0, &self->why));
	/* An older peer does not send wc_incarnation, the last field. */
	EXPECT_EQ(0, kxfer_wire_check_conn(&c, sizeof(c) - 4, &self->why));
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c) - 5, &self->why));
	EXPECT_STREQ("private data too short", self->why);
	c.wc_magic = cpu_to_le32(1);
	EXPECT_EQ(-EPROTO, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_version = cpu_to_le16(2);
	EXPECT_EQ(-EPROTO, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	EXPECT_STREQ("unsupported protocol version", self->why);
	make_conn(&c);
	c.wc_qp_index = 4;
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_qp_count = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_qp_count = KXFER_MAX_QPS + 1;
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_recv_credits = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_recv_credits = cpu_to_le16(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_recv_credits = cpu_to_le16(2);
	EXPECT_EQ(0, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_recv_credits = cpu_to_le16(1025);
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	/* a rail's join is the one flag there is */
	make_conn(&c);
	c.wc_flags = cpu_to_le16(KXFER_CONN_F_JOIN);
	EXPECT_EQ(0, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	make_conn(&c);
	c.wc_flags = cpu_to_le16(2);
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
	EXPECT_STREQ("unknown flags", self->why);
	make_conn(&c);
	put_name(c.wc_node, "bad name");
	EXPECT_EQ(-EINVAL, kxfer_wire_check_conn(&c, sizeof(c), &self->why));
}

TEST_F(wire, header_defects)
{
	struct kxfer_msg_hdr *h = (void *)self->buf;
	unsigned int len = sizeof(*h);

	kxfer_wire_hdr_init(h, KXFER_MSG_SYNC_DONE, len, 7, 3);
	EXPECT_EQ(0, kxfer_wire_check(h, len, 7, &self->why));
	EXPECT_EQ(-EBADMSG, kxfer_wire_check(h, len, 8, &self->why));
	EXPECT_STREQ("message out of sequence", self->why);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, len - 1, 7, &self->why));
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, KXFER_CTRL_MSG_SIZE + 1, 7,
					    &self->why));
	/* length field and bytes received disagree */
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, len + 8, 7, &self->why));
	h->mh_magic = 0;
	EXPECT_EQ(-EPROTO, kxfer_wire_check(h, len, 7, &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_SYNC_DONE, len, 7, 3);
	h->mh_version = 9;
	EXPECT_EQ(-EPROTO, kxfer_wire_check(h, len, 7, &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_SYNC_DONE, len, 7, 3);
	h->mh_pad = 1;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, len, 7, &self->why));
	kxfer_wire_hdr_init(h, 0, len, 7, 3);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, len, 7, &self->why));
	kxfer_wire_hdr_init(h, __KXFER_MSG_MAX, len, 7, 3);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, len, 7, &self->why));
	EXPECT_STREQ("unknown message type", self->why);
}

TEST_F(wire, fixed_length_types)
{
	struct kxfer_msg_hdr *h = (void *)self->buf;
	unsigned int ka = sizeof(struct kxfer_msg_keepalive);
	unsigned int del = sizeof(struct kxfer_msg_export_del);

	kxfer_wire_hdr_init(h, KXFER_MSG_KEEPALIVE, ka, 1, 0);
	EXPECT_EQ(0, kxfer_wire_check(h, ka, 1, &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_KEEPALIVE, ka - 1, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, ka - 1, 1, &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_CREDIT, sizeof(*h) + 4, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, sizeof(*h) + 4, 1, &self->why));

	kxfer_wire_hdr_init(h, KXFER_MSG_EXPORT_DEL, del, 1, 0);
	put_name(((struct kxfer_msg_export_del *)h)->md_name, "kv");
	EXPECT_EQ(0, kxfer_wire_check(h, del, 1, &self->why));
	put_name(((struct kxfer_msg_export_del *)h)->md_name, "");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, del, 1, &self->why));

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(h, KXFER_MSG_NOTIFY,
			    sizeof(struct kxfer_msg_notify), 1, 0);
	put_name(((struct kxfer_msg_notify *)h)->mn_name, "kv");
	EXPECT_EQ(0, kxfer_wire_check(h, sizeof(struct kxfer_msg_notify), 1,
				      &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_NOTIFY,
			    sizeof(struct kxfer_msg_notify) - 8, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, sizeof(struct kxfer_msg_notify) - 8,
					    1, &self->why));
	kxfer_wire_hdr_init(h, KXFER_MSG_NOTIFY,
			    sizeof(struct kxfer_msg_notify), 1, 0);
	put_name(((struct kxfer_msg_notify *)h)->mn_name, "a b");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(h, sizeof(struct kxfer_msg_notify), 1,
					    &self->why));
}

/* EXPORT_WITHDRAW and EXPORT_WITHDRAWN (the drain) are EXPORT_DEL's shape. */
TEST_F(wire, withdraw)
{
	struct kxfer_msg_export_del *m = (void *)self->buf;
	unsigned int len = sizeof(*m);
	unsigned int types[] = { KXFER_MSG_EXPORT_WITHDRAW,
				 KXFER_MSG_EXPORT_WITHDRAWN };
	unsigned int i;

	ASSERT_EQ(56, len);
	for (i = 0; i < 2; i++) {
		memset(self->buf, 0, sizeof(self->buf));
		kxfer_wire_hdr_init(&m->md_hdr, types[i], len, 1, 0);
		put_name(m->md_name, "kv");
		m->md_gen = cpu_to_le64(7);
		EXPECT_EQ(0, kxfer_wire_check(m, len, 1, &self->why));
		kxfer_wire_hdr_init(&m->md_hdr, types[i], len - 8, 1, 0);
		EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len - 8, 1, &self->why));
		EXPECT_STREQ("wrong length for the message type", self->why);
		kxfer_wire_hdr_init(&m->md_hdr, types[i], len + 8, 1, 0);
		EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len + 8, 1, &self->why));
		kxfer_wire_hdr_init(&m->md_hdr, types[i], len, 1, 0);
		put_name(m->md_name, "k/v");
		EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));
		EXPECT_STREQ("bad export name", self->why);
	}
	/* The feature bit is one a kxfer of this version offers. */
	EXPECT_EQ(KXFER_WIRE_F_DRAIN, KXFER_WIRE_FEATURES & KXFER_WIRE_F_DRAIN);
	EXPECT_EQ(4, KXFER_WIRE_F_DRAIN);
}

/*
 * EXPORT_TOKEN (capability-scoped exports): 72 bytes exactly, a valid
 * name, a token that is not all zeros.  Whether it was agreed on and
 * comes before its export is the session's to check (ctrl.c).
 */
TEST_F(wire, export_token)
{
	struct kxfer_msg_export_token *t = (void *)self->buf;
	unsigned int len = sizeof(*t);

	ASSERT_EQ(72, len);
	ASSERT_EQ(16, KXFER_MSG_EXPORT_TOKEN);
	ASSERT_EQ(KXFER_TOKEN_LEN, KXFER_WIRE_TOKEN_LEN);
	kxfer_wire_hdr_init(&t->mt_hdr, KXFER_MSG_EXPORT_TOKEN, len, 1, 0);
	put_name(t->mt_name, "nx1.scoped.0");
	t->mt_gen = cpu_to_le64(9);
	memset(t->mt_token, 0xa5, sizeof(t->mt_token));
	EXPECT_EQ(0, kxfer_wire_check(t, len, 1, &self->why));
	/* a single bit of token is a token */
	memset(t->mt_token, 0, sizeof(t->mt_token));
	t->mt_token[15] = 1;
	EXPECT_EQ(0, kxfer_wire_check(t, len, 1, &self->why));

	kxfer_wire_hdr_init(&t->mt_hdr, KXFER_MSG_EXPORT_TOKEN, len - 1, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(t, len - 1, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
	kxfer_wire_hdr_init(&t->mt_hdr, KXFER_MSG_EXPORT_TOKEN, len + 16, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(t, len + 16, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);

	kxfer_wire_hdr_init(&t->mt_hdr, KXFER_MSG_EXPORT_TOKEN, len, 1, 0);
	put_name(t->mt_name, "");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(t, len, 1, &self->why));
	EXPECT_STREQ("bad export name", self->why);
	memset(t->mt_name, 'k', sizeof(t->mt_name));	/* no NUL */
	EXPECT_EQ(-EINVAL, kxfer_wire_check(t, len, 1, &self->why));
	EXPECT_STREQ("bad export name", self->why);

	put_name(t->mt_name, "nx1.scoped.0");
	memset(t->mt_token, 0, sizeof(t->mt_token));
	EXPECT_EQ(-EINVAL, kxfer_wire_check(t, len, 1, &self->why));
	EXPECT_STREQ("export token of zeros", self->why);

	/* A feature bit a kxfer of this version offers, after MRS32. */
	EXPECT_EQ(16, KXFER_WIRE_F_TOKEN);
	EXPECT_EQ(KXFER_WIRE_F_TOKEN, KXFER_WIRE_FEATURES & KXFER_WIRE_F_TOKEN);
	EXPECT_EQ(8, KXFER_WIRE_F_MRS32);
}

/*
 * Rails (KXFER_WIRE_F_RAILS): RAIL_TOKEN, RAIL_JOIN and RAIL_JOINED, each
 * of its exact length, after EXPORT_TOKEN; a token names a session, a
 * join a session and a rail below KXFER_MAX_RAILS, with zero padding.
 */
TEST_F(wire, rails)
{
	struct kxfer_msg_rail_token *rt = (void *)self->buf;
	struct kxfer_msg_rail_join *rj = (void *)self->buf;
	struct kxfer_msg_rail_joined *rd = (void *)self->buf;
	struct kxfer_msg_rail_notify *rn = (void *)self->buf;
	struct kxfer_msg_rail_fence *rf = (void *)self->buf;

	ASSERT_EQ(17, KXFER_MSG_RAIL_TOKEN);
	ASSERT_EQ(18, KXFER_MSG_RAIL_JOIN);
	ASSERT_EQ(19, KXFER_MSG_RAIL_JOINED);
	ASSERT_EQ(20, KXFER_MSG_RAIL_NOTIFY);
	ASSERT_EQ(21, KXFER_MSG_RAIL_FENCE);
	ASSERT_EQ(22, KXFER_MSG_RAIL_FENCED);
	ASSERT_EQ(1U << 5, KXFER_WIRE_F_RAILS);
	ASSERT_EQ(56, sizeof(*rt));
	ASSERT_EQ(96, sizeof(*rj));
	ASSERT_EQ(48, sizeof(*rd));
	ASSERT_EQ(88, sizeof(*rn));
	ASSERT_EQ(32, sizeof(*rf));

	/* RAIL_NOTIFY: a number, not 0; 0 to 1024 bytes; zero padding */
	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&rn->rn_notify.mn_hdr, KXFER_MSG_RAIL_NOTIFY,
			    sizeof(*rn), 1, 0);
	put_name(rn->rn_notify.mn_name, "kv");
	rn->rn_seq = cpu_to_le64(1);
	EXPECT_EQ(0, kxfer_wire_check(rn, sizeof(*rn), 1, &self->why));
	rn->rn_seq = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rn, sizeof(*rn), 1, &self->why));
	EXPECT_STREQ("notification without a number", self->why);
	rn->rn_seq = cpu_to_le64(2);
	rn->rn_pad[1] = cpu_to_le16(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rn, sizeof(*rn), 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	rn->rn_pad[1] = 0;
	rn->rn_len = cpu_to_le16(KXFER_NOTIFY_MSG_MAX);
	kxfer_wire_hdr_init(&rn->rn_notify.mn_hdr, KXFER_MSG_RAIL_NOTIFY,
			    sizeof(*rn) + KXFER_NOTIFY_MSG_MAX, 1, 0);
	EXPECT_EQ(0, kxfer_wire_check(rn, sizeof(*rn) + KXFER_NOTIFY_MSG_MAX, 1,
				      &self->why));
	rn->rn_len = cpu_to_le16(KXFER_NOTIFY_MSG_MAX + 1);
	kxfer_wire_hdr_init(&rn->rn_notify.mn_hdr, KXFER_MSG_RAIL_NOTIFY,
			    sizeof(*rn) + KXFER_NOTIFY_MSG_MAX + 1, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rn, sizeof(*rn) + KXFER_NOTIFY_MSG_MAX + 1,
					    1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
	rn->rn_len = cpu_to_le16(4);
	kxfer_wire_hdr_init(&rn->rn_notify.mn_hdr, KXFER_MSG_RAIL_NOTIFY,
			    sizeof(*rn) + 3, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rn, sizeof(*rn) + 3, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);

	/* RAIL_FENCE and RAIL_FENCED: a rail below KXFER_MAX_RAILS */
	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&rf->rf_hdr, KXFER_MSG_RAIL_FENCE, sizeof(*rf), 1, 0);
	rf->rf_rail = cpu_to_le32(KXFER_MAX_RAILS - 1);
	EXPECT_EQ(0, kxfer_wire_check(rf, sizeof(*rf), 1, &self->why));
	rf->rf_rail = cpu_to_le32(KXFER_MAX_RAILS);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rf, sizeof(*rf), 1, &self->why));
	EXPECT_STREQ("bad rail in a fence", self->why);
	kxfer_wire_hdr_init(&rf->rf_hdr, KXFER_MSG_RAIL_FENCED, sizeof(*rf), 1, 0);
	rf->rf_rail = 0;
	rf->rf_pad = cpu_to_le32(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rf, sizeof(*rf), 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	kxfer_wire_hdr_init(&rf->rf_hdr, KXFER_MSG_RAIL_FENCED, sizeof(*rf) - 8,
			    1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rf, sizeof(*rf) - 8, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&rt->rt_hdr, KXFER_MSG_RAIL_TOKEN, sizeof(*rt), 1, 0);
	rt->rt_group = cpu_to_le64(7);
	EXPECT_EQ(0, kxfer_wire_check(rt, sizeof(*rt), 1, &self->why));
	rt->rt_group = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rt, sizeof(*rt), 1, &self->why));
	EXPECT_STREQ("rail token without a session", self->why);
	kxfer_wire_hdr_init(&rt->rt_hdr, KXFER_MSG_RAIL_TOKEN, sizeof(*rt) - 1,
			    1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rt, sizeof(*rt) - 1, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&rj->rj_hdr, KXFER_MSG_RAIL_JOIN, sizeof(*rj), 1, 0);
	rj->rj_group = cpu_to_le64(7);
	rj->rj_rail = cpu_to_le32(KXFER_MAX_RAILS - 1);
	EXPECT_EQ(0, kxfer_wire_check(rj, sizeof(*rj), 1, &self->why));
	rj->rj_rail = cpu_to_le32(KXFER_MAX_RAILS);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rj, sizeof(*rj), 1, &self->why));
	EXPECT_STREQ("bad rail or session in a join", self->why);
	rj->rj_rail = 0;
	rj->rj_group = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rj, sizeof(*rj), 1, &self->why));
	EXPECT_STREQ("bad rail or session in a join", self->why);
	rj->rj_group = cpu_to_le64(7);
	rj->rj_pad = cpu_to_le32(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rj, sizeof(*rj), 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&rd->rd_hdr, KXFER_MSG_RAIL_JOINED, sizeof(*rd), 1, 0);
	EXPECT_EQ(0, kxfer_wire_check(rd, sizeof(*rd), 1, &self->why));
	kxfer_wire_hdr_init(&rd->rd_hdr, KXFER_MSG_RAIL_JOINED, sizeof(*rd) + 8,
			    1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(rd, sizeof(*rd) + 8, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
}

TEST_F(wire, notify_desc)
{
	struct kxfer_msg_notify_desc *nd = (void *)self->buf;
	unsigned int len = sizeof(*nd);

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&nd->nd_notify.mn_hdr, KXFER_MSG_NOTIFY_DESC, len, 1, 0);
	put_name(nd->nd_notify.mn_name, "kv");
	nd->nd_token = cpu_to_le32(7);
	EXPECT_EQ(0, kxfer_wire_check(nd, len, 1, &self->why));

	nd->nd_pad = cpu_to_le32(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nd, len, 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	nd->nd_pad = 0;

	put_name(nd->nd_notify.mn_name, "a b");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nd, len, 1, &self->why));
	EXPECT_STREQ("bad export name", self->why);
	put_name(nd->nd_notify.mn_name, "kv");

	/* A NOTIFY's length is not a NOTIFY_DESC's. */
	kxfer_wire_hdr_init(&nd->nd_notify.mn_hdr, KXFER_MSG_NOTIFY_DESC,
			    sizeof(struct kxfer_msg_notify), 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nd, sizeof(struct kxfer_msg_notify),
					    1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
}

TEST_F(wire, notify_msg)
{
	struct kxfer_msg_notify_msg *nm = (void *)self->buf;
	unsigned int len = sizeof(*nm) + 5;

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG, len,
			    1, 0);
	put_name(nm->nm_notify.mn_name, "kv");
	nm->nm_len = cpu_to_le16(5);
	memcpy(nm->nm_data, "hello", 5);
	EXPECT_EQ(0, kxfer_wire_check(nm, len, 1, &self->why));

	/* The length says more, or less, than the message holds */
	nm->nm_len = cpu_to_le16(6);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, len, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
	nm->nm_len = cpu_to_le16(4);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, len, 1, &self->why));
	nm->nm_len = 0;
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG,
			    sizeof(*nm), 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, sizeof(*nm), 1, &self->why));
	/* Truncated below its own header */
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG,
			    sizeof(*nm) - 2, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, sizeof(*nm) - 2, 1,
					    &self->why));
	/* The largest, and one more */
	len = sizeof(*nm) + KXFER_NOTIFY_MSG_MAX;
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG, len,
			    1, 0);
	nm->nm_len = cpu_to_le16(KXFER_NOTIFY_MSG_MAX);
	EXPECT_EQ(0, kxfer_wire_check(nm, len, 1, &self->why));
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG,
			    len + 1, 1, 0);
	nm->nm_len = cpu_to_le16(KXFER_NOTIFY_MSG_MAX + 1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, len + 1, 1, &self->why));

	len = sizeof(*nm) + 5;
	kxfer_wire_hdr_init(&nm->nm_notify.mn_hdr, KXFER_MSG_NOTIFY_MSG, len,
			    1, 0);
	nm->nm_len = cpu_to_le16(5);
	nm->nm_pad[2] = cpu_to_le16(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, len, 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	nm->nm_pad[2] = 0;
	put_name(nm->nm_notify.mn_name, "a b");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(nm, len, 1, &self->why));
	EXPECT_STREQ("bad export name", self->why);
}

TEST_F(wire, hello)
{
	struct kxfer_msg_hello *mo = (void *)self->buf;

	memset(self->buf, 0, sizeof(self->buf));
	kxfer_wire_hdr_init(&mo->mo_hdr, KXFER_MSG_HELLO, sizeof(*mo), 1, 0);
	mo->mo_features = cpu_to_le32(0xffffffff);	/* unknown: ignored */
	EXPECT_EQ(0, kxfer_wire_check(mo, sizeof(*mo), 1, &self->why));
	/* a rail: 1..KXFER_MAX_RAILS, only with KXFER_WIRE_F_RAILS */
	mo->mo_rail = cpu_to_le32(KXFER_MAX_RAILS);
	EXPECT_EQ(0, kxfer_wire_check(mo, sizeof(*mo), 1, &self->why));
	mo->mo_rail = cpu_to_le32(KXFER_MAX_RAILS + 1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(mo, sizeof(*mo), 1, &self->why));
	EXPECT_STREQ("bad rail in a HELLO", self->why);
	mo->mo_rail = cpu_to_le32(1);
	mo->mo_features = cpu_to_le32(~KXFER_WIRE_F_RAILS);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(mo, sizeof(*mo), 1, &self->why));
	EXPECT_STREQ("bad rail in a HELLO", self->why);
	kxfer_wire_hdr_init(&mo->mo_hdr, KXFER_MSG_HELLO, sizeof(*mo) - 4, 1,
			    0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(mo, sizeof(*mo) - 4, 1,
					    &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
}

/* The handshake's messages: exact sizes, as Documentation/wire-protocol.rst */
TEST_F(wire, auth_sizes)
{
	/* version 1's 40 bytes, the features (44), the nonce (76) */
	EXPECT_EQ(40, offsetof(struct kxfer_wire_accept, wa_features));
	EXPECT_EQ(44, offsetof(struct kxfer_wire_accept, wa_nonce));
	EXPECT_EQ(76, sizeof(struct kxfer_wire_accept));
	EXPECT_EQ(88, sizeof(struct kxfer_msg_auth_challenge));
	EXPECT_EQ(56, sizeof(struct kxfer_msg_auth_reply));
	EXPECT_EQ(24, sizeof(struct kxfer_msg_auth_fail));
	EXPECT_EQ(296, sizeof(struct kxfer_wire_auth_mac));
}

TEST_F(wire, auth_challenge)
{
	struct kxfer_msg_auth_challenge *ac = (void *)self->buf;
	unsigned int len = sizeof(*ac);

	kxfer_wire_hdr_init(&ac->ac_hdr, KXFER_MSG_AUTH_CHALLENGE, len, 1, 0);
	/* no key: all zeros */
	EXPECT_EQ(0, kxfer_wire_check(ac, len, 1, &self->why));
	ac->ac_flags = cpu_to_le32(KXFER_AUTH_F_KEY);
	memset(ac->ac_nonce, 0xa5, sizeof(ac->ac_nonce));
	memset(ac->ac_mac, 0x3c, sizeof(ac->ac_mac));
	EXPECT_EQ(0, kxfer_wire_check(ac, len, 1, &self->why));

	ac->ac_pad = cpu_to_le32(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len, 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	ac->ac_pad = 0;
	ac->ac_flags = cpu_to_le32(KXFER_AUTH_F_KEY | 2);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len, 1, &self->why));
	EXPECT_STREQ("unknown authentication flags", self->why);
	/* without a key, neither a nonce nor a proof */
	ac->ac_flags = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len, 1, &self->why));
	EXPECT_STREQ("nonce or proof without a key", self->why);
	memset(ac->ac_nonce, 0, sizeof(ac->ac_nonce));
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len, 1, &self->why));
	memset(ac->ac_mac, 0, sizeof(ac->ac_mac));
	ac->ac_nonce[31] = 1;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len, 1, &self->why));
	ac->ac_nonce[31] = 0;
	EXPECT_EQ(0, kxfer_wire_check(ac, len, 1, &self->why));

	/* Truncated by a byte, or one too long */
	ac->ac_flags = cpu_to_le32(KXFER_AUTH_F_KEY);
	kxfer_wire_hdr_init(&ac->ac_hdr, KXFER_MSG_AUTH_CHALLENGE, len - 1, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len - 1, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
	kxfer_wire_hdr_init(&ac->ac_hdr, KXFER_MSG_AUTH_CHALLENGE, len + 1, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ac, len + 1, 1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
}

TEST_F(wire, auth_reply)
{
	struct kxfer_msg_auth_reply *ar = (void *)self->buf;
	unsigned int len = sizeof(*ar);

	kxfer_wire_hdr_init(&ar->ar_hdr, KXFER_MSG_AUTH_REPLY, len, 1, 0);
	EXPECT_EQ(0, kxfer_wire_check(ar, len, 1, &self->why));
	ar->ar_flags = cpu_to_le32(KXFER_AUTH_F_KEY);
	memset(ar->ar_mac, 0x3c, sizeof(ar->ar_mac));
	EXPECT_EQ(0, kxfer_wire_check(ar, len, 1, &self->why));

	/* Without a key, a proof is malformed */
	ar->ar_flags = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar, len, 1, &self->why));
	EXPECT_STREQ("nonce or proof without a key", self->why);
	memset(ar->ar_mac, 0, sizeof(ar->ar_mac));
	ar->ar_mac[31] = 1;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar, len, 1, &self->why));
	ar->ar_mac[31] = 0;
	EXPECT_EQ(0, kxfer_wire_check(ar, len, 1, &self->why));

	ar->ar_pad = cpu_to_le32(0x100);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar, len, 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	ar->ar_pad = 0;
	ar->ar_flags = cpu_to_le32(0x80000000);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar, len, 1, &self->why));
	EXPECT_STREQ("unknown authentication flags", self->why);

	/* A challenge's length is not a reply's */
	ar->ar_flags = 0;
	kxfer_wire_hdr_init(&ar->ar_hdr, KXFER_MSG_AUTH_REPLY,
			    sizeof(struct kxfer_msg_auth_challenge), 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar,
					    sizeof(struct kxfer_msg_auth_challenge),
					    1, &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
	kxfer_wire_hdr_init(&ar->ar_hdr, KXFER_MSG_AUTH_REPLY, len - 16, 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(ar, len - 16, 1, &self->why));
}

TEST_F(wire, auth_fail)
{
	struct kxfer_msg_auth_fail *af = (void *)self->buf;

	kxfer_wire_hdr_init(&af->af_hdr, KXFER_MSG_AUTH_FAIL, sizeof(*af), 1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(af, sizeof(*af), 1, &self->why));
	EXPECT_STREQ("authentication failure without a reason", self->why);
	af->af_reason = cpu_to_le32(KXFER_AUTH_FAIL_MAC);
	EXPECT_EQ(0, kxfer_wire_check(af, sizeof(*af), 1, &self->why));
	af->af_pad = cpu_to_le32(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(af, sizeof(*af), 1, &self->why));
	EXPECT_STREQ("non-zero padding", self->why);
	af->af_pad = 0;
	kxfer_wire_hdr_init(&af->af_hdr, KXFER_MSG_AUTH_FAIL, sizeof(*af) + 8,
			    1, 0);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(af, sizeof(*af) + 8, 1,
					    &self->why));
	EXPECT_STREQ("wrong length for the message type", self->why);
}

TEST_F(wire, export_ok)
{
	unsigned int len = make_export(self->buf, 3, 1);

	EXPECT_EQ(0, kxfer_wire_check(self->buf, len, 1, &self->why));
	len = make_export(self->buf, KXFER_WIRE_MRS_PER_MSG, 1);
	EXPECT_GE(KXFER_CTRL_MSG_SIZE, len);
	EXPECT_EQ(0, kxfer_wire_check(self->buf, len, 1, &self->why));
}

TEST_F(wire, export_defects)
{
	struct kxfer_msg_export *m = (void *)self->buf;
	unsigned int len;

	len = make_export(self->buf, 3, 1);
	m->me_count = cpu_to_le16(4);		/* more MRs than bytes */
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_first = cpu_to_le16(3);		/* first past the table */
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_nmrs = cpu_to_le16(2);		/* count past nmrs */
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	/* MR counts of 32 bits (KXFER_WIRE_F_MRS32), up to the bound */
	len = make_export(self->buf, 3, 1);
	m->me_nmrs = cpu_to_le16((KXFER_WIRE_MAX_MRS32 + 1) & 0xffff);
	m->me_nmrs_hi = cpu_to_le16((KXFER_WIRE_MAX_MRS32 + 1) >> 16);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));
	EXPECT_STREQ("bad MR table bounds", self->why);
	m->me_nmrs = cpu_to_le16(KXFER_WIRE_MAX_MRS32 & 0xffff);
	m->me_nmrs_hi = cpu_to_le16(KXFER_WIRE_MAX_MRS32 >> 16);
	EXPECT_EQ(0, kxfer_wire_check(m, len, 1, &self->why));
	EXPECT_EQ(KXFER_WIRE_MAX_MRS32, kxfer_wire_export_nmrs(m));
	/* a continuation past 65535, and one past the table */
	m->me_first = cpu_to_le16(3);
	m->me_first_hi = cpu_to_le16(1);
	EXPECT_EQ(0, kxfer_wire_check(m, len, 1, &self->why));
	EXPECT_EQ(65539, kxfer_wire_export_first(m));
	m->me_first_hi = cpu_to_le16(KXFER_WIRE_MAX_MRS32 >> 16);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_len = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_access = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_access = cpu_to_le32(0x80);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	m->me_pad = cpu_to_le16(1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	len = make_export(self->buf, 3, 1);
	put_name(m->me_name, "x y");
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	/* an MR past the export's end */
	len = make_export(self->buf, 3, 1);
	m->me_mrs[2].wm_len = cpu_to_le64((1 << 21) + 1);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));
	EXPECT_STREQ("MR outside its export", self->why);

	/* an MR whose offset + length wraps */
	len = make_export(self->buf, 3, 1);
	m->me_mrs[1].wm_len = cpu_to_le64(~0ULL);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	/* overlapping MRs */
	len = make_export(self->buf, 3, 1);
	m->me_mrs[1].wm_off = cpu_to_le64(1 << 20);
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));

	/* an empty MR */
	len = make_export(self->buf, 3, 1);
	m->me_mrs[0].wm_len = 0;
	EXPECT_EQ(-EINVAL, kxfer_wire_check(m, len, 1, &self->why));
}

/*
 * Every truncation and many random corruptions of a valid export
 * message: each is refused or, if accepted, still passes the invariants
 * a receiver relies on.  AddressSanitizer watches every read.
 */
TEST_F(wire, export_corpus)
{
	unsigned char *copy;
	unsigned int len, cut, i, accepted = 0;

	len = make_export(self->buf, 5, 1);
	for (cut = 0; cut < len; cut++) {
		copy = malloc(cut ? cut : 1);
		ASSERT_NE(NULL, copy);
		memcpy(copy, self->buf, cut);
		EXPECT_NE(0, kxfer_wire_check(copy, cut, 1, &self->why));
		free(copy);
	}
	srandom(12345);
	for (i = 0; i < 200000; i++) {
		unsigned int flips = 1 + random() % 4, f;

		copy = malloc(len);
		ASSERT_NE(NULL, copy);
		memcpy(copy, self->buf, len);
		for (f = 0; f < flips; f++)
			copy[random() % len] ^= 1 << (random() % 8);
		if (!kxfer_wire_check(copy, len, 1, &self->why)) {
			struct kxfer_msg_export *m = (void *)copy;
			unsigned int k, n = le16toh(m->me_count);
			uint64_t end = 0;

			accepted++;
			ASSERT_EQ(len, sizeof(*m) + n * sizeof(m->me_mrs[0]));
			for (k = 0; k < n; k++) {
				uint64_t off = le64toh(m->me_mrs[k].wm_off);
				uint64_t l = le64toh(m->me_mrs[k].wm_len);

				ASSERT_LE(end, off);
				ASSERT_LE(off + l, le64toh(m->me_len));
				ASSERT_LT(off, off + l);
				end = off + l;
			}
		}
		free(copy);
	}
	TH_LOG("%u of 200000 corrupted messages still valid", accepted);
}

TEST_HARNESS_MAIN
