/* exec/backend/elem.h — loading and storing one element of any executor dtype as a
 * float, for the CPU reference backend and the host side of the executor.
 *
 * Every rounding goes through fp8/ (the project's one codec): BF16 and FP16
 * round to nearest even; FP8 stores saturate at the format's max (TE's casts
 * and cuBLASLt FP8 outputs are saturating). Loads are exact. */
#ifndef FP8PLAN_EXEC_ELEM_H
#define FP8PLAN_EXEC_ELEM_H

#include <stdint.h>

#include "fp8/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

uint16_t elem_bf16_from_f32(float x);          /* RNE; NaN stays NaN */
uint16_t elem_fp16_from_f32(float x);          /* RNE; overflow to ±Inf */
uint8_t elem_fp8_from_f32(float x, Dtype fmt); /* RNE, saturating (SATFINITE); fmt DT_E4M3 or DT_E5M2 */

/* Decoding tables filled once from fp8/'s decoders (fp8_decode, fp16_decode)
 * by elem_init(): loads are table lookups, the codec stays the only source. */
extern float elem_e4m3_table[256], elem_e5m2_table[256];
extern float *elem_fp16_table; /* 65536 entries */
/* Fill the tables (idempotent, thread-safe); 0 ok, −1 out of memory. */
int elem_init(void);

/* BF16 is the top half of an FP32: widening is exact bit placement. */
static inline float elem_f32_from_bf16(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)h << 16};
    return v.f;
}
static inline float elem_f32_from_fp16(uint16_t h) { return elem_fp16_table[h]; }
static inline float elem_f32_from_fp8(uint8_t code, Dtype fmt)
{
    return fmt == DT_E4M3 ? elem_e4m3_table[code] : elem_e5m2_table[code];
}

/* x rounded to the nearest value representable in dt (identity for FP32). */
float elem_round(float x, Dtype dt);

/* p[i] as float. dt is DT_FP32, DT_FP16, DT_BF16, DT_E4M3 or DT_E5M2. */
static inline float elem_load(const void *p, Dtype dt, uint64_t i)
{
    switch (dt) {
    case DT_FP32: return ((const float *)p)[i];
    case DT_BF16: return elem_f32_from_bf16(((const uint16_t *)p)[i]);
    case DT_FP16: return elem_f32_from_fp16(((const uint16_t *)p)[i]);
    case DT_E4M3:
    case DT_E5M2: return elem_f32_from_fp8(((const uint8_t *)p)[i], dt);
    default: return 0.0f;
    }
}

/* p[i] = x rounded to dt. */
static inline void elem_store(void *p, Dtype dt, uint64_t i, float x)
{
    switch (dt) {
    case DT_FP32: ((float *)p)[i] = x; break;
    case DT_BF16: ((uint16_t *)p)[i] = elem_bf16_from_f32(x); break;
    case DT_FP16: ((uint16_t *)p)[i] = elem_fp16_from_f32(x); break;
    case DT_E4M3:
    case DT_E5M2: ((uint8_t *)p)[i] = elem_fp8_from_f32(x, dt); break;
    default: break;
    }
}

/* out[0..n) = p[off..off+n) as float / p[off..off+n) = x[0..n) rounded to dt:
 * elem_load / elem_store over a run, the dtype switch outside the loop so the
 * loop vectorizes. */
void elem_load_run(const void *p, Dtype dt, uint64_t off, float *out, uint64_t n);
void elem_store_run(void *p, Dtype dt, uint64_t off, const float *x, uint64_t n);

/* 1 for the dtypes elem_load/elem_store handle. */
static inline int elem_supported(Dtype dt)
{
    return dt == DT_FP32 || dt == DT_BF16 || dt == DT_FP16 || dt == DT_E4M3 || dt == DT_E5M2;
}

#ifdef __cplusplus
}
#endif
#endif
