/* tests/unit/test_exec_moe_model.c — the executor's mixture-of-experts layers
 * (exec/model/model_moe.c) in the whole model on the CPU backend, one rank.
 *
 *   - a tiny MoE model (exec_fixtures.h's fx_moe: a dense block, then a MoE block
 *     of 4 experts, top-2, one shared expert) trains with megatron-bf16, te-fp8,
 *     te-fp8-current and deepseek-v3, softmax and sigmoid routers: over 50 steps of the
 *     synthetic stream (B=4, T=16, V=64; its entropy is far below ln 64 = 4.16)
 *     the mean loss of the last 5 steps is at least 30 % below the first step's,
 *     and the FP8 runs' within FP8_LOSS_REL (deepseek-v3: DS_LOSS_REL) of the BF16 run's;
 *   - the FP8 experts' grouped GEMMs equal a per-expert loop of gemm() bit for
 *     bit in training (losses and expert weights after three steps), 4 experts
 *     and 64 experts top-8, per-tensor and block scales (the loop places each
 *     group's scales by the descriptor's conventions, written out here);
 *   - routing bookkeeping by hand: every micro-batch routes each of its B·T
 *     tokens to k experts, so a step of `micro` micro-batches counts
 *     micro·B·T·k = 2·4·16·2 = 256 rows over the experts of each MoE layer;
 *   - a sigmoid router's bias after one step: each expert's bias, 0 at start,
 *     moved by exactly +1e-3 (below the mean load), −1e-3 (above) or 0 (at it)
 *     — FP32 0 + 0.001f is 0.001f exactly;
 *   - a real expert count: 64 experts, top-8 (fine-grained, expert FFN 8): three
 *     steps, finite losses, 4·16·8 = 512 rows per step;
 *   - refusals before any work: an FP8 recipe the experts do not run (fp8lm),
 *     data parallelism, top-k above the experts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/data.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum { B = 4, T = 16 };

typedef struct {
    Backend *bk;
    Comm *comm;
    Model *g;
} Run;

static int open_run(Run *r, const ModelSpec *s, const char *recipe, uint32_t micro)
{
    Err e;
    memset(r, 0, sizeof *r);
    Recipe rc = fx_recipe(recipe);
    if (backend_cpu_create(&r->bk, &e) || comm_single_create(&r->comm, &e) ||
        fx_model(s, &rc, B, micro, NULL, r->bk, r->comm, &r->g, &e)) {
        fprintf(stderr, "  %s: %s\n", s->name, e.msg);
        return 0;
    }
    return 1;
}

static void close_run(Run *r)
{
    model_destroy(r->g);
    if (r->comm) r->comm->destroy(r->comm);
    if (r->bk) r->bk->destroy(r->bk);
}

/* 50 steps of the synthetic stream under `recipe`; the mean loss of the last 5 steps (NAN when the run
 * failed), at least 30 % below the first step's. */
static double trains_spec(ModelSpec s, const char *recipe)
{
    Run r;
    CHECK(open_run(&r, &s, recipe, 1));
    DataStream d;
    Err e;
    CHECK(r.g && !data_synthetic(&d, s.vocab, 1, &e));
    if (!r.g) {
        close_run(&r);
        return NAN;
    }
    int32_t in[B * T], tgt[B * T];
    double first = 0.0, tail = 0.0;
    int ok = 1;
    for (int i = 0; ok && i < 50; i++) {
        float loss;
        data_next(&d, B, T, in, tgt);
        ok = !model_step(r.g, in, tgt, &loss, &e);
        CHECKF(ok, "step %d: %s", i, ok ? "" : e.msg);
        if (i == 0) first = loss;
        if (i >= 45) tail += loss / 5.0;
    }
    printf("  %s, %s: first %.4f, last 5 steps %.4f\n", s.name, recipe, first, tail);
    CHECK(isfinite(tail));
    CHECKF(tail < 0.7 * first, "%s, %s: %.4f -> %.4f", s.name, recipe, first, tail);
    data_free(&d);
    close_run(&r);
    return ok ? tail : NAN;
}

static double trains(RouterType rt, const char *recipe) { return trains_spec(fx_moe(rt), recipe); }

