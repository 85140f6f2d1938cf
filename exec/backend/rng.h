/* exec/backend/rng.h — small deterministic random sources: the same seed gives the same
 * numbers on every run, so recipes start from identical weights and resumes
 * line up.
 *
 * Two shapes of the same generator (splitmix64: a Weyl sequence state += γ
 * passed through a 64-bit mixing function):
 *  - Rng, sequential: each call advances the state (synthetic data, tests);
 *  - rng_at(key, i), counter-based: the i-th number of stream `key` as a pure
 *    function of (key, i), so any element can be computed alone, in any order,
 *    by any thread (weight initialization fills tensors in parallel with it).
 * rng_at(s, i) is the (i+1)-th number an Rng seeded with s returns. */
#ifndef FP8PLAN_EXEC_RNG_H
#define FP8PLAN_EXEC_RNG_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RNG_GAMMA 0x9E3779B97F4A7C15ull

typedef struct {
    uint64_t s;
} Rng;

/* splitmix64's output function (a bijection on 64-bit words). */
static inline uint64_t rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rng_u64(Rng *r) { return rng_mix64(r->s += RNG_GAMMA); }

/* Uniform in [0, 1) with 53 random bits. */
static inline double rng_unit(Rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32). */
static inline uint64_t rng_below(Rng *r, uint64_t n) { return (uint64_t)(rng_unit(r) * (double)n); }

/* Standard normal (Box–Muller; one value per call). */
static inline double rng_normal(Rng *r)
{
    double u = rng_unit(r), v = rng_unit(r);
    if (u < 0x1.0p-60) u = 0x1.0p-60;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- counter-based ---- */

/* Number i of stream `key`. */
static inline uint64_t rng_at(uint64_t key, uint64_t i) { return rng_mix64(key + (i + 1) * RNG_GAMMA); }

/* The key of stream `id` under `seed`. Streams start at unrelated points of
 * the 2^64-long Weyl sequence: two streams of n numbers overlap with
 * probability about 2n / 2^64 (2^-33 for n = 2^30). */
static inline uint64_t rng_key(uint64_t seed, uint64_t id) { return rng_mix64(seed ^ rng_mix64(id * RNG_GAMMA + 1)); }

/* Standard normal number i of stream `key`, by a 128-layer ziggurat
 * (exec/backend/rng_normal.c): about 99 % of the values cost one rng_at, a multiply
 * and a compare; the rest retry from a second stream of element i, so the
 * value is still a pure function of (key, i). Exact in distribution up to the
 * 53-bit uniforms, tails included; rounded to float. */
float rng_normal_at(uint64_t key, uint64_t i);

/* out[j] = mul · (float)rng_normal_at(key, begin + j) for j < end − begin: the
 * same values, faster in bulk. */
void rng_normal_fill(uint64_t key, uint64_t begin, uint64_t end, float mul, float *out);

#ifdef __cplusplus
}
#endif
#endif
