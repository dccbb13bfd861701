/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libkxfer: the userspace side of /dev/kxfer, the kxfer data plane.
 *
 * A service opens the device once, attaches and maps the pools it works
 * on, looks up its peers and their remote exports by name, and then
 * submits transfer jobs and reaps their completions (and, with
 * kxfer_notify_subscribe(), the notifications peers send it):
 *
 *	struct kxfer *kx;
 *	struct kxfer_pool_map pool;
 *	struct kxfer_remote_lookup rx;
 *	struct kxfer_segment seg = { .local_off = 0, .remote_off = 4096,
 *				     .len = 8192 };
 *	struct kxfer_job job;
 *	struct kxfer_event ev;
 *	uint32_t peer;
 *
 *	kxfer_open(&kx);
 *	kxfer_pool_attach(kx, "kv", &pool);	   (pool.base is the pool)
 *	kxfer_peer_lookup(kx, "decode0", &peer, NULL);
 *	kxfer_remote_lookup(kx, peer, "kv", &rx);
 *	kxfer_job_write(&job, pool.handle, peer, rx.handle, &seg, 1, 42);
 *	kxfer_submit(kx, &job, 1, NULL);
 *	kxfer_reap(kx, &ev, 1, 1, -1, 0);	   (ev.user_data == 42)
 *
 * Conventions:
 *  - Every function that can fail returns a negative errno value
 *    (-ENOENT, ...) and never relies on, nor promises anything about,
 *    the global errno.
 *  - kxfer_submit() and kxfer_reap() neither allocate nor lock: each is
 *    one ioctl (kxfer_submit() more than one only to split a batch
 *    larger than the module's max_jobs_per_submit); kxfer_reap() none
 *    at all while events are ready in the mapped ring
 *    (kxfer_ring_mapped()).
 *  - A struct kxfer may be shared by threads: everything but
 *    kxfer_close() may be called concurrently.  The kernel serialises
 *    what needs to be.
 *  - Segment arrays are read by the kernel during KXFER_IOC_SUBMIT; the
 *    memory may be reused once kxfer_submit() returns.
 *
 * The structures of the kernel API (struct kxfer_job, kxfer_segment,
 * kxfer_event, kxfer_query, kxfer_remote_lookup) are used as they are,
 * from <linux/kxfer.h>.
 */
#ifndef LIBKXFER_KXFER_H
#define LIBKXFER_KXFER_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <linux/kxfer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open /dev/kxfer: a context owning its attachments and its jobs. */
struct kxfer;

/**
 * struct kxfer_pool_map - a pool attached and mapped by kxfer_pool_attach()
 * @handle: the attachment handle: struct kxfer_job.pool
 * @size: the pool's size in bytes; segment local offsets are in [0, size)
 * @base: the whole pool, mapped shared read-write; local offset o is
 *	at (char *)base + o
 */
struct kxfer_pool_map {
	uint32_t handle;
	uint64_t size;
	void *base;
};

/**
 * kxfer_open() - open /dev/kxfer and read the module's limits
 * @kx: out, the new context
 *
 * Opens the device O_RDWR | O_CLOEXEC and runs KXFER_IOC_QUERY once;
 * the answer is kept (see kxfer_limits()).
 *
 * Return: 0; -ENOENT if there is no /dev/kxfer (module not loaded),
 * -EACCES if its mode forbids, -EPROTONOSUPPORT if the module's API
 * version is older than the one this library was built against, -ENOMEM,
 * or another open(2) or ioctl(2) error.
 */
int kxfer_open(struct kxfer **kx);

/**
 * kxfer_close() - close a context
 * @kx: from kxfer_open(), or NULL
 *
 * The kernel detaches the context's pools and completes or flushes its
 * jobs in flight; their events are lost.  Pool mappings are not
 * touched: a mapping stays valid until unmapped (kxfer_pool_detach()
 * before kxfer_close() does both).
 */
void kxfer_close(struct kxfer *kx);

/**
 * kxfer_limits() - the module's API version and limits
 * @kx: the context
 *
 * Return: the KXFER_IOC_QUERY answer read by kxfer_open(); its
 * pool_mem_used is a snapshot of that moment.  A limit the module does
 * not report is 0.
 */
const struct kxfer_query *kxfer_limits(struct kxfer *kx);

/**
 * kxfer_fd() - the context's file descriptor
 * @kx: the context
 *
 * For poll(2) and epoll: POLLIN means events are ready for kxfer_reap().
 * Do not close it.
 *
 * Return: the descriptor.
 */
int kxfer_fd(struct kxfer *kx);

/**
 * kxfer_pool_attach() - attach a pool by name and map it
 * @kx: the context
 * @name: the pool's name, 1..KXFER_NAME_MAX - 1 characters
 * @out: out, handle, size and mapping
 *
 * KXFER_IOC_POOL_ATTACH, then mmap(2) of the whole pool, PROT_READ |
 * PROT_WRITE, MAP_SHARED.  If the mapping fails the pool is detached
 * again.
 *
 * Return: 0; -EINVAL (empty name), -ENAMETOOLONG, -ENOENT (no such pool),
 * -EACCES (its owner, group and mode refuse the caller), -EMFILE (the
 * context has max_pools_per_fd attached), -EOVERFLOW (does not fit the
 * address space), or an mmap(2) error.
 */
int kxfer_pool_attach(struct kxfer *kx, const char *name,
		      struct kxfer_pool_map *out);

/**
 * kxfer_pool_detach() - unmap and detach a pool
 * @kx: the context
 * @map: from kxfer_pool_attach(); zeroed on success
 *
 * Jobs in flight on the pool keep it alive in the kernel until they
 * complete, but their handle is gone: submit nothing more on it.
 *
 * Return: 0, or the first error of munmap(2) and KXFER_IOC_POOL_DETACH
 * (-ENOENT: not attached by this context).
 */
int kxfer_pool_detach(struct kxfer *kx, struct kxfer_pool_map *map);

/**
 * kxfer_pool_register() - make a pool of memory the caller already has
 * @kx: the context; the pool belongs to it
 * @name: the pool's name, unique among pools, 1..KXFER_NAME_MAX - 1
 *	characters
 * @addr: the memory, page aligned (malloc()ed memory rarely is: use
 *	mmap(2), posix_memalign() or aligned_alloc() with the page size)
 * @len: its bytes, a non-zero multiple of the page size
 * @handle: out, the pool's handle: struct kxfer_job.pool, and
 *	kxfer_export_add()'s pool; local offset o is at (char *)addr + o
 *
 * KXFER_IOC_POOL_USER: the kernel pins the pages (charged to
 * RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK) and uses them in
 * place, without a copy.  Keep the memory mapped while the pool exists;
 * kxfer_pool_unregister() or kxfer_close() ends the pool, and with it
 * its exports.
 *
 * Return: 0; -EINVAL (name, alignment, length), -ENAMETOOLONG, -EEXIST
 * (name in use), -EFAULT (not all mapped), -EACCES (not all writable),
 * -EOPNOTSUPP (I/O or DAX memory), -ENOMEM (RLIMIT_MEMLOCK), -ENOSPC
 * (the module's pool_mem_max or user_pool_mem_max), -EPERM (the
 * administrator forbids pools of user memory), -EMFILE.
 */
int kxfer_pool_register(struct kxfer *kx, const char *name, void *addr,
			uint64_t len, uint32_t *handle);

/**
 * kxfer_pool_register_dmabuf() - make a pool of a dma-buf
 * @kx: the context; the pool belongs to it
 * @name: as kxfer_pool_register()'s
 * @fd: the dma-buf (GPU memory exported as a dma-buf, a udmabuf, a
 *	dma-heap buffer); it may be closed once this returns
 * @offset: first byte of the buffer, page aligned
 * @len: bytes, a non-zero multiple of the page size, within the buffer
 * @dev: NULL or "" to use the buffer's pages on every device; the name of
 *	an RDMA device that does DMA to import it for that device only (GPU
 *	memory, which has no pages)
 * @handle: out, as kxfer_pool_register()'s
 *
 * Return: 0; -EBADF, -EINVAL (not a dma-buf, a range beyond it, name,
 * alignment), -ENAMETOOLONG, -ENODEV (no such device), -EOPNOTSUPP (the
 * buffer has no pages and the device cannot do DMA: see the kernel log),
 * -EEXIST, -ENOSPC, -EPERM, -EMFILE as kxfer_pool_register().
 */
int kxfer_pool_register_dmabuf(struct kxfer *kx, const char *name, int fd,
			       uint64_t offset, uint64_t len, const char *dev,
			       uint32_t *handle);

/**
 * kxfer_pool_unregister() - end a pool made by kxfer_pool_register() or
 *	kxfer_pool_register_dmabuf()
 * @kx: the context
 * @handle: the pool's handle
 *
 * Its exports are withdrawn first: each peer refuses new jobs to them
 * (-ESTALE) and lets those it posted finish; this returns once every
 * peer said none is left in flight (or its session ended), and no peer
 * can reach the memory any more.  The kernel gives the memory back once
 * the jobs in flight on the pool are done.
 *
 * Return: 0; -ENOENT (no such handle).
 */
int kxfer_pool_unregister(struct kxfer *kx, uint32_t handle);

/**
 * kxfer_pool_unregister_flags() - kxfer_pool_unregister() with flags
 * @kx: the context
 * @handle: the pool's handle
 * @flags: 0, or KXFER_POOL_DETACH_NOWAIT: return at once, the kernel
 *	finishes the withdrawal (peers may still write the memory until it
 *	is done: keep it, or do not reuse it, for the drain's bound)
 *
 * Return: 0; -EINVAL (flags), -ENOENT (no such handle).
 */
int kxfer_pool_unregister_flags(struct kxfer *kx, uint32_t handle,
				uint32_t flags);

/**
 * kxfer_export_add() - export a range of a pool the context made
 * @kx: the context
 * @e: the export, filled with kxfer_export_init() and then, to scope it
 *	to addresses, its from_* fields
 *
 * KXFER_IOC_EXPORT_ADD: peers whose session matches see it under
 * @e->name (kxfer_remote_lookup() on their side).
 *
 * Return: 0; -EINVAL, -ENOENT (no such pool), -EPERM (the context did
 * not make the pool, or the administrator forbids it), -ERANGE, -EEXIST.
 */
int kxfer_export_add(struct kxfer *kx, const struct kxfer_export_add *e);

/**
 * kxfer_export_add_subscribe() - export, subscribed to its notifications
 * @kx: the context
 * @e: as kxfer_export_add()'s
 * @sub: out, the subscription's handle (struct kxfer_event.sub), as
 *	kxfer_notify_subscribe() gives; kxfer_notify_unsubscribe() ends it
 *
 * The subscription is live before any peer learns of the export, so that
 * a peer that notifies as soon as it sees the export loses nothing.
 *
 * Return: as kxfer_export_add(); -EMFILE (too many subscriptions).
 */
int kxfer_export_add_subscribe(struct kxfer *kx,
			       const struct kxfer_export_add *e,
			       uint32_t *sub);

/**
 * kxfer_export_add_token() - a capability-scoped export
 * @kx: the context
 * @e: as kxfer_export_add()'s (its token is not used)
 * @token: out, the export's token: KXFER_TOKEN_LEN random bytes
 *	(getrandom(2)) to give out of band to those who may reach it
 * @sub: if not NULL, the file subscribes atomically as with
 *	kxfer_export_add_subscribe(), and this is the subscription's handle
 *
 * KXFER_IOC_EXPORT_ADD with KXFER_EXPORT_TOKEN: a peer's process finds
 * the export only with kxfer_remote_lookup_token() and this token; any
 * other lookup fails with -ENOENT, as for a name that does not exist.
 * Withdrawing the export revokes the token.
 *
 * Return: as kxfer_export_add() and kxfer_export_add_subscribe(); an
 * errno of getrandom(2).
 */
int kxfer_export_add_token(struct kxfer *kx,
			   const struct kxfer_export_add *e,
			   uint8_t token[KXFER_TOKEN_LEN], uint32_t *sub);

/**
 * kxfer_export_init() - fill an export, every other field zero
 * @e: the export
 * @name: its name, 1..KXFER_NAME_MAX - 1 characters
 * @pool: the pool's handle
 * @offset: first byte in the pool
 * @len: bytes
 * @peer: the one peer session allowed, or NULL for any
 * @access: KXFER_ACCESS_* bits
 *
 * Return: 0; -EINVAL, -ENAMETOOLONG.
 */
int kxfer_export_init(struct kxfer_export_add *e, const char *name,
		      uint32_t pool, uint64_t offset, uint64_t len,
		      const char *peer, uint32_t access);

/**
 * kxfer_export_del() - withdraw an export the context made
 * @kx: the context
 * @name: the export's name
 *
 * Each peer refuses new jobs to it (-ESTALE) and lets those it posted
 * finish; this returns once every peer said none is left in flight (or
 * its session ended), and every peer's key is invalid then.
 *
 * Return: 0; -EINVAL, -ENAMETOOLONG, -ENOENT, -EPERM (not this
 * context's).
 */
int kxfer_export_del(struct kxfer *kx, const char *name);

/**
 * kxfer_export_del_flags() - kxfer_export_del() with flags
 * @kx: the context
 * @name: the export's name
 * @flags: 0, or KXFER_EXPORT_DEL_NOWAIT: return at once, the kernel
 *	finishes the withdrawal
 *
 * Return: as kxfer_export_del().
 */
int kxfer_export_del_flags(struct kxfer *kx, const char *name,
			   uint32_t flags);

/**
 * kxfer_peer_lookup() - find a peer session by name
 * @kx: the context
 * @name: the peer's name (kxferctl peer show)
 * @handle: out, the peer handle: struct kxfer_job.peer
 * @state: out, enum kxfer_peer_state at lookup time; may be NULL
 *
 * The handle stays valid across reconnects; jobs submitted while the
 * session is not up fail with -ENOTCONN.  Each call makes a new handle,
 * which holds the session until kxfer_peer_release() or kxfer_close().
 *
 * Return: 0; -EINVAL, -ENAMETOOLONG, -ENOENT (no such peer), -EMFILE
 * (the context holds too many peer handles).
 */
int kxfer_peer_lookup(struct kxfer *kx, const char *name, uint32_t *handle,
		      uint32_t *state);

/**
 * kxfer_remote_lookup() - find an export a peer advertised
 * @kx: the context
 * @peer: from kxfer_peer_lookup()
 * @export_name: the export's name on the remote node
 * @out: out, the kernel's answer: handle (struct kxfer_job.remote),
 *	access (KXFER_ACCESS_*), len (remote offsets are in [0, len)), gen
 *
 * The handle names the export as it was at lookup time (@out->gen), on
 * the session's connection of that time: once the remote withdraws or
 * re-creates it, or the session reconnects (other keys; a peer that
 * restarted may give the name to another export), jobs on the handle
 * fail with -ESTALE and the export must be looked up again.  Release
 * handles no longer used (kxfer_remote_release()).
 *
 * Return: 0; -EINVAL, -ENAMETOOLONG, -ENOENT (unknown peer handle, or
 * the peer advertised no such export), -EMFILE.
 */
int kxfer_remote_lookup(struct kxfer *kx, uint32_t peer,
			const char *export_name,
			struct kxfer_remote_lookup *out);

/**
 * kxfer_remote_lookup_token() - find a capability-scoped export
 * @kx: the context
 * @peer: from kxfer_peer_lookup()
 * @export_name: the export's name on the remote node
 * @token: the token its owner gave out (kxfer_export_add_token())
 * @out: as kxfer_remote_lookup()'s
 *
 * Return: as kxfer_remote_lookup(); -ENOENT also for a wrong token, or
 * an export made without one.
 */
int kxfer_remote_lookup_token(struct kxfer *kx, uint32_t peer,
			      const char *export_name,
			      const uint8_t token[KXFER_TOKEN_LEN],
			      struct kxfer_remote_lookup *out);

/**
 * kxfer_connect() - a session to an address, made on demand if need be
 * @kx: the context
 * @addr: the remote node's address, IPv4 or IPv6 text
 * @port: its listener's port, 0 for KXFER_PORT
 * @out: out, the kernel's answer: handle (a peer handle, as
 *	kxfer_peer_lookup() gives), state, qps and the session's name
 *
 * KXFER_IOC_CONNECT: a session to that address (an administrator's, one
 * made on demand, or one the node there opened) if there is one, else
 * one the kernel makes, if the administrator's policy allows it
 * (kxferctl connect allow); it need not be up yet.  One made on demand
 * ends once no handle names it and no job uses it for the policy's idle
 * time: release the handle (kxfer_peer_release()) when done.
 *
 * Return: 0; -EINVAL (not an address; or one of no other node), -EACCES
 * (the policy does not allow it), -ENOSPC (too many sessions made on
 * demand), -EMFILE, -ENOMEM; -ENOTTY from a module without it
 * (KXFER_FEAT_CONNECT).
 */
int kxfer_connect(struct kxfer *kx, const char *addr, uint16_t port,
		  struct kxfer_connect *out);

/**
 * kxfer_peer_release() - give back a peer handle
 * @kx: the context
 * @handle: from kxfer_peer_lookup()
 *
 * Jobs accepted on it go on; remote handles looked up through it stay.
 *
 * Return: 0; -ENOENT (no such peer handle).
 */
int kxfer_peer_release(struct kxfer *kx, uint32_t handle);

/**
 * kxfer_remote_release() - give back a remote handle
 * @kx: the context
 * @handle: from kxfer_remote_lookup()
 *
 * Return: 0; -ENOENT (no such remote handle).
 */
int kxfer_remote_release(struct kxfer *kx, uint32_t handle);

/**
 * kxfer_submit() - submit jobs
 * @kx: the context
 * @jobs: @n jobs (kxfer_job_write(), kxfer_job_read())
 * @n: how many; more than the module's max_jobs_per_submit are
 *	submitted in several calls
 * @accepted: out, how many jobs, from the first, were accepted; may be
 *	NULL
 *
 * Each accepted job gets exactly one completion event (kxfer_reap()).
 * When a job is refused, nothing after it was looked at: the caller
 * fixes or drops jobs[*accepted] and submits the rest again.
 *
 * Return: 0 if all @n jobs were accepted (also for @n == 0); else the
 * negative errno of jobs[*accepted], which was refused: -EAGAIN when the
 * context's in-flight bound is reached (reap, then submit the rest);
 * -EINVAL (bad op, flags, reserved field, segment count, zero-length
 * segment), -EFAULT (unreadable job or segment array), -ERANGE (a
 * segment outside the pool or the export), -EACCES (the export does not
 * grant the op), -ENOENT (unknown pool, peer or remote handle),
 * -ENOTCONN (session not up), -ESTALE (remote handle outdated),
 * -ENOMEM; -EPROTO if the kernel's answer is inconsistent.
 */
int kxfer_submit(struct kxfer *kx, const struct kxfer_job *jobs,
		 unsigned int n, unsigned int *accepted);

/**
 * kxfer_submit_raw() - one KXFER_IOC_SUBMIT, exactly as given
 * @kx: the context
 * @s: the ioctl's argument, passed unchanged; the kernel's answer is
 *	left in it (accepted, error)
 *
 * For tests and diagnosis of the ioctl itself; services use
 * kxfer_submit().
 *
 * Return: 0 if the ioctl returned 0, else -errno.
 */
int kxfer_submit_raw(struct kxfer *kx, struct kxfer_submit *s);

/**
 * kxfer_reap() - take completion events
 * @kx: the context
 * @ev: room for @max events
 * @max: >= 1
 * @min: wait until at least this many are ready (<= @max)
 * @timeout_ns: longest wait; 0 does not wait, < 0 waits for ever
 * @flags: KXFER_REAP_* (KXFER_REAP_BUSY_POLL)
 *
 * Return: the number of events written at @ev, which is below @min
 * only if the timeout expired; -EINTR if a signal came first (events
 * already taken are kept for the next call), -EINVAL, -EFAULT.
 */
int kxfer_reap(struct kxfer *kx, struct kxfer_event *ev, unsigned int max,
	       unsigned int min, int64_t timeout_ns, unsigned int flags);

/**
 * kxfer_ring_mapped() - whether kxfer_reap() reads the mapped event ring
 * @kx: the context
 *
 * kxfer_open() maps the file's event ring when the module has it
 * (KXFER_FEAT_RING) and LIBKXFER_NO_RING=1 is not in the environment;
 * kxfer_reap() and kxfer_reap_msgs() then take ready events from it
 * without a system call and call KXFER_IOC_REAP only to wait.  Their
 * results are the same either way, except that a bad @ev or @msgs
 * pointer faults in the caller instead of returning -EFAULT.  A caller
 * that uses KXFER_IOC_REAP itself on kxfer_fd() still can: it takes from
 * the same ring.
 *
 * Return: 1 if the ring is mapped, else 0.
 */
int kxfer_ring_mapped(struct kxfer *kx);

/**
 * kxfer_notify_subscribe() - receive the notifications of a local export
 * @kx: the context
 * @export_name: a local export (kxferctl export show)
 * @handle: out, the subscription: struct kxfer_event.sub of its events,
 *	and the argument of kxfer_notify_unsubscribe()
 *
 * From now on every job a peer submits with KXFER_JOB_NOTIFY to this
 * export gives this context one KXFER_EV_NOTIFY event (kxfer_reap()),
 * after all of that job's data is visible in the pool.  Subscribe before
 * telling the peer where to write: notifications that came earlier are
 * not kept.
 *
 * The subscription is by name: it also covers an export deleted and
 * added again under the same name.
 *
 * Return: 0; -EINVAL, -ENAMETOOLONG, -ENOENT (no such export), -EACCES
 * (the caller may not attach the export's pool), -EMFILE (too many
 * subscriptions), -ENOMEM.
 */
int kxfer_notify_subscribe(struct kxfer *kx, const char *export_name,
			   uint32_t *handle);

/**
 * kxfer_notify_unsubscribe() - end a subscription
 * @kx: the context
 * @handle: from kxfer_notify_subscribe()
 *
 * Events already queued stay queued.  kxfer_close() ends every
 * subscription of the context.
 *
 * Return: 0; -ENOENT (no such subscription).
 */
int kxfer_notify_unsubscribe(struct kxfer *kx, uint32_t handle);

/**
 * kxfer_job_init() - fill a job, every other field zero
 * @job: the job
 * @op: enum kxfer_op
 * @pool: struct kxfer_pool_map.handle
 * @peer: from kxfer_peer_lookup()
 * @remote: struct kxfer_remote_lookup.handle, an export of @peer
 * @segs: @nsegs segments, each {local_off, remote_off, len}
 * @nsegs: 1..max_segments
 * @user_data: returned in the job's completion event
 */
static inline void kxfer_job_init(struct kxfer_job *job, uint32_t op,
				  uint32_t pool, uint32_t peer,
				  uint32_t remote,
				  const struct kxfer_segment *segs,
				  unsigned int nsegs, uint64_t user_data)
{
	memset(job, 0, sizeof(*job));
	job->op = op;
	job->pool = pool;
	job->peer = peer;
	job->remote = remote;
	job->nsegs = nsegs;
	job->segs = (uintptr_t)segs;
	job->user_data = user_data;
}

/* kxfer_job_init() for a WRITE: the pool's bytes to the remote export. */
static inline void kxfer_job_write(struct kxfer_job *job, uint32_t pool,
				   uint32_t peer, uint32_t remote,
				   const struct kxfer_segment *segs,
				   unsigned int nsegs, uint64_t user_data)
{
	kxfer_job_init(job, KXFER_OP_WRITE, pool, peer, remote, segs, nsegs,
		       user_data);
}

/* kxfer_job_init() for a READ: the remote export's bytes to the pool. */
static inline void kxfer_job_read(struct kxfer_job *job, uint32_t pool,
				  uint32_t peer, uint32_t remote,
				  const struct kxfer_segment *segs,
				  unsigned int nsegs, uint64_t user_data)
{
	kxfer_job_init(job, KXFER_OP_READ, pool, peer, remote, segs, nsegs,
		       user_data);
}

/**
 * kxfer_job_notify_msg() - give a job a notification that carries bytes
 * @job: a WRITE or READ job (kxfer_job_init()), or a notification alone:
 *	kxfer_job_init(job, KXFER_OP_WRITE, 0, peer, remote, NULL, 0,
 *	user_data), with KXFER_JOB_FENCE to send it after every earlier
 *	job of the context to that peer
 * @msg: the bytes; read by the kernel during kxfer_submit(), so they may
 *	be reused once it returns
 * @len: 1..max_notify_len of kxfer_limits()
 *
 * Sets KXFER_JOB_NOTIFY | KXFER_JOB_NOTIFY_MSG.  The remote export's
 * subscribers get one KXFER_EV_NOTIFY event with the bytes
 * (kxfer_reap_msgs()) once all of the job's data is visible there.
 *
 * Return: 0, or -EINVAL for an empty message (one longer than
 * max_notify_len is refused by kxfer_submit() with -EINVAL).
 */
static inline int kxfer_job_notify_msg(struct kxfer_job *job, const void *msg,
				       uint32_t len)
{
	if (!msg || !len)
		return -EINVAL;
	job->flags |= KXFER_JOB_NOTIFY | KXFER_JOB_NOTIFY_MSG;
	job->notify_value = (uintptr_t)msg;
	job->notify_len = len;
	return 0;
}

/**
 * kxfer_reap_msgs() - take events, and the messages of notifications
 * @kx: the context
 * @ev: room for @max events
 * @max: >= 1
 * @min: wait until at least this many are ready (<= @max)
 * @timeout_ns: longest wait; 0 does not wait, < 0 waits for ever
 * @flags: KXFER_REAP_*
 * @msgs: where the messages go: a KXFER_EV_NOTIFY event's ev->msg_len
 *	bytes are at (char *)msgs + ev->msg_off
 * @msgs_len: room at @msgs; max_notify_len of kxfer_limits() or more
 *	guarantees that no message is lost (a message that does not fit
 *	waits for the next call, but for the first event of a call, which
 *	is returned without it: msg_off is KXFER_MSG_NONE)
 *
 * Return: as kxfer_reap().
 */
int kxfer_reap_msgs(struct kxfer *kx, struct kxfer_event *ev,
		    unsigned int max, unsigned int min, int64_t timeout_ns,
		    unsigned int flags, void *msgs, uint32_t msgs_len);

/**
 * kxfer_cancel() - take back jobs that have not reached the NIC
 * @kx: the context
 * @user_data: with @mask, which jobs: user_data & mask == @user_data & mask
 * @mask: 0 for all of the context's jobs
 * @count: out, jobs and per-QP parts taken back; may be NULL
 *
 * KXFER_IOC_CANCEL: jobs held behind a FENCE, and jobs' parts still
 * waiting whole for room in a send queue, end with -ECANCELED; the rest
 * complete as they would.  Every job still gets exactly one completion
 * event: reap them before forgetting a request.
 *
 * Return: 0, -EINVAL.
 */
int kxfer_cancel(struct kxfer *kx, uint64_t user_data, uint64_t mask,
		 unsigned int *count);

#ifdef __cplusplus
}
#endif

#endif /* LIBKXFER_KXFER_H */
