// SPDX-License-Identifier: Apache-2.0
/*
 * KXFER: GPU memory as a dma-buf (see kxfer_gpu.h).
 *
 * The few calls of each driver API are declared here by hand, with the
 * values of their public headers (cuda.h, hsa.h, hsa_ext_amd.h), and
 * resolved with dlsym(): the plugin builds and loads without either.
 */
#include "kxfer_gpu.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <utility>

#include <dlfcn.h>
#include <unistd.h>

#include "common/nixl_log.h"
#include "kxfer_topo.h"

namespace kxfer_nixl {

namespace {

std::string
hex(uintptr_t v) {
    char buf[2 + 2 * sizeof(v) + 1];

    snprintf(buf, sizeof(buf), "0x%jx", static_cast<uintmax_t>(v));
    return buf;
}

uintptr_t
pageSize() {
    return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
}

/* The size of a dma-buf (its file reports it to SEEK_END), or 0 */
uint64_t
dmabufSize(int fd) {
    const off_t end = lseek(fd, 0, SEEK_END);

    return end < 0 ? 0 : static_cast<uint64_t>(end);
}

} // namespace

/* ---------------------------------------------------------------------- */
/* CUDA: libcuda.so.1, the driver API                                      */
/* ---------------------------------------------------------------------- */

class CudaDriver {
public:
    explicit CudaDriver(const std::string &lib);

    bool
    loaded() const {
        return ok_;
    }

    const std::string &
    loadError() const {
        return loadErr_;
    }

    /* as GpuDrivers::exportDmabuf(); @mine is false when the driver does
     * not know @addr (another runtime may) */
    nixl_status_t
    exportDmabuf(uintptr_t addr, size_t len, GpuDmabuf &out, std::string &err, bool &mine);

private:
    /* cuda.h */
    using CUresult = int;
    using CUdevice = int;
    using CUcontext = void *;
    using CUdeviceptr = unsigned long long;
    static constexpr CUresult kSuccess = 0;
    static constexpr CUresult kErrInvalidValue = 1;
    static constexpr CUresult kErrStubLibrary = 34;
    static constexpr CUresult kErrNoDevice = 100;
    static constexpr CUresult kErrNotSupported = 801;
    static constexpr int kPtrContext = 1; /* CU_POINTER_ATTRIBUTE_CONTEXT */
    static constexpr int kPtrMemoryType = 2;
    static constexpr int kPtrIsManaged = 8;
    static constexpr int kPtrDeviceOrdinal = 9;
    static constexpr unsigned int kMemoryTypeDevice = 2; /* CU_MEMORYTYPE_DEVICE */
    static constexpr int kAttrPciBus = 33; /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID */
    static constexpr int kAttrPciDevice = 34;
    static constexpr int kAttrPciDomain = 50;
    static constexpr int kAttrDmaBuf = 124; /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
    static constexpr int kHandleDmaBufFd = 1; /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */

    CUresult (*cuInit_)(unsigned int) = nullptr;
    CUresult (*cuDriverGetVersion_)(int *) = nullptr;
    CUresult (*cuGetErrorName_)(CUresult, const char **) = nullptr;
    CUresult (*cuPointerGetAttribute_)(void *, int, CUdeviceptr) = nullptr;
    CUresult (*cuMemGetAddressRange_)(CUdeviceptr *, size_t *, CUdeviceptr) = nullptr;
    CUresult (*cuDeviceGet_)(CUdevice *, int) = nullptr;
    CUresult (*cuDeviceGetAttribute_)(int *, int, CUdevice) = nullptr;
    CUresult (*cuCtxPushCurrent_)(CUcontext) = nullptr;
    CUresult (*cuCtxPopCurrent_)(CUcontext *) = nullptr;
    CUresult (*cuMemGetHandleForAddressRange_)(void *, CUdeviceptr, size_t, int,
                                               unsigned long long) = nullptr;

    std::string lib_;
    std::string version_;
    bool ok_ = false;
    std::string loadErr_;

