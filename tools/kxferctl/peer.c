// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl peer: sessions with remote kxfer nodes.
 *
 * "peer add" makes a session that connects out (and reconnects); a
 * listener makes the sessions it accepts.  "peer show" prints both, with
 * each session's queue pairs and the exports the remote advertised; those
 * come as KXFER_A_PEER_QP and KXFER_A_PEER_REMOTE_EXPORT nests repeated
 * at the top level of the message.  A peer over several rails ("peer add
 * NAME ADDR,ADDR...") lists each rail in a KXFER_A_PEER_RAILS nest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

static const char *const peer_attr_names[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]		= "name",
	[KXFER_A_PEER_ADDR]		= "addr",
	[KXFER_A_PEER_PORT]		= "port",
	[KXFER_A_PEER_QPS]		= "qps",
	[KXFER_A_PEER_DEPTH]		= "depth",
	[KXFER_A_PEER_STATE]		= "state",
	[KXFER_A_PEER_ROLE]		= "role",
	[KXFER_A_PEER_DEV]		= "dev",
	[KXFER_A_PEER_PORT_NUM]		= "port-num",
	[KXFER_A_PEER_REMOTE_NODE]	= "remote-node",
	[KXFER_A_PEER_RECONNECTS]	= "reconnects",
	[KXFER_A_PEER_LAST_ERROR]	= "last-error",
	[KXFER_A_PEER_LAST_ERRNO]	= "last-errno",
	[KXFER_A_PEER_KEEPALIVE_RTT_NS]	= "keepalive-rtt-ns",
	[KXFER_A_PEER_UP_NS]		= "up-ns",
	[KXFER_A_PEER_QP]		= "qp",
	[KXFER_A_PEER_REMOTE_EXPORT]	= "remote-export",
	[KXFER_A_PEER_PAD]		= "pad",
	[KXFER_A_PEER_ID]		= "id",
	[KXFER_A_PEER_STATS]		= "stats",
	[KXFER_A_PEER_ATTEMPTS]		= "attempts",
	[KXFER_A_PEER_NEXT_TRY_NS]	= "next-try-ns",
	[KXFER_A_PEER_KEY]		= "key",
	[KXFER_A_PEER_AUTH]		= "auth",
	[KXFER_A_PEER_AUTH_FAILURES]	= "auth-failures",
	[KXFER_A_PEER_POLL]		= "poll",
	[KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS] = "keepalive-rtt-max-ns",
	[KXFER_A_PEER_EXPORTS_WITHHELD]	= "exports-withheld",
	[KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS] = "keepalive-timeout-ms",
	[KXFER_A_PEER_HANDLES]		= "handles",
	[KXFER_A_PEER_DRAINING]		= "draining",
	[KXFER_A_PEER_EXPORTS_OMITTED]	= "exports-omitted",
	[KXFER_A_PEER_REMOTE_SCOPED]	= "remote-scoped",
	[KXFER_A_PEER_ON_DEMAND]	= "on-demand",
	[KXFER_A_PEER_IDLE_TIMEOUT]	= "idle-timeout",
	[KXFER_A_PEER_IDLE_MS]		= "idle-ms",
	[KXFER_A_PEER_RAIL]		= "rail",
	[KXFER_A_PEER_RAILS]		= "rails",
	[KXFER_A_PEER_FAILOVERS]	= "failovers",
	[KXFER_A_PEER_TAKEN]		= "taken",
	[KXFER_A_PEER_STRIPED]		= "striped",
};

static const struct kx_attr_set peer_set = {
	.name = "peer",
	.attrs = peer_attr_names,
	.max = KXFER_A_PEER_MAX,
};

