// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the ib_client.  Tracks the RDMA devices ib_core knows.
 *
 * Each device gets a struct kxfer_device when ib_core adds it.  Users
 * (pool mappings now, sessions later) hold references.  Removal marks
 * the device, unlinks it so that no one finds it any more, tells every
 * user to let go, and then waits until the last reference is gone
 * before ib_core is allowed to free the device: the same shape as
 * xprtrdma's ib_client.c.
 */
#include <linux/slab.h>

#include "kxfer.h"

/* protects kxfer_devices */
DEFINE_MUTEX(kxfer_dev_mutex);
LIST_HEAD(kxfer_devices);

static struct ib_client kxfer_ib_client;

static void kxfer_device_release(struct kref *ref)
{
	struct kxfer_device *kd = container_of(ref, struct kxfer_device,
					       kd_ref);

	complete(&kd->kd_released);
}

/**
 * kxfer_device_put - drop a reference to a device
 * @kd: device from kxfer_device_get_by_name() or a snapshot
 *
 * The last put lets a pending removal finish.
 */
void kxfer_device_put(struct kxfer_device *kd)
{
	kref_put(&kd->kd_ref, kxfer_device_release);
}

/**
 * kxfer_device_get_by_name - find a device that is not being removed
 * @name: ib_core device name
 *
 * Return: a referenced device, or %NULL.  May sleep.
 */
struct kxfer_device *kxfer_device_get_by_name(const char *name)
{
	struct kxfer_device *kd, *found = NULL;

	mutex_lock(&kxfer_dev_mutex);
	list_for_each_entry(kd, &kxfer_devices, kd_node) {
		if (strcmp(dev_name(&kd->kd_ibdev->dev), name))
			continue;
		if (kref_get_unless_zero(&kd->kd_ref))
			found = kd;
		break;
	}
	mutex_unlock(&kxfer_dev_mutex);
	return found;
}

/**
 * kxfer_device_snapshot - take a reference on every live device
 * @out: set to an array of the referenced devices (free it with
 *	kxfer_device_snapshot_put())
 *
 * Return: the number of devices in the array.  May sleep.
 */
unsigned int kxfer_device_snapshot(struct kxfer_device ***out)
{
	struct kxfer_device **kds = NULL, *kd;
	unsigned int n = 0, max = 0;

	mutex_lock(&kxfer_dev_mutex);
	list_for_each_entry(kd, &kxfer_devices, kd_node)
		max++;
	if (max)
		kds = kcalloc(max, sizeof(*kds), GFP_KERNEL);
	if (kds) {
		list_for_each_entry(kd, &kxfer_devices, kd_node)
			if (kref_get_unless_zero(&kd->kd_ref))
				kds[n++] = kd;
	}
	mutex_unlock(&kxfer_dev_mutex);
	*out = kds;
	return n;
}

/**
 * kxfer_device_snapshot_put - release what kxfer_device_snapshot() took
 * @kds: the array
 * @n: its length
 */
void kxfer_device_snapshot_put(struct kxfer_device **kds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		kxfer_device_put(kds[i]);
	kfree(kds);
}

static int kxfer_device_add(struct ib_device *ibdev)
{
	struct kxfer_device *kd;

	kd = kzalloc(sizeof(*kd), GFP_KERNEL);
	if (!kd)
		return -ENOMEM;
	kd->kd_ibdev = ibdev;
	kref_init(&kd->kd_ref);
	init_completion(&kd->kd_released);
	strscpy(kd->kd_name, dev_name(&ibdev->dev), sizeof(kd->kd_name));
	ib_set_client_data(ibdev, &kxfer_ib_client, kd);

	mutex_lock(&kxfer_dev_mutex);
	list_add_tail(&kd->kd_node, &kxfer_devices);
	mutex_unlock(&kxfer_dev_mutex);

	kxfer_info("%s: device added\n", kd->kd_name);
	kxfer_nl_notify_dev(kd, true);
	return 0;
}

static void kxfer_device_remove(struct ib_device *ibdev, void *client_data)
{
	struct kxfer_device *kd = client_data;

	set_bit(KXFER_DEV_REMOVING, &kd->kd_flags);
	mutex_lock(&kxfer_dev_mutex);
	list_del(&kd->kd_node);
	mutex_unlock(&kxfer_dev_mutex);

	/*
	 * Every user lets go of the device: listeners and sessions first
	 * (their memory regions use the pools' DMA mappings), then pools.
	 */
	kxfer_listeners_device_removed(kd);
	kxfer_sessions_device_removed(kd);
	kxfer_pools_device_removed(kd);
	/* cm_ids held for a port that was down: rdma_cm waits for them */
	kxfer_cm_reap_kick();

	kxfer_nl_notify_dev(kd, false);
	kxfer_device_put(kd);
	wait_for_completion(&kd->kd_released);
	kxfer_info("%s: device removed\n", kd->kd_name);
	kfree(kd);
}

static struct ib_client kxfer_ib_client = {
	.name	= "kxfer",
	.add	= kxfer_device_add,
	.remove	= kxfer_device_remove,
};

/**
 * kxfer_device_client_register - start tracking RDMA devices
 *
 * ib_core calls the add callback for every device already present
 * before this returns.
 *
 * Return: 0 or a negative errno from ib_register_client().
 */
int kxfer_device_client_register(void)
{
	return ib_register_client(&kxfer_ib_client);
}

/**
 * kxfer_device_client_unregister - stop tracking RDMA devices
 *
 * Runs the remove callback for every device; every user must have
 * let go by then or be able to when told.
 */
void kxfer_device_client_unregister(void)
{
	ib_unregister_client(&kxfer_ib_client);
}
