// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: pinned memory pools.
 *
 * A pool is allocated once, from the largest folios the page allocator
 * gives (2 MiB preferred), zeroed, on the NUMA node asked for, and
 * DMA-mapped once per RDMA device.  Registration is the expensive part
 * of RDMA (seed 003): it is paid when the pool is made, never per
 * transfer.  Local work requests address pool memory through the PD's
 * local_dma_lkey and the per-device DMA addresses kept here; remote
 * access goes only through exports (export.c), never a global rkey.
 *
 * Pools over memory a process already has (its own pages, or a dma-buf)
 * are made in upool.c and share everything here but where the pages
 * come from and how they are given back: they are chunks like any
 * pool's, mapped per device by the same code.
 *
 * Lifetime: the namespace (until "pool del"), every attachment, every
 * user mapping and every export hold a reference (kp_ref).  kp_users
 * counts attachments and mappings, so that "pool del" can refuse a pool
 * in use.  The pool's memory is freed at the last reference.
 *
 * Locking: kxfer_obj_mutex protects the pool and export namespaces and
 * the counters.  kp_map_lock protects one pool's device mappings and
 * nests inside kxfer_obj_mutex.  No user memory is touched under either.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/timekeeping.h>

#include "kxfer.h"

/* protects the pool and export namespaces and their counters */
DEFINE_MUTEX(kxfer_obj_mutex);
LIST_HEAD(kxfer_pools);
atomic64_t kxfer_pool_mem_used = ATOMIC64_INIT(0);

/**
 * kxfer_name_char - may a name hold @c?
 * @c: a character
 *
 * ASCII letters and digits and ". _ - :", as kxfer_wire_check_name()
 * takes them: not isalnum(), which says yes to Latin-1 letters too.
 *
 * Return: true if it may.
 */
bool kxfer_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("._-:", c));
}

/**
 * kxfer_name_valid - a name of a pool, export or peer, as every
 *	interface takes them: 1 to KXFER_NAME_MAX - 1 of [A-Za-z0-9._:-]
 * @name: the name, NUL-terminated within KXFER_NAME_MAX bytes
 *
 * Names travel to peers, whose wire checks refuse anything else.
 *
 * Return: true if @name is one.
 */
bool kxfer_name_valid(const char *name)
{
	const char *p;

	if (!name[0] || !memchr(name, '\0', KXFER_NAME_MAX))
		return false;
	for (p = name; *p; p++)
		if (!kxfer_name_char(*p))
			return false;
	return true;
}

/*
 * What a process's pool costs the kernel besides its pages (the pool, its
 * chunk table, a DMA address per chunk and device) is charged to the
 * memory cgroup of the process that makes or maps it, so that a file's
 * thousand pools are bounded by its memory limit and not only by a count
 * (max_pools_per_fd); its pinned pages count against RLIMIT_MEMLOCK
 * (upool.c).  The administrator's pools are the system's.
 */
static gfp_t kxfer_pool_gfp(const struct kxfer_pool *pool)
{
	return pool->kp_kind == KXFER_POOL_KIND_KERNEL ? GFP_KERNEL :
	       GFP_KERNEL_ACCOUNT;
}

static struct kxfer_pool *kxfer_pool_lookup(const char *name)
{
	struct kxfer_pool *pool;

	lockdep_assert_held(&kxfer_obj_mutex);
	list_for_each_entry(pool, &kxfer_pools, kp_node)
		if (!pool->kp_deleted && !strcmp(pool->kp_name, name))
			return pool;
	return NULL;
}

static void kxfer_pool_unmap_one(struct kxfer_pool *pool,
				 struct kxfer_pool_map *pm)
{
	struct ib_device *ibdev = pm->pm_dev->kd_ibdev;
	unsigned int i;

	lockdep_assert_held(&pool->kp_map_lock);
	/* An import for one DMA device is ib_core's mapping, not ours. */
	for (i = 0; !pool->kp_src.ps_dev_only && i < pool->kp_nchunks; i++)
		ib_dma_unmap_page(ibdev, pm->pm_dma[i],
				  pool->kp_chunks[i].kc_len, DMA_BIDIRECTIONAL);
	list_del(&pm->pm_node);
	kxfer_device_put(pm->pm_dev);
	kvfree(pm->pm_dma);
	kfree(pm);
}

