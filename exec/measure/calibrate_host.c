/* exec/measure/calibrate_host.c — GEMM rates per dtype path, the element-wise
 * kernels' bandwidth and the launch floor of a backend, measured at the shapes
 * of one layer (see calibrate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/measure/calibrate.h"
#include "planner/plan.h"

enum { LAUNCH_ELEMS = 256, LAUNCH_CALLS = 16 }; /* 4 x 16 = 64 calls: cal_median's limit */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The two timestamps a timed call sits between where the backend has them (a GPU's stream: its work is
 * asynchronous, host clocks would time the launch); the host clock otherwise. */
enum { MARK_T0 = BACKEND_MARKS - 2, MARK_T1 = BACKEND_MARKS - 1 };

static Status tick(Backend *bk, double *t0, Err *e)
{
    if (bk->mark && bk->elapsed) return bk->mark(bk, MARK_T0, e);
    *t0 = now_s();
    return ST_OK;
}

static Status tock(Backend *bk, double t0, double *seconds, Err *e)
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
static Status together(Comm *comm, Backend *bk, float *f, Err *e)
{
    return comm && comm->size > 1 ? comm->all_reduce(comm, COMM_UNPLANNED, bk, f, 1, DT_FP32, COMM_SUM, e) : ST_OK;
}

/* bytes of backend memory at p = byte v (through a host copy: the memory may be a GPU's). */
static Status fill(Backend *bk, void *p, int v, uint64_t bytes, Err *e)
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

static Status bufs_make(Backend *bk, uint64_t bytes, Bufs *u, Err *e)
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

static void bufs_free(Backend *bk, Bufs *u)
{
    void *p[5] = {u->a, u->b, u->d, u->bias, u->one}; /* sync is one's second float */
    for (int i = 0; i < 5; i++)
        if (p[i]) bk->free(bk, p[i]);
}

typedef struct {
    const char *what;
    int path;
    uint64_t m, n, k;
    Dtype da, db, dd;
    GemmLayout la, lb;
    int accum;
} Shape;

static Status time_gemm(Backend *bk, Comm *comm, const Bufs *u, const Shape *s, int reps, CalGemm *out, Err *e)
{
    int f8 = dtype_is_fp8(s->da);
    GemmDesc g = {.m = s->m, .n = s->n, .k = s->k, .accum = s->accum ? GEMM_ACCUMULATE : GEMM_OVERWRITE};
    g.a = (GemmOperand){.ptr = u->a, .dtype = s->da, .layout = s->la, .scale_inv = f8 ? u->one : NULL};
    g.b = (GemmOperand){.ptr = u->b, .dtype = s->db, .layout = s->lb, .scale_inv = f8 ? u->one : NULL};
    g.d = (GemmOutput){.ptr = u->d, .dtype = s->dd};
    double t[64];
    for (int i = -1; i < reps; i++) { /* one warm-up call */
        double t0 = 0, dt = 0;
        Status st = together(comm, bk, u->sync, e);
        if (!st) st = tick(bk, &t0, e);
        if (!st) st = bk->gemm(bk, &g, e);
        if (!st) st = tock(bk, t0, &dt, e);
        if (st) return st;
        if (i >= 0) t[i] = dt;
    }
    memset(out, 0, sizeof *out);
    strncpy(out->what, s->what, sizeof out->what - 1);
    out->path = s->path, out->m = s->m, out->n = s->n, out->k = s->k;
    out->out_dtype = s->dd, out->accum = s->accum;
    CalStat cs;
    cal_stats(t, reps, &cs);
    out->seconds = cs.median, out->spread = cs.spread, out->iqr = cs.iqr;
    return ST_OK;
}

/* The layer's twelve GEMMs on one path, as the executor calls them (exec/model/model_linear.c): fprop
 * x (T, in) · W (out, in)ᵀ; dgrad dY (T, out) · W — FP8 from the transposed copy (K inner), BF16/FP32 with
 * W read K-outer; wgrad dYᵀ · X accumulated into the FP32 gradient (FP8: both transposed copies). */
