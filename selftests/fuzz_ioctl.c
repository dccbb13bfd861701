// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_ioctl: a multi-threaded fuzzer of /dev/kxfer.
 *
 * Every thread runs a reproducible sequence (its own xorshift generator
 * seeded from --seed and its index) of random and mutated ioctls and
 * mmaps: valid calls, bad pointers (NULL, unmapped, kernel, misaligned,
 * a PROT_NONE page, arrays crossing into one), huge counts, wrapping and
 * overlapping ranges, random flags, ops, handles and reserved fields,
 * unknown ioctl numbers, and real jobs over a session (--peer) mixed in.
 *
 * Pools over the process's own memory (POOL_USER, POOL_DMABUF) and their
 * exports (EXPORT_ADD, EXPORT_DEL) too.  Each thread has an arena of
 * 2 MiB slots that it maps, remaps, write-protects and unmaps as it
 * goes: anonymous (small pages or THP), a memfd (shared or private),
 * the pool's own /dev/kxfer mapping, a udmabuf mapping, read-only or
 * PROT_NONE; a PROT_NONE guard follows, so that no range it passes
 * reaches memory the fuzzer lives in.  Ranges are valid or unaligned,
 * empty, huge, wrapping, with a hole, over bad addresses (the vDSO, its
 * data, the kernel); dma-bufs are the thread's udmabuf, fresh ones and
 * dma-heap buffers closed right after the call (where the kernel has
 * them: 6.12, not 6.1), or descriptors that are no dma-buf, closed or
 * never open.  User pools are the local side of jobs, their exports
 * (looked up through the session to this node) the remote side; both
 * end under jobs in flight (POOL_DETACH, EXPORT_DEL, a victim's close).
 * One thread pins without CAP_IPC_LOCK, under RLIMIT_MEMLOCK.
 *
 * Threads share some files, so that pools are detached and handles
 * looked up while others submit and reap, and "victim" files, which any
 * thread may close under the others (dup2 of /dev/null over the number,
 * so that the number stays ours and nobody else's file gets the calls).
 * A thread's own file is its alone: there the outcome of the calls on
 * user pools and exports is known exactly (which handle is which pool,
 * which export exists).
 *
 * Checked on every call:
 *  - the errno is in the set the module documents for that ioctl (and
 *    is exactly the one expected when the mutation decides it);
 *  - no output field holds what looks like a kernel address;
 *  - SUBMIT's accepted/error agree with the return value;
 *  - every event is well formed, belongs to the file that reaped it and
 *    reports the bytes its job asked for;
 *  - every accepted job gets exactly one completion: per file (but the
 *    victims), count and sum of user_data accepted == reaped, at the end;
 *  - POOL_USER and POOL_DMABUF give back their argument with only the
 *    handle set; EXPORT_ADD and EXPORT_DEL write nothing;
 *  - the four calls on user memory take only names peers take
 *    (kxfer_wire_check_name(): a peer fails the session that advertises
 *    another), EINVAL else, as `kxferctl export add` does;
 *  - on the own file, a valid POOL_USER or POOL_DMABUF fails only for
 *    want of resources (RLIMIT_MEMLOCK, the budgets, handles);
 *  - nothing is left once every file is closed: pool_mem_used is back
 *    to what it was at the start and the process pins nothing (VmPin).
 *
 * Exit status 0 when all held, 1 otherwise; a failure prints the seed,
 * the thread, the call and its arguments.  Usage: see usage().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include <linux/kxfer.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

#define DEV		"/dev/kxfer"
#define PAGE		4096UL
#define NSHARED		2
#define NVICTIM		3
#define MAXMAPS		8
#define FD_ID_SHIFT	56
#define SEQ_SHIFT	24
#define BYTES_MASK	((1ULL << SEQ_SHIFT) - 1)
#define VALID_BYTES_MAX	(1U << 22)	/* keeps a job's bytes in user_data */
#define UA_SLOT		(2UL << 20)	/* a slot of a thread's user-memory arena */
#define UA_SLOTS	4
#define UA_LEN		(UA_SLOTS * UA_SLOT)
#define NUPOOL		8	/* user pools of a file, "fzu.<file>.<n>" */
#define NUEXP		8	/* their exports, "fzx.<file>.<n>" */
#define BIG_LEN		(64ULL << 20)	/* below what pool_mem_max has left */

/* ---------------------------------------------------------------------- */
/* Options, results                                                        */
/* ---------------------------------------------------------------------- */

static __u64 opt_seed;
static unsigned long opt_iters = 20000;
static unsigned int opt_threads = 4;
static unsigned int opt_time = 60;
static const char *opt_pool = "fz0";
static const char *opt_peer = "";
static const char *opt_exp_rw = "fze";
static const char *opt_exp_ro = "fzro";
/* an IPv4 address a connect rule allows at KXFER_PORT, or "" */
static const char *opt_connect = "";
static int opt_verbose;

static struct kxfer_query limits;
static __u64 pool_size;
static __u64 rw_len, ro_len;	/* of the remote exports, from the lookups */
static atomic_int failed;
static atomic_int stop;
static struct timespec t_start;

enum call {
	C_QUERY, C_ATTACH, C_DETACH, C_PEER, C_REMOTE, C_SUBMIT, C_REAP,
	C_NSUB, C_NUNSUB, C_PUSER, C_PDMABUF, C_EXPADD, C_EXPDEL, C_UNKNOWN,
	C_MMAP, C_CLOSE, C_ARENA, C_RSETUP, C_RMSG, C_RELEASE, C_CONNECT,
	C_NCALLS
};

static const char *const call_name[C_NCALLS] = {
	"QUERY", "POOL_ATTACH", "POOL_DETACH", "PEER_LOOKUP", "REMOTE_LOOKUP",
	"SUBMIT", "REAP", "NOTIFY_SUBSCRIBE", "NOTIFY_UNSUBSCRIBE",
	"POOL_USER", "POOL_DMABUF", "EXPORT_ADD", "EXPORT_DEL",
	"unknown-ioctl", "mmap", "close-under-use", "arena-remap",
	"RING_SETUP", "RING_MSG", "RELEASE", "CONNECT",
};

/* errnos each call may return: kmod/chardev.c, kmod/job.c, kmod/event.c, kmod/handle.c, kmod/pool.c */
static const int set_query[] = { EFAULT, EINVAL, 0 };
static const int set_attach[] = { EFAULT, EINVAL, ENOENT, EACCES, EMFILE,
				  ENOMEM, 0 };
static const int set_detach[] = { EFAULT, EINVAL, ENOENT, 0 };
static const int set_lookup[] = { EFAULT, EINVAL, ENOENT, EMFILE, ENOMEM, 0 };
static const int set_submit[] = { EFAULT, EINVAL, EAGAIN, ENOENT, ENOTCONN,
				  ESTALE, EACCES, ERANGE, ENOMEM, E2BIG, 0 };
static const int set_reap[] = { EFAULT, EINVAL, EINTR, 0 };
static const int set_nsub[] = { EFAULT, EINVAL, ENOENT, EACCES, EMFILE,
				ENOMEM, 0 };
/* uapi/linux/kxfer.h, above each struct; kmod/upool.c */
static const int set_puser[] = { EFAULT, EINVAL, EEXIST, EACCES, EOPNOTSUPP,
				 ENOMEM, ENOSPC, EPERM, EMFILE, 0 };
static const int set_pdmabuf[] = { EFAULT, EINVAL, EBADF, ENODEV, EOPNOTSUPP,
				   EEXIST, ENOSPC, EPERM, EMFILE, ENOMEM, 0 };
static const int set_expadd[] = { EFAULT, EINVAL, ENOENT, EPERM, ERANGE,
				  EEXIST, ENOMEM, EMFILE, 0 };
static const int set_expdel[] = { EFAULT, EINVAL, ENOENT, EPERM, 0 };
static const int set_unknown[] = { ENOTTY, 0 };
/* mmap: the module's ENXIO/EINVAL, the core's EINVAL/ENOMEM/EOVERFLOW */
static const int set_mmap[] = { EINVAL, ENXIO, ENOMEM, EOVERFLOW, 0 };
/* event.c: the mapped ring */
static const int set_rsetup[] = { EFAULT, EINVAL, ENOMEM, 0 };
static const int set_rmsg[] = { EFAULT, EINVAL, ENOENT, ENOSPC, ENOMEM, 0 };
/* handle.c */
static const int set_release[] = { EFAULT, EINVAL, ENOENT, 0 };
/* ondemand.c */
static const int set_connect[] = { EFAULT, EINVAL, EACCES, ENOSPC, EMFILE,
				   ENOMEM, 0 };
/* the arena's own mmap/mprotect/madvise calls */
static const int set_arena[] = { ENOMEM, EEXIST, 0 };
/*
 * a job's status in its completion (kxfer_wc_errno() and teardown;
 * ESTALE: a fenced job whose export was withdrawn or re-created)
 */
static const int set_status[] = { ECONNRESET, EACCES, ETIMEDOUT, EREMOTEIO,
				  EIO, ENOTCONN, ESTALE, 0 };

static const int *const call_set[C_NCALLS] = {
	set_query, set_attach, set_detach, set_lookup, set_lookup, set_submit,
	set_reap, set_nsub, set_detach, set_puser, set_pdmabuf, set_expadd,
	set_expdel, set_unknown, set_mmap, set_unknown, set_arena,
	set_rsetup, set_rmsg, set_release, set_connect,
};

static atomic_ulong n_calls[C_NCALLS];
static atomic_ulong n_ok[C_NCALLS];
static atomic_ulong n_us[C_NCALLS];		/* time in the calls */
static atomic_ulong n_errno[C_NCALLS][160];	/* -v: what they said */
static __thread unsigned long call_us;		/* the last ioctl's */
static atomic_ulong n_accepted, n_completed, n_job_ok, n_notify_ev;
static atomic_ulong n_maps_ok, n_victim_kills;
static atomic_ulong n_upools, n_dmabufs, n_uexports, n_ujobs, n_uxjobs;
static atomic_ulong n_bursts, n_uxlookups, n_relocs, n_victim_upools;

static bool in_set(int e, const int *set)
{
	for (; *set; set++)
		if (*set == e)
			return true;
	return false;
}

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t_start.tv_sec) + (t.tv_nsec - t_start.tv_nsec) / 1e9;
}

struct thr;
static __printf(2, 3) void fail(struct thr *t, const char *fmt, ...);

/* ---------------------------------------------------------------------- */
/* Random numbers                                                          */
/* ---------------------------------------------------------------------- */

static __u64 rnd(__u64 *s)
{
	__u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static __u64 rbelow(__u64 *s, __u64 n)
{
	return n ? rnd(s) % n : 0;
}

static bool chance(__u64 *s, unsigned int one_in)
{
	return rbelow(s, one_in) == 0;
}

/* A value from edges and random bits, for counts, offsets and lengths. */
static __u64 rval(__u64 *s)
{
	static const __u64 edges[] = {
		0, 1, 2, 7, 4095, 4096, 4097, 65535, 65536, 1ULL << 20,
		(1ULL << 22) - 1, 1ULL << 22, (1ULL << 22) + 1, 1ULL << 31,
		1ULL << 32, (1ULL << 32) - 1, 1ULL << 40, 1ULL << 63,
		~0ULL, ~0ULL - 1, ~0ULL - 4095, 0x7fffffffffffffffULL,
	};

	switch (rbelow(s, 4)) {
	case 0:
		return edges[rbelow(s, ARRAY_SIZE(edges))];
	case 1:
		return rnd(s);
	case 2:
		return rbelow(s, 1 << 23);
	default:
		return rbelow(s, 64);
	}
}

/* ---------------------------------------------------------------------- */
/* Files                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * An open /dev/kxfer.  Counted files (private and shared) account for
 * every accepted job; victims do not: they may be closed at any time.
 */
#define LIVE_BITS	1024

struct kfd {
	int			fd;
	unsigned int		id;		/* in user_data's top byte */
	bool			counted;
	atomic_uint		pool;		/* a handle believed attached */
	atomic_uint		peer;
	atomic_uint		rem_rw, rem_ro;
	atomic_uint		sub;
	/*
	 * A pool of user memory believed made (handle, pages << 32); what no
	 * pool of the file exceeds; a remote handle of one of the fuzzer's
	 * user exports (handle, access << 32, len << 36).
	 */
	atomic_ullong		upool;
	atomic_ullong		max_local;
	atomic_ullong		rem_u;
	atomic_ullong		seq;
	atomic_ullong		accepted, reaped;	/* completions */
	atomic_ullong		sum_acc, sum_reaped;	/* of user_data */
	/*
	 * Handles that lookups returned and RELEASE did not take back (bit
	 * per handle below LIVE_BITS), whether or not pool/peer/rem_* keep
	 * them; and a count bumped around every lookup and RELEASE, odd
	 * while one runs.  A SUBMIT accepting a job the model refused is a
	 * fault only if its handles are none of these and no lookup or
	 * RELEASE ran meanwhile: a number given back may be handed out
	 * again to a lookup another thread makes.
	 */
	atomic_ullong		live[LIVE_BITS / 64];
	atomic_uint		hseq;
	/* victims: ops hold it for reading, a revival for writing */
	pthread_rwlock_t	lock;
	atomic_int		dead;
};

static void live_set(struct kfd *k, __u32 h, bool on)
{
	unsigned long long bit;

	if (h >= LIVE_BITS)
		return;
	bit = 1ULL << (h % 64);
	if (on)
		atomic_fetch_or(&k->live[h / 64], bit);
	else
		atomic_fetch_and(&k->live[h / 64], ~bit);
}

static bool live_test(struct kfd *k, __u32 h)
{
	return h < LIVE_BITS &&
	       (atomic_load(&k->live[h / 64]) >> (h % 64) & 1);
}

static struct kfd shared_fd[NSHARED];
static struct kfd victim_fd[NVICTIM];
/* ids: the shared files first, then the victims, then the threads' own */
static atomic_uint next_fd_id = 1;

struct map {
	void	*addr;
	size_t	len;
};

/* What a slot of a thread's user-memory arena holds. */
enum ua_kind { U_ANON, U_THP, U_MEMFD, U_MEMFD_PRIV, U_KXFER, U_UDMABUF,
	       U_RO, U_NONE, U_NKINDS, U_ZAPPED, U_LOST };

static const char *const ua_name[] = {
	"anon", "thp", "memfd", "memfd-private", "kxfer-mmap", "udmabuf-mmap",
	"read-only", "PROT_NONE", "", "kxfer-mmap-zapped", "lost",
};

/* The thread's own file: its user pools and their exports, exactly. */
struct upool {
	__u32	handle;		/* 0: none */
	__u64	len;
};

struct uexp {
	bool	live;
	__u32	pool;		/* the handle it was made on */
};

struct thr {
	unsigned int	idx;
	pthread_t	tid;
	__u64		seed, rng;
	unsigned long	iter;
	bool		joined;
	struct kfd	own;
	struct map	maps[MAXMAPS];
	/* arenas */
	struct kxfer_job	*jobs;		/* max_jobs_per_submit */
	struct kxfer_segment	*segs;		/* max_segments */
	struct kxfer_event	*evs;		/* 1024 */
	char		*edge;		/* 4 RW pages, then a PROT_NONE page */
	char		*ro;		/* one page, PROT_READ while used */
	char		desc[1024];	/* the call being made */
	char		why[160];	/* why the model refuses a job */
	bool		victim;		/* working on a victim file */
	/* user memory */
	char		*ua_base;	/* the reservation: guard, ua, guard */
	char		*ua;		/* UA_SLOTS slots, then a PROT_NONE guard */
	enum ua_kind	ua_kind[UA_SLOTS];
	int		memfd;		/* UA_LEN bytes, behind the memfd slots */
	int		udmabuf;	/* a slot's worth of the memfd, or -1 */
	int		notbuf;		/* an eventfd: no dma-buf */
	unsigned int	uname_seq;	/* unique names of calls that must fail */
	struct upool	up[NUPOOL];	/* of the own file */
	struct uexp	ux[NUEXP];
};

static void *bad_unmapped;	/* an address nothing is mapped at */
static void *bad_none;		/* a PROT_NONE page */
static int devnull;
static char *vdso, *vvar;	/* from /proc/self/maps, or NULL */
static bool have_udmabuf;
static int heap_fd = -1;	/* /dev/dma_heap/system */

static void fail(struct thr *t, const char *fmt, ...)
{
	va_list ap;

	flockfile(stdout);
	printf("FAIL seed %llu thread %u iteration %lu: ",
	       (unsigned long long)opt_seed, t ? t->idx : 0, t ? t->iter : 0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n  call: %s\n", t ? t->desc : "-");
	funlockfile(stdout);
	fflush(stdout);
	if (atomic_fetch_add(&failed, 1) > 20)
		atomic_store(&stop, 1);
}

static void kfd_init(struct kfd *k, bool counted)
{
	memset(k, 0, sizeof(*k));
	k->counted = counted;
	k->id = atomic_fetch_add(&next_fd_id, 1) & 0x7f;
	atomic_store(&k->max_local, pool_size);
	pthread_rwlock_init(&k->lock, NULL);
}

/* Attach the pool and look up the peer and its exports; best effort. */
static void kfd_setup(struct kfd *k)
{
	struct kxfer_pool_attach a = {};
	struct kxfer_peer_lookup pl = {};
	struct kxfer_remote_lookup rl = {};

	strncpy(a.name, opt_pool, sizeof(a.name) - 1);
	if (!ioctl(k->fd, KXFER_IOC_POOL_ATTACH, &a))
		atomic_store(&k->pool, a.handle);
	if (!*opt_peer)
		return;
	strncpy(pl.name, opt_peer, sizeof(pl.name) - 1);
	if (ioctl(k->fd, KXFER_IOC_PEER_LOOKUP, &pl))
		return;
	atomic_store(&k->peer, pl.handle);
	live_set(k, pl.handle, true);
	rl.peer = pl.handle;
	strncpy(rl.name, opt_exp_rw, sizeof(rl.name) - 1);
	if (!ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, &rl)) {
		atomic_store(&k->rem_rw, rl.handle);
		live_set(k, rl.handle, true);
		rw_len = rl.len;
	}
	memset(&rl, 0, sizeof(rl));
	rl.peer = pl.handle;
	strncpy(rl.name, opt_exp_ro, sizeof(rl.name) - 1);
	if (!ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, &rl)) {
		atomic_store(&k->rem_ro, rl.handle);
		live_set(k, rl.handle, true);
		ro_len = rl.len;
	}
}

