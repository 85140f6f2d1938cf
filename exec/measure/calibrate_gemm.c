/* exec/measure/calibrate_gemm.c — the GEMM rates per dtype path, measured at the shapes of one layer as the
 * executor calls them (see calibrate.h): a checked warm-up, then rounds of every shape once, the profile's
 * and its quick re-measure's rounds interleaved. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate_bufs.h"
#include "planner/plan.h"

typedef struct {
    const char *what;
    int path;
    uint64_t m, n, k;
    Dtype da, db, dd;
    GemmLayout la, lb;
    int accum;
} Shape;

static GemmDesc gemm_desc(const Bufs *u, const Shape *s)
{
    int f8 = dtype_is_fp8(s->da);
    GemmDesc g = {.m = s->m, .n = s->n, .k = s->k, .accum = s->accum ? GEMM_ACCUMULATE : GEMM_OVERWRITE};
    g.a = (GemmOperand){.ptr = u->a, .dtype = s->da, .layout = s->la, .scale_inv = f8 ? u->one : NULL};
    g.b = (GemmOperand){.ptr = u->b, .dtype = s->db, .layout = s->lb, .scale_inv = f8 ? u->one : NULL};
    g.d = (GemmOutput){.ptr = u->d, .dtype = s->dd};
    return g;
}

/* One call of g timed, the ranks starting it together. */
static Status time_gemm(Backend *bk, Comm *comm, const Bufs *u, const GemmDesc *g, double *dt, Err *e)
{
    double t0 = 0;
    Status st = together(comm, bk, u->sync, e);
    if (!st) st = tick(bk, &t0, e);
    if (!st) st = bk->gemm(bk, g, e);
    return st ? st : tock(bk, t0, dt, e);
}

/* One sample of g: the median of `calls` timed calls one after another (cal_sample_calls, cal_sample_median), the
 * ranks starting the sample together. */
static Status sample_gemm(Backend *bk, Comm *comm, const Bufs *u, const GemmDesc *g, int calls, double *s, Err *e)
{
    double t[CAL_SAMPLE_CALLS_MAX];
    Status st = together(comm, bk, u->sync, e);
    for (int j = 0; !st && j < calls; j++) st = time_gemm(bk, NULL, u, g, &t[j], e);
    *s = st ? 0 : cal_sample_median(t, calls);
    return st;
}

/* The ranks' flags summed into *all (one rank: its own): whether any rank's warm-up goes on. f: u->sync, left 0
 * for together(). */
