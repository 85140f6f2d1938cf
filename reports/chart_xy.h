/* reports/chart_xy.h — line and scatter charts drawn from Table columns:
 * linear or log axes, series as lines, steps or points (marker shape and
 * colour per series), event marks (rows whose status column is not "ok", e.g.
 * a saturating cast), a front (a line through chosen rows: the Pareto front)
 * one marked point (the chosen plan) and up to two vertical limits (a
 * sweep's memory capacity and limit).
 *
 * Points carry data-x / data-y (the cells exactly as the CSV writes them) and
 * a <title>; values a log axis cannot show (<= 0) and non-finite ones are
 * left out and counted in the figure's note. Points of one series that land
 * in the same XY_BIN_PX x XY_BIN_PX square (less than a marker's size) are
 * drawn once, with how many rows it stands for (data-n), so a sweep of tens of
 * thousands of layouts stays a file of a few MB. */
#ifndef FP8PLAN_REPORTS_CHART_XY_H
#define FP8PLAN_REPORTS_CHART_XY_H

#include "reports/html_page.h"
#include "reports/table.h"

typedef enum { XY_LINE = 0, XY_POINTS, XY_STEPS } XyKind;

enum { XY_MAX_SERIES = 24, XY_MAX_TIPS = 6, XY_BIN_PX = 4 };

typedef struct {
    const Table *t;
    const char *x_col, *y_col;
    const char *filter_col, *filter_val; /* only rows where filter_col's text is filter_val (NULL: all) */
    const char *label;
    XyKind kind;
    int style;                     /* colour and marker index */
    int dashed;                    /* lines */
    const char *tips[XY_MAX_TIPS]; /* more columns named in each point's hover text */
} XySeries;

typedef struct {
    const Table *t;
    const char *x_col, *y_col; /* where the mark goes */
    const char *status_col;    /* a mark on every row whose text here is not ok_value */
    const char *ok_value;
    const char *label; /* legend */
} XyEvents;

typedef struct {
    const Table *t; /* NULL: none */
    int line;
    const char *x_col, *y_col, *label;
} XyMark;

typedef struct {
    double x;          /* table units (before x_scale) */
    const char *label; /* legend and hover text (with the value: the chart does not know its unit) */
} XyLimit;             /* a vertical line across the plot (a sweep's memory capacity and limit) */

typedef struct {
    const char *id, *title, *desc;
    const char *x_axis, *y_axis; /* titles with units */
    int x_log, y_log;
    int x_zero, y_zero;      /* linear axes: include zero */
    double x_scale, y_scale; /* axis units per table unit (0 = 1) */
    XySeries series[XY_MAX_SERIES];
    int nseries;
    XyEvents events[2];
    int nevents;
    XySeries front; /* .t NULL: none; drawn as steps through its rows, in order */
    XyMark mark;
    XyLimit limits[2]; /* the first solid, the second dashed (the bar charts' ref0/ref1 marks); x range covers them */
    int nlimits;
    const Table *table; /* the table under the figure (NULL: the first series') */
    const char *table_caption;
    int collapse_after;
} XySpec;

void chart_xy(HtmlDoc *d, const XySpec *spec);

#endif
