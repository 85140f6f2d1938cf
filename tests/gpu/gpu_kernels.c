/* tests/gpu/gpu_kernels.c — the CUDA backend's GEMMs, quantization and scaling
 * kernels against the CPU reference backend, on fresh random data (the layers,
 * optimizers and collectives: gpu_nn.c).
 *
 *   gpu_kernels [CSV] [SEED]     exit 0 all pass, 1 a check failed, 69 no GPU
 *
 * Tolerances (gpu_common.h for the rule):
 *  - exact: casts, conversions, amax and the scaling updates run the same IEEE operations in the same order on both sides
 *    (exec/backend/kernel_math.h; FP8/BF16 conversions are RNE on both), so values
 *    must be identical;
 *  - GEMM, BF16 output: both sides form exact products summed in FP32 (in
 *    different orders, a difference far below a BF16 ulp) and round once, so
 *    two results are at most one BF16 ulp apart (2^-7 relative); outputs
 *    near zero from cancellation get one ulp of the tensor's rms;
 *  - GEMM, FP32 output: only the summation order differs: ≈ K·2^-24·rms
 *    statistically, allowed 2^-12·rms (8× wider for K ≤ 1024);
 *  - FP8 GEMM with fast accumulation: Hopper's FP8 MMA keeps a 13-bit running
 *    sum per k = 32 slice: a walk of 2^-13·√(K/32) and a truncation drift of
 *    2^-14·K/32 of the output rms, on top of the BF16 rounding (tol_fast,
 *    derived in gpu_tol.h and checked against an emulation in
 *    tests/unit/test_gpu_tol.c);
 *  - FP8 GEMM without fast accumulation, FP32 output: the same running sum
 *    promoted to FP32 at least every k = 128 (tol_split_f32);
 *  - block-scaled casts (1x128, 128x128): exact, codes and scales; block-scaled
 *    FP8 GEMMs: tol_block_bf16 (BF16 output), tol_split_f32 (FP32 output);
 *  - FP8 output: one FP8 step where the FP32 sums straddle a rounding
 *    boundary — 2^-3 relative for normal E4M3 values, one subnormal step
 *    (2^-9) absolute below them; rare, so norm ≤ 2^-6 (tol_fp8_out). */
#include "fp8/codec.h"
#include "gpu_common.h"

static const Tol TOL_GEMM_BF16 = {0x1p-7, 0x1p-7, 0x1p-8, "one BF16 ulp apart after one rounding on each side", 0.0};
static const Tol TOL_GEMM_F32 = {0.0, 0x1p-12, 0x1p-14, "FP32 sums in another order, <= 2^-12 rms", 0.0};
static const Tol TOL_GEMM_2ROUND = {0x1p-6, 0x1p-7, 0x1p-7, "bias added after a BF16 rounding: two roundings", 0.0};

/* ---- GEMM ------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    uint64_t m, n, k;
    Dtype ta, tb, td;
    GemmLayout la, lb;
    uint64_t pad; /* extra leading-dimension elements */
    GemmAccum acc;
    GemmAccPrecision ap;
    Dtype bias; /* DT_NONE: no bias */
    int amax;
    Tol tol;
} GemmCase;

