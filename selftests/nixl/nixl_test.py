#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nixl_test.py: the KXFER backend through NIXL's Python API (nixl_agent).

    nixl_test.py --role a|b --dir DIR --standin DIR [--peer-addr ADDR] [--port PORT]

What vLLM's and SGLang's NIXL connectors do, between two guests
(selftests/guest/nixl.sh): agent "py-a" (guest a, the decode side) holds a
KV cache of numpy arrays, one per layer, of blocks; agent "py-b" (guest b,
prefill) pushes blocks into it with one prepared transfer per request and
a notification, and reads them back. Metadata goes NIXL's own way (its P2P
listener: send_local_metadata, fetch_remote_metadata); the block tables
go through DIR, the guests' shared folder, where they also meet. Output
is TAP, the same tests in the same order on both sides.

VRAM: each side also registers "GPU memory" of the GPU drivers'
stand-in (--standin: build/nixl/standin, gpu_standin.c, which the
caller puts in LD_LIBRARY_PATH, so that the plugin loads it as
libcuda.so.1), and b moves data between its DRAM and a's VRAM and its
VRAM and a's DRAM, both ways.  The stand-in's dma-bufs are udmabufs:
where the kernel has none (Debian's 6.1), the tests check that the
registration is refused and why.  The driver's failures (missing, too
old, no dma-buf export, host memory, no such RDMA device) are checked in
child processes (--probe), whose log says why.

