/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * kxfer: kernel RDMA transfer engine, user API.
 *
 * Two interfaces share this header:
 *
 *  - the character device /dev/kxfer, the data plane for services
 *    (ioctl structures below, KXFER_IOC_*);
 *  - the generic netlink family "kxfer", the control plane used by
 *    kxferctl (KXFER_CMD_*, KXFER_A_*), described in
 *    Documentation/netlink/kxfer.yaml.
 *
 * Rules for every ioctl structure: fixed layout, natural alignment,
 * explicit padding, user pointers as __u64, every "flags" field checked
 * against the known set and every "reserved" field required to be zero
 * (-EINVAL otherwise).  No kernel address is ever reported.
 */
#ifndef _UAPI_LINUX_KXFER_H
#define _UAPI_LINUX_KXFER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KXFER_API_VERSION	1

/* Names of pools, exports, peers: NUL-terminated, at most 31 characters. */
#define KXFER_NAME_MAX		32

/* ---------------------------------------------------------------------- */
/* Character device                                                        */
/* ---------------------------------------------------------------------- */

#define KXFER_DEVICE_NAME	"kxfer"

/* 0xE7 is not assigned in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define KXFER_IOC_MAGIC		0xE7

/**
 * struct kxfer_query - KXFER_IOC_QUERY: API version and limits
 * @flags: in, must be 0
 * @api_version: out, KXFER_API_VERSION of the running module
 * @features: out, KXFER_FEAT_* bits the module implements
 * @max_pools_per_fd: out, pools one open file may attach at once
 * @max_segments: out, segments per job
 * @max_jobs_per_submit: out, jobs per KXFER_IOC_SUBMIT call
 * @max_inflight: out, jobs one open file may have in flight
 * @pool_mem_max: out, bytes all pools together may pin
 * @pool_mem_used: out, bytes pinned by pools now
 * @max_notify_len: out, bytes a notification may carry
 *	(KXFER_JOB_NOTIFY_MSG)
 * @reserved0: must be 0
 * @reserved: must be 0
 */
struct kxfer_query {
	__u32 flags;
	__u32 api_version;
	__u64 features;
	__u32 max_pools_per_fd;
	__u32 max_segments;
	__u32 max_jobs_per_submit;
	__u32 max_inflight;
	__u64 pool_mem_max;
	__u64 pool_mem_used;
	__u32 max_notify_len;
	__u32 reserved0;
	__u64 reserved[3];
};

#define KXFER_FEAT_POOLS	(1ULL << 0)
#define KXFER_FEAT_JOBS		(1ULL << 1)	/* WRITE and READ jobs */
#define KXFER_FEAT_NOTIFY	(1ULL << 2)	/* KXFER_JOB_NOTIFY */
/* KXFER_IOC_POOL_USER, KXFER_IOC_EXPORT_ADD and KXFER_IOC_EXPORT_DEL */
#define KXFER_FEAT_USER_POOLS	(1ULL << 3)
#define KXFER_FEAT_DMABUF_POOLS	(1ULL << 4)	/* KXFER_IOC_POOL_DMABUF */
/*
 * KXFER_JOB_NOTIFY_MSG, NOTIFY jobs without data, and struct kxfer_reap's
 * message buffer
 */
#define KXFER_FEAT_NOTIFY_MSG	(1ULL << 5)
#define KXFER_FEAT_CANCEL	(1ULL << 6)	/* KXFER_IOC_CANCEL */
/*
 * The mapped event ring: KXFER_IOC_RING_SETUP, KXFER_IOC_RING_MSG,
 * KXFER_REAP_WAIT and mmap(2) at KXFER_RING_MMAP_OFFSET
 */
#define KXFER_FEAT_RING		(1ULL << 7)
/*
 * Withdrawals drain: peers finish the jobs they posted to an export
 * before its keys go; KXFER_POOL_DETACH_NOWAIT and KXFER_EXPORT_DEL_NOWAIT
 */
#define KXFER_FEAT_DRAIN	(1ULL << 8)
#define KXFER_FEAT_EXPORT_SUBSCRIBE (1ULL << 9)	/* KXFER_EXPORT_SUBSCRIBE */
/*
 * KXFER_IOC_RELEASE; remote handles end with the connection they were
 * looked up on (ESTALE after a reconnect)
 */
#define KXFER_FEAT_RELEASE	(1ULL << 10)
/*
 * Capability-scoped exports: KXFER_EXPORT_TOKEN, and KXFER_LOOKUP_TOKEN
 * of KXFER_IOC_REMOTE_LOOKUP
 */
#define KXFER_FEAT_TOKENS	(1ULL << 11)
/* KXFER_IOC_CONNECT: sessions on demand, under the administrator's policy */
#define KXFER_FEAT_CONNECT	(1ULL << 12)

/*
 * Peers over several rails: KXFER_JOB_RAIL, and jobs posted again on
 * another rail when theirs fails
 */
#define KXFER_FEAT_RAILS	(1ULL << 13)

/* Bytes of an export's token (KXFER_EXPORT_TOKEN) */
#define KXFER_TOKEN_LEN		16

/**
 * struct kxfer_pool_attach - KXFER_IOC_POOL_ATTACH: attach a pool by name
 * @name: in, the pool's name, NUL-terminated
 * @flags: in, must be 0
 * @handle: out, names the attachment in later calls
 * @size: out, the pool's size in bytes
 * @mmap_offset: out, pass to mmap(2) as the offset to map the pool
 * @reserved: must be 0
 *
 * The caller needs read and write permission on the pool, checked like
 * a file against the pool's owner, group and mode (CAP_DAC_OVERRIDE
 * passes).
 */
struct kxfer_pool_attach {
	char  name[KXFER_NAME_MAX];
	__u32 flags;
	__u32 handle;
	__u64 size;
	__u64 mmap_offset;
	__u64 reserved[2];
};

/**
 * struct kxfer_pool_detach - KXFER_IOC_POOL_DETACH
 * @handle: in, from KXFER_IOC_POOL_ATTACH, KXFER_IOC_POOL_USER or
 *	KXFER_IOC_POOL_DMABUF
 * @flags: in, 0 or KXFER_POOL_DETACH_NOWAIT
 * @reserved: must be 0
 *
 * Detaching a pool this file made ends it: its exports are withdrawn.
 * The call returns when every peer that drains finished the jobs it had
 * posted to them (or its session ended, at the latest after the drain's
 * bound, Documentation/wire-protocol.rst), then the memory goes back once
 * no job holds it.  With KXFER_POOL_DETACH_NOWAIT it returns at once and
 * the kernel finishes the withdrawal: until then peers may still write
 * the memory (it stays pinned; close(2) never waits either).
 */
struct kxfer_pool_detach {
	__u32 handle;
	__u32 flags;
	__u64 reserved;
};

#define KXFER_POOL_DETACH_NOWAIT	(1U << 0)

/**
 * struct kxfer_peer_lookup - KXFER_IOC_PEER_LOOKUP: a session by name
 * @name: in, the peer's name (kxferctl peer show), NUL-terminated
 * @flags: in, must be 0
 * @handle: out, names the peer in later calls of this file
 * @state: out, enum kxfer_peer_state at lookup time
 * @qps: out, QPs of the session
 * @reserved: must be 0
 *
 * A handle stays valid across reconnects of the session; jobs submitted
 * while the session is not up fail at once with -ENOTCONN.  When sessions
 * share a name, a connecting session is found first, else the oldest of
 * the accepting ones (named after the remote node) that is up.  An
 * accepting session ends when its peer goes (and a peer that restarts
 * comes back as a new session): look the name up again after -ENOTCONN.
 */
struct kxfer_peer_lookup {
	char  name[KXFER_NAME_MAX];
	__u32 flags;
	__u32 handle;
	__u32 state;
	__u32 qps;
	__u64 reserved[2];
};

/**
 * struct kxfer_remote_lookup - KXFER_IOC_REMOTE_LOOKUP: a remote export
 * @peer: in, a handle from KXFER_IOC_PEER_LOOKUP
 * @flags: in, 0 or KXFER_LOOKUP_TOKEN
 * @name: in, the export's name as the remote advertised it
 * @handle: out, names the remote export in jobs of this file
 * @access: out, KXFER_ACCESS_* the export grants
 * @len: out, its length: remote offsets of jobs are in [0, len)
 * @gen: out, its generation; a newer one (the remote re-created it, or
 *	reconnected) makes the handle stale: jobs fail with -ESTALE
 * @token: in, with KXFER_LOOKUP_TOKEN, the token of a capability-scoped
 *	export (KXFER_EXPORT_TOKEN), as its owner gave it out; else 0.
 *	Written back as zeros.
 *
 * Without KXFER_LOOKUP_TOKEN only exports made without a token are
 * found; with it, only the export of that name whose token is @token
 * (compared in constant time).  Every other case is -ENOENT, as for a
 * name the peer never advertised, and makes no handle: the answer does
 * not tell whether the name exists.
 *
 * Errors: EINVAL (flags, a name that is not NUL-terminated or empty, a
 * token without KXFER_LOOKUP_TOKEN, or all zeros with it), ENOENT (no such peer handle, or no
 * such export for that token), EMFILE (too many remote handles), ENOMEM,
 * EFAULT.
 */