static int layer_shapes(const ModelSpec *m, uint64_t T, int path, Shape *s)
{
    static const char *const names[LIN_COUNT][3] = {{"qkv fprop", "qkv dgrad", "qkv wgrad"},
                                                    {"proj fprop", "proj dgrad", "proj wgrad"},
                                                    {"fc1 fprop", "fc1 dgrad", "fc1 wgrad"},
                                                    {"fc2 fprop", "fc2 dgrad", "fc2 wgrad"}};
    Dtype wide = path == CAL_PATH_FP32 ? DT_FP32 : DT_BF16;
    Dtype out16 = wide; /* fprop/dgrad outputs: BF16, FP32 on the FP32 path (cuBLASLt has no FP32 x FP32 -> BF16) */
    int f8 = path == CAL_PATH_FP8;
    int n = 0;
    for (int k = 0; k < LIN_COUNT; k++) {
        uint64_t out, in;
        spec_linear_shape(m, (LinearKind)k, 1, &out, &in);
        GemmLayout bo = f8 ? GEMM_K_INNER : GEMM_K_OUTER;
        s[n++] = (Shape){names[k][0],  path,         T, out, in, f8 ? DT_E4M3 : wide, f8 ? DT_E4M3 : wide, out16,
                         GEMM_K_INNER, GEMM_K_INNER, 0};
        s[n++] = (Shape){names[k][1], path,         T,  in, out, f8 ? DT_E5M2 : wide, f8 ? DT_E4M3 : wide,
                         out16,       GEMM_K_INNER, bo, 0};
        s[n++] = (Shape){names[k][2], path, out, in, T, f8 ? DT_E5M2 : wide, f8 ? DT_E4M3 : wide, DT_FP32, bo, bo, 1};
    }
    return n;
}

/* The LM head in BF16 (every recipe): logits (T, V) FP32, dgrad (T, h), wgrad (V, h) accumulated. */
static int head_shapes(const ModelSpec *m, uint64_t T, Shape *s)
{
    uint64_t V = (m->vocab + 127) / 128 * 128, h = m->hidden;
    s[0] = (Shape){"head fprop", CAL_PATH_BF16, T, V, h, DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0};
    s[1] = (Shape){"head dgrad", CAL_PATH_BF16, T, h, V, DT_BF16, DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_K_OUTER, 0};
    s[2] = (Shape){"head wgrad", CAL_PATH_BF16, V, h, T, DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_K_OUTER, 1};
    return 3;
}

static Status gemms(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, Err *e)
{
    Shape s[CAL_MAX_GEMMS];
    int n = 0;
    for (int p = 0; p < CAL_PATHS; p++) n += layer_shapes(m, T, p, s + n);
    n += head_shapes(m, T, s + n);
    uint64_t big = 0;
    for (int i = 0; i < n; i++) {
        uint64_t mk = s[i].m * s[i].k, nk = s[i].n * s[i].k, mn = s[i].m * s[i].n;
        uint64_t x = mk > nk ? mk : nk;
        if (mn > x) x = mn;
        if (x > big) big = x;
    }
    Bufs u;
    Status st = bufs_make(bk, big * 4, &u, e);
    double flops[CAL_PATHS] = {0}, secs[CAL_PATHS] = {0}, wiqr[CAL_PATHS] = {0};
    for (int i = 0; !st && i < n; i++) {
        st = time_gemm(bk, comm, &u, &s[i], reps, &c->gemm[i], e);
        if (st) break;
        int p = s[i].path;
        flops[p] += 2.0 * (double)s[i].m * (double)s[i].n * (double)s[i].k;
        secs[p] += c->gemm[i].seconds;
        if (c->gemm[i].spread > c->rate_spread[p]) c->rate_spread[p] = c->gemm[i].spread;
        wiqr[p] += c->gemm[i].iqr * c->gemm[i].seconds;
    }
    bufs_free(bk, &u);
    c->ngemm = st ? 0 : n;
    /* a path's interquartile spread: its shapes' weighted by their median times — the rate is the FLOPs over
     * the summed medians, whose relative spread is at most that weighted mean (NaN stays NaN: never judged ok) */
    for (int p = 0; p < CAL_PATHS; p++) {
        c->rate[p] = secs[p] > 0 ? flops[p] / secs[p] : 0;
        c->rate_iqr[p] = secs[p] > 0 ? wiqr[p] / secs[p] : NAN;
    }
    return st;
}

enum { K_NORM = 0, K_ACT, K_ADD, K_CAST, K_XENT, K_ADAM, K_FP8ADAM, K_COUNT };

typedef struct {
    uint64_t T, h, F, Vp, n; /* rows, hidden, FFN, padded vocabulary, parameters updated */
    int32_t *targets;        /* (T) zeros */
    float *m, *v;            /* (n) Adam moments */
    float *recs;             /* (3 x REC_FLOATS) FP8-LM's master, m and v scaling records */
} KernelSizes;

