/* cli/cmd_run.c — `fp8plan run`: train a GPT model for N steps with a recipe on
 * a backend, then report measured versus planned, term by term. */
#include "cli/cmd_run.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "exec/ckpt.h"
#include "exec/par.h"
#include "util/fileio.h"
#include "util/num.h"

static const char help[] =
    "usage: fp8plan run --model M --recipe R [--backend cpu|cuda] [--steps N]\n"
    "                   [--layers N] [--hidden H] [--heads A] [--ffn F] [--seq S] [--mbs B] [--vocab V]\n"
    "                   [--gpu G] [--seed S] [--data FILE] [--lr X] [--warmup N] [--wd X]\n"
    "                   [--save FILE] [--resume FILE] [--scaling-trace FILE] [--log-every N] [--quiet]\n"
    "                   [--stack NAME] [-o FILE [--format csv|html]] [--catalog DIR]\n"
    "\n"
    "Train a GPT-style decoder (a models/ entry, sizes overridable to fit a CPU or one GPU) with a\n"
    "precision recipe for N steps: forward, backward and optimizer, FP8 GEMMs with the recipe's\n"
    "scaling. Prints the loss and tokens/s each step, then the Plan's memory terms beside what the\n"
    "run placed in its arena (persistent terms must match byte for byte), the time per phase\n"
    "(median and spread over the steps after the first), and tokens/s and model TFLOP/s. On a GPU\n"
    "also: device memory as the driver counts it (the total within +-5 % of the plan's, context,\n"
    "NCCL buffers, what lies outside the arena), device time per category (GEMM, other kernels,\n"
    "optimizer, collectives), the step time within +-15 % of the plan's, and MFU against the\n"
    "device's BF16 and FP8 peaks.\n"
    "\n"
    "  --backend cpu|cuda   cpu: the C reference (FP8 emulated exactly); cuda: the GPU (default cpu)\n"
    "  --model M            a row of models.csv (GPT-2 style: layernorm, gelu, learned positions)\n"
    "  --recipe R           a row of recipes.csv: megatron-bf16, te-fp8, te-fp8-current, fp8lm, ...\n"
    "  --steps N            training steps (default 20)\n"
    "  --layers/--hidden/--heads/--ffn/--seq/--vocab   override the model's sizes (FFN follows\n"
    "                       --hidden at the model's ratio unless given)\n"
    "  --mbs B              micro-batch, sequences per step (default 1)\n"
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
    "  --log-every N        print every Nth step (default 1); --quiet prints only the report\n"
    "  -o FILE              also write the report as CSV\n"
    "  --format csv|html    what -o writes (csv); html: one self-contained page with planned against\n"
    "                       measured memory and time (accepted bands), the loss curve and the time per\n"
    "                       phase of every step, and the CSV's rows\n"
    "  --catalog DIR        the catalog directory (default: $FP8PLAN_CATALOG, ./models, models/ beside\n"
    "                       the build directory)\n"
    "\n"
    "Exit status: 0 ok; 1 a measured term outside its tolerance; 64 usage; 65 bad data or checkpoint;\n"
    "66 missing file; 69 backend unavailable (CUDA not built, no GPU, or a recipe the executor\n"
    "does not run).\n";

enum {
    OPT_BACKEND = 256,
    OPT_MODEL,
    OPT_RECIPE,
    OPT_STEPS,
    OPT_LAYERS,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_FFN,
    OPT_SEQ,
    OPT_MBS,
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
    OPT_FORMAT,
    OPT_CATALOG,
    OPT_TRACE,
    OPT_STACK
};

