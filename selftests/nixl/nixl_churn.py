#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nixl_churn.py: a NIXL agent that comes and goes against a long-lived
one (issue 40): what the KXFER backend takes from the kernel, it gives
back.

    nixl_churn.py --role keeper|churn --dir DIR [--rounds N]

The keeper (one agent for the whole run) and, on the other node, a
process in which an agent comes and goes N times.  In each round the new
agent registers a buffer and hands its metadata over (a file in DIR);
the keeper loads it (add_remote_agent), WRITEs into the buffer with a
notification, and the agent checks the bytes, READs the keeper's buffer
back and checks those; then the agent drops the keeper
(remove_remote_agent), deregisters and ends, and the keeper drops the
agent (remove_remote_agent: NIXL's unloadMD and disconnect).

What it checks: every round's bytes and its one notification; and that
the kernel's object counts on each node are the same after the last
round as before the first: the handles of /dev/kxfer files on each
session (kxferctl peer show's handles), the sessions, pools and exports
(kxferctl pool show, export show).

Output is TAP; the side channel is DIR, a folder both see.
"""

import argparse
import base64
import gc
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
    sys.exit("nixl_churn.py: NIXL's Python package: %s (PYTHONPATH=%s)"
             % (e, os.environ.get("PYTHONPATH", "")))
from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402

BUF_LEN = 16384
args = None


def note(msg):
    for line in str(msg).splitlines():
        print("# " + line)
    sys.stdout.flush()


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
        if os.path.exists(path("failed." + args.other)):
            raise AssertionError("%s failed" % args.other)
        if time.monotonic() > deadline:
            raise AssertionError("nothing named %s from %s" % (name, args.other))
        time.sleep(0.005)
    with open(path(name)) as f:
        return f.read()


def kxferctl_json(*what):
    out = subprocess.run(["kxferctl", "-j"] + list(what), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out or "[]")


def counts():
    """What the kernel holds on this node: handles per session, and how
    many sessions, pools and exports there are"""
    peers = kxferctl_json("peer", "show")
    return {
        "handles": {p["name"]: p.get("handles", 0) for p in peers},
        "sessions": len(peers),
        "pools": len(kxferctl_json("pool", "show")),
        "exports": len(kxferctl_json("export", "show")),
    }


def settled(want, timeout=20):
    """counts() once it equals @want (withdrawals finish after close), or
    what it is at the timeout"""
    deadline = time.monotonic() + timeout
    while True:
        now = counts()
        if now == want or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def pattern(rnd, who):
    return np.random.default_rng(rnd * 2 + who).integers(0, 256, BUF_LEN, dtype=np.uint8)


def wait_xfer(agent, h, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        state = agent.check_xfer_state(h)
        if state != "PROC" or time.monotonic() > deadline:
            return state
        time.sleep(0.001)


def keeper():
    agent = nixl_agent("keeper", nixl_agent_config(enable_prog_thread=False,
                                                  backends=["KXFER"]))
    buf = np.zeros(BUF_LEN, dtype=np.uint8)
    addr = int(buf.ctypes.data)
    agent.register_memory(agent.get_reg_descs([(addr, BUF_LEN, 0, "")], "DRAM"))
    put("keeper", json.dumps({"md": base64.b64encode(agent.get_agent_metadata()).decode(),
                              "addr": addr}))
    first = counts()
    for rnd in range(args.rounds):
        m = json.loads(get("round-%d" % rnd))
        name = agent.add_remote_agent(base64.b64decode(m["md"]))
        buf[:] = pattern(rnd, 0)
        h = agent.initialize_xfer(
            "WRITE", agent.get_xfer_descs([(addr, BUF_LEN, 0)], "DRAM"),
            agent.get_xfer_descs([(m["addr"], BUF_LEN, 0)], "DRAM"), name,
            b"round-%d" % rnd)
        state = agent.transfer(h)
        if state == "PROC":
            state = wait_xfer(agent, h)
        assert state == "DONE", "round %d: the write is %s" % (rnd, state)
        agent.release_xfer_handle(h)
        put("written-%d" % rnd)
        get("done-%d" % rnd)
        agent.remove_remote_agent(name)
        put("ack-%d" % rnd)
    last = settled(first)
    note("before: %s" % first)
    note("after round %d: %s" % (args.rounds, last))
    put("keeper-done")
    get("churn-done")
    assert last == first, "the keeper's node holds more than before"
    agent.deregister_memory(agent.get_reg_descs([(addr, BUF_LEN, 0, "")], "DRAM"))


def churn():
    k = json.loads(get("keeper"))
    first = counts()
    for rnd in range(args.rounds):
        agent = nixl_agent("churn-%d" % rnd, nixl_agent_config(enable_prog_thread=False,
                                                               backends=["KXFER"]))
        buf = np.zeros(2 * BUF_LEN, dtype=np.uint8)
        addr = int(buf.ctypes.data)
        reg = agent.get_reg_descs([(addr, 2 * BUF_LEN, 0, "")], "DRAM")
        agent.register_memory(reg)
        keeper_name = agent.add_remote_agent(base64.b64decode(k["md"]))
        put("round-%d" % rnd, json.dumps({
            "md": base64.b64encode(agent.get_agent_metadata()).decode(), "addr": addr}))
        get("written-%d" % rnd)
        deadline, got = time.monotonic() + 60, []
        while not got and time.monotonic() < deadline:
            got = agent.get_new_notifs().get("keeper", [])
            time.sleep(0.001)
        assert got == [b"round-%d" % rnd], "round %d: notifications %r" % (rnd, got)
        assert np.array_equal(buf[:BUF_LEN], pattern(rnd, 0)), "round %d: written bytes" % rnd
        h = agent.initialize_xfer(
            "READ", agent.get_xfer_descs([(addr + BUF_LEN, BUF_LEN, 0)], "DRAM"),
            agent.get_xfer_descs([(k["addr"], BUF_LEN, 0)], "DRAM"), keeper_name)
        state = agent.transfer(h)
        if state == "PROC":
            state = wait_xfer(agent, h)
        assert state == "DONE", "round %d: the read is %s" % (rnd, state)
        assert np.array_equal(buf[BUF_LEN:], pattern(rnd, 0)), "round %d: read bytes" % rnd
        agent.release_xfer_handle(h)
        agent.remove_remote_agent(keeper_name)
        agent.deregister_memory(reg)
        del agent, h, reg  # (a handle's object refers to its agent)
        gc.collect()
        put("done-%d" % rnd)
        get("ack-%d" % rnd)
    last = settled(first)
    note("before: %s" % first)
    note("after round %d: %s" % (args.rounds, last))
    put("churn-done")
    get("keeper-done")
    assert last == first, "the churning agent's node holds more than before"


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--role", choices=["keeper", "churn"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=100)
    args = p.parse_args()
    args.other = "churn" if args.role == "keeper" else "keeper"
    os.makedirs(args.dir, exist_ok=True)

    print("TAP version 13")
    print("1..1")
    print("#  RUN           come_and_go ...")
    t0 = time.monotonic()
    try:
        keeper() if args.role == "keeper" else churn()
        print("ok 1 come_and_go")
        ret = 0
    except Exception:
        note(traceback.format_exc())
        put("failed." + args.role)
        print("not ok 1 come_and_go")
        ret = 1
    note("come_and_go, %d rounds (%.1f s)" % (args.rounds, time.monotonic() - t0))
    return ret


if __name__ == "__main__":
    sys.exit(main())
