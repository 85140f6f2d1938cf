/* exec/measure/calibrate_bufs.h — what calibrate_host.c and calibrate_gemm.c time their calls with: the clock
 * (the backend's timestamps where it has them), the ranks starting each call together, and the operand buffers.
 * Internal to exec/measure. */
#ifndef FP8PLAN_EXEC_MEASURE_CALIBRATE_BUFS_H
#define FP8PLAN_EXEC_MEASURE_CALIBRATE_BUFS_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/measure/calibrate.h"

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The two timestamps a timed call sits between where the backend has them (a GPU's stream: its work is
 * asynchronous, host clocks would time the launch); the host clock otherwise. */
enum { MARK_T0 = BACKEND_MARKS - 2, MARK_T1 = BACKEND_MARKS - 1 };

static inline Status tick(Backend *bk, double *t0, Err *e)
{
    if (bk->mark && bk->elapsed) return bk->mark(bk, MARK_T0, e);
    *t0 = now_s();
    return ST_OK;
}

static inline Status tock(Backend *bk, double t0, double *seconds, Err *e)
{
    if (!bk->mark || !bk->elapsed) {
        *seconds = now_s() - t0;
        return ST_OK;
    }
    Status st = bk->mark(bk, MARK_T1, e);
    return st ? st : bk->elapsed(bk, MARK_T0, MARK_T1, seconds, e);
}

/* Every rank starts the next call together (ranks > 1), so each measures the host shared the way a run's
 * ranks share it: all computing at once. f: one float of backend memory. */
static inline Status together(Comm *comm, Backend *bk, float *f, Err *e)
{
    return comm && comm->size > 1 ? comm->all_reduce(comm, COMM_UNPLANNED, bk, f, 1, DT_FP32, COMM_SUM, e) : ST_OK;
}

/* Every rank's v[0..n) (n <= 64: counts below 2^24, exact in a float) replaced by their largest, so the ranks make
 * the same calls (each starts together); one rank: unchanged. */
static inline Status agree_max(Comm *comm, Backend *bk, int *v, int n, Err *e)
{
    if (!comm || comm->size < 2) return ST_OK;
    float f[64];
    void *d = NULL;
    if (n < 1 || n > 64) return err_set(e, ST_USAGE, "calibrate: %d counts to agree on (1..64)", n);
    for (int i = 0; i < n; i++) f[i] = (float)v[i];
    Status st = bk->alloc(bk, (uint64_t)n * sizeof *f, &d, e);
    if (!st) st = bk->copy_to_device(bk, d, f, (uint64_t)n * sizeof *f, e);
    if (!st) st = comm->all_reduce(comm, COMM_UNPLANNED, bk, d, (uint64_t)n, DT_FP32, COMM_MAX, e);
    if (!st) st = bk->copy_to_host(bk, f, d, (uint64_t)n * sizeof *f, e);
    if (d) bk->free(bk, d);
    for (int i = 0; !st && i < n; i++) v[i] = (int)f[i];
    return st;
}

/* bytes of backend memory at p = byte v (through a host copy: the memory may be a GPU's). */
static inline Status fill(Backend *bk, void *p, int v, uint64_t bytes, Err *e)
{
    uint8_t *h = malloc(bytes ? bytes : 1);
    if (!h) return err_set(e, ST_NOMEM, "calibrate: out of memory for %llu bytes", (unsigned long long)bytes);
    memset(h, v, bytes);
    Status st = bk->copy_to_device(bk, p, h, bytes, e);
    free(h);
    return st;
}

/* Buffers big enough for every operand, filled with 0x38 bytes: 1.0 in E4M3, finite small values in E5M2
 * (0.5), BF16 and FP32 — the values do not change the time of the code paths measured. */
typedef struct {
    void *a, *b, *d, *bias;
    float *one, *sync; /* 1.0 (the FP8 operands' scale_inv); together()'s float */
    uint64_t bytes;
} Bufs;

static inline Status bufs_make(Backend *bk, uint64_t bytes, Bufs *u, Err *e)
{
    memset(u, 0, sizeof *u);
    Status st;
    void **p[4] = {&u->a, &u->b, &u->d, &u->bias};
    for (int i = 0; i < 4; i++)
        if ((st = bk->alloc(bk, bytes, p[i], e)) || (st = fill(bk, *p[i], 0x38, bytes, e))) return st;
    void *one;
    const float host_one[2] = {1.0f, 0.0f};
    if ((st = bk->alloc(bk, 2 * sizeof(float), &one, e))) return st;
    u->one = one;
    u->sync = u->one + 1;
    u->bytes = bytes;
    return bk->copy_to_device(bk, one, host_one, sizeof host_one, e);
}

static inline void bufs_free(Backend *bk, Bufs *u)
{
    void *p[5] = {u->a, u->b, u->d, u->bias, u->one}; /* sync is one's second float */
    for (int i = 0; i < 5; i++)
        if (p[i]) bk->free(bk, p[i]);
}

/* The GEMMs of one layer of m at T rows (calibrate_gemm.c): a checked warm-up, then reps rounds for c and
 * again_reps for again (NULL: none) interleaved — calibrate.h, calibrate_compute_again. */
Status cal_gemms(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, int again_reps,
                 Calibration *again, Err *e);

/* The element-wise kernels' bandwidth and the launch floor at T rows (calibrate_host.c), interleaved the same
 * way. */
Status cal_kernels(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, int again_reps,
                   Calibration *again, Err *e);

#endif