/**
 * kxfer_pool_map_device - DMA-map a pool on a device, once
 * @pool: the pool
 * @kd: a referenced device
 *
 * Does nothing if the pool is mapped there already or the device is
 * going away.  A failed mapping is logged and leaves the pool unmapped
 * on that device; a later use tries again.  May sleep.
 */
void kxfer_pool_map_device(struct kxfer_pool *pool, struct kxfer_device *kd)
{
	struct ib_device *ibdev = kd->kd_ibdev;
	struct kxfer_pool_map *pm;
	unsigned int i = 0;
	u64 start;

	mutex_lock(&pool->kp_map_lock);
	/* Checked under kp_map_lock: see kxfer_pools_device_removed(). */
	if (test_bit(KXFER_DEV_REMOVING, &kd->kd_flags))
		goto out_unlock;
	list_for_each_entry(pm, &pool->kp_maps, pm_node)
		if (pm->pm_dev == kd)
			goto out_unlock;

	pm = kzalloc(sizeof(*pm), kxfer_pool_gfp(pool));
	if (!pm)
		goto out_nomem;
	pm->pm_dma = kvcalloc(pool->kp_nchunks, sizeof(*pm->pm_dma),
			      kxfer_pool_gfp(pool));
	if (!pm->pm_dma)
		goto out_free_pm;

	start = ktime_get_ns();
	if (pool->kp_src.ps_dev_only) {
		/* Usable on the device it was imported for, and no other. */
		if (!kxfer_upool_map_device(pool, kd, pm->pm_dma)) {
			kvfree(pm->pm_dma);
			kfree(pm);
			goto out_unlock;
		}
		i = pool->kp_nchunks;
	}
	for (; i < pool->kp_nchunks; i++) {
		struct kxfer_chunk *c = &pool->kp_chunks[i];

		pm->pm_dma[i] = ib_dma_map_page(ibdev, c->kc_page, 0, c->kc_len,
						DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ibdev, pm->pm_dma[i]))
			goto out_unmap;
	}
	pm->pm_map_ns = ktime_get_ns() - start;
	kref_get(&kd->kd_ref);
	pm->pm_dev = kd;
	list_add_tail(&pm->pm_node, &pool->kp_maps);
	mutex_unlock(&pool->kp_map_lock);
	return;

out_unmap:
	while (i--)
		ib_dma_unmap_page(ibdev, pm->pm_dma[i],
				  pool->kp_chunks[i].kc_len, DMA_BIDIRECTIONAL);
	kvfree(pm->pm_dma);
out_free_pm:
	kfree(pm);
out_nomem:
	kxfer_warn("pool %s: DMA mapping on %s failed\n", pool->kp_name,
		   kd->kd_name);
out_unlock:
	mutex_unlock(&pool->kp_map_lock);
}

/**
 * kxfer_pools_device_removed - unmap every pool from a departing device
 * @kd: device whose ib_client remove callback is running
 *
 * KXFER_DEV_REMOVING is set before this runs, so kxfer_pool_map_device()
 * maps nothing new on @kd.  Pools stay usable on other devices.
 */
void kxfer_pools_device_removed(struct kxfer_device *kd)
{
	struct kxfer_pool_map *pm, *tmp;
	struct kxfer_pool *pool;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(pool, &kxfer_pools, kp_node) {
		mutex_lock(&pool->kp_map_lock);
		list_for_each_entry_safe(pm, tmp, &pool->kp_maps, pm_node)
			if (pm->pm_dev == kd)
				kxfer_pool_unmap_one(pool, pm);
		mutex_unlock(&pool->kp_map_lock);
	}
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_upools_device_removed(kd);
}

/* Give the memory back: to the page allocator, or to its owner. */
static void kxfer_pool_free_chunks(struct kxfer_pool *pool)
{
	unsigned int i;

	if (pool->kp_kind == KXFER_POOL_KIND_KERNEL)
		for (i = 0; i < pool->kp_nchunks; i++)
			folio_put(page_folio(pool->kp_chunks[i].kc_page));
	else
		kxfer_upool_release(pool);
	kvfree(pool->kp_chunks);
	pool->kp_chunks = NULL;
	pool->kp_nchunks = 0;
}

/* Give back the budget a pool reserved in kxfer_pool_alloc(). */
static void kxfer_pool_unreserve(struct kxfer_pool *pool)
{
	atomic64_sub(pool->kp_size, &kxfer_pool_mem_used);
	if (pool->kp_kind != KXFER_POOL_KIND_KERNEL)
		atomic64_sub(pool->kp_size, &kxfer_user_pool_mem_used);
}

