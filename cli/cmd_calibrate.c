/* cli/cmd_calibrate.c — `fp8plan calibrate`: measure this machine as the
 * planner describes a device (exec/measure/calibrate.h) and write it as a
 * catalog. Wiring only: flags, the backend and communicator, the tables, the
 * files (each through the atomic writer). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cmd_calibrate.h"
#include "cli/cmd_plan.h"
#include "exec/run/run_calibrate.h"
#include "util/fileio.h"
#include "util/num.h"

static const char *const CMD = "calibrate";
enum { CATALOG_FILE_MAX = 16 << 20 }; /* as fp8plan plan reads a catalog file */

static const char help_head[] =
    "usage: fp8plan calibrate [--backend cpu|cuda] [--model M] [--layers N] [--hidden H] [--heads A] [--kv-heads K]\n"
    "                         [--ffn F] [--seq S] [--vocab V] [--mbs B] [--gbs G] [--reps N | --quick]\n"
    "                         [--name NAME [--replace]] [--catalog DIR] [-o DIR [--allow-noisy]]\n"
    "       fp8plan calibrate --check DIR [--name NAME] [the model flags the profile was measured at]\n"
    "\n"
    "Measure this machine the way the planner describes a device, through the executor's own code:\n"
    "GEMM throughput per dtype path (FP8 emulated on the CPU, cuBLASLt FP8 on a GPU; BF16, FP32) at\n"
    "the shapes of one layer of the model (and its LM head), the bandwidth of the optimizer and of\n"
    "the element-wise kernels a layer runs (a GPU's HBM), the launch floor of one call, and under\n"
    "mpirun with 2 or more ranks the all-reduce's bus bandwidth and latency per message size, 64 B up\n"
    "to the model's gradient all-reduce, each call after the caches were evicted (over MPI one rank\n"
    "arrives late), as a run's calls meet it (MPI between CPU ranks, NCCL between GPUs, one GPU\n"
    "per rank; one rank: not measured, written as no interconnect). Over MPI also every collective op\n"
    "the executor runs (all-reduce and reduce-scatter per dtype path FP32/BF16/FP8, all-gather,\n"
    "send/recv, broadcast, all-to-all), fitted as latency + bus bandwidth per payload range into\n"
    "links.csv, which the planner times each op with; the all-to-all also per message to a peer (MPI's\n"
    "eager limit measured, one fit for eager and one for rendezvous messages). A GPU is timed by CUDA\n"
    "events around each call. Prints every measurement (medians, spreads) and the device row\n"
    "(gpus.csv) and the fp8plan stack's row (stacks.csv, launch_us measured). With -o DIR writes a\n"
    "catalog the planner reads with --catalog DIR: models.csv and recipes.csv copied, gpus.csv with\n"
    "the device row added, stacks.csv with the fp8plan row measured, links.csv (2 or more ranks over\n"
    "MPI). Then: fp8plan plan --catalog DIR --gpu NAME ..., fp8plan run --backend cpu --catalog DIR\n"
    "--gpu NAME ... (step and collective times checked).\n"
    "\n"
    "A profile is judged before it is written: every figure the planner times a step with (GEMM per\n"
    "path, AdamW's stream, the element-wise kernels, FP8-LM's optimizer; under mpirun the all-to-all's\n"
    "messages per protocol, its spread bound at its calls a size) must have an interquartile\n"
    "spread (q3 - q1) / median of at most 0.0538 x sqrt(reps) (its median known to 5 %: 14.2 % at 7\n"
    "repetitions) and a quick re-measure, taken interleaved with it after a warm-up that must settle\n"
    "(GEMM rounds no longer speeding up), must agree within +-10 %; the load average\n"
    "(/proc/loadavg) before and after is printed and quoted in the row. A profile past a bound is\n"
    "not written (exit 75): measure again at a quieter moment, or --allow-noisy writes it with NOISY\n"
    "PROFILE at the head of its source text. --check DIR re-measures those figures and says whether\n"
    "DIR's row NAME still describes this machine (the link is not re-measured but for the all-to-all's\n"
    "messages, under mpirun -np N with the profile's N ranks, against its fits). docs/calibrate.md.\n"
    "\n";

