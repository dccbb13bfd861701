// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the file's event ring: completions of its jobs and the
 * notifications it subscribed to, taken by KXFER_IOC_REAP or poll().
 *
 * The ring proper (kf_ring, kf_msgs, kf_head, kf_tail) is the kernel's
 * own.  A file that asks for it (KXFER_IOC_RING_SETUP) also gets a copy
 * mapped into its process, written with each event; the only thing read
 * back from there is the consumer's tail, and only a tail between the
 * last one known and the head is taken (kxfer_ring_sync_locked()): user
 * space can free the slots it read, never the others, so the room kept
 * for each job in flight stays.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
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
 * Write an event into the next slot of the ring, and into the mapped
 * copy.  A message in the mapped copy is announced by KXFER_MSG_RING
 * (KXFER_IOC_RING_MSG reads it).  Caller holds kf_lock and checked the
 * room.
 */
static void kxfer_file_push_locked(struct kxfer_file *kf,
				   const struct kxfer_event *ev, void *msg)
{
	unsigned int slot = kf->kf_head & (kf->kf_ring_size - 1);

	kf->kf_ring[slot] = *ev;
	kf->kf_msgs[slot] = msg;
	if (kf->kf_shr) {
		struct kxfer_event *sev = &kf->kf_shr_ev[slot];

		*sev = *ev;
		if (ev->type == KXFER_EV_NOTIFY && ev->msg_len)
			sev->msg_off = msg ? KXFER_MSG_RING : KXFER_MSG_NONE;
	}
	kf->kf_head++;
}

/* Show the mapped copy's reader the new head and flags.  Under kf_lock. */
static void kxfer_ring_publish_locked(struct kxfer_file *kf)
{
	if (!kf->kf_shr)
		return;
	WRITE_ONCE(kf->kf_shr->flags,
		   (list_empty(&kf->kf_notes) ? 0 : KXFER_RING_F_NEED_REAP) |
		   (kf->kf_poll ? KXFER_RING_F_POLL : 0));
	/* The entries before the head that says they are there. */
	smp_store_release(&kf->kf_shr->head, kf->kf_head);
}

/**
 * kxfer_file_set_poll_locked - the file uses a polled session from now
 * @kf: the file; its reaps poll, and its ring's reader is told to call
 *	REAP (KXFER_RING_F_POLL).  Caller holds kf_lock.
 */
void kxfer_file_set_poll_locked(struct kxfer_file *kf)
{
	lockdep_assert_held(&kf->kf_lock);
	if (kf->kf_poll)
		return;
	WRITE_ONCE(kf->kf_poll, true);
	kxfer_ring_publish_locked(kf);
}

/*
 * Take the mapped ring's tail: the events before it were read.  A tail
 * behind the last one known or past the head is ignored, whatever it
 * is: only slots of events already posted are ever freed by it.
 * Caller holds kf_lock.
 */
static void kxfer_ring_sync_locked(struct kxfer_file *kf)
{
	unsigned int tail;

	if (!kf->kf_shr)
		return;
	/* Read the tail before reusing the slots it frees. */
	tail = smp_load_acquire(&kf->kf_shr->tail);
	if (tail - kf->kf_tail > kf->kf_head - kf->kf_tail)
		return;
	while (kf->kf_tail != tail) {
		unsigned int slot = kf->kf_tail++ & (kf->kf_ring_size - 1);

		kfree(kf->kf_msgs[slot]);
		kf->kf_msgs[slot] = NULL;
	}
}

static bool kxfer_file_has_room_locked(struct kxfer_file *kf)
{
	return kf->kf_inflight + (kf->kf_head - kf->kf_tail) < kf->kf_ring_size;
}

