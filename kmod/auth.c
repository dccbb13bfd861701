// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: authenticated sessions (DESIGN §10).
 *
 * Keys are secrets of 16 to 64 bytes that two nodes share.  The
 * administrator sets them over netlink ("kxferctl key add NAME secret
 * FILE"): they are written, never read back, never logged, wiped when
 * replaced or deleted, and copied nowhere but into the keyed transform
 * of one handshake.  A connecting peer names the key it proves; a
 * listener names the key accepting sessions prove unless their node has
 * one of its own (a key bound to that node name).
 *
 * The handshake runs on the control channel as soon as it starts, when
 * the acceptor said in its accept that it will authenticate the session
 * (KXFER_WIRE_F_AUTH: it holds a key for the connector's node, or its
 * listener requires authentication), and gave its nonce there:
 *
 *   connector                                 acceptor
 *                                      <-     accept {F_AUTH, Na}
 *   HELLO, CHALLENGE {key?, Nc,
 *                     MAC(connector)}  ->     checks the connector's proof
 *                                      <-     REPLY {key?, MAC(acceptor)}
 *   checks the acceptor's proof
 *
 * The connector proves first, so that an acceptor, which anyone who can
 * reach it may connect to, gives its proof to no one who has not proven
 * the key: nothing to guess the key offline from.  It costs the acceptor
 * half a round trip before it may advertise, the connector one.
 *
 * Each MAC is HMAC-SHA256, keyed with the secret, of struct
 * kxfer_wire_auth_mac: both nonces, both node names, the session id, the
 * connector's incarnation and every QP number of the session, with the
 * prover's role, so that a proof holds for one session and one direction
 * only.  Proofs are compared with crypto_memneq().  Until a session that
 * authenticates has done so, no export is registered or advertised, no
 * export table, notification or WRITE_WITH_IMM is accepted (the gate
 * below), the session is not up, so no job is accepted (-ENOTCONN), and an
 * older incarnation of the connector's node is not superseded.  A
 * handshake that fails sends AUTH_FAIL as its last words (when the peer
 * speaks it, and leaves it to the peer to hang up, for a second at most),
 * ends the session with a logged reason, counts it (the listener's
 * counter, the peer's) and, on the connecting side, waits the longest
 * backoff before the next attempt.
 *
 * Everything here but the key functions runs under the session's
 * s_mutex.  kxfer_key_mutex nests inside s_mutex and kxfer_sess_mutex,
 * and nothing is taken inside it.
 */
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/math64.h>
#include <crypto/algapi.h>
#include <crypto/hash.h>

#include "kxfer.h"

/* protects kxfer_keys and every key's secret */
DEFINE_MUTEX(kxfer_key_mutex);
LIST_HEAD(kxfer_keys);

/* A handshake that has not ended this long after it began fails. */
#define KXFER_AUTH_TIMEOUT_MS		10000
/* A refusal's last words: the peer hangs up within this, or we do. */
#define KXFER_AUTH_LAST_WORDS_MS	1000

/* ---------------------------------------------------------------------- */
/* Keys                                                                    */
/* ---------------------------------------------------------------------- */

static struct kxfer_key *kxfer_key_lookup(const char *name)
{
	struct kxfer_key *k;

	lockdep_assert_held(&kxfer_key_mutex);
	list_for_each_entry(k, &kxfer_keys, k_node)
		if (!strcmp(k->k_name, name))
			return k;
	return NULL;
}

/* The key bound to a remote node name, if any. */
static struct kxfer_key *kxfer_key_of_peer(const char *node)
{
	struct kxfer_key *k;

	lockdep_assert_held(&kxfer_key_mutex);
	list_for_each_entry(k, &kxfer_keys, k_node)
		if (k->k_peer[0] && !strcmp(k->k_peer, node))
			return k;
	return NULL;
}

static int kxfer_key_check(unsigned int len, struct netlink_ext_ack *extack)
{
	if (len < KXFER_KEY_MIN_LEN || len > KXFER_KEY_MAX_LEN) {
		NL_SET_ERR_MSG(extack, "a secret has 16 to 64 bytes");
		return -EINVAL;
	}
	return 0;
}

/**
 * kxfer_key_create - add a key
 * @name: unique among keys
 * @secret: its bytes; copied
 * @len: KXFER_KEY_MIN_LEN..KXFER_KEY_MAX_LEN
 * @peer: the remote node whose sessions listeners authenticate with it,
 *	or "" for none
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EINVAL for a secret too short or too long; %-EEXIST for a
 * name in use or a node another key is bound to; %-ENOMEM.  May sleep.
 */
int kxfer_key_create(const char *name, const u8 *secret, unsigned int len,
		     const char *peer, struct netlink_ext_ack *extack)
{
	struct kxfer_key *k;
	int ret;

	ret = kxfer_key_check(len, extack);
	if (ret)
		return ret;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	strscpy(k->k_name, name, sizeof(k->k_name));
	strscpy(k->k_peer, peer, sizeof(k->k_peer));
	memcpy(k->k_secret, secret, len);
	k->k_len = len;
	k->k_gen = 1;
	atomic_set(&k->k_users, 0);

	mutex_lock(&kxfer_key_mutex);
	if (kxfer_key_lookup(name)) {
		NL_SET_ERR_MSG(extack, "key already exists");
		ret = -EEXIST;
	} else if (peer[0] && kxfer_key_of_peer(peer)) {
		NL_SET_ERR_MSG(extack, "another key is bound to that peer");
		ret = -EEXIST;
	} else {
		list_add_tail(&k->k_node, &kxfer_keys);
		k = NULL;
	}
	mutex_unlock(&kxfer_key_mutex);
	kfree_sensitive(k);
	return ret;
}

/**
 * kxfer_key_set - give a key a new secret (rotation)
 * @name: the key
 * @secret: its new bytes; copied
 * @len: KXFER_KEY_MIN_LEN..KXFER_KEY_MAX_LEN
 * @extack: for the reason of a refusal
 *
 * Sessions that authenticated with the old secret stay; every handshake
 * from now on uses the new one.
 *
 * Return: 0, %-EINVAL or %-ENOENT.  May sleep.
 */
int kxfer_key_set(const char *name, const u8 *secret, unsigned int len,
		  struct netlink_ext_ack *extack)
{
	struct kxfer_key *k;
	u32 gen = 0;
	int ret;

	ret = kxfer_key_check(len, extack);
	if (ret)
		return ret;
	mutex_lock(&kxfer_key_mutex);
	k = kxfer_key_lookup(name);
	if (k) {
		memzero_explicit(k->k_secret, sizeof(k->k_secret));
		memcpy(k->k_secret, secret, len);
		k->k_len = len;
		gen = ++k->k_gen;
	}
	mutex_unlock(&kxfer_key_mutex);
	if (!k) {
		NL_SET_ERR_MSG(extack, "no such key");
		return -ENOENT;
	}
	kxfer_info("key %s: new secret, generation %u\n", name, gen);
	return 0;
}

/**
 * kxfer_key_delete - forget a key and wipe its secret
 * @name: the key
 * @extack: for the reason of a refusal
 *
 * Sessions that authenticated with it stay.
 *
 * Return: 0; %-ENOENT; %-EBUSY while a listener or a peer names it.
 * May sleep.
 */
int kxfer_key_delete(const char *name, struct netlink_ext_ack *extack)
{
	struct kxfer_key *k;
	int ret = 0;

	mutex_lock(&kxfer_key_mutex);
	k = kxfer_key_lookup(name);
	if (!k) {
		NL_SET_ERR_MSG(extack, "no such key");
		ret = -ENOENT;
	} else if (atomic_read(&k->k_users)) {
		NL_SET_ERR_MSG(extack, "key is used by a listener or a peer");
		ret = -EBUSY;
		k = NULL;
	} else {
		list_del(&k->k_node);
	}
	mutex_unlock(&kxfer_key_mutex);
	kfree_sensitive(ret ? NULL : k);
	return ret;
}

/**
 * kxfer_key_get - a key by name, for a listener or a peer to use
 * @name: the key
 * @extack: for the reason of a refusal
 *
 * Return: the key, which cannot be deleted until kxfer_key_put(); or
 * ERR_PTR(%-ENOENT).  May sleep.
 */
struct kxfer_key *kxfer_key_get(const char *name,
				struct netlink_ext_ack *extack)
{
	struct kxfer_key *k;

	mutex_lock(&kxfer_key_mutex);
	k = kxfer_key_lookup(name);
	if (k)
		atomic_inc(&k->k_users);
	mutex_unlock(&kxfer_key_mutex);
	if (!k) {
		NL_SET_ERR_MSG(extack, "no such key");
		return ERR_PTR(-ENOENT);
	}
	return k;
}

/**
 * kxfer_key_put - stop using a key
 * @key: from kxfer_key_get(), or %NULL
 *
 * Any context.
 */
void kxfer_key_put(struct kxfer_key *key)
{
	if (key)
		atomic_dec(&key->k_users);
}

/**
 * kxfer_key_hold - another use of a key already held
 * @key: a key the caller holds a use of (kxfer_key_get()), or %NULL
 *
 * Dropped with kxfer_key_put().  Any context.
 */
void kxfer_key_hold(struct kxfer_key *key)
{
	if (key)
		atomic_inc(&key->k_users);
}

/**
 * kxfer_keys_destroy_all - wipe and free every key (unload)
 *
 * Listeners and sessions are gone.
 */
void kxfer_keys_destroy_all(void)
{
	struct kxfer_key *k, *tmp;

	mutex_lock(&kxfer_key_mutex);
	list_for_each_entry_safe(k, tmp, &kxfer_keys, k_node) {
		list_del(&k->k_node);
		WARN_ON_ONCE(atomic_read(&k->k_users));
		kfree_sensitive(k);
	}
	mutex_unlock(&kxfer_key_mutex);
}

/**
 * kxfer_auth_counts_alloc - counters for a new listener
 *
 * Return: the counters, one reference held, or %NULL.
 */
struct kxfer_auth_counts *kxfer_auth_counts_alloc(void)
{
	struct kxfer_auth_counts *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (c)
		refcount_set(&c->ac_ref, 1);
	return c;
}

/**
 * kxfer_auth_counts_put - drop a reference to a listener's counters
 * @c: the counters, or %NULL
 *
 * Any context.
 */
void kxfer_auth_counts_put(struct kxfer_auth_counts *c)
{
	if (c && refcount_dec_and_test(&c->ac_ref))
		kfree(c);
}

/* ---------------------------------------------------------------------- */
/* The policy a listener gives its sessions                                */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_auth_listener_refuses - a listener has no way to authenticate a node
 * @l: the listener
 * @node: the node name of a connection request (checked)
 *
 * A listener that requires authentication but holds no key for @node
 * (none bound to it, none of its own), or speaks no authentication
 * (wire_features), refuses the request outright (KXFER_REJ_AUTH).
 *
 * Return: true to refuse.  May sleep.
 */
bool kxfer_auth_listener_refuses(const struct kxfer_listener *l,
				 const u8 *node)
{
	bool refuse;

	if (!l->l_auth_required)
		return false;
	if (!(READ_ONCE(kxfer_wire_features) & KXFER_WIRE_F_AUTH))
		return true;
	if (l->l_key)
		return false;
	mutex_lock(&kxfer_key_mutex);
	refuse = !kxfer_key_of_peer((const char *)node);
	mutex_unlock(&kxfer_key_mutex);
	return refuse;
}

/**
 * kxfer_auth_node_keyed - will a node of this name have to prove a key?
 * @node: the name a connector claims
 *
 * A key bound to the name (key add ... peer NODE) makes every listener
 * authenticate the node with it: a connector claiming the name proves the
 * key, or its session fails.  May sleep (kxfer_key_mutex).
 *
 * Return: true if such a key is here and this node authenticates.
 */
bool kxfer_auth_node_keyed(const char *node)
{
	bool keyed;

	if (!(READ_ONCE(kxfer_wire_features) & KXFER_WIRE_F_AUTH))
		return false;
	mutex_lock(&kxfer_key_mutex);
	keyed = kxfer_key_of_peer(node);
	mutex_unlock(&kxfer_key_mutex);
	return keyed;
}

/**
 * kxfer_auth_accept_init - what a new accepting session will authenticate
 * @s: the session, not yet listed; s_remote_node is set
 * @l: the listener that accepted it
 *
 * It authenticates if its listener requires it or a key for the node is
 * there; then it supersedes no older incarnation of its node until the
 * handshake has decided.  Caller holds kxfer_sess_mutex.
 */
void kxfer_auth_accept_init(struct kxfer_session *s,
			    const struct kxfer_listener *l)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	bool key;

	if (l->l_key)
		strscpy(a->sa_listen_key, l->l_key->k_name,
			sizeof(a->sa_listen_key));
	a->sa_required = l->l_auth_required;
	if (l->l_counts) {
		refcount_inc(&l->l_counts->ac_ref);
		a->sa_counts = l->l_counts;
	}
	/* A rail joining a session proves its token instead (rail.c). */
	if (s->s_join) {
		get_random_bytes(a->sa_nonce, sizeof(a->sa_nonce));
		a->sa_state = KXFER_AUTH_S_WAIT_JOIN;
		a->sa_result = KXFER_PEER_AUTH_PENDING;
		return;
	}
	mutex_lock(&kxfer_key_mutex);
	key = l->l_key || kxfer_key_of_peer(s->s_remote_node);
	mutex_unlock(&kxfer_key_mutex);
	a->sa_offered = (READ_ONCE(kxfer_wire_features) & KXFER_WIRE_F_AUTH) &&
			(key || a->sa_required);
	if (a->sa_offered) {
		get_random_bytes(a->sa_nonce, sizeof(a->sa_nonce));
		a->sa_state = KXFER_AUTH_S_WAIT_HELLO;
		a->sa_result = KXFER_PEER_AUTH_PENDING;
	}
}

/**
 * kxfer_auth_accept_fill - what an acceptor tells in its accept
 * @s: the accepting session
 * @wa: the accept's private data: its features and nonce are set
 *
 * The features it speaks, without KXFER_WIRE_F_AUTH for a session it
 * will not authenticate: a connector then sends no challenge, as to an
 * older kxfer, and nothing changes for nodes that hold no keys; the
 * accept then ends after wa_features, as one of a kxfer without
 * authentication does.  With it, the session's nonce too, which the
 * connector's proof answers.  Caller holds s_mutex.
 *
 * Return: the bytes of @wa to send.
 */
unsigned int kxfer_auth_accept_fill(const struct kxfer_session *s,
				    struct kxfer_wire_accept *wa)
{
	u32 features = READ_ONCE(kxfer_wire_features) & KXFER_WIRE_FEATURES;

	/* A rail's join: no handshake of its own, the nonce its proof answers */
	if (s->s_join) {
		wa->wa_features = cpu_to_le32(features & ~KXFER_WIRE_F_AUTH);
		memcpy(wa->wa_nonce, s->s_auth.sa_nonce, sizeof(wa->wa_nonce));
		return sizeof(*wa);
	}
	if (!s->s_auth.sa_offered) {
		wa->wa_features = cpu_to_le32(features & ~KXFER_WIRE_F_AUTH);
		return offsetofend(struct kxfer_wire_accept, wa_features);
	}
	wa->wa_features = cpu_to_le32(features | KXFER_WIRE_F_AUTH);
	memcpy(wa->wa_nonce, s->s_auth.sa_nonce, sizeof(wa->wa_nonce));
	return sizeof(*wa);
}

/**
 * kxfer_auth_accepted - a connector reads the acceptor's nonce
 * @s: the connecting session; its s_peer_features are set
 * @wa: the accept's private data of QP 0, checked
 * @len: its length
 *
 * An acceptor that offers authentication (and that we speak it to) must
 * send its nonce: an accept that ends before it is malformed, since a
 * nonce read as zeros would make the proofs of the session stale ones.
 * From the rdma_cm handler, under s_lock; s_work reads it after.
 *
 * Return: 0, or %-EPROTO for an offer without a nonce.
 */
int kxfer_auth_accepted(struct kxfer_session *s,
			const struct kxfer_wire_accept *wa, unsigned int len)
{
	/* A rail's join: the acceptor must speak rails and give a nonce. */
	if (s->s_join && !(s->s_peer_features & KXFER_WIRE_F_RAILS))
		return -EPROTO;
	if (!(s->s_peer_features & KXFER_WIRE_F_AUTH) && !s->s_join)
		return 0;
	if (len < offsetofend(struct kxfer_wire_accept, wa_nonce))
		return -EPROTO;
	memcpy(s->s_auth.sa_peer_nonce, wa->wa_nonce,
	       sizeof(s->s_auth.sa_peer_nonce));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* State                                                                   */
/* ---------------------------------------------------------------------- */

static void kxfer_auth_set_state(struct kxfer_session *s,
				 enum kxfer_auth_state st)
{
	WRITE_ONCE(s->s_auth.sa_state, st);
}

/**
 * kxfer_auth_ready - may the session advertise and accept exports?
 * @s: the session
 *
 * Return: true once the handshake succeeded, or when there is none.
 */
bool kxfer_auth_ready(const struct kxfer_session *s)
{
	enum kxfer_auth_state st = READ_ONCE(s->s_auth.sa_state);

	return st == KXFER_AUTH_S_NONE || st == KXFER_AUTH_S_OK;
}

/**
 * kxfer_auth_pending - is the session's handshake under way or failing?
 * @s: the session
 *
 * Any context (reads one field).
 *
 * Return: true until it has succeeded or was decided against.
 */
bool kxfer_auth_pending(const struct kxfer_session *s)
{
	enum kxfer_auth_state st = READ_ONCE(s->s_auth.sa_state);

	return st != KXFER_AUTH_S_NONE && st != KXFER_AUTH_S_OK;
}

/**
 * kxfer_auth_strength - how much a session's identity is worth
 * @s: the session
 *
 * Return: 2 if it proved the key of its name, 1 if it proved a
 * listener's shared key, 0 otherwise.  A session supersedes only sessions
 * worth no more than itself.  Any context.
 */
int kxfer_auth_strength(const struct kxfer_session *s)
{
	switch (READ_ONCE(s->s_auth.sa_result)) {
	case KXFER_PEER_AUTH_OK:
		return 2;
	case KXFER_PEER_AUTH_SHARED:
		return 1;
	default:
		return 0;
	}
}

/**
 * kxfer_auth_named - did the session prove the key of its name?
 * @s: the session
 *
 * A connecting session's name is the administrator's own; an accepting
 * one's is proven only by a key bound to that node.  Caller holds
 * s_mutex.
 *
 * Return: true if so.
 */
bool kxfer_auth_named(const struct kxfer_session *s)
{
	return s->s_auth.sa_state == KXFER_AUTH_S_OK &&
	       s->s_auth.sa_result == KXFER_PEER_AUTH_OK;
}

static void kxfer_auth_end_handshake(struct kxfer_sess_auth *a)
{
	if (a->sa_tfm)
		crypto_free_shash(a->sa_tfm);	/* wipes the keyed state */
	a->sa_tfm = NULL;
	memzero_explicit(a->sa_nonce, sizeof(a->sa_nonce));
	memzero_explicit(a->sa_peer_nonce, sizeof(a->sa_peer_nonce));
}

/* A handshake failed here or there: say why and count it. */
static void kxfer_auth_count_failure(struct kxfer_session *s, const char *why)
{
	pr_warn_ratelimited("kxfer: peer %s: authentication failed: %s\n",
			    s->s_name, why);
	WRITE_ONCE(s->s_auth.sa_result, KXFER_PEER_AUTH_FAILED);
	if (s->s_role == KXFER_PEER_CONNECTOR) {
		s->s_auth.sa_failures++;
		/* A key that did not match will not match sooner. */
		s->s_backoff_ms = max(READ_ONCE(kxfer_reconnect_max_ms), 100U);
	} else if (s->s_auth.sa_counts) {
		atomic_inc(&s->s_auth.sa_counts->ac_failed);
	}
}

/**
 * kxfer_auth_refuse - end the session for a failed handshake or join
 * @s: the session
 * @reason: KXFER_AUTH_FAIL_*, or 0 to tell the peer nothing; for a
 *	rail's join (rail.c) KXFER_AUTH_FAIL_JOIN (no such session, or a
 *	wrong proof: the connector starts a new one) or
 *	KXFER_AUTH_FAIL_JOIN_REFUSED (the session is there but takes no
 *	such rail now: it keeps its token)
 * @why: the reason, logged and kept
 *
 * With @reason, and a peer that speaks the handshake, tell it why first
 * and let it hang up (it counts and says why when it reads the message),
 * or end the session after KXFER_AUTH_LAST_WORDS_MS
 * (kxfer_auth_expired()); nothing the peer sends meanwhile is looked at.
 * Caller holds s_mutex.
 */
void kxfer_auth_refuse(struct kxfer_session *s, u32 reason, const char *why)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	struct kxfer_msg_auth_fail af = {};

	kxfer_auth_count_failure(s, why);
	kxfer_auth_end_handshake(a);
	kxfer_auth_set_state(s, KXFER_AUTH_S_REFUSED);
	a->sa_why = why;
	a->sa_start_ns = ktime_get_ns();
	if (!reason || !(s->s_peer_features &
			 (KXFER_WIRE_F_AUTH | KXFER_WIRE_F_RAILS))) {
		kxfer_session_fail(s, -EACCES, why);
		return;
	}
	af.af_reason = cpu_to_le32(reason);
	kxfer_ctrl_send(s, KXFER_MSG_AUTH_FAIL, &af.af_reason,
			sizeof(af) - sizeof(af.af_hdr));
	kxfer_ctrl_flush(s);
	/* Hang up ourselves if the peer has not when the time is up. */
	mod_delayed_work(kxfer_wq, &s->s_timer,
			 msecs_to_jiffies(KXFER_AUTH_LAST_WORDS_MS) + 1);
}

/* The handshake decided: no authentication, and none is required. */
static void kxfer_auth_none(struct kxfer_session *s)
{
	kxfer_auth_end_handshake(&s->s_auth);
	WRITE_ONCE(s->s_auth.sa_result, KXFER_PEER_AUTH_NONE);
	kxfer_auth_set_state(s, KXFER_AUTH_S_NONE);
	if (s->s_role == KXFER_PEER_ACCEPTOR)
		set_bit(KXFER_SE_SUPERSEDE, &s->s_events);
}

static void kxfer_auth_succeed(struct kxfer_session *s)
{
	struct kxfer_sess_auth *a = &s->s_auth;

	u64 us = div_u64(ktime_get_ns() - a->sa_start_ns, NSEC_PER_USEC);

	kxfer_auth_end_handshake(a);
	WRITE_ONCE(a->sa_result, a->sa_named ? KXFER_PEER_AUTH_OK :
		   KXFER_PEER_AUTH_SHARED);
	kxfer_auth_set_state(s, KXFER_AUTH_S_OK);
	kxfer_info("peer %s: authenticated in %llu us, key %s%s\n", s->s_name,
		   us, a->sa_used,
		   a->sa_named ? "" : " (the listener's: name not proven)");
	if (s->s_role == KXFER_PEER_ACCEPTOR) {
		if (a->sa_counts)
			atomic_inc(&a->sa_counts->ac_ok);
		set_bit(KXFER_SE_SUPERSEDE, &s->s_events);
	}
}

/* ---------------------------------------------------------------------- */
/* Proofs                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Key this handshake's transform: with the key bound to the remote node
 * if @by_peer and there is one, else with the key called @name.  The
 * transform is allocated before kxfer_key_mutex is taken (allocation may
 * load a module); only setkey runs under it.
 *
 * Return: 0, %-ENOKEY if there is no such key, or an error of the crypto
 * API.
 */
static int kxfer_auth_load(struct kxfer_session *s, const char *name,
			   bool by_peer)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	struct crypto_shash *tfm;
	struct kxfer_key *k;
	int ret;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	mutex_lock(&kxfer_key_mutex);
	k = by_peer ? kxfer_key_of_peer(s->s_remote_node) : NULL;
	if (!k && name[0])
		k = kxfer_key_lookup(name);
	ret = k ? crypto_shash_setkey(tfm, k->k_secret, k->k_len) : -ENOKEY;
	if (!ret) {
		strscpy(a->sa_used, k->k_name, sizeof(a->sa_used));
		a->sa_named = s->s_role == KXFER_PEER_CONNECTOR ||
			      !strcmp(k->k_peer, s->s_remote_node);
	}
	mutex_unlock(&kxfer_key_mutex);
	if (ret) {
		crypto_free_shash(tfm);
		return ret;
	}
	a->sa_tfm = tfm;
	return 0;
}

