/* tui/layout.h — where everything goes, as a pure function of the terminal size.
 *
 *   row 0          title bar with the screen tabs
 *   rows 1..H-3    the body of the current screen (rectangles below)
 *   row H-2        status line / prompt
 *   row H-1        footer: the keys of this screen (from the key table)
 *
 * Below TUI_MIN_COLS x TUI_MIN_ROWS the layout says too_small and the shell
 * shows "too small: have WxH, need WxH" instead. No curses here: the unit
 * tests check that rectangles stay inside the terminal and do not overlap. */
#ifndef FP8PLAN_TUI_LAYOUT_H
#define FP8PLAN_TUI_LAYOUT_H

enum { TUI_MIN_COLS = 80, TUI_MIN_ROWS = 24 };

typedef struct {
    int y, x, h, w;
} TuiRect;

typedef struct {
    int rows, cols;
    int too_small, need_cols, need_rows;
    TuiRect title, body, status, footer;
    /* Plan: the input form, the memory/time summary beside it, details below
     * (two columns from 160 columns on) */
    TuiRect form, summary, details[2];
    int ndetails;
    /* Compare: the whole body */
    TuiRect compare;
    /* Scales: the shape form, a note beside it, Table 1b below */
    TuiRect sc_form, sc_note, sc_table;
    /* Scaling: knobs, the selected step explained under them, the chart beside, the per-step table below */
    TuiRect dl_form, dl_detail, dl_chart, dl_table;
    /* Formats: the explorer's inputs, its result beside them, the format table below */
    TuiRect fx_form, fx_result, fx_table;
} TuiLayout;

/* Fill l for a rows x cols terminal. */
void tui_layout(int rows, int cols, TuiLayout *l);

/* 1 when a and b share a cell; 1 when r lies inside (0, 0, rows, cols) with a positive size. */
int tui_rect_overlap(TuiRect a, TuiRect b);
int tui_rect_inside(TuiRect r, int rows, int cols);

#endif
