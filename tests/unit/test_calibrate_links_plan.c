/* tests/unit/test_calibrate_links_plan.c — a host profile's per-collective fits as the planner uses them, worked by
 * hand: the one formula every op of a host profile is timed with (steps x latency + S x bus factor / bus bandwidth:
 * planner/plan_link.c plan_link_call), which fit a call takes (op, dtype path, range), the share of a gradient
 * reduction read from memory, a plan's collectives (expert all-to-alls too) each timed at its op's fit, and the
 * all-to-all sweep's counts. The fits themselves: test_calibrate_links.c; links.csv: test_calibrate_links_csv.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "exec/measure/calibrate_link.h"
#include "planner/plan.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static void test_link_call(void)
{
    LinkFit f = {.op = OP_ALL_REDUCE, .path = LINK_PATH_FP32, .lat = 10e-6, .bw = 1e9};
    double bw = 0, lat = 0;
    /* all-reduce over 4 of 1e6 B: 2 x 3 = 6 steps x 10 us + 1e6 x 2 x 3/4 = 1.5e6 bus bytes / 1e9 = 1.56e-3 s */
    CHECK_REL(plan_link_call(&f, OP_ALL_REDUCE, 4, 1000000, &bw, &lat), 1.56e-3, 1e-12);
    CHECK_REL(lat, 60e-6, 1e-12);
    CHECK(bw == 1e9);
    /* all-gather over 4: 3 steps = 30 us + 1e6 x 3/4 / 1e9 = 7.5e-4: 7.8e-4 */
    CHECK_REL(plan_link_call(&f, OP_ALL_GATHER, 4, 1000000, NULL, NULL), 7.8e-4, 1e-12);
    /* send/recv (2 ranks): 1 step + every byte: 10 us + 1e-3 = 1.01e-3; all-to-all over 2: 10 us + 5e5 / 1e9 */
    CHECK_REL(plan_link_call(&f, OP_SEND_RECV, 2, 1000000, NULL, NULL), 1.01e-3, 1e-12);
    CHECK_REL(plan_link_call(&f, OP_ALL_TO_ALL, 2, 1000000, NULL, NULL), 5.1e-4, 1e-12);
    /* a latency-only range (bw 0): reduce-scatter over 2, 1 step: 10 us whatever the size */
    f.bw = 0;
    CHECK_REL(plan_link_call(&f, OP_REDUCE_SCATTER, 2, 1000000, NULL, NULL), 10e-6, 1e-12);
}

/* A host row with fits: all-reduce FP32 [0, 4096) 1 us / 1 GB/s and [4096, no end) 5 us / 2 GB/s, BF16 one
 * range 3 us / 0.5 GB/s; all-gather 2 us / 4 GB/s. */
static GpuSpec host_with_fits(void)
{
    GpuSpec g = fx_gpu();
    g.host = 1, g.sm = 0, g.sms = 1, g.link = LINK_HOST;
    g.flops_bf16 = g.mamf_bf16 = 100e9, g.flops_fp8 = g.mamf_fp8 = 50e9, g.flops_fp32 = 100e9;
    g.hbm_bw = 10e9, g.sustained = 1, g.intra_bw = g.inter_bw = 1e9, g.link_lat = 1e-6, g.gpus_per_node = 2;
    const LinkFit f[] = {{OP_ALL_REDUCE, LINK_PATH_FP32, 0, 4096, 1e-6, 1e9},
                         {OP_ALL_REDUCE, LINK_PATH_FP32, 4096, 0, 5e-6, 2e9},
                         {OP_ALL_REDUCE, LINK_PATH_BF16, 0, 0, 3e-6, 0.5e9},
                         {OP_ALL_GATHER, LINK_PATH_BYTES, 0, 0, 2e-6, 4e9}};
    memcpy(g.link_fit, f, sizeof f);
    g.nlink_fit = 4;
    return g;
}

