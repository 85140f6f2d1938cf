/* tests/unit/test_html.c — the chart layer: axes, escaping, checked
 * coordinates, bar geometry, the Pareto front, the terminal memory bar and
 * reading tables back. Every expected number is worked out by hand in the
 * comment beside it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/chart_axis.h"
#include "reports/chart_bars.h"
#include "reports/chart_frame.h"
#include "reports/chart_plan.h"
#include "reports/chart_term.h"
#include "reports/html_page.h"
#include "reports/html_sweep.h"
#include "reports/svg_doc.h"
#include "support/fixtures.h"
#include "test.h"

/* ---- axes ---------------------------------------------------------------------------------------------- */

static void test_nice_steps(void)
{
    /* 95 over 6 intervals: 15.83 -> magnitude 10, 1.583 -> 2 -> step 20 */
    CHECK_NEAR(axis_nice_step(95, 6), 20, 1e-12);
    /* 0.7 over 5: 0.14 -> magnitude 0.1, 1.4 -> 2 -> 0.2 */
    CHECK_NEAR(axis_nice_step(0.7, 5), 0.2, 1e-12);
    /* 450 over 6: 75 -> magnitude 10, 7.5 -> 10 -> 100 */
    CHECK_NEAR(axis_nice_step(450, 6), 100, 1e-9);
    /* 3 over 6: 0.5 -> magnitude 0.1, 5 -> 5 -> 0.5 */
    CHECK_NEAR(axis_nice_step(3, 6), 0.5, 1e-12);
    CHECK_NEAR(axis_nice_step(0, 6), 1, 0); /* no range: a step of 1 */
}

static void test_linear_axis_from_zero(void)
{
    Axis a;
    /* bars up to 95 on 6 intervals: step 20, ticks 0, 20, ..., 100; pixels 100 .. 600 */
    axis_linear(&a, 0, 95, 6, 100, 600);
    CHECK_NEAR(a.lo, 0, 0);
    CHECK_NEAR(a.hi, 100, 1e-12);
    CHECK_EQ_INT(a.nticks, 6);
    CHECK_NEAR(a.ticks[3], 60, 1e-12);
    /* 50 is half of 0..100: 100 + 0.5 * 500 = 350; 95 -> 100 + 0.95 * 500 = 575 */
    CHECK_NEAR(axis_px(&a, 50), 350, 1e-9);
    CHECK_NEAR(axis_px(&a, 95), 575, 1e-9);
    char lab[32];
    axis_tick_label(&a, a.ticks[3], lab, sizeof lab);
    CHECK_STR(lab, "60");
    /* 0..0.7 in 5: step 0.2, ticks 0 .. 0.8 (0.6 < 0.7 rounds out), labels with one decimal */
    axis_linear(&a, 0, 0.7, 5, 0, 100);
    CHECK_EQ_INT(a.nticks, 5);
    CHECK_NEAR(a.hi, 0.8, 1e-12);
    axis_tick_label(&a, a.ticks[3], lab, sizeof lab);
    CHECK_STR(lab, "0.6");
    /* an empty range (every value 0) still gets a domain: [0, 1] */
    axis_linear(&a, 0, 0, 6, 0, 100);
    CHECK(a.hi > a.lo);
    CHECK(isfinite(axis_px(&a, 0)));
    /* a y axis runs upwards: px0 = 400 at the bottom, px1 = 10 at the top; 20 of 0..100 -> 400 - 0.2 * 390 = 322 */
    axis_linear(&a, 0, 95, 6, 400, 10);
    CHECK_NEAR(axis_px(&a, 20), 322, 1e-9);
}

/* The axes' frames: a grid line and a labelled tick per tick of the axis, the first and the last included.
 * x: 0..95 on 6 intervals is 0, 20, ..., 100 (test_linear_axis_from_zero) over 100 .. 600 px: 5 px per unit,
 * ticks at 100, 200, 300, 400, 500, 600, each label 15 px below the base line (300 + 15 = 315). y: the same
 * values upwards, 400 px at 0 and 10 at 100 (3.9 px per unit): 0 -> 400, 20 -> 322, 40 -> 244, 60 -> 166,
 * 80 -> 88, 100 -> 10, each label 6 px left of the axis (50 - 6 = 44) and 4 px below the grid line. */