Notifications: one naming an agent whose metadata is loaded is kept only
if it came from that agent's node (a forger on a using the name of an
agent on b is dropped and counted), as the backend's log says.
"""

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import time
import traceback

import numpy as np

import gpumem

try:
    import nixl  # noqa: F401  (sets up nixl._api)
except ImportError as e:
    sys.exit("nixl_test.py: NIXL's Python package: %s (PYTHONPATH=%s; build the plugin "
             "with NIXL_SRC=<NIXL's sources> or NIXL_PYTHONPATH=..., tools/nixl/nixl.mk)"
             % (e, os.environ.get("PYTHONPATH", "")))
from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402

LAYERS = 4
BLOCKS = 16
BLOCK = 4096  # bytes per block and layer
VBYTES = 256 * 1024  # the VRAM region of each side
VSKEW = 1000  # where it starts in its allocation: not page aligned

args = None
me = other = None
agent = None
kv = []  # this side's layers
remote_layers = []  # the other side's: (addr, len) per layer
max_notify = 0
gpu = None  # gpumem.CudaMemory of the stand-in
vram = None  # this side's VRAM region's address, if registered
remote_vram = None  # the other side's


class Skip(Exception):
    pass


def note(msg):
    for line in str(msg).splitlines():
        print("# " + line)
    sys.stdout.flush()


# ---- meeting the other guest ---------------------------------------------------


def path(name):
    return os.path.join(args.dir, name)


def put(name, data=""):
    tmp = path("." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(data)
    os.rename(tmp, path(name))


def get(name, timeout=120):
    """name's contents, once the other guest made it; an error once the
    other guest has ended without (it makes name before it ends: looked
    for once more after its end is seen)"""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path(name)):
        if os.path.exists(path("done." + args.other_role)) or time.monotonic() > deadline:
            if os.path.exists(path(name)):
                break
            raise AssertionError("nothing named %s from guest %s" % (name, args.other_role))
        time.sleep(0.02)
    with open(path(name)) as f:
        return f.read()


def meet(name, timeout=120):
    put(name + "." + args.role)
    get(name + "." + args.other_role, timeout)


def tell(name, ok):
    put("verdict." + name, "pass" if ok else "fail")


def hear(name, timeout=120):
    assert get("verdict." + name, timeout) == "pass", "guest b says %s failed" % name


def poll(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError("timed out waiting for " + what)


def wait_xfer(handle, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        state = agent.check_xfer_state(handle)
        if state != "PROC" or time.monotonic() > deadline:
            return state
        time.sleep(0.0002)


def pattern(seed, shape):
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


def layer_descs(layers):
    return [(int(a.ctypes.data), a.nbytes, 0, "") for a in layers]


def block_descs(layers_addrs):
    """One descriptor per (layer, block): index layer * BLOCKS + block."""
    return [(addr + b * BLOCK, BLOCK, 0) for addr, _ in layers_addrs for b in range(BLOCKS)]


def notifs_from(name):
    return agent.get_new_notifs().get(name, [])


def have_udmabuf():
    return os.path.exists("/dev/udmabuf")


def capture_stderr(fn):
    """fn()'s result or exception, and what was written to fd 2 meanwhile
    (NIXL's log)"""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path(".stderr.%d" % os.getpid()), "w+") as f:
        os.dup2(f.fileno(), 2)
        try:
            result, exc = fn(), None
        except Exception as e:
            result, exc = None, e
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return result, exc, f.read()


def own_pools():
    """this process's pools (kxferctl pool show): name -> entry"""
    out = subprocess.run(["kxferctl", "-j", "pool", "show"], check=True,
                         capture_output=True, text=True).stdout
    return {p["name"]: p for p in json.loads(out) if p.get("pid") == os.getpid()}


# ---- the tests ---------------------------------------------------------------------


def t_agent():
    global agent, max_notify
    cfg = nixl_agent_config(
        enable_prog_thread=False,
        enable_listen_thread=True,
        listen_port=args.port,
        backends=["KXFER"],
    )
    agent = nixl_agent(me, cfg)
    assert "KXFER" in agent.get_plugin_list()
    assert agent.get_backend_mem_types("KXFER") == ["DRAM_SEG", "VRAM_SEG"], \
        agent.get_backend_mem_types("KXFER")
    max_notify = int(agent.get_backend_params("KXFER").get("max_notify_len", "0"))
    note("max_notify_len %d" % max_notify)


def t_register_kv():
    # numpy's buffers are not page aligned: the pools cover their pages
    for layer in range(LAYERS):
        kv.append(np.zeros((BLOCKS, BLOCK), dtype=np.uint8))
    agent.register_memory(layer_descs(kv), "DRAM")
    put("layers." + args.role, json.dumps([[int(a.ctypes.data), a.nbytes] for a in kv]))
    remote_layers.extend(tuple(x) for x in json.loads(get("layers." + args.other_role)))


def t_vram_register():
    """A region of "GPU memory" (the stand-in's, at an offset that is not
    page aligned in its allocation) registered as VRAM: a dma-buf pool on
    6.12; refused where the kernel has no udmabuf, with the driver's
    reason in the log."""
    global gpu, vram
    gpu = gpumem.CudaMemory(os.path.join(args.standin, "libcuda.so.1"))
    base = gpu.alloc(VBYTES + 2 * VSKEW)
    gpu.write(base + VSKEW, pattern(400 + ord(args.role), VBYTES))
    pools = set(dmabuf_pools())
    # refused, on an agent of its own: NIXL 1.4.0 keeps an empty VRAM
    # section after a refused first registration, and peers refuse
    # metadata with one
    target = agent if have_udmabuf() else nixl_agent(
        me + "-v", nixl_agent_config(enable_prog_thread=False, backends=["KXFER"]))
    _, exc, log = capture_stderr(
        lambda: target.register_memory([(base + VSKEW, VBYTES, 0, "")], "VRAM"))
    new = [p for n, p in dmabuf_pools().items() if n not in pools]
    if not have_udmabuf():
        note("no /dev/udmabuf: " + log.strip())
        assert type(exc).__name__ == "nixlBackendError", repr(exc)
        assert "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED" in log, log
        assert not new, new
        put("vram." + args.role, "")
        get("vram." + args.other_role)
        return
    assert exc is None, "%r: %s" % (exc, log)
    # the pages around the region, as one dma-buf pool of this process
    assert len(new) == 1, new
    page = os.sysconf("SC_PAGE_SIZE")
    want = (VSKEW + VBYTES + page - 1) // page * page - VSKEW // page * page
    assert new[0]["size"] == want, (new[0], want)
    vram = base + VSKEW
    put("vram." + args.role, str(vram))
    global remote_vram
    remote_vram = int(get("vram." + args.other_role))


def t_metadata_p2p():
    # NIXL's own exchange: each sends its metadata to the other's listener
    agent.send_local_metadata(args.peer_addr, args.peer_port)
    poll(lambda: agent.check_remote_metadata(other), 60, "metadata of " + other)
    meet("md")
    agent.make_connection(other)


def t_kv_push():
    """Prefill (b) writes blocks 4, 1 and 5 of every layer into decode's
    (a) blocks 2, 7 and 9 with one request and a notification; decode checks
    every byte once the notification is there."""
    src_blocks, dst_blocks = [4, 1, 5], [2, 7, 9]
    src = [pattern(100 + layer, (BLOCKS, BLOCK)) for layer in range(LAYERS)]
    want = [np.zeros((BLOCKS, BLOCK), dtype=np.uint8) for _ in range(LAYERS)]
    for layer in range(LAYERS):
        for s, d in zip(src_blocks, dst_blocks):
            want[layer][d] = src[layer][s]
    notif = b"kv-push:req-1" if max_notify else b""
    if args.role == "a":
        meet("kv-ready")
        if notif:
            poll(lambda: agent.check_remote_xfer_done(other, notif), 60, "the notification")
        hear("kv-push")
        for layer in range(LAYERS):
            assert np.array_equal(kv[layer], want[layer]), "layer %d differs" % layer
        return
    for layer in range(LAYERS):
        kv[layer][:] = src[layer]
    local = agent.prep_xfer_dlist("NIXL_INIT_AGENT", block_descs(
        [(int(a.ctypes.data), a.nbytes) for a in kv]), "DRAM")
    remote = agent.prep_xfer_dlist(other, block_descs(remote_layers), "DRAM")
    li = [layer * BLOCKS + b for layer in range(LAYERS) for b in src_blocks]
    ri = [layer * BLOCKS + b for layer in range(LAYERS) for b in dst_blocks]
    meet("kv-ready")
    h = agent.make_prepped_xfer("WRITE", local, li, remote, ri, notif)
    state = agent.transfer(h)
    if state == "PROC":
        state = wait_xfer(h)
    tell("kv-push", state == "DONE")
    agent.release_xfer_handle(h)
    agent.release_dlist_handle(local)
    agent.release_dlist_handle(remote)
    assert state == "DONE", state


def t_read_back():
    """b reads all of a's layers and finds exactly what it pushed."""
    if args.role == "a":
        hear("read-back")
        return
    dst = [np.full((BLOCKS, BLOCK), 0xEE, dtype=np.uint8) for _ in range(LAYERS)]
    reg = agent.register_memory(layer_descs(dst), "DRAM")
    local = agent.get_xfer_descs([(int(a.ctypes.data), a.nbytes, 0) for a in dst], "DRAM")
    remote = agent.get_xfer_descs([(a, n, 0) for a, n in remote_layers], "DRAM")
    h = agent.initialize_xfer("READ", local, remote, other)
    state = agent.transfer(h)
    if state == "PROC":
        state = wait_xfer(h)
    ok = state == "DONE"
    for layer in range(LAYERS):
        want = np.zeros((BLOCKS, BLOCK), dtype=np.uint8)
        src = pattern(100 + layer, (BLOCKS, BLOCK))
        for s, d in zip([4, 1, 5], [2, 7, 9]):
            want[d] = src[s]
        ok = ok and np.array_equal(dst[layer], want)
    tell("read-back", ok)
    agent.release_xfer_handle(h)
    agent.deregister_memory(reg)
    assert ok, state


def t_vram_xfer():
    """b moves data between DRAM and VRAM both ways, 16 KiB descriptors in
    a scrambled order: WRITE its DRAM into a's VRAM and its VRAM into a's
    DRAM, READ a's VRAM into its DRAM and a's DRAM into its VRAM; every
    byte of the regions is checked on both sides.  Without udmabuf,
    descriptors of VRAM nobody registered are refused by NIXL."""
    q = 64 * 1024
    if not have_udmabuf():
        if args.role == "a":
            hear("vram-xfer")
            return
        try:
            agent.initialize_xfer(
                "WRITE", agent.get_xfer_descs([(int(kv[0].ctypes.data), 4096, 0)], "DRAM"),
                agent.get_xfer_descs([(0x7f0000001000, 4096, 0)], "VRAM"), other).release()
            got = "no error"
        except Exception as e:
            got = type(e).__name__
        tell("vram-xfer", got == "nixlNotFoundError")
        assert got == "nixlNotFoundError", got
        return
    va, vb = (vram, remote_vram) if args.role == "a" else (remote_vram, vram)
    a3 = remote_layers[3][0] if args.role == "b" else int(kv[3].ctypes.data)
    if args.role == "a":
        gpu.write(va, pattern(300, VBYTES))
        kv[1][:] = 0
        kv[3][:] = pattern(301, (BLOCKS, BLOCK))
    else:
        kv[0][:] = pattern(302, (BLOCKS, BLOCK))
        kv[2][:] = 0
        gpu.write(vb, pattern(303, VBYTES))
    meet("vram-ready")
    if args.role == "a":
        hear("vram-xfer")
        old = pattern(300, VBYTES)
        got = gpu.read(va, VBYTES)
        assert np.array_equal(got[:q], pattern(302, (BLOCKS, BLOCK)).reshape(-1)), "VRAM [0, 64K)"
        assert np.array_equal(got[q:], old[q:]), "VRAM beyond what b wrote changed"
        assert np.array_equal(kv[1].reshape(-1), pattern(303, VBYTES)[q:2 * q]), "DRAM layer 1"
        return

    def xfer(op, local, lkind, remote, rkind):
        # four 16 KiB descriptors, in the order 2, 0, 3, 1
        order = [2, 0, 3, 1]
        ld = [(local + i * 16384, 16384, 0) for i in order]
        rd = [(remote + i * 16384, 16384, 0) for i in order]
        h = agent.initialize_xfer(op, agent.get_xfer_descs(ld, lkind),
                                  agent.get_xfer_descs(rd, rkind), other)
        state = agent.transfer(h)
        if state == "PROC":
            state = wait_xfer(h)
        agent.release_xfer_handle(h)
        assert state == "DONE", "%s %s to %s: %s" % (op, lkind, rkind, state)

    ok = False
    try:
        xfer("WRITE", int(kv[0].ctypes.data), "DRAM", va, "VRAM")
        xfer("WRITE", vb + q, "VRAM", remote_layers[1][0], "DRAM")
        xfer("READ", int(kv[2].ctypes.data), "DRAM", va + 2 * q, "VRAM")
        xfer("READ", vb + 3 * q, "VRAM", a3, "DRAM")
        assert np.array_equal(kv[2].reshape(-1), pattern(300, VBYTES)[2 * q:3 * q]), \
            "a's VRAM read into DRAM"
        got = gpu.read(vb, VBYTES)
        assert np.array_equal(got[3 * q:], pattern(301, (BLOCKS, BLOCK)).reshape(-1)), \
            "a's DRAM read into VRAM"
        assert np.array_equal(got[:3 * q], pattern(303, VBYTES)[:3 * q]), \
            "VRAM beyond what was read changed"
        ok = True
    finally:
        tell("vram-xfer", ok)


# The driver's failures, in a child process (--probe: NIXL's log at INFO),
# each with an agent and backend parameters of its own, whose log says
# why: (case, backend parameters, environment, what NIXL raises and what
# the log says with udmabuf, the same without, if it differs).
PROBES = [
    ("no_driver",
     {"cuda_lib": "/nonexistent/libcuda.so.1", "rocm_lib": "/nonexistent/libhsa-runtime64.so.1"},
     {}, ("nixlBackendError", ["cannot load the CUDA driver /nonexistent/libcuda.so.1",
                               "cannot load the ROCm runtime /nonexistent/libhsa-runtime64.so.1"]),
     None),
    ("cuda_too_old", {"gpu": "cuda", "cuda_lib": "@old/libcuda.so.1"}, {},
     ("nixlBackendError", ["is too old: it has no cuMemGetHandleForAddressRange"]), None),
    ("rocm_too_old", {"gpu": "rocm", "rocm_lib": "@old/libhsa-runtime64.so.1"}, {},
     ("nixlBackendError", ["is too old: it has no hsa_amd_portable_export_dmabuf"]), None),
    ("no_dmabuf_export", {}, {"KXFER_STANDIN_NO_DMABUF": "1"},
     ("nixlBackendError", ["cannot export its memory as a dma-buf",
                           "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0"]), None),
    ("host_memory", {}, {},
     ("nixlBackendError", ["CUDA: the CUDA driver does not know address",
                           "ROCm: the ROCm runtime does not know address"]), None),
    ("no_such_rdma_dev", {"rdma_dev": "nosuch0"}, {},
     ("nixlBackendError", ["on RDMA device nosuch0", "no RDMA device of that name"]),
     ("nixlBackendError", ["CUDA_ERROR_NOT_SUPPORTED"])),
    ("nearest_rdma_dev", {}, {"KXFER_STANDIN_PCI": "@netdev"},
     ("ok", ["the nearest RDMA device: RDMA device @rdmadev"]),
     ("nixlBackendError", ["CUDA_ERROR_NOT_SUPPORTED"])),
    ("rocm", {"gpu": "rocm"}, {},
     ("ok", []), ("nixlBackendError", ["hsa_amd_portable_export_dmabuf: HSA_STATUS_ERROR"])),
]


SCOPED_RE = re.compile(rb"export=([A-Za-z0-9._:-]+)\nlen=\d+\ntoken=([0-9a-f]{32})\n")
MAILBOX_RE = re.compile(rb"mailbox=([A-Za-z0-9._:-]+)\nmailbox_token=([0-9a-f]{32})\n")


def lookup(session, export, token=None):
    """a lookup by another process of this node (selftests/tenant): its
    errno name, "0" if found"""
    tenant = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tenant")
    cmd = [tenant, "lookup", session, export] + ([token] if token else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"^lookup: (\S+)$", out, re.M)
    assert m, out
    return m.group(1)


def t_scoped():
    """Every export of the agent is capability-scoped: its token is in
    the agent's metadata (each registration's, and the mailbox's in the
    conn info), export show says so and never shows it.  On the other
    node, a process given the token finds the export; without it, with
    a wrong one, or for a name that does not exist, lookups fail with
    ENOENT alike; peer show there lists none of them, only counts them."""
    md = agent.get_agent_metadata()
    pairs = [(n.decode(), t.decode()) for n, t in SCOPED_RE.findall(md)]
    pairs += [(n.decode(), t.decode()) for n, t in MAILBOX_RE.findall(md)]
    assert len(pairs) >= LAYERS + 1, md
    exports = json.loads(subprocess.run(["kxferctl", "-j", "export", "show"], check=True,
                                        capture_output=True, text=True).stdout)
    mine = {e["name"]: e for e in exports if e.get("pid") == os.getpid()}
    for name, token in pairs:
        assert mine.get(name, {}).get("lookup") == "token", (name, mine.get(name))
    shown = subprocess.run("kxferctl -j export show; kxferctl export show; "
                           "kxferctl -j peer show; kxferctl peer show; dmesg",
                           shell=True, capture_output=True, text=True).stdout
    for _, token in pairs:
        assert token not in shown.lower(), "a token is shown"
    put("scoped." + args.role, json.dumps(pairs))

    theirs = json.loads(get("scoped." + args.other_role))
    session = args.session if args.role == "b" else "b"
    for name, token in theirs:
        wrong = token[:-1] + ("0" if token[-1] != "0" else "1")
        got = (lookup(session, name, token), lookup(session, name),
               lookup(session, name, wrong), lookup(session, name + ".x", token))
        assert got == ("0", "ENOENT", "ENOENT", "ENOENT"), (name, got)
    peers = json.loads(subprocess.run(["kxferctl", "-j", "peer", "show", session], check=True,
                                      capture_output=True, text=True).stdout)
    names = {n for n, _ in theirs}
    listed = [r["name"] for r in peers[0].get("remote_exports", []) if r["name"] in names]
    assert not listed, listed
    assert peers[0].get("remote_scoped", 0) >= len(theirs), peers[0]
    meet("scoped")


def dmabuf_pools():
    return {n: p for n, p in own_pools().items() if p["kind"] == "dmabuf"}


def probe(pci):
    """The child: for each case, register a region of the stand-in's
    memory (or host memory) as VRAM on an agent of its own with the
    case's backend parameters and environment; print what NIXL said, its
    log and the dma-buf pools it left, as JSON."""
    gpu_mem = gpumem.CudaMemory(os.path.join(args.standin, "libcuda.so.1"))
    host = np.zeros(VBYTES, dtype=np.uint8)
    out = []
    for case, params, env, _, _ in PROBES:
        params = {k: v.replace("@old", args.standin + "-old") for k, v in params.items()}
        saved = dict(os.environ)
        os.environ.update({k: v.replace("@netdev", pci) for k, v in env.items()})
        a = nixl_agent("probe-" + case, nixl_agent_config(enable_prog_thread=False,
                                                          backends=[]))
        a.create_backend("KXFER", params)
        addr = int(host.ctypes.data) if case == "host_memory" else gpu_mem.alloc(VBYTES)
        before = set(dmabuf_pools())
        _, exc, log = capture_stderr(
            lambda: a.register_memory([(addr, VBYTES, 0, "")], "VRAM"))
        out.append({"case": case, "outcome": type(exc).__name__ if exc else "ok", "log": log,
                    "pools": [p for n, p in dmabuf_pools().items() if n not in before]})
        os.environ.clear()
        os.environ.update(saved)
    print(json.dumps(out))
    return 0


def rdma_place():
    """The PCI function of the net device under rxe0 (its virtio device's
    parent), and rxe0"""
    dev = os.environ.get("KXFER_RDMA_DEV", "rxe0")
    nd = open("/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0" % dev).read().strip()
    p = os.path.realpath("/sys/class/net/%s/device" % nd)
    while not re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", os.path.basename(p)):
        assert p != "/", "no PCI device above net device " + nd
        p = os.path.dirname(p)
    return os.path.basename(p), dev


def t_vram_errors():
    """Each driver failure refused with NIXL's error and a log that says
    why, and no pool left; and the RDMA device nearest the GPU (b; a
    waits)."""
    if args.role == "a":
        meet("vram-errors", 600)
        return
    pci, rdmadev = rdma_place()
    e = dict(os.environ, NIXL_LOG_LEVEL="INFO")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe", pci,
                        "--role", args.role, "--dir", args.dir, "--standin", args.standin],
                       env=e, capture_output=True, text=True, timeout=300)
    meet("vram-errors", 600)
    try:
        got = {c["case"]: c for c in json.loads(r.stdout.strip().splitlines()[-1])}
    except (ValueError, IndexError):
        raise AssertionError("the probe said nothing (status %d):\n%s"
                             % (r.returncode, r.stderr))
    bad = []
    for case, _, _, with_udmabuf, without in PROBES:
        want, says = with_udmabuf if have_udmabuf() or without is None else without
        c = got.get(case, {"outcome": "not probed", "log": "", "pools": []})
        missing = [m for m in (m.replace("@rdmadev", rdmadev) for m in says)
                   if m not in c["log"]]
        note("%s: %s" % (case, c["outcome"]))
        if c["outcome"] != want or missing:
            bad.append("%s: %s (expected %s), log lacks %s:\n%s" % (
                case, c["outcome"], want, missing, c["log"].strip()))
        elif (want == "ok") != (len(c["pools"]) == 1):
            bad.append("%s: %s, and dma-buf pools %s" % (case, c["outcome"], c["pools"]))
    assert not bad, "\n".join(bad)