static void test_link_fit_choice(void)
{
    GpuSpec g = host_with_fits();
    CHECK(link_path_of(OP_ALL_REDUCE, DT_FP32) == LINK_PATH_FP32);
    CHECK(link_path_of(OP_REDUCE_SCATTER, DT_BF16) == LINK_PATH_BF16);
    CHECK(link_path_of(OP_ALL_REDUCE, DT_FP16) == LINK_PATH_BF16);
    CHECK(link_path_of(OP_ALL_REDUCE, DT_E5M2) == LINK_PATH_FP8);
    CHECK(link_path_of(OP_ALL_REDUCE, DT_NONE) == LINK_PATH_FP32);
    CHECK(link_path_of(OP_ALL_GATHER, DT_FP32) == LINK_PATH_BYTES);
    CHECK(link_path_of(OP_SEND_RECV, DT_E4M3) == LINK_PATH_BYTES);
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_FP32, 4095) == &g.link_fit[0]);
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_FP32, 4096) == &g.link_fit[1]);
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_BF16, 1 << 30) == &g.link_fit[2]);
    /* FP8 not measured: the op's FP32 row; a mixed dtype reduces as FP32 */
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_E4M3, 10) == &g.link_fit[0]);
    /* a gradient's fit: without a gradient row the path's own (the profile of an older calibrate) */
    CHECK(plan_link_fit_grad(&g, OP_ALL_REDUCE, DT_FP32, 4096) == &g.link_fit[1]);
    const LinkFit grad[] = {{OP_ALL_REDUCE, LINK_PATH_FP32_GRAD, 0, 4096, 3e-6, 0.5e9},
                            {OP_ALL_REDUCE, LINK_PATH_FP32_GRAD, 4096, 0, 6e-6, 1e9}};
    memcpy(&g.link_fit[g.nlink_fit], grad, sizeof grad);
    g.nlink_fit += 2;
    CHECK(plan_link_fit_grad(&g, OP_ALL_REDUCE, DT_FP32, 4095) == &g.link_fit[4]);
    CHECK(plan_link_fit_grad(&g, OP_ALL_REDUCE, DT_FP32, 4096) == &g.link_fit[5]);
    CHECK(plan_link_fit_grad(&g, OP_ALL_REDUCE, DT_NONE, 1) == &g.link_fit[4]); /* a mixed dtype: FP32 */
    /* a BF16 gradient (no gradient sweep measures it), another op, and plan_link_fit itself: the path's rows */
    CHECK(plan_link_fit_grad(&g, OP_ALL_REDUCE, DT_BF16, 10) == &g.link_fit[2]);
    CHECK(plan_link_fit_grad(&g, OP_ALL_GATHER, DT_FP32, 10) == &g.link_fit[3]);
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_FP32, 4095) == &g.link_fit[0]);
    CHECK(plan_link_fit(&g, OP_ALL_REDUCE, DT_NONE, 5000) == &g.link_fit[1]);
    CHECK(plan_link_fit(&g, OP_ALL_GATHER, DT_FP32, 10) == &g.link_fit[3]);
    /* no fit of the op: NULL (the all-reduce's link_lat and intra_bw serve) */
    CHECK(plan_link_fit(&g, OP_REDUCE_SCATTER, DT_FP32, 10) == NULL);
    CHECK(plan_link_fit(&g, OP_SEND_RECV, DT_BF16, 10) == NULL);
}

/* The share of a gradient reduction's bytes from memory (planner/plan_cache.c), by hand: weights 3,000,000 +
 * 500,000 B, gradients 6,000,000 + 1,000,000, activations 2,000,000: the backward's D_bwd = 12,500,000 B a rank;
 * the states 30,000,000: a step's D_step = 32,000,000. */
