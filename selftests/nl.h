/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer selftests: a minimal generic netlink client over a raw socket,
 * so that tests see the kernel's exact errno and extack message without
 * a library in between.
 */
#ifndef KXFER_SELFTEST_NL_H
#define KXFER_SELFTEST_NL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/kxfer.h>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

struct knl {
	int fd;
	uint16_t family;
	uint32_t seq;
	char extack[256];	/* message of the last refusal */
	char buf[16384];	/* request under construction, then replies */
	size_t len;
};

#define KNL_NLA_OK(nla, rem) ((rem) >= (int)sizeof(struct nlattr) && \
			      (nla)->nla_len >= sizeof(struct nlattr) && \
			      (nla)->nla_len <= (rem))
#define KNL_NLA_NEXT(nla, rem) ((rem) -= NLA_ALIGN((nla)->nla_len), \
				(struct nlattr *)((char *)(nla) + NLA_ALIGN((nla)->nla_len)))
#define KNL_NLA_DATA(nla) ((void *)((char *)(nla) + NLA_HDRLEN))

static inline void knl_begin(struct knl *nl, uint16_t type, uint8_t cmd,
			     uint16_t flags)
{
	struct nlmsghdr *h = (struct nlmsghdr *)nl->buf;
	struct genlmsghdr *g = NLMSG_DATA(h);

	memset(nl->buf, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	h->nlmsg_type = type;
	/* Always ask for an ACK: it ends the reply of a "do" request. */
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	h->nlmsg_seq = ++nl->seq;
	g->cmd = cmd;
	g->version = 1;
	nl->len = NLMSG_HDRLEN + GENL_HDRLEN;
}

static inline void knl_put(struct knl *nl, uint16_t type, const void *data,
			   size_t len)
{
	struct nlattr *a = (struct nlattr *)(nl->buf + nl->len);

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy(KNL_NLA_DATA(a), data, len);
	memset((char *)KNL_NLA_DATA(a) + len, 0, NLA_ALIGN(a->nla_len) - a->nla_len);
	nl->len += NLA_ALIGN(a->nla_len);
}

static inline void knl_put_u32(struct knl *nl, uint16_t type, uint32_t v)
{
	knl_put(nl, type, &v, sizeof(v));
}

static inline void knl_put_s32(struct knl *nl, uint16_t type, int32_t v)
{
	knl_put(nl, type, &v, sizeof(v));
}

static inline void knl_put_u64(struct knl *nl, uint16_t type, uint64_t v)
{
	knl_put(nl, type, &v, sizeof(v));
}

static inline void knl_put_str(struct knl *nl, uint16_t type, const char *s)
{
	knl_put(nl, type, s, strlen(s) + 1);
}

/* Pull the extack message out of an error message, if any. */
static inline void knl_extack(struct knl *nl, struct nlmsghdr *h)
{
	struct nlmsgerr *e = NLMSG_DATA(h);
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	struct nlattr *a;
	int rem;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (off > h->nlmsg_len)
		return;
	a = (struct nlattr *)((char *)h + off);
	rem = h->nlmsg_len - off;
	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem))
		if (a->nla_type == NLMSGERR_ATTR_MSG)
			snprintf(nl->extack, sizeof(nl->extack), "%s",
				 (char *)KNL_NLA_DATA(a));
}

/*
 * Send the request built with knl_begin/knl_put, read until the ACK or
 * the end of a dump.  Each data message is handed to cb (may be NULL).
 * Return: 0 or the negative errno the kernel answered with.
 */
static inline int knl_xfer(struct knl *nl,
			   void (*cb)(struct nlmsghdr *, void *), void *arg)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h = (struct nlmsghdr *)nl->buf;
	static char rbuf[65536];
	ssize_t n;

	h->nlmsg_len = nl->len;
	nl->extack[0] = 0;
	if (sendto(nl->fd, nl->buf, nl->len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		n = recv(nl->fd, rbuf, sizeof(rbuf), 0);
		if (n < 0)
			return -errno;
		for (h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				knl_extack(nl, h);
				return e->error;
			}
			if (cb)
				cb(h, arg);
		}
	}
}

static inline void knl_family_cb(struct nlmsghdr *h, void *arg)
{
	struct knl *nl = arg;
	struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	int rem = h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			nl->family = *(uint16_t *)KNL_NLA_DATA(a);
}

/* Open a socket and resolve the kxfer family.  Return: 0 or -errno. */
static inline int knl_open(struct knl *nl)
{
	int one = 1, ret;

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	knl_begin(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, NLM_F_ACK);
	knl_put_str(nl, CTRL_ATTR_FAMILY_NAME, KXFER_GENL_NAME);
	ret = knl_xfer(nl, knl_family_cb, nl);
	if (!ret && !nl->family)
		ret = -ENOENT;
	if (ret)
		close(nl->fd);
	return ret;
}

static inline void knl_close(struct knl *nl)
{
	close(nl->fd);
}

/* Find a top-level attribute of a reply. */
static inline struct nlattr *knl_attr(struct nlmsghdr *h, uint16_t type)
{
	struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	int rem = h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	for (; KNL_NLA_OK(a, rem); a = KNL_NLA_NEXT(a, rem))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

#endif /* KXFER_SELFTEST_NL_H */
