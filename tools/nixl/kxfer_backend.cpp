// SPDX-License-Identifier: Apache-2.0
/*
 * KXFER: a NIXL backend over kxfer (see kxfer_backend.h, README.md).
 */
#include "kxfer_backend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/nixl_log.h"
#include "kxfer_topo.h"

namespace kxfer_nixl {

/*
 * State of one transfer request.  plans[i] is jobs[i]; with a
 * notification, jobs has one more, the notify-only job to the remote
 * agent's mailbox.  A post submits jobs in order; submitted counts the
 * accepted ones, outstanding those whose completion is not reaped yet.
 */
struct Plan {
    LocalMD *lmd;
    RemoteMD *rmd;
    std::vector<struct kxfer_segment> segs;
};

struct XferState {
    nixl_xfer_op_t op = NIXL_WRITE;
    std::shared_ptr<RemoteAgent> agent;
    std::vector<Plan> plans;

    std::vector<struct kxfer_job> jobs;
    std::string payload; /* the notification's bytes, while submitting */
    uint64_t token = 0; /* user_data of this post's jobs */
    size_t submitted = 0;
    size_t outstanding = 0;
    int err = 0; /* first error of this post, negative errno */
    nixl_status_t status = NIXL_SUCCESS; /* what err means to NIXL */
    bool retried = false;
    bool released = false;
};

namespace {

/* user_data of the notify-only jobs of genNotif(), which no request owns */
constexpr uint64_t kGenNotifToken = 1ULL << 63;
/* A job's segments: the module's max_segments, and a bound on its work
 * requests (-E2BIG beyond 65536); a segment costs at most one WR per
 * 128 KiB (32 SGEs of 4 KiB pages) and two more at its ends. */
constexpr uint64_t kWrBudget = 32768;
constexpr unsigned int kReapBatch = 64;
/* the sender's agent name leads a notification: u16 length, then bytes */
constexpr size_t kNameLenBytes = 2;

std::string
trim(const std::string &s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) {
        return "";
    }
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::string>
split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;

    while (std::getline(ss, item, sep)) {
        item = trim(item);
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

/* "key=value" lines, the format of the conn info and the public data */
std::unordered_map<std::string, std::string>
parseKv(const std::string &s) {
    std::unordered_map<std::string, std::string> kv;

    for (const auto &line : split(s, '\n')) {
        const auto eq = line.find('=');
        if (eq != std::string::npos) {
            kv[line.substr(0, eq)] = line.substr(eq + 1);
        }
    }
    return kv;
}

/* A token as the metadata carries it: 32 hex digits, or "" for none. */
std::string
tokenHex(const Token &t) {
    static const char digits[] = "0123456789abcdef";
    std::string out;

    if (!t.set) {
        return out;
    }
    for (uint8_t v : t.b) {
        out += digits[v >> 4];
        out += digits[v & 15];
    }
    return out;
}

/* tokenHex()'s format back; false if it is not (the token stays unset) */
bool
tokenParse(const std::string &s, Token &t) {
    t = Token();
    if (s.empty()) {
        return true;
    }
    if (s.size() != 2 * sizeof(t.b)) {
        return false;
    }
    for (size_t i = 0; i < s.size(); i++) {
        const int c = tolower(static_cast<unsigned char>(s[i]));
        int v;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else {
            t = Token();
            return false;
        }
        t.b[i / 2] = static_cast<uint8_t>((t.b[i / 2] << 4) | v);
    }
    t.set = true;
    return true;
}

/*
 * A backend parameter: as given, else from the environment
 * (KXFER_NIXL_<KEY>, for engines that create backends without
 * parameters, as vLLM does), else @def.
 */
std::string
param(const nixl_b_params_t *params, const std::string &key, const std::string &def) {
    std::string env = "KXFER_NIXL_";

    if (params) {
        const auto it = params->find(key);
        if (it != params->end() && !it->second.empty()) {
            return it->second;
        }
    }
    for (char c : key) {
        env += static_cast<char>(toupper(static_cast<unsigned char>(c)));
    }
    const char *v = getenv(env.c_str());
    return v && *v ? v : def;
}

std::string
readFirstLine(const std::string &path) {
    std::ifstream f(path);
    std::string line;

    if (f && std::getline(f, line)) {
        return trim(line);
    }
    return "";
}

/* Net devices under RDMA devices (RoCE, iWARP): their addresses are
 * where rdma_cm reaches this node. */
std::set<std::string>
rdmaNetdevs() {
    std::set<std::string> out;
    const std::string root = "/sys/class/infiniband";
    DIR *devs = opendir(root.c_str());

    if (!devs) {
        return out;
    }
    while (struct dirent *d = readdir(devs)) {
        if (d->d_name[0] == '.') {
            continue;
        }
        const std::string ports = root + "/" + d->d_name + "/ports";
        DIR *pd = opendir(ports.c_str());
        if (!pd) {
            continue;
        }
        while (struct dirent *p = readdir(pd)) {
            if (p->d_name[0] == '.') {
                continue;
            }
            const std::string nd = readFirstLine(ports + "/" + p->d_name + "/gid_attrs/ndevs/0");
            if (!nd.empty()) {
                out.insert(nd);
            }
        }
        closedir(pd);
    }
    closedir(devs);
    return out;
}

/* The addresses peers may reach this node at: those of RDMA net devices,
 * else of every interface that is up (not loopback, not link-local). */
std::vector<std::string>
localAddrs() {
    const std::set<std::string> rdma = rdmaNetdevs();
    std::vector<std::string> out;
    struct ifaddrs *ifa_list;

    if (getifaddrs(&ifa_list)) {
        return out;
    }
    for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
        char buf[INET6_ADDRSTRLEN];
        const void *a;

        if (!ifa->ifa_addr || (ifa->ifa_flags & IFF_LOOPBACK) || !(ifa->ifa_flags & IFF_UP)) {
            continue;
        }
        if (!rdma.empty() && !rdma.count(ifa->ifa_name)) {
            continue;
        }
        if (ifa->ifa_addr->sa_family == AF_INET) {
            a = &reinterpret_cast<struct sockaddr_in *>(ifa->ifa_addr)->sin_addr;
        } else if (ifa->ifa_addr->sa_family == AF_INET6) {
            auto *in6 = reinterpret_cast<struct sockaddr_in6 *>(ifa->ifa_addr);
            if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) {
                continue;
            }
            a = &in6->sin6_addr;
        } else {
            continue;
        }
        if (inet_ntop(ifa->ifa_addr->sa_family, a, buf, sizeof(buf))) {
            out.push_back(buf);
        }
    }
    freeifaddrs(ifa_list);
    return out;
}

/* A 32-bit FNV-1a of the agent name: names stay short (KXFER_NAME_MAX). */
uint32_t
hashName(const std::string &s) {
    uint32_t h = 2166136261u;

    for (unsigned char c : s) {
        h = (h ^ c) * 16777619u;
    }
    return h;
}

const char *
peerStateStr(uint32_t state) {
    switch (state) {
    case KXFER_PEER_CONNECTING:
        return "connecting";
    case KXFER_PEER_UP:
        return "up";
    case KXFER_PEER_DOWN:
        return "down";
    case KXFER_PEER_CLOSING:
        return "closing";
    }
    return "unknown";
}

/*
 * A refusal of SUBMIT that is about the request itself, not about the
 * remote agent or the session: NIXL_SUCCESS if it is not one of those.
 */
nixl_status_t
requestStatus(int err) {
    switch (-err) {
    case EINVAL:
    case ERANGE:
    case E2BIG:
        return NIXL_ERR_INVALID_PARAM;
    case EACCES:
    case EPERM:
        return NIXL_ERR_NOT_ALLOWED;
    }
    return NIXL_SUCCESS;
}

/* An address as 0x..., whatever the log stream's flags */
std::string
hexAddr(uintptr_t a) {
    char buf[2 + 2 * sizeof(a) + 1];

    snprintf(buf, sizeof(buf), "0x%jx", static_cast<uintmax_t>(a));
    return buf;
}

std::string
errStr(int err) {
    return std::string(strerror(-err)) + " (" + std::to_string(err) + ")";
}

} // namespace

/* ---------------------------------------------------------------------- */
/* Set-up and teardown                                                     */
/* ---------------------------------------------------------------------- */

