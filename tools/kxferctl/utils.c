// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl: parsing of command-line words.
 *
 * Every parser here is strict: the whole word must be consumed, signs and
 * blanks that strtoul() would silently accept are refused, and overflow
 * is an error.  They print nothing; callers say what was wrong.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kxferctl.h"

/**
 * kx_lookup - find a word in a table, allowing abbreviations
 *
 * Return: the index of the word that @word equals, else of the only word
 * that @word is a prefix of; -1 if none, -2 if @word is ambiguous.
 */
int kx_lookup(const char *word, const char *const *words, size_t nwords)
{
	size_t len = word ? strlen(word) : 0;
	int found = -1;

	if (!len)
		return -1;

	for (size_t i = 0; i < nwords; i++)
		if (!strcmp(word, words[i]))
			return (int)i;

	for (size_t i = 0; i < nwords; i++) {
		if (strncmp(word, words[i], len))
			continue;
		if (found >= 0)
			return -2;
		found = (int)i;
	}
	return found;
}

/* Decimal digits only (no sign, no blanks, no base prefix). */
static int parse_dec(const char *str, unsigned long long max,
		     unsigned long long *val)
{
	unsigned long long v;
	char *end;

	if (!str || !isdigit((unsigned char)str[0]))
		return -1;
	errno = 0;
	v = strtoull(str, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*val = v;
	return 0;
}

/**
 * kx_parse_size - parse a byte count: decimal or 0x hex, with an optional
 * binary suffix K, M, G or T (either case)
 */
int kx_parse_size(const char *str, uint64_t *val)
{
	unsigned long long v;
	unsigned int shift = 0;
	int base = 10;
	char *end;

	if (!str || !isdigit((unsigned char)str[0]))
		return -1;
	if (str[0] == '0' && (str[1] == 'x' || str[1] == 'X')) {
		if (!isxdigit((unsigned char)str[2]))
			return -1;
		base = 16;
	}

	errno = 0;
	v = strtoull(str, &end, base);
	if (errno || end == str)
		return -1;

	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		return -1;
	}
	if (shift && end[1])
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;

	*val = (uint64_t)v << shift;
	return 0;
}

int kx_parse_u32(const char *str, uint32_t *val)
{
	unsigned long long v;

	if (parse_dec(str, UINT32_MAX, &v))
		return -1;
	*val = (uint32_t)v;
	return 0;
}

/* A user: a number, or a name known to the passwd database. */
int kx_parse_uid(const char *str, uint32_t *val)
{
	const struct passwd *pw;

	if (str && isdigit((unsigned char)str[0]))
		return kx_parse_u32(str, val);
	if (!str || !*str)
		return -1;
	pw = getpwnam(str);
	if (!pw)
		return -1;
	*val = pw->pw_uid;
	return 0;
}

/* A group: a number, or a name known to the group database. */
int kx_parse_gid(const char *str, uint32_t *val)
{
	const struct group *gr;

	if (str && isdigit((unsigned char)str[0]))
		return kx_parse_u32(str, val);
	if (!str || !*str)
		return -1;
	gr = getgrnam(str);
	if (!gr)
		return -1;
	*val = gr->gr_gid;
	return 0;
}

/* Permission bits in octal, 0 to 0777, as chmod(1) takes them. */
int kx_parse_mode(const char *str, uint32_t *val)
{
	unsigned long v;
	char *end;

	if (!str || !*str || strspn(str, "01234567") != strlen(str))
		return -1;
	errno = 0;
	v = strtoul(str, &end, 8);
	if (errno || *end || v > 0777)
		return -1;
	*val = (uint32_t)v;
	return 0;
}

/* A NUMA node number, or -1 for no preference. */
int kx_parse_numa(const char *str, int32_t *val)
{
	unsigned long long v;

	if (str && !strcmp(str, "-1")) {
		*val = -1;
		return 0;
	}
	if (parse_dec(str, INT32_MAX, &v))
		return -1;
	*val = (int32_t)v;
	return 0;
}

static const struct {
	const char *name;
	uint32_t bit;
} access_words[] = {
	{ "read",	KXFER_ACCESS_READ },
	{ "write",	KXFER_ACCESS_WRITE },
	{ "atomic",	KXFER_ACCESS_ATOMIC },
};

/* A comma-separated set of "read", "write", "atomic"; at least one. */
int kx_parse_access(const char *str, uint32_t *val)
{
	uint32_t access = 0;
	const char *p = str;

	if (!str || !*str)
		return -1;

	for (;;) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < ARRAY_SIZE(access_words); i++)
			if (strlen(access_words[i].name) == len &&
			    !strncmp(p, access_words[i].name, len))
				break;
		if (i == ARRAY_SIZE(access_words))
			return -1;	/* unknown or empty word */
		access |= access_words[i].bit;

		if (!p[len])
			break;
		p += len + 1;
	}

	*val = access;
	return 0;
}

