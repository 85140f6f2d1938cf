/* tests/unit/test_gemm_group.c — a grouped GEMM taken apart into its groups
 * (exec/backend/gemm_group.h), the descriptors the CUDA backend runs one cuBLASLt
 * matmul each (exec/cuda/gemm_group.cu):
 *   - a group's GemmDesc by hand: its A, B and D pointers, leading dimensions and
 *     scale pointers for per-tensor, 1x128 and 128x128 scales, and a weight
 *     gradient's K slice with the 1x128 tiles of the groups before it;
 *   - those descriptors run through the CPU backend's gemm(), group by group,
 *     equal its grouped_gemm and grouped_gemm_wgrad bit for bit (BF16, FP32,
 *     per-tensor E4M3, block-scaled E4M3), empty groups included;
 *   - the counts check: a negative count, a sum that is not the rows. */
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/backend/gemm_group.h"
#include "exec/backend/rng.h"
#include "test.h"

/* Groups of 3, 0, 200 rows; N 16, K 300 (3 tiles of 128 along K): group 2 starts at row 3. */
static void test_desc_by_hand(void)
{
    static const int32_t counts[3] = {3, 0, 200};
    static float sa[203 * 3], sb[3 * 16 * 3];
    static uint8_t a[203 * 300], b[3 * 16 * 300];
    static uint16_t d[203 * 20];
    GroupedGemmDesc g = {.groups = 3, .rows = 203, .n = 16, .k = 300, .counts = counts};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = sa, .scale_gran = GRAN_1X128};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = sb, .scale_gran = GRAN_1X128};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16, .ld = 20};
    GemmDesc x = gemm_group_desc(&g, 2, 3, 200);
    CHECK_EQ_U64(x.m, 200);
    CHECK(x.a.ptr == a + 3 * 300 && x.a.ld == 300);           /* row 3 of (203, 300) */
    CHECK(x.a.scale_inv == sa + 3 * 3);                       /* row 3 of (203, ceil(300/128) = 3) */
    CHECK(x.b.ptr == b + 2 * 16 * 300);                       /* the third (16, 300) weight */
    CHECK(x.b.scale_inv == sb + 2 * 16 * 3);                  /* its (16, 3) 1x128 scales */
    CHECK(x.d.ptr == (char *)d + 3 * 20 * 2 && x.d.ld == 20); /* row 3, ld 20, 2-byte BF16 */
    g.b.scale_gran = GRAN_128X128;                            /* (ceil(16/128) = 1, 3) blocks per group */
    CHECK(gemm_group_desc(&g, 2, 3, 200).b.scale_inv == sb + 2 * 1 * 3);
    g.a.scale_gran = g.b.scale_gran = GRAN_TENSOR; /* one scale per group */
    x = gemm_group_desc(&g, 2, 3, 200);
    CHECK(x.a.scale_inv == sa + 2 && x.b.scale_inv == sb + 2);
    g.a.layout = GEMM_K_OUTER, g.a.dtype = DT_BF16, g.a.scale_inv = NULL; /* A stored (K, rows): column 3 */
    x = gemm_group_desc(&g, 2, 3, 200);
    CHECK(x.a.ptr == (char *)a + 3 * 2 && x.a.ld == 203);
    /* weight gradient, K_INNER copies (M 16, rows 203) and (N 8, rows 203), 1x128 tiles along K: group 2
     * starts at K row 3, after ceil(3/128) + ceil(0/128) = 1 tile of the groups before */
    GroupedWgradDesc w = {.groups = 3, .rows = 203, .m = 16, .n = 8, .counts = counts};
    w.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = sa, .scale_gran = GRAN_1X128};
    w.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = sb, .scale_gran = GRAN_1X128};
    w.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    x = gemm_group_wgrad_desc(&w, 2, 3, 1, 200);
    CHECK_EQ_U64(x.k, 200);
    CHECK(x.a.ptr == a + 3 && x.a.ld == 203 && x.b.ptr == b + 3 && x.b.ld == 203);
    CHECK(x.a.scale_inv == sa + 16 * 1 && x.b.scale_inv == sb + 8 * 1);
    CHECK(x.d.ptr == (char *)d + 2 * 16 * 8 * 4);
    w.a.layout = w.b.layout = GEMM_K_OUTER, w.a.dtype = w.b.dtype = DT_BF16; /* (rows, M), (rows, N) */
    w.a.scale_inv = w.b.scale_inv = NULL;
    x = gemm_group_wgrad_desc(&w, 2, 3, 1, 200);
    CHECK(x.a.ptr == (char *)a + 3 * 16 * 2 && x.a.ld == 16 && x.b.ptr == (char *)b + 3 * 8 * 2 && x.b.ld == 8);
}

