/* exec/comm/comm_fp8.c — FP8 all-reduce with a scale agreed first (see
 * comm_all_reduce_fp8 in comm.h), over any communicator's all_reduce. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend.h"
#include "exec/comm/comm.h"
#include "exec/elem.h"
#include "fp8/codec.h"

/* The largest |code| · inv of n codes (a NaN code makes it NaN). */
static float amax_of(const uint8_t *q, uint64_t n, Dtype dt, float inv)
{
    float a = 0.0f;
    for (uint64_t i = 0; i < n; i++) {
        float x = fabsf(elem_f32_from_fp8(q[i], dt));
        if (x != x || x > a) a = x;
        if (a != a) break;
    }
    return a * inv;
}

Status comm_all_reduce_fp8(Comm *c, CollectiveId id, Backend *bk, void *buf, float *rec, uint64_t n, Dtype dt, Err *e)
{
    if (!dtype_is_fp8(dt)) return err_set(e, ST_USAGE, "fp8 all_reduce: %s is not an FP8 format", dtype_name(dt));
    if (bk && bk->name && strcmp(bk->name, "cpu"))
        return err_set(e, ST_USAGE, "fp8 all_reduce: needs host memory (the cpu backend's), not %s's", bk->name);
    if (!rec || (!buf && n)) return err_set(e, ST_USAGE, "fp8 all_reduce: missing buffer or scale record");
    if (elem_init()) return err_set(e, ST_NOMEM, "out of memory");
    uint8_t *q = buf;
    float amax = amax_of(q, n, dt, rec[REC_SCALE_INV]);
    Status st = c->all_reduce(c, COMM_UNPLANNED, bk, &amax, 1, DT_FP32, COMM_MAX, e);
    if (st) return st;
    float s = 1.0f;
    if (isfinite(amax) && amax > 0.0f) s = fp8_max(dt) / ((float)c->size * amax);
    if (!isfinite(s) || s <= 0.0f) s = 1.0f; /* an amax so small that fmax / amax overflows */
    float *x = malloc(n * sizeof *x + 1);
    if (!x) return err_set(e, ST_NOMEM, "fp8 all_reduce: out of memory for %llu values", (unsigned long long)n);
    const float inv = rec[REC_SCALE_INV];
    for (uint64_t i = 0; i < n; i++) x[i] = elem_f32_from_fp8(q[i], dt) * inv; /* the value this rank holds */
    fp8_encode_f32_array(dt, x, s, q, (size_t)n, FP8_SATFINITE);               /* at the shared scale */
    free(x);
    st = c->all_reduce(c, id, bk, buf, n, dt, COMM_SUM, e);
    if (st) return st;
    rec[REC_SCALE] = s;
    rec[REC_SCALE_INV] = 1.0f / s;
    rec[REC_AMAX] = amax_of(q, n, dt, rec[REC_SCALE_INV]);
    return ST_OK;
}
