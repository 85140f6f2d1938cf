/* tests/unit/test_oracle_time.c — the step-time model worked by hand.
 *
 * An independent oracle: every expected value below is arithmetic on the
 * inputs and on the model's published constants (planner/arch.c: the Hopper
 * GEMM tile 128 x 256 with a fixed cost of k0 = 128 K elements (BF16) or 256
 * (FP8) per tile, FlashAttention-2's efficiency curve s_half 400, backward
 * 0.87 with s_half 880; NCCL's ring latencies: LL base 3.6 us, Simple 8.4 us,
 * per NVLink step 0.47 / 3.4 us, per network step 2.7 / 9.6 us), written out in
 * the comment beside it, never a call into planner/. When the time model
 * changes, recompute the named values by hand for the new model; do not paste
 * what the code prints.
 *
 * The case: a tiny GPT on a made-up GPU with round rates, tp 2 (sequence
 * parallel), pp 2, vpp 2, dp 1, 4 micro-batches of 1 sequence of 4 tokens, the
 * Megatron-Core + TE kernel list with no launch floor and no stack overlap (the
 * column-parallel linears' own backward overlap stays: see TP_CALL).
 *
 *   model   4 layers, hidden h 8, 2 heads (2 kv heads) of 4, FFN 16 (GeLU), vocab 16,
 *           seq 4, RMSNorm, learned positions (4 x 8), tied embeddings, no biases
 *   GPU     SM 9.0 with an unknown SM count (one "SM" at the whole rate: no wave
 *           quantization), BF16 1e9 FLOP/s, FP8 2e9, HBM 1e9 B/s, NVLink 1e9 B/s in
 *           a node of 2 GPUs, 1e8 B/s between nodes
 *   knobs   eff: GEMM BF16 0.5, GEMM FP8 0.5, attention 0.25, HBM 0.5, network 0.5;
 *           vocab_pad 1
 *
 * Derived sizes (per TP rank): q = kv = 8/2 = 4 columns, FFN 16/2 = 8, 1 head;
 * linear weights per layer (out x in): QKV 12 x 8, proj 8 x 4, FC1 8 x 8, FC2 8 x 8:
 * E = 256. Vocabulary 16 (a multiple of tp) -> 8 rows per rank. Layers per PP
 * rank: 4 / 2 = 2 (two chunks of 1 under vpp 2). Tokens per micro-batch
 * tok = 4; SP shard 4 / 2 = 2 tokens. */
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
                 .gpus_per_node = 2,
                 .link = LINK_NVLINK};
    return g;
}

static PlanInput layout(const ModelSpec *m, const GpuSpec *g, const Recipe *r)
{
    PlanInput in;
    plan_input_defaults(&in); /* Megatron-Core + TE kernels, no launch floor, no TP/PP overlap */
    in.model = m, in.gpu = g, in.recipe = r;
    in.tp = 2, in.pp = 2, in.vpp = 2, in.dp = 1, in.cp = 1, in.mbs = 1, in.gbs = 4, in.seq = 4;
    in.sp = 1, in.vocab_pad = 1, in.attn = ATTN_FLASH, in.dropout = 0;
    in.eff_gemm_bf16 = 0.5, in.eff_gemm_fp8 = 0.5, in.eff_attn = 0.25, in.eff_hbm = 0.5, in.eff_net = 0.5;
    return in;
}

/* ---- the hand-derived values (BF16) ------------------------------------------------------------------
 * GEMMs. Every GEMM of this model fits one 128 x 256 output tile, on the one "SM": its time is the tile's
 * 2 x 128 x 256 x (K + k0) FLOPs at the saturated rate 1e9 x 0.5 x (1 + 128 / 2048) = 5.3125e8 FLOP/s
 * (the roofline and the launch floor are far below). U16 is that time per unit of K + k0. */
#define U16 (65536.0 / 5.3125e8)
/* Per layer: fprop [tok x out x in] K = 8, 4, 8, 8 -> (136 + 132 + 136 + 136) U16 = 540 U16;
 * dgrad [tok x in x out] K = 12, 8, 8, 8 -> 140 + 136 x 3 = 548; wgrad [out x in x tok] K = 4 x 4 -> 4 x 132 =
 * 528; backward 1076 U16. LM head (last stage, BF16): fprop K = 8 (136), dgrad K = 8 (136), wgrad K = 4 (132):
 * 404 U16. The last stage's GEMMs per micro-batch: 2 x (540 + 1076) + 404 = 3636 U16. */
