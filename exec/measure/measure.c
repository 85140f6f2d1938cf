/* exec/measure/measure.c — verdicts of measured versus planned (see measure.h). */
#include "exec/measure/measure.h"

#include <math.h>

double measure_rel_err(const MeasureRow *r)
{
    if (!r->has_planned || !r->has_measured) return NAN;
    if (r->planned == 0.0) return r->measured == 0.0 ? 0.0 : NAN;
    return (r->measured - r->planned) / r->planned;
}

int measure_judge(MeasureRow *rows, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        MeasureRow *r = &rows[i];
        r->verdict = VERDICT_INFO;
        if (r->mode == MEASURE_INFO || !r->has_planned || !r->has_measured) continue;
        switch (r->mode) {
        case MEASURE_EXACT: r->verdict = r->measured == r->planned ? VERDICT_OK : VERDICT_MISMATCH; break;
        case MEASURE_BOUND: r->verdict = r->measured <= r->planned ? VERDICT_OK : VERDICT_OVER; break;
        case MEASURE_TOL: {
            double e = measure_rel_err(r);
            r->verdict = isfinite(e) && fabs(e) <= r->tol ? VERDICT_OK : VERDICT_OUTSIDE;
            break;
        }
        default: break;
        }
        failed += r->verdict != VERDICT_OK && r->verdict != VERDICT_INFO;
    }
    return failed;
}

const char *measure_verdict_text(const MeasureRow *r)
{
    switch (r->verdict) {
    case VERDICT_OK: return "ok";
    case VERDICT_MISMATCH: return "MISMATCH";
    case VERDICT_OVER: return "OVER";
    case VERDICT_OUTSIDE: return "OUTSIDE";
    default: return r->note ? r->note : "-";
    }
}
