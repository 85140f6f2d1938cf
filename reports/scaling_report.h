/* reports/scaling_report.h — the delayed-scaling trace as a table: one row per
 * step of fp8/delayed.h's state machine, with where small and large values land
 * at that step's scale (fp8/scale.h's ScaleBounds). The one builder behind
 * `fp8plan scaling` and the TUI's Scaling export, so the two are byte for byte
 * the same (tests/cli/tui_session.sh checks it).
 *
 * Columns: step, amax (%.9g text: nan and inf print as such), scale (the scale
 * the step cast with), cast (ok, saturates, nan, inf), next_scale, window_amax,
 * update (ok, kept: zero|inf|nan, tiny: FLT_MAX), flush_below, min_sub_below,
 * saturate_above (magnitudes in the tensor's own units at this step's scale). */
#ifndef FP8PLAN_REPORTS_SCALING_REPORT_H
#define FP8PLAN_REPORTS_SCALING_REPORT_H

#include "fp8/delayed.h"
#include "reports/table.h"

/* An empty trace table with a text title naming cfg; NULL when out of memory. */
Table *scaling_table_new(const DelayedCfg *cfg);

/* Append the row of one step (fmt: the format the tensor is cast to). */
void scaling_table_row(Table *t, Dtype fmt, const DelayedStep *st);

/* The whole trace: delayed scaling run over amax[0..n) from a fresh state. NULL with e set
 * (ST_NOMEM, or delayed_init's ST_USAGE for a bad config). */
Table *scaling_trace_table(const DelayedCfg *cfg, const float *amax, size_t n, Err *e);

/* Example traces of SCALING_TRACE_STEPS steps: an amax that sits near 1 (weights and activations
 * after a norm), and the seed's worked example, the same with one step that sees 640 (step 6). */
enum { SCALING_TRACE_STEPS = 16 };
void scaling_steady_trace(float amax[SCALING_TRACE_STEPS]);
void scaling_spike_trace(float amax[SCALING_TRACE_STEPS]);

#endif