def t_send_notif():
    if not max_notify:
        raise Skip()
    if args.role == "b":
        agent.send_notif(other, b"ping\x00\xff")
        poll(lambda: b"pong" in notifs_from(other), 60, "pong")
        meet("notif-done")
        return
    got = []
    poll(lambda: got.extend(notifs_from(other)) or got, 60, "ping")
    assert got == [b"ping\x00\xff"], got
    agent.send_notif(other, b"pong")
    meet("notif-done")
    time.sleep(0.5)
    assert notifs_from(other) == [], "a notification came twice"


def side_agent(name, params=None):
    """Another agent of this process, with a KXFER backend of its own"""
    a = nixl_agent(name, nixl_agent_config(enable_prog_thread=False, backends=[]))
    a.create_backend("KXFER", params or {})
    return a


def put_md(name, a):
    put("md-" + name, base64.b64encode(a.get_agent_metadata()).decode())


def get_md(name):
    return base64.b64decode(get("md-" + name))


def t_forged_notif():
    """A notification is kept as agent X's only if it came from the node
    X's metadata names: an agent on a that calls itself py-x, the name of
    an agent on b that py-b knows, is dropped and counted.  One naming an
    agent py-b has no metadata of is kept (vLLM's prefill never loads its
    decoders' metadata); with notif_unknown=drop (py-s) it is dropped too.
    Genuine ones from py-a reach both."""
    if not max_notify:
        raise Skip()
    if args.role == "a":
        put_md("a", agent)
        x, y = side_agent("py-x"), side_agent("py-y")
        x.add_remote_agent(get_md("b"))
        y.add_remote_agent(get_md("b"))
        y.add_remote_agent(get_md("s"))
        assert agent.add_remote_agent(get_md("s")) == b"py-s"
        meet("forge-ready")
        x.send_notif("py-b", b"forged")
        y.send_notif("py-b", b"unknown")
        y.send_notif("py-s", b"unknown")
        agent.send_notif("py-s", b"genuine")
        agent.send_notif("py-b", b"genuine")
        meet("forge-sent")
        hear("forged-notif")
        return
    x = side_agent("py-x")
    s_ = side_agent("py-s", {"notif_unknown": "drop"})
    put_md("b", agent)
    put_md("s", s_)
    # (NIXL 1.4.0's add_remote_agent gives the name as bytes)
    assert agent.add_remote_agent(x.get_agent_metadata()) == b"py-x"
    assert s_.add_remote_agent(get_md("a")) == b"py-a"
    meet("forge-ready")
    meet("forge-sent")
    got_b, got_s = {}, {}

    def collect():
        deadline, quiet = time.monotonic() + 60, None
        while time.monotonic() < (quiet or deadline):
            for got, a in ((got_b, agent), (got_s, s_)):
                for k, v in a.get_new_notifs().items():
                    got.setdefault(k, []).extend(v)
            if quiet is None and "py-y" in got_b and "py-a" in got_b and "py-a" in got_s:
                quiet = time.monotonic() + 1
            time.sleep(0.01)

    _, exc, log = capture_stderr(collect)
    note(log.strip())
    ok = exc is None and got_b == {"py-y": [b"unknown"], "py-a": [b"genuine"]} and \
        got_s == {"py-a": [b"genuine"]}
    want = [
        "agent py-b dropped a notification claiming to be from agent py-x: it came over "
        "session 'a'",
        "from node 'a', and the agent's metadata names node 'b' (1 dropped so far)",
        "agent py-s dropped a notification claiming to be from agent py-y: no metadata of "
        "agent py-y is loaded here (notif_unknown=drop) (1 dropped so far)",
    ]
    missing = [w for w in want if w not in log]
    tell("forged-notif", ok and not missing)
    assert exc is None, exc
    assert got_b == {"py-y": [b"unknown"], "py-a": [b"genuine"]}, got_b
    assert got_s == {"py-a": [b"genuine"]}, got_s
    assert not missing, missing


