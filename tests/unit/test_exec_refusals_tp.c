/* tests/unit/test_exec_refusals_tp.c — every tensor-parallel layout the executor
 * refuses (model_tp_check, exec/model/model_tp.c; model_tp_block_check for
 * block-scaled recipes, exec/model/model_tp_block.c), with its status and its
 * whole message, and the accepted neighbour of each boundary. Each case starts
 * from a TP-2 plan of fx_gpt, changes one thing, and states what must come
 * back, message and all; the messages are written out by hand from the rule
 * each case breaks. */
#include <stdint.h>
#include <string.h>

#include "exec/model/model_internal.h"
#include "exec/backend/recipe.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* One case: the recipe, the change made to the plan (0: none), the TP size, the status wanted and, when msg is set,
 * the whole message. */
typedef struct {
    const char *recipe;
    int change;
    uint32_t tp;
    Status st;
    const char *msg;
} TpCase;

static void check_case(const char *tag, size_t i, Status st, Status want, const char *got, const char *msg)
{
    CHECKF(st == want, "%s case %zu: status %d, want %d (%s)", tag, i, st, want, got);
    if (msg) CHECKF(!strcmp(got, msg), "%s case %zu:\n    got  '%s'\n    want '%s'", tag, i, got, msg);
}

/* The TP refusals, on a TP-2 plan of fx_gpt (4 heads, 4 KV heads, FFN 128, learned positions; mbs 2 x seq 16
 * tokens, vocabulary padded to 128) with one thing changed in a copy of it. */
static ModelSpec tp_model;
static Recipe tp_recipe;

static Status tp_check(const char *recipe, int change, uint32_t tp, Err *e)
{
    static Plan base;
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe(recipe);
    *e = (Err){0};
    if (fx_plan_par(&s, &r, 2, 1, 2, 1, &base, e)) return ST_SOFTWARE;
    Plan p = base;
    tp_model = *p.in.model, tp_recipe = *p.in.recipe;
    p.in.model = &tp_model, p.in.recipe = &tp_recipe;
    p.in.tp = tp;
    switch (change) {
    case 1: p.in.sp = 0; break;
    case 2: p.in.cp = 2; break;
    case 3: tp_model.kv_heads = 2; break;
    case 4: tp_model.ffn_hidden = 129; break;
    case 5: tp_recipe.saved_input = DT_BF16; break;
    case 6: tp_recipe.other.dt[STATE_GRAD] = DT_BF16; break;
    case 7: tp_recipe.other.dt[STATE_WEIGHT] = DT_NONE; break;
    }
    return model_tp_check(&p, e);
}