static void fill(Rng *r, void *p, Dtype dt, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) elem_store(p, dt, i, (float)rng_normal(r));
}

static void fill_scales(Rng *r, float *s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) s[i] = (float)(0.01 + 0.02 * rng_unit(r));
}

/* grouped_gemm against gemm() on gemm_group_desc's descriptors; the number of differing D bytes. */
static uint64_t grouped_vs_descs(Backend *bk, GroupedGemmDesc g)
{
    uint64_t db = g.rows * g.n * dtype_bytes(g.d.dtype), bad = 0;
    char *d1 = calloc(1, db), *d2 = calloc(1, db);
    CHECK(d1 && d2);
    Err e = {0};
    if (d1 && d2) {
        g.d.ptr = d1;
        CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
        g.d.ptr = d2;
        for (uint64_t x = 0, row0 = 0; x < g.groups; row0 += (uint64_t)g.counts[x], x++) {
            if (!g.counts[x]) continue;
            GemmDesc one = gemm_group_desc(&g, (uint32_t)x, row0, (uint64_t)g.counts[x]);
            CHECKF(bk->gemm(bk, &one, &e) == ST_OK, "group %llu: %s", (unsigned long long)x, e.msg);
        }
        for (uint64_t i = 0; i < db; i++) bad += d1[i] != d2[i];
    }
    free(d1), free(d2);
    return bad;
}

static uint64_t wgrad_vs_descs(Backend *bk, GroupedWgradDesc w)
{
    uint64_t db = (uint64_t)w.groups * w.m * w.n * dtype_bytes(w.d.dtype), bad = 0;
    char *d1 = calloc(1, db), *d2 = calloc(1, db);
    CHECK(d1 && d2);
    Err e = {0};
    if (d1 && d2) {
        w.d.ptr = d1;
        CHECKF(bk->grouped_gemm_wgrad(bk, &w, &e) == ST_OK, "%s", e.msg);
        w.d.ptr = d2;
        for (uint64_t x = 0, k0 = 0, t0 = 0; x < w.groups;
             k0 += (uint64_t)w.counts[x], t0 += gemm_group_tiles((uint64_t)w.counts[x]), x++) {
            if (!w.counts[x]) continue; /* calloc'd: the zero an empty group gets */
            GemmDesc one = gemm_group_wgrad_desc(&w, (uint32_t)x, k0, t0, (uint64_t)w.counts[x]);
            CHECKF(bk->gemm(bk, &one, &e) == ST_OK, "group %llu: %s", (unsigned long long)x, e.msg);
        }
        for (uint64_t i = 0; i < db; i++) bad += d1[i] != d2[i];
    }
    free(d1), free(d2);
    return bad;
}

