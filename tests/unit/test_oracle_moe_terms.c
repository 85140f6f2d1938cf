/* tests/unit/test_oracle_moe_terms.c — more of a mixture-of-experts / latent-
 * attention stage worked out by hand: block scales of both FP8 weight copies,
 * the full-recompute transient, the context-parallel exchange with no overlap,
 * expert placement, FP8 copies (pipeline stages, MTP depths and DualPipe:
 * test_oracle_moe_stages.c; latent attention and q/k norms: test_oracle_mla_terms.c).
 *
 * An independent oracle: every expected value is arithmetic on the models
 * below, written out in the comments, never a value the planner produced.
 *
 * The MoE model (support/oracle_fixtures.h ox_moe): 2 layers (the first dense), hidden
 * 256, 2 heads of 128 (no GQA), vocabulary 1000 (vocab_pad 1), seq 512, RMSNorm,
 * SwiGLU, RoPE, untied; 8 routed experts of FFN 128, top 2, 1 shared expert,
 * softmax router. Micro-batch 1, tp = pp = ep = 1 unless a test says otherwise:
 * 512 tokens a micro-batch, 1024 routed rows (512 x top 2). */
#include <math.h>

#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static int build(const PlanInput *in, Plan *p)
{
    Err e = {0};
    Status st = plan_build(in, p, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    return st == ST_OK;
}

/* 128 x 128 weight blocks, one FP32 scale each, per FP8-stored copy (row-wise and column-wise: the transposed
 * copy has the same number of blocks, since the blocks are square). Dense FFN 512. Blocks per copy:
 *   dense layer: QKV 768 x 256 -> 6 x 2 = 12, proj 256 x 256 -> 4, FC1 (SwiGLU) 1024 x 256 -> 8 x 2 = 16,
 *                FC2 256 x 512 -> 2 x 4 = 8: 40
 *   MoE layer:   attention 12 + 4, shared FC1 256 x 256 -> 4, shared FC2 256 x 128 -> 2, 8 routed FC1 of
 *                256 x 256 -> 32, 8 routed FC2 of 256 x 128 -> 16 (the router has none): 70
 *   110 blocks a copy: both copies 220 scales (880 B), the row-wise copy alone 110 (440 B), the column-wise
 *   alone 110. The BF16 working weight itself carries no block scales. */
static void test_block_scales_per_copy(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te-blocks", 0);
    r.weight_gran = GRAN_128X128;
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 220);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 880);
    r.fp8_col = DT_NONE;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 110);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 440);
    r.fp8_col = DT_E4M3, r.fp8_row = DT_NONE;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 110);
}

/* 1x128 activation tiles (DeepSeek-V3): a routed expert's saved FP8 input is transposed (cols, rows) with its
 * tiles along the rows, each expert's starting at its own first row, so a column holds up to
 * n + floor((rows - n) / 128) tiles, n = min(local experts, rows) (n - 1 experts of one row, the rest in one):
 * 1024 rows over 8 experts: 8 + floor(1016 / 128) = 8 + 7 = 15, not ceil(1024 / 128) = 8. The one MoE layer's
 * routed saved inputs: FC1's (cols = hidden 256) 256 x 15 x 4 = 15,360 B, FC2's (cols = expert FFN 128)
 * 128 x 15 x 4 = 7,680 B: act_moe grows by 23,040 B over per-tensor scaling (whose scales are records, not
 * activations). With ep 2 (4 local experts, 1024 rows a rank at imbalance 1): 4 + floor(1020 / 128) = 11
 * tiles, 384 x 11 x 4 = 16,896 B. (Tiles of the whole, 8 a column, would be 384 x 8 x 4 = 12,288 B.) */
static void test_expert_tile_scales(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te-blocks", 0);
    r.weight_gran = GRAN_128X128;
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan p;
    const uint32_t ep[2] = {1, 2};
    const uint64_t want[2] = {23040, 16896};
    for (int i = 0; i < 2; i++) {
        in.ep = ep[i], in.dp = ep[i], in.gbs = ep[i];
        r.act_gran = GRAN_TENSOR;
        if (!build(&in, &p)) return;
        uint64_t tensor = p.mem[MT_ACT_MOE].bytes;
        r.act_gran = GRAN_1X128;
        if (!build(&in, &p)) return;
        CHECKF(p.mem[MT_ACT_MOE].bytes - tensor == want[i], "ep %u: %llu B more, expected %llu", ep[i],
               (unsigned long long)(p.mem[MT_ACT_MOE].bytes - tensor), (unsigned long long)want[i]);
    }
}

