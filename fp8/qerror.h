/* fp8/qerror.h — how much a quantize/dequantize round trip lost.
 *
 * Over the elements whose input x is finite (non-finite inputs are skipped):
 *   rel_rms   = sqrt( sum (x - y)^2 / sum x^2 )          (0 when exact)
 *   snr_db    = 10 log10( sum x^2 / sum (x - y)^2 )      (+Inf when exact)
 *   max_abs   = max |x - y|
 *   mean_rel  = mean over nonzero x of |x - y| / |x|  (a flushed value counts 1)
 * rel_rms and snr_db weigh elements by energy, so a few large outliers that
 * quantize well can hide what happened to the many small values; mean_rel
 * weighs every element the same and shows that lost resolution.
 * plus the fractions of the finite inputs (counts->n less the skipped ones)
 * that were flushed to zero and that saturated, taken from the quantizer's
 * QuantCounts (which should count only finite inputs: quantize with the
 * non-finite ones set to 0). Sums are in double.
 * A finite input whose round trip y is NaN or Inf (FP8_NOSAT, or an E8M0
 * block scale whose dequantized value passes FLT_MAX) has an infinite error:
 * it is counted in `nonfinite` and rel_rms, max_abs and mean_rel are +Inf,
 * snr_db -Inf. When no element is in the sums (every input NaN or Inf) the
 * four error figures are NaN: there is nothing to measure, not a perfect
 * round trip. */
#ifndef FP8PLAN_FP8_QERROR_H
#define FP8PLAN_FP8_QERROR_H

#include <stdint.h>

#include "fp8/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t n;         /* elements in the sums */
    uint64_t skipped;   /* non-finite inputs */
    uint64_t nonfinite; /* finite inputs whose output is NaN/Inf (their error is infinite) */
    double rel_rms;
    double snr_db;
    double max_abs;
    double mean_rel;       /* mean over nonzero inputs of |x - y| / |x|: every element weighs the same */
    double flushed_frac;   /* counts->flushed / counts->n (0 without counts) */
    double saturated_frac; /* counts->saturated / counts->n */
} QuantError;

/* Compare x with its round trip y (n elements); counts may be NULL. */
void qerr_compute(const float *x, const float *y, uint64_t n, const QuantCounts *counts, QuantError *out);

#ifdef __cplusplus
}
#endif
#endif
