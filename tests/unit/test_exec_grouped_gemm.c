/* tests/unit/test_exec_grouped_gemm.c — the grouped GEMM of a mixture-of-experts
 * layer (GroupedGemmDesc, exec/backend/backend_desc.h) on the CPU reference:
 *   - a tiny case worked by hand (three groups of 1, 0 and 2 rows);
 *   - bit for bit against a loop of the backend's gemm(), one call per group
 *     with that group's GemmDesc, over ragged groups (0 and 1 rows, one group
 *     large enough to take gemm()'s pool path), BF16, FP32 and E4M3 x E4M3
 *     with a per-tensor scale per group, B stored K-outer (the dgrad form),
 *     accumulation into D and the output amax;
 *   - the expert FFN at real-ish sizes: 1024 tokens routed top-8 over 64
 *     experts by router_topk, hidden 256, FFN 128 (FC1 to 2·128 for SwiGLU,
 *     FC2 back to 256), against the loop bit for bit.
 *   - the weight gradient (grouped_gemm_wgrad, the groups ragged along K) by
 *     hand with an empty group, and against the loop likewise.
 * The loop is the oracle because the issue asks for exactly that equality;
 * the hand case pins the values so both cannot be wrong together. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "test.h"

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

/* Groups of 1, 0, 2 rows, N = 2, K = 3, FP32:
 *   A rows: a0 (1, 2, 3) [group 0]; a1 (1, 0, -1), a2 (0.5, 0.5, 0.5) [group 2]
 *   B_0 = ((1, 0, 0), (0, 0, 3)): D row 0 = (1, 9)
 *   B_1 unused (group 1 is empty)
 *   B_2 = ((1, 1, 1), (2, 0, -2)): D row 1 = (0, 4), D row 2 = (1.5, 0)
 * With accumulate onto D = 10 everywhere: (11, 19 | 10, 14 | 11.5, 10). amax 9 (group 0's), then 19. */
static void test_grouped_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    const int32_t counts[3] = {1, 0, 2};
    const float a[9] = {1, 2, 3, 1, 0, -1, 0.5f, 0.5f, 0.5f};
    const float b[18] = {1, 0, 0, 0, 0, 3, 99, 99, 99, 99, 99, 99, 1, 1, 1, 2, 0, -2};
    float d[6], amax = 0;
    GroupedGemmDesc g = {.groups = 3,
                         .rows = 3,
                         .n = 2,
                         .k = 3,
                         .counts = counts,
                         .a = {.ptr = a, .dtype = DT_FP32},
                         .b = {.ptr = b, .dtype = DT_FP32},
                         .d = {.ptr = d, .dtype = DT_FP32, .amax = &amax}};
    Err e = {0};
    CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
    const float want[6] = {1, 9, 0, 4, 1.5f, 0};
    CHECK(!memcmp(d, want, sizeof want));
    CHECK(amax == 9.0f);
    for (int i = 0; i < 6; i++) d[i] = 10;
    g.accum = GEMM_ACCUMULATE;
    CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
    const float want_acc[6] = {11, 19, 10, 14, 11.5f, 10};
    CHECK(!memcmp(d, want_acc, sizeof want_acc));
    CHECK(amax == 19.0f);
    bk->destroy(bk);
}

static void fill(Rng *r, void *p, Dtype dt, uint64_t n, double sd)
{
    for (uint64_t i = 0; i < n; i++) {
        float x = (float)(rng_normal(r) * sd);
        if (dt == DT_FP32)
            ((float *)p)[i] = x;
        else if (dt == DT_BF16)
            ((uint16_t *)p)[i] = elem_bf16_from_f32(x);
        else
            ((uint8_t *)p)[i] = elem_fp8_from_f32(x, dt);
    }
}

/* grouped_gemm(g) against gemm() per group on a copy of D's initial contents; returns the number of
 * differing bytes of D (and of the amax). */
