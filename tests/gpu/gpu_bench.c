/* tests/gpu/gpu_bench.c — timings on the GPU through the backend interface:
 * the cuBLASLt GEMM sweep, FP8 against BF16, and the memory-bound kernels.
 *
 *   gpu_bench GEMM_CSV KERNEL_CSV [TOKENS] [SEED]     exit 69 without a GPU
 *
 * GEMMs: 4096³ and 8192³ (TN), and the twelve GEMMs of one GPT-13B layer
 * (hidden 5120, FFN 20480, TOKENS = micro-batch × sequence, default 2 × 2048)
 * in the layouts the executor issues them: BF16 fprop TN, dgrad NN, wgrad NT
 * into FP32 (accumulate); FP8 all TN on the transposed copies, E4M3 × E4M3 with
 * fast accumulation in fprop, E5M2 × E4M3 with split accumulation in dgrad and
 * wgrad (TE's defaults). Operands hold random values (never zeros: an H200 ran
 * a BF16 GEMM 13 % faster on zeros, METHOD.md), every 2 MiB block of the host
 * pattern repeated over the buffer. Each GEMM: 3 warm-up runs, then timed runs
 * (CUDA events around each) until 150 ms or 50 runs, at least 10; the median,
 * minimum and maximum are reported, TFLOP/s = 2·m·n·k / median.
 *
 * Kernels: fused cast+transpose, layer norm, GELU, AdamW, cross-entropy and
 * attention forward+backward at the same layer's shapes; GB/s counts the
 * fewest bytes each must move (inputs read once, outputs written once). */
#include "gpu_common.h"

enum { WARM = 3, MIN_REPS = 10, MAX_REPS = 50 };
static const double BUDGET_S = 0.150;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    double med, min, max;
    int reps;
} Timing;

/* Time fn(ctx) between marks 0 and 1, after warm-up. */
static Timing time_it(Gc *g, void (*fn)(Gc *, void *), void *ctx)
{
    double t[MAX_REPS], sum = 0.0;
    int n = 0;
    for (int i = 0; i < WARM; i++) fn(g, ctx);
    while (n < MAX_REPS && (n < MIN_REPS || sum < BUDGET_S)) {
        GC_OK(g, g->gpu->mark(g->gpu, 0, GE));
        fn(g, ctx);
        GC_OK(g, g->gpu->mark(g->gpu, 1, GE));
        GC_OK(g, g->gpu->elapsed(g->gpu, 0, 1, &t[n], GE));
        sum += t[n++];
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_d);
    Timing r = {t[n / 2], t[0], t[n - 1], n};
    if (n % 2 == 0) r.med = 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return r;
}

/* A device buffer of n values of dt (BF16, FP32) filled with a random N(0,1)
 * pattern, or with its squares ×1e-6 when `square` (an Adam second moment). */
static void *filled_as(Gc *g, Dtype dt, uint64_t n, int square)
{
    static void *pat[2][2];
    enum { PAT = 1u << 20 }; /* elements in the host pattern */
    int k = dt == DT_FP32;
    if (!pat[k][square]) {
        pat[k][square] = gc_randn(g, dt, PAT, 1.0);
        for (uint64_t i = 0; square && i < PAT; i++) {
            float x = elem_load(pat[k][square], dt, i);
            elem_store(pat[k][square], dt, i, x * x * 1e-6f);
        }
    }
    void *const p = pat[k][square];
    uint64_t eb = dtype_bytes(dt);
    char *d = gc_dalloc(g, n * eb);
    for (uint64_t off = 0; off < n; off += PAT) gc_put(g, d + off * eb, p, (n - off < PAT ? n - off : PAT) * eb);
    return d;
}

static void *filled(Gc *g, Dtype dt, uint64_t n) { return filled_as(g, dt, n, 0); }

/* An FP8 copy (scale 1: the N(0,1) pattern is well inside both formats) of a BF16 buffer. */
static void *fp8_of(Gc *g, const void *bf16, uint64_t n, Dtype fmt, float *one)
{
    void *q = gc_dalloc(g, n);
    CastDesc c = {.in = bf16, .in_dtype = DT_BF16, .rows = 1, .cols = n, .out_dtype = fmt, .out_row = q, .scale = one};
    GC_OK(g, g->gpu->cast_transpose(g->gpu, &c, GE));
    return q;
}

