#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nixl-race.py: nixl-race (nixl-race.cpp) on NIXL's Python API.

    nixl-race.py --role prefill|decode --dir DIR [--out FILE] [options]

The same client as nixl-race.cpp, written as a Python inference engine
writes it on nixl_agent (vLLM's NixlConnector, SGLang, Dynamo): the same
agents, buffers, cases, descriptors, schedule, messages and output (one
JSON line per phase the side times), with "client": "py".  The two
guests run the same client.  See nixl-race.cpp for the cases and the
protocol; the options are the same.  NIXL's Python package, libraries
and plugins come from the environment (PYTHONPATH, LD_LIBRARY_PATH,
NIXL_PLUGIN_DIR); NIXL_RACE_PERF_CTL as for nixl-race.

Exit status 0, 1 on any failure, 2 usage.
"""

import argparse
import glob
import json
import logging
import mmap
import os
import resource
import sys
import time

import numpy as np

import nixl  # noqa: F401  (sets nixl._api up)
from nixl._api import nixl_agent, nixl_agent_config

if not os.environ.get("NIXL_LOG_LEVEL"):
    logging.getLogger("nixl").setLevel(logging.WARNING)

# The KV layout: kxfer-bench kv's parameters (nixl-race.cpp)
LAYERS, TOKENS, TOK_BYTES = 16, 512, 256
TB = TOKENS * TOK_BYTES
PREFILL_AREA = LAYERS * 2 * TB  # 4 MiB per request
SPAN = 4 * 2 * TB  # decode: a layer's slots, 4x
DECODE_AREA = LAYERS * SPAN  # 16 MiB per request
SEED = 1
MAX_INFLIGHT = 8
VLLM_PGB = 16 * TOK_BYTES

# name -> (vllm, page tokens, K and V together, requests in flight)
CASES = {}
for _p in (1, 16):
    for _t in (True, False):
        for _r in (1, 8):
            CASES["push_p%d_%s_r%d" % (_p, "together" if _t else "apart", _r)] = (False, _p, _t, _r)
for _r in (1, 8):
    CASES["vllm_r%d" % _r] = (True, 16, False, _r)
CASE_ORDER = ["push_p1_together_r1", "push_p1_together_r8", "push_p1_apart_r1",
              "push_p1_apart_r8", "push_p16_together_r1", "push_p16_together_r8",
              "push_p16_apart_r1", "push_p16_apart_r8", "vllm_r1", "vllm_r8"]

args = None


def die(msg):
    """Exits at once: NIXL's teardown of agents in use is no help."""
    sys.stderr.write("nixl-race.py %s: %s\n" % (args.role, msg))
    sys.stderr.flush()
    os._exit(1)


def pick_slots(n, rng):
    """xorshift32 and the slot pick of kxfer-bench kv: the same layout."""
    state = SEED
    allv = list(range(rng))
    slot = []
    for i in range(n):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        j = i + state % (rng - i)
        allv[i], allv[j] = allv[j], allv[i]
        slot.append(allv[i])
    return slot


def layer_segs(page, together):
    """Per layer, (prefill offset, decode offset, length) rows: kv_build."""
    pages = TOKENS // page
    pgb = page * TOK_BYTES
    slot = np.array(pick_slots(pages, 4 * pages), dtype=np.int64)
    p = np.arange(pages, dtype=np.int64)
    out = []
    for l in range(LAYERS):
        lbase, rbase = l * 2 * TB, l * SPAN
        if together:
            rows = [np.stack([lbase + p * 2 * pgb, rbase + slot * 2 * pgb,
                              np.full(pages, 2 * pgb)], axis=1)]
        else:
            rows = [np.stack([lbase + p * pgb, rbase + slot * pgb, np.full(pages, pgb)], axis=1),
                    np.stack([lbase + TB + p * pgb, rbase + SPAN // 2 + slot * pgb,
                              np.full(pages, pgb)], axis=1)]
        out.append(np.concatenate(rows))
    return out


def pattern(offsets):
    """The bytes of prefill's buffer at these offsets (pat() of nixl-race.cpp)."""
    x = offsets.astype(np.uint32) * np.uint32(0x9E3779B1)
    x ^= x >> np.uint32(15)
    return (x & np.uint32(0xFF)).astype(np.uint8)


def add_counter_files(hw, pattern, prefix="", skip=None):
    """Add the integer in each file matching pattern to hw, under prefix
    and the file's name; files under skip are left out."""
    for path in glob.glob(pattern):
        if skip and path.startswith(skip):
            continue
        try:
            with open(path) as f:
                v = int(f.read())
        except (OSError, ValueError):
            continue
        name = prefix + os.path.basename(path)
        hw[name] = hw.get(name, 0) + v


def link_counters():
    """The link as this guest sees it: its RDMA devices' port counters
    (hw_counters) summed by name, and its network devices' bytes but the
    loopback's (net_rx_bytes, net_tx_bytes); nixl-race.cpp's linkCounters()."""
    hw = {}
    add_counter_files(hw, "/sys/class/infiniband/*/ports/*/hw_counters/*")
    add_counter_files(hw, "/sys/class/net/*/statistics/[rt]x_bytes", "net_",
                      "/sys/class/net/lo/")
    return hw


def cpu_now():
    """The whole guest's busy and idle seconds, and this process's."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    tck = os.sysconf("SC_CLK_TCK")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ((v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tck, (v[3] + v[4]) / tck,
            ru.ru_utime + ru.ru_stime)


_perf_fd = None


def perf_ctl(cmd):
    """Profile the window only: tell perf record (NIXL_RACE_PERF_CTL)."""
    global _perf_fd
    path = os.environ.get("NIXL_RACE_PERF_CTL")
    if not path:
        return
    if _perf_fd is None:
        _perf_fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    os.write(_perf_fd, cmd.encode())


def put_file(name, data):
    tmp = os.path.join(args.dir, "." + name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, os.path.join(args.dir, name))


def get_file(name):
    path = os.path.join(args.dir, name)
    deadline = time.monotonic() + args.timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            die("no %s from the other guest" % path)
        time.sleep(0.05)
    with open(path, "rb") as f:
        return f.read()


def idle(worked):
    if not worked and args.sleep_us > 0:
        time.sleep(args.sleep_us / 1e6)


class Agent:
    """An agent of one backend."""

    def __init__(self, role, other, spec, buf):
        # NAME[:KEY=VALUE]...: NIXL's backend NAME with those parameters
        words = spec.split(":")
        backend, params = words[0], {}
        for kv in words[1:]:
            if "=" not in kv:
                die("backend %s: not KEY=VALUE: %s" % (spec, kv))
            k, v = kv.split("=", 1)
            params[k] = v
        ident = "".join(c if c.isalnum() else "_" for c in spec)
        self.backend = spec
        self.name = "%s-%s" % (role, ident)
        self.remote = "%s-%s" % (other, ident)
        self.agent = nixl_agent(self.name, nixl_agent_config(enable_prog_thread=False,
                                                             backends=[]))
        if backend not in self.agent.get_plugin_list():
            die("no NIXL plugin %s (NIXL_PLUGIN_DIR=%s)"
                % (backend, os.environ.get("NIXL_PLUGIN_DIR", "")))
        self.agent.create_backend(backend, params)
        self.bk = [backend]
        self.reg = self.agent.register_memory([(buf.addr, buf.len, 0, "")], "DRAM",
                                              backends=self.bk)
        self.early = []
        self.local_all = self.remote_all = None

    def notifs(self):
        out, self.early = self.early, []
        for sender, msgs in self.agent.get_new_notifs(backends=self.bk).items():
            if sender != self.remote:
                die("a notification from %s" % sender)
            out.extend(m.decode() for m in msgs)
        return out

    def send(self, msg):
        # the agent's only backend (NIXL 1.4.0's send_notif(backend=...)
        # passes genNotif a handle where it wants a list of them)
        self.agent.send_notif(self.remote, msg.encode())

    def wait_for(self, prefix):
        deadline = time.monotonic() + args.timeout
        while True:
            got = self.notifs()
            for i, m in enumerate(got):
                if m.startswith(prefix):
                    del got[i]
                    self.early = got
                    return m
            self.early = got
            if time.monotonic() > deadline:
                die("%s: no '%s' from %s" % (self.backend, prefix, self.remote))
            idle(False)

    def done(self, h):
        s = self.agent.check_xfer_state(h)
        if s == "ERR":
            die("%s: a transfer failed" % self.backend)
        return s == "DONE"

    def post(self, h):
        if self.agent.transfer(h) == "ERR":
            die("%s: posting a transfer failed" % self.backend)


class Buffer:
    """This side's buffer: prefill's holds the pattern, decode's receives."""

    def __init__(self, prefill):
        self.len = MAX_INFLIGHT * (PREFILL_AREA if prefill else DECODE_AREA)
        self._map = mmap.mmap(-1, self.len, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.mem = np.frombuffer(self._map, dtype=np.uint8)
        self.addr = int(self.mem.ctypes.data)
        if prefill:
            for r in range(MAX_INFLIGHT):
                o = np.arange(r * PREFILL_AREA, (r + 1) * PREFILL_AREA, dtype=np.uint32)
                self.mem[r * PREFILL_AREA:(r + 1) * PREFILL_AREA] = pattern(o)
        else:
            self.mem[:] = 0


class Side:
    def __init__(self):
        self.prefill = args.role == "prefill"
        self.role = args.role
        self.other = "decode" if self.prefill else "prefill"
        self.buf = Buffer(self.prefill)
        self.agents = [Agent(self.role, self.other, b, self.buf) for b in args.backends]
        for a in self.agents:
            put_file("%s.%s.md" % (args.tag, a.name), a.agent.get_agent_metadata())
        put_file("%s.%s.addr" % (args.tag, self.role), str(self.buf.addr).encode())
        self.other_base = int(get_file("%s.%s.addr" % (args.tag, self.other)))
        for a in self.agents:
            name = a.agent.add_remote_agent(get_file("%s.%s.md" % (args.tag, a.remote)))
            name = name.decode() if isinstance(name, bytes) else name
            if name != a.remote:
                die("the other agent is %s, not %s" % (name, a.remote))
            if not self.prefill:
                self.prep_vllm(a)

    def prep_vllm(self, a):
        """vLLM's lists: decode's every 16-token block of its buffer, prefill's
        of its own; a request's descriptors are indices into them."""
        def blocks(base, length):
            n = length // VLLM_PGB
            return np.stack([base + np.arange(n, dtype=np.int64) * VLLM_PGB,
                             np.full(n, VLLM_PGB, dtype=np.int64),
                             np.zeros(n, dtype=np.int64)], axis=1)
        a.local_all = a.agent.prep_xfer_dlist("NIXL_INIT_AGENT", blocks(self.buf.addr, self.buf.len),
                                              "DRAM", backends=a.bk)
        a.remote_all = a.agent.prep_xfer_dlist(a.remote,
                                               blocks(self.other_base, MAX_INFLIGHT * PREFILL_AREA),
                                               "DRAM", backends=a.bk)

    def lists(self, a, case, segs):
        """Per area and layer, the descriptor lists of both sides (made once
        per phase, as an engine keeps them per request); vllm: the indices."""
        vllm, _, _, inflight = case
        mine, theirs, lidx, ridx = [], [], [], []
        for r in range(inflight):
            m, t, li, ri = [], [], [], []
            for layer in segs:
                pre = r * PREFILL_AREA + layer[:, 0]
                dec = r * DECODE_AREA + layer[:, 1]
                ln = layer[:, 2]
                z = np.zeros_like(ln)
                if self.prefill:
                    lo, ro = self.buf.addr + pre, self.other_base + dec
                else:
                    lo, ro = self.buf.addr + dec, self.other_base + pre
                if vllm:
                    li.append(dec // VLLM_PGB)
                    ri.append(pre // VLLM_PGB)
                else:
                    m.append(a.agent.get_xfer_descs(np.stack([lo, ln, z], axis=1), "DRAM"))
                    t.append(a.agent.get_xfer_descs(np.stack([ro, ln, z], axis=1), "DRAM"))
            mine.append(m)
            theirs.append(t)
            if vllm:
                lidx.append(np.concatenate(li).astype(np.int32))
                ridx.append(np.concatenate(ri).astype(np.int32))
        return mine, theirs, lidx, ridx

    def clear(self, inflight, segs):
        for r in range(inflight):
            for layer in segs:
                ar = np.arange(layer[0, 2], dtype=np.int64)[None, :]
                self.buf.mem[(r * DECODE_AREA + layer[:, 1])[:, None] + ar] = 0

    def check(self, name, inflight, segs):
        for r in range(inflight):
            for layer in segs:
                ar = np.arange(layer[0, 2], dtype=np.int64)[None, :]
                got = self.buf.mem[(r * DECODE_AREA + layer[:, 1])[:, None] + ar]
                want = pattern((r * PREFILL_AREA + layer[:, 0])[:, None] + ar)
                if not np.array_equal(got, want):
                    sys.stderr.write("nixl-race.py: %s: area %d differs\n" % (name, r))
                    return False
        return True


class Req:
    def __init__(self, rid, area):
        self.id, self.area = rid, area
        self.xfers, self.last = [], None


def start_req(a, case, ls, phase, q):
    vllm = case[0]
    mine, theirs, lidx, ridx = ls
    if vllm:
        q.last = a.agent.make_prepped_xfer("READ", a.local_all, lidx[q.area], a.remote_all,
                                           ridx[q.area], b"done %d %d" % (phase, q.id),
                                           backends=a.bk)
        a.post(q.last)
        return
    for layer in range(LAYERS - 1):
        h = a.agent.initialize_xfer("WRITE", mine[q.area][layer], theirs[q.area][layer],
                                    a.remote, b"", backends=a.bk)
        a.post(h)
        q.xfers.append(h)


def step_req(a, ls, phase, q):
    """Move q on: (over, worked)."""
    worked = False
    while q.xfers and a.done(q.xfers[-1]):
        a.agent.release_xfer_handle(q.xfers.pop())
        worked = True
    if q.xfers:
        return False, worked
    if q.last is None:
        mine, theirs, _, _ = ls
        q.last = a.agent.initialize_xfer("WRITE", mine[q.area][LAYERS - 1],
                                         theirs[q.area][LAYERS - 1], a.remote,
                                         b"done %d %d" % (phase, q.id), backends=a.bk)
        a.post(q.last)
        worked = True
    if not a.done(q.last):
        return False, worked
    a.agent.release_xfer_handle(q.last)
    return True, True


def worker(side, a, name, case, phase, ls, segs):
    p = str(phase)
    reqs = []
    m0 = m1 = (0.0, 0.0, 0.0)
    ended = False
    last = time.monotonic()
    if not side.prefill:
        side.clear(case[3], segs)
    a.send("ready " + p)
    while not ended or reqs:
        worked = False
        for m in a.notifs():
            w = m.split()
            if len(w) < 2 or w[1] != p:
                die("message '%s' in phase %s" % (m, p))
            worked = True
            if w[0] == "go":
                q = Req(int(w[2]), int(w[3]))
                start_req(a, case, ls, phase, q)
                reqs.append(q)
            elif w[0] == "mark" and w[2] == "start":
                m0 = cpu_now()
                perf_ctl("enable\n")
            elif w[0] == "mark" and w[2] == "end":
                perf_ctl("disable\n")
                m1 = cpu_now()
            elif w[0] == "end":
                ended = True
            else:
                die("message '%s'" % m)
        left = []
        for q in reqs:
            over, did = step_req(a, ls, phase, q)
            worked = worked or did
            if not over:
                left.append(q)
        reqs = left
        if worked:
            last = time.monotonic()
        elif time.monotonic() - last > args.timeout:
            die("%s: phase %s (%s) stalled" % (a.backend, p, name))
        idle(worked)
    ok = side.prefill or side.check(name, case[3], segs)
    a.send("stats %s %.4f %.4f %d %.4f %s" % (p, m1[0] - m0[0], m1[1] - m0[1],
                                              os.cpu_count(), m1[2] - m0[2],
                                              "ok" if ok else "bad"))


def timer(side, a, name, case, phase, segs):
    p = str(phase)
    inflight_n = case[3]
    min_reqs = max(3, inflight_n)
    inflight = {}
    nxt = done_count = 0
    window_open = stopping = False
    lat, reqs, secs = [], 0, 0.0
    t0 = t1 = (0.0, 0.0, 0.0)
    hw0 = hw1 = {}
    w_start = 0.0
    last = time.monotonic()
    if not side.prefill:
        side.clear(inflight_n, segs)
    a.wait_for("ready " + p)
    phase_start = time.monotonic()

    def issue(area):
        nonlocal nxt
        inflight[nxt] = (time.monotonic(), area)
        a.send("go %s %d %d" % (p, nxt, area))
        nxt += 1

    for r in range(inflight_n):
        issue(r)
    while inflight:
        worked = False
        for m in a.notifs():
            w = m.split()
            if len(w) != 3 or w[0] != "done" or w[1] != p or int(w[2]) not in inflight:
                die("message '%s' in phase %s" % (m, p))
            now = time.monotonic()
            t, area = inflight.pop(int(w[2]))
            worked = True
            done_count += 1
            if window_open and not stopping:
                lat.append((now - t) * 1e6)
                reqs += 1
                if reqs >= min_reqs and now - w_start >= args.secs:
                    perf_ctl("disable\n")
                    t1 = cpu_now()
                    hw1 = link_counters()
                    secs = time.monotonic() - w_start
                    a.send("mark %s end" % p)
                    stopping = True
            if not window_open and done_count == inflight_n:
                window_open = True
                perf_ctl("enable\n")
                t0 = cpu_now()
                hw0 = link_counters()
                w_start = time.monotonic()
                a.send("mark %s start" % p)
            if not stopping:
                issue(area)
        if worked:
            last = time.monotonic()
        elif time.monotonic() - last > args.timeout:
            die("%s: phase %s (%s) stalled" % (a.backend, p, name))
        idle(worked)
    total, phase_secs = nxt, time.monotonic() - phase_start
    a.send("end " + p)
    stats = a.wait_for("stats " + p).split()[2:]
    if len(stats) != 5:
        die("bad stats from the other side")
    ok = stats[4] == "ok" and (side.prefill or side.check(name, inflight_n, segs))
    return lat, reqs, secs, t0, t1, stats, ok, total, phase_secs, hw0, hw1


def write_result(f, a, name, case, rep, phase, order, segs, res, prefill):
    lat, reqs, secs, t0, t1, st, ok, total, phase_secs, hw0, hw1 = res
    vllm, page, together, inflight = case
    nbytes = int(sum(int(layer[:, 2].sum()) for layer in segs))
    descs = sum(len(layer) for layer in segs)
    lat = sorted(lat)
    row = {"client": args.tag, "backend": a.backend, "case": name,
           "kind": "vllm" if vllm else "push", "page": page, "together": together,
           "inflight": inflight, "rep": rep, "phase": phase, "order": order,
           "timer": "prefill" if prefill else "decode", "bytes_per_req": nbytes,
           "descs_per_req": descs, "xfers_per_req": 1 if vllm else LAYERS,
           "poll": "busy" if args.sleep_us < 0 else "sleep:%d" % args.sleep_us,
           "reqs": reqs, "secs": round(secs, 6),
           "mb_per_sec": round(nbytes * reqs / secs / 1e6, 3) if secs > 0 else 0,
           "lat_p50_us": round(lat[len(lat) // 2], 1) if lat else 0,
           "lat_mean_us": round(sum(lat) / len(lat), 1) if lat else 0,
           "lat_min_us": round(lat[0], 1) if lat else 0,
           "lat_max_us": round(lat[-1], 1) if lat else 0,
           "t_busy_secs": round(t1[0] - t0[0], 4), "t_idle_secs": round(t1[1] - t0[1], 4),
           "t_proc_secs": round(t1[2] - t0[2], 4), "t_ncpus": os.cpu_count(),
           "w_busy_secs": float(st[0]), "w_idle_secs": float(st[1]), "w_ncpus": int(st[2]),
           "w_proc_secs": float(st[3]),
           "t_hw": {k: v - hw0[k] for k, v in hw1.items() if k in hw0},
           "reqs_total": total,
           "phase_secs": round(phase_secs, 3), "checked": ok}
    f.write(json.dumps(row) + "\n")
    f.flush()


def settle(side):
    """Between phases, every agent is progressed for a while (settle() of
    nixl-race.cpp); messages are kept for their phase."""
    until = time.monotonic() + 0.02
    while True:
        for a in side.agents:
            a.early = a.notifs()
        if time.monotonic() >= until:
            return


def hello(side):
    """Every agent hears the other side's before anything is timed: two
    rounds, every agent polled in each (UCX connects an endpoint, and sends
    what waits on it, only while both sides progress it)."""
    deadline = time.monotonic() + args.timeout
    for rnd in ("hello ", "hello2 "):
        heard = set()
        for a in side.agents:
            a.send(rnd + a.name)
        while len(heard) < len(side.agents):
            for a in side.agents:
                later = []
                for m in a.notifs():
                    if m != rnd + a.remote or a.name in heard:
                        later.append(m)  # the other side is a round or a phase ahead
                        continue
                    heard.add(a.name)
                a.early = later
            if time.monotonic() > deadline:
                die("no hello from the other side on every backend")
            idle(False)


def run(side):
    out = open(args.out, "a") if args.out else None
    phase = 0
    for name in args.cases:
        case = CASES[name]
        segs = layer_segs(case[1], case[2])
        timing = side.prefill if case[0] else not side.prefill
        for rep in range(args.rep_base, args.rep_base + args.reps):
            order = list(range(len(side.agents)))
            if rep % 2 == 0:
                order.reverse()
            for k, i in enumerate(order):
                a = side.agents[i]
                phase += 1
                settle(side)
                ls = side.lists(a, case, segs)
                if timing:
                    sys.stderr.write("nixl-race.py: rep %d %s %s\n" % (rep, name, a.backend))
                    res = timer(side, a, name, case, phase, segs)
                    if not res[6]:
                        die("%s on %s: the data did not arrive intact" % (name, a.backend))
                    if out:
                        write_result(out, a, name, case, rep, phase, k, segs, res, side.prefill)
                else:
                    worker(side, a, name, case, phase, ls, segs)
    if out:
        out.close()


def main():
    global args
    p = argparse.ArgumentParser(description="nixl-race on NIXL's Python API")
    p.add_argument("--role", required=True, choices=["prefill", "decode"])
    p.add_argument("--dir", required=True)
    p.add_argument("--out", default="")
    p.add_argument("--backends", default="KXFER,UCX")
    p.add_argument("--cases", default=",".join(CASE_ORDER))
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--rep-base", type=int, default=1)
    p.add_argument("--secs", type=float, default=3.0)
    p.add_argument("--poll", default="busy")
    p.add_argument("--tag", default="py")
    p.add_argument("--timeout", type=int, default=300)
    args = p.parse_args()
    args.backends = [b for b in args.backends.split(",") if b]
    args.cases = [c for c in args.cases.split(",") if c]
    for c in args.cases:
        if c not in CASES:
            p.error("no case %s" % c)
    if args.poll == "busy":
        args.sleep_us = -1
    elif args.poll.startswith("sleep:"):
        args.sleep_us = int(args.poll[6:])
    else:
        p.error("--poll busy or sleep:US")
    if args.reps < 1 or args.secs <= 0 or not args.backends:
        p.error("bad --reps, --secs or --backends")
    side = Side()
    hello(side)
    run(side)
    for a in side.agents:
        a.agent.deregister_memory(a.reg, backends=a.bk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
