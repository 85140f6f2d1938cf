/* tests/unit/test_oracle_sweep.c — the sweep keeps what it says it keeps.
 *
 * Independent of the ranking code: every plan that fits is collected through
 * the on_fit hook, sorted here, and the kept top k must be exactly the k best
 * of them. And a model whose layers do not divide over the stages is tried on
 * the uneven split worked out by hand. */
#include <stdlib.h>
#include <string.h>

#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

enum { MAX_SEEN = 4096 };
static double seen[MAX_SEEN];
static int nseen, uneven_2_3, pp2_even, pp3_2_2, pp3_2_3, pp2_split, pp3_1_1, pp3_1_2, pp3_3_3_v2, pp3_3_4_v2;

static void collect(const Plan *p, void *ctx)
{
    (void)ctx;
    if (nseen < MAX_SEEN) seen[nseen++] = p->tokens_per_s;
    if (p->in.pp == 2 && p->in.first_stage_layers == 2 && p->in.last_stage_layers == 3) uneven_2_3++;
    if (p->in.pp == 2 && p->in.first_stage_layers == 0) pp2_even++;
    if (p->in.pp == 2 && (p->in.first_stage_layers || p->in.last_stage_layers)) pp2_split++;
    if (p->in.pp == 3 && p->in.first_stage_layers == 1 && p->in.last_stage_layers == 1) pp3_1_1++;
    if (p->in.pp == 3 && p->in.first_stage_layers == 1 && p->in.last_stage_layers == 2) pp3_1_2++;
    if (p->in.pp == 3 && p->in.first_stage_layers == 2 && p->in.last_stage_layers == 2) pp3_2_2++;
    if (p->in.pp == 3 && p->in.first_stage_layers == 2 && p->in.last_stage_layers == 3) pp3_2_3++;
    int v2 = p->in.pp == 3 && p->in.vpp == 2 && p->in.first_stage_layers == 3;
    if (v2 && p->in.last_stage_layers == 3) pp3_3_3_v2++;
    if (v2 && p->in.last_stage_layers == 4) pp3_3_4_v2++;
}

static int desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static SweepSpec spec(const ModelSpec *m, const GpuSpec *g, const Recipe *const *r, uint32_t gpus)
{
    SweepSpec s;
    memset(&s, 0, sizeof s);
    plan_input_defaults(&s.base);
    s.base.model = m, s.base.gpu = g, s.base.seq = 4, s.base.gbs = 16, s.base.vocab_pad = 1;
    s.recipes = r, s.nrecipes = 1, s.gpus = gpus;
    s.max_vpp = 2, s.max_cp = 1, s.max_mbs = 2;
    s.on_fit = collect;
    return s;
}

/* The top 3 are the 3 highest tokens/s among every plan that fit, best first. */
static void test_top_k_are_the_best(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(0);
    const Recipe *rs[1] = {&b};
    SweepSpec s = spec(&m, &g, rs, 4);
    Plan top[3];
    int n = 0;
    SweepStats st;
    Err e = {0};
    nseen = 0;
    CHECKF(sweep_run(&s, top, 3, &n, &st, NULL, NULL, &e) == ST_OK, "%s", e.msg);
    CHECK(nseen > 3 && nseen < MAX_SEEN);
    CHECK_EQ_INT(nseen, (int)(st.valid - st.oom));
    qsort(seen, (size_t)nseen, sizeof *seen, desc);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n && i < nseen; i++)
        CHECKF(top[i].tokens_per_s == seen[i], "rank %d: kept %.17g, the %d-th best is %.17g", i + 1,
               top[i].tokens_per_s, i + 1, seen[i]);
}

/* Sweep the tiny model with `layers` layers over `gpus` GPUs (global batch gbs), every counter reset first. */
static SweepStats sweep_layers(uint32_t layers, uint32_t gpus, uint32_t gbs)
{
    ModelSpec m = ox_tiny(16, 4);
    m.layers = layers;
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(0);
    const Recipe *rs[1] = {&b};
    SweepSpec s = spec(&m, &g, rs, gpus);
    s.base.gbs = gbs;
    Plan top[1];
    int n = 0;
    SweepStats st;
    Err e = {0};
    nseen = uneven_2_3 = pp2_even = pp3_2_2 = pp3_2_3 = pp2_split = pp3_1_1 = pp3_1_2 = pp3_3_3_v2 = pp3_3_4_v2 = 0;
    CHECKF(sweep_run(&s, top, 1, &n, &st, NULL, NULL, &e) == ST_OK, "%s", e.msg);
    return st;
}