static const struct nla_policy peer_policy[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]		= { .type = NLA_STRING },
	/* 4 or 16 bytes, checked by kx_format_addr() */
	[KXFER_A_PEER_ADDR]		= { .minlen = 4, .maxlen = 16 },
	[KXFER_A_PEER_PORT]		= { .type = NLA_U16 },
	[KXFER_A_PEER_QPS]		= { .type = NLA_U32 },
	[KXFER_A_PEER_DEPTH]		= { .type = NLA_U32 },
	[KXFER_A_PEER_STATE]		= { .type = NLA_U32 },
	[KXFER_A_PEER_ROLE]		= { .type = NLA_U32 },
	[KXFER_A_PEER_DEV]		= { .type = NLA_STRING },
	[KXFER_A_PEER_PORT_NUM]		= { .type = NLA_U32 },
	[KXFER_A_PEER_REMOTE_NODE]	= { .type = NLA_STRING },
	[KXFER_A_PEER_RECONNECTS]	= { .type = NLA_U32 },
	[KXFER_A_PEER_LAST_ERROR]	= { .type = NLA_STRING },
	/* s32; libnl checks the length of NLA_U32 only */
	[KXFER_A_PEER_LAST_ERRNO]	= { .type = NLA_U32 },
	[KXFER_A_PEER_KEEPALIVE_RTT_NS]	= { .type = NLA_U64 },
	[KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS] = { .type = NLA_U64 },
	[KXFER_A_PEER_EXPORTS_WITHHELD]	= { .type = NLA_U32 },
	[KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS] = { .type = NLA_U32 },
	[KXFER_A_PEER_HANDLES]		= { .type = NLA_U32 },
	[KXFER_A_PEER_DRAINING]		= { .type = NLA_U32 },
	[KXFER_A_PEER_EXPORTS_OMITTED]	= { .type = NLA_FLAG },
	[KXFER_A_PEER_REMOTE_SCOPED]	= { .type = NLA_U32 },
	[KXFER_A_PEER_ON_DEMAND]	= { .type = NLA_FLAG },
	[KXFER_A_PEER_IDLE_TIMEOUT]	= { .type = NLA_U32 },
	[KXFER_A_PEER_IDLE_MS]		= { .type = NLA_U32 },
	[KXFER_A_PEER_UP_NS]		= { .type = NLA_U64 },
	[KXFER_A_PEER_QP]		= { .type = NLA_NESTED },
	[KXFER_A_PEER_REMOTE_EXPORT]	= { .type = NLA_NESTED },
	[KXFER_A_PEER_KEY]		= { .type = NLA_STRING },
	[KXFER_A_PEER_AUTH]		= { .type = NLA_U32 },
	[KXFER_A_PEER_AUTH_FAILURES]	= { .type = NLA_U32 },
	[KXFER_A_PEER_POLL]		= { .type = NLA_FLAG },
	[KXFER_A_PEER_ID]		= { .type = NLA_U32 },
	[KXFER_A_PEER_ATTEMPTS]		= { .type = NLA_U32 },
	/* s64, as NLA_U64 for the same reason as last_errno */
	[KXFER_A_PEER_NEXT_TRY_NS]	= { .type = NLA_U64 },
	[KXFER_A_PEER_RAIL]		= { .type = NLA_U32 },
	[KXFER_A_PEER_RAILS]		= { .type = NLA_NESTED },
	[KXFER_A_PEER_FAILOVERS]	= { .type = NLA_U64 },
	[KXFER_A_PEER_TAKEN]		= { .type = NLA_U64 },
	[KXFER_A_PEER_STRIPED]		= { .type = NLA_U64 },
};

static const struct nla_policy rail_policy[KXFER_A_RAIL_MAX + 1] = {
	[KXFER_A_RAIL_INDEX]		= { .type = NLA_U32 },
	[KXFER_A_RAIL_ADDR]		= { .minlen = 4, .maxlen = 16 },
	[KXFER_A_RAIL_PORT]		= { .type = NLA_U16 },
	[KXFER_A_RAIL_STATE]		= { .type = NLA_U32 },
	[KXFER_A_RAIL_DEV]		= { .type = NLA_STRING },
	[KXFER_A_RAIL_LAST_ERROR]	= { .type = NLA_STRING },
	[KXFER_A_RAIL_RECONNECTS]	= { .type = NLA_U32 },
	[KXFER_A_RAIL_JOBS]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_BYTES]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_OK]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_FAILOVERS]	= { .type = NLA_U64 },
	[KXFER_A_RAIL_TAKEN]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_FENCED]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_SHARES]		= { .type = NLA_U64 },
	[KXFER_A_RAIL_JOINED]		= { .type = NLA_FLAG },
};

/* enum kxfer_peer_auth */
static const char *const peer_auths[] = {
	[KXFER_PEER_AUTH_NONE]		= "none",
	[KXFER_PEER_AUTH_PENDING]	= "pending",
	[KXFER_PEER_AUTH_OK]		= "ok",
	[KXFER_PEER_AUTH_SHARED]	= "shared",
	[KXFER_PEER_AUTH_FAILED]	= "failed",
};

static const struct nla_policy qp_policy[KXFER_A_QP_MAX + 1] = {
	[KXFER_A_QP_INDEX]		= { .type = NLA_U32 },
	[KXFER_A_QP_NUM]		= { .type = NLA_U32 },
	[KXFER_A_QP_REMOTE_NUM]		= { .type = NLA_U32 },
	[KXFER_A_QP_STATE]		= { .type = NLA_U32 },
};

