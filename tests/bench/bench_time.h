/* tests/bench/bench_time.h — what the benchmarks share: clocks, medians, the
 * load average (static inline, header only; anchor_sgemm uses it too). */
#ifndef FP8PLAN_TESTS_BENCH_TIME_H
#define FP8PLAN_TESTS_BENCH_TIME_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Wall clock, seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of all the process's threads, seconds. */
static inline double bench_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of t[0..n) (sorts t). */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp);
    return t[n / 2];
}

/* "load average WHEN: 1 5 15" — how busy the (possibly shared) machine was. */
static inline void bench_load(const char *when)
{
    double l[3];
    if (getloadavg(l, 3) == 3) printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

#endif