/* An FP8 working weight's 128 x 128 block scales under ZeRO-3 are sharded with the weight: a non-expert
 * weight over d = dp = 4, an expert's over the expert-data-parallel group edp = dp / ep = 4 / 2 = 2, ceil per
 * tensor (no FP8 copies). ep 2: each GPU holds 4 of the 8 routed experts. Blocks (as above) and each rank's:
 *   dense layer: QKV 12 -> 3, proj 4 -> 1, FC1 16 -> 4, FC2 8 -> 2: 10
 *   MoE layer:   QKV 3, proj 1, shared FC1 4 -> 1, shared FC2 2 -> ceil(2/4) = 1, 4 routed FC1 of 4 blocks
 *                -> 4 x 2 = 8, 4 routed FC2 of 2 -> 4 x 1 = 4: 18
 *   28 FP32 scales, 112 B. (Experts over d and the rest over edp: 20 + 19 = 39.)
 * Context parallelism joins both groups (Megatron's folding): dp 2 x cp 2 gives the same d = dp x cp = 4 and
 * edp = tp x cp x dp / ep = 1 x 2 x 2 / 2 = 2, so the same 28 (experts left whole, edp 1: 16 + 24 = 40). */
static void test_zero3_block_scales_expert_group(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te-fp8-weight", 0);
    r.gemm.dt[STATE_WEIGHT] = DT_E4M3, r.fp8_row = r.fp8_col = DT_NONE, r.weight_gran = GRAN_128X128;
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 2, in.gbs = 4, in.sharding = SHARD_ZERO3;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 28);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 112);
    in.dp = 2, in.cp = 2, in.gbs = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 28);
}

/* Full recompute keeps only each layer's input, and the backward of a layer first rebuilds all of that layer's
 * activations: the transient is the larger kind's backward working set plus its whole activation set. Dense FFN
 * 4096 (the dense layer is the larger kind), BF16 recipe, flash attention, no dropout, SwiGLU fused.
 *   dense backward working set (test_oracle_moe.c): 524,288 + 8,388,608 + SwiGLU's d(output) 4,194,304 = 13,107,200
 *   dense activations: attention — norm1 input + fp32 rstd 512 x 256 x 2 + 512 x 4 = 264,192, Q/K/V
 *     512 x 768 x 2 = 786,432, flash output 512 x 256 x 2 = 262,144, QKV input 262,144: 1,574,912; log-sum-exp
 *     512 x 2 heads x 4 = 4,096; FFN — norm2 264,192, FC1 output 512 x 8192 x 2 = 8,388,608, FC1 input 262,144,
 *     FC2 input 512 x 4096 x 2 = 4,194,304: 13,109,248. In all 14,688,256.
 *   full recompute: 13,107,200 + 14,688,256 = 27,795,456 (the MoE layer's, about 7.7 MB, and the loss's
 *   512 x 1000 x 6 = 3,072,000 are smaller); without recompute the transient is 13,107,200. */
static void test_full_recompute_transient(void)
{
    ModelSpec m = ox_moe(4096);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 13107200);
    in.recompute = RECOMPUTE_FULL;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 27795456);
}

/* Context parallelism with no overlap (overlap_cp 0): every K/V exchange is on the critical path, so the exposed
 * CP time is the collective's whole time. cp 2 (seq 512 divides by 2 cp = 4), one micro-batch of 1 sequence: the
 * exchange gathers K and V of the whole sequence, 512 x 2 x 256 x 2 B = 524,288 B, of which this GPU sends half,
 * 262,144 B; 3 calls per layer and micro-batch (plan.h: K, V exchanged forward, again in backward, and
 * dK, dV reduced) x 2 layers = 6 calls. The same holds for a dense model (the tiny GPT: 4 layers -> 12 calls). */
static void test_cp_exchange_exposed(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.cp = 2, in.gbs = 1, in.overlap_cp = 0;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_CP_KV].calls, 6);
    CHECK_EQ_U64(p.coll[CO_CP_KV].bus_bytes, 262144);
    CHECK(p.coll[CO_CP_KV].time_s > 0);
    CHECK_REL(p.time.cp_comm_s, p.coll[CO_CP_KV].time_s, 1e-12);
    CHECK_REL(p.coll[CO_CP_KV].exposed_s, p.coll[CO_CP_KV].time_s, 1e-12); /* the collective's own share */
    ModelSpec d = fx_tiny_model();
    d.layers = 4;
    in.model = &d;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_CP_KV].calls, 12);
    CHECK(p.coll[CO_CP_KV].time_s > 0);
    CHECK_REL(p.time.cp_comm_s, p.coll[CO_CP_KV].time_s, 1e-12);
}