struct kxfer_remote_lookup {
	__u32 peer;
	__u32 flags;
	char  name[KXFER_NAME_MAX];
	__u32 handle;
	__u32 access;
	__u64 len;
	__u64 gen;
	__u8  token[KXFER_TOKEN_LEN];
};

#define KXFER_LOOKUP_TOKEN		(1U << 0)

/* One piece of a job: bytes of the local pool to or from the remote. */
struct kxfer_segment {
	__u64 local_off;	/* offset in the attached pool */
	__u64 remote_off;	/* offset in the remote export */
	__u64 len;		/* bytes, > 0 */
};

enum kxfer_op {
	KXFER_OP_WRITE = 1,	/* local pool -> remote export */
	KXFER_OP_READ,		/* remote export -> local pool */
	/*
	 * The 8-byte atomics: one segment of len 8, both offsets 8-byte
	 * aligned, on an export with KXFER_ACCESS_ATOMIC.  The remote's
	 * 8 bytes before the operation land at the segment's local_off,
	 * little-endian, when the job completes.
	 */
	KXFER_OP_CAS,		/* if remote == compare_add: remote = swap */
	KXFER_OP_FADD,		/* remote += compare_add */
};

/*
 * The remote gets exactly one KXFER_EV_NOTIFY event at the files that
 * subscribed to the export (KXFER_IOC_NOTIFY_SUBSCRIBE), carrying
 * @notify_value and the job's bytes, only after all of the job's data is
 * visible in its memory.  The job completes once the notification has
 * reached the remote's NIC.
 */
#define KXFER_JOB_NOTIFY	(1U << 0)
/*
 * The job starts only after every job this file submitted earlier to the
 * same peer has completed (its event is posted); the jobs after it wait
 * behind it.  Without FENCE, jobs of one file to one peer take effect in
 * submission order only on one QP.
 */
#define KXFER_JOB_FENCE		(1U << 1)
/*
 * With KXFER_JOB_NOTIFY: the notification carries bytes of the
 * submitter's (a NIXL notification message, a request id): @notify_value
 * is then a user pointer to @notify_len bytes, 1..max_notify_len of
 * KXFER_IOC_QUERY, copied at SUBMIT.  The subscribers get them with the
 * event (struct kxfer_reap's @msgs).  A peer whose kxfer predates this
 * cannot receive them: such a job is refused with -EOPNOTSUPP.
 */
#define KXFER_JOB_NOTIFY_MSG	(1U << 2)
/*
 * The job goes to rail @rail of its peer (kxferctl peer show lists them,
 * 0 the first), not to the one nearest its memory; if that rail is not
 * up, to another, as any job of a peer whose rail fails.
 */
#define KXFER_JOB_RAIL		(1U << 3)
#define KXFER_JOB_FLAGS		(KXFER_JOB_NOTIFY | KXFER_JOB_FENCE | \
				 KXFER_JOB_NOTIFY_MSG | KXFER_JOB_RAIL)

/**
 * struct kxfer_job - one transfer between an attached pool and a remote
 *	export of one peer (an element of KXFER_IOC_SUBMIT's array)
 * @op: enum kxfer_op
 * @flags: KXFER_JOB_*
 * @pool: attachment handle (KXFER_IOC_POOL_ATTACH)
 * @peer: peer handle (KXFER_IOC_PEER_LOOKUP)
 * @remote: remote export handle (KXFER_IOC_REMOTE_LOOKUP)
 * @nsegs: entries at @segs, 1..max_segments of KXFER_IOC_QUERY; 0 for a
 *	WRITE with KXFER_JOB_NOTIFY and no data (@pool and @segs 0): only
 *	the notification is sent, after every earlier job of the file to
 *	the peer with KXFER_JOB_FENCE
 * @segs: user pointer to struct kxfer_segment[@nsegs]
 * @user_data: returned in the job's completion event
 * @notify_value: with KXFER_JOB_NOTIFY, the value the remote is given;
 *	with KXFER_JOB_NOTIFY_MSG, a user pointer to the message
 * @compare_add: CAS: the value compared; FADD: the value added; else 0
 * @swap: CAS: the value stored if equal; else 0
 * @notify_len: with KXFER_JOB_NOTIFY_MSG, the message's bytes; else 0
 * @rail: with KXFER_JOB_RAIL, the rail of the peer to use, below the
 *	peer's number of rails (EINVAL otherwise); else 0
 */
struct kxfer_job {
	__u32 op;
	__u32 flags;
	__u32 pool;
	__u32 peer;
	__u32 remote;
	__u32 nsegs;
	__u64 segs;
	__u64 user_data;
	__u64 notify_value;
	__u64 compare_add;
	__u64 swap;
	__u32 notify_len;
	__u32 rail;
};

/**
 * struct kxfer_submit - KXFER_IOC_SUBMIT: submit jobs
 * @jobs: in, user pointer to struct kxfer_job[@njobs]
 * @njobs: in, 1..max_jobs_per_submit
 * @flags: in, must be 0
 * @accepted: out, jobs accepted, from the first; each gets exactly one
 *	completion event
 * @error: out, 0 if all were accepted, else the negative errno of job
 *	number @accepted, which was refused (nothing after it was looked
 *	at); -EAGAIN when the file's in-flight bound is reached, -E2BIG
 *	when the job would take more than 65536 work requests (split it)
 * @reserved: must be 0
 *
 * Return: 0 when at least one job was accepted or @njobs jobs were;
 * else -1 with errno = -@error.
 */
struct kxfer_submit {
	__u64 jobs;
	__u32 njobs;
	__u32 flags;
	__u32 accepted;
	__s32 error;
	__u64 reserved[2];
};

enum kxfer_event_type {
	KXFER_EV_COMPLETION = 1,	/* a job of this file ended */
	KXFER_EV_NOTIFY,		/* a peer's NOTIFY job landed here */
};

/* struct kxfer_event.msg_off of a message the reap had no room for */
#define KXFER_MSG_NONE		0xffffffffU
/*
 * struct kxfer_event.msg_off, in the mapped ring only: the message waits
 * in the kernel; KXFER_IOC_RING_MSG copies it until the ring's tail moves
 * past the event
 */
#define KXFER_MSG_RING		0xfffffffeU

/**
 * struct kxfer_event - what KXFER_IOC_REAP returns
 * @type: enum kxfer_event_type
 * @status: 0, or the job's negative errno (always 0 for NOTIFY)
 * @user_data: COMPLETION: the job's; NOTIFY: the job's notify_value (0
 *	for one with a message)
 * @bytes: bytes transferred (the job's total on success)
 * @wc_status: COMPLETION: the first failed work request's ib_wc_status
 * @msg_off: NOTIFY with @msg_len: where its message starts in the reap's
 *	@msgs buffer, or KXFER_MSG_NONE if it did not fit (it is lost)
 * @sub: NOTIFY: the subscription handle (names the local export)
 * @peer: NOTIFY: the session it came over (KXFER_A_PEER_ID)
 * @msg_len: NOTIFY: the bytes of its message (KXFER_JOB_NOTIFY_MSG), or 0
 */
struct kxfer_event {
	__u32 type;
	__s32 status;
	__u64 user_data;
	__u64 bytes;
	union {
		__u32 wc_status;
		__u32 msg_off;
	};
	__u32 sub;
	__u32 peer;
	__u32 msg_len;
};

/**
 * struct kxfer_notify_sub - KXFER_IOC_NOTIFY_SUBSCRIBE: notifications of
 *	a local export
 * @name: in, the export's name, NUL-terminated
 * @export: the same field under its first name, for C only (a keyword
 *	of C++, which could not include this header)
 * @flags: in, must be 0
 * @handle: out, for KXFER_IOC_NOTIFY_UNSUBSCRIBE and in events' @sub
 * @reserved: must be 0
 *
 * The caller needs read permission on the export's pool.
 */
struct kxfer_notify_sub {
	union {
		char  name[KXFER_NAME_MAX];
#ifndef __cplusplus
		char  export[KXFER_NAME_MAX];
#endif
	};
	__u32 flags;
	__u32 handle;
	__u64 reserved[2];
};

