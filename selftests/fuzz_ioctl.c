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
 * Threads share some files, so that pools are detached and handles
 * looked up while others submit and reap, and "victim" files, which any
 * thread may close under the others (dup2 of /dev/null over the number,
 * so that the number stays ours and nobody else's file gets the calls).
 *
 * Checked on every call:
 *  - the errno is in the set the module documents for that ioctl (and
 *    is exactly the one expected when the mutation decides it);
 *  - no output field holds what looks like a kernel address;
 *  - SUBMIT's accepted/error agree with the return value;
 *  - every event is well formed, belongs to the file that reaped it and
 *    reports the bytes its job asked for;
 *  - every accepted job gets exactly one completion: per file (but the
 *    victims), count and sum of user_data accepted == reaped, at the end.
 *
 * Exit status 0 when all held, 1 otherwise; a failure prints the seed,
 * the thread, the call and its arguments.  Usage: see usage().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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
static int opt_verbose;

static struct kxfer_query limits;
static __u64 pool_size;
static __u64 rw_len, ro_len;	/* of the remote exports, from the lookups */
static atomic_int failed;
static atomic_int stop;
static struct timespec t_start;

enum call {
	C_QUERY, C_ATTACH, C_DETACH, C_PEER, C_REMOTE, C_SUBMIT, C_REAP,
	C_NSUB, C_NUNSUB, C_UNKNOWN, C_MMAP, C_CLOSE, C_NCALLS
};

static const char *const call_name[C_NCALLS] = {
	"QUERY", "POOL_ATTACH", "POOL_DETACH", "PEER_LOOKUP", "REMOTE_LOOKUP",
	"SUBMIT", "REAP", "NOTIFY_SUBSCRIBE", "NOTIFY_UNSUBSCRIBE",
	"unknown-ioctl", "mmap", "close-under-use",
};

/* errnos each call may return: kmod/chardev.c, kmod/job.c, kmod/pool.c */
static const int set_query[] = { EFAULT, EINVAL, 0 };
static const int set_attach[] = { EFAULT, EINVAL, ENOENT, EACCES, EMFILE,
				  ENOMEM, 0 };
static const int set_detach[] = { EFAULT, EINVAL, ENOENT, 0 };
static const int set_lookup[] = { EFAULT, EINVAL, ENOENT, EMFILE, ENOMEM, 0 };
static const int set_submit[] = { EFAULT, EINVAL, EAGAIN, ENOENT, ENOTCONN,
				  ESTALE, EACCES, ERANGE, ENOMEM, 0 };
static const int set_reap[] = { EFAULT, EINVAL, EINTR, 0 };
static const int set_nsub[] = { EFAULT, EINVAL, ENOENT, EACCES, EMFILE,
				ENOMEM, 0 };
static const int set_unknown[] = { ENOTTY, 0 };
/* mmap: the module's ENXIO/EINVAL, the core's EINVAL/ENOMEM/EOVERFLOW */
static const int set_mmap[] = { EINVAL, ENXIO, ENOMEM, EOVERFLOW, 0 };
/* a job's status in its completion (kxfer_wc_errno() and teardown) */
static const int set_status[] = { ECONNRESET, EACCES, ETIMEDOUT, EREMOTEIO,
				  EIO, ENOTCONN, 0 };

static const int *const call_set[C_NCALLS] = {
	set_query, set_attach, set_detach, set_lookup, set_lookup, set_submit,
	set_reap, set_nsub, set_detach, set_unknown, set_mmap, set_unknown,
};

static atomic_ulong n_calls[C_NCALLS];
static atomic_ulong n_ok[C_NCALLS];
static atomic_ulong n_accepted, n_completed, n_job_ok, n_notify_ev;
static atomic_ulong n_maps_ok, n_victim_kills;

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
struct kfd {
	int			fd;
	unsigned int		id;		/* in user_data's top byte */
	bool			counted;
	atomic_uint		pool;		/* a handle believed attached */
	atomic_uint		peer;
	atomic_uint		rem_rw, rem_ro;
	atomic_uint		sub;
	atomic_ullong		seq;
	atomic_ullong		accepted, reaped;	/* completions */
	atomic_ullong		sum_acc, sum_reaped;	/* of user_data */
	/* victims: ops hold it for reading, a revival for writing */
	pthread_rwlock_t	lock;
	atomic_int		dead;
};

static struct kfd shared_fd[NSHARED];
static struct kfd victim_fd[NVICTIM];
static atomic_uint next_fd_id = 1;

struct map {
	void	*addr;
	size_t	len;
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
	bool		victim;		/* working on a victim file */
};

static void *bad_unmapped;	/* an address nothing is mapped at */
static void *bad_none;		/* a PROT_NONE page */
static int devnull;

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
	rl.peer = pl.handle;
	strncpy(rl.name, opt_exp_rw, sizeof(rl.name) - 1);
	if (!ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, &rl)) {
		atomic_store(&k->rem_rw, rl.handle);
		rw_len = rl.len;
	}
	memset(&rl, 0, sizeof(rl));
	rl.peer = pl.handle;
	strncpy(rl.name, opt_exp_ro, sizeof(rl.name) - 1);
	if (!ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, &rl)) {
		atomic_store(&k->rem_ro, rl.handle);
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

/*
 * The outcome of a call: errno must be in the call's set, and equal to
 * @exact when that is >= 0 (0: the call must succeed).
 */
static void check_errno(struct thr *t, enum call c, int ret, int err,
			int exact, const int *extra)
{
	atomic_fetch_add(&n_calls[c], 1);
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

/* ---------------------------------------------------------------------- */
/* The calls                                                               */
/* ---------------------------------------------------------------------- */

static int do_ioctl(int fd, unsigned long cmd, void *arg, int *err)
{
	int ret = ioctl(fd, cmd, arg);

	*err = ret ? errno : 0;
	return ret;
}

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
	if (chance(&t->rng, 6))
		a.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		a.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (chance(&t->rng, 3))
		a.handle = rnd(&t->rng);	/* out: ignored */
	if (a.flags || a.reserved[0] || a.reserved[1] || !name_ok(a.name))
		exact = EINVAL;
	else if (strcmp(a.name, opt_pool))
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
	if (ret)
		return;
	memcpy(&a, p, sizeof(a));
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
	if (chance(&t->rng, 6))
		d.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		d.reserved = rval(&t->rng);
	if (d.flags || d.reserved)
		exact = EINVAL;
	else if (!d.handle || d.handle > limits.max_pools_per_fd)
		exact = ENOENT;
	p = place(t, pk, &d, sizeof(d), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "POOL_DETACH fd %d arg %s %p handle %u flags 0x%x reserved %llx",
		 k->fd, ptr_name[pk], p, d.handle, d.flags,
		 (unsigned long long)d.reserved);
	ret = do_ioctl(k->fd, KXFER_IOC_POOL_DETACH, p, &err);
	check_errno(t, C_DETACH, ret, err, exact, NULL);
	/* Attach again, most of the time, so that jobs keep flowing. */
	if (!ret && !chance(&t->rng, 4)) {
		struct kxfer_pool_attach a = {};

		strncpy(a.name, opt_pool, sizeof(a.name) - 1);
		if (!ioctl(k->fd, KXFER_IOC_POOL_ATTACH, &a))
			atomic_store(&k->pool, a.handle);
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
	ret = do_ioctl(k->fd, KXFER_IOC_PEER_LOOKUP, p, &err);
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

static void fz_remote(struct thr *t, struct kfd *k)
{
	struct kxfer_remote_lookup rl = {}, in, good;
	enum ptr_kind pk = pick_ptr(t);
	bool ro = chance(&t->rng, 2);
	int ret, err, exact = -1;
	void *p;

	rl.peer = pick_handle(t, &k->peer);
	pick_name(t, rl.name, ro ? opt_exp_ro : opt_exp_rw);
	if (chance(&t->rng, 6))
		rl.flags = rval(&t->rng);
	if (chance(&t->rng, 6))
		rl.reserved[rbelow(&t->rng, 2)] = rval(&t->rng);
	if (rl.flags || rl.reserved[0] || rl.reserved[1] || !name_ok(rl.name))
		exact = EINVAL;
	else if (!rl.peer)
		exact = ENOENT;
	in = rl;
	p = place(t, pk, &rl, sizeof(rl), &good, 0);
	if (ptr_faults(pk) || pk == P_CROSS)
		exact = EFAULT;
	snprintf(t->desc, sizeof(t->desc),
		 "REMOTE_LOOKUP fd %d arg %s %p peer %u name \"%.32s\" flags 0x%x reserved %llx,%llx",
		 k->fd, ptr_name[pk], p, in.peer, in.name, in.flags,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1]);
	ret = do_ioctl(k->fd, KXFER_IOC_REMOTE_LOOKUP, p, &err);
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
	}
}

/*
 * Fill job @j, valid most of the time (against @k's handles), then
 * perhaps mutate one thing.  Its segments go to @segs (room for @room).
 */
static void make_job(struct thr *t, struct kfd *k, struct kxfer_job *j,
		     struct kxfer_segment *segs, __u32 room)
{
	bool ro = chance(&t->rng, 6) && ro_len;
	__u32 n, i, seglen;
	__u64 rlen;

	memset(j, 0, sizeof(*j));
	j->op = (ro || chance(&t->rng, 3)) ? KXFER_OP_READ : KXFER_OP_WRITE;
	j->pool = atomic_load(&k->pool);
	j->peer = atomic_load(&k->peer);
	j->remote = atomic_load(ro ? &k->rem_ro : &k->rem_rw);
	rlen = ro ? ro_len : rw_len;
	if (!rlen)
		rlen = pool_size;
	if (rlen > pool_size)
		rlen = pool_size;
	n = chance(&t->rng, 40) ? 1 + rbelow(&t->rng, 1024) :
				  1 + rbelow(&t->rng, 8);
	n = n > room ? room : n;
	seglen = n > 8 ? 256 : (chance(&t->rng, 8) ? 65536 : 4096);
	for (i = 0; i < n; i++) {
		__u64 len = 1 + rbelow(&t->rng, seglen);

		segs[i].len = len;
		segs[i].local_off = rbelow(&t->rng, pool_size - len + 1);
		segs[i].remote_off = rbelow(&t->rng, rlen - len + 1);
	}
	/* Overlapping destinations at times: the job stays on one QP. */
	if (n > 1 && chance(&t->rng, 4))
		segs[1].remote_off = segs[0].remote_off;
	j->nsegs = n;
	j->segs = (unsigned long)segs;
	if (chance(&t->rng, 10)) {
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
		j->reserved = rval(&t->rng) | 1;
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
		segs[rbelow(&t->rng, n)].local_off = pool_size;
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
static bool job_acceptable(struct kfd *k, const struct kxfer_job *j,
			   const struct kxfer_segment *base, __u32 used,
			   __u64 *bytes)
{
	__u32 rw = atomic_load(&k->rem_rw), ro = atomic_load(&k->rem_ro);
	const struct kxfer_segment *segs;
	__u64 rlen = 0, total = 0, end;
	__u32 i, n, filled;

	*bytes = BYTES_MASK;
	if ((j->op != KXFER_OP_WRITE && j->op != KXFER_OP_READ) ||
	    (j->flags & ~KXFER_JOB_FLAGS) || j->reserved || !j->nsegs ||
	    /* a message needs its length, which the fuzzer leaves 0 */
	    (j->flags & KXFER_JOB_NOTIFY_MSG) || j->notify_len ||
	    j->nsegs > limits.max_segments || !j->pool || !j->peer ||
	    !j->remote)
		return false;
	/* Every pointer we pass outside our array is bad. */
	if (j->segs < (unsigned long)base ||
	    j->segs >= (unsigned long)(base + limits.max_segments))
		return false;
	segs = (const void *)(unsigned long)j->segs;
	filled = segs - base < used ? used - (segs - base) : 0;
	if (j->remote == rw && rw)
		rlen = rw_len;
	if (j->remote == ro && ro && ro != rw) {
		rlen = ro_len;
		if (j->op == KXFER_OP_WRITE)
			return false;
	}
	n = j->nsegs < filled ? j->nsegs : filled;
	for (i = 0; i < n; i++) {
		const struct kxfer_segment *g = &segs[i];

		if (!g->len || __builtin_add_overflow(g->local_off, g->len, &end) ||
		    end > pool_size ||
		    __builtin_add_overflow(g->remote_off, g->len, &end) ||
		    (rlen && end > rlen) ||
		    __builtin_add_overflow(total, g->len, &total))
			return false;
	}
	if (j->nsegs <= filled && total < BYTES_MASK)
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

static void fz_submit(struct thr *t, struct kfd *k)
{
	struct kxfer_submit s = {}, in, good;
	enum ptr_kind pk = pick_ptr(t), jk = pick_ptr(t);
	__u32 njobs, i, used = 0, fit, max = limits.max_jobs_per_submit;
	bool ok[64], sane = true;
	int ret, err, exact = -1;
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

		acc = job_acceptable(k, j, t->segs, used, &bytes);
		if (i < 64)
			ok[i] = acc;
		sane &= acc && bytes != BYTES_MASK &&
			j->pool == atomic_load(&k->pool) &&
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
		 "SUBMIT fd %d arg %s %p jobs %s 0x%llx njobs %u flags 0x%x reserved %llx,%llx; job0 op %u flags 0x%x pool %u peer %u remote %u nsegs %u segs 0x%llx reserved %llx user_data 0x%llx seg0 %llx:%llx:%llx",
		 k->fd, ptr_name[pk], p, ptr_name[jk],
		 (unsigned long long)in.jobs, in.njobs, in.flags,
		 (unsigned long long)in.reserved[0],
		 (unsigned long long)in.reserved[1], t->jobs[0].op,
		 t->jobs[0].flags, t->jobs[0].pool, t->jobs[0].peer,
		 t->jobs[0].remote, t->jobs[0].nsegs,
		 (unsigned long long)t->jobs[0].segs,
		 (unsigned long long)t->jobs[0].reserved,
		 (unsigned long long)t->jobs[0].user_data,
		 (unsigned long long)t->segs[0].local_off,
		 (unsigned long long)t->segs[0].remote_off,
		 (unsigned long long)t->segs[0].len);
	ret = do_ioctl(k->fd, KXFER_IOC_SUBMIT, p, &err);
	check_errno(t, C_SUBMIT, ret, err, exact, NULL);

	if (pk == P_RO) {
		/* njobs is 1: success means the one job was accepted */
		if (!ret) {
			if (!ok[0])
				fail(t, "SUBMIT accepted a job it must refuse");
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
		if (!ok[i])
			fail(t, "SUBMIT accepted job %u, which it must refuse", i);
	account_accepted(k, t->jobs, s.accepted);
	if (sane && (jk == P_GOOD || jk == P_RO) && s.accepted < in.njobs &&
	    (s.error == -EINVAL || s.error == -ERANGE || s.error == -EFAULT))
		fail(t, "SUBMIT refused valid job %u: %d (%s)", s.accepted,
		     s.error, strerror(-s.error));
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

static void fz_unknown(struct thr *t, struct kfd *k)
{
	static const unsigned long known[] = {
		KXFER_IOC_QUERY, KXFER_IOC_POOL_ATTACH, KXFER_IOC_POOL_DETACH,
		KXFER_IOC_PEER_LOOKUP, KXFER_IOC_REMOTE_LOOKUP,
		KXFER_IOC_SUBMIT, KXFER_IOC_REAP, KXFER_IOC_NOTIFY_SUBSCRIBE,
		KXFER_IOC_NOTIFY_UNSUBSCRIBE,
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
		nr = chance(&t->rng, 2) ? rbelow(&t->rng, 12) : rbelow(&t->rng, 256);
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

/* One random operation on file @k. */
static void fz_one(struct thr *t, struct kfd *k, bool victim)
{
	unsigned int r = rbelow(&t->rng, 100);

	if (r < 4)
		fz_query(t, k);
	else if (r < 10)
		fz_attach(t, k);
	else if (r < 15)
		fz_detach(t, k);
	else if (r < 19)
		fz_peer(t, k);
	else if (r < 24)
		fz_remote(t, k);
	else if (r < 55)
		fz_submit(t, k);
	else if (r < 75)
		fz_reap(t, k, false, 0);
	else if (r < 76)
		fz_nsub(t, k, false);
	else if (r < 82)
		fz_nsub(t, k, true);
	else if (r < 87)
		fz_unknown(t, k);
	else if (r < 93)
		fz_mmap(t, k, victim);
	else if (r < 96)
		unmap_one(t, rbelow(&t->rng, MAXMAPS));
	else
		touch_maps(t);
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
	for (t->iter = 0; t->iter < opt_iters && !atomic_load(&stop); t->iter++) {
		unsigned int r = rbelow(&t->rng, 10);

		if ((t->iter & 255) == 0 && elapsed() > deadline)
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
	return NULL;
}

static void on_signal(int sig)
{
}

static void help(void)
{
	fprintf(stderr,
		"usage: fuzz_ioctl [-s SEED] [-i ITERATIONS] [-t THREADS] [-T SECONDS]\n"
		"                  [-p POOL] [-P PEER] [-e EXPORT_RW] [-r EXPORT_RO] [-v]\n"
		"  SEED default: from the clock (printed); ITERATIONS per thread (20000);\n"
		"  THREADS (4); SECONDS bounds the fuzzing (60); POOL (fz0, attachable);\n"
		"  PEER (none): a session whose remote exports EXPORT_RW (fze, read-write,\n"
		"  as long as POOL) and EXPORT_RO (fzro, read-only, 64 KiB) jobs use.\n");
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
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct kxfer_pool_attach a = {};
	struct thr *thr;
	struct thr main_t = {};
	unsigned long total = 0;
	unsigned int i;
	int c, fd;

	opt_seed = (__u64)time(NULL) ^ ((__u64)getpid() << 32);
	while ((c = getopt_long(argc, argv, "s:i:t:T:p:P:e:r:v", lopts, NULL)) != -1) {
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
		t->ro = arena(PAGE, PROT_READ | PROT_WRITE);
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

	printf("# %lu iterations in %.1f s\n", total, elapsed());
	for (i = 0; i < C_NCALLS; i++)
		printf("# %-20s %8lu calls, %8lu succeeded\n", call_name[i],
		       atomic_load(&n_calls[i]), atomic_load(&n_ok[i]));
	printf("# jobs: %lu accepted (counted files and victims), %lu completions reaped, %lu succeeded; %lu NOTIFY events; %lu mappings; %lu victim closes\n",
	       atomic_load(&n_accepted), atomic_load(&n_completed),
	       atomic_load(&n_job_ok), atomic_load(&n_notify_ev),
	       atomic_load(&n_maps_ok), atomic_load(&n_victim_kills));
	if (atomic_load(&failed)) {
		printf("# FAILED: %d problems; replay with --seed %llu\n",
		       atomic_load(&failed), (unsigned long long)opt_seed);
		return 1;
	}
	printf("# OK (seed %llu)\n", (unsigned long long)opt_seed);
	return 0;
}
