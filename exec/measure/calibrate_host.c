/* exec/measure/calibrate_host.c — the element-wise kernels' bandwidth and the
 * launch floor of a backend, measured at the shapes of one layer (see
 * calibrate.h); calibrate_profile.c runs them in the profile's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "exec/measure/calibrate_bufs.h"
#include "exec/model/model.h"
#include "planner/plan.h"

enum { LAUNCH_ELEMS = 256, LAUNCH_CALLS = 16 }; /* 4 x 16 = 64 calls: cal_median's limit */

enum { ADAM_TENSORS = 64 }; /* AdamW calls at most (the rest of the parameters joins the last) */
enum { K_NORM = 0, K_ACT, K_ADD, K_CAST, K_XENT, K_AMAX, K_CAST_ROW, K_ADAM, K_FP8ADAM, K_O1ADAM, K_COUNT };

typedef struct {
    uint64_t T, h, F, Vp, n;     /* rows, hidden, FFN, padded vocabulary, parameters updated */
    uint64_t wgrad;              /* elements of the FP8 main gradient the row-wise cast commits: FC1's (hidden x FFN) */
    uint64_t tens[ADAM_TENSORS]; /* AdamW's calls: each tensor's parameters (adam_tensors), ntens of them, n in all */
    int ntens;
    int32_t *targets; /* (T) zeros */
    float *m, *v;     /* (n) Adam moments */
    float *recs;      /* (3 x REC_FLOATS) FP8-LM's master, m and v scaling records */
    float *scale;     /* 2 floats: the FP8 cast's scale, 448 / amax of its input (run_values); the amax's */
} KernelSizes;

/* n values of dtype dt at p (backend memory, through a host copy): mul x standard normals of stream key, their
 * magnitudes when `abs`; *amax (optional) the largest magnitude stored. */
static Status fill_normal(Backend *bk, void *p, Dtype dt, uint64_t n, float mul, int abs, uint64_t key, float *amax,
                          Err *e)
{
    float *f = malloc(n * sizeof *f);
    uint8_t *h = malloc(n * dtype_bytes(dt));
    Status st =
        !f || !h ? err_set(e, ST_NOMEM, "calibrate: out of memory for %llu values", (unsigned long long)n) : ST_OK;
    if (!st) {
        rng_normal_fill(key, 0, n, mul, f);
        if (abs)
            for (uint64_t i = 0; i < n; i++) f[i] = fabsf(f[i]);
        elem_store_run(h, dt, 0, f, n);
        elem_load_run(h, dt, 0, f, n); /* the values as stored (rounded) */
        float a = 0;
        for (uint64_t i = 0; i < n; i++) a = fmaxf(a, fabsf(f[i]));
        if (amax) *amax = a;
        st = bk->copy_to_device(bk, p, h, n * dtype_bytes(dt), e);
    }
    free(f);
    free(h);
    return st;
}

/* The inputs of the kernels whose time depends on the values, drawn as a run's are (bufs_make's 0x38 bytes take
 * one branch every element, which the CPU predicts every time). FP8 rounding (fp8/codec.c encode_f32) branches on
 * each value's range (normal, subnormal, past the largest) and FP16's the same; GeLU's tanhf and SwiGLU's expf on
 * the argument's magnitude (tanhf returns a tiny argument as it is, a larger one costs an expm1f). So: the norm's
 * and the cast's BF16 input standard normals, the activation's FC1's output at initialization (below), the cast's
 * scale 448 / amax of it as delayed and current scaling make it
 * (the E4M3 codes then span the format's range, as in a run); FP8-LM's optimizer a weight-like FP16 master
 * (0.02 x normal), E4M3 gradient and first moment spanning E4M3 (64 x normal), FP16 second moment (1e-4 x
 * |normal|), each re-scaled by the optimizer's own amax from the first call on. AdamW (FP32, no branch on the
 * values), the add and the cross-entropy keep the 0x38 bytes. */