static const double GEMM_S = 4 * 3636 * U16;
/* Attention (FlashAttention-2 curve, efficiency 0.25 overridden): the causal forward is
 * 2 x tok x seq x heads x head_dim = 2 x 4 x 4 x 1 x 4 = 128 FLOPs; with keys x = 4 its efficiency is
 * 0.25 x 4 / (4 + 400), so attn_f = 128 x 404 / (1e9 x 0.25 x 4) = 5.1712e-5 s; backward 2.5 x 128 FLOPs at
 * 0.25 x 0.87 x 4 / (4 + 880): attn_b = 320 x 884 / 0.87e9 = 3.2514943e-4 s (factor 2.5 x 884/404 / 0.87 =
 * 6.288 over the forward). Per step on the slower stage: 4 x 2 x (attn_f + attn_b). */
#define ATTN_F (128.0 * 404 / 1e9)
#define ATTN_B (320.0 * 884 / 0.87e9)
static const double ATTN_S = 8 * (ATTN_F + ATTN_B);
/* Memory-bound kernels (TE list, BF16, GeLU, no RoPE or dropout; H = 2 tokens x 8 = 16, F = 4 x 8 = 32):
 * forward norm 4H + bias-dropout-add 6H + norm 4H + GeLU 4F + bias-dropout-add 6H = 320 + 128 = 448 B;
 * backward GeLU 6F + norm2 6H + 6H + norm1 6H + 6H = 192 + 384 = 576 B; at 5e8 B/s. */
#define ELEM_F (448.0 / 5e8)
#define ELEM_B (576.0 / 5e8)
/* TP (SP) calls: 2 all-gathers + 2 reduce-scatters forward, 4 + 2 backward, each 64 B payload, 32 B per GPU,
 * 2 ranks in one node: NCCL LL wins, 3.6 + 0.47 us + 32 B / (5e8 / 3) = 4.262e-6 s (Simple: 11.864e-6).
 * The stack overlaps nothing, but the TE / Megatron column-parallel linears (QKV, FC1) run two of the backward
 * calls each behind their own GEMMs: the saved input's re-gather (a forward all-gather's size, 4.262e-6) behind
 * the dgrad GEMM (QKV 140 U16, FC1 136 U16, about 1.7e-2 s) and the dgrad's reduce-scatter behind the wgrad GEMM
 * (132 U16): all 4 hidden. tp_f = 4 x 4.262e-6, tp_b = (6 - 4) x 4.262e-6 per layer; per step 8 layer passes x 6. */
#define TP_CALL 4.262e-6
/* TP outside the layers (SP, learned positions: Megatron all-reduces the partial embeddings, adds the
 * positions, then splits). First stage per micro-batch: the embedding's all-reduce forward, payload
 * 4 x 8 x 2 = 64 B, bus 2 x 64 x 1/2 = 64 B: LL 3.6 + 2 x 0.47 us + 64 / 1.25e8 = 5.052e-6 (Simple
 * 15.328e-6); its output gradient's all-gather backward, TP_CALL. Last stage per micro-batch: the LM head's
 * input all-gathered forward and again backward, its input gradient reduce-scattered (3 TP_CALL), and the
 * loss's 3 all-reduces of 4 tokens x 4 B = 16 B, bus 16 B: LL 4.54 + 16 / 1.25e8 = 4.668e-6 (Simple
 * 15.232e-6). Per step, the norm weights' gradients (SP; 2 RMSNorms of 8 x 2 layers = 32 FP32 on stage 0,
 * no final norm there) all-reduced once: 128 B, bus 128 B: LL 4.54 + 128 / 1.25e8 = 5.564e-6 (Simple
 * 15.456e-6). Nothing hides them. */
#define VOCAB_AR_CALL 5.052e-6
#define LOSS_CALL     4.668e-6
#define NORM_AR_S     5.564e-6
/* TP on the slower (last) stage per step: 4 micro-batches x (2 layers x 6 + 3) TP_CALL + 3 LOSS_CALL */
static const double TP_S = 4 * (15 * TP_CALL + 3 * LOSS_CALL);
/* The stages per micro-batch (2 layers each):
 *   first  2 (540 + 1076) U16 + 2 (ATTN_F + ATTN_B) + 2 (ELEM_F + ELEM_B) + 2 x 6 TP_CALL + embedding gather
 *          and scatter-add 2 x 4 x 8 x 4 B / 5e8
 *   last   the same without the embedding, + LM head 404 U16 + loss 2 x 4 x 8 x 8 B / 5e8 + final norm
 *          (1 + 1.5) x 4 x 8 x 4 B / 5e8 */
