/* tests/unit/test_oracle_mla_terms.c — a latent-attention (and q/k-norm) stage worked out by hand: the
 * memory-bound kernels as the RoPE width changes, the latent-attention weights with and without a q latent,
 * LayerNorm against RMSNorm statistics, the latent-attention backward rows, the attention output's gradient, the
 * widest FP8 output gradient with its 1x128 tiles, the q/k norms' rebuilt attention input in the working set, and
 * latent attention's and an MTP depth's tensor-parallel collectives.
 *
 * An independent oracle: every expected value is arithmetic on the models below, written out in the
 * comments, never a value the planner produced. The MoE fixture (support/oracle_fixtures.h ox_moe) as in
 * test_oracle_moe_terms.c: 2 layers, hidden 256, 2 heads of 128, vocabulary 1000, seq 512; latent attention
 * on it through mla_model below. */
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

/* Latent attention's memory-bound kernels (plan_moe_time.c's list) as the RoPE width r grows by 32 while the
 * no-position width shrinks by 32 (dqk = nope + r stays 96): per layer and micro-batch, tok = 512, heads 2,
 * bytes change by
 *   forward  RoPE on the rope dims 4 tok (heads + 1) r:                   + 4 x 512 x 3 x 32 = 196,608
 *   backward RoPE and K 4 tok (heads (r + dqk) + r):                      + 4 x 512 x 3 x 32 = 196,608
 *            up-projection dY casts 4 tok heads (dqk + nope + dv):         - 4 x 512 x 2 x 32 = 131,072
 *            down-projection dY casts 4 tok (q_lora + kv_lora + r):        + 4 x 512 x 32     =  65,536
 *   net + 327,680 B a layer, x 2 layers = 655,360 B, at HBM 1e12 B/s (efficiency 1, no launch floor):
 *   the non-GEMM time grows by 655,360e-12 s. FLOP rates are 1e30 (GEMMs and attention take no time), one
 * micro-batch, no experts (every layer dense), TE's fused gradient accumulation (no separate kernel whose bytes
 * follow the weights). */
static ModelSpec mla_model(uint32_t nope, uint32_t rope)
{
    ModelSpec m = ox_moe(512);
    m.experts = m.experts_per_token = m.shared_experts = m.expert_ffn = m.dense_layers = 0;
    m.head_dim = nope + rope, m.qk_nope_head_dim = nope, m.qk_rope_head_dim = rope;
    m.v_head_dim = 64, m.kv_lora_rank = 128, m.q_lora_rank = 0;
    return m;
}

/* The non-GEMM seconds of model b less those of model a, at 1e12 B/s with no launch floor and FLOP rates of 1e30
 * (BF16, one micro-batch); NAN when a plan fails. */
static double nongemm_more(const ModelSpec *a, const ModelSpec *b)
{
    GpuSpec g = fx_gpu();
    g.hbm_bw = 1e12, g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(a, &g, &r);
    in.gbs = 1, in.eff_hbm = 1, in.launch_s = 0;
    Plan pa, pb;
    if (!build(&in, &pa)) return NAN;
    in.model = b;
    if (!build(&in, &pb)) return NAN;
    return pb.time.nongemm_s - pa.time.nongemm_s;
}

static void test_mla_kernel_bytes_in_rope(void)
{
    ModelSpec a = mla_model(64, 32), b = mla_model(32, 64);
    double d = nongemm_more(&a, &b);
    CHECKF(fabs(d - 655360e-12) < 1e-15, "non-GEMM time grew by %.1f B, expected 655,360", d * 1e12);
}

