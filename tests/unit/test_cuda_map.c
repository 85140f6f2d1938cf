/* tests/unit/test_cuda_map.c — the CUDA backend's GEMM mapping and heuristic
 * cache (exec/backend/lt_map.c), checked without a GPU.
 *
 * The mapping is checked by meaning, not by restating it: a column-major GEMM
 * written from cuBLAS's documented definition (C = op(A)·op(B), element (i, j)
 * of a col-major matrix at p[i + j·ld], batches at p + b·stride) is run on
 * float data through each LtCall, and must give exactly the row-major
 * D = A·Bᵀ the GemmDesc describes, for every layout pair, padded leading
 * dimensions and strided batches. Both sides sum the same products in the
 * same k order, so the comparison is exact. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/lt_map.h"
#include "exec/backend/rng.h"
#include "test.h"

/* The row-major reference: D[i][j] = Σ_k A(i,k)·B(j,k) over one batch. */
static float ref_at(const GemmDesc *g, const float *a, const float *b, uint64_t i, uint64_t j)
{
    uint64_t lda = g->a.ld ? g->a.ld : (g->a.layout == GEMM_K_INNER ? g->k : g->m);
    uint64_t ldb = g->b.ld ? g->b.ld : (g->b.layout == GEMM_K_INNER ? g->k : g->n);
    float s = 0.0f;
    for (uint64_t k = 0; k < g->k; k++) {
        float x = g->a.layout == GEMM_K_INNER ? a[i * lda + k] : a[k * lda + i];
        float y = g->b.layout == GEMM_K_INNER ? b[j * ldb + k] : b[k * ldb + j];
        s += x * y;
    }
    return s;
}

/* cuBLAS's definition, column-major, one batch: D(i,j) = α Σ_l op(A)(i,l)·op(B)(l,j). */
static void colmajor(const LtCall *c, const float *A, const float *B, float *D)
{
    for (uint64_t j = 0; j < c->n; j++)
        for (uint64_t i = 0; i < c->m; i++) {
            float s = 0.0f;
            for (uint64_t l = 0; l < c->k; l++) {
                float x = c->trans_a ? A[l + i * c->lda] : A[i + l * c->lda]; /* op(A) is m × k */
                float y = c->trans_b ? B[j + l * c->ldb] : B[l + j * c->ldb]; /* op(B) is k × n */
                s += x * y;
            }
            D[i + j * c->ldd] = c->alpha * s;
        }
}

static float *randf(Rng *r, uint64_t n)
{
    float *p = malloc(n * sizeof(float));
    for (uint64_t i = 0; i < n; i++) p[i] = (float)(rng_unit(r) * 2.0 - 1.0);
    return p;
}

/* One case: M, N, K, layouts and padding; BF16-typed descriptor (any layout legal). */
static void check_case(uint64_t M, uint64_t N, uint64_t K, GemmLayout la, GemmLayout lb, uint64_t pad)
{
    Rng r = {M * 131 + N * 17 + K + la * 7 + lb * 3 + pad};
    uint64_t lda = (la == GEMM_K_INNER ? K : M) + pad, ldb = (lb == GEMM_K_INNER ? K : N) + pad, ldd = N + pad;
    uint64_t rows_a = la == GEMM_K_INNER ? M : K, rows_b = lb == GEMM_K_INNER ? N : K;
    float *a = randf(&r, rows_a * lda), *b = randf(&r, rows_b * ldb), *d = calloc(M * ldd, sizeof(float));
    GemmDesc g = {.m = M, .n = N, .k = K};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_BF16, .layout = la, .ld = pad ? lda : 0};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_BF16, .layout = lb, .ld = pad ? ldb : 0};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16, .ld = pad ? ldd : 0};
    LtCall c;
    Err e;
    Status st = lt_map_gemm(&g, &c, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (st == ST_OK) {
        CHECK(c.a == b && c.b == a && c.d == d); /* cuBLAS A is our B */
        CHECK_EQ_U64(c.m, N);
        CHECK_EQ_U64(c.n, M);
        /* one matrix, and the transposes as flags of exactly 0 or 1 (part of the cache key, compared bytewise):
         * cuBLAS A (our B) is transposed when our B is K-inner, cuBLAS B (our A) when our A is K-outer */
        CHECK_EQ_U64(c.batch, 1);
        CHECK_EQ_INT(c.trans_a, lb == GEMM_K_INNER);
        CHECK_EQ_INT(c.trans_b, la == GEMM_K_OUTER);
        /* the stored extents: rows ≤ ld (what cublasLtMatrixLayoutCreate is given) */
        CHECK(c.a_rows <= c.lda && c.b_rows <= c.ldb && c.m <= c.ldd);
        CHECK_EQ_U64(c.a_rows * c.a_cols, N * K);
        CHECK_EQ_U64(c.b_rows * c.b_cols, M * K);
        colmajor(&c, (const float *)c.a, (const float *)c.b, d);
        int bad = 0;
        for (uint64_t i = 0; i < M; i++)
            for (uint64_t j = 0; j < N; j++) bad += d[i * ldd + j] != ref_at(&g, a, b, i, j);
        CHECKF(bad == 0, "M=%llu N=%llu K=%llu layouts %d%d pad %llu: %d elements differ", (unsigned long long)M,
               (unsigned long long)N, (unsigned long long)K, (int)la, (int)lb, (unsigned long long)pad, bad);
    }
    free(a);
    free(b);
    free(d);
}

