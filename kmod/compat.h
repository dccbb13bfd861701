/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: differences between the kernels kxfer builds against.
 *
 * Each shim names the upstream change it covers.  The KXFER_HAVE_*
 * symbols come from feature probes in kmod/Kbuild, which look at the
 * headers being built against rather than at version numbers, so that
 * distribution backports are honoured.
 */
#ifndef _KXFER_COMPAT_H
#define _KXFER_COMPAT_H

#include <linux/mm.h>

/*
 * bc292ab00f6c ("mm: introduce vma->vm_flags wrapper functions", v6.3)
 * made vm_flags read-only outside the helpers.
 */
#ifndef KXFER_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

#endif /* _KXFER_COMPAT_H */