static void kxfer_pool_release(struct kref *ref)
{
	struct kxfer_pool *pool = container_of(ref, struct kxfer_pool, kp_ref);
	struct kxfer_pool_map *pm, *tmp;

	mutex_lock(&kxfer_obj_mutex);
	list_del(&pool->kp_node);
	mutex_unlock(&kxfer_obj_mutex);

	mutex_lock(&pool->kp_map_lock);
	list_for_each_entry_safe(pm, tmp, &pool->kp_maps, pm_node)
		kxfer_pool_unmap_one(pool, pm);
	mutex_unlock(&pool->kp_map_lock);

	kxfer_pool_free_chunks(pool);
	kxfer_pool_unreserve(pool);
	mutex_destroy(&pool->kp_map_lock);
	kfree(pool);
}

/**
 * kxfer_pool_put - drop a pool reference
 * @pool: the pool
 *
 * The last reference unmaps and frees the memory.  May sleep; the
 * caller must not hold kxfer_obj_mutex.
 */
void kxfer_pool_put(struct kxfer_pool *pool)
{
	kref_put(&pool->kp_ref, kxfer_pool_release);
}

/**
 * kxfer_pool_add_chunk - append a chunk to a pool being built
 * @pool: the pool, not yet published
 * @cap: entries allocated at kp_chunks, 0 at first; updated
 * @page: the chunk's first page, or %NULL for a DMA range (upool.c)
 * @len: its bytes, a multiple of PAGE_SIZE
 *
 * The chunk starts where the previous one ended.
 *
 * Return: 0 or %-ENOMEM (the pool keeps the chunks it had).  May sleep.
 */
int kxfer_pool_add_chunk(struct kxfer_pool *pool, unsigned int *cap,
			 struct page *page, u64 len)
{
	struct kxfer_chunk *c;
	u64 off = 0;

	if (pool->kp_nchunks) {
		c = &pool->kp_chunks[pool->kp_nchunks - 1];
		off = c->kc_off + c->kc_len;
	}
	if (pool->kp_nchunks == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 64;
		struct kxfer_chunk *n;

		n = kvcalloc(ncap, sizeof(*n), kxfer_pool_gfp(pool));
		if (!n)
			return -ENOMEM;
		if (pool->kp_chunks)
			memcpy(n, pool->kp_chunks, *cap * sizeof(*n));
		kvfree(pool->kp_chunks);
		pool->kp_chunks = n;
		*cap = ncap;
	}
	c = &pool->kp_chunks[pool->kp_nchunks++];
	c->kc_page = page;
	c->kc_off = off;
	c->kc_len = len;
	return 0;
}

/* Allocate the pool's memory, largest folios first. */
static int kxfer_pool_alloc_chunks(struct kxfer_pool *pool)
{
	unsigned int order = KXFER_POOL_MAX_ORDER, cap = 0;
	u64 off = 0;

	while (off < pool->kp_size) {
		u64 left = pool->kp_size - off;
		gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN;
		struct folio *folio;

		while (order && (PAGE_SIZE << order) > left)
			order--;
		if (order)
			gfp |= __GFP_NORETRY;
		folio = __folio_alloc_node(gfp, order,
					   pool->kp_numa == NUMA_NO_NODE ?
					   numa_mem_id() : pool->kp_numa);
		if (!folio) {
			if (!order)
				goto out_nomem;
			order--;
			continue;
		}
		if (kxfer_pool_add_chunk(pool, &cap, folio_page(folio, 0),
					 PAGE_SIZE << order)) {
			folio_put(folio);
			goto out_nomem;
		}
		off += PAGE_SIZE << order;

		if (fatal_signal_pending(current))
			goto out_intr;
		cond_resched();
	}
	return 0;

out_intr:
	kxfer_pool_free_chunks(pool);
	return -EINTR;
out_nomem:
	kxfer_pool_free_chunks(pool);
	return -ENOMEM;
}

/**
 * kxfer_pool_chunk_at - the chunk that holds a pool offset
 * @pool: the pool
 * @off: byte offset, below kp_size
 *
 * Return: the chunk, found by binary search over the chunk offsets.
 */