static void test_layouts_compute_a_times_b_transposed(void)
{
    GemmLayout L[2] = {GEMM_K_INNER, GEMM_K_OUTER};
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++) {
            check_case(5, 7, 3, L[x], L[y], 0);
            check_case(9, 4, 11, L[x], L[y], 3);
            check_case(1, 1, 1, L[x], L[y], 0);
        }
}

/* The three GEMMs of a Linear layer in FP8 on Hopper: all TN, with the right scales. */
static void test_linear_fp8_gemms_are_tn(void)
{
    static __attribute__((aligned(16))) uint8_t x[64 * 32], w[48 * 32], wt[32 * 48], dy[64 * 48], dyt[48 * 64],
        xt[32 * 64];
    static uint16_t y[64 * 48], dx[64 * 32];
    static float dw[48 * 32];
    float sx = 0.5f, sw = 0.25f, sdy = 2.0f;
    const uint64_t M = 64, N = 48, K = 32;
    LtCall c;
    Err e;
    /* fprop Y (M,N) = X (M,K) · W (N,K)ᵀ, E4M3 x E4M3, fast accumulation */
    GemmDesc f = {.m = M, .n = N, .k = K, .acc_precision = GEMM_ACC_FAST};
    f.a = (GemmOperand){.ptr = x, .dtype = DT_E4M3, .scale_inv = &sx};
    f.b = (GemmOperand){.ptr = w, .dtype = DT_E4M3, .scale_inv = &sw};
    f.d = (GemmOutput){.ptr = y, .dtype = DT_BF16};
    CHECK_EQ_INT(lt_map_gemm(&f, &c, &e), ST_OK);
    CHECK(c.trans_a == 1 && c.trans_b == 0); /* TN */
    CHECK(c.a_scale_inv == &sw && c.b_scale_inv == &sx);
    CHECK(c.a_type == DT_E4M3 && c.d_type == DT_BF16 && c.c_type == DT_BF16 && c.fast_accum == 1);
    CHECK(c.lda == K && c.ldb == K && c.ldd == N);
    /* dgrad dX (M,K) = dY (M,N) · Wᵀ(K,N)ᵀ, E5M2 x E4M3, split accumulation */
    GemmDesc dg = {.m = M, .n = K, .k = N};
    dg.a = (GemmOperand){.ptr = dy, .dtype = DT_E5M2, .scale_inv = &sdy};
    dg.b = (GemmOperand){.ptr = wt, .dtype = DT_E4M3, .scale_inv = &sw};
    dg.d = (GemmOutput){.ptr = dx, .dtype = DT_BF16};
    CHECK_EQ_INT(lt_map_gemm(&dg, &c, &e), ST_OK);
    CHECK(c.trans_a == 1 && c.trans_b == 0 && c.fast_accum == 0);
    CHECK(c.a_type == DT_E4M3 && c.b_type == DT_E5M2); /* hybrid: cuBLAS A = Wᵀ (E4M3), B = dY (E5M2) */
    CHECK(c.lda == N && c.ldb == N);
    /* wgrad dW (N,K) += dYᵀ (N,M) · Xᵀ (K,M)ᵀ into FP32 */
    GemmDesc wg = {.m = N, .n = K, .k = M, .accum = GEMM_ACCUMULATE};
    wg.a = (GemmOperand){.ptr = dyt, .dtype = DT_E5M2, .scale_inv = &sdy};
    wg.b = (GemmOperand){.ptr = xt, .dtype = DT_E4M3, .scale_inv = &sx};
    wg.d = (GemmOutput){.ptr = dw, .dtype = DT_FP32};
    CHECK_EQ_INT(lt_map_gemm(&wg, &c, &e), ST_OK);
    CHECK(c.trans_a == 1 && c.trans_b == 0 && c.beta_one == 1 && c.c == dw);
    CHECK(c.lda == M && c.ldb == M && c.ldd == K && c.c_type == DT_FP32);
    /* the same dgrad with W itself (K outer) is the mistake Hopper refuses */
    dg.b = (GemmOperand){.ptr = w, .dtype = DT_E4M3, .layout = GEMM_K_OUTER, .scale_inv = &sw};
    CHECK_EQ_INT(lt_map_gemm(&dg, &c, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "TN");
}

static void test_fp8_alignment_rules(void)
{
    static uint8_t a[64 * 48 + 32], b[64 * 48 + 32];
    static uint16_t d[64 * 64];
    float s = 1.0f;
    LtCall c;
    Err e;
    GemmDesc g = {.m = 64, .n = 64, .k = 40};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = &s};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = &s};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16};
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE); /* K = 40 */
    CHECK_CONTAINS(e.msg, "multiples of 16");
    g.k = 48;
    uintptr_t base = ((uintptr_t)a + 15) & ~(uintptr_t)15;
    g.a.ptr = (const void *)base;
    g.b.ptr = (const void *)(((uintptr_t)b + 15) & ~(uintptr_t)15);
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    g.a.ld = 56; /* not a multiple of 16 */
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "leading dimensions");
    g.a.ld = 0;
    g.a.ptr = (const void *)(base + 8);
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "16-byte boundary");
    g.a.ptr = (const void *)base;
    g.a.scale_gran = GRAN_1X128;
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "block-scaled");
    g.a.scale_gran = GRAN_TENSOR;
    g.n = 40; /* N (cuBLAS m) must be a multiple of 16 too */
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
}

