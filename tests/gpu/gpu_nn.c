/* tests/gpu/gpu_nn.c — the CUDA backend's layer kernels (layer norm and
 * RMSNorm, multi-head and grouped-query attention, the rotary embedding, GELU
 * and SwiGLU, residual add, bias gradient, embeddings, cross-entropy) against
 * the CPU reference backend, on fresh random data.
 *
 *   gpu_nn [CSV] [SEED]     exit 0 all pass, 1 a check failed, 69 no GPU
 *
 * Tolerances (gpu_common.h for the rule), each from where the two sides differ:
 *  - exact: residual add, embeddings (the GPU sums each row's gradients in
 *    the CPU's order) and the rotary embedding (the same table, the same
 *    per-element arithmetic);
 *  - BF16 outputs of FP32 arithmetic whose reductions run in another order
 *    (layer norm, softmax, attention, cross-entropy gradient): the FP32 values
 *    differ far below a BF16 ulp, each side rounds once: one BF16 ulp (2^-7
 *    relative), plus 2^-12 of the tensor's rms for values near zero;
 *  - FP32 statistics over C = 768 values (mean, rstd, loss): γ_C = C·2^-24 ≈ 2^-14.4,
 *    allowed 2^-13 relative;
 *  - FP32 column sums over R rows (dweight, dbias, bias_grad): ~R·2^-24·rms
 *    statistically, allowed 2^-11·rms;
 *  - GELU: CUDA's tanhf is within 2 ulp, glibc's within 1; where 1 + tanh cancels
 *    (x ≪ 0) that is an absolute 3·2^-24·|x|/2, allowed 2^-19·rms; SwiGLU's
 *    expf likewise (σ(x) = 1/(1 + e^-x) carries e^-x's 2 ulp), the same bound;
 *  - attention forward: probs as above; out = P·V is checked against P·V of
 *    the GPU's own probs (in double, rounded once), since a prob that rounds
 *    one BF16 step apart on the two sides moves out by up to 2^-8·p·|v|, which
 *    no bound on out alone covers (seen with grouped-query heads on an H200);
 *  - attention backward: the GPU rounds dS to BF16 before its dQ and dK GEMMs
 *    (FlashAttention does too): each element gets, besides one BF16 ulp, its
 *    own worst case 2^-8·Σ|dS|·|K| (dQ) or 2^-8·Σ|dS|·|Q| (dK), worked from the
 *    inputs in double (attn_ds_bound); dV has no dS. Grouped-query heads sum
 *    their shares in FP32 and round once, as the CPU does. */
#include "gpu_common.h"

static const Tol TOL_BF16_OUT = {0x1p-7, 0x1p-12, 0x1p-8, "one BF16 ulp after FP32 math in another order", 0.0};
static const Tol TOL_STAT = {0x1p-13, 0.0, 0x1p-13, "FP32 reduction over C=768 in another order", 0.0};
static const Tol TOL_COLSUM = {0.0, 0x1p-11, 0x1p-13, "FP32 column sums over R rows in another order", 0.0};
static const Tol TOL_GELU = {0x1p-7, 0x1p-19, 0x1p-8, "BF16 ulp, tanhf ulps where 1 + tanh cancels", 0.0};
static const Tol TOL_ATTN_BWD = {0x1p-7, 0x1p-12, 0x1p-7, "one BF16 ulp + 2^-8 sum|dS||K or Q| (dS rounded to BF16)",
                                 0.0};
static const Tol TOL_LOSS = {0x1p-13, 0.0, 0x1p-13, "FP32 sum of V exponentials in another order", 0.0};
/* FP32 softmax gradient: each element is exp(x − m)/Σ·dloss on both sides; CUDA's expf is within
 * 2 ulp, glibc's 1, and the sum differs as TOL_LOSS's: the same 2^-13 relative. */
static const Tol TOL_XENT_F32 = {0x1p-13, 0.0, 0x1p-13, "FP32 softmax with V exponentials summed in another order",
                                 0.0};

/* ---- layer norm ------------------------------------------------------------------------------- */

