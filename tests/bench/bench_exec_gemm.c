/* tests/bench/bench_exec_gemm.c — the CPU backend's GEMM (FP8/BF16 operands
 * decoded to FP32, OpenBLAS sgemm per tile on the thread pool) beside the
 * BLAS's own FP32 sgemm at the same shapes and layouts: the anchor is the
 * threaded OpenBLAS with as many threads as the pool (anchor_sgemm, a separate
 * program), and "1T" is the single-threaded sgemm this process links.
 *
 * Shapes: every GEMM of a training step of the README's CPU demo (2 layers,
 * hidden 128, seq 64, micro-batch 1: 64 tokens) and of GPT-2 124M at seq 1024
 * (1024 tokens, hidden 768, FFN 3072), te-fp8: the block linears in FP8 (fprop
 * E4M3 x E4M3 to BF16 + bias, dgrad E5M2 x E4M3 to BF16, wgrad E5M2 x E4M3
 * accumulated into FP32), the LM head in BF16 (fprop to FP32 logits, dgrad
 * with B K-outer, wgrad with both K-outer). Times are medians of REPS calls
 * after a warm-up. Target (issue 18): ours ≥ 70 % of the anchor at these
 * shapes; stated, not asserted (the machine may be shared: the load average
 * is printed before and after). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/backend.h"
#include "exec/par.h"
#include "exec/rng.h"
#include "fp8/half.h"

enum { REPS = 7, MAX_SHAPES = 32 };

typedef struct {
    const char *name;
    uint64_t m, n, k;
    Dtype da, db, dd;
    GemmLayout la, lb;
    int bias, accum;
} Shape;

#define FP8_FWD(nm, M, N, K)                                                     \
    {                                                                            \
        nm, M, N, K, DT_E4M3, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 1, 0 \
    }
#define FP8_DGRAD(nm, M, N, K)                                                   \
    {                                                                            \
        nm, M, N, K, DT_E5M2, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 0, 0 \
    }
#define FP8_WGRAD(nm, M, N, K)                                                   \
    {                                                                            \
        nm, M, N, K, DT_E5M2, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 1 \
    }
#define LM_FWD(nm, M, N, K)                                                      \
    {                                                                            \
        nm, M, N, K, DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0 \
    }
#define LM_DGRAD(nm, M, N, K)                                                    \
    {                                                                            \
        nm, M, N, K, DT_BF16, DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_K_OUTER, 0, 0 \
    }
#define LM_WGRAD(nm, M, N, K)                                                    \
    {                                                                            \
        nm, M, N, K, DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_K_OUTER, 0, 1 \
    }

static const Shape shapes[] = {
    FP8_FWD("demo qkv fprop", 64, 384, 128),          FP8_FWD("demo fc1 fprop", 64, 512, 128),
    FP8_FWD("demo fc2 fprop", 64, 128, 512),          FP8_DGRAD("demo fc1 dgrad", 64, 128, 512),
    FP8_WGRAD("demo fc1 wgrad", 512, 128, 64),        LM_FWD("demo lm-head fprop", 64, 50304, 128),
    LM_DGRAD("demo lm-head dgrad", 64, 128, 50304),   LM_WGRAD("demo lm-head wgrad", 50304, 128, 64),
    FP8_FWD("124m qkv fprop", 1024, 2304, 768),       FP8_FWD("124m proj fprop", 1024, 768, 768),
    FP8_FWD("124m fc1 fprop", 1024, 3072, 768),       FP8_FWD("124m fc2 fprop", 1024, 768, 3072),
    FP8_DGRAD("124m fc1 dgrad", 1024, 768, 3072),     FP8_WGRAD("124m fc1 wgrad", 3072, 768, 1024),
    FP8_DGRAD("124m fc2 dgrad", 1024, 3072, 768),     FP8_WGRAD("124m fc2 wgrad", 768, 3072, 1024),
    LM_FWD("124m lm-head fprop", 1024, 50304, 768),   LM_DGRAD("124m lm-head dgrad", 1024, 768, 50304),
    LM_WGRAD("124m lm-head wgrad", 50304, 768, 1024),
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
_Static_assert((int)NSHAPES <= (int)MAX_SHAPES, "shape table");

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

/* n random finite values of dtype dt at p. */
static void fill(void *p, Dtype dt, uint64_t n, Rng *r)
{
    for (uint64_t i = 0; i < n; i++) {
        uint8_t sign = (uint8_t)(rng_below(r, 2) << 7);
        switch (dt) {
        case DT_E4M3: ((uint8_t *)p)[i] = (uint8_t)rng_below(r, 0x7E) | sign; break;
        case DT_E5M2: ((uint8_t *)p)[i] = (uint8_t)rng_below(r, 0x7B) | sign; break;
        case DT_BF16: ((uint16_t *)p)[i] = bf16_encode((float)rng_normal(r)); break;
        default: ((float *)p)[i] = (float)rng_normal(r); break;
        }
    }
}

