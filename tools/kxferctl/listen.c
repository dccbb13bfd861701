// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl listen: the addresses the module accepts sessions on.
 *
 * A listener is named by its address and port.  "listen ADDR" creates
 * one (on port KXFER_PORT unless told otherwise), "listen del ADDR"
 * deletes it.  Its allow list holds the prefixes of the peers it may
 * accept; each prefix travels as one KXFER_A_LISTEN_ALLOW nest at the
 * top level of the message, repeated as often as needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

static const char *const listen_attr_names[KXFER_A_LISTEN_MAX + 1] = {
	[KXFER_A_LISTEN_ADDR]		= "addr",
	[KXFER_A_LISTEN_PORT]		= "port",
	[KXFER_A_LISTEN_ALLOW]		= "allow",
	[KXFER_A_LISTEN_STATE]		= "state",
	[KXFER_A_LISTEN_ACCEPTED]	= "accepted",
	[KXFER_A_LISTEN_REJECTED]	= "rejected",
	[KXFER_A_LISTEN_KEY]		= "key",
	[KXFER_A_LISTEN_AUTH]		= "auth",
	[KXFER_A_LISTEN_AUTH_OK]	= "auth-ok",
	[KXFER_A_LISTEN_AUTH_FAILED]	= "auth-failed",
	[KXFER_A_LISTEN_EVICTED]	= "evicted",
	[KXFER_A_LISTEN_POLL]		= "poll",
};

static const struct kx_attr_set listen_set = {
	.name = "listen",
	.attrs = listen_attr_names,
	.max = KXFER_A_LISTEN_MAX,
};

static const struct nla_policy listen_policy[KXFER_A_LISTEN_MAX + 1] = {
	/* 4 or 16 bytes, checked by kx_format_addr() */
	[KXFER_A_LISTEN_ADDR]		= { .minlen = 4, .maxlen = 16 },
	[KXFER_A_LISTEN_PORT]		= { .type = NLA_U16 },
	[KXFER_A_LISTEN_ALLOW]		= { .type = NLA_NESTED },
	[KXFER_A_LISTEN_STATE]		= { .type = NLA_U32 },
	[KXFER_A_LISTEN_ACCEPTED]	= { .type = NLA_U32 },
	[KXFER_A_LISTEN_REJECTED]	= { .type = NLA_U32 },
	[KXFER_A_LISTEN_KEY]		= { .type = NLA_STRING },
	[KXFER_A_LISTEN_AUTH]		= { .type = NLA_U32 },
	[KXFER_A_LISTEN_AUTH_OK]	= { .type = NLA_U32 },
	[KXFER_A_LISTEN_AUTH_FAILED]	= { .type = NLA_U32 },
	[KXFER_A_LISTEN_EVICTED]	= { .type = NLA_U32 },
	[KXFER_A_LISTEN_POLL]		= { .type = NLA_FLAG },
};

static const char *const listen_states[] = {
	[KXFER_LISTEN_ACTIVE]	= "listening",
	[KXFER_LISTEN_WAITING]	= "waiting",
};

static void listen_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl listen [ add ] ADDR [ port PORT ] [ allow PREFIX [ PREFIX ... ] ]...\n"
		"                               [ key KEY ] [ auth { required | optional } ]\n"
		"                               [ cq { irq | poll } ]\n"
		"       kxferctl listen del ADDR [ port PORT ]\n"
		"       kxferctl listen show\n"
		"       kxferctl listen help\n"
		"where  ADDR := { IPv4 address | IPv6 address }\n"
		"       PORT := 1..65535   (default %d)\n"
		"       PREFIX := ADDR[/LEN]   (of ADDR's family; no LEN: that address only)\n"
		"       KEY := the key (kxferctl key) sessions prove, unless their node has one\n"
		"       auth required: only sessions that authenticate (default optional)\n"
		"       cq poll: the sessions it accepts have polled send CQs, as peer add's\n"
		"              (their users' SUBMIT and REAP reap them); irq (default): softirq\n",
		KXFER_PORT);
}

static int listen_cmd_help(struct kx *kx)
{
	(void)kx;
	listen_help(stdout);
	return KX_EXIT_OK;
}