static void check_norm(Gc *g, NormType norm)
{
    enum { R = 512, C = 768 };
    const int ln = norm == NORM_LAYERNORM;
    const char *nf = ln ? "layernorm_fwd" : "rmsnorm_fwd", *nb = ln ? "layernorm_bwd" : "rmsnorm_bwd";
    char name[64];
    uint16_t *x = gc_randn(g, DT_BF16, R * C, 1.0), *w = gc_randn(g, DT_BF16, C, 1.0);
    uint16_t *b = gc_randn(g, DT_BF16, C, 0.5), *dy = gc_randn(g, DT_BF16, R * C, 1.0);
    uint16_t *din_c = gc_randn(g, DT_BF16, R * C, 1.0), *din_g = gc_halloc(R * C * 2);
    for (int i = 0; i < R * C; i++) elem_store(x, DT_BF16, i, elem_load(x, DT_BF16, i) + 1.0f); /* mean ≈ 1 */
    uint16_t y_c[R * C], y_g[R * C];
    float mean_c[R], rstd_c[R], mean_g[R], rstd_g[R];
    float *dw_c = gc_randn(g, DT_FP32, C, 1.0), *db_c = gc_randn(g, DT_FP32, C, 1.0), dw_g[C], db_g[C];
    NormFwdDesc f = {.norm = norm,
                     .rows = R,
                     .cols = C,
                     .eps = 1e-5f,
                     .act_dtype = DT_BF16,
                     .weight_dtype = DT_BF16,
                     .in = x,
                     .weight = w,
                     .bias = ln ? b : NULL,
                     .out = y_c,
                     .mean = ln ? mean_c : NULL,
                     .rstd = rstd_c};
    GC_OK(g, g->cpu->norm_fwd(g->cpu, &f, GE));
    void *dx = gc_dup(g, x, sizeof y_c), *dwt = gc_dup(g, w, C * 2), *dbs = gc_dup(g, b, C * 2);
    void *dyv = gc_dalloc(g, sizeof y_c);
    float *dm = gc_dalloc(g, R * 4), *dr = gc_dalloc(g, R * 4);
    gc_poison(g, dyv, sizeof y_c);
    gc_poison(g, dm, R * 4);
    gc_poison(g, dr, R * 4);
    f.in = dx;
    f.weight = dwt;
    f.bias = ln ? dbs : NULL;
    f.out = dyv;
    f.mean = ln ? dm : NULL;
    f.rstd = dr;
    GC_OK(g, g->gpu->norm_fwd(g->gpu, &f, GE));
    gc_get(g, y_g, dyv, sizeof y_g);
    gc_get(g, mean_g, dm, sizeof mean_g);
    gc_get(g, rstd_g, dr, sizeof rstd_g);
    snprintf(name, sizeof name, "%s out", nf);
    gc_check(g, name, "512x768", DT_BF16, y_g, y_c, R * C, TOL_BF16_OUT);
    snprintf(name, sizeof name, "%s mean", nf);
    if (ln) gc_check(g, name, "512x768", DT_FP32, mean_g, mean_c, R, TOL_STAT);
    snprintf(name, sizeof name, "%s rstd", nf);
    gc_check(g, name, "512x768", DT_FP32, rstd_g, rstd_c, R, TOL_STAT);
    /* backward from the same statistics on both sides (the CPU's) */
    if (ln) gc_put(g, dm, mean_c, sizeof mean_c);
    gc_put(g, dr, rstd_c, sizeof rstd_c);
    void *ddy = gc_dup(g, dy, sizeof y_c), *ddin = gc_dup(g, din_c, sizeof y_c);
    float *ddw = gc_dup(g, dw_c, C * 4), *ddb = gc_dup(g, db_c, C * 4);
    NormBwdDesc bd = {.norm = norm,
                      .rows = R,
                      .cols = C,
                      .act_dtype = DT_BF16,
                      .weight_dtype = DT_BF16,
                      .in = x,
                      .weight = w,
                      .mean = ln ? mean_c : NULL,
                      .rstd = rstd_c,
                      .dout = dy,
                      .din = din_c,
                      .dweight = dw_c,
                      .dbias = ln ? db_c : NULL};
    GC_OK(g, g->cpu->norm_bwd(g->cpu, &bd, GE));
    bd.in = dx;
    bd.weight = dwt;
    bd.mean = ln ? dm : NULL;
    bd.rstd = dr;
    bd.dout = ddy;
    bd.din = ddin;
    bd.dweight = ddw;
    bd.dbias = ln ? ddb : NULL;
    GC_OK(g, g->gpu->norm_bwd(g->gpu, &bd, GE));
    gc_get(g, din_g, ddin, sizeof y_c);
    gc_get(g, dw_g, ddw, sizeof dw_g);
    gc_get(g, db_g, ddb, sizeof db_g);
    snprintf(name, sizeof name, "%s din (+=)", nb);
    gc_check(g, name, "512x768", DT_BF16, din_g, din_c, R * C, TOL_BF16_OUT);
    snprintf(name, sizeof name, "%s dweight (+=)", nb);
    gc_check(g, name, "512x768", DT_FP32, dw_g, dw_c, C, TOL_COLSUM);
    snprintf(name, sizeof name, "%s dbias untouched", nb);
    gc_check(g, ln ? "layernorm_bwd dbias (+=)" : name, "512x768", DT_FP32, db_g, db_c, C, ln ? TOL_COLSUM : TOL_EXACT);
    /* bias_grad: the same column sums without the norm */
    float *bg_c = gc_randn(g, DT_FP32, C, 1.0), bg_g[C];
    float *dbg = gc_dup(g, bg_c, C * 4);
    GC_OK(g, g->cpu->bias_grad(g->cpu, dy, DT_BF16, R, C, bg_c, GE));
    GC_OK(g, g->gpu->bias_grad(g->gpu, ddy, DT_BF16, R, C, dbg, GE));
    gc_get(g, bg_g, dbg, sizeof bg_g);
    gc_check(g, "bias_grad (+=)", "512x768", DT_FP32, bg_g, bg_c, C, TOL_COLSUM);
    void *ptrs[] = {dx, dwt, dbs, dyv, dm, dr, ddy, ddin, ddw, ddb, dbg};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) gc_dfree(g, ptrs[i]);
    free(x), free(w), free(b), free(dy), free(din_c), free(din_g), free(dw_c), free(db_c), free(bg_c);
}

