// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libkxfer: /dev/kxfer for services (see kxfer.h).
 *
 * Thin on purpose: every call is one ioctl with its structure filled
 * from the arguments, reserved fields zero, and errno turned into a
 * negative return value.  Nothing here allocates after kxfer_open().
 *
 * The one exception is reaping: when the module has the mapped event
 * ring (KXFER_FEAT_RING), kxfer_open() maps it and kxfer_reap() takes
 * events from it without a system call, entering the kernel only to
 * wait (KXFER_REAP_WAIT), to read a notification's message
 * (KXFER_IOC_RING_MSG) or to have waiting notifications moved in
 * (KXFER_RING_F_NEED_REAP).  Threads take events by moving the tail
 * with a compare-and-swap: what one thread copied is its own only if its
 * swap succeeds.  LIBKXFER_NO_RING=1 in the environment keeps REAP.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64	/* mmap offsets are windows of 2^40 */

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "kxfer.h"

#define KX_EXPORT	__attribute__((visibility("default")))

#define KX_DEVICE	"/dev/" KXFER_DEVICE_NAME

struct kxfer {
	int kx_fd;
	struct kxfer_query kx_query;
	struct kxfer_ring *kx_ring;		/* mapped, or NULL */
	struct kxfer_event *kx_ring_ev;
	size_t kx_ring_len;
	uint32_t kx_ring_mask;
};

/* ioctl(2) as 0 or -errno; errno is left as it was. */
static int kx_ioctl(int fd, unsigned long cmd, void *arg)
{
	int saved = errno, ret = 0;

	if (ioctl(fd, cmd, arg) < 0)
		ret = errno ? -errno : -EIO;
	errno = saved;
	return ret;
}

/* Copy a name into a KXFER_NAME_MAX field, NUL-padded. */
static int kx_name(char dst[KXFER_NAME_MAX], const char *name)
{
	size_t len;

	if (!name || !name[0])
		return -EINVAL;
	len = strlen(name);
	if (len >= KXFER_NAME_MAX)
		return -ENAMETOOLONG;
	memset(dst, 0, KXFER_NAME_MAX);
	memcpy(dst, name, len);
	return 0;
}

/* Map the event ring if the module has it; without it, REAP does. */
static void kx_ring_map(struct kxfer *kx)
{
	struct kxfer_ring_setup rs = { .flags = 0 };
	const char *no = getenv("LIBKXFER_NO_RING");
	void *p;

	if (!(kx->kx_query.features & KXFER_FEAT_RING) || (no && *no == '1'))
		return;
	if (kx_ioctl(kx->kx_fd, KXFER_IOC_RING_SETUP, &rs))
		return;
	if (!rs.entries || (rs.entries & (rs.entries - 1)) ||
	    rs.events_off < sizeof(struct kxfer_ring) ||
	    rs.events_off + (uint64_t)rs.entries * sizeof(struct kxfer_event) >
	    rs.mmap_len)
		return;
	p = mmap(NULL, rs.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 kx->kx_fd, (off_t)rs.mmap_offset);
	if (p == MAP_FAILED)
		return;
	kx->kx_ring = p;
	kx->kx_ring_ev = (struct kxfer_event *)((char *)p + rs.events_off);
	kx->kx_ring_len = rs.mmap_len;
	kx->kx_ring_mask = rs.entries - 1;
}

KX_EXPORT int kxfer_open(struct kxfer **kxp)
{
	int saved = errno, ret;
	struct kxfer *kx;

	if (!kxp)
		return -EINVAL;
	*kxp = NULL;

	kx = calloc(1, sizeof(*kx));
	if (!kx) {
		errno = saved;
		return -ENOMEM;
	}

	kx->kx_fd = open(KX_DEVICE, O_RDWR | O_CLOEXEC);
	if (kx->kx_fd < 0) {
		ret = -errno;
		goto err_free;
	}

	/* calloc zeroed flags and reserved. */
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_QUERY, &kx->kx_query);
	if (ret)
		goto err_close;
	if (kx->kx_query.api_version < KXFER_API_VERSION) {
		ret = -EPROTONOSUPPORT;
		goto err_close;
	}
	kx_ring_map(kx);

	errno = saved;
	*kxp = kx;
	return 0;