/* Operand values: N(0,1); FP8 ones quantized with a per-tensor scale (amax → fmax/2). */
static void *operand(Gc *g, Dtype dt, uint64_t n, float *scale_inv)
{
    *scale_inv = 1.0f;
    if (!dtype_is_fp8(dt)) return gc_randn(g, dt, n, 1.0);
    float *x = gc_randn(g, DT_FP32, n, 1.0), amax = 0.0f;
    for (uint64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    float s = 0.5f * fp8_max(dt) / amax;
    uint8_t *q = gc_halloc(n);
    for (uint64_t i = 0; i < n; i++) elem_store(q, dt, i, x[i] * s);
    *scale_inv = 1.0f / s;
    free(x);
    return q;
}

static void gemm_case(Gc *g, const GemmCase *c)
{
    uint64_t lda = (c->la == GEMM_K_INNER ? c->k : c->m) + c->pad, ldb = (c->lb == GEMM_K_INNER ? c->k : c->n) + c->pad;
    uint64_t ldd = c->n + (dtype_is_fp8(c->ta) ? 0 : c->pad);
    uint64_t na = (c->la == GEMM_K_INNER ? c->m : c->k) * lda, nb = (c->lb == GEMM_K_INNER ? c->n : c->k) * ldb;
    uint64_t nd = c->m * ldd, bd = dtype_bytes(c->td);
    float sa, sb, dscale = 0.25f, amax_c = 0.0f, amax_g = 0.0f;
    void *a = operand(g, c->ta, na, &sa), *b = operand(g, c->tb, nb, &sb);
    void *d_c = gc_randn(g, c->td, nd, 4.0), *d_g = gc_halloc(nd * bd);
    void *bias = c->bias != DT_NONE ? gc_randn(g, c->bias, c->n, 1.0) : NULL;
    memcpy(d_g, d_c, nd * bd);
    /* device copies */
    void *da = gc_dup(g, a, na * dtype_bytes(c->ta)), *db = gc_dup(g, b, nb * dtype_bytes(c->tb));
    void *dd = gc_dup(g, d_c, nd * bd), *dbias = bias ? gc_dup(g, bias, c->n * dtype_bytes(c->bias)) : NULL;
    float *dsc = gc_dup(g, (float[4]){sa, sb, dscale, 0.0f}, 4 * sizeof(float));
    if (c->acc == GEMM_OVERWRITE) { /* poison the m × n output; the padding between rows must stay as it was */
        unsigned char *p = gc_halloc(nd * bd);
        memcpy(p, d_c, nd * bd);
        for (uint64_t i = 0; i < c->m; i++) memset(p + i * ldd * bd, 0xff, c->n * bd);
        gc_put(g, dd, p, nd * bd);
        free(p);
    }
    GemmDesc desc = {.m = c->m, .n = c->n, .k = c->k, .accum = c->acc, .acc_precision = c->ap, .bias_dtype = c->bias};
    int fp8 = dtype_is_fp8(c->ta);
    /* CPU */
    desc.a = (GemmOperand){.ptr = a, .dtype = c->ta, .layout = c->la, .ld = lda, .scale_inv = fp8 ? &sa : NULL};
    desc.b = (GemmOperand){.ptr = b, .dtype = c->tb, .layout = c->lb, .ld = ldb, .scale_inv = fp8 ? &sb : NULL};
    desc.d = (GemmOutput){.ptr = d_c,
                          .dtype = c->td,
                          .ld = ldd,
                          .scale = dtype_is_fp8(c->td) ? &dscale : NULL,
                          .amax = c->amax ? &amax_c : NULL};
    desc.bias = bias;
    GC_OK(g, g->cpu->gemm(g->cpu, &desc, GE));
    /* GPU */
    desc.a.ptr = da;
    desc.a.scale_inv = fp8 ? dsc : NULL;
    desc.b.ptr = db;
    desc.b.scale_inv = fp8 ? dsc + 1 : NULL;
    desc.d.ptr = dd;
    desc.d.scale = dtype_is_fp8(c->td) ? dsc + 2 : NULL;
    desc.d.amax = c->amax ? dsc + 3 : NULL;
    desc.bias = dbias;
    GC_OK(g, g->gpu->gemm(g->gpu, &desc, GE));
    gc_get(g, d_g, dd, nd * bd);
    char cas[128];
    snprintf(cas, sizeof cas, "%s %llux%llux%llu %s%s", c->name, (unsigned long long)c->m, (unsigned long long)c->n,
             (unsigned long long)c->k, c->la == GEMM_K_INNER ? "K" : "k", c->lb == GEMM_K_INNER ? "K" : "k");
    gc_check(g, "gemm", cas, c->td, d_g, d_c, nd, c->tol);
    if (c->amax) {
        float got[4];
        gc_get(g, got, dsc, sizeof got);
        amax_g = got[3];
        /* BF16 output: the GPU's amax is of the rounded values (one BF16 rounding, 2^-8) */
        Tol t = dtype_is_fp8(c->td) ? TOL_GEMM_F32 : (Tol){U_BF16, 0.0, U_BF16, "amax of BF16-rounded outputs", 0.0};
        gc_check(g, "gemm amax", cas, DT_FP32, &amax_g, &amax_c, 1, t);
    }
    gc_dfree(g, da);
    gc_dfree(g, db);
    gc_dfree(g, dd);
    gc_dfree(g, dsc);
    if (dbias) gc_dfree(g, dbias);
    free(a);
    free(b);
    free(d_c);
    free(d_g);
    free(bias);
}

static void check_gemms(Gc *g)
{
    const GemmLayout KI = GEMM_K_INNER, KO = GEMM_K_OUTER;
    GemmCase cs[] = {
        {"bf16", 256, 384, 512, DT_BF16, DT_BF16, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, 0, DT_NONE, 0, TOL_GEMM_BF16},
        {"bf16 pad", 200, 136, 264, DT_BF16, DT_BF16, DT_BF16, KI, KO, 8, GEMM_OVERWRITE, 0, DT_NONE, 0, TOL_GEMM_BF16},
        {"bf16 dgrad", 256, 128, 384, DT_BF16, DT_BF16, DT_BF16, KI, KO, 0, GEMM_OVERWRITE, 0, DT_NONE, 0,
         TOL_GEMM_BF16},
        {"bf16 wgrad acc", 192, 128, 256, DT_BF16, DT_BF16, DT_FP32, KO, KO, 0, GEMM_ACCUMULATE, 0, DT_NONE, 0,
         TOL_GEMM_F32},
        {"bf16 kouter a", 96, 160, 128, DT_BF16, DT_BF16, DT_BF16, KO, KI, 4, GEMM_OVERWRITE, 0, DT_NONE, 0,
         TOL_GEMM_BF16},
        {"bf16 bias", 256, 384, 512, DT_BF16, DT_BF16, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, 0, DT_BF16, 1,
         TOL_GEMM_BF16},
        {"bf16 f32bias", 128, 256, 256, DT_BF16, DT_BF16, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, 0, DT_FP32, 0,
         TOL_GEMM_2ROUND},
        {"fp32out bias", 128, 256, 256, DT_BF16, DT_BF16, DT_FP32, KI, KI, 0, GEMM_OVERWRITE, 0, DT_FP32, 0,
         TOL_GEMM_F32},
        {"e4m3 fprop split", 256, 384, 512, DT_E4M3, DT_E4M3, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, GEMM_ACC_SPLIT,
         DT_NONE, 0, TOL_GEMM_BF16},
        {"e4m3 fprop fast", 256, 384, 512, DT_E4M3, DT_E4M3, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, GEMM_ACC_FAST, DT_BF16,
         0, tol_fast(512)},
        {"e5m2xe4m3 dgrad", 256, 128, 384, DT_E5M2, DT_E4M3, DT_BF16, KI, KI, 0, GEMM_OVERWRITE, GEMM_ACC_SPLIT,
         DT_NONE, 0, TOL_GEMM_BF16},
        {"e5m2xe4m3 wgrad", 384, 128, 256, DT_E5M2, DT_E4M3, DT_FP32, KI, KI, 0, GEMM_ACCUMULATE, GEMM_ACC_SPLIT,
         DT_NONE, 0, tol_split_f32(256)},
        {"e4m3 out", 128, 256, 256, DT_E4M3, DT_E4M3, DT_E4M3, KI, KI, 0, GEMM_OVERWRITE, GEMM_ACC_SPLIT, DT_NONE, 1,
         tol_fp8_out(DT_E4M3)},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) gemm_case(g, &cs[i]);
}

/* ---- cast + transpose + amax --------------------------------------------------------------- */

static void cast_case(Gc *g, const char *name, Dtype in_dt, uint64_t R, uint64_t C, Dtype fmt, int row, int col,
                      int dequant)
{
    uint64_t n = R * C, ib = dtype_bytes(in_dt);
    void *in = gc_randn(g, in_dt, n, 3.0);
    float sc[3] = {0.5f * fp8_max(fmt) / 9.0f, 0.0f, 0.0f}, dq = 0.125f; /* scale, scale_inv, amax */
    uint8_t *rc = row ? gc_halloc(n) : NULL, *cc = col ? gc_halloc(n) : NULL;
    uint8_t *rg = row ? gc_halloc(n) : NULL, *cg = col ? gc_halloc(n) : NULL;
    float sc_c[3];
    memcpy(sc_c, sc, sizeof sc);
    CastDesc d = {.in = in,
                  .in_dtype = in_dt,
                  .in_scale_inv = dequant ? &dq : NULL,
                  .rows = R,
                  .cols = C,
                  .out_dtype = fmt,
                  .out_row = rc,
                  .out_col = cc,
                  .scale = (row || col) ? &sc_c[0] : NULL,
                  .scale_inv = &sc_c[1],
                  .amax = &sc_c[2]};
    GC_OK(g, g->cpu->cast_transpose(g->cpu, &d, GE));
    void *din = gc_dup(g, in, n * ib), *drow = row ? gc_dalloc(g, n) : NULL, *dcol = col ? gc_dalloc(g, n) : NULL;
    float *dsc = gc_dup(g, sc, sizeof sc), *ddq = gc_dup(g, &dq, sizeof dq);
    if (drow) gc_poison(g, drow, n);
    if (dcol) gc_poison(g, dcol, n);
    d.in = din;
    d.in_scale_inv = dequant ? ddq : NULL;
    d.out_row = drow;
    d.out_col = dcol;
    d.scale = (row || col) ? dsc : NULL;
    d.scale_inv = dsc + 1;
    d.amax = dsc + 2;
    GC_OK(g, g->gpu->cast_transpose(g->gpu, &d, GE));
    float sg[3];
    gc_get(g, sg, dsc, sizeof sg);
    char cas[96];
    snprintf(cas, sizeof cas, "%s %s %llux%llu -> %s", name, dtype_name(in_dt), (unsigned long long)R,
             (unsigned long long)C, dtype_name(fmt));
    if (row) {
        gc_get(g, rg, drow, n);
        gc_check(g, "cast row", cas, fmt, rg, rc, n, TOL_EXACT);
    }
    if (col) {
        gc_get(g, cg, dcol, n);
        gc_check(g, "cast col", cas, fmt, cg, cc, n, TOL_EXACT);
    }
    gc_check(g, "cast amax", cas, DT_FP32, &sg[2], &sc_c[2], 1, TOL_EXACT);
    if (row || col) gc_check(g, "cast scale_inv", cas, DT_FP32, &sg[1], &sc_c[1], 1, TOL_EXACT);
    gc_dfree(g, din);
    if (drow) gc_dfree(g, drow);
    if (dcol) gc_dfree(g, dcol);
    gc_dfree(g, dsc);
    gc_dfree(g, ddq);
    free(in);
    free(rc);
    free(cc);
    free(rg);
    free(cg);
}

static void check_casts(Gc *g)
{
    cast_case(g, "tiles", DT_BF16, 256, 384, DT_E4M3, 1, 1, 0);
    cast_case(g, "grid-stride", DT_BF16, gc_n(g, 8192, 512), gc_n(g, 4096, 256), DT_E4M3, 1, 1, 0);
    cast_case(g, "edges", DT_FP32, 100, 70, DT_E5M2, 1, 1, 0);
    cast_case(g, "col only", DT_FP16, 64, 144, DT_E4M3, 0, 1, 0);
    cast_case(g, "flat", DT_FP32, 1, gc_n(g, (1u << 20) + 3, 65539), DT_E5M2, 1, 0, 1);
    cast_case(g, "amax only", DT_BF16, 333, 77, DT_E4M3, 0, 0, 1);
}

/* ---- block-scaled casts and GEMMs (DeepSeek-V3) ---------------------------------------------------------
 * The casts (exec/cuda/k_quant_block.cu) must equal the CPU's block by block, codes and FP32 scales (exact:
 * same amax, same division, same RNE). The GEMMs (cuBLASLt's VEC128_32F / BLK128x128_32F scales, from the
 * scales relaid out in exec/cuda/gemm_lt.cu) against the CPU's FP32 block sums (GEMM_ACC_SPLIT, which the
 * model's GEMM_ACC_TC14 maps to on the GPU: the tensor core's own accumulation): tol_block_bf16. */

static uint64_t nscales(Granularity gr, uint64_t rows, uint64_t cols)
{
    return (gr == GRAN_128X128 ? (rows + 127) / 128 : rows) * ((cols + 127) / 128);
}

static void block_cast_case(Gc *g, const char *name, Dtype in_dt, uint64_t R, uint64_t C, Granularity gr, int row,
                            int col, uint64_t col_ld)
{
    const uint64_t n = R * C, ib = dtype_bytes(in_dt), ldc = col_ld ? col_ld : R, ncol = C * ldc;
    const uint64_t nr = nscales(gr, R, C), nc = nscales(gr, C, R);
    float *x = gc_randn(g, DT_FP32, n, 3.0);
    for (uint64_t j = 0; j < C && R > 2; j++) x[j] = 0.0f; /* a zero row: 1x128 tiles of scale 1 */
    if (n > 300) x[n - 300] = INFINITY;                    /* an infinite amax: scale 1, saturated codes */
    void *in = gc_halloc(n * ib);
    for (uint64_t i = 0; i < n; i++) elem_store(in, in_dt, i, x[i]);
    uint8_t *rc = gc_halloc(n), *cc = gc_halloc(ncol), *rg = gc_halloc(n), *cg = gc_halloc(ncol);
    float *src = gc_halloc(nr * 4), *scc = gc_halloc(nc * 4), *srg = gc_halloc(nr * 4), *scg = gc_halloc(nc * 4);
    memset(cc, 0, ncol);
    CastDesc d = {
        .in = in, .in_dtype = in_dt, .rows = R, .cols = C, .out_dtype = DT_E4M3, .col_ld = col_ld, .gran = gr};
    d.out_row = row ? rc : NULL, d.out_col = col ? cc : NULL;
    d.row_scale_inv = row ? src : NULL, d.col_scale_inv = col ? scc : NULL;
    GC_OK(g, g->cpu->cast_transpose(g->cpu, &d, GE));
    void *din = gc_dup(g, in, n * ib), *drow = gc_dalloc(g, n), *dcol = gc_dalloc(g, ncol);
    float *dsr = gc_dalloc(g, nr * 4), *dsc = gc_dalloc(g, nc * 4);
    gc_poison(g, drow, n);
    gc_put(g, dcol, cc, ncol); /* the rows' padding past R stays as it was */
    gc_poison(g, dsr, nr * 4);
    gc_poison(g, dsc, nc * 4);
    d.in = din, d.out_row = row ? drow : NULL, d.out_col = col ? dcol : NULL;
    d.row_scale_inv = row ? dsr : NULL, d.col_scale_inv = col ? dsc : NULL;
    GC_OK(g, g->gpu->cast_transpose(g->gpu, &d, GE));
    char cas[96];
    snprintf(cas, sizeof cas, "%s %s %llux%llu %s", name, dtype_name(in_dt), (unsigned long long)R,
             (unsigned long long)C, gran_name(gr));
    if (row) {
        gc_get(g, rg, drow, n);
        gc_get(g, srg, dsr, nr * 4);
        gc_check(g, "block cast row", cas, DT_E4M3, rg, rc, n, TOL_EXACT);
        gc_check(g, "block cast row scale_inv", cas, DT_FP32, srg, src, nr, TOL_EXACT);
    }
    if (col) {
        gc_get(g, cg, dcol, ncol);
        gc_get(g, scg, dsc, nc * 4);
        gc_check(g, "block cast col", cas, DT_E4M3, cg, cc, ncol, TOL_EXACT);
        gc_check(g, "block cast col scale_inv", cas, DT_FP32, scg, scc, nc, TOL_EXACT);
    }
    gc_dfree(g, din), gc_dfree(g, drow), gc_dfree(g, dcol), gc_dfree(g, dsr), gc_dfree(g, dsc);
    free(x), free(in), free(rc), free(cc), free(rg), free(cg), free(src), free(scc), free(srg), free(scg);
}

/* An (rows, k) E4M3 operand of N(0,1) values with its block scales, quantized by the CPU reference. */
static uint8_t *block_operand_of(Gc *g, uint64_t rows, uint64_t k, Granularity gr, float **sinv)
{
    float *x = gc_randn(g, DT_FP32, rows * k, 1.0);
    uint8_t *q = gc_halloc(rows * k);
    *sinv = gc_halloc(nscales(gr, rows, k) * 4);
    CastDesc d = {.in = x,
                  .in_dtype = DT_FP32,
                  .rows = rows,
                  .cols = k,
                  .out_dtype = DT_E4M3,
                  .out_row = q,
                  .gran = gr,
                  .row_scale_inv = *sinv};
    GC_OK(g, g->cpu->cast_transpose(g->cpu, &d, GE));
    free(x);
    return q;
}

static void block_gemm_case(Gc *g, const char *name, uint64_t m, uint64_t n, uint64_t k, Granularity gb, Dtype td,
                            GemmAccum acc, Tol tol)
{
    float *sa = NULL, *sb = NULL;
    uint8_t *a = block_operand_of(g, m, k, GRAN_1X128, &sa), *b = block_operand_of(g, n, k, gb, &sb);
    const uint64_t nd = m * n, bd = dtype_bytes(td), na = nscales(GRAN_1X128, m, k), nb = nscales(gb, n, k);
    void *d_c = gc_randn(g, td, nd, 4.0), *d_g = gc_halloc(nd * bd);
    void *da = gc_dup(g, a, m * k), *db = gc_dup(g, b, n * k), *dd = gc_dup(g, d_c, nd * bd);
    float *dsa = gc_dup(g, sa, na * 4), *dsb = gc_dup(g, sb, nb * 4);
    if (acc == GEMM_OVERWRITE) gc_poison(g, dd, nd * bd);
    GemmDesc desc = {.m = m, .n = n, .k = k, .accum = acc, .acc_precision = GEMM_ACC_SPLIT};
    desc.a = (GemmOperand){.ptr = a, .dtype = DT_E4M3, .scale_inv = sa, .scale_gran = GRAN_1X128};
    desc.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = sb, .scale_gran = gb};
    desc.d = (GemmOutput){.ptr = d_c, .dtype = td};
    GC_OK(g, g->cpu->gemm(g->cpu, &desc, GE));
    desc.a.ptr = da, desc.a.scale_inv = dsa, desc.b.ptr = db, desc.b.scale_inv = dsb, desc.d.ptr = dd;
    GC_OK(g, g->gpu->gemm(g->gpu, &desc, GE));
    gc_get(g, d_g, dd, nd * bd);
    char cas[128];
    snprintf(cas, sizeof cas, "%s %llux%llux%llu 1x128 x %s -> %s%s", name, (unsigned long long)m,
             (unsigned long long)n, (unsigned long long)k, gran_name(gb), dtype_name(td),
             acc == GEMM_ACCUMULATE ? " +=" : "");
    gc_check(g, "block gemm", cas, td, d_g, d_c, nd, tol);
    gc_dfree(g, da), gc_dfree(g, db), gc_dfree(g, dd), gc_dfree(g, dsa), gc_dfree(g, dsb);
    free(a), free(b), free(sa), free(sb), free(d_c), free(d_g);
}