/* Every recipe the executor runs on experts trains; the FP8 ones (the experts' grouped GEMMs in FP8,
 * exec/model/model_moe_fp8.c, as the dense linears) end within FP8_LOSS_REL of the BF16 run:
 *   FP8_LOSS_REL = 2^-4 = 0.0625, E4M3's unit roundoff (3 mantissa bits: a round-to-nearest cast is off
 *   by at most half an ulp, 2^-3 / 2 of the value). Every GEMM input of the FP8 run carries a relative
 *   error of at most that much (E5M2 gradients 2^-3, but they move the weights through Adam, whose
 *   update m/sqrt(v) is insensitive to a common relative error), so its logits, and the smooth loss
 *   of them, stay within that relative distance of the BF16 run's while the two runs see the same
 *   data from the same initial weights; a scale applied wrongly (a transposed copy read with another
 *   expert's scale_inv, a history never updated) is off by far more (this tree: 0.06 % apart). */
#define FP8_LOSS_REL 0.0625
/* deepseek-v3 (exec/model/model_moe_block.c): E4M3 for every operand, dY included (2^-4 as above), and the
 * 14-bit partial sums: each add inside a 128-long K block truncates to 14 significant bits, a relative
 * error below 2^-13 of the partial sum, at most 127 of them before the FP32 promotion: 127 x 2^-13 < 2^-6
 * of the block's sum of |products|. DS_LOSS_REL = 2^-4 + 2^-6 = 0.078125 (this tree: 0.02 % apart here; the shrunk Mixtral of
 * docs/executor-moe.md, 50 steps, 1.0 %). */
#define DS_LOSS_REL (0.0625 + 0.015625)
static void test_moe_trains(void)
{
    static const char *const fp8[] = {"te-fp8", "te-fp8-current", "deepseek-v3"};
    const RouterType rts[2] = {ROUTER_SOFTMAX, ROUTER_SIGMOID};
    for (int i = 0; i < 2; i++) {
        double bf16 = trains(rts[i], "megatron-bf16");
        for (int j = 0; j < 3; j++) {
            double f = trains(rts[i], fp8[j]), bound = j == 2 ? DS_LOSS_REL : FP8_LOSS_REL;
            CHECKF(fabs(f - bf16) <= bound * bf16, "%s: %.4f vs BF16 %.4f (%.2f %%)", fp8[j], f, bf16,
                   100 * fabs(f - bf16) / bf16);
        }
    }
}

/* Latent attention trains (exec/model/model_mla.c): a dense model, one without a q latent and a DeepSeek-style
 * MoE model (sigmoid router, shared expert, dense first block), loss at least 30 % down over 50 steps: BF16
 * within 5 % of FP32 (BF16's ~20 roundings of 2^-9 along a path, as test_exec_grad's bound); te-fp8,
 * te-fp8-current and (dense) deepseek-v3's block scales within FP8_LOSS_REL of BF16 (defined above). */
static void test_mla_trains(void)
{
    const ModelSpec ms[3] = {fx_mla(0, 16), fx_mla(0, 0), fx_mla(1, 16)};
    static const char *const fp8[] = {"te-fp8", "te-fp8-current", "deepseek-v3"};
    for (int i = 0; i < 3; i++) {
        double b = trains_spec(ms[i], "megatron-bf16"), f = trains_spec(ms[i], "fp32");
        CHECKF(fabs(b - f) <= 0.05 * f, "%s: BF16 %.4f vs FP32 %.4f", ms[i].name, b, f);
        for (int j = 0; j < (i < 2 ? 3 : 2); j++) { /* block-scaled experts are not run yet */
            double q = trains_spec(ms[i], fp8[j]);
            CHECKF(fabs(q - b) <= FP8_LOSS_REL * b, "%s, %s: %.4f vs BF16 %.4f", ms[i].name, fp8[j], q, b);
        }
    }
}

/* ---- the FP8 experts' grouped GEMMs against a per-expert loop of gemm() ---------------------------- */

static Backend *loop_bk; /* the backend whose gemm() the loops call */

/* Group g of a grouped GEMM as its own GemmDesc, built here from the descriptor's conventions
 * (exec/backend/backend_desc.h), then gemm(). */