static void test_bias_and_amax_modes(void)
{
    static uint16_t a[32 * 32], b[32 * 32], d[32 * 32], bias16[32];
    static float d32[32 * 32], bias32[32], amax;
    LtCall c;
    Err e;
    GemmDesc g = {.m = 32, .n = 32, .k = 32, .bias = bias16, .bias_dtype = DT_BF16};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_BF16};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_BF16};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16, .amax = &amax};
    LtKey k;
    GemmDesc nob = g; /* no bias: none in the key either */
    nob.bias = NULL, nob.bias_dtype = DT_NONE;
    CHECK_EQ_INT(lt_map_gemm(&nob, &c, &e), ST_OK);
    lt_key_of(&c, &k);
    CHECK(k.bias_mode == 0 && k.bias_type == DT_NONE);
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    CHECK_EQ_INT(c.bias_mode, LT_BIAS_EPILOGUE);
    CHECK(c.amax == &amax && c.amax_by_lt == 0); /* BF16 output: amax by a kernel */
    lt_key_of(&c, &k);                           /* the plan cache key names the epilogue's bias dtype */
    CHECK(k.bias_mode == 1 && k.bias_type == DT_BF16);
    { /* ... but not the kernel's amax: the same call without one has the same key (one descriptor) */
        LtKey k2;
        GemmDesc noamax = g;
        noamax.d.amax = NULL;
        CHECK_EQ_INT(k.amax_by_lt, 0);
        CHECK_EQ_INT(lt_map_gemm(&noamax, &c, &e), ST_OK);
        lt_key_of(&c, &k2);
        CHECK(lt_key_eq(&k, &k2));
    }
    { /* FP16 output with an FP16 bias: the epilogue too */
        GemmDesc h = g;
        h.a.dtype = h.b.dtype = h.d.dtype = h.bias_dtype = DT_FP16;
        CHECK_EQ_INT(lt_map_gemm(&h, &c, &e), ST_OK);
        CHECK_EQ_INT(c.bias_mode, LT_BIAS_EPILOGUE);
    }
    g.bias = bias32;
    g.bias_dtype = DT_FP32; /* FP32 bias on a BF16 output: not an epilogue cuBLASLt takes */
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    CHECK_EQ_INT(c.bias_mode, LT_BIAS_KERNEL);
    lt_key_of(&c, &k); /* a bias added by a kernel is no part of the cuBLASLt plan */
    CHECK(k.bias_mode == 0 && k.bias_type == DT_NONE);
    g.d = (GemmOutput){.ptr = d32, .dtype = DT_FP32};
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    CHECK_EQ_INT(c.bias_mode, LT_BIAS_EPILOGUE);
    lt_key_of(&c, &k);
    CHECK(k.bias_mode == 1 && k.bias_type == DT_FP32);
}

