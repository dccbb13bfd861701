#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""kv-nixl.py: seed 003's KV push through NIXL's Python API, on kxfer.

    kv-nixl.py decode  --dir DIR [-r REQUEST] [-n TOKENS]
    kv-nixl.py prefill --dir DIR

The push of kv-prefill and kv-decode (kv-demo.h: 8 layers, paged KV
cache of 16-token blocks, 256 bytes of K and as many of V per token and
layer), written the way an inference engine that moves its KV cache
through NIXL (vLLM's NixlConnector, SGLang's disaggregation, Dynamo)
writes it, on NIXL's KXFER backend (tools/nixl, libplugin_KXFER.so):

  1. each node makes a NIXL agent with the KXFER backend and registers
     its KV cache, memory it allocated itself, with it;
  2. the agents exchange their metadata: an opaque byte string each (no
     address or key of the kernel's in it: the names of kxfer exports),
     with the base address of the KV cache, the way vLLM's handshake
     does; engines use a side channel of their own, here it is a file in
     DIR, a folder both nodes see;
  3. decode allocates blocks for the request and sends their list to
     prefill in a NIXL notification (over kxfer, like any notification);
  4. prefill computes the KV layer by layer and posts one WRITE request
     per layer, its K and V blocks to decode's, the notification on the
     last; it checks its requests until they are done;
  5. decode waits for the notification, which NIXL delivers only after
     the request's data is in its memory, and checks every byte.

The kxfer sessions are the administrator's (examples/demo.sh): the KXFER
backend reaches the other agent over the session named after its node
("decode" on prefill, "prefill" on decode).  NIXL's Python package, its
libraries and the plugin come from the environment (PYTHONPATH,
LD_LIBRARY_PATH, NIXL_PLUGIN_DIR; selftests/guest/common.sh, nixl_env).

Exit status 0: decode checked every byte (prefill: every request done);
1 anything else; 2 usage.
"""

import argparse
import base64
import json
import logging
import mmap
import os
import sys
import time

import numpy as np

import nixl  # noqa: F401  (sets nixl._api up)
from nixl._api import nixl_agent, nixl_agent_config

# NIXL's Python logger says every step on standard output at INFO:
# warnings and errors only, unless NIXL_LOG_LEVEL says otherwise.
if not os.environ.get("NIXL_LOG_LEVEL"):
    logging.getLogger("nixl").setLevel(logging.WARNING)

# The model, as in kv-demo.h: per layer a K buffer and a V buffer of
# BLOCKS_PER_LAYER blocks of BLOCK_TOKENS tokens of TOKEN_BYTES bytes.
LAYERS = 8
BLOCK_TOKENS = 16
TOKEN_BYTES = 256
BLOCK_BYTES = BLOCK_TOKENS * TOKEN_BYTES
BLOCKS_PER_LAYER = 32
LAYER_BYTES = 2 * BLOCKS_PER_LAYER * BLOCK_BYTES
KV_BYTES = LAYERS * LAYER_BYTES  # 2 MiB

# Blocks other requests hold in each node's cache (bit b: block b).
DECODE_BUSY = 0x0000000F | 1 << 8 | 0x3FF << 10
PREFILL_BUSY = 0x000003FF | 0xFF << 12


def k_off(layer, block):
    return layer * LAYER_BYTES + block * BLOCK_BYTES


def v_off(layer, block):
    return k_off(layer, block) + BLOCKS_PER_LAYER * BLOCK_BYTES


def block_tokens(tokens, i):
    """Tokens of a request held by its block i (the last may be partial)."""
    return min(BLOCK_TOKENS, tokens - i * BLOCK_TOKENS)


def alloc_blocks(busy, n):
    """Each node's allocator, first fit (kv_alloc_blocks)."""
    free = [b for b in range(BLOCKS_PER_LAYER) if not busy & (1 << b)]
    if len(free) < n:
        raise RuntimeError("no %d free blocks" % n)
    return free[:n]


def kv_pattern(request, layer, kind, first_token, ntokens):
    """The bytes prefill "computes" for ntokens tokens from first_token of
    the K (kind 0) or V (kind 1) of layer: kv_pattern() of kv-demo.h."""
    t = np.arange(first_token, first_token + ntokens, dtype=np.uint32)[:, None]
    j = np.arange(TOKEN_BYTES, dtype=np.uint32)[None, :]
    seed = ((request * 0x9E3779B1) & 0xFFFFFFFF) ^ (layer << 24) ^ (kind << 23)
    x = np.uint32(seed) ^ (t << np.uint32(8)) ^ j
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x2C1B3C6D)
    x ^= x >> np.uint32(12)
    return (x & np.uint32(0xFF)).astype(np.uint8)


