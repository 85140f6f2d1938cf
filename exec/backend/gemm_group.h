/* exec/backend/gemm_group.h — a grouped GEMM taken apart into its groups: the
 * GemmDesc of group x of a GroupedGemmDesc or a GroupedWgradDesc
 * (exec/backend/backend_desc.h), as a per-expert loop of gemm() would pass it,
 * and the check of the counts. Pure C, no I/O: a backend that runs the groups
 * one library call each (the CUDA backend, exec/cuda/gemm_group.cu) builds its
 * calls here, and tests/unit/test_gemm_group.c holds these descriptors, run
 * through the CPU backend's gemm(), to its grouped_gemm bit for bit. */
#ifndef FP8PLAN_EXEC_GEMM_GROUP_H
#define FP8PLAN_EXEC_GEMM_GROUP_H

#include <stdint.h>

#include "exec/backend/backend_desc.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* K extent of one 1x128 / 128x128 scale block (fp8/granularity.h's tiles). */
enum { GEMM_GROUP_SCALE_BLOCK = 128 };

/* The counts (G, host memory): none negative, adding up to `rows`; ST_USAGE naming `op`, the group and
 * the sums otherwise. */
Status gemm_group_counts_check(const int32_t *counts, uint32_t groups, uint64_t rows, const char *op, Err *e);

/* Group x of a grouped GEMM, its rows [row0, row0 + m) of A and D (row0 = the counts before x): A's and
 * D's leading dimensions made explicit, B the x-th (N, K) weight, the scales group x's own (per-tensor:
 * element x; 1x128 A: rows row0.. of (rows, ceil(K/128)); B blocks: group x's, after the groups before).
 * d.amax is the descriptor's (gemm max-combines into it). */
GemmDesc gemm_group_desc(const GroupedGemmDesc *d, uint32_t x, uint64_t row0, uint64_t m);

/* Group x of a grouped weight gradient: its K rows [k0, k0 + kg) of A and B (k0 = the counts before x,
 * t0 = Σ ceil(count/128) before x: where group x's 1x128 scales start, at M·t0 for A and N·t0 for B),
 * D_x at x·M·N of the packed (G, M, N) output. */
GemmDesc gemm_group_wgrad_desc(const GroupedWgradDesc *d, uint32_t x, uint64_t k0, uint64_t t0, uint64_t kg);

/* ceil(n / 128): the 1x128 tiles along K of n rows. */
static inline uint64_t gemm_group_tiles(uint64_t n)
{
    return (n + GEMM_GROUP_SCALE_BLOCK - 1) / GEMM_GROUP_SCALE_BLOCK;
}

#ifdef __cplusplus
}
#endif
#endif
