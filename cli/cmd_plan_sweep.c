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
    "                     [--per-recipe] [--all] [options] [-o FILE]\n"
    "\n"
    "Enumerate, for N GPUs, every TP (powers of two up to a node), PP (divisors), virtual stages (1-8),\n"
    "CP (1-8), DP (the rest), micro-batch (1-8), recompute (none/selective/full/op), distributed optimizer\n"
    "(off/on), recipe (all by default) and stack (--stack's, or each of --stacks). When the layers do not\n"
    "divide over the stages it tries uneven pipelines (the first and last stages take the remainder).\n"
    "Invalid layouts are dropped and counted by reason, layouts over --max-mem-frac of memory are counted\n"
    "as not fitting, and the rest are ranked by predicted tokens/s; the best K are printed (csv/json: the\n"
    "plan summary columns with a leading rank). A layout within 2 % of a listed one's tokens/s with the\n"
    "same stack, recipe, TP, PP, CP, DP and micro-batch (it differs only in virtual stages, uneven stage\n"
    "ends, recompute or sharding) is folded into it and counted in the +var column. When nothing fits,\n"
    "the layouts closest to fitting are shown with how far over the GPU's memory they are and their\n"
    "largest term. The global batch is the same for every layout (--gbs, default about 2M tokens).\n"
    "Progress goes to stderr when it is a terminal.\n"
    "\n"
    "  --gpus N       GPUs to plan for (at most 1048576)\n"
    "  --recipes L    comma-separated recipe names (all)\n"
    "  --stacks L     comma-separated stack names (or aliases), or all (the one --stack names); options\n"
    "                 that set a stack value (--attn, --overlap-tp, ...) apply over every stack\n"
    "  --top K        how many plans to keep (20; with --per-recipe: per recipe, 1)\n"
    "  --per-recipe   the best plan(s) of each recipe, ranked together\n"
    "  --all          list near-duplicates too instead of folding them\n"
    "  --seq --gbs --sp/--no-sp --attn --dropout and the overhead/efficiency options as for `plan`\n";

enum { NEAREST = 5 }; /* layouts shown when nothing fits */

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

/* Columns k.. of the current row: [stack,] recipe, tp, pp, vpp, cp, dp, mbs, [first/last,] [ep/etp] — the
 * layout; with `tail` also recompute, sharding and memory (GB). Returns the next column. */
static int layout_cells(Table *t, int k, const Plan *p, int show_stack, int uneven, int experts, int tail)
{
    if (show_stack) table_str(t, k++, p->in.stack ? p->in.stack->name : "none");
    table_str(t, k++, p->in.recipe->name);
    const uint32_t v[] = {p->in.tp, p->in.pp, p->in.vpp, p->in.cp, p->in.dp, p->in.mbs};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) table_u64(t, k++, v[i]);
    if (uneven) {
        char ends[32] = "-";
        if (p->in.first_stage_layers || p->in.last_stage_layers)
            snprintf(ends, sizeof ends, "%u/%u", p->in.first_stage_layers, p->in.last_stage_layers);
        table_str(t, k++, ends);
    }
    if (experts) {
        char ep[32];
        snprintf(ep, sizeof ep, "%u/%u", p->in.ep, p->in.etp);
        table_str(t, k++, ep);
    }
    if (!tail) return k;
    table_str(t, k++, recompute_name(p->in.recompute));
    table_str(t, k++, sharding_name(p->in.sharding));
    table_f64(t, k++, plan_gb(p->total_bytes));
    return k;
}

/* The columns of layout_cells. Returns how many. */
static int layout_cols(TableCol *cols, int show_stack, int uneven, int experts, int tail)
{
    int nc = 0;
    if (show_stack) cols[nc++] = (TableCol){"stack", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, 0};
    static const char *const ints[] = {"tp", "pp", "vpp", "cp", "dp", "mbs"};
    for (int i = 0; i < 6; i++) cols[nc++] = (TableCol){ints[i], NULL, NULL, TC_U64, 0, 0};
    if (uneven) cols[nc++] = (TableCol){"ends", "first/last", "layers", TC_STR, 0, 0};
    if (experts) cols[nc++] = (TableCol){"experts", "ep/etp", NULL, TC_STR, 0, 0};
    if (!tail) return nc;
    cols[nc++] = (TableCol){"recompute", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"sharding", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"memory", NULL, "GB", TC_F64, 2, 0};
    return nc;
}

