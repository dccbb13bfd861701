// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer selftest: the "kxfer" generic netlink family, pools and exports.
 *
 * Talks to the kernel over a raw socket (nl.h) so that each refusal is
 * checked for its exact errno and for an extack message.  One invalid
 * input per check.  Runs as root in a guest with kxfer.ko loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nl.h"
#include "kselftest_harness.h"
#include "harness_main.h"
#include "test_util.h"

#define NOBODY 65534

static int pool_new(struct knl *nl, const char *name, uint64_t size)
{
	knl_begin(nl, nl->family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(nl, KXFER_A_POOL_NAME, name);
	knl_put_u64(nl, KXFER_A_POOL_SIZE, size);
	return knl_xfer(nl, NULL, NULL);
}

static int pool_del(struct knl *nl, const char *name)
{
	knl_begin(nl, nl->family, KXFER_CMD_POOL_DEL, NLM_F_ACK);
	knl_put_str(nl, KXFER_A_POOL_NAME, name);
	return knl_xfer(nl, NULL, NULL);
}

static void export_begin(struct knl *nl, const char *name, const char *pool)
{
	knl_begin(nl, nl->family, KXFER_CMD_EXPORT_NEW, NLM_F_ACK);
	knl_put_str(nl, KXFER_A_EXPORT_NAME, name);
	knl_put_str(nl, KXFER_A_EXPORT_POOL, pool);
}

static int export_del(struct knl *nl, const char *name)
{
	knl_begin(nl, nl->family, KXFER_CMD_EXPORT_DEL, NLM_F_ACK);
	knl_put_str(nl, KXFER_A_EXPORT_NAME, name);
	return knl_xfer(nl, NULL, NULL);
}

static uint64_t get_u64(struct nlmsghdr *h, uint16_t type)
{
	struct nlattr *a = knl_attr(h, type);

	return a ? *(uint64_t *)KNL_NLA_DATA(a) : ~0ULL;
}

static uint32_t get_u32(struct nlmsghdr *h, uint16_t type)
{
	struct nlattr *a = knl_attr(h, type);

	return a ? *(uint32_t *)KNL_NLA_DATA(a) : ~0U;
}

struct pool_info {
	int replies;
	uint64_t size, chunk_bytes, alloc_ns;
	uint32_t owner, group, mode, attach, exports;
	int32_t numa;
	char near[KXFER_DEV_NAME_MAX];
};

static void pool_cb(struct nlmsghdr *h, void *arg)
{
	struct pool_info *pi = arg;
	struct nlattr *chunks = knl_attr(h, KXFER_A_POOL_CHUNKS), *c, *f;
	struct nlattr *near;
	int rem, frem;

	pi->replies++;
	pi->size = get_u64(h, KXFER_A_POOL_SIZE);
	pi->owner = get_u32(h, KXFER_A_POOL_OWNER);
	pi->group = get_u32(h, KXFER_A_POOL_GROUP);
	pi->mode = get_u32(h, KXFER_A_POOL_MODE);
	pi->numa = (int32_t)get_u32(h, KXFER_A_POOL_NUMA_NODE);
	pi->attach = get_u32(h, KXFER_A_POOL_ATTACH_COUNT);
	pi->exports = get_u32(h, KXFER_A_POOL_EXPORT_COUNT);
	pi->alloc_ns = get_u64(h, KXFER_A_POOL_ALLOC_NS);
	near = knl_attr(h, KXFER_A_POOL_NEAR);
	snprintf(pi->near, sizeof(pi->near), "%s",
		 near ? (const char *)KNL_NLA_DATA(near) : "");
	pi->chunk_bytes = 0;
	if (!chunks)
		return;
	rem = chunks->nla_len - NLA_HDRLEN;
	for (c = KNL_NLA_DATA(chunks); KNL_NLA_OK(c, rem); c = KNL_NLA_NEXT(c, rem)) {
		uint64_t size = 0;
		uint32_t count = 0;

		frem = c->nla_len - NLA_HDRLEN;
		for (f = KNL_NLA_DATA(c); KNL_NLA_OK(f, frem); f = KNL_NLA_NEXT(f, frem)) {
			if (f->nla_type == KXFER_A_CHUNK_SIZE)
				size = *(uint64_t *)KNL_NLA_DATA(f);
			if (f->nla_type == KXFER_A_CHUNK_COUNT)
				count = *(uint32_t *)KNL_NLA_DATA(f);
		}
		pi->chunk_bytes += size * count;
	}
}

FIXTURE(nl) {
	struct knl nl;
	char pool[KXFER_NAME_MAX];
	char exp[KXFER_NAME_MAX];
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(0, knl_open(&self->nl));
	snprintf(self->pool, sizeof(self->pool), "np%d", getpid());
	snprintf(self->exp, sizeof(self->exp), "ne%d", getpid());
	ASSERT_EQ(0, pool_new(&self->nl, self->pool, 1 << 20));
}

FIXTURE_TEARDOWN(nl)
{
	export_del(&self->nl, self->exp);
	pool_del(&self->nl, self->pool);
	knl_close(&self->nl);
}

TEST_F(nl, pool_get)
{
	struct pool_info pi = {};

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_GET, 0);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, self->pool);
	ASSERT_EQ(0, knl_xfer(&self->nl, pool_cb, &pi));
	EXPECT_EQ(1, pi.replies);
	EXPECT_EQ(1 << 20, pi.size);
	EXPECT_EQ(1 << 20, pi.chunk_bytes);
	EXPECT_EQ(0, pi.owner);
	EXPECT_EQ(0, pi.group);
	EXPECT_EQ(0660, pi.mode);
	EXPECT_EQ(-1, pi.numa);
	EXPECT_EQ(0, pi.attach);
	EXPECT_EQ(0, pi.exports);
	EXPECT_NE(~0ULL, pi.alloc_ns);
}