static const char help_tail[] =
    "\n"
    "Exit status: 0 ok (--check: the profile holds); 1 --check: a figure moved past +-10 %; 64 usage;\n"
    "65 bad catalog data; 66 missing catalog; 69 backend unavailable; 73 an output cannot be created;\n"
    "74 a write failed; 75 the machine too noisy to write (or, with --check, to judge) a profile.\n";

enum { EXIT_NOISY = 75 }; /* sysexits' EX_TEMPFAIL: measure again at a quieter moment */

typedef struct {
    const char *backend, *model, *name, *catalog, *out, *check;
    ExecOverrides ov;
    uint32_t mbs, gbs, reps; /* gbs: 0 when not given */
    int replace;             /* --replace: -o may replace the catalog's row of the same name */
    int allow_noisy;         /* --allow-noisy: -o writes a profile past the bounds, marked */
} Args;

/* What the flags fill: the command's own settings and the plan inputs it takes (cli/plan_flags.c). */
typedef struct {
    Args a;
    PlanArgs p; /* --model --seq --mbs --gbs --catalog */
    int named;  /* --name was given */
} Parsed;

#define A(f)                      offsetof(Parsed, a.f)
#define USE(n, lo, hi, arg, help) PLAN_FLAG(offsetof(Parsed, p), n, lo, hi, arg, help)
#define IN23                      "\n                       " /* a help line's continuation */

// clang-format off
static const CliOpt opts[] = {
    {"backend", OPT_STR, A(backend), .arg = "cpu|cuda", .help = "cpu (default); cuda: this rank's GPU (exit 69 without one)"},
    USE("model", 0, 0, "M", "the catalog model whose layer shapes are measured (default gpt2-124m)"),
    {.kind = OPT_TEXT, .help = "  --layers/--hidden/--heads/--kv-heads/--ffn/--seq/--vocab   its sizes, as fp8plan run takes them"
                               IN23 "(layers: the parameters AdamW updates, up to 16 Mi)"},
    {"layers", OPT_U32, A(ov.layers), .lo = 1, .hi = 1 << 16},
    {"hidden", OPT_U32, A(ov.hidden), .lo = 1, .hi = 1 << 20},
    {"heads", OPT_U32, A(ov.heads), .lo = 1, .hi = 1 << 16},
    {"kv-heads", OPT_U32, A(ov.kv_heads), .lo = 1, .hi = 1 << 16},
    {"ffn", OPT_U32, A(ov.ffn), .lo = 1, .hi = 1 << 24},
    USE("seq", 1, 1 << 20, NULL, ""),
    {"vocab", OPT_U32, A(ov.vocab), .lo = 2, .hi = INT32_MAX},
    USE("mbs", 1, 1 << 16, "B", "sequences per micro-batch: the GEMMs have B x seq rows (default 1)"),
    USE("gbs", 1, 1 << 20, "G", "taken as fp8plan run takes it (a multiple of --mbs, up to 1 Mi), so a run's"
        IN23 "flags can be given: a step's G / B micro-batches each run the GEMMs measured"
        IN23 "at B, so G changes no measurement"),
    {"reps", OPT_U32, A(reps), .lo = 1, .hi = 64, .arg = "N", .help = "repetitions per measurement, medians reported (default 7, 1..64)"},
    {"quick", OPT_FLAG, A(reps), .set = 3, .help = "--reps 3 (seconds; for tests)"},
    {"name", OPT_STR, A(name), .mark = CLI_MARK(Parsed, named), .arg = "NAME",
     .help = "the device row's name (default host; gpu with --backend cuda); with -o, a"
             IN23 "name the catalog already has is refused (exit 64)"},
    {"replace", OPT_FLAG, A(replace), .set = 1, .help = "with -o, replace the catalog's row of that name on purpose"},
    USE("catalog", 0, 0, NULL, "the catalog to start from (default as fp8plan plan finds it)"),
    {"output", OPT_STR, A(out), .short_name = 'o', .arg = "DIR", .help = "write the calibrated catalog into DIR (created if missing)"},
    {"allow-noisy", OPT_FLAG, A(allow_noisy), .set = 1, .help = "with -o, write a profile past the bounds, marked NOISY PROFILE"},
    {"check", OPT_STR, A(check), .arg = "DIR", .help = "re-measure and compare with DIR's row NAME (nothing written)"},
    {0},
};
// clang-format on