static void check_blocks(Gc *g)
{
    block_cast_case(g, "tiles", DT_BF16, 256, 384, GRAN_1X128, 1, 1, 0);
    block_cast_case(g, "edges", DT_FP32, 200, 300, GRAN_1X128, 1, 1, 0);
    block_cast_case(g, "expert slice", DT_BF16, 72, 160, GRAN_1X128, 0, 1, 136); /* col_ld past the rows */
    block_cast_case(g, "weight", DT_FP32, 384, 256, GRAN_128X128, 1, 1, 0);
    block_cast_case(g, "weight edges", DT_BF16, 300, 260, GRAN_128X128, 1, 1, 0);
    block_gemm_case(g, "fprop", 256, 384, 512, GRAN_128X128, DT_BF16, GEMM_OVERWRITE, tol_block_bf16(512));
    block_gemm_case(g, "dgrad edges", 200, 272, 384, GRAN_128X128, DT_BF16, GEMM_OVERWRITE, tol_block_bf16(384));
    block_gemm_case(g, "wgrad", 384, 128, 256, GRAN_1X128, DT_FP32, GEMM_ACCUMULATE, tol_split_f32(256));
}

/* ---- convert, amax ------------------------------------------------------------------------------ */

static void convert_case(Gc *g, Dtype from, Dtype to, uint64_t n, float scale)
{
    void *in = gc_randn(g, from, n, dtype_is_fp8(from) ? 100.0 : 2000.0);
    void *oc = gc_halloc(n * dtype_bytes(to)), *og = gc_halloc(n * dtype_bytes(to));
    GC_OK(g, g->cpu->convert(g->cpu, in, from, oc, to, n, &scale, GE));
    void *din = gc_dup(g, in, n * dtype_bytes(from)), *dout = gc_dalloc(g, n * dtype_bytes(to));
    float *ds = gc_dup(g, &scale, sizeof scale);
    gc_poison(g, dout, n * dtype_bytes(to));
    GC_OK(g, g->gpu->convert(g->gpu, din, from, dout, to, n, ds, GE));
    gc_get(g, og, dout, n * dtype_bytes(to));
    char cas[64];
    snprintf(cas, sizeof cas, "%s -> %s x%g", dtype_name(from), dtype_name(to), scale);
    gc_check(g, "convert", cas, to, og, oc, n, TOL_EXACT);
    gc_dfree(g, din);
    gc_dfree(g, dout);
    gc_dfree(g, ds);
    free(in);
    free(oc);
    free(og);
}