static int kfd_open(struct kfd *k)
{
	k->fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (k->fd < 0)
		return -1;
	kfd_setup(k);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Checks shared by the calls                                              */
/* ---------------------------------------------------------------------- */

/* Something that looks like a kernel address (direct map, text, modules). */
static bool kptr_like(__u64 v)
{
	return v >= 0xffff800000000000ULL && v < 0xfffffffffff00000ULL;
}

/* Words the call wrote (they differ from what was passed) must not be kernel addresses. */
static void check_out(struct thr *t, const void *before, const void *after,
		      size_t len, const char *what)
{
	const __u64 *b = before, *a = after;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (a[i] != b[i] && kptr_like(a[i]))
			fail(t, "%s: word %zu is 0x%llx, a kernel address?", what,
			     i, (unsigned long long)a[i]);
}

/* @exact of check_errno(): success, or a want of resources */
#define E_RES	(-2)
static const int set_res[] = { ENOMEM, ENOSPC, EMFILE, 0 };

/*
 * The outcome of a call: errno must be in the call's set, and equal to
 * @exact when that is >= 0 (0: the call must succeed), or one of set_res
 * when it is E_RES.
 */
static void check_errno(struct thr *t, enum call c, int ret, int err,
			int exact, const int *extra)
{
	atomic_fetch_add(&n_calls[c], 1);
	atomic_fetch_add(&n_us[c], call_us);
	atomic_fetch_add(&n_errno[c][ret && err > 0 && err < 160 ? err : 0], 1);
	call_us = 0;
	if (!ret) {
		atomic_fetch_add(&n_ok[c], 1);
		if (exact > 0)
			fail(t, "%s succeeded, expected %s", call_name[c],
			     strerror(exact));
		return;
	}
	/* A victim closed under us is /dev/null now. */
	if (t && t->victim && (err == ENOTTY || err == ENODEV))
		return;
	if (!in_set(err, call_set[c]) && !(extra && in_set(err, extra))) {
		fail(t, "%s: undocumented errno %d (%s)", call_name[c], err,
		     strerror(err));
		return;
	}
	if (exact >= 0 && err != exact)
		fail(t, "%s: errno %d (%s), expected %s", call_name[c], err,
		     strerror(err), exact ? strerror(exact) : "success");
	if (exact == E_RES && !in_set(err, set_res))
		fail(t, "%s: errno %d (%s), expected success or a want of resources",
		     call_name[c], err, strerror(err));
}

/* ---------------------------------------------------------------------- */
/* Argument pointers                                                       */
/* ---------------------------------------------------------------------- */

enum ptr_kind { P_GOOD, P_NULL, P_ONE, P_UNMAPPED, P_KERNEL, P_KTEXT,
		P_NONCANON, P_NONE, P_CROSS, P_RO, P_NKINDS };

static const char *const ptr_name[P_NKINDS] = {
	"good", "NULL", "0x1", "unmapped", "kernel", "kernel-text",
	"non-canonical", "PROT_NONE", "crossing", "read-only",
};

/* Every kind but good/ro/cross faults at once: EFAULT before anything. */
static bool ptr_faults(enum ptr_kind k)
{
	return k != P_GOOD && k != P_RO && k != P_CROSS;
}

static enum ptr_kind pick_ptr(struct thr *t)
{
	if (!chance(&t->rng, 6))
		return P_GOOD;
	return rbelow(&t->rng, P_NKINDS);
}

/*
 * Where to put an argument of @len bytes laid out in @src: a good copy
 * (misaligned at times, in page @area of the edge arena: 0 for headers,
 * 1 for arrays), a copy whose end runs into the PROT_NONE page, a
 * read-only copy, or a bad address.  Return: the pointer to pass.
 */
static void *place(struct thr *t, enum ptr_kind k, const void *src,
		   size_t len, void *good, unsigned int area)
{
	char *p;

	switch (k) {
	case P_GOOD:
		if (chance(&t->rng, 4) && len + 8 <= (area ? 2 : 1) * PAGE) {
			p = t->edge + area * PAGE + rbelow(&t->rng, 8);
			memmove(p, src, len);
			return p;
		}
		if (good != src)
			memmove(good, src, len);
		return good;
	case P_NULL:
		return NULL;
	case P_ONE:
		return (void *)1UL;
	case P_UNMAPPED:
		return (char *)bad_unmapped + rbelow(&t->rng, PAGE);
	case P_KERNEL:
		return (void *)(0xffff888000000000UL + rbelow(&t->rng, 1 << 30));
	case P_KTEXT:
		return (void *)0xffffffff81000000UL;
	case P_NONCANON:
		return (void *)0x0000800000000000UL;
	case P_NONE:
		return bad_none;
	case P_CROSS:
		/* 1 .. len-1 bytes readable, the rest in the PROT_NONE page */
		if (len < 2 || len > 3 * PAGE)
			return bad_none;
		p = t->edge + 4 * PAGE - 1 - rbelow(&t->rng, len - 1);
		memcpy(p, src, t->edge + 4 * PAGE - p);
		return p;
	case P_RO:
		if (len > PAGE)
			return good;
		mprotect(t->ro, PAGE, PROT_READ | PROT_WRITE);
		memcpy(t->ro, src, len);
		mprotect(t->ro, PAGE, PROT_READ);
		return t->ro;
	default:
		return NULL;
	}
}

/* ---------------------------------------------------------------------- */
/* Handles and names                                                       */
/* ---------------------------------------------------------------------- */

static __u32 pick_handle(struct thr *t, atomic_uint *known)
{
	switch (rbelow(&t->rng, 8)) {
	case 0:
		return 0;
	case 1:
		return rbelow(&t->rng, 70);
	case 2:
		return (__u32)rval(&t->rng);
	default:
		return atomic_load(known);
	}
}

static void pick_name(struct thr *t, char *name, const char *good)
{
	static const char *const other[] = {
		"nosuch", "fz1", "fze", "self", "kxfer-a", "a", "..", "-", "",
	};
	unsigned int i;

	memset(name, 0, KXFER_NAME_MAX);
	switch (rbelow(&t->rng, 10)) {
	case 0:		/* unterminated */
		memset(name, 'a' + rbelow(&t->rng, 26), KXFER_NAME_MAX);
		break;
	case 1:		/* garbage bytes */
		for (i = 0; i < KXFER_NAME_MAX; i++)
			name[i] = rnd(&t->rng);
		if (chance(&t->rng, 2))
			name[rbelow(&t->rng, KXFER_NAME_MAX)] = 0;
		break;
	case 2:
	case 3:
		strcpy(name, other[rbelow(&t->rng, ARRAY_SIZE(other))]);
		break;
	case 4:		/* good name, garbage after the NUL */
		strcpy(name, good);
		for (i = strlen(good) + 1; i < KXFER_NAME_MAX; i++)
			name[i] = rnd(&t->rng);
		break;
	default:
		strncpy(name, good, KXFER_NAME_MAX - 1);
	}
}

/* Is the name as the module would take it (non-empty, terminated)? */
static bool name_ok(const char *name)
{
	return name[0] && memchr(name, 0, KXFER_NAME_MAX);
}

/*
 * Would a peer take it (kxfer_wire_check_name(): ASCII letters, digits
 * and ". _ - :")?  The calls on user memory and netlink take no other.
 */
static bool name_valid(const char *name)
{
	unsigned int i;

	if (!name_ok(name))
		return false;
	for (i = 0; name[i]; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') ||
		      strchr("._-:", name[i])))
			return false;
	return true;
}

/*
 * A name for a pool (@prefix "fzu") or an export ("fzx") of file @k:
 * "<prefix>.<file id>.<n>", its own (returns n); or, if @bad, mostly
 * unterminated, garbage, empty, with bytes peers refuse (Latin-1 letters
 * among them), of the administrator, or another file's (pools only); -1
 * then.
 */
static int pick_uname(struct thr *t, struct kfd *k, char *name,
		      const char *prefix, unsigned int max, bool export,
		      bool bad)
{
	unsigned int n = rbelow(&t->rng, max), i;

	memset(name, 0, KXFER_NAME_MAX);
	snprintf(name, KXFER_NAME_MAX, "%s.%u.%u", prefix, k->id, n);
	if (!bad)
		return n;
	switch (rbelow(&t->rng, 8)) {
	case 0:		/* unterminated */
		memset(name, 'a' + rbelow(&t->rng, 26), KXFER_NAME_MAX);
		return -1;
	case 1:		/* garbage bytes, terminated somewhere */
		for (i = 0; i < KXFER_NAME_MAX; i++)
			name[i] = rnd(&t->rng);
		name[rbelow(&t->rng, KXFER_NAME_MAX)] = 0;
		return -1;
	case 2:
		name[0] = 0;
		return -1;
	case 3:		/* a space, a slash, a newline, a Latin-1 letter */
		snprintf(name, KXFER_NAME_MAX, "%s%c%u", prefix,
			 " /\n\t\xe9\xc0"[rbelow(&t->rng, 6)], n);
		return -1;
	case 4:		/* ours, with garbage after the NUL */
		for (i = strlen(name) + 1; i < KXFER_NAME_MAX; i++)
			name[i] = rnd(&t->rng);
		return n;
	case 5:		/* the longest name, still ours */
		memset(name + strlen(name), '-', KXFER_NAME_MAX - 1 - strlen(name));
		return -1;
	case 6:		/* the administrator's: EEXIST */
		memset(name, 0, KXFER_NAME_MAX);
		strcpy(name, export ? opt_exp_rw : opt_pool);
		return -1;
	default:	/* a shared or victim file's, never a thread's own */
		if (export)
			return n;
		i = 1 + rbelow(&t->rng, NSHARED + NVICTIM);
		snprintf(name, KXFER_NAME_MAX, "%s.%u.%u", prefix,
			 i == k->id ? i % (NSHARED + NVICTIM) + 1 : i, n);
		return -1;
	}
}

/* Is @name one of the fuzzer's user pools' names, of any file? */
static bool is_uname(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, 3) && name[3] == '.' &&
	       memchr(name, 0, KXFER_NAME_MAX);
}

static __u64 up_pack(__u32 h, __u64 len)
{
	return h | (len / PAGE) << 32;
}

static __u32 up_handle(__u64 v)
{
	return (__u32)v;
}

static __u64 up_len(__u64 v)
{
	return (v >> 32) * PAGE;
}

/* A remote export: handle, access, len (below 2^28) in one word. */
static __u64 rx_pack(__u32 h, __u32 access, __u64 len)
{
	return h | (__u64)(access & 0xf) << 32 | len << 36;
}

static __u32 rx_handle(__u64 v)
{
	return (__u32)v;
}

static __u32 rx_access(__u64 v)
{
	return (v >> 32) & 0xf;
}

static __u64 rx_len(__u64 v)
{
	return v >> 36;
}

static void bump_max(atomic_ullong *m, __u64 v)
{
	unsigned long long o = atomic_load(m);

	while (o < v && !atomic_compare_exchange_weak(m, &o, v))
		;
}

/* The own file's user pool of handle @h, if it is one. */
static struct upool *own_upool(struct thr *t, struct kfd *k, __u32 h)
{
	unsigned int i;

	if (k != &t->own || !h)
		return NULL;
	for (i = 0; i < NUPOOL; i++)
		if (t->up[i].handle == h)
			return &t->up[i];
	return NULL;
}

/* A user pool of file @k and its length; 0 if none is known. */
static __u32 pick_upool(struct thr *t, struct kfd *k, __u64 *len)
{
	unsigned int i, n = rbelow(&t->rng, NUPOOL);
	__u64 v;

	*len = 0;
	if (k == &t->own) {
		for (i = 0; i < NUPOOL; i++) {
			struct upool *u = &t->up[(n + i) % NUPOOL];

			if (u->handle) {
				*len = u->len;
				return u->handle;
			}
		}
		return 0;
	}
	v = atomic_load(&k->upool);
	*len = up_len(v);
	return up_handle(v);
}

/*
 * Pool @h of file @k was detached: on the own file its exports went
 * with it; elsewhere it is no longer the file's user pool.
 */
static void upool_gone(struct thr *t, struct kfd *k, __u32 h)
{
	struct upool *u = own_upool(t, k, h);
	unsigned long long v = atomic_load(&k->upool);
	unsigned int i;

	if (k != &t->own && up_handle(v) == h)
		atomic_compare_exchange_strong(&k->upool, &v, 0);
	if (!u)
		return;
	u->handle = 0;
	for (i = 0; i < NUEXP; i++)
		if (t->ux[i].pool == h)
			t->ux[i].live = false;
}

/*
 * No local range of a job on pool @h of file @k may end beyond this:
 * exact on the own file, a bound that only grows elsewhere.
 */
static __u64 local_bound(struct thr *t, struct kfd *k, __u32 h)
{
	struct upool *u;

	if (k != &t->own)
		return atomic_load(&k->max_local);
	u = own_upool(t, k, h);
	return u ? u->len : pool_size;
}

/* ---------------------------------------------------------------------- */
/* The calls                                                               */
/* ---------------------------------------------------------------------- */

static int do_ioctl(int fd, unsigned long cmd, void *arg, int *err)
{
	struct timespec a, b;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &a);
	ret = ioctl(fd, cmd, arg);
	*err = ret < 0 ? errno : 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	call_us = (b.tv_sec - a.tv_sec) * 1000000 +
		  (b.tv_nsec - a.tv_nsec) / 1000;
	return ret;
}

static void export_stale(struct thr *t, struct kfd *k, __u32 h);
static void *arena(size_t len, int prot);

static void fz_query(struct thr *t, struct kfd *k)
{
	struct kxfer_query q = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = 0;
	void *p;

	if (chance(&t->rng, 4))
		q.flags = rval(&t->rng);
	if (chance(&t->rng, 4))
		q.reserved[rbelow(&t->rng, 3)] = rval(&t->rng);
	if (chance(&t->rng, 16))
		q.reserved0 = rval(&t->rng);
	if (chance(&t->rng, 8))
		q.api_version = rnd(&t->rng);	/* out fields: ignored */
	if (q.flags || q.reserved0 || q.reserved[0] ||
	    q.reserved[1] || q.reserved[2])
		exact = EINVAL;
	in = q;
	p = place(t, pk, &q, sizeof(q), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS || (pk == P_RO && !exact))
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "QUERY fd %d arg %s %p flags 0x%x reserved %x,%llx,%llx,%llx",
		 k->fd, ptr_name[pk], p, in.flags, in.reserved0,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1],
		 (unsigned long long)in.reserved[2]);
	ret = do_ioctl(k->fd, KXFER_IOC_QUERY, p, &err);
	check_errno(t, C_QUERY, ret, err, exact, NULL);
	if (ret)
		return;
	memcpy(&q, p, sizeof(q));
	check_out(t, &in, &q, sizeof(q), "QUERY");
	if (q.api_version != KXFER_API_VERSION ||
	    q.max_segments != limits.max_segments ||
	    q.max_jobs_per_submit != limits.max_jobs_per_submit ||
	    q.max_inflight != limits.max_inflight || q.reserved[0] ||
	    q.reserved[2] || q.reserved0 || q.flags)
		fail(t, "QUERY answered differently: api %u segs %u",
		     q.api_version, q.max_segments);
}

static void fz_attach(struct thr *t, struct kfd *k)
{
	struct kxfer_pool_attach a = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = -1;
	void *p;

	pick_name(t, a.name, opt_pool);
	/* A pool of some file's memory: only its owner has it, not by name */
	if (chance(&t->rng, 8))
		snprintf(a.name, sizeof(a.name), "fzu.%u.%u",
			 (unsigned int)rbelow(&t->rng, 16),
			 (unsigned int)rbelow(&t->rng, NUPOOL));
	if (chance(&t->rng, 6))
		a.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		a.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 3))
		a.handle = rnd(&t->rng);	/* out: ignored */
	if (a.flags || a.reserved[0] || a.reserved[1] || !name_ok(a.name))
		exact = EINVAL;
	else if (strcmp(a.name, opt_pool) && !is_uname(a.name, "fzu"))
		exact = ENOENT;
	in = a;
	p = place(t, pk, &a, sizeof(a), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_ATTACH fd %d arg %s %p name \"%.32s\" flags 0x%x reserved %llx,%llx",
		 k->fd, ptr_name[pk], p, in.name, in.flags,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_ATTACH, p, &err);
	check_errno(t, C_ATTACH, ret, err, exact, NULL);
	/* A read-only argument: attached, then detached again: EFAULT. */
	if (pk == P_RO && !ret)
		fail(t, "POOL_ATTACH succeeded with a read-only argument");
	if (!ret && is_uname(in.name, "fzu"))
		fail(t, "POOL_ATTACH attached a pool of a process's memory");
	if (ret)
		return;
	memcpy(&a, p, sizeof(a));
	if (own_upool(t, k, a.handle))
		fail(t, "POOL_ATTACH gave handle %u, a user pool's", a.handle);
	check_out(t, &in, &a, sizeof(a), "POOL_ATTACH");
	if (!a.handle || a.handle > limits.max_pools_per_fd ||
	    a.mmap_offset != (__u64)a.handle << KXFER_MMAP_WINDOW_SHIFT ||
	    (!strcmp(a.name, opt_pool) && a.size != pool_size))
		fail(t, "POOL_ATTACH: handle %u size %llu offset 0x%llx", a.handle,
		     (unsigned long long)a.size,
		     (unsigned long long)a.mmap_offset);
	if (!strcmp(a.name, opt_pool))
		atomic_store(&k->pool, a.handle);
}

static void fz_detach(struct thr *t, struct kfd *k)
{
	struct kxfer_pool_detach d = {}, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = -1;
	void *p;

	d.handle = pick_handle(t, &k->pool);
	/* A user pool (its exports go, jobs in flight keep it) */
	if (chance(&t->rng, 3)) {
		__u64 len;
		__u32 h = pick_upool(t, k, &len);

		if (h)
			d.handle = h;
	}
	if (chance(&t->rng, 6))
		d.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		d.reserved = rval(&t->rng);
	if ((d.flags & ~KXFER_POOL_DETACH_NOWAIT) || d.reserved)
		exact = EINVAL;
	else if (!d.handle || d.handle > limits.max_pools_per_fd)
		exact = ENOENT;
	else if (own_upool(t, k, d.handle))
		exact = 0;
	p = place(t, pk, &d, sizeof(d), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_DETACH fd %d arg %s %p handle %u flags 0x%x reserved %llx",
		 k->fd, ptr_name[pk], p, d.handle, d.flags,
		 (unsigned long long)d.reserved);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_DETACH, p, &err);
	check_errno(t, C_DETACH, ret, err, exact, NULL);
	if (!ret) {
		bool was = own_upool(t, k, d.handle);

		upool_gone(t, k, d.handle);
		/* The handle is stale now: nothing may be exported on it. */
		if (was && chance(&t->rng, 2))
			export_stale(t, k, d.handle);
	}
	/* Attach again, most of the time, so that jobs keep flowing. */
	if (!ret && !chance(&t->rng, 4)) {
		struct kxfer_pool_attach a = {};

		strncpy(a.name, opt_pool, sizeof(a.name) - 1);
		if (!ioctl(k->fd, KXFER_IOC_POOL_ATTACH, &a)) {
			atomic_store(&k->pool, a.handle);
			if (own_upool(t, k, a.handle))
				fail(t, "POOL_ATTACH gave handle %u, a user pool's",
				     a.handle);
		}
	}
}

