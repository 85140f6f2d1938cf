/* tests/unit/test_oracle_moe_terms.c — more of a mixture-of-experts / latent-
 * attention stage worked out by hand: block scales of both FP8 weight copies,
 * the full-recompute transient, the context-parallel exchange with no overlap,
 * expert placement, FP8 copies, MTP and DualPipe stages (latent attention and
 * q/k norms: test_oracle_mla_terms.c).
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

/* With dense first layers a middle stage can be the largest: 8 layers (the first 3 dense), 64 experts of FFN 512,
 * no shared expert, vocabulary 128, pp 4 (2 layers a stage), 8 micro-batches: stage 0 holds 2 dense layers,
 * stage 1 a dense and a MoE layer, stages 2 and 3 two MoE layers each (64 x (1024 x 256 + 256 x 512) = 25,165,824
 * expert weights a layer: 2 x 25.2M x 18 B = 906 MB of states on either). 1F1B keeps pp - s micro-batches in flight
 * on stage s: stage 2 two, stage 3 one, so stage 2 holds 2 more layer-micro-batches of activations (about 6 MB
 * each) than stage 3, whose extra LM head (128 x 256) and logits come to about 1.4 MB: stage 2 is reported.
 * Its routed-expert activations, per layer and micro-batch (512 tokens, 1024 rows, BF16):
 *   probabilities 512 x 64 x 4 = 131,072 + top-k 512 x 2 x 8 = 8,192 + the router input (no shared expert keeps
 *   the norm output) 512 x 256 x 2 = 262,144 + dispatched inputs 1024 x 256 x 2 = 524,288 + FC1 output
 *   1024 x 1024 x 2 = 2,097,152 + FC2 input 1024 x 512 x 2 = 1,048,576 + routing weight and maps 1024 x 12 =
 *   12,288: 4,083,712
 *   x (2 layers x 2 micro-batches) = 16,334,848 B (stage 3 would hold 8,167,424). */
static void test_last_middle_stage_reported(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 8, m.dense_layers = 3, m.experts = 64, m.expert_ffn = 512, m.shared_experts = 0, m.vocab = 128;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 4, in.gbs = 8;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.stage, 2);
    CHECK_EQ_U64(p.stage_layers, 2);
    CHECK_EQ_U64(p.params_expert_gpu, 2ull * 25165824);
    CHECK_EQ_U64(p.mem[MT_ACT_MOE].bytes, 16334848);
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
 * 144 B). */
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
}

/* Tensor parallelism without sequence parallelism on a model the MoE path plans (a dense GPT with one MTP depth:
 * support/oracle_fixtures.h's tiny GPT, hidden 8, 4 layers + the MTP layer), tp 2: per layer pass one all-reduce
 * pair for the attention and one for the FFN, forward and backward alike, each over the 2 TP ranks with the layer
 * output [4 tokens x 8] in BF16 = 64 B, of which an all-reduce over 2 sends 2 x 64 x 1/2 = 64 B. One micro-batch,
 * 5 layers (the MTP depth's included): 10 calls each way. */
static void test_tp_all_reduce_without_sp(void)
{
    ModelSpec m = ox_tiny(16, 4);
    m.mtp_layers = 1;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.tp = 2, in.sp = 0, in.gbs = 1;
    Plan p;
    if (!build(&in, &p)) return;
    const CollectiveId ids[2] = {CO_TP_AR_FWD, CO_TP_AR_BWD};
    for (int i = 0; i < 2; i++) {
        const Collective *c = &p.coll[ids[i]];
        CHECKF(c->ranks == 2 && c->payload_bytes == 64 && c->bus_bytes == 64 && c->calls == 10,
               "%s: %u ranks, payload %llu, bus %llu, %llu calls; expected 2, 64, 64, 10", c->name, (unsigned)c->ranks,
               (unsigned long long)c->payload_bytes, (unsigned long long)c->bus_bytes, (unsigned long long)c->calls);
    }
}

/* An MTP depth follows the model's last chunk, whose backward follows each forward at once: it holds one
 * micro-batch in every schedule. The tiny GPT (4 layers + 1 MTP depth, gbs 4) on pp 2, last stage: with vpp 1
 * that stage holds pp - stage = 2 - 1 = 1 micro-batch of its 2 layers, so its layer activations are 2 layer units;
 * with vpp 2 (chunks of 1 layer) it runs (2 - 1 - 1) x 2 + (2 - 1) x 2 = 2 warm-up forwards and 1 more: 3 units.
 * The MTP depth adds one unit to either, the layer's own activations (MT_ACT_LAYER_HP / 2 at vpp 1 without MTP),
 * not the 2 micro-batches that the last stage's 3 chunks touch, and its input once (h 8, 4 tokens): enorm's input
 * 4 x 8 x 2 = 64, the enorm and hnorm rstd 2 x 4 x 4 = 32, eh_proj's input 4 x 16 x 2 = 128: 224 B. Depth 2 adds
 * as much again: 4 and 5 layer units + 448 B.
 * Depth d at pp 1 (no bias, tied, vocabulary 16 unpadded): GEMM weights 4 layers x (QKV 24 x 8 + proj 8 x 8 + FC1
 * 16 x 8 + FC2 8 x 16 = 512) = 2,048 + d x (eh_proj 8 x 16 = 128 + a layer 512) = 2,048 / 2,688 / 3,328 for d 0 /
 * 1 / 2; other values 4 x 2 norms x 8 + embedding 16 x 8 + positions 4 x 8 + final norm 8 = 232 + d x (3 norms +
 * the layer's 2) x 8 = 232 / 272 / 312; the outputs (final norm input and output 2 x 4 x 8 x 2 = 128, its rstd
 * 4 x 4 = 16, the FP32 logits 4 x 16 x 4 = 256: 400 B) once per depth more: 400 / 800 / 1,200. */
