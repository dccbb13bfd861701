// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kv-decode: the decode node of seed 003's KV push, on kxfer.
 *
 * The administrator has created the KV pool and exported its KV area to
 * the prefill node, write only (examples/demo.sh):
 *
 *	kxferctl pool add kv-decode size 2052K
 *	kxferctl export add kv pool kv-decode len 2M peer prefill access write
 *
 * With --own-memory (or --udmabuf) the KV cache is this program's own
 * memory instead, as an inference engine's is: it allocates it, makes
 * the pool kv-decode of it and exports its KV area as "kv" itself, the
 * same name and access, so that prefill sees no difference (kv-mem.h).
 * Both go when the program ends.
 *
 * For one request, this program
 *   1. allocates blocks of its KV cache for the request's tokens,
 *   2. hands the block list to the prefill node: it WRITEs it into the
 *      prefill node's inbox export with a notification (kxfer itself is
 *      the control channel),
 *   3. waits for the notification of prefill's last layer, which comes
 *      only after every byte of the request has landed in its pool,
 *   4. checks every byte: the request's tokens hold what prefill
 *      computed, and nothing else in the pool changed.
 *
 * The CPU of this node does nothing while the KV arrives: one-sided
 * writes, one notification at the end.
 *
 * Usage: kv-decode [-p PEER] [-r REQUEST] [-n TOKENS] [-s] [-b] [-t SEC]
 *                  [-m | --own-memory[=malloc|memfd] | -u | --udmabuf] [-w]
 *   -p  the prefill node's session (default "prefill")
 *   -r  request id, > 0 (default 1)
 *   -n  tokens of the request's prompt (default 100)
 *   -s  send the block list only, do not wait for the KV
 *   -b  a buggy block list: its last block is far past the export's end
 *       (implies -s: prefill's kernel refuses the push)
 *   -t  seconds to wait for the go (-w) and for the KV (default 30)
 *   -m, --own-memory  the KV cache is this program's memory:
 *       posix_memalign()ed (malloc, the default) or a memfd
 *   -u, --udmabuf  the KV cache is a udmabuf over a memfd, registered as
 *       a dma-buf and checked through the memfd's mapping (a kernel with
 *       /dev/udmabuf)
 *   -w  once exported, wait for a line on standard input before handing
 *       the block list over (end of file gives up).  With its own memory
 *       kv-decode must export before kv-prefill starts, and hand the
 *       list over only once kv-prefill waits: start kv-decode -m -w,
 *       then kv-prefill -m, then press Enter (the demo writes the line)
 * It prints "decode: exported" once its own memory is exported.  Exit
 * status: 0 the KV landed and checked (or, with -s, the block list was
 * delivered), 1 anything else, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kxfer.h"
#include "kv-demo.h"
#include "kv-mem.h"

/* Blocks other requests hold in this node's cache (bit b: block b). */
#define DECODE_BUSY	(0x0000000fU | 1U << 8 | 0x3ffU << 10)

#define BLOCKLIST_JOB	1	/* user_data of the block list's job */
#define BAD_BLOCK	4096	/* -b: 16 MiB into an export of 2 MiB */

static const char *ename(int err)
{
	const char *s = strerrorname_np(err < 0 ? -err : err);

	return s ? s : "E?";
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *what, int err)
{
	printf("decode: %s: %s (%s)\n", what, ename(err), strerror(-err));
	return 1;
}

/*
 * -w: wait up to @timeout_s for a line on standard input.  Returns 0, or
 * -ETIMEDOUT, or -EPIPE at end of file.
 */
static int wait_go(unsigned int timeout_s)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char line[64];
	int n;

	printf("decode: waiting for the go on standard input\n");
	n = poll(&p, 1, timeout_s * 1000);
	if (n < 0)
		return -errno;
	if (!n)
		return -ETIMEDOUT;
	if (!fgets(line, sizeof(line), stdin))
		return -EPIPE;
	return 0;
}

/*
 * The prefill node's inbox, by name.  An export a process made shortly
 * before may not have been advertised to this node yet: retry for a few
 * seconds while it is unknown.
 */
static int inbox_lookup(struct kxfer *kx, uint32_t peer,
			struct kxfer_remote_lookup *inbox)
{
	double deadline = now_ms() + 10e3;
	int ret;

	for (;;) {
		ret = kxfer_remote_lookup(kx, peer, KV_INBOX, inbox);
		if (ret != -ENOENT || now_ms() >= deadline)
			return ret;
		usleep(20000);
	}
}

/* One character per block: '.' untouched, the request's letter if used. */
static void print_map(const struct kv_blocklist *bl)
{
	char row[2][BLOCKS_PER_LAYER + 1];
	unsigned int l, i, kind;

	for (l = 0; l < LAYERS; l++) {
		for (kind = 0; kind < 2; kind++) {
			memset(row[kind], '.', BLOCKS_PER_LAYER);
			row[kind][BLOCKS_PER_LAYER] = '\0';
			for (i = 0; i < bl->nblocks; i++) {
				char c = 'A' + (bl->request - 1) % 26;

				/* lower case: a block only partly filled */
				if (kv_block_tokens(bl->tokens, i) < BLOCK_TOKENS)
					c += 'a' - 'A';
				row[kind][bl->blocks[i]] = c;
			}
		}
		printf("decode:   layer %u  K %s  V %s\n", l, row[0], row[1]);
	}
}

