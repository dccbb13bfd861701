// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: pools over memory a process already has.
 *
 * A service keeps its KV cache or block cache in memory it allocated
 * itself: anonymous or memfd pages, or a dma-buf (GPU memory, udmabuf,
 * a dma-heap buffer).  KXFER_IOC_POOL_USER and KXFER_IOC_POOL_DMABUF
 * make a pool of it, owned by the open file that asked, and from then
 * on exports, jobs, notifications and statistics work on it as on any
 * pool (pool.c): it is a list of physically contiguous chunks, DMA-mapped
 * per device.  Only where the pages come from and how they go back
 * differ, and that is all this file does:
 *
 *  - user memory is pinned with pin_user_pages_fast(FOLL_WRITE |
 *    FOLL_LONGTERM), charged to the caller's RLIMIT_MEMLOCK through its
 *    mm's pinned_vm as ib_umem does, and unpinned dirty when the last
 *    reference to the pool goes;
 *  - a dma-buf is imported through kxfer's own attachment (the misc
 *    device, with a 64-bit DMA mask) and its pages are used the way a
 *    device without DMA needs them (soft-RoCE: its "DMA addresses" are
 *    kernel virtual addresses); or, for a named RDMA device that does
 *    DMA, pinned through ib_core (ib_umem_dmabuf_get_pinned) and used by
 *    DMA address on that device only.
 *
 * The pool leaves with its owner (KXFER_IOC_POOL_DETACH or close): its
 * exports are invalidated on every session first (pool.c,
 * kxfer_pool_disown()), and jobs in flight hold the pool, so that no
 * page is given back while the NIC may still write it.
 */
#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem.h>

#include "kxfer.h"

MODULE_IMPORT_NS(DMA_BUF);

/* bytes pinned by pools of processes' memory, within user_pool_mem_max */
atomic64_t kxfer_user_pool_mem_used = ATOMIC64_INIT(0);