static void test_grad_miss(void)
{
    GpuSpec g = host_with_fits();
    MemTerm mt[MT_COUNT_];
    uint64_t cat[MC_COUNT_] = {0};
    memset(mt, 0, sizeof mt);
    mt[MT_WEIGHT_GEMM].bytes = 3000000, mt[MT_WEIGHT_OTHER].bytes = 500000;
    mt[MT_GRAD_GEMM].bytes = 6000000, mt[MT_GRAD_OTHER].bytes = 1000000;
    cat[MC_STATE] = 30000000, cat[MC_ACTIVATION] = 2000000;
    /* not known: all from memory */
    CHECK(plan_grad_miss(&g, mt, cat, 2) == 1.0);
    /* C = 32 MiB = 33,554,432 B, 2 ranks: 2 x 12,500,000 = 25,000,000 <= C, the payload cached; 2 x 32,000,000 =
     * 64,000,000 > C, the scratch not: 0.5 x 0 + 0.5 x 1 = 0.5 */
    g.llc_bytes = 33554432;
    CHECK_REL(plan_grad_miss(&g, mt, cat, 2), 0.5, 1e-15);
    /* 4 ranks: 50,000,000 > C, the payload's share cached 33,554,432 / 50,000,000 = 0.67108864: 0.5 x 0.32891136 +
     * 0.5 = 0.66445568 */
    CHECK_REL(plan_grad_miss(&g, mt, cat, 4), 0.66445568, 1e-12);
    /* 1 rank (ranks 0 read as 1): 32,000,000 <= C, the step fits: 0 */
    CHECK(plan_grad_miss(&g, mt, cat, 1) == 0.0);
    CHECK(plan_grad_miss(&g, mt, cat, 0) == 0.0);
    /* FP8 copies, expert weights and gradients count as the backward's too: + 1,000,000 + 250,000 + 250,000 a rank
     * = 14,000,000, 2 ranks 28,000,000 <= C still (0.5); C = 14,000,000: 14,000,000 / 28,000,000 = 0.5 cached,
     * 0.5 x 0.5 + 0.5 = 0.75 */
    cat[MC_FP8_COPY] = 1000000, mt[MT_WEIGHT_EXPERT].bytes = 250000, mt[MT_GRAD_EXPERT].bytes = 250000;
    CHECK_REL(plan_grad_miss(&g, mt, cat, 2), 0.5, 1e-15);
    g.llc_bytes = 14000000;
    CHECK_REL(plan_grad_miss(&g, mt, cat, 2), 0.75, 1e-15);
}

