/* tests/unit/test_oracle_advice.c — which advice a plan carries, and the term
 * metadata (category, persistence, shards) a reader relies on, by hand.
 *
 * An independent oracle: each expected advice set is reasoned from the recipe
 * in the comment (the rules of DESIGN.md's "Advice"), compared as a whole mask
 * so a rule that fires when it should not fails as well as one that is lost. */
#include <string.h>

#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

#define A(x)   (1u << ADV_##x)
#define BIT(s) (1u << STATE_##s)

/* TE delayed scaling, per tensor, compute-only FP8 (BF16/FP32 states + cached FP8 copies) */
static Recipe te(void)
{
    Recipe r = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    r.fp8_row = r.fp8_col = DT_E4M3, r.gemm_fwd = DT_E4M3, r.gemm_bwd = DT_E5M2;
    r.scaling = SCALING_DELAYED, r.amax_history = 16, r.amax_reduce = AMAX_ALL, r.min_sm = 89;
    return r;
}

/* The plan's advice (and the plan, in *out when given) with the main gradient's dtype and FP8 weight caching
 * as a stack or flag sets them. */
static uint32_t advice_with(const Recipe *r, uint32_t dp, uint64_t hbm, MainGrad mg, int cache, Plan *out)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(hbm);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = r, in.dp = dp, in.gbs = 2 * dp, in.sharding = SHARD_DIST_OPT;
    in.main_grad = mg, in.fp8_weight_cache = cache;
    Plan p;
    Err e = {0};
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "plan_build: %s", e.msg);
        return 0xFFFFFFFFu;
    }
    if (out) *out = p;
    return p.advice_mask;
}

static uint32_t advice(const Recipe *r, uint32_t dp, uint64_t hbm)
{
    return advice_with(r, dp, hbm, MAIN_GRAD_RECIPE, 1, NULL);
}

static void test_advice_sets(void)
{
    const uint64_t big = 1ull << 40;
    /* BF16: nothing to say (no FP8; the FP32 gradient reduction is only news for FP8 recipes) */
    Recipe b = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    CHECK_EQ_U64(advice(&b, 4, big), 0);
    /* the same on a GPU too small for it: out of memory is the only advice */
    CHECK_EQ_U64(advice(&b, 4, 1ull << 20), A(OOM));
    /* TE: FP8 copies on top of high-precision states (compute-only), FP32 gradients over dp 4,
     * per-tensor scales, delayed scaling's reproducibility, convergence evidence */
    Recipe t = te();
    CHECK_EQ_U64(advice(&t, 4, big),
                 A(COMPUTE_ONLY) | A(FP32_GRAD_COMM) | A(PER_TENSOR) | A(REPRODUCIBILITY) | A(CONVERGENCE));
    /* one replica: no DP traffic to warn about */
    CHECK_EQ_U64(advice(&t, 1, big), A(COMPUTE_ONLY) | A(PER_TENSOR) | A(REPRODUCIBILITY) | A(CONVERGENCE));
    /* TP-only amax over dp 4: replicas' scales may drift */
    Recipe tp = t;
    tp.amax_reduce = AMAX_TP;
    CHECK_EQ_U64(advice(&tp, 4, big), A(COMPUTE_ONLY) | A(FP32_GRAD_COMM) | A(PER_TENSOR) | A(REPRODUCIBILITY) |
                                          A(CONVERGENCE) | A(TP_ONLY_AMAX));
    /* FP8-LM: FP16 master, FP8 gradient and m (low-precision states: not compute-only), FP8 gradient
     * reduction (no FP32 traffic), per-tensor, delayed */
    Recipe f = t;
    f.gemm.dt[STATE_WEIGHT] = DT_NONE, f.gemm.dt[STATE_MASTER] = DT_FP16, f.gemm.dt[STATE_GRAD] = DT_E4M3;
    f.gemm.dt[STATE_M] = DT_E4M3, f.gemm.dt[STATE_V] = DT_FP16, f.comm_dp_grad = DT_E4M3;
    CHECK_EQ_U64(advice(&f, 4, big), A(PER_TENSOR) | A(REPRODUCIBILITY) | A(CONVERGENCE));
    /* an FP8 second moment diverges */
    Recipe v8 = f;
    v8.gemm.dt[STATE_V] = DT_E4M3;
    CHECK_EQ_U64(advice(&v8, 4, big), A(PER_TENSOR) | A(REPRODUCIBILITY) | A(CONVERGENCE) | A(FP8_SECOND_MOMENT));
    /* current scaling with an FP16 gradient (2 B is not below 2) and an FP32 master: still compute-only;
     * no delayed scaling, so no reproducibility note */
    Recipe c = t;
    c.scaling = SCALING_CURRENT, c.amax_history = 1, c.gemm.dt[STATE_GRAD] = DT_FP16;
    CHECK_EQ_U64(advice(&c, 1, big), A(COMPUTE_ONLY) | A(PER_TENSOR) | A(CONVERGENCE));
    /* current scaling with TP-only amax over dp 4 (te-fp8-current): each rank's scale is its own
     * tensor's by design, so no drift warning — only the FP32 gradient traffic is added */
    Recipe ct = c;
    ct.amax_reduce = AMAX_TP;
    CHECK_EQ_U64(advice(&ct, 4, big), A(COMPUTE_ONLY) | A(FP32_GRAD_COMM) | A(PER_TENSOR) | A(CONVERGENCE));
    /* a BF16 master (under 4 B) is not compute-only */
    Recipe bm = c;
    bm.gemm.dt[STATE_MASTER] = DT_BF16;
    CHECK_EQ_U64(advice(&bm, 1, big), A(PER_TENSOR) | A(CONVERGENCE));
    /* no separate master: the FP32 working weight is the master (4 B), still compute-only */
    Recipe nm = c;
    nm.gemm.dt[STATE_WEIGHT] = DT_FP32, nm.gemm.dt[STATE_MASTER] = DT_NONE;
    nm.gemm.shard_mask &= ~BIT(MASTER);
    CHECK_EQ_U64(advice(&nm, 1, big), A(COMPUTE_ONLY) | A(PER_TENSOR) | A(CONVERGENCE));
    /* MXFP8: 1x32 E8M0 blocks for activations and weights, scales local: no per-tensor note, both
     * copies quantized separately */
    Recipe mx = c;
    mx.act_gran = mx.weight_gran = GRAN_1X32, mx.amax_reduce = AMAX_NONE, mx.min_sm = 100;
    CHECK_EQ_U64(advice(&mx, 1, big), A(COMPUTE_ONLY) | A(MX_BOTH_COPIES) | A(CONVERGENCE));
    /* blockwise weights but per-tensor activations: the per-tensor note stays */
    Recipe half = mx;
    half.act_gran = GRAN_TENSOR, half.weight_gran = GRAN_128X128, half.min_sm = 90;
    CHECK_EQ_U64(advice(&half, 1, big), A(COMPUTE_ONLY) | A(PER_TENSOR) | A(CONVERGENCE));
}

