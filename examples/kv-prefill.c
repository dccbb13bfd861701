// SPDX-License-Identifier: GPL-2.0-only
/*
 * kv-prefill: the prefill node of seed 003's KV push, on kxfer.
 *
 * The administrator has created this node's KV pool, exported a small
 * inbox in it to the decode node, and connected to the decode node
 * (examples/demo.sh):
 *
 *	kxferctl pool add kv-prefill size 2052K
 *	kxferctl export add kv-inbox pool kv-prefill offset 2M len 4K \
 *		peer decode access write
 *	kxferctl peer add decode 10.99.0.1
 *
 * With --own-memory the KV cache and the inbox are this program's own
 * memory instead: it makes the pool kv-prefill of it and exports the
 * inbox itself, same name, same range (kv-mem.h).  Nothing else changes.
 *
 * For one request, this program
 *   1. learns the decode node's KV export by name: its length and the
 *      access it grants, nothing more (no address, no key),
 *   2. waits for decode's block list in its inbox (a notification says
 *      it is complete),
 *   3. computes the KV layer by layer (here: fills a pattern) and pushes
 *      each layer as soon as it is ready: one WRITE job per layer, whose
 *      segments are the K and V of each block, from this node's blocks
 *      to decode's; the last layer's job carries the notification,
 *   4. reaps the completions and prints how many work requests the
 *      kernel's planner makes of the jobs against one per segment.
 *
 * Usage: kv-prefill [-p PEER] [-P PLAN] [-x ERRNAME]... [-t SEC]
 *                   [-m | --own-memory[=malloc|memfd]]
 *   -p  the decode node's session (default "decode")
 *   -P  what the plan depends on, "max_sge=N stripe=N mr=N
 *       chunks=SIZExCOUNT,..." (see kv-plan.h; default: rxe's limits,
 *       2 MiB chunks; with -m the chunks are this program's 4 KiB pages)
 *   -x  the push is expected to fail with this errno (e.g. ESTALE):
 *       then that failure is success; repeat for "one of these"
 *   -t  seconds to wait for the block list (default 60)
 *   -m, --own-memory  the KV cache is this program's memory:
 *       posix_memalign()ed (malloc, the default) or a memfd
 * It prints "ready" once it waits for the block list.  Exit status: 0
 * the push completed (or failed as -x expected), 1 anything else, 2
 * usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kxfer.h"
#include "kv-demo.h"
#include "kv-mem.h"
#include "kv-plan.h"

/* Blocks other requests hold in this node's cache (bit b: block b). */
#define PREFILL_BUSY	(0x000003ffU | 0xffU << 12)

#define MAX_EXPECT	4

static const char *ename(int err)
{
	const char *s = strerrorname_np(err < 0 ? -err : err);

	return s ? s : "E?";
}

static int fail(const char *what, int err)
{
	printf("prefill: %s: %s (%s)\n", what, ename(err), strerror(-err));
	return 1;
}

/* Why the kernel, or decode's NIC, says no to a push. */
static const char *why(int err)
{
	switch (-err) {
	case ERANGE:
		return "a segment reaches past the end of decode's export; refused before anything was sent";
	case ESTALE:
		return "decode withdrew the export this handle named; refused before anything was sent";
	case EACCES:
		return "decode's NIC refused the invalidated key (the export was withdrawn while this job was on its way); the session reconnects";
	case ENOTCONN:
		return "the session is down";
	default:
		return strerror(-err);
	}
}

/* "Compute" layer @l of the request: its K and V, in our blocks. */
static void compute_layer(uint8_t *pool, const struct kv_blocklist *bl,
			  const uint32_t *mine, unsigned int l)
{
	unsigned int i, kind, t, j;

	for (i = 0; i < bl->nblocks; i++)
		for (kind = 0; kind < 2; kind++)
			for (t = 0; t < kv_block_tokens(bl->tokens, i); t++) {
				uint8_t *p = pool + t * TOKEN_BYTES +
					(kind ? kv_v_off(l, mine[i]) :
						kv_k_off(l, mine[i]));

				for (j = 0; j < TOKEN_BYTES; j++)
					p[j] = kv_pattern(bl->request, l, kind,
							  i * BLOCK_TOKENS + t, j);
			}
}

/*
 * The segments of layer @l: the K of each block, then the V of each
 * block, from our block mine[i] to decode's block bl->blocks[i].  The
 * kernel merges and gathers them; we just say what goes where.
 */
static unsigned int layer_segments(struct kxfer_segment *segs,
				   const struct kv_blocklist *bl,
				   const uint32_t *mine, unsigned int l)
{
	unsigned int i, kind, n = 0;

	for (kind = 0; kind < 2; kind++)
		for (i = 0; i < bl->nblocks; i++) {
			segs[n].local_off = kind ? kv_v_off(l, mine[i]) :
						   kv_k_off(l, mine[i]);
			segs[n].remote_off = kind ? kv_v_off(l, bl->blocks[i]) :
						    kv_k_off(l, bl->blocks[i]);
			segs[n].len = kv_block_tokens(bl->tokens, i) *
				      TOKEN_BYTES;
			n++;
		}
	return n;
}

