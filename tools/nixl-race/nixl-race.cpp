// SPDX-License-Identifier: Apache-2.0
/*
 * nixl-race: one NIXL client, two backends (KXFER and UCX), the same
 * buffers and descriptors, between two guests: what a vLLM or Dynamo user
 * choosing a NIXL backend compares (make bench, tools/bench/run).
 *
 *   nixl-race --role prefill|decode --dir DIR --out FILE [options]
 *
 * Both guests run it at once, one per role; nixl-race.py is the same
 * client on NIXL's Python API, with the same cases, messages and output.
 * Each process makes one agent per backend ("<role>-<BACKEND>", no
 * progress thread: the client drives NIXL itself, as both engines do
 * when they poll), each registering the same KV buffer; the agents'
 * metadata meet in DIR (the guests' shared folder).  Then every side
 * walks the same schedule of phases: for each case, each repetition,
 * each backend in turn (which goes first alternates with the
 * repetition), so that the repetitions of a case, and the two backends
 * in each, run close together in time: the host's load drifts over
 * minutes.  A phase is one case on one backend:
 *
 *   push_pN_{together,apart}_rR  seed 003's paged KV push (the layout of
 *       kxfer-bench kv: 16 layers, 512 tokens, 256 bytes of K and as many
 *       of V per token and layer, pages of N tokens scattered over four
 *       times as many slots of decode's pool, K and V in one page or
 *       apart): decode sends prefill a request ("go"), prefill posts one
 *       WRITE per layer, and the last one, with the notification "done",
 *       once the others are done (a notification speaks for its own
 *       request: examples/kv-nixl.py); decode times from its "go" to the
 *       notification.
 *   vllm_rR  vLLM's NixlConnector: prefill says a request is ready
 *       ("go": vLLM's router hands decode the block ids), decode READs
 *       the request's blocks of every layer (16-token pages, K and V
 *       apart) in one request made from prepared descriptor lists
 *       (prepXferDlist once, makeXferReq by block indices), with the
 *       notification to prefill, which times from its "go" to it.
 *
 * R requests are in flight (the timing side sends the next "go" as each
 * notification comes), each in an area of its own on both sides.  The
 * first R are a warm-up; then the window: at least --secs seconds and
 * max(3, R) requests, marked on both sides (CPU time of the whole guest
 * from /proc/stat, so that softirqs and kworkers count, and of this
 * process); the requests still in flight then are drained, decode checks
 * every byte the phase wrote, and the other side sends its figures.  The
 * timing side writes one JSON line per phase to FILE.
 *
 * Control messages are NIXL notifications of the phase's agent (genNotif):
 *   go P I A, done P I, ready P, mark P start|end, end P,
 *   stats P BUSY IDLE NCPUS PROC_CPU CHECK
 *
 * Options:
 *   --backends LIST  comma separated (default KXFER,UCX); an entry
 *                    NAME:KEY=VALUE[:KEY=VALUE]... is NIXL's backend NAME
 *                    with those parameters (else the plugin's defaults),
 *                    an agent of its own, named in the output as given
 *   --cases LIST     comma separated case names (default all)
 *   --reps N         repetitions (default 1); --rep-base K numbers them
 *                    from K (which backend goes first: odd K its first)
 *   --secs S         seconds per window (default 3)
 *   --poll MODE      busy (default: check again at once, as NIXL's Python
 *                    binding users do) or sleep:US (sleep US microseconds
 *                    after a round that found nothing)
 *   --tag NAME       the client's name in the output (default cpp)
 *   --timeout S      seconds a phase may go without progress (default 300)
 *
 * Environment: NIXL_RACE_PERF_CTL, a FIFO that `perf record --control
 * fifo:FIFO -D -1` reads: "enable" is written to it where a window
 * starts, "disable" where it ends, on both sides, so that a profile holds
 * the windows alone.
 *
 * Exit status 0, 1 on any failure (message on stderr), 2 usage.
 */
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "nixl.h"

