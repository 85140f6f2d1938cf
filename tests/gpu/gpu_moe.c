/* tests/gpu/gpu_moe.c — the CUDA backend's mixture-of-experts operations against
 * the CPU reference backend, on fresh random data: the router's top-k (softmax,
 * and sigmoid with DeepSeek-V3's bias, group-limited routing and normalised,
 * scaled weights), its backward, the auxiliary balance loss, the permutation of
 * token rows by expert and back with the weighted combine and its backward, and
 * the experts' per-expert FP8 casts into column slices of one transposed copy,
 * and the grouped expert GEMMs (fprop, dgrad, weight gradient; BF16 and
 * per-tensor FP8) over ragged groups with an empty one.
 *
 *   gpu_moe [CSV] [SEED]     exit 0 all pass, 1 a check failed, 69 no GPU
 *
 * Tolerances (gpu_common.h for the rule; u = 2^-24, FP32's unit roundoff):
 *  - exact: router_bwd, router_aux_loss, permute, unpermute and its backward
 *    run the CPU's operations in the CPU's order (exec/cuda/k_moe*.cu, unfused
 *    kernel_math.h operations, doubles where the CPU sums in double), given
 *    the same inputs (the CPU's scores and ids are fed to both);
 *  - router scores: the one difference is expf (CUDA ≤ 2 ulp, glibc ≤ 1 ulp):
 *    softmax (12 + 2E)u, sigmoid 10u; combine weights 2δ + 2(k + 1)u (δ + 2u
 *    without the normalisation), δ the scores' bound (gpu_tol.h derives them,
 *    tests/unit/test_gpu_tol.c checks them on an emulation);
 *  - ids: identical, except where two experts' selection keys lie within the
 *    scores' bound of each other (a near tie, which either side may break):
 *    such a token passes when the keys of the experts it swapped, or the
 *    scores of the groups at group-limited routing's cut, are that close on
 *    the CPU, is counted in the case name, and its weights and counts are
 *    left out of their exact comparisons;
 *  - grouped GEMMs: as gpu_kernels.c's single GEMMs of the same dtypes (each
 *    group is one cuBLASLt matmul): one BF16 ulp after a rounding on each side;
 *    FP32 sums in another order ≤ 2^-12 rms; FP8 fast accumulation tol_fast;
 *    the FP8 weight gradient (its groups staged into aligned, zero-padded
 *    scratch on the GPU: exec/cuda/gemm_group.cu) tol_split_f32 at its widest
 *    chunk, k = 128;
 *  - the experts' casts: exact, as gpu_kernels.c's casts. */
#include "gpu_common.h"

static const Tol TOL_GEMM_BF16 = {0x1p-7, 0x1p-7, 0x1p-8, "one BF16 ulp apart after one rounding on each side", 0.0};
static const Tol TOL_GEMM_F32 = {0.0, 0x1p-12, 0x1p-14, "FP32 sums in another order, <= 2^-12 rms", 0.0};

/* ---- router ------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    uint64_t tokens;
    uint32_t experts, k;
    RouterType score;
    int norm_topk, bias;
    float weight_scale;
    uint32_t groups, group_topk;
} RouteCase;

/* Group-limited routing: whether the token's last open group and the best closed one score within the
 * bound (their group scores from the CPU's keys, as the reference forms them) — a near tie that moves
 * whole groups of experts, whose own keys need not be close. */
static int group_near_tie(const RouteCase *c, const float *s, const float *bias, double rel)
{
    uint32_t G = c->groups, per = c->experts / G;
    if (G < 2 || c->group_topk >= G) return 0;
    double gs[64], top = 0.0;
    for (uint32_t x = 0; x < G && x < 64; x++) {
        double t1 = -INFINITY, t2 = -INFINITY;
        for (uint32_t e = x * per; e < (x + 1) * per; e++) {
            double key = (double)s[e] + (bias ? bias[e] : 0.0f);
            if (key > t1)
                t2 = t1, t1 = key;
            else if (key > t2)
                t2 = key;
        }
        gs[x] = bias && per > 1 ? t1 + t2 : t1;
        top = fmax(top, fabs(gs[x]));
    }
    for (uint32_t i = 1; i < G; i++) /* descending */
        for (uint32_t j = i; j > 0 && gs[j] > gs[j - 1]; j--) {
            double tmp = gs[j];
            gs[j] = gs[j - 1], gs[j - 1] = tmp;
        }
    return fabs(gs[c->group_topk - 1] - gs[c->group_topk]) <= 4.0 * rel * top;
}