/* The proof of @role for this session, with the handshake's key. */
static int kxfer_auth_mac(struct kxfer_session *s, u32 role, u8 *out)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	bool conn = s->s_role == KXFER_PEER_CONNECTOR;
	struct kxfer_wire_auth_mac m = {};
	unsigned int i;

	BUILD_BUG_ON(sizeof(KXFER_AUTH_LABEL) > sizeof(m.am_label));
	memcpy(m.am_label, KXFER_AUTH_LABEL, sizeof(KXFER_AUTH_LABEL));
	m.am_role = cpu_to_le32(role);
	m.am_nqps = cpu_to_le32(s->s_nqps);
	m.am_session_id = cpu_to_le64(s->s_sid);
	m.am_incarnation = cpu_to_le32(conn ? kxfer_incarnation :
				       s->s_incarnation);
	memcpy(m.am_cnonce, conn ? a->sa_nonce : a->sa_peer_nonce,
	       KXFER_AUTH_NONCE_LEN);
	memcpy(m.am_anonce, conn ? a->sa_peer_nonce : a->sa_nonce,
	       KXFER_AUTH_NONCE_LEN);
	strscpy((char *)(conn ? m.am_cnode : m.am_anode), kxfer_node_name,
		KXFER_WIRE_NAME_MAX);
	memcpy(conn ? m.am_anode : m.am_cnode, s->s_remote_node,
	       KXFER_WIRE_NAME_MAX);
	for (i = 0; i < s->s_nqps; i++) {
		const struct kxfer_qp *qp = &s->s_qps[i];

		m.am_qpn[i][conn ? 0 : 1] = cpu_to_le32(qp->q_id->qp->qp_num);
		m.am_qpn[i][conn ? 1 : 0] = cpu_to_le32(qp->q_remote_qpn);
	}
	return crypto_shash_tfm_digest(a->sa_tfm, (const u8 *)&m, sizeof(m),
				       out);
}

