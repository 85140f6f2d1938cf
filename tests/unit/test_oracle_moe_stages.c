/* tests/unit/test_oracle_moe_stages.c — a mixture-of-experts model's stages worked
 * out by hand: which stage the plan reports, the TP all-reduces without SP, MTP
 * depths (in flight over interleaved stages, depth 2's weights and outputs),
 * DualPipe's embedding masks and the per-tensor scales kept with micro-batches in
 * flight (more terms: test_oracle_moe_terms.c).
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

/* With dense first layers a middle stage can be the largest: 8 layers (the first 3 dense), 64 experts of FFN 512,
 * no shared expert, vocabulary 128, pp 4 (2 layers a stage), 8 micro-batches: stage 0 holds 2 dense layers,
 * stage 1 a dense and a MoE layer, stages 2 and 3 two MoE layers each (64 x (1024 x 256 + 256 x 512) = 25,165,824
 * expert weights a layer: 2 x 25.2M x 18 B = 906 MB of states on either). 1F1B keeps pp - s micro-batches in flight
 * on stage s: stage 2 two, stage 3 one, so stage 2 holds 2 more layer-micro-batches of activations (about 6 MB
 * each) than stage 3, whose extra LM head (128 x 256) and logits come to about 1.4 MB: stage 2 is reported.
 * Its routed-expert activations, per layer and micro-batch (512 tokens, 1024 rows, BF16):
 *   probabilities 512 x 64 x 4 = 131,072 + top-k 512 x 2 x 8 = 8,192 + the router input (no shared expert keeps
 *   the norm output) 512 x 256 x 2 = 262,144 + dispatched inputs 1024 x 256 x 2 = 524,288 + FC1 output
 *   1024 x 1024 x 2 = 2,097,152 + FC2 input 1024 x 512 x 2 = 1,048,576 + the rows' fp32 weights 1024 x 4 = 4,096
 *   + the unfused permute's int64 indices 512 x 2 x 8 = 8,192 and masked_select's probabilities and mask 512 x 64
 *   x 5 = 163,840 (plan_moe_act.c routed_act): 4,247,552
 *   x (2 layers x 2 micro-batches) = 16,990,208 B (stage 3 would hold 8,495,104). */
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
    CHECK_EQ_U64(p.mem[MT_ACT_MOE].bytes, 16990208);
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
               "%s: %u ranks, payload %llu, bus %llu, %llu calls; expected 2, 64, 64, 10", coll_name(ids[i]),
               (unsigned)c->ranks, (unsigned long long)c->payload_bytes, (unsigned long long)c->bus_bytes,
               (unsigned long long)c->calls);
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
    RUN(test_last_middle_stage_reported);
    RUN(test_tp_all_reduce_without_sp);
    RUN(test_mtp_one_micro_batch_interleaved);
    RUN(test_dualpipe_embedding_masks);
    RUN(test_pp_fp8_saved_scales);
    RUN(test_one_rank_fp8_recompute_scale);
    return test_summary();
}