def t_release_in_flight():
    """A request released in flight is cancelled: its notification comes
    at most once, and only with all of its data; the next request works."""
    notif = b"released" if max_notify else b""
    if args.role == "a":
        for a in kv:
            a[:] = 0
        meet("rif-ready")
        if notif:
            released = after = 0
            deadline, quiet = time.monotonic() + 60, None
            while time.monotonic() < (quiet or deadline):
                for m in notifs_from(other):
                    if m == notif:
                        released += 1
                        for layer in range(LAYERS):
                            assert np.array_equal(kv[layer], pattern(200 + layer, (BLOCKS, BLOCK)))
                    elif m == b"after":
                        after += 1
                        quiet = time.monotonic() + 1
                    else:
                        raise AssertionError("unexpected notification %r" % m)
                time.sleep(0.002)
            note("released request's notification: %s" % ("came" if released else "cancelled"))
            assert released <= 1 and after == 1, (released, after)
        hear("rif")
        return
    for layer in range(LAYERS):
        kv[layer][:] = pattern(200 + layer, (BLOCKS, BLOCK))
    local = agent.get_xfer_descs([(int(a.ctypes.data), a.nbytes, 0) for a in kv], "DRAM")
    remote = agent.get_xfer_descs([(a, n, 0) for a, n in remote_layers], "DRAM")
    meet("rif-ready")
    h = agent.initialize_xfer("WRITE", local, remote, other, notif)
    note("posted: " + agent.transfer(h))
    h.release()
    h = agent.initialize_xfer("WRITE", local, remote, other, b"after" if notif else b"")
    state = agent.transfer(h)
    if state == "PROC":
        state = wait_xfer(h)
    tell("rif", state == "DONE")
    agent.release_xfer_handle(h)
    assert state == "DONE", state