static void check_convert_amax(Gc *g)
{
    convert_case(g, DT_FP32, DT_BF16, gc_n(g, 1000003, 65537), 1.0f);
    convert_case(g, DT_BF16, DT_FP32, gc_n(g, 1000003, 65537), 1.0f);
    convert_case(g, DT_E4M3, DT_FP32, 65537, 0.03125f);
    convert_case(g, DT_FP32, DT_E5M2, 65537, 64.0f); /* includes saturating values */
    uint64_t n = gc_n(g, 3000001, 65539);
    void *x = gc_randn(g, DT_BF16, n, 5.0);
    float a_c[2] = {0.0f, 1e6f}, a_g[2];
    GC_OK(g, g->cpu->amax(g->cpu, x, DT_BF16, n, &a_c[0], GE));
    GC_OK(g, g->cpu->amax(g->cpu, x, DT_BF16, n, &a_c[1], GE));
    void *dx = gc_dup(g, x, n * 2);
    float *da = gc_dup(g, (float[2]){0.0f, 1e6f}, sizeof a_g);
    GC_OK(g, g->gpu->amax(g->gpu, dx, DT_BF16, n, da, GE));
    GC_OK(g, g->gpu->amax(g->gpu, dx, DT_BF16, n, da + 1, GE));
    gc_get(g, a_g, da, sizeof a_g);
    char cas[64];
    snprintf(cas, sizeof cas, "bf16 %llu, and max-combined with 1e6", (unsigned long long)n);
    gc_check(g, "amax", cas, DT_FP32, a_g, a_c, 2, TOL_EXACT);
    gc_dfree(g, dx);
    gc_dfree(g, da);
    free(x);
}

