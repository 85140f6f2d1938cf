/* tests/unit/test_moe_plan_routed.c — each rank's expert all-to-all bytes for a routing a run measured
 * (planner/plan_routed.h: plan_ep_routed against plan_ep_uniform), worked by hand on the small MoE model of
 * test_moe_plan.c; split from it (one concept a file). */
#include <stdlib.h>

#include "planner/plan.h"
#include "planner/plan_routed.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* The model: support/oracle_fixtures.h's ox_moe(512) — 2 layers (the first dense, FFN 512), hidden 256, 2 heads
 * of 128 (no GQA), vocab 1000, seq 512, RMSNorm, SwiGLU, RoPE, untied; 8 experts of FFN 128, top 2, 1 shared,
 * softmax router. */

/* The expert all-to-alls of each rank under a routing a run measured (planner/plan_routed.h): dp 4, ep 2 (EP
 * groups {0, 1} and {2, 3}; expert ranks 0, 1, 0, 1 holding experts 0-3 and 4-7), 2 micro-batches of 512 tokens
 * top-2: 2 x 512 x 2 = 2,048 copies a rank over calls = 2 (one step). A copy is 256 x 2 = 512 B (BF16). */
static void test_ep_routed(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 2, in.gbs = 8;
    Plan p = ox_build(&in);
    static const uint64_t rows[4 * 8] = {
        512,  512, 0,   0,   256,  256,  256, 256, /* rank 0: half to its own experts 0, 1 */
        0,    0,   0,   0,   1024, 1024, 0,   0,   /* rank 1: all to its own 4, 5 */
        256,  256, 256, 256, 256,  256,  256, 256, /* rank 2: uniform */
        2048, 0,   0,   0,   0,    0,    0,   0,   /* rank 3: all to expert 0, rank 2's */
    };
    MoeRouting rt = {.ranks = 4, .experts = 8, .calls = 2, .rows = rows};
    EpRouted o;
    Err e;
    /* rank 0: dispatch 2,048 copies (1,048,576 B), 1,024 to rank 1's experts leave (524,288 B); its experts 0-3 get
     * its own 1,024 and rank 1's 0: combine payload 524,288, nothing leaves */
    CHECK(!plan_ep_routed(&p, &rt, 0, &o, &e));
    CHECK_EQ_U64(o.payload[EPR_DISPATCH_FWD], 1048576);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 524288);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 0);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_BWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_BWD], 524288);
    /* counts a call: 8 int32 (4 stay) + 5 agreements of 2 uint64 (1 stays): 32 + 80 = 112 B, 16 + 40 = 56 leave;
     * 2 calls */
    CHECK_EQ_U64(o.payload[EPR_COUNTS], 224);
    CHECK_EQ_U64(o.sent[EPR_COUNTS], 112);
    /* rank 1: nothing leaves in dispatch; its experts 4-7 get rank 0's 1,024 and its own 2,048: 3,072 x 512 =
     * 1,572,864 B, rank 0's 1,024 x 512 = 524,288 B leave */
    CHECK(!plan_ep_routed(&p, &rt, 1, &o, &e));
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 0);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 1572864);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_BWD], 524288);
    /* rank 3 (group {2, 3}): all 2,048 leave (1,048,576 B); its experts 4-7 get rank 2's 4 x 256 = 1,024 */
    CHECK(!plan_ep_routed(&p, &rt, 3, &o, &e));
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 1048576);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 524288);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 524288);
    /* the plan's uniform expectation over one step: r = 2 EP ranks in a node, k (r - 1)/ep = 1 copy a token
     * leaves: 512 x 512 = 262,144 B a call, x 2; payload 512 x 2 x 512 x 2 = 1,048,576 */
    plan_ep_uniform(&p, 1, &o);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_BWD], 1048576);
    CHECK_EQ_U64(o.payload[EPR_COUNTS], 224);
    /* a rank that routed fewer copies than dropless routing makes, a rank past the ranks, the wrong ranks */
    uint64_t bad[4 * 8];
    for (int i = 0; i < 32; i++) bad[i] = rows[i];
    bad[8 + 4]--;
    MoeRouting rb = {.ranks = 4, .experts = 8, .calls = 2, .rows = bad};
    CHECK_EQ_INT(plan_ep_routed(&p, &rb, 0, &o, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "rank 1 routed 2047 token copies over 2 dispatches; 2 x 512 tokens x top-2 = 2048 expected");
    CHECK_EQ_INT(plan_ep_routed(&p, &rt, 4, &o, &e), ST_USAGE);
    rb.ranks = 2, rb.rows = rows;
    CHECK_EQ_INT(plan_ep_routed(&p, &rb, 0, &o, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "2 ranks x 8 experts given; the plan has tp 1 x dp 4 and 8 experts");
    /* two pipeline stages (dp 4 each): layer 0, dense, on stage 0 and the MoE layer 1 on stage 1. A stage's plan
     * takes its own ranks' routing: stage 1's is the routing above (its one MoE layer x 2 micro-batches = the 2
     * calls), so its ranks' bytes are the ones above; stage 0 holds no experts and dispatches nothing */
    in.pp = 2, in.stage_view = 2;
    Plan s1 = ox_build(&in);
    CHECK(!plan_ep_routed(&s1, &rt, 0, &o, &e));
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COUNTS], 224);
    CHECK(!plan_ep_routed(&s1, &rt, 3, &o, &e));
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 524288);
    plan_ep_uniform(&s1, 1, &o);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 524288);
    in.stage_view = 1;
    Plan s0 = ox_build(&in);
    plan_ep_uniform(&s0, 1, &o);
    CHECK_EQ_U64(o.payload[EPR_DISPATCH_FWD], 0);
    CHECK_EQ_U64(o.payload[EPR_COUNTS], 0);
    in.pp = 1, in.stage_view = 0;
    /* tp 2 x dp 2, ep 2 (MoE folding at etp 1: the 4 ranks regrouped ep fastest, EP groups {0, 1} and {2, 3} as
     * above): a rank routes its sequence shard, 512 / 2 = 256 tokens a micro-batch, 2 x 256 x 2 = 1,024 copies,
     * so the table above (2,048) is refused and half of it gives half the bytes: rank 0 dispatches 1,024 copies
     * (524,288 B), 512 leave (262,144 B); its experts get its own 512 (262,144 B), nothing leaves */
    in.tp = 2, in.dp = 2;
    p = ox_build(&in);
    CHECK_EQ_INT(plan_ep_routed(&p, &rt, 0, &o, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "rank 0 routed 2048 token copies over 2 dispatches; 2 x 256 tokens x top-2 = 1024 expected");
    uint64_t half[4 * 8];
    for (int i = 0; i < 32; i++) half[i] = rows[i] / 2;
    MoeRouting rh = {.ranks = 4, .experts = 8, .calls = 2, .rows = half};
    CHECKF(!plan_ep_routed(&p, &rh, 0, &o, &e), "%s", e.msg);
    CHECK_EQ_U64(o.payload[EPR_DISPATCH_FWD], 524288);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 262144);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 262144);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 0);
    rh.ranks = 2;
    CHECK_EQ_INT(plan_ep_routed(&p, &rh, 0, &o, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "2 ranks x 8 experts given; the plan has tp 2 x dp 2 and 8 experts");
    in.tp = 1, in.dp = 4;
    in.ep = 1;
    p = ox_build(&in);
    CHECK_EQ_INT(plan_ep_routed(&p, &rt, 0, &o, &e), ST_USAGE);
}

