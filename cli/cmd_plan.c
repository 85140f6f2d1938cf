/* cli/cmd_plan.c — `fp8plan plan` (one plan, every term) and `fp8plan compare`
 * (several recipes side by side with their change against the first). */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "reports/chart_term.h"
#include "reports/html_plan.h"
#include "reports/plan_report.h"

int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);

static const char plan_help_head[] =
    "usage: fp8plan plan --model M --gpu G --recipe R [layout options] [--view V] [--format F] [-o FILE]\n"
    "\n"
    "Plan one training run: every per-GPU memory term (weights, FP8 copies, master, gradients, Adam moments,\n"
    "scales and amax histories, activations, buffers, workspace, CUDA context, fragmentation) with totals,\n"
    "capacity and a fits/OOM verdict; every collective with its dtype, payload, bytes sent and time; and the\n"
    "step time broken down, with throughput and MFU. The table format shows all of it; csv/json print one\n"
    "summary row (--view summary), or one row per memory term, collective or time item (--view terms,\n"
    "collectives, time).\n"
    "\n"
    "  --model M  --gpu G  --recipe R     names from `fp8plan models`, `fp8plan gpus`, `fp8plan recipes`\n"
    "  --view summary|terms|collectives|time   rows for csv/json output (summary)\n"
    "  --routing FILE     instead: each rank's expert all-to-all bytes (sent and payload) for the routing a run\n"
    "                     measured (`fp8plan run --routing-log FILE`), beside the plan's uniform routing\n";

enum { PLAN_MASK = PO_RECIPE | PO_LAYOUT | PO_VIEW | PO_UNKNOWN }; /* the options plan takes */

static const char compare_help_head[] =
    "usage: fp8plan compare --model M --gpu G --recipes R1,R2,... [layout options] [--format F] [-o FILE]\n"
    "\n"
    "The same model, GPU and layout under several recipes, side by side: memory by state, communication,\n"
    "step time, throughput and MFU, each with its change against the first recipe (the seed's Table 5\n"
    "view). csv/json print one summary row per recipe.\n"
    "\n"
    "  --recipes R1,R2,...   two to sixteen recipe names\n";

/* The head and the shared options the command takes (mask: PO_*). */
static char *help_text(const char *head, unsigned mask)
{
    static char buf[8192];
    char opts[6144];
    snprintf(buf, sizeof buf, "%s\n%s", head, plan_options_help(mask, opts, sizeof opts));
    return buf;
}

/* plan's help: the shared options, then the --unknown vocabulary from the planner's table. */
static char *plan_help_text(void)
{
    char *buf = help_text(plan_help_head, PLAN_MASK);
    size_t n = strlen(buf), cap = 8192;
    n += (size_t)snprintf(buf + n, cap - n, "--unknown names (each a saving some frameworks make):\n");
    for (int i = 0; i < PLAN_UNK_COUNT_ && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "  %-17s %s\n", plan_unknowns[i].name, plan_unknowns[i].saving);
    return buf;
}

static int emit(const char *cmd, Table *t, const CliOut *out)
{
    if (!t) {
        Err e;
        err_set(&e, ST_NOMEM, "out of memory");
        return cli_fail(cmd, &e);
    }
    int rc = cli_emit_table(cmd, t, out);
    table_free(t);
    return rc;
}

/* What the page writers below get: the plans, and the text options. */
typedef struct {
    const Plan *plans;
    int n, unicode;
    Table *table;      /* compare's text table */
    const char *trust; /* plan_trust_text's line */
} Job;

/* `plan`'s text: the report, how far to trust its throughput, then the memory bar. */
static Status plan_text(FILE *f, const void *ctx, Err *e)
{
    const Job *j = ctx;
    Status st = plan_write_text(j->plans, f, e);
    if (!st) table_put_prose(f, "%s\n\n", j->trust);
    return st ? st : term_memory_bars(f, j->plans, 1, j->unicode, e);
}

/* `compare`'s text: the side-by-side table, how far to trust its throughputs, then a memory bar per recipe. */
static Status compare_text(FILE *f, const void *ctx, Err *e)
{
    const Job *j = ctx;
    Status st = table_write(j->table, TABLE_TEXT, f, e);
    if (!st) table_put_prose(f, "\n%s\n\n", j->trust);
    return st ? st : term_memory_bars(f, j->plans, j->n, j->unicode, e);
}

static Status plan_html(FILE *f, const void *ctx, Err *e)
{
    const Plan *p = ((const Job *)ctx)->plans;
    return html_plan_page(f, p, p->in.max_mem_frac, ((const Job *)ctx)->trust, e);
}

static Status compare_html(FILE *f, const void *ctx, Err *e)
{
    const Job *j = ctx;
    return html_compare_page(f, j->plans, j->n, j->plans[0].in.max_mem_frac, j->trust, e);
}

static int build_one(const char *cmd, PlanInput *in, Plan *p)
{
    Err e;
    if (plan_build(in, p, &e)) {
        if (e.st == ST_USAGE) return cli_usage(cmd, "%s", e.msg);
        return cli_fail(cmd, &e);
    }
    return 0;
}

