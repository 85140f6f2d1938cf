/* tests/unit/test_exec_refusals.c — every recipe and tensor-parallel layout the
 * executor refuses, with its status and its whole message, and the accepted
 * neighbour of each boundary (the tensor-parallel layouts: test_exec_refusals_tp.c).
 *
 * exec_recipe_check (exec/backend/recipe.c) and model_tp_check (exec/model/model_tp.c)
 * decide what `fp8plan run` runs. Each case below starts from a recipe the
 * executor runs (exec_fixtures.h: megatron-bf16, te-fp8, fp8lm) or a TP-2 plan
 * of fx_gpt, changes one thing, and states what must come back, message and
 * all: a refusal that names the wrong state, class or dtype misleads the user
 * as much as a missing one. The messages are written out here by hand from
 * the rule each case breaks. */
#include <string.h>

#include "exec/model/model_internal.h"
#include "exec/backend/recipe.h"
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
    C_FP32_MASTER_MV_BF16, /* accepted: DeepSeek-V3's BF16 moments beside an FP32 master */
    C_FP32_MASTER_M_BF16,  /* BF16 m with an FP32 v: one moment dtype only */
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
    case C_FP32_MASTER_MV_BF16: r->gemm.dt[STATE_M] = r->gemm.dt[STATE_V] = DT_BF16; break;
    case C_FP32_MASTER_M_BF16: r->gemm.dt[STATE_M] = DT_BF16; break;
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
     "recipe megatron-bf16: linear-weight working weights 'none' need FP8 GEMMs that read FP8 copies of the master; "
     "the recipe's BF16 GEMMs would cast the master per op (FP8-LM's 16 B/param accounting, as FSDP's mixed "
     "precision does), which the executor does not: it keeps a BF16 working weight (megatron-bf16, 18 B/param, runs "
     "BF16)"},
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
     "place; the executor does that for fp32 weights, and for MS-AMP O1's linears (a scaled fp16 weight read by FP8 "
     "GEMMs, scaled FP8 gradients, fp32 Adam m and v)"},
    {"megatron-bf16", C_GEMM_GRAD_FP16, ST_UNAVAILABLE,
     "recipe megatron-bf16: linear-weight gradients in fp16 are not supported"},
    {"te-fp8", C_GEMM_GRAD_E5M2_UNSCALED, ST_USAGE,
     "recipe te-fp8: linear-weight gradients in e5m2 need a scaling record (scaled states)"},
    {"fp8lm", C_FP16_MASTER_M_FP32, ST_UNAVAILABLE,
     "recipe fp8lm: an fp16 master runs with FP8-LM's optimizer only (m e4m3, v fp16; got m fp32, v fp16)"},
    {"te-fp8", C_FP32_MASTER_M_E4M3, ST_UNAVAILABLE,
     "recipe te-fp8: linear-weight Adam states m e4m3, v fp32 need FP8-LM's optimizer (an fp16 master); with a fp32 "
     "master they must be fp32 (or both bf16 with an fp32 master, as DeepSeek-V3's)"},
    {"te-fp8", C_FP32_MASTER_MV_BF16, ST_OK, NULL},
    {"te-fp8", C_FP32_MASTER_M_BF16, ST_UNAVAILABLE,
     "recipe te-fp8: linear-weight Adam states m bf16, v fp32 need FP8-LM's optimizer (an fp16 master); with a fp32 "
     "master they must be fp32 (or both bf16 with an fp32 master, as DeepSeek-V3's)"},
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
     "recipe te-fp8: tensor/channel scale granularity is not run by the executor yet (per-tensor, or DeepSeek-V3's "
     "1x128/128x128)"},
};

/* Case i of a table: the status wanted and, when msg is set, the whole message. */
static void check_case(const char *tag, size_t i, Status st, Status want, const char *got, const char *msg)
{
    CHECKF(st == want, "%s case %zu: status %d, want %d (%s)", tag, i, st, want, got);
    if (msg) CHECKF(!strcmp(got, msg), "%s case %zu:\n    got  '%s'\n    want '%s'", tag, i, got, msg);
}

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
        check_case(c->base, i, st, c->st, e.msg, c->msg);
    }
}

