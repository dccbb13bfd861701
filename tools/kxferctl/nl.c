// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl: the generic netlink socket.
 *
 * One libnl socket per invocation: resolve the "kxfer" family, send one
 * request and read until its ACK, NLMSG_DONE or error, or join the
 * "monitor" group and read events until a signal.  Refusals are printed
 * with the kernel's extended-ack message (NETLINK_EXT_ACK), as iproute2's
 * nl_dump_ext_ack() does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "kxferctl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* Monitor sockets get a larger receive buffer, to ride out bursts. */
#define KX_MONITOR_RCVBUF	(1 << 20)

struct kx_nl {
	struct nl_sock *sk;
	int family;
};

/* What the kernel said besides the error number. */
struct kx_ext_ack {
	bool has_msg;
	bool has_offs;
	bool has_miss_type;
	bool has_miss_nest;
	uint32_t offs;
	uint32_t miss_type;
	char msg[512];
};

/* State of one request. */
struct kx_req {
	struct kx *kx;
	const struct kx_attr_set *set;
	const struct nlmsghdr *sent;
	uint32_t seq;
	kx_nl_msg_fn fn;
	void *arg;

	bool done;
	bool bad_reply;
	bool intr_warned;
	int error;		/* as the kernel sent it: 0 or -errno */
	struct kx_ext_ack ea;
};

int kx_nl_open(struct kx *kx)
{
	struct kx_nl *nl;
	int one = 1;
	int err;

	if (kx->nl)
		return KX_EXIT_OK;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		goto err_nomem;
	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		goto err_free;

	err = genl_connect(nl->sk);
	if (err < 0) {
		fprintf(stderr, "Error: cannot open generic netlink socket: %s\n",
			nl_geterror(err));
		goto err_sock;
	}

	/* Not fatal: kernels older than 4.12 just send no messages. */
	(void)setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
			 &one, sizeof(one));
	nl_socket_enable_msg_peek(nl->sk);

	err = genl_ctrl_resolve(nl->sk, KXFER_GENL_NAME);
	if (err < 0) {
		if (err == -NLE_OBJ_NOTFOUND)
			fprintf(stderr, "Error: kxfer module not loaded\n");
		else
			fprintf(stderr, "Error: cannot resolve netlink family \"%s\": %s\n",
				KXFER_GENL_NAME, nl_geterror(err));
		goto err_sock;
	}
	nl->family = err;

	/* Each request states whether it wants an ACK. */
	nl_socket_disable_auto_ack(nl->sk);

	kx->nl = nl;
	return KX_EXIT_OK;

err_sock:
	nl_socket_free(nl->sk);
	free(nl);
	return KX_EXIT_FAIL;
err_free:
	free(nl);
err_nomem:
	fprintf(stderr, "Error: out of memory\n");
	return KX_EXIT_FAIL;
}

void kx_nl_close(struct kx *kx)
{
	if (!kx->nl)
		return;
	nl_socket_free(kx->nl->sk);
	free(kx->nl);
	kx->nl = NULL;
}

/**
 * kx_nl_msg - a new request of the kxfer family
 * @flags: NLM_F_ACK for "do" requests, NLM_F_DUMP for dumps
 *
 * Return: the message, or NULL after printing an error.
 */
struct nl_msg *kx_nl_msg(struct kx *kx, uint8_t cmd, int flags)
{
	struct nl_msg *msg;

