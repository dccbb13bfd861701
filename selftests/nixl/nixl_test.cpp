// SPDX-License-Identifier: Apache-2.0
/*
 * nixl_test: the KXFER backend through NIXL's own C++ API (nixl.h), as an
 * application calls it, between two guests.
 *
 *   nixl_test --role a|b --dir DIR [--peer-addr ADDR]
 *
 * Both guests run it (selftests/guest/nixl.sh): a is the target, whose
 * agent "nixl-a" registers buffers and checks what lands in them; b, agent
 * "nixl-b", initiates.  They meet in DIR (the guests' shared folder): at a
 * sync point each writes NAME.<role> and waits for the other's; blobs
 * (agent metadata, b's verdicts) are files written and renamed.  Both
 * derive the same transfer plans from seeds, so a knows what b wrote
 * where, and every byte of every buffer is checked, those no descriptor
 * touched included.  Output is TAP (one line per test, the same tests in
 * the same order on both sides); a test that needs notifications is
 * skipped when the kxfer module has none (max_notify_len 0).
 */
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "nixl.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string role, other, dir, peerAddr = "10.99.0.1";
std::string agentName, otherName;

enum Result { PASS, FAIL, SKIP };

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            printf("#   %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
            fflush(stdout);                                                           \
            return FAIL;                                                              \
        }                                                                             \
    } while (0)

#define CHECK_STATUS(expr, want)                                                      \
    do {                                                                              \
        nixl_status_t _s = (expr);                                                    \
        if (_s != (want)) {                                                           \
            printf("#   %s:%d: %s is %s (%d), expected %s\n", __FILE__, __LINE__, #expr, \
                   nixlEnumStrings::statusStr(_s).c_str(), _s,                        \
                   nixlEnumStrings::statusStr(want).c_str());                         \
            fflush(stdout);                                                           \
            return FAIL;                                                              \
        }                                                                             \
    } while (0)

void
note(const std::string &s) {
    printf("# %s\n", s.c_str());
    fflush(stdout);
}

/* ---- meeting the other guest -------------------------------------------- */

