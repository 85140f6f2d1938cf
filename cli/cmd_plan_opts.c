/* cli/cmd_plan_opts.c — the layout and overhead options shared by plan, compare and sweep. */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/num.h"

/* the options' loop, after --from put the file's flags first (plan_args_parse) */
static int parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a);

const char plan_layout_help[] =
    "layout:\n"
    "  --tp N --pp N --vpp N --cp N --dp N   tensor, pipeline (+ virtual stages), context and data parallel (1)\n"
    "  --gpus N           total GPUs: without --dp, DP = N/(tp*pp*cp); with it, a check that N = tp*pp*cp*dp\n"
    "  --mbs N            micro-batch size in sequences (1)\n"
    "  --gbs N            global batch in sequences (about 2M tokens, rounded up to a multiple of mbs*dp)\n"
    "  --seq N            sequence length (the model's; at most 16777216, a warning past its context)\n"
    "  --sp / --no-sp     sequence parallelism with TP (the stack's)\n"
    "  --dist-opt         Megatron distributed optimizer: shard the states the recipe lists over DP x CP\n"
    "  --zero 0|1|2|3     ZeRO stage instead (1: master and Adam, 2: + gradients, 3: + weights; not with\n"
    "                     --dist-opt)\n"
    "  --recompute none|selective|full|op   activation recomputation (none; op: torchtitan's op-level policy)\n"
    "  --first-stage-layers N --last-stage-layers N   uneven pipeline: layers on the first / last stage\n"
    "                     (the other stages split the rest evenly; default an even split); with --vpp\n"
    "                     each stage's count divides by vpp, or the middle stages hold s (a multiple of\n"
    "                     vpp) and the ends s or s - 1 (account_for_embedding/loss_in_pipeline_split)\n"
    "  --custom-pp-layout layers placed chunk by chunk (Megatron-Core's pipeline_model_parallel_layout):\n"
    "                     uneven stages need not divide by vpp\n"
    "  --dropout          count dropout masks (off: modern LLMs train without dropout)\n"
    "mixture of experts (models with experts; cli/cmd_plan_moe.c):\n"
    "  --ep N --etp N     expert parallel and expert tensor parallel sizes (1); the expert-data-parallel\n"
    "                     group is tp*cp*dp/(ep*etp)\n"
    "  --moe-imbalance F  dropless routing: tokens of the busiest expert rank over the mean (1)\n"
    "  --moe-capacity F   capacity factor instead (token dropping; 0 = dropless)\n"
    "  --overlap-ep F     fraction of the MoE layers' compute that hides the all-to-alls (the stack's)\n"
    "  --ep-comm-sms N    SMs the all-to-all kernels take from the GEMMs while overlapping (0)\n"
    "  --dualpipe         DeepSeek-V3's DualPipe schedule (even --pp, all-to-alls and p2p hidden)\n"
    "  --recompute-modules LIST   Megatron's modules, recomputed in backward on top of --recompute:\n"
    "                     mla_up_proj, moe_act, layernorm (output-discarding), core_attn (= selective),\n"
    "                     mlp, moe, shared_experts (checkpointed); none\n"
    "  --moe-dispatcher alltoall|deepep|hybridep   how tokens reach their experts: one copy per (token,\n"
    "                     expert) (alltoall, Megatron's default), or once per remote node, then NVLink\n"
    "  --cuda-graph-scope LIST   parts of the layers replayed as CUDA graphs (Megatron's scopes): attn,\n"
    "                     moe_router, moe_preprocess, full (whole layers: needs --moe-capacity); none\n"
    "  --vocab-pad N      pad the vocabulary to a multiple of N*tp (128)\n"
    "software stack (models/stacks.csv; each option below overrides the stack's value):\n"
    "  --stack NAME       megatron-core = nvidia-recipes (the default): NVIDIA's published performance\n"
    "                     recipes (NeMo / Megatron-Bridge: BF16 gradients, every overlap on);\n"
    "                     megatron-lm = megatron-lm-defaults: Megatron-LM's own defaults (the recipe's\n"
    "                     gradients, FP32 in BF16 training; overlaps off); torchtitan, llm-foundry,\n"
    "                     deepspeed, fp8plan, ... (fp8plan stacks lists them; either name is taken)\n"
    "  --attn K           attention kernel: flash2 (= flash), flash3, cudnn, te (TE's choice), materialized\n"
    "  --main-grad recipe|fp32|bf16    main-gradient dtype (and its DP reduction)\n"
    "  --fp8-weight-cache on|off       keep the FP8 weight copies across micro-batches\n"
    "  --swiglu fused|unfused          SwiGLU saves 6F (fused) or 8F bytes per token\n"
    "  --kernels te|compile|eager|fp8plan   memory-bound kernel list   --launch-us F   per-kernel floor\n"
    "  --grad-acc-fusion on|off        te kernels: weight gradients accumulate in the GEMM epilogue (on)\n"
    "                     or in a separate add every micro-batch (off: --no-gradient-accumulation-fusion)\n"
    "  --overlap-tp F --overlap-dp F --overlap-pp F --overlap-cp F   fraction of the concurrent compute\n"
    "                     that hides those collectives (0-1; --overlap-dp also takes on|off; --overlap-tp on\n"
    "                     switches on the stack's optional TP overlap: TE userbuffers, torchtitan's async TP)\n"
    "memory limit:\n"
    "  --max-mem-frac F   a plan fits when it needs at most F of the GPU's memory (0.95)\n"
    "  --unknown LIST     implementation choices your sources leave open (plan only; names below): the\n"
    "                     terms are built without their savings, a low end with them; UNCERTAIN when only\n"
    "                     the low end fits; none\n"
    "overheads and efficiencies:\n"
    "  --context BYTES    CUDA context (536870912)\n"
    "  --workspace BYTES  cuBLASLt workspace (33554432)\n"
    "  --nccl-mem BYTES   NCCL buffers per communicator (616562688)\n"
    "  --frag F           allocator reserve over allocated bytes (the stack's)\n"
    "  --eff-bf16 F --eff-fp8 F   saturated GEMM rate, fraction of the dense peak, 0.001-1 (0: the GPU's\n"
    "                     measured MAMF, the default)\n"
    "  --eff-attn F       attention's asymptotic efficiency, fraction of the BF16 peak, 0.001-1 (0: the\n"
    "                     kernel's curve, the default)\n"
    "  --eff-hbm F --eff-net F    achieved fraction of HBM and link bandwidth, 0.001-1 (0.80 0.80)\n"
    "output:\n"
    "  --format table|csv|json|html   (table; html: a self-contained page with charts)\n"
    "  --ascii            ASCII glyphs in the text output's memory bars (also under TERM=dumb or a\n"
    "                     locale that is not UTF-8)\n"
    "  -o FILE            write to FILE atomically instead of stdout\n"
    "  --catalog DIR      directory holding models.csv, gpus.csv, recipes.csv, stacks.csv (./models)\n"
    "your own configuration (docs/import.md):\n"
    "  --from FILE        a Megatron-LM argument list or launch script, a Megatron-LM model_config.yaml, a\n"
    "                     Megatron-Bridge/NeMo 2 YAML or a torchtitan TOML: model, layout, recipe and stack\n"
    "                     from the file; every option given here wins over it\n"
    "  --from-format megatron|bridge|torchtitan   the file's kind when its name does not say it\n"
    "  --explain          list on stderr every setting read, what it became, and what was ignored\n";

