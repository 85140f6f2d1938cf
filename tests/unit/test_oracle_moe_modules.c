/* tests/unit/test_oracle_moe_modules.c — Megatron's --recompute-modules and --offload-modules on the
 * mixture-of-experts oracle model of test_oracle_moe.c (support/oracle_fixtures.h ox_moe): what each module
 * takes out of the activation terms, adds to the transient, runs again and sends again, and the refusals.
 *
 * An independent oracle: every expected byte count is arithmetic on the model, written out in the comments,
 * never a value the planner produced. */
#include <math.h>
#include <string.h>

#include "planner/plan_internal.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static int build(const PlanInput *in, Plan *p)
{
    Err e = {0};
    Status st = plan_build(in, p, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    return st == ST_OK;
}

/* --recompute-modules (plan.h RECOMPUTE_MOD_*) on the oracle model with a dense FFN of 512, one micro-batch:
 * what each module takes out of the activation terms and adds to the transient, worked from the model.
 * T = 512 tokens, h = 256, Fs = Fe = 128, R = 1024 routed rows, SwiGLU (FC1 writes 2F), standard attention
 * (its norm fused into QKV: the layernorm module touches the MoE layer's pre-MLP norm only).
 * BF16 recipe (saved inputs BF16, 2 B):
 *   MoE layer's FFN part  norm2 input T h 2 = 262,144 + statistics T 4 = 2,048; shared FC1 output T 2Fs 2 =
 *                         262,144, its input (norm2's output) T h 2 = 262,144, FC2 input T Fs 2 = 131,072:
 *                         919,552
 *   routed (act_moe)      probabilities T E 4 = 16,384, top-k T k 8 = 8,192 (the router's input is the shared
 *                         FC1's), dispatched inputs R h 2 = 524,288, FC1 output R 2Fe 2 = 524,288, FC2 input R Fe 2
 *                         = 262,144, per row its weight R 4 = 4,096, the unfused permute's int64 indices T k 8 =
 *                         8,192 and masked_select's probabilities and mask T E 5 = 20,480: 1,368,064
 *   dense FFN part        norm 264,192, FC1 output T 1024 2 = 1,048,576, FC1 input 262,144, FC2 input T 512 2 =
 *                         524,288: 2,099,200
 *   layernorm       the shared FC1's BF16 input (norm2's output) goes: hp -262,144
 *   shared_experts  FC1 output and FC2 input go (their input stays: the module's input): hp -393,216
 *   moe             the FFN part keeps norm2's input, statistics and output: 919,552 - 526,336 = hp -393,216;
 *                   act_moe -1,368,064; the transient adds what one layer rebuilds, 919,552 + 1,368,064 -
 *                   526,336 = 1,761,280, to the MoE layer's working set 3,846,144 (test_zero3_gathers_the_
 *                   larger_kind; above the loss's 3,072,000, so the transient without a module): 5,607,424
 *   moe,layernorm   norm2's output goes too: hp -655,360; the layer rebuilds 919,552 + 1,368,064 - 264,192 =
 *                   2,023,424 (norm2's output once among it): transient 3,846,144 + 2,023,424 = 5,869,568
 *   mlp             the dense FFN keeps its input T h 2 = 262,144: hp -1,837,056; transient: the dense working
 *                   set dX, d(residual) 524,288 + d(FC1 output) T 1024 2 = 1,048,576 + SwiGLU's d(output) T 512 2 =
 *                   524,288 = 2,097,152, + 1,837,056 = 3,934,208 (now above the MoE layer's)
 *   core_attn       as --recompute selective: the flash statistics go, 2 layers T heads 4 = 8,192
 * FP8 recipe (TE: saved inputs E4M3, 1 B; the linears keep their own FP8 copies). The working sets: MoE layer
 * dX, d(residual) 524,288 + d(hidden) (T 2Fs + R 2Fe) 2 = 786,432 + those in FP8 in both layouts 786,432 +
 * dispatch and combine buffers R h (2 + 2) = 1,048,576 + SwiGLU's d(outputs) 393,216 + the router 45,056 + the MoE
 * input's gradient 262,144 + d(QKV) 786,432: 4,632,576 (the transient without a module, above the loss's
 * 3,072,000); dense layer 524,288 + T 1024 (2 + 2) + T 512 2 = 3,145,728.
 *   layernorm       the router's BF16 input T h 2 = 262,144 goes from act_moe; hp and FP8 unchanged; rebuilt
 *                   262,144: transient 4,894,720
 *   shared_experts  hp -262,144 (FC1 output), FP8 -(T h + T Fs) = -196,608; transient + 458,752 = 5,091,328
 *   moe             hp unchanged (the module keeps norm2's output, which the router held in act_moe), FP8
 *                   -196,608, act_moe -(16,384 + 8,192 + 262,144 router input + R h 262,144 + 524,288 + R Fe
 *                   131,072 + 32,768) = -1,236,992; rebuilt 196,608 + 1,236,992: transient 6,066,176
 *   mlp             hp -(1,048,576 + 2,048) = -1,050,624 (its input, 262,144, stays), FP8 -(T h + T 512) =
 *                   -393,216; the dense layer's set 3,145,728 + 1,443,840 = 4,589,568 stays below the MoE layer's 4,632,576
 * Launches (rates 1e30, 1 us a kernel or GEMM), the forward a module runs again:
 *   layernorm  the pre-MLP norm 1;  shared_experts  FC1, FC2, SwiGLU (+ its FP8 cast) 3 (4);
 *   moe        router, shared FC1 and FC2 3, expert FC1 and FC2 2 x 2 (TE's per-expert GEMMs: 8 local experts run
 *              as 2 rounds of 4 streams, one launch floor a round) + router scores and top-k 2, permute 1, the
 *              all-to-all dispatcher's sort by local expert 1, (FC1 cast), SwiGLU 1, (FC2 cast), its restore 1,
 *              unpermute 1, shared SwiGLU 1 (+ cast) = 15 (18);
 *   mlp        FC1, FC2, norm2, SwiGLU (+ FC2 cast) = 4 (5) — the residual add after it is outside the module. */
static void test_recompute_modules(void)
{
    static const struct {
        int fp8;
        unsigned mods;
        int64_t hp, f8, moe, attn; /* change against no module, bytes */
        uint64_t transient;        /* 0: the same as without */
        int launches;              /* extra kernels and GEMMs a step */
    } rows[] = {
        {0, RECOMPUTE_MOD_LAYERNORM, -262144, 0, 0, 0, 4108288, 1},
        {0, RECOMPUTE_MOD_SHARED, -393216, 0, 0, 0, 4239360, 3},
        {0, RECOMPUTE_MOD_MOE, -393216, 0, -1368064, 0, 5607424, 15},
        {0, RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_LAYERNORM, -655360, 0, -1368064, 0, 5869568, 16},
        {0, RECOMPUTE_MOD_MLP, -1837056, 0, 0, 0, 3934208, 4},
        {0, RECOMPUTE_MOD_CORE_ATTN, 0, 0, 0, -8192, 0, -1}, /* -1: checked against --recompute selective */
        {1, RECOMPUTE_MOD_LAYERNORM, 0, 0, -262144, 0, 4894720, 1},
        {1, RECOMPUTE_MOD_SHARED, -262144, -196608, 0, 0, 5091328, 4},
        {1, RECOMPUTE_MOD_MOE, 0, -196608, -1236992, 0, 6066176, 18},
        {1, RECOMPUTE_MOD_MLP, -1050624, -393216, 0, 0, 4632576, 5},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        ModelSpec m = ox_moe(512);
        GpuSpec g = fx_gpu();
        Recipe r = rows[i].fp8 ? fx_te_recipe("te", 0) : fx_bf16_recipe("bf16", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1;
        Plan p0, p1;
        if (!build(&in, &p0)) return;
        in.recompute_mods = rows[i].mods;
        if (!build(&in, &p1)) return;
        const MemTermId ids[4] = {MT_ACT_LAYER_HP, MT_ACT_LAYER_FP8, MT_ACT_MOE, MT_ACT_ATTN};
        const int64_t want[4] = {rows[i].hp, rows[i].f8, rows[i].moe, rows[i].attn};
        for (int t = 0; t < 4; t++)
            CHECKF((int64_t)(p1.mem[ids[t]].bytes - p0.mem[ids[t]].bytes) == want[t],
                   "row %u, %s: changed by %lld B, expected %lld", i, mem_term_name(ids[t]),
                   (long long)(p1.mem[ids[t]].bytes - p0.mem[ids[t]].bytes), (long long)want[t]);
        uint64_t tr = rows[i].transient ? rows[i].transient : p0.mem[MT_TRANSIENT].bytes;
        CHECKF(p1.mem[MT_TRANSIENT].bytes == tr, "row %u: transient %llu, expected %llu", i,
               (unsigned long long)p1.mem[MT_TRANSIENT].bytes, (unsigned long long)tr);
        /* the forward a module runs again, counted in launches */
        g.hbm_bw = g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
        in.launch_s = 1e-6, in.recompute_mods = 0;
        if (!build(&in, &p0)) return;
        in.recompute_mods = rows[i].mods;
        if (!build(&in, &p1)) return;
        double extra = (p1.time.step_s - p0.time.step_s) * 1e6;
        if (rows[i].launches >= 0) {
            CHECKF(fabs(extra - rows[i].launches) < 1e-9, "row %u: %g launches more, expected %d", i, extra,
                   rows[i].launches);
        } else { /* core_attn is --recompute selective */
            Plan ps;
            in.recompute_mods = 0, in.recompute = RECOMPUTE_SELECTIVE;
            if (!build(&in, &ps)) return;
            CHECK_REL(p1.time.step_s, ps.time.step_s, 1e-15);
            CHECK_EQ_U64(p1.total_bytes, ps.total_bytes);
        }
    }
    /* a layernorm norm by bytes (launches free): read and write T h elements, 2 + 2 B, at 0.8 x 3.35e12 B/s:
     * 4 x 512 x 256 / 2.68e12 = 0.19564... us */
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan p0, p1;
    if (!build(&in, &p0)) return;
    in.recompute_mods = RECOMPUTE_MOD_LAYERNORM;
    if (!build(&in, &p1)) return;
    CHECK_REL(p1.time.step_s - p0.time.step_s, 524288.0 / 2.68e12, 1e-9);
}

/* --offload-modules: the saved inputs of expert_fc1 and moe_act wait in host memory between the MoE layer's forward
 * and its backward; the GPU keeps two layers' worth (the layer whose backward runs and the next, reloaded ahead).
 * Micro-batch 4 (T = 4 x 512 = 2048 tokens, R = 2 T = 4096 routed rows, ep 1), one micro-batch, pp 1: the one MoE
 * layer holds one layer-micro-batch, so act_moe falls by the offloaded bytes and the transient (the MoE layer's
 * working set, above the dense layer's and the loss's) grows by twice them.
 *   expert_fc1  the dispatched FC1 inputs R h = 4096 x 256 = 1,048,576 elements (at Megatron's 2^20 threshold):
 *               BF16 2,097,152 B, E4M3 (TE, per-tensor: no block scales) 1,048,576 B
 *   moe_act     FC1's output R 2 Fe = 4096 x 256 = 1,048,576 elements: kept in BF16 2,097,152 B, or as
 *               --recompute-modules moe_act keeps it, in the saved dtype: E4M3 1,048,576 B
 * Micro-batch 2: R = 2048, both tensors 524,288 elements, under 2^20: nothing moves. */
static void test_offload_modules(void)
{
    static const struct {
        int fp8;
        unsigned rc_mods, off_mods;
        uint32_t mbs;
        uint64_t off; /* bytes offloaded per MoE layer-micro-batch */
    } rows[] = {
        {0, 0, OFFLOAD_MOD_EXPERT_FC1, 4, 2097152},
        {0, 0, OFFLOAD_MOD_MOE_ACT, 4, 2097152},
        {0, 0, OFFLOAD_MOD_ALL_, 4, 4194304},
        {1, 0, OFFLOAD_MOD_EXPERT_FC1, 4, 1048576},
        {1, 0, OFFLOAD_MOD_MOE_ACT, 4, 2097152},
        {1, RECOMPUTE_MOD_MOE_ACT, OFFLOAD_MOD_MOE_ACT, 4, 1048576},
        {1, RECOMPUTE_MOD_MOE_ACT, OFFLOAD_MOD_ALL_, 4, 2097152},
        {0, 0, OFFLOAD_MOD_ALL_, 2, 0},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        ModelSpec m = ox_moe(512);
        GpuSpec g = fx_gpu();
        Recipe r = rows[i].fp8 ? fx_te_recipe("te", 0) : fx_bf16_recipe("bf16", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.mbs = rows[i].mbs, in.gbs = rows[i].mbs, in.recompute_mods = rows[i].rc_mods;
        Plan p0, p1;
        if (!build(&in, &p0)) return;
        in.offload_mods = rows[i].off_mods;
        if (!build(&in, &p1)) return;
        CHECKF(p0.mem[MT_ACT_MOE].bytes - p1.mem[MT_ACT_MOE].bytes == rows[i].off,
               "row %u: act_moe %llu -> %llu, expected %llu less", i, (unsigned long long)p0.mem[MT_ACT_MOE].bytes,
               (unsigned long long)p1.mem[MT_ACT_MOE].bytes, (unsigned long long)rows[i].off);
        CHECKF(p1.mem[MT_TRANSIENT].bytes - p0.mem[MT_TRANSIENT].bytes == 2 * rows[i].off,
               "row %u: transient %llu -> %llu, expected %llu more", i, (unsigned long long)p0.mem[MT_TRANSIENT].bytes,
               (unsigned long long)p1.mem[MT_TRANSIENT].bytes, (unsigned long long)(2 * rows[i].off));
        CHECK_EQ_U64(p1.mem[MT_ACT_LAYER_HP].bytes, p0.mem[MT_ACT_LAYER_HP].bytes);
        CHECK_EQ_U64(p1.mem[MT_ACT_LAYER_FP8].bytes, p0.mem[MT_ACT_LAYER_FP8].bytes);
    }
    /* refused: offloading inside a MoE layer the moe module rebuilds whole (as Megatron-Core), and on a dense model */
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.offload_mods = OFFLOAD_MOD_MOE_ACT, in.recompute_mods = RECOMPUTE_MOD_MOE;
    Plan p;
    Err e = {0};
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECKF(strstr(e.msg, "--offload-modules moe_act") && strstr(e.msg, "--recompute-modules moe"), "%s", e.msg);
    ModelSpec d = ox_tiny(16, 4);
    in = fx_input(&d, &g, &r);
    in.gbs = 1, in.offload_mods = OFFLOAD_MOD_EXPERT_FC1;
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECKF(strstr(e.msg, "--offload-modules expert_fc1") && strstr(e.msg, "no experts"), "%s", e.msg);
}

/* The collectives a module runs again: the MoE module's forward all-to-alls (ep 2: dispatch and combine
 * forward, one MoE layer, one micro-batch: 1 -> 2 calls, backward 1), and the TP pairs of the FFN forwards
 * (tp 2 with SP: a pair per attention and per FFN, dense layer 2 + MoE layer 2 = 4 forward all-gathers; +1 for
 * the shared experts under moe or shared_experts, +1 for the dense FFN under mlp). */
static void test_recompute_modules_collectives(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.ep = 2, in.gbs = 2;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].calls, 1);
    in.recompute_mods = RECOMPUTE_MOD_MOE;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].calls, 2);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_FWD].calls, 2);
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_BWD].calls, 1);
    in.dp = 1, in.ep = 1, in.tp = 2, in.sp = 1, in.gbs = 1;
    static const struct {
        unsigned mods;
        uint64_t fwd;
    } tp[] = {{0, 4},
              {RECOMPUTE_MOD_SHARED, 5},
              {RECOMPUTE_MOD_MOE, 5},
              {RECOMPUTE_MOD_MLP, 5},
              {RECOMPUTE_MOD_MLP | RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_SHARED, 6}};
    for (unsigned i = 0; i < sizeof tp / sizeof *tp; i++) {
        in.recompute_mods = tp[i].mods;
        if (!build(&in, &p)) return;
        CHECKF(p.coll[CO_TP_AG_FWD].calls == tp[i].fwd && p.coll[CO_TP_RS_FWD].calls == tp[i].fwd,
               "row %u: %llu forward gathers, expected %llu", i, (unsigned long long)p.coll[CO_TP_AG_FWD].calls,
               (unsigned long long)tp[i].fwd);
        CHECK_EQ_U64(p.coll[CO_TP_RS_BWD].calls, 4); /* the backward's are the layer's own */
        /* every gather is a whole sequence's BF16 hidden states, 512 x 256 x 2 = 262,144 B (standard attention:
         * the attention's and the FFNs' alike), so the mean per call is that too, forward and backward (the
         * backward's: half output gradients, half re-gathered inputs, (262,144 + 262,144) / 2) */
        CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].payload_bytes, 262144);
        CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].payload_bytes, 262144);
    }
}