/* ---- scaling ------------------------------------------------------------------------------------ */

static void delayed_case(Gc *g, uint32_t n, uint32_t len, AmaxAlgo algo, int margin, Dtype fmt)
{
    uint64_t nh = (uint64_t)len * n;
    float *h = gc_halloc(nh * 4), *s = gc_halloc(n * 4), *hg = gc_halloc(nh * 4), *sg = gc_halloc(n * 4);
    for (uint64_t i = 0; i < nh; i++) h[i] = (float)(rng_unit(&g->rng) * 10.0);
    for (uint32_t i = 0; i < n; i++) {
        s[i] = (float)(rng_unit(&g->rng) * 100.0);
        h[i] = i % 5 == 1 ? 640.0f : i % 5 == 2 ? 0.0f : h[i] + 0.5f;     /* a spike in some; some did not run */
        if (i % 7 == 3 && len > 1) h[(uint64_t)(len - 1) * n + i] = 1e4f; /* an old spike leaving the window */
    }
    float *dh = gc_dup(g, h, nh * 4), *ds = gc_dup(g, s, n * 4);
    ScalingBank b = {
        .n = n, .history_len = len, .algo = algo, .margin = margin, .fmt = fmt, .amax_history = h, .scale = s};
    GC_OK(g, g->cpu->scaling_delayed_update(g->cpu, &b, GE));
    b.amax_history = dh;
    b.scale = ds;
    GC_OK(g, g->gpu->scaling_delayed_update(g->gpu, &b, GE));
    gc_get(g, hg, dh, nh * 4);
    gc_get(g, sg, ds, n * 4);
    char cas[96];
    snprintf(cas, sizeof cas, "n=%u len=%u %s margin %d %s", n, len, algo == AMAX_ALGO_MAX ? "max" : "most_recent",
             margin, dtype_name(fmt));
    gc_check(g, "delayed history", cas, DT_FP32, hg, h, nh, TOL_EXACT);
    gc_check(g, "delayed scale", cas, DT_FP32, sg, s, n, TOL_EXACT);
    gc_dfree(g, dh);
    gc_dfree(g, ds);
    free(h);
    free(s);
    free(hg);
    free(sg);
}