static Status run_values(Backend *bk, const ModelSpec *m, const Bufs *u, const KernelSizes *z, int which, Err *e)
{
    const uint64_t key = 0xCA11B7A7Eull;
    uint64_t x = z->T * (m->mlp == MLP_SWIGLU ? 2 * z->F : z->F); /* the activation's input (SwiGLU: gate and up) */
    float amax = 0;
    switch (which) {
    case K_NORM: return fill_normal(bk, u->a, DT_BF16, z->T * z->h, 1.0f, 0, key, NULL, e);
    case K_ACT: { /* FC1's output at the executor's initialization: a normalized input (1 a value) through weights of
                   * N(0, init_std): N(0, init_std^2 x hidden) */
        const float sd = model_hyper_default().init_std * sqrtf((float)z->h);
        return fill_normal(bk, u->a, DT_BF16, x, sd, 0, key, NULL, e);
    }
    case K_CAST: {
        Status st = fill_normal(bk, u->a, DT_BF16, z->T * z->h, 1.0f, 0, key, &amax, e);
        const float s = amax > 0 ? 448.0f / amax : 1.0f;
        return st ? st : bk->copy_to_device(bk, z->scale, &s, sizeof s, e);
    }
    case K_AMAX: return fill_normal(bk, u->a, DT_BF16, z->T * z->h, 1.0f, 0, key, NULL, e);
    case K_CAST_ROW: { /* a weight gradient's FP32 values, scaled as the commit's current scaling does */
        Status st = fill_normal(bk, u->a, DT_FP32, z->wgrad, 1e-3f, 0, key, &amax, e);
        const float s = amax > 0 ? 448.0f / amax : 1.0f;
        return st ? st : bk->copy_to_device(bk, z->scale, &s, sizeof s, e);
    }
    case K_FP8ADAM: {
        Status st = fill_normal(bk, u->a, DT_FP16, z->n, 0.02f, 0, key, NULL, e);
        if (!st) st = fill_normal(bk, u->b, DT_E4M3, z->n, 64.0f, 0, key + 1, NULL, e);
        if (!st) st = fill_normal(bk, z->m, DT_E4M3, z->n, 64.0f, 0, key + 2, NULL, e);
        return st ? st : fill_normal(bk, z->v, DT_FP16, z->n, 1e-4f, 1, key + 3, NULL, e);
    }
    case K_O1ADAM: { /* MS-AMP O1's: the FP16 weight, the E4M3 gradient as FP8-LM's; FP32 m and v (a gradient's
                      * moments: 1e-3 x normal, 1e-6 x |normal|) */
        const float rec[REC_FLOATS] = {1, 1, 0}; /* the weight's record: scale 1, as its values are drawn */
        Status st = bk->copy_to_device(bk, z->recs, rec, sizeof rec, e);
        if (!st) st = fill_normal(bk, u->a, DT_FP16, z->n, 0.02f, 0, key, NULL, e);
        if (!st) st = fill_normal(bk, u->b, DT_E4M3, z->n, 64.0f, 0, key + 1, NULL, e);
        if (!st) st = fill_normal(bk, z->m, DT_FP32, z->n, 1e-3f, 0, key + 2, NULL, e);
        return st ? st : fill_normal(bk, z->v, DT_FP32, z->n, 1e-6f, 1, key + 3, NULL, e);
    }
    default: return ST_OK;
    }
}

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
    case K_AMAX: return bk->amax(bk, u->a, DT_BF16, z->T * z->h, z->scale + 1, e); /* current scaling's amax read */
    case K_CAST_ROW: { /* the FP8 main gradient's commit (exec/model/model_grad.c): FP32 in, the row-wise copy out */
        CastDesc d = {.in = u->a,
                      .in_dtype = DT_FP32,
                      .rows = 1,
                      .cols = z->wgrad,
                      .out_dtype = DT_E4M3,
                      .out_row = u->b,
                      .scale = z->scale};
        return bk->cast_transpose(bk, &d, e);
    }
    case K_CAST: {
        CastDesc d = {.in = u->a,
                      .in_dtype = DT_BF16,
                      .rows = z->T,
                      .cols = z->h,
                      .out_dtype = DT_E4M3,
                      .out_row = u->b,
                      .out_col = u->d,
                      .scale = z->scale};
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
    case K_O1ADAM: { /* MS-AMP O1's: the scaled FP16 weight in a updated in place, FP32 m and v, E4M3 grad */
        Fp8AdamDesc d = {.n = z->n,
                         .h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1, .grad_scale = 1.0f},
                         .margin = 0,
                         .master = u->a,
                         .master_rec = z->recs,
                         .m = z->m,
                         .v = z->v,
                         .moment_dtype = DT_FP32,
                         .grad = u->b,
                         .grad_dtype = DT_E4M3,
                         .grad_scale_inv = u->one};
        return bk->fp8_adam(bk, &d, e);
    }
    default: { /* as a run's optimizer calls it: adamw_multi over one desc a tensor (exec/model/model_step.c), whose
                * CPU backend runs each tensor on the pool in turn, every call ending with its slowest worker */
        AdamWDesc d[ADAM_TENSORS];
        uint64_t at = 0;
        for (int i = 0; i < z->ntens; i++) {
            d[i] =
                (AdamWDesc){.n = z->tens[i],
                            .h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1, .grad_scale = 1},
                            .master = (float *)u->a + at,
                            .m = z->m + at,
                            .v = z->v + at,
                            .grad = (float *)u->b + at,
                            .grad_dtype = DT_FP32,
                            .weight = (uint16_t *)u->d + at,
                            .weight_dtype = DT_BF16};
            at += z->tens[i];
        }
        AdamWMultiDesc md = {.count = (uint32_t)z->ntens, .list = d, .list_dev = NULL};
        return bk->adamw_multi(bk, &md, e);
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
    case K_CAST: return 4.0 * x;                    /* read 2 B, write the row-wise and transposed 1 B copies */
    case K_AMAX: return 2.0 * x;                    /* read 2 B */
    case K_CAST_ROW: return 5.0 * (double)z->wgrad; /* read 4 B, write 1 B */
    case K_XENT:
        return 16.0 * T * (double)z->Vp; /* FP32 logits read for the max, for the sum, read + written */
    /* as the planner counts FP8-LM's optimizer (planner/plan_time.c): E4M3 grad read 1, FP16 master 2, E4M3 m 1,
     * FP16 v 2 read and written (10), no working weight; the second pass reads the four again (6) */
    case K_FP8ADAM: return 17.0 * (double)z->n;
    /* MS-AMP O1's, the same way (planner/plan_time.c): E4M3 grad 1, the FP16 weight 2 + FP32 m 4 + v 4 read and
     * written (21); the second pass reads the four again (11) */
    case K_O1ADAM: return 32.0 * (double)z->n;
    default: return 30.0 * (double)z->n; /* grad 4, master, m, v read + written 24, BF16 weight 2 */
    }
}