/* Latent attention's memory-bound kernels whole, against standard attention on the same layers: mla_model(64, 32)
 * against the same model with kv_lora_rank 0 (standard attention: 2 heads of 96, no GQA, so Q = K = 512 x 192 =
 * 98,304 elements). Everything else (FFN, norms, loss; GEMMs and attention take no time) is the same, so the
 * non-GEMM time differs by the attention parts alone. tok 512, h 256, ht 2, H = Hf = 512 x 256 = 131,072 (tp 1),
 * q_lora 0, kv_lora 128, r 32, nope 64, dqk 96, dv 64. BF16 (no casts), TE fusion, no dropout.
 *   MLA forward:  4 H = 524,288; 4 tok (ql + kl) = 262,144; 4 tok (ht + 1) r = 196,608; 4 tok ht dqk = 393,216;
 *                 4 tok ht dv = 262,144; 6 H = 786,432                                      -> 2,424,832
 *   MLA backward: 4 Hf = 524,288; 4 tok (ht (r + dqk) + r) = 2,048 x 288 = 589,824;
 *                 4 tok ht (dqk + nope + dv) = 4,096 x 224 = 917,504; 6 tok (ql + kl) = 393,216;
 *                 4 tok (ql + kl + r) = 327,680; 6 H twice = 1,572,864                      -> 4,325,376
 *   standard (TE): forward norm 4 H = 524,288, RoPE 4 (Q + K) = 786,432, residual 6 H = 786,432 -> 2,097,152;
 *                  backward RoPE 786,432 + 6 H twice 1,572,864                               -> 2,359,296
 *   per layer 6,750,208 - 4,456,448 = 2,293,760 B; 2 layers: 4,587,520 B at 1e12 B/s. */
static void test_mla_kernel_bytes_whole(void)
{
    ModelSpec a = mla_model(64, 32), s = a;
    s.kv_lora_rank = 0;
    double d = nongemm_more(&s, &a);
    CHECKF(fabs(d - 4587520e-12) < 1e-15, "latent attention's kernels moved %.1f B more, expected 4,587,520", d * 1e12);
}

/* Latent attention's linear weights per layer (tp 1: 2 heads), nope 64 + rope 32 = dqk 96, dv 64, kv_lora 128;
 * the dense SwiGLU FFN 512: FC1 1024 x 256 = 262,144 + FC2 256 x 512 = 131,072 = 393,216.
 *   without a q latent: q_proj [2 x 96 = 192, 256] = 49,152; kv_down [128 + 32, 256] = 40,960;
 *     kv_up [2 x (64 + 64), 128] = 32,768; out [256, 2 x 64] = 32,768: 155,648 -> a layer 548,864, 2 layers 1,097,728
 *   q_lora 64: q_down [64, 256] = 16,384 and q_up [192, 64] = 12,288 for q_proj: 135,168 -> a layer 528,384,
 *     2 layers 1,056,768. */
static void test_mla_weights(void)
{
    ModelSpec m = mla_model(64, 32);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.params_gemm_gpu, 1097728);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 2 * 1097728ull);
    m.q_lora_rank = 64;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.params_gemm_gpu, 1056768);
}

/* LayerNorm keeps a mean and a reciprocal standard deviation per row (8 B, FP32), RMSNorm the latter only (4 B).
 * The latent-attention model above (no q latent, dense FFN, 2 layers, 512 tokens, tp 1, one micro-batch in
 * flight): norms with saved statistics per layer are norm1 and the kv latent's norm (and norm2 before the FFN),
 * 512 rows each: LayerNorm saves 3 x 512 x 4 = 6,144 B more a layer, 12,288 B in the 2 layers. */
static void test_mla_layernorm_statistics(void)
{
    ModelSpec ln = mla_model(64, 32), rms = mla_model(64, 32);
    ln.norm = NORM_LAYERNORM;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&rms, &g, &r);
    in.gbs = 1;
    Plan a, b;
    if (!build(&in, &a)) return;
    in.model = &ln;
    if (!build(&in, &b)) return;
    CHECK_EQ_U64(b.mem[MT_ACT_LAYER_HP].bytes - a.mem[MT_ACT_LAYER_HP].bytes, 12288);
}