/* The amax all-reduce of a MoE stage: per micro-batch one forward call (x and w maxima: 2 fp32 a tensor) and one
 * backward (dy: 1), a payload of the mean 1.5 fp32 = 6 B per FP8 linear tensor the GPU holds (a grouped GEMM's
 * local experts count one each; the router is BF16 and has none). TE recipe (amax over all ranks), dp 2, one
 * micro-batch: 2 calls over 2 ranks.
 *   ep 1: dense layer QKV, proj, FC1, FC2 = 4; MoE layer QKV, proj, shared FC1, FC2 + 8 + 8 experts = 20: 24
 *         tensors -> 144 B a call; an all-reduce over 2 sends 2 x 144 x 1/2 = 144 B; 288 B a step
 *   ep 2: 4 local experts: 4 + 4 + 4 + 4 = 16 tensors -> 96 B a call.
 * Current scaling (amax over TP: each sequence-parallel tensor's scale agreed over the ranks that cast its
 * shards), tp 2 with SP, dp 1: the routed experts' inputs are whole rows on their rank, so their records join
 * no reduction: dense layer 4 + MoE layer QKV, proj, shared FC1, FC2 4 = 8 tensors -> 48 B a call, 2 calls a
 * micro-batch, 2 micro-batches (gbs 2 on one DP rank): 4 (delayed scaling's all-rank reduction keeps all 24:
 * 144 B).
 * This executor's delayed scaling over expert ranks (fusion fp8plan) also MAX-reduces the local experts' records
 * over their EDP and ETP groups (exec/model/model_moe_ep_amax.c), as amax_allreduce per micro-batch forward and
 * backward: 4 local experts x FC1, FC2 = 8 tensors -> 8 x 3 x 4 / 2 = 48 B a call, 2 calls (one micro-batch a
 * replica), an all-reduce over 2 sending 48 B, 96 B a step:
 *   dp 4, ep 2: EDP group 4 / 2 = 2 ranks (2 apart), no ETP group;
 *   tp 2 (SP), dp 2, ep 2 x etp 2: EDP 1 (none), ETP group 2 ranks;
 * none on another stack (Transformer Engine reduces every record in its one amax group) or at ep 1 (the DP
 * group's reduction spans the experts' groups already). */
static void test_moe_amax_payload(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.gbs = 2;
    Plan p;
    if (!build(&in, &p)) return;
    const Collective *c = &p.coll[CO_AMAX_AR];
    CHECK_EQ_U64(c->calls, 2);
    CHECK_EQ_U64(c->ranks, 2);
    CHECK_EQ_U64(c->payload_bytes, 144);
    CHECK_EQ_U64(c->bus_bytes, 144);
    CHECK_EQ_U64(c->step_bytes, 288);
    in.ep = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].payload_bytes, 96);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 2);
    in.ep = 1, in.dp = 1, in.tp = 2, in.sp = 1;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].payload_bytes, 144);
    r.scaling = SCALING_CURRENT, r.amax_reduce = AMAX_TP, r.amax_history = 1;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].payload_bytes, 48);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 4);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 2);
    static const struct {
        uint32_t tp, dp, ep, etp;
        KernelFusion fusion;
        uint64_t edp, etp_b; /* payload a call */
    } x[] = {{1, 4, 2, 1, FUSE_FP8PLAN, 48, 0},
             {2, 2, 2, 2, FUSE_FP8PLAN, 0, 48},
             {1, 4, 2, 1, FUSE_TE, 0, 0},
             {2, 2, 1, 2, FUSE_FP8PLAN, 0, 0}};
    r = fx_te_recipe("te", 0);
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) {
        in = fx_input(&m, &g, &r);
        in.tp = x[i].tp, in.sp = x[i].tp > 1, in.dp = x[i].dp, in.ep = x[i].ep, in.etp = x[i].etp;
        in.gbs = x[i].dp, in.fusion = x[i].fusion;
        if (!build(&in, &p)) return;
        const Collective *ce = &p.coll[CO_EDP_AMAX_AR], *ct = &p.coll[CO_ETP_AMAX_AR];
        CHECKF(ce->payload_bytes == x[i].edp && ce->calls == (x[i].edp ? 2u : 0u) && ce->step_bytes == 2 * x[i].edp &&
                   (!x[i].edp || ce->ranks == 2),
               "row %zu: edp_amax_allreduce %llu B x %llu calls, %llu a step; by hand %llu x 2", i,
               (unsigned long long)ce->payload_bytes, (unsigned long long)ce->calls, (unsigned long long)ce->step_bytes,
               (unsigned long long)x[i].edp);
        CHECKF(ct->payload_bytes == x[i].etp_b && ct->calls == (x[i].etp_b ? 2u : 0u) &&
                   ct->step_bytes == 2 * x[i].etp_b && (!x[i].etp_b || ct->ranks == 2),
               "row %zu: etp_amax_allreduce %llu B x %llu calls, %llu a step; by hand %llu x 2", i,
               (unsigned long long)ct->payload_bytes, (unsigned long long)ct->calls, (unsigned long long)ct->step_bytes,
               (unsigned long long)x[i].etp_b);
    }
}

