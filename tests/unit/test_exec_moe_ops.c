/* tests/unit/test_exec_moe_ops.c — a mixture-of-experts layer's routing and
 * data movement on the CPU reference (exec/backend/backend_desc.h: RouterDesc ...
 * MoeUnpermuteBwdDesc), through the Backend table:
 *   - router_topk on 3 tokens, 4 experts, top-2, worked by hand: softmax with
 *     and without normalised weights, sigmoid with DeepSeek-V3's selection-only
 *     bias and routed scale 2.5, ties going to the lower expert id, and
 *     group-limited routing with and without a bias;
 *   - router_aux_loss by hand (softmax and sigmoid's normalised scores);
 *   - router_bwd (with the aux loss's gradient) against central finite
 *     differences of the forward;
 *   - permute / unpermute / the combine's backward by hand, and round trips;
 *   - DeepSeek-V3's routing (256 experts in 8 groups, 4 open, top-8, sigmoid
 *     with a bias) checked against the definition (the open groups, every
 *     chosen key ≥ every other open one, ties to the lower id).
 *
 * Tolerances, derived. Scores from logf/expf-made logits carry a few FP32
 * roundings each (logf's input rounding scales by |z| ≤ 1.4, expf ≤ 1 ulp,
 * the sum and the quotient 1 each), so RTOL_SCORE = 8·2^-24 bounds a score
 * or a weight (a ratio of two). Finite differences: the forward is FP32, L is
 * summed in double from its outputs; with h = 2^-7 the rounding term is about
 * 2·4·2^-24·Σ|g·w| / (2h) ≈ 3e-5 and the truncation h²/6·|L'''| ≈ 1e-5 for
 * these smooth maps (|L'''| of order 1 on logits of size ~1), so FD_TOL = 2e-4
 * covers both, and a wrong or missing term (of order 0.1 here) fails. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "test.h"

#define RTOL_SCORE (8.0 * 0x1p-24)
#define FD_H       0x1p-7
#define FD_TOL     2e-4

enum { T3 = 3, E4 = 4, K2 = 2 };

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

typedef struct {
    float scores[T3 * E4], weights[T3 * K2];
    int32_t ids[T3 * K2], counts[E4];
} Routed;

static Status route(Backend *bk, RouterType score, int norm, float scale, const float *logits, const float *bias,
                    Routed *r, Err *e)
{
    RouterDesc d = {.tokens = T3,
                    .experts = E4,
                    .k = K2,
                    .score = score,
                    .norm_topk = norm,
                    .weight_scale = scale,
                    .logits = logits,
                    .bias = bias,
                    .scores = r->scores,
                    .ids = r->ids,
                    .weights = r->weights,
                    .counts = r->counts};
    return bk->router_topk(bk, &d, e);
}

/* Softmax. t0: equal logits: s = 1/4 each (exact), a 4-way tie -> experts 0, 1, weights 1/2, 1/2.
 * t1: logits ln(1, 4, 2, 3): s = (1, 4, 2, 3)/10 -> experts 1 (0.4), 3 (0.3); normalised 4/7, 3/7,
 * else 0.4, 0.3. t2: ln(3, 3, 2, 2): s = (0.3, 0.3, 0.2, 0.2), a tie -> 0, 1, weights 1/2 each.
 * Counts: expert 0 {t0, t2} 2, expert 1 {t0, t1, t2} 3, expert 2 none, expert 3 {t1} 1. */