TEST_F(nl, pool_new_all_attributes)
{
	struct pool_info pi = {};
	char name[KXFER_NAME_MAX];

	snprintf(name, sizeof(name), "na%d", getpid());
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, name);
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 3 << 20);
	knl_put_u32(&self->nl, KXFER_A_POOL_OWNER, 1000);
	knl_put_u32(&self->nl, KXFER_A_POOL_GROUP, 2000);
	knl_put_u32(&self->nl, KXFER_A_POOL_MODE, 0640);
	knl_put_s32(&self->nl, KXFER_A_POOL_NUMA_NODE, 0);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_GET, 0);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, name);
	ASSERT_EQ(0, knl_xfer(&self->nl, pool_cb, &pi));
	EXPECT_EQ(3 << 20, pi.size);
	EXPECT_EQ(3 << 20, pi.chunk_bytes);
	EXPECT_EQ(1000, pi.owner);
	EXPECT_EQ(2000, pi.group);
	EXPECT_EQ(0640, pi.mode);
	EXPECT_EQ(0, pi.numa);
	EXPECT_EQ(0, pool_del(&self->nl, name));
}

TEST_F(nl, pool_dump)
{
	struct pool_info pi = {};

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_GET, NLM_F_DUMP);
	ASSERT_EQ(0, knl_xfer(&self->nl, pool_cb, &pi));
	EXPECT_LE(1, pi.replies);
}

TEST_F(nl, pool_size_zero)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl, "nz", 0));
	EXPECT_NE(0, self->nl.extack[0]);
}

TEST_F(nl, pool_size_not_page_multiple)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl, "nz", 4097));
}

TEST_F(nl, pool_size_over_cap)
{
	EXPECT_EQ(-ENOSPC, pool_new(&self->nl, "nz", 1ULL << 39));
	EXPECT_STREQ("pool size exceeds what is left of pool_mem_max",
		     self->nl.extack);
}

TEST_F(nl, pool_size_over_window)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl, "nz", 1ULL << 40));
}

TEST_F(nl, pool_size_missing)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, pool_name_missing)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 4096);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("name is required", self->nl.extack);
}

TEST_F(nl, pool_name_empty)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl, "", 4096));
	EXPECT_STREQ("name is empty", self->nl.extack);
}

