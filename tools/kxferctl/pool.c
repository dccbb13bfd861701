// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl pool: pinned memory pools.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kxferctl.h"

static const char *const pool_attr_names[KXFER_A_POOL_MAX + 1] = {
	[KXFER_A_POOL_NAME]		= "name",
	[KXFER_A_POOL_SIZE]		= "size",
	[KXFER_A_POOL_OWNER]		= "owner",
	[KXFER_A_POOL_GROUP]		= "group",
	[KXFER_A_POOL_MODE]		= "mode",
	[KXFER_A_POOL_NUMA_NODE]	= "numa-node",
	[KXFER_A_POOL_CHUNKS]		= "chunks",
	[KXFER_A_POOL_CHUNK]		= "chunk",
	[KXFER_A_POOL_ATTACH_COUNT]	= "attach-count",
	[KXFER_A_POOL_EXPORT_COUNT]	= "export-count",
	[KXFER_A_POOL_DEVICES]		= "devices",
	[KXFER_A_POOL_DEVICE]		= "device",
	[KXFER_A_POOL_ALLOC_NS]		= "alloc-ns",
	[KXFER_A_POOL_MAP_NS]		= "map-ns",
	[KXFER_A_POOL_PAD]		= "pad",
	[KXFER_A_POOL_KIND]		= "kind",
	[KXFER_A_POOL_PID]		= "pid",
	[KXFER_A_POOL_COMM]		= "comm",
	[KXFER_A_POOL_NEAR]		= "near",
};

static const struct kx_attr_set pool_set = {
	.name = "pool",
	.attrs = pool_attr_names,
	.max = KXFER_A_POOL_MAX,
};

static const struct nla_policy pool_policy[KXFER_A_POOL_MAX + 1] = {
	[KXFER_A_POOL_NAME]		= { .type = NLA_STRING },
	[KXFER_A_POOL_SIZE]		= { .type = NLA_U64 },
	[KXFER_A_POOL_OWNER]		= { .type = NLA_U32 },
	[KXFER_A_POOL_GROUP]		= { .type = NLA_U32 },
	[KXFER_A_POOL_MODE]		= { .type = NLA_U32 },
	/* s32; libnl checks the length of NLA_U32 only */
	[KXFER_A_POOL_NUMA_NODE]	= { .type = NLA_U32 },
	[KXFER_A_POOL_CHUNKS]		= { .type = NLA_NESTED },
	[KXFER_A_POOL_CHUNK]		= { .type = NLA_NESTED },
	[KXFER_A_POOL_ATTACH_COUNT]	= { .type = NLA_U32 },
	[KXFER_A_POOL_EXPORT_COUNT]	= { .type = NLA_U32 },
	[KXFER_A_POOL_DEVICES]		= { .type = NLA_NESTED },
	[KXFER_A_POOL_DEVICE]		= { .type = NLA_NESTED },
	[KXFER_A_POOL_ALLOC_NS]		= { .type = NLA_U64 },
	[KXFER_A_POOL_MAP_NS]		= { .type = NLA_U64 },
	[KXFER_A_POOL_KIND]		= { .type = NLA_U32 },
	[KXFER_A_POOL_PID]		= { .type = NLA_U32 },
	[KXFER_A_POOL_COMM]		= { .type = NLA_STRING },
	[KXFER_A_POOL_NEAR]		= { .type = NLA_STRING },
};

static const char *pool_kind_name(uint32_t kind)
{
	switch (kind) {
	case KXFER_POOL_KIND_KERNEL:
		return "kernel";
	case KXFER_POOL_KIND_USER:
		return "user";
	case KXFER_POOL_KIND_DMABUF:
		return "dmabuf";
	default:
		return "unknown";
	}
}

static const struct nla_policy chunk_policy[KXFER_A_CHUNK_MAX + 1] = {
	[KXFER_A_CHUNK_SIZE]		= { .type = NLA_U64 },
	[KXFER_A_CHUNK_COUNT]		= { .type = NLA_U32 },
};

static const struct nla_policy pool_dev_policy[KXFER_A_POOL_DEV_MAX + 1] = {
	[KXFER_A_POOL_DEV_NAME]		= { .type = NLA_STRING },
	[KXFER_A_POOL_DEV_MAP_NS]	= { .type = NLA_U64 },
};

