/* tests/unit/test_oracle_sweep_seed.c — sweep rules that mutate's fresh seeds found unguarded: the
 * progress callback's counts, stacks and rejected points, the stack fields a plan uses and the near-duplicate
 * rows. (Moved from test_oracle_plan_seed.c, unchanged.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* ---- the sweep's progress and near-duplicates ------------------------------------------------------------- */

static uint64_t progress_calls, progress_bad, progress_total, progress_last;

static void on_progress(uint64_t done, uint64_t total, void *ctx)
{
    (void)ctx;
    progress_calls++;
    if (done != progress_calls * 4096 && done != total) progress_bad++;
    if (total != progress_total) progress_bad++;
    progress_last = done;
}

/* The sweep reports progress once per 4,096 evaluations, with the count so far (4,096, 8,192, ...) and the
 * total, and once more at the end with the total: floor(total / 4,096) + 1 calls. Two sweeps: 6 recipe copies
 * of ox_tiny on 64 GPUs (more than 4,096 evaluations) and 1 recipe on 2 GPUs (fewer: the final call only). */
static void test_sweep_progress(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(0);
    const Recipe *rs[6] = {&b, &b, &b, &b, &b, &b};
    for (int big = 1; big >= 0; big--) {
        SweepSpec s;
        memset(&s, 0, sizeof s);
        plan_input_defaults(&s.base);
        s.base.model = &m, s.base.gpu = &g, s.base.seq = 4, s.base.gbs = 64, s.base.vocab_pad = 1;
        s.recipes = rs, s.nrecipes = big ? 6 : 1, s.gpus = big ? 64 : 2;
        Plan top[1];
        int n = 0;
        SweepStats st;
        Err e = {0};
        progress_calls = progress_bad = progress_last = 0;
        progress_total = sweep_size(&s);
        CHECKF(sweep_run(&s, top, 1, &n, &st, on_progress, NULL, &e) == ST_OK, "%s", e.msg);
        CHECK_EQ_U64(st.evaluated, progress_total);
        CHECKF(big ? progress_total > 4096 : progress_total < 4096, "premise: %llu evaluations",
               (unsigned long long)progress_total);
        CHECK_EQ_U64(progress_calls, progress_total / 4096 + 1);
        CHECK_EQ_U64(progress_last, progress_total);
        CHECK_EQ_U64(progress_bad, 0);
    }
}

/* Two stacks applied in turn, each followed by the caller's after_stack hook. The sweep of ox_tiny on 4 GPUs
 * (max_tp 8 -> tp 1, 2, 4; max_vpp 2; cp 1; mbs 1, 2; 4 recompute modes; sharding off / on: 16 a layout), by
 * hand: tp 1: pp 1 (vpp 1), pp 2 (vpp 1, 2), pp 4 (vpp 1, 2): 5 layouts; tp 2: pp 1, pp 2 (vpp 1, 2): 3;
 * tp 4: pp 1: 1. 9 x 16 = 144 a stack. Refused: tp 4 (2 heads): 16 for heads; pp 4 with vpp 2 (4 layers, a
 * chunk needs one): 16 for layers: 112 built a stack. Every plan carries its stack's launch floor and the hook's
 * overlap_dp 0.25 (the stacks give 0.5 and 0.75). */
static const StackSpec *fit_stack[2];
static int fit_n[2], fit_bad;

static void on_fit_stack(const Plan *p, void *ctx)
{
    (void)ctx;
    int k = p->in.stack == fit_stack[0] ? 0 : p->in.stack == fit_stack[1] ? 1 : -1;
    if (k < 0 || p->in.overlap_dp != 0.25 || p->in.launch_s != fit_stack[k]->launch_s) {
        fit_bad++;
        return;
    }
    fit_n[k]++;
}

static int after_calls;

static void after_stack(PlanInput *in, void *ctx)
{
    (void)ctx;
    after_calls++;
    in->overlap_dp = 0.25;
}

static void test_sweep_stacks_and_rejects(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(0);
    const Recipe *rs[1] = {&b};
    StackSpec s1, s2;
    memset(&s1, 0, sizeof s1), memset(&s2, 0, sizeof s2);
    s1.launch_s = 1e-6, s1.overlap_dp = 0.5, s1.loss_bytes = 10;
    s2.launch_s = 3e-6, s2.overlap_dp = 0.75, s2.loss_bytes = 10;
    const StackSpec *stacks[2] = {&s1, &s2};
    fit_stack[0] = &s1, fit_stack[1] = &s2;
    for (int with = 0; with < 2; with++) {
        SweepSpec s;
        memset(&s, 0, sizeof s);
        plan_input_defaults(&s.base);
        s.base.model = &m, s.base.gpu = &g, s.base.seq = 4, s.base.gbs = 16, s.base.vocab_pad = 1;
        s.recipes = rs, s.nrecipes = 1, s.gpus = 4, s.max_vpp = 2, s.max_cp = 1, s.max_mbs = 2;
        if (with) {
            s.stacks = stacks, s.nstacks = 2, s.after_stack = after_stack;
            s.on_fit = on_fit_stack;
        }
        Plan top[2];
        int n = 0;
        SweepStats st;
        Err e = {0};
        after_calls = fit_bad = fit_n[0] = fit_n[1] = 0;
        CHECKF(sweep_run(&s, top, 2, &n, &st, NULL, NULL, &e) == ST_OK, "%s", e.msg);
        uint64_t k = with ? 2 : 1;
        after_calls = 0;
        CHECK_EQ_U64(sweep_size(&s), 144 * k);
        CHECK_EQ_INT(after_calls, with ? 2 : 0); /* once a stack (sweep_size walks the space once) */
        CHECK_EQ_U64(st.evaluated, 144 * k);
        CHECK_EQ_U64(st.valid, 112 * k);
        for (int r = 0; r < REJECT_COUNT_; r++)
            CHECKF(st.rejected[r] == (r == REJECT_HEADS_TP || r == REJECT_LAYERS_PP ? 16 * k : 0), "%s: %llu",
                   plan_reject_name((PlanReject)r), (unsigned long long)st.rejected[r]);
        if (with) {
            CHECK_EQ_INT(fit_bad, 0);
            CHECK(fit_n[0] == 112 && fit_n[1] == 112);
        }
    }
}

