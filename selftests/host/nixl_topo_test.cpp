// SPDX-License-Identifier: Apache-2.0
/*
 * nixl_topo_test: the KXFER NIXL backend's choice of the RDMA device
 * nearest a GPU (tools/nixl/kxfer_topo.cpp), on sysfs trees made up in a
 * scratch folder: a PCIe switch with a GPU and a NIC behind it, a NIC on
 * another root port, a second root complex, soft-RoCE over a net device.
 * Output is TAP.
 */
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "kxfer_topo.h"

using kxfer_nixl::nearestRdmaDevice;
using kxfer_nixl::pciAddress;

namespace {

std::string root;

void
mkdirs(const std::string &path) {
    for (size_t i = 1; i <= path.size(); i++) {
        if (i == path.size() || path[i] == '/') {
            mkdir(path.substr(0, i).c_str(), 0755);
        }
    }
}

/* @link (relative to the tree) pointing at @target (relative too) */
bool
link(const std::string &link, const std::string &target) {
    const std::string l = root + "/" + link;
    mkdirs(l.substr(0, l.rfind('/')));
    return symlink((root + "/" + target).c_str(), l.c_str()) == 0;
}

bool
file(const std::string &path, const std::string &text) {
    const std::string p = root + "/" + path;
    mkdirs(p.substr(0, p.rfind('/')));
    FILE *f = fopen(p.c_str(), "w");
    if (!f) {
        return false;
    }
    fprintf(f, "%s\n", text.c_str());
    return fclose(f) == 0;
}

/* a PCI function at @path under devices/, listed in bus/pci/devices */
bool
pciDev(const std::string &path) {
    const std::string addr = path.substr(path.rfind('/') + 1);
    mkdirs(root + "/devices/" + path);
    return link("bus/pci/devices/" + addr, "devices/" + path);
}

bool
nic(const std::string &name, const std::string &path) {
    return pciDev(path) && link("class/infiniband/" + name + "/device", "devices/" + path);
}

/* soft-RoCE: no device of its own, a port over net device @nd at @path */
bool
softRoce(const std::string &name, const std::string &nd, const std::string &path) {
    return pciDev(path) && link("class/net/" + nd + "/device", "devices/" + path) &&
        file("class/infiniband/" + name + "/ports/1/gid_attrs/ndevs/0", nd) &&
        file("class/infiniband/" + name + "/parent", nd);
}

int failed;
int number;

void
check(const std::string &name, bool ok, const std::string &detail) {
    number++;
    if (!ok) {
        printf("# %s\n", detail.c_str());
        failed++;
    }
    printf("%sok %d %s\n", ok ? "" : "not ", number, name.c_str());
}

/* nearestRdmaDevice() on the tree is @want, and its reason mentions @reason */
void
expect(const std::string &name,
       const std::string &pci,
       const std::string &want,
       const std::string &reason) {
    std::string why;
    const std::string got = nearestRdmaDevice(root, pci, why);

    check(name, got == want && why.find(reason) != std::string::npos,
          "GPU " + pci + ": got '" + got + "' (" + why + "), expected '" + want +
              "' and a reason with '" + reason + "'");
}

bool
cleanup() {
    const std::string cmd = "rm -rf '" + root + "'";

    return root.empty() || system(cmd.c_str()) == 0;
}

/* a new, empty tree */
bool
fresh() {
    char tmpl[] = "/tmp/nixl_topo_test.XXXXXX";

    if (!cleanup() || !mkdtemp(tmpl)) {
        return false;
    }
    root = tmpl;
    return true;
}

} // namespace

int
main() {
    const std::string sw = "pci0000:00/0000:00:01.0/0000:01:00.0";

    printf("TAP version 13\n1..9\n");

    /* one root complex: a switch with a GPU and mlx5_0 behind it, mlx5_1
     * on another root port, soft-RoCE on a third; a second root complex
     * with a GPU and mlx5_2 */
    if (!fresh() || !pciDev(sw + "/0000:02:00.0/0000:03:00.0") ||
        !nic("mlx5_0", sw + "/0000:02:01.0/0000:04:00.0") ||
        !nic("mlx5_1", "pci0000:00/0000:00:02.0/0000:05:00.0") ||
        !softRoce("rxe0", "eth0", "pci0000:00/0000:00:03.0") ||
        !pciDev("pci0000:80/0000:80:01.0/0000:81:00.0") ||
        !nic("mlx5_2", "pci0000:80/0000:80:02.0/0000:82:00.0") ||
        !pciDev("pci0000:00/0000:00:04.0")) {
        printf("Bail out! cannot make a sysfs tree in /tmp\n");
        return 1;
    }
    expect("same_switch", "0000:03:00.0", "mlx5_0", "/0000:01:00.0");
    expect("same_root_complex", "0000:81:00.0", "mlx5_2", "pci0000:80");
    /* equally near mlx5_0, mlx5_1 and rxe0: the first name */
    expect("tie_first_name", "0000:00:04.0", "mlx5_0", "share /");
    expect("unknown_gpu", "0000:ff:00.0", "", "is not in");

    /* only soft-RoCE, placed by its net device */
    if (!fresh() || !softRoce("rxe0", "eth0", "pci0000:00/0000:00:03.0") ||
        !pciDev("pci0000:00/0000:00:05.0")) {
        printf("Bail out! cannot make a sysfs tree in /tmp\n");
        return 1;
    }
    expect("soft_roce_by_netdev", "0000:00:05.0", "rxe0", "/pci0000:00");
    /* and by "parent" when its port names no net device */
    if (!file("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "")) {
        return 1;
    }
    expect("soft_roce_by_parent", "0000:00:05.0", "rxe0", "/pci0000:00");

    /* no RDMA device has a place in the PCI tree */
    if (!fresh() || !pciDev("pci0000:00/0000:00:05.0") ||
        !file("class/infiniband/rxe0/parent", "eth9")) {
        return 1;
    }
    expect("no_placed_device", "0000:00:05.0", "", "no RDMA device");

    check("pci_address", pciAddress(0, 0x3b, 0, 0) == "0000:3b:00.0",
          "pciAddress(0, 0x3b, 0, 0) is " + pciAddress(0, 0x3b, 0, 0));
    check("pci_address_parts", pciAddress(0x10, 0xc1, 0x1f, 7) == "0010:c1:1f.7",
          "pciAddress(0x10, 0xc1, 0x1f, 7) is " + pciAddress(0x10, 0xc1, 0x1f, 7));

    cleanup();
    return failed ? 1 : 0;
}
