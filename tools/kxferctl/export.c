// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl export: ranges of a pool that peers may access with RDMA.
 */
#include <stdio.h>
#include <string.h>

#include "kxferctl.h"

static const char *const export_attr_names[KXFER_A_EXPORT_MAX + 1] = {
	[KXFER_A_EXPORT_NAME]	= "name",
	[KXFER_A_EXPORT_POOL]	= "pool",
	[KXFER_A_EXPORT_OFFSET]	= "offset",
	[KXFER_A_EXPORT_LEN]	= "len",
	[KXFER_A_EXPORT_PEER]	= "peer",
	[KXFER_A_EXPORT_ACCESS]	= "access",
	[KXFER_A_EXPORT_PAD]	= "pad",
	[KXFER_A_EXPORT_FROM]	= "from",
	[KXFER_A_EXPORT_PID]	= "pid",
	[KXFER_A_EXPORT_AUTH]	= "auth",
	[KXFER_A_EXPORT_MR_PAGE] = "mr-page",
	[KXFER_A_EXPORT_MRS]	= "mrs",
	[KXFER_A_EXPORT_SCOPED]	= "scoped",
};

static const struct kx_attr_set export_set = {
	.name = "export",
	.attrs = export_attr_names,
	.max = KXFER_A_EXPORT_MAX,
};

static const struct nla_policy export_policy[KXFER_A_EXPORT_MAX + 1] = {
	[KXFER_A_EXPORT_NAME]	= { .type = NLA_STRING },
	[KXFER_A_EXPORT_POOL]	= { .type = NLA_STRING },
	[KXFER_A_EXPORT_OFFSET]	= { .type = NLA_U64 },
	[KXFER_A_EXPORT_LEN]	= { .type = NLA_U64 },
	[KXFER_A_EXPORT_PEER]	= { .type = NLA_STRING },
	[KXFER_A_EXPORT_ACCESS]	= { .type = NLA_U32 },
	[KXFER_A_EXPORT_FROM]	= { .type = NLA_NESTED },
	[KXFER_A_EXPORT_PID]	= { .type = NLA_U32 },
	[KXFER_A_EXPORT_AUTH]	= { .type = NLA_U32 },
	[KXFER_A_EXPORT_MR_PAGE] = { .type = NLA_U64 },
	[KXFER_A_EXPORT_MRS]	= { .type = NLA_U32 },
	[KXFER_A_EXPORT_SCOPED]	= { .type = NLA_FLAG },
};

static void export_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl export add NAME pool POOL [ offset OFFSET ] [ len LEN ]\n"
		"                           [ peer { PEER | any } ] [ from PREFIX ] access ACCESS\n"
		"                           [ auth { required | optional } ]\n"
		"       kxferctl export del NAME\n"
		"       kxferctl export show [ NAME ]\n"
		"       kxferctl export help\n"
		"where  OFFSET, LEN := NUMBER[K|M|G|T]   (binary: 1K = 1024)\n"
		"       ACCESS := { read | write | atomic }[,...]\n"
		"       PREFIX := ADDR[/LEN]   (only sessions whose far end is there)\n"
		"       auth required: only authenticated sessions, and with a PEER only\n"
		"                      those that proved the key of that name\n");
}

static int export_cmd_help(struct kx *kx)
{
	(void)kx;
	export_help(stdout);
	return KX_EXIT_OK;
}

/**
 * export_print - print one export from an EXPORT_GET reply or an
 * EXPORT_ADD_NTF event
 * @event: the monitor event name, or NULL for "export show"
 *
 * Return: 0, or -1 if the message is malformed.
 */
