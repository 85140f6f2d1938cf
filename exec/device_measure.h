/* exec/device_measure.h — what a run on a GPU measures beyond its arena, in the
 * Plan's terms: device memory as the driver reports it (cudaMemGetInfo through
 * the backend's mem_info hook) at the points where the plan's overhead terms
 * appear, device time by category from the backend's per-operation events, and
 * the device matched to a catalog GPU for MFU.
 *
 * Why beside the arena: the CUDA context, module images, library handles, NCCL
 * buffers and allocator slack are real bytes on the device that no tensor owns;
 * the plan models them as overhead terms (cuda_context, comm_buffer,
 * fragmentation) and only the driver's count can check them.
 *
 * Use (the runner, around its existing steps):
 *   devm_init(&m, bk);                         after the backend is created
 *   devm_sample(&m, bk, DEVM_AFTER_COMM);      after the communicator
 *   devm_sample(&m, bk, DEVM_AFTER_MODEL);     after gpt_create (the arena)
 *   devm_step_begin / devm_step_end(&m, bk)    around each timed step
 *   n += devm_rows(&m, plan, g, rows + n);     with the memory/time rows
 * Backends without the hooks (the CPU reference) make every call a no-op and
 * devm_rows return 0. Never prints, never exits. */
#ifndef FP8PLAN_EXEC_DEVICE_MEASURE_H
#define FP8PLAN_EXEC_DEVICE_MEASURE_H

#include <stdint.h>

#include "exec/backend.h"
#include "exec/gpt.h"
#include "exec/measure.h"
#include "planner/catalog.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DEVM_AFTER_BACKEND = 0, /* context, module images, library handles */
    DEVM_AFTER_COMM,        /* + NCCL buffers */
    DEVM_AFTER_MODEL,       /* + the arena */
    DEVM_STEP,              /* after a step: + private scratch, allocator slack (peak tracked) */
    DEVM_POINTS
} DevmPoint;

typedef struct {
    int have; /* the backend has mem_info, device_info and op_times */
    BackendDeviceInfo info;
    uint64_t total_bytes;
    uint64_t used[DEVM_POINTS]; /* device bytes in use (total − free) at each point; DEVM_STEP: the peak */
    int sampled[DEVM_POINTS];
    double op_s[BK_OPCAT_COUNT]; /* device time summed over the timed steps */
    uint32_t op_steps;
    Status st;     /* first hook error, kept so the run can report it */
    char msg[512]; /* its message */
} DevMeasure;

/* Start: reads the device and samples DEVM_AFTER_BACKEND. */
void devm_init(DevMeasure *m, Backend *bk);
/* Sample device memory at a point (DEVM_STEP keeps the maximum). */
void devm_sample(DevMeasure *m, Backend *bk, DevmPoint at);
/* Per-operation timing around one step: begin switches it on, end sums the
 * step's device time per category and samples DEVM_STEP. */
void devm_step_begin(DevMeasure *m, Backend *bk);
void devm_step_end(DevMeasure *m, Backend *bk);

/* Rows for the plan-versus-measured table (at most DEVM_MAX_ROWS):
 *   device_used    the driver's peak count vs the plan's total (every term,
 *                  overheads included): checked within ±5 % (issue 6's target);
 *   cuda_context   used after the backend came up, vs the plan's term (shown);
 *   comm_buffer    what creating the communicator added (shown);
 *   outside_arena  peak − communicator − arena: private scratch and slack, vs
 *                  the plan's fragmentation term (shown);
 *   gpu_gemm, gpu_kernels, gpu_optimizer, gpu_comm   device seconds per step by
 *                  category, beside the plan's gemm, attention + non-GEMM,
 *                  optimizer and exposed DP-communication times (shown).
 * Returns the number of rows (0 without the hooks or samples). */
enum { DEVM_MAX_ROWS = 8 };
int devm_rows(const DevMeasure *m, const Plan *p, const Gpt *g, MeasureRow *rows);

/* The catalog GPU a device name belongs to: the row whose first name token
 * ("h100" of "h100-sxm") appears in the device name (case-insensitive), and
 * among several, the one whose other tokens appear too ("pcie"), else its
 * "sxm" row. NULL when none matches: MFU is then unknown. */
const GpuSpec *devm_match_gpu(const Catalog *c, const char *device_name);

/* MFU in percent of the GPU's dense BF16 and FP8 peaks for a model FLOP rate;
 * NaN where the peak is unknown (gpu NULL, or no FP8 tensor cores). */
void devm_mfu(const GpuSpec *gpu, double flops_per_s, double *bf16_pct, double *fp8_pct);

#ifdef __cplusplus
}
#endif
#endif
