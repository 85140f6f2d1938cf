/* reports/html_page.h — one self-contained HTML page: inline CSS (light and
 * dark colour schemes, print), headings, paragraphs, figures and the tables
 * charts are drawn from. No scripts, no external resources: the page opens
 * from a file with no network, and hover values come from SVG <title>s.
 *
 *   HtmlDoc d;
 *   html_begin(&d, f, "fp8plan compare", "gpt-175b on h100-sxm ...");
 *   html_h2(&d, "memory", "Per-GPU memory");
 *   chart_bars(&d, table, &spec);        // reports/chart_bars.h: a <figure> with its table
 *   Status st = html_end(&d, &e);        // the first error of any step, or ST_IO
 *
 * The markup is well-formed XML too (void elements closed, everything
 * escaped), so tests parse it with an XML parser. Figures carry
 * class="figure" and data-chart="<kind>"; the SVG inside has id = the chart id. */
#ifndef FP8PLAN_REPORTS_HTML_PAGE_H
#define FP8PLAN_REPORTS_HTML_PAGE_H

#include <stdio.h>

#include "reports/table.h"
#include "util/status.h"

typedef struct {
    FILE *f;
    Err err; /* the first failure (err.st == ST_OK while all is well) */
    int nfig;
} HtmlDoc;

void html_begin(HtmlDoc *d, FILE *f, const char *title, const char *subtitle);
/* A section heading (id: the anchor, may be NULL). */
void html_h2(HtmlDoc *d, const char *id, const char *text);
/* A paragraph of escaped text (printf-style). */
void html_p(HtmlDoc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A list item of escaped text inside <ul class="notes"> (html_list_begin/end around them). */
void html_list_begin(HtmlDoc *d);
void html_li(HtmlDoc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void html_list_end(HtmlDoc *d);
/* Escaped preformatted text (a text report kept as it prints). */
void html_pre(HtmlDoc *d, const char *text);

/* A table: header (label and unit), rules as separators, numbers as the text table writes them.
 * id: the element id (NULL: none). Longer than `collapse_after` rows (0: never): inside a closed
 * <details> whose summary says how many rows. */
void html_table(HtmlDoc *d, const Table *t, const char *id, const char *caption, int collapse_after);

/* Figure wrapper: <figure class="figure" id="fig-ID" data-chart="KIND"> with a heading and a
 * description; the chart writes its SVG and legend between begin and end. */
void html_fig_begin(HtmlDoc *d, const char *id, const char *kind, const char *title, const char *desc);
void html_fig_end(HtmlDoc *d);

/* Record a failure (the first one wins). */
void html_fail(HtmlDoc *d, const Err *e);

/* Close the page. Returns the first recorded failure, else ST_IO on a write error, else ST_OK. */
Status html_end(HtmlDoc *d, Err *e);

/* A whole page holding one table (table_write's TABLE_HTML; the title is the table's own). */
Status html_table_page(const Table *t, FILE *f, Err *e);

#endif
