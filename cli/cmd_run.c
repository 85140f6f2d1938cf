/* cli/cmd_run.c — `fp8plan run`: train a model of the catalog for N steps with a
 * recipe on a backend, then report measured versus planned, term by term.
 * Wiring only: the flags into a RunSpec, the session (exec/run/run.h) and what
 * it shows through its hooks: the header, the progress, the per-rank tables
 * (cli/cmd_run_tables.c) and the report (cli/cmd_run_report.c). */
#include "cli/cmd_run.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_run_check.h"
#include "exec/backend/par.h"
#include "util/num.h"

static const char help_head[] =
    "usage: fp8plan run --model M --recipe R [--backend cpu|cuda] [--steps N]\n"
    "                   [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--seq S]\n"
    "                   [--vocab V] [--experts E] [--topk K] [--expert-ffn F] [--dense-layers N]\n"
    "                   [--mtp-layers N]\n"
    "                   [--mbs B] [--gbs G] [--dp N [--zero 0|1 | --dist-opt]] [--tp N] [--ep N]\n"
    "                   [--etp N] [--pp N] [--gpu G] [--seed S] [--data FILE]\n"
    "                   [--lr X] [--warmup N] [--wd X] [--save FILE] [--resume FILE]\n"
    "                   [--scaling-trace FILE] [--loss-log FILE] [--routing-log FILE] [--log-every N]\n"
    "                   [--quiet]\n"
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
    "\n";

static const char help_tail[] =
    "\n"
    "Exit status: 0 ok; 1 a measured term outside its tolerance; 64 usage; 65 bad data or checkpoint;\n"
    "66 missing file; 69 backend unavailable (CUDA not built, no GPU, or a recipe the executor\n"
    "does not run); 71 out of memory (the model does not fit this machine); 73 an output cannot be\n"
    "created; 74 a write failed. SIGINT/SIGTERM (one rank): the step in flight ends, the report\n"
    "covers the steps taken, exit 130/143; a failed step is reported the same way, with its code.\n"
    "The files (-o, --loss-log, --routing-log, --scaling-trace, --save) land together: all new, or (a\n"
    "second signal while they are written, a failure) all as they were.\n";

const char *const RUN_CMD = "run";

/* What the flags fill: the run's own settings and the plan inputs it takes (cli/plan_flags.c). */
typedef struct {
    RunSpec a;
    CliOut out; /* -o FILE (a.out) and what it holds: --format csv (default), json or html (a page with charts) */
    PlanArgs p; /* --model --recipe --gpu --stack --catalog --seq --mbs --gbs --dp --tp --pp --ep --zero --dist-opt */
} Parsed;

#define A(f)                      offsetof(Parsed, a.f)
#define USE(n, lo, hi, arg, help) PLAN_FLAG(offsetof(Parsed, p), n, lo, hi, arg, help)
#define IN23                      "\n                       " /* a help line's continuation */

/* --format: what -o writes (csv, json or html; not the text table). */
static int read_format(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    (void)o;
    int rc = cli_parse_format(p->cmd, arg, t);
    if (!rc && ((CliOut *)t)->fmt == TABLE_TEXT) rc = cli_usage(p->cmd, "--format: -o FILE takes csv, json or html");
    return rc;
}

