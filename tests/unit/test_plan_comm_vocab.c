/* tests/unit/test_plan_comm_vocab.c — the TP collectives outside the layers (planner/plan_comm_vocab.c):
 * the vocabulary-parallel embedding, LM head and cross-entropy, and the all-reduce of the gradients of the
 * parameters every TP rank holds whole. Every expected byte count is worked out by hand in the comment
 * beside it.
 *
 * The models are tests/cli/mpi_tp.sh's, so the executor's measured bytes can be read against these:
 *   tiny-gpt    2 layers, hidden 32, FFN 128 (GeLU), 2 heads of 16, vocab 64, seq 16, LayerNorm (64 values:
 *               weight + bias), learned positions, tied embeddings, linear biases
 *   tiny-llama  2 layers, hidden 32, FFN 96 (SwiGLU), 4 heads of 8 (4 KV heads here: TP 4 divides them),
 *               vocab 64, seq 16, RMSNorm (32 weights), RoPE, untied, no biases
 * Micro-batch 2 x 16 = 32 tokens (tok), global batch 8 sequences: m = 4 micro-batches a step, dp 1.
 * A [tok, hidden] BF16 tensor is 32 x 32 x 2 = 2,048 B (S). Bus bytes (nccl-tests): all-gather and
 * reduce-scatter S (n-1)/n, all-reduce 2 S (n-1)/n. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

/* support/fixtures.c's tiny model (2 layers, LayerNorm, GeLU, learned positions, tied, biases) at
 * mpi_tp.sh's sizes */
static ModelSpec tiny_gpt(void)
{
    ModelSpec m = fx_tiny_model();
    snprintf(m.name, sizeof m.name, "tiny-gpt");
    m.hidden = 32, m.ffn_hidden = 128, m.head_dim = 16, m.vocab = 64, m.seq_len = 16;
    return m;
}

static ModelSpec tiny_llama(void)
{
    ModelSpec m = tiny_gpt();
    snprintf(m.name, sizeof m.name, "tiny-llama");
    m.ffn_hidden = 96, m.heads = m.kv_heads = 4, m.head_dim = 8;
    m.norm = NORM_RMSNORM, m.mlp = MLP_SWIGLU, m.pos = POS_ROPE, m.tied_embeddings = 0, m.linear_bias = 0;
    return m;
}

/* A model on fx_gpu() with megatron-bf16 at TP tp (sp on or off), pp 1, dp 1, micro-batch 2 of seq 16,
 * global batch 8; the input points into the case, which must outlive the plans built from it. */
typedef struct {
    ModelSpec m;
    GpuSpec g;
    Recipe r;
    PlanInput in;
} Case;

static void setup(Case *c, ModelSpec m, uint32_t tp, int sp)
{
    c->m = m, c->g = fx_gpu(), c->r = fx_bf16_recipe("megatron-bf16", 0);
    c->in = fx_input(&c->m, &c->g, &c->r);
    c->in.tp = tp, c->in.pp = 1, c->in.dp = 1, c->in.cp = 1, c->in.sp = sp;
    c->in.mbs = 2, c->in.gbs = 8, c->in.seq = 16;
}

static void build(const Case *c, Plan *p)
{
    Err e = {0};
    CHECKF(plan_build(&c->in, p, &e) == ST_OK, "%s", e.msg);
}

/* one collective: calls per step, payload per call, bus bytes per call, dtype */
static void expect(const Plan *p, CollectiveId id, uint64_t calls, uint64_t payload, uint64_t bus, Dtype dt)
{
    const Collective *c = &p->coll[id];
    const char *nm = coll_name(id);
    CHECKF(c->calls == calls, "%s: %llu calls, want %llu", nm, (unsigned long long)c->calls, (unsigned long long)calls);
    if (!calls) return;
    CHECKF(c->payload_bytes == payload, "%s: payload %llu, want %llu", nm, (unsigned long long)c->payload_bytes,
           (unsigned long long)payload);
    CHECKF(c->bus_bytes == bus, "%s: bus %llu, want %llu", nm, (unsigned long long)c->bus_bytes,
           (unsigned long long)bus);
    CHECK_EQ_U64(c->step_bytes, calls * bus);
    CHECK(c->dtype == dt);
    CHECK(c->time_s > 0 && c->exposed_s == c->time_s); /* nothing hides them */
}

