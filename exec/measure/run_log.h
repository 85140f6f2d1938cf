/* exec/measure/run_log.h — a training run's steps as measured, and the time and
 * throughput rows it reports beside the Plan (`fp8plan run`'s tables).
 *
 * Every step records its loss, its four phases (forward, backward,
 * communication, optimizer: device time between the backend's timestamps where
 * it has them, host clock otherwise), and, on a backend that times its own
 * operations, device seconds per category (GEMM, other kernels, optimizer,
 * collectives). Device memory is sampled around every phase (DevMeasure). The
 * rows give the median over the steps after the warm-up and the spread,
 * (max − min) / median, so a noisy measurement shows as noisy.
 *
 * Shared by the CPU and GPU backends; with a backend without measurement hooks
 * (the CPU reference) the device parts are simply absent. Never prints. */
#ifndef FP8PLAN_EXEC_RUN_LOG_H
#define FP8PLAN_EXEC_RUN_LOG_H

#include <stdint.h>

#include "exec/measure/device_measure.h"
#include "exec/model/gpt.h"
#include "exec/measure/measure.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t cap;                /* steps allocated */
    uint32_t steps, first_step;  /* steps run; optimizer steps taken before the first (resume) */
    float *loss;                 /* (cap) mean loss of each step's batch */
    double *phase[4];            /* (cap) seconds per step of each phase (PHASE_*) */
    double *step_s;              /* (cap) the phases' sum */
    double *cat[BK_OPCAT_COUNT]; /* (cap) device seconds per step of each category (BackendOpCat) */
    uint32_t cat_steps;          /* steps for which the backend gave category times */
    int phase_device;            /* phases timed by the backend's timestamps (device time) */
} RunLog;

/* Steps left out of the medians as warm-up when later steps exist: the first
 * step loads kernels, picks GEMM algorithms, connects NCCL and grows scratch
 * memory. */
enum { RUN_WARMUP_STEPS = 1 };

/* Index of the first timed step in the log. */
uint32_t run_timed_from(const RunLog *l);

Status run_log_init(RunLog *l, uint32_t steps, Err *e);
void run_log_free(RunLog *l);

/* One training step (gpt_step) with its measurements: per-operation timing and
 * memory samples between phases when dm has the backend's hooks (dm may be
 * NULL), then the step appended to the log. ST_USAGE past the log's size. */
Status run_step(Gpt *g, DevMeasure *dm, RunLog *l, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Median of v[from..n) and its spread (max − min) / median; NaN for both when
 * the range is empty, spread NaN when the median is 0. */
void run_stats(const double *v, uint32_t from, uint32_t n, double *median, double *spread);

/* Time rows (category "time", seconds, at most RUN_MAX_TIME_ROWS):
 *   forward, backward, communication, optimizer   the phases;
 *   gpu_gemm, gpu_kernels, gpu_optimizer, gpu_comm device time by category,
 *       when the backend times its operations, beside the plan's GEMM,
 *       attention + other kernels + weight casts, optimizer and communication;
 *   step   the phases' sum beside the plan's step time: checked within ±15 %
 *          on a GPU backend (issue 6's target), shown on the CPU reference,
 *          which is not the machine the plan describes.
 * Medians over the timed steps, spreads filled. */
enum { RUN_MAX_TIME_ROWS = 9 };
int run_time_rows(const RunLog *l, const Plan *p, const Gpt *g, MeasureRow *rows);

/* Throughput rows (category "rate", unit set, at most RUN_MAX_RATE_ROWS):
 *   tokens_per_s   tokens per step / median step;
 *   model_tflops   the plan's model FLOPs per step (6N + attention) / median step;
 *   mfu_bf16, mfu_fp8  (when peak is not NULL: a device) that rate in percent
 *                  of the device's dense BF16 and FP8 peaks, "unknown" with
 *                  the reason when the device matches no catalog row.
 * Shown, not checked: they follow from the step row. */
enum { RUN_MAX_RATE_ROWS = 4 };
int run_rate_rows(const RunLog *l, const Plan *p, const Gpt *g, const DevmPeak *peak, MeasureRow *rows);

#ifdef __cplusplus
}
#endif
#endif
