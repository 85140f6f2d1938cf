/* exec/backend/scaling.h — per-tensor scale updates of the executor's scaling state,
 * built on fp8/'s scale policies (fp8/scale.h) so the CPU backend computes
 * exactly what `fp8plan scaling` and the fp8/ tests compute.
 *
 * Conventions (TE): scale is the quantization multiplier, fmax/amax/2^margin. */
#ifndef FP8PLAN_EXEC_SCALING_H
#define FP8PLAN_EXEC_SCALING_H

#include <stdint.h>

#include "exec/backend/backend.h"

/* One delayed-scaling step for one tensor of a bank, whose history is
 * hist[j·stride], j < len (TE's (len, n) layout: row 0 = this step's amax of
 * every tensor, contiguous for one amax all-reduce). The window amax (all len
 * rows for AMAX_ALGO_MAX, row 0 for AMAX_ALGO_MOST_RECENT; fmaxf, so NaN is
 * ignored) gives *scale by fp8/'s delayed policy (scale_update: previous scale
 * kept on amax 0, Inf, NaN; FLT_MAX when the quotient overflows); then the
 * history rotates — [a_N, a_1, …, a_{N−1}] becomes [0, a_2, …, a_{N−1}, a_N] —
 * as fp8/delayed.h's delayed_step does for a contiguous history. A row-0 amax
 * of exactly 0 (the tensor did not run, or was all zeros) changes nothing:
 * no roll, the scale stays — current TE's bulk kernel, which the executor
 * follows (fp8/delayed.h models the older per-tensor kernel, which rolls). */
void scaling_delayed_step(float *hist, uint32_t stride, uint32_t len, AmaxAlgo algo, Dtype fmt, int margin,
                          float *scale);

/* Current scaling (fp8/'s scale_from_amax): fmax/amax/2^margin; 1 when amax is
 * 0, Inf or NaN; FLT_MAX when the quotient overflows. */
float scaling_current(float amax, Dtype fmt, int margin);

/* Power-of-two scale of FP8-LM's optimizer states (MS-AMP's rule):
 * 2^(floor(log2(fmax/amax)) − margin) for fmt E4M3/E5M2 or FP16 (fmax 65504);
 * `prev` when amax is 0 or not finite. */
float scaling_pow2(float amax, Dtype fmt, int margin, float prev);

#endif
