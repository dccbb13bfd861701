#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nixl_test.py: the KXFER backend through NIXL's Python API (nixl_agent).

    nixl_test.py --role a|b --dir DIR [--peer-addr ADDR] [--port PORT]

What vLLM's and SGLang's NIXL connectors do, between two guests
(selftests/guest/nixl.sh): agent "py-a" (guest a, the decode side) holds a
KV cache of numpy arrays, one per layer, of blocks; agent "py-b" (guest b,
prefill) pushes blocks into it with one prepared transfer per request and
a notification, and reads them back. Metadata goes NIXL's own way (its P2P
listener: send_local_metadata, fetch_remote_metadata); the block tables
go through DIR, the guests' shared folder, where they also meet. Output
is TAP, the same tests in the same order on both sides.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

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

args = None
me = other = None
agent = None
kv = []  # this side's layers
remote_layers = []  # the other side's: (addr, len) per layer
max_notify = 0


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
    deadline = time.monotonic() + timeout
    while not os.path.exists(path(name)):
        if os.path.exists(path("done." + args.other_role)) or time.monotonic() > deadline:
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
    assert agent.get_backend_mem_types("KXFER") == ["DRAM_SEG"], agent.get_backend_mem_types(
        "KXFER"
    )
    max_notify = int(agent.get_backend_params("KXFER").get("max_notify_len", "0"))
    note("max_notify_len %d" % max_notify)


def t_register_kv():
    # numpy's buffers are not page aligned: the pools cover their pages
    for layer in range(LAYERS):
        kv.append(np.zeros((BLOCKS, BLOCK), dtype=np.uint8))
    agent.register_memory(layer_descs(kv), "DRAM")
    put("layers." + args.role, json.dumps([[int(a.ctypes.data), a.nbytes] for a in kv]))
    remote_layers.extend(tuple(x) for x in json.loads(get("layers." + args.other_role)))


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


TESTS = [
    ("agent", t_agent),
    ("register_kv", t_register_kv),
    ("metadata_p2p", t_metadata_p2p),
    ("kv_push", t_kv_push),
    ("read_back", t_read_back),
    ("send_notif", t_send_notif),
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
    args = p.parse_args()
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
            if i <= 3:  # nothing works without agent, memory and metadata
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