/* The forward and the input gradient at other widths: 5120 columns (GPT-13B's hidden; the vector kernel holds 5 vectors
 * per thread) and 770 (not a whole number of 16-byte vectors: the warp kernel). The bounds are
 * check_norm's: the statistics are FP32 sums in another order (TOL_STAT: at C = 5120 the sums'
 * rounding walks to about √5120·2^-24 = 4.3e-6 of the sum, 1/28 of its 2^-13), the output one
 * BF16 ulp after them. */
static void check_norm_fwd_width(Gc *g, NormType norm, uint64_t C)
{
    const uint64_t R = gc_n(g, 64, 16);
    const int ln = norm == NORM_LAYERNORM;
    char name[64], shape[32];
    snprintf(shape, sizeof shape, "%llux%llu", (unsigned long long)R, (unsigned long long)C);
    uint16_t *x = gc_randn(g, DT_BF16, R * C, 1.0), *w = gc_randn(g, DT_BF16, C, 1.0);
    uint16_t *b = gc_randn(g, DT_BF16, C, 0.5), *y_c = gc_halloc(R * C * 2), *y_g = gc_halloc(R * C * 2);
    float *st_c = gc_halloc(2 * R * 4), *st_g = gc_halloc(2 * R * 4);
    for (uint64_t i = 0; i < R * C; i++) elem_store(x, DT_BF16, i, elem_load(x, DT_BF16, i) + 1.0f); /* mean ≈ 1 */
    NormFwdDesc f = {.norm = norm,
                     .rows = R,
                     .cols = C,
                     .eps = 1e-5f,
                     .act_dtype = DT_BF16,
                     .weight_dtype = DT_BF16,
                     .in = x,
                     .weight = w,
                     .bias = ln ? b : NULL,
                     .out = y_c,
                     .mean = ln ? st_c : NULL,
                     .rstd = st_c + R};
    GC_OK(g, g->cpu->norm_fwd(g->cpu, &f, GE));
    void *dx = gc_dup(g, x, R * C * 2), *dwt = gc_dup(g, w, C * 2), *dbs = gc_dup(g, b, C * 2);
    void *dyv = gc_dalloc(g, R * C * 2);
    float *dst = gc_dalloc(g, 2 * R * 4);
    gc_poison(g, dyv, R * C * 2);
    gc_poison(g, dst, 2 * R * 4);
    f.in = dx, f.weight = dwt, f.bias = ln ? dbs : NULL, f.out = dyv, f.mean = ln ? dst : NULL, f.rstd = dst + R;
    GC_OK(g, g->gpu->norm_fwd(g->gpu, &f, GE));
    gc_get(g, y_g, dyv, R * C * 2);
    gc_get(g, st_g, dst, 2 * R * 4);
    snprintf(name, sizeof name, "%s out", ln ? "layernorm_fwd" : "rmsnorm_fwd");
    gc_check(g, name, shape, DT_BF16, y_g, y_c, R * C, TOL_BF16_OUT);
    snprintf(name, sizeof name, "%s mean", ln ? "layernorm_fwd" : "rmsnorm_fwd");
    if (ln) gc_check(g, name, shape, DT_FP32, st_g, st_c, R, TOL_STAT);
    snprintf(name, sizeof name, "%s rstd", ln ? "layernorm_fwd" : "rmsnorm_fwd");
    gc_check(g, name, shape, DT_FP32, st_g + R, st_c + R, R, TOL_STAT);
    /* the input gradient from the CPU's statistics on both sides (dout: the forward's output reused) */
    uint16_t *din_c = gc_randn(g, DT_BF16, R * C, 1.0);
    void *ddin = gc_dup(g, din_c, R * C * 2), *ddy = gc_dup(g, y_c, R * C * 2);
    float *dwc = gc_halloc(C * 4), *dbc = gc_halloc(C * 4), *ddw = gc_dalloc(g, C * 4), *ddb = gc_dalloc(g, C * 4);
    memset(dwc, 0, C * 4), memset(dbc, 0, C * 4);
    GC_OK(g, g->gpu->memset0(g->gpu, ddw, C * 4, GE));
    GC_OK(g, g->gpu->memset0(g->gpu, ddb, C * 4, GE));
    gc_put(g, dst, st_c, 2 * R * 4);
    NormBwdDesc bd = {.norm = norm,
                      .rows = R,
                      .cols = C,
                      .act_dtype = DT_BF16,
                      .weight_dtype = DT_BF16,
                      .in = x,
                      .weight = w,
                      .mean = ln ? st_c : NULL,
                      .rstd = st_c + R,
                      .dout = y_c,
                      .din = din_c,
                      .dweight = dwc,
                      .dbias = ln ? dbc : NULL};
    GC_OK(g, g->cpu->norm_bwd(g->cpu, &bd, GE));
    bd.in = dx, bd.weight = dwt, bd.mean = ln ? dst : NULL, bd.rstd = dst + R, bd.dout = ddy, bd.din = ddin;
    bd.dweight = ddw, bd.dbias = ln ? ddb : NULL;
    GC_OK(g, g->gpu->norm_bwd(g->gpu, &bd, GE));
    gc_get(g, y_g, ddin, R * C * 2);
    snprintf(name, sizeof name, "%s din (+=)", ln ? "layernorm_bwd" : "rmsnorm_bwd");
    gc_check(g, name, shape, DT_BF16, y_g, din_c, R * C, TOL_BF16_OUT);
    gc_dfree(g, ddin), gc_dfree(g, ddy), gc_dfree(g, ddw), gc_dfree(g, ddb);
    free(din_c), free(dwc), free(dbc);
    gc_dfree(g, dx), gc_dfree(g, dwt), gc_dfree(g, dbs), gc_dfree(g, dyv), gc_dfree(g, dst);
    free(x), free(w), free(b), free(y_c), free(y_g), free(st_c), free(st_g);
}

