/* tui/view_compare.c — the Compare screen: several recipes side by side for the
 * Plan screen's model, GPU and layout, each with its change against the
 * baseline column, and FP8-LM Table 5's published figures where the setup is
 * one of the paper's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/plan_report.h"
#include "tui/model.h"
#include "tui/view.h"

enum { LABEL_W = 17, UNIT_W = 4, COL_W = 19 };

static void fmt_value(TuiQtyKind k, double v, char *buf, size_t n)
{
    switch (k) {
    case QK_BYTES: snprintf(buf, n, "%.3f", v / 1e9); break;
    case QK_SECONDS: snprintf(buf, n, "%.3f", v); break;
    case QK_FLAG: snprintf(buf, n, "%s", v != 0 ? "yes" : "NO"); break;
    case QK_BPP: snprintf(buf, n, "%.2f", v); break;
    case QK_PCT: snprintf(buf, n, "%.1f", v); break;
    default: snprintf(buf, n, "%.2f", v); break;
    }
}

static void fmt_delta(double v, double base, char *buf, size_t n)
{
    if (base == 0 || !isfinite(base) || !isfinite(v))
        snprintf(buf, n, "%s", v == base ? "=" : "-");
    else
        snprintf(buf, n, "%+.1f%%", 100.0 * (v - base) / base);
}

/* The published Table 5 row for column i, or NULL when the setup is not one of the paper's. */
static const TuiT5Row *published(const TuiState *s, int i)
{
    const PlanInput *in = &s->in;
    uint32_t seq = in->seq ? in->seq : in->model->seq_len;
    if (strcmp(in->gpu->name, "h100-sxm") || in->cp != 1) return NULL;
    for (int k = 0; k < s->nt5; k++) {
        const TuiT5Row *t = &s->t5[k];
        if (!strcmp(t->model, in->model->name) && !strcmp(t->recipe, s->slot[i]->name) && t->tp == in->tp &&
            t->pp == in->pp && t->dp == in->dp && t->mbs == in->mbs && t->seq == seq)
            return t;
    }
    return NULL;
}

static void row_line(const TuiState *s, TuiLines *L, int first, int ncol, int q)
{
    char line[208], v[32], d[32];
    const TuiQty *Q = &tui_qty[q];
    int at = snprintf(line, sizeof line, "%-*.*s%-*s", LABEL_W, LABEL_W - 1, Q->label, UNIT_W, Q->unit);
    int b = s->baseline, bok = s->cmp_ok[b];
    double base = bok ? plan_qty(&s->cmp[b], Q->q) : NAN;
    for (int i = first; i < first + ncol && at < (int)sizeof line; i++) {
        if (!s->cmp_ok[i]) {
            at += snprintf(line + at, sizeof line - (size_t)at, "%9s %8s ", "n/a", "");
            continue;
        }
        double val = plan_qty(&s->cmp[i], Q->q);
        fmt_value(Q->kind, val, v, sizeof v);
        if (i == b || Q->kind == QK_FLAG || !bok)
            d[0] = '\0';
        else
            fmt_delta(val, base, d, sizeof d);
        at += snprintf(line + at, sizeof line - (size_t)at, "%9s %8s ", v, d);
    }
    lines_add(L, SY_PLAIN, "%s", line);
}

