/* cli/cmd_plan_report.c — `fp8plan report seed [-o DIR]`: the seed's tables as CSV files;
 * `fp8plan report fidelity`: the planner against published measured runs. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_report.h"
#include "reports/html_fidelity.h"
#include "reports/html_seed.h"
#include "reports/plan_report.h"
#include "reports/fidelity_report.h"
#include "reports/scaling_report.h"
#include "reports/seed_report.h"
#include "util/fileio.h"
#include "util/num.h"

int cmd_report(int argc, char **argv);

static const char help[] =
    "usage: fp8plan report seed [-o DIR] [--catalog DIR]\n"
    "       fp8plan report seed --format html [-o FILE] [--catalog DIR]\n"
    "       fp8plan report fidelity [--holdout LIST] [--max-mem-frac F] [-o DIR] [--catalog DIR]\n"
    "       fp8plan report fidelity --format html [--holdout LIST] [--max-mem-frac F] [-o FILE] [--catalog DIR]\n"
    "       fp8plan report html [-o FILE] [plan options]   (fp8plan report html --help)\n"
    "\n"
    "fidelity: plan every published run of measured.csv with its stack, model, GPU, recipe and layout, and\n"
    "print per run the measured and predicted tokens/s per GPU and memory (of the kind the source published:\n"
    "allocated, reserved or the device total) with signed errors and the fit verdict, then the mean absolute\n"
    "error overall, per stack, per source, on the hold-out sources (--holdout: comma-separated source_id or\n"
    "source_id@gpu; default " FIDELITY_DEFAULT_HOLDOUT "),\n"
    "FP8-LM Table 5 and memory, and the runs that really ran but are predicted not to fit (false OOMs);\n"
    "runs of models with experts apart (overall, dev, hold-out, per source, the dev runs per GPU). Then\n"
    "what FP8 buys over BF16: every configuration a source measured with BF16 GEMMs and with FP8 GEMMs,\n"
    "nothing else changed, with the measured and the predicted speed-up and the error of the prediction.\n"
    "--max-mem-frac F (0 < F <= 1; each plan's 0.95 by default) sets the limit the over-limit count uses.\n"
    "With -o DIR: fidelity_runs.csv, fidelity_summary.csv, fidelity_pairs.csv and fidelity_terms.csv (each\n"
    "planned run's step and its time terms as percentages of it: which term carries an error). With --format\n"
    "html: one self-contained page (-o FILE, or stdout): predicted against measured tokens/s per run (one\n"
    "series per stack), the MAE per stack, predicted against measured memory, and the tables they are drawn\n"
    "from.\n"
    "\n"
    "seed: compute the seed document's tables with the planner. Prints FP8-LM Table 5 (published memory and\n"
    "weight-related communication next to the prediction and its error; throughput and MFU for\n"
    "information) and, with -o DIR, writes RFC 4180 CSV files there (DIR is created if missing):\n"
    "  table1a_bytes_per_param.csv     bytes per parameter of each state, per recipe (+ 175e9 totals)\n"
    "  table1b_scale_granularity.csv   4096x4096 weight: FP8 payload and scale bytes per granularity\n"
    "  table1c_precision_map.csv       which precision each tensor of a step has, per recipe\n"
    "  table5_fp8lm.csv                FP8-LM Table 5: published, predicted, error, tolerance\n"
    "With --format html: one self-contained page (-o FILE, or stdout) with Table 5 as published against\n"
    "predicted bars with the tolerance band, Table 1a and 1b as bars, the delayed-scaling trace of the\n"
    "seed's spike to 640 (E4M3, history 4, max) and Table 1c; each chart above its table.\n"
    "Exit status 1 when a checked figure is outside its tolerance (memory +-15 %, communication +-12 %).\n";

static Status seed_page(FILE *f, const void *ctx, Err *e) { return html_seed_page(f, ctx, e); }

/* The page of --format html: every table of the report, charted. */
static int seed_html(const char *cmd, const Catalog *cat, Table *t5, const SeedCheck *chk, const char *path)
{
    Err e;
    static const DelayedCfg spike_cfg = {DT_E4M3, 4, AMAX_ALGO_MAX, 0};
    float amax[SCALING_TRACE_STEPS];
    scaling_spike_trace(amax);
    Table *t1a = seed_table1a(cat, NULL, 175000000000ull, 0, 1, &e), *t1b = t1a ? seed_table1b(4096, 4096, &e) : NULL;
    Table *t1c = t1b ? seed_table1c(cat) : NULL;
    Table *tr = t1c ? scaling_trace_table(&spike_cfg, amax, SCALING_TRACE_STEPS, &e) : NULL;
    int rc;
    if (t1b && !t1c) err_set(&e, ST_NOMEM, "out of memory");
    if (!tr) {
        rc = cli_fail(cmd, &e);
    } else {
        SeedPage pg = {t5, t1a, t1b, t1c, tr, chk->checked, chk->outside};
        CliOut out = {TABLE_HTML, path};
        rc = cli_emit_page(cmd, &out, seed_page, &pg);
    }
    table_free(t1a);
    table_free(t1b);
    table_free(t1c);
    table_free(tr);
    return rc;
}

