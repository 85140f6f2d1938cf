/* reports/svg_doc.c — escaping, checked coordinates, palette (see svg_doc.h). */
#include "reports/svg_doc.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* Okabe & Ito's colour-blind-safe set, black replaced by a grey that shows on dark pages too, then Tol's
 * wine and olive: the plan's nine memory groups each get a colour of their own (with eight, overheads
 * wrapped round to the weights' blue). */
static const char *const colours[SVG_NCOLOURS] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
                                                  "#d55e00", "#f0e442", "#8c8c8c", "#882255", "#999933"};
/* dark colours get light pattern strokes, light ones dark strokes */
static const int colour_dark[SVG_NCOLOURS] = {1, 0, 1, 0, 0, 1, 0, 0, 1, 0};

const char *svg_colour(int colour) { return colours[(unsigned)colour % SVG_NCOLOURS]; }

/* Bytes of the UTF-8 sequence starting at p (1-4), or 0 when it is not valid UTF-8. */
static int utf8_len(const unsigned char *p)
{
    int n = p[0] < 0x80 ? 1 : (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3 : (p[0] >> 3) == 30 ? 4 : 0;
    if (n == 2 && p[0] < 0xc2) return 0; /* overlong */
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 3) {
        uint32_t cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    }
    if (n == 4) {
        uint32_t cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 |
                      (p[3] & 0x3f);
        if (cp < 0x10000 || cp > 0x10ffff) return 0;
    }
    return n;
}

void xml_esc(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        switch (*p) {
        case '&': fputs("&amp;", f), p++; continue;
        case '<': fputs("&lt;", f), p++; continue;
        case '>': fputs("&gt;", f), p++; continue;
        case '"': fputs("&quot;", f), p++; continue;
        case '\'': fputs("&#39;", f), p++; continue;
        default: break;
        }
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) { /* not allowed in XML */
            fputc(' ', f), p++;
            continue;
        }
        int n = utf8_len(p);
        if (!n) {
            fputs("\xef\xbf\xbd", f), p++; /* U+FFFD for a byte that is not UTF-8 */
            continue;
        }
        fwrite(p, 1, (size_t)n, f);
        p += n;
    }
}

static void put_coord(Svg *s, double v)
{
    if (!isfinite(v)) {
        s->bad = 1;
        fputc('0', s->f);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0') *end-- = '\0';
        if (end == dot) *end = '\0';
    }
    if (!strcmp(buf, "-0")) strcpy(buf, "0");
    fputs(buf, s->f);
}

void svg_put(Svg *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; p++) {
        if (*p == '$') {
            put_coord(s, va_arg(ap, double));
            continue;
        }
        if (*p != '%' || !p[1]) {
            fputc(*p, s->f);
            continue;
        }
        switch (*++p) {
        case 's': xml_esc(s->f, va_arg(ap, const char *)); break;
        case 'r': fputs(va_arg(ap, const char *), s->f); break;
        case 'd': fprintf(s->f, "%d", va_arg(ap, int)); break;
        case 'g': {
            double v = va_arg(ap, double);
            if (!isfinite(v)) s->bad = 1, v = 0;
            fprintf(s->f, "%.17g", v);
            break;
        }
        default: fputc(*p, s->f); break;
        }
    }
    va_end(ap);
}

void svg_begin(Svg *s, FILE *f, const char *id, double w, double h, const char *label)
{
    memset(s, 0, sizeof *s);
    s->f = f;
    snprintf(s->id, sizeof s->id, "%s", id);
    svg_put(s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"%s\" viewBox=\"0 0 $ $\" width=\"$\" "
            "role=\"img\" aria-label=\"%s\" data-w=\"$\" data-h=\"$\">\n",
            id, w, h, w, label, w, h);
}

/* One pattern tile: the colour underneath, strokes or dots over it. */
static void pattern_def(Svg *s, int c, int p)
{
    const char *ink = colour_dark[c] ? "rgba(255,255,255,0.75)" : "rgba(0,0,0,0.6)";
    static const char *const shapes[SVG_NPATTERNS] = {
        "",                                                                           /* solid */
        "<path d=\"M-1,1 l2,-2 M0,8 l8,-8 M7,9 l2,-2\"/>",                            /* diagonal / */
        "<circle cx=\"2\" cy=\"2\" r=\"1.3\"/><circle cx=\"6\" cy=\"6\" r=\"1.3\"/>", /* dots */
        "<path d=\"M0,2 h8 M0,6 h8\"/>",                                              /* horizontal */
        "<path d=\"M-1,7 l2,2 M0,0 l8,8 M7,-1 l2,2\"/>",                              /* diagonal \ */
        "<path d=\"M0,0 l8,8 M8,0 l-8,8\"/>",                                         /* cross-hatch */
        "<path d=\"M2,0 v8 M6,0 v8\"/>",                                              /* vertical */
        "<path d=\"M0,4 h8 M4,0 v8\"/>",                                              /* grid */
        "<path d=\"M0,6 l2,-4 l2,4 l2,-4 l2,4\"/>",                                   /* zigzag */
    };
    svg_put(s, "<pattern id=\"%s-s%d-%d\" patternUnits=\"userSpaceOnUse\" width=\"8\" height=\"8\">", s->id, c, p);
    svg_put(s, "<rect width=\"8\" height=\"8\" fill=\"%r\"/>", colours[c]);
    if (p)
        svg_put(s, "<g stroke=\"%r\" fill=\"%r\" stroke-width=\"1.4\">%r</g>", ink, p == 2 ? ink : "none", shapes[p]);
    svg_put(s, "</pattern>");
}