/* Is @mac the peer's proof (@role) for this session?  In constant time. */
static int kxfer_auth_check_mac(struct kxfer_session *s, u32 role,
				const u8 *mac, bool *ok)
{
	u8 want[KXFER_AUTH_MAC_LEN];
	int ret;

	ret = kxfer_auth_mac(s, role, want);
	*ok = !ret && !crypto_memneq(want, mac, sizeof(want));
	memzero_explicit(want, sizeof(want));
	return ret;
}

/* ---------------------------------------------------------------------- */
/* The handshake                                                           */
/* ---------------------------------------------------------------------- */

/**
 * kxfer_auth_start - the control channel is up: begin the handshake
 * @s: the session; its HELLO, if any, is queued
 *
 * The connector proves its key, answering the acceptor's nonce of the
 * accept, to an acceptor that offered authentication, and gives up on
 * one that did not if it holds a key: it does not advertise its exports
 * to a node that did not prove the key.  Caller holds s_mutex.
 */
void kxfer_auth_start(struct kxfer_session *s)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	struct kxfer_msg_auth_challenge ac = {};
	int ret;

	a->sa_start_ns = ktime_get_ns();
	if (s->s_role == KXFER_PEER_ACCEPTOR)
		return;
	if (s->s_join) {
		kxfer_rails_join_start(s);
		return;
	}
	if (!(s->s_peer_features & KXFER_WIRE_F_AUTH)) {
		if (a->sa_key)
			kxfer_auth_refuse(s, 0,
					  "peer does not authenticate (no key for us, or older)");
		return;
	}
	if (a->sa_key) {
		ret = kxfer_auth_load(s, a->sa_key->k_name, false);
		if (!ret) {
			get_random_bytes(a->sa_nonce, sizeof(a->sa_nonce));
			ret = kxfer_auth_mac(s, KXFER_AUTH_ROLE_CONNECTOR,
					     ac.ac_mac);
		}
		if (ret) {
			kxfer_session_fail(s, ret, "cannot compute HMAC-SHA256");
			return;
		}
		ac.ac_flags = cpu_to_le32(KXFER_AUTH_F_KEY);
		memcpy(ac.ac_nonce, a->sa_nonce, sizeof(ac.ac_nonce));
	}
	WRITE_ONCE(a->sa_result, KXFER_PEER_AUTH_PENDING);
	kxfer_auth_set_state(s, KXFER_AUTH_S_WAIT_REPLY);
	kxfer_ctrl_send(s, KXFER_MSG_AUTH_CHALLENGE, &ac.ac_flags,
			sizeof(ac) - sizeof(ac.ac_hdr));
}

