/* tests/unit/test_cpu_gemm.c — the CPU backend's BLAS GEMM (exec/cpu_gemm.c)
 * held to the hand-written reference (cpu_gemm_ref, exec/cpu_gemm_ref.c) over
 * every dtype, layout, leading dimension, epilogue and tiling regime (one
 * tile, panels of A, panels of B, K cut into chunks, block scales):
 *   - exactly, bit for bit, when every sum is exact in any order (small
 *     integers): the tiling, the epilogue and every output dtype;
 *   - within the derived FP32 reordering bound on random data;
 *   - bit-identical for 1, 2 and 3 threads (the test runs itself as a child
 *     with FP8PLAN_THREADS set, --digest mode).
 *
 * The bound. Both GEMMs sum K exact products (FP8/BF16/FP16 products fit
 * FP32's 24 bits) with K − 1 FP32 additions, in different orders; any order is
 * within γ_{K−1}·Σ|a·b| of the exact sum, γ_n = n·u/(1 − n·u) ≤ 1.01·n·u for
 * n·u ≤ 0.01 (u = 2⁻²⁴), so the two sums differ by ≤ 2.02·(K−1)·u·Σ|a·b|. FP32
 * operands add one product rounding per term in the reference (the BLAS may
 * fuse it away): + K·u·Σ|a·b|. Every later operation (block rescale and add,
 * tensor rescale, + D, + bias) takes two inputs that differ and rounds: it
 * can add one ulp of its result, ≤ 2u·M with M = Σ|a·b·scales| + |D| + |bias|.
 * The D scale multiplies all of it, and a narrower output adds at most one
 * spacing of its format at the larger of the two results. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/cpu/cpu_gemm.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"
#include "exec/backend/rng.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "test.h"

#define U 0x1p-24

typedef struct {
    uint64_t m, n, k;
    Dtype da, db, dd;
    GemmLayout la, lb;
    uint64_t pad_a, pad_b, pad_d; /* extra elements per stored row (0: packed) */
    Granularity ga, gb;           /* FP8 scale granularity */
    int accum, bias, amax, dscale;
} Case;

typedef struct {
    void *a, *b, *d0, *dref, *dblas, *bias;
    float *sa, *sb, dsc, amax_ref, amax_blas;
    uint64_t lda, ldb, ldd, rows_a, rows_b;
    GemmDesc g;
} Run;

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

/* A random (or small-integer) value in dtype dt, stored at p[i]. */
static void put(void *p, Dtype dt, uint64_t i, Rng *r, int ints)
{
    double x = ints ? (double)((int)rng_below(r, 9) - 4) : rng_normal(r) * 2.0;
    switch (dt) {
    case DT_E4M3:
    case DT_E5M2:
        if (ints)
            ((uint8_t *)p)[i] = fp8_encode_f32(dt, (float)x, FP8_SATFINITE);
        else /* any finite code */
            ((uint8_t *)p)[i] = (uint8_t)rng_below(r, dt == DT_E4M3 ? 0x7E : 0x7B) | (uint8_t)(rng_below(r, 2) << 7);
        break;
    default: elem_store(p, dt, i, (float)x); break;
    }
}

static uint64_t nkb_of(uint64_t k) { return (k + GEMM_SCALE_BLOCK - 1) / GEMM_SCALE_BLOCK; }

/* Number of scale_inv floats operand (rows × k) with granularity gr needs. */
static uint64_t scales_of(Granularity gr, uint64_t rows, uint64_t k)
{
    switch (gr) {
    case GRAN_1X128: return rows * nkb_of(k);
    case GRAN_128X128: return ((rows + 127) / 128) * nkb_of(k);
    default: return 1;
    }
}

static void *alloc0(uint64_t n) { return calloc(n ? n : 1, 1); }

/* Build the operands of case c and run the BLAS GEMM and, when ref is set, the
 * reference. ints: small-integer data and power-of-two scales (every sum
 * exact). Returns 0 when they succeeded. */