static void route_case(Gc *g, const RouteCase *c)
{
    const uint64_t T = c->tokens, TE = T * c->experts, TK = T * c->k;
    const uint32_t E = c->experts, k = c->k;
    float *logits = gc_randn(g, DT_FP32, TE, 2.0), *bias = c->bias ? gc_randn(g, DT_FP32, E, 0.05) : NULL;
    float *sc = gc_halloc(TE * 4), *wc = gc_halloc(TK * 4), *sg = gc_halloc(TE * 4), *wg = gc_halloc(TK * 4);
    int32_t *ic = gc_halloc(TK * 4), *ig = gc_halloc(TK * 4), *cc = gc_halloc(E * 4), *cg = gc_halloc(E * 4);
    RouterDesc d = {T,  E,  k,  c->score, c->norm_topk, c->weight_scale, c->groups, c->group_topk, logits, bias,
                    sc, ic, wc, cc};
    GC_OK(g, g->cpu->router_topk(g->cpu, &d, GE));
    d.logits = gc_dup(g, logits, TE * 4);
    d.bias = bias ? gc_dup(g, bias, E * 4) : NULL;
    d.scores = gc_dalloc(g, TE * 4), d.ids = gc_dalloc(g, TK * 4), d.weights = gc_dalloc(g, TK * 4);
    d.counts = gc_dalloc(g, E * 4);
    gc_poison(g, d.scores, TE * 4), gc_poison(g, d.ids, TK * 4), gc_poison(g, d.weights, TK * 4);
    gc_poison(g, d.counts, E * 4);
    GC_OK(g, g->gpu->router_topk(g->gpu, &d, GE));
    gc_get(g, sg, d.scores, TE * 4), gc_get(g, ig, d.ids, TK * 4), gc_get(g, wg, d.weights, TK * 4);
    gc_get(g, cg, d.counts, E * 4);
    double rel = tol_router_score_rel(c->score == ROUTER_SIGMOID, E);
    char cas[160];
    snprintf(cas, sizeof cas, "%s T=%llu E=%u k=%u", c->name, (unsigned long long)T, E, k);
    gc_check(g, "router scores", cas, DT_FP32, sg, sc, TE, (Tol){rel, 0.0, rel, "expf's ulps through the sum", 0.0});
    /* ids: equal, or a near tie on the CPU's keys; the tied tokens leave the exact comparisons */
    uint64_t ties = 0, bad = 0, kept = 0, flipped = 0;
    for (uint64_t t = 0; t < T; t++) {
        int same = !memcmp(ig + t * k, ic + t * k, k * 4);
        if (!same) {
            int ok = 1;
            for (uint32_t j = 0; j < k; j++) {
                int32_t a = ic[t * k + j], b = ig[t * k + j];
                if (a == b) continue;
                flipped++; /* each differing slot moves at most two counts */
                if (!ok || b < 0 || (uint32_t)b >= E) {
                    ok = 0;
                    continue;
                }
                double ka = sc[t * E + a] + (bias ? bias[a] : 0.0f), kb = sc[t * E + b] + (bias ? bias[b] : 0.0f);
                double top = fmax(fabs(sc[t * E + a]), fabs(sc[t * E + b]));
                ok = fabs(ka - kb) <= 4.0 * rel * top; /* both keys moved, a group's two summed */
            }
            ok = ok || group_near_tie(c, sc + t * E, bias, rel);
            ties += ok, bad += !ok;
            continue;
        }
        memcpy(wg + kept * k, wg + t * k, k * 4), memcpy(wc + kept * k, wc + t * k, k * 4);
        kept++;
    }
    char why[96];
    snprintf(why, sizeof why, "%llu tokens differ beyond a near tie", (unsigned long long)bad);
    char cas2[200];
    snprintf(cas2, sizeof cas2, "%s (%llu near ties)", cas, (unsigned long long)ties);
    gc_expect(g, "router ids", cas2, bad == 0, why);
    double wrel = tol_router_weight_rel(rel, c->norm_topk, k);
    gc_check(g, "router weights", cas2, DT_FP32, wg, wc, kept * k,
             (Tol){wrel, 0.0, wrel, "the scores' bound through S", 0.0});
    uint64_t moved = 0;
    for (uint32_t x = 0; x < E; x++) moved += (uint64_t)llabs((long long)cg[x] - cc[x]);
    gc_expect(g, "router counts", cas2, moved <= 2 * flipped, "counts differ beyond the near ties' swaps");
    gc_dfree(g, (void *)d.logits), gc_dfree(g, d.scores), gc_dfree(g, d.ids), gc_dfree(g, d.weights);
    gc_dfree(g, d.counts);
    if (d.bias) gc_dfree(g, (void *)d.bias);
    free(logits), free(bias), free(sc), free(wc), free(sg), free(wg), free(ic), free(ig), free(cc), free(cg);
}

