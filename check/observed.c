/* check/observed.c — the statistics of an observed run's steps (see observed.h). */
#include "check/observed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t check_timed_from(uint32_t steps) { return steps > MEASURE_WARMUP_STEPS ? MEASURE_WARMUP_STEPS : 0; }

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void measure_stats(const double *v, uint32_t from, uint32_t n, double *t, double *median, double *spread)
{
    *median = *spread = NAN;
    if (n <= from) return;
    uint32_t k = n - from;
    memcpy(t, v + from, k * sizeof *t);
    qsort(t, k, sizeof *t, cmp_double);
    *median = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    if (*median != 0.0) *spread = (t[k - 1] - t[0]) / *median;
}
