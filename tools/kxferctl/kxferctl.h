/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kxferctl: control tool for the kxfer generic netlink family.
 *
 * Layout follows iproute2's rdma tool: kxferctl.c parses the global
 * options and dispatches on the object, each object file (dev.c, pool.c,
 * export.c, listen.c, peer.c, key.c, monitor.c) has its own command table and
 * help, nl.c owns the libnl socket, out.c is the one print path for text
 * and JSON, utils.c parses command-line words.
 */
#ifndef KXFERCTL_H
#define KXFERCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include <linux/kxfer.h>

#ifndef KXFERCTL_VERSION
#define KXFERCTL_VERSION	"0.1"
#endif

/* Exit status, as iproute2: 0 success, 1 failure, 2 bad usage. */
#define KX_EXIT_OK	0
#define KX_EXIT_FAIL	1
#define KX_EXIT_USAGE	2

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Longest RDMA device name the tool accepts (IB_DEVICE_NAME_MAX - 1). */
#define KX_DEV_NAME_MAX	63

/* Room for an address or prefix in text: INET6_ADDRSTRLEN plus "/128". */
#define KX_ADDR_STRLEN	46
#define KX_PREFIX_STRLEN	(KX_ADDR_STRLEN + 4)

/* An IPv4 or IPv6 address as kxfer's binary ADDR attributes carry it. */
struct kx_addr {
	int family;		/* AF_INET or AF_INET6 */
	unsigned int len;	/* 4 or 16 bytes */
	uint8_t bytes[16];	/* network byte order */
};

/* An address prefix, "10.99.0.0/24"; a bare address is full-length. */
struct kx_prefix {
	struct kx_addr addr;
	unsigned int plen;	/* bits, at most 8 * addr.len */
};

/* kx_parse_prefix() failures, for the caller's message. */
enum {
	KX_PREFIX_EINVAL = -1,	/* not ADDR or ADDR/LEN */
	KX_PREFIX_ERANGE = -2,	/* LEN longer than the address */
	KX_PREFIX_EHOST = -3,	/* bits set beyond LEN */
};

struct kx_nl;

/* State of one invocation; argc/argv advance as words are consumed. */
struct kx {
	int argc;
	char **argv;
	bool json;
	bool pretty;
	bool details;
	bool wipe_request;	/* the request holds a secret: wipe it */
	struct kx_nl *nl;	/* opened by kx_nl_open() */
};

/*
 * A command table: the first entry (name NULL) runs when no word is
 * left, the others are matched against the next word, exactly or by an
 * unambiguous prefix.  Ends with an all-zero entry.
 */
struct kx_cmd {
	const char *name;
	int (*func)(struct kx *kx);
};

/* Names of the attributes of one attribute set, to explain extack. */
struct kx_attr_set {
	const char *name;
	const char *const *attrs;	/* indexed by attribute type */
	unsigned int max;
};

/* kxferctl.c: argument cursor and dispatch */
const char *kx_argv(const struct kx *kx);
void kx_arg_inc(struct kx *kx);
bool kx_no_arg(const struct kx *kx);
int kx_exec_cmd(struct kx *kx, const struct kx_cmd *cmds, const char *object);
int kx_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* utils.c: parsing of command-line words; return 0 or -1 */
int kx_lookup(const char *word, const char *const *words, size_t nwords);
int kx_parse_size(const char *str, uint64_t *val);
int kx_parse_u32(const char *str, uint32_t *val);
int kx_parse_uid(const char *str, uint32_t *val);
int kx_parse_gid(const char *str, uint32_t *val);
int kx_parse_mode(const char *str, uint32_t *val);
int kx_parse_numa(const char *str, int32_t *val);
int kx_parse_access(const char *str, uint32_t *val);