static int any_uneven(const Plan *p, int n)
{
    int u = 0;
    for (int i = 0; i < n; i++) u |= p[i].in.first_stage_layers || p[i].in.last_stage_layers;
    return u;
}

/* Whether any plan splits experts (the ep/etp column). */
static int any_experts(const Plan *p, int n)
{
    int x = 0;
    for (int i = 0; i < n; i++) x |= p[i].in.ep > 1 || p[i].in.etp > 1;
    return x;
}

/* The text view: the stack and uneven-stage columns only when they vary. What decides between layouts comes
 * first, beside the layout: tokens/s, step time, memory and the headroom left of the GPU's capacity (GB and
 * %); MFU, recompute and sharding follow (a second column group when the table passes 100 columns, each
 * group starting with the rank). The FP8 MFU is in csv/json. */
static Table *top_table(const Plan *top, const uint32_t *variants, int n, int show_variants, int show_stack)
{
    int uneven = any_uneven(top, n), experts = any_experts(top, n);
    TableCol cols[24] = {{"rank", NULL, NULL, TC_U64, 0, TF_KEY}};
    int nc = 1 + layout_cols(cols + 1, show_stack, uneven, experts, 0);
    cols[nc++] = (TableCol){"tokens_per_s", "tokens/s", NULL, TC_F64, 0, 0};
    cols[nc++] = (TableCol){"step_s", "step", "s", TC_F64, 3, 0};
    cols[nc++] = (TableCol){"memory", NULL, "GB", TC_F64, 2, 0};
    cols[nc++] = (TableCol){"headroom_gb", "free", "GB", TC_F64, 2, 0};
    cols[nc++] = (TableCol){"headroom_pct", "free", "%", TC_F64, 1, 0};
    cols[nc++] = (TableCol){"mfu_bf16", "MFU", "% bf16", TC_F64, 1, 0};
    cols[nc++] = (TableCol){"recompute", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"sharding", NULL, NULL, TC_STR, 0, 0};
    if (show_variants) cols[nc++] = (TableCol){"variants", "+var", NULL, TC_STR, 0, TF_LEFT};
    Table *t = table_new(cols, nc);
    for (int i = 0; t && i < n; i++) {
        const Plan *p = &top[i];
        table_row(t);
        int k = 0;
        table_u64(t, k++, (uint64_t)i + 1);
        k = layout_cells(t, k, p, show_stack, uneven, experts, 0);
        /* headroom: what is left of the GPU's memory (capacity - total; negative past capacity) */
        double free_gb = plan_gb(p->capacity_bytes) - plan_gb(p->total_bytes);
        table_f64(t, k++, p->tokens_per_s);
        table_f64(t, k++, p->time.step_s);
        table_f64(t, k++, plan_gb(p->total_bytes));
        table_f64(t, k++, free_gb);
        table_f64(t, k++, p->capacity_bytes ? 100.0 * free_gb / plan_gb(p->capacity_bytes) : 0.0);
        table_f64(t, k++, p->mfu_bf16_pct);
        table_str(t, k++, recompute_name(p->in.recompute));
        table_str(t, k++, sharding_name(p->in.sharding));
        if (show_variants && variants[i]) {
            char vv[16];
            snprintf(vv, sizeof vv, "+%u", variants[i]);
            table_str(t, k, vv);
        }
    }
    return t;
}

/* The largest memory term of p: what a layout that does not fit spends most on. */
static MemTermId largest_term(const Plan *p)
{
    MemTermId m = 0;
    for (int i = 1; i < MT_COUNT_; i++)
        if (p->mem[i].bytes > p->mem[m].bytes) m = (MemTermId)i;
    return m;
}

/* GB past the memory limit (--max-mem-frac of the GPU's memory) */
static double over_gb(const Plan *p) { return plan_gb(p->total_bytes) - plan_gb(p->limit_bytes); }