TEST_F(nl, pool_name_too_long)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl,
				    "abcdefghijabcdefghijabcdefghijab", 4096));
}

TEST_F(nl, pool_name_longest)
{
	const char *name = "abcdefghijabcdefghijabcdefghija";

	EXPECT_EQ(0, pool_new(&self->nl, name, 4096));
	EXPECT_EQ(0, pool_del(&self->nl, name));
}

TEST_F(nl, pool_name_bad_char)
{
	EXPECT_EQ(-EINVAL, pool_new(&self->nl, "a/b", 4096));
}

TEST_F(nl, pool_duplicate)
{
	EXPECT_EQ(-EEXIST, pool_new(&self->nl, self->pool, 4096));
	EXPECT_STREQ("pool already exists", self->nl.extack);
}

TEST_F(nl, pool_mode_out_of_range)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 4096);
	knl_put_u32(&self->nl, KXFER_A_POOL_MODE, 01000);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, pool_numa_out_of_range)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 4096);
	knl_put_s32(&self->nl, KXFER_A_POOL_NUMA_NODE, -2);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
}

/*
 * Node 7: possible (MAX_NUMNODES is 1024 in Debian's kernels) but not
 * online in a guest.  A kernel without NUMA (the debug kernels: no
 * /sys/devices/system/node) has node 0 only, and the policy refuses 7.
 */
TEST_F(nl, pool_numa_offline)
{
	bool numa = access("/sys/devices/system/node", F_OK) == 0;

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 4096);
	knl_put_s32(&self->nl, KXFER_A_POOL_NUMA_NODE, 7);
	if (!numa) {
		EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
		return;
	}
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("NUMA node is not online", self->nl.extack);
}

