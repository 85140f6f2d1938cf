/* tui/view.c — the frame (title, status, footer, help, too-small) and shared
 * view helpers (see view.h). */
#include "tui/view.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tui/fields.h"
#include "tui/keys.h"
#include "tui/prompt.h"

/* ---- lines ----------------------------------------------------------------------------------------------------- */

static TuiLine *lines_next(TuiLines *L)
{
    if (L->n >= L->max) return NULL;
    TuiLine *ln = &L->v[L->n++];
    ln->glyph = -1;
    ln->section = 0;
    ln->st = ln->glyph_st = SY_PLAIN;
    ln->text[0] = '\0';
    return ln;
}

/* The next line with its text formatted from fmt, in style st; NULL when L is full. */
static TuiLine *lines_vadd(TuiLines *L, TuiStyle st, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static TuiLine *lines_vadd(TuiLines *L, TuiStyle st, const char *fmt, va_list ap)
{
    TuiLine *ln = lines_next(L);
    if (!ln) return NULL;
    vsnprintf(ln->text, sizeof ln->text, fmt, ap);
    ln->st = st;
    return ln;
}

void lines_add(TuiLines *L, TuiStyle st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lines_vadd(L, st, fmt, ap);
    va_end(ap);
}

void lines_section(TuiLines *L, const char *title)
{
    TuiLine *ln = lines_next(L);
    if (!ln) return;
    snprintf(ln->text, sizeof ln->text, "%s", title);
    ln->st = SY_HEAD, ln->section = 1;
}

const char *lines_section_of(const TuiLines *L, int first)
{
    for (int i = first < L->n ? first : L->n - 1; i >= 0; i--)
        if (L->v[i].section) return L->v[i].text;
    return "";
}

void lines_add_glyph(TuiLines *L, int glyph, TuiStyle gst, TuiStyle st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    TuiLine *ln = lines_vadd(L, st, fmt, ap);
    va_end(ap);
    if (ln) ln->glyph = glyph, ln->glyph_st = gst;
}

void lines_wrap(TuiLines *L, TuiStyle st, int width, int indent, const char *text)
{
    const char *s = text;
    int first = 1;
    if (width < 20) width = 20;
    while (*s) {
        int room = width - (first ? 0 : indent), len = (int)strlen(s), cut = len;
        if (len > room) { /* break at the last space that fits */
            cut = room;
            while (cut > 0 && s[cut] != ' ') cut--;
            if (cut == 0) cut = room;
        }
        lines_add(L, st, "%*s%.*s", first ? 0 : indent, "", cut, s);
        s += cut;
        while (*s == ' ') s++;
        first = 0;
    }
}

int lines_paint(const TuiLines *L, const TuiPaint *p, TuiRect r, int first)
{
    if (first > L->n - r.h) first = L->n - r.h;
    if (first < 0) first = 0;
    for (int i = 0; i < r.h && first + i < L->n; i++) {
        const TuiLine *ln = &L->v[first + i];
        int x = r.x, w = r.w;
        if (ln->glyph >= 0) {
            paint_repeat(p, r.y + i, x, 2, ln->glyph_st, paint_glyph(p, (TuiGlyph)ln->glyph));
            x += 3, w -= 3;
        }
        paint_text(p, r.y + i, x, w, ln->st, ln->text);
    }
    return first;
}

/* ---- the form --------------------------------------------------------------------------------------------------- */

void view_form(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    const TuiField *f;
    int n = tui_fields(s->screen, &f);
    int lw = r.w >= 34 ? 14 : 13; /* label column */
    for (int i = 0; i < n && i < r.h; i++) {
        char val[96], shown[112];
        f[i].text(s, val, sizeof val);
        int focus = i == s->field[s->screen] && s->mode != MODE_HELP;
        if (focus)
            snprintf(shown, sizeof shown, "< %s >", val);
        else
            snprintf(shown, sizeof shown, "  %s", val);
        TuiStyle st = focus ? SY_FOCUS : SY_PLAIN;
        if (focus) paint_repeat(p, r.y + i, r.x, r.w, st, " ");
        paint_text(p, r.y + i, r.x, 1, focus ? SY_FOCUS : SY_PLAIN, focus ? paint_glyph(p, G_SEL) : " ");
        paint_text(p, r.y + i, r.x + 1, lw, st, f[i].label);
        paint_text(p, r.y + i, r.x + 1 + lw, r.w - 1 - lw, st, shown);
    }
}

/* ---- frame ------------------------------------------------------------------------------------------------------ */

static void view_title(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    TuiRect r = l->title;
    paint_repeat(p, r.y, r.x, r.w, SY_TITLE, " ");
    int x = paint_text(p, r.y, 0, r.w, SY_TITLE, " fp8plan ");
    x += paint_text(p, r.y, x, r.w - x, SY_TITLE, paint_glyph(p, G_VRULE));
    for (int i = 0; i < SCR_COUNT_; i++) {
        TuiStyle st = i == (int)s->screen ? SY_TAB_ON : SY_TITLE;
        x += paint_textf(p, r.y, x, r.w - x, st, " %d %s ", i + 1, tui_screen_name((TuiScreen)i));
    }
    const char *right = "F1/? help ";
    int rw = paint_cols(right);
    if (x + rw + 1 <= r.w) paint_text(p, r.y, r.w - rw, rw, SY_TITLE, right);
}

static void view_status(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    TuiRect r = l->status;
    if (s->mode == MODE_PROMPT) {
        char label[160], preview[200];
        tui_prompt_describe(s, label, sizeof label, preview, sizeof preview);
        int x = paint_text(p, r.y, 0, r.w, SY_HEAD, label);
        x += paint_text(p, r.y, x, r.w - x, SY_PLAIN, s->prompt.text);
        x += paint_text(p, r.y, x, r.w - x, SY_FOCUS, " ");
        if (s->status[0])
            paint_text(p, r.y, x + 1, r.w - x - 1, s->status_err ? SY_BAD : SY_DIM, s->status);
        else
            paint_text(p, r.y, x + 1, r.w - x - 1, SY_DIM, preview);
        return;
    }
    if (s->status[0]) {
        paint_text(p, r.y, 0, r.w, s->status_err ? SY_BAD : SY_GOOD, s->status);
        return;
    }
    const TuiField *f = s->mode == MODE_NORMAL ? tui_focused_field(s) : NULL;
    if (f) paint_textf(p, r.y, 0, r.w, SY_DIM, "%s: %s", f->label, f->hint);
}

static void view_footer(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    TuiRect r = l->footer;
    TuiHint h[48];
    int n = tui_footer(s, r.w, h, 48), x = 0;
    for (int i = 0; i < n; i++) {
        x += paint_text(p, r.y, x, r.w - x, SY_KEY, h[i].key);
        x += paint_textf(p, r.y, x, r.w - x, SY_PLAIN, " %s ", h[i].label);
    }
}

static void view_too_small(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    (void)s;
    char a[96], b[96];
    snprintf(a, sizeof a, "too small: have %d%s%d, need %d%s%d", l->cols, paint_glyph(p, G_TIMES), l->rows,
             l->need_cols, paint_glyph(p, G_TIMES), l->need_rows);
    snprintf(b, sizeof b, "enlarge the terminal, or press q to quit");
    const char *msg[3] = {"fp8plan tui", a, b};
    int y0 = l->rows / 2 - 1;
    for (int i = 0; i < 3; i++) {
        int w = paint_cols(msg[i]), x = (l->cols - w) / 2;
        paint_text(p, y0 + i, x < 0 ? 0 : x, l->cols, i == 1 ? SY_BAD : SY_HEAD, msg[i]);
    }
}

static int view_help(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    char text[160][160];
    int n = tui_help_lines(s, text, 160);
    TuiLine buf[160];
    TuiLines L = {buf, 0, 160};
    for (int i = 0; i < n; i++) {
        TuiStyle st = text[i][0] && text[i][0] != ' ' ? SY_HEAD : SY_PLAIN;
        lines_add(&L, st, "%s", text[i]);
    }
    TuiRect r = l->body;
    r.x += 1, r.w -= 1;
    return lines_paint(&L, p, r, s->help_scroll);
}

int tui_draw(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    erase();
    if (l->too_small) {
        view_too_small(s, l, p);
        return 0;
    }
    int first;
    view_title(s, l, p);
    if (s->mode == MODE_HELP) {
        first = view_help(s, l, p);
    } else {
        switch (s->screen) {
        case SCR_PLAN: first = view_plan(s, l, p); break;
        case SCR_COMPARE: first = view_compare(s, l, p); break;
        case SCR_SCALES: first = view_scales(s, l, p); break;
        case SCR_SCALING: first = view_scaling(s, l, p); break;
        default: first = view_formats(s, l, p); break;
        }
    }
    view_status(s, l, p);
    view_footer(s, l, p);
    return first;
}
