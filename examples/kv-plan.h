/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kv-plan.h: how many work requests the kernel will make of a job.
 *
 * The module plans every job (kmod/plan.c, DESIGN §4.2): it merges
 * consecutive segments contiguous on both sides, gathers segments
 * contiguous on the remote side into one work request of up to max_sge
 * gather entries, and splits at the stripe size, at the local pool's
 * chunk boundaries and at the remote export's MR boundaries.  kv-plan.c
 * runs that very planner (kmod/plan.c is compiled into the example) on
 * the job's segments, so that kv-prefill can print the plan of each
 * job; the module's own count is in its per-session counters
 * (kxferctl stats show: segs in, wrs out), which examples/demo.sh
 * compares with it.
 */
#ifndef KV_PLAN_H
#define KV_PLAN_H

#include <stdint.h>
#include <linux/kxfer.h>

#define KV_PLAN_MAX_CHUNKS	8

/**
 * struct kv_plan_dev - what the plan depends on besides the segments
 * @max_sge: gather entries per work request: min(max_send_sge, 32)
 *	(kxferctl -j dev show)
 * @stripe: the module's stripe parameter (/sys/module/kxfer/parameters)
 * @mr_span: bytes one export MR covers: min(max_fast_reg_page_list_len,
 *	512) pages; the export starts page-aligned in its pool
 * @chunk_size: the local pool's chunks, largest first, as
 *	kxferctl -j pool show lists them (the pool allocates its chunks
 *	largest first, so the sizes and counts give the layout)
 * @chunk_count: how many chunks of @chunk_size[i]
 * @nchunk_sizes: entries of @chunk_size and @chunk_count
 * @assumed: no plan spec was given: defaults for rxe and a pool of
 *	2 MiB chunks
 */
struct kv_plan_dev {
	uint32_t max_sge;
	uint64_t stripe;
	uint64_t mr_span;
	uint64_t chunk_size[KV_PLAN_MAX_CHUNKS];
	uint32_t chunk_count[KV_PLAN_MAX_CHUNKS];
	unsigned int nchunk_sizes;
	int assumed;
};

/*
 * kv_plan_parse() - fill @d from "max_sge=N stripe=N mr=N
 * chunks=SIZExCOUNT,..." (any subset, any order; NULL for the defaults).
 * Returns 0, or -1 on a malformed spec.
 */
int kv_plan_parse(struct kv_plan_dev *d, const char *spec);

/*
 * kv_plan_count() - the work requests and gather entries the module's
 * planner makes of one job.  Returns 0, or a negative errno from
 * kmod/plan.c.
 */
int kv_plan_count(const struct kv_plan_dev *d,
		  const struct kxfer_segment *segs, unsigned int nsegs,
		  unsigned int *nwr, unsigned int *nsge);

#endif /* KV_PLAN_H */
