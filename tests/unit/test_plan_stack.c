/* tests/unit/test_plan_stack.c — what a software stack changes, worked by hand
 * on the tiny GPT (tests/support/fixtures.c): main-gradient dtype, FP8 weight
 * caching, fused vs unfused SwiGLU, op-level recompute, uneven pipeline
 * stages, the memory limit (max_mem_frac), and models/stacks.csv parsing. */
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "planner/plan.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

#define SH(x) (1u << STATE_##x)

/* Linear weights 2 x 768 = 1536, other 336 (test_plan.c works both out). */
static void test_main_grad_dtype(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("megatron-bf16", 0); /* fp32 gradients */
    PlanInput in = fx_input(&m, &g, &r);
    in.main_grad = MAIN_GRAD_BF16; /* Megatron-Core with grad_reduce_in_fp32 off: a bf16 main_grad buffer */
    Plan p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p.mem[MT_GRAD_OTHER].bytes, 336 * 2);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 1536 * 4);        /* the master stays fp32 */
    CHECK_NEAR(plan_state_bytes_per_param(&in, NULL), 16.0, 0); /* 2 + 4 + 2 + 4 + 4 */
    in.main_grad = MAIN_GRAD_RECIPE;
    CHECK_NEAR(plan_state_bytes_per_param(&in, NULL), 18.0, 0);
    /* fp32 over a recipe that keeps bf16 gradients (torchtitan's FSDP reduce dtype is fp32) */
    Recipe r16 = r;
    r16.gemm.dt[STATE_GRAD] = r16.other.dt[STATE_GRAD] = DT_BF16;
    in.recipe = &r16, in.main_grad = MAIN_GRAD_FP32;
    p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 1536 * 4);
    /* FP8 gradients stay FP8 whatever the stack says */
    Recipe r8 = r;
    r8.gemm.dt[STATE_GRAD] = DT_E4M3;
    in.recipe = &r8, in.main_grad = MAIN_GRAD_BF16;
    p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 1536 * 1);
}

/* --moment-dtype (Megatron-Core's precision-aware optimizer, --exp-avg-dtype / --exp-avg-sq-dtype): both moments of
 * every parameter in the dtype given, the optimizer streaming them as kept. Linear weights 1536, other 336: 1872. */
static void test_moment_dtype(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("megatron-bf16", 0); /* bf16 weight, fp32 master, grad, m and v */
    PlanInput in = fx_input(&m, &g, &r);
    Plan p32 = ox_build(&in);
    in.moment_dt = MOMENT_BF16;
    Plan p16 = ox_build(&in);
    CHECK_EQ_U64(p16.mem[MT_OPTIM_M_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p16.mem[MT_OPTIM_V_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p16.mem[MT_OPTIM_M_OTHER].bytes, 336 * 2); /* every parameter's, not the linears' only */
    CHECK_EQ_U64(p16.mem[MT_OPTIM_V_OTHER].bytes, 336 * 2);
    CHECK(p16.mem[MT_OPTIM_M_GEMM].dtype == DT_BF16 && p16.mem[MT_OPTIM_V_OTHER].dtype == DT_BF16);
    CHECK_EQ_U64(p16.mem[MT_MASTER_GEMM].bytes, 1536 * 4); /* the master and the gradient stay fp32 */
    CHECK_EQ_U64(p16.mem[MT_GRAD_GEMM].bytes, 1536 * 4);
    /* the states: 1872 x (2 + 4 + 4 + 4 + 4) = 33,696 B -> 1872 x (2 + 4 + 4 + 2 + 2) = 26,208 B */
    CHECK_EQ_U64(p32.cat_bytes[MC_STATE], 33696);
    CHECK_EQ_U64(p16.cat_bytes[MC_STATE], 26208);
    CHECK_NEAR(plan_state_bytes_per_param(&in, NULL), 14.0, 0); /* 2 + 4 + 4 + 2 + 2 */
    /* the optimizer (plan_time.c): the gradient read (1872 x 4 = 7,488), master, m and v read and written
     * (2 x 3 x 7,488 = 44,928), the bf16 weight written (1872 x 2 = 3,744): 56,160 B. With bf16 moments kept
     * 7,488 + 2 x (7,488 + 3,744 + 3,744) + 3,744 = 41,184 B, and TE's FusedAdam steps each moment element in an
     * fp32 copy: .float() 2 + 4, the step 4 + 4 (2 + 2 counted), .bfloat16() 4 + 2 and copy_ 2 + 2 = 20 B more,
     * 2 x 1872 x 20 = 74,880: 116,064 B, at the same HBM rate (the precision-aware optimizer is slower, not faster) */
    CHECK(p32.time.optimizer_s > 0);
    CHECK_REL(p16.time.optimizer_s, p32.time.optimizer_s * 116064.0 / 56160.0, 1e-12);
    /* fp32 over a recipe that keeps bf16 moments (deepseek-v3's linears): 4 B each again */
    Recipe r16 = r;
    r16.gemm.dt[STATE_M] = r16.gemm.dt[STATE_V] = DT_BF16;
    in.recipe = &r16, in.moment_dt = MOMENT_FP32;
    Plan p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_OPTIM_M_GEMM].bytes, 1536 * 4);
    CHECK_EQ_U64(p.cat_bytes[MC_STATE], 33696);
    in.moment_dt = MOMENT_RECIPE;
    p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_GEMM].bytes, 1536 * 2);
    /* sharded by the distributed optimizer over dp 2: half of each moment, 1536 / 2 x 2 = 1,536 B */
    Recipe rs = fx_bf16_recipe("megatron-bf16", SH(MASTER) | SH(M) | SH(V));
    in.recipe = &rs, in.moment_dt = MOMENT_BF16, in.dp = 2, in.sharding = SHARD_DIST_OPT;
    p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_OPTIM_M_GEMM].bytes, 1536);
    CHECK_EQ_U64(p.mem[MT_OPTIM_M_GEMM].shards, 2);
    /* a recipe whose moments carry a scale (FP8-LM's e4m3 m, fp16 v) keeps them: refused, naming the option */
    Recipe rf = r;
    rf.gemm.dt[STATE_M] = DT_E4M3, rf.gemm.dt[STATE_V] = DT_FP16, rf.gemm.scaled_mask = SH(M) | SH(V);
    in = fx_input(&m, &g, &rf);
    in.moment_dt = MOMENT_FP32;
    Err e;
    CHECK(plan_validate(&in, &e) == REJECT_MOMENTS && e.st == ST_USAGE);
    CHECKF(strstr(e.msg, "--moment-dtype fp32: recipe megatron-bf16 keeps scaled Adam moments (m e4m3, v fp16") ==
               e.msg,
           "%s", e.msg);
    in.moment_dt = MOMENT_RECIPE;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    in.moment_dt = (MomentDtype)MOMENT_COUNT_;
    in.recipe = &r;
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
}

