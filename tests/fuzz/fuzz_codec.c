/* tests/fuzz/fuzz_codec.c — differential fuzzing of the codecs against NVIDIA's
 * cuda_fp8.h (when it was found at build time), plus invariants that need no
 * oracle. The input's bytes are read as a float, a double and 16-bit codes;
 * any disagreement traps so libFuzzer keeps the input. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/half.h"
#include "support/nv_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                  \
    do {                            \
        if (!(c)) __builtin_trap(); \
    } while (0)

static int same_code(Dtype fmt, uint8_t a, uint8_t b) { return fp8_is_nan(fmt, a) ? fp8_is_nan(fmt, b) : a == b; }

static void check_float(float x)
{
    static const Dtype F[2] = {DT_E4M3, DT_E5M2};
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            uint8_t c = fp8_encode_f32(F[f], x, (Fp8Sat)s);
            REQUIRE(c == fp8_encode_f64(F[f], (double)x, (Fp8Sat)s)); /* a float is exact in double */
            if (nvo_available()) REQUIRE(same_code(F[f], c, nvo_f32_to_fp8(x, f, s)));
            /* the result is a nearest grid point: no code lies strictly closer */
            float v = fp8_decode(F[f], c);
            if (isfinite(x) && isfinite(v) && fabsf(x) <= fp8_max(F[f])) {
                uint8_t up = (uint8_t)(c + 1), dn = (uint8_t)(c - 1);
                double d = fabs((double)x - v);
                if ((c & 0x7F) != 0x7F && !fp8_is_nan(F[f], up) && !fp8_is_inf(F[f], up) && (up & 0x80) == (c & 0x80))
                    REQUIRE(fabs((double)x - fp8_decode(F[f], up)) >= d);
                if ((c & 0x7F) != 0) REQUIRE(fabs((double)x - fp8_decode(F[f], dn)) >= d);
            }
        }
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < 2; s++)
            if (nvo_e8m0_available()) REQUIRE(e8m0_encode_f32(x, (E8m0Round)r, (Fp8Sat)s) == nvo_f32_to_e8m0(x, r, s));
    /* 16-bit: the rounded value is within half a step, and encoding it again is the identity */
    uint16_t b = bf16_encode(x), h = fp16_encode(x);
    if (!isnan(x)) {
        REQUIRE(bf16_encode(bf16_decode(b)) == b);
        REQUIRE(fp16_encode(fp16_decode(h)) == h);
    } else {
        REQUIRE(b == HALF_NAN_CODE && h == HALF_NAN_CODE);
    }
}

static void check_double(double x)
{
    static const Dtype F[2] = {DT_E4M3, DT_E5M2};
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            uint8_t c = fp8_encode_f64(F[f], x, (Fp8Sat)s);
            if (nvo_available()) REQUIRE(same_code(F[f], c, nvo_f64_to_fp8(x, f, s)));
        }
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < 2; s++)
            if (nvo_e8m0_available()) REQUIRE(e8m0_encode_f64(x, (E8m0Round)r, (Fp8Sat)s) == nvo_f64_to_e8m0(x, r, s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t off = 0; off + 4 <= size; off += 4) {
        float x;
        memcpy(&x, data + off, sizeof x);
        check_float(x);
    }
    for (size_t off = 0; off + 8 <= size; off += 8) {
        double x;
        memcpy(&x, data + off, sizeof x);
        check_double(x);
    }
    /* every code decodes and re-encodes to itself (NaN to a NaN) */
    if (size) {
        uint8_t c = data[0];
        for (int f = 0; f < 2; f++) {
            Dtype fmt = f ? DT_E5M2 : DT_E4M3;
            REQUIRE(same_code(fmt, fp8_encode_f32(fmt, fp8_decode(fmt, c), FP8_NOSAT), c));
        }
    }
    return 0;
}
