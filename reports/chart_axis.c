/* reports/chart_axis.c — nice ticks and value-to-pixel mapping (see chart_axis.h). */
#include "reports/chart_axis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double axis_nice_step(double range, int target)
{
    if (!(range > 0) || !isfinite(range)) return 1;
    if (target < 1) target = 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
    /* the smallest of 1, 2, 5, 10 (x mag) at least the raw step */
    double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nice * mag;
}

void axis_linear(Axis *a, double lo, double hi, int target, double px0, double px1)
{
    memset(a, 0, sizeof *a);
    a->px0 = px0, a->px1 = px1;
    if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
    if (hi < lo) {
        double t = lo;
        lo = hi, hi = t;
    }
    if (hi == lo) hi = lo + (lo ? fabs(lo) : 1);
    a->step = axis_nice_step(hi - lo, target);
    a->lo = floor(lo / a->step) * a->step;
    a->hi = ceil(hi / a->step) * a->step;
    if (a->hi - a->lo < a->step * 0.5) a->hi = a->lo + a->step;
    for (int i = 0; a->lo + i * a->step <= a->hi + a->step * 1e-9 && a->nticks < AXIS_MAX_TICKS; i++) {
        double v = a->lo + i * a->step;
        a->ticks[a->nticks++] = fabs(v) < a->step * 1e-9 ? 0 : v;
    }
    a->hi = a->ticks[a->nticks - 1]; /* ticks bound the domain */
}

void axis_log(Axis *a, double lo, double hi, int target, double px0, double px1)
{
    memset(a, 0, sizeof *a);
    a->log = 1;
    a->px0 = px0, a->px1 = px1;
    if (!(lo > 0) || !(hi > 0) || !isfinite(lo) || !isfinite(hi)) lo = 1, hi = 10;
    if (hi < lo) {
        double t = lo;
        lo = hi, hi = t;
    }
    double d0 = floor(log10(lo)), d1 = ceil(log10(hi));
    if (d1 <= d0) d1 = d0 + 1;
    if (target < 1) target = 1;
    double every = ceil((d1 - d0) / target);
    if (every < 1) every = 1;
    d0 = floor(d0 / every) * every; /* ticks at multiples of `every` decades */
    d1 = ceil(d1 / every) * every;
    a->step = every;
    a->lo = pow(10, d0), a->hi = pow(10, d1);
    for (double d = d0; d <= d1 + 1e-9 && a->nticks < AXIS_MAX_TICKS; d += every) a->ticks[a->nticks++] = pow(10, d);
}

double axis_px(const Axis *a, double v)
{
    double t;
    if (a->log)
        t = v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : 0;
    else
        t = (v - a->lo) / (a->hi - a->lo);
    return a->px0 + t * (a->px1 - a->px0);
}

void axis_tick_label(const Axis *a, double v, char *buf, int size)
{
    if (a->log) {
        int d = (int)lround(log10(v));
        if (d >= -2 && d <= 2)
            snprintf(buf, (size_t)size, "%.*f", d < 0 ? -d : 0, v);
        else
            snprintf(buf, (size_t)size, "1e%d", d);
        return;
    }
    int decimals = 0;
    for (double s = a->step; decimals < 9 && fabs(s - round(s)) > 1e-9 * fmax(1, fabs(s)); s *= 10) decimals++;
    snprintf(buf, (size_t)size, "%.*f", decimals, v);
    if (!strcmp(buf, "-0")) snprintf(buf, (size_t)size, "0");
}
