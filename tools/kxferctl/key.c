// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl key: secrets the module authenticates sessions with.
 *
 * "key add NAME secret FILE" hands the module the bytes of FILE ("-":
 * standard input), 16 to 64 of them, all of them: a random secret made
 * with "head -c 32 /dev/urandom".  The module never gives them back: "key
 * show" prints the name, the node the key is bound to ("peer"), its
 * generation and the listeners and peers that use it.  The bytes live in
 * this process only between reading them and sending them, and are wiped
 * from its buffers after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/genl/genl.h>

#include "kxferctl.h"

static const char *const key_attr_names[KXFER_A_KEY_MAX + 1] = {
	[KXFER_A_KEY_NAME]	= "name",
	[KXFER_A_KEY_SECRET]	= "secret",
	[KXFER_A_KEY_PEER]	= "peer",
	[KXFER_A_KEY_GEN]	= "gen",
	[KXFER_A_KEY_LISTENER]	= "listener",
	[KXFER_A_KEY_USER]	= "user",
};

static const struct kx_attr_set key_set = {
	.name = "key",
	.attrs = key_attr_names,
	.max = KXFER_A_KEY_MAX,
};

static const struct nla_policy key_policy[KXFER_A_KEY_MAX + 1] = {
	[KXFER_A_KEY_NAME]	= { .type = NLA_STRING },
	[KXFER_A_KEY_PEER]	= { .type = NLA_STRING },
	[KXFER_A_KEY_GEN]	= { .type = NLA_U32 },
	[KXFER_A_KEY_LISTENER]	= { .type = NLA_NESTED },
	[KXFER_A_KEY_USER]	= { .type = NLA_STRING },
};

static void key_help(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl key add NAME secret { FILE | - } [ peer NODE ]\n"
		"       kxferctl key set NAME secret { FILE | - }\n"
		"       kxferctl key del NAME\n"
		"       kxferctl key show [ NAME ]\n"
		"       kxferctl key help\n"
		"where  FILE holds the secret: all of its bytes, %d to %d of them\n"
		"            (\"-\": standard input); make one with\n"
		"            head -c 32 /dev/urandom >FILE\n"
		"       NODE := a remote node name: listeners authenticate the sessions\n"
		"            it opens with this key rather than with their own\n",
		KXFER_KEY_MIN_LEN, KXFER_KEY_MAX_LEN);
}

static int key_cmd_help(struct kx *kx)
{
	(void)kx;
	key_help(stdout);
	return KX_EXIT_OK;
}

/* Text: a continuation line "listener 10.99.0.1 port 19875". */
static int key_listener_print(struct nlattr *nest)
{
	static struct nla_policy policy[KXFER_A_LISTEN_MAX + 1] = {
		[KXFER_A_LISTEN_ADDR]	= { .minlen = 4, .maxlen = 16 },
		[KXFER_A_LISTEN_PORT]	= { .type = NLA_U16 },
	};
	struct nlattr *tb[KXFER_A_LISTEN_MAX + 1];
	char addr[KX_ADDR_STRLEN];
	int ret = 0;

	if (nla_parse_nested(tb, KXFER_A_LISTEN_MAX, nest, policy) < 0 ||
	    !tb[KXFER_A_LISTEN_ADDR])
		return -1;
	if (kx_format_addr(addr, sizeof(addr), nla_data(tb[KXFER_A_LISTEN_ADDR]),
			   (size_t)nla_len(tb[KXFER_A_LISTEN_ADDR])))
		ret = -1;
	out_start_obj(NULL);
	out_str(out_is_json() ? "addr" : "listener", addr);
	if (tb[KXFER_A_LISTEN_PORT])
		out_u64("port", nla_get_u16(tb[KXFER_A_LISTEN_PORT]));
	out_end_obj();
	return ret;
}