static const struct option opts[] = {
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"model", required_argument, NULL, OPT_MODEL},
    {"recipe", required_argument, NULL, OPT_RECIPE},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"ffn", required_argument, NULL, OPT_FFN},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"mbs", required_argument, NULL, OPT_MBS},
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
    {"format", required_argument, NULL, OPT_FORMAT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *CMD = "run";

/* A positive integer flag. */
static int flag_u32(const char *flag, const char *arg, long lo, long hi, uint32_t *out)
{
    Err e;
    int v;
    if (num_parse_int_range(arg, lo, hi, &v, &e)) return cli_usage(CMD, "--%s: %s", flag, e.msg);
    *out = (uint32_t)v;
    return 0;
}

static int flag_f32(const char *flag, const char *arg, double lo, double hi, float *out)
{
    Err e;
    double v;
    if (num_parse_double(arg, NUM_FINITE_ONLY, &v, &e)) return cli_usage(CMD, "--%s: %s", flag, e.msg);
    if (v < lo || v > hi) return cli_usage(CMD, "--%s: %s is outside [%g, %g]", flag, arg, lo, hi);
    *out = (float)v;
    return 0;
}

/* 0 ok, -1 help printed, else an exit code. */
static int parse(int argc, char **argv, RunArgs *a)
{
    memset(a, 0, sizeof *a);
    a->backend = "cpu";
    a->mbs = 1;
    a->steps = 20;
    a->log_every = 1;
    a->hyper = gpt_hyper_default();
    int c, rc = 0;
    Err e;
    while (!rc && (c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': cli_help(help); return -1;
        case 'o': a->out = optarg; break;
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
        case OPT_QUIET: a->quiet = 1; break;
        case OPT_FORMAT:
            if (strcmp(optarg, "csv") && strcmp(optarg, "html"))
                return cli_usage(CMD, "--format: '%s' is not csv or html (what -o writes)", optarg);
            a->html = !strcmp(optarg, "html");
            break;
        case OPT_STEPS: rc = flag_u32("steps", optarg, 1, 100000000, &a->steps); break;
        case OPT_LAYERS: rc = flag_u32("layers", optarg, 1, 100000, &a->ov.layers); break;
        case OPT_HIDDEN: rc = flag_u32("hidden", optarg, 1, 1 << 20, &a->ov.hidden); break;
        case OPT_HEADS: rc = flag_u32("heads", optarg, 1, 1 << 16, &a->ov.heads); break;
        case OPT_FFN: rc = flag_u32("ffn", optarg, 1, 1 << 24, &a->ov.ffn); break;
        case OPT_SEQ: rc = flag_u32("seq", optarg, 2, 1 << 20, &a->ov.seq); break;
        case OPT_MBS: rc = flag_u32("mbs", optarg, 1, 1 << 16, &a->mbs); break;
        case OPT_VOCAB: rc = flag_u32("vocab", optarg, 2, INT32_MAX, &a->ov.vocab); break;
        case OPT_LOG_EVERY: rc = flag_u32("log-every", optarg, 1, 100000000, &a->log_every); break;
        case OPT_WARMUP: rc = flag_u32("warmup", optarg, 0, 100000000, &a->hyper.warmup); break;
        case OPT_LR: rc = flag_f32("lr", optarg, 0.0, 10.0, &a->hyper.lr); break;
        case OPT_WD: rc = flag_f32("wd", optarg, 0.0, 10.0, &a->hyper.weight_decay); break;
        case OPT_SEED:
            if (num_parse_u64(optarg, &a->hyper.seed, &e)) rc = cli_usage(CMD, "--seed: %s", e.msg);
            break;
        default: return cli_usage(CMD, "unknown option");
        }
    }
    if (rc) return rc;
    if ((rc = cli_no_operands(CMD, argc, argv))) return rc;
    if (!a->model) return cli_usage(CMD, "--model is required (a row of models.csv, e.g. gpt2-124m)");
    if (!a->recipe) return cli_usage(CMD, "--recipe is required (e.g. megatron-bf16, te-fp8, te-fp8-current, fp8lm)");
    if (a->html && !a->out) return cli_usage(CMD, "--format html needs -o FILE (the page)");
    if (a->data && !a->ov.vocab) a->ov.vocab = 256; /* byte-level text */
    return 0;
}

/* ---- the run ---- */

static int fail(const Err *e) { return cli_fail(CMD, e); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_header(const RunArgs *a, const Gpt *g, const DataStream *d, uint64_t params, const DevMeasure *dm,
                         const DevmPeak *peak, const Plan *p, double build_s)
{
    const GptShape *s = &g->shape;
    printf("fp8plan run: %s on %s, recipe %s, plan for %s (stack %s)\n", a->model, g->bk->name, g->recipe.name,
           p->in.gpu->name, p->in.stack ? p->in.stack->name : "none");
    if (dm->have) {
        const BackendDeviceInfo *i = &dm->info;
        printf("  device: %s, %d SMs, compute capability %d.%d, %.1f GiB; CUDA runtime %d, driver %d, GEMM library "
               "%llu\n",
               i->name, i->sm_count, i->cc_major, i->cc_minor, (double)i->total_bytes / 1073741824.0,
               i->runtime_version, i->driver_version, (unsigned long long)i->gemm_library_version);
        printf("  peaks for MFU: %s\n", peak->why);
    }
    printf("  model: %u layers, hidden %u, %u heads, ffn %u, seq %u, mbs %u, vocab %llu (padded %llu), %s params\n",
           s->layers, s->hidden, s->heads, s->ffn, s->seq, s->batch, (unsigned long long)s->vocab,
           (unsigned long long)s->vocab_padded, num_fmt_grouped(params, (char[32]){0}, 32));
    double floor = data_entropy_floor(d);
    if (floor >= 0)
        printf("  data: %s; entropy %.3f nats/token, ln V = %.3f\n", d->name, floor, log((double)s->vocab));
    else
        printf("  data: %s (%llu bytes); ln V = %.3f\n", d->name, (unsigned long long)d->len, log((double)s->vocab));
    printf("  arena: %s bytes in one allocation; model built in %.2f s (weights on %d host threads)\n",
           num_fmt_grouped(g->arena.bytes, (char[32]){0}, 32), build_s, par_threads());
    fflush(stdout);
}

/* One CSV row per FP8 tensor of the step just taken. */
static void trace_rows(FILE *f, const Gpt *g)
{
    static const char *const lin[LIN_COUNT] = {"qkv", "proj", "fc1", "fc2"};
    for (uint32_t l = 0; l < g->shape.layers; l++)
        for (int k = 0; k < LIN_COUNT; k++) {
            const struct {
                const char *bank, *operand;
                const ScalingBank *b;
                const GptBankTrace *t;
                uint32_t slot;
            } r[3] = {{"fwd", "x", &g->sc.fwd, &g->tr_fwd, gpt_slot_x(l, (LinearKind)k)},
                      {"fwd", "w", &g->sc.fwd, &g->tr_fwd, gpt_slot_w(l, (LinearKind)k)},
                      {"bwd", "dy", &g->sc.bwd, &g->tr_bwd, gpt_slot_dy(l, (LinearKind)k)}};
            for (int i = 0; i < 3; i++)
                fprintf(f, "%u,%s,%u,%s,%s,%s,%.17g,%.17g,%.17g\n", g->step, r[i].bank, l, lin[k], r[i].operand,
                        dtype_name(r[i].b->fmt), (double)r[i].t->amax[r[i].slot], (double)r[i].t->scale_used[r[i].slot],
                        (double)r[i].t->scale_next[r[i].slot]);
        }
}

static int train(const RunArgs *a, Gpt *g, DataStream *d, RunLog *l, DevMeasure *dm, OutFile *trace)
{
    const GptShape *s = &g->shape;
    uint64_t bt = (uint64_t)s->batch * s->seq;
    int32_t *in = malloc(bt * sizeof *in), *tgt = malloc(bt * sizeof *tgt);
    Err e;
    int rc = 0;
    if (!in || !tgt) rc = fail((err_set(&e, ST_NOMEM, "out of memory"), &e));
    for (uint32_t i = 0; !rc && i < a->steps; i++) {
        float loss;
        data_next(d, s->batch, s->seq, in, tgt);
        if (run_step(g, dm, l, in, tgt, &loss, &e)) {
            err_prefix(&e, "step %u", g->step + 1);
            rc = fail(&e);
            break;
        }
        if (trace) trace_rows(trace->f, g);
        if (!isfinite(loss)) {
            rc = fail((err_set(&e, ST_DATA, "step %u: the loss is %g (training diverged)", g->step, (double)loss), &e));
            break;
        }
        if (!a->quiet && (i % a->log_every == 0 || i + 1 == a->steps)) {
            printf("step %6u  loss %8.4f  %9.0f tok/s  fwd %8.2f ms  bwd %8.2f ms  opt %7.2f ms\n", g->step,
                   (double)loss, (double)bt / l->step_s[i], 1e3 * g->phase_s[PHASE_FWD], 1e3 * g->phase_s[PHASE_BWD],
                   1e3 * g->phase_s[PHASE_OPT]);
            fflush(stdout);
        }
    }
    free(in);
    free(tgt);
    return rc;
}

/* The GPU the plan is for: --gpu, else the device's catalog row, else h100-sxm. */
static const GpuSpec *plan_gpu(const RunArgs *a, const Catalog *cat, const DevMeasure *dm, const DevmPeak *peak)
{
    if (a->gpu) return catalog_gpu(cat, a->gpu);
    if (dm->have && peak->gpu) return peak->gpu;
    if (dm->have)
        fprintf(stderr, "fp8plan run: %s matches no row of gpus.csv; the plan is for h100-sxm (--gpu G to choose)\n",
                dm->info.name);
    return catalog_gpu(cat, "h100-sxm");
}

/* NCCL for a GPU backend (its buffers are part of what the run measures), the
 * single-rank copy otherwise or when NCCL cannot start. */
static Status make_comm(const RunArgs *a, Backend *bk, Comm **comm, Err *e)
{
    if (!strcmp(bk->name, "cpu")) return comm_single_create(comm, e);
    if (!comm_create("nccl", bk, comm, e)) return ST_OK;
    if (!a->quiet) printf("  communicator: NCCL unavailable (%s); single-rank copies instead\n", e->msg);
    return comm_single_create(comm, e);
}

int cmd_run(int argc, char **argv)
{
    RunArgs a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    Err e;
    Backend *bk = NULL;
    Comm *comm = NULL;
    Catalog *cat = NULL;
    Gpt *g = NULL;
    DataStream d = {0};
    RunLog log = {0};
    OutFile trace;
    int trace_open = 0;
    static DevMeasure dm;
    static DevmPeak peak;
    if (backend_create(a.backend, &bk, &e)) return fail(&e);
    devm_init(&dm, bk); /* a GPU: the device, and memory in use with the context up */
    if ((rc = plan_catalog_load(CMD, a.catalog, &cat))) goto done;
    if (dm.have) devm_peak(cat, &dm.info, &peak);
    const ModelSpec *base = catalog_model(cat, a.model);
    const GpuSpec *gpu = plan_gpu(&a, cat, &dm, &peak);
    const Recipe *recipe = catalog_recipe(cat, a.recipe);
    char names[2048];
    if (!base) {
        catalog_model_names(cat, names, sizeof names);
        rc = cli_usage(CMD, "--model: unknown model '%s' (known: %s)", a.model, names);
        goto done;
    }
    if (!gpu) {
        catalog_gpu_names(cat, names, sizeof names);
        rc = cli_usage(CMD, "--gpu: unknown GPU '%s' (known: %s)", a.gpu ? a.gpu : "h100-sxm", names);
        goto done;
    }
    if (!recipe) {
        catalog_recipe_names(cat, names, sizeof names);
        rc = cli_usage(CMD, "--recipe: unknown recipe '%s' (known: %s)", a.recipe, names);
        goto done;
    }
    ModelSpec model;
    ExecRecipe er;
    PlanInput in;
    static Plan plan;
    GptShape shape;
    uint64_t planned[TERM_COUNT];
    if (exec_model(base, &a.ov, &model, &e) || exec_recipe_from_plan(recipe, &er, &e)) {
        rc = fail(&e);
        goto done;
    }
    exec_plan_input(&in, &model, gpu, recipe, a.mbs);
    const StackSpec *stack = catalog_stack(cat, a.stack ? a.stack : "fp8plan");
    if (!stack && a.stack) {
        catalog_stack_names(cat, names, sizeof names);
        rc = cli_usage(CMD, "--stack: unknown stack '%s' (known: %s)", a.stack, names);
        goto done;
    }
    if (stack) plan_input_use_stack(&in, stack);
    if (plan_build(&in, &plan, &e)) {
        err_prefix(&e, "plan");
        rc = fail(&e);
        goto done;
    }
    exec_shape_from_plan(&plan, &shape);
    exec_planned_bytes(&plan, planned);
    if (make_comm(&a, bk, &comm, &e)) {
        rc = fail(&e);
        goto done;
    }
    devm_sample(&dm, bk, DEVM_AFTER_COMM);
    double t0 = now_s();
    if (gpt_create(&shape, &er, &a.hyper, bk, comm, planned, &g, &e)) {
        rc = fail(&e);
        goto done;
    }
    double build_s = now_s() - t0;
    devm_sample(&dm, bk, DEVM_AFTER_MODEL);
    Status st = a.data ? data_bytes_file(&d, a.data, shape.vocab, shape.seq, &e)
                       : data_synthetic(&d, shape.vocab, a.hyper.seed, &e);
    if (st) {
        rc = fail(&e);
        goto done;
    }
    if (a.resume) {
        DataState ds;
        if (ckpt_load(a.resume, g, &ds, &e) || data_restore(&d, &ds, &e)) {
            rc = fail(&e);
            goto done;
        }
        if (!a.quiet) printf("resumed from %s at step %u\n", a.resume, g->step);
    }
    if (run_log_init(&log, a.steps, &e)) {
        rc = fail(&e);
        goto done;
    }
    if (!a.quiet) print_header(&a, g, &d, gpt_param_count(g), &dm, &peak, &plan, build_s);
    if (a.trace) {
        if (!exec_recipe_fp8(&g->recipe)) {
            rc = cli_usage(CMD, "--scaling-trace: recipe %s has no FP8 tensors", g->recipe.name);
            goto done;
        }
        if (gpt_trace_enable(g, &e) || outfile_open(&trace, a.trace, &e)) {
            rc = fail(&e);
            goto done;
        }
        trace_open = 1;
        fprintf(trace.f, "step,bank,layer,linear,operand,format,amax,scale_used,scale_next\n");
    }
    if ((rc = train(&a, g, &d, &log, &dm, trace_open ? &trace : NULL))) goto done;
    if (trace_open) {
        trace_open = 0;
        if (outfile_commit(&trace, &e)) {
            rc = fail(&e);
            goto done;
        }
    }
    if (a.save && ckpt_save(a.save, g, &d.st, &e)) {
        rc = fail(&e);
        goto done;
    }
    if (a.save && !a.quiet) printf("checkpoint: %s (step %u)\n", a.save, g->step);
    if (dm.st) fprintf(stderr, "fp8plan run: warning: a device measurement failed: %s\n", dm.msg);
    rc = run_report(&a, &plan, g, &log, &d, &dm, dm.have ? &peak : NULL);
done:
    if (trace_open) outfile_abort(&trace);
    run_log_free(&log);
    data_free(&d);
    gpt_destroy(g);
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
    free(cat);
    return rc;
}
