/* exec/cpu/cpu_ops.h — the CPU reference backend's operations, shared by its
 * files (cpu_backend.c fills the Backend table with them, each behind its
 * shared check). Semantics are those of BACKEND_OPS in exec/backend.h.
 * Internal to exec/cpu/. */
#ifndef FP8PLAN_EXEC_CPU_CPU_OPS_H
#define FP8PLAN_EXEC_CPU_CPU_OPS_H

#include "exec/backend.h"

/* Private FP32 scratch owned by the backend (like cuBLASLt's internal
 * workspace, it is not part of the arena): grown on demand, reused. */
typedef struct {
    float *buf[3];
    uint64_t cap[3]; /* floats */
} CpuImpl;

enum { CPU_MAX_THREADS = 8 };

/* Worker threads for the large GEMMs: $FP8PLAN_THREADS, else the online CPUs,
 * at most CPU_MAX_THREADS. Results do not depend on it. */
int cpu_threads(void);

/* Scratch slot i (0..2) with at least n floats; NULL + ST_NOMEM on failure. */
float *cpu_scratch(Backend *bk, int slot, uint64_t n, Err *e);

/* cpu_gemm, cpu_cast_transpose, ..., cpu_fp8_adam: one per operation. */
BACKEND_DECLARE(cpu)

#endif