static uint64_t grouped_vs_loop(Backend *bk, const GroupedGemmDesc *g, const void *d0)
{
    unsigned ab = dtype_bytes(g->a.dtype), bb = dtype_bytes(g->b.dtype), db = dtype_bytes(g->d.dtype);
    uint64_t dbytes = g->rows * g->n * db, bad = 0;
    char *d1 = malloc(dbytes ? dbytes : 1), *d2 = malloc(dbytes ? dbytes : 1);
    CHECK(d1 && d2);
    if (!d1 || !d2) goto out;
    memcpy(d1, d0, dbytes), memcpy(d2, d0, dbytes);
    float amax1 = 0, amax2 = 0;
    GroupedGemmDesc gg = *g;
    gg.d.ptr = d1, gg.d.amax = &amax1;
    Err e = {0};
    CHECKF(bk->grouped_gemm(bk, &gg, &e) == ST_OK, "%s", e.msg);
    uint64_t row0 = 0, lda = g->a.ld ? g->a.ld : g->a.layout == GEMM_K_INNER ? g->k : g->rows;
    for (uint32_t x = 0; x < g->groups; x++) {
        uint64_t m = (uint64_t)g->counts[x];
        if (m) {
            GemmDesc one = {.m = m, .n = g->n, .k = g->k, .a = g->a, .b = g->b, .accum = g->accum};
            one.a.ptr = (const char *)g->a.ptr + (g->a.layout == GEMM_K_INNER ? row0 * lda : row0) * ab;
            one.a.ld = g->a.layout == GEMM_K_INNER ? g->a.ld : lda;
            one.b.ptr = (const char *)g->b.ptr + x * g->n * g->k * bb;
            if (g->a.scale_inv) one.a.scale_inv = g->a.scale_inv + x, one.b.scale_inv = g->b.scale_inv + x;
            one.d = (GemmOutput){.ptr = d2 + row0 * g->n * db, .dtype = g->d.dtype, .amax = &amax2};
            CHECKF(bk->gemm(bk, &one, &e) == ST_OK, "group %u: %s", x, e.msg);
        }
        row0 += m;
    }
    for (uint64_t i = 0; i < dbytes; i++) bad += d1[i] != d2[i];
    bad += memcmp(&amax1, &amax2, sizeof amax1) != 0;
    CHECKF(amax1 > 0, "amax %g", (double)amax1);
out:
    free(d1), free(d2);
    return bad;
}

/* Ragged rows: empty groups, single rows, one group of 700 rows (2·700·256·320 flops > 64e6: its
 * tiles go to the pool) and the rest run one group per task. */
static void test_grouped_equals_loop(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { G = 9, N = 256, K = 320 };
    const int32_t counts[G] = {0, 1, 37, 0, 700, 1, 128, 3, 0};
    uint64_t rows = 0;
    for (int x = 0; x < G; x++) rows += (uint64_t)counts[x];
    const struct {
        Dtype a, b, d;
        GemmLayout al, bl;
        GemmAccum acc;
    } cases[] = {
        {DT_BF16, DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, GEMM_OVERWRITE},  /* fprop */
        {DT_BF16, DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_K_OUTER, GEMM_ACCUMULATE}, /* dgrad form, accumulating */
        {DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_K_INNER, GEMM_OVERWRITE},  /* A stored (K, rows) */
        {DT_FP32, DT_FP32, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, GEMM_OVERWRITE},  /* FP32 operands used in place */
        {DT_E4M3, DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_K_INNER, GEMM_OVERWRITE},  /* FP8, a scale per group */
        {DT_E5M2, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_K_INNER, GEMM_ACCUMULATE}, /* hybrid */
    };
    Rng r = {99};
    float sa[G], sb[G];
    for (int x = 0; x < G; x++) sa[x] = 0.5f + 0.125f * (float)x, sb[x] = 2.0f - 0.25f * (float)x;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        void *a = malloc(rows * K * 4), *b = malloc((uint64_t)G * N * K * 4), *d0 = malloc(rows * N * 4);
        CHECK(a && b && d0);
        if (a && b && d0) {
            int fp8 = dtype_is_fp8(cases[c].a);
            fill(&r, a, cases[c].a, rows * K, fp8 ? 8.0 : 1.0);
            fill(&r, b, cases[c].b, (uint64_t)G * N * K, fp8 ? 8.0 : 0.05);
            fill(&r, d0, cases[c].d, rows * N, 1.0);
            GroupedGemmDesc g = {
                .groups = G,
                .rows = rows,
                .n = N,
                .k = K,
                .counts = counts,
                .a = {.ptr = a, .dtype = cases[c].a, .layout = cases[c].al, .scale_inv = fp8 ? sa : NULL},
                .b = {.ptr = b, .dtype = cases[c].b, .layout = cases[c].bl, .scale_inv = fp8 ? sb : NULL},
                .d = {.dtype = cases[c].d},
                .accum = cases[c].acc};
            CHECKF(grouped_vs_loop(bk, &g, d0) == 0, "case %zu differs from the per-group loop", c);
        }
        free(a), free(b), free(d0);
    }
    bk->destroy(bk);
}

