// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: sessions on demand.
 *
 * The administrator's policy (kxferctl connect allow) is a list of rules:
 * a prefix of addresses, the port of their listeners, the key a session
 * proves, its QPs, and how long it may stay unused.  Any user of
 * /dev/kxfer may ask for a session to an address one rule allows
 * (KXFER_IOC_CONNECT); the kernel uses a session it has to that address,
 * or connects as peer add would.  Such a session is listed as made on
 * demand and ends once nothing used it for the rule's idle time
 * (session.c).
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/ipv6.h>

#include "kxfer.h"

/* Rules at most: each is checked, in order, on every request. */
#define KXFER_CONNECT_RULES_MAX	64

DEFINE_MUTEX(kxfer_connect_mutex);
LIST_HEAD(kxfer_connect_rules);

static struct kxfer_connect_rule *
kxfer_connect_rule_find(const struct kxfer_prefix *p, u16 port)
{
	struct kxfer_connect_rule *r;

	lockdep_assert_held(&kxfer_connect_mutex);
	list_for_each_entry(r, &kxfer_connect_rules, cr_node)
		if (r->cr_port == port && r->cr_prefix.p_len == p->p_len &&
		    r->cr_prefix.p_family == p->p_family &&
		    !memcmp(r->cr_prefix.p_addr, p->p_addr, sizeof(p->p_addr)))
			return r;
	return NULL;
}

/*
 * A unicast address of another node: not unspecified, loopback,
 * multicast or broadcast (IPv4), nor an IPv4 address in IPv6 clothes.
 */
static bool kxfer_connect_addr_ok(const struct kxfer_prefix *p)
{
	if (p->p_family == AF_INET) {
		__be32 a;

		memcpy(&a, p->p_addr, 4);
		return !ipv4_is_zeronet(a) && !ipv4_is_loopback(a) &&
		       !ipv4_is_multicast(a) && !ipv4_is_lbcast(a);
	}
	return !ipv6_addr_any((const struct in6_addr *)p->p_addr) &&
	       !ipv6_addr_loopback((const struct in6_addr *)p->p_addr) &&
	       !ipv6_addr_is_multicast((const struct in6_addr *)p->p_addr) &&
	       !ipv6_addr_v4mapped((const struct in6_addr *)p->p_addr);
}

/**
 * kxfer_connect_rule_add - allow sessions on demand to a prefix
 * @args: the rule: its prefix (no bits past its length, not of length 0,
 *	a unicast network), port, key (a reference the rule takes, or
 *	drops on failure), QPs and idle time
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EINVAL (prefix, QPs, idle time), %-EEXIST (a rule of that
 * prefix and port), %-ENOSPC (KXFER_CONNECT_RULES_MAX rules), %-ENOMEM.
 * May sleep.
 */
int kxfer_connect_rule_add(const struct kxfer_connect_rule *args,
			   struct netlink_ext_ack *extack)
{
	struct kxfer_connect_rule *r, *it;
	unsigned int n = 0;
	int ret;

	ret = -EINVAL;
	if (!args->cr_prefix.p_len) {
		NL_SET_ERR_MSG(extack,
			       "a prefix of length 0 would allow every address");
		goto out_put;
	}
	if (!kxfer_connect_addr_ok(&args->cr_prefix)) {
		NL_SET_ERR_MSG(extack,
			       "prefix is not of unicast addresses of other nodes");
		goto out_put;
	}
	if (!args->cr_qps || args->cr_qps > KXFER_MAX_QPS) {
		NL_SET_ERR_MSG(extack, "qps must be 1 to 16");
		goto out_put;
	}
	if (!args->cr_idle_s || args->cr_idle_s > KXFER_CONNECT_IDLE_MAX) {
		NL_SET_ERR_MSG(extack, "idle must be 1 to 86400 seconds");
		goto out_put;
	}
	ret = -ENOMEM;
	r = kmemdup(args, sizeof(*r), GFP_KERNEL);
	if (!r)
		goto out_put;
	atomic_set(&r->cr_made, 0);
	atomic_set(&r->cr_refused, 0);

	mutex_lock(&kxfer_connect_mutex);
	list_for_each_entry(it, &kxfer_connect_rules, cr_node)
		n++;
	ret = -EEXIST;
	if (kxfer_connect_rule_find(&r->cr_prefix, r->cr_port)) {
		NL_SET_ERR_MSG(extack, "a rule of that prefix and port exists");
		goto out_unlock;
	}
	ret = -ENOSPC;
	if (n >= KXFER_CONNECT_RULES_MAX) {
		NL_SET_ERR_MSG(extack, "too many connect rules (64 at most)");
		goto out_unlock;
	}
	list_add_tail(&r->cr_node, &kxfer_connect_rules);
	mutex_unlock(&kxfer_connect_mutex);
	return 0;

out_unlock:
	mutex_unlock(&kxfer_connect_mutex);
	kfree(r);
out_put:
	kxfer_key_put(args->cr_key);
	return ret;
}

/**
 * kxfer_connect_rule_del - withdraw a rule
 * @p: its prefix
 * @port: its port
 * @extack: for the reason of a refusal
 *
 * Sessions made under it stay until they are unused for its idle time.
 *
 * Return: 0 or %-ENOENT.  May sleep.
 */
int kxfer_connect_rule_del(const struct kxfer_prefix *p, u16 port,
			   struct netlink_ext_ack *extack)
{
	struct kxfer_connect_rule *r;

