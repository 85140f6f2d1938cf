/* reports/chart_frame.h — what bar and XY charts draw alike: axes with ticks,
 * grid and title, and the HTML legend under the SVG. */
#ifndef FP8PLAN_REPORTS_CHART_FRAME_H
#define FP8PLAN_REPORTS_CHART_FRAME_H

#include "reports/chart_axis.h"
#include "reports/svg_doc.h"

/* A horizontal value axis at y = `base` with grid lines up to `top`, tick labels below and the
 * title under them. */
void frame_x_axis(Svg *s, const Axis *a, double base, double top, const char *title);
/* A vertical value axis at x = `left` with grid lines across to `right`, tick labels left of it and
 * the title rotated along it at x = `title_x`. */
void frame_y_axis(Svg *s, const Axis *a, double left, double right, double title_x, const char *title);

/* Legend entries (ul.legend), written after the SVG. Swatch kinds: */
typedef enum { SW_FILL, SW_LINE, SW_MARKER, SW_EVENT, SW_REF0, SW_REF1, SW_WHISKER, SW_FRONT, SW_RING } SwatchKind;
void legend_begin(Svg *s);
/* fill: a url()/colour for SW_FILL; colour for SW_LINE/SW_MARKER; marker index for SW_MARKER/SW_EVENT. */
void legend_item(Svg *s, SwatchKind kind, const char *fill, int marker, const char *label);
void legend_end(Svg *s);

#endif