// clang-format off
static const CliOpt opts[] = {
    {"backend", OPT_STR, A(backend), .arg = "cpu|cuda", .help = "cpu: the C reference (FP8 emulated exactly); cuda: the GPU (default cpu)"},
    USE("model", 0, 0, "M", "a row of models.csv (its norm, mlp, position, tied and bias columns)"),
    USE("recipe", 0, 0, "R", "a row of recipes.csv: megatron-bf16, te-fp8, te-fp8-current, fp8lm, ..."),
    {"steps", OPT_U32, A(steps), .lo = 1, .hi = 100000000, .arg = "N", .help = "training steps (default 20)"},
    {.kind = OPT_TEXT, .help = "  --layers/--hidden/--heads/--kv-heads/--ffn/--seq/--vocab   override the model's sizes (FFN"
        IN23 "follows --hidden and KV heads follow --heads at the model's ratios"
        IN23 "unless given)"},
    {"layers", OPT_U32, A(ov.layers), .lo = 1, .hi = 100000},
    {"hidden", OPT_U32, A(ov.hidden), .lo = 1, .hi = 1 << 20},
    {"heads", OPT_U32, A(ov.heads), .lo = 1, .hi = 1 << 16},
    {"kv-heads", OPT_U32, A(ov.kv_heads), .lo = 1, .hi = 1 << 16},
    {"ffn", OPT_U32, A(ov.ffn), .lo = 1, .hi = 1 << 24},
    USE("seq", 2, 1 << 20, NULL, ""),
    {"vocab", OPT_U32, A(ov.vocab), .lo = 2, .hi = INT32_MAX},
    {.kind = OPT_TEXT, .help = "  --experts/--topk/--expert-ffn/--dense-layers   a model with experts: routed experts, experts per"
        IN23 "token, the expert FFN width (follows --hidden unless given), dense first"
        IN23 "layers. MoE layers run on the cpu backend over data, expert, tensor and"
        IN23 "pipeline parallel ranks, states sharded or not, their FFNs also split over"
        IN23 "--etp ranks (BF16/FP32, te-fp8, te-fp8-current, deepseek-v3: its 1x128"
        IN23 "blocks whole on every rank); the cuda backend's MoE path is built but not"
        IN23 "yet run on a GPU (docs/executor-moe.md)"},
    {"experts", OPT_U32, A(ov.experts), .lo = 1, .hi = 1 << 16},
    {"topk", OPT_U32, A(ov.topk), .lo = 1, .hi = 1 << 16},
    {"expert-ffn", OPT_U32, A(ov.expert_ffn), .lo = 1, .hi = 1 << 24},
    {"dense-layers", OPT_U32, A(ov.dense_layers), .lo = 0, .hi = 100000, .mark = CLI_MARK(Parsed, a.ov.dense_layers_set)},
    {"mtp-layers", OPT_U32, A(ov.mtp_layers), .lo = 0, .hi = 16, .arg = "N", .mark = CLI_MARK(Parsed, a.ov.mtp_layers_set),
     .help = "multi-token prediction depths (default: the model's mtp_layers), run one"
        IN23 "after another; 0 to 16, below --seq"},
    USE("ep", 1, 4096, NULL, "expert-parallel ranks (mpirun -np N x k): the experts split over N ranks,"
        IN23 "tokens exchanged by all-to-all; N must divide the experts and the ranks"
        IN23 "(exit 64 before any work)"),
    USE("etp", 1, 4096, NULL, "expert-tensor-parallel ranks (Megatron-Core's --expert-tensor-parallel-size):"
        IN23 "each expert's FFN split over N ranks (ep x etp must divide tp x dp), the"
        IN23 "dispatched rows gathered and the partial outputs reduce-scattered over them;"
        IN23 "cpu backend, the recipes --experts names, --save/--resume too (default 1;"
        IN23 "the cuda backend refuses it before any work, exit 69)"),
    USE("mbs", 1, 1 << 16, "B", "micro-batch, sequences per forward and backward (default 1)"),
    USE("gbs", 1, 1 << 20, "G", "global batch, sequences per optimizer step: G / (B x DP) micro-batches per"
        IN23 "rank whose gradients accumulate (default B x DP: one)"),
    USE("dp", 1, 4096, NULL, "data-parallel ranks (cpu backend): run under mpirun -np N; each rank takes its"
        IN23 "share of the global batch, gradients are all-reduced in the recipe's dtype"
        IN23 "(default: the ranks mpirun started, else 1; --dp 1 alone starts MPI as a"
        IN23 "singleton). Rank 0 prints and writes; a rank that fails stops every rank"),
    USE("zero", 0, 0, "0|1", "ZeRO-1 over the dp ranks: master weights and Adam m, v sharded (each rank"
        IN23 "holds ceil(elements / dp) of each class), gradients reduce-scattered, the"
        IN23 "updated weights all-gathered (0: none, the default; 2 and 3 are planned only)"),
    USE("dist-opt", 0, 0, NULL, "Megatron's distributed optimizer: shard the states the recipe lists"
        IN23 "(recipes.csv dist_opt_shards); the same collectives"),
    USE("tp", 1, 4096, NULL, "tensor-parallel ranks with sequence parallelism (cpu backend): column/row-"
        IN23 "parallel linears, heads and FFN split over the ranks; latent attention's"
        IN23 "down-projections duplicated on each rank's sequence shard, its"
        IN23 "up-projections column-parallel (Megatron-Core's MLA); an MTP depth's eh_proj"
        IN23 "column-parallel (docs/executor-moe.md); not with deepseek-v3 yet"),
    USE("pp", 1, 4096, NULL, "pipeline stages, 1F1B (cpu backend); each stage an even share of the layers."
        IN23 "With --tp and --dp: mpirun -np tp x pp x dp (tp fastest, then dp, then pp)"),
    {"first-stage-layers", OPT_U32, A(first_stage_layers), .lo = 1, .hi = 1u << 20, .arg = "N",
     .help = "uneven pipeline (with --pp): layers on the first stage; --last-stage-layers N"
        IN23 "those on the last; the other stages share the rest evenly (the plan's split)"},
    {"last-stage-layers", OPT_U32, A(last_stage_layers), .lo = 1, .hi = 1u << 20, .arg = "N"},
    USE("stack", 0, 0, NULL, "the software stack the plan is made for (stacks.csv; default fp8plan, this"
        IN23 "executor: another stack's plan predicts that stack, not this run)"),
    USE("gpu", 0, 0, NULL, "the GPU the plan is made for (default: the device's row of gpus.csv with"
        IN23 "--backend cuda, else h100-sxm)"),
    {"seed", OPT_U64, A(hyper.seed), .arg = "S", .help = "weights and synthetic data (default 1)"},
    {"data", OPT_STR, A(data), .arg = "FILE", .help = "train on the bytes of FILE (vocabulary 256 unless --vocab) instead of"
        IN23 "the synthetic stream; the repository ships models/corpus/fp8-notes.txt"},
    {.kind = OPT_TEXT, .help = "  --lr X --warmup N --wd X   AdamW learning rate (1e-3), linear warm-up steps (0), weight decay (0.1)"},
    {"lr", OPT_F32, A(hyper.lr), .lo = 0, .hi = 10},
    {"warmup", OPT_U32, A(hyper.warmup), .lo = 0, .hi = 100000000},
    {"wd", OPT_F32, A(hyper.weight_decay), .lo = 0, .hi = 10},
    {"mtp-weight", OPT_F32, A(mtp_weight), .lo = 0, .hi = 10, .arg = "X", .help = "weight of the multi-token-prediction loss"
        IN23 "(mtp_layers rows; default 0.3, DeepSeek-V3's for its first 10T tokens)"},
    {"save", OPT_STR, A(save), .arg = "FILE", .help = "write a checkpoint after the last step (atomically)"},
    {"resume", OPT_STR, A(resume), .arg = "FILE", .help = "continue from a checkpoint of the same model, recipe and settings"},
    {"scaling-trace", OPT_STR, A(trace), .arg = "FILE", .help = "CSV of every FP8 tensor's amax and scales each step (FP8 recipes):"
        IN23 "step,bank,layer,linear,operand,format,amax,scale_used,scale_next; one"
        IN23 "tensor's amax column fed to `fp8plan scaling --trace` gives its scales"},
    {"loss-log", OPT_STR, A(loss_log), .arg = "FILE", .help = "CSV of every step's loss (step,loss; full float precision; with MTP a column a depth, mtp_loss or mtp_loss_1 ...)"},
    {"routing-log", OPT_STR, A(routing_log), .arg = "FILE", .mark = CLI_MARK(Parsed, a.want_routing),
     .help = "CSV of the routing every step took on every rank, a model with experts:"
        IN23 "step,layer,rank,expert,token_copies (`fp8plan plan --routing FILE` gives each"
        IN23 "rank's expert all-to-all bytes for it)"},
    {"log-every", OPT_U32, A(log_every), .lo = 1, .hi = 100000000, .arg = "N", .help = "print every Nth step (default 1); --quiet prints only the report"},
    {"quiet", OPT_FLAG, A(quiet), .set = 1},
    {"output", OPT_STR, A(out), .short_name = 'o', .arg = "FILE", .help = "also write every row of the report to FILE (atomically)"},
    {"format", OPT_FN, offsetof(Parsed, out), .has_arg = 1, .fn = read_format},
    {.kind = OPT_TEXT, .help = "  --format csv|json|html  what -o writes (default csv); html: one self-contained page with planned"
        IN23 "against measured memory, time and collectives (accepted bands), the loss"
        IN23 "curve and the time per phase of every step, and the CSV's rows"},
    USE("catalog", 0, 0, NULL, "the catalog directory (default: $FP8PLAN_CATALOG, ./models, models/ beside"
        IN23 "the build directory)"),
    {0},
};
// clang-format on