/*
 * The request's bytes must be prefill's pattern, every other byte as it
 * was in @before.  Returns the bytes checked against the pattern, or -1.
 */
static long check_kv(const uint8_t *pool, const uint8_t *before,
		     const struct kv_blocklist *bl)
{
	uint8_t *want = malloc(KV_BYTES);
	unsigned int l, i, kind, t, j;
	long n = 0, bad = -1;
	uint64_t off;

	if (!want)
		return -1;
	memcpy(want, before, KV_BYTES);
	for (l = 0; l < LAYERS; l++)
		for (kind = 0; kind < 2; kind++)
			for (i = 0; i < bl->nblocks; i++)
				for (t = 0; t < kv_block_tokens(bl->tokens, i); t++) {
					off = (kind ? kv_v_off(l, bl->blocks[i]) :
						      kv_k_off(l, bl->blocks[i])) +
					      t * TOKEN_BYTES;
					for (j = 0; j < TOKEN_BYTES; j++)
						want[off + j] = kv_pattern(bl->request, l, kind,
									   i * BLOCK_TOKENS + t, j);
					n += TOKEN_BYTES;
				}
	for (off = 0; off < KV_BYTES; off++) {
		if (pool[off] != want[off]) {
			bad = off;
			break;
		}
	}
	if (bad >= 0)
		printf("decode: byte %ld of the KV area is 0x%02x, expected 0x%02x\n",
		       bad, pool[bad], want[bad]);
	free(want);
	return bad >= 0 ? -1 : n;
}

