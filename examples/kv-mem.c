// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kv-mem.c: a node's KV cache, in the administrator's kxfer pool or in
 * the program's own memory (see kv-mem.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/udmabuf.h>

#include "kv-mem.h"

int kv_mem_parse(const char *how, enum kv_mem_kind *kind)
{
	if (!how || !strcmp(how, "malloc"))
		*kind = KV_MEM_MALLOC;
	else if (!strcmp(how, "memfd"))
		*kind = KV_MEM_MEMFD;
	else
		return -1;
	return 0;
}

const char *kv_mem_what(enum kv_mem_kind kind)
{
	switch (kind) {
	case KV_MEM_POOL:
		return "the administrator's kxfer pool";
	case KV_MEM_MALLOC:
		return "my own memory, from posix_memalign";
	case KV_MEM_MEMFD:
		return "my own memory, a memfd";
	case KV_MEM_UDMABUF:
		return "my own memory, a udmabuf over a memfd";
	}
	return "?";
}

/*
 * A memfd of @len bytes mapped shared at m->base; for a udmabuf it must
 * not shrink (udmabuf refuses a memfd without F_SEAL_SHRINK).
 */
static int kv_mem_memfd(struct kv_mem *m, const char *name, uint64_t len,
			int seal)
{
	void *p;

	m->memfd = memfd_create(name, MFD_CLOEXEC |
				(seal ? MFD_ALLOW_SEALING : 0));
	if (m->memfd < 0)
		return -errno;
	if (ftruncate(m->memfd, len) ||
	    (seal && fcntl(m->memfd, F_ADD_SEALS, F_SEAL_SHRINK)))
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->base = p;
	return 0;
}

/* A dma-buf of the memfd's pages; the caller closes it. */
static int kv_mem_udmabuf(struct kv_mem *m, uint64_t len)
{
	struct udmabuf_create c = {
		.memfd = m->memfd,
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.size = len,
	};
	int dev, fd;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0)
		fd = -errno;
	close(dev);
	return fd;
}

int kv_mem_open(struct kxfer *kx, struct kv_mem *m, enum kv_mem_kind kind,
		const char *name, uint64_t len)
{
	void *p = NULL;
	int ret, fd;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->len = len;
	m->memfd = -1;

	switch (kind) {
	case KV_MEM_POOL:
		ret = kxfer_pool_attach(kx, name, &m->map);
		if (ret)
			return ret;
		m->base = m->map.base;
		m->handle = m->map.handle;
		return 0;
	case KV_MEM_MALLOC:
		ret = posix_memalign(&p, sysconf(_SC_PAGESIZE), len);
		if (ret)
			return -ret;
		m->base = p;
		break;
	case KV_MEM_MEMFD:
		ret = kv_mem_memfd(m, name, len, 0);
		if (ret)
			return ret;
		break;
	case KV_MEM_UDMABUF:
		ret = kv_mem_memfd(m, name, len, 1);
		if (ret)
			return ret;
		fd = kv_mem_udmabuf(m, len);
		if (fd < 0)
			return fd;
		/* The pool holds the buffer: its fd may go at once. */
		ret = kxfer_pool_register_dmabuf(kx, name, fd, 0, len, NULL,
						 &m->handle);
		close(fd);
		return ret;
	}

	/*
	 * Base pages, so that the pool's chunks (physically contiguous
	 * runs of a folio) are its 4 KiB pages and the plan kv-prefill
	 * prints is exact.  Huge pages would do as well: fewer, larger
	 * chunks, fewer gather entries.
	 */
	madvise(m->base, len, MADV_NOHUGEPAGE);
	/*
	 * malloc may have touched the mapping before (its chunk header,
	 * just before m->base): where the kernel aligns large anonymous
	 * mappings to 2 MiB, that first touch may have brought in a huge
	 * page covering most of the buffer, which MADV_NOHUGEPAGE leaves.
	 * Drop what is there; the memset below faults base pages in.
	 */
	if (kind == KV_MEM_MALLOC)
		madvise(m->base, len, MADV_DONTNEED);
	memset(m->base, 0, len);
	return kxfer_pool_register(kx, name, m->base, len, &m->handle);
}

int kv_mem_export(struct kxfer *kx, const struct kv_mem *m, const char *name,
		  uint64_t off, uint64_t len, const char *peer)
{
	struct kxfer_export_add e;
	int ret;

	ret = kxfer_export_init(&e, name, m->handle, off, len, peer,
				KXFER_ACCESS_WRITE);
	return ret ? ret : kxfer_export_add(kx, &e);
}

void kv_mem_close(struct kxfer *kx, struct kv_mem *m)
{
	if (m->kind == KV_MEM_POOL) {
		kxfer_pool_detach(kx, &m->map);
		return;
	}
	/* Exports first, then the pages; the memory is ours again after. */
	kxfer_pool_unregister(kx, m->handle);
	if (m->kind == KV_MEM_MALLOC)
		free(m->base);
	else if (m->base)
		munmap(m->base, m->len);
	if (m->memfd >= 0)
		close(m->memfd);
}