/* pool_new_near: a pool near DEV (KXFER_A_POOL_NEAR) */
static int pool_new_near(struct knl *nl, const char *name, const char *dev)
{
	knl_begin(nl, nl->family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(nl, KXFER_A_POOL_NAME, name);
	knl_put_u64(nl, KXFER_A_POOL_SIZE, 4096);
	knl_put_str(nl, KXFER_A_POOL_NEAR, dev);
	return knl_xfer(nl, NULL, NULL);
}

/* near_get: the pool's near device as reported, or -errno */
static int near_get(struct knl *nl, const char *name, struct pool_info *pi)
{
	knl_begin(nl, nl->family, KXFER_CMD_POOL_GET, 0);
	knl_put_str(nl, KXFER_A_POOL_NAME, name);
	return knl_xfer(nl, pool_cb, pi);
}

/* Any guest has 0000:00:00.0, the q35 host bridge. */
TEST_F(nl, pool_near_pci)
{
	struct pool_info pi = {};

	ASSERT_EQ(0, pool_new_near(&self->nl, "nn", "0000:00:00.0"));
	ASSERT_EQ(0, near_get(&self->nl, "nn", &pi));
	EXPECT_STREQ("0000:00:00.0", pi.near);
	EXPECT_EQ(0, pool_del(&self->nl, "nn"));
}

/* Without a domain: domain 0. */
TEST_F(nl, pool_near_pci_short)
{
	EXPECT_EQ(0, pool_new_near(&self->nl, "nn", "00:00.0"));
	EXPECT_EQ(0, pool_del(&self->nl, "nn"));
}

/* An RDMA device: soft-RoCE is where its net device is. */
TEST_F(nl, pool_near_rdma_device)
{
	const char *dev = getenv("KXFER_RDMA_DEV") ?: "rxe0";
	struct pool_info pi = {};

	ASSERT_EQ(0, pool_new_near(&self->nl, "nn", dev));
	ASSERT_EQ(0, near_get(&self->nl, "nn", &pi));
	EXPECT_STREQ(dev, pi.near);
	EXPECT_EQ(0, pool_del(&self->nl, "nn"));
}

/* A pool without one reports none. */
TEST_F(nl, pool_near_none)
{
	struct pool_info pi = {};

	ASSERT_EQ(0, near_get(&self->nl, self->pool, &pi));
	EXPECT_STREQ("", pi.near);
}

TEST_F(nl, pool_near_no_pci_device)
{
	struct pool_info pi = {};

	EXPECT_EQ(-ENODEV, pool_new_near(&self->nl, "nn", "0000:7f:1f.7"));
	EXPECT_STREQ("near: no such PCI device", self->nl.extack);
	EXPECT_EQ(-ENOENT, near_get(&self->nl, "nn", &pi));
}

TEST_F(nl, pool_near_slot_out_of_range)
{
	EXPECT_EQ(-EINVAL, pool_new_near(&self->nl, "nn", "0000:00:20.0"));
	EXPECT_STREQ("near: not a PCI address (dddd:bb:dd.f)", self->nl.extack);
}

TEST_F(nl, pool_near_function_out_of_range)
{
	EXPECT_EQ(-EINVAL, pool_new_near(&self->nl, "nn", "0000:00:00.8"));
	EXPECT_STREQ("near: not a PCI address (dddd:bb:dd.f)", self->nl.extack);
}

TEST_F(nl, pool_near_no_rdma_device)
{
	EXPECT_EQ(-ENODEV, pool_new_near(&self->nl, "nn", "rxe9"));
	EXPECT_STREQ("near: no such PCI address or RDMA device", self->nl.extack);
}

TEST_F(nl, pool_near_empty)
{
	EXPECT_EQ(-ENODEV, pool_new_near(&self->nl, "nn", ""));
	EXPECT_STREQ("near: no such PCI address or RDMA device", self->nl.extack);
}

TEST_F(nl, pool_near_too_long)
{
	char dev[KXFER_DEV_NAME_MAX + 1];

	memset(dev, 'x', KXFER_DEV_NAME_MAX);
	dev[KXFER_DEV_NAME_MAX] = 0;
	EXPECT_EQ(-EINVAL, pool_new_near(&self->nl, "nn", dev));
}

TEST_F(nl, pool_size_wrong_type)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	knl_put_u32(&self->nl, KXFER_A_POOL_SIZE, 4096);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, pool_unknown_attribute)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_POOL_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_POOL_NAME, "nz");
	knl_put_u64(&self->nl, KXFER_A_POOL_SIZE, 4096);
	knl_put_u32(&self->nl, KXFER_A_POOL_MAX + 1, 1);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, unknown_command)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_MAX + 1, NLM_F_ACK);
	EXPECT_EQ(-EOPNOTSUPP, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, pool_del_unknown)
{
	EXPECT_EQ(-ENOENT, pool_del(&self->nl, "no-such-pool"));
	EXPECT_STREQ("no such pool", self->nl.extack);
}

TEST_F(nl, pool_del_attached)
{
	struct kxfer_pool_attach a = {};
	int fd = open("/dev/kxfer", O_RDWR);

	ASSERT_LE(0, fd);
	strcpy(a.name, self->pool);
	ASSERT_EQ(0, ioctl(fd, KXFER_IOC_POOL_ATTACH, &a));
	EXPECT_EQ(-EBUSY, pool_del(&self->nl, self->pool));
	EXPECT_STREQ("pool is attached or mapped by a process",
		     self->nl.extack);
	close(fd);
	EXPECT_EQ(0, pool_del(&self->nl, self->pool));
}

TEST_F(nl, pool_del_exported)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_WRITE);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_EQ(-EBUSY, pool_del(&self->nl, self->pool));
	EXPECT_STREQ("pool is exported; delete its exports first",
		     self->nl.extack);
	EXPECT_EQ(0, export_del(&self->nl, self->exp));
	EXPECT_EQ(0, pool_del(&self->nl, self->pool));
}

TEST_F(nl, export_whole_pool)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS,
		    KXFER_ACCESS_READ | KXFER_ACCESS_WRITE);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));
}

