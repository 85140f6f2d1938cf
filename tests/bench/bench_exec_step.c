/* tests/bench/bench_exec_step.c — the CPU backend beside the machine:
 *   1. STREAM-style memory bandwidth on the thread pool (copy, scale, add,
 *      triad over arrays far larger than the caches), and the memory-bound
 *      kernels at the same sizes with their bytes moved per second;
 *   2. a full training step of GPT-2 124M (seq 1024, micro-batch 1, te-fp8;
 *      `bench_exec_step demo`: docs/executor.md's 2-layer demo) with the share of
 *      forward, backward and optimizer, and of every backend operation (each
 *      function pointer wrapped in a timer).
 *   bench_exec_step [demo | kernels]     (kernels: part 1 only)
 * Times are medians. Targets (issue 18): the kernels near the STREAM figure;
 * the 124M step ≥ 5x faster than the 48 s measured before; stated, not
 * asserted. The machine may be shared: the load average is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_time.h"

#include "exec/model/model.h"
#include "exec/backend/par.h"
#include "fp8/half.h"
#include "support/exec_fixtures.h"

enum { REPS = 5 };

/* ---- 1. STREAM and the memory-bound kernels ------------------------------------- */

enum { STREAM_N = 1 << 25, STREAM_CHUNK = 1 << 16 }; /* 128 MiB per FP32 array */

typedef struct {
    float *a, *b, *c, s;
    int kind; /* 0 copy, 1 scale, 2 add, 3 triad */
} Stream;

static void stream_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    Stream *j = ctx;
    float *a = j->a, *bb = j->b, *c = j->c, s = j->s;
    switch (j->kind) {
    case 0:
        for (uint64_t i = b; i < e; i++) c[i] = a[i];
        break;
    case 1:
        for (uint64_t i = b; i < e; i++) bb[i] = s * c[i];
        break;
    case 2:
        for (uint64_t i = b; i < e; i++) c[i] = a[i] + bb[i];
        break;
    default:
        for (uint64_t i = b; i < e; i++) a[i] = bb[i] + s * c[i];
        break;
    }
}

/* Median seconds of REPS calls of op (after one warm-up). */
#define TIME_MEDIAN(out, op)                         \
    do {                                             \
        double t_[REPS];                             \
        for (int r_ = -1; r_ < REPS; r_++) {         \
            double t0_ = bench_now();                \
            op;                                      \
            if (r_ >= 0) t_[r_] = bench_now() - t0_; \
        }                                            \
        (out) = bench_median(t_, REPS);              \
    } while (0)

static double triad_gbs;

static void stream(void)
{
    Stream j = {malloc(4 * (size_t)STREAM_N), malloc(4 * (size_t)STREAM_N), malloc(4 * (size_t)STREAM_N), 3.0f, 0};
    if (!j.a || !j.b || !j.c) return;
    for (uint64_t i = 0; i < STREAM_N; i++) j.a[i] = 1.0f, j.b[i] = 2.0f, j.c[i] = 0.0f;
    static const char *names[4] = {"copy", "scale", "add", "triad"};
    static const int bytes[4] = {8, 8, 12, 12};
    printf("STREAM on the pool (%d threads), %d Mi floats per array:", par_threads(), STREAM_N >> 20);
    for (j.kind = 0; j.kind < 4; j.kind++) {
        double t;
        TIME_MEDIAN(t, par_chunks(STREAM_N, STREAM_CHUNK, stream_chunk, &j));
        double gbs = (double)bytes[j.kind] * STREAM_N / t / 1e9;
        printf("  %s %.1f GB/s", names[j.kind], gbs);
        if (j.kind == 3) triad_gbs = gbs;
    }
    double t1;
    j.kind = 3;
    TIME_MEDIAN(t1, stream_chunk(&j, 0, STREAM_N, 0));
    printf("\n  (triad on one thread: %.1f GB/s)\n", 12.0 * STREAM_N / t1 / 1e9);
    free(j.a), free(j.b), free(j.c);
}

