/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the kselftest programs of selftests/ share besides the harness
 * (harness_main.h): running a shell command and the monotonic clock in
 * milliseconds.
 */
#ifndef KXFER_TEST_UTIL_H
#define KXFER_TEST_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

/* Run a shell command (at most 511 bytes once formatted): its exit
 * status, or -1 if it did not exit. */
static inline int __attribute__((format(printf, 1, 2)))
run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

#endif /* KXFER_TEST_UTIL_H */