static Status agree(Comm *comm, Backend *bk, float *f, float mine, float *all, Err *e)
{
    static const float zero = 0;
    if (!comm || comm->size < 2) {
        *all = mine;
        return ST_OK;
    }
    Status st = bk->copy_to_device(bk, f, &mine, sizeof mine, e);
    if (!st) st = comm->all_reduce(comm, COMM_UNPLANNED, bk, f, 1, DT_FP32, COMM_SUM, e);
    if (!st) st = bk->copy_to_host(bk, all, f, sizeof *all, e);
    return st ? st : bk->copy_to_device(bk, f, &zero, sizeof zero, e);
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

/* Shape s's row of c from its n samples t (each the mean of `calls` calls). */
static void gemm_row(const Shape *s, const double *t, int n, int calls, CalGemm *out)
{
    memset(out, 0, sizeof *out);
    strncpy(out->what, s->what, sizeof out->what - 1);
    out->path = s->path, out->m = s->m, out->n = s->n, out->k = s->k;
    out->out_dtype = s->dd, out->accum = s->accum;
    CalStat cs;
    cal_stats(t, n, &cs);
    out->seconds = cs.median, out->spread = cs.spread, out->iqr = cs.iqr, out->calls = calls;
}

/* c's GEMM rows and per-path rates from the samples t[i * stride + r] (shape i, its r-th of n). */
static void gemm_figures(const Shape *s, int ns, const double *t, int stride, int n, const int *calls, Calibration *c)
{
    double flops[CAL_PATHS] = {0}, secs[CAL_PATHS] = {0}, wiqr[CAL_PATHS] = {0};
    for (int i = 0; i < ns; i++) {
        gemm_row(&s[i], t + (size_t)i * (size_t)stride, n, calls[i], &c->gemm[i]);
        int p = s[i].path;
        flops[p] += 2.0 * (double)s[i].m * (double)s[i].n * (double)s[i].k;
        secs[p] += c->gemm[i].seconds;
        if (c->gemm[i].spread > c->rate_spread[p]) c->rate_spread[p] = c->gemm[i].spread;
        wiqr[p] += c->gemm[i].iqr * c->gemm[i].seconds;
    }
    c->ngemm = ns;
    /* a path's interquartile spread: its shapes' weighted by their median times — the rate is the FLOPs over
     * the summed medians, whose relative spread is at most that weighted mean (NaN stays NaN: never judged ok) */
    for (int p = 0; p < CAL_PATHS; p++) {
        c->rate[p] = secs[p] > 0 ? flops[p] / secs[p] : 0;
        c->rate_iqr[p] = secs[p] > 0 ? wiqr[p] / secs[p] : NAN;
    }
}

/* The checked warm-up: rounds of every shape once until one is warm (cal_warm_settled) on every rank. */
static Status warm_up(Backend *bk, Comm *comm, const Bufs *u, const GemmDesc *g, int ns, double *last, Calibration *c,
                      Err *e)
{
    Status st = ST_OK;
    float going = 1;
    double prev = 0;
    for (int r = 0; !st && going > 0 && r < CAL_WARM_ROUNDS_MAX; r++) {
        double sum = 0;
        for (int i = 0; !st && i < ns; i++)
            if (!(st = time_gemm(bk, comm, u, &g[i], &last[i], e))) sum += last[i];
        int warm = r + 1 >= CAL_WARM_ROUNDS_MIN && cal_warm_settled(prev, sum);
        if (!st) st = agree(comm, bk, u->sync, warm ? 0.0f : 1.0f, &going, e);
        c->warm_rounds = r + 1, c->warm_settled = going <= 0;
        if (!r) c->warm_first_s = sum;
        c->warm_prev_s = prev, c->warm_last_s = sum, prev = sum;
    }
    return st;
}

/* The GEMMs: a checked warm-up, then reps + again_reps rounds of every shape once, the re-measure's rounds
 * among the profile's (cal_again_slot). */
Status cal_gemms(Backend *bk, Comm *comm, const ModelSpec *m, uint64_t T, int reps, Calibration *c, int again_reps,
                 Calibration *again, Err *e)
{
    Shape s[CAL_MAX_GEMMS];
    GemmDesc g[CAL_MAX_GEMMS];
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
    const int ra = again ? again_reps : 0, stride = 64;
    double *t = malloc((size_t)n * stride * 2 * sizeof *t), *ta = t ? t + (size_t)n * stride : NULL;
    if (!t) return err_set(e, ST_NOMEM, "calibrate: out of memory for %d GEMM shapes' times", n);
    Bufs u;
    Status st = bufs_make(bk, big * 4, &u, e);
    for (int i = 0; !st && i < n; i++) g[i] = gemm_desc(&u, &s[i]);
    /* the calls a sample takes per shape, from its time in the warm-up's last round (the most any rank needs) */
    double last[CAL_MAX_GEMMS];
    int calls[CAL_MAX_GEMMS];
    if (!st) st = warm_up(bk, comm, &u, g, n, last, c, e);
    for (int i = 0; !st && i < n; i++) calls[i] = cal_sample_calls(last[i], CAL_GEMM_SAMPLE_S);
    if (!st) st = agree_max(comm, bk, calls, n, e);
    for (int k = 0, im = 0, ia = 0; !st && k < reps + ra; k++) {
        const int to_again = cal_again_slot(k, reps, ra);
        for (int i = 0; !st && i < n; i++)
            st = sample_gemm(bk, comm, &u, &g[i], calls[i], to_again ? &ta[i * stride + ia] : &t[i * stride + im], e);
        to_again ? ia++ : im++;
    }
    bufs_free(bk, &u);
    if (!st) gemm_figures(s, n, t, stride, reps, calls, c);
    if (!st && again) {
        gemm_figures(s, n, ta, stride, ra, calls, again);
        again->warm_rounds = c->warm_rounds, again->warm_settled = c->warm_settled;
        again->warm_first_s = c->warm_first_s, again->warm_prev_s = c->warm_prev_s, again->warm_last_s = c->warm_last_s;
    }
    free(t);
    return st;
}
