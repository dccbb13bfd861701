// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: exports, the only way remote peers reach pool memory.
 *
 * An export names a byte range of one pool, the access granted (read,
 * write, atomic) and which peer may use it (one peer by name, or any).
 * Its FRWR memory regions are registered per session when a session
 * that may use it comes up; here lives the object itself, its
 * validation and its namespace.
 */
#include <linux/slab.h>
#include <linux/overflow.h>
#include <linux/sched.h>

#include "kxfer.h"

LIST_HEAD(kxfer_exports);
static atomic64_t kxfer_export_gen = ATOMIC64_INIT(0);
/* Withdrawers waiting for the peers' answers (the drains' references). */
static DECLARE_WAIT_QUEUE_HEAD(kxfer_drain_wait);

static struct kxfer_export *kxfer_export_lookup(const char *name)
{
	struct kxfer_export *exp;

	lockdep_assert_held(&kxfer_obj_mutex);
	list_for_each_entry(exp, &kxfer_exports, ke_node)
		if (!strcmp(exp->ke_name, name))
			return exp;
	return NULL;
}

/* What the arguments say of themselves: some access, known bits, a length. */
static int kxfer_export_check_args(const struct kxfer_export_args *args,
				   struct netlink_ext_ack *extack)
{
	if (!args->access) {
		NL_SET_ERR_MSG(extack, "export grants no access");
		return -EINVAL;
	}
	if (args->access & ~KXFER_ACCESS_ALL) {
		NL_SET_ERR_MSG(extack, "unknown access bits");
		return -EINVAL;
	}
	if (args->has_len && !args->len) {
		NL_SET_ERR_MSG(extack, "export range is empty");
		return -EINVAL;
	}
	return 0;
}

/* A new export as @args describe it, its range and pool still unset. */
static struct kxfer_export *
kxfer_export_alloc(const struct kxfer_export_args *args)
{
	struct kxfer_export *exp;

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return NULL;
	strscpy(exp->ke_name, args->name, sizeof(exp->ke_name));
	strscpy(exp->ke_peer, args->peer, sizeof(exp->ke_peer));
	if (args->from) {
		exp->ke_from = *args->from;
		exp->ke_has_from = true;
	}
	exp->ke_access = args->access;
	exp->ke_auth = args->auth;
	if (args->token) {
		exp->ke_scoped = true;
		memcpy(exp->ke_token, args->token, sizeof(exp->ke_token));
	}
	kref_init(&exp->ke_ref);
	exp->ke_file = args->file;
	if (args->file)
		exp->ke_pid = task_tgid_vnr(current);
	return exp;
}

/*
 * The pool to export from: by @pool_name, else @pool itself, if it is
 * neither deleted nor disowned, and its memory was not revoked.
 * Return: the pool, or ERR_PTR(%-ENOENT or %-ESTALE).  Caller holds
 * kxfer_obj_mutex.
 */
static struct kxfer_pool *kxfer_export_find_pool(const char *pool_name,
						 struct kxfer_pool *pool,
						 struct netlink_ext_ack *extack)
{
	lockdep_assert_held(&kxfer_obj_mutex);
	if (pool_name) {
		list_for_each_entry(pool, &kxfer_pools, kp_node)
			if (!pool->kp_deleted && !pool->kp_disowned &&
			    !strcmp(pool->kp_name, pool_name))
				break;
		if (list_entry_is_head(pool, &kxfer_pools, kp_node))
			pool = NULL;
	} else if (pool->kp_deleted || pool->kp_disowned) {
		pool = NULL;
	}
	if (!pool) {
		NL_SET_ERR_MSG(extack, "no such pool");
		return ERR_PTR(-ENOENT);
	}
	/* Under kxfer_obj_mutex: a revocation withdraws after it (upool.c) */
	if (READ_ONCE(pool->kp_revoked)) {
		NL_SET_ERR_MSG(extack, "the pool's memory was revoked by its exporter");
		return ERR_PTR(-ESTALE);
	}
	return pool;
}

/*
 * The export's length in @pool: @args', or the rest of the pool from
 * @args->off; inside the pool and no longer than one export can map with
 * the largest MR page its memory allows.
 * Return: 0 with the length in *@lenp and that page's shift in *@shiftp,
 * %-ERANGE or %-E2BIG.
 */
static int kxfer_export_range(const struct kxfer_export_args *args,
			      const struct kxfer_pool *pool, u64 *lenp,
			      unsigned int *shiftp,
			      struct netlink_ext_ack *extack)
{
	u64 end, len = args->len;
	unsigned int shift;