/* One kernel the step runs, at the step's sizes. */
static Status kernel_call(Backend *bk, const ModelSpec *m, const Bufs *u, const KernelSizes *z, int which, Err *e)
{
    switch (which) {
    case K_NORM: {
        NormFwdDesc d = {.norm = m->norm,
                         .rows = z->T,
                         .cols = z->h,
                         .eps = 1e-5f,
                         .act_dtype = DT_BF16,
                         .weight_dtype = DT_BF16,
                         .in = u->a,
                         .weight = u->bias,
                         .out = u->b,
                         .rstd = (float *)u->d,
                         .mean = m->norm == NORM_LAYERNORM ? (float *)u->d + z->T : NULL,
                         .bias = m->norm == NORM_LAYERNORM ? u->bias : NULL};
        return bk->norm_fwd(bk, &d, e);
    }
    case K_ACT: {
        ActFwdDesc d = {.mlp = m->mlp, .rows = z->T, .cols = z->F, .dtype = DT_BF16, .in = u->a, .out = u->b};
        return bk->act_fwd(bk, &d, e);
    }
    case K_ADD: return bk->add(bk, u->a, u->b, u->d, DT_BF16, z->T * z->h, e);
    case K_CAST: {
        CastDesc d = {.in = u->a,
                      .in_dtype = DT_BF16,
                      .rows = z->T,
                      .cols = z->h,
                      .out_dtype = DT_E4M3,
                      .out_row = u->b,
                      .out_col = u->d,
                      .scale = u->one};
        return bk->cast_transpose(bk, &d, e);
    }
    case K_XENT: {
        return bk->xent_fwd_bwd(bk, u->a, DT_FP32, z->T, z->Vp, z->Vp, z->targets, 1.0f / (float)z->T, (float *)u->b,
                                e);
    }
    case K_FP8ADAM: { /* FP8-LM's states in the buffers AdamW used: master FP16 in a, m E4M3, v FP16, grad E4M3 */
        Fp8AdamDesc d = {.n = z->n,
                         .h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1, .grad_scale = 1.0f},
                         .margin = 0,
                         .master = u->a,
                         .master_rec = z->recs,
                         .m = z->m,
                         .m_rec = z->recs + REC_FLOATS,
                         .v = z->v,
                         .v_rec = z->recs + 2 * REC_FLOATS,
                         .grad = u->b,
                         .grad_dtype = DT_E4M3,
                         .grad_scale_inv = u->one};
        return bk->fp8_adam(bk, &d, e);
    }
    default: {
        AdamWDesc d = {.n = z->n,
                       .h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1, .grad_scale = 1.0f},
                       .master = (float *)u->a,
                       .m = z->m,
                       .v = z->v,
                       .grad = u->b,
                       .grad_dtype = DT_FP32,
                       .weight = u->d,
                       .weight_dtype = DT_BF16};
        return bk->adamw(bk, &d, e);
    }
    }
}

/* Bytes kernel `which` reads and writes (BF16 activations, FP8 copies, FP32 logits and optimizer states). */
static double kernel_bytes(const ModelSpec *m, const KernelSizes *z, int which)
{
    double T = (double)z->T, x = T * (double)z->h, f = T * (double)z->F;
    switch (which) {
    case K_NORM: return 4.0 * x + 8.0 * T;                       /* read x, write y (2 + 2 B); mean and rstd */
    case K_ACT: return m->mlp == MLP_SWIGLU ? 6.0 * f : 4.0 * f; /* SwiGLU reads gate and up */
    case K_ADD: return 6.0 * x;                                  /* two reads, one write */
    case K_CAST: return 4.0 * x; /* read 2 B, write the row-wise and transposed 1 B copies */
    case K_XENT:
        return 16.0 * T * (double)z->Vp; /* FP32 logits read for the max, for the sum, read + written */
    /* as the planner counts FP8-LM's optimizer (planner/plan_time.c): E4M3 grad read 1, FP16 master 2, E4M3 m 1,
     * FP16 v 2 read and written (10), no working weight; the second pass reads the four again (6) */
    case K_FP8ADAM: return 17.0 * (double)z->n;
    default: return 30.0 * (double)z->n; /* grad 4, master, m, v read + written 24, BF16 weight 2 */
    }
}

enum { ADAM_MAX = 16 << 20 }; /* parameters updated at most: the bandwidth of a stream past the caches */

