// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: notifications (DESIGN §4.4).
 *
 * Sending: a NOTIFY job's notification leaves after its data landed,
 * either as a control message once every data WR was acknowledged
 * (kxfer_session_notify_flush) or, for a WRITE whose WRs are all on QP 0,
 * as a WRITE_WITH_IMM with a description on the same QP (kxfer_job_imm);
 * a job over rails with a number the peer delivers once (RAIL_NOTIFY).
 * Receiving: files subscribe to local exports and get one event for each
 * notification a peer's job sends there (kxfer_notify_deliver).
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kxfer.h"
#include "job.h"
#include "trace.h"

/* What a NOTIFY job tells the peer, in either way of sending it. */
void kxfer_job_notify_msg(const struct kxfer_task *job,
			  struct kxfer_msg_notify *n)
{
	memcpy(n->mn_name, job->j_rname, sizeof(n->mn_name));
	n->mn_gen = cpu_to_le64(job->j_rgen);
	n->mn_value = cpu_to_le64(job->j_notify_value);
	n->mn_bytes = cpu_to_le64(job->j_bytes);
}

/* A NOTIFY job's notification reached the peer's NIC. */
void kxfer_job_notified(const struct kxfer_task *job)
{
	atomic64_inc(&job->j_sess->s_stats.notify_sent);
	trace_notify(job->j_sess->s_id, true, job->j_rname,
		     job->j_notify_value, job->j_bytes);
}

/**
 * kxfer_job_sent - a NOTIFY job's notification was sent, or cannot be
 * @job: the job
 * @status: 0 when the peer's NIC acknowledged it, else a negative errno
 *
 * Any context.
 */
void kxfer_job_sent(struct kxfer_task *job, int status)
{
	if (job->j_imm) {
		/* The description of a WRITE_WITH_IMM: one more to wait for. */
		if (status)
			kxfer_job_set_error(job, status, IB_WC_WR_FLUSH_ERR);
		kxfer_job_batches_done(job, 1);
		return;
	}
	if (status)
		kxfer_job_set_error(job, status, IB_WC_WR_FLUSH_ERR);
	else
		kxfer_job_notified(job);
	kxfer_job_post(job);
}

/*
 * A NOTIFY of a job over rails, which a failover may send again: with
 * its number (RAIL_NOTIFY), and its message if it has one.
 */
static void kxfer_job_send_rail(struct kxfer_session *s, struct kxfer_task *job)
{
	struct kxfer_msg_rail_notify *rn;
	size_t len = sizeof(*rn) + job->j_msg_len;

	BUILD_BUG_ON(sizeof(*rn) + KXFER_NOTIFY_MSG_MAX > KXFER_CTRL_MSG_SIZE);
	if (kxfer_rails_notify_stale(job)) {
		kxfer_job_sent(job, -ETIMEDOUT);
		return;
	}
	rn = kzalloc(len, GFP_KERNEL);
	if (!rn) {
		kxfer_job_sent(job, -ENOMEM);
		return;
	}
	kxfer_job_notify_msg(job, &rn->rn_notify);
	rn->rn_seq = cpu_to_le64(kxfer_rails_notify_seq(job));
	rn->rn_len = cpu_to_le16(job->j_msg_len);
	if (job->j_msg_len)
		memcpy(rn->rn_data, job->j_msg, job->j_msg_len);
	kxfer_ctrl_send_job(s, KXFER_MSG_RAIL_NOTIFY, rn->rn_notify.mn_name,
			    len - sizeof(rn->rn_notify.mn_hdr), job);
	kfree(rn);
}

/* A NOTIFY with the job's message; it fits a control message. */
static void kxfer_job_send_msg(struct kxfer_session *s, struct kxfer_task *job)
{
	struct kxfer_msg_notify_msg *nm;
	size_t len = sizeof(*nm) + job->j_msg_len;

	BUILD_BUG_ON(sizeof(*nm) + KXFER_NOTIFY_MSG_MAX > KXFER_CTRL_MSG_SIZE);
	nm = kzalloc(len, GFP_KERNEL);
	if (!nm) {
		kxfer_job_sent(job, -ENOMEM);
		return;
	}
	kxfer_job_notify_msg(job, &nm->nm_notify);
	nm->nm_len = cpu_to_le16(job->j_msg_len);
	memcpy(nm->nm_data, job->j_msg, job->j_msg_len);
	kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY_MSG, nm->nm_notify.mn_name,
			    len - sizeof(nm->nm_notify.mn_hdr), job);
	kfree(nm);
}

