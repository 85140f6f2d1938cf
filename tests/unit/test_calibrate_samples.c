/* tests/unit/test_calibrate_samples.c — how `fp8plan calibrate` takes its samples (exec/measure/calibrate_judge.c,
 * pure): how many calls one sample takes (cal_sample_calls), the sample's median over them (cal_sample_median), and
 * which samples of a round go to the quick re-measure (cal_again_slot). Worked by hand. */
#include <math.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "exec/run/run_calibrate.h"
#include "test.h"

/* The calls a timed sample takes, ceil(min_s / call_s) in [1, 1024]. */
static void test_sample_calls(void)
{
    static const struct {
        double call_s, min_s;
        int want;
    } cases[] = {
        {0.3e-3, CAL_SAMPLE_S, 34},     /* a te-fp8 cast of 128 x 256: 10 / 0.3 = 33.3 -> 34 (10.2 ms) */
        {0.08e-3, CAL_SAMPLE_S, 125},   /* a norm: 10 / 0.08 = 125 exactly */
        {1.25e-3, CAL_SAMPLE_S, 8},     /* 10 / 1.25 = 8 exactly */
        {7.3e-3, CAL_SAMPLE_S, 2},      /* AdamW under load: 1.37 -> 2 */
        {60e-3, CAL_SAMPLE_S, 1},       /* FP8-LM's optimizer: one call is a sample */
        {1e-6, CAL_SAMPLE_S, 1024},     /* 10,000 calls of 1 us: at most 1,024 */
        {0.7e-3, CAL_GEMM_SAMPLE_S, 3}, /* a GEMM: 2 / 0.7 = 2.86 -> 3 */
        {2.5e-3, CAL_GEMM_SAMPLE_S, 1}, /* longer than the sample: 1 */
        {0, CAL_SAMPLE_S, 1024},        /* below the clock */
        {NAN, CAL_SAMPLE_S, 1024},      /* not a time */
        {INFINITY, CAL_SAMPLE_S, 1},    /* never finished: one */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECKF(cal_sample_calls(cases[i].call_s, cases[i].min_s) == cases[i].want, "%g s a call, %g s: %d, want %d",
               cases[i].call_s, cases[i].min_s, cal_sample_calls(cases[i].call_s, cases[i].min_s), cases[i].want);
}

/* A sample's median over its calls (sorted in place), and why a sample is a median of many calls: single calls of
 * a bimodal machine (the pool's worker beside the caller: 1 ms; waiting for a core: 1.8 ms) whose median of 7 flips
 * with one call more or less in the slow mode, against samples of 20 calls each. */
static void test_sample_median(void)
{
    double a[] = {3, 1, 2};
    CHECK_NEAR(cal_sample_median(a, 3), 2, 0);
    CHECK(a[0] == 1 && a[1] == 2 && a[2] == 3); /* sorted */
    double b[] = {4, 1, 3, 2};                  /* even: (2 + 3) / 2 */
    CHECK_NEAR(cal_sample_median(b, 4), 2.5, 0);
    double c[] = {7};
    CHECK_NEAR(cal_sample_median(c, 1), 7, 0);
    CHECK(isnan(cal_sample_median(c, 0)));
    /* 7 single calls, 3 slow then 4 slow: the median goes from 1 to 1.8 ms (+80 %) */
    double p1[] = {1, 1.8, 1, 1.8, 1, 1.8, 1}, p2[] = {1, 1.8, 1.8, 1.8, 1, 1.8, 1};
    CalStat s1, s2;
    cal_stats(p1, 7, &s1);
    cal_stats(p2, 7, &s2);
    CHECK_NEAR(s1.median, 1, 0);
    CHECK_NEAR(s2.median, 1.8, 0);
    /* the same machine in samples of 20 calls, 3 to 9 of them slow in each: every sample's median is 1 ms (the
     * 10th and 11th of 20 sorted are fast while at most 9 are slow), so 7 such samples give 1 ms with spread 0 */
    double med[7];
    for (int k = 0; k < 7; k++) {
        double t[20];
        for (int j = 0; j < 20; j++) t[j] = j < 3 + k ? 1.8 : 1;
        med[k] = cal_sample_median(t, 20);
    }
    CalStat sm;
    cal_stats(med, 7, &sm);
    CHECK_NEAR(sm.median, 1, 0);
    CHECK_NEAR(sm.iqr, 0, 0);
    CHECK_NEAR(sm.spread, 0, 0);
}

/* Which of reps + again samples go to the re-measure: the j-th at floor((2j + 1) n / (2 again)), n = reps + again. */
static void test_again_slot(void)
{
    static const struct {
        int reps, again;
        const char *want; /* per sample k = 0 .. n - 1: 'a' re-measure, 'p' profile */
    } cases[] = {
        /* n 11: 11/8 = 1, 33/8 = 4, 55/8 = 6, 77/8 = 9 (the default: 7 and cal_again_reps(7) = 4) */
        {7, 4, "pappapappap"},
        /* n 6: 6/6 = 1, 18/6 = 3, 30/6 = 5 (--quick: 3 and 3): alternating */
        {3, 3, "papapa"},
        {1, 1, "pa"},       /* n 2: 2/2 = 1 */
        {2, 2, "papa"},     /* n 4: 4/4 = 1, 12/4 = 3 */
        {5, 3, "pappapap"}, /* n 8: 8/6 = 1, 24/6 = 4, 40/6 = 6 */
        {4, 0, "pppp"},     /* no re-measure */
        /* n 20: 20/14 = 1, 60/14 = 4, 100/14 = 7, 140/14 = 10, 180/14 = 12, 220/14 = 15, 260/14 = 18 */
        {13, 7, "pappappappapappappap"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int n = cases[i].reps + cases[i].again;
        char got[128] = {0};
        for (int k = 0; k < n; k++) got[k] = cal_again_slot(k, cases[i].reps, cases[i].again) ? 'a' : 'p';
        CHECKF(!strcmp(got, cases[i].want), "reps %d again %d: %s, want %s", cases[i].reps, cases[i].again, got,
               cases[i].want);
        CHECK(cal_again_slot(-1, cases[i].reps, cases[i].again) == 0 &&
              cal_again_slot(n, cases[i].reps, cases[i].again) == 0);
    }
    /* every count calibrate can ask for (reps 1..64, cal_again_reps of it): exactly `again` samples, never two
     * re-measure samples where one profile sample is due between them at reps >= again */
    for (int reps = 1; reps <= 64; reps++) {
        const int again = cal_again_reps(reps);
        int count = 0, run = 0, worst = 0;
        for (int k = 0; k < reps + again; k++) {
            const int x = cal_again_slot(k, reps, again);
            count += x, run = x ? run + 1 : 0;
            if (run > worst) worst = run;
        }
        CHECKF(count == again && worst == 1, "reps %d again %d: %d samples, %d in a row", reps, again, count, worst);
    }
}

int main(void)
{
    RUN(test_sample_calls);
    RUN(test_sample_median);
    RUN(test_again_slot);
    return test_summary();
}