int plan_build_recipes(const char *cmd, const Catalog *cat, PlanArgs *a, Plan **plans, int *n)
{
    char list[1024];
    const char *names[16];
    *plans = NULL, *n = 0;
    if (strlen(a->recipes) >= sizeof list) return cli_usage(cmd, "--recipes: list too long");
    strcpy(list, a->recipes);
    for (char *tok = list, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next) *next++ = '\0';
        if (!*tok) return cli_usage(cmd, "--recipes: empty name in '%s'", a->recipes);
        if (*n == 16) return cli_usage(cmd, "--recipes: at most 16 recipes");
        names[(*n)++] = tok;
    }
    if (*n < 2) return cli_usage(cmd, "--recipes: name at least two recipes to compare");
    if (!(*plans = calloc((size_t)*n, sizeof **plans))) return cli_nomem(cmd, "the plans");
    int rc = 0;
    for (int i = 0; i < *n && !rc; i++)
        if (!(rc = plan_args_resolve(cmd, cat, a, names[i]))) rc = build_one(cmd, &a->in, &(*plans)[i]);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    const char *cmd = "plan";
    PlanArgs a;
    int rc = plan_args_parse(cmd, argc, argv, PLAN_MASK, plan_help_text(), &a);
    if (rc) return rc < 0 ? 0 : rc;
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    Plan *p = malloc(sizeof *p);
    if (!p) {
        free(cat);
        return cli_nomem(cmd, "the plan");
    }
    if (!(rc = plan_args_resolve(cmd, cat, &a, a.recipe)) && (rc = build_one(cmd, &a.in, p))) plan_from_blame(cmd, &a);
    if (!rc && a.routing) {
        rc = plan_routing_emit(cmd, p, a.routing, &a.out);
    } else if (!rc) {
        char trust[600];
        Job j = {p, 1, cli_unicode(a.ascii), NULL, trust};
        Err te;
        if ((a.out.fmt == TABLE_TEXT || a.out.fmt == TABLE_HTML) && !a.view &&
            plan_trust_text(a.catalog, cat, &p->in, trust, sizeof trust, &te)) {
            rc = cli_fail(cmd, &te);
        } else if (a.out.fmt == TABLE_TEXT && !a.view) {
            rc = cli_emit_page(cmd, &a.out, plan_text, &j);
        } else if (a.out.fmt == TABLE_HTML && !a.view) {
            rc = cli_emit_page(cmd, &a.out, plan_html, &j);
        } else {
            Table *t = NULL;
            if (!a.view || !strcmp(a.view, "summary")) {
                t = plan_summary_table(p);
            } else if (!strcmp(a.view, "terms")) {
                t = plan_terms_table(p);
            } else if (!strcmp(a.view, "collectives")) {
                t = plan_collectives_table(p);
            } else {
                t = plan_time_table(p);
            }
            rc = emit(cmd, t, &a.out);
        }
    }
    free(p);
    free(cat);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    const char *cmd = "compare";
    PlanArgs a;
    int rc = plan_args_parse(cmd, argc, argv, PO_RECIPES | PO_LAYOUT,
                             help_text(compare_help_head, PO_RECIPES | PO_LAYOUT), &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (!a.recipes) return cli_usage(cmd, "--recipes is required (e.g. --recipes megatron-bf16,te-fp8,fp8lm)");
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    Plan *plans = NULL;
    int n = 0;
    rc = plan_build_recipes(cmd, cat, &a, &plans, &n);
    char trust[600];
    Err te;
    if (!rc && (a.out.fmt == TABLE_HTML || a.out.fmt == TABLE_TEXT) &&
        plan_trust_text(a.catalog, cat, &plans[0].in, trust, sizeof trust, &te)) /* one line: the recipes share
                                                                                 * stack, GPU and model */
        rc = cli_fail(cmd, &te);
    if (!rc && a.out.fmt == TABLE_HTML) {
        rc = cli_emit_page(cmd, &a.out, compare_html, &(Job){plans, n, 0, NULL, trust});
    } else if (!rc) {
        Table *t;
        if (a.out.fmt == TABLE_TEXT) {
            t = plan_compare_table(plans, n);
            if (t) {
                char title[512];
                const Plan *p0 = &plans[0];
                snprintf(title, sizeof title,
                         "%s on %s, stack %s: TP %u x PP %u x CP %u x DP %u = %u GPUs, micro-batch %u, seq %u, %s, "
                         "recompute %s (GB = 1e9 B, per GPU; communication = bytes each GPU sends per step)",
                         p0->in.model->name, p0->in.gpu->name, p0->in.stack ? p0->in.stack->name : "none", p0->in.tp,
                         p0->in.pp, p0->in.cp, p0->in.dp, p0->world, p0->in.mbs, p0->seq,
                         sharding_name(p0->in.sharding), recompute_name(p0->in.recompute));
                table_set_title(t, title);
            }
        } else {
            t = plan_summary_new(0);
            for (int i = 0; t && i < n; i++) plan_summary_row(t, &plans[i], 0);
        }
        if (t && a.out.fmt == TABLE_TEXT) {
            rc = cli_emit_page(cmd, &a.out, compare_text, &(Job){plans, n, cli_unicode(a.ascii), t, trust});
            table_free(t);
        } else {
            rc = emit(cmd, t, &a.out);
        }
    }
    free(plans);
    free(cat);
    return rc;
}
