/* cli/cmd_run.c — `fp8plan run`: train a model of the catalog for N steps with a
 * recipe on a backend, then report measured versus planned, term by term.
 * Wiring only: the plan (planner/), the model and its measurement (exec/), the
 * comparison (exec/measure/compare.h) and its rendering (reports/run_report.h). */
#include "cli/cmd_run.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_run_check.h"
#include "exec/comm/comm_mpi.h"
#include "exec/ckpt.h"
#include "exec/data.h"
#include "exec/measure/compare.h"
#include "exec/par.h"
#include "reports/run_report.h"
#include "util/fileio.h"
#include "util/num.h"

static const char help[] =
    "usage: fp8plan run --model M --recipe R [--backend cpu|cuda] [--steps N]\n"
    "                   [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--seq S]\n"
    "                   [--vocab V] [--experts E] [--topk K] [--expert-ffn F] [--dense-layers N]\n"
    "                   [--mbs B] [--gbs G] [--dp N [--zero 0|1 | --dist-opt]] [--tp N] [--ep N]\n"
    "                   [--pp N] [--gpu G] [--seed S] [--data FILE]\n"
    "                   [--lr X] [--warmup N] [--wd X] [--save FILE] [--resume FILE]\n"
    "                   [--scaling-trace FILE] [--loss-log FILE] [--log-every N] [--quiet]\n"
    "                   [--stack NAME] [-o FILE [--format csv|json|html]] [--catalog DIR]\n"
    "\n"
    "Train a decoder of the catalog (a models/ entry: GPT-2 style or LLaMA style with RMSNorm,\n"
    "SwiGLU, rotary positions and grouped-query attention; sizes overridable to fit a CPU or one\n"
    "GPU) with a precision recipe for N steps: forward, backward and optimizer, FP8 GEMMs with the\n"
    "recipe's scaling, --gbs / --mbs micro-batches per step. Prints the loss and tokens/s each\n"
    "step, then the Plan's memory terms beside what the run placed in its arena (persistent terms\n"
    "must match byte for byte), the time per phase (median and spread over the steps after the\n"
    "first), the collectives, and tokens/s and model TFLOP/s. On a GPU\n"
    "also: device memory as the driver counts it (the total within +-5 % of the plan's, context,\n"
    "NCCL buffers, what lies outside the arena), device time per category (GEMM, other kernels,\n"
    "optimizer, collectives), the step time within +-15 % of the plan's, and MFU against the\n"
    "device's BF16 and FP8 peaks.\n"
    "\n"
    "  --backend cpu|cuda   cpu: the C reference (FP8 emulated exactly); cuda: the GPU (default cpu)\n"
    "  --model M            a row of models.csv (its norm, mlp, position, tied and bias columns)\n"
    "  --recipe R           a row of recipes.csv: megatron-bf16, te-fp8, te-fp8-current, fp8lm, ...\n"
    "  --steps N            training steps (default 20)\n"
    "  --layers/--hidden/--heads/--kv-heads/--ffn/--seq/--vocab   override the model's sizes (FFN\n"
    "                       follows --hidden and KV heads follow --heads at the model's ratios\n"
    "                       unless given)\n"
    "  --experts/--topk/--expert-ffn/--dense-layers   a model with experts: routed experts, experts per\n"
    "                       token, the expert FFN width (follows --hidden unless given), dense first\n"
    "                       layers. MoE layers run on the cpu backend, one rank, BF16/FP32 GEMM\n"
    "                       recipes and te-fp8 / te-fp8-current (docs/executor-moe.md)\n"
    "  --ep N               expert-parallel ranks: checked against the experts and the ranks before any\n"
    "                       work (exit 64); expert parallelism itself is not run yet (exit 69)\n"
    "  --mbs B              micro-batch, sequences per forward and backward (default 1)\n"
    "  --gbs G              global batch, sequences per optimizer step: G / (B x DP) micro-batches per\n"
    "                       rank whose gradients accumulate (default B x DP: one)\n"
    "  --dp N               data-parallel ranks (cpu backend): run under mpirun -np N; each rank takes its\n"
    "                       share of the global batch, gradients are all-reduced in the recipe's dtype\n"
    "                       (default: the ranks mpirun started, else 1; --dp 1 alone starts MPI as a\n"
    "                       singleton). Rank 0 prints and writes; a rank that fails stops every rank\n"
    "  --zero 0|1           ZeRO-1 over the dp ranks: master weights and Adam m, v sharded (each rank\n"
    "                       holds ceil(elements / dp) of each class), gradients reduce-scattered, the\n"
    "                       updated weights all-gathered (0: none, the default; 2 and 3 are planned only)\n"
    "  --dist-opt           Megatron's distributed optimizer: shard the states the recipe lists\n"
    "                       (recipes.csv dist_opt_shards); the same collectives\n"
    "  --tp N               tensor-parallel ranks with sequence parallelism (cpu backend): column/row-\n"
    "                       parallel linears, heads and FFN split over the ranks\n"
    "  --pp N               pipeline stages, 1F1B (cpu backend); each stage an even share of the layers.\n"
    "                       With --tp and --dp: mpirun -np tp x pp x dp (tp fastest, then dp, then pp)\n"
    "  --stack NAME         the software stack the plan is made for (stacks.csv; default fp8plan, this\n"
    "                       executor: another stack's plan predicts that stack, not this run)\n"
    "  --gpu G              the GPU the plan is made for (default: the device's row of gpus.csv with\n"
    "                       --backend cuda, else h100-sxm)\n"
    "  --seed S             weights and synthetic data (default 1)\n"
    "  --data FILE          train on the bytes of FILE (vocabulary 256 unless --vocab) instead of\n"
    "                       the synthetic stream; the repository ships models/corpus/fp8-notes.txt\n"
    "  --lr X --warmup N --wd X   AdamW learning rate (1e-3), linear warm-up steps (0), weight decay (0.1)\n"
    "  --save FILE          write a checkpoint after the last step (atomically)\n"
    "  --resume FILE        continue from a checkpoint of the same model, recipe and settings\n"
    "  --scaling-trace FILE CSV of every FP8 tensor's amax and scales each step (FP8 recipes):\n"
    "                       step,bank,layer,linear,operand,format,amax,scale_used,scale_next; one\n"
    "                       tensor's amax column fed to `fp8plan scaling --trace` gives its scales\n"
    "  --loss-log FILE      CSV of every step's loss (step,loss; full float precision)\n"
    "  --log-every N        print every Nth step (default 1); --quiet prints only the report\n"
    "  -o FILE              also write every row of the report to FILE (atomically)\n"
    "  --format csv|json|html  what -o writes (default csv); html: one self-contained page with planned\n"
    "                       against measured memory, time and collectives (accepted bands), the loss\n"
    "                       curve and the time per phase of every step, and the CSV's rows\n"
    "  --catalog DIR        the catalog directory (default: $FP8PLAN_CATALOG, ./models, models/ beside\n"
    "                       the build directory)\n"
    "\n"
    "Exit status: 0 ok; 1 a measured term outside its tolerance; 64 usage; 65 bad data or checkpoint;\n"
    "66 missing file; 69 backend unavailable (CUDA not built, no GPU, or a recipe the executor\n"
    "does not run); 71 out of memory (the model does not fit this machine); 73 an output cannot be\n"
    "created; 74 a write failed. SIGINT/SIGTERM (one rank): the step in flight ends, the report\n"
    "covers the steps taken, exit 130/143; a failed step is reported the same way, with its code.\n"
    "The files (-o, --loss-log, --scaling-trace, --save) land together: all new, or (a second signal\n"
    "while they are written, a failure) all as they were.\n";

