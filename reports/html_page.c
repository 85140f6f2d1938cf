/* reports/html_page.c — page skeleton, CSS and tables (see html_page.h). */
#include "reports/html_page.h"

#include <stdarg.h>
#include <string.h>

#include "reports/svg_doc.h"

/* Light colours by default, dark ones when the reader's system asks for them, light again on paper (last,
 * so it wins). No '<' or '&' in here: the page stays well-formed XML. */
static const char css[] =
    ":root{--fg:#1d1f22;--bg:#ffffff;--muted:#5b6067;--grid:#dcdfe3;--axis:#4a4f55;--ref:#b3261e;--ref2:#6a3d9a;"
    "--card:#f5f6f8;--rule:#c9cdd2;color-scheme:light dark}\n"
    "@media (prefers-color-scheme: dark){:root{--fg:#e6e8eb;--bg:#16181b;--muted:#a4a9b0;--grid:#34383d;"
    "--axis:#b9bec4;--ref:#ff8a80;--ref2:#c9a7f0;--card:#1f2226;--rule:#464b51}}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0 auto;max-width:1120px;padding:16px 24px 40px;color:var(--fg);background:var(--bg);"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\n"
    "h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--rule)}"
    "h3{font-size:15px;margin:0 0 4px}\n"
    ".sub{color:var(--muted);margin:0 0 12px}p,li{max-width:100ch}\n"
    ".figure{margin:14px 0 22px;padding:12px 14px;background:var(--card);border-radius:6px;min-width:0}\n"
    ".figure .desc{color:var(--muted);margin:0 0 8px;font-size:13px}\n"
    "svg.chart{display:block;width:100%;height:auto;max-width:1040px}\n"
    "svg.chart text{fill:var(--fg);font-size:12px}svg.chart text.muted{fill:var(--muted)}\n"
    "svg.chart .grid{stroke:var(--grid);stroke-width:1}svg.chart .axis{stroke:var(--axis);stroke-width:1}\n"
    "svg.chart .ref0{stroke:var(--ref);stroke-width:2}svg.chart .ref1{stroke:var(--ref2);stroke-width:2;"
    "stroke-dasharray:6 4}\n"
    "svg.chart .whisker{stroke:var(--fg);stroke-width:1.5}svg.chart .band{fill:var(--fg);opacity:.12}\n"
    "svg.chart .bar{stroke:var(--bg);stroke-width:.5}svg.chart .front{fill:none;stroke:var(--fg);stroke-width:2}\n"
    "svg.chart .ring{fill:none;stroke:var(--ref);stroke-width:2.5}svg.chart .event{stroke:var(--ref);"
    "stroke-width:1;stroke-dasharray:2 3}\n"
    ".ev path,.ev circle,.ev rect{fill:var(--ref)}\n"
    "ul.legend{list-style:none;padding:0;margin:8px 0 4px;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px}\n"
    "ul.legend li{display:flex;align-items:center;gap:6px}ul.legend svg{width:16px;height:16px;flex:none}\n"
    "ul.legend .ref0{stroke:var(--ref);stroke-width:2.5}ul.legend .ref1{stroke:var(--ref2);stroke-width:2.5;"
    "stroke-dasharray:4 3}ul.legend .line{stroke-width:2.5}ul.legend .whisker{stroke:var(--fg);stroke-width:1.5}"
    "ul.legend .front{stroke:var(--fg);stroke-width:2;fill:none}ul.legend .ring{fill:none;stroke:var(--ref);"
    "stroke-width:2}\n"
    ".table-wrap{overflow-x:auto;max-width:100%;margin:6px 0}\n"
    "table.data{border-collapse:collapse;font-size:12px;font-variant-numeric:tabular-nums}\n"
    "table.data caption{text-align:left;color:var(--muted);padding:2px 0 4px}\n"
    "table.data th,table.data td{padding:2px 8px;border-bottom:1px solid var(--grid);white-space:nowrap;"
    "text-align:left}\n"
    "table.data th{font-weight:600;vertical-align:bottom}table.data th small{font-weight:400;color:var(--muted)}\n"
    "table.data td.n,table.data th.n{text-align:right}table.data tr.sep td{border-top:2px solid var(--rule)}\n"
    "pre{font-size:12px;overflow-x:auto;background:var(--card);padding:8px}\n"
    "footer{margin-top:32px;color:var(--muted);font-size:12px}\n"
    /* on paper: black on white whatever the screen's scheme, the page's full width, tables wrapping */
    "@media print{:root{--fg:#000;--bg:#fff;--muted:#333;--grid:#ccc;--axis:#000;--ref:#b3261e;--ref2:#6a3d9a;"
    "--card:#fff;--rule:#999}body{max-width:none;padding:0;font-size:11px}.figure{padding:0;margin:8px 0}"
    "svg.chart{break-inside:avoid}.table-wrap{overflow:visible}table.data{font-size:9px}"
    "table.data th,table.data td{white-space:normal;padding:1px 4px}"
    "table.wide{table-layout:fixed;width:100%}table.wide th,table.wide td{overflow-wrap:anywhere;font-size:7px}}\n";

static void put(HtmlDoc *d, const char *s) { fputs(s, d->f); }
static void esc(HtmlDoc *d, const char *s) { xml_esc(d->f, s); }