err_close:
	close(kx->kx_fd);
err_free:
	free(kx);
	errno = saved;
	return ret;
}

KX_EXPORT void kxfer_close(struct kxfer *kx)
{
	int saved = errno;

	if (!kx)
		return;
	if (kx->kx_ring)
		munmap(kx->kx_ring, kx->kx_ring_len);
	close(kx->kx_fd);
	free(kx);
	errno = saved;
}

KX_EXPORT const struct kxfer_query *kxfer_limits(struct kxfer *kx)
{
	return &kx->kx_query;
}

KX_EXPORT int kxfer_fd(struct kxfer *kx)
{
	return kx->kx_fd;
}

static int kx_detach(struct kxfer *kx, uint32_t handle, uint32_t flags)
{
	struct kxfer_pool_detach d = { .handle = handle, .flags = flags };

	return kx_ioctl(kx->kx_fd, KXFER_IOC_POOL_DETACH, &d);
}

KX_EXPORT int kxfer_pool_register(struct kxfer *kx, const char *name,
				  void *addr, uint64_t len, uint32_t *handle)
{
	struct kxfer_pool_user u = { .addr = (uintptr_t)addr, .len = len };
	int ret;

	if (!handle)
		return -EINVAL;
	ret = kx_name(u.name, name);
	if (!ret)
		ret = kx_ioctl(kx->kx_fd, KXFER_IOC_POOL_USER, &u);
	if (!ret)
		*handle = u.handle;
	return ret;
}

KX_EXPORT int kxfer_pool_register_dmabuf(struct kxfer *kx, const char *name,
					 int fd, uint64_t offset,
					 uint64_t len, const char *dev,
					 uint32_t *handle)
{
	struct kxfer_pool_dmabuf d = { .fd = fd, .offset = offset,
				       .len = len };
	int ret;

	if (!handle)
		return -EINVAL;
	if (dev && strlen(dev) >= sizeof(d.dev))
		return -ENAMETOOLONG;
	if (dev)
		strcpy(d.dev, dev);
	ret = kx_name(d.name, name);
	if (!ret)
		ret = kx_ioctl(kx->kx_fd, KXFER_IOC_POOL_DMABUF, &d);
	if (!ret)
		*handle = d.handle;
	return ret;
}

KX_EXPORT int kxfer_pool_unregister(struct kxfer *kx, uint32_t handle)
{
	return kx_detach(kx, handle, 0);
}

KX_EXPORT int kxfer_pool_unregister_flags(struct kxfer *kx, uint32_t handle,
					  uint32_t flags)
{
	return kx_detach(kx, handle, flags);
}

KX_EXPORT int kxfer_export_init(struct kxfer_export_add *e, const char *name,
				uint32_t pool, uint64_t offset, uint64_t len,
				const char *peer, uint32_t access)
{
	int ret;

	memset(e, 0, sizeof(*e));
	ret = kx_name(e->name, name);
	if (ret)
		return ret;
	if (peer && peer[0]) {
		ret = kx_name(e->peer, peer);
		if (ret)
			return ret;
	}
	e->pool = pool;
	e->offset = offset;
	e->len = len;
	e->access = access;
	return 0;
}

KX_EXPORT int kxfer_export_add(struct kxfer *kx,
			       const struct kxfer_export_add *e)
{
	struct kxfer_export_add copy = *e;

	return kx_ioctl(kx->kx_fd, KXFER_IOC_EXPORT_ADD, &copy);
}

