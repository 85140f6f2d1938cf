/* check/fidelity.c — plan every measured run and summarise the errors (see fidelity.h). */
#include "check/fidelity.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double GIB = 1073741824.0;

/* Does the list item p[0..n) name run r (its source_id, or source_id@gpu)? */
static int item_matches(const MeasuredRun *r, const char *p, size_t n)
{
    char src[MEASURED_ID_MAX * 2 + 2];
    snprintf(src, sizeof src, "%s@%s", r->source_id, r->gpu->name);
    size_t ns = strlen(r->source_id), nf = strlen(src);
    return (n == ns && !strncmp(p, r->source_id, n)) || (n == nf && !strncmp(p, src, n));
}

/* Is the run in the comma-separated hold-out list (source_id or source_id@gpu)? */
static int held_out(const MeasuredRun *r, const char *list)
{
    for (const char *p = list; p && *p;) {
        const char *q = strchr(p, ',');
        if (item_matches(r, p, q ? (size_t)(q - p) : strlen(p))) return 1;
        p = q ? q + 1 : NULL;
    }
    return 0;
}

/* The runs' distinct source ids, comma-separated, in file order (cut short when the buffer is full). */
static void known_sources(const MeasuredRun *runs, int n, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k < cap - 1; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(runs[j].source_id, runs[i].source_id);
        if (!seen) k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? ", " : "", runs[i].source_id);
    }
}

/* Every item of the hold-out list names a source of some run: a typo (`--holdout nosuch`, an empty
 * list) would otherwise hold out nothing and report a 0 % error over no runs. */
static Status check_holdout(const MeasuredRun *runs, int n, const char *list, Err *e)
{
    char known[384];
    for (const char *p = list ? list : "";;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = item_matches(&runs[i], p, len);
        if (!found) {
            known_sources(runs, n, known, sizeof known);
            if (!len)
                return err_set(e, ST_USAGE, "--holdout '%s': an empty source id (known source ids: %s)",
                               list ? list : "", known);
            return err_set(e, ST_USAGE, "--holdout: unknown source '%.*s' (known source ids: %s; or SOURCE@GPU)",
                           (int)len, p, known);
        }
        if (!q) return ST_OK;
        p = q + 1;
    }
}

static void add(FidelityGroup *g, double err)
{
    if (isnan(err)) return;
    g->mae = check_mean_next(g->mae, g->n, fabs(err));
    g->bias = check_mean_next(g->bias, g->n, err);
    g->n++;
}

static FidelityGroup *group(FidelityGroup *gs, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(gs[i].name, name)) return &gs[i];
    if (*n == FIDELITY_MAX_GROUPS) return NULL;
    FidelityGroup *g = &gs[(*n)++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    return g;
}

/* The predicted bytes of the kind a run published. */
static double kind_bytes(const Plan *p, MemKind k)
{
    switch (k) {
    case MEMK_ALLOCATED: return (double)p->alloc_bytes;
    case MEMK_RESERVED: return (double)p->reserved_bytes;
    default: return (double)p->total_bytes;
    }
}

Status fidelity_evaluate(const MeasuredRun *runs, int n, const char *holdout, double max_mem_frac, FidelityRow *rows,
                         FidelitySummary *sum, Err *e)
{
    memset(sum, 0, sizeof *sum);
    Status st = holdout ? check_holdout(runs, n, holdout, e) : ST_OK;
    if (st) return st;
    if (!holdout) holdout = FIDELITY_DEFAULT_HOLDOUT;
    static Plan p; /* about 8 KB; not re-entrant, like the CLI that calls it */
    for (int i = 0; i < n; i++) {
        const MeasuredRun *r = &runs[i];
        FidelityRow *o = &rows[i];
        memset(o, 0, sizeof *o);
        o->run = r;
        o->holdout = held_out(r, holdout);
        o->meas_tok = measured_tokens(r);
        o->meas_gib = r->mem_gib;
        o->pred_tok = o->tok_err = o->pred_gib = o->mem_err = o->total_gib = NAN;
        PlanInput in;
        measured_plan_input(r, &in);
        if (max_mem_frac > 0) in.max_mem_frac = max_mem_frac;
        Err pe;
        if (plan_build(&in, &p, &pe)) {
            if (pe.st != ST_USAGE) return err_set(e, pe.st, "%s: %s", r->id, pe.msg);
            snprintf(o->why, sizeof o->why, "%.190s", pe.msg);
            sum->unplanned++;
            continue;
        }
        o->planned = 1;
        o->time = p.time;
        o->pred_tok = p.tokens_per_s / (double)p.world;
        o->tok_err = check_rel_err(o->pred_tok, o->meas_tok); /* NAN when not published */
        o->total_gib = (double)p.total_bytes / GIB;
        o->pred_gib = kind_bytes(&p, r->mem_kind) / GIB;
        o->mem_err = check_rel_err(o->pred_gib, o->meas_gib);
        o->oom = p.verdict == PLAN_OOM;
        o->over_limit = !plan_may_fit(&p);
        o->uncertain = p.verdict == PLAN_UNCERTAIN;
        if (r->model->experts) { /* mixture-of-experts runs: their own groups */
            add(&sum->moe, o->tok_err);
            add(o->holdout ? &sum->moe_holdout : &sum->moe_dev, o->tok_err);
            FidelityGroup *mg = group(sum->moe_source, &sum->nmoe_sources, r->source_id);
            if (mg) add(mg, o->tok_err);
            mg = o->holdout ? NULL : group(sum->moe_dev_gpu, &sum->nmoe_dev_gpus, r->gpu->name);
            if (mg) add(mg, o->tok_err);
            sum->moe_false_oom += o->oom;
            sum->moe_uncertain += o->uncertain;
            continue;
        }
        sum->false_oom += o->oom;
        sum->uncertain += o->uncertain;
        sum->over_limit += o->over_limit;
        add(&sum->all, o->tok_err);
        add(o->holdout ? &sum->holdout : &sum->dev, o->tok_err);
        FidelityGroup *g = group(sum->stack, &sum->nstacks, r->stack->name);
        if (g) add(g, o->tok_err);
        g = group(sum->source, &sum->nsources, r->source_id);
        if (g) add(g, o->tok_err);
        if (!strcmp(r->source_id, FIDELITY_TABLE5_SOURCE)) add(&sum->table5, o->tok_err);
        add(&sum->mem_all, o->mem_err);
        if (r->mem_kind == MEMK_ALLOCATED || r->mem_kind == MEMK_RESERVED) {
            add(&sum->mem_traced, o->mem_err);
            if (!isnan(o->mem_err) && fabs(o->mem_err) > sum->mem_traced_max) sum->mem_traced_max = fabs(o->mem_err);
        }
    }
    snprintf(sum->all.name, sizeof sum->all.name, "all");
    snprintf(sum->dev.name, sizeof sum->dev.name, "dev (not held out)");
    snprintf(sum->holdout.name, sizeof sum->holdout.name, "hold-out");
    snprintf(sum->table5.name, sizeof sum->table5.name, "FP8-LM Table 5");
    snprintf(sum->mem_traced.name, sizeof sum->mem_traced.name, "memory, allocator-traced");
    snprintf(sum->mem_all.name, sizeof sum->mem_all.name, "memory, all published");
    snprintf(sum->moe.name, sizeof sum->moe.name, "mixture of experts");
    snprintf(sum->moe_dev.name, sizeof sum->moe_dev.name, "dev (not held out)");
    snprintf(sum->moe_holdout.name, sizeof sum->moe_holdout.name, "hold-out");
    return ST_OK;
}