nixlKxferEngine::nixlKxferEngine(const nixlBackendInitParams *init_params)
    : nixlBackendEngine(init_params),
      lookupTimeout_(5000) {
    const nixl_b_params_t *p = init_params->customParams;
    char pfx[32];

    sessionTemplate_ = param(p, "session", "%n");
    node_ = param(p, "node", "");
    if (node_.empty()) {
        node_ = readFirstLine("/sys/module/kxfer/parameters/node_name");
    }
    addrs_ = split(param(p, "addrs", ""), ',');
    if (addrs_.empty()) {
        addrs_ = localAddrs();
    }
    try {
        lookupTimeout_ = std::chrono::milliseconds(
            std::stoul(param(p, "lookup_timeout_ms", "5000")));
    }
    catch (const std::exception &) {
        NIXL_ERROR << "KXFER: lookup_timeout_ms is not a number of milliseconds";
        initErr = true;
        return;
    }
    const std::string runtime = param(p, "gpu", "auto");
    if (runtime != "auto" && runtime != "cuda" && runtime != "rocm") {
        NIXL_ERROR << "KXFER: the backend parameter gpu is auto, cuda or rocm, not " << runtime;
        initErr = true;
        return;
    }
    gpu_ = std::make_unique<GpuDrivers>(GpuConfig{runtime,
                                                  param(p, "cuda_lib", "libcuda.so.1"),
                                                  param(p, "rocm_lib", "libhsa-runtime64.so.1")});
    const std::string unknown = param(p, "notif_unknown", "accept");
    if (unknown != "accept" && unknown != "drop") {
        NIXL_ERROR << "KXFER: the backend parameter notif_unknown is accept or drop, not "
                   << unknown;
        initErr = true;
        return;
    }
    notifUnknownDrop_ = unknown == "drop";
    rdmaDev_ = param(p, "rdma_dev", "");
    if (rdmaDev_.size() >= KXFER_DEV_NAME_MAX) {
        NIXL_ERROR << "KXFER: the backend parameter rdma_dev is longer than an RDMA device name";
        initErr = true;
        return;
    }
    /* names of pools and exports are node-wide: pid, agent and engine */
    static std::atomic<unsigned int> engines{0};
    snprintf(pfx, sizeof(pfx), "nx%x.%08x.", static_cast<unsigned>(getpid()),
             hashName(localAgent + "#" + std::to_string(engines++)));
    prefix_ = pfx;

    if (!setup()) {
        initErr = true;
    }
}

bool
nixlKxferEngine::setup() {
    int ret = kxfer_open(&kx_);

    if (ret) {
        NIXL_ERROR << "KXFER: cannot open /dev/kxfer: " << errStr(ret)
                   << (ret == -ENOENT ? " (is the kxfer module loaded?)" : "");
        kx_ = nullptr;
        return false;
    }
    limits_ = kxfer_limits(kx_);
    if (!(limits_->features & KXFER_FEAT_USER_POOLS)) {
        NIXL_ERROR << "KXFER: the kxfer module cannot register user memory "
                      "(no KXFER_FEAT_USER_POOLS)";
        return false;
    }
    if (node_.empty()) {
        NIXL_ERROR << "KXFER: no node name: /sys/module/kxfer/parameters/node_name "
                      "is unreadable and no 'node' parameter was given";
        return false;
    }
#ifdef KXFER_FEAT_NOTIFY_MSG
    notifyMsg_ = (limits_->features & KXFER_FEAT_NOTIFY_MSG) && limits_->max_notify_len;
    maxNotifyLen_ = notifyMsg_ ? limits_->max_notify_len : 0;
#endif
#ifdef KXFER_FEAT_CANCEL
    cancel_ = limits_->features & KXFER_FEAT_CANCEL;
#endif
    subscribe_ = limits_->features & KXFER_FEAT_EXPORT_SUBSCRIBE;
    release_ = limits_->features & KXFER_FEAT_RELEASE;
#ifdef KXFER_FEAT_CONNECT
    connect_ = limits_->features & KXFER_FEAT_CONNECT;
#endif
#ifdef KXFER_FEAT_TOKENS
    tokens_ = limits_->features & KXFER_FEAT_TOKENS;
#endif
    if (!tokens_) {
        NIXL_WARN << "KXFER: the kxfer module has no capability-scoped exports "
                     "(KXFER_FEAT_TOKENS): this agent's registrations can be looked up "
                     "by any process of a node with a session to this one";
    }
    if (!notifyMsg_) {
        NIXL_WARN << "KXFER: the kxfer module has no notifications with a payload "
                     "(KXFER_FEAT_NOTIFY_MSG): genNotif and notifications of transfers "
                     "are not supported";
    }
    /* for the application (nixl_agent.get_backend_params("KXFER")): the
     * longest message, once this agent's name is in the payload */
    size_t room = 0;
    if (notifyMsg_ && maxNotifyLen_ > kNameLenBytes + localAgent.size()) {
        room = maxNotifyLen_ - kNameLenBytes - localAgent.size();
    }
    (void)setInitParam("max_notify_len", std::to_string(room));
    events_.resize(kReapBatch);
    msgs_.resize(std::max<size_t>(65536, size_t(maxNotifyLen_) * 4));
    return setupMailbox();
}

/*
 * The mailbox: a page of this agent's, exported, that peers aim their
 * notify-only jobs at; this file subscribes to its notifications.
 */
bool
nixlKxferEngine::setupMailbox() {
    struct kxfer_export_add e;
    int ret;

    mailboxName_ = prefix_ + "mb";
    mailboxLen_ = sysconf(_SC_PAGESIZE);
    mailboxMem_ =
        mmap(nullptr, mailboxLen_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mailboxMem_ == MAP_FAILED) {
        mailboxMem_ = nullptr;
        NIXL_PERROR << "KXFER: mailbox mmap";
        return false;
    }
    ret = kxfer_pool_register(kx_, mailboxName_.c_str(), mailboxMem_, mailboxLen_, &mailboxPool_);
    if (!ret) {
        ret = kxfer_export_init(&e, mailboxName_.c_str(), mailboxPool_, 0, mailboxLen_, nullptr,
                                KXFER_ACCESS_WRITE);
    }
    /* subscribed before any peer learns of it: nothing sent at once is
     * lost; found only with its token, which the conn info carries */
    if (!ret) {
        ret = exportAdd(e, subscribe_ ? &mailboxSub_ : nullptr, mailboxToken_);
    }
    if (!ret && !subscribe_) {
        ret = kxfer_notify_subscribe(kx_, mailboxName_.c_str(), &mailboxSub_);
    }
    if (ret) {
        NIXL_ERROR << "KXFER: cannot set up the mailbox export " << mailboxName_ << ": "
                   << errStr(ret);
        return false;
    }
    return true;
}

nixlKxferEngine::~nixlKxferEngine() {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);

    if (kx_) {
        /* Jobs of released requests may still be in flight: take back
         * what can be, and their completions so that nothing is counted
         * as lost. */
        if (!inflight_.empty()) {
            cancelLocked(0);
        }
        while ((!inflight_.empty() || notifsInFlight_) &&
               std::chrono::steady_clock::now() < deadline) {
            if (reapLocked(events_.size(), 1, 100 * 1000 * 1000) < 0) {
                break;
            }
        }
        if (!inflight_.empty() || notifsInFlight_) {
            NIXL_WARN << "KXFER: closing with " << inflight_.size() << " requests and "
                      << notifsInFlight_ << " notifications in flight";
        }
        kxfer_close(kx_);
    }
    if (mailboxMem_) {
        munmap(mailboxMem_, mailboxLen_);
    }
}

std::string
nixlKxferEngine::newName() const {
    return prefix_ + std::to_string(nextName_++);
}

/* ---------------------------------------------------------------------- */
/* Memory                                                                  */
/* ---------------------------------------------------------------------- */