static int run_case(Backend *bk, const Case *c, Run *R, uint64_t seed, int ints, int ref)
{
    Rng r = {.s = seed};
    memset(R, 0, sizeof *R);
    int fp8 = dtype_is_fp8(c->da);
    /* stored shapes: K_INNER (rows, k), K_OUTER (k, rows) */
    R->rows_a = c->la == GEMM_K_INNER ? c->m : c->k;
    R->rows_b = c->lb == GEMM_K_INNER ? c->n : c->k;
    R->lda = (c->la == GEMM_K_INNER ? c->k : c->m) + c->pad_a;
    R->ldb = (c->lb == GEMM_K_INNER ? c->k : c->n) + c->pad_b;
    R->ldd = c->n + c->pad_d;
    R->a = alloc0(R->rows_a * R->lda * 4);
    R->b = alloc0(R->rows_b * R->ldb * 4);
    R->d0 = alloc0(c->m * R->ldd * 4);
    R->dref = alloc0(c->m * R->ldd * 4);
    R->dblas = alloc0(c->m * R->ldd * 4);
    R->bias = alloc0(c->n * 4);
    for (uint64_t i = 0; i < R->rows_a * R->lda; i++) put(R->a, c->da, i, &r, ints);
    for (uint64_t i = 0; i < R->rows_b * R->ldb; i++) put(R->b, c->db, i, &r, ints);
    if (c->accum)
        for (uint64_t i = 0; i < c->m * R->ldd; i++) put(R->d0, c->dd, i, &r, ints);
    if (c->bias)
        for (uint64_t i = 0; i < c->n; i++) put(R->bias, DT_BF16, i, &r, ints);
    GemmDesc *g = &R->g;
    *g = (GemmDesc){.m = c->m, .n = c->n, .k = c->k, .accum = c->accum ? GEMM_ACCUMULATE : GEMM_OVERWRITE};
    g->a = (GemmOperand){.ptr = R->a, .dtype = c->da, .layout = c->la, .ld = c->pad_a ? R->lda : 0};
    g->b = (GemmOperand){.ptr = R->b, .dtype = c->db, .layout = c->lb, .ld = c->pad_b ? R->ldb : 0};
    if (fp8) {
        uint64_t na = scales_of(c->ga, c->m, c->k), nb = scales_of(c->gb, c->n, c->k);
        R->sa = malloc(na * sizeof(float));
        R->sb = malloc(nb * sizeof(float));
        for (uint64_t i = 0; i < na; i++)
            R->sa[i] = ints ? ldexpf(1.0f, (int)rng_below(&r, 3) - 1) : (float)(0.5 + rng_unit(&r)) * 1e-2f;
        for (uint64_t i = 0; i < nb; i++)
            R->sb[i] = ints ? ldexpf(1.0f, (int)rng_below(&r, 3) - 1) : (float)(0.5 + rng_unit(&r)) * 1e-2f;
        g->a.scale_inv = R->sa, g->a.scale_gran = c->ga;
        g->b.scale_inv = R->sb, g->b.scale_gran = c->gb;
    }
    R->dsc = ints ? 0.5f : 3.0f;
    if (c->bias) g->bias = R->bias, g->bias_dtype = DT_BF16;
    Err e;
    Status st = ST_OK;
    for (int which = ref ? 0 : 1; which < 2 && !st; which++) {
        void *d = which ? R->dblas : R->dref;
        memcpy(d, R->d0, c->m * R->ldd * 4);
        float *am = which ? &R->amax_blas : &R->amax_ref;
        *am = 0.125f; /* max-combined into */
        g->d = (GemmOutput){.ptr = d,
                            .dtype = c->dd,
                            .ld = c->pad_d ? R->ldd : 0,
                            .scale = c->dscale ? &R->dsc : NULL,
                            .amax = c->amax ? am : NULL};
        st = which ? bk->gemm(bk, g, &e) : cpu_gemm_ref(bk, g, &e);
        if (st)
            fprintf(stderr, "  case %llux%llux%llu: %s\n", (unsigned long long)c->m, (unsigned long long)c->n,
                    (unsigned long long)c->k, e.msg);
    }
    return st != ST_OK;
}

static void free_run(Run *R)
{
    free(R->a), free(R->b), free(R->d0), free(R->dref), free(R->dblas), free(R->bias), free(R->sa), free(R->sb);
}

static float stored(const GemmOperand *o, uint64_t row, uint64_t kk, uint64_t mn, uint64_t k)
{
    uint64_t ld = o->ld ? o->ld : (o->layout == GEMM_K_INNER ? k : mn);
    return elem_load(o->ptr, o->dtype, o->layout == GEMM_K_INNER ? row * ld + kk : kk * ld + row);
}