static void test_fp8_weight_cache(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 8; /* 8 micro-batches of 1 */
    Plan on = ox_build(&in);
    CHECK_EQ_U64(on.mem[MT_FP8_ROWWISE].bytes, 1536);
    CHECK_EQ_U64(on.mem[MT_FP8_COLWISE].bytes, 1536);
    in.fp8_weight_cache = 0;
    Plan off = ox_build(&in);
    /* not cached: no persistent copies; each layer saves its 768 x (1 + 1) B of copies for its backward,
     * 2 layers in flight: 3072 B more FP8 activations */
    CHECK_EQ_U64(off.mem[MT_FP8_ROWWISE].bytes, 0);
    CHECK_EQ_U64(off.mem[MT_FP8_COLWISE].bytes, 0);
    CHECK_EQ_U64(off.mem[MT_ACT_LAYER_FP8].bytes - on.mem[MT_ACT_LAYER_FP8].bytes, 2 * 768 * 2);
    /* and the weights are cast every micro-batch instead of once a step: 8 x the cast time */
    CHECK(on.time.weight_cast_s > 0);
    CHECK_REL(off.time.weight_cast_s, 8 * on.time.weight_cast_s, 1e-12);
}

static void test_swiglu_and_op_recompute(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    /* op-level recompute on the GeLU tiny model (tok 4, h 8, q = kv = 8, 2 heads, F 32) keeps per layer: the
     * input 4 x 8 x 2 = 64, Q and V 4 x 16 x 2 = 128, the attention output 4 x 8 x 2 = 64 and its fp32
     * log-sum-exp 4 x 2 x 4 = 32, FC1's output 4 x 32 x 2 = 256: 544 B; two layers 1088 */
    in.recompute = RECOMPUTE_OP;
    Plan p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 2 * 544);
    CHECK_EQ_U64(p.mem[MT_ACT_ATTN].bytes, 0);
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_FP8].bytes, 0);
    /* SwiGLU (FFN 32 per half): op recompute also keeps w2's output 4 x 8 x 2 = 64 -> 608 per layer */
    ModelSpec sw = m;
    sw.mlp = MLP_SWIGLU;
    in.model = &sw;
    p = ox_build(&in);
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 2 * 608);
    /* unfused SwiGLU keeps silu(gate) beside gate and up: + 4 x 32 x 2 = 256 per layer (8F vs 6F per token
     * in bytes: 2 x 32 x 2 = 128 fused, 3 x 32 x 2 = 192 unfused, per token) */
    in.recompute = RECOMPUTE_NONE;
    Plan fused = ox_build(&in);
    in.fused_swiglu = 0;
    Plan unfused = ox_build(&in);
    CHECK_EQ_U64(unfused.mem[MT_ACT_LAYER_HP].bytes - fused.mem[MT_ACT_LAYER_HP].bytes, 2 * 256);
}