/* Latent attention's backward rows in the transient (Megatron-Core's MLASelfAttention: autograd holds the output
 * gradient of kv_down, of an up-projection and of a latent's norm, output and input): (tok_r x (kv_lora + rope +
 * 2 x max(q_lora, kv_lora)) + the larger of tok x heads/tp x max(dqk, nope + dv) and tok_r x h) x 2 B — under
 * sequence parallelism the duplicated down-projections and the latents' norms run on the shard's tok_r = tok / tp
 * tokens (Megatron-Core multi_latent_attention.py: kv_compressed "[s / TP, b, kv_lora_rank]"), the column-parallel
 * up-projections' outputs on every token. mla_model(64, 32) (512 tokens, 2 heads, h 256, no q latent, kv_lora 128,
 * dv 64):
 *   kv_lora 128 -> 192: kv_down's output 160 -> 224 columns, the latents' 2 x 128 -> 2 x 192: 192 columns more,
 *     512 x 192 x 2 = 196,608 B at tp 1, 256 x 192 x 2 = 98,304 B at tp 2 (the up-projections do not move);
 *   dv 64 -> 128: tp 1, kv_up's output 2 x (64 + 64) = 256 -> 2 x (64 + 128) = 384, wider than h 256 and q's
 *     2 x 96: 128 columns, 512 x 128 x 2 = 131,072 B more; tp 2, one head: 512 x (64 + 64) = 65,536 elements (tied
 *     with the down-projections' input gradient 256 x 256) -> 512 x (64 + 128) = 98,304: 32,768 x 2 = 65,536 B.
 * (loss_bytes 4: the loss keeps no working copy beyond the saved softmax, so the layers' working set is the peak.) */
static void test_mla_backward_transient(void)
{
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    const uint64_t kv_more[2] = {196608, 98304}, dv_more[2] = {131072, 65536};
    for (uint32_t tp = 1; tp <= 2; tp++) {
        ModelSpec a = mla_model(64, 32), kv = a, dv = a;
        kv.kv_lora_rank = 192, dv.v_head_dim = 128;
        PlanInput in = fx_input(&a, &g, &r);
        in.gbs = 1, in.tp = tp, in.loss_bytes = 4; /* no loss working copies: the layers' working set is the peak */
        Plan pa, pk, pv;
        if (!build(&in, &pa)) return;
        in.model = &kv;
        if (!build(&in, &pk)) return;
        in.model = &dv;
        if (!build(&in, &pv)) return;
        CHECKF(pk.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes == kv_more[tp - 1], "tp %u: kv_lora: %llu more",
               tp, (unsigned long long)(pk.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes));
        CHECKF(pv.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes == dv_more[tp - 1], "tp %u: dv: %llu more", tp,
               (unsigned long long)(pv.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes));
    }
}

/* The attention output's gradient [tok, heads/tp x dv] (the output projection's input gradient, which the attention's
 * backward reads) shares dX's buffer [tok_r, h], which is as wide as the wider of the two. mla_model(64, 32) (512
 * tokens, 2 heads, h 256, kv_lora 128, no q latent; sequence parallelism on, so tok_r = 512 / tp), v_head_dim
 * dv0 -> dv1, BF16; each row also moves kv_up's output gradient [tok, heads/tp x (64 + dv)] where that is the widest
 * up-projection row (q_up's heads/tp x 96 and h 256 the others):
 *   tp 1, dv 256 -> 320: attention output 2 x 256 = 512 -> 640 columns, above h: 128 x 512 x 2 = 131,072; kv_up
 *     2 x 320 = 640 -> 768: 131,072 more: 262,144 B (131,072 before the attention output was counted);
 *   tp 2, dv 256 -> 320: one head a rank, 256 -> 320 columns of 512 tokens (dX: 256 tokens x 256): 32,768 elements
 *     more, 65,536 B; kv_up 320 -> 384: 64 x 512 x 2 = 65,536: 131,072 B;
 *   tp 1, dv 96 -> 128: attention output 192 -> 256 columns, not above h (dX's 256 wide): 0; kv_up 2 x 160 = 320
 *     -> 2 x 192 = 384, 64 x 512 x 2 = 65,536 B.
 * (loss_bytes 4, as above.) */
static void test_mla_attention_output_gradient(void)
{
    static const struct {
        uint32_t tp, dv0, dv1;
        uint64_t more;
    } rows[] = {{1, 256, 320, 262144}, {2, 256, 320, 131072}, {1, 96, 128, 65536}};
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ModelSpec a = mla_model(64, 32), b = a;
        a.v_head_dim = rows[i].dv0, b.v_head_dim = rows[i].dv1;
        PlanInput in = fx_input(&a, &g, &r);
        in.gbs = 1, in.tp = rows[i].tp, in.loss_bytes = 4;
        Plan pa, pb;
        if (!build(&in, &pa)) return;
        in.model = &b;
        if (!build(&in, &pb)) return;
        uint64_t more = pb.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes;
        CHECKF(more == rows[i].more, "tp %u, dv %u -> %u: %llu B more, expected %llu", rows[i].tp, rows[i].dv0,
               rows[i].dv1, (unsigned long long)more, (unsigned long long)rows[i].more);
    }
}

