/* cli/cmd_plan_report.c — `fp8plan report seed [-o DIR]`: the seed's tables as CSV files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_report.h"
#include "reports/html_seed.h"
#include "reports/plan_report.h"
#include "reports/scaling_report.h"
#include "reports/seed_report.h"
#include "util/fileio.h"

int cmd_report(int argc, char **argv);

static const char help[] =
    "usage: fp8plan report seed [-o DIR] [--catalog DIR]\n"
    "       fp8plan report seed --format html [-o FILE] [--catalog DIR]\n"
    "       fp8plan report html [-o FILE] [plan options]   (fp8plan report html --help)\n"
    "\n"
    "Compute the seed document's tables with the planner. Prints FP8-LM Table 5 (published memory and\n"
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
    if (!rc) fprintf(stderr, "fp8plan report: wrote %s\n", path);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    const char *cmd = "report";
    if (argc > 1 && !strcmp(argv[1], "html")) return report_html(argc - 1, argv + 1);
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"catalog", required_argument, NULL, 'c'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *outdir = NULL, *catdir = NULL;
    CliOut fmt = {TABLE_TEXT, NULL};
    int c, rc;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return cli_help(help);
        case 'o': outdir = optarg; break;
        case 'c': catdir = optarg; break;
        case 'f':
            if (cli_parse_format(cmd, optarg, &fmt)) return status_exit_code(ST_USAGE);
            if (fmt.fmt != TABLE_TEXT && fmt.fmt != TABLE_HTML)
                return cli_usage(cmd, "--format %s: report seed prints a table or writes html (-o DIR writes CSV)",
                                 optarg);
            break;
        default: return cli_usage(cmd, "bad option");
        }
    }
    if (optind >= argc) return cli_usage(cmd, "which report? (seed, html)");
    if (!strcmp(argv[optind], "html"))
        return cli_usage(cmd, "name the report first: fp8plan report html [-o FILE] [plan options]");
    if (strcmp(argv[optind], "seed")) return cli_usage(cmd, "unknown report '%s' (known: seed, html)", argv[optind]);
    if (optind + 1 < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind + 1]);

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
    table_set_title(t5, "FP8-LM Table 5 (H100 80GB; seq 2048; distributed optimizer; GB = 1e9 B; per GPU)");
    if (fmt.fmt == TABLE_HTML) {
        rc = seed_html(cmd, cat, t5, &chk, outdir);
        if (!rc && chk.outside) rc = status_exit_code(ST_TOLERANCE);
        goto done;
    }
    CliOut so = {TABLE_TEXT, NULL};
    if ((rc = cli_emit_table(cmd, t5, &so))) goto done;
    printf("%d of %d checked figures within tolerance\n", chk.checked - chk.outside, chk.checked);
    if (outdir) {
        if (mkdir(outdir, 0777) && errno != EEXIST) {
            err_set(&e, ST_CANTCREAT, "cannot create %s: %s", outdir, strerror(errno));
            rc = cli_fail(cmd, &e);
            goto done;
        }
        Err be;
        Table *t1b = seed_table1b(4096, 4096, &be);
        if ((rc = write_csv(cmd, outdir, "table1a_bytes_per_param.csv",
                            seed_table1a(cat, NULL, 175000000000ull, 0, 1, &be))) ||
            (rc = write_csv(cmd, outdir, "table1b_scale_granularity.csv", t1b)) ||
            (rc = write_csv(cmd, outdir, "table1c_precision_map.csv", seed_table1c(cat))) ||
            (rc = write_csv(cmd, outdir, "table5_fp8lm.csv", t5)))
            goto done;
        t5 = NULL; /* freed by write_csv */
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