def layer_descs(base, blocks, tokens, layer):
    """A layer of a request: the K of each block, then the V of each block,
    exactly the tokens they hold: (address, length, device 0)."""
    descs = []
    for off in (k_off, v_off):
        for i, b in enumerate(blocks):
            descs.append((base + off(layer, b), block_tokens(tokens, i) * TOKEN_BYTES, 0))
    return descs


class KvCache:
    """A node's KV cache: its own page-aligned memory (an engine's pinned
    host buffer), KV_BYTES, as a numpy array of bytes."""

    def __init__(self):
        self._map = mmap.mmap(-1, KV_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.mem = np.frombuffer(self._map, dtype=np.uint8)
        self.addr = int(self.mem.ctypes.data)

    def block(self, off, ntokens):
        return self.mem[off:off + ntokens * TOKEN_BYTES].reshape(ntokens, TOKEN_BYTES)


def make_agent(name, params=None):
    """A NIXL agent on the KXFER backend only.  KXFER needs no progress
    thread: the kernel moves the data, checking a request only reaps."""
    agent = nixl_agent(name, nixl_agent_config(enable_prog_thread=False, backends=[]))
    if "KXFER" not in agent.get_plugin_list():
        raise RuntimeError("NIXL has no KXFER plugin (NIXL_PLUGIN_DIR=%s)"
                           % os.environ.get("NIXL_PLUGIN_DIR", ""))
    agent.create_backend("KXFER", params or {})
    return agent


def register_kv(agent, kv):
    """Register the whole KV cache: the backend makes a kxfer pool of those
    pages and exports them; NIXL keeps the descriptor list."""
    return agent.register_memory([(kv.addr, KV_BYTES, 0, "")], "DRAM")


def wait_done(agent, handles, spin=False):
    """Check requests until each is done; raise if one fails."""
    pending = list(handles)
    while pending:
        state = agent.check_xfer_state(pending[0])
        if state == "DONE":
            pending.pop(0)
        elif state != "PROC":
            raise RuntimeError("a WRITE request failed: %s" % state)
        elif not spin:
            time.sleep(0.0005)


def push(agent, remote, local_base, remote_base, mine, theirs, tokens, notif,
         compute=None, log=None, spin=False):
    """The push, layer by layer: one WRITE request per layer, posted as soon
    as the layer is computed; the notification goes with the last layer's
    request.  It says that request's data is there, not the others': so the
    last one is posted once the others are done (kv-prefill does the same
    with kxfer's jobs).  Returns (bytes, descriptors, requests)."""
    handles, nbytes, ndescs = [], 0, 0
    for layer in range(LAYERS):
        if compute:
            compute(layer)
        src = layer_descs(local_base, mine, tokens, layer)
        local = agent.get_xfer_descs(src, "DRAM")
        dest = agent.get_xfer_descs(layer_descs(remote_base, theirs, tokens, layer), "DRAM")
        last = layer == LAYERS - 1
        if last:
            wait_done(agent, handles, spin)
        h = agent.initialize_xfer("WRITE", local, dest, remote, notif if last else b"")
        if agent.transfer(h) == "ERR":
            raise RuntimeError("layer %d: posting the WRITE request failed" % layer)
        handles.append(h)
        n = sum(d[1] for d in src)
        nbytes += n
        ndescs += len(src)
        if log:
            log("layer %d: %2d descriptors, %6d bytes -> WRITE request%s"
                % (layer, len(src), n, ", with the notification" if last else ""))
    wait_done(agent, handles[-1:], spin)
    for h in handles:
        agent.release_xfer_handle(h)
    return nbytes, ndescs, len(handles)


# ---- the two nodes ------------------------------------------------------------


def say(role, msg):
    print("%s: %s" % (role, msg), flush=True)


def handshake(args, agent, kv):
    """Publish this agent's metadata and KV base address in DIR, load the
    other's: NIXL then knows how to reach it (the export names behind its
    registrations), and we know where its KV cache is."""
    mine = {"agent": agent.name, "kv_addr": kv.addr, "kv_bytes": KV_BYTES,
            "metadata": base64.b64encode(agent.get_agent_metadata()).decode()}
    tmp = os.path.join(args.dir, ".%s.json" % args.role)
    with open(tmp, "w") as f:
        json.dump(mine, f)
    os.rename(tmp, os.path.join(args.dir, "%s.json" % args.role))
    path = os.path.join(args.dir, "%s.json" % args.other)
    deadline = time.monotonic() + args.timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError("no metadata from %s in %s" % (args.other, args.dir))
        time.sleep(0.05)
    with open(path) as f:
        theirs = json.load(f)
    name = agent.add_remote_agent(base64.b64decode(theirs["metadata"]))
    if isinstance(name, bytes):
        name = name.decode()
    return name, theirs["kv_addr"]


def wait_notif(agent, sender, prefix, timeout, spin=False):
    """The first notification from sender that starts with prefix."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msg in agent.get_new_notifs().get(sender, []):
            if msg.startswith(prefix):
                return msg
        if not spin:
            time.sleep(0.001)
    raise RuntimeError("no notification %r from %s in %d s" % (prefix, sender, timeout))


def print_map(request, tokens, blocks):
    """One character per block ('.' untouched), as kv-decode prints it."""
    c = chr(ord("A") + (request - 1) % 26)
    row = ["."] * BLOCKS_PER_LAYER
    for i, b in enumerate(blocks):
        row[b] = c if block_tokens(tokens, i) == BLOCK_TOKENS else c.lower()
    for layer in range(LAYERS):
        say("decode", "  layer %d  K %s  V %s" % (layer, "".join(row), "".join(row)))


def decode(args):
    agent = make_agent("decode")
    kv = KvCache()
    reg = register_kv(agent, kv)
    say("decode", "agent \"decode\", backend KXFER; registered my KV cache: %d KiB of my own "
        "memory (the backend made a kxfer pool of it and exported it)" % (KV_BYTES // 1024))
    kv.mem[:] = 0x5A  # what was there before: must not change
    prefill, _ = handshake(args, agent, kv)
    agent.make_connection(prefill)
    say("decode", "metadata exchanged with agent \"%s\" (through %s); connected" %
        (prefill, args.dir))

    nblocks = (args.tokens + BLOCK_TOKENS - 1) // BLOCK_TOKENS
    blocks = alloc_blocks(DECODE_BUSY, nblocks)
    for layer in range(LAYERS):
        for b in blocks:
            kv.mem[k_off(layer, b):k_off(layer, b) + BLOCK_BYTES] = 0
            kv.mem[v_off(layer, b):v_off(layer, b) + BLOCK_BYTES] = 0
    before = kv.mem.copy()
    say("decode", "request %d, %d tokens: blocks of my KV cache: %s" %
        (args.request, args.tokens, " ".join(map(str, blocks))))
    blocklist = {"request": args.request, "tokens": args.tokens, "blocks": blocks}
    t0 = time.monotonic()
    agent.send_notif(prefill, b"blocklist " + json.dumps(blocklist).encode())
    say("decode", "block list -> agent \"%s\", in a NIXL notification" % prefill)

    done = b"request %d done" % args.request
    wait_notif(agent, prefill, done, args.timeout)
    say("decode", "notified: %r, %.0f ms after the block list" %
        (done.decode(), (time.monotonic() - t0) * 1e3))

    # Every byte: the request's as prefill computed them, the rest as before.
    want, checked = before, 0
    for layer in range(LAYERS):
        for kind, off in enumerate((k_off, v_off)):
            for i, b in enumerate(blocks):
                n = block_tokens(args.tokens, i)
                o = off(layer, b)
                want[o:o + n * TOKEN_BYTES] = kv_pattern(
                    args.request, layer, kind, i * BLOCK_TOKENS, n).reshape(-1)
                checked += n * TOKEN_BYTES
    bad = np.flatnonzero(kv.mem != want)
    if bad.size:
        o = int(bad[0])
        say("decode", "byte %d of the KV cache is 0x%02x, expected 0x%02x (%d bytes differ)"
            % (o, kv.mem[o], want[o], bad.size))
        return 1
    say("decode", "verified %d bytes of KV (%d layers x %d tokens x K,V x %d B) in my own "
        "memory; nothing else changed" % (checked, LAYERS, args.tokens, TOKEN_BYTES))
    say("decode", "what landed (one column per block; lower case: partly filled):")
    print_map(args.request, args.tokens, blocks)
    agent.deregister_memory(reg)
    say("decode", "deregistered: the backend's pool and export are gone")
    return 0


def prefill(args):
    agent = make_agent("prefill")
    kv = KvCache()
    reg = register_kv(agent, kv)
    say("prefill", "agent \"prefill\", backend KXFER; registered my KV cache: %d KiB of my own "
        "memory" % (KV_BYTES // 1024))
    decode_agent, decode_kv = handshake(args, agent, kv)
    agent.make_connection(decode_agent)
    say("prefill", "metadata exchanged with agent \"%s\" (through %s); connected: the backend "
        "reaches it over the kxfer session named after its node" % (decode_agent, args.dir))
    say("prefill", "ready, waiting for a block list")

    msg = wait_notif(agent, decode_agent, b"blocklist ", args.timeout)
    bl = json.loads(msg[len(b"blocklist "):])
    request, tokens, theirs = bl["request"], bl["tokens"], bl["blocks"]
    mine = alloc_blocks(PREFILL_BUSY, len(theirs))
    say("prefill", "request %d, %d tokens: my blocks %s -> decode's %s" %
        (request, tokens, " ".join(map(str, mine)), " ".join(map(str, theirs))))

    def compute(layer):
        for kind, off in enumerate((k_off, v_off)):
            for i, b in enumerate(mine):
                n = block_tokens(tokens, i)
                kv.block(off(layer, b), n)[:] = kv_pattern(
                    request, layer, kind, i * BLOCK_TOKENS, n)

    t0 = time.monotonic()
    nbytes, ndescs, nreqs = push(agent, decode_agent, kv.addr, decode_kv, mine, theirs,
                                 tokens, b"request %d done" % request, compute,
                                 lambda m: say("prefill", m))
    say("prefill", "pushed %d layers, %d bytes, %d descriptors in %d WRITE requests, "
        "all done, in %.0f ms" % (LAYERS, nbytes, ndescs, nreqs,
                                   (time.monotonic() - t0) * 1e3))
    agent.deregister_memory(reg)
    return 0


def main():
    p = argparse.ArgumentParser(description="seed 003's KV push through NIXL on KXFER")
    p.add_argument("role", choices=["decode", "prefill"])
    p.add_argument("--dir", required=True, help="a folder both nodes see, for the metadata")
    p.add_argument("-r", "--request", type=int, default=7, help="request id (decode)")
    p.add_argument("-n", "--tokens", type=int, default=100, help="tokens (decode)")
    p.add_argument("-t", "--timeout", type=int, default=60, help="seconds to wait for the other")
    args = p.parse_args()
    if not 0 < args.tokens <= BLOCKS_PER_LAYER * BLOCK_TOKENS or args.request <= 0:
        p.error("bad request or token count")
    args.other = "prefill" if args.role == "decode" else "decode"
    os.makedirs(args.dir, exist_ok=True)
    try:
        return decode(args) if args.role == "decode" else prefill(args)
    except Exception as e:  # NIXL's errors are exceptions: say which
        say(args.role, "FAILED: %s: %s" % (type(e).__name__, e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
