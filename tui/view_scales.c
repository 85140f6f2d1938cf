/* tui/view_scales.c — the Scales screen: the seed's Table 1b, live. A tensor
 * shape in, then per scale granularity: payload, scale count and bytes, total,
 * and the saving against BF16, each with a bar of its bytes. */
#include <stdio.h>

#include "tui/model.h"
#include "tui/view.h"
#include "util/num.h"

int view_scales(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    view_form(s, p, l->sc_form);
    TuiLine nb[6];
    TuiLines N = {nb, 0, 6};
    lines_wrap(&N, SY_DIM, l->sc_note.w - 1, 0,
               "Table 1b: one R x C weight in BF16 and in FP8 with each scale granularity (the weight only).");
    lines_paint(&N, p, l->sc_note, 0);

    TuiRect r = l->sc_table;
    TuiScaleRow rows[TUI_SCALE_ROWS];
    Err e;
    if (tui_scale_rows(s->sc_rows, s->sc_cols, rows, &e)) {
        paint_text(p, r.y, r.x, r.w, SY_BAD, e.msg);
        return 0;
    }
    char a[40], b[40], c[40];
    int y = r.y;
    paint_textf(p, y++, r.x, r.w, SY_HEAD, "%-16s %-5s %9s %11s %14s %8s %8s", "layout", "scale", "scales",
                "scale bytes", "total bytes", "/payload", "saving");
    int barw = r.w - 6 > 60 ? 60 : r.w - 6;
    for (int i = 0; i < TUI_SCALE_ROWS && y < r.y + r.h; i++) {
        const TuiScaleRow *q = &rows[i];
        paint_textf(p, y++, r.x, r.w, SY_PLAIN, "%-16s %-5s %9s %11s %14s %7.3f%% %7.3f%%", q->name,
                    q->is_bf16 ? "-" : dtype_name(q->scale_dtype), num_fmt_grouped(q->n_scales, a, 40),
                    num_fmt_grouped(q->scale_bytes, b, 40), num_fmt_grouped(q->total, c, 40), q->scale_pct_of_payload,
                    q->saving_pct);
        if (y >= r.y + r.h) break;
        /* payload and scale bytes on the BF16 total's scale */
        uint64_t v[2] = {q->payload, q->scale_bytes};
        int cells[2], cap;
        tui_bar_split(v, 2, rows[0].total, barw, cells, &cap);
        int x = r.x + 3;
        paint_repeat(p, y, x, cells[0], q->is_bf16 ? SY_CAT3 : SY_CAT0, paint_glyph(p, q->is_bf16 ? G_SEG3 : G_SEG0));
        paint_repeat(p, y, x + cells[0], cells[1], SY_CAT2, paint_glyph(p, G_SEG2));
        paint_repeat(p, y, x + cells[0] + cells[1], barw - cells[0] - cells[1], SY_FREE, paint_glyph(p, G_FREE));
        y++;
    }
    if (y < r.y + r.h)
        paint_textf(p, y++, r.x, r.w, SY_PLAIN, "FP8 payload %s B = %.3f %% of BF16's %s B",
                    num_fmt_grouped(rows[1].payload, a, 40), rows[1].payload_pct_of_bf16,
                    num_fmt_grouped(rows[0].total, b, 40));
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