/* The metadata of every term of a MoE stage (plan.h): states (the expert ones included), FP8 copies and scales
 * persist; activations (the routed experts' included) and fragmentation are per step; the overheads persist.
 * Terms that mix dtypes (BF16 tensors with fp32 statistics, scores, logits, routing maps) and the overheads count
 * bytes only: no elements, no dtype. TE recipe, dp 2, ep 2, one micro-batch per replica, no dropout. */
static void test_term_metadata(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.ep = 2, in.gbs = 2;
    Plan p;
    if (!build(&in, &p)) return;
    for (int i = 0; i < MT_COUNT_; i++) {
        const MemTerm *x = &p.mem[i];
        int copy = i == MT_FP8_ROWWISE || i == MT_FP8_COLWISE || i == MT_FP8_EXPERT;
        int state = !copy && ((i >= MT_WEIGHT_GEMM && i <= MT_OPTIM_V_OTHER) ||
                              (i >= MT_WEIGHT_EXPERT && i <= MT_OPTIM_V_EXPERT) || i == MT_ROUTER_BIAS);
        int scale = i >= MT_SCALE_GEMM && i <= MT_SCALE_STATE;
        int act = (i >= MT_ACT_LAYER_HP && i <= MT_TRANSIENT) || i == MT_ACT_MOE;
        MemCategory want = state ? MC_STATE : copy ? MC_FP8_COPY : scale ? MC_SCALE : act ? MC_ACTIVATION : MC_OVERHEAD;
        const char *nm = mem_term_name((MemTermId)i);
        const MemCategory cat = mem_term_category((MemTermId)i);
        const int persistent = mem_term_persistent((MemTermId)i);
        CHECKF(cat == want, "%s: category %d, expected %d", nm, cat, want);
        CHECKF(persistent == !(act || i == MT_FRAGMENTATION), "%s: persistent %d", nm, persistent);
        int mixed = i == MT_ACT_LAYER_HP || i == MT_ACT_ATTN || i == MT_ACT_OUTPUT || i == MT_TRANSIENT ||
                    i == MT_ACT_MOE || (!state && !copy && !scale && !act);
        if (mixed)
            CHECKF(x->elements == 0 && x->dtype == DT_NONE, "%s: %llu elements of dtype %d", nm,
                   (unsigned long long)x->elements, (int)x->dtype);
        if (i == MT_ACT_OUTPUT || i == MT_ACT_MOE || i == MT_TRANSIENT || i == MT_ACT_LAYER_HP)
            CHECKF(x->bytes > 0, "%s: no bytes", nm);
        /* each GPU's own activations and overheads: not shards of something larger (the report's shards column) */
        if (act || (!state && !copy && !scale))
            CHECKF(x->shards == 1, "%s: %u shards, expected 1", nm, (unsigned)x->shards);
    }
}

/* Where the expert all-to-all runs: EP ranks sit etp apart, so a node of gpus_per_node GPUs holds
 * gpus_per_node / etp of them (one when etp fills the node). Nodes of 2, tp = etp = 2, ep 2, dp 2: one EP rank a
 * node, 2 nodes: the dispatch crosses the network, latency NCCL Simple base 8.4 us + a network step 9.6 us = 18.0
 * us. Nodes of 4, tp = etp = 2, ep 4, dp 4: 2 EP ranks a node, 2 nodes: 18.0 us again. Nodes of 8, ep 4 (etp 1,
 * dp 4): all 4 EP ranks in one node: 8.4 + an NVLink step 3.4 = 11.8 us. */
static void test_ep_placement(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.gpus_per_node = 2;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.tp = 2, in.etp = 2, in.ep = 2, in.dp = 2, in.gbs = 2;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_INT(p.coll[CO_EP_DISPATCH_FWD].inter_node, 1);
    CHECK_NEAR(p.coll[CO_EP_DISPATCH_FWD].latency_s, 18.0e-6, 1e-12);
    /* the TP ranks are adjacent (stride 1): both in one node (nodes of 2, tp 2), so each TP gather and
     * reduce-scatter takes one NVLink step. Every one moves tok x h x 2 = 512 x 256 x 2 = 262,144 B, half of it
     * sent, 131,072 B at 450e9 x 0.8 = 3.6e11 B/s: LL (a third of it) 3.6 + 0.47 + 1.09 = 5.16 us beats Simple
     * 8.4 + 3.4 + 0.36 = 12.16 us, so the latency is LL's 4.07 us (across two nodes it would be 3.6 + 2.7) */
    for (int c = CO_TP_AG_FWD; c <= CO_TP_RS_BWD; c++) {
        CHECKF(p.coll[c].ranks == 2 && !p.coll[c].inter_node, "%s: %u ranks, inter-node %d", coll_name((CollectiveId)c),
               p.coll[c].ranks, p.coll[c].inter_node);
        CHECK_NEAR(p.coll[c].latency_s, 4.07e-6, 1e-12);
    }
    g.gpus_per_node = 4;
    in.ep = 4, in.dp = 4, in.gbs = 4;
    if (!build(&in, &p)) return;
    CHECK_EQ_INT(p.coll[CO_EP_DISPATCH_FWD].inter_node, 1);
    CHECK_NEAR(p.coll[CO_EP_DISPATCH_FWD].latency_s, 18.0e-6, 1e-12);
    g.gpus_per_node = 8;
    in.tp = 1, in.etp = 1, in.ep = 4, in.dp = 4, in.gbs = 4;
    if (!build(&in, &p)) return;
    CHECK_EQ_INT(p.coll[CO_EP_DISPATCH_FWD].inter_node, 0);
    CHECK_NEAR(p.coll[CO_EP_DISPATCH_FWD].latency_s, 11.8e-6, 1e-12);
}

