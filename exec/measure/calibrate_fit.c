/* exec/measure/calibrate_fit.c — the formulas of a host profile (see
 * calibrate.h): bus bandwidth, the latency + bandwidth line of a collective
 * sweep, medians. Pure arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"

double cal_allreduce_busbw(uint64_t S, int n, double t)
{
    if (n < 2 || !(t > 0)) return 0;
    return (double)S * 2.0 * (double)(n - 1) / (double)n / t;
}

int cal_fit_line(const double *x, const double *y, int n, double *a, double *b)
{
    if (n < 2) return -1;
    double sx = 0, sy = 0;
    for (int i = 0; i < n; i++) sx += x[i], sy += y[i];
    double mx = sx / n, my = sy / n, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    if (!(sxx > 0)) return -1;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return 0;
}

int cal_fit_link(const CalColl *c, int nc, int n, double *lat, double *bw)
{
    double x[CAL_MAX_SIZES], y[CAL_MAX_SIZES], a, b;
    if (n < 2 || nc < 2 || nc > CAL_MAX_SIZES) return -1;
    for (int i = 0; i < nc; i++) {
        x[i] = (double)c[i].payload * 2.0 * (double)(n - 1) / (double)n; /* bus bytes */
        y[i] = c[i].seconds;
    }
    if (cal_fit_line(x, y, nc, &a, &b) || !(b > 0)) return -1;
    double steps = 2.0 * (double)(n - 1);
    *lat = a / steps > 1e-9 ? a / steps : 1e-9;
    *bw = 1.0 / b;
    return 0;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void cal_median(const double *v, int n, double *median, double *spread)
{
    double s[64];
    if (n <= 0 || n > 64) {
        *median = *spread = NAN;
        return;
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *median = med;
    *spread = med > 0 ? (s[n - 1] - s[0]) / med : NAN;
}
