/* exec/measure/measurement.h — what a training run measured, in the plan's
 * vocabulary, filled by the executor and handed to check/ as an Observed record.
 *
 *   bytes per term      the arena's bytes per memory term (MemTermId, plus the
 *                       executor-only XT_* terms), the most live at once;
 *   device samples      device memory as the driver counts it around every
 *                       phase (DevMeasure, a backend with hooks only);
 *   seconds             per step: the four phases (forward, backward,
 *                       communication, optimizer — device time between the
 *                       backend's timestamps where it has them, the host clock
 *                       otherwise) and, on a backend that times its own
 *                       operations, device seconds per category (GEMM, other
 *                       kernels, optimizer, collectives);
 *   communication       calls, payload and bus bytes per planner collective
 *                       (CollectiveId) over the measured steps;
 *   the loss of every step.
 * Nothing here prints or judges: measure_observe() copies it into the plain
 * record of check/observed.h (the planner's vocabulary), check_run()
 * (check/compare.h) turns that and a Plan into rows with verdicts, and
 * reports/run_report.c renders them; compare() does the first two.
 *
 * Use:
 *   measure_init(&ms, bk, steps, e);        after the backend is created
 *   measure_after_comm(&ms, bk);            after the communicator
 *   measure_after_model(&ms, model);        after model_create (the arena)
 *   measure_step(&ms, model, in, tgt, &loss, e)   each step
 *   measure_finish(&ms, model);             the communicator's counts
 *   compare(plan, &ms, tol, &cmp);          rows and verdicts
 *   measure_free(&ms); */
#ifndef FP8PLAN_EXEC_MEASURE_MEASUREMENT_H
#define FP8PLAN_EXEC_MEASURE_MEASUREMENT_H

#include <stdint.h>

#include "check/compare.h"
#include "check/observed.h"
#include "exec/measure/device_measure.h"
#include "exec/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* the backend */
    char backend[16];              /* "cpu", "cuda" */
    int on_device;                 /* a GPU: the hardware a plan describes (the CPU reference is not) */
    uint64_t gemm_workspace_bytes; /* the backend's GEMM workspace, carved from the arena (0: none) */
    /* memory */
    uint64_t arena_bytes;         /* the one allocation */
    uint64_t placed[ARENA_TERMS]; /* exact bytes live at once per term */
    DevMeasure dev;               /* device memory and the device (dev.have: the backend has hooks) */
    DevmPeak peak;                /* the device's catalog row and peaks for MFU (dev.have; measure_match) */
    /* per step (cap allocated, steps run) */
    uint32_t cap, steps, first_step; /* first_step: optimizer steps taken before the first (resume) */
    uint64_t tokens_per_step;        /* micro-batches · B · T */
    float *loss;                     /* (cap) mean loss of each step's tokens */
    double *phase[PHASE_COUNT];      /* (cap) seconds per step of each phase (PHASE_*) */
    double *step_s;                  /* (cap) the phases' sum */
    double *cat[BK_OPCAT_COUNT];     /* (cap) device seconds per step of each category (BackendOpCat) */
    uint32_t cat_steps;              /* steps for which the backend gave category times */
    double *moe[MOE_PARTS];          /* (cap) host seconds per step of each MoE part (MoePart) */
    uint32_t moe_steps;              /* steps that timed them (a backend without timestamps, MoE layers) */
    int phase_device;                /* phases timed by the backend's timestamps (device time) */
    /* communication over the measured steps */
    char comm[16]; /* "single", "nccl" */
    int ranks;
    CommStats coll[CO_COUNT_], coll_total;
    CommStats coll_start[CO_COUNT_], coll_total_start; /* the communicator's counts when the steps began */
    double *coll_s; /* (CO_COUNT_ · cap) seconds inside each collective's calls per step, step i of
                       collective c at [c · cap + i] (the communicator's monotonic clock; 0 where untimed) */
    double *sorted; /* (cap) measure_stats' scratch: the medians need no allocation once the steps ran */
} Measurement;

/* Index of the first timed step (check_timed_from: MEASURE_WARMUP_STEPS left out). */
uint32_t measure_timed_from(const Measurement *ms);

/* Room for `steps` steps, the backend's name, device memory with the context
 * up (backends with hooks). ST_NOMEM. */
Status measure_init(Measurement *ms, Backend *bk, uint32_t steps, Err *e);
void measure_free(Measurement *ms);
/* Device memory once the communicator exists. */
void measure_after_comm(Measurement *ms, Backend *bk);
/* The arena's bytes per term, device memory with the arena, and the
 * communicator's counts so far (the steps' are what follows). */
void measure_after_model(Measurement *ms, const Model *m);
/* One training step (model_step) with its measurements: per-operation timing
 * and memory samples between phases when the backend has the hooks, then the
 * step appended. ST_USAGE past the room made by measure_init. */
Status measure_step(Measurement *ms, Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);
/* The catalog row of the measured device (a backend with hooks): peak. */
void measure_match(Measurement *ms, const Catalog *c);
/* What the communicator counted over the steps. */
void measure_finish(Measurement *ms, const Model *m);

/* The run in the planner's vocabulary: the counts copied, the per-step arrays
 * referred to (valid while ms lives; medians use ms->sorted as scratch). */
void measure_observe(const Measurement *ms, Observed *out);

/* Every row of a finished run, verdicts filled: measure_observe, then
 * check_run (check/compare.h). */
void compare(const Plan *p, const Measurement *ms, const Tolerances *tol, Comparison *out);

#ifdef __cplusplus
}
#endif
#endif