/* Expert tensor parallelism under the same routing: dp 4, ep 2, etp 2 (MoE folding, etp fastest: rank r has
 * etp rank r mod 2 and ep rank ⌊r / 2⌋ mod 2, so ranks 0 and 1 hold experts 0-3 and ranks 2 and 3 experts 4-7,
 * each its half of every expert's FFN; EP groups {0, 2} and {1, 3}, ETP groups {0, 1} and {2, 3}). */
static void test_etp_routed(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 2, in.etp = 2, in.gbs = 8;
    Plan p = ox_build(&in);
    static const uint64_t rows[4 * 8] = {
        512, 512, 0,   0,   256, 256, 256, 256, 0,    0, 0, 0, 1024, 1024, 0, 0,
        256, 256, 256, 256, 256, 256, 256, 256, 2048, 0, 0, 0, 0,    0,    0, 0,
    };
    MoeRouting rt = {.ranks = 4, .experts = 8, .calls = 2, .rows = rows};
    EpRouted o;
    EtpRouted x;
    Err e;
    /* rank 0 (EP peer: rank 2): dispatch 2,048 copies (1,048,576 B at 512 B a copy), the 1,024 for experts 4-7
     * leave (524,288 B); its experts 0-3 get its own 1,024 and rank 2's 1,024: combine 2,048 x 512 = 1,048,576,
     * rank 2's 524,288 leave */
    CHECKF(!plan_ep_routed(&p, &rt, 0, &o, &e), "%s", e.msg);
    CHECK_EQ_U64(o.payload[EPR_DISPATCH_FWD], 1048576);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 524288);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 1048576);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 524288);
    /* rank 1 (EP peer: rank 3): none of its copies is for experts 0-3, all 2,048 leave; its experts get rank 3's
     * 2,048 (1,048,576 B, all from its peer) */
    CHECK(!plan_ep_routed(&p, &rt, 1, &o, &e));
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 1048576);
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 1048576);
    CHECK_EQ_U64(o.sent[EPR_COMBINE_FWD], 1048576);
    /* rank 3 (EP peer: rank 1): experts 4-7 get rank 1's 2,048 and its own 0 */
    CHECK(!plan_ep_routed(&p, &rt, 3, &o, &e));
    CHECK_EQ_U64(o.payload[EPR_COMBINE_FWD], 1048576);
    CHECK_EQ_U64(o.sent[EPR_DISPATCH_FWD], 1048576);
    /* The ETP collectives per recipe (planner/plan_internal.h moe_etp_gather_dtype): a gathered row as the dispatch
     * delivered it. BF16: 256 x 2 = 512 B. An FP8 dispatch with 1x128 scales (deepseek-v3's) at ep 2: 256 E4M3
     * codes + ceil(256 / 128) = 2 FP32 scales = 264 B. The same at ep 1 (nothing dispatched): the hidden states
     * gathered in BF16, 512 B. The reduce-scatter in the combine dtype, BF16, 512 B a row, in every row.
     * Rows of ETP group {0, 1}: at ep 2 its experts' 2,048 + 2,048 = 4,096 (above); at ep 1 its two ranks' own
     * copies, 2,048 + 2,048 = 4,096 too. Each gathered forward and backward: payload 2 x 4,096 x row bytes,
     * half of it leaving. The uniform plan: etp x tokens x top-k = 2 x 512 x 2 = 2,048 rows a call, 4 calls (2
     * micro-batches, forward and backward) a step. ETP group {2, 3} with rank 1's copies for expert 4 moved to
     * expert 0: rank 2's experts 4-7 get rank 0's 1,024 and its own 1,024, rank 3's get rank 1's 1,024 (its other
     * 1,024 now for expert 0) and its own 0: 3,072 rows at ep 2; at ep 1 the two ranks' own 2,048 + 2,048. */
    static const struct {
        const char *name;
        int fp8, ep;
        uint64_t ag, ag_sent, rs, uniform, ag_moved;
    } cases[] = {
        /* 2 x 4,096 x 512 = 4,194,304; 2,048 x 512 = 1,048,576; 2 x 3,072 x 512 = 3,145,728 */
        {"bf16 ep 2", 0, 2, 4194304, 2097152, 4194304, 1048576, 3145728},
        /* 2 x 4,096 x 264 = 2,162,688 (1,081,344 leave); 2,048 x 264 = 540,672; 2 x 3,072 x 264 = 1,622,016 */
        {"fp8 dispatch ep 2", 1, 2, 2162688, 1081344, 4194304, 540672, 1622016},
        /* BF16 rows: 4,194,304; 1,048,576; group {2, 3}: 2 x 4,096 x 512 = 4,194,304 */
        {"fp8 dispatch ep 1", 1, 1, 4194304, 2097152, 4194304, 1048576, 4194304},
    };
    uint64_t moved[4 * 8];
    for (int i = 0; i < 32; i++) moved[i] = rows[i];
    moved[8 + 4] = 0, moved[8 + 0] = 1024;
    MoeRouting rm = {.ranks = 4, .experts = 8, .calls = 2, .rows = moved};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Recipe rc = r;
        if (cases[i].fp8) rc.comm_ep_dispatch = DT_E4M3, rc.act_gran = GRAN_1X128;
        PlanInput ci = in;
        ci.recipe = &rc, ci.ep = (uint32_t)cases[i].ep;
        Plan q = ox_build(&ci);
        CHECKF(!plan_etp_routed(&q, &rt, 0, &x, &e), "%s: %s", cases[i].name, e.msg);
        CHECKF(x.payload[ETPR_AG] == cases[i].ag, "%s: gather %llu", cases[i].name,
               (unsigned long long)x.payload[ETPR_AG]);
        CHECKF(x.sent[ETPR_AG] == cases[i].ag_sent, "%s: gather sent %llu", cases[i].name,
               (unsigned long long)x.sent[ETPR_AG]);
        CHECKF(x.payload[ETPR_RS] == cases[i].rs && x.sent[ETPR_RS] == cases[i].rs / 2, "%s: reduce-scatter %llu",
               cases[i].name, (unsigned long long)x.payload[ETPR_RS]);
        CHECK(!plan_etp_routed(&q, &rt, 1, &x, &e));
        CHECKF(x.payload[ETPR_AG] == cases[i].ag, "%s: rank 1's gather", cases[i].name);
        CHECK(!plan_etp_routed(&q, &rm, 2, &x, &e));
        CHECKF(x.payload[ETPR_AG] == cases[i].ag_moved, "%s: group {2, 3}'s gather %llu", cases[i].name,
               (unsigned long long)x.payload[ETPR_AG]);
        CHECKF(q.coll[CO_ETP_AG].payload_bytes == cases[i].uniform && q.coll[CO_ETP_AG].calls == 4,
               "%s: the uniform plan's gather %llu x %llu", cases[i].name,
               (unsigned long long)q.coll[CO_ETP_AG].payload_bytes, (unsigned long long)q.coll[CO_ETP_AG].calls);
        CHECKF(q.coll[CO_ETP_RS].payload_bytes == 1048576, "%s: the uniform plan's reduce-scatter", cases[i].name);
    }
    /* etp 1: no ETP rows to count */
    in.etp = 1;
    p = ox_build(&in);
    CHECK_EQ_INT(plan_etp_routed(&p, &rt, 0, &x, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "at etp > 1 and cp 1 (oracle-moe at etp 1, cp 1)");
}

int main(void)
{
    RUN(test_ep_routed);
    RUN(test_etp_routed);
    return test_summary();
}
