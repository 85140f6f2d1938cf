/* tests/unit/test_oracle_fp8.c — the synthetic-tensor generator and the
 * quantizer's counts, against values worked out independently.
 *
 * The generator is xoshiro256** seeded through splitmix64 (fp8/synth.h). Its
 * first outputs for seed 1 below were computed with a separate implementation
 * written from the published algorithms (Vigna's splitmix64 and Blackman and
 * Vigna's xoshiro256**), not with fp8/: a changed constant, shift or seeding
 * loop changes them, and with them every "measured" quant-error figure. */
#include <math.h>

#include "fp8/quant.h"
#include "fp8/synth.h"
#include "test.h"

/* splitmix64 from seed 1: state += 0x9E3779B97F4A7C15, then the two xor-shift-multiply rounds;
 * four outputs seed xoshiro256**, whose outputs are rotl(s1 * 5, 7) * 9 */
static void test_generator_stream(void)
{
    Rng r;
    rng_seed(&r, 1);
    CHECK_EQ_U64(r.s[0], 0x910A2DEC89025CC1ull);
    CHECK_EQ_U64(r.s[1], 0xBEEB8DA1658EEC67ull);
    CHECK_EQ_U64(r.s[2], 0xF893A2EEFB32555Eull);
    CHECK_EQ_U64(r.s[3], 0x71C18690EE42C90Bull);
    CHECK_EQ_U64(rng_u64(&r), 0xB3F2AF6D0FC710C5ull);
    CHECK_EQ_U64(rng_u64(&r), 0x853B559647364CEAull);
    /* uniform: the top 53 bits, centred in their cell: ((0x92F89756082A4514 >> 11) + 0.5) x 2^-53 */
    CHECK(rng_uniform(&r) == ((double)(0x92F89756082A4514ull >> 11) + 0.5) * 0x1p-53);
}

/* Per-tensor E4M3 current scaling of {1000, 1, -0.001, 0}: amax 1000, scale 448 / 1000 = 0.448.
 *   1000 x 0.448 = 448 -> the largest finite code 0x7E, in range after scaling: not saturated
 *   1 x 0.448 = 0.448 in [0.25, 0.5): steps of 2^-5; 0.448 / 2^-5 = 14.34 -> 14 x 2^-5 = 0.4375
 *     = 1.75 x 2^-2: exponent field -2 + 7 = 5, mantissa .110 -> 0x2E
 *   -0.001 x 0.448 = -0.000448, below half the smallest subnormal 2^-9 / 2 = 0.000977: -0 (0x80),
 *     a flushed value
 *   0 -> 0x00, not counted as flushed (it was zero)
 * Counts: 4 elements, 0 saturated, 1 flushed, 0 non-finite. */
static void test_quant_counts(void)
{
    const float x[4] = {1000.0f, 1.0f, -0.001f, 0.0f};
    uint8_t codes[4];
    float scale = 0, scale_inv = 0, amax = 0;
    QuantBufs out = {.codes = codes, .scale = &scale, .scale_inv = &scale_inv, .amax = &amax};
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
    QuantCounts k = {0};
    Err e = {0};
    CHECKF(quant_tensor(&cfg, x, 1, 4, &out, &k, &e) == ST_OK, "%s", e.msg);
    CHECK(amax == 1000.0f && scale == 448.0f / 1000.0f && scale_inv == 1.0f / scale);
    CHECK_EQ_U64(codes[0], 0x7E);
    CHECK_EQ_U64(codes[1], 0x2E);
    CHECK_EQ_U64(codes[2], 0x80);
    CHECK_EQ_U64(codes[3], 0x00);
    CHECK_EQ_U64(k.n, 4);
    CHECK_EQ_U64(k.saturated, 0);
    CHECK_EQ_U64(k.flushed, 1);
    CHECK_EQ_U64(k.nonfinite, 0);
}

int main(void)
{
    RUN(test_generator_stream);
    RUN(test_quant_counts);
    return test_summary();
}
