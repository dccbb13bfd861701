/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * kv-demo.h: what the decode and prefill examples agree on.
 *
 * The model is seed 003's KV push, scaled down to fit two small guests:
 * a model of LAYERS layers whose KV cache is paged in blocks of
 * BLOCK_TOKENS tokens, TOKEN_BYTES bytes of K and as many of V per token
 * and layer (256: one KV head of 128 fp16 values, the seed's 70B model
 * at TP=8).
 *
 * Both nodes keep their KV cache in a kxfer pool laid out like SGLang's
 * paged cache: per layer, one K buffer and one V buffer of
 * BLOCKS_PER_LAYER blocks each.  Block b of layer l holds the K of tokens
 * [16b, 16b + 16) at kv_k_off(l, b), their V at kv_v_off(l, b).  Each
 * node allocates blocks from its own cache, so a request's tokens sit in
 * different blocks on the two nodes: a push is a scatter-gather copy.
 *
 * The decode node exports its whole KV area (KV_EXPORT) to the prefill
 * node, write only.  The prefill node exports a small inbox (KV_INBOX)
 * to the decode node, where decode writes the block list of a request
 * (struct kv_blocklist) with a notification: the hand-off goes over
 * kxfer itself, no side channel.  Nobody ever learns an address: a peer
 * names an export and gets its length and access; offsets are relative
 * to the export.
 */
#ifndef KV_DEMO_H
#define KV_DEMO_H

#include <stdint.h>

#define LAYERS			8
#define BLOCK_TOKENS		16
#define TOKEN_BYTES		256
#define BLOCK_BYTES		(BLOCK_TOKENS * TOKEN_BYTES)	/* 4 KiB */
#define BLOCKS_PER_LAYER	32
#define LAYER_BYTES		(2 * BLOCKS_PER_LAYER * BLOCK_BYTES)
#define KV_BYTES		(LAYERS * LAYER_BYTES)		/* 2 MiB */

/* Blocks one request may use: its tokens fit one layer's buffer. */
#define MAX_REQ_BLOCKS		BLOCKS_PER_LAYER

/*
 * Names (kxferctl creates the pools and exports, see examples/demo.sh).
 * Each pool is the KV area, [0, KV_BYTES), followed by a small control
 * area at CTL_OFF: on decode the block list it sends, on prefill the
 * inbox it receives the block list in.
 */
#define DECODE_POOL		"kv-decode"
#define PREFILL_POOL		"kv-prefill"
#define KV_EXPORT		"kv"		/* decode: [0, KV_BYTES) */
#define KV_INBOX		"kv-inbox"	/* prefill: [CTL_OFF, +4K) */
#define CTL_OFF			KV_BYTES
#define POOL_BYTES		(KV_BYTES + 4096)

/* Where block b of layer l keeps its K and its V, on either node. */
static inline uint64_t kv_k_off(unsigned int layer, uint32_t block)
{
	return (uint64_t)layer * LAYER_BYTES + (uint64_t)block * BLOCK_BYTES;
}

static inline uint64_t kv_v_off(unsigned int layer, uint32_t block)
{
	return kv_k_off(layer, block) + BLOCKS_PER_LAYER * BLOCK_BYTES;
}

/*
 * The message decode writes into prefill's inbox: "request @request has
 * @tokens tokens; put them in these blocks of mine".  The notification
 * that comes with it carries the request id as its value.
 */
#define KV_BLOCKLIST_MAGIC	0x6b76626cU	/* "kvbl" */

struct kv_blocklist {
	uint32_t magic;
	uint32_t request;
	uint32_t tokens;
	uint32_t nblocks;
	uint32_t blocks[MAX_REQ_BLOCKS];
};

/* Tokens of a request held by its block i (the last may be partial). */
static inline unsigned int kv_block_tokens(uint32_t tokens, unsigned int i)
{
	uint32_t left = tokens - i * BLOCK_TOKENS;

	return left < BLOCK_TOKENS ? left : BLOCK_TOKENS;
}

/*
 * Each node's block allocator, first fit: @busy has bit b set when
 * another request holds block b of every layer.  Fills @out with @n free
 * blocks; returns 0, or -1 if there are not enough.
 */
static inline int kv_alloc_blocks(uint32_t busy, unsigned int n,
				  uint32_t *out)
{
	unsigned int b, got = 0;

	for (b = 0; b < BLOCKS_PER_LAYER && got < n; b++)
		if (!(busy & (1U << b)))
			out[got++] = b;
	return got == n ? 0 : -1;
}

/*
 * The bytes prefill "computes": byte j of the K (kind 0) or V (kind 1)
 * of token t in layer l of request r.  Decode checks every byte it gets
 * against the same function.
 */
static inline uint8_t kv_pattern(uint32_t r, unsigned int l,
				 unsigned int kind, uint32_t t,
				 unsigned int j)
{
	uint32_t x = r * 0x9e3779b1U ^ (l << 24) ^ (kind << 23) ^ (t << 8) ^ j;

	x ^= x >> 15;
	x *= 0x2c1b3c6dU;
	x ^= x >> 12;
	return (uint8_t)x;
}

#endif /* KV_DEMO_H */
