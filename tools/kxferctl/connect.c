// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl connect: the policy of sessions on demand.
 *
 * A rule names a prefix of addresses (and their listeners' port) that any
 * user of /dev/kxfer may have the kernel connect to (KXFER_IOC_CONNECT),
 * the key such a session proves, its QPs, and how long it stays unused
 * before it ends.  "connect allow PREFIX ..." adds one, "connect del
 * PREFIX [port P]" deletes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

static const char *const connect_attr_names[KXFER_A_CONNECT_MAX + 1] = {
	[KXFER_A_CONNECT_PREFIX]	= "prefix",
	[KXFER_A_CONNECT_PORT]		= "port",
	[KXFER_A_CONNECT_KEY]		= "key",
	[KXFER_A_CONNECT_QPS]		= "qps",
	[KXFER_A_CONNECT_IDLE]		= "idle",
	[KXFER_A_CONNECT_MADE]		= "made",
	[KXFER_A_CONNECT_REFUSED]	= "refused",
};

static const struct kx_attr_set connect_set = {
	.name = "connect",
	.attrs = connect_attr_names,
	.max = KXFER_A_CONNECT_MAX,
};

static const struct nla_policy connect_policy[KXFER_A_CONNECT_MAX + 1] = {
	[KXFER_A_CONNECT_PREFIX]	= { .type = NLA_NESTED },
	[KXFER_A_CONNECT_PORT]		= { .type = NLA_U16 },
	[KXFER_A_CONNECT_KEY]		= { .type = NLA_STRING },
	[KXFER_A_CONNECT_QPS]		= { .type = NLA_U32 },
	[KXFER_A_CONNECT_IDLE]		= { .type = NLA_U32 },
	[KXFER_A_CONNECT_MADE]		= { .type = NLA_U32 },
	[KXFER_A_CONNECT_REFUSED]	= { .type = NLA_U32 },
};

static void connect_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl connect allow PREFIX [ port PORT ] [ key KEY ] [ qps QPS ]\n"
		"                                     [ idle SECONDS ]\n"
		"       kxferctl connect del PREFIX [ port PORT ]\n"
		"       kxferctl connect show\n"
		"       kxferctl connect help\n"
		"where  PREFIX := ADDR[/LEN]   (no LEN: that address only; not /0)\n"
		"       PORT := 1..65535   (the listeners' port; default %d)\n"
		"       KEY := the key (kxferctl key) the sessions prove\n"
		"       QPS := 1..%d   (default 1)\n"
		"       SECONDS := 1..%d   (default %d): how long a session made on demand\n"
		"                  may go without a handle or a job before it ends\n"
		"Any user of /dev/kxfer may then have the kernel connect to an address of\n"
		"PREFIX (KXFER_IOC_CONNECT); the first rule that allows it applies.\n",
		KXFER_PORT, KXFER_MAX_QPS, KXFER_CONNECT_IDLE_MAX,
		KXFER_CONNECT_IDLE_DEFAULT);
}

static int connect_cmd_help(struct kx *kx)
{
	(void)kx;
	connect_help(stdout);
	return KX_EXIT_OK;
}

/* One rule of a CONNECT_GET dump. */
static int connect_print(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	struct nlattr *tb[KXFER_A_CONNECT_MAX + 1];
	char pfx[KX_PREFIX_STRLEN];
	int ret = 0;

	(void)kx;
	(void)arg;
	if (kx_nl_parse(nlh, tb, KXFER_A_CONNECT_MAX, connect_policy) < 0 ||
	    !tb[KXFER_A_CONNECT_PREFIX])
		return -1;
	if (kx_nl_format_prefix(pfx, sizeof(pfx), tb[KXFER_A_CONNECT_PREFIX]))
		ret = -1;

	out_start_obj(NULL);
	/* text "connect allow 10.99.0.0/24 port 19875 ...", as it was made */
	out_str(out_is_json() ? "prefix" : "connect allow", pfx);
	if (tb[KXFER_A_CONNECT_PORT])
		out_u64("port", nla_get_u16(tb[KXFER_A_CONNECT_PORT]));
	if (tb[KXFER_A_CONNECT_KEY])
		out_str("key", nla_get_string(tb[KXFER_A_CONNECT_KEY]));
	if (tb[KXFER_A_CONNECT_QPS])
		out_u64("qps", nla_get_u32(tb[KXFER_A_CONNECT_QPS]));
	if (tb[KXFER_A_CONNECT_IDLE])
		out_u64("idle", nla_get_u32(tb[KXFER_A_CONNECT_IDLE]));
	if (tb[KXFER_A_CONNECT_MADE])
		out_u64("made", nla_get_u32(tb[KXFER_A_CONNECT_MADE]));
	if (tb[KXFER_A_CONNECT_REFUSED])
		out_u64("refused", nla_get_u32(tb[KXFER_A_CONNECT_REFUSED]));
	out_end_obj();
	return ret;
}

/* "connect allow|del PREFIX": the prefix, parsed, consumed. */
static int connect_prefix_arg(struct kx *kx, const char *verb,
			      struct kx_prefix *pfx)
{
	int ret;

