/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KXFER: a NIXL backend over kxfer, the kernel RDMA transfer engine.
 *
 * A thin adapter: every NIXL call becomes libkxfer calls on one open
 * /dev/kxfer.  Registered memory is a kxfer pool of the caller's pages
 * with one export of exactly the registered bytes; a remote agent is a
 * kxfer session the administrator made (kxferctl peer add); a transfer
 * request is one kxfer job per (local pool, remote export) pair it
 * touches, all submitted at once; a notification rides on a
 * transfer's only job, or is a job of its own to the remote agent's
 * mailbox export (genNotif, and transfers of several jobs, fenced behind
 * them).  See tools/nixl/README.md.
 */
#ifndef KXFER_NIXL_BACKEND_H
#define KXFER_NIXL_BACKEND_H

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend_engine.h"
#include "kxfer_gpu.h"
#include "kxfer_sessions.h"

/*
 * struct kxfer_notify_sub has a member named "export", a C++ keyword;
 * the plugin does not use that struct, so the name is changed while the
 * header is read.  (Issue for uapi/linux/kxfer.h: C++ cannot include it.)
 */
#define export export_name
#include "kxfer.h"
#undef export

namespace kxfer_nixl {

struct RemoteAgent;
struct XferState;

/*
 * The token of a capability-scoped export (KXFER_EXPORT_TOKEN), which a
 * peer's process must present to look it up; or none (@set false: the
 * module has no KXFER_FEAT_TOKENS, or the remote agent's has not).
 */
struct Token {
    bool set = false;
    uint8_t b[KXFER_TOKEN_LEN] = {};
};

/*
 * Memory this agent registered: a pool of its pages (DRAM) or of a
 * dma-buf the GPU driver made of them (VRAM), and its export.
 */
class LocalMD : public nixlBackendMD {
public:
    LocalMD() : nixlBackendMD(true) {}

    uint32_t pool = 0; /* kxfer pool handle */
    uintptr_t span = 0; /* the address of the pool's first byte */
    size_t spanLen = 0;
    bool vram = false;
    std::string dev; /* VRAM: the RDMA device it was imported for, or "" */
    uintptr_t addr = 0; /* the registered buffer, at span + offset */
    size_t len = 0;
    std::string exportName;
    Token token; /* given out in the metadata (getPublicData) */
    uint32_t sub = 0; /* its notifications' subscription */
};

/* A buffer a remote agent registered, named by its export. */
class RemoteMD : public nixlBackendMD {
public:
    RemoteMD() : nixlBackendMD(false) {}

    std::shared_ptr<RemoteAgent> agent;
    std::string exportName;
    Token token; /* from the agent's metadata */
    uintptr_t addr = 0; /* the buffer's address on the remote agent */
    size_t len = 0;
    /* kxfer_remote_lookup() result, valid for peer handle @peer */
    uint32_t peer = 0;
    uint32_t handle = 0;
};

/* Another agent: where it is, and the session that reaches it. */
struct RemoteAgent {
    std::string name;
    std::string node; /* its kxfer node_name */
    std::vector<std::string> addrs; /* its node's addresses */
    std::string mailbox; /* its notification export */
    Token mailboxToken;
    std::string session; /* the kxfer session's name here */
    std::string via; /* the session found: @session, or one made on demand */
    uint32_t peer = 0; /* kxfer_peer_lookup() handle, 0: not connected */
    uint32_t mailboxHandle = 0; /* remote handle of @mailbox on @peer */
    uint32_t mailboxPeer = 0;
    bool gone = false; /* disconnected: its handles are given back */
};

/*
 * A transfer request.  Its state is shared with the table of requests in
 * flight, so that a request released in flight lives until its last job's
 * completion is reaped: kxfer gives every accepted job exactly one.
 */
class ReqH : public nixlBackendReqH {
public:
    std::shared_ptr<XferState> state;
};

class nixlKxferEngine : public nixlBackendEngine {
public:
    explicit nixlKxferEngine(const nixlBackendInitParams *init_params);
    ~nixlKxferEngine() override;

    bool
    supportsRemote() const override {
        return true;
    }

    bool
    supportsLocal() const override {
        return false;
    }

    bool
    supportsNotif() const override {
        return true;
    }

    nixl_mem_list_t
    getSupportedMems() const override {
        return {DRAM_SEG, VRAM_SEG};
    }

    nixl_status_t
    registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out) override;
    nixl_status_t
    deregisterMem(nixlBackendMD *meta) override;

    nixl_status_t
    getPublicData(const nixlBackendMD *meta, std::string &str) const override;
    nixl_status_t
    getConnInfo(std::string &str) const override;
    nixl_status_t
    loadRemoteConnInfo(const std::string &remote_agent,
                       const std::string &remote_conn_info) override;
    nixl_status_t
    loadRemoteMD(const nixlBlobDesc &input,
                 const nixl_mem_t &nixl_mem,
                 const std::string &remote_agent,
                 nixlBackendMD *&output) override;
    nixl_status_t
    unloadMD(nixlBackendMD *input) override;

    nixl_status_t
    connect(const std::string &remote_agent) override;
    nixl_status_t
    disconnect(const std::string &remote_agent) override;

    nixl_status_t
    prepXfer(const nixl_xfer_op_t &operation,
             const nixl_meta_dlist_t &local,
             const nixl_meta_dlist_t &remote,
             const std::string &remote_agent,
             nixlBackendReqH *&handle,
             const nixl_opt_b_args_t *opt_args = nullptr) const override;
    nixl_status_t
    postXfer(const nixl_xfer_op_t &operation,
             const nixl_meta_dlist_t &local,
             const nixl_meta_dlist_t &remote,
             const std::string &remote_agent,
             nixlBackendReqH *&handle,
             const nixl_opt_b_args_t *opt_args = nullptr) const override;
    nixl_status_t
    checkXfer(nixlBackendReqH *handle) const override;
    nixl_status_t
    releaseReqH(nixlBackendReqH *handle) const override;

