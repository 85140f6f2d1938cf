/* cli/cmd_plan_sweep.c — `fp8plan sweep`: every layout and recipe for N GPUs, ranked. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "planner/sweep.h"
#include "reports/html_sweep.h"
#include "reports/plan_report.h"

int cmd_sweep(int argc, char **argv);

static const char sweep_help_head[] =
    "usage: fp8plan sweep --model M --gpu G --gpus N [--recipes R1,R2,...] [--stacks S1,S2,...|all] [--top K]\n"
    "                     [options] [-o FILE]\n"
    "\n"
    "Enumerate, for N GPUs, every TP (powers of two up to a node), PP (divisors), virtual stages (1-8),\n"
    "CP (1-8), DP (the rest), micro-batch (1-8), recompute (none/selective/full/op), distributed optimizer\n"
    "(off/on), recipe (all by default) and stack (--stack's, or each of --stacks). When the layers do not\n"
    "divide over the stages it tries uneven pipelines (the first and last stages take the remainder).\n"
    "Invalid layouts are dropped and counted by reason, layouts over --max-mem-frac of memory are counted\n"
    "as not fitting, and the rest are ranked by predicted tokens/s; the best K are printed\n"
    "(csv/json: the plan summary columns with a leading rank). The global batch is the same for every\n"
    "layout (--gbs, default about 2M tokens). Progress goes to stderr when it is a terminal.\n"
    "\n"
    "  --gpus N      GPUs to plan for\n"
    "  --recipes L  comma-separated recipe names (all)\n"
    "  --stacks L   comma-separated stack names, or all (the one --stack names); options that set a\n"
    "               stack value (--attn, --overlap-tp, ...) apply over every stack\n"
    "  --top K      how many plans to keep (20)\n"
    "  --seq --gbs --sp/--no-sp --attn --dropout and the overhead/efficiency options as for `plan`\n";

static void progress(uint64_t done, uint64_t total, void *ctx)
{
    (void)ctx;
    int width = 30, fill = total ? (int)((double)done / (double)total * width) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] %llu/%llu plans", bar, (unsigned long long)done, (unsigned long long)total);
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
}

/* Stack and uneven-stage columns only when they vary (csv/json always carry them). */
static Table *top_table(const Plan *top, int n, int show_stack)
{
    int uneven = 0;
    for (int i = 0; i < n; i++) uneven |= top[i].in.first_stage_layers || top[i].in.last_stage_layers;
    TableCol cols[17] = {{"rank", NULL, NULL, TC_U64, 0, 0}};
    int nc = 1;
    if (show_stack) cols[nc++] = (TableCol){"stack", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, 0};
    const char *ints[] = {"tp", "pp", "vpp", "cp", "dp", "mbs"};
    for (int i = 0; i < 6; i++) cols[nc++] = (TableCol){ints[i], NULL, NULL, TC_U64, 0, 0};
    if (uneven) cols[nc++] = (TableCol){"ends", "first/last", "layers", TC_STR, 0, 0};
    cols[nc++] = (TableCol){"recompute", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"sharding", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"memory", NULL, "GB", TC_F64, 2, 0};
    cols[nc++] = (TableCol){"step", NULL, "s", TC_F64, 3, 0};
    cols[nc++] = (TableCol){"tokens_per_s", "tokens/s", NULL, TC_F64, 0, 0};
    cols[nc++] = (TableCol){"mfu_bf16", "MFU bf16", "%", TC_F64, 1, 0};
    cols[nc++] = (TableCol){"mfu_fp8", "MFU fp8", "%", TC_F64, 1, 0};
    Table *t = table_new(cols, nc);
    for (int i = 0; t && i < n; i++) {
        const Plan *p = &top[i];
        table_row(t);
        int k = 0;
        table_u64(t, k++, (uint64_t)i + 1);
        if (show_stack) table_str(t, k++, p->in.stack ? p->in.stack->name : "none");
        table_str(t, k++, p->in.recipe->name);
        const uint32_t v[] = {p->in.tp, p->in.pp, p->in.vpp, p->in.cp, p->in.dp, p->in.mbs};
        for (int j = 0; j < 6; j++) table_u64(t, k++, v[j]);
        if (uneven) {
            char ends[32] = "-";
            if (p->in.first_stage_layers || p->in.last_stage_layers)
                snprintf(ends, sizeof ends, "%u/%u", p->in.first_stage_layers, p->in.last_stage_layers);
            table_str(t, k++, ends);
        }
        table_str(t, k++, recompute_name(p->in.recompute));
        table_str(t, k++, sharding_name(p->in.sharding));
        table_f64(t, k++, plan_gb(p->total_bytes));
        table_f64(t, k++, p->time.step_s);
        table_f64(t, k++, p->tokens_per_s);
        table_f64(t, k++, p->mfu_bf16_pct);
        table_f64(t, k++, p->mfu_fp8_pct);
    }
    return t;
}

