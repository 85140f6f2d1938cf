/* tests/unit/test_oracle_rules.c — the planner's refusal rules and bookkeeping
 * at their edges, reasoned by hand: an FP8 recipe needs an FP8 peak, uneven
 * pipeline stages get their own state terms, a collective byte count past 2^64
 * is an overflow, a sweep walks the pipeline depths in ascending order, and a
 * list of catalog names cut short stays inside its buffer.
 *
 * An independent oracle: each expected value is worked out in the comment from
 * the inputs (support/oracle_fixtures.h's tiny GPT: 512 linear weights per
 * layer at tp 1), never read back from the planner. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/plan_internal.h"
#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static PlanInput tiny_input(const ModelSpec *m, const GpuSpec *g, const Recipe *r)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r, in.gbs = 1;
    return in;
}

/* FP8 GEMMs need an FP8 rate: on an SM 10.0 GPU (the SM floor 8.9 passes) whose FP8 peak is 0 the TE recipe is
 * refused as hardware (REJECT_HW), while BF16 still runs there. A host profile skips the SM floor (it emulates
 * FP8 exactly: SM 8.0 passes) but not the FP8 rate: with flops_fp8 0 it is refused too. */
static void test_fp8_needs_an_fp8_peak(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe te = fx_te_recipe("te", 0), bf = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &te);
    Err e = {0};
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    g.flops_fp8 = 0;
    CHECK(plan_validate(&in, &e) == REJECT_HW);
    CHECK_CONTAINS(e.msg, "recipe te needs SM 8.9");
    in.recipe = &bf;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    /* a host profile: SM 8.0 is no obstacle, a missing FP8 rate is */
    g.host = 1, g.sm = 80, g.flops_fp8 = 2e15;
    in.recipe = &te;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    g.flops_fp8 = 0;
    CHECK(plan_validate(&in, &e) == REJECT_HW);
}

/* Uneven pipelines: the end stage with other layer counts gets its own linear-layer states (not the first
 * stage's). The tiny GPT (4 layers, 512 linear weights each at tp 1), BF16 recipe: working weights 2 B each.
 *   pp 2, first stage 1 layer -> the last holds 3 (4 - 1) and is the larger stage (3 layers of states and
 *     activations against 1): MT_WEIGHT_GEMM = 3 x 512 x 2 B = 3,072; its FP32 master 3 x 512 x 4 = 6,144.
 *   pp 2, last stage 1 layer -> the first holds 3. With a vocabulary of 65,536 the last stage is still the
 *     larger: both ends hold the 65,536 x 8 embedding (the tied copy), and only the last its fp32 logits
 *     4 tokens x 65,536 x 4 B = 1 MiB and the loss transient 4 x 65,536 x (10 - 4) B = 1.5 MiB, far above two
 *     layers' states and activations (2 x 512 x 18 B = 18,432 + a few KB). Its weights: 1 x 512 x 2 B = 1,024. */
static void test_uneven_stage_states(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &r);
    in.pp = 2, in.gbs = 4, in.first_stage_layers = 1;
    Plan p;
    Err e = {0};
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "first stage 1 layer: %s", e.msg);
    } else {
        CHECK_EQ_U64(p.stage, 1);
        CHECK_EQ_U64(p.stage_layers, 3);
        CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 3072);
        CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 6144);
    }
    ModelSpec big = ox_tiny(65536, 4);
    in.model = &big, in.first_stage_layers = 0, in.last_stage_layers = 1;
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "last stage 1 layer: %s", e.msg);
    } else {
        CHECK_EQ_U64(p.stage, 1);
        CHECK_EQ_U64(p.stage_layers, 1);
        CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 1024);
        CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 2048);
    }
}

/* A byte count of the collectives past 2^64 is an overflow even when the memory terms fit: tp 2 with sequence
 * parallelism, global batch 2^62 -> 2^62 micro-batches of 1; the stage's 4 layers make 4 x 2^62 = 2^64 layer
 * passes, so the TP gather's calls (and its step bytes) pass 2^64. The memory holds one micro-batch in flight
 * (pp 1) and is small. plan_build says ST_OVERFLOW naming the sizes; plan_build_fast says REJECT_OVERFLOW. */
