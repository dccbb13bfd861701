// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: where a device sits on PCIe, to place jobs on the rail nearest
 * their memory (DESIGN §13, placement; the arithmetic is in pcipath.h).
 */
#include <linux/pci.h>
#include <linux/netdevice.h>
#include <rdma/ib_cache.h>

#include "kxfer.h"

/* Levels walked up from a device: beyond any real PCIe hierarchy. */
#define KXFER_PCI_WALK		32

/**
 * kxfer_pci_path_of - the PCIe place of a device
 * @dev: the device: a PCI function, or below one (a net device, a
 *	virtio device); %NULL for none
 * @path: out; depth 0 if no PCI function is above @dev
 */
void kxfer_pci_path_of(struct device *dev, struct kxfer_pci_path *path)
{
	struct pci_dev *pdev, *root = NULL;
	u16 ids[KXFER_PCI_WALK];
	unsigned int n = 0, i;

	memset(path, 0, sizeof(*path));
	while (dev && !dev_is_pci(dev))
		dev = dev->parent;
	if (!dev)
		return;
	for (pdev = to_pci_dev(dev); pdev && n < KXFER_PCI_WALK;
	     pdev = pci_upstream_bridge(pdev)) {
		ids[n++] = pci_dev_id(pdev);
		root = pdev;
	}
	path->pp_domain = pci_domain_nr(root->bus);
	path->pp_root_bus = root->bus->number;
	path->pp_depth = min_t(unsigned int, n, KXFER_PCI_DEPTH);
	for (i = 0; i < path->pp_depth; i++)
		path->pp_id[i] = ids[n - 1 - i];
}

/**
 * kxfer_ibdev_path - the PCIe place of an RDMA device's port
 * @ibdev: the device
 * @port: its port
 * @path: out; depth 0 if it has none
 *
 * A NIC's PCI function; for a device without one of its own (soft-RoCE,
 * iWARP over a net device), the function of the port's net device.
 */
void kxfer_ibdev_path(struct ib_device *ibdev, u32 port,
		      struct kxfer_pci_path *path)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;

	kxfer_pci_path_of(ibdev->dev.parent, path);
	if (path->pp_depth || !rdma_is_port_valid(ibdev, port))
		return;
	attr = rdma_get_gid_attr(ibdev, port, 0);
	if (IS_ERR(attr))
		return;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR_OR_NULL(ndev))
		kxfer_pci_path_of(ndev->dev.parent, path);
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
}

/**
 * kxfer_near_find - the PCIe place a pool's memory is near
 * @name: a PCI function's address, "dddd:bb:dd.f" or "bb:dd.f" (a
 *	GPU's, say), or the name of an RDMA device
 * @path: out
 * @extack: why not
 *
 * Return: 0, %-EINVAL (a PCI address out of range), or %-ENODEV (no such
 * device, or it has no PCIe place).  May sleep.
 */
int kxfer_near_find(const char *name, struct kxfer_pci_path *path,
		    struct netlink_ext_ack *extack)
{
	unsigned int dom = 0, bus, slot, fn;
	struct kxfer_device *kd;
	struct pci_dev *pdev;
	char end;

	if (sscanf(name, "%x:%x:%x.%x%c", &dom, &bus, &slot, &fn, &end) == 4 ||
	    sscanf(name, "%x:%x.%x%c", &bus, &slot, &fn, &end) == 3) {
		if (dom > 0xffff || bus > 0xff || slot > 0x1f || fn > 7) {
			NL_SET_ERR_MSG(extack, "near: not a PCI address (dddd:bb:dd.f)");
			return -EINVAL;
		}
		pdev = pci_get_domain_bus_and_slot(dom, bus, PCI_DEVFN(slot, fn));
		if (!pdev) {
			NL_SET_ERR_MSG(extack, "near: no such PCI device");
			return -ENODEV;
		}
		kxfer_pci_path_of(&pdev->dev, path);
		pci_dev_put(pdev);
		return 0;
	}
	kd = kxfer_device_get_by_name(name);
	if (!kd) {
		NL_SET_ERR_MSG(extack, "near: no such PCI address or RDMA device");
		return -ENODEV;
	}
	kxfer_ibdev_path(kd->kd_ibdev, rdma_start_port(kd->kd_ibdev), path);
	kxfer_device_put(kd);
	if (!path->pp_depth) {
		NL_SET_ERR_MSG(extack, "near: the RDMA device has no PCI place");
		return -ENODEV;
	}
	return 0;
}