static void run_gemm(Gc *g, void *ctx) { GC_OK(g, g->gpu->gemm(g->gpu, (const GemmDesc *)ctx, GE)); }

typedef struct {
    const char *shape, *role;
    uint64_t m, n, k;
} Shape;

static void sweep(Gc *g, FILE *csv, uint64_t tokens)
{
    const uint64_t C = 5120, F = 20480, M = tokens;
    Shape s[] = {
        {"cube4096", "fprop", 4096, 4096, 4096}, {"cube8192", "fprop", 8192, 8192, 8192},
        {"gpt13b.qkv", "fprop", M, 3 * C, C},    {"gpt13b.qkv", "dgrad", M, C, 3 * C},
        {"gpt13b.qkv", "wgrad", 3 * C, C, M},    {"gpt13b.proj", "fprop", M, C, C},
        {"gpt13b.proj", "dgrad", M, C, C},       {"gpt13b.proj", "wgrad", C, C, M},
        {"gpt13b.fc1", "fprop", M, F, C},        {"gpt13b.fc1", "dgrad", M, C, F},
        {"gpt13b.fc1", "wgrad", F, C, M},        {"gpt13b.fc2", "fprop", M, C, F},
        {"gpt13b.fc2", "dgrad", M, F, C},        {"gpt13b.fc2", "wgrad", C, F, M},
    };
    float *one = gc_dup(g, (float[1]){1.0f}, sizeof(float));
    printf("\n%-12s %-5s %6s %6s %6s  %-10s %9s %9s %8s\n", "shape", "role", "m", "n", "k", "precision", "median_ms",
           "TFLOP/s", "fp8/bf16");
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        const Shape *x = &s[i];
        int wgrad = !strcmp(x->role, "wgrad"), dgrad = !strcmp(x->role, "dgrad");
        uint64_t na = x->m * x->k, nb = x->n * x->k, nd = x->m * x->n;
        void *a = filled(g, DT_BF16, na), *b = filled(g, DT_BF16, nb);
        void *d = wgrad ? filled(g, DT_FP32, nd) : gc_dalloc(g, nd * 2);
        double bf16_ms = 0.0;
        for (int p = 0; p < 2; p++) {
            GemmDesc gd = {.m = x->m, .n = x->n, .k = x->k, .accum = wgrad ? GEMM_ACCUMULATE : GEMM_OVERWRITE};
            gd.d = (GemmOutput){.ptr = d, .dtype = wgrad ? DT_FP32 : DT_BF16};
            void *qa = NULL, *qb = NULL;
            const char *layout = "TN";
            if (p == 0) { /* BF16 in the executor's layouts */
                gd.a = (GemmOperand){.ptr = a, .dtype = DT_BF16, .layout = wgrad ? GEMM_K_OUTER : GEMM_K_INNER};
                gd.b =
                    (GemmOperand){.ptr = b, .dtype = DT_BF16, .layout = (dgrad || wgrad) ? GEMM_K_OUTER : GEMM_K_INNER};
                layout = wgrad ? "NT" : dgrad ? "NN" : "TN";
            } else {
                Dtype fa = (dgrad || wgrad) ? DT_E5M2 : DT_E4M3;
                qa = fp8_of(g, a, na, fa, one);
                qb = fp8_of(g, b, nb, DT_E4M3, one);
                gd.a = (GemmOperand){.ptr = qa, .dtype = fa, .scale_inv = one};
                gd.b = (GemmOperand){.ptr = qb, .dtype = DT_E4M3, .scale_inv = one};
                gd.acc_precision = (dgrad || wgrad) ? GEMM_ACC_SPLIT : GEMM_ACC_FAST;
            }
            Timing t = time_it(g, run_gemm, &gd);
            double tf = 2.0 * (double)x->m * (double)x->n * (double)x->k / t.med * 1e-12;
            const char *prec = p == 0 ? "bf16" : (dgrad || wgrad) ? "e5m2xe4m3" : "e4m3";
            const char *acc = p == 0 ? "fp32" : gd.acc_precision == GEMM_ACC_FAST ? "fast" : "split";
            if (p == 0) bf16_ms = t.med;
            fprintf(csv, "%s,%s,%llu,%llu,%llu,%s,%s,%s,%.4f,%.4f,%.4f,%.1f,%d\n", x->shape, x->role,
                    (unsigned long long)x->m, (unsigned long long)x->n, (unsigned long long)x->k, prec, layout, acc,
                    t.med * 1e3, t.min * 1e3, t.max * 1e3, tf, t.reps);
            printf("%-12s %-5s %6llu %6llu %6llu  %-10s %9.3f %9.1f", x->shape, x->role, (unsigned long long)x->m,
                   (unsigned long long)x->n, (unsigned long long)x->k, prec, t.med * 1e3, tf);
            if (p == 1) printf(" %7.2fx", bf16_ms / t.med);
            printf("\n");
            if (qa) gc_dfree(g, qa);
            if (qb) gc_dfree(g, qb);
        }
        gc_dfree(g, a), gc_dfree(g, b), gc_dfree(g, d);
    }
    gc_dfree(g, one);
}