static void test_collective_bytes_overflow(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &r);
    in.tp = 2, in.sp = 1, in.gbs = 1ull << 62;
    Plan p;
    Err e = {0};
    CHECK(plan_build(&in, &p, &e) == ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "passes 2^64");
    PlanReject why = REJECT_NONE;
    CHECK(plan_build_fast(&in, &p, &why) == ST_OVERFLOW);
    CHECK(why == REJECT_OVERFLOW);
    /* the same layout at a global batch of 4 builds */
    in.gbs = 4;
    CHECK(plan_build(&in, &p, &e) == ST_OK);
    /* and past 2^64 again with 2^63 B of CUDA context and 2^63 B of workspace: the overheads are named, with
     * their values, not the sizes (gbs 4, mbs 1, seq 4 fit) */
    in.cuda_context_bytes = in.workspace_bytes = 1ull << 63;
    CHECK(plan_build(&in, &p, &e) == ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "passes 2^64 with the overheads given: --context 9223372036854775808, --workspace "
                          "9223372036854775808, --nccl-mem ");
    CHECK(!strstr(e.msg, "(gbs, mbs, seq)"));
}

/* A sweep evaluates the pipeline depths in ascending order (sweep.h: on_fit sees every plan that fits in
 * evaluation order). 12 GPUs, tp 1 (max_tp 1), cp 1, vpp 1, mbs 1, a 12-layer tiny GPT on a 1 TiB GPU (everything
 * fits), global batch 24 (a multiple of every dp = 12 / pp): pp runs 1, 2, 3, 4, 6, 12 — the divisors of 12, which
 * the walk builds from 12's prime factors as 1, 2, 4, 3, 6, 12 before sorting them. */
typedef struct {
    uint32_t pp[64];
    int n, calls;
} Seen;

static void on_fit(const Plan *p, void *ctx)
{
    Seen *s = ctx;
    s->calls++;
    if ((s->n == 0 || s->pp[s->n - 1] != p->in.pp) && s->n < 64) s->pp[s->n++] = p->in.pp;
}

static void test_sweep_walks_pp_ascending(void)
{
    ModelSpec m = ox_tiny(16, 4);
    m.layers = 12;
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    const Recipe *rs[1] = {&r};
    SweepSpec s;
    memset(&s, 0, sizeof s);
    s.base = tiny_input(&m, &g, &r);
    s.base.gbs = 24;
    s.recipes = rs, s.nrecipes = 1, s.gpus = 12;
    s.max_tp = 1, s.max_vpp = 1, s.max_cp = 1, s.max_mbs = 1;
    Seen seen = {{0}, 0, 0};
    s.on_fit = on_fit, s.on_fit_ctx = &seen;
    Plan top[4];
    int n_top = 0;
    SweepStats st;
    Err e = {0};
    CHECK(sweep_run(&s, top, 4, &n_top, &st, NULL, NULL, &e) == ST_OK);
    /* 6 depths x the recompute modes x the distributed optimizer off / on, each fitting */
    CHECK_EQ_U64(seen.calls, (uint64_t)st.valid);
    CHECK_EQ_U64(seen.calls, 6ull * RECOMPUTE_COUNT_ * 2);
    const uint32_t want[6] = {1, 2, 3, 4, 6, 12};
    CHECK_EQ_INT(seen.n, 6);
    for (int i = 0; i < 6 && i < seen.n; i++)
        CHECKF(seen.pp[i] == want[i], "run %d: pp %u, expected %u", i, seen.pp[i], want[i]);
}

/* catalog_*_names cuts a list that does not fit: with room for 7 bytes, "aa, bb" (6 characters and the NUL)
 * is all of "aa, bb, cc, dd" that fits, and nothing is written past the 7 bytes (the rest of the 32-byte
 * buffer keeps its 'x's). With 15 bytes the whole list (14 characters) fits. */