	msg = nlmsg_alloc();
	if (!msg) {
		fprintf(stderr, "Error: out of memory\n");
		return NULL;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, kx->nl->family, 0,
			 flags, cmd, KXFER_GENL_VERSION)) {
		fprintf(stderr, "Error: cannot build netlink request\n");
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Zero a request's bytes, before it is freed: it held a secret. */
void kx_nl_wipe(struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	explicit_bzero(nlh, nlh->nlmsg_len);
}

/* An nla_put*() failed while building a request. */
int kx_nl_put_failed(int err)
{
	fprintf(stderr, "Error: cannot build netlink request: %s\n",
		nl_geterror(err));
	return KX_EXIT_FAIL;
}

int kx_nl_parse(struct nlmsghdr *nlh, struct nlattr **tb, int maxtype,
		const struct nla_policy *policy)
{
	return genlmsg_parse(nlh, 0, tb, maxtype, (struct nla_policy *)policy);
}

/* An attribute-set "prefix" nest of type @type: address and length. */
int kx_nl_put_prefix(struct nl_msg *msg, int type, const struct kx_prefix *pfx)
{
	struct nlattr *nest;
	int ret;

	nest = nla_nest_start(msg, type);
	if (!nest)
		return -NLE_NOMEM;
	ret = nla_put(msg, KXFER_A_PREFIX_ADDR, (int)pfx->addr.len,
		      pfx->addr.bytes);
	if (!ret)
		ret = nla_put_u8(msg, KXFER_A_PREFIX_LEN, (uint8_t)pfx->plen);
	if (ret < 0) {
		nla_nest_cancel(msg, nest);
		return ret;
	}
	return nla_nest_end(msg, nest);
}

/*
 * kx_nl_format_prefix - a "prefix" nest as text, "10.99.0.0/24"
 *
 * Return: 0, or -1 if the nest is malformed (@buf then holds what could
 * be printed, "?" at least).
 */
int kx_nl_format_prefix(char *buf, size_t len, struct nlattr *nest)
{
	static struct nla_policy policy[KXFER_A_PREFIX_MAX + 1] = {
		[KXFER_A_PREFIX_ADDR]	= { .minlen = 4, .maxlen = 16 },
		[KXFER_A_PREFIX_LEN]	= { .type = NLA_U8 },
	};
	struct nlattr *tb[KXFER_A_PREFIX_MAX + 1];

	snprintf(buf, len, "?");
	if (nla_parse_nested(tb, KXFER_A_PREFIX_MAX, nest, policy) < 0 ||
	    !tb[KXFER_A_PREFIX_ADDR] || !tb[KXFER_A_PREFIX_LEN])
		return -1;
	/* printed anyway on failure, as "?/n" or "a/129" */
	return kx_format_prefix(buf, len, nla_data(tb[KXFER_A_PREFIX_ADDR]),
				(size_t)nla_len(tb[KXFER_A_PREFIX_ADDR]),
				nla_get_u8(tb[KXFER_A_PREFIX_LEN])) ? -1 : 0;
}

/* ---- extended ACK ----------------------------------------------------- */

/*
 * kx_ext_ack_parse - read the NLMSGERR_ATTR_* TLVs of an NLMSG_ERROR or
 * NLMSG_DONE message
 * @off: where the TLVs start, counted from the message's payload
 */
static void kx_ext_ack_parse(const struct nlmsghdr *nlh, size_t off,
			     struct kx_ext_ack *ea)
{
	static struct nla_policy policy[NLMSGERR_ATTR_MAX + 1] = {
		[NLMSGERR_ATTR_MSG]		= { .type = NLA_STRING },
		[NLMSGERR_ATTR_OFFS]		= { .type = NLA_U32 },
		[NLMSGERR_ATTR_MISS_TYPE]	= { .type = NLA_U32 },
		[NLMSGERR_ATTR_MISS_NEST]	= { .type = NLA_U32 },
	};
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t paylen;

	memset(ea, 0, sizeof(*ea));

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || nlh->nlmsg_len < NLMSG_HDRLEN)
		return;
	paylen = nlh->nlmsg_len - NLMSG_HDRLEN;
	off = NLMSG_ALIGN(off);
	if (off >= paylen)
		return;

	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)NLMSG_DATA(nlh) + off),
		      (int)(paylen - off), policy) < 0)
		return;

	if (tb[NLMSGERR_ATTR_MSG]) {
		nla_strlcpy(ea->msg, tb[NLMSGERR_ATTR_MSG], sizeof(ea->msg));
		ea->has_msg = ea->msg[0] != '\0';
	}
	if (tb[NLMSGERR_ATTR_OFFS]) {
		ea->offs = nla_get_u32(tb[NLMSGERR_ATTR_OFFS]);
		ea->has_offs = true;
	}
	if (tb[NLMSGERR_ATTR_MISS_TYPE]) {
		ea->miss_type = nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
		ea->has_miss_type = true;
	}
	ea->has_miss_nest = tb[NLMSGERR_ATTR_MISS_NEST] != NULL;
}

/*
 * The TLVs of an NLMSG_ERROR follow struct nlmsgerr and, unless the
 * kernel capped it (NLM_F_CAPPED), the payload of the echoed request.
 */
static void kx_ext_ack_parse_err(const struct nlmsghdr *nlh,
				 struct kx_ext_ack *ea)
{
	const struct nlmsgerr *err = NLMSG_DATA(nlh);
	size_t off = sizeof(*err);