/* router_bwd and router_aux_loss on the CPU's routing (scores, ids) given to both sides: exact. */
static void route_bwd_case(Gc *g, const RouteCase *c)
{
    const uint64_t T = c->tokens, TE = T * c->experts, TK = T * c->k;
    const uint32_t E = c->experts, k = c->k;
    float *logits = gc_randn(g, DT_FP32, TE, 2.0), *s = gc_halloc(TE * 4), *w = gc_halloc(TK * 4);
    int32_t *ids = gc_halloc(TK * 4), *counts = gc_halloc(E * 4);
    RouterDesc rd = {T, E, k, c->score, c->norm_topk, c->weight_scale, 0, 0, logits, NULL, s, ids, w, counts};
    GC_OK(g, g->cpu->router_topk(g->cpu, &rd, GE));
    float *dw = gc_randn(g, DT_FP32, TK, 1.0), *dz_c = gc_halloc(TE * 4), *dz_g = gc_halloc(TE * 4);
    float *ds_c = gc_halloc(TE * 4), *ds_g = gc_halloc(TE * 4), loss_c[1], loss_g[1];
    RouterAuxDesc ad = {T, E, k, c->score, 0.01f, s, ids, loss_c, 0.5f, ds_c, NULL, 0};
    GC_OK(g, g->cpu->router_aux_loss(g->cpu, &ad, GE));
    RouterBwdDesc bd = {T, E, k, c->score, c->norm_topk, c->weight_scale, s, ids, dw, ds_c, dz_c};
    GC_OK(g, g->cpu->router_bwd(g->cpu, &bd, GE));
    float *d_s = gc_dup(g, s, TE * 4), *d_dw = gc_dup(g, dw, TK * 4), *d_ds = gc_dalloc(g, TE * 4);
    float *d_dz = gc_dalloc(g, TE * 4), *d_loss = gc_dalloc(g, 4);
    int32_t *d_ids = gc_dup(g, ids, TK * 4);
    gc_poison(g, d_ds, TE * 4), gc_poison(g, d_dz, TE * 4), gc_poison(g, d_loss, 4);
    ad.scores = d_s, ad.ids = d_ids, ad.loss = d_loss, ad.dscores = d_ds;
    GC_OK(g, g->gpu->router_aux_loss(g->gpu, &ad, GE));
    bd.scores = d_s, bd.ids = d_ids, bd.dweights = d_dw, bd.dscores = d_ds, bd.dlogits = d_dz;
    GC_OK(g, g->gpu->router_bwd(g->gpu, &bd, GE));
    gc_get(g, loss_g, d_loss, 4), gc_get(g, ds_g, d_ds, TE * 4), gc_get(g, dz_g, d_dz, TE * 4);
    char cas[160];
    snprintf(cas, sizeof cas, "%s T=%llu E=%u k=%u", c->name, (unsigned long long)T, E, k);
    gc_check(g, "router aux loss", cas, DT_FP32, loss_g, loss_c, 1, TOL_EXACT);
    gc_check(g, "router aux dscores", cas, DT_FP32, ds_g, ds_c, TE, TOL_EXACT);
    gc_check(g, "router bwd dlogits", cas, DT_FP32, dz_g, dz_c, TE, TOL_EXACT);
    gc_dfree(g, d_s), gc_dfree(g, d_dw), gc_dfree(g, d_ds), gc_dfree(g, d_dz), gc_dfree(g, d_loss);
    gc_dfree(g, d_ids);
    free(logits), free(s), free(w), free(ids), free(counts), free(dw), free(dz_c), free(dz_g), free(ds_c);
    free(ds_g);
}

