/* reports/chart_term.h — charts in the terminal: the one-line memory bar per
 * plan that `plan` and `compare` print under their tables (and the cell split
 * the TUI's bar uses too).
 *
 *   memory (GB = 1e9 B): # state  = FP8 copies  * scales  + activations  % overheads  . free  | capacity
 *     megatron-bf16  ##########################++++++++%%%%%...........|  65.04 of 85.52 GB  FITS
 *
 * One scale for all plans (the largest of their totals and capacities), the
 * capacity marked where it falls; segments are the plan's five memory
 * categories with the TUI's glyphs: Unicode blocks, or ASCII. Every line fits
 * TERM_BAR_COLUMNS. */
#ifndef FP8PLAN_REPORTS_CHART_TERM_H
#define FP8PLAN_REPORTS_CHART_TERM_H

#include <stdint.h>
#include <stdio.h>

#include "planner/plan.h"
#include "util/status.h"

enum { TERM_BAR_COLUMNS = 100 };

/* Split `width` cells among n values on a scale where `full` fills the bar. Cells are whole; the
 * split uses largest remainders so they add up to round(sum * width / full), and a value never
 * gets more cells than its share rounded up (ties: the earlier value). Returns the cells used. */
int term_bar_split(const uint64_t *v, int n, double full, int width, int *cells);

/* The bar's glyphs: 0 .. MC_COUNT_-1 the memory categories, then TERM_GLYPH_FREE and TERM_GLYPH_CAP
 * (free space, the capacity mark); Unicode blocks (█ ▓ ▒ ░ ▚ · │) or ASCII (# = * + % . |). The TUI's
 * bar uses the same. */
enum { TERM_GLYPH_FREE = MC_COUNT_, TERM_GLYPH_CAP, TERM_GLYPH_COUNT_ };
const char *term_bar_glyph(int unicode, int g);

/* The legend line and one bar line per plan. unicode: block glyphs, else ASCII. */
Status term_memory_bars(FILE *f, const Plan *plans, int n, int unicode, Err *e);

#endif