/* The flags' settings checked together. Returns 0 or 64 after the message. */
static int check_args(const Args *a)
{
    if (a->gbs % a->mbs)
        return cli_usage(CMD, "--gbs %u is not a multiple of --mbs %u (global batch = micro-batches x micro-batch)",
                         a->gbs, a->mbs);
    if (strcmp(a->backend, "cpu") && strcmp(a->backend, "cuda"))
        return cli_usage(CMD, "--backend: '%s' is not cpu or cuda", a->backend);
    size_t n = strlen(a->name);
    if (!n || n >= SPEC_NAME_MAX ||
        strspn(a->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
        return cli_usage(CMD, "--name: '%s' is not a row name (letters, digits, '.', '_', '-'; under %d characters)",
                         a->name, SPEC_NAME_MAX);
    if (a->out && !*a->out) return cli_usage(CMD, "-o: empty (give a directory)");
    if (a->replace && !a->out)
        return cli_usage(CMD, "--replace: only with -o DIR (it replaces a row of the catalog written)");
    if (a->allow_noisy && !a->out)
        return cli_usage(CMD, "--allow-noisy: only with -o DIR (it marks the profile written)");
    if (a->check && (a->out || a->catalog))
        return cli_usage(CMD, "--check %s: compares with that catalog and writes nothing (no -o, no --catalog)",
                         a->check);
    if (a->check && !*a->check) return cli_usage(CMD, "--check: empty (give the profile's catalog directory)");
    return 0;
}

static int parse(int argc, char **argv, Args *a)
{
    Parsed f = {.a = {.backend = "cpu", .name = "host", .reps = 7}};
    plan_flags_defaults(&f.p);
    f.p.model = "gpt2-124m";
    int rc = cli_opts_parse(&(CliParse){.cmd = CMD, .opts = opts, .help = help_head, .help_tail = help_tail}, argc,
                            argv, &f);
    if (rc) return rc;
    *a = f.a;
    a->model = f.p.model, a->catalog = f.p.catalog, a->ov.seq = f.p.in.seq;
    a->mbs = f.p.in.mbs, a->gbs = (uint32_t)f.p.in.gbs; /* at most 2^20: the rows' range */
    if (!f.named && !strcmp(a->backend, "cuda")) a->name = "gpu";
    return check_args(a);
}

/* A rate's unit: GFLOP/s for GEMM, GB/s for memory (both printed x 1e-9). */
static const char *fig_unit_name(int f) { return f <= CAL_FIG_FP32 || f == CAL_FIG_GROUP ? "GFLOP/s" : "GB/s"; }

static void put_load(char *buf, size_t size, double l)
{
    if (l >= 0)
        snprintf(buf, size, "%.2f", l);
    else
        snprintf(buf, size, "unknown");
}

/* Why a profile fails its bounds, in one sentence fragment (the worst figure past each). */
static void judge_reason(const CalJudge *j, const Calibration *w, int reps, int a2a_reps, const char *again_what,
                         char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    if (j->cold)
        n += (size_t)snprintf(buf, size,
                              "the warm-up's GEMM rounds still sped up after %d (the last %.2f ms, the one before "
                              "%.2f ms)%s",
                              w->warm_rounds, 1e3 * w->warm_last_s, 1e3 * w->warm_prev_s,
                              j->worst_noisy >= 0 || j->worst_drift >= 0 ? "; " : "");
    if (j->worst_noisy >= 0 && n < size)
        n += (size_t)snprintf(
            buf + n, size - n, "%s's interquartile spread %.1f %% passes %.1f %% at %d repetitions",
            cal_fig_names[j->worst_noisy], 100.0 * j->iqr[j->worst_noisy], 100.0 * j->bound[j->worst_noisy],
            j->worst_noisy == CAL_FIG_A2A_EAGER || j->worst_noisy == CAL_FIG_A2A_RNDV ? a2a_reps : reps);
    if (j->worst_link >= 0 && n < size) {
        const CalSweep *s = &w->sweep[j->worst_link];
        n += (size_t)snprintf(buf + n, size - n,
                              "%sthe %s sweep's (%s) interquartile spread %.1f %% passes %.1f %% at %d calls a size",
                              n && buf[n - 1] != ' ' ? "; " : "", comm_op_name(s->op), cal_sweep_label(s),
                              100.0 * j->link_iqr[j->worst_link], 100.0 * j->link_bound, w->link_reps);
    }
    if (j->worst_drift >= 0 && n < size)
        snprintf(buf + n, size - n, "%s%s of %s differs by %+.1f %% (bound +-%.0f %%)", n ? "; " : "", again_what,
                 cal_fig_names[j->worst_drift], 100.0 * j->drift[j->worst_drift], 100.0 * CAL_DRIFT_MAX);
}

static void print_judge(const CalJudge *j, const Calibration *w, int reps, int a2a_reps, const char *again_what,
                        double l0, double l1)
{
    char b0[16], b1[16];
    put_load(b0, sizeof b0, l0), put_load(b1, sizeof b1, l1);
    printf("profile judged (interquartile spread (q3 - q1) / median at most %.1f %% at %d repetitions; %s within "
           "+-%.0f %%)\n",
           100.0 * cal_iqr_max(reps), reps, again_what, 100.0 * CAL_DRIFT_MAX);
    printf("  %-16s %-8s %12s %7s %12s %8s  %s\n", "figure", "unit", "profile", "iqr", "again", "drift", "verdict");
    for (int f = 0; f < CAL_FIGS; f++) {
        if (j->skip[f]) continue; /* not measured: the all-to-all on one rank, the experts of a dense model */
        int noisy = !(j->rate[f] > 0) || !(j->iqr[f] <= j->bound[f]);
        int moved = !(fabs(j->drift[f]) <= CAL_DRIFT_MAX);
        printf("  %-16s %-8s %12.3f %6.1f%% %12.3f %+7.1f%%  %s\n", cal_fig_names[f], fig_unit_name(f),
               j->rate[f] * 1e-9, 100.0 * j->iqr[f], j->again[f] * 1e-9, 100.0 * j->drift[f],
               noisy   ? "NOISY"
               : moved ? "MOVED"
                       : "ok");
    }
    if (!j->skip[CAL_FIG_A2A_EAGER])
        printf("  a2a ... msg: the all-to-all's per-message sweep, message bytes over summed call times; its iqr "
               "bound %.1f %% at %d calls a size\n",
               100.0 * j->bound[CAL_FIG_A2A_EAGER], a2a_reps);
    for (int k = 0; w->link_reps > 0 && k < w->nsweep; k++)
        if (!w->sweep[k].per_msg)
            printf("  %-14s %-4s interquartile spread %6.1f%% (bound %.1f %% at %d calls a size)  %s\n",
                   comm_op_name(w->sweep[k].op), cal_sweep_label(&w->sweep[k]), 100.0 * j->link_iqr[k],
                   100.0 * j->link_bound, w->link_reps, j->link_iqr[k] <= j->link_bound ? "ok" : "NOISY");
    if (w->warm_rounds)
        printf("  warm-up: %d rounds of every layer GEMM once (the first %.2f ms, the last two %.2f and %.2f ms): %s\n",
               w->warm_rounds, 1e3 * w->warm_first_s, 1e3 * w->warm_prev_s, 1e3 * w->warm_last_s,
               j->cold ? "STILL SPEEDING UP (the last round more than 5 % below the one before)" : "warm");
    printf("  load average (1 min, /proc/loadavg): %s before, %s after\n", b0, b1);
}

static Status write_text(const char *path, const char *text, Err *e)
{
    OutFile f;
    Status st = outfile_open(&f, path, e);
    if (st) return st;
    fputs(text, f.f);
    return outfile_commit(&f, e);
}

static Status copy_file(const char *from_dir, const char *to_dir, const char *name, Err *e)
{
    char src[4200], dst[4200], *buf;
    size_t len;
    snprintf(src, sizeof src, "%s/%s", from_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    Status st = file_read_max(src, CATALOG_FILE_MAX, &buf, &len, e);
    if (st) return st;
    OutFile f;
    if (!(st = outfile_open(&f, dst, e))) {
        fwrite(buf, 1, len, f.f);
        st = outfile_commit(&f, e);
    }
    free(buf);
    return st;
}

/* The catalog in dir: models/recipes copied, gpus.csv (every row + the host's), stacks.csv (fp8plan measured). */
static int write_catalog(const Args *a, const char *src, const Catalog *cat, const Calibration *c)
{
    Err e;
    char path[4200], row[8192];
    if (mkdir(a->out, 0777) && errno != EEXIST)
        return cli_fail(
            CMD, (err_set(&e, ST_CANTCREAT, "-o %s: cannot create the directory: %s", a->out, strerror(errno)), &e));
    snprintf(path, sizeof path, "%s/gpus.csv", a->out);
    int nlinks = c->nrange; /* links.csv: this profile's fits and every other device's the catalog had */
    for (int i = 0; i < cat->ngpus; i++)
        if (strcmp(cat->gpus[i].name, a->name)) nlinks += cat->gpus[i].nlink_fit;
    size_t cap = (size_t)(cat->ngpus + cat->nstacks + nlinks + 4) * sizeof row; /* a row each at most */
    char *text = malloc(cap);
    if (!text) return cli_fail(CMD, (err_set(&e, ST_NOMEM, "out of memory"), &e));
    size_t len = (size_t)snprintf(text, cap, "%s\n", cal_gpu_header);
    Status st = ST_OK;
    for (int i = 0; !st && i < cat->ngpus; i++) {
        if (!strcmp(cat->gpus[i].name, a->name)) continue; /* replaced by the measured row */
        if (!(st = cal_gpu_row_of(&cat->gpus[i], row, sizeof row, &e)))
            len += (size_t)snprintf(text + len, cap - len, "%s\n", row);
    }
    if (!st && !(st = cal_gpu_row(c, a->name, row, sizeof row, &e))) snprintf(text + len, cap - len, "%s\n", row);
    if (!st) st = write_text(path, text, &e);
    if (!st) {
        cal_stack_header(text, cap);
        len = strlen(text);
        len += (size_t)snprintf(text + len, cap - len, "\n");
        for (int i = 0; !st && i < cat->nstacks; i++) {
            const StackSpec *s = &cat->stacks[i];
            if (!(st = cal_stack_row(s, strcmp(s->name, "fp8plan") ? NULL : c, row, sizeof row, &e)))
                len += (size_t)snprintf(text + len, cap - len, "%s\n", row);
        }
        snprintf(path, sizeof path, "%s/stacks.csv", a->out);
        if (!st) st = write_text(path, text, &e);
    }
    if (!st && nlinks) { /* none (one rank, no catalog fits): no file, as before */
        len = (size_t)snprintf(text, cap, "%s\n", cal_links_header);
        for (int i = 0; !st && i < cat->ngpus; i++)
            for (int k = 0; !st && strcmp(cat->gpus[i].name, a->name) && k < cat->gpus[i].nlink_fit; k++)
                if (!(st = cal_link_row_of(&cat->gpus[i], k, row, sizeof row, &e)))
                    len += (size_t)snprintf(text + len, cap - len, "%s\n", row);
        for (int k = 0; !st && k < c->nrange; k++)
            if (!(st = cal_link_row(c, k, a->name, row, sizeof row, &e)))
                len += (size_t)snprintf(text + len, cap - len, "%s\n", row);
        snprintf(path, sizeof path, "%s/links.csv", a->out);
        if (!st) st = write_text(path, text, &e);
    }
    free(text);
    if (!st) st = copy_file(src, a->out, "models.csv", &e);
    if (!st) st = copy_file(src, a->out, "recipes.csv", &e);
    return st ? cli_fail(CMD, &e) : 0;
}

/* Refused before measuring: -o not a directory or one that cannot be created (mkdir, not mkdir -p), a
 * name that would put this machine's profile in place of a published GPU, -o the catalog calibrate reads,
 * An exit code. */
static int check_out(const Args *a, const char *src, const Catalog *cat)
{
    Err e;
    struct stat ob;
    if (a->out && !stat(a->out, &ob) && !S_ISDIR(ob.st_mode))
        return cli_fail(
            CMD, (err_set(&e, ST_CANTCREAT,
                          "-o %s: not a directory (calibrate writes a catalog: a directory of CSV files)", a->out),
                  &e));
    if (a->out && stat(a->out, &ob)) { /* a directory to create: its parent must exist */
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", a->out);
        size_t n = strlen(parent);
        while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
        char *slash = strrchr(parent, '/');
        if (slash) *(slash == parent ? slash + 1 : slash) = '\0';
        if (slash && (stat(parent, &ob) || !S_ISDIR(ob.st_mode)))
            return cli_fail(CMD, (err_set(&e, ST_CANTCREAT, "-o %s: cannot create the directory: %s is not a directory",
                                          a->out, parent),
                                  &e));
    }
    if (a->out && !a->replace && catalog_gpu(cat, a->name))
        return cli_usage(CMD,
                         "--name %s: the catalog already has a GPU row '%s' (-o would replace it with this machine's "
                         "profile): give another --name, or --replace to replace it on purpose",
                         a->name, a->name);
    if (a->out) { /* refused before measuring, as the name clash above */
        char mine[4200], theirs[4200];
        snprintf(mine, sizeof mine, "%s/gpus.csv", a->out);
        snprintf(theirs, sizeof theirs, "%s/gpus.csv", src);
        if (path_same_file(mine, theirs))
            return cli_usage(CMD, "-o %s: that is the catalog calibrate reads (give another directory)", a->out);
    }
    return 0;
}

/* --check: *row, the catalog's row to check, refused before measuring when there is none for this backend
 * or it lacks figures a check compares; an exit code. */
static int check_row(const Args *a, const char *src, const Catalog *cat, const GpuSpec **row)
{
    *row = a->check ? catalog_gpu(cat, a->name) : NULL;
    if (a->check && (!*row || !(*row)->host != !strcmp(a->backend, "cuda")))
        return cli_usage(CMD, "--check %s: %s/gpus.csv has no %s row '%s' to check (give --name)", a->check, src,
                         strcmp(a->backend, "cuda") ? "host" : "GPU", a->name);
    if (*row && !((*row)->scaled_optim_bw > 0 && (*row)->elem_bw > 0))
        return cli_usage(CMD,
                         "--check %s: row '%s' has no elem_gbps or scaled_optim_gbps (written by an older calibrate "
                         "or by hand): calibrate it again",
                         a->check, a->name);
    return 0;
}

/* --check: the verdict on the row (s->again: its figures); 0 it holds, 1 moved, EXIT_NOISY. */
static int say_check(const Args *a, CalSession *s, const GpuSpec *row, const char *b0, const char *b1)
{
    CalJudge j;
    char why[512];
    cal_session_judge(s, row, &j);
    print_judge(&j, s->c, s->c->reps, s->c->a2a_reps, "this machine now", s->load0, s->load1);
    judge_reason(&j, s->c, s->c->reps, s->c->a2a_reps, "a measurement now", why, sizeof why);
    if (j.noisy || j.cold) {
        fprintf(stderr,
                "fp8plan calibrate: --check %s: cannot tell, this machine is too noisy now (%s; load average "
                "%s before, %s after): not judged, check again at a quieter moment\n",
                a->check, why, b0, b1);
        return EXIT_NOISY;
    }
    if (j.drifted) {
        fprintf(stderr, "fp8plan calibrate: --check %s: row %s no longer describes this machine: %s\n", a->check,
                a->name, why);
        return 1;
    }
    printf("profile %s in %s still describes this machine (every figure within +-%.0f %%)\n", a->name, a->check,
           100.0 * CAL_DRIFT_MAX);
    return 0;
}

/* A new profile against its re-measure: the verdict, and c->judged quoted in the profile; EXIT_NOISY when
 * -o would write a profile past its bounds (without --allow-noisy). */
static int say_judged(const Args *a, CalSession *s, const char *b0, const char *b1)
{
    CalJudge j;
    char why[512], what[64];
    Calibration *c = s->c;
    int bad = cal_session_judge(s, NULL, &j);
    snprintf(what, sizeof what, "a re-measure (%d repetitions, interleaved)", s->again->reps);
    print_judge(&j, c, c->reps, c->a2a_reps, what, s->load0, s->load1);
    judge_reason(&j, c, c->reps, c->a2a_reps, what, why, sizeof why);
    double worst = 0;
    for (int f = 0; f < CAL_FIGS; f++)
        if (fabs(j.drift[f]) > fabs(worst)) worst = j.drift[f];
    if (bad && a->out && !a->allow_noisy) {
        fprintf(stderr,
                "fp8plan calibrate: not writing %s: the profile does not hold (%s; load average %s before, "
                "%s after): measure again at a quieter moment, or --allow-noisy to write it marked NOISY\n",
                a->out, why, b0, b1);
        return EXIT_NOISY;
    }
    if (bad) {
        snprintf(c->judged, sizeof c->judged,
                 "NOISY PROFILE (past its bounds: %.360s; load average %s before, %s after)", why, b0, b1);
        fprintf(stderr, "fp8plan calibrate: WARNING: %s%s\n", c->judged,
                a->out ? ", written as asked by --allow-noisy" : "");
    } else {
        snprintf(c->judged, sizeof c->judged,
                 "judged: interquartile spreads within %.1f %%, a re-measure within %+.1f %%; load average %s "
                 "before, %s after",
                 100.0 * cal_iqr_max(c->reps), 100.0 * worst, b0, b1);
    }
    return 0;
}

/* The profile's rows (gpus.csv, stacks.csv's fp8plan) and, with -o, the catalog written; an exit code. */
static int emit(const Args *a, const char *src, const Catalog *cat, const Calibration *c)
{
    Err e;
    char row_text[8192];
    if (cal_gpu_row(c, a->name, row_text, sizeof row_text, &e)) return cli_fail(CMD, &e);
    printf("gpus.csv row:\n%s\n", row_text);
    const StackSpec *own = catalog_stack(cat, "fp8plan");
    if (own && !cal_stack_row(own, c, row_text, sizeof row_text, &e))
        printf("stacks.csv row (fp8plan):\n%s\n", row_text);
    int rc = a->out ? write_catalog(a, src, cat, c) : 0;
    if (!rc && a->out)
        printf("catalog written to %s (fp8plan plan --catalog %s --gpu %s ...)\n", a->out, a->out, a->name);
    return rc;
}

/* Rank 0: what was measured and how it was judged, then the profile (not with --check); an exit code. */
static int say_result(const Args *a, const char *src, const Catalog *cat, CalSession *s, const GpuSpec *row)
{
    char b0[16], b1[16];
    const Calibration *c = s->c;
    const ModelSpec *m = &s->m;
    put_load(b0, sizeof b0, s->load0), put_load(b1, sizeof b1, s->load1);
    printf("fp8plan calibrate: %s%s%s, one layer of %s (hidden %u, ffn %u, seq %u, mbs %u: %llu rows), %d rank%s\n",
           a->backend, c->device[0] ? " on " : "", c->device, m->name, m->hidden, m->ffn_hidden, m->seq_len, a->mbs,
           (unsigned long long)a->mbs * m->seq_len, c->ranks, c->ranks > 1 ? "s" : "");
    cal_print_tables(c);
    if (a->check) return say_check(a, s, row, b0, b1); /* --check writes nothing */
    int rc = say_judged(a, s, b0, b1);
    return rc ? rc : emit(a, src, cat, c); /* a refused profile is not written */
}

int cmd_calibrate(int argc, char **argv); /* listed in cli/commands.h */

int cmd_calibrate(int argc, char **argv)
{
    Args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    Err e;
    char src[4096];
    Catalog *cat = NULL;
    if ((rc = plan_catalog_find(CMD, a.check ? a.check : a.catalog, src, sizeof src)) ||
        (rc = plan_catalog_load(CMD, src, &cat)))
        return rc;
    const GpuSpec *row = NULL;
    const ModelSpec *base = NULL;
    if (!(rc = check_out(&a, src, cat)) && !(rc = check_row(&a, src, cat, &row)) &&
        !(base = catalog_model(cat, a.model))) {
        char names[2048];
        catalog_model_names(cat, names, sizeof names);
        rc = cli_usage(CMD, "--model: unknown model '%s' (known: %s)", a.model, names);
    }
    CalSession s = {0};
    int stuck = 0; /* a rank failed where its peers may still wait in a collective: every rank is stopped */
    if (!rc && cal_session_measure(&s, a.backend, base, &a.ov, a.mbs, (int)a.reps, row, &e))
        rc = cli_fail(CMD, &e), stuck = 1;
    else if (!rc && !s.comm->rank) /* rank 0 alone, every rank past its last collective: a verdict (1, 75) or */
        rc = say_result(&a, src, cat, &s, row); /* a write failure ends in a plain exit, MPI finalized */
    cal_session_close(&s, stuck ? rc : 0);
    free(cat);
    return rc;
}
