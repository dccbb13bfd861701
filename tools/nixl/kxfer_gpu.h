/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KXFER: GPU memory as a dma-buf, through the GPU driver loaded at run
 * time (libcuda.so.1, libhsa-runtime64.so.1), so that the plugin has no
 * build or load dependency on either: a node without a GPU runs it as
 * well, and says so only when VRAM is registered.
 */
#ifndef KXFER_NIXL_GPU_H
#define KXFER_NIXL_GPU_H

#include <cstdint>
#include <memory>
#include <string>

#include "nixl_types.h"

namespace kxfer_nixl {

/*
 * A registered range of GPU memory as a dma-buf, for
 * kxfer_pool_register_dmabuf(): bytes [offset, offset + len) of the
 * buffer @fd, page aligned, cover it; the range starts @skew bytes in.
 */
struct GpuDmabuf {
    int fd = -1;
    uint64_t offset = 0;
    uint64_t len = 0;
    uint64_t skew = 0;
    std::string pci; /* the GPU's PCI address, "dddd:bb:dd.f", or "" */
    std::string what; /* "CUDA device 0", for messages */
    bool hsa = false; /* closed with hsa_amd_portable_close_dmabuf() */
};

struct GpuConfig {
    std::string runtime; /* "auto", "cuda" or "rocm" */
    std::string cudaLib; /* dlopen()ed: a name or a path */
    std::string rocmLib;
};

class CudaDriver;
class RocmDriver;

/* The GPU runtimes of one backend.  Not thread-safe: the caller locks. */
class GpuDrivers {
public:
    explicit GpuDrivers(GpuConfig cfg);
    ~GpuDrivers();
    GpuDrivers(const GpuDrivers &) = delete;
    GpuDrivers &
    operator=(const GpuDrivers &) = delete;

    /*
     * Export [@addr, @addr + @len) of GPU memory as a dma-buf through the
     * driver that owns it (with "auto", CUDA's if libcuda.so.1 loads and
     * knows the address, else ROCm's).  The drivers are loaded on first
     * use.
     *
     * Return: NIXL_SUCCESS and @out; else NIXL_ERR_NOT_SUPPORTED (no
     * driver, a driver too old for dma-buf export, a GPU or kernel that
     * cannot export), NIXL_ERR_INVALID_PARAM (not GPU memory, or more
     * than one allocation) or NIXL_ERR_BACKEND, with @err saying which.
     */
    nixl_status_t
    exportDmabuf(uintptr_t addr, size_t len, GpuDmabuf &out, std::string &err);

    /* Close @buf's dma-buf (once it is imported, the pool holds its own
     * reference). */
    void
    close(GpuDmabuf &buf);

private:
    GpuConfig cfg_;
    std::unique_ptr<CudaDriver> cuda_;
    std::unique_ptr<RocmDriver> rocm_;
};

} // namespace kxfer_nixl

#endif
