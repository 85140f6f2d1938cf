/* tests/unit/test_exec_grad.c — the model's backward pass against finite
 * differences (FP32 path) and the BF16 path's gradients against the FP32 ones.
 *
 * For every parameter tensor, the analytic directional derivative g·u along a
 * random unit direction u (supported on that tensor only) is compared with the
 * central difference (L(w + h·u) − L(w − h·u)) / 2h of the FP32 model, h = 1e-2.
 * Tolerance, derived:
 *  - rounding: the loss is a mean of 64 per-token terms of size ≈ ln 64 ≈ 4.2,
 *    each carrying ~50 FP32 roundings (ε₃₂ = 6e-8) that average out over the
 *    tokens: |δL| ≈ 4.2·6e-8·√50/√64 ≈ 2.2e-7, so the difference quotient
 *    carries ≈ √2·2.2e-7 / 2h ≈ 1.6e-5; we allow 3σ = 5e-5 absolute;
 *  - truncation: (h²/6)·|L'''| ≈ 1.7e-5·|L'''| along a unit direction, with
 *    |L'''| of the order of the gradient itself: 2e-3 relative covers it.
 * A gradient wrong by 1 % (1e-4 on a typical g·u of 1e-2) fails. */
#include <math.h>
#include <stdlib.h>

#include "exec/model/model_internal.h"
#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum { FD_TOKENS = 4 * 16 };

static Model *make(const ModelSpec *spec, const char *recipe, Backend *bk, Comm *comm)
{
    Recipe r = fx_recipe(recipe);
    ModelHyper h = model_hyper_default();
    h.init_std = 0.1f; /* larger weights: larger, better-conditioned gradients */
    Model *g = NULL;
    Err e;
    if (fx_model(spec, &r, 4, 1, &h, bk, comm, &g, &e)) fprintf(stderr, "  model_create: %s\n", e.msg);
    return g;
}

static void add_scaled(Backend *bk, ModelParam *p, const float *u, float h)
{
    float *w = malloc(p->numel * sizeof(float));
    bk->copy_to_host(bk, w, p->weight, p->numel * sizeof(float), NULL);
    for (uint64_t i = 0; i < p->numel; i++) w[i] += h * u[i];
    bk->copy_to_device(bk, p->weight, w, p->numel * sizeof(float), NULL);
    free(w);
}

/* The q/k norms' weights set to 1 + 0.25·N(0, 1) (they start at 1, where a backward that left the weight
 * out of the input gradient would still agree with the differences). */
static uint64_t jitter_seed = 0; /* 0: none */
static void jitter_qk_norms(Model *g)
{
    if (!jitter_seed) return;
    Rng rng = {.s = jitter_seed};
    for (uint32_t i = 0; i < g->nparams; i++) {
        ModelParam *p = &g->params[i];
        if (p->kind != PK_QNORM_W && p->kind != PK_KNORM_W && p->kind != PK_QLAT_W && p->kind != PK_KVLAT_W &&
            p->kind != PK_ENORM_W && p->kind != PK_HNORM_W && p->kind != PK_MTPNORM_W)
            continue;
        float *w = malloc(p->numel * sizeof(float));
        CHECK(w != NULL);
        if (!w) return;
        for (uint64_t j = 0; j < p->numel; j++) w[j] = 1.0f + 0.25f * (float)rng_normal(&rng);
        g->bk->copy_to_device(g->bk, p->weight, w, p->numel * sizeof(float), NULL);
        free(w);
    }
}