static Status kernels(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, Err *e)
{
    static const char *const names[K_COUNT] = {"norm",          "activation", "residual add", "fp8 cast+transpose",
                                               "cross-entropy", "adamw",      "fp8lm adam"};
    KernelSizes z = {.T = T, .h = m->hidden, .F = m->ffn_hidden, .Vp = (m->vocab + 127) / 128 * 128};
    uint64_t kF = m->mlp == MLP_SWIGLU ? 2 * z.F : z.F, n = z.Vp * z.h;
    for (int k = 0; k < LIN_COUNT; k++) {
        uint64_t r, cl;
        spec_linear_shape(m, (LinearKind)k, 1, &r, &cl);
        n += r * cl * m->layers;
    }
    z.n = n < ADAM_MAX ? n : ADAM_MAX;
    uint64_t big = T * (kF > z.h ? kF : z.h) * 4 + 16 * T;
    if (T * z.Vp * 4 > big) big = T * z.Vp * 4;
    if (z.n * 4 > big) big = z.n * 4;
    Bufs u;
    Status st = bufs_make(bk, big, &u, e);
    void *tg = NULL, *mm = NULL, *vv = NULL, *rr = NULL;
    if (!st) st = bk->alloc(bk, 3 * REC_FLOATS * sizeof(float), &rr, e);
    if (!st) st = bk->alloc(bk, T * sizeof(int32_t), &tg, e);
    if (!st) st = bk->alloc(bk, z.n * 4, &mm, e);
    if (!st) st = bk->alloc(bk, z.n * 4, &vv, e);
    if (!st) {
        z.targets = tg, z.m = mm, z.v = vv, z.recs = rr;
        const float recs[3 * REC_FLOATS] = {1, 1, 0, 1, 1, 0, 1, 1, 0}; /* scale, scale_inv, amax */
        st = bk->copy_to_device(bk, rr, recs, sizeof recs, e);
        if (!st) st = bk->memset0(bk, tg, T * sizeof(int32_t), e);
        if (!st) st = bk->memset0(bk, mm, z.n * 4, e);
        if (!st) st = bk->memset0(bk, vv, z.n * 4, e);
    }
    /* the element-wise rate: the kernels weighted by their calls per micro-batch of a step (per layer: norm 4,
     * activation 2, residual add 4, FP8 cast 4 — forward and backward; the cross-entropy once); the streaming
     * rate: AdamW alone */
    const double calls[K_COUNT] = {4.0 * m->layers, 2.0 * m->layers, 4.0 * m->layers, 4.0 * m->layers, 1, 1, 1};
    double bytes = 0, secs = 0, wiqr = 0;
    c->nkern = 0;
    for (int w = 0; !st && w < K_COUNT; w++) {
        double t[64];
        /* FP8-LM's states: finite FP16 and E4M3 values (AdamW left FP32 bits in a), zero moments */
        if (w == K_FP8ADAM && ((st = fill(bk, u.a, 0x38, z.n * 2, e)) || (st = bk->memset0(bk, mm, z.n * 4, e)) ||
                               (st = bk->memset0(bk, vv, z.n * 4, e))))
            break;
        for (int i = -1; !st && i < reps; i++) {
            double t0 = 0, dt = 0;
            /* finite logits (the previous call left gradients), before the clock starts */
            if (w == K_XENT && (st = bk->memset0(bk, u.a, z.T * z.Vp * 4, e))) break;
            if ((st = together(comm, bk, u.sync, e)) || (st = tick(bk, &t0, e))) break;
            st = kernel_call(bk, m, &u, &z, w, e);
            if (!st) st = tock(bk, t0, &dt, e);
            if (i >= 0) t[i] = dt;
        }
        if (st) break;
        CalKernel *k = &c->kern[c->nkern++];
        strncpy(k->what, names[w], sizeof k->what - 1);
        k->bytes = kernel_bytes(m, &z, w);
        CalStat cs;
        cal_stats(t, reps, &cs);
        k->seconds = cs.median, k->spread = cs.spread, k->iqr = cs.iqr;
        if (w == K_ADAM) {
            c->mem_bw = k->bytes / k->seconds, c->mem_spread = k->spread, c->mem_iqr = k->iqr;
        } else if (w == K_FP8ADAM) {
            c->scaled_optim_bw = k->bytes / k->seconds, c->scaled_optim_spread = k->spread;
            c->scaled_optim_iqr = k->iqr;
        } else {
            static const ElemKind kind[K_ADAM] = {ELEM_NORM, ELEM_ACT, ELEM_ADD, ELEM_CAST, ELEM_XENT};
            c->elem_kind_bw[kind[w]] = k->seconds > 0 ? k->bytes / k->seconds : 0; /* the kind's own rate */
            bytes += calls[w] * k->bytes, secs += calls[w] * k->seconds;
            if (k->spread > c->elem_spread) c->elem_spread = k->spread;
            wiqr += calls[w] * k->seconds * k->iqr;
        }
    }
    c->elem_bw = !st && secs > 0 ? bytes / secs : 0;
    c->elem_iqr = !st && secs > 0 ? wiqr / secs : NAN; /* weighted by time, as the rate */
    /* the launch floor: the smallest calls a layer makes — a 16 x 16 x 16 BF16 GEMM, a residual add, a norm and
     * an activation of one 256-wide row — each LAUNCH_CALLS times; the median of all their times */
    double t[4 * LAUNCH_CALLS];
    KernelSizes one = z;
    one.T = 1, one.h = one.F = LAUNCH_ELEMS;
    GemmDesc g = {.m = 16, .n = 16, .k = 16, .accum = GEMM_OVERWRITE};
    g.a = (GemmOperand){.ptr = u.a, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.b = (GemmOperand){.ptr = u.b, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.d = (GemmOutput){.ptr = u.d, .dtype = DT_BF16};
    for (int i = 0; !st && i < 4 * LAUNCH_CALLS; i++) {
        double t0 = 0;
        int w = i % 4;
        st = tick(bk, &t0, e);
        if (!st)
            st = w == 0 ? bk->gemm(bk, &g, e)
                        : kernel_call(bk, m, &u, &one,
                                      w == 1   ? K_ADD
                                      : w == 2 ? K_NORM
                                               : K_ACT,
                                      e);
        if (!st) st = tock(bk, t0, &t[i], e);
    }
    if (!st) cal_median(t, 4 * LAUNCH_CALLS, &c->launch_s, &c->launch_spread);
    void *extra[4] = {tg, mm, vv, rr};
    for (int i = 0; i < 4; i++)
        if (extra[i]) bk->free(bk, extra[i]);
    bufs_free(bk, &u);
    return st;
}

double cal_loadavg(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1 || !(l >= 0)) l = -1;
        fclose(f);
    }
    return l;
}