static void test_uneven_stages(void)
{
    ModelSpec m = fx_tiny_model();
    m.layers = 10, m.tied_embeddings = 0;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 4, in.gbs = 8;
    Err e;
    Plan p;
    CHECK(plan_build(&in, &p, &e) == ST_USAGE); /* 10 layers on 4 even stages */
    CHECK(strstr(e.msg, "--first-stage-layers") != NULL);
    /* 1 + 4 + 4 + 1: the middle stages hold the most and are reported */
    in.first_stage_layers = 1, in.last_stage_layers = 1;
    p = ox_build(&in);
    CHECK_EQ_INT(p.first_layers, 1);
    CHECK_EQ_INT(p.mid_layers, 4);
    CHECK_EQ_INT(p.last_layers, 1);
    CHECK_EQ_INT(p.stage_layers, 4);
    CHECK_EQ_U64(p.params_gemm_gpu, 4 * 768);
    /* only the first given: the other 3 share 9 evenly */
    in.first_stage_layers = 1, in.last_stage_layers = 0;
    p = ox_build(&in);
    CHECK_EQ_INT(p.mid_layers, 3);
    CHECK_EQ_INT(p.last_layers, 3);
    /* counts that do not add up, and more than the model has */
    in.first_stage_layers = 2, in.last_stage_layers = 1; /* 7 over 2 stages */
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECK(strstr(e.msg, "evenly") != NULL);
    in.first_stage_layers = 8, in.last_stage_layers = 8;
    CHECK(plan_validate(&in, NULL) == REJECT_LAYERS_PP);
    /* virtual stages: every stage needs at least vpp layers (1 < 2) */
    in.first_stage_layers = 1, in.last_stage_layers = 1, in.vpp = 2;
    CHECK(plan_validate(&in, NULL) == REJECT_LAYERS_PP);
    /* ... except an end stage's chunk that holds the embedding or the loss alone (account_for_embedding / loss):
     * 10 layers on pp 6 x vpp 2 as 1, 2 x 4, 1 = (10 + 2) / 6 = 2 slots a stage, the end stages one layer short */
    in.pp = 6, in.world = 0, in.gbs = 60; /* 60 micro-batches: divisible by pp 6 and 10 */
    CHECK_EQ_INT(plan_validate(&in, NULL), REJECT_NONE);
    p = ox_build(&in);
    CHECK_EQ_INT(p.first_layers, 1);
    CHECK_EQ_INT(p.mid_layers, 2);
    CHECK_EQ_INT(p.last_layers, 1);
    /* a middle stage below vpp is still refused: 10 on pp 10 x vpp 2 as 1, 1 x 8, 1 */
    in.pp = 10;
    CHECK(plan_validate(&in, NULL) == REJECT_LAYERS_PP);
}

static void test_memory_limit(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    Plan p = ox_build(&in);
    uint64_t total = p.total_bytes;
    /* a GPU whose memory the plan fills to 97 %: within capacity, above the 0.95 default limit */
    g.hbm_bytes = total * 100 / 97;
    p = ox_build(&in);
    CHECK_EQ_U64(p.total_bytes, total);
    CHECK_EQ_U64(p.capacity_bytes, g.hbm_bytes);
    CHECK_EQ_U64(p.limit_bytes, (uint64_t)(0.95 * (double)g.hbm_bytes));
    CHECK(!p.fits);
    CHECK((p.advice_mask & (1u << ADV_HEADROOM)));
    CHECK(!(p.advice_mask & (1u << ADV_OOM)));
    in.max_mem_frac = 0.98;
    p = ox_build(&in);
    CHECK(p.fits);
    CHECK(!(p.advice_mask & (1u << ADV_HEADROOM)));
    /* the allocator's reserve is released before an out-of-memory error (it shrinks into what is left): one
     * byte less memory is one byte less reserve, and the plan still fits a limit of 1 */
    uint64_t frag = p.mem[MT_FRAGMENTATION].bytes;
    CHECK(frag > 0);
    g.hbm_bytes = total - 1;
    in.max_mem_frac = 1;
    p = ox_build(&in);
    CHECK(p.fits);
    CHECK_EQ_U64(p.mem[MT_FRAGMENTATION].bytes, frag - 1);
    /* one byte short of what the plan needs without any reserve: out of memory */
    g.hbm_bytes = total - frag - 1;
    p = ox_build(&in);
    CHECK(!p.fits);
    CHECK_EQ_U64(p.mem[MT_FRAGMENTATION].bytes, 0);
    CHECK((p.advice_mask & (1u << ADV_OOM)));
}