/* The FP8 output gradient of the linear whose backward runs, in both layouts (E5M2, 1 B), is the widest of the
 * layer's linear outputs, the attention's included — with a wide q latent q_down's [tok_r, q_lora], wider than the
 * FFN's FC1 [tok, 2 x F / tp] — and under 1x128 activation tiles (DeepSeek-V3) its FP32 scales: row-wise
 * rows x ceil(cols / 128), transposed cols x ceil(rows / 128). mla_model(64, 32) with a q latent, q_lora 1024 ->
 * 1536 (the dense FFN 512: FC1 [tok, 1024]; the other outputs at most 256 wide), Transformer Engine's FP8 linears:
 *   the latent rows: 2 x max(q_lora, kv_lora 128): 2 x 512 more columns of tok_r tokens, 512 x 1,024 x 2 =
 *     1,048,576 B (BF16) at tp 1, the shard's 256 tokens at tp 2, 524,288 B;
 *   tp 1: q_down [512, 1024] ties FC1 [512, 1024]; [512, 1536]: 512 x 512 x 2 layouts = 524,288 B; per-tensor
 *     scaling 1,572,864 B more. 1x128 tiles: 512 x 8 + 1024 x 4 = 8,192 -> 512 x 12 + 1536 x 4 = 12,288, x 4 B:
 *     16,384 more, 1,589,248 B;
 *   tp 2 (sequence parallel: q_down's 256 rows; FC1 [512, 512]): 256 x 1024 ties 512 x 512; 256 x 1536: 131,072
 *     elements x 2 = 262,144 B; tiles 256 x 8 + 1024 x 2 = 4,096 (FC1 512 x 4 + 512 x 4 = 4,096) -> 256 x 12 +
 *     1536 x 2 = 6,144: 8,192 B; and the q latent q_up gathers again from the shards for its weight gradient
 *     [tok, q_lora] (sequence parallel: wider than h 256), 512 x 512 x 2 = 524,288 B more; 524,288 + 262,144 +
 *     8,192 + 524,288 = 1,318,912 B.
 * (Before these were counted the FP8 terms followed the FFN alone: 1,048,576 B more at every row; before the latent
 * rows were the shard's, 1,843,200 B at tp 2, the latents' gradients counted at every token.) */
static void test_mla_fp8_widest_output_gradient(void)
{
    static const struct {
        uint32_t tp;
        Granularity gran;
        uint64_t more;
    } rows[] = {{1, GRAN_TENSOR, 1572864}, {1, GRAN_1X128, 1589248}, {2, GRAN_1X128, 1318912}};
    GpuSpec g = fx_gpu();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Recipe r = fx_te_recipe("te-tiles", 0);
        r.act_gran = rows[i].gran;
        ModelSpec a = mla_model(64, 32), b = a;
        a.q_lora_rank = 1024, b.q_lora_rank = 1536;
        PlanInput in = fx_input(&a, &g, &r);
        in.gbs = 1, in.tp = rows[i].tp, in.loss_bytes = 4;
        Plan pa, pb;
        if (!build(&in, &pa)) return;
        in.model = &b;
        if (!build(&in, &pb)) return;
        uint64_t more = pb.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes;
        CHECKF(more == rows[i].more, "row %zu (tp %u): %llu B more, expected %llu", i, rows[i].tp,
               (unsigned long long)more, (unsigned long long)rows[i].more);
    }
}

/* q/k norms (Qwen3) save nothing more (Q, K, V is their input); the backward rebuilds the attention's normalized,
 * rotated input: one layer's copy [tok, q + 2 kv] in BF16 and one FP32 rstd per (token, q or k head) join the
 * transient. ox_moe (2 heads of 128, 2 KV heads, 512 tokens, one micro-batch):
 *   tp 1: 512 x (256 + 2 x 256) x 2 = 786,432 B and 512 x (2 + 2) x 4 = 8,192 B: 794,624 B more;
 *   tp 2: a rank's 1 query and 1 KV head: 512 x (128 + 2 x 128) x 2 + 512 x 2 x 4 = 397,312 B more.
 * The norms' weights are 2 x 128 "other" parameters a layer (replicated over tp): 512 elements more. */