/* The expert FFN's two projections at real-ish sizes, routed by router_topk: 1024 tokens, top-8 of
 * 64 experts (counts around 128 a group, ragged), hidden 256, FFN 128. */
static void test_expert_ffn_sizes(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { T = 1024, E = 64, K = 8, H = 256, F = 128 };
    float *z = malloc(T * E * 4), *s = malloc(T * E * 4), *w = malloc(T * K * 4);
    int32_t *ids = malloc(T * K * 4), counts[E];
    uint16_t *x = malloc((uint64_t)T * K * H * 2), *w1 = malloc((uint64_t)E * 2 * F * H * 2);
    uint16_t *w2 = malloc((uint64_t)E * H * F * 2), *h = malloc((uint64_t)T * K * 2 * F * 2);
    CHECK(z && s && w && ids && x && w1 && w2 && h);
    if (z && s && w && ids && x && w1 && w2 && h) {
        Rng r = {1024};
        for (int i = 0; i < T * E; i++) z[i] = (float)rng_normal(&r);
        RouterDesc rd = {T, E, K, ROUTER_SOFTMAX, 1, 1.0f, 0, 0, z, NULL, s, ids, w, counts};
        Err e = {0};
        CHECKF(bk->router_topk(bk, &rd, &e) == ST_OK, "%s", e.msg);
        int zero_or_one = 0;
        for (int i = 0; i < E; i++) zero_or_one += counts[i] <= 1;
        CHECK_EQ_INT(zero_or_one, 0); /* routed: every expert has rows here; the test above has the 0s, 1s */
        fill(&r, x, DT_BF16, (uint64_t)T * K * H, 1.0);
        fill(&r, w1, DT_BF16, (uint64_t)E * 2 * F * H, 0.06);
        fill(&r, w2, DT_BF16, (uint64_t)E * H * F, 0.06);
        GroupedGemmDesc fc1 = {.groups = E,
                               .rows = T * K,
                               .n = 2 * F,
                               .k = H,
                               .counts = counts,
                               .a = {.ptr = x, .dtype = DT_BF16},
                               .b = {.ptr = w1, .dtype = DT_BF16},
                               .d = {.dtype = DT_BF16}};
        CHECK_EQ_U64(grouped_vs_loop(bk, &fc1, h), 0); /* h's contents as D's start: overwritten anyway */
        fc1.d.ptr = h;
        CHECKF(bk->grouped_gemm(bk, &fc1, &e) == ST_OK, "%s", e.msg);
        GroupedGemmDesc fc2 = {.groups = E,
                               .rows = T * K,
                               .n = H,
                               .k = F,
                               .counts = counts,
                               .a = {.ptr = h + F, .dtype = DT_BF16, .ld = 2 * F}, /* FC1's up half, strided */
                               .b = {.ptr = w2, .dtype = DT_BF16},
                               .d = {.dtype = DT_BF16}};
        CHECK_EQ_U64(grouped_vs_loop(bk, &fc2, x), 0);
    }
    free(z), free(s), free(w), free(ids), free(x), free(w1), free(w2), free(h);
    bk->destroy(bk);
}

/* ---- the weight gradient: groups ragged along K ---------------------------------------------------- */

