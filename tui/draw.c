/* tui/draw.c — styles, glyphs and clipped text (see draw.h). */
#include "tui/draw.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reports/chart_term.h"

/* The bar's glyphs are the terminal bars' (reports/chart_term.h); the rest, from G_HRULE on, the TUI's
 * own: ASCII, or Unicode (in colour the bar segments become solid blocks). */
_Static_assert((int)G_CAP == (int)TERM_GLYPH_CAP && (int)G_FREE == (int)TERM_GLYPH_FREE,
               "the TUI's bar glyphs are chart_term's");
static const char *const glyph_ascii[G_COUNT_ - G_HRULE] = {"-", "|", "x", "->", "o", "=", "_", ">"};
static const char *const glyph_utf8[G_COUNT_ - G_HRULE] = {
    "\xe2\x94\x80", /* ─ */
    "\xe2\x94\x82", /* │ */
    "\xc3\x97",     /* × */
    "\xe2\x86\x92", /* → */
    "\xe2\x97\x8f", /* ● */
    "\xe2\x95\x90", /* ═ */
    "\xe2\x95\x8c", /* ╌ */
    "\xe2\x96\xb6", /* ▶ */
};

const char *paint_glyph(const TuiPaint *p, TuiGlyph g)
{
    if ((unsigned)g >= G_COUNT_) return "?";
    if (g < G_HRULE) return term_bar_glyph(p->unicode, p->unicode && p->color && g <= G_SEG4 ? G_SEG0 : (int)g);
    return (p->unicode ? glyph_utf8 : glyph_ascii)[g - G_HRULE];
}

enum { PAIR_BASE = 1 };

void paint_init(TuiPaint *p)
{
    if (!p->color) return;
    start_color();
    short bg = use_default_colors() == OK ? -1 : COLOR_BLACK, dflt = bg < 0 ? -1 : COLOR_WHITE;
    static const short fg[SY_COUNT_] = {
        [SY_TITLE] = COLOR_BLACK, [SY_TAB_ON] = COLOR_BLACK, [SY_KEY] = COLOR_BLACK,   [SY_HEAD] = COLOR_CYAN,
        [SY_FOCUS] = COLOR_BLACK, [SY_GOOD] = COLOR_GREEN,   [SY_BAD] = COLOR_RED,     [SY_WARN] = COLOR_YELLOW,
        [SY_CAT0] = COLOR_BLUE,   [SY_CAT1] = COLOR_MAGENTA, [SY_CAT2] = COLOR_YELLOW, [SY_CAT3] = COLOR_CYAN,
        [SY_CAT4] = COLOR_WHITE,  [SY_MARK] = COLOR_YELLOW,
    };
    static const short bgs[SY_COUNT_] = {
        [SY_TITLE] = COLOR_CYAN, [SY_TAB_ON] = COLOR_WHITE, [SY_KEY] = COLOR_CYAN, [SY_FOCUS] = COLOR_YELLOW};
    for (int st = 1; st < SY_COUNT_; st++) {
        short b = bgs[st] ? bgs[st] : bg;
        init_pair((short)(PAIR_BASE + st - 1), fg[st] || bgs[st] ? fg[st] : dflt, b);
    }
}

static attr_t style_attr(const TuiPaint *p, TuiStyle st)
{
    if (st == SY_PLAIN) return A_NORMAL;
    if (p->color) {
        attr_t a = COLOR_PAIR(PAIR_BASE + st - 1);
        if (st == SY_HEAD || st == SY_BAD || st == SY_TAB_ON || st == SY_GOOD) a |= A_BOLD;
        if (st == SY_DIM || st == SY_FREE) a = A_DIM;
        return a;
    }
    switch (st) {
    case SY_TITLE:
    case SY_KEY:
    case SY_FOCUS: return A_REVERSE;
    case SY_TAB_ON:
    case SY_HEAD:
    case SY_GOOD:
    case SY_MARK: return A_BOLD;
    case SY_BAD: return A_BOLD | A_REVERSE;
    case SY_WARN: return A_BOLD | A_UNDERLINE;
    case SY_DIM:
    case SY_FREE: return A_DIM;
    default: return A_NORMAL;
    }
}

int paint_cols(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

int paint_text(const TuiPaint *p, int y, int x, int w, TuiStyle st, const char *s)
{
    if (y < 0 || y >= LINES || x < 0 || x >= COLS || w <= 0) return 0;
    if (x + w > COLS) w = COLS - x;
    /* bytes of the first w characters */
    size_t nb = 0;
    int cols = 0;
    while (s[nb] && cols < w) {
        nb++;
        while (((unsigned char)s[nb] & 0xC0) == 0x80) nb++;
        cols++;
    }
    if (!nb) return 0;
    attr_t a = style_attr(p, st);
    attron(a);
    mvaddnstr(y, x, s, (int)nb);
    attroff(a);
    return cols;
}

int paint_textf(const TuiPaint *p, int y, int x, int w, TuiStyle st, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return paint_text(p, y, x, w, st, buf);
}

void paint_repeat(const TuiPaint *p, int y, int x, int n, TuiStyle st, const char *g)
{
    char buf[1024];
    size_t gl = strlen(g), used = 0;
    if (n <= 0 || !gl) return;
    for (int i = 0; i < n && used + gl < sizeof buf; i++, used += gl) memcpy(buf + used, g, gl);
    buf[used] = '\0';
    paint_text(p, y, x, n, st, buf);
}

void paint_clear(const TuiPaint *p, TuiRect r, TuiStyle st)
{
    for (int y = r.y; y < r.y + r.h; y++) paint_repeat(p, y, r.x, r.w, st, " ");
}