static const struct nla_policy rexp_policy[KXFER_A_REXP_MAX + 1] = {
	[KXFER_A_REXP_NAME]		= { .type = NLA_STRING },
	[KXFER_A_REXP_LEN]		= { .type = NLA_U64 },
	[KXFER_A_REXP_ACCESS]		= { .type = NLA_U32 },
	[KXFER_A_REXP_GEN]		= { .type = NLA_U64 },
	[KXFER_A_REXP_MRS]		= { .type = NLA_U32 },
	[KXFER_A_REXP_MR_PAGE]		= { .type = NLA_U64 },
};

static const char *const peer_states[] = {
	[KXFER_PEER_CONNECTING]	= "connecting",
	[KXFER_PEER_UP]		= "up",
	[KXFER_PEER_DOWN]	= "down",
	[KXFER_PEER_CLOSING]	= "closing",
};

static const char *const peer_roles[] = {
	[KXFER_PEER_CONNECTOR]	= "connector",
	[KXFER_PEER_ACCEPTOR]	= "acceptor",
};

/* enum ib_qp_state, as ibv_devinfo and "rdma resource" spell it */
static const char *const qp_states[] = {
	"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

static void peer_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl peer add NAME ADDR[,ADDR...] [ port PORT ] [ qps QPS ] [ depth DEPTH ]\n"
		"                             [ key KEY ] [ cq { irq | poll } ]\n"
		"       kxferctl peer del NAME\n"
		"       kxferctl peer show [ NAME ]\n"
		"       kxferctl peer help\n"
		"where  ADDR := { IPv4 address | IPv6 address }; up to %d, one per rail\n"
		"       PORT := 1..65535   (default %d)\n"
		"       QPS := 1..%d   (queue pairs of the session)\n"
		"       DEPTH := send queue depth of each queue pair\n"
		"       KEY := the key (kxferctl key) both sides prove; the session is\n"
		"              then authenticated, or not up\n"
		"       cq poll: send completions are reaped by the users' SUBMIT and REAP\n"
		"              (polled CQs); irq (default): in softirq\n",
		KXFER_MAX_RAILS, KXFER_PORT, KXFER_MAX_QPS);
}

static int peer_cmd_help(struct kx *kx)
{
	(void)kx;
	peer_help(stdout);
	return KX_EXIT_OK;
}

/* Text: a continuation line "qp 0 qpn 17 remote_qpn 33 state RTS". */
static int qp_print(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_QP_MAX + 1];

	if (nla_parse_nested(tb, KXFER_A_QP_MAX, nest,
			     (struct nla_policy *)qp_policy) < 0 ||
	    !tb[KXFER_A_QP_INDEX])
		return -1;

	out_start_obj(NULL);
	out_u64(out_is_json() ? "index" : "qp", nla_get_u32(tb[KXFER_A_QP_INDEX]));
	if (tb[KXFER_A_QP_NUM])
		out_u64("qpn", nla_get_u32(tb[KXFER_A_QP_NUM]));
	if (tb[KXFER_A_QP_REMOTE_NUM])
		out_u64("remote_qpn", nla_get_u32(tb[KXFER_A_QP_REMOTE_NUM]));
	if (tb[KXFER_A_QP_STATE])
		out_enum("state", qp_states, ARRAY_SIZE(qp_states),
			 nla_get_u32(tb[KXFER_A_QP_STATE]));
	out_end_obj();
	return 0;
}

/* Text: a continuation line "remote_export kv len 512M access read gen 3 mrs 1". */
static int rexp_print(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_REXP_MAX + 1];

	if (nla_parse_nested(tb, KXFER_A_REXP_MAX, nest,
			     (struct nla_policy *)rexp_policy) < 0 ||
	    !tb[KXFER_A_REXP_NAME])
		return -1;

	out_start_obj(NULL);
	out_name("remote_export", nla_get_string(tb[KXFER_A_REXP_NAME]));
	if (tb[KXFER_A_REXP_LEN])
		out_bytes("len", nla_get_u64(tb[KXFER_A_REXP_LEN]));
	if (tb[KXFER_A_REXP_ACCESS])
		out_access(nla_get_u32(tb[KXFER_A_REXP_ACCESS]));
	if (tb[KXFER_A_REXP_GEN])
		out_u64("gen", nla_get_u64(tb[KXFER_A_REXP_GEN]));
	if (tb[KXFER_A_REXP_MRS])
		out_u64("mrs", nla_get_u32(tb[KXFER_A_REXP_MRS]));
	out_end_obj();
	return 0;
}