const struct kxfer_chunk *kxfer_pool_chunk_at(const struct kxfer_pool *pool,
					      u64 off)
{
	unsigned int lo = 0, hi = pool->kp_nchunks;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (pool->kp_chunks[mid].kc_off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return &pool->kp_chunks[lo];
}

/**
 * kxfer_pool_alloc - start a pool: check its size, reserve its budget
 * @name: the pool's name; refused if a live pool has it
 * @size: bytes, a non-zero multiple of PAGE_SIZE below 1 TiB
 * @kind: enum kxfer_pool_kind; pools of a process are also bounded by
 *	user_pool_mem_max
 *
 * The pool is not on kxfer_pools yet and has no chunks: the caller adds
 * them (kxfer_pool_add_chunk()), then kxfer_pool_publish() it, or
 * kxfer_pool_free_new() it.
 *
 * Return: the pool, or an ERR_PTR: %-EINVAL (size), %-EEXIST (name),
 * %-ENOSPC (pool_mem_max or user_pool_mem_max would be exceeded),
 * %-ENOMEM.  May sleep.
 */
struct kxfer_pool *kxfer_pool_alloc(const char *name, u64 size,
				    enum kxfer_pool_kind kind)
{
	struct kxfer_pool *pool;
	int ret;

	if (!size || !PAGE_ALIGNED(size) || size >= KXFER_MMAP_WINDOW)
		return ERR_PTR(-EINVAL);
	pool = kzalloc(sizeof(*pool), kind == KXFER_POOL_KIND_KERNEL ?
		       GFP_KERNEL : GFP_KERNEL_ACCOUNT);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	kref_init(&pool->kp_ref);
	strscpy(pool->kp_name, name, sizeof(pool->kp_name));
	pool->kp_size = size;
	pool->kp_kind = kind;
	pool->kp_numa = NUMA_NO_NODE;
	mutex_init(&pool->kp_map_lock);
	INIT_LIST_HEAD(&pool->kp_maps);
	INIT_LIST_HEAD(&pool->kp_node);

	/* Reserve the budget first: concurrent creations cannot overshoot. */
	ret = -ENOSPC;
	if (atomic64_add_return(size, &kxfer_pool_mem_used) >
	    kxfer_pool_mem_max)
		goto out_unreserve;
	if (kind != KXFER_POOL_KIND_KERNEL &&
	    atomic64_add_return(size, &kxfer_user_pool_mem_used) >
	    READ_ONCE(kxfer_user_pool_mem_max)) {
		atomic64_sub(size, &kxfer_user_pool_mem_used);
		goto out_unreserve;
	}

	mutex_lock(&kxfer_obj_mutex);
	ret = kxfer_pool_lookup(name) ? -EEXIST : 0;
	mutex_unlock(&kxfer_obj_mutex);
	if (!ret)
		return pool;
	kxfer_pool_unreserve(pool);
	goto out_free;

out_unreserve:
	atomic64_sub(size, &kxfer_pool_mem_used);
out_free:
	mutex_destroy(&pool->kp_map_lock);
	kfree(pool);
	return ERR_PTR(ret);
}

/**
 * kxfer_pool_free_new - undo kxfer_pool_alloc() and the chunks added
 * @pool: a pool that was never published
 *
 * May sleep.
 */
void kxfer_pool_free_new(struct kxfer_pool *pool)
{
	kxfer_pool_free_chunks(pool);
	kxfer_pool_unreserve(pool);
	mutex_destroy(&pool->kp_map_lock);
	kfree(pool);
}

/**
 * kxfer_pool_publish - put a built pool in the namespace and map it
 * @pool: from kxfer_pool_alloc(), with its chunks
 * @extack: for the reason of a refusal
 *
 * Maps the pool on every present device, so that the cost is paid at
 * creation; devices added later map it at first use.
 *
 * Return: 0, or %-EEXIST if the name was taken meanwhile (the pool is
 * then the caller's still).  May sleep.
 */
int kxfer_pool_publish(struct kxfer_pool *pool,
		       struct netlink_ext_ack *extack)
{
	struct kxfer_device **kds;
	unsigned int i, nkds;

	mutex_lock(&kxfer_obj_mutex);
	if (kxfer_pool_lookup(pool->kp_name)) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "pool already exists");
		return -EEXIST;
	}
	list_add_tail(&pool->kp_node, &kxfer_pools);
	mutex_unlock(&kxfer_obj_mutex);

	/*
	 * The pool is already on kxfer_pools, so a device removal racing
	 * with this finds it.
	 */
	nkds = kxfer_device_snapshot(&kds);
	for (i = 0; i < nkds; i++)
		kxfer_pool_map_device(pool, kds[i]);
	kxfer_device_snapshot_put(kds, nkds);

	kxfer_info("pool %s: %llu bytes in %u chunks\n", pool->kp_name,
		   pool->kp_size, pool->kp_nchunks);
	mutex_lock(&kxfer_obj_mutex);
	kxfer_nl_notify_pool(pool, true);
	mutex_unlock(&kxfer_obj_mutex);
	return 0;
}