/* Modules on models that lack what they recompute: refused, naming the module and the model. */
static void test_recompute_modules_refused(void)
{
    static const struct {
        int moe;      /* 0: the dense oracle model; 1: ox_moe; 2: ox_moe without shared experts or dense layers */
        Recompute rc; /* --recompute */
        unsigned mods;
        const char *msg;
    } rows[] = {
        {0, RECOMPUTE_NONE, RECOMPUTE_MOD_MLP, "--recompute-modules mlp: modelled for mixture-of-experts"},
        {0, RECOMPUTE_NONE, RECOMPUTE_MOD_LAYERNORM, "--recompute-modules layernorm: modelled for"},
        {0, RECOMPUTE_NONE, RECOMPUTE_MOD_MOE, "--recompute-modules moe: oracle-tiny has no experts"},
        {2, RECOMPUTE_NONE, RECOMPUTE_MOD_SHARED, "--recompute-modules shared_experts: oracle-moe has no shared"},
        {2, RECOMPUTE_NONE, RECOMPUTE_MOD_MLP, "--recompute-modules mlp: oracle-moe has no dense FFN layers"},
        {0, RECOMPUTE_OP, RECOMPUTE_MOD_CORE_ATTN, "core_attn with --recompute op"},
        {1, RECOMPUTE_FULL, RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_LAYERNORM,
         "--recompute-modules layernorm with --recompute full: full recompute already runs"},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        ModelSpec m = rows[i].moe ? ox_moe(512) : ox_tiny(1000, 512);
        if (rows[i].moe == 2) m.shared_experts = 0, m.dense_layers = 0;
        GpuSpec g = fx_gpu();
        Recipe r = fx_bf16_recipe("bf16", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.recompute = rows[i].rc, in.recompute_mods = rows[i].mods;
        Plan p;
        Err e = {0};
        CHECKF(plan_build(&in, &p, &e) == ST_USAGE, "row %u accepted", i);
        CHECKF(strstr(e.msg, rows[i].msg) != NULL, "row %u: %s", i, e.msg);
    }
    /* core_attn on a dense model is --recompute selective */
    ModelSpec m = ox_tiny(1000, 512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    Plan a, b;
    in.recompute_mods = RECOMPUTE_MOD_CORE_ATTN;
    if (!build(&in, &a)) return;
    in.recompute_mods = 0, in.recompute = RECOMPUTE_SELECTIVE;
    if (!build(&in, &b)) return;
    CHECK_EQ_U64(a.total_bytes, b.total_bytes);
    CHECK_REL(a.time.step_s, b.time.step_s, 1e-15);
}

int main(void)
{
    RUN(test_recompute_modules);
    RUN(test_offload_modules);
    RUN(test_recompute_modules_collectives);
    RUN(test_recompute_modules_refused);
    return test_summary();
}