/* Text: a continuation line "local_export kv gen 3 mrs 2 mr_page 2M". */
static int lexp_print(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_REXP_MAX + 1];

	if (nla_parse_nested(tb, KXFER_A_REXP_MAX, nest,
			     (struct nla_policy *)rexp_policy) < 0 ||
	    !tb[KXFER_A_REXP_NAME])
		return -1;

	out_start_obj(NULL);
	out_name("local_export", nla_get_string(tb[KXFER_A_REXP_NAME]));
	if (tb[KXFER_A_REXP_GEN])
		out_u64("gen", nla_get_u64(tb[KXFER_A_REXP_GEN]));
	if (tb[KXFER_A_REXP_MRS])
		out_u64("mrs", nla_get_u32(tb[KXFER_A_REXP_MRS]));
	if (tb[KXFER_A_REXP_MR_PAGE])
		out_bytes("mr_page", nla_get_u64(tb[KXFER_A_REXP_MR_PAGE]));
	out_end_obj();
	return 0;
}

/*
 * Text: a continuation line "rail 1 addr 10.98.0.2 port 19875 state up dev
 * rxe1 jobs 12 bytes 12M ok 12 failovers 0 taken 3 reconnects 1 via join".
 */
static int rail_print(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_RAIL_MAX + 1];
	char addr[KX_ADDR_STRLEN];
	int ret = 0;

	if (nla_parse_nested(tb, KXFER_A_RAIL_MAX, nest,
			     (struct nla_policy *)rail_policy) < 0 ||
	    !tb[KXFER_A_RAIL_INDEX])
		return -1;

	out_start_obj(NULL);
	out_u64(out_is_json() ? "index" : "rail",
		nla_get_u32(tb[KXFER_A_RAIL_INDEX]));
	if (tb[KXFER_A_RAIL_ADDR]) {
		if (kx_format_addr(addr, sizeof(addr),
				   nla_data(tb[KXFER_A_RAIL_ADDR]),
				   (size_t)nla_len(tb[KXFER_A_RAIL_ADDR])))
			ret = -1;
		out_str("addr", addr);
	}
	if (tb[KXFER_A_RAIL_PORT])
		out_u64("port", nla_get_u16(tb[KXFER_A_RAIL_PORT]));
	if (tb[KXFER_A_RAIL_STATE])
		out_enum("state", peer_states, ARRAY_SIZE(peer_states),
			 nla_get_u32(tb[KXFER_A_RAIL_STATE]));
	if (tb[KXFER_A_RAIL_DEV])
		out_str("dev", nla_get_string(tb[KXFER_A_RAIL_DEV]));
	if (tb[KXFER_A_RAIL_JOBS])
		out_u64("jobs", nla_get_u64(tb[KXFER_A_RAIL_JOBS]));
	if (tb[KXFER_A_RAIL_BYTES])
		out_bytes("bytes", nla_get_u64(tb[KXFER_A_RAIL_BYTES]));
	if (tb[KXFER_A_RAIL_OK])
		out_u64("ok", nla_get_u64(tb[KXFER_A_RAIL_OK]));
	if (tb[KXFER_A_RAIL_FAILOVERS])
		out_u64("failovers", nla_get_u64(tb[KXFER_A_RAIL_FAILOVERS]));
	if (tb[KXFER_A_RAIL_TAKEN])
		out_u64("taken", nla_get_u64(tb[KXFER_A_RAIL_TAKEN]));
	if (tb[KXFER_A_RAIL_FENCED])
		out_u64("fenced", nla_get_u64(tb[KXFER_A_RAIL_FENCED]));
	if (tb[KXFER_A_RAIL_SHARES])
		out_u64("shares", nla_get_u64(tb[KXFER_A_RAIL_SHARES]));
	if (tb[KXFER_A_RAIL_RECONNECTS])
		out_u64("reconnects", nla_get_u32(tb[KXFER_A_RAIL_RECONNECTS]));
	/* up: whether its connection joined the session or made it */
	if (tb[KXFER_A_RAIL_STATE] &&
	    nla_get_u32(tb[KXFER_A_RAIL_STATE]) == KXFER_PEER_UP)
		out_str("via", tb[KXFER_A_RAIL_JOINED] ? "join" : "first");
	if (tb[KXFER_A_RAIL_LAST_ERROR])
		out_str("last_error", nla_get_string(tb[KXFER_A_RAIL_LAST_ERROR]));
	out_end_obj();
	return ret;
}

/*
 * The nests of type @type, repeated at the top level of the message, as
 * the JSON array @key.  @always: print the array even when empty ("peer
 * show"); otherwise only if there is one (monitor events carry none).
 */