static void test_mtp_one_micro_batch_interleaved(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 2, in.gbs = 4, in.stage_view = 2;
    Plan p;
    uint64_t hp[2][3]; /* [vpp 1, 2][MTP depth 0, 1, 2] */
    for (int v = 0; v < 2; v++)
        for (int d = 0; d < 3; d++) {
            in.vpp = 1 + (uint32_t)v, m.mtp_layers = (uint32_t)d;
            if (!build(&in, &p)) return;
            CHECK_EQ_U64(p.stage, 1);
            hp[v][d] = p.mem[MT_ACT_LAYER_HP].bytes;
        }
    const uint64_t layer = hp[0][0] / 2;
    CHECK(layer > 0 && hp[0][0] == 2 * layer);
    CHECK_EQ_U64(hp[1][0], 3 * layer);
    CHECK_EQ_U64(hp[0][1], 3 * layer + 224);
    CHECK_EQ_U64(hp[1][1], 4 * layer + 224);
    CHECK_EQ_U64(hp[0][2], 4 * layer + 448);
    CHECK_EQ_U64(hp[1][2], 5 * layer + 448);
    in.pp = 1, in.vpp = 1, in.gbs = 1, in.stage_view = 0;
    for (uint32_t d = 0; d < 3; d++) {
        m.mtp_layers = d;
        if (!build(&in, &p)) return;
        CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].elements, 2048 + 640 * d);
        CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].elements, 232 + 40 * d);
        CHECK_EQ_U64(p.mem[MT_ACT_OUTPUT].bytes, 400 * (1 + d));
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
        CHECKF(x->cat == want, "%s: category %d, expected %d", x->name, x->cat, want);
        CHECKF(x->persistent == !(act || i == MT_FRAGMENTATION), "%s: persistent %d", x->name, x->persistent);
        int mixed = i == MT_ACT_LAYER_HP || i == MT_ACT_ATTN || i == MT_ACT_OUTPUT || i == MT_TRANSIENT ||
                    i == MT_ACT_MOE || (!state && !copy && !scale && !act);
        if (mixed)
            CHECKF(x->elements == 0 && x->dtype == DT_NONE, "%s: %llu elements of dtype %d", x->name,
                   (unsigned long long)x->elements, (int)x->dtype);
        if (i == MT_ACT_OUTPUT || i == MT_ACT_MOE || i == MT_TRANSIENT || i == MT_ACT_LAYER_HP)
            CHECKF(x->bytes > 0, "%s: no bytes", x->name);
        /* each GPU's own activations and overheads: not shards of something larger (the report's shards column) */
        if (act || (!state && !copy && !scale))
            CHECKF(x->shards == 1, "%s: %u shards, expected 1", x->name, (unsigned)x->shards);
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
        CHECKF(p.coll[c].ranks == 2 && !p.coll[c].inter_node, "%s: %u ranks, inter-node %d", p.coll[c].name,
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

/* DualPipe at pp 2 feeds half the micro-batches from each end: rank 0 holds min(pp, m / 2) micro-batches of its
 * first stage in flight, so m = 4 (m / 2 = 2) and m = 6 (pp = 2) both keep 2 of stage 0 and 1 of stage 1, and
 * with dropout 2 embedding-dropout masks of 512 tokens x 256 B = 131,072 B each: the same mask bytes for both.
 * With each layer's 2 hidden-dropout masks (after attention, after the FFN): stage 0's dense layer x 2
 * micro-batches x 2 + stage 1's MoE layer x 1 x 2 = 6 masks, + 2 embedding masks = 8 x 131,072 = 1,048,576 B.
 * (No embedding mask at m = 4 would be 786,432.) */
static void test_dualpipe_embedding_masks(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 2, in.dualpipe = 1, in.dropout = 1;
    Plan p4, p6;
    in.gbs = 4;
    if (!build(&in, &p4)) return;
    in.gbs = 6;
    if (!build(&in, &p6)) return;
    CHECK_EQ_U64(p4.mem[MT_ACT_MASK].bytes, 1048576);
    CHECK_EQ_U64(p6.mem[MT_ACT_MASK].bytes, 1048576);
}

/* With several micro-batches in flight (PP) under per-tensor FP8, every in-flight layer keeps the scale_inv of its
 * saved FP8 inputs (4 B x LIN_COUNT = 4 linears: 16 B a layer-micro-batch, as plan_mem.c counts for dense models)
 * and a MoE layer also each local expert's FC1 and FC2 input scale_inv (2 x 4 B), plus at ep 1 under this
 * executor (--stack fp8plan) FC2's input scale, which its backward's recomputed expert outputs are cast with
 * (4 B more). ox_moe with 4 layers (the first dense, FFN 512), te-fp8, pp 2, 4 micro-batches: stage 0 holds the
 * dense layer and a MoE layer with min(pp - 0, 4) = 2 micro-batches in flight: 4 layer units, 2 of them MoE.
 * Nothing else of stage 0's transient moves with pp (its backward working set is the same layers'; the loss is
 * the last stage's, and at pp 1 the 512 x 1000 x 6 = 3,072,000 B loss is below the MoE layer's working set), so
 * stage 0's transient at pp 2 less pp 1's is
 *   TE's stack, ep 1:  4 x 16 + 2 x 8 experts x 2 x 4 = 64 + 128 = 192 B
 *   fp8plan, ep 1:     4 x 16 + 2 x 8 x 3 x 4        = 64 + 192 = 256 B, less pp 1's own 3 MoE layers x 8
 *                      experts x 4 B = 96 B of FC2 input scales (test_one_rank_fp8_recompute_scale): 160 B
 *   fp8plan, ep 2 (dp 2; 4 local experts, no recompute there): 4 x 16 + 2 x 4 x 2 x 4 = 64 + 64 = 128 B
 * and the BF16 recipe keeps none: 0 B. */
static void test_pp_fp8_saved_scales(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 4;
    GpuSpec g = fx_gpu();
    Recipe te = fx_te_recipe("te", 0), bf = fx_bf16_recipe("bf16", 0);
    static const struct {
        int fp8, fusion;
        uint32_t ep;
        uint64_t extra;
    } rows[] = {{1, FUSE_TE, 1, 192}, {1, FUSE_FP8PLAN, 1, 160}, {1, FUSE_FP8PLAN, 2, 128}, {0, FUSE_FP8PLAN, 1, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        PlanInput in = fx_input(&m, &g, rows[i].fp8 ? &te : &bf);
        in.fusion = (KernelFusion)rows[i].fusion, in.ep = rows[i].ep, in.dp = rows[i].ep, in.gbs = 4 * rows[i].ep;
        Plan p;
        if (!build(&in, &p)) return;
        uint64_t t1 = p.mem[MT_TRANSIENT].bytes;
        in.pp = 2, in.stage_view = 1;
        if (!build(&in, &p)) return;
        CHECK_EQ_U64(p.stage, 0);
        CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes - t1, rows[i].extra);
    }
}

/* One rank (pp 1) under delayed scaling: the update after the forward moves the scale FC2's input was cast
 * with before the backward recomputes the experts' outputs (this executor, --stack fp8plan, ep 1), so each
 * local expert's forward scale is kept, 4 B per expert and MoE layer; the bank's scale_inv stay the forward's
 * (only a cast writes them), so nothing else. ox_moe with 4 layers (the first dense), pp 1: 3 MoE layers x 8
 * experts x 4 B = 96 B beyond the same plan under current scaling (whose scale nothing moves before the
 * backward). TE's stack recomputes nothing (0 B); at ep 2 (dp 2) the token side keeps the outputs (0 B). */
static void test_one_rank_fp8_recompute_scale(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 4;
    GpuSpec g = fx_gpu();
    Recipe dl = fx_te_recipe("te", 0), cur = fx_te_recipe("te-cur", 0);
    cur.scaling = SCALING_CURRENT;
    static const struct {
        int fusion;
        uint32_t ep;
        uint64_t extra;
    } rows[] = {{FUSE_FP8PLAN, 1, 96}, {FUSE_TE, 1, 0}, {FUSE_FP8PLAN, 2, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        PlanInput in = fx_input(&m, &g, &cur);
        in.fusion = (KernelFusion)rows[i].fusion, in.ep = rows[i].ep, in.dp = rows[i].ep, in.gbs = 4 * rows[i].ep;
        Plan p;
        if (!build(&in, &p)) return;
        uint64_t tc = p.mem[MT_TRANSIENT].bytes;
        in.recipe = &dl;
        if (!build(&in, &p)) return;
        CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes - tc, rows[i].extra);
    }
}

int main(void)
{
    RUN(test_block_scales_per_copy);
    RUN(test_expert_tile_scales);
    RUN(test_zero3_block_scales_expert_group);
    RUN(test_full_recompute_transient);
    RUN(test_cp_exchange_exposed);
    RUN(test_last_middle_stage_reported);
    RUN(test_moe_amax_payload);
    RUN(test_tp_all_reduce_without_sp);
    RUN(test_mtp_one_micro_batch_interleaved);
    RUN(test_term_metadata);
    RUN(test_ep_placement);
    RUN(test_dropout_masks);
    RUN(test_weight_copies_uncached);
    RUN(test_fp8_copies_each_way);
    RUN(test_fractional_rows_round_up);
    RUN(test_dualpipe_embedding_masks);
    RUN(test_pp_fp8_saved_scales);
    RUN(test_one_rank_fp8_recompute_scale);
    return test_summary();
}