/* Median ms of ours and of the in-process single-threaded sgemm. */
static int bench(Backend *bk, const Shape *s, double *ours_ms, double *one_ms)
{
    uint64_t ea = s->m * s->k, eb = s->n * s->k, ed = s->m * s->n;
    void *a = malloc(ea * 4), *b = malloc(eb * 4), *d = calloc(ed, 4), *bias = calloc(s->n, 2);
    float *fa = malloc(ea * 4), *fb = malloc(eb * 4), *fd = malloc(ed * 4), one = 1.0f;
    Rng r = {.s = 1};
    if (!a || !b || !d || !bias || !fa || !fb || !fd) return 1;
    fill(a, s->da, ea, &r);
    fill(b, s->db, eb, &r);
    fill(fa, DT_FP32, ea, &r);
    fill(fb, DT_FP32, eb, &r);
    GemmDesc g = {.m = s->m, .n = s->n, .k = s->k, .accum = s->accum ? GEMM_ACCUMULATE : GEMM_OVERWRITE};
    int fp8 = dtype_is_fp8(s->da);
    g.a = (GemmOperand){.ptr = a, .dtype = s->da, .layout = s->la, .scale_inv = fp8 ? &one : NULL};
    g.b = (GemmOperand){.ptr = b, .dtype = s->db, .layout = s->lb, .scale_inv = fp8 ? &one : NULL};
    g.d = (GemmOutput){.ptr = d, .dtype = s->dd};
    if (s->bias) g.bias = bias, g.bias_dtype = DT_BF16;
    double t[REPS];
    Err e;
    for (int i = -1; i < REPS; i++) {
        double t0 = now();
        if (bk->gemm(bk, &g, &e)) {
            fprintf(stderr, "%s: %s\n", s->name, e.msg);
            return 1;
        }
        if (i >= 0) t[i] = now() - t0;
    }
    *ours_ms = 1e3 * median(t, REPS);
    int ta = s->la == GEMM_K_OUTER, tb = s->lb == GEMM_K_INNER;
    for (int i = -1; i < REPS; i++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n,
                    (int)s->k, 1.0f, fa, ta ? (int)s->m : (int)s->k, fb, tb ? (int)s->k : (int)s->n, 0.0f, fd,
                    (int)s->n);
        if (i >= 0) t[i] = now() - t0;
    }
    *one_ms = 1e3 * median(t, REPS);
    free(a), free(b), free(d), free(bias), free(fa), free(fb), free(fd);
    return 0;
}

/* The threaded anchor's median ms per shape, from anchor_sgemm beside this
 * program; 0 where it is missing. */
static void anchor(const char *self, int threads, double *ms)
{
    char cmd[4096];
    const char *slash = strrchr(self, '/');
    int len = slash ? (int)(slash - self) + 1 : 0;
    int w = snprintf(cmd, sizeof cmd, "%.*sanchor_sgemm %d %d", len, self, threads, REPS);
    for (int i = 0; i < NSHAPES && w < (int)sizeof cmd; i++) {
        const Shape *s = &shapes[i];
        w += snprintf(cmd + w, sizeof cmd - (size_t)w, " %llu %llu %llu %d %d", (unsigned long long)s->m,
                      (unsigned long long)s->n, (unsigned long long)s->k, s->la == GEMM_K_OUTER, s->lb == GEMM_K_INNER);
    }
    memset(ms, 0, sizeof(double) * NSHAPES);
    FILE *f = popen(cmd, "r");
    if (!f) return;
    unsigned long long m, n, k;
    double t;
    for (int i = 0; i < NSHAPES && fscanf(f, "%llu %llu %llu %lf", &m, &n, &k, &t) == 4; i++) ms[i] = t;
    pclose(f);
}

static void load(const char *when)
{
    double l[3];
    if (getloadavg(l, 3) == 3) printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

int main(int argc, char **argv)
{
    (void)argc;
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines appear as they are measured */
    Backend *bk;
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    int threads = par_threads();
    printf("CPU backend GEMM vs OpenBLAS sgemm (%s; %s); %d threads (FP8PLAN_THREADS); medians of %d\n",
           openblas_get_config(), openblas_get_corename(), threads, REPS);
    load("before");
    double ours[NSHAPES], one[NSHAPES], anc[NSHAPES];
    for (int i = 0; i < NSHAPES; i++)
        if (bench(bk, &shapes[i], &ours[i], &one[i])) return 1;
    anchor(argv[0], threads, anc);
    printf("%-20s %5s %5s %5s %-9s %9s %8s %8s %6s %8s\n", "GEMM", "m", "n", "k", "A x B", "ours ms", "GFLOP/s",
           "anchor", "ours/", "sgemm1T");
    printf("%-20s %5s %5s %5s %-9s %9s %8s %8s %6s %8s\n", "", "", "", "", "", "", "", "GFLOP/s", "anchor", "GFLOP/s");
    for (int i = 0; i < NSHAPES; i++) {
        const Shape *s = &shapes[i];
        double fl = 2.0 * (double)s->m * (double)s->n * (double)s->k / 1e9;
        char types[16], ratio[16] = "-", anchor_gf[16] = "-";
        snprintf(types, sizeof types, "%.4sx%.4s", dtype_name(s->da), dtype_name(s->db));
        if (anc[i] > 0) {
            snprintf(anchor_gf, sizeof anchor_gf, "%.1f", fl / anc[i] * 1e3);
            snprintf(ratio, sizeof ratio, "%.0f%%", 100.0 * anc[i] / ours[i]);
        }
        printf("%-20s %5llu %5llu %5llu %-9s %9.3f %8.1f %8s %6s %8.1f\n", s->name, (unsigned long long)s->m,
               (unsigned long long)s->n, (unsigned long long)s->k, types, ours[i], fl / ours[i] * 1e3, anchor_gf, ratio,
               fl / one[i] * 1e3);
    }
    load("after");
    bk->destroy(bk);
    return 0;
}
