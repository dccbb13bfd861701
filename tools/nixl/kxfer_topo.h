/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KXFER: the RDMA device nearest a GPU, from the PCIe topology in sysfs.
 * No NIXL in here, so that a host unit test builds it alone
 * (selftests/host/nixl_topo_test.cpp).
 */
#ifndef KXFER_NIXL_TOPO_H
#define KXFER_NIXL_TOPO_H

#include <string>

namespace kxfer_nixl {

/*
 * The RDMA device (a name in SYSFS/class/infiniband) whose device sits
 * nearest the PCI function @pci ("dddd:bb:dd.f", lower case hex): the one
 * whose sysfs device path shares the most components with @pci's, that
 * is, behind the same PCIe switch before one behind the same root port,
 * before one behind the same root complex; ties go to the first name in
 * order.  A device without a PCI device of its own (soft-RoCE, iWARP over
 * a net device) is placed where its net device is.  @sysfs is "/sys"
 * except in tests.
 *
 * Return: the device's name, and in @why how it was chosen; "" when
 * @pci is not in sysfs or no RDMA device has a place in it, and @why
 * says which.
 */
std::string
nearestRdmaDevice(const std::string &sysfs, const std::string &pci, std::string &why);

/* "dddd:bb:dd.f" from its parts, lower case */
std::string
pciAddress(unsigned int domain, unsigned int bus, unsigned int dev, unsigned int fn);

} // namespace kxfer_nixl

#endif