KX_EXPORT int kxfer_export_add_subscribe(struct kxfer *kx,
					 const struct kxfer_export_add *e,
					 uint32_t *sub)
{
	struct kxfer_export_add copy = *e;
	int saved = errno, ret;

	if (!sub)
		return -EINVAL;
	copy.flags |= KXFER_EXPORT_SUBSCRIBE;
	/* The subscription's handle is the ioctl's answer. */
	ret = ioctl(kx->kx_fd, KXFER_IOC_EXPORT_ADD, &copy);
	if (ret < 0) {
		ret = errno ? -errno : -EIO;
	} else if (!ret) {
		ret = -EPROTO;
	} else {
		*sub = ret;
		ret = 0;
	}
	errno = saved;
	return ret;
}

/* Zeros over a secret, which the compiler may not leave out as dead. */
static void kx_wipe(void *p, size_t n)
{
	memset(p, 0, n);
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

KX_EXPORT int kxfer_export_add_token(struct kxfer *kx,
				     const struct kxfer_export_add *e,
				     uint8_t token[KXFER_TOKEN_LEN],
				     uint32_t *sub)
{
	static const uint8_t no_token[KXFER_TOKEN_LEN];
	struct kxfer_export_add copy;
	int saved = errno, ret;
	size_t got = 0;

	if (!e || !token)
		return -EINVAL;
	copy = *e;
	/* 16 random bytes from the kernel's pool; all zeros means none */
	do {
		ssize_t n = getrandom(copy.token + got, sizeof(copy.token) - got, 0);

		if (n < 0 && errno != EINTR) {
			ret = -errno;
			errno = saved;
			return ret;
		}
		got += n > 0 ? (size_t)n : 0;
		if (got == sizeof(copy.token) &&
		    !memcmp(copy.token, no_token, sizeof(copy.token)))
			got = 0;
	} while (got < sizeof(copy.token));
	copy.flags |= KXFER_EXPORT_TOKEN | (sub ? KXFER_EXPORT_SUBSCRIBE : 0);
	ret = ioctl(kx->kx_fd, KXFER_IOC_EXPORT_ADD, &copy);
	if (ret < 0) {
		ret = errno ? -errno : -EIO;
	} else if (sub && !ret) {
		ret = -EPROTO;
	} else {
		if (sub)
			*sub = ret;
		memcpy(token, copy.token, sizeof(copy.token));
		ret = 0;
	}
	kx_wipe(copy.token, sizeof(copy.token));
	errno = saved;
	return ret;
}

KX_EXPORT int kxfer_export_del_flags(struct kxfer *kx, const char *name,
				     uint32_t flags)
{
	struct kxfer_export_del d = { .flags = flags };
	int ret = kx_name(d.name, name);

	return ret ? ret : kx_ioctl(kx->kx_fd, KXFER_IOC_EXPORT_DEL, &d);
}

KX_EXPORT int kxfer_export_del(struct kxfer *kx, const char *name)
{
	return kxfer_export_del_flags(kx, name, 0);
}

static int kx_release(struct kxfer *kx, uint32_t kind, uint32_t handle)
{
	struct kxfer_release r = { .kind = kind, .handle = handle };

	return kx_ioctl(kx->kx_fd, KXFER_IOC_RELEASE, &r);
}

KX_EXPORT int kxfer_peer_release(struct kxfer *kx, uint32_t handle)
{
	return kx_release(kx, KXFER_HANDLE_PEER, handle);
}

KX_EXPORT int kxfer_remote_release(struct kxfer *kx, uint32_t handle)
{
	return kx_release(kx, KXFER_HANDLE_REMOTE, handle);
}

KX_EXPORT int kxfer_pool_attach(struct kxfer *kx, const char *name,
				struct kxfer_pool_map *out)
{
	struct kxfer_pool_attach a = { .flags = 0 };
	int saved = errno, ret;
	void *base;

	if (!out)
		return -EINVAL;
	ret = kx_name(a.name, name);
	if (ret)
		return ret;
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_POOL_ATTACH, &a);
	if (ret)
		return ret;

	if (!a.size || a.size > SIZE_MAX ||
	    a.mmap_offset > (uint64_t)INT64_MAX ||
	    (off_t)a.mmap_offset != (int64_t)a.mmap_offset) {
		ret = -EOVERFLOW;
		goto err_detach;
	}
	base = mmap(NULL, (size_t)a.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    kx->kx_fd, (off_t)a.mmap_offset);
	if (base == MAP_FAILED) {
		ret = -errno;
		goto err_detach;
	}

	out->handle = a.handle;
	out->size = a.size;
	out->base = base;
	errno = saved;
	return 0;

err_detach:
	kx_detach(kx, a.handle, 0);
	errno = saved;
	return ret;
}

