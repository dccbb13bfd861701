// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: listeners, the accepting side of sessions (DESIGN §2, §3).
 *
 * A listener is an rdma_cm id listening on an address and port.  A
 * connection request is accepted only if its private data is a kxfer
 * request of this protocol version and its source is inside one of the
 * listener's allowed prefixes (all sources when the list is empty);
 * otherwise it is rejected with a reason the connector can read, and
 * the refusal is logged, rate-limited, since a remote can repeat it at
 * will.  A listener that requires authentication refuses a node it
 * holds no key for (auth.c authenticates the sessions it accepts).  A
 * listener whose device goes away waits and binds again.
 *
 * The rdma_cm handler of a request only checks what it can without a
 * lock and queues the request; kxfer_accept_work finds the session and
 * accepts, as svcrdma does.  Accepting inside the handler would take
 * kxfer_sess_mutex and s_mutex under the new id's handler mutex, while
 * a connecting session calls rdma_connect() and rdma_destroy_id(), which
 * take a handler mutex, under s_mutex: the same lock classes in both
 * orders, which lockdep reports as a cycle.
 */
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/ipv6.h>
#include <rdma/ib_cm.h>

#include "kxfer.h"

/* protects kxfer_listeners and each listener's l_id */
DEFINE_MUTEX(kxfer_listen_mutex);
LIST_HEAD(kxfer_listeners);

#define KXFER_LISTEN_RETRY_MS	1000
#define KXFER_LISTEN_BACKLOG	64
/* requests queued for kxfer_accept_work, all listeners together */
#define KXFER_ACCEPTS_MAX	256

/**
 * struct kxfer_accept - a connection request waiting to be accepted
 * @a_kind: KXFER_CM_PENDING: the new id's context points here until the
 *	id is accepted (its QP's) or destroyed, so its events are ignored
 * @a_node: on kxfer_accepts
 * @a_id: the new id
 * @a_listener: the listener it came to (a reference)
 * @a_conn: its private data, checked
 * @a_remote_qpn: the connecting QP
 */
struct kxfer_accept {
	enum kxfer_cm_kind	a_kind;
	struct list_head	a_node;
	struct rdma_cm_id	*a_id;
	struct kxfer_listener	*a_listener;
	struct kxfer_wire_conn	a_conn;
	u32			a_remote_qpn;
};

static DEFINE_SPINLOCK(kxfer_accepts_lock);
static LIST_HEAD(kxfer_accepts);
static unsigned int kxfer_accepts_queued;
static void kxfer_accept_work_fn(struct work_struct *work);
static DECLARE_WORK(kxfer_accept_work, kxfer_accept_work_fn);

/**
 * kxfer_sa_bytes - the address bytes of a socket address
 * @sa: an AF_INET or AF_INET6 address
 * @len: out, 4 or 16 (0 for another family)
 *
 * An IPv4-mapped IPv6 address gives its 4 IPv4 bytes, so that one host
 * is one host whichever way its address came.
 *
 * Return: the bytes, in network order, or %NULL.
 */
const u8 *kxfer_sa_bytes(const struct sockaddr *sa, unsigned int *len)
{
	if (sa->sa_family == AF_INET) {
		*len = 4;
		return (const u8 *)&((const struct sockaddr_in *)sa)->sin_addr;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (ipv6_addr_v4mapped(a)) {
			*len = 4;
			return (const u8 *)&a->s6_addr32[3];
		}
		*len = 16;
		return (const u8 *)a;
	}
	*len = 0;
	return NULL;
}

/**
 * kxfer_prefix_set - make a prefix from an address and a length
 * @p: out, the prefix; kept without host bits, as it is shown
 * @addr: the address, network order
 * @alen: 4 (IPv4) or 16 (IPv6)
 * @bits: the prefix length
 *
 * Return: 0, or %-EINVAL if @alen is neither or @bits exceeds it.
 */
