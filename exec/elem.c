/* exec/elem.c — the executor's element conversions, all through fp8/ (the
 * project's one codec): BF16/FP16 round to nearest even, FP8 saturates. */
#include "exec/elem.h"

#include "fp8/codec.h"
#include "fp8/half.h"

uint16_t elem_bf16_from_f32(float x) { return bf16_encode(x); }
float elem_f32_from_bf16(uint16_t h) { return bf16_decode(h); }
uint16_t elem_fp16_from_f32(float x) { return fp16_encode(x); }
float elem_f32_from_fp16(uint16_t h) { return fp16_decode(h); }
uint8_t elem_fp8_from_f32(float x, Dtype fmt) { return fp8_encode_f32(fmt, x, FP8_SATFINITE); }
float elem_f32_from_fp8(uint8_t code, Dtype fmt) { return fp8_decode(fmt, code); }

float elem_round(float x, Dtype dt)
{
    switch (dt) {
    case DT_BF16: return bf16_round(x);
    case DT_FP16: return fp16_round(x);
    case DT_E4M3:
    case DT_E5M2: return fp8_decode(dt, fp8_encode_f32(dt, x, FP8_SATFINITE));
    default: return x;
    }
}
