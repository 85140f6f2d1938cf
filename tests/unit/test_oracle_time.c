/* tests/unit/test_oracle_time.c — the step-time model worked by hand.
 *
 * An independent oracle: every expected value below is arithmetic on the
 * inputs, written out in the comment beside it, never a call into planner/.
 * When the time model changes (shape-aware GEMMs, alpha-beta communication,
 * overlap per stack), recompute the named values by hand for the new model;
 * do not paste what the code prints.
 *
 * The case: a tiny GPT on a made-up GPU with round rates, tp 2 (sequence
 * parallel), pp 2, vpp 2, dp 1, 4 micro-batches of 1 sequence of 4 tokens.
 *
 *   model   4 layers, hidden h 8, 2 heads (2 kv heads) of 4, FFN 16 (GeLU), vocab 16,
 *           seq 4, RMSNorm, learned positions (4 x 8), tied embeddings, no biases
 *   GPU     BF16 1e9 FLOP/s, FP8 2e9, HBM 1e9 B/s, 1e9 B/s in a node of 2 GPUs, 1e8 B/s
 *           between nodes
 *   knobs   eff: GEMM BF16 0.5, GEMM FP8 0.5, attention 0.25, HBM 0.5, network 0.5;
 *           latency 1 us in a node, 4 us across; vocab_pad 1
 *
 * Derived sizes (per TP rank): q = kv = 8/2 = 4 columns, FFN 16/2 = 8, 1 head;
 * linear weights per layer: QKV (4 + 2*4) x 8 = 96, proj 8 x 4 = 32, FC1 8 x 8 = 64,
 * FC2 8 x 8 = 64: E = 256. Vocabulary 16 (a multiple of tp) -> 8 rows per rank.
 * Layers per PP rank: 4 / 2 = 2 (two chunks of 1 under vpp 2). Tokens per
 * micro-batch tok = 4; SP shard 4 / 2 = 2 tokens. */
#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* relative tolerance: the expected values are exact decimals; the model's
 * doubles differ from them only by rounding (a few ulp per operation) */
#define EXACT 1e-12

static GpuSpec round_gpu(void)
{
    GpuSpec g = {.name = "round",
                 .sm = 90,
                 .hbm_bytes = 1ull << 40,
                 .hbm_bw = 1e9,
                 .flops_bf16 = 1e9,
                 .flops_fp8 = 2e9,
                 .flops_fp32 = 1e8,
                 .intra_bw = 1e9,
                 .inter_bw = 1e8,
                 .gpus_per_node = 2};
    return g;
}

static PlanInput layout(const ModelSpec *m, const GpuSpec *g, const Recipe *r)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r;
    in.tp = 2, in.pp = 2, in.vpp = 2, in.dp = 1, in.cp = 1, in.mbs = 1, in.gbs = 4, in.seq = 4;
    in.sp = 1, in.vocab_pad = 1, in.attn = ATTN_FLASH, in.dropout = 0;
    in.eff_gemm_bf16 = 0.5, in.eff_gemm_fp8 = 0.5, in.eff_attn = 0.25, in.eff_hbm = 0.5, in.eff_net = 0.5;
    in.latency_intra_s = 1e-6, in.latency_inter_s = 4e-6;
    return in;
}

/* ---- the hand-derived values (BF16) ------------------------------------------------------------------
 * Rates: GEMM 1e9 x 0.5 = 5e8 FLOP/s; attention 1e9 x 0.25 = 2.5e8; HBM 1e9 x 0.5 = 5e8 B/s;
 * network 5e8 B/s in a node, 5e7 B/s across.
 *
 * Per layer, one micro-batch:
 *   GEMM forward   2 x tok x E = 2 x 4 x 256 = 2048 FLOP -> 2048 / 5e8 = 4.096e-6 s
 *   GEMM backward  twice the forward (dgrad + wgrad): 8.192e-6 s
 *   attention fwd  4 x tok x seq x q / 2 (causal flash) = 4 x 4 x 4 x 4 / 2 = 128 FLOP -> 5.12e-7 s
 *   attention bwd  2.5 x forward (flash recomputes P) = 1.28e-6 s
 *   memory fwd     (SP: 2 tokens x 8 = 16 elements per norm/residual tensor)
 *                  norms 2 x 16 x 4 B = 128, residual adds 2 x 16 x 6 B = 192, GeLU reads
 *                  4 x 8 x 2 and writes 4 x 8 x 2 = 128: 448 B -> 448 / 5e8 = 8.96e-7 s
 *   memory bwd     2 x 448 = 896 B, + FP32 main-gradient accumulation read+write
 *                  256 x 2 x 4 = 2048 B: 2944 B -> 5.888e-6 s
 * Stage 0 adds the embedding gather (forward) and scatter-add (backward): 4 x 8 x 4 = 128 B
 *   -> 2.56e-7 s each.
 * The last stage adds the LM head: 2 x 4 x 8 x 8 = 512 FLOP -> 1.024e-6 s forward, 2.048e-6 s
 *   backward, and the loss 4 x 8 x 16 / 2 = 256 B -> 5.12e-7 s in each direction.
 * Two layers per PP rank:
 *   stage 0 fwd 2 x (4.096 + 0.512 + 0.896)e-6 + 0.256e-6 = 11.264e-6
 *           bwd 2 x (8.192 + 1.28 + 5.888)e-6 + 0.256e-6 = 30.976e-6     total 42.24e-6
 *   last    fwd 11.008e-6 + 1.024e-6 + 0.512e-6 = 12.544e-6
 *           bwd 30.72e-6 + 2.048e-6 + 0.512e-6 = 33.28e-6              total 45.824e-6 (slower) */
