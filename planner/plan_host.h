/* planner/plan_host.h — a host profile's rates when more ranks run on the host than it has cores
 * (planner/plan_host.c). */
#ifndef FP8PLAN_PLANNER_PLAN_HOST_H
#define FP8PLAN_PLANNER_PLAN_HOST_H

#include <stdint.h>

#include "planner/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How much longer a rank's compute takes when `ranks` ranks time-share `cores` cores, against the rates a host
 * profile holds: ranks / cores when ranks > cores, else 1 (also for cores 0: not known). */
double plan_host_stretch(uint32_t ranks, uint32_t cores);

/* *out = *g with the compute-bound rates (GEMM, element-wise kernels, the scaled-state optimizers, the grouped
 * GEMM's per-group cost) slowed by plan_host_stretch(ranks, cores); the memory stream (hbm_bw: AdamW, GEMM
 * operands) and the collective fits as measured. A GPU (g->host 0) or a stretch of 1: an unchanged copy. Returns
 * the stretch applied (1: none). */
double plan_host_share(const GpuSpec *g, uint32_t ranks, uint32_t cores, GpuSpec *out);

#ifdef __cplusplus
}
#endif
#endif