static void kernel_row(const char *name, double s, double bytes)
{
    printf("  %-34s %9.3f ms %7.1f GB/s %5.0f%% of triad\n", name, 1e3 * s, bytes / s / 1e9,
           100.0 * bytes / s / 1e9 / triad_gbs);
}

static void kernels(Backend *bk)
{
    enum { N = 1 << 24, ROWS = N / 768 }; /* 16 Mi elements: LM-head logits scale */
    void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *w = NULL;
    float *m = NULL, *v = NULL, *master = NULL, *mean = NULL, *rstd = NULL, amax = 0, scale = 1, sinv;
    Err e;
    if (bk->alloc(bk, 4ull * N, &a, &e) || bk->alloc(bk, 4ull * N, &b, &e) || bk->alloc(bk, 4ull * N, &c, &e) ||
        bk->alloc(bk, 4ull * N, &d, &e) || bk->alloc(bk, 4ull * N, &w, &e) ||
        bk->alloc(bk, 4ull * N, (void **)&m, &e) || bk->alloc(bk, 4ull * N, (void **)&v, &e) ||
        bk->alloc(bk, 4ull * N, (void **)&master, &e) || bk->alloc(bk, 4ull * ROWS, (void **)&mean, &e) ||
        bk->alloc(bk, 4ull * ROWS, (void **)&rstd, &e))
        return;
    Rng r = {.s = 5};
    for (uint64_t i = 0; i < N; i++) {
        float x = (float)rng_normal(&r);
        ((float *)a)[i] = x, ((float *)b)[i] = 0.5f * x, master[i] = x, m[i] = 0, v[i] = 0;
        ((uint16_t *)c)[i] = bf16_encode(x);
    }
    for (uint64_t i = 0; i < 768; i++) ((uint16_t *)w)[i] = bf16_encode(1.0f), ((uint16_t *)w)[768 + i] = 0;
    printf("memory-bound kernels on %d Mi elements (GB/s = bytes read + written per second):\n", N >> 20);
    double t;
    TIME_MEDIAN(t, bk->add(bk, c, c, d, DT_BF16, N, &e));
    kernel_row("add (bf16)", t, 6.0 * N);
    TIME_MEDIAN(t, bk->convert(bk, a, DT_FP32, d, DT_BF16, N, NULL, &e));
    kernel_row("convert fp32 -> bf16", t, 6.0 * N);
    TIME_MEDIAN(t, bk->amax(bk, a, DT_FP32, N, &amax, &e));
    kernel_row("amax (fp32)", t, 4.0 * N);
    CastDesc cd = {.in = c,
                   .in_dtype = DT_BF16,
                   .rows = ROWS,
                   .cols = 768,
                   .out_dtype = DT_E4M3,
                   .out_row = d,
                   .out_col = b,
                   .scale = &scale,
                   .scale_inv = &sinv,
                   .amax = &amax};
    TIME_MEDIAN(t, bk->cast_transpose(bk, &cd, &e));
    kernel_row("cast+transpose bf16 -> e4m3 (both)", t, 4.0 * ROWS * 768);
    NormFwdDesc ln = {.norm = NORM_LAYERNORM,
                      .rows = ROWS,
                      .cols = 768,
                      .eps = 1e-5f,
                      .act_dtype = DT_BF16,
                      .weight_dtype = DT_BF16,
                      .in = c,
                      .weight = w,
                      .bias = (uint16_t *)w + 768,
                      .out = d,
                      .mean = mean,
                      .rstd = rstd};
    TIME_MEDIAN(t, bk->norm_fwd(bk, &ln, &e));
    kernel_row("layernorm fwd (bf16, C 768)", t, 4.0 * ROWS * 768);
    ActFwdDesc gelu = {.mlp = MLP_GELU, .rows = 1, .cols = N, .dtype = DT_BF16, .in = c, .out = d};
    TIME_MEDIAN(t, bk->act_fwd(bk, &gelu, &e));
    kernel_row("gelu fwd (bf16)", t, 4.0 * N);
    TIME_MEDIAN(t, bk->bias_grad(bk, c, DT_BF16, ROWS, 768, master, &e));
    kernel_row("bias grad (bf16, C 768)", t, 2.0 * N);
    AdamWDesc ad = {.n = N,
                    .h = {.lr = 1e-3f,
                          .beta1 = 0.9f,
                          .beta2 = 0.95f,
                          .eps = 1e-8f,
                          .weight_decay = 0.1f,
                          .step = 1,
                          .grad_scale = 1},
                    .master = master,
                    .m = m,
                    .v = v,
                    .grad = b,
                    .grad_dtype = DT_FP32,
                    .weight = d,
                    .weight_dtype = DT_BF16};
    TIME_MEDIAN(t, bk->adamw(bk, &ad, &e));
    kernel_row("adamw (fp32 states, bf16 weight)", t, 30.0 * N);
    bk->free(bk, a), bk->free(bk, b), bk->free(bk, c), bk->free(bk, d), bk->free(bk, w), bk->free(bk, m);
    bk->free(bk, v), bk->free(bk, master), bk->free(bk, mean), bk->free(bk, rstd);
}