int kxfer_prefix_set(struct kxfer_prefix *p, const void *addr,
		     unsigned int alen, unsigned int bits)
{
	if ((alen != 4 && alen != 16) || bits > alen * 8)
		return -EINVAL;
	p->p_family = alen == 4 ? AF_INET : AF_INET6;
	p->p_len = bits;
	memset(p->p_addr, 0, sizeof(p->p_addr));
	memcpy(p->p_addr, addr, alen);
	if (bits % 8)
		p->p_addr[bits / 8] &= 0xff << (8 - bits % 8);
	memset(p->p_addr + DIV_ROUND_UP(bits, 8), 0,
	       sizeof(p->p_addr) - DIV_ROUND_UP(bits, 8));
	return 0;
}

/**
 * kxfer_prefix_match - an address is inside a prefix
 * @p: the prefix
 * @sa: the address (its port is ignored)
 *
 * Return: true if @sa has @p's family and its first p_len bits.
 */
bool kxfer_prefix_match(const struct kxfer_prefix *p,
			const struct sockaddr *sa)
{
	unsigned int len, full, rest;
	const u8 *a = kxfer_sa_bytes(sa, &len);

	if (!a || len != (p->p_family == AF_INET ? 4 : 16))
		return false;
	full = p->p_len / 8;
	rest = p->p_len % 8;
	if (memcmp(a, p->p_addr, full))
		return false;
	if (rest && ((a[full] ^ p->p_addr[full]) & (0xff << (8 - rest))))
		return false;
	return true;
}

static bool kxfer_listener_allows(const struct kxfer_listener *l,
				  const struct sockaddr *sa)
{
	unsigned int i;

	if (!l->l_nallow)
		return true;
	for (i = 0; i < l->l_nallow; i++)
		if (kxfer_prefix_match(&l->l_allow[i], sa))
			return true;
	return false;
}

static bool kxfer_sockaddr_eq(const struct sockaddr_storage *a,
			      const struct sockaddr_storage *b)
{
	return rdma_addr_size((struct sockaddr *)a) ==
	       rdma_addr_size((struct sockaddr *)b) &&
	       !memcmp(a, b, rdma_addr_size((struct sockaddr *)a));
}