static void check_router(Gc *g)
{
    const RouteCase cs[] = {
        {"softmax", gc_n(g, 4096, 128), 64, 8, ROUTER_SOFTMAX, 0, 0, 1.0f, 0, 0},
        {"softmax norm", gc_n(g, 1000, 64), 8, 2, ROUTER_SOFTMAX, 1, 0, 1.0f, 0, 0},
        {"sigmoid bias groups", gc_n(g, 4096, 128), 32, 4, ROUTER_SIGMOID, 1, 1, 2.5f, 4, 2},
    };
    for (size_t i = 0; i < 3; i++) route_case(g, &cs[i]);
    for (size_t i = 0; i < 3; i++) route_bwd_case(g, &cs[i]);
}

/* ---- permute, unpermute, combine ------------------------------------------------------------------- */

/* Random distinct ids per token (k of E). */
static int32_t *random_ids(Gc *g, uint64_t T, uint32_t E, uint32_t k)
{
    int32_t *ids = gc_halloc(T * k * 4);
    for (uint64_t t = 0; t < T; t++)
        for (uint32_t j = 0; j < k; j++) {
            int32_t id;
            int dup;
            do {
                id = (int32_t)rng_below(&g->rng, E);
                dup = 0;
                for (uint32_t l = 0; l < j; l++) dup |= ids[t * k + l] == id;
            } while (dup);
            ids[t * k + j] = id;
        }
    return ids;
}

static void perm_case(Gc *g, Dtype dt, uint64_t T, uint32_t E, uint32_t k, uint64_t C)
{
    const uint64_t TK = T * k, esz = dtype_bytes(dt);
    int32_t *ids = random_ids(g, T, E, k), *map_c = gc_halloc(TK * 4), *map_g = gc_halloc(TK * 4);
    void *in = gc_randn(g, dt, T * C, 1.0), *pc = gc_halloc(TK * C * esz), *pg = gc_halloc(TK * C * esz);
    MoePermuteDesc pd = {T, E, k, C, dt, ids, in, pc, map_c};
    GC_OK(g, g->cpu->moe_permute(g->cpu, &pd, GE));
    int32_t *d_ids = gc_dup(g, ids, TK * 4), *d_map = gc_dalloc(g, TK * 4);
    void *d_in = gc_dup(g, in, T * C * esz), *d_p = gc_dalloc(g, TK * C * esz);
    gc_poison(g, d_map, TK * 4), gc_poison(g, d_p, TK * C * esz);
    pd.ids = d_ids, pd.in = d_in, pd.out = d_p, pd.row_of = d_map;
    GC_OK(g, g->gpu->moe_permute(g->gpu, &pd, GE));
    gc_get(g, map_g, d_map, TK * 4), gc_get(g, pg, d_p, TK * C * esz);
    char cas[128];
    snprintf(cas, sizeof cas, "T=%llu E=%u k=%u C=%llu", (unsigned long long)T, E, k, (unsigned long long)C);
    gc_expect(g, "moe permute map", cas, !memcmp(map_g, map_c, TK * 4), "row_of differs");
    gc_expect(g, "moe permute rows", cas, !memcmp(pg, pc, TK * C * esz), "permuted bytes differ");
    if (!dtype_is_fp8(dt)) { /* the combine: weighted, unweighted (the permute's backward), and its backward */
        float *w = gc_randn(g, DT_FP32, TK, 0.5), *d_w = gc_dup(g, w, TK * 4);
        void *x = gc_randn(g, dt, TK * C, 1.0), *d_x = gc_dup(g, x, TK * C * esz);
        void *oc = gc_halloc(T * C * esz), *og = gc_halloc(T * C * esz), *d_o = gc_dalloc(g, T * C * esz);
        for (int weighted = 1; weighted >= 0; weighted--) {
            MoeUnpermuteDesc ud = {T, k, C, dt, map_c, weighted ? w : NULL, x, oc};
            GC_OK(g, g->cpu->moe_unpermute(g->cpu, &ud, GE));
            gc_poison(g, d_o, T * C * esz);
            ud.row_of = d_map, ud.weights = weighted ? d_w : NULL, ud.in = d_x, ud.out = d_o;
            GC_OK(g, g->gpu->moe_unpermute(g->gpu, &ud, GE));
            gc_get(g, og, d_o, T * C * esz);
            gc_check(g, weighted ? "moe combine" : "moe unpermute (sum)", cas, dt, og, oc, T * C, TOL_EXACT);
        }
        void *dy = gc_randn(g, dt, T * C, 1.0), *d_dy = gc_dup(g, dy, T * C * esz);
        void *dic = gc_halloc(TK * C * esz), *dig = gc_halloc(TK * C * esz), *d_di = gc_dalloc(g, TK * C * esz);
        float *dwc = gc_halloc(TK * 4), *dwg = gc_halloc(TK * 4), *d_dwt = gc_dalloc(g, TK * 4);
        MoeUnpermuteBwdDesc bd = {T, k, C, dt, map_c, w, dy, x, dic, dwc};
        GC_OK(g, g->cpu->moe_unpermute_bwd(g->cpu, &bd, GE));
        gc_poison(g, d_di, TK * C * esz), gc_poison(g, d_dwt, TK * 4);
        bd.row_of = d_map, bd.weights = d_w, bd.dout = d_dy, bd.in = d_x, bd.din = d_di, bd.dweights = d_dwt;
        GC_OK(g, g->gpu->moe_unpermute_bwd(g->gpu, &bd, GE));
        gc_get(g, dig, d_di, TK * C * esz), gc_get(g, dwg, d_dwt, TK * 4);
        gc_check(g, "moe combine bwd din", cas, dt, dig, dic, TK * C, TOL_EXACT);
        gc_check(g, "moe combine bwd dweights", cas, DT_FP32, dwg, dwc, TK, TOL_EXACT);
        gc_dfree(g, d_w), gc_dfree(g, d_x), gc_dfree(g, d_o), gc_dfree(g, d_dy), gc_dfree(g, d_di);
        gc_dfree(g, d_dwt);
        free(w), free(x), free(oc), free(og), free(dy), free(dic), free(dig), free(dwc), free(dwg);
    }
    gc_dfree(g, d_ids), gc_dfree(g, d_map), gc_dfree(g, d_in), gc_dfree(g, d_p);
    free(ids), free(map_c), free(map_g), free(in), free(pc), free(pg);
}