/*
 * kx_format_access - "read,write" for KXFER_ACCESS_READ | _WRITE; bits
 * the tool does not know are shown in hex; no bit at all is "none".
 * Return: the length of the full string, as snprintf().
 */
const char *const kx_auth_policies[KX_AUTH_POLICIES] = {
	[KXFER_AUTH_OPTIONAL]	= "optional",
	[KXFER_AUTH_REQUIRED]	= "required",
};

/*
 * "required" or "optional" (abbreviated as any word) into an enum
 * kxfer_auth_policy.  Returns KX_EXIT_OK, or KX_EXIT_USAGE after saying why.
 */
int kx_parse_auth(const char *str, uint32_t *val)
{
	int idx = kx_lookup(str, kx_auth_policies, KX_AUTH_POLICIES);

	if (idx < 0)
		return kx_usage_error("invalid auth \"%s\" (expected required or optional)",
				      str);
	*val = (uint32_t)idx;
	return KX_EXIT_OK;
}

int kx_parse_cq(const char *str, int *poll)
{
	if (!strcmp(str, "poll"))
		*poll = 1;
	else if (!strcmp(str, "irq"))
		*poll = 0;
	else
		return kx_usage_error("invalid cq \"%s\" (expected irq or poll)",
				      str);
	return KX_EXIT_OK;
}

size_t kx_format_access(char *buf, size_t len, uint32_t access)
{
	size_t pos = 0;
	int n;

#define APPEND(...) do {						\
		n = snprintf(buf + (pos < len ? pos : len),		\
			     pos < len ? len - pos : 0, __VA_ARGS__);	\
		if (n > 0)						\
			pos += (size_t)n;				\
	} while (0)

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(access_words); i++) {
		if (!(access & access_words[i].bit))
			continue;
		APPEND("%s%s", pos ? "," : "", access_words[i].name);
		access &= ~access_words[i].bit;
	}
	if (access)
		APPEND("%s0x%x", pos ? "," : "", access);
	if (!pos)
		APPEND("none");
#undef APPEND
	return pos;
}

/*
 * kx_check_name - a name must be non-empty and fit the kernel's buffer
 * Prints a usage error and returns -1 if not.
 */
int kx_check_name(const char *what, const char *name, size_t max)
{
	size_t len = strlen(name);

	if (!len) {
		kx_usage_error("%s must not be empty", what);
		return -1;
	}
	if (len > max) {
		kx_usage_error("%s \"%s\" is too long (at most %zu characters)",
			       what, name, max);
		return -1;
	}
	return 0;
}

int kx_next_keyword(struct kx *kx, const char *const *keys, size_t nkeys,
		    unsigned int *seen, const char **value)
{
	const char *word = kx_argv(kx);
	int idx = kx_lookup(word, keys, nkeys);

	if (idx == -1) {
		kx_usage_error("unknown argument \"%s\"", word);
		return -1;
	}
	if (idx < 0) {
		kx_usage_error("argument \"%s\" is ambiguous", word);
		return -1;
	}
	if (*seen & (1U << idx)) {
		kx_usage_error("\"%s\" given more than once", keys[idx]);
		return -1;
	}
	kx_arg_inc(kx);
	if (kx_no_arg(kx)) {
		kx_usage_error("\"%s\" needs a value", keys[idx]);
		return -1;
	}
	*seen |= 1U << idx;
	*value = kx_argv(kx);
	kx_arg_inc(kx);
	return idx;
}

/* A TCP port (rdma_cm's port space), 1 to 65535. */
int kx_parse_port(const char *str, uint16_t *val)
{
	unsigned long long v;

	if (parse_dec(str, UINT16_MAX, &v) || !v)
		return -1;
	*val = (uint16_t)v;
	return 0;
}

/*
 * kx_parse_addr - an IPv4 or IPv6 address literal, as inet_pton(3) reads
 * it; no host names, no scope ("%eth0"), no brackets.
 */
int kx_parse_addr(const char *str, struct kx_addr *addr)
{
	struct kx_addr a = { 0 };

	if (!str)
		return -1;
	if (inet_pton(AF_INET, str, a.bytes) == 1) {
		a.family = AF_INET;
		a.len = 4;
	} else if (inet_pton(AF_INET6, str, a.bytes) == 1) {
		a.family = AF_INET6;
		a.len = 16;
	} else {
		return -1;
	}
	*addr = a;
	return 0;
}