	if (!args->has_len)
		len = args->off < pool->kp_size ? pool->kp_size - args->off : 0;
	if (!len || check_add_overflow(args->off, len, &end) ||
	    end > pool->kp_size) {
		NL_SET_ERR_MSG(extack, "export range is outside the pool");
		return -ERANGE;
	}
	shift = kxfer_mr_shift(pool, NULL, args->off, end);
	if (len + (args->off & ((1ULL << shift) - 1)) >
	    KXFER_EXPORT_MAX_LEN(shift)) {
		NL_SET_ERR_MSG(extack,
			       "export longer than one export can map (262144 MRs of 512 pages of what its memory allows: 512 GiB in 4 KiB pages)");
		return -E2BIG;
	}
	*lenp = len;
	*shiftp = shift;
	return 0;
}

/**
 * kxfer_export_create - export a range of a pool
 * @args: name, range, peer, addresses, access, owning file; with a
 *	subscription, its handle comes back in @args->sub_handle
 * @pool_name: the pool, by name (the administrator's way), or %NULL
 * @pool: with @pool_name %NULL, the pool itself (its owner's way); the
 *	caller holds a reference
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EINVAL for no or unknown access bits or an empty range;
 * %-ENOENT for an unknown or deleted pool; %-ESTALE for a pool whose
 * memory was revoked; %-ERANGE for a range outside the pool; %-E2BIG for
 * a range longer than KXFER_EXPORT_MAX_LEN() of the largest MR page its
 * memory allows; %-EEXIST for a name in use; %-ENOMEM.  May sleep.
 */
int kxfer_export_create(struct kxfer_export_args *args,
			const char *pool_name, struct kxfer_pool *pool,
			struct netlink_ext_ack *extack)
{
	struct kxfer_export *exp;
	unsigned int shift;
	u64 len;
	int ret;

	ret = kxfer_export_check_args(args, extack);
	if (ret)
		return ret;
	exp = kxfer_export_alloc(args);
	if (!exp)
		return -ENOMEM;

	mutex_lock(&kxfer_obj_mutex);
	if (kxfer_export_lookup(args->name)) {
		NL_SET_ERR_MSG(extack, "export already exists");
		ret = -EEXIST;
		goto out_unlock;
	}
	pool = kxfer_export_find_pool(pool_name, pool, extack);
	if (IS_ERR(pool)) {
		ret = PTR_ERR(pool);
		goto out_unlock;
	}
	ret = kxfer_export_range(args, pool, &len, &shift, extack);
	if (ret)
		goto out_unlock;
	/* Its notifications have a reader before any peer learns of it. */
	if (args->sub) {
		ret = kxfer_sub_install(args->sub, &args->sub_handle);
		if (ret)
			goto out_unlock;
	}
	exp->ke_off = args->off;
	exp->ke_len = len;
	exp->ke_mr_shift = shift;
	exp->ke_gen = atomic64_inc_return(&kxfer_export_gen);
	kref_get(&pool->kp_ref);
	exp->ke_pool = pool;
	pool->kp_nexports++;
	list_add_tail(&exp->ke_node, &kxfer_exports);
	kxfer_nl_notify_export(exp, true);
	mutex_unlock(&kxfer_obj_mutex);

	/* Sessions that may use it register and advertise it. */
	kxfer_sessions_exports_changed();
	return 0;

out_unlock:
	mutex_unlock(&kxfer_obj_mutex);
	kfree_sensitive(exp);
	return ret;
}

static void kxfer_export_destroy(struct kxfer_export *exp)
{
	struct kxfer_pool *pool = exp->ke_pool;

	lockdep_assert_held(&kxfer_obj_mutex);
	list_del(&exp->ke_node);
	pool->kp_nexports--;
	kxfer_nl_notify_export(exp, false);
}

static void kxfer_export_release(struct kref *ref)
{
	struct kxfer_export *exp = container_of(ref, struct kxfer_export,
						ke_ref);

	kxfer_pool_put(exp->ke_pool);
	kfree_sensitive(exp);	/* its token */
}

/**
 * kxfer_export_put - drop a reference to an export off the namespace
 * @exp: the export
 *
 * The last one drops the pool, which may then end.  May sleep.
 */
void kxfer_export_put(struct kxfer_export *exp)
{
	kref_put(&exp->ke_ref, kxfer_export_release);
}

