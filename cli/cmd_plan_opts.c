/* cli/cmd_plan_opts.c — the options of plan, compare, sweep, report html, tui and check-log: one table
 * (cli/opts.h) holding the plan inputs (cli/plan_flags.c) and the planner's own settings, the mask
 * (PO_*) saying which a command takes; the help of the shared options is generated from it. */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/num.h"

/* ---- readers of the values that are more than a number ---- */

int plan_read_frac(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    double *out = t;
    if (num_parse_double(arg, NUM_FINITE_ONLY, out, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (*out > 1 || *out < 0 || (*out == 0 && !o->set))
        return cli_usage(p->cmd, "--%s: '%s' must be in %s1]", o->name, arg, o->set ? "[0, " : "(0, ");
    return 0;
}

/* An efficiency: in [PLAN_EFF_MIN, 1] (o->set: or 0, the model's own value). */
static int read_eff(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    double *out = t;
    if (num_parse_double(arg, NUM_FINITE_ONLY, out, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if ((*out == 0 && o->set) || (*out >= PLAN_EFF_MIN && *out <= 1)) return 0;
    return cli_usage(p->cmd, "--%s: '%s' must be %sin [%g, 1] (%g %% of the peak is the least a plan takes)", o->name,
                     arg, o->set ? "0 (the model's) or " : "", PLAN_EFF_MIN, 100 * PLAN_EFF_MIN);
}

/* on|off into an int; --overlap-dp and --overlap-tp also take a fraction (read_overlap). */
static int read_onoff(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    if (!strcmp(arg, "on") || !strcmp(arg, "off")) return *(int *)t = !strcmp(arg, "on"), 0;
    return cli_usage(p->cmd, "--%s: '%s' is not on or off", o->name, arg);
}

/* --overlap-dp on|off|F; --overlap-tp on (the stack's optional TP overlap, once the stack is known)|off|F. */
static int read_overlap(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    PlanArgs *a = t;
    int tp = !strcmp(o->name, "overlap-tp");
    double *v = tp ? &a->in.overlap_tp : &a->in.overlap_dp;
    if (tp) a->given &= ~(unsigned)PG_OV_TP_ON;
    if (!strcmp(arg, "on")) {
        if (tp)
            a->given |= PG_OV_TP_ON;
        else
            *v = 1;
        return 0;
    }
    if (!strcmp(arg, "off")) return *v = 0, 0;
    return plan_read_frac(p, &(CliOpt){.name = o->name, .set = 1}, arg, v);
}

static int read_launch(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    double us;
    if (num_parse_double(arg, NUM_FINITE_ONLY, &us, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (us < 0 || us > 1000) return cli_usage(p->cmd, "--%s: '%s' must be in [0, 1000] microseconds", o->name, arg);
    *(double *)t = us * 1e-6;
    return 0;
}

/* The planner's words (o->set says which): --recompute, --attn, --main-grad, --moment-dtype, --kernels, --swiglu,
 * --view. */
static int read_word(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    PlanInput *in = &((PlanArgs *)t)->in;
    int bad;
    const char *known;
    switch (o->set) {
    case 'r': bad = recompute_parse(arg, &in->recompute) != 0, known = "none, selective, full or op"; break;
    case 'a': bad = attn_parse(arg, &in->attn) != 0, known = "flash2 (flash), flash3, cudnn, te or materialized"; break;
    case 'm': bad = main_grad_parse(arg, &in->main_grad) != 0, known = "recipe, fp32 or bf16"; break;
    case 'M': bad = moment_dtype_parse(arg, &in->moment_dt) != 0, known = "recipe, fp32 or bf16"; break;
    case 'k': bad = fusion_parse(arg, &in->fusion) != 0, known = "te, compile, eager or fp8plan"; break;
    case 's':
        bad = strcmp(arg, "fused") && strcmp(arg, "unfused"), known = "fused or unfused";
        if (!bad) in->fused_swiglu = !strcmp(arg, "fused");
        break;
    default:
        bad = strcmp(arg, "summary") && strcmp(arg, "terms") && strcmp(arg, "collectives") && strcmp(arg, "time");
        known = "summary, terms, collectives or time";
        ((PlanArgs *)t)->view = arg;
    }
    return bad ? cli_usage(p->cmd, "--%s: '%s' is not %s", o->name, arg, known) : 0;
}

/* --gpus N: the world, DP the rest (plan_args_check). */
static int read_gpus(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    PlanArgs *a = t;
    CliOpt n = {.name = o->name, .kind = OPT_U32, .lo = 1};
    int rc = cli_opts_read(p, &n, arg, &a->gpus);
    if (!rc) a->in.world = a->gpus;
    return rc;
}

/* --unknown "attn_out,dense_act" -> PLAN_UNK_* bits ("none" = 0): the planner's vocabulary. */
static const PlanNameList unknowns = {plan_unknown_parse, plan_unknown_format, PLAN_UNK_ALL_, "name",
                                      "an implementation choice the planner knows"};

static int read_unknown(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    return plan_name_list(p->cmd, o->name, arg, &unknowns, t);
}

/* The mixture-of-experts options that need more than a number (cli/cmd_plan_moe.c): o->set says which. */
static int read_moe(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    return plan_moe_option(p->cmd, o->name, o->set, arg, &((PlanArgs *)t)->in);
}

/* ---- the table: the order of --help ---- */

#define IN(f)         offsetof(PlanArgs, in.f)
#define GIVEN(i)      (offsetof(PlanArgs, layout_given) + (i) * sizeof(int) + 1)
#define USE(n, need_) n, OPT_USE, .block = plan_flags, .need = need_ /* a plan input, at the same offset */
#define TEXT(need_, text)                             \
    {                                                 \
        .kind = OPT_TEXT, .need = need_, .help = text \
    }
#define FN(n, f, set_, arg_) n, OPT_FN, .has_arg = 1, .fn = f, .set = set_, .arg = arg_
#define FLAG_FN(n, f, set_)  n, OPT_FN, .fn = f, .set = set_ /* no value */
#define MORE                 "\n                     "       /* a help line's continuation */
#define L                    PO_LAYOUT

// clang-format off
static const CliOpt plan_opts[] = {
    {USE("model", 0)}, {USE("gpu", 0)}, {USE("recipe", PO_RECIPE)}, {USE("recipes", PO_RECIPES)},
    {FN("view", read_word, 'v', NULL), .need = PO_VIEW},
    {"routing", OPT_STR, offsetof(PlanArgs, routing), .need = PO_VIEW}, /* plan's help head says it */
    {"top", OPT_U32, offsetof(PlanArgs, top), .lo = 1, .need = PO_SWEEP, .mark = CLI_MARK(PlanArgs, top_given)},
    {"per-recipe", OPT_FLAG, offsetof(PlanArgs, per_recipe), .set = 1, .need = PO_SWEEP},
    {"all", OPT_FLAG, offsetof(PlanArgs, all), .set = 1, .need = PO_SWEEP},
    {"stacks", OPT_STR, offsetof(PlanArgs, stacks), .need = PO_SWEEP},
    TEXT(0, "layout:"),
    TEXT(L, "  --tp N --pp N --vpp N --cp N --dp N   tensor, pipeline (+ virtual stages), context and data parallel (1)"),
    {USE("tp", L), .help = ""}, {USE("pp", L), .help = ""}, {USE("vpp", L), .help = ""},
    {USE("cp", L), .help = ""}, {USE("dp", L), .help = ""},
    {"gpus", OPT_FN, .has_arg = 1, .fn = read_gpus, .hide = PO_SWEEP, .arg = "N", /* sweep's help says what N is */
     .help = "total GPUs: without --dp, DP = N/(tp*pp*cp); with it, a check that N = tp*pp*cp*dp"},
    {USE("mbs", L)}, {USE("gbs", 0)}, {USE("seq", 0)},
    TEXT(0, "  --sp / --no-sp     sequence parallelism with TP (the stack's)"),
    {"sp", OPT_FLAG, IN(sp), .set = 1, .given = PG_SP},
    {"no-sp", OPT_FLAG, IN(sp), .set = 0, .given = PG_SP},
    {USE("dist-opt", L)}, {USE("zero", L)},
    TEXT(L, "  --recompute none|selective|full|op   activation recomputation (none; op: torchtitan's op-level policy)"),
    {FN("recompute", read_word, 'r', NULL), .need = L, .mark = GIVEN(6)},
    TEXT(L, "  --first-stage-layers N --last-stage-layers N   uneven pipeline: layers on the first / last stage"
         MORE "(the other stages split the rest evenly; default an even split); with --vpp"
         MORE "each stage's count divides by vpp, or the middle stages hold s (a multiple of"
         MORE "vpp) and the ends s or s - 1 (account_for_embedding/loss_in_pipeline_split)"),
    {"first-stage-layers", OPT_U32, IN(first_stage_layers), .lo = 1, .need = L},
    {"last-stage-layers", OPT_U32, IN(last_stage_layers), .lo = 1, .need = L},
    {"custom-pp-layout", OPT_FLAG, IN(custom_pp_layout), .set = 1, .need = L,
     .help = "layers placed chunk by chunk (Megatron-Core's pipeline_model_parallel_layout):"
             MORE "uneven stages need not divide by vpp"},
    {"dropout", OPT_FLAG, IN(dropout), .set = 1, .help = "count dropout masks (off: modern LLMs train without dropout)"},
    TEXT(0, "  --moment-dtype recipe|fp32|bf16   Adam's m and v, every parameter's (the recipe's; Megatron's"
         MORE "precision-aware optimizer: --exp-avg-dtype, --exp-avg-sq-dtype)"),
    {FN("moment-dtype", read_word, 'M', NULL)},
    TEXT(0, "mixture of experts (models with experts; cli/cmd_plan_moe.c):"),
    TEXT(L, "  --ep N --etp N     expert parallel and expert tensor parallel sizes (ep 1; etp the stack's:"
         MORE "tp for megatron-core and megatron-lm, else 1); the expert-data-parallel group is"
         MORE "tp*cp*dp/(ep*etp)"),
    {USE("ep", L), .help = ""}, {USE("etp", L), .help = ""},
    {FN("moe-imbalance", read_moe, 'i', "F"), .help = "dropless routing: tokens of the busiest expert rank over the mean (1)"},
    {FN("moe-capacity", read_moe, 'c', "F"), .help = "capacity factor instead (token dropping; 0 = dropless)"},
    {FN("overlap-ep", plan_read_frac, 1, "F"), .off = IN(overlap_ep), .given = PG_OV_EP,
     .help = "all-to-alls overlapped (1: Megatron's merged 1F1B; 0: none; the stack's)"},
    TEXT(0, "  --ep-comm-sms N    SMs the all-to-all kernels take from the GEMMs while overlapping (0: with"
         MORE "--overlap-ep or --dualpipe the dispatcher's own, deepep 20, hybridep 16)"),
    {FN("ep-comm-sms", read_moe, 's', NULL)},
    {FLAG_FN("dualpipe", read_moe, 'd'), .need = L,
     .help = "DeepSeek-V3's DualPipe schedule (even --pp, all-to-alls and p2p hidden)"},
    TEXT(L, "  --recompute-modules LIST   Megatron's modules, recomputed in backward on top of --recompute:"
         MORE "mla_up_proj, moe_act, layernorm (output-discarding), core_attn (= selective),"
         MORE "mlp, moe, shared_experts (checkpointed); none"),
    {FN("recompute-modules", read_moe, 'r', NULL), .need = L},
    TEXT(0, "  --moe-dispatcher alltoall|deepep|hybridep   how tokens reach their experts: one copy per (token,"
         MORE "expert) (alltoall, Megatron's default), or once per remote node, then NVLink"
         MORE "(deepep: once per GPU that holds one of the token's experts)"),
    {FN("moe-dispatcher", read_moe, 'D', NULL)},
    TEXT(0, "  --cuda-graph-scope LIST   parts of the layers replayed as CUDA graphs (Megatron's scopes): attn,"
         MORE "moe_router, moe_preprocess, full (whole layers: needs --moe-capacity); none"),
    {FN("cuda-graph-scope", read_moe, 'g', NULL)},
    TEXT(0, "  --offload-modules LIST   Megatron's fine-grained activation offloading: the saved inputs of"
         MORE "expert_fc1 (dispatched tokens) and moe_act (FC1's output) wait in host memory"
         MORE "from forward to backward (2 layers' worth stay on the GPU); none"),
    {FN("offload-modules", read_moe, 'o', NULL)},
    {"moe-fused-mlp", OPT_FLAG, IN(moe_fused_mlp), .set = 1,
     .help = "the experts' FC1, activation and FC2 as Transformer Engine's fused ops (Megatron's"
             MORE "--use-transformer-engine-op-fuser): no separate GLU clamps or expert bias adds"},
    {"vocab-pad", OPT_U32, IN(vocab_pad), .lo = 1, .arg = "N", .help = "pad the vocabulary to a multiple of N*tp (128)"},
    TEXT(0, "software stack (models/stacks.csv; each option below overrides the stack's value):"),
    {USE("stack", 0), .help = "megatron-core = nvidia-recipes (the default): NVIDIA's published performance"
         MORE "recipes (NeMo / Megatron-Bridge: BF16 gradients, every overlap on);"
         MORE "megatron-lm = megatron-lm-defaults: Megatron-LM's own defaults (the recipe's"
         MORE "gradients, FP32 in BF16 training; overlaps off); torchtitan, llm-foundry,"
         MORE "deepspeed, fp8plan, ... (fp8plan stacks lists them; either name is taken)"},
    {FN("attn", read_word, 'a', "K"), .given = PG_ATTN,
     .help = "attention kernel: flash2 (= flash), flash3, cudnn, te (TE's choice), materialized"},
    TEXT(0, "  --main-grad recipe|fp32|bf16    main-gradient dtype (and its DP reduction)"),
    {FN("main-grad", read_word, 'm', NULL), .given = PG_MAIN_GRAD},
    TEXT(0, "  --fp8-weight-cache on|off       keep the FP8 weight copies across micro-batches"),
    {FN("fp8-weight-cache", read_onoff, 0, NULL), .off = IN(fp8_weight_cache), .given = PG_FP8_CACHE},
    TEXT(0, "  --swiglu fused|unfused          SwiGLU saves 6F (fused) or 8F bytes per token"),
    {FN("swiglu", read_word, 's', NULL), .given = PG_SWIGLU},
    TEXT(0, "  --kernels te|compile|eager|fp8plan   memory-bound kernel list   --launch-us F   per-kernel floor"),
    {FN("kernels", read_word, 'k', NULL), .given = PG_FUSION},
    {FN("launch-us", read_launch, 0, NULL), .off = IN(launch_s), .given = PG_LAUNCH},
    TEXT(0, "  --grad-acc-fusion on|off        te kernels: weight gradients accumulate in the GEMM epilogue (on)"
         MORE "or in a separate add every micro-batch (off: --no-gradient-accumulation-fusion)"),
    {FN("grad-acc-fusion", read_onoff, 0, NULL), .off = IN(grad_acc_fusion), .given = PG_GRAD_ACC},
    TEXT(0, "  --overlap-tp F --overlap-dp F --overlap-pp F --overlap-cp F   fraction of the concurrent compute"
         MORE "that hides those collectives (0-1; --overlap-dp also takes on|off; --overlap-tp on"
         MORE "switches on the stack's optional TP overlap: TE userbuffers, torchtitan's async TP)"),
    {FN("overlap-tp", read_overlap, 0, NULL), .given = PG_OV_TP},
    {FN("overlap-dp", read_overlap, 0, NULL), .given = PG_OV_DP},
    {FN("overlap-pp", plan_read_frac, 1, NULL), .off = IN(overlap_pp), .given = PG_OV_PP},
    {FN("overlap-cp", plan_read_frac, 1, NULL), .off = IN(overlap_cp), .given = PG_OV_CP},
    TEXT(0, "memory limit:"),
    {FN("max-mem-frac", plan_read_frac, 0, "F"), .off = IN(max_mem_frac),
     .help = "a plan fits when it needs at most F of the GPU's memory (0.95)"},
    {FN("unknown", read_unknown, 0, "LIST"), .off = IN(mem_unknown), .need = PO_UNKNOWN,
     .help = "implementation choices your sources leave open (plan only; names below): the"
             MORE "terms are built without their savings, a low end with them; UNCERTAIN when only"
             MORE "the low end fits; none"},
    TEXT(0, "overheads and efficiencies:"),
    {"context", OPT_COUNT, IN(cuda_context_bytes), .arg = "BYTES", .help = "CUDA context (536870912)"},
    {"workspace", OPT_COUNT, IN(workspace_bytes), .arg = "BYTES", .help = "cuBLASLt workspace (33554432)"},
    {"nccl-mem", OPT_COUNT, IN(nccl_comm_bytes), .arg = "BYTES", .help = "NCCL buffers per communicator (616562688)"},
    {FN("frag", plan_read_frac, 1, "F"), .off = IN(frag_frac), .given = PG_RESERVE,
     .help = "allocator reserve over allocated bytes (the stack's)"},
    TEXT(0, "  --eff-bf16 F --eff-fp8 F   saturated GEMM rate, fraction of the dense peak, 0.001-1 (0: the GPU's"
         MORE "measured MAMF, the default)"),
    {FN("eff-bf16", read_eff, 1, NULL), .off = IN(eff_gemm_bf16)},
    {FN("eff-fp8", read_eff, 1, NULL), .off = IN(eff_gemm_fp8)},
    {FN("eff-attn", read_eff, 1, "F"), .off = IN(eff_attn),
     .help = "attention's asymptotic efficiency, fraction of the BF16 peak, 0.001-1 (0: the"
             MORE "kernel's curve, the default)"},
    TEXT(0, "  --eff-hbm F --eff-net F    achieved fraction of HBM and link bandwidth, 0.001-1 (0.80 0.80)"),
    {FN("eff-hbm", read_eff, 0, NULL), .off = IN(eff_hbm)},
    {FN("eff-net", read_eff, 0, NULL), .off = IN(eff_net)},
    TEXT(0, "output:"),
    TEXT(0, "  --format table|csv|json|html   (table; html: a self-contained page with charts)"),
    {"out", OPT_BLOCK, offsetof(PlanArgs, out), .block = cli_out_opts}, /* --format, -o */
    {"ascii", OPT_FLAG, offsetof(PlanArgs, ascii), .set = 1,
     .help = "ASCII glyphs in the text output's memory bars (also under TERM=dumb or a"
             MORE "locale that is not UTF-8)"},
    TEXT(0, "  -o FILE            write to FILE atomically instead of stdout"),
    {USE("catalog", 0)},
    TEXT(0, "your own configuration (docs/import.md):"), /* read before the table: cli/cmd_plan_from.c */
    TEXT(0, "  --from FILE        a Megatron-LM argument list or launch script, a Megatron-LM model_config.yaml, a"
         MORE "Megatron-Bridge/NeMo 2 YAML or a torchtitan TOML: model, layout, recipe and stack"
         MORE "from the file; every option given here wins over it"),
    TEXT(0, "  --from-format megatron|bridge|torchtitan   the file's kind when its name does not say it"),
    TEXT(0, "  --explain          list on stderr every setting read, what it became, and what was ignored"),
    {0},
};
// clang-format on

int plan_option_applies(const char *name, unsigned mask)
{
    for (const CliOpt *o = plan_opts; o->kind != OPT_END; o++) {
        int here = o->kind == OPT_BLOCK ? cli_opts_find(o->block, name, NULL) != NULL
                                        : o->kind != OPT_TEXT && !strcmp(o->name, name);
        if (here) return !o->need || (mask & o->need);
    }
    return 0;
}

const char *plan_options_help(unsigned mask, char *buf, size_t cap)
{
    return cli_opts_help(&(CliParse){.opts = plan_opts, .mask = mask, .help_col = 21}, buf, cap);
}

static uint32_t in_or_1(uint32_t v) { return v ? v : 1; }

/* The flags read: what they need together, the world and DP from --gpus, the file's batch rule. */
static int plan_args_check(const char *cmd, unsigned mask, PlanArgs *a)
{
    int rc = plan_flags_finish(cmd, a);
    if (rc) return rc;
    /* the file's model unless --model was given (the TUI's and report html's default is not a choice) */
    if (a->from_given && (!a->model || a->model == plan_headline_model) &&
        (a->from.have_model || a->from.model_name[0]))
        a->model = a->from.have_model ? a->from.model.name : a->from.model_name;
    if (!a->model) return cli_usage(cmd, "--model is required");
    if (!a->gpu) return cli_usage(cmd, "--gpu is required");
    if ((mask & PO_RECIPE) && !(mask & PO_RECIPES) && !a->recipe) return cli_usage(cmd, "--recipe is required");
    if ((mask & PO_SWEEP) && !a->gpus) return cli_usage(cmd, "--gpus is required");
    uint64_t world = (uint64_t)a->in.tp * a->in.pp; /* < 2^64; the next two products can pass it */
    if (u64_mul(world, a->in.cp, &world) || u64_mul(world, a->in.dp, &world)) world = UINT64_MAX;
    if ((mask & PO_LAYOUT) && world == UINT64_MAX)
        return cli_usage(cmd, "tp*pp*cp*dp passes 2^64 GPUs: a plan is for at most %u", (unsigned)PLAN_MAX_GPUS);
    if ((mask & PO_LAYOUT) && (a->gpus > PLAN_MAX_GPUS || world > PLAN_MAX_GPUS))
        return cli_usage(cmd, "%s %llu GPUs: a plan is for at most %u",
                         a->gpus > PLAN_MAX_GPUS ? "--gpus" : "tp*pp*cp*dp =",
                         (unsigned long long)(a->gpus > PLAN_MAX_GPUS ? a->gpus : world), (unsigned)PLAN_MAX_GPUS);
    if ((mask & PO_LAYOUT) && a->gpus && !a->layout_given[4]) { /* --gpus with TP, PP, CP: DP is the rest */
        uint64_t tpc = (uint64_t)in_or_1(a->in.tp) * in_or_1(a->in.pp) * in_or_1(a->in.cp);
        if (a->gpus % tpc)
            return cli_usage(cmd, "--gpus %u is not a multiple of tp*pp*cp = %u*%u*%u = %llu, so no DP fits", a->gpus,
                             in_or_1(a->in.tp), in_or_1(a->in.pp), in_or_1(a->in.cp), (unsigned long long)tpc);
        a->in.dp = (uint32_t)(a->gpus / tpc);
    }
    if (a->from_given && a->from.gbs_per_dp && !a->gbs_given && (mask & PO_LAYOUT)) /* the file's loop */
        a->in.gbs = (uint64_t)a->in.mbs * a->in.dp;
    return 0;
}

static int parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a)
{
    CliParse p = {
        .cmd = cmd, .opts = plan_opts, .help = help, .mask = mask, .given_off = offsetof(PlanArgs, given) + 1};
    int rc = cli_opts_parse(&p, argc, argv, a);
    return rc ? rc : plan_args_check(cmd, mask, a);
}

int plan_args_parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a)
{
    plan_flags_defaults(a);
    a->out.fmt = TABLE_TEXT;
    a->top = 20;
    char **fv;
    int fc, rc = plan_from_expand(cmd, argc, argv, mask, a, &fv, &fc);
    if (rc) return rc;
    if (!fv) return parse(cmd, argc, argv, mask, help, a);
    rc = parse(cmd, fc, fv, mask, help, a);
    free(fv);
    return rc;
}