/* ---- attention ------------------------------------------------------------------------------------ */

typedef struct {
    uint32_t B, T, H, KV, D;
} AttShape;

static double ld16(const uint16_t *p, uint64_t i) { return elem_load(p, DT_BF16, i); }

/* O = P·V from the given probs, in double and rounded once to BF16 (o: B, T, H·D): the
 * forward's second GEMM checked on the GPU's own probs, whose roundings may differ from
 * the CPU's by one BF16 step where the two FP32 scores straddle a boundary (the
 * grouped-query path's score GEMM runs on the expanded K, in another order). */
static void attn_out_ref(AttShape s, const uint16_t *probs, const uint16_t *qkv, uint16_t *o)
{
    const uint64_t W = (uint64_t)(s.H + 2 * s.KV) * s.D, C = (uint64_t)s.H * s.D, rep = s.H / s.KV, T = s.T;
    for (uint64_t b = 0; b < s.B; b++)
        for (uint64_t h = 0; h < s.H; h++)
            for (uint64_t t = 0; t < T; t++)
                for (uint64_t d = 0; d < s.D; d++) {
                    double sum = 0.0;
                    for (uint64_t j = 0; j <= t; j++)
                        sum += ld16(probs, ((b * s.H + h) * T + t) * T + j) *
                               ld16(qkv, (b * T + j) * W + (s.H + s.KV + h / rep) * s.D + d);
                    elem_store(o, DT_BF16, (b * T + t) * C + h * s.D + d, (float)sum);
                }
}

/* Per element of dqkv, how far rounding dS to BF16 before the dQ and dK GEMMs can move
 * it: each dS term is off by at most the BF16 unit roundoff 2^-8 of itself, so dQ by
 * 2^-8·Σⱼ|dSᵢⱼ|·|Kⱼ| and dK by 2^-8·Σᵢ|dSᵢⱼ|·|Qᵢ| (summed over a KV head's query heads),
 * plus T·2^-24 of the same sums for the FP32 order (2^-17 at T = 128); dV = Pᵀ·dO has
 * no dS: 0. dS from the CPU's probs in double: dP = dO·Vᵀ, dS = P ⊙ (dP − Σⱼ P·dP)/√D. */
static double *attn_ds_bound(AttShape s, const uint16_t *qkv, const uint16_t *probs, const uint16_t *dout)
{
    const uint64_t W = (uint64_t)(s.H + 2 * s.KV) * s.D, C = (uint64_t)s.H * s.D, rep = s.H / s.KV, T = s.T;
    const double u = 0x1p-8 + (double)T * 0x1p-24, scale = 1.0 / sqrt((double)s.D);
    double *ex = gc_halloc(s.B * T * W * sizeof *ex), *ds = gc_halloc(T * T * sizeof *ds);
    memset(ex, 0, s.B * T * W * sizeof *ex);
    for (uint64_t b = 0; b < s.B; b++)
        for (uint64_t h = 0; h < s.H; h++) {
            const uint64_t qc = h * s.D, kc = (s.H + h / rep) * s.D, vc = (s.H + s.KV + h / rep) * s.D;
            for (uint64_t i = 0; i < T; i++) {
                double dot = 0.0;
                for (uint64_t j = 0; j <= i; j++) {
                    double dp = 0.0;
                    for (uint64_t d = 0; d < s.D; d++)
                        dp += ld16(dout, (b * T + i) * C + qc + d) * ld16(qkv, (b * T + j) * W + vc + d);
                    ds[i * T + j] = dp;
                    dot += ld16(probs, ((b * s.H + h) * T + i) * T + j) * dp;
                }
                for (uint64_t j = 0; j <= i; j++)
                    ds[i * T + j] = ld16(probs, ((b * s.H + h) * T + i) * T + j) * (ds[i * T + j] - dot) * scale;
            }
            for (uint64_t i = 0; i < T; i++)
                for (uint64_t j = 0; j <= i; j++) {
                    const double a = fabs(ds[i * T + j]) * u;
                    for (uint64_t d = 0; d < s.D; d++) {
                        ex[(b * T + i) * W + qc + d] += a * fabs(ld16(qkv, (b * T + j) * W + kc + d));
                        ex[(b * T + j) * W + kc + d] += a * fabs(ld16(qkv, (b * T + i) * W + qc + d));
                    }
                }
        }
    free(ds);
    return ex;
}

