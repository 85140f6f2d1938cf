/* fp8/dtype.h — the element types every layer names: planner terms, recipe
 * rows, executor tensors and kernels all use this one enum. */
#ifndef FP8PLAN_FP8_DTYPE_H
#define FP8PLAN_FP8_DTYPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DT_NONE = 0, /* state not kept (e.g. no separate master copy) */
    DT_FP32,
    DT_FP16,
    DT_BF16,
    DT_E4M3, /* FP8 E4M3 (OCP "fn": no Inf, NaN = S.1111.111) */
    DT_E5M2, /* FP8 E5M2 (IEEE-like Inf/NaN) */
    DT_E8M0, /* unsigned power-of-two scale (MX) */
    DT_COUNT_
} Dtype;

/* Bytes per element (0 for DT_NONE). */
unsigned dtype_bytes(Dtype t);

/* Lower-case name as written in CSV files and reports: "fp32", "bf16", "e4m3", ... "none". */
const char *dtype_name(Dtype t);

/* Parse a name written by dtype_name (case-insensitive); returns 0 on success,
 * -1 for an unknown name. */
int dtype_parse(const char *s, Dtype *out);

/* 1 for the 8-bit float formats E4M3 and E5M2. */
int dtype_is_fp8(Dtype t);

#ifdef __cplusplus
}
#endif
#endif