void svg_end(Svg *s)
{
    int any = 0;
    for (int c = 0; c < SVG_NCOLOURS; c++) any |= s->used[c] != 0;
    if (any) {
        svg_put(s, "<defs>");
        for (int c = 0; c < SVG_NCOLOURS; c++)
            for (int p = 0; p < SVG_NPATTERNS; p++)
                if (s->used[c] & (1u << p)) pattern_def(s, c, p);
        svg_put(s, "</defs>\n");
    }
    svg_put(s, "</svg>\n");
}

const char *svg_fill(Svg *s, int colour, int pattern, char *buf)
{
    int c = (int)((unsigned)colour % SVG_NCOLOURS), p = (int)((unsigned)pattern % SVG_NPATTERNS);
    s->used[c] |= 1u << p;
    snprintf(buf, 64, "url(#%s-s%d-%d)", s->id, c, p);
    return buf;
}

void svg_marker(Svg *s, int marker, double x, double y, double r, const char *colour)
{
    switch ((unsigned)marker % SVG_NMARKERS) {
    case 0: svg_put(s, "<circle cx=\"$\" cy=\"$\" r=\"$\" fill=\"%r\"/>", x, y, r, colour); break;
    case 1:
        svg_put(s, "<rect x=\"$\" y=\"$\" width=\"$\" height=\"$\" fill=\"%r\"/>", x - r, y - r, 2 * r, 2 * r, colour);
        break;
    case 2:
        svg_put(s, "<path d=\"M$,$ L$,$ L$,$ L$,$ Z\" fill=\"%r\"/>", x, y - 1.3 * r, x + 1.3 * r, y, x, y + 1.3 * r,
                x - 1.3 * r, y, colour);
        break;
    case 3:
        svg_put(s, "<path d=\"M$,$ L$,$ L$,$ Z\" fill=\"%r\"/>", x, y - 1.3 * r, x + 1.2 * r, y + r, x - 1.2 * r, y + r,
                colour);
        break;
    case 4:
        svg_put(s, "<path d=\"M$,$ L$,$ L$,$ Z\" fill=\"%r\"/>", x, y + 1.3 * r, x + 1.2 * r, y - r, x - 1.2 * r, y - r,
                colour);
        break;
    default:
        svg_put(s, "<path d=\"M$,$ L$,$ M$,$ L$,$\" stroke=\"%r\" stroke-width=\"2.2\" fill=\"none\"/>", x - r, y - r,
                x + r, y + r, x - r, y + r, x + r, y - r, colour);
        break;
    }
}

Status svg_status(const Svg *s, Err *e)
{
    if (s->bad) return err_set(e, ST_SOFTWARE, "chart %s: a coordinate was not a finite number", s->id);
    return ST_OK;
}

double svg_text_width(const char *s, double px)
{
    /* widths in em of a wide sans-serif (DejaVu Sans); erring wide keeps labels inside the chart */
    double w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xc0) == 0x80) continue; /* UTF-8 continuation byte */
        if (*p == ' ' || *p == '.' || *p == ',' || *p == ':' || *p == 'i' || *p == 'l' || *p == 'j' || *p == '|')
            w += 0.33;
        else if (*p == 'm' || *p == 'w' || *p == 'M' || *p == 'W' || *p == '%')
            w += 0.95;
        else if (*p >= 'A' && *p <= 'Z')
            w += 0.72;
        else
            w += 0.64;
    }
    return w * px;
}

void svg_fit_text(const char *s, double px, double max_w, char *out, size_t size)
{
    snprintf(out, size, "%s", s);
    if (svg_text_width(out, px) <= max_w) return;
    size_t n = strlen(out);
    while (n > 0) {
        n--;
        while (n > 0 && ((unsigned char)out[n] & 0xc0) == 0x80) n--; /* whole UTF-8 characters */
        if (n + 4 > size) continue;
        memcpy(out + n, "\xe2\x80\xa6", 4); /* … */
        if (svg_text_width(out, px) <= max_w) return;
    }
}
