/* reports/svg_doc.h — writing SVG and the HTML around it: escaping, checked
 * coordinates and the palette every chart shares.
 *
 * Every number that becomes a coordinate goes through svg_put's `$`
 * conversion, which writes it with two decimals and refuses NaN and Inf: the
 * writer remembers the refusal (Svg.bad) and the page fails with ST_SOFTWARE
 * instead of drawing a shape browsers would misplace silently. Text and
 * attribute values are XML-escaped, control characters dropped and invalid
 * UTF-8 replaced, so a page is well-formed XML as well as HTML (the tests
 * parse it as XML).
 *
 * Palette: colour-blind-safe colours (Okabe and Ito 2008) paired with a fill
 * pattern per style, so series stay apart in greyscale and in print. A style
 * is (colour, pattern); a chart declares the styles it uses and refers to
 * them by fill "url(#<chart>-s<C>-<P>)". */
#ifndef FP8PLAN_REPORTS_SVG_DOC_H
#define FP8PLAN_REPORTS_SVG_DOC_H

#include <stdio.h>

#include "util/status.h"

enum { SVG_NCOLOURS = 10, SVG_NPATTERNS = 9, SVG_NMARKERS = 6 };

typedef struct {
    FILE *f;
    char id[48];                 /* the chart's id: prefix of its pattern ids */
    int bad;                     /* a non-finite coordinate was refused */
    unsigned used[SVG_NCOLOURS]; /* bit p of used[c]: style (c, p) is referred to */
} Svg;

/* Write s escaped for XML text or a quoted attribute value (newlines and tabs kept, other control
 * characters written as blanks, bytes that are not UTF-8 as U+FFFD). */
void xml_esc(FILE *f, const char *s);

/* Formatted output with checked numbers. Conversions:
 *   $   a double coordinate or size, "%.2f" (trailing zeros trimmed); NaN/Inf refused (s->bad set, 0 written)
 *   %s  a string, XML-escaped        %r  a string written as is (markup the caller built)
 *   %d  an int                       %g  a double data value, "%.17g" (non-finite: refused like $)
 *   %%  a percent sign */
void svg_put(Svg *s, const char *fmt, ...);

/* <svg> with a viewBox of w x h, role="img", aria-label = label; svg_end closes it after writing the
 * pattern definitions of the styles used. */
void svg_begin(Svg *s, FILE *f, const char *id, double w, double h, const char *label);
void svg_end(Svg *s);

/* The fill of style (colour c, pattern p), marking it used: "url(#id-sC-P)". buf >= 64 bytes. */
const char *svg_fill(Svg *s, int colour, int pattern, char *buf);
/* The colour's hex code ("#0072b2"), for lines and markers. */
const char *svg_colour(int colour);

/* Point markers: circle, square, diamond, triangle up, triangle down, cross (marker % SVG_NMARKERS),
 * centred on (x, y) with half-size r, inside the element the caller has opened. */
void svg_marker(Svg *s, int marker, double x, double y, double r, const char *colour);

/* Status of the drawing: ST_SOFTWARE naming the chart when a coordinate was refused. */
Status svg_status(const Svg *s, Err *e);

/* Estimated width in px of text at `px` font size (for margins; no font metrics at hand, so it errs
 * wide). */
double svg_text_width(const char *s, double px);
/* s cut to fit max_w (estimated), ending in an ellipsis when cut. */
void svg_fit_text(const char *s, double px, double max_w, char *out, size_t size);

#endif