/* ---- 2. the training step, per phase and per operation -------------------------------- */

enum {
    OP_GEMM,
    OP_ATTN_F,
    OP_ATTN_B,
    OP_LN_F,
    OP_LN_B,
    OP_GELU_F,
    OP_GELU_B,
    OP_ROPE,
    OP_ADD,
    OP_BIAS,
    OP_CAST,
    OP_CONVERT,
    OP_AMAX,
    OP_SCALING,
    OP_EMBED,
    OP_XENT,
    OP_ADAM,
    OP_MEM,
    OP_COUNT
};
static const char *op_names[OP_COUNT] = {"gemm",           "attention fwd",  "attention bwd", "norm fwd", "norm bwd",
                                         "activation fwd", "activation bwd", "rope",          "add",      "bias grad",
                                         "cast+transpose", "convert",        "amax",          "scaling",  "embedding",
                                         "cross-entropy",  "optimizer",      "memset/copy"};
static double op_s[OP_COUNT];
static uint64_t op_n[OP_COUNT];
static Backend orig;

#define TIMED(op, call)                \
    do {                               \
        double t0_ = bench_now();      \
        Status st_ = (call);           \
        op_s[op] += bench_now() - t0_; \
        op_n[op]++;                    \
        return st_;                    \
    } while (0)