static void test_names_cut_short(void)
{
    Catalog *c = calloc(1, sizeof *c);
    if (!c) {
        CHECK(c != NULL);
        return;
    }
    const char *nm[4] = {"aa", "bb", "cc", "dd"};
    for (int i = 0; i < 4; i++) strcpy(c->gpus[i].name, nm[i]);
    c->ngpus = 4;
    char buf[32];
    memset(buf, 'x', sizeof buf);
    catalog_gpu_names(c, buf, 7);
    CHECK_STR(buf, "aa, bb");
    int clean = 1;
    for (size_t i = 7; i < sizeof buf; i++) clean &= buf[i] == 'x';
    CHECKF(clean, "bytes past the 7 given were written");
    memset(buf, 'x', sizeof buf);
    catalog_gpu_names(c, buf, 15);
    CHECK_STR(buf, "aa, bb, cc, dd");
    clean = 1;
    for (size_t i = 15; i < sizeof buf; i++) clean &= buf[i] == 'x';
    CHECKF(clean, "bytes past the 15 given were written");
    free(c);
}

/* Layers that do not divide over the pipeline are refused with the product they must divide by: the tiny GPT's
 * 4 layers over pp 3 (4 / 3 leaves 1) -> "pp*vpp = 3"; over pp 2 with vpp 3 (4 / 6) -> "pp*vpp = 6". */
static void test_layers_over_pp_named(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &r);
    in.pp = 3, in.gbs = 3;
    Err e = {0};
    CHECK(plan_validate(&in, &e) == REJECT_LAYERS_PP);
    CHECK_CONTAINS(e.msg, "--pp 3 --vpp 1: oracle-tiny has 4 layers, not divisible by pp*vpp = 3");
    in.pp = 2, in.vpp = 3, in.gbs = 6;
    CHECK(plan_validate(&in, &e) == REJECT_LAYERS_PP);
    CHECK_CONTAINS(e.msg, "--pp 2 --vpp 3: oracle-tiny has 4 layers, not divisible by pp*vpp = 6");
}

/* Virtual stages on an uneven pipeline: only what Megatron-Core launches (TransformerConfig's checks) plans.
 * Each case is L layers, pp, vpp, first / last given, the middle stages' count worked out = (L - f - l) / (pp - 2):
 *   80, pp 4, vpp 3, 20 / 20 -> middle 40 / 2 = 20: 20 mod 3 = 2, and the account_for_embedding/loss form needs
 *     middle s and ends s or s - 1 with s a multiple of 3 (s = 20 is not; s = 21 is not the middle) -> refused,
 *     although it is the even 20 x 4 (the even split is refused too: 80 mod 12 = 8);
 *   12, pp 4, vpp 2, 2 / 2 -> middle 8 / 2 = 4: all even -> plans (explicit counts);
 *   126, pp 8, vpp 8, 15 / 15 -> middle 96 / 6 = 16 = s, a multiple of 8, ends s - 1 -> plans (Llama 3.1 405B,
 *     Megatron-Bridge: (126 + 2) / 8 = 16 per stage, embedding and loss one layer each);
 *   31, pp 2, vpp 4, 15 / 16 -> no middle; 15 + 1 (embedding) = 16 + 0 = s = 16, a multiple of 4 -> plans;
 *   126, pp 16, vpp 5, 7 / 7 -> middle 112 / 14 = 8: 8 mod 5 = 3 -> refused (the sweep's old 7/8/7 on vpp 5);
 *   61, pp 8, vpp 4, 6 / 7 -> middle 48 / 6 = 8 = s; 6 = s - 2 -> refused, and plans with custom_pp_layout
 *     (DeepSeek-V3 through a per-chunk pipeline_model_parallel_layout).
 * Global batches are pp micro-batches (the interleaved schedule's rule) so the accepted ones pass everything. */