	mutex_lock(&kxfer_connect_mutex);
	r = kxfer_connect_rule_find(p, port);
	if (r)
		list_del(&r->cr_node);
	mutex_unlock(&kxfer_connect_mutex);
	if (!r) {
		NL_SET_ERR_MSG(extack, "no rule of that prefix and port");
		return -ENOENT;
	}
	kxfer_key_put(r->cr_key);
	kfree(r);
	return 0;
}

/**
 * kxfer_connect_rules_destroy_all - forget the policy (unload)
 */
void kxfer_connect_rules_destroy_all(void)
{
	struct kxfer_connect_rule *r, *tmp;

	mutex_lock(&kxfer_connect_mutex);
	list_for_each_entry_safe(r, tmp, &kxfer_connect_rules, cr_node) {
		list_del(&r->cr_node);
		kxfer_key_put(r->cr_key);
		kfree(r);
	}
	mutex_unlock(&kxfer_connect_mutex);
}

/* The request's address and port, checked. */
static int kxfer_connect_dst(const struct kxfer_connect *c,
			     struct sockaddr_storage *ss)
{
	struct kxfer_prefix p;
	u16 port = c->port ?: KXFER_PORT;

	memset(ss, 0, sizeof(*ss));
	switch (c->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (!kxfer_zero(c->addr + 4, sizeof(c->addr) - 4))
			return -EINVAL;
		kxfer_prefix_set(&p, c->addr, 4, 32);
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, c->addr, 4);
		break;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		kxfer_prefix_set(&p, c->addr, 16, 128);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, c->addr, 16);
		break;
	}
	default:
		return -EINVAL;
	}
	return kxfer_connect_addr_ok(&p) ? 0 : -EINVAL;
}

/*
 * What the first rule that allows @ss says, into @out (its key with a
 * reference of the caller's); %NULL if none does.
 */
static struct kxfer_connect_rule *
kxfer_connect_rule_match(const struct sockaddr_storage *ss,
			 struct kxfer_connect_rule *out)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	struct kxfer_connect_rule *r;

	mutex_lock(&kxfer_connect_mutex);
	list_for_each_entry(r, &kxfer_connect_rules, cr_node) {
		if (r->cr_port != ntohs(sin->sin_port) ||
		    !kxfer_prefix_match(&r->cr_prefix,
					(const struct sockaddr *)ss))
			continue;
		*out = *r;
		kxfer_key_hold(r->cr_key);
		mutex_unlock(&kxfer_connect_mutex);
		return r;
	}
	mutex_unlock(&kxfer_connect_mutex);
	return NULL;
}

/* Count what the request came to under @rule, if it is still listed. */
static void kxfer_connect_count(struct kxfer_connect_rule *rule, int ret,
				bool made)
{
	struct kxfer_connect_rule *r;

	mutex_lock(&kxfer_connect_mutex);
	list_for_each_entry(r, &kxfer_connect_rules, cr_node) {
		if (r != rule)
			continue;
		if (made)
			atomic_inc(&r->cr_made);
		else if (ret == -ENOSPC)
			atomic_inc(&r->cr_refused);
		break;
	}
	mutex_unlock(&kxfer_connect_mutex);
}

/* The answer: the handle, the session's state, QPs and name. */
static int kxfer_connect_answer(struct kxfer_file *kf, struct kxfer_session *s,
				struct kxfer_connect *c, void __user *uarg)
{
	u32 handle;
	int ret;

	kxfer_session_get(s);
	ret = kxfer_peer_handle_new(kf, s, &handle);
	if (ret)
		return ret;
	c->handle = handle;
	c->state = READ_ONCE(s->s_state);
	c->qps = s->s_nqps;
	memset(c->name, 0, sizeof(c->name));
	strscpy(c->name, s->s_name, sizeof(c->name));
	if (copy_to_user(uarg, c, sizeof(*c))) {
		kxfer_peer_handle_drop(kf, handle, s);
		return -EFAULT;
	}
	return 0;
}

/**
 * kxfer_ioc_connect - KXFER_IOC_CONNECT: a session to an address the
 *	policy allows, made on demand if there is none
 * @kf: the file
 * @uarg: struct kxfer_connect in user memory
 *
 * A call that fails changes nothing: a session made for it ends at once.
 *
 * Return: 0, %-EFAULT, %-EINVAL, %-EACCES, %-ENOSPC, %-EMFILE or
 * %-ENOMEM (uapi/linux/kxfer.h).  May sleep.
 */
long kxfer_ioc_connect(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_connect_rule rule, *which;
	struct sockaddr_storage ss;
	struct kxfer_session *s;
	struct kxfer_connect c;
	bool made;
	int ret;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.reserved0 ||
	    !kxfer_zero(c.reserved, sizeof(c.reserved)))
		return -EINVAL;
	ret = kxfer_connect_dst(&c, &ss);
	if (ret)
		return ret;
	which = kxfer_connect_rule_match(&ss, &rule);
	if (!which)
		return -EACCES;

	/* Takes the key's reference, or drops it. */
	s = kxfer_session_on_demand(&ss, rule.cr_qps, rule.cr_key,
				    rule.cr_idle_s, &made);
	kxfer_connect_count(which, IS_ERR(s) ? PTR_ERR(s) : 0, made);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = kxfer_connect_answer(kf, s, &c, uarg);
	kxfer_session_on_demand_done(s, made, !ret);
	return ret;
}