/* Every advice line follows the plan it sits under. TE over dp 4 with the distributed optimizer: the plan's
 * dp_grad_reducescatter moves the main gradient's dtype — the recipe's FP32, or what --main-grad (a stack's
 * main_grad column: megatron-core's is bf16) keeps — and the advice names that dtype: FP32 with main_grad
 * fp32, BF16 with bf16 (once said "FP32" under a BF16 reduce-scatter). Without FP8 weight caching the plan
 * holds no FP8 copies (fp8_rowwise / fp8_colwise 0 B), and the compute-only line says they are cast per
 * micro-batch instead of "cached ... on top". */
static void test_advice_follows_the_plan(void)
{
    const uint64_t big = 1ull << 40;
    const uint32_t rest = A(PER_TENSOR) | A(REPRODUCIBILITY) | A(CONVERGENCE);
    Recipe t = te();
    Plan p;
    CHECK_EQ_U64(advice_with(&t, 4, big, MAIN_GRAD_BF16, 1, &p), A(COMPUTE_ONLY) | A(BF16_GRAD_COMM) | rest);
    CHECK(p.coll[CO_DP_GRAD_RS].dtype == DT_BF16);
    CHECK_EQ_U64(advice_with(&t, 4, big, MAIN_GRAD_FP32, 1, &p), A(COMPUTE_ONLY) | A(FP32_GRAD_COMM) | rest);
    CHECK(p.coll[CO_DP_GRAD_RS].dtype == DT_FP32);
    CHECK_EQ_U64(advice_with(&t, 4, big, MAIN_GRAD_RECIPE, 0, &p), A(COMPUTE_ONLY_CAST) | A(FP32_GRAD_COMM) | rest);
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes + p.mem[MT_FP8_COLWISE].bytes, 0);
    /* the texts say what they follow */
    CHECK(strstr(advice_text(ADV_BF16_GRAD_COMM), "reduced in BF16") != NULL);
    CHECK(strstr(advice_text(ADV_COMPUTE_ONLY_CAST), "cast per micro-batch") != NULL);
    CHECK(strstr(advice_text(ADV_COMPUTE_ONLY_CAST), "on top") == NULL);
}

