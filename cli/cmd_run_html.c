/* cli/cmd_run_html.c — `fp8plan run --format html -o FILE`: the run's
 * measurement as the tables reports/html_run.h charts. The accepted range of
 * each row is the check's own: exact (the planned value), at most the plan, or
 * the plan within the row's tolerance. */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "check/compare.h"
#include "reports/html_run.h"

enum { R_TERM, R_CAT, R_PLAN, R_MEAS, R_LO, R_HI, R_SPREAD, R_CHECK, R_VERDICT, R_COUNT };

/* The comparison's rows of one section, in bytes (memory) or seconds (time); with both_sides only the
 * rows that have a planned and a measured value. */
static Table *rows_table(const Comparison *c, CompareSection sec, int both_sides)
{
    const int seconds = sec == CMP_TIME;
    const TableCol cols[R_COUNT] = {
        [R_TERM] = {"term", NULL, NULL, TC_STR, 0, 0},
        [R_CAT] = {"category", NULL, NULL, TC_STR, 0, 0},
        [R_PLAN] = seconds ? (TableCol){"planned_s", "planned", "s", TC_F64, 6, TF_EXACT}
                           : (TableCol){"planned_bytes", "planned", "B", TC_U64, 0, TF_GROUP},
        [R_MEAS] = seconds ? (TableCol){"measured_s", "measured", "s", TC_F64, 6, TF_EXACT}
                           : (TableCol){"measured_bytes", "measured", "B", TC_U64, 0, TF_GROUP},
        [R_LO] = seconds ? (TableCol){"accept_lo_s", "accepted from", "s", TC_F64, 6, TF_EXACT}
                         : (TableCol){"accept_lo_bytes", "accepted from", "B", TC_F64, 0, TF_EXACT},
        [R_HI] = seconds ? (TableCol){"accept_hi_s", "to", "s", TC_F64, 6, TF_EXACT}
                         : (TableCol){"accept_hi_bytes", "to", "B", TC_F64, 0, TF_EXACT},
        [R_SPREAD] = {"spread_pct", "spread", "%", TC_F64, 1, 0},
        [R_CHECK] = {"check", NULL, NULL, TC_STR, 0, 0},
        [R_VERDICT] = {"verdict", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, R_COUNT);
    char buf[32];
    for (int i = 0; t && i < c->n; i++) {
        const MeasureRow *r = &c->rows[i];
        double lo, hi;
        if (r->section != sec || (both_sides && !(r->has_planned && r->has_measured))) continue;
        table_row(t);
        table_str(t, R_TERM, r->name);
        table_str(t, R_CAT, r->category ? r->category : "-");
        if (seconds) {
            if (r->has_planned) table_f64(t, R_PLAN, r->planned);
            if (r->has_measured) table_f64(t, R_MEAS, r->measured);
        } else {
            if (r->has_planned) table_u64(t, R_PLAN, (uint64_t)r->planned);
            if (r->has_measured) table_u64(t, R_MEAS, (uint64_t)r->measured);
        }
        if (check_accepted(r, &lo, &hi)) table_f64(t, R_LO, lo), table_f64(t, R_HI, hi);
        if (r->has_spread) table_f64(t, R_SPREAD, 100.0 * r->spread);
        table_str(t, R_CHECK, check_mode_text(r, buf, sizeof buf));
        table_str(t, R_VERDICT, measure_verdict_text(r));
    }
    return t;
}

/* Every step: loss and the four phases. */
static Table *steps_table(const Measurement *l)
{
    static const TableCol cols[] = {
        {"step", NULL, NULL, TC_U64, 0, 0},
        {"loss", NULL, "nats", TC_F64, 4, 0},
        {"forward_s", "forward", "s", TC_F64, 6, TF_EXACT},
        {"backward_s", "backward", "s", TC_F64, 6, TF_EXACT},
        {"communication_s", "communication", "s", TC_F64, 6, TF_EXACT},
        {"optimizer_s", "optimizer", "s", TC_F64, 6, TF_EXACT},
        {"step_s", "step", "s", TC_F64, 6, TF_EXACT},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    for (uint32_t i = 0; t && i < l->steps; i++) {
        table_row(t);
        table_u64(t, 0, (uint64_t)l->first_step + i + 1);
        table_f64(t, 1, (double)l->loss[i]);
        table_f64(t, 2, l->phase[PHASE_FWD][i]);
        table_f64(t, 3, l->phase[PHASE_BWD][i]);
        table_f64(t, 4, l->phase[PHASE_COMM][i]);
        table_f64(t, 5, l->phase[PHASE_OPT][i]);
        table_f64(t, 6, l->step_s[i]);
    }
    return t;
}

/* Bytes sent per step: the plan's, and the bus bytes the communicator counted, in all and per planner
 * collective the run or the plan has. */
static Table *comm_table(const Plan *p, const Measurement *l)
{
    static const TableCol cols[] = {
        {"term", NULL, NULL, TC_STR, 0, 0},
        {"planned_bytes", "planned", "B/step", TC_U64, 0, TF_GROUP},
        {"measured_bytes", "measured", "B/step", TC_F64, 0, 0},
        {"calls_per_step", "calls", "/step", TC_F64, 1, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    double steps = l->steps ? l->steps : 1;
    if (t) {
        table_row(t);
        table_str(t, 0, "all collectives");
        table_u64(t, 1, p->dp_comm_bytes + p->tp_comm_bytes + p->pp_comm_bytes + p->cp_comm_bytes);
        table_f64(t, 2, l->coll_total.bus_bytes / steps);
        table_f64(t, 3, (double)l->coll_total.calls / steps);
    }
    for (int i = 0; t && i < CO_COUNT_; i++) {
        if (!p->coll[i].calls && !l->coll[i].calls) continue;
        table_row(t);
        table_str(t, 0, coll_name((CollectiveId)i));
        table_u64(t, 1, p->coll[i].step_bytes);
        table_f64(t, 2, l->coll[i].bus_bytes / steps);
        table_f64(t, 3, (double)l->coll[i].calls / steps);
    }
    return t;
}

typedef struct {
    RunPage pg;
} Job;

static Status page(FILE *f, const void *ctx, Err *e) { return html_run_page(f, &((const Job *)ctx)->pg, e); }

int run_html(const RunSpec *a, const CliOut *out, const Plan *p, const Model *m, const Measurement *l,
             const Comparison *c, const Table *csv, const char *summary, const char *verdict)
{
    char title[256], sub[256], *text = NULL;
    const ModelSpec *s = &m->spec;
    snprintf(title, sizeof title, "fp8plan run: %s on %s, recipe %s", a->model, m->bk->name, m->recipe.name);
    snprintf(sub, sizeof sub,
             "%u layers, hidden %u, %u heads (%u KV), %s/%s/%s, seq %u, micro-batch %u x %u, %u steps; plan for %s "
             "(1 GPU), stack %s",
             s->layers, s->hidden, s->heads, s->kv_heads, norm_name(s->norm), mlp_name(s->mlp), pos_name(s->pos),
             m->seq, m->batch, m->microbatches, l->steps, p->in.gpu->name, p->in.stack ? p->in.stack->name : "none");
    Table *mem = rows_table(c, CMP_MEMORY, 1), *tim = rows_table(c, CMP_TIME, 0);
    Table *steps = steps_table(l), *comm = comm_table(p, l);
    size_t n = (summary ? strlen(summary) : 0) + strlen(verdict) + 4;
    int rc;
    if (!mem || !tim || !steps || !comm || !(text = malloc(n))) {
        rc = cli_fail("run", &(Err){ST_NOMEM, "out of memory"});
    } else {
        snprintf(text, n, "%s\n%s", summary ? summary : "", verdict);
        Job j = {{title, sub, mem, tim, comm, steps, csv, text}};
        CliOut page_out = {TABLE_HTML, out->path};
        rc = cli_emit_page("run", &page_out, page, &j);
    }
    free(text);
    table_free(mem), table_free(tim), table_free(steps), table_free(comm);
    return rc;
}