/* ---- memory-bound kernels ------------------------------------------------------------------- */

typedef struct {
    Gc *g;
    int op;
    void *a, *b, *c, *d, *e, *f;
    uint64_t n, rows, cols;
    float *sc;
    int32_t *tok;
    AdamWDesc *list; /* adamw_multi: the tensor list in host memory (f: its device copy) */
    uint32_t count;
} KCtx;

enum { K_CAST, K_LN, K_LN_BWD, K_GELU_F, K_GELU_B, K_ADAMW, K_ADAMW_MULTI, K_FP8ADAM, K_XENT, K_ATTN, K_COUNT };

static void run_kernel(Gc *g, void *ctx)
{
    KCtx *k = ctx;
    Backend *bk = g->gpu;
    switch (k->op) {
    case K_CAST: {
        CastDesc c = {.in = k->a,
                      .in_dtype = DT_BF16,
                      .rows = k->rows,
                      .cols = k->cols,
                      .out_dtype = DT_E4M3,
                      .out_row = k->b,
                      .out_col = k->c,
                      .scale = k->sc,
                      .scale_inv = k->sc + 1,
                      .amax = k->sc + 2};
        GC_OK(g, bk->cast_transpose(bk, &c, GE));
        break;
    }
    case K_LN: {
        NormFwdDesc d = {.norm = NORM_LAYERNORM,
                         .rows = k->rows,
                         .cols = k->cols,
                         .eps = 1e-5f,
                         .act_dtype = DT_BF16,
                         .weight_dtype = DT_BF16,
                         .in = k->a,
                         .weight = k->c,
                         .bias = k->c,
                         .out = k->b,
                         .mean = (float *)k->d,
                         .rstd = (float *)k->d + k->rows};
        GC_OK(g, bk->norm_fwd(bk, &d, GE));
        break;
    }
    case K_LN_BWD: { /* the input gradient and the column sums, from saved statistics */
        NormBwdDesc d = {.norm = NORM_LAYERNORM,
                         .rows = k->rows,
                         .cols = k->cols,
                         .act_dtype = DT_BF16,
                         .weight_dtype = DT_BF16,
                         .in = k->a,
                         .weight = k->c,
                         .mean = (const float *)k->d,
                         .rstd = (const float *)k->d + k->rows,
                         .dout = k->b,
                         .din = k->e,
                         .dweight = (float *)k->f,
                         .dbias = (float *)k->f + k->cols};
        GC_OK(g, bk->norm_bwd(bk, &d, GE));
        break;
    }
    case K_GELU_F: {
        ActFwdDesc d = {.mlp = MLP_GELU, .rows = 1, .cols = k->n, .dtype = DT_BF16, .in = k->a, .out = k->b};
        GC_OK(g, bk->act_fwd(bk, &d, GE));
        break;
    }
    case K_GELU_B: {
        ActBwdDesc d = {
            .mlp = MLP_GELU, .rows = 1, .cols = k->n, .dtype = DT_BF16, .in = k->a, .dout = k->b, .din = k->c};
        GC_OK(g, bk->act_bwd(bk, &d, GE));
        break;
    }
    case K_ADAMW: {
        AdamWDesc d = {.n = k->n,
                       .h = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, 1.0f},
                       .master = k->a,
                       .m = k->b,
                       .v = k->c,
                       .grad = k->d,
                       .grad_dtype = DT_FP32,
                       .weight = k->e,
                       .weight_dtype = DT_BF16};
        GC_OK(g, bk->adamw(bk, &d, GE));
        break;
    }
    case K_ADAMW_MULTI: {
        AdamWMultiDesc d = {.count = k->count, .list = k->list, .list_dev = k->f};
        GC_OK(g, bk->adamw_multi(bk, &d, GE));
        break;
    }
    case K_FP8ADAM: {
        Fp8AdamDesc d = {.n = k->n,
                         .h = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, 1.0f},
                         .master = k->a,
                         .master_rec = k->sc + 3,
                         .m = k->b,
                         .m_rec = k->sc + 6,
                         .v = k->c,
                         .v_rec = k->sc + 9,
                         .grad = k->d,
                         .grad_dtype = DT_E4M3,
                         .grad_scale_inv = k->sc + 1,
                         .weight = k->e,
                         .weight_dtype = DT_BF16};
        GC_OK(g, bk->fp8_adam(bk, &d, GE));
        break;
    }
    case K_XENT:
        GC_OK(g, bk->xent_fwd_bwd(bk, k->a, DT_BF16, k->rows, 50257, k->cols, k->tok, 1.0f / (float)k->rows,
                                  (float *)k->b, GE));
        break;
    case K_ATTN: {
        uint32_t T = 2048, H = 40, D = 128, B = (uint32_t)(k->rows / T);
        AttnFwdDesc f = {.batch = B,
                         .seq = T,
                         .heads = H,
                         .kv_heads = H,
                         .head_dim = D,
                         .dtype = DT_BF16,
                         .qkv = k->a,
                         .probs = k->b,
                         .out = k->c,
                         .scratch = (float *)k->d};
        AttnBwdDesc b = {.batch = B,
                         .seq = T,
                         .heads = H,
                         .kv_heads = H,
                         .head_dim = D,
                         .dtype = DT_BF16,
                         .qkv = k->a,
                         .probs = k->b,
                         .dout = k->c,
                         .dqkv = k->e,
                         .scratch = (float *)k->d};
        GC_OK(g, bk->attention_fwd(bk, &f, GE));
        GC_OK(g, bk->attention_bwd(bk, &b, GE));
        break;
    }
    }
}