static void test_tp_refusals(void)
{
    static const TpCase cases[] = {
        {"te-fp8", 0, 2, ST_OK, NULL},
        {"te-fp8", 0, 1, ST_OK, NULL}, /* one rank: nothing to check, even without SP */
        {"te-fp8", 1, 2, ST_UNAVAILABLE, "--tp 2: the executor runs tensor parallelism with sequence parallelism only"},
        {"te-fp8", 2, 2, ST_UNAVAILABLE, "--tp 2 with cp 2: the executor has no context parallelism"},
        {"te-fp8", 0, 8, ST_USAGE, "--tp 8 must divide the heads 4, KV heads 4 and FFN width 128 of model fx-gpt"},
        {"te-fp8", 3, 4, ST_USAGE, "--tp 4 must divide the heads 4, KV heads 2 and FFN width 128 of model fx-gpt"},
        {"te-fp8", 4, 2, ST_USAGE, "--tp 2 must divide the heads 4, KV heads 4 and FFN width 129 of model fx-gpt"},
        {"te-fp8", 5, 2, ST_UNAVAILABLE,
         "--tp 2 --recipe te-fp8: FP8 tensor parallelism runs recipes that save FP8 GEMM inputs only (the saved "
         "shard is what the backward gathers)"},
        {"megatron-bf16", 5, 2, ST_OK, NULL}, /* BF16 GEMMs save BF16 inputs anyway */
        {"megatron-bf16", 6, 2, ST_UNAVAILABLE,
         "--tp 2 --recipe megatron-bf16: the embedding, norm and bias gradients must be FP32"},
        {"megatron-bf16", 7, 2, ST_UNAVAILABLE,
         "--tp 2 --recipe megatron-bf16: learned positions in none added to bf16 activations after the scatter"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Err e;
        Status st = tp_check(cases[i].recipe, cases[i].change, cases[i].tp, &e);
        check_case("tp", i, st, cases[i].st, e.msg, cases[i].msg);
    }
}

/* Block scaling over TP (exec/model/model_tp_block.c), deepseek-v3 at --tp 2 on a TP-2 plan of fx_gpt made
 * LLaMA-wide: hidden 256, 4 heads and 4 KV heads of 64 (a rank's 2 x 64 = 128 query, key and value rows and 128
 * output-projection columns), FFN 256 (128 a rank); mbs 2 x seq 16 = 32 tokens, 16 a rank. Each case changes
 * one width so that one shard misses the 128-wide blocks (its width worked out in the comment). */
static Status tp_block_check(const char *recipe, int change, uint32_t tp, Err *e)
{
    static Plan base;
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    *e = (Err){0};
    if (fx_plan_par(&s, &r, 2, 1, 2, 1, &base, e)) return ST_SOFTWARE;
    Plan p = base;
    tp_model = *p.in.model, tp_recipe = fx_recipe(recipe);
    p.in.model = &tp_model, p.in.recipe = &tp_recipe, p.in.tp = tp;
    tp_model.hidden = 256, tp_model.head_dim = 64, tp_model.ffn_hidden = 256;
    switch (change) {
    case 1: tp_model.head_dim = 48; break;                         /* 2 x 48 = 96 query rows */
    case 2: tp_model.kv_heads = 2; break;                          /* 1 x 64 = 64 key and value rows */
    case 3: tp_model.ffn_hidden = 192; break;                      /* 192 / 2 = 96 */
    case 4: p.seq = 3; break;                                      /* 2 x 3 / 2 = 3 tokens a rank */
    case 5: tp_model.mtp_layers = 1, tp_model.hidden = 128; break; /* eh_proj: 128 / 2 = 64 rows */
    case 6:                                                        /* experts: the shared one's 128 / 2 = 64 columns */
        tp_model.experts = 4, tp_model.experts_per_token = 2, tp_model.shared_experts = 1, tp_model.expert_ffn = 128;
        break;
    case 7: /* with a dense first layer: its FFN 192 / 2 = 96 */
        tp_model.experts = 4, tp_model.experts_per_token = 2, tp_model.shared_experts = 2, tp_model.expert_ffn = 128;
        tp_model.dense_layers = 1, tp_model.ffn_hidden = 192;
        break;
    case 8: tp_model.experts = 4, tp_model.experts_per_token = 2, tp_model.ffn_hidden = 192; break; /* no dense FFN */
    }
    if (change >= 9) { /* latent attention: qk_nope 32 + qk_rope 32 = head_dim 64 */
        tp_model.kv_lora_rank = 32, tp_model.q_lora_rank = 64, tp_model.qk_nope_head_dim = 32;
        tp_model.qk_rope_head_dim = 32, tp_model.v_head_dim = 32;
    }
    switch (change) {
    case 9: tp_model.qk_rope_head_dim = 16, tp_model.head_dim = 48; break; /* q_up: 2 x 48 = 96 rows */
    case 10: tp_model.v_head_dim = 64; break;                              /* kv_up: 2 x (32 + 64) = 192 rows */
    case 11: break;                                                        /* the output projection: 2 x 32 = 64 */
    case 12: tp_model.heads = tp_model.kv_heads = 8; break;                /* 4 x 64, 4 x 64, 4 x 32 = 128: accepted */
    }
    return model_tp_block_check(&p, e);
}

static void test_tp_block_refusals(void)
{
#define BLK(what, w)                                                                                           \
    "--tp 2 --recipe deepseek-v3: a shard of " what " is " w " wide, not a multiple of the recipe's 128-wide " \
    "blocks (model fx-gpt); a shard boundary must fall on a block boundary"
    static const TpCase cases[] = {
        {"deepseek-v3", 0, 2, ST_OK, NULL},
        {"deepseek-v3", 1, 1, ST_OK, NULL}, /* one rank: the one-rank blocks */
        {"te-fp8", 1, 2, ST_OK, NULL},      /* per-tensor scales: no blocks */
        {"deepseek-v3", 1, 2, ST_UNAVAILABLE,
         BLK("QKV's query rows and the output projection's columns (heads x head_dim / --tp)", "96")},
        {"deepseek-v3", 2, 2, ST_UNAVAILABLE, BLK("QKV's key and value rows (kv_heads x head_dim / --tp)", "64")},
        {"deepseek-v3", 3, 2, ST_UNAVAILABLE, BLK("the FFN (ffn_hidden / --tp)", "96")},
        {"deepseek-v3", 4, 2, ST_UNAVAILABLE,
         "--tp 2 --recipe deepseek-v3: each rank's tokens (--mbs x --seq / --tp = 3) must be a multiple of 4"},
        {"deepseek-v3", 5, 2, ST_UNAVAILABLE, BLK("eh_proj's rows (hidden / --tp)", "64")},
        {"deepseek-v3", 6, 2, ST_UNAVAILABLE,
         BLK("the shared experts' FFN (shared_experts x expert_ffn / --tp)", "64")},
        {"deepseek-v3", 7, 2, ST_UNAVAILABLE, BLK("the FFN (ffn_hidden / --tp)", "96")},
        {"deepseek-v3", 8, 2, ST_OK, NULL}, /* every layer MoE: ffn_hidden shards nothing */
        {"deepseek-v3", 9, 2, ST_UNAVAILABLE,
         BLK("q_up's rows (heads x (qk_nope_head_dim + qk_rope_head_dim) / --tp)", "96")},
        {"deepseek-v3", 10, 2, ST_UNAVAILABLE,
         BLK("kv_up's rows (heads x (qk_nope_head_dim + v_head_dim) / --tp)", "192")},
        {"deepseek-v3", 11, 2, ST_UNAVAILABLE,
         BLK("the output projection's columns (heads x v_head_dim / --tp)", "64")},
        {"deepseek-v3", 12, 2, ST_OK, NULL},
    };
#undef BLK
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Err e;
        Status st = tp_block_check(cases[i].recipe, cases[i].change, cases[i].tp, &e);
        check_case("tp block", i, st, cases[i].st, e.msg, cases[i].msg);
    }
}

int main(void)
{
    RUN(test_tp_refusals);
    RUN(test_tp_block_refusals);
    return test_summary();
}