/* A pool of the pages around a buffer of the process's memory. */
nixl_status_t
nixlKxferEngine::poolOfDramLocked(LocalMD &md) {
    const uintptr_t page = sysconf(_SC_PAGESIZE);
    int ret;

    md.span = md.addr & ~(page - 1);
    md.spanLen = ((md.addr + md.len + page - 1) & ~(page - 1)) - md.span;
    ret = kxfer_pool_register(kx_, md.exportName.c_str(), reinterpret_cast<void *>(md.span),
                              md.spanLen, &md.pool);
    if (ret) {
        NIXL_ERROR << "KXFER: cannot register " << md.len << " bytes at " << hexAddr(md.addr)
                   << ": " << errStr(ret)
                   << (ret == -ENOMEM ? " (RLIMIT_MEMLOCK?)" : "")
                   << (ret == -EMFILE ? " (the module's max_pools_per_fd)" : "");
        return ret == -EFAULT || ret == -EACCES ? NIXL_ERR_INVALID_PARAM : NIXL_ERR_BACKEND;
    }
    return NIXL_SUCCESS;
}

/*
 * The RDMA device GPU memory is imported for: the backend parameter
 * rdma_dev, else the one nearest the GPU in the PCIe tree; "" (the
 * buffer's pages, which GPU memory has none of) when neither is known.
 */
std::string
nixlKxferEngine::rdmaDeviceLocked(const GpuDmabuf &buf) {
    std::string why;

    if (!rdmaDev_.empty()) {
        return rdmaDev_;
    }
    const auto it = nearDev_.find(buf.pci);
    if (it != nearDev_.end()) {
        return it->second;
    }
    std::string dev;
    if (buf.pci.empty()) {
        why = "the GPU's PCI address is unknown";
    } else {
        dev = nearestRdmaDevice("/sys", buf.pci, why);
    }
    if (dev.empty()) {
        NIXL_WARN << "KXFER: no RDMA device for the memory of " << buf.what << ": " << why
                  << "; importing it through its pages (the backend parameter rdma_dev "
                  << "names a device)";
    } else {
        NIXL_INFO << "KXFER: the memory of " << buf.what << " is imported for " << dev
                  << ", the nearest RDMA device: " << why;
    }
    nearDev_[buf.pci] = dev;
    return dev;
}

/*
 * A pool of GPU memory: the GPU driver exports the pages around the
 * buffer as a dma-buf, which kxfer imports for the RDMA device nearest
 * the GPU (ib_umem_dmabuf_get_pinned(): the NIC reaches the GPU's memory
 * peer-to-peer), or through its pages when it has some (a udmabuf).
 */