static void export_cb(struct nlmsghdr *h, void *arg)
{
	uint64_t *v = arg;

	v[0] = get_u64(h, KXFER_A_EXPORT_OFFSET);
	v[1] = get_u64(h, KXFER_A_EXPORT_LEN);
	v[2] = get_u32(h, KXFER_A_EXPORT_ACCESS);
	v[3] = knl_attr(h, KXFER_A_EXPORT_PEER) != NULL;
}

TEST_F(nl, export_get)
{
	uint64_t v[4] = {};

	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_OFFSET, 4096);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_EXPORT_GET, 0);
	knl_put_str(&self->nl, KXFER_A_EXPORT_NAME, self->exp);
	ASSERT_EQ(0, knl_xfer(&self->nl, export_cb, v));
	EXPECT_EQ(4096, v[0]);
	EXPECT_EQ((1 << 20) - 4096, v[1]);
	EXPECT_EQ(KXFER_ACCESS_READ, v[2]);
	EXPECT_EQ(0, v[3]);
}

TEST_F(nl, export_no_access)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, 0);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("export grants no access", self->nl.extack);
}

TEST_F(nl, export_access_missing)
{
	export_begin(&self->nl, self->exp, self->pool);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, export_unknown_access_bit)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, 1U << 8);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, export_range_past_pool)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_OFFSET, 4096);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_LEN, 1 << 20);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("export range is outside the pool", self->nl.extack);
}

TEST_F(nl, export_offset_past_pool)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_OFFSET, 1 << 20);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, export_range_wraps)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_OFFSET, ~0ULL - 4095);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_LEN, 8192);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, export_empty)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u64(&self->nl, KXFER_A_EXPORT_LEN, 0);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("export range is empty", self->nl.extack);
}

TEST_F(nl, export_unknown_pool)
{
	export_begin(&self->nl, self->exp, "no-such-pool");
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-ENOENT, knl_xfer(&self->nl, NULL, NULL));
}

TEST_F(nl, export_duplicate)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EEXIST, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("export already exists", self->nl.extack);
}

TEST_F(nl, export_bad_peer_name)
{
	export_begin(&self->nl, self->exp, self->pool);
	knl_put_str(&self->nl, KXFER_A_EXPORT_PEER, "bad peer");
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
}

/*
 * An export's "from" prefix: a nest of KXFER_A_PREFIX_ADDR (alen bytes
 * of addr, none if 0) and KXFER_A_PREFIX_LEN (unless plen < 0).
 */
static void put_from(struct knl *nl, const uint8_t *addr, size_t alen,
		     int plen)
{
	char buf[64] = {};
	struct nlattr *a = (struct nlattr *)buf;
	size_t len = 0;

	if (alen) {
		a->nla_type = KXFER_A_PREFIX_ADDR;
		a->nla_len = NLA_HDRLEN + alen;
		memcpy(buf + NLA_HDRLEN, addr, alen);
		len = NLA_ALIGN(a->nla_len);
	}
	if (plen >= 0) {
		a = (struct nlattr *)(buf + len);
		a->nla_type = KXFER_A_PREFIX_LEN;
		a->nla_len = NLA_HDRLEN + 1;
		buf[len + NLA_HDRLEN] = (char)plen;
		len += NLA_ALIGN(a->nla_len);
	}
	knl_put(nl, KXFER_A_EXPORT_FROM | NLA_F_NESTED, buf, len);
}

static const uint8_t addr_b[4] = { 10, 99, 0, 2 };

static void export_from_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *from = knl_attr(h, KXFER_A_EXPORT_FROM);
	uint8_t *v = arg;
	struct nlattr *a;
	int rem;

	if (!from)
		return;
	rem = from->nla_len - NLA_HDRLEN;
	for (a = (struct nlattr *)KNL_NLA_DATA(from); KNL_NLA_OK(a, rem);
	     a = KNL_NLA_NEXT(a, rem)) {
		if (a->nla_type == KXFER_A_PREFIX_ADDR &&
		    a->nla_len == NLA_HDRLEN + 4)
			memcpy(v, KNL_NLA_DATA(a), 4);
		if (a->nla_type == KXFER_A_PREFIX_LEN)
			v[4] = *(uint8_t *)KNL_NLA_DATA(a);
	}
}