def t_bad_descs():
    """NIXL's errors, as Python exceptions."""
    if args.role == "a":
        meet("bad-done")
        return
    unreg = np.zeros(8192, dtype=np.uint8)
    a0, n0 = remote_layers[0]
    cases = [
        ("unregistered local memory", [(int(unreg.ctypes.data), 4096, 0)], [(a0, 4096, 0)],
         other, "nixlNotFoundError"),
        ("remote past its buffer", [(int(kv[0].ctypes.data), 4096, 0)],
         [(a0 + n0 - 100, 4096, 0)], other, "nixlNotFoundError"),
        ("lengths differ", [(int(kv[0].ctypes.data), 4096, 0)], [(a0, 4095, 0)], other,
         "nixlInvalidParamError"),
        ("unknown agent", [(int(kv[0].ctypes.data), 4096, 0)], [(a0, 4096, 0)], "py-zz",
         "nixlNotFoundError"),
    ]
    bad = []
    for what, local, remote, to, want in cases:
        try:
            h = agent.initialize_xfer("WRITE", agent.get_xfer_descs(local, "DRAM"),
                                      agent.get_xfer_descs(remote, "DRAM"), to)
            h.release()
            got = "no error"
        except Exception as e:  # the binding's classes are not exported by name
            got = type(e).__name__
        if got != want:
            bad.append("%s: %s, expected %s" % (what, got, want))
    meet("bad-done")
    assert not bad, bad