/**
 * kxfer_pool_create - make a pool and map it on every present device
 * @args: name, size (a non-zero multiple of PAGE_SIZE), owner, group,
 *	mode, NUMA node, the device its memory is near (placement)
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-EEXIST for a name in use; %-EINVAL for a bad size, node
 * or PCI address; %-ENODEV for a near device that is not there;
 * %-ENOSPC when pool_mem_max would be exceeded; %-ENOMEM;
 * %-EINTR when a fatal signal cut a long allocation short.  May sleep.
 */
int kxfer_pool_create(const struct kxfer_pool_args *args,
		      struct netlink_ext_ack *extack)
{
	struct kxfer_pci_path near;
	struct kxfer_pool *pool;
	u64 start;
	int ret;

	if (!args->size || !PAGE_ALIGNED(args->size)) {
		NL_SET_ERR_MSG(extack, "pool size must be a non-zero multiple of the page size");
		return -EINVAL;
	}
	if (args->size >= KXFER_MMAP_WINDOW) {
		NL_SET_ERR_MSG(extack, "pool size must be below 1 TiB");
		return -EINVAL;
	}
	if (args->numa != NUMA_NO_NODE &&
	    (args->numa < 0 || args->numa >= MAX_NUMNODES ||
	     !node_online(args->numa))) {
		NL_SET_ERR_MSG(extack, "NUMA node is not online");
		return -EINVAL;
	}
	if (args->near) {
		ret = kxfer_near_find(args->near, &near, extack);
		if (ret)
			return ret;
	}

	pool = kxfer_pool_alloc(args->name, args->size, KXFER_POOL_KIND_KERNEL);
	if (IS_ERR(pool)) {
		ret = PTR_ERR(pool);
		if (ret == -ENOSPC)
			NL_SET_ERR_MSG(extack, "pool size exceeds what is left of pool_mem_max");
		else if (ret == -EEXIST)
			NL_SET_ERR_MSG(extack, "pool already exists");
		return ret;
	}
	pool->kp_owner = args->owner;
	pool->kp_group = args->group;
	pool->kp_mode = args->mode & 0777;
	pool->kp_numa = args->numa;
	if (args->near) {
		pool->kp_near = near;
		strscpy(pool->kp_near_name, args->near,
			sizeof(pool->kp_near_name));
	}

	start = ktime_get_ns();
	ret = kxfer_pool_alloc_chunks(pool);
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot allocate the pool's memory");
		goto out_free;
	}
	pool->kp_alloc_ns = ktime_get_ns() - start;

	ret = kxfer_pool_publish(pool, extack);
	if (ret)
		goto out_free;
	return 0;

out_free:
	kxfer_pool_free_new(pool);
	return ret;
}

/**
 * kxfer_pool_delete - remove a pool from the namespace
 * @name: the pool's name
 * @extack: for the reason of a refusal
 *
 * Return: 0; %-ENOENT if there is no such pool; %-EBUSY while it is
 * attached, mapped or exported.  May sleep.
 */
int kxfer_pool_delete(const char *name, struct netlink_ext_ack *extack)
{
	struct kxfer_pool *pool;

	mutex_lock(&kxfer_obj_mutex);
	pool = kxfer_pool_lookup(name);
	if (!pool) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "no such pool");
		return -ENOENT;
	}
	if (pool->kp_kind != KXFER_POOL_KIND_KERNEL) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "pool belongs to a process; it ends with it");
		return -EBUSY;
	}
	if (pool->kp_nexports) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "pool is exported; delete its exports first");
		return -EBUSY;
	}
	if (pool->kp_users) {
		mutex_unlock(&kxfer_obj_mutex);
		NL_SET_ERR_MSG(extack, "pool is attached or mapped by a process");
		return -EBUSY;
	}
	pool->kp_deleted = true;
	kxfer_nl_notify_pool(pool, false);
	mutex_unlock(&kxfer_obj_mutex);

	kxfer_pool_put(pool);
	return 0;
}