static Status loop_grouped(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    (void)bk;
    int32_t cnt[64];
    Status st = loop_bk->copy_to_host(loop_bk, cnt, d->counts, d->groups * sizeof *cnt, e);
    size_t ea = dtype_bytes(d->a.dtype), eb = dtype_bytes(d->b.dtype), ed = dtype_bytes(d->d.dtype);
    for (uint64_t g = 0, r0 = 0; !st && g < d->groups; r0 += (uint64_t)cnt[g], g++) {
        if (!cnt[g]) continue;
        GemmDesc q = {
            .m = (uint64_t)cnt[g], .n = d->n, .k = d->k, .accum = d->accum, .acc_precision = d->acc_precision};
        q.a = d->a, q.b = d->b, q.d = d->d;
        q.a.ptr = (const char *)d->a.ptr + (d->a.layout == GEMM_K_INNER ? r0 * d->k : r0) * ea;
        q.a.ld = d->a.layout == GEMM_K_INNER ? d->k : d->rows;
        q.b.ptr = (const char *)d->b.ptr + g * d->n * d->k * eb;
        /* scales: per-tensor one a group; 1x128 A (rows, ceil(K/128)) from row r0; 128x128 B a group's own */
        const uint64_t tk = (d->k + 127) / 128, tn = (d->n + 127) / 128;
        if (q.a.scale_inv) q.a.scale_inv += d->a.scale_gran == GRAN_1X128 ? r0 * tk : g;
        if (q.b.scale_inv) q.b.scale_inv += d->b.scale_gran == GRAN_128X128 ? g * tn * tk : g;
        q.d.ptr = (char *)d->d.ptr + r0 * d->n * ed;
        st = loop_bk->gemm(loop_bk, &q, e);
    }
    return st;
}

/* The weight gradient: group g sums over its rows [r0, r0 + k_g) (K). */
static Status loop_wgrad(Backend *bk, const GroupedWgradDesc *d, Err *e)
{
    (void)bk;
    int32_t cnt[64];
    Status st = loop_bk->copy_to_host(loop_bk, cnt, d->counts, d->groups * sizeof *cnt, e);
    size_t ea = dtype_bytes(d->a.dtype), eb = dtype_bytes(d->b.dtype);
    for (uint64_t g = 0, r0 = 0, t0 = 0; !st && g < d->groups;
         r0 += (uint64_t)cnt[g], t0 += (cnt[g] + 127) / 128, g++) {
        float *dg = (float *)d->d.ptr + g * d->m * d->n;
        if (!cnt[g]) {
            if (d->accum == GEMM_OVERWRITE) memset(dg, 0, d->m * d->n * sizeof *dg);
            continue;
        }
        GemmDesc q = {
            .m = d->m, .n = d->n, .k = (uint64_t)cnt[g], .accum = d->accum, .acc_precision = d->acc_precision};
        q.a = d->a, q.b = d->b, q.d = d->d;
        q.a.ptr = (const char *)d->a.ptr + (d->a.layout == GEMM_K_INNER ? r0 : r0 * d->m) * ea;
        q.a.ld = d->a.layout == GEMM_K_INNER ? d->rows : d->m;
        q.b.ptr = (const char *)d->b.ptr + (d->b.layout == GEMM_K_INNER ? r0 : r0 * d->n) * eb;
        q.b.ld = d->b.layout == GEMM_K_INNER ? d->rows : d->n;
        /* 1x128 tiles along K from the group's first row: (M, ceil(k_g/128)) after the t0 tiles before it */
        if (q.a.scale_inv) q.a.scale_inv += d->a.scale_gran == GRAN_1X128 ? d->m * t0 : g;
        if (q.b.scale_inv) q.b.scale_inv += d->b.scale_gran == GRAN_1X128 ? d->n * t0 : g;
        q.d.ptr = dg;
        st = loop_bk->gemm(loop_bk, &q, e);
    }
    return st;
}

/* Three steps of `recipe` on s, with the grouped GEMMs (loop 0) or the loops above (loop 1): the
 * losses and the routed experts' FP32 masters afterwards (FC1 then FC2 of block 1). */
