/* exec/cpu/cpu_gemm.h — what the CPU backend's two GEMMs share: the BLAS GEMM
 * (cpu_gemm.c, the backend's gemm()) and the hand-written reference
 * (cpu_gemm_ref.c, the independent oracle the tests hold the BLAS one to).
 * Internal to exec/. */
#ifndef FP8PLAN_EXEC_CPU_CPU_GEMM_H
#define FP8PLAN_EXEC_CPU_CPU_GEMM_H

#include "exec/backend.h"

enum { GEMM_SCALE_BLOCK = 128 }; /* K extent of one 1x128 / 128x128 scale block */

/* gemm_desc_check, plus M·N, M·K and N·K within uint64 (ST_USAGE otherwise). */
Status cpu_gemm_check(const GemmDesc *g, Err *e);

/* 1 when either operand carries 1x128 / 128x128 block scales. */
int cpu_gemm_blocked(const GemmDesc *g);

/* Dequantization factor of operand o for its row `row` (an M or N index) and
 * K block kb of nkb: 1 without scale_inv, else by the scale granularity. */
float cpu_gemm_scale_at(const GemmOperand *o, uint64_t row, uint64_t kb, uint64_t nkb);

/* The reference GEMM: the semantics of Backend.gemm, each output summed over k
 * in increasing order on one thread. */
Status cpu_gemm_ref(Backend *bk, const GemmDesc *g, Err *e);

#endif