static char *frame_svg(int y)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    Svg s;
    Axis a;
    svg_begin(&s, f, "t", 640, 480, "t");
    if (y) {
        axis_linear(&a, 0, 95, 6, 400, 10);
        frame_y_axis(&s, &a, 50, 600, 16, "bytes");
    } else {
        axis_linear(&a, 0, 95, 6, 100, 600);
        frame_x_axis(&s, &a, 300, 20, "steps");
    }
    svg_end(&s);
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void test_axis_frames(void)
{
    char *x = frame_svg(0);
    CHECK(x != NULL);
    if (!x) return;
    CHECK_EQ_INT(count_of(x, "<text class=\"tick\""), 6);
    CHECK_EQ_INT(count_of(x, "<line class=\"grid\""), 6);
    CHECK_CONTAINS(x, "<line class=\"grid\" x1=\"100\" y1=\"20\" x2=\"100\" y2=\"300\"/>");
    CHECK_CONTAINS(x, "<text class=\"tick\" x=\"100\" y=\"315\" text-anchor=\"middle\" data-tick=\"0\">0</text>");
    CHECK_CONTAINS(x, "<text class=\"tick\" x=\"300\" y=\"315\" text-anchor=\"middle\" data-tick=\"40\">40</text>");
    CHECK_CONTAINS(x, "<text class=\"tick\" x=\"600\" y=\"315\" text-anchor=\"middle\" data-tick=\"100\">100</text>");
    /* the axis line from px0 to px1 on the base, its title centred 34 px below: (100 + 600) / 2 = 350, 334 */
    CHECK_CONTAINS(x, "<line class=\"axis\" x1=\"100\" y1=\"300\" x2=\"600\" y2=\"300\"/>");
    CHECK_CONTAINS(x, "<text class=\"axis-title\" x=\"350\" y=\"334\" text-anchor=\"middle\">steps</text>");
    /* no fill style was used: svg_end writes no pattern definitions, only the closing tag */
    CHECK(strstr(x, "<defs") == NULL);
    CHECK_CONTAINS(x, "</g>\n</svg>\n");
    free(x);
    char *y = frame_svg(1);
    CHECK(y != NULL);
    if (!y) return;
    CHECK_EQ_INT(count_of(y, "<text class=\"tick\""), 6);
    CHECK_EQ_INT(count_of(y, "<line class=\"grid\""), 6);
    CHECK_CONTAINS(y, "<line class=\"grid\" x1=\"50\" y1=\"400\" x2=\"600\" y2=\"400\"/>");
    CHECK_CONTAINS(y, "<text class=\"tick\" x=\"44\" y=\"404\" text-anchor=\"end\" data-tick=\"0\">0</text>");
    CHECK_CONTAINS(y, "<text class=\"tick\" x=\"44\" y=\"326\" text-anchor=\"end\" data-tick=\"20\">20</text>");
    CHECK_CONTAINS(y, "<text class=\"tick\" x=\"44\" y=\"14\" text-anchor=\"end\" data-tick=\"100\">100</text>");
    /* the axis line at the left edge from px0 to px1, the title rotated about (16, (400 + 10) / 2 = 205) */
    CHECK_CONTAINS(y, "<line class=\"axis\" x1=\"50\" y1=\"400\" x2=\"50\" y2=\"10\"/>");
    CHECK_CONTAINS(y, "x=\"16\" y=\"205\" text-anchor=\"middle\" transform=\"rotate(-90 16 205)\">bytes</text>");
    free(y);
}