static void test_vpp_uneven_split_launchable(void)
{
    static const struct {
        uint32_t L, pp, vpp, f, l;
        int custom, ok;
    } cases[] = {{80, 4, 3, 20, 20, 0, 0}, {12, 4, 2, 2, 2, 0, 1}, {126, 8, 8, 15, 15, 0, 1}, {31, 2, 4, 15, 16, 0, 1},
                 {126, 16, 5, 7, 7, 0, 0}, {61, 8, 4, 6, 7, 0, 0}, {61, 8, 4, 6, 7, 1, 1}};
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        m.layers = cases[i].L;
        PlanInput in = tiny_input(&m, &g, &r);
        in.pp = cases[i].pp, in.vpp = cases[i].vpp, in.gbs = cases[i].pp;
        in.first_stage_layers = cases[i].f, in.last_stage_layers = cases[i].l;
        in.custom_pp_layout = cases[i].custom;
        Err e = {0};
        PlanReject why = plan_validate(&in, &e);
        CHECKF(why == (cases[i].ok ? REJECT_NONE : REJECT_LAYERS_PP), "case %zu (%u layers, pp %u, vpp %u, %u/%u): %s",
               i, cases[i].L, cases[i].pp, cases[i].vpp, cases[i].f, cases[i].l, e.msg);
    }
    m.layers = 80;
    PlanInput in = tiny_input(&m, &g, &r);
    in.pp = 4, in.vpp = 3, in.gbs = 4, in.first_stage_layers = in.last_stage_layers = 20;
    Err e = {0};
    CHECK(plan_validate(&in, &e) == REJECT_LAYERS_PP);
    CHECK_CONTAINS(e.msg, "--vpp 3: Megatron cannot interleave first 20, middle 20, last 20 layers");
}

/* The recipe checks of catalog_parse_recipes read the parsed rows only: a caller's Catalog whose bytes just
 * before the first recipe row (the end of the GPU rows) happen to look like a recipe sharding a master its GEMMs
 * read (no working weight, no FP8 copy, the master bit in dist_opt_shards) still parses a valid recipes file. */
static void test_recipe_checks_read_parsed_rows(void)
{
    Catalog *c = calloc(1, sizeof *c);
    FILE *f = fopen("models/recipes.csv", "rb");
    char *text = malloc(1 << 20);
    size_t len = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    if (f) fclose(f);
    if (!c || !len) {
        CHECKF(0, "models/recipes.csv not read (run from the repository root)");
        free(text);
        free(c);
        return;
    }
    Recipe *before = (Recipe *)(void *)((char *)c->recipes - sizeof(Recipe)); /* inside c: the GPU rows' tail */
    memset(before, 0, sizeof *before);
    before->gemm.shard_mask = 1u << STATE_MASTER;
    Err e = {0};
    CHECKF(catalog_parse_recipes(c, text, len, "recipes.csv", &e) == ST_OK, "%s", e.msg);
    CHECK(c->nrecipes > 0);
    free(text);
    free(c);
}

/* A stack row sets every knob it names (planner/stack.h): each field below is given a value no default has, and
 * plan_input_use_stack must carry each one into the plan input (grad_acc_fusion follows the fusion: TE's list
 * accumulates in the GEMM epilogue, the others do not). */
static void test_stack_sets_every_knob(void)
{
    StackSpec st;
    memset(&st, 0, sizeof st);
    strcpy(st.name, "oracle-stack");
    st.attn = ATTN_CUDNN, st.sequence_parallel = 0, st.fused_swiglu = 0, st.main_grad = MAIN_GRAD_BF16;
    st.fp8_weight_cache = 0, st.fusion = FUSE_TE, st.launch_s = 3e-6, st.loss_bytes = 7;
    st.overlap_tp = 0.11, st.overlap_dp = 0.22, st.overlap_pp = 0.33, st.overlap_cp = 0.44, st.overlap_ep = 0.55;
    st.alloc_reserve = 0.066;
    PlanInput in;
    plan_input_defaults(&in);
    in.sp = in.fused_swiglu = in.fp8_weight_cache = 1, in.grad_acc_fusion = 0;
    plan_input_use_stack(&in, &st);
    CHECK(in.stack == &st);
    CHECK(in.attn == ATTN_CUDNN && in.sp == 0 && in.fused_swiglu == 0 && in.fp8_weight_cache == 0);
    CHECK(in.main_grad == MAIN_GRAD_BF16 && in.fusion == FUSE_TE && in.grad_acc_fusion == 1);
    CHECK(in.launch_s == 3e-6 && in.loss_bytes == 7);
    CHECK(in.overlap_tp == 0.11 && in.overlap_dp == 0.22 && in.overlap_pp == 0.33);
    CHECK(in.overlap_cp == 0.44 && in.overlap_ep == 0.55 && in.frag_frac == 0.066);
    st.fusion = FUSE_COMPILE, st.sequence_parallel = 1;
    plan_input_use_stack(&in, &st);
    CHECK(in.grad_acc_fusion == 0 && in.sp == 1 && in.fusion == st.fusion);
}