/* A plan on the host row: each collective at its own op's fit, the rest as before. */
static void test_plan_times_each_op(void)
{
    GpuSpec g = host_with_fits();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 2, in.dp = 2;
    Plan *p = calloc(1, sizeof *p);
    CHECK(p != NULL);
    if (!p) return;
    Err e = {0};
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    /* DP 2, FP32 gradients of the tiny GPT's parameters: per layer QKV 24 x 8 + 24, proj 8 x 8 + 8, FC1 32 x 8
     * + 32, FC2 8 x 32 + 8, two LayerNorms 2 x 16 = 872, two layers 1,744, + token embedding 10 x 8 (tied) +
     * positions 4 x 8 + final norm 16 = 1,872 parameters x 4 B = 7,488 B in one all-reduce, at [4096, no end):
     * 2 steps x 5 us + 7,488 / 2e9 = 1e-5 + 3.744e-6 */
    const Collective *ar = &p->coll[CO_DP_GRAD_AR];
    CHECK_EQ_U64(ar->payload_bytes, 7488);
    CHECK_EQ_U64(ar->calls, 1);
    CHECK_REL(ar->time_s, 1.3744e-5, 1e-12);
    CHECK_REL(ar->latency_s, 1e-5, 1e-12);
    CHECK(ar->bw == 2e9);
    /* the fp8plan stack's executor: a bucket per class, each call at its own payload's range. The linear weights
     * (24 x 8 + 8 x 8 + 32 x 8 + 8 x 32 = 768 a layer, 1,536) 6,144 B at [4096, no end): 2 x 5 us + 6,144 / 2e9 =
     * 1.3072e-5; the other 336 parameters 1,344 B at [0, 4096): 2 x 1 us + 1,344 / 1e9 = 3.344e-6; together
     * 1.6416e-5. At their mean payload, 3,744 B, both calls would take [0, 4096): 2 x (2e-6 + 3.744e-6) = 1.1488e-5 */
    in.fusion = FUSE_FP8PLAN;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(ar->calls, 2);
    CHECK_EQ_U64(ar->payload_bytes, 3744);
    CHECK_EQ_U64(ar->step_payload, 7488);
    CHECK_REL(ar->time_s, 1.6416e-5, 1e-12);
    /* with the gradient sweep's rows ("fp32 grad": the payload from memory): [0, 4096) 3 us / 0.5 GB/s, [4096, no
     * end) 6 us / 1 GB/s. The buckets at them: 2 x 6 us + 6,144 / 1e9 = 1.8144e-5 and 2 x 3 us + 1,344 / 0.5e9 =
     * 8.688e-6, together 2.6832e-5; the same bytes and calls */
    const LinkFit grad[] = {{OP_ALL_REDUCE, LINK_PATH_FP32_GRAD, 0, 4096, 3e-6, 0.5e9},
                            {OP_ALL_REDUCE, LINK_PATH_FP32_GRAD, 4096, 0, 6e-6, 1e9}};
    memcpy(&g.link_fit[g.nlink_fit], grad, sizeof grad);
    g.nlink_fit += 2;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(ar->calls, 2);
    CHECK_EQ_U64(ar->step_payload, 7488);
    CHECK_REL(ar->time_s, 2.6832e-5, 1e-12);
    /* the last-level cache known (planner/plan_cache.c): one so large that the step fits it (1 TiB), everything
     * cached (miss 0): the hot rows' 1.6416e-5 as above. One as large as the two ranks' backward, 2 x (weights +
     * gradients + activations) a rank: the payload cached, the scratch (a whole step, the states too) not, miss
     * 0.5: each bucket half way, hot + 0.5 (gradient row - hot row) at the same bytes, (1.6416e-5 + 2.6832e-5) / 2
     * = 2.1624e-5 */
    g.llc_bytes = 1ull << 40;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(ar->time_s, 1.6416e-5, 1e-12);
    const MemTerm *mt = p->mem;
    g.llc_bytes = 2 * (mt[MT_WEIGHT_GEMM].bytes + mt[MT_WEIGHT_OTHER].bytes + mt[MT_GRAD_GEMM].bytes +
                       mt[MT_GRAD_OTHER].bytes + p->cat_bytes[MC_ACTIVATION]);
    CHECK(p->cat_bytes[MC_FP8_COPY] == 0 && mt[MT_WEIGHT_EXPERT].bytes == 0); /* BF16, no experts */
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(ar->time_s, 2.1624e-5, 1e-12);
    /* ZeRO-1: the distributed optimizer's reduce-scatter of the same buckets; no reduce-scatter row, so its hot
     * time is the link's: 1 step x 1 us + half the payload at 1 GB/s, 6,144 B: 1e-6 + 3,072 / 1e9 = 4.072e-6,
     * 1,344 B: 1e-6 + 672 / 1e9 = 1.672e-6, 5.744e-6 together; its first touches are the all-reduce's (payload
     * and scratch, S each), so from memory it costs the FP32 all-reduce's gradient row above its hot row at the
     * same bytes more: 1.8144e-5 - 1.3072e-5 = 5.072e-6 and 8.688e-6 - 3.344e-6 = 5.344e-6. Cache unknown (all
     * from memory): 5.744e-6 + 1.0416e-5 = 1.616e-5; a cache of 1 TiB: 5.744e-6 */
    in.sharding = SHARD_ZERO1;
    g.llc_bytes = 0;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    const Collective *rs = &p->coll[CO_DP_GRAD_RS];
    CHECK_EQ_U64(rs->calls, 2);
    CHECK_REL(rs->time_s, 1.616e-5, 1e-12);
    g.llc_bytes = 1ull << 40;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(rs->time_s, 5.744e-6, 1e-12);
    g.llc_bytes = 0;
    in.sharding = fx_input(&m, &g, &r).sharding;
    /* PP 2 (no DP): the tied embedding's gradient, 10 x 8 FP32 = 320 B, one call between the first and the last
     * stage at the gradient's [0, 4096): 2 x 3 us + 320 / 0.5e9 = 6.64e-6; the hot row would give 2 x 1 us + 320 /
     * 1e9 = 2.32e-6 */
    in.dp = 1, in.pp = 2;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p->coll[CO_EMB_GRAD_AR].payload_bytes, 320);
    CHECK_EQ_U64(p->coll[CO_EMB_GRAD_AR].calls, 1);
    CHECK_REL(p->coll[CO_EMB_GRAD_AR].time_s, 6.64e-6, 1e-12);
    /* with the embedding sweep's row ("fp32 emb": the last stage waited out the first one's last backward) [256, no
     * end) 4 us / 0.25 GB/s: 2 x 4 us + 320 / 0.25e9 = 9.28e-6; the DP buckets keep the gradient rows (PP 1, DP 2:
     * 2.6832e-5 as above) */
    const LinkFit emb = {OP_ALL_REDUCE, LINK_PATH_FP32_EMB, 256, 0, 4e-6, 0.25e9};
    g.link_fit[g.nlink_fit++] = emb;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p->coll[CO_EMB_GRAD_AR].time_s, 9.28e-6, 1e-12);
    in.dp = 2, in.pp = 1;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(ar->time_s, 2.6832e-5, 1e-12);
    in.dp = 1, in.pp = 2;
    g.nlink_fit -= 3;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p->coll[CO_EMB_GRAD_AR].time_s, 2.32e-6, 1e-12);
    in.dp = 2, in.pp = 1;
    /* the other stacks' one call of the whole gradient keeps the hot row (their reduction overlaps the backward,
     * or is not the executor's): 1.3744e-5 as above, gradient rows or not */
    g.nlink_fit += 2;
    in.fusion = fx_input(&m, &g, &r).fusion;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(ar->time_s, 1.3744e-5, 1e-12);
    g.nlink_fit -= 2;
    /* without fits: the all-reduce's link_lat and intra_bw: 2 x 1 us + 7,488 / 1e9 = 9.488e-6 */
    g.nlink_fit = 0;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p->coll[CO_DP_GRAD_AR].time_s, 9.488e-6, 1e-12);
    free(p);
}

