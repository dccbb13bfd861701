// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the file's event ring: completions of its jobs and the
 * notifications it subscribed to, taken by KXFER_IOC_REAP or poll().
 */
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/sched/signal.h>
#include <linux/hrtimer.h>

#include "kxfer.h"
#include "job.h"

/* An event that waits outside the ring, which had no room for it. */
struct kxfer_note {
	struct list_head	n_node;
	struct kxfer_event	n_ev;
	void			*n_msg;		/* its message, or NULL */
};

#define KXFER_MAX_NOTES		65536	/* per file, past the ring */

/*
 * Post a NOTIFY event.  The ring keeps room for the completions of jobs
 * in flight, so a notification goes to the ring only when there is room
 * beyond those, else to the file's overflow list; past KXFER_MAX_NOTES
 * unreaped notifications the reader is not keeping up and the event is
 * dropped, loudly.
 */
void kxfer_file_post_note(struct kxfer_file *kf, const struct kxfer_event *ev,
			  void *msg)
{
	struct kxfer_note *n = NULL;
	unsigned long flags;
	bool dropped = false;

	spin_lock_irqsave(&kf->kf_lock, flags);
	if (list_empty(&kf->kf_notes) &&
	    kf->kf_inflight + (kf->kf_head - kf->kf_tail) < kf->kf_ring_size) {
		unsigned int slot = kf->kf_head++ & (kf->kf_ring_size - 1);

		kf->kf_ring[slot] = *ev;
		kf->kf_msgs[slot] = msg;
	} else if (kf->kf_nnotes < KXFER_MAX_NOTES) {
		n = kmalloc(sizeof(*n), GFP_ATOMIC);
		if (n) {
			n->n_ev = *ev;
			n->n_msg = msg;
			list_add_tail(&n->n_node, &kf->kf_notes);
			kf->kf_nnotes++;
		} else {
			dropped = true;
		}
	} else {
		dropped = true;
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (dropped) {
		kfree(msg);
		pr_warn_ratelimited("kxfer: a notification was dropped: its reader is not reaping\n");
	}
	wake_up_interruptible(&kf->kf_wait);
}

/**
 * kxfer_file_complete_locked - post a job's completion event
 * @kf: the file; caller holds kf_lock
 * @ev: the event
 *
 * The job's slot was kept at submission (kf_inflight): there is room.
 */
void kxfer_file_complete_locked(struct kxfer_file *kf,
				const struct kxfer_event *ev)
{
	lockdep_assert_held(&kf->kf_lock);
	kf->kf_ring[kf->kf_head++ & (kf->kf_ring_size - 1)] = *ev;
	kf->kf_inflight--;
}

/* Move waiting notifications into the ring.  Caller holds kf_lock. */
static void kxfer_file_refill(struct kxfer_file *kf)
{
	struct kxfer_note *n;

	while ((n = list_first_entry_or_null(&kf->kf_notes, struct kxfer_note,
					     n_node)) &&
	       kf->kf_inflight + (kf->kf_head - kf->kf_tail) <
	       kf->kf_ring_size) {
		unsigned int slot = kf->kf_head++ & (kf->kf_ring_size - 1);

		kf->kf_ring[slot] = n->n_ev;
		kf->kf_msgs[slot] = n->n_msg;
		list_del(&n->n_node);
		kf->kf_nnotes--;
		kfree(n);
	}
}

/**
 * kxfer_file_free_notes - free notifications nobody reaped, and their
 *	messages (last put)
 * @kf: the file's context
 */
void kxfer_file_free_notes(struct kxfer_file *kf)
{
	struct kxfer_note *n, *tmp;

	unsigned int i;

	list_for_each_entry_safe(n, tmp, &kf->kf_notes, n_node) {
		kfree(n->n_msg);
		kfree(n);
	}
	INIT_LIST_HEAD(&kf->kf_notes);
	for (i = 0; i < kf->kf_ring_size; i++)
		kfree(kf->kf_msgs[i]);
}

/* ---------------------------------------------------------------------- */
/* Events                                                                  */
/* ---------------------------------------------------------------------- */

static unsigned int kxfer_events_ready(struct kxfer_file *kf)
{
	return READ_ONCE(kf->kf_head) - READ_ONCE(kf->kf_tail);
}

/*
 * A NOTIFY event's message goes to the reap's buffer.  -ENOSPC when it
 * does not fit after events already taken by this call: the next call
 * gets it; the first event of a call is never held back (its message is
 * lost, KXFER_MSG_NONE), so that a reader without room cannot stall.
 */
static int kxfer_reap_msg(struct kxfer_reap *r, struct kxfer_event *ev,
			  const void *msg, u32 *used)
{
	if (ev->type != KXFER_EV_NOTIFY || !ev->msg_len)
		return 0;
	if (!msg || !r->msgs || ev->msg_len > r->msgs_len - *used) {
		if (r->count)
			return -ENOSPC;
		ev->msg_off = KXFER_MSG_NONE;
		return 0;
	}
	if (copy_to_user(u64_to_user_ptr(r->msgs) + *used, msg, ev->msg_len))
		return -EFAULT;
	ev->msg_off = *used;
	*used += ev->msg_len;
	return 0;
}

/**
 * kxfer_ioc_reap - KXFER_IOC_REAP
 * @kf: the file
 * @uarg: struct kxfer_reap in user memory
 *
 * Return: 0, or a negative errno (%-EINTR if a signal came before @min
 * events; events already copied out are kept and reported in @count).
 * May sleep.
 */
long kxfer_ioc_reap(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_event __user *uev;
	u32 msgs_used = 0;
	struct kxfer_reap r;
	ktime_t deadline;
	long ret = 0;

	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	if ((r.flags & ~KXFER_REAP_BUSY_POLL) || r.reserved)
		return -EINVAL;
	if (!r.max || r.min > r.max)
		return -EINVAL;
	uev = u64_to_user_ptr(r.events);
	deadline = ktime_add_ns(ktime_get(), r.timeout_ns > 0 ? r.timeout_ns : 0);

	/* Wait for @min events, or the timeout, or a signal. */
	while (kxfer_events_ready(kf) < r.min && r.timeout_ns) {
		if (r.flags & KXFER_REAP_BUSY_POLL) {
			if (signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			if (r.timeout_ns > 0 && ktime_after(ktime_get(), deadline))
				break;
			/*
			 * Run what the provider and the CQ left to softirq on
			 * this CPU (rxe's tasklet on 6.1, the CQ's irq_poll):
			 * the completion comes to us instead of waiting for
			 * ksoftirqd to be scheduled.
			 */
			local_bh_disable();
			local_bh_enable();
			cond_resched();
			continue;
		}
		if (r.timeout_ns < 0) {
			ret = wait_event_interruptible(kf->kf_wait,
						       kxfer_events_ready(kf) >= r.min);
			if (ret)
				ret = -EINTR;
		} else {
			ktime_t left = ktime_sub(deadline, ktime_get());

			if (ktime_to_ns(left) <= 0)
				break;
			ret = wait_event_interruptible_hrtimeout(kf->kf_wait,
								 kxfer_events_ready(kf) >= r.min,
								 left);
			if (ret == -ETIME)
				ret = 0;
			else if (ret)
				ret = -EINTR;
		}
		if (ret)
			break;
	}

	/* Copy out, then consume: an event is taken once it reached the user. */
	if (put_user(0U, &((struct kxfer_reap __user *)uarg)->count))
		return -EFAULT;
	mutex_lock(&kf->kf_reap_mutex);
	r.count = 0;
	while (r.count < r.max) {
		unsigned int tail = READ_ONCE(kf->kf_tail), slot;
		struct kxfer_event ev;
		unsigned long flags;
		int err;

		spin_lock_irqsave(&kf->kf_lock, flags);
		if (kf->kf_head == tail) {
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			break;
		}
		slot = tail & (kf->kf_ring_size - 1);
		ev = kf->kf_ring[slot];
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		/* Only the reaper, which we are, takes kf_msgs[slot]. */
		err = kxfer_reap_msg(&r, &ev, kf->kf_msgs[slot], &msgs_used);
		if (err == -ENOSPC)
			break;		/* the next call takes it */
		if (err || copy_to_user(&uev[r.count], &ev, sizeof(ev))) {
			ret = r.count ? ret : -EFAULT;
			break;
		}
		spin_lock_irqsave(&kf->kf_lock, flags);
		kf->kf_tail = tail + 1;
		kfree(kf->kf_msgs[slot]);
		kf->kf_msgs[slot] = NULL;
		kxfer_file_refill(kf);
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		r.count++;
	}
	mutex_unlock(&kf->kf_reap_mutex);

	if (r.count && ret == -EINTR)
		ret = 0;
	if (copy_to_user(uarg, &r, sizeof(r)))
		return -EFAULT;
	return ret;
}

/**
 * kxfer_file_poll - POLLIN when events are ready
 * @kf: the file's context
 * @filp: the file
 * @wait: poll table
 *
 * Return: the poll mask.
 */
__poll_t kxfer_file_poll(struct kxfer_file *kf, struct file *filp,
			 poll_table *wait)
{
	poll_wait(filp, &kf->kf_wait, wait);
	return kxfer_events_ready(kf) ? EPOLLIN | EPOLLRDNORM : 0;
}
