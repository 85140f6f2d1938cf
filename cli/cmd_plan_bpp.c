/* cli/cmd_plan_bpp.c — `fp8plan bytes-per-param`: the seed's Table 1a. */
#include <stddef.h>
#include <stdlib.h>

#include "cli/cmd_plan.h"
#include "reports/seed_report.h"
#include "util/num.h"

int cmd_bytes_per_param(int argc, char **argv);

static const char help_head[] =
    "usage: fp8plan bytes-per-param [--recipe R] [--params P] [--dist-opt --dp D] [--format F] [-o FILE]\n"
    "\n"
    "Bytes per parameter of each persistent training state (working weight, master, gradient, Adam m and v)\n"
    "per recipe: the seed's Table 1a. bf16 is FP8-LM's Eq. 7 accounting (16), fp8lm its Eq. 8 (6),\n"
    "megatron-bf16 Megatron's 18. FP8 weight copies are not states; their bytes are shown apart.\n"
    "\n";

/* What the flags fill: --params, the output, and the plan inputs taken (cli/plan_flags.c). */
typedef struct {
    uint64_t params; /* 0: no total */
    CliOut out;
    PlanArgs p; /* --recipe --dist-opt --dp --catalog */
} Bpp;

#define USE(n, arg, help) PLAN_FLAG(offsetof(Bpp, p), n, 0, 0, arg, help)

// clang-format off
static const CliOpt opts[] = {
    USE("recipe", "R", "one recipe (all)"),
    {"params", OPT_COUNT, offsetof(Bpp, params), .lo = 1, .arg = "P",
     .help = "also total the state bytes for P parameters (e.g. 175e9); GB = 1e9 B"},
    USE("dist-opt", NULL, "divide the states the recipe's distributed optimizer shards ..."),
    USE("dp", "D", "... over D data-parallel ranks (megatron-bf16: 6 + 12/D)"),
    {.kind = OPT_TEXT, .help = "  --format table|csv|json, -o FILE, --catalog DIR"},
    {"out", OPT_BLOCK, offsetof(Bpp, out), .block = cli_out_opts},
    USE("catalog", NULL, ""),
    {0},
};
// clang-format on

static Table *bpp_table(const char *cmd, const Catalog *cat, const Bpp *b, int *rc)
{
    const Recipe *only = NULL;
    if (b->p.recipe && !(only = catalog_recipe(cat, b->p.recipe))) {
        char names[2048];
        catalog_recipe_names(cat, names, sizeof names);
        *rc = cli_usage(cmd, "--recipe: unknown recipe '%s' (known: %s)", b->p.recipe, names);
        return NULL;
    }
    Err e;
    Table *t = seed_table1a(cat, only, b->params, b->p.dist_opt, b->p.in.dp, &e);
    if (!t) *rc = cli_fail(cmd, &e);
    return t;
}

int cmd_bytes_per_param(int argc, char **argv)
{
    const char *cmd = "bytes-per-param";
    Bpp b = {.out = {TABLE_TEXT, NULL}};
    plan_flags_defaults(&b.p); /* dp 1 */
    CliParse p = {.cmd = cmd, .opts = opts, .help = help_head, .help_tail = "", .help_col = 17};
    int rc = cli_opts_parse(&p, argc, argv, &b);
    if (rc) return rc < 0 ? 0 : rc;
    if (b.p.layout_given[4] && !b.p.dist_opt)
        return cli_usage(cmd, "--dp only matters with --dist-opt (the states a distributed optimizer shards)");
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, b.p.catalog, &cat))) return rc;
    Table *t = bpp_table(cmd, cat, &b, &rc);
    if (t) {
        rc = cli_emit_table(cmd, t, &b.out);
        table_free(t);
    }
    free(cat);
    return rc;
}