/* A recipe's hardware floor, named with both SM versions: TE's FP8 needs SM 8.9, an SM 8.0 GPU is refused
 * ("needs SM 8.9, g is SM 8.0"); SM 10.0 passes. */
static void test_sm_floor_named(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    g.sm = 80;
    Recipe t = te();
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = &t, in.gbs = 2;
    Err e = {0};
    CHECK(plan_validate(&in, &e) == REJECT_HW);
    CHECK_CONTAINS(e.msg, "recipe oracle-bf16 needs SM 8.9, g is SM 8.0");
    g.sm = 100;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
}

/* Categories, persistence and shards of every term (plan.h): states, FP8 copies and scales persist;
 * activations and fragmentation are per-step; the three fixed overheads persist. With ZeRO-3 over
 * dp 2 every state is held 1/2; nothing else is sharded. */
static void test_term_metadata(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe t = te();
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = &t, in.dp = 2, in.gbs = 4, in.sharding = SHARD_ZERO3;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    for (int i = 0; i < MT_COUNT_; i++) {
        const MemTerm *x = &p.mem[i];
        /* the expert terms (a dense model holds none of them) are states, an FP8 copy and activations */
        int expert = i >= MT_WEIGHT_EXPERT && i <= MT_OPTIM_V_EXPERT;
        int state = (i >= MT_WEIGHT_GEMM && i <= MT_OPTIM_V_OTHER && i != MT_FP8_ROWWISE && i != MT_FP8_COLWISE) ||
                    (expert && i != MT_FP8_EXPERT) || i == MT_ROUTER_BIAS;
        int copy = i == MT_FP8_ROWWISE || i == MT_FP8_COLWISE || i == MT_FP8_EXPERT;
        int scale = i >= MT_SCALE_GEMM && i <= MT_SCALE_STATE;
        int act = (i >= MT_ACT_LAYER_HP && i <= MT_TRANSIENT) || i == MT_ACT_MOE;
        MemCategory want = state ? MC_STATE : copy ? MC_FP8_COPY : scale ? MC_SCALE : act ? MC_ACTIVATION : MC_OVERHEAD;
        const char *nm = mem_term_name((MemTermId)i);
        const MemCategory cat = mem_term_category((MemTermId)i);
        const int persistent = mem_term_persistent((MemTermId)i);
        CHECKF(cat == want, "%s: category %d, expected %d", nm, cat, want);
        CHECKF(persistent == !(act || i == MT_FRAGMENTATION), "%s: persistent %d", nm, persistent);
        if (expert || i == MT_ACT_MOE ||
            i == MT_ROUTER_BIAS) { /* absent here: no bytes (test_moe_plan, test_moe_params) */
            CHECKF(x->bytes == 0, "%s: %llu bytes in a dense model", nm, (unsigned long long)x->bytes);
            continue;
        }
        CHECKF(x->shards == (state ? 2u : 1u), "%s: shards %u", nm, x->shards);
        /* terms that mix dtypes (BF16 tensors with fp32 statistics, scores, logits) count bytes only */
        if (i == MT_ACT_LAYER_HP || i == MT_ACT_ATTN || i == MT_ACT_OUTPUT || i == MT_TRANSIENT)
            CHECKF(x->elements == 0 && x->dtype == DT_NONE, "%s: %llu elements of dtype %d", nm,
                   (unsigned long long)x->elements, (int)x->dtype);
    }
}

/* The recipe vocabulary's names parse to themselves; anything else is refused. */
static void test_recipe_names(void)
{
    const char *states[] = {"weight", "master", "grad", "m", "v"};
    for (int i = 0; i < 5; i++) {
        StateId s = STATE_COUNT_;
        CHECK(state_parse(states[i], &s) == 0 && s == (StateId)i);
        CHECK_STR(state_name((StateId)i), states[i]);
    }
    const char *scal[] = {"none", "delayed", "current"};
    for (int i = 0; i < 3; i++) {
        ScalingMode s = SCALING_COUNT_;
        CHECK(scaling_parse(scal[i], &s) == 0 && s == (ScalingMode)i);
    }
    const char *red[] = {"none", "tp", "all"};
    for (int i = 0; i < 3; i++) {
        AmaxReduce a = AMAX_REDUCE_COUNT_;
        CHECK(amax_reduce_parse(red[i], &a) == 0 && a == (AmaxReduce)i);
    }
    StateId s;
    ScalingMode sm;
    AmaxReduce a;
    CHECK(state_parse("w", &s) == -1 && state_parse("", &s) == -1);
    CHECK(scaling_parse("late", &sm) == -1);
    CHECK(amax_reduce_parse("dp", &a) == -1);
}

