/* tui/draw.h — the painter: styles, glyphs and clipped text on stdscr.
 *
 * Colour is used only when the shell says so (has_colors(), NO_COLOR unset,
 * no --no-color); otherwise styles map to bold/reverse/underline. Glyphs come
 * in two sets: ASCII, and Unicode blocks used only under a UTF-8 locale. In
 * monochrome every memory-bar segment has its own glyph (htop's "|#*@$%&."
 * idea), so stacked categories stay apart without colour. Text is clipped to
 * a width in display columns (every glyph used here is one column wide). */
#ifndef FP8PLAN_TUI_DRAW_H
#define FP8PLAN_TUI_DRAW_H

#include "tui/layout.h"

typedef enum {
    SY_PLAIN = 0,
    SY_TITLE,  /* title bar */
    SY_TAB_ON, /* the current screen's tab */
    SY_KEY,    /* a key name in the footer */
    SY_HEAD,   /* section and column headings */
    SY_FOCUS,  /* the focused field / column */
    SY_DIM,    /* secondary text */
    SY_GOOD,   /* FITS, ok */
    SY_BAD,    /* OOM, saturates, errors */
    SY_WARN,   /* flush, attention */
    SY_CAT0,   /* memory categories / bar segments 0..4, then free space */
    SY_CAT1,
    SY_CAT2,
    SY_CAT3,
    SY_CAT4,
    SY_FREE,
    SY_MARK, /* chart markers */
    SY_COUNT_
} TuiStyle;

typedef enum {
    G_SEG0 = 0, /* bar segments 0..4 (memory categories), then free space */
    G_SEG1,
    G_SEG2,
    G_SEG3,
    G_SEG4,
    G_FREE,
    G_CAP,   /* capacity marker inside an over-full bar */
    G_HRULE, /* horizontal rule */
    G_VRULE, /* vertical rule */
    G_TIMES, /* x as in 80x24 */
    G_ARROW, /* -> */
    G_DOT,   /* chart: amax observed */
    G_SAT,   /* chart: saturation bound */
    G_FLUSH, /* chart: flush bound */
    G_SEL,   /* selection marker (the focused field) */
    G_COUNT_
} TuiGlyph;

typedef struct {
    int color;   /* colour pairs in use */
    int unicode; /* UTF-8 glyphs allowed */
} TuiPaint;

/* Set up colour pairs (when p->color) — call after the curses screen exists. */
void paint_init(TuiPaint *p);

/* The glyph as a NUL-terminated string (ASCII or UTF-8). */
const char *paint_glyph(const TuiPaint *p, TuiGlyph g);

/* Text clipped to w columns at (y, x); returns the columns written. */
int paint_text(const TuiPaint *p, int y, int x, int w, TuiStyle st, const char *s);
int paint_textf(const TuiPaint *p, int y, int x, int w, TuiStyle st, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* n copies of a glyph (or any one-column string). */
void paint_repeat(const TuiPaint *p, int y, int x, int n, TuiStyle st, const char *g);
/* Clear a rectangle to blanks in style st. */
void paint_clear(const TuiPaint *p, TuiRect r, TuiStyle st);

/* Columns of UTF-8 text whose characters are one column wide each. */
int paint_cols(const char *s);

#endif