KX_EXPORT int kxfer_pool_detach(struct kxfer *kx, struct kxfer_pool_map *map)
{
	int saved = errno, ret = 0, ret2;

	if (!map)
		return -EINVAL;
	if (map->base && munmap(map->base, (size_t)map->size))
		ret = -errno;
	ret2 = kx_detach(kx, map->handle, 0);
	errno = saved;
	if (!ret)
		ret = ret2;
	if (!ret)
		memset(map, 0, sizeof(*map));
	return ret;
}

KX_EXPORT int kxfer_peer_lookup(struct kxfer *kx, const char *name,
				uint32_t *handle, uint32_t *state)
{
	struct kxfer_peer_lookup p = { .flags = 0 };
	int ret;

	if (!handle)
		return -EINVAL;
	ret = kx_name(p.name, name);
	if (ret)
		return ret;
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_PEER_LOOKUP, &p);
	if (ret)
		return ret;
	*handle = p.handle;
	if (state)
		*state = p.state;
	return 0;
}

KX_EXPORT int kxfer_remote_lookup(struct kxfer *kx, uint32_t peer,
				  const char *export_name,
				  struct kxfer_remote_lookup *out)
{
	struct kxfer_remote_lookup r = { .peer = peer };
	int ret;

	if (!out)
		return -EINVAL;
	ret = kx_name(r.name, export_name);
	if (ret)
		return ret;
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_REMOTE_LOOKUP, &r);
	if (ret)
		return ret;
	*out = r;
	return 0;
}

KX_EXPORT int kxfer_remote_lookup_token(struct kxfer *kx, uint32_t peer,
					const char *export_name,
					const uint8_t token[KXFER_TOKEN_LEN],
					struct kxfer_remote_lookup *out)
{
	struct kxfer_remote_lookup r = { .peer = peer,
					 .flags = KXFER_LOOKUP_TOKEN };
	int ret;

	if (!out || !token)
		return -EINVAL;
	ret = kx_name(r.name, export_name);
	if (ret)
		return ret;
	memcpy(r.token, token, sizeof(r.token));
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_REMOTE_LOOKUP, &r);
	kx_wipe(r.token, sizeof(r.token));
	if (ret)
		return ret;
	*out = r;
	return 0;
}

KX_EXPORT int kxfer_connect(struct kxfer *kx, const char *addr, uint16_t port,
			    struct kxfer_connect *out)
{
	struct kxfer_connect c = { .port = port };
	int ret;

	if (!addr || !out)
		return -EINVAL;
	if (inet_pton(AF_INET, addr, c.addr) == 1)
		c.family = AF_INET;
	else if (inet_pton(AF_INET6, addr, c.addr) == 1)
		c.family = AF_INET6;
	else
		return -EINVAL;
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_CONNECT, &c);
	if (ret)
		return ret;
	*out = c;
	return 0;
}

KX_EXPORT int kxfer_submit_raw(struct kxfer *kx, struct kxfer_submit *s)
{
	return kx_ioctl(kx->kx_fd, KXFER_IOC_SUBMIT, s);
}

