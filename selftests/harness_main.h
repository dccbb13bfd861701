/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * KXFER_HARNESS_MAIN: TEST_HARNESS_MAIN, with every test's timeout (the
 * harness's 30 s, or TEST_F_TIMEOUT's) multiplied by $KXFER_SLOW, as the
 * suites' own waits are (selftests/rig/lib.sh): on the sanitizer kernels
 * of `make check-debug` (KXFER_SLOW=4) everything takes longer, and a test
 * killed by the harness's alarm says nothing about kxfer.
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

	if (slow <= 1 || slow > 100)
		return;
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			t->timeout *= slow;
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