/**
 * kxfer_pool_check_access - may the current task attach this pool?
 * @pool: the pool
 *
 * Read and write permission, decided as for a file: the owner bits if
 * the caller's fsuid owns the pool, else the group bits if the caller
 * is in the pool's group, else the other bits; CAP_DAC_OVERRIDE passes.
 *
 * Return: 0 or %-EACCES.
 */
int kxfer_pool_check_access(const struct kxfer_pool *pool)
{
	umode_t mode = pool->kp_mode;

	if (uid_eq(current_fsuid(), pool->kp_owner))
		mode >>= 6;
	else if (in_group_p(pool->kp_group))
		mode >>= 3;
	if ((mode & 06) == 06)
		return 0;
	return capable(CAP_DAC_OVERRIDE) ? 0 : -EACCES;
}

/**
 * kxfer_pool_use - count a new user (attachment or mapping) of a pool
 * @name: the pool's name
 *
 * Return: the referenced pool, or an ERR_PTR: %-ENOENT, %-EACCES (also
 * for a pool over a process's memory: only its owner uses it).
 * May sleep.
 */
struct kxfer_pool *kxfer_pool_use(const char *name)
{
	struct kxfer_pool *pool;
	int ret;

	mutex_lock(&kxfer_obj_mutex);
	pool = kxfer_pool_lookup(name);
	if (!pool) {
		ret = -ENOENT;
		goto out_unlock;
	}
	/* A process's own memory is attached by that process alone. */
	ret = pool->kp_kind == KXFER_POOL_KIND_KERNEL ?
	      kxfer_pool_check_access(pool) : -EACCES;
	if (ret)
		goto out_unlock;
	kref_get(&pool->kp_ref);
	pool->kp_users++;
out_unlock:
	mutex_unlock(&kxfer_obj_mutex);
	return ret ? ERR_PTR(ret) : pool;
}

/**
 * kxfer_pool_unuse - undo kxfer_pool_use() or a mapping's count
 * @pool: the pool
 *
 * May sleep; drops the reference the use held.
 */
void kxfer_pool_unuse(struct kxfer_pool *pool)
{
	mutex_lock(&kxfer_obj_mutex);
	pool->kp_users--;
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_pool_put(pool);
}

/**
 * kxfer_pool_disown - end a pool over a process's memory
 * @pool: a USER or DMABUF pool, whose owner's attachment is gone
 * @how: whether to wait for the peers to drain its exports
 *
 * No export is made of it any more; its exports are withdrawn
 * (kxfer_exports_withdraw_pool()), then the pool leaves the namespace and
 * monitors are told.  The memory is given back when jobs in flight and
 * the registrations of exports still draining drop their references.
 * May sleep.
 */
void kxfer_pool_disown(struct kxfer_pool *pool, enum kxfer_withdraw_how how)
{
	/*
	 * kxfer_export_create() refuses a disowned pool under the mutex: an
	 * EXPORT_ADD that found the pool in its file before the owner ended
	 * it cannot make an export after the withdrawal below.  The name
	 * stays taken until the pool leaves the namespace after it.
	 */
	mutex_lock(&kxfer_obj_mutex);
	pool->kp_disowned = true;
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_exports_withdraw_pool(pool, how);
	mutex_lock(&kxfer_obj_mutex);
	pool->kp_deleted = true;
	kxfer_nl_notify_pool(pool, false);
	mutex_unlock(&kxfer_obj_mutex);
	kxfer_pool_put(pool);
}

/**
 * kxfer_pools_destroy_all - drop the namespace's pool references
 *
 * Module unload, after every export is gone and every file is closed.
 */
void kxfer_pools_destroy_all(void)
{
	struct kxfer_pool *pool;

	for (;;) {
		mutex_lock(&kxfer_obj_mutex);
		pool = NULL;
		list_for_each_entry(pool, &kxfer_pools, kp_node)
			if (!pool->kp_deleted)
				break;
		if (list_entry_is_head(pool, &kxfer_pools, kp_node)) {
			mutex_unlock(&kxfer_obj_mutex);
			break;
		}
		pool->kp_deleted = true;
		mutex_unlock(&kxfer_obj_mutex);
		kxfer_pool_put(pool);
	}
	WARN_ON(!list_empty(&kxfer_pools));
}