/* Clear the bits of @pfx beyond its length. */
void kx_prefix_mask(struct kx_prefix *pfx)
{
	for (unsigned int i = 0; i < pfx->addr.len; i++) {
		unsigned int bit = 8 * i;

		if (bit >= pfx->plen)
			pfx->addr.bytes[i] = 0;
		else if (pfx->plen - bit < 8)
			pfx->addr.bytes[i] &= (uint8_t)(0xff00 >> (pfx->plen - bit));
	}
}

/**
 * kx_parse_prefix - "ADDR/LEN" or a bare "ADDR" (a full-length prefix)
 *
 * Return: 0, or KX_PREFIX_EINVAL (malformed), KX_PREFIX_ERANGE (LEN
 * longer than 32 or 128 bits) or KX_PREFIX_EHOST (the address has bits
 * set beyond LEN, as in 10.0.0.1/8).  @pfx is filled in for
 * KX_PREFIX_EHOST too, so that the caller can suggest the masked prefix.
 */
int kx_parse_prefix(const char *str, struct kx_prefix *pfx)
{
	char buf[KX_PREFIX_STRLEN + 1];
	struct kx_prefix p = { 0 };
	unsigned long long plen;
	const char *slash;
	size_t alen;

	if (!str)
		return KX_PREFIX_EINVAL;
	slash = strchr(str, '/');
	alen = slash ? (size_t)(slash - str) : strlen(str);
	if (alen >= sizeof(buf))
		return KX_PREFIX_EINVAL;
	memcpy(buf, str, alen);
	buf[alen] = '\0';
	if (kx_parse_addr(buf, &p.addr))
		return KX_PREFIX_EINVAL;

	if (!slash) {
		p.plen = 8 * p.addr.len;
	} else {
		if (parse_dec(slash + 1, UINT32_MAX, &plen))
			return KX_PREFIX_EINVAL;
		if (plen > 8 * p.addr.len)
			return KX_PREFIX_ERANGE;
		p.plen = (unsigned int)plen;
	}

	*pfx = p;
	kx_prefix_mask(&p);
	if (memcmp(p.addr.bytes, pfx->addr.bytes, sizeof(p.addr.bytes)))
		return KX_PREFIX_EHOST;
	return 0;
}

/*
 * kx_format_addr - the text of a binary address attribute
 * Return: 0, or -1 if @alen is neither 4 nor 16 (@buf is then "?").
 */
int kx_format_addr(char *buf, size_t len, const void *data, size_t alen)
{
	int family = alen == 4 ? AF_INET : alen == 16 ? AF_INET6 : AF_UNSPEC;

	if (family == AF_UNSPEC || len > (size_t)INT32_MAX ||
	    !inet_ntop(family, data, buf, (socklen_t)len)) {
		snprintf(buf, len, "?");
		return -1;
	}
	return 0;
}

/**
 * kx_prefix_arg - a command line prefix, "ADDR/LEN" or "ADDR"
 *
 * Return: KX_EXIT_OK, or KX_EXIT_USAGE after a message saying what is
 * wrong (a host part set: the masked prefix is suggested).
 */
int kx_prefix_arg(const char *val, struct kx_prefix *pfx)
{
	char buf[KX_PREFIX_STRLEN];

	switch (kx_parse_prefix(val, pfx)) {
	case 0:
		return KX_EXIT_OK;
	case KX_PREFIX_ERANGE:
		return kx_usage_error("invalid prefix length in \"%s\" (at most 32 for IPv4, 128 for IPv6)",
				      val);
	case KX_PREFIX_EHOST:
		kx_prefix_mask(pfx);
		kx_format_prefix(buf, sizeof(buf), pfx->addr.bytes,
				 pfx->addr.len, pfx->plen);
		return kx_usage_error("prefix \"%s\" has bits set beyond its length (did you mean %s?)",
				      val, buf);
	default:
		return kx_usage_error("invalid prefix \"%s\" (expected ADDR or ADDR/LEN)",
				      val);
	}
}

/* "10.99.0.0/24"; -1 if the address or the length cannot be right. */
int kx_format_prefix(char *buf, size_t len, const void *data, size_t alen,
		     unsigned int plen)
{
	char addr[KX_ADDR_STRLEN];
	int bad;

	bad = kx_format_addr(addr, sizeof(addr), data, alen);
	snprintf(buf, len, "%s/%u", addr, plen);
	return bad || plen > 8 * alen ? -1 : 0;
}