TEST_F(nl, export_from)
{
	uint8_t v[5] = {};

	export_begin(&self->nl, self->exp, self->pool);
	knl_put_str(&self->nl, KXFER_A_EXPORT_PEER, "b");
	put_from(&self->nl, addr_b, 4, 32);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	ASSERT_EQ(0, knl_xfer(&self->nl, NULL, NULL));

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_EXPORT_GET, 0);
	knl_put_str(&self->nl, KXFER_A_EXPORT_NAME, self->exp);
	ASSERT_EQ(0, knl_xfer(&self->nl, export_from_cb, v));
	EXPECT_EQ(0, memcmp(v, addr_b, 4));
	EXPECT_EQ(32, v[4]);
}

TEST_F(nl, export_from_too_long)
{
	export_begin(&self->nl, self->exp, self->pool);
	put_from(&self->nl, addr_b, 4, 33);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("prefix length too long", self->nl.extack);
}

TEST_F(nl, export_from_no_len)
{
	export_begin(&self->nl, self->exp, self->pool);
	put_from(&self->nl, addr_b, 4, -1);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("prefix needs an address and a length", self->nl.extack);
}

TEST_F(nl, export_from_5_bytes)
{
	static const uint8_t five[5] = { 10, 99, 0, 2, 1 };

	export_begin(&self->nl, self->exp, self->pool);
	put_from(&self->nl, five, 5, 8);
	knl_put_u32(&self->nl, KXFER_A_EXPORT_ACCESS, KXFER_ACCESS_READ);
	EXPECT_EQ(-EINVAL, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("prefix address must be 4 or 16 bytes", self->nl.extack);
}

/* "cq poll" is a flag: one with a payload is refused, and nothing made. */
TEST_F(nl, peer_new_poll_with_payload)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_PEER_NEW, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_PEER_NAME, "npoll");
	knl_put(&self->nl, KXFER_A_PEER_ADDR, (uint8_t[]){ 10, 99, 0, 1 }, 4);
	knl_put_u32(&self->nl, KXFER_A_PEER_POLL, 1);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("Attribute failed policy validation", self->nl.extack);
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_PEER_GET, NLM_F_ACK);
	knl_put_str(&self->nl, KXFER_A_PEER_NAME, "npoll");
	EXPECT_EQ(-ENOENT, knl_xfer(&self->nl, NULL, NULL));
}

/* As for a listener's "cq poll": refused, and nothing listens there. */
TEST_F(nl, listen_new_poll_with_payload)
{
	uint16_t port = 7099;

	knl_begin(&self->nl, self->nl.family, KXFER_CMD_LISTEN_NEW, NLM_F_ACK);
	knl_put(&self->nl, KXFER_A_LISTEN_ADDR, (uint8_t[]){ 10, 99, 0, 1 }, 4);
	knl_put(&self->nl, KXFER_A_LISTEN_PORT, &port, sizeof(port));
	knl_put_u32(&self->nl, KXFER_A_LISTEN_POLL, 1);
	EXPECT_EQ(-ERANGE, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("Attribute failed policy validation", self->nl.extack);
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_LISTEN_DEL, NLM_F_ACK);
	knl_put(&self->nl, KXFER_A_LISTEN_ADDR, (uint8_t[]){ 10, 99, 0, 1 }, 4);
	knl_put(&self->nl, KXFER_A_LISTEN_PORT, &port, sizeof(port));
	EXPECT_EQ(-ENOENT, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("not listening there", self->nl.extack);
}

TEST_F(nl, export_del_unknown)
{
	EXPECT_EQ(-ENOENT, export_del(&self->nl, "no-such-export"));
	EXPECT_STREQ("no such export", self->nl.extack);
}

TEST_F(nl, dev_get_unknown)
{
	knl_begin(&self->nl, self->nl.family, KXFER_CMD_DEV_GET, 0);
	knl_put_str(&self->nl, KXFER_A_DEV_NAME, "nosuchdev0");
	EXPECT_EQ(-ENODEV, knl_xfer(&self->nl, NULL, NULL));
	EXPECT_STREQ("no such RDMA device", self->nl.extack);
}

/* Child body for the unprivileged checks; exits with the errno. */
static int unprivileged(struct knl *nl, const char *pool)
{
	struct pool_info pi = {};
	int ret;

	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return 100;
	/* Reading works without privilege. */
	knl_begin(nl, nl->family, KXFER_CMD_POOL_GET, 0);
	knl_put_str(nl, KXFER_A_POOL_NAME, pool);
	if (knl_xfer(nl, pool_cb, &pi) || pi.replies != 1)
		return 101;
	ret = pool_new(nl, "unpriv", 4096);
	return ret < 0 ? -ret : 102;
}

TEST_F(nl, unprivileged_pool_add)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unprivileged(&self->nl, self->pool));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(EPERM, WEXITSTATUS(st));
}