/*
 * Acceptor: the connector sent something other than a challenge first.
 * It does not authenticate (an older kxfer, or one that does not speak
 * it): the session goes on unauthenticated unless the listener requires
 * authentication.
 */
static int kxfer_auth_not_offered(struct kxfer_session *s)
{
	if (s->s_auth.sa_required) {
		kxfer_auth_refuse(s, 0,
				  "peer does not authenticate, and the listener requires it");
		return 1;
	}
	kxfer_auth_none(s);
	return 0;
}

/* What flows either way while a handshake is under way. */
static bool kxfer_auth_any_time(unsigned int type)
{
	return type == KXFER_MSG_CREDIT || type == KXFER_MSG_KEEPALIVE ||
	       type == KXFER_MSG_KEEPALIVE_ACK;
}

/**
 * kxfer_auth_gate - may a received message be applied yet?
 * @s: the session
 * @type: its type, 0 for a WRITE_WITH_IMM
 * @why: set to a reason on failure
 *
 * Before the handshake ends, only credits, keepalives, the connector's
 * HELLO and the handshake's messages are; anything else ends the
 * session, except from a connector that does not authenticate at all
 * (see kxfer_auth_not_offered()).  Once it ended, a handshake message
 * ends the session, but for the connector's AUTH_FAIL in answer to our
 * REPLY; once a handshake was refused, nothing is applied.  Caller holds
 * s_mutex.
 *
 * Return: 0 to apply it, 1 to drop it, or a negative errno that ends the
 * session.
 */