static Table *nearest_table(const Plan *near, int n, int show_stack)
{
    int uneven = any_uneven(near, n), experts = any_experts(near, n);
    TableCol cols[20];
    int nc = layout_cols(cols, show_stack, uneven, experts, 1);
    cols[nc - 1].name = "needs"; /* the memory column: what the layout needs */
    cols[nc++] = (TableCol){"over", NULL, "GB", TC_F64, 2, 0};
    cols[nc++] = (TableCol){"largest_term", "largest term", NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"largest", NULL, "GB", TC_F64, 2, 0};
    Table *t = table_new(cols, nc);
    for (int i = 0; t && i < n; i++) {
        const Plan *p = &near[i];
        MemTermId m = largest_term(p);
        table_row(t);
        int k = layout_cells(t, 0, p, show_stack, uneven, experts, 1);
        table_f64(t, k++, over_gb(p));
        table_str(t, k++, mem_term_name(m));
        table_f64(t, k++, plan_gb(p->mem[m].bytes));
    }
    return t;
}

/* Nothing fits: the closest layouts and what binds, on f. */
static int print_nearest(FILE *f, const Plan *near, int n, const PlanArgs *a, int show_stack)
{
    table_put_prose(
        f, "nothing fits: no layout of %s on %u x %s stays within the memory limit of %.2f GB (%.0f %% of %.2f).\n",
        a->in.model->name, a->gpus, a->in.gpu->name,
        n ? plan_gb(near[0].limit_bytes) : a->in.max_mem_frac * plan_gb(a->in.gpu->hbm_bytes), 100 * a->in.max_mem_frac,
        plan_gb(a->in.gpu->hbm_bytes));
    if (!n) return 0;
    const Plan *p = &near[0];
    MemTermId m = largest_term(p);
    Err e;
    Table *t = nearest_table(near, n, show_stack);
    if (!t) return 1;
    char title[160];
    snprintf(title, sizeof title, "the %d layout%s closest to fitting (memory per GPU, the most-loaded stage):", n,
             n == 1 ? "" : "s");
    table_set_title(t, title);
    Status st = table_write(t, TABLE_TEXT, f, &e);
    table_free(t);
    if (st) return 1;
    table_put_prose(
        f,
        "binding constraint: memory. The closest needs %.2f GB, %.2f GB (%.1f %%) over the limit; its largest term is "
        "%s "
        "(%s, %.2f GB, %.0f %% of it). More GPUs, a recipe with fewer bytes per parameter or a GPU with more "
        "memory would help; every recompute and sharding choice was already tried.\n",
        plan_gb(p->total_bytes), over_gb(p), 100.0 * over_gb(p) / plan_gb(p->limit_bytes), mem_term_name(m),
        mem_category_name(mem_term_category(m)), plan_gb(p->mem[m].bytes),
        100.0 * (double)p->mem[m].bytes / (double)p->total_bytes);
    return 0;
}

static void add_stats(SweepStats *sum, const SweepStats *s)
{
    sum->evaluated += s->evaluated, sum->valid += s->valid, sum->oom += s->oom, sum->folded += s->folded;
    for (int r = 0; r < REJECT_COUNT_; r++) sum->rejected[r] += s->rejected[r];
}

static void print_stats(FILE *f, const SweepStats *st, uint64_t gbs, int gbs_default, uint32_t seq)
{
    table_put_prose(f, "evaluated %llu plans: %llu valid, %llu fit, %llu out of memory, %llu invalid\n",
                    (unsigned long long)st->evaluated, (unsigned long long)st->valid,
                    (unsigned long long)(st->valid - st->oom), (unsigned long long)st->oom,
                    (unsigned long long)(st->evaluated - st->valid));
    table_put_prose(f, "  global batch %llu sequences of %u tokens%s\n", (unsigned long long)gbs, seq,
                    gbs_default ? " (the default, ~2M tokens; --gbs to set)" : "");
    if (st->folded)
        table_put_prose(f, "  %llu near-duplicates folded into the listed plans (+var; --all lists them)\n",
                        (unsigned long long)st->folded);
    for (int r = 1; r < REJECT_COUNT_; r++)
        if (st->rejected[r])
            fprintf(f, "  invalid: %-58s %llu\n", plan_reject_name((PlanReject)r), (unsigned long long)st->rejected[r]);
}

static Status sweep_html(FILE *f, const void *ctx, Err *e) { return html_sweep_page(f, ctx, e); }

