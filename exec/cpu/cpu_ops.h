/* exec/cpu/cpu_ops.h — the CPU reference backend's operations, shared by its
 * files (cpu_backend.c fills the Backend table with them, each behind its
 * shared check). Semantics are those of BACKEND_OPS in exec/backend/backend.h.
 * Internal to exec/cpu/. */
#ifndef FP8PLAN_EXEC_CPU_CPU_OPS_H
#define FP8PLAN_EXEC_CPU_CPU_OPS_H

#include "exec/backend/backend.h"

/* Private FP32 scratch owned by the backend (like cuBLASLt's internal
 * workspace, it is not part of the arena): grown on demand, reused. Slots 0-3
 * are the kernels' working buffers; CPU_SLOT_GROUPS holds a grouped GEMM's
 * group table (cpu_gemm_group.c), alive across the GEMMs it runs, so a MoE
 * step allocates only when a call has more groups than any before it. */
enum { CPU_SLOT_GROUPS = 4, CPU_SCRATCH_SLOTS = 5 };
typedef struct {
    float *buf[CPU_SCRATCH_SLOTS];
    uint64_t cap[CPU_SCRATCH_SLOTS]; /* floats */
} CpuImpl;

/* Scratch slot i (0 .. CPU_SCRATCH_SLOTS−1) with at least n floats; NULL +
 * ST_NOMEM on failure. */
float *cpu_scratch(Backend *bk, int slot, uint64_t n, Err *e);

/* Per-worker scratch in slot i: par_threads() regions of at least `floats`
 * floats, 64-byte aligned; worker w's region starts at the result + w · *stride. */
float *cpu_scratch_workers(Backend *bk, int slot, uint64_t floats, uint64_t *stride, Err *e);

/* Elements per task of the element-wise kernels on the thread pool (a fixed
 * cut, so results never depend on the thread count; below it, one thread). */
enum { CPU_CHUNK = 1 << 15 };

/* OpenBLAS to one thread per call (once per process, before any BLAS call): the
 * CPU backend's GEMM tiles and attention blocks call sgemm from the pool's
 * threads concurrently. backend_cpu_create calls it. */
void cpu_blas_init(void);

/* cpu_gemm, cpu_cast_transpose, ..., cpu_fp8_adam: one per operation. */
BACKEND_DECLARE(cpu)

#endif
