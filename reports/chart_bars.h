/* reports/chart_bars.h — horizontal bar charts drawn from a Table's rows:
 * stacked (segments are columns), grouped (one bar per row of a group, or
 * one bar per BarDef), with per-bar reference marks (capacity, headroom) and
 * interval whiskers (tolerance bands). The value axis starts at zero.
 *
 * Rows with the same text in `cat_col` form a group (in first-seen order);
 * every BarDef gives each row of the group one bar, stacked from its columns
 * (or, with stack_col, consecutive rows stack into one bar: long tables).
 * Each segment is a <rect class="bar"> carrying data-v (the cell exactly as
 * the CSV writes it), data-line, data-col and a <title> with the value, so
 * hover shows the number and tests can compare it with the CSV. The figure
 * ends with the table itself (html_table).
 *
 * Styles: several keys (series rows or BarDefs) and several segments: colour
 * by key, pattern by segment; only keys: colour + pattern by key; only
 * segments: colour + pattern by segment. Bars also carry direct labels (the
 * key and the total), so neither colour nor pattern alone carries meaning. */
#ifndef FP8PLAN_REPORTS_CHART_BARS_H
#define FP8PLAN_REPORTS_CHART_BARS_H

#include "reports/html_page.h"
#include "reports/table.h"

enum { BAR_MAX_SEGS = 12, BAR_MAX_DEFS = 3, BAR_MAX_REFS = 2 };

typedef struct {
    const char *label;                      /* legend / key when nbars > 1 ("planned") */
    const char *cols[BAR_MAX_SEGS];         /* numeric columns stacked left to right; NULL-terminated */
    int overlay;                            /* 1: every column drawn from zero, later ones over earlier ones
                                       (time_s, then exposed_s inside it) instead of stacked */
    const char *lo_col, *hi_col;            /* optional interval drawn over the bar (both or neither), or: */
    const char *tol_pct_col, *tol_base_col; /* the interval base x (1 -+ pct / 100) (Table 5's tolerance) */
} BarDef;

typedef struct {
    const char *col;   /* numeric column: a mark across each bar of the row */
    double frac;       /* the mark is at col x frac (0 = 1): a headroom limit at 0.95 of capacity */
    const char *label; /* legend text */
} BarRef;

typedef struct {
    const char *id; /* the SVG's id ("mem"); the figure is "fig-<id>" */
    const char *title, *desc;
    const char *axis;                /* value axis title with its unit: "per-GPU memory (GB = 1e9 B)" */
    const char *unit;                /* unit of value labels ("GB") */
    double scale;                    /* axis units per table unit (1e-9 for bytes shown in GB); 0 = 1 */
    int decimals;                    /* of value labels */
    const char *cat_col;             /* group label */
    const char *cat_col2, *cat_col3; /* optional columns joined to the label ("gpt-7b · bf16") */
    const char *series_col;          /* optional key of each row within its group (recipe) */
    const char *stack_col;           /* optional: consecutive rows with the same group and key stack into one bar,
                               each row a segment named by this column (bars[0].cols[0] its value) */
    const char *skip_col, *skip_val; /* optional: rows whose skip_col text is skip_val are not drawn */
    const char *only_col, *only_val; /* optional: only rows whose only_col text is only_val are drawn */
    BarDef bars[BAR_MAX_DEFS];
    int nbars;
    const char *seg_labels[BAR_MAX_SEGS]; /* legend text per segment (NULL: the column's label or name) */
    BarRef refs[BAR_MAX_REFS];
    int nrefs;
    const char *band_label; /* legend text of the interval whiskers */
    const char *table_caption;
    int collapse_after; /* html_table's */
} BarSpec;

/* The figure with its SVG, legend and table. Errors (a column that is not there, a non-finite
 * coordinate, no bar to draw) are recorded in d. */
void chart_bars(HtmlDoc *d, const Table *t, const BarSpec *spec);

#endif