/* tiny-gpt, TP 2 with SP, megatron-bf16. Per micro-batch:
 *   embedding: learned positions, so the partial embeddings are all-reduced (not reduce-scattered): 1 AR,
 *              payload S = 2,048, bus 2 x 2,048 x 1/2 = 2,048; backward its output gradient gathered (1 AG)
 *   LM head:   input gathered forward and again backward (2 AG), input gradient reduce-scattered (1 RS);
 *              AG/RS bus 2,048 x 1/2 = 1,024
 *   loss:      3 AR of 32 tokens x 4 B = 128 B FP32, bus 2 x 128 x 1/2 = 128
 * x 4 micro-batches: AR 4 calls (8,192 B), AG 12 (12,288 B), RS 4 (4,096 B), loss 12 (1,536 B).
 * Once a step: the replicated parameters' FP32 gradients: per layer 2 LayerNorms x 64 + the proj and FC2
 * biases 2 x 32 = 192, x 2 layers = 384, + the final LayerNorm 64 = 448 values x 4 B = 1,792 B, bus
 * 2 x 1,792 x 1/2 = 1,792 (the learned position table is not in it: its gradient comes from the gathered
 * output gradient, whole on every rank). */
static void test_gpt_tp2_sp(void)
{
    Case c;
    setup(&c, tiny_gpt(), 2, 1);
    Plan p;
    build(&c, &p);
    CHECK_EQ_U64(p.microbatches, 4);
    expect(&p, CO_TP_VOCAB_AR, 4, 2048, 2048, DT_BF16);
    expect(&p, CO_TP_VOCAB_AG, 12, 2048, 1024, DT_BF16);
    expect(&p, CO_TP_VOCAB_RS, 4, 2048, 1024, DT_BF16);
    expect(&p, CO_TP_LOSS_AR, 12, 128, 128, DT_FP32);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 1792, 1792, DT_FP32);
    CHECK(!strcmp(coll_name(CO_TP_LOSS_AR), "tp_loss_allreduce"));
    CHECK(coll_op(CO_TP_VOCAB_RS) == OP_REDUCE_SCATTER && coll_group(CO_TP_NORM_GRAD_AR) == GROUP_TP);
    /* a plan holds no labels: they are the rows', and an id past the rows (or a negative one, which wraps as
     * unsigned) names nothing, never a read past the table: "?", GROUP_COUNT_, OP_COUNT_; a term "?", overhead,
     * not persistent */
    CHECK_STR(coll_name(CO_COUNT_), "?");
    CHECK_STR(coll_name((CollectiveId)-1), "?");
    CHECK(coll_group(CO_COUNT_) == GROUP_COUNT_ && coll_group((CollectiveId)-1) == GROUP_COUNT_);
    CHECK(coll_op(CO_COUNT_) == OP_COUNT_ && coll_op((CollectiveId)-1) == OP_COUNT_);
    CHECK_STR(mem_term_name(MT_COUNT_), "?");
    CHECK(mem_term_category(MT_COUNT_) == MC_OVERHEAD && !mem_term_persistent((MemTermId)-1));
    /* counted with TP: layers (per layer and micro-batch 2 AG + 2 RS forward, 4 AG + 2 RS backward, 1,024
     * each: 10 x 1,024 x 2 layers x 4 = 81,920) + 8,192 + 12,288 + 4,096 + 1,536 + 1,792 = 109,824 */
    CHECK_EQ_U64(p.tp_comm_bytes, 109824);
}

/* The same model with the BF16 main gradient (main_grad bf16): the norm gradients travel in BF16,
 * 448 x 2 = 896 B, bus 896. */
static void test_gpt_bf16_main_grad(void)
{
    Case c;
    setup(&c, tiny_gpt(), 2, 1);
    c.in.main_grad = MAIN_GRAD_BF16;
    Plan p;
    build(&c, &p);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 896, 896, DT_BF16);
}

/* tiny-gpt, TP 2 without SP: the embedding's partial sums all-reduced forward (nothing backward), the LM
 * head's input gradient all-reduced backward: 2 AR a micro-batch, 8 a step, payload 2,048, bus 2,048
 * (16,384 B); no gathers or scatters; the loss as with SP (12 x 128); no norm gradient to reduce (every
 * rank saw every token; no q/k norms). */