static void fz_peer(struct thr *t, struct kfd *k)
{
	struct kxfer_peer_lookup pl = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = -1;
	void *p;

	pick_name(t, pl.name, *opt_peer ? opt_peer : "self");
	if (chance(&t->rng, 6))
		pl.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		pl.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (pl.flags || pl.reserved[0] || pl.reserved[1] || !name_ok(pl.name))
		exact = EINVAL;
	in = pl;
	p = place(t, pk, &pl, sizeof(pl), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "PEER_LOOKUP fd %d arg %s %p name \"%.32s\" flags 0x%x reserved %llx,%llx",
		 k->fd, ptr_name[pk], p, in.name, in.flags,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	atomic_fetch_add(&k->hseq, 1);
	ret = do_ioctl(k->fd, KXFER_IOC_PEER_LOOKUP, p, &err);
	if (!ret && !ptr_faults(pk) && pk != P_CROSS)
		live_set(k, ((struct kxfer_peer_lookup *)p)->handle, true);
	atomic_fetch_add(&k->hseq, 1);
	check_errno(t, C_PEER, ret, err, exact, NULL);
	if (pk == P_RO && !ret)
		fail(t, "PEER_LOOKUP succeeded with a read-only argument");
	if (ret)
		return;
	memcpy(&pl, p, sizeof(pl));
	check_out(t, &in, &pl, sizeof(pl), "PEER_LOOKUP");
	if (!pl.handle || pl.state > KXFER_PEER_CLOSING || !pl.qps ||
	    pl.qps > KXFER_MAX_QPS)
		fail(t, "PEER_LOOKUP: handle %u state %u qps %u", pl.handle,
		     pl.state, pl.qps);
	if (*opt_peer && !strcmp(pl.name, opt_peer) && chance(&t->rng, 2))
		atomic_store(&k->peer, pl.handle);
}

static bool token_zero(const __u8 *token)
{
	unsigned int i;

	for (i = 0; i < KXFER_TOKEN_LEN; i++)
		if (token[i])
			return false;
	return true;
}

static void fz_remote(struct thr *t, struct kfd *k)
{
	struct kxfer_remote_lookup rl = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool ro = chance(&t->rng, 2);
	int ret, err, exact = -1;
	void *p;

	rl.peer = pick_handle(t, &k->peer);
	pick_name(t, rl.name, ro ? opt_exp_ro : opt_exp_rw);
	/* One of the fuzzer's user exports, this file's or another's */
	if (chance(&t->rng, 3)) {
		unsigned int i, n = rbelow(&t->rng, NUEXP);

		for (i = 0; k == &t->own && i < NUEXP; i++)
			if (t->ux[(n + i) % NUEXP].live) {
				n = (n + i) % NUEXP;
				break;
			}
		snprintf(rl.name, sizeof(rl.name), "fzx.%u.%u",
			 chance(&t->rng, 3) ? (unsigned int)rbelow(&t->rng, 16) :
			 k->id, n);
	}
	if (chance(&t->rng, 6))
		rl.flags = rval(&t->rng);
	else if (chance(&t->rng, 4))
		rl.flags = KXFER_LOOKUP_TOKEN;
	if (chance(&t->rng, 4))
		rl.token[rbelow(&t->rng, KXFER_TOKEN_LEN)] = rval(&t->rng);
	/*
	 * No token of the fuzzer's is ever given out: one presented never
	 * finds anything, as a name that does not exist.
	 */
	if ((rl.flags & ~KXFER_LOOKUP_TOKEN) || !name_ok(rl.name) ||
	    token_zero(rl.token) == !!(rl.flags & KXFER_LOOKUP_TOKEN))
		exact = EINVAL;
	else if (!rl.peer || (rl.flags & KXFER_LOOKUP_TOKEN))
		exact = ENOENT;
	in = rl;
	p = place(t, pk, &rl, sizeof(rl), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "REMOTE_LOOKUP fd %d arg %s %p peer %u name \"%.32s\" flags 0x%x token %s",
		 k->fd, ptr_name[pk], p, in.peer, in.name, in.flags,
		 token_zero(in.token) ? "zero" : "set");
	atomic_fetch_add(&k->hseq, 1);
	ret = do_ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, p, &err);
	if (!ret && !ptr_faults(pk) && pk != P_CROSS)
		live_set(k, ((struct kxfer_remote_lookup *)p)->handle, true);
	atomic_fetch_add(&k->hseq, 1);
	check_errno(t, C_REMOTE, ret, err, exact, NULL);
	if (pk == P_RO && !ret)
		fail(t, "REMOTE_LOOKUP succeeded with a read-only argument");
	if (ret)
		return;
	memcpy(&rl, p, sizeof(rl));
	check_out(t, &in, &rl, sizeof(rl), "REMOTE_LOOKUP");
	if (!rl.handle || (rl.access & ~KXFER_ACCESS_ALL) || !rl.len || !rl.gen)
		fail(t, "REMOTE_LOOKUP: handle %u access 0x%x len %llu gen %llu",
		     rl.handle, rl.access, (unsigned long long)rl.len,
		     (unsigned long long)rl.gen);
	if (rl.peer == atomic_load(&k->peer) && chance(&t->rng, 2)) {
		if (!strcmp(rl.name, opt_exp_rw))
			atomic_store(&k->rem_rw, rl.handle);
		else if (!strcmp(rl.name, opt_exp_ro))
			atomic_store(&k->rem_ro, rl.handle);
		else if (is_uname(rl.name, "fzx") && rl.len < (1ULL << 28))
			atomic_store(&k->rem_u, rx_pack(rl.handle, rl.access,
							rl.len));
	}
	if (is_uname(rl.name, "fzx"))
		atomic_fetch_add(&n_uxlookups, 1);
}

/*
 * RELEASE, of the handles the file uses for its jobs as well: jobs on one
 * released are refused (ENOENT) until a lookup stores a new one.
 */
/*
 * Handle @h of @kind is released: ours no more, and a job on it is
 * refused (ENOENT) until a lookup hands the number out again, for
 * whatever export it finds then.  So no model slot may keep it, the
 * user export's included (found with a number picked for another).
 */
static void forget_handle(struct kfd *k, __u32 kind, __u32 h)
{
	unsigned long long rx = atomic_load(&k->rem_u);
	__u32 x = h;

	if (kind == KXFER_HANDLE_PEER) {
		atomic_compare_exchange_strong(&k->peer, &x, 0);
		return;
	}
	atomic_compare_exchange_strong(&k->rem_rw, &x, 0);
	x = h;
	atomic_compare_exchange_strong(&k->rem_ro, &x, 0);
	if (rx_handle(rx) == h)
		atomic_compare_exchange_strong(&k->rem_u, &rx, 0);
}

static void fz_release(struct thr *t, struct kfd *k)
{
	struct kxfer_release r = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	atomic_uint *known;
	int ret, err, exact = -1;
	void *p;

	r.kind = chance(&t->rng, 2) ? KXFER_HANDLE_PEER : KXFER_HANDLE_REMOTE;
	known = r.kind == KXFER_HANDLE_PEER ? &k->peer :
		chance(&t->rng, 2) ? &k->rem_rw : &k->rem_ro;
	r.handle = pick_handle(t, known);
	if (chance(&t->rng, 8))
		r.kind = (__u32)rval(&t->rng);
	if (chance(&t->rng, 6))
		r.flags = (__u32)rval(&t->rng);
	if (chance(&t->rng, 6))
		r.reserved = (__u32)rval(&t->rng);
	if (r.flags || r.reserved ||
	    (r.kind != KXFER_HANDLE_PEER && r.kind != KXFER_HANDLE_REMOTE))
		exact = EINVAL;
	else if (!r.handle)
		exact = ENOENT;
	in = r;
	p = place(t, pk, &r, sizeof(r), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "RELEASE fd %d arg %s %p kind %u handle %u flags 0x%x reserved %x",
		 k->fd, ptr_name[pk], p, in.kind, in.handle, in.flags,
		 in.reserved);
	atomic_fetch_add(&k->hseq, 1);
	ret = do_ioctl(k->fd, KXFER_IOC_RELEASE, p, &err);
	if (!ret)
		live_set(k, in.handle, false);
	atomic_fetch_add(&k->hseq, 1);
	check_errno(t, C_RELEASE, ret, err, exact, NULL);
	if (!ptr_faults(pk) && pk != P_CROSS && memcmp(p, &in, sizeof(in)))
		fail(t, "RELEASE wrote to its argument");
	if (!ret)
		forget_handle(k, in.kind, in.handle);
}

/*
 * CONNECT: an address of every kind, of which only opt_connect at the
 * default port is allowed (a rule fuzz.sh makes); a session to it exists
 * (the peer's), so that the call gives a handle to it and makes none.
 */
static void fz_connect(struct thr *t, struct kfd *k)
{
	static const char *const a4[] = {
		"10.99.0.1", "10.99.0.2", "0.0.0.0", "127.0.0.1", "224.0.0.1",
		"255.255.255.255", "10.1.2.3",
	};
	static const char *const a6[] = {
		"::", "::1", "ff02::1", "::ffff:10.99.0.1", "fd00::1",
	};
	struct kxfer_connect c = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = -1;
	bool bad_addr = false;
	char txt[64] = "";
	void *p;

	switch (rbelow(&t->rng, 6)) {
	case 0:
		c.family = AF_INET6;
		snprintf(txt, sizeof(txt), "%s", a6[rbelow(&t->rng, ARRAY_SIZE(a6))]);
		inet_pton(AF_INET6, txt, c.addr);
		bad_addr = strcmp(txt, "fd00::1");
		break;
	case 1:
		c.family = chance(&t->rng, 2) ? rnd(&t->rng) : AF_INET;
		for (ret = 0; ret < 16; ret++)
			c.addr[ret] = rnd(&t->rng);
		c.addr[0] = 0xff;	/* multicast, should the family be AF_INET6 */
		bad_addr = true;	/* the family, or bytes past an IPv4 one */
		break;
	case 2:
	case 3:
		if (*opt_connect) {
			c.family = AF_INET;
			snprintf(txt, sizeof(txt), "%s", opt_connect);
			inet_pton(AF_INET, txt, c.addr);
			break;
		}
		/* fall through */
	default:
		c.family = AF_INET;
		snprintf(txt, sizeof(txt), "%s", a4[rbelow(&t->rng, ARRAY_SIZE(a4))]);
		inet_pton(AF_INET, txt, c.addr);
		bad_addr = !strcmp(txt, "0.0.0.0") || !strcmp(txt, "127.0.0.1") ||
			   !strcmp(txt, "224.0.0.1") || !strcmp(txt, "255.255.255.255");
	}
	c.port = chance(&t->rng, 2) ? 0 : chance(&t->rng, 2) ? KXFER_PORT :
		 rnd(&t->rng);
	if (chance(&t->rng, 8))
		c.flags = rval(&t->rng);
	if (chance(&t->rng, 8))
		c.reserved0 = rval(&t->rng);
	if (chance(&t->rng, 8))
		c.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	/* out fields: whatever comes in is ignored */
	if (chance(&t->rng, 4))
		c.handle = c.state = c.qps = rval(&t->rng);

	if (c.flags || c.reserved0 || c.reserved[0] || c.reserved[1] || bad_addr)
		exact = EINVAL;
	else if (!*opt_connect || strcmp(txt, opt_connect) ||
		 (c.port && c.port != KXFER_PORT))
		exact = EACCES;
	else
		exact = E_RES;
	in = c;
	p = place(t, pk, &c, sizeof(c), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	else if (pk == P_RO && exact == E_RES)	/* made, given back: EFAULT */
		exact = -1;
	snprintf(t->desc, sizeof(t->desc),
		 "CONNECT fd %d arg %s %p family %u addr %s port %u flags 0x%x reserved %x,%llx,%llx",
		 k->fd, ptr_name[pk], p, in.family, txt[0] ? txt : "(random)",
		 in.port, in.flags, in.reserved0, (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	/* a peer handle, as PEER_LOOKUP's: numbers RELEASE gave back return */
	atomic_fetch_add(&k->hseq, 1);
	ret = do_ioctl(k->fd, KXFER_IOC_CONNECT, p, &err);
	if (!ret && !ptr_faults(pk) && pk != P_CROSS)
		live_set(k, ((struct kxfer_connect *)p)->handle, true);
	atomic_fetch_add(&k->hseq, 1);
	check_errno(t, C_CONNECT, ret, err, exact, NULL);
	if (pk == P_RO && !ret)
		fail(t, "CONNECT succeeded with a read-only argument");
	if (ret)
		return;
	memcpy(&c, p, sizeof(c));
	if (!c.handle || c.state > KXFER_PEER_CLOSING || !c.qps ||
	    c.qps > KXFER_MAX_QPS || !c.name[0] || !memchr(c.name, 0, sizeof(c.name)))
		fail(t, "CONNECT: handle %u state %u qps %u name \"%.32s\"", c.handle,
		     c.state, c.qps, c.name);
	/* the peer's session, looked up by address: a peer handle like any */
	if (*opt_peer && chance(&t->rng, 2))
		atomic_store(&k->peer, c.handle);
}

/*
 * Fill job @j, valid most of the time (against @k's handles), then
 * perhaps mutate one thing.  Its segments go to @segs (room for @room).
 */
static void make_job(struct thr *t, struct kfd *k, struct kxfer_job *j,
		     struct kxfer_segment *segs, __u32 room)
{
	bool ro = chance(&t->rng, 6) && ro_len, atomic = false;
	__u64 rx = atomic_load(&k->rem_u), llen = pool_size, ulen, rlen;
	__u32 n, i, seglen, uh = 0;

	memset(j, 0, sizeof(*j));
	j->op = (ro || chance(&t->rng, 3)) ? KXFER_OP_READ : KXFER_OP_WRITE;
	j->pool = atomic_load(&k->pool);
	/* The local side in user memory, at times. */
	if (chance(&t->rng, 3))
		uh = pick_upool(t, k, &ulen);
	if (uh && ulen) {
		j->pool = uh;
		llen = ulen;
	}
	j->peer = atomic_load(&k->peer);
	j->remote = atomic_load(ro ? &k->rem_ro : &k->rem_rw);
	rlen = ro ? ro_len : rw_len;
	/* The remote side one of the fuzzer's user exports, at times. */
	if (rx_handle(rx) && rx_len(rx) && chance(&t->rng, 4)) {
		__u32 acc = rx_access(rx);

		j->remote = rx_handle(rx);
		rlen = rx_len(rx);
		if ((acc & KXFER_ACCESS_ATOMIC) && rlen >= 8 && llen >= 8 &&
		    chance(&t->rng, 4))
			atomic = true;
		else if (!(acc & KXFER_ACCESS_WRITE))
			j->op = KXFER_OP_READ;
		else if (!(acc & KXFER_ACCESS_READ))
			j->op = KXFER_OP_WRITE;
	}
	if (!rlen)
		rlen = pool_size;
	if (rlen > pool_size)
		rlen = pool_size;
	n = chance(&t->rng, 40) ? 1 + rbelow(&t->rng, 1024) :
				  1 + rbelow(&t->rng, 8);
	n = n > room ? room : n;
	seglen = n > 8 ? 256 : (chance(&t->rng, 8) ? 65536 : 4096);
	if (seglen > llen)
		seglen = llen;
	if (seglen > rlen)
		seglen = rlen;
	for (i = 0; i < n; i++) {
		__u64 len = 1 + rbelow(&t->rng, seglen);

		segs[i].len = len;
		segs[i].local_off = rbelow(&t->rng, llen - len + 1);
		segs[i].remote_off = rbelow(&t->rng, rlen - len + 1);
	}
	/* Overlapping destinations at times: the job stays on one QP. */
	if (n > 1 && chance(&t->rng, 4))
		segs[1].remote_off = segs[0].remote_off;
	if (atomic) {
		/* 8 bytes into user memory, whatever was there */
		j->op = chance(&t->rng, 2) ? KXFER_OP_CAS : KXFER_OP_FADD;
		n = 1;
		segs[0].len = 8;
		segs[0].local_off = rbelow(&t->rng, llen / 8) * 8;
		segs[0].remote_off = rbelow(&t->rng, rlen / 8) * 8;
		j->compare_add = rnd(&t->rng);
		if (j->op == KXFER_OP_CAS)
			j->swap = rnd(&t->rng);
	}
	j->nsegs = n;
	j->segs = (unsigned long)segs;
	if (chance(&t->rng, 10) && !atomic) {
		j->flags = KXFER_JOB_NOTIFY;
		j->notify_value = rbelow(&t->rng, 1ULL << 48);
	}
	if (!chance(&t->rng, 3))
		return;

	switch (rbelow(&t->rng, 16)) {
	case 0:
		j->op = rbelow(&t->rng, 2) ? rval(&t->rng) : 0;
		break;
	case 1:
		j->flags = rval(&t->rng) | 2;
		break;
	case 2:
		j->rail = rval(&t->rng) | 1;
		break;
	case 3:
		j->nsegs = rval(&t->rng);
		break;
	case 4:
		j->segs = (unsigned long)(rbelow(&t->rng, 2) ? bad_none : NULL);
		break;
	case 5:
		j->segs = 0xffff888000000000ULL;
		break;
	case 6:
		j->pool = pick_handle(t, &k->pool);
		break;
	case 7:
		j->peer = pick_handle(t, &k->peer);
		break;
	case 8:
		j->remote = pick_handle(t, &k->rem_rw);
		break;
	case 9:		/* a segment of length 0 */
		segs[rbelow(&t->rng, n)].len = 0;
		break;
	case 10:	/* ranges that wrap around */
		segs[rbelow(&t->rng, n)].local_off = ~0ULL - rbelow(&t->rng, 4096);
		break;
	case 11:
		segs[rbelow(&t->rng, n)].remote_off = ~0ULL - rbelow(&t->rng, 4096);
		break;
	case 12:	/* past the end */
		i = rbelow(&t->rng, n);
		segs[i].remote_off = rlen - segs[i].len + 1 + rbelow(&t->rng, 8);
		break;
	case 13:
		segs[rbelow(&t->rng, n)].local_off = llen;
		break;
	case 14:	/* lengths whose sum wraps */
		segs[0].len = ~0ULL / 2 + 2;
		if (n > 1)
			segs[1].len = ~0ULL / 2 + 2;
		break;
	default:
		segs[rbelow(&t->rng, n)].len = rval(&t->rng);
		break;
	}
}

/*
 * What the module must do with job @j of file @k, whose segments we wrote
 * at @base (@used of them): false if it must refuse it, whatever the
 * state of the handles; else *@bytes is its size (BYTES_MASK: unknown).
 */
static bool job_acceptable(struct thr *t, struct kfd *k,
			   const struct kxfer_job *j,
			   const struct kxfer_segment *base, __u32 used,
			   __u64 *bytes, const char **why)
{
	__u32 rw = atomic_load(&k->rem_rw), ro = atomic_load(&k->rem_ro);
	__u64 rx = atomic_load(&k->rem_u), llen = local_bound(t, k, j->pool);
	bool atomic = j->op == KXFER_OP_CAS || j->op == KXFER_OP_FADD;
	const struct kxfer_segment *segs;
	__u64 rlen = 0, total = 0, end;
	__u32 i, n, filled, need;

	*bytes = BYTES_MASK;
	*why = "its fields";
	if ((j->op != KXFER_OP_WRITE && j->op != KXFER_OP_READ && !atomic) ||
	    /* rail 0 is the only rail of the fuzzer's peer */
	    (j->flags & ~KXFER_JOB_FLAGS) || j->rail || !j->nsegs ||
	    /* a message needs its length, which the fuzzer leaves 0 */
	    (j->flags & KXFER_JOB_NOTIFY_MSG) || j->notify_len ||
	    j->nsegs > limits.max_segments || !j->pool || !j->peer ||
	    !j->remote || (!atomic && j->compare_add) ||
	    (j->op != KXFER_OP_CAS && j->swap) || (atomic && j->nsegs != 1))
		return false;
	/* Every pointer we pass outside our array is bad. */
	*why = "its segments' address";
	if (j->segs < (unsigned long)base ||
	    j->segs >= (unsigned long)(base + limits.max_segments))
		return false;
	segs = (const void *)(unsigned long)j->segs;
	filled = segs - base < used ? used - (segs - base) : 0;
	if (j->remote == rw && rw)
		rlen = rw_len;
	if (j->remote == ro && ro && ro != rw) {
		rlen = ro_len;
		*why = "a WRITE into the read-only export";
		if (j->op == KXFER_OP_WRITE)
			return false;
	}
	if (j->remote == rx_handle(rx) && rx_handle(rx) && j->remote != rw &&
	    j->remote != ro) {
		rlen = rx_len(rx);
		need = atomic ? KXFER_ACCESS_ATOMIC :
		       j->op == KXFER_OP_WRITE ? KXFER_ACCESS_WRITE :
						 KXFER_ACCESS_READ;
		*why = "the user export's access";
		if (!(rx_access(rx) & need))
			return false;
	}
	n = j->nsegs < filled ? j->nsegs : filled;
	*why = "an atomic's segment";
	if (atomic && n && (segs[0].len != 8 || (segs[0].local_off & 7) ||
			    (segs[0].remote_off & 7)))
		return false;
	for (i = 0; i < n; i++) {
		const struct kxfer_segment *g = &segs[i];

		snprintf(t->why, sizeof(t->why),
			 "segment %u %llx:%llx:%llx against local %llu, remote %llu bytes",
			 i, (unsigned long long)g->local_off,
			 (unsigned long long)g->remote_off,
			 (unsigned long long)g->len, (unsigned long long)llen,
			 (unsigned long long)rlen);
		*why = t->why;
		if (!g->len || __builtin_add_overflow(g->local_off, g->len, &end) ||
		    end > llen ||
		    __builtin_add_overflow(g->remote_off, g->len, &end) ||
		    (rlen && end > rlen) ||
		    __builtin_add_overflow(total, g->len, &total))
			return false;
	}
	if (j->nsegs <= filled && total < BYTES_MASK && !atomic)
		*bytes = total;
	return true;
}

/* Pre-checks SUBMIT makes on the header: is it refused as a whole? */
static bool submit_header_bad(const struct kxfer_submit *s)
{
	return s->flags || s->reserved[0] || s->reserved[1] || !s->njobs ||
	       s->njobs > limits.max_jobs_per_submit;
}

static void account_accepted(struct kfd *k, const struct kxfer_job *jobs,
			     __u32 n)
{
	__u32 i;

	atomic_fetch_add(&n_accepted, n);
	if (!k->counted || !n)
		return;
	for (i = 0; i < n; i++)
		atomic_fetch_add(&k->sum_acc, jobs[i].user_data);
	atomic_fetch_add(&k->accepted, n);
}

/* Statistics: accepted jobs from or into user memory. */
static void count_user_jobs(struct thr *t, struct kfd *k,
			    const struct kxfer_job *jobs, __u32 n)
{
	__u32 up = up_handle(atomic_load(&k->upool));
	__u32 rx = rx_handle(atomic_load(&k->rem_u));
	__u32 i;

	for (i = 0; i < n; i++) {
		if (own_upool(t, k, jobs[i].pool) || (up && jobs[i].pool == up))
			atomic_fetch_add(&n_ujobs, 1);
		if (rx && jobs[i].remote == rx)
			atomic_fetch_add(&n_uxjobs, 1);
	}
}

/*
 * Could @j have been accepted on handles the model does not keep?  A
 * lookup or RELEASE ran since @hseq0 (a released number may have been
 * handed out again), or the job names a live handle that pool, peer and
 * rem_* do not hold (a lookup's result is kept half of the time).
 */
static bool unmodelled(struct kfd *k, const struct kxfer_job *j,
		       unsigned int hseq0)
{
	__u32 rx = rx_handle(atomic_load(&k->rem_u));

	if ((hseq0 & 1) || atomic_load(&k->hseq) != hseq0)
		return true;
	if (live_test(k, j->peer) && j->peer != atomic_load(&k->peer))
		return true;
	return live_test(k, j->remote) && j->remote != rx &&
	       j->remote != atomic_load(&k->rem_rw) &&
	       j->remote != atomic_load(&k->rem_ro);
}

/* Job @i was accepted: say what the model refused it for. */
static void refused_accepted(struct thr *t, struct kfd *k, __u32 i,
			     __u32 used)
{
	const struct kxfer_job *j = &t->jobs[i];
	const char *why;
	char job[96], file[128];
	__u64 bytes;

	if (job_acceptable(t, k, j, t->segs, used, &bytes, &why))
		why = "nothing now (the model changed since)";
	snprintf(job, sizeof(job),
		 "op %u flags 0x%x pool %u peer %u remote %u nsegs %u rail %u",
		 j->op, j->flags, j->pool, j->peer, j->remote, j->nsegs,
		 j->rail);
	snprintf(file, sizeof(file),
		 "%s: pool %u peer %u exports rw %u ro %u user %u, user pool %u",
		 k == &t->own ? "own" : "shared",
		 atomic_load(&k->pool), atomic_load(&k->peer),
		 atomic_load(&k->rem_rw), atomic_load(&k->rem_ro),
		 rx_handle(atomic_load(&k->rem_u)),
		 up_handle(atomic_load(&k->upool)));
	fail(t, "SUBMIT accepted job %u (%s), which it must refuse for %s; the file (%s)",
	     i, job, why, file);
}

static void fz_submit(struct thr *t, struct kfd *k)
{
	struct kxfer_submit s = {}, in, good;
	enum ptr_kind pk = pick_ptr(t), jk = pick_ptr(t);
	__u32 njobs, i, used = 0, fit, max = limits.max_jobs_per_submit;
	unsigned int hseq0 = atomic_load(&k->hseq);
	bool ok[64], sane = true;
	int ret, err, exact = -1;
	const char *why;
	void *p, *jp;

	njobs = chance(&t->rng, 8) ? 1 + rbelow(&t->rng, 64) :
				     1 + rbelow(&t->rng, 4);
	if (pk == P_RO)		/* accepted stays unknown: one job only */
		njobs = 1;
	if (chance(&t->rng, 2000)) {
		/* A job with a huge count of segments. */
		__u32 n = limits.max_segments;
		struct kxfer_job *j = &t->jobs[0];

		njobs = 1;
		make_job(t, k, j, t->segs, 1);
		for (i = 0; i < n; i++) {
			t->segs[i].len = 1 + rbelow(&t->rng, 16);
			t->segs[i].local_off = rbelow(&t->rng, 4096);
			t->segs[i].remote_off = rbelow(&t->rng, 4096);
		}
		/* Valid but for the last, most of the time: 64K WRs are slow. */
		if (!chance(&t->rng, 8))
			t->segs[n - 1].len = 0;
		j->nsegs = n;
		used = n;
	} else if (chance(&t->rng, 300)) {
		/* The most jobs a call takes, each small. */
		njobs = pk == P_RO ? 1 : max;
		for (i = 0; i < njobs; i++) {
			make_job(t, k, &t->jobs[i], t->segs + i % 4096, 1);
			t->jobs[i].nsegs = 1;
			t->jobs[i].segs = (unsigned long)(t->segs + i % 4096);
		}
		used = 4096;
	} else {
		for (i = 0; i < njobs; i++) {
			__u32 room = limits.max_segments - used;

			room = room > 1024 ? 1024 : room;
			make_job(t, k, &t->jobs[i], t->segs + used, room);
			used += room < t->jobs[i].nsegs ? room : t->jobs[i].nsegs;
		}
	}
	/* user_data: the file's id, a sequence number, the job's bytes */
	for (i = 0; i < njobs; i++) {
		struct kxfer_job *j = &t->jobs[i];
		__u64 seq = atomic_fetch_add(&k->seq, 1) & 0xffffffffULL;
		__u64 bytes;
		bool acc;

		acc = job_acceptable(t, k, j, t->segs, used, &bytes, &why);
		if (i < 64)
			ok[i] = acc;
		sane &= acc && bytes != BYTES_MASK &&
			(j->pool == atomic_load(&k->pool) ||
			 own_upool(t, k, j->pool)) &&
			j->peer == atomic_load(&k->peer) &&
			(j->remote == atomic_load(&k->rem_rw) ||
			 j->remote == atomic_load(&k->rem_ro));
		j->user_data = ((__u64)k->id << FD_ID_SHIFT) | (seq << SEQ_SHIFT) |
			       bytes;
	}
	s.njobs = njobs;
	if (chance(&t->rng, 12))
		s.njobs = rval(&t->rng);
	if (chance(&t->rng, 12))
		s.flags = rval(&t->rng);
	if (chance(&t->rng, 12))
		s.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 4)) {
		s.accepted = rnd(&t->rng);
		s.error = rnd(&t->rng);
	}
	/* More jobs than we wrote only with a bad header */
	if (s.njobs > njobs && !submit_header_bad(&s))
		s.njobs = njobs;
	jp = place(t, jk, t->jobs, (size_t)njobs * sizeof(struct kxfer_job),
		   t->jobs, 1);
	fit = njobs;
	if (jk == P_CROSS && jp != bad_none)
		fit = (t->edge + 4 * PAGE - (char *)jp) / sizeof(struct kxfer_job);
	else if (ptr_faults(jk) || jp == bad_none)
		fit = 0;
	s.jobs = (unsigned long)jp;
	if (submit_header_bad(&s))
		exact = EINVAL;
	else if (!fit)
		exact = EFAULT;
	in = s;
	p = place(t, pk, &s, sizeof(s), &good, 0);
	/* A read-only header: nothing accepted, the refusal cannot be written. */
	if (ptr_faults(pk) || pk == P_CROSS || (pk == P_RO && exact > 0))
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "SUBMIT fd %d arg %s %p jobs %s 0x%llx njobs %u flags 0x%x reserved %llx,%llx; job0 op %u flags 0x%x pool %u peer %u remote %u nsegs %u segs 0x%llx rail %u user_data 0x%llx seg0 %llx:%llx:%llx",
		 k->fd, ptr_name[pk], p, ptr_name[jk],
		 (unsigned long long)in.jobs, in.njobs, in.flags,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1], t->jobs[0].op,
		 t->jobs[0].flags, t->jobs[0].pool, t->jobs[0].peer,
		 t->jobs[0].remote, t->jobs[0].nsegs,
		 (unsigned long long)t->jobs[0].segs,
		 t->jobs[0].rail,
		 (unsigned long long)t->jobs[0].user_data,
		 (unsigned long long)t->segs[0].local_off,
		 (unsigned long long)t->segs[0].remote_off,
		 (unsigned long long)t->segs[0].len);
	ret = do_ioctl(k->fd, KXFER_IOC_SUBMIT, p, &err);
	check_errno(t, C_SUBMIT, ret, err, exact, NULL);

	if (pk == P_RO) {
		/* njobs is 1: success means the one job was accepted */
		if (!ret) {
			if (!ok[0] && !unmodelled(k, &t->jobs[0], hseq0))
				refused_accepted(t, k, 0, used);
			account_accepted(k, t->jobs, 1);
		}
		return;
	}
	if (ptr_faults(pk) || pk == P_CROSS)
		return;
	memcpy(&s, p, sizeof(s));
	if (ret) {
		if (!submit_header_bad(&in) && (s.accepted || s.error != -err) &&
		    !(t->victim && err == ENOTTY))
			fail(t, "SUBMIT failed with %s but accepted %u error %d",
			     strerror(err), s.accepted, s.error);
		return;
	}
	if (!s.accepted || s.accepted > in.njobs || s.accepted > fit ||
	    (s.accepted < in.njobs && (!s.error || !in_set(-s.error, set_submit))) ||
	    (s.accepted == in.njobs && s.error)) {
		fail(t, "SUBMIT: accepted %u of %u (%u readable), error %d",
		     s.accepted, in.njobs, fit, s.error);
		return;
	}
	for (i = 0; i < s.accepted && i < 64; i++)
		if (!ok[i] && !unmodelled(k, &t->jobs[i], hseq0))
			refused_accepted(t, k, i, used);
	account_accepted(k, t->jobs, s.accepted);
	count_user_jobs(t, k, t->jobs, s.accepted);
	/*
	 * Out of range only on the own file: elsewhere the handle believed
	 * the kernel pool's may be a smaller user pool's by now.
	 */
	if (sane && (jk == P_GOOD || jk == P_RO) && s.accepted < in.njobs &&
	    (s.error == -EINVAL || s.error == -EFAULT ||
	     (s.error == -ERANGE && k == &t->own))) {
		const struct kxfer_job *j = &t->jobs[s.accepted];
		const struct kxfer_segment *g = (const void *)(unsigned long)j->segs;

		fail(t, "SUBMIT refused valid job %u: %d (%s); it has op %u pool %u (%llu bytes) remote %u nsegs %u, seg0 %llx:%llx:%llx",
		     s.accepted, s.error, strerror(-s.error), j->op, j->pool,
		     (unsigned long long)local_bound(t, k, j->pool), j->remote,
		     j->nsegs, (unsigned long long)g->local_off,
		     (unsigned long long)g->remote_off,
		     (unsigned long long)g->len);
	}
}