static void kxfer_listener_refuse(struct rdma_cm_id *id,
				  struct kxfer_listener *l,
				  enum kxfer_reject_reason reason,
				  const char *why)
{
	struct kxfer_wire_reject rej = {
		.wr_magic = cpu_to_le32(KXFER_WIRE_MAGIC),
		.wr_reason = cpu_to_le32(reason),
	};

	struct sockaddr_storage *src = &id->route.addr.dst_addr;
	unsigned int len, last_len;
	const u8 *a, *b;

	bool log = false;

	atomic_inc(&l->l_rejected);
	/*
	 * Once per source address and reason, since a refused peer keeps
	 * retrying (the handler and kxfer_accept_work both refuse).
	 */
	spin_lock(&l->l_log_lock);
	a = kxfer_sa_bytes((struct sockaddr *)src, &len);
	b = kxfer_sa_bytes((struct sockaddr *)&l->l_last_refused, &last_len);
	if (l->l_last_reason != reason || !a || !b || len != last_len ||
	    memcmp(a, b, len)) {
		l->l_last_reason = reason;
		memcpy(&l->l_last_refused, src, sizeof(*src));
		log = true;
	}
	spin_unlock(&l->l_log_lock);
	if (log)
		pr_warn_ratelimited("kxfer: listener %pISpc: refused %pISc: %s\n",
				    &l->l_addr, src, why);
	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

static void kxfer_listener_put(struct kxfer_listener *l)
{
	if (!refcount_dec_and_test(&l->l_ref))
		return;
	kxfer_key_put(l->l_key);
	kxfer_auth_counts_put(l->l_counts);
	kfree(l);
}

/* Take or refuse one request, outside its handler (see the top). */
static void kxfer_accept_one(struct kxfer_accept *a)
{
	struct kxfer_listener *l = a->a_listener;
	struct rdma_cm_id *id = a->a_id;
	enum kxfer_reject_reason reason = KXFER_REJ_AUTH;
	const char *why = "authentication required, no key for that node";
	int ret;

	if (!kxfer_auth_listener_refuses(l, a->a_conn.wc_node)) {
		ret = kxfer_session_accept(id, &a->a_conn, a->a_remote_qpn, l);
		if (!ret) {
			atomic_inc(&l->l_accepted);
			return;
		}
		reason = ret == -EXDEV ? KXFER_REJ_DEVICE : KXFER_REJ_BUSY;
		why = ret == -EUSERS ? "too many half-open sessions" :
		      "cannot accept";
	}
	rdma_lock_handler(id);
	kxfer_listener_refuse(id, l, reason, why);
	rdma_unlock_handler(id);
	rdma_destroy_id(id);
}

static void kxfer_accept_work_fn(struct work_struct *work)
{
	struct kxfer_accept *a;

	for (;;) {
		spin_lock(&kxfer_accepts_lock);
		a = list_first_entry_or_null(&kxfer_accepts,
					     struct kxfer_accept, a_node);
		if (a)
			list_del(&a->a_node);
		spin_unlock(&kxfer_accepts_lock);
		if (!a)
			return;
		kxfer_accept_one(a);
		kxfer_listener_put(a->a_listener);
		spin_lock(&kxfer_accepts_lock);
		kxfer_accepts_queued--;
		spin_unlock(&kxfer_accepts_lock);
		kfree(a);
		cond_resched();
	}
}

/* Queue a checked request; false when too many wait already. */
static bool kxfer_accept_queue(struct rdma_cm_id *id, struct kxfer_listener *l,
			       const struct kxfer_wire_conn *conn,
			       u32 remote_qpn)
{
	struct kxfer_accept *a = kzalloc(sizeof(*a), GFP_KERNEL);

	if (!a)
		return false;
	a->a_kind = KXFER_CM_PENDING;
	a->a_id = id;
	a->a_listener = l;
	a->a_conn = *conn;
	a->a_remote_qpn = remote_qpn;
	spin_lock(&kxfer_accepts_lock);
	if (kxfer_accepts_queued >= KXFER_ACCEPTS_MAX) {
		spin_unlock(&kxfer_accepts_lock);
		kfree(a);
		return false;
	}
	kxfer_accepts_queued++;
	refcount_inc(&l->l_ref);
	/* Until accepted or destroyed, this id's events are ignored. */
	id->context = a;
	list_add_tail(&a->a_node, &kxfer_accepts);
	spin_unlock(&kxfer_accepts_lock);
	queue_work(kxfer_wq, &kxfer_accept_work);
	return true;
}

/**
 * kxfer_accepts_flush - settle every queued request (unload)
 *
 * After the listeners are gone no request comes; those queued are
 * accepted into sessions (stopped after this) or refused.
 */
void kxfer_accepts_flush(void)
{
	flush_work(&kxfer_accept_work);
}

/**
 * kxfer_listener_cm_handler - rdma_cm events of a listener
 * @id: the listening id, or a new id in its CONNECT_REQUEST
 * @ev: the event
 *
 * Return: 0 (the request is queued, or not a request); non-zero after
 * refusing a request, so that rdma_cm destroys the new id.
 */
int kxfer_listener_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	u8 len = ev->param.conn.private_data_len;
	struct kxfer_listener *l = id->context;
	struct kxfer_wire_conn conn = {};
	const char *why = "bad request";
	int ret;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;

	/*
	 * The IB CM pads private data to its full size with zeros, iWARP
	 * gives what was sent: an older peer's shorter data reads as zeros.
	 */
	if (ev->param.conn.private_data)
		memcpy(&conn, ev->param.conn.private_data,
		       min_t(size_t, len, sizeof(conn)));
	ret = kxfer_wire_check_conn(ev->param.conn.private_data ? &conn : NULL,
				    len, &why);
	if (ret) {
		kxfer_listener_refuse(id, l, ret == -EPROTO ? KXFER_REJ_VERSION :
				      KXFER_REJ_MALFORMED, why);
		return 1;
	}
	/* A rail's join, to a node that does not speak rails (any more) */
	if ((le16_to_cpu(conn.wc_flags) & KXFER_CONN_F_JOIN) &&
	    !(READ_ONCE(kxfer_wire_features) & KXFER_WIRE_F_RAILS)) {
		kxfer_listener_refuse(id, l, KXFER_REJ_MALFORMED,
				      "rail join without rails");
		return 1;
	}
	if (!kxfer_listener_allows(l, (struct sockaddr *)
				   &id->route.addr.dst_addr)) {
		kxfer_listener_refuse(id, l, KXFER_REJ_NOT_ALLOWED,
				      "not in the allow list");
		return 1;
	}
	if (!kxfer_accept_queue(id, l, &conn, ev->param.conn.qp_num)) {
		kxfer_listener_refuse(id, l, KXFER_REJ_BUSY,
				      "too many requests waiting");
		return 1;
	}
	return 0;
}

