/* tests/unit/test_tui.c — the TUI's parts without a terminal: the pure layout,
 * the memory bar's split, the key table (dispatch, footer, help text), the
 * value explorer and key scripts. Sessions are in test_tui_session.c. */
#include <curses.h>
#include <float.h>
#include <stdlib.h>

#include "fp8/scale.h"
#include "support/fixtures.h"
#include "support/tui_fixtures.h"
#include "test.h"
#include "tui/export.h"
#include "tui/fields.h"
#include "tui/keys.h"
#include "tui/layout.h"
#include "tui/model.h"
#include "tui/prompt.h"
#include "tui/script.h"
#include "tui/state.h"

static Catalog *cat;

/* ---- layout ------------------------------------------------------------------------------------------------ */

static void check_disjoint(const TuiRect *r, int n, int rows, int cols)
{
    for (int i = 0; i < n; i++) {
        CHECKF(tui_rect_inside(r[i], rows, cols), "%dx%d: rect %d (%d,%d %dx%d) outside", cols, rows, i, r[i].y, r[i].x,
               r[i].w, r[i].h);
        for (int j = i + 1; j < n; j++)
            CHECKF(!tui_rect_overlap(r[i], r[j]), "%dx%d: rects %d and %d overlap", cols, rows, i, j);
    }
}

static void test_layout_pure(void)
{
    for (int rows = 24; rows <= 100; rows += 7)
        for (int cols = 80; cols <= 300; cols += 11) {
            TuiLayout l;
            tui_layout(rows, cols, &l);
            CHECK(!l.too_small);
            TuiRect frame[] = {l.title, l.body, l.status, l.footer};
            check_disjoint(frame, 4, rows, cols);
            TuiRect plan[] = {l.title, l.form, l.summary, l.details[0], l.details[1], l.status, l.footer};
            check_disjoint(plan, l.ndetails == 2 ? 7 : 4, rows, cols);
            TuiRect scales[] = {l.sc_form, l.sc_note, l.sc_table, l.status};
            check_disjoint(scales, 4, rows, cols);
            TuiRect scaling[] = {l.dl_form, l.dl_detail, l.dl_chart, l.dl_table, l.status};
            check_disjoint(scaling, 5, rows, cols);
            TuiRect fx[] = {l.fx_form, l.fx_result, l.fx_table, l.status};
            check_disjoint(fx, 4, rows, cols);
            CHECK(l.form.h == PF_COUNT && l.dl_form.h >= DF_COUNT && l.fx_form.h > XF_COUNT);
            CHECK(l.ndetails == (cols >= 160 ? 2 : 1));
        }
}

static void test_layout_too_small(void)
{
    TuiLayout l;
    tui_layout(15, 60, &l);
    CHECK(l.too_small);
    CHECK_EQ_INT(l.need_cols, 80);
    CHECK_EQ_INT(l.need_rows, 24);
    tui_layout(24, 79, &l);
    CHECK(l.too_small);
    tui_layout(23, 200, &l);
    CHECK(l.too_small);
    tui_layout(24, 80, &l);
    CHECK(!l.too_small);
    tui_layout(1, 1, &l);
    CHECK(l.too_small);
}

/* ---- the memory bar ------------------------------------------------------------------------------------------ */

static void test_bar_split(void)
{
    int cells[5], cap;
    uint64_t v[5] = {50, 0, 1, 10, 5};
    int used = tui_bar_split(v, 5, 100, 40, cells, &cap);
    CHECK_EQ_INT(used, 26); /* round(66 * 40 / 100) */
    CHECK_EQ_INT(cells[0] + cells[1] + cells[2] + cells[3] + cells[4], used);
    CHECK_EQ_INT(cells[0], 20);
    CHECK_EQ_INT(cells[1], 0);
    CHECK_EQ_INT(cap, 40);
    /* over capacity: the bar is full and the capacity mark sits at capacity / sum */
    uint64_t o[2] = {150, 50};
    used = tui_bar_split(o, 2, 100, 40, cells, &cap);
    CHECK_EQ_INT(used, 40);
    CHECK_EQ_INT(cells[0], 30);
    CHECK_EQ_INT(cap, 20);
    /* three equal thirds of 10 cells: 4, 3, 3 (the earlier term wins the tie) */
    uint64_t t[3] = {1, 1, 1};
    tui_bar_split(t, 3, 3, 10, cells, &cap);
    CHECK(cells[0] == 4 && cells[1] == 3 && cells[2] == 3);
    /* nothing at all */
    uint64_t z[2] = {0, 0};
    CHECK_EQ_INT(tui_bar_split(z, 2, 0, 10, cells, &cap), 0);
}