static void test_qk_norm_transient(void)
{
    ModelSpec m = ox_moe(512), q = ox_moe(512);
    q.qk_norm = 1;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    const uint64_t want[2] = {794624, 397312};
    for (uint32_t tp = 1; tp <= 2; tp++) {
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.tp = tp;
        Plan a, b;
        if (!build(&in, &a)) return;
        in.model = &q;
        if (!build(&in, &b)) return;
        CHECKF(b.mem[MT_TRANSIENT].bytes - a.mem[MT_TRANSIENT].bytes == want[tp - 1], "tp %u: %llu more", tp,
               (unsigned long long)(b.mem[MT_TRANSIENT].bytes - a.mem[MT_TRANSIENT].bytes));
        CHECK_EQ_U64(b.mem[MT_ACT_LAYER_HP].bytes, a.mem[MT_ACT_LAYER_HP].bytes);
        CHECK_EQ_U64(b.mem[MT_WEIGHT_OTHER].elements - a.mem[MT_WEIGHT_OTHER].elements, 512);
    }
}

/* Latent attention at TP 2 with SP (Megatron-Core core_v0.16.0 MLASelfAttention: q_down and kv_down duplicated
 * TELinears on the sequence shard, q_up and kv_up column-parallel, k_pos_emb gathered by
 * gather_from_sequence_parallel_region, the output projection row-parallel). mla_model(80, 16) with a q latent
 * of 64: 2 dense layers, h 256, FFN 512 (SwiGLU), 2 heads (1 a rank), kv_lora 128; seq 512, one micro-batch:
 * tok 512, the shard tr 256. Per layer, BF16 (2 B):
 *   forward gathers   the up-projections' inputs 512 x (64 + 128) x 2 = 196,608, the RoPE key 512 x 16 x 2 =
 *                     16,384: 212,992; FC1's input 512 x 256 x 2 = 262,144 → 4 calls of (212,992 + 262,144) / 2
 *                     = 237,568
 *   forward scatters  proj, FC2: 262,144 each → 4 calls of 262,144
 *   backward gathers  proj's d(output) 262,144 + the up-projections' inputs again 196,608 = 458,752; FC2's
 *                     d(output) and FC1's input again 524,288 → 8 calls of (458,752 + 524,288) / 4 = 245,760
 *   backward scatters the up-projections' and the RoPE key's input gradients 512 x (64 + 128 + 16) x 2 = 212,992
 *                     (no h-wide one: the down-projections run on the shard); FC1's 262,144 → 4 calls of 237,568
 * FP8 (fx_te_recipe: E4M3 gathers of the linears' inputs, the RoPE key and the gradients BF16): forward
 * 512 x 192 + 16,384 = 114,688 and 131,072 → 122,880; backward gathers 262,144 + 98,304 = 360,448 and 262,144 +
 * 131,072 = 393,216 → 8 calls of 188,416; backward scatters as BF16's.
 * Block-scaled (fx_te_recipe with 1x128 activation tiles, DeepSeek-V3's; exec/model/model_tp_block.c): the gathers
 * carry the FP32 scales beside the codes. Forward, each row's tiles its own tensor's: the latents 98,304 codes + 512
 * x ceil(64/128) x 4 = 2,048 + 512 x ceil(128/128) x 4 = 2,048, the RoPE key 16,384: 118,784; FC1's input 131,072 +
 * 512 x 2 x 4 = 4,096: 135,168 → 4 calls of 126,976. Backward, the saved transposed shards (cols, tr) tiled along a
 * rank's 256 tokens, 2 ranks x cols x ceil(256/128) x 4: the latents 98,304 + 192 x 16 = 3,072, with proj's
 * d(output) 262,144: 363,520; FC1's input 131,072 + 256 x 16 = 4,096 with FC2's d(output): 397,312 → 8 calls of
 * (363,520 + 397,312) / 4 = 190,208 (row-wise tiles would have made the re-gathers 2,048 + 2,048 and 4,096).
 * The gradients all-reduced over TP once a step (FP32): per layer 2 norms x 256 + the latents' norms 64 + 128 +
 * the duplicated down-projections (64 + 128 + 16) x 256 = 53,248: 53,952, x 2 = 107,904, + the final norm 256 =
 * 108,160 values, 432,640 B. Saved on the shard: with kv_lora 64 instead of 128, act_layer_hp falls by
 * tr x 64 x 2 for c_kv and again for kv_up's input, 2 x 32,768 = 65,536 a layer, 131,072 (at full tokens: twice).
 * Those 432,640 B are one flattened FP32 copy after the backward (Megatron's finalize_model_grads), the transient
 * at seq 8 where a layer's working set is far smaller (tok 8: its widest rows, the latents' and the up-projections',
 * are under 1,000 columns, under 16 KB); this executor keeps its dX and d(residual) buffers beside it, d(residual)
 * 4 x 256 and dX max(8 x 1 head x 64, 4 x 256) = 1,024, x 2 B: 4,096, 436,736 B. */
