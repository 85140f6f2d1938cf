/* exec/backend/elem.c — the executor's element conversions, all through fp8/ (the
 * project's one codec): BF16/FP16 round to nearest even, FP8 saturates. */
#include "exec/backend/elem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/half.h"

float elem_e4m3_table[256], elem_e5m2_table[256];
float *elem_fp16_table;

static int init_rc = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void)
{
    for (int c = 0; c < 256; c++) {
        elem_e4m3_table[c] = fp8_decode(DT_E4M3, (uint8_t)c);
        elem_e5m2_table[c] = fp8_decode(DT_E5M2, (uint8_t)c);
    }
    float *t = malloc(65536 * sizeof *t);
    if (!t) return;
    for (uint32_t h = 0; h < 65536; h++) t[h] = fp16_decode((uint16_t)h);
    elem_fp16_table = t; /* kept for the process's lifetime */
    init_rc = 0;
}

int elem_init(void)
{
    pthread_once(&once, fill);
    return init_rc;
}

uint16_t elem_bf16_from_f32(float x) { return bf16_encode(x); }
uint16_t elem_fp16_from_f32(float x) { return fp16_encode(x); }
uint8_t elem_fp8_from_f32(float x, Dtype fmt) { return fp8_encode_f32(fmt, x, FP8_SATFINITE); }

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

/* FP8 codes to FP32 bits with integer operations and masks, which vectorize
 * (a table lookup does not): the code's 7 magnitude bits land in FP32's
 * exponent and mantissa fields and the exponent is rebiased; subnormals are
 * their integer mantissa times the subnormal step (exact); NaN and Inf codes
 * become the canonical FP32 NaN / Inf with the code's sign, as fp8_decode
 * gives. test_cpu_kernels checks every code against the decoding table. */
static inline uint32_t pick(uint32_t cond, uint32_t a, uint32_t b) /* cond ? a : b, cond 0 or 1 */
{
    uint32_t mask = 0u - cond;
    return (a & mask) | (b & ~mask);
}

static inline uint32_t e4m3_to_bits(uint32_t c)
{
    uint32_t m = c & 0x7Fu, sign = (c & 0x80u) << 24, sb;
    float sub = (float)(int32_t)m * 0x1p-9f; /* E4M3 subnormal: m · 2^-9, m < 8 */
    memcpy(&sb, &sub, sizeof sb);
    uint32_t r = pick(m < 8u, sb, (m << 20) + ((127u - 7u) << 23));
    return pick(m == 0x7Fu, 0x7FC00000u, r) | sign;
}

static inline uint32_t e5m2_to_bits(uint32_t c)
{
    uint32_t m = c & 0x7Fu, sign = (c & 0x80u) << 24, sb;
    float sub = (float)(int32_t)m * 0x1p-16f; /* E5M2 subnormal: m · 2^-16, m < 4 */
    memcpy(&sb, &sub, sizeof sb);
    uint32_t r = pick(m < 4u, sb, (m << 21) + ((127u - 15u) << 23));
    r = pick(m == 0x7Cu, 0x7F800000u, r);
    return pick(m > 0x7Cu, 0x7FC00000u, r) | sign;
}

static void e4m3_run(const uint8_t *q, float *out, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b = e4m3_to_bits(q[i]);
        memcpy(&out[i], &b, sizeof b);
    }
}

static void e5m2_run(const uint8_t *q, float *out, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b = e5m2_to_bits(q[i]);
        memcpy(&out[i], &b, sizeof b);
    }
}

void elem_load_run(const void *p, Dtype dt, uint64_t off, float *out, uint64_t n)
{
    switch (dt) {
    case DT_FP32: memcpy(out, (const float *)p + off, (size_t)n * sizeof(float)); break;
    case DT_BF16: {
        const uint16_t *h = (const uint16_t *)p + off;
        for (uint64_t i = 0; i < n; i++) out[i] = elem_f32_from_bf16(h[i]);
        break;
    }
    case DT_FP16: {
        const uint16_t *h = (const uint16_t *)p + off;
        for (uint64_t i = 0; i < n; i++) out[i] = elem_fp16_table[h[i]];
        break;
    }
    case DT_E4M3: e4m3_run((const uint8_t *)p + off, out, n); break;
    case DT_E5M2: e5m2_run((const uint8_t *)p + off, out, n); break;
    default: memset(out, 0, (size_t)n * sizeof(float)); break;
    }
}

void elem_store_run(void *p, Dtype dt, uint64_t off, const float *x, uint64_t n)
{
    switch (dt) {
    case DT_FP32: memcpy((float *)p + off, x, (size_t)n * sizeof(float)); break;
    case DT_BF16: bf16_encode_array(x, (uint16_t *)p + off, (size_t)n); break;
    case DT_E4M3:
    case DT_E5M2: fp8_encode_f32_array(dt, x, 1.0f, (uint8_t *)p + off, (size_t)n, FP8_SATFINITE); break;
    default:
        for (uint64_t i = 0; i < n; i++) elem_store(p, dt, off + i, x[i]);
        break;
    }
}