static void test_router_softmax_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    float z[T3 * E4] = {0, 0, 0, 0, 0, logf(4), logf(2), logf(3), logf(3), logf(3), logf(2), logf(2)};
    Routed r;
    Err e = {0};
    CHECKF(route(bk, ROUTER_SOFTMAX, 1, 1.0f, z, NULL, &r, &e) == ST_OK, "%s", e.msg);
    const int32_t ids[T3 * K2] = {0, 1, 1, 3, 0, 1}, counts[E4] = {2, 3, 0, 1};
    CHECK(!memcmp(r.ids, ids, sizeof ids));
    CHECK(!memcmp(r.counts, counts, sizeof counts));
    for (int x = 0; x < E4; x++) CHECK(r.scores[x] == 0.25f);
    const double s1[E4] = {0.1, 0.4, 0.2, 0.3}, s2[E4] = {0.3, 0.3, 0.2, 0.2};
    for (int x = 0; x < E4; x++) {
        CHECK_REL(r.scores[E4 + x], s1[x], RTOL_SCORE);
        CHECK_REL(r.scores[2 * E4 + x], s2[x], RTOL_SCORE);
    }
    CHECK(r.weights[0] == 0.5f && r.weights[1] == 0.5f && r.weights[4] == 0.5f && r.weights[5] == 0.5f);
    CHECK_REL(r.weights[2], 4.0 / 7.0, RTOL_SCORE);
    CHECK_REL(r.weights[3], 3.0 / 7.0, RTOL_SCORE);
    /* without normalisation the weights are the scores times the scale (DeepSeek-V2's form), 2 here */
    CHECKF(route(bk, ROUTER_SOFTMAX, 0, 2.0f, z, NULL, &r, &e) == ST_OK, "%s", e.msg);
    CHECK(r.weights[0] == 0.5f && r.weights[1] == 0.5f);
    CHECK_REL(r.weights[2], 0.8, RTOL_SCORE);
    CHECK_REL(r.weights[3], 0.6, RTOL_SCORE);
    bk->destroy(bk);
}

/* Sigmoid (DeepSeek-V3): logits 0, ±ln 3 give s = 1/2, 3/4, 1/4. Bias (0, 0, 1/2, 0) steers the choice
 * to expert 2; the weights use the un-biased scores, normalised, times 2.5.
 * t0: s (3/4, 1/2, 1/2, 1/4), keys (3/4, 1/2, 1, 1/4) -> 2, 0; w = 2.5·(0.5, 0.75)/1.25 = 1, 1.5.
 * t1: s (1/2, 1/2, 1/4, 1/2), keys (1/2, 1/2, 3/4, 1/2) -> 2, then 0 (3-way tie); w = 2.5·(1/3, 2/3).
 * t2: s (1/4, 3/4, 1/2, 3/4), keys (1/4, 3/4, 1, 3/4) -> 2, then 1 (tie with 3); w = 1, 1.5.
 * Counts (2, 1, 3, 0). Unbiased, t0 would pick 0 (3/4) then 1 (1/2, tie with 2). */
static void test_router_sigmoid_bias_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    float l3 = logf(3.0f);
    float z[T3 * E4] = {l3, 0, 0, -l3, 0, 0, -l3, 0, -l3, l3, 0, l3}, bias[E4] = {0, 0, 0.5f, 0};
    Routed r;
    Err e = {0};
    CHECKF(route(bk, ROUTER_SIGMOID, 1, 2.5f, z, bias, &r, &e) == ST_OK, "%s", e.msg);
    const int32_t ids[T3 * K2] = {2, 0, 2, 0, 2, 1}, counts[E4] = {2, 1, 3, 0};
    CHECK(!memcmp(r.ids, ids, sizeof ids));
    CHECK(!memcmp(r.counts, counts, sizeof counts));
    const double s0[E4] = {0.75, 0.5, 0.5, 0.25}, w[T3 * K2] = {1.0, 1.5, 2.5 / 3, 5.0 / 3, 1.0, 1.5};
    for (int x = 0; x < E4; x++) CHECK_REL(r.scores[x], s0[x], RTOL_SCORE);
    for (int i = 0; i < T3 * K2; i++) CHECK_REL(r.weights[i], w[i], RTOL_SCORE);
    CHECKF(route(bk, ROUTER_SIGMOID, 1, 2.5f, z, NULL, &r, &e) == ST_OK, "%s", e.msg);
    CHECK(r.ids[0] == 0 && r.ids[1] == 1);
    bk->destroy(bk);
}