static void test_mla_tp_bytes(void)
{
    ModelSpec m = mla_model(80, 16);
    m.q_lora_rank = 64;
    GpuSpec g = fx_gpu();
    static const struct {
        int fp8;
        uint64_t agf, agb, rsb;
    } c[] = {{0, 237568, 245760, 237568}, {1, 122880, 188416, 237568}, {2, 126976, 190208, 237568}};
    for (int i = 0; i < 3; i++) {
        Recipe r = c[i].fp8 ? fx_te_recipe("te", 0) : fx_bf16_recipe("bf16", 0);
        if (c[i].fp8 == 2) r.act_gran = GRAN_1X128, r.weight_gran = GRAN_128X128;
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.tp = 2, in.sp = 1;
        Plan p;
        if (!build(&in, &p)) return;
        CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].calls, 4);
        CHECK_EQ_U64(p.coll[CO_TP_AG_FWD].payload_bytes, c[i].agf);
        CHECK_EQ_U64(p.coll[CO_TP_RS_FWD].calls, 4);
        CHECK_EQ_U64(p.coll[CO_TP_RS_FWD].payload_bytes, 262144);
        CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].calls, 8);
        CHECK_EQ_U64(p.coll[CO_TP_AG_BWD].payload_bytes, c[i].agb);
        CHECK_EQ_U64(p.coll[CO_TP_RS_BWD].calls, 4);
        CHECK_EQ_U64(p.coll[CO_TP_RS_BWD].payload_bytes, c[i].rsb);
        CHECK_EQ_U64(p.coll[CO_TP_NORM_GRAD_AR].calls, 1);
        CHECK_EQ_U64(p.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 432640);
        if (c[i].fp8) continue;
        ModelSpec m2 = m;
        m2.kv_lora_rank = 64;
        Plan p2;
        in.model = &m2;
        if (!build(&in, &p2)) return;
        CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes - p2.mem[MT_ACT_LAYER_HP].bytes, 131072);
        ModelSpec m8 = m;
        m8.seq_len = 8;
        in.model = &m8;
        for (int f = 0; f < 2; f++) {
            in.fusion = f ? FUSE_FP8PLAN : FUSE_TE;
            if (!build(&in, &p2)) return;
            CHECK_EQ_U64(p2.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 432640);
            CHECK_EQ_U64(p2.mem[MT_TRANSIENT].bytes, f ? 436736 : 432640);
        }
    }
}