static void pool_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl pool add NAME size SIZE [ owner UID ] [ group GID ]\n"
		"                         [ mode MODE ] [ numa NODE ] [ near DEVICE ]\n"
		"       kxferctl pool del NAME\n"
		"       kxferctl pool show [ NAME ]\n"
		"       kxferctl pool help\n"
		"where  SIZE := NUMBER[K|M|G|T]   (binary: 1K = 1024)\n"
		"       UID, GID := { NUMBER | NAME }\n"
		"       MODE := octal permission bits, 0 to 0777 (e.g. 0660)\n"
		"       NODE := { -1 | NUMA node number }   (-1: no preference)\n"
		"       DEVICE := { PCI address (dddd:bb:dd.f, a GPU's) | RDMA device name }\n"
		"                 (jobs of the pool go to the rails nearest it on PCIe)\n");
}

static int pool_cmd_help(struct kx *kx)
{
	(void)kx;
	pool_help(stdout);
	return KX_EXIT_OK;
}

/* Text "chunks 2Mx128,4Kx1"; JSON "chunks":[{"size":2097152,"count":128},...] */
static int chunks_print(struct nlattr *chunks)
{
	struct nlattr *tb[KXFER_A_CHUNK_MAX + 1];
	struct nlattr *pos;
	unsigned int n = 0;
	int rem, ret = 0;

	out_start_array("chunks");
	nla_for_each_nested(pos, chunks, rem) {
		uint64_t size;
		uint32_t count;
		char buf[32];

		if (nla_type(pos) != KXFER_A_POOL_CHUNK)
			continue;
		if (nla_parse_nested(tb, KXFER_A_CHUNK_MAX, pos,
				     (struct nla_policy *)chunk_policy) < 0 ||
		    !tb[KXFER_A_CHUNK_SIZE] || !tb[KXFER_A_CHUNK_COUNT]) {
			ret = -1;
			continue;
		}
		size = nla_get_u64(tb[KXFER_A_CHUNK_SIZE]);
		count = nla_get_u32(tb[KXFER_A_CHUNK_COUNT]);

		if (out_is_json()) {
			out_start_obj(NULL);
			out_u64("size", size);
			out_u64("count", count);
			out_end_obj();
		} else {
			out_fmt_bytes(buf, sizeof(buf), size);
			if (!n)
				out_text("chunks %sx%" PRIu32, buf, count);
			else
				out_text_cont(",%sx%" PRIu32, buf, count);
		}
		n++;
	}
	out_end_array();
	return ret;
}

/* Text: one continuation line "dev rxe0 map 1.05ms" per device. */
static int devices_print(struct nlattr *devices)
{
	struct nlattr *tb[KXFER_A_POOL_DEV_MAX + 1];
	struct nlattr *pos;
	int rem, ret = 0;

	out_start_array("devices");
	nla_for_each_nested(pos, devices, rem) {
		if (nla_type(pos) != KXFER_A_POOL_DEVICE)
			continue;
		if (nla_parse_nested(tb, KXFER_A_POOL_DEV_MAX, pos,
				     (struct nla_policy *)pool_dev_policy) < 0 ||
		    !tb[KXFER_A_POOL_DEV_NAME]) {
			ret = -1;
			continue;
		}
		out_start_obj(NULL);
		out_name("dev", nla_get_string(tb[KXFER_A_POOL_DEV_NAME]));
		if (tb[KXFER_A_POOL_DEV_MAP_NS])
			out_ns("map", "map_ns",
			       nla_get_u64(tb[KXFER_A_POOL_DEV_MAP_NS]));
		out_end_obj();
	}
	out_end_array();
	return ret;
}

/**
 * pool_print - print one pool from a POOL_GET reply or a POOL_ADD_NTF event
 * @event: the monitor event name, or NULL for "pool show"
 *
 * Return: 0, or -1 if the message is malformed.
 */
