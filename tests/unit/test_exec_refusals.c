/* tests/unit/test_exec_refusals.c — every recipe and tensor-parallel layout the
 * executor refuses, with its status and its whole message, and the accepted
 * neighbour of each boundary.
 *
 * exec_recipe_check (exec/recipe.c) and model_tp_check (exec/model/model_tp.c)
 * decide what `fp8plan run` runs. Each case below starts from a recipe the
 * executor runs (exec_fixtures.h: megatron-bf16, te-fp8, fp8lm) or a TP-2 plan
 * of fx_gpt, changes one thing, and states what must come back, message and
 * all: a refusal that names the wrong state, class or dtype misleads the user
 * as much as a missing one. The messages are written out here by hand from
 * the rule each case breaks. */
#include <string.h>

#include "exec/model/model_internal.h"
#include "exec/recipe.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* One recipe case: base recipe, the change (applied by edit()), the status and message wanted. */
typedef struct {
    const char *base;
    int change;
    Status st;
    const char *msg; /* the whole message; NULL for ST_OK */
} RecipeCase;

enum {
    C_GEMM_W_NONE,  /* linear working weight 'none' without FP8 GEMMs */
    C_OTHER_W_E4M3, /* other-parameter working weight in an FP8 format */
    C_GEMM_W_FP16,  /* linear working weight fp16 beside bf16 activations, BF16 GEMMs */
    C_GEMM_MASTER_BF16,
    C_OTHER_MASTER_FP16,
    C_GEMM_MASTER_FP16_FP8LM, /* accepted: FP8-LM's fp16 master of the linears */
    C_OTHER_NO_MASTER_BF16,
    C_GEMM_GRAD_FP16,
    C_GEMM_GRAD_E5M2_UNSCALED,
    C_FP16_MASTER_M_FP32,
    C_FP32_MASTER_M_E4M3,
    C_OTHER_SCALED_M,
    C_GEMM_SCALED_FP32_M,
    C_GEMM_SCALED_WEIGHT,
    C_BF16_GEMM_FP32,
    C_BF16_FP8_COPIES,
    C_BF16_SAVED_E4M3,
    C_FWD_E5M2,
    C_BWD_BF16,
    C_SCALING_NONE,
    C_COPIES_E5M2,
    C_SAVED_FP16,
    C_SAVED_BF16, /* accepted: activations' dtype */
    C_GRAN_CHANNEL,
};

static void edit(Recipe *r, int change)
{
    switch (change) {
    case C_GEMM_W_NONE: r->gemm.dt[STATE_WEIGHT] = DT_NONE; break;
    case C_OTHER_W_E4M3: r->other.dt[STATE_WEIGHT] = DT_E4M3; break;
    case C_GEMM_W_FP16: r->gemm.dt[STATE_WEIGHT] = DT_FP16; break;
    case C_GEMM_MASTER_BF16: r->gemm.dt[STATE_MASTER] = DT_BF16; break;
    case C_OTHER_MASTER_FP16: r->other.dt[STATE_MASTER] = DT_FP16; break;
    case C_GEMM_MASTER_FP16_FP8LM: break;
    case C_OTHER_NO_MASTER_BF16: r->other.dt[STATE_MASTER] = DT_NONE; break;
    case C_GEMM_GRAD_FP16: r->gemm.dt[STATE_GRAD] = DT_FP16; break;
    case C_GEMM_GRAD_E5M2_UNSCALED: r->gemm.dt[STATE_GRAD] = DT_E5M2; break;
    case C_FP16_MASTER_M_FP32: r->gemm.dt[STATE_M] = DT_FP32; break;
    case C_FP32_MASTER_M_E4M3: r->gemm.dt[STATE_M] = DT_E4M3; break;
    case C_OTHER_SCALED_M: r->other.scaled_mask = 1u << STATE_M; break;
    case C_GEMM_SCALED_FP32_M: r->gemm.scaled_mask |= 1u << STATE_M; break;
    case C_GEMM_SCALED_WEIGHT: r->gemm.scaled_mask |= 1u << STATE_WEIGHT; break;
    case C_BF16_GEMM_FP32: r->gemm_fwd = r->gemm_bwd = DT_FP32; break;
    case C_BF16_FP8_COPIES: r->fp8_col = DT_E4M3; break;
    case C_BF16_SAVED_E4M3: r->saved_input = DT_E4M3; break;
    case C_FWD_E5M2: r->gemm_fwd = DT_E5M2; break;
    case C_BWD_BF16: r->gemm_bwd = DT_BF16; break;
    case C_SCALING_NONE: r->scaling = SCALING_NONE; break;
    case C_COPIES_E5M2: r->fp8_row = DT_E5M2; break;
    case C_SAVED_FP16: r->saved_input = DT_FP16; break;
    case C_SAVED_BF16: r->saved_input = DT_BF16; break;
    case C_GRAN_CHANNEL: r->weight_gran = GRAN_CHANNEL; break;
    }
}

