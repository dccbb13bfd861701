/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kxfer tracepoints: /sys/kernel/tracing/events/kxfer/.
 *
 * Jobs are named by the peer's id (KXFER_A_PEER_ID) and their user_data,
 * as the submitting service knows them; no kernel address is recorded.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kxfer

#if !defined(_KXFER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KXFER_TRACE_H

#include <linux/tracepoint.h>
#include <linux/kxfer.h>

TRACE_EVENT(job_submit,
	TP_PROTO(u32 peer, u64 user_data, u32 op, u32 flags, u32 nsegs,
		 u32 nwr, u32 nqps, u64 bytes),
	TP_ARGS(peer, user_data, op, flags, nsegs, nwr, nqps, bytes),
	TP_STRUCT__entry(
		__field(u32, peer)
		__field(u64, user_data)
		__field(u32, op)
		__field(u32, flags)
		__field(u32, nsegs)
		__field(u32, nwr)
		__field(u32, nqps)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->peer = peer;
		__entry->user_data = user_data;
		__entry->op = op;
		__entry->flags = flags;
		__entry->nsegs = nsegs;
		__entry->nwr = nwr;
		__entry->nqps = nqps;
		__entry->bytes = bytes;
	),
	TP_printk("peer=%u user_data=0x%llx op=%u flags=0x%x segs=%u wrs=%u qps=%u bytes=%llu",
		  __entry->peer, __entry->user_data, __entry->op,
		  __entry->flags, __entry->nsegs, __entry->nwr, __entry->nqps,
		  __entry->bytes)
);

TRACE_EVENT(job_complete,
	TP_PROTO(u32 peer, u64 user_data, int status, u32 wc_status,
		 u64 bytes),
	TP_ARGS(peer, user_data, status, wc_status, bytes),
	TP_STRUCT__entry(
		__field(u32, peer)
		__field(u64, user_data)
		__field(int, status)
		__field(u32, wc_status)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->peer = peer;
		__entry->user_data = user_data;
		__entry->status = status;
		__entry->wc_status = wc_status;
		__entry->bytes = bytes;
	),
	TP_printk("peer=%u user_data=0x%llx status=%d wc_status=%u bytes=%llu",
		  __entry->peer, __entry->user_data, __entry->status,
		  __entry->wc_status, __entry->bytes)
);

TRACE_EVENT(wr_error,
	TP_PROTO(u32 peer, u32 qp, u32 wc_status, u32 vendor_err),
	TP_ARGS(peer, qp, wc_status, vendor_err),
	TP_STRUCT__entry(
		__field(u32, peer)
		__field(u32, qp)
		__field(u32, wc_status)
		__field(u32, vendor_err)
	),
	TP_fast_assign(
		__entry->peer = peer;
		__entry->qp = qp;
		__entry->wc_status = wc_status;
		__entry->vendor_err = vendor_err;
	),
	TP_printk("peer=%u qp=%u wc_status=%u vendor_err=0x%x",
		  __entry->peer, __entry->qp, __entry->wc_status,
		  __entry->vendor_err)
);

/* @sent: 1 when a local job's notification was acknowledged, 0 on arrival */
TRACE_EVENT(notify,
	TP_PROTO(u32 peer, bool sent, const char *export, u64 value,
		 u64 bytes),
	TP_ARGS(peer, sent, export, value, bytes),
	TP_STRUCT__entry(
		__field(u32, peer)
		__field(bool, sent)
		__array(char, export, KXFER_NAME_MAX)
		__field(u64, value)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->peer = peer;
		__entry->sent = sent;
		strscpy(__entry->export, export, KXFER_NAME_MAX);
		__entry->value = value;
		__entry->bytes = bytes;
	),
	TP_printk("peer=%u %s export=%s value=0x%llx bytes=%llu",
		  __entry->peer, __entry->sent ? "sent" : "received",
		  __entry->export, __entry->value, __entry->bytes)
);

#endif /* _KXFER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