	if (kx_no_arg(kx))
		return kx_usage_error("connect %s: PREFIX is missing, try %s",
				      verb, "\"kxferctl connect help\"");
	ret = kx_prefix_arg(kx_argv(kx), pfx);
	if (ret)
		return ret;
	if (!pfx->plen)
		return kx_usage_error("prefix \"%s\" would allow every address",
				      kx_argv(kx));
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

enum {
	CONNECT_KEY_PORT,
	CONNECT_KEY_KEY,
	CONNECT_KEY_QPS,
	CONNECT_KEY_IDLE,
};

static const char *const connect_allow_keys[] = {
	[CONNECT_KEY_PORT]	= "port",
	[CONNECT_KEY_KEY]	= "key",
	[CONNECT_KEY_QPS]	= "qps",
	[CONNECT_KEY_IDLE]	= "idle",
};

/* A new rule's options beside its prefix; 0: the module's default. */
struct connect_opts {
	uint16_t port;
	const char *key;
	uint32_t qps;
	uint32_t idle;
};

static int connect_send(struct kx *kx, uint8_t cmd, const struct kx_prefix *pfx,
			const struct connect_opts *co)
{
	struct nl_msg *msg;
	int ret;

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, cmd, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = kx_nl_put_prefix(msg, KXFER_A_CONNECT_PREFIX, pfx);
	if (!ret && co->port)
		ret = nla_put_u16(msg, KXFER_A_CONNECT_PORT, co->port);
	if (!ret && co->key)
		ret = nla_put_string(msg, KXFER_A_CONNECT_KEY, co->key);
	if (!ret && co->qps)
		ret = nla_put_u32(msg, KXFER_A_CONNECT_QPS, co->qps);
	if (!ret && co->idle)
		ret = nla_put_u32(msg, KXFER_A_CONNECT_IDLE, co->idle);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &connect_set, NULL, NULL);
}

/* connect allow PREFIX [port PORT] [key KEY] [qps QPS] [idle SECONDS] */
static int connect_allow(struct kx *kx)
{
	struct connect_opts co = { 0 };
	unsigned int seen = 0;
	struct kx_prefix pfx;
	int ret;

	ret = connect_prefix_arg(kx, "allow", &pfx);
	if (ret)
		return ret;
	while (!kx_no_arg(kx)) {
		const char *val;

		switch (kx_next_keyword(kx, connect_allow_keys,
					ARRAY_SIZE(connect_allow_keys), &seen, &val)) {
		case CONNECT_KEY_PORT:
			if (kx_parse_port(val, &co.port))
				return kx_usage_error("invalid port \"%s\" (expected 1 to 65535)",
						      val);
			break;
		case CONNECT_KEY_KEY:
			if (kx_check_name("key name", val, KXFER_NAME_MAX - 1))
				return KX_EXIT_USAGE;
			co.key = val;
			break;
		case CONNECT_KEY_QPS:
			if (kx_parse_u32(val, &co.qps) || !co.qps ||
			    co.qps > KXFER_MAX_QPS)
				return kx_usage_error("invalid qps \"%s\" (expected 1 to %d)",
						      val, KXFER_MAX_QPS);
			break;
		case CONNECT_KEY_IDLE:
			if (kx_parse_u32(val, &co.idle) || !co.idle ||
			    co.idle > KXFER_CONNECT_IDLE_MAX)
				return kx_usage_error("invalid idle \"%s\" (%s 1 to %d seconds)",
						      val, "expected",
						      KXFER_CONNECT_IDLE_MAX);
			break;
		default:
			return KX_EXIT_USAGE;
		}
	}
	return connect_send(kx, KXFER_CMD_CONNECT_NEW, &pfx, &co);
}

static const char *const connect_del_keys[] = {
	[CONNECT_KEY_PORT]	= "port",
};

static int connect_del(struct kx *kx)
{
	struct connect_opts co = { .port = KXFER_PORT };
	unsigned int seen = 0;
	struct kx_prefix pfx;
	int ret;

	ret = connect_prefix_arg(kx, "del", &pfx);
	if (ret)
		return ret;
	while (!kx_no_arg(kx)) {
		const char *val;

		if (kx_next_keyword(kx, connect_del_keys,
				    ARRAY_SIZE(connect_del_keys), &seen, &val) < 0)
			return KX_EXIT_USAGE;
		if (kx_parse_port(val, &co.port))
			return kx_usage_error("invalid port \"%s\" (expected 1 to 65535)",
					      val);
	}
	return connect_send(kx, KXFER_CMD_CONNECT_DEL, &pfx, &co);
}

static int connect_show(struct kx *kx)
{
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl connect help\"",
				      kx_argv(kx));
	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_CONNECT_GET, NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	out_list_begin();
	ret = kx_nl_request(kx, msg, &connect_set, connect_print, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd connect_cmds[] = {
	{ NULL,		connect_show },
	{ "allow",	connect_allow },
	{ "del",	connect_del },
	{ "show",	connect_show },
	{ "list",	connect_show },
	{ "help",	connect_cmd_help },
	{ NULL,		NULL },
};

int cmd_connect(struct kx *kx)
{
	return kx_exec_cmd(kx, connect_cmds, "connect");
}
