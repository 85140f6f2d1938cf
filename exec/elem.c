/* exec/elem.c — the executor's element conversions, all through fp8/ (the
 * project's one codec): BF16/FP16 round to nearest even, FP8 saturates. */
#include "exec/elem.h"

#include <pthread.h>
#include <stdlib.h>

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