/* Groups of 2, 0, 1 rows, M = N = 2, dY (3, 2) and X (3, 2) stored by rows (K-outer):
 *   dY: (1, 2), (3, 4) [group 0]; (5, 6) [group 2].  X: (1, 0), (0, 1) [group 0]; (2, 2) [group 2].
 *   dW_0 = Σ_r dY_rᵀ·X_r = (1, 2)ᵀ(1, 0) + (3, 4)ᵀ(0, 1) = ((1, 3), (2, 4));
 *   dW_1 = 0 (no rows: D, filled with 7, is zeroed); dW_2 = (5, 6)ᵀ(2, 2) = ((10, 10), (12, 12)).
 * amax 12. Accumulating the same again doubles groups 0 and 2 (group 1 stays 0): amax 24. */
static void test_wgrad_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    const int32_t counts[3] = {2, 0, 1};
    const float dy[6] = {1, 2, 3, 4, 5, 6}, x[6] = {1, 0, 0, 1, 2, 2};
    float d[12], amax = 0;
    for (int i = 0; i < 12; i++) d[i] = 7;
    GroupedWgradDesc g = {.groups = 3,
                          .rows = 3,
                          .m = 2,
                          .n = 2,
                          .counts = counts,
                          .a = {.ptr = dy, .dtype = DT_FP32, .layout = GEMM_K_OUTER},
                          .b = {.ptr = x, .dtype = DT_FP32, .layout = GEMM_K_OUTER},
                          .d = {.ptr = d, .dtype = DT_FP32, .amax = &amax}};
    Err e = {0};
    CHECKF(bk->grouped_gemm_wgrad(bk, &g, &e) == ST_OK, "%s", e.msg);
    const float want[12] = {1, 3, 2, 4, 0, 0, 0, 0, 10, 10, 12, 12};
    CHECK(!memcmp(d, want, sizeof want));
    CHECK(amax == 12.0f);
    g.accum = GEMM_ACCUMULATE;
    CHECKF(bk->grouped_gemm_wgrad(bk, &g, &e) == ST_OK, "%s", e.msg);
    for (int i = 0; i < 12; i++) CHECK(d[i] == 2 * want[i]);
    CHECK(amax == 24.0f);
    bk->destroy(bk);
}

/* Operand o's K rows [k0, k0 + kg) as gemm() takes them: K-outer rows of ld (default mn), K-inner columns
 * of ld (default rows). */
static GemmOperand k_rows(GemmOperand o, uint64_t rows, uint64_t mn, uint64_t k0, uint32_t x)
{
    uint64_t ld = o.ld ? o.ld : (o.layout == GEMM_K_OUTER ? mn : rows);
    o.ptr = (const char *)o.ptr + (o.layout == GEMM_K_OUTER ? k0 * ld : k0) * dtype_bytes(o.dtype);
    o.ld = ld;
    if (o.scale_inv) o.scale_inv += x;
    return o;
}

/* grouped_gemm_wgrad(g) against gemm() per non-empty group (and a zeroed D_g for an empty one when
 * overwriting); returns the differing bytes of D and the amax. */
