/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KXFER: the kernel's sessions by id, so that a notification (whose
 * event names the session it came over, struct kxfer_event.peer) can be
 * tied to the node at the other end.  Read from the generic netlink
 * family kxfer (KXFER_CMD_PEER_GET, which any user may dump), the only
 * place the kernel says it today.
 */
#ifndef KXFER_NIXL_SESSIONS_H
#define KXFER_NIXL_SESSIONS_H

#include <cstdint>
#include <string>
#include <unordered_map>

namespace kxfer_nixl {

struct SessionInfo {
    std::string name; /* the session's name (kxferctl peer show) */
    std::string remoteNode; /* the node_name of the node at the other end */
    uint32_t auth = 0; /* enum kxfer_peer_auth: whether that name is proven */
};

/* Not thread-safe: the caller locks. */
class SessionTable {
public:
    SessionTable() = default;
    ~SessionTable();
    SessionTable(const SessionTable &) = delete;
    SessionTable &
    operator=(const SessionTable &) = delete;

    /*
     * Session @id, read again from the kernel when it is not known yet
     * (ids are never reused while the module is loaded) or when @fresh
     * (a connecting session keeps its id across reconnects, which may
     * reach another node).
     *
     * Return: the session, or nullptr with @err saying why (no such
     * session: it ended before it was looked at; or netlink failed).
     */
    const SessionInfo *
    find(uint32_t id, bool fresh, std::string &err);

private:
    int fd_ = -1;
    int family_ = -1;
    uint32_t seq_ = 0;
    std::unordered_map<uint32_t, SessionInfo> byId_;

    int
    open(std::string &err);
    int
    refresh(std::string &err);
};

} // namespace kxfer_nixl

#endif
