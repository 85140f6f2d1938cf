/* tui/layout.c — rectangles from the terminal size (see layout.h). */
#include "tui/layout.h"

#include <string.h>

#include "tui/fields.h"

static TuiRect rect(int y, int x, int h, int w) { return (TuiRect){y, x, h, w}; }
static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void tui_layout(int rows, int cols, TuiLayout *l)
{
    memset(l, 0, sizeof *l);
    l->rows = rows, l->cols = cols;
    l->need_cols = TUI_MIN_COLS, l->need_rows = TUI_MIN_ROWS;
    l->too_small = rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS;
    if (l->too_small) return;

    l->title = rect(0, 0, 1, cols);
    l->body = rect(1, 0, rows - 3, cols);
    l->status = rect(rows - 2, 0, 1, cols);
    l->footer = rect(rows - 1, 0, 1, cols);
    const int y0 = l->body.y, bh = l->body.h;
    const int fw = cols >= 120 ? 34 : 30; /* form column: label + value */

    /* Plan: the form is one row per field */
    l->form = rect(y0, 0, PF_COUNT, fw);
    l->summary = rect(y0, fw + 1, PF_COUNT, cols - fw - 1);
    int dy = y0 + PF_COUNT, dh = bh - PF_COUNT;
    if (cols >= 160) {
        int lw = (cols - 1) / 2;
        l->details[0] = rect(dy, 0, dh, lw);
        l->details[1] = rect(dy, lw + 1, dh, cols - lw - 1);
        l->ndetails = 2;
    } else {
        l->details[0] = rect(dy, 0, dh, cols);
        l->ndetails = 1;
    }

    l->compare = l->body;

    l->sc_form = rect(y0, 0, SF_COUNT, fw);
    l->sc_note = rect(y0, fw + 1, SF_COUNT, cols - fw - 1);
    l->sc_table = rect(y0 + SF_COUNT + 1, 0, bh - SF_COUNT - 1, cols);

    int ch = clamp(bh / 2, DF_COUNT + 3, 20);
    l->dl_form = rect(y0, 0, DF_COUNT, fw);
    l->dl_detail = rect(y0 + DF_COUNT, 0, ch - DF_COUNT, fw);
    l->dl_chart = rect(y0, fw + 1, ch, cols - fw - 1);
    l->dl_table = rect(y0 + ch, 0, bh - ch, cols);

    int rh = 9;
    l->fx_form = rect(y0, 0, rh, fw);
    l->fx_result = rect(y0, fw + 1, rh, cols - fw - 1);
    l->fx_table = rect(y0 + rh, 0, bh - rh, cols);
}

int tui_rect_overlap(TuiRect a, TuiRect b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

int tui_rect_inside(TuiRect r, int rows, int cols)
{
    return r.h > 0 && r.w > 0 && r.y >= 0 && r.x >= 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}
