/* cli/cmd_run.c — `fp8plan run`: train a model of the catalog for N steps with a
 * recipe on a backend, then report measured versus planned, term by term.
 * Wiring only: the plan (planner/), the model and its measurement (exec/), the
 * comparison (exec/measure/compare.h) and its rendering (reports/run_report.h). */
#include "cli/cmd_run.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_run_check.h"
#include "exec/comm/comm_mpi.h"
#include "exec/ckpt.h"
#include "exec/data.h"
#include "check/compare.h"
#include "exec/par.h"
#include "reports/run_report.h"
#include "util/fileio.h"
#include "util/num.h"

static const char help_head[] =
    "usage: fp8plan run --model M --recipe R [--backend cpu|cuda] [--steps N]\n"
    "                   [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--seq S]\n"
    "                   [--vocab V] [--experts E] [--topk K] [--expert-ffn F] [--dense-layers N]\n"
    "                   [--mbs B] [--gbs G] [--dp N [--zero 0|1 | --dist-opt]] [--tp N] [--ep N]\n"
    "                   [--pp N] [--gpu G] [--seed S] [--data FILE]\n"
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
    RunArgs a;
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
        IN23 "layers. MoE layers run on the cpu backend: BF16/FP32 GEMM recipes over data"
        IN23 "and expert parallel ranks, te-fp8 / te-fp8-current on one rank"
        IN23 "(docs/executor-moe.md)"},
    {"experts", OPT_U32, A(ov.experts), .lo = 1, .hi = 1 << 16},
    {"topk", OPT_U32, A(ov.topk), .lo = 1, .hi = 1 << 16},
    {"expert-ffn", OPT_U32, A(ov.expert_ffn), .lo = 1, .hi = 1 << 24},
    {"dense-layers", OPT_U32, A(ov.dense_layers), .lo = 0, .hi = 100000, .mark = CLI_MARK(Parsed, a.ov.dense_layers_set)},
    USE("ep", 1, 4096, NULL, "expert-parallel ranks (mpirun -np N x k): the experts split over N ranks,"
        IN23 "tokens exchanged by all-to-all; N must divide the experts and the ranks"
        IN23 "(exit 64 before any work)"),
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
        IN23 "parallel linears, heads and FFN split over the ranks"),
    USE("pp", 1, 4096, NULL, "pipeline stages, 1F1B (cpu backend); each stage an even share of the layers."
        IN23 "With --tp and --dp: mpirun -np tp x pp x dp (tp fastest, then dp, then pp)"),
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
    {"save", OPT_STR, A(save), .arg = "FILE", .help = "write a checkpoint after the last step (atomically)"},
    {"resume", OPT_STR, A(resume), .arg = "FILE", .help = "continue from a checkpoint of the same model, recipe and settings"},
    {"scaling-trace", OPT_STR, A(trace), .arg = "FILE", .help = "CSV of every FP8 tensor's amax and scales each step (FP8 recipes):"
        IN23 "step,bank,layer,linear,operand,format,amax,scale_used,scale_next; one"
        IN23 "tensor's amax column fed to `fp8plan scaling --trace` gives its scales"},
    {"loss-log", OPT_STR, A(loss_log), .arg = "FILE", .help = "CSV of every step's loss (step,loss; full float precision)"},
    {"routing-log", OPT_STR, A(routing_log), .arg = "FILE", .mark = CLI_MARK(Parsed, a.want_routing),
     .help = "CSV of the routing every step took on every rank, a model with experts:"
        IN23 "step,layer,rank,expert,token_copies (`fp8plan plan --routing FILE` gives each"
        IN23 "rank's expert all-to-all bytes for it)"},
    {"log-every", OPT_U32, A(log_every), .lo = 1, .hi = 100000000, .arg = "N", .help = "print every Nth step (default 1); --quiet prints only the report"},
    {"quiet", OPT_FLAG, A(quiet), .set = 1},
    {"output", OPT_STR, A(out.path), .short_name = 'o', .arg = "FILE", .help = "also write every row of the report to FILE (atomically)"},
    {"format", OPT_FN, A(out), .has_arg = 1, .fn = read_format},
    {.kind = OPT_TEXT, .help = "  --format csv|json|html  what -o writes (default csv); html: one self-contained page with planned"
        IN23 "against measured memory, time and collectives (accepted bands), the loss"
        IN23 "curve and the time per phase of every step, and the CSV's rows"},
    USE("catalog", 0, 0, NULL, "the catalog directory (default: $FP8PLAN_CATALOG, ./models, models/ beside"
        IN23 "the build directory)"),
    {0},
};
// clang-format on

/* The plan inputs into the run's settings: a layout flag not given is 0 (none; --dp: the ranks). */
static void take_plan_flags(const PlanArgs *p, RunArgs *a)
{
    a->model = p->model, a->recipe = p->recipe, a->gpu = p->gpu, a->stack = p->stack, a->catalog = p->catalog;
    a->ov.seq = p->in.seq, a->mbs = p->in.mbs, a->gbs = (uint32_t)p->in.gbs; /* at most 2^20: the rows' range */
    a->tp = p->layout_given[0] ? p->in.tp : 0;
    a->pp = p->layout_given[1] ? p->in.pp : 0;
    a->dp = p->layout_given[4] ? p->in.dp : 0;
    a->ep = p->layout_given[8] ? p->in.ep : 0;
    a->sharding = p->in.sharding;
}

/* 0 ok, -1 help printed, else an exit code. */
static int parse(int argc, char **argv, RunArgs *a)
{
    Parsed f = {.a = {.backend = "cpu", .steps = 20, .log_every = 1, .hyper = model_hyper_default()}};
    f.a.out.fmt = TABLE_CSV;
    plan_flags_defaults(&f.p);
    int rc = cli_opts_parse(&(CliParse){.cmd = RUN_CMD, .opts = opts, .help = help_head, .help_tail = help_tail}, argc,
                            argv, &f);
    if (rc || (rc = plan_flags_finish(RUN_CMD, &f.p))) return rc;
    *a = f.a;
    take_plan_flags(&f.p, a);
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
    if (a.want_routing && !spec_is_moe(&model)) {
        rc = cli_usage(RUN_CMD, "--routing-log: model %s has no experts", model.name);
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
    if ((rc = run_routing_write(&a, m, &sf)) || (rc = run_files_commit(&sf))) goto done;
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
        if (run_ranks_gather(comm, plan, &ms, &rd, &e) || run_ranks_gather_ep(comm, m, &rd, &e)) {
            run_ranks_free(&rd);
            rc = run_fail(&e);
            goto done;
        }
        ranks_rc = run_rank_table(plan, comm, &ms, &rd);
        int ep_rc = run_rank_ep_table(plan, comm, &ms, &rd);
        if (!ranks_rc) ranks_rc = ep_rc;
    }
    if (!a.rank) rc = run_report(&a, plan, m, &ms, &d, comm->size > 1 ? &rd : NULL);
    keep = !rc || rc == status_exit_code(ST_TOLERANCE); /* the report written: the set is whole */
    run_ranks_free(&rd);
    if (!rc && ranks_rc) rc = ranks_rc;
    if (stopped && (!rc || rc == 1)) rc = stopped; /* the stop's code, unless the report could not be written */
done:
    run_files_abort(&sf);
    if (grouped && outfile_group_end(keep, &e) && keep) rc = run_fail(&e);
    /* never leave the other ranks waiting in a collective (unless every rank failed at one agreed point) */
    if (rc && rc != 1 && comm && comm->size > 1 && !(m && m->failed_together)) {
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