#define KXFER_REAP_BUSY_POLL	(1U << 0)	/* spin instead of sleeping */
/*
 * Wait only, for a reader of the mapped ring: wait for @min events
 * (at most the ring's entries), take none; @events, @max, @msgs and
 * @msgs_len must be 0; @count is the number of events ready when the
 * call returns.  Also moves waiting notifications into the ring
 * (KXFER_RING_F_NEED_REAP).  KXFER_FEAT_RING.
 */
#define KXFER_REAP_WAIT		(1U << 1)

/**
 * struct kxfer_reap - KXFER_IOC_REAP: take events
 * @events: in, user pointer to struct kxfer_event[@max]
 * @max: in, room at @events, >= 1
 * @min: in, wait until at least this many are ready (<= @max)
 * @timeout_ns: in, longest wait; 0 does not wait, < 0 waits for ever
 * @flags: in, KXFER_REAP_*
 * @count: out, events written
 * @msgs: in, user pointer to @msgs_len bytes where the messages of NOTIFY
 *	events go (struct kxfer_event's @msg_off, @msg_len), or 0
 * @msgs_len: in, room at @msgs
 * @reserved: must be 0
 *
 * An event whose message does not fit in what is left of @msgs ends the
 * call before it, so that the next call gets it; only when it is the
 * first event of the call is it returned without its message
 * (KXFER_MSG_NONE), so that a reader never stalls.
 *
 * Return: 0 (@count may be below @min after the timeout), or -1 with
 * errno EINTR if a signal came first (events already taken are kept
 * for the next call).
 *
 * With the ring mapped (KXFER_IOC_RING_SETUP), REAP still takes events
 * the same way, from the ring's tail, and moves the ring's tail past
 * them; a file should take its events through one of the two at a time
 * (an event taken by both concurrently is seen twice, the kernel's count
 * of them stays right).  KXFER_REAP_WAIT only waits, for a reader of the
 * mapped ring that wants to sleep.
 */
struct kxfer_reap {
	__u64 events;
	__u32 max;
	__u32 min;
	__s64 timeout_ns;
	__u32 flags;
	__u32 count;
	__u64 msgs;
	__u32 msgs_len;
	__u32 reserved;
};

/**
 * struct kxfer_pool_user - KXFER_IOC_POOL_USER: make a pool of the
 *	caller's own memory
 * @name: in, the pool's name, unique among pools, NUL-terminated
 * @flags: in, must be 0
 * @handle: out, an attachment handle of this file (struct kxfer_job.pool,
 *	KXFER_IOC_EXPORT_ADD); KXFER_IOC_POOL_DETACH ends the pool
 * @addr: in, the range's start in the caller's address space, page
 *	aligned; pool offset 0 is this address
 * @len: in, bytes, a non-zero multiple of the page size
 * @reserved: must be 0
 *
 * The pages are pinned long-term (FOLL_LONGTERM | FOLL_WRITE) and
 * charged to the caller's RLIMIT_MEMLOCK (its mm's pinned_vm) unless it
 * has CAP_IPC_LOCK, and to the module's pool_mem_max and
 * user_pool_mem_max.  The pool belongs to this open file: no other file
 * can attach it, "pool del" refuses it, and it ends (its exports
 * withdrawn first) at KXFER_IOC_POOL_DETACH or when the file is closed.
 * The pages are given back, marked dirty, once the jobs in flight on the
 * pool are done.  Pinned pages stay the caller's after fork(2): the
 * kernel copies pinned anonymous pages for the child at fork, so the
 * parent keeps the very pages the NIC uses.  The pool is not mmap(2)ed
 * through /dev/kxfer: the caller has it mapped already.
 *
 * Errors: EINVAL (flags, reserved, name, alignment, length), EEXIST
 * (name in use), EFAULT (part of the range is not mapped), EACCES (part
 * is not writable), EOPNOTSUPP (part cannot be pinned long-term: I/O or
 * PFN mappings, file-backed DAX), ENOMEM (RLIMIT_MEMLOCK, or memory),
 * ENOSPC (pool_mem_max or user_pool_mem_max), EPERM (user pools are
 * forbidden: user_pool_mem_max is 0), EMFILE (max_pools_per_fd).
 */
struct kxfer_pool_user {
	char  name[KXFER_NAME_MAX];
	__u32 flags;
	__u32 handle;
	__u64 addr;
	__u64 len;
	__u64 reserved[2];
};

/* RDMA device names, as in ib_core */
#define KXFER_DEV_NAME_MAX	64

/**
 * struct kxfer_pool_dmabuf - KXFER_IOC_POOL_DMABUF: make a pool of a
 *	dma-buf (GPU memory, udmabuf, a dma-heap buffer)
 * @name: in, the pool's name, unique among pools, NUL-terminated
 * @flags: in, must be 0
 * @handle: out, as struct kxfer_pool_user's
 * @fd: in, the dma-buf's file descriptor; the pool holds its own
 *	reference, so the descriptor may be closed afterwards
 * @pad: must be 0
 * @offset: in, first byte of the buffer, page aligned
 * @len: in, bytes, a non-zero multiple of the page size, within the
 *	buffer
 * @dev: in, "" to import the buffer's pages (the exporter must have
 *	them: udmabuf, dma-heaps) for every device; or the name of an RDMA
 *	device that does DMA, to import the buffer for that device only
 *	(pinned, through ib_core: device memory of a GPU)
 * @reserved: must be 0
 *
 * Ownership, accounting (but for RLIMIT_MEMLOCK: the exporter owns the
 * memory) and lifetime as for KXFER_IOC_POOL_USER.
 *
 * Errors: EINVAL (flags, pad, reserved, name, alignment, a range beyond
 * the buffer, a device name that is not NUL-terminated), EBADF (@fd is
 * not open), EINVAL (@fd is not a dma-buf), ENODEV (no such device),
 * EOPNOTSUPP (the buffer has no pages to import for a device without
 * DMA, such as soft-RoCE; the kernel log says why), EEXIST, ENOSPC,
 * EPERM, EMFILE, ENOMEM as for KXFER_IOC_POOL_USER.
 */
struct kxfer_pool_dmabuf {
	char  name[KXFER_NAME_MAX];
	__u32 flags;
	__u32 handle;
	__s32 fd;
	__u32 pad;
	__u64 offset;
	__u64 len;
	char  dev[KXFER_DEV_NAME_MAX];
	__u64 reserved[2];
};

/**
 * struct kxfer_export_add - KXFER_IOC_EXPORT_ADD: export a range of a
 *	pool this file made (KXFER_IOC_POOL_USER, KXFER_IOC_POOL_DMABUF)
 * @name: in, the export's name, unique among exports, NUL-terminated:
 *	what peers look it up by
 * @pool: in, the pool's handle
 * @access: in, KXFER_ACCESS_* bits, at least one
 * @offset: in, first byte in the pool
 * @len: in, bytes, > 0; the range must lie inside the pool
 * @peer: in, the one peer session name allowed, or "" for any
 * @from_family: in, 0 for any address, else AF_INET or AF_INET6: the
 *	peer must connect from @from_addr/@from_prefix
 * @from_prefix: in, the prefix length in bits
 * @from_addr: in, 4 (AF_INET) or 16 bytes, network order
 * @token: in, with KXFER_EXPORT_TOKEN, the export's token: 16 random
 *	bytes (getrandom(2)), not all zero; else 0
 *
 * As `kxferctl export add`, scoped the same way; sessions stay the
 * administrator's.  The export ends with KXFER_IOC_EXPORT_DEL, when its
 * pool ends, or when the administrator deletes it (`kxferctl export
 * del`); its keys are invalidated once every peer finished the jobs it
 * posted to it (KXFER_IOC_EXPORT_DEL).
 *
 * @flags: 0, or KXFER_EXPORT_SUBSCRIBE: the file subscribes to the
 * export's notifications before any peer learns of it (none is lost to a
 * peer that notifies as soon as the export is advertised), and the call
 * returns the subscription's handle (> 0) instead of 0, as
 * KXFER_IOC_NOTIFY_SUBSCRIBE would give it; the subscription ends as
 * those do.
 *
 * KXFER_EXPORT_TOKEN (KXFER_FEAT_TOKENS; with or without
 * KXFER_EXPORT_SUBSCRIBE): the export is capability-scoped.  A peer's
 * process finds it only by presenting @token (KXFER_IOC_REMOTE_LOOKUP
 * with KXFER_LOOKUP_TOKEN), which the
 * owner gives out of band (in NIXL agent metadata, as UCX gives rkeys);
 * any other lookup fails as for a name that does not exist.  The kernel
 * never shows the token (netlink, logs, tracepoints): peer show lists no
 * such export.  Peers whose kxfer predates tokens are not given the
 * export at all.  The token is revoked with the export: once it is
 * withdrawn, no peer finds it, and handles looked up with it fail with
 * -ESTALE; a new export of the same name is found only with the token
 * it is made with (draw a new one for each export).
 *
 * Errors: EINVAL (flags, pad, name, access, empty range, family or
 * prefix, a token of zeros, or one without KXFER_EXPORT_TOKEN), ENOENT
 * (no such pool handle), EPERM (the pool was not made by
 * this file, or user_exports is off), ERANGE (range outside the pool),
 * E2BIG (range longer than one export can map: 4096 MRs of 512 pages,
 * 8 GiB with 4 KiB pages), EEXIST (name in use), ENOMEM.
 */
