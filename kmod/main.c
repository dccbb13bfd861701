// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: kernel RDMA transfer engine.
 *
 * Module entry: parameters, and the order in which the parts come up
 * and go down.  Netlink comes last up and first down, so that no
 * control request can arrive while the rest is half built.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/log2.h>

#include "kxfer.h"

unsigned long kxfer_pool_mem_max;
module_param_named(pool_mem_max, kxfer_pool_mem_max, ulong, 0444);
MODULE_PARM_DESC(pool_mem_max,
		 "Bytes all pools together may pin (default: half of RAM)");

/* ULONG_MAX until init: then pool_mem_max unless set at load */
unsigned long kxfer_user_pool_mem_max = ULONG_MAX;
module_param_named(user_pool_mem_max, kxfer_user_pool_mem_max, ulong, 0644);
MODULE_PARM_DESC(user_pool_mem_max,
		 "Bytes the pools of processes' own memory (KXFER_IOC_POOL_USER, KXFER_IOC_POOL_DMABUF) may pin together; 0 forbids them (default: pool_mem_max)");

bool kxfer_user_exports = true;
module_param_named(user_exports, kxfer_user_exports, bool, 0644);
MODULE_PARM_DESC(user_exports,
		 "Whether a process may export the pools of its own memory through /dev/kxfer (default Y)");

unsigned int kxfer_max_segments = 65536;
module_param_named(max_segments, kxfer_max_segments, uint, 0444);
MODULE_PARM_DESC(max_segments, "Segments per job (default 65536)");

unsigned int kxfer_max_inflight = 1024;
module_param_named(max_inflight, kxfer_max_inflight, uint, 0644);
MODULE_PARM_DESC(max_inflight,
		 "Jobs one open /dev/kxfer may have in flight, rounded up to a power of two, read at open (default 1024)");

unsigned int kxfer_max_jobs_per_submit = 1024;
module_param_named(max_jobs_per_submit, kxfer_max_jobs_per_submit, uint, 0444);
MODULE_PARM_DESC(max_jobs_per_submit, "Jobs per SUBMIT call (default 1024)");

unsigned int kxfer_stripe = 1 << 20;
module_param_named(stripe, kxfer_stripe, uint, 0444);
MODULE_PARM_DESC(stripe,
		 "Largest work request, and the unit striped over QPs (default 1 MiB)");

unsigned int kxfer_rail_stripe = 4 << 20;
module_param_named(rail_stripe, kxfer_rail_stripe, uint, 0644);
MODULE_PARM_DESC(rail_stripe,
		 "A WRITE or READ of at least this many bytes to a peer over rails is striped over its nearest rails; 0 never (default 4 MiB)");

static int kxfer_qp_inflight_set(const char *val,
				 const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 1024);
}

static const struct kernel_param_ops kxfer_qp_inflight_ops = {
	.set = kxfer_qp_inflight_set,
	.get = param_get_uint,
};

unsigned int kxfer_qp_inflight_mb = 8;
module_param_cb(qp_inflight_mb, &kxfer_qp_inflight_ops, &kxfer_qp_inflight_mb,
		0644);
MODULE_PARM_DESC(qp_inflight_mb,
		 "Data MiB in flight per QP, which control messages wait behind, 1..1024, for sessions connecting after (default 8)");

static int kxfer_mr_max_pages_set(const char *val,
				  const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KXFER_MR_MAX_PAGES);
}

static const struct kernel_param_ops kxfer_mr_max_pages_ops = {
	.set = kxfer_mr_max_pages_set,
	.get = param_get_uint,
};

unsigned int kxfer_mr_max_pages = KXFER_MR_MAX_PAGES;
module_param_cb(mr_max_pages, &kxfer_mr_max_pages_ops, &kxfer_mr_max_pages,
		0644);
MODULE_PARM_DESC(mr_max_pages,
		 "Pages one memory region of an export maps, 1..512, below the device's own limit, for exports registered after (default 512)");

