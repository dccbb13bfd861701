// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcipath_test: host-side unit tests of kmod/pcipath.h, how many PCIe
 * links apart two devices are (DESIGN §13, placement).  The guests'
 * rails tests place jobs by it on a real (QEMU) PCI hierarchy; here every
 * shape of one, including those no guest has: switches, several root
 * ports, domains.
 */
#include <stdarg.h>
#include <string.h>

#include "kernel_shim.h"
#include "pcipath.h"

#include "kselftest_harness.h"
#include "../harness_main.h"

/* path(DOMAIN, ROOT_BUS, N, ids...): a device N levels below the root bus */
static struct kxfer_pci_path path(u32 domain, u8 root_bus, unsigned int n, ...)
{
	struct kxfer_pci_path p;
	unsigned int i;
	va_list ap;

	memset(&p, 0, sizeof(p));
	p.pp_domain = domain;
	p.pp_root_bus = root_bus;
	p.pp_depth = n;
	va_start(ap, n);
	for (i = 0; i < n; i++)
		p.pp_id[i] = va_arg(ap, unsigned int);
	va_end(ap);
	return p;
}

/* hops both ways: the distance has no direction */
static int hops(const struct kxfer_pci_path *a, const struct kxfer_pci_path *b)
{
	int ab = kxfer_pci_hops(a, b), ba = kxfer_pci_hops(b, a);

	return ab == ba ? ab : -100;
}

/*
 * The rig's guests (vm-run --nics 2): eth0 at 00:04.0 on the root
 * complex; behind root port 00:05.0, a switch (01:00.0 up, 02:00.0 and
 * 02:01.0 down) with eth1 at 03:00.0 and the GPU stand-in at 04:00.0.
 */
TEST(rig_topology)
{
	struct kxfer_pci_path eth0 = path(0, 0, 1, 0x0020);
	struct kxfer_pci_path eth1 = path(0, 0, 4, 0x0028, 0x0100, 0x0200, 0x0300);
	struct kxfer_pci_path gpu = path(0, 0, 4, 0x0028, 0x0100, 0x0208, 0x0400);

	EXPECT_EQ(0, hops(&eth0, &eth0));
	EXPECT_EQ(0, hops(&gpu, &gpu));
	/* through the switch: up two, down two */
	EXPECT_EQ(4, hops(&gpu, &eth1));
	/* across the root complex: four up, one down, one for the complex */
	EXPECT_EQ(6, hops(&gpu, &eth0));
	EXPECT_EQ(6, hops(&eth1, &eth0));
}

/* A GPU server: per root port a switch with a GPU and a NIC below it. */
TEST(same_switch_before_root_complex)
{
	/*
	 * root port 00:01.0 (bus 1), switch up 01:00.0 (bus 2), down ports
	 * 02:00.0 (bus 3, GPU 03:00.0) and 02:01.0 (bus 4, NIC 04:00.0)
	 */
	struct kxfer_pci_path gpu = path(0, 0, 4, 0x0008, 0x0100, 0x0200, 0x0300);
	struct kxfer_pci_path nic_switch = path(0, 0, 4, 0x0008, 0x0100, 0x0208, 0x0400);
	/* a NIC behind another root port 00:02.0 */
	struct kxfer_pci_path nic_other = path(0, 0, 2, 0x0010, 0x0500);

	EXPECT_EQ(4, hops(&gpu, &nic_switch));
	EXPECT_EQ(7, hops(&gpu, &nic_other));
	EXPECT_LT(hops(&gpu, &nic_switch), hops(&gpu, &nic_other));
}

/* A device and the bridge above it are one level apart. */
TEST(bridge_and_below)
{
	struct kxfer_pci_path br = path(0, 0, 1, 0x0080);
	struct kxfer_pci_path dev = path(0, 0, 2, 0x0080, 0x0108);

	EXPECT_EQ(1, hops(&br, &dev));
}

/* No PCIe path: no place, another domain, another root bus. */
TEST(no_path)
{
	struct kxfer_pci_path none = path(0, 0, 0);
	struct kxfer_pci_path a = path(0, 0, 1, 0x0003);
	struct kxfer_pci_path other_domain = path(1, 0, 1, 0x0003);
	struct kxfer_pci_path other_root = path(0, 0x80, 1, 0x8003);

	EXPECT_EQ(-1, hops(&none, &none));
	EXPECT_EQ(-1, hops(&none, &a));
	EXPECT_EQ(-1, hops(&a, &other_domain));
	EXPECT_EQ(-1, hops(&a, &other_root));
}

/* The deepest path kept: KXFER_PCI_DEPTH levels, all compared. */
TEST(deepest)
{
	struct kxfer_pci_path a = path(0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8);
	struct kxfer_pci_path b = path(0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 9);
	struct kxfer_pci_path c = path(0, 0, 8, 9, 2, 3, 4, 5, 6, 7, 8);

	EXPECT_EQ(8, KXFER_PCI_DEPTH);
	EXPECT_EQ(2, hops(&a, &b));
	EXPECT_EQ(17, hops(&a, &c));
}

KXFER_HARNESS_MAIN
