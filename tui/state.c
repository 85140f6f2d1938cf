/* tui/state.c — the TUI state: creation, Table 5 rows, recomputation (see state.h). */
#include "tui/state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/fp8lm_table5.h"
#include "reports/scaling_report.h"

static const Recipe *first_recipe(const Catalog *c, const char *name, int fallback)
{
    const Recipe *r = catalog_recipe(c, name);
    if (!r && fallback < c->nrecipes) r = &c->recipes[fallback];
    return r;
}

TuiState *tui_state_new(const Catalog *cat, const PlanInput *in)
{
    if (!cat || !in || !in->model || !in->gpu || !in->recipe) return NULL;
    TuiState *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cat = cat;
    s->in = *in;
    /* the seed's comparison: Megatron BF16, Transformer Engine FP8, FP8-LM */
    static const char *const seed3[] = {"megatron-bf16", "te-fp8", "fp8lm"};
    for (int i = 0; i < 3 && i < cat->nrecipes; i++) {
        const Recipe *r = first_recipe(cat, seed3[i], i);
        if (r) s->slot[s->nslots++] = r;
    }
    s->t5_preset = -1;
    s->sc_rows = s->sc_cols = 4096;
    s->dcfg = (DelayedCfg){DT_E4M3, 4, AMAX_ALGO_MAX, 0};
    tui_scenario_load(s, SCN_SPIKE);
    s->fx_value = 0.3;
    s->fx_fmt = DT_E4M3;
    s->fx_scale = 1.0f;
    s->fx_sat = FP8_SATFINITE;
    return s;
}

void tui_state_free(TuiState *s)
{
    if (s) free(s->trust_rows);
    free(s);
}

void tui_state_set_trust(TuiState *s, FidelityRow *rows, int n, const char *note)
{
    free(s->trust_rows);
    s->trust_rows = rows, s->ntrust = rows ? n : 0;
    snprintf(s->trust_note, sizeof s->trust_note, "%s", note ? note : "");
}

void tui_status(TuiState *s, int is_error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->status, sizeof s->status, fmt, ap);
    va_end(ap);
    s->status_err = is_error;
}

/* ---- FP8-LM Table 5 ------------------------------------------------------------------------------------ */

Status tui_state_load_t5(TuiState *s, const char *text, size_t len, const char *fname, Err *e)
{
    s->nt5 = 0;
    int n = 0;
    T5Row *rows = calloc(T5_MAX_ROWS, sizeof *rows);
    Status st = rows ? t5_parse(s->cat, text, len, fname, rows, &n, e) : err_set(e, ST_NOMEM, "out of memory");
    for (int r = 0; !st && r < n && s->nt5 < TUI_T5_MAX; r++) {
        const T5Row *row = &rows[r];
        TuiT5Row *t = &s->t5[s->nt5++];
        snprintf(t->model, sizeof t->model, "%s", row->model_name);
        snprintf(t->recipe, sizeof t->recipe, "%s", row->recipe_name);
        snprintf(t->column, sizeof t->column, "%s", row->column);
        t->tp = row->tp, t->pp = row->pp, t->dp = row->dp, t->mbs = row->mbs, t->seq = row->seq;
        t->memory_gb = row->memory_gb, t->weight_comm_gb = row->weight_comm_gb, t->samples_per_s = row->samples_per_s;
    }
    free(rows);
    return st;
}

/* ---- delayed-scaling scenarios ---------------------------------------------------------------------------- */

const char *tui_scenario_name(TuiScenario scn)
{
    static const char *const names[SCN_COUNT_] = {
        [SCN_SPIKE] = "spike to 640",  [SCN_STEADY] = "steady", [SCN_GROWTH] = "growing x1.5/step",
        [SCN_SPECIAL] = "0, inf, nan", [SCN_CUSTOM] = "custom",
    };
    return (unsigned)scn < SCN_COUNT_ ? names[scn] : "?";
}

void tui_scenario_load(TuiState *s, TuiScenario scn)
{
    s->scenario = scn;
    if (scn == SCN_CUSTOM) return;
    s->ntrace = SCALING_TRACE_STEPS;
    scaling_steady_trace(s->trace); /* an amax near 1 (reports/scaling_report.h) */
    switch (scn) {
    case SCN_SPIKE: /* the seed's worked example: one step sees amax 640 */
        scaling_spike_trace(s->trace);
        s->step_cur = 6;
        break;
    case SCN_GROWTH: /* the amax outruns a scale computed from the past */
        for (int i = 0; i < 16; i++) s->trace[i] = powf(1.5f, (float)i);
        s->step_cur = 1;
        break;
    case SCN_SPECIAL: /* TE's policies: 0, Inf and NaN keep the scale; a tiny amax gives FLT_MAX */
        s->trace[3] = 0.0f;
        s->trace[6] = INFINITY;
        s->trace[9] = NAN;
        s->trace[12] = 1e-40f;
        s->step_cur = 3;
        break;
    default: s->step_cur = 0; break;
    }
}

static void simulate(TuiState *s)
{
    float *hist = malloc(sizeof *hist * (s->dcfg.hist_len ? s->dcfg.hist_len : 1));
    DelayedState ds;
    s->sim_ok = 0;
    if (!hist) {
        err_set(&s->sim_err, ST_NOMEM, "out of memory for an amax history of %u", s->dcfg.hist_len);
        return;
    }
    if (!delayed_init(&ds, &s->dcfg, hist, &s->sim_err)) {
        for (int i = 0; i < s->ntrace; i++) delayed_step(&ds, s->trace[i], &s->steps[i]);
        s->sim_ok = 1;
    }
    free(hist);
    if (s->step_cur >= s->ntrace) s->step_cur = s->ntrace - 1;
    if (s->step_cur < 0) s->step_cur = 0;
}

/* ---- plans ------------------------------------------------------------------------------------------------ */

static void replan(TuiState *s)
{
    err_clear(&s->plan_err);
    /* as the CLI: without --etp the expert TP is the stack's default for this model and TP (issue 41) */
    if (!s->etp_given) s->in.etp = stack_default_etp(s->in.stack, s->in.model, s->in.tp);
    s->plan_ok = plan_build(&s->in, &s->plan, &s->plan_err) == ST_OK;
    for (int i = 0; i < s->nslots; i++) {
        PlanInput in = s->in;
        Err e;
        in.recipe = s->slot[i];
        s->cmp_ok[i] = plan_build(&in, &s->cmp[i], &e) == ST_OK;
        snprintf(s->cmp_err[i], sizeof s->cmp_err[i], "%.159s", s->cmp_ok[i] ? "" : e.msg);
    }
    if (s->baseline >= s->nslots) s->baseline = 0;
}

void tui_recompute(TuiState *s, unsigned act)
{
    if (act & ACT_REPLAN) replan(s);
    if (act & ACT_RESIM) simulate(s);
    /* Table 1b and the value explorer are computed by their views' pure
     * functions (tui/model.h) straight from the inputs: nothing cached. */
}

double tui_state_bytes_per_param(const TuiState *s, int sharded, double per_state[5])
{
    uint32_t ways = s->in.dp * s->in.cp;
    return recipe_state_bytes_per_param(&s->in.recipe->gemm, sharded, ways ? ways : 1, per_state);
}
