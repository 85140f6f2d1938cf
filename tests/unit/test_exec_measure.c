/* tests/unit/test_exec_measure.c — the verdict rules of planned versus observed
 * (check/compare.h), which decide `fp8plan run`'s exit status, check-log's and
 * FP8-LM Table 5's "within" column (reports/seed_report.c), and the relative
 * errors and their means that `report fidelity` summarises. */
#include <math.h>
#include <stdlib.h>

#include <string.h>

#include "check/compare.h"
#include "support/fixtures.h"
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

/* The one judgement, value against reference, as every caller uses it: a run (measured against the plan),
 * a published figure (the prediction against it: Table 5's +-15 % memory and +-12 % communication bands).
 * Relative errors by hand: 114 / 100 - 1 = 0.14; 116 / 100 - 1 = 0.16; 86 / 100 - 1 = -0.14;
 * 87 / 100 - 1 = -0.13 (none on a band's edge, where rounding decides). */
static void test_check_verdict(void)
{
    static const struct {
        MeasureMode mode;
        double value, ref, tol;
        Verdict want;
    } rows[] = {
        {MEASURE_TOL, 114, 100, 0.15, VERDICT_OK},      /* Table 5 memory: +14 % of +-15 % */
        {MEASURE_TOL, 116, 100, 0.15, VERDICT_OUTSIDE}, /* +16 % */
        {MEASURE_TOL, 86, 100, 0.15, VERDICT_OK},       /* -14 % */
        {MEASURE_TOL, 87, 100, 0.12, VERDICT_OUTSIDE},  /* communication: -13 % of +-12 % */
        {MEASURE_TOL, NAN, 100, 0.15, VERDICT_OUTSIDE}, /* no figure: never within */
        {MEASURE_TOL, 0, 0, 0.15, VERDICT_OK},          /* 0 against 0: no error */
        {MEASURE_TOL, 1, 0, 0.15, VERDICT_OUTSIDE},     /* 1 against 0: no relative error */
        {MEASURE_EXACT, 3, 3, 0, VERDICT_OK},           {MEASURE_EXACT, 4, 3, 0, VERDICT_MISMATCH},
        {MEASURE_BOUND, 3, 3, 0, VERDICT_OK}, /* at the bound: "at most" holds */
        {MEASURE_BOUND, 4, 3, 0, VERDICT_OVER},         {MEASURE_INFO, 99, 1, 0, VERDICT_INFO},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Verdict v = check_verdict(rows[i].mode, rows[i].value, rows[i].ref, rows[i].tol);
        CHECKF(v == rows[i].want, "row %zu: verdict %d, expected %d", i, v, rows[i].want);
    }
    CHECK_NEAR(check_rel_err(114, 100), 0.14, 1e-15);
    CHECK_NEAR(check_rel_err(86, 100), -0.14, 1e-15);
    CHECK_NEAR(check_rel_err(0, 0), 0.0, 0.0);
    CHECK(isnan(check_rel_err(1, 0)));
    CHECK(isnan(check_rel_err(NAN, 1)));
    CHECK(isnan(check_rel_err(1, NAN)));
    /* the mean of errors 0.1, -0.3, 0.2 row by row: |e| 0.1 -> (0.1 + 0.3) / 2 = 0.2 -> (0.4 + 0.2) / 3 = 0.2;
     * signed 0.1 -> (0.1 - 0.3) / 2 = -0.1 -> (-0.2 + 0.2) / 3 = 0 */
    const double err[3] = {0.1, -0.3, 0.2};
    double mae = 0, bias = 0;
    for (int n = 0; n < 3; n++) mae = check_mean_next(mae, n, fabs(err[n])), bias = check_mean_next(bias, n, err[n]);
    CHECK_NEAR(mae, 0.2, 1e-15);
    CHECK_NEAR(bias, 0.0, 1e-15);
}

/* The range each check accepts and how it reads, for a row planned at 100 (tolerance 0.15): tolerance
 * [100 x 0.85, 100 x 1.15] = [85, 115] "+-15 %"; exact [100, 100]; bound [0, 100] "<= plan"; info and a row
 * with nothing planned accept no range. */