/* Group-limited routing, 1 token, 8 experts in 4 groups of 2, 2 groups open, top-3, sigmoid.
 * With a bias: logits 0 (s = 1/2 each), bias (0.4, -0.5 | 0, 0 | 0.25, 0.25 | -0.25, -0.25): keys
 * (0.9, 0 | 0.5, 0.5 | 0.75, 0.75 | 0.25, 0.25), group scores (two best keys) 0.9, 1, 1.5, 0.5: groups
 * 2 and 1 open -> experts 4, 5 (0.75, a tie: 4 first), then 2 (0.5, tie with 3); weights 1/3 each.
 * Ungrouped the choice would be 0, 4, 5.
 * Without a bias a group scores its best key alone: logits (ln 3, -ln 3 | 0, ln 3 | -ln 3 ...): s =
 * (3/4, 1/4 | 1/2, 3/4 | 1/4, 1/4 | 1/4, 1/4), one group open, top-2: groups 0 and 1 tie at 3/4 -> group
 * 0 (the lower id; by sums group 1's 5/4 would win) -> experts 0, 1, weights 3/4, 1/4. */
static void test_router_groups_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { E = 8 };
    float z[E] = {0}, s[E], w[3], bias[E] = {0.4f, -0.5f, 0, 0, 0.25f, 0.25f, -0.25f, -0.25f};
    int32_t ids[3], counts[E];
    RouterDesc d = {1, E, 3, ROUTER_SIGMOID, 1, 1.0f, 4, 2, z, bias, s, ids, w, counts};
    Err e = {0};
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(ids[0] == 4 && ids[1] == 5 && ids[2] == 2);
    for (int j = 0; j < 3; j++) CHECK_REL(w[j], 1.0 / 3.0, RTOL_SCORE);
    d.groups = 0;
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(ids[0] == 0 && ids[1] == 4 && ids[2] == 5);
    float l3 = logf(3.0f), z2[E] = {l3, -l3, 0, l3, -l3, -l3, -l3, -l3};
    RouterDesc u = {1, E, 2, ROUTER_SIGMOID, 1, 1.0f, 4, 1, z2, NULL, s, ids, w, counts};
    CHECKF(bk->router_topk(bk, &u, &e) == ST_OK, "%s", e.msg);
    CHECK(ids[0] == 0 && ids[1] == 1);
    CHECK_REL(w[0], 0.75, RTOL_SCORE);
    CHECK_REL(w[1], 0.25, RTOL_SCORE);
    bk->destroy(bk);
}

/* The balance loss, coeff 1, on the scores above (typed in, so only the loss is under test):
 *   softmax: P = ((.25+.1+.3), (.25+.4+.3), (.25+.2+.2), (.25+.3+.2))/3, f = (2, 3, 0, 1)/6,
 *            loss = 4·Σ f·P = 4·(1.3 + 2.85 + 0.75)/18 = 49/45; d loss/d s[t][e] = 4·f_e/3 = (4/9, 2/3, 0, 2/9);
 *   sigmoid: p = s / row sum: t0 (3/8, 1/4, 1/4, 1/8), t1 (2, 2, 1, 2)/7, t2 (1/9, 1/3, 2/9, 1/3);
 *            f = (2, 1, 3, 0)/6; loss = 4·(1/3·389/504 + 1/6·438/504 + 1/2·310/504)/3 = 1073/1134;
 *            t0's gradient: g = 4·f/3 = (4/9, 2/9, 2/3, 0), Σ g·s / S = (7/9)/2 = 7/18,
 *            ds = (g − 7/18)/2 = (1/36, −1/12, 5/36, −7/36);
 *   one sequence-parallel shard of two, the other's counts given: below. */