nixl_status_t
nixlKxferEngine::poolOfVramLocked(LocalMD &md) {
    GpuDmabuf buf;
    std::string err;
    nixl_status_t status;
    int ret;

    if (!(limits_->features & KXFER_FEAT_DMABUF_POOLS)) {
        NIXL_ERROR << "KXFER: the kxfer module cannot import dma-bufs "
                      "(no KXFER_FEAT_DMABUF_POOLS): VRAM cannot be registered";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    status = gpu_->exportDmabuf(md.addr, md.len, buf, err);
    if (status != NIXL_SUCCESS) {
        NIXL_ERROR << "KXFER: cannot register " << md.len << " bytes of VRAM at "
                   << hexAddr(md.addr) << ": " << err;
        return status;
    }
    md.dev = rdmaDeviceLocked(buf);
    ret = kxfer_pool_register_dmabuf(kx_, md.exportName.c_str(), buf.fd, buf.offset, buf.len,
                                     md.dev.c_str(), &md.pool);
    gpu_->close(buf); /* the pool holds the buffer */
    if (ret) {
        NIXL_ERROR << "KXFER: cannot register " << md.len << " bytes of VRAM of " << buf.what
                   << " (a dma-buf of " << buf.len << " bytes) on "
                   << (md.dev.empty() ? "every RDMA device" : "RDMA device " + md.dev) << ": "
                   << errStr(ret)
                   << (ret == -EOPNOTSUPP && md.dev.empty() ?
                           " (GPU memory has no pages: an RDMA device that does DMA must "
                           "import it; the backend parameter rdma_dev names one)" :
                       ret == -EOPNOTSUPP ?
                           " (the device cannot reach the GPU's memory peer-to-peer; the "
                           "kernel log has kxfer's reason)" :
                       ret == -ENODEV ? " (no RDMA device of that name: rdma_dev)" :
                       ret == -EPERM  ? " (the administrator forbids pools of a process's "
                                        "memory: user_pool_mem_max)" :
                       ret == -EMFILE ? " (the module's max_pools_per_fd)" :
                                        "");
        return ret == -EOPNOTSUPP ? NIXL_ERR_NOT_SUPPORTED :
            ret == -ENODEV        ? NIXL_ERR_INVALID_PARAM :
            ret == -EPERM         ? NIXL_ERR_NOT_ALLOWED :
                                    NIXL_ERR_BACKEND;
    }
    md.span = md.addr - buf.skew;
    md.spanLen = buf.len;
    NIXL_DEBUG << "KXFER: VRAM of " << buf.what << " at " << hexAddr(md.addr) << " is pool "
               << md.exportName << " on "
               << (md.dev.empty() ? "its pages" : md.dev);
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::registerMem(const nixlBlobDesc &mem,
                             const nixl_mem_t &nixl_mem,
                             nixlBackendMD *&out) {
    std::lock_guard<std::mutex> lock(mutex_);
    struct kxfer_export_add e;
    nixl_status_t status;
    int ret;

    if (nixl_mem != DRAM_SEG && nixl_mem != VRAM_SEG) {
        NIXL_ERROR << "KXFER: only DRAM_SEG and VRAM_SEG memory can be registered";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    if (!mem.len) {
        NIXL_ERROR << "KXFER: cannot register an empty buffer";
        return NIXL_ERR_INVALID_PARAM;
    }

    auto md = std::make_unique<LocalMD>();
    md->addr = mem.addr;
    md->len = mem.len;
    md->vram = nixl_mem == VRAM_SEG;
    md->exportName = newName();
    status = md->vram ? poolOfVramLocked(*md) : poolOfDramLocked(*md);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    /* exactly the buffer's bytes, for any session that reaches us */
    ret = kxfer_export_init(&e, md->exportName.c_str(), md->pool, md->addr - md->span, md->len,
                            nullptr, KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
    /* a transfer of one job carries its notification to the export, which
     * is subscribed to before any peer can send one; only a process given
     * the metadata, with the export's token, can look it up */
    if (!ret) {
        ret = exportAdd(e, notifyMsg_ && subscribe_ ? &md->sub : nullptr, md->token);
    }
    if (!ret && notifyMsg_ && !subscribe_) {
        ret = kxfer_notify_subscribe(kx_, md->exportName.c_str(), &md->sub);
    }
    if (ret) {
        NIXL_ERROR << "KXFER: cannot export " << md->exportName << ": " << errStr(ret);
        kxfer_pool_unregister(kx_, md->pool);
        return NIXL_ERR_BACKEND;
    }
    NIXL_DEBUG << "KXFER: registered " << md->len << " bytes of " << (md->vram ? "VRAM" : "DRAM")
               << " as export " << md->exportName;
    out = md.release();
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::deregisterMem(nixlBackendMD *meta) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto *md = static_cast<LocalMD *>(meta);
    int ret;

    if (!md) {
        return NIXL_ERR_INVALID_PARAM;
    }
    if (md->sub) {
        (void)kxfer_notify_unsubscribe(kx_, md->sub);
    }
    /* withdraws the export, which revokes its token; jobs in flight keep
     * the pages until done */
    ret = kxfer_pool_unregister(kx_, md->pool);
    explicit_bzero(md->token.b, sizeof(md->token.b));
    if (ret) {
        NIXL_ERROR << "KXFER: cannot unregister " << md->exportName << ": " << errStr(ret);
    }
    delete md;
    return ret ? NIXL_ERR_BACKEND : NIXL_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Metadata and connections                                                */
/* ---------------------------------------------------------------------- */

/*
 * What a remote agent needs to reach the export: its name and, as UCX
 * gives an rkey, its token (never a key or address).
 */
nixl_status_t
nixlKxferEngine::getPublicData(const nixlBackendMD *meta, std::string &str) const {
    const auto *md = static_cast<const LocalMD *>(meta);

    if (!md) {
        return NIXL_ERR_INVALID_PARAM;
    }
    str = "export=" + md->exportName + "\nlen=" + std::to_string(md->len) + "\n";
    if (md->token.set) {
        str += "token=" + tokenHex(md->token) + "\n";
    }
    return NIXL_SUCCESS;
}

/* An export, capability-scoped if the module can: @token is its token. */
int
nixlKxferEngine::exportAdd(const struct kxfer_export_add &e, uint32_t *sub, Token &token) const {
    token = Token();
#ifdef KXFER_FEAT_TOKENS
    if (tokens_) {
        const int ret = kxfer_export_add_token(kx_, &e, token.b, sub);
        token.set = !ret;
        return ret;
    }
#endif
    return sub ? kxfer_export_add_subscribe(kx_, &e, sub) : kxfer_export_add(kx_, &e);
}

/* A remote export, with its token if its owner gave one. */
int
nixlKxferEngine::remoteLookup(uint32_t peer,
                              const std::string &name,
                              const Token &token,
                              struct kxfer_remote_lookup &rl) const {
#ifdef KXFER_FEAT_TOKENS
    if (token.set) {
        return kxfer_remote_lookup_token(kx_, peer, name.c_str(), token.b, &rl);
    }
#endif
    return kxfer_remote_lookup(kx_, peer, name.c_str(), &rl);
}

nixl_status_t
nixlKxferEngine::getConnInfo(std::string &str) const {
    std::string addrs;

    for (const auto &a : addrs_) {
        addrs += (addrs.empty() ? "" : ",") + a;
    }
    str = "kxfer=1\nnode=" + node_ + "\naddrs=" + addrs + "\nmailbox=" + mailboxName_ + "\n";
    if (mailboxToken_.set) {
        str += "mailbox_token=" + tokenHex(mailboxToken_) + "\n";
    }
    return NIXL_SUCCESS;
}

std::string
nixlKxferEngine::sessionName(const RemoteAgent &ra) const {
    std::string out;

    for (size_t i = 0; i < sessionTemplate_.size(); i++) {
        if (sessionTemplate_[i] == '%' && i + 1 < sessionTemplate_.size()) {
            const char c = sessionTemplate_[++i];
            if (c == 'n') {
                out += ra.node;
            } else if (c == 'a') {
                out += ra.name;
            } else {
                out += c;
            }
        } else {
            out += sessionTemplate_[i];
        }
    }
    return out;
}

std::string
nixlKxferEngine::peerAddCommand(const RemoteAgent &ra) const {
    const std::string addr = ra.addrs.empty() ? "ADDR" : ra.addrs[0];

    return "kxferctl peer add " + ra.session + " " + addr;
}

nixl_status_t
nixlKxferEngine::loadRemoteConnInfo(const std::string &remote_agent,
                                    const std::string &remote_conn_info) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto kv = parseKv(remote_conn_info);
    auto ra = std::make_shared<RemoteAgent>();

    if (kv["kxfer"] != "1" || kv["node"].empty() || kv["mailbox"].empty()) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " sent connection info of another "
                   << "format or version";
        return NIXL_ERR_MISMATCH;
    }
    ra->name = remote_agent;
    ra->node = kv["node"];
    ra->addrs = split(kv["addrs"], ',');
    ra->mailbox = kv["mailbox"];
    if (!tokenParse(kv["mailbox_token"], ra->mailboxToken)) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " sent a malformed mailbox token";
        return NIXL_ERR_MISMATCH;
    }
    if (ra->mailboxToken.set && !tokens_) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " exports only to holders of its "
                   << "tokens, which this node's kxfer module cannot present (no "
                   << "KXFER_FEAT_TOKENS): update the module";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    ra->session = sessionName(*ra);
    if (ra->session.empty() || ra->session.size() >= KXFER_NAME_MAX) {
        NIXL_ERROR << "KXFER: session name '" << ra->session << "' for agent " << remote_agent
                   << " is not 1.." << KXFER_NAME_MAX - 1 << " characters";
        return NIXL_ERR_INVALID_PARAM;
    }
    /* new metadata of an agent already known: the old handles go */
    const auto old = agents_.find(remote_agent);
    if (old != agents_.end()) {
        forgetAgentLocked(*old->second);
    }
    agents_[remote_agent] = ra;
    /* the session may not be there yet: connect() or the first transfer
     * says so */
    (void)connectLocked(*ra, true);
    return NIXL_SUCCESS;
}

/*
 * Handles go back to the kernel once nothing here names them (a remote
 * handle holds its session; a long-lived agent meets many others).  A
 * module without KXFER_FEAT_RELEASE keeps them until the file closes.
 */
void
nixlKxferEngine::dropPeerLocked(uint32_t &handle) const {
    if (handle && release_) {
        (void)kxfer_peer_release(kx_, handle);
    }
    handle = 0;
}

void
nixlKxferEngine::dropRemoteLocked(uint32_t &handle) const {
    if (handle && release_) {
        (void)kxfer_remote_release(kx_, handle);
    }
    handle = 0;
}

/* The agent's own handles: its session's and its mailbox's (the handles
 * of its buffers go with their metadata, unloadMD()). */
void
nixlKxferEngine::forgetAgentLocked(RemoteAgent &ra) const {
    dropRemoteLocked(ra.mailboxHandle);
    ra.mailboxPeer = 0;
    dropPeerLocked(ra.peer);
    ra.gone = true;
}

/*
 * A peer handle of the session that reaches @ra: the one of its name (an
 * administrator's peer add, or the session its node opened to this
 * one), else one to an address of its node, which the kernel makes on
 * demand where the administrator's policy allows (kxferctl connect
 * allow).  @ra.via names the session found.
 *
 * Return: 0; -ENOENT if there is none and the policy allows none (or
 * the module has no sessions on demand); another -errno of the kernel.
 */
int
nixlKxferEngine::peerHandleLocked(RemoteAgent &ra, uint32_t &handle, uint32_t &state) const {
    int ret = kxfer_peer_lookup(kx_, ra.session.c_str(), &handle, &state);

    ra.via = ra.session;
#ifdef KXFER_FEAT_CONNECT
    if (ret != -ENOENT || !connect_) {
        return ret;
    }
    for (const auto &addr : ra.addrs) {
        struct kxfer_connect c;
        const int err = kxfer_connect(kx_, addr.c_str(), 0, &c);

        if (!err) {
            handle = c.handle;
            state = c.state;
            ra.via = std::string(c.name, strnlen(c.name, sizeof(c.name)));
            NIXL_INFO << "KXFER: agent " << ra.name << " over session '" << ra.via
                      << "', made on demand or found for " << addr;
            return 0;
        }
        /* EACCES: the policy does not allow that address; try the next */
        if (err != -EACCES) {
            NIXL_WARN << "KXFER: a session on demand to " << addr << " for agent " << ra.name
                      << ": " << errStr(err);
            if (ret == -ENOENT) {
                ret = err;
            }
        }
    }
#endif
    return ret;
}

/*
 * A NIXL agent is reached over a kxfer session: the administrator's
 * (kxferctl peer add on one side; the other finds the accepting session
 * by the same node name), else one the kernel makes on demand under the
 * administrator's policy (kxferctl connect allow).
 */
nixl_status_t
nixlKxferEngine::connectLocked(RemoteAgent &ra, bool quiet) const {
    uint32_t handle, state;
    int ret;

    if (ra.peer) {
        return NIXL_SUCCESS;
    }
    if (ra.gone) {
        NIXL_ERROR << "KXFER: agent " << ra.name << " was disconnected";
        return NIXL_ERR_NOT_FOUND;
    }
    ret = peerHandleLocked(ra, handle, state);
    if (ret == -ENOENT && quiet) {
        NIXL_INFO << "KXFER: no kxfer session '" << ra.session << "' to agent " << ra.name
                  << " yet (`" << peerAddCommand(ra) << "` makes it, or `kxferctl connect allow "
                  << (ra.addrs.empty() ? "ADDR" : ra.addrs[0])
                  << "` lets this node's users make it on demand)";
        return NIXL_ERR_NOT_FOUND;
    }
    if (ret == -ENOENT) {
        NIXL_ERROR << "KXFER: no kxfer session '" << ra.session << "' to reach agent " << ra.name
                   << " on node " << ra.node << "; an administrator makes it with `"
                   << peerAddCommand(ra) << "` on this node (and `kxferctl listen "
                   << (ra.addrs.empty() ? "ADDR" : ra.addrs[0]) << "` on node " << ra.node
                   << "), or lets this node's users make it on demand with `kxferctl connect "
                   << "allow " << (ra.addrs.empty() ? "ADDR" : ra.addrs[0])
                   << "`; or the backend parameter 'session' names another";
        return NIXL_ERR_NOT_FOUND;
    }
    if (ret) {
        NIXL_ERROR << "KXFER: a session to agent " << ra.name << " ('" << ra.session
                   << "', or on demand): " << errStr(ret);
        return NIXL_ERR_BACKEND;
    }
    if (state != KXFER_PEER_UP && ra.via != ra.session) {
        /* just made on demand: lookups wait up to lookup_timeout_ms */
        NIXL_INFO << "KXFER: session '" << ra.via << "' to agent " << ra.name << " is "
                  << peerStateStr(state) << " (made on demand)";
    } else if (state != KXFER_PEER_UP) {
        NIXL_WARN << "KXFER: session '" << ra.via << "' to agent " << ra.name << " is "
                  << peerStateStr(state) << "; transfers fail until it is up";
    }
    ra.peer = handle;
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::connect(const std::string &remote_agent) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = agents_.find(remote_agent);

    if (it == agents_.end()) {
        NIXL_ERROR << "KXFER: no connection info of agent " << remote_agent;
        return NIXL_ERR_NOT_FOUND;
    }
    return connectLocked(*it->second, false);
}

/* The session stays; the agent is forgotten, its handles given back. */
nixl_status_t
nixlKxferEngine::disconnect(const std::string &remote_agent) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = agents_.find(remote_agent);

    if (it != agents_.end()) {
        forgetAgentLocked(*it->second);
        agents_.erase(it);
    }
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::loadRemoteMD(const nixlBlobDesc &input,
                              const nixl_mem_t &nixl_mem,
                              const std::string &remote_agent,
                              nixlBackendMD *&output) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto kv = parseKv(input.metaInfo);
    const auto it = agents_.find(remote_agent);
    unsigned long long len;

    if (nixl_mem != DRAM_SEG && nixl_mem != VRAM_SEG) {
        return NIXL_ERR_NOT_SUPPORTED;
    }
    if (it == agents_.end()) {
        NIXL_ERROR << "KXFER: metadata of agent " << remote_agent << " before its conn info";
        return NIXL_ERR_NOT_FOUND;
    }
    try {
        len = std::stoull(kv["len"]);
    }
    catch (const std::exception &) {
        len = 0;
    }
    if (kv["export"].empty() || kv["export"].size() >= KXFER_NAME_MAX || len != input.len) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " sent malformed buffer metadata";
        return NIXL_ERR_MISMATCH;
    }

    auto rmd = std::make_unique<RemoteMD>();
    rmd->agent = it->second;
    rmd->exportName = kv["export"];
    if (!tokenParse(kv["token"], rmd->token)) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " sent a malformed export token";
        return NIXL_ERR_MISMATCH;
    }
    if (rmd->token.set && !tokens_) {
        NIXL_ERROR << "KXFER: agent " << remote_agent << " exports only to holders of its "
                   << "tokens, which this node's kxfer module cannot present (no "
                   << "KXFER_FEAT_TOKENS): update the module";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    rmd->addr = input.addr;
    rmd->len = input.len;
    /* the remote's export may not be advertised here yet: no waiting */
    if (rmd->agent->peer) {
        (void)resolveLocked(*rmd, false);
    }
    output = rmd.release();
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::unloadMD(nixlBackendMD *input) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto *rmd = static_cast<RemoteMD *>(input);

    if (rmd) {
        dropRemoteLocked(rmd->handle);
    }
    delete rmd;
    return NIXL_SUCCESS;
}