/**
 * kxfer_export_drained - a session's peer answered the withdrawal
 * @exp: the export; the session's reference is dropped
 *
 * Or the session ended, which ends the drain as well: its keys are gone.
 * May sleep.
 */
void kxfer_export_drained(struct kxfer_export *exp)
{
	/*
	 * Its reference first: a withdrawer that waits holds its own and
	 * returns once it is the last, so that the export, and the pool's
	 * memory with it, go when its call returns.  Nothing of @exp is
	 * touched after the put.
	 */
	kxfer_export_put(exp);
	wake_up_all(&kxfer_drain_wait);
}

/* Only the withdrawer's reference is left: every drain ended. */
static bool kxfer_export_drains_done(struct kxfer_export *exp)
{
	return kref_read(&exp->ke_ref) == 1;
}

/*
 * Withdraw exports taken off the namespace (on @list by ke_node): every
 * session is told of every one first, so that the peers drain them
 * together, then the caller waits for the answers if it is to.  A fatal
 * signal ends the wait, not the drain: the sessions finish it, the memory
 * stays pinned until then.
 */
static void kxfer_exports_withdraw(struct list_head *list,
				   enum kxfer_withdraw_how how)
{
	struct kxfer_export *exp, *tmp;

	list_for_each_entry(exp, list, ke_node)
		kxfer_sessions_export_removed(exp, how != KXFER_WITHDRAW_NOW);
	list_for_each_entry_safe(exp, tmp, list, ke_node) {
		list_del_init(&exp->ke_node);
		if (how == KXFER_WITHDRAW_WAIT)
			wait_event_killable(kxfer_drain_wait,
					    kxfer_export_drains_done(exp));
		kxfer_export_put(exp);
	}
}

/**
 * kxfer_export_delete - withdraw an export
 * @name: the export's name
 * @file: %NULL for the administrator, who may withdraw any export; else
 *	the file asking, which may withdraw only the exports it made
 * @how: whether to wait for the peers to drain it (KXFER_WITHDRAW_*)
 * @extack: for the reason of a refusal
 *
 * The export leaves the namespace at once; peers that drain finish the
 * jobs they posted to it before its keys are invalidated.
 *
 * Return: 0, %-ENOENT, or %-EPERM (@file did not make it).  May sleep.
 */
int kxfer_export_delete(const char *name, struct kxfer_file *file,
			enum kxfer_withdraw_how how,
			struct netlink_ext_ack *extack)
{
	LIST_HEAD(list);
	struct kxfer_export *exp;

	mutex_lock(&kxfer_obj_mutex);
	exp = kxfer_export_lookup(name);
	if (!exp) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "no such export");
		return -ENOENT;
	}
	if (file && exp->ke_file != file) {
		mutex_unlock(&kxfer_obj_mutex);
		return -EPERM;
	}
	kxfer_export_destroy(exp);
	list_add_tail(&exp->ke_node, &list);
	mutex_unlock(&kxfer_obj_mutex);

	kxfer_exports_withdraw(&list, how);
	return 0;
}

/**
 * kxfer_exports_withdraw_pool - withdraw every export of a pool
 * @pool: the pool, referenced by the caller
 * @how: whether to wait for the peers to drain them (KXFER_WITHDRAW_*)
 *
 * Whoever made them.  With KXFER_WITHDRAW_NOW every session has
 * invalidated their keys before this returns, with WAIT every peer
 * answered (or its session ended), with NOWAIT the sessions finish the
 * drain later, holding the pool meanwhile.  May sleep.
 */
void kxfer_exports_withdraw_pool(struct kxfer_pool *pool,
				 enum kxfer_withdraw_how how)
{
	struct kxfer_export *exp, *tmp;
	LIST_HEAD(list);

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry_safe(exp, tmp, &kxfer_exports, ke_node)
		if (exp->ke_pool == pool) {
			kxfer_export_destroy(exp);
			list_add_tail(&exp->ke_node, &list);
		}
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_exports_withdraw(&list, how);
}

/**
 * kxfer_exports_destroy_all - withdraw every export (module unload)
 */
void kxfer_exports_destroy_all(void)
{
	struct kxfer_export *exp, *tmp;
	LIST_HEAD(list);

	/* No session is left to drain anything. */
	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry_safe(exp, tmp, &kxfer_exports, ke_node) {
		kxfer_export_destroy(exp);
		list_add_tail(&exp->ke_node, &list);
	}
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_exports_withdraw(&list, KXFER_WITHDRAW_NOW);
}
