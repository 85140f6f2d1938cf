/* reports/chart_term.c — one-line memory bars for the terminal (see chart_term.h). */
#include "reports/chart_term.h"

#include <math.h>
#include <string.h>

int term_bar_split(const uint64_t *v, int n, double full, int width, int *cells)
{
    double sum = 0, frac[64];
    for (int i = 0; i < n; i++) sum += (double)v[i], cells[i] = 0;
    if (!(full > 0) || width <= 0) return 0;
    int target = (int)floor(sum * width / full + 0.5), used = 0;
    for (int i = 0; i < n && i < 64; i++) {
        double exact = (double)v[i] * width / full;
        cells[i] = (int)floor(exact);
        frac[i] = exact - cells[i];
        used += cells[i];
    }
    while (used < target) { /* largest remainder first; the earlier term wins a tie */
        int best = -1;
        for (int i = 0; i < n && i < 64; i++)
            if (frac[i] > 0 && (best < 0 || frac[i] > frac[best])) best = i;
        if (best < 0) break;
        cells[best]++;
        frac[best] = 0;
        used++;
    }
    return used;
}

static const char *const glyph_ascii[TERM_GLYPH_COUNT_] = {"#", "=", "*", "+", "%", ".", "|"};
static const char *const glyph_utf8[TERM_GLYPH_COUNT_] = {
    "\xe2\x96\x88", /* █ */
    "\xe2\x96\x93", /* ▓ */
    "\xe2\x96\x92", /* ▒ */
    "\xe2\x96\x91", /* ░ */
    "\xe2\x96\x9a", /* ▚ */
    "\xc2\xb7",     /* · */
    "\xe2\x94\x82", /* │ */
};
const char *term_bar_glyph(int unicode, int g)
{
    if (g < 0 || g >= TERM_GLYPH_COUNT_) return "?";
    return unicode ? glyph_utf8[g] : glyph_ascii[g];
}

static const char *const cat_label[MC_COUNT_] = {"state", "FP8 copies", "scales", "activations", "overheads"};

Status term_memory_bars(FILE *f, const Plan *plans, int n, int unicode, Err *e)
{
    const char *const *g = unicode ? glyph_utf8 : glyph_ascii;
    enum { G_FREE = TERM_GLYPH_FREE, G_CAP = TERM_GLYPH_CAP };
    char tail[16][48];
    int namew = 4, tailw = 0;
    double full = 0;
    if (n > 16) n = 16;
    for (int i = 0; i < n; i++) {
        const Plan *p = &plans[i];
        int l = (int)strlen(p->in.recipe->name);
        namew = l > namew ? l : namew;
        full = fmax(full, fmax((double)p->total_bytes, (double)p->capacity_bytes));
        l = snprintf(tail[i], sizeof tail[i], "  %.2f of %.2f GB  %s", (double)p->total_bytes / 1e9,
                     (double)p->capacity_bytes / 1e9,
                     p->verdict == PLAN_UNCERTAIN ? "UNCERTAIN"
                     : p->fits                    ? "FITS"
                                                  : "OOM");
        tailw = l > tailw ? l : tailw;
    }
    if (namew > 20) namew = 20;
    int width = TERM_BAR_COLUMNS - (2 + namew + 2) - 1 - tailw; /* the capacity mark takes a column */
    if (width < 10) width = 10;
    fprintf(f, "memory (GB = 1e9 B):");
    for (int c = 0; c < MC_COUNT_; c++) fprintf(f, "%s%s %s", c ? "  " : " ", g[c], cat_label[c]);
    fprintf(f, "  %s free  %s capacity\n", g[G_FREE], g[G_CAP]);
    for (int i = 0; i < n; i++) {
        const Plan *p = &plans[i];
        int cells[MC_COUNT_], cap = full > 0 ? (int)floor((double)p->capacity_bytes * width / full + 0.5) : width;
        int used = term_bar_split(p->cat_bytes, MC_COUNT_, full, width, cells), col = 0;
        fprintf(f, "  %-*.*s  ", namew, namew, p->in.recipe->name);
        for (int c = 0; c <= MC_COUNT_; c++) {
            int k = c < MC_COUNT_ ? cells[c] : width - used;
            for (int j = 0; j < k; j++, col++) {
                if (col == cap) fputs(g[G_CAP], f);
                fputs(c < MC_COUNT_ ? g[c] : col < cap ? g[G_FREE] : " ", f);
            }
        }
        if (cap >= width) fputs(g[G_CAP], f);
        fprintf(f, "%s\n", tail[i]);
    }
    if (ferror(f)) return err_set(e, ST_IO, "write error");
    return ST_OK;
}
