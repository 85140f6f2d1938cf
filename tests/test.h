/* tests/test.h — the unit-test harness (one header, no framework).
 *
 * A test file defines `static void test_xxx(void)` functions and a main() that
 * runs them with RUN(test_xxx) and ends with `return test_summary();`. Each
 * test prints "ok - name" or "FAIL - name" with every failed check's file:line;
 * the summary line "N passed, M failed" is what tests/run.sh adds up. */
#ifndef FP8PLAN_TESTS_TEST_H
#define FP8PLAN_TESTS_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_passed_, test_failed_, test_skipped_, test_cur_fails_;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            test_cur_fails_++;                                                         \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                              \
    } while (0)

#define CHECKF(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            test_cur_fails_++;                                                         \
            fprintf(stderr, "  %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                   \
    do {                                                                     \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                     \
        CHECKF(a_ == b_, "%s = %" PRIu64 ", %s = %" PRIu64, #a, a_, #b, b_); \
    } while (0)

#define CHECK_EQ_INT(a, b)                                        \
    do {                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);       \
        CHECKF(a_ == b_, "%s = %lld, %s = %lld", #a, a_, #b, b_); \
    } while (0)

/* |a - b| <= tol (absolute). */
#define CHECK_NEAR(a, b, tol)                                                                \
    do {                                                                                     \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);                       \
        CHECKF(fabs(a_ - b_) <= t_, "%s = %.17g, %s = %.17g, tol %.3g", #a, a_, #b, b_, t_); \
    } while (0)

/* |a - b| <= rel * |b| (relative to the expected value b). */
#define CHECK_REL(a, b, rel)                                                                                \
    do {                                                                                                    \
        double a_ = (double)(a), b_ = (double)(b), r_ = (double)(rel);                                      \
        CHECKF(fabs(a_ - b_) <= r_ * fabs(b_), "%s = %.17g, %s = %.17g, rel tol %.3g", #a, a_, #b, b_, r_); \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        CHECKF(a_ &&b_ && !strcmp(a_, b_), "%s = \"%s\", %s = \"%s\"", #a, a_ ? a_ : "(null)", #b, \
               b_ ? b_ : "(null)");                                                                \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                            \
    do {                                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                                \
        CHECKF(h_ &&strstr(h_, n_), "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

static inline void test_run_(const char *name, void (*fn)(void))
{
    test_cur_fails_ = 0;
    fn();
    if (test_cur_fails_) {
        test_failed_++;
        printf("FAIL - %s (%d checks failed)\n", name, test_cur_fails_);
    } else {
        test_passed_++;
        printf("ok - %s\n", name);
    }
    fflush(stdout);
}

#define RUN(fn) test_run_(#fn, fn)

/* A test that cannot run here says so; it counts as skipped, neither passed
 * nor failed. SKIP is for what a CPU machine can provide (a header, a tool, a
 * compiler feature): under CI=true tests/run.sh fails the run when one is
 * skipped. SKIP_HW is for what only other hardware gives (a GPU, or its
 * absence); tests/run.sh lets those pass in CI. */
#define SKIP(fn, why)    (test_skipped_++, printf("skip - %s (%s)\n", #fn, why), fflush(stdout))
#define SKIP_HW(fn, why) (test_skipped_++, printf("skip - %s (hardware: %s)\n", #fn, why), fflush(stdout))

static inline int test_summary(void)
{
    printf("%d passed, %d failed, %d skipped\n", test_passed_, test_failed_, test_skipped_);
    return test_failed_ ? 1 : 0;
}

#endif