static void test_fp8_output_uses_lt_amax(void)
{
    static __attribute__((aligned(16))) uint8_t a[32 * 32], b[32 * 32], d[32 * 32];
    static float s = 1.0f, ds = 2.0f, amax;
    static uint16_t bias[32];
    LtCall c;
    Err e;
    GemmDesc g = {.m = 32, .n = 32, .k = 32};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = &s};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = &s};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_E4M3, .scale = &ds, .amax = &amax};
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    CHECK(c.amax_by_lt == 1 && c.d_scale == &ds && c.c == NULL && c.c_type == DT_BF16);
    g.bias = bias;
    g.bias_dtype = DT_FP16;
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "bf16");
}

/* Keys: equal for the same call on other buffers of the same alignment; different
 * whenever something cuBLASLt's choice depends on differs. */
static void test_key_identity(void)
{
    static __attribute__((aligned(256))) uint16_t a1[64 * 64], b1[64 * 64], d1[64 * 64];
    static __attribute__((aligned(256))) uint16_t a2[64 * 64], b2[64 * 64], d2[64 * 64];
    LtCall c1, c2;
    LtKey k1, k2;
    Err e;
    GemmDesc g = {.m = 64, .n = 48, .k = 32};
    g.a = (GemmOperand){.ptr = a1, .dtype = DT_BF16};
    g.b = (GemmOperand){.ptr = b1, .dtype = DT_BF16};
    g.d = (GemmOutput){.ptr = d1, .dtype = DT_BF16};
    CHECK_EQ_INT(lt_map_gemm(&g, &c1, &e), ST_OK);
    GemmDesc h = g;
    h.a.ptr = a2;
    h.b.ptr = b2;
    h.d.ptr = d2;
    CHECK_EQ_INT(lt_map_gemm(&h, &c2, &e), ST_OK);
    lt_key_of(&c1, &k1);
    lt_key_of(&c2, &k2);
    CHECK(lt_key_eq(&k1, &k2) && lt_key_hash(&k1) == lt_key_hash(&k2));
    struct {
        const char *what;
        GemmDesc g;
    } v[6];
    for (int i = 0; i < 6; i++) v[i].g = g;
    v[0].what = "k";
    v[0].g.k = 16;
    v[1].what = "ld";
    v[1].g.a.ld = 40;
    v[2].what = "dtype";
    v[2].g.d.dtype = DT_FP32;
    v[3].what = "layout";
    v[3].g.b.layout = GEMM_K_OUTER;
    v[4].what = "alignment";
    v[4].g.a.ptr = a1 + 1; /* 2-byte aligned */
    v[5].what = "accumulate";
    v[5].g.accum = GEMM_ACCUMULATE;
    for (int i = 0; i < 6; i++) {
        LtCall c;
        LtKey k;
        CHECK_EQ_INT(lt_map_gemm(&v[i].g, &c, &e), ST_OK);
        lt_key_of(&c, &k);
        CHECKF(!lt_key_eq(&k, &k1), "a different %s gave the same key", v[i].what);
    }
    c2 = c1;
    c2.batch = 4;
    c2.stride_d = 64 * 48;
    lt_key_of(&c2, &k2);
    CHECK(!lt_key_eq(&k1, &k2));
    CHECK_EQ_U64(lt_ptr_align(NULL), 256);
    CHECK_EQ_U64(lt_ptr_align((void *)(uintptr_t)0x1000), 256);
    CHECK_EQ_U64(lt_ptr_align((void *)(uintptr_t)0x1010), 16);
    CHECK_EQ_U64(lt_ptr_align((void *)(uintptr_t)0x1001), 1);
}