/* --format html: every fitting layout (collected while the sweep runs) with the best K. */
static int emit_html(const char *cmd, const PlanArgs *a, Table *points, const Plan *top, int n, const SweepStats *st,
                     uint64_t gbs, uint32_t seq)
{
    char *stats = NULL, title[256], sub[256], sl[STACK_LABEL_MAX];
    size_t len = 0;
    FILE *m = open_memstream(&stats, &len);
    if (!m) return cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    print_stats(m, st, gbs, !a->in.gbs, seq);
    fclose(m);
    snprintf(title, sizeof title, "fp8plan sweep: %s on %u x %s", a->in.model->name, a->gpus, a->in.gpu->name);
    snprintf(sub, sizeof sub,
             "every TP x PP x VPP x CP x DP x micro-batch x recompute x distributed optimizer x recipe; "
             "global batch %llu sequences; stack %.80s",
             (unsigned long long)gbs, a->stacks ? a->stacks : stack_label(a->in.stack, sl, sizeof sl));
    SweepPage pg = {points,
                    top,
                    n,
                    stats,
                    title,
                    sub,
                    n ? top[0].capacity_bytes : 0,
                    n ? top[0].limit_bytes : 0,
                    a->in.max_mem_frac};
    int rc = cli_emit_page(cmd, &a->out, sweep_html, &pg);
    free(stats);
    return rc;
}

/* A comma-separated list of distinct catalog names (--recipes, --stacks) into out; prints the error
 * and returns its exit code. */
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
        for (int i = 0; i < *n; i++)
            if (out[i] == x) return cli_usage(cmd, "--%s: '%s' is named twice", what, tok);
        out[(*n)++] = x; /* distinct catalog rows: at most CATALOG_MAX_ROWS */
    }
    return 0;
}

/* After each swept stack: the options given on the command line win again. */
static void keep_given(PlanInput *in, void *ctx)
{
    const PlanArgs *a = ctx;
    plan_args_keep_given(a, &a->in, in);
}

typedef struct {
    Plan *plans; /* the kept plans of every group, then sorted */
    uint32_t *variants;
    int n;
    Table *points; /* --format html: every plan that fits */
    Plan *near;    /* the closest plans that do not fit */
    int nnear;
    const Recipe *invalid[CATALOG_MAX_ROWS]; /* --per-recipe: recipes with no valid layout at all */
    int ninvalid;
    SweepStats st;
} Found;

/* One sweep per group of recipes (all of them, or one each with --per-recipe); k kept per group. */
static int sweep_groups(const char *cmd, const PlanArgs *a, const Recipe **recs, int nrec,
                        const StackSpec *const *stacks, int nstk, int k, Found *out)
{
    int groups = a->per_recipe ? nrec : 1, per = a->per_recipe ? 1 : nrec;
    int near_k = a->per_recipe ? 1 : NEAREST;
    out->plans = calloc((size_t)k * (size_t)groups, sizeof *out->plans);
    out->variants = calloc((size_t)k * (size_t)groups, sizeof *out->variants);
    out->near = calloc((size_t)near_k * (size_t)groups, sizeof *out->near);
    Plan *near = calloc((size_t)near_k, sizeof *near);
    if (!out->plans || !out->variants || !out->near || !near) {
        free(near);
        Err e = {ST_NOMEM, "out of memory"};
        return cli_fail(cmd, &e);
    }
    int tty = isatty(STDERR_FILENO);
    for (int g = 0; g < groups; g++) {
        SweepSpec spec = {.base = a->in,
                          .recipes = recs + g * per,
                          .nrecipes = per,
                          .stacks = stacks,
                          .nstacks = nstk,
                          .after_stack = keep_given,
                          .after_stack_ctx = (void *)a,
                          .gpus = a->gpus,
                          .fold = !a->all,
                          .variants = out->variants + out->n,
                          .nearest = near,
                          .k_nearest = near_k,
                          .on_fit = out->points ? sweep_points_add : NULL,
                          .on_fit_ctx = out->points};
        SweepStats st;
        int n = 0;
        Err e;
        if (sweep_run(&spec, out->plans + out->n, k, &n, &st, tty ? progress : NULL, NULL, &e)) {
            free(near);
            return e.st == ST_USAGE ? cli_usage(cmd, "%s", e.msg) : cli_fail(cmd, &e);
        }
        out->n += n;
        add_stats(&out->st, &st);
        if (!n) /* this group fits nowhere: keep its closest */
            for (int i = 0; i < st.n_nearest; i++) out->near[out->nnear++] = near[i];
        if (!st.valid && a->per_recipe) out->invalid[out->ninvalid++] = recs[g];
    }
    free(near);
    return 0;
}