enum { ADAM_MAX = 16 << 20 }; /* parameters updated at most: the bandwidth of a stream past the caches */

/* One kind of kernel's own operands (the values run_values drew stay between its samples), sizes and calls per
 * sample (cal_sample_calls). */
typedef struct {
    Bufs u;
    KernelSizes z;
    void *tg, *mm, *vv, *rr; /* targets; Adam moments (the optimizers); the records, the cast's scale and amax */
    int calls;
} KindBufs;

/* The bytes each of kind w's four operand buffers needs; `big` (the largest operand of any kind) for the
 * optimizers and any kind not sized here. */
static uint64_t kind_bytes(const ModelSpec *m, const KernelSizes *z, int w, uint64_t big)
{
    const uint64_t kF = m->mlp == MLP_SWIGLU ? 2 * z->F : z->F;
    switch (w) {
    case K_NORM:
    case K_ADD:
    case K_CAST:
    case K_AMAX: return z->T * z->h * 4 + 16 * z->T;
    case K_ACT: return z->T * kF * 4 + 16 * z->T;
    case K_XENT: return z->T * z->Vp * 4;
    case K_CAST_ROW: return z->wgrad * 4;
    default: return big;
    }
}

static Status kind_make(Backend *bk, const ModelSpec *m, const KernelSizes *z, int w, uint64_t big, KindBufs *k, Err *e)
{
    memset(k, 0, sizeof *k);
    k->z = *z;
    /* Adam moments for the optimizers (every kind but the element-wise ones: a kind added later gets them) */
    const int optim =
        w != K_NORM && w != K_ACT && w != K_ADD && w != K_CAST && w != K_XENT && w != K_AMAX && w != K_CAST_ROW;
    Status st = bufs_make(bk, kind_bytes(m, z, w, big), &k->u, e);
    if (!st) st = bk->alloc(bk, (3 * REC_FLOATS + 2) * sizeof(float), &k->rr, e);
    if (!st) st = bk->alloc(bk, z->T * sizeof(int32_t), &k->tg, e);
    if (!st && optim) st = bk->alloc(bk, z->n * 4, &k->mm, e);
    if (!st && optim) st = bk->alloc(bk, z->n * 4, &k->vv, e);
    if (st) return st;
    k->z.targets = k->tg, k->z.m = k->mm, k->z.v = k->vv, k->z.recs = k->rr;
    k->z.scale = (float *)k->rr + 3 * REC_FLOATS;
    const float recs[3 * REC_FLOATS] = {1, 1, 0, 1, 1, 0, 1, 1, 0}; /* scale, scale_inv, amax */
    st = bk->copy_to_device(bk, k->rr, recs, sizeof recs, e);
    if (!st) st = bk->memset0(bk, k->tg, z->T * sizeof(int32_t), e);
    if (!st && optim) st = bk->memset0(bk, k->mm, z->n * 4, e);
    if (!st && optim) st = bk->memset0(bk, k->vv, z->n * 4, e);
    /* values as a run's where the time depends on them */
    return st ? st : run_values(bk, m, &k->u, &k->z, w, e);
}

