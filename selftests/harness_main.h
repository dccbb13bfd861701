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
 *
 * Options, as newer kselftest harnesses have them (6.1's, used here,
 * has none): -f FIXTURE runs that fixture's tests only, -F FIXTURE
 * every other fixture's, -r FIXTURE.TEST that one test; one of them at
 * most, and one that selects nothing, or anything else, is a usage
 * error (status 2).
 */
#ifndef KXFER_HARNESS_MAIN_H
#define KXFER_HARNESS_MAIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Unlink the tests that -r FIXTURE.TEST leaves out of @f. */
static inline void kxfer_harness_keep_test(struct __fixture_metadata *f,
					   const char *test)
{
	struct __test_metadata *t, **link = &f->tests;

	for (t = f->tests; t; t = t->next) {
		if (strcmp(t->name, test))
			continue;
		*link = t;
		link = &t->next;
	}
	*link = NULL;
}

/* Unlink the fixtures and tests the options leave out; -1 on a usage error. */
static inline int kxfer_harness_filter(int argc, char **argv)
{
	struct __fixture_metadata *f, **link = &__fixture_list;
	const char *only = NULL, *skip = NULL, *test = NULL;
	size_t flen = 0;
	int opt;

	while ((opt = getopt(argc, argv, "f:F:r:")) != -1) {
		if (only || skip)
			return -1;
		if (opt == 'f') {
			only = optarg;
			flen = strlen(only);
		} else if (opt == 'F') {
			skip = optarg;
		} else if (opt == 'r' && strchr(optarg, '.')) {
			only = optarg;
			test = strchr(optarg, '.') + 1;
			flen = test - 1 - optarg;
		} else {
			return -1;
		}
	}
	if (optind < argc)
		return -1;
	for (f = __fixture_list; f; f = f->next) {
		if ((only && (strlen(f->name) != flen ||
			      strncmp(f->name, only, flen))) ||
		    (skip && !strcmp(f->name, skip)))
			continue;
		if (test)
			kxfer_harness_keep_test(f, test);
		if (!f->tests)
			continue;
		*link = f;
		link = &f->next;
	}
	*link = NULL;
	return only && !__fixture_list ? -1 : 0;
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
		if (kxfer_harness_filter(argc, argv)) { \
			fprintf(stderr, \
				"usage: %s [-f FIXTURE | -F FIXTURE | -r FIXTURE.TEST]\n", \
				argv[0]); \
			return 2; \
		} \
		return test_harness_run(argc, argv); \
	}

#endif