/* --per-recipe: the groups' plans ranked together (the variants move with their plans). */
static void rank_together(Found *f)
{
    for (int i = 1; i < f->n; i++) { /* insertion sort: a few rows */
        Plan p = f->plans[i];
        uint32_t v = f->variants[i];
        int j = i;
        for (; j > 0 && f->plans[j - 1].tokens_per_s < p.tokens_per_s; j--) {
            f->plans[j] = f->plans[j - 1];
            f->variants[j] = f->variants[j - 1];
        }
        f->plans[j] = p;
        f->variants[j] = v;
    }
}

/* The recipes (--recipes, or every one) and stacks (--stacks LIST|all, or none: the plan's) to sweep. */
static int sweep_lists(const char *cmd, const Catalog *cat, const PlanArgs *a, const void **recs, int *nrec,
                       const void **stacks, int *nstk)
{
    int rc;
    *nrec = *nstk = 0;
    if (a->recipes) {
        if ((rc = name_list(cmd, cat, "recipes", a->recipes, find_recipe, catalog_recipe_names, recs, nrec))) return rc;
    } else {
        for (int i = 0; i < cat->nrecipes; i++) recs[(*nrec)++] = &cat->recipes[i];
    }
    if (a->stacks && !strcmp(a->stacks, "all")) {
        for (int i = 0; i < cat->nstacks; i++) stacks[(*nstk)++] = &cat->stacks[i];
    } else if (a->stacks) {
        if ((rc = name_list(cmd, cat, "stacks", a->stacks, find_stack, catalog_stack_names, stacks, nstk))) return rc;
    }
    return 0;
}

/* The ranked plans as a table: text with its title (what was swept, the stack's overlaps the ranking rests on),
 * or one summary row per plan (csv/json). NULL: out of memory. */
static Table *result_table(const PlanArgs *a, const Found *f, const void *const *stacks, int nstk)
{
    Table *t;
    if (a->out.fmt != TABLE_TEXT) {
        t = plan_summary_new(1);
        for (int i = 0; t && i < f->n; i++) plan_summary_row(t, &f->plans[i], i + 1);
        return t;
    }
    t = top_table(f->plans, f->variants, f->n, !a->all, nstk > 1);
    if (!t) return NULL;
    char title[512], stk[300] = "", sl[STACK_LABEL_MAX];
    if (nstk <= 1 && f->n) /* the ranking rests on what the stack hides: say it */
        snprintf(stk, sizeof stk, ", stack %s (compute hides TP %.2f, DP %.2f, PP %.2f, EP %.2f of its collectives)",
                 stack_label(f->plans[0].in.stack, sl, sizeof sl), f->plans[0].in.overlap_tp, f->plans[0].in.overlap_dp,
                 f->plans[0].in.overlap_pp, f->plans[0].in.overlap_ep);
    else if (nstk <= 1)
        snprintf(stk, sizeof stk, ", stack %s",
                 stack_label(nstk ? (const StackSpec *)stacks[0] : a->in.stack, sl, sizeof sl));
    snprintf(title, sizeof title, "%s %d of %llu plans that fit: %s on %u x %s%s, ranked by tokens/s",
             a->per_recipe ? "best per recipe," : "best", f->n, (unsigned long long)(f->st.valid - f->st.oom),
             a->in.model->name, a->gpus, a->in.gpu->name, stk);
    table_set_title(t, title);
    return t;
}

/* After the table, on info: the recipes with no layout that fits (their closest), nothing valid, the sweep's
 * counts and, once a stack, how far to trust its plans. An exit code. */
