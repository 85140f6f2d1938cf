/* exec/rng.h — a small deterministic random source (splitmix64) for weight
 * initialization and synthetic data: the same seed gives the same numbers on
 * every run, so recipes start from identical weights and resumes line up. */
#ifndef FP8PLAN_EXEC_RNG_H
#define FP8PLAN_EXEC_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t s;
} Rng;

static inline uint64_t rng_u64(Rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

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

#endif
