/* tui/fields.h — the editable fields of each screen (the Plan form, the
 * Scales shape, the Scaling simulator's knobs, the value explorer).
 *
 * A field knows how to show its value, how to step it (Left/Right, -/+) and,
 * when it is typeable, how to take a typed value (Enter). Each returns the
 * TuiAct flags of what must be recomputed. The hint is the one-line
 * explanation shown while the field has the focus. */
#ifndef FP8PLAN_TUI_FIELDS_H
#define FP8PLAN_TUI_FIELDS_H

#include <stddef.h>

#include "tui/state.h"

typedef enum { FIND_NONE = 0, FIND_MODEL, FIND_GPU, FIND_RECIPE } TuiFind;

typedef struct {
    const char *label;
    const char *hint;
    TuiFind find; /* choice fields Enter searches by name */
    void (*text)(const TuiState *s, char *buf, size_t n);
    unsigned (*step)(TuiState *s, int dir); /* dir = +1 / -1 */
    /* typed value (NULL: not typeable); on error fills e (ST_USAGE) and returns ACT_NONE */
    unsigned (*set)(TuiState *s, const char *typed, Err *e);
} TuiField;

/* The fields of a screen (0 for Compare, whose cursor is a recipe column). */
int tui_fields(TuiScreen scr, const TuiField **out);

/* The focused field of the current screen, or NULL. */
const TuiField *tui_focused_field(const TuiState *s);

/* Set the model / GPU / recipe by catalog entry (used by find). */
unsigned tui_set_model(TuiState *s, const ModelSpec *m);
unsigned tui_set_gpu(TuiState *s, const GpuSpec *g);
unsigned tui_set_recipe(TuiState *s, const Recipe *r);

/* Index of the Plan form's fields, for tests and the find action. */
enum {
    PF_MODEL = 0,
    PF_GPU,
    PF_RECIPE,
    PF_TP,
    PF_PP,
    PF_VPP,
    PF_CP,
    PF_DP,
    PF_MBS,
    PF_GBS,
    PF_SEQ,
    PF_RECOMPUTE,
    PF_SP,
    PF_SHARDING,
    PF_OVERLAP,
    PF_STACK,
    PF_COUNT
};
enum { SF_PRESET = 0, SF_ROWS, SF_COLS, SF_COUNT };
enum { DF_SCENARIO = 0, DF_FORMAT, DF_HISTORY, DF_ALGO, DF_MARGIN, DF_STEP, DF_AMAX, DF_COUNT };
enum { XF_VALUE = 0, XF_FORMAT, XF_SCALE, XF_SAT, XF_COUNT };

#endif