/* Split a comma-separated list and look each name up; `what` names the option. */
typedef const void *(*Lookup)(const Catalog *c, const char *name);
static const void *find_recipe(const Catalog *c, const char *name) { return catalog_recipe(c, name); }
static const void *find_stack(const Catalog *c, const char *name) { return catalog_stack(c, name); }

static int name_list(const char *cmd, const Catalog *c, const char *what, const char *arg, Lookup find,
                     void (*names)(const Catalog *, char *, size_t), const void **out, int *n)
{
    char list[2048], known[2048];
    if (strlen(arg) >= sizeof list) return cli_usage(cmd, "--%s: list too long", what);
    strcpy(list, arg);
    *n = 0;
    for (char *tok = list, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next) *next++ = '\0';
        const void *x = find(c, tok);
        if (!x) {
            names(c, known, sizeof known);
            return cli_usage(cmd, "--%s: unknown name '%s' (known: %s)", what, tok, known);
        }
        if (*n < CATALOG_MAX_ROWS) out[(*n)++] = x;
    }
    return 0;
}

/* After each swept stack: the options given on the command line win again. */
static void keep_given(PlanInput *in, void *ctx)
{
    const PlanArgs *a = ctx;
    plan_args_keep_given(a, &a->in, in);
}

static void print_stats(FILE *f, const SweepStats *st, uint64_t gbs)
{
    fprintf(f, "evaluated %llu plans (global batch %llu): %llu valid, %llu fit, %llu out of memory, %llu invalid\n",
            (unsigned long long)st->evaluated, (unsigned long long)gbs, (unsigned long long)st->valid,
            (unsigned long long)(st->valid - st->oom), (unsigned long long)st->oom,
            (unsigned long long)(st->evaluated - st->valid));
    for (int r = 1; r < REJECT_COUNT_; r++)
        if (st->rejected[r])
            fprintf(f, "  invalid: %-58s %llu\n", plan_reject_name((PlanReject)r), (unsigned long long)st->rejected[r]);
}

static Status sweep_html(FILE *f, const void *ctx, Err *e) { return html_sweep_page(f, ctx, e); }

