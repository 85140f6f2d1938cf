/* exec/measure/calibrate_moe.c — the experts' grouped GEMMs of a mixture-of-experts layer, measured at the
 * shapes a step runs them (see calibrate.h, cal_expert_gemms).
 *
 * Why they are measured apart from the layer's GEMMs: a grouped GEMM runs each expert's GEMM on its own
 * (exec/cpu/cpu_gemm_group.c: a small group is one pool task, its weight decoded to FP32 and packed by the
 * BLAS for a few rows of tokens), so at the uniform routing's few rows per expert its time is mostly a cost
 * per group, not per FLOP: the tiny Mixtral of docs/executor-moe.md (8 experts of 8 rows) took 3x what its
 * FLOPs at the layer's BF16 rate give. The figure written is that cost per group. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/measure/calibrate.h"
#include "util/num.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Buffers of backend memory for the six calls: A (rows, widest K), B (G, N, K) at the widest, D, the
 * counts (G int32) and one float for the ranks' start together. */
typedef struct {
    void *a, *b, *d, *counts;
    float *sync;
} XBufs;

static void xbufs_free(Backend *bk, XBufs *u)
{
    void *p[5] = {u->a, u->b, u->d, u->counts, u->sync};
    for (int i = 0; i < 5; i++)
        if (p[i]) bk->free(bk, p[i]);
}

static Status upload(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return bk->copy_to_device(bk, dst, src, bytes, e);
}

static Status zero(Backend *bk, void *p, uint64_t bytes, Err *e) { return bk->memset0(bk, p, bytes, e); }

/* One of cal_expert_shapes' calls s (a weight gradient when s->accum), the weight in layout wl (fprop K inner,
 * dgrad K outer: model_moe.c experts_gemm), timed into out. */
