/* fp8/delayed.h — the delayed-scaling state machine of Transformer Engine's
 * DelayedScaling recipe, for one FP8 tensor.
 *
 * A step casts with the scale computed at the end of the previous step (the
 * tensor is read once), records the amax it observed in history[0], then, in
 * TE's order:
 *   1. the amax for the next scale is taken from the window *including* this
 *      step's amax: `max` = fmaxf over all history_len slots (fmaxf ignores
 *      NaN; empty slots hold 0), `most_recent` = this step's amax;
 *   2. next scale = fmax * 2^-margin / amax when that amax is finite and > 0,
 *      else the previous scale is kept (amax 0, Inf, NaN); an Inf result
 *      (tiny amax) becomes FLT_MAX;
 *   3. the window rotates left by one and slot 0 is zeroed for the next step:
 *      [a_0, a_1, ..., a_{L-1}] -> [0, a_2, ..., a_{L-1}, a_0].
 * An Inf amax therefore blocks `max` scale updates for history_len steps,
 * as in TE. The first step's scale is 1 (TE initialises scales to 1).
 * TE's multi-tensor bulk kernel skips the rotation when the reduced amax is 0
 * (a tensor unused this step); this models the per-tensor kernel, which
 * always rotates.
 *
 * TE defaults: history 1024, max, margin 0. Megatron-Core's: history 1,
 * most_recent. The history buffer is caller-owned (history_len floats). */
#ifndef FP8PLAN_FP8_DELAYED_H
#define FP8PLAN_FP8_DELAYED_H

#include <stdint.h>

#include "fp8/scale.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AMAX_ALGO_MAX = 0, AMAX_ALGO_MOST_RECENT = 1 } AmaxAlgo;

/* "max" / "most_recent"; parse also accepts "most-recent". 0 ok, -1 unknown. */
const char *amax_algo_name(AmaxAlgo a);
int amax_algo_parse(const char *s, AmaxAlgo *out);

typedef struct {
    Dtype fmt;         /* DT_E4M3 (forward) or DT_E5M2 (gradients, HYBRID) */
    uint32_t hist_len; /* amax_history_len >= 1 */
    AmaxAlgo algo;
    int margin;
} DelayedCfg;

typedef struct {
    DelayedCfg cfg;
    float *history; /* (hist_len) caller-owned; history[0] is the current step's slot */
    float scale;    /* the scale the next cast uses */
    float scale_inv;
    uint64_t steps;
} DelayedState;

/* What one step did. */
typedef struct {
    uint64_t step;     /* 1-based */
    float amax;        /* observed this step */
    float scale_used;  /* the scale this step's cast used */
    float window_amax; /* the amax the next scale was computed from */
    float scale_next;  /* the scale the next step will use */
    AmaxCase why;      /* AMAX_OK, or why scale_next is the previous scale / FLT_MAX */
} DelayedStep;

/* Validate cfg (fmt FP8, hist_len >= 1, margin in [-64, 64]), zero the
 * history, set scale = scale_inv = 1. ST_USAGE names the bad field. */
Status delayed_init(DelayedState *s, const DelayedCfg *cfg, float *history, Err *e);

/* One step with the amax observed by this step's cast. */
void delayed_step(DelayedState *s, float amax, DelayedStep *out);

#ifdef __cplusplus
}
#endif
#endif