    nixl_status_t
    getNotifs(notif_list_t &notif_list) override;
    nixl_status_t
    genNotif(const std::string &remote_agent, const std::string &msg) const override;

private:
    /* Everything below is guarded by mutex_: NIXL calls const methods
     * from several threads, and kxfer's reap serves all requests. */
    mutable std::mutex mutex_;
    struct kxfer *kx_ = nullptr;
    const struct kxfer_query *limits_ = nullptr;
    bool notifyMsg_ = false; /* the module has KXFER_FEAT_NOTIFY_MSG */
    bool cancel_ = false; /* the module has KXFER_FEAT_CANCEL */
    bool subscribe_ = false; /* KXFER_FEAT_EXPORT_SUBSCRIBE */
    bool release_ = false; /* KXFER_FEAT_RELEASE: handles are given back */
    bool connect_ = false; /* KXFER_FEAT_CONNECT: sessions on demand */
    bool tokens_ = false; /* KXFER_FEAT_TOKENS: every export is scoped */
    uint32_t maxNotifyLen_ = 0;
    std::string prefix_; /* of the pool and export names this agent makes */
    mutable uint64_t nextName_ = 0;
    std::string node_;
    std::vector<std::string> addrs_;
    std::string sessionTemplate_;
    std::chrono::milliseconds lookupTimeout_;

    /* VRAM: the GPU runtimes, loaded on first use, and the RDMA device a
     * GPU's memory is imported for (rdma_dev, else the nearest) */
    std::unique_ptr<GpuDrivers> gpu_;
    std::string rdmaDev_;
    std::unordered_map<std::string, std::string> nearDev_;

    /* notifications: the sessions they come over, by id; those dropped
     * as not from the agent they name; whether an agent whose metadata
     * is not loaded is believed (notif_unknown) */
    mutable SessionTable sessions_;
    mutable uint64_t notifsDropped_ = 0;
    bool notifUnknownDrop_ = false;

    /* the mailbox: one page, exported, subscribed to */
    void *mailboxMem_ = nullptr;
    size_t mailboxLen_ = 0;
    uint32_t mailboxPool_ = 0;
    uint32_t mailboxSub_ = 0;
    std::string mailboxName_;
    Token mailboxToken_;

    mutable std::unordered_map<std::string, std::shared_ptr<RemoteAgent>> agents_;
    mutable std::unordered_map<uint64_t, std::shared_ptr<XferState>> inflight_;
    mutable uint64_t nextToken_ = 1;
    mutable uint64_t notifsInFlight_ = 0;
    mutable std::deque<std::pair<std::string, std::string>> notifs_;
    mutable std::vector<struct kxfer_event> events_;
    mutable std::vector<char> msgs_;

    bool
    setup();
    bool
    setupMailbox();
    std::string
    newName() const;
    int
    exportAdd(const struct kxfer_export_add &e, uint32_t *sub, Token &token) const;
    int
    remoteLookup(uint32_t peer,
                 const std::string &name,
                 const Token &token,
                 struct kxfer_remote_lookup &rl) const;
    nixl_status_t
    poolOfDramLocked(LocalMD &md);
    nixl_status_t
    poolOfVramLocked(LocalMD &md);
    std::string
    rdmaDeviceLocked(const GpuDmabuf &buf);
    std::string
    sessionName(const RemoteAgent &ra) const;
    std::string
    peerAddCommand(const RemoteAgent &ra) const;

    void
    dropPeerLocked(uint32_t &handle) const;
    void
    dropRemoteLocked(uint32_t &handle) const;
    void
    forgetAgentLocked(RemoteAgent &ra) const;
    nixl_status_t
    connectLocked(RemoteAgent &ra, bool quiet) const;
    int
    peerHandleLocked(RemoteAgent &ra, uint32_t &handle, uint32_t &state) const;
    nixl_status_t
    lookupExportLocked(RemoteAgent &ra,
                       const std::string &name,
                       const Token &token,
                       size_t len,
                       bool wait,
                       uint32_t &handle) const;
    nixl_status_t
    resolveLocked(RemoteMD &rmd, bool wait) const;
    nixl_status_t
    resolveMailboxLocked(RemoteAgent &ra, bool wait) const;
    bool
    agentAliveLocked(RemoteAgent &ra) const;
    nixl_status_t
    failureStatusLocked(RemoteAgent &ra, const std::vector<RemoteMD *> &rmds, int err) const;

    nixl_status_t
    submitLocked(XferState &st) const;
    nixl_status_t
    notifPayloadLocked(const std::string &msg, std::string &payload) const;
    nixl_status_t
    mailboxJobLocked(RemoteAgent &ra,
                     uint64_t token,
                     const std::string &payload,
                     struct kxfer_job &job) const;
    nixl_status_t
    notifyJobLocked(RemoteAgent &ra,
                    const std::string &msg,
                    uint64_t token,
                    XferState &st) const;
    int
    reapLocked(unsigned int max, unsigned int min, int64_t timeout_ns) const;
    void
    progressLocked() const;
    void
    completeLocked(const struct kxfer_event &ev) const;
    void
    notifyLocked(const struct kxfer_event &ev) const;
    bool
    notifFromLocked(const std::string &agent, uint32_t session, std::string &why) const;
    nixl_status_t
    statusLocked(const XferState &st) const;
    void
    cancelLocked(uint64_t token) const;
};

} // namespace kxfer_nixl

#endif