/* The shared descriptor check every backend runs first (exec/backend/backend_check.c): one field of a valid FP8
 * GEMM (E4M3 A and B, K contiguous, per-tensor scale_inv; BF16 output) changed at a time. The pointers
 * only have to be non-NULL: nothing is read. */
static void test_gemm_refusals(void)
{
    static float f[4];
    const GemmDesc ok = {.m = 16,
                         .n = 32,
                         .k = 64,
                         .a = {.ptr = f, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = f},
                         .b = {.ptr = f, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = f},
                         .d = {.ptr = f, .dtype = DT_BF16}};
    Err e = {0};
    CHECKF(gemm_desc_check(&ok, &e) == ST_OK, "%s", e.msg);
    enum { N = 14 };
    GemmDesc g[N];
    const char *want[N] = {
        "gemm: operand A has dtype e8m0 (expected fp32, fp16, bf16, e4m3 or e5m2)",
        "gemm: operand B has an unknown layout 7",
        "gemm: operand A leading dimension 63 is below its row length 64",
        "gemm: operand B leading dimension 31 is below its row length 32", /* K-outer: B's rows are N long */
        "gemm: operand B scale granularity channel is not tensor, 1x128 or 128x128",
        "gemm: operand A is bf16 but has a scale_inv (only FP8 operands are scaled)",
        "gemm: operands A bf16 and B fp16 must have the same dtype",
        "gemm: 128x128 x 128x128 block scaling is not supported (one side must be 1x128)",
        "gemm: output leading dimension 31 is below n=32",
        "gemm: output D is fp32 but has a scale (only FP8 outputs are scaled)",
        "gemm: unknown accumulate mode 5",
        "gemm: bias dtype e4m3 (expected fp32, fp16 or bf16)",
        "gemm: E4M3 x E4M3 -> E5M2 output is not supported by cuBLASLt (write E4M3, BF16 or FP32, or use an E5M2 "
        "operand)",
        "gemm: accumulation into an FP8 output is not supported",
    };
    for (int i = 0; i < N; i++) g[i] = ok;
    g[0].a.dtype = DT_E8M0;
    g[1].b.layout = (GemmLayout)7;
    g[2].a.ld = 63;
    g[3].a.dtype = g[3].b.dtype = DT_BF16, g[3].a.scale_inv = g[3].b.scale_inv = NULL, g[3].b.layout = GEMM_K_OUTER,
    g[3].b.ld = 31;
    g[4].b.scale_gran = GRAN_CHANNEL;
    g[5].a.dtype = g[5].b.dtype = DT_BF16, g[5].b.scale_inv = NULL;
    g[6].a.dtype = DT_BF16, g[6].b.dtype = DT_FP16, g[6].a.scale_inv = g[6].b.scale_inv = NULL;
    g[7].a.scale_gran = g[7].b.scale_gran = GRAN_128X128;
    g[8].d.ld = 31;
    g[9].d.dtype = DT_FP32, g[9].d.scale = f;
    g[10].accum = (GemmAccum)5;
    g[11].bias = f, g[11].bias_dtype = DT_E4M3;
    g[12].d.dtype = DT_E5M2, g[12].d.scale = f;
    g[13].d.dtype = DT_E4M3, g[13].d.scale = f, g[13].accum = GEMM_ACCUMULATE;
    for (int i = 0; i < N; i++) {
        e = (Err){0};
        Status st = gemm_desc_check(&g[i], &e);
        CHECKF(st == ST_USAGE && !strcmp(e.msg, want[i]), "gemm case %d: status %d\n    got  '%s'\n    want '%s'", i,
               st, e.msg, want[i]);
    }
    /* the accepted neighbours: a leading dimension equal to the row, one side 1x128, an E5M2 output of an
     * E5M2 x E4M3 product, an FP32 bias */
    GemmDesc a = ok;
    a.a.ld = 64, a.d.ld = 32, a.a.scale_gran = GRAN_128X128, a.b.scale_gran = GRAN_1X128;
    a.b.dtype = DT_E5M2, a.d.dtype = DT_E5M2, a.d.scale = f, a.bias = f, a.bias_dtype = DT_FP32;
    e = (Err){0};
    CHECKF(gemm_desc_check(&a, &e) == ST_OK, "%s", e.msg);
}