static int steps_of(const ModelSpec *s, const char *recipe, int loop, float *loss, float **master, uint64_t *n)
{
    Run r;
    int ok = open_run(&r, s, recipe, 2);
    CHECK(ok);
    if (!ok) {
        close_run(&r);
        return 0;
    }
    if (loop) {
        loop_bk = r.bk;
        r.bk->grouped_gemm = loop_grouped;
        r.bk->grouped_gemm_wgrad = loop_wgrad;
    }
    int32_t *in = malloc(model_step_tokens(r.g) * sizeof *in), *tgt = malloc(model_step_tokens(r.g) * sizeof *tgt);
    Err e;
    for (int i = 0; ok && in && tgt && i < 3; i++) {
        fx_tokens(r.g, 40 + (uint64_t)i, in, tgt);
        ok = !model_step(r.g, in, tgt, &loss[i], &e);
        CHECKF(ok, "%s step %d: %s", recipe, i, ok ? "" : e.msg);
    }
    ModelParam *w1 = model_find_param(r.g, PK_XFC1_W, 1), *w2 = model_find_param(r.g, PK_XFC2_W, 1);
    CHECK(w1 && w2);
    *n = w1 && w2 ? w1->numel + w2->numel : 0;
    *master = *n ? malloc(*n * sizeof(float)) : NULL;
    if (*master && !r.bk->copy_to_host(r.bk, *master, w1->master, w1->numel * sizeof(float), &e))
        r.bk->copy_to_host(r.bk, *master + w1->numel, w2->master, w2->numel * sizeof(float), &e);
    free(in), free(tgt);
    close_run(&r);
    return ok && *master;
}

/* te-fp8, te-fp8-current and deepseek-v3 (block scales, 14-bit accumulation), 4 and 64 experts (top-8):
 * every loss and every expert weight after three steps (two micro-batches each) bit for bit the same
 * through the grouped GEMMs as through the loop. */
static void test_fp8_grouped_equals_loop(void)
{
    static const char *const rc[] = {"te-fp8", "te-fp8-current", "deepseek-v3"};
    for (int big = 0; big < 2; big++)
        for (int i = 0; i < 3; i++) {
            ModelSpec s = fx_moe(ROUTER_SOFTMAX);
            if (big) s.experts = 64, s.experts_per_token = 8, s.expert_ffn = 8, s.shared_experts = 0;
            float l0[3] = {0}, l1[3] = {1};
            float *m0 = NULL, *m1 = NULL;
            uint64_t n0 = 0, n1 = 0;
            int ok = steps_of(&s, rc[i], 0, l0, &m0, &n0) && steps_of(&s, rc[i], 1, l1, &m1, &n1);
            CHECKF(ok && n0 == n1 && !memcmp(l0, l1, sizeof l0) && !memcmp(m0, m1, n0 * sizeof *m0),
                   "%s, %u experts: grouped and loop differ (loss %.9g vs %.9g)", rc[i], s.experts, (double)l0[2],
                   (double)l1[2]);
            free(m0), free(m1);
        }
}

static void test_routing_counts(void)
{
    ModelSpec s = fx_moe(ROUTER_SOFTMAX);
    Run r;
    CHECK(open_run(&r, &s, "megatron-bf16", 2));
    if (!r.g) return close_run(&r);
    int32_t in[2 * B * T], tgt[2 * B * T];
    fx_tokens(r.g, 3, in, tgt);
    float loss;
    Err e;
    CHECK(!model_step(r.g, in, tgt, &loss, &e));
    CHECK_EQ_INT(r.g->moe_layers, 1);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s.experts; i++) sum += r.g->moe_counts[i];
    CHECK_EQ_U64(sum, 256);    /* 2 micro-batches x 4 x 16 tokens x top-2 */
    CHECK(r.g->moe_aux > 0.0); /* softmax: the auxiliary loss was computed */
    close_run(&r);
}

static void test_sigmoid_bias_update(void)
{
    ModelSpec s = fx_moe(ROUTER_SIGMOID);
    Run r;
    CHECK(open_run(&r, &s, "megatron-bf16", 1));
    if (!r.g) return close_run(&r);
    int32_t in[B * T], tgt[B * T];
    fx_tokens(r.g, 5, in, tgt);
    float loss, bias[4];
    Err e;
    CHECK(!model_step(r.g, in, tgt, &loss, &e));
    CHECK(model_find_param(r.g, PK_ROUTER_B, 1) == NULL); /* a buffer, not a parameter */
    CHECK(r.g->expert_bias != NULL);
    if (!r.g->expert_bias) return close_run(&r);
    CHECK(!r.bk->copy_to_host(r.bk, bias, r.g->expert_bias, sizeof bias, &e));
    const uint64_t *c = r.g->moe_counts;
    CHECK_EQ_U64(c[0] + c[1] + c[2] + c[3], 128); /* 4 x 16 tokens x top-2; mean 32 per expert */
    for (int i = 0; i < 4; i++) {
        float want = c[i] < 32 ? 0.001f : c[i] > 32 ? -0.001f : 0.0f;
        CHECKF(bias[i] == want, "expert %d: %llu rows, bias %.9g, want %.9g", i, (unsigned long long)c[i],
               (double)bias[i], (double)want);
    }
    close_run(&r);
}