/* Every parameter of one model against finite differences. */
static void fd_fp32(const ModelSpec *spec)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    CHECK(!comm_single_create(&comm, &e));
    Model *g = make(spec, "fp32", bk, comm);
    CHECK(g != NULL);
    if (!g) return;
    g->moe_aux_coeff = 0.0f; /* MoE: the loss model_loss reports is the cross-entropy alone */
    jitter_qk_norms(g);
    int32_t in[FD_TOKENS], tgt[FD_TOKENS];
    fx_tokens(g, 7, in, tgt);
    float loss;
    CHECK(!model_grads(g, in, tgt, &loss, &e));
    CHECK(loss > 3.0f && loss < 6.0f); /* near ln 64 = 4.16 at initialization */
    Rng rng = {.s = 99};
    const float h = 1e-2f;
    int checked = 0;
    for (uint32_t i = 0; i < g->nparams; i++) {
        ModelParam *p = &g->params[i];
        float *u = malloc(p->numel * sizeof(float)), *gr = malloc(p->numel * sizeof(float));
        bk->copy_to_host(bk, gr, p->grad, p->numel * sizeof(float), NULL);
        double dot = 0.0, norm = 0.0;
        for (uint64_t j = 0; j < p->numel; j++) {
            u[j] = (float)rng_normal(&rng);
            norm += (double)u[j] * u[j];
        }
        for (uint64_t j = 0; j < p->numel; j++) {
            u[j] = (float)(u[j] / sqrt(norm)); /* unit L2 norm: the step has length h */
            dot += (double)gr[j] * u[j];
        }
        float lp, lm;
        add_scaled(bk, p, u, h);
        CHECK(!model_loss(g, in, tgt, &lp, &e));
        add_scaled(bk, p, u, -2.0f * h);
        CHECK(!model_loss(g, in, tgt, &lm, &e));
        add_scaled(bk, p, u, h);
        double fd = ((double)lp - (double)lm) / (2.0 * h);
        double tol = 5e-5 + 2e-3 * fabs(dot);
        CHECKF(fabs(fd - dot) <= tol, "%s (layer %d): g.u = %.6g, finite difference %.6g", model_param_name(p->kind),
               p->layer, dot, fd);
        if (getenv("FD_VERBOSE"))
            printf("  %-8s %2d  g.u %+.6e  fd %+.6e  diff %.2e\n", model_param_name(p->kind), p->layer, dot, fd,
                   fabs(fd - dot));
        checked++;
        free(u);
        free(gr);
    }
    CHECK_EQ_INT(checked, (int)g->nparams);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

static void test_fd_fp32(void)
{
    ModelSpec m = fx_gpt();
    fd_fp32(&m);
}

/* LLaMA's pieces in the whole model: RMSNorm, SwiGLU, rotary positions, grouped-query attention,
 * an untied head, no biases — every tensor against finite differences, with the same tolerance. */
static void test_fd_fp32_llama(void)
{
    ModelSpec m = fx_llama();
    fd_fp32(&m);
}

/* A mixture-of-experts model (a dense block, then a MoE block with a shared expert, exec_fixtures.h's
 * fx_moe): the router (softmax with normalised top-2 weights; sigmoid with the group-limited selection),
 * the routed experts' grouped GEMMs, the combine and the shared expert against finite differences with
 * the same tolerance. The selection is piecewise constant: no token's top-2 changes within h here (a
 * change would show as a difference far above the tolerance). A sigmoid router's bias only steers the
 * selection: its gradient is 0, and so is its difference. */
static void test_fd_fp32_moe(void)
{
    ModelSpec m = fx_moe(ROUTER_SOFTMAX);
    fd_fp32(&m);
    m = fx_moe(ROUTER_SIGMOID);
    fd_fp32(&m);
}

/* Qwen3's q/k norms (an RMSNorm over each query head's and each key head's D values before the rotary
 * embedding, one weight vector for the query heads and one for the key heads): fx_llama's grouped-query
 * attention and fx_moe's experts with them, every tensor — the two norm weights of each block included,
 * jittered away from 1 — against finite differences with the same tolerance. The MoE model's jitter
 * seed is one where no token's top-2 changes within h (as in test_fd_fp32_moe; seeds 5, 7 and 11 flip
 * a selection, which shows as differences of ~3e-2, a thousand times the tolerance). */
static void test_fd_fp32_qk_norm(void)
{
    ModelSpec m = fx_llama();
    m.qk_norm = 1;
    jitter_seed = 5;
    fd_fp32(&m);
    m = fx_moe(ROUTER_SOFTMAX);
    m.qk_norm = 1;
    jitter_seed = 6;
    fd_fp32(&m);
    jitter_seed = 0;
}

/* Latent attention (fx_mla): the five projections, the two latents' RMSNorms (jittered off 1), the q/k/v
 * assembly with the RoPE key shared by the heads (its gradient the heads' sum) and the decoupled rotation, on a
 * dense model with and without a q latent and on a DeepSeek-style MoE model (dense first block, sigmoid
 * router, shared expert), every tensor against finite differences with the same tolerance. */
