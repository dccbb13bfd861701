/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * kv-mem.h: where a node of the KV push keeps its KV cache.
 *
 * By default in the kxfer pool the administrator made for it (kxferctl
 * pool add), attached by name and mapped.  With --own-memory, in memory
 * the program allocated itself, as an inference engine does: it makes a
 * pool of it under the same name (kxfer_pool_register(), or
 * kxfer_pool_register_dmabuf() for a udmabuf) and exports it itself.
 * The kernel pins those pages and the NIC reads and writes them in
 * place: the program computes into them and checks them where they are,
 * no copy.  Either way the node names its memory by a pool handle and
 * offsets, so the jobs are the same.
 */
#ifndef KV_MEM_H
#define KV_MEM_H

#include <stdint.h>

#include "kxfer.h"

enum kv_mem_kind {
	KV_MEM_POOL,	/* the administrator's kxfer pool */
	KV_MEM_MALLOC,	/* posix_memalign()ed memory */
	KV_MEM_MEMFD,	/* a memfd, mapped shared */
	KV_MEM_UDMABUF,	/* a udmabuf over a memfd, used through the memfd */
};

/**
 * struct kv_mem - a node's KV cache
 * @kind: where it is
 * @base: byte o of the pool is at @base + o (for a udmabuf: the memfd's
 *	mapping, the very pages the dma-buf is made of)
 * @len: bytes
 * @handle: the pool's handle: the jobs' pool, the exports' pool
 * @map: KV_MEM_POOL's attachment
 * @memfd: KV_MEM_MEMFD's and KV_MEM_UDMABUF's memfd, else -1
 */
struct kv_mem {
	enum kv_mem_kind kind;
	uint8_t *base;
	uint64_t len;
	uint32_t handle;
	struct kxfer_pool_map map;
	int memfd;
};

/*
 * kv_mem_parse() - @how, the argument of --own-memory (NULL: "malloc",
 * or "memfd"), as a kind.  Returns 0, or -1 if it names no kind.
 */
int kv_mem_parse(const char *how, enum kv_mem_kind *kind);

/* kv_mem_what() - what the memory is, for messages. */
const char *kv_mem_what(enum kv_mem_kind kind);

/*
 * kv_mem_open() - attach the pool @name (KV_MEM_POOL), or allocate
 * @len bytes of the program's own memory and make the pool @name of it.
 * Returns 0, or a negative errno (-ENOENT for a udmabuf: this kernel
 * has no /dev/udmabuf).
 */
int kv_mem_open(struct kxfer *kx, struct kv_mem *m, enum kv_mem_kind kind,
		const char *name, uint64_t len);

/*
 * kv_mem_export() - export bytes [@off, @off + @len) of the program's own
 * pool as @name to the session @peer only, write only, as the
 * administrator would have (kxferctl export add ... access write).  It
 * goes with the pool.  Returns 0, or a negative errno.
 */
int kv_mem_export(struct kxfer *kx, const struct kv_mem *m, const char *name,
		  uint64_t off, uint64_t len, const char *peer);

/*
 * kv_mem_close() - detach the pool, or end it (its exports are withdrawn
 * from every peer first) and free the memory.
 */
void kv_mem_close(struct kxfer *kx, struct kv_mem *m);

#endif /* KV_MEM_H */
