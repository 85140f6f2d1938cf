/* tests/unit/test_oracle_rng.c — the ziggurat's normals against the normal
 * distribution's printed table, with enough draws to see a wrong strip.
 *
 * An independent oracle: the expected tail masses are the two-sided tails
 * 2(1 − Φ(t)) of a standard normal table, not anything exec/backend/rng_normal.c
 * computes. test_exec_init.c checks moments and the KS distance of 2^18
 * draws; this check draws 2^22 and counts the tails, where the ziggurat's
 * wedges (the ≈ 1 % of draws that test a height against the density) carry
 * the most weight: a wedge that always accepts (its height drawn from the
 * wrong pair of strip edges) puts about 6 % too much mass beyond 2.5, one that
 * rejects too often about 6 % too little. */
#include <math.h>
#include <stdlib.h>

#include "exec/backend/rng.h"
#include "test.h"

/* N = 2^22 = 4,194,304 draws of key (17, 3), in chunks. Two-sided tails from a table of Φ:
 *   t = 1:   2 x (1 - 0.8413447) = 0.3173105  -> 1,330,897 expected, sd sqrt(N p (1 - p)) = 953
 *   t = 2:   2 x (1 - 0.9772499) = 0.0455003  ->   190,842 expected, sd 427
 *   t = 2.5: 2 x (1 - 0.9937903) = 0.0124193  ->    52,090 expected, sd 227
 *   t = 3:   2 x (1 - 0.9986501) = 0.0026998  ->    11,324 expected, sd 106
 * Bound: 5 sd (4,766; 2,134; 1,134; 531). The wedge mutants planted while writing this (the height drawn
 * between zf[s - 1] and zf[s], or from zf[s] alone; the uniform shifted by 1 bit too few) moved the counts
 * beyond 2.5 and 3 by 17 to 21 sd. */
static void test_tail_masses(void)
{
    enum { N = 1 << 22, CHUNK = 1 << 16 };
    static const double t[4] = {1.0, 2.0, 2.5, 3.0};
    static const double want[4] = {1330897, 190842, 52090, 11324}, bound[4] = {4766, 2134, 1134, 531};
    float *z = malloc(CHUNK * sizeof *z);
    CHECK(z != NULL);
    if (!z) return;
    uint64_t key = rng_key(17, 3), n[4] = {0, 0, 0, 0};
    for (uint64_t b = 0; b < N; b += CHUNK) {
        rng_normal_fill(key, b, b + CHUNK, 1.0f, z);
        for (int i = 0; i < CHUNK; i++)
            for (int k = 0; k < 4; k++) n[k] += fabs((double)z[i]) > t[k];
    }
    for (int k = 0; k < 4; k++)
        CHECKF(fabs((double)n[k] - want[k]) <= bound[k], "P(|z| > %g): %llu of 2^22 draws, expected %.0f +- %.0f", t[k],
               (unsigned long long)n[k], want[k], bound[k]);
    free(z);
}

/* The sign bit (bit 7 of the first draw) is independent of the strip: the two halves hold the same mass,
 * N / 2 = 2,097,152 each, sd sqrt(N / 4) = 1,024, bound 5 sd = 5,120; and the same holds beyond 2.5
 * (52,090 / 2 = 26,045 per side, p = 0.0062097, sd sqrt(N p (1 - p)) = 161, bound 5 sd = 805). */
static void test_sign_balance(void)
{
    enum { N = 1 << 22, CHUNK = 1 << 16 };
    float *z = malloc(CHUNK * sizeof *z);
    CHECK(z != NULL);
    if (!z) return;
    uint64_t key = rng_key(23, 5), neg = 0, far_pos = 0, far_neg = 0;
    for (uint64_t b = 0; b < N; b += CHUNK) {
        rng_normal_fill(key, b, b + CHUNK, 1.0f, z);
        for (int i = 0; i < CHUNK; i++) {
            neg += z[i] < 0;
            far_pos += z[i] > 2.5f;
            far_neg += z[i] < -2.5f;
        }
    }
    CHECKF(fabs((double)neg - N / 2.0) <= 5120, "%llu negative of 2^22, expected 2,097,152 +- 5,120",
           (unsigned long long)neg);
    CHECKF(fabs((double)far_pos - 26045) <= 805 && fabs((double)far_neg - 26045) <= 805,
           "beyond +2.5: %llu, below -2.5: %llu; expected 26,045 +- 805 each", (unsigned long long)far_pos,
           (unsigned long long)far_neg);
    free(z);
}

int main(void)
{
    RUN(test_tail_masses);
    RUN(test_sign_balance);
    return test_summary();
}
