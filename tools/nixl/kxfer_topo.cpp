// SPDX-License-Identifier: Apache-2.0
/*
 * KXFER: the RDMA device nearest a GPU (see kxfer_topo.h).
 */
#include "kxfer_topo.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <dirent.h>

namespace kxfer_nixl {

namespace {

/* The path a sysfs link resolves to, or "" */
std::string
resolve(const std::string &path) {
    char buf[PATH_MAX];

    if (!realpath(path.c_str(), buf)) {
        return "";
    }
    return buf;
}

std::vector<std::string>
components(const std::string &path) {
    std::vector<std::string> out;
    size_t i = 0;

    while (i < path.size()) {
        size_t j = path.find('/', i);
        if (j == std::string::npos) {
            j = path.size();
        }
        if (j > i) {
            out.push_back(path.substr(i, j - i));
        }
        i = j + 1;
    }
    return out;
}

std::vector<std::string>
entries(const std::string &dir) {
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());

    if (!d) {
        return out;
    }
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] != '.') {
            out.push_back(e->d_name);
        }
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

std::string
firstLine(const std::string &path) {
    std::ifstream f(path);
    std::string line;

    if (f && std::getline(f, line)) {
        const auto end = line.find_last_not_of(" \t\r\n");
        return end == std::string::npos ? "" : line.substr(0, end + 1);
    }
    return "";
}

/*
 * Where RDMA device @name sits: its device, else the device of its first
 * port's net device (soft-RoCE and iWARP devices have no parent of their
 * own), else of the net device rxe names in "parent".
 */
std::string
rdmaDevicePath(const std::string &sysfs, const std::string &name) {
    const std::string ib = sysfs + "/class/infiniband/" + name;
    std::string path = resolve(ib + "/device");

    if (!path.empty()) {
        return path;
    }
    for (const auto &port : entries(ib + "/ports")) {
        const std::string nd = firstLine(ib + "/ports/" + port + "/gid_attrs/ndevs/0");
        if (!nd.empty()) {
            path = resolve(sysfs + "/class/net/" + nd + "/device");
            if (!path.empty()) {
                return path;
            }
        }
    }
    const std::string parent = firstLine(ib + "/parent");
    return parent.empty() ? "" : resolve(sysfs + "/class/net/" + parent + "/device");
}

} // namespace

std::string
pciAddress(unsigned int domain, unsigned int bus, unsigned int dev, unsigned int fn) {
    char buf[32];

    snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff, dev & 0x1f,
             fn & 0x7);
    return buf;
}

std::string
nearestRdmaDevice(const std::string &sysfs, const std::string &pci, std::string &why) {
    const std::string gpu = resolve(sysfs + "/bus/pci/devices/" + pci);
    std::string best, bestPath;
    size_t bestShared = 0;

    if (gpu.empty()) {
        why = "PCI device " + pci + " is not in " + sysfs + "/bus/pci/devices";
        return "";
    }
    const auto g = components(gpu);
    for (const auto &name : entries(sysfs + "/class/infiniband")) {
        const std::string path = rdmaDevicePath(sysfs, name);
        if (path.empty()) {
            continue;
        }
        const auto c = components(path);
        size_t shared = 0;
        while (shared < g.size() && shared < c.size() && g[shared] == c[shared]) {
            shared++;
        }
        if (best.empty() || shared > bestShared) {
            best = name;
            bestPath = path;
            bestShared = shared;
        }
    }
    if (best.empty()) {
        why = "no RDMA device in " + sysfs + "/class/infiniband has a place in the PCI tree";
        return "";
    }
    std::string common;
    for (size_t i = 0; i < bestShared; i++) {
        common += "/" + g[i];
    }
    why = "RDMA device " + best + " (" + bestPath + ") and GPU " + pci + " (" + gpu +
        ") share " + (common.empty() ? "/" : common);
    return best;
}

} // namespace kxfer_nixl
