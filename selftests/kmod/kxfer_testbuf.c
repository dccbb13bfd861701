// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer_testbuf: a dma-buf exporter for kxfer's tests.
 *
 * /dev/kxfer_testbuf makes dma-bufs of system pages (KXFER_TESTBUF_CREATE,
 * kxfer_testbuf.h).  The tests map them (mmap on the dma-buf) to check
 * what a peer wrote, and ask for buffers an importer must refuse: pieces
 * with no struct page behind them (what a GPU's exporter hands out for
 * its memory), a table shorter than the buffer, a piece that does not
 * start on a page; and buffers of many GiB whose few MiB of memory repeat
 * (KXFER_TESTBUF_ALIAS), for offsets beyond 32 bits.  It exists because
 * the kernels the tests boot do not all have an exporter (Debian's 6.1
 * has neither udmabuf nor dma-heaps) and none has one of device memory.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kxfer_testbuf.h"

MODULE_IMPORT_NS(DMA_BUF);

#define KXFER_TESTBUF_MAX	(64UL << 20)
#define KXFER_TESTBUF_ALIAS_MAX	(1023ULL << 30)
#define KXFER_TESTBUF_ALIAS_ORDER \
	(ilog2(KXFER_TESTBUF_ALIAS_PIECE) - PAGE_SHIFT)
/* the pages of an ALIAS buffer's memory, at the most */
#define KXFER_TESTBUF_ALIAS_NPAGES \
	(KXFER_TESTBUF_ALIAS_PIECES << KXFER_TESTBUF_ALIAS_ORDER)
/* where the pieces of a page-less buffer claim to be (never touched) */
#define KXFER_TESTBUF_FAKE_DMA	0x100000000ULL

struct kxfer_testbuf {
	struct page	**pages;	/* the memory, page by page */
	unsigned long	npages;
	u64		size;		/* more than the memory with ALIAS */
	u32		flags;
};

/* One entry per page, shaped by the flags */
static void kxfer_testbuf_page_table(struct kxfer_testbuf *b,
				     struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(sgt, sg, i) {
		if (b->flags & KXFER_TESTBUF_PAGELESS) {
			/* device memory: a bus address, no page */
			sg->length = PAGE_SIZE;
			sg_dma_address(sg) = KXFER_TESTBUF_FAKE_DMA +
					     (u64)i * PAGE_SIZE;
			sg_dma_len(sg) = PAGE_SIZE;
		} else if (!i && (b->flags & KXFER_TESTBUF_UNALIGNED)) {
			sg_set_page(sg, b->pages[i], PAGE_SIZE - 512, 512);
		} else {
			sg_set_page(sg, b->pages[i], PAGE_SIZE, 0);
		}
	}
}

/* ALIAS: one entry per piece, the pieces in turn */
static void kxfer_testbuf_alias_table(struct kxfer_testbuf *b,
				      struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(sgt, sg, i)
		sg_set_page(sg, b->pages[(i % KXFER_TESTBUF_ALIAS_PIECES) <<
					 KXFER_TESTBUF_ALIAS_ORDER],
			    KXFER_TESTBUF_ALIAS_PIECE, 0);
}

static struct sg_table *kxfer_testbuf_map(struct dma_buf_attachment *at,
					  enum dma_data_direction dir)
{
	struct kxfer_testbuf *b = at->dmabuf->priv;
	unsigned long n = b->npages;
	struct sg_table *sgt;
	int ret;

