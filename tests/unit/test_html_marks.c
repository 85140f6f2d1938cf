/* tests/unit/test_html_marks.c — the shapes charts draw with: the six point markers, the two event
 * markers of an x-y chart (and their legend swatches), rows that stack into one bar, and the compare
 * page's sections. Every coordinate is worked out by hand in the comment beside it. */
#include <stdlib.h>
#include <string.h>

#include "reports/chart_bars.h"
#include "reports/chart_xy.h"
#include "reports/html_page.h"
#include "reports/html_plan.h"
#include "reports/svg_doc.h"
#include "support/fixtures.h"
#include "test.h"

/* The six markers at (10, 20), half-size r = 2 ("$" writes two decimals, trailing zeros trimmed):
 * circle r 2; square from (10 - 2, 20 - 2) = (8, 18), 4 x 4; diamond through the points 1.3 r = 2.6 away:
 * (10, 17.4) (12.6, 20) (10, 22.6) (7.4, 20); triangle up: apex (10, 20 - 2.6 = 17.4), base at y + r = 22
 * from x - 1.2 r = 7.6 to x + 1.2 r = 12.4; triangle down: apex (10, 22.6), base at y - r = 18; cross: the
 * two diagonals of the square (8, 18)-(12, 22) and (8, 22)-(12, 18). Marker 6 wraps to 0; -1 is
 * 4294967295 as unsigned, and 4294967295 = 6 x 715827882 + 3: the triangle up. */
static void test_markers(void)
{
    static const char *const want[] = {
        "<circle cx=\"10\" cy=\"20\" r=\"2\" fill=\"#c\"/>",
        "<rect x=\"8\" y=\"18\" width=\"4\" height=\"4\" fill=\"#c\"/>",
        "<path d=\"M10,17.4 L12.6,20 L10,22.6 L7.4,20 Z\" fill=\"#c\"/>",
        "<path d=\"M10,17.4 L12.4,22 L7.6,22 Z\" fill=\"#c\"/>",
        "<path d=\"M10,22.6 L12.4,18 L7.6,18 Z\" fill=\"#c\"/>",
        "<path d=\"M8,18 L12,22 M8,22 L12,18\" stroke=\"#c\" stroke-width=\"2.2\" fill=\"none\"/>",
    };
    const int markers[] = {0, 1, 2, 3, 4, 5, 6, -1}, shape[] = {0, 1, 2, 3, 4, 5, 0, 3};
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        Svg s;
        svg_begin(&s, f, "m", 100, 50, "t");
        svg_marker(&s, markers[i], 10, 20, 2, "#c");
        Err e;
        CHECK(svg_status(&s, &e) == ST_OK);
        svg_end(&s);
        fclose(f);
        CHECKF(strstr(buf, want[shape[i]]) != NULL, "marker %d: want %s in %s", markers[i], want[shape[i]], buf);
        free(buf);
    }
}

/* The SVG element after `from`'s first match of `key`, up to its '>' (static buffer). */
static const char *shape_after(const char *html, const char *key, const char *elem)
{
    static char out[256];
    const char *p = strstr(html, key);
    p = p ? strstr(p, elem) : NULL;
    if (!p) return "";
    size_t n = strcspn(p, ">");
    snprintf(out, sizeof out, "%.*s", (int)n, p);
    return out;
}

/* Two event sets on one chart, as the delayed-scaling page has them: the first marks its rows with the
 * down triangle (marker 4), the second with the diamond (marker 2), in the plot and in the legend. The
 * legend swatch is a marker of half-size 5 at (8, 8): triangle down "M8,14.5 L14,3 L2,3 Z" (8 + 6.5, 8 + 6,
 * 8 - 5, 8 - 6), diamond "M8,1.5 L14.5,8 L8,14.5 L1.5,8 Z". In the plot: step 1 fails the first check
 * ("sat"), step 2 the second ("kept"); each gets its set's shape — the triangle's apex below its base, the
 * diamond four points. */
static void test_event_marks(void)
{
    static const TableCol cols[] = {{"step", NULL, NULL, TC_F64, 0, 0},
                                    {"amax", NULL, NULL, TC_F64, 2, 0},
                                    {"cast", NULL, NULL, TC_STR, 0, 0},
                                    {"update", NULL, NULL, TC_STR, 0, 0}};
    Table *t = table_new(cols, 4);
    table_row(t), table_f64(t, 0, 1), table_f64(t, 1, 2), table_str(t, 2, "sat"), table_str(t, 3, "ok");
    table_row(t), table_f64(t, 0, 2), table_f64(t, 1, 3), table_str(t, 2, "ok"), table_str(t, 3, "kept");
    table_row(t), table_f64(t, 0, 3), table_f64(t, 1, 4), table_str(t, 2, "ok"), table_str(t, 3, "ok");
    XySpec sp = {.id = "ev", .title = "T", .x_axis = "step", .y_axis = "amax", .nseries = 1, .nevents = 2};
    sp.series[0] = (XySeries){.t = t, .x_col = "step", .y_col = "amax", .label = "amax", .kind = XY_LINE};
    sp.events[0] = (XyEvents){t, "step", "amax", "cast", "ok", "cast saturates"};
    sp.events[1] = (XyEvents){t, "step", "amax", "update", "ok", "scale kept"};
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    HtmlDoc d;
    html_begin(&d, f, "t", NULL);
    chart_xy(&d, &sp);
    Err e;
    CHECK(html_end(&d, &e) == ST_OK);
    fclose(f);
    CHECK_CONTAINS(html, "<g class=\"ev\"><path d=\"M8,14.5 L14,3 L2,3 Z\" fill=\"#b3261e\"/></g></svg>cast "
                         "saturates</li>");
    CHECK_CONTAINS(html,
                   "<g class=\"ev\"><path d=\"M8,1.5 L14.5,8 L8,14.5 L1.5,8 Z\" fill=\"#b3261e\"/></g></svg>scale "
                   "kept</li>");
    double x[4], y[4];
    const char *tri = shape_after(html, "data-status=\"sat\"", "<path d=\"M");
    CHECKF(sscanf(tri, "<path d=\"M%lf,%lf L%lf,%lf L%lf,%lf Z\"", &x[0], &y[0], &x[1], &y[1], &x[2], &y[2]) == 6,
           "step 1: %s", tri);
    CHECKF(y[0] > y[1] && y[1] == y[2] && x[1] > x[0] && x[2] < x[0], "step 1: %s is not a triangle down", tri);
    const char *dia = shape_after(html, "data-status=\"kept\"", "<path d=\"M");
    CHECKF(sscanf(dia, "<path d=\"M%lf,%lf L%lf,%lf L%lf,%lf L%lf,%lf Z\"", &x[0], &y[0], &x[1], &y[1], &x[2], &y[2],
                  &x[3], &y[3]) == 8,
           "step 2: %s is not a diamond", dia);
    CHECK(!strstr(html, "data-status=\"ok\"")); /* rows that pass are not marked */
    free(html);
    table_free(t);
}

