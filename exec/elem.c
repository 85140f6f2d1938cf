/* exec/elem.c — the executor's element conversions, all through fp8/ (the
 * project's one codec): BF16/FP16 round to nearest even, FP8 saturates. */
#include "exec/elem.h"

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
    case DT_E4M3:
    case DT_E5M2: {
        const uint8_t *q = (const uint8_t *)p + off;
        const float *t = dt == DT_E4M3 ? elem_e4m3_table : elem_e5m2_table;
        for (uint64_t i = 0; i < n; i++) out[i] = t[q[i]];
        break;
    }
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