static Status time_call(Backend *bk, Comm *comm, const XBufs *u, const CalGemm *s, GemmLayout wl, uint32_t G,
                        uint64_t rows, int reps, CalGemm *out, Err *e)
{
    double t[64];
    for (int i = -1; i < reps; i++) { /* one warm-up call */
        Status st = comm && comm->size > 1
                        ? comm->all_reduce(comm, COMM_UNPLANNED, bk, u->sync, 1, DT_FP32, COMM_SUM, e)
                        : ST_OK;
        if (st) return st;
        double t0 = now_s();
        if (s->accum) {
            GroupedWgradDesc d = {.groups = G, .rows = rows, .m = s->m, .n = s->n, .counts = u->counts};
            d.accum = GEMM_ACCUMULATE;
            d.a = (GemmOperand){.ptr = u->a, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
            d.b = (GemmOperand){.ptr = u->b, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
            d.d = (GemmOutput){.ptr = u->d, .dtype = DT_FP32};
            st = bk->grouped_gemm_wgrad(bk, &d, e);
        } else {
            GroupedGemmDesc d = {.groups = G, .rows = rows, .n = s->n, .k = s->k, .counts = u->counts};
            d.accum = GEMM_OVERWRITE;
            d.a = (GemmOperand){.ptr = u->a, .dtype = DT_BF16, .layout = GEMM_K_INNER};
            d.b = (GemmOperand){.ptr = u->b, .dtype = DT_BF16, .layout = wl};
            d.d = (GemmOutput){.ptr = u->d, .dtype = DT_BF16};
            st = bk->grouped_gemm(bk, &d, e);
        }
        if (!st && bk->sync) st = bk->sync(bk, e);
        if (st) return st;
        if (i >= 0) t[i] = now_s() - t0;
    }
    *out = *s;
    CalStat cs;
    cal_stats(t, reps, &cs);
    out->seconds = cs.median, out->spread = cs.spread, out->iqr = cs.iqr;
    return ST_OK;
}

int cal_expert_shapes(const ModelSpec *m, uint32_t mbs, uint32_t *groups, uint64_t *rows, CalGemm *s)
{
    if (!spec_is_moe(m) || !m->expert_ffn || !m->experts_per_token) return 0;
    const uint64_t R = (uint64_t)mbs * m->seq_len * m->experts_per_token, h = m->hidden;
    const uint64_t F = m->expert_ffn, F1 = (m->mlp == MLP_SWIGLU ? 2u : 1u) * F;
    /* FC1 (F1, h) and FC2 (h, F): fprop Y = X·Wᵀ (rows, out, in), dgrad dX = dY·W (rows, in, out), wgrad
     * dW = dYᵀ·X (out, in, rows) */
    const uint64_t dims[6][3] = {{R, F1, h}, {R, h, F1}, {F1, h, R}, {R, h, F}, {R, F, h}, {h, F, R}};
    static const char *const what[6] = {"experts fc1 fprop", "experts fc1 dgrad", "experts fc1 wgrad",
                                        "experts fc2 fprop", "experts fc2 dgrad", "experts fc2 wgrad"};
    for (int i = 0; i < 6; i++) {
        memset(&s[i], 0, sizeof s[i]);
        strncpy(s[i].what, what[i], sizeof s[i].what - 1);
        s[i].path = CAL_PATH_BF16, s[i].m = dims[i][0], s[i].n = dims[i][1], s[i].k = dims[i][2];
        s[i].accum = i % 3 == 2;
        s[i].out_dtype = s[i].accum ? DT_FP32 : DT_BF16;
    }
    *groups = m->experts, *rows = R;
    return 6;
}

Status cal_expert_gemms(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *c, Err *e)
{
    CalGemm sh[CAL_EXPERT_GEMMS];
    uint32_t G = 0;
    uint64_t R = 0;
    c->nxgemm = 0, c->group_s = 0, c->group_iqr = 0;
    int n = cal_expert_shapes(m, mbs, &G, &R, sh);
    if (!n || reps < 1 || reps > 64 || strcmp(bk->name, "cpu")) return ST_OK; /* a host profile's figure */
    const uint64_t h = m->hidden, F1 = sh[0].n, big = F1 > h ? F1 : h;
    int32_t *counts = calloc(G, sizeof *counts);
    if (!counts) return err_set(e, ST_NOMEM, "calibrate: out of memory for %u expert counts", G);
    for (uint32_t x = 0; x < G; x++) /* the uniform routing: R / G rows each, the rest one more to the first */
        counts[x] = (int32_t)(R / G + (x < R % G ? 1 : 0));
    XBufs u = {0};
    Status st = ST_OK;
    /* A: (rows, K) or a weight gradient's dY (rows, M); B: the weights (G, N, K) BF16 or its X (rows, N); D: an
     * output (rows, N) BF16 or the gradients (G, M, N) FP32 */
    const uint64_t abytes = R * big * 2, w = (uint64_t)G * F1 * h;
    const uint64_t bbytes = w * 2 > abytes ? w * 2 : abytes, dbytes = w * 4 > abytes ? w * 4 : abytes;
    if (!st) st = bk->alloc(bk, abytes, &u.a, e);
    if (!st) st = bk->alloc(bk, bbytes, &u.b, e);
    if (!st) st = bk->alloc(bk, dbytes, &u.d, e);
    if (!st) st = bk->alloc(bk, (uint64_t)G * sizeof *counts, &u.counts, e);
    if (!st) st = bk->alloc(bk, sizeof(float), (void **)&u.sync, e);
    if (!st) st = zero(bk, u.a, abytes, e);
    if (!st) st = zero(bk, u.b, bbytes, e);
    if (!st) st = zero(bk, u.d, dbytes, e);
    if (!st) st = zero(bk, u.sync, sizeof(float), e);
    if (!st) st = upload(bk, u.counts, counts, (uint64_t)G * sizeof *counts, e);
    free(counts);
    for (int i = 0; !st && i < n; i++) {
        st = time_call(bk, comm, &u, &sh[i], i % 3 == 1 ? GEMM_K_OUTER : GEMM_K_INNER, G, R, reps, &c->xgemm[i], e);
    }
    xbufs_free(bk, &u);
    if (st) return st;
    c->nxgemm = n, c->xgroups = G;
    c->group_s = cal_group_cost(c->xgemm, n, G, c->rate[CAL_PATH_BF16]);
    double secs = 0, wiqr = 0;
    for (int i = 0; i < n; i++) secs += c->xgemm[i].seconds, wiqr += c->xgemm[i].iqr * c->xgemm[i].seconds;
    c->group_iqr = secs > 0 ? wiqr / secs : 0;
    return ST_OK;
}
