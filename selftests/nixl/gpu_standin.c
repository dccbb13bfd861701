// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_standin: a test-only stand-in for the GPU drivers the KXFER NIXL
 * backend loads for VRAM, libcuda.so.1 (CUDA's driver API) and
 * libhsa-runtime64.so.1 (ROCm's HSA runtime), so that the whole VRAM path
 * runs without a GPU: NIXL's VRAM registration, the plugin, the driver's
 * dma-buf export, KXFER_IOC_POOL_DMABUF, the kernel, the wire and the
 * bytes in the other agent.  Never installed; the tests put its folder
 * in LD_LIBRARY_PATH (or name it in the backend parameters cuda_lib and
 * rocm_lib).
 *
 * "GPU memory" is host memory: each allocation is a memfd, mapped at the
 * address the allocation returns, and a dma-buf of it is a udmabuf over
 * the memfd's pages (/dev/udmabuf: Debian's 6.12 has it, its 6.1 does
 * not, and there the export fails as a driver's does on a kernel that
 * cannot share GPU memory: CUDA_ERROR_NOT_SUPPORTED).  kxfer imports
 * such a buffer through its pages; what a real GPU needs instead, an
 * RDMA device that does DMA importing it (ib_umem_dmabuf_get_pinned()),
 * only a real GPU and NIC exercise (Documentation/nixl.rst).
 *
 * It implements the calls the plugin makes (tools/nixl/kxfer_gpu.cpp),
 * with the same arguments, results and errors as the real ones for what
 * the plugin asks, and those a test needs to have "GPU memory" to
 * register and to fill and read it, as a CUDA program would: cuInit,
 * cuDeviceGet, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuMemAlloc,
 * cuMemFree, cuMemcpyHtoD, cuMemcpyDtoH.  The HSA half serves the same
 * allocations (the same file loaded under both names is one library).
 *
 * Built twice (selftests/nixl/Makefile): build/nixl/standin/ has the
 * whole of it, build/nixl/standin-old/ a driver too old to export
 * dma-bufs (no cuMemGetHandleForAddressRange, no
 * hsa_amd_portable_export_dmabuf: -DSTANDIN_OLD).
 *
 * Environment:
 *   KXFER_STANDIN_PCI        the GPU's PCI address, dddd:bb:dd.f
 *                            (default 0000:ff:00.0, in no sysfs)
 *   KXFER_STANDIN_NO_DMABUF  1: the GPU cannot export dma-bufs
 *                            (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * cuda.h, as far as used; its types are plain C here: CUresult and
 * CUdevice are int, CUcontext is void *, CUdeviceptr unsigned long long.
 * Every function not static is the drivers' API.
 */

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NOT_SUPPORTED = 801,
};

enum {
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
};

enum {
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
	CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
};

#define CU_MEMORYTYPE_DEVICE 2u
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

/* ---- the device, its context, its allocations ---------------------------- */

struct alloc {
	uintptr_t base;
	size_t size;		/* as asked */
	size_t maplen;		/* pages */
	int memfd;
	struct alloc *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static bool initialized;
static int primary_ctx;			/* the one device's one context */
#define CTX_DEPTH 16
static __thread void *ctx_stack[CTX_DEPTH];
static __thread int ctx_depth;

static void *current(void)
{
	return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

/* The allocation holding [p, p + len), or NULL; the caller locks. */
static struct alloc *find(uintptr_t p, size_t len)
{
	struct alloc *a;

	for (a = allocs; a; a = a->next)
		if (p >= a->base && p - a->base < a->size &&
		    len <= a->size - (p - a->base))
			return a;
	return NULL;
}

static void pci(unsigned int *domain, unsigned int *bus, unsigned int *dev,
		unsigned int *fn)
{
	const char *s = getenv("KXFER_STANDIN_PCI");

	*domain = 0;
	*bus = 0xff;
	*dev = 0;
	*fn = 0;
	if (s && sscanf(s, "%x:%x:%x.%x", domain, bus, dev, fn) != 4) {
		*domain = 0;
		*bus = 0xff;
		*dev = 0;
		*fn = 0;
	}
}

static bool dmabuf_supported(void)
{
	const char *s = getenv("KXFER_STANDIN_NO_DMABUF");

	return !(s && *s == '1');
}

#ifndef STANDIN_OLD
/* A udmabuf of [off, off + len) of @memfd (page aligned), or -errno */
static int make_udmabuf(int memfd, uint64_t off, uint64_t len)
{
	struct udmabuf_create c = {
		.memfd = memfd,
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = off,
		.size = len,
	};
	int dev, fd, err;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	err = errno;
	close(dev);
	return fd < 0 ? -err : fd;
}
#endif

/* ---- CUDA ---------------------------------------------------------------------- */

int cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	initialized = true;
	return CUDA_SUCCESS;
}

int cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 12080;
	return CUDA_SUCCESS;
}

int cuGetErrorName(int r, const char **s)
{
	static const struct {
		int r;
		const char *s;
	} names[] = {
		{ CUDA_SUCCESS, "CUDA_SUCCESS" },
		{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
		{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" },
		{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED" },
		{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" },
		{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT" },
		{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" },
	};
	size_t i;

	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (names[i].r == r) {
			*s = names[i].s;
			return CUDA_SUCCESS;
		}
	}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

int cuDeviceGet(int *dev, int ordinal)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!dev || ordinal)
		return ordinal ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
	*dev = 0;
	return CUDA_SUCCESS;
}

int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	unsigned int domain, bus, slot, fn;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	pci(&domain, &bus, &slot, &fn);
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		*v = (int)domain;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		*v = (int)bus;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		*v = (int)slot;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
		*v = dmabuf_supported();
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = &primary_ctx;
	return CUDA_SUCCESS;
}

int cuCtxSetCurrent(void *ctx)
{
	if (ctx && ctx != &primary_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctx) {
		if (ctx_depth)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (!ctx_depth)
		ctx_depth = 1;
	ctx_stack[ctx_depth - 1] = ctx;
	return CUDA_SUCCESS;
}

int cuCtxPushCurrent_v2(void *ctx)
{
	if (ctx != &primary_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth == CTX_DEPTH)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

int cuCtxPopCurrent_v2(void **ctx)
{
	if (!ctx_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_depth--;
	if (ctx)
		*ctx = ctx_stack[ctx_depth];
	return CUDA_SUCCESS;
}

int cuMemAlloc_v2(unsigned long long *dptr, size_t size)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct alloc *a;
	void *p;

	if (!current())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = size;
	a->maplen = (size + page - 1) & ~(page - 1);
	/* udmabuf wants a memfd that cannot shrink */
	a->memfd = memfd_create("gpu-standin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->memfd < 0 || ftruncate(a->memfd, (off_t)a->maplen) ||
	    fcntl(a->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		if (a->memfd >= 0)
			close(a->memfd);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p = mmap(NULL, a->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, a->memfd,
		 0);
	if (p == MAP_FAILED) {
		close(a->memfd);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->base = (uintptr_t)p;
	pthread_mutex_lock(&lock);
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&lock);
	*dptr = a->base;
	return CUDA_SUCCESS;
}

int cuMemFree_v2(unsigned long long dptr)
{
	struct alloc **pa, *a = NULL;

	pthread_mutex_lock(&lock);
	for (pa = &allocs; *pa; pa = &(*pa)->next) {
		if ((*pa)->base == dptr) {
			a = *pa;
			*pa = a->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)a->base, a->maplen);
	close(a->memfd);
	free(a);
	return CUDA_SUCCESS;
}

/* A copy to or from "device memory": both ends must be where they say. */
static int copy(void *dst, const void *src, size_t n, uintptr_t dev)
{
	struct alloc *a;

	pthread_mutex_lock(&lock);
	a = find(dev, n);
	pthread_mutex_unlock(&lock);
	if (!a || !dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, src, n);
	return CUDA_SUCCESS;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
	return copy((void *)(uintptr_t)dst, src, n, dst);
}

int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
	return copy(dst, (const void *)(uintptr_t)src, n, src);
}

int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr)
{
	struct alloc *a;
	uintptr_t base;
	size_t size;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&lock);
	a = find(ptr, 1);
	base = a ? a->base : 0;
	size = a ? a->size : 0;
	pthread_mutex_unlock(&lock);
	/* memory the driver did not allocate: as for unregistered host memory */
	if (!a || !data)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(void **)data = &primary_ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(unsigned long long *)data = base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = size;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

int cuMemGetAddressRange_v2(unsigned long long *pbase, size_t *psize,
					unsigned long long dptr)
{
	struct alloc *a;

	if (!current())
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&lock);
	a = find(dptr, 1);
	if (a) {
		if (pbase)
			*pbase = a->base;
		if (psize)
			*psize = a->size;
	}
	pthread_mutex_unlock(&lock);
	return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#ifndef STANDIN_OLD
/*
 * The range must be page aligned, within one allocation and device
 * memory; a dma-buf of its pages, as the driver's of the GPU's.
 */
int cuMemGetHandleForAddressRange(void *handle, unsigned long long dptr,
					      size_t size, int type,
					      unsigned long long flags)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct alloc *a;
	uint64_t off = 0;
	int memfd = -1, fd;

	if (!current())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!handle || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags ||
	    !size || dptr % page || size % page)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dmabuf_supported())
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	/* the pages of one allocation (its last may be partly beyond it) */
	a = find(dptr, 1);
	if (a && size <= a->maplen - (dptr - a->base)) {
		off = dptr - a->base;
		memfd = a->memfd;
	}
	pthread_mutex_unlock(&lock);
	if (memfd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	fd = make_udmabuf(memfd, off, size);
	if (fd < 0)
		return fd == -ENOENT || fd == -ENODEV || fd == -ENOTTY ?
			CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}
#endif

/* ---- HSA (ROCm) ------------------------------------------------------------ */

/*
 * hsa.h and hsa_ext_amd.h, as far as used: hsa_status_t is int,
 * hsa_agent_t and hsa_amd_pointer_info_t are these structures (with
 * their fields in order)
 */
struct hsa_agent {
	uint64_t handle;
};

struct hsa_amd_pointer_info {
	uint32_t size;
	int type;
	void *agent_base;
	void *host_base;
	size_t size_in_bytes;
	void *user_data;
	struct hsa_agent agent_owner;
	uint32_t global_flags;
	bool registered;
};

enum {
	HSA_STATUS_SUCCESS = 0,
	HSA_STATUS_ERROR = 0x1000,
	HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
	HSA_STATUS_ERROR_INVALID_AGENT = 0x1008,
	HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
};

#define HSA_EXT_POINTER_TYPE_UNKNOWN 0
#define HSA_EXT_POINTER_TYPE_HSA 1
#define HSA_AGENT_INFO_DEVICE 17
#define HSA_DEVICE_TYPE_GPU 1
#define HSA_AMD_AGENT_INFO_BDFID 0xA006
#define HSA_AMD_AGENT_INFO_DOMAIN 0xA00F
#define GPU_AGENT 1

static int hsa_users;

int hsa_init(void)
{
	__atomic_add_fetch(&hsa_users, 1, __ATOMIC_SEQ_CST);
	return HSA_STATUS_SUCCESS;
}

int hsa_shut_down(void)
{
	if (__atomic_load_n(&hsa_users, __ATOMIC_SEQ_CST) <= 0)
		return HSA_STATUS_ERROR_NOT_INITIALIZED;
	__atomic_sub_fetch(&hsa_users, 1, __ATOMIC_SEQ_CST);
	return HSA_STATUS_SUCCESS;
}

int hsa_status_string(int s, const char **str)
{
	if (!str)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	switch (s) {
	case HSA_STATUS_SUCCESS:
		*str = "HSA_STATUS_SUCCESS";
		return HSA_STATUS_SUCCESS;
	case HSA_STATUS_ERROR:
		*str = "HSA_STATUS_ERROR";
		return HSA_STATUS_SUCCESS;
	case HSA_STATUS_ERROR_INVALID_ARGUMENT:
		*str = "HSA_STATUS_ERROR_INVALID_ARGUMENT";
		return HSA_STATUS_SUCCESS;
	case HSA_STATUS_ERROR_INVALID_AGENT:
		*str = "HSA_STATUS_ERROR_INVALID_AGENT";
		return HSA_STATUS_SUCCESS;
	case HSA_STATUS_ERROR_NOT_INITIALIZED:
		*str = "HSA_STATUS_ERROR_NOT_INITIALIZED";
		return HSA_STATUS_SUCCESS;
	}
	return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

int hsa_amd_pointer_info(const void *ptr,
					 struct hsa_amd_pointer_info *info,
					 void *(*alloc)(size_t),
					 uint32_t *naccessible,
					 struct hsa_agent **accessible)
{
	struct hsa_amd_pointer_info out = { 0 };
	struct alloc *a;
	size_t n;

	if (__atomic_load_n(&hsa_users, __ATOMIC_SEQ_CST) <= 0)
		return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (!info || info->size < offsetof(struct hsa_amd_pointer_info, user_data) ||
	    (naccessible && (!accessible || !alloc)))
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&lock);
	a = find((uintptr_t)ptr, 1);
	if (a) {
		out.type = HSA_EXT_POINTER_TYPE_HSA;
		out.agent_base = (void *)a->base;
		out.host_base = (void *)a->base;
		out.size_in_bytes = a->size;
		out.agent_owner.handle = GPU_AGENT;
	}
	pthread_mutex_unlock(&lock);
	if (naccessible) {
		*naccessible = 0;
		*accessible = NULL;
	}
	/* as much as the caller has room for */
	n = info->size < sizeof(out) ? info->size : sizeof(out);
	out.size = (uint32_t)n;
	memcpy(info, &out, n);
	return HSA_STATUS_SUCCESS;
}

int hsa_agent_get_info(struct hsa_agent agent, int attr, void *v)
{
	unsigned int domain, bus, slot, fn;

	if (agent.handle != GPU_AGENT)
		return HSA_STATUS_ERROR_INVALID_AGENT;
	if (!v)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	pci(&domain, &bus, &slot, &fn);
	switch (attr) {
	case HSA_AGENT_INFO_DEVICE:
		*(int *)v = HSA_DEVICE_TYPE_GPU;
		return HSA_STATUS_SUCCESS;
	case HSA_AMD_AGENT_INFO_BDFID:
		*(uint32_t *)v = bus << 8 | slot << 3 | fn;
		return HSA_STATUS_SUCCESS;
	case HSA_AMD_AGENT_INFO_DOMAIN:
		*(uint32_t *)v = domain;
		return HSA_STATUS_SUCCESS;
	}
	return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

#ifndef STANDIN_OLD
/* As ROCm's: a dma-buf of the whole allocation, and where @ptr is in it. */
int hsa_amd_portable_export_dmabuf(const void *ptr, size_t size,
						   int *dmabuf,
						   uint64_t *offset)
{
	struct alloc *a;
	size_t maplen = 0;
	uint64_t off = 0;
	int memfd = -1, fd;

	if (__atomic_load_n(&hsa_users, __ATOMIC_SEQ_CST) <= 0)
		return HSA_STATUS_ERROR_NOT_INITIALIZED;
	if (!ptr || !size || !dmabuf || !offset)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	if (!dmabuf_supported())
		return HSA_STATUS_ERROR;
	pthread_mutex_lock(&lock);
	a = find((uintptr_t)ptr, size);
	if (a) {
		off = (uintptr_t)ptr - a->base;
		memfd = a->memfd;
		maplen = a->maplen;
	}
	pthread_mutex_unlock(&lock);
	if (memfd < 0)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	fd = make_udmabuf(memfd, 0, maplen);
	if (fd < 0)
		return HSA_STATUS_ERROR;
	*dmabuf = fd;
	*offset = off;
	return HSA_STATUS_SUCCESS;
}

int hsa_amd_portable_close_dmabuf(int dmabuf)
{
	return close(dmabuf) ? HSA_STATUS_ERROR_INVALID_ARGUMENT :
			       HSA_STATUS_SUCCESS;
}
#endif
