// SPDX-License-Identifier: Apache-2.0
/*
 * libplugin_KXFER.so: the entry points NIXL's plugin manager looks for.
 */
#include "backend/backend_plugin.h"
#include "kxfer_backend.h"

namespace {

/* Backend parameters (nixl_agent.create_backend("KXFER", {...})) and
 * their defaults; one not given, or empty, is taken from the environment
 * as KXFER_NIXL_<NAME> (KXFER_NIXL_RDMA_DEV=...).  See README.md. */
nixl_b_params_t
kxferOptions() {
    return {
        /* name of the kxfer session to a remote agent: %n its node, %a
         * the agent's name */
        {"session", "%n"},
        /* this node's name for peers; default the module's node_name */
        {"node", ""},
        /* addresses peers reach this node at, comma-separated, for the
         * `kxferctl peer add` that a missing session calls for; default
         * those of the RDMA devices' net devices */
        {"addrs", ""},
        /* how long a transfer waits for a remote export to be
         * advertised on the session */
        {"lookup_timeout_ms", "5000"},
        /* VRAM: the GPU runtime, auto (CUDA, else ROCm), cuda or rocm */
        {"gpu", "auto"},
        /* the libraries loaded for VRAM (a name or a path); default
         * libcuda.so.1 and libhsa-runtime64.so.1 */
        {"cuda_lib", ""},
        {"rocm_lib", ""},
        /* VRAM: the RDMA device its dma-buf is imported for; default the
         * one nearest the GPU in the PCIe tree */
        {"rdma_dev", ""},
        /* a notification naming an agent whose metadata is not loaded:
         * accept (it cannot be checked) or drop; one naming a known
         * agent is kept only if it came from that agent's node */
        {"notif_unknown", "accept"},
    };
}

using kxfer_plugin_t = nixlBackendPluginCreator<kxfer_nixl::nixlKxferEngine>;

} // namespace

extern "C" NIXL_PLUGIN_EXPORT nixlBackendPlugin *
nixl_plugin_init() {
    return kxfer_plugin_t::create(
        NIXL_PLUGIN_API_VERSION, "KXFER", "0.2.0", kxferOptions(), {DRAM_SEG, VRAM_SEG});
}

extern "C" NIXL_PLUGIN_EXPORT void
nixl_plugin_fini() {}
