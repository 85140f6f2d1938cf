/* tests/unit/test_exec_moe_model.c — the executor's mixture-of-experts layers
 * (exec/model/model_moe.c) in the whole model on the CPU backend, one rank.
 *
 *   - a tiny MoE model (exec_fixtures.h's fx_moe: a dense block, then a MoE block
 *     of 4 experts, top-2, one shared expert) trains with megatron-bf16, softmax
 *     and sigmoid routers: over 50 steps of the synthetic stream (B=4, T=16,
 *     V=64; its entropy is far below ln 64 = 4.16) the mean loss of the last 5
 *     steps is at least 30 % below the first step's;
 *   - routing bookkeeping by hand: every micro-batch routes each of its B·T
 *     tokens to k experts, so a step of `micro` micro-batches counts
 *     micro·B·T·k = 2·4·16·2 = 256 rows over the experts of each MoE layer;
 *   - a sigmoid router's bias after one step: each expert's bias, 0 at start,
 *     moved by exactly +1e-3 (below the mean load), −1e-3 (above) or 0 (at it)
 *     — FP32 0 + 0.001f is 0.001f exactly;
 *   - a real expert count: 64 experts, top-8 (fine-grained, expert FFN 8): three
 *     steps, finite losses, 4·16·8 = 512 rows per step;
 *   - refusals before any work: an FP8 recipe, data parallelism, top-k above the
 *     experts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/data.h"
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

static void trains(RouterType rt)
{
    ModelSpec s = fx_moe(rt);
    Run r;
    CHECK(open_run(&r, &s, "megatron-bf16", 1));
    DataStream d;
    Err e;
    CHECK(r.g && !data_synthetic(&d, s.vocab, 1, &e));
    if (!r.g) return close_run(&r);
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
    printf("  %s: first %.4f, last 5 steps %.4f\n", s.name, first, tail);
    CHECK(isfinite(tail));
    CHECKF(tail < 0.7 * first, "%s: %.4f -> %.4f", s.name, first, tail);
    data_free(&d);
    close_run(&r);
}

static void test_moe_trains(void)
{
    trains(ROUTER_SOFTMAX);
    trains(ROUTER_SIGMOID);
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
    ModelParam *b = model_find_param(r.g, PK_ROUTER_B, 1);
    CHECK(b != NULL && b->master != NULL);
    if (!b) return close_run(&r);
    CHECK(!r.bk->copy_to_host(r.bk, bias, b->master, sizeof bias, &e));
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
    Recipe fp8 = fx_recipe("te-fp8"), bf16 = fx_recipe("megatron-bf16");
    static Plan p;
    Err e;
    ArenaSpecs sp = {0};
    CHECK(!fx_plan(&s, &fp8, B, 1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "FP8 expert GEMMs are not run by the executor yet");
    arena_specs_free(&sp);
    CHECK(!fx_plan_dp(&s, &bf16, B, 1, 2, SHARD_NONE, &p, &e)); /* data parallelism with experts runs */
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_OK);
    arena_specs_free(&sp);
    CHECK(!fx_plan_dp(&s, &bf16, B, 1, 2, SHARD_ZERO1, &p, &e));
    CHECK_EQ_INT(model_layout(&p, &sp, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "over data and expert parallelism only (tp 1, pp 1, etp 1, sharding zero1 given");
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
    RUN(test_routing_counts);
    RUN(test_sigmoid_bias_update);
    RUN(test_real_expert_count);
    RUN(test_refusals);
    return test_summary();
}