static int write_csv(const char *cmd, const char *dir, const char *file, Table *t)
{
    if (!t) {
        Err e;
        err_set(&e, ST_NOMEM, "out of memory building %s", file);
        return cli_fail(cmd, &e);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    CliOut out = {TABLE_CSV, path};
    int rc = cli_emit_table(cmd, t, &out);
    table_free(t);
    return rc;
}

/* A report's CSV files land as one set (util/fileio.h's output group): begin before the first write_csv; end
 * renames them all into place when every one was written (rc 0), else removes them, so a failure part-way (a
 * file that cannot be written, memory) leaves none of them; then names what was written. */
static int csv_set_end(const char *cmd, const char *dir, int rc, const char *const *names, int n)
{
    Err e;
    Status st = outfile_group_end(!rc, &e);
    if (!rc && st) rc = cli_fail(cmd, &e);
    for (int i = 0; !rc && i < n; i++) fprintf(stderr, "fp8plan report: wrote %s/%s\n", dir, names[i]);
    return rc;
}

static int make_dir(const char *cmd, const char *dir)
{
    if (mkdir(dir, 0777) && errno != EEXIST) {
        Err e;
        err_set(&e, ST_CANTCREAT, "cannot create %s: %s", dir, strerror(errno));
        return cli_fail(cmd, &e);
    }
    return 0;
}

Status plan_trust_rows(const char *catdir, const Catalog *cat, FidelityRow **out, int *nout, char *note, size_t size,
                       Err *e)
{
    char dir[4096], path[4200];
    *out = NULL, *nout = 0;
    snprintf(note, size, "trust: no catalog directory to read measured.csv from");
    if (plan_catalog_find("plan", catdir, dir, sizeof dir)) return ST_OK;
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    /* one block, the rows first: a row points at its run, so the runs live as long as the rows */
    _Static_assert(sizeof(FidelityRow) % _Alignof(MeasuredRun) == 0, "the runs follow the rows aligned");
    FidelityRow *rows = calloc(1, MEASURED_MAX_RUNS * (sizeof(FidelityRow) + sizeof(MeasuredRun)));
    MeasuredRun *runs = rows ? (MeasuredRun *)(rows + MEASURED_MAX_RUNS) : NULL;
    FidelitySummary *sum = calloc(1, sizeof *sum);
    char *text = NULL;
    size_t len;
    int n = 0;
    Err fe = {0};
    Status st = ST_OK;
    struct stat sb;
    if (!rows || !sum) {
        st = err_set(e, ST_NOMEM, "out of memory reading measured.csv");
    } else if (!stat(path, &sb) && !S_ISREG(sb.st_mode)) { /* a FIFO, a device, a directory: not waited on */
        snprintf(note, size, "trust: %.300s is not a regular file: the published runs are not read", path);
    } else if (file_read_all(path, &text, &len, &fe) && fe.st == ST_NOINPUT && access(path, F_OK)) {
        snprintf(note, size,
                 "trust: the catalog has no measured.csv: this throughput is not checked against any "
                 "measurement");
    } else if (text == NULL || measured_parse(cat, text, len, path, runs, &n, &fe) ||
               fidelity_evaluate(runs, n, NULL, 0, rows, sum, &fe)) {
        if (fe.st == ST_NOMEM)
            st = err_set(e, ST_NOMEM, "%s", fe.msg);
        else
            snprintf(note, size, "trust: the published runs could not be read (%.300s)", fe.msg);
    } else {
        *out = rows, *nout = n, note[0] = '\0';
        rows = NULL;
    }
    free(text);
    free(rows);
    free(sum);
    return st;
}

Status plan_trust_text(const char *catdir, const Catalog *cat, const PlanInput *in, char *buf, size_t size, Err *e)
{
    FidelityRow *rows;
    int n;
    Status st = plan_trust_rows(catdir, cat, &rows, &n, buf, size, e);
    if (!st && rows) {
        FidelityBand b;
        fidelity_band(rows, n, in, &b);
        fidelity_band_text(&b, in, buf, size);
    }
    free(rows);
    return st;
}

static Status fidelity_page(FILE *f, const void *ctx, Err *e) { return html_fidelity_page(f, ctx, e); }

/* The summary lines under the tables: dense, uncertain, mixture of experts, FP8 over BF16. */
static void fidelity_prose(const FidelitySummary *sum, const FidelityGroup *pall, const FidelityGroup *pdev,
                           const FidelityGroup *phold)
{
    table_put_prose(
        stdout,
        "throughput MAE %.1f %% over %d runs (dev %.1f %% over %d, hold-out %.1f %% over %d); FP8-LM Table 5 "
        "MAE %.1f %%; allocator-traced memory MAE %.1f %% (worst %.1f %%) over %d; false OOMs %d (runs "
        "that ran but are predicted above capacity), over the memory limit %d; not planned %d\n",
        100 * sum->all.mae, sum->all.n, 100 * sum->dev.mae, sum->dev.n, 100 * sum->holdout.mae, sum->holdout.n,
        100 * sum->table5.mae, 100 * sum->mem_traced.mae, 100 * sum->mem_traced_max, sum->mem_traced.n, sum->false_oom,
        sum->over_limit, sum->unplanned);
    if (sum->uncertain) /* dense runs whose notes leave choices open (unknown=) */
        table_put_prose(stdout, "uncertain %d (dense runs that fit only if savings their sources leave open hold)\n",
                        sum->uncertain);
    if (sum->moe.n) /* runs of models with experts, apart from the dense figures above */
        table_put_prose(stdout,
                        "mixture of experts: throughput MAE %.1f %% (bias %+.1f %%) over %d runs (dev %.1f %% over %d, "
                        "hold-out %.1f %% over %d); false OOMs %d; uncertain %d (fit only if savings their sources "
                        "leave open hold)\n",
                        100 * sum->moe.mae, 100 * sum->moe.bias, sum->moe.n, 100 * sum->moe_dev.mae, sum->moe_dev.n,
                        100 * sum->moe_holdout.mae, sum->moe_holdout.n, sum->moe_false_oom, sum->moe_uncertain);
    if (pall->n)
        table_put_prose(stdout,
                        "FP8 over BF16: planned speed-up error MAE %.1f %% (bias %+.1f %%) over %d pairs (dev %.1f %% "
                        "over %d, hold-out %.1f %% over %d)\n",
                        100 * pall->mae, 100 * pall->bias, pall->n, 100 * pdev->mae, pdev->n, 100 * phold->mae,
                        phold->n);
}

/* -o DIR: the four tables as CSV files (write_csv frees what it is given; the others are freed here). */
static int fidelity_csvs(const char *cmd, const char *outdir, Table **tr, Table **ts, Table **tp, Table **tt)
{
    static const char *const names[] = {"fidelity_runs.csv", "fidelity_summary.csv", "fidelity_pairs.csv",
                                        "fidelity_terms.csv"};
    int rc = make_dir(cmd, outdir);
    if (rc) return rc;
    outfile_group_begin();
    rc = write_csv(cmd, outdir, "fidelity_runs.csv", *tr);
    *tr = NULL;
    if (!rc)
        rc = write_csv(cmd, outdir, "fidelity_summary.csv", *ts);
    else
        table_free(*ts);
    *ts = NULL;
    if (!rc)
        rc = write_csv(cmd, outdir, "fidelity_pairs.csv", *tp);
    else
        table_free(*tp);
    *tp = NULL;
    if (!rc)
        rc = write_csv(cmd, outdir, "fidelity_terms.csv", *tt);
    else
        table_free(*tt);
    *tt = NULL;
    return csv_set_end(cmd, outdir, rc, names, 4);
}

static int report_fidelity(const char *cmd, const char *catdir, const char *outdir, const char *holdout,
                           double max_mem_frac, int html)
{
    char dir[4096], path[4200];
    int rc;
    if ((rc = plan_catalog_find(cmd, catdir, dir, sizeof dir))) return rc;
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, dir, &cat))) return rc;
    MeasuredRun *runs = calloc(MEASURED_MAX_RUNS, sizeof *runs);
    FidelityRow *rows = calloc(MEASURED_MAX_RUNS, sizeof *rows);
    FidelitySummary *sum = calloc(1, sizeof *sum);
    char *text = NULL;
    size_t len;
    int n = 0;
    Err e;
    Table *tr = NULL, *ts = NULL, *tp = NULL, *tt = NULL;
    FidelityPair *pairs = calloc(FIDELITY_MAX_PAIRS, sizeof *pairs);
    FidelityGroup pall, pdev, phold;
    int np = 0;
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    if (!runs || !rows || !sum || !pairs) {
        err_set(&e, ST_NOMEM, "out of memory");
        rc = cli_fail(cmd, &e);
    } else if (file_read_all(path, &text, &len, &e) || measured_parse(cat, text, len, path, runs, &n, &e) ||
               fidelity_evaluate(runs, n, holdout, max_mem_frac, rows, sum, &e)) {
        rc = cli_fail(cmd, &e);
    } else {
        tr = fidelity_rows_table(rows, n);
        ts = fidelity_summary_table(sum);
        np = fidelity_pairs(rows, n, pairs, FIDELITY_MAX_PAIRS);
        if (np > FIDELITY_MAX_PAIRS) np = FIDELITY_MAX_PAIRS; /* 256 BF16/FP8 pairs: more than 512 runs can hold */
        fidelity_pairs_summary(pairs, np, &pall, &pdev, &phold);
        tp = fidelity_pairs_table(pairs, np);
        tt = fidelity_terms_table(rows, n);
        if (tp)
            table_set_title(tp, "FP8 over BF16: the same configuration measured in both precisions; speed-up = FP8 "
                                "tokens/s / BF16 tokens/s, error = predicted / measured speed-up - 1");
        if (tr)
            table_set_title(tr,
                            "measured runs (models/measured.csv) against the plan; error = predicted / measured - 1");
        if (ts) table_set_title(ts, "mean absolute error (MAE) and mean signed error (bias)");
        CliOut so = {TABLE_TEXT, NULL};
        if (!tr || !ts || !tp || !tt) {
            err_set(&e, ST_NOMEM, "out of memory");
            rc = cli_fail(cmd, &e);
        } else if (html) {
            FidelityPage pg = {tr, ts, sum, holdout ? holdout : FIDELITY_DEFAULT_HOLDOUT, tp, &pall, &pdev, &phold};
            CliOut out = {TABLE_HTML, outdir};
            rc = cli_emit_page(cmd, &out, fidelity_page, &pg);
        } else if (!(rc = cli_emit_table(cmd, tr, &so)) && !(rc = cli_emit_table(cmd, ts, &so)) &&
                   !(rc = cli_emit_table(cmd, tp, &so))) {
            fidelity_prose(sum, &pall, &pdev, &phold);
            if (outdir) rc = fidelity_csvs(cmd, outdir, &tr, &ts, &tp, &tt);
        }
    }
    table_free(tr);
    table_free(ts);
    table_free(tp);
    table_free(tt);
    free(pairs);
    free(text);
    free(runs);
    free(rows);
    free(sum);
    free(cat);
    return rc;
}