	if (b->flags & KXFER_TESTBUF_FAIL_MAP)
		return ERR_PTR(-ENOMEM);
	if (b->flags & KXFER_TESTBUF_SHORT)
		n--;
	if (b->flags & KXFER_TESTBUF_ALIAS)
		n = div_u64(b->size, KXFER_TESTBUF_ALIAS_PIECE);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		goto out_free;
	if (b->flags & KXFER_TESTBUF_ALIAS)
		kxfer_testbuf_alias_table(b, sgt);
	else
		kxfer_testbuf_page_table(b, sgt);
	if (!(b->flags & KXFER_TESTBUF_PAGELESS)) {
		ret = dma_map_sgtable(at->dev, sgt, dir, 0);
		if (ret)
			goto out_table;
	}
	return sgt;

out_table:
	sg_free_table(sgt);
out_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void kxfer_testbuf_unmap(struct dma_buf_attachment *at,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct kxfer_testbuf *b = at->dmabuf->priv;

	if (!(b->flags & KXFER_TESTBUF_PAGELESS))
		dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void kxfer_testbuf_free(struct kxfer_testbuf *b)
{
	unsigned long i;

	for (i = 0; i < b->npages; i++)
		if (b->pages[i])
			__free_page(b->pages[i]);
	kvfree(b->pages);
	kfree(b);
}

static void kxfer_testbuf_release(struct dma_buf *dmabuf)
{
	kxfer_testbuf_free(dmabuf->priv);
}

static int kxfer_testbuf_mmap(struct dma_buf *dmabuf,
			      struct vm_area_struct *vma)
{
	struct kxfer_testbuf *b = dmabuf->priv;

	return vm_map_pages(vma, b->pages, b->npages);
}

static const struct dma_buf_ops kxfer_testbuf_ops = {
	.map_dma_buf	= kxfer_testbuf_map,
	.unmap_dma_buf	= kxfer_testbuf_unmap,
	.release	= kxfer_testbuf_release,
	.mmap		= kxfer_testbuf_mmap,
};

/* The memory: pages, or for ALIAS contiguous pieces split into pages. */
static int kxfer_testbuf_alloc(struct kxfer_testbuf *b)
{
	unsigned int order = 0;
	unsigned long i, j;

	if (b->flags & KXFER_TESTBUF_ALIAS)
		order = KXFER_TESTBUF_ALIAS_ORDER;
	for (i = 0; i < b->npages; i += 1UL << order) {
		struct page *page = alloc_pages(GFP_KERNEL | __GFP_ZERO, order);

		if (!page)
			return -ENOMEM;
		/* each page its own, as the free and vm_map_pages() want */
		if (order)
			split_page(page, order);
		for (j = 0; j < 1UL << order; j++)
			b->pages[i + j] = page + j;
	}
	return 0;
}

static int kxfer_testbuf_create(struct kxfer_testbuf_create *c)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct kxfer_testbuf *b;
	struct dma_buf *dmabuf;
	int fd;

	if (!c->size || !PAGE_ALIGNED(c->size) ||
	    (c->flags & ~KXFER_TESTBUF_FLAGS))
		return -EINVAL;
	if (c->flags & KXFER_TESTBUF_ALIAS) {
		if (c->flags != KXFER_TESTBUF_ALIAS ||
		    !IS_ALIGNED(c->size, KXFER_TESTBUF_ALIAS_PIECE) ||
		    c->size > KXFER_TESTBUF_ALIAS_MAX)
			return -EINVAL;
	} else if (c->size > KXFER_TESTBUF_MAX) {
		return -EINVAL;
	}
	if ((c->flags & KXFER_TESTBUF_SHORT) && c->size == PAGE_SIZE)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->flags = c->flags;
	b->size = c->size;
	b->npages = c->size >> PAGE_SHIFT;
	if (c->flags & KXFER_TESTBUF_ALIAS)
		b->npages = min_t(u64, b->npages, KXFER_TESTBUF_ALIAS_NPAGES);
	b->pages = kvcalloc(b->npages, sizeof(*b->pages), GFP_KERNEL);
	if (!b->pages || kxfer_testbuf_alloc(b))
		goto out_nomem;

	exp.ops = &kxfer_testbuf_ops;
	exp.size = c->size;
	exp.flags = O_RDWR;
	exp.priv = b;
	dmabuf = dma_buf_export(&exp);
	if (IS_ERR(dmabuf)) {
		kxfer_testbuf_free(b);
		return PTR_ERR(dmabuf);
	}
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);	/* releases b */
		return fd;
	}
	c->fd = fd;
	return 0;

out_nomem:
	kxfer_testbuf_free(b);
	return -ENOMEM;
}

static long kxfer_testbuf_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	struct kxfer_testbuf_create c;
	int ret;

	if (cmd != KXFER_TESTBUF_CREATE)
		return -ENOTTY;
	if (copy_from_user(&c, (void __user *)arg, sizeof(c)))
		return -EFAULT;
	ret = kxfer_testbuf_create(&c);
	if (ret)
		return ret;
	if (copy_to_user((void __user *)arg, &c, sizeof(c))) {
		/* the descriptor is the caller's now; it learns nothing of it */
		return -EFAULT;
	}
	return 0;
}

static const struct file_operations kxfer_testbuf_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= kxfer_testbuf_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice kxfer_testbuf_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kxfer_testbuf",
	.fops	= &kxfer_testbuf_fops,
	.mode	= 0600,
};

module_misc_device(kxfer_testbuf_dev);

MODULE_DESCRIPTION("kxfer: a dma-buf exporter for tests");
MODULE_LICENSE("GPL");