static const double T_FIRST = 2 * 1616 * U16 + 2 * (ATTN_F + ATTN_B) + 2 * (ELEM_F + ELEM_B) + 12 * TP_CALL +
                              2 * 128 / 5e8 + VOCAB_AR_CALL + TP_CALL;
static const double T_LAST = 2 * 1616 * U16 + 2 * (ATTN_F + ATTN_B) + 2 * (ELEM_F + ELEM_B) + 12 * TP_CALL + 404 * U16 +
                             2 * 256 / 5e8 + 2.5 * 128 / 5e8 + 3 * TP_CALL + 3 * LOSS_CALL;
/* PP: the stage sends its 1/tp slice, 4 x (8/2) x 2 B = 32 B, m x (2 vpp - 1) = 4 x 3 = 12 times per step.
 * The pair spans nodes (stride 2 = a whole node): bandwidth min(1e8 NIC, 1e9 link) x 0.5 = 5e7 B/s; LL
 * 3.6 + 2.7 us + 32 / (5e7 / 4) = 8.86e-6 s (Simple 18.64e-6). On the critical path per micro-batch: an
 * activation in and a gradient in per chunk, 2 vpp = 4 calls, none hidden (overlap_pp 0). */
static const uint64_t PP_CALLS = 12;
#define PP_CALL 8.86e-6
static const double PP_S = 4 * 4 * PP_CALL;
/* One micro-batch: the slower (last) stage + its sends = T_LAST + 4 PP_CALL.
 * Bubble: (sum of stage times - the slowest) / vpp = T_FIRST / 2. */
static const double MICROBATCH_S = T_LAST + 4 * PP_CALL;
static const double BUBBLE_S = T_FIRST / 2;
/* Memory-bound share of the slower stage: what is neither GEMM, attention nor TP, x 4 micro-batches:
 * 2 (ELEM_F + ELEM_B) + loss and norm = 4.096e-6 + 1.664e-6 = 5.76e-6 per micro-batch -> 2.304e-5. */
static const double NONGEMM_S = 4 * (2 * (ELEM_F + ELEM_B) + 2 * 256 / 5e8 + 2.5 * 128 / 5e8);
/* Optimizer over the memory-reported stage (stage 0: 2 x 256 = 512 linear + 2 x 2 x 8 norm +
 * 16 x 8 / 2 = 64 embedding + 4 x 8 = 32 position = 640 parameters):
 *   read the FP32 gradient 640 x 4 = 2560 B, read + write master, m, v 2 x 640 x 12 = 15360 B,
 *   write the BF16 weight 640 x 2 = 1280 B: 19200 B / 5e8 = 38.4e-6 s */
static const double OPTIMIZER_BYTES = 19200;
static const double OPTIMIZER_S = 38.4e-6;
/* Tied embedding gradient all-reduce between the first and last stage: the rank's 8 x 8 = 64 embedding
 * elements in FP32 = 256 B, all-reduce bus 2 x 256 x 1/2 = 256 B, across nodes (2 network steps): LL
 * 3.6 + 2 x 2.7 us + 256 / 1.25e7 = 29.48e-6 (Simple 27.6 + 5.12 = 32.72e-6) */
static const double EMB_S = 29.48e-6;
/* Step: m x micro-batch + bubble + optimizer + embedding sync + norm-gradient all-reduce (no DP, no FP8 casts
 * or commits) */
