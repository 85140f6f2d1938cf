/* tui/export.c — the current screen as CSV (see export.h). */
#include "tui/export.h"

#include <math.h>
#include <stdio.h>

#include "reports/plan_report.h"
#include "reports/scaling_report.h"
#include "reports/seed_report.h"
#include "tui/keys.h"
#include "tui/model.h"
#include "util/fileio.h"

static Table *oom(Err *e) { return err_set(e, ST_NOMEM, "out of memory"), NULL; }

static Table *plan_csv(const TuiState *s, Err *e)
{
    if (!s->plan_ok) return err_set(e, ST_USAGE, "nothing to export: %s", s->plan_err.msg), NULL;
    Table *t = plan_summary_new(0);
    if (!t) return oom(e);
    plan_summary_row(t, &s->plan, 0);
    return t;
}

static Table *compare_csv(const TuiState *s, Err *e)
{
    Table *t = plan_summary_new(0);
    if (!t) return oom(e);
    for (int i = 0; i < s->nslots; i++)
        if (s->cmp_ok[i]) plan_summary_row(t, &s->cmp[i], 0);
    if (!table_rows(t)) {
        table_free(t);
        return err_set(e, ST_USAGE, "nothing to export: no column can be planned (%s)", s->cmp_err[0]), NULL;
    }
    return t;
}

/* `fp8plan scaling --format csv` for the trace shown (the same builder; tests/cli/tui_session.sh
 * checks that the two agree byte for byte). */
static Table *scaling_csv(const TuiState *s, Err *e)
{
    if (!s->sim_ok) return err_set(e, ST_USAGE, "nothing to export: %s", s->sim_err.msg), NULL;
    Table *t = scaling_table_new(&s->dcfg);
    if (!t) return oom(e);
    for (int i = 0; i < s->ntrace; i++) scaling_table_row(t, s->dcfg.fmt, &s->steps[i]);
    return t;
}

static Table *formats_csv(const TuiState *s, Err *e)
{
    static const TableCol cols[] = {
        {"format", NULL, NULL, TC_STR, 0, 0},
        {"input", NULL, NULL, TC_F64, 9, TF_SCI | TF_EXACT},
        {"scale", NULL, NULL, TC_F64, 9, TF_SCI | TF_EXACT},
        {"overflow", NULL, NULL, TC_STR, 0, 0},
        {"code", NULL, NULL, TC_STR, 0, 0},
        {"bits", NULL, NULL, TC_STR, 0, 0},
        {"decoded", NULL, NULL, TC_F64, 9, TF_SCI | TF_EXACT},
        {"dequantized", NULL, NULL, TC_F64, 9, TF_SCI | TF_EXACT},
        {"abs_error", NULL, NULL, TC_F64, 4, TF_SCI | TF_EXACT},
        {"rel_error", NULL, NULL, TC_F64, 4, TF_SCI | TF_EXACT},
        {"class", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return oom(e);
    const Dtype fmts[2] = {DT_E4M3, DT_E5M2};
    for (int i = 0; i < 2; i++) {
        TuiFx fx;
        char code[8];
        tui_fx_compute(s->fx_value, fmts[i], s->fx_scale, s->fx_sat, &fx);
        snprintf(code, sizeof code, "0x%02X", fx.code);
        table_row(t);
        table_str(t, 0, dtype_name(fmts[i]));
        table_f64(t, 1, fx.x);
        table_f64(t, 2, s->fx_scale);
        table_str(t, 3, s->fx_sat == FP8_SATFINITE ? "saturate" : "nan_inf");
        table_str(t, 4, code);
        table_str(t, 5, fx.bits);
        table_f64(t, 6, fx.value);
        table_f64(t, 7, fx.back);
        if (!isnan(fx.abs_err)) table_f64(t, 8, fx.abs_err);
        if (!isnan(fx.rel_err)) table_f64(t, 9, fx.rel_err);
        table_str(t, 10, tui_fx_class_name(fx.cls));
    }
    return t;
}

Table *tui_export_table(const TuiState *s, Err *e)
{
    switch (s->screen) {
    case SCR_PLAN: return plan_csv(s, e);
    case SCR_COMPARE: return compare_csv(s, e);
    case SCR_SCALES: return seed_table1b(s->sc_rows, s->sc_cols, e);
    case SCR_SCALING: return scaling_csv(s, e);
    default: return formats_csv(s, e);
    }
}

Status tui_export(const TuiState *s, const char *path, int *rows, Err *e)
{
    err_clear(e);
    Table *t = tui_export_table(s, e);
    if (!t) return e->st ? e->st : ST_NOMEM;
    OutFile of;
    Status st = outfile_open_flags(&of, path, OUT_NOWAIT, e); /* the session must not wait for a FIFO's reader */
    if (!st) st = outfile_finish(&of, table_write(t, TABLE_CSV, of.f, e), e);
    if (!st) *rows = table_rows(t);
    table_free(t);
    return st;
}

void tui_export_default_path(const TuiState *s, char *buf, size_t n)
{
    static const char *const names[SCR_COUNT_] = {"plan", "compare", "table1b", "scaling", "formats"};
    snprintf(buf, n, "fp8plan-%s.csv", names[s->screen < SCR_COUNT_ ? s->screen : 0]);
}
