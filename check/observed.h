/* check/observed.h — what a training run observed, in the planner's vocabulary: the plain record
 * check_run() (check/compare.h) holds against a Plan and reports/run_report.c summarises.
 *
 *   bytes per memory term   the most bytes live at once per MemTermId, whether the executor's one
 *                           allocation holds the term, and the executor-only terms by name;
 *   device memory           the driver's counts at the points of a run (DevmPoint) and their rises
 *                           during each phase (a backend with memory hooks only), the device's peaks;
 *   seconds per part        per step: the four phases (PHASE_*) and, where the backend times its own
 *                           operations, device seconds per category (OBS_CATS); where it does not (the CPU
 *                           backend), the MoE layers' parts by host clock (OBS_MOE_*);
 *   per collective          calls, payload and bus bytes per planner collective (CollectiveId) over
 *                           the measured steps;
 *   the loss of every step.
 * The executor fills it (exec/measure/measurement.h: measure_observe); the per-step arrays are the
 * executor's, valid while its record lives. Nothing here needs exec/: the record sits below it. */
#ifndef FP8PLAN_CHECK_OBSERVED_H
#define FP8PLAN_CHECK_OBSERVED_H

#include <stdint.h>

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parts of a training step the executor times, in this order. */
enum { PHASE_FWD = 0, PHASE_BWD, PHASE_OPT, PHASE_COMM, PHASE_COUNT };

/* Device time per category of operation: GEMMs (with attention's), every other kernel, the
 * optimizer, collectives — the order of the backend's BackendOpCat (pinned in measurement.c). */
enum { OBS_CATS = 4 };

/* Where a run samples the driver's count of device memory. */
typedef enum {
    DEVM_AFTER_BACKEND = 0, /* context, module images, library handles */
    DEVM_AFTER_COMM,        /* + NCCL buffers made with the communicator */
    DEVM_AFTER_MODEL,       /* + the arena */
    DEVM_STEP,              /* during the steps: the peak of every sample */
    DEVM_POINTS
} DevmPoint;

/* The MoE layers' parts the executor times by host clock on a backend without device timestamps (the CPU backend;
 * exec/model/model.h MoePart, in this order): router, permutes, the experts' grouped GEMMs, their activation and
 * FP8 casts, expert parallelism's exchange, the rest. */
enum { OBS_MOE_ROUTER = 0, OBS_MOE_PERMUTE, OBS_MOE_XGEMM, OBS_MOE_ACT, OBS_MOE_EP, OBS_MOE_OTHER, OBS_MOE_PARTS };

/* Executor-only memory terms (not in the plan) a record can carry. */
enum { OBS_EXTRA_TERMS = 4 };

typedef struct {
    int have;                   /* the backend reports device memory (cudaMemGetInfo) */
    uint64_t used[DEVM_POINTS]; /* bytes in use at each point; DEVM_STEP: the peak */
    int sampled[DEVM_POINTS];
    uint64_t grew[PHASE_COUNT]; /* rise of the count while each phase ran, summed over the steps */
    uint64_t lazy;              /* the first step's rise that belongs to the context (lazy library loads) */
    double peak_bf16, peak_fp8; /* dense FLOP/s of the device; NaN when unknown */
    const char *peak_why;       /* how the device was matched to a catalog GPU, or why not */
} ObsDevice;

typedef struct {
    uint64_t calls, payload_bytes; /* over the measured steps */
    double bus_bytes;              /* over the measured steps */
    double bus_step;               /* bus bytes per step, in whole bytes as the communicator counts them */
    double wait_s;                 /* waiting for the other ranks to arrive, summed */
} ObsColl;

typedef struct {
    /* the backend */
    const char *backend;           /* "cpu", "cuda" */
    int on_device;                 /* a GPU: the hardware a plan describes (the CPU reference is not) */
    uint64_t gemm_workspace_bytes; /* the backend's GEMM workspace, carved from the arena (0: none) */
    /* memory */
    uint64_t arena_bytes;          /* the one allocation */
    uint64_t placed[MT_COUNT_];    /* exact bytes live at once per plan term */
    unsigned char held[MT_COUNT_]; /* 1: the arena holds the term (its bytes are measured there) */
    struct {
        const char *name;
        uint64_t bytes;
    } extra[OBS_EXTRA_TERMS]; /* executor-only terms that held bytes */
    int nextra;
    ObsDevice dev;
    /* per step (cap asked for, steps run) */
    uint32_t cap, steps, first_step;  /* first_step: optimizer steps taken before the first (resume) */
    uint64_t tokens_per_step;         /* micro-batches · B · T */
    const float *loss;                /* (cap) mean loss of each step's tokens */
    const double *phase[PHASE_COUNT]; /* (cap) seconds per step of each phase */
    const double *step_s;             /* (cap) the phases' sum */
    const double *cat[OBS_CATS];      /* (cap) device seconds per step of each category */
    uint32_t cat_steps;               /* steps for which the backend gave category times */
    const double *moe[OBS_MOE_PARTS]; /* (cap) host seconds per step of each MoE part */
    uint32_t moe_steps;               /* steps that timed them */
    int phase_device;                 /* phases timed by the backend's timestamps (device time) */
    /* communication over the measured steps */
    const char *comm; /* "single", "mpi", "nccl" */
    int ranks;
    ObsColl coll[CO_COUNT_], coll_total;
    const double *coll_s; /* (CO_COUNT_ · cap) seconds in each collective's calls, step i of c at [c · cap + i] */
    double *sorted;       /* (cap) scratch for the medians (no allocation once the steps ran) */
} Observed;

/* Steps left out of the medians as warm-up when later steps exist: the first step loads kernels, picks
 * GEMM algorithms, connects NCCL and grows scratch memory. */
enum { MEASURE_WARMUP_STEPS = 1 };

/* Index of the first timed step of a run of `steps` steps. */
uint32_t check_timed_from(uint32_t steps);

/* Median of v[from..n) and its spread (max − min) / median; NaN for both when the range is empty, spread
 * NaN when the median is 0. scratch: room for n − from values, overwritten. */
void measure_stats(const double *v, uint32_t from, uint32_t n, double *scratch, double *median, double *spread);

#ifdef __cplusplus
}
#endif
#endif