/* One key of a KEY_GET reply. */
static int key_print(struct kx *kx, struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *gnlh = nlmsg_data(nlh);
	struct nlattr *tb[KXFER_A_KEY_MAX + 1];
	struct nlattr *pos;
	unsigned int n = 0;
	int rem, ret = 0;

	(void)kx;
	(void)arg;
	if (kx_nl_parse(nlh, tb, KXFER_A_KEY_MAX, key_policy) < 0 ||
	    !tb[KXFER_A_KEY_NAME])
		return -1;
	/* The module never sends a secret; say so loudly if one came. */
	if (tb[KXFER_A_KEY_SECRET])
		ret = -1;

	out_start_obj(NULL);
	out_name("key", nla_get_string(tb[KXFER_A_KEY_NAME]));
	if (tb[KXFER_A_KEY_PEER])
		out_str("peer", nla_get_string(tb[KXFER_A_KEY_PEER]));
	if (tb[KXFER_A_KEY_GEN])
		out_u64("gen", nla_get_u32(tb[KXFER_A_KEY_GEN]));
	out_start_array("users");
	nla_for_each_attr(pos, genlmsg_attrdata(gnlh, 0),
			  genlmsg_attrlen(gnlh, 0), rem) {
		if (nla_type(pos) != KXFER_A_KEY_USER)
			continue;
		if (out_is_json())
			out_str(NULL, nla_get_string(pos));
		else if (!n)
			out_text("users %s", nla_get_string(pos));
		else
			out_text_cont(" %s", nla_get_string(pos));
		n++;
	}
	out_end_array();
	/* last: in text each listener is a continuation line */
	out_start_array("listeners");
	nla_for_each_attr(pos, genlmsg_attrdata(gnlh, 0),
			  genlmsg_attrlen(gnlh, 0), rem) {
		if (nla_type(pos) == KXFER_A_KEY_LISTENER &&
		    key_listener_print(pos))
			ret = -1;
	}
	out_end_array();
	out_end_obj();
	return ret;
}

/* "key add|set|del|show NAME": the name, checked, consumed. */
static int key_name_arg(struct kx *kx, const char *verb, const char **name)
{
	if (kx_no_arg(kx))
		return kx_usage_error("key %s: NAME is missing, try \"kxferctl key help\"",
				      verb);
	*name = kx_argv(kx);
	if (kx_check_name("key name", *name, KXFER_NAME_MAX - 1))
		return KX_EXIT_USAGE;
	kx_arg_inc(kx);
	return KX_EXIT_OK;
}

/*
 * The secret: every byte of @path ("-": standard input), into @buf.
 * Return: its length, or -1 after printing an error.
 */