/*
 * Look export @name of agent @ra up on its session; @len, if not 0, is
 * the length the agent's metadata gave.  Exports are advertised to
 * sessions asynchronously: with @wait, one that is not there yet is
 * waited for up to lookup_timeout_ms.
 */
nixl_status_t
nixlKxferEngine::lookupExportLocked(RemoteAgent &ra,
                                    const std::string &name,
                                    const Token &token,
                                    size_t len,
                                    bool wait,
                                    uint32_t &handle) const {
    const auto deadline = std::chrono::steady_clock::now() + lookupTimeout_;
    struct kxfer_remote_lookup rl;
    nixl_status_t status;
    int ret;

    status = connectLocked(ra, false);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    while ((ret = remoteLookup(ra.peer, name, token, rl)) == -ENOENT && wait &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (ret == -ENOENT) {
        if (wait) {
            NIXL_ERROR << "KXFER: session '" << ra.via << "' has no export " << name
                       << " of agent " << ra.name << " after " << lookupTimeout_.count()
                       << " ms (deregistered, metadata of an older registration, whose "
                       << "token is revoked, or the session is not up: kxferctl peer show "
                       << ra.via << ")";
        }
        return NIXL_ERR_NOT_FOUND;
    }
    if (ret) {
        NIXL_ERROR << "KXFER: looking up export " << name << ": " << errStr(ret);
        return NIXL_ERR_BACKEND;
    }
    if (len && rl.len != len) {
        NIXL_ERROR << "KXFER: export " << name << " of agent " << ra.name << " has " << rl.len
                   << " bytes, its metadata says " << len;
        return NIXL_ERR_MISMATCH;
    }
    handle = rl.handle;
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::resolveLocked(RemoteMD &rmd, bool wait) const {
    RemoteAgent &ra = *rmd.agent;
    nixl_status_t status;

    status = connectLocked(ra, false);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    if (rmd.handle && rmd.peer == ra.peer) {
        return NIXL_SUCCESS;
    }
    dropRemoteLocked(rmd.handle);
    status = lookupExportLocked(ra, rmd.exportName, rmd.token, rmd.len, wait, rmd.handle);
    rmd.peer = status == NIXL_SUCCESS ? ra.peer : 0;
    return status;
}

nixl_status_t
nixlKxferEngine::resolveMailboxLocked(RemoteAgent &ra, bool wait) const {
    nixl_status_t status;

    status = connectLocked(ra, false);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    if (ra.mailboxHandle && ra.mailboxPeer == ra.peer) {
        return NIXL_SUCCESS;
    }
    dropRemoteLocked(ra.mailboxHandle);
    status = lookupExportLocked(ra, ra.mailbox, ra.mailboxToken, 0, wait, ra.mailboxHandle);
    ra.mailboxPeer = status == NIXL_SUCCESS ? ra.peer : 0;
    return status;
}

/*
 * Whether agent @ra is still there.  Its mailbox answers on its session
 * as long as its process lives; but a session may be coming back (a
 * remote access error or a lost link takes it down and the connecting
 * side reconnects; an accepting session comes back as a new one, found
 * again by name), so this waits up to lookup_timeout_ms for it.  No
 * session of that name, or an up session without the mailbox, means the
 * agent is gone.  Leaves @ra.peer and its mailbox handle current.
 */
bool
nixlKxferEngine::agentAliveLocked(RemoteAgent &ra) const {
    const auto start = std::chrono::steady_clock::now();
    auto nextPeer = start;
    uint32_t state = KXFER_PEER_CONNECTING;
    int upWithout = 0;

    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        struct kxfer_remote_lookup rl;
        uint32_t handle;
        int ret;

        if (ra.peer && !remoteLookup(ra.peer, ra.mailbox, ra.mailboxToken, rl)) {
            dropRemoteLocked(ra.mailboxHandle);
            ra.mailboxHandle = rl.handle;
            ra.mailboxPeer = ra.peer;
            return true;
        }
        /* the session again: once, then once a second while it is not up */
        if (now >= nextPeer) {
            ret = peerHandleLocked(ra, handle, state);
            if (ret) {
                NIXL_ERROR << "KXFER: agent " << ra.name << " is unreachable: session '"
                           << ra.session << "' is gone, and none on demand (" << errStr(ret)
                           << ")";
                return false;
            }
            dropPeerLocked(ra.peer);
            ra.peer = handle;
            nextPeer = state == KXFER_PEER_UP ? start + std::chrono::hours(1) :
                                                now + std::chrono::seconds(1);
            continue; /* the mailbox on the new handle, at once */
        }
        if (state == KXFER_PEER_UP && ++upWithout > 2) {
            NIXL_ERROR << "KXFER: agent " << ra.name << " is gone: its mailbox " << ra.mailbox
                       << " is not on session '" << ra.via << "'";
            return false;
        }
        if (now - start >= lookupTimeout_) {
            NIXL_ERROR << "KXFER: agent " << ra.name << " is unreachable: session '"
                       << ra.via << "' is " << peerStateStr(state) << " after "
                       << lookupTimeout_.count() << " ms";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

/*
 * What a failed job means to NIXL: REMOTE_DISCONNECT if the agent is gone
 * or out of reach (NIXL then forgets it), NOT_FOUND if one of @rmds was
 * deregistered (its export withdrawn), else a failure of this transfer
 * only, which may be posted again.
 */
nixl_status_t
nixlKxferEngine::failureStatusLocked(RemoteAgent &ra,
                                     const std::vector<RemoteMD *> &rmds,
                                     int err) const {
    if (!agentAliveLocked(ra)) {
        return NIXL_ERR_REMOTE_DISCONNECT;
    }
    for (RemoteMD *rmd : rmds) {
        dropRemoteLocked(rmd->handle);
        if (resolveLocked(*rmd, false) == NIXL_ERR_NOT_FOUND) {
            NIXL_ERROR << "KXFER: agent " << ra.name << " deregistered the buffer of export "
                       << rmd->exportName;
            return NIXL_ERR_NOT_FOUND;
        }
    }
    switch (-err) {
    case EINVAL:
    case ERANGE:
    case E2BIG:
        return NIXL_ERR_INVALID_PARAM;
    case ECANCELED:
        return NIXL_ERR_CANCELED;
    }
    return NIXL_ERR_BACKEND;
}

/* ---------------------------------------------------------------------- */
/* Transfers                                                               */
/* ---------------------------------------------------------------------- */

/*
 * One job per (local pool, remote export) pair, in the order the pairs
 * first appear; a job is split at max_segments and at kWrBudget.
 */
nixl_status_t
nixlKxferEngine::prepXfer(const nixl_xfer_op_t &operation,
                          const nixl_meta_dlist_t &local,
                          const nixl_meta_dlist_t &remote,
                          const std::string &remote_agent,
                          nixlBackendReqH *&handle,
                          const nixl_opt_b_args_t *opt_args) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto st = std::make_shared<XferState>();
    std::unordered_map<const void *, std::unordered_map<const void *, size_t>> open;
    std::vector<uint64_t> wrs;
    const auto it = agents_.find(remote_agent);
    nixl_status_t status;

    if (operation != NIXL_READ && operation != NIXL_WRITE) {
        return NIXL_ERR_INVALID_PARAM;
    }
    /* host or GPU memory on either side: both are kxfer pools */
    for (const nixl_mem_t t : {local.getType(), remote.getType()}) {
        if (t != DRAM_SEG && t != VRAM_SEG) {
            NIXL_ERROR << "KXFER: only transfers between DRAM_SEG and VRAM_SEG";
            return NIXL_ERR_NOT_SUPPORTED;
        }
    }
    if (local.descCount() != remote.descCount()) {
        NIXL_ERROR << "KXFER: " << local.descCount() << " local descriptors, "
                   << remote.descCount() << " remote";
        return NIXL_ERR_INVALID_PARAM;
    }
    if (it == agents_.end()) {
        NIXL_ERROR << "KXFER: no connection info of agent " << remote_agent;
        return NIXL_ERR_NOT_FOUND;
    }
    if (opt_args && opt_args->hasNotif && !notifyMsg_) {
        NIXL_ERROR << "KXFER: notifications need a kxfer module with KXFER_FEAT_NOTIFY_MSG";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    const size_t maxSegs = limits_->max_segments ? limits_->max_segments : 1;
    st->op = operation;
    st->agent = it->second;

    for (int i = 0; i < local.descCount(); i++) {
        auto *lmd = static_cast<LocalMD *>(local[i].metadataP);
        auto *rmd = static_cast<RemoteMD *>(remote[i].metadataP);
        const size_t len = local[i].len;

        if (!lmd || !rmd || rmd->agent != st->agent) {
            NIXL_ERROR << "KXFER: descriptor " << i << " is not of registered memory of "
                       << "this agent and agent " << remote_agent;
            return NIXL_ERR_INVALID_PARAM;
        }
        if (len != remote[i].len || local[i].addr < lmd->addr ||
            local[i].addr + len > lmd->addr + lmd->len || remote[i].addr < rmd->addr ||
            remote[i].addr + len > rmd->addr + rmd->len) {
            NIXL_ERROR << "KXFER: descriptor " << i << " is outside its registration";
            return NIXL_ERR_INVALID_PARAM;
        }
        if (!len) {
            continue;
        }

        const uint64_t cost = len / (128 * 1024) + 2;
        auto &byRemote = open[lmd];
        auto pit = byRemote.find(rmd);
        if (pit == byRemote.end() ||
            st->plans[pit->second].segs.size() >= maxSegs ||
            wrs[pit->second] + cost > kWrBudget) {
            st->plans.push_back({lmd, rmd, {}});
            wrs.push_back(0);
            pit = byRemote.insert_or_assign(rmd, st->plans.size() - 1).first;
        }
        st->plans[pit->second].segs.push_back(
            {local[i].addr - lmd->span, remote[i].addr - rmd->addr, len});
        wrs[pit->second] += cost;
    }

    /* connect and look the exports up now, so that errors show here */
    for (auto &p : st->plans) {
        status = resolveLocked(*p.rmd, true);
        if (status != NIXL_SUCCESS) {
            return status;
        }
    }
    auto *h = new ReqH();
    h->state = std::move(st);
    handle = h;
    return NIXL_SUCCESS;
}

/*
 * Build the post's jobs with the current handles; with a notification,
 * a notify-only job to the agent's mailbox, fenced behind every earlier
 * job of this file to that peer, so that it goes once all of the
 * transfer's data is visible there.
 */
nixl_status_t
nixlKxferEngine::postXfer(const nixl_xfer_op_t &,
                          const nixl_meta_dlist_t &,
                          const nixl_meta_dlist_t &,
                          const std::string &,
                          nixlBackendReqH *&handle,
                          const nixl_opt_b_args_t *opt_args) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto *h = static_cast<ReqH *>(handle);
    XferState *st = h ? h->state.get() : nullptr;
    nixl_status_t status;

    if (!st) {
        return NIXL_ERR_INVALID_PARAM;
    }
    RemoteAgent &ra = *st->agent;
    const uint32_t op = st->op == NIXL_READ ? KXFER_OP_READ : KXFER_OP_WRITE;

    progressLocked();
    if (st->outstanding || (st->submitted < st->jobs.size() && !st->err)) {
        return NIXL_ERR_REPOST_ACTIVE;
    }
    if (opt_args && opt_args->hasNotif && !notifyMsg_) {
        return NIXL_ERR_NOT_SUPPORTED;
    }
    for (auto &p : st->plans) {
        status = resolveLocked(*p.rmd, true);
        if (status != NIXL_SUCCESS) {
            return status;
        }
    }

    st->token = nextToken_++;
    st->submitted = 0;
    st->err = 0;
    st->status = NIXL_SUCCESS;
    st->retried = false;
    st->jobs.resize(st->plans.size());
    for (size_t i = 0; i < st->plans.size(); i++) {
        const Plan &p = st->plans[i];
        kxfer_job_init(&st->jobs[i], op, p.lmd->pool, ra.peer, p.rmd->handle, p.segs.data(),
                       p.segs.size(), st->token);
    }
    if (opt_args && opt_args->hasNotif) {
        status = notifyJobLocked(ra, opt_args->notifMsg, st->token, *st);
        if (status != NIXL_SUCCESS) {
            return status;
        }
    }
    if (st->jobs.empty()) {
        return NIXL_SUCCESS; /* only empty descriptors */
    }
    inflight_[st->token] = h->state;
    status = submitLocked(*st);
    if (status < 0 && !st->outstanding) {
        inflight_.erase(st->token);
    }
    return status;
}

/*
 * Submit the post's jobs not yet accepted.  -EAGAIN (the file's in-flight
 * bound) leaves the rest for checkXfer(); a session or export that
 * changed is looked up again once; anything else ends the post with the
 * jobs already accepted still to be reaped.
 */
nixl_status_t
nixlKxferEngine::submitLocked(XferState &st) const {
    RemoteAgent &ra = *st.agent;

    while (st.submitted < st.jobs.size()) {
        unsigned int accepted = 0;
        int ret;

        /* the handles of now: one given back meanwhile may name another */
        for (size_t i = st.submitted; i < st.jobs.size(); i++) {
            st.jobs[i].peer = ra.peer;
            st.jobs[i].remote =
                i < st.plans.size() ? st.plans[i].rmd->handle : ra.mailboxHandle;
        }
        ret = kxfer_submit(kx_, &st.jobs[st.submitted], st.jobs.size() - st.submitted,
                               &accepted);

        st.submitted += accepted;
        st.outstanding += accepted;
        if (!ret) {
            break;
        }
        if (ret == -EAGAIN) {
            return NIXL_IN_PROG;
        }
        std::vector<RemoteMD *> rest;
        for (size_t i = st.submitted; i < st.plans.size(); i++) {
            rest.push_back(st.plans[i].rmd);
        }
        /* the session or an export changed: look them up again, once */
        if ((ret == -ENOTCONN || ret == -ESTALE || ret == -ENOENT) && !st.retried) {
            bool ok = agentAliveLocked(ra);

            st.retried = true;
            /* ESTALE: withdrawn, or the session reconnected, which makes
             * every remote handle of it stale: look them all up again (the
             * mailbox's was, by agentAliveLocked()) */
            for (size_t i = st.submitted; ok && ret != -ENOTCONN && i < st.plans.size(); i++) {
                dropRemoteLocked(st.plans[i].rmd->handle);
            }
            for (size_t i = st.submitted; ok && i < st.jobs.size(); i++) {
                if (i < st.plans.size()) {
                    ok = resolveLocked(*st.plans[i].rmd, false) == NIXL_SUCCESS;
                    st.jobs[i].remote = st.plans[i].rmd->handle;
                } else {
                    ok = resolveMailboxLocked(ra, false) == NIXL_SUCCESS;
                    st.jobs[i].remote = ra.mailboxHandle;
                }
                st.jobs[i].peer = ra.peer;
            }
            if (ok) {
                continue;
            }
        }
        st.status = requestStatus(ret);
        if (st.status == NIXL_SUCCESS) {
            st.status = failureStatusLocked(ra, rest, ret);
        }
        const LocalMD *lmd =
            st.submitted < st.plans.size() ? st.plans[st.submitted].lmd : nullptr;
        NIXL_ERROR << "KXFER: job " << st.submitted << " of " << st.jobs.size()
                   << " to agent " << ra.name << " refused: " << errStr(ret)
                   << (ret == -ENOMEM && lmd && !lmd->dev.empty() ?
                           " (its VRAM was imported for RDMA device " + lmd->dev +
                               ": is session '" + ra.via + "' on another device?)" :
                           "");
        st.err = ret;
        st.jobs.resize(st.submitted); /* the rest is never sent */
        return st.status;
    }
    return NIXL_IN_PROG;
}

/*
 * Take up to @max events, waiting up to @timeout_ns for @min, and hand
 * each to the table of requests or the notification list (messages are
 * copied out of msgs_ before the next reap reuses it).
 *
 * Return: the number of events, or a negative errno.
 */
int
nixlKxferEngine::reapLocked(unsigned int max, unsigned int min, int64_t timeout_ns) const {
    int n;

    max = std::min<unsigned int>(max, events_.size());
#ifdef KXFER_FEAT_NOTIFY_MSG
    if (notifyMsg_) {
        n = kxfer_reap_msgs(
            kx_, events_.data(), max, min, timeout_ns, 0, msgs_.data(), msgs_.size());
    } else
#endif
        n = kxfer_reap(kx_, events_.data(), max, min, timeout_ns, 0);
    for (int i = 0; i < n; i++) {
        if (events_[i].type == KXFER_EV_COMPLETION) {
            completeLocked(events_[i]);
        } else if (events_[i].type == KXFER_EV_NOTIFY) {
            notifyLocked(events_[i]);
        }
    }
    return n;
}

/* Take every event there is.  Requests whose last job ended leave the
 * table. */
void
nixlKxferEngine::progressLocked() const {
    for (;;) {
        int n = reapLocked(events_.size(), 0, 0);

        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            NIXL_ERROR << "KXFER: reap: " << errStr(n);
            return;
        }
        if (n < static_cast<int>(events_.size())) {
            return;
        }
    }
}

void
nixlKxferEngine::completeLocked(const struct kxfer_event &ev) const {
    if (ev.user_data & kGenNotifToken) {
        notifsInFlight_--;
        if (ev.status) {
            NIXL_ERROR << "KXFER: a notification was not delivered: " << errStr(ev.status);
        }
        return;
    }

    const auto it = inflight_.find(ev.user_data);
    if (it == inflight_.end()) {
        NIXL_ERROR << "KXFER: completion of unknown request " << ev.user_data;
        return;
    }
    XferState &st = *it->second;
    st.outstanding--;
    if (ev.status && !st.err) {
        NIXL_ERROR << "KXFER: a job to agent " << st.agent->name
                   << " failed: " << errStr(ev.status);
        st.err = ev.status;
        /* nobody asks a released request: its buffers may be gone too */
        if (!st.released) {
            std::vector<RemoteMD *> rmds;
            for (const auto &p : st.plans) {
                rmds.push_back(p.rmd);
            }
            st.status = failureStatusLocked(*st.agent, rmds, ev.status);
        }
        st.jobs.resize(st.submitted); /* nothing more of this post */
        if (st.outstanding) {
            cancelLocked(st.token); /* a notification held behind it, too */
        }
    }
    if (!st.outstanding && (st.submitted == st.jobs.size() || st.released)) {
        inflight_.erase(it);
    }
}

/*
 * Whether a notification that names agent @agent and came over session
 * @session (struct kxfer_event.peer) is that agent's: it came from the
 * node the agent's metadata names, as the session's other end says
 * (proven when the nodes share a key, claimed otherwise).  An agent
 * whose metadata is not loaded cannot be checked: believed, unless
 * notif_unknown is drop (vLLM's prefill never loads its decoders'
 * metadata and frees blocks on their notifications).  Else @why says why
 * not.
 */
bool
nixlKxferEngine::notifFromLocked(const std::string &agent,
                                 uint32_t session,
                                 std::string &why) const {
    const auto it = agents_.find(agent);
    std::string err;

    if (it == agents_.end()) {
        why = "no metadata of agent " + agent + " is loaded here (notif_unknown=drop)";
        return !notifUnknownDrop_;
    }
    const RemoteAgent &ra = *it->second;
    const SessionInfo *si = sessions_.find(session, false, err);
    if (si && si->remoteNode != ra.node) {
        si = sessions_.find(session, true, err); /* reconnected elsewhere? */
    }
    if (!si) {
        why = "the session it came over is unknown: " + err;
        return false;
    }
    if (si->remoteNode == ra.node) {
        return true;
    }
    why = "it came over session '" + si->name + "' (id " + std::to_string(session) +
        ") from node '" + si->remoteNode + "', and the agent's metadata names node '" +
        ra.node + "'";
    return false;
}

/* A notification to the mailbox or to one of this agent's exports: the
 * sender's agent name, then NIXL's message; kept if it is that agent's
 * (notifFromLocked()), else dropped and counted. */
void
nixlKxferEngine::notifyLocked(const struct kxfer_event &ev) const {
#ifdef KXFER_FEAT_NOTIFY_MSG
    if (!ev.msg_len) {
        /* a plain kxfer notification, not of this plugin */
        NIXL_WARN << "KXFER: a notification without a message from peer " << ev.peer
                  << " (value " << ev.user_data << ", " << ev.bytes << " bytes)";
        return;
    }
    if (ev.msg_off == KXFER_MSG_NONE || uint64_t(ev.msg_off) + ev.msg_len > msgs_.size()) {
        NIXL_ERROR << "KXFER: a notification's message did not fit the reap buffer";
        return;
    }
    const auto *p = reinterpret_cast<const unsigned char *>(msgs_.data() + ev.msg_off);
    const size_t len = ev.msg_len;
    if (len < kNameLenBytes || len < kNameLenBytes + (p[0] | p[1] << 8)) {
        NIXL_ERROR << "KXFER: a malformed notification (" << len << " bytes) from peer "
                   << ev.peer;
        return;
    }
    const size_t nlen = p[0] | p[1] << 8;
    std::string agent(reinterpret_cast<const char *>(p) + kNameLenBytes, nlen), why;
    if (!notifFromLocked(agent, ev.peer, why)) {
        notifsDropped_++;
        if (notifsDropped_ <= 100 || notifsDropped_ % 1000 == 0) {
            NIXL_WARN << "KXFER: agent " << localAgent << " dropped a notification claiming "
                      << "to be from agent " << agent << ": " << why << " ("
                      << notifsDropped_ << " dropped so far)";
        }
        return;
    }
    notifs_.emplace_back(std::move(agent),
                         std::string(reinterpret_cast<const char *>(p) + kNameLenBytes + nlen,
                                     len - kNameLenBytes - nlen));
#else
    (void)ev;
#endif
}

nixl_status_t
nixlKxferEngine::statusLocked(const XferState &st) const {
    if (st.outstanding || st.submitted < st.jobs.size()) {
        return NIXL_IN_PROG;
    }
    return st.err ? st.status : NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::checkXfer(nixlBackendReqH *handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto *h = static_cast<ReqH *>(handle);

    if (!h || !h->state) {
        return NIXL_ERR_INVALID_PARAM;
    }
    XferState &st = *h->state;
    progressLocked();
    if (!st.err && st.submitted < st.jobs.size()) {
        inflight_[st.token] = h->state;
        nixl_status_t status = submitLocked(st);
        if (status < 0 && !st.outstanding) {
            inflight_.erase(st.token);
        }
    }
    return statusLocked(st);
}

/*
 * A request released with jobs in flight is cancelled: what has not
 * reached the NIC is taken back (jobs held behind a FENCE, such as its
 * notification, and parts waiting in a send queue), the rest runs to its
 * end (the kernel keeps the pages pinned until then).  Every job still
 * ends exactly once, so the request's state stays in the table until its
 * completions are reaped; jobs not yet submitted are never sent.
 */
/* Take back what has not reached the NIC of a post's jobs (@token), or
 * of all jobs (0). */
void
nixlKxferEngine::cancelLocked(uint64_t token) const {
#ifdef KXFER_FEAT_CANCEL
    int ret;

    if (!cancel_) {
        return;
    }
    ret = kxfer_cancel(kx_, token, token ? ~0ULL : 0, nullptr);
    if (ret) {
        NIXL_ERROR << "KXFER: cancel: " << errStr(ret);
    }
#else
    (void)token;
#endif
}

nixl_status_t
nixlKxferEngine::releaseReqH(nixlBackendReqH *handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto *h = static_cast<ReqH *>(handle);

    if (!h) {
        return NIXL_SUCCESS;
    }
    if (h->state) {
        XferState &st = *h->state;
        st.released = true;
        st.jobs.resize(st.submitted);
        if (st.outstanding) {
            cancelLocked(st.token);
        } else {
            const auto it = inflight_.find(st.token);
            if (it != inflight_.end() && it->second == h->state) {
                inflight_.erase(it);
            }
        }
    }
    delete h;
    return NIXL_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Notifications                                                           */
/* ---------------------------------------------------------------------- */

/*
 * A notification's bytes: this agent's name (u16 length, little-endian,
 * then the name) and NIXL's message, within the module's max_notify_len.
 */
nixl_status_t
nixlKxferEngine::notifPayloadLocked(const std::string &msg, std::string &payload) const {
    const size_t nlen = localAgent.size();

    if (nlen > 0xffff || kNameLenBytes + nlen + msg.size() > maxNotifyLen_) {
        NIXL_ERROR << "KXFER: a notification of " << msg.size() << " bytes from agent "
                   << localAgent << " exceeds the module's max_notify_len (" << maxNotifyLen_
                   << " bytes with the agent's name and 2)";
        return NIXL_ERR_INVALID_PARAM;
    }
    payload.clear();
    payload.push_back(static_cast<char>(nlen & 0xff));
    payload.push_back(static_cast<char>(nlen >> 8));
    payload += localAgent;
    payload += msg;
    return NIXL_SUCCESS;
}

/*
 * A notification-only job (no segments, no pool) to @ra's mailbox; @job
 * points at @payload, which must live until the job is submitted (the
 * kernel copies the bytes at SUBMIT).
 */
nixl_status_t
nixlKxferEngine::mailboxJobLocked(RemoteAgent &ra,
                                  uint64_t token,
                                  const std::string &payload,
                                  struct kxfer_job &job) const {
    nixl_status_t status = resolveMailboxLocked(ra, true);

    if (status != NIXL_SUCCESS) {
        return status == NIXL_ERR_NOT_FOUND ? failureStatusLocked(ra, {}, -ENOENT) : status;
    }
    kxfer_job_init(&job, KXFER_OP_WRITE, 0, ra.peer, ra.mailboxHandle, nullptr, 0, token);
    if (kxfer_job_notify_msg(&job, payload.data(), payload.size())) {
        return NIXL_ERR_INVALID_PARAM;
    }
    return NIXL_SUCCESS;
}

/*
 * A transfer's notification, to go once all of its data is visible at
 * the target.  With one job, the job carries it (the target subscribes
 * to each of its exports): nothing waits for anything else.  With more,
 * a notification-only job to the mailbox follows them with
 * KXFER_JOB_FENCE, which holds it until every earlier job of this file
 * to that peer completed (and holds the file's later jobs to the peer
 * behind it).
 */
nixl_status_t
nixlKxferEngine::notifyJobLocked(RemoteAgent &ra,
                                 const std::string &msg,
                                 uint64_t token,
                                 XferState &st) const {
    struct kxfer_job job;
    nixl_status_t status = notifPayloadLocked(msg, st.payload);

    if (status != NIXL_SUCCESS) {
        return status;
    }
    if (st.jobs.size() == 1) {
        return kxfer_job_notify_msg(&st.jobs[0], st.payload.data(), st.payload.size()) ?
            NIXL_ERR_INVALID_PARAM :
            NIXL_SUCCESS;
    }
    status = mailboxJobLocked(ra, token, st.payload, job);
    if (status != NIXL_SUCCESS) {
        return status;
    }
    job.flags |= KXFER_JOB_FENCE;
    st.jobs.push_back(job);
    return NIXL_SUCCESS;
}

nixl_status_t
nixlKxferEngine::genNotif(const std::string &remote_agent, const std::string &msg) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = agents_.find(remote_agent);
    struct kxfer_job job;
    std::string payload;
    nixl_status_t status;
    int ret;

    if (!notifyMsg_) {
        NIXL_ERROR << "KXFER: notifications need a kxfer module with KXFER_FEAT_NOTIFY_MSG";
        return NIXL_ERR_NOT_SUPPORTED;
    }
    if (it == agents_.end()) {
        NIXL_ERROR << "KXFER: no connection info of agent " << remote_agent;
        return NIXL_ERR_NOT_FOUND;
    }
    RemoteAgent &ra = *it->second;
    progressLocked();
    status = notifPayloadLocked(msg, payload);
    if (status == NIXL_SUCCESS) {
        status = mailboxJobLocked(ra, kGenNotifToken, payload, job);
    }
    if (status != NIXL_SUCCESS) {
        return status;
    }
    for (int attempt = 0;; attempt++) {
        ret = kxfer_submit(kx_, &job, 1, nullptr);
        if (!ret) {
            notifsInFlight_++;
            return NIXL_SUCCESS;
        }
        if (ret == -EAGAIN && attempt < 1000) {
            /* the file's in-flight bound: wait for a completion */
            reapLocked(events_.size(), 1, 10 * 1000 * 1000);
            continue;
        }
        if ((ret == -ENOTCONN || ret == -ESTALE || ret == -ENOENT) && attempt == 0 &&
            agentAliveLocked(ra)) {
            job.peer = ra.peer;
            job.remote = ra.mailboxHandle;
            continue;
        }
        break;
    }
    NIXL_ERROR << "KXFER: notification to agent " << remote_agent
               << " refused: " << errStr(ret);
    status = requestStatus(ret);
    return status != NIXL_SUCCESS ? status : failureStatusLocked(ra, {}, ret);
}

nixl_status_t
nixlKxferEngine::getNotifs(notif_list_t &notif_list) {
    std::lock_guard<std::mutex> lock(mutex_);

    if (!notif_list.empty()) {
        return NIXL_ERR_INVALID_PARAM;
    }
    progressLocked();
    while (!notifs_.empty()) {
        notif_list.push_back(std::move(notifs_.front()));
        notifs_.pop_front();
    }
    return NIXL_SUCCESS;
}

} // namespace kxfer_nixl