int kxfer_auth_gate(struct kxfer_session *s, unsigned int type,
		    const char **why)
{
	enum kxfer_auth_state st = s->s_auth.sa_state;
	bool auth = (type >= KXFER_MSG_AUTH_CHALLENGE &&
		     type <= KXFER_MSG_AUTH_FAIL) ||
		    type == KXFER_MSG_RAIL_JOIN || type == KXFER_MSG_RAIL_JOINED;

	if (st == KXFER_AUTH_S_REFUSED)
		return 1;
	if (st == KXFER_AUTH_S_NONE || st == KXFER_AUTH_S_OK) {
		/*
		 * A connector may refuse the REPLY we just sent (our proof,
		 * or none): that AUTH_FAIL comes after the handshake ended
		 * here, and before anything else the connector sends once it
		 * took the REPLY.  At no other time.
		 */
		if (type == KXFER_MSG_AUTH_FAIL && s->s_auth.sa_replied)
			return 0;
		if (auth) {
			*why = "unexpected authentication message";
			/* Out of turn: a failed handshake as much as any. */
			kxfer_auth_count_failure(s, *why);
			return -EPROTO;
		}
		if (!kxfer_auth_any_time(type))
			s->s_auth.sa_replied = false;
		return 0;
	}
	if (auth || kxfer_auth_any_time(type))
		return 0;
	if (st == KXFER_AUTH_S_WAIT_JOIN && type == KXFER_MSG_HELLO)
		return 0;
	if (st == KXFER_AUTH_S_WAIT_HELLO) {
		if (type == KXFER_MSG_HELLO)
			return 0;
		if (!s->s_got_hello ||
		    !(s->s_peer_features & KXFER_WIRE_F_AUTH))
			return kxfer_auth_not_offered(s);
	}
	*why = "message before authentication";
	return -EACCES;
}