static int peer_list_print(struct nlmsghdr *nlh, int type, const char *key,
			   bool always, int (*print)(struct nlattr *nest))
{
	const struct genlmsghdr *gnlh = nlmsg_data(nlh);
	struct nlattr *pos;
	bool open = false;
	int rem, ret = 0;

	if (always) {
		out_start_array(key);
		open = true;
	}
	nla_for_each_attr(pos, genlmsg_attrdata(gnlh, 0),
			  genlmsg_attrlen(gnlh, 0), rem) {
		if (nla_type(pos) != type)
			continue;
		if (!open) {
			out_start_array(key);
			open = true;
		}
		if (print(pos) < 0)
			ret = -1;
	}
	if (open)
		out_end_array();
	return ret;
}

/*
 * Why the session last went down.  Text: on a continuation line, and only
 * if there is something to say: "last_errno 110 (Connection timed out)
 * last_error <the module's words, to the end of the line>".
 */
static void peer_error_print(struct nlattr **tb)
{
	const char *msg = NULL;
	bool has_errno = tb[KXFER_A_PEER_LAST_ERRNO] != NULL;
	int32_t err = 0;

	if (tb[KXFER_A_PEER_LAST_ERROR])
		msg = nla_get_string(tb[KXFER_A_PEER_LAST_ERROR]);
	if (has_errno)
		err = nla_get_s32(tb[KXFER_A_PEER_LAST_ERRNO]);

	if (out_is_json()) {
		if (has_errno)
			out_s64("last_errno", err);
		if (msg)
			out_str("last_error", msg);
		return;
	}

	if (!err && (!msg || !*msg))
		return;
	out_nest_line();
	if (has_errno) {
		out_s64("last_errno", err);
		/* the sign is not fixed by the uapi: -ETIMEDOUT or ETIMEDOUT */
		if (err)
			out_text_cont(" (%s)", strerror(err < 0 ? -err : err));
	}
	if (msg && *msg)
		out_str("last_error", msg);
}

/*
 * A connector's retries: "attempts 3 next_try 1.2s" (JSON attempts and
 * next_try_ns).  The time left is negative only if the attempt is
 * overdue: text then says "next_try_overdue 40ms".
 */
static void peer_retry_print(struct nlattr **tb)
{
	int64_t ns;

	if (tb[KXFER_A_PEER_ATTEMPTS])
		out_u64("attempts", nla_get_u32(tb[KXFER_A_PEER_ATTEMPTS]));
	if (!tb[KXFER_A_PEER_NEXT_TRY_NS])
		return;
	ns = (int64_t)nla_get_u64(tb[KXFER_A_PEER_NEXT_TRY_NS]);
	if (out_is_json())
		out_s64("next_try_ns", ns);
	else if (ns >= 0)
		out_ns("next_try", "next_try_ns", (uint64_t)ns);
	else
		out_ns("next_try_overdue", "next_try_overdue_ns", (uint64_t)-ns);
}

/**
 * peer_print - print one session from a PEER_GET reply or a
 * PEER_STATE_NTF event
 * @event: the monitor event name, or NULL for "peer show"
 *
 * Return: 0, or -1 if the message is malformed.
 */
/* Who uses the session, what it carries, and whether it was made on demand. */
static void peer_use_print(struct nlattr **tb)
{
	if (tb[KXFER_A_PEER_HANDLES])
		out_u64("handles", nla_get_u32(tb[KXFER_A_PEER_HANDLES]));
	if (tb[KXFER_A_PEER_DRAINING])
		out_u64("draining", nla_get_u32(tb[KXFER_A_PEER_DRAINING]));
	/* too many to list in one message: name the peer, or look them up */
	if (tb[KXFER_A_PEER_EXPORTS_OMITTED])
		out_str("exports", "omitted");
	/* not listed with the others: only their tokens' holders may know */
	if (tb[KXFER_A_PEER_REMOTE_SCOPED])
		out_u64("remote_scoped",
			nla_get_u32(tb[KXFER_A_PEER_REMOTE_SCOPED]));
	/* made by a user's KXFER_IOC_CONNECT under a connect rule */
	if (tb[KXFER_A_PEER_ON_DEMAND]) {
		out_str("made", "on-demand");
		if (tb[KXFER_A_PEER_IDLE_TIMEOUT])
			out_u64("idle_timeout",
				nla_get_u32(tb[KXFER_A_PEER_IDLE_TIMEOUT]));
		if (tb[KXFER_A_PEER_IDLE_MS])
			out_u64("idle_ms", nla_get_u32(tb[KXFER_A_PEER_IDLE_MS]));
	}
}