bool
exists(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

void
putFile(const std::string &name, const std::string &data) {
    const std::string tmp = dir + "/." + name + ".tmp";
    std::ofstream(tmp, std::ios::binary) << data;
    rename(tmp.c_str(), (dir + "/" + name).c_str());
}

bool
getFile(const std::string &name, std::string &data, int timeout_s = 120) {
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);

    while (!exists(dir + "/" + name)) {
        if (exists(dir + "/done." + other) || Clock::now() > deadline) {
            /* the other makes NAME before it ends: once more */
            if (exists(dir + "/" + name)) {
                break;
            }
            note("no " + name + " from guest " + other);
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream f(dir + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    data = ss.str();
    return true;
}

/* Both reach NAME: sync points are unique names. */
bool
meet(const std::string &name, int timeout_s = 120) {
    std::string dummy;

    putFile(name + "." + role, "");
    return getFile(name + "." + other, dummy, timeout_s);
}

/* b's verdict on a step, for a to follow (pass, fail, skip) */
void
tell(const std::string &name, const std::string &what) {
    putFile("verdict." + name, what);
}

std::string
hear(const std::string &name) {
    std::string v;
    return getFile("verdict." + name, v) ? v : "fail";
}

/* ---- buffers and patterns -------------------------------------------------- */

/* A buffer the test owns, at an address that is not page aligned unless
 * asked. */
struct Buf {
    std::vector<char> storage;
    char *p = nullptr;
    size_t len = 0;
    void *map = nullptr;
    size_t mapLen = 0;

    Buf(size_t n, bool page_aligned, size_t skew = 0) : len(n) {
        if (page_aligned) {
            mapLen = (n + skew + 4095) & ~size_t(4095);
            map = mmap(nullptr, mapLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
            p = static_cast<char *>(map) + skew;
        } else {
            storage.resize(n + 64);
            p = storage.data() + 13;
        }
    }
    ~Buf() {
        if (map) {
            munmap(map, mapLen);
        }
    }
    uintptr_t
    addr() const {
        return reinterpret_cast<uintptr_t>(p);
    }
};

uint8_t
patByte(uint32_t seed, int buf, size_t off) {
    uint64_t x = (uint64_t(seed) << 40) ^ (uint64_t(buf) << 32) ^ off;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return uint8_t(x);
}

void
fill(Buf &b, uint32_t seed, int id) {
    for (size_t i = 0; i < b.len; i++) {
        b.p[i] = char(patByte(seed, id, i));
    }
}

/* One descriptor of a plan: a's buffer aBuf at aOff, b's bBuf at bOff. */
struct Piece {
    int aBuf;
    size_t aOff;
    int bBuf;
    size_t bOff;
    size_t len;
};

/*
 * n pieces, disjoint on a's side (so what lands there is known), in a
 * shuffled order, of 1..maxLen bytes, spread over a's buffers; b's side
 * anywhere (reads may overlap; for READ plans b's side is disjoint too).
 */
std::vector<Piece>
makePlan(uint32_t seed,
         size_t n,
         size_t maxLen,
         const std::vector<size_t> &aLens,
         const std::vector<size_t> &bLens,
         bool bDisjoint) {
    std::mt19937_64 rng(seed);
    std::vector<Piece> out;
    std::vector<size_t> aCur(aLens.size(), 0), bCur(bLens.size(), 0);

    for (size_t i = 0; i < n * 4 && out.size() < n; i++) {
        Piece p;
        p.aBuf = int(rng() % aLens.size());
        p.bBuf = int(rng() % bLens.size());
        p.len = 1 + rng() % maxLen;
        const size_t gap = rng() % 3 == 0 ? rng() % 512 : 0;
        if (aCur[p.aBuf] + gap + p.len > aLens[p.aBuf]) {
            continue;
        }
        p.aOff = aCur[p.aBuf] + gap;
        aCur[p.aBuf] = p.aOff + p.len;
        if (bDisjoint) {
            const size_t bgap = rng() % 2 ? rng() % 300 : 0;
            if (bCur[p.bBuf] + bgap + p.len > bLens[p.bBuf]) {
                aCur[p.aBuf] = p.aOff; /* give it back */
                continue;
            }
            p.bOff = bCur[p.bBuf] + bgap;
            bCur[p.bBuf] = p.bOff + p.len;
        } else {
            if (p.len > bLens[p.bBuf]) {
                continue;
            }
            p.bOff = rng() % (bLens[p.bBuf] - p.len + 1);
        }
        out.push_back(p);
    }
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

/* ---- the agents -------------------------------------------------------------- */

std::unique_ptr<nixlAgent> agent;
nixlBackendH *backend = nullptr;
std::vector<std::unique_ptr<Buf>> bufs; /* this side's: a0 a1 or b0 b1 */
std::vector<uintptr_t> remoteAddr; /* the other side's buffers */
std::vector<size_t> remoteLen;
const std::vector<size_t> aLens = {(1 << 20) + 100, 3 << 20};
const std::vector<size_t> bLens = {2 << 20, (1 << 20) + 77};
size_t maxNotify = 0;

nixl_reg_dlist_t
regList(const std::vector<std::unique_ptr<Buf>> &list) {
    nixl_reg_dlist_t d(DRAM_SEG);
    for (const auto &b : list) {
        d.addDesc(nixlBlobDesc(b->addr(), b->len, 0));
    }
    return d;
}

/* Post, then check until done: the status it ended with. */
nixl_status_t
runXfer(nixlXferReqH *req, const nixl_opt_args_t *extra = nullptr, int timeout_s = 120) {
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    nixl_status_t s = agent->postXferReq(req, extra);

    while (s == NIXL_IN_PROG && Clock::now() < deadline) {
        s = agent->getXferStatus(req);
        if (s == NIXL_IN_PROG) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    return s;
}

void
planLists(const std::vector<Piece> &plan, nixl_xfer_dlist_t &local, nixl_xfer_dlist_t &remote) {
    for (const auto &p : plan) {
        local.addDesc(nixlBasicDesc(bufs[p.bBuf]->addr() + p.bOff, p.len, 0));
        remote.addDesc(nixlBasicDesc(remoteAddr[p.aBuf] + p.aOff, p.len, 0));
    }
}

/* b writes plan (b's buffers filled with bSeed) into a's buffers. */
nixl_status_t
writePlan(const std::vector<Piece> &plan, uint32_t bSeed, const std::string &notif = "") {
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixl_opt_args_t extra;
    nixlXferReqH *req = nullptr;
    nixl_status_t s;

    for (size_t i = 0; i < bufs.size(); i++) {
        fill(*bufs[i], bSeed, int(i));
    }
    planLists(plan, local, remote);
    if (!notif.empty()) {
        extra.notif = notif;
    }
    s = agent->createXferReq(NIXL_WRITE, local, remote, otherName, req, &extra);
    if (s != NIXL_SUCCESS) {
        return s;
    }
    s = runXfer(req);
    agent->releaseXferReq(req);
    return s;
}

/* a: its buffers (or only buffer @only) after plan from b's bSeed landed
 * on initial aSeed */
bool
checkWritten(const std::vector<Piece> &plan, uint32_t aSeed, uint32_t bSeed, int only = -1) {
    std::vector<std::vector<char>> want(bufs.size());
    size_t bad = 0;

    for (size_t i = 0; i < bufs.size(); i++) {
        want[i].resize(bufs[i]->len);
        for (size_t o = 0; o < bufs[i]->len; o++) {
            want[i][o] = char(patByte(aSeed, int(i), o));
        }
    }
    for (const auto &p : plan) {
        for (size_t k = 0; k < p.len; k++) {
            want[p.aBuf][p.aOff + k] = char(patByte(bSeed, p.bBuf, p.bOff + k));
        }
    }
    for (size_t i = 0; i < bufs.size(); i++) {
        for (size_t o = 0; (only < 0 || only == int(i)) && o < bufs[i]->len; o++) {
            if (bufs[i]->p[o] != want[i][o] && bad++ < 5) {
                note("a" + std::to_string(i) + "[" + std::to_string(o) + "] is " +
                     std::to_string(uint8_t(bufs[i]->p[o])) + ", expected " +
                     std::to_string(uint8_t(want[i][o])));
            }
        }
    }
    if (bad) {
        note(std::to_string(bad) + " bytes wrong");
    }
    return !bad;
}

/* Notifications from the other agent until one is @msg (or timeout):
 * how many times @msg came, and every other message in @others. */
int
waitNotif(const std::string &from,
          const std::string &msg,
          int timeout_ms,
          std::vector<std::string> *others = nullptr,
          bool stopAtFirst = true) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    int seen = 0;

    while (Clock::now() < deadline) {
        nixl_notifs_t n;
        if (agent->getNotifs(n) != NIXL_SUCCESS) {
            note("getNotifs failed");
            return -1;
        }
        for (auto &kv : n) {
            for (auto &m : kv.second) {
                if (kv.first == from && m == msg) {
                    seen++;
                } else if (others) {
                    others->push_back(kv.first + ": " + m);
                } else {
                    note("other notification from " + kv.first + ": " + m);
                }
            }
        }
        if (seen && stopAtFirst) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return seen;
}

/* ---- the tests ------------------------------------------------------------------- */

Result
t_plugin() {
    std::vector<nixl_backend_t> plugins;
    nixl_mem_list_t mems;
    nixl_b_params_t params;
    nixlAgentConfig cfg(true);

    agent = std::make_unique<nixlAgent>(agentName, cfg);
    CHECK_STATUS(agent->getAvailPlugins(plugins), NIXL_SUCCESS);
    CHECK(std::find(plugins.begin(), plugins.end(), "KXFER") != plugins.end());
    CHECK_STATUS(agent->getPluginParams("KXFER", mems, params), NIXL_SUCCESS);
    CHECK(mems == (nixl_mem_list_t{DRAM_SEG, VRAM_SEG}));
    CHECK(params.count("session") && params["session"] == "%n");
    params.clear();
    CHECK_STATUS(agent->createBackend("KXFER", params, backend), NIXL_SUCCESS);
    CHECK_STATUS(agent->getBackendParams(backend, mems, params), NIXL_SUCCESS);
    CHECK(params.count("max_notify_len"));
    maxNotify = std::stoul(params["max_notify_len"]);
    note("max_notify_len " + std::to_string(maxNotify));
    /* one backend of a kind per agent */
    nixlBackendH *again = nullptr;
    CHECK_STATUS(agent->createBackend("KXFER", params, again), NIXL_ERR_INVALID_PARAM);
    return PASS;
}

Result
t_register() {
    const auto &lens = role == "a" ? aLens : bLens;

    /* a1 and b0 page aligned, the others not */
    bufs.push_back(std::make_unique<Buf>(lens[0], role == "b", 0));
    bufs.push_back(std::make_unique<Buf>(lens[1], role == "a", role == "a" ? 0 : 777));
    for (size_t i = 0; i < bufs.size(); i++) {
        fill(*bufs[i], role == "a" ? 1 : 101, int(i));
    }
    nixl_reg_dlist_t d = regList(bufs);
    CHECK_STATUS(agent->registerMem(d), NIXL_SUCCESS);
    /* register, deregister, register again */
    CHECK_STATUS(agent->deregisterMem(d), NIXL_SUCCESS);
    CHECK_STATUS(agent->registerMem(d), NIXL_SUCCESS);
    /*
     * Host memory is not VRAM: no GPU driver knows it (the backend says
     * why; NIXL reports any backend's refusal as NIXL_ERR_BACKEND).  On
     * an agent of its own: NIXL 1.4.0 keeps an empty VRAM section after
     * a refused first registration, and peers refuse metadata with one.
     */
    nixlAgentConfig vcfg(true);
    nixlAgent vagent(agentName + "-v", vcfg);
    nixl_b_params_t vparams;
    nixlBackendH *vbackend = nullptr;
    CHECK_STATUS(vagent.createBackend("KXFER", vparams, vbackend), NIXL_SUCCESS);
    nixl_reg_dlist_t v(VRAM_SEG);
    v.addDesc(nixlBlobDesc(bufs[0]->addr(), 4096, 0));
    CHECK_STATUS(vagent.registerMem(v), NIXL_ERR_BACKEND);
    return PASS;
}

Result
t_metadata() {
    std::string md, theirs, name, addrs;

    CHECK_STATUS(agent->getLocalMD(md), NIXL_SUCCESS);
    putFile("md." + role, md);
    std::ostringstream os;
    for (const auto &b : bufs) {
        os << b->addr() << " " << b->len << "\n";
    }
    putFile("bufs." + role, os.str());
    CHECK(getFile("md." + other, theirs));
    CHECK(getFile("bufs." + other, addrs));
    std::istringstream is(addrs);
    uintptr_t a;
    size_t l;
    while (is >> a >> l) {
        remoteAddr.push_back(a);
        remoteLen.push_back(l);
    }
    CHECK(remoteAddr.size() == 2);
    CHECK_STATUS(agent->loadRemoteMD(theirs, name), NIXL_SUCCESS);
    CHECK(name == otherName);
    CHECK_STATUS(agent->makeConnection(otherName), NIXL_SUCCESS);
    CHECK(meet("metadata"));
    return PASS;
}

Result
t_write() {
    const auto plan = makePlan(11, 97, 40000, aLens, bLens, false);

    if (role == "b") {
        nixl_status_t s = writePlan(plan, 201);
        tell("write", s == NIXL_SUCCESS ? "pass" : "fail");
        CHECK_STATUS(s, NIXL_SUCCESS);
        return PASS;
    }
    CHECK(hear("write") == "pass");
    CHECK(checkWritten(plan, 1, 201));
    return PASS;
}

Result
t_read() {
    const auto plan = makePlan(12, 150, 30000, aLens, bLens, true);

    if (role == "a") {
        for (size_t i = 0; i < bufs.size(); i++) {
            fill(*bufs[i], 2, int(i));
        }
        CHECK(meet("read-ready"));
        CHECK(hear("read") == "pass");
        return PASS;
    }
    for (size_t i = 0; i < bufs.size(); i++) {
        fill(*bufs[i], 102, int(i));
    }
    CHECK(meet("read-ready"));
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixlXferReqH *req = nullptr;
    planLists(plan, local, remote);
    CHECK_STATUS(agent->createXferReq(NIXL_READ, local, remote, otherName, req), NIXL_SUCCESS);
    nixl_status_t s = runXfer(req);
    agent->releaseXferReq(req);
    bool ok = s == NIXL_SUCCESS;
    /* every byte of b's buffers: the pieces from a, the rest untouched */
    for (size_t i = 0; ok && i < bufs.size(); i++) {
        std::vector<char> want(bufs[i]->len);
        for (size_t o = 0; o < want.size(); o++) {
            want[o] = char(patByte(102, int(i), o));
        }
        for (const auto &p : plan) {
            if (p.bBuf == int(i)) {
                for (size_t k = 0; k < p.len; k++) {
                    want[p.bOff + k] = char(patByte(2, p.aBuf, p.aOff + k));
                }
            }
        }
        if (memcmp(want.data(), bufs[i]->p, want.size())) {
            note("b" + std::to_string(i) + " differs from what was read");
            ok = false;
        }
    }
    tell("read", ok ? "pass" : "fail");
    CHECK_STATUS(s, NIXL_SUCCESS);
    CHECK(ok);
    return PASS;
}

/* 4096 descriptors in one request, posted three times with new data. */
Result
t_many_descs() {
    const auto plan = makePlan(13, 4096, 300, aLens, bLens, false);
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixlXferReqH *req = nullptr;

    if (role == "a") {
        for (size_t i = 0; i < bufs.size(); i++) {
            fill(*bufs[i], 3, int(i));
        }
    }
    CHECK(meet("many-ready"));
    if (role == "b") {
        CHECK(plan.size() == 4096);
        planLists(plan, local, remote);
        CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req),
                     NIXL_SUCCESS);
    }
    for (int round = 0; round < 3; round++) {
        const std::string step = "many" + std::to_string(round);
        if (role == "b") {
            for (size_t i = 0; i < bufs.size(); i++) {
                fill(*bufs[i], 300 + round, int(i));
            }
            nixl_status_t s = runXfer(req);
            tell(step, s == NIXL_SUCCESS ? "pass" : "fail");
            CHECK_STATUS(s, NIXL_SUCCESS);
            CHECK(meet(step + "-checked"));
        } else {
            CHECK(hear(step) == "pass");
            const bool ok = checkWritten(plan, 3, 300 + round);
            CHECK(meet(step + "-checked"));
            CHECK(ok);
        }
    }
    if (req) {
        CHECK_STATUS(agent->releaseXferReq(req), NIXL_SUCCESS);
    }
    return PASS;
}

/*
 * The data of a transfer is all there when its notification comes: with
 * several jobs (a notification-only job to the mailbox, fenced behind
 * them) and with one (the job carries it).
 */
Result
t_write_notif() {
    const std::vector<std::vector<Piece>> plans = {
        makePlan(14, 300, 20000, aLens, bLens, false),
        makePlan(18, 200, 4000, {aLens[1]}, {bLens[0]}, false),
    };

    if (!maxNotify) {
        return SKIP;
    }
    for (size_t r = 0; r < plans.size(); r++) {
        const std::string msg = "w-notif-" + std::to_string(r);
        const std::string step = "wn" + std::to_string(r);
        /* the single-job plan: a1 from b0 */
        auto plan = plans[r];
        if (r == 1) {
            for (auto &p : plan) {
                p.aBuf = 1;
            }
        }
        if (role == "a") {
            for (size_t i = 0; i < bufs.size(); i++) {
                fill(*bufs[i], 4, int(i));
            }
            CHECK(meet(step + "-ready"));
            CHECK(waitNotif(otherName, msg, 60000) == 1);
            /* checked at the notification, before b says anything */
            const bool ok = checkWritten(plan, 4, 204);
            CHECK(hear(step) == "pass");
            /* exactly once */
            CHECK(waitNotif(otherName, msg, 1000, nullptr, false) == 0);
            CHECK(ok);
            continue;
        }
        CHECK(meet(step + "-ready"));
        nixl_status_t s = writePlan(plan, 204, msg);
        tell(step, s == NIXL_SUCCESS ? "pass" : "fail");
        CHECK_STATUS(s, NIXL_SUCCESS);
    }
    return PASS;
}

/* A READ with a notification: a hears of it once b has read. */
Result
t_read_notif() {
    const auto plan = makePlan(15, 64, 10000, aLens, bLens, true);

    if (!maxNotify) {
        return SKIP;
    }
    if (role == "a") {
        for (size_t i = 0; i < bufs.size(); i++) {
            fill(*bufs[i], 5, int(i));
        }
        CHECK(meet("rn-ready"));
        CHECK(waitNotif(otherName, "r-notif", 60000) == 1);
        CHECK(hear("rn") == "pass");
        CHECK(waitNotif(otherName, "r-notif", 500, nullptr, false) == 0);
        return PASS;
    }
    CHECK(meet("rn-ready"));
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixl_opt_args_t extra;
    nixlXferReqH *req = nullptr;
    planLists(plan, local, remote);
    extra.notif = std::string("r-notif");
    CHECK_STATUS(agent->createXferReq(NIXL_READ, local, remote, otherName, req, &extra),
                 NIXL_SUCCESS);
    nixl_status_t s = runXfer(req);
    agent->releaseXferReq(req);
    bool ok = s == NIXL_SUCCESS;
    for (const auto &p : plan) {
        for (size_t k = 0; ok && k < p.len; k++) {
            ok = uint8_t(bufs[p.bBuf]->p[p.bOff + k]) == patByte(5, p.aBuf, p.aOff + k);
        }
    }
    tell("rn", ok ? "pass" : "fail");
    CHECK_STATUS(s, NIXL_SUCCESS);
    CHECK(ok);
    return PASS;
}

/* genNotif both ways: any bytes, exactly once; too long is refused. */
Result
t_gen_notif() {
    std::string bin;

    if (!maxNotify) {
        return SKIP;
    }
    for (int i = 0; i < 256 && bin.size() < maxNotify; i++) {
        bin.push_back(char(i));
    }
    const std::string longest(maxNotify, 'y');
    CHECK(meet("gn-ready"));
    if (role == "b") {
        CHECK_STATUS(agent->genNotif(otherName, bin), NIXL_SUCCESS);
        CHECK_STATUS(agent->genNotif(otherName, "second"), NIXL_SUCCESS);
        CHECK_STATUS(agent->genNotif(otherName, std::string(maxNotify + 1, 'x')),
                     NIXL_ERR_INVALID_PARAM);
        CHECK_STATUS(agent->genNotif(otherName, longest), NIXL_SUCCESS);
        CHECK(waitNotif(otherName, "pong", 60000) == 1);
        CHECK(meet("gn-done"));
        return PASS;
    }
    /* all three, each once, and nothing else */
    std::vector<std::string> got;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (got.size() < 3 && Clock::now() < deadline) {
        nixl_notifs_t n;
        CHECK_STATUS(agent->getNotifs(n), NIXL_SUCCESS);
        for (auto &kv : n) {
            CHECK(kv.first == otherName);
            got.insert(got.end(), kv.second.begin(), kv.second.end());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK_STATUS(agent->genNotif(otherName, "pong"), NIXL_SUCCESS);
    CHECK(meet("gn-done"));
    CHECK(waitNotif(otherName, "none", 500, &got, false) == 0);
    for (const auto &o : got) {
        note("notification of " + std::to_string(o.size()) + " bytes: " + o.substr(0, 20));
    }
    CHECK(got.size() == 3);
    CHECK(std::count(got.begin(), got.end(), bin) == 1);
    CHECK(std::count(got.begin(), got.end(), std::string("second")) == 1);
    CHECK(std::count(got.begin(), got.end(), longest) == 1);
    return PASS;
}

/*
 * A request released while its jobs are in flight is cancelled: what has
 * not reached the NIC stays put, its notification comes at most once and
 * never before all of its data, the jobs' completions are all taken (no
 * request is left in flight when the agent ends, selftests/guest/nixl.sh
 * checks the log), and the agent goes on.
 */
Result
t_release_in_flight() {
    const bool notif = maxNotify > 0;
    std::vector<Piece> big;

    /* 1.5 MiB of a1 from b0 and b1, in 64 KiB pieces: in flight for a
     * while under TCG, without starving the session's keepalive (a 6.12
     * guest with slab and page poisoning missed it under 27 MiB) */
    for (size_t off = 0, k = 0; off < (3 << 19); off += 65536, k++) {
        const int bb = int(k % 2);
        big.push_back({1, off, bb, (k / 2 * 65536) % (bLens[bb] - 65536), 65536});
    }
    if (role == "a") {
        fill(*bufs[1], 6, 1);
        CHECK(meet("rif-ready"));
        if (notif) {
            /* until the next request's notification, and a second more:
             * the released one's comes at most once, and only with all
             * of its data */
            const auto deadline = Clock::now() + std::chrono::seconds(60);
            auto quiet = Clock::now() + std::chrono::hours(1);
            int released = 0, after = 0;
            while (Clock::now() < std::min(deadline, quiet)) {
                nixl_notifs_t n;
                CHECK_STATUS(agent->getNotifs(n), NIXL_SUCCESS);
                for (auto &m : n[otherName]) {
                    if (m == "released") {
                        released++;
                        /* a1 only: a0 takes the next request's data */
                        CHECK(checkWritten(big, 6, 206, 1));
                    } else if (m == "after-release" && !after++) {
                        quiet = Clock::now() + std::chrono::seconds(1);
                    } else {
                        note("unexpected notification " + m);
                        return FAIL;
                    }
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            note(released ? "the released request's notification came" :
                            "the released request's notification was cancelled");
            CHECK(released <= 1);
            CHECK(after == 1);
        }
        CHECK(hear("rif") == "pass");
        return PASS;
    }
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixl_opt_args_t extra;
    nixlXferReqH *req = nullptr;
    planLists(big, local, remote);
    for (size_t i = 0; i < bufs.size(); i++) {
        fill(*bufs[i], 206, int(i));
    }
    CHECK(meet("rif-ready"));
    if (notif) {
        extra.notif = std::string("released");
    }
    CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req, &extra),
                 NIXL_SUCCESS);
    nixl_status_t s = agent->postXferReq(req);
    note(std::string("posted: ") + nixlEnumStrings::statusStr(s));
    CHECK(s == NIXL_IN_PROG || s == NIXL_SUCCESS);
    CHECK_STATUS(agent->releaseXferReq(req), NIXL_SUCCESS);
    /* more released in flight, without notification */
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req),
                     NIXL_SUCCESS);
        CHECK(agent->postXferReq(req) >= 0);
        CHECK_STATUS(agent->releaseXferReq(req), NIXL_SUCCESS);
    }
    /* the agent goes on */
    const auto small = makePlan(16, 8, 100, {aLens[0]}, bLens, false);
    s = writePlan(small, 206, notif ? "after-release" : "");
    tell("rif", s == NIXL_SUCCESS ? "pass" : "fail");
    CHECK_STATUS(s, NIXL_SUCCESS);
    return PASS;
}

/* Descriptors NIXL or the backend must refuse, each with its code. */
Result
t_bad_descs() {
    if (role == "a") {
        CHECK(meet("bad-done", 300));
        return PASS;
    }
    nixlXferReqH *req = nullptr;
    Buf unreg(8192, true);

    auto one = [&](uintptr_t l, size_t llen, uintptr_t r, size_t rlen, uint64_t rdev,
                   const std::string &agentTo) {
        nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
        local.addDesc(nixlBasicDesc(l, llen, 0));
        remote.addDesc(nixlBasicDesc(r, rlen, rdev));
        req = nullptr;
        nixl_status_t s = agent->createXferReq(NIXL_WRITE, local, remote, agentTo, req);
        if (req) {
            agent->releaseXferReq(req);
        }
        return s;
    };
    const uintptr_t l = bufs[0]->addr();
    const uintptr_t r = remoteAddr[0];

    /* local memory that is not registered */
    CHECK_STATUS(one(unreg.addr(), 100, r, 100, 0, otherName), NIXL_ERR_NOT_FOUND);
    /* local descriptor running past its registration */
    CHECK_STATUS(one(l + bufs[0]->len - 50, 100, r, 100, 0, otherName), NIXL_ERR_NOT_FOUND);
    /* remote range running past the end of a's buffer */
    CHECK_STATUS(one(l, 100, r + remoteLen[0] - 10, 100, 0, otherName), NIXL_ERR_NOT_FOUND);
    /* remote memory a never registered */
    CHECK_STATUS(one(l, 100, r + (64ULL << 30), 100, 0, otherName), NIXL_ERR_NOT_FOUND);
    /* remote on another device id */
    CHECK_STATUS(one(l, 100, r, 100, 7, otherName), NIXL_ERR_NOT_FOUND);
    /* lengths that differ */
    CHECK_STATUS(one(l, 100, r, 99, 0, otherName), NIXL_ERR_INVALID_PARAM);
    /* an agent nobody loaded */
    CHECK_STATUS(one(l, 100, r, 100, 0, "nixl-zz"), NIXL_ERR_NOT_FOUND);
    /* counts that differ */
    {
        nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
        local.addDesc(nixlBasicDesc(l, 10, 0));
        local.addDesc(nixlBasicDesc(l + 10, 10, 0));
        remote.addDesc(nixlBasicDesc(r, 10, 0));
        CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req),
                     NIXL_ERR_INVALID_PARAM);
    }
    /* and a good one still works */
    CHECK_STATUS(one(l, 100, r, 100, 0, otherName), NIXL_SUCCESS);
    CHECK(meet("bad-done", 300));
    return PASS;
}

/*
 * Memory a deregisters after b loaded its metadata: the request b made
 * before fails at post or check with NOT_FOUND (a is still there: its
 * mailbox answers), and the rest of a's memory still works.
 */
Result
t_deregistered() {
    if (role == "a") {
        nixl_reg_dlist_t d(DRAM_SEG);
        d.addDesc(nixlBlobDesc(bufs[1]->addr(), bufs[1]->len, 0));
        CHECK(meet("dereg-prepped"));
        CHECK_STATUS(agent->deregisterMem(d), NIXL_SUCCESS);
        CHECK(meet("dereg-done"));
        CHECK(meet("dereg-checked", 300));
        CHECK_STATUS(agent->registerMem(d), NIXL_SUCCESS);
        return PASS;
    }
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixlXferReqH *req = nullptr;
    local.addDesc(nixlBasicDesc(bufs[0]->addr(), 4096, 0));
    remote.addDesc(nixlBasicDesc(remoteAddr[1], 4096, 0));
    CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req), NIXL_SUCCESS);
    CHECK(meet("dereg-prepped"));
    CHECK(meet("dereg-done"));
    nixl_status_t s = runXfer(req, nullptr, 60);
    agent->releaseXferReq(req);
    note(std::string("write to deregistered memory: ") + nixlEnumStrings::statusStr(s));
    CHECK(meet("dereg-checked", 300));
    CHECK_STATUS(s, NIXL_ERR_NOT_FOUND);
    /* a0 is still there */
    const auto plan = makePlan(17, 16, 1000, {aLens[0]}, bLens, false);
    CHECK_STATUS(writePlan(plan, 207), NIXL_SUCCESS);
    return PASS;
}