int export_print(struct kx *kx, struct nlmsghdr *nlh, const char *event)
{
	struct nlattr *tb[KXFER_A_EXPORT_MAX + 1];
	char from[KX_PREFIX_STRLEN];

	(void)kx;
	if (kx_nl_parse(nlh, tb, KXFER_A_EXPORT_MAX, export_policy) < 0 ||
	    !tb[KXFER_A_EXPORT_NAME])
		return -1;
	if (tb[KXFER_A_EXPORT_FROM] &&
	    kx_nl_format_prefix(from, sizeof(from), tb[KXFER_A_EXPORT_FROM]))
		return -1;

	out_start_obj(NULL);
	if (event)
		out_event(event);
	out_name("export", nla_get_string(tb[KXFER_A_EXPORT_NAME]));
	if (tb[KXFER_A_EXPORT_POOL])
		out_str("pool", nla_get_string(tb[KXFER_A_EXPORT_POOL]));
	if (tb[KXFER_A_EXPORT_OFFSET])
		out_bytes("offset", nla_get_u64(tb[KXFER_A_EXPORT_OFFSET]));
	if (tb[KXFER_A_EXPORT_LEN])
		out_bytes("len", nla_get_u64(tb[KXFER_A_EXPORT_LEN]));
	if (tb[KXFER_A_EXPORT_PEER])
		out_str("peer", nla_get_string(tb[KXFER_A_EXPORT_PEER]));
	else
		out_text("peer any");	/* JSON: no "peer" key */
	if (tb[KXFER_A_EXPORT_FROM])
		out_str("from", from);
	if (tb[KXFER_A_EXPORT_ACCESS])
		out_access(nla_get_u32(tb[KXFER_A_EXPORT_ACCESS]));
	if (tb[KXFER_A_EXPORT_AUTH])
		out_enum("auth", kx_auth_policies, KX_AUTH_POLICIES,
			 nla_get_u32(tb[KXFER_A_EXPORT_AUTH]));
	/* made by a process through /dev/kxfer, not by kxferctl */
	if (tb[KXFER_A_EXPORT_PID])
		out_u64("pid", nla_get_u32(tb[KXFER_A_EXPORT_PID]));
	if (tb[KXFER_A_EXPORT_MR_PAGE])
		out_bytes("mr_page", nla_get_u64(tb[KXFER_A_EXPORT_MR_PAGE]));
	if (tb[KXFER_A_EXPORT_MRS])
		out_u64("mrs", nla_get_u32(tb[KXFER_A_EXPORT_MRS]));
	/* reachable only with the token its maker gave out, never shown */
	if (tb[KXFER_A_EXPORT_SCOPED])
		out_str("lookup", "token");
	out_end_obj();
	return 0;
}