TEST_F(nl, unprivileged_pool_del)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		_exit(-pool_del(&self->nl, self->pool));
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(EPERM, WEXITSTATUS(st));
}

struct map_racer {
	pthread_barrier_t go;
	int fd;
	uint64_t off;
	size_t len;
	void *p;
	int err;
};

static void *map_pool(void *arg)
{
	struct map_racer *m = arg;

	pthread_barrier_wait(&m->go);
	m->p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, m->fd, m->off);
	m->err = m->p == MAP_FAILED ? errno : 0;
	return NULL;
}

/*
 * "pool del" refuses a pool a process maps, also while the mapping is
 * being made and the attachment it was found through is DETACHed on
 * another thread: the mapping counts as a user before its first page goes
 * in (16 MiB: thousands of pages, a wide window), and a pool deleted first
 * is not mapped.
 */
TEST_F(nl, pool_del_races_mmap)
{
	const size_t len = 16 << 20;
	int fd, rounds = 0, mapped = 0, refused = 0, del_mapped = 0, ret;
	uint64_t end = now_ms() + 6000;
	struct kxfer_pool_attach a;
	struct kxfer_pool_detach d;
	char name[KXFER_NAME_MAX];
	struct map_racer m;
	pthread_t t;

	fd = open("/dev/kxfer", O_RDWR);
	ASSERT_LE(0, fd);
	snprintf(name, sizeof(name), "nm%d", getpid());
	while (rounds < 400 && now_ms() < end) {
		ASSERT_EQ(0, pool_new(&self->nl, name, len));
		memset(&a, 0, sizeof(a));
		strcpy(a.name, name);
		if (ioctl(fd, KXFER_IOC_POOL_ATTACH, &a)) {
			EXPECT_EQ(0, errno);
			pool_del(&self->nl, name);
			break;
		}
		memset(&m, 0, sizeof(m));
		m.fd = fd;
		m.off = a.mmap_offset;
		m.len = len;
		pthread_barrier_init(&m.go, NULL, 2);
		ASSERT_EQ(0, pthread_create(&t, NULL, map_pool, &m));
		pthread_barrier_wait(&m.go);
		/* DETACH early or late in the mapping, round by round */
		usleep(rounds % 8 * 250);
		memset(&d, 0, sizeof(d));
		d.handle = a.handle;
		EXPECT_EQ(0, ioctl(fd, KXFER_IOC_POOL_DETACH, &d));
		ret = pool_del(&self->nl, name);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&m.go);
		if (!m.err) {
			mapped++;
			del_mapped += !ret;
			munmap(m.p, len);
		} else {
			EXPECT_EQ(ENXIO, m.err);
		}
		if (ret) {
			EXPECT_EQ(-EBUSY, ret);
			refused++;
			/* the mapping is gone: nothing holds the pool now */
			EXPECT_EQ(0, pool_del(&self->nl, name));
		}
		rounds++;
	}
	TH_LOG("%d rounds: %d mapped, %d deletions refused, %d while mapped",
	       rounds, mapped, refused, del_mapped);
	EXPECT_EQ(0, del_mapped);
	EXPECT_LT(0, mapped);
	close(fd);
}

KXFER_HARNESS_MAIN