static void check_attention(Gc *g, uint32_t KV)
{
    enum { B = 2, T = 128, H = 4, D = 64, C = H * D };
    const AttShape sh = {B, T, H, KV, D};
    const uint64_t nq = (uint64_t)B * T * (H + 2 * KV) * D, np = (uint64_t)B * H * T * T, no = (uint64_t)B * T * C;
    char cas[64], what[64];
    uint16_t *qkv = gc_randn(g, DT_BF16, nq, 1.0), *dout = gc_randn(g, DT_BF16, no, 1.0);
    uint16_t *p_c = gc_halloc(np * 2), *o_c = gc_halloc(no * 2), *dq_c = gc_halloc(nq * 2);
    uint16_t *p_g = gc_halloc(np * 2), *o_g = gc_halloc(no * 2), *dq_g = gc_halloc(nq * 2), *dq_g2 = gc_halloc(nq * 2);
    float *scratch = gc_halloc(np * 4);
    AttnFwdDesc f = {.batch = B,
                     .seq = T,
                     .heads = H,
                     .kv_heads = KV,
                     .head_dim = D,
                     .dtype = DT_BF16,
                     .qkv = qkv,
                     .probs = p_c,
                     .out = o_c};
    GC_OK(g, g->cpu->attention_fwd(g->cpu, &f, GE));
    AttnBwdDesc bd = {.batch = B,
                      .seq = T,
                      .heads = H,
                      .kv_heads = KV,
                      .head_dim = D,
                      .dtype = DT_BF16,
                      .qkv = qkv,
                      .probs = p_c,
                      .dout = dout,
                      .dqkv = dq_c,
                      .scratch = scratch};
    GC_OK(g, g->cpu->attention_bwd(g->cpu, &bd, GE));
    void *dqkv = gc_dup(g, qkv, nq * 2), *dp = gc_dalloc(g, np * 2), *dov = gc_dalloc(g, no * 2);
    void *ddout = gc_dup(g, dout, no * 2), *ddq = gc_dalloc(g, nq * 2);
    float *dscr = gc_dalloc(g, np * 4);
    for (int with_scratch = 1; with_scratch >= 0; with_scratch--) {
        gc_poison(g, dp, np * 2);
        gc_poison(g, dov, no * 2);
        f.qkv = dqkv;
        f.probs = dp;
        f.out = dov;
        f.scratch = with_scratch ? dscr : NULL;
        GC_OK(g, g->gpu->attention_fwd(g->gpu, &f, GE));
        gc_get(g, p_g, dp, np * 2);
        gc_get(g, o_g, dov, no * 2);
        snprintf(cas, sizeof cas, "B2 T128 H4 KV%u D64, %s", KV, with_scratch ? "desc scratch" : "private scores");
        gc_check(g, "attention_fwd probs", cas, DT_BF16, p_g, p_c, np, TOL_BF16_OUT);
        attn_out_ref(sh, p_g, qkv, o_c);
        gc_check(g, "attention_fwd out (P.V from its probs)", cas, DT_BF16, o_g, o_c, no, TOL_BF16_OUT);
    }
    /* backward from the CPU's probs on both sides; twice on the GPU for determinism */
    gc_put(g, dp, p_c, np * 2);
    for (int run = 0; run < 2; run++) {
        gc_poison(g, ddq, nq * 2);
        gc_poison(g, dscr, np * 4);
        bd.qkv = dqkv;
        bd.probs = dp;
        bd.dout = ddout;
        bd.dqkv = ddq;
        bd.scratch = dscr;
        GC_OK(g, g->gpu->attention_bwd(g->gpu, &bd, GE));
        gc_get(g, run ? dq_g2 : dq_g, ddq, nq * 2);
    }
    snprintf(cas, sizeof cas, "B2 T128 H4 KV%u D64", KV);
    snprintf(what, sizeof what, "attention_bwd deterministic, %u KV heads", KV);
    double *ex = attn_ds_bound(sh, qkv, p_c, dout);
    gc_check_extra(g, "attention_bwd dqkv", cas, DT_BF16, dq_g, dq_c, nq, TOL_ATTN_BWD, ex);
    free(ex);
    gc_check(g, what, "two runs", DT_BF16, dq_g2, dq_g, nq, TOL_EXACT);
    void *ptrs[] = {dqkv, dp, dov, ddout, ddq, dscr};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) gc_dfree(g, ptrs[i]);
    free(qkv), free(dout), free(p_c), free(o_c), free(dq_c), free(p_g), free(o_g), free(dq_g), free(dq_g2);
    free(scratch);
}

/* ---- element-wise ------------------------------------------------------------------------------------- */