/* Text "allow 10.99.0.0/24 fd00::/8"; JSON "allow":["10.99.0.0/24","fd00::/8"]. */
static int allow_print(struct nlmsghdr *nlh)
{
	const struct genlmsghdr *gnlh = nlmsg_data(nlh);
	char buf[KX_PREFIX_STRLEN];
	struct nlattr *pos;
	unsigned int n = 0;
	int rem, ret = 0;

	out_start_array("allow");
	nla_for_each_attr(pos, genlmsg_attrdata(gnlh, 0),
			  genlmsg_attrlen(gnlh, 0), rem) {
		if (nla_type(pos) != KXFER_A_LISTEN_ALLOW)
			continue;
		if (kx_nl_format_prefix(buf, sizeof(buf), pos)) {
			ret = -1;
			if (!strcmp(buf, "?"))
				continue;
		}

		if (out_is_json())
			out_str(NULL, buf);
		else if (!n)
			out_text("allow %s", buf);
		else
			out_text_cont(" %s", buf);
		n++;
	}
	out_end_array();
	return ret;
}

/* One listener of a LISTEN_GET dump. */
static int listen_print(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	struct nlattr *tb[KXFER_A_LISTEN_MAX + 1];
	char addr[KX_ADDR_STRLEN];
	int ret = 0;

	(void)kx;
	(void)arg;
	if (kx_nl_parse(nlh, tb, KXFER_A_LISTEN_MAX, listen_policy) < 0 ||
	    !tb[KXFER_A_LISTEN_ADDR])
		return -1;
	if (kx_format_addr(addr, sizeof(addr), nla_data(tb[KXFER_A_LISTEN_ADDR]),
			   (size_t)nla_len(tb[KXFER_A_LISTEN_ADDR])))
		ret = -1;

	out_start_obj(NULL);
	/* text "listen 10.99.0.1 port 19875 ...", as it was created */
	out_str(out_is_json() ? "addr" : "listen", addr);
	if (tb[KXFER_A_LISTEN_PORT])
		out_u64("port", nla_get_u16(tb[KXFER_A_LISTEN_PORT]));
	if (tb[KXFER_A_LISTEN_STATE])
		out_enum("state", listen_states, ARRAY_SIZE(listen_states),
			 nla_get_u32(tb[KXFER_A_LISTEN_STATE]));
	if (tb[KXFER_A_LISTEN_ACCEPTED])
		out_u64("accepted", nla_get_u32(tb[KXFER_A_LISTEN_ACCEPTED]));
	if (tb[KXFER_A_LISTEN_REJECTED])
		out_u64("rejected", nla_get_u32(tb[KXFER_A_LISTEN_REJECTED]));
	if (tb[KXFER_A_LISTEN_KEY])
		out_str("key", nla_get_string(tb[KXFER_A_LISTEN_KEY]));
	if (tb[KXFER_A_LISTEN_AUTH])
		out_enum("auth", kx_auth_policies, KX_AUTH_POLICIES,
			 nla_get_u32(tb[KXFER_A_LISTEN_AUTH]));
	if (tb[KXFER_A_LISTEN_AUTH_OK])
		out_u64("auth_ok", nla_get_u32(tb[KXFER_A_LISTEN_AUTH_OK]));
	if (tb[KXFER_A_LISTEN_AUTH_FAILED])
		out_u64("auth_failed",
			nla_get_u32(tb[KXFER_A_LISTEN_AUTH_FAILED]));
	if (tb[KXFER_A_LISTEN_EVICTED])
		out_u64("evicted", nla_get_u32(tb[KXFER_A_LISTEN_EVICTED]));
	out_str("cq", tb[KXFER_A_LISTEN_POLL] ? "poll" : "irq");
	/* last: in text the list runs to the end of the line */
	if (allow_print(nlh))
		ret = -1;
	out_end_obj();
	return ret;
}