static const double STEP_S = 4 * (T_LAST + 4 * PP_CALL) + T_FIRST / 2 + 38.4e-6 + 29.48e-6 + NORM_AR_S;
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
    CHECK_REL(t->nongemm_s, NONGEMM_S, 1e-9); /* a difference of terms 2e4 x larger: rounding grows to ~1e-11 */
    CHECK_REL(t->tp_comm_s, TP_S, EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].calls, 32);
    CHECK_REL(p.coll[CO_TP_AG_FWD].time_s, 16 * TP_CALL, EXACT);
    CHECK_EQ_U64(p.coll[CO_PP_P2P].calls, PP_CALLS);
    CHECK_EQ_U64(p.coll[CO_PP_P2P].step_bytes, 384);
    CHECK(p.coll[CO_PP_P2P].inter_node && !p.coll[CO_TP_AG_FWD].inter_node);
    CHECK_REL(t->pp_comm_s, PP_S, EXACT);
    /* bytes per step by group: TP 16 x 32 + 16 x 32 + 32 x 32 + 16 x 32 = 2560 in the layers, + on stage 0
     * the embedding's all-reduce 4 x 64 = 256 and gradient all-gather 4 x 32 = 128, the norm gradients' 128:
     * 3072; PP sends 384 plus the embedding all-reduce's 256 (counted with the pipeline); no DP or CP traffic */
    CHECK_EQ_U64(p.tp_comm_bytes, 3072);
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_AR].calls, 4);
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_AR].step_bytes, 256);
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_AG].calls, 4); /* stage 0: the embedding's gradient only */
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_RS].calls, 0);
    CHECK_EQ_U64(p.coll[CO_TP_LOSS_AR].calls, 0); /* the loss is the last stage's */
    CHECK_EQ_U64(p.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 128);
    CHECK_REL(p.coll[CO_TP_NORM_GRAD_AR].time_s, NORM_AR_S, EXACT);
    CHECK_REL(p.coll[CO_TP_VOCAB_AR].time_s, 4 * VOCAB_AR_CALL, EXACT);
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
    CHECK_REL(t->other_s, EMB_S + NORM_AR_S, EXACT);
    CHECK_REL(t->step_s, STEP_S, EXACT);
    /* throughput and MFU against the step: 16 tokens per step, 4 GPUs, BF16 peak 1e9, FP8 peak 2e9 */
    CHECK_REL(p.model_flops_step, MODEL_FLOPS_STEP, EXACT);
    CHECK_REL(p.tokens_per_s, 16 / STEP_S, EXACT);
    CHECK_REL(p.samples_per_s, 4 / STEP_S, EXACT);
    CHECK_REL(p.tflops_per_gpu, MODEL_FLOPS_STEP / STEP_S / 4 / 1e12, EXACT);
    CHECK_REL(p.mfu_bf16_pct, 100 * MODEL_FLOPS_STEP / STEP_S / 4 / 1e9, EXACT);
    CHECK_REL(p.mfu_fp8_pct, 100 * MODEL_FLOPS_STEP / STEP_S / 4 / 2e9, EXACT);
}

/* The same layout without virtual stages: the bubble is the whole faster stage, T_FIRST, and the PP pair
 * sends m x (2 x 1 - 1) = 4 times; on the critical path 2 calls per micro-batch (2 x 4 x 8.86e-6 = 7.088e-5
 * per step). Step 4 x (T_LAST + 2 PP_CALL) + T_FIRST + 38.4e-6 + 29.48e-6. */
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
    CHECK_REL(p.time.pp_comm_s, 8 * PP_CALL, EXACT);
    CHECK_REL(p.time.microbatch_s, T_LAST + 2 * PP_CALL, EXACT);
    CHECK_REL(p.time.bubble_s, T_FIRST, EXACT);
    CHECK_REL(p.time.step_s, 4 * (T_LAST + 2 * PP_CALL) + T_FIRST + 38.4e-6 + 29.48e-6 + NORM_AR_S, EXACT);
}

/* FP8 GEMMs (TE-style delayed scaling, E4M3 forward, E5M2 backward, FP8 copies of each linear weight
 * row-wise and transposed): the linear GEMMs run at 2e9 x 0.5 x (1 + 256 / 2048) = 1.125e9 FLOP/s with
 * k0 = 256: per layer fprop (264 + 260 + 264 + 264) + dgrad (268 + 264 x 3) + wgrad 4 x 260 = 3152 units of
 * 65536 / 1.125e9 s; the LM head stays BF16 (404 U16). Per step 4 x (2 x 3152 U8 + 404 U16).
 * Weight casts once per step: read the BF16 weight (2 B) and write both copies (2 x 1 B) for the 512 linear
 * weights of the reported stage: 512 x 4 / 5e8 = 4.096e-6.
 * amax all-reduce over tp x cp x dp = 2 ranks in a node, per micro-batch forward and backward (8 calls),
 * mean payload 4 linears x 2 layers x 12 B / 2 = 48 B, bus 48 B: LL 3.6 + 2 x 0.47 us + 48 / (5e8 / 4) =
 * 4.924e-6 per call, 3.9392e-5 per step. */
