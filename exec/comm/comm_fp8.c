/* exec/comm/comm_fp8.c — FP8 all-reduce and uneven reduce-scatter with a
 * scale agreed first (see comm_all_reduce_fp8 / comm_reduce_scatter_fp8_v in
 * comm.h), over any communicator's collectives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "exec/backend/elem.h"
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

/* The checks, the group's amax A and the shared scale s = fmax / (size · A) (1 when A is 0 or not
 * finite), and every one of this rank's n codes re-encoded at s. */
static Status agree(Comm *c, const char *what, Backend *bk, uint8_t *q, const float *rec, uint64_t n, Dtype dt,
                    float *s_out, Err *e)
{
    if (!dtype_is_fp8(dt)) return err_set(e, ST_USAGE, "fp8 %s: %s is not an FP8 format", what, dtype_name(dt));
    if (bk && bk->name && strcmp(bk->name, "cpu"))
        return err_set(e, ST_USAGE, "fp8 %s: needs host memory (the cpu backend's), not %s's", what, bk->name);
    if (!rec || (!q && n)) return err_set(e, ST_USAGE, "fp8 %s: missing buffer or scale record", what);
    if (elem_init()) return err_set(e, ST_NOMEM, "out of memory");
    float amax = amax_of(q, n, dt, rec[REC_SCALE_INV]);
    Status st = c->all_reduce(c, COMM_UNPLANNED, bk, &amax, 1, DT_FP32, COMM_MAX, e);
    if (st) return st;
    float s = 1.0f;
    if (isfinite(amax) && amax > 0.0f) s = fp8_max(dt) / ((float)c->size * amax);
    if (!isfinite(s) || s <= 0.0f) s = 1.0f; /* an amax so small that fmax / amax overflows */
    float *x = malloc(n * sizeof *x + 1);
    if (!x) return err_set(e, ST_NOMEM, "fp8 %s: out of memory for %llu values", what, (unsigned long long)n);
    const float inv = rec[REC_SCALE_INV];
    for (uint64_t i = 0; i < n; i++) x[i] = elem_f32_from_fp8(q[i], dt) * inv; /* the value this rank holds */
    fp8_encode_f32_array(dt, x, s, q, (size_t)n, FP8_SATFINITE);               /* at the shared scale */
    free(x);
    *s_out = s;
    return ST_OK;
}

Status comm_all_reduce_fp8(Comm *c, CollectiveId id, Backend *bk, void *buf, float *rec, uint64_t n, Dtype dt, Err *e)
{
    uint8_t *q = buf;
    float s;
    Status st = agree(c, "all_reduce", bk, q, rec, n, dt, &s, e);
    if (!st) st = c->all_reduce(c, id, bk, buf, n, dt, COMM_SUM, e);
    if (st) return st;
    rec[REC_SCALE] = s;
    rec[REC_SCALE_INV] = 1.0f / s;
    rec[REC_AMAX] = amax_of(q, n, dt, rec[REC_SCALE_INV]);
    return ST_OK;
}

Status comm_reduce_scatter_fp8_v(Comm *c, CollectiveId id, Backend *bk, void *buf, float *rec, const uint64_t *counts,
                                 Dtype dt, Err *e)
{
    uint8_t *q = buf;
    uint64_t n = 0, lo = 0;
    for (int r = 0; counts && r < c->size; r++) {
        if (r < c->rank) lo += counts[r];
        n += counts[r];
    }
    float s, amax;
    Status st = agree(c, "reduce_scatter_v", bk, q, rec, n, dt, &s, e);
    if (!st) st = comm_reduce_scatter_v(c, id, bk, buf, counts, dt, COMM_SUM, e);
    if (st) return st;
    /* the amax of the sum: this rank's segment's, then the group's (the all-reduce's record) */
    amax = amax_of(q + lo, counts[c->rank], dt, 1.0f / s);
    st = c->all_reduce(c, COMM_UNPLANNED, bk, &amax, 1, DT_FP32, COMM_MAX, e);
    if (st) return st;
    rec[REC_SCALE] = s;
    rec[REC_SCALE_INV] = 1.0f / s;
    rec[REC_AMAX] = amax;
    return ST_OK;
}