/* "export add|del|show NAME": the name, checked, consumed. */
static int export_name_arg(struct kx *kx, const char *verb, const char **name)
{
	if (kx_no_arg(kx))
		return kx_usage_error("export %s: NAME is missing, try \"kxferctl export help\"",
				      verb);
	*name = kx_argv(kx);
	if (kx_check_name("export name", *name, KXFER_NAME_MAX - 1))
		return KX_EXIT_USAGE;
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

enum {
	EXPORT_KEY_POOL,
	EXPORT_KEY_OFFSET,
	EXPORT_KEY_LEN,
	EXPORT_KEY_PEER,
	EXPORT_KEY_ACCESS,
	EXPORT_KEY_FROM,
	EXPORT_KEY_AUTH,
};

static const char *const export_add_keys[] = {
	[EXPORT_KEY_POOL]	= "pool",
	[EXPORT_KEY_OFFSET]	= "offset",
	[EXPORT_KEY_LEN]	= "len",
	[EXPORT_KEY_PEER]	= "peer",
	[EXPORT_KEY_ACCESS]	= "access",
	[EXPORT_KEY_FROM]	= "from",
	[EXPORT_KEY_AUTH]	= "auth",
};

/* What "export add" was told. */
struct export_add_args {
	const char *name;
	const char *pool;
	const char *peer;	/* NULL: any */
	struct kx_prefix from;
	uint64_t offset;
	uint64_t len;
	uint32_t access;
	uint32_t auth;
	unsigned int seen;	/* bit i: export_add_keys[i] was given */
};

/* The keywords after "export add NAME"; pool and access are required. */
static int export_add_parse(struct kx *kx, struct export_add_args *a)
{
	while (!kx_no_arg(kx)) {
		const char *val;
		int key;

		key = kx_next_keyword(kx, export_add_keys,
				      ARRAY_SIZE(export_add_keys), &a->seen, &val);
		switch (key) {
		case EXPORT_KEY_POOL:
			if (kx_check_name("pool name", val, KXFER_NAME_MAX - 1))
				return KX_EXIT_USAGE;
			a->pool = val;
			break;
		case EXPORT_KEY_OFFSET:
			if (kx_parse_size(val, &a->offset))
				return kx_usage_error("invalid offset \"%s\" (expected NUMBER[K|M|G|T])",
						      val);
			break;
		case EXPORT_KEY_LEN:
			if (kx_parse_size(val, &a->len))
				return kx_usage_error("invalid len \"%s\" (expected NUMBER[K|M|G|T])",
						      val);
			break;
		case EXPORT_KEY_PEER:
			if (!strcmp(val, "any")) {
				a->peer = NULL;
				break;
			}
			if (kx_check_name("peer name", val, KXFER_NAME_MAX - 1))
				return KX_EXIT_USAGE;
			a->peer = val;
			break;
		case EXPORT_KEY_FROM:
			if (kx_prefix_arg(val, &a->from))
				return KX_EXIT_USAGE;
			break;
		case EXPORT_KEY_ACCESS:
			if (kx_parse_access(val, &a->access))
				return kx_usage_error("invalid access \"%s\" (expected read, write, atomic, or a comma-separated set of them)",
						      val);
			break;
		case EXPORT_KEY_AUTH:
			if (kx_parse_auth(val, &a->auth))
				return KX_EXIT_USAGE;
			break;
		default:
			return KX_EXIT_USAGE;
		}
	}
	if (!a->pool)
		return kx_usage_error("export add: \"pool\" is required, try \"kxferctl export help\"");
	if (!(a->seen & (1U << EXPORT_KEY_ACCESS)))
		return kx_usage_error("export add: \"access\" is required, try \"kxferctl export help\"");
	return KX_EXIT_OK;
}

/* The EXPORT_NEW request's attributes.  Return: 0 or a negative error. */
static int export_add_put(struct nl_msg *msg, const struct export_add_args *a)
{
	int ret;

	ret = nla_put_string(msg, KXFER_A_EXPORT_NAME, a->name);
	if (!ret)
		ret = nla_put_string(msg, KXFER_A_EXPORT_POOL, a->pool);
	/* always sent: the uapi defines no default for a missing offset */
	if (!ret)
		ret = nla_put_u64(msg, KXFER_A_EXPORT_OFFSET, a->offset);
	if (!ret && (a->seen & (1U << EXPORT_KEY_LEN)))
		ret = nla_put_u64(msg, KXFER_A_EXPORT_LEN, a->len);
	if (!ret && a->peer)	/* "peer any": no attribute */
		ret = nla_put_string(msg, KXFER_A_EXPORT_PEER, a->peer);
	if (!ret)
		ret = nla_put_u32(msg, KXFER_A_EXPORT_ACCESS, a->access);
	if (!ret && (a->seen & (1U << EXPORT_KEY_AUTH)))
		ret = nla_put_u32(msg, KXFER_A_EXPORT_AUTH, a->auth);
	if (ret >= 0 && (a->seen & (1U << EXPORT_KEY_FROM)))
		ret = kx_nl_put_prefix(msg, KXFER_A_EXPORT_FROM, &a->from);
	return ret;
}

static int export_add(struct kx *kx)
{
	struct export_add_args a = { .auth = KXFER_AUTH_OPTIONAL };
	struct nl_msg *msg;
	int ret;

	ret = export_name_arg(kx, "add", &a.name);
	if (ret)
		return ret;
	ret = export_add_parse(kx, &a);
	if (ret)
		return ret;

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_EXPORT_NEW, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = export_add_put(msg, &a);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}

	return kx_nl_request(kx, msg, &export_set, NULL, NULL);
}

static int export_del(struct kx *kx)
{
	struct nl_msg *msg;
	const char *name;
	int ret;

	ret = export_name_arg(kx, "del", &name);
	if (ret)
		return ret;
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl export help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_EXPORT_DEL, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = nla_put_string(msg, KXFER_A_EXPORT_NAME, name);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &export_set, NULL, NULL);
}

static int export_show_one(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	(void)arg;
	return export_print(kx, nlh, NULL);
}

static int export_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		ret = export_name_arg(kx, "show", &name);
		if (ret)
			return ret;
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl export help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_EXPORT_GET, name ? NLM_F_ACK : NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	if (name) {
		ret = nla_put_string(msg, KXFER_A_EXPORT_NAME, name);
		if (ret < 0) {
			nlmsg_free(msg);
			return kx_nl_put_failed(ret);
		}
	}

	out_list_begin();
	ret = kx_nl_request(kx, msg, &export_set, export_show_one, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd export_cmds[] = {
	{ NULL,		export_show },
	{ "add",	export_add },
	{ "del",	export_del },
	{ "show",	export_show },
	{ "list",	export_show },
	{ "help",	export_cmd_help },
	{ NULL,		NULL },
};

int cmd_export(struct kx *kx)
{
	return kx_exec_cmd(kx, export_cmds, "export");
}