/* What report seed and report fidelity take. */
typedef struct {
    const char *outdir, *holdout, *memfrac; /* -o DIR or FILE, --holdout LIST, --max-mem-frac as given */
    double max_mem_frac;                    /* 0: each plan's own (0.95) */
    CliOut fmt;
    PlanArgs p; /* --catalog (cli/plan_flags.c) */
} ReportArgs;

static int read_format(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    (void)o;
    CliOut *fmt = t;
    int rc = cli_parse_format(p->cmd, arg, fmt);
    if (!rc && fmt->fmt != TABLE_TEXT && fmt->fmt != TABLE_HTML)
        rc = cli_usage(p->cmd,
                       "--format %s: report seed and report fidelity print a table or write html (-o DIR writes CSV)",
                       arg);
    return rc;
}

static int read_memfrac(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    ReportArgs *r = t;
    r->memfrac = arg;
    return plan_read_frac(p, o, arg, &r->max_mem_frac); /* o->set 0: in (0, 1] */
}

static const CliOpt report_opts[] = {
    {"output", OPT_STR, offsetof(ReportArgs, outdir), .short_name = 'o'},
    PLAN_FLAG(offsetof(ReportArgs, p), "catalog", 0, 0, NULL, NULL),
    {"format", OPT_FN, offsetof(ReportArgs, fmt), .has_arg = 1, .fn = read_format},
    {"holdout", OPT_STR, offsetof(ReportArgs, holdout), .arg = "LIST"},
    {"max-mem-frac", OPT_FN, 0, .has_arg = 1, .fn = read_memfrac},
    {0},
};

