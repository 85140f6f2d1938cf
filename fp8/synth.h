/* fp8/synth.h — seeded synthetic tensors for quantization experiments.
 *
 * A small deterministic generator (xoshiro256** seeded through splitmix64;
 * the same seed gives the same tensor on any machine with the same libm) and
 * three distributions for a row-major (rows, cols) activation-like tensor
 * (rows = tokens, cols = hidden features):
 *   SYNTH_NORMAL    N(0, 1)
 *   SYNTH_LAPLACE   Laplace(0, b = 1/sqrt(2)): unit variance, heavier tails
 *   SYNTH_OUTLIERS  the outlier structure reported for LLM activations:
 *     - body N(0, 1);
 *     - outlier feature channels (Dettmers et al. 2022, LLM.int8(): a few
 *       hidden dimensions carry large values in most tokens): 0.1% of the
 *       columns (at least 1), chosen by the seed, scaled by 20;
 *     - massive activations (Sun et al. 2024, "Massive Activations in Large
 *       Language Models": a handful of values ~10^3-10^4 times the median
 *       magnitude, in fixed feature dimensions, at the first token and a few
 *       delimiter-like tokens): in row 0 and in every 1024th row thereafter,
 *       the first min(2, k) outlier channels hold random-signed magnitudes
 *       uniform in [500, 1000] (750-1500x the body's median magnitude 0.674;
 *       the low end of the reported range).
 * Pure: the caller owns x. */
#ifndef FP8PLAN_FP8_SYNTH_H
#define FP8PLAN_FP8_SYNTH_H

#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
/* Uniform in (0, 1), never 0 or 1 (53 random bits). */
double rng_uniform(Rng *r);
/* Standard normal (Box-Muller, one value per call). */
double rng_normal(Rng *r);
/* Laplace with scale b (variance 2 b^2). */
double rng_laplace(Rng *r, double b);

typedef enum { SYNTH_NORMAL = 0, SYNTH_LAPLACE, SYNTH_OUTLIERS, SYNTH_COUNT_ } SynthDist;

/* "normal", "laplace", "outliers". */
const char *synth_name(SynthDist d);
int synth_parse(const char *s, SynthDist *out);

/* Outlier model constants (documented above; the CLI's --help quotes them). */
#define SYNTH_OUTLIER_CHANNEL_FRAC 0.001 /* of the columns */
#define SYNTH_OUTLIER_CHANNEL_GAIN 20.0
#define SYNTH_MASSIVE_VALUE        1000.0
#define SYNTH_MASSIVE_ROW_EVERY    1024

/* Fill x (rows, cols) row-major. ST_USAGE for an unknown distribution or a
 * zero dimension, ST_OVERFLOW when rows * cols passes 2^64. */
Status synth_fill(SynthDist d, uint64_t seed, uint64_t rows, uint64_t cols, float *x, Err *e);

#ifdef __cplusplus
}
#endif
#endif