/* enum kxfer_auth_policy: "optional", "required" */
#define KX_AUTH_POLICIES	2
extern const char *const kx_auth_policies[KX_AUTH_POLICIES];
int kx_parse_auth(const char *str, uint32_t *val);
/* "cq irq|poll" of peer add and listen add: *poll set to 0 or 1 */
int kx_parse_cq(const char *str, int *poll);
int kx_check_name(const char *what, const char *name, size_t max);
size_t kx_format_access(char *buf, size_t len, uint32_t access);
int kx_parse_port(const char *str, uint16_t *val);
int kx_parse_addr(const char *str, struct kx_addr *addr);
int kx_parse_prefix(const char *str, struct kx_prefix *pfx);
int kx_prefix_arg(const char *val, struct kx_prefix *pfx);
void kx_prefix_mask(struct kx_prefix *pfx);
int kx_format_addr(char *buf, size_t len, const void *data, size_t alen);
int kx_format_prefix(char *buf, size_t len, const void *data, size_t alen,
		     unsigned int plen);

/*
 * Keyword arguments ("size 256M owner 1000 ..."): kx_next_keyword()
 * matches the next word against @keys (abbreviations allowed), checks
 * that it has a value and was not given before, consumes both words and
 * stores the value in *@value.  Returns the keyword's index, or -1 after
 * printing a usage error.
 */
int kx_next_keyword(struct kx *kx, const char *const *keys, size_t nkeys,
		    unsigned int *seen, const char **value);

/* nl.c */
int kx_nl_open(struct kx *kx);
void kx_nl_close(struct kx *kx);
struct nl_msg *kx_nl_msg(struct kx *kx, uint8_t cmd, int flags);

typedef int (*kx_nl_msg_fn)(struct kx *kx, struct nlmsghdr *nlh, void *arg);

int kx_nl_request(struct kx *kx, struct nl_msg *msg,
		  const struct kx_attr_set *set, kx_nl_msg_fn fn, void *arg);
int kx_nl_monitor(struct kx *kx, kx_nl_msg_fn fn, void *arg);
int kx_nl_parse(struct nlmsghdr *nlh, struct nlattr **tb, int maxtype,
		const struct nla_policy *policy);
int kx_nl_put_failed(int err);
void kx_nl_wipe(struct nl_msg *msg);
int kx_nl_put_prefix(struct nl_msg *msg, int type, const struct kx_prefix *pfx);
int kx_nl_format_prefix(char *buf, size_t len, struct nlattr *nest);

/* out.c: one print path for text and JSON */
void out_init(bool json, bool pretty, bool details);
bool out_is_json(void);
void out_set_oneline(bool oneline);
void out_list_begin(void);
void out_list_end(bool ok);
void out_start_obj(const char *key);
void out_end_obj(void);
void out_start_array(const char *key);
void out_end_array(void);
void out_nest_line(void);
void out_event(const char *event);
void out_name(const char *label, const char *name);
void out_str(const char *key, const char *val);
void out_u64(const char *key, uint64_t val);
void out_s64(const char *key, int64_t val);
void out_bytes(const char *key, uint64_t val);
void out_ns(const char *text_key, const char *json_key, uint64_t ns);
void out_enum(const char *key, const char *const *names, size_t n,
	      uint32_t val);
void out_access(uint32_t access);
void out_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void out_text_cont(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
size_t out_fmt_bytes(char *buf, size_t len, uint64_t val);
void out_flush(void);

/* objects */
int cmd_dev(struct kx *kx);
int cmd_pool(struct kx *kx);
int cmd_export(struct kx *kx);
int cmd_listen(struct kx *kx);
int cmd_peer(struct kx *kx);
int cmd_stats(struct kx *kx);
int cmd_key(struct kx *kx);
int cmd_connect(struct kx *kx);
int cmd_monitor(struct kx *kx);

int dev_print(struct kx *kx, struct nlmsghdr *nlh, const char *event);
int pool_print(struct kx *kx, struct nlmsghdr *nlh, const char *event);
int export_print(struct kx *kx, struct nlmsghdr *nlh, const char *event);
int peer_print(struct kx *kx, struct nlmsghdr *nlh, const char *event);

#endif /* KXFERCTL_H */
