// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: /dev/kxfer, the data plane for services.
 *
 * Each open file is a context: the pools it attached (and, later, the
 * jobs it submitted) belong to it and are released on close.  Pools
 * are reached by mmap(2) at the offset KXFER_IOC_POOL_ATTACH returns:
 * the file's offset space is cut into KXFER_MMAP_WINDOW-sized windows,
 * window N being the pool attached as handle N; window 0 is the event
 * ring (event.c).
 *
 * No lock of this file is held while user memory is copied, and mmap
 * (which runs under the mm's mmap_lock) takes no sleeping lock of the
 * context either: attachments live in an xarray.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/mm.h>
#include <linux/log2.h>
#include <linux/dma-mapping.h>

#include "kxfer.h"

static umode_t kxfer_dev_mode = 0666;
module_param_named(dev_mode, kxfer_dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "Permission bits of /dev/kxfer (default 0666)");

static void kxfer_file_release(struct kref *ref)
{
	struct kxfer_file *kf = container_of(ref, struct kxfer_file, kf_ref);

	xa_destroy(&kf->kf_pools);
	xa_destroy(&kf->kf_peers);
	xa_destroy(&kf->kf_remotes);
	xa_destroy(&kf->kf_subs);
	kxfer_file_free_notes(kf);
	kxfer_file_free_gates(kf);
	kxfer_file_free_ring(kf);
	mutex_destroy(&kf->kf_reap_mutex);
	kvfree(kf->kf_msgs);
	kvfree(kf->kf_ring);
	kfree(kf);
}

/**
 * kxfer_file_put - drop a reference to a file's context
 * @kf: the context; the open file and each job in flight hold one
 *
 * Any context.
 */
void kxfer_file_put(struct kxfer_file *kf)
{
	kref_put(&kf->kf_ref, kxfer_file_release);
}

static int kxfer_open(struct inode *inode, struct file *filp)
{
	struct kxfer_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL);
	if (!kf)
		return -ENOMEM;
	kf->kf_ring_size = roundup_pow_of_two(clamp_t(unsigned int,
						      READ_ONCE(kxfer_max_inflight),
						      1, 1U << 20));
	kf->kf_ring = kvcalloc(kf->kf_ring_size, sizeof(*kf->kf_ring),
			       GFP_KERNEL);
	kf->kf_msgs = kvcalloc(kf->kf_ring_size, sizeof(*kf->kf_msgs),
			       GFP_KERNEL);
	if (!kf->kf_ring || !kf->kf_msgs) {
		kvfree(kf->kf_msgs);
		kvfree(kf->kf_ring);
		kfree(kf);
		return -ENOMEM;
	}
	kref_init(&kf->kf_ref);
	xa_init_flags(&kf->kf_pools, XA_FLAGS_ALLOC1);
	xa_init_flags(&kf->kf_peers, XA_FLAGS_ALLOC1);
	xa_init_flags(&kf->kf_remotes, XA_FLAGS_ALLOC1);
	xa_init_flags(&kf->kf_subs, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&kf->kf_notes);
	INIT_LIST_HEAD(&kf->kf_gates);
	spin_lock_init(&kf->kf_lock);
	init_waitqueue_head(&kf->kf_wait);
	mutex_init(&kf->kf_reap_mutex);
	filp->private_data = kf;
	return nonseekable_open(inode, filp);
}

/*
 * The owner's attachment of a pool over its own memory is the pool:
 * ending it withdraws the exports and ends the pool too.
 */
static void kxfer_pool_end_attachment(struct kxfer_file *kf,
				      struct kxfer_pool *pool,
				      enum kxfer_withdraw_how how)
{
	if (pool->kp_file == kf)
		kxfer_pool_disown(pool, how);
	kxfer_pool_unuse(pool);
}

/*
 * Jobs in flight keep the context (and their pools and sessions) until
 * they complete; their events are then dropped with it.  A close, and the
 * exit of a process that dies, never waits for peers to drain the pools'
 * exports: the sessions finish that, holding the memory meanwhile.
 */