static const RecipeCase RECIPES[] = {
    {"megatron-bf16", C_GEMM_W_NONE, ST_UNAVAILABLE,
     "recipe megatron-bf16: linear-weight working weights 'none' need FP8 GEMMs that read FP8 copies of the master"},
    /* the other parameters' 'none' is refused even under FP8 GEMMs: only the linears read FP8 copies */
    {"te-fp8", C_OTHER_W_E4M3, ST_UNAVAILABLE,
     "recipe te-fp8: other-parameter working weights in e4m3 are not supported"},
    {"megatron-bf16", C_GEMM_W_FP16, ST_UNAVAILABLE,
     "recipe megatron-bf16: linear-weight working weights in fp16 but activations in bf16 (the executor's non-FP8 "
     "GEMMs and embeddings take both in one dtype)"},
    {"megatron-bf16", C_GEMM_MASTER_BF16, ST_UNAVAILABLE,
     "recipe megatron-bf16: linear-weight master weights in bf16 are not supported (fp32, fp16 or none)"},
    {"megatron-bf16", C_OTHER_MASTER_FP16, ST_UNAVAILABLE,
     "recipe megatron-bf16: other-parameter master weights in fp16 are not supported (fp32 or none)"},
    {"fp8lm", C_GEMM_MASTER_FP16_FP8LM, ST_OK, NULL},
    {"megatron-bf16", C_OTHER_NO_MASTER_BF16, ST_UNAVAILABLE,
     "recipe megatron-bf16: other-parameter states keep no master, so the optimizer would update bf16 weights in "
     "place; the executor does that only for fp32 weights"},
    {"megatron-bf16", C_GEMM_GRAD_FP16, ST_UNAVAILABLE,
     "recipe megatron-bf16: linear-weight gradients in fp16 are not supported"},
    {"te-fp8", C_GEMM_GRAD_E5M2_UNSCALED, ST_USAGE,
     "recipe te-fp8: linear-weight gradients in e5m2 need a scaling record (scaled states)"},
    {"fp8lm", C_FP16_MASTER_M_FP32, ST_UNAVAILABLE,
     "recipe fp8lm: an fp16 master runs with FP8-LM's optimizer only (m e4m3, v fp16; got m fp32, v fp16)"},
    {"te-fp8", C_FP32_MASTER_M_E4M3, ST_UNAVAILABLE,
     "recipe te-fp8: linear-weight Adam states m e4m3, v fp32 need FP8-LM's optimizer (an fp16 master); with a fp32 "
     "master they must be fp32"},
    {"te-fp8", C_OTHER_SCALED_M, ST_UNAVAILABLE,
     "recipe te-fp8: scaled m states of other parameters are not supported"},
    {"te-fp8", C_GEMM_SCALED_FP32_M, ST_UNAVAILABLE,
     "recipe te-fp8: a scaling record on the fp32 m state is not supported"},
    {"te-fp8", C_GEMM_SCALED_WEIGHT, ST_UNAVAILABLE,
     "recipe te-fp8: a scaling record on the bf16 weight state is not supported"},
    {"megatron-bf16", C_BF16_GEMM_FP32, ST_UNAVAILABLE,
     "recipe megatron-bf16: GEMMs in fp32/fp32 with bf16 activations are not supported"},
    {"megatron-bf16", C_BF16_FP8_COPIES, ST_USAGE, "recipe megatron-bf16: FP8 weight copies without FP8 GEMMs"},
    {"megatron-bf16", C_BF16_SAVED_E4M3, ST_USAGE, "recipe megatron-bf16: saved GEMM inputs in e4m3 without FP8 GEMMs"},
    {"te-fp8", C_FWD_E5M2, ST_UNAVAILABLE, "recipe te-fp8: forward GEMMs in e5m2 (the executor runs e4m3)"},
    {"te-fp8", C_BWD_BF16, ST_USAGE, "recipe te-fp8: FP8 forward GEMMs need FP8 gradients (e5m2 or e4m3), got bf16"},
    {"te-fp8", C_SCALING_NONE, ST_USAGE, "recipe te-fp8: FP8 GEMMs need delayed or current scaling"},
    {"te-fp8", C_COPIES_E5M2, ST_USAGE, "recipe te-fp8: FP8 weight copies in e5m2/e4m3 but forward GEMMs in e4m3"},
    {"te-fp8", C_SAVED_FP16, ST_USAGE, "recipe te-fp8: saved GEMM inputs in fp16 (bf16 or e4m3)"},
    {"te-fp8", C_SAVED_BF16, ST_OK, NULL},
    {"te-fp8", C_GRAN_CHANNEL, ST_UNAVAILABLE,
     "recipe te-fp8: tensor/channel scale granularity is not run by the executor yet (per-tensor only)"},
};

static void test_recipe_refusals(void)
{
    for (size_t i = 0; i < sizeof RECIPES / sizeof *RECIPES; i++) {
        const RecipeCase *c = &RECIPES[i];
        Recipe r = fx_recipe(c->base);
        Err e = {0};
        CHECKF(exec_recipe_check(&r, &e) == ST_OK, "%s as the fixture has it: %s", c->base, e.msg);
        edit(&r, c->change);
        e = (Err){0};
        Status st = exec_recipe_check(&r, &e);
        CHECKF(st == c->st, "case %zu (%s): status %d, want %d (%s)", i, c->base, st, c->st, e.msg);
        if (c->msg) CHECKF(!strcmp(e.msg, c->msg), "case %zu:\n    got  '%s'\n    want '%s'", i, e.msg, c->msg);
    }
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
    static const struct {
        const char *recipe;
        int change;
        uint32_t tp;
        Status st;
        const char *msg;
    } cases[] = {
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
        CHECKF(st == cases[i].st, "tp case %zu: status %d, want %d (%s)", i, st, cases[i].st, e.msg);
        if (cases[i].msg)
            CHECKF(!strcmp(e.msg, cases[i].msg), "tp case %zu:\n    got  '%s'\n    want '%s'", i, e.msg, cases[i].msg);
    }
}

int main(void)
{
    RUN(test_recipe_refusals);
    RUN(test_tp_refusals);
    return test_summary();
}
