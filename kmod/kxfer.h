/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer: kernel RDMA transfer engine, module-internal declarations.
 */
#ifndef _KXFER_H
#define _KXFER_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/completion.h>
#include <linux/xarray.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <rdma/ib_verbs.h>

#include <linux/kxfer.h>

#include "compat.h"
#include "pcipath.h"

#define kxfer_err(fmt, ...)	pr_err("kxfer: " fmt, ##__VA_ARGS__)
#define kxfer_warn(fmt, ...)	pr_warn("kxfer: " fmt, ##__VA_ARGS__)
#define kxfer_info(fmt, ...)	pr_info("kxfer: " fmt, ##__VA_ARGS__)
#define kxfer_dbg(fmt, ...)	pr_debug("kxfer: " fmt, ##__VA_ARGS__)

/* main.c: module parameters */
extern unsigned long kxfer_pool_mem_max;
extern unsigned long kxfer_user_pool_mem_max;
extern bool kxfer_user_exports;
extern unsigned int kxfer_max_pools_per_fd;
extern unsigned int kxfer_max_remote_mrs;

/* ---------------------------------------------------------------------- */
/* device.c: the ib_client                                                 */
/* ---------------------------------------------------------------------- */

enum {
	KXFER_DEV_REMOVING,	/* ib_client remove has begun */
};

/**
 * struct kxfer_device - one RDMA device kxfer uses
 * @kd_node: on kxfer_devices, under kxfer_dev_mutex
 * @kd_ibdev: the ib_core device; valid while a reference is held
 * @kd_ref: references; the ib_client remove callback waits for the last
 * @kd_flags: KXFER_DEV_* bits
 * @kd_released: completed when @kd_ref drops to zero
 * @kd_name: the device's name when it was added (used in logs and in
 *	the removal event, when the device may already be renamed)
 */
struct kxfer_device {
	struct list_head	kd_node;
	struct ib_device	*kd_ibdev;
	struct kref		kd_ref;
	unsigned long		kd_flags;
	struct completion	kd_released;
	char			kd_name[IB_DEVICE_NAME_MAX];
};

extern struct mutex kxfer_dev_mutex;
extern struct list_head kxfer_devices;

int kxfer_device_client_register(void);
void kxfer_device_client_unregister(void);
struct kxfer_device *kxfer_device_get_by_name(const char *name);
void kxfer_device_put(struct kxfer_device *kd);
unsigned int kxfer_device_snapshot(struct kxfer_device ***out);
void kxfer_device_snapshot_put(struct kxfer_device **kds, unsigned int n);

/* ---------------------------------------------------------------------- */
/* pool.c: pinned memory pools                                             */
/* ---------------------------------------------------------------------- */

/* Pools are made of folios up to 2 MiB, the PMD size with 4 KiB pages. */
#define KXFER_POOL_MAX_ORDER	(21 - PAGE_SHIFT)
#define KXFER_POOL_ORDERS	(KXFER_POOL_MAX_ORDER + 1)

/**
 * struct kxfer_chunk - one physically contiguous piece of a pool
 * @kc_page: its first page; %NULL in a pool imported for one DMA
 *	device, whose pieces are DMA ranges only (upool.c)
 * @kc_off: byte offset of the chunk in the pool
 * @kc_len: bytes, a multiple of PAGE_SIZE; a kernel pool's chunks are
 *	whole folios, a user pool's the pages of one folio pinned in a row
 */
struct kxfer_chunk {
	struct page	*kc_page;
	u64		kc_off;
	u64		kc_len;
};

struct kxfer_file;
struct dma_buf;
struct dma_buf_attachment;
struct sg_table;
struct ib_umem_dmabuf;

/**
 * struct kxfer_pool_src - what an owned pool's memory is held by
 * @ps_mm: USER: the mm charged with the pinned pages (mmgrab()ed)
 * @ps_npages: USER: pages pinned and charged to @ps_mm->pinned_vm
 * @ps_dmabuf: DMABUF: the buffer, referenced
 * @ps_attach: DMABUF through pages: kxfer's own attachment
 * @ps_sgt: DMABUF through pages: its mapping, which holds the pages
 * @ps_umem: DMABUF for a DMA device: ib_core's pinned import
 * @ps_dev: DMABUF for a DMA device: the one device it is mapped for
 * @ps_dev_only: DMABUF for a DMA device: its chunks are DMA ranges of
 *	that device, without pages; no other device can map them, and none
 *	can once that one is gone
 */
struct kxfer_pool_src {
	struct mm_struct		*ps_mm;
	unsigned long			ps_npages;
	struct dma_buf			*ps_dmabuf;
	struct dma_buf_attachment	*ps_attach;
	struct sg_table			*ps_sgt;
	struct ib_umem_dmabuf		*ps_umem;
	struct kxfer_device		*ps_dev;
	bool				ps_dev_only;
	bool				ps_releasing;
};

/**
 * struct kxfer_pool_map - a pool DMA-mapped on one device
 * @pm_node: on the pool's kp_maps, under kp_map_lock
 * @pm_dev: the device; the map holds a reference
 * @pm_dma: DMA address of each chunk, indexed like kp_chunks
 * @pm_map_ns: how long mapping took
 */
struct kxfer_pool_map {
	struct list_head	pm_node;
	struct kxfer_device	*pm_dev;
	u64			*pm_dma;
	u64			pm_map_ns;
};

/**
 * struct kxfer_pool - a named region of pinned memory
 * @kp_node: on kxfer_pools, under kxfer_obj_mutex, until freed
 * @kp_ref: lifetime; held by the namespace, attachments, mappings,
 *	exports, their registrations on sessions, jobs
 * @kp_name: unique among live pools
 * @kp_size: bytes, a multiple of PAGE_SIZE
 * @kp_owner: uid allowed by the owner bits of @kp_mode
 * @kp_group: gid allowed by the group bits of @kp_mode
 * @kp_mode: permission bits, as for a file (0..0777)
 * @kp_numa: NUMA node asked for, or NUMA_NO_NODE
 * @kp_near: the PCIe place its memory is near (depth 0: none given)
 * @kp_near_name: ... as it was given: a PCI address or an RDMA device
 * @kp_chunks: the folios, in pool order
 * @kp_nchunks: entries in @kp_chunks
 * @kp_users: attachments plus live mappings, under kxfer_obj_mutex
 * @kp_nexports: exports of this pool, under kxfer_obj_mutex
 * @kp_deleted: removed from the namespace, no new users
 * @kp_alloc_ns: time to allocate and zero the memory
 * @kp_map_lock: protects @kp_maps
 * @kp_maps: struct kxfer_pool_map, one per device
 * @kp_kind: enum kxfer_pool_kind
 * @kp_file: USER, DMABUF: the open file that owns it (compared, never
 *	dereferenced: the file ends the pool before it goes)
 * @kp_pid: USER, DMABUF: the owner's thread group id, for display
 * @kp_comm: USER, DMABUF: the owner's command name, for display
 * @kp_src: USER, DMABUF: what holds the memory
 */
struct kxfer_pool {
	struct list_head	kp_node;
	struct kref		kp_ref;
	char			kp_name[KXFER_NAME_MAX];
	u64			kp_size;
	kuid_t			kp_owner;
	kgid_t			kp_group;
	umode_t			kp_mode;
	int			kp_numa;
	struct kxfer_pci_path	kp_near;
	char			kp_near_name[KXFER_DEV_NAME_MAX];
	struct kxfer_chunk	*kp_chunks;
	unsigned int		kp_nchunks;
	unsigned int		kp_users;
	unsigned int		kp_nexports;
	bool			kp_deleted;
	bool			kp_disowned;	/* its owner ended it: no new export */
	u64			kp_alloc_ns;
	struct mutex		kp_map_lock;	/* protects kp_maps */
	struct list_head	kp_maps;
	enum kxfer_pool_kind	kp_kind;
	bool			kp_revoked;	/* its dma-buf's exporter took it */
	atomic_t		kp_jobs;	/* jobs with it as local side */
	struct kxfer_file	*kp_file;
	pid_t			kp_pid;
	char			kp_comm[TASK_COMM_LEN];
	struct kxfer_pool_src	kp_src;
};

