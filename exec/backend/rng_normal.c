/* exec/backend/rng_normal.c — standard normals as a pure function of (key, i): a
 * ziggurat over 128 strips of equal area (Marsaglia and Tsang's method; tables
 * built here from the density, constants R and V of the 128-strip layout).
 *
 * f(x) = exp(−x²/2) on x ≥ 0 is covered by 128 strips of area V each:
 *   strip 0: the rectangle [0, R] × [0, f(R)] plus the tail beyond R, drawn
 *            as a rectangle of width X[0] = V / f(R);
 *   strip s ≥ 1: [0, X[s]] × [f(X[s]), f(X[s+1])], with X[1] = R and
 *            f(X[s+1]) = f(X[s]) + V / X[s] (so each has area V), X[128] = 0.
 * A draw picks a strip s and x = u·X[s] uniformly; x < X[s+1] lies under f
 * for certain (≈ 99 % of draws). Otherwise: strip 0 samples the tail
 * (x = R + a, a = −ln(u1)/R, kept when −2 ln(u2) ≥ a²), other strips test a
 * uniform height against f(x) and draw again when above it. A random sign
 * makes it two-sided. Only the first draw comes from number i of the stream;
 * every further number comes from element i's own second stream, so the
 * result is the same whatever order or thread computes it. */
#include <math.h>
#include <pthread.h>

#include "exec/backend/rng.h"

enum { ZIG_N = 128 };
static const double ZIG_R = 3.442619855899;      /* where the tail starts */
static const double ZIG_V = 9.91256303526217e-3; /* area of each strip */

static double zx[ZIG_N + 1]; /* strip widths X[s] */
static double zf[ZIG_N + 1]; /* f(X[s]); zf[ZIG_N] = 1 */
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static double density(double x) { return exp(-0.5 * x * x); }

static void zig_build(void)
{
    zx[0] = ZIG_V / density(ZIG_R);
    zx[1] = ZIG_R;
    zf[0] = zf[1] = density(ZIG_R);
    for (int s = 1; s + 1 < ZIG_N; s++) {
        zf[s + 1] = zf[s] + ZIG_V / zx[s];
        zx[s + 1] = sqrt(-2.0 * log(zf[s + 1]));
    }
    zx[ZIG_N] = 0.0;
    zf[ZIG_N] = 1.0;
}

/* (0, 1] from a 64-bit number */
static double unit_open0(uint64_t b) { return (double)((b >> 11) + 1) * 0x1.0p-53; }

/* Element i after its first draw b missed the certain region (≈ 3 % of draws). */
static double slow(uint64_t key, uint64_t i, uint64_t b)
{
    uint64_t more = rng_key(key, i), k = 0; /* element i's second stream */
    for (;;) {
        unsigned s = (unsigned)(b & (ZIG_N - 1));
        double sign = b >> 7 & 1 ? -1.0 : 1.0;
        double x = (double)(int64_t)(b >> 11) * 0x1.0p-53 * zx[s];
        if (x < zx[s + 1]) return sign * x;
        if (s == 0) { /* the tail beyond R */
            for (;;) {
                double a = -log(unit_open0(rng_at(more, k++))) / ZIG_R;
                double c = -log(unit_open0(rng_at(more, k++)));
                if (2.0 * c >= a * a) return sign * (ZIG_R + a);
            }
        }
        double y = zf[s] + (double)(rng_at(more, k++) >> 11) * 0x1.0p-53 * (zf[s + 1] - zf[s]);
        if (y < density(x)) return sign * x;
        b = rng_at(more, k++);
    }
}

void rng_normal_fill(uint64_t key, uint64_t begin, uint64_t end, float mul, float *out)
{
    pthread_once(&zig_once, zig_build);
    for (uint64_t i = begin; i < end; i++) {
        uint64_t b = rng_at(key, i);
        unsigned s = (unsigned)(b & (ZIG_N - 1));
        double x = (double)(int64_t)(b >> 11) * 0x1.0p-53 * zx[s];
        double z = x < zx[s + 1] ? (b >> 7 & 1 ? -x : x) : slow(key, i, b);
        out[i - begin] = (float)z * mul;
    }
}

float rng_normal_at(uint64_t key, uint64_t i)
{
    float z;
    rng_normal_fill(key, i, i + 1, 1.0f, &z);
    return z;
}