enum {
    O_MODEL = 256,
    O_GPU,
    O_RECIPE,
    O_RECIPES,
    O_TP,
    O_PP,
    O_VPP,
    O_CP,
    O_DP,
    O_GPUS,
    O_MBS,
    O_GBS,
    O_SEQ,
    O_SP,
    O_NO_SP,
    O_DIST_OPT,
    O_ZERO,
    O_RECOMPUTE,
    O_ATTN,
    O_DROPOUT,
    O_ASCII,
    O_VOCAB_PAD,
    O_FORMAT,
    O_CATALOG,
    O_VIEW,
    O_ROUTING,
    O_CONTEXT,
    O_WORKSPACE,
    O_NCCL,
    O_FRAG,
    O_EFF_BF16,
    O_EFF_FP8,
    O_EFF_ATTN,
    O_EFF_HBM,
    O_EFF_NET,
    O_OVERLAP,
    O_TOP,
    O_PER_RECIPE,
    O_ALL,
    O_STACK,
    O_MAIN_GRAD,
    O_FP8_CACHE,
    O_GRAD_ACC,
    O_SWIGLU,
    O_KERNELS,
    O_LAUNCH,
    O_OV_TP,
    O_OV_PP,
    O_OV_CP,
    O_FIRST,
    O_LAST,
    O_PP_LAYOUT,
    O_MAX_MEM,
    O_STACKS,
    O_EP, /* the MoE options: cli/cmd_plan_moe.c */
    O_ETP,
    O_MOE_IMBALANCE,
    O_MOE_CAPACITY,
    O_OV_EP,
    O_EP_SMS,
    O_DUALPIPE,
    O_RC_MODS,
    O_GRAPH_SCOPE,
    O_DISPATCHER,
    O_UNKNOWN,
};

