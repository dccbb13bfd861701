/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kernel_shim.h: what the module's pure-logic files (kmod/wire.c) need
 * from the kernel, for building them into host-side unit tests.
 */
#ifndef KXFER_KERNEL_SHIM_H
#define KXFER_KERNEL_SHIM_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

#define le16_to_cpu(x)	le16toh(x)
#define le32_to_cpu(x)	le32toh(x)
#define le64_to_cpu(x)	le64toh(x)
#define cpu_to_le16(x)	htole16(x)
#define cpu_to_le32(x)	htole32(x)
#define cpu_to_le64(x)	htole64(x)

/* kmod/plan.c */
typedef __u8	u8;
typedef __u16	u16;
typedef __u32	u32;
typedef __u64	u64;

#define U32_MAX	((u32)~0U)
#define U64_MAX	((u64)~0ULL)

#endif /* KXFER_KERNEL_SHIM_H */
