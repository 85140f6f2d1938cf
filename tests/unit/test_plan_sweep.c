/* tests/unit/test_plan_sweep.c — the layout sweep: counts, ranking, top-k. */
#include <stdlib.h>
#include <string.h>

#include "planner/plan_internal.h"
#include "planner/sweep.h"
#include "support/fixtures.h"
#include "test.h"

static Catalog *cat;

static uint64_t calls;
static void count(uint64_t done, uint64_t total, void *ctx)
{
    (void)done, (void)total, (void)ctx;
    calls++;
}

static void test_sweep_counts_and_ranking(void)
{
    const Recipe *recs[] = {catalog_recipe(cat, "megatron-bf16"), catalog_recipe(cat, "fp8lm"),
                            catalog_recipe(cat, "mxfp8")};
    SweepSpec s = {.recipes = recs, .nrecipes = 3, .gpus = 64};
    plan_input_defaults(&s.base);
    s.base.model = catalog_model(cat, "gpt-13b"), s.base.gpu = catalog_gpu(cat, "h100-sxm");
    Plan *top = calloc(50, sizeof *top);
    int n = 0;
    SweepStats st;
    Err e;
    CHECK(sweep_run(&s, top, 50, &n, &st, count, NULL, &e) == ST_OK);
    CHECK_EQ_U64(st.evaluated, sweep_size(&s));
    uint64_t rej = 0;
    for (int r = 0; r < REJECT_COUNT_; r++) rej += st.rejected[r];
    CHECK_EQ_U64(st.valid + rej, st.evaluated);
    CHECK(st.rejected[REJECT_HW] > 0); /* mxfp8 needs Blackwell */
    CHECK(st.rejected[REJECT_LAYERS_PP] > 0);
    CHECK(st.valid > st.oom);
    CHECK(calls > 0);
    CHECK_EQ_INT(n, 50);
    for (int i = 0; i < n; i++) {
        CHECK(top[i].fits);
        CHECK_EQ_U64(top[i].world, 64);
        CHECK_EQ_U64(top[i].in.gbs, top[0].in.gbs); /* one global batch for every layout */
        if (i) CHECK(top[i - 1].tokens_per_s >= top[i].tokens_per_s);
        CHECK(top[i].in.recipe != recs[2]);
    }
    /* k larger than what fits keeps everything that fits */
    Plan *all = calloc(st.valid - st.oom + 5, sizeof *all);
    int m = 0;
    SweepStats st2;
    CHECK(sweep_run(&s, all, (int)(st.valid - st.oom + 5), &m, &st2, NULL, NULL, &e) == ST_OK);
    CHECK_EQ_U64((uint64_t)m, st.valid - st.oom);
    CHECK(all[0].tokens_per_s == top[0].tokens_per_s);
    free(all);
    free(top);
    s.gpus = 0;
    CHECK(sweep_run(&s, NULL, 0, &n, &st, NULL, NULL, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "--gpus 0");
}

/* Open choices (base.mem_unknown): a layout whose low end fits is ranked with the ones that fit, marked
 * UNCERTAIN; without them the same layout is over the limit and not ranked. The GPU's memory is set to the
 * low end of the fastest layout (recompute none) as plan_build gives it, limit = capacity, no reserve: that
 * layout is uncertain by construction and comes first (nothing runs twice); full recompute keeps a layer's
 * input only (16 x 1024 x 2 B = 32 KiB a layer of the 4 x 1024 x 16 x ~40 B the others keep), far below what
 * the open choices save, so it fits. One GPU: TP = PP = CP = DP = 1, micro-batch 1. */
static void test_sweep_ranks_uncertain(void)
{
    ModelSpec m = fx_tiny_model();
    m.seq_len = 1024, m.hidden = 16, m.heads = 4;
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    const Recipe *recs[] = {&r};
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 8, in.frag_frac = 0, in.max_mem_frac = 1;
    in.mem_unknown = PLAN_UNK_FP8_WEIGHT_CACHE | PLAN_UNK_ATTN_OUT | PLAN_UNK_DENSE_ACT; /* not act_ckpt: full is a
                                                                                     layout of its own here */
    Plan p;
    Err e;
    CHECK(plan_build(&in, &p, &e) == ST_OK);
    CHECK(p.low_bytes < p.total_bytes);
    g.hbm_bytes = p.low_bytes;
    SweepSpec s = {.base = in, .recipes = recs, .nrecipes = 1, .gpus = 1, .max_mbs = 1};
    Plan top[16];
    int n_open = 0, n = 0, unc = 0, full_fits = 0;
    SweepStats st_open, st;
    CHECK(sweep_run(&s, top, 16, &n_open, &st_open, NULL, NULL, &e) == ST_OK);
    CHECK(n_open > 1);
    CHECK(top[0].verdict == PLAN_UNCERTAIN && top[0].in.recompute == RECOMPUTE_NONE && !top[0].fits);
    for (int i = 0; i < n_open; i++) {
        unc += top[i].verdict == PLAN_UNCERTAIN;
        full_fits += top[i].in.recompute == RECOMPUTE_FULL && top[i].verdict == PLAN_FITS;
    }
    CHECK(full_fits > 0);
    s.base.mem_unknown = 0;
    CHECK(sweep_run(&s, top, 16, &n, &st, NULL, NULL, &e) == ST_OK);
    CHECK_EQ_INT(n, n_open - unc); /* the uncertain layouts, now over the limit */
    CHECK_EQ_U64(st.oom, st_open.oom + (uint64_t)unc);
    for (int i = 0; i < n; i++) CHECK(top[i].verdict == PLAN_FITS && top[i].in.recompute != RECOMPUTE_NONE);
}

/* What the sweep shares between rows gives what planning each row alone gives, bit for bit: plan_sweep_build
 * with the geometry of the row before (same_layout: the rows differ in recompute and sharding only) against
 * plan_build_fast (memory_first 0) and plan_build_memory_first (1; a miss: the totals that rank it), over every
 * recompute and sharding of dense
 * and expert layouts (gpt-13b, mixtral-8x7b with EP 8), with a stack. plan_validate_head's reason is
 * plan_validate's for inputs that differ in what it does not read (tp 3 divides neither model's heads: both
 * REJECT_HEADS_TP whatever cp, dp, mbs, ep, recompute and sharding). */
static void test_sweep_build_shares_exactly(void)
{
    static const struct {
        const char *model;
        uint32_t tp, pp, cp, dp, ep, mbs;
    } rows[] = {{"gpt-13b", 1, 1, 1, 8, 1, 1},
                {"gpt-13b", 2, 4, 1, 2, 1, 2},
                {"gpt-13b", 8, 5, 2, 1, 1, 1},
                {"mixtral-8x7b", 2, 4, 1, 8, 8, 1},
                {"mixtral-8x7b", 1, 8, 1, 8, 8, 2}};
    static Plan a, b;
    int misses = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (int mf = 0; mf < 2; mf++) {
            PlanInput in;
            plan_input_defaults(&in);
            plan_input_use_stack(&in, catalog_stack(cat, "megatron-core"));
            in.model = catalog_model(cat, rows[i].model), in.gpu = catalog_gpu(cat, "h100-sxm");
            in.recipe = catalog_recipe(cat, "te-fp8");
            in.tp = rows[i].tp, in.pp = rows[i].pp, in.cp = rows[i].cp, in.dp = rows[i].dp, in.ep = rows[i].ep;
            in.mbs = rows[i].mbs, in.gbs = 256;
            PlanSweepGeo geo = {.have = 0};
            int built = 0;
            for (int rc = 0; rc < RECOMPUTE_COUNT_; rc++)
                for (int sh = 0; sh < SHARD_COUNT_; sh++) {
                    in.recompute = (Recompute)rc, in.sharding = (Sharding)sh;
                    PlanReject wa, wb;
                    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
                    Status sa = plan_sweep_build(&in, &geo, rc || sh, mf, &a, &wa);
                    Status sb = mf ? plan_build_memory_first(&in, &b, &wb) : plan_build_fast(&in, &b, &wb);
                    CHECKF(sa == sb, "%s row %zu rc %d sh %d", rows[i].model, i, rc, sh);
                    if (sa != ST_OK) {
                        CHECK(wa == wb);
                        continue;
                    }
                    built++;
                    if (mf && !plan_may_fit(&b)) { /* a miss: what ranks it */
                        misses++;
                        CHECK(a.total_bytes == b.total_bytes && a.limit_bytes == b.limit_bytes);
                        CHECK(a.capacity_bytes == b.capacity_bytes && a.low_bytes == b.low_bytes);
                        CHECK(a.fits == b.fits && a.verdict == b.verdict && a.stage == b.stage);
                        continue;
                    }
                    CHECKF(!memcmp(&a, &b, sizeof a), "%s row %zu rc %d sh %d memory_first %d: plans differ",
                           rows[i].model, i, rc, sh, mf);
                }
            CHECKF(built >= 8, "%s row %zu: %d built", rows[i].model, i, built);
            in.tp = 3; /* heads do not divide: the head's reason, whatever the rest */
            for (uint32_t k = 1; k <= 2; k++) {
                in.cp = k, in.dp = 3 - k, in.mbs = k, in.ep = k, in.recompute = (Recompute)k, in.sharding = (Sharding)k;
                CHECK(plan_validate_head(&in, NULL) == REJECT_HEADS_TP);
                CHECK(plan_validate(&in, NULL) == REJECT_HEADS_TP);
            }
        }
    CHECK(misses > 0); /* premise: some of these layouts do not fit 80 GB */
}

/* A plan context (planner/plan_ctx.h), made once for a model, GPU, recipe and stack, gives every layout the status,
 * reason and plan that plan_build_fast gives it, bit for bit: dense, grouped-query, expert, latent-attention + MTP
 * and MXFP8 rows, each over valid layouts (TP, PP, CP, DP, EP, micro-batch, recompute, sharding) and rejected ones
 * (tp 7 divides no row's heads; pp 7 none of their layer counts; ep 2 on a dense model; recompute out of range).
 * A context made for another row, a zeroed one and one of bad settings give the same answers too (plan_build_ctx
 * makes the input's own), and so does the sweep's, kept from row to row (plan_sweep_build). */
static void test_ctx_gives_the_same_plan(void)
{
    static const struct {
        const char *model, *gpu, *recipe, *stack;
        uint32_t first8; /* --first-stage-layers at pp 8 (deepseek-v3's 61 layers: 5 + 7 x 8) */
    } rows[] = {{"gpt-175b", "h100-sxm", "te-fp8", "megatron-core", 0},
                {"llama3-70b", "h100-sxm", "megatron-bf16", "torchtitan", 0},
                {"gpt-7b", "h100-sxm", "fp8lm", "fp8plan", 0},
                {"mixtral-8x7b", "h100-sxm", "te-fp8-current", "megatron-core", 0},
                {"deepseek-v3", "h800", "deepseek-v3", "megatron-core", 5},
                {"gpt-13b", "b200", "mxfp8", "megatron-lm", 0}};
    static const struct {
        uint32_t tp, pp, cp, dp, ep, mbs; /* ep: for the expert rows (the dense ones 1), but the layout of ep 2 */
        int rc, sh;
        PlanReject want; /* REJECT_NONE: whatever plan_build_fast says (built, or over the layout's checks) */
    } lays[] = {{8, 4, 1, 4, 1, 1, RECOMPUTE_NONE, SHARD_NONE, REJECT_NONE},
                {8, 1, 1, 8, 2, 1, RECOMPUTE_NONE, SHARD_NONE, REJECT_NONE},
                {8, 8, 1, 2, 8, 1, RECOMPUTE_SELECTIVE, SHARD_DIST_OPT, REJECT_NONE},
                {4, 2, 2, 4, 4, 2, RECOMPUTE_FULL, SHARD_DIST_OPT, REJECT_NONE},
                {1, 1, 1, 64, 8, 1, RECOMPUTE_FULL, SHARD_ZERO3, REJECT_NONE},
                {2, 16, 1, 2, 2, 1, RECOMPUTE_NONE, SHARD_ZERO1, REJECT_NONE},
                {7, 1, 1, 1, 1, 1, RECOMPUTE_NONE, SHARD_NONE, REJECT_HEADS_TP},
                {1, 7, 1, 1, 1, 1, RECOMPUTE_NONE, SHARD_NONE, REJECT_LAYERS_PP},
                {8, 1, 1, 8, 1, 1, RECOMPUTE_COUNT_, SHARD_NONE, REJECT_KNOB}};
    static Plan a, b, c;
    static PlanSweepGeo sw; /* one for every row, as sweep_run keeps it */
    PlanCtx other, zero, bad;
    memset(&zero, 0, sizeof zero);
    int built = 0, ep_dense = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        PlanInput in;
        plan_input_defaults(&in);
        plan_input_use_stack(&in, catalog_stack(cat, rows[i].stack));
        in.model = catalog_model(cat, rows[i].model), in.gpu = catalog_gpu(cat, rows[i].gpu);
        in.recipe = catalog_recipe(cat, rows[i].recipe);
        CHECKF(in.model && in.gpu && in.recipe && in.stack, "row %zu: not in the catalog", i);
        if (!in.model || !in.gpu || !in.recipe || !in.stack) continue;
        PlanCtx cx;
        plan_ctx_init(&cx, &in); /* once for the row; the layouts below change nothing it reads */
        CHECK(cx.setup == REJECT_NONE);
        if (i == 0) other = cx;
        PlanInput badin = in;
        badin.eff_hbm = 2.0; /* out of [0.001, 1] */
        plan_ctx_init(&bad, &badin);
        CHECK(bad.setup == REJECT_KNOB && !plan_ctx_matches(&bad, &in) && !plan_ctx_matches(&zero, &in));
        PlanReject wb;
        CHECK(plan_build_ctx(&bad, &badin, &a, &wb) == ST_USAGE && wb == REJECT_KNOB);
        for (size_t l = 0; l < sizeof lays / sizeof *lays; l++) {
            in.tp = lays[l].tp, in.pp = lays[l].pp, in.cp = lays[l].cp, in.dp = lays[l].dp;
            in.ep = in.model->experts || lays[l].ep == 2 ? lays[l].ep : 1;
            in.first_stage_layers = in.pp == 8 ? rows[i].first8 : 0;
            in.mbs = lays[l].mbs, in.recompute = (Recompute)lays[l].rc, in.sharding = (Sharding)lays[l].sh;
            in.world = 0, in.gbs = 0;
            CHECK(plan_ctx_matches(&cx, &in));
            memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
            PlanReject wa, wf, wo, wz;
            Status sa = plan_build_ctx(&cx, &in, &a, &wa), sf = plan_build_fast(&in, &b, &wf);
            Status so = plan_build_ctx(&other, &in, &c, &wo);
            CHECKF(sa == sf && wa == wf, "%s layout %zu: status %d/%d, reason %d/%d", rows[i].model, l, sa, sf, wa, wf);
            CHECKF(so == sf && wo == wf, "%s layout %zu: another row's context", rows[i].model, l);
            CHECKF(wf == plan_validate(&in, NULL) || sf == ST_OVERFLOW, "%s layout %zu", rows[i].model, l);
            if (lays[l].want != REJECT_NONE) CHECKF(wa == lays[l].want, "%s layout %zu: %d", rows[i].model, l, wa);
            if (lays[l].ep > 1 && !in.model->experts) ep_dense += wa == REJECT_EP;
            if (sa != ST_OK) continue;
            built++;
            CHECKF(!memcmp(&a, &b, sizeof a), "%s layout %zu: plans differ", rows[i].model, l);
            CHECKF(!memcmp(&c, &b, sizeof c), "%s layout %zu: plans differ (another row's context)", rows[i].model, l);
            memset(&c, 0, sizeof c);
            CHECK(plan_build_ctx(&zero, &in, &c, &wz) == ST_OK && !memcmp(&c, &b, sizeof c));
            memset(&c, 0, sizeof c); /* the sweep's context, kept from the row before (made again for this one) */
            CHECK(plan_sweep_build(&in, &sw, 0, 0, &c, &wz) == ST_OK && !memcmp(&c, &b, sizeof c));
        }
    }
    CHECKF(built >= 20, "%d built", built); /* premise: enough of the layouts plan */
    CHECK(ep_dense > 0);                    /* premise: a layout that the dense rows reject for its EP */
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_sweep_counts_and_ranking);
    RUN(test_sweep_build_shares_exactly);
    RUN(test_ctx_gives_the_same_plan);
    free(cat);
    RUN(test_sweep_ranks_uncertain);
    return test_summary();
}