/**
 * struct kxfer_pool_args - what a new pool is made of
 */
struct kxfer_pool_args {
	const char	*name;
	u64		size;
	kuid_t		owner;
	kgid_t		group;
	umode_t		mode;
	int		numa;
	const char	*near;		/* kxfer_near_find(), or NULL */
};

/**
 * struct kxfer_prefix - an address prefix (allow lists, export scopes)
 */
struct kxfer_prefix {
	sa_family_t	p_family;
	u8		p_len;		/* bits */
	u8		p_addr[16];	/* network order */
};

/**
 * struct kxfer_export - a byte range of a pool that peers may reach
 * @ke_node: on kxfer_exports, under kxfer_obj_mutex
 * @ke_name: unique among exports
 * @ke_pool: the pool; the export holds a reference
 * @ke_off: first byte in the pool
 * @ke_len: length in bytes, never 0
 * @ke_peer: peer name allowed to use it; empty for any peer
 * @ke_from: with @ke_has_from, the peer's address must be in this prefix
 * @ke_has_from: @ke_from applies
 * @ke_access: KXFER_ACCESS_* bits, never 0
 * @ke_gen: generation, unique and increasing over the module's life
 * @ke_file: made through /dev/kxfer by the file that owns the pool
 *	(compared only), else %NULL (made by the administrator)
 * @ke_pid: with @ke_file, the maker's thread group id, for display
 * @ke_auth: enum kxfer_auth_policy; REQUIRED: authenticated sessions
 *	only, whose name was proven if @ke_peer names one
 * @ke_ref: the namespace (or its withdrawer) and every session whose peer
 *	still drains it; the last frees it and drops the pool
 * @ke_scoped: capability-scoped (KXFER_EXPORT_TOKEN): advertised only to
 *	peers that speak KXFER_WIRE_F_TOKEN, with @ke_token, which is never
 *	shown; the export is freed with kfree_sensitive()
 */
struct kxfer_export {
	struct list_head	ke_node;
	char			ke_name[KXFER_NAME_MAX];
	struct kxfer_pool	*ke_pool;
	u64			ke_off;
	u64			ke_len;
	char			ke_peer[KXFER_NAME_MAX];
	struct kxfer_prefix	ke_from;
	bool			ke_has_from;
	u32			ke_access;
	u64			ke_gen;
	struct kxfer_file	*ke_file;
	pid_t			ke_pid;
	u32			ke_auth;
	unsigned int		ke_mr_shift;	/* the largest MR page allowed */
	struct kref		ke_ref;
	bool			ke_scoped;
	u8			ke_token[KXFER_TOKEN_LEN];
};

/*
 * How a withdrawal waits for the peers that drain (KXFER_WIRE_F_DRAIN):
 * WAIT until every one answered (or its session ended), NOWAIT not at all
 * (the sessions finish it), NOW not even ask them: keys die at once, as
 * with a peer of the old protocol (a dma-buf's revocation, unload).
 */
enum kxfer_withdraw_how {
	KXFER_WITHDRAW_WAIT,
	KXFER_WITHDRAW_NOWAIT,
	KXFER_WITHDRAW_NOW,
};

/**
 * struct kxfer_export_args - what a new export is made of
 * @name: unique among exports
 * @off: first byte of the range in the pool
 * @len: length of the range
 * @has_len: false to export from @off to the pool's end
 * @peer: the one peer allowed, or "" for any
 * @from: the addresses a peer must connect from, or %NULL for any
 * @access: KXFER_ACCESS_* bits
 * @file: the owning file of an export made through /dev/kxfer, or %NULL
 * @auth: enum kxfer_auth_policy
 * @sub: a subscription of @file to it (kxfer_sub_alloc()), made live
 *	before any session learns of the export, or %NULL; the caller frees
 *	it unless the export was made
 * @sub_handle: with @sub, its handle, out
 * @token: KXFER_TOKEN_LEN bytes: the export is capability-scoped; or
 *	%NULL
 */
struct kxfer_export_args {
	const char			*name;
	u64				off;
	u64				len;
	bool				has_len;
	const char			*peer;
	const struct kxfer_prefix	*from;
	u32				access;
	struct kxfer_file		*file;
	u32				auth;
	struct kxfer_sub		*sub;
	u32				sub_handle;
	const u8			*token;
};

extern struct mutex kxfer_obj_mutex;
extern struct list_head kxfer_pools;
extern struct list_head kxfer_exports;
extern atomic64_t kxfer_pool_mem_used;

bool kxfer_name_char(char c);
bool kxfer_name_valid(const char *name);
int kxfer_pool_create(const struct kxfer_pool_args *args,
		      struct netlink_ext_ack *extack);
int kxfer_pool_delete(const char *name, struct netlink_ext_ack *extack);

/* near.c */
void kxfer_pci_path_of(struct device *dev, struct kxfer_pci_path *path);
void kxfer_ibdev_path(struct ib_device *ibdev, u32 port,
		      struct kxfer_pci_path *path);
int kxfer_near_find(const char *name, struct kxfer_pci_path *path,
		    struct netlink_ext_ack *extack);

void kxfer_pool_put(struct kxfer_pool *pool);
int kxfer_pool_check_access(const struct kxfer_pool *pool);
struct kxfer_pool *kxfer_pool_use(const char *name);
void kxfer_pool_unuse(struct kxfer_pool *pool);
void kxfer_pool_map_device(struct kxfer_pool *pool, struct kxfer_device *kd);
void kxfer_pools_device_removed(struct kxfer_device *kd);
const struct kxfer_chunk *kxfer_pool_chunk_at(const struct kxfer_pool *pool,
					      u64 off);
void kxfer_pools_destroy_all(void);

int kxfer_export_create(struct kxfer_export_args *args,
			const char *pool_name, struct kxfer_pool *pool,
			struct netlink_ext_ack *extack);
int kxfer_export_delete(const char *name, struct kxfer_file *file,
			enum kxfer_withdraw_how how,
			struct netlink_ext_ack *extack);
void kxfer_exports_withdraw_pool(struct kxfer_pool *pool,
				 enum kxfer_withdraw_how how);
void kxfer_export_put(struct kxfer_export *exp);
void kxfer_export_drained(struct kxfer_export *exp);
void kxfer_exports_destroy_all(void);

/* pool.c, for upool.c */
struct kxfer_pool *kxfer_pool_alloc(const char *name, u64 size,
				    enum kxfer_pool_kind kind);
int kxfer_pool_add_chunk(struct kxfer_pool *pool, unsigned int *cap,
			 struct page *page, u64 len);
int kxfer_pool_publish(struct kxfer_pool *pool,
		       struct netlink_ext_ack *extack);
void kxfer_pool_free_new(struct kxfer_pool *pool);
void kxfer_pool_disown(struct kxfer_pool *pool, enum kxfer_withdraw_how how);