static int kxfer_listener_start(struct kxfer_listener *l)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(&init_net, kxfer_cm_handler, l, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = rdma_bind_addr(id, (struct sockaddr *)&l->l_addr);
	if (!ret)
		ret = rdma_listen(id, KXFER_LISTEN_BACKLOG);
	if (ret) {
		rdma_destroy_id(id);
		return ret;
	}
	l->l_id = id;
	l->l_state = KXFER_LISTEN_ACTIVE;
	return 0;
}

static void kxfer_listener_retry(struct work_struct *work)
{
	struct kxfer_listener *l = container_of(to_delayed_work(work),
						struct kxfer_listener, l_retry);

	mutex_lock(&kxfer_listen_mutex);
	if (!l->l_id) {
		if (kxfer_listener_start(l))
			queue_delayed_work(kxfer_wq, &l->l_retry,
					   msecs_to_jiffies(KXFER_LISTEN_RETRY_MS));
		else
			kxfer_info("listener %pISpc: listening again\n",
				   &l->l_addr);
	}
	mutex_unlock(&kxfer_listen_mutex);
}

/**
 * kxfer_listen_create - listen for sessions on an address
 * @addr: local address and port
 * @allow: allowed source prefixes
 * @nallow: entries in @allow, 0 for any source
 * @key: the key accepting sessions prove unless their node has its own
 *	(kxfer_key_get()), or %NULL; the listener takes the reference, or
 *	drops it on failure
 * @auth_required: keep only sessions that authenticate
 * @poll: the sessions it accepts have polled send CQs
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EEXIST for an address already listened on; the error of
 * rdma_bind_addr() or rdma_listen() (%-EADDRNOTAVAIL when no RDMA device
 * has the address).  May sleep.
 */
int kxfer_listen_create(const struct sockaddr_storage *addr,
			const struct kxfer_prefix *allow, unsigned int nallow,
			struct kxfer_key *key, bool auth_required, bool poll,
			struct netlink_ext_ack *extack)
{
	struct kxfer_listener *l, *it;
	int ret;

	if (nallow > KXFER_MAX_ALLOW) {
		kxfer_key_put(key);
		NL_SET_ERR_MSG(extack, "too many allowed prefixes (16 at most)");
		return -EINVAL;
	}
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (l)
		l->l_counts = kxfer_auth_counts_alloc();
	if (!l || !l->l_counts) {
		kxfer_key_put(key);
		kfree(l);
		return -ENOMEM;
	}
	l->l_key = key;
	l->l_auth_required = auth_required;
	l->l_poll = poll;
	l->l_kind = KXFER_CM_LISTENER;
	refcount_set(&l->l_ref, 1);
	spin_lock_init(&l->l_log_lock);
	memcpy(&l->l_addr, addr, sizeof(l->l_addr));
	memcpy(l->l_allow, allow, nallow * sizeof(*allow));
	l->l_nallow = nallow;
	INIT_DELAYED_WORK(&l->l_retry, kxfer_listener_retry);

