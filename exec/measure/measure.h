/* exec/measure/measure.h — measured versus planned, term by term, with a verdict.
 *
 * Every memory term of the Plan gets a row: the executor's measurement (the
 * bytes placed in the arena for that term, or a device measurement from the
 * backend), the plan's bytes, and a check whose tolerance is derived from what
 * the plan models:
 *   MEASURE_EXACT  persistent states, FP8 copies, scales — and the activation
 *                  items the plan lists tensor by tensor, which the executor
 *                  saves one for one: must be equal, byte for byte;
 *   MEASURE_BOUND  a peak estimate (the transient working set): the plan must
 *                  not be exceeded (a plan that overestimates is safe for
 *                  capacity, and the relative error says by how much);
 *   MEASURE_TOL    a prediction with a stated relative tolerance;
 *   MEASURE_INFO   shown, never failing: terms this backend cannot measure
 *                  (CUDA context, NCCL buffers on the CPU), that the plan
 *                  does not model, or that follow from a checked row (tokens/s
 *                  and MFU follow from the step time).
 * A run exits non-zero (ST_TOLERANCE, exit 1) when any checked row fails. */
#ifndef FP8PLAN_EXEC_MEASURE_H
#define FP8PLAN_EXEC_MEASURE_H

#include <stdint.h>

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

typedef struct {
    char name[40];
    const char *category; /* "state", "fp8_copy", "scale", "activation", "overhead", "time" */
    int has_planned, has_measured;
    double planned, measured; /* bytes (exact below 2^53) or seconds */
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

/* Fill every row's verdict; returns the number of failed rows. */
int measure_judge(MeasureRow *rows, int n);

/* (measured − planned) / planned, or NaN when either is missing or planned is 0
 * with measured non-zero (0/0 gives 0). */
double measure_rel_err(const MeasureRow *r);

/* "ok", "MISMATCH", "OVER", "OUTSIDE", or the note for INFO rows. */
const char *measure_verdict_text(const MeasureRow *r);

#ifdef __cplusplus
}
#endif
#endif
