// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libkxfer: /dev/kxfer for services (see kxfer.h).
 *
 * Thin on purpose: every call is one ioctl with its structure filled
 * from the arguments, reserved fields zero, and errno turned into a
 * negative return value.  Nothing here allocates after kxfer_open().
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
#include <unistd.h>

#include "kxfer.h"

#define KX_EXPORT	__attribute__((visibility("default")))

#define KX_DEVICE	"/dev/" KXFER_DEVICE_NAME

struct kxfer {
	int kx_fd;
	struct kxfer_query kx_query;
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

static int kx_detach(struct kxfer *kx, uint32_t handle)
{
	struct kxfer_pool_detach d = { .handle = handle };

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
	return kx_detach(kx, handle);
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

KX_EXPORT int kxfer_export_del(struct kxfer *kx, const char *name)
{
	struct kxfer_export_del d = { .flags = 0 };
	int ret = kx_name(d.name, name);

	return ret ? ret : kx_ioctl(kx->kx_fd, KXFER_IOC_EXPORT_DEL, &d);
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
	kx_detach(kx, a.handle);
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
	ret2 = kx_detach(kx, map->handle);
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

	ret = kx_ioctl(kx->kx_fd, KXFER_IOC_REAP, &r);
	if (ret)
		return ret;
	if (r.count > max || r.count > INT32_MAX)
		return -EPROTO;
	return (int)r.count;
}

KX_EXPORT int kxfer_notify_subscribe(struct kxfer *kx, const char *export_name,
				     uint32_t *handle)
{
	struct kxfer_notify_sub ns = { .flags = 0 };
	int ret;

	if (!handle)
		return -EINVAL;
	ret = kx_name(ns.export, export_name);
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