static const char stack_head[] =
    "name,ep_overlap,attention,sequence_parallel,fused_swiglu,main_grad,fp8_weight_cache,kernel_fusion,launch_us,loss_"
    "bytes,"
    "tp_overlap,tp_overlap_on,dp_overlap,pp_overlap,cp_overlap,alloc_reserve,calibrated,source,host_op_us,moe_host_"
    "ops,expert_host_ops\n";

static Status parse(const char *row, Catalog *c, Err *e)
{
    char text[1024];
    snprintf(text, sizeof text, "%s%s", stack_head, row);
    return catalog_parse_stacks(c, text, strlen(text), "stacks.csv", e);
}

static void test_stacks_csv(void)
{
    Catalog *c = calloc(1, sizeof *c);
    Err e;
    CHECK(parse("s1,0.25,flash3,yes,no,bf16,no,compile,3.5,12,0.5,0.75,1,0,1,0.1,no,\"a, b\",12.5,300,6\n", c, &e) ==
          ST_OK);
    CHECK_EQ_INT(c->nstacks, 1);
    const StackSpec *s = catalog_stack(c, "s1");
    CHECK(s != NULL);
    if (s) {
        CHECK(s->attn == ATTN_FLASH3 && s->sequence_parallel && !s->fused_swiglu);
        CHECK(s->main_grad == MAIN_GRAD_BF16 && !s->fp8_weight_cache && s->fusion == FUSE_COMPILE);
        CHECK_NEAR(s->launch_s, 3.5e-6, 1e-18);
        CHECK_EQ_INT(s->loss_bytes, 12);
        CHECK_NEAR(s->overlap_tp, 0.5, 0);
        CHECK_NEAR(s->overlap_tp_on, 0.75, 0);
        CHECK_NEAR(s->overlap_ep, 0.25, 0);
        CHECK_NEAR(s->alloc_reserve, 0.1, 0);
        CHECK_NEAR(s->host_op_s, 12.5e-6, 1e-18);
        CHECK_NEAR(s->moe_host_ops, 300, 0);
        CHECK_NEAR(s->expert_host_ops, 6, 0);
        CHECK_STR(s->source, "a, b");
        PlanInput in;
        plan_input_defaults(&in);
        plan_input_use_stack(&in, s);
        CHECK(in.stack == s && in.attn == ATTN_FLASH3 && in.fusion == FUSE_COMPILE && !in.fused_swiglu);
        CHECK_NEAR(in.frag_frac, 0.1, 0);
        CHECK_NEAR(in.overlap_dp, 1, 0);
        CHECK_NEAR(in.overlap_ep, 0.25, 0);
        CHECK(in.host_op_s == s->host_op_s && in.moe_host_ops == 300 && in.expert_host_ops == 6);
    }
    struct {
        const char *row, *want;
    } bad[] = {
        {"s,0,flash9,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", "row 2, column attention: 'flash9'"},
        {"s,0,te,maybe,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", "sequence_parallel"},
        {"s,0,te,yes,no,fp16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", "main_grad"},
        {"s,0,te,yes,no,bf16,no,xla,3,12,0,0,0,0,0,0,no,x,,,\n", "kernel_fusion"},
        {"s,0,te,yes,no,bf16,no,te,-1,12,0,0,0,0,0,0,no,x,,,\n", "launch_us"},
        {"s,0,te,yes,no,bf16,no,te,3,1,0,0,0,0,0,0,no,x,,,\n", "loss_bytes"},
        {"s,0,te,yes,no,bf16,no,te,3,12,1.5,0,0,0,0,0,no,x,,,\n", "tp_overlap"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,nan,no,x,,,\n", "alloc_reserve"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,-0.5,0,0,0,0,no,x,,,\n", "tp_overlap_on"},
        {"s,2,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", "column ep_overlap: '2' is out of range"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,-1,,\n", "column host_op_us: '-1'"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,10,nan,\n", "column moe_host_ops: 'nan'"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,10,300,1e9\n", "column expert_host_ops: '1e9'"},
        {"s,0,te,yes,maybe,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", "column fused_swiglu: 'maybe'"},
        {"s,0,te,yes,no,bf16,maybe,te,3,12,0,0,0,0,0,0,no,x,,,\n", "column fp8_weight_cache: 'maybe'"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,maybe,x,,,\n", "column calibrated: 'maybe'"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,,,,\n", "row 2, column source: empty value"},
        {"s,0,te,yes,no,bf16,no,te,1001,12,0,0,0,0,0,0,no,x,,,\n", "column launch_us: '1001' is out of range"},
        /* a name is a CLI word: letters, digits, '.', '_' and '-' only (a space would split it on the command line) */
        {"my stack,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n",
         "row 2, column name: 'my stack' may only hold letters, digits, '.', '_' and '-'"},
        {"s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\ns,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n",
         "repeats row 2"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(c, 0, sizeof *c);
        CHECKF(parse(bad[i].row, c, &e) == ST_DATA, "row %u accepted", i);
        CHECKF(strstr(e.msg, "stacks.csv") && strstr(e.msg, bad[i].want), "row %u: %s", i, e.msg);
    }
    /* the header the column list (catalog_stack.c's STACK_COLUMNS) makes: the shipped file's order, alias optional */
    CHECK_STR(catalog_stack_columns,
              "name,attention,sequence_parallel,fused_swiglu,main_grad,fp8_weight_cache,kernel_fusion,launch_us,"
              "loss_bytes,tp_overlap,tp_overlap_on,dp_overlap,pp_overlap,cp_overlap,ep_overlap,alloc_reserve,"
              "host_op_us,moe_host_ops,expert_host_ops,calibrated,source,?alias,?expert_tp,?permute_fusion");
    /* expert_tp: tp, 1 or blank (1); absent from the header: 1 for every row */
    static const struct {
        const char *cell;
        int want; /* -1: refused */
    } etp[] = {{"tp", 1}, {"1", 0}, {"", 0}, {"2", -1}, {"TP", -1}};
    for (unsigned i = 0; i < sizeof etp / sizeof *etp; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%.*s,expert_tp\ns,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,,%s\n",
                 (int)strlen(stack_head) - 1, stack_head, etp[i].cell);
        memset(c, 0, sizeof *c);
        Status st = catalog_parse_stacks(c, text, strlen(text), "stacks.csv", &e);
        if (etp[i].want < 0) {
            CHECKF(st == ST_DATA && strstr(e.msg, "row 2, column expert_tp") && strstr(e.msg, "is not tp or 1"),
                   "'%s': %s", etp[i].cell, st ? e.msg : "accepted");
        } else {
            CHECKF(st == ST_OK && c->stacks[0].expert_tp == etp[i].want, "'%s': %s", etp[i].cell, st ? e.msg : "");
        }
    }
    memset(c, 0, sizeof *c);
    CHECK(parse("s,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,\n", c, &e) == ST_OK && !c->stacks[0].expert_tp);
    CHECK(!c->stacks[0].permute_fusion); /* permute_fusion absent from the header: no */
    /* permute_fusion: yes, no or blank (no) */
    static const struct {
        const char *cell;
        int want; /* -1: refused */
    } pf[] = {{"yes", 1}, {"no", 0}, {"", 0}, {"fused", -1}};
    for (unsigned i = 0; i < sizeof pf / sizeof *pf; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "%.*s,expert_tp,permute_fusion\ns,0,te,yes,no,bf16,no,te,3,12,0,0,0,0,0,0,no,x,,,,tp,%s\n",
                 (int)strlen(stack_head) - 1, stack_head, pf[i].cell);
        memset(c, 0, sizeof *c);
        Status st = catalog_parse_stacks(c, text, strlen(text), "stacks.csv", &e);
        if (pf[i].want < 0)
            CHECKF(st == ST_DATA && strstr(e.msg, "row 2, column permute_fusion"), "'%s': %s", pf[i].cell,
                   st ? e.msg : "accepted");
        else
            CHECKF(st == ST_OK && c->stacks[0].permute_fusion == pf[i].want, "'%s': %s", pf[i].cell, st ? e.msg : "");
    }
    memset(c, 0, sizeof *c);
    const char *missing = "name,attention\ns,te\n";
    CHECK(catalog_parse_stacks(c, missing, strlen(missing), "stacks.csv", &e) == ST_DATA);
    CHECK(strstr(e.msg, "sequence_parallel") != NULL);
    free(c);
}

int main(void)
{
    RUN(test_main_grad_dtype);
    RUN(test_moment_dtype);
    RUN(test_fp8_weight_cache);
    RUN(test_swiglu_and_op_recompute);
    RUN(test_uneven_stages);
    RUN(test_memory_limit);
    RUN(test_stacks_csv);
    return test_summary();
}
