/* tui/state.h — everything the TUI knows: the inputs of each screen, what was
 * computed from them, and where the user is (screen, focused field, prompt).
 *
 * The state is plain data with no curses in it. Actions (tui/actions.c) edit
 * the inputs and return TuiAct flags saying what must be recomputed;
 * tui_recompute() does exactly that; the views (tui/view_*.c) draw from a
 * const TuiState. Tests drive a TuiState through tui_key() without a terminal.
 *
 *   TuiState *s = tui_state_new(catalog, &plan_input);   // catalog outlives s
 *   tui_recompute(s, ACT_ALL);
 *   unsigned act = tui_key(s, KEY_RIGHT);               // tui/keys.h
 *   tui_recompute(s, act);
 *   tui_state_free(s); */
#ifndef FP8PLAN_TUI_STATE_H
#define FP8PLAN_TUI_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/codec.h"
#include "check/fidelity.h"
#include "fp8/delayed.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "util/status.h"

typedef enum { SCR_PLAN = 0, SCR_COMPARE, SCR_SCALES, SCR_SCALING, SCR_FORMATS, SCR_COUNT_ } TuiScreen;

/* What an action asks the loop to do (bits). */
typedef enum {
    ACT_NONE = 0,
    ACT_REDRAW = 1 << 0,  /* repaint from the state */
    ACT_REPLAN = 1 << 1,  /* plan inputs changed: rebuild the plan and the compare columns */
    ACT_RESCALE = 1 << 2, /* Table 1b inputs changed */
    ACT_RESIM = 1 << 3,   /* delayed-scaling inputs changed: rerun the simulation */
    ACT_REFMT = 1 << 4,   /* value explorer inputs changed */
    ACT_CLEAR = 1 << 5,   /* repaint every cell (Ctrl-L) */
    ACT_QUIT = 1 << 6,
    ACT_ALL = ACT_REDRAW | ACT_REPLAN | ACT_RESCALE | ACT_RESIM | ACT_REFMT,
} TuiAct;

typedef enum { MODE_NORMAL = 0, MODE_HELP, MODE_PROMPT } TuiMode;
typedef enum { PROMPT_NUMBER = 0, PROMPT_FIND, PROMPT_EXPORT } PromptKind;

enum {
    TUI_MAX_SLOTS = 8,   /* recipes side by side on the Compare screen */
    TUI_MAX_TRACE = 48,  /* steps of the delayed-scaling scenario */
    TUI_PROMPT_MAX = 240 /* bytes of typed text */
};

typedef struct {
    PromptKind kind;
    int field; /* PROMPT_NUMBER: the field being typed */
    char text[TUI_PROMPT_MAX];
    int match; /* PROMPT_FIND: which of the matches Tab selected */
} TuiPrompt;

/* Scenarios of the Scaling screen (the amax trace it starts from). */
typedef enum { SCN_SPIKE = 0, SCN_STEADY, SCN_GROWTH, SCN_SPECIAL, SCN_CUSTOM, SCN_COUNT_ } TuiScenario;

/* FP8-LM Table 5 rows (models/fp8lm_table5.csv), for the Compare screen's
 * "published" column and its presets. */
enum { TUI_T5_MAX = 16 };
typedef struct {
    char model[SPEC_NAME_MAX], recipe[SPEC_NAME_MAX], column[16];
    uint32_t tp, pp, dp, mbs, seq;
    double memory_gb, weight_comm_gb, samples_per_s; /* NaN when not published */
} TuiT5Row;

typedef struct {
    const Catalog *cat;

    /* ---- Plan (and Compare: the same layout) */
    PlanInput in;  /* model, gpu, recipe always set */
    int etp_given; /* 1: --etp was given and stays; 0: in.etp follows the stack, TP and model (stack_default_etp) */
    Plan plan;
    int plan_ok;  /* 0: plan_err says why the inputs cannot be planned */
    Err plan_err; /* the planner's own validation message */

    /* ---- Compare */
    const Recipe *slot[TUI_MAX_SLOTS];
    int nslots, baseline;
    Plan cmp[TUI_MAX_SLOTS];
    int cmp_ok[TUI_MAX_SLOTS];
    char cmp_err[TUI_MAX_SLOTS][160];
    TuiT5Row t5[TUI_T5_MAX];
    int nt5;
    FidelityRow *trust_rows; /* measured.csv's runs, planned (owned; NULL: trust_note says why) */
    int ntrust;
    char trust_note[400];
    int t5_preset; /* the preset `t` applied last, -1 none */

    /* ---- Scales (Table 1b) */
    uint64_t sc_rows, sc_cols; /* the tensor: rows = output channels, cols = K */
    int sc_preset;             /* index into tui_scale_presets (0 = the seed's 4096x4096) */

    /* ---- Scaling (delayed-scaling simulator) */
    DelayedCfg dcfg;
    TuiScenario scenario;
    float trace[TUI_MAX_TRACE]; /* observed amax per step */
    int ntrace;
    int step_cur; /* selected step, 0-based */
    DelayedStep steps[TUI_MAX_TRACE];
    int sim_ok;
    Err sim_err;

    /* ---- Formats (value -> code explorer) */
    double fx_value;
    Dtype fx_fmt;
    float fx_scale;
    Fp8Sat fx_sat;

    /* ---- where the user is */
    TuiScreen screen;
    TuiMode mode;
    int field[SCR_COUNT_];  /* focused field per screen */
    int scroll[SCR_COUNT_]; /* first line of the scrolled area per screen */
    int help_scroll;
    TuiPrompt prompt;
    char status[320]; /* one-line message under the body */
    int status_err;   /* 1: status is an error (drawn as such) */
    char last_export[4096];
    int rows, cols; /* terminal size the shell last laid out */
    int too_small;  /* 1: below the minimum; only quit and redraw keys act */
    int unicode;    /* 1: the painter may use Unicode glyphs (footer key names follow it) */
} TuiState;

/* A new state over `cat` (which must outlive it) starting from `in` (model,
 * gpu and recipe set). The Compare columns start as the seed's three recipes
 * where the catalog has them (megatron-bf16, te-fp8, fp8lm), else the first
 * three. Table 5 rows are loaded separately (tui_state_load_t5). NULL when
 * out of memory or when `in` lacks a model, GPU or recipe. */
TuiState *tui_state_new(const Catalog *cat, const PlanInput *in);
void tui_state_free(TuiState *s);

/* The published runs the plan screen's trust line bands each plan against (plan_trust_rows); s takes rows
 * (NULL: note says why there are none). */
void tui_state_set_trust(TuiState *s, FidelityRow *rows, int n, const char *note);

/* Read FP8-LM Table 5 rows from CSV text (models/fp8lm_table5.csv, read by catalog/fp8lm_table5.h: its
 * models and recipes must be in s->cat) into s->t5, the first TUI_T5_MAX of them. */
Status tui_state_load_t5(TuiState *s, const char *text, size_t len, const char *fname, Err *e);

/* Recompute what `act` says changed (ACT_REPLAN, ACT_RESCALE, ...). */
void tui_recompute(TuiState *s, unsigned act);

/* Load a scaling scenario's amax trace into s->trace (SCN_CUSTOM keeps the current one). */
void tui_scenario_load(TuiState *s, TuiScenario scn);
const char *tui_scenario_name(TuiScenario scn);

/* Set / clear the status line. */
void tui_status(TuiState *s, int is_error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Bytes per parameter of the training states of the current recipe's linear
 * weights (the seed's Table 1a), with the sharding of the current layout. */
double tui_state_bytes_per_param(const TuiState *s, int sharded, double per_state[5]);

#endif