static void test_fd_fp32_mla(void)
{
    jitter_seed = 3;
    ModelSpec m = fx_mla(0, 16);
    fd_fp32(&m);
    m = fx_mla(0, 0);
    fd_fp32(&m);
    m = fx_mla(1, 16);
    fd_fp32(&m);
    jitter_seed = 0;
}

/* Multi-token prediction (model_mtp.c), depth 1: enorm over the next tokens' embedding, hnorm over the main
 * model's last block output, eh_proj over their concatenation, the depth's block, its final norm and the shared
 * head, the masked cross-entropy two tokens ahead weighted 0.3 in the objective (model_loss reports main + 0.3 x
 * MTP, the very objective model_grads differentiates). Every tensor against finite differences, the three MTP
 * norms jittered off 1: GPT-2's pieces (LayerNorm with biases on the MTP norms, learned positions and a tied head:
 * the embedding's gradient sums the main lookup, the MTP lookup and the head), LLaMA's (untied head) and the
 * DeepSeek-style latent-attention MoE (the depth's block a MoE block). A gradient that left out the MTP branch
 * (of the embedding, the head or x_final) would be off by its 0.3-weighted share, far above the tolerance. The
 * MoE model's jitter seed is one where no token's selection changes within h (as in test_fd_fp32_qk_norm).
 * Two and three depths (GPT-2's and LLaMA's pieces; the MoE model at two): depth 2's hnorm reads depth 1's block
 * output, so depth 1's block, eh_proj and norms get depth 2's gradient too, and the embedding and head sum one
 * lookup and one pass a depth more; a chain that dropped a depth's share (0.15 or 0.1 of the objective) would
 * miss by far more than the tolerance. */
static void test_fd_fp32_mtp(void)
{
    jitter_seed = 3;
    for (uint32_t D = 1; D <= 3; D++) {
        ModelSpec m = fx_gpt();
        m.mtp_layers = D;
        fd_fp32(&m);
        m = fx_llama();
        m.mtp_layers = D;
        fd_fp32(&m);
    }
    for (uint32_t D = 1; D <= 2; D++) {
        ModelSpec m = fx_mla(1, 16);
        m.mtp_layers = D;
        /* D 1: 1 and 4..15 flip a token's top-2 within h (differences of 6e-3..6e-2 on the routers); D 2: 1..6 and
         * 10..12 flip one (1 to 22 tensors off, 1e-3..3e-2), 7, 8 and 9 none */
        jitter_seed = D == 1 ? 2 : 7;
        fd_fp32(&m);
    }
    jitter_seed = 0;
}

/* What the finite differences cannot see: which tokens each depth reads and predicts. fx_llama with D depths,
 * 4 sequences of 16: depth k's position i reads token i+k (the last k positions token 0) and predicts the main
 * model's target at i+k (token i+k+1); its last k positions' losses are 0 and their d(logits) rows zeroed; the
 * loss model_loss reports is the main mean over 64 tokens + 0.3 / D x the sum of each depth's mean over its
 * 4 x (16 − k) valid positions: D 1, 0.3 x S1 / 60; D 2, 0.15 x (S1 / 60 + S2 / 56); D 3, 0.1 x (S1 / 60 + S2 / 56
 * + S3 / 52) (Megatron-Core's mtp_loss_scaling_factor / mtp_num_layers, each depth over its num_tokens). */