/* plan_input_defaults, as plan.h documents them: layout 1x1x1x1, micro-batch 1, SP on, flash, no
 * recompute or sharding, vocabulary padded to 128; no stack: the recipe's main gradient, cached FP8 copies,
 * fused SwiGLU, TE-style fused kernels without a launch floor, DP hidden behind compute and nothing else
 * overlapped; efficiencies from the catalog (0) except HBM and network 0.80; CUDA context 512 MiB =
 * 536,870,912 B, cuBLASLt workspace 32 MiB = 33,554,432 B, NCCL 2 connections x 32 channels x (4 MiB +
 * 4,915,200 B + 512 KiB) = 64 x 9,633,792 = 616,562,688 B per communicator, allocator reserve 5 %, a plan
 * fits up to 95 % of the memory. */
static void test_documented_defaults(void)
{
    PlanInput in;
    plan_input_defaults(&in);
    CHECK(in.tp == 1 && in.pp == 1 && in.vpp == 1 && in.cp == 1 && in.dp == 1 && in.mbs == 1 && in.world == 0);
    CHECK(in.gbs == 0 && in.seq == 0 && in.sp == 1 && in.attn == ATTN_FLASH && in.dropout == 0);
    CHECK(in.recompute == RECOMPUTE_NONE && in.sharding == SHARD_NONE && in.vocab_pad == 128);
    CHECK(!in.model && !in.gpu && !in.recipe && !in.stack);
    CHECK(in.main_grad == MAIN_GRAD_RECIPE && in.fp8_weight_cache == 1 && in.fused_swiglu == 1);
    CHECK(in.fusion == FUSE_TE && in.launch_s == 0.0);
    CHECK(in.overlap_dp == 1.0 && in.overlap_tp == 0.0 && in.overlap_pp == 0.0 && in.overlap_cp == 0.0);
    CHECK_EQ_U64(in.cuda_context_bytes, 536870912);
    CHECK_EQ_U64(in.workspace_bytes, 33554432);
    CHECK_EQ_U64(in.nccl_comm_bytes, 616562688);
    CHECK(in.frag_frac == 0.05 && in.max_mem_frac == 0.95);
    CHECK(in.eff_gemm_bf16 == 0.0 && in.eff_gemm_fp8 == 0.0 && in.eff_attn == 0.0);
    CHECK(in.eff_hbm == 0.80 && in.eff_net == 0.80);
}

/* A GPU row with a zero rate, no memory or no GPUs per node is refused with a message naming the GPU. */
static void test_bad_gpu_is_named(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe b = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    for (int i = 0; i < 6; i++) {
        GpuSpec bad = g;
        double *zero[] = {&bad.hbm_bw, &bad.flops_bf16, &bad.intra_bw, &bad.inter_bw};
        if (i < 4)
            *zero[i] = 0;
        else if (i == 4)
            bad.hbm_bytes = 0;
        else
            bad.gpus_per_node = 0;
        PlanInput in;
        plan_input_defaults(&in);
        in.model = &m, in.gpu = &bad, in.recipe = &b;
        Plan p;
        Err e = {0};
        CHECKF(plan_build(&in, &p, &e) == ST_USAGE, "field %d", i);
        CHECK_CONTAINS(e.msg, "gpu g: memory, bandwidths, BF16 rate and gpus_per_node must be positive");
    }
    /* positive is enough, however slow: 0.5 B/s and 0.5 FLOP/s plan */
    GpuSpec slow = g;
    slow.hbm_bw = slow.flops_bf16 = slow.intra_bw = slow.inter_bw = 0.5;
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &slow, in.recipe = &b;
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
}

int main(void)
{
    RUN(test_advice_sets);
    RUN(test_advice_follows_the_plan);
    RUN(test_sm_floor_named);
    RUN(test_term_metadata);
    RUN(test_recipe_names);
    RUN(test_documented_defaults);
    RUN(test_bad_gpu_is_named);
    return test_summary();
}