enum {
    OPT_BACKEND = 256,
    OPT_MODEL,
    OPT_RECIPE,
    OPT_STEPS,
    OPT_LAYERS,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_KV_HEADS,
    OPT_FFN,
    OPT_SEQ,
    OPT_MBS,
    OPT_GBS,
    OPT_VOCAB,
    OPT_GPU,
    OPT_SEED,
    OPT_DATA,
    OPT_LR,
    OPT_WARMUP,
    OPT_WD,
    OPT_SAVE,
    OPT_RESUME,
    OPT_LOG_EVERY,
    OPT_QUIET,
    OPT_CATALOG,
    OPT_TRACE,
    OPT_LOSS_LOG,
    OPT_STACK,
    OPT_DP,
    OPT_TP,
    OPT_PP,
    OPT_ZERO,
    OPT_DIST_OPT,
    OPT_EXPERTS,
    OPT_TOPK,
    OPT_EXPERT_FFN,
    OPT_DENSE_LAYERS,
    OPT_EP,
};

static const struct option opts[] = {
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"model", required_argument, NULL, OPT_MODEL},
    {"recipe", required_argument, NULL, OPT_RECIPE},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"kv-heads", required_argument, NULL, OPT_KV_HEADS},
    {"ffn", required_argument, NULL, OPT_FFN},
    {"experts", required_argument, NULL, OPT_EXPERTS},
    {"topk", required_argument, NULL, OPT_TOPK},
    {"expert-ffn", required_argument, NULL, OPT_EXPERT_FFN},
    {"dense-layers", required_argument, NULL, OPT_DENSE_LAYERS},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"mbs", required_argument, NULL, OPT_MBS},
    {"gbs", required_argument, NULL, OPT_GBS},
    {"dp", required_argument, NULL, OPT_DP},
    {"tp", required_argument, NULL, OPT_TP},
    {"pp", required_argument, NULL, OPT_PP},
    {"ep", required_argument, NULL, OPT_EP},
    {"zero", required_argument, NULL, OPT_ZERO},
    {"dist-opt", no_argument, NULL, OPT_DIST_OPT},
    {"vocab", required_argument, NULL, OPT_VOCAB},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"seed", required_argument, NULL, OPT_SEED},
    {"data", required_argument, NULL, OPT_DATA},
    {"lr", required_argument, NULL, OPT_LR},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"wd", required_argument, NULL, OPT_WD},
    {"save", required_argument, NULL, OPT_SAVE},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"log-every", required_argument, NULL, OPT_LOG_EVERY},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"catalog", required_argument, NULL, OPT_CATALOG},
    {"stack", required_argument, NULL, OPT_STACK},
    {"scaling-trace", required_argument, NULL, OPT_TRACE},
    {"loss-log", required_argument, NULL, OPT_LOSS_LOG},
    {"format", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

const char *const RUN_CMD = "run";

/* A positive integer flag. */
static int flag_u32(const char *flag, const char *arg, long lo, long hi, uint32_t *out)
{
    Err e;
    int v;
    if (num_parse_int_range(arg, lo, hi, &v, &e)) return cli_usage(RUN_CMD, "--%s: %s", flag, e.msg);
    *out = (uint32_t)v;
    return 0;
}

static int flag_f32(const char *flag, const char *arg, double lo, double hi, float *out)
{
    Err e;
    double v;
    if (num_parse_double(arg, NUM_FINITE_ONLY, &v, &e)) return cli_usage(RUN_CMD, "--%s: %s", flag, e.msg);
    if (v < lo || v > hi) return cli_usage(RUN_CMD, "--%s: %s is outside [%g, %g]", flag, arg, lo, hi);
    *out = (float)v;
    return 0;
}

/* --zero: a ZeRO stage 0..3 (2 and 3 are refused when the model is built: planned, not run). */
static int flag_zero(const char *arg, int *out)
{
    uint32_t z = 0;
    int rc = flag_u32("zero", arg, 0, 3, &z);
    if (!rc && *out >= 0 && (int)z != *out) return cli_usage(RUN_CMD, "--zero %d and --zero %u: give one", *out, z);
    if (!rc) *out = (int)z;
    return rc;
}

/* 0 ok, -1 help printed, else an exit code. */
static int parse(int argc, char **argv, RunArgs *a)
{
    memset(a, 0, sizeof *a);
    a->backend = "cpu";
    a->mbs = 1;
    a->steps = 20;
    a->log_every = 1;
    a->hyper = model_hyper_default();
    a->out.fmt = TABLE_CSV;
    int c, rc = 0, zero = -1, dist_opt = 0;
    Err e;
    while (!rc && (c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': cli_help(help); return -1;
        case 'o': a->out.path = optarg; break;
        case 'f':
            if ((rc = cli_parse_format(RUN_CMD, optarg, &a->out))) break;
            if (a->out.fmt == TABLE_TEXT) rc = cli_usage(RUN_CMD, "--format: -o FILE takes csv, json or html");
            break;
        case OPT_BACKEND: a->backend = optarg; break;
        case OPT_MODEL: a->model = optarg; break;
        case OPT_RECIPE: a->recipe = optarg; break;
        case OPT_GPU: a->gpu = optarg; break;
        case OPT_DATA: a->data = optarg; break;
        case OPT_SAVE: a->save = optarg; break;
        case OPT_RESUME: a->resume = optarg; break;
        case OPT_CATALOG: a->catalog = optarg; break;
        case OPT_STACK: a->stack = optarg; break;
        case OPT_TRACE: a->trace = optarg; break;
        case OPT_LOSS_LOG: a->loss_log = optarg; break;
        case OPT_QUIET: a->quiet = 1; break;
        case OPT_STEPS: rc = flag_u32("steps", optarg, 1, 100000000, &a->steps); break;
        case OPT_LAYERS: rc = flag_u32("layers", optarg, 1, 100000, &a->ov.layers); break;
        case OPT_HIDDEN: rc = flag_u32("hidden", optarg, 1, 1 << 20, &a->ov.hidden); break;
        case OPT_HEADS: rc = flag_u32("heads", optarg, 1, 1 << 16, &a->ov.heads); break;
        case OPT_KV_HEADS: rc = flag_u32("kv-heads", optarg, 1, 1 << 16, &a->ov.kv_heads); break;
        case OPT_FFN: rc = flag_u32("ffn", optarg, 1, 1 << 24, &a->ov.ffn); break;
        case OPT_EXPERTS: rc = flag_u32("experts", optarg, 1, 1 << 16, &a->ov.experts); break;
        case OPT_TOPK: rc = flag_u32("topk", optarg, 1, 1 << 16, &a->ov.topk); break;
        case OPT_EXPERT_FFN: rc = flag_u32("expert-ffn", optarg, 1, 1 << 24, &a->ov.expert_ffn); break;
        case OPT_DENSE_LAYERS:
            rc = flag_u32("dense-layers", optarg, 0, 100000, &a->ov.dense_layers);
            a->ov.dense_layers_set = 1;
            break;
        case OPT_SEQ: rc = flag_u32("seq", optarg, 2, 1 << 20, &a->ov.seq); break;
        case OPT_MBS: rc = flag_u32("mbs", optarg, 1, 1 << 16, &a->mbs); break;
        case OPT_GBS: rc = flag_u32("gbs", optarg, 1, 1 << 20, &a->gbs); break;
        case OPT_DP: rc = flag_u32("dp", optarg, 1, 4096, &a->dp); break;
        case OPT_TP: rc = flag_u32("tp", optarg, 1, 4096, &a->tp); break;
        case OPT_PP: rc = flag_u32("pp", optarg, 1, 4096, &a->pp); break;
        case OPT_EP: rc = flag_u32("ep", optarg, 1, 4096, &a->ep); break;
        case OPT_ZERO: rc = flag_zero(optarg, &zero); break;
        case OPT_DIST_OPT: dist_opt = 1; break;
        case OPT_VOCAB: rc = flag_u32("vocab", optarg, 2, INT32_MAX, &a->ov.vocab); break;
        case OPT_LOG_EVERY: rc = flag_u32("log-every", optarg, 1, 100000000, &a->log_every); break;
        case OPT_WARMUP: rc = flag_u32("warmup", optarg, 0, 100000000, &a->hyper.warmup); break;
        case OPT_LR: rc = flag_f32("lr", optarg, 0.0, 10.0, &a->hyper.lr); break;
        case OPT_WD: rc = flag_f32("wd", optarg, 0.0, 10.0, &a->hyper.weight_decay); break;
        case OPT_SEED:
            if (num_parse_u64(optarg, &a->hyper.seed, &e)) rc = cli_usage(RUN_CMD, "--seed: %s", e.msg);
            break;
        default: return cli_bad_option(RUN_CMD);
        }
    }
    if (rc) return rc;
    if ((rc = cli_no_operands(RUN_CMD, argc, argv))) return rc;
    if (dist_opt && zero >= 0) return cli_usage(RUN_CMD, "--dist-opt and --zero %d are alternatives; give one", zero);
    a->sharding = dist_opt ? SHARD_DIST_OPT : zero > 0 ? (Sharding)(SHARD_ZERO1 + zero - 1) : SHARD_NONE;
    if (!a->model) return cli_usage(RUN_CMD, "--model is required (a row of models.csv, e.g. gpt2-124m)");
    if (!a->recipe)
        return cli_usage(RUN_CMD, "--recipe is required (e.g. megatron-bf16, te-fp8, te-fp8-current, fp8lm)");
    if (a->data && !a->ov.vocab) a->ov.vocab = 256; /* byte-level text */
    if (a->out.fmt != TABLE_CSV && !a->out.path)
        return cli_usage(RUN_CMD, "--format %s needs -o FILE", a->out.fmt == TABLE_HTML ? "html" : "json");
    return 0;
}

/* ---- the run ---- */

int run_fail(const Err *e) { return cli_fail(RUN_CMD, e); }

double run_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_header(const RunArgs *a, const Model *m, const DataStream *d, const Measurement *ms, const Plan *p,
                         double build_s)
{
    const ModelSpec *s = &m->spec;
    printf("fp8plan run: %s on %s, recipe %s, plan for %s (stack %s)\n", a->model, m->bk->name, m->recipe.name,
           p->in.gpu->name, p->in.stack ? p->in.stack->name : "none");
    if (ms->dev.have) {
        const BackendDeviceInfo *i = &ms->dev.info;
        printf("  device: %s, %d SMs, compute capability %d.%d, %.1f GiB; CUDA runtime %d, driver %d, GEMM library "
               "%llu\n",
               i->name, i->sm_count, i->cc_major, i->cc_minor, (double)i->total_bytes / 1073741824.0,
               i->runtime_version, i->driver_version, (unsigned long long)i->gemm_library_version);
        printf("  peaks for MFU: %s\n", ms->peak.why);
    }
    char line[512], micro[48] = "";
    if (m->microbatches > 1) snprintf(micro, sizeof micro, " x %u micro-batches", m->microbatches);
    snprintf(line, sizeof line,
             "  model: %u layers, hidden %u, %u heads (%u KV), ffn %u, %s, %s, %s positions, %s, %s; seq %u, mbs "
             "%u%s, vocab %u (padded %llu), %s params",
             s->layers, s->hidden, s->heads, s->kv_heads, s->ffn_hidden, norm_name(s->norm), mlp_name(s->mlp),
             pos_name(s->pos), s->tied_embeddings ? "tied" : "untied", s->linear_bias ? "biases" : "no biases", m->seq,
             m->batch, micro, s->vocab, (unsigned long long)m->vocab_padded,
             num_fmt_grouped(model_weight_count(m), (char[32]){0}, 32));
    table_put_prose(stdout, "%s\n", line); /* wrapped at TABLE_WIDTH columns */
    double floor = data_entropy_floor(d);
    if (floor >= 0)
        printf("  data: %s; entropy %.3f nats/token, ln V = %.3f\n", d->name, floor, log((double)s->vocab));
    else
        printf("  data: %s (%llu bytes); ln V = %.3f\n", d->name, (unsigned long long)d->len, log((double)s->vocab));
    printf("  arena: %s bytes in one allocation; model built in %.2f s (weights on %d host threads)\n",
           num_fmt_grouped(m->arena.bytes, (char[32]){0}, 32), build_s, par_threads());
    fflush(stdout);
}

/* The GPU the plan is for: --gpu, else the device's catalog row, else h100-sxm. */
static const GpuSpec *plan_gpu(const RunArgs *a, const Catalog *cat, const Measurement *ms)
{
    if (a->gpu) return catalog_gpu(cat, a->gpu);
    if (ms->dev.have && ms->peak.gpu) return ms->peak.gpu;
    if (ms->dev.have)
        fprintf(stderr, "fp8plan run: %s matches no row of gpus.csv; the plan is for h100-sxm (--gpu G to choose)\n",
                ms->dev.info.name);
    return catalog_gpu(cat, "h100-sxm");
}

/* The catalog rows the flags name; a usage exit code when one is unknown. */
static int lookup(const RunArgs *a, const Catalog *cat, const Measurement *ms, const ModelSpec **base,
                  const GpuSpec **gpu, const Recipe **recipe)
{
    char names[2048];
    *base = catalog_model(cat, a->model);
    *gpu = plan_gpu(a, cat, ms);
    *recipe = catalog_recipe(cat, a->recipe);
    if (!*base) {
        catalog_model_names(cat, names, sizeof names);
        return cli_usage(RUN_CMD, "--model: unknown model '%s' (known: %s)", a->model, names);
    }
    if (!*gpu) {
        catalog_gpu_names(cat, names, sizeof names);
        return cli_usage(RUN_CMD, "--gpu: unknown GPU '%s' (known: %s)", a->gpu ? a->gpu : "h100-sxm", names);
    }
    if (!*recipe) {
        catalog_recipe_names(cat, names, sizeof names);
        return cli_usage(RUN_CMD, "--recipe: unknown recipe '%s' (known: %s)", a->recipe, names);
    }
    return 0;
}

/* The plans of a run: *built, the one the executor lays its arena out from
 * (stacks.csv's fp8plan row: this executor), and *held, the one the run is
 * compared with — the same plan, or --stack's (which predicts that stack, so
 * the terms where the stacks differ are reported as differing). Both count the
 * communicator the process holds: a started NCCL one ("nccl 2.x.y") has its
 * buffers on the device even for one rank (578 MiB measured on an H200 against
 * the plan's 588 MiB per communicator); MPI and the local copies hold none there. */
static int make_plans(const RunArgs *a, const Catalog *cat, const ModelSpec *model, const GpuSpec *gpu, const Recipe *r,
                      const Comm *comm, const Plan **built, const Plan **held)
{
    static Plan own_plan, other_plan;
    const StackSpec *own = catalog_stack(cat, "fp8plan"), *stack = a->stack ? catalog_stack(cat, a->stack) : own;
    if (!stack && a->stack) {
        char names[2048];
        catalog_stack_names(cat, names, sizeof names);
        return cli_usage(RUN_CMD, "--stack: unknown stack '%s' (known: %s)", a->stack, names);
    }
    Plan *p[2] = {&own_plan, &other_plan};
    const StackSpec *st[2] = {own, stack};
    for (int i = 0; i < (stack == own ? 1 : 2); i++) {
        PlanInput in;
        Err e;
        exec_plan_input(&in, model, gpu, r, a->mbs, a->gbs / (a->mbs * a->dp), st[i]);
        exec_plan_dp(&in, a->dp, a->sharding);
        in.comms_min = run_device_comms(comm);
        if (a->tp > 1) in.tp = a->tp, in.sp = 1; /* the executor's TP is sequence-parallel */
        if (a->pp > 1) in.pp = a->pp, in.stage_view = run_stage_of(a, a->rank) + 1; /* this rank's stage */
        if (a->ep > 1) in.ep = a->ep; /* the planner checks it against the experts and the ranks */
        if (plan_build(&in, p[i], &e)) {
            err_prefix(&e, "plan");
            return run_fail(&e);
        }
    }
    *built = &own_plan;
    *held = stack == own ? &own_plan : &other_plan;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    RunArgs a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = run_check_paths(&a))) return rc; /* before anything is built */
    Err e;
    Backend *bk = NULL;
    Comm *comm = NULL;
    Catalog *cat = NULL;
    Model *m = NULL;
    DataStream d = {0};
    static Measurement ms;
    RunFiles sf = {0};
    int grouped = 0, keep = 0; /* the output group begun; its files to be put in place */
    const ModelSpec *base;
    const GpuSpec *gpu;
    const Recipe *recipe;
    ModelSpec model;
    const Plan *built = NULL, *plan = NULL; /* what the executor builds; what the run is held to */
    memset(&ms, 0, sizeof ms);
    if (backend_create(a.backend, &bk, &e)) return run_fail(&e);
    if (measure_init(&ms, bk, a.steps, &e)) { /* a GPU: the device, and memory in use with the context up */
        rc = run_fail(&e);
        goto done;
    }
    if (run_make_comm(&a, bk, &comm, &e)) {
        rc = run_fail(&e);
        goto done;
    }
    measure_after_comm(&ms, bk);
    if ((rc = run_resolve_ranks(&a, comm))) goto done;
    if ((rc = plan_catalog_load(RUN_CMD, a.catalog, &cat))) goto done;
    measure_match(&ms, cat);
    if ((rc = lookup(&a, cat, &ms, &base, &gpu, &recipe))) goto done;
    if (exec_model(base, &a.ov, &model, &e)) {
        rc = run_fail(&e);
        goto done;
    }
    if ((rc = make_plans(&a, cat, &model, gpu, recipe, comm, &built, &plan))) goto done;
    if (!a.rank) run_warn_model(&a, base, &model, built, bk->name);
    double t0 = run_now_s();
    run_progress_build(&model, built, par_threads());
    Status st = model_create(built, &a.hyper, bk, comm, &m, &e);
    run_progress_end();
    if (st) {
        rc = run_fail(&e);
        goto done;
    }
    double build_s = run_now_s() - t0;
    if ((a.save || a.resume) && ckpt_check(m, &e)) { /* before the steps, not after them */
        rc = run_fail(&e);
        goto done;
    }
    st = a.data ? data_bytes_file(&d, a.data, model.vocab, built->seq, &e)
                : data_synthetic(&d, model.vocab, a.hyper.seed, &e);
    if (st) {
        rc = run_fail(&e);
        goto done;
    }
    if (a.resume) {
        DataState ds;
        if (ckpt_load(a.resume, m, &ds, &e) || data_restore(&d, &ds, &e)) {
            rc = run_fail(&e);
            goto done;
        }
        if (!a.quiet) printf("resumed from %s at step %u\n", a.resume, m->step);
    }
    measure_after_model(&ms, m);
    if (!a.quiet) print_header(&a, m, &d, &ms, plan, build_s);
    run_stop_on_signals(comm->size);
    /* the run's files land together: loss log, trace, checkpoint and report all new, or all as they were
     * (a second signal while they are written; a failure) */
    outfile_group_begin();
    grouped = 1;
    if ((rc = run_files_open(&a, m, &sf))) goto done;
    /* a run stopped by a signal or a failed step still reports the steps it
     * took (one rank: several are stopped together, see done) */
    int stopped = run_train(&a, m, &d, &ms, &sf);
    if (stopped && (comm->size > 1 || !ms.steps)) {
        rc = stopped;
        goto done;
    }
    if ((rc = run_files_commit(&sf))) goto done;
    measure_finish(&ms, m);
    if (stopped > 128 && a.save) fprintf(stderr, "fp8plan run: --save: the checkpoint is of step %u\n", m->step);
    /* rank 0 writes; with sharded states or TP/PP ranks every rank hands its part over (exec/ckpt.h) */
    if (stopped && stopped < 128 && a.save)
        fprintf(stderr, "fp8plan run: --save: no checkpoint (step %u failed)\n", m->step + 1);
    else if (a.save && (!a.rank || ckpt_every_rank(m)) && ckpt_save(a.rank ? NULL : a.save, m, &d.st, &e)) {
        rc = run_fail(&e);
        goto done;
    }
    if (a.save && !a.quiet) printf("checkpoint: %s (step %u)\n", a.save, m->step);
    if (ms.dev.st) fprintf(stderr, "fp8plan run: warning: a device measurement failed: %s\n", ms.dev.msg);
    RankData rd = {0};
    int ranks_rc = 0;
    if (comm->size > 1) {
        if (run_ranks_gather(comm, plan, &ms, &rd, &e)) {
            run_ranks_free(&rd);
            rc = run_fail(&e);
            goto done;
        }
        ranks_rc = run_rank_table(plan, comm, &ms, &rd);
    }
    if (!a.rank) rc = run_report(&a, plan, m, &ms, &d, comm->size > 1 ? &rd : NULL);
    keep = !rc || rc == status_exit_code(ST_TOLERANCE); /* the report written: the set is whole */
    run_ranks_free(&rd);
    if (!rc && ranks_rc) rc = ranks_rc;
    if (stopped && (!rc || rc == 1)) rc = stopped; /* the stop's code, unless the report could not be written */
done:
    run_files_abort(&sf);
    if (grouped && outfile_group_end(keep, &e) && keep) rc = run_fail(&e);
    if (rc && rc != 1 && comm && comm->size > 1) { /* never leave the other ranks waiting in a collective */
        fprintf(stderr, "fp8plan run: rank %d of %d failed (exit %d): stopping every rank\n", comm->rank, comm->size,
                rc);
        comm_mpi_abort(comm, rc);
    }
    measure_free(&ms);
    data_free(&d);
    model_destroy(m);
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
    free(cat);
    return rc;
}