static int sweep_tail(const char *cmd, FILE *info, const PlanArgs *a, const Catalog *cat, const Found *f, int nstk,
                      uint64_t gbs, uint32_t seq)
{
    int rc = 0;
    if ((f->nnear || f->ninvalid) && f->n && a->per_recipe) fprintf(info, "recipes with no layout that fits:\n");
    if (f->nnear && (!f->n || a->per_recipe)) {
        if (f->n || a->out.fmt != TABLE_TEXT || a->out.path) { /* the table went elsewhere, or some fit */
            for (int i = 0; i < f->nnear; i++)
                fprintf(info, "  %s: the closest (TP %u, PP %u, CP %u, DP %u, mbs %u) needs %.2f GB, %.2f GB over\n",
                        f->near[i].in.recipe->name, f->near[i].in.tp, f->near[i].in.pp, f->near[i].in.cp,
                        f->near[i].in.dp, f->near[i].in.mbs, plan_gb(f->near[i].total_bytes), over_gb(&f->near[i]));
        } else if (print_nearest(info, f->near, f->nnear, a, nstk > 1)) {
            Err e = {ST_IO, "write error"};
            rc = cli_fail(cmd, &e);
        }
    } else if (!f->n && !f->nnear) {
        fprintf(info, "nothing fits: no layout of %u GPUs is valid for %s (see the reasons below).\n", a->gpus,
                a->in.model->name);
    }
    for (int i = 0; !rc && i < f->ninvalid; i++)
        fprintf(info, "  %s: no valid layout (see the reasons below)\n", f->invalid[i]->name);
    if (!rc) print_stats(info, &f->st, gbs, !a->in.gbs, seq);
    for (int i = 0; !rc && a->out.fmt == TABLE_TEXT && i < f->n; i++) { /* how far to trust them: once a stack */
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = f->plans[j].in.stack == f->plans[i].in.stack;
        if (seen) continue;
        char trust[600];
        Err te;
        if (plan_trust_text(a->catalog, cat, &f->plans[i].in, trust, sizeof trust, &te))
            rc = cli_fail(cmd, &te);
        else
            table_put_prose(info, "%s\n", trust);
    }
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    const char *cmd = "sweep";
    static char help[8192], opts[6144];
    snprintf(help, sizeof help, "%s\n%s", sweep_help_head, plan_options_help(PO_RECIPES | PO_SWEEP, opts, sizeof opts));
    PlanArgs a;
    int rc = plan_args_parse(cmd, argc, argv, PO_RECIPES | PO_SWEEP, help, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.top > 10000) return cli_usage(cmd, "--top %u: at most 10000", a.top);
    int k = a.top_given ? (int)a.top : a.per_recipe ? 1 : 20;
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    const void *recs[CATALOG_MAX_ROWS], *stacks[CATALOG_MAX_ROWS];
    int nrec = 0, nstk = 0;
    Found f = {0};
    if (a.stack && a.stacks) {
        rc = cli_usage(cmd, "--stack and --stacks: give one");
        goto done;
    }
    if ((rc = plan_args_resolve(cmd, cat, &a, NULL))) goto done;
    if ((rc = sweep_lists(cmd, cat, &a, recs, &nrec, stacks, &nstk))) goto done;
    if (a.out.fmt == TABLE_HTML && !(f.points = sweep_points_new())) {
        rc = cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
        goto done;
    }
    if ((rc = sweep_groups(cmd, &a, (const Recipe **)recs, nrec, (const StackSpec *const *)stacks, nstk, k, &f)))
        goto done;
    if (a.per_recipe) rank_together(&f);
    SweepSpec gspec = {.base = a.in};
    uint64_t gbs = sweep_gbs(&gspec);
    uint32_t seq = a.in.seq ? a.in.seq : a.in.model->seq_len;
    if (f.points) {
        rc = emit_html(cmd, &a, f.points, f.plans, f.n, &f.st, gbs, seq);
        goto done;
    }
    Table *t = result_table(&a, &f, stacks, nstk);
    if (!t) {
        Err e = {ST_NOMEM, "out of memory"};
        rc = cli_fail(cmd, &e);
        goto done;
    }
    if (f.n || a.out.fmt != TABLE_TEXT) rc = cli_emit_table(cmd, t, &a.out);
    table_free(t);
    FILE *info = a.out.fmt == TABLE_TEXT && !a.out.path ? stdout : stderr;
    if (!rc) rc = sweep_tail(cmd, info, &a, cat, &f, nstk, gbs, seq);
done:
    table_free(f.points);
    free(f.plans);
    free(f.variants);
    free(f.near);
    free(cat);
    return rc;
}