static const struct option long_opts[] = {
	{ "own-memory",	optional_argument,	NULL, 'm' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	const char *peer_name = "decode", *plan_spec = NULL;
	const char *expect[MAX_EXPECT];
	unsigned int timeout_s = 60, nexpect = 0, l, i;
	unsigned int nsegs_total = 0, nwr_total = 0, nsge_total = 0;
	unsigned int submitted = 0, completed = 0;
	int opt, ret, err = 0, err_layer = LAYERS;
	struct kxfer_segment segs[2 * MAX_REQ_BLOCKS];
	enum kv_mem_kind kind = KV_MEM_POOL;
	struct kxfer_remote_lookup kv;
	uint32_t mine[MAX_REQ_BLOCKS];
	struct kv_mem pool;
	struct kv_blocklist bl;
	struct kv_plan_dev dev;
	struct kxfer_event ev;
	uint64_t bytes = 0;
	uint32_t peer, sub;
	struct kxfer *kx;

	while ((opt = getopt_long(argc, argv, "p:P:x:t:m", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'p':
			peer_name = optarg;
			break;
		case 'P':
			plan_spec = optarg;
			break;
		case 'x':
			if (nexpect == MAX_EXPECT)
				return 2;
			expect[nexpect++] = optarg;
			break;
		case 't':
			timeout_s = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			if (kv_mem_parse(optarg, &kind)) {
				fprintf(stderr, "kv-prefill: --own-memory=malloc or memfd\n");
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (kv_plan_parse(&dev, plan_spec)) {
		fprintf(stderr, "kv-prefill: bad plan spec\n");
		return 2;
	}
	if (kind != KV_MEM_POOL) {
		/* kv-mem.c: each chunk of our own memory is one 4 KiB page */
		dev.chunk_size[0] = 4096;
		dev.chunk_count[0] = UINT32_MAX;
		dev.nchunk_sizes = 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	ret = kxfer_open(&kx);
	if (ret)
		return fail("open /dev/kxfer", ret);
	ret = kv_mem_open(kx, &pool, kind, PREFILL_POOL, POOL_BYTES);
	if (ret)
		return fail(kind == KV_MEM_POOL ? "attach pool " PREFILL_POOL :
			    "make a pool of my memory", ret);
	if (kind != KV_MEM_POOL) {
		/* The inbox, as the administrator would have exported it. */
		ret = kv_mem_export(kx, &pool, KV_INBOX, CTL_OFF, 4096,
				    peer_name);
		if (ret)
			return fail("export " KV_INBOX, ret);
		printf("prefill: my KV cache is %s: %d KiB, pool \"%s\"; inbox exported as \"%s\" to %s, write only\n",
		       kv_mem_what(kind), POOL_BYTES / 1024, PREFILL_POOL,
		       KV_INBOX, peer_name);
	}
	ret = kxfer_notify_subscribe(kx, KV_INBOX, &sub);
	if (ret)
		return fail("subscribe to export " KV_INBOX, ret);

	/* 1. The decode node and its KV export, by name. */
	ret = kxfer_peer_lookup(kx, peer_name, &peer, NULL);
	if (ret)
		return fail("look up peer", ret);
	ret = kxfer_remote_lookup(kx, peer, KV_EXPORT, &kv);
	if (ret)
		return fail("look up export " KV_EXPORT, ret);
	printf("prefill: %s's export \"%s\": %llu bytes, access %s%s (a handle; no address, no key)\n",
	       peer_name, KV_EXPORT, (unsigned long long)kv.len,
	       kv.access & KXFER_ACCESS_READ ? "read," : "",
	       kv.access & KXFER_ACCESS_WRITE ? "write" : "");

	/* 2. Wait for a block list in the inbox. */
	printf("prefill: ready, waiting for a block list\n");
	for (;;) {
		ret = kxfer_reap(kx, &ev, 1, 1, (int64_t)timeout_s * 1000000000,
				 0);
		if (ret < 0)
			return fail("reap", ret);
		if (ret == 0)
			return fail("no block list", -ETIMEDOUT);
		if (ev.type == KXFER_EV_NOTIFY && ev.sub == sub)
			break;
	}
	/* The notification comes after the data: the list is all here. */
	memcpy(&bl, pool.base + CTL_OFF, sizeof(bl));
	if (bl.magic != KV_BLOCKLIST_MAGIC || bl.request != ev.user_data ||
	    !bl.nblocks || bl.nblocks > MAX_REQ_BLOCKS ||
	    bl.tokens > bl.nblocks * BLOCK_TOKENS ||
	    bl.tokens <= (bl.nblocks - 1) * BLOCK_TOKENS)
		return fail("malformed block list", -EBADMSG);
	/*
	 * The block numbers themselves are left to the kernel to check: it
	 * refuses any segment outside the export (-ERANGE), and the demo
	 * shows it.  A service would check them too.
	 */
	if (kv_alloc_blocks(PREFILL_BUSY, bl.nblocks, mine))
		return fail("allocate blocks", -ENOSPC);
	printf("prefill: request %u, %u tokens: my blocks", bl.request,
	       bl.tokens);
	for (i = 0; i < bl.nblocks; i++)
		printf(" %u", mine[i]);
	printf(" -> decode's");
	for (i = 0; i < bl.nblocks; i++)
		printf(" %u", bl.blocks[i]);
	printf("\n");

	/*
	 * 3. Layer by layer: compute, then push at once while the next
	 * layer is computed.  The notification goes with the last job; on
	 * several QPs it orders only that job's data, so the earlier jobs
	 * must have completed (their data is in decode's memory) before
	 * the last one is submitted.
	 */
	for (l = 0; l < LAYERS && !err; l++) {
		unsigned int n = layer_segments(segs, &bl, mine, l);
		unsigned int nwr = 0, nsge = 0, len = 0;
		struct kxfer_job job;

		compute_layer(pool.base, &bl, mine, l);
		kxfer_job_write(&job, pool.handle, peer, kv.handle, segs, n, l);
		if (l == LAYERS - 1) {
			while (completed < submitted && !err) {
				ret = kxfer_reap(kx, &ev, 1, 1, -1, 0);
				if (ret < 0)
					return fail("reap", ret);
				if (ev.type != KXFER_EV_COMPLETION)
					continue;
				completed++;
				bytes += ev.bytes;
				if (ev.status && ev.user_data < (uint64_t)err_layer) {
					err = ev.status;
					err_layer = ev.user_data;
				}
			}
			if (err)
				break;
			job.flags = KXFER_JOB_NOTIFY;
			job.notify_value = bl.request;
		}
		for (i = 0; i < n; i++)
			len += segs[i].len;
		if (kv_plan_count(&dev, segs, n, &nwr, &nsge)) {
			nwr = 0;
			nsge = 0;
		}
		ret = kxfer_submit(kx, &job, 1, NULL);
		if (ret) {
			printf("prefill: layer %u: REFUSED %s: %s\n", l, ename(ret),
			       why(ret));
			err = ret;
			err_layer = l;
			break;
		}
		submitted++;
		nsegs_total += n;
		nwr_total += nwr;
		nsge_total += nsge;
		printf("prefill: layer %u: %2u segments, %6u bytes -> job of %u work requests%s\n",
		       l, n, len, nwr,
		       job.flags & KXFER_JOB_NOTIFY ? ", with the notification" : "");
	}

	/* 4. Every submitted job ends with exactly one completion. */
	while (completed < submitted) {
		ret = kxfer_reap(kx, &ev, 1, 1, -1, 0);
		if (ret < 0)
			return fail("reap", ret);
		if (ev.type != KXFER_EV_COMPLETION)
			continue;
		completed++;
		bytes += ev.bytes;
		if (ev.status) {
			printf("prefill: layer %llu: FAILED %s: %s\n",
			       (unsigned long long)ev.user_data, ename(ev.status),
			       why(ev.status));
			if (ev.user_data < (uint64_t)err_layer) {
				err = ev.status;
				err_layer = ev.user_data;
			}
		}
	}

	if (!err) {
		printf("prefill: pushed %u layers, %" PRIu64 " bytes, %u segments in %u jobs\n",
		       LAYERS, bytes, nsegs_total, submitted);
		printf("prefill: work requests: %u planned (%u gather entries), against %u uncoalesced (one per segment)%s\n",
		       nwr_total, nsge_total, nsegs_total,
		       dev.assumed ? " (assumed device limits)" : "");
		printf("prefill: plan: max_sge %u, stripe %" PRIu64 ", MR span %" PRIu64 "%s (kmod/plan.c rules: merge contiguous-on-both-sides, gather remote-contiguous, split at stripe)\n",
		       dev.max_sge, dev.stripe, dev.mr_span,
		       kind == KV_MEM_POOL ? "" : ", local chunks of 4 KiB (my pages)");
	}
	kv_mem_close(kx, &pool);
	kxfer_close(kx);

	for (i = 0; i < nexpect; i++) {
		if (err && !strcmp(ename(err), expect[i])) {
			printf("prefill: refused as expected (%s); nothing else is affected\n",
			       ename(err));
			return 0;
		}
	}
	if (nexpect) {
		printf("prefill: expected a refusal (%s%s), got %s\n", expect[0],
		       nexpect > 1 ? " or another" : "", err ? ename(err) : "success");
		return 1;
	}
	return err ? 1 : 0;
}