static void test_check_accepted(void)
{
    static const struct {
        MeasureMode mode;
        int has_planned, checked;
        double lo, hi;
        const char *text;
    } rows[] = {
        {MEASURE_TOL, 1, 1, 85, 115, "+-15 %"},   {MEASURE_EXACT, 1, 1, 100, 100, "exact"},
        {MEASURE_BOUND, 1, 1, 0, 100, "<= plan"}, {MEASURE_INFO, 1, 0, 0, 0, "-"},
        {MEASURE_EXACT, 0, 0, 0, 0, "exact"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        MeasureRow r = {0};
        r.mode = rows[i].mode, r.has_planned = rows[i].has_planned, r.planned = 100, r.tol = 0.15;
        double lo = -1, hi = -1;
        char buf[32];
        CHECKF(check_accepted(&r, &lo, &hi) == rows[i].checked, "row %zu", i);
        if (rows[i].checked) {
            CHECK_NEAR(lo, rows[i].lo, 1e-12);
            CHECK_NEAR(hi, rows[i].hi, 1e-12);
        }
        CHECK_STR(check_mode_text(&r, buf, sizeof buf), rows[i].text);
    }
}

/* check_run on an Observed record filled by hand — no executor: the headline plan (GPT-175B, TP8 PP4 DP4,
 * te-fp8), every term the arena holds observed at the plan's bytes, every collective at the plan's bus
 * bytes and payload, no steps taken. Every exact and bound row is ok; then one byte more in the master
 * copy of the GEMM weights (master_gemm): that row is MISMATCH and so is the state total it adds to, so 2 rows fail and exact_ok is 0;
 * an executor-only term ("io", 64 B) is a row shown, never judged. */
static void test_check_run_observed(void)
{
    Catalog *cat = fx_catalog();
    PlanInput in = fx_headline(cat, "te-fp8");
    static Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    static Observed ob;
    memset(&ob, 0, sizeof ob);
    ob.backend = "cpu", ob.comm = "single";
    for (int i = 0; i < MT_COUNT_; i++) {
        ob.held[i] =
            mem_term_category((MemTermId)i) != MC_OVERHEAD; /* what an arena carves: every term but the overheads */
        ob.placed[i] = ob.held[i] ? p.mem[i].bytes : 0;
    }
    for (int i = 0; i < CO_COUNT_; i++) {
        ob.coll[i].bus_step = (double)p.coll[i].step_bytes;
        ob.coll[i].payload_bytes = p.coll[i].payload_bytes * p.coll[i].calls; /* no steps: counted as one */
        ob.coll[i].calls = p.coll[i].calls;
    }
    ob.extra[0].name = "io", ob.extra[0].bytes = 64, ob.nextra = 1;
    static Comparison c;
    check_run(&p, &ob, NULL, &c);
    CHECK_EQ_INT(c.failed, 0);
    CHECK(c.exact_ok);
    ob.placed[MT_MASTER_GEMM] += 1;
    check_run(&p, &ob, NULL, &c);
    CHECK_EQ_INT(c.failed, 2);
    CHECK(!c.exact_ok);
    int seen = 0;
    for (int i = 0; i < c.n; i++) {
        const MeasureRow *r = &c.rows[i];
        if (!strcmp(r->name, "master_gemm") || !strcmp(r->name, "total_state")) {
            CHECKF(r->verdict == VERDICT_MISMATCH, "%s: verdict %d", r->name, r->verdict);
            seen++;
        }
        if (!strcmp(r->name, "io")) {
            CHECK(r->mode == MEASURE_INFO && r->measured == 64);
            seen++;
        }
    }
    CHECK_EQ_INT(seen, 3);
    free(cat);
}

int main(void)
{
    RUN(test_verdicts);
    RUN(test_check_verdict);
    RUN(test_check_accepted);
    RUN(test_check_run_observed);
    return test_summary();
}