/* One reaped event: well formed, ours, the bytes the job asked for. */
static void check_event(struct thr *t, struct kfd *k,
			const struct kxfer_event *ev)
{
	__u64 want;

	if (ev->msg_len)	/* nobody sends messages here */
		fail(t, "event msg_len %u", ev->msg_len);
	if (kptr_like(ev->user_data) || kptr_like(ev->bytes))
		fail(t, "event holds a kernel address? 0x%llx 0x%llx",
		     (unsigned long long)ev->user_data,
		     (unsigned long long)ev->bytes);
	if (ev->type == KXFER_EV_NOTIFY) {
		atomic_fetch_add(&n_notify_ev, 1);
		if (ev->status || !ev->sub || !ev->peer || ev->wc_status)
			fail(t, "NOTIFY event: status %d sub %u peer %u",
			     ev->status, ev->sub, ev->peer);
		return;
	}
	if (ev->type != KXFER_EV_COMPLETION) {
		fail(t, "event of type %u", ev->type);
		return;
	}
	atomic_fetch_add(&n_completed, 1);
	if ((ev->user_data >> FD_ID_SHIFT) != k->id)
		fail(t, "completion 0x%llx reaped by file id %u",
		     (unsigned long long)ev->user_data, k->id);
	if (ev->sub || ev->peer)
		fail(t, "completion with sub %u peer %u", ev->sub, ev->peer);
	if (ev->status > 0 || (ev->status && !in_set(-ev->status, set_status)))
		fail(t, "completion status %d is not documented", ev->status);
	want = ev->user_data & BYTES_MASK;
	if (!ev->status) {
		atomic_fetch_add(&n_job_ok, 1);
		if (want != BYTES_MASK && (!want || ev->bytes != want))
			fail(t, "completion 0x%llx: %llu bytes, the job had %llu",
			     (unsigned long long)ev->user_data,
			     (unsigned long long)ev->bytes,
			     (unsigned long long)want);
	} else if (ev->bytes) {
		fail(t, "failed completion with %llu bytes",
		     (unsigned long long)ev->bytes);
	}
	if (k->counted) {
		atomic_fetch_add(&k->reaped, 1);
		atomic_fetch_add(&k->sum_reaped, ev->user_data);
	}
}

#define EV_MARK 0xa5

static bool ev_written(const struct kxfer_event *ev)
{
	const unsigned char *b = (const void *)ev;
	size_t i;

	for (i = 0; i < sizeof(*ev); i++)
		if (b[i] != EV_MARK)
			return true;
	return false;
}

/* Reap: @wait_ns 0 for random parameters, else a plain drain. */
static unsigned int fz_reap(struct thr *t, struct kfd *k, bool plain,
			    __s64 wait_ns)
{
	struct kxfer_reap r = {}, in, good;
	enum ptr_kind pk = plain ? P_GOOD : pick_ptr(t);
	enum ptr_kind ek = plain ? P_GOOD : pick_ptr(t);
	int ret, err, exact = -1;
	unsigned int i, n, room = 1024;
	struct kxfer_event *evs = t->evs;
	void *p;

	r.max = plain ? room : 1 + rbelow(&t->rng, 64);
	r.min = plain ? !!wait_ns : rbelow(&t->rng, 3);
	r.timeout_ns = plain ? wait_ns : (chance(&t->rng, 3) ?
			   rbelow(&t->rng, 2000000) : 0);
	if (!plain) {
		if (chance(&t->rng, 10))
			r.flags = KXFER_REAP_BUSY_POLL;
		if (chance(&t->rng, 12))
			r.flags = rval(&t->rng);
		if (chance(&t->rng, 12))
			r.reserved = rval(&t->rng);
		if (chance(&t->rng, 12))
			r.max = rval(&t->rng);
		if (chance(&t->rng, 12))
			r.min = rval(&t->rng);
		if (chance(&t->rng, 20) && r.min == 0)
			r.timeout_ns = -1;	/* for ever, but min 0: no wait */
		if (chance(&t->rng, 4))
			r.count = rnd(&t->rng);
	}
	if ((r.flags & ~KXFER_REAP_BUSY_POLL) || r.reserved ||
	    !r.max || r.min > r.max)
		exact = EINVAL;
	/* A max past our room only with bad parameters or a bad array. */
	if (r.max > room && exact < 0 && ek == P_GOOD)
		r.max = room;
	/* Events crossing into the PROT_NONE page: some fit, then EFAULT. */
	if (ek == P_CROSS) {
		room = 1 + rbelow(&t->rng, 3);
		evs = (struct kxfer_event *)(t->edge + 4 * PAGE -
					     room * sizeof(*evs) -
					     rbelow(&t->rng, sizeof(*evs)));
		memset(evs, EV_MARK, t->edge + 4 * PAGE - (char *)evs);
	} else if (ek != P_GOOD) {
		evs = place(t, ek, "", 0, NULL, 1);
		room = 0;
	} else {
		memset(evs, EV_MARK, (size_t)room * sizeof(*evs));
	}
	r.events = (unsigned long)evs;
	in = r;
	/* A read-only header would lose the count: keep a clean array then. */
	if (pk == P_RO && ek != P_GOOD)
		pk = P_GOOD;
	p = place(t, pk, &r, sizeof(r), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "REAP fd %d arg %s %p events %s 0x%llx max %u min %u timeout %lld flags 0x%x reserved %x",
		 k->fd, ptr_name[pk], p, ptr_name[ek],
		 (unsigned long long)in.events, in.max, in.min,
		 (long long)in.timeout_ns, in.flags, in.reserved);
	ret = do_ioctl(k->fd, KXFER_IOC_REAP, p, &err);
	check_errno(t, C_REAP, ret, err, exact, NULL);

	if (ptr_faults(pk) || pk == P_CROSS || exact == EINVAL)
		return 0;
	if (pk == P_RO) {
		/* The count never came back: count what was written. */
		for (n = 0; n < in.max && n < room && ev_written(&evs[n]); n++)
			;
	} else if (ret && err != EINTR) {
		n = 0;
	} else {
		memcpy(&r, p, sizeof(r));
		n = r.count;
		if (n > in.max || (ret && n) || n > room) {
			fail(t, "REAP: count %u of max %u (room %u), ret %d",
			     n, in.max, room, ret);
			return 0;
		}
		if (ret && ek == P_GOOD && err != EINTR)
			fail(t, "REAP failed: %s", strerror(err));
	}
	if (ek != P_GOOD && ek != P_CROSS && n)
		fail(t, "REAP wrote %u events to a bad address", n);
	for (i = 0; i < n && (ek == P_GOOD || ek == P_CROSS); i++)
		check_event(t, k, &evs[i]);
	return n;
}

