/* reports/chart_axis.h — a value axis: linear from zero (bars) or from a
 * data range, or logarithmic (decades), with "nice" ticks (1, 2 or 5 x 10^k)
 * and the mapping from values to pixels. Pure arithmetic; the unit tests work
 * the ticks out by hand. */
#ifndef FP8PLAN_REPORTS_CHART_AXIS_H
#define FP8PLAN_REPORTS_CHART_AXIS_H

enum { AXIS_MAX_TICKS = 16 };

typedef struct {
    int log;         /* 1: log10 scale */
    double lo, hi;   /* domain after rounding out to ticks (log: powers of ten) */
    double px0, px1; /* pixels of lo and hi (px1 < px0 for a y axis) */
    double step;     /* linear: tick spacing; log: decades between ticks */
    int nticks;
    double ticks[AXIS_MAX_TICKS];
} Axis;

/* The nice step (1, 2 or 5 x 10^k) for about `target` intervals over `range` > 0. */
double axis_nice_step(double range, int target);

/* A linear axis covering [lo, hi] (lo = 0 for bars) rounded out to whole steps of about `target`
 * intervals; an empty or zero range becomes [lo, lo + 1]. Non-finite input gives [0, 1]. */
void axis_linear(Axis *a, double lo, double hi, int target, double px0, double px1);

/* A log axis over the decades covering [lo, hi] (both > 0; otherwise [1, 10]); ticks every decade,
 * or every 2nd, 3rd ... decade when there are more than `target`. */
void axis_log(Axis *a, double lo, double hi, int target, double px0, double px1);

/* Pixel of v; values outside the domain map outside [px0, px1]. A log axis maps v <= 0 to px0. */
double axis_px(const Axis *a, double v);

/* A tick's label: linear ticks with as many decimals as the step needs ("0.25", "120"), log ticks as
 * "1e-3" .. "0.01", "0.1", "1", "10", "100", "1e3" ... */
void axis_tick_label(const Axis *a, double v, char *buf, int size);

#endif