static const double STAGE_LAST_S = 45.824e-6;
/* Breakdown of the slower stage per micro-batch: GEMMs 2 x (4.096 + 8.192)e-6 + 3 x 1.024e-6 =
 * 27.648e-6; attention 2 x 0.512e-6 x (1 + 2.5) = 3.584e-6; memory-bound the rest,
 * 45.824 - 27.648 - 3.584 = 14.592e-6. Times m = 4 micro-batches: */
static const double GEMM_S = 4 * 27.648e-6;
static const double ATTN_S = 4 * 3.584e-6;
static const double NONGEMM_S = 4 * 14.592e-6;
/* TP with SP, per step (2 layers x 4 micro-batches = 8 layer passes), payload 4 x 8 x 2 B = 64 B,
 * bus (n-1)/n = 32 B, within a node (5e8 B/s, 1 us):
 *   all-gather fwd      2 per pass = 16 calls: 512 B / 5e8 + 16 us = 17.024e-6
 *   reduce-scatter fwd  16 calls: 17.024e-6
 *   all-gather bwd      4 per pass (2 output gradients + 2 input re-gathers) = 32 calls:
 *                       1024 B / 5e8 + 32 us = 34.048e-6
 *   reduce-scatter bwd  16 calls: 17.024e-6                               TP total 85.12e-6 */
static const double TP_S = 85.12e-6;
/* PP: the stage sends its 1/tp slice, 4 x (8/2) x 2 B = 32 B, m x (2 vpp - 1) = 4 x 3 = 12 times;
 * the pair spans nodes (4 GPUs > 2 per node): 384 B / 5e7 + 12 x 4 us = 55.68e-6 */
static const uint64_t PP_CALLS = 12;
static const double PP_S = 55.68e-6;
/* One micro-batch time: slower stage + (TP + PP) / m = 45.824e-6 + (85.12 + 55.68)e-6 / 4 = 81.024e-6 */
static const double MICROBATCH_S = 81.024e-6;
/* Bubble: (pp - 1) / vpp = 1/2 micro-batch time = 40.512e-6 */
static const double BUBBLE_S = 40.512e-6;
/* Optimizer over the memory-reported stage (stage 0: 2 x 256 = 512 linear + 2 x 2 x 8 norm +
 * 16 x 8 / 2 = 64 embedding + 4 x 8 = 32 position = 640 parameters):
 *   read the FP32 gradient 640 x 4 = 2560 B, read + write master, m, v 2 x 640 x 12 = 15360 B,
 *   write the BF16 weight 640 x 2 = 1280 B: 19200 B / 5e8 = 38.4e-6 s */
static const double OPTIMIZER_BYTES = 19200;
static const double OPTIMIZER_S = 38.4e-6;
/* Tied embedding gradient all-reduce between the first and last stage: the rank's 8 x 8 = 64
 * embedding elements in FP32 = 256 B, all-reduce bus 2 x 256 x 1/2 = 256 B,
 * across nodes: 256 / 5e7 + 4 us = 9.12e-6 */
static const double EMB_S = 9.12e-6;
/* Step: (m + (pp-1)/vpp) x micro-batch + optimizer + embedding sync
 *     = 4.5 x 81.024e-6 + 38.4e-6 + 9.12e-6 = 412.128e-6 */
static const double STEP_S = 412.128e-6;
/* Model FLOPs per token, 6 x (whole linear weights + LM head) + attention 12 x L x q_dim x seq:
 * linear per layer (QKV 24 x 8 + proj 8 x 8 + FC1 16 x 8 + FC2 8 x 16) = 512, x 4 layers = 2048,
 * LM head 8 x 16 = 128: 6 x 2176 = 13056; attention 12 x 4 x 8 x 4 = 1536; total 14592.
 * Per step: x 4 sequences x 4 tokens = 233472 FLOP. */
static const double MODEL_FLOPS_STEP = 233472;