static void check_elementwise(Gc *g)
{
    const uint64_t n = 1000001;
    uint16_t *x = gc_randn(g, DT_BF16, n, 2.5), *y = gc_randn(g, DT_BF16, n, 1.0);
    uint16_t *c = gc_halloc(n * 2), *r = gc_halloc(n * 2);
    void *dx = gc_dup(g, x, n * 2), *dy = gc_dup(g, y, n * 2), *dr = gc_dalloc(g, n * 2);
    struct {
        const char *name;
        Tol t;
    } ops[3] = {{"gelu_fwd", TOL_GELU}, {"gelu_bwd", TOL_GELU}, {"add", TOL_EXACT}};
    for (int op = 0; op < 3; op++) {
        gc_poison(g, dr, n * 2);
        ActFwdDesc af = {.mlp = MLP_GELU, .rows = 1, .cols = n, .dtype = DT_BF16, .in = x, .out = c};
        ActBwdDesc ab = {.mlp = MLP_GELU, .rows = 1, .cols = n, .dtype = DT_BF16, .in = x, .dout = y, .din = c};
        if (op == 0) {
            GC_OK(g, g->cpu->act_fwd(g->cpu, &af, GE));
            af.in = dx, af.out = dr;
            GC_OK(g, g->gpu->act_fwd(g->gpu, &af, GE));
        } else if (op == 1) {
            GC_OK(g, g->cpu->act_bwd(g->cpu, &ab, GE));
            ab.in = dx, ab.dout = dy, ab.din = dr;
            GC_OK(g, g->gpu->act_bwd(g->gpu, &ab, GE));
        } else {
            GC_OK(g, g->cpu->add(g->cpu, x, y, c, DT_BF16, n, GE));
            GC_OK(g, g->gpu->add(g->gpu, dx, dy, dr, DT_BF16, n, GE));
        }
        gc_get(g, r, dr, n * 2);
        gc_check(g, ops[op].name, "1000001 bf16", DT_BF16, r, c, n, ops[op].t);
    }
    gc_dfree(g, dx), gc_dfree(g, dy), gc_dfree(g, dr);
    free(x), free(y), free(c), free(r);
}

/* SwiGLU: in (R, 2F) = [gate | up] → out (R, F), and its input gradient. */
static void check_swiglu(Gc *g)
{
    enum { R = 300, F = 1376 };
    const uint64_t ni = (uint64_t)R * 2 * F, no = (uint64_t)R * F;
    uint16_t *x = gc_randn(g, DT_BF16, ni, 2.5), *dy = gc_randn(g, DT_BF16, no, 1.0);
    uint16_t *y_c = gc_halloc(no * 2), *y_g = gc_halloc(no * 2), *dx_c = gc_halloc(ni * 2), *dx_g = gc_halloc(ni * 2);
    void *dx = gc_dup(g, x, ni * 2), *ddy = gc_dup(g, dy, no * 2), *dyo = gc_dalloc(g, no * 2),
         *ddx = gc_dalloc(g, ni * 2);
    ActFwdDesc af = {.mlp = MLP_SWIGLU, .rows = R, .cols = F, .dtype = DT_BF16, .in = x, .out = y_c};
    ActBwdDesc ab = {.mlp = MLP_SWIGLU, .rows = R, .cols = F, .dtype = DT_BF16, .in = x, .dout = dy, .din = dx_c};
    GC_OK(g, g->cpu->act_fwd(g->cpu, &af, GE));
    GC_OK(g, g->cpu->act_bwd(g->cpu, &ab, GE));
    gc_poison(g, dyo, no * 2);
    gc_poison(g, ddx, ni * 2);
    af.in = dx, af.out = dyo;
    ab.in = dx, ab.dout = ddy, ab.din = ddx;
    GC_OK(g, g->gpu->act_fwd(g->gpu, &af, GE));
    GC_OK(g, g->gpu->act_bwd(g->gpu, &ab, GE));
    gc_get(g, y_g, dyo, no * 2);
    gc_get(g, dx_g, ddx, ni * 2);
    gc_check(g, "swiglu_fwd", "300 x 1376", DT_BF16, y_g, y_c, no, TOL_GELU);
    gc_check(g, "swiglu_bwd", "300 x 2752", DT_BF16, dx_g, dx_c, ni, TOL_GELU);
    gc_dfree(g, dx), gc_dfree(g, ddy), gc_dfree(g, dyo), gc_dfree(g, ddx);
    free(x), free(dy), free(y_c), free(y_g), free(dx_c), free(dx_g);
}

/* The rotary embedding of q and k (v untouched), forward and inverse, from the same table. */
static void check_rope(Gc *g)
{
    enum { B = 2, T = 256, H = 8, KV = 2, D = 64, W = (H + 2 * KV) * D };
    const uint64_t n = (uint64_t)B * T * W;
    uint16_t *x = gc_randn(g, DT_BF16, n, 1.0), *c = gc_halloc(n * 2), *r = gc_halloc(n * 2);
    float *cs = gc_halloc((size_t)T * D * 4);
    for (int t = 0; t < T; t++) /* cos, sin of t·10000^(-2i/D), as the model's table (double, rounded once) */
        for (int i = 0; i < D / 2; i++) {
            double a = t * pow(10000.0, -2.0 * i / D);
            cs[(t * D / 2 + i) * 2] = (float)cos(a), cs[(t * D / 2 + i) * 2 + 1] = (float)sin(a);
        }
    void *dx = gc_dup(g, x, n * 2), *dcs = gc_dup(g, cs, (size_t)T * D * 4);
    for (int inv = 0; inv < 2; inv++) {
        memcpy(c, x, n * 2);
        RopeDesc d = {.batch = B,
                      .seq = T,
                      .heads = H,
                      .kv_heads = KV,
                      .head_dim = D,
                      .dtype = DT_BF16,
                      .qkv = c,
                      .cos_sin = cs,
                      .inverse = inv};
        GC_OK(g, g->cpu->rope(g->cpu, &d, GE));
        gc_put(g, dx, x, n * 2);
        d.qkv = dx, d.cos_sin = dcs;
        GC_OK(g, g->gpu->rope(g->gpu, &d, GE));
        gc_get(g, r, dx, n * 2);
        gc_check(g, inv ? "rope inverse" : "rope", "B2 T256 H8 KV2 D64", DT_BF16, r, c, n, TOL_EXACT);
    }
    gc_dfree(g, dx), gc_dfree(g, dcs);
    free(x), free(c), free(r), free(cs);
}