int cmd_report(int argc, char **argv)
{
    const char *cmd = "report";
    if (argc > 1 && !strcmp(argv[1], "html")) return report_html(argc - 1, argv + 1);
    ReportArgs r = {.fmt = {TABLE_TEXT, NULL}};
    plan_flags_defaults(&r.p);
    int rc = cli_opts_parse(&(CliParse){.cmd = cmd, .opts = report_opts, .help = help, .operands = 1}, argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    const char *outdir = r.outdir, *catdir = r.p.catalog, *holdout = r.holdout, *memfrac = r.memfrac;
    double max_mem_frac = r.max_mem_frac;
    CliOut fmt = r.fmt;
    if (optind >= argc) return cli_usage(cmd, "which report? (seed, fidelity, html)");
    if (!strcmp(argv[optind], "html"))
        return cli_usage(cmd, "name the report first: fp8plan report html [-o FILE] [plan options]");
    int fid = !strcmp(argv[optind], "fidelity");
    if (!fid && strcmp(argv[optind], "seed"))
        return cli_usage(cmd, "unknown report '%s' (known: seed, fidelity, html)", argv[optind]);
    if (optind + 1 < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind + 1]);
    if (fid) /* holdout NULL: the default list */
        return report_fidelity(cmd, catdir, outdir, holdout, max_mem_frac, fmt.fmt == TABLE_HTML);
    if (holdout) return cli_usage(cmd, "--holdout applies to report fidelity only");
    if (memfrac) return cli_usage(cmd, "--max-mem-frac %s applies to report fidelity only", memfrac);

    char dir[4096];
    if ((rc = plan_catalog_find(cmd, catdir, dir, sizeof dir))) return rc;
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, dir, &cat))) return rc;
    char path[4200], *text = NULL;
    size_t len;
    Err e;
    Table *t5 = NULL;
    SeedCheck chk;
    snprintf(path, sizeof path, "%s/fp8lm_table5.csv", dir);
    if (file_read_all(path, &text, &len, &e) || seed_table5(cat, text, len, path, &t5, &chk, &e)) {
        rc = cli_fail(cmd, &e);
        goto done;
    }
    table_set_title(t5, "FP8-LM Table 5 (H100 80GB; seq 2048; distributed optimizer; stack " SEED_T5_STACK
                        " with sequence parallelism, flash attention; GB = 1e9 B; per GPU)");
    if (fmt.fmt == TABLE_HTML) {
        rc = seed_html(cmd, cat, t5, &chk, outdir);
        if (!rc && chk.outside) rc = status_exit_code(ST_TOLERANCE);
        goto done;
    }
    CliOut so = {TABLE_TEXT, NULL};
    if ((rc = cli_emit_table(cmd, t5, &so))) goto done;
    printf("%d of %d checked figures within tolerance\n", chk.checked - chk.outside, chk.checked);
    if (outdir) {
        static const char *const names[] = {"table1a_bytes_per_param.csv", "table1b_scale_granularity.csv",
                                            "table1c_precision_map.csv", "table5_fp8lm.csv"};
        if ((rc = make_dir(cmd, outdir))) goto done;
        outfile_group_begin();
        Err be;
        Table *t1b = seed_table1b(4096, 4096, &be); /* write_csv frees what it is given, written or not */
        rc = write_csv(cmd, outdir, "table1a_bytes_per_param.csv", seed_table1a(cat, NULL, 175000000000ull, 0, 1, &be));
        if (rc)
            table_free(t1b);
        else
            rc = write_csv(cmd, outdir, "table1b_scale_granularity.csv", t1b);
        if (!rc) rc = write_csv(cmd, outdir, "table1c_precision_map.csv", seed_table1c(cat));
        if (!rc) rc = write_csv(cmd, outdir, "table5_fp8lm.csv", t5), t5 = NULL;
        if ((rc = csv_set_end(cmd, outdir, rc, names, 4))) goto done;
    }
    if (chk.outside) {
        fprintf(stderr, "fp8plan report: %d figure(s) outside tolerance\n", chk.outside);
        rc = status_exit_code(ST_TOLERANCE);
    }
done:
    table_free(t5);
    free(text);
    free(cat);
    return rc;
}