/* Move waiting notifications into the ring.  Caller holds kf_lock. */
static void kxfer_file_refill(struct kxfer_file *kf)
{
	struct kxfer_note *n;

	while ((n = list_first_entry_or_null(&kf->kf_notes, struct kxfer_note,
					     n_node)) &&
	       kxfer_file_has_room_locked(kf)) {
		kxfer_file_push_locked(kf, &n->n_ev, n->n_msg);
		list_del(&n->n_node);
		kf->kf_nnotes--;
		kfree(n);
	}
}

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
	kxfer_ring_sync_locked(kf);
	kxfer_file_refill(kf);
	if (list_empty(&kf->kf_notes) && kxfer_file_has_room_locked(kf)) {
		kxfer_file_push_locked(kf, ev, msg);
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
	kxfer_ring_publish_locked(kf);
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
 * The job's slot was kept at submission (kf_inflight): there is room,
 * whatever the mapped ring's tail says (kxfer_ring_sync_locked()).
 */
void kxfer_file_complete_locked(struct kxfer_file *kf,
				const struct kxfer_event *ev)
{
	lockdep_assert_held(&kf->kf_lock);
	kxfer_file_push_locked(kf, ev, NULL);
	kf->kf_inflight--;
	kxfer_ring_publish_locked(kf);
}

/**
 * kxfer_file_ring_sync - take the mapped ring's tail and refill the ring
 *	from the overflow list
 * @kf: the file
 *
 * Before SUBMIT's room check, so that what the reader took counts.
 */
void kxfer_file_ring_sync(struct kxfer_file *kf)
{
	unsigned long flags;

	if (!READ_ONCE(kf->kf_shr))
		return;
	spin_lock_irqsave(&kf->kf_lock, flags);
	kxfer_ring_sync_locked(kf);
	kxfer_file_refill(kf);
	kxfer_ring_publish_locked(kf);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
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

/**
 * kxfer_file_free_ring - free the mapped ring (last put: every mapping of
 *	it holds the file, so none is left)
 * @kf: the file's context
 */
void kxfer_file_free_ring(struct kxfer_file *kf)
{
	vfree(kf->kf_shr);
	kf->kf_shr = NULL;
	kfree(kf->kf_bounce);
	kf->kf_bounce = NULL;
}

/* ---------------------------------------------------------------------- */
/* Events                                                                  */
/* ---------------------------------------------------------------------- */

/* Events ready, after taking the mapped ring's tail. */
static unsigned int kxfer_events_ready(struct kxfer_file *kf)
{
	kxfer_file_ring_sync(kf);
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

/* The file's message bounce buffer.  Caller holds kf_reap_mutex. */
static void *kxfer_file_bounce(struct kxfer_file *kf)
{
	lockdep_assert_held(&kf->kf_reap_mutex);
	if (!kf->kf_bounce)
		kf->kf_bounce = kmalloc(KXFER_NOTIFY_MSG_MAX, GFP_KERNEL);
	return kf->kf_bounce;
}

/*
 * A sleeping REAP while the file has jobs on a polled session, whose
 * completions nobody reaps but a poller (hybrid polling, as io_uring's
 * IORING_SETUP_HYBRID_IOPOLL and the block layer's hybrid poll did): sleep
 * half of what such waits took lately (kf_poll_wait_ns), then poll without
 * sleeping for up to that estimate again, then sleep in slices that double
 * from 16 us to a tick, polling after each.  The sleeps take no timer
 * slack: a task's default 50 us would make a 16 us slice last 66.  Only
 * waits estimated at KXFER_HYBRID_MAX_NS or less spin; a longer one sleeps
 * in slices from the start.
 */
#define KXFER_HYBRID_MAX_NS	(200 * NSEC_PER_USEC)
#define KXFER_SLICE_MIN_NS	(16 * NSEC_PER_USEC)

enum kxfer_hybrid_phase {
	KXFER_HY_NONE,		/* not waited yet */
	KXFER_HY_SLEEP,		/* the first sleep, half the estimate */
	KXFER_HY_SPIN,		/* polling without sleeping */
	KXFER_HY_SLICES,	/* sleeping in slices */
};

struct kxfer_hybrid {
	enum kxfer_hybrid_phase	phase;
	ktime_t			start;		/* of the first sleep */
	ktime_t			spin_end;
	u64			est_ns;		/* kf_poll_wait_ns at the start */
	u64			slice_ns;
	bool			overslept;	/* ready when the first sleep ended */
};

/*
 * One turn of a REAP that spins: poll the polled sessions' CQs, and run
 * what the provider and the other CQs left to softirq on this CPU (rxe's
 * tasklet on 6.1, irq_poll), so that the completion comes to us instead
 * of waiting for ksoftirqd to be scheduled.
 */
static void kxfer_reap_spin(struct kxfer_file *kf)
{
	if (!kxfer_file_poll_cqs(kf)) {
		local_bh_disable();
		local_bh_enable();
	}
	cond_resched();
}

/*
 * Sleep until @until, or until @min events are ready or a signal comes,
 * with no timer slack.  Return: 0, or -EINTR.
 */
static int kxfer_reap_nap(struct kxfer_file *kf, unsigned int min,
			  ktime_t until)
{
	DEFINE_WAIT(wait);

	prepare_to_wait(&kf->kf_wait, &wait, TASK_INTERRUPTIBLE);
	if (kxfer_events_ready(kf) < min && !signal_pending(current))
		schedule_hrtimeout_range(&until, 0, HRTIMER_MODE_ABS);
	finish_wait(&kf->kf_wait, &wait);
	if (kxfer_events_ready(kf) < min && signal_pending(current))
		return -EINTR;
	return 0;
}

/*
 * One step of a sleeping REAP's wait on polled sessions: a sleep or a
 * turn of spinning, then a poll.  Return: 0 to go on (the caller checks
 * for the events), 1 when the timeout passed, or -EINTR.
 */
static int kxfer_reap_hybrid(struct kxfer_file *kf, struct kxfer_hybrid *hy,
			     unsigned int min, s64 timeout_ns, ktime_t deadline)
{
	ktime_t now = ktime_get(), until;
	int ret;

	if (hy->phase == KXFER_HY_NONE) {
		hy->start = now;
		hy->est_ns = READ_ONCE(kf->kf_poll_wait_ns);
		hy->slice_ns = KXFER_SLICE_MIN_NS;
		hy->phase = hy->est_ns && hy->est_ns <= KXFER_HYBRID_MAX_NS ?
			    KXFER_HY_SLEEP : KXFER_HY_SLICES;
	}
	if (timeout_ns > 0 && !ktime_before(now, deadline))
		return 1;
	if (hy->phase == KXFER_HY_SPIN && ktime_after(now, hy->spin_end))
		hy->phase = KXFER_HY_SLICES;

	if (hy->phase == KXFER_HY_SPIN) {
		if (signal_pending(current))
			return -EINTR;
		kxfer_reap_spin(kf);
		return 0;
	}

	if (hy->phase == KXFER_HY_SLEEP) {
		until = ktime_add_ns(now, hy->est_ns / 2);
	} else {
		until = ktime_add_ns(now, hy->slice_ns);
		hy->slice_ns = min_t(u64, 2 * hy->slice_ns, TICK_NSEC);
	}
	if (timeout_ns > 0 && ktime_after(until, deadline))
		until = deadline;
	ret = kxfer_reap_nap(kf, min, until);
	if (ret)
		return ret;
	kxfer_file_poll_cqs(kf);
	if (hy->phase == KXFER_HY_SLEEP) {
		hy->overslept = kxfer_events_ready(kf) >= min;
		hy->spin_end = ktime_add_ns(ktime_get(), hy->est_ns);
		hy->phase = KXFER_HY_SPIN;
	}
	return 0;
}

/*
 * What a wait that ended with its events teaches: a wait found over at
 * the end of its first sleep might have slept less, so the estimate
 * shrinks by a quarter; any other moves a quarter of the way to the time
 * it took.
 */
static void kxfer_reap_hybrid_learn(struct kxfer_file *kf,
				    const struct kxfer_hybrid *hy)
{
	u64 took = ktime_to_ns(ktime_sub(ktime_get(), hy->start));
	u64 est = hy->est_ns;

	if (hy->overslept)
		est -= est / 4;
	else
		est = est ? est - est / 4 + took / 4 : took;
	WRITE_ONCE(kf->kf_poll_wait_ns, min_t(u64, est, 4 * KXFER_HYBRID_MAX_NS));
}

/* A REAP's arguments: what it takes, or, with WAIT, only how it waits. */
static int kxfer_reap_check(const struct kxfer_file *kf,
			    const struct kxfer_reap *r)
{
	if ((r->flags & ~(KXFER_REAP_BUSY_POLL | KXFER_REAP_WAIT)) ||
	    r->reserved)
		return -EINVAL;
	if (r->flags & KXFER_REAP_WAIT) {
		if (r->events || r->max || r->msgs || r->msgs_len ||
		    r->min > kf->kf_ring_size)
			return -EINVAL;
	} else if (!r->max || r->min > r->max) {
		return -EINVAL;
	}
	return 0;
}

/*
 * One turn of a REAP's wait for its events: a turn of busy polling, a
 * step of hybrid polling, or a sleep on the file's wait queue.
 * Return: 0 to look again, 1 when the timeout passed, or -EINTR.
 */
static int kxfer_reap_wait_turn(struct kxfer_file *kf,
				const struct kxfer_reap *r,
				struct kxfer_hybrid *hy, ktime_t deadline)
{
	ktime_t left;
	int ret;

	if (r->flags & KXFER_REAP_BUSY_POLL) {
		if (signal_pending(current))
			return -EINTR;
		if (r->timeout_ns > 0 && ktime_after(ktime_get(), deadline))
			return 1;
		kxfer_reap_spin(kf);
		return 0;
	}
	/*
	 * Jobs on polled sessions complete by themselves only at their
	 * work's tick: wait for them as kxfer_reap_hybrid() says.
	 */
	if (kxfer_file_polled_inflight(kf))
		return kxfer_reap_hybrid(kf, hy, r->min, r->timeout_ns,
					 deadline);
	if (r->timeout_ns < 0) {
		ret = wait_event_interruptible(kf->kf_wait,
					       kxfer_events_ready(kf) >= r->min);
		return ret ? -EINTR : 0;
	}
	left = ktime_sub(deadline, ktime_get());
	if (ktime_to_ns(left) <= 0)
		return 1;
	ret = wait_event_interruptible_hrtimeout(kf->kf_wait,
						 kxfer_events_ready(kf) >= r->min,
						 left);
	if (ret == -ETIME)
		return 0;
	return ret ? -EINTR : 0;
}

/*
 * Wait for @r->min events, the timeout (none if 0, for ever if
 * negative) or a signal.  Return: 0 or -EINTR.
 */
static int kxfer_reap_wait(struct kxfer_file *kf, const struct kxfer_reap *r)
{
	struct kxfer_hybrid hy = { .phase = KXFER_HY_NONE };
	ktime_t deadline;
	int ret = 0;

	deadline = ktime_add_ns(ktime_get(),
				r->timeout_ns > 0 ? r->timeout_ns : 0);
	/* Polled sessions: what completed is reaped by every REAP. */
	kxfer_file_poll_cqs(kf);
	while (!ret && kxfer_events_ready(kf) < r->min && r->timeout_ns)
		ret = kxfer_reap_wait_turn(kf, r, &hy, deadline);
	if (ret > 0)
		ret = 0;	/* the timeout */
	if (hy.phase != KXFER_HY_NONE && !ret &&
	    kxfer_events_ready(kf) >= r->min)
		kxfer_reap_hybrid_learn(kf, &hy);
	return ret;
}

/*
 * The event at @tail reached the user: free its slot, unless the mapped
 * ring's reader took it meanwhile, and refill the ring.
 */
static void kxfer_reap_consume(struct kxfer_file *kf, unsigned int tail)
{
	unsigned int slot = tail & (kf->kf_ring_size - 1);
	unsigned long flags;

	spin_lock_irqsave(&kf->kf_lock, flags);
	if (kf->kf_tail == tail) {
		kf->kf_tail = tail + 1;
		kfree(kf->kf_msgs[slot]);
		kf->kf_msgs[slot] = NULL;
		if (kf->kf_shr)
			WRITE_ONCE(kf->kf_shr->tail, kf->kf_tail);
	}
	kxfer_file_refill(kf);
	kxfer_ring_publish_locked(kf);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
}

/*
 * Copy the event at the ring's tail out as the reap's next, with its
 * message (through @bounce, %NULL if the reap takes none), then consume
 * it.  Return: 0; 1 if there is none, or its message waits for the next
 * call; or -EFAULT, the event left in the ring.
 */
static int kxfer_reap_one(struct kxfer_file *kf, struct kxfer_reap *r,
			  void *bounce, u32 *msgs_used)
{
	struct kxfer_event __user *uev = u64_to_user_ptr(r->events);
	unsigned int tail, slot;
	struct kxfer_event ev;
	unsigned long flags;
	void *msg = NULL;
	int err;

	spin_lock_irqsave(&kf->kf_lock, flags);
	kxfer_ring_sync_locked(kf);
	tail = kf->kf_tail;
	if (kf->kf_head == tail) {
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		return 1;
	}
	slot = tail & (kf->kf_ring_size - 1);
	ev = kf->kf_ring[slot];
	/*
	 * The message is copied under the lock: once the mapped ring's
	 * tail moves past its event, it is freed.
	 */
	if (bounce && ev.type == KXFER_EV_NOTIFY && kf->kf_msgs[slot] &&
	    ev.msg_len && ev.msg_len <= KXFER_NOTIFY_MSG_MAX) {
		memcpy(bounce, kf->kf_msgs[slot], ev.msg_len);
		msg = bounce;
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);

	err = kxfer_reap_msg(r, &ev, msg, msgs_used);
	if (err == -ENOSPC)
		return 1;		/* the next call takes it */
	if (err || copy_to_user(&uev[r->count], &ev, sizeof(ev)))
		return -EFAULT;
	kxfer_reap_consume(kf, tail);
	return 0;
}

/*
 * Copy out up to @r->max ready events and their messages, each taken
 * from the ring once it reached the user; @r->count says how many.
 * Return: 0, %-ENOMEM (none taken) or %-EFAULT (the events before the
 * one that failed are taken).
 */
static int kxfer_reap_take(struct kxfer_file *kf, struct kxfer_reap *r)
{
	void *bounce = NULL;
	u32 msgs_used = 0;
	int ret = 0;

	mutex_lock(&kf->kf_reap_mutex);
	if (r->msgs) {
		bounce = kxfer_file_bounce(kf);
		if (!bounce) {
			ret = -ENOMEM;
			goto out_unlock;
		}
	}
	r->count = 0;
	while (r->count < r->max) {
		ret = kxfer_reap_one(kf, r, bounce, &msgs_used);
		if (ret)
			break;
		r->count++;
	}
	if (ret > 0)
		ret = 0;
out_unlock:
	mutex_unlock(&kf->kf_reap_mutex);
	return ret;
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
	struct kxfer_reap r;
	long ret;
	int err;

	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	ret = kxfer_reap_check(kf, &r);
	if (ret)
		return ret;
	ret = kxfer_reap_wait(kf, &r);

	if (r.flags & KXFER_REAP_WAIT) {
		r.count = kxfer_events_ready(kf);
		if (ret == -EINTR && r.count >= r.min)
			ret = 0;
		if (copy_to_user(uarg, &r, sizeof(r)))
			return -EFAULT;
		return ret;
	}

	/* Copy out, then consume: an event is taken once it reached the user. */
	if (put_user(0U, &((struct kxfer_reap __user *)uarg)->count))
		return -EFAULT;
	err = kxfer_reap_take(kf, &r);
	if (err == -ENOMEM)
		return err;
	/* Events taken are reported, whether a signal or a fault came. */
	if (r.count)
		ret = 0;
	else if (err)
		ret = err;
	if (copy_to_user(uarg, &r, sizeof(r)))
		return -EFAULT;
	return ret;
}

/**
 * kxfer_ioc_ring_setup - KXFER_IOC_RING_SETUP: make the mapped ring
 * @kf: the file
 * @uarg: struct kxfer_ring_setup in user memory
 *
 * Return: 0 or a negative errno.  May sleep.
 */
long kxfer_ioc_ring_setup(struct kxfer_file *kf, void __user *uarg)
{
	size_t evoff = sizeof(struct kxfer_ring);
	struct kxfer_ring_setup rs;
	struct kxfer_ring *shr;
	unsigned long flags;
	size_t len;

	if (copy_from_user(&rs, uarg, sizeof(rs)))
		return -EFAULT;
	if (rs.flags || rs.reserved0 ||
	    !kxfer_zero(rs.reserved, sizeof(rs.reserved)))
		return -EINVAL;

	len = PAGE_ALIGN(evoff + (size_t)kf->kf_ring_size *
			 sizeof(struct kxfer_event));
	mutex_lock(&kf->kf_reap_mutex);
	if (!kf->kf_shr) {
		unsigned int i;

		shr = vmalloc_user(len);
		if (!shr) {
			mutex_unlock(&kf->kf_reap_mutex);
			return -ENOMEM;
		}
		shr->mask = kf->kf_ring_size - 1;
		shr->entries = kf->kf_ring_size;
		shr->events_off = evoff;
		spin_lock_irqsave(&kf->kf_lock, flags);
		kf->kf_shr_ev = (void *)shr + evoff;
		kf->kf_shr_len = len;
		/* The events not yet taken, as if posted now. */
		for (i = kf->kf_tail; i != kf->kf_head; i++) {
			unsigned int slot = i & (kf->kf_ring_size - 1);
			struct kxfer_event *sev = &kf->kf_shr_ev[slot];

			*sev = kf->kf_ring[slot];
			if (sev->type == KXFER_EV_NOTIFY && sev->msg_len)
				sev->msg_off = kf->kf_msgs[slot] ?
					KXFER_MSG_RING : KXFER_MSG_NONE;
		}
		shr->tail = kf->kf_tail;
		WRITE_ONCE(kf->kf_shr, shr);
		kxfer_ring_publish_locked(kf);
		spin_unlock_irqrestore(&kf->kf_lock, flags);
	}
	mutex_unlock(&kf->kf_reap_mutex);

	memset(&rs, 0, sizeof(rs));
	rs.entries = kf->kf_ring_size;
	rs.mmap_offset = KXFER_RING_MMAP_OFFSET;
	rs.mmap_len = len;
	rs.events_off = evoff;
	return copy_to_user(uarg, &rs, sizeof(rs)) ? -EFAULT : 0;
}

/**
 * kxfer_ring_mmap - map the ring (window 0 of the file's mmap space)
 * @kf: the file
 * @vma: the mapping, MAP_SHARED (checked by the caller)
 *
 * Return: 0 or a negative errno.
 */
int kxfer_ring_mmap(struct kxfer_file *kf, struct vm_area_struct *vma)
{
	struct kxfer_ring *shr;
	size_t len;
	unsigned long flags;

	spin_lock_irqsave(&kf->kf_lock, flags);
	shr = kf->kf_shr;
	len = kf->kf_shr_len;
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (!shr)
		return -ENXIO;
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != len)
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* The vma holds the file, so the ring outlives the mapping. */
	return remap_vmalloc_range(vma, shr, 0);
}

/**
 * kxfer_ioc_ring_msg - KXFER_IOC_RING_MSG: the message of a ready event
 * @kf: the file
 * @uarg: struct kxfer_ring_msg in user memory
 *
 * Return: 0 or a negative errno.  May sleep.
 */
long kxfer_ioc_ring_msg(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_ring_msg m;
	unsigned int slot;
	unsigned long flags;
	struct kxfer_event ev;
	void *bounce;
	long ret = 0;

	if (copy_from_user(&m, uarg, sizeof(m)))
		return -EFAULT;
	if (m.flags || !kxfer_zero(m.reserved, sizeof(m.reserved)))
		return -EINVAL;

	mutex_lock(&kf->kf_reap_mutex);
	bounce = kxfer_file_bounce(kf);
	if (!bounce) {
		ret = -ENOMEM;
		goto out;
	}
	spin_lock_irqsave(&kf->kf_lock, flags);
	kxfer_ring_sync_locked(kf);
	slot = m.index & (kf->kf_ring_size - 1);
	ev = kf->kf_ring[slot];
	if (m.index - kf->kf_tail >= kf->kf_head - kf->kf_tail ||
	    ev.type != KXFER_EV_NOTIFY || !ev.msg_len || !kf->kf_msgs[slot] ||
	    ev.msg_len > KXFER_NOTIFY_MSG_MAX) {
		ret = -ENOENT;
	} else {
		m.msg_len = ev.msg_len;
		if (m.len < ev.msg_len)
			ret = -ENOSPC;
		else
			memcpy(bounce, kf->kf_msgs[slot], ev.msg_len);
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	if (ret == -ENOENT)
		goto out;
	if (!ret && copy_to_user(u64_to_user_ptr(m.buf), bounce, m.msg_len))
		ret = -EFAULT;
	else if (copy_to_user(uarg, &m, sizeof(m)))
		ret = -EFAULT;
out:
	mutex_unlock(&kf->kf_reap_mutex);
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