#define U8 (65536.0 / 1.125e9)
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
    CHECK_REL(p.time.gemm_s, 4 * (2 * 3152 * U8 + 404 * U16), EXACT);
    CHECK_REL(p.time.weight_cast_s, 4.096e-6, EXACT);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 2);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 8);
    CHECK_REL(p.coll[CO_AMAX_AR].time_s, 8 * 4.924e-6, EXACT);
    CHECK_REL(p.time.other_s, 8 * 4.924e-6 + EMB_S + NORM_AR_S, EXACT);
    CHECK_REL(p.time.attn_s, ATTN_S, EXACT); /* attention stays BF16 */
    /* The fp8plan stack keeps the copies but casts them every micro-batch: 4 x 4.096e-6 = 1.6384e-5. FP8-LM's
     * copies of an FP16 master (no working weight) once per step, read 2 B + write 2 x 1 B: 512 x 4 / 5e8 again */
    in.fusion = FUSE_FP8PLAN;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.weight_cast_s, 1.6384e-5, EXACT);
    /* those casts run in each linear's forward (exec/model/model_linear.c model_linear_fwd): the forward phase
     * holds them, 1.6384e-5 s more than the same plan whose copies are cast once per step after the optimizer
     * (not in the forward); the step counts them once either way (its parts' sum: test_plan.c) */
    double fwd_each = p.time.fwd_s;
    CHECK(p.time.opt_cast_s == 0.0);
    /* at the FP8 cast's rate where a profile measured it apart (calibrate's "fp8 cast+transpose"): at 2.5e8 B/s,
     * half of 5e8, the same 4 x 512 x 4 B take 8,192 / 2.5e8 = 3.2768e-5 s */
    g.elem_kind_bw[ELEM_CAST] = 2.5e8;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.weight_cast_s, 3.2768e-5, EXACT);
    g.elem_kind_bw[ELEM_CAST] = 0;
    r.gemm.dt[STATE_WEIGHT] = DT_NONE, r.gemm.dt[STATE_MASTER] = DT_FP16;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.weight_cast_s, 4.096e-6, EXACT);
    CHECK_REL(fwd_each - p.time.fwd_s, 1.6384e-5, 1e-9);
    /* that cast runs in the executor's optimizer phase (run --gpu host's optimizer row plans 4.096e-6 s more);
     * with the states sharded over the DP group (ZeRO-1 over dp 2) it follows the parameter all-gather instead */
    CHECK_REL(p.time.opt_cast_s, 4.096e-6, EXACT);
    in.sharding = SHARD_ZERO1, in.dp = 2;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.weight_cast_s, 4.096e-6, EXACT);
    CHECK(p.time.opt_cast_s == 0.0);
    in.sharding = SHARD_NONE, in.dp = 1;
    /* an FP32 master with no working weight is cast every micro-batch: 4 x 512 x (4 + 2) / 5e8 = 2.4576e-5 */
    r.gemm.dt[STATE_MASTER] = DT_FP32;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.weight_cast_s, 2.4576e-5, EXACT);
}

/* Recompute. Full: each layer's forward runs again in backward — GEMMs 2 x (540 + 1076 + 540) + 404 = 4716 U16
 * per micro-batch, attention 2 x (2 ATTN_F + ATTN_B), and the forward TP collectives twice: 2 x 2 x 8 = 32
 * all-gathers. Selective: only the attention core again, GEMMs as without recompute.
 * Without SP the TP collectives are all-reduces, 2 forward and 2 backward per layer pass: 16 calls each,
 * payload 64 B, bus 2 x 64 x 1/2 = 64 B, in a node: LL 3.6 + 2 x 0.47 us + 64 / 1.25e8 = 5.052e-6 per call
 * (Simple 15.328e-6); 8 layer passes x 4 calls, of which the 2 backward ones (QKV's and FC1's input gradient)
 * run behind their own wgrad GEMMs (132 U16 each, about 1.6e-2 s): 2 exposed a layer pass. Outside the layers:
 * stage 0 all-reduces the partial embeddings (4 x 64 B, nothing backward), no norm gradient to reduce (every
 * rank saw every token); the slower last stage all-reduces the LM head's input gradient (VOCAB_AR_CALL) and the
 * loss's 3 per micro-batch: TP time 4 x (2 x 2 VOCAB_AR_CALL + VOCAB_AR_CALL + 3 LOSS_CALL) = 157.056e-6. */