/* Dropout masks (1 B an element) with flash attention: per layer and micro-batch one after the attention output
 * and one after the FFN, [512 tokens x 256] each: 2 x 131,072 = 262,144 B; the embedding's dropout adds one per
 * micro-batch in flight on the first stage. pp 1, one micro-batch, 2 layers: 2 x 262,144 + 131,072 = 655,360 B. */
static void test_dropout_masks(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.dropout = 1;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_ACT_MASK].bytes, 655360);
    CHECK_EQ_U64(p.mem[MT_ACT_MASK].elements, 655360);
}

/* Without the FP8 weight cache (fp8_weight_cache 0, no ZeRO-3) each micro-batch casts its own FP8 copies and saves
 * them with the activations: the TE recipe's row-wise and column-wise E4M3 copies, 2 B per linear weight, of every
 * FP8 linear of the layer. Dense layer (FFN 512): attention 262,144 + FC1 262,144 + FC2 131,072 = 655,360 weights ->
 * 1,310,720 B; MoE layer: attention 262,144 + shared expert 98,304 + 8 experts x 98,304 = 786,432 -> 1,146,880
 * weights -> 2,293,760 B. One micro-batch, pp 1: the saved FP8 activations grow by 3,604,480 B. */
static void test_weight_copies_uncached(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan cached, uncached;
    if (!build(&in, &cached)) return;
    in.fp8_weight_cache = 0;
    if (!build(&in, &uncached)) return;
    CHECK_EQ_U64(uncached.mem[MT_ACT_LAYER_FP8].bytes - cached.mem[MT_ACT_LAYER_FP8].bytes, 3604480);
    CHECK_EQ_U64(uncached.mem[MT_FP8_ROWWISE].bytes + uncached.mem[MT_FP8_EXPERT].bytes, 0);
}

/* The cached FP8 weight copies of ox_moe (dense FFN 512, ep 1), te recipe (row-wise and column-wise E4M3):
 *   non-expert linears: dense layer QKV 768 x 256 = 196,608 + proj 65,536 + FC1 1024 x 256 = 262,144 + FC2
 *   256 x 512 = 131,072 = 655,360; MoE layer attention 262,144 + shared FC1 256 x 256 = 65,536 + shared FC2
 *   256 x 128 = 32,768 = 360,448: 1,015,808 (the router stays BF16) -> one byte each per copy
 *   experts: 8 x (256 x 256 + 256 x 128) = 786,432, a copy each way: 1,572,864 B
 * Row-wise only: 1,015,808 / 0 / 786,432; column-wise only: 0 / 1,015,808 / 786,432 (on fx_gpu, SM 9.0).
 * Both asked for on Blackwell (SM 10.0: FP8 GEMMs in every layout) with per-tensor scales: the row-wise copy serves
 * dgrad too, 1,015,808 / 0 / 786,432; with 128 x 128 block scales the transposed copy stays (its blocks are
 * another tensor's), 1,015,808 / 1,015,808 / 1,572,864; SM 12.0 (TN-only, as Transformer Engine's
 * is_non_tn_fp8_gemm_supported says) keeps both as Hopper does. */
