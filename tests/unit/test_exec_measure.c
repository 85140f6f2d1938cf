/* tests/unit/test_exec_measure.c — the verdict rules of measured versus
 * planned (exec/measure/compare.h), which decide `fp8plan run`'s exit status. */
#include <math.h>

#include "exec/measure/measurement.h"
#include "test.h"

static MeasureRow row(MeasureMode mode, double planned, double measured)
{
    MeasureRow r = {.has_planned = 1, .has_measured = 1, .planned = planned, .measured = measured, .mode = mode};
    return r;
}

static void test_verdicts(void)
{
    MeasureRow r[9] = {
        row(MEASURE_EXACT, 786432, 786432), /* ok */
        row(MEASURE_EXACT, 786432, 786433), /* one byte off: MISMATCH */
        row(MEASURE_BOUND, 1000, 999),      /* under the bound: ok */
        row(MEASURE_BOUND, 1000, 1001),     /* over: OVER */
        row(MEASURE_TOL, 1.0, 1.15),        /* +15 % of a 15 % tolerance: ok */
        row(MEASURE_TOL, 1.0, 0.84),        /* −16 %: OUTSIDE */
        row(MEASURE_INFO, 1.0, 99.0),       /* never fails */
        row(MEASURE_EXACT, 0, 0),           /* a zero term that is zero */
        row(MEASURE_EXACT, 5, 0),           /* missing measurement: info, not a failure */
    };
    r[4].tol = r[5].tol = 0.15;
    r[6].note = "n/a on the cpu backend";
    r[8].has_measured = 0;
    CHECK_EQ_INT(measure_judge(r, 9), 3);
    const Verdict want[9] = {VERDICT_OK,      VERDICT_MISMATCH, VERDICT_OK, VERDICT_OVER, VERDICT_OK,
                             VERDICT_OUTSIDE, VERDICT_INFO,     VERDICT_OK, VERDICT_INFO};
    for (int i = 0; i < 9; i++)
        CHECKF(r[i].verdict == want[i], "row %d: verdict %d, expected %d", i, r[i].verdict, want[i]);
    CHECK_STR(measure_verdict_text(&r[1]), "MISMATCH");
    CHECK_STR(measure_verdict_text(&r[6]), "n/a on the cpu backend");
    CHECK_NEAR(measure_rel_err(&r[4]), 0.15, 1e-12);
    CHECK_NEAR(measure_rel_err(&r[7]), 0.0, 0.0);
    CHECK(isnan(measure_rel_err(&r[8])));
}

int main(void)
{
    RUN(test_verdicts);
    return test_summary();
}