static void test_recompute_and_no_sp(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    in.recompute = RECOMPUTE_FULL;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.gemm_s, 4 * 4716 * U16, EXACT);
    CHECK_REL(p.time.attn_s, 8 * (2 * ATTN_F + ATTN_B), EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 32);
    CHECK_EQ_U64(p.coll[CO_TP_RS_FWD].calls, 32);
    CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].calls, 32);
    in.recompute = RECOMPUTE_SELECTIVE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.gemm_s, GEMM_S, EXACT);
    CHECK_REL(p.time.attn_s, 8 * (2 * ATTN_F + ATTN_B), EXACT);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 16);
    in.recompute = RECOMPUTE_NONE, in.sp = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_TP_AR_FWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AR_BWD].calls, 16);
    CHECK_EQ_U64(p.coll[CO_TP_AR_FWD].bus_bytes, 64);
    CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 0);
    CHECK_EQ_U64(p.tp_comm_bytes, 2048 + 4 * 64);
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_AR].calls, 4);
    CHECK_EQ_U64(p.coll[CO_TP_VOCAB_AG].calls + p.coll[CO_TP_VOCAB_RS].calls + p.coll[CO_TP_NORM_GRAD_AR].calls, 0);
    CHECK_REL(p.time.tp_comm_s, 4 * (5 * VOCAB_AR_CALL + 3 * LOSS_CALL), EXACT);
    CHECK_REL(p.time.tp_comm_s, 157.056e-6, EXACT);
    /* another kernel set (torchtitan's TP: DTensor redistributions, no such overlap): all 4 exposed again */
    in.fusion = FUSE_COMPILE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.tp_comm_s, 4 * (9 * VOCAB_AR_CALL + 3 * LOSS_CALL), EXACT);
}

/* Operator recompute (RECOMPUTE_OP) runs three forward GEMMs again in the backward of every layer: the K/V
 * projection [tok x kv_t x h], the attention projection (its fprop) and, with SwiGLU, the gate half of FC1
 * [tok x F_t x h] (GeLU: FC2's fprop). On the round GPU with FLOP rates of 1e30 every GEMM is memory-bound:
 * ((M K + K N) x 2 B + M N x 2 B) / (1e9 x 0.5 B/s). Per TP rank, tok 4, h 8:
 *   K/V   M 4, N kv_t 4, K 8: (32 + 32) x 2 + 16 x 2 = 160 B
 *   proj  M 4, N 8, K q_t 4:  (16 + 32) x 2 + 32 x 2 = 160 B
 *   gate  M 4, N F_t 8, K 8:  (32 + 64) x 2 + 32 x 2 = 256 B
 * 576 B = 1.152e-6 s a layer and micro-batch; the last stage's 2 layers x 4 micro-batches: gemm_s grows by
 * 8 x 1.152e-6 = 9.216e-6 s over no recompute. */
static void test_operator_recompute_gemms(void)
{
    ModelSpec m = ox_tiny(16, 4);
    m.mlp = MLP_SWIGLU;
    GpuSpec g = round_gpu();
    g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    Plan none, op;
    CHECK(plan_build(&in, &none, NULL) == ST_OK);
    in.recompute = RECOMPUTE_OP;
    CHECK(plan_build(&in, &op, NULL) == ST_OK);
    CHECK_REL(op.time.gemm_s - none.time.gemm_s, 8 * 576 / 5e8, 1e-9);
    /* GeLU recomputes FC2's fprop instead. With BF16 operands an [M x N x K] GEMM and its [M x K x N] twin move
     * the same bytes, so take FP8 forward GEMMs (TE recipe: 1 B operands, 2 B output) and FFN 32 (F_t 16 != h):
     *   K/V   M 4, N 4, K 8:        (32 + 32) x 1 + 16 x 2 =  96 B
     *   proj  M 4, N 8, K 4:        (16 + 32) x 1 + 32 x 2 = 112 B
     *   FC2   M 4, N 8, K F_t 16:   (64 + 128) x 1 + 32 x 2 = 256 B (FC1's fprop, M 4, N 16, K 8, would be 288)
     * 464 B a layer and micro-batch: 8 x 464 / 5e8 s more than no recompute. */
    m.mlp = MLP_GELU, m.ffn_hidden = 32;
    r = fx_te_recipe("te", 0);
    in.recompute = RECOMPUTE_NONE;
    CHECK(plan_build(&in, &none, NULL) == ST_OK);
    in.recompute = RECOMPUTE_OP;
    CHECK(plan_build(&in, &op, NULL) == ST_OK);
    CHECK_REL(op.time.gemm_s - none.time.gemm_s, 8 * 464 / 5e8, 1e-9);
}