static void test_fp8_copies_each_way(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    enum { NCASE = 6 };
    const Dtype row[NCASE] = {DT_E4M3, DT_E4M3, DT_NONE, DT_E4M3, DT_E4M3, DT_E4M3},
                col[NCASE] = {DT_E4M3, DT_NONE, DT_E4M3, DT_E4M3, DT_E4M3, DT_E4M3};
    const uint32_t sm[NCASE] = {90, 90, 90, 100, 100, 120};
    const Granularity wg[NCASE] = {GRAN_TENSOR, GRAN_TENSOR, GRAN_TENSOR, GRAN_TENSOR, GRAN_128X128, GRAN_TENSOR};
    const uint64_t want[NCASE][3] = {{1015808, 1015808, 1572864}, {1015808, 0, 786432},
                                     {0, 1015808, 786432},        {1015808, 0, 786432},
                                     {1015808, 1015808, 1572864}, {1015808, 1015808, 1572864}};
    for (int i = 0; i < NCASE; i++) {
        r.fp8_row = row[i], r.fp8_col = col[i], g.sm = sm[i], r.weight_gran = wg[i];
        Plan p;
        if (!build(&in, &p)) return;
        CHECKF(p.mem[MT_FP8_ROWWISE].bytes == want[i][0] && p.mem[MT_FP8_COLWISE].bytes == want[i][1] &&
                   p.mem[MT_FP8_EXPERT].bytes == want[i][2],
               "case %d: row-wise %llu, column-wise %llu, experts %llu", i,
               (unsigned long long)p.mem[MT_FP8_ROWWISE].bytes, (unsigned long long)p.mem[MT_FP8_COLWISE].bytes,
               (unsigned long long)p.mem[MT_FP8_EXPERT].bytes);
    }
}

/* A capacity factor that makes the expert rows fractional rounds them up: ox_moe (512 tokens, top 2, ep 1) at
 * capacity 1.1 holds 512 x 2 x 1.1 = 1,126.4 -> 1,127 rows, at 1.125 exactly 1,152 and at 1.25 exactly 1,280.
 * The MoE activations are linear in the rows (every routed tensor is [rows, width]; the router's are per
 * token), so A(1.125) - A(1.1) = 25 rows' bytes and A(1.25) - A(1.125) = 128 rows' bytes: the two differences
 * stand as 25 : 128. (Rounded down, 1,126 rows would give 26 : 128.) */
static void test_fractional_rows_round_up(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    const double cap[3] = {1.1, 1.125, 1.25};
    uint64_t a[3];
    for (int i = 0; i < 3; i++) {
        Plan p;
        in.moe_capacity = cap[i];
        if (!build(&in, &p)) return;
        a[i] = p.mem[MT_ACT_MOE].bytes;
    }
    CHECK(a[1] > a[0] && a[2] > a[1]);
    CHECKF((a[1] - a[0]) * 128 == (a[2] - a[1]) * 25, "differences %llu and %llu are not 25 : 128",
           (unsigned long long)(a[1] - a[0]), (unsigned long long)(a[2] - a[1]));
}
/* This executor's (fusion fp8plan) MoE buffers held all step: the router logits [tok_r, E] fp32 and the experts'
 * output rows [rows, h] BF16 (exec/model/model_moe.c model_moe_transient). With ep > 1 those rows are the token side's,
 * the rank's own tokens x top-k, not the ETP group's gathered rows, which the plan counted at etp 2 (issue 42: 4,096 B
 * over the run at tp 2 x ep 2 x etp 2); at ep 1 x etp 2 the buffer is the experts' side, the ETP group's rows (every
 * peer routes its own tokens, so etp x tok_r x top-k exactly; exec/model/model_moe_ep.c, model_etp_arena). ox_moe with
 * latent attention (q_lora 64, kv_lora 128, heads of 80 + 16, values 64), seq 8, tp 2 with SP, fp8plan's stack: the
 * transient is the replicated gradients' flattened copy after the backward (test_oracle_mla_terms.c
 * test_mla_tp_bytes: 108,160 values without experts) plus the MoE layer's router 8 x 256 = 2,048: 110,208 x 4 B =
 * 440,832, beside d(residual) 4 x 256 and dX max(8 x 1 head x 64, 4 x 256) = 1,024, x 2 B = 4,096, and the MoE
 * buffers: logits 4 tokens x 8 x 4 = 128 and the rows 4 x top-2 = 8 x 256 x 2 = 4,096: 449,152 B at etp 1 and at ep 2
 * x etp 2 (dp 2: the same micro-batch a GPU); at ep 1 x etp 2 the group's 16 rows, 8,192 B: 453,248. */
static void test_moe_buffers_own_rows_at_etp(void)
{
    ModelSpec m = ox_moe(512);
    m.head_dim = 96, m.qk_nope_head_dim = 80, m.qk_rope_head_dim = 16, m.v_head_dim = 64;
    m.kv_lora_rank = 128, m.q_lora_rank = 64, m.seq_len = 8;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.tp = 2, in.sp = 1, in.fusion = FUSE_FP8PLAN;
    static const struct {
        uint32_t ep, etp, dp;
        uint64_t want;
    } c[] = {{1, 1, 1, 449152}, {1, 2, 1, 453248}, {2, 2, 2, 449152}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        Plan p;
        in.ep = c[i].ep, in.etp = c[i].etp, in.dp = c[i].dp, in.gbs = c[i].dp;
        if (!build(&in, &p)) return;
        CHECK_EQ_U64(p.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 440832);
        CHECKF(p.mem[MT_TRANSIENT].bytes == c[i].want, "ep %u x etp %u: transient %llu, by hand %llu", c[i].ep,
               c[i].etp, (unsigned long long)p.mem[MT_TRANSIENT].bytes, (unsigned long long)c[i].want);
    }
}