static int kxfer_release(struct inode *inode, struct file *filp)
{
	struct kxfer_file *kf = filp->private_data;
	struct kxfer_pool *pool;
	unsigned long handle;

	xa_for_each(&kf->kf_pools, handle, pool) {
		xa_erase(&kf->kf_pools, handle);
		kxfer_pool_end_attachment(kf, pool, KXFER_WITHDRAW_NOWAIT);
	}
	kxfer_file_drop_handles(kf);
	kxfer_file_drop_subs(kf);
	kxfer_file_put(kf);
	return 0;
}

static long kxfer_ioc_query(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_query q;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (q.flags || q.reserved0 ||
	    !kxfer_zero(q.reserved, sizeof(q.reserved)))
		return -EINVAL;

	memset(&q, 0, sizeof(q));
	q.api_version = KXFER_API_VERSION;
	q.features = KXFER_FEAT_POOLS | KXFER_FEAT_JOBS | KXFER_FEAT_NOTIFY |
		     KXFER_FEAT_USER_POOLS | KXFER_FEAT_DMABUF_POOLS |
		     KXFER_FEAT_NOTIFY_MSG | KXFER_FEAT_CANCEL |
		     KXFER_FEAT_RING | KXFER_FEAT_DRAIN |
		     KXFER_FEAT_EXPORT_SUBSCRIBE | KXFER_FEAT_RELEASE |
		     KXFER_FEAT_TOKENS | KXFER_FEAT_CONNECT |
		     KXFER_FEAT_RAILS;
	q.max_notify_len = KXFER_NOTIFY_MSG_MAX;
	q.max_pools_per_fd = kxfer_max_pools_per_fd;
	q.max_segments = kxfer_max_segments;
	q.max_jobs_per_submit = kxfer_max_jobs_per_submit;
	q.max_inflight = kf->kf_ring_size;
	q.pool_mem_max = kxfer_pool_mem_max;
	q.pool_mem_used = atomic64_read(&kxfer_pool_mem_used);
	return copy_to_user(uarg, &q, sizeof(q)) ? -EFAULT : 0;
}

static long kxfer_ioc_pool_attach(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_pool_attach a;
	struct kxfer_pool *pool;
	u32 handle;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !kxfer_zero(a.reserved, sizeof(a.reserved)))
		return -EINVAL;
	if (!a.name[0] || !memchr(a.name, '\0', sizeof(a.name)))
		return -EINVAL;

	pool = kxfer_pool_use(a.name);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	/*
	 * Once in the table, the attachment is the file's: a DETACH of the
	 * handle (guessed) may end it before the caller is told.  Hold the
	 * pool until then.
	 */
	kref_get(&pool->kp_ref);
	ret = xa_alloc(&kf->kf_pools, &handle, pool,
		       XA_LIMIT(1, kxfer_max_pools_per_fd), GFP_KERNEL);
	if (ret) {
		kxfer_pool_unuse(pool);
		ret = ret == -EBUSY ? -EMFILE : ret;
		goto out_put;
	}

	a.handle = handle;
	a.size = pool->kp_size;
	a.mmap_offset = (u64)handle << KXFER_MMAP_WINDOW_SHIFT;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		/* unless that DETACH ended it already */
		if (xa_cmpxchg(&kf->kf_pools, handle, pool, NULL, 0) == pool)
			kxfer_pool_unuse(pool);
		ret = -EFAULT;
	}
out_put:
	kxfer_pool_put(pool);
	return ret;
}