static void test_aux_loss_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    const float soft[T3 * E4] = {.25f, .25f, .25f, .25f, .1f, .4f, .2f, .3f, .3f, .3f, .2f, .2f};
    const float sig[T3 * E4] = {.75f, .5f, .5f, .25f, .5f, .5f, .25f, .5f, .25f, .75f, .5f, .75f};
    const int32_t ids_soft[T3 * K2] = {0, 1, 1, 3, 0, 1}, ids_sig[T3 * K2] = {2, 0, 2, 0, 2, 1};
    float loss = -1, ds[T3 * E4];
    RouterAuxDesc d = {.tokens = T3,
                       .experts = E4,
                       .k = K2,
                       .score = ROUTER_SOFTMAX,
                       .coeff = 1.0f,
                       .scores = soft,
                       .ids = ids_soft,
                       .loss = &loss,
                       .dloss = 1.0f,
                       .dscores = ds};
    Err e = {0};
    CHECKF(bk->router_aux_loss(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(loss, 49.0 / 45.0, 4 * 0x1p-24);
    const double g[E4] = {4.0 / 9, 2.0 / 3, 0, 2.0 / 9};
    for (int t = 0; t < T3; t++)
        for (int x = 0; x < E4; x++) CHECK_REL(ds[t * E4 + x], g[x], 2 * 0x1p-24);
    d.score = ROUTER_SIGMOID, d.scores = sig, d.ids = ids_sig, d.coeff = 0.5f, d.dloss = 2.0f;
    CHECKF(bk->router_aux_loss(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(loss, 0.5 * 1073.0 / 1134.0, 4 * 0x1p-24);
    const double ds0[E4] = {1.0 / 36, -1.0 / 12, 5.0 / 36, -7.0 / 36}; /* coeff 1/2 · dloss 2 = 1 */
    for (int x = 0; x < E4; x++) CHECK_REL(ds[x], ds0[x], 4 * 0x1p-24);
    /* sequence parallelism: the softmax tokens as shard 0 of 2, shard 1 routing (0, 1, 3, 2) copies; n = (2, 3, 0, 1)
     * + (0, 1, 3, 2) = (2, 4, 3, 3) over 6 tokens, f = n/12; this shard's P sums (.65, .95, .65, .75);
     * loss = 4·Σ f·P/6 = 4·(1.3 + 3.8 + 1.95 + 2.25)/72 = 31/60 (its part); gradient 4·f/6 = (1, 2, 1.5, 1.5)/9 */
    const int32_t cnt[2 * E4] = {2, 3, 0, 1, 0, 1, 3, 2};
    d.score = ROUTER_SOFTMAX, d.scores = soft, d.ids = ids_soft, d.coeff = 1.0f, d.dloss = 1.0f;
    d.counts = cnt, d.shards = 2;
    CHECKF(bk->router_aux_loss(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(loss, 31.0 / 60.0, 4 * 0x1p-24);
    const double gs[E4] = {1.0 / 9, 2.0 / 9, 1.5 / 9, 1.5 / 9};
    for (int t = 0; t < T3; t++)
        for (int x = 0; x < E4; x++) CHECK_REL(ds[t * E4 + x], gs[x], 2 * 0x1p-24);
    d.shards = 0;
    CHECK(bk->router_aux_loss(bk, &d, &e) == ST_USAGE && strstr(e.msg, "counts of 0 shards"));
    bk->destroy(bk);
}

/* ---- router backward against finite differences -------------------------------------------- */

enum { FT = 4, FE = 6, FK = 3 };

typedef struct {
    RouterType score;
    int norm;
    float scale, coeff;
    const float *bias;
} FdCase;

/* L = Σ g·w + aux(s), in double from the FP32 outputs; ids into `ids` (the selection). */
static double fd_loss(Backend *bk, const FdCase *c, const float *z, const float *g, int32_t *ids, float *s)
{
    float w[FT * FK], loss = 0;
    int32_t counts[FE];
    RouterDesc d = {FT, FE, FK, c->score, c->norm, c->scale, 0, 0, z, c->bias, s, ids, w, counts};
    RouterAuxDesc a = {FT, FE, FK, c->score, c->coeff, s, ids, &loss, 1.0f, NULL, NULL, 0};
    Err e = {0};
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK && bk->router_aux_loss(bk, &a, &e) == ST_OK, "%s", e.msg);
    double L = loss;
    for (int i = 0; i < FT * FK; i++) L += (double)g[i] * w[i];
    return L;
}

static void fd_case(Backend *bk, const FdCase *c, Rng *r)
{
    float z[FT * FE], g[FT * FK], s[FT * FE], ds[FT * FE], dz[FT * FE], loss;
    int32_t ids[FT * FK], ids2[FT * FK];
    for (int i = 0; i < FT * FE; i++) z[i] = (float)(2 * rng_unit(r) - 1);
    for (int i = 0; i < FT * FK; i++) g[i] = (float)(2 * rng_unit(r) - 1);
    fd_loss(bk, c, z, g, ids, s);
    RouterAuxDesc a = {FT, FE, FK, c->score, c->coeff, s, ids, &loss, 1.0f, ds, NULL, 0};
    RouterBwdDesc b = {FT, FE, FK, c->score, c->norm, c->scale, s, ids, g, ds, dz};
    Err e = {0};
    CHECKF(bk->router_aux_loss(bk, &a, &e) == ST_OK && bk->router_bwd(bk, &b, &e) == ST_OK, "%s", e.msg);
    for (int i = 0; i < FT * FE; i++) {
        float z0 = z[i];
        float tmp[FT * FE];
        z[i] = z0 + (float)FD_H;
        double up = fd_loss(bk, c, z, g, ids2, tmp);
        CHECKF(!memcmp(ids, ids2, sizeof ids), "logit %d: the selection moved under +h", i);
        z[i] = z0 - (float)FD_H;
        double dn = fd_loss(bk, c, z, g, ids2, tmp);
        CHECKF(!memcmp(ids, ids2, sizeof ids), "logit %d: the selection moved under -h", i);
        z[i] = z0;
        double fd = (up - dn) / (2 * FD_H);
        CHECKF(fabs(dz[i] - fd) <= FD_TOL, "score %d norm %d logit %d: backward %.7g, finite difference %.7g",
               (int)c->score, c->norm, i, (double)dz[i], fd);
    }
}

static void test_router_bwd_finite_differences(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    const float bias[FE] = {0.3f, -0.2f, 0.1f, 0.0f, -0.4f, 0.25f};
    const FdCase cases[] = {
        {ROUTER_SOFTMAX, 1, 1.0f, 0.0f, NULL},  /* Qwen3 / Mixtral */
        {ROUTER_SOFTMAX, 0, 1.5f, 0.5f, NULL},  /* weights = scaled scores, with a balance loss */
        {ROUTER_SIGMOID, 1, 2.5f, 0.25f, bias}, /* DeepSeek-V3 */
        {ROUTER_SIGMOID, 0, 1.0f, 0.0f, bias},
    };
    Rng r = {42};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fd_case(bk, &cases[i], &r);
    bk->destroy(bk);
}

/* ---- permute, unpermute, the combine's backward ---------------------------------------------- */

/* ids t0 (0, 1), t1 (1, 3), t2 (0, 1) (the softmax case): expert 0 gets (t0, s0), (t2, s0) -> rows 0, 1;
 * expert 1 (t0, s1), (t1, s0), (t2, s1) -> rows 2, 3, 4; expert 3 (t1, s1) -> row 5. So row_of =
 * (0, 2 | 3, 5 | 1, 4) and the rows are x0, x2, x0, x1, x2, x1. */
static void test_permute_by_hand(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { C = 2 };
    const int32_t ids[T3 * K2] = {0, 1, 1, 3, 0, 1};
    const float x[T3 * C] = {1, 2, 3, 4, 5, 6};
    float px[T3 * K2 * C], y[T3 * C], w[T3 * K2] = {0.5f, 0.25f, 2.0f, -1.0f, 0.75f, 0.125f};
    int32_t row_of[T3 * K2];
    MoePermuteDesc p = {T3, E4, K2, C, DT_FP32, ids, x, px, row_of};
    Err e = {0};
    CHECKF(bk->moe_permute(bk, &p, &e) == ST_OK, "%s", e.msg);
    const int32_t want_map[T3 * K2] = {0, 2, 3, 5, 1, 4};
    const float want_px[T3 * K2 * C] = {1, 2, 5, 6, 1, 2, 3, 4, 5, 6, 3, 4};
    CHECK(!memcmp(row_of, want_map, sizeof want_map));
    CHECK(!memcmp(px, want_px, sizeof want_px));
    /* the combine: y_t = Σ_j w·x_t: t0 (0.75·1, 0.75·2), t1 (1·3, 1·4), t2 (0.875·5, 0.875·6), exact */
    MoeUnpermuteDesc u = {T3, K2, C, DT_FP32, row_of, w, px, y};
    CHECKF(bk->moe_unpermute(bk, &u, &e) == ST_OK, "%s", e.msg);
    const float want_y[T3 * C] = {0.75f, 1.5f, 3, 4, 4.375f, 5.25f};
    CHECK(!memcmp(y, want_y, sizeof want_y));
    /* the backward with dy = (1, -1 | 2, 0 | 0, 4) and the expert outputs px: d rows = w·dy of its token,
     * dweights = dy · row: t0 (1-2, 1-2) = (-1, -1), t1 (6, 6), t2 (24, 24) */
    const float dy[T3 * C] = {1, -1, 2, 0, 0, 4};
    float dpx[T3 * K2 * C], dw[T3 * K2];
    MoeUnpermuteBwdDesc b = {T3, K2, C, DT_FP32, row_of, w, dy, px, dpx, dw};
    CHECKF(bk->moe_unpermute_bwd(bk, &b, &e) == ST_OK, "%s", e.msg);
    const float want_dw[T3 * K2] = {-1, -1, 6, 6, 24, 24};
    const float want_dpx[T3 * K2 * C] = {0.5f, -0.5f, 0, 3, 0.25f, -0.25f, 4, 0, 0, 0.5f, -2, -0.0f}; /* −1·0 */
    CHECK(!memcmp(dw, want_dw, sizeof want_dw));
    CHECK(!memcmp(dpx, want_dpx, sizeof want_dpx));
    /* the permute's backward is the unpermute without weights: a token's copies summed, 2·x here */
    u.weights = NULL;
    CHECKF(bk->moe_unpermute(bk, &u, &e) == ST_OK, "%s", e.msg);
    for (int i = 0; i < T3 * C; i++) CHECK(y[i] == 2 * x[i]);
    bk->destroy(bk);
}

/* BF16 rows through permute and unpermute come back bit for bit: k = 1 with weight 1, and k = 2 with
 * weights 1/2, 1/2 (x/2 + x/2 = x exactly in FP32, then the same BF16 rounding of an exact BF16 value). */
static void test_round_trip_bf16(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { T = 200, E = 16, C = 48 };
    uint16_t *x = malloc(T * C * 2), *px = malloc(2 * T * C * 2), *y = malloc(T * C * 2);
    int32_t ids[2 * T], row_of[2 * T];
    float w[2 * T];
    CHECK(x && px && y);
    Rng r = {7};
    for (int i = 0; i < T * C; i++) x[i] = elem_bf16_from_f32((float)rng_normal(&r));
    for (uint32_t k = 1; k <= 2 && x && px && y; k++) {
        for (int t = 0; t < T; t++) {
            ids[k * t] = (int32_t)rng_below(&r, E);
            if (k == 2) ids[2 * t + 1] = (ids[2 * t] + 1 + (int32_t)rng_below(&r, E - 1)) % E;
            for (uint32_t j = 0; j < k; j++) w[k * t + j] = 1.0f / (float)k;
        }
        MoePermuteDesc p = {T, E, k, C, DT_BF16, ids, x, px, row_of};
        MoeUnpermuteDesc u = {T, k, C, DT_BF16, row_of, w, px, y};
        Err e = {0};
        CHECKF(bk->moe_permute(bk, &p, &e) == ST_OK && bk->moe_unpermute(bk, &u, &e) == ST_OK, "%s", e.msg);
        CHECKF(!memcmp(x, y, T * C * 2), "k = %u", k);
    }
    free(x), free(px), free(y);
    bk->destroy(bk);
}

/* ---- DeepSeek-V3's routing at its real expert count -------------------------------------------- */

/* 256 experts in 8 groups of which 4 are open to a token, top-8, sigmoid scores, a bias, weights
 * normalised and scaled by 2.5, on 512 tokens: checked against the definitions, not a second
 * implementation: every chosen expert in one of the 4 groups whose two best keys sum highest, every
 * chosen key ≥ every key left out in those groups (a tie only with a higher id left out), keys
 * descending, weights summing to 2.5, scores the
 * sigmoid of the logits (within 4·2^-24: expf, a sum, a quotient), counts adding up to 512·8; the permutation then puts every (token, slot)
 * in its expert's block, tokens increasing inside a block. */
static void test_deepseek_v3_routing(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    enum { T = 512, E = 256, K = 8, C = 4, NG = 8, NG_TOP = 4 };
    float *z = malloc(T * E * 4), *s = malloc(T * E * 4), bias[E], w[T * K];
    int32_t ids[T * K], counts[E], row_of[T * K];
    float *x = malloc(T * C * 4), *px = malloc(T * K * C * 4);
    CHECK(z && s && x && px);
    if (!z || !s || !x || !px) goto out;
    Rng r = {2412};
    for (int i = 0; i < T * E; i++) z[i] = (float)rng_normal(&r);
    for (int i = 0; i < E; i++) bias[i] = (float)(0.01 * (double)(i % 7)); /* ties among keys are possible */
    for (int i = 0; i < T * C; i++) x[i] = (float)(i / C);                 /* a row holds its token's index */
    RouterDesc d = {T, E, K, ROUTER_SIGMOID, 1, 2.5f, NG, NG_TOP, z, bias, s, ids, w, counts};
    Err e = {0};
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK, "%s", e.msg);
    long total = 0, bad = 0, regrouped = 0;
    for (int x2 = 0; x2 < E; x2++) total += counts[x2];
    CHECK_EQ_INT(total, T * K);
    for (int t = 0; t < T; t++) {
        double wsum = 0;
        char chosen[E] = {0}, open[NG] = {0};
        float gs[NG]; /* a group's score: its two largest keys summed */
        for (int g = 0; g < NG; g++) {
            float k1 = -INFINITY, k2 = -INFINITY;
            for (int o = g * (E / NG); o < (g + 1) * (E / NG); o++) {
                float ko = s[t * E + o] + bias[o];
                if (ko > k1)
                    k2 = k1, k1 = ko;
                else if (ko > k2)
                    k2 = ko;
            }
            gs[g] = k1 + k2;
        }
        for (int g = 0; g < NG; g++) { /* open: fewer than NG_TOP groups rank above it (ties to the lower id) */
            int above = 0;
            for (int h = 0; h < NG; h++) above += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
            open[g] = above < NG_TOP;
        }
        for (int j = 0; j < K; j++) {
            int id = ids[t * K + j];
            chosen[id] = 1;
            wsum += w[t * K + j];
            bad += !open[id / (E / NG)];
            float kj = s[t * E + id] + bias[id];
            if (j && (kj > s[t * E + ids[t * K + j - 1]] + bias[ids[t * K + j - 1]])) bad++;
            for (int o = 0; o < E; o++) {
                float ko = s[t * E + o] + bias[o];
                int better = !chosen[o] && o != id && (ko > kj || (ko == kj && o < id));
                bad += better && open[o / (E / NG)];
                regrouped += better && j == 0; /* an expert of a closed group beats the token's best */
            }
        }
        CHECK_REL(wsum, 2.5, K * RTOL_SCORE);
        for (int o = 0; o < E; o++) bad += fabs(s[t * E + o] - 1.0 / (1.0 + exp(-(double)z[t * E + o]))) > 4 * 0x1p-24;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(regrouped > 0); /* the grouping changed some token's choice, so the checks above saw it */
    MoePermuteDesc p = {T, E, K, C, DT_FP32, ids, x, px, row_of};
    CHECKF(bk->moe_permute(bk, &p, &e) == ST_OK, "%s", e.msg);
    int32_t start[E];
    for (int x2 = 0, acc = 0; x2 < E; acc += counts[x2], x2++) start[x2] = acc;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < K; j++) {
            int id = ids[t * K + j], row = row_of[t * K + j];
            bad += row < start[id] || row >= start[id] + counts[id] || px[row * C] != (float)t;
        }
    for (int row = 1; row < T * K; row++) /* inside a block, tokens increase */
        for (int x2 = 0; x2 < E; x2++)
            if (row > start[x2] && row < start[x2] + counts[x2]) bad += px[row * C] <= px[(row - 1) * C];
    CHECK_EQ_INT(bad, 0);
out:
    free(z), free(s), free(x), free(px);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_router_softmax_by_hand);
    RUN(test_router_sigmoid_bias_by_hand);
    RUN(test_router_groups_by_hand);
    RUN(test_aux_loss_by_hand);
    RUN(test_router_bwd_finite_differences);
    RUN(test_permute_by_hand);
    RUN(test_round_trip_bf16);
    RUN(test_deepseek_v3_routing);
    return test_summary();
}