static void kind_free(Backend *bk, KindBufs *k)
{
    void *extra[4] = {k->tg, k->mm, k->vv, k->rr};
    for (int i = 0; i < 4; i++)
        if (extra[i]) bk->free(bk, extra[i]);
    bufs_free(bk, &k->u);
}

/* The tensors of AdamW's calls over z->n parameters, in the executor's order (exec/model/model_layout.c: the token
 * embedding, then each layer's linear weights): a call per tensor, as the run's optimizer makes them, the parameters
 * past ADAM_MAX cut from the last ones, the tensors past ADAM_TENSORS joined to the last call. */
static void adam_tensors(const ModelSpec *m, KernelSizes *z)
{
    uint64_t left = z->n;
    z->ntens = 0;
    for (int l = -1; left && l < (int)m->layers; l++)
        for (int k = 0; left && k < (l < 0 ? 1 : LIN_COUNT); k++) {
            uint64_t r = z->Vp, c = z->h; /* l -1: the embedding */
            if (l >= 0) spec_linear_shape(m, (LinearKind)k, 1, &r, &c);
            uint64_t t = r * c < left ? r * c : left;
            if (!t) continue;
            if (z->ntens < ADAM_TENSORS)
                z->tens[z->ntens++] = t;
            else
                z->tens[ADAM_TENSORS - 1] += t;
            left -= t;
        }
    if (left && z->ntens) z->tens[z->ntens - 1] += left; /* (none: n is these tensors' sum or ADAM_MAX) */
}

/* One sample of kind w: k->calls calls one after another (finite logits before each cross-entropy: the previous
 * call left gradients), each on the clock: their median into *s (cal_sample_median). The ranks start the sample
 * together (one agreement a call would cost more than the calls under mpirun on a loaded host: 2-rank profiles
 * passed 120 s at a load of 20). */
static Status kind_sample(Backend *bk, Comm *comm, const ModelSpec *m, KindBufs *k, int w, double *s, Err *e)
{
    double t[CAL_SAMPLE_CALLS_MAX];
    Status st = together(comm, bk, k->u.sync, e);
    for (int j = 0; !st && j < k->calls; j++) {
        double t0 = 0;
        t[j] = 0;
        if (w == K_XENT && (st = bk->memset0(bk, k->u.a, k->z.T * k->z.Vp * 4, e))) break;
        if ((st = tick(bk, &t0, e))) break;
        st = kernel_call(bk, m, &k->u, &k->z, w, e);
        if (!st) st = tock(bk, t0, &t[j], e);
    }
    *s = st ? 0 : cal_sample_median(t, k->calls);
    return st;
}