/* Relative spacing of dt's values (2^-mantissa bits), and its smallest step. */
static double rel_ulp(Dtype dt)
{
    switch (dt) {
    case DT_BF16: return 0x1p-7;
    case DT_FP16: return 0x1p-10;
    case DT_E4M3: return 0x1p-3;
    case DT_E5M2: return 0x1p-2;
    default: return 0x1p-23;
    }
}
static double min_step(Dtype dt)
{
    switch (dt) {
    case DT_BF16: return 0x1p-133;
    case DT_FP16: return 0x1p-24;
    case DT_E4M3: return 0x1p-9;
    case DT_E5M2: return 0x1p-16;
    default: return 0x1p-149;
    }
}

/* Outputs outside the bound (see the header); *worst = largest |Δ|/bound. */
static int compare(const Case *c, const Run *R, double *worst)
{
    const GemmDesc *g = &R->g;
    uint64_t nkb = nkb_of(c->k);
    int blocked = cpu_gemm_blocked(g), bad = 0;
    double ds = c->dscale ? R->dsc : 1.0, amax_tol = 0.0;
    *worst = 0.0;
    for (uint64_t i = 0; i < c->m; i++)
        for (uint64_t j = 0; j < c->n; j++) {
            double mag = 0.0;
            for (uint64_t kk = 0; kk < c->k; kk++) {
                double s =
                    cpu_gemm_scale_at(&g->a, i, kk / 128, nkb) * (double)cpu_gemm_scale_at(&g->b, j, kk / 128, nkb);
                mag += fabs((double)stored(&g->a, i, kk, c->m, c->k) * stored(&g->b, j, kk, c->n, c->k) * s);
            }
            double d0 = c->accum ? fabs(elem_load(R->d0, c->dd, i * R->ldd + j)) : 0.0;
            double bias = c->bias ? fabs(elem_load(R->bias, DT_BF16, j)) : 0.0;
            /* additions per sum: within a 128-wide block, or over all of K */
            double kterms = blocked ? 127.0 : (double)(c->k - 1);
            double ops = 4.0 + (blocked ? 2.0 * (double)nkb : 0.0);
            double pre = 2.02 * kterms * U * mag + (c->da == DT_FP32 ? (double)c->k * U * mag : 0.0) +
                         ops * 2.0 * U * (mag + d0 + bias);
            double x = elem_load(R->dblas, c->dd, i * R->ldd + j), y = elem_load(R->dref, c->dd, i * R->ldd + j);
            double tol =
                pre * ds + (c->dd == DT_FP32 ? 0.0 : 2.0 * rel_ulp(c->dd) * fmax(fabs(x), fabs(y)) + min_step(c->dd));
            double err = fabs(x - y);
            if (!(err <= tol)) bad++;
            if (tol > 0 && err / tol > *worst) *worst = err / tol;
            if (pre > amax_tol) amax_tol = pre;
        }
    if (c->amax && !(fabs((double)R->amax_blas - R->amax_ref) <= amax_tol)) bad++;
    return bad;
}

/* The cases: every dtype pair, both layouts, padded leading dimensions, each
 * epilogue; shapes for one tile (small), panels of B (n ≥ m), panels of A
 * (m > n), K chunks (k > 8192) and ragged edges. */