/* Expert parallelism on the host row with two all-to-all ranges: [0, 1024) 1 us / 1 GB/s, [1024, no end) 4 us /
 * 2 GB/s. ox_moe (support/oracle_fixtures.h): hidden 256, seq 512, 8 experts top 2, one MoE layer (the first is
 * dense); BF16 dispatch and combine; dp 4, ep 2, micro-batch 1, global batch 4: one micro-batch a step. */
static void test_plan_times_ep(void)
{
    GpuSpec g = host_with_fits();
    const LinkFit a2a[] = {{OP_ALL_TO_ALL, LINK_PATH_BYTES, 0, 1024, 1e-6, 1e9},
                           {OP_ALL_TO_ALL, LINK_PATH_BYTES, 1024, 0, 4e-6, 2e9}};
    memcpy(&g.link_fit[g.nlink_fit], a2a, sizeof a2a);
    g.nlink_fit += 2;
    ModelSpec m = ox_moe(512);
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 4, in.dp = 4, in.ep = 2;
    Plan *p = calloc(1, sizeof *p);
    CHECK(p != NULL);
    if (!p) return;
    Err e = {0};
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    /* each expert all-to-all: 512 tokens x top-2 x 256 x 2 B = 524,288 B a call, 1 MoE layer x 1 micro-batch = 1
     * call a step, at [1024, no end): 1 step x 4 us + 524,288 x 1/2 / 2e9 = 4e-6 + 1.31072e-4 = 1.35072e-4 s */
    for (int i = CO_EP_DISPATCH_FWD; i <= CO_EP_COMBINE_BWD; i++) {
        const Collective *c = &p->coll[i];
        CHECK_EQ_U64(c->payload_bytes, 524288);
        CHECK_EQ_U64(c->calls, 1);
        CHECKF(fabs(c->time_s / 1.35072e-4 - 1) < 1e-12, "%s %.9g s", coll_name((CollectiveId)i), c->time_s);
        CHECK_REL(c->latency_s, 4e-6, 1e-12);
        CHECK(c->bw == 2e9);
    }
    /* the counts before each forward dispatch: 8 int32 = 32 B a call, 4 of them leaving (16 B), at [0, 1024):
     * 1 us + 32 x 1/2 / 1e9 = 1e-6 + 1.6e-8 = 1.016e-6 s */
    const Collective *n = &p->coll[CO_EP_COUNTS];
    CHECK_EQ_U64(n->payload_bytes, 32);
    CHECK_EQ_U64(n->bus_bytes, 16);
    CHECK_EQ_U64(n->step_bytes, 16);
    CHECK_EQ_U64(n->calls, 1);
    CHECK_EQ_U64(n->ranks, 2);
    CHECK_REL(n->time_s, 1.016e-6, 1e-12);
    CHECK(plan_coll_applies(p, CO_EP_COUNTS));
    /* the expert gradients over edp = 4 / 2 = 2 ranks: 4 local experts x (2 x 128 x 256 + 256 x 128) = 393,216
     * FP32 gradients, 1,572,864 B in one all-reduce at the FP32 [4096, no end) range: 2 steps x 5 us +
     * 1,572,864 x 2 x 1/2 / 2e9 = 1e-5 + 7.86432e-4 = 7.96432e-4 s */
    const Collective *ar = &p->coll[CO_EDP_GRAD_AR];
    CHECK_EQ_U64(ar->payload_bytes, 1572864);
    CHECK_EQ_U64(ar->calls, 1);
    CHECK_REL(ar->time_s, 7.96432e-4, 1e-12);
    /* with per-message fits (links.csv version 2): eager [0, 4000) 1 us + b / 1 GB/s, rendezvous [4000, no end)
     * 3 us + b / 2 GB/s. A call of 524,288 B over ep 2 sends one message of 524,288 / 2 = 262,144 B, rendezvous:
     * 1 x (3e-6 + 262,144 / 2e9) = 3e-6 + 1.31072e-4 = 1.34072e-4 s; the counts' message 32 / 2 = 16 B, eager:
     * 1e-6 + 16 / 1e9 = 1.016e-6 s (the same as the payload fit's by chance of the numbers: 1 x 1 us + 16 B / 1 GB/s) */
    const LinkFit msg[] = {{OP_ALL_TO_ALL, LINK_PATH_EAGER, 0, 4000, 1e-6, 1e9},
                           {OP_ALL_TO_ALL, LINK_PATH_RENDEZVOUS, 4000, 0, 3e-6, 2e9}};
    memcpy(&g.link_fit[g.nlink_fit], msg, sizeof msg);
    g.nlink_fit += 2;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    for (int i = CO_EP_DISPATCH_FWD; i <= CO_EP_COMBINE_BWD; i++) {
        CHECKF(fabs(p->coll[i].time_s / 1.34072e-4 - 1) < 1e-12, "%s %.9g s", coll_name((CollectiveId)i),
               p->coll[i].time_s);
        CHECK_REL(p->coll[i].latency_s, 3e-6, 1e-12);
        CHECK(p->coll[i].bw == 2e9);
    }
    CHECK_REL(p->coll[CO_EP_COUNTS].time_s, 1.016e-6, 1e-12);
    /* the message's size, not the call's, picks the protocol: at seq 8 a call carries 8 x 2 x 256 x 2 = 8,192 B;
     * over ep 4 (dp 4) each of the 3 peers gets 8,192 / 4 = 2,048 B, eager: 3 x (1e-6 + 2,048 / 1e9) = 3 x 3.048e-6
     * = 9.144e-6 s, where the payload fit's [1024, no end) would give 3 x 4 us + 8,192 x 3/4 / 2e9 = 1.5072e-5; the
     * counts' 32 / 4 = 8 B messages 3 x (1e-6 + 8e-9) = 3.024e-6 s */
    ModelSpec m8 = ox_moe(512);
    m8.seq_len = 8;
    in.model = &m8, in.ep = 4;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p->coll[CO_EP_DISPATCH_FWD].payload_bytes, 8192);
    CHECK_REL(p->coll[CO_EP_DISPATCH_FWD].time_s, 9.144e-6, 1e-12);
    CHECK_REL(p->coll[CO_EP_COMBINE_BWD].latency_s, 3e-6, 1e-12);
    CHECK_REL(p->coll[CO_EP_COUNTS].time_s, 3.024e-6, 1e-12);
    /* one message: nothing sent costs nothing, the boundary byte is rendezvous, no per-message rows: -1 */
    CHECK(plan_a2a_msg(&g, 0) == 0);
    CHECK_REL(plan_a2a_msg(&g, 3999), 1e-6 + 3999e-9, 1e-12);
    CHECK_REL(plan_a2a_msg(&g, 4000), 3e-6 + 2e-6, 1e-12);
    g.nlink_fit -= 2;
    CHECK(plan_a2a_msg(&g, 4000) == -1 && plan_a2a_call(&g, 2, 8000, NULL, NULL) == -1);
    in.model = &m, in.ep = 2;
    /* a GPU's plan keeps NCCL's model of the all-to-alls and plans no count exchange */
    g.host = 0, g.sm = 90;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p->coll[CO_EP_COUNTS].calls, 0);
    CHECK(!plan_coll_applies(p, CO_EP_COUNTS) && plan_coll_applies(p, CO_EP_DISPATCH_FWD));
    CHECK(fabs(p->coll[CO_EP_DISPATCH_FWD].time_s / 1.35072e-4 - 1) > 1e-3);
    free(p);
}

