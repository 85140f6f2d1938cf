/* cli/cmd_plan_bpp.c — `fp8plan bytes-per-param`: the seed's Table 1a. */
#include <stdlib.h>

#include "cli/cmd_plan.h"
#include "reports/seed_report.h"
#include "util/num.h"

int cmd_bytes_per_param(int argc, char **argv);

static const char help[] =
    "usage: fp8plan bytes-per-param [--recipe R] [--params P] [--dist-opt --dp D] [--format F] [-o FILE]\n"
    "\n"
    "Bytes per parameter of each persistent training state (working weight, master, gradient, Adam m and v)\n"
    "per recipe: the seed's Table 1a. bf16 is FP8-LM's Eq. 7 accounting (16), fp8lm its Eq. 8 (6),\n"
    "megatron-bf16 Megatron's 18. FP8 weight copies are not states; their bytes are shown apart.\n"
    "\n"
    "  --recipe R     one recipe (all)\n"
    "  --params P     also total the state bytes for P parameters (e.g. 175e9); GB = 1e9 B\n"
    "  --dist-opt     divide the states the recipe's distributed optimizer shards ...\n"
    "  --dp D         ... over D data-parallel ranks (megatron-bf16: 6 + 12/D)\n"
    "  --format table|csv|json, -o FILE, --catalog DIR\n";

int cmd_bytes_per_param(int argc, char **argv)
{
    const char *cmd = "bytes-per-param";
    static const struct option opts[] = {
        {"recipe", required_argument, NULL, 'r'},
        {"params", required_argument, NULL, 'p'},
        {"dp", required_argument, NULL, 'd'},
        {"dist-opt", no_argument, NULL, 'D'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"catalog", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    CliOut out = {TABLE_TEXT, NULL};
    const char *recipe = NULL, *dir = NULL;
    uint64_t params = 0, dp = 1;
    int dist = 0, dp_given = 0, c, rc;
    Err e;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return cli_help(help);
        case 'r': recipe = optarg; break;
        case 'p':
            if (num_parse_count(optarg, &params, &e)) return cli_usage(cmd, "--params: %s", e.msg);
            if (!params) return cli_usage(cmd, "--params: '%s' must be at least 1", optarg);
            break;
        case 'd':
            if (num_parse_u64(optarg, &dp, &e)) return cli_usage(cmd, "--dp: %s", e.msg);
            if (!dp || dp > UINT32_MAX) return cli_usage(cmd, "--dp: '%s' must be in [1, %u]", optarg, UINT32_MAX);
            dp_given = 1;
            break;
        case 'D': dist = 1; break;
        case 'f':
            if ((rc = cli_parse_format(cmd, optarg, &out))) return rc;
            break;
        case 'o': out.path = optarg; break;
        case 'c': dir = optarg; break;
        default: return cli_bad_option(cmd);
        }
    }
    if ((rc = cli_no_operands(cmd, argc, argv))) return rc;
    if (dp_given && !dist)
        return cli_usage(cmd, "--dp only matters with --dist-opt (the states a distributed optimizer shards)");
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, dir, &cat))) return rc;
    const Recipe *only = NULL;
    if (recipe && !(only = catalog_recipe(cat, recipe))) {
        char names[2048];
        catalog_recipe_names(cat, names, sizeof names);
        rc = cli_usage(cmd, "--recipe: unknown recipe '%s' (known: %s)", recipe, names);
    } else {
        Table *t = seed_table1a(cat, only, params, dist, (uint32_t)dp, &e);
        if (!t) {
            rc = cli_fail(cmd, &e);
        } else {
            rc = cli_emit_table(cmd, t, &out);
            table_free(t);
        }
    }
    free(cat);
    return rc;
}
