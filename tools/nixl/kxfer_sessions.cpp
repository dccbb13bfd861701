// SPDX-License-Identifier: Apache-2.0
/*
 * KXFER: the kernel's sessions by id (see kxfer_sessions.h), over a raw
 * generic netlink socket: the family's id from the controller, then a
 * dump of KXFER_CMD_PEER_GET.
 */
#include "kxfer_sessions.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

/* the plugin's C++ cannot include it whole (see kxfer_backend.h) */
#define export export_name
#include <linux/kxfer.h>
#undef export

namespace kxfer_nixl {

namespace {

constexpr size_t kBufLen = 65536;

struct Request {
    struct nlmsghdr n;
    struct genlmsghdr g;
    char attrs[64];
};

/* Append a string attribute to @r */
void
putString(Request &r, uint16_t type, const char *s) {
    auto *a = reinterpret_cast<struct nlattr *>(reinterpret_cast<char *>(&r) +
                                                NLMSG_ALIGN(r.n.nlmsg_len));
    const size_t len = strlen(s) + 1;

    a->nla_type = type;
    a->nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
    memcpy(reinterpret_cast<char *>(a) + NLA_HDRLEN, s, len);
    r.n.nlmsg_len = NLMSG_ALIGN(r.n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Call @fn(type, payload, len) for each attribute of a generic netlink
 * message */
template<typename F>
void
forEachAttr(const struct nlmsghdr *n, F fn) {
    const char *p = reinterpret_cast<const char *>(NLMSG_DATA(n)) + GENL_HDRLEN;
    const char *end = reinterpret_cast<const char *>(n) + n->nlmsg_len;

    while (p + NLA_HDRLEN <= end) {
        const auto *a = reinterpret_cast<const struct nlattr *>(p);
        if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end) {
            return;
        }
        fn(a->nla_type & NLA_TYPE_MASK, p + NLA_HDRLEN, size_t(a->nla_len - NLA_HDRLEN));
        p += NLA_ALIGN(a->nla_len);
    }
}

std::string
str(const void *p, size_t len) {
    const char *s = static_cast<const char *>(p);
    return std::string(s, strnlen(s, len));
}

uint32_t
u32(const void *p, size_t len) {
    uint32_t v = 0;
    if (len >= sizeof(v)) {
        memcpy(&v, p, sizeof(v));
    }
    return v;
}

} // namespace

SessionTable::~SessionTable() {
    if (fd_ >= 0) {
        close(fd_);
    }
}

/* The socket and the family's id */
int
SessionTable::open(std::string &err) {
    std::vector<char> buf(kBufLen);
    struct sockaddr_nl sa;
    Request r;
    ssize_t n;

    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    memset(&sa, 0, sizeof(sa));
    sa.nl_family = AF_NETLINK;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<struct sockaddr *>(&sa), sizeof(sa))) {
        err = std::string("generic netlink socket: ") + strerror(errno);
        return -errno;
    }
    memset(&r, 0, sizeof(r));
    r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
    r.n.nlmsg_type = GENL_ID_CTRL;
    r.n.nlmsg_flags = NLM_F_REQUEST;
    r.n.nlmsg_seq = ++seq_;
    r.g.cmd = CTRL_CMD_GETFAMILY;
    r.g.version = 1;
    putString(r, CTRL_ATTR_FAMILY_NAME, KXFER_GENL_NAME);
    if (send(fd_, &r, r.n.nlmsg_len, 0) < 0 || (n = recv(fd_, buf.data(), buf.size(), 0)) < 0) {
        err = std::string("generic netlink: ") + strerror(errno);
        return -errno;
    }
    const auto *h = reinterpret_cast<const struct nlmsghdr *>(buf.data());
    if (!NLMSG_OK(h, static_cast<unsigned int>(n)) || h->nlmsg_type == NLMSG_ERROR) {
        err = "the generic netlink family " KXFER_GENL_NAME " is not there";
        return -ENOENT;
    }
    forEachAttr(h, [this](int type, const void *p, size_t len) {
        if (type == CTRL_ATTR_FAMILY_ID && len >= sizeof(uint16_t)) {
            uint16_t id;
            memcpy(&id, p, sizeof(id));
            family_ = id;
        }
    });
    if (family_ < 0) {
        err = "no id for the generic netlink family " KXFER_GENL_NAME;
        return -ENOENT;
    }
    return 0;
}

/* Every session the kernel has, into byId_ */
int
SessionTable::refresh(std::string &err) {
    std::vector<char> buf(kBufLen);
    Request r;
    int ret;

    if (family_ < 0 && (ret = open(err))) {
        return ret;
    }
    memset(&r, 0, sizeof(r));
    r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
    r.n.nlmsg_type = static_cast<uint16_t>(family_);
    r.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    r.n.nlmsg_seq = ++seq_;
    r.g.cmd = KXFER_CMD_PEER_GET;
    r.g.version = KXFER_GENL_VERSION;
    if (send(fd_, &r, r.n.nlmsg_len, 0) < 0) {
        err = std::string("kxfer peer dump: ") + strerror(errno);
        return -errno;
    }
    for (;;) {
        const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = std::string("kxfer peer dump: ") + strerror(errno);
            return -errno;
        }
        auto *h = reinterpret_cast<struct nlmsghdr *>(buf.data());
        unsigned int left = static_cast<unsigned int>(n);
        for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != seq_) {
                continue; /* an answer to an earlier, abandoned request */
            }
            if (h->nlmsg_type == NLMSG_DONE) {
                return 0;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                const auto *e = static_cast<const struct nlmsgerr *>(NLMSG_DATA(h));
                err = std::string("kxfer peer dump: ") + strerror(-e->error);
                return e->error ? e->error : -EIO;
            }
            SessionInfo si;
            uint32_t id = 0;
            forEachAttr(h, [&](int type, const void *p, size_t len) {
                switch (type) {
                case KXFER_A_PEER_ID:
                    id = u32(p, len);
                    break;
                case KXFER_A_PEER_NAME:
                    si.name = str(p, len);
                    break;
                case KXFER_A_PEER_REMOTE_NODE:
                    si.remoteNode = str(p, len);
                    break;
                case KXFER_A_PEER_AUTH:
                    si.auth = u32(p, len);
                    break;
                }
            });
            if (id) {
                byId_[id] = si;
            }
        }
    }
}

const SessionInfo *
SessionTable::find(uint32_t id, bool fresh, std::string &err) {
    auto it = byId_.find(id);

    if (it == byId_.end() || fresh) {
        byId_.clear();
        if (refresh(err)) {
            return nullptr;
        }
        it = byId_.find(id);
        if (it == byId_.end()) {
            err = "the kernel has no session of id " + std::to_string(id) + " (any more)";
            return nullptr;
        }
    }
    return &it->second;
}

} // namespace kxfer_nixl