/* The same model with an MTP depth at TP 2 (Megatron-Core core_v0.16.0 MultiTokenPredictionLayer with SP; no experts:
 * the depth's block is a third dense layer), BF16. Per micro-batch (one):
 *   forward gathers    3 layers x 475,136 (as above) + eh_proj's input 512 x 2 x 256 x 2 = 524,288 + its output
 *                      gathered along h 512 x 256 x 2 = 262,144: 2,211,840 in 6 + 2 = 8 calls (276,480 each)
 *   backward gathers   3 x (458,752 + 524,288) + eh_proj's input again 524,288 + the sequence split's backward
 *                      262,144: 3,735,552 in 12 + 2 = 14 calls, mean 266,825 (the row's sum exact: half of it
 *                      sent, 1,867,776)
 *   backward scatters  3 x (212,992 + 262,144) + eh_proj's input gradient 524,288: 1,949,696 in 7 calls (278,528)
 *   vocabulary         the depth's own lookup (a reduce-scatter forward, a gather backward) and pass through the
 *                      head (a gather forward, a gather and a reduce-scatter backward) beside the model's:
 *                      reduce-scatters 2 + 2 = 4, gathers 3 + 3 = 6, of 512 x 256 x 2 = 262,144; the loss's
 *                      all-reduces 3 + 3 = 6 of 512 x 4 = 2,048
 *   TP gradients       3 layers x 53,952 + the depth's enorm, hnorm and final norm 3 x 256 + the model's final
 *                      norm 256 = 162,880 values, 651,520 B
 * Two depths: the second adds the first's share again — forward gathers 475,136 + 524,288 + 262,144 =
 * 1,261,568 in 4 calls (3,473,408 in 12), backward gathers 458,752 + 524,288 + 524,288 + 262,144 = 1,769,472 in
 * 4 + 2 (5,505,024 in 20), backward scatters 212,992 + 262,144 + 524,288 = 999,424 in 3 (2,949,120 in 10, 294,912
 * each), its lookup and head pass (vocabulary reduce-scatters 6, gathers 9), its loss's 3 all-reduces (9), and its
 * layer's and three norms' 53,952 + 768 = 54,720 TP gradients (217,600 values, 870,400 B). */
static void test_mtp_tp_bytes(void)
{
    ModelSpec m = mla_model(80, 16);
    m.q_lora_rank = 64, m.mtp_layers = 1;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.tp = 2, in.sp = 1;
    Plan p;
    if (!build(&in, &p)) return;
    const Collective *c = p.coll;
    CHECK_EQ_U64(c[CO_TP_AG_FWD].calls, 8);
    CHECK_EQ_U64(c[CO_TP_AG_FWD].payload_bytes, 276480);
    CHECK_EQ_U64(plan_coll_step_payload(&c[CO_TP_AG_FWD]), 2211840);
    CHECK_EQ_U64(c[CO_TP_AG_BWD].calls, 14);
    CHECK_EQ_U64(c[CO_TP_AG_BWD].payload_bytes, 266825);
    CHECK_EQ_U64(plan_coll_step_payload(&c[CO_TP_AG_BWD]), 3735552);
    CHECK_EQ_U64(c[CO_TP_AG_BWD].step_bytes, 1867776);
    CHECK_EQ_U64(c[CO_TP_RS_BWD].calls, 7);
    CHECK_EQ_U64(c[CO_TP_RS_BWD].payload_bytes, 278528);
    CHECK_EQ_U64(c[CO_TP_VOCAB_RS].calls, 4);
    CHECK_EQ_U64(c[CO_TP_VOCAB_AG].calls, 6);
    CHECK_EQ_U64(c[CO_TP_VOCAB_AG].payload_bytes, 262144);
    CHECK_EQ_U64(c[CO_TP_LOSS_AR].calls, 6);
    CHECK_EQ_U64(c[CO_TP_LOSS_AR].payload_bytes, 2048);
    CHECK_EQ_U64(c[CO_TP_NORM_GRAD_AR].payload_bytes, 651520);
    m.mtp_layers = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(c[CO_TP_AG_FWD].calls, 12);
    CHECK_EQ_U64(plan_coll_step_payload(&c[CO_TP_AG_FWD]), 3473408);
    CHECK_EQ_U64(c[CO_TP_AG_BWD].calls, 20);
    CHECK_EQ_U64(plan_coll_step_payload(&c[CO_TP_AG_BWD]), 5505024);
    CHECK_EQ_U64(c[CO_TP_RS_BWD].calls, 10);
    CHECK_EQ_U64(c[CO_TP_RS_BWD].payload_bytes, 294912);
    CHECK_EQ_U64(c[CO_TP_VOCAB_RS].calls, 6);
    CHECK_EQ_U64(c[CO_TP_VOCAB_AG].calls, 9);
    CHECK_EQ_U64(c[CO_TP_LOSS_AR].calls, 9);
    CHECK_EQ_U64(c[CO_TP_NORM_GRAD_AR].payload_bytes, 870400);
}