/* --format html: every fitting layout (collected while the sweep runs) with the best K. */
static int emit_html(const char *cmd, const PlanArgs *a, Table *points, const Plan *top, int n, const SweepStats *st,
                     uint64_t gbs)
{
    char *stats = NULL, title[256], sub[256];
    size_t len = 0;
    FILE *m = open_memstream(&stats, &len);
    if (!m) return cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    print_stats(m, st, gbs);
    fclose(m);
    snprintf(title, sizeof title, "fp8plan sweep: %s on %u x %s", a->in.model->name, a->gpus, a->in.gpu->name);
    snprintf(sub, sizeof sub,
             "every TP x PP x VPP x CP x DP x micro-batch x recompute x distributed optimizer x recipe; "
             "global batch %llu sequences; stack %.80s",
             (unsigned long long)gbs,
             a->stacks     ? a->stacks
             : a->in.stack ? a->in.stack->name
                           : "none");
    SweepPage pg = {points, top, n, stats, title, sub};
    int rc = cli_emit_page(cmd, &a->out, sweep_html, &pg);
    free(stats);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    const char *cmd = "sweep";
    static char help[8192];
    snprintf(help, sizeof help, "%s\n%s", sweep_help_head, plan_layout_help);
    PlanArgs a;
    int rc = plan_args_parse(cmd, argc, argv, PO_RECIPES | PO_SWEEP, help, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.top > 10000) return cli_usage(cmd, "--top %u: at most 10000", a.top);
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    const void *recs[CATALOG_MAX_ROWS], *stacks[CATALOG_MAX_ROWS];
    int nrec = 0, nstk = 0;
    if (a.stack && a.stacks) {
        rc = cli_usage(cmd, "--stack and --stacks: give one");
        goto done;
    }
    if ((rc = plan_args_resolve(cmd, cat, &a, NULL))) goto done;
    if (a.recipes) {
        if ((rc = name_list(cmd, cat, "recipes", a.recipes, find_recipe, catalog_recipe_names, recs, &nrec))) goto done;
    } else {
        for (int i = 0; i < cat->nrecipes; i++) recs[nrec++] = &cat->recipes[i];
    }
    if (a.stacks && !strcmp(a.stacks, "all")) {
        for (int i = 0; i < cat->nstacks; i++) stacks[nstk++] = &cat->stacks[i];
    } else if (a.stacks) {
        if ((rc = name_list(cmd, cat, "stacks", a.stacks, find_stack, catalog_stack_names, stacks, &nstk))) goto done;
    }
    {
        SweepSpec spec = {.base = a.in,
                          .recipes = (const Recipe *const *)recs,
                          .nrecipes = nrec,
                          .stacks = (const StackSpec *const *)stacks,
                          .nstacks = nstk,
                          .after_stack = keep_given,
                          .after_stack_ctx = &a,
                          .gpus = a.gpus};
        SweepStats st;
        Table *points = NULL;
        if (a.out.fmt == TABLE_HTML) {
            if (!(points = sweep_points_new())) {
                rc = cli_usage(cmd, "out of memory");
                goto done;
            }
            spec.on_fit = sweep_points_add, spec.on_fit_ctx = points;
        }
        Plan *top = calloc(a.top, sizeof *top);
        if (!top) {
            rc = cli_usage(cmd, "out of memory for --top %u", a.top);
            goto done;
        }
        int n = 0;
        Err e;
        int tty = isatty(STDERR_FILENO);
        if (sweep_run(&spec, top, (int)a.top, &n, &st, tty ? progress : NULL, NULL, &e)) {
            rc = e.st == ST_USAGE ? cli_usage(cmd, "%s", e.msg) : cli_fail(cmd, &e);
            free(top);
            table_free(points);
            goto done;
        }
        uint64_t gbs = a.in.gbs ? a.in.gbs : (n ? top[0].in.gbs : 0);
        if (points) {
            rc = emit_html(cmd, &a, points, top, n, &st, gbs);
            table_free(points);
            free(top);
            goto done;
        }
        Table *t;
        if (a.out.fmt == TABLE_TEXT) {
            t = top_table(top, n, nstk > 1);
            if (t) {
                char title[512], stk[300] = "";
                if (nstk <= 1)
                    snprintf(stk, sizeof stk, ", stack %s",
                             nstk ? ((const StackSpec *)stacks[0])->name : a.in.stack->name);
                snprintf(title, sizeof title, "best %d of %llu plans that fit: %s on %u x %s%s, ranked by tokens/s", n,
                         (unsigned long long)(st.valid - st.oom), a.in.model->name, a.gpus, a.in.gpu->name, stk);
                table_set_title(t, title);
            }
        } else {
            t = plan_summary_new(1);
            for (int i = 0; t && i < n; i++) plan_summary_row(t, &top[i], i + 1);
        }
        if (!t) {
            rc = cli_usage(cmd, "out of memory");
        } else {
            rc = cli_emit_table(cmd, t, &a.out);
            table_free(t);
        }
        if (!rc) print_stats(a.out.fmt == TABLE_TEXT && !a.out.path ? stdout : stderr, &st, gbs);
        free(top);
    }
done:
    free(cat);
    return rc;
}