static void test_log_axis(void)
{
    Axis a;
    /* 0.0009 .. 640: decades -4 .. 3, seven of them, one tick each: 1e-4, 1e-3, ..., 1e3 (8 ticks) */
    axis_log(&a, 0.0009, 640, 7, 0, 700);
    CHECK_EQ_INT(a.nticks, 8);
    CHECK_NEAR(a.lo, 1e-4, 1e-18);
    CHECK_NEAR(a.hi, 1e3, 1e-9);
    /* 1 is 4 of the 7 decades up: 4/7 * 700 = 400; 10 is 5/7 * 700 = 500 */
    CHECK_NEAR(axis_px(&a, 1), 400, 1e-9);
    CHECK_NEAR(axis_px(&a, 10), 500, 1e-9);
    char lab[32];
    axis_tick_label(&a, 1e-3, lab, sizeof lab);
    CHECK_STR(lab, "1e-3");
    axis_tick_label(&a, 0.01, lab, sizeof lab);
    CHECK_STR(lab, "0.01");
    axis_tick_label(&a, 100, lab, sizeof lab);
    CHECK_STR(lab, "100");
    axis_tick_label(&a, 1000, lab, sizeof lab);
    CHECK_STR(lab, "1e3");
    /* 1e-6 .. 1e6 is 12 decades: with 6 ticks wanted, every 2nd decade: 1e-6, 1e-4, ..., 1e6 (7 ticks) */
    axis_log(&a, 1e-6, 1e6, 6, 0, 100);
    CHECK_EQ_INT(a.nticks, 7);
    CHECK_NEAR(a.step, 2, 0);
    /* nothing positive: the axis falls back to 1 .. 10 */
    axis_log(&a, 0, -1, 6, 0, 100);
    CHECK_NEAR(a.lo, 1, 0);
    CHECK_NEAR(a.hi, 10, 1e-12);
}

/* ---- escaping and checked numbers ------------------------------------------------------------------------ */

static char *capture_esc(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    xml_esc(f, s);
    fclose(f);
    return buf;
}

static void test_xml_escaping(void)
{
    char *o = capture_esc("<a href=\"x\">b & 'c'</a>");
    CHECK_STR(o, "&lt;a href=&quot;x&quot;&gt;b &amp; &#39;c&#39;&lt;/a&gt;");
    free(o);
    o = capture_esc("a\x01z\nq\tr"); /* a control byte becomes a blank; newline and tab stay */
    CHECK_STR(o, "a z\nq\tr");
    free(o);
    o = capture_esc("ok \xc2\xb7 \xff end"); /* '·' is UTF-8; 0xff is not: U+FFFD */
    CHECK_STR(o, "ok \xc2\xb7 \xef\xbf\xbd end");
    free(o);
    o = capture_esc("\xe2\x82"); /* a cut 3-byte sequence: each byte replaced */
    CHECK_STR(o, "\xef\xbf\xbd\xef\xbf\xbd");
    free(o);
}

static void test_coordinates_refuse_nan(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Svg s;
    svg_begin(&s, f, "c", 100, 50, "t");
    svg_put(&s, "<rect x=\"$\" width=\"$\"/>", 1.5, 20.0);
    Err e;
    CHECK(svg_status(&s, &e) == ST_OK);
    svg_put(&s, "<rect x=\"$\" width=\"$\"/>", NAN, INFINITY);
    CHECK(svg_status(&s, &e) == ST_SOFTWARE);
    CHECK_CONTAINS(e.msg, "chart c");
    svg_end(&s);
    fclose(f);
    CHECK_CONTAINS(buf, "<rect x=\"1.5\" width=\"20\"/>"); /* two decimals, trailing zeros trimmed */
    CHECK(!strstr(buf, "nan") && !strstr(buf, "inf"));     /* refused values are written as 0 */
    free(buf);
}

/* ---- bars ------------------------------------------------------------------------------------------------ */

static char *render_bars(const Table *t, const BarSpec *spec, Status *st, Err *e)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    HtmlDoc d;
    html_begin(&d, f, "t", NULL);
    chart_bars(&d, t, spec);
    *st = html_end(&d, e);
    fclose(f);
    return buf;
}

/* The attribute `name` of the first <rect class="bar"> whose data-v is `v` (static buffer). */
static const char *bar_attr(const char *html, const char *v, const char *name)
{
    static char out[64];
    char key[64];
    snprintf(key, sizeof key, "data-v=\"%s\"", v);
    for (const char *p = strstr(html, "<rect class=\"bar\""); p; p = strstr(p + 1, "<rect class=\"bar\"")) {
        const char *end = strchr(p, '>'), *k = strstr(p, key);
        if (!k || k > end) continue;
        char a[64];
        snprintf(a, sizeof a, " %s=\"", name);
        const char *q = strstr(p, a);
        if (!q || q > end) return NULL;
        q += strlen(a);
        size_t n = (size_t)(strchr(q, '"') - q);
        snprintf(out, sizeof out, "%.*s", (int)n, q);
        return out;
    }
    return NULL;
}