int peer_print(struct kx *kx, struct nlmsghdr *nlh, const char *event)
{
	struct nlattr *tb[KXFER_A_PEER_MAX + 1];
	bool show = !event;
	int ret = 0;

	(void)kx;
	if (kx_nl_parse(nlh, tb, KXFER_A_PEER_MAX, peer_policy) < 0 ||
	    !tb[KXFER_A_PEER_NAME])
		return -1;

	out_start_obj(NULL);
	if (event)
		out_event(event);
	out_name("peer", nla_get_string(tb[KXFER_A_PEER_NAME]));
	/* sessions may share a name (a node's, accepted); the id tells them apart */
	if (tb[KXFER_A_PEER_ID])
		out_u64("id", nla_get_u32(tb[KXFER_A_PEER_ID]));
	if (tb[KXFER_A_PEER_ROLE])
		out_enum("role", peer_roles, ARRAY_SIZE(peer_roles),
			 nla_get_u32(tb[KXFER_A_PEER_ROLE]));
	if (tb[KXFER_A_PEER_STATE])
		out_enum("state", peer_states, ARRAY_SIZE(peer_states),
			 nla_get_u32(tb[KXFER_A_PEER_STATE]));
	/* a session of a peer over rails: which (monitor: "rail 1 down") */
	if (tb[KXFER_A_PEER_RAIL])
		out_u64("rail", nla_get_u32(tb[KXFER_A_PEER_RAIL]));
	if (tb[KXFER_A_PEER_ADDR]) {
		char addr[KX_ADDR_STRLEN];

		if (kx_format_addr(addr, sizeof(addr),
				   nla_data(tb[KXFER_A_PEER_ADDR]),
				   (size_t)nla_len(tb[KXFER_A_PEER_ADDR])))
			ret = -1;
		out_str("addr", addr);
	}
	if (tb[KXFER_A_PEER_PORT])
		out_u64("port", nla_get_u16(tb[KXFER_A_PEER_PORT]));
	if (tb[KXFER_A_PEER_DEV])
		out_str("dev", nla_get_string(tb[KXFER_A_PEER_DEV]));
	if (tb[KXFER_A_PEER_PORT_NUM])
		out_u64("port_num", nla_get_u32(tb[KXFER_A_PEER_PORT_NUM]));
	if (tb[KXFER_A_PEER_REMOTE_NODE])
		out_str("remote_node", nla_get_string(tb[KXFER_A_PEER_REMOTE_NODE]));
	if (tb[KXFER_A_PEER_QPS])
		out_u64("qps", nla_get_u32(tb[KXFER_A_PEER_QPS]));
	if (tb[KXFER_A_PEER_DEPTH])
		out_u64("depth", nla_get_u32(tb[KXFER_A_PEER_DEPTH]));
	/* with the full view only, as qps */
	if (tb[KXFER_A_PEER_QPS])
		out_str("cq", tb[KXFER_A_PEER_POLL] ? "poll" : "irq");
	if (tb[KXFER_A_PEER_RECONNECTS])
		out_u64("reconnects", nla_get_u32(tb[KXFER_A_PEER_RECONNECTS]));
	peer_retry_print(tb);
	if (tb[KXFER_A_PEER_KEEPALIVE_RTT_NS])
		out_ns("keepalive_rtt", "keepalive_rtt_ns",
		       nla_get_u64(tb[KXFER_A_PEER_KEEPALIVE_RTT_NS]));
	if (tb[KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS])
		out_ns("keepalive_rtt_max", "keepalive_rtt_max_ns",
		       nla_get_u64(tb[KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS]));
	if (tb[KXFER_A_PEER_UP_NS])
		out_ns("connect_time", "up_ns",
		       nla_get_u64(tb[KXFER_A_PEER_UP_NS]));
	if (tb[KXFER_A_PEER_AUTH])
		out_enum("auth", peer_auths, ARRAY_SIZE(peer_auths),
			 nla_get_u32(tb[KXFER_A_PEER_AUTH]));
	if (tb[KXFER_A_PEER_KEY])
		out_str("key", nla_get_string(tb[KXFER_A_PEER_KEY]));
	if (tb[KXFER_A_PEER_AUTH_FAILURES])
		out_u64("auth_failures",
			nla_get_u32(tb[KXFER_A_PEER_AUTH_FAILURES]));
	if (tb[KXFER_A_PEER_EXPORTS_WITHHELD])
		out_u64("exports_withheld",
			nla_get_u32(tb[KXFER_A_PEER_EXPORTS_WITHHELD]));
	if (tb[KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS])
		out_u64("keepalive_timeout_ms",
			nla_get_u32(tb[KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS]));
	peer_use_print(tb);
	if (tb[KXFER_A_PEER_FAILOVERS])
		out_u64("failovers", nla_get_u64(tb[KXFER_A_PEER_FAILOVERS]));
	if (tb[KXFER_A_PEER_TAKEN])
		out_u64("taken", nla_get_u64(tb[KXFER_A_PEER_TAKEN]));
	if (tb[KXFER_A_PEER_STRIPED])
		out_u64("striped", nla_get_u64(tb[KXFER_A_PEER_STRIPED]));
	peer_error_print(tb);

	/* last: in text each QP and export is a continuation line */
	if (peer_list_print(nlh, KXFER_A_PEER_QP, "qp_list", show, qp_print))
		ret = -1;
	if (peer_list_print(nlh, KXFER_A_PEER_REMOTE_EXPORT, "remote_exports",
			    show, rexp_print))
		ret = -1;
	if (peer_list_print(nlh, KXFER_A_PEER_LOCAL_EXPORT, "local_exports",
			    false, lexp_print))
		ret = -1;
	if (peer_list_print(nlh, KXFER_A_PEER_RAILS, "rails", false,
			    rail_print))
		ret = -1;
	out_end_obj();
	return ret;
}