/* The cache's hash is FNV-1a (64-bit) over the key's bytes: start at the offset basis 14695981039346656037
 * (0xcbf29ce484222325), then for each byte XOR it in and multiply by the prime 1099511628211, mod 2^64. The key
 * is 136 bytes: 10 uint64 + 3 int64 = 104, uint32 108, 13 uint8 121, padding 122, 4 uint16 130, padding to a
 * multiple of 8. 136 zero bytes leave the XORs idle: 14695981039346656037 x 1099511628211^136 mod 2^64 =
 * 0xd8f706edf03243c5. With m = 1 the first byte (little-endian) is 1: (14695981039346656037 XOR 1) x
 * 1099511628211^136 mod 2^64 = 0xee330c0ea08437a4. And 1,000 keys that differ in m and n hash to 1,000
 * different values. */
static void test_key_hash_is_fnv1a(void)
{
    LtKey k;
    memset(&k, 0, sizeof k);
    CHECK_EQ_U64(sizeof k, 136);
    CHECK_EQ_U64(lt_key_hash(&k), 0xd8f706edf03243c5ull);
    k.m = 1;
    CHECK_EQ_U64(lt_key_hash(&k), 0xee330c0ea08437a4ull);
    enum { N = 1000 };
    static uint64_t h[N];
    for (int i = 0; i < N; i++) {
        memset(&k, 0, sizeof k);
        k.m = (uint64_t)i, k.n = (uint64_t)(i % 7);
        h[i] = lt_key_hash(&k);
    }
    int same = 0;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) same += h[i] == h[j];
    CHECK_EQ_INT(same, 0);
}

static int freed;
static void count_free(void *val, void *ctx)
{
    (void)ctx;
    freed++;
    free(val);
}