static const Case cases[] = {
    {3, 5, 7, DT_E4M3, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 0, 1, 0},
    {64, 384, 128, DT_E4M3, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 1, 1,
     0},
    {37, 700, 129, DT_E5M2, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 3, 1, 5, GRAN_TENSOR, GRAN_TENSOR, 1, 1, 1,
     0},
    {700, 37, 129, DT_E4M3, DT_E5M2, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 2, 0, GRAN_TENSOR, GRAN_TENSOR, 1, 0, 1,
     0},
    {90, 130, 300, DT_E4M3, DT_E4M3, DT_E4M3, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 1, 1,
     1},
    {70, 150, 300, DT_E4M3, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_1X128, GRAN_TENSOR, 1, 0, 1, 0},
    {150, 300, 260, DT_E4M3, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_1X128, GRAN_128X128, 0, 1, 1,
     0},
    {33, 65, 200, DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 0, 1, 0},
    {64, 1000, 96, DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 0, 1,
     0},
    {64, 96, 1000, DT_BF16, DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_K_OUTER, 0, 3, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 0, 0,
     0},
    {1000, 96, 64, DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_K_OUTER, 2, 0, 1, GRAN_TENSOR, GRAN_TENSOR, 1, 0, 1,
     0},
    {300, 200, 100, DT_FP16, DT_FP16, DT_FP16, GEMM_K_OUTER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 1, 1, 1,
     0},
    {200, 300, 100, DT_FP32, DT_FP32, DT_FP32, GEMM_K_INNER, GEMM_K_OUTER, 4, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 1, 1,
     0},
    {20, 24, 9000, DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_OUTER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 1, 0, 1,
     0},
    {24, 20, 8700, DT_E5M2, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 1, 1,
     0},
    {16, 40, 8400, DT_E4M3, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_1X128, GRAN_TENSOR, 1, 0, 1, 0},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static const char *case_name(const Case *c, char *buf, size_t n)
{
    snprintf(buf, n, "%llux%llux%llu %s x %s -> %s", (unsigned long long)c->m, (unsigned long long)c->n,
             (unsigned long long)c->k, dtype_name(c->da), dtype_name(c->db), dtype_name(c->dd));
    return buf;
}

/* Small integers in [−4, 4] and scales in {1/2, 1, 2}: every sum is exact in
 * any order (|sum| ≤ 16·K ≤ 144,000 < 2^24; with block scales each block's
 * sum is an integer ≤ 2048 and the blocks are added in the same order by
 * both), so the BLAS GEMM must equal the reference byte for byte: outputs,
 * untouched padding, amax. */
static void test_exact_on_integers(void)
{
    Backend *bk = cpu();
    for (int i = 0; i < NCASES; i++) {
        const Case *c = &cases[i];
        Run R;
        char nm[96];
        CHECKF(!run_case(bk, c, &R, 100 + (uint64_t)i, 1, 1), "%s ran", case_name(c, nm, sizeof nm));
        int same = !memcmp(R.dref, R.dblas, c->m * R.ldd * dtype_bytes(c->dd));
        CHECKF(same, "%s: BLAS differs from the reference on exact sums", case_name(c, nm, sizeof nm));
        if (c->amax) CHECKF(R.amax_ref == R.amax_blas, "%s: amax %g vs %g", nm, R.amax_blas, R.amax_ref);
        free_run(&R);
    }
    bk->destroy(bk);
}

static void test_within_the_reordering_bound(void)
{
    Backend *bk = cpu();
    double worst_all = 0.0;
    for (int i = 0; i < NCASES; i++) {
        const Case *c = &cases[i];
        Run R;
        char nm[96];
        CHECKF(!run_case(bk, c, &R, 200 + (uint64_t)i, 0, 1), "%s ran", case_name(c, nm, sizeof nm));
        double worst;
        int bad = compare(c, &R, &worst);
        CHECKF(!bad, "%s: %d outputs outside the bound (worst %.2f of it)", case_name(c, nm, sizeof nm), bad, worst);
        if (worst > worst_all) worst_all = worst;
        free_run(&R);
    }
    printf("  worst |BLAS - reference| = %.3f of the derived bound\n", worst_all);
    bk->destroy(bk);
}

/* The bound is not vacuous: one output off by 2^-12·Σ|a·b| (a sixteenth of
 * what one BF16 rounding of the operands could move it) is caught. */
static void test_bound_catches_an_error(void)
{
    Backend *bk = cpu();
    const Case *c = &cases[8]; /* 64x1000x96 BF16 */
    Run R;
    CHECK(!run_case(bk, c, &R, 7, 0, 1));
    float *d = R.dblas;
    double mag = 0.0;
    for (uint64_t kk = 0; kk < c->k; kk++)
        mag += fabs((double)stored(&R.g.a, 5, kk, c->m, c->k) * stored(&R.g.b, 9, kk, c->n, c->k));
    d[5 * R.ldd + 9] += (float)(mag * 0x1p-12);
    double worst;
    CHECK(compare(c, &R, &worst) == 1);
    free_run(&R);
    bk->destroy(bk);
}

/* FNV-1a of the outputs of a few multi-tile GEMMs (one per regime). */
static uint64_t digest(Backend *bk)
{
    static const Case big[] = {
        {300, 1000, 200, DT_E4M3, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 1,
         1, 0},
        {1000, 300, 200, DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_K_OUTER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 1, 0,
         1, 0},
        {100, 120, 9000, DT_BF16, DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_K_OUTER, 0, 0, 0, GRAN_TENSOR, GRAN_TENSOR, 0, 0,
         1, 0},
        {64, 200, 8500, DT_E4M3, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, 0, 0, 0, GRAN_1X128, GRAN_TENSOR, 1, 0,
         1, 0},
    };
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a offset basis */
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        Run R;
        if (run_case(bk, &big[i], &R, 300 + i, 0, 0)) return 0;
        const unsigned char *p = R.dblas;
        for (uint64_t j = 0; j < big[i].m * R.ldd * dtype_bytes(big[i].dd); j++) h = (h ^ p[j]) * 1099511628211ull;
        const unsigned char *q = (const unsigned char *)&R.amax_blas;
        for (size_t j = 0; j < sizeof(float); j++) h = (h ^ q[j]) * 1099511628211ull;
        free_run(&R);
    }
    return h;
}