Status cal_kernels(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, int again_reps,
                   Calibration *again, Err *e)
{
    static const char *const names[K_COUNT] = {
        "norm", "activation",        "residual add", "fp8 cast+transpose", "cross-entropy",
        "amax", "fp8 cast fp32 row", "adamw",        "fp8lm adam",         "msamp-o1 adam"};
    KernelSizes z = {.T = T, .h = m->hidden, .F = m->ffn_hidden, .Vp = (m->vocab + 127) / 128 * 128};
    uint64_t kF = m->mlp == MLP_SWIGLU ? 2 * z.F : z.F, n = z.Vp * z.h;
    for (int k = 0; k < LIN_COUNT; k++) {
        uint64_t r, cl;
        spec_linear_shape(m, (LinearKind)k, 1, &r, &cl);
        n += r * cl * m->layers;
    }
    z.n = n < ADAM_MAX ? n : ADAM_MAX;
    adam_tensors(m, &z);
    z.wgrad = z.h * z.F < z.n ? z.h * z.F : z.n;
    uint64_t big = T * (kF > z.h ? kF : z.h) * 4 + 16 * T;
    if (T * z.Vp * 4 > big) big = T * z.Vp * 4;
    if (z.n * 4 > big) big = z.n * 4;
    KindBufs *kb = calloc(K_COUNT, sizeof *kb);
    if (!kb) return err_set(e, ST_NOMEM, "calibrate: out of memory for %d kernels' buffers", K_COUNT);
    Status st = ST_OK;
    int made = 0;
    for (; !st && made < K_COUNT; made++) st = kind_make(bk, m, &z, made, big, &kb[made], e);
    /* the warm-up: per kind a call (pages touched, caches filled), then two on the clock; the faster sets the
     * calls a sample takes, the most any rank needs (the ranks start every sample together) */
    int per_sample[K_COUNT];
    for (int w = 0; !st && w < K_COUNT; w++) {
        double best = INFINITY, dt = 0;
        kb[w].calls = 1;
        for (int i = 0; !st && i < 3; i++)
            if (!(st = kind_sample(bk, comm, m, &kb[w], w, &dt, e)) && i && dt < best) best = dt;
        per_sample[w] = cal_sample_calls(best, CAL_SAMPLE_S);
    }
    if (!st) st = agree_max(comm, bk, per_sample, K_COUNT, e);
    for (int w = 0; !st && w < K_COUNT; w++) kb[w].calls = per_sample[w];
    /* the element-wise rate: the kernels weighted by their calls per micro-batch of a step (per layer: norm 4,
     * activation 2, residual add 4, FP8 cast 4 — forward and backward; the cross-entropy once); the streaming
     * rate: AdamW alone */
    const double calls[K_COUNT] = {
        4.0 * m->layers, 2.0 * m->layers, 4.0 * m->layers, 4.0 * m->layers, 1, 0, 0, 1, 1, 1};
    Calibration *to[2] = {c, again};
    double acc[2][3] = {{0}}; /* per calibration: the element-wise bytes, seconds and iqr x seconds, weighted */
    const int ra = again ? again_reps : 0;
    c->nkern = 0;
    if (again) again->nkern = 0;
    /* rounds of one sample of every kind (a load burst hits a round of each, not every sample of one), the
     * profile's and the re-measure's rounds interleaved (cal_again_slot) */
    double(*t)[2][64] = calloc(K_COUNT, sizeof *t);
    int got[K_COUNT][2] = {{0}};
    if (!st && !t) st = err_set(e, ST_NOMEM, "calibrate: out of memory for the kernels' times");
    for (int i = 0; !st && i < reps + ra; i++) {
        const int x = cal_again_slot(i, reps, ra);
        for (int w = 0; !st && w < K_COUNT; w++) st = kind_sample(bk, comm, m, &kb[w], w, &t[w][x][got[w][x]++], e);
    }
    for (int w = 0; !st && w < K_COUNT; w++) {
        for (int x = 0; !st && x < 2 && to[x]; x++) {
            Calibration *cx = to[x];
            CalKernel *k = &cx->kern[cx->nkern++];
            strncpy(k->what, names[w], sizeof k->what - 1);
            k->bytes = kernel_bytes(m, &z, w);
            CalStat cs;
            cal_stats(t[w][x], got[w][x], &cs);
            k->seconds = cs.median, k->spread = cs.spread, k->iqr = cs.iqr, k->calls = kb[w].calls;
            if (w == K_ADAM) {
                cx->mem_bw = k->bytes / k->seconds, cx->mem_spread = k->spread, cx->mem_iqr = k->iqr;
            } else if (w == K_FP8ADAM) {
                cx->scaled_optim_bw = k->bytes / k->seconds, cx->scaled_optim_spread = k->spread;
                cx->scaled_optim_iqr = k->iqr;
            } else if (w == K_O1ADAM) {
                cx->o1_optim_bw = k->bytes / k->seconds, cx->o1_optim_spread = k->spread, cx->o1_optim_iqr = k->iqr;
            } else {
                /* the amax and the row-wise cast are rated apart, not in the weighted elem_gbps (calls 0) */
                static const ElemKind kind[K_ADAM] = {ELEM_NORM, ELEM_ACT,  ELEM_ADD,     ELEM_CAST,
                                                      ELEM_XENT, ELEM_AMAX, ELEM_CAST_ROW};
                cx->elem_kind_bw[kind[w]] = k->seconds > 0 ? k->bytes / k->seconds : 0; /* the kind's own rate */
                cx->elem_kind_iqr[kind[w]] = k->iqr;
                acc[x][0] += calls[w] * k->bytes, acc[x][1] += calls[w] * k->seconds;
                if (calls[w] > 0 && k->spread > cx->elem_spread) cx->elem_spread = k->spread;
                acc[x][2] += calls[w] * k->seconds * k->iqr;
            }
        }
    }
    free(t);
    for (int x = 0; x < 2 && to[x]; x++) {
        const double secs = acc[x][1];
        to[x]->elem_bw = !st && secs > 0 ? acc[x][0] / secs : 0;
        to[x]->elem_iqr = !st && secs > 0 ? acc[x][2] / secs : NAN; /* weighted by time, as the rate */
    }
    /* the launch floor: the smallest calls a layer makes — a 16 x 16 x 16 BF16 GEMM, a residual add, a norm and
     * an activation of one 256-wide row — each LAUNCH_CALLS times; the median of all their times (in the
     * optimizer's buffers: the largest) */
    double lt[4 * LAUNCH_CALLS];
    const Bufs *u = &kb[K_ADAM].u;
    KernelSizes one = kb[K_ADAM].z;
    one.T = 1, one.h = one.F = LAUNCH_ELEMS;
    GemmDesc g = {.m = 16, .n = 16, .k = 16, .accum = GEMM_OVERWRITE};
    g.a = (GemmOperand){.ptr = u->a, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.b = (GemmOperand){.ptr = u->b, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.d = (GemmOutput){.ptr = u->d, .dtype = DT_BF16};
    for (int i = 0; !st && i < 4 * LAUNCH_CALLS; i++) {
        double t0 = 0;
        int w = i % 4;
        st = tick(bk, &t0, e);
        if (!st)
            st = w == 0 ? bk->gemm(bk, &g, e)
                        : kernel_call(bk, m, u, &one,
                                      w == 1   ? K_ADD
                                      : w == 2 ? K_NORM
                                               : K_ACT,
                                      e);
        if (!st) st = tock(bk, t0, &lt[i], e);
    }
    if (!st) cal_median(lt, 4 * LAUNCH_CALLS, &c->launch_s, &c->launch_spread);
    for (int w = 0; w < made; w++) kind_free(bk, &kb[w]);
    free(kb);
    return st;
}