/* The attribute `name` of the <rect class="bar"> whose data-v is `v` (static buffer; "" when none). */
static const char *bar_attr(const char *html, const char *v, const char *name)
{
    static char out[64];
    char key[64], a[64];
    snprintf(key, sizeof key, "data-v=\"%s\"", v);
    snprintf(a, sizeof a, " %s=\"", name);
    for (const char *p = strstr(html, "<rect class=\"bar\""); p; p = strstr(p + 1, "<rect class=\"bar\"")) {
        const char *end = strchr(p, '>'), *k = strstr(p, key), *q = strstr(p, a);
        if (!k || k > end || !q || q > end) continue;
        q += strlen(a);
        snprintf(out, sizeof out, "%.*s", (int)strcspn(q, "\""), q);
        return out;
    }
    return "";
}

/* A long table whose consecutive rows of one group stack into one bar (stack_col): rows (A, s1, 1),
 * (B, s1, 2), (B, s2, 3) make bar A = 1 and bar B = 2 + 3 = 5; the longest is 5, an axis 0..5 in steps of
 * 1 (5 / 6 = 0.83 -> 1). Narrow labels leave both margins at their minimum, 40 px: 880 px for 5 = 176 px a
 * unit. B's s2 row starts where its s1 ends: x = 40 + 2 x 176 = 392, width 3 x 176 = 528; A's and B's s1
 * start at 40 (A 176 px, B's s1 352 px). Two bars, three segments. */
static void test_stacked_rows(void)
{
    static const TableCol cols[] = {
        {"cat", NULL, NULL, TC_STR, 0, 0}, {"seg", NULL, NULL, TC_STR, 0, 0}, {"v", NULL, NULL, TC_U64, 0, 0}};
    Table *t = table_new(cols, 3);
    table_row(t), table_str(t, 0, "A"), table_str(t, 1, "s1"), table_u64(t, 2, 1);
    table_row(t), table_str(t, 0, "B"), table_str(t, 1, "s1"), table_u64(t, 2, 2);
    table_row(t), table_str(t, 0, "B"), table_str(t, 1, "s2"), table_u64(t, 2, 3);
    BarSpec s = {.id = "st", .title = "T", .axis = "v", .unit = "", .cat_col = "cat", .stack_col = "seg", .nbars = 1};
    s.bars[0].cols[0] = "v";
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    HtmlDoc d;
    html_begin(&d, f, "t", NULL);
    chart_bars(&d, t, &s);
    Err e;
    CHECK(html_end(&d, &e) == ST_OK);
    fclose(f);
    CHECK_STR(bar_attr(html, "3", "x"), "392");
    CHECK_STR(bar_attr(html, "3", "width"), "528");
    CHECK_STR(bar_attr(html, "2", "x"), "40");
    CHECK_STR(bar_attr(html, "2", "width"), "352");
    CHECK_STR(bar_attr(html, "1", "width"), "176");
    CHECK_STR(bar_attr(html, "3", "data-cat"), "B");
    free(html);
    table_free(t);
}

/* The compare page: its charts, then a "Side by side" section holding the compare table, then the summary. */
static void test_compare_page_sections(void)
{
    Catalog *cat = fx_catalog();
    CHECK(cat != NULL);
    if (!cat) return;
    Plan p[2];
    Err e = {0};
    const char *recipes[2] = {"megatron-bf16", "te-fp8"};
    for (int i = 0; i < 2; i++) {
        PlanInput in = fx_headline(cat, recipes[i]);
        CHECKF(plan_build(&in, &p[i], &e) == ST_OK, "%s", e.msg);
    }
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    CHECKF(html_compare_page(f, p, 2, 0.95, NULL, &e) == ST_OK, "%s", e.msg);
    fclose(f);
    const char *h = strstr(html, "<h2 id=\"side-by-side\">Side by side</h2>"), *fig = strstr(html, "<figure");
    const char *tab = h ? strstr(h, "<table") : NULL;
    CHECK(h != NULL && fig != NULL && fig < h);
    CHECK(tab != NULL && (!strstr(h + 1, "<h2") || tab < strstr(h + 1, "<h2")));
    free(html);
    free(cat);
}

int main(void)
{
    RUN(test_markers);
    RUN(test_event_marks);
    RUN(test_stacked_rows);
    RUN(test_compare_page_sections);
    return test_summary();
}