/* "peer add|del|show NAME": the name, checked, consumed. */
static int peer_name_arg(struct kx *kx, const char *verb, const char **name)
{
	if (kx_no_arg(kx))
		return kx_usage_error("peer %s: NAME is missing, try \"kxferctl peer help\"",
				      verb);
	*name = kx_argv(kx);
	if (kx_check_name("peer name", *name, KXFER_NAME_MAX - 1))
		return KX_EXIT_USAGE;
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

enum {
	PEER_KEY_PORT,
	PEER_KEY_QPS,
	PEER_KEY_DEPTH,
	PEER_KEY_KEY,
	PEER_KEY_CQ,
};

static const char *const peer_add_keys[] = {
	[PEER_KEY_PORT]		= "port",
	[PEER_KEY_QPS]		= "qps",
	[PEER_KEY_DEPTH]	= "depth",
	[PEER_KEY_KEY]		= "key",
	[PEER_KEY_CQ]		= "cq",
};

/*
 * ADDR[,ADDR...]: one address per rail, at most KXFER_MAX_RAILS.
 * Return: how many, or -1 after a usage error.
 */
static int peer_parse_addrs(const char *arg, struct kx_addr *addrs)
{
	char buf[KXFER_MAX_RAILS * (KX_ADDR_STRLEN + 1)], *p, *comma;
	int n = 0;

	if (strlen(arg) >= sizeof(buf)) {
		kx_usage_error("too many addresses \"%s\" (at most %d rails)",
			       arg, KXFER_MAX_RAILS);
		return -1;
	}
	strcpy(buf, arg);
	for (p = buf; ; p = comma + 1) {
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (n == KXFER_MAX_RAILS) {
			kx_usage_error("too many addresses (at most %d rails)",
				       KXFER_MAX_RAILS);
			return -1;
		}
		if (kx_parse_addr(p, &addrs[n])) {
			kx_usage_error("invalid address \"%s\" (expected an IPv4 or IPv6 address)",
				       p);
			return -1;
		}
		n++;
		if (!comma)
			return n;
	}
}

/* The rails after the first, one KXFER_A_PEER_RAILS nest each. */
static int peer_put_rails(struct nl_msg *msg, const struct kx_addr *addrs,
			  int n)
{
	struct nlattr *nest;
	int i;

	for (i = 1; i < n; i++) {
		nest = nla_nest_start(msg, KXFER_A_PEER_RAILS);
		if (!nest)
			return -NLE_NOMEM;
		if (nla_put(msg, KXFER_A_RAIL_ADDR, (int)addrs[i].len,
			    addrs[i].bytes) < 0)
			return -NLE_NOMEM;
		nla_nest_end(msg, nest);
	}
	return 0;
}

/* What "peer add" was told. */
struct peer_add_args {
	const char *name;
	const char *key;
	struct kx_addr addrs[KXFER_MAX_RAILS];
	int naddr;
	uint16_t port;
	uint32_t qps;
	uint32_t depth;
	int poll;
	unsigned int seen;	/* bit i: peer_add_keys[i] was given */
};

/* The address and keywords after "peer add NAME". */
static int peer_add_parse(struct kx *kx, struct peer_add_args *a)
{
	if (kx_no_arg(kx))
		return kx_usage_error("peer add: ADDR is missing, try \"kxferctl peer help\"");
	a->naddr = peer_parse_addrs(kx_argv(kx), a->addrs);
	if (a->naddr < 0)
		return KX_EXIT_USAGE;
	kx_arg_inc(kx);

	while (!kx_no_arg(kx)) {
		const char *val;
		int word;

		word = kx_next_keyword(kx, peer_add_keys, ARRAY_SIZE(peer_add_keys),
				       &a->seen, &val);
		switch (word) {
		case PEER_KEY_PORT:
			if (kx_parse_port(val, &a->port))
				return kx_usage_error("invalid port \"%s\" (expected 1 to 65535)",
						      val);
			break;
		case PEER_KEY_QPS:
			if (kx_parse_u32(val, &a->qps) || !a->qps ||
			    a->qps > KXFER_MAX_QPS)
				return kx_usage_error("invalid qps \"%s\" (expected 1 to %d)",
						      val, KXFER_MAX_QPS);
			break;
		case PEER_KEY_DEPTH:
			if (kx_parse_u32(val, &a->depth) || !a->depth)
				return kx_usage_error("invalid depth \"%s\" (expected a positive number)",
						      val);
			break;
		case PEER_KEY_KEY:
			if (kx_check_name("key name", val, KXFER_NAME_MAX - 1))
				return KX_EXIT_USAGE;
			a->key = val;
			break;
		case PEER_KEY_CQ:
			if (kx_parse_cq(val, &a->poll))
				return KX_EXIT_USAGE;
			break;
		default:
			return KX_EXIT_USAGE;
		}
	}
	return KX_EXIT_OK;
}

/* The PEER_NEW request's attributes.  Return: 0 or a negative error. */
static int peer_add_put(struct nl_msg *msg, const struct peer_add_args *a)
{
	int ret;

	ret = nla_put_string(msg, KXFER_A_PEER_NAME, a->name);
	if (!ret)
		ret = nla_put(msg, KXFER_A_PEER_ADDR, (int)a->addrs[0].len,
			      a->addrs[0].bytes);
	if (!ret)
		ret = peer_put_rails(msg, a->addrs, a->naddr);
	/* what is not given is left to the module's defaults */
	if (!ret && (a->seen & (1U << PEER_KEY_PORT)))
		ret = nla_put_u16(msg, KXFER_A_PEER_PORT, a->port);
	if (!ret && (a->seen & (1U << PEER_KEY_QPS)))
		ret = nla_put_u32(msg, KXFER_A_PEER_QPS, a->qps);
	if (!ret && (a->seen & (1U << PEER_KEY_DEPTH)))
		ret = nla_put_u32(msg, KXFER_A_PEER_DEPTH, a->depth);
	if (!ret && a->key)
		ret = nla_put_string(msg, KXFER_A_PEER_KEY, a->key);
	if (!ret && a->poll)
		ret = nla_put_flag(msg, KXFER_A_PEER_POLL);
	return ret;
}

static int peer_add(struct kx *kx)
{
	struct peer_add_args a = { 0 };
	struct nl_msg *msg;
	int ret;

	ret = peer_name_arg(kx, "add", &a.name);
	if (ret)
		return ret;
	ret = peer_add_parse(kx, &a);
	if (ret)
		return ret;

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_PEER_NEW, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = peer_add_put(msg, &a);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}

	return kx_nl_request(kx, msg, &peer_set, NULL, NULL);
}