/**
 * kxfer_session_notify_flush - send the notifications of landed jobs
 * @s: the session
 *
 * Caller holds s_mutex.
 */
void kxfer_session_notify_flush(struct kxfer_session *s)
{
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&s->s_lock, flags);
	list_splice_tail_init(&s->s_notifyq, &list);
	spin_unlock_irqrestore(&s->s_lock, flags);

	list_for_each_entry_safe(job, tmp, &list, j_notify_node) {
		struct kxfer_msg_notify n = {};

		list_del_init(&job->j_notify_node);
		if (!s->s_ctrl_up) {
			kxfer_job_sent(job, -ECONNRESET);
			continue;
		}
		/* An acceptor without rails never gave a token: one rail. */
		if (job->j_rails && (s->s_peer_features & KXFER_WIRE_F_RAILS)) {
			kxfer_job_send_rail(s, job);
			continue;
		}
		if (job->j_msg) {
			kxfer_job_send_msg(s, job);
			continue;
		}
		kxfer_job_notify_msg(job, &n);
		kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY, n.mn_name,
				    sizeof(n) - sizeof(n.mn_hdr), job);
	}
}

/**
 * kxfer_session_notify_fail - end the NOTIFY jobs that never sent
 * @s: the session, torn down
 *
 * Caller holds s_mutex.
 */
void kxfer_session_notify_fail(struct kxfer_session *s)
{
	struct kxfer_task *job, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&s->s_lock, flags);
	list_splice_tail_init(&s->s_notifyq, &list);
	spin_unlock_irqrestore(&s->s_lock, flags);
	list_for_each_entry_safe(job, tmp, &list, j_notify_node) {
		list_del_init(&job->j_notify_node);
		kxfer_job_sent(job, -ECONNRESET);
	}
}

/*
 * A NOTIFY WRITE whose WRs are all on QP 0: its last WR becomes a
 * WRITE_WITH_IMM carrying a token, and a NOTIFY_DESC message on the same
 * QP tells the receiver what the token notifies (see wire.h).  The
 * receiver's completion of the WRITE_WITH_IMM comes after every earlier
 * WRITE of the QP was placed, so no acknowledgment needs to come back
 * before the notification leaves, unlike kxfer_job_finish()'s way.  The
 * WRITE_WITH_IMM consumes one of the peer's control receives: it takes
 * a control credit.  Without a credit to spare, or with
 * KXFER_NOTIFY_IMM_MAX tokens outstanding, the job notifies the other
 * way.  Caller holds s_mutex; the job is not posted yet.
 */
void kxfer_job_imm(struct kxfer_task *job)
{
	struct kxfer_session *s = job->j_sess;
	struct kxfer_job_part *p = &job->j_parts[0];
	struct kxfer_msg_notify_desc nd = {};
	struct ib_rdma_wr *last;
	unsigned long flags;
	u32 token, i;

	lockdep_assert_held(&s->s_mutex);
	/* A job over rails notifies with a number (kxfer_job_send_rail()). */
	if (!job->j_notify || job->j_msg || job->j_rails ||
	    job->j_op != KXFER_OP_WRITE || !job->j_nparts || !p->p_nwr)
		return;
	/* Only QP 0 has receives posted: every WR must be on it. */
	for (i = 1; i < job->j_nparts; i++)
		if (job->j_parts[i].p_nwr)
			return;
	spin_lock_irqsave(&s->s_lock, flags);
	if (!s->s_ctrl_up || s->s_imm_outstanding >= KXFER_NOTIFY_IMM_MAX ||
	    s->s_credits < 3) {
		spin_unlock_irqrestore(&s->s_lock, flags);
		return;
	}
	s->s_credits--;
	s->s_imm_outstanding++;
	token = ++s->s_imm_token;
	spin_unlock_irqrestore(&s->s_lock, flags);

	last = &p->p_wrs[p->p_nwr - 1];
	last->wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	last->wr.ex.imm_data = cpu_to_be32(token);
	job->j_imm = true;
	atomic_inc(&job->j_left);		/* the description */

	kxfer_job_notify_msg(job, &nd.nd_notify);
	nd.nd_token = cpu_to_le32(token);
	kxfer_ctrl_send_job(s, KXFER_MSG_NOTIFY_DESC, nd.nd_notify.mn_name,
			    sizeof(nd) - sizeof(nd.nd_notify.mn_hdr), job);
	kxfer_ctrl_flush(s);
}

