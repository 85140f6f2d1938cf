/* reports/chart_frame.c — axes and legends shared by the charts (see chart_frame.h). */
#include "reports/chart_frame.h"

void frame_x_axis(Svg *s, const Axis *a, double base, double top, const char *title)
{
    char lab[32];
    svg_put(s, "<g class=\"x-axis\">");
    for (int i = 0; i < a->nticks; i++) {
        double x = axis_px(a, a->ticks[i]);
        axis_tick_label(a, a->ticks[i], lab, sizeof lab);
        svg_put(s, "<line class=\"grid\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/>", x, top, x, base);
        svg_put(s, "<text class=\"tick\" x=\"$\" y=\"$\" text-anchor=\"middle\" data-tick=\"%g\">%s</text>", x,
                base + 15, a->ticks[i], lab);
    }
    svg_put(s, "<line class=\"axis\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/>", a->px0, base, a->px1, base);
    svg_put(s, "<text class=\"axis-title\" x=\"$\" y=\"$\" text-anchor=\"middle\">%s</text></g>\n",
            (a->px0 + a->px1) / 2, base + 34, title);
}

void frame_y_axis(Svg *s, const Axis *a, double left, double right, double title_x, const char *title)
{
    char lab[32];
    svg_put(s, "<g class=\"y-axis\">");
    for (int i = 0; i < a->nticks; i++) {
        double y = axis_px(a, a->ticks[i]);
        axis_tick_label(a, a->ticks[i], lab, sizeof lab);
        svg_put(s, "<line class=\"grid\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/>", left, y, right, y);
        svg_put(s, "<text class=\"tick\" x=\"$\" y=\"$\" text-anchor=\"end\" data-tick=\"%g\">%s</text>", left - 6,
                y + 4, a->ticks[i], lab);
    }
    svg_put(s, "<line class=\"axis\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/>", left, a->px0, left, a->px1);
    double mid = (a->px0 + a->px1) / 2;
    svg_put(s,
            "<text class=\"axis-title\" x=\"$\" y=\"$\" text-anchor=\"middle\" transform=\"rotate(-90 $ $)\">%s</text>"
            "</g>\n",
            title_x, mid, title_x, mid, title);
}

void legend_begin(Svg *s) { svg_put(s, "<ul class=\"legend\">"); }
void legend_end(Svg *s) { svg_put(s, "</ul>\n"); }

void legend_item(Svg *s, SwatchKind kind, const char *fill, int marker, const char *label)
{
    svg_put(s, "<li><svg viewBox=\"0 0 16 16\" aria-hidden=\"true\">");
    switch (kind) {
    case SW_FILL: svg_put(s, "<rect x=\"1\" y=\"1\" width=\"14\" height=\"14\" fill=\"%r\"/>", fill); break;
    case SW_LINE: svg_put(s, "<line class=\"line\" x1=\"0\" y1=\"8\" x2=\"16\" y2=\"8\" stroke=\"%r\"/>", fill); break;
    case SW_MARKER: svg_marker(s, marker, 8, 8, 5, fill); break;
    case SW_EVENT:
        svg_put(s, "<g class=\"ev\">");
        svg_marker(s, marker, 8, 8, 5, "#b3261e");
        svg_put(s, "</g>");
        break;
    case SW_REF0: svg_put(s, "<line class=\"ref0\" x1=\"8\" y1=\"0\" x2=\"8\" y2=\"16\"/>"); break;
    case SW_REF1: svg_put(s, "<line class=\"ref1\" x1=\"8\" y1=\"0\" x2=\"8\" y2=\"16\"/>"); break;
    case SW_WHISKER: svg_put(s, "<path class=\"whisker\" d=\"M2,8 H14 M2,4 V12 M14,4 V12\" fill=\"none\"/>"); break;
    case SW_FRONT: svg_put(s, "<path class=\"front\" d=\"M1,14 L6,14 L6,7 L11,7 L11,2 L15,2\"/>"); break;
    case SW_RING: svg_put(s, "<circle class=\"ring\" cx=\"8\" cy=\"8\" r=\"5.5\"/>"); break;
    }
    svg_put(s, "</svg>%s</li>", label);
}