int pool_print(struct kx *kx, struct nlmsghdr *nlh, const char *event)
{
	struct nlattr *tb[KXFER_A_POOL_MAX + 1];
	int ret = 0;

	(void)kx;
	if (kx_nl_parse(nlh, tb, KXFER_A_POOL_MAX, pool_policy) < 0 ||
	    !tb[KXFER_A_POOL_NAME])
		return -1;

	out_start_obj(NULL);
	if (event)
		out_event(event);
	out_name("pool", nla_get_string(tb[KXFER_A_POOL_NAME]));
	if (tb[KXFER_A_POOL_SIZE])
		out_bytes("size", nla_get_u64(tb[KXFER_A_POOL_SIZE]));
	if (tb[KXFER_A_POOL_KIND])
		out_str("kind", pool_kind_name(nla_get_u32(tb[KXFER_A_POOL_KIND])));
	/* a pool of a process's own memory: which process */
	if (tb[KXFER_A_POOL_PID])
		out_u64("pid", nla_get_u32(tb[KXFER_A_POOL_PID]));
	if (tb[KXFER_A_POOL_COMM])
		out_str("comm", nla_get_string(tb[KXFER_A_POOL_COMM]));
	if (tb[KXFER_A_POOL_OWNER])
		out_u64("owner", nla_get_u32(tb[KXFER_A_POOL_OWNER]));
	if (tb[KXFER_A_POOL_GROUP])
		out_u64("group", nla_get_u32(tb[KXFER_A_POOL_GROUP]));
	if (tb[KXFER_A_POOL_MODE]) {
		char buf[16];

		snprintf(buf, sizeof(buf), "%04" PRIo32,
			 nla_get_u32(tb[KXFER_A_POOL_MODE]));
		out_str("mode", buf);
	}
	if (tb[KXFER_A_POOL_NUMA_NODE])
		out_s64(out_is_json() ? "numa_node" : "numa",
			nla_get_s32(tb[KXFER_A_POOL_NUMA_NODE]));
	if (tb[KXFER_A_POOL_NEAR])
		out_str("near", nla_get_string(tb[KXFER_A_POOL_NEAR]));
	if (tb[KXFER_A_POOL_CHUNKS] && chunks_print(tb[KXFER_A_POOL_CHUNKS]))
		ret = -1;
	if (tb[KXFER_A_POOL_ATTACH_COUNT])
		out_u64("attach_count", nla_get_u32(tb[KXFER_A_POOL_ATTACH_COUNT]));
	if (tb[KXFER_A_POOL_EXPORT_COUNT])
		out_u64("export_count", nla_get_u32(tb[KXFER_A_POOL_EXPORT_COUNT]));
	if (tb[KXFER_A_POOL_ALLOC_NS])
		out_ns("alloc", "alloc_ns", nla_get_u64(tb[KXFER_A_POOL_ALLOC_NS]));
	if (tb[KXFER_A_POOL_MAP_NS])
		out_ns("map", "map_ns", nla_get_u64(tb[KXFER_A_POOL_MAP_NS]));
	/* last: in text each device is a continuation line */
	if (tb[KXFER_A_POOL_DEVICES] && devices_print(tb[KXFER_A_POOL_DEVICES]))
		ret = -1;
	out_end_obj();
	return ret;
}