/* ---- embeddings and cross-entropy --------------------------------------------------------------- */

static void check_embed_xent(Gc *g)
{
    enum { B = 4, T = 64, V = 1000, C = 256, N = B * T, VP = 1024 };
    int32_t tok[N], tgt[N];
    for (int i = 0; i < N; i++) {
        tok[i] = (int32_t)rng_below(&g->rng, 50); /* repeats: several positions add into one row */
        tgt[i] = (int32_t)rng_below(&g->rng, V);
    }
    uint16_t *wte = gc_randn(g, DT_BF16, V * C, 1.0), *wpe = gc_randn(g, DT_BF16, T * C, 1.0);
    uint16_t *dout = gc_randn(g, DT_BF16, N * C, 1.0), out_c[N * C], out_g[N * C];
    float *dwte_c = gc_randn(g, DT_FP32, V * C, 1.0), *dwpe_c = gc_randn(g, DT_FP32, T * C, 1.0);
    float *dwte_g = gc_halloc(V * C * 4), dwpe_g[T * C];
    void *dtok = gc_dup(g, tok, sizeof tok), *dte = gc_dup(g, wte, V * C * 2), *dpe = gc_dup(g, wpe, T * C * 2);
    void *dout_d = gc_dalloc(g, sizeof out_g), *ddo = gc_dup(g, dout, N * C * 2);
    float *ddte = gc_dup(g, dwte_c, V * C * 4), *ddpe = gc_dup(g, dwpe_c, T * C * 4);
    GC_OK(g, g->cpu->embed_fwd(g->cpu, tok, B, T, V, C, wte, wpe, DT_BF16, out_c, DT_BF16, GE));
    gc_poison(g, dout_d, sizeof out_g);
    GC_OK(g, g->gpu->embed_fwd(g->gpu, dtok, B, T, V, C, dte, dpe, DT_BF16, dout_d, DT_BF16, GE));
    gc_get(g, out_g, dout_d, sizeof out_g);
    gc_check(g, "embed_fwd", "B4 T64 V1000 C256", DT_BF16, out_g, out_c, N * C, TOL_EXACT);
    GC_OK(g, g->cpu->embed_bwd(g->cpu, tok, B, T, V, C, dout, DT_BF16, dwte_c, dwpe_c, GE));
    GC_OK(g, g->gpu->embed_bwd(g->gpu, dtok, B, T, V, C, ddo, DT_BF16, ddte, ddpe, GE));
    gc_get(g, dwte_g, ddte, V * C * 4);
    gc_get(g, dwpe_g, ddpe, sizeof dwpe_g);
    gc_check(g, "embed_bwd dwte (+=)", "50 distinct tokens", DT_FP32, dwte_g, dwte_c, V * C, TOL_EXACT);
    gc_check(g, "embed_bwd dwpe (+=)", "B4 T64", DT_FP32, dwpe_g, dwpe_c, T * C, TOL_EXACT);
    /* a bad token is reported at the next sync, as ST_USAGE */
    int32_t bad = V + 7;
    gc_put(g, (int32_t *)dtok + 5, &bad, sizeof bad);
    Err e;
    Status st = g->gpu->embed_fwd(g->gpu, dtok, B, T, V, C, dte, dpe, DT_BF16, dout_d, DT_BF16, &e);
    if (!st) st = g->gpu->sync(g->gpu, &e);
    gc_expect(g, "embed_fwd bad token", "reported by sync",
              st == ST_USAGE && strstr(e.msg, "1007") && strstr(e.msg, "position 5"), e.msg);
    GC_OK(g, g->gpu->sync(g->gpu, GE)); /* the record was cleared */

    /* cross-entropy over padded logits */
    enum { R = 256 };
    uint16_t *lg = gc_randn(g, DT_BF16, R * VP, 2.0), *lg_g = gc_halloc(R * VP * 2);
    float loss_c[R], loss_g[R];
    void *dlg = gc_dup(g, lg, R * VP * 2), *dtg = gc_dup(g, tgt, R * sizeof(int32_t));
    float *dloss = gc_dalloc(g, sizeof loss_g);
    gc_poison(g, dloss, sizeof loss_g);
    GC_OK(g, g->cpu->xent_fwd_bwd(g->cpu, lg, DT_BF16, R, V, VP, tgt, 1.0f / R, loss_c, GE));
    GC_OK(g, g->gpu->xent_fwd_bwd(g->gpu, dlg, DT_BF16, R, V, VP, dtg, 1.0f / R, dloss, GE));
    gc_get(g, lg_g, dlg, R * VP * 2);
    gc_get(g, loss_g, dloss, sizeof loss_g);
    gc_check(g, "xent loss", "256 x 1000 (pad 1024)", DT_FP32, loss_g, loss_c, R, TOL_LOSS);
    gc_check(g, "xent dlogits", "256 x 1000 (pad 1024)", DT_BF16, lg_g, lg, R * VP, TOL_BF16_OUT);
    int32_t badt = -1;
    gc_put(g, (int32_t *)dtg + 9, &badt, sizeof badt);
    st = g->gpu->xent_fwd_bwd(g->gpu, dlg, DT_BF16, R, V, VP, dtg, 1.0f / R, dloss, &e);
    if (!st) st = g->gpu->sync(g->gpu, &e);
    gc_expect(g, "xent bad target", "reported by sync",
              st == ST_USAGE && strstr(e.msg, " -1 ") && strstr(e.msg, "position 9"), e.msg);
    void *ptrs[] = {dtok, dte, dpe, dout_d, ddo, ddte, ddpe, dlg, dtg, dloss};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) gc_dfree(g, ptrs[i]);
    free(wte), free(wpe), free(dout), free(dwte_c), free(dwpe_c), free(dwte_g), free(lg), free(lg_g);
}

