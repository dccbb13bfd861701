// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: FENCE, per file and session (DESIGN §4.3).
 *
 * A gate counts a file's jobs to one session from submission to event.
 * A FENCE job waits until the count is zero; every job submitted behind
 * a waiting one waits too, in order, and starts from the gate's work.
 */
#include <linux/slab.h>

#include "kxfer.h"
#include "job.h"

/*
 * Start the jobs that waited behind a FENCE, in order, up to the next
 * FENCE that still has jobs ahead of it.  A job built for an earlier
 * connection of the session (other keys, other PD), or for an export
 * since withdrawn, ends in error instead; one of a peer over several
 * rails is posted again on another rail (rail.c).
 */
static void kxfer_gate_work(struct work_struct *work)
{
	struct kxfer_gate *g = container_of(work, struct kxfer_gate, g_work);
	struct kxfer_file *kf = g->g_file;
	struct kxfer_session *s = NULL;
	struct kxfer_rexport *rx;
	struct kxfer_task *job;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&kf->kf_lock, flags);
		job = list_first_entry_or_null(&g->g_held, struct kxfer_task,
					       j_held_node);
		if (job && job->j_fence && g->g_inflight)
			job = NULL;
		if (job) {
			list_del_init(&job->j_held_node);
			g->g_inflight++;
		}
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		if (!job)
			break;

		/* The gate's session, or the rail of it the job was built for */
		if (s != job->j_sess) {
			if (s) {
				mutex_unlock(&s->s_mutex);
				kxfer_session_put(s);
			}
			/* The job may end, and drop its own, once started. */
			s = job->j_sess;
			kxfer_session_get(s);
			mutex_lock(&s->s_mutex);
		}
		if (s->s_state != KXFER_PEER_UP ||
		    s->s_conn_gen != job->j_conn_gen) {
			kxfer_job_abort(job, -ECONNRESET);
			continue;
		}
		rx = kxfer_rexport_find(s, job->j_rname);
		if (!rx || rx->rx_gen != job->j_rgen) {
			kxfer_job_abort(job, -ESTALE);
			continue;
		}
		kxfer_job_start(job, rx, NULL);
	}
	if (s) {
		mutex_unlock(&s->s_mutex);
		kxfer_session_put(s);
	}
	kxfer_file_put(kf);
}

static struct kxfer_gate *kxfer_gate_find(struct kxfer_file *kf,
					  struct kxfer_session *s)
{
	struct kxfer_gate *g;

	lockdep_assert_held(&kf->kf_lock);
	list_for_each_entry(g, &kf->kf_gates, g_node)
		if (g->g_sess == s)
			return g;
	return NULL;
}

/*
 * The file's gate for a session, made on first use, with one more SUBMIT
 * (@busy) or peer handle on it.  May sleep.
 */
static struct kxfer_gate *kxfer_gate_use(struct kxfer_file *kf,
					 struct kxfer_session *s, bool busy)
{
	struct kxfer_gate *g, *new = NULL;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&kf->kf_lock, flags);
		/* Another thread of the file may have made it meanwhile. */
		g = kxfer_gate_find(kf, s);
		if (!g && new) {
			g = new;
			new = NULL;
			g->g_file = kf;
			g->g_sess = s;
			kxfer_session_get(s);
			INIT_LIST_HEAD(&g->g_held);
			INIT_WORK(&g->g_work, kxfer_gate_work);
			list_add(&g->g_node, &kf->kf_gates);
			if (s->s_poll)
				kxfer_file_set_poll_locked(kf);
		}
		if (g) {
			if (busy)
				g->g_busy++;
			else
				g->g_handles++;
		}
		spin_unlock_irqrestore(&kf->kf_lock, flags);
		if (g || new)
			break;
		new = kzalloc(sizeof(*new), GFP_KERNEL);
		if (!new)
			return NULL;
	}
	kfree(new);
	return g;
}