/* The plan inputs into the run's settings: a layout flag not given is 0 (none; --dp: the ranks). */
static void take_plan_flags(const PlanArgs *p, RunSpec *a)
{
    a->model = p->model, a->recipe = p->recipe, a->gpu = p->gpu, a->stack = p->stack, a->catalog = p->catalog;
    a->ov.seq = p->in.seq, a->mbs = p->in.mbs, a->gbs = (uint32_t)p->in.gbs; /* at most 2^20: the rows' range */
    a->tp = p->layout_given[0] ? p->in.tp : 0;
    a->pp = p->layout_given[1] ? p->in.pp : 0;
    a->dp = p->layout_given[4] ? p->in.dp : 0;
    a->ep = p->layout_given[8] ? p->in.ep : 0;
    a->etp = p->layout_given[9] ? p->in.etp : 0;
    a->sharding = p->in.sharding;
}

/* 0 ok, -1 help printed, else an exit code. */
static int parse(int argc, char **argv, RunSpec *a, CliOut *out)
{
    Parsed f = {.a = {.backend = "cpu", .steps = 20, .log_every = 1, .hyper = model_hyper_default(), .mtp_weight = -1}};
    f.out.fmt = TABLE_CSV;
    plan_flags_defaults(&f.p);
    int rc = cli_opts_parse(&(CliParse){.cmd = RUN_CMD, .opts = opts, .help = help_head, .help_tail = help_tail}, argc,
                            argv, &f);
    if (rc || (rc = plan_flags_finish(RUN_CMD, &f.p))) return rc;
    *a = f.a;
    *out = f.out;
    out->path = a->out;
    take_plan_flags(&f.p, a);
    if (!a->model) return cli_usage(RUN_CMD, "--model is required (a row of models.csv, e.g. gpt2-124m)");
    if (!a->recipe)
        return cli_usage(RUN_CMD, "--recipe is required (e.g. megatron-bf16, te-fp8, te-fp8-current, fp8lm)");
    if (a->data && !a->ov.vocab) a->ov.vocab = 256; /* byte-level text */
    if (out->fmt != TABLE_CSV && !out->path)
        return cli_usage(RUN_CMD, "--format %s needs -o FILE", out->fmt == TABLE_HTML ? "html" : "json");
    return 0;
}