/* Published memory / weight communication / throughput with the plan's error against them. */
static void published_lines(const TuiState *s, TuiLines *L, int first, int ncol, int width)
{
    int any = 0;
    for (int i = 0; i < s->nslots; i++) any |= published(s, i) != NULL;
    if (!any) return;
    lines_add(L, SY_PLAIN, "%s", "");
    lines_add(L, SY_HEAD, "FP8-LM Table 5, published (H100; the second number is the plan's error)");
    const char *const names[3] = {"memory (paper)", "weight comm", "samples/s"};
    for (int m = 0; m < 3; m++) {
        char line[208], v[32], d[32];
        int at = snprintf(line, sizeof line, "%-*s%-*s", LABEL_W, names[m], UNIT_W, m == 2 ? "1/s" : "GB");
        for (int i = first; i < first + ncol && at < (int)sizeof line; i++) {
            const TuiT5Row *t = published(s, i);
            double pub = !t ? NAN : m == 0 ? t->memory_gb : m == 1 ? t->weight_comm_gb : t->samples_per_s;
            if (isnan(pub) || !s->cmp_ok[i]) {
                at += snprintf(line + at, sizeof line - (size_t)at, "%9s %8s ", "-", "");
                continue;
            }
            const Plan *p = &s->cmp[i];
            double pred = m == 0 ? plan_gb(p->total_bytes) : m == 1 ? plan_gb(p->weight_comm_bytes) : p->samples_per_s;
            snprintf(v, sizeof v, "%.1f", pub);
            fmt_delta(pred, pub, d, sizeof d);
            at += snprintf(line + at, sizeof line - (size_t)at, "%9s %8s ", v, d);
        }
        lines_add(L, SY_PLAIN, "%s", line);
    }
    lines_wrap(L, SY_DIM, width, 0,
               "The paper's memory is a measurement with allocator slack and buffers the plan itemizes; fp8plan report "
               "seed checks these rows with their tolerances.");
}

int view_compare(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    TuiRect r = l->compare;
    const PlanInput *in = &s->in;
    uint32_t seq = in->seq ? in->seq : in->model->seq_len;
    paint_textf(p, r.y, r.x, r.w, SY_HEAD, "%s on %u %s %s: TP%u PP%u CP%u DP%u, micro-batch %u, seq %u, %s%s",
                in->model->name, in->tp * in->pp * in->cp * in->dp, paint_glyph(p, G_TIMES), in->gpu->name, in->tp,
                in->pp, in->cp, in->dp, in->mbs, seq, sharding_name(in->sharding),
                s->t5_preset >= 0 ? "  (FP8-LM Table 5 setup)" : "  (layout: Plan screen)");
    int ncol = (r.w - LABEL_W - UNIT_W) / COL_W, focus = s->field[SCR_COMPARE];
    if (ncol > s->nslots) ncol = s->nslots;
    if (ncol < 1) ncol = 1;
    int first = focus - ncol + 1 > 0 ? focus - ncol + 1 : 0;
    int y = r.y + 1, x = r.x + LABEL_W + UNIT_W;
    paint_text(p, y, r.x, LABEL_W, SY_DIM, first > 0 ? "< more" : "per GPU");
    for (int i = first; i < first + ncol; i++, x += COL_W) {
        char head[64];
        snprintf(head, sizeof head, "%s%s", s->slot[i]->name, i == s->baseline ? " *" : "");
        int hw = paint_cols(head);
        TuiStyle st = i == focus ? SY_FOCUS : SY_HEAD;
        paint_repeat(p, y, x, COL_W - 1, st, " ");
        paint_text(p, y, x + (COL_W - 1 > hw ? COL_W - 1 - hw : 0), COL_W - 1, st, head);
        paint_text(p, y + 1, x, COL_W - 1, SY_DIM, i == s->baseline ? "    value   (base)" : "    value  vs base");
    }
    if (first + ncol < s->nslots) paint_text(p, y, r.x + r.w - 6, 6, SY_DIM, "more >");

    enum { NL = 80 };
    TuiLine buf[NL];
    TuiLines L = {buf, 0, NL};
    for (int i = 0; i < s->nslots; i++) /* why a column is n/a, first */
        if (!s->cmp_ok[i]) {
            char msg[260];
            snprintf(msg, sizeof msg, "%s n/a: %s", s->slot[i]->name, s->cmp_err[i]);
            lines_wrap(&L, SY_BAD, r.w - 1, 2, msg);
        }
    for (int q = 0; q < TUI_NQTY; q++) {
        if (tui_qty[q].rule_before) lines_add(&L, SY_DIM, "%s", "");
        row_line(s, &L, first, ncol, q);
    }
    published_lines(s, &L, first, ncol, r.w - 1);
    TuiRect rows = {y + 2, r.x, r.h - 3, r.w};
    return lines_paint(&L, p, rows, s->scroll[SCR_COMPARE]);
}