/*
 * An agent whose backend names a session nobody made: the error says
 * which `kxferctl peer add` would make it.
 */
Result
t_missing_session() {
    if (role == "a") {
        CHECK(meet("ms-done"));
        return PASS;
    }
    nixlAgentConfig cfg(true);
    nixlAgent b2("nixl-b2", cfg);
    nixl_b_params_t params = {{"session", "nosuch-%n"}};
    nixlBackendH *bk = nullptr;
    std::string md, name;
    const std::string log = dir + "/ms-stderr.b";

    CHECK_STATUS(b2.createBackend("KXFER", params, bk), NIXL_SUCCESS);
    CHECK(getFile("md." + other, md));
    CHECK_STATUS(b2.loadRemoteMD(md, name), NIXL_SUCCESS);
    /* NIXL logs to stderr: catch what connecting says */
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    nixl_status_t s = b2.makeConnection(name);
    fflush(stderr);
    dup2(saved, 2);
    close(fd);
    close(saved);
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    note("makeConnection said: " + ss.str());
    CHECK_STATUS(s, NIXL_ERR_NOT_FOUND);
    CHECK(ss.str().find("`kxferctl peer add nosuch-a " + peerAddr + "`") != std::string::npos);
    CHECK(meet("ms-done"));
    return PASS;
}