/* A launch floor of 0.5 s (absurd, so that every kernel costs exactly its launches; the knob must stay
 * under 1 s): each GEMM one launch (12 per
 * layer: 4 forward, 8 backward), attention forward 1 launch and backward 2, the TE kernel list 5 launches
 * forward (norm, bias-dropout-add, norm, GeLU, bias-dropout-add) and 7 backward (GeLU; norm2 2 + residual
 * 1; norm1 2 + residual 1). Per layer: GEMM 12, attention 3, kernels 12. The last stage adds the LM head's 3
 * GEMMs and the loss (3 launches forward, 2 backward) and final norm (1 forward, 2 backward): 8 kernel
 * launches. Slower (last) stage per micro-batch: GEMMs 2 x 12 + 3 = 27 launches, attention 2 x 3 = 6,
 * kernels 2 x 12 + 8 = 32; x 4 micro-batches x 0.5 s. */
static void test_launch_floor(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    in.launch_s = 0.5;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.gemm_s, 4 * 27 * 0.5, EXACT);
    CHECK_REL(p.time.attn_s, 4 * 6 * 0.5, EXACT);
    CHECK_REL(p.time.nongemm_s, 4 * 32 * 0.5, EXACT);
    /* materialized attention: its GEMMs (QK^T and PV forward, four backward) one launch each, and the
     * softmax kernels around them: forward 2 GEMMs + 2 launches = 2 s, backward 4 GEMMs + 1 launch = 2.5 s;
     * per step 4 x 2 layers x 4.5 s */
    in.attn = ATTN_MATERIALIZED;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.attn_s, 4 * 2 * 4.5, EXACT);
}

/* Materialized attention with the sequence (8) longer than the head (4), so that every GEMM's K tells which
 * operand it contracts: seq 8, tp 2 -> 1 head per rank, batch mbs x heads = 1; sq = skv = 8 rows, d = 4. Each
 * GEMM fits one 128 x 256 tile, so it costs (K + 128) U16 (the roofline and the score traffic are far below:
 * 64 scores x 18 B = 1,152 B backward / 5e8 = 2.3e-6 s against 1.6e-2 s of GEMMs):
 *   forward   QK^T [sq x skv x d] K 4: 132; PV [sq x d x skv] K 8: 136 -> 268 U16
 *   backward  dP = dO V^T [sq x skv x d] K 4: 132; dV = P^T dO [skv x d x sq] K 8: 136; dQ = dS K
 *             [sq x d x skv] K 8: 136; dK = dS^T Q [skv x d x sq] K 8: 136 -> 540 U16
 * (dV contracted over d instead, [skv x sq x d], would be K 4: 132.) Per step on either stage: 4 micro-batches
 * x 2 layers x (268 + 540) U16. */
static void test_materialized_attention_gemms(void)
{
    ModelSpec m = ox_tiny(16, 8);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    in.seq = 8, in.attn = ATTN_MATERIALIZED;
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(p.time.attn_s, 8 * (268 + 540) * U16, EXACT);
}

/* The memory-bound kernel lists of the other stacks (BF16, GeLU, RMSNorm, no RoPE or dropout; H = 16,
 * F = 32 elements; 4 micro-batches accumulate, so each linear weight's gradient is accumulated separately:
 * 256 x (2 + 2 x 4) = 2560 B per layer):
 *   compile  forward norm 4H + residual+norm 8H + GeLU 4F + residual 6H = 288 + 128 = 416 B; backward GeLU 6F
 *            + norm/residual 10H + 10H + accumulation 2560 = 192 + 320 + 2560 = 3072 B
 *   eager    forward RMSNorm 36H twice + residual 6H twice + GeLU 4F = 1344 + 128 = 1472 B; backward twice
 *            the forward + accumulation: 2944 + 2560 = 5504 B
 * The slower stage's memory-bound time per micro-batch is 2 layers of these at 5e8 B/s plus the last
 * stage's loss and norm, 2 x 256 + 2.5 x 128 = 832 B. */
static void test_other_kernel_lists(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    Plan p;
    in.fusion = FUSE_COMPILE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.nongemm_s, 4 * (2 * (416.0 + 3072) + 832) / 5e8, 1e-9);
    in.fusion = FUSE_EAGER;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_REL(p.time.nongemm_s, 4 * (2 * (1472.0 + 5504) + 832) / 5e8, 1e-9);
}