static long kxfer_ioc_pool_detach(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_pool_detach d;
	struct kxfer_pool *pool;

	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if ((d.flags & ~KXFER_POOL_DETACH_NOWAIT) || d.reserved)
		return -EINVAL;
	if (!d.handle)
		return -ENOENT;
	/*
	 * A handle that POOL_USER or POOL_DMABUF reserved and still fills
	 * holds no pool yet: ENOENT, and the reservation stays (an erase
	 * would free the index for another pool, which the filling then
	 * overwrote).
	 */
	xa_lock(&kf->kf_pools);
	pool = xa_load(&kf->kf_pools, d.handle);
	if (pool)
		__xa_erase(&kf->kf_pools, d.handle);
	xa_unlock(&kf->kf_pools);
	if (!pool)
		return -ENOENT;
	/* Completed jobs drop their holds first: see post.c. */
	kxfer_file_jobs_settle(kf);
	kxfer_pool_end_attachment(kf, pool,
				  d.flags & KXFER_POOL_DETACH_NOWAIT ?
				  KXFER_WITHDRAW_NOWAIT : KXFER_WITHDRAW_WAIT);
	return 0;
}

static long kxfer_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct kxfer_file *kf = filp->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case KXFER_IOC_QUERY:
		return kxfer_ioc_query(kf, uarg);
	case KXFER_IOC_POOL_ATTACH:
		return kxfer_ioc_pool_attach(kf, uarg);
	case KXFER_IOC_POOL_DETACH:
		return kxfer_ioc_pool_detach(kf, uarg);
	case KXFER_IOC_PEER_LOOKUP:
		return kxfer_ioc_peer_lookup(kf, uarg);
	case KXFER_IOC_REMOTE_LOOKUP:
		return kxfer_ioc_remote_lookup(kf, uarg);
	case KXFER_IOC_SUBMIT:
		/* What the mapped ring's reader took is room for new jobs. */
		kxfer_file_ring_sync(kf);
		return kxfer_ioc_submit(kf, uarg);
	case KXFER_IOC_REAP:
		return kxfer_ioc_reap(kf, uarg);
	case KXFER_IOC_NOTIFY_SUBSCRIBE:
		return kxfer_ioc_notify_sub(kf, uarg);
	case KXFER_IOC_NOTIFY_UNSUBSCRIBE:
		return kxfer_ioc_notify_unsub(kf, uarg);
	case KXFER_IOC_POOL_USER:
		return kxfer_ioc_pool_user(kf, uarg);
	case KXFER_IOC_POOL_DMABUF:
		return kxfer_ioc_pool_dmabuf(kf, uarg);
	case KXFER_IOC_EXPORT_ADD:
		return kxfer_ioc_export_add(kf, uarg);
	case KXFER_IOC_EXPORT_DEL:
		return kxfer_ioc_export_del(kf, uarg);
	case KXFER_IOC_CANCEL:
		return kxfer_ioc_cancel(kf, uarg);
	case KXFER_IOC_RING_SETUP:
		return kxfer_ioc_ring_setup(kf, uarg);
	case KXFER_IOC_RING_MSG:
		return kxfer_ioc_ring_msg(kf, uarg);
	case KXFER_IOC_RELEASE:
		return kxfer_ioc_release(kf, uarg);
	case KXFER_IOC_CONNECT:
		return kxfer_ioc_connect(kf, uarg);
	default:
		return -ENOTTY;
	}
}

/* A mapping counts as a user of its pool, for as long as it exists. */
static void kxfer_vm_open(struct vm_area_struct *vma)
{
	struct kxfer_pool *pool = vma->vm_private_data;

	mutex_lock(&kxfer_obj_mutex);
	pool->kp_users++;
	kref_get(&pool->kp_ref);
	mutex_unlock(&kxfer_obj_mutex);
}

static void kxfer_vm_close(struct vm_area_struct *vma)
{
	kxfer_pool_unuse(vma->vm_private_data);
}

static const struct vm_operations_struct kxfer_vm_ops = {
	.open	= kxfer_vm_open,
	.close	= kxfer_vm_close,
};