static Status t_gemm(Backend *bk, const GemmDesc *g, Err *e) { TIMED(OP_GEMM, orig.gemm(bk, g, e)); }
static Status t_attn_f(Backend *bk, const AttnFwdDesc *d, Err *e) { TIMED(OP_ATTN_F, orig.attention_fwd(bk, d, e)); }
static Status t_attn_b(Backend *bk, const AttnBwdDesc *d, Err *e) { TIMED(OP_ATTN_B, orig.attention_bwd(bk, d, e)); }
static Status t_ln_f(Backend *bk, const NormFwdDesc *d, Err *e) { TIMED(OP_LN_F, orig.norm_fwd(bk, d, e)); }
static Status t_ln_b(Backend *bk, const NormBwdDesc *d, Err *e) { TIMED(OP_LN_B, orig.norm_bwd(bk, d, e)); }
static Status t_gelu_f(Backend *bk, const ActFwdDesc *d, Err *e) { TIMED(OP_GELU_F, orig.act_fwd(bk, d, e)); }
static Status t_gelu_b(Backend *bk, const ActBwdDesc *d, Err *e) { TIMED(OP_GELU_B, orig.act_bwd(bk, d, e)); }
static Status t_rope(Backend *bk, const RopeDesc *d, Err *e) { TIMED(OP_ROPE, orig.rope(bk, d, e)); }
static Status t_add(Backend *bk, const void *a, const void *b, void *out, Dtype dt, uint64_t n, Err *e)
{
    TIMED(OP_ADD, orig.add(bk, a, b, out, dt, n, e));
}
static Status t_bias(Backend *bk, const void *dout, Dtype dt, uint64_t m, uint64_t n, float *db, Err *e)
{
    TIMED(OP_BIAS, orig.bias_grad(bk, dout, dt, m, n, db, e));
}
static Status t_cast(Backend *bk, const CastDesc *c, Err *e) { TIMED(OP_CAST, orig.cast_transpose(bk, c, e)); }
static Status t_convert(Backend *bk, const void *in, Dtype idt, void *out, Dtype odt, uint64_t n, const float *s,
                        Err *e)
{
    TIMED(OP_CONVERT, orig.convert(bk, in, idt, out, odt, n, s, e));
}
static Status t_amax(Backend *bk, const void *in, Dtype dt, uint64_t n, float *amax, Err *e)
{
    TIMED(OP_AMAX, orig.amax(bk, in, dt, n, amax, e));
}
static Status t_delayed(Backend *bk, const ScalingBank *b, Err *e)
{
    TIMED(OP_SCALING, orig.scaling_delayed_update(bk, b, e));
}
static Status t_current(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e)
{
    TIMED(OP_SCALING, orig.scaling_from_amax(bk, n, fmt, margin, amax, scale, e));
}
static Status t_embed_f(Backend *bk, const int32_t *tok, uint32_t b, uint32_t s, uint64_t v, uint64_t c,
                        const void *wte, const void *wpe, Dtype wdt, void *out, Dtype adt, Err *e)
{
    TIMED(OP_EMBED, orig.embed_fwd(bk, tok, b, s, v, c, wte, wpe, wdt, out, adt, e));
}
static Status t_embed_b(Backend *bk, const int32_t *tok, uint32_t b, uint32_t s, uint64_t v, uint64_t c,
                        const void *dout, Dtype adt, float *dwte, float *dwpe, Err *e)
{
    TIMED(OP_EMBED, orig.embed_bwd(bk, tok, b, s, v, c, dout, adt, dwte, dwpe, e));
}
static Status t_xent(Backend *bk, void *logits, Dtype dt, uint64_t rows, uint64_t v, uint64_t vp, const int32_t *tgt,
                     float dloss, float *losses, Err *e)
{
    TIMED(OP_XENT, orig.xent_fwd_bwd(bk, logits, dt, rows, v, vp, tgt, dloss, losses, e));
}
static Status t_adamw(Backend *bk, const AdamWDesc *d, Err *e) { TIMED(OP_ADAM, orig.adamw(bk, d, e)); }
static Status t_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e) { TIMED(OP_ADAM, orig.fp8_adam(bk, d, e)); }
static Status t_memset(Backend *bk, void *p, uint64_t bytes, Err *e) { TIMED(OP_MEM, orig.memset0(bk, p, bytes, e)); }
static Status t_copy_d(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    TIMED(OP_MEM, orig.copy_to_device(bk, dst, src, bytes, e));
}
static Status t_copy_h(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    TIMED(OP_MEM, orig.copy_to_host(bk, dst, src, bytes, e));
}

static void wrap(Backend *bk)
{
    orig = *bk;
    bk->gemm = t_gemm, bk->attention_fwd = t_attn_f, bk->attention_bwd = t_attn_b;
    bk->norm_fwd = t_ln_f, bk->norm_bwd = t_ln_b, bk->act_fwd = t_gelu_f, bk->act_bwd = t_gelu_b, bk->rope = t_rope;
    bk->add = t_add, bk->bias_grad = t_bias, bk->cast_transpose = t_cast, bk->convert = t_convert;
    bk->amax = t_amax, bk->scaling_delayed_update = t_delayed, bk->scaling_from_amax = t_current;
    bk->embed_fwd = t_embed_f, bk->embed_bwd = t_embed_b, bk->xent_fwd_bwd = t_xent;
    bk->adamw = t_adamw, bk->fp8_adam = t_fp8_adam;
    bk->memset0 = t_memset, bk->copy_to_device = t_copy_d, bk->copy_to_host = t_copy_h;
}

enum { STEPS = 3 };