static void test_bar_geometry(void)
{
    static const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"a_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
        {"b_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    };
    Table *t = table_new(cols, 3);
    table_row(t), table_str(t, 0, "x"), table_u64(t, 1, 1), table_u64(t, 2, 3);
    table_row(t), table_str(t, 0, "y"), table_u64(t, 1, 2);
    BarSpec s = {.id = "g", .title = "T", .axis = "bytes", .unit = "", .cat_col = "name", .nbars = 1};
    s.bars[0].cols[0] = "a_bytes";
    s.bars[0].cols[1] = "b_bytes";
    Status st;
    Err e;
    char *html = render_bars(t, &s, &st, &e);
    CHECK(st == ST_OK);
    /* the longest bar is x: 1 + 3 = 4 -> axis 0..4 in steps of 1 (4/6 = 0.67 -> 1). The labels ("x", "y" and
     * the totals "4 ", "2 ") are narrow, so both margins are their minimum, 40 px: 40 .. 960 - 40 = 920,
     * 880 px for 4 B = 220 px/B. a of x: 1 B -> 220 px from x = 40; b of x stacks after it at 40 + 220 = 260,
     * 3 B -> 660 px; a of y: 2 B -> 440 px. */
    CHECK_STR(bar_attr(html, "1", "width"), "220");
    CHECK_STR(bar_attr(html, "1", "x"), "40");
    CHECK_STR(bar_attr(html, "3", "x"), "260");
    CHECK_STR(bar_attr(html, "3", "width"), "660");
    CHECK_STR(bar_attr(html, "2", "width"), "440");
    CHECK_STR(bar_attr(html, "2", "data-cat"), "y");
    /* the table it is drawn from is beneath it, with the text rendering of the numbers */
    CHECK_CONTAINS(html, "<td>x</td><td class=\"n\">1</td><td class=\"n\">3</td>");
    free(html);
    table_free(t);
}

static void test_bar_chart_names_a_missing_column(void)
{
    static const TableCol cols[] = {{"name", NULL, NULL, TC_STR, 0, 0}, {"v", NULL, NULL, TC_F64, 2, 0}};
    Table *t = table_new(cols, 2);
    table_row(t), table_str(t, 0, "x"), table_f64(t, 1, 0.1 + 0.2);
    BarSpec s = {.id = "g", .title = "T", .axis = "v", .unit = "", .cat_col = "name", .nbars = 1};
    s.bars[0].cols[0] = "v";
    Status st;
    Err e;
    char *html = render_bars(t, &s, &st, &e);
    CHECK(st == ST_OK);
    /* data-v is the cell as the CSV writes it: %.12g of 0.30000000000000004 is 0.3 */
    CHECK(bar_attr(html, "0.3", "width") != NULL);
    free(html);
    s.bars[0].cols[0] = "nope";
    html = render_bars(t, &s, &st, &e);
    CHECK(st == ST_SOFTWARE);
    CHECK_CONTAINS(e.msg, "no column 'nope'");
    free(html);
    table_free(t);
}

/* More series than a chart has keys (32): the rest are not drawn, and the figure says how many. */
static void test_bar_chart_says_what_it_leaves_out(void)
{
    static const TableCol cols[] = {
        {"cat", NULL, NULL, TC_STR, 0, 0}, {"key", NULL, NULL, TC_STR, 0, 0}, {"v", NULL, NULL, TC_U64, 0, 0}};
    Table *t = table_new(cols, 3);
    for (int i = 0; i < 40; i++) {
        table_row(t);
        table_str(t, 0, "c");
        table_strf(t, 1, "k%d", i);
        table_u64(t, 2, (uint64_t)i + 1);
    }
    BarSpec s = {.id = "g", .title = "T", .axis = "v", .unit = "", .cat_col = "cat", .series_col = "key", .nbars = 1};
    s.bars[0].cols[0] = "v";
    Status st;
    Err e;
    char *html = render_bars(t, &s, &st, &e);
    CHECK(st == ST_OK);
    int n = 0;
    for (const char *p = strstr(html, "<rect class=\"bar\""); p; p = strstr(p + 1, "<rect class=\"bar\"")) n++;
    CHECK_EQ_INT(n, 32);                            /* k0 .. k31 */
    CHECK_CONTAINS(html, "8 values are not drawn"); /* k32 .. k39 */
    CHECK(bar_attr(html, "33", "width") == NULL);   /* k32's value, 33, is not drawn under another key */
    CHECK_STR(bar_attr(html, "32", "data-key"), "k31");
    free(html);
    table_free(t);
}

/* ---- the Pareto front ---------------------------------------------------------------------------------- */

static void test_pareto_front(void)
{
    Table *t = sweep_points_new();
    /* (memory, tokens/s): line 0 (10, 5), 1 (20, 4), 2 (20, 7), 3 (30, 6), 4 (40, 9), 5 (5, 1).
     * By memory: (5,1) best so far -> on; (10,5) -> on; (20,7) -> on (the better of the two at 20 comes
     * first); (20,4) no; (30,6) no (7 already at 20); (40,9) -> on. Front: lines 5, 0, 2, 4. */
    const double pts[6][2] = {{10, 5}, {20, 4}, {20, 7}, {30, 6}, {40, 9}, {5, 1}};
    for (int i = 0; i < 6; i++) {
        table_row(t);
        table_str(t, 0, "r");
        table_u64(t, table_col_find(t, "total_bytes"), (uint64_t)pts[i][0]);
        table_f64(t, table_col_find(t, "tokens_per_s"), pts[i][1]);
    }
    int lines[6];
    int n = sweep_pareto(t, lines, 6);
    CHECK_EQ_INT(n, 4);
    CHECK_EQ_INT(lines[0], 5);
    CHECK_EQ_INT(lines[1], 0);
    CHECK_EQ_INT(lines[2], 2);
    CHECK_EQ_INT(lines[3], 4);
    table_free(t);
}

/* The sweep chart's points: of each recipe the 2 fastest in each of 160 memory slices. Memory runs 0 .. 159 000,
 * so a slice is 1 000 B wide and a point at m B falls in slice round(m / 1000). Recipe a: 4 points in slice 0
 * (tokens/s 1, 5, 3, 4: 5 and 4 drawn), 1 alone in slice 159 (drawn); recipe b: 3 points in slice 0 (2, 9, 9: the
 * two 9s drawn, the first-listed first), 1 in slice 80 (80,000 B, drawn). Drawn, in the points' order: lines 1, 3,
 * 4, 6, 7, 8 (6 of 9). */
static void test_sweep_points_drawn(void)
{
    Table *t = sweep_points_new();
    static const struct {
        const char *r;
        double mem, toks;
    } pts[9] = {{"a", 0, 1}, {"a", 100, 5}, {"a", 200, 3}, {"a", 300, 4},  {"a", 159000, 7},
                {"b", 0, 2}, {"b", 10, 9},  {"b", 20, 9},  {"b", 80000, 1}};
    for (int i = 0; i < 9; i++) {
        table_row(t);
        table_str(t, table_col_find(t, "recipe"), pts[i].r);
        table_u64(t, table_col_find(t, "total_bytes"), (uint64_t)pts[i].mem);
        table_f64(t, table_col_find(t, "tokens_per_s"), pts[i].toks);
    }
    Table *d = sweep_points_drawn(t);
    CHECK(d != NULL);
    if (!d) return table_free(t);
    CHECK_EQ_INT(table_rows(d), 6);
    static const double want[6][2] = {{100, 5}, {300, 4}, {159000, 7}, {10, 9}, {20, 9}, {80000, 1}};
    int cm = table_col_find(d, "total_bytes"), ct = table_col_find(d, "tokens_per_s");
    for (int i = 0; i < 6 && i < table_lines(d); i++) {
        double m = -1, k = -1;
        table_get_f64(d, i, cm, &m), table_get_f64(d, i, ct, &k);
        CHECKF(m == want[i][0] && k == want[i][1], "drawn %d: (%g, %g), expected (%g, %g)", i, m, k, want[i][0],
               want[i][1]);
    }
    table_free(d);
    table_free(t);
}

/* ---- the terminal bar -------------------------------------------------------------------------------------- */

static void test_bar_split(void)
{
    int cells[3];
    /* 30, 20, 10 of 100 on 10 cells: 3, 2, 1 exactly */
    const uint64_t a[3] = {30, 20, 10};
    CHECK_EQ_INT(term_bar_split(a, 3, 100, 10, cells), 6);
    CHECK(cells[0] == 3 && cells[1] == 2 && cells[2] == 1);
    /* 15, 15, 0: 1.5 and 1.5 -> floors 1 + 1 = 2, round(3.0) = 3 wanted: the tie goes to the first */
    const uint64_t b[3] = {15, 15, 0};
    CHECK_EQ_INT(term_bar_split(b, 3, 100, 10, cells), 3);
    CHECK(cells[0] == 2 && cells[1] == 1 && cells[2] == 0);
}

/* Display columns of a UTF-8 line (every character here is one column wide). */
static int columns(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

static void test_memory_bar_line(void)
{
    Recipe r = fx_bf16_recipe("test", 0);
    Plan p;
    memset(&p, 0, sizeof p);
    p.in.recipe = &r;
    /* state 40, FP8 copies 10, scales 0, activations 20, overheads 10 GB of 100 GB */
    const uint64_t cat[MC_COUNT_] = {40000000000ull, 10000000000ull, 0, 20000000000ull, 10000000000ull};
    memcpy(p.cat_bytes, cat, sizeof cat);
    p.total_bytes = 80000000000ull, p.capacity_bytes = 100000000000ull, p.fits = 1;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Err e;
    CHECK(term_memory_bars(f, &p, 1, 0, &e) == ST_OK);
    fclose(f);
    /* name width 4 ("test"), tail "  80.00 of 100.00 GB  FITS" (26): 100 - (2 + 4 + 2) - 1 - 26 = 65 cells.
     * Cells of 100 GB: 40 -> 26, 10 -> 6.5, 0, 20 -> 13, 10 -> 6.5; floors 51, round(80 * 65 / 100) = 52 wanted:
     * the tie of 6.5 and 6.5 goes to the FP8 copies (earlier) -> 26, 7, 0, 13, 6; 13 free; capacity at 65 (end). */
    const char *line = strchr(buf, '\n') + 1;
    char want[160];
    int k = snprintf(want, sizeof want, "  test  ");
    for (int i = 0; i < 26; i++) want[k++] = '#';
    for (int i = 0; i < 7; i++) want[k++] = '=';
    for (int i = 0; i < 13; i++) want[k++] = '+';
    for (int i = 0; i < 6; i++) want[k++] = '%';
    for (int i = 0; i < 13; i++) want[k++] = '.';
    snprintf(want + k, sizeof want - (size_t)k, "|  80.00 of 100.00 GB  FITS\n");
    CHECK_STR(line, want);
    CHECK_EQ_INT((int)strlen(want) - 1, 100);
    free(buf);

    /* Unicode glyphs, and an OOM plan beside it: one scale (the largest total, 120 GB), every line <= 100 columns */
    Plan q = p;
    q.cat_bytes[MC_ACTIVATION] = 60000000000ull, q.total_bytes = 120000000000ull, q.fits = 0;
    Plan two[2] = {p, q};
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK(term_memory_bars(f, two, 2, 1, &e) == ST_OK);
    fclose(f);
    int nlines = 0;
    for (const char *s = buf, *nl; (nl = strchr(s, '\n')); s = nl + 1, nlines++)
        CHECKF(columns(s, (size_t)(nl - s)) <= TERM_BAR_COLUMNS, "line %d is %d columns", nlines,
               columns(s, (size_t)(nl - s)));
    CHECK_EQ_INT(nlines, 3);
    CHECK_CONTAINS(buf, "\xe2\x96\x88");             /* █ */
    CHECK_CONTAINS(buf, "120.00 of 100.00 GB  OOM"); /* the OOM plan runs past the capacity mark */
    free(buf);
}

/* ---- plan chart tables ---------------------------------------------------------------------------------- */

static void test_memory_groups_add_up(void)
{
    Catalog *c = fx_catalog();
    PlanInput in = fx_headline(c, "te-fp8");
    Plan p;
    Err e;
    CHECK(plan_build(&in, &p, &e) == ST_OK);
    Table *t = chart_memory_table(&p, 1);
    double sum = 0, v, total;
    for (int g = 0; g < MG_COUNT_; g++) {
        CHECK(table_get_f64(t, 0, table_col_find(t, mem_group_col((MemGroup)g)), &v));
        sum += v;
    }
    CHECK(table_get_f64(t, 0, table_col_find(t, "total_bytes"), &total));
    CHECK_NEAR(sum, total, 0); /* the groups partition the terms: whole bytes, below 2^53 */
    /* the FP8 copies group is the two cached copies, one byte per linear weight element each */
    CHECK(table_get_f64(t, 0, table_col_find(t, "fp8_weight_copy_bytes"), &v));
    CHECK_NEAR(v, (double)(p.mem[MT_FP8_ROWWISE].bytes + p.mem[MT_FP8_COLWISE].bytes), 0);
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes, p.params_gemm_gpu);
    /* buffers: NCCL buffers and the GEMM workspace */
    CHECK(table_get_f64(t, 0, table_col_find(t, "buffer_bytes"), &v));
    CHECK_NEAR(v, (double)(p.mem[MT_COMM_BUFFER].bytes + p.mem[MT_WORKSPACE].bytes), 0);
    table_free(t);
    free(c);
}

static void test_table_reading_back(void)
{
    static const TableCol cols[] = {
        {"k", NULL, NULL, TC_STR, 0, 0}, {"n", NULL, NULL, TC_U64, 0, TF_GROUP}, {"x", NULL, NULL, TC_F64, 3, 0}};
    Table *t = table_new(cols, 3);
    table_row(t), table_str(t, 0, "640"), table_u64(t, 1, 16777216), table_f64(t, 2, 1.0 / 3);
    table_rule(t);
    table_row(t), table_str(t, 0, "nope");
    double v;
    char buf[64];
    CHECK_EQ_INT(table_lines(t), 3);
    CHECK(table_line_is_rule(t, 1));
    CHECK(table_get_f64(t, 0, 0, &v) && v == 640); /* a string cell holding a number */
    CHECK(!table_get_f64(t, 2, 0, &v));            /* one that does not */
    CHECK(!table_get_f64(t, 2, 1, &v));            /* unset */
    CHECK(table_cell_text(t, 0, 1, TABLE_TEXT, buf, sizeof buf) && !strcmp(buf, "16,777,216"));
    CHECK(table_cell_text(t, 0, 1, TABLE_CSV, buf, sizeof buf) && !strcmp(buf, "16777216"));
    CHECK(table_cell_text(t, 0, 2, TABLE_CSV, buf, sizeof buf) && !strcmp(buf, "0.333333333333"));
    CHECK(!table_cell_text(t, 2, 2, TABLE_CSV, buf, sizeof buf) && !strcmp(buf, ""));
    CHECK_EQ_INT(table_col_find(t, "x"), 2);
    CHECK_EQ_INT(table_col_find(t, "y"), -1);
    /* appending rows keyed: a column of another type is a programming error, reported on write */
    static const TableCol kcols[] = {{"key", NULL, NULL, TC_STR, 0, 0},
                                     {"k", NULL, NULL, TC_STR, 0, 0},
                                     {"n", NULL, NULL, TC_U64, 0, 0},
                                     {"x", NULL, NULL, TC_F64, 3, 0}};
    Table *k = table_new(kcols, 4);
    table_append_keyed(k, 0, "r1", 1, t);
    CHECK_EQ_INT(table_rows(k), 2);
    CHECK_STR(table_get_str(k, 0, 0), "r1");
    CHECK(table_get_f64(k, 0, 2, &v) && v == 16777216);
    Table *bad = table_new(kcols, 4);
    table_append_keyed(bad, 0, "r1", 0, t); /* "k" (text) lands in "key", 16777216 in a text column */
    Err e;
    FILE *f = fopen("/dev/null", "w");
    CHECK(table_write(bad, TABLE_CSV, f, &e) == ST_SOFTWARE);
    CHECK(table_write(k, TABLE_HTML, f, &e) == ST_OK);
    fclose(f);
    table_free(bad);
    table_free(k);
    table_free(t);
}

int main(void)
{
    RUN(test_nice_steps);
    RUN(test_linear_axis_from_zero);
    RUN(test_log_axis);
    RUN(test_axis_frames);
    RUN(test_xml_escaping);
    RUN(test_coordinates_refuse_nan);
    RUN(test_bar_geometry);
    RUN(test_bar_chart_names_a_missing_column);
    RUN(test_bar_chart_says_what_it_leaves_out);
    RUN(test_pareto_front);
    RUN(test_sweep_points_drawn);
    RUN(test_bar_split);
    RUN(test_memory_bar_line);
    RUN(test_memory_groups_add_up);
    RUN(test_table_reading_back);
    return test_summary();
}