static int key_read_secret(const char *path, uint8_t *buf, size_t size)
{
	size_t len = 0;
	int fd, err = 0;

	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		fprintf(stderr, "Error: cannot open \"%s\": %s\n", path,
			strerror(errno));
		return -1;
	}
	while (len < size) {
		ssize_t n = read(fd, buf + len, size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (err) {
		fprintf(stderr, "Error: cannot read \"%s\": %s\n", path,
			strerror(err));
		return -1;
	}
	if (len < KXFER_KEY_MIN_LEN || len >= size) {
		fprintf(stderr, "Error: the secret in \"%s\" has %s bytes; a secret has %d to %d\n",
			path, len >= size ? "too many" : len ? "too few" : "no",
			KXFER_KEY_MIN_LEN, KXFER_KEY_MAX_LEN);
		return -1;
	}
	return (int)len;
}

enum {
	KEY_KEY_SECRET,
	KEY_KEY_PEER,
};

static const char *const key_add_keys[] = {
	[KEY_KEY_SECRET]	= "secret",
	[KEY_KEY_PEER]		= "peer",
};

/* key add NAME secret FILE [peer NODE], key set NAME secret FILE */
static int key_send(struct kx *kx, const char *verb, uint8_t cmd,
		    size_t nkeys)
{
	/* one byte more than a secret may have, to tell one that is longer */
	uint8_t secret[KXFER_KEY_MAX_LEN + 1];
	const char *name, *file = NULL, *peer = NULL;
	unsigned int seen = 0;
	struct nl_msg *msg;
	int ret, len;

	ret = key_name_arg(kx, verb, &name);
	if (ret)
		return ret;
	while (!kx_no_arg(kx)) {
		const char *val;

		switch (kx_next_keyword(kx, key_add_keys, nkeys, &seen, &val)) {
		case KEY_KEY_SECRET:
			file = val;
			break;
		case KEY_KEY_PEER:
			if (kx_check_name("peer name", val, KXFER_NAME_MAX - 1))
				return KX_EXIT_USAGE;
			peer = val;
			break;
		default:
			return KX_EXIT_USAGE;
		}
	}
	if (!file)
		return kx_usage_error("key %s: \"secret\" is required, try \"kxferctl key help\"",
				      verb);

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	len = key_read_secret(file, secret, sizeof(secret));
	if (len < 0) {
		ret = KX_EXIT_FAIL;
		goto out;
	}
	msg = kx_nl_msg(kx, cmd, NLM_F_ACK);
	if (!msg) {
		ret = KX_EXIT_FAIL;
		goto out;
	}
	ret = nla_put_string(msg, KXFER_A_KEY_NAME, name);
	if (!ret)
		ret = nla_put(msg, KXFER_A_KEY_SECRET, len, secret);
	if (!ret && peer)
		ret = nla_put_string(msg, KXFER_A_KEY_PEER, peer);
	if (ret < 0) {
		kx_nl_wipe(msg);
		nlmsg_free(msg);
		ret = kx_nl_put_failed(ret);
		goto out;
	}
	kx->wipe_request = true;
	ret = kx_nl_request(kx, msg, &key_set, NULL, NULL);
out:
	explicit_bzero(secret, sizeof(secret));
	return ret;
}

static int key_add(struct kx *kx)
{
	return key_send(kx, "add", KXFER_CMD_KEY_NEW, ARRAY_SIZE(key_add_keys));
}

static int key_change(struct kx *kx)
{
	/* "secret" only: a key's node is given once, at "add" */
	return key_send(kx, "set", KXFER_CMD_KEY_SET, KEY_KEY_SECRET + 1);
}

static int key_del(struct kx *kx)
{
	struct nl_msg *msg;
	const char *name;
	int ret;

	ret = key_name_arg(kx, "del", &name);
	if (ret)
		return ret;
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl key help\"",
				      kx_argv(kx));
	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_KEY_DEL, NLM_F_ACK);
	if (!msg)
		return KX_EXIT_FAIL;
	ret = nla_put_string(msg, KXFER_A_KEY_NAME, name);
	if (ret < 0) {
		nlmsg_free(msg);
		return kx_nl_put_failed(ret);
	}
	return kx_nl_request(kx, msg, &key_set, NULL, NULL);
}

static int key_show(struct kx *kx)
{
	const char *name = NULL;
	struct nl_msg *msg;
	int ret;

	if (!kx_no_arg(kx)) {
		ret = key_name_arg(kx, "show", &name);
		if (ret)
			return ret;
	}
	if (!kx_no_arg(kx))
		return kx_usage_error("unexpected argument \"%s\", try \"kxferctl key help\"",
				      kx_argv(kx));

	ret = kx_nl_open(kx);
	if (ret)
		return ret;
	msg = kx_nl_msg(kx, KXFER_CMD_KEY_GET, name ? NLM_F_ACK : NLM_F_DUMP);
	if (!msg)
		return KX_EXIT_FAIL;
	if (name) {
		ret = nla_put_string(msg, KXFER_A_KEY_NAME, name);
		if (ret < 0) {
			nlmsg_free(msg);
			return kx_nl_put_failed(ret);
		}
	}

	out_list_begin();
	ret = kx_nl_request(kx, msg, &key_set, key_print, NULL);
	out_list_end(ret == KX_EXIT_OK);
	return ret;
}

static const struct kx_cmd key_cmds[] = {
	{ NULL,		key_show },
	{ "add",	key_add },
	{ "set",	key_change },
	{ "del",	key_del },
	{ "show",	key_show },
	{ "list",	key_show },
	{ "help",	key_cmd_help },
	{ NULL,		NULL },
};

int cmd_key(struct kx *kx)
{
	return kx_exec_cmd(kx, key_cmds, "key");
}