static int step(Backend *bk, int demo)
{
    ModelSpec s = fx_gpt(); /* GPT-2 style; vocabulary padded to a multiple of 64: 50,304 */
    s.layers = demo ? 2 : 12, s.hidden = demo ? 128 : 768, s.heads = s.kv_heads = demo ? 4 : 12, s.head_dim = 64;
    s.ffn_hidden = demo ? 512 : 3072, s.seq_len = demo ? 64 : 1024, s.vocab = 50257;
    Recipe r = fx_recipe("te-fp8");
    ModelHyper h = model_hyper_default();
    Comm *comm = NULL;
    Model *g = NULL;
    Err e;
    double t0 = bench_now();
    if (comm_single_create(&comm, &e) || fx_model(&s, &r, 1, 1, &h, bk, comm, &g, &e)) {
        printf("  step: %s\n", e.msg);
        if (comm) comm->destroy(comm);
        return 1;
    }
    printf("%s, seq %u, micro-batch 1, te-fp8: %llu params, model built in %.2f s\n",
           demo ? "the docs/executor.md demo (2 layers, hidden 128)" : "GPT-2 124M", g->seq,
           (unsigned long long)model_weight_count(g), bench_now() - t0);
    uint64_t bt = model_step_tokens(g);
    int32_t *in = malloc(bt * sizeof *in), *tgt = malloc(bt * sizeof *tgt);
    fx_tokens(g, 9, in, tgt);
    double st[STEPS], ph[STEPS][3], cs[STEPS];
    float loss;
    int rc = 0;
    for (int i = -1; i < STEPS && !rc; i++) {
        if (i == 0) memset(op_s, 0, sizeof op_s), memset(op_n, 0, sizeof op_n);
        double t1 = bench_now(), c1 = bench_cpu();
        if (model_step(g, in, tgt, &loss, &e)) {
            printf("  step: %s\n", e.msg);
            rc = 1;
            break;
        }
        if (i < 0) continue;
        st[i] = bench_now() - t1;
        cs[i] = bench_cpu() - c1;
        ph[i][0] = g->phase_s[PHASE_FWD], ph[i][1] = g->phase_s[PHASE_BWD], ph[i][2] = g->phase_s[PHASE_OPT];
    }
    if (!rc) {
        double sorted[STEPS];
        memcpy(sorted, st, sizeof st);
        double med = bench_median(sorted, STEPS);
        int mi = 0;
        for (int i = 0; i < STEPS; i++)
            if (st[i] == med) mi = i;
        printf("step: median %.3f s of %d (after a warm-up step), %.0f tokens/s, %.3f CPU-s (all threads); loss "
               "%.4f\n",
               med, STEPS, (double)bt / med, bench_median(cs, STEPS), loss);
        printf("  phases of the median step: forward %.3f s (%.0f%%), backward %.3f s (%.0f%%), optimizer %.3f s "
               "(%.0f%%)\n",
               ph[mi][0], 100 * ph[mi][0] / med, ph[mi][1], 100 * ph[mi][1] / med, ph[mi][2], 100 * ph[mi][2] / med);
        double total = 0;
        for (int o = 0; o < OP_COUNT; o++) total += op_s[o];
        printf("  operations, mean per step over the %d steps (%.3f s of backend calls):\n", STEPS, total / STEPS);
        for (int o = 0; o < OP_COUNT; o++)
            if (op_n[o])
                printf("    %-16s %6llu calls %9.3f s %5.1f%%\n", op_names[o], (unsigned long long)(op_n[o] / STEPS),
                       op_s[o] / STEPS, 100 * op_s[o] / total);
    }
    free(in), free(tgt);
    model_destroy(g);
    comm->destroy(comm);
    return rc;
}

int main(int argc, char **argv)
{
    int demo = argc > 1 && !strcmp(argv[1], "demo"), no_step = argc > 1 && !strcmp(argv[1], "kernels");
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines appear as they are measured */
    Backend *bk;
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    bench_load("before");
    stream();
    kernels(bk);
    wrap(bk);
    int rc = no_step ? 0 : step(bk, demo);
    bench_load("after");
    bk->destroy(bk);
    return rc;
}
