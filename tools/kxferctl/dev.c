// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl dev: the RDMA devices kxfer is a client of.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kxferctl.h"

static const char *const dev_attr_names[KXFER_A_DEV_MAX + 1] = {
	[KXFER_A_DEV_NAME]			= "name",
	[KXFER_A_DEV_NODE_GUID]			= "node-guid",
	[KXFER_A_DEV_PORTS]			= "ports",
	[KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN] = "max-fast-reg-page-list-len",
	[KXFER_A_DEV_MAX_SEND_SGE]		= "max-send-sge",
	[KXFER_A_DEV_MAX_QP_WR]			= "max-qp-wr",
	[KXFER_A_DEV_MAX_MR_SIZE]		= "max-mr-size",
	[KXFER_A_DEV_PORT]			= "port",
	[KXFER_A_DEV_PAD]			= "pad",
};

static const struct kx_attr_set dev_set = {
	.name = "dev",
	.attrs = dev_attr_names,
	.max = KXFER_A_DEV_MAX,
};

static const struct nla_policy dev_policy[KXFER_A_DEV_MAX + 1] = {
	[KXFER_A_DEV_NAME]			= { .type = NLA_STRING },
	[KXFER_A_DEV_NODE_GUID]			= { .type = NLA_U64 },
	[KXFER_A_DEV_PORTS]			= { .type = NLA_NESTED },
	[KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN] = { .type = NLA_U32 },
	[KXFER_A_DEV_MAX_SEND_SGE]		= { .type = NLA_U32 },
	[KXFER_A_DEV_MAX_QP_WR]			= { .type = NLA_U32 },
	[KXFER_A_DEV_MAX_MR_SIZE]		= { .type = NLA_U64 },
	[KXFER_A_DEV_PORT]			= { .type = NLA_NESTED },
};

static const struct nla_policy port_policy[KXFER_A_PORT_MAX + 1] = {
	[KXFER_A_PORT_NUM]		= { .type = NLA_U32 },
	[KXFER_A_PORT_STATE]		= { .type = NLA_U32 },
	[KXFER_A_PORT_LINK_LAYER]	= { .type = NLA_U32 },
	[KXFER_A_PORT_ACTIVE_MTU]	= { .type = NLA_U32 },
	[KXFER_A_PORT_GID_TBL_LEN]	= { .type = NLA_U32 },
	[KXFER_A_PORT_NETDEV]		= { .type = NLA_STRING },
};

/* IBTA port states, spelled as "rdma link" prints them. */
static const char *const port_states[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};

static const char *const link_layers[] = {
	[KXFER_LINK_LAYER_UNSPECIFIED]	= "unspecified",
	[KXFER_LINK_LAYER_INFINIBAND]	= "InfiniBand",
	[KXFER_LINK_LAYER_ETHERNET]	= "Ethernet",
};

static void dev_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl dev show [ DEV ]\n"
		"       kxferctl dev help\n");
}

static int dev_cmd_help(struct kx *kx)
{
	(void)kx;
	dev_help(stdout);
	return KX_EXIT_OK;
}

static int port_print(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_PORT_MAX + 1];

	if (nla_parse_nested(tb, KXFER_A_PORT_MAX, nest,
			     (struct nla_policy *)port_policy) < 0)
		return -1;

	out_start_obj(NULL);
	if (tb[KXFER_A_PORT_NUM])
		out_u64("port", nla_get_u32(tb[KXFER_A_PORT_NUM]));
	if (tb[KXFER_A_PORT_STATE])
		out_enum("state", port_states, ARRAY_SIZE(port_states),
			 nla_get_u32(tb[KXFER_A_PORT_STATE]));
	if (tb[KXFER_A_PORT_LINK_LAYER])
		out_enum("link_layer", link_layers, ARRAY_SIZE(link_layers),
			 nla_get_u32(tb[KXFER_A_PORT_LINK_LAYER]));
	if (tb[KXFER_A_PORT_ACTIVE_MTU])
		out_u64("active_mtu", nla_get_u32(tb[KXFER_A_PORT_ACTIVE_MTU]));
	if (tb[KXFER_A_PORT_GID_TBL_LEN])
		out_u64("gid_tbl_len", nla_get_u32(tb[KXFER_A_PORT_GID_TBL_LEN]));
	if (tb[KXFER_A_PORT_NETDEV])
		out_str("netdev", nla_get_string(tb[KXFER_A_PORT_NETDEV]));
	out_end_obj();
	return 0;
}

