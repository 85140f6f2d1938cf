/* exec/measure/device_measure.h — what a run on a GPU measures beyond its arena, in the
 * Plan's terms: device memory as the driver reports it (cudaMemGetInfo through
 * the backend's mem_info hook) where the plan's overhead terms appear and
 * around every phase of every step, device time by category from the
 * backend's per-operation events, and the device matched to a catalog GPU for
 * MFU.
 *
 * Why beside the arena: the CUDA context, module images, library handles, NCCL
 * buffers and allocator slack are real bytes on the device that no tensor owns;
 * the plan models them as overhead terms (cuda_context, comm_buffers,
 * fragmentation) and only the driver's count can check them.
 *
 * Use (exec/measure/measurement.h does it for a run):
 *   devm_init(&m, bk);                         after the backend is created
 *   devm_sample(&m, bk, DEVM_AFTER_COMM);      after the communicator
 *   devm_sample(&m, bk, DEVM_AFTER_MODEL);     after model_create (the arena)
 *   devm_step_begin / devm_step_end(&m, bk)    around each step
 *   devm_phase(&m, bk, phase)                  from the step's on_phase hook
 * compare() turns the samples into the "device" rows. Backends without the
 * hooks (the CPU reference) make every call a no-op. Never prints, never
 * exits. */
#ifndef FP8PLAN_EXEC_DEVICE_MEASURE_H
#define FP8PLAN_EXEC_DEVICE_MEASURE_H

#include <stdint.h>

#include "check/observed.h"
#include "exec/backend/backend.h"
#include "exec/model/model.h"
#include "catalog/catalog.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DevmPoint (DEVM_AFTER_BACKEND, DEVM_AFTER_COMM, DEVM_AFTER_MODEL, DEVM_STEP): check/observed.h. */

typedef struct {
    int have; /* the backend has mem_info, device_info and op_times */
    BackendDeviceInfo info;
    uint64_t total_bytes;
    uint64_t used[DEVM_POINTS]; /* device bytes in use (total − free) at each point; DEVM_STEP: the peak */
    int sampled[DEVM_POINTS];
    /* Per phase of the step (PHASE_FWD, PHASE_BWD, PHASE_OPT, PHASE_COMM): the
     * bytes the count rose while the phase ran, summed over the steps (lazy
     * allocations: NCCL connects on its first collective, the backend grows
     * its scratch on first use), and the highest count seen after it. */
    uint64_t grew[4], after[4];
    uint64_t last; /* count at the previous sample of this step */
    int in_step;
    /* The first step loads what CUDA loads lazily (cuBLASLt's kernels, the
     * modules of our own on first launch): what the count rose during it,
     * less the communicator's growth and the backend's private buffers
     * (device_info), belongs to the context figure. */
    int steps_seen;
    uint64_t first_begin; /* count when the first step began */
    uint64_t private0;    /* private workspace + scratch before the first step */
    uint64_t lazy;        /* the first step's rise that is neither communicator nor private buffers */
    Status st;            /* first hook error, kept so the run can report it */
    char msg[512];        /* its message */
} DevMeasure;

/* Start: reads the device and samples DEVM_AFTER_BACKEND. */
void devm_init(DevMeasure *m, Backend *bk);
/* Sample device memory at a point (DEVM_STEP keeps the maximum). */
void devm_sample(DevMeasure *m, Backend *bk, DevmPoint at);
/* Around one step: begin switches per-operation timing on; end switches it
 * off, writes the step's device time per category (BackendOpCat, seconds) and
 * returns 1 — or 0 when the backend cannot tell (no hooks, or a hook failed;
 * the first failure is kept in m->st / m->msg). */
void devm_step_begin(DevMeasure *m, Backend *bk);
int devm_step_end(DevMeasure *m, Backend *bk, double seconds[BK_OPCAT_COUNT]);
/* Between the phases of a step (Model.on_phase): −1 before the step's work,
 * PHASE_* once that phase has finished. Samples DEVM_STEP too. */
void devm_phase(DevMeasure *m, Backend *bk, int phase);
/* The same as a Model.on_phase hook (ctx = the DevMeasure, backend from it). */
typedef struct {
    DevMeasure *m;
    Backend *bk;
} DevmHook;
void devm_on_phase(void *hook, int phase);

/* The catalog GPU a device name belongs to: the row whose first name token
 * ("h100" of "h100-sxm") appears in the device name (case-insensitive), and
 * among several, the one whose other tokens appear too ("pcie"), else its
 * "sxm" row. NULL when none matches: MFU is then unknown. */
const GpuSpec *devm_match_gpu(const Catalog *c, const char *device_name);

/* The peaks a measured device is held to. */
typedef struct {
    const GpuSpec *gpu;         /* the matched catalog row, or NULL: unknown */
    double peak_bf16, peak_fp8; /* dense FLOP/s of this device; NaN when unknown */
    double sm_share;            /* device SMs / the part's full count (1 when equal or not known) */
    char why[320];              /* how it was matched, or why it was not */
} DevmPeak;

/* Match by name (devm_match_gpu), then check compute capability and SM count
 * (the row's sms column, models/gpus.csv):
 * a capability other than the row's is unknown; more SMs than the part has is
 * unknown (another part); fewer (a MIG slice, a cut-down part) scales both
 * peaks by the SM share, tensor throughput being per SM. */
void devm_peak(const Catalog *c, const BackendDeviceInfo *info, DevmPeak *out);

/* MFU in percent of the GPU's dense BF16 and FP8 peaks for a model FLOP rate;
 * NaN where the peak is unknown (gpu NULL, or no FP8 tensor cores). */
void devm_mfu(const GpuSpec *gpu, double flops_per_s, double *bf16_pct, double *fp8_pct);

#ifdef __cplusplus
}
#endif
#endif
