// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl stats: what each session's jobs did since it was made.
 *
 * Per session: jobs accepted and completed, bytes, segments submitted and
 * the work requests the planner made of them (segs / wrs is the
 * coalescing ratio), notifications, and the jobs that failed, by kind.
 * Per queue pair: job parts started, bytes, work requests posted and
 * doorbells (ib_post_send() calls; wrs / doorbells is the chaining), and
 * of the WRs those signaled (the others complete with them), and the
 * posts made on the QP's home CPU (handoffs, module parameter
 * post_spread).  Where time goes: percentiles of the time from SUBMIT to a job's first work request
 * posted (queue_*) and from then to its completion (done_*).
 */
#include <stdio.h>
#include <string.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

static const char *const stats_attr_names[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]	= "name",
	[KXFER_A_PEER_ID]	= "id",
	[KXFER_A_PEER_STATS]	= "stats",
	[KXFER_A_PEER_QP]	= "qp",
};

static const struct kx_attr_set stats_set = {
	.name = "peer",
	.attrs = stats_attr_names,
	.max = KXFER_A_PEER_MAX,
};

static const struct nla_policy stats_peer_policy[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]	= { .type = NLA_STRING },
	[KXFER_A_PEER_ID]	= { .type = NLA_U32 },
	[KXFER_A_PEER_STATS]	= { .type = NLA_NESTED },
	[KXFER_A_PEER_QP]	= { .type = NLA_NESTED },
};

/* The session counters, in the order printed, with their JSON keys. */
static const struct {
	int		type;
	const char	*key;
} stats_keys[] = {
	{ KXFER_A_STATS_JOBS,		"jobs" },
	{ KXFER_A_STATS_OK,		"ok" },
	{ KXFER_A_STATS_BYTES,		"bytes" },
	{ KXFER_A_STATS_SEGS,		"segs" },
	{ KXFER_A_STATS_WRS,		"wrs" },
	{ KXFER_A_STATS_NOTIFY_SENT,	"notify_sent" },
	{ KXFER_A_STATS_NOTIFY_IMM,	"notify_imm" },
	{ KXFER_A_STATS_NOTIFY_RECV,	"notify_recv" },
	{ KXFER_A_STATS_ERR_FLUSH,	"err_flush" },
	{ KXFER_A_STATS_ERR_ACCESS,	"err_access" },
	{ KXFER_A_STATS_ERR_TIMEOUT,	"err_timeout" },
	{ KXFER_A_STATS_ERR_REMOTE,	"err_remote" },
	{ KXFER_A_STATS_ERR_STALE,	"err_stale" },
	{ KXFER_A_STATS_ERR_OTHER,	"err_other" },
	{ KXFER_A_STATS_POLLED,		"polled" },
	{ KXFER_A_STATS_POLLED_WORK,	"polled_work" },
};

static const struct {
	int		type;
	const char	*key;
} qp_keys[] = {
	{ KXFER_A_QP_PARTS,	"parts" },
	{ KXFER_A_QP_BYTES,	"bytes" },
	{ KXFER_A_QP_WRS,	"wrs" },
	{ KXFER_A_QP_DOORBELLS,	"doorbells" },
	{ KXFER_A_QP_SIGNALED,	"signaled" },
	{ KXFER_A_QP_HANDOFFS,	"handoffs" },
};

static void stats_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl stats show [ NAME ]\n"
		"       kxferctl stats help\n"
		"NAME is a session (kxferctl peer show); without it, every session.\n");
}

static int stats_cmd_help(struct kx *kx)
{
	(void)kx;
	stats_help(stdout);
	return KX_EXIT_OK;
}

/*
 * A latency histogram (KXFER_A_STATS_LAT_*): its percentiles as the upper
 * edge of the bucket they fall in, "queue_p50_us 4"; in JSON also the
 * bucket counts.  An older module sends none: nothing is printed.
 */
static int stats_print_lat(struct nlattr *a, const char *name)
{
	static const unsigned int pct[] = { 50, 90, 99 };
	uint64_t b[KXFER_LAT_BUCKETS], total = 0;
	char key[32];
	size_t i, k;

	if (!a)
		return 0;
	if (nla_len(a) != sizeof(b))
		return -1;
	memcpy(b, nla_data(a), sizeof(b));
	for (i = 0; i < KXFER_LAT_BUCKETS; i++)
		total += b[i];
	for (k = 0; k < ARRAY_SIZE(pct); k++) {
		uint64_t seen = 0, want = (total * pct[k] + 99) / 100;

		for (i = 0; i < KXFER_LAT_BUCKETS - 1; i++) {
			seen += b[i];
			if (seen >= want)
				break;
		}
		snprintf(key, sizeof(key), "%s_p%u_us", name, pct[k]);
		/* 0 with no job; else below 2^(i+1) us */
		out_u64(key, total ? 2ULL << i : 0);
	}
	if (out_is_json()) {
		snprintf(key, sizeof(key), "%s_buckets", name);
		out_start_array(key);
		for (i = 0; i < KXFER_LAT_BUCKETS; i++)
			out_u64(NULL, b[i]);
		out_end_array();
	}
	return 0;
}

