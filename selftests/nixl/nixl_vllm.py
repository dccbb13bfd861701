#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nixl_vllm.py: the KXFER backend driven the way vLLM's NixlConnector
drives NIXL (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py),
between a prefill and a decode instance.

    nixl_vllm.py --role prefill|decode --dir DIR [--mem DRAM|VRAM]
                 [--cuda-lib LIB] [--requests N] [--inflight N]

What it does as vLLM does:

  - each instance's KV cache is a tensor per layer, K and V of every
    block (K in the first half, V in the second); each of K and V is a
    NIXL region (vLLM's split_k_and_v): LAYERS layers, 2 * LAYERS
    regions, registered at once with nixl_agent.register_memory();
  - decode prepares its local block descriptors once
    (prep_xfer_dlist("NIXL_INIT_AGENT", ...): region r, block b is
    descriptor r * num_blocks + b), fetches prefill's handshake metadata
    (NIXL agent metadata, the base address of each region, the number of
    blocks and block lengths; vLLM sends it over ZMQ, here a file in DIR),
    adds prefill's agent (add_remote_agent) and prepares prefill's block
    descriptors once;
  - prefill never loads decode's metadata;
  - per request, prefill "computes" its KV into blocks it allocates and
    hands their ids over (vLLM's kv_transfer_params, through the proxy;
    here a file in DIR); decode allocates its blocks and posts one
    make_prepped_xfer("READ", ...) over the request's blocks in every
    region with the notification "<request id>:<tp ratio>", transfer(),
    then check_xfer_state() on each request in flight, several at once,
    until DONE, and releases the handle;
  - prefill frees a request's blocks when the notification comes
    (get_new_notifs), and reuses them for later requests.

What it checks: decode compares every byte of every block it read with
what prefill computed (the blocks are poisoned before each read); prefill
overwrites a request's blocks as soon as its notification comes, so that
a notification before the read completed shows as wrong bytes at decode;
every request is notified exactly once, by decode's agent.

--mem VRAM makes the KV cache GPU memory, allocated through CUDA's driver
API (selftests/nixl/gpumem.py): in make check the GPU drivers' stand-in
(gpu_standin.c), on a host with a GPU the driver itself, with the other
instance on a node reached over kxfer (Documentation/nixl.rst).

Output is TAP, the same tests on both sides; the side channel is DIR, a
folder both see.  NIXL, its Python package and the plugin come from the
environment (selftests/guest/common.sh, nixl_env).
"""

import argparse
import base64
import json
import os
import sys
import time
import traceback

import numpy as np

try:
    import nixl  # noqa: F401  (sets up nixl._api)
except ImportError as e:
    sys.exit("nixl_vllm.py: NIXL's Python package: %s (PYTHONPATH=%s)"
             % (e, os.environ.get("PYTHONPATH", "")))
from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402

import gpumem  # noqa: E402

LAYERS = 32  # 64 regions
BLOCK_LEN = 4096  # a block of a layer's K (or V): 16 tokens, 2 heads of 64, fp16
NUM_BLOCKS = {"prefill": 48, "decode": 40}
TP_RATIO = 1

args = None
agent = None
kv = None  # the KV cache
peer_name = None  # the other instance's agent
src_handle = dst_handle = None  # decode's prepared descriptor lists


def note(msg):
    for line in str(msg).splitlines():
        print("# " + line)
    sys.stdout.flush()


# ---- the side channel (vLLM: ZMQ and the proxy) ------------------------------


def path(name):
    return os.path.join(args.dir, name)


def put(name, data):
    tmp = path("." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(data)
    os.rename(tmp, path(name))


def get(name, timeout=300):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path(name)):
        if os.path.exists(path("failed." + args.other)) and not os.path.exists(path(name)):
            raise AssertionError("%s failed" % args.other)
        if time.monotonic() > deadline:
            raise AssertionError("nothing named %s from %s" % (name, args.other))
        time.sleep(0.01)
    with open(path(name)) as f:
        return f.read()


def meet(name, timeout=300):
    put(name + "." + args.role, "")
    get(name + "." + args.other, timeout)


# ---- the KV cache -----------------------------------------------------------------


class KvCache:
    """A tensor per layer of num_blocks blocks of K, then as many of V, in
    host memory (numpy) or GPU memory (CUDA's driver API)."""

    def __init__(self, num_blocks, mem):
        self.num_blocks = num_blocks
        self.mem = mem
        self.layer_len = 2 * num_blocks * BLOCK_LEN
        if mem == "VRAM":
            self.gpu = gpumem.CudaMemory(args.cuda_lib)
            self.bases = [self.gpu.alloc(self.layer_len) for _ in range(LAYERS)]
        else:
            self.layers = [np.zeros(self.layer_len, dtype=np.uint8) for _ in range(LAYERS)]
            self.bases = [int(a.ctypes.data) for a in self.layers]

    def region_addrs(self):
        """K and V of each layer: vLLM's kv_caches_base_addr"""
        return [b + kv * self.num_blocks * BLOCK_LEN for b in self.bases for kv in (0, 1)]

    def reg_descs(self):
        return [(a, self.num_blocks * BLOCK_LEN, 0, "") for a in self.region_addrs()]

    def block_descs(self, addrs=None, num_blocks=None):
        """(address, length, device) of region r, block b at r * num_blocks + b"""
        addrs = addrs or self.region_addrs()
        num_blocks = num_blocks or self.num_blocks
        return [(a + b * BLOCK_LEN, BLOCK_LEN, 0) for a in addrs for b in range(num_blocks)]

    def _at(self, region, block):
        return self.region_addrs()[region] + block * BLOCK_LEN

    def write(self, region, block, data):
        if self.mem == "VRAM":
            self.gpu.write(self._at(region, block), data)
        else:
            layer, half = divmod(region, 2)
            off = (half * self.num_blocks + block) * BLOCK_LEN
            self.layers[layer][off:off + BLOCK_LEN] = data

    def read(self, region, block):
        if self.mem == "VRAM":
            return self.gpu.read(self._at(region, block), BLOCK_LEN)
        layer, half = divmod(region, 2)
        off = (half * self.num_blocks + block) * BLOCK_LEN
        return self.layers[layer][off:off + BLOCK_LEN]


def request_kv(req, nblocks):
    """What prefill computes for a request: (regions, blocks, bytes)"""
    rng = np.random.default_rng(1000 + req)
    return rng.integers(0, 256, size=(2 * LAYERS, nblocks, BLOCK_LEN), dtype=np.uint8)


def request_blocks(req):
    """Blocks a request holds: 1 to 6"""
    return 1 + (req * 7) % 6


def desc_ids(blocks, num_blocks):
    """vLLM's _get_block_descs_ids: every region's blocks, region-major"""
    regions = np.arange(2 * LAYERS)[:, None]
    return (regions * num_blocks + np.array(blocks)[None, :]).flatten().tolist()


# ---- the tests -----------------------------------------------------------------------


def t_agent():
    global agent
    # vLLM names its agents with a UUID, and gives NIXL only the backends
    name = "%s-%s" % (args.role, os.urandom(8).hex())
    agent = nixl_agent(name, nixl_agent_config(backends=["KXFER"]))
    assert "KXFER" in agent.backends, agent.backends
    put("name." + args.role, name)


def t_register():
    global kv
    kv = KvCache(NUM_BLOCKS[args.role], args.mem)
    descs = agent.get_reg_descs(kv.reg_descs(), args.mem)
    agent.register_memory(descs, backends=["KXFER"])
    note("%d regions of %d blocks of %d bytes in %s" % (
        2 * LAYERS, kv.num_blocks, BLOCK_LEN, args.mem))


def t_handshake():
    global src_handle, dst_handle, peer_name
    if args.role == "prefill":
        put("meta.prefill", json.dumps({
            "engine_id": "prefill-0",
            "agent_metadata": base64.b64encode(agent.get_agent_metadata()).decode(),
            "kv_caches_base_addr": kv.region_addrs(),
            "num_blocks": kv.num_blocks,
            "block_lens": [BLOCK_LEN] * (2 * LAYERS),
            "device_id": 0,
        }))
        peer_name = get("name.decode")
        meet("handshake")
        return
    src_handle = agent.prep_xfer_dlist(
        "NIXL_INIT_AGENT", agent.get_xfer_descs(kv.block_descs(), args.mem))
    meta = json.loads(get("meta.prefill"))
    # as vLLM, the name as add_remote_agent gives it (bytes, in NIXL 1.4.0)
    peer_name = agent.add_remote_agent(base64.b64decode(meta["agent_metadata"]))
    assert peer_name in (get("name.prefill"), get("name.prefill").encode()), peer_name
    assert len(meta["kv_caches_base_addr"]) == 2 * LAYERS
    dst_handle = agent.prep_xfer_dlist(peer_name, agent.get_xfer_descs(
        kv.block_descs(meta["kv_caches_base_addr"], meta["num_blocks"]), args.mem))
    args.remote_blocks = meta["num_blocks"]
    meet("handshake")


def t_requests():
    if args.role == "prefill":
        prefill_loop()
    else:
        decode_loop()


def prefill_loop():
    """Compute requests into free blocks, publish them, free their blocks
    (poisoned) when decode's notification comes."""
    free = list(range(kv.num_blocks))
    held = {}  # request -> its blocks, published and not yet notified
    notified = {}
    next_req = 0
    deadline = time.monotonic() + args.timeout
    while len(notified) < args.requests:
        assert time.monotonic() < deadline, "%d of %d requests notified" % (
            len(notified), args.requests)
        while next_req < args.requests and request_blocks(next_req) <= len(free) \
                and len(held) < 2 * args.inflight:
            n = request_blocks(next_req)
            blocks, free = free[:n], free[n:]
            data = request_kv(next_req, n)
            for r in range(2 * LAYERS):
                for i, b in enumerate(blocks):
                    kv.write(r, b, data[r, i])
            held[next_req] = blocks
            put("req-%d" % next_req, json.dumps({"request_id": "req-%d" % next_req,
                                                 "remote_block_ids": blocks}))
            next_req += 1
        for sender, msgs in agent.get_new_notifs().items():
            for m in msgs:
                req_id, ratio = m.decode().rsplit(":", 1)
                req = int(req_id.split("-")[1])
                assert sender == peer_name, "notification %r from %s" % (m, sender)
                assert int(ratio) == TP_RATIO, m
                assert req in held, "request %d notified twice, or before it was sent" % req
                notified[req] = time.monotonic()
                # the blocks are free: reused at once
                poison = np.full(BLOCK_LEN, 0xEE, dtype=np.uint8)
                for r in range(2 * LAYERS):
                    for b in held[req]:
                        kv.write(r, b, poison)
                free += held.pop(req)
        time.sleep(0.001)
    note("%d requests notified" % len(notified))
    meet("requests", 600)
    # no notification more
    time.sleep(0.5)
    extra = agent.get_new_notifs()
    assert not any(extra.values()), extra


def decode_loop():
    """Read each request as it is published, several in flight; check
    every byte once its READ is done."""
    free = list(range(kv.num_blocks))
    inflight = {}  # request -> (handle, local blocks, remote blocks)
    done = 0
    next_req = 0
    bytes_read = 0
    poison = np.full(BLOCK_LEN, 0x5A, dtype=np.uint8)
    deadline = time.monotonic() + args.timeout
    t0 = time.monotonic()
    while done < args.requests:
        assert time.monotonic() < deadline, "%d of %d requests read" % (done, args.requests)
        while next_req < args.requests and len(inflight) < args.inflight \
                and os.path.exists(path("req-%d" % next_req)):
            meta = json.loads(get("req-%d" % next_req))
            remote = meta["remote_block_ids"]
            if len(remote) > len(free):
                break
            local, free = free[:len(remote)], free[len(remote):]
            for r in range(2 * LAYERS):
                for b in local:
                    kv.write(r, b, poison)
            notif = ("%s:%d" % (meta["request_id"], TP_RATIO)).encode()
            h = agent.make_prepped_xfer("READ", src_handle, desc_ids(local, kv.num_blocks),
                                        dst_handle, desc_ids(remote, args.remote_blocks),
                                        notif)
            state = agent.transfer(h)
            assert state in ("PROC", "DONE"), "request %d: %s" % (next_req, state)
            inflight[next_req] = (h, local, remote)
            next_req += 1
        for req in list(inflight):
            h, local, remote = inflight[req]
            state = agent.check_xfer_state(h)
            if state == "PROC":
                continue
            assert state == "DONE", "request %d: %s" % (req, state)
            agent.release_xfer_handle(h)
            data = request_kv(req, len(remote))
            for r in range(2 * LAYERS):
                for i, b in enumerate(local):
                    got = kv.read(r, b)
                    if not np.array_equal(got, data[r, i]):
                        bad = int(np.argmax(got != data[r, i]))
                        raise AssertionError(
                            "request %d, region %d, block %d (local %d): byte %d is %#x, "
                            "not %#x" % (req, r, i, b, bad, got[bad], data[r, i][bad]))
            bytes_read += 2 * LAYERS * len(local) * BLOCK_LEN
            free += local
            del inflight[req]
            done += 1
        time.sleep(0.0005)
    secs = time.monotonic() - t0
    note("%d requests, %d bytes read and checked in %.1f s" % (done, bytes_read, secs))
    meet("requests", 600)


def t_release():
    """Handles and registrations go; no pool of this process is left."""
    if args.role == "decode":
        agent.release_dlist_handle(src_handle)
        agent.release_dlist_handle(dst_handle)
        agent.remove_remote_agent(peer_name)
    agent.deregister_memory(agent.get_reg_descs(kv.reg_descs(), args.mem), backends=["KXFER"])
    meet("released")


TESTS = [
    ("agent", t_agent),
    ("register", t_register),
    ("handshake", t_handshake),
    ("requests", t_requests),
    ("release", t_release),
]


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--role", choices=["prefill", "decode"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--mem", choices=["DRAM", "VRAM"], default="DRAM")
    p.add_argument("--cuda-lib", default="libcuda.so.1")
    p.add_argument("--requests", type=int, default=16)
    p.add_argument("--inflight", type=int, default=4)
    p.add_argument("--timeout", type=int, default=600)
    args = p.parse_args()
    args.other = "decode" if args.role == "prefill" else "prefill"
    os.makedirs(args.dir, exist_ok=True)

    print("TAP version 13")
    print("1..%d" % len(TESTS))
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        print("#  RUN           %s ..." % name)
        sys.stdout.flush()
        t0 = time.monotonic()
        try:
            fn()
            print("ok %d %s" % (i, name))
        except Exception:
            note(traceback.format_exc())
            print("not ok %d %s" % (i, name))
            failed += 1
            put("failed." + args.role, "")
            for j, (rest, _) in enumerate(TESTS[i:], i + 1):
                print("not ok %d %s" % (j, rest))
                failed += 1
            break
        finally:
            note("%s (%.1f s)" % (name, time.monotonic() - t0))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
