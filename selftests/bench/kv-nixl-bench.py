#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""kv-nixl-bench.py: the demo's KV push through NIXL and its KXFER backend,
timed as `kxfer-bench push` times it straight on kxfer.

    kv-nixl-bench.py [--session NAME] [--secs S] [--min N]

Two NIXL agents in this process, "bench-prefill" and "bench-decode", each
with its KV cache registered with the KXFER backend, reach each other over
the kxfer session NAME of this node to itself (make bench's q1: rxe
loopback).  Each push is examples/kv-nixl.py's: 8 WRITE requests, one per
layer, of the K and V of the request's 7 blocks (409600 bytes, 112
descriptors), the last one, with the notification, posted once the others
are done; it ends when bench-decode has the notification.  Timed from
the first request made to the notification, busy-checking (NIXL has no
blocking wait); the first pushes are a warm-up; the first and the last
push are checked byte for byte.  Prints one JSON array with one row, the
fields of kxfer-bench's push row (-j), variant "nixl".  Needs NIXL's
Python package, its libraries and the plugin in the environment
(selftests/guest/common.sh, nixl_env).
"""

import argparse
import importlib.util
import json
import os
import resource
import sys
import time

import numpy as np

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location("kv_nixl", os.path.join(TOP, "examples", "kv-nixl.py"))
kvn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kvn)

REQUEST, TOKENS, WARM = 7, 100, 3


def cpu_now():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--session", default="q1", help="the kxfer session of this node to itself")
    p.add_argument("--secs", type=float, default=2.0, help="seconds of pushes (at least 3)")
    p.add_argument("--min", type=int, default=3, help="pushes at least")
    args = p.parse_args()

    params = {"session": args.session}
    prefill = kvn.make_agent("bench-prefill", params)
    decode = kvn.make_agent("bench-decode", params)
    src, dst = kvn.KvCache(), kvn.KvCache()
    kvn.register_kv(prefill, src)
    kvn.register_kv(decode, dst)
    name = prefill.add_remote_agent(decode.get_agent_metadata())
    name = name.decode() if isinstance(name, bytes) else name
    decode.add_remote_agent(prefill.get_agent_metadata())
    prefill.make_connection(name)

    nblocks = (TOKENS + kvn.BLOCK_TOKENS - 1) // kvn.BLOCK_TOKENS
    mine = kvn.alloc_blocks(kvn.PREFILL_BUSY, nblocks)
    theirs = kvn.alloc_blocks(kvn.DECODE_BUSY, nblocks)
    for layer in range(kvn.LAYERS):
        for kind, off in enumerate((kvn.k_off, kvn.v_off)):
            for i, b in enumerate(mine):
                n = kvn.block_tokens(TOKENS, i)
                src.block(off(layer, b), n)[:] = kvn.kv_pattern(
                    REQUEST, layer, kind, i * kvn.BLOCK_TOKENS, n)

    def push():
        t0 = time.perf_counter()
        nbytes, ndescs, _ = kvn.push(prefill, name, src.addr, dst.addr, mine, theirs, TOKENS,
                                     b"request %d done" % REQUEST, spin=True)
        kvn.wait_notif(decode, "bench-prefill", b"request %d done" % REQUEST, 60, spin=True)
        return time.perf_counter() - t0, nbytes, ndescs

    def check():
        for layer in range(kvn.LAYERS):
            for off in (kvn.k_off, kvn.v_off):
                for i, (a, b) in enumerate(zip(mine, theirs)):
                    n = kvn.block_tokens(TOKENS, i) * kvn.TOKEN_BYTES
                    if not np.array_equal(src.mem[off(layer, a):off(layer, a) + n],
                                          dst.mem[off(layer, b):off(layer, b) + n]):
                        sys.exit("kv-nixl-bench: layer %d block %d differs" % (layer, b))

    for _ in range(WARM):
        _, nbytes, ndescs = push()
    check()
    dst.mem[:] = 0
    us, secs, c0 = [], 0.0, cpu_now()
    while len(us) < max(3, args.min) or secs < args.secs:
        t, nbytes, ndescs = push()
        us.append(t * 1e6)
        secs += t
    cpu = cpu_now() - c0
    check()
    us.sort()
    row = {"mode": "push", "variant": "nixl", "op": "write", "size": nbytes,
           "jobs": len(us), "bytes": nbytes, "secs": round(secs, 6),
           "cpu_secs": round(cpu, 6), "cpu_pct": round(100 * cpu / secs, 2),
           "min_us": round(us[0], 3), "p50_us": round(us[len(us) // 2], 3),
           "p99_us": round(us[len(us) * 99 // 100], 3),
           "layers": kvn.LAYERS, "segs": ndescs}
    print(json.dumps([row]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