static void check_permute(Gc *g)
{
    perm_case(g, DT_BF16, gc_n(g, 2048, 96), 16, 4, 256); /* rows of 512 bytes: 16-byte words */
    perm_case(g, DT_FP32, gc_n(g, 500, 50), 8, 2, 36);
    perm_case(g, DT_E4M3, gc_n(g, 777, 77), 32, 6, 100); /* rows of 100 bytes: byte copies */
}

/* ---- grouped GEMMs ------------------------------------------------------------------------------------ */

/* Ragged counts over G groups, group 2 empty, about `avg` rows each; returns the total. */
static uint64_t ragged_counts(Gc *g, int32_t *counts, uint32_t G, uint64_t avg)
{
    uint64_t rows = 0;
    for (uint32_t x = 0; x < G; x++) {
        counts[x] = x == 2 ? 0 : (int32_t)(1 + rng_below(&g->rng, 2 * avg));
        rows += (uint64_t)counts[x];
    }
    return rows;
}

/* An operand of n values in dt (FP8: quantized N(0,1) with one scale per group, scale_inv in s). */
static void *gemm_operand(Gc *g, Dtype dt, uint64_t n, uint32_t G, float *s)
{
    if (!dtype_is_fp8(dt)) return gc_randn(g, dt, n, 1.0);
    float *x = gc_randn(g, DT_FP32, n, 1.0);
    uint8_t *q = gc_halloc(n);
    for (uint32_t x0 = 0; x0 < G; x0++) s[x0] = 1.0f / (32.0f + (float)x0); /* scale_inv; codes up to ~4·32 */
    for (uint64_t i = 0; i < n; i++) elem_store(q, dt, i, x[i] * 32.0f);
    free(x);
    return q;
}

typedef struct {
    const char *name;
    Dtype ab, d;
    GemmLayout bl;
    GemmAccPrecision ap;
    Tol tol;
} GroupCase;