static const struct option longopts[] = {
    {"model", required_argument, NULL, O_MODEL},
    {"gpu", required_argument, NULL, O_GPU},
    {"recipe", required_argument, NULL, O_RECIPE},
    {"recipes", required_argument, NULL, O_RECIPES},
    {"tp", required_argument, NULL, O_TP},
    {"pp", required_argument, NULL, O_PP},
    {"vpp", required_argument, NULL, O_VPP},
    {"cp", required_argument, NULL, O_CP},
    {"dp", required_argument, NULL, O_DP},
    {"gpus", required_argument, NULL, O_GPUS},
    {"mbs", required_argument, NULL, O_MBS},
    {"gbs", required_argument, NULL, O_GBS},
    {"seq", required_argument, NULL, O_SEQ},
    {"sp", no_argument, NULL, O_SP},
    {"no-sp", no_argument, NULL, O_NO_SP},
    {"dist-opt", no_argument, NULL, O_DIST_OPT},
    {"zero", required_argument, NULL, O_ZERO},
    {"recompute", required_argument, NULL, O_RECOMPUTE},
    {"attn", required_argument, NULL, O_ATTN},
    {"dropout", no_argument, NULL, O_DROPOUT},
    {"ascii", no_argument, NULL, O_ASCII},
    {"vocab-pad", required_argument, NULL, O_VOCAB_PAD},
    {"format", required_argument, NULL, O_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"catalog", required_argument, NULL, O_CATALOG},
    {"view", required_argument, NULL, O_VIEW},
    {"routing", required_argument, NULL, O_ROUTING},
    {"context", required_argument, NULL, O_CONTEXT},
    {"workspace", required_argument, NULL, O_WORKSPACE},
    {"nccl-mem", required_argument, NULL, O_NCCL},
    {"frag", required_argument, NULL, O_FRAG},
    {"eff-bf16", required_argument, NULL, O_EFF_BF16},
    {"eff-fp8", required_argument, NULL, O_EFF_FP8},
    {"eff-attn", required_argument, NULL, O_EFF_ATTN},
    {"eff-hbm", required_argument, NULL, O_EFF_HBM},
    {"eff-net", required_argument, NULL, O_EFF_NET},
    {"overlap-dp", required_argument, NULL, O_OVERLAP},
    {"top", required_argument, NULL, O_TOP},
    {"per-recipe", no_argument, NULL, O_PER_RECIPE},
    {"all", no_argument, NULL, O_ALL},
    {"stack", required_argument, NULL, O_STACK},
    {"main-grad", required_argument, NULL, O_MAIN_GRAD},
    {"fp8-weight-cache", required_argument, NULL, O_FP8_CACHE},
    {"grad-acc-fusion", required_argument, NULL, O_GRAD_ACC},
    {"swiglu", required_argument, NULL, O_SWIGLU},
    {"kernels", required_argument, NULL, O_KERNELS},
    {"launch-us", required_argument, NULL, O_LAUNCH},
    {"overlap-tp", required_argument, NULL, O_OV_TP},
    {"overlap-pp", required_argument, NULL, O_OV_PP},
    {"overlap-cp", required_argument, NULL, O_OV_CP},
    {"first-stage-layers", required_argument, NULL, O_FIRST},
    {"last-stage-layers", required_argument, NULL, O_LAST},
    {"custom-pp-layout", no_argument, NULL, O_PP_LAYOUT},
    {"max-mem-frac", required_argument, NULL, O_MAX_MEM},
    {"stacks", required_argument, NULL, O_STACKS},
    {"ep", required_argument, NULL, O_EP},
    {"etp", required_argument, NULL, O_ETP},
    {"moe-imbalance", required_argument, NULL, O_MOE_IMBALANCE},
    {"moe-capacity", required_argument, NULL, O_MOE_CAPACITY},
    {"overlap-ep", required_argument, NULL, O_OV_EP},
    {"ep-comm-sms", required_argument, NULL, O_EP_SMS},
    {"dualpipe", no_argument, NULL, O_DUALPIPE},
    {"recompute-modules", required_argument, NULL, O_RC_MODS},
    {"cuda-graph-scope", required_argument, NULL, O_GRAPH_SCOPE},
    {"moe-dispatcher", required_argument, NULL, O_DISPATCHER},
    {"unknown", required_argument, NULL, O_UNKNOWN},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static unsigned option_mask(int opt)
{
    switch (opt) {
    case O_RECIPE: return PO_RECIPE;
    case O_RECIPES: return PO_RECIPES;
    case O_TP:
    case O_PP:
    case O_VPP:
    case O_CP:
    case O_DP:
    case O_MBS:
    case O_DIST_OPT:
    case O_ZERO:
    case O_RECOMPUTE:
    case O_FIRST:
    case O_LAST:
    case O_PP_LAYOUT:
    case O_EP:
    case O_ETP:
    case O_DUALPIPE:
    case O_RC_MODS: return PO_LAYOUT;
    case O_TOP:
    case O_PER_RECIPE:
    case O_ALL:
    case O_STACKS: return PO_SWEEP;
    case O_VIEW:
    case O_ROUTING: return PO_VIEW;
    case O_UNKNOWN: return PO_UNKNOWN;
    default: return 0; /* always accepted */
    }
}

static const char *opt_name(int opt)
{
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == opt) return o->name;
    return "?";
}