/* Cross-entropy at the benchmark's vocabulary (GPT-2's 50257 padded to 50304): the CUDA kernel
 * reads each row once in 16-byte vectors with an online max/sum and keeps up to 112 KiB of the
 * row in shared memory for the gradient pass. BF16 rows (100,608 B) fit that cache, and 50257 =
 * 8·6282 + 1 leaves one element of the vocabulary outside the vectors; FP32 rows (201,216 B) do
 * not fit, so the gradient pass re-reads the last 88,528 B of each row from device memory. The
 * bounds are the V = 1000 case's: the loss is log Σ + max − x[t], and the online sum differs from
 * the CPU's two-pass sum by the order of its additions (TOL_LOSS) plus at most 3·2^-24 of the sum
 * per rescale by exp(m_old − m_new): with 512 threads each thread folds ⌈6283/512⌉ = 13 BF16
 * vectors (FP32: 25) and the tree merges 9 times, ≤ 34 rescales = 6.1e-6 relative, 1/20 of
 * TOL_LOSS's 2^-13 (tests/unit/test_cuda_math.c checks the online rule against the two-pass sum
 * on the CPU). The gradient per element is km_xent_dlogit with that sum: one BF16 ulp. */
static void check_xent_wide(Gc *g, Dtype dt)
{
    const uint64_t R = gc_n(g, 64, 8), V = 50257, VP = 50304, esz = dtype_bytes(dt);
    int32_t *tgt = gc_halloc(R * sizeof(int32_t));
    for (uint64_t i = 0; i < R; i++) tgt[i] = (int32_t)(i == 0 ? V - 1 : rng_below(&g->rng, V)); /* the tail's one */
    void *lg = gc_randn(g, dt, R * VP, 2.0), *lg_g = gc_halloc(R * VP * esz);
    float *loss_c = gc_halloc(R * 4), *loss_g = gc_halloc(R * 4);
    void *dlg = gc_dup(g, lg, R * VP * esz), *dtg = gc_dup(g, tgt, R * sizeof(int32_t));
    float *dloss = gc_dalloc(g, R * 4);
    gc_poison(g, dloss, R * 4);
    GC_OK(g, g->cpu->xent_fwd_bwd(g->cpu, lg, dt, R, V, VP, tgt, 1.0f / (float)R, loss_c, GE));
    GC_OK(g, g->gpu->xent_fwd_bwd(g->gpu, dlg, dt, R, V, VP, dtg, 1.0f / (float)R, dloss, GE));
    gc_get(g, lg_g, dlg, R * VP * esz);
    gc_get(g, loss_g, dloss, R * 4);
    const char *shape = dt == DT_FP32 ? "64 x 50257 (pad 50304) fp32" : "64 x 50257 (pad 50304) bf16";
    gc_check(g, "xent loss", shape, DT_FP32, loss_g, loss_c, R, TOL_LOSS);
    gc_check(g, "xent dlogits", shape, dt, lg_g, lg, R * VP, dt == DT_FP32 ? TOL_XENT_F32 : TOL_BF16_OUT);
    gc_dfree(g, dlg), gc_dfree(g, dtg), gc_dfree(g, dloss);
    free(tgt), free(lg), free(lg_g), free(loss_c), free(loss_g);
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_nn", argc, argv);
    Gc g;
    gc_init_check(&g, "gpu_nn", argc, argv);
    check_norm(&g, NORM_LAYERNORM);
    check_norm(&g, NORM_RMSNORM);
    check_norm_fwd_width(&g, NORM_LAYERNORM, 5120);
    check_norm_fwd_width(&g, NORM_RMSNORM, 5120);
    check_norm_fwd_width(&g, NORM_LAYERNORM, 770);
    check_norm_fwd_width(&g, NORM_RMSNORM, 770);
    check_attention(&g, 4);
    check_attention(&g, 2);
    check_rope(&g);
    check_elementwise(&g);
    check_swiglu(&g);
    check_embed_xent(&g);
    check_xent_wide(&g, DT_BF16);
    check_xent_wide(&g, DT_FP32);
    return gc_finish(&g);
}
