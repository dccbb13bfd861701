/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * kxfer_testbuf: a dma-buf exporter for kxfer's tests (selftests/kmod).
 *
 * Debian's 6.1 kernel has neither udmabuf nor the system dma-heap, and no
 * kernel here has an exporter of device memory (a GPU's): this module
 * exports buffers of system pages that the tests map and check, and
 * buffers shaped the way kxfer must refuse.  Never loaded outside tests.
 */
#ifndef _KXFER_TESTBUF_H
#define _KXFER_TESTBUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* The exporter's table entries have no struct page (device memory) */
#define KXFER_TESTBUF_PAGELESS	(1U << 0)
/* The table covers one page less than the buffer's size */
#define KXFER_TESTBUF_SHORT	(1U << 1)
/* The first entry starts 512 bytes into its page */
#define KXFER_TESTBUF_UNALIGNED	(1U << 2)
/* Mapping the buffer for an importer fails with ENOMEM */
#define KXFER_TESTBUF_FAIL_MAP	(1U << 3)
/*
 * A large buffer of little memory, alone (no other flag): its memory is
 * KXFER_TESTBUF_ALIAS_PIECES pieces of KXFER_TESTBUF_ALIAS_PIECE bytes,
 * each physically contiguous, repeated over its whole size, so that
 * byte X of the buffer is byte X % (PIECES * PIECE) of its memory; the
 * table has one entry per piece.  mmap() shows the memory, at offsets up
 * to PIECES * PIECE.
 */
#define KXFER_TESTBUF_ALIAS	(1U << 4)
#define KXFER_TESTBUF_FLAGS	0x1fU

#define KXFER_TESTBUF_ALIAS_PIECE	(2ULL << 20)
#define KXFER_TESTBUF_ALIAS_PIECES	3

/**
 * struct kxfer_testbuf_create - KXFER_TESTBUF_CREATE's argument
 * @size: bytes, a multiple of the page size, at most 64 MiB; with
 *	KXFER_TESTBUF_ALIAS a multiple of KXFER_TESTBUF_ALIAS_PIECE, at most
 *	1023 GiB
 * @flags: KXFER_TESTBUF_*
 * @fd: out: the dma-buf (O_RDWR | O_CLOEXEC); mmap() shows its pages
 */
struct kxfer_testbuf_create {
	__u64	size;
	__u32	flags;
	__s32	fd;
};

#define KXFER_TESTBUF_CREATE	_IOWR('k', 0x80, struct kxfer_testbuf_create)

#endif /* _KXFER_TESTBUF_H */