/* upool.c: pools over memory a process already has */
extern atomic64_t kxfer_user_pool_mem_used;
long kxfer_ioc_pool_user(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_pool_dmabuf(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_export_add(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_export_del(struct kxfer_file *kf, void __user *uarg);
void kxfer_upool_release(struct kxfer_pool *pool);
bool kxfer_upool_map_device(struct kxfer_pool *pool, struct kxfer_device *kd,
			    u64 *dma);
void kxfer_upools_device_removed(struct kxfer_device *kd);
void kxfer_upools_exit(void);
struct device *kxfer_chardev_dma_device(void);

/*
 * A job with @pool as its local side: counted from before it looks at
 * the memory until it ends (kxfer_job_post), so that a revocation of
 * the pool's dma-buf (upool.c) waits for the jobs the NIC may still be
 * running.  Begin: false if the pool was revoked (the job is refused).
 */
static inline void kxfer_pool_job_end(struct kxfer_pool *pool)
{
	/* Only a dma-buf's pool can be revoked: no other pays for counting */
	if (pool->kp_kind != KXFER_POOL_KIND_DMABUF)
		return;
	if (atomic_dec_and_test(&pool->kp_jobs))
		wake_up_var(&pool->kp_jobs);
}

static inline bool kxfer_pool_job_begin(struct kxfer_pool *pool)
{
	if (pool->kp_kind != KXFER_POOL_KIND_DMABUF)
		return true;
	atomic_inc(&pool->kp_jobs);
	/* Pairs with the barrier after kp_revoked is set (upool.c). */
	smp_mb__after_atomic();
	if (!READ_ONCE(pool->kp_revoked))
		return true;
	kxfer_pool_job_end(pool);
	return false;
}

/* ---------------------------------------------------------------------- */
/* session.c, listen.c, ctrl.c, frwr.c: sessions between two kxfer nodes   */
/* ---------------------------------------------------------------------- */

#include <linux/workqueue.h>
#include <linux/socket.h>
#include <rdma/rdma_cm.h>
#include "wire.h"

extern struct workqueue_struct *kxfer_wq;
extern struct workqueue_struct *kxfer_post_wq;
extern char kxfer_node_name[KXFER_NAME_MAX];
extern unsigned int kxfer_keepalive_ms;
extern unsigned int kxfer_keepalive_timeout_ms;
extern unsigned int kxfer_reconnect_max_ms;
extern unsigned int kxfer_ack_timeout;
extern unsigned int kxfer_wire_features;

/* rdma_cm id contexts start with this tag, to tell listeners from QPs. */
enum kxfer_cm_kind {
	KXFER_CM_LISTENER = 1,
	KXFER_CM_QP,
	KXFER_CM_DEAD,		/* handed to the reaper; events ignored */
	KXFER_CM_PENDING,	/* a request waiting for kxfer_accept_work */
};

#define KXFER_CTRL_RECVS	32	/* control receives posted on QP 0 */
/*
 * Data bytes posted and not yet completed, per QP, in MiB (qp_inflight_mb,
 * read when a session connects).  Control messages on QP 0 wait behind
 * them; the bound keeps that wait short on a slow link (the default,
 * 8 MiB, is well above any real NIC's bandwidth-delay product).
 */
extern unsigned int kxfer_qp_inflight_mb;
#define KXFER_CTRL_SENDS	16	/* control send buffers */
#define KXFER_REG_BATCH		32	/* REG_MR or LOCAL_INV per post */

/*
 * An export's MRs map at most KXFER_MR_MAX_PAGES pages each (fewer on a
 * device with a shorter max_fast_reg_page_list_len), of the largest page,
 * up to 1 GiB, that both its memory's layout and the device allow
 * (kxfer_mr_shift()); a peer takes at most KXFER_WIRE_MAX_MRS32 (wire.h)
 * of them.  An export spans at most KXFER_EXPORT_MAX_LEN(shift) bytes
 * from the start of its first page: 512 GiB of memory in 4 KiB pages,
 * all of a pool of 2 MiB pieces.  Longer ranges are refused when
 * exported (E2BIG); a peer that takes only KXFER_WIRE_MAX_MRS (an older
 * kxfer) is not offered an export that needs more.
 */
#define KXFER_MR_MAX_PAGES	512
#define KXFER_MR_MAX_PAGE_SHIFT	30
#define KXFER_EXPORT_MAX_LEN(shift) \
	((u64)KXFER_WIRE_MAX_MRS32 * KXFER_MR_MAX_PAGES << (shift))
/*
 * mr_max_pages, 1..KXFER_MR_MAX_PAGES: a further cap on an MR's pages,
 * read when an export is registered.  An export that needs more MRs
 * than a peer takes, with the cap or the device's own limit, is not
 * offered on that session; the session and other exports are unharmed.
 */
extern unsigned int kxfer_mr_max_pages;
extern unsigned long kxfer_mr_max_page;

/* Bits of kxfer_qp.q_events, set by the CM handler for the work. */
enum {
	KXFER_QPE_ROUTED,	/* route resolved: create the QP, connect */
	KXFER_QPE_ESTABLISHED,	/* connected */
};

/**
 * struct kxfer_qp - one RC queue pair of a session, with its cm_id
 * @q_kind: KXFER_CM_QP (the cm_id's context points here)
 * @q_sess: the session
 * @q_index: index in the session
 * @q_id: the rdma_cm id; owns the QP
 * @q_cq: send CQ of this QP, and its receive CQ unless @q_rcq is set
 * @q_rcq: a polled session's receive CQ (interrupt-driven), or %NULL
 * @q_pcq: @q_cq when it is polled (IB_POLL_DIRECT) and may be polled
 *	now, else %NULL; under the session's s_poll_mutex
 * @q_events: KXFER_QPE_* bits from the CM handler
 * @q_established: reached RTS; must be drained before destruction
 * @q_remote_qpn: the peer's QP number
 * @q_post_lock: serialises posting data WRs and slot accounting
 * @q_sq_free: send queue slots free for data WRs (s_depth at start)
 * @q_bytes_max: the bound on data bytes in flight (qp_inflight_mb)
 * @q_bytes_free: bytes of data WRs that may still be posted before
 *	completions come back (@q_bytes_max at start)
 * @q_dead: set when teardown begins; nothing is posted after it
 * @q_backlog: job parts, in submission order, waiting for slots
 * @q_quiet: batches posted without a completion of their own, in post
 *	order; the next signaled batch's completion retires them
 * @q_seq: batches posted, numbering them for @q_quiet
 * @q_home: the CPU a multi-job SUBMIT's chain is posted on when posts
 *	are spread (post_spread), or nr_cpu_ids for none
 * @q_soft: the provider runs this QP's send work on the CPU that posts
 *	(rxe with tasklets): post_spread's automatic choice
 * @q_kick_work: posts the backlog on @q_home; queued with a session
 *	reference, which it drops
 */
struct kxfer_qp {
	enum kxfer_cm_kind	q_kind;
	struct kxfer_session	*q_sess;
	unsigned int		q_index;
	struct rdma_cm_id	*q_id;
	struct ib_cq		*q_cq;
	struct ib_cq		*q_rcq;
	struct ib_cq		*q_pcq;
	unsigned long		q_events;
	bool			q_established;
	u32			q_remote_qpn;

	/* data path (post.c) */
	spinlock_t		q_post_lock;	/* the eight below */
	unsigned int		q_sq_free;	/* send slots for data WRs */
	s64			q_bytes_max;
	s64			q_bytes_free;
	bool			q_dead;		/* teardown began: post nothing */
	struct list_head	q_backlog;	/* job parts waiting for slots */
	struct list_head	q_quiet;	/* posted unsignaled batches */
	u64			q_seq;
	unsigned int		q_home;
	bool			q_soft;
	struct work_struct	q_kick_work;

	/* statistics since the session was made, under q_post_lock */
	u64			q_parts;	/* job parts started */
	u64			q_bytes;
	u64			q_wrs;		/* work requests posted */
	u64			q_doorbells;	/* ib_post_send() calls */
	u64			q_signaled;	/* signaled data WRs */
	u64			q_handoffs;	/* posts run on q_home for a SUBMIT */
};

/* Statistics of a session since it was made (kxferctl stats show). */
struct kxfer_sess_stats {
	atomic64_t	jobs;		/* accepted */
	atomic64_t	bytes;		/* of accepted jobs */
	atomic64_t	segs;		/* segments in */
	atomic64_t	wrs;		/* work requests out (planned) */
	atomic64_t	ok;		/* jobs completed successfully */
	atomic64_t	notify_sent;
	atomic64_t	notify_imm;	/* of those, by WRITE_WITH_IMM */
	atomic64_t	notify_recv;
	/* jobs that ended in error, by kind */
	atomic64_t	err_flush;	/* the session went down under them */
	atomic64_t	err_access;	/* the remote refused (key, range) */
	atomic64_t	err_timeout;	/* transport retries exhausted */
	atomic64_t	err_remote;	/* remote operation or request error */
	atomic64_t	err_stale;	/* the export went while they waited */
	atomic64_t	err_other;
	/* KXFER_A_STATS_LAT_QUEUE and _DONE (uapi) */
	atomic64_t	lat_queue[KXFER_LAT_BUCKETS];
	atomic64_t	lat_done[KXFER_LAT_BUCKETS];
	/* completions reaped by polling: by users, by the poll work */
	atomic64_t	polled;
	atomic64_t	polled_work;
};

/**
 * struct kxfer_ctrl_buf - a registered buffer for one control message
 */
struct kxfer_ctrl_buf {
	struct ib_cqe		cb_cqe;
	struct kxfer_session	*cb_sess;
	struct kxfer_task	*cb_job;	/* a NOTIFY job to end when sent */
	struct list_head	cb_node;
	void			*cb_buf;
	u64			cb_dma;
	unsigned int		cb_len;
	bool			cb_is_imm;	/* a WRITE_WITH_IMM, not a message */
	u32			cb_imm;		/* its immediate, host order */
};

/**
 * struct kxfer_ctrl_msg - a control message waiting for credit or a buffer
 */
struct kxfer_ctrl_msg {
	struct list_head	cm_node;
	struct kxfer_task	*cm_job;	/* a NOTIFY job to end when sent */
	unsigned int		cm_len;
	u8			cm_data[];
};

/**
 * struct kxfer_mr_reg - one FRWR memory region of an export registration
 */
struct kxfer_mr_reg {
	struct ib_mr	*mr_ibmr;
	struct ib_cqe	mr_cqe;
	struct completion mr_done;
	int		mr_status;
	u64		mr_off;		/* offset in the export */
	u64		mr_len;
	u64		mr_iova;
};

/**
 * struct kxfer_reg - an export registered on a session's PD
 * @rg_node: on the session's s_regs
 * @rg_export: the export; the registration holds no reference, export
 *	deletion removes it first (kxfer_sessions_export_removed()), unless
 *	it drains: then it holds one until the peer answers
 * @rg_gen: generation advertised for it
 * @rg_draining: withdrawn, the peer told (EXPORT_WITHDRAW); its keys stay
 *	valid until the peer answers or @rg_drain_end passes
 * @rg_drain_end: the deadline of the answer (ktime_get_ns())
 * @rg_nmrs: entries in @rg_mrs
 */
struct kxfer_reg {
	struct list_head	rg_node;
	struct kxfer_export	*rg_export;
	struct kxfer_pool	*rg_pool;	/* referenced: the MRs map it */
	u64			rg_gen;
	unsigned int		rg_shift;	/* log2 of its MRs' page */
	bool			rg_draining;
	u64			rg_drain_end;
	char			rg_name[KXFER_NAME_MAX];	/* the export's */
	unsigned int		rg_nmrs;
	struct kxfer_mr_reg	rg_mrs[];
};

/**
 * struct kxfer_rmr - one memory region of a remote export, host order
 */
struct kxfer_rmr {
	u64	rm_off;		/* first byte of the export it covers */
	u64	rm_len;
	u64	rm_iova;	/* remote address of rm_off */
	u32	rm_rkey;
};

/**
 * struct kxfer_rexport - an export the remote advertised
 * @rx_node: on the session's s_rexports, or, once withdrawn, on
 *	s_rx_draining until no job of ours to it is left
 * @rx_jobs: 1 while it is listed in s_rexports, plus one per job started
 *	on it and not yet ended; whoever drops it to 0 says so to s_work
 * @rx_answer: withdrawn by EXPORT_WITHDRAW: answer EXPORT_WITHDRAWN once
 *	@rx_jobs is 0 (not after EXPORT_DEL, nor when replaced)
 *
 * Freed with kfree_sensitive(): a scoped one holds its token.
 */
struct kxfer_rexport {
	struct list_head	rx_node;
	atomic_t		rx_jobs;
	bool			rx_answer;
	/* capability-scoped: found only with @rx_token (KXFER_LOOKUP_TOKEN) */
	bool			rx_scoped;
	u8			rx_token[KXFER_TOKEN_LEN];
	char			rx_name[KXFER_NAME_MAX];
	u64			rx_len;
	u64			rx_gen;
	u32			rx_access;
	unsigned int		rx_nmrs;
	unsigned int		rx_have;	/* MR entries received so far */
	struct kxfer_rmr	*rx_mrs;
};

/* Bits of kxfer_session.s_events */
enum {
	KXFER_SE_START,		/* connector: begin a connection attempt */
	KXFER_SE_FAIL,		/* something failed: tear down */
	KXFER_SE_RX,		/* control messages are waiting */
	KXFER_SE_TX,		/* credits or send buffers came back */
	KXFER_SE_REGS,		/* exports changed: register and advertise */
	KXFER_SE_NOTIFY,	/* NOTIFY jobs wait to send their message */
	KXFER_SE_SUPERSEDE,	/* authenticated: end older incarnations */
	KXFER_SE_DRAIN,		/* a withdrawn remote export has no job left */
	KXFER_SE_STOPPED,	/* stopped for good: nothing queues s_work */
	KXFER_SE_PEER_DISC,	/* the peer disconnected: its DREQ came */
};

struct kxfer_key;
struct crypto_shash;

/*
 * Authentications of one listener's sessions: the listener and every
 * session it accepted hold a reference, so that a session counts its
 * outcome without taking the listeners' lock.
 */
struct kxfer_auth_counts {
	refcount_t	ac_ref;
	atomic_t	ac_ok;
	atomic_t	ac_failed;
};

/* Where a session's handshake is (auth.c); KXFER_AUTH_S_NONE if it has none. */
enum kxfer_auth_state {
	KXFER_AUTH_S_NONE,		/* no handshake: unauthenticated */
	KXFER_AUTH_S_WAIT_HELLO,	/* acceptor: the connector's first word */
	KXFER_AUTH_S_WAIT_REPLY,	/* connector: proved, waits for the proof */
	KXFER_AUTH_S_OK,		/* authenticated, or a rail joined */
	KXFER_AUTH_S_REFUSED,		/* failed: last words sent, ending */
	KXFER_AUTH_S_WAIT_JOIN,		/* acceptor: a rail's RAIL_JOIN (rail.c) */
	KXFER_AUTH_S_WAIT_JOINED,	/* connector: joined, waits for the proof */
};

/**
 * struct kxfer_sess_auth - a session's authentication (auth.c)
 * @sa_key: connector: the key it proves (a user reference), or %NULL
 * @sa_listen_key: acceptor: its listener's key name, "" for none
 * @sa_counts: acceptor: its listener's counters (a reference)
 * @sa_required: acceptor: its listener requires authentication
 * @sa_offered: acceptor: KXFER_WIRE_F_AUTH was in its accept
 * @sa_replied: acceptor: its REPLY is out, and the connector has sent
 *	nothing since but credits and keepalives: an AUTH_FAIL may still come
 * @sa_named: the key of this handshake is the one of the session's name
 * @sa_state: enum kxfer_auth_state, per connection, under s_mutex
 *	(read without it, READ_ONCE, by the session list's walkers)
 * @sa_result: enum kxfer_peer_auth of the last handshake
 * @sa_used: the key this connection proved, for display
 * @sa_tfm: "hmac(sha256)" keyed with the secret, during the handshake
 * @sa_start_ns: when the handshake began
 * @sa_nonce: this side's nonce; @sa_peer_nonce the other's (a connector
 *	has the acceptor's from the accept)
 * @sa_why: the reason a refused handshake ends the session with
 * @sa_failures: connector: handshakes that failed since peer add
 */
struct kxfer_sess_auth {
	struct kxfer_key	*sa_key;
	char			sa_listen_key[KXFER_NAME_MAX];
	struct kxfer_auth_counts *sa_counts;
	bool			sa_required;
	bool			sa_offered;
	bool			sa_replied;
	bool			sa_named;
	enum kxfer_auth_state	sa_state;
	enum kxfer_peer_auth	sa_result;
	char			sa_used[KXFER_NAME_MAX];
	struct crypto_shash	*sa_tfm;
	u64			sa_start_ns;
	u8			sa_nonce[KXFER_AUTH_NONCE_LEN];
	u8			sa_peer_nonce[KXFER_AUTH_NONCE_LEN];
	const char		*sa_why;
	unsigned int		sa_failures;
};

/* A group's sessions: the connector's rails, or the acceptor's, and old ones */
#define KXFER_RAIL_SLOTS	(2 * KXFER_MAX_RAILS)

/**
 * struct kxfer_rails - one logical session over several rails (rail.c)
 * @r_ref: every member session, every job of the peer and a queued
 *	@r_retry_work hold one
 * @r_node: acceptor: on the list of sessions a rail may join
 * @r_lock: the fields below but @r_name, @r_role, @r_nrails
 * @r_role: which side of it this node is
 * @r_name: connector: the peer's name; acceptor: the remote node's
 * @r_nrails: connector: its rails (the addresses of peer add)
 * @r_sess: the session of each rail, or %NULL; not referenced: a session
 *	clears its slot before it is freed
 * @r_group: the acceptor's id of it, 0 until the connector has a token
 * @r_token: what a rail proves to join it (a connector's copy, or the
 *	acceptor's)
 * @r_epoch: connector: bumped by each connection that does not join, a
 *	new logical session: remote handles of an older one are stale
 * @r_lead: connector: the rail making such a connection, or -1
 * @r_id: the peer id notifications and events carry (KXFER_A_PEER_ID of
 *	the first rail)
 * @r_auth: what the first connection proved (enum kxfer_peer_auth)
 * @r_named: ... and whether it proved the key of the session's name
 * @r_rotor: the next of equally near rails (placement)
 * @r_retry: jobs of a failed rail to post again on another, in order
 * @r_retry_work: posts them
 */
struct kxfer_rails {
	refcount_t		r_ref;
	struct list_head	r_node;
	spinlock_t		r_lock;
	enum kxfer_peer_role	r_role;
	char			r_name[KXFER_NAME_MAX];
	unsigned int		r_nrails;
	struct kxfer_session	*r_sess[KXFER_RAIL_SLOTS];
	u64			r_group;
	u8			r_token[KXFER_RAIL_TOKEN_LEN];
	u64			r_epoch;
	int			r_lead;
	u32			r_id;
	enum kxfer_peer_auth	r_auth;
	bool			r_named;
	u32			r_rotor;
	struct list_head	r_retry;
	struct delayed_work	r_retry_work;
	/* connector: striped jobs whose shares are to be made (rail.c) */
	struct list_head	r_stripe;
	atomic64_t		r_striped;	/* jobs striped over rails */
	/* connector: fences asked of the acceptor (struct kxfer_rail_fence) */
	struct list_head	r_fences;
	/* connector: the last RAIL_NOTIFY number given */
	u64			r_notify_seq;
	/* acceptor: numbers seen, the last KXFER_RAIL_NOTIFY_WINDOW */
	u64			r_seen_top;
	unsigned long		*r_seen;
};

/**
 * struct kxfer_session - a connection of N RC QPs to one remote kxfer
 *
 * Locking: s_mutex serialises the state machine (s_work), teardown and
 * control-plane readers.  s_lock (a spinlock, taken in CQ handlers)
 * protects credits, the send buffer free list and the receive queue.
 * The CM handler only sets bits and queues s_work; it takes no mutex.
 */
struct kxfer_session {
	struct list_head	s_node;
	struct kref		s_ref;
	char			s_name[KXFER_NAME_MAX];
	enum kxfer_peer_role	s_role;
	enum kxfer_peer_state	s_state;
	struct sockaddr_storage	s_dst;
	unsigned int		s_nqps;
	unsigned int		s_depth;
	u64			s_sid;
	u32			s_incarnation;	/* an acceptor's peer's */
	char			s_remote_node[KXFER_NAME_MAX];

	struct mutex		s_mutex;	/* the state machine */
	struct work_struct	s_work;
	struct delayed_work	s_timer;
	struct work_struct	s_destroy_work;
	unsigned long		s_events;

	struct kxfer_device	*s_dev;
	struct ib_pd		*s_pd;
	u32			s_port_num;
	struct kxfer_qp		s_qps[KXFER_MAX_QPS];
	unsigned int		s_nestablished;
	u32			s_rotor;	/* next QP for a job's WRs */

	/* control channel (QP 0) */
	spinlock_t		s_lock;
	struct kxfer_ctrl_buf	*s_recvs;
	struct kxfer_ctrl_buf	*s_sends;
	struct list_head	s_free_sends;
	struct list_head	s_rxq;
	struct list_head	s_txq;
	int			s_credits;
	int			s_credits_max;	/* receives the peer posted */
	unsigned int		s_credits_owed;
	u32			s_tx_seq;
	u32			s_rx_seq;
	bool			s_ctrl_up;
	bool			s_sent_sync;
	bool			s_got_sync;
	bool			s_got_hello;	/* acceptor: the connector's */
	u32			s_peer_features;	/* KXFER_WIRE_F_* both speak */
	/* last sign of life: a message in, or one of ours acknowledged */
	u64			s_last_rx_ns;
	u64			s_ka_sent_ns;	/* first unanswered probe, or 0 */
	u64			s_ka_last_ns;	/* last probe sent */
	u64			s_ka_rtt_ns;
	u64			s_ka_rtt_max_ns;	/* longest, session's life */
	u64			s_ka_rtt_recent_ns;	/* decaying max, per answer */

	struct list_head	s_regs;
	unsigned int		s_exports_withheld;	/* too many MRs */
	unsigned int		s_drains;	/* of s_regs, rg_draining */
	struct list_head	s_rexports;
	struct list_head	s_rx_draining;	/* withdrawn, jobs in flight */
	/* an EXPORT_TOKEN, for the EXPORT_ADD that follows it (s_mutex) */
	struct kxfer_msg_export_token s_token;
	bool			s_token_pending;
	unsigned int		s_rexport_mrs;	/* MR entries of s_rexports */
	struct kxfer_ctrl_msg	*s_ka_ack;	/* a KEEPALIVE_ACK queued */
	struct list_head	s_notifyq;	/* NOTIFY jobs, under s_lock */
	/* NOTIFY by WRITE_WITH_IMM (one QP): sending side, under s_lock */
	u32			s_imm_token;
	unsigned int		s_imm_outstanding;
	/* receiving side: halves waiting for their other half, s_mutex */
	struct kxfer_imm_half {
		u32	ih_token;
		bool	ih_used;
		bool	ih_have_desc;
		bool	ih_allowed;	/* the desc names an export given */
		char	ih_name[KXFER_NAME_MAX];
		u64	ih_value;
		u64	ih_bytes;
	}			s_imm_halves[KXFER_NOTIFY_IMM_MAX];
	u32			s_id;		/* KXFER_A_PEER_ID */
	/* bumped as each connection's control channel starts */
	u64			s_conn_gen;
	atomic_t		s_handles;	/* files' peer and remote handles */
	struct kxfer_sess_stats	s_stats;

	/* statistics and diagnosis */
	u64			s_start_ns;
	u64			s_up_ns;
	unsigned int		s_reconnects;
	unsigned int		s_attempts;	/* since it was last up */
	unsigned int		s_backoff_ms;
	u64			s_next_try_ns;	/* connector, down: retry then */
	u64			s_said_ns;	/* last "still failing" line */
	char			s_fail_why[64];
	int			s_fail_errno;
	char			s_last_error[64];
	int			s_last_errno;

	struct kxfer_sess_auth	s_auth;

	/*
	 * made on demand (ondemand.c): ends once it had no handle and no
	 * job for s_idle_s (s_idle_since_ns: since when, 0 while used);
	 * s_idle_ended under s_mutex
	 */
	bool			s_ondemand;
	bool			s_idle_ended;
	u32			s_idle_s;
	u64			s_idle_since_ns;

	/*
	 * Rails (rail.c): the logical session this one is a rail of, or
	 * %NULL (a reference); its index there; whether this connection
	 * joins it (KXFER_CONN_F_JOIN); jobs posted again elsewhere after it
	 * failed (failovers) and jobs it took from a failed rail (taken)
	 */
	struct kxfer_rails	*s_rails;
	unsigned int		s_rail;
	bool			s_join;
	bool			s_got_token;
	u64			s_join_group;	/* the r_group it joined */
	const struct kxfer_device *s_rail_kd;	/* while up: placement */
	int			s_rail_node;	/* ... its NUMA node */
	struct kxfer_pci_path	s_rail_path;	/* ... its PCIe place */
	atomic64_t		s_failovers;
	atomic64_t		s_taken;
	atomic64_t		s_fenced;	/* its failures the peer fenced */
	atomic64_t		s_shares;	/* shares of striped jobs it took */
	atomic64_t		s_notify_dups;	/* RAIL_NOTIFY seen before */
	atomic_t		s_fence_reqs;	/* acceptor: RAIL_FENCEs at work */
	u32			s_hello_rail;	/* acceptor: mo_rail */

	/* polled send CQs (poll.c): fixed when the session is made */
	bool			s_poll;
	struct mutex		s_poll_mutex;	/* one poller; q_pcq */
	struct delayed_work	s_poll_work;	/* when no user polls */
	unsigned int		s_ctrl_sending;	/* control sends out, s_lock */
};

extern struct mutex kxfer_sess_mutex;
extern struct list_head kxfer_sessions;

int kxfer_sessions_init(void);
void kxfer_sessions_exit(void);
int kxfer_peer_create(const char *name, const struct sockaddr_storage *dst,
		      unsigned int nqps, unsigned int depth,
		      struct kxfer_key *key, bool poll,
		      struct netlink_ext_ack *extack);
int kxfer_peer_create_rails(const char *name,
			    const struct sockaddr_storage *dsts,
			    unsigned int ndst, unsigned int nqps,
			    unsigned int depth, struct kxfer_key **keys,
			    bool poll, struct netlink_ext_ack *extack);
int kxfer_peer_delete(const char *name, struct netlink_ext_ack *extack);
struct kxfer_session *kxfer_session_on_demand(const struct sockaddr_storage *dst,
					      unsigned int nqps,
					      struct kxfer_key *key,
					      u32 idle_s, bool *made);
void kxfer_session_on_demand_done(struct kxfer_session *s, bool made,
				  bool used);
u64 kxfer_session_idle_ns(const struct kxfer_session *s);
void kxfer_session_fail(struct kxfer_session *s, int err, const char *why);
void kxfer_session_wc_failed(struct kxfer_session *s, const struct ib_wc *wc,
			     int err);
void kxfer_sessions_device_removed(struct kxfer_device *kd);
void kxfer_sessions_exports_changed(void);
void kxfer_sessions_export_removed(struct kxfer_export *exp, bool drain);
void kxfer_sessions_pool_revoked(struct kxfer_pool *pool);
unsigned int kxfer_drain_timeout_ms(void);
struct kxfer_listener;
int kxfer_session_accept(struct rdma_cm_id *id,
			 const struct kxfer_wire_conn *conn, u32 remote_qpn,
			 struct kxfer_listener *l);
void kxfer_sessions_supersede_late(struct kxfer_session *new);
void kxfer_sessions_stop_all(void);
void kxfer_cm_id_reap(struct rdma_cm_id *id, bool settle);
void kxfer_cm_reap_kick(void);
int kxfer_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
const char *kxfer_peer_state_name(enum kxfer_peer_state st);

/* ctrl.c */
int kxfer_ctrl_alloc(struct kxfer_session *s);
void kxfer_ctrl_free(struct kxfer_session *s);
int kxfer_ctrl_post_recvs(struct kxfer_session *s);
struct kxfer_task;
void kxfer_ctrl_send(struct kxfer_session *s, enum kxfer_msg_type type,
		     const void *body, unsigned int body_len);
void kxfer_ctrl_send_job(struct kxfer_session *s, enum kxfer_msg_type type,
			 const void *body, unsigned int body_len,
			 struct kxfer_task *job);
void kxfer_ctrl_flush(struct kxfer_session *s);
void kxfer_ctrl_process(struct kxfer_session *s);
void kxfer_ctrl_last_words(struct kxfer_session *s);
void kxfer_ctrl_reset(struct kxfer_session *s);

/* frwr.c */
int kxfer_regs_sync(struct kxfer_session *s);
void kxfer_regs_release(struct kxfer_session *s);
int kxfer_reg_invalidate(struct kxfer_session *s, struct kxfer_reg *rg);
unsigned int kxfer_mr_shift(const struct kxfer_pool *pool, const u64 *dma,
			    u64 off, u64 end);
bool kxfer_reg_drain_start(struct kxfer_session *s, struct kxfer_reg *rg);
int kxfer_reg_withdrawn(struct kxfer_session *s,
			const struct kxfer_msg_export_del *m, const char **why);
bool kxfer_regs_drain_overdue(struct kxfer_session *s, u64 now);
u64 kxfer_regs_drain_next(struct kxfer_session *s);
void kxfer_rexports_clear(struct kxfer_session *s);
void kxfer_rexports_drained(struct kxfer_session *s);
void kxfer_rexport_job_end(struct kxfer_session *s, struct kxfer_rexport *rx);

/* rail.c: a peer over several rails */
struct kxfer_pool;
struct kxfer_rhandle;
struct kxfer_rails *kxfer_rails_alloc(enum kxfer_peer_role role,
				      const char *name, unsigned int nrails);
void kxfer_rails_put(struct kxfer_rails *r);
void kxfer_rails_leave(struct kxfer_session *s);
bool kxfer_rails_may_connect(struct kxfer_session *s);
void kxfer_rails_conn_start(struct kxfer_session *s);
void kxfer_rails_down(struct kxfer_session *s, bool was_up);
void kxfer_rails_up(struct kxfer_session *s);
void kxfer_rails_issue(struct kxfer_session *s);
int kxfer_rails_recv(struct kxfer_session *s, const void *buf,
		     const char **why);
void kxfer_rails_join_start(struct kxfer_session *s);
void kxfer_rails_join_refused(struct kxfer_session *s);
u64 kxfer_rails_notify_seq(struct kxfer_task *job);
bool kxfer_rails_notify_stale(const struct kxfer_task *job);
void kxfer_rails_wait_idle(void);
bool kxfer_rails_notify_first(struct kxfer_session *s, u64 seq);
u64 kxfer_peer_conn_gen(struct kxfer_session *s);
u32 kxfer_peer_id(const struct kxfer_session *s);
enum kxfer_peer_state kxfer_peer_state(struct kxfer_session *s);
int kxfer_rails_lookup(struct kxfer_session *s, const char *name,
		       const u8 *token, struct kxfer_rhandle *rh);
struct kxfer_session *kxfer_rails_route(struct kxfer_session *s,
					const struct kxfer_pool *pool,
					const char *rname, u64 rgen,
					int rail);
unsigned int kxfer_rails_snapshot(struct kxfer_session *s,
				  struct kxfer_session **out);

/* listen.c */
#define KXFER_MAX_ALLOW		16

bool kxfer_prefix_match(const struct kxfer_prefix *p,
			const struct sockaddr *sa);
int kxfer_prefix_set(struct kxfer_prefix *p, const void *addr,
		     unsigned int alen, unsigned int bits);
const u8 *kxfer_sa_bytes(const struct sockaddr *sa, unsigned int *len);

/**
 * struct kxfer_listener - an rdma_cm listening id
 * @l_kind: KXFER_CM_LISTENER (the cm_id's context points here)
 * @l_ref: one for being listed, one per request waiting to be accepted
 * @l_node: on kxfer_listeners, under kxfer_listen_mutex
 * @l_addr: address listened on, port included
 * @l_id: the listening id; NULL while waiting for its device
 * @l_state: enum kxfer_listen_state
 * @l_allow: prefixes whose peers are accepted; none means all
 * @l_retry: re-binds after the device behind @l_addr went away
 * @l_key: the key accepting sessions prove unless their node has its
 *	own (a user reference), or %NULL
 * @l_auth_required: only authenticated sessions are kept
 * @l_poll: the sessions it accepts have polled send CQs (poll.c)
 * @l_counts: sessions that authenticated, handshakes that failed
 */
struct kxfer_listener {
	enum kxfer_cm_kind	l_kind;
	refcount_t		l_ref;
	struct list_head	l_node;
	struct sockaddr_storage	l_addr;
	struct rdma_cm_id	*l_id;
	enum kxfer_listen_state	l_state;
	atomic_t		l_accepted;
	atomic_t		l_rejected;
	atomic_t		l_evicted;	/* half-open sessions, for keyed nodes */
	spinlock_t		l_log_lock;	/* the two below */
	struct sockaddr_storage	l_last_refused;	/* for logging once */
	int			l_last_reason;
	unsigned int		l_nallow;
	struct kxfer_prefix	l_allow[KXFER_MAX_ALLOW];
	struct delayed_work	l_retry;
	struct kxfer_key	*l_key;
	bool			l_auth_required;
	bool			l_poll;
	struct kxfer_auth_counts *l_counts;
};

extern struct mutex kxfer_listen_mutex;
extern struct list_head kxfer_listeners;

int kxfer_listen_create(const struct sockaddr_storage *addr,
			const struct kxfer_prefix *allow, unsigned int nallow,
			struct kxfer_key *key, bool auth_required, bool poll,
			struct netlink_ext_ack *extack);
int kxfer_listen_delete(const struct sockaddr_storage *addr,
			struct netlink_ext_ack *extack);
void kxfer_listeners_device_removed(struct kxfer_device *kd);
void kxfer_listeners_destroy_all(void);
void kxfer_accepts_flush(void);
int kxfer_listener_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* ---------------------------------------------------------------------- */
/* auth.c: keys, and the handshake that authenticates a session            */
/* ---------------------------------------------------------------------- */

/**
 * struct kxfer_key - a secret this node shares with another
 * @k_node: on kxfer_keys, under kxfer_key_mutex
 * @k_name: unique among keys
 * @k_peer: listeners authenticate sessions from the node of this name
 *	with this key; "" for none
 * @k_users: listeners and connecting peers that name it; a key in use
 *	cannot be deleted (taken under kxfer_key_mutex, dropped anywhere)
 * @k_gen: 1, one more at each new secret
 * @k_len: bytes of @k_secret
 * @k_secret: never copied out but into a keyed transform, wiped on free
 */
struct kxfer_key {
	struct list_head	k_node;
	char			k_name[KXFER_NAME_MAX];
	char			k_peer[KXFER_NAME_MAX];
	atomic_t		k_users;
	u32			k_gen;
	unsigned int		k_len;
	u8			k_secret[KXFER_KEY_MAX_LEN];
};

extern struct mutex kxfer_key_mutex;
extern struct list_head kxfer_keys;
extern u32 kxfer_incarnation;

int kxfer_key_create(const char *name, const u8 *secret, unsigned int len,
		     const char *peer, struct netlink_ext_ack *extack);
int kxfer_key_set(const char *name, const u8 *secret, unsigned int len,
		  struct netlink_ext_ack *extack);
int kxfer_key_delete(const char *name, struct netlink_ext_ack *extack);
struct kxfer_key *kxfer_key_get(const char *name,
				struct netlink_ext_ack *extack);
void kxfer_key_put(struct kxfer_key *key);
void kxfer_key_hold(struct kxfer_key *key);
void kxfer_keys_destroy_all(void);

bool kxfer_auth_listener_refuses(const struct kxfer_listener *l,
				 const u8 *node);
bool kxfer_auth_node_keyed(const char *node);
void kxfer_auth_accept_init(struct kxfer_session *s,
			    const struct kxfer_listener *l);
unsigned int kxfer_auth_accept_fill(const struct kxfer_session *s,
				    struct kxfer_wire_accept *wa);
int kxfer_auth_accepted(struct kxfer_session *s,
			const struct kxfer_wire_accept *wa, unsigned int len);
void kxfer_auth_start(struct kxfer_session *s);
bool kxfer_auth_ready(const struct kxfer_session *s);
bool kxfer_auth_pending(const struct kxfer_session *s);
int kxfer_auth_strength(const struct kxfer_session *s);
bool kxfer_auth_named(const struct kxfer_session *s);
int kxfer_auth_gate(struct kxfer_session *s, unsigned int type,
		    const char **why);
int kxfer_auth_recv(struct kxfer_session *s, const void *buf,
		    const char **why);
const char *kxfer_auth_expired(struct kxfer_session *s, u64 now);
u64 kxfer_auth_time_left(const struct kxfer_session *s, u64 now);
struct kxfer_auth_counts *kxfer_auth_counts_alloc(void);
void kxfer_auth_counts_put(struct kxfer_auth_counts *c);
void kxfer_auth_session_down(struct kxfer_session *s);
void kxfer_auth_reset(struct kxfer_session *s);
void kxfer_auth_join_wait(struct kxfer_session *s);
void kxfer_auth_join_ok(struct kxfer_session *s, enum kxfer_peer_auth result,
			bool named);
void kxfer_auth_refuse(struct kxfer_session *s, u32 reason, const char *why);
void kxfer_auth_release(struct kxfer_session *s);

/* ---------------------------------------------------------------------- */
/* chardev.c, job.c and the data path: /dev/kxfer and its jobs             */
/* ---------------------------------------------------------------------- */

extern unsigned int kxfer_max_segments;
extern unsigned int kxfer_max_inflight;
extern unsigned int kxfer_max_jobs_per_submit;
extern unsigned int kxfer_stripe;
extern unsigned int kxfer_rail_stripe;

/**
 * struct kxfer_file - one open /dev/kxfer
 * @kf_ref: the open file and every job in flight hold one
 * @kf_pools: attachment handle -> struct kxfer_pool (one use each)
 * @kf_peers: peer handle -> struct kxfer_session (a reference each)
 * @kf_remotes: remote handle -> struct kxfer_rhandle
 * @kf_lock: protects the event ring and kf_inflight; taken in CQ handlers
 * @kf_wait: woken when an event is posted
 * @kf_reap_mutex: one reaper at a time, so that events are taken only
 *	once they reached user memory
 * @kf_ring: completion events, kf_ring_size (a power of two) entries
 * @kf_msgs: the message of the NOTIFY event in the same ring slot, or
 *	%NULL; set with the event under kf_lock, taken by the reaper
 * @kf_head: next event to post (free running)
 * @kf_tail: next event to reap (free running)
 * @kf_inflight: jobs accepted and not yet completed; with the events not
 *	yet reaped, never more than kf_ring_size: no event is ever lost
 * @kf_shr: the mapped ring (KXFER_IOC_RING_SETUP), or %NULL: a copy of
 *	@kf_ring for user space, whose tail alone is read back (sanitized
 *	into @kf_tail); set once under kf_reap_mutex and kf_lock
 * @kf_shr_ev: its entries
 * @kf_shr_len: its length in bytes, what mmap(2) must ask for
 * @kf_bounce: KXFER_NOTIFY_MSG_MAX bytes, under kf_reap_mutex: a message
 *	is copied there under kf_lock, then to user space
 * @kf_poll_wait_ns: how long a sleeping REAP's wait on polled sessions
 *	takes, as learnt (event.c, hybrid polling); racy reads and writes
 */
struct kxfer_file {
	struct kref		kf_ref;
	struct xarray		kf_pools;
	struct xarray		kf_peers;
	struct xarray		kf_remotes;
	spinlock_t		kf_lock;	/* the ring, kf_inflight */
	wait_queue_head_t	kf_wait;
	struct mutex		kf_reap_mutex;	/* one reaper at a time */
	struct kxfer_event	*kf_ring;
	void			**kf_msgs;
	unsigned int		kf_ring_size;
	unsigned int		kf_head;
	unsigned int		kf_tail;
	unsigned int		kf_inflight;
	struct xarray		kf_subs;	/* handle -> struct kxfer_sub */
	/* NOTIFY events the ring lacked room for, under kf_lock */
	struct list_head	kf_notes;
	unsigned int		kf_nnotes;
	/* FENCE order, one gate per session used, under kf_lock */
	struct list_head	kf_gates;
	/* jobs whose event is posted and that are not yet freed */
	atomic_t		kf_freeing;
	struct kxfer_ring	*kf_shr;
	struct kxfer_event	*kf_shr_ev;
	size_t			kf_shr_len;
	void			*kf_bounce;
	u64			kf_poll_wait_ns;
	bool			kf_poll;	/* has a gate to a polled session */
};

/**
 * struct kxfer_rhandle - what a remote handle of a file names
 */
struct kxfer_rhandle {
	struct kxfer_session	*rh_sess;	/* referenced */
	u32			rh_peer;	/* the peer handle it came from */
	char			rh_name[KXFER_NAME_MAX];
	u64			rh_gen;
	u64			rh_conn_gen;	/* s_conn_gen at lookup */
	u64			rh_len;
	u32			rh_access;
};

int kxfer_chardev_register(void);
void kxfer_chardev_unregister(void);
void kxfer_file_put(struct kxfer_file *kf);

long kxfer_ioc_peer_lookup(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_remote_lookup(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_submit(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_reap(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_ring_setup(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_ring_msg(struct kxfer_file *kf, void __user *uarg);
int kxfer_ring_mmap(struct kxfer_file *kf, struct vm_area_struct *vma);
void kxfer_file_ring_sync(struct kxfer_file *kf);
void kxfer_file_free_ring(struct kxfer_file *kf);
long kxfer_ioc_cancel(struct kxfer_file *kf, void __user *uarg);
__poll_t kxfer_file_poll(struct kxfer_file *kf, struct file *filp,
			 poll_table *wait);
void kxfer_file_drop_handles(struct kxfer_file *kf);
void kxfer_qp_data_init(struct kxfer_session *s, struct kxfer_qp *qp);

/* poll.c: polled send CQs */
/*
 * Polled sessions one SUBMIT or REAP polls, of those the file has jobs on
 * (the first found); the others get theirs from their poll work.
 */
#define KXFER_FILE_POLL_MAX	8
void kxfer_session_poll_init(struct kxfer_session *s);
void kxfer_session_poll_stop(struct kxfer_session *s);
void kxfer_session_poll_arm(struct kxfer_session *s);
int kxfer_session_poll(struct kxfer_session *s);
void kxfer_session_poll_enable(struct kxfer_session *s, struct kxfer_qp *qp);
void kxfer_session_poll_unhook(struct kxfer_session *s, struct kxfer_qp *qp);
void kxfer_session_poll_drain(struct kxfer_session *s, unsigned long qps,
			      bool disable);
bool kxfer_session_poll_wait(struct kxfer_session *s, struct completion *done,
			     unsigned long tmo);
int kxfer_file_poll_cqs(struct kxfer_file *kf);
bool kxfer_file_polled_inflight(struct kxfer_file *kf);
void kxfer_file_set_poll_locked(struct kxfer_file *kf);
void kxfer_qps_data_stop(struct kxfer_session *s);
void kxfer_qps_data_fail(struct kxfer_session *s);
void kxfer_qps_cut_rexport(struct kxfer_session *s,
			   const struct kxfer_rexport *rx);
u64 kxfer_session_ka_timeout_ns(const struct kxfer_session *s);
void kxfer_session_get(struct kxfer_session *s);
void kxfer_session_put(struct kxfer_session *s);
struct kxfer_session *kxfer_session_find(const char *name);
struct kxfer_session *kxfer_session_get_sid(const char *node, u64 sid);
void kxfer_session_qps_error(struct kxfer_session *s);
void kxfer_jobs_flush(void);
void kxfer_file_jobs_settle(struct kxfer_file *kf);
void kxfer_job_sent(struct kxfer_task *job, int status);
void kxfer_session_notify_flush(struct kxfer_session *s);
void kxfer_session_notify_fail(struct kxfer_session *s);
void kxfer_notify_deliver(struct kxfer_session *s, const char *export,
			  u64 value, u64 bytes, const void *msg, u32 msg_len);
struct kxfer_sub;
struct kxfer_sub *kxfer_sub_alloc(struct kxfer_file *kf, const char *name);
void kxfer_sub_free(struct kxfer_sub *sb);
int kxfer_sub_install(struct kxfer_sub *sb, u32 *handle);
long kxfer_ioc_notify_sub(struct kxfer_file *kf, void __user *uarg);
long kxfer_ioc_notify_unsub(struct kxfer_file *kf, void __user *uarg);
void kxfer_file_drop_subs(struct kxfer_file *kf);
void kxfer_file_free_notes(struct kxfer_file *kf);
void kxfer_file_free_gates(struct kxfer_file *kf);
int kxfer_gate_hold(struct kxfer_file *kf, struct kxfer_session *s);
void kxfer_gate_unhold(struct kxfer_file *kf, struct kxfer_session *s);
long kxfer_ioc_release(struct kxfer_file *kf, void __user *uarg);
int kxfer_peer_handle_new(struct kxfer_file *kf, struct kxfer_session *s,
			  u32 *handle);
void kxfer_peer_handle_drop(struct kxfer_file *kf, u32 handle,
			    struct kxfer_session *s);

/* ondemand.c: the policy of sessions on demand (KXFER_IOC_CONNECT) */

/**
 * struct kxfer_connect_rule - one rule of the policy
 * @cr_node: on kxfer_connect_rules, under kxfer_connect_mutex
 * @cr_prefix: the addresses it allows
 * @cr_port: their listeners' port
 * @cr_key: the key its sessions prove (a user reference), or %NULL
 * @cr_qps: QPs of its sessions
 * @cr_idle_s: seconds without a handle or a job before one ends
 * @cr_made: sessions made under it
 * @cr_refused: requests it allowed that were refused (ENOSPC)
 */
struct kxfer_connect_rule {
	struct list_head	cr_node;
	struct kxfer_prefix	cr_prefix;
	u16			cr_port;
	struct kxfer_key	*cr_key;
	u32			cr_qps;
	u32			cr_idle_s;
	atomic_t		cr_made;
	atomic_t		cr_refused;
};

extern struct mutex kxfer_connect_mutex;
extern struct list_head kxfer_connect_rules;

int kxfer_connect_rule_add(const struct kxfer_connect_rule *args,
			   struct netlink_ext_ack *extack);
int kxfer_connect_rule_del(const struct kxfer_prefix *p, u16 port,
			   struct netlink_ext_ack *extack);
void kxfer_connect_rules_destroy_all(void);
long kxfer_ioc_connect(struct kxfer_file *kf, void __user *uarg);
/* Caller holds s_mutex. */
struct kxfer_rexport *kxfer_rexport_find(struct kxfer_session *s,
					 const char *name);
int kxfer_rhandle_fill(struct kxfer_session *s, const char *name,
		       const u8 *token, struct kxfer_rhandle *rh);

/* Reserved fields and padding: zero, or the call is refused. */
static inline bool kxfer_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* ---------------------------------------------------------------------- */
/* netlink.c: the "kxfer" generic netlink family                           */
/* ---------------------------------------------------------------------- */

int kxfer_nl_register(void);
void kxfer_nl_unregister(void);
void kxfer_nl_notify_dev(struct kxfer_device *kd, bool add);
/* The two below: caller holds kxfer_obj_mutex. */
void kxfer_nl_notify_pool(struct kxfer_pool *pool, bool add);
void kxfer_nl_notify_export(struct kxfer_export *exp, bool add);
/* Caller holds the session's s_mutex, or it is stopped. */
void kxfer_nl_notify_peer(struct kxfer_session *s, bool gone);

#endif /* _KXFER_H */