static void test_mtp_shift_and_mask(void)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    CHECK(!comm_single_create(&comm, &e));
    for (uint32_t D = 1; D <= 3; D++) {
        ModelSpec s = fx_llama();
        s.mtp_layers = D;
        Model *g = make(&s, "fp32", bk, comm);
        CHECK(g != NULL);
        if (!g) continue;
        int32_t in[FD_TOKENS], tgt[FD_TOKENS];
        fx_tokens(g, 7, in, tgt);
        float loss;
        CHECK(!model_loss(g, in, tgt, &loss, &e));
        const uint32_t T = g->seq, B = g->batch, Vp = (uint32_t)g->vocab_padded;
        CHECK_EQ_INT((int)(B * T), FD_TOKENS);
        CHECK_EQ_INT((int)g->mtp, (int)D);
        const ModelActs *a = &g->act; /* CPU backend: host memory */
        int bad_tok = 0, bad_tgt = 0, bad_mask = 0;
        double main = 0.0, obj = 0.0;
        for (uint32_t b = 0; b < B; b++)
            for (uint32_t i = 0; i < T; i++) main += a->losses[b * T + i];
        for (uint32_t d = 0; d < D; d++) {
            const MtpActs *ma = &a->mtp[d];
            const uint32_t k = d + 1;
            double sum = 0.0;
            for (uint32_t b = 0; b < B; b++)
                for (uint32_t i = 0; i < T; i++) {
                    uint32_t r = b * T + i;
                    bad_tok += ma->tok[r] != (i + k < T ? in[r + k] : 0);
                    bad_tgt += ma->tgt[r] != (i + k < T ? tgt[r + k] : 0);
                    sum += ma->losses[r];
                    if (i + k >= T) {
                        bad_mask += ma->losses[r] != 0.0f;
                        for (uint32_t v = 0; v < Vp; v++) bad_mask += ma->logits[(uint64_t)r * Vp + v] != 0.0f;
                    } else {
                        bad_mask += !(ma->losses[r] > 0.0f);
                    }
                }
            obj += 0.3 / D * sum / (4.0 * (16 - k)); /* 60, 56, 52 valid positions */
        }
        CHECK_EQ_INT(bad_tok, 0);
        CHECK_EQ_INT(bad_tgt, 0);
        CHECK_EQ_INT(bad_mask, 0);
        CHECK_REL(loss, main / 64.0 + obj, 1e-6);
        model_destroy(g);
    }
    comm->destroy(comm);
    bk->destroy(bk);
}

/* The BF16 path's gradients against the FP32 path's, from the same weights
 * (the BF16 model's weights are the FP32 ones rounded, so the comparison
 * includes that rounding). Tolerance, derived: BF16 keeps 8 significant bits
 * (unit roundoff 2^-9 ≈ 2e-3); activations, their gradients and the residual
 * stream are each rounded once per op, about 20 roundings along the longest
 * path of this 2-block model, so errors of ~20·2^-9 ≈ 4 % of a gradient's
 * size at most: we require the relative L2 error of each tensor's gradient
 * to stay below 5 % (random rounding errors partly cancel; ~1 % is typical). */
static void bf16_vs_fp32(const ModelSpec *spec)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    CHECK(!comm_single_create(&comm, &e));
    Model *g32 = make(spec, "fp32", bk, comm), *g16 = make(spec, "megatron-bf16", bk, comm);
    CHECK(g32 && g16);
    if (!g32 || !g16) return;
    int32_t in[FD_TOKENS], tgt[FD_TOKENS];
    fx_tokens(g32, 11, in, tgt);
    float l32, l16;
    CHECK(!model_grads(g32, in, tgt, &l32, &e));
    CHECK(!model_grads(g16, in, tgt, &l16, &e));
    CHECK_REL(l16, l32, 1e-2);
    for (uint32_t i = 0; i < g32->nparams; i++) {
        ModelParam *a = &g32->params[i], *b = &g16->params[i];
        CHECK_EQ_U64(a->numel, b->numel);
        const float *ga = a->grad, *gb = b->grad; /* CPU backend: host memory */
        double num = 0.0, den = 0.0;
        for (uint64_t j = 0; j < a->numel; j++) {
            num += ((double)ga[j] - gb[j]) * ((double)ga[j] - gb[j]);
            den += (double)ga[j] * ga[j];
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        if (getenv("FD_VERBOSE")) printf("  %-8s %2d rel %.4f\n", model_param_name(a->kind), a->layer, rel);
        CHECKF(rel < 0.05, "%s (layer %d): relative L2 error %.4f", model_param_name(a->kind), a->layer, rel);
    }
    model_destroy(g32);
    model_destroy(g16);
    comm->destroy(comm);
    bk->destroy(bk);
}

