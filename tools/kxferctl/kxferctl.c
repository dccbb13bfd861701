// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl: main, global options, object dispatch.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kxferctl.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"Usage: kxferctl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"       kxferctl [ OPTIONS ] monitor\n"
		"       kxferctl help\n"
		"where  OBJECT := { dev | pool | export | listen | peer | connect | key | stats |\n"
		"                   monitor }\n"
		"       OPTIONS := { -j[son] | -p[retty] | -d[etails] | -V[ersion] | -h[elp] }\n"
		"Try \"kxferctl OBJECT help\" for the commands of one object.\n");
}

static int cmd_help(struct kx *kx)
{
	(void)kx;
	usage(stdout);
	return KX_EXIT_OK;
}

static int cmd_none(struct kx *kx)
{
	(void)kx;
	usage(stderr);
	return KX_EXIT_USAGE;
}

const char *kx_argv(const struct kx *kx)
{
	return kx->argc > 0 ? kx->argv[0] : NULL;
}

void kx_arg_inc(struct kx *kx)
{
	if (kx->argc > 0) {
		kx->argc--;
		kx->argv++;
	}
}

bool kx_no_arg(const struct kx *kx)
{
	return kx->argc <= 0;
}

int kx_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return KX_EXIT_USAGE;
}

/*
 * kx_exec_cmd - run the command of @cmds named by the next word
 * @object: the object the table belongs to, for messages; NULL for the
 *	    table of objects
 *
 * An exact match wins; otherwise the word must be the prefix of exactly
 * one command ("kxferctl d s" is "kxferctl dev show").
 */
int kx_exec_cmd(struct kx *kx, const struct kx_cmd *cmds, const char *object)
{
	const char *names[16];
	size_t n = 0;
	int idx;

	if (kx_no_arg(kx))
		return cmds[0].func(kx);

	for (const struct kx_cmd *c = cmds + 1; c->name; c++) {
		if (n == ARRAY_SIZE(names))
			break;
		names[n++] = c->name;
	}

	idx = kx_lookup(kx_argv(kx), names, n);
	if (idx == -1) {
		if (object)
			return kx_usage_error("command \"%s\" is unknown, try \"kxferctl %s help\"",
					      kx_argv(kx), object);
		return kx_usage_error("object \"%s\" is unknown, try \"kxferctl help\"",
				      kx_argv(kx));
	}
	if (idx < 0) {
		if (object)
			return kx_usage_error("command \"%s\" is ambiguous, try \"kxferctl %s help\"",
					      kx_argv(kx), object);
		return kx_usage_error("object \"%s\" is ambiguous, try \"kxferctl help\"",
				      kx_argv(kx));
	}

	kx_arg_inc(kx);
	return cmds[idx + 1].func(kx);
}

static const struct kx_cmd objects[] = {
	{ NULL,		cmd_none },
	{ "dev",	cmd_dev },
	{ "pool",	cmd_pool },
	{ "export",	cmd_export },
	{ "listen",	cmd_listen },
	{ "peer",	cmd_peer },
	{ "connect",	cmd_connect },
	{ "key",	cmd_key },
	{ "stats",	cmd_stats },
	{ "monitor",	cmd_monitor },
	{ "help",	cmd_help },
	{ NULL,		NULL },
};

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "json",	no_argument,	NULL, 'j' },
		{ "pretty",	no_argument,	NULL, 'p' },
		{ "details",	no_argument,	NULL, 'd' },
		{ "version",	no_argument,	NULL, 'V' },
		{ "help",	no_argument,	NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct kx kx = { 0 };
	int opt, ret;

	/*
	 * "+": stop at the first word that is not an option, so that
	 * arguments such as "numa -1" are never taken for options.
	 */
	while ((opt = getopt_long(argc, argv, "+jpdVh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			kx.json = true;
			break;
		case 'p':
			kx.pretty = true;
			break;
		case 'd':
			kx.details = true;
			break;
		case 'V':
			printf("kxferctl utility, version %s, kxfer API %d, netlink family \"%s\" version %d\n",
			       KXFERCTL_VERSION, KXFER_API_VERSION,
			       KXFER_GENL_NAME, KXFER_GENL_VERSION);
			return KX_EXIT_OK;
		case 'h':
			usage(stdout);
			return KX_EXIT_OK;
		default:
			/* getopt_long() already said what was wrong */
			usage(stderr);
			return KX_EXIT_USAGE;
		}
	}

	kx.argc = argc - optind;
	kx.argv = argv + optind;
	out_init(kx.json, kx.pretty, kx.details);

	ret = kx_exec_cmd(&kx, objects, NULL);

	kx_nl_close(&kx);

	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "Error: cannot write output: %s\n", strerror(errno));
		if (ret == KX_EXIT_OK)
			ret = KX_EXIT_FAIL;
	}
	return ret;
}
