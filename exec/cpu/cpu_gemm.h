/* exec/cpu/cpu_gemm.h — what the CPU backend's two GEMMs share: the BLAS GEMM
 * (cpu_gemm.c, the backend's gemm()) and the hand-written reference
 * (cpu_gemm_ref.c, the independent oracle the tests hold the BLAS one to).
 * Internal to exec/. */
#ifndef FP8PLAN_EXEC_CPU_CPU_GEMM_H
#define FP8PLAN_EXEC_CPU_CPU_GEMM_H

#include "exec/backend/backend.h"

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

/* The BLAS GEMM on the calling thread alone, for callers that run several
 * GEMMs at once on the pool (grouped_gemm): the same tiles as gemm(), so the
 * same D bit for bit. cpu_gemm_serial_plan checks g (cpu_gemm_check) and gives
 * the floats of its two buffers, the shared operand's (need[0], 0 for none)
 * and the work buffer (need[1]); ST_SOFTWARE for a GEMM that has no serial path
 * (K longer than one chunk, or sizes beyond the BLAS's 32 bits): gemm() it.
 * cpu_gemm_serial runs a GEMM so planned in buffers of those sizes. */
Status cpu_gemm_serial_plan(const GemmDesc *g, uint64_t need[2], Err *e);
void cpu_gemm_serial(const GemmDesc *g, float *sbuf, float *wbuf);

#endif