static int peer_del(struct kx *kx)
{
	struct nl_msg *msg;
	const char *name;
	int ret;

	ret = peer_name_arg(kx, "del", &name);
	if (ret)
		return ret;
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl peer help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_PEER_DEL, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = nla_put_string(msg, KXFER_A_PEER_NAME, name);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &peer_set, NULL, NULL);
}

static int peer_show_one(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	(void)arg;
	return peer_print(kx, nlh, NULL);
}

static int peer_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		ret = peer_name_arg(kx, "show", &name);
		if (ret)
			return ret;
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl peer help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_PEER_GET, name ? NLM_F_ACK : NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	if (name) {
		ret = nla_put_string(msg, KXFER_A_PEER_NAME, name);
		if (ret < 0) {
			nlmsg_free(msg);
			return kx_nl_put_failed(ret);
		}
	}

	out_list_begin();
	ret = kx_nl_request(kx, msg, &peer_set, peer_show_one, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd peer_cmds[] = {
	{ NULL,		peer_show },
	{ "add",	peer_add },
	{ "del",	peer_del },
	{ "show",	peer_show },
	{ "list",	peer_show },
	{ "help",	peer_cmd_help },
	{ NULL,		NULL },
};

int cmd_peer(struct kx *kx)
{
	return kx_exec_cmd(kx, peer_cmds, "peer");
}