static const struct option long_opts[] = {
	{ "own-memory",	optional_argument,	NULL, 'm' },
	{ "udmabuf",	no_argument,		NULL, 'u' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	const char *peer_name = "prefill";
	unsigned int request = 1, tokens = 100, timeout_s = 30;
	int send_only = 0, buggy = 0, go = 0, opt, ret, i, got_list = 0,
	    got_kv = 0;
	enum kv_mem_kind kind = KV_MEM_POOL;
	struct kxfer_remote_lookup inbox;
	struct kv_blocklist *bl;
	struct kv_mem kv;
	struct kxfer_segment seg;
	struct kxfer_event ev[4];
	struct kxfer_job job;
	uint32_t peer, sub = 0;
	uint8_t *before = NULL;
	double t0, deadline;
	struct kxfer *kx;

	while ((opt = getopt_long(argc, argv, "p:r:n:sbt:muw", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'p':
			peer_name = optarg;
			break;
		case 'r':
			request = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			tokens = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			buggy = 1;
			send_only = 1;
			break;
		case 's':
			send_only = 1;
			break;
		case 't':
			timeout_s = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			if (kv_mem_parse(optarg, &kind)) {
				fprintf(stderr, "kv-decode: --own-memory=malloc or memfd\n");
				return 2;
			}
			break;
		case 'u':
			kind = KV_MEM_UDMABUF;
			break;
		case 'w':
			go = 1;
			break;
		default:
			return 2;
		}
	}
	if (!request || !tokens || tokens > MAX_REQ_BLOCKS * BLOCK_TOKENS) {
		fprintf(stderr, "kv-decode: bad request or token count\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/*
	 * The KV cache: the administrator's pool, attached and mapped, or
	 * our own memory made a pool, which we export ourselves: the KV
	 * area, to the prefill node only, write only.
	 */
	ret = kxfer_open(&kx);
	if (ret)
		return fail("open /dev/kxfer", ret);
	ret = kv_mem_open(kx, &kv, kind, DECODE_POOL, POOL_BYTES);
	if (ret == -ENOENT && kind == KV_MEM_UDMABUF)
		return fail("open /dev/udmabuf (this kernel has none)", ret);
	if (ret)
		return fail(kind == KV_MEM_POOL ? "attach pool " DECODE_POOL :
			    "make a pool of my memory", ret);
	if (kind != KV_MEM_POOL) {
		printf("decode: my KV cache is %s: %d KiB, pool \"%s\" (pid %d)\n",
		       kv_mem_what(kind), POOL_BYTES / 1024, DECODE_POOL,
		       (int)getpid());
		ret = kv_mem_export(kx, &kv, KV_EXPORT, 0, KV_BYTES, peer_name);
		if (ret)
			return fail("export " KV_EXPORT, ret);
		printf("decode: exported its KV area as \"%s\" to %s, write only\n",
		       KV_EXPORT, peer_name);
	}

	/*
	 * Subscribe to our export's notifications before anyone may send
	 * one.  (With -s the export may be gone: nothing to wait for.)
	 */
	if (!send_only) {
		ret = kxfer_notify_subscribe(kx, KV_EXPORT, &sub);
		if (ret)
			return fail("subscribe to export " KV_EXPORT, ret);
	}

	/* 1. Allocate blocks for the request, in the control area. */
	bl = (struct kv_blocklist *)(kv.base + CTL_OFF);
	memset(bl, 0, sizeof(*bl));
	bl->magic = KV_BLOCKLIST_MAGIC;
	bl->request = request;
	bl->tokens = tokens;
	bl->nblocks = (tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
	if (kv_alloc_blocks(DECODE_BUSY, bl->nblocks, bl->blocks))
		return fail("allocate blocks", -ENOSPC);
	if (buggy)
		bl->blocks[bl->nblocks - 1] = BAD_BLOCK;
	printf("decode: request %u, %u tokens: blocks of my KV cache:",
	       request, tokens);
	for (i = 0; i < (int)bl->nblocks; i++)
		printf(" %u", bl->blocks[i]);
	printf("%s\n", buggy ? "  (the last one is a bug: past the end)" : "");

	/*
	 * Clear the request's blocks, and remember the whole KV area: the
	 * check at the end proves that the push wrote exactly the
	 * request's bytes.
	 */
	for (i = 0; i < (int)bl->nblocks && !buggy; i++) {
		for (int l = 0; l < LAYERS; l++) {
			memset(kv.base + kv_k_off(l, bl->blocks[i]), 0,
			       BLOCK_BYTES);
			memset(kv.base + kv_v_off(l, bl->blocks[i]), 0,
			       BLOCK_BYTES);
		}
	}
	before = malloc(KV_BYTES);
	if (!before)
		return fail("malloc", -ENOMEM);
	memcpy(before, kv.base, KV_BYTES);
	if (go) {
		ret = wait_go(timeout_s);
		if (ret)
			return fail("no go", ret);
	}

	/*
	 * 2. Hand the block list over: a WRITE from our control area into
	 * the prefill node's inbox, by export name; the notification tells
	 * prefill that the whole list is there.
	 */
	ret = kxfer_peer_lookup(kx, peer_name, &peer, NULL);
	if (ret)
		return fail("look up peer", ret);
	ret = inbox_lookup(kx, peer, &inbox);
	if (ret)
		return fail("look up the prefill node's " KV_INBOX, ret);
	seg.local_off = CTL_OFF;
	seg.remote_off = 0;
	seg.len = sizeof(*bl);
	kxfer_job_write(&job, kv.handle, peer, inbox.handle, &seg, 1,
			BLOCKLIST_JOB);
	job.flags = KXFER_JOB_NOTIFY;
	job.notify_value = request;
	t0 = now_ms();
	ret = kxfer_submit(kx, &job, 1, NULL);
	if (ret)
		return fail("send the block list", ret);
	printf("decode: block list -> %s's export \"%s\", with notification %u\n",
	       peer_name, KV_INBOX, request);

	/*
	 * 3. Reap: the block list's completion, then (unless -s) the
	 * notification that the KV is all here.  Nothing else to do in
	 * between: the NIC writes the KV, our CPU sleeps in the kernel.
	 */
	deadline = t0 + timeout_s * 1e3;
	while (!got_list || (!send_only && !got_kv)) {
		double left = deadline - now_ms();
		int n;

		if (left <= 0)
			return fail(got_list ? "no KV notification" :
				    "no completion", -ETIMEDOUT);
		n = kxfer_reap(kx, ev, 4, 1, (int64_t)(left * 1e6), 0);
		if (n < 0)
			return fail("reap", n);
		for (i = 0; i < n; i++) {
			if (ev[i].type == KXFER_EV_COMPLETION) {
				if (ev[i].status)
					return fail("block list job", ev[i].status);
				printf("decode: block list delivered\n");
				got_list = 1;
			} else if (ev[i].type == KXFER_EV_NOTIFY &&
				   ev[i].sub == sub &&
				   ev[i].user_data == request) {
				printf("decode: notified: request %llu landed (%llu bytes in the last job), %.0f ms after the block list\n",
				       (unsigned long long)ev[i].user_data,
				       (unsigned long long)ev[i].bytes,
				       now_ms() - t0);
				got_kv = 1;
			}
		}
	}
	if (send_only)
		return 0;

	/*
	 * 4. Every byte: the request's as computed, the rest unchanged,
	 * where the NIC put it (our own memory: no copy in between; a
	 * udmabuf: read through its memfd).
	 */
	{
		long n = check_kv(kv.base, before, bl);

		if (n < 0)
			return 1;
		printf("decode: verified %ld bytes of KV (%d layers x %u tokens x K,V x %d B) in %s; nothing else changed\n",
		       n, LAYERS, tokens, TOKEN_BYTES,
		       kind == KV_MEM_POOL ? "the pool's mapping" :
		       kind == KV_MEM_UDMABUF ? "the memfd's mapping" :
		       "my own memory");
	}
	printf("decode: what landed (one column per block; lower case: partly filled):\n");
	print_map(bl);

	free(before);
	kv_mem_close(kx, &kv);
	if (kind != KV_MEM_POOL)
		printf("decode: pool \"%s\" ended: export withdrawn, memory released by kxfer\n",
		       DECODE_POOL);
	kxfer_close(kx);
	return 0;
}