/* The all-to-all sweep's uneven counts (cal_a2a_counts) over 3 ranks, N = 18 elements a rank (u = 18 / 9 = 2):
 * each rank keeps 18 / 3 = 6 and sends 2 x 1 x 2 = 4 to the peer 1 ahead and 2 x 2 x 2 = 8 to the peer 2 ahead.
 * Rank 0 sends {6, 4, 8}; it receives from rank 1 (0 is 2 ahead of 1) 8 and from rank 2 (1 ahead) 4: {6, 8, 4}.
 * Rank 1 sends {8, 6, 4}: to rank 0 the 8 rank 0 expects. Over 2 ranks, N = 8: 4 stay, 2 x 1 x 2 = 4 go. */
static void test_a2a_counts(void)
{
    uint64_t s[3], r[3];
    cal_a2a_counts(0, 3, 18, s, r);
    CHECK(s[0] == 6 && s[1] == 4 && s[2] == 8);
    CHECK(r[0] == 6 && r[1] == 8 && r[2] == 4);
    cal_a2a_counts(1, 3, 18, s, r);
    CHECK(s[0] == 8 && s[1] == 6 && s[2] == 4);
    CHECK(r[0] == 4 && r[1] == 6 && r[2] == 8);
    cal_a2a_counts(1, 2, 8, s, r);
    CHECK(s[0] == 4 && s[1] == 4 && r[0] == 4 && r[1] == 4);
    /* the run's payloads the sweep adds (cal_ep_sizes), ox_moe at micro-batch 1: the counts 8 x 4 = 32 B, a
     * dispatch 1 x 512 tokens x top-2 x 256 x 2 B = 524,288 B; a dense model none */
    ModelSpec m = ox_moe(512), d = fx_tiny_model();
    uint64_t ep[2] = {0, 0};
    CHECK_EQ_INT(cal_ep_sizes(&m, 1, ep), 2);
    CHECK_EQ_U64(ep[0], 32);
    CHECK_EQ_U64(ep[1], 524288);
    CHECK_EQ_INT(cal_ep_sizes(&d, 1, ep), 0);
}

int main(void)
{
    RUN(test_link_call);
    RUN(test_link_fit_choice);
    RUN(test_grad_miss);
    RUN(test_plan_times_each_op);
    RUN(test_plan_times_ep);
    RUN(test_a2a_counts);
    return test_summary();
}