/*
 * a's agent goes away (its backend closes /dev/kxfer: pools, exports and
 * mailbox are withdrawn); b's next transfer to it ends with
 * REMOTE_DISCONNECT, after which NIXL forgets the agent.
 */
Result
t_peer_gone() {
    if (role == "a") {
        CHECK(meet("pg-prepped"));
        agent.reset();
        bufs.clear();
        CHECK(meet("pg-gone"));
        CHECK(meet("pg-checked", 300));
        return PASS;
    }
    nixl_xfer_dlist_t local(DRAM_SEG), remote(DRAM_SEG);
    nixlXferReqH *req = nullptr;
    local.addDesc(nixlBasicDesc(bufs[0]->addr(), 65536, 0));
    remote.addDesc(nixlBasicDesc(remoteAddr[0], 65536, 0));
    CHECK_STATUS(agent->createXferReq(NIXL_WRITE, local, remote, otherName, req), NIXL_SUCCESS);
    CHECK(meet("pg-prepped"));
    CHECK(meet("pg-gone"));
    nixl_status_t s = runXfer(req, nullptr, 60);
    agent->releaseXferReq(req);
    note(std::string("write to a gone agent: ") + nixlEnumStrings::statusStr(s));
    nixl_status_t s2 = agent->createXferReq(NIXL_WRITE, local, remote, otherName, req);
    CHECK(meet("pg-checked", 300));
    CHECK_STATUS(s, NIXL_ERR_REMOTE_DISCONNECT);
    /* NIXL dropped the agent's metadata */
    CHECK_STATUS(s2, NIXL_ERR_NOT_FOUND);
    return PASS;
}