struct kxfer_export_add {
	char  name[KXFER_NAME_MAX];
	__u32 pool;
	__u32 access;
	__u64 offset;
	__u64 len;
	char  peer[KXFER_NAME_MAX];
	__u32 flags;
	__u16 from_family;
	__u8  from_prefix;
	__u8  pad;
	__u8  from_addr[16];
	__u8  token[KXFER_TOKEN_LEN];
};

#define KXFER_EXPORT_SUBSCRIBE		(1U << 0)
#define KXFER_EXPORT_TOKEN		(1U << 1)

/**
 * struct kxfer_export_del - KXFER_IOC_EXPORT_DEL: withdraw an export
 *	this file made
 * @name: in, the export's name, NUL-terminated
 * @flags: in, 0 or KXFER_EXPORT_DEL_NOWAIT
 * @reserved0: must be 0
 * @reserved: must be 0
 *
 * The export leaves the namespace at once; each peer is told, refuses new
 * jobs to it (ESTALE) and lets those it posted finish.  The call returns
 * when every peer answered (or its session ended: a peer that does not
 * answer within the drain's bound loses its session), and only then are
 * the keys invalidated.  With KXFER_EXPORT_DEL_NOWAIT it returns at once
 * and the kernel finishes the withdrawal.  Peers of an older kxfer have
 * the keys invalidated at once, as before.
 *
 * Errors: EINVAL, ENOENT (no such export), EPERM (another file or the
 * administrator made it).
 */
struct kxfer_export_del {
	char  name[KXFER_NAME_MAX];
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

#define KXFER_EXPORT_DEL_NOWAIT		(1U << 0)

/**
 * struct kxfer_release - KXFER_IOC_RELEASE: give back a handle
 * @kind: in, KXFER_HANDLE_PEER (from KXFER_IOC_PEER_LOOKUP) or
 *	KXFER_HANDLE_REMOTE (from KXFER_IOC_REMOTE_LOOKUP)
 * @handle: in, the handle
 * @flags: in, must be 0
 * @reserved: must be 0
 *
 * The handle's number may be given out again.  Jobs already accepted are
 * not affected; a remote handle looked up through a peer handle stays
 * valid when the peer handle is released.
 *
 * Errors: EINVAL, ENOENT (no such handle of that kind).
 */
struct kxfer_release {
	__u32 kind;
	__u32 handle;
	__u32 flags;
	__u32 reserved;
};

#define KXFER_HANDLE_PEER		1
#define KXFER_HANDLE_REMOTE		2

/**
 * struct kxfer_connect - KXFER_IOC_CONNECT: a session to an address, made
 *	on demand if the administrator's policy allows it
 * @flags: in, must be 0
 * @family: in, AF_INET or AF_INET6
 * @port: in, the remote listener's port, host order; 0 for KXFER_PORT
 * @addr: in, 4 (AF_INET, the rest 0) or 16 bytes, network order: a
 *	unicast address of another node (not unspecified, loopback,
 *	multicast, broadcast, nor IPv4-mapped)
 * @handle: out, a peer handle, as KXFER_IOC_PEER_LOOKUP gives
 * @state: out, enum kxfer_peer_state at the time of the call
 * @qps: out, QPs of the session
 * @reserved0: must be 0
 * @name: out, the session's name (kxferctl peer show)
 * @reserved: must be 0
 *
 * Any user of /dev/kxfer may call it; what it may reach is the
 * administrator's choice (kxferctl connect allow PREFIX [port P] [key K]
 * [qps N] [idle SECONDS]).  A session to that address and port (one an
 * administrator made, one made on demand, or one the node at that
 * address opened to this one) is used if there is one; else the first
 * rule whose prefix holds the address and whose port is @port has the
 * kernel connect, as peer add would: keepalive, reconnects, the rule's
 * key proven, its QPs.  The call does not wait for the session to come
 * up: @state says where it is, jobs fail with -ENOTCONN until it is up,
 * and exports are looked up once it is.  A session made on demand is
 * listed as such (peer show: on-demand), is named after the address,
 * and ends once no handle of any file names it and no job uses it for
 * the rule's idle time (60 s by default); deleting the rule ends none.
 *
 * Errors: EINVAL (flags, reserved, family, address), EACCES (no rule
 * allows the address and port), ENOSPC (KXFER_CONNECT_MAX sessions made
 * on demand exist), EMFILE (the file's peer handles), ENOMEM, EFAULT.
 * A failed call changes nothing.
 */
struct kxfer_connect {
	__u32 flags;
	__u16 family;
	__u16 port;
	__u8  addr[16];
	__u32 handle;
	__u32 state;
	__u32 qps;
	__u32 reserved0;
	char  name[KXFER_NAME_MAX];
	__u64 reserved[2];
};

/* Sessions made on demand at most, node-wide */
#define KXFER_CONNECT_MAX		64

/**
 * struct kxfer_cancel - KXFER_IOC_CANCEL: take back jobs of this file
 *	that have not reached the NIC
 * @user_data: in, with @mask, which jobs: those whose
 *	user_data & @mask == @user_data & @mask (a request's jobs, when
 *	their user_data share its tag)
 * @mask: in, 0 for every job of the file
 * @flags: in, must be 0
 * @count: out, jobs and job parts taken back: jobs held behind a FENCE,
 *	and a job's share of one QP still waiting whole in that QP's queue
 *	(a job striped over several QPs counts once per QP)
 * @reserved: must be 0
 *
 * What was taken back never reaches the NIC; its job still ends exactly
 * once, with -ECANCELED (after its other parts, if some were posted
 * already).  Jobs already handed to the NIC complete as they would.
 *
 * Errors: EINVAL (flags, reserved), EFAULT.
 */
struct kxfer_cancel {
	__u64 user_data;
	__u64 mask;
	__u32 flags;
	__u32 count;
	__u64 reserved[2];
};

/*
 * Every pool attached by one open file owns a window of the file's mmap
 * offset space, KXFER_MMAP_WINDOW bytes wide, at handle * window.
 * Window 0, which no pool has, holds the event ring.
 */
#define KXFER_MMAP_WINDOW_SHIFT	40
#define KXFER_MMAP_WINDOW	(1ULL << KXFER_MMAP_WINDOW_SHIFT)
#define KXFER_RING_MMAP_OFFSET	0ULL

/**
 * struct kxfer_ring - the head of the mapped event ring
 * @head: written by the kernel: index of the next event it posts; the
 *	events at @tail .. @head - 1 are ready (free-running indexes, the
 *	slot of index i is i & @mask).  Read with acquire order.
 * @flags: written by the kernel, KXFER_RING_F_*
 * @mask: entries - 1 (the ring has a power of two entries)
 * @entries: the number of entries, KXFER_IOC_QUERY's @max_inflight
 * @events_off: where struct kxfer_event[@entries] starts, in bytes from
 *	the start of the mapping
 * @tail: written by user space: index of the next event it will read;
 *	store it with release order once the events before it are read.
 *	The kernel frees a slot only when it sees @tail move past it.
 *	A @tail that is not between the kernel's last known tail and @head
 *	is ignored (nothing is lost or freed by it) until a valid one is
 *	written; KXFER_IOC_REAP also moves it.
 *
 * The kernel never reads @head, @flags, @mask or the entries back: they
 * are copies of its own state, for the reader.
 */
struct kxfer_ring {
	__u32 head;
	__u32 flags;
	__u32 mask;
	__u32 entries;
	__u32 events_off;
	__u32 reserved0;
	__u64 reserved1[5];
	/* 64 */
	__u32 tail;
	__u32 reserved2;
	__u64 reserved3[7];
};

/*
 * Events wait past the ring (notifications that found it full); a reader
 * of the ring makes room and calls KXFER_IOC_REAP (KXFER_REAP_WAIT with a
 * timeout of 0 is enough) to have them moved in.
 */
#define KXFER_RING_F_NEED_REAP	(1U << 0)
/*
 * The file has used a session with polled completion queues (peer "cq
 * poll"): their completions are reaped by REAP and SUBMIT calls, or a
 * timer tick later.  A reader that finds fewer events than it wants
 * calls KXFER_IOC_REAP (KXFER_REAP_WAIT with a timeout of 0 is enough)
 * to have them reaped now.
 */
#define KXFER_RING_F_POLL	(1U << 1)

/**
 * struct kxfer_ring_setup - KXFER_IOC_RING_SETUP: make the file's event
 *	ring mappable
 * @flags: in, must be 0
 * @entries: out, entries of the ring
 * @mmap_offset: out, KXFER_RING_MMAP_OFFSET
 * @mmap_len: out, the exact length to pass to mmap(2)
 * @events_off: out, as struct kxfer_ring's
 * @reserved0: must be 0
 * @reserved: must be 0
 *
 * Any time, before or after jobs; again, it only reports the same.
 * Events not yet taken are in the ring from then on.  The mapping is
 * MAP_SHARED, PROT_READ | PROT_WRITE (PROT_EXEC is refused), at
 * @mmap_offset with @mmap_len bytes, as many times as wanted; it keeps
 * the file open until it is unmapped.
 *
 * Errors: EINVAL (flags, reserved), ENOMEM, EFAULT.  mmap(2): EINVAL
 * (not MAP_SHARED, another offset in window 0, another length), EPERM
 * (PROT_EXEC), ENXIO (no KXFER_IOC_RING_SETUP yet).
 */
struct kxfer_ring_setup {
	__u32 flags;
	__u32 entries;
	__u64 mmap_offset;
	__u64 mmap_len;
	__u32 events_off;
	__u32 reserved0;
	__u64 reserved[2];
};

/**
 * struct kxfer_ring_msg - KXFER_IOC_RING_MSG: the message of a NOTIFY
 *	event in the mapped ring (msg_off KXFER_MSG_RING)
 * @index: in, the event's free-running ring index (tail .. head - 1)
 * @flags: in, must be 0
 * @buf: in, user pointer to @len bytes
 * @len: in, room at @buf
 * @msg_len: out, the message's length (also with ENOSPC)
 * @reserved: must be 0
 *
 * Read the message before moving the ring's tail past its event: the
 * kernel frees it then.
 *
 * Errors: EINVAL (flags, reserved), ENOENT (@index is not a ready event,
 * or its event has no message), ENOSPC (@len too small; @msg_len says
 * how much is needed), EFAULT.
 */
struct kxfer_ring_msg {
	__u32 index;
	__u32 flags;
	__u64 buf;
	__u32 len;
	__u32 msg_len;
	__u64 reserved[2];
};

#define KXFER_IOC_QUERY		_IOWR(KXFER_IOC_MAGIC, 0x00, struct kxfer_query)
#define KXFER_IOC_POOL_ATTACH	_IOWR(KXFER_IOC_MAGIC, 0x01, struct kxfer_pool_attach)
#define KXFER_IOC_POOL_DETACH	_IOW(KXFER_IOC_MAGIC, 0x02, struct kxfer_pool_detach)
#define KXFER_IOC_PEER_LOOKUP	_IOWR(KXFER_IOC_MAGIC, 0x03, struct kxfer_peer_lookup)
#define KXFER_IOC_REMOTE_LOOKUP	_IOWR(KXFER_IOC_MAGIC, 0x04, struct kxfer_remote_lookup)
#define KXFER_IOC_SUBMIT	_IOWR(KXFER_IOC_MAGIC, 0x05, struct kxfer_submit)
#define KXFER_IOC_REAP		_IOWR(KXFER_IOC_MAGIC, 0x06, struct kxfer_reap)
#define KXFER_IOC_NOTIFY_SUBSCRIBE \
	_IOWR(KXFER_IOC_MAGIC, 0x07, struct kxfer_notify_sub)
#define KXFER_IOC_NOTIFY_UNSUBSCRIBE \
	_IOW(KXFER_IOC_MAGIC, 0x08, struct kxfer_notify_sub)
#define KXFER_IOC_POOL_USER	_IOWR(KXFER_IOC_MAGIC, 0x09, struct kxfer_pool_user)
#define KXFER_IOC_POOL_DMABUF	_IOWR(KXFER_IOC_MAGIC, 0x0a, struct kxfer_pool_dmabuf)
#define KXFER_IOC_EXPORT_ADD	_IOW(KXFER_IOC_MAGIC, 0x0b, struct kxfer_export_add)
#define KXFER_IOC_EXPORT_DEL	_IOW(KXFER_IOC_MAGIC, 0x0c, struct kxfer_export_del)
#define KXFER_IOC_CANCEL	_IOWR(KXFER_IOC_MAGIC, 0x0d, struct kxfer_cancel)
#define KXFER_IOC_RING_SETUP	_IOWR(KXFER_IOC_MAGIC, 0x0e, struct kxfer_ring_setup)
#define KXFER_IOC_RING_MSG	_IOWR(KXFER_IOC_MAGIC, 0x0f, struct kxfer_ring_msg)
#define KXFER_IOC_RELEASE	_IOW(KXFER_IOC_MAGIC, 0x10, struct kxfer_release)
#define KXFER_IOC_CONNECT	_IOWR(KXFER_IOC_MAGIC, 0x11, struct kxfer_connect)

/* ---------------------------------------------------------------------- */
/* Generic netlink family                                                  */
/* ---------------------------------------------------------------------- */

#define KXFER_GENL_NAME		"kxfer"
#define KXFER_GENL_VERSION	1
#define KXFER_MCGRP_MONITOR	"monitor"

/* Export access bits (KXFER_A_EXPORT_ACCESS) */
#define KXFER_ACCESS_READ	(1U << 0)
#define KXFER_ACCESS_WRITE	(1U << 1)
#define KXFER_ACCESS_ATOMIC	(1U << 2)
#define KXFER_ACCESS_ALL	(KXFER_ACCESS_READ | KXFER_ACCESS_WRITE | \
				 KXFER_ACCESS_ATOMIC)

