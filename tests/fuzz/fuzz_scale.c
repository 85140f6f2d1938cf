/* tests/fuzz/fuzz_scale.c — scale invariants on arbitrary amax bit patterns,
 * a delayed-scaling run driven by the input, and a small tensor quantized at
 * every granularity. Any broken invariant traps. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/delayed.h"
#include "fp8/quant.h"
#include "fp8/scale.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                  \
    do {                            \
        if (!(c)) __builtin_trap(); \
    } while (0)

static int is_pow2(float s)
{
    int e;
    return frexpf(s, &e) == 0.5f;
}

static void check_amax(float amax, Dtype fmt)
{
    float fmax = fp8_max(fmt);
    for (int r = 0; r < 2; r++) {
        uint8_t e = e8m0_scale_from_amax(amax, fmt, (E8m0Rule)r);
        REQUIRE(e <= 0xFE || isnan(amax));
        REQUIRE(e != 0xFF || isnan(amax));
        float a = fabsf(amax), scaled = a * e8m0_decode_rcp(e);
        if (isfinite(a) && a > 0 && e > 0 && e < 0xFE) {
            if (r == E8M0_RULE_CEIL)
                REQUIRE(scaled <= fmax); /* never saturates */
            else
                REQUIRE(scaled >= fmax / 2 && scaled < 2 * fmax); /* the top binade is kept */
        }
    }
    ScaleCfg c = scale_cfg(fmt);
    for (int p = 0; p < 2; p++) {
        c.pow2 = p;
        AmaxCase why;
        float s = scale_from_amax(amax, &c, &why);
        REQUIRE(isfinite(s) && s > 0);
        if (p) REQUIRE(is_pow2(s));
        if (why == AMAX_OK) REQUIRE(!fp8_overflows(fmt, amax * s)); /* amax lands at or below fmax (+ rounding) */
        float u = scale_update(amax, 3.0f, &c, &why);
        REQUIRE(isfinite(u) && u > 0);
        REQUIRE(why == AMAX_OK || why == AMAX_TINY || u == 3.0f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { MAXN = 256 };
    float v[MAXN];
    size_t n = size / 4 < MAXN ? size / 4 : MAXN;
    for (size_t i = 0; i < n; i++) memcpy(&v[i], data + 4 * i, sizeof v[i]);
    for (size_t i = 0; i < n; i++) {
        check_amax(v[i], DT_E4M3);
        check_amax(v[i], DT_E5M2);
    }
    /* delayed scaling over the values as amaxes: the scale stays finite and positive */
    if (n) {
        float hist[7];
        DelayedState s;
        DelayedCfg cfg = {size & 1 ? DT_E5M2 : DT_E4M3, 1 + (uint32_t)(data[0] % 7), (AmaxAlgo)(data[0] >> 7), 0};
        REQUIRE(delayed_init(&s, &cfg, hist, NULL) == ST_OK);
        for (size_t i = 0; i < n; i++) {
            DelayedStep st;
            delayed_step(&s, fabsf(v[i]), &st);
            REQUIRE(isfinite(st.scale_next) && st.scale_next > 0 && st.scale_used > 0);
        }
    }
    /* the values as a small tensor, every granularity: no crash; with no Inf in it (an Inf block
     * gets scale 1 or 2^-127, TE's policy, and its finite values may then saturate) nothing saturates */
    int any_inf = 0;
    for (size_t i = 0; i < n; i++) any_inf |= isinf(v[i]);
    if (n >= 2) {
        uint64_t cols = 1 + (data[size - 1] % n), rows = n / cols;
        uint8_t codes[MAXN], e8[MAXN];
        float scale[MAXN], inv[MAXN], amax[MAXN], y[MAXN];
        for (int g = 0; g < GRAN_COUNT_; g++) {
            QuantCfg cfg = quant_cfg(DT_E4M3, (Granularity)g);
            QuantBufs b = {codes, scale, inv, e8, amax};
            QuantCounts k;
            REQUIRE(quant_tensor(&cfg, v, rows, cols, &b, &k, NULL) == ST_OK);
            REQUIRE(quant_dequant(&cfg, &b, rows, cols, y, NULL) == ST_OK);
            REQUIRE(k.n == rows * cols && (any_inf || k.saturated == 0));
        }
    }
    return 0;
}
