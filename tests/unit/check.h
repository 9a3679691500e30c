/*
 * The shared assertion header of the unit tests.
 *
 * A test file defines `static void test_x(void)` functions and a table:
 *
 *     static const check_test tests[] = { CHECK_TEST(test_x), ... };
 *     int main(int argc, char **argv) { return check_main(argc, argv, tests, CHECK_COUNT(tests)); }
 *
 * Each test prints "PASS name" or "FAIL name: file:line: what"; the binary ends
 * with "N passed, M failed" and exits 1 if any failed. A name given on the
 * command line runs only the tests whose names contain it.
 */
#ifndef DRAPE_TEST_CHECK_H
#define DRAPE_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct check_test {
	const char *name;
	void (*fn)(void);
} check_test;

#define CHECK_TEST(fn) { #fn, fn }
#define CHECK_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int check_failed_;

/* Defined by programs that want to add to a failure's report (the
 * integration tests: what their daemons are doing, itest.c); called once,
 * at a test's first failure. */
void check_fail_hook(void) __attribute__((weak));

static void check_fail_(const char *file, int line, const char *what)
{
	if (!check_failed_) {
		printf("  %s:%d: %s\n", file, line, what);
		if (check_fail_hook != NULL)
			check_fail_hook();
	}
	check_failed_ = 1;
}

/* Fails the current test and returns from it. */
#define CHECK(cond)                                              \
	do {                                                     \
		if (!(cond)) {                                   \
			check_fail_(__FILE__, __LINE__, #cond);  \
			return;                                  \
		}                                                \
	} while (0)

/* Like CHECK with a printf message explaining the values. */
#define CHECKF(cond, ...)                                        \
	do {                                                     \
		if (!(cond)) {                                   \
			char check_msg_[512];                    \
			snprintf(check_msg_, sizeof check_msg_, __VA_ARGS__); \
			check_fail_(__FILE__, __LINE__, check_msg_); \
			return;                                  \
		}                                                \
	} while (0)

/* |a - b| <= tol, reporting both values. */
#define CHECK_NEAR(a, b, tol)                                                       \
	CHECKF(fabs((double)(a) - (double)(b)) <= (double)(tol),                    \
	       "%s = %.9g, %s = %.9g, |diff| = %.3g > %.3g", #a, (double)(a), #b,   \
	       (double)(b), fabs((double)(a) - (double)(b)), (double)(tol))

/* Calls a drape function returning drape_err and fails unless DRAPE_OK. */
#define CHECK_OK(call)                                                               \
	do {                                                                         \
		int check_rc_ = (int)(call);                                         \
		if (check_rc_ != 0) {                                                \
			char check_msg_[512];                                        \
			snprintf(check_msg_, sizeof check_msg_, "%s returned %d", #call, check_rc_); \
			check_fail_(__FILE__, __LINE__, check_msg_);                 \
			return;                                                      \
		}                                                                    \
	} while (0)

static int check_main(int argc, char **argv, const check_test *tests, size_t n)
{
	int passed = 0, failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && strstr(tests[i].name, argv[1]) == NULL)
			continue;
		check_failed_ = 0;
		tests[i].fn();
		if (check_failed_) {
			printf("FAIL %s\n", tests[i].name);
			failed++;
		} else {
			printf("PASS %s\n", tests[i].name);
			passed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