/* Acceptor: without a proof of the connector's, go on unauthenticated. */
static void kxfer_auth_reply_none(struct kxfer_session *s)
{
	struct kxfer_msg_auth_reply ar = {};

	kxfer_ctrl_send(s, KXFER_MSG_AUTH_REPLY, &ar.ar_flags,
			sizeof(ar) - sizeof(ar.ar_hdr));
	s->s_auth.sa_replied = true;
	kxfer_auth_none(s);
}

/* Acceptor: the connector's challenge, and its proof. */
static int kxfer_auth_challenge(struct kxfer_session *s,
				const struct kxfer_msg_auth_challenge *ac,
				const char **why)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	struct kxfer_msg_auth_reply ar = {};
	bool has_key = le32_to_cpu(ac->ac_flags) & KXFER_AUTH_F_KEY;
	bool ok;
	int ret;

	if (s->s_role != KXFER_PEER_ACCEPTOR ||
	    a->sa_state != KXFER_AUTH_S_WAIT_HELLO || !s->s_got_hello ||
	    !(s->s_peer_features & KXFER_WIRE_F_AUTH)) {
		*why = "unexpected authentication challenge";
		return -EPROTO;
	}
	if (!has_key) {
		if (a->sa_required)
			kxfer_auth_refuse(s, KXFER_AUTH_FAIL_NEED_KEY,
					  "peer holds no key, and the listener requires one");
		else
			kxfer_auth_reply_none(s);
		return 0;
	}
	ret = kxfer_auth_load(s, a->sa_listen_key, true);
	if (ret == -ENOKEY) {
		if (a->sa_required)
			kxfer_auth_refuse(s, KXFER_AUTH_FAIL_NO_KEY,
					  "no key for this peer, and the listener requires one");
		else
			kxfer_auth_reply_none(s);
		return 0;
	}
	memcpy(a->sa_peer_nonce, ac->ac_nonce, sizeof(a->sa_peer_nonce));
	if (!ret)
		ret = kxfer_auth_check_mac(s, KXFER_AUTH_ROLE_CONNECTOR,
					   ac->ac_mac, &ok);
	if (!ret && !ok) {
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_MAC,
				  "peer's proof does not match our key");
		return 0;
	}
	if (!ret)
		ret = kxfer_auth_mac(s, KXFER_AUTH_ROLE_ACCEPTOR, ar.ar_mac);
	if (ret) {
		*why = "cannot compute HMAC-SHA256";
		return ret;
	}
	/* Out now: the export registration that follows may take a while. */
	ar.ar_flags = cpu_to_le32(KXFER_AUTH_F_KEY);
	kxfer_ctrl_send(s, KXFER_MSG_AUTH_REPLY, &ar.ar_flags,
			sizeof(ar) - sizeof(ar.ar_hdr));
	kxfer_ctrl_flush(s);
	a->sa_replied = true;
	kxfer_auth_succeed(s);
	return 0;
}

