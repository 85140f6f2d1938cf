/* check/compare.h — planned versus observed: one row type (MeasureRow), one
 * verdict enum, one set of checks (exact, bound, tolerance, info) and the one
 * judge of them, for a run of the executor (check_run, below; exec/measure's
 * compare() fills the Observed record and calls it), a user's training log
 * (check-log) and FP8-LM Table 5 (reports/seed_report.c).
 *
 *   check_run(plan, observed, tolerances, &cmp)
 *
 * Rows, by section:
 *   memory   every memory term of the Plan beside the bytes the arena placed for
 *            it (the same MemTermId indexes both), the category totals (the
 *            high-water of what the run held), the executor-only terms (io,
 *            rope_table: shown, not in the plan), and on a device the driver's
 *            counts (category "device"): device_used against the plan's total,
 *            context (with what the first step loaded lazily), communicator,
 *            arena, what lies outside the arena, the rises during phases;
 *   time     the four phases, the device categories (GEMM, other kernels,
 *            optimizer, collectives) and the step, medians over the timed
 *            steps with their spread;
 *   rate     tokens/s, model TFLOP/s and MFU (which follow from the step row),
 *            and the steps taken beside the steps asked for (fewer: the run
 *            was stopped, and every row covers only the steps taken);
 *   comm     per planner collective (CollectiveId) the bytes this GPU sent per
 *            step (bus bytes) against the plan's, byte for byte, and the calls
 *            and payload beside it.
 * Checks, with the tolerance derived from what the plan models:
 *   MEASURE_EXACT  persistent states, FP8 copies, scales, the activation items
 *                  the plan lists tensor by tensor (the executor saves them one
 *                  for one), the workspace carved from the arena, bus bytes per
 *                  collective: equal, byte for byte;
 *   MEASURE_BOUND  a peak estimate (the transient working set, the activation
 *                  total): the plan must not be exceeded;
 *   MEASURE_TOL    a prediction within a stated relative tolerance (the step
 *                  time on a GPU, the device's total memory);
 *   MEASURE_INFO   shown, never failing: what this backend cannot measure, what
 *                  the plan does not model, what follows from a checked row.
 * A run exits non-zero (ST_TOLERANCE, exit 1) when any checked row fails.
 * Pure: no I/O (reports/run_report.c renders the rows). */
#ifndef FP8PLAN_CHECK_COMPARE_H
#define FP8PLAN_CHECK_COMPARE_H

#include <stdint.h>

#include "check/observed.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MEASURE_EXACT = 0, MEASURE_BOUND, MEASURE_TOL, MEASURE_INFO } MeasureMode;

typedef enum {
    VERDICT_OK = 0,
    VERDICT_MISMATCH, /* exact term differs */
    VERDICT_OVER,     /* measured above the plan's bound */
    VERDICT_OUTSIDE,  /* outside the relative tolerance */
    VERDICT_INFO,     /* not checked (see note) */
} Verdict;

typedef enum { CMP_MEMORY = 0, CMP_TIME, CMP_RATE, CMP_COMM, CMP_SECTIONS } CompareSection;

/* What a row's numbers are. */
typedef enum { UNIT_BYTES = 0, UNIT_SECONDS, UNIT_VALUE } RowUnit;

typedef struct {
    CompareSection section;
    char name[40];
    const char *category; /* "state", "fp8_copy", "scale", "activation", "overhead", "device", "time", "rate", "comm" */
    RowUnit kind;
    int has_planned, has_measured;
    double planned, measured; /* bytes (exact below 2^53), seconds or a rate */
    MeasureMode mode;
    double tol;       /* MEASURE_TOL: relative tolerance */
    const char *note; /* why a row is INFO, or what the tolerance is */
    Verdict verdict;  /* filled by measure_judge */
    /* Rows measured once per step: how much the steps varied, (max − min) /
     * median over the timed steps (warm-up excluded). */
    int has_spread;
    double spread;
    const char *unit; /* rates ("tok/s", "TFLOP/s", "%"); NULL for bytes and seconds */
} MeasureRow;

/* The tolerances of the checked predictions. */
typedef struct {
    double step_time;   /* relative, the step time on a GPU (issue 6's target: 0.15) */
    double device_used; /* relative, the driver's peak against the plan's total (0.05) */
} Tolerances;

Tolerances compare_tolerances_default(void);

enum {
    COMPARE_MAX_ROWS = 256
}; /* a TP x EP x ZeRO-1 layout of the executor has about 140 (96 dropped its last rows) */

typedef struct Comparison {
    MeasureRow rows[COMPARE_MAX_ROWS];
    int n;
    int failed;        /* checked rows outside their check */
    int exact_ok;      /* every exact row matches */
    char notes[2][96]; /* storage for notes naming the plan's GPU */
} Comparison;

/* Every row of a finished run, verdicts filled (tol NULL: the defaults). */
void check_run(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *out);

/* value / ref − 1: a figure's relative error against its reference — a run's measured value against
 * the plan, a prediction against a published figure (models/measured.csv, FP8-LM Table 5). 0 when both
 * are 0; NaN when either is NaN, or ref is 0 and value is not. */
double check_rel_err(double value, double ref);

/* The one judgement of a value against its reference: MEASURE_EXACT equal, MEASURE_BOUND at most ref,
 * MEASURE_TOL |check_rel_err| within tol (NaN is outside); VERDICT_INFO for MEASURE_INFO. */
Verdict check_verdict(MeasureMode mode, double value, double ref, double tol);

/* The mean of n values and one more, x: (mean · n + x) / (n + 1) (errors summed up row by row). */
static inline double check_mean_next(double mean, int n, double x) { return (mean * n + x) / (n + 1); }

/* Append a row, zeroed but for these (NULL when the comparison is full): the rows of a run and of a
 * user's training log (check-log) are made the same way. */
MeasureRow *cmp_row(Comparison *c, CompareSection sec, const char *name, const char *category, RowUnit kind,
                    MeasureMode mode, const char *note);
/* Set a row's values (r may be NULL). */
void cmp_set(MeasureRow *r, int has_planned, double planned, int has_measured, double measured);

/* Fill every row's verdict (check_verdict of measured against planned; INFO where either is missing);
 * returns the number of failed rows. */
int measure_judge(MeasureRow *rows, int n);

/* check_rel_err(measured, planned), or NaN when either is missing. */
double measure_rel_err(const MeasureRow *r);

/* "ok", "MISMATCH", "OVER", "OUTSIDE", or the note for INFO rows. */
const char *measure_verdict_text(const MeasureRow *r);

/* "exact", "<= plan", "tolerance", "-". */
const char *measure_mode_name(MeasureMode m);

/* The interval a row's check accepts (exact: the planned value; bound: 0 up to the plan; tolerance: the plan
 * within the row's tolerance); 0 when the row is not checked (info, or nothing planned). */
int check_accepted(const MeasureRow *r, double *lo, double *hi);

/* The check as a reader sees it: "exact", "<= plan", "+-T %" (in buf) or "-". */
const char *check_mode_text(const MeasureRow *r, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