	memset(ea, 0, sizeof(*ea));
	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (err->msg.nlmsg_len < NLMSG_HDRLEN)
			return;
		off += err->msg.nlmsg_len - NLMSG_HDRLEN;
	}
	kx_ext_ack_parse(nlh, off, ea);
}

static const char *kx_attr_name(const struct kx_attr_set *set, unsigned int type)
{
	if (!set || type > set->max || !set->attrs[type])
		return NULL;
	return set->attrs[type];
}

/*
 * " (attribute "size")": which attribute of our request the kernel
 * blamed.  The offset is searched among the request's top-level
 * attributes; one inside a nest is reported as inside that nest.
 */
static void kx_ext_ack_attr(const struct kx_req *req, char *buf, size_t len)
{
	const struct kx_ext_ack *ea = &req->ea;
	struct nlmsghdr *sent = (struct nlmsghdr *)req->sent;
	const char *name = NULL;
	struct nlattr *nla;
	int rem;

	buf[0] = '\0';

	if (ea->has_miss_type) {
		if (!ea->has_miss_nest)
			name = kx_attr_name(req->set, ea->miss_type);
		if (name)
			snprintf(buf, len, " (missing attribute \"%s\")", name);
		else
			snprintf(buf, len, " (missing attribute type %u)",
				 ea->miss_type);
		return;
	}

	if (!ea->has_offs || !sent || !genlmsg_valid_hdr(sent, 0))
		return;

	nla_for_each_attr(nla, genlmsg_attrdata(genlmsg_hdr(sent), 0),
			  genlmsg_attrlen(genlmsg_hdr(sent), 0), rem) {
		size_t start = (size_t)((char *)nla - (char *)sent);
		int type = nla_type(nla);

		if (ea->offs < start || ea->offs >= start + nla->nla_len)
			continue;
		name = kx_attr_name(req->set, (unsigned int)type);
		if (name)
			snprintf(buf, len, " (%sattribute \"%s\")",
				 ea->offs == start ? "" : "inside ", name);
		else
			snprintf(buf, len, " (%sattribute type %d)",
				 ea->offs == start ? "" : "inside ", type);
		return;
	}
}

/*
 * "Error: <extack message>", or the errno's text if the kernel gave no
 * message.  The attribute the kernel pointed at is added when there is
 * no message, or with -d.
 */
static void kx_req_print_error(const struct kx_req *req)
{
	int err = req->error < 0 ? -req->error : req->error;
	char attr[128];

	kx_ext_ack_attr(req, attr, sizeof(attr));
	if (req->ea.has_msg)
		fprintf(stderr, "Error: %s%s\n", req->ea.msg,
			req->kx->details ? attr : "");
	else
		fprintf(stderr, "Error: %s%s\n", strerror(err), attr);
}

/* ---- request ---------------------------------------------------------- */

/* Only answers from the kernel to this request's sequence number. */
static int kx_req_seq(struct nl_msg *msg, void *arg)
{
	const struct kx_req *req = arg;
	const struct sockaddr_nl *src = nlmsg_get_src(msg);

	if (nlmsg_hdr(msg)->nlmsg_seq != req->seq || (src && src->nl_pid))
		return NL_SKIP;
	return NL_OK;
}

static int kx_req_valid(struct nl_msg *msg, void *arg)
{
	struct kx_req *req = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (nlh->nlmsg_type != req->kx->nl->family)
		return NL_SKIP;
	if (!genlmsg_valid_hdr(nlh, 0)) {
		req->bad_reply = true;
		return NL_SKIP;
	}
	if (req->fn && req->fn(req->kx, nlh, req->arg) < 0)
		req->bad_reply = true;
	return NL_OK;
}

static int kx_req_dump_intr(struct nl_msg *msg, void *arg)
{
	struct kx_req *req = arg;

	(void)msg;
	if (!req->intr_warned) {
		fprintf(stderr, "Warning: the objects changed during the dump, the list may be inconsistent\n");
		req->intr_warned = true;
	}
	return NL_OK;
}

/* NLMSG_DONE ends a dump; its payload is 0 or the dump's -errno. */
static int kx_req_finish(struct nl_msg *msg, void *arg)
{
	struct kx_req *req = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int err = 0;

	if (nlmsg_datalen(nlh) >= (int)sizeof(err)) {
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
		kx_ext_ack_parse(nlh, sizeof(err), &req->ea);
	}
	req->error = err < 0 ? err : 0;
	req->done = true;
	return NL_STOP;
}