def t_session_gone():
    """The session to a is deleted while b writes to it: the transfer ends
    with REMOTE_DISCONNECT and NIXL forgets the agent; the session comes
    back for what follows."""
    if args.role == "a":
        meet("sg-done", 300)
        return
    local = agent.get_xfer_descs([(int(a.ctypes.data), a.nbytes, 0) for a in kv], "DRAM")
    remote = agent.get_xfer_descs([(a, n, 0) for a, n in remote_layers], "DRAM")
    h = agent.initialize_xfer("WRITE", local, remote, other)
    outcome, deleted = None, False
    try:
        for _ in range(1000):
            state = agent.transfer(h)
            if not deleted:  # while the first one is in flight
                subprocess.run(["kxferctl", "peer", "del", args.session], check=True)
                deleted = True
            if state == "PROC":
                state = wait_xfer(h)
            if state != "DONE":
                outcome = state
                break
    except Exception as e:
        outcome = type(e).__name__
    note("after peer del: %s" % outcome)
    try:
        agent.initialize_xfer("WRITE", local, remote, other).release()
        after = "no error"
    except Exception as e:
        after = type(e).__name__
    subprocess.run(["kxferctl", "peer", "add", args.session, args.peer_addr], check=True)
    meet("sg-done", 300)
    assert outcome == "nixlRemoteDisconnectError", outcome
    assert after == "nixlNotFoundError", after