static int kxfer_mr_max_page_set(const char *val, const struct kernel_param *kp)
{
	unsigned long v;
	int ret = kstrtoul(val, 0, &v);

	if (ret)
		return ret;
	if (!is_power_of_2(v) || v < PAGE_SIZE ||
	    v > 1UL << KXFER_MR_MAX_PAGE_SHIFT)
		return -EINVAL;
	WRITE_ONCE(*(unsigned long *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops kxfer_mr_max_page_ops = {
	.set = kxfer_mr_max_page_set,
	.get = param_get_ulong,
};

/*
 * The largest page an export's memory region maps: the memory's layout
 * and the device's page_size_cap decide below it (kxfer_mr_shift()).  A
 * driver that mishandles large pages is given 4096.
 */
unsigned long kxfer_mr_max_page = 1UL << KXFER_MR_MAX_PAGE_SHIFT;
module_param_cb(mr_max_page, &kxfer_mr_max_page_ops, &kxfer_mr_max_page,
		0644);
MODULE_PARM_DESC(mr_max_page,
		 "Bytes of the largest page an export's memory region maps, a power of two from the page size to 1 GiB, for exports registered after (default 1 GiB)");

/*
 * An inference engine registers a region per layer and per K/V (160 for
 * an 80-layer model), each a pool of its file: the count is generous,
 * and what the pools cost is bounded by memory instead (the pinned pages
 * by RLIMIT_MEMLOCK and pool_mem_max, the kernel's tables by the memory
 * cgroup, pool.c).
 */
unsigned int kxfer_max_pools_per_fd = 1024;
module_param_named(max_pools_per_fd, kxfer_max_pools_per_fd, uint, 0444);
MODULE_PARM_DESC(max_pools_per_fd,
		 "Pools one open /dev/kxfer may attach at once, 1..65536 (default 1024)");

unsigned int kxfer_max_remote_mrs = 1 << 18;
module_param_named(max_remote_mrs, kxfer_max_remote_mrs, uint, 0444);
MODULE_PARM_DESC(max_remote_mrs,
		 "Memory regions a peer may advertise to one session, over all its exports (default 262144: 512 GiB of 2 MiB regions, 8 MiB of tables)");

static int __init kxfer_init(void)
{
	int ret;

	if (!kxfer_pool_mem_max)
		kxfer_pool_mem_max = (totalram_pages() << PAGE_SHIFT) / 2;
	if (kxfer_user_pool_mem_max == ULONG_MAX)
		kxfer_user_pool_mem_max = kxfer_pool_mem_max;
	if (!kxfer_max_pools_per_fd || kxfer_max_pools_per_fd > 65536) {
		kxfer_err("max_pools_per_fd must be in 1..65536\n");
		return -EINVAL;
	}
	if (!kxfer_max_segments || kxfer_max_segments > (1U << 24) ||
	    !kxfer_max_jobs_per_submit ||
	    !is_power_of_2(kxfer_stripe) || kxfer_stripe < 4096) {
		kxfer_err("bad max_segments, max_inflight, max_jobs_per_submit or stripe\n");
		return -EINVAL;
	}
	if (kxfer_ack_timeout < 8 || kxfer_ack_timeout > 24) {
		kxfer_err("ack_timeout must be in 8..24\n");
		return -EINVAL;
	}

	ret = kxfer_sessions_init();
	if (ret)
		return ret;
	ret = kxfer_device_client_register();
	if (ret)
		goto out_sessions;
	ret = kxfer_chardev_register();
	if (ret)
		goto out_client;
	ret = kxfer_nl_register();
	if (ret)
		goto out_chardev;

	kxfer_info("loaded, API version %u\n", KXFER_API_VERSION);
	return 0;

out_chardev:
	kxfer_chardev_unregister();
out_client:
	kxfer_device_client_unregister();
out_sessions:
	kxfer_sessions_exit();
	return ret;
}

static void __exit kxfer_exit(void)
{
	kxfer_nl_unregister();
	kxfer_chardev_unregister();
	/* No open file remains (each holds a module reference). */
	kxfer_listeners_destroy_all();
	kxfer_connect_rules_destroy_all();
	kxfer_accepts_flush();
	kxfer_sessions_stop_all();
	/* Jobs waiting for another rail end now that none is left. */
	kxfer_rails_wait_idle();
	kxfer_keys_destroy_all();
	/* Jobs still referencing pools are freed by now. */
	kxfer_jobs_flush();
	kxfer_exports_destroy_all();
	kxfer_pools_destroy_all();
	kxfer_upools_exit();
	kxfer_device_client_unregister();
	kxfer_sessions_exit();
	kxfer_info("unloaded\n");
}

module_init(kxfer_init);
module_exit(kxfer_exit);

MODULE_DESCRIPTION("kxfer: kernel RDMA transfer engine");
MODULE_LICENSE("GPL");