static const char *self;

static void test_same_bits_for_any_thread_count(void)
{
    char want[64] = "", got[64], cmd[1024];
    for (int t = 1; t <= 3; t++) {
        snprintf(cmd, sizeof cmd, "FP8PLAN_THREADS=%d '%s' --digest", t, self);
        FILE *f = popen(cmd, "r");
        CHECK(f != NULL);
        if (!f) return;
        got[0] = 0;
        CHECK(fgets(got, sizeof got, f) != NULL);
        CHECK(pclose(f) == 0);
        CHECKF(strlen(got) > 8, "digest with %d threads: '%s'", t, got);
        if (t == 1)
            memcpy(want, got, sizeof want);
        else
            CHECKF(!strcmp(want, got), "%d threads: %s, 1 thread: %s", t, got, want);
    }
}

/* The backend calls sgemm from several pool threads at once (GEMM tiles,
 * attention blocks): the BLAS as configured by backend_cpu_create must give
 * every concurrent call its own right answer. (Debian's single-threaded
 * OpenBLAS 0.3.21 fails this: about 1 % of concurrent 16x16x8 calls came back
 * wrong.) Each task does the attention's pair of small products. */
enum { BT_T = 16, BT_D = 8, BT_LD = 24 };
static float bt_a[BT_T * BT_LD], bt_b[BT_T * BT_LD], bt_s[BT_T * BT_T], bt_o[BT_T * BT_D];

static void bt_pair(float *s, float *o)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT_T, BT_T, BT_D, 1.0f, bt_a, BT_LD, bt_b, BT_LD, 0.0f, s,
                BT_T);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BT_T, BT_D, BT_T, 1.0f, s, BT_T, bt_b + BT_T, BT_LD, 0.0f, o,
                BT_D);
}

static void bt_task(void *ctx, uint64_t task, int worker)
{
    (void)task, (void)worker;
    float s[BT_T * BT_T], o[BT_T * BT_D];
    bt_pair(s, o);
    if (memcmp(s, bt_s, sizeof s) || memcmp(o, bt_o, sizeof o)) atomic_fetch_add((atomic_int *)ctx, 1);
}

