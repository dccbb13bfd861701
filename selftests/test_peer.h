/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The session the /dev/kxfer tests use: suite-1's "uself", or
 * KXFER_TEST_PEER, with KXFER_TEST_PEER_OPTS (e.g. "cq poll") for the
 * sessions a test adds itself (suite-1 runs the tests again on its polled
 * session "upoll").
 */
#ifndef KXFER_TEST_PEER_H
#define KXFER_TEST_PEER_H

#include <stdlib.h>

static inline const char *test_peer(void)
{
	const char *p = getenv("KXFER_TEST_PEER");

	return p && *p ? p : "uself";
}

static inline const char *test_peer_opts(void)
{
	const char *o = getenv("KXFER_TEST_PEER_OPTS");

	return o ? o : "";
}

#define PEER		test_peer()

#endif