Status calibrate_host(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e)
{
    Status st = calibrate_compute(bk, comm, m, mbs, reps, out, e);
    /* the link up to the model's gradient all-reduce (FP32 gradients: the largest collective of a DP run) */
    uint64_t params = 0;
    if (!st && comm && comm->size > 1 && model_param_count(m, &params))
        st = err_set(e, ST_USAGE, "calibrate: the parameter count of %s passes 2^64", m->name);
    const uint64_t top = params > CAL_LINK_TOP_MAX / 4 ? CAL_LINK_TOP_MAX : params * 4;
    if (!st && comm && comm->size > 1) st = calibrate_link(bk, comm, top, reps, out, e);
    /* what a run's per-layer collective follows: one of the layer's GEMMs (the largest BF16 one: A, B and D) */
    uint64_t layer = 0;
    for (int i = 0; i < out->ngemm; i++) {
        const CalGemm *g = &out->gemm[i];
        uint64_t b = (g->m * g->k + g->n * g->k + g->m * g->n) * 2;
        if (g->path == CAL_PATH_BF16 && strncmp(g->what, "head", 4) && b > layer) layer = b;
    }
    if (!st && comm && comm->size > 1 && !strcmp(comm->name, "mpi")) {
        uint64_t a2a[2]; /* expert parallelism's count exchange and dispatch, for a model with experts */
        st = calibrate_links(bk, comm, top, layer, a2a, cal_ep_sizes(m, mbs, a2a), reps, out, e);
    }
    out->ranks = comm ? comm->size : 1;
    return st;
}

Status calibrate_compute(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (reps < 1 || reps > 64) return err_set(e, ST_USAGE, "calibrate: repetitions %d outside [1, 64]", reps);
    out->reps = reps;
    uint64_t T = (uint64_t)mbs * m->seq_len;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    out->mem_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    snprintf(out->backend, sizeof out->backend, "%s", bk->name);
    BackendDeviceInfo info;
    Status st = ST_OK;
    if (strcmp(bk->name, "cpu") && bk->device_info && !(st = bk->device_info(bk, &info, e))) {
        snprintf(out->device, sizeof out->device, "%.63s", info.name);
        out->cc_major = info.cc_major, out->cc_minor = info.cc_minor, out->sms = info.sm_count;
        out->mem_bytes = info.total_bytes;
    }
    if (!st) st = gemms(bk, comm, m, T, reps, out, e);
    if (!st) st = kernels(bk, comm, m, T, reps, out, e);
    if (!st) st = cal_expert_gemms(bk, comm, m, mbs, reps, out, e);
    out->ranks = comm ? comm->size : 1;
    return st;
}