static void fz_nsub(struct thr *t, struct kfd *k, bool unsub)
{
	struct kxfer_notify_sub ns = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	int ret, err, exact = -1;
	void *p;

	if (unsub)
		ns.handle = chance(&t->rng, 2) ? atomic_load(&k->sub) :
						 pick_handle(t, &k->sub);
	else
		pick_name(t, ns.export, chance(&t->rng, 2) ? opt_exp_rw :
						      opt_exp_ro);
	if (chance(&t->rng, 6))
		ns.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		ns.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (ns.flags || ns.reserved[0] || ns.reserved[1] ||
	    (!unsub && !name_ok(ns.export)))
		exact = EINVAL;
	else if (unsub && !ns.handle)
		exact = ENOENT;
	in = ns;
	p = place(t, pk, &ns, sizeof(ns), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	/* subscribed all the same: the read-only header only loses the handle */
	snprintf(t->desc, sizeof(t->desc),
		 "NOTIFY_%sSUBSCRIBE fd %d arg %s %p export \"%.32s\" handle %u flags 0x%x reserved %llx,%llx",
		 unsub ? "UN" : "", k->fd, ptr_name[pk], p, in.export,
		 in.handle, in.flags, (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	ret = do_ioctl(k->fd, unsub ? KXFER_IOC_NOTIFY_UNSUBSCRIBE :
			      KXFER_IOC_NOTIFY_SUBSCRIBE, p, &err);
	check_errno(t, unsub ? C_NUNSUB : C_NSUB, ret, err, exact, NULL);
	if (ret || unsub)
		return;
	memcpy(&ns, p, sizeof(ns));
	check_out(t, &in, &ns, sizeof(ns), "NOTIFY_SUBSCRIBE");
	if (!ns.handle)
		fail(t, "NOTIFY_SUBSCRIBE: handle 0");
	atomic_store(&k->sub, ns.handle);
}

/* ---------------------------------------------------------------------- */
/* User memory: the arena                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Map @len bytes at @off in slot @s as @kind, with MAP_FIXED (a remap:
 * the pages of pools over it stay theirs) or MAP_FIXED_NOREPLACE (to
 * fill a hole we made).  Return: the kind now there; PROT_NONE when
 * @kind could not be mapped (the pool window went, say); U_LOST when
 * something else took our hole: the slot is never touched again.
 */
static enum ua_kind ua_map(struct thr *t, unsigned int s, enum ua_kind kind,
			   size_t off, size_t len, int fixed)
{
	char *a = t->ua + s * UA_SLOT + off;
	__u64 foff = s * UA_SLOT + off, po = 0;
	int prot = PROT_READ | PROT_WRITE;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS, fd = -1;
	void *p;

	if (kind == U_UDMABUF && t->udmabuf < 0)
		kind = U_MEMFD;
	if ((kind == U_KXFER && pool_size < UA_SLOT) || kind == U_ZAPPED)
		kind = U_NONE;
	switch (kind) {
	case U_MEMFD:
	case U_MEMFD_PRIV:
		flags = kind == U_MEMFD ? MAP_SHARED : MAP_PRIVATE;
		fd = t->memfd;
		po = foff;
		break;
	case U_KXFER:		/* the pool's own mapping: its pages pinned */
		flags = MAP_SHARED;
		fd = t->own.fd;
		po = ((__u64)atomic_load(&t->own.pool) << KXFER_MMAP_WINDOW_SHIFT) +
		     (s % (pool_size / UA_SLOT)) * UA_SLOT + off;
		break;
	case U_UDMABUF:		/* VM_PFNMAP: not pinnable */
		flags = MAP_SHARED;
		fd = t->udmabuf;
		po = off;
		break;
	case U_RO:
		prot = PROT_READ;
		break;
	case U_NONE:
		prot = PROT_NONE;
		break;
	default:
		break;
	}
	if (fd >= 0 && fixed == MAP_FIXED) {
		/*
		 * A file's MAP_FIXED that fails (the pool window is gone)
		 * leaves the range unmapped, for another thread's mmap to
		 * land in: map it elsewhere, then move it over in one go.
		 */
		p = mmap(NULL, len, prot, flags, fd, (off_t)po);
		if (p != MAP_FAILED &&
		    mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) == a)
			goto mapped;
		if (p != MAP_FAILED)
			munmap(p, len);
		p = MAP_FAILED;
	} else {
		p = mmap(a, len, prot, flags | fixed, fd, (off_t)po);
		if (p == MAP_FAILED && fixed == MAP_FIXED_NOREPLACE &&
		    errno == EEXIST)
			return U_LOST;
		if (p != MAP_FAILED && p != a) {   /* no MAP_FIXED_NOREPLACE */
			munmap(p, len);
			return U_LOST;
		}
	}
	if (p == MAP_FAILED) {
		/* Nothing of someone else's is ever replaced */
		kind = U_NONE;
		p = mmap(a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | fixed,
			 -1, 0);
		if (p == MAP_FAILED && fixed == MAP_FIXED)
			p = mmap(a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
				 MAP_FIXED_NOREPLACE, -1, 0);
		if (p != a)
			return U_LOST;
	}
mapped:
	if (kind == U_ANON || kind == U_THP)
		madvise(a, len, kind == U_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return kind;
}

/* A kind for a slot: most of them may be pinned. */
static enum ua_kind pick_kind(struct thr *t)
{
	static const enum ua_kind kinds[] = {
		U_ANON, U_ANON, U_ANON, U_THP, U_THP, U_MEMFD, U_MEMFD,
		U_MEMFD_PRIV, U_KXFER, U_KXFER, U_UDMABUF, U_RO, U_NONE,
	};

	return kinds[rbelow(&t->rng, ARRAY_SIZE(kinds))];
}

/* A udmabuf over @size bytes of @memfd from @off, or -1. */
static int make_udmabuf(int memfd, __u64 off, __u64 size)
{
	struct udmabuf_create c = {
		.memfd = memfd, .flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = off, .size = size,
	};
	int dev, fd;

	if (!have_udmabuf)
		return -1;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	return fd;
}

/* The arena's slots, of random kinds, between PROT_NONE guards. */
static void ua_build(struct thr *t)
{
	char *r = arena(UA_LEN + 2 * UA_SLOT, PROT_NONE);
	unsigned int i;

	t->ua_base = r;
	t->ua = (char *)(((unsigned long)r + UA_SLOT - 1) & ~(UA_SLOT - 1));
	for (i = 0; i < UA_SLOTS; i++)
		t->ua_kind[i] = ua_map(t, i, pick_kind(t), 0, UA_SLOT,
				       MAP_FIXED);
}

/*
 * Unmap what is ours of the arena: all but slots lost to someone's
 * mapping (in slot @s, page @page if not 0: the rest of it is ours).
 */
static void ua_unmap(struct thr *t, int s, char *page)
{
	char *end = t->ua_base + UA_LEN + 2 * UA_SLOT, *a;
	unsigned int i;

	for (i = 0; i < UA_SLOTS; i++) {
		a = t->ua + i * UA_SLOT;
		if ((int)i == s && page) {
			munmap(a, page - a);
			munmap(page + PAGE, a + UA_SLOT - page - PAGE);
		} else if ((int)i != s) {
			munmap(a, UA_SLOT);
		}
	}
	if (t->ua > t->ua_base)
		munmap(t->ua_base, t->ua - t->ua_base);
	munmap(t->ua + UA_LEN, end - (t->ua + UA_LEN));
}

/*
 * A mapping of someone else's took the hole we made in slot @s: leave
 * it there, and the pools over the arena; build a new arena elsewhere.
 */
static void ua_relocate(struct thr *t, unsigned int s, char *page)
{
	ua_unmap(t, s, page);
	ua_build(t);
	atomic_fetch_add(&n_relocs, 1);
}

static void ua_init(struct thr *t)
{
	t->memfd = memfd_create("fuzz_ioctl", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (t->memfd < 0 || ftruncate(t->memfd, UA_LEN) ||
	    fcntl(t->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		perror("memfd");
		exit(1);
	}
	t->udmabuf = make_udmabuf(t->memfd, 0, UA_SLOT);
	t->notbuf = eventfd(0, EFD_CLOEXEC);
	ua_build(t);
}

static void ua_fini(struct thr *t)
{
	ua_unmap(t, -1, NULL);
	close(t->memfd);
	if (t->udmabuf >= 0)
		close(t->udmabuf);
	close(t->notbuf);
}

/*
 * What POOL_USER's look at the range must say (the first vma, in address
 * order, that is missing, I/O or PFN-mapped, or not writable): 0 if it
 * may be pinned; -2 if it passes but cannot be pinned; -1 if we cannot
 * tell.  @hole: a page unmapped for the call, or 0.
 */
static int ua_predict(struct thr *t, __u64 addr, __u64 len, __u64 hole)
{
	__u64 base = (unsigned long)t->ua, a, end;
	int want = 0;

	if (addr < base || addr >= base + UA_LEN || (addr & (PAGE - 1)) ||
	    __builtin_add_overflow(addr, len, &end))
		return -1;
	for (a = addr; a < end && !want; a += PAGE) {
		if (a >= base + UA_LEN) {
			want = EACCES;		/* the guard */
			break;
		}
		if (a == hole) {
			want = EFAULT;
			break;
		}
		switch (t->ua_kind[(a - base) / UA_SLOT]) {
		case U_RO:
		case U_NONE:
			want = EACCES;
			break;
		case U_UDMABUF:
			want = EOPNOTSUPP;
			break;
		case U_ZAPPED:	/* no fault handler: pinning it faults */
			want = -2;
			break;
		case U_LOST:
			want = -1;
			break;
		default:
			break;
		}
	}
	return want;
}

/*
 * Change a slot of the arena while pools may be over it: remap it,
 * unmap it, write-protect it, drop its pages.
 */
static void fz_arena(struct thr *t)
{
	unsigned int s = rbelow(&t->rng, UA_SLOTS), r = rbelow(&t->rng, 8);
	enum ua_kind was = t->ua_kind[s], now = was;
	char *a = t->ua + s * UA_SLOT;
	int ret = 0, err = 0;

	if (was == U_LOST)
		return;
	if (r < 5) {
		now = ua_map(t, s, pick_kind(t), 0, UA_SLOT, MAP_FIXED);
	} else if (r == 5) {
		/* unmapped: then PROT_NONE, for nobody else to map there */
		ret = munmap(a, UA_SLOT);
		now = ua_map(t, s, U_NONE, 0, UA_SLOT, MAP_FIXED_NOREPLACE);
	} else if (r == 6 && was != U_UDMABUF) {
		now = chance(&t->rng, 2) ? U_RO : U_NONE;
		ret = mprotect(a, UA_SLOT, now == U_RO ? PROT_READ : PROT_NONE);
		if (ret)
			now = was;
	} else if (was != U_RO && was != U_NONE && was != U_UDMABUF) {
		ret = madvise(a, UA_SLOT, MADV_DONTNEED);	/* not PFN maps */
		/* /dev/kxfer maps its pages at mmap(): they do not come back */
		if (!ret && was == U_KXFER)
			now = U_ZAPPED;
	}
	if (ret)
		err = errno;
	t->ua_kind[s] = now;
	snprintf(t->desc, sizeof(t->desc), "arena slot %u at %p: %s -> %s (%u)",
		 s, a, ua_name[was], ua_name[now], r);
	check_errno(t, C_ARENA, ret, err, -1, NULL);
	if (now == U_LOST)
		ua_relocate(t, s, NULL);
}

/* ---------------------------------------------------------------------- */
/* User memory: pools and exports                                          */
/* ---------------------------------------------------------------------- */

/* Detach pool @h of file @k, not fuzzed; @exact as for check_errno(). */
static int detach_plain(struct thr *t, struct kfd *k, __u32 h, int exact)
{
	struct kxfer_pool_detach d = { .handle = h };
	int ret, err;

	snprintf(t->desc, sizeof(t->desc), "POOL_DETACH fd %d handle %u (a user pool)",
		 k->fd, h);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_DETACH, &d, &err);
	check_errno(t, C_DETACH, ret, err, exact, NULL);
	if (!ret)
		upool_gone(t, k, h);
	return ret;
}

/* Withdraw export @name of file @k, not fuzzed. */
static void export_del_plain(struct thr *t, struct kfd *k, const char *name,
			     int exact)
{
	struct kxfer_export_del d = {};
	int ret, err;

	memcpy(d.name, name, sizeof(d.name));
	d.name[sizeof(d.name) - 1] = 0;
	snprintf(t->desc, sizeof(t->desc), "EXPORT_DEL fd %d name \"%.32s\" (at once)",
		 k->fd, d.name);
	ret = do_ioctl(k->fd, KXFER_IOC_EXPORT_DEL, &d, &err);
	check_errno(t, C_EXPDEL, ret, err, exact, NULL);
}

/*
 * A pool made: the own file keeps it in its table under its name's
 * index; elsewhere it is the file's user pool for the others to use.
 * One under a name that is not the fuzzer's is detached at once: the
 * pools a file has stay bounded (NUPOOL), and so does pinned memory.
 */
static void note_upool(struct thr *t, struct kfd *k, int n, __u32 h,
		       __u64 len, const char *call)
{
	bool own = k == &t->own;

	if (own_upool(t, k, h))
		fail(t, "%s gave handle %u, a user pool's already", call, h);
	if (!h || h > limits.max_pools_per_fd)
		fail(t, "%s: handle %u", call, h);
	if (n < 0 || len >= (1ULL << 40)) {
		detach_plain(t, k, h, own ? 0 : -1);
		return;
	}
	if (own) {
		if (t->up[n].handle)
			fail(t, "%s made a second pool named fzu.%u.%d", call,
			     k->id, n);
		t->up[n].handle = h;
		t->up[n].len = len;
		return;
	}
	atomic_store(&k->upool, up_pack(h, len));
}

/*
 * What a valid POOL_USER or POOL_DMABUF under @name (from pick_uname(),
 * which said @n) must answer: exact on the own file, where the thread
 * knows its pools (EEXIST, or E_RES); -1 elsewhere.  A name of the own
 * file that its table does not keep is detached at once (note_upool()).
 */
static int upool_expect(struct thr *t, struct kfd *k, int n, const char *name)
{
	char mine[16];

	if (k != &t->own)
		return -1;
	if (n >= 0)
		return t->up[n].handle ? EEXIST : E_RES;
	if (!strcmp(name, opt_pool))
		return EEXIST;
	snprintf(mine, sizeof(mine), "fzu.%u.", k->id);
	if (!strncmp(name, mine, strlen(mine)))
		return E_RES;
	snprintf(mine, sizeof(mine), "fzd.%u.", k->id);
	return strncmp(name, mine, strlen(mine)) ? -1 : E_RES;
}

/*
 * A valid user pool of file @k over a slot that may be pinned, for what
 * needs one (an export, jobs); its handle and *@len, or 0.
 */
static __u32 upool_plain(struct thr *t, struct kfd *k, __u64 *len)
{
	struct kxfer_pool_user u = {};
	unsigned int s = rbelow(&t->rng, UA_SLOTS), n = rbelow(&t->rng, NUPOOL);
	unsigned int i, np = 1 + rbelow(&t->rng, 64);
	int ret, err;

	for (i = 0; i < UA_SLOTS; i++) {
		enum ua_kind kd = t->ua_kind[(s + i) % UA_SLOTS];

		if (kd == U_ANON || kd == U_THP || kd == U_MEMFD ||
		    kd == U_MEMFD_PRIV || kd == U_KXFER)
			break;
	}
	if (i == UA_SLOTS)
		return 0;
	s = (s + i) % UA_SLOTS;
	for (i = 0; k == &t->own && i < NUPOOL; i++)
		if (!t->up[(n + i) % NUPOOL].handle)
			break;
	if (i == NUPOOL)
		return 0;
	n = (n + i) % NUPOOL;
	snprintf(u.name, sizeof(u.name), "fzu.%u.%u", k->id, n);
	u.addr = (unsigned long)t->ua + s * UA_SLOT +
		 rbelow(&t->rng, UA_SLOT / PAGE - np + 1) * PAGE;
	u.len = np * PAGE;
	if (k != &t->own)
		bump_max(&k->max_local, u.len);
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_USER fd %d name \"%s\" addr 0x%llx (slot %u, %s) len 0x%llx (plain)",
		 k->fd, u.name, (unsigned long long)u.addr, s,
		 ua_name[t->ua_kind[s]], (unsigned long long)u.len);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_USER, &u, &err);
	check_errno(t, C_PUSER, ret, err, -1, NULL);
	if (ret)
		return 0;
	atomic_fetch_add(&n_upools, 1);
	note_upool(t, k, n, u.handle, u.len, "POOL_USER");
	*len = u.len;
	return u.handle;
}

/* Read a module parameter: the value, or @dflt. */
static unsigned long long param(const char *name, unsigned long long dflt)
{
	char path[128], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/kxfer/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return dflt;
	if (fgets(buf, sizeof(buf), f))
		dflt = buf[0] == 'Y' ? 1 : buf[0] == 'N' ? 0 :
		       strtoull(buf, NULL, 0);
	fclose(f);
	return dflt;
}

static bool upools_allowed = true, uexports_allowed = true;

/* Memory to pin, and what POOL_USER's look at it says (0: to be seen) */
enum { A_ARENA, A_NULL, A_NONE, A_RO, A_VDSO, A_VVAR, A_KERNEL, A_UNMAPPED };

static const struct {
	const char	*name;
	int		want;
} akinds[] = {
	[A_ARENA]	= { "arena", 0 },
	[A_NULL]	= { "NULL", EFAULT },
	[A_NONE]	= { "PROT_NONE page", EACCES },
	[A_RO]		= { "read-only page", EACCES },
	[A_VDSO]	= { "vdso", EACCES },
	[A_VVAR]	= { "vvar", EOPNOTSUPP },	/* VM_IO | VM_PFNMAP */
	[A_KERNEL]	= { "kernel or non-canonical", -1 },
	[A_UNMAPPED]	= { "unmapped", -1 },	/* someone may map there */
};

static void fz_puser(struct thr *t, struct kfd *k)
{
	struct kxfer_pool_user u = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool own = k == &t->own;
	__u64 base = (unsigned long)t->ua, addr, len, end, hole = 0;
	unsigned int pg = rbelow(&t->rng, UA_LEN / PAGE), np, ak = A_ARENA;
	int ret, err, exact = -1, pred = -1, n;
	unsigned int m;
	void *p;

	/* Valid but for one thing, if any: 1 name, 2 range, 3 flags, 4 reserved */
	m = chance(&t->rng, 3) ? 1 + rbelow(&t->rng, 4) : 0;
	n = pick_uname(t, k, u.name, "fzu", NUPOOL, false, m == 1);
	/* Small mostly: every new page is zeroed (and poisoned) under TCG */
	switch (rbelow(&t->rng, 8)) {
	case 0:
	case 1:
	case 2:
	case 3:
		np = 1 + rbelow(&t->rng, 16);
		break;
	case 4:
	case 5:
		np = 1 + rbelow(&t->rng, 128);
		break;
	case 6:		/* a whole slot: a huge page, at times */
		pg = rbelow(&t->rng, UA_SLOTS) * (UA_SLOT / PAGE);
		np = UA_SLOT / PAGE;
		break;
	default:
		np = 1 + rbelow(&t->rng, pool_size / PAGE);
	}
	/* Inside the arena, mostly; else into the guard after it. */
	if (pg + np > UA_LEN / PAGE && !chance(&t->rng, 8))
		np = UA_LEN / PAGE - pg;
	addr = base + (__u64)pg * PAGE;
	len = (__u64)np * PAGE;
	if (m == 2) {
		switch (rbelow(&t->rng, 14)) {
		case 0:
			addr += 1 + rbelow(&t->rng, PAGE - 1);
			break;
		case 1:
			len = 0;
			break;
		case 2:
			len += 1 + rbelow(&t->rng, PAGE - 1);
			break;
		case 3:
			len = rval(&t->rng);
			break;
		case 4:		/* addr + len wraps */
			len = (~0ULL - rbelow(&t->rng, 1 << 20) * PAGE) &
			      ~(PAGE - 1);
			break;
		case 5:
			addr = 0;
			ak = A_NULL;
			break;
		case 6:
			addr = (unsigned long)bad_none;
			len = PAGE;
			ak = A_NONE;
			break;
		case 7:
			addr = (unsigned long)t->ro;
			len = PAGE;
			ak = A_RO;
			break;
		case 8:
			if (!vdso || !vvar)
				break;
			ak = chance(&t->rng, 2) ? A_VDSO : A_VVAR;
			addr = (unsigned long)(ak == A_VDSO ? vdso : vvar);
			len = PAGE;
			break;
		case 9:
			addr = chance(&t->rng, 2) ? 0xffff888000000000ULL :
			       0x0000800000000000ULL;
			ak = A_KERNEL;
			break;
		case 10:
			addr = (unsigned long)bad_unmapped;
			len = PAGE;
			ak = A_UNMAPPED;
			break;
		default:	/* a hole, for the call */
			if (len > UA_LEN)
				break;
			hole = addr + rbelow(&t->rng, len / PAGE) * PAGE;
			if (hole >= base + UA_LEN ||
			    munmap((void *)(unsigned long)hole, PAGE))
				hole = 0;
			break;
		}
	}
	if (m == 3)
		u.flags = rval(&t->rng);
	if (m == 4)
		u.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 3))
		u.handle = rnd(&t->rng);	/* out: ignored */
	u.addr = addr;
	u.len = len;

	if (u.flags || u.reserved[0] || u.reserved[1] || !name_valid(u.name) ||
	    !len || (addr & (PAGE - 1)) || (len & (PAGE - 1)) ||
	    __builtin_add_overflow(addr, len, &end) ||
	    end > 0x00fffffffffff000ULL) {	/* above any TASK_SIZE */
		exact = EINVAL;
	} else if (end > 0x7ffffffff000ULL) {	/* above 4-level TASK_SIZE */
		exact = -1;
	} else if (!upools_allowed) {
		exact = EPERM;
	} else {
		pred = ak == A_ARENA ? ua_predict(t, addr, len, hole) :
		       akinds[ak].want;
		if (pred > 0)
			exact = pred;
		else if (!pred)
			exact = upool_expect(t, k, n, u.name);
	}
	/* A pool of any size may be made: no job may reach beyond it. */
	if (!own && len < (1ULL << 40))
		bump_max(&k->max_local, len);
	in = u;
	p = place(t, pk, &u, sizeof(u), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	else if (pk == P_RO && exact == E_RES)	/* made, ended: EFAULT */
		exact = -1;
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_USER fd %d arg %s %p name \"%.32s\" flags 0x%x addr 0x%llx (%s %lld%s) len 0x%llx reserved %llx,%llx; slots %s,%s,%s,%s hole 0x%llx",
		 k->fd, ptr_name[pk], p, in.name, in.flags,
		 (unsigned long long)in.addr, akinds[ak].name,
		 (long long)(in.addr - base) / (long long)UA_SLOT,
		 pred > 0 ? ", refused" : pred ? "" : ", pinnable",
		 (unsigned long long)in.len,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1], ua_name[t->ua_kind[0]],
		 ua_name[t->ua_kind[1]], ua_name[t->ua_kind[2]],
		 ua_name[t->ua_kind[3]], (unsigned long long)hole);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_USER, p, &err);
	if (hole) {
		unsigned int s = (hole - base) / UA_SLOT;
		enum ua_kind kd;

		/* Still a hole? Else someone mapped there: no telling. */
		if (!msync((void *)(unsigned long)hole, PAGE, MS_ASYNC) ||
		    errno != ENOMEM)
			exact = exact == EFAULT ? -1 : exact;
		kd = ua_map(t, s, t->ua_kind[s], hole - base - s * UA_SLOT,
			    PAGE, MAP_FIXED_NOREPLACE);
		if (kd == U_LOST)
			ua_relocate(t, s, (char *)(unsigned long)hole);
		else if (kd != t->ua_kind[s] &&
			 ua_map(t, s, U_NONE, 0, UA_SLOT, MAP_FIXED) == U_LOST)
			ua_relocate(t, s, NULL);
		else if (kd != t->ua_kind[s])
			t->ua_kind[s] = U_NONE;
	}
	check_errno(t, C_PUSER, ret, err, exact, NULL);
	/* A read-only argument: made, then ended again: EFAULT. */
	if (pk == P_RO && !ret)
		fail(t, "POOL_USER succeeded with a read-only argument");
	if (pred == -2 && !ret)
		fail(t, "POOL_USER pinned pages that cannot be faulted in");
	if (!ret && !strcmp(in.name, opt_pool))
		fail(t, "POOL_USER made a second pool named %s", opt_pool);
	if (ret)
		return;
	memcpy(&u, p, sizeof(u));
	check_out(t, &in, &u, sizeof(u), "POOL_USER");
	in.handle = u.handle;
	if (memcmp(&in, &u, sizeof(u)))
		fail(t, "POOL_USER changed its argument beyond the handle");
	atomic_fetch_add(&n_upools, 1);
	note_upool(t, k, pred == 0 ? n : -1, u.handle, len, "POOL_USER");
}