KX_EXPORT int kxfer_submit(struct kxfer *kx, const struct kxfer_job *jobs,
			   unsigned int n, unsigned int *accepted)
{
	unsigned int done = 0, step = kx->kx_query.max_jobs_per_submit;
	int ret = 0;
	bool all;

	if (!step)
		step = n;
	while (done < n) {
		/*
		 * The address is computed as an integer: the pointer is
		 * the kernel's to check, not ours to dereference.
		 */
		struct kxfer_submit s = {
			.jobs = (uintptr_t)jobs +
				(uint64_t)done * sizeof(*jobs),
			.njobs = n - done < step ? n - done : step,
		};

		ret = kxfer_submit_raw(kx, &s);
		if (ret)	/* nothing accepted; s.error == ret */
			break;
		if (s.accepted > s.njobs) {
			ret = -EPROTO;
			break;
		}
		done += s.accepted;
		/* error is 0 exactly when every job was accepted. */
		all = s.accepted == s.njobs;
		if (s.error > 0 || all == !!s.error) {
			ret = -EPROTO;
			break;
		}
		if (s.error) {
			ret = s.error;
			break;
		}
	}
	if (accepted)
		*accepted = done;
	return ret;
}

KX_EXPORT int kxfer_reap(struct kxfer *kx, struct kxfer_event *ev,
			 unsigned int max, unsigned int min,
			 int64_t timeout_ns, unsigned int flags)
{
	return kxfer_reap_msgs(kx, ev, max, min, timeout_ns, flags, NULL, 0);
}

/*
 * Take up to @max ready events from the ring, with their messages in
 * @msgs from *@used on; @first: no event was taken yet by this call, so
 * one whose message does not fit comes without it (KXFER_MSG_NONE), as
 * REAP does.  Return: events taken.
 */
static unsigned int kx_ring_take(struct kxfer *kx, struct kxfer_event *ev,
				 unsigned int max, char *msgs,
				 uint32_t msgs_len, uint32_t *used, bool first)
{
	struct kxfer_ring *r = kx->kx_ring;
	uint32_t mask = kx->kx_ring_mask;

	for (;;) {
		uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		uint32_t n = head - tail, u = *used, i;
		bool retry = false;

		if (n > mask + 1)	/* a tail moved by hand: wait for REAP */
			return 0;
		if (n > max)
			n = max;
		for (i = 0; i < n; i++) {
			struct kxfer_event e = kx->kx_ring_ev[(tail + i) & mask];
			struct kxfer_ring_msg m = { .index = tail + i };
			int ret;

			if (e.type == KXFER_EV_NOTIFY && e.msg_len &&
			    e.msg_off == KXFER_MSG_RING) {
				if (!msgs || e.msg_len > msgs_len - u) {
					if (i || !first) {
						n = i;
						break;
					}
					e.msg_off = KXFER_MSG_NONE;
				} else {
					m.buf = (uintptr_t)(msgs + u);
					m.len = e.msg_len;
					ret = kx_ioctl(kx->kx_fd,
						       KXFER_IOC_RING_MSG, &m);
					if (ret == -ENOENT) {	/* taken meanwhile */
						retry = true;
						break;
					}
					if (ret || m.msg_len != e.msg_len) {
						e.msg_off = KXFER_MSG_NONE;
					} else {
						e.msg_off = u;
						u += e.msg_len;
					}
				}
			} else if (e.type == KXFER_EV_NOTIFY && e.msg_len) {
				e.msg_off = KXFER_MSG_NONE;
			}
			ev[i] = e;
		}
		if (retry)
			continue;
		if (!n)
			return 0;
		if (__atomic_compare_exchange_n(&r->tail, &tail, tail + n, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			*used = u;
			return n;
		}
	}
}

static int64_t kx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* KXFER_REAP_WAIT: 0 or -errno. */
static int kx_ring_wait(struct kxfer *kx, unsigned int min, int64_t timeout_ns,
			unsigned int flags)
{
	struct kxfer_reap r = {
		.min = min,
		.timeout_ns = timeout_ns,
		.flags = KXFER_REAP_WAIT | (flags & KXFER_REAP_BUSY_POLL),
	};

	return kx_ioctl(kx->kx_fd, KXFER_IOC_REAP, &r);
}

static int kx_ring_reap(struct kxfer *kx, struct kxfer_event *ev,
			unsigned int max, unsigned int min, int64_t timeout_ns,
			unsigned int flags, void *msgs, uint32_t msgs_len)
{
	int64_t deadline = timeout_ns > 0 ? kx_now_ns() + timeout_ns : 0;
	unsigned int count = 0;
	uint32_t used = 0;
	int ret;

	if (!max || min > max || max > INT32_MAX ||
	    (flags & ~KXFER_REAP_BUSY_POLL))
		return -EINVAL;
	if (min > kx->kx_ring_mask + 1)
		min = kx->kx_ring_mask + 1;
	for (;;) {
		unsigned int k = kx_ring_take(kx, ev + count, max - count,
					      msgs, msgs ? msgs_len : 0,
					      &used, !count);
		int64_t left = timeout_ns;
		uint32_t rflags;

		count += k;
		rflags = __atomic_load_n(&kx->kx_ring->flags, __ATOMIC_RELAXED);
		/*
		 * Room is there: have the waiting ones moved in; or, before
		 * returning short, polled sessions' completions reaped (what
		 * REAP does first; a REAP that waits, below, polls anyway).
		 */
		if (!k && count < max &&
		    ((rflags & KXFER_RING_F_NEED_REAP) ||
		     ((rflags & KXFER_RING_F_POLL) &&
		      (count >= min || !timeout_ns)))) {
			ret = kx_ring_wait(kx, 0, 0, 0);
			if (ret)
				return count ? (int)count : ret;
			k = kx_ring_take(kx, ev + count, max - count, msgs,
					 msgs ? msgs_len : 0, &used, !count);
			count += k;
		}
		if (count >= min || count == max || !timeout_ns)
			return (int)count;
		if (timeout_ns > 0) {
			left = deadline - kx_now_ns();
			if (left <= 0)
				return (int)count;
		}
		ret = kx_ring_wait(kx, min - count, left, flags);
		if (ret)
			return count ? (int)count : ret;
	}
}

KX_EXPORT int kxfer_reap_msgs(struct kxfer *kx, struct kxfer_event *ev,
			      unsigned int max, unsigned int min,
			      int64_t timeout_ns, unsigned int flags,
			      void *msgs, uint32_t msgs_len)
{
	struct kxfer_reap r = {
		.events = (uintptr_t)ev,
		.max = max,
		.min = min,
		.timeout_ns = timeout_ns,
		.flags = flags,
		.msgs = (uintptr_t)msgs,
		.msgs_len = msgs ? msgs_len : 0,
	};
	int ret;

	if (kx->kx_ring)
		return kx_ring_reap(kx, ev, max, min, timeout_ns, flags, msgs,
				    msgs_len);
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_REAP, &r);
	if (ret)
		return ret;
	if (r.count > max || r.count > INT32_MAX)
		return -EPROTO;
	return (int)r.count;
}