/*
 * Free the gates of the file that nothing uses any more: no peer handle,
 * no SUBMIT, no job in flight or held.  A gate's work is only queued for
 * held jobs, but one may still be queued or ending: cancelled, or waited
 * for, before the gate goes.  May sleep.
 */
static void kxfer_gates_gc(struct kxfer_file *kf)
{
	struct kxfer_gate *g, *tmp;
	unsigned long flags;
	LIST_HEAD(idle);

	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry_safe(g, tmp, &kf->kf_gates, g_node)
		if (!g->g_handles && !g->g_busy && !g->g_inflight &&
		    list_empty(&g->g_held))
			list_move(&g->g_node, &idle);
	spin_unlock_irqrestore(&kf->kf_lock, flags);

	list_for_each_entry_safe(g, tmp, &idle, g_node) {
		/* A queued work holds the file: its hold goes with it. */
		if (cancel_work_sync(&g->g_work))
			kxfer_file_put(kf);
		kxfer_session_put(g->g_sess);
		kfree(g);
	}
}

/**
 * kxfer_gate_get - the file's gate for a session, for a SUBMIT
 * @kf: the file
 * @s: the session, referenced by the caller
 *
 * The gate stays until kxfer_gate_unbusy().  May sleep.
 *
 * Return: the gate, or %NULL without memory.
 */
struct kxfer_gate *kxfer_gate_get(struct kxfer_file *kf,
				  struct kxfer_session *s)
{
	return kxfer_gate_use(kf, s, true);
}

/**
 * kxfer_gate_unbusy_locked - a SUBMIT is done with its gate
 * @g: the gate from kxfer_gate_get()
 *
 * Caller holds kf_lock.
 */
void kxfer_gate_unbusy_locked(struct kxfer_gate *g)
{
	lockdep_assert_held(&g->g_file->kf_lock);
	g->g_busy--;
}

/**
 * kxfer_gate_unbusy - a SUBMIT is done with its gate, without kf_lock
 * @kf: the file
 * @g: the gate from kxfer_gate_get()
 */
void kxfer_gate_unbusy(struct kxfer_file *kf, struct kxfer_gate *g)
{
	unsigned long flags;

	spin_lock_irqsave(&kf->kf_lock, flags);
	kxfer_gate_unbusy_locked(g);
	spin_unlock_irqrestore(&kf->kf_lock, flags);
}

/**
 * kxfer_gate_hold - a peer handle of the file names a session
 * @kf: the file
 * @s: the session, referenced by the caller
 *
 * Gates the file no longer uses go first.  May sleep.
 *
 * Return: 0 or %-ENOMEM.
 */
int kxfer_gate_hold(struct kxfer_file *kf, struct kxfer_session *s)
{
	kxfer_gates_gc(kf);
	return kxfer_gate_use(kf, s, false) ? 0 : -ENOMEM;
}

/**
 * kxfer_gate_unhold - a peer handle of the file on a session went
 * @kf: the file
 * @s: the session
 *
 * Its gate goes if nothing else uses it.  May sleep.
 */
void kxfer_gate_unhold(struct kxfer_file *kf, struct kxfer_session *s)
{
	struct kxfer_gate *g;
	unsigned long flags;

	spin_lock_irqsave(&kf->kf_lock, flags);
	g = kxfer_gate_find(kf, s);
	if (!WARN_ON_ONCE(!g || !g->g_handles))
		g->g_handles--;
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	kxfer_gates_gc(kf);
}

/**
 * kxfer_file_free_gates - free a file's FENCE state
 * @kf: the file, its last reference gone (no job, no gate work left)
 */
void kxfer_file_free_gates(struct kxfer_file *kf)
{
	struct kxfer_gate *g, *tmp;

	list_for_each_entry_safe(g, tmp, &kf->kf_gates, g_node) {
		WARN_ON_ONCE(g->g_inflight || g->g_busy ||
			     !list_empty(&g->g_held));
		kxfer_session_put(g->g_sess);
		kfree(g);
	}
}