static void test_descs_equal_grouped(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    if (!bk) return;
    enum { G = 5, N = 64, K = 160, ROWS = 1 + 0 + 150 + 7 + 0 };
    static const int32_t counts[G] = {1, 0, 150, 7, 0};
    Rng r = {.s = 42};
    static uint8_t a[ROWS * K * 4], b[G * N * K * 4], at[K * ROWS * 4], bt[N * ROWS * 4];
    static float sa[ROWS * 2 + G], sb[G * N * 2 + G], sat[K * 4], sbt[N * 4];
    fill_scales(&r, sa, sizeof sa / sizeof *sa), fill_scales(&r, sb, sizeof sb / sizeof *sb);
    fill_scales(&r, sat, sizeof sat / sizeof *sat), fill_scales(&r, sbt, sizeof sbt / sizeof *sbt);
    const Dtype dts[3] = {DT_BF16, DT_FP32, DT_E4M3};
    for (int c = 0; c < 3; c++) {
        fill(&r, a, dts[c], ROWS * K), fill(&r, b, dts[c], (uint64_t)G * N * K);
        GroupedGemmDesc g = {.groups = G, .rows = ROWS, .n = N, .k = K, .counts = counts};
        g.a = (GemmOperand){.ptr = a, .dtype = dts[c]};
        g.b = (GemmOperand){.ptr = b, .dtype = dts[c]};
        g.d = (GemmOutput){.dtype = DT_FP32};
        if (dts[c] == DT_E4M3) g.a.scale_inv = sa, g.b.scale_inv = sb; /* per tensor: one per group */
        CHECKF(grouped_vs_descs(bk, g) == 0, "%s", dtype_name(dts[c]));
        if (dts[c] != DT_E4M3) { /* the dgrad form: B stored (K, N) */
            g.b.layout = GEMM_K_OUTER;
            CHECKF(grouped_vs_descs(bk, g) == 0, "%s, B k-outer", dtype_name(dts[c]));
            continue;
        }
        g.a.scale_gran = g.b.scale_gran = GRAN_1X128; /* DeepSeek-V3's: 1x128 activations, 128x128 weights */
        g.acc_precision = GEMM_ACC_TC14;
        CHECK(grouped_vs_descs(bk, g) == 0);
        g.b.scale_gran = GRAN_128X128;
        CHECK(grouped_vs_descs(bk, g) == 0);
    }
    /* weight gradients: BF16 K-outer (rows, M) x (rows, N); E4M3 transposed copies with 1x128 tiles along K */
    fill(&r, at, DT_BF16, (uint64_t)K * ROWS), fill(&r, bt, DT_BF16, (uint64_t)N * ROWS);
    GroupedWgradDesc w = {.groups = G, .rows = ROWS, .m = K, .n = N, .counts = counts};
    w.a = (GemmOperand){.ptr = at, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    w.b = (GemmOperand){.ptr = bt, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    w.d = (GemmOutput){.dtype = DT_FP32};
    CHECK(wgrad_vs_descs(bk, w) == 0);
    fill(&r, at, DT_E4M3, (uint64_t)K * ROWS), fill(&r, bt, DT_E4M3, (uint64_t)N * ROWS);
    w.a = (GemmOperand){.ptr = at, .dtype = DT_E4M3, .scale_inv = sat, .scale_gran = GRAN_1X128};
    w.b = (GemmOperand){.ptr = bt, .dtype = DT_E4M3, .scale_inv = sbt, .scale_gran = GRAN_1X128};
    w.acc_precision = GEMM_ACC_TC14;
    CHECK(wgrad_vs_descs(bk, w) == 0);
    bk->destroy(bk);
}

static void test_counts_check(void)
{
    Err e;
    const int32_t ok[3] = {2, 0, 5}, neg[3] = {2, -1, 6};
    CHECK_EQ_INT(gemm_group_counts_check(ok, 3, 7, "grouped_gemm", &e), ST_OK);
    CHECK_EQ_INT(gemm_group_counts_check(ok, 3, 8, "grouped_gemm", &e), ST_USAGE);
    CHECK_STR(e.msg, "grouped_gemm: the counts add up to 7 rows, the descriptor has 8");
    CHECK_EQ_INT(gemm_group_counts_check(neg, 3, 7, "grouped_gemm_wgrad", &e), ST_USAGE);
    CHECK_STR(e.msg, "grouped_gemm_wgrad: group 1 has -1 rows");
}

int main(void)
{
    RUN(test_desc_by_hand);
    RUN(test_descs_equal_grouped);
    RUN(test_counts_check);
    return test_summary();
}