static void test_bf16_step_time_by_hand(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    const TimeBreakdown *t = &p.time;
    CHECK_EQ_U64(p.microbatches, 4);
    CHECK_EQ_U64(p.stage, 0); /* memory: stage 0 holds 5 chunks in flight, the last 3 */
    CHECK_REL(t->gemm_s, GEMM_S, EXACT);
    CHECK_REL(t->attn_s, ATTN_S, EXACT);
    CHECK_REL(t->nongemm_s, NONGEMM_S, EXACT);
    CHECK_REL(t->tp_comm_s, TP_S, EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].calls, 32);
    CHECK_EQ_U64(p.coll[CO_PP_P2P].calls, PP_CALLS);
    CHECK_EQ_U64(p.coll[CO_PP_P2P].step_bytes, 384);
    CHECK(p.coll[CO_PP_P2P].inter_node && !p.coll[CO_TP_AG_FWD].inter_node);
    CHECK_REL(t->pp_comm_s, PP_S, EXACT);
    /* bytes per step by group: TP 16 x 32 + 16 x 32 + 32 x 32 + 16 x 32 = 2560; PP sends 384 plus the
     * embedding all-reduce's 256 (counted with the pipeline); no DP or CP traffic */
    CHECK_EQ_U64(p.tp_comm_bytes, 2560);
    CHECK_EQ_U64(p.pp_comm_bytes, 384 + 256);
    CHECK_EQ_U64(p.dp_comm_bytes, 0);
    CHECK_EQ_U64(p.cp_comm_bytes, 0);
    CHECK_EQ_U64(p.weight_comm_bytes, 0);
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].step_bytes, 256);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 0); /* BF16: no amax to reduce */
    CHECK(t->cp_comm_s == 0.0);
    CHECK_REL(t->microbatch_s, MICROBATCH_S, EXACT);
    CHECK_REL(t->bubble_s, BUBBLE_S, EXACT);
    CHECK(t->dp_comm_s == 0.0); /* dp 1: no DP collective */
    CHECK_REL(t->optimizer_s, OPTIMIZER_S, EXACT);
    CHECK_REL(t->optimizer_s * 5e8, OPTIMIZER_BYTES, EXACT);
    CHECK(t->weight_cast_s == 0.0); /* no FP8 copies */
    CHECK_REL(t->other_s, EMB_S, EXACT);
    CHECK_REL(t->step_s, STEP_S, EXACT);
    /* the slower stage is the last one: its pass is what a micro-batch costs */
    CHECK_REL(t->microbatch_s - (TP_S + PP_S) / 4, STAGE_LAST_S, 1e-9);
    /* throughput and MFU: 16 tokens per step, 4 GPUs, BF16 peak 1e9, FP8 peak 2e9 */
    CHECK_REL(p.model_flops_step, MODEL_FLOPS_STEP, EXACT);
    CHECK_REL(p.tokens_per_s, 16 / STEP_S, EXACT);
    CHECK_REL(p.samples_per_s, 4 / STEP_S, EXACT);
    CHECK_REL(p.tflops_per_gpu, MODEL_FLOPS_STEP / STEP_S / 4 / 1e12, EXACT);
    CHECK_REL(p.mfu_bf16_pct, 100 * MODEL_FLOPS_STEP / STEP_S / 4 / 1e9, EXACT);
    CHECK_REL(p.mfu_fp8_pct, 100 * MODEL_FLOPS_STEP / STEP_S / 4 / 2e9, EXACT);
}

/* The same layout without virtual stages: the bubble is a whole micro-batch and the PP pair sends
 * m x (2 x 1 - 1) = 4 times: 128 B / 5e7 + 4 x 4 us = 18.56e-6; micro-batch
 * 45.824e-6 + (85.12 + 18.56)e-6 / 4 = 71.744e-6; step 5 x 71.744e-6 + 38.4e-6 + 9.12e-6 = 406.24e-6.
 * (Stage 0 now holds 2 micro-batches x 2 layers = 4 layer units; still the heavier stage.) */
static void test_no_interleaving_whole_bubble(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    in.vpp = 1;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_PP_P2P].calls, 4);
    CHECK_REL(p.time.pp_comm_s, 18.56e-6, EXACT);
    CHECK_REL(p.time.microbatch_s, 71.744e-6, EXACT);
    CHECK_REL(p.time.bubble_s, 71.744e-6, EXACT);
    CHECK_REL(p.time.step_s, 406.24e-6, EXACT);
}