KX_EXPORT int kxfer_ring_mapped(struct kxfer *kx)
{
	return kx->kx_ring != NULL;
}

KX_EXPORT int kxfer_notify_subscribe(struct kxfer *kx, const char *export_name,
				     uint32_t *handle)
{
	struct kxfer_notify_sub ns = { .flags = 0 };
	int ret;

	if (!handle)
		return -EINVAL;
	ret = kx_name(ns.name, export_name);
	if (ret)
		return ret;
	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_NOTIFY_SUBSCRIBE, &ns);
	if (ret)
		return ret;
	*handle = ns.handle;
	return 0;
}

KX_EXPORT int kxfer_notify_unsubscribe(struct kxfer *kx, uint32_t handle)
{
	struct kxfer_notify_sub ns = { .handle = handle };

	return kx_ioctl(kx->kx_fd, KXFER_IOC_NOTIFY_UNSUBSCRIBE, &ns);
}

KX_EXPORT int kxfer_cancel(struct kxfer *kx, uint64_t user_data, uint64_t mask,
			   unsigned int *count)
{
	struct kxfer_cancel c = { .user_data = user_data, .mask = mask };
	int ret = kx_ioctl(kx->kx_fd, KXFER_IOC_CANCEL, &c);

	if (!ret && count)
		*count = c.count;
	return ret;
}