/**
 * dev_print - print one device from a DEV_GET reply or a DEV_ADD_NTF event
 * @event: the monitor event name, or NULL for "dev show"
 *
 * Return: 0, or -1 if the message is malformed.
 */
int dev_print(struct kx *kx, struct nlmsghdr *nlh, const char *event)
{
	struct nlattr *tb[KXFER_A_DEV_MAX + 1];
	int ret = 0;

	(void)kx;
	if (kx_nl_parse(nlh, tb, KXFER_A_DEV_MAX, dev_policy) < 0 ||
	    !tb[KXFER_A_DEV_NAME])
		return -1;

	out_start_obj(NULL);
	if (event)
		out_event(event);
	out_name("dev", nla_get_string(tb[KXFER_A_DEV_NAME]));
	if (tb[KXFER_A_DEV_NODE_GUID]) {
		uint64_t guid = nla_get_u64(tb[KXFER_A_DEV_NODE_GUID]);
		char buf[32];

		/* as "rdma dev" and ibv_devinfo print it */
		snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x",
			 (unsigned int)(guid >> 48) & 0xffff,
			 (unsigned int)(guid >> 32) & 0xffff,
			 (unsigned int)(guid >> 16) & 0xffff,
			 (unsigned int)guid & 0xffff);
		out_str("node_guid", buf);
	}
	if (tb[KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN])
		out_u64("max_fast_reg_page_list_len",
			nla_get_u32(tb[KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN]));
	if (tb[KXFER_A_DEV_MAX_SEND_SGE])
		out_u64("max_send_sge", nla_get_u32(tb[KXFER_A_DEV_MAX_SEND_SGE]));
	if (tb[KXFER_A_DEV_MAX_QP_WR])
		out_u64("max_qp_wr", nla_get_u32(tb[KXFER_A_DEV_MAX_QP_WR]));
	if (tb[KXFER_A_DEV_MAX_MR_SIZE])
		out_bytes("max_mr_size", nla_get_u64(tb[KXFER_A_DEV_MAX_MR_SIZE]));

	if (tb[KXFER_A_DEV_PORTS]) {
		struct nlattr *pos;
		int rem;

		out_start_array("ports");
		nla_for_each_nested(pos, tb[KXFER_A_DEV_PORTS], rem) {
			if (nla_type(pos) != KXFER_A_DEV_PORT)
				continue;
			if (port_print(pos) < 0)
				ret = -1;
		}
		out_end_array();
	}
	out_end_obj();
	return ret;
}

static int dev_show_one(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	(void)arg;
	return dev_print(kx, nlh, NULL);
}

static int dev_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		name = kx_argv(kx);
		if (kx_check_name("device name", name, KX_DEV_NAME_MAX))
			return KX_EXIT_USAGE;
		kx_arg_inc(kx);
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl dev help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;

	msg = kx_nl_msg(kx, KXFER_CMD_DEV_GET, name ? NLM_F_ACK : NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	if (name) {
		ret = nla_put_string(msg, KXFER_A_DEV_NAME, name);
		if (ret < 0) {
			nlmsg_free(msg);
			return kx_nl_put_failed(ret);
		}
	}

	out_list_begin();
	ret = kx_nl_request(kx, msg, &dev_set, dev_show_one, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd dev_cmds[] = {
	{ NULL,		dev_show },
	{ "show",	dev_show },
	{ "list",	dev_show },
	{ "help",	dev_cmd_help },
	{ NULL,		NULL },
};

int cmd_dev(struct kx *kx)
{
	return kx_exec_cmd(kx, dev_cmds, "dev");
}