static void test_bf16_vs_fp32(void)
{
    ModelSpec m = fx_gpt();
    bf16_vs_fp32(&m);
    m = fx_llama();
    bf16_vs_fp32(&m);
    m = fx_mla(0, 16);
    bf16_vs_fp32(&m);
    m = fx_gpt(); /* with an MTP depth: a block, three norms, eh_proj and a second head pass more on the path */
    m.mtp_layers = 1;
    bf16_vs_fp32(&m);
    m.mtp_layers = 2; /* and two: the second depth's on the first's output */
    bf16_vs_fp32(&m);
}

/* Gradient accumulation: two micro-batches of 4 sequences give the gradients of one batch of 8 (the
 * mean loss over all 8, the dloss of each micro-batch 1/(2·64)). The FP32 path differs only in the
 * order of the FP32 sums (each gradient is ≤ 64 terms per micro-batch): relative L2 error 1e-5 allows
 * 10^2 ulps of FP32. A main gradient kept in BF16 is rounded once per micro-batch instead of once: two
 * BF16 roundings (unit roundoff 2^-9 each) against one, 1 % covers it and fails a gradient that drops or
 * doubles a micro-batch (50 % off). */
static void accumulation(const char *what, Recipe r, double tol, ModelSpec spec)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    CHECK(!comm_single_create(&comm, &e));
    ModelHyper h = model_hyper_default();
    h.init_std = 0.1f;
    Model *acc = NULL, *one = NULL;
    CHECK(!fx_model(&spec, &r, 4, 2, &h, bk, comm, &acc, &e));
    CHECK(!fx_model(&spec, &r, 8, 1, &h, bk, comm, &one, &e));
    if (!acc || !one) return;
    acc->moe_aux_coeff = one->moe_aux_coeff = 0.0f; /* MoE: the auxiliary loss is per micro-batch, not additive */
    CHECK_EQ_INT(acc->microbatches, 2);
    CHECK_EQ_U64(model_step_tokens(acc), model_step_tokens(one));
    int32_t in[8 * 16], tgt[8 * 16];
    fx_tokens(one, 21, in, tgt);
    float la, l1;
    CHECK(!model_grads(acc, in, tgt, &la, &e));
    CHECK(!model_grads(one, in, tgt, &l1, &e));
    CHECK_REL(la, l1, 1e-6);
    for (uint32_t i = 0; i < one->nparams; i++) {
        ModelParam *a = &acc->params[i], *b = &one->params[i];
        Dtype gd = model_states(one, b)->dt[STATE_GRAD];
        double num = 0.0, den = 0.0;
        for (uint64_t j = 0; j < a->numel; j++) {
            double x = elem_load(a->grad, gd, j), y = elem_load(b->grad, gd, j);
            num += (x - y) * (x - y);
            den += y * y;
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        CHECKF(rel <= tol, "%s %s (layer %d): accumulated vs whole batch, relative L2 error %.3g", what,
               model_param_name(a->kind), a->layer, rel);
    }
    model_destroy(acc);
    model_destroy(one);
    comm->destroy(comm);
    bk->destroy(bk);
}

static void test_accumulation_equals_the_whole_batch(void)
{
    accumulation("fp32", fx_recipe("fp32"), 1e-5, fx_llama());
    Recipe r = fx_recipe("fp32");
    r.gemm.dt[STATE_GRAD] = r.other.dt[STATE_GRAD] = DT_BF16; /* main gradients in BF16: staged, stored back */
    accumulation("bf16 grads", r, 1e-2, fx_llama());
    /* MoE: each token is routed alone, so two micro-batches route as the whole batch does; the routed
     * experts' gradients accumulate over both (their groups' rows differ per micro-batch) */
    accumulation("moe softmax fp32", fx_recipe("fp32"), 1e-5, fx_moe(ROUTER_SOFTMAX));
    accumulation("moe sigmoid fp32", fx_recipe("fp32"), 1e-5, fx_moe(ROUTER_SIGMOID));
}

int main(void)
{
    RUN(test_fd_fp32);
    RUN(test_fd_fp32_llama);
    RUN(test_fd_fp32_moe);
    RUN(test_fd_fp32_qk_norm);
    RUN(test_fd_fp32_mla);
    RUN(test_fd_fp32_mtp);
    RUN(test_mtp_shift_and_mask);
    RUN(test_bf16_vs_fp32);
    RUN(test_accumulation_equals_the_whole_batch);
    return test_summary();
}