/* FP8 GEMMs (TE-style delayed scaling, E4M3 forward, E5M2 backward, FP8 copies of each linear
 * weight row-wise and transposed): the linear GEMMs run at 2e9 x 0.5 = 1e9 FLOP/s, the LM head
 * stays BF16. Slower stage (last) GEMMs per micro-batch: 2 x (2048 + 4096) / 1e9 + 3 x 1.024e-6
 * = 15.36e-6, x 4 = 61.44e-6.
 * Weight casts once per step: read the BF16 weight (2 B) and write both copies (2 x 1 B) for the
 * 512 linear weights of the reported stage: 512 x 4 / 5e8 = 4.096e-6.
 * amax all-reduce over tp x cp x dp = 2 ranks, per micro-batch forward and backward (8 calls),
 * mean payload 4 linears x 2 layers x 12 B / 2 = 48 B, bus 2 x 48 / 2 = 48 B, in a node:
 * 8 x 48 / 5e8 + 8 x 1 us = 8.768e-6. */
static void test_fp8_gemm_rate_casts_and_amax(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    r.fp8_row = r.fp8_col = DT_E4M3;
    r.gemm_fwd = DT_E4M3, r.gemm_bwd = DT_E5M2;
    r.scaling = SCALING_DELAYED, r.amax_history = 16, r.amax_reduce = AMAX_ALL;
    r.act_gran = r.weight_gran = GRAN_TENSOR;
    r.comm_tp_ag = DT_BF16, r.saved_input = DT_BF16, r.min_sm = 89;
    PlanInput in = layout(&m, &g, &r);
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.gemm_s, 61.44e-6, EXACT);
    CHECK_REL(p.time.weight_cast_s, 4.096e-6, EXACT);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 2);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 8);
    CHECK_REL(p.coll[CO_AMAX_AR].time_s, 8.768e-6, EXACT);
    CHECK_REL(p.time.other_s, 8.768e-6 + EMB_S, EXACT);
    CHECK_REL(p.time.attn_s, ATTN_S, EXACT); /* attention stays BF16 */
}

/* Recompute. Full: each layer's forward runs again in backward, so per micro-batch the slower (last)
 * stage's GEMMs are 2 x (4.096 + 8.192 + 4.096)e-6 + 3 x 1.024e-6 = 35.84e-6 (x 4 = 143.36e-6), its
 * attention 2 x 0.512e-6 x (1 + 2.5 + 1) = 4.608e-6 (x 4 = 18.432e-6), and the forward TP
 * collectives run twice: 2 x 2 x 8 = 32 all-gathers. Selective: only the attention core again (the
 * same 18.432e-6), GEMMs as without recompute (110.592e-6).
 * Without SP the TP collectives are all-reduces, 2 forward and 2 backward per layer pass: 16 calls
 * each, payload 64 B, bus 2 x 64 x 1/2 = 64 B: 1024 B each way, 1024 / 5e8 + 16 us = 18.048e-6. */
static void test_recompute_and_no_sp(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    in.recompute = RECOMPUTE_FULL;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.gemm_s, 143.36e-6, EXACT);
    CHECK_REL(p.time.attn_s, 18.432e-6, EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 32);
    CHECK_EQ_U64(p.coll[CO_TP_RS_FWD].calls, 32);
    CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].calls, 32);
    in.recompute = RECOMPUTE_SELECTIVE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.gemm_s, GEMM_S, EXACT);
    CHECK_REL(p.time.attn_s, 18.432e-6, EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 16);
    in.recompute = RECOMPUTE_NONE, in.sp = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_TP_AR_FWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AR_BWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AR_FWD].bus_bytes, 64);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 0);
    CHECK_EQ_U64(p.tp_comm_bytes, 2048);
    CHECK_REL(p.time.tp_comm_s, 2 * 18.048e-6, EXACT);
}

/* One GPU: no group to reduce over, so no collective at all, not even the FP8 recipe's amax
 * all-reduce (a 1-rank collective is never called, so it costs no latency either). */
static void test_one_gpu_has_no_collectives(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    r.fp8_row = r.fp8_col = DT_E4M3;
    r.gemm_fwd = DT_E4M3, r.gemm_bwd = DT_E5M2;
    r.scaling = SCALING_DELAYED, r.amax_history = 16, r.amax_reduce = AMAX_ALL, r.min_sm = 89;
    PlanInput in = layout(&m, &g, &r);
    in.tp = 1, in.pp = 1, in.vpp = 1;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    for (int c = 0; c < CO_COUNT_; c++) {
        CHECKF(p.coll[c].calls == 0 && p.coll[c].ranks == 0 && p.coll[c].time_s == 0.0, "collective %s is used",
               p.coll[c].name);
    }
    CHECK(p.time.other_s == 0.0 && p.time.tp_comm_s == 0.0 && p.time.pp_comm_s == 0.0 && p.time.bubble_s == 0.0);
}

int main(void)
{
    RUN(test_bf16_step_time_by_hand);
    RUN(test_no_interleaving_whole_bubble);
    RUN(test_fp8_gemm_rate_casts_and_amax);
    RUN(test_recompute_and_no_sp);
    RUN(test_one_gpu_has_no_collectives);
    return test_summary();
}