static void test_real_expert_count(void)
{
    ModelSpec s = fx_moe(ROUTER_SOFTMAX);
    s.experts = 64, s.experts_per_token = 8, s.expert_ffn = 8, s.shared_experts = 0;
    Run r;
    CHECK(open_run(&r, &s, "megatron-bf16", 1));
    if (!r.g) return close_run(&r);
    int32_t in[B * T], tgt[B * T];
    Err e;
    for (int i = 0; i < 3; i++) {
        float loss = NAN;
        fx_tokens(r.g, 10 + (uint64_t)i, in, tgt);
        CHECK(!model_step(r.g, in, tgt, &loss, &e));
        CHECK(isfinite(loss));
        uint64_t sum = 0;
        for (uint32_t x = 0; x < 64; x++) sum += r.g->moe_counts[x];
        CHECK_EQ_U64(sum, 512); /* 4 x 16 tokens x top-8 */
    }
    close_run(&r);
}

static void test_refusals(void)
{
    ModelSpec s = fx_moe(ROUTER_SOFTMAX);
    Recipe fp8 = fx_recipe("fp8lm"), bf16 = fx_recipe("megatron-bf16");
    static Plan p;
    Err e;
    ArenaSpecs sp = {0};
    CHECK(!fx_plan(&s, &fp8, B, 1, &p, &e)); /* FP8-LM's FP8 copies of a scaled FP16 master: not on experts */
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "recipe fp8lm on model fx-moe-softmax: the executor runs FP8 expert GEMMs as Transformer "
                          "Engine's grouped linears");
    arena_specs_free(&sp);
    /* a backend other than the cpu's: the CUDA one runs MoE layers with the BF16 and per-tensor FP8 recipes,
     * and deepseek-v3's where its cuBLASLt has block scales; expert parallelism wherever the communicator has
     * an all-to-all (MPI's, NCCL's), refused by name before any work where it has none */
    Backend *bk = NULL;
    Comm *comm = NULL;
    Model *g = NULL;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    Recipe te = fx_recipe("te-fp8");
    if (bk && comm) {
        const char *name = bk->name;
        bk->name = "cuda";
        const Recipe *runs[2] = {&bf16, &te}; /* made (the cpu backend under the cuda name runs them) */
        for (int i = 0; i < 2; i++) {
            CHECK(!fx_plan(&s, runs[i], B, 1, &p, &e));
            CHECKF(model_create(&p, NULL, bk, comm, &g, &e) == ST_OK, "%s", e.msg);
            CHECK(g != NULL);
            if (g) model_destroy(g);
            g = NULL;
        }
        Recipe bf16ep = bf16; /* models/recipes.csv's megatron-bf16 row moves its all-to-alls in BF16 */
        bf16ep.comm_ep_dispatch = DT_BF16, bf16ep.comm_ep_combine = DT_BF16;
        CHECK(!fx_plan_dp(&s, &bf16ep, B, 1, 2, SHARD_NONE, &p, &e));
        p.in.ep = 2; /* expert parallelism over a communicator without an all-to-all: refused by name */
        Comm none = *comm;
        none.name = "nccl", none.all_to_all_v = NULL;
        CHECK_EQ_INT(model_create(&p, NULL, bk, &none, &g, &e), ST_UNAVAILABLE);
        CHECK(g == NULL);
        CHECK_CONTAINS(e.msg, "recipe megatron-bf16 on model fx-moe-softmax with --ep 2: the nccl communicator has "
                              "no all-to-all for the experts' dispatch and combine");
        p.in.ep = 1, p.in.etp = 2; /* expert tensor parallelism: the cpu backend's only (model_moe_etp.c) */
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK(g == NULL);
        CHECK_CONTAINS(e.msg, "model fx-moe-softmax with --etp 2: the cuda backend has no expert tensor parallelism "
                              "yet");
        ModelSpec dense = fx_llama(); /* (deepseek-v3 there: the device's cuBLASLt decides, test_cuda_blocks.c) */
        dense.qk_norm = 1;            /* q/k norms: refused by name */
        Recipe mb = fx_recipe("megatron-bf16");
        CHECK(!fx_plan(&dense, &mb, B, 1, &p, &e));
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK_CONTAINS(e.msg, "model fx-llama: the cuda backend runs no q/k norms (per-head RMSNorm before RoPE) yet");
        ModelSpec mla = fx_mla(0, 16); /* latent attention: likewise */
        CHECK(!fx_plan(&mla, &mb, B, 1, &p, &e));
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK_CONTAINS(e.msg, "model fx-mla: the cuda backend runs no latent attention (kv_lora_rank 12) yet");
        ModelSpec lb = fx_llama(); /* deepseek-v3 over TP with whole blocks (model_tp_block.c): the cpu backend's */
        lb.head_dim = 64, lb.kv_heads = 4, lb.ffn_hidden = 256;
        Recipe ds = fx_recipe("deepseek-v3");
        CHECK(!fx_plan_par(&lb, &ds, B, 4, 2, 1, &p, &e));
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK_CONTAINS(e.msg, "--tp 2 --recipe deepseek-v3: the cuda backend's block-scaled GEMMs over the gathered "
                              "shards (a rank's codes, then its scales) are not checked against the CPU reference yet");
        Recipe o1 = fx_recipe("msamp-o1"); /* MS-AMP O1's optimizer: no CUDA kernel yet, refused before any work */
        CHECK(!fx_plan(&lb, &o1, B, 1, &p, &e));
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK(g == NULL);
        CHECK_CONTAINS(e.msg, "recipe msamp-o1: MS-AMP O1's optimizer (a scaled FP16 weight updated in place beside "
                              "FP32 Adam m and v) runs on the cpu backend only so far; the cuda backend has no kernel");
        bk->name = name;
        CHECKF(model_create(&p, NULL, bk, comm, &g, &e) == ST_OK, "msamp-o1 on the cpu backend: %s", e.msg);
        if (g) model_destroy(g);
        g = NULL;
    }
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
    CHECK(!fx_plan_dp(&s, &bf16, B, 1, 2, SHARD_NONE, &p, &e)); /* data parallelism with experts runs */
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_OK);
    arena_specs_free(&sp);
    CHECK(!fx_plan_dp(&s, &te, B, 1, 2, SHARD_NONE, &p, &e)); /* FP8 experts over data parallelism: run */
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_OK);
    arena_specs_free(&sp);
    /* with --ep, delayed scaling reduces the experts' amaxes over their EDP group beside a DP-wide amax group
     * (tests/cli/mpi_ep.sh runs it), which a recipe without one does not have: refused before any work */
    Recipe te_none = te;
    te_none.amax_reduce = AMAX_NONE;
    CHECK(!fx_plan_dp(&s, &te_none, B, 1, 2, SHARD_NONE, &p, &e));
    p.in.ep = 2;
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "recipe te-fp8 on model fx-moe-softmax: delayed-scaling FP8 experts over --ep 2 --etp 1 "
                          "reduce their amaxes over the ranks holding each expert beside the recipe's amax_reduce "
                          "'all'; this recipe's is 'none'");
    arena_specs_free(&sp);
    p.in.ep = 1, p.in.etp = 2; /* the ETP group's shards likewise (model_moe_ep_amax.c) */
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "over --ep 1 --etp 2 reduce their amaxes");
    arena_specs_free(&sp);
    p.in.etp = 1;
    ModelSpec odd = s; /* deepseek-v3's FP8 dispatch moves a row's codes as 4-byte words: hidden 62 refused */
    odd.hidden = 62;
    Recipe dsv = fx_recipe("deepseek-v3");
    dsv.comm_ep_dispatch = DT_E4M3, dsv.comm_ep_combine = DT_BF16; /* models/recipes.csv's deepseek-v3 row */
    CHECK(!fx_plan_dp(&odd, &dsv, B, 1, 2, SHARD_NONE, &p, &e));
    p.in.ep = 2;
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "model fx-moe-softmax: hidden 62 with recipe deepseek-v3's FP8 dispatch: a row's codes move "
                          "as 4-byte words (hidden must be a multiple of 4)");
    arena_specs_free(&sp);
    CHECK(!fx_plan_par(&s, &bf16, B, 1, 2, 1, &p, &e)); /* TP 2 (SP) at ep 1, shared experts split over TP */
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    ModelSpec ns = s; /* and without them (tests/cli/mpi_ep.sh runs both) */
    ns.shared_experts = 0;
    CHECK(!fx_plan_par(&ns, &bf16, B, 1, 2, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    p.in.etp = 2; /* and expert tensor parallelism in BF16 (model_moe_etp.c; tests/cli/mpi_ep.sh) */
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    CHECK(!fx_plan_par(&ns, &te, B, 1, 2, 1, &p, &e)); /* FP8 experts with TP run (tests/cli/mpi_ep.sh) */
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    p.in.etp = 2; /* ... and split over --etp (model_moe_etp.c, model_moe_ep_amax.c; tests/cli/mpi_ep.sh) */
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    ModelSpec sg = fx_moe(ROUTER_SIGMOID); /* and a sigmoid router: its bias the plan's router_bias, whole */
    CHECK(!fx_plan_par(&sg, &te, B, 1, 2, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    const ArenaSpec *rb = NULL;
    for (uint32_t i = 0; i < sp.n; i++)
        if (sp.v[i].term == MT_ROUTER_BIAS) rb = &sp.v[i];
    CHECK(rb && rb->elements == sg.experts && rb->bytes == p.mem[MT_ROUTER_BIAS].bytes);
    arena_specs_free(&sp);
    CHECK(!fx_plan_dp(&s, &bf16, B, 1, 2, SHARD_ZERO1, &p, &e)); /* sharded states run (test_exec_shard) */
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    /* ... and with pipeline stages: each stage's DP and EDP groups shard that stage's states (tests/cli/mpi_zero.sh
     * holds the losses to the unsharded pipeline's and every stage's bytes to its plan, by hand) */
    const Sharding shards[2] = {SHARD_ZERO1, SHARD_DIST_OPT};
    for (int i = 0; i < 2; i++) {
        CHECK(!fx_plan_layout(&s, &bf16, B, 2, 2, shards[i], 1, 2, &p, &e));
        CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
        arena_specs_free(&sp);
    }
    /* FP8 experts over pipeline stages run: 4 layers (the first dense) on 2 stages, 4 micro-batches, stage 0
     * (rank 0) holds blocks 0 and 1 with min(pp - 0, 4) = 2 in flight. Each keeps its 2 layers x LIN_COUNT 4
     * saved inputs' scale_inv: 2 x 2 x 4 = 16 floats; and MoE block 1's 4 experts' FC1 and FC2 input scale_inv
     * and (ep 1: the backward recomputes the experts' outputs) FC2's input scale: 2 x 1 x 3 x 4 = 24 floats */
    ModelSpec s4 = s;
    s4.layers = 4;
    CHECK(!fx_plan_par(&s4, &te, B, 4, 1, 2, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    uint64_t xs = 0, es = 0;
    for (uint32_t i = 0; i < sp.n; i++) {
        if (!strcmp(sp.v[i].name, "pp_saved_scale_inv")) xs = sp.v[i].elements;
        if (!strcmp(sp.v[i].name, "pp_expert_scales")) es = sp.v[i].elements;
    }
    CHECK_EQ_U64(xs, 16);
    CHECK_EQ_U64(es, 24);
    arena_specs_free(&sp);
    /* block scales, latent attention and MTP over stages: test_exec_pp_slots. Over TP (model_tp_block.c): fx_llama's
     * 4 heads of 8 give a rank 2 x 8 = 16 query rows, not a whole 128-row block: refused (every case:
     * test_exec_refusals' test_tp_block_refusals) */
    Recipe dsv3 = fx_recipe("deepseek-v3");
    ModelSpec lm = fx_llama();
    CHECK(!fx_plan_par(&lm, &dsv3, B, 4, 2, 1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "--tp 2 --recipe deepseek-v3: a shard of QKV's query rows and the output projection's "
                          "columns (heads x head_dim / --tp) is 16 wide");
    arena_specs_free(&sp);
    /* with heads of 64, 4 KV heads and an FFN of 256 every shard is whole blocks (2 x 64 = 128 query, key and
     * value rows, 256 / 2 = 128 FFN columns) and it lays out: a column-parallel input's saved transposed shard
     * is one tensor, its (K, B·T/tp) = (32, 4 x 16 / 2 = 32) codes and then their 32 x ceil(32/128) = 32 FP32
     * scales: 32 x 32 + 4 x 32 = 1,152 bytes (QKV and FC1 of each layer: 4 of them) */
    lm.head_dim = 64, lm.kv_heads = 4, lm.ffn_hidden = 256;
    CHECK(!fx_plan_par(&lm, &dsv3, B, 4, 2, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    uint32_t nsaved = 0;
    for (uint32_t i = 0; i < sp.n; i++)
        if (!strcmp(sp.v[i].name, "input.fp8_col+scale_inv")) {
            nsaved++;
            CHECK_EQ_U64(sp.v[i].bytes, 1152);
        }
    CHECK_EQ_U64(nsaved, 4);
    arena_specs_free(&sp);
    /* latent attention at TP 2 (model_mla.c): every saved term the plan's (the latents, their norms' rstd and the
     * down- and up-projections' inputs on the sequence shard); with gradients not FP32 (fp8lm's E4M3 main gradient),
     * refused: the duplicated down-projections' are all-reduced with the norms' in FP32 */
    ModelSpec mla = fx_mla(0, 16);
    CHECK(!fx_plan_par(&mla, &bf16, B, 1, 2, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    uint64_t held[ARENA_TERMS];
    CHECKF(!arena_specs_bytes(&sp, held, &e), "%s", e.msg);
    CHECK_EQ_U64(held[MT_ACT_LAYER_HP], p.mem[MT_ACT_LAYER_HP].bytes);
    CHECK_EQ_U64(held[MT_ACT_LAYER_FP8], p.mem[MT_ACT_LAYER_FP8].bytes);
    arena_specs_free(&sp);
    Recipe f8lm = fx_recipe("fp8lm");
    CHECK(!fx_plan_par(&mla, &f8lm, B, 1, 2, 1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "--tp 2 --recipe fp8lm: latent attention's duplicated down-projections need FP32 gradients");
    arena_specs_free(&sp);
    mla = fx_mla(1, 16);
    mla.mtp_layers = 1; /* multi-token prediction runs on one rank of TP (model_mtp.c) */
    CHECK(!fx_plan(&mla, &bf16, B, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
    lm.mtp_layers = 1; /* MTP at TP 2 (model_mtp.c): its saved terms on the sequence shard, the plan's */
    CHECK(!fx_plan_par(&lm, &bf16, B, 1, 2, 1, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    CHECKF(!arena_specs_bytes(&sp, held, &e), "%s", e.msg);
    CHECK_EQ_U64(held[MT_ACT_LAYER_HP], p.mem[MT_ACT_LAYER_HP].bytes);
    CHECK_EQ_U64(held[MT_ACT_OUTPUT], p.mem[MT_ACT_OUTPUT].bytes);
    arena_specs_free(&sp);
    lm.hidden = 33; /* eh_proj is column-parallel over the hidden size */
    CHECK(!fx_plan_par(&lm, &bf16, B, 1, 2, 1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--tp 2 must divide the hidden size 33 of model");
    arena_specs_free(&sp);
    mla.mtp_layers = 0, mla.qk_rope_head_dim = 3, mla.head_dim = 9; /* an odd rope part */
    CHECK(!fx_plan(&mla, &bf16, B, 1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "model fx-mla-moe: latent attention needs qk_nope and an even qk_rope (6, 3 given)");
    arena_specs_free(&sp);
    ModelSpec m;
    ExecOverrides o = {.layers = 2, .hidden = 64, .heads = 8, .topk = 9};
    ModelSpec base = fx_moe(ROUTER_SOFTMAX);
    CHECK_EQ_INT(exec_model(&base, &o, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--topk 9: must be between 1 and the 4 experts");
    ModelSpec dense = fx_llama();
    ExecOverrides x = {.experts = 8};
    CHECK_EQ_INT(exec_model(&dense, &x, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "fx-llama has no experts");
}

int main(void)
{
    RUN(test_moe_trains);
    RUN(test_mla_trains);
    RUN(test_fp8_grouped_equals_loop);
    RUN(test_routing_counts);
    RUN(test_sigmoid_bias_update);
    RUN(test_real_expert_count);
    RUN(test_refusals);
    return test_summary();
}
