/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * KXFER_HARNESS_MAIN: TEST_HARNESS_MAIN, with every test's timeout (the
 * harness's 30 s, or TEST_F_TIMEOUT's) multiplied by $KXFER_SLOW, as the
 * suites' own waits are (selftests/rig/lib.sh): on the sanitizer kernels
 * of `make check-debug` (KXFER_SLOW=4) everything takes longer, and a test
 * killed by the harness's alarm says nothing about kxfer.  A test file
 * that defines KXFER_HARNESS_TIMEOUT (seconds) before including this
 * gives each of its tests at least that long, before the scaling: for
 * tests of pure computation whose time is the machine's share of CPU.
 */
#ifndef KXFER_HARNESS_MAIN_H
#define KXFER_HARNESS_MAIN_H

#include <stdlib.h>

static inline void kxfer_harness_scale_timeouts(void)
{
	const char *env = getenv("KXFER_SLOW");
	struct __fixture_metadata *f;
	struct __test_metadata *t;
	long slow = env ? strtol(env, NULL, 10) : 1;

	if (slow < 1 || slow > 100)
		slow = 1;
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next) {
#ifdef KXFER_HARNESS_TIMEOUT
			if (t->timeout < KXFER_HARNESS_TIMEOUT)
				t->timeout = KXFER_HARNESS_TIMEOUT;
#endif
			t->timeout *= slow;
		}
}

#define KXFER_HARNESS_MAIN \
	static void __attribute__((constructor)) \
	__constructor_order_last(void) \
	{ \
		if (!__constructor_order) \
			__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD; \
	} \
	int main(int argc, char **argv) \
	{ \
		kxfer_harness_scale_timeouts(); \
		return test_harness_run(argc, argv); \
	}

#endif