static int kx_req_ack(struct nl_msg *msg, void *arg)
{
	struct kx_req *req = arg;

	kx_ext_ack_parse_err(nlmsg_hdr(msg), &req->ea);
	req->error = 0;
	req->done = true;
	return NL_STOP;
}

static int kx_req_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	/* libnl hands over the payload; the header is right before it */
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)
				     ((char *)err - NLMSG_HDRLEN);
	struct kx_req *req = arg;

	(void)nla;
	kx_ext_ack_parse_err(nlh, &req->ea);
	req->error = err->error;
	req->done = true;
	return NL_STOP;
}

/**
 * kx_nl_request - send a request and read every answer to it
 * @msg: the request, from kx_nl_msg(); always freed
 * @set: the attribute set of the request, to name attributes in errors
 * @fn: called for each reply message (may be NULL); a negative return
 *	marks the reply malformed
 *
 * Return: KX_EXIT_OK, or KX_EXIT_FAIL after printing an error.
 */
int kx_nl_request(struct kx *kx, struct nl_msg *msg,
		  const struct kx_attr_set *set, kx_nl_msg_fn fn, void *arg)
{
	struct kx_req req = {
		.kx = kx,
		.set = set,
		.fn = fn,
		.arg = arg,
	};
	int ret = KX_EXIT_FAIL;
	struct nl_cb *cb;
	int err;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		fprintf(stderr, "Error: out of memory\n");
		goto out_msg;
	}
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, kx_req_seq, &req);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, kx_req_valid, &req);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, kx_req_finish, &req);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, kx_req_ack, &req);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, kx_req_dump_intr, &req);
	nl_cb_err(cb, NL_CB_CUSTOM, kx_req_error, &req);

	err = nl_send_auto(kx->nl->sk, msg);
	if (err < 0) {
		fprintf(stderr, "Error: cannot send netlink request: %s\n",
			nl_geterror(err));
		goto out_cb;
	}
	req.sent = nlmsg_hdr(msg);
	req.seq = req.sent->nlmsg_seq;

	while (!req.done) {
		err = nl_recvmsgs_report(kx->nl->sk, cb);
		if (req.done)
			break;
		if (err < 0) {
			fprintf(stderr, "Error: netlink receive failed: %s\n",
				nl_geterror(err));
			goto out_cb;
		}
		if (err == 0) {
			fprintf(stderr, "Error: netlink socket closed before the kernel answered\n");
			goto out_cb;
		}
	}

	if (req.error) {
		kx_req_print_error(&req);
		goto out_cb;
	}
	if (req.ea.has_msg)
		fprintf(stderr, "Warning: %s\n", req.ea.msg);
	if (req.bad_reply) {
		fprintf(stderr, "Error: malformed reply from the kernel\n");
		goto out_cb;
	}
	ret = KX_EXIT_OK;

out_cb:
	nl_cb_put(cb);
out_msg:
	if (kx->wipe_request)
		kx_nl_wipe(msg);
	nlmsg_free(msg);
	return ret;
}

/* ---- monitor ---------------------------------------------------------- */

struct kx_mon {
	struct kx *kx;
	kx_nl_msg_fn fn;
	void *arg;
};

static volatile sig_atomic_t kx_stop;

static void kx_on_signal(int sig)
{
	(void)sig;
	kx_stop = 1;
}

/* Events come from the kernel with sequence number 0: no check but the sender. */
static int kx_mon_seq(struct nl_msg *msg, void *arg)
{
	const struct sockaddr_nl *src = nlmsg_get_src(msg);

	(void)arg;
	return src && src->nl_pid ? NL_SKIP : NL_OK;
}

static int kx_mon_valid(struct nl_msg *msg, void *arg)
{
	struct kx_mon *mon = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (nlh->nlmsg_type != mon->kx->nl->family)
		return NL_SKIP;
	if (!genlmsg_valid_hdr(nlh, 0) || mon->fn(mon->kx, nlh, mon->arg) < 0)
		fprintf(stderr, "Warning: malformed event from the kernel\n");
	out_flush();
	return NL_OK;
}