/* MFU is the achieved model FLOP/s over a peak: against the FP8 peak (2e15, twice the BF16 1e15) it is half the
 * BF16 figure; a GPU without an FP8 rate (flops_fp8 0, BF16 recipe) has no FP8 MFU: 0, not a division by 0. */
static void test_mfu_against_each_peak(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &r);
    Plan p;
    Err e = {0};
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(p.mfu_bf16_pct > 0);
    CHECK_REL(p.mfu_bf16_pct, 100.0 * p.tflops_per_gpu * 1e12 / 1e15, 1e-12);
    CHECK_REL(p.mfu_fp8_pct, p.mfu_bf16_pct / 2, 1e-12);
    g.flops_fp8 = 0;
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(p.mfu_fp8_pct == 0);
}

/* "Compute-only FP8" (FP8 GEMMs on top of high-precision states) needs every linear-layer state at 2 B or more
 * and a 4 B master: TE's recipe (BF16 weight, FP32 master, gradient, m, v, FP8 copies) is; the same with its
 * working weight stored in FP8 (1 B) is not. */
static void test_compute_only_needs_wide_weights(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe te = fx_te_recipe("te", 0);
    PlanInput in = tiny_input(&m, &g, &te);
    Plan p;
    Err e = {0};
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(p.advice_mask & (1u << ADV_COMPUTE_ONLY));
    te.gemm.dt[STATE_WEIGHT] = DT_E4M3;
    if (plan_build(&in, &p, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(!(p.advice_mask & (1u << ADV_COMPUTE_ONLY)));
}

/* A plan whose figures leave the doubles' range is refused naming the first figure that did, in the order step
 * time, throughput, TFLOP/s per GPU, MFU. A GPU whose BF16 and FP32 rates are inf (gpus.csv takes
 * bf16_tflops 1e300; x 1e12 is inf) computes in no time, so the step is the bytes it moves over HBM. One layer,
 * hidden 1024 (8 heads of 128), FFN 4096 (GeLU), vocabulary 1024 untied, seq 1024, one sequence, one GPU:
 *   parameters: linear 3 x 1024^2 + 1024^2 + 2 x 4 x 1024^2 = 12,582,912; embedding and head 2 x 1,048,576;
 *     3 LayerNorms x 2 x 1024 = 6,144: 14,686,208
 *   model FLOPs F = 6 x (12,582,912 + 1,048,576) x 1024 + 12 x 1 x 1024 x 1024 x 1024
 *     = 83,751,862,272 + 12,884,901,888 = 96,636,764,160; tokens T = 1024
 *   bytes B: at least the optimizer's 14,686,208 x 30 B (gradient 4, master, m and v read and written 24, BF16
 *     weight 2) = 440,586,240; the GEMMs' operands and the kernels add under 1e9 (each linear's three GEMMs move
 *     about 12 B per weight and 2 x 2 B per token and row or column: < 4e8; the kernels some 100 B per token and
 *     hidden unit: ~1e8), so 4.4e8 < B < 2e9.
 * At HBM 1e12 B/s the step (B / 1e12 s), throughput and TFLOP/s are finite and the MFU, TFLOP/s over an inf peak,
 * is 0: the MFU is named. At HBM 1e308 B/s the step is B / 1e308 (~1e-299 s, positive), throughput
 * T x 1e308 / B < 1024e308 / 4.4e8 = 2.3e302 (finite), but F / step = F x 1e308 / B > 9.66e10e308 / 2e9 = 4.8e309
 * passes DBL_MAX (1.8e308): the TFLOP/s per GPU is inf and is the one named, not the throughput. */
static void test_nonfinite_figure_named(void)
{
    ModelSpec m = {.name = "wide",
                   .layers = 1,
                   .hidden = 1024,
                   .ffn_hidden = 4096,
                   .heads = 8,
                   .kv_heads = 8,
                   .head_dim = 128,
                   .vocab = 1024,
                   .seq_len = 1024,
                   .norm = NORM_LAYERNORM,
                   .mlp = MLP_GELU,
                   .pos = POS_ROPE};
    GpuSpec g = ox_big_gpu(1ull << 40);
    g.flops_bf16 = g.flops_fp32 = INFINITY, g.flops_fp8 = 0, g.hbm_bw = 1e12;
    Recipe r = ox_bf16(0);
    PlanInput in = tiny_input(&m, &g, &r);
    in.launch_s = 0, in.eff_hbm = 1;
    Plan p;
    Err e = {0};
    CHECK(plan_build(&in, &p, &e) == ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "the MFU of wide on g with oracle-bf16 is not a finite positive number");
    g.hbm_bw = 1e308;
    CHECK(plan_build(&in, &p, &e) == ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "the TFLOP/s per GPU of wide on g with oracle-bf16 is not a finite positive number");
}

/* The bus factor, nccl-tests' (its README "Performance" section): all-reduce 2(n - 1)/n, all-gather, reduce-scatter
 * and all-to-all (n - 1)/n, a point-to-point send 1, and nothing over one rank. The planner's bytes, the executor's
 * counters and calibrate's bus bandwidth all read it: the plan's bus bytes of a TP all-reduce of S over 4 ranks
 * are floor(S x 1.5). */
static void test_bus_factor(void)
{
    static const struct {
        CommOp op;
        uint64_t n;
        double want;
    } rows[] = {
        {OP_ALL_REDUCE, 4, 1.5},       /* 2 x 3 / 4 */
        {OP_ALL_REDUCE, 2, 1.0},       /* 2 x 1 / 2 */
        {OP_ALL_GATHER, 4, 0.75},      /* 3 / 4 */
        {OP_REDUCE_SCATTER, 8, 0.875}, /* 7 / 8 */
        {OP_ALL_TO_ALL, 8, 0.875},     /* 7 / 8 */
        {OP_SEND_RECV, 2, 1.0},        {OP_ALL_REDUCE, 1, 0.0}, {OP_SEND_RECV, 1, 0.0},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++)
        CHECKF(comm_bus_factor(rows[i].op, rows[i].n) == rows[i].want, "row %u: %g, expected %g", i,
               comm_bus_factor(rows[i].op, rows[i].n), rows[i].want);
    /* the plan's integer bytes from the same factor: S = 1001 B over 4 ranks, 1001 x 1.5 = 1501.5 -> 1501 */
    Ck ck = {0};
    CHECK_EQ_U64(plan_bus_bytes(OP_ALL_REDUCE, 4, 1001, &ck), 1501);
    CHECK_EQ_U64(plan_bus_bytes(OP_ALL_GATHER, 4, 1001, &ck), 750); /* 1001 x 0.75 = 750.75 */
    CHECK_EQ_U64(plan_bus_bytes(OP_SEND_RECV, 2, 1001, &ck), 1001);
    CHECK(!ck.ovf);
}

int main(void)
{
    RUN(test_fp8_needs_an_fp8_peak);
    RUN(test_uneven_stage_states);
    RUN(test_collective_bytes_overflow);
    RUN(test_sweep_walks_pp_ascending);
    RUN(test_names_cut_short);
    RUN(test_layers_over_pp_named);
    RUN(test_vpp_uneven_split_launchable);
    RUN(test_recipe_checks_read_parsed_rows);
    RUN(test_stack_sets_every_knob);
    RUN(test_mfu_against_each_peak);
    RUN(test_compute_only_needs_wide_weights);
    RUN(test_nonfinite_figure_named);
    RUN(test_bus_factor);
    return test_summary();
}