/* Port link layer (KXFER_A_PORT_LINK_LAYER) */
enum kxfer_link_layer {
	KXFER_LINK_LAYER_UNSPECIFIED,
	KXFER_LINK_LAYER_INFINIBAND,
	KXFER_LINK_LAYER_ETHERNET,
};

/*
 * Port state (KXFER_A_PORT_STATE) follows the IBTA numbering:
 * 0 nop, 1 down, 2 init, 3 armed, 4 active, 5 active-defer.
 */

/* attribute-set "dev" */
enum {
	KXFER_A_DEV_UNSPEC,
	KXFER_A_DEV_NAME,			/* string */
	KXFER_A_DEV_NODE_GUID,			/* u64, host byte order */
	KXFER_A_DEV_PORTS,			/* nest, KXFER_A_DEV_PORT... */
	KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN,	/* u32 */
	KXFER_A_DEV_MAX_SEND_SGE,		/* u32 */
	KXFER_A_DEV_MAX_QP_WR,			/* u32 */
	KXFER_A_DEV_MAX_MR_SIZE,		/* u64 */
	KXFER_A_DEV_PORT,			/* nest, attribute-set "port" */
	KXFER_A_DEV_PAD,

	__KXFER_A_DEV_MAX,
	KXFER_A_DEV_MAX = __KXFER_A_DEV_MAX - 1
};

/* attribute-set "port" */
enum {
	KXFER_A_PORT_UNSPEC,
	KXFER_A_PORT_NUM,		/* u32 */
	KXFER_A_PORT_STATE,		/* u32, IBTA port state */
	KXFER_A_PORT_LINK_LAYER,	/* u32, enum kxfer_link_layer */
	KXFER_A_PORT_ACTIVE_MTU,	/* u32, bytes */
	KXFER_A_PORT_GID_TBL_LEN,	/* u32 */
	KXFER_A_PORT_NETDEV,		/* string, bound net device if any */

	__KXFER_A_PORT_MAX,
	KXFER_A_PORT_MAX = __KXFER_A_PORT_MAX - 1
};