static void test_gpt_tp2_no_sp(void)
{
    Case c;
    setup(&c, tiny_gpt(), 2, 0);
    Plan p;
    build(&c, &p);
    expect(&p, CO_TP_VOCAB_AR, 8, 2048, 2048, DT_BF16);
    expect(&p, CO_TP_VOCAB_AG, 0, 0, 0, DT_NONE);
    expect(&p, CO_TP_VOCAB_RS, 0, 0, 0, DT_NONE);
    expect(&p, CO_TP_LOSS_AR, 12, 128, 128, DT_FP32);
    expect(&p, CO_TP_NORM_GRAD_AR, 0, 0, 0, DT_NONE);
}

/* tiny-llama, TP 4 with SP (RoPE: the partial embeddings reduce-scattered to the sequence shards). Per
 * micro-batch: RS 2 (embedding forward, LM-head input gradient), AG 3 (embedding gradient, LM-head input
 * twice), loss 3. At 4 ranks AG/RS bus 2,048 x 3/4 = 1,536; the loss's 128 B all-reduce 2 x 128 x 3/4 = 192.
 * x 4: RS 8 calls (12,288 B), AG 12 (18,432 B), loss 12 (2,304 B), no all-reduce of the embedding.
 * Norm gradients: per layer 2 RMSNorms x 32 = 64, x 2 = 128, + the final 32 = 160 values x 4 B = 640 B,
 * bus 2 x 640 x 3/4 = 960 (no biases). */
static void test_llama_tp4_sp(void)
{
    Case c;
    setup(&c, tiny_llama(), 4, 1);
    Plan p;
    build(&c, &p);
    expect(&p, CO_TP_VOCAB_AR, 0, 0, 0, DT_NONE);
    expect(&p, CO_TP_VOCAB_RS, 8, 2048, 1536, DT_BF16);
    expect(&p, CO_TP_VOCAB_AG, 12, 2048, 1536, DT_BF16);
    expect(&p, CO_TP_LOSS_AR, 12, 128, 192, DT_FP32);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 640, 960, DT_FP32);
}

/* Q/K norms (Qwen3-style, head_dim 8: 2 x 8 = 16 weights a layer) are reduced over TP with or without SP:
 * without SP 2 layers x 16 = 32 values, 128 B, bus at TP 2 128; with SP 2 x (64 + 16) + 32 = 192 values,
 * 768 B, bus 768. */
static void test_qk_norm(void)
{
    Case c;
    ModelSpec m = tiny_llama();
    m.qk_norm = 1;
    setup(&c, m, 2, 0);
    Plan p;
    build(&c, &p);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 128, 128, DT_FP32);
    c.in.sp = 1;
    build(&c, &p);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 768, 768, DT_FP32);
}

/* PP 2: the embedding's collectives are the first stage's, the head's and the loss's the last one's; the
 * plan reports one stage (Plan.stage). Stage 0 (1 layer): AR 4 (embedding), AG 4 (its gradient), no RS, no
 * loss; norm gradients 192 values = 768 B. The last stage (1 layer): AG 8, RS 4, loss 12, no AR; norm
 * gradients 192 + 64 = 256 values = 1,024 B. */
static void test_gpt_pp2_stage_ends(void)
{
    Case c;
    setup(&c, tiny_gpt(), 2, 1);
    c.in.pp = 2;
    Plan p;
    build(&c, &p);
    if (p.stage == 0) {
        expect(&p, CO_TP_VOCAB_AR, 4, 2048, 2048, DT_BF16);
        expect(&p, CO_TP_VOCAB_AG, 4, 2048, 1024, DT_BF16);
        expect(&p, CO_TP_VOCAB_RS, 0, 0, 0, DT_NONE);
        expect(&p, CO_TP_LOSS_AR, 0, 0, 0, DT_NONE);
        expect(&p, CO_TP_NORM_GRAD_AR, 1, 768, 768, DT_FP32);
    } else {
        CHECK_EQ_U64(p.stage, 1);
        expect(&p, CO_TP_VOCAB_AR, 0, 0, 0, DT_NONE);
        expect(&p, CO_TP_VOCAB_AG, 8, 2048, 1024, DT_BF16);
        expect(&p, CO_TP_VOCAB_RS, 4, 2048, 1024, DT_BF16);
        expect(&p, CO_TP_LOSS_AR, 12, 128, 128, DT_FP32);
        expect(&p, CO_TP_NORM_GRAD_AR, 1, 1024, 1024, DT_FP32);
    }
}