static void check_scaling(Gc *g)
{
    delayed_case(g, 24, 16, AMAX_ALGO_MAX, 0, DT_E4M3);
    delayed_case(g, 24, 16, AMAX_ALGO_MOST_RECENT, 1, DT_E5M2);
    delayed_case(g, 64, 1024, AMAX_ALGO_MAX, 0, DT_E4M3); /* TE's default window: rolls in 4 chunks */
    delayed_case(g, 5, 1, AMAX_ALGO_MAX, 0, DT_E5M2);
    float amax[12] = {0.0f, 1e-45f, 1e-20f, 0.5f, 1.0f, 448.0f, 640.0f, 57344.0f, 1e30f, INFINITY, NAN, 3.0f};
    float sc[12], sg[12];
    GC_OK(g, g->cpu->scaling_from_amax(g->cpu, 12, DT_E4M3, 0, amax, sc, GE));
    float *da = gc_dup(g, amax, sizeof amax), *ds = gc_dalloc(g, sizeof sg);
    gc_poison(g, ds, sizeof sg);
    GC_OK(g, g->gpu->scaling_from_amax(g->gpu, 12, DT_E4M3, 0, da, ds, GE));
    gc_get(g, sg, ds, sizeof sg);
    gc_check(g, "current scaling", "0, tiny, Inf, NaN, 640, ...", DT_FP32, sg, sc, 12, TOL_EXACT);
    gc_dfree(g, da);
    gc_dfree(g, ds);
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_kernels", argc, argv);
    Gc g;
    gc_init_check(&g, "gpu_kernels", argc, argv);
    check_gemms(&g);
    check_casts(&g);
    check_blocks(&g);
    check_convert_amax(&g);
    check_scaling(&g);
    return gc_finish(&g);
}
