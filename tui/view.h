/* tui/view.h — the screens, drawn from a const state into the layout's rectangles.
 *
 * tui_draw() paints everything for the state as it is: the too-small screen,
 * or the title bar, the current screen's body (or the help), the status /
 * prompt line and the footer. The views compute nothing the planner or fp8/
 * does not already give them (tui/model.h formats and splits). */
#ifndef FP8PLAN_TUI_VIEW_H
#define FP8PLAN_TUI_VIEW_H

#include "tui/draw.h"
#include "tui/layout.h"
#include "tui/state.h"

/* Returns the first line shown of the screen's scrolled area (the details,
 * the Compare rows, the help), clamped to the text: the shell stores it back
 * so scrolling never runs past the end. */
int tui_draw(const TuiState *s, const TuiLayout *l, const TuiPaint *p);

/* ---- used by the screen files --------------------------------------------------------------------------- */

/* A line of a scrolled text area: text with one style, optionally led by a glyph. */
typedef struct {
    char text[208];
    TuiStyle st;
    int glyph; /* -1: none; else a TuiGlyph drawn in glyph_st before the text */
    TuiStyle glyph_st;
    int section; /* 1: a section title (named on the rule when scrolled past) */
} TuiLine;

typedef struct {
    TuiLine *v;
    int n, max;
} TuiLines;

void lines_add(TuiLines *L, TuiStyle st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void lines_section(TuiLines *L, const char *title);
/* The title of the section that line `first` belongs to ("" before any). */
const char *lines_section_of(const TuiLines *L, int first);
void lines_add_glyph(TuiLines *L, int glyph, TuiStyle gst, TuiStyle st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Word-wrap text into lines of at most width columns; later lines indented by `indent`. */
void lines_wrap(TuiLines *L, TuiStyle st, int width, int indent, const char *text);
/* Paint lines [first, first + r.h) into r; returns the first line actually shown (clamped). */
int lines_paint(const TuiLines *L, const TuiPaint *p, TuiRect r, int first);

/* The field list of a form screen, with the focused one marked. */
void view_form(const TuiState *s, const TuiPaint *p, TuiRect r);

int view_plan(const TuiState *s, const TuiLayout *l, const TuiPaint *p);
int view_compare(const TuiState *s, const TuiLayout *l, const TuiPaint *p);
int view_scales(const TuiState *s, const TuiLayout *l, const TuiPaint *p);
int view_scaling(const TuiState *s, const TuiLayout *l, const TuiPaint *p);
int view_formats(const TuiState *s, const TuiLayout *l, const TuiPaint *p);

#endif