/* ---- keys, footer, help -------------------------------------------------------------------------------------- */

static void test_screens_and_quit(void)
{
    TuiState *s = fx_tui_headline(cat);
    CHECK_EQ_INT(s->screen, SCR_PLAN);
    for (int i = 1; i <= SCR_COUNT_; i++) {
        fx_press(s, '\t');
        CHECK_EQ_INT(s->screen, i % SCR_COUNT_);
    }
    fx_press(s, KEY_BTAB);
    CHECK_EQ_INT(s->screen, SCR_FORMATS);
    fx_press(s, '3');
    CHECK_EQ_INT(s->screen, SCR_SCALES);
    fx_press(s, '?');
    CHECK_EQ_INT(s->mode, MODE_HELP);
    CHECK(!(fx_press(s, 'q') & ACT_QUIT)); /* q closes the help first */
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK(fx_press(s, 12) & ACT_CLEAR); /* Ctrl-L */
    CHECK(fx_press(s, 'q') & ACT_QUIT);
    CHECK(tui_key(s, KEY_F(10)) & ACT_QUIT);
    s->too_small = 1; /* only quit and redraw act on the too-small screen */
    CHECK_EQ_INT(tui_key(s, '2'), ACT_NONE);
    CHECK_EQ_INT(s->screen, SCR_SCALES);
    CHECK(tui_key(s, 'q') & ACT_QUIT);
    tui_state_free(s);
}

static int footer_has(const TuiState *s, const char *label)
{
    TuiHint h[48];
    int n = tui_footer(s, 400, h, 48);
    for (int i = 0; i < n; i++)
        if (!strcmp(h[i].label, label)) return 1;
    return 0;
}

static void test_footer_from_key_table(void)
{
    TuiState *s = fx_tui_headline(cat);
    /* screen-specific keys appear only where they act */
    CHECK(footer_has(s, "Find") && footer_has(s, "Change") && !footer_has(s, "Baseline"));
    fx_press(s, '2');
    CHECK(footer_has(s, "Baseline") && footer_has(s, "Table 5") && !footer_has(s, "Field"));
    fx_press(s, '4');
    CHECK(footer_has(s, "Step") && !footer_has(s, "Find"));
    fx_press(s, '?');
    CHECK(footer_has(s, "Close") && !footer_has(s, "Export"));
    fx_press(s, 27);
    fx_press(s, '1');
    fx_press(s, '/');
    CHECK(footer_has(s, "OK") && footer_has(s, "Cancel") && !footer_has(s, "Quit"));
    fx_press(s, 27);
    /* at 80 columns every context's footer fits and keeps Help (or its prompt keys) and Quit */
    for (int scr = 0; scr < SCR_COUNT_; scr++) {
        s->screen = (TuiScreen)scr;
        TuiHint h[48];
        int n = tui_footer(s, 80, h, 48), w = 0, quit = 0, help = 0;
        for (int i = 0; i < n; i++) {
            w += (int)strlen(h[i].key) + (int)strlen(h[i].label) + 2;
            quit |= !strcmp(h[i].label, "Quit");
            help |= !strcmp(h[i].label, "Help");
        }
        CHECKF(w <= 80, "screen %d footer is %d columns", scr, w);
        CHECK(quit && help && n >= 5);
    }
    tui_state_free(s);
}

static void test_help_and_hints_fit(void)
{
    TuiState *s = fx_tui_headline(cat);
    char lines[160][160];
    for (int scr = 0; scr < SCR_COUNT_; scr++) {
        s->screen = (TuiScreen)scr;
        int n = tui_help_lines(s, lines, 160);
        CHECK(n > 30 && n < 160);
        int walk = 0;
        for (int i = 0; i < n; i++) {
            CHECKF(strlen(lines[i]) <= 79, "help line too wide for 80 columns: %s", lines[i]);
            walk |= strstr(lines[i], "640") != NULL && strstr(lines[i], "spike") != NULL;
        }
        CHECK(walk); /* the walkthroughs are on every screen's help */
        const TuiField *f;
        int nf = tui_fields((TuiScreen)scr, &f);
        for (int i = 0; i < nf; i++)
            CHECKF(strlen(f[i].label) + 2 + strlen(f[i].hint) <= 80, "hint too wide: %s", f[i].hint);
    }
    tui_state_free(s);
}