int plan_option_applies(const char *name, unsigned mask)
{
    for (const struct option *o = longopts; o->name; o++)
        if (!strcmp(o->name, name)) {
            unsigned need = option_mask(o->val);
            return !need || (mask & need);
        }
    return 0;
}

const char *plan_options_help(unsigned mask, char *buf, size_t cap)
{
    size_t n = 0;
    int drop = 0;
    for (const char *l = plan_layout_help; *l && n + 1 < cap;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) + 1 : strlen(l);
        if (!strncmp(l, "  --", 4)) { /* an option's line: kept when the command takes its first option */
            size_t k = strcspn(l + 4, " |=\n");
            drop = 0;
            for (const struct option *o = longopts; o->name; o++)
                if (strlen(o->name) == k && !strncmp(o->name, l + 4, k)) {
                    unsigned need = option_mask(o->val);
                    drop = need && !(mask & need);
                    if (o->val == O_GPUS && (mask & PO_SWEEP)) drop = 1; /* sweep's own help says what N is */
                }
        } else if (strncmp(l, "   ", 3)) { /* a section heading; deeper lines continue the option above */
            drop = 0;
        }
        if (!drop) {
            size_t m = len < cap - 1 - n ? len : cap - 1 - n;
            memcpy(buf + n, l, m);
            n += m;
        }
        l += len;
    }
    buf[n] = '\0';
    return buf;
}

/* A positive whole number that fits in 32 bits. */
static int get_u32(const char *cmd, int opt, const char *arg, uint32_t *out)
{
    Err e;
    uint64_t v;
    if (num_parse_u64(arg, &v, &e)) return cli_usage(cmd, "--%s: %s", opt_name(opt), e.msg);
    if (v == 0) return cli_usage(cmd, "--%s: '%s' must be at least 1", opt_name(opt), arg);
    if (v > UINT32_MAX) return cli_usage(cmd, "--%s: '%s' is too large (at most %u)", opt_name(opt), arg, UINT32_MAX);
    *out = (uint32_t)v;
    return 0;
}

static int get_bytes(const char *cmd, int opt, const char *arg, uint64_t *out)
{
    Err e;
    if (num_parse_count(arg, out, &e)) return cli_usage(cmd, "--%s: %s", opt_name(opt), e.msg);
    return 0;
}