	mutex_lock(&kxfer_listen_mutex);
	list_for_each_entry(it, &kxfer_listeners, l_node) {
		if (kxfer_sockaddr_eq(&it->l_addr, addr)) {
			NL_SET_ERR_MSG(extack, "already listening there");
			ret = -EEXIST;
			goto out_unlock;
		}
	}
	ret = kxfer_listener_start(l);
	if (ret) {
		if (ret == -EADDRNOTAVAIL || ret == -ENODEV)
			NL_SET_ERR_MSG(extack, "no RDMA device has this address");
		else if (ret == -EADDRINUSE)
			NL_SET_ERR_MSG(extack, "address and port already in use");
		else
			NL_SET_ERR_MSG(extack, "cannot listen on this address");
		goto out_unlock;
	}
	list_add_tail(&l->l_node, &kxfer_listeners);
	mutex_unlock(&kxfer_listen_mutex);
	kxfer_info("listening on %pISpc\n", &l->l_addr);
	return 0;

out_unlock:
	mutex_unlock(&kxfer_listen_mutex);
	kxfer_key_put(l->l_key);
	kxfer_auth_counts_put(l->l_counts);
	kfree(l);
	return ret;
}

static void kxfer_listener_destroy(struct kxfer_listener *l)
{
	cancel_delayed_work_sync(&l->l_retry);
	if (l->l_id)
		rdma_destroy_id(l->l_id);
	kxfer_listener_put(l);
}

/**
 * kxfer_listen_delete - stop listening; sessions accepted stay
 * @addr: the address and port listened on
 * @extack: for the reason of a refusal
 *
 * Return: 0 or %-ENOENT.  May sleep.
 */
int kxfer_listen_delete(const struct sockaddr_storage *addr,
			struct netlink_ext_ack *extack)
{
	struct kxfer_listener *l;

	mutex_lock(&kxfer_listen_mutex);
	list_for_each_entry(l, &kxfer_listeners, l_node)
		if (kxfer_sockaddr_eq(&l->l_addr, addr))
			break;
	if (list_entry_is_head(l, &kxfer_listeners, l_node)) {
		mutex_unlock(&kxfer_listen_mutex);
		NL_SET_ERR_MSG(extack, "not listening there");
		return -ENOENT;
	}
	list_del(&l->l_node);
	mutex_unlock(&kxfer_listen_mutex);
	kxfer_listener_destroy(l);
	return 0;
}

/**
 * kxfer_listeners_device_removed - drop listening ids bound to a device
 * @kd: the departing device
 *
 * The listeners stay, waiting, and bind again when an RDMA device holds
 * their address.  May sleep.
 */
void kxfer_listeners_device_removed(struct kxfer_device *kd)
{
	struct kxfer_listener *l;

	mutex_lock(&kxfer_listen_mutex);
	list_for_each_entry(l, &kxfer_listeners, l_node) {
		if (!l->l_id || l->l_id->device != kd->kd_ibdev)
			continue;
		rdma_destroy_id(l->l_id);
		l->l_id = NULL;
		l->l_state = KXFER_LISTEN_WAITING;
		queue_delayed_work(kxfer_wq, &l->l_retry,
				   msecs_to_jiffies(KXFER_LISTEN_RETRY_MS));
	}
	mutex_unlock(&kxfer_listen_mutex);
}

/**
 * kxfer_listeners_destroy_all - stop every listener (unload)
 */
void kxfer_listeners_destroy_all(void)
{
	struct kxfer_listener *l;

	for (;;) {
		mutex_lock(&kxfer_listen_mutex);
		l = list_first_entry_or_null(&kxfer_listeners,
					     struct kxfer_listener, l_node);
		if (l)
			list_del(&l->l_node);
		mutex_unlock(&kxfer_listen_mutex);
		if (!l)
			break;
		kxfer_listener_destroy(l);
	}
}