static void grouped_case(Gc *g, const GroupCase *c, uint32_t G, uint64_t N, uint64_t K)
{
    int32_t counts[16];
    uint64_t rows = ragged_counts(g, counts, G, gc_n(g, 96, 12));
    const uint64_t sa = dtype_bytes(c->ab), sd = dtype_bytes(c->d);
    float sca[16], scb[16], amax_c = 0.0f, amax_g = 0.0f;
    void *a = gemm_operand(g, c->ab, rows * K, G, sca), *b = gemm_operand(g, c->ab, (uint64_t)G * N * K, G, scb);
    for (uint32_t x = 0; x < G; x++) sca[x] = 1.0f / 32.0f; /* A: one scale for all rows, one copy per group */
    void *dc = gc_halloc(rows * N * sd), *dg = gc_halloc(rows * N * sd);
    int fp8 = dtype_is_fp8(c->ab);
    GroupedGemmDesc d = {.groups = G, .rows = rows, .n = N, .k = K, .counts = counts, .acc_precision = c->ap};
    d.a = (GemmOperand){.ptr = a, .dtype = c->ab, .scale_inv = fp8 ? sca : NULL};
    d.b = (GemmOperand){.ptr = b, .dtype = c->ab, .layout = c->bl, .scale_inv = fp8 ? scb : NULL};
    d.d = (GemmOutput){.ptr = dc, .dtype = c->d, .amax = &amax_c};
    GC_OK(g, g->cpu->grouped_gemm(g->cpu, &d, GE));
    int32_t *d_counts = gc_dup(g, counts, G * 4);
    void *d_a = gc_dup(g, a, rows * K * sa), *d_b = gc_dup(g, b, (uint64_t)G * N * K * sa);
    void *d_d = gc_dalloc(g, rows * N * sd);
    float *d_sc = gc_dup(g, sca, sizeof sca), *d_sb = gc_dup(g, scb, sizeof scb), *d_amax = gc_dup(g, &amax_g, 4);
    gc_poison(g, d_d, rows * N * sd);
    d.counts = d_counts, d.a.ptr = d_a, d.b.ptr = d_b, d.d.ptr = d_d, d.d.amax = d_amax;
    d.a.scale_inv = fp8 ? d_sc : NULL, d.b.scale_inv = fp8 ? d_sb : NULL;
    GC_OK(g, g->gpu->grouped_gemm(g->gpu, &d, GE));
    gc_get(g, dg, d_d, rows * N * sd), gc_get(g, &amax_g, d_amax, 4);
    char cas[160];
    snprintf(cas, sizeof cas, "%s G=%u rows=%llu N=%llu K=%llu", c->name, G, (unsigned long long)rows,
             (unsigned long long)N, (unsigned long long)K);
    gc_check(g, "grouped gemm", cas, c->d, dg, dc, rows * N, c->tol);
    Tol ta = c->d == DT_BF16 ? (Tol){U_BF16, 0.0, U_BF16, "amax of BF16-rounded outputs", 0.0} : c->tol;
    gc_check(g, "grouped gemm amax", cas, DT_FP32, &amax_g, &amax_c, 1, ta);
    gc_dfree(g, d_counts), gc_dfree(g, d_a), gc_dfree(g, d_b), gc_dfree(g, d_d), gc_dfree(g, d_sc);
    gc_dfree(g, d_sb), gc_dfree(g, d_amax);
    free(a), free(b), free(dc), free(dg);
}

/* The weight gradient, BF16 (rows, M) x (rows, N) K-outer into FP32 (G, M, N): overwrite, so the empty
 * group must come back zero from poison, then accumulate onto it. */
