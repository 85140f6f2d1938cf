/* exec/scaling.h — per-tensor scale arithmetic shared by the CPU backend's
 * scaling kernels and the executor's host-side checks.
 *
 * Conventions (TE): scale is the quantization multiplier, fmax/amax/2^margin. */
#ifndef FP8PLAN_EXEC_SCALING_H
#define FP8PLAN_EXEC_SCALING_H

#include <stdint.h>

#include "exec/backend.h"

/* One delayed-scaling step for one tensor whose history is hist[j·stride],
 * j < len (row 0 = this step's amax): the window amax (all len rows for
 * AMAX_ALGO_MAX, row 0 for AMAX_ALGO_MOST_RECENT, NaN ignored) gives the new
 * *scale when finite and > 0 (otherwise *scale is kept; an infinite quotient
 * becomes FLT_MAX); then the history rotates — [a_N, a_1, …, a_{N−1}] becomes
 * [0, a_2, …, a_{N−1}, a_N] — so row 0 is ready for the next step. */
void scaling_delayed_step(float *hist, uint32_t stride, uint32_t len, AmaxAlgo algo, float fmax, int margin,
                          float *scale);

/* Current scaling: fmax/amax/2^margin; 1 when amax is 0, Inf or NaN; FLT_MAX
 * when the quotient overflows (TE's compute_scale_from_amax). */
float scaling_current(float amax, float fmax, int margin);

/* Power-of-two scale for FP8-LM's optimizer states (MS-AMP's rule):
 * 2^(floor(log2(fmax/amax)) − margin); `prev` when amax is 0 or not finite. */
float scaling_pow2(float amax, float fmax, int margin, float prev);

#endif