/* The other operations' checks that no run reaches: casts, conversions, scaling banks, norms and the loss. */
static void test_op_refusals(void)
{
    static float f[4];
    static uint16_t h[4];
    static float d4[4]; /* a third buffer: an activation backward's input gradient */
    Err e = {0};
    CastDesc c = {.in = h, .in_dtype = DT_BF16, .rows = 2, .cols = 2, .out_dtype = DT_E4M3, .out_row = h, .scale = f};
    CHECKF(backend_check_cast_transpose(NULL, &c, &e) == ST_OK, "%s", e.msg);
    CastDesc bad = c;
    bad.out_row = NULL;
    CHECK_EQ_INT(backend_check_cast_transpose(NULL, &bad, &e), ST_USAGE);
    CHECK_STR(e.msg, "cast_transpose: needs an input and at least one output");
    bad.amax = f; /* an amax alone is an output (current scaling's measuring pass) */
    CHECKF(backend_check_cast_transpose(NULL, &bad, &e) == ST_OK, "%s", e.msg);
    bad = c, bad.out_dtype = DT_BF16;
    CHECK_EQ_INT(backend_check_cast_transpose(NULL, &bad, &e), ST_USAGE);
    CHECK_STR(e.msg, "cast_transpose: output dtype bf16 must be e4m3 or e5m2, with a scale");
    bad = c, bad.scale = NULL;
    CHECK_EQ_INT(backend_check_cast_transpose(NULL, &bad, &e), ST_USAGE);
    CHECK_STR(e.msg, "cast_transpose: output dtype e4m3 must be e4m3 or e5m2, with a scale");

    CHECK_EQ_INT(backend_check_convert(NULL, h, DT_BF16, h, DT_E8M0, 2, NULL, &e), ST_USAGE);
    CHECK_STR(e.msg, "convert: bf16 -> e8m0 is not supported");
    CHECK_EQ_INT(backend_check_convert(NULL, h, DT_NONE, h, DT_BF16, 2, NULL, &e), ST_USAGE);
    CHECK_STR(e.msg, "convert: none -> bf16 is not supported");

    float hist[2] = {1, 2}, sc[1] = {1}, si[1] = {1};
    ScalingBank b = {.n = 1, .history_len = 2, .fmt = DT_E4M3, .amax_history = hist, .scale = sc, .scale_inv = si};
    CHECKF(backend_check_scaling_delayed_update(NULL, &b, &e) == ST_OK, "%s", e.msg);
    ScalingBank bb = b;
    bb.fmt = DT_BF16;
    CHECK_EQ_INT(backend_check_scaling_delayed_update(NULL, &bb, &e), ST_USAGE);
    CHECK_STR(e.msg, "delayed scaling: bank format bf16 is not FP8 (e4m3 or e5m2)");
    bb = b, bb.history_len = 0;
    CHECK_EQ_INT(backend_check_scaling_delayed_update(NULL, &bb, &e), ST_USAGE);
    CHECK_STR(e.msg, "delayed scaling: empty history or missing scale");
    bb = b, bb.scale = NULL;
    CHECK_EQ_INT(backend_check_scaling_delayed_update(NULL, &bb, &e), ST_USAGE);
    CHECK_STR(e.msg, "delayed scaling: empty history or missing scale");
    bb.n = 0; /* an empty bank needs no arrays */
    CHECKF(backend_check_scaling_delayed_update(NULL, &bb, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(backend_check_scaling_from_amax(NULL, 1, DT_FP16, 0, f, f, &e), ST_USAGE);
    CHECK_STR(e.msg, "current scaling: format fp16 is not FP8 (e4m3 or e5m2)");

    NormFwdDesc nf = {.norm = NORM_RMSNORM,
                      .act_dtype = DT_BF16,
                      .weight_dtype = DT_FP32,
                      .in = h,
                      .out = h,
                      .weight = f,
                      .rstd = f,
                      .cols = 2,
                      .rows = 2,
                      .eps = 1e-5f};
    CHECKF(backend_check_norm_fwd(NULL, &nf, &e) == ST_OK, "%s", e.msg);
    NormFwdDesc nfb = nf;
    nfb.norm = (NormType)9;
    CHECK_EQ_INT(backend_check_norm_fwd(NULL, &nfb, &e), ST_USAGE);
    CHECK_STR(e.msg, "norm_fwd: unknown norm 9");
    for (int i = 0; i < 5; i++) { /* zero width, then each of the four buffers missing */
        nfb = nf;
        if (i == 0) nfb.cols = 0;
        if (i == 1) nfb.in = NULL;
        if (i == 2) nfb.out = NULL;
        if (i == 3) nfb.weight = NULL;
        if (i == 4) nfb.rstd = NULL;
        CHECKF(backend_check_norm_fwd(NULL, &nfb, &e) == ST_USAGE, "case %d", i);
        CHECK_STR(e.msg, "norm_fwd: missing pointer or zero width");
    }
    NormBwdDesc nb = {.norm = NORM_RMSNORM,
                      .act_dtype = DT_BF16,
                      .weight_dtype = DT_FP32,
                      .in = h,
                      .weight = f,
                      .rstd = f,
                      .dout = h,
                      .din = h,
                      .dweight = f,
                      .cols = 2,
                      .rows = 2};
    CHECKF(backend_check_norm_bwd(NULL, &nb, &e) == ST_OK, "%s", e.msg);
    NormBwdDesc nbb = nb;
    nbb.norm = (NormType)9;
    CHECK_EQ_INT(backend_check_norm_bwd(NULL, &nbb, &e), ST_USAGE);
    CHECK_STR(e.msg, "norm_bwd: unknown norm 9");
    nbb = nb, nbb.din = NULL;
    CHECK_EQ_INT(backend_check_norm_bwd(NULL, &nbb, &e), ST_USAGE);
    CHECK_STR(e.msg, "norm_bwd: missing pointer or zero width");

    /* attention and the rotary embedding share one shape check: every size positive, KV heads dividing the
     * heads, an FP32/FP16/BF16 activation */
    AttnFwdDesc af = {.batch = 1, .seq = 2, .heads = 2, .kv_heads = 1, .head_dim = 4, .dtype = DT_BF16};
    af.qkv = h, af.probs = h, af.out = h;
    CHECKF(backend_check_attention_fwd(NULL, &af, &e) == ST_OK, "%s", e.msg);
    AttnFwdDesc afs[3] = {af, af, af};
    afs[0].dtype = DT_E4M3, afs[1].kv_heads = 3, afs[2].seq = 0;
    const char *const afm[3] = {"attention_fwd: activation dtype e4m3 is not fp32, fp16 or bf16",
                                "attention_fwd: 3 KV heads must be at least 1 and divide the 2 heads",
                                "attention_fwd: empty shape"};
    for (size_t i = 0; i < 3; i++)
        check_case("attention_fwd", i, backend_check_attention_fwd(NULL, &afs[i], &e), ST_USAGE, e.msg, afm[i]);
    AttnBwdDesc ab = {.batch = 1, .seq = 2, .heads = 2, .kv_heads = 2, .head_dim = 4, .dtype = DT_E5M2};
    check_case("attention_bwd", 0, backend_check_attention_bwd(NULL, &ab, &e), ST_USAGE, e.msg,
               "attention_bwd: activation dtype e5m2 is not fp32, fp16 or bf16");
    RopeDesc rp = {.batch = 1, .seq = 2, .heads = 2, .kv_heads = 1, .head_dim = 4, .dtype = DT_FP32};
    rp.qkv = h, rp.cos_sin = f;
    CHECKF(backend_check_rope(NULL, &rp, &e) == ST_OK, "%s", e.msg);
    RopeDesc rps[2] = {rp, rp};
    rps[0].dtype = DT_E4M3, rps[1].head_dim = 3;
    const char *const rpm[2] = {"rope: activation dtype e4m3 is not fp32, fp16 or bf16",
                                "rope: head_dim 3 is odd (pairs are rotated)"};
    for (size_t i = 0; i < 2; i++)
        check_case("rope", i, backend_check_rope(NULL, &rps[i], &e), ST_USAGE, e.msg, rpm[i]);

    /* the activations: both pointers (all three backward) unless there are no rows; SwiGLU reads two inputs per
     * output, so its output cannot overwrite its input, where GELU's element-wise form may run in place */
    ActFwdDesc ac = {.mlp = MLP_SWIGLU, .rows = 2, .cols = 1, .dtype = DT_BF16, .in = h, .out = f};
    CHECKF(backend_check_act_fwd(NULL, &ac, &e) == ST_OK, "%s", e.msg);
    ActFwdDesc acs[4] = {ac, ac, ac, ac};
    acs[0].in = NULL, acs[1].out = NULL, acs[2].out = (void *)h, acs[3].cols = 0;
    const char *const acm[4] = {"act_fwd: missing pointer", "act_fwd: missing pointer",
                                "act_fwd: swiglu's output cannot overwrite its input", "act_fwd: zero width"};
    for (size_t i = 0; i < 4; i++)
        check_case("act_fwd", i, backend_check_act_fwd(NULL, &acs[i], &e), ST_USAGE, e.msg, acm[i]);
    ActFwdDesc acg = acs[2];
    acg.mlp = MLP_GELU; /* GELU in place */
    CHECKF(backend_check_act_fwd(NULL, &acg, &e) == ST_OK, "%s", e.msg);
    acg = acs[0], acg.rows = 0; /* nothing to do: no pointer needed */
    CHECKF(backend_check_act_fwd(NULL, &acg, &e) == ST_OK, "%s", e.msg);
    ActBwdDesc abw = {.mlp = MLP_SWIGLU, .rows = 2, .cols = 1, .dtype = DT_BF16, .in = h, .dout = f, .din = d4};
    CHECKF(backend_check_act_bwd(NULL, &abw, &e) == ST_OK, "%s", e.msg);
    ActBwdDesc abws[5] = {abw, abw, abw, abw, abw};
    abws[0].in = NULL, abws[1].dout = NULL, abws[2].din = NULL, abws[3].din = (void *)h, abws[4].din = (void *)f;
    for (size_t i = 0; i < 5; i++)
        check_case("act_bwd", i, backend_check_act_bwd(NULL, &abws[i], &e), ST_USAGE, e.msg,
                   i < 3 ? "act_bwd: missing pointer"
                         : "act_bwd: swiglu's input gradient cannot overwrite its input or output gradient");
    ActBwdDesc abg = abws[4];
    abg.mlp = MLP_GELU; /* GELU's input gradient over its output gradient: element-wise, allowed */
    CHECKF(backend_check_act_bwd(NULL, &abg, &e) == ST_OK, "%s", e.msg);

    /* amax: an element dtype, an output, and an input unless it is empty */
    CHECKF(backend_check_amax(NULL, h, DT_BF16, 2, f, &e) == ST_OK, "%s", e.msg);
    CHECKF(backend_check_amax(NULL, NULL, DT_BF16, 0, f, &e) == ST_OK, "%s", e.msg);
    check_case("amax", 0, backend_check_amax(NULL, NULL, DT_BF16, 2, f, &e), ST_USAGE, e.msg, "amax: missing pointer");
    check_case("amax", 1, backend_check_amax(NULL, h, DT_BF16, 2, NULL, &e), ST_USAGE, e.msg, "amax: missing pointer");
    check_case("amax", 2, backend_check_amax(NULL, h, DT_NONE, 2, f, &e), ST_USAGE, e.msg,
               "amax: dtype none is not supported");

    int32_t tg[2] = {0, 1};
    CHECKF(backend_check_xent_fwd_bwd(NULL, f, DT_FP32, 2, 2, 2, tg, 0.5f, f, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(backend_check_xent_fwd_bwd(NULL, f, DT_FP32, 2, 3, 2, tg, 0.5f, f, &e), ST_USAGE);
    CHECK_STR(e.msg, "xent: vocab 3 must be in [1, 2]");
    CHECK_EQ_INT(backend_check_xent_fwd_bwd(NULL, f, DT_FP32, 2, 0, 2, tg, 0.5f, f, &e), ST_USAGE);
    CHECK_STR(e.msg, "xent: vocab 0 must be in [1, 2]");

    /* adamw_multi: each entry is adamw's check, named by its index; lr, betas, eps and step are shared */
    AdamWDesc al[2] = {{.n = 4,
                        .h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1, .grad_scale = 1},
                        .master = f,
                        .m = f,
                        .v = f,
                        .grad = f,
                        .grad_dtype = DT_FP32}};
    al[1] = al[0], al[1].h.weight_decay = 0.1f, al[1].h.grad_scale = 0.5f; /* each tensor's own: allowed */
    AdamWMultiDesc am = {.count = 2, .list = al, .list_dev = al};
    CHECKF(backend_check_adamw_multi(NULL, &am, &e) == ST_OK, "%s", e.msg);
    am.list_dev = NULL; /* the backend copies the list */
    CHECKF(backend_check_adamw_multi(NULL, &am, &e) == ST_OK, "%s", e.msg);
    am.list = NULL;
    CHECK_EQ_INT(backend_check_adamw_multi(NULL, &am, &e), ST_USAGE);
    CHECK_STR(e.msg, "adamw_multi: missing tensor list");
    am.list = al, al[1].v = NULL;
    CHECK_EQ_INT(backend_check_adamw_multi(NULL, &am, &e), ST_USAGE);
    CHECK_STR(e.msg, "adamw_multi: tensor 1: adamw: missing state");
    al[1].v = f, al[1].h.step = 2;
    CHECK_EQ_INT(backend_check_adamw_multi(NULL, &am, &e), ST_USAGE);
    CHECK_STR(e.msg, "adamw_multi: tensor 1: lr, betas, eps and step must equal tensor 0's");
    CHECK_EQ_INT(backend_check_adamw_multi(NULL, NULL, &e), ST_USAGE);
    CHECK_STR(e.msg, "adamw_multi: no descriptor");
}

/* model_check on a one-rank plan of fx_llama (4 heads of 8 over 2 KV heads, rotary positions) with one
 * thing changed in a copy of the plan's model or input. */
static void test_model_refusals(void)
{
    static Plan base;
    static ModelSpec s;
    ModelSpec l = fx_llama();
    Recipe r = fx_recipe("megatron-bf16");
    Err e = {0};
    CHECKF(!fx_plan(&l, &r, 2, 1, &base, &e), "%s", e.msg);
    static const struct {
        int change;
        Status st;
        const char *msg;
    } cases[] = {
        {0, ST_OK, NULL},
        {1, ST_UNAVAILABLE,
         "the executor runs data, tensor and pipeline parallelism (cp 2 given); context parallelism is not "
         "implemented yet"},
        {2, ST_UNAVAILABLE,
         "the executor materializes attention scores without recompute or dropout; plan it that way "
         "(exec_plan_input)"},
        {3, ST_USAGE, "model fx-llama: unknown norm, mlp or position type"},
        {4, ST_USAGE, "model fx-llama: 4 heads and 3 KV heads of 8 (KV heads must divide heads)"},
        {5, ST_USAGE, "model fx-llama: 4 heads and 2 KV heads of 0 (KV heads must divide heads)"},
        {6, ST_USAGE, "model fx-llama: rotary positions need an even head_dim (got 7)"},
        {7, ST_OK, NULL}, /* an odd head_dim with learned positions */
        {8, ST_USAGE, "the vocabulary must have at least 2 tokens"},
        {9, ST_OK, NULL}, /* 2^31 tokens: ids 0 .. 2^31 - 1 = INT32_MAX fit int32 */
        {10, ST_USAGE,
         "vocabulary 2147483649 does not fit int32 token ids (at most 2^31 tokens)"}, /* id 2^31 does not */
        {11, ST_USAGE, "--seq must be at least 2"},
        {12, ST_USAGE, "the plan's dp is 0"},
        {13, ST_USAGE, "the plan has no micro-batches"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Plan p = base;
        s = *p.in.model;
        p.in.model = &s;
        switch (cases[i].change) {
        case 1: p.in.cp = 2; break;
        case 2: p.in.dropout = 1; break;
        case 3: s.mlp = MLP_COUNT_; break;
        case 4: s.kv_heads = 3; break;
        case 5: s.head_dim = 0; break;
        case 6: s.head_dim = 7; break;
        case 7: s.head_dim = 7, s.pos = POS_LEARNED; break;
        case 8: s.vocab = 1; break;
        case 9: s.vocab = 2147483648u; break;
        case 10: s.vocab = 2147483649u; break;
        case 11: p.seq = 1; break;
        case 12: p.in.dp = 0; break;
        case 13: p.microbatches = 0; break;
        }
        e = (Err){0};
        Status st = model_check(&p, &e);
        check_case("model", i, st, cases[i].st, e.msg, cases[i].msg);
    }
}

/* Communicators: the names comm_create knows and the backends each carries; the wrappers' refusals when a
 * library lacks a call; the payload check; and a single-rank group split from a communicator, whose calls
 * count in its root's table (exec/comm/comm.h: one table per rank whatever group moved the bytes). */
static void test_comm_refusals(void)
{
    Comm *c = NULL, *g = NULL;
    Err e = {0};
    CHECK_EQ_INT(comm_create("tcp", NULL, &c, &e), ST_USAGE);
    CHECK_STR(e.msg, "unknown communicator 'tcp' (known: single, mpi, nccl)");
    CHECK(c == NULL);
    Backend gpu = {.name = "cuda"}, cpu = {.name = "cpu"};
    CHECK_EQ_INT(comm_create("mpi", &gpu, &c, &e), ST_UNAVAILABLE);
    CHECK_STR(e.msg, "mpi: carries host memory, the cpu backend's (this run uses cuda)");
    CHECK_EQ_INT(comm_create("nccl", &cpu, &c, &e), ST_UNAVAILABLE);
#ifdef FP8PLAN_HAVE_CUDA
    CHECK_STR(e.msg, "nccl: needs the cuda backend (this run uses cpu)");
#else
    CHECK_STR(e.msg, "nccl: fp8plan was built without the CUDA backend");
#endif
    uint64_t bytes = 1;
    CHECK_EQ_INT(comm_payload(3, DT_NONE, &bytes, &e), ST_USAGE);
    CHECK_STR(e.msg, "collective: dtype none has no size");
    CHECK_EQ_INT(comm_payload(1ull << 63, DT_FP32, &bytes, &e), ST_OVERFLOW);
    CHECK_STR(e.msg, "collective: 9223372036854775808 elements overflow");
    CHECK(comm_payload(1ull << 61, DT_FP32, &bytes, &e) == ST_OK && bytes == 1ull << 63);

    CHECKF(comm_create(NULL, NULL, &c, &e) == ST_OK, "%s", e.msg); /* no name: the single-rank one */
    if (!c) return;
    CHECK_STR(c->name, "single");
    CHECKF(comm_split(c, 5, 0, &g, &e) == ST_OK, "%s", e.msg);
    if (g) {
        CHECK(g->parent == c && g->size == 1 && g->rank == 0);
        float v[4] = {0};
        /* 4 FP32 values: a payload of 16 B, no bus bytes over one rank; counted in c's table, not g's */
        CHECK(g->all_reduce(g, CO_AMAX_AR, NULL, v, 4, DT_FP32, COMM_MAX, &e) == ST_OK);
        CHECK(c->stats[CO_AMAX_AR].calls == 1 && c->stats[CO_AMAX_AR].payload_bytes == 16);
        CHECK(c->stats[CO_AMAX_AR].bus_bytes == 0 && c->total.calls == 1);
        CHECK(g->stats[CO_AMAX_AR].calls == 0 && g->total.calls == 0);
        g->destroy(g);
    }
    Comm bare = *c;
    bare.reduce_scatter_v = NULL, bare.all_gather_v = NULL, bare.split = NULL;
    uint64_t counts[1] = {1};
    float v1[1] = {0};
    CHECK_EQ_INT(comm_reduce_scatter_v(&bare, CO_COUNT_, NULL, v1, counts, DT_FP32, COMM_SUM, &e), ST_UNAVAILABLE);
    CHECK_STR(e.msg, "communicator single: no uneven reduce-scatter (sharded states) yet");
    CHECK_EQ_INT(comm_all_gather_v(&bare, CO_COUNT_, NULL, v1, counts, DT_FP32, &e), ST_UNAVAILABLE);
    CHECK_STR(e.msg, "communicator single: no uneven all-gather (sharded states) yet");
    g = (Comm *)&bare;
    CHECK_EQ_INT(comm_split(&bare, 0, 0, &g, &e), ST_UNAVAILABLE);
    CHECK_STR(e.msg, "communicator single: no sub-communicators (rank groups) yet");
    CHECK(g == NULL);
    c->destroy(c);
}

int main(void)
{
    RUN(test_comm_refusals);
    RUN(test_model_refusals);
    RUN(test_recipe_refusals);
    RUN(test_gemm_refusals);
    RUN(test_op_refusals);
    return test_summary();
}
