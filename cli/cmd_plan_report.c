/* cli/cmd_plan_report.c — `fp8plan report seed [-o DIR]`: the seed's tables as CSV files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_plan.h"
#include "reports/plan_report.h"
#include "reports/seed_report.h"
#include "util/fileio.h"

int cmd_report(int argc, char **argv);

static const char help[] =
    "usage: fp8plan report seed [-o DIR] [--catalog DIR]\n"
    "\n"
    "Compute the seed document's tables with the planner. Prints FP8-LM Table 5 (published memory and\n"
    "weight-related communication next to the prediction and its error; throughput and MFU for\n"
    "information) and, with -o DIR, writes RFC 4180 CSV files there (DIR is created if missing):\n"
    "  table1a_bytes_per_param.csv     bytes per parameter of each state, per recipe (+ 175e9 totals)\n"
    "  table1b_scale_granularity.csv   4096x4096 weight: FP8 payload and scale bytes per granularity\n"
    "  table1c_precision_map.csv       which precision each tensor of a step has, per recipe\n"
    "  table5_fp8lm.csv                FP8-LM Table 5: published, predicted, error, tolerance\n"
    "Exit status 1 when a checked figure is outside its tolerance (memory +-15 %, communication +-12 %).\n";

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
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"catalog", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *outdir = NULL, *catdir = NULL;
    int c, rc;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return cli_help(help);
        case 'o': outdir = optarg; break;
        case 'c': catdir = optarg; break;
        default: return cli_bad_option(cmd);
        }
    }
    if (optind >= argc) return cli_usage(cmd, "which report? (seed)");
    if (strcmp(argv[optind], "seed")) return cli_usage(cmd, "unknown report '%s' (known: seed)", argv[optind]);
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