/* A stack's row applied to a plan input: every field it carries lands in its PlanInput field, and TE's fusion
 * (only it) turns on the fused gradient accumulation. */
static void test_use_stack_fields(void)
{
    StackSpec s;
    memset(&s, 0, sizeof s);
    s.attn = ATTN_CUDNN, s.sequence_parallel = 1, s.fused_swiglu = 1, s.main_grad = MAIN_GRAD_BF16;
    s.fp8_weight_cache = 1, s.fusion = FUSE_TE, s.launch_s = 2e-6, s.loss_bytes = 6, s.overlap_tp = 0.1;
    s.overlap_dp = 0.2, s.overlap_pp = 0.3, s.overlap_cp = 0.4, s.overlap_ep = 0.6, s.alloc_reserve = 0.7;
    for (int f = 0; f < FUSE_COUNT_; f++) {
        s.fusion = (KernelFusion)f;
        PlanInput in;
        plan_input_defaults(&in);
        plan_input_use_stack(&in, &s);
        CHECK(in.stack == &s && in.attn == ATTN_CUDNN && in.sp == 1 && in.fused_swiglu == 1);
        CHECK(in.main_grad == MAIN_GRAD_BF16 && in.fp8_weight_cache == 1 && in.fusion == (KernelFusion)f);
        CHECK_EQ_INT(in.grad_acc_fusion, f == FUSE_TE);
        CHECK(in.launch_s == 2e-6 && in.loss_bytes == 6 && in.overlap_tp == 0.1 && in.overlap_dp == 0.2);
        CHECK(in.overlap_pp == 0.3 && in.overlap_cp == 0.4 && in.overlap_ep == 0.6 && in.frag_frac == 0.7);
    }
}

/* Near-duplicates share stack, recipe, tp, pp, cp, dp and micro-batch, and their tokens/s differ by at most 2 %
 * of the larger: 100 and 98 (2.0 <= 0.02 x 100 = 2.0, the edge) are, 100 and 97.9 are not; any one of the
 * seven differing (either order, pointers included) makes them not; vpp, recompute or sharding differing does
 * not. */
static void test_near_duplicates(void)
{
    static Plan a, b;
    StackSpec s1, s2;
    Recipe r1 = ox_bf16(0), r2 = ox_bf16(0);
    memset(&a, 0, sizeof a);
    a.in.stack = &s1, a.in.recipe = &r1, a.in.tp = 2, a.in.pp = 2, a.in.cp = 2, a.in.dp = 2, a.in.mbs = 2;
    a.tokens_per_s = 100;
    b = a;
    b.tokens_per_s = 98;
    CHECK(sweep_near_duplicate(&a, &b) && sweep_near_duplicate(&b, &a));
    b.tokens_per_s = 97.9;
    CHECK(!sweep_near_duplicate(&a, &b) && !sweep_near_duplicate(&b, &a));
    b.tokens_per_s = 99;
    b.in.vpp = 2, b.in.recompute = RECOMPUTE_FULL, b.in.sharding = SHARD_ZERO3;
    CHECK(sweep_near_duplicate(&a, &b));
    for (int f = 0; f < 7; f++) {
        b = a;
        b.tokens_per_s = 99;
        switch (f) {
        case 0: b.in.stack = &s2; break;
        case 1: b.in.recipe = &r2; break;
        case 2: b.in.tp = 4; break;
        case 3: b.in.pp = 4; break;
        case 4: b.in.cp = 4; break;
        case 5: b.in.dp = 4; break;
        default: b.in.mbs = 4; break;
        }
        CHECKF(!sweep_near_duplicate(&a, &b) && !sweep_near_duplicate(&b, &a), "field %d", f);
        /* the other way round: the smaller value (or the other pointer) on a */
        Plan c = b;
        c.in = a.in;
        switch (f) {
        case 0: c.in.stack = &s2, b.in.stack = &s1; break;
        case 1: c.in.recipe = &r2, b.in.recipe = &r1; break;
        default: break;
        }
        CHECKF(!sweep_near_duplicate(&c, &b) && !sweep_near_duplicate(&b, &c), "field %d swapped", f);
    }
}

int main(void)
{
    RUN(test_sweep_progress);
    RUN(test_sweep_stacks_and_rejects);
    RUN(test_use_stack_fields);
    RUN(test_near_duplicates);
    return test_summary();
}
