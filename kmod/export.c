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

#include "kxfer.h"

LIST_HEAD(kxfer_exports);
static atomic64_t kxfer_export_gen = ATOMIC64_INIT(0);

static struct kxfer_export *kxfer_export_lookup(const char *name)
{
	struct kxfer_export *exp;

	lockdep_assert_held(&kxfer_obj_mutex);
	list_for_each_entry(exp, &kxfer_exports, ke_node)
		if (!strcmp(exp->ke_name, name))
			return exp;
	return NULL;
}

/**
 * kxfer_export_create - export a range of a pool
 * @name: the export's name, unique
 * @pool_name: the pool
 * @off: first byte of the range in the pool
 * @len: length of the range
 * @has_len: false to export from @off to the pool's end
 * @peer: the one peer allowed, or "" for any
 * @from: the addresses a peer must connect from, or %NULL for any
 * @access: KXFER_ACCESS_* bits
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EINVAL for no or unknown access bits or an empty range;
 * %-ENOENT for an unknown pool; %-ERANGE for a range outside the pool;
 * %-EEXIST for a name in use; %-ENOMEM.  May sleep.
 */
int kxfer_export_create(const char *name, const char *pool_name, u64 off,
			u64 len, bool has_len, const char *peer,
			const struct kxfer_prefix *from, u32 access,
			struct netlink_ext_ack *extack)
{
	struct kxfer_export *exp;
	struct kxfer_pool *pool;
	u64 end;
	int ret;

	if (!access) {
		NL_SET_ERR_MSG(extack, "export grants no access");
		return -EINVAL;
	}
	if (access & ~KXFER_ACCESS_ALL) {
		NL_SET_ERR_MSG(extack, "unknown access bits");
		return -EINVAL;
	}
	if (has_len && !len) {
		NL_SET_ERR_MSG(extack, "export range is empty");
		return -EINVAL;
	}

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return -ENOMEM;
	strscpy(exp->ke_name, name, sizeof(exp->ke_name));
	strscpy(exp->ke_peer, peer, sizeof(exp->ke_peer));
	if (from) {
		exp->ke_from = *from;
		exp->ke_has_from = true;
	}
	exp->ke_access = access;

	mutex_lock(&kxfer_obj_mutex);
	if (kxfer_export_lookup(name)) {
		NL_SET_ERR_MSG(extack, "export already exists");
		ret = -EEXIST;
		goto out_unlock;
	}
	list_for_each_entry(pool, &kxfer_pools, kp_node)
		if (!pool->kp_deleted && !strcmp(pool->kp_name, pool_name))
			break;
	if (list_entry_is_head(pool, &kxfer_pools, kp_node)) {
		NL_SET_ERR_MSG(extack, "no such pool");
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!has_len)
		len = off < pool->kp_size ? pool->kp_size - off : 0;
	if (!len || check_add_overflow(off, len, &end) ||
	    end > pool->kp_size) {
		NL_SET_ERR_MSG(extack, "export range is outside the pool");
		ret = -ERANGE;
		goto out_unlock;
	}
	exp->ke_off = off;
	exp->ke_len = len;
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
	kfree(exp);
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

/**
 * kxfer_export_delete - withdraw an export
 * @name: the export's name
 * @extack: for the reason of a refusal
 *
 * Return: 0 or %-ENOENT.  May sleep.
 */
int kxfer_export_delete(const char *name, struct netlink_ext_ack *extack)
{
	struct kxfer_export *exp;

	mutex_lock(&kxfer_obj_mutex);
	exp = kxfer_export_lookup(name);
	if (!exp) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "no such export");
		return -ENOENT;
	}
	kxfer_export_destroy(exp);
	mutex_unlock(&kxfer_obj_mutex);

	/* Keys revoked and peers told before this returns. */
	kxfer_sessions_export_removed(exp);
	kxfer_pool_put(exp->ke_pool);
	kfree(exp);
	return 0;
}

/**
 * kxfer_exports_destroy_all - withdraw every export (module unload)
 */
void kxfer_exports_destroy_all(void)
{
	struct kxfer_export *exp;

	for (;;) {
		mutex_lock(&kxfer_obj_mutex);
		exp = list_first_entry_or_null(&kxfer_exports,
					       struct kxfer_export, ke_node);
		if (exp)
			kxfer_export_destroy(exp);
		mutex_unlock(&kxfer_obj_mutex);
		if (!exp)
			break;
		kxfer_sessions_export_removed(exp);
		kxfer_pool_put(exp->ke_pool);
		kfree(exp);
	}
}