static void wgrad_case(Gc *g, uint32_t G, uint64_t M, uint64_t N)
{
    int32_t counts[16];
    uint64_t rows = ragged_counts(g, counts, G, gc_n(g, 96, 12)), nd = (uint64_t)G * M * N;
    void *a = gc_randn(g, DT_BF16, rows * M, 1.0), *b = gc_randn(g, DT_BF16, rows * N, 1.0);
    float *dc = gc_halloc(nd * 4), *dg = gc_halloc(nd * 4);
    GroupedWgradDesc d = {.groups = G, .rows = rows, .m = M, .n = N, .counts = counts};
    d.a = (GemmOperand){.ptr = a, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    d.b = (GemmOperand){.ptr = b, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    d.d = (GemmOutput){.ptr = dc, .dtype = DT_FP32};
    int32_t *d_counts = gc_dup(g, counts, G * 4);
    void *d_a = gc_dup(g, a, rows * M * 2), *d_b = gc_dup(g, b, rows * N * 2);
    float *d_d = gc_dalloc(g, nd * 4);
    gc_poison(g, d_d, nd * 4);
    char cas[160];
    snprintf(cas, sizeof cas, "bf16 G=%u rows=%llu M=%llu N=%llu", G, (unsigned long long)rows, (unsigned long long)M,
             (unsigned long long)N);
    for (int acc = 0; acc < 2; acc++) {
        d.accum = acc ? GEMM_ACCUMULATE : GEMM_OVERWRITE;
        d.counts = counts, d.a.ptr = a, d.b.ptr = b, d.d.ptr = dc;
        GC_OK(g, g->cpu->grouped_gemm_wgrad(g->cpu, &d, GE));
        d.counts = d_counts, d.a.ptr = d_a, d.b.ptr = d_b, d.d.ptr = d_d;
        GC_OK(g, g->gpu->grouped_gemm_wgrad(g->gpu, &d, GE));
        gc_get(g, dg, d_d, nd * 4);
        gc_check(g, acc ? "grouped wgrad accumulate" : "grouped wgrad", cas, DT_FP32, dg, dc, nd, TOL_GEMM_F32);
    }
    gc_dfree(g, d_counts), gc_dfree(g, d_a), gc_dfree(g, d_b), gc_dfree(g, d_d);
    free(a), free(b), free(dc), free(dg);
}

/* The FP8 weight gradient: E5M2 dY and E4M3 X transposed copies (M, rows), (N, rows) K-inner, a scale per
 * group, into FP32 (G, M, N), accumulating. Its groups start at any row: the GPU stages them aligned. */
static void wgrad_fp8_case(Gc *g, uint32_t G, uint64_t M, uint64_t N)
{
    int32_t counts[16];
    uint64_t rows = ragged_counts(g, counts, G, gc_n(g, 96, 12)), nd = (uint64_t)G * M * N;
    float sa[16], sb[16];
    void *a = gemm_operand(g, DT_E5M2, M * rows, G, sa), *b = gemm_operand(g, DT_E4M3, N * rows, G, sb);
    float *d0 = gc_randn(g, DT_FP32, nd, 1.0), *dc = gc_halloc(nd * 4), *dg = gc_halloc(nd * 4);
    memcpy(dc, d0, nd * 4);
    GroupedWgradDesc d = {.groups = G, .rows = rows, .m = M, .n = N, .counts = counts, .accum = GEMM_ACCUMULATE};
    d.a = (GemmOperand){.ptr = a, .dtype = DT_E5M2, .scale_inv = sa};
    d.b = (GemmOperand){.ptr = b, .dtype = DT_E4M3, .scale_inv = sb};
    d.d = (GemmOutput){.ptr = dc, .dtype = DT_FP32};
    GC_OK(g, g->cpu->grouped_gemm_wgrad(g->cpu, &d, GE));
    int32_t *d_counts = gc_dup(g, counts, G * 4);
    void *d_a = gc_dup(g, a, M * rows), *d_b = gc_dup(g, b, N * rows);
    float *d_d = gc_dup(g, d0, nd * 4), *d_sa = gc_dup(g, sa, sizeof sa), *d_sb = gc_dup(g, sb, sizeof sb);
    d.counts = d_counts, d.a.ptr = d_a, d.b.ptr = d_b, d.d.ptr = d_d, d.a.scale_inv = d_sa, d.b.scale_inv = d_sb;
    GC_OK(g, g->gpu->grouped_gemm_wgrad(g->gpu, &d, GE));
    gc_get(g, dg, d_d, nd * 4);
    char cas[160];
    snprintf(cas, sizeof cas, "e5m2xe4m3 G=%u rows=%llu M=%llu N=%llu", G, (unsigned long long)rows,
             (unsigned long long)M, (unsigned long long)N);
    gc_check(g, "grouped wgrad fp8", cas, DT_FP32, dg, dc, nd, tol_split_f32(128)); /* the widest chunk */
    gc_dfree(g, d_counts), gc_dfree(g, d_a), gc_dfree(g, d_b), gc_dfree(g, d_d), gc_dfree(g, d_sa);
    gc_dfree(g, d_sb);
    free(a), free(b), free(d0), free(dc), free(dg);
}

/* The experts' casts: each expert's rows [r_g, r_g + m_g) of a (R, C) tensor cast with its own scale, the
 * row-wise copy in place and the transposed one as columns r_g.. of (C, R) (col_ld R). mult: the counts'
 * multiple (16 with C a multiple of 16: the GPU's 16-byte path). Exact: the casts' arithmetic is shared. */
static void cast_slices_case(Gc *g, uint32_t G, uint64_t C, int32_t mult)
{
    int32_t counts[16];
    uint64_t R = 0;
    for (uint32_t x = 0; x < G; x++) {
        counts[x] = x == 1 ? 0 : (int32_t)(mult * (1 + (int32_t)rng_below(&g->rng, 6)));
        R += (uint64_t)counts[x];
    }
    void *in = gc_randn(g, DT_BF16, R * C, 2.0);
    uint8_t *rc = gc_halloc(R * C), *cc = gc_halloc(R * C), *rg = gc_halloc(R * C), *cg = gc_halloc(R * C);
    float sc[3 * 16], sg[3 * 16]; /* scale, scale_inv, amax per expert */
    memset(sc, 0, sizeof sc);
    for (uint32_t x = 0; x < G; x++) sc[x] = 448.0f / (6.0f + (float)x);
    void *d_in = gc_dup(g, in, R * C * 2), *d_r = gc_dalloc(g, R * C), *d_c = gc_dalloc(g, R * C);
    float *d_sc = gc_dup(g, sc, sizeof sc);
    memset(rc, 0xff, R * C), memset(cc, 0xff, R * C); /* the empty expert's nothing stays as it was */
    gc_put(g, d_r, rc, R * C), gc_put(g, d_c, cc, R * C);
    for (int side = 0; side < 2; side++) {
        Backend *bk = side ? g->gpu : g->cpu;
        const char *src = side ? d_in : in;
        uint8_t *row = side ? d_r : rc, *col = side ? d_c : cc;
        float *s = side ? d_sc : sc;
        for (uint64_t x = 0, r0 = 0; x < G; r0 += (uint64_t)counts[x], x++) {
            if (!counts[x]) continue;
            CastDesc cd = {.in = src + r0 * C * 2,
                           .in_dtype = DT_BF16,
                           .rows = (uint64_t)counts[x],
                           .cols = C,
                           .out_dtype = DT_E4M3,
                           .out_row = row + r0 * C,
                           .out_col = col + r0,
                           .col_ld = R,
                           .scale = s + x,
                           .scale_inv = s + 16 + x,
                           .amax = s + 32 + x};
            GC_OK(g, bk->cast_transpose(bk, &cd, GE));
        }
    }
    gc_get(g, rg, d_r, R * C), gc_get(g, cg, d_c, R * C), gc_get(g, sg, d_sc, sizeof sg);
    char cas[128];
    snprintf(cas, sizeof cas, "bf16 G=%u R=%llu C=%llu -> e4m3", G, (unsigned long long)R, (unsigned long long)C);
    gc_check(g, "expert cast row", cas, DT_E4M3, rg, rc, R * C, TOL_EXACT);
    gc_check(g, "expert cast col (col_ld)", cas, DT_E4M3, cg, cc, R * C, TOL_EXACT);
    gc_check(g, "expert cast scale_inv, amax", cas, DT_FP32, sg + 16, sc + 16, 32, TOL_EXACT);
    gc_dfree(g, d_in), gc_dfree(g, d_r), gc_dfree(g, d_c), gc_dfree(g, d_sc);
    free(in), free(rc), free(cc), free(rg), free(cg);
}

static void check_grouped(Gc *g)
{
    cast_slices_case(g, 6, 64, 16);
    cast_slices_case(g, 5, 72, 7);
    const GroupCase cs[] = {
        {"bf16 fprop", DT_BF16, DT_BF16, GEMM_K_INNER, GEMM_ACC_SPLIT, TOL_GEMM_BF16},
        {"bf16 dgrad (B k-outer)", DT_BF16, DT_BF16, GEMM_K_OUTER, GEMM_ACC_SPLIT, TOL_GEMM_BF16},
        {"bf16 fp32 out", DT_BF16, DT_FP32, GEMM_K_INNER, GEMM_ACC_SPLIT, TOL_GEMM_F32},
        {"e4m3 fprop split", DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_ACC_SPLIT, TOL_GEMM_BF16},
        {"e4m3 fprop fast", DT_E4M3, DT_BF16, GEMM_K_INNER, GEMM_ACC_FAST, tol_fast(256)},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) grouped_case(g, &cs[i], 8, 128, 256);
    wgrad_case(g, 8, 128, 64);
    wgrad_fp8_case(g, 8, 128, 64);
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_moe", argc, argv);
    Gc g;
    gc_init_check(&g, "gpu_moe", argc, argv);
    check_router(&g);
    check_permute(&g);
    check_grouped(&g);
    return gc_finish(&g);
}