static int kx_mon_loop(struct kx *kx, struct nl_cb *cb, const sigset_t *waitmask)
{
	int fd = nl_socket_get_fd(kx->nl->sk);

	while (!kx_stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int err, saved_errno;

		/* signals are blocked except inside ppoll(): none is missed */
		if (ppoll(&pfd, 1, NULL, waitmask) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "Error: poll: %s\n", strerror(errno));
			return KX_EXIT_FAIL;
		}

		/* drain the socket */
		for (;;) {
			err = nl_recvmsgs_report(kx->nl->sk, cb);
			saved_errno = errno;
			if (err > 0)
				continue;
			if (err == -NLE_AGAIN)
				break;
			if (err == -NLE_NOMEM && saved_errno == ENOBUFS) {
				fprintf(stderr, "Warning: events were lost, the kernel's queue overflowed\n");
				continue;
			}
			if (err == 0) {
				fprintf(stderr, "Error: netlink socket closed\n");
				return KX_EXIT_FAIL;
			}
			fprintf(stderr, "Error: netlink receive failed: %s\n",
				nl_geterror(err));
			return KX_EXIT_FAIL;
		}
	}
	return KX_EXIT_OK;
}

/**
 * kx_nl_monitor - join the "monitor" group and pass every event to @fn
 *
 * Runs until SIGINT or SIGTERM, which end it with KX_EXIT_OK.
 */
int kx_nl_monitor(struct kx *kx, kx_nl_msg_fn fn, void *arg)
{
	struct kx_mon mon = { .kx = kx, .fn = fn, .arg = arg };
	struct sigaction sa = { .sa_handler = kx_on_signal };
	struct sigaction old_int, old_term;
	sigset_t block, old_mask, waitmask;
	int ret = KX_EXIT_FAIL;
	struct nl_cb *cb;
	int grp, err;

	grp = genl_ctrl_resolve_grp(kx->nl->sk, KXFER_GENL_NAME,
				    KXFER_MCGRP_MONITOR);
	if (grp < 0) {
		if (grp == -NLE_OBJ_NOTFOUND)
			fprintf(stderr, "Error: the kxfer module has no \"%s\" multicast group\n",
				KXFER_MCGRP_MONITOR);
		else
			fprintf(stderr, "Error: cannot resolve multicast group \"%s\": %s\n",
				KXFER_MCGRP_MONITOR, nl_geterror(grp));
		return KX_EXIT_FAIL;
	}

	err = nl_socket_add_membership(kx->nl->sk, grp);
	if (err < 0) {
		fprintf(stderr, "Error: cannot join multicast group \"%s\": %s\n",
			KXFER_MCGRP_MONITOR, nl_geterror(err));
		return KX_EXIT_FAIL;
	}
	/* best effort: the default buffer still works, with more overruns */
	(void)nl_socket_set_buffer_size(kx->nl->sk, KX_MONITOR_RCVBUF, 0);

	err = nl_socket_set_nonblocking(kx->nl->sk);
	if (err < 0) {
		fprintf(stderr, "Error: cannot set up netlink socket: %s\n",
			nl_geterror(err));
		return KX_EXIT_FAIL;
	}

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		fprintf(stderr, "Error: out of memory\n");
		return KX_EXIT_FAIL;
	}
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, kx_mon_seq, &mon);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, kx_mon_valid, &mon);

	/*
	 * Handlers first, then block: a signal is either handled before the
	 * loop starts (and seen by it) or held until ppoll() lets it in.
	 * Undone in reverse, so that a signal still pending reaches our
	 * handler rather than the default action.
	 */
	kx_stop = 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, &old_int) < 0) {
		fprintf(stderr, "Error: sigaction: %s\n", strerror(errno));
		goto out_cb;
	}
	if (sigaction(SIGTERM, &sa, &old_term) < 0) {
		fprintf(stderr, "Error: sigaction: %s\n", strerror(errno));
		goto out_int;
	}

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &block, &old_mask) < 0) {
		fprintf(stderr, "Error: sigprocmask: %s\n", strerror(errno));
		goto out_term;
	}
	waitmask = old_mask;
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);

	ret = kx_mon_loop(kx, cb, &waitmask);
	out_flush();

	sigprocmask(SIG_SETMASK, &old_mask, NULL);
out_term:
	sigaction(SIGTERM, &old_term, NULL);
out_int:
	sigaction(SIGINT, &old_int, NULL);
out_cb:
	nl_cb_put(cb);
	return ret;
}