/* A notification subscription of a file to a local export. */
struct kxfer_sub {
	struct list_head	sb_node;	/* on kxfer_subs */
	char			sb_export[KXFER_NAME_MAX];
	struct kxfer_file	*sb_file;	/* referenced */
	u32			sb_handle;
};

static LIST_HEAD(kxfer_subs);
static DEFINE_MUTEX(kxfer_sub_mutex);	/* protects kxfer_subs */

/**
 * kxfer_notify_deliver - a peer's NOTIFY job landed in a local export
 * @s: the session it came over
 * @export: the local export's name (checked by wire.c)
 * @value: the job's notify value
 * @bytes: the job's bytes
 * @msg: the job's message (checked by wire.c), or %NULL
 * @msg_len: its bytes
 *
 * One event to each file subscribed to @export, each with its own copy
 * of @msg (a subscriber without memory for it gets the event without it).
 * Caller holds s_mutex.
 */
void kxfer_notify_deliver(struct kxfer_session *s, const char *export,
			  u64 value, u64 bytes, const void *msg, u32 msg_len)
{
	struct kxfer_event ev = {
		.type = KXFER_EV_NOTIFY,
		.user_data = value,
		.bytes = bytes,
		.peer = kxfer_peer_id(s),
		.msg_len = msg_len,
	};
	struct kxfer_sub *sb;

	atomic64_inc(&s->s_stats.notify_recv);
	trace_notify(s->s_id, false, export, value, bytes);
	mutex_lock(&kxfer_sub_mutex);
	list_for_each_entry(sb, &kxfer_subs, sb_node) {
		void *copy = NULL;

		if (strcmp(sb->sb_export, export))
			continue;
		ev.sub = sb->sb_handle;
		if (msg_len) {
			copy = kmemdup(msg, msg_len, GFP_KERNEL);
			ev.msg_off = copy ? 0 : KXFER_MSG_NONE;
		}
		kxfer_file_post_note(sb->sb_file, &ev, copy);
	}
	mutex_unlock(&kxfer_sub_mutex);
}

/**
 * kxfer_sub_alloc - a subscription of a file to an export, not yet live
 * @kf: the file, which the subscription holds
 * @name: the export's name
 *
 * Return: the subscription, for kxfer_sub_install() or kxfer_sub_free(),
 * or %NULL without memory.  May sleep.
 */
struct kxfer_sub *kxfer_sub_alloc(struct kxfer_file *kf, const char *name)
{
	struct kxfer_sub *sb = kzalloc(sizeof(*sb), GFP_KERNEL);

	if (!sb)
		return NULL;
	strscpy(sb->sb_export, name, sizeof(sb->sb_export));
	kref_get(&kf->kf_ref);
	sb->sb_file = kf;
	return sb;
}

/**
 * kxfer_sub_free - free a subscription that was never installed
 * @sb: from kxfer_sub_alloc()
 */
void kxfer_sub_free(struct kxfer_sub *sb)
{
	kxfer_file_put(sb->sb_file);
	kfree(sb);
}

/**
 * kxfer_sub_install - give a subscription its handle and make it live
 * @sb: from kxfer_sub_alloc(); on failure it stays the caller's
 * @handle: its handle, out
 *
 * From here it gets the export's notifications and its file owns it.
 * Called under kxfer_obj_mutex when it must be live before an export is
 * (kxfer_export_create()).
 *
 * Return: 0, %-EMFILE or %-ENOMEM.  May sleep.
 */