/*
 * POOL_DMABUF: the thread's udmabuf, a fresh one or a dma-heap buffer
 * (closed right after the call: the pool holds it), or descriptors that
 * are no dma-buf, never open, just closed.
 */
static void fz_pdmabuf(struct thr *t, struct kfd *k)
{
	enum { FD_UDMABUF, FD_FRESH, FD_HEAP, FD_NOTBUF, FD_NEVER, FD_CLOSED,
	       FD_RANDOM };
	static const char *const fd_kinds[] = {
		"udmabuf", "fresh udmabuf", "dma-heap buffer", "not a dma-buf",
		"never open", "just closed", "random",
	};
	struct kxfer_pool_dmabuf d = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool own = k == &t->own, unique = false, nodev;
	unsigned int fk, m, r = rbelow(&t->rng, 16);
	__u64 size = 0, end;
	int ret, err, exact = -1, n, fd, closeme = -1;
	const char *dev = getenv("KXFER_RDMA_DEV");
	void *p;

	/*
	 * Valid but for one thing, if any: 1 name, 2 range, 3 dev, 4 flags,
	 * 5 pad, 6 reserved; and the descriptor, which is often no dma-buf.
	 */
	m = chance(&t->rng, 3) ? 1 + rbelow(&t->rng, 6) : 0;
	n = pick_uname(t, k, d.name, "fzu", NUPOOL, false, m == 1);
	if (r < 6 && t->udmabuf >= 0) {
		fk = FD_UDMABUF;
		/* Now and then a new one: pools keep the old, its fd closed */
		if (r == 0) {
			fd = make_udmabuf(t->memfd, rbelow(&t->rng, UA_SLOTS) *
					  UA_SLOT, UA_SLOT);
			if (fd >= 0) {
				close(t->udmabuf);
				t->udmabuf = fd;
			}
		}
		fd = t->udmabuf;
		size = UA_SLOT;
	} else if (r < 8 && have_udmabuf) {
		__u64 off = rbelow(&t->rng, UA_LEN / PAGE - 1) * PAGE;

		fk = FD_FRESH;
		size = (1 + rbelow(&t->rng, 64)) * PAGE;
		if (off + size > UA_LEN)
			size = UA_LEN - off;
		closeme = make_udmabuf(t->memfd, off, size);
		fd = closeme;
	} else if (r < 10 && heap_fd >= 0) {
		struct dma_heap_allocation_data h = {
			.len = (1 + rbelow(&t->rng, 64)) * PAGE,
			.fd_flags = O_RDWR | O_CLOEXEC,
		};

		fk = FD_HEAP;
		size = h.len;
		closeme = ioctl(heap_fd, DMA_HEAP_IOCTL_ALLOC, &h) ? -1 :
			  (int)h.fd;
		fd = closeme;
	} else {
		fk = FD_NOTBUF + rbelow(&t->rng, 4);
		switch (fk) {
		case FD_NOTBUF: {
			const int nots[] = { devnull, t->memfd, k->fd, t->notbuf,
					     t->own.fd };

			fd = nots[rbelow(&t->rng, ARRAY_SIZE(nots))];
			break;
		}
		case FD_NEVER: {
			const int never[] = { -1, INT_MIN, 1 << 20, INT_MAX };

			fd = never[rbelow(&t->rng, ARRAY_SIZE(never))];
			break;
		}
		case FD_CLOSED:	/* another thread may have it again: no telling */
			fd = dup(devnull);
			close(fd);
			break;
		default:
			fd = (int)rval(&t->rng);
		}
	}
	if (fk <= FD_HEAP && fd < 0) {	/* no dma-buf after all */
		fk = FD_NEVER;
		size = 0;
	}
	d.fd = fd;
	if (size) {
		d.offset = rbelow(&t->rng, size / PAGE) * PAGE;
		d.len = (1 + rbelow(&t->rng, (size - d.offset) / PAGE)) * PAGE;
		if (d.len > 64 * PAGE && !chance(&t->rng, 4))
			d.len = (1 + rbelow(&t->rng, 64)) * PAGE;
		if (d.len > pool_size)
			d.len = pool_size;
	} else {
		d.len = (1 + rbelow(&t->rng, 16)) * PAGE;
	}
	/* "": the buffer's pages; the soft-RoCE device: the same */
	if (chance(&t->rng, 6))
		snprintf(d.dev, sizeof(d.dev), "%s", dev ? dev : "rxe0");
	if (m == 3) {
		if (chance(&t->rng, 3))
			strcpy(d.dev, "nosuch0");
		else if (chance(&t->rng, 2))
			memset(d.dev, 'd', sizeof(d.dev));	/* unterminated */
		else
			for (r = 0; r < sizeof(d.dev) - 1; r++)
				d.dev[r] = 1 + rbelow(&t->rng, 255);
	}
	if (m == 2) {
		switch (rbelow(&t->rng, 7)) {
		case 0:
			d.offset += 1 + rbelow(&t->rng, PAGE - 1);
			break;
		case 1:
			d.len = 0;
			break;
		case 2:
			d.len += 1 + rbelow(&t->rng, PAGE - 1);
			break;
		case 3:		/* beyond the buffer */
			d.offset = size ? size - PAGE * rbelow(&t->rng, 2) :
				   1ULL << 30;
			d.len = PAGE * (1 + rbelow(&t->rng, 4));
			break;
		case 4:		/* offset + len wraps */
			d.offset = ~0ULL & ~(PAGE - 1);
			break;
		case 5:
			d.offset = rval(&t->rng);
			break;
		default:
			d.len = rval(&t->rng);
		}
	}
	if (m == 4)
		d.flags = rval(&t->rng);
	if (m == 5)
		d.pad = rval(&t->rng);
	if (m == 6)
		d.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 3))
		d.handle = rnd(&t->rng);
	/* Refusals we can tell exactly: under a name nobody has. */
	nodev = d.dev[0] && (!dev || strcmp(d.dev, dev)) &&
		strcmp(d.dev, "rxe0");
	if (m != 1 && (fk >= FD_NOTBUF || nodev || d.len > pool_size ||
		       (d.offset & (PAGE - 1)) ||
		       __builtin_add_overflow(d.offset, d.len, &end) ||
		       end > size)) {
		memset(d.name, 0, sizeof(d.name));
		snprintf(d.name, sizeof(d.name), "fzd.%u.%u.%u", k->id, t->idx,
			 t->uname_seq++);
		n = -1;
		unique = true;
	}

	/* In the module's order: the header, the budget, the buffer, dev */
	if (d.flags || d.pad || d.reserved[0] || d.reserved[1] ||
	    !name_valid(d.name) || !memchr(d.dev, 0, sizeof(d.dev)) || !d.len ||
	    (d.offset & (PAGE - 1)) || (d.len & (PAGE - 1))) {
		exact = EINVAL;
	} else if (!upools_allowed) {
		exact = EPERM;
	} else if (d.len >= KXFER_MMAP_WINDOW) {
		exact = EINVAL;
	} else if (unique && d.len <= BIG_LEN) {
		if (fk == FD_NEVER)
			exact = EBADF;
		else if (fk == FD_NOTBUF)
			exact = EINVAL;
		else if (fk <= FD_HEAP &&
			 (__builtin_add_overflow(d.offset, d.len, &end) ||
			  end > size))
			exact = EINVAL;
		else if (fk <= FD_HEAP && nodev)
			exact = ENODEV;
	} else if (!unique && fk <= FD_HEAP) {
		exact = upool_expect(t, k, n, d.name);
	}
	if (!own && d.len < (1ULL << 40))
		bump_max(&k->max_local, d.len);
	in = d;
	p = place(t, pk, &d, sizeof(d), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	else if (pk == P_RO && exact == E_RES)
		exact = -1;
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_DMABUF fd %d arg %s %p name \"%.32s\" flags 0x%x fd %d (%s, %llu bytes) pad 0x%x offset 0x%llx len 0x%llx dev \"%.16s\" reserved %llx,%llx",
		 k->fd, ptr_name[pk], p, in.name, in.flags, in.fd, fd_kinds[fk],
		 (unsigned long long)size, in.pad,
		 (unsigned long long)in.offset, (unsigned long long)in.len,
		 in.dev, (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_DMABUF, p, &err);
	if (closeme >= 0)
		close(closeme);
	check_errno(t, C_PDMABUF, ret, err, exact, NULL);
	if (pk == P_RO && !ret)
		fail(t, "POOL_DMABUF succeeded with a read-only argument");
	if (ret)
		return;
	memcpy(&d, p, sizeof(d));
	check_out(t, &in, &d, sizeof(d), "POOL_DMABUF");
	in.handle = d.handle;
	if (memcmp(&in, &d, sizeof(d)))
		fail(t, "POOL_DMABUF changed its argument beyond the handle");
	atomic_fetch_add(&n_dmabufs, 1);
	note_upool(t, k, n, d.handle, in.len, "POOL_DMABUF");
}

/*
 * Look export @name up through the session until it is advertised (a
 * few ms), for jobs into it; ENOENT all along is no error.
 */
static void remote_plain(struct thr *t, struct kfd *k, const char *name)
{
	struct kxfer_remote_lookup rl;
	unsigned int i;
	int ret = -1, err;

	for (i = 0; i < 8 && ret; i++) {
		if (i)
			usleep(2000);
		memset(&rl, 0, sizeof(rl));
		rl.peer = atomic_load(&k->peer);
		memcpy(rl.name, name, sizeof(rl.name));
		rl.name[sizeof(rl.name) - 1] = 0;
		snprintf(t->desc, sizeof(t->desc),
			 "REMOTE_LOOKUP fd %d peer %u name \"%s\" (an export just made)",
			 k->fd, rl.peer, rl.name);
		atomic_fetch_add(&k->hseq, 1);
		ret = do_ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, &rl, &err);
		if (!ret)
			live_set(k, rl.handle, true);
		atomic_fetch_add(&k->hseq, 1);
		check_errno(t, C_REMOTE, ret, err, -1, NULL);
	}
	if (ret)
		return;
	atomic_fetch_add(&n_uxlookups, 1);
	if (!rl.handle || (rl.access & ~KXFER_ACCESS_ALL) || !rl.len || !rl.gen)
		fail(t, "REMOTE_LOOKUP: handle %u access 0x%x len %llu gen %llu",
		     rl.handle, rl.access, (unsigned long long)rl.len,
		     (unsigned long long)rl.gen);
	if (rl.len < (1ULL << 28))
		atomic_store(&k->rem_u, rx_pack(rl.handle, rl.access, rl.len));
}

/* Is the "from" part of the export as the module takes it? */
static bool from_ok(const struct kxfer_export_add *e)
{
	static const __u8 zero[16];

	switch (e->from_family) {
	case 0:
		return !e->from_prefix && !memcmp(e->from_addr, zero, 16);
	case AF_INET:
		return e->from_prefix <= 32 && !memcmp(e->from_addr + 4, zero, 12);
	case AF_INET6:
		return e->from_prefix <= 128;
	default:
		return false;
	}
}