struct Test {
    const char *name;
    std::function<Result()> fn;
};

} // namespace

int
main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--role") {
            role = argv[i + 1];
        } else if (k == "--dir") {
            dir = argv[i + 1];
        } else if (k == "--peer-addr") {
            peerAddr = argv[i + 1];
        }
    }
    if ((role != "a" && role != "b") || dir.empty()) {
        fprintf(stderr, "usage: nixl_test --role a|b --dir DIR [--peer-addr ADDR]\n");
        return 2;
    }
    other = role == "a" ? "b" : "a";
    agentName = "nixl-" + role;
    otherName = "nixl-" + other;
    mkdir(dir.c_str(), 0777);
    setvbuf(stdout, nullptr, _IOLBF, 0);

    const std::vector<Test> tests = {
        {"plugin", t_plugin},
        {"register", t_register},
        {"metadata", t_metadata},
        {"write", t_write},
        {"read", t_read},
        {"many_descs", t_many_descs},
        {"write_notif", t_write_notif},
        {"read_notif", t_read_notif},
        {"gen_notif", t_gen_notif},
        {"release_in_flight", t_release_in_flight},
        {"bad_descs", t_bad_descs},
        {"deregistered", t_deregistered},
        {"missing_session", t_missing_session},
        {"peer_gone", t_peer_gone},
    };
    int failed = 0;
    /* for debugging: NIXL_TEST_ONLY=name,name runs those (and the three
     * every test needs) */
    const std::string only = getenv("NIXL_TEST_ONLY") ? getenv("NIXL_TEST_ONLY") : "";

    printf("TAP version 13\n1..%zu\n", tests.size());
    for (size_t i = 0; i < tests.size(); i++) {
        const auto t0 = Clock::now();
        if (!only.empty() && i > 2 && ("," + only + ",").find(std::string(",") + tests[i].name + ",") == std::string::npos) {
            printf("ok %zu %s # SKIP not in NIXL_TEST_ONLY\n", i + 1, tests[i].name);
            continue;
        }
        printf("#  RUN           %s ...\n", tests[i].name);
        Result r = FAIL;
        try {
            r = tests[i].fn();
        }
        catch (const std::exception &e) {
            note(std::string("exception: ") + e.what());
        }
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        printf("# %s (%.1f s)\n", tests[i].name, s);
        if (r == SKIP) {
            printf("ok %zu %s # SKIP no notifications in this kxfer module\n", i + 1,
                   tests[i].name);
        } else {
            printf("%sok %zu %s\n", r == PASS ? "" : "not ", i + 1, tests[i].name);
            failed += r == FAIL;
        }
        /* nothing works without an agent, buffers and metadata */
        if (i <= 2 && r == FAIL) {
            for (size_t j = i + 1; j < tests.size(); j++) {
                printf("not ok %zu %s\n", j + 1, tests[j].name);
            }
            failed += tests.size() - i - 1;
            break;
        }
    }
    putFile("done." + role, "");
    agent.reset();
    return failed ? 1 : 0;
}
