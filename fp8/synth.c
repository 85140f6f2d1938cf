/* fp8/synth.c — seeded synthetic tensors (see synth.h). */
#include "fp8/synth.h"

#include <math.h>
#include <strings.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(Rng *r)
{
    /* xoshiro256** (Blackman and Vigna) */
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(Rng *r) { return ((double)(rng_u64(r) >> 11) + 0.5) * 0x1p-53; }

double rng_normal(Rng *r)
{
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_laplace(Rng *r, double b)
{
    double u = rng_uniform(r) - 0.5;
    return u < 0 ? b * log(1 + 2 * u) : -b * log(1 - 2 * u);
}

static const char *const names[SYNTH_COUNT_] = {"normal", "laplace", "outliers"};

const char *synth_name(SynthDist d) { return (unsigned)d < SYNTH_COUNT_ ? names[d] : "?"; }

int synth_parse(const char *s, SynthDist *out)
{
    for (int i = 0; i < SYNTH_COUNT_; i++)
        if (!strcasecmp(s, names[i])) return *out = (SynthDist)i, 0;
    return -1;
}

/* Pick k distinct outlier columns: a seeded partial Fisher-Yates over the
 * column indices would need cols of memory, so draw with rejection instead
 * (k is tiny). */
static uint64_t pick_columns(Rng *r, uint64_t cols, uint64_t *out, uint64_t k)
{
    uint64_t n = 0;
    while (n < k) {
        uint64_t c = rng_u64(r) % cols;
        int dup = 0;
        for (uint64_t i = 0; i < n; i++) dup |= out[i] == c;
        if (!dup) out[n++] = c;
    }
    return n;
}

enum { MAX_OUTLIER_COLS = 4096 };

Status synth_fill(SynthDist d, uint64_t seed, uint64_t rows, uint64_t cols, float *x, Err *e)
{
    uint64_t n;
    if ((unsigned)d >= SYNTH_COUNT_) return err_set(e, ST_USAGE, "unknown distribution %d", (int)d);
    if (!rows || !cols) return err_set(e, ST_USAGE, "tensor shape has a zero dimension");
    if (__builtin_mul_overflow(rows, cols, &n))
        return err_set(e, ST_OVERFLOW, "tensor %llux%llu passes 2^64 elements", (unsigned long long)rows,
                       (unsigned long long)cols);
    Rng r;
    rng_seed(&r, seed);
    for (uint64_t i = 0; i < n; i++) x[i] = (float)(d == SYNTH_LAPLACE ? rng_laplace(&r, M_SQRT1_2) : rng_normal(&r));
    if (d != SYNTH_OUTLIERS) return ST_OK;
    uint64_t k = (uint64_t)llround((double)cols * SYNTH_OUTLIER_CHANNEL_FRAC);
    if (k < 1) k = 1;
    if (k > MAX_OUTLIER_COLS) k = MAX_OUTLIER_COLS;
    uint64_t oc[MAX_OUTLIER_COLS];
    pick_columns(&r, cols, oc, k);
    for (uint64_t row = 0; row < rows; row++)
        for (uint64_t j = 0; j < k; j++) x[row * cols + oc[j]] *= (float)SYNTH_OUTLIER_CHANNEL_GAIN;
    for (uint64_t row = 0; row < rows; row += SYNTH_MASSIVE_ROW_EVERY)
        for (uint64_t j = 0; j < k && j < 2; j++) {
            double mag = SYNTH_MASSIVE_VALUE * (0.5 + 0.5 * rng_uniform(&r)); /* uniform in [M/2, M] */
            x[row * cols + oc[j]] = (float)(rng_u64(&r) & 1 ? -mag : mag);
        }
    return ST_OK;
}