/* TP 1: none of them. */
static void test_tp1_none(void)
{
    Case c;
    setup(&c, tiny_gpt(), 1, 0);
    Plan p;
    build(&c, &p);
    for (int i = CO_TP_VOCAB_AR; i <= CO_TP_NORM_GRAD_AR; i++) CHECK_EQ_U64(p.coll[i].calls, 0);
}

/* Their time is on the critical path even where the layers' TP collectives may hide entirely (overlap 1):
 * the step's TP seconds hold at least the four per-micro-batch rows' times (one stage: it is the slowest),
 * and the per-step "other" time holds the norm-gradient all-reduce. (test_oracle_time.c works the exact
 * seconds out by hand.) */
static void test_time_on_critical_path(void)
{
    Case c;
    setup(&c, tiny_gpt(), 2, 1);
    c.in.overlap_tp = 1; /* the layers' collectives may hide; these may not */
    Plan p;
    build(&c, &p);
    double vocab = p.coll[CO_TP_VOCAB_AR].time_s + p.coll[CO_TP_VOCAB_AG].time_s + p.coll[CO_TP_VOCAB_RS].time_s +
                   p.coll[CO_TP_LOSS_AR].time_s;
    CHECK(vocab > 0);
    CHECK(p.time.tp_comm_s >= vocab * (1 - 1e-12));
    CHECK(p.time.other_s >= p.coll[CO_TP_NORM_GRAD_AR].time_s * (1 - 1e-12));
    CHECK(p.coll[CO_TP_NORM_GRAD_AR].time_s > 0);
}

/* A MoE model (mixtral-8x7b from the catalog: 32 layers, hidden 4096, 8 experts, RMSNorm, RoPE, seq 32768,
 * vocab 32000) at TP 2 with SP, EP 8, DP 8, PP 1, micro-batch 1, global batch 64: m = 64 / 8 = 8. The
 * vocabulary collectives as a dense model's: S = 32,768 x 4,096 x 2 = 268,435,456 B, reduce-scatters 2 x 8
 * = 16, all-gathers 3 x 8 = 24 (bus S / 2), loss 3 x 8 = 24 of 131,072 B (bus 131,072). The replicated
 * gradients (FP32 main gradient): per layer 2 RMSNorms x 4,096 + the router 8 x 4,096 (Megatron marks the
 * router weight sequence_parallel) = 40,960, x 32 = 1,310,720, + the final norm 4,096 = 1,314,816 values
 * x 4 B = 5,259,264 B, bus 5,259,264. */
static void test_moe_router_and_norms(void)
{
    Catalog *c = fx_catalog();
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(c, "mixtral-8x7b");
    in.gpu = catalog_gpu(c, "h100-sxm");
    in.recipe = catalog_recipe(c, "megatron-bf16");
    in.tp = 2, in.sp = 1, in.ep = 8, in.dp = 8, in.pp = 1, in.mbs = 1, in.gbs = 64;
    in.main_grad = MAIN_GRAD_FP32;
    Plan p;
    Err e = {0};
    CHECKF(in.model && plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    expect(&p, CO_TP_VOCAB_AR, 0, 0, 0, DT_NONE);
    expect(&p, CO_TP_VOCAB_RS, 16, 268435456, 134217728, DT_BF16);
    expect(&p, CO_TP_VOCAB_AG, 24, 268435456, 134217728, DT_BF16);
    expect(&p, CO_TP_LOSS_AR, 24, 131072, 131072, DT_FP32);
    expect(&p, CO_TP_NORM_GRAD_AR, 1, 5259264, 5259264, DT_FP32);
    free(c);
}

int main(void)
{
    RUN(test_gpt_tp2_sp);
    RUN(test_gpt_bf16_main_grad);
    RUN(test_gpt_tp2_no_sp);
    RUN(test_llama_tp4_sp);
    RUN(test_qk_norm);
    RUN(test_gpt_pp2_stage_ends);
    RUN(test_tp1_none);
    RUN(test_time_on_critical_path);
    RUN(test_moe_router_and_norms);
    return test_summary();
}