    std::string
    name(CUresult r) const;
    template<typename F>
    bool
    sym(void *h, const char *s, F &f);
    nixl_status_t
    device(int ordinal, GpuDmabuf &out, std::string &err);
    nixl_status_t
    exportInContext(uintptr_t addr, size_t len, GpuDmabuf &out, std::string &err, int &fd);
};

template<typename F>
bool
CudaDriver::sym(void *h, const char *s, F &f) {
    f = reinterpret_cast<F>(dlsym(h, s));
    return f != nullptr;
}

std::string
CudaDriver::name(CUresult r) const {
    const char *s = nullptr;

    if (cuGetErrorName_ && cuGetErrorName_(r, &s) == kSuccess && s) {
        return s;
    }
    return "CUresult " + std::to_string(r);
}

CudaDriver::CudaDriver(const std::string &lib) : lib_(lib) {
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    int v = 0;

    if (!h) {
        const char *e = dlerror();
        loadErr_ = "cannot load the CUDA driver " + lib + ": " + (e ? e : "?") +
            " (no NVIDIA driver on this node; the backend parameter cuda_lib names "
            "another library)";
        return;
    }
    /* the library is never closed: the CUDA driver does not unload */
    if (!sym(h, "cuInit", cuInit_) || !sym(h, "cuDriverGetVersion", cuDriverGetVersion_) ||
        !sym(h, "cuGetErrorName", cuGetErrorName_) ||
        !sym(h, "cuPointerGetAttribute", cuPointerGetAttribute_) ||
        !sym(h, "cuMemGetAddressRange_v2", cuMemGetAddressRange_) ||
        !sym(h, "cuDeviceGet", cuDeviceGet_) ||
        !sym(h, "cuDeviceGetAttribute", cuDeviceGetAttribute_) ||
        !sym(h, "cuCtxPushCurrent_v2", cuCtxPushCurrent_) ||
        !sym(h, "cuCtxPopCurrent_v2", cuCtxPopCurrent_)) {
        const char *e = dlerror();
        loadErr_ = lib + " is not a CUDA driver this plugin can use: " +
            (e ? e : "a symbol is missing");
        return;
    }
    if (cuDriverGetVersion_(&v) == kSuccess) {
        version_ = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    }
    if (!sym(h, "cuMemGetHandleForAddressRange", cuMemGetHandleForAddressRange_)) {
        loadErr_ = "the CUDA driver " + lib + " (CUDA " + version_ +
            ") is too old: it has no cuMemGetHandleForAddressRange, which exports GPU "
            "memory as a dma-buf (CUDA 11.7 and later, driver 515 and later)";
        return;
    }
    const CUresult r = cuInit_(0);
    if (r != kSuccess) {
        loadErr_ = "cuInit of " + lib + " failed: " + name(r) +
            (r == kErrStubLibrary ? " (that is the CUDA toolkit's stub, not the driver)" :
             r == kErrNoDevice    ? " (no GPU)" :
                                    "");
        return;
    }
    ok_ = true;
    NIXL_INFO << "KXFER: CUDA driver " << version_ << " (" << lib << ") for VRAM";
}

/* The GPU's PCI address and whether it exports dma-bufs */
nixl_status_t
CudaDriver::device(int ordinal, GpuDmabuf &out, std::string &err) {
    CUdevice dev;
    int dmabuf = 0, domain = 0, bus = 0, slot = 0;
    CUresult r;

    out.what = "CUDA device " + std::to_string(ordinal);
    r = cuDeviceGet_(&dev, ordinal);
    if (r != kSuccess) {
        err = "cuDeviceGet(" + std::to_string(ordinal) + "): " + name(r);
        return NIXL_ERR_BACKEND;
    }
    if (cuDeviceGetAttribute_(&domain, kAttrPciDomain, dev) == kSuccess &&
        cuDeviceGetAttribute_(&bus, kAttrPciBus, dev) == kSuccess &&
        cuDeviceGetAttribute_(&slot, kAttrPciDevice, dev) == kSuccess) {
        out.pci = pciAddress(domain, bus, slot, 0);
        out.what += " (" + out.pci + ")";
    }
    r = cuDeviceGetAttribute_(&dmabuf, kAttrDmaBuf, dev);
    if (r != kSuccess) {
        err = "the CUDA driver (CUDA " + version_ + ") does not know "
              "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (" + name(r) + "): it is too old to "
              "export GPU memory as a dma-buf";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    if (!dmabuf) {
        err = out.what + " cannot export its memory as a dma-buf "
              "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: dma-buf export needs NVIDIA's "
              "open kernel modules and a kernel with dma-buf peer-to-peer support), so no "
              "NIC can reach it peer-to-peer";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    return NIXL_SUCCESS;
}

/* The dma-buf of the pages around the range; the allocation's context
 * is current.  @fd is set on success. */
nixl_status_t
CudaDriver::exportInContext(uintptr_t addr,
                            size_t len,
                            GpuDmabuf &out,
                            std::string &err,
                            int &fd) {
    const uintptr_t page = pageSize();
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r;

    r = cuMemGetAddressRange_(&base, &size, addr);
    if (r != kSuccess) {
        err = "cuMemGetAddressRange of " + hex(addr) + ": " + name(r);
        return NIXL_ERR_BACKEND;
    }
    if (addr + len > base + size) {
        err = "[" + hex(addr) + ", +" + std::to_string(len) + ") is not within one CUDA "
              "allocation (that at " + hex(base) + " has " + std::to_string(size) +
              " bytes): register each allocation on its own";
        return NIXL_ERR_INVALID_PARAM;
    }
    /* the driver exports whole host pages: the covering range */
    const uintptr_t start = addr & ~(page - 1);
    const uintptr_t end = (addr + len + page - 1) & ~(page - 1);
    r = cuMemGetHandleForAddressRange_(&fd, start, end - start, kHandleDmaBufFd, 0);
    if (r != kSuccess) {
        err = "the CUDA driver cannot export [" + hex(start) + ", " + hex(end) + ") of " +
            out.what + " as a dma-buf: cuMemGetHandleForAddressRange: " + name(r) +
            (r == kErrNotSupported ? " (the driver or the kernel cannot share GPU memory "
                                     "through dma-buf here)" :
             r == kErrInvalidValue ? " (the range is not page aligned device memory)" :
                                     "");
        return r == kErrNotSupported ? NIXL_ERR_NOT_SUPPORTED : NIXL_ERR_BACKEND;
    }
    out.offset = 0;
    out.len = end - start;
    out.skew = addr - start;
    return NIXL_SUCCESS;
}

nixl_status_t
CudaDriver::exportDmabuf(uintptr_t addr,
                         size_t len,
                         GpuDmabuf &out,
                         std::string &err,
                         bool &mine) {
    unsigned int type = 0, managed = 0;
    int ordinal = -1, fd = -1;
    CUcontext ctx = nullptr, popped = nullptr;
    CUresult r;

    mine = false;
    r = cuPointerGetAttribute_(&type, kPtrMemoryType, addr);
    if (r != kSuccess) {
        err = "the CUDA driver does not know address " + hex(addr) + " (" + name(r) + ")";
        return NIXL_ERR_INVALID_PARAM;
    }
    mine = true;
    if (type != kMemoryTypeDevice) {
        err = hex(addr) + " is host memory to the CUDA driver: register it as DRAM";
        return NIXL_ERR_INVALID_PARAM;
    }
    if (cuPointerGetAttribute_(&managed, kPtrIsManaged, addr) == kSuccess && managed) {
        err = hex(addr) + " is CUDA managed memory, which cannot be exported as a dma-buf";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    r = cuPointerGetAttribute_(&ordinal, kPtrDeviceOrdinal, addr);
    if (r == kSuccess) {
        r = cuPointerGetAttribute_(&ctx, kPtrContext, addr);
    }
    if (r != kSuccess) {
        err = "cannot query CUDA memory at " + hex(addr) + ": " + name(r);
        return NIXL_ERR_BACKEND;
    }
    nixl_status_t status = device(ordinal, out, err);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    /* the rest in the allocation's context, whatever the calling
     * thread's is */
    r = cuCtxPushCurrent_(ctx);
    if (r != kSuccess) {
        err = "cuCtxPushCurrent for " + out.what + ": " + name(r);
        return NIXL_ERR_BACKEND;
    }
    status = exportInContext(addr, len, out, err, fd);
    (void)cuCtxPopCurrent_(&popped);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    out.fd = fd;
    out.hsa = false;
    return NIXL_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* ROCm: libhsa-runtime64.so.1, the HSA runtime and its AMD extension      */
/* ---------------------------------------------------------------------- */

class RocmDriver {
public:
    explicit RocmDriver(const std::string &lib);
    ~RocmDriver();

    bool
    loaded() const {
        return ok_;
    }

    const std::string &
    loadError() const {
        return loadErr_;
    }

    nixl_status_t
    exportDmabuf(uintptr_t addr, size_t len, GpuDmabuf &out, std::string &err, bool &mine);

    void
    close(int fd) {
        if (closeDmabuf_) {
            (void)closeDmabuf_(fd);
        }
    }

private:
    /* hsa.h, hsa_ext_amd.h */
    using hsa_status_t = int;
    struct hsa_agent_t {
        uint64_t handle;
    };
    struct PointerInfo { /* hsa_amd_pointer_info_t, as far as used */
        uint32_t size;
        int type;
        void *agentBaseAddress;
        void *hostBaseAddress;
        size_t sizeInBytes;
        void *userData;
        hsa_agent_t agentOwner;
    };
    static constexpr hsa_status_t kSuccess = 0;
    static constexpr int kPointerTypeHsa = 1; /* HSA_EXT_POINTER_TYPE_HSA */
    static constexpr int kAgentInfoDevice = 17; /* HSA_AGENT_INFO_DEVICE */
    static constexpr int kDeviceTypeGpu = 1; /* HSA_DEVICE_TYPE_GPU */
    static constexpr int kAgentInfoBdfid = 0xA006; /* HSA_AMD_AGENT_INFO_BDFID */
    static constexpr int kAgentInfoDomain = 0xA00F; /* HSA_AMD_AGENT_INFO_DOMAIN */

    hsa_status_t (*init_)() = nullptr;
    hsa_status_t (*shutDown_)() = nullptr;
    hsa_status_t (*statusString_)(hsa_status_t, const char **) = nullptr;
    hsa_status_t (*pointerInfo_)(const void *, PointerInfo *, void *(*)(size_t), uint32_t *,
                                 hsa_agent_t **) = nullptr;
    hsa_status_t (*agentGetInfo_)(hsa_agent_t, int, void *) = nullptr;
    hsa_status_t (*exportDmabuf_)(const void *, size_t, int *, uint64_t *) = nullptr;
    hsa_status_t (*closeDmabuf_)(int) = nullptr;

    bool ok_ = false;
    std::string loadErr_;

    std::string
    name(hsa_status_t s) const;
    template<typename F>
    bool
    sym(void *h, const char *s, F &f);
};

template<typename F>
bool
RocmDriver::sym(void *h, const char *s, F &f) {
    f = reinterpret_cast<F>(dlsym(h, s));
    return f != nullptr;
}

std::string
RocmDriver::name(hsa_status_t s) const {
    const char *str = nullptr;

    if (statusString_ && statusString_(s, &str) == kSuccess && str) {
        return str;
    }
    return "hsa_status_t " + hex(static_cast<uintptr_t>(s));
}

RocmDriver::RocmDriver(const std::string &lib) {
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        const char *e = dlerror();
        loadErr_ = "cannot load the ROCm runtime " + lib + ": " + (e ? e : "?") +
            " (no ROCm on this node; the backend parameter rocm_lib names another library)";
        return;
    }
    if (!sym(h, "hsa_init", init_) || !sym(h, "hsa_shut_down", shutDown_) ||
        !sym(h, "hsa_status_string", statusString_) ||
        !sym(h, "hsa_amd_pointer_info", pointerInfo_) ||
        !sym(h, "hsa_agent_get_info", agentGetInfo_)) {
        const char *e = dlerror();
        loadErr_ = lib + " is not an HSA runtime this plugin can use: " +
            (e ? e : "a symbol is missing");
        return;
    }
    if (!sym(h, "hsa_amd_portable_export_dmabuf", exportDmabuf_) ||
        !sym(h, "hsa_amd_portable_close_dmabuf", closeDmabuf_)) {
        loadErr_ = "the ROCm runtime " + lib + " is too old: it has no "
                   "hsa_amd_portable_export_dmabuf, which exports GPU memory as a dma-buf "
                   "(ROCm 5.6 and later)";
        return;
    }
    const hsa_status_t s = init_();
    if (s != kSuccess) {
        loadErr_ = "hsa_init of " + lib + " failed: " + name(s);
        return;
    }
    ok_ = true;
    NIXL_INFO << "KXFER: ROCm runtime (" << lib << ") for VRAM";
}

RocmDriver::~RocmDriver() {
    if (ok_) {
        (void)shutDown_(); /* hsa_init() counts its callers */
    }
}

nixl_status_t
RocmDriver::exportDmabuf(uintptr_t addr,
                         size_t len,
                         GpuDmabuf &out,
                         std::string &err,
                         bool &mine) {
    const uintptr_t page = pageSize();
    const void *p = reinterpret_cast<const void *>(addr);
    PointerInfo info;
    int devType = -1, fd = -1;
    uint32_t bdf = 0, domain = 0;
    uint64_t off = 0;
    hsa_status_t s;

    mine = false;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    s = pointerInfo_(p, &info, nullptr, nullptr, nullptr);
    if (s != kSuccess || info.type != kPointerTypeHsa) {
        err = "the ROCm runtime does not know address " + hex(addr) +
            (s != kSuccess ? " (" + name(s) + ")" : "");
        return NIXL_ERR_INVALID_PARAM;
    }
    mine = true;
    out.what = "ROCm GPU";
    if (info.size >= offsetof(PointerInfo, agentOwner) + sizeof(info.agentOwner)) {
        if (agentGetInfo_(info.agentOwner, kAgentInfoDevice, &devType) == kSuccess &&
            devType != kDeviceTypeGpu) {
            err = hex(addr) + " is host memory to the ROCm runtime: register it as DRAM";
            return NIXL_ERR_INVALID_PARAM;
        }
        if (agentGetInfo_(info.agentOwner, kAgentInfoBdfid, &bdf) == kSuccess &&
            agentGetInfo_(info.agentOwner, kAgentInfoDomain, &domain) == kSuccess) {
            out.pci = pciAddress(domain, bdf >> 8, (bdf >> 3) & 0x1f, bdf & 7);
            out.what += " " + out.pci;
        }
    }
    const uintptr_t base = reinterpret_cast<uintptr_t>(info.agentBaseAddress);
    if (addr + len > base + info.sizeInBytes) {
        err = "[" + hex(addr) + ", +" + std::to_string(len) + ") is not within one ROCm "
              "allocation (that at " + hex(base) + " has " + std::to_string(info.sizeInBytes) +
              " bytes): register each allocation on its own";
        return NIXL_ERR_INVALID_PARAM;
    }
    s = exportDmabuf_(p, len, &fd, &off);
    if (s != kSuccess) {
        err = "the ROCm runtime cannot export [" + hex(addr) + ", +" + std::to_string(len) +
            ") of " + out.what + " as a dma-buf: hsa_amd_portable_export_dmabuf: " + name(s);
        return NIXL_ERR_NOT_SUPPORTED;
    }
    /* the buffer is the allocation's; take the pages around the range */
    const uint64_t first = off & ~uint64_t(page - 1);
    const uint64_t last = (off + len + page - 1) & ~uint64_t(page - 1);
    if (last > dmabufSize(fd)) {
        err = "the dma-buf of " + out.what + " ends before the page after the range (" +
            std::to_string(dmabufSize(fd)) + " bytes, range at " + std::to_string(off) + ")";
        (void)closeDmabuf_(fd);
        return NIXL_ERR_BACKEND;
    }
    out.fd = fd;
    out.offset = first;
    out.len = last - first;
    out.skew = off - first;
    out.hsa = true;
    return NIXL_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Both                                                                    */
/* ---------------------------------------------------------------------- */

GpuDrivers::GpuDrivers(GpuConfig cfg) : cfg_(std::move(cfg)) {}

GpuDrivers::~GpuDrivers() = default;

nixl_status_t
GpuDrivers::exportDmabuf(uintptr_t addr, size_t len, GpuDmabuf &out, std::string &err) {
    const bool tryCuda = cfg_.runtime != "rocm";
    const bool tryRocm = cfg_.runtime != "cuda";
    std::string cudaErr, rocmErr;
    nixl_status_t status;
    bool mine, anyLoaded = false;

    if (tryCuda) {
        if (!cuda_) {
            cuda_ = std::make_unique<CudaDriver>(cfg_.cudaLib);
        }
        if (cuda_->loaded()) {
            anyLoaded = true;
            status = cuda_->exportDmabuf(addr, len, out, cudaErr, mine);
            if (status == NIXL_SUCCESS || mine || !tryRocm) {
                err = cudaErr;
                return status;
            }
        } else {
            cudaErr = cuda_->loadError();
        }
    }
    if (tryRocm) {
        if (!rocm_) {
            rocm_ = std::make_unique<RocmDriver>(cfg_.rocmLib);
        }
        if (rocm_->loaded()) {
            anyLoaded = true;
            status = rocm_->exportDmabuf(addr, len, out, rocmErr, mine);
            if (status == NIXL_SUCCESS || mine) {
                err = rocmErr;
                return status;
            }
        } else {
            rocmErr = rocm_->loadError();
        }
    }
    err = !tryRocm ? cudaErr : !tryCuda ? rocmErr : "CUDA: " + cudaErr + "; ROCm: " + rocmErr;
    return anyLoaded ? NIXL_ERR_INVALID_PARAM : NIXL_ERR_NOT_SUPPORTED;
}

void
GpuDrivers::close(GpuDmabuf &buf) {
    if (buf.fd < 0) {
        return;
    }
    if (buf.hsa && rocm_) {
        rocm_->close(buf.fd);
    } else {
        ::close(buf.fd);
    }
    buf.fd = -1;
}

} // namespace kxfer_nixl