/* attribute-set "pool" */
enum {
	KXFER_A_POOL_UNSPEC,
	KXFER_A_POOL_NAME,		/* string */
	KXFER_A_POOL_SIZE,		/* u64, bytes */
	KXFER_A_POOL_OWNER,		/* u32, uid */
	KXFER_A_POOL_GROUP,		/* u32, gid */
	KXFER_A_POOL_MODE,		/* u32, 0..0777 */
	KXFER_A_POOL_NUMA_NODE,		/* s32, -1: no preference */
	KXFER_A_POOL_CHUNKS,		/* nest, KXFER_A_POOL_CHUNK... */
	KXFER_A_POOL_CHUNK,		/* nest, attribute-set "chunk" */
	KXFER_A_POOL_ATTACH_COUNT,	/* u32 */
	KXFER_A_POOL_EXPORT_COUNT,	/* u32 */
	KXFER_A_POOL_DEVICES,		/* nest, KXFER_A_POOL_DEVICE... */
	KXFER_A_POOL_DEVICE,		/* nest, attribute-set "pool-dev" */
	KXFER_A_POOL_ALLOC_NS,		/* u64, time to allocate and zero */
	KXFER_A_POOL_MAP_NS,		/* u64, time to DMA-map, all devices */
	KXFER_A_POOL_PAD,
	KXFER_A_POOL_KIND,		/* u32, enum kxfer_pool_kind */
	KXFER_A_POOL_PID,		/* u32, USER, DMABUF: the owner process */
	KXFER_A_POOL_COMM,		/* string, USER, DMABUF: its command */
	KXFER_A_POOL_NEAR,		/* string, a PCI address or RDMA device */

	__KXFER_A_POOL_MAX,
	KXFER_A_POOL_MAX = __KXFER_A_POOL_MAX - 1
};

/* Where a pool's memory comes from (KXFER_A_POOL_KIND) */
enum kxfer_pool_kind {
	KXFER_POOL_KIND_KERNEL,	/* allocated by kxfer: kxferctl pool add */
	KXFER_POOL_KIND_USER,	/* a process's own pages: KXFER_IOC_POOL_USER */
	KXFER_POOL_KIND_DMABUF,	/* a dma-buf: KXFER_IOC_POOL_DMABUF */
};

/*
 * attribute-set "chunk": how many chunks of one size class a pool holds
 * (a kernel pool's chunks are exactly that size, a process's pool's are
 * at least that size and below twice it)
 */
enum {
	KXFER_A_CHUNK_UNSPEC,
	KXFER_A_CHUNK_SIZE,		/* u64, bytes */
	KXFER_A_CHUNK_COUNT,		/* u32 */
	KXFER_A_CHUNK_PAD,

	__KXFER_A_CHUNK_MAX,
	KXFER_A_CHUNK_MAX = __KXFER_A_CHUNK_MAX - 1
};

/* attribute-set "pool-dev": one device a pool is DMA-mapped on */
enum {
	KXFER_A_POOL_DEV_UNSPEC,
	KXFER_A_POOL_DEV_NAME,		/* string */
	KXFER_A_POOL_DEV_MAP_NS,	/* u64 */
	KXFER_A_POOL_DEV_PAD,

	__KXFER_A_POOL_DEV_MAX,
	KXFER_A_POOL_DEV_MAX = __KXFER_A_POOL_DEV_MAX - 1
};

/* attribute-set "export" */
enum {
	KXFER_A_EXPORT_UNSPEC,
	KXFER_A_EXPORT_NAME,		/* string */
	KXFER_A_EXPORT_POOL,		/* string, pool name */
	KXFER_A_EXPORT_OFFSET,		/* u64, into the pool */
	KXFER_A_EXPORT_LEN,		/* u64; absent: to the pool's end */
	KXFER_A_EXPORT_PEER,		/* string; absent: any peer */
	KXFER_A_EXPORT_ACCESS,		/* u32, KXFER_ACCESS_* */
	KXFER_A_EXPORT_PAD,
	KXFER_A_EXPORT_FROM,		/* nest "prefix"; absent: any address */
	/* u32, made by this process through /dev/kxfer; absent: kxferctl */
	KXFER_A_EXPORT_PID,
	/*
	 * u32, enum kxfer_auth_policy; absent: optional.  REQUIRED: only
	 * authenticated sessions get the export, and with a PEER only those
	 * whose name was proven (KXFER_PEER_AUTH_OK)
	 */
	KXFER_A_EXPORT_AUTH,
	/*
	 * u64: the largest memory region page its memory allows, in bytes
	 * (4 KiB for scattered pages, up to 1 GiB); a device may take less
	 */
	KXFER_A_EXPORT_MR_PAGE,
	/* u32: memory regions of 512 such pages that cover it */
	KXFER_A_EXPORT_MRS,
	/*
	 * flag: capability-scoped (KXFER_EXPORT_TOKEN): peers find it only
	 * with its token, which no reply carries
	 */
	KXFER_A_EXPORT_SCOPED,

	__KXFER_A_EXPORT_MAX,
	KXFER_A_EXPORT_MAX = __KXFER_A_EXPORT_MAX - 1
};

/* attribute-set "listen" */
enum {
	KXFER_A_LISTEN_UNSPEC,
	KXFER_A_LISTEN_ADDR,		/* binary, 4 (IPv4) or 16 (IPv6) bytes */
	KXFER_A_LISTEN_PORT,		/* u16, host order; default KXFER_PORT */
	KXFER_A_LISTEN_ALLOW,		/* nest, attribute-set "prefix"; repeated */
	KXFER_A_LISTEN_STATE,		/* u32, enum kxfer_listen_state */
	KXFER_A_LISTEN_ACCEPTED,	/* u32, connections accepted */
	KXFER_A_LISTEN_REJECTED,	/* u32, connections refused */
	/* string: the key accepting sessions prove, unless their node has one */
	KXFER_A_LISTEN_KEY,
	KXFER_A_LISTEN_AUTH,		/* u32, enum kxfer_auth_policy */
	KXFER_A_LISTEN_AUTH_OK,		/* u32, sessions authenticated */
	KXFER_A_LISTEN_AUTH_FAILED,	/* u32, authentications that failed */
	/*
	 * flag: the sessions it accepts have polled send CQs, as KXFER_A_PEER_POLL
	 * gives a connecting session
	 */
	KXFER_A_LISTEN_POLL,
	/*
	 * u32, half-open sessions ended to make room for a node whose name
	 * has a key (max_half_open)
	 */
	KXFER_A_LISTEN_EVICTED,

	__KXFER_A_LISTEN_MAX,
	KXFER_A_LISTEN_MAX = __KXFER_A_LISTEN_MAX - 1
};

/*
 * attribute-set "prefix": an address prefix of a listener's allow list or
 * of an export's scope
 */
enum {
	KXFER_A_PREFIX_UNSPEC,
	KXFER_A_PREFIX_ADDR,		/* binary, 4 or 16 bytes */
	KXFER_A_PREFIX_LEN,		/* u8, bits */

	__KXFER_A_PREFIX_MAX,
	KXFER_A_PREFIX_MAX = __KXFER_A_PREFIX_MAX - 1
};

enum kxfer_listen_state {
	KXFER_LISTEN_ACTIVE,		/* listening */
	KXFER_LISTEN_WAITING,		/* its device is gone; retrying */
};