/* The fp8plan stack (this project's executor) runs its own kernel list (planner/plan_kernels.c: one fused kernel
 * per step, exec/model/model_pass.c), its loss kernel writes d(logits) in the forward, its backward converts that
 * FP32 d(logits) to the activation dtype (BF16) for the LM head's GEMMs, and it zeroes its FP32 main gradients once
 * per step. Against the eager stack (test_other_kernel_lists: per layer forward 1472 B, backward 5504 B with the
 * accumulation), per layer (H = 16, F = 32, no RoPE, BF16: no casts):
 *   forward  norm 4H + add 6H + norm 4H + GeLU 4F + add 6H = 20H + 4F = 320 + 128 = 448 B   (-1024)
 *   backward GeLU 6F + 2 norm backward 12H = 192 + 384 = 576 B; the FP32 main gradients accumulate in the
 *            wgrad GEMMs, nothing apart                                                   (-4928)
 * and on the last stage per micro-batch (tok 4 x V 8 rows per TP rank): forward + 4 x 8 x 8 B = 256 B (the
 * gradient half of the loss moves in), backward - 256 B + 4 x 8 x (4 + 2) B = -64 B.
 * Per micro-batch on the reported (last) stage, 2 layers: forward 256 - 2 x 1024 = -1792 B, backward
 * -64 - 2 x 4928 = -9920 B; per step (4 micro-batches) at 5e8 B/s: fwd_s 4 x -1792 / 5e8 = -1.4336e-5,
 * bwd_s 4 x -9920 / 5e8 = -7.936e-5. The zeroing writes the reported stage's FP32 gradients, 640 x 4 = 2560 B, in
 * the backward phase (the first micro-batch's, where the executor runs it): bwd_s -7.936e-5 + 2560 / 5e8 =
 * -7.424e-5; memory-bound time 4 x (-1792 - 9920) + 2560 = -44288 B -> -8.8576e-5. The first stage's micro-batch (its 2
 * layers: -2048 - 9856 = -11904 B, -2.3808e-5 s) shrinks the bubble T_FIRST / 2 by 1.1904e-5: the step
 * -8.8576e-5 - 1.1904e-5 = -1.0048e-4. */
static void test_fp8plan_loss_in_forward(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r);
    Plan eager, own;
    in.fusion = FUSE_EAGER;
    CHECK(plan_build(&in, &eager, NULL) == ST_OK);
    in.fusion = FUSE_FP8PLAN;
    CHECK(plan_build(&in, &own, NULL) == ST_OK);
    CHECK_REL(own.time.fwd_s - eager.time.fwd_s, -1.4336e-5, 1e-9);
    CHECK_REL(own.time.bwd_s - eager.time.bwd_s, -7.424e-5, 1e-9);
    CHECK_REL(own.time.nongemm_s - eager.time.nongemm_s, -8.8576e-5, 1e-9);
    CHECK_REL(own.time.step_s - eager.time.step_s, -1.0048e-4, 1e-9);
    CHECK_REL(own.time.gemm_s, eager.time.gemm_s, EXACT);
}

/* A BF16 recipe has no amax to reduce, whatever its amax_reduce says. */
static void test_bf16_has_no_amax_reduction(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = round_gpu();
    Recipe r = ox_bf16(0);
    r.amax_reduce = AMAX_ALL;
    PlanInput in = layout(&m, &g, &r);
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 0);
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
               coll_name((CollectiveId)c));
    }
    CHECK(p.time.other_s == 0.0 && p.time.tp_comm_s == 0.0 && p.time.pp_comm_s == 0.0 && p.time.bubble_s == 0.0);
}

int main(void)
{
    RUN(test_bf16_step_time_by_hand);
    RUN(test_no_interleaving_whole_bubble);
    RUN(test_fp8_gemm_rate_casts_and_amax);
    RUN(test_recompute_and_no_sp);
    RUN(test_operator_recompute_gemms);
    RUN(test_launch_floor);
    RUN(test_materialized_attention_gemms);
    RUN(test_other_kernel_lists);
    RUN(test_fp8plan_loss_in_forward);
    RUN(test_bf16_has_no_amax_reduction);
    RUN(test_one_gpu_has_no_collectives);
    return test_summary();
}