namespace {

using Clock = std::chrono::steady_clock;

/* ---- the KV layout: kxfer-bench kv's parameters ---------------------------- */

constexpr unsigned kLayers = 16;
constexpr unsigned kTokens = 512;
constexpr unsigned kTokBytes = 256; /* of K, and as many of V, per token and layer */
constexpr uint64_t kTB = uint64_t(kTokens) * kTokBytes; /* K (or V) of a layer */
constexpr uint64_t kPrefillArea = kLayers * 2 * kTB; /* prefill: 4 MiB per request */
constexpr uint64_t kSpan = 4 * 2 * kTB; /* decode: a layer's slots, 4x */
constexpr uint64_t kDecodeArea = kLayers * kSpan; /* 16 MiB per request */
constexpr uint32_t kSeed = 1; /* kxfer-bench -r: the scattered slots */
constexpr unsigned kMaxInflight = 8;

struct Case {
    std::string name;
    bool vllm; /* else the push */
    unsigned page; /* tokens per page */
    bool together; /* K and V in one page */
    unsigned inflight;
};

const std::vector<Case> kCases = {
    {"push_p1_together_r1", false, 1, true, 1},   {"push_p1_together_r8", false, 1, true, 8},
    {"push_p1_apart_r1", false, 1, false, 1},     {"push_p1_apart_r8", false, 1, false, 8},
    {"push_p16_together_r1", false, 16, true, 1}, {"push_p16_together_r8", false, 16, true, 8},
    {"push_p16_apart_r1", false, 16, false, 1},   {"push_p16_apart_r8", false, 16, false, 8},
    {"vllm_r1", true, 16, false, 1},              {"vllm_r8", true, 16, false, 8},
};

struct Seg {
    uint64_t pre; /* offset in prefill's area */
    uint64_t dec; /* offset in decode's area */
    uint64_t len;
};

/* xorshift32 and the slot pick of kxfer-bench kv: the same layout */
uint32_t rndState;

uint32_t
rnd() {
    rndState ^= rndState << 13;
    rndState ^= rndState >> 17;
    rndState ^= rndState << 5;
    return rndState;
}

std::vector<unsigned>
pickSlots(unsigned n, unsigned range) {
    std::vector<unsigned> all(range), slot(n);

    for (unsigned i = 0; i < range; i++) {
        all[i] = i;
    }
    for (unsigned i = 0; i < n; i++) {
        unsigned j = i + rnd() % (range - i);
        std::swap(all[i], all[j]);
        slot[i] = all[i];
    }
    return slot;
}

/* A layer's segments (kxfer-bench's kv_build, pages scattered). */
std::vector<std::vector<Seg>>
layerSegs(const Case &c) {
    const unsigned pages = kTokens / c.page;
    const uint64_t pgb = uint64_t(c.page) * kTokBytes;
    std::vector<std::vector<Seg>> out(kLayers);

    rndState = kSeed;
    const std::vector<unsigned> slot = pickSlots(pages, 4 * pages);
    for (unsigned l = 0; l < kLayers; l++) {
        const uint64_t lbase = l * 2 * kTB, rbase = l * kSpan;
        for (unsigned p = 0; p < pages; p++) {
            if (c.together) {
                out[l].push_back({lbase + p * 2 * pgb, rbase + slot[p] * 2 * pgb, 2 * pgb});
            } else {
                out[l].push_back({lbase + p * pgb, rbase + slot[p] * pgb, pgb});
            }
        }
        for (unsigned p = 0; !c.together && p < pages; p++) {
            out[l].push_back({lbase + kTB + p * pgb, rbase + kSpan / 2 + slot[p] * pgb, pgb});
        }
    }
    return out;
}

/* The bytes of prefill's buffer: a hash of the offset. */
inline uint8_t
pat(uint64_t off) {
    uint32_t x = uint32_t(off) * 0x9E3779B1u;
    x ^= x >> 15;
    return uint8_t(x);
}

/* ---- options, messages ------------------------------------------------------ */

struct Opts {
    std::string role, dir, out, tag = "cpp";
    std::vector<std::string> backends = {"KXFER", "UCX"};
    std::vector<Case> cases = kCases;
    unsigned reps = 1, repBase = 1;
    double secs = 3;
    long sleepUs = -1; /* busy */
    int timeout = 300;
} opt;

/* Exits at once: NIXL's and UCX's teardown of agents in use is no help. */
[[noreturn]] void
die(const std::string &msg) {
    fprintf(stderr, "nixl-race %s: %s\n", opt.role.c_str(), msg.c_str());
    fflush(nullptr);
    _exit(1);
}

std::vector<std::string>
split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;