static int kxfer_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kxfer_file *kf = filp->private_data;
	unsigned long handle, addr;
	struct kxfer_pool *pool;
	u64 off, len;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	handle = vma->vm_pgoff >> (KXFER_MMAP_WINDOW_SHIFT - PAGE_SHIFT);
	if (!handle)	/* window 0: the event ring */
		return kxfer_ring_mmap(kf, vma);
	off = (u64)(vma->vm_pgoff &
		    ((KXFER_MMAP_WINDOW >> PAGE_SHIFT) - 1)) << PAGE_SHIFT;
	len = vma->vm_end - vma->vm_start;

	xa_lock(&kf->kf_pools);
	pool = handle ? xa_load(&kf->kf_pools, handle) : NULL;
	if (pool)
		kref_get(&pool->kp_ref);
	xa_unlock(&kf->kf_pools);
	if (!pool)
		return -ENXIO;

	/* A process's own memory is mapped by that process already. */
	if (pool->kp_kind != KXFER_POOL_KIND_KERNEL ||
	    off >= pool->kp_size || len > pool->kp_size - off) {
		kxfer_pool_put(pool);
		return -EINVAL;
	}

	/*
	 * Count the user before a page is mapped, and not for a pool that
	 * was deleted: a DETACH on another thread may have ended the
	 * attachment that let us find it, and "pool del" refuses a pool
	 * only while it is counted.  The reference taken above becomes the
	 * mapping's.
	 */
	mutex_lock(&kxfer_obj_mutex);
	if (pool->kp_deleted) {
		mutex_unlock(&kxfer_obj_mutex);
		kxfer_pool_put(pool);
		return -ENXIO;
	}
	pool->kp_users++;
	mutex_unlock(&kxfer_obj_mutex);

	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (addr = vma->vm_start; addr < vma->vm_end;
	     addr += PAGE_SIZE, off += PAGE_SIZE) {
		const struct kxfer_chunk *c = kxfer_pool_chunk_at(pool, off);

		ret = vm_insert_page(vma, addr,
				     nth_page(c->kc_page,
					      (off - c->kc_off) >> PAGE_SHIFT));
		if (ret) {
			/* mmap_region() unmaps what was inserted */
			kxfer_pool_unuse(pool);
			return ret;
		}
	}

	vma->vm_private_data = pool;
	vma->vm_ops = &kxfer_vm_ops;
	return 0;
}

static __poll_t kxfer_poll(struct file *filp, poll_table *wait)
{
	return kxfer_file_poll(filp->private_data, filp, wait);
}

static const struct file_operations kxfer_fops = {
	.owner		= THIS_MODULE,
	.open		= kxfer_open,
	.release	= kxfer_release,
	.unlocked_ioctl	= kxfer_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= kxfer_mmap,
	.poll		= kxfer_poll,
};

static struct miscdevice kxfer_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= KXFER_DEVICE_NAME,
	.fops	= &kxfer_fops,
};

/**
 * kxfer_chardev_register - create /dev/kxfer
 *
 * Return: 0 or a negative errno from misc_register().
 */
int kxfer_chardev_register(void)
{
	int ret;

	kxfer_misc.mode = kxfer_dev_mode & 0666;
	ret = misc_register(&kxfer_misc);
	if (ret)
		return ret;
	/*
	 * kxfer's own dma-buf attachments (upool.c) are made for this
	 * device: exporters map their buffers for it, as udmabuf does for
	 * its own.
	 */
	ret = dma_coerce_mask_and_coherent(kxfer_misc.this_device,
					   DMA_BIT_MASK(64));
	if (ret)
		misc_deregister(&kxfer_misc);
	return ret;
}

/**
 * kxfer_chardev_dma_device - the device kxfer attaches dma-bufs for
 *
 * Return: /dev/kxfer's device, which has a 64-bit DMA mask.
 */
struct device *kxfer_chardev_dma_device(void)
{
	return kxfer_misc.this_device;
}

/**
 * kxfer_chardev_unregister - remove /dev/kxfer
 *
 * Open files keep the module pinned, so none remains when this runs at
 * unload.
 */
void kxfer_chardev_unregister(void)
{
	misc_deregister(&kxfer_misc);
}