/* ---- what the session shows (exec/run/run.h's hooks) ---- */

static void on_fail(void *ctx, Status st, const char *msg)
{
    (void)ctx;
    Err e;
    if (st == ST_USAGE)
        cli_usage(RUN_CMD, "%s", msg); /* a list of the catalog's names may pass an Err's length */
    else
        cli_fail(RUN_CMD, (err_set(&e, st, "%s", msg), &e));
}

static void on_note(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "fp8plan run: %s\n", msg);
}

static void on_say(void *ctx, const char *text)
{
    (void)ctx;
    fputs(text, stdout);
}

static void on_planned(void *ctx, const RunSession *s)
{
    (void)ctx;
    run_progress_build(&s->model, s->built, par_threads());
}

static void on_built(void *ctx)
{
    (void)ctx;
    run_progress_end();
}

static void on_step_end(void *ctx, uint32_t done, uint32_t total, double elapsed_s)
{
    (void)ctx;
    fflush(stdout); /* a step's line before the progress line on stderr */
    run_progress_step(done, total, elapsed_s);
}

static void on_started(void *ctx, const RunSession *s)
{
    (void)ctx;
    const RunSpec *a = s->spec;
    const Model *m = s->m;
    const Measurement *ms = &s->ms;
    const ModelSpec *sp = &m->spec;
    printf("fp8plan run: %s on %s, recipe %s, plan for %s (stack %s)\n", a->model, m->bk->name, m->recipe.name,
           s->plan->in.gpu->name, s->plan->in.stack ? s->plan->in.stack->name : "none");
    if (s->host_stretch > 1.0)
        printf(
            "  oversubscribed: %u ranks time-share %u cores, so the plan's GEMMs and element-wise kernels take %.3gx\n"
            "    the time of the profile's rates (planner/plan_host.c); waits for a peer off its core are not "
            "planned\n",
            s->host_ranks, s->host_cores, s->host_stretch);
    if (ms->dev.have) {
        const BackendDeviceInfo *i = &ms->dev.info;
        printf("  device: %s, %d SMs, compute capability %d.%d, %.1f GiB; CUDA runtime %d, driver %d, GEMM library "
               "%llu\n",
               i->name, i->sm_count, i->cc_major, i->cc_minor, (double)i->total_bytes / 1073741824.0,
               i->runtime_version, i->driver_version, (unsigned long long)i->gemm_library_version);
        printf("  peaks for MFU: %s\n", ms->peak.why);
    }
    char line[512], micro[48] = "", mtp[48] = "";
    if (m->microbatches > 1) snprintf(micro, sizeof micro, " x %u micro-batches", m->microbatches);
    if (m->mtp_model)
        snprintf(mtp, sizeof mtp, " + %u MTP depth%s (weight %g)", m->mtp_model, m->mtp_model > 1 ? "s" : "",
                 (double)m->mtp_weight);
    snprintf(line, sizeof line,
             "  model: %u layers%s, hidden %u, %u heads (%u KV), ffn %u, %s, %s, %s positions, %s, %s; seq %u, mbs "
             "%u%s, vocab %u (padded %llu), %s params",
             sp->layers - m->mtp, mtp, sp->hidden, sp->heads, sp->kv_heads, sp->ffn_hidden, norm_name(sp->norm),
             mlp_name(sp->mlp), pos_name(sp->pos), sp->tied_embeddings ? "tied" : "untied",
             sp->linear_bias ? "biases" : "no biases", m->seq, m->batch, micro, sp->vocab,
             (unsigned long long)m->vocab_padded, num_fmt_grouped(model_weight_count(m), (char[32]){0}, 32));
    table_put_prose(stdout, "%s\n", line); /* wrapped at TABLE_WIDTH columns */
    double floor = data_entropy_floor(&s->d);
    if (floor >= 0)
        printf("  data: %s; entropy %.3f nats/token, ln V = %.3f\n", s->d.name, floor, log((double)sp->vocab));
    else
        printf("  data: %s (%llu bytes); ln V = %.3f\n", s->d.name, (unsigned long long)s->d.len,
               log((double)sp->vocab));
    printf("  arena: %s bytes in one allocation; model built in %.2f s (weights on %d host threads)\n",
           num_fmt_grouped(m->arena.bytes, (char[32]){0}, 32), s->build_s, par_threads());
    fflush(stdout);
}

/* Every rank's tables beside the plan (rank 0 prints them); 1 when a rank differs. */
static int on_ranks(void *ctx, const RunSession *s)
{
    (void)ctx;
    int rc = run_rank_table(s->plan, s->comm, &s->ms, &s->rd);
    int ep_rc = run_rank_ep_table(s->plan, s->comm, &s->ms, &s->rd);
    return rc ? rc : ep_rc;
}

static int on_report(void *ctx, const RunSession *s)
{
    return run_report(s->spec, ctx, s->plan, s->m, &s->ms, &s->d, s->comm->size > 1 ? &s->rd : NULL);
}

int cmd_run(int argc, char **argv)
{
    RunSpec a;
    CliOut out;
    int rc = parse(argc, argv, &a, &out);
    if (rc) return rc < 0 ? 0 : rc;
    const RunHooks hooks = {.ctx = &out,
                            .fail = on_fail,
                            .note = on_note,
                            .say = on_say,
                            .planned = on_planned,
                            .built = on_built,
                            .started = on_started,
                            .step_begin = on_built,
                            .step_end = on_step_end,
                            .ranks = on_ranks,
                            .report = on_report};
    return run_session(&a, &hooks);
}
