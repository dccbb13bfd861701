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
 * since withdrawn, ends in error instead.
 */
static void kxfer_gate_work(struct work_struct *work)
{
	struct kxfer_gate *g = container_of(work, struct kxfer_gate, g_work);
	struct kxfer_file *kf = g->g_file;
	struct kxfer_session *s = g->g_sess;
	struct kxfer_rexport *rx;
	struct kxfer_task *job;
	unsigned long flags;

	mutex_lock(&s->s_mutex);
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
		kxfer_job_start(job, NULL);
	}
	mutex_unlock(&s->s_mutex);
	kxfer_file_put(kf);
}

/* The file's gate for a session, made on first use.  May sleep. */
struct kxfer_gate *kxfer_gate_get(struct kxfer_file *kf,
				  struct kxfer_session *s)
{
	struct kxfer_gate *g, *new;
	unsigned long flags;

	/* Gates live as long as the file: allocate on first use only. */
	spin_lock_irqsave(&kf->kf_lock, flags);
	list_for_each_entry(g, &kf->kf_gates, g_node) {
		if (g->g_sess == s) {
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			return g;
		}
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	spin_lock_irqsave(&kf->kf_lock, flags);
	/* Another thread of the file may have made it meanwhile. */
	list_for_each_entry(g, &kf->kf_gates, g_node) {
		if (g->g_sess == s) {
			spin_unlock_irqrestore(&kf->kf_lock, flags);
			kfree(new);
			return g;
		}
	}
	if (new) {
		new->g_file = kf;
		new->g_sess = s;
		kxfer_session_get(s);
		INIT_LIST_HEAD(&new->g_held);
		INIT_WORK(&new->g_work, kxfer_gate_work);
		list_add(&new->g_node, &kf->kf_gates);
		if (s->s_poll)
			kxfer_file_set_poll_locked(kf);
	}
	spin_unlock_irqrestore(&kf->kf_lock, flags);
	return new;
}

/**
 * kxfer_file_free_gates - free a file's FENCE state
 * @kf: the file, its last reference gone (no job, no gate work left)
 */
void kxfer_file_free_gates(struct kxfer_file *kf)
{
	struct kxfer_gate *g, *tmp;

	list_for_each_entry_safe(g, tmp, &kf->kf_gates, g_node) {
		WARN_ON_ONCE(g->g_inflight || !list_empty(&g->g_held));
		kxfer_session_put(g->g_sess);
		kfree(g);
	}
}