void html_begin(HtmlDoc *d, FILE *f, const char *title, const char *subtitle)
{
    memset(d, 0, sizeof *d);
    d->f = f;
    put(d, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
           "<meta name=\"color-scheme\" content=\"light dark\"/>\n<title>");
    esc(d, title);
    put(d, "</title>\n<style>\n");
    put(d, css);
    put(d, "</style>\n</head>\n<body>\n<header>\n<h1>");
    esc(d, title);
    put(d, "</h1>\n");
    if (subtitle && *subtitle) {
        put(d, "<p class=\"sub\">");
        esc(d, subtitle);
        put(d, "</p>\n");
    }
    put(d, "</header>\n<main>\n");
}

void html_h2(HtmlDoc *d, const char *id, const char *text)
{
    put(d, "<h2");
    if (id) {
        put(d, " id=\"");
        esc(d, id);
        put(d, "\"");
    }
    put(d, ">");
    esc(d, text);
    put(d, "</h2>\n");
}

/* <tag>escaped printf text</tag> */
__attribute__((format(printf, 3, 0))) static void vtagged(HtmlDoc *d, const char *tag, const char *fmt, va_list ap)
{
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(d->f, "<%s>", tag);
    esc(d, buf);
    fprintf(d->f, "</%s>\n", tag);
}

void html_p(HtmlDoc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vtagged(d, "p", fmt, ap);
    va_end(ap);
}

void html_li(HtmlDoc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vtagged(d, "li", fmt, ap);
    va_end(ap);
}

void html_list_begin(HtmlDoc *d) { put(d, "<ul class=\"notes\">\n"); }
void html_list_end(HtmlDoc *d) { put(d, "</ul>\n"); }

void html_pre(HtmlDoc *d, const char *text)
{
    put(d, "<pre>");
    esc(d, text);
    put(d, "</pre>\n");
}

void html_table(HtmlDoc *d, const Table *t, const char *id, const char *caption, int collapse_after)
{
    Err e;
    if (table_check(t, &e)) return html_fail(d, &e);
    int rows = table_rows(t), nc = table_ncols(t), collapsed = collapse_after > 0 && rows > collapse_after;
    if (collapsed) fprintf(d->f, "<details><summary>the %d rows</summary>\n", rows);
    /* wide tables (the summary's 42 columns) squeeze into the page when printed */
    put(d, nc > 12 ? "<div class=\"table-wrap\"><table class=\"data wide\""
                   : "<div class=\"table-wrap\"><table class=\"data\"");
    if (id) {
        put(d, " id=\"");
        esc(d, id);
        put(d, "\"");
    }
    put(d, ">");
    if (caption && *caption) {
        put(d, "<caption>");
        esc(d, caption);
        put(d, "</caption>");
    }
    put(d, "\n<thead><tr>");
    for (int c = 0; c < nc; c++) {
        const TableCol *col = table_col(t, c);
        put(d, col->type == TC_STR ? "<th>" : "<th class=\"n\">");
        esc(d, col->label ? col->label : col->name);
        if (col->unit && *col->unit) {
            put(d, "<br/><small>");
            esc(d, col->unit);
            put(d, "</small>");
        }
        put(d, "</th>");
    }
    put(d, "</tr></thead>\n<tbody>\n");
    int sep = 0;
    char buf[256];
    for (int l = 0; l < table_lines(t); l++) {
        if (table_line_is_rule(t, l)) {
            sep = 1;
            continue;
        }
        put(d, sep ? "<tr class=\"sep\">" : "<tr>");
        sep = 0;
        for (int c = 0; c < nc; c++) {
            const TableCol *col = table_col(t, c);
            const char *s = col->type == TC_STR ? table_get_str(t, l, c) : NULL;
            if (!s) {
                table_cell_text(t, l, c, TABLE_TEXT, buf, sizeof buf);
                s = buf;
            }
            put(d, col->type == TC_STR ? "<td>" : "<td class=\"n\">");
            esc(d, s);
            put(d, "</td>");
        }
        put(d, "</tr>\n");
    }
    put(d, "</tbody></table></div>\n");
    if (collapsed) put(d, "</details>\n");
}

void html_fig_begin(HtmlDoc *d, const char *id, const char *kind, const char *title, const char *desc)
{
    d->nfig++;
    put(d, "<figure class=\"figure\" id=\"fig-");
    esc(d, id);
    put(d, "\" data-chart=\"");
    esc(d, kind);
    put(d, "\">\n<h3>");
    esc(d, title);
    put(d, "</h3>\n");
    if (desc && *desc) {
        put(d, "<p class=\"desc\">");
        esc(d, desc);
        put(d, "</p>\n");
    }
}

void html_fig_end(HtmlDoc *d) { put(d, "</figure>\n"); }

void html_fail(HtmlDoc *d, const Err *e)
{
    if (d->err.st == ST_OK && e && e->st != ST_OK) d->err = *e;
}

Status html_end(HtmlDoc *d, Err *e)
{
    put(d, "</main>\n<footer>Written by fp8plan: one self-contained file (no scripts, no network). Hover a bar or a "
           "point for its value; the table under each chart holds the numbers it is drawn from.</footer>\n"
           "</body>\n</html>\n");
    if (d->err.st != ST_OK) {
        if (e) *e = d->err;
        return d->err.st;
    }
    if (ferror(d->f)) return err_set(e, ST_IO, "write error");
    return ST_OK;
}

Status html_table_page(const Table *t, FILE *f, Err *e)
{
    HtmlDoc d;
    const char *title = table_title(t);
    html_begin(&d, f, title ? title : "fp8plan", NULL);
    html_table(&d, t, "table", NULL, 0);
    return html_end(&d, e);
}