static uint64_t wgrad_vs_loop(Backend *bk, const GroupedWgradDesc *g, const void *d0)
{
    unsigned db = dtype_bytes(g->d.dtype);
    uint64_t per = g->m * g->n * db, dbytes = g->groups * per, bad = 0;
    char *d1 = malloc(dbytes), *d2 = malloc(dbytes);
    CHECK(d1 && d2);
    if (!d1 || !d2) goto out;
    memcpy(d1, d0, dbytes), memcpy(d2, d0, dbytes);
    float amax1 = 0, amax2 = 0;
    GroupedWgradDesc gg = *g;
    gg.d.ptr = d1, gg.d.amax = &amax1;
    Err e = {0};
    CHECKF(bk->grouped_gemm_wgrad(bk, &gg, &e) == ST_OK, "%s", e.msg);
    for (uint64_t x = 0, k0 = 0; x < g->groups; k0 += (uint64_t)g->counts[x], x++) {
        uint64_t kg = (uint64_t)g->counts[x];
        if (!kg) {
            if (g->accum == GEMM_OVERWRITE) memset(d2 + x * per, 0, per);
            continue;
        }
        GemmDesc one = {.m = g->m, .n = g->n, .k = kg, .accum = g->accum};
        one.a = k_rows(g->a, g->rows, g->m, k0, (uint32_t)x);
        one.b = k_rows(g->b, g->rows, g->n, k0, (uint32_t)x);
        one.d = (GemmOutput){.ptr = d2 + x * per, .dtype = g->d.dtype, .amax = &amax2};
        CHECKF(bk->gemm(bk, &one, &e) == ST_OK, "group %llu: %s", (unsigned long long)x, e.msg);
    }
    for (uint64_t i = 0; i < dbytes; i++) bad += d1[i] != d2[i];
    bad += memcmp(&amax1, &amax2, sizeof amax1) != 0;
    CHECKF(amax1 > 0, "amax %g", (double)amax1);
out:
    free(d1), free(d2);
    return bad;
}

/* The experts' weight gradients over the ragged groups above (a group of 700 rows: 2·256·192·700 flops
 * > 64e6, its tiles on the pool), BF16 dY and X K-outer into FP32 accumulating (the main gradients) and
 * into BF16, FP32, and FP8 transposed copies (E5M2 dYᵀ x E4M3 Xᵀ, K-inner, a scale per group). */
static void test_wgrad_equals_loop(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { G = 9, M = 256, N = 192 };
    const int32_t counts[G] = {0, 1, 37, 0, 700, 1, 128, 3, 0};
    uint64_t rows = 0;
    for (int x = 0; x < G; x++) rows += (uint64_t)counts[x];
    const struct {
        Dtype a, b, d;
        GemmLayout l;
        GemmAccum acc;
    } cases[] = {
        {DT_BF16, DT_BF16, DT_FP32, GEMM_K_OUTER, GEMM_ACCUMULATE},
        {DT_BF16, DT_BF16, DT_BF16, GEMM_K_OUTER, GEMM_OVERWRITE},
        {DT_FP32, DT_FP32, DT_FP32, GEMM_K_OUTER, GEMM_OVERWRITE},
        {DT_E5M2, DT_E4M3, DT_FP32, GEMM_K_INNER, GEMM_ACCUMULATE},
    };
    Rng r = {77};
    float sa[G], sb[G];
    for (int x = 0; x < G; x++) sa[x] = 0.25f + 0.125f * (float)x, sb[x] = 1.5f - 0.125f * (float)x;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        void *a = malloc(rows * M * 4), *b = malloc(rows * N * 4), *d0 = malloc((uint64_t)G * M * N * 4);
        CHECK(a && b && d0);
        if (a && b && d0) {
            int fp8 = dtype_is_fp8(cases[c].a);
            fill(&r, a, cases[c].a, rows * M, fp8 ? 4.0 : 1.0);
            fill(&r, b, cases[c].b, rows * N, fp8 ? 4.0 : 1.0);
            fill(&r, d0, cases[c].d, (uint64_t)G * M * N, 1.0);
            GroupedWgradDesc g = {
                .groups = G,
                .rows = rows,
                .m = M,
                .n = N,
                .counts = counts,
                .a = {.ptr = a, .dtype = cases[c].a, .layout = cases[c].l, .scale_inv = fp8 ? sa : NULL},
                .b = {.ptr = b, .dtype = cases[c].b, .layout = cases[c].l, .scale_inv = fp8 ? sb : NULL},
                .d = {.dtype = cases[c].d},
                .accum = cases[c].acc};
            CHECKF(wgrad_vs_loop(bk, &g, d0) == 0, "case %zu differs from the per-group loop", c);
        }
        free(a), free(b), free(d0);
    }
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_grouped_by_hand);
    RUN(test_grouped_equals_loop);
    RUN(test_expert_ffn_sizes);
    RUN(test_wgrad_by_hand);
    RUN(test_wgrad_equals_loop);
    return test_summary();
}