/* Text: "segs 640 wrs 2 (320.0 segments per work request)". */
static int stats_print_session(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_STATS_MAX + 1];
	uint64_t segs = 0, wrs = 0;
	size_t i;

	if (nla_parse_nested(tb, KXFER_A_STATS_MAX, nest, NULL) < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(stats_keys); i++) {
		struct nlattr *a = tb[stats_keys[i].type];
		uint64_t v;

		if (!a || nla_len(a) != sizeof(uint64_t))
			return -1;
		v = nla_get_u64(a);
		if (stats_keys[i].type == KXFER_A_STATS_SEGS)
			segs = v;
		if (stats_keys[i].type == KXFER_A_STATS_WRS)
			wrs = v;
		out_u64(stats_keys[i].key, v);
		if (stats_keys[i].type == KXFER_A_STATS_WRS && wrs)
			out_text_cont(" (%.1f segs/wr)", (double)segs / wrs);
	}
	if (stats_print_lat(tb[KXFER_A_STATS_LAT_QUEUE], "queue") ||
	    stats_print_lat(tb[KXFER_A_STATS_LAT_DONE], "done"))
		return -1;
	return 0;
}

/* Text: a continuation line "qp 0 parts 12 bytes 4M wrs 30 doorbells 12". */
static int stats_print_qp(struct nlattr *nest)
{
	struct nlattr *tb[KXFER_A_QP_MAX + 1];
	size_t i;

	if (nla_parse_nested(tb, KXFER_A_QP_MAX, nest, NULL) < 0 ||
	    !tb[KXFER_A_QP_INDEX] ||
	    nla_len(tb[KXFER_A_QP_INDEX]) != sizeof(uint32_t))
		return -1;
	out_start_obj(NULL);
	out_u64(out_is_json() ? "index" : "qp",
		nla_get_u32(tb[KXFER_A_QP_INDEX]));
	for (i = 0; i < ARRAY_SIZE(qp_keys); i++) {
		struct nlattr *a = tb[qp_keys[i].type];

		if (!a || nla_len(a) != sizeof(uint64_t))
			return -1;
		out_u64(qp_keys[i].key, nla_get_u64(a));
	}
	out_end_obj();
	return 0;
}

static int stats_show_one(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *gnlh = nlmsg_data(nlh);
	struct nlattr *tb[KXFER_A_PEER_MAX + 1];
	struct nlattr *pos;
	int rem, ret = 0;

	(void)kx;
	(void)arg;
	if (kx_nl_parse(nlh, tb, KXFER_A_PEER_MAX, stats_peer_policy) < 0 ||
	    !tb[KXFER_A_PEER_NAME] || !tb[KXFER_A_PEER_STATS])
		return -1;

	out_start_obj(NULL);
	out_name("peer", nla_get_string(tb[KXFER_A_PEER_NAME]));
	if (tb[KXFER_A_PEER_ID])
		out_u64("id", nla_get_u32(tb[KXFER_A_PEER_ID]));
	if (stats_print_session(tb[KXFER_A_PEER_STATS]))
		ret = -1;
	out_start_array("qp_list");
	nla_for_each_attr(pos, genlmsg_attrdata(gnlh, 0),
			  genlmsg_attrlen(gnlh, 0), rem) {
		if (nla_type(pos) == KXFER_A_PEER_QP && stats_print_qp(pos))
			ret = -1;
	}
	out_end_array();
	out_end_obj();
	return ret;
}

static int stats_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		name = kx_argv(kx);
		if (kx_check_name("peer name", name, KXFER_NAME_MAX - 1))
			return KX_EXIT_USAGE;
		kx_arg_inc(kx);
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl stats help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_STATS_GET, name ? NLM_F_ACK : NLM_F_DUMP);
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
	ret = kx_nl_request(kx, msg, &stats_set, stats_show_one, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd stats_cmds[] = {
	{ NULL,		stats_show },
	{ "show",	stats_show },
	{ "list",	stats_show },
	{ "help",	stats_cmd_help },
	{ NULL,		NULL },
};

int cmd_stats(struct kx *kx)
{
	return kx_exec_cmd(kx, stats_cmds, "stats");
}