/* Connector: the acceptor's answer, and its proof. */
static int kxfer_auth_reply(struct kxfer_session *s,
			    const struct kxfer_msg_auth_reply *ar,
			    const char **why)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	bool has_key = le32_to_cpu(ar->ar_flags) & KXFER_AUTH_F_KEY;
	bool ok;
	int ret;

	if (s->s_role != KXFER_PEER_CONNECTOR ||
	    a->sa_state != KXFER_AUTH_S_WAIT_REPLY) {
		*why = "unexpected authentication reply";
		return -EPROTO;
	}
	if (!a->sa_key) {
		if (has_key) {
			*why = "authentication reply with a key to a challenge without";
			return -EPROTO;
		}
		kxfer_auth_none(s);
		return 0;
	}
	if (!has_key) {
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_NEED_KEY,
				  "peer holds no key for us");
		return 0;
	}
	ret = kxfer_auth_check_mac(s, KXFER_AUTH_ROLE_ACCEPTOR, ar->ar_mac,
				   &ok);
	if (ret) {
		*why = "cannot compute HMAC-SHA256";
		return ret;
	}
	if (!ok) {
		kxfer_auth_refuse(s, KXFER_AUTH_FAIL_MAC,
				  "peer's proof does not match our key");
		return 0;
	}
	kxfer_auth_succeed(s);
	return 0;
}

/* Either side: the peer ends the session for a failed handshake. */
static int kxfer_auth_failed(struct kxfer_session *s,
			     const struct kxfer_msg_auth_fail *af)
{
	const char *why;

	switch (le32_to_cpu(af->af_reason)) {
	case KXFER_AUTH_FAIL_MAC:
		why = "peer refused our proof: the keys differ";
		break;
	case KXFER_AUTH_FAIL_NO_KEY:
		why = "peer holds no key for us";
		break;
	case KXFER_AUTH_FAIL_NEED_KEY:
		why = "peer requires a key, we hold none";
		break;
	case KXFER_AUTH_FAIL_JOIN:
		/* A stale token is no failed proof: connect anew, at once. */
		if (s->s_auth.sa_state == KXFER_AUTH_S_WAIT_JOINED) {
			kxfer_rails_join_refused(s);
			kxfer_auth_end_handshake(&s->s_auth);
			kxfer_auth_set_state(s, KXFER_AUTH_S_REFUSED);
			s->s_auth.sa_why = "peer knows no session for the rail to join";
			kxfer_session_fail(s, -EACCES, s->s_auth.sa_why);
			return 0;
		}
		why = "peer refused our rail's join";
		break;
	case KXFER_AUTH_FAIL_JOIN_REFUSED:
		/* The session is there: join it again later, not anew. */
		why = "peer refused the rail for now (authentication, or too many rails)";
		break;
	default:
		why = "peer refused the authentication";
		break;
	}
	kxfer_auth_count_failure(s, why);
	kxfer_auth_end_handshake(&s->s_auth);
	kxfer_auth_set_state(s, KXFER_AUTH_S_REFUSED);
	s->s_auth.sa_why = why;
	kxfer_session_fail(s, -EACCES, why);
	return 0;
}

/**
 * kxfer_auth_session_down - a session fails: its handshake with it
 * @s: the session, failing (s_last_error says why), before its teardown
 *
 * A handshake still under way when the session ends failed, whatever
 * ended it: a message out of turn or before the handshake ended (the
 * gate's refusal), one that does not parse, the peer going away.  Those
 * the handshake refused itself, or that timed out, were counted when they
 * were decided.  Caller holds s_mutex.
 */
void kxfer_auth_session_down(struct kxfer_session *s)
{
	enum kxfer_auth_state st = s->s_auth.sa_state;

	if (st != KXFER_AUTH_S_WAIT_HELLO && st != KXFER_AUTH_S_WAIT_REPLY)
		return;
	kxfer_auth_count_failure(s, s->s_last_error);
	kxfer_auth_set_state(s, KXFER_AUTH_S_REFUSED);
}

/**
 * kxfer_auth_recv - apply a message of the handshake
 * @s: the session
 * @buf: the message, checked by kxfer_wire_check() and kxfer_auth_gate()
 * @why: set to a reason on failure
 *
 * Caller holds s_mutex.
 *
 * Return: 0, or a negative errno that ends the session.
 */
int kxfer_auth_recv(struct kxfer_session *s, const void *buf,
		    const char **why)
{
	const struct kxfer_msg_hdr *h = buf;

	switch (h->mh_type) {
	case KXFER_MSG_AUTH_CHALLENGE:
		return kxfer_auth_challenge(s, buf, why);
	case KXFER_MSG_AUTH_REPLY:
		return kxfer_auth_reply(s, buf, why);
	case KXFER_MSG_AUTH_FAIL:
		return kxfer_auth_failed(s, buf);
	case KXFER_MSG_RAIL_JOIN:
	case KXFER_MSG_RAIL_JOINED:
		return kxfer_rails_recv(s, buf, why);
	default:
		*why = "unknown message type";
		return -EPROTO;
	}
}

