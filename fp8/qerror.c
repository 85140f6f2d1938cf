/* fp8/qerror.c — error statistics of a quantization round trip (see qerror.h). */
#include "fp8/qerror.h"

#include <math.h>

void qerr_compute(const float *x, const float *y, uint64_t n, const QuantCounts *counts, QuantError *out)
{
    QuantError q = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    double sx = 0, se = 0, srel = 0;
    uint64_t nrel = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            q.skipped++;
            continue;
        }
        if (!isfinite(y[i])) {
            q.nonfinite++;
            continue;
        }
        double d = (double)x[i] - (double)y[i];
        sx += (double)x[i] * x[i];
        se += d * d;
        if (fabs(d) > q.max_abs) q.max_abs = fabs(d);
        if (x[i] != 0) srel += fabs(d) / fabs((double)x[i]), nrel++;
        q.n++;
    }
    q.rel_rms = sx > 0 ? sqrt(se / sx) : (se > 0 ? INFINITY : 0);
    q.snr_db = se > 0 ? 10 * log10(sx / se) : INFINITY;
    q.mean_rel = nrel ? srel / (double)nrel : 0;
    if (q.nonfinite) { /* a finite value came back NaN/Inf: its error is infinite, and so are the figures */
        q.rel_rms = q.max_abs = q.mean_rel = INFINITY;
        q.snr_db = -INFINITY;
    } else if (!q.n) {
        q.rel_rms = q.snr_db = q.max_abs = q.mean_rel = NAN; /* nothing finite to measure: no figure */
    }
    uint64_t finite = counts && counts->n > q.skipped ? counts->n - q.skipped : 0;
    if (finite) {
        q.flushed_frac = (double)counts->flushed / (double)finite;
        q.saturated_frac = (double)counts->saturated / (double)finite;
    }
    *out = q;
}