/* The dense-DP linear weight tensors a stage holds (Plan.linear_tensors: what FP8-LM's per-tensor FP8 gradient
 * all-reduces and the executor's per-tensor copies count, planner/plan_comm.c plan_dp_buckets), by hand from each
 * layer's real linears — not 4 a layer. Routed experts (their own class) and the router (with the norms) are not
 * among them; 2 layers (ox_moe: layer 0 dense, layer 1 MoE with 1 shared expert), tp 1, pp 1:
 *   dense, standard attention      QKV, projection, FC1, FC2: 4 + 4                                  =  8
 *   MoE layer without shared        QKV, projection: 4 + 2                                           =  6
 *   latent attention, no q latent   q, kv_down, kv_up, projection, FC1, FC2: 6 x 2 (both dense)     = 12
 *   latent attention, q latent      q_down, q_up, kv_down, kv_up, projection, FC1, FC2: 7 x 2       = 14
 *   DeepSeek-style: q latent, MoE layer 1 with its shared expert, an MTP depth (a MoE layer, as with
 *   experts the depth's block is): 7 + 7 + 7 + eh_proj 1                                           = 22
 * and, with FP8-LM's FP8 gradients at dp 2 on the executor's stack (fusion fp8plan, no sharding): one
 * dp_grad_allreduce call per linear weight tensor and one for the other parameters (norms, router, embedding):
 * 6 + 1 = 7 on the MoE layer without shared (the experts are all-reduced over their EDP group apart). */
static void test_linear_tensors_by_hand(void)
{
    static const struct {
        const char *what;
        int mla, q_lora, shared, mtp;
        uint64_t want;
    } cases[] = {
        {"dense + MoE with a shared expert", 0, 0, 1, 0, 8}, {"dense + MoE without a shared expert", 0, 0, 0, 0, 6},
        {"latent attention, no q latent", 1, 0, -1, 0, 12},  {"latent attention with a q latent", 1, 64, -1, 0, 14},
        {"DeepSeek-style with MTP", 1, 64, 1, 1, 22},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ModelSpec m = ox_moe(512);
        if (cases[i].mla) {
            ModelSpec l = mla_model(64, 32);
            m.head_dim = l.head_dim, m.qk_nope_head_dim = l.qk_nope_head_dim, m.qk_rope_head_dim = l.qk_rope_head_dim;
            m.v_head_dim = l.v_head_dim, m.kv_lora_rank = l.kv_lora_rank, m.q_lora_rank = (uint32_t)cases[i].q_lora;
        }
        if (cases[i].shared < 0) /* no experts: every layer dense */
            m.experts = m.experts_per_token = m.shared_experts = m.expert_ffn = m.dense_layers = 0;
        else
            m.shared_experts = (uint32_t)cases[i].shared;
        m.mtp_layers = (uint32_t)cases[i].mtp;
        GpuSpec g = fx_gpu();
        Recipe r = fx_bf16_recipe("bf16", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1;
        Plan p;
        if (!build(&in, &p)) return;
        CHECKF(p.linear_tensors == cases[i].want, "%s: %llu linear weight tensors, by hand %llu", cases[i].what,
               (unsigned long long)p.linear_tensors, (unsigned long long)cases[i].want);
    }
    ModelSpec m = ox_moe(512);
    m.shared_experts = 0;
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("fp8lm", 0);
    r.gemm.dt[STATE_GRAD] = DT_E4M3, r.gemm.scaled_mask |= 1u << STATE_GRAD;
    r.comm_dp_grad = DT_E4M3;
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 2, in.dp = 2, in.fusion = FUSE_FP8PLAN;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_AR].calls, 7);
}

int main(void)
{
    RUN(test_mla_kernel_bytes_in_rope);
    RUN(test_mla_kernel_bytes_whole);
    RUN(test_mla_weights);
    RUN(test_mla_layernorm_statistics);
    RUN(test_mla_backward_transient);
    RUN(test_mla_attention_output_gradient);
    RUN(test_mla_fp8_widest_output_gradient);
    RUN(test_qk_norm_transient);
    RUN(test_mla_tp_bytes);
    RUN(test_mtp_tp_bytes);
    RUN(test_linear_tensors_by_hand);
    return test_summary();
}
