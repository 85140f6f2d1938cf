/* exec/measure/calibrate_fit.c — the formulas of a host profile (see
 * calibrate.h): bus bandwidth, the latency + bandwidth line of a collective
 * sweep, medians. Pure arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"

int cal_link_sizes(uint64_t top, uint64_t *sizes)
{
    if (top < CAL_LINK_TOP_MIN) top = CAL_LINK_TOP_MIN;
    if (top > CAL_LINK_TOP_MAX) top = CAL_LINK_TOP_MAX;
    top = (top + 3) / 4 * 4;
    int n = 0;
    for (uint64_t S = 64; S < top && n < CAL_MAX_SIZES - 1; S *= 4) sizes[n++] = S;
    sizes[n++] = top;
    return n;
}

int cal_link_reps(int s, int n, int reps)
{
    if (s != 0 && s < n - 2) return reps;
    return 4 * reps < CAL_LINK_REPS_MAX ? 4 * reps : CAL_LINK_REPS_MAX;
}

double cal_allreduce_busbw(uint64_t S, int n, double t)
{
    if (n < 2 || !(t > 0)) return 0;
    return (double)S * comm_bus_factor(OP_ALL_REDUCE, (uint64_t)n) / t;
}

int cal_fit_line(const double *x, const double *y, const double *w, int n, double *a, double *b)
{
    if (n < 2) return -1;
    double sw = 0, sx = 0, sy = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sw += wi, sx += wi * x[i], sy += wi * y[i];
    }
    if (!(sw > 0)) return -1;
    double mx = sx / sw, my = sy / sw, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sxx += wi * (x[i] - mx) * (x[i] - mx), sxy += wi * (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0)) return -1;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return 0;
}

int cal_fit_link(const CalColl *c, int nc, int n, double *lat, double *bw)
{
    if (n < 2 || nc < 3 || nc > CAL_MAX_SIZES) return -1;
    double steps = 2.0 * (double)(n - 1), f = steps / (double)n; /* bus bytes = S x 2(n-1)/n */
    for (int i = 0; i < nc; i++)
        if (!(c[i].seconds > 0) || (i && c[i].payload <= c[i - 1].payload)) return -1;
    /* latency: the smallest size, its bytes at the bandwidth of the next one neglected (64 B: nanoseconds) —
     * at most any size's time (no call takes less than its fixed cost: a larger size measured faster means the
     * smallest's median met more of the ranks' arrival noise; calls are timed after a late arrival) */
    double l = c[0].seconds / steps;
    for (int i = 1; i < nc; i++)
        if (c[i].seconds / steps < l) l = c[i].seconds / steps;
    /* bandwidth: the two largest sizes, past the caches (nccl-tests' convention: bus bandwidth at large sizes) */
    double bytes = 0, t = 0;
    for (int i = nc - 2; i < nc; i++) bytes += (double)c[i].payload * f, t += c[i].seconds - steps * l;
    if (!(t > 0)) return -1;
    *lat = l > 1e-9 ? l : 1e-9;
    *bw = bytes / t;
    return 0;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The median of sorted s[0..n), n >= 1. */
static double mid(const double *s, int n) { return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]); }

void cal_stats(const double *v, int n, CalStat *st)
{
    double s[64];
    if (n <= 0 || n > 64) {
        st->median = st->spread = st->iqr = NAN;
        return;
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = mid(s, n);
    int half = (n + 1) / 2; /* Tukey's hinges: each half holds the median when n is odd */
    double q1 = mid(s, half), q3 = mid(s + n - half, half);
    st->median = med;
    st->spread = med > 0 ? (s[n - 1] - s[0]) / med : NAN;
    st->iqr = med > 0 ? (q3 - q1) / med : NAN;
}

void cal_median(const double *v, int n, double *median, double *spread)
{
    CalStat st;
    cal_stats(v, n, &st);
    *median = st.median;
    *spread = st.spread;
}