/* The rows a sweep counts without planning each (a block plan_validate_head rejects: every CP, micro-batch,
 * recompute and sharding of one TP, PP, VPP and stage split) are the rows planning each would reject, by
 * reason. 5 layers, 2 heads on 4 GPUs (CP 1, micro-batch 1-2, 4 recomputes x 2 shardings = 16 rows a block):
 *   tp 1: pp 1 (dp 4) 16 valid; pp 2 (dp 2) vpp 1: the split 2 + 3, offered twice (middle ceil 3 and floor 2
 *         leave the same ends) 32 valid, vpp 2: no split Megatron interleaves, the even one is 5 / 4: 16
 *         REJECT_LAYERS_PP; pp 4 (dp 1) vpp 1: middles of floor(5/4) = 1 leave 1 + 2 (ceil 2 leaves 0 + 1):
 *         16 valid, vpp 2: 16 REJECT_LAYERS_PP;
 *   tp 2: pp 1 (dp 2) 16 valid; pp 2 (dp 1) vpp 1: 32 valid, vpp 2: 16 REJECT_LAYERS_PP;
 *   tp 4: 2 heads do not divide: pp 1, 16 REJECT_HEADS_TP.
 * 176 rows: 112 valid, 48 + 16 rejected. */
static void test_rejected_blocks_counted(void)
{
    SweepStats st = sweep_layers(5, 4, 16);
    CHECK_EQ_U64(st.evaluated, 176);
    CHECK_EQ_U64(st.valid, 112);
    CHECK_EQ_U64(st.rejected[REJECT_LAYERS_PP], 48);
    CHECK_EQ_U64(st.rejected[REJECT_HEADS_TP], 16);
    uint64_t rej = 0;
    for (int r = 0; r < REJECT_COUNT_; r++) rej += st.rejected[r];
    CHECK_EQ_U64(rej, 64);
}

/* 5 layers on 2 stages do not divide: the middle stages (none here) hold ceil(5/2) = 3 or floor = 2, the
 * first and last split the rest 5 as 2 + 3 (first <= last). No even 2-stage split exists. */
static void test_uneven_split(void)
{
    sweep_layers(5, 2, 16);
    CHECK(uneven_2_3 > 0);
    CHECK_EQ_INT(pp2_even, 0);
}

/* 7 layers on 3 stages: a middle stage of ceil(7/3) = 3 leaves 4 = 2 + 2 for the ends; one of floor = 2
 * leaves 5 = 2 + 3. Both splits are tried. */
static void test_uneven_split_both_middles(void)
{
    sweep_layers(7, 3, 12);
    CHECK(pp3_2_2 > 0);
    CHECK(pp3_2_3 > 0);
}

/* 10 layers on 3 stages with 2 virtual stages each (10 / 6 does not divide): only splits Megatron-Core can
 * interleave are offered. A middle of ceil(10/3) = 4 leaves 3 + 3: the account_for_embedding/loss form (middle
 * s = 4, a multiple of 2; ends s - 1 = 3) -> offered. A middle of floor = 3 leaves 3 + 4: 3 is odd (no explicit
 * counts) and s = 3 is no multiple of 2 -> not offered (before the check it was, and planned). */
static void test_uneven_split_interleaves(void)
{
    sweep_layers(10, 3, 12);
    CHECK(pp3_3_3_v2 > 0);
    CHECK_EQ_INT(pp3_3_4_v2, 0);
}

/* 4 layers on 2 stages divide (2 + 2, and 1 + 1 per chunk with vpp 2): every 2-stage plan is the even split,
 * none names first/last stage layers (an explicit 2 + 2 would only repeat it). */
static void test_even_split_only(void)
{
    sweep_layers(4, 2, 16);
    CHECK(pp2_even > 0);
    CHECK_EQ_INT(pp2_split, 0);
}

/* 4 layers on 3 stages: a middle stage of ceil(4/3) = 2 leaves 1 + 1 for the ends (each exactly the one layer a
 * stage must hold at vpp 1); one of floor = 1 leaves 3 = 1 + 2. Both are tried. */
static void test_uneven_split_single_layer_ends(void)
{
    sweep_layers(4, 3, 12);
    CHECK(pp3_1_1 > 0);
    CHECK(pp3_1_2 > 0);
}

/* Without --gbs a sweep takes one global batch of about 2M tokens: ceil(2^21 / seq) sequences —
 * 2,097,152 / 4096 = 512 exactly; / 3000 = 699.05 -> 700; a given gbs is kept. */
static void test_default_global_batch(void)
{
    ModelSpec m = ox_tiny(16, 4096);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(0);
    const Recipe *rs[1] = {&b};
    SweepSpec s = spec(&m, &g, rs, 8);
    s.base.gbs = 0, s.base.seq = 0;
    CHECK_EQ_U64(sweep_gbs(&s), 512);
    s.base.seq = 3000;
    CHECK_EQ_U64(sweep_gbs(&s), 700);
    s.base.gbs = 24;
    CHECK_EQ_U64(sweep_gbs(&s), 24);
    /* a sweep refused at once reports no plans (the count a caller passed in is reset) */
    Plan top[1];
    int n = 7;
    SweepStats st;
    Err e = {0};
    s.gpus = 0;
    CHECK(sweep_run(&s, top, 1, &n, &st, NULL, NULL, &e) == ST_USAGE);
    CHECK_EQ_INT(n, 0);
}

int main(void)
{
    RUN(test_top_k_are_the_best);
    RUN(test_rejected_blocks_counted);
    RUN(test_uneven_split);
    RUN(test_uneven_split_both_middles);
    RUN(test_uneven_split_interleaves);
    RUN(test_even_split_only);
    RUN(test_uneven_split_single_layer_ends);
    RUN(test_default_global_batch);
    return test_summary();
}