/* attribute-set "peer" */
enum {
	KXFER_A_PEER_UNSPEC,
	/* string: given by peer add, or the remote node's name */
	KXFER_A_PEER_NAME,
	KXFER_A_PEER_ADDR,		/* binary, 4 or 16 bytes */
	KXFER_A_PEER_PORT,		/* u16, host order */
	KXFER_A_PEER_QPS,		/* u32, 1..KXFER_MAX_QPS */
	KXFER_A_PEER_DEPTH,		/* u32, send queue depth per QP */
	KXFER_A_PEER_STATE,		/* u32, enum kxfer_peer_state */
	KXFER_A_PEER_ROLE,		/* u32, enum kxfer_peer_role */
	KXFER_A_PEER_DEV,		/* string, RDMA device in use */
	KXFER_A_PEER_PORT_NUM,		/* u32, its port */
	KXFER_A_PEER_REMOTE_NODE,	/* string */
	KXFER_A_PEER_RECONNECTS,	/* u32 */
	KXFER_A_PEER_LAST_ERROR,	/* string, why it last went down or
					 * its last attempt failed
					 */
	KXFER_A_PEER_LAST_ERRNO,	/* s32 */
	KXFER_A_PEER_KEEPALIVE_RTT_NS,	/* u64, round trip of the last answer */
	KXFER_A_PEER_UP_NS,		/* u64, time from connect to up, last time */
	KXFER_A_PEER_QP,		/* nest, attribute-set "qp"; repeated */
	KXFER_A_PEER_REMOTE_EXPORT,	/* nest, attribute-set "rexp"; repeated */
	KXFER_A_PEER_PAD,
	KXFER_A_PEER_ID,		/* u32, as in NOTIFY events */
	KXFER_A_PEER_STATS,		/* nest, attribute-set "stats" */
	/* u32, connector: connection attempts since it was last up */
	KXFER_A_PEER_ATTEMPTS,
	/* s64, connector, down: ns until the next attempt (< 0: overdue) */
	KXFER_A_PEER_NEXT_TRY_NS,
	/*
	 * string: the key a connecting session proves (peer add), or the key
	 * an accepting session proved
	 */
	KXFER_A_PEER_KEY,
	KXFER_A_PEER_AUTH,		/* u32, enum kxfer_peer_auth */
	KXFER_A_PEER_AUTH_FAILURES,	/* u32, handshakes failed, connecting side */
	/*
	 * flag: the session's send completions are reaped by its users'
	 * SUBMIT and REAP (polled CQs), not in softirq; given by peer add, or
	 * by the listener that accepted it (KXFER_A_LISTEN_POLL)
	 */
	KXFER_A_PEER_POLL,
	/*
	 * u64: the longest keepalive round trip of the session's life (a
	 * probe's answer waits behind the data the peer queued before it)
	 */
	KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS,
	/*
	 * u32: exports this session would be given but is not, as they need
	 * more memory regions on its device than a peer takes
	 * (KXFER_WIRE_MAX_MRS; the kernel log names them); 0 while down
	 */
	KXFER_A_PEER_EXPORTS_WITHHELD,
	/*
	 * u32: how long the session may go without a sign of life, in ms:
	 * keepalive_timeout_ms, or more while the probes' recent round trips
	 * say the peer's queue is deep (Documentation/wire-protocol.rst)
	 */
	KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS,
	/* u32: peer and remote handles of /dev/kxfer files on the session */
	KXFER_A_PEER_HANDLES,
	/*
	 * u32: exports withdrawn from the peer whose answer is awaited: it
	 * finishes the jobs it posted to them first (KXFER_WIRE_F_DRAIN)
	 */
	KXFER_A_PEER_DRAINING,
	/*
	 * nest, attribute-set "rexp"; repeated: an export of this node
	 * registered on the session, with its memory regions and their page
	 */
	KXFER_A_PEER_LOCAL_EXPORT,
	/*
	 * flag: the remote and local export lists are left out, as they do
	 * not fit one message (64 KiB for PEER_GET of one peer, a dump's
	 * message otherwise); lookups (KXFER_IOC_REMOTE_LOOKUP) still see
	 * every export
	 */
	KXFER_A_PEER_EXPORTS_OMITTED,
	/*
	 * u32: capability-scoped exports the remote advertised, which are
	 * counted here and not listed (KXFER_A_PEER_REMOTE_EXPORT)
	 */
	KXFER_A_PEER_REMOTE_SCOPED,
	/* flag: made on demand (KXFER_IOC_CONNECT, a connect rule) */
	KXFER_A_PEER_ON_DEMAND,
	/*
	 * u32, made on demand: seconds without a handle or a job after which
	 * it ends (its rule's idle)
	 */
	KXFER_A_PEER_IDLE_TIMEOUT,
	/* u32, made on demand: ms it has been without a handle or a job */
	KXFER_A_PEER_IDLE_MS,
	/*
	 * u32: a session of a peer over several rails: its rail (the
	 * connector's index, 0 the first; an accepting session that did not
	 * join one shows KXFER_MAX_RAILS)
	 */
	KXFER_A_PEER_RAIL,
	/*
	 * nest, attribute-set "rail"; repeated.  peer add: the addresses of
	 * the rails after the first (KXFER_A_PEER_ADDR); peer show of a
	 * connecting peer over rails: every rail, its state and counters
	 */
	KXFER_A_PEER_RAILS,
	/* u64: jobs of this session posted again on another rail */
	KXFER_A_PEER_FAILOVERS,
	/* u64: jobs this session took from a failed rail */
	KXFER_A_PEER_TAKEN,
	/* u64: of a connecting peer over rails, jobs striped over its rails */
	KXFER_A_PEER_STRIPED,

	__KXFER_A_PEER_MAX,
	KXFER_A_PEER_MAX = __KXFER_A_PEER_MAX - 1
};

/* attribute-set "rail": one rail of a peer over several (DESIGN §13) */
enum {
	KXFER_A_RAIL_UNSPEC,
	KXFER_A_RAIL_INDEX,		/* u32, 0 the first */
	KXFER_A_RAIL_ADDR,		/* binary, 4 or 16 bytes */
	KXFER_A_RAIL_PORT,		/* u16, host order; peer add: default
					 * KXFER_A_PEER_PORT's
					 */
	KXFER_A_RAIL_STATE,		/* u32, enum kxfer_peer_state */
	KXFER_A_RAIL_DEV,		/* string, its RDMA device while connected */
	KXFER_A_RAIL_LAST_ERROR,	/* string */
	KXFER_A_RAIL_RECONNECTS,	/* u32 */
	KXFER_A_RAIL_JOBS,		/* u64, jobs started on it */
	KXFER_A_RAIL_BYTES,		/* u64, their bytes */
	KXFER_A_RAIL_OK,		/* u64, jobs that completed on it */
	KXFER_A_RAIL_FAILOVERS,		/* u64, jobs moved off it when it failed */
	KXFER_A_RAIL_TAKEN,		/* u64, jobs it took from failed rails */
	KXFER_A_RAIL_PAD,
	KXFER_A_RAIL_JOINED,		/* flag: this connection joined the session */
	KXFER_A_RAIL_FENCED,		/* u64, its failures the peer fenced */
	KXFER_A_RAIL_SHARES,		/* u64, shares of striped jobs it took */

	__KXFER_A_RAIL_MAX,
	KXFER_A_RAIL_MAX = __KXFER_A_RAIL_MAX - 1
};

/* attribute-set "qp": one queue pair of a session */
enum {
	KXFER_A_QP_UNSPEC,
	KXFER_A_QP_INDEX,		/* u32 */
	KXFER_A_QP_NUM,			/* u32, local QPN */
	KXFER_A_QP_REMOTE_NUM,		/* u32, remote QPN */
	KXFER_A_QP_STATE,		/* u32, IB QP state: 0 reset .. 6 error */
	/* statistics (KXFER_CMD_STATS_GET), since the session was made */
	KXFER_A_QP_PARTS,		/* u64, jobs (or their stripes) started */
	KXFER_A_QP_BYTES,		/* u64 */
	KXFER_A_QP_WRS,			/* u64, work requests posted */
	KXFER_A_QP_DOORBELLS,		/* u64, ib_post_send() calls */
	KXFER_A_QP_PAD,
	KXFER_A_QP_SIGNALED,		/* u64, work requests posted signaled */
	KXFER_A_QP_HANDOFFS,		/* u64, posts made on the QP's home CPU */

	__KXFER_A_QP_MAX,
	KXFER_A_QP_MAX = __KXFER_A_QP_MAX - 1
};

/* attribute-set "rexp": an export the remote advertised */
enum {
	KXFER_A_REXP_UNSPEC,
	KXFER_A_REXP_NAME,		/* string */
	KXFER_A_REXP_LEN,		/* u64 */
	KXFER_A_REXP_ACCESS,		/* u32, KXFER_ACCESS_* */
	KXFER_A_REXP_GEN,		/* u64, generation */
	KXFER_A_REXP_MRS,		/* u32, memory regions covering it */
	KXFER_A_REXP_PAD,
	/* u64, bytes of its memory regions' page (local exports only) */
	KXFER_A_REXP_MR_PAGE,

	__KXFER_A_REXP_MAX,
	KXFER_A_REXP_MAX = __KXFER_A_REXP_MAX - 1
};

/*
 * attribute-set "stats": a session's jobs since it was made
 * (KXFER_CMD_STATS_GET); every counter is a u64.  SEGS / WRS is the
 * planner's coalescing ratio.
 *
 * LAT_QUEUE and LAT_DONE are histograms of the jobs that completed after
 * being posted: the time from SUBMIT to the first work request posted
 * (waiting behind a FENCE, for send-queue slots or for the end of the
 * SUBMIT), and from then to the completion event.  Bucket 0 counts
 * times under 2 us, bucket i (1 <= i < KXFER_LAT_BUCKETS - 1) times in
 * [2^i, 2^(i+1)) us, the last one everything longer.
 */
#define KXFER_LAT_BUCKETS	24