/* The router's backward working set per (token, expert): Megatron-Core's sigmoid router keeps the fp32 gradient of
 * the sigmoid's output over every expert (core_v0.16.0 moe_utils.py topk_routing_with_score_function: the
 * torch.gather of the top-k scores backpropagates into a [tok, experts] tensor) beside d(logits), as the softmax
 * router keeps its scores' gradient: 4 (logits or their fp32 gradient) + 4 (d(scores)) + 2 (d(logits) BF16) = 10 B.
 * This executor's sigmoid router (fusion fp8plan) goes from d(weights) through the normalisation and the sigmoid
 * row by row into the logits' buffer and keeps no d(scores): 6 B. ox_moe(128) with a vocabulary of 100, one
 * micro-batch of 512 tokens; the MoE layer's working set is the peak (test_oracle_moe.c
 * test_zero3_gathers_the_larger_kind works it out: 3,846,144 B, the router's part 512 x (8 x 10 + 2 x 4) = 45,056;
 * the dense layer's at FFN 128 is 917,504; the loss's 512 x 100 x 6 = 307,200, under this executor's LM-head
 * backward with dX and d(residual) 2 x 512 x 256 x 2 = 524,288 and its MoE buffers 512 x 8 x 4 + 1,024 rows x 256
 * x 2 = 540,672 beside it: 1,372,160). So 3,846,144 under Transformer Engine's fusion with either router and under
 * fp8plan's with the softmax one; fp8plan's sigmoid router 512 x 8 x 4 = 16,384 less: 3,829,760. */
static void test_router_dscores_by_stack(void)
{
    static const struct {
        KernelFusion fusion;
        RouterType router;
        uint64_t transient;
    } rows[] = {{FUSE_TE, ROUTER_SOFTMAX, 3846144},
                {FUSE_TE, ROUTER_SIGMOID, 3846144},
                {FUSE_FP8PLAN, ROUTER_SOFTMAX, 3846144},
                {FUSE_FP8PLAN, ROUTER_SIGMOID, 3829760}};
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ModelSpec m = ox_moe(128);
        m.router = rows[i].router, m.vocab = 100;
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.fusion = rows[i].fusion;
        Plan p;
        if (!build(&in, &p)) return;
        CHECKF(p.mem[MT_TRANSIENT].bytes == rows[i].transient, "row %zu: transient %llu, by hand %llu", i,
               (unsigned long long)p.mem[MT_TRANSIENT].bytes, (unsigned long long)rows[i].transient);
    }
}