static void fz_expadd(struct thr *t, struct kfd *k)
{
	static const __u32 accs[] = {
		KXFER_ACCESS_READ, KXFER_ACCESS_WRITE,
		KXFER_ACCESS_READ | KXFER_ACCESS_WRITE,
		KXFER_ACCESS_READ | KXFER_ACCESS_WRITE,
		KXFER_ACCESS_ALL, KXFER_ACCESS_ATOMIC,
	};
	struct kxfer_export_add e = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool own = k == &t->own, refuse = false;
	__u64 plen = 0, l, end;
	struct upool *up;
	int ret, err, exact = -1, n;
	unsigned int m;
	void *p;

	/*
	 * Valid but for one thing, if any: 1 name, 2 pool, 3 range,
	 * 4 access, 5 peer, 6 from, 7 flags, 8 pad, 9 token.  A valid
	 * export has a token, at random, a third of the time.
	 */
	m = chance(&t->rng, 3) ? 1 + rbelow(&t->rng, 9) : 0;
	n = pick_uname(t, k, e.name, "fzx", NUEXP, true, m == 1);
	e.pool = pick_upool(t, k, &plen);
	if (!e.pool && !chance(&t->rng, 4))
		e.pool = upool_plain(t, k, &plen);
	if (!e.pool)
		e.pool = atomic_load(&k->pool);
	if (m == 2) {
		plen = 0;
		switch (rbelow(&t->rng, 3)) {
		case 0:		/* a kernel pool's attachment */
			e.pool = atomic_load(&k->pool);
			break;
		case 1:
			e.pool = pick_handle(t, &k->pool);
			break;
		default: {	/* another file's pool's handle */
			struct kfd *o = &shared_fd[rbelow(&t->rng, NSHARED)];

			e.pool = up_handle(atomic_load(&o->upool));
		}
		}
	}
	up = own_upool(t, k, e.pool);
	if (up)
		plen = up->len;
	l = plen ? plen : pool_size;
	if (chance(&t->rng, 3)) {
		e.len = l;
	} else {
		e.offset = rbelow(&t->rng, l);
		e.len = 1 + rbelow(&t->rng, l - e.offset);
		if (chance(&t->rng, 2)) {
			e.offset &= ~(PAGE - 1);
			e.len = (e.len + PAGE - 1) & ~(PAGE - 1);
		}
	}
	if (m == 3) {
		switch (rbelow(&t->rng, 6)) {
		case 0:
			e.len = 0;
			break;
		case 1:		/* one byte too many */
			e.len = l - e.offset + 1;
			break;
		case 2:
			e.offset = l;
			e.len = 1 + rbelow(&t->rng, PAGE);
			break;
		case 3:		/* offset + len wraps */
			e.offset = ~0ULL - rbelow(&t->rng, PAGE);
			e.len = PAGE;
			break;
		case 4:
			e.offset = rval(&t->rng);
			break;
		default:
			e.len = rval(&t->rng);
		}
	}
	e.access = accs[rbelow(&t->rng, ARRAY_SIZE(accs))];
	if (m == 4)
		e.access = chance(&t->rng, 2) ? 0 : (__u32)rval(&t->rng) | 8;
	if (chance(&t->rng, 4))		/* the session to this node, by name */
		snprintf(e.peer, sizeof(e.peer), "%s", *opt_peer ? opt_peer : "self");
	if (m == 5) {
		switch (rbelow(&t->rng, 3)) {
		case 0:		/* no such session yet: taken */
			strcpy(e.peer, "nosuch");
			break;
		case 1:		/* unterminated */
			memset(e.peer, 'p', sizeof(e.peer));
			break;
		default:	/* a name no session can have */
			strcpy(e.peer, chance(&t->rng, 2) ? "no such" : "s\xe9lf");
		}
	}
	switch (chance(&t->rng, 3) ? rbelow(&t->rng, 3) : 3) {
	case 0:		/* the guests' network: sessions here match */
		e.from_family = AF_INET;
		e.from_prefix = 8 + rbelow(&t->rng, 9);
		e.from_addr[0] = 10;
		break;
	case 1:		/* nobody's */
		e.from_family = AF_INET;
		e.from_prefix = 32;
		e.from_addr[0] = 192;
		e.from_addr[1] = 0;
		e.from_addr[2] = 2;
		e.from_addr[3] = 1 + rbelow(&t->rng, 254);
		break;
	case 2:
		e.from_family = AF_INET6;
		e.from_prefix = rbelow(&t->rng, 129);
		e.from_addr[0] = 0xfd;
		break;
	default:
		break;
	}
	if (m == 6) {
		switch (rbelow(&t->rng, 4)) {
		case 0:		/* a prefix too long */
			e.from_family = chance(&t->rng, 2) ? AF_INET : AF_INET6;
			e.from_prefix = (e.from_family == AF_INET ? 33 : 129) +
					rbelow(&t->rng, 90);
			break;
		case 1:		/* bytes past the address */
			e.from_family = chance(&t->rng, 2) ? AF_INET : 0;
			e.from_addr[4 + rbelow(&t->rng, 12)] =
				1 + rbelow(&t->rng, 255);
			break;
		case 2:
			e.from_family = rnd(&t->rng);
			e.from_prefix = rnd(&t->rng);
			break;
		default:	/* a prefix, but any address */
			e.from_family = 0;
			e.from_prefix = 1 + rbelow(&t->rng, 32);
		}
	}
	if (m == 7)
		e.flags = rval(&t->rng);
	if (m == 8)
		e.pad = rnd(&t->rng);
	if (m == 9) {
		/* without its flag, or the flag with zeros */
		if (chance(&t->rng, 2))
			e.token[rbelow(&t->rng, KXFER_TOKEN_LEN)] =
				1 + rbelow(&t->rng, 255);
		else
			e.flags |= KXFER_EXPORT_TOKEN;
	} else if (chance(&t->rng, 3)) {
		e.flags |= KXFER_EXPORT_TOKEN;
		for (l = 0; l < sizeof(e.token); l++)
			e.token[l] = rnd(&t->rng);
		e.token[0] |= 1;
	}

	if ((e.flags & ~(KXFER_EXPORT_SUBSCRIBE | KXFER_EXPORT_TOKEN)) ||
	    e.pad || token_zero(e.token) == !!(e.flags & KXFER_EXPORT_TOKEN) ||
	    !name_valid(e.name) ||
	    (e.peer[0] && !name_valid(e.peer)) || !from_ok(&e))
		exact = EINVAL;
	else if (!uexports_allowed)
		exact = EPERM;
	else if (!e.pool)
		exact = ENOENT;
	else if (own && !up)
		refuse = true;		/* EPERM (a kernel pool) or ENOENT */
	else if (own) {
		if (!e.access || (e.access & ~KXFER_ACCESS_ALL) || !e.len)
			exact = EINVAL;
		else if ((n >= 0 && t->ux[n].live) ||
			 (rw_len && !strcmp(e.name, opt_exp_rw)))
			exact = EEXIST;
		else if (__builtin_add_overflow(e.offset, e.len, &end) ||
			 end > up->len)
			exact = ERANGE;
		else if (n >= 0)
			exact = 0;
	}
	in = e;
	p = place(t, pk, &e, sizeof(e), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS) {
		exact = EFAULT;
		refuse = false;
	}
	snprintf(t->desc, sizeof(t->desc),
		 "EXPORT_ADD fd %d arg %s %p name \"%.32s\" pool %u (%s, %llu bytes) access 0x%x offset 0x%llx len 0x%llx peer \"%.32s\" flags 0x%x from %u/%u %02x%02x%02x%02x.. pad %u token %s",
		 k->fd, ptr_name[pk], p, in.name, in.pool,
		 up ? "a user pool of this file" : own ? "no user pool" : "?",
		 (unsigned long long)plen, in.access,
		 (unsigned long long)in.offset, (unsigned long long)in.len,
		 in.peer, in.flags, in.from_family, in.from_prefix,
		 in.from_addr[0], in.from_addr[1], in.from_addr[2],
		 in.from_addr[3], in.pad,
		 token_zero(in.token) ? "zero" : "set");
	ret = do_ioctl(k->fd, KXFER_IOC_EXPORT_ADD, p, &err);
	/* Subscribed as it exports: the subscription's handle, > 0. */
	if (ret > 0) {
		if (!(in.flags & KXFER_EXPORT_SUBSCRIBE) || ret > 4096)
			fail(t, "EXPORT_ADD returned %d", ret);
		ret = 0;
	} else if (!ret && (in.flags & KXFER_EXPORT_SUBSCRIBE)) {
		fail(t, "EXPORT_ADD with KXFER_EXPORT_SUBSCRIBE returned 0");
	}
	check_errno(t, C_EXPADD, ret, err, exact, NULL);
	if (!ptr_faults(pk) && pk != P_CROSS && memcmp(p, &in, sizeof(in)))
		fail(t, "EXPORT_ADD wrote to its argument");
	if (ret)
		return;
	if (refuse)
		fail(t, "EXPORT_ADD exported handle %u, not a pool of this file's",
		     in.pool);
	atomic_fetch_add(&n_uexports, 1);
	if (own && n >= 0) {
		t->ux[n].live = true;
		t->ux[n].pool = in.pool;
	} else if (n < 0) {
		export_del_plain(t, k, in.name, own ? 0 : -1);
		return;
	}
	/* Seen from the session to this node, for jobs into user memory */
	if (atomic_load(&k->peer) && !in.peer[0] && !in.from_family &&
	    chance(&t->rng, 2))
		remote_plain(t, k, in.name);
}

/* A stale handle of the own file: EXPORT_ADD on it is ENOENT. */
static void export_stale(struct thr *t, struct kfd *k, __u32 h)
{
	struct kxfer_export_add e = {};
	int ret, err;

	snprintf(e.name, sizeof(e.name), "fzx.%u.%u", k->id,
		 (unsigned int)rbelow(&t->rng, NUEXP));
	e.pool = h;
	e.len = PAGE;
	e.access = KXFER_ACCESS_READ;
	snprintf(t->desc, sizeof(t->desc),
		 "EXPORT_ADD fd %d name \"%s\" pool %u, just detached",
		 k->fd, e.name, h);
	ret = do_ioctl(k->fd, KXFER_IOC_EXPORT_ADD, &e, &err);
	check_errno(t, C_EXPADD, ret, err, uexports_allowed ? ENOENT : EPERM,
		    NULL);
}

static void fz_expdel(struct thr *t, struct kfd *k)
{
	struct kxfer_export_del d = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool own = k == &t->own, refuse = false;
	unsigned int r = rbelow(&t->rng, 10);
	int ret, err, exact = -1, n = -1;
	void *p;

	if (r < 6) {
		n = pick_uname(t, k, d.name, "fzx", NUEXP, false,
			       chance(&t->rng, 6));
	} else if (r < 8) {	/* the administrator's */
		strncpy(d.name, chance(&t->rng, 2) ? opt_exp_rw : opt_exp_ro,
			sizeof(d.name) - 1);
	} else {		/* another file's */
		unsigned int id;

		do
			id = rbelow(&t->rng, 16);
		while (id == k->id);
		snprintf(d.name, sizeof(d.name), "fzx.%u.%u", id,
			 (unsigned int)rbelow(&t->rng, NUEXP));
	}
	switch (chance(&t->rng, 5) ? rbelow(&t->rng, 3) : 3) {
	case 0:
		d.flags = rval(&t->rng);
		break;
	case 1:
		d.reserved0 = rval(&t->rng);
		break;
	case 2:
		d.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
		break;
	default:
		break;
	}
	/* Nobody withdraws the administrator's or another file's export. */
	refuse = r >= 6;
	if ((d.flags & ~KXFER_EXPORT_DEL_NOWAIT) || d.reserved0 ||
	    d.reserved[0] || d.reserved[1] || !name_valid(d.name))
		exact = EINVAL;
	else if (r == 6 || r == 7)
		exact = (r == 6 ? rw_len : ro_len) ? EPERM : -1;
	else if (own && n >= 0)
		exact = t->ux[n].live ? 0 : ENOENT;
	in = d;
	p = place(t, pk, &d, sizeof(d), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS) {
		exact = EFAULT;
		refuse = false;
	}
	snprintf(t->desc, sizeof(t->desc),
		 "EXPORT_DEL fd %d arg %s %p name \"%.32s\" flags 0x%x reserved %x,%llx,%llx",
		 k->fd, ptr_name[pk], p, in.name, in.flags, in.reserved0,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	ret = do_ioctl(k->fd, KXFER_IOC_EXPORT_DEL, p, &err);
	check_errno(t, C_EXPDEL, ret, err, exact, NULL);
	if (!ptr_faults(pk) && pk != P_CROSS && memcmp(p, &in, sizeof(in)))
		fail(t, "EXPORT_DEL wrote to its argument");
	if (ret)
		return;
	if (refuse)
		fail(t, "EXPORT_DEL withdrew \"%.32s\", not this file's", in.name);
	if (own && n >= 0)
		t->ux[n].live = false;
}

/*
 * Jobs from and into a user pool, then the pool detached under them:
 * every one still completes once, and the pages go after the last.
 */
static void fz_burst(struct thr *t, struct kfd *k)
{
	struct kxfer_submit s = {};
	unsigned int i, n = 1 + rbelow(&t->rng, 16);
	bool own = k == &t->own;
	__u64 len, rlen = rw_len;
	__u32 h = pick_upool(t, k, &len), peer = atomic_load(&k->peer);
	__u32 rem = atomic_load(&k->rem_rw);
	int ret, err;

	if (!h)
		h = upool_plain(t, k, &len);
	if (!h || !len || !peer || !rem || !rlen) {
		if (h)
			detach_plain(t, k, h, own ? 0 : -1);
		return;
	}
	for (i = 0; i < n; i++) {
		struct kxfer_job *j = &t->jobs[i];
		struct kxfer_segment *g = &t->segs[i];
		__u64 max = len < rlen ? len : rlen, l, seq;

		max = max > 65536 ? 65536 : max;
		l = 1 + rbelow(&t->rng, max);
		memset(j, 0, sizeof(*j));
		j->op = chance(&t->rng, 2) ? KXFER_OP_READ : KXFER_OP_WRITE;
		j->pool = h;
		j->peer = peer;
		j->remote = rem;
		g->local_off = rbelow(&t->rng, len - l + 1);
		g->remote_off = rbelow(&t->rng, rlen - l + 1);
		g->len = l;
		j->nsegs = 1;
		j->segs = (unsigned long)g;
		seq = atomic_fetch_add(&k->seq, 1) & 0xffffffffULL;
		j->user_data = ((__u64)k->id << FD_ID_SHIFT) |
			       (seq << SEQ_SHIFT) | l;
	}
	s.jobs = (unsigned long)t->jobs;
	s.njobs = n;
	snprintf(t->desc, sizeof(t->desc),
		 "SUBMIT fd %d: %u jobs on user pool %u (%llu bytes), then POOL_DETACH",
		 k->fd, n, h, (unsigned long long)len);
	ret = do_ioctl(k->fd, KXFER_IOC_SUBMIT, &s, &err);
	check_errno(t, C_SUBMIT, ret, err, -1, NULL);
	if (!ret) {
		if (!s.accepted || s.accepted > n ||
		    (s.accepted < n && !in_set(-s.error, set_submit)))
			fail(t, "SUBMIT: accepted %u of %u, error %d", s.accepted,
			     n, s.error);
		else
			account_accepted(k, t->jobs, s.accepted);
		atomic_fetch_add(&n_ujobs, s.accepted);
		/* Valid jobs on the own file's pool: refused only for state */
		if (own && s.accepted < n &&
		    (s.error == -EINVAL || s.error == -ERANGE ||
		     s.error == -EFAULT))
			fail(t, "SUBMIT refused a valid job on a user pool: %d (%s)",
			     s.error, strerror(-s.error));
	}
	atomic_fetch_add(&n_bursts, 1);
	detach_plain(t, k, h, own ? 0 : -1);
}

static void fz_unknown(struct thr *t, struct kfd *k)
{
	static const unsigned long known[] = {
		KXFER_IOC_QUERY, KXFER_IOC_POOL_ATTACH, KXFER_IOC_POOL_DETACH,
		KXFER_IOC_PEER_LOOKUP, KXFER_IOC_REMOTE_LOOKUP,
		KXFER_IOC_SUBMIT, KXFER_IOC_REAP, KXFER_IOC_NOTIFY_SUBSCRIBE,
		KXFER_IOC_NOTIFY_UNSUBSCRIBE, KXFER_IOC_POOL_USER,
		KXFER_IOC_POOL_DMABUF, KXFER_IOC_EXPORT_ADD,
		KXFER_IOC_EXPORT_DEL, KXFER_IOC_CANCEL,
		KXFER_IOC_RING_SETUP, KXFER_IOC_RING_MSG, KXFER_IOC_RELEASE,
		KXFER_IOC_CONNECT,
	};
	unsigned long cmd;
	unsigned int i, nr, size, dir;
	char buf[256] = {};
	int ret, err;

	/*
	 * Only kxfer's magic (and two neighbours nobody uses): the VFS
	 * answers some numbers of other magics itself (FIOCLEX, FIFREEZE...).
	 */
	do {
		nr = chance(&t->rng, 2) ? rbelow(&t->rng, 16) : rbelow(&t->rng, 256);
		size = chance(&t->rng, 2) ? rbelow(&t->rng, 128) :
			rbelow(&t->rng, 1 << 14);
		dir = rbelow(&t->rng, 4);
		cmd = _IOC(dir, 0xE7 + rbelow(&t->rng, 3) * (chance(&t->rng, 4)),
			   nr, size);
		for (i = 0; i < ARRAY_SIZE(known); i++)
			if (cmd == known[i])
				break;
	} while (i < ARRAY_SIZE(known));
	snprintf(t->desc, sizeof(t->desc), "ioctl fd %d cmd 0x%lx", k->fd, cmd);
	ret = do_ioctl(k->fd, cmd, chance(&t->rng, 2) ? buf : NULL, &err);
	check_errno(t, C_UNKNOWN, ret, err, ENOTTY, NULL);
}

static void unmap_one(struct thr *t, unsigned int i)
{
	if (!t->maps[i].addr)
		return;
	munmap(t->maps[i].addr, t->maps[i].len);
	t->maps[i].addr = NULL;
}

static void fz_mmap(struct thr *t, struct kfd *k, bool victim)
{
	static const int extra[] = { ENODEV, 0 };
	__u32 h = pick_handle(t, &k->pool);
	__u64 off, len;
	int flags = chance(&t->rng, 10) ? MAP_PRIVATE : MAP_SHARED;
	int prot = chance(&t->rng, 8) ? PROT_READ : PROT_READ | PROT_WRITE;
	int exact = -1, err = 0, slot;
	void *a;

	switch (rbelow(&t->rng, 5)) {
	case 0:
		off = rval(&t->rng) & ~(PAGE - 1);
		break;
	case 1:
		off = rval(&t->rng);		/* maybe misaligned */
		break;
	default:
		off = rbelow(&t->rng, pool_size / PAGE + 2) * PAGE;
	}
	len = chance(&t->rng, 5) ? rval(&t->rng) :
		(1 + rbelow(&t->rng, 16)) * PAGE;
	if (!chance(&t->rng, 10))
		off += (__u64)h << KXFER_MMAP_WINDOW_SHIFT;
	if (!len || (off & (PAGE - 1)))
		exact = EINVAL;
	/* A user pool of the own file: never mapped through /dev/kxfer */
	if (k == &t->own && chance(&t->rng, 6)) {
		__u64 ulen;
		__u32 uh = pick_upool(t, k, &ulen);

		if (uh) {
			off = ((__u64)uh << KXFER_MMAP_WINDOW_SHIFT) +
			      rbelow(&t->rng, ulen / PAGE) * PAGE;
			len = (1 + rbelow(&t->rng, 4)) * PAGE;
			exact = EINVAL;
		}
	}
	snprintf(t->desc, sizeof(t->desc),
		 "mmap fd %d len 0x%llx prot %d flags 0x%x offset 0x%llx (window %llu, +0x%llx)",
		 k->fd, (unsigned long long)len, prot, flags,
		 (unsigned long long)off,
		 (unsigned long long)(off >> KXFER_MMAP_WINDOW_SHIFT),
		 (unsigned long long)(off & (KXFER_MMAP_WINDOW - 1)));
	a = mmap(NULL, len, prot, flags, k->fd, (off_t)off);
	if (a == MAP_FAILED)
		err = errno;
	check_errno(t, C_MMAP, a == MAP_FAILED ? -1 : 0, err, exact,
		    victim ? extra : NULL);
	if (a == MAP_FAILED)
		return;
	atomic_fetch_add(&n_maps_ok, 1);
	if (flags != MAP_SHARED ||
	    (off & (KXFER_MMAP_WINDOW - 1)) + len > pool_size)
		fail(t, "mmap succeeded");
	/* Touch the first and the last page. */
	if (prot & PROT_WRITE) {
		__atomic_store_n((char *)a, 1, __ATOMIC_RELAXED);
		__atomic_store_n((char *)a + len - 1, 2, __ATOMIC_RELAXED);
	} else {
		(void)__atomic_load_n((char *)a + len - 1, __ATOMIC_RELAXED);
	}
	slot = rbelow(&t->rng, MAXMAPS);
	unmap_one(t, slot);
	t->maps[slot].addr = a;
	t->maps[slot].len = len;
}

/* Touch every mapping we hold: detached or closed, they stay valid. */
static void touch_maps(struct thr *t)
{
	unsigned int i;

	for (i = 0; i < MAXMAPS; i++)
		if (t->maps[i].addr)
			(void)__atomic_load_n((char *)t->maps[i].addr +
					      t->maps[i].len / 2, __ATOMIC_RELAXED);
}

/*
 * The mapped event ring: RING_SETUP and RING_MSG with bad arguments,
 * the mapping, and a tail that is never a valid one written into it
 * (behind the kernel's, or past any head it can reach meanwhile): the
 * kernel must ignore it, so that no event is lost to the fuzzer's count.
 */
static void fz_ring(struct thr *t, struct kfd *k, bool victim)
{
	static const int extra[] = { ENODEV, 0 };
	struct kxfer_ring_setup rs = {}, rgood;
	struct kxfer_ring_msg m = {}, mgood;
	enum ptr_kind pk = pick_ptr(t);
	struct kxfer_reap wr = { .flags = KXFER_REAP_WAIT };
	int ret, err, exact = -1;
	char buf[64];
	void *p;

	if (chance(&t->rng, 6))
		rs.flags = rval(&t->rng);
	if (chance(&t->rng, 8))
		rs.reserved0 = rval(&t->rng);
	if (chance(&t->rng, 8))
		rs.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 4))
		rs.entries = rnd(&t->rng);	/* out fields: ignored */
	if (rs.flags || rs.reserved0 || rs.reserved[0] || rs.reserved[1])
		exact = EINVAL;
	p = place(t, pk, &rs, sizeof(rs), &rgood, 0);
	if (ptr_faults(pk) || pk == P_CROSS || (pk == P_RO && exact < 0))
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "RING_SETUP fd %d arg %s %p flags 0x%x reserved %x,%llx,%llx",
		 k->fd, ptr_name[pk], p, rs.flags, rs.reserved0,
		 (unsigned long long)rs.reserved[0],
		 (unsigned long long)rs.reserved[1]);
	ret = do_ioctl(k->fd, KXFER_IOC_RING_SETUP, p, &err);
	check_errno(t, C_RSETUP, ret, err, exact < 0 ? E_RES : exact, NULL);
	if (!ret) {
		memcpy(&rs, p, sizeof(rs));
		if (rs.entries != limits.max_inflight || rs.mmap_offset ||
		    rs.events_off != sizeof(struct kxfer_ring) ||
		    rs.mmap_len < rs.events_off +
		    (__u64)rs.entries * sizeof(struct kxfer_event))
			fail(t, "RING_SETUP answered %u entries, len %llu",
			     rs.entries, (unsigned long long)rs.mmap_len);
	}

	/* RING_MSG: any index; a good one only reads, never takes. */
	pk = pick_ptr(t);
	exact = -1;
	m.index = chance(&t->rng, 2) ? rnd(&t->rng) : rbelow(&t->rng, 4);
	m.len = rbelow(&t->rng, sizeof(buf) + 1);
	m.buf = chance(&t->rng, 8) ? 1 : (unsigned long)buf;
	if (chance(&t->rng, 8))
		m.flags = rval(&t->rng);
	if (chance(&t->rng, 8))
		m.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (m.flags || m.reserved[0] || m.reserved[1])
		exact = EINVAL;
	p = place(t, pk, &m, sizeof(m), &mgood, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "RING_MSG fd %d arg %s %p index %u len %u flags 0x%x",
		 k->fd, ptr_name[pk], p, m.index, m.len, m.flags);
	ret = do_ioctl(k->fd, KXFER_IOC_RING_MSG, p, &err);
	check_errno(t, C_RMSG, ret, err, exact, NULL);

	/*
	 * The mapping, and a tail the kernel must not take: on the thread's
	 * own file only, where no other thread writes a tail meanwhile.
	 */
	if (!rs.mmap_len || !rs.entries || k != &t->own)
		return;
	snprintf(t->desc, sizeof(t->desc), "mmap ring fd %d len %llu", k->fd,
		 (unsigned long long)rs.mmap_len);
	p = mmap(NULL, rs.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd,
		 KXFER_RING_MMAP_OFFSET);
	err = p == MAP_FAILED ? errno : 0;
	check_errno(t, C_MMAP, p == MAP_FAILED ? -1 : 0, err, E_RES,
		    victim ? extra : NULL);
	if (p == MAP_FAILED)
		return;
	{
		struct kxfer_ring *r = p;
		__u32 tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		__u32 head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		__u32 bad = chance(&t->rng, 2) ?
			tail - 1 - rbelow(&t->rng, 1U << 30) :
			head + 4 * rs.entries + rbelow(&t->rng, 1U << 30);

		/* Only the tail is read back; the rest is ours to spoil. */
		r->head = rnd(&t->rng);
		r->mask = rnd(&t->rng);
		memset((char *)p + rs.events_off, 0xa5,
		       rbelow(&t->rng, rs.entries) * sizeof(struct kxfer_event));
		__atomic_store_n(&r->tail, bad, __ATOMIC_RELEASE);
		snprintf(t->desc, sizeof(t->desc),
			 "REAP WAIT fd %d with ring tail %u (was %u, head %u)",
			 k->fd, bad, tail, head);
		ret = do_ioctl(k->fd, KXFER_IOC_REAP, &wr, &err);
		check_errno(t, C_REAP, ret, err, 0, NULL);
		/* Put the tail back, unless a REAP did meanwhile. */
		__atomic_compare_exchange_n(&r->tail, &bad, tail, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	munmap(p, rs.mmap_len);
}

/* One random operation on file @k. */
static void fz_one(struct thr *t, struct kfd *k, bool victim)
{
	unsigned int r = rbelow(&t->rng, 100);

	if (r < 3)
		fz_query(t, k);
	else if (r < 8)
		fz_attach(t, k);
	else if (r < 12)
		fz_detach(t, k);
	else if (r < 15)
		fz_peer(t, k);
	else if (r < 20)
		fz_remote(t, k);
	else if (r < 46)
		fz_submit(t, k);
	else if (r < 63)
		fz_reap(t, k, false, 0);
	else if (r < 64)
		fz_nsub(t, k, false);
	else if (r < 68)
		fz_nsub(t, k, true);
	else if (r < 70)
		fz_unknown(t, k);
	else if (r < 72)
		fz_ring(t, k, victim);
	else if (r < 76)
		fz_mmap(t, k, victim);
	else if (r < 78)
		unmap_one(t, rbelow(&t->rng, MAXMAPS));
	else if (r < 80)
		touch_maps(t);
	else if (r < 85)
		fz_puser(t, k);
	else if (r < 87)
		fz_pdmabuf(t, k);
	else if (r < 93)
		fz_expadd(t, k);
	else if (r < 95)
		fz_expdel(t, k);
	else if (r < 97)
		fz_arena(t);
	else if (r < 98)
		fz_burst(t, k);
	else if (r < 99)
		fz_release(t, k);
	else if (chance(&t->rng, 2))
		fz_connect(t, k);
	else
		fz_submit(t, k);
}

/*
 * A victim: ops under the read lock; "close" swaps /dev/null in (the
 * kxfer file goes when the calls in flight on it return); a revival
 * under the write lock opens a new one at the same number.
 */
static void fz_victim(struct thr *t)
{
	struct kfd *v = &victim_fd[rbelow(&t->rng, NVICTIM)];
	unsigned int r = rbelow(&t->rng, 20);

	if (r == 0) {
		/* Not under a revival; /dev/null in before "dead" shows. */
		pthread_rwlock_rdlock(&v->lock);
		if (!atomic_load(&v->dead)) {
			atomic_fetch_add(&n_calls[C_CLOSE], 1);
			atomic_fetch_add(&n_victim_kills, 1);
			if (atomic_load(&v->upool))
				atomic_fetch_add(&n_victim_upools, 1);
			dup2(devnull, v->fd);
			atomic_store(&v->dead, 1);
		}
		pthread_rwlock_unlock(&v->lock);
		return;
	}
	if (r == 1 && atomic_load(&v->dead)) {
		int fd;

		pthread_rwlock_wrlock(&v->lock);
		if (atomic_load(&v->dead)) {
			fd = open(DEV, O_RDWR | O_CLOEXEC);
			if (fd >= 0) {
				dup2(fd, v->fd);
				close(fd);
				atomic_store(&v->pool, 0);
				atomic_store(&v->peer, 0);
				atomic_store(&v->rem_rw, 0);
				atomic_store(&v->rem_ro, 0);
				atomic_store(&v->upool, 0);
				atomic_store(&v->rem_u, 0);
				kfd_setup(v);
				atomic_store(&v->dead, 0);
			}
		}
		pthread_rwlock_unlock(&v->lock);
		return;
	}
	pthread_rwlock_rdlock(&v->lock);
	if (atomic_load(&v->dead)) {
		/* /dev/null now: kxfer's ioctls are ENOTTY there */
		int ret, err;

		snprintf(t->desc, sizeof(t->desc), "QUERY on a closed victim fd %d",
			 v->fd);
		struct kxfer_query q = {};

		ret = do_ioctl(v->fd, KXFER_IOC_QUERY, &q, &err);
		call_us = 0;
		if (!ret || err != ENOTTY)
			fail(t, "a closed file answered: %d %s", ret, strerror(err));
	} else {
		t->victim = true;
		fz_one(t, v, true);
		t->victim = false;
	}
	pthread_rwlock_unlock(&v->lock);
}

/* Reap file @k until every accepted job has completed, or time is up. */
static bool drain(struct thr *t, struct kfd *k, double limit_s)
{
	double until = elapsed() + limit_s;

	while (atomic_load(&k->reaped) < atomic_load(&k->accepted)) {
		if (elapsed() > until)
			return false;
		fz_reap(t, k, true, 100000000);
	}
	/* NOTIFY events may still come; take what is there. */
	while (fz_reap(t, k, true, 0))
		;
	return true;
}

static void verify_counts(struct thr *t, struct kfd *k, const char *what)
{
	unsigned long long acc = atomic_load(&k->accepted);
	unsigned long long rep = atomic_load(&k->reaped);

	if (acc != rep || atomic_load(&k->sum_acc) != atomic_load(&k->sum_reaped))
		fail(t, "%s (fd %d): %llu jobs accepted, %llu completions reaped (user_data sums %llx/%llx)",
		     what, k->fd, acc, rep,
		     (unsigned long long)atomic_load(&k->sum_acc),
		     (unsigned long long)atomic_load(&k->sum_reaped));
}

/*
 * This thread pins under RLIMIT_MEMLOCK: capabilities are per thread,
 * the limit and the mm's pinned_vm per process.
 */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return;
	d[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &h, d))
		perror("capset");
}