static void test_blas_calls_from_the_pool(void)
{
    Backend *bk = cpu(); /* configures the BLAS */
    for (int i = 0; i < BT_T * BT_LD; i++) {
        bt_a[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        bt_b[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
    }
    bt_pair(bt_s, bt_o);
    atomic_int wrong = 0;
    for (int rep = 0; rep < 20; rep++) par_tasks(2000, bt_task, &wrong);
    CHECKF(wrong == 0, "%d of 40000 concurrent sgemm pairs wrong", (int)wrong);
    bk->destroy(bk);
}

static void test_rejects_bad_descriptors(void)
{
    Backend *bk = cpu();
    float x[4] = {0};
    GemmDesc g = {.m = 2, .n = 2, .k = 0};
    g.a = (GemmOperand){.ptr = x, .dtype = DT_FP32};
    g.b = (GemmOperand){.ptr = x, .dtype = DT_FP32};
    g.d = (GemmOutput){.ptr = x, .dtype = DT_FP32};
    Err e;
    CHECK_EQ_INT(bk->gemm(bk, &g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "empty shape");
    g.k = 2;
    g.b.layout = GEMM_K_OUTER;
    g.a.dtype = g.b.dtype = DT_E4M3;
    float one = 1.0f;
    g.a.scale_inv = g.b.scale_inv = &one;
    CHECK_EQ_INT(bk->gemm(bk, &g, &e), ST_USAGE); /* Hopper's TN-only FP8 rule */
    CHECK_CONTAINS(e.msg, "TN only");
    bk->destroy(bk);
}

/* DeepSeek-V3's block-scaled GEMM through the backend's gemm() and its reference, on the hand case of
 * test_oracle_fp8.c's test_block_gemm_by_hand (fp8/blockgemm.h, FP32 partial sums): K = 130, A 1x128 tiles
 * {0.5, 2} (row 1 all zero, {1, 1}), B 128x128 blocks {0.25, 0.5}; block 0 sums 256 x 32 + 127 x 0.125 =
 * 8207.875 (every partial sum a multiple of 0.125 below 2^14: exact in any order), x 0.125 = 1025.984375,
 * block 1 3 x 2 + 1.5 x -1 = 4.5, x 1: D = (1030.484375, 0). */
static void test_block_scaled_by_hand(void)
{
    Backend *bk = cpu();
    enum { K = 130 };
    uint8_t a[2 * K] = {0}, b[K];
    a[0] = fp8_encode_f32(DT_E4M3, 256.0f, FP8_SATFINITE);
    b[0] = fp8_encode_f32(DT_E4M3, 32.0f, FP8_SATFINITE);
    for (int k = 1; k < 128; k++) {
        a[k] = fp8_encode_f32(DT_E4M3, 1.0f, FP8_SATFINITE);
        b[k] = fp8_encode_f32(DT_E4M3, 0.125f, FP8_SATFINITE);
    }
    a[128] = fp8_encode_f32(DT_E4M3, 3.0f, FP8_SATFINITE), a[129] = fp8_encode_f32(DT_E4M3, 1.5f, FP8_SATFINITE);
    b[128] = fp8_encode_f32(DT_E4M3, 2.0f, FP8_SATFINITE), b[129] = fp8_encode_f32(DT_E4M3, -1.0f, FP8_SATFINITE);
    const float sa[4] = {0.5f, 2.0f, 1.0f, 1.0f}, sb[2] = {0.25f, 0.5f};
    float d[2] = {-1.0f, -1.0f};
    GemmDesc g = {.m = 2, .n = 1, .k = K};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = sa, .scale_gran = GRAN_1X128};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = sb, .scale_gran = GRAN_128X128};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    Err e;
    CHECK(bk && !bk->gemm(bk, &g, &e));
    CHECKF(d[0] == 1030.484375f && d[1] == 0.0f, "gemm: %.9g, %.9g", (double)d[0], (double)d[1]);
    d[0] = d[1] = -1.0f;
    CHECK(bk && !cpu_gemm_ref(bk, &g, &e));
    CHECKF(d[0] == 1030.484375f && d[1] == 0.0f, "reference: %.9g, %.9g", (double)d[0], (double)d[1]);
    /* the 14-bit accumulation: block 0's partial sum stays 8192 (each + 0.125 truncated away at 2^13),
     * 8192 x 0.125 + 4.5 = 1028.5, through gemm() (which hands it to the reference) and the reference */
    g.acc_precision = GEMM_ACC_TC14;
    d[0] = d[1] = -1.0f;
    CHECK(bk && !bk->gemm(bk, &g, &e));
    CHECKF(d[0] == 1028.5f && d[1] == 0.0f, "gemm, 14-bit: %.9g, %.9g", (double)d[0], (double)d[1]);
    d[0] = -1.0f;
    CHECK(bk && !cpu_gemm_ref(bk, &g, &e));
    CHECK(d[0] == 1028.5f);
    g.b.scale_gran = GRAN_TENSOR; /* a per-tensor operand: no 128-wide blocks to promote */
    CHECK(bk && bk->gemm(bk, &g, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "gemm: the 14-bit block accumulation needs block-scaled FP8 operands (A 1x128, B tensor)");
    if (bk) bk->destroy(bk);
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc > 1 && !strcmp(argv[1], "--digest")) {
        Backend *bk = cpu();
        if (!bk) return 1;
        printf("%016llx\n", (unsigned long long)digest(bk));
        bk->destroy(bk);
        return 0;
    }
    RUN(test_exact_on_integers);
    RUN(test_within_the_reordering_bound);
    RUN(test_bound_catches_an_error);
    RUN(test_same_bits_for_any_thread_count);
    RUN(test_blas_calls_from_the_pool);
    RUN(test_rejects_bad_descriptors);
    RUN(test_block_scaled_by_hand);
    return test_summary();
}