int kxfer_sub_install(struct kxfer_sub *sb, u32 *handle)
{
	struct kxfer_file *kf = sb->sb_file;
	int ret;

	/*
	 * Complete before the handle is visible: another thread may
	 * UNSUBSCRIBE it (by guessing) the moment xa_alloc() returns, and
	 * kxfer_sub_destroy() takes kxfer_sub_mutex, held here until the
	 * subscription is on the list.
	 */
	mutex_lock(&kxfer_sub_mutex);
	ret = xa_alloc(&kf->kf_subs, handle, sb, XA_LIMIT(1, 4096),
		       GFP_KERNEL);
	if (ret) {
		mutex_unlock(&kxfer_sub_mutex);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	sb->sb_handle = *handle;
	list_add_tail(&sb->sb_node, &kxfer_subs);
	mutex_unlock(&kxfer_sub_mutex);
	return 0;
}

/**
 * kxfer_ioc_notify_sub - KXFER_IOC_NOTIFY_SUBSCRIBE
 * @kf: the file
 * @uarg: struct kxfer_notify_sub in user memory
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT (no such export), %-EACCES (the
 * caller may not attach the export's pool), %-EMFILE.  May sleep.
 */
long kxfer_ioc_notify_sub(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_notify_sub ns;
	struct kxfer_export *exp;
	struct kxfer_sub *sb;
	u32 handle;
	int ret;

	if (copy_from_user(&ns, uarg, sizeof(ns)))
		return -EFAULT;
	if (ns.flags || !kxfer_zero(ns.reserved, sizeof(ns.reserved)) ||
	    !ns.name[0] || !memchr(ns.name, '\0', sizeof(ns.name)))
		return -EINVAL;

	mutex_lock(&kxfer_obj_mutex);
	ret = -ENOENT;
	list_for_each_entry(exp, &kxfer_exports, ke_node) {
		if (strcmp(exp->ke_name, ns.name))
			continue;
		ret = kxfer_pool_check_access(exp->ke_pool);
		break;
	}
	mutex_unlock(&kxfer_obj_mutex);
	if (ret)
		return ret;

	sb = kxfer_sub_alloc(kf, ns.name);
	if (!sb)
		return -ENOMEM;
	ret = kxfer_sub_install(sb, &handle);
	if (ret) {
		kxfer_sub_free(sb);
		return ret;
	}

	ns.handle = handle;
	if (copy_to_user(uarg, &ns, sizeof(ns)))
		return -EFAULT;	/* subscribed all the same; close() ends it */
	return 0;
}

static void kxfer_sub_destroy(struct kxfer_sub *sb)
{
	mutex_lock(&kxfer_sub_mutex);
	list_del(&sb->sb_node);
	mutex_unlock(&kxfer_sub_mutex);
	kxfer_file_put(sb->sb_file);
	kfree(sb);
}

/**
 * kxfer_ioc_notify_unsub - KXFER_IOC_NOTIFY_UNSUBSCRIBE
 * @kf: the file
 * @uarg: struct kxfer_notify_sub in user memory (handle, flags, reserved)
 *
 * Return: 0, %-EINVAL, %-EFAULT, %-ENOENT.  May sleep.
 */
long kxfer_ioc_notify_unsub(struct kxfer_file *kf, void __user *uarg)
{
	struct kxfer_notify_sub ns;
	struct kxfer_sub *sb;

	if (copy_from_user(&ns, uarg, sizeof(ns)))
		return -EFAULT;
	if (ns.flags || !kxfer_zero(ns.reserved, sizeof(ns.reserved)))
		return -EINVAL;
	sb = ns.handle ? xa_erase(&kf->kf_subs, ns.handle) : NULL;
	if (!sb)
		return -ENOENT;
	kxfer_sub_destroy(sb);
	return 0;
}

/**
 * kxfer_file_drop_subs - end every subscription of a file (close)
 * @kf: the file
 */
void kxfer_file_drop_subs(struct kxfer_file *kf)
{
	struct kxfer_sub *sb;
	unsigned long h;

	xa_for_each(&kf->kf_subs, h, sb) {
		xa_erase(&kf->kf_subs, h);
		kxfer_sub_destroy(sb);
	}
}
