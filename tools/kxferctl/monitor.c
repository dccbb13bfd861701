// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl monitor: print the events of the "monitor" multicast group.
 *
 * One line per event: "[pool-add] pool kv size 256M ..." in text, one
 * JSON object per line with -j ({"event":"pool-add","name":"kv",...}).
 * *_ADD_NTF events carry the whole object, printed as "show" prints it;
 * *_DEL_NTF events carry only its name.  PEER_STATE_NTF carries the
 * session's name, state, role and last error, printed as "peer show"
 * prints them.
 */
#include <stdio.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

struct mon_event {
	uint8_t cmd;
	const char *name;
	/* ADD: the object's printer; DEL: NULL, only the name is printed */
	int (*print)(struct kx *kx, struct nlmsghdr *nlh, const char *event);
	const char *label;	/* DEL: "dev", "pool", "export", "peer" */
};

static const struct mon_event mon_events[] = {
	{ KXFER_CMD_DEV_ADD_NTF,	"dev-add",	dev_print,	NULL },
	{ KXFER_CMD_DEV_DEL_NTF,	"dev-del",	NULL,		"dev" },
	{ KXFER_CMD_POOL_ADD_NTF,	"pool-add",	pool_print,	NULL },
	{ KXFER_CMD_POOL_DEL_NTF,	"pool-del",	NULL,		"pool" },
	{ KXFER_CMD_EXPORT_ADD_NTF,	"export-add",	export_print,	NULL },
	{ KXFER_CMD_EXPORT_DEL_NTF,	"export-del",	NULL,		"export" },
	{ KXFER_CMD_PEER_STATE_NTF,	"peer-state",	peer_print,	NULL },
	{ KXFER_CMD_PEER_DEL_NTF,	"peer-del",	NULL,		"peer" },
};

/*
 * The NAME attribute of the dev, pool, export and peer sets is attribute
 * 1 in each; check it so that a renumbering cannot slip by.
 */
_Static_assert(KXFER_A_DEV_NAME == 1 && KXFER_A_POOL_NAME == 1 &&
	       KXFER_A_EXPORT_NAME == 1 && KXFER_A_PEER_NAME == 1,
	       "NAME attributes moved");
#define MON_A_NAME	1

static const struct nla_policy mon_del_policy[MON_A_NAME + 1] = {
	[MON_A_NAME] = { .type = NLA_STRING },
};

static int mon_print_del(struct nlmsghdr *nlh, const struct mon_event *ev)
{
	struct nlattr *tb[MON_A_NAME + 1];

	if (kx_nl_parse(nlh, tb, MON_A_NAME, mon_del_policy) < 0 ||
	    !tb[MON_A_NAME])
		return -1;

	out_start_obj(NULL);
	out_event(ev->name);
	out_name(ev->label, nla_get_string(tb[MON_A_NAME]));
	out_end_obj();
	return 0;
}

static int mon_event(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *gnlh = nlmsg_data(nlh);

	(void)arg;
	for (size_t i = 0; i < ARRAY_SIZE(mon_events); i++) {
		const struct mon_event *ev = &mon_events[i];

		if (ev->cmd != gnlh->cmd)
			continue;
		if (ev->print)
			return ev->print(kx, nlh, ev->name);
		return mon_print_del(nlh, ev);
	}
	/* an event this version does not know: skip it, say so with -d */
	if (kx->details)
		fprintf(stderr, "Warning: unknown event (command %u) ignored\n",
			gnlh->cmd);
	return 0;
}

static void monitor_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl [ -j [ -p ] ] monitor\n"
		"       kxferctl monitor help\n"
		"Prints dev-add, dev-del, pool-add, pool-del, export-add, export-del,\n"
		"peer-state and peer-del events as they happen, until interrupted.\n");
}

static int monitor_cmd_help(struct kx *kx)
{
	(void)kx;
	monitor_help(stdout);
	return KX_EXIT_OK;
}

static int monitor_run(struct kx *kx)
{
	int ret;

	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl monitor help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;

	out_set_oneline(true);
	return kx_nl_monitor(kx, mon_event, NULL);
}

static const struct kx_cmd monitor_cmds[] = {
	{ NULL,		monitor_run },
	{ "help",	monitor_cmd_help },
	{ NULL,		NULL },
};

int cmd_monitor(struct kx *kx)
{
	return kx_exec_cmd(kx, monitor_cmds, "monitor");
}
