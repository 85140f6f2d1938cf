/* tui/export.h — `e`: the current screen as CSV, through reports/table.h and
 * written atomically (util/fileio.h OutFile), so an export is the same bytes
 * the command line prints for the same inputs:
 *   Plan     = `fp8plan plan --format csv` (the summary row, plan_summary_row)
 *   Compare  = `fp8plan compare --recipes A,B,... --format csv` (one summary row per column)
 *   Scales   = Table 1b of `fp8plan report seed` (seed_table1b) for the shape shown
 *   Scaling  = `fp8plan scaling --format csv` for the same trace and settings
 *   Formats  = the value explorer's cast in both formats (input, scale, code, decoded, error). */
#ifndef FP8PLAN_TUI_EXPORT_H
#define FP8PLAN_TUI_EXPORT_H

#include <stddef.h>

#include "reports/table.h"
#include "tui/state.h"

/* The table the current screen exports (caller frees), or NULL with e set
 * (e.g. the plan is invalid: nothing to export). */
Table *tui_export_table(const TuiState *s, Err *e);

/* Write that table as CSV to path atomically. *rows gets the data rows written. */
Status tui_export(const TuiState *s, const char *path, int *rows, Err *e);

/* "fp8plan-plan.csv", "fp8plan-compare.csv", ... */
void tui_export_default_path(const TuiState *s, char *buf, size_t n);

#endif