static void test_value_explorer(void)
{
    TuiFx fx;
    tui_fx_compute(0.3, DT_E4M3, 1.0f, FP8_SATFINITE, &fx);
    CHECK_EQ_INT(fx.code, 0x2A);
    CHECK_STR(fx.bits, "0.0101.010");
    CHECK_NEAR(fx.value, 0.3125, 0);
    CHECK_NEAR(fx.prev, 0.28125, 0);
    CHECK_NEAR(fx.next, 0.34375, 0);
    CHECK_EQ_INT(fx.cls, FX_NORMAL);
    tui_fx_compute(500, DT_E4M3, 1.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x7E && fx.cls == FX_SATURATED);
    tui_fx_compute(500, DT_E4M3, 1.0f, FP8_NOSAT, &fx);
    CHECK(fx.cls == FX_OVERFLOW);
    /* the seed's 640 spike: at scale 0.7, 0.0013 flushes and 0.002 is the minimum subnormal */
    tui_fx_compute(0.0013, DT_E4M3, 448.0f / 640.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x00 && fx.cls == FX_ZERO);
    tui_fx_compute(0.002, DT_E4M3, 448.0f / 640.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x01 && fx.cls == FX_SUBNORMAL);
    tui_fx_compute(1e9, DT_E5M2, 1.0f, FP8_NOSAT, &fx);
    CHECK(fx.cls == FX_OVERFLOW && fp8_is_inf(DT_E5M2, fx.code));
    /* Right steps onto the next grid point */
    TuiState *s = fx_tui_headline(cat);
    fx_press_str(s, "5+");
    CHECK_NEAR(s->fx_value, 0.34375, 0);
    fx_press_str(s, "<Enter>nan<Enter>");
    CHECK(isnan(s->fx_value));
    fx_press_str(s, "<Down><Down><Enter>-1<Enter>");
    CHECK(s->mode == MODE_PROMPT && s->fx_scale == 1.0f); /* scales must be positive */
    tui_state_free(s);
}

static void test_script_parser(void)
{
    const char *p = "a<Up><resize=60x15><C-l><F10><lt><S-Tab>";
    TuiScriptKey k;
    Err e;
    int want[] = {'a', KEY_UP, KEY_RESIZE, 12, KEY_F(10), '<', KEY_BTAB};
    for (int i = 0; i < 7; i++) {
        CHECK_EQ_INT(tui_script_next(&p, &k, &e), 1);
        CHECK_EQ_INT(k.key, want[i]);
        if (k.key == KEY_RESIZE) CHECK(k.cols == 60 && k.rows == 15);
    }
    CHECK_EQ_INT(tui_script_next(&p, &k, &e), 0);
    CHECK_EQ_INT(tui_script_check("<Nope>", &e), -1);
    CHECK_CONTAINS(e.msg, "unknown key <Nope>");
    CHECK_EQ_INT(tui_script_check("<resize=0x5>", &e), -1);
    CHECK_EQ_INT(tui_script_check("ab<Up", &e), -1);
    CHECK_EQ_INT(tui_script_check("ab<Up>", &e), 3);
}

static void test_format_helpers(void)
{
    char b[40];
    CHECK_STR(tui_fmt_bytes(0, b, 40), "0 B");
    CHECK_STR(tui_fmt_bytes(6912, b, 40), "6.9 kB");
    CHECK_STR(tui_fmt_bytes(65040000000ull, b, 40), "65.04 GB");
    CHECK_STR(tui_fmt_bytes(2705829000000ull, b, 40), "2,705.8 GB");
    CHECK_STR(tui_fmt_seconds(0, b, 40), "0 s");
    CHECK_STR(tui_fmt_seconds(0.0123, b, 40), "12.3 ms");
    CHECK_STR(tui_fmt_num(INFINITY, 4, b, 40), "inf");
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_layout_pure);
    RUN(test_layout_too_small);
    RUN(test_bar_split);
    RUN(test_screens_and_quit);
    RUN(test_footer_from_key_table);
    RUN(test_help_and_hints_fit);
    RUN(test_value_explorer);
    RUN(test_script_parser);
    RUN(test_format_helpers);
    free(cat);
    return test_summary();
}