/**
 * kxfer_auth_expired - has the handshake run out of time?
 * @s: the session, control channel up
 * @now: ktime_get_ns()
 *
 * A handshake under way fails after KXFER_AUTH_TIMEOUT_MS (counted); a
 * refused one whose peer did not hang up ends after
 * KXFER_AUTH_LAST_WORDS_MS.  Caller holds s_mutex.
 *
 * Return: the reason to fail the session with, or %NULL.
 */
const char *kxfer_auth_expired(struct kxfer_session *s, u64 now)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	u64 age = now - a->sa_start_ns;

	switch (a->sa_state) {
	case KXFER_AUTH_S_WAIT_HELLO:
	case KXFER_AUTH_S_WAIT_REPLY:
	case KXFER_AUTH_S_WAIT_JOIN:
	case KXFER_AUTH_S_WAIT_JOINED:
		if (age <= (u64)KXFER_AUTH_TIMEOUT_MS * NSEC_PER_MSEC)
			return NULL;
		a->sa_why = "authentication timed out";
		kxfer_auth_count_failure(s, a->sa_why);
		kxfer_auth_end_handshake(a);
		kxfer_auth_set_state(s, KXFER_AUTH_S_REFUSED);
		return a->sa_why;
	case KXFER_AUTH_S_REFUSED:
		if (age <= (u64)KXFER_AUTH_LAST_WORDS_MS * NSEC_PER_MSEC)
			return NULL;
		return a->sa_why ?: "authentication failed";
	default:
		return NULL;
	}
}

/**
 * kxfer_auth_time_left - time until the handshake runs out
 * @s: the session, control channel up
 * @now: ktime_get_ns()
 *
 * The session timer looks at the handshake when this has passed, however
 * long the keepalive interval is (kxfer_auth_expired()).  Caller holds
 * s_mutex.
 *
 * Return: nanoseconds until kxfer_auth_expired() may end the session, 0
 * if that time has come, or U64_MAX if no handshake is under way or
 * refused.
 */
u64 kxfer_auth_time_left(const struct kxfer_session *s, u64 now)
{
	const struct kxfer_sess_auth *a = &s->s_auth;
	u64 end = a->sa_start_ns;

	switch (a->sa_state) {
	case KXFER_AUTH_S_WAIT_HELLO:
	case KXFER_AUTH_S_WAIT_REPLY:
	case KXFER_AUTH_S_WAIT_JOIN:
	case KXFER_AUTH_S_WAIT_JOINED:
		end += (u64)KXFER_AUTH_TIMEOUT_MS * NSEC_PER_MSEC;
		break;
	case KXFER_AUTH_S_REFUSED:
		end += (u64)KXFER_AUTH_LAST_WORDS_MS * NSEC_PER_MSEC;
		break;
	default:
		return U64_MAX;
	}
	return now < end ? end - now : 0;
}

/**
 * kxfer_auth_reset - forget a connection's handshake (teardown)
 * @s: the session
 *
 * What the next connection will prove stays, and so does a failure, for
 * "peer show", whose last error is the handshake's reason.  Caller holds
 * s_mutex.
 */
void kxfer_auth_reset(struct kxfer_session *s)
{
	struct kxfer_sess_auth *a = &s->s_auth;
	unsigned long flags;

	/*
	 * A refusal ends with whatever comes first, most often the peer
	 * hanging up: the reason to keep is the refusal's.
	 */
	if (a->sa_state == KXFER_AUTH_S_REFUSED && a->sa_why) {
		spin_lock_irqsave(&s->s_lock, flags);
		strscpy(s->s_last_error, a->sa_why, sizeof(s->s_last_error));
		s->s_last_errno = -EACCES;
		spin_unlock_irqrestore(&s->s_lock, flags);
	}
	kxfer_auth_end_handshake(a);
	if (a->sa_result != KXFER_PEER_AUTH_FAILED)
		WRITE_ONCE(a->sa_result, KXFER_PEER_AUTH_NONE);
	if (s->s_role == KXFER_PEER_CONNECTOR)
		kxfer_auth_set_state(s, KXFER_AUTH_S_NONE);
	a->sa_named = false;
	a->sa_replied = false;
}

/**
 * kxfer_auth_join_wait - a joining rail sent its proof (rail.c)
 * @s: the connecting session
 *
 * Caller holds s_mutex.
 */
void kxfer_auth_join_wait(struct kxfer_session *s)
{
	WRITE_ONCE(s->s_auth.sa_result, KXFER_PEER_AUTH_PENDING);
	kxfer_auth_set_state(s, KXFER_AUTH_S_WAIT_JOINED);
}

/**
 * kxfer_auth_join_ok - a rail joined its logical session (rail.c)
 * @s: the session; the proofs matched
 * @result: what the session's first connection proved
 * @named: ... and whether that was the key of the session's name
 *
 * The join stands for a handshake: the rail is as authenticated as the
 * session it joined.  Caller holds s_mutex.
 */
void kxfer_auth_join_ok(struct kxfer_session *s, enum kxfer_peer_auth result,
			bool named)
{
	struct kxfer_sess_auth *a = &s->s_auth;

	kxfer_auth_end_handshake(a);
	a->sa_named = named && result == KXFER_PEER_AUTH_OK;
	WRITE_ONCE(a->sa_result, result);
	kxfer_auth_set_state(s, KXFER_AUTH_S_OK);
	if (s->s_role == KXFER_PEER_ACCEPTOR) {
		/* the connector may still refuse our proof (AUTH_FAIL) */
		a->sa_replied = true;
		set_bit(KXFER_SE_SUPERSEDE, &s->s_events);
	}
}

/**
 * kxfer_auth_release - drop what a session holds for authentication
 * @s: the session, stopped (no transform left)
 *
 * Any context.
 */
void kxfer_auth_release(struct kxfer_session *s)
{
	kxfer_key_put(s->s_auth.sa_key);
	s->s_auth.sa_key = NULL;
	kxfer_auth_counts_put(s->s_auth.sa_counts);
	s->s_auth.sa_counts = NULL;
}
