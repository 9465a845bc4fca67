/* Minimal C test harness: CHECK macros, named tests and an "N passed, N failed" summary. */
#ifndef GRID_TEST_CHECK_H
#define GRID_TEST_CHECK_H

#include <stdio.h>
#include <string.h>
#include <math.h>
#include <time.h>

static int check_passed_, check_failed_, check_test_failed_;

/* record one failed expectation without stopping the test */
#define CHECK(cond) do { if (!(cond)) { check_test_failed_ = 1; \
    fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) { check_test_failed_ = 1; \
    fprintf(stderr, "  %s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%.17g vs %.17g", (double)(a), (double)(b))

static inline double check_seconds_(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* run one test function and count it; a test over a second says how long it took (CI time is budgeted) */
#define RUN_TEST(fn) do { double t0_ = check_seconds_(); check_test_failed_ = 0; fn(); \
    double dt_ = check_seconds_() - t0_; if (dt_ > 1.0) { printf("  %s: %.1f s\n", #fn, dt_); fflush(stdout); } \
    if (check_test_failed_) { check_failed_++; fprintf(stderr, "FAIL %s\n", #fn); } \
    else { check_passed_++; } } while (0)

/* print the summary; return value for main */
static inline int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

#endif