    while (std::getline(ss, item, sep)) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

double
secsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/* The whole guest's busy and idle seconds (/proc/stat's first line). */
struct CpuMark {
    double busy = 0, idle = 0, proc = 0;
};

using Counters = std::map<std::string, long long>;

/* Add the integer in each file matching @pattern to @hw, under @prefix and
 * the file's name; files under @skip are left out. */
void
addCounterFiles(Counters &hw, const char *pattern, const std::string &prefix,
                const std::string &skip = "") {
    glob_t g;

    if (glob(pattern, 0, nullptr, &g)) {
        return;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const std::string path = g.gl_pathv[i];
        std::ifstream in(path);
        long long v;
        if ((skip.empty() || path.rfind(skip, 0) != 0) && in >> v) {
            hw[prefix + path.substr(path.rfind('/') + 1)] += v;
        }
    }
    globfree(&g);
}

/*
 * The link as this guest sees it: its RDMA devices' port counters
 * (hw_counters, which rxe keeps: packets sent and received, duplicate and
 * out-of-sequence requests, sequence NAKs, retries) summed over devices by
 * name, and its network devices' bytes but the loopback's (net_rx_bytes,
 * net_tx_bytes).  On the timing side sent_pkts + rcvd_pkts is every packet
 * of the link, both directions, whichever engine sent it.
 */
Counters
linkCounters() {
    Counters hw;

    addCounterFiles(hw, "/sys/class/infiniband/*/ports/*/hw_counters/*", "");
    addCounterFiles(hw, "/sys/class/net/*/statistics/[rt]x_bytes", "net_", "/sys/class/net/lo/");
    return hw;
}

CpuMark
cpuNow() {
    static const double tck = double(sysconf(_SC_CLK_TCK));
    unsigned long long v[8] = {};
    CpuMark m;
    struct rusage ru;
    FILE *f = fopen("/proc/stat", "r");

    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) {
        die("cannot read /proc/stat");
    }
    fclose(f);
    /* user nice system idle iowait irq softirq steal */
    m.busy = double(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tck;
    m.idle = double(v[3] + v[4]) / tck;
    getrusage(RUSAGE_SELF, &ru);
    m.proc = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
        double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    return m;
}

/* Profile the window only: tell perf record (NIXL_RACE_PERF_CTL). */
void
perfCtl(const char *cmd) {
    static int fd = -2;

    if (fd == -2) {
        const char *path = getenv("NIXL_RACE_PERF_CTL");
        fd = path && *path ? open(path, O_WRONLY | O_CLOEXEC) : -1;
        if (path && *path && fd < 0) {
            die(std::string("cannot open ") + path);
        }
    }
    if (fd >= 0 && write(fd, cmd, strlen(cmd)) < 0) {
        die("cannot write to NIXL_RACE_PERF_CTL");
    }
}

/* ---- files in DIR ------------------------------------------------------------ */

void
putFile(const std::string &name, const std::string &data) {
    const std::string tmp = opt.dir + "/." + name + ".tmp";
    std::ofstream(tmp, std::ios::binary) << data;
    if (rename(tmp.c_str(), (opt.dir + "/" + name).c_str())) {
        die("cannot write " + opt.dir + "/" + name);
    }
}

std::string
getFile(const std::string &name) {
    const auto deadline = Clock::now() + std::chrono::seconds(opt.timeout);
    const std::string path = opt.dir + "/" + name;
    struct stat st;

    while (stat(path.c_str(), &st)) {
        if (Clock::now() > deadline) {
            die("no " + path + " from the other guest");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/* ---- one side -------------------------------------------------------------- */

/* An agent of one backend and what it needs. */
struct Agent {
    std::string backend, name, remote;
    std::unique_ptr<nixlAgent> agent;
    nixlBackendH *bh = nullptr;
    nixl_opt_args_t args; /* backends = {bh} */
    /* vllm: decode's prepared lists, every block of every area */
    nixlDlistH *localAll = nullptr, *remoteAll = nullptr;
    std::vector<std::string> early; /* messages await() put aside */
};

struct Side {
    bool prefill = false;
    char *buf = nullptr;
    size_t bufLen = 0;
    std::vector<Agent> agents;
};

Side side;

std::string
otherRole() {
    return side.prefill ? "decode" : "prefill";
}

void
check(nixl_status_t s, const std::string &what) {
    if (s != NIXL_SUCCESS) {
        die(what + ": " + nixlEnumStrings::statusStr(s));
    }
}

void
setupBuffer() {
    side.bufLen = side.prefill ? kMaxInflight * kPrefillArea : kMaxInflight * kDecodeArea;
    void *p = mmap(nullptr, side.bufLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        die("cannot map " + std::to_string(side.bufLen) + " bytes");
    }
    side.buf = static_cast<char *>(p);
    if (side.prefill) {
        for (size_t i = 0; i < side.bufLen; i++) {
            side.buf[i] = char(pat(i));
        }
    }
}

/*
 * vLLM's lists: decode's every (area, layer, K/V, slot) block of 16
 * tokens, prefill's every (area, layer, K/V, page); a request's
 * descriptors are indices into them.
 */
constexpr unsigned kVllmPage = 16;
constexpr unsigned kVllmPages = kTokens / kVllmPage;
constexpr uint64_t kVllmPgb = uint64_t(kVllmPage) * kTokBytes;

int
vllmLocalIndex(unsigned area, uint64_t decOff) {
    return int((area * kDecodeArea + decOff) / kVllmPgb);
}

int
vllmRemoteIndex(unsigned area, uint64_t preOff) {
    return int((area * kPrefillArea + preOff) / kVllmPgb);
}

/* decode's lists: its own buffer, and prefill's at @base */
void
prepVllm(Agent &a, uintptr_t base) {
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);

    for (uint64_t off = 0; off + kVllmPgb <= side.bufLen; off += kVllmPgb) {
        local.addDesc(nixlBasicDesc(uintptr_t(side.buf) + off, kVllmPgb, 0));
    }
    for (uint64_t off = 0; off + kVllmPgb <= kMaxInflight * kPrefillArea; off += kVllmPgb) {
        remote.addDesc(nixlBasicDesc(base + off, kVllmPgb, 0));
    }
    check(a.agent->prepXferDlist(NIXL_INIT_AGENT, local, a.localAll, &a.args),
          a.backend + ": prepXferDlist (local)");
    check(a.agent->prepXferDlist(a.remote, remote, a.remoteAll, &a.args),
          a.backend + ": prepXferDlist (remote)");
}

uintptr_t otherBase; /* the other side's buffer, from its file */

void
setupAgents() {
    const std::string role = side.prefill ? "prefill" : "decode";

    for (const auto &b : opt.backends) {
        Agent a;
        nixl_b_params_t params; /* the plugin's defaults, as nixl-race.py */
        const auto words = split(b, ':'); /* NAME[:KEY=VALUE]... */
        std::string id;

        for (size_t i = 1; i < words.size(); i++) {
            const auto eq = words[i].find('=');
            if (eq == std::string::npos) {
                die("backend " + b + ": not KEY=VALUE: " + words[i]);
            }
            params[words[i].substr(0, eq)] = words[i].substr(eq + 1);
        }
        for (char ch : b) {
            id += isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
        }
        a.backend = b;
        a.name = role + "-" + id;
        a.remote = otherRole() + "-" + id;
        nixlAgentConfig cfg(false);
        a.agent = std::make_unique<nixlAgent>(a.name, cfg);
        check(a.agent->createBackend(words.at(0), params, a.bh), b + ": createBackend");
        a.args.backends = {a.bh};
        nixl_reg_dlist_t reg(DRAM_SEG);
        reg.addDesc(nixlBlobDesc(uintptr_t(side.buf), side.bufLen, 0, ""));
        check(a.agent->registerMem(reg, &a.args), b + ": registerMem");
        side.agents.push_back(std::move(a));
    }
    /* metadata and the buffer's address, through DIR */
    for (auto &a : side.agents) {
        std::string md;
        check(a.agent->getLocalMD(md), a.backend + ": getLocalMD");
        putFile(opt.tag + "." + a.name + ".md", md);
    }
    putFile(opt.tag + "." + role + ".addr", std::to_string(uintptr_t(side.buf)));
    otherBase = std::stoull(getFile(opt.tag + "." + otherRole() + ".addr"));
    for (auto &a : side.agents) {
        std::string name;
        check(a.agent->loadRemoteMD(getFile(opt.tag + "." + a.remote + ".md"), name),
              a.backend + ": loadRemoteMD");
        if (name != a.remote) {
            die("the other agent is " + name + ", not " + a.remote);
        }
        if (!side.prefill) {
            prepVllm(a, otherBase);
        }
    }
}

/* The messages agent @a received, in order. */
std::vector<std::string>
notifs(Agent &a) {
    nixl_notifs_t n;
    std::vector<std::string> out;

    out.swap(a.early);
    check(a.agent->getNotifs(n, &a.args), a.backend + ": getNotifs");
    for (auto &kv : n) {
        if (kv.first != a.remote) {
            die("a notification from " + kv.first);
        }
        for (auto &m : kv.second) {
            out.push_back(std::move(m));
        }
    }
    return out;
}

void
send(Agent &a, const std::string &msg) {
    check(a.agent->genNotif(a.remote, msg, &a.args), a.backend + ": genNotif " + msg);
}

void
idle(bool worked) {
    if (!worked && opt.sleepUs > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(opt.sleepUs));
    }
}

/* Wait for a message starting with @prefix (others are an error). */
std::string
await(Agent &a, const std::string &prefix) {
    const auto deadline = Clock::now() + std::chrono::seconds(opt.timeout);

    for (;;) {
        auto got = notifs(a);
        for (auto it = got.begin(); it != got.end(); ++it) {
            if (it->rfind(prefix, 0) == 0) {
                std::string m = *it;
                got.erase(it);
                a.early = std::move(got);
                return m;
            }
        }
        a.early = std::move(got);
        if (Clock::now() > deadline) {
            die(a.backend + ": no '" + prefix + "' from " + a.remote);
        }
        idle(false);
    }
}

/*
 * Every agent hears the other side's before anything is timed: two
 * rounds, every agent polled in each, as UCX connects an endpoint (and
 * sends what waits on it) only while both sides progress it; after
 * that, UCX sends a control message at once.
 */
void
hello() {
    const auto deadline = Clock::now() + std::chrono::seconds(opt.timeout);

    for (const std::string round : {"hello ", "hello2 "}) {
        std::vector<bool> heard(side.agents.size());
        size_t left = side.agents.size();

        for (auto &a : side.agents) {
            send(a, round + a.name);
        }
        while (left) {
            for (size_t i = 0; i < side.agents.size(); i++) {
                Agent &a = side.agents[i];
                std::vector<std::string> later;
                for (auto &m : notifs(a)) {
                    if (m != round + a.remote || heard[i]) {
                        /* the other side is a round or a phase ahead */
                        later.push_back(std::move(m));
                        continue;
                    }
                    heard[i] = true;
                    left--;
                }
                a.early = std::move(later);
            }
            if (Clock::now() > deadline) {
                die("no hello from the other side on every backend");
            }
            idle(false);
        }
    }
}

/*
 * Between phases, every agent is progressed for a while: a control
 * message UCX could not send at once (a full send queue) goes out only
 * while its worker is progressed, and the last phase's agent is left
 * alone from now on.  Messages are kept for their phase.
 */
void
settle() {
    const auto until = Clock::now() + std::chrono::milliseconds(20);

    do {
        for (auto &a : side.agents) {
            a.early = notifs(a);
        }
    } while (Clock::now() < until);
}

/* ---- decode's buffer: cleared before a phase, checked after ------------------ */

void
clearAreas(const Case &c, const std::vector<std::vector<Seg>> &segs) {
    for (unsigned r = 0; r < c.inflight; r++) {
        for (const auto &layer : segs) {
            for (const auto &s : layer) {
                memset(side.buf + r * kDecodeArea + s.dec, 0, s.len);
            }
        }
    }
}

bool
checkAreas(const Case &c, const std::vector<std::vector<Seg>> &segs) {
    for (unsigned r = 0; r < c.inflight; r++) {
        for (const auto &layer : segs) {
            for (const auto &s : layer) {
                const auto *d = reinterpret_cast<const uint8_t *>(side.buf + r * kDecodeArea +
                                                                  s.dec);
                for (uint64_t i = 0; i < s.len; i++) {
                    if (d[i] != pat(r * kPrefillArea + s.pre + i)) {
                        fprintf(stderr,
                                "nixl-race: %s: area %u, decode offset %" PRIu64
                                " differs\n",
                                c.name.c_str(), r, s.dec + i);
                        return false;
                    }
                }
            }
        }
    }
    return true;
}

/* ---- the worker side: prefill pushes, decode reads ------------------------- */

struct Req {
    uint64_t id;
    unsigned area;
    std::vector<nixlXferReqH *> xfers; /* push: layers but the last */
    nixlXferReqH *last = nullptr; /* the one with the notification */
};

/* Descriptor lists of every (area, layer), both sides, made once. */
struct Lists {
    std::vector<std::vector<nixl_xfer_dlist_t>> mine, theirs; /* [area][layer] */
    std::vector<std::vector<int>> localIdx, remoteIdx; /* vllm: [area] */
};

Lists
makeLists(const Case &c, const std::vector<std::vector<Seg>> &segs, uintptr_t otherBase) {
    Lists ls;

    ls.mine.resize(c.inflight);
    ls.theirs.resize(c.inflight);
    ls.localIdx.resize(c.inflight);
    ls.remoteIdx.resize(c.inflight);
    for (unsigned r = 0; r < c.inflight; r++) {
        for (const auto &layer : segs) {
            nixl_xfer_dlist_t m(DRAM_SEG), t(DRAM_SEG);
            for (const auto &s : layer) {
                const uint64_t pre = r * kPrefillArea + s.pre, dec = r * kDecodeArea + s.dec;
                if (side.prefill) {
                    m.addDesc(nixlBasicDesc(uintptr_t(side.buf) + pre, s.len, 0));
                    t.addDesc(nixlBasicDesc(otherBase + dec, s.len, 0));
                } else {
                    m.addDesc(nixlBasicDesc(uintptr_t(side.buf) + dec, s.len, 0));
                    t.addDesc(nixlBasicDesc(otherBase + pre, s.len, 0));
                }
                if (c.vllm) {
                    ls.localIdx[r].push_back(vllmLocalIndex(r, s.dec));
                    ls.remoteIdx[r].push_back(vllmRemoteIndex(r, s.pre));
                }
            }
            ls.mine[r].push_back(std::move(m));
            ls.theirs[r].push_back(std::move(t));
        }
    }
    return ls;
}

nixl_status_t
post(Agent &a, nixlXferReqH *h) {
    nixl_status_t s = a.agent->postXferReq(h);

    if (s < 0) {
        die(a.backend + ": postXferReq: " + nixlEnumStrings::statusStr(s));
    }
    return s;
}

/* Is @h done?  (a failure ends the run) */
bool
done(Agent &a, nixlXferReqH *h) {
    nixl_status_t s = a.agent->getXferStatus(h);

    if (s < 0) {
        die(a.backend + ": a transfer failed: " + nixlEnumStrings::statusStr(s));
    }
    return s == NIXL_SUCCESS;
}

void
startReq(Agent &a, const Case &c, const Lists &ls, unsigned phase, Req &q) {
    nixl_opt_args_t args = a.args;

    if (c.vllm) {
        args.notif = "done " + std::to_string(phase) + " " + std::to_string(q.id);
        check(a.agent->makeXferReq(NIXL_READ, a.localAll, ls.localIdx[q.area], a.remoteAll,
                                   ls.remoteIdx[q.area], q.last, &args),
              a.backend + ": makeXferReq");
        post(a, q.last);
        return;
    }
    for (unsigned l = 0; l + 1 < kLayers; l++) {
        nixlXferReqH *h;
        check(a.agent->createXferReq(NIXL_WRITE, ls.mine[q.area][l], ls.theirs[q.area][l],
                                     a.remote, h, &args),
              a.backend + ": createXferReq");
        post(a, h);
        q.xfers.push_back(h);
    }
}

/* Move @q on; true when it is over. */
bool
stepReq(Agent &a, const Lists &ls, unsigned phase, Req &q, bool &worked) {
    while (!q.xfers.empty() && done(a, q.xfers.back())) {
        worked = true;
        check(a.agent->releaseXferReq(q.xfers.back()), a.backend + ": releaseXferReq");
        q.xfers.pop_back();
    }
    if (!q.xfers.empty()) {
        return false;
    }
    if (!q.last) {
        /* the push's last layer, with the notification */
        nixl_opt_args_t args = a.args;
        args.notif = "done " + std::to_string(phase) + " " + std::to_string(q.id);
        check(a.agent->createXferReq(NIXL_WRITE, ls.mine[q.area][kLayers - 1],
                                     ls.theirs[q.area][kLayers - 1], a.remote, q.last, &args),
              a.backend + ": createXferReq");
        post(a, q.last);
        worked = true;
    }
    if (!done(a, q.last)) {
        return false;
    }
    check(a.agent->releaseXferReq(q.last), a.backend + ": releaseXferReq");
    worked = true;
    return true;
}

/*
 * The worker side of a phase: serve "go" until "end", mark the window on
 * "mark", send the figures.
 */
void
worker(Agent &a, const Case &c, unsigned phase, const Lists &ls,
       const std::vector<std::vector<Seg>> &segs) {
    const std::string p = std::to_string(phase);
    std::vector<std::unique_ptr<Req>> reqs;
    CpuMark m0, m1;
    bool ended = false;
    auto last = Clock::now();

    if (!side.prefill) {
        clearAreas(c, segs);
    }
    send(a, "ready " + p);
    while (!ended || !reqs.empty()) {
        bool worked = false;

        for (const auto &m : notifs(a)) {
            std::istringstream in(m);
            std::string what, ph, arg;
            in >> what >> ph >> arg;
            if (ph != p) {
                die("message '" + m + "' in phase " + p);
            }
            worked = true;
            if (what == "go") {
                auto q = std::make_unique<Req>();
                q->id = std::stoull(arg);
                in >> q->area;
                startReq(a, c, ls, phase, *q);
                reqs.push_back(std::move(q));
            } else if (what == "mark" && arg == "start") {
                m0 = cpuNow();
                perfCtl("enable\n");
            } else if (what == "mark" && arg == "end") {
                perfCtl("disable\n");
                m1 = cpuNow();
            } else if (what == "end") {
                ended = true;
            } else {
                die("message '" + m + "'");
            }
        }
        for (size_t i = 0; i < reqs.size();) {
            if (stepReq(a, ls, phase, *reqs[i], worked)) {
                reqs.erase(reqs.begin() + i);
            } else {
                i++;
            }
        }
        if (worked) {
            last = Clock::now();
        } else if (secsSince(last) > opt.timeout) {
            die(a.backend + ": phase " + p + " (" + c.name + ") stalled");
        }
        idle(worked);
    }
    const bool ok = side.prefill || checkAreas(c, segs);
    char msg[256];
    snprintf(msg, sizeof(msg), "stats %s %.4f %.4f %ld %.4f %s", p.c_str(), m1.busy - m0.busy,
             m1.idle - m0.idle, sysconf(_SC_NPROCESSORS_ONLN), m1.proc - m0.proc,
             ok ? "ok" : "bad");
    send(a, msg);
}

/* ---- the timing side -------------------------------------------------------- */

struct Result {
    std::vector<double> latUs; /* requests done in the window */
    unsigned reqs = 0;
    double secs = 0;
    CpuMark t0, t1;
    Counters hw0, hw1; /* linkCounters() where the window starts and ends */
    std::vector<std::string> stats;
    bool ok = true;
    uint64_t total = 0; /* requests of the phase, warm-up and drain too */
    double phaseSecs = 0; /* from the first request to the last */
};

Result
timer(Agent &a, const Case &c, unsigned phase, const std::vector<std::vector<Seg>> &segs) {
    const std::string p = std::to_string(phase);
    const unsigned minReqs = std::max(3u, c.inflight);
    std::map<uint64_t, std::pair<Clock::time_point, unsigned>> inflight;
    Clock::time_point wStart;
    uint64_t next = 0;
    unsigned doneCount = 0;
    bool windowOpen = false, stopping = false;
    Result res;
    auto last = Clock::now();

    if (!side.prefill) {
        clearAreas(c, segs);
    }
    await(a, "ready " + p);
    const auto phaseStart = Clock::now();
    auto issue = [&](unsigned area) {
        inflight[next] = {Clock::now(), area};
        send(a, "go " + p + " " + std::to_string(next) + " " + std::to_string(area));
        next++;
    };
    for (unsigned r = 0; r < c.inflight; r++) {
        issue(r);
    }
    while (!inflight.empty()) {
        bool worked = false;

        for (const auto &m : notifs(a)) {
            std::istringstream in(m);
            std::string what, ph;
            uint64_t id;
            in >> what >> ph >> id;
            if (what != "done" || ph != p || !inflight.count(id)) {
                die("message '" + m + "' in phase " + p);
            }
            const auto now = Clock::now();
            const auto [t, area] = inflight[id];
            inflight.erase(id);
            worked = true;
            doneCount++;
            if (windowOpen && !stopping) {
                res.latUs.push_back(std::chrono::duration<double, std::micro>(now - t).count());
                res.reqs++;
                if (res.reqs >= minReqs && secsSince(wStart) >= opt.secs) {
                    perfCtl("disable\n");
                    res.t1 = cpuNow();
                    res.hw1 = linkCounters();
                    res.secs = secsSince(wStart);
                    send(a, "mark " + p + " end");
                    stopping = true;
                }
            }
            if (!windowOpen && doneCount == c.inflight) {
                /* warm-up done: every area once */
                windowOpen = true;
                perfCtl("enable\n");
                res.t0 = cpuNow();
                res.hw0 = linkCounters();
                wStart = Clock::now();
                send(a, "mark " + p + " start");
            }
            if (!stopping) {
                issue(area);
            }
        }
        if (worked) {
            last = Clock::now();
        } else if (secsSince(last) > opt.timeout) {
            die(a.backend + ": phase " + p + " (" + c.name + ") stalled");
        }
        idle(worked);
    }
    res.total = next;
    res.phaseSecs = secsSince(phaseStart);
    send(a, "end " + p);
    std::istringstream in(await(a, "stats " + p));
    std::string word;
    in >> word >> word;
    while (in >> word) {
        res.stats.push_back(word);
    }
    res.ok = side.prefill || checkAreas(c, segs);
    if (res.stats.size() != 5) {
        die("bad stats from the other side");
    }
    if (res.stats[4] != "ok") {
        res.ok = false;
    }
    return res;
}

/* The counters' growth over the window, as the members of a JSON object. */
std::string
hwDelta(const Counters &hw0, const Counters &hw1) {
    std::string out;

    for (const auto &[name, v] : hw1) {
        const auto it = hw0.find(name);
        if (it == hw0.end()) {
            continue;
        }
        out += (out.empty() ? "\"" : ",\"") + name + "\":" + std::to_string(v - it->second);
    }
    return out;
}

void
writeResult(FILE *f, const Agent &a, const Case &c, unsigned rep, unsigned phase,
            unsigned order, const std::vector<std::vector<Seg>> &segs, const Result &r) {
    uint64_t bytes = 0, descs = 0;
    std::vector<double> lat = r.latUs;

    for (const auto &layer : segs) {
        descs += layer.size();
        for (const auto &s : layer) {
            bytes += s.len;
        }
    }
    std::sort(lat.begin(), lat.end());
    double mean = 0;
    for (double v : lat) {
        mean += v;
    }
    mean = lat.empty() ? 0 : mean / lat.size();
    fprintf(f,
            "{\"client\":\"%s\",\"backend\":\"%s\",\"case\":\"%s\",\"kind\":\"%s\","
            "\"page\":%u,\"together\":%s,\"inflight\":%u,\"rep\":%u,\"phase\":%u,"
            "\"order\":%u,\"timer\":\"%s\",\"bytes_per_req\":%" PRIu64
            ",\"descs_per_req\":%" PRIu64 ",\"xfers_per_req\":%u,\"poll\":\"%s\","
            "\"reqs\":%u,\"secs\":%.6f,\"mb_per_sec\":%.3f,\"lat_p50_us\":%.1f,"
            "\"lat_mean_us\":%.1f,\"lat_min_us\":%.1f,\"lat_max_us\":%.1f,"
            "\"t_busy_secs\":%.4f,\"t_idle_secs\":%.4f,\"t_proc_secs\":%.4f,"
            "\"t_ncpus\":%ld,\"w_busy_secs\":%s,\"w_idle_secs\":%s,\"w_ncpus\":%s,"
            "\"w_proc_secs\":%s,\"t_hw\":{%s},\"reqs_total\":%" PRIu64
            ",\"phase_secs\":%.3f,"
            "\"checked\":%s}\n",
            opt.tag.c_str(), a.backend.c_str(), c.name.c_str(), c.vllm ? "vllm" : "push",
            c.page, c.together ? "true" : "false", c.inflight, rep, phase, order,
            side.prefill ? "prefill" : "decode", bytes, descs, c.vllm ? 1u : kLayers,
            opt.sleepUs < 0 ? "busy" : ("sleep:" + std::to_string(opt.sleepUs)).c_str(), r.reqs,
            r.secs, r.secs > 0 ? double(bytes) * r.reqs / r.secs / 1e6 : 0.0,
            lat.empty() ? 0 : lat[lat.size() / 2], mean, lat.empty() ? 0 : lat.front(),
            lat.empty() ? 0 : lat.back(), r.t1.busy - r.t0.busy, r.t1.idle - r.t0.idle,
            r.t1.proc - r.t0.proc, sysconf(_SC_NPROCESSORS_ONLN), r.stats[0].c_str(),
            r.stats[1].c_str(), r.stats[2].c_str(), r.stats[3].c_str(),
            hwDelta(r.hw0, r.hw1).c_str(), r.total, r.phaseSecs,
            r.ok ? "true" : "false");
    fflush(f);
}

/* ---- the schedule ------------------------------------------------------------ */

void
run() {
    FILE *out = nullptr;
    unsigned phase = 0;

    if (!opt.out.empty()) {
        out = fopen(opt.out.c_str(), "a");
        if (!out) {
            die("cannot open " + opt.out);
        }
    }
    for (const auto &c : opt.cases) {
        const auto segs = layerSegs(c);
        const Lists ls = makeLists(c, segs, otherBase);
        const bool timing = c.vllm ? side.prefill : !side.prefill;

        for (unsigned rep = opt.repBase; rep < opt.repBase + opt.reps; rep++) {
            std::vector<size_t> order(side.agents.size());
            for (size_t i = 0; i < order.size(); i++) {
                order[i] = rep % 2 ? i : order.size() - 1 - i;
            }
            for (size_t k = 0; k < order.size(); k++) {
                Agent &a = side.agents[order[k]];
                phase++;
                settle();
                if (timing) {
                    fprintf(stderr, "nixl-race: rep %u %s %s\n", rep, c.name.c_str(),
                            a.backend.c_str());
                    const Result r = timer(a, c, phase, segs);
                    if (!r.ok) {
                        die(c.name + " on " + a.backend + ": the data did not arrive intact");
                    }
                    if (out) {
                        writeResult(out, a, c, rep, phase, unsigned(k), segs, r);
                    }
                } else {
                    worker(a, c, phase, ls, segs);
                }
            }
        }
    }
    if (out) {
        fclose(out);
    }
}

void
usage() {
    fprintf(stderr,
            "usage: nixl-race --role prefill|decode --dir DIR [--out FILE] [--backends LIST]\n"
            "           [--cases LIST] [--reps N] [--rep-base K] [--secs S]\n"
            "           [--poll busy|sleep:US] [--tag NAME] [--timeout S]\n"
            "cases:");
    for (const auto &c : kCases) {
        fprintf(stderr, " %s", c.name.c_str());
    }
    fprintf(stderr, "\n");
    exit(2);
}

void
parse(int argc, char **argv) {
    static const struct option lo[] = {
        {"role", required_argument, nullptr, 'R'},  {"dir", required_argument, nullptr, 'd'},
        {"out", required_argument, nullptr, 'o'},   {"backends", required_argument, nullptr, 'b'},
        {"cases", required_argument, nullptr, 'c'}, {"reps", required_argument, nullptr, 'n'},
        {"rep-base", required_argument, nullptr, 'k'},
        {"secs", required_argument, nullptr, 's'},  {"poll", required_argument, nullptr, 'p'},
        {"tag", required_argument, nullptr, 't'},   {"timeout", required_argument, nullptr, 'T'},
        {nullptr, 0, nullptr, 0},
    };
    int ch;

    while ((ch = getopt_long(argc, argv, "", lo, nullptr)) != -1) {
        try {
            switch (ch) {
            case 'R':
                opt.role = optarg;
                break;
            case 'd':
                opt.dir = optarg;
                break;
            case 'o':
                opt.out = optarg;
                break;
            case 'b':
                opt.backends = split(optarg, ',');
                break;
            case 'c':
                opt.cases.clear();
                for (const auto &n : split(optarg, ',')) {
                    auto it = std::find_if(kCases.begin(), kCases.end(),
                                           [&](const Case &c) { return c.name == n; });
                    if (it == kCases.end()) {
                        fprintf(stderr, "nixl-race: no case %s\n", n.c_str());
                        usage();
                    }
                    opt.cases.push_back(*it);
                }
                break;
            case 'n':
                opt.reps = std::stoul(optarg);
                break;
            case 'k':
                opt.repBase = std::stoul(optarg);
                break;
            case 's':
                opt.secs = std::stod(optarg);
                break;
            case 'p':
                if (!strcmp(optarg, "busy")) {
                    opt.sleepUs = -1;
                } else if (!strncmp(optarg, "sleep:", 6)) {
                    opt.sleepUs = std::stol(optarg + 6);
                } else {
                    usage();
                }
                break;
            case 't':
                opt.tag = optarg;
                break;
            case 'T':
                opt.timeout = std::stoi(optarg);
                break;
            default:
                usage();
            }
        }
        catch (const std::exception &) {
            usage();
        }
    }
    if (optind != argc || (opt.role != "prefill" && opt.role != "decode") || opt.dir.empty() ||
        opt.backends.empty() || opt.cases.empty() || !opt.reps || opt.secs <= 0) {
        usage();
    }
}

} // namespace

int
main(int argc, char **argv) {
    parse(argc, argv);
    side.prefill = opt.role == "prefill";
    setupBuffer();
    setupAgents();
    hello();
    run();
    /* the agents go before the buffer they registered */
    for (auto &a : side.agents) {
        if (a.localAll) {
            a.agent->releasedDlistH(a.localAll);
        }
        if (a.remoteAll) {
            a.agent->releasedDlistH(a.remoteAll);
        }
        nixl_reg_dlist_t reg(DRAM_SEG);
        reg.addDesc(nixlBlobDesc(uintptr_t(side.buf), side.bufLen, 0, ""));
        a.agent->deregisterMem(reg, &a.args);
    }
    side.agents.clear();
    munmap(side.buf, side.bufLen);
    return 0;
}