static void test_cache_grows_and_finds(void)
{
    LtCache cache = {0};
    Err e;
    enum { N = 1000 };
    for (int i = 0; i < N; i++) {
        LtKey k;
        memset(&k, 0, sizeof k);
        k.m = (uint64_t)i;
        k.n = (uint64_t)(i % 7);
        int *val = malloc(sizeof *val);
        *val = i;
        CHECK(lt_cache_find(&cache, &k) == NULL);
        CHECK_EQ_INT(lt_cache_put(&cache, &k, val, &e), ST_OK);
    }
    CHECK_EQ_U64(cache.n, N);
    CHECK_EQ_U64(cache.cap, 2048); /* 64 doubled while 2 (n + 1) > cap: the 1,000th put (n = 999) needs 2,000 > 1,024 */
    int wrong = 0;
    for (int i = N - 1; i >= 0; i--) {
        LtKey k;
        memset(&k, 0, sizeof k);
        k.m = (uint64_t)i;
        k.n = (uint64_t)(i % 7);
        int *val = lt_cache_find(&cache, &k);
        wrong += !val || *val != i;
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_U64(cache.hits, N);
    CHECK_EQ_U64(cache.misses, N);
    LtKey dup;
    memset(&dup, 0, sizeof dup);
    dup.m = 5;
    dup.n = 5;
    CHECK_EQ_INT(lt_cache_put(&cache, &dup, NULL, &e), ST_SOFTWARE);
    freed = 0;
    lt_cache_clear(&cache, count_free, NULL);
    CHECK_EQ_INT(freed, N);
    CHECK(cache.slots == NULL && cache.n == 0);
}

/* The doubling stops before the 32-bit capacity wraps. A cache of 2^31 slots holding 2^30 keys
 * must grow for the next (2 x (2^30 + 1) > 2^31); doubled, 2^31 is 0 in uint32_t, so the put
 * refuses with ST_NOMEM before touching a slot (the fake cache has none). */
static void test_cache_refuses_to_wrap(void)
{
    LtCache big = {.slots = NULL, .cap = 1u << 31, .n = 1u << 30};
    LtKey k;
    memset(&k, 0, sizeof k);
    Err e = {0};
    CHECK_EQ_INT(lt_cache_put(&big, &k, NULL, &e), ST_NOMEM);
    CHECK(strstr(e.msg, "cannot grow past 2147483648 entries") != NULL);
    CHECK(big.cap == 1u << 31 && big.n == 1u << 30 && big.slots == NULL);
}

/* Attention's strided batches: the per-batch pointers of the col-major call land
 * on the row-major heads. */
static void test_strided_batch_maps_heads(void)
{
    /* qkv (T, 3C) with H heads of width D: Q_h at column h·D, K_h at C + h·D */
    enum { T = 6, H = 3, D = 4, C = H * D };
    Rng r = {99};
    float *qkv = randf(&r, T * 3 * C), s[H][T][T];
    GemmDesc g = {.m = T, .n = T, .k = D};
    g.a = (GemmOperand){.ptr = qkv, .dtype = DT_BF16, .ld = 3 * C};
    g.b = (GemmOperand){.ptr = qkv + C, .dtype = DT_BF16, .ld = 3 * C};
    g.d = (GemmOutput){.ptr = s, .dtype = DT_FP32, .ld = T};
    LtCall c;
    Err e;
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_OK);
    c.batch = H;
    c.stride_a = D; /* cuBLAS A is our B (K heads) */
    c.stride_b = D;
    c.stride_d = T * T;
    for (uint32_t h = 0; h < c.batch; h++)
        colmajor(&c, (const float *)c.a + h * c.stride_a, (const float *)c.b + h * c.stride_b,
                 (float *)c.d + h * c.stride_d);
    int bad = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                float ref = 0.0f;
                for (int k = 0; k < D; k++) ref += qkv[i * 3 * C + h * D + k] * qkv[j * 3 * C + C + h * D + k];
                bad += s[h][i][j] != ref;
            }
    CHECK_EQ_INT(bad, 0);
    free(qkv);
}

/* Which FP8 scale pointers are staged onto 16-byte boundaries: the bank's
 * scale_inv slots sit 4 bytes apart, so of slots 0..4 of a 16-aligned bank
 * only 0 and 4 (byte offsets 0 and 16) go straight to cuBLASLt. */
static void test_scale_staging(void)
{
    static _Alignas(16) float bank[8];
    LtCall c;
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(lt_scale_stage(&c), 0); /* no scales: BF16 */
    c.a_scale_inv = &bank[0], c.b_scale_inv = &bank[4];
    CHECK_EQ_INT(lt_scale_stage(&c), 0); /* offsets 0 and 16 */
    c.a_scale_inv = &bank[1];            /* offset 4 */
    CHECK_EQ_INT(lt_scale_stage(&c), LT_STAGE_A);
    c.b_scale_inv = &bank[2]; /* offset 8: 8-byte aligned is not enough */
    CHECK_EQ_INT(lt_scale_stage(&c), LT_STAGE_A | LT_STAGE_B);
    c.a_scale_inv = &bank[0], c.b_scale_inv = &bank[4], c.d_scale = &bank[3]; /* offset 12 */
    CHECK_EQ_INT(lt_scale_stage(&c), LT_STAGE_D);
    c.a_scale_inv = &bank[7], c.b_scale_inv = &bank[5], c.d_scale = &bank[6];
    CHECK_EQ_INT(lt_scale_stage(&c), 7);
    CHECK_EQ_INT(LT_STAGE_A | LT_STAGE_B | LT_STAGE_D, 7);
}

int main(void)
{
    RUN(test_layouts_compute_a_times_b_transposed);
    RUN(test_linear_fp8_gemms_are_tn);
    RUN(test_fp8_alignment_rules);
    RUN(test_bias_and_amax_modes);
    RUN(test_fp8_output_uses_lt_amax);
    RUN(test_key_identity);
    RUN(test_key_hash_is_fnv1a);
    RUN(test_cache_grows_and_finds);
    RUN(test_cache_refuses_to_wrap);
    RUN(test_strided_batch_maps_heads);
    RUN(test_scale_staging);
    return test_summary();
}
