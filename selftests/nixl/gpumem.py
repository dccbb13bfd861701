# SPDX-License-Identifier: Apache-2.0
"""gpumem.py: GPU memory for the KXFER backend's VRAM tests, through CUDA's
driver API (libcuda.so.1) as a CUDA program would use it: cuInit, the
primary context of device 0, cuMemAlloc, cuMemcpyHtoD, cuMemcpyDtoH,
cuMemFree.

In make check the library is the stand-in (selftests/nixl/gpu_standin.c,
build/nixl/standin/ in LD_LIBRARY_PATH), which is the same library the
plugin then loads; on a host with an NVIDIA GPU it is the driver itself.
"""

import ctypes

import numpy as np


class CudaError(RuntimeError):
    pass


class CudaMemory:
    """Device 0 of the CUDA driver in @lib, current in this thread."""

    def __init__(self, lib="libcuda.so.1"):
        self.cu = ctypes.CDLL(lib)
        self._check("cuInit", self.cu.cuInit(0))
        dev = ctypes.c_int()
        self._check("cuDeviceGet", self.cu.cuDeviceGet(ctypes.byref(dev), 0))
        self.ctx = ctypes.c_void_p()
        self._check("cuDevicePrimaryCtxRetain",
                    self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev))
        self._check("cuCtxSetCurrent", self.cu.cuCtxSetCurrent(self.ctx))
        self.cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        self.cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        self.cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]

    def _check(self, what, r):
        if r:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(r, ctypes.byref(name))
            raise CudaError("%s: %s" % (what, (name.value or b"CUresult %d" % r).decode()))

    def alloc(self, n):
        """n bytes of device memory: its address"""
        p = ctypes.c_uint64()
        self._check("cuMemAlloc", self.cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)))
        return p.value

    def free(self, p):
        self._check("cuMemFree", self.cu.cuMemFree_v2(p))

    def write(self, p, data):
        """data (a numpy array or bytes) to device address p"""
        buf = np.ascontiguousarray(np.frombuffer(data, dtype=np.uint8)
                                   if isinstance(data, (bytes, bytearray)) else data)
        self._check("cuMemcpyHtoD", self.cu.cuMemcpyHtoD_v2(p, buf.ctypes.data, buf.nbytes))

    def read(self, p, n):
        """n bytes from device address p, as a numpy array of uint8"""
        out = np.empty(n, dtype=np.uint8)
        self._check("cuMemcpyDtoH", self.cu.cuMemcpyDtoH_v2(out.ctypes.data, p, n))
        return out
