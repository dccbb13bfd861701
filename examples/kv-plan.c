// SPDX-License-Identifier: GPL-2.0-only
/*
 * kv-plan.c: the module's job planner run in userspace (see kv-plan.h).
 *
 * kmod/plan.c is pure C; selftests/host/kernel_shim.h gives it the few
 * kernel types it needs, as for its host unit tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_shim.h"
#include "plan.h"
#include "kv-plan.h"

int kv_plan_parse(struct kv_plan_dev *d, const char *spec)
{
	char *copy, *tok, *save = NULL, *c, *save2 = NULL;
	int ret = 0;

	memset(d, 0, sizeof(*d));
	d->max_sge = 32;		/* rxe's max_send_sge */
	d->stripe = 1 << 20;		/* the module's default */
	d->mr_span = 512 * 4096;
	d->chunk_size[0] = 2 << 20;	/* the largest chunk a pool uses */
	d->chunk_count[0] = UINT32_MAX;
	d->nchunk_sizes = 1;
	d->assumed = !spec || !spec[0];
	if (d->assumed)
		return 0;

	copy = strdup(spec);
	if (!copy)
		return -1;
	for (tok = strtok_r(copy, " ", &save); tok && !ret;
	     tok = strtok_r(NULL, " ", &save)) {
		if (!strncmp(tok, "max_sge=", 8)) {
			d->max_sge = strtoul(tok + 8, NULL, 0);
		} else if (!strncmp(tok, "stripe=", 7)) {
			d->stripe = strtoull(tok + 7, NULL, 0);
		} else if (!strncmp(tok, "mr=", 3)) {
			d->mr_span = strtoull(tok + 3, NULL, 0);
		} else if (!strncmp(tok, "chunks=", 7)) {
			d->nchunk_sizes = 0;
			for (c = strtok_r(tok + 7, ",", &save2); c;
			     c = strtok_r(NULL, ",", &save2)) {
				unsigned int i = d->nchunk_sizes;
				char *x;

				if (i == KV_PLAN_MAX_CHUNKS)
					break;
				d->chunk_size[i] = strtoull(c, &x, 0);
				if (*x != 'x' || !d->chunk_size[i]) {
					ret = -1;
					break;
				}
				d->chunk_count[i] = strtoul(x + 1, NULL, 0);
				d->nchunk_sizes++;
			}
		} else {
			ret = -1;
		}
	}
	if (!d->max_sge || !d->stripe || !d->mr_span || !d->nchunk_sizes)
		ret = -1;
	free(copy);
	return ret;
}

/* Bytes from @off to the end of its local chunk. */
static u64 plan_local_run(void *ctx, u64 off)
{
	const struct kv_plan_dev *d = ctx;
	u64 start = 0;
	unsigned int i;

	for (i = 0; i < d->nchunk_sizes; i++) {
		u64 span = d->chunk_size[i] * d->chunk_count[i];

		/* a count of UINT32_MAX: the rest of the pool */
		if (d->chunk_count[i] == UINT32_MAX || off - start < span)
			return d->chunk_size[i] -
			       (off - start) % d->chunk_size[i];
		start += span;
	}
	return 0;	/* past the pool: the planner refuses */
}

/* Bytes from @off to the end of its remote MR. */
static u64 plan_remote_run(void *ctx, u64 off)
{
	const struct kv_plan_dev *d = ctx;

	return d->mr_span - off % d->mr_span;
}

int kv_plan_count(const struct kv_plan_dev *d,
		  const struct kxfer_segment *segs, unsigned int nsegs,
		  unsigned int *nwr, unsigned int *nsge)
{
	struct kxfer_plan p = {
		.max_sge = d->max_sge,
		.stripe = d->stripe,
		.local_run = plan_local_run,
		.remote_run = plan_remote_run,
		.ctx = (void *)d,
	};
	const struct kxfer_plan_seg *order;
	struct kxfer_plan_scratch *sc;
	struct kxfer_plan_seg *ps;
	unsigned int i;
	bool overlap;
	int ret;

	ps = calloc(nsegs, sizeof(*ps));
	sc = malloc(sizeof(*sc) + 2 * (size_t)nsegs * sizeof(sc->segs[0]));
	if (!ps || !sc) {
		free(ps);
		free(sc);
		return -ENOMEM;
	}
	for (i = 0; i < nsegs; i++) {
		ps[i].local_off = segs[i].local_off;
		ps[i].remote_off = segs[i].remote_off;
		ps[i].len = segs[i].len;
	}
	/* A WRITE: in remote order unless the remote ranges overlap. */
	order = kxfer_plan_order(ps, nsegs, false, sc, &overlap);
	ret = kxfer_plan_count(&p, order, nsegs);
	free(ps);
	free(sc);
	if (ret)
		return ret;
	*nwr = p.nwr;
	*nsge = p.nsge;
	return 0;
}
