/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: how far apart two PCI functions are (DESIGN §13, placement).
 *
 * Pure C: this header builds into the module and into the host-side unit
 * test (selftests/host/pcipath_test.c), through kernel_shim.h there.
 *
 * A device's place is its path from the root complex: the PCI functions
 * from the one on the root bus (a root port, a bridge, or the device
 * itself) down to the device, each as bus << 8 | devfn, under a domain
 * and root bus.  Two devices under one root complex are as far apart as
 * the links between them: up from one to the last function their paths
 * share, and down to the other (through the root complex if they share
 * none).  Devices under different root complexes have no PCIe path:
 * their traffic crosses the CPUs' interconnect, and only NUMA tells
 * them apart.
 */
#ifndef KXFER_PCIPATH_H
#define KXFER_PCIPATH_H

/* Levels kept of a path, from the root bus: deeper ones are dropped. */
#define KXFER_PCI_DEPTH		8

struct kxfer_pci_path {
	u32	pp_domain;
	u8	pp_root_bus;
	u8	pp_depth;		/* 0: no PCI device */
	u16	pp_id[KXFER_PCI_DEPTH];	/* bus << 8 | devfn, root first */
};

/*
 * kxfer_pci_hops - PCIe links between two devices
 *
 * Return: 0 for the same function, one per level between a device and
 * the last function the two paths share, and one more for crossing the
 * root complex when they share none (two devices behind one switch are
 * nearer than two on the root bus); or -1 when they have no PCIe path
 * (either has no place, or they are under different root complexes).
 */
static inline int kxfer_pci_hops(const struct kxfer_pci_path *a,
				 const struct kxfer_pci_path *b)
{
	unsigned int common = 0;

	if (!a->pp_depth || !b->pp_depth ||
	    a->pp_domain != b->pp_domain || a->pp_root_bus != b->pp_root_bus)
		return -1;
	while (common < a->pp_depth && common < b->pp_depth &&
	       a->pp_id[common] == b->pp_id[common])
		common++;
	if (!common)
		return a->pp_depth + b->pp_depth + 1;
	return a->pp_depth - common + b->pp_depth - common;
}

#endif