#define kxfer_upool_warn(pool, fmt, ...) \
	pr_warn_ratelimited("kxfer: pool %s of %s[%d]: " fmt, (pool)->kp_name, \
			    (pool)->kp_comm, (pool)->kp_pid, ##__VA_ARGS__)

static bool kxfer_upool_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* ---------------------------------------------------------------------- */
/* Giving memory back                                                      */
/* ---------------------------------------------------------------------- */

/*
 * ib_core's import of a dma-buf for a device is released from a work
 * item, where no lock of kxfer's is held: the release takes the buffer's
 * reservation lock, under which a revocation (kxfer_upool_revoke) takes
 * kxfer_obj_mutex and sessions' mutexes, while the last reference to a
 * pool may go under a session's mutex.
 */
struct kxfer_upool_put {
	struct work_struct	up_work;
	struct ib_umem_dmabuf	*up_umem;
	struct kxfer_device	*up_dev;
};

static atomic_t kxfer_upool_puts = ATOMIC_INIT(0);

static void kxfer_upool_put_work(struct work_struct *work)
{
	struct kxfer_upool_put *up = container_of(work, struct kxfer_upool_put,
						  up_work);

	ib_umem_release(&up->up_umem->umem);
	kxfer_device_put(up->up_dev);
	kfree(up);
	if (atomic_dec_and_test(&kxfer_upool_puts))
		wake_up_var(&kxfer_upool_puts);
}

static void kxfer_upool_put_umem(struct ib_umem_dmabuf *umem,
				 struct kxfer_device *kd)
{
	struct kxfer_upool_put *up;

	up = kmalloc(sizeof(*up), GFP_KERNEL | __GFP_NOFAIL);
	INIT_WORK(&up->up_work, kxfer_upool_put_work);
	up->up_umem = umem;
	up->up_dev = kd;
	atomic_inc(&kxfer_upool_puts);
	queue_work(system_unbound_wq, &up->up_work);
}

/**
 * kxfer_upools_exit - wait for the imports being released
 *
 * Module unload, after the last pool went and before the devices go.
 */
void kxfer_upools_exit(void)
{
	wait_var_event(&kxfer_upool_puts, !atomic_read(&kxfer_upool_puts));
}

/**
 * kxfer_upool_release - give a process's pool's memory back
 * @pool: a USER or DMABUF pool at its last reference, or never published
 *
 * Unpins user pages (dirty: the NIC may have written them) and uncharges
 * them, or unmaps and releases the dma-buf.  May sleep.
 */
void kxfer_upool_release(struct kxfer_pool *pool)
{
	struct kxfer_pool_src *src = &pool->kp_src;
	unsigned int i;

	if (pool->kp_kind == KXFER_POOL_KIND_USER) {
		for (i = 0; i < pool->kp_nchunks; i++)
			unpin_user_page_range_dirty_lock(pool->kp_chunks[i].kc_page,
							 pool->kp_chunks[i].kc_len >> PAGE_SHIFT,
							 true);
		if (src->ps_mm) {
			atomic64_sub(src->ps_npages, &src->ps_mm->pinned_vm);
			mmdrop(src->ps_mm);
		}
	}
	if (src->ps_sgt)
		dma_buf_unmap_attachment_unlocked(src->ps_attach, src->ps_sgt,
						  DMA_BIDIRECTIONAL);
	if (src->ps_attach)
		dma_buf_detach(src->ps_dmabuf, src->ps_attach);
	if (src->ps_umem) {
		/* ib_core calls kxfer_upool_revoke() once more: nothing to do */
		WRITE_ONCE(src->ps_releasing, true);
		kxfer_upool_put_umem(src->ps_umem, src->ps_dev);
	} else if (src->ps_dev) {
		kxfer_device_put(src->ps_dev);
	}
	if (src->ps_dmabuf)
		dma_buf_put(src->ps_dmabuf);
	memset(src, 0, sizeof(*src));
}

/* ---------------------------------------------------------------------- */
/* User memory                                                             */
/* ---------------------------------------------------------------------- */

/*
 * Say why a range cannot be pinned before trying, so that the caller
 * gets an errno that names the reason: pin_user_pages() says -EFAULT
 * for all of them.
 */
static int kxfer_upool_check_vmas(unsigned long start, unsigned long end)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long addr = start;
	int ret = 0;

	mmap_read_lock(mm);
	while (addr < end) {
		vma = find_vma(mm, addr);
		if (!vma || vma->vm_start > addr) {
			ret = -EFAULT;
			break;
		}
		if ((vma->vm_flags & (VM_IO | VM_PFNMAP)) || vma_is_fsdax(vma)) {
			ret = -EOPNOTSUPP;
			break;
		}
		if (!(vma->vm_flags & VM_WRITE)) {
			ret = -EACCES;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

/* Charge the pages to the caller's RLIMIT_MEMLOCK, as ib_umem_get() does. */
static int kxfer_upool_charge(struct kxfer_pool *pool)
{
	unsigned long npages = pool->kp_size >> PAGE_SHIFT;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;

	if (atomic64_add_return(npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	pool->kp_src.ps_mm = mm;
	pool->kp_src.ps_npages = npages;
	return 0;
}

/* Add a pinned page: it extends the last chunk if it follows it in its folio. */
static int kxfer_upool_add_page(struct kxfer_pool *pool, unsigned int *cap,
				struct page *page)
{
	struct kxfer_chunk *c = pool->kp_nchunks ?
				&pool->kp_chunks[pool->kp_nchunks - 1] : NULL;

	if (c && nth_page(c->kc_page, c->kc_len >> PAGE_SHIFT) == page &&
	    page_folio(c->kc_page) == page_folio(page)) {
		c->kc_len += PAGE_SIZE;
		return 0;
	}
	return kxfer_pool_add_chunk(pool, cap, page, PAGE_SIZE);
}

/* Pin the pool's pages, a page of pointers at a time. */
static int kxfer_upool_pin(struct kxfer_pool *pool, unsigned long start)
{
	unsigned long npages = pool->kp_size >> PAGE_SHIFT, done = 0;
	unsigned int cap = 0, batch = PAGE_SIZE / sizeof(struct page *);
	struct page **pages;
	long i, n;
	int ret = 0;

	pages = (struct page **)__get_free_page(GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	while (done < npages) {
		n = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					min_t(unsigned long, npages - done, batch),
					FOLL_WRITE | FOLL_LONGTERM, pages);
		if (n <= 0) {
			ret = n ? n : -EFAULT;
			break;
		}
		for (i = 0; i < n; i++) {
			ret = kxfer_upool_add_page(pool, &cap, pages[i]);
			if (ret) {
				/* Not in a chunk: not unpinned by release. */
				unpin_user_pages(pages + i, n - i);
				goto out;
			}
		}
		done += n;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
out:
	free_page((unsigned long)pages);
	return ret;
}

/* Who owns a process's pool: its file, for display its process. */
static void kxfer_upool_own(struct kxfer_pool *pool, struct kxfer_file *kf)
{
	pool->kp_file = kf;
	pool->kp_owner = current_fsuid();
	pool->kp_group = current_fsgid();
	pool->kp_mode = 0600;
	pool->kp_pid = task_tgid_vnr(current);
	get_task_comm(pool->kp_comm, current);
}

/*
 * Publish a built pool and give it to its file as an attachment.  The
 * handle is reserved first, so that a full file leaves nothing behind;
 * it is filled only once the pool is complete and in the namespace.  On
 * success the caller holds a reference of its own, to put when done.
 */
static int kxfer_upool_attach(struct kxfer_file *kf, struct kxfer_pool *pool,
			      u32 *handle)
{
	int ret;

	ret = xa_alloc(&kf->kf_pools, handle, NULL,
		       XA_LIMIT(1, kxfer_max_pools_per_fd), GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -EMFILE : ret;
	/* The owner's attachment: one user, one reference. */
	pool->kp_users = 1;
	kref_get(&pool->kp_ref);
	ret = kxfer_pool_publish(pool, NULL);
	if (ret) {
		xa_release(&kf->kf_pools, *handle);
		return ret;
	}
	/*
	 * The caller's hold, taken before the handle is filled: from then on
	 * a DETACH of it (guessed) may end the pool.  Nobody else removes a
	 * reservation: the store needs no memory.
	 */
	kref_get(&pool->kp_ref);
	xa_store(&kf->kf_pools, *handle, pool, GFP_KERNEL);
	return 0;
}

/*
 * End a pool a file made but could not tell the caller about, unless a
 * DETACH of its handle (guessed) ended it already.  The caller holds it.
 */
static void kxfer_upool_undo(struct kxfer_file *kf, u32 handle,
			     struct kxfer_pool *pool)
{
	if (xa_cmpxchg(&kf->kf_pools, handle, pool, NULL, 0) != pool)
		return;
	kxfer_pool_disown(pool, KXFER_WITHDRAW_NOWAIT);
	kxfer_pool_unuse(pool);
}

/*
 * Hand a built pool to its file and tell the caller its handle (@handle
 * is in @arg, which goes back to @uarg); a pool the caller cannot be
 * told about ends at once.
 */
static long kxfer_upool_give(struct kxfer_file *kf, struct kxfer_pool *pool,
			     u32 *handle, void __user *uarg, const void *arg,
			     size_t len)
{
	int ret = kxfer_upool_attach(kf, pool, handle);

	if (ret) {
		kxfer_pool_free_new(pool);
		return ret;
	}
	/* kxfer_upool_attach() gave us a hold for this. */
	if (copy_to_user(uarg, arg, len)) {
		kxfer_upool_undo(kf, *handle, pool);
		ret = -EFAULT;
	}
	kxfer_pool_put(pool);
	return ret;
}

/**
 * kxfer_ioc_pool_user - KXFER_IOC_POOL_USER: a pool of the caller's memory
 * @kf: the file that will own it
 * @uarg: struct kxfer_pool_user
 *
 * Return: 0 or a negative errno (uapi/linux/kxfer.h lists them).  May
 * sleep.
 */
long kxfer_ioc_pool_user(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_pool_user a;
	struct kxfer_pool *pool;
	u64 end;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !kxfer_upool_zero(a.reserved, sizeof(a.reserved)) ||
	    !kxfer_name_valid(a.name))
		return -EINVAL;
	if (!a.len || !PAGE_ALIGNED(a.addr) || !PAGE_ALIGNED(a.len) ||
	    check_add_overflow(a.addr, a.len, &end) || end > TASK_SIZE)
		return -EINVAL;
	if (!READ_ONCE(kxfer_user_pool_mem_max))
		return -EPERM;
	ret = kxfer_upool_check_vmas(a.addr, end);
	if (ret)
		return ret;

	pool = kxfer_pool_alloc(a.name, a.len, KXFER_POOL_KIND_USER);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	kxfer_upool_own(pool, kf);
	ret = kxfer_upool_charge(pool);
	if (ret)
		goto out_free;
	ret = kxfer_upool_pin(pool, a.addr);
	if (ret)
		goto out_free;
	return kxfer_upool_give(kf, pool, &a.handle, uarg, &a, sizeof(a));

out_free:
	kxfer_pool_free_new(pool);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* dma-buf                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * The buffer's pages, for devices without DMA.  An importer normally
 * never looks at them; a device whose "DMA addresses" are kernel virtual
 * addresses cannot do otherwise, and exporters of system memory have
 * them.  Kept mapped (so pinned by the exporter) until the pool goes.
 */
static int kxfer_upool_dmabuf_pages(struct kxfer_pool *pool, u64 offset)
{
	struct kxfer_pool_src *src = &pool->kp_src;
	u64 end = offset + pool->kp_size, pos = 0;
	struct scatterlist *sg;
	unsigned int cap = 0, i;
	int ret;

	if (IS_ENABLED(CONFIG_DMABUF_DEBUG)) {
		/* dma-buf hides the pages from importers on such kernels. */
		kxfer_upool_warn(pool, "CONFIG_DMABUF_DEBUG hides a dma-buf's pages\n");
		return -EOPNOTSUPP;
	}
	src->ps_attach = dma_buf_attach(src->ps_dmabuf,
					kxfer_chardev_dma_device());
	if (IS_ERR(src->ps_attach)) {
		ret = PTR_ERR(src->ps_attach);
		src->ps_attach = NULL;
		return ret;
	}
	src->ps_sgt = dma_buf_map_attachment_unlocked(src->ps_attach,
						      DMA_BIDIRECTIONAL);
	if (IS_ERR(src->ps_sgt)) {
		ret = PTR_ERR(src->ps_sgt);
		src->ps_sgt = NULL;
		return ret;
	}

	for_each_sgtable_sg(src->ps_sgt, sg, i) {
		u64 s_start = pos, from, to;
		struct page *page = sg_page(sg);

		pos += sg->length;
		if (pos <= offset)
			continue;
		if (s_start >= end)
			break;
		if (!page || is_zone_device_page(page)) {
			kxfer_upool_warn(pool, "the dma-buf has no pages of system memory (device memory?); a device without DMA cannot use it\n");
			return -EOPNOTSUPP;
		}
		if (!PAGE_ALIGNED(sg->offset) || !PAGE_ALIGNED(sg->length)) {
			kxfer_upool_warn(pool, "the dma-buf's pieces are not page aligned\n");
			return -EOPNOTSUPP;
		}
		from = max(offset, s_start) - s_start + sg->offset;
		to = min(end, pos) - s_start + sg->offset;
		ret = kxfer_pool_add_chunk(pool, &cap,
					   nth_page(page, from >> PAGE_SHIFT),
					   to - from);
		if (ret)
			return ret;
	}
	/* The exporter's table is shorter than the buffer says. */
	return pos >= end ? 0 : -EINVAL;
}

#ifdef KXFER_HAVE_UMEM_DMABUF_REVOCABLE
/*
 * The exporter takes the buffer back (dma_buf_move_notify() on a pinned
 * attachment, as VFIO does with a device's memory on reset), or ib_core
 * calls this once as the import is released (ps_releasing: no export and
 * no job is left then, they hold the pool).  Called under the buffer's
 * reservation lock; when it returns, nothing may touch the memory: the
 * pool takes no new job nor export (ESTALE), its exports are withdrawn
 * (LOCAL_INV on every session, as for a deletion), and the jobs the NIC
 * may be running on it are waited for; they end with ESTALE.
 */
static void kxfer_upool_revoke(void *priv)
{
	struct kxfer_pool *pool = priv;

	if (READ_ONCE(pool->kp_src.ps_releasing))
		return;
	kxfer_upool_warn(pool, "its exporter revoked the dma-buf: exports withdrawn, jobs on it end with ESTALE\n");
	WRITE_ONCE(pool->kp_revoked, true);
	/* Pairs with the barrier in kxfer_pool_job_begin(). */
	smp_mb();
	/* The exporter wants it now: no peer is asked to drain. */
	kxfer_exports_withdraw_pool(pool, KXFER_WITHDRAW_NOW);
	kxfer_sessions_pool_revoked(pool);
	wait_var_event(&pool->kp_jobs, !atomic_read(&pool->kp_jobs));
}
#endif

/* ib_core's pinned import, revocable where the kernel offers it (6.12) */
static struct ib_umem_dmabuf *kxfer_upool_umem_get(struct kxfer_pool *pool,
						   int fd, u64 offset)
{
	struct ib_device *ibdev = pool->kp_src.ps_dev->kd_ibdev;
	int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		     IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC;
#ifdef KXFER_HAVE_UMEM_DMABUF_REVOCABLE
	struct ib_umem_dmabuf *umem;

	umem = ib_umem_dmabuf_get_pinned_revocable_and_lock(ibdev, offset,
							    pool->kp_size,
							    fd, access);
	if (IS_ERR(umem))
		return umem;
	ib_umem_dmabuf_set_revoke_locked(umem, kxfer_upool_revoke, pool);
	dma_resv_unlock(umem->attach->dmabuf->resv);
	return umem;
#else
	return ib_umem_dmabuf_get_pinned(ibdev, offset, pool->kp_size, fd,
					 access);
#endif
}

/*
 * For a device that does DMA (an HCA with GPU memory behind it): ib_core
 * attaches and pins the buffer for that device, and the pool is its DMA
 * ranges on that device only.  Soft-RoCE has no DMA device, so the tests
 * here cannot reach this function, kxfer_upool_umem_get() and
 * kxfer_upool_revoke(), nor the device branch of
 * kxfer_upool_map_device() and kxfer_upools_device_removed(); they were
 * checked by reading ib_umem_dmabuf_get_pinned(), the revocable variant
 * (drivers/infiniband/core/umem_dmabuf.c of Debian's 6.12) and their
 * users (mlx5's and efa's reg_user_mr_dmabuf), and are built on both
 * kernels with W=1 and sparse.
 */
static int kxfer_upool_dmabuf_device(struct kxfer_pool *pool, int fd,
				     u64 offset)
{
	struct kxfer_pool_src *src = &pool->kp_src;
	struct ib_umem_dmabuf *umem;
	struct scatterlist *sg;
	unsigned int cap = 0, i;
	int ret;

	umem = kxfer_upool_umem_get(pool, fd, offset);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	src->ps_umem = umem;
	src->ps_dev_only = true;
	for_each_sgtable_dma_sg(&umem->umem.sgt_append.sgt, sg, i) {
		if (!PAGE_ALIGNED(sg_dma_address(sg)) ||
		    !PAGE_ALIGNED(sg_dma_len(sg))) {
			kxfer_upool_warn(pool, "the dma-buf's DMA ranges are not page aligned\n");
			return -EOPNOTSUPP;
		}
		ret = kxfer_pool_add_chunk(pool, &cap, NULL, sg_dma_len(sg));
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * kxfer_upool_map_device - the DMA addresses of a pool imported for one
 *	device
 * @pool: a DMABUF pool with an ib_core import (kp_src.ps_umem)
 * @kd: the device asked for
 * @dma: out, one address per chunk
 *
 * Caller holds the pool's kp_map_lock.
 *
 * Return: true if @dma was filled; false for any other device, or after
 * the device was removed.
 */
bool kxfer_upool_map_device(struct kxfer_pool *pool, struct kxfer_device *kd,
			    u64 *dma)
{
	struct kxfer_pool_src *src = &pool->kp_src;
	struct scatterlist *sg;
	unsigned int i;

	lockdep_assert_held(&pool->kp_map_lock);
	if (!src->ps_umem || src->ps_dev != kd || READ_ONCE(pool->kp_revoked))
		return false;
	for_each_sgtable_dma_sg(&src->ps_umem->umem.sgt_append.sgt, sg, i)
		dma[i] = sg_dma_address(sg);
	return true;
}

/**
 * kxfer_upools_device_removed - let go of a departing device
 * @kd: device whose ib_client remove callback is running, after its
 *	sessions ended and the pools were unmapped from it
 *
 * A pool imported for @kd alone releases the import (ib_core's mapping
 * for the device) and its device reference; the pool stays, unusable,
 * until its owner ends it (ps_dev_only keeps every device from mapping
 * its page-less chunks).  May sleep.
 */
void kxfer_upools_device_removed(struct kxfer_device *kd)
{
	struct ib_umem_dmabuf *umem;
	struct kxfer_pool *pool;

	do {
		umem = NULL;
		mutex_lock(&kxfer_obj_mutex);
		list_for_each_entry(pool, &kxfer_pools, kp_node) {
			struct kxfer_pool_src *src = &pool->kp_src;

			mutex_lock(&pool->kp_map_lock);
			if (src->ps_dev == kd) {
				WRITE_ONCE(src->ps_releasing, true);
				umem = src->ps_umem;
				src->ps_umem = NULL;
				src->ps_dev = NULL;
			}
			mutex_unlock(&pool->kp_map_lock);
			if (umem)
				break;
		}
		mutex_unlock(&kxfer_obj_mutex);
		/* Outside the locks (see struct kxfer_upool_put) */
		if (umem) {
			ib_umem_release(&umem->umem);
			kxfer_device_put(kd);
		}
	} while (umem);
}

/* Import the buffer: through its pages, or for the one device named. */
static int kxfer_upool_dmabuf_import(struct kxfer_pool *pool,
				     const struct kxfer_pool_dmabuf *a)
{
	struct kxfer_pool_src *src = &pool->kp_src;
	u64 end;

	src->ps_dmabuf = dma_buf_get(a->fd);
	if (IS_ERR(src->ps_dmabuf)) {
		int ret = PTR_ERR(src->ps_dmabuf);

		src->ps_dmabuf = NULL;
		return ret;
	}
	if (check_add_overflow(a->offset, a->len, &end) ||
	    end > src->ps_dmabuf->size)
		return -EINVAL;
	if (a->dev[0]) {
		src->ps_dev = kxfer_device_get_by_name(a->dev);
		if (!src->ps_dev)
			return -ENODEV;
		if (!ib_uses_virt_dma(src->ps_dev->kd_ibdev))
			return kxfer_upool_dmabuf_device(pool, a->fd, a->offset);
		/* No DMA on this device: its pages serve every device. */
		kxfer_device_put(src->ps_dev);
		src->ps_dev = NULL;
	}
	return kxfer_upool_dmabuf_pages(pool, a->offset);
}

/**
 * kxfer_ioc_pool_dmabuf - KXFER_IOC_POOL_DMABUF: a pool of a dma-buf
 * @kf: the file that will own it
 * @uarg: struct kxfer_pool_dmabuf
 *
 * Return: 0 or a negative errno (uapi/linux/kxfer.h lists them).  May
 * sleep.
 */
long kxfer_ioc_pool_dmabuf(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_pool_dmabuf a;
	struct kxfer_pool *pool;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad ||
	    !kxfer_upool_zero(a.reserved, sizeof(a.reserved)) ||
	    !kxfer_name_valid(a.name) ||
	    !memchr(a.dev, '\0', sizeof(a.dev)))
		return -EINVAL;
	if (!a.len || !PAGE_ALIGNED(a.offset) || !PAGE_ALIGNED(a.len))
		return -EINVAL;
	if (!READ_ONCE(kxfer_user_pool_mem_max))
		return -EPERM;

	pool = kxfer_pool_alloc(a.name, a.len, KXFER_POOL_KIND_DMABUF);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	kxfer_upool_own(pool, kf);
	ret = kxfer_upool_dmabuf_import(pool, &a);
	if (ret)
		goto out_free;
	return kxfer_upool_give(kf, pool, &a.handle, uarg, &a, sizeof(a));

out_free:
	kxfer_pool_free_new(pool);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Exports of a process's pools                                            */
/* ---------------------------------------------------------------------- */

static int kxfer_upool_export_from(const struct kxfer_export_add *a,
				   struct kxfer_prefix *from)
{
	switch (a->from_family) {
	case 0:
		return a->from_prefix ||
		       !kxfer_upool_zero(a->from_addr, sizeof(a->from_addr)) ?
		       -EINVAL : 0;
	case AF_INET:
		if (!kxfer_upool_zero(a->from_addr + 4, sizeof(a->from_addr) - 4))
			return -EINVAL;
		return kxfer_prefix_set(from, a->from_addr, 4, a->from_prefix);
	case AF_INET6:
		return kxfer_prefix_set(from, a->from_addr, 16, a->from_prefix);
	default:
		return -EINVAL;
	}
}

/**
 * kxfer_ioc_export_add - KXFER_IOC_EXPORT_ADD: export a range of a pool
 *	the file made
 * @kf: the file
 * @uarg: struct kxfer_export_add
 *
 * Return: 0 or a negative errno (uapi/linux/kxfer.h lists them).  May
 * sleep.
 */
long kxfer_ioc_export_add(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_export_args args = {};
	struct kxfer_export_add a;
	struct kxfer_prefix from;
	struct kxfer_pool *pool;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	/* A token is all zeros only when there is none. */
	if ((a.flags & ~(KXFER_EXPORT_SUBSCRIBE | KXFER_EXPORT_TOKEN)) ||
	    a.pad || kxfer_upool_zero(a.token, sizeof(a.token)) ==
		     !!(a.flags & KXFER_EXPORT_TOKEN) ||
	    !kxfer_name_valid(a.name) ||
	    (a.peer[0] && !kxfer_name_valid(a.peer)))
		return -EINVAL;
	ret = kxfer_upool_export_from(&a, &from);
	if (ret)
		return ret;
	if (!READ_ONCE(kxfer_user_exports))
		return -EPERM;

	xa_lock(&kf->kf_pools);
	pool = a.pool ? xa_load(&kf->kf_pools, a.pool) : NULL;
	if (pool)
		kref_get(&pool->kp_ref);
	xa_unlock(&kf->kf_pools);
	if (!pool)
		return -ENOENT;

	ret = -EPERM;
	if (pool->kp_file == kf) {
		args.name = a.name;
		args.off = a.offset;
		args.len = a.len;
		args.has_len = true;
		args.peer = a.peer;
		args.from = a.from_family ? &from : NULL;
		args.access = a.access;
		args.file = kf;
		if (a.flags & KXFER_EXPORT_TOKEN)
			args.token = a.token;
		ret = -ENOMEM;
		if (a.flags & KXFER_EXPORT_SUBSCRIBE)
			args.sub = kxfer_sub_alloc(kf, a.name);
		if (args.sub || !(a.flags & KXFER_EXPORT_SUBSCRIBE))
			ret = kxfer_export_create(&args, NULL, pool, NULL);
		/* With the subscription, its handle is the answer. */
		if (!ret && args.sub)
			ret = args.sub_handle;
		else if (ret && args.sub)
			kxfer_sub_free(args.sub);
	}
	kxfer_pool_put(pool);
	memzero_explicit(a.token, sizeof(a.token));
	return ret;
}

/**
 * kxfer_ioc_export_del - KXFER_IOC_EXPORT_DEL: withdraw an export the
 *	file made
 * @kf: the file
 * @uarg: struct kxfer_export_del
 *
 * Return: 0, %-EFAULT, %-EINVAL, %-ENOENT or %-EPERM.  May sleep.
 */
long kxfer_ioc_export_del(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_export_del d;

	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if ((d.flags & ~KXFER_EXPORT_DEL_NOWAIT) || d.reserved0 ||
	    !kxfer_upool_zero(d.reserved, sizeof(d.reserved)) ||
	    !kxfer_name_valid(d.name))
		return -EINVAL;
	return kxfer_export_delete(d.name, kf,
				   d.flags & KXFER_EXPORT_DEL_NOWAIT ?
				   KXFER_WITHDRAW_NOWAIT : KXFER_WITHDRAW_WAIT,
				   NULL);
}