static int get_onoff(const char *cmd, int opt, const char *arg, int *out)
{
    if (!strcmp(arg, "on") || !strcmp(arg, "off")) return *out = !strcmp(arg, "on"), 0;
    return cli_usage(cmd, "--%s: '%s' is not on or off", opt_name(opt), arg);
}

/* A fraction in (lo, 1] (lo excluded unless allow_zero). */
static int get_frac(const char *cmd, int opt, const char *arg, int allow_zero, double *out)
{
    Err e;
    if (num_parse_double(arg, NUM_FINITE_ONLY, out, &e)) return cli_usage(cmd, "--%s: %s", opt_name(opt), e.msg);
    if (*out > 1 || *out < 0 || (*out == 0 && !allow_zero))
        return cli_usage(cmd, "--%s: '%s' must be in %s1]", opt_name(opt), arg, allow_zero ? "[0, " : "(0, ");
    return 0;
}

/* An efficiency: in [PLAN_EFF_MIN, 1] (model_zero: or 0, the model's own value). */
static int get_eff(const char *cmd, int opt, const char *arg, int model_zero, double *out)
{
    Err e;
    if (num_parse_double(arg, NUM_FINITE_ONLY, out, &e)) return cli_usage(cmd, "--%s: %s", opt_name(opt), e.msg);
    if ((*out == 0 && model_zero) || (*out >= PLAN_EFF_MIN && *out <= 1)) return 0;
    return cli_usage(cmd, "--%s: '%s' must be %sin [%g, 1] (%g %% of the peak is the least a plan takes)",
                     opt_name(opt), arg, model_zero ? "0 (the model's) or " : "", PLAN_EFF_MIN, 100 * PLAN_EFF_MIN);
}

static uint32_t in_or_1(uint32_t v) { return v ? v : 1; }

/* --unknown "attn_out,dense_act" -> PLAN_UNK_* bits ("none" = 0): the planner's vocabulary. */
static const PlanNameList unknowns = {plan_unknown_parse, plan_unknown_format, PLAN_UNK_ALL_, "name",
                                      "an implementation choice the planner knows"};