enum {
	KXFER_A_STATS_UNSPEC,
	KXFER_A_STATS_JOBS,		/* accepted */
	KXFER_A_STATS_BYTES,		/* of the accepted jobs */
	KXFER_A_STATS_SEGS,		/* segments submitted */
	KXFER_A_STATS_WRS,		/* work requests planned for them */
	KXFER_A_STATS_OK,		/* jobs that completed successfully */
	KXFER_A_STATS_NOTIFY_SENT,	/* NOTIFY jobs acknowledged */
	KXFER_A_STATS_NOTIFY_RECV,	/* notifications from the peer */
	KXFER_A_STATS_ERR_FLUSH,	/* jobs ended by the session going down */
	KXFER_A_STATS_ERR_ACCESS,	/* remote refused: key, range, access */
	KXFER_A_STATS_ERR_TIMEOUT,	/* transport retries exhausted */
	KXFER_A_STATS_ERR_REMOTE,	/* remote operation or request error */
	KXFER_A_STATS_ERR_STALE,	/* export withdrawn while they waited */
	KXFER_A_STATS_ERR_OTHER,
	KXFER_A_STATS_PAD,
	KXFER_A_STATS_NOTIFY_IMM,	/* of NOTIFY_SENT, by WRITE_WITH_IMM */
	KXFER_A_STATS_LAT_QUEUE,	/* binary: __u64[KXFER_LAT_BUCKETS] */
	KXFER_A_STATS_LAT_DONE,		/* binary: __u64[KXFER_LAT_BUCKETS] */
	/* a polled session's completions reaped by users' SUBMIT and REAP */
	KXFER_A_STATS_POLLED,		/* u64 */
	/* ... and by the session's poll work, when no user polled */
	KXFER_A_STATS_POLLED_WORK,	/* u64 */

	__KXFER_A_STATS_MAX,
	KXFER_A_STATS_MAX = __KXFER_A_STATS_MAX - 1
};

/*
 * attribute-set "key": a secret two nodes share to authenticate sessions
 * (DESIGN §10).  The secret is written, never read: replies carry the
 * name, the node it is bound to and who uses it.
 */
enum {
	KXFER_A_KEY_UNSPEC,
	KXFER_A_KEY_NAME,		/* string */
	/* binary, KXFER_KEY_MIN_LEN..KXFER_KEY_MAX_LEN bytes; requests only */
	KXFER_A_KEY_SECRET,
	/*
	 * string: listeners authenticate sessions from the node of this name
	 * with this key (rather than the listener's); absent: none
	 */
	KXFER_A_KEY_PEER,
	KXFER_A_KEY_GEN,		/* u32, 1, one more at each KEY_SET */
	/* nest, attribute-set "listen" (addr, port); one per listener using it */
	KXFER_A_KEY_LISTENER,
	KXFER_A_KEY_USER,		/* string, a connecting peer using it; repeated */

	__KXFER_A_KEY_MAX,
	KXFER_A_KEY_MAX = __KXFER_A_KEY_MAX - 1
};

/*
 * attribute-set "connect": a rule of the policy under which users of
 * /dev/kxfer may have sessions made on demand (KXFER_IOC_CONNECT)
 */
enum {
	KXFER_A_CONNECT_UNSPEC,
	KXFER_A_CONNECT_PREFIX,		/* nest, attribute-set "prefix" */
	KXFER_A_CONNECT_PORT,		/* u16, host order; default KXFER_PORT */
	KXFER_A_CONNECT_KEY,		/* string: the key its sessions prove */
	KXFER_A_CONNECT_QPS,		/* u32, 1..KXFER_MAX_QPS; default 1 */
	/* u32, seconds unused before a session ends, 1..86400; default 60 */
	KXFER_A_CONNECT_IDLE,
	KXFER_A_CONNECT_MADE,		/* u32, sessions made under it */
	KXFER_A_CONNECT_REFUSED,	/* u32, requests it saw refused: ENOSPC */

	__KXFER_A_CONNECT_MAX,
	KXFER_A_CONNECT_MAX = __KXFER_A_CONNECT_MAX - 1
};

#define KXFER_CONNECT_IDLE_DEFAULT	60
#define KXFER_CONNECT_IDLE_MAX		86400

/* Bytes of a key's secret (KXFER_A_KEY_SECRET) */
#define KXFER_KEY_MIN_LEN	16
#define KXFER_KEY_MAX_LEN	64

/* Authentication a listener or an export asks for */
enum kxfer_auth_policy {
	KXFER_AUTH_OPTIONAL,		/* when both sides hold a key */
	KXFER_AUTH_REQUIRED,		/* only authenticated sessions */
};

/* Whether a session is authenticated (KXFER_A_PEER_AUTH) */
enum kxfer_peer_auth {
	KXFER_PEER_AUTH_NONE,		/* not authenticated (no key) */
	KXFER_PEER_AUTH_PENDING,	/* the handshake is under way */
	/* both proved the key of the session's name */
	KXFER_PEER_AUTH_OK,
	/*
	 * accepting side: the peer proved the listener's key, which every
	 * node that may connect holds; its name is claimed, not proven
	 */
	KXFER_PEER_AUTH_SHARED,
	KXFER_PEER_AUTH_FAILED,		/* the last handshake failed */
};

enum kxfer_peer_state {
	KXFER_PEER_CONNECTING,		/* resolving, connecting, exchanging */
	KXFER_PEER_UP,			/* exports exchanged, usable */
	KXFER_PEER_DOWN,		/* failed; reconnect pending (backoff) */
	KXFER_PEER_CLOSING,		/* being deleted */
};

enum kxfer_peer_role {
	KXFER_PEER_CONNECTOR,		/* made by peer add; reconnects */
	KXFER_PEER_ACCEPTOR,		/* accepted by a listener */
};

#define KXFER_PORT		19875	/* default rdma_cm port (TCP port space) */
#define KXFER_MAX_QPS		16
#define KXFER_MAX_RAILS		8	/* addresses of one peer (DESIGN §13) */

enum {
	KXFER_CMD_UNSPEC,
	KXFER_CMD_DEV_GET,		/* do (KXFER_A_DEV_NAME) and dump */
	KXFER_CMD_DEV_ADD_NTF,		/* monitor: device added (dev set) */
	KXFER_CMD_DEV_DEL_NTF,		/* monitor: device removed (name) */
	KXFER_CMD_POOL_NEW,		/* admin */
	KXFER_CMD_POOL_DEL,		/* admin, KXFER_A_POOL_NAME */
	KXFER_CMD_POOL_GET,		/* do (KXFER_A_POOL_NAME) and dump */
	KXFER_CMD_EXPORT_NEW,		/* admin */
	KXFER_CMD_EXPORT_DEL,		/* admin, KXFER_A_EXPORT_NAME */
	KXFER_CMD_EXPORT_GET,		/* do (KXFER_A_EXPORT_NAME) and dump */
	KXFER_CMD_POOL_ADD_NTF,		/* monitor: pool created (pool set) */
	KXFER_CMD_POOL_DEL_NTF,		/* monitor: pool deleted (name) */
	KXFER_CMD_EXPORT_ADD_NTF,	/* monitor: export created (export set) */
	KXFER_CMD_EXPORT_DEL_NTF,	/* monitor: export deleted (name) */
	KXFER_CMD_LISTEN_NEW,		/* admin */
	KXFER_CMD_LISTEN_DEL,		/* admin, ADDR and PORT */
	KXFER_CMD_LISTEN_GET,		/* dump */
	KXFER_CMD_PEER_NEW,		/* admin */
	KXFER_CMD_PEER_DEL,		/* admin, KXFER_A_PEER_NAME */
	KXFER_CMD_PEER_GET,		/* do (KXFER_A_PEER_NAME) and dump */
	/* monitor: NAME, STATE, ROLE, LAST_ERROR, LAST_ERRNO */
	KXFER_CMD_PEER_STATE_NTF,
	KXFER_CMD_PEER_DEL_NTF,		/* monitor: session gone (NAME) */
	/* do (KXFER_A_PEER_NAME) and dump: NAME, ID, STATS, QP (counters) */
	KXFER_CMD_STATS_GET,
	KXFER_CMD_KEY_NEW,		/* admin: NAME, SECRET; PEER */
	KXFER_CMD_KEY_SET,		/* admin: NAME, SECRET: a new secret */
	KXFER_CMD_KEY_DEL,		/* admin: NAME, a key nothing uses */
	KXFER_CMD_KEY_GET,		/* do (NAME) and dump; never the secret */
	KXFER_CMD_CONNECT_NEW,		/* admin: PREFIX; PORT, KEY, QPS, IDLE */
	KXFER_CMD_CONNECT_DEL,		/* admin: PREFIX; PORT */
	KXFER_CMD_CONNECT_GET,		/* dump */

	__KXFER_CMD_MAX,
	KXFER_CMD_MAX = __KXFER_CMD_MAX - 1
};

#endif /* _UAPI_LINUX_KXFER_H */