/* The routed part's saved routing data by stack (act_moe). ox_moe (one MoE layer: 512 tokens, top-2, 1,024 rows,
 * 8 experts of FFN 128, hidden 256, a shared expert holding norm 2's output, so no router input of its own), BF16,
 * one micro-batch a GPU. Megatron-Core (fusion te) keeps the probabilities 512 x 8 x 4 = 16,384, top-k ids and
 * weights 512 x 2 x 8 = 8,192, the dispatched inputs 1,024 x 256 x 2 = 524,288, FC1's output 1,024 x 256 x 2 =
 * 524,288 and FC2's input 1,024 x 128 x 2 = 262,144 (1,335,296), each row's fp32 routing weight 1,024 x 4 = 4,096
 * and what its permutation saves (plan_moe_act.c routed_act). Unfused (PyTorch index ops): the int64
 * sorted_indices 512 x 2 x 8 = 8,192 and masked_select's fp32 probabilities and bool mask [8, 512], 8 x 512 x 5 =
 * 20,480: 1,335,296 + 4,096 + 28,672 = 1,368,064. Fused (Transformer Engine): the int32 row_id_map [512, 2 x 8 + 1]
 * 512 x 17 x 4 = 34,816 and, with 8 local experts, the two chunk sorts' int32 maps 1,024 x 8 = 8,192: 1,335,296 +
 * 4,096 + 43,008 = 1,382,400. At ep 8 (dp 8) one local expert: no chunk sort, 1,335,296 + 4,096 + 34,816 =
 * 1,374,208. The compile and eager stacks (torchtitan's, not read) keep the earlier count, two int32 maps a row
 * beside the weight, 1,024 x 12 = 12,288: 1,347,584. This executor (fusion fp8plan, exec/model/model_moe.c model_moe_saved) combines with the [tok, k]
 * weights and keeps per (token, slot) an expert id, a weight and a row map, 512 x 2 x 12 = 12,288, and 8 int32
 * counts, 32, no top-k pair or row weight besides: 1,339,424 (issue 42: 480 B a layer under the plan at 32 tokens,
 * 8 experts, top-2; now equal). With the experts on other ranks (ep 2, dp 2) it keeps their outputs at the token
 * copies for the weights' gradient, 1,024 x 256 x 2 = 524,288 more: 1,863,712. At ep 1 x etp 2 (dp 2) the experts
 * hold the ETP group's 2,048 rows at FFN 64: inputs 1,048,576, FC1's output 2,048 x 128 x 2 = 524,288, FC2's
 * input 2,048 x 64 x 2 = 262,144, with the probabilities and top-k 1,859,584; Megatron-Core's row weights 2,048 x
 * 4 = 8,192, unfused + 8,192 + 20,480 (the permute runs on the rank's 512 tokens before the all-to-all):
 * 1,896,448; fused + 34,816 + 2,048 x 8 = 16,384 (the chunk sorts run on the gathered rows): 1,918,976; this
 * executor's routing data as at etp 1 and the kept outputs: 2,388,000.
 * FP8 experts (a delayed-scaling E4M3 recipe, per-tensor scales) at ep 1 x etp 2 as Transformer Engine's
 * grouped linears keep them after the ETP gather, and as this executor now holds them in its arena at the group's
 * rows (exec/model/model_moe.c model_moe_saved; tests/cli/mpi_ep.sh checks planned = held): the dispatched inputs'
 * transposed E4M3 copy 2,048 x 256 x 1 = 524,288 instead of 1,048,576, FC2's input 2,048 x 64 x 1 = 131,072 instead
 * of 262,144, FC1's output BF16 as before, and the router's input of its own, 512 x 256 x 2 = 262,144 (an FP8 FC1
 * saves no BF16 copy to share): 2,388,000 - 524,288 - 131,072 + 262,144 = 1,994,784. */
static void test_routing_data_by_stack(void)
{
    static const struct {
        KernelFusion fusion;
        int permute_fusion;
        uint32_t ep, etp, dp;
        int fp8;
        uint64_t want;
    } rows[] = {{FUSE_TE, 0, 1, 1, 1, 0, 1368064},      {FUSE_TE, 1, 1, 1, 1, 0, 1382400},
                {FUSE_TE, 1, 8, 1, 8, 0, 1374208},      {FUSE_COMPILE, 0, 1, 1, 1, 0, 1347584},
                {FUSE_COMPILE, 1, 1, 1, 1, 0, 1347584}, {FUSE_FP8PLAN, 0, 1, 1, 1, 0, 1339424},
                {FUSE_FP8PLAN, 1, 1, 1, 1, 0, 1339424}, {FUSE_FP8PLAN, 0, 2, 1, 2, 0, 1863712},
                {FUSE_TE, 0, 1, 2, 2, 0, 1896448},      {FUSE_TE, 1, 1, 2, 2, 0, 1918976},
                {FUSE_FP8PLAN, 0, 1, 2, 2, 0, 2388000}, {FUSE_FP8PLAN, 0, 1, 2, 2, 1, 1994784}};
    GpuSpec g = fx_gpu();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Recipe r = rows[i].fp8 ? fx_te_recipe("te", 0) : fx_bf16_recipe("bf16", 0);
        ModelSpec m = ox_moe(512);
        PlanInput in = fx_input(&m, &g, &r);
        in.fusion = rows[i].fusion, in.permute_fusion = rows[i].permute_fusion;
        in.ep = rows[i].ep, in.etp = rows[i].etp, in.dp = rows[i].dp, in.gbs = rows[i].dp;
        Plan p;
        if (!build(&in, &p)) return;
        CHECKF(p.mem[MT_ACT_MOE].bytes == rows[i].want, "row %zu: act_moe %llu, by hand %llu", i,
               (unsigned long long)p.mem[MT_ACT_MOE].bytes, (unsigned long long)rows[i].want);
    }
}

int main(void)
{
    RUN(test_block_scales_per_copy);
    RUN(test_expert_tile_scales);
    RUN(test_zero3_block_scales_expert_group);
    RUN(test_full_recompute_transient);
    RUN(test_cp_exchange_exposed);
    RUN(test_moe_amax_payload);
    RUN(test_term_metadata);
    RUN(test_ep_placement);
    RUN(test_dropout_masks);
    RUN(test_weight_copies_uncached);
    RUN(test_fp8_copies_each_way);
    RUN(test_fractional_rows_round_up);
    RUN(test_moe_buffers_own_rows_at_etp);
    RUN(test_router_dscores_by_stack);
    RUN(test_routing_data_by_stack);
    return test_summary();
}