int plan_args_parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a)
{
    memset(a, 0, sizeof *a);
    plan_input_defaults(&a->in);
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

static int parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a)
{
    int c, rc = 0, zero = -1, dist_opt = 0, gbs_given = 0;
    cli_getopt_reset(argc, argv); /* the tui hands over an argv of its own */
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        if (c == 'h') return cli_help(help), -1;
        if (c == '?') return cli_bad_option(cmd);
        unsigned need = option_mask(c);
        if (need && !(mask & need)) return cli_usage(cmd, "--%s does not apply here", opt_name(c));
        const char *arg = optarg;
        PlanInput *in = &a->in;
        switch (c) {
        case O_MODEL: a->model = arg; break;
        case O_GPU: a->gpu = arg; break;
        case O_RECIPE: a->recipe = arg; break;
        case O_RECIPES: a->recipes = arg; break;
        case O_TP: rc = get_u32(cmd, c, arg, &in->tp), a->layout_given[0] = 1; break;
        case O_PP: rc = get_u32(cmd, c, arg, &in->pp), a->layout_given[1] = 1; break;
        case O_VPP: rc = get_u32(cmd, c, arg, &in->vpp), a->layout_given[2] = 1; break;
        case O_CP: rc = get_u32(cmd, c, arg, &in->cp), a->layout_given[3] = 1; break;
        case O_DP: rc = get_u32(cmd, c, arg, &in->dp), a->layout_given[4] = 1; break;
        case O_MBS: rc = get_u32(cmd, c, arg, &in->mbs), a->layout_given[5] = 1; break;
        case O_GPUS: rc = get_u32(cmd, c, arg, &a->gpus), in->world = a->gpus; break;
        case O_TOP: rc = get_u32(cmd, c, arg, &a->top), a->top_given = 1; break;
        case O_PER_RECIPE: a->per_recipe = 1; break;
        case O_ALL: a->all = 1; break;
        case O_SEQ:
            if (!(rc = get_u32(cmd, c, arg, &in->seq)) && in->seq > PLAN_MAX_SEQ)
                rc = cli_usage(cmd,
                               "--seq %u: at most %u tokens (the longest published training contexts are a few "
                               "million)",
                               in->seq, PLAN_MAX_SEQ);
            break;
        case O_VOCAB_PAD: rc = get_u32(cmd, c, arg, &in->vocab_pad); break;
        case O_GBS: {
            Err e;
            gbs_given = 1;
            if (num_parse_count(arg, &in->gbs, &e))
                rc = cli_usage(cmd, "--gbs: %s", e.msg);
            else if (!in->gbs)
                rc = cli_usage(cmd, "--gbs: '%s' must be at least 1", arg);
            break;
        }
        case O_SP: in->sp = 1, a->given |= PG_SP; break;
        case O_NO_SP: in->sp = 0, a->given |= PG_SP; break;
        case O_DIST_OPT:
            in->sharding = SHARD_DIST_OPT;
            a->layout_given[7] = dist_opt = 1;
            break;
        case O_ZERO: {
            int z;
            Err e;
            if (num_parse_int_range(arg, 0, 3, &z, &e))
                rc = cli_usage(cmd, "--zero: %s", e.msg);
            else if (zero >= 0 && z != zero)
                rc = cli_usage(cmd, "--zero %d and --zero %d: give one ZeRO stage", zero, z);
            else
                in->sharding = z == 0 ? SHARD_NONE : (Sharding)(SHARD_ZERO1 + z - 1), a->layout_given[7] = 1, zero = z;
            break;
        }
        case O_RECOMPUTE:
            if (recompute_parse(arg, &in->recompute))
                rc = cli_usage(cmd, "--recompute: '%s' is not none, selective, full or op", arg);
            a->layout_given[6] = 1;
            break;
        case O_ATTN:
            if (attn_parse(arg, &in->attn))
                rc = cli_usage(cmd, "--attn: '%s' is not flash2 (flash), flash3, cudnn, te or materialized", arg);
            a->given |= PG_ATTN;
            break;
        case O_STACK: a->stack = arg; break;
        case O_STACKS: a->stacks = arg; break;
        case O_MAIN_GRAD:
            if (main_grad_parse(arg, &in->main_grad))
                rc = cli_usage(cmd, "--main-grad: '%s' is not recipe, fp32 or bf16", arg);
            a->given |= PG_MAIN_GRAD;
            break;
        case O_FP8_CACHE: rc = get_onoff(cmd, c, arg, &in->fp8_weight_cache), a->given |= PG_FP8_CACHE; break;
        case O_GRAD_ACC: rc = get_onoff(cmd, c, arg, &in->grad_acc_fusion), a->given |= PG_GRAD_ACC; break;
        case O_SWIGLU:
            if (!strcmp(arg, "fused") || !strcmp(arg, "unfused"))
                in->fused_swiglu = !strcmp(arg, "fused");
            else
                rc = cli_usage(cmd, "--swiglu: '%s' is not fused or unfused", arg);
            a->given |= PG_SWIGLU;
            break;
        case O_KERNELS:
            if (fusion_parse(arg, &in->fusion))
                rc = cli_usage(cmd, "--kernels: '%s' is not te, compile, eager or fp8plan", arg);
            a->given |= PG_FUSION;
            break;
        case O_LAUNCH: {
            double us;
            Err e;
            if (num_parse_double(arg, NUM_FINITE_ONLY, &us, &e))
                rc = cli_usage(cmd, "--launch-us: %s", e.msg);
            else if (us < 0 || us > 1000)
                rc = cli_usage(cmd, "--launch-us: '%s' must be in [0, 1000] microseconds", arg);
            in->launch_s = us * 1e-6, a->given |= PG_LAUNCH;
            break;
        }
        case O_OV_TP:
            a->given &= ~PG_OV_TP_ON;
            if (!strcmp(arg, "on"))
                a->given |= PG_OV_TP_ON; /* the stack's tp_overlap_on, once the stack is known */
            else if (!strcmp(arg, "off"))
                in->overlap_tp = 0;
            else
                rc = get_frac(cmd, c, arg, 1, &in->overlap_tp);
            a->given |= PG_OV_TP;
            break;
        case O_OV_PP: rc = get_frac(cmd, c, arg, 1, &in->overlap_pp), a->given |= PG_OV_PP; break;
        case O_OV_CP: rc = get_frac(cmd, c, arg, 1, &in->overlap_cp), a->given |= PG_OV_CP; break;
        case O_FIRST: rc = get_u32(cmd, c, arg, &in->first_stage_layers); break;
        case O_LAST: rc = get_u32(cmd, c, arg, &in->last_stage_layers); break;
        case O_PP_LAYOUT: in->custom_pp_layout = 1; break;
        case O_MAX_MEM: rc = get_frac(cmd, c, arg, 0, &in->max_mem_frac); break;
        case O_DROPOUT: in->dropout = 1; break;
        case O_ASCII: a->ascii = 1; break;
        case O_FORMAT: rc = cli_parse_format(cmd, arg, &a->out); break;
        case 'o': a->out.path = arg; break;
        case O_CATALOG: a->catalog = arg; break;
        case O_VIEW:
            if (strcmp(arg, "summary") && strcmp(arg, "terms") && strcmp(arg, "collectives") && strcmp(arg, "time"))
                rc = cli_usage(cmd, "--view: '%s' is not summary, terms, collectives or time", arg);
            a->view = arg;
            break;
        case O_ROUTING: a->routing = arg; break;
        case O_CONTEXT: rc = get_bytes(cmd, c, arg, &in->cuda_context_bytes); break;
        case O_WORKSPACE: rc = get_bytes(cmd, c, arg, &in->workspace_bytes); break;
        case O_NCCL: rc = get_bytes(cmd, c, arg, &in->nccl_comm_bytes); break;
        case O_FRAG: rc = get_frac(cmd, c, arg, 1, &in->frag_frac), a->given |= PG_RESERVE; break;
        case O_EFF_BF16: rc = get_eff(cmd, c, arg, 1, &in->eff_gemm_bf16); break;
        case O_EFF_FP8: rc = get_eff(cmd, c, arg, 1, &in->eff_gemm_fp8); break;
        case O_EFF_ATTN: rc = get_eff(cmd, c, arg, 1, &in->eff_attn); break;
        case O_EFF_HBM: rc = get_eff(cmd, c, arg, 0, &in->eff_hbm); break;
        case O_EFF_NET: rc = get_eff(cmd, c, arg, 0, &in->eff_net); break;
        case O_OVERLAP:
            if (!strcmp(arg, "on"))
                in->overlap_dp = 1;
            else if (!strcmp(arg, "off"))
                in->overlap_dp = 0;
            else
                rc = get_frac(cmd, c, arg, 1, &in->overlap_dp);
            a->given |= PG_OV_DP;
            break;
        case O_UNKNOWN: rc = plan_name_list(cmd, "unknown", arg, &unknowns, &in->mem_unknown); break;
        case O_EP: rc = get_u32(cmd, c, arg, &in->ep), a->layout_given[8] = 1; break;
        case O_ETP: rc = get_u32(cmd, c, arg, &in->etp), a->layout_given[9] = 1; break;
        case O_OV_EP: rc = get_frac(cmd, c, arg, 1, &in->overlap_ep), a->given |= PG_OV_EP; break;
        case O_MOE_IMBALANCE:
        case O_MOE_CAPACITY:
        case O_EP_SMS:
        case O_DUALPIPE:
        case O_RC_MODS:
        case O_GRAPH_SCOPE:
        case O_DISPATCHER:
            rc = plan_moe_option(cmd, opt_name(c),
                                 c == O_MOE_IMBALANCE  ? 'i'
                                 : c == O_MOE_CAPACITY ? 'c'
                                 : c == O_EP_SMS       ? 's'
                                 : c == O_DUALPIPE     ? 'd'
                                 : c == O_GRAPH_SCOPE  ? 'g'
                                 : c == O_DISPATCHER   ? 'D'
                                                       : 'r',
                                 arg, in);
            break;
        default: rc = cli_bad_option(cmd);
        }
        if (rc) return rc;
    }
    if ((rc = cli_no_operands(cmd, argc, argv))) return rc;
    if (dist_opt && zero >= 0) return cli_usage(cmd, "--dist-opt and --zero %d are alternatives; give one", zero);
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
    if (a->from_given && a->from.gbs_per_dp && !gbs_given && (mask & PO_LAYOUT)) /* the file's loop: no accumulation */
        a->in.gbs = (uint64_t)a->in.mbs * a->in.dp;
    return 0;
}