# nothing works without an agent, memory and metadata
ESSENTIAL = {"agent", "register_kv", "metadata_p2p"}

TESTS = [
    ("agent", t_agent),
    ("register_kv", t_register_kv),
    ("vram_register", t_vram_register),
    ("metadata_p2p", t_metadata_p2p),
    ("kv_push", t_kv_push),
    ("read_back", t_read_back),
    ("scoped", t_scoped),
    ("vram_xfer", t_vram_xfer),
    ("vram_errors", t_vram_errors),
    ("send_notif", t_send_notif),
    ("forged_notif", t_forged_notif),
    ("release_in_flight", t_release_in_flight),
    ("bad_descs", t_bad_descs),
    ("session_gone", t_session_gone),
]


def main():
    global args, me, other
    p = argparse.ArgumentParser()
    p.add_argument("--role", choices=["a", "b"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--peer-addr", default="10.99.0.1")
    p.add_argument("--session", default="a", help="b's kxfer session to a")
    p.add_argument("--port", type=int, default=5555, help="this agent's listener")
    p.add_argument("--peer-port", type=int, default=5555, help="the other agent's")
    p.add_argument("--standin", required=True,
                   help="the folder of the GPU drivers' stand-in (build/nixl/standin)")
    p.add_argument("--probe", metavar="PCI", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.standin = os.path.abspath(args.standin)
    if args.probe:
        return probe(args.probe)
    args.other_role = "b" if args.role == "a" else "a"
    me, other = "py-" + args.role, "py-" + args.other_role
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
            result = "ok %d %s" % (i, name)
        except Skip:
            result = "ok %d %s # SKIP no notifications in this kxfer module" % (i, name)
        except Exception:
            note(traceback.format_exc())
            result = "not ok %d %s" % (i, name)
            failed += 1
            if name in ESSENTIAL:  # nothing works without them
                print(result)
                for j, (rest, _) in enumerate(TESTS[i:], i + 1):
                    print("not ok %d %s" % (j, rest))
                    failed += 1
                break
        note("%s (%.1f s)" % (name, time.monotonic() - t0))
        print(result)
        sys.stdout.flush()
    put("done." + args.role)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
