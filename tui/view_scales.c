/* tui/view_scales.c — the Scales screen: the seed's Table 1b, live. A tensor
 * shape in, then per scale granularity: payload, scale count and bytes, total,
 * and the saving against BF16, each with a bar of its bytes. */
#include <stdio.h>

#include "reports/seed_report.h"
#include "tui/model.h"
#include "tui/view.h"
#include "util/num.h"

/* The screen's row names (the table's format and granularity columns, in one). */
static const char *row_name(const SeedScaleRow *q)
{
    static const char *const names[GRAN_COUNT_] = {
        [GRAN_TENSOR] = "FP8 per-tensor", [GRAN_CHANNEL] = "FP8 per-channel", [GRAN_1X32] = "FP8 1x32 E8M0",
        [GRAN_1X128] = "FP8 1x128",       [GRAN_128X128] = "FP8 128x128",
    };
    return q->is_bf16 ? "BF16" : names[q->gran];
}

int view_scales(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    view_form(s, p, l->sc_form);
    TuiLine nb[6];
    TuiLines N = {nb, 0, 6};
    lines_wrap(&N, SY_DIM, l->sc_note.w - 1, 0,
               "Table 1b: one R x C weight in BF16 and in FP8 with each scale granularity (the weight only).");
    lines_paint(&N, p, l->sc_note, 0);

    TuiRect r = l->sc_table;
    SeedScaleRow rows[SEED_T1B_ROWS];
    Err e;
    if (seed_table1b_rows(s->sc_rows, s->sc_cols, rows, &e)) {
        paint_text(p, r.y, r.x, r.w, SY_BAD, e.msg);
        return 0;
    }
    char a[40], b[40], c[40];
    int y = r.y;
    paint_textf(p, y++, r.x, r.w, SY_HEAD, "%-16s %-5s %9s %11s %14s %8s %8s", "layout", "scale", "scales",
                "scale bytes", "total bytes", "/payload", "saving");
    int barw = r.w - 6 > 60 ? 60 : r.w - 6;
    for (int i = 0; i < SEED_T1B_ROWS && y < r.y + r.h; i++) {
        const SeedScaleRow *q = &rows[i];
        paint_textf(p, y++, r.x, r.w, SY_PLAIN, "%-16s %-5s %9s %11s %14s %7.3f%% %7.3f%%", row_name(q),
                    q->is_bf16 ? "-" : dtype_name(q->scale_dtype), num_fmt_grouped(q->scale_count, a, 40),
                    num_fmt_grouped(q->scale_bytes, b, 40), num_fmt_grouped(q->total_bytes, c, 40),
                    q->scale_of_payload_pct, q->saving_vs_bf16_pct);
        if (y >= r.y + r.h) break;
        /* payload and scale bytes on the BF16 total's scale */
        uint64_t v[2] = {q->payload_bytes, q->scale_bytes};
        int cells[2], cap;
        tui_bar_split(v, 2, rows[0].total_bytes, barw, cells, &cap);
        int x = r.x + 3;
        paint_repeat(p, y, x, cells[0], q->is_bf16 ? SY_CAT3 : SY_CAT0, paint_glyph(p, q->is_bf16 ? G_SEG3 : G_SEG0));
        paint_repeat(p, y, x + cells[0], cells[1], SY_CAT2, paint_glyph(p, G_SEG2));
        paint_repeat(p, y, x + cells[0] + cells[1], barw - cells[0] - cells[1], SY_FREE, paint_glyph(p, G_FREE));
        y++;
    }
    if (y < r.y + r.h)
        paint_textf(p, y++, r.x, r.w, SY_PLAIN, "FP8 payload %s B = %.3f %% of BF16's %s B",
                    num_fmt_grouped(rows[1].payload_bytes, a, 40), rows[1].payload_of_bf16_pct,
                    num_fmt_grouped(rows[0].total_bytes, b, 40));
    if (y < r.y + r.h) {
        int x = r.x;
        x += 1 + paint_text(p, y, x, 2, SY_CAT3, paint_glyph(p, G_SEG3));
        x += 2 + paint_text(p, y, x, r.w, SY_DIM, "BF16");
        x += 1 + paint_text(p, y, x, 2, SY_CAT0, paint_glyph(p, G_SEG0));
        x += 2 + paint_text(p, y, x, r.w, SY_DIM, "FP8 payload");
        x += 1 + paint_text(p, y, x, 2, SY_CAT2, paint_glyph(p, G_SEG2));
        x += 2 + paint_text(p, y, x, r.w, SY_DIM, "scales");
        paint_text(p, y, x, r.w - x, SY_DIM, "(bars: bytes against BF16's)");
    }
    return 0;
}