static void *worker(void *arg)
{
	struct thr *t = arg;
	double deadline = opt_time;
	unsigned int i;

	t->rng = t->seed;
	kfd_init(&t->own, true);
	if (kfd_open(&t->own)) {
		fail(t, "open %s: %s", DEV, strerror(errno));
		return NULL;
	}
	ua_init(t);
	if (t->idx == 1)
		drop_ipc_lock();
	for (t->iter = 0; t->iter < opt_iters && !atomic_load(&stop); t->iter++) {
		unsigned int r = rbelow(&t->rng, 10);

		if (elapsed() > deadline)
			break;
		if (r < 5)
			fz_one(t, &t->own, false);
		else if (r < 8)
			fz_one(t, &shared_fd[rbelow(&t->rng, NSHARED)], false);
		else
			fz_victim(t);
	}
	if (opt_verbose)
		printf("# thread %u: %lu iterations\n", t->idx, t->iter);
	snprintf(t->desc, sizeof(t->desc), "final drain of thread %u's file",
		 t->idx);
	if (!drain(t, &t->own, 60))
		fail(t, "completions missing after 60 s");
	verify_counts(t, &t->own, "own file");
	close(t->own.fd);
	for (i = 0; i < MAXMAPS; i++)
		unmap_one(t, i);
	ua_fini(t);
	return NULL;
}

/* VmPin of this process, kB; -1 if unknown. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static __u64 pool_mem_used(void)
{
	struct kxfer_query q = {};
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0 || ioctl(fd, KXFER_IOC_QUERY, &q))
		q.pool_mem_used = ~0ULL;
	if (fd >= 0)
		close(fd);
	return q.pool_mem_used;
}

/*
 * Every file is closed: every pool of user memory ends once the jobs in
 * flight on it are done, and gives its memory back.
 */
static void check_leaks(struct thr *t, __u64 used0)
{
	double until = elapsed() + 30;
	__u64 used;
	long pin;

	snprintf(t->desc, sizeof(t->desc), "every file closed: what is left");
	for (;;) {
		used = pool_mem_used();
		pin = vm_pin_kb();
		if ((used == used0 && !pin) || elapsed() > until)
			break;
		usleep(100000);
	}
	if (used != used0 || pin)
		fail(t, "pool_mem_used is %llu, %llu at the start; VmPin %ld kB",
		     (unsigned long long)used, (unsigned long long)used0, pin);
	else
		printf("# nothing left: pool_mem_used %llu as at the start, VmPin 0 kB\n",
		       (unsigned long long)used);
}

/* The vDSO and its data page, to pass as memory to pin. */
static void find_vdso(void)
{
	char line[512];
	unsigned long a;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-", &a) != 1)
			continue;
		if (strstr(line, "[vdso]"))
			vdso = (char *)a;
		else if (strstr(line, "[vvar]"))
			vvar = (char *)a;
	}
	if (f)
		fclose(f);
}

static void on_signal(int sig)
{
}

static void help(void)
{
	fprintf(stderr,
		"usage: fuzz_ioctl [-s SEED] [-i ITERATIONS] [-t THREADS] [-T SECONDS]\n"
		"                  [-p POOL] [-P PEER] [-e EXPORT_RW] [-r EXPORT_RO]\n"
		"                  [-c ADDR] [-v]\n"
		"  SEED default: from the clock (printed); ITERATIONS per thread (20000);\n"
		"  THREADS (4); SECONDS bounds the fuzzing (60); POOL (fz0, attachable);\n"
		"  PEER (none): a session whose remote exports EXPORT_RW (fze, read-write,\n"
		"  as long as POOL) and EXPORT_RO (fzro, read-only, 64 KiB) jobs use;\n"
		"  ADDR (none): the IPv4 address of PEER's session, which a connect rule\n"
		"  allows (CONNECT succeeds for it alone).\n");
	exit(2);
}

static void *arena(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "threads", required_argument, NULL, 't' },
		{ "time", required_argument, NULL, 'T' },
		{ "pool", required_argument, NULL, 'p' },
		{ "peer", required_argument, NULL, 'P' },
		{ "export", required_argument, NULL, 'e' },
		{ "export-ro", required_argument, NULL, 'r' },
		{ "connect", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct kxfer_pool_attach a = {};
	struct thr *thr;
	struct thr main_t = {};
	unsigned long total = 0;
	unsigned int i;
	__u64 used0;
	int c, fd;

	opt_seed = (__u64)time(NULL) ^ ((__u64)getpid() << 32);
	while ((c = getopt_long(argc, argv, "s:i:t:T:p:P:e:r:c:v", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt_seed = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			opt_iters = strtoul(optarg, NULL, 0);
			break;
		case 't':
			opt_threads = strtoul(optarg, NULL, 0);
			break;
		case 'T':
			opt_time = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			opt_pool = optarg;
			break;
		case 'P':
			opt_peer = optarg;
			break;
		case 'e':
			opt_exp_rw = optarg;
			break;
		case 'r':
			opt_exp_ro = optarg;
			break;
		case 'c':
			opt_connect = optarg;
			break;
		case 'v':
			opt_verbose = 1;
			break;
		default:
			help();
		}
	}
	if (!opt_threads || opt_threads > 64 || !opt_seed)
		help();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# fuzz_ioctl: seed %llu, %u threads, %lu iterations each, %u s at most, pool %s, peer %s\n",
	       (unsigned long long)opt_seed, opt_threads, opt_iters, opt_time,
	       opt_pool, *opt_peer ? opt_peer : "(none)");
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	sigaction(SIGUSR1, &sa, NULL);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, KXFER_IOC_QUERY, &limits)) {
		printf("FAIL: %s: %s\n", DEV, strerror(errno));
		return 1;
	}
	strncpy(a.name, opt_pool, sizeof(a.name) - 1);
	if (ioctl(fd, KXFER_IOC_POOL_ATTACH, &a)) {
		printf("FAIL: attach %s: %s\n", opt_pool, strerror(errno));
		return 1;
	}
	pool_size = a.size;
	close(fd);
	used0 = limits.pool_mem_used;

	/* What user memory there is to pin and import */
	find_vdso();
	have_udmabuf = !access("/dev/udmabuf", R_OK | W_OK);
	heap_fd = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
	upools_allowed = param("user_pool_mem_max", 1) != 0;
	uexports_allowed = param("user_exports", 1) != 0;
	printf("# user memory: udmabuf %s, dma-heap %s, vdso %p, user pools %s, user exports %s\n",
	       have_udmabuf ? "yes" : "no", heap_fd >= 0 ? "yes" : "no", vdso,
	       upools_allowed ? "allowed" : "forbidden",
	       uexports_allowed ? "allowed" : "forbidden");

	/* Bad memory: an unmapped page and a PROT_NONE page. */
	bad_unmapped = arena(PAGE, PROT_NONE);
	munmap(bad_unmapped, PAGE);
	bad_none = arena(PAGE, PROT_NONE);

	for (i = 0; i < NSHARED; i++) {
		kfd_init(&shared_fd[i], true);
		if (kfd_open(&shared_fd[i]))
			return 1;
	}
	for (i = 0; i < NVICTIM; i++) {
		kfd_init(&victim_fd[i], false);
		if (kfd_open(&victim_fd[i]))
			return 1;
	}
	if (*opt_peer && (!atomic_load(&shared_fd[0].peer) ||
			  !atomic_load(&shared_fd[0].rem_rw) ||
			  !atomic_load(&shared_fd[0].rem_ro))) {
		printf("FAIL: peer %s or its exports %s, %s not found\n",
		       opt_peer, opt_exp_rw, opt_exp_ro);
		return 1;
	}

	thr = calloc(opt_threads, sizeof(*thr));
	for (i = 0; i < opt_threads; i++) {
		struct thr *t = &thr[i];
		__u64 s = opt_seed + 0x9e3779b97f4a7c15ULL * (i + 1);

		t->idx = i;
		t->seed = s ? s : 1;
		t->jobs = arena(limits.max_jobs_per_submit * sizeof(*t->jobs) + PAGE,
				PROT_READ | PROT_WRITE);
		t->segs = arena((size_t)limits.max_segments * sizeof(*t->segs) + PAGE,
				PROT_READ | PROT_WRITE);
		t->evs = arena(1024 * sizeof(*t->evs), PROT_READ | PROT_WRITE);
		t->edge = arena(5 * PAGE, PROT_READ | PROT_WRITE);
		mprotect(t->edge + 4 * PAGE, PAGE, PROT_NONE);
		t->ro = arena(PAGE, PROT_READ);
	}
	for (i = 0; i < opt_threads; i++)
		pthread_create(&thr[i].tid, NULL, worker, &thr[i]);
	/* Signals now and then: REAP must give EINTR or the events. */
	while (!atomic_load(&stop)) {
		bool alive = false;

		usleep(20000);
		for (i = 0; i < opt_threads; i++) {
			if (!thr[i].joined && !pthread_tryjoin_np(thr[i].tid, NULL))
				thr[i].joined = true;
			alive |= !thr[i].joined;
		}
		if (!alive)
			break;
		i = rand() % opt_threads;
		if (!thr[i].joined)
			pthread_kill(thr[i].tid, SIGUSR1);
	}
	for (i = 0; i < opt_threads; i++) {
		if (!thr[i].joined)
			pthread_join(thr[i].tid, NULL);
		total += thr[i].iter;
	}

	/* The shared files: drain, count, close; the victims: close. */
	main_t.idx = opt_threads;
	main_t.rng = opt_seed;
	main_t.evs = thr[0].evs;
	main_t.edge = thr[0].edge;
	main_t.ro = thr[0].ro;
	for (i = 0; i < NSHARED; i++) {
		snprintf(main_t.desc, sizeof(main_t.desc),
			 "final drain of shared file %u", i);
		if (!drain(&main_t, &shared_fd[i], 60))
			fail(&main_t, "completions missing after 60 s");
		verify_counts(&main_t, &shared_fd[i], "shared file");
		close(shared_fd[i].fd);
	}
	for (i = 0; i < NVICTIM; i++)
		close(victim_fd[i].fd);
	if (heap_fd >= 0)
		close(heap_fd);
	check_leaks(&main_t, used0);

	printf("# %lu iterations in %.1f s\n", total, elapsed());
	for (i = 0; i < C_NCALLS; i++) {
		unsigned int e;

		printf("# %-20s %8lu calls, %8lu succeeded, %6lu ms in them\n",
		       call_name[i], atomic_load(&n_calls[i]),
		       atomic_load(&n_ok[i]), atomic_load(&n_us[i]) / 1000);
		for (e = 1; opt_verbose && e < 160; e++)
			if (atomic_load(&n_errno[i][e]))
				printf("#     %-16s %8lu\n", strerror(e),
				       atomic_load(&n_errno[i][e]));
	}
	printf("# jobs: %lu accepted (counted files and victims), %lu completions reaped, %lu succeeded; %lu NOTIFY events; %lu mappings; %lu victim closes\n",
	       atomic_load(&n_accepted), atomic_load(&n_completed),
	       atomic_load(&n_job_ok), atomic_load(&n_notify_ev),
	       atomic_load(&n_maps_ok), atomic_load(&n_victim_kills));
	printf("# user memory: %lu user pools, %lu dma-buf pools, %lu exports made (%lu found through the session)\n",
	       atomic_load(&n_upools), atomic_load(&n_dmabufs),
	       atomic_load(&n_uexports), atomic_load(&n_uxlookups));
	printf("# user memory: %lu jobs over user pools, %lu into user exports; %lu detaches under jobs; %lu victims closed with a user pool; %lu arenas moved\n",
	       atomic_load(&n_ujobs), atomic_load(&n_uxjobs),
	       atomic_load(&n_bursts), atomic_load(&n_victim_upools),
	       atomic_load(&n_relocs));
	if (atomic_load(&failed)) {
		printf("# FAILED: %d problems; replay with --seed %llu\n",
		       atomic_load(&failed), (unsigned long long)opt_seed);
		return 1;
	}
	printf("# OK (seed %llu)\n", (unsigned long long)opt_seed);
	return 0;
}