/* "pool add|del|show NAME": the name, checked, consumed. */
static int pool_name_arg(struct kx *kx, const char *verb, const char **name)
{
	if (kx_no_arg(kx))
		return kx_usage_error("pool %s: NAME is missing, try \"kxferctl pool help\"",
				      verb);
	*name = kx_argv(kx);
	if (kx_check_name("pool name", *name, KXFER_NAME_MAX - 1))
		return KX_EXIT_USAGE;
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

enum {
	POOL_KEY_SIZE,
	POOL_KEY_OWNER,
	POOL_KEY_GROUP,
	POOL_KEY_MODE,
	POOL_KEY_NUMA,
	POOL_KEY_NEAR,
};

static const char *const pool_add_keys[] = {
	[POOL_KEY_SIZE]		= "size",
	[POOL_KEY_OWNER]	= "owner",
	[POOL_KEY_GROUP]	= "group",
	[POOL_KEY_MODE]		= "mode",
	[POOL_KEY_NUMA]		= "numa",
	[POOL_KEY_NEAR]		= "near",
};

static int pool_add(struct kx *kx)
{
	uint32_t owner = 0, group = 0, mode = 0;
	unsigned int seen = 0;
	const char *name, *near = NULL;
	uint64_t size = 0;
	int32_t numa = -1;
	struct nl_msg *msg;
	int ret;

	ret = pool_name_arg(kx, "add", &name);
	if (ret)
		return ret;

	while (!kx_no_arg(kx)) {
		const char *val;
		int key;

		key = kx_next_keyword(kx, pool_add_keys, ARRAY_SIZE(pool_add_keys),
				      &seen, &val);
		switch (key) {
		case POOL_KEY_SIZE:
			if (kx_parse_size(val, &size))
				return kx_usage_error("invalid size \"%s\" (expected NUMBER[K|M|G|T])",
						      val);
			break;
		case POOL_KEY_OWNER:
			if (kx_parse_uid(val, &owner))
				return kx_usage_error("invalid owner \"%s\" (expected a user name or number)",
						      val);
			break;
		case POOL_KEY_GROUP:
			if (kx_parse_gid(val, &group))
				return kx_usage_error("invalid group \"%s\" (expected a group name or number)",
						      val);
			break;
		case POOL_KEY_MODE:
			if (kx_parse_mode(val, &mode))
				return kx_usage_error("invalid mode \"%s\" (expected octal 0 to 0777)",
						      val);
			break;
		case POOL_KEY_NUMA:
			if (kx_parse_numa(val, &numa))
				return kx_usage_error("invalid numa node \"%s\" (expected -1 or a node number)",
						      val);
			break;
		case POOL_KEY_NEAR:
			if (!*val || strlen(val) >= KXFER_DEV_NAME_MAX)
				return kx_usage_error("invalid near device \"%s\"", val);
			near = val;
			break;
		default:
			return KX_EXIT_USAGE;
		}
	}
	if (!(seen & (1U << POOL_KEY_SIZE)))
		return kx_usage_error("pool add: \"size\" is required, try \"kxferctl pool help\"");

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;

	ret = nla_put_string(msg, KXFER_A_POOL_NAME, name);
	if (!ret)
		ret = nla_put_u64(msg, KXFER_A_POOL_SIZE, size);
	if (!ret && (seen & (1U << POOL_KEY_OWNER)))
		ret = nla_put_u32(msg, KXFER_A_POOL_OWNER, owner);
	if (!ret && (seen & (1U << POOL_KEY_GROUP)))
		ret = nla_put_u32(msg, KXFER_A_POOL_GROUP, group);
	if (!ret && (seen & (1U << POOL_KEY_MODE)))
		ret = nla_put_u32(msg, KXFER_A_POOL_MODE, mode);
	if (!ret && (seen & (1U << POOL_KEY_NUMA)))
		ret = nla_put_s32(msg, KXFER_A_POOL_NUMA_NODE, numa);
	if (!ret && near)
		ret = nla_put_string(msg, KXFER_A_POOL_NEAR, near);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}

	return kx_nl_request(kx, msg, &pool_set, NULL, NULL);
}

static int pool_del(struct kx *kx)
{
	struct nl_msg *msg;
	const char *name;
	int ret;

	ret = pool_name_arg(kx, "del", &name);
	if (ret)
		return ret;
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl pool help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_POOL_DEL, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = nla_put_string(msg, KXFER_A_POOL_NAME, name);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &pool_set, NULL, NULL);
}

static int pool_show_one(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	(void)arg;
	return pool_print(kx, nlh, NULL);
}

static int pool_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		ret = pool_name_arg(kx, "show", &name);
		if (ret)
			return ret;
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl pool help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_POOL_GET, name ? NLM_F_ACK : NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	if (name) {
		ret = nla_put_string(msg, KXFER_A_POOL_NAME, name);
		if (ret < 0) {
			nlmsg_free(msg);
			return kx_nl_put_failed(ret);
		}
	}

	out_list_begin();
	ret = kx_nl_request(kx, msg, &pool_set, pool_show_one, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd pool_cmds[] = {
	{ NULL,		pool_show },
	{ "add",	pool_add },
	{ "del",	pool_del },
	{ "show",	pool_show },
	{ "list",	pool_show },
	{ "help",	pool_cmd_help },
	{ NULL,		NULL },
};

int cmd_pool(struct kx *kx)
{
	return kx_exec_cmd(kx, pool_cmds, "pool");
}