/* "listen [add|del] ADDR": the address, parsed, consumed. */
static int listen_addr_arg(struct kx *kx, const char *verb, struct kx_addr *addr)
{
	if (kx_no_arg(kx))
		return kx_usage_error("listen %s: ADDR is missing, try \"kxferctl listen help\"",
				      verb);
	if (kx_parse_addr(kx_argv(kx), addr))
		return kx_usage_error("invalid address \"%s\" (expected an IPv4 or IPv6 address)",
				      kx_argv(kx));
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

static int listen_port_arg(const char *val, uint16_t *port)
{
	if (kx_parse_port(val, port))
		return kx_usage_error("invalid port \"%s\" (expected 1 to 65535)",
				      val);
	return KX_EXIT_OK;
}

/* One word after "allow": a prefix of the listener's address family. */
static int listen_prefix_arg(const char *val, const struct kx_addr *laddr,
			     struct kx_prefix *pfx)
{
	if (kx_prefix_arg(val, pfx))
		return KX_EXIT_USAGE;
	if (pfx->addr.family != laddr->family)
		return kx_usage_error("prefix \"%s\" is %s but the listen address is %s",
				      val,
				      pfx->addr.family == AF_INET ? "IPv4" : "IPv6",
				      laddr->family == AF_INET ? "IPv4" : "IPv6");
	return KX_EXIT_OK;
}

enum {
	LISTEN_KEY_PORT,
	LISTEN_KEY_ALLOW,
	LISTEN_KEY_KEY,
	LISTEN_KEY_AUTH,
	LISTEN_KEY_CQ,
};

static const char *const listen_add_keys[] = {
	[LISTEN_KEY_PORT]	= "port",
	[LISTEN_KEY_ALLOW]	= "allow",
	[LISTEN_KEY_KEY]	= "key",
	[LISTEN_KEY_AUTH]	= "auth",
	[LISTEN_KEY_CQ]		= "cq",
};

/* A new listener's options beside its address and prefixes. */
struct listen_opts {
	const char *key;	/* NULL: none of its own */
	bool has_auth;
	uint32_t auth;		/* enum kxfer_auth_policy */
	int poll;		/* cq poll */
};

static int listen_add_send(struct kx *kx, const struct kx_addr *addr,
			   bool has_port, uint16_t port,
			   const struct kx_prefix *allow, size_t nallow,
			   const struct listen_opts *la)
{
	struct nl_msg *msg;
	int ret;

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_LISTEN_NEW, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;

	ret = nla_put(msg, KXFER_A_LISTEN_ADDR, (int)addr->len, addr->bytes);
	/* no port: the module's default, KXFER_PORT */
	if (!ret && has_port)
		ret = nla_put_u16(msg, KXFER_A_LISTEN_PORT, port);
	if (!ret && la->key)
		ret = nla_put_string(msg, KXFER_A_LISTEN_KEY, la->key);
	if (!ret && la->has_auth)
		ret = nla_put_u32(msg, KXFER_A_LISTEN_AUTH, la->auth);
	if (!ret && la->poll)
		ret = nla_put_flag(msg, KXFER_A_LISTEN_POLL);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	for (size_t i = 0; i < nallow; i++) {
		ret = kx_nl_put_prefix(msg, KXFER_A_LISTEN_ALLOW, &allow[i]);
		if (ret < 0) {
			nlmsg_free(msg);
			fprintf(stderr, "Error: too many allow prefixes, %zu do not fit in one request\n",
				nallow);
			return KX_EXIT_FAIL;
		}
	}

	return kx_nl_request(kx, msg, &listen_set, NULL, NULL);
}

/*
 * listen [add] ADDR [port PORT] [allow PREFIX [PREFIX ...]]...
 *		[key KEY] [auth required|optional] [cq irq|poll]
 *
 * "allow" may be repeated, and takes every word up to the next keyword.
 */
static int listen_add(struct kx *kx)
{
	struct listen_opts la = { 0 };
	struct kx_prefix *allow;
	unsigned int seen = 0;
	struct kx_addr addr;
	uint16_t port = 0;
	size_t nallow = 0;
	int ret;

	ret = listen_addr_arg(kx, "add", &addr);
	if (ret)
		return ret;

	/* never more prefixes than words left */
	allow = calloc((size_t)kx->argc + 1, sizeof(*allow));
	if (!allow) {
		fprintf(stderr, "Error: out of memory\n");
		return KX_EXIT_FAIL;
	}

	while (!kx_no_arg(kx)) {
		const char *val;
		int key;

		key = kx_next_keyword(kx, listen_add_keys,
				      ARRAY_SIZE(listen_add_keys), &seen, &val);
		switch (key) {
		case LISTEN_KEY_PORT:
			ret = listen_port_arg(val, &port);
			break;
		case LISTEN_KEY_ALLOW:
			seen &= ~(1U << LISTEN_KEY_ALLOW);	/* may repeat */
			if (kx_lookup(val, listen_add_keys,
				      ARRAY_SIZE(listen_add_keys)) != -1) {
				ret = kx_usage_error("\"allow\" needs a value");
				break;
			}
			for (;;) {
				ret = listen_prefix_arg(val, &addr, &allow[nallow]);
				if (ret)
					break;
				nallow++;
				if (kx_no_arg(kx) ||
				    kx_lookup(kx_argv(kx), listen_add_keys,
					      ARRAY_SIZE(listen_add_keys)) != -1)
					break;
				val = kx_argv(kx);
				kx_arg_inc(kx);
			}
			break;
		case LISTEN_KEY_KEY:
			if (kx_check_name("key name", val, KXFER_NAME_MAX - 1))
				ret = KX_EXIT_USAGE;
			la.key = val;
			break;
		case LISTEN_KEY_AUTH:
			ret = kx_parse_auth(val, &la.auth);
			la.has_auth = true;
			break;
		case LISTEN_KEY_CQ:
			ret = kx_parse_cq(val, &la.poll);
			break;
		default:
			ret = KX_EXIT_USAGE;
		}
		if (ret)
			goto out;
	}

	ret = listen_add_send(kx, &addr, seen & (1U << LISTEN_KEY_PORT), port,
			      allow, nallow, &la);
out:
	free(allow);
	return ret;
}

static const char *const listen_del_keys[] = {
	[LISTEN_KEY_PORT]	= "port",
};

static int listen_del(struct kx *kx)
{
	uint16_t port = KXFER_PORT;
	unsigned int seen = 0;
	struct kx_addr addr;
	struct nl_msg *msg;
	int ret;

	ret = listen_addr_arg(kx, "del", &addr);
	if (ret)
		return ret;
	while (!kx_no_arg(kx)) {
		const char *val;

		if (kx_next_keyword(kx, listen_del_keys,
				    ARRAY_SIZE(listen_del_keys), &seen, &val) < 0)
			return KX_EXIT_USAGE;
		ret = listen_port_arg(val, &port);
		if (ret)
			return ret;
	}

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_LISTEN_DEL, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = nla_put(msg, KXFER_A_LISTEN_ADDR, (int)addr.len, addr.bytes);
	/*
	 * Always sent, KXFER_PORT when not given: the uapi names ADDR and
	 * PORT as what LISTEN_DEL takes, and the default is the same.
	 */
	if (!ret)
		ret = nla_put_u16(msg, KXFER_A_LISTEN_PORT, port);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &listen_set, NULL, NULL);
}

static int listen_show(struct kx *kx)
{
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl listen help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_LISTEN_GET, NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;

	out_list_begin();
	ret = kx_nl_request(kx, msg, &listen_set, listen_print, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd listen_cmds[] = {
	{ NULL,		listen_show },
	{ "add",	listen_add },
	{ "del",	listen_del },
	{ "show",	listen_show },
	{ "list",	listen_show },
	{ "help",	listen_cmd_help },
	{ NULL,		NULL },
};

int cmd_listen(struct kx *kx)
{
	const char *word = kx_argv(kx);

	/*
	 * "listen ADDR ..." is "listen add ADDR ...".  A word with a dot or
	 * a colon is never a command; taking it as an address also gets a
	 * mistyped one "invalid address" rather than "unknown command".
	 */
	if (word && strpbrk(word, ".:"))
		return listen_add(kx);
	return kx_exec_cmd(kx, listen_cmds, "listen");
}