static void bench_kernels(Gc *g, FILE *csv, uint64_t tokens)
{
    const uint64_t M = tokens, C = 5120, F = 20480, VP = 50304, NP = 64ull << 20, T = 2048;
    float sc[12] = {1.0f, 1.0f, 0.0f, 1024.0f, 1.0f / 1024, 0.0f, 4096.0f, 1.0f / 4096, 0.0f, 1048576.0f, 0, 0};
    float *dsc = gc_dup(g, sc, sizeof sc);
    fprintf(csv, "kernel,shape,median_ms,min_ms,max_ms,min_bytes,gbps,tflops,reps\n");
    printf("\n%-22s %-24s %9s %9s %8s\n", "kernel", "shape", "median_ms", "GB/s", "TFLOP/s");
    for (int op = 0; op < K_COUNT; op++) {
        KCtx k = {.g = g, .op = op, .sc = dsc};
        double bytes = 0.0, flops = 0.0;
        char shape[64];
        switch (op) {
        case K_CAST: /* the FC2 input (tokens, F): row-wise and transposed E4M3 */
            k.rows = M, k.cols = F, k.a = filled(g, DT_BF16, M * F), k.b = gc_dalloc(g, M * F);
            k.c = gc_dalloc(g, M * F), bytes = 4.0 * M * F;
            snprintf(shape, sizeof shape, "%llux%llu bf16->e4m3 x2", (unsigned long long)M, (unsigned long long)F);
            break;
        case K_LN:
            k.rows = M, k.cols = C, k.a = filled(g, DT_BF16, M * C), k.b = gc_dalloc(g, M * C * 2);
            k.c = filled(g, DT_BF16, C), k.d = gc_dalloc(g, 2 * M * 4), bytes = 4.0 * M * C;
            snprintf(shape, sizeof shape, "%llux%llu bf16", (unsigned long long)M, (unsigned long long)C);
            break;
        case K_LN_BWD: /* reads x, dout and din, writes din (BF16): 8 bytes per element */
            k.rows = M, k.cols = C, k.a = filled(g, DT_BF16, M * C), k.b = filled(g, DT_BF16, M * C);
            k.c = filled(g, DT_BF16, C), k.d = filled_as(g, DT_FP32, 2 * M, 1), k.e = filled(g, DT_BF16, M * C);
            k.f = filled(g, DT_FP32, 2 * C), bytes = 8.0 * M * C;
            snprintf(shape, sizeof shape, "%llux%llu bf16", (unsigned long long)M, (unsigned long long)C);
            break;
        case K_GELU_F:
        case K_GELU_B:
            k.n = M * F, k.a = filled(g, DT_BF16, M * F), k.b = filled(g, DT_BF16, M * F);
            k.c = op == K_GELU_B ? gc_dalloc(g, M * F * 2) : NULL, bytes = (op == K_GELU_B ? 6.0 : 4.0) * M * F;
            snprintf(shape, sizeof shape, "%llux%llu bf16", (unsigned long long)M, (unsigned long long)F);
            break;
        case K_ADAMW: /* FP32 master, m, v, grad; BF16 working copy */
            k.n = NP, k.a = filled(g, DT_FP32, NP), k.b = filled(g, DT_FP32, NP), k.c = filled_as(g, DT_FP32, NP, 1);
            k.d = filled(g, DT_FP32, NP), k.e = gc_dalloc(g, NP * 2), bytes = 30.0 * NP;
            snprintf(shape, sizeof shape, "%llu params", (unsigned long long)NP);
            break;
        case K_ADAMW_MULTI: { /* adamw's bytes as 64 tensors: 32 of 5120 (norms, biases) and 32 large ones */
            k.n = NP, k.a = filled(g, DT_FP32, NP), k.b = filled(g, DT_FP32, NP), k.c = filled_as(g, DT_FP32, NP, 1);
            k.d = filled(g, DT_FP32, NP), k.e = gc_dalloc(g, NP * 2), bytes = 30.0 * NP;
            k.count = 64, k.list = gc_halloc(64 * sizeof(AdamWDesc));
            for (uint64_t t = 0, at = 0; t < 64; at += k.list[t].n, t++)
                k.list[t] = (AdamWDesc){.n = t % 2 ? NP / 32 - 5120 : 5120,
                                        .h = {1e-4f, 0.9f, 0.95f, 1e-8f, t % 2 ? 0.1f : 0.0f, 10, 1.0f},
                                        .master = (float *)k.a + at,
                                        .m = (float *)k.b + at,
                                        .v = (float *)k.c + at,
                                        .grad = (float *)k.d + at,
                                        .grad_dtype = DT_FP32,
                                        .weight = (uint16_t *)k.e + at,
                                        .weight_dtype = DT_BF16};
            k.f = gc_dup(g, k.list, 64 * sizeof(AdamWDesc));
            snprintf(shape, sizeof shape, "%llu params, 64 tensors", (unsigned long long)NP);
            break;
        }
        case K_FP8ADAM: /* FP16 master, E4M3 m, FP16 v, E4M3 grad; two passes */
            k.n = NP, k.a = filled(g, DT_BF16, NP), k.c = filled_as(g, DT_BF16, NP, 1), k.e = gc_dalloc(g, NP * 2);
            k.b = gc_dalloc(g, NP), k.d = gc_dalloc(g, NP);
            GC_OK(g, g->gpu->memset0(g->gpu, k.b, NP, GE));
            GC_OK(g, g->gpu->memset0(g->gpu, k.d, NP, GE));
            bytes = 19.0 * NP; /* pass 1 reads 6 B, pass 2 reads 6 and writes 7 */
            snprintf(shape, sizeof shape, "%llu params", (unsigned long long)NP);
            break;
        case K_XENT: {
            int32_t *t = gc_halloc(M * 4);
            for (uint64_t i = 0; i < M; i++) t[i] = (int32_t)rng_below(&g->rng, 50257);
            k.tok = gc_dup(g, t, M * 4), k.rows = M, k.cols = VP, k.a = filled(g, DT_BF16, M * VP);
            k.b = gc_dalloc(g, M * 4), bytes = 4.0 * M * VP;
            free(t);
            snprintf(shape, sizeof shape, "%llux%llu bf16", (unsigned long long)M, (unsigned long long)VP);
            break;
        }
        case K_ATTN: { /* fwd + bwd, B·T = tokens, H 40, D 128, materialized scores */
            uint64_t B = M / T, np = B * 40 * T * T;
            k.rows = M, k.a = filled(g, DT_BF16, M * 3 * C), k.b = gc_dalloc(g, np * 2),
            k.c = filled(g, DT_BF16, M * C);
            k.d = gc_dalloc(g, np * 4), k.e = gc_dalloc(g, M * 3 * C * 2);
            flops = 12.0 * (double)B * 40 * T * T * 128, bytes = 0.0;
            snprintf(shape, sizeof shape, "B%llu T2048 H40 D128", (unsigned long long)B);
            break;
        }
        }
        /* FP8 Adam's moments must start as valid codes: zeros are (and are not timed data) */
        Timing t = time_it(g, run_kernel, &k);
        static const char *names[K_COUNT] = {
            "cast_transpose", "layernorm_fwd", "layernorm_bwd", "gelu_fwd",     "gelu_bwd",
            "adamw",          "adamw_multi",   "fp8_adam",      "xent_fwd_bwd", "attention_fwd+bwd"};
        double gbps = bytes / t.med * 1e-9, tf = flops / t.med * 1e-12;
        fprintf(csv, "%s,%s,%.4f,%.4f,%.4f,%.0f,%.1f,%.1f,%d\n", names[op], shape, t.med * 1e3, t.min * 1e3,
                t.max * 1e3, bytes, gbps, tf, t.reps);
        printf("%-22s %-24s %9.3f %9.1f %8.1f\n", names[op], shape, t.med * 1e3, gbps, tf);
        void *bufs[] = {k.a, k.b, k.c, k.d, k.e, k.f, k.tok};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i]) gc_dfree(g, bufs[i]);
        free(k.list);
    }
    gc_dfree(g, dsc);
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_bench", argc, argv);
    if (argc < 3) {
        fprintf(stderr, "usage: gpu_bench GEMM_CSV KERNEL_CSV [TOKENS] [SEED]\n");
        return 64;
    }
    Gc g;
    gc_init(&g, "gpu_bench", argv[1], argc > 4 ? argv[4] : NULL,
            "shape,role,m,n,k,precision,layout,accumulation,median_ms,min_ms,max_ms,tflops,reps");
    if (g.selftest) { /* timings need the GPU's marks; the CPU backend has none */
        printf("gpu_bench: selftest has nothing to time\n");
        return gc_finish(&g);
    }
    uint64_t tokens = argc > 3 ? strtoull(argv[3], NULL, 10) : 4096;
    if (tokens < 2048 || tokens % 2048) {
        fprintf(stderr, "gpu_bench: TOKENS must be a positive multiple of the sequence length 2048 (got %s)\n",
                argv[3]);
        return 64;
    }
    OutFile ko;
    Err e;
    if (outfile_open(&ko, argv[2], &e)) {
        fprintf(stderr, "gpu_bench: %s\n", e.msg);
        return status_exit_code(e.st);
    }
    gc_keep(&g, &ko);
    BackendDeviceInfo info;
    GC_OK(&g, g.gpu->device_info(g.gpu, &info, GE));
    printf("device: %s, %d SMs, cc %d.%d, cuBLASLt %llu, tokens per GEMM %llu\n", info.name, info.sm_count,
           info.cc_major, info.cc_minor, (unsigned long long)info.gemm_library_version, (unsigned long long)tokens);
    sweep(&g, g.csv, tokens);
    bench_kernels(&g, ko.f, tokens);
    return gc_finish(&g); /* commits both CSVs */
}
