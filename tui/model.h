/* tui/model.h — the numbers the views show, computed without a terminal.
 *
 * Pure functions over the state's inputs and the planner's/fp8's results:
 * the memory bar's cell split, the Compare screen's quantities, the Scales
 * screen's shape presets (its rows are reports/seed_report.h's), the value ->
 * code explorer, and number formatting. The views only place these on the
 * screen; the unit tests check them directly. */
#ifndef FP8PLAN_TUI_MODEL_H
#define FP8PLAN_TUI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/codec.h"
#include "planner/plan.h"
#include "reports/plan_report.h"
#include "tui/state.h"

/* ---- stacked bar ------------------------------------------------------------------------------------------
 * Split `width` cells among n values (bytes) on a scale where `full` bytes
 * fill the bar: full = max(capacity, sum). The split is term_bar_split's
 * (reports/chart_term.h: largest remainders, adding up to round(sum * width /
 * full), never more than a share rounded up). Returns the
 * number of used cells; *cap_cell is the cell where the capacity ends (width
 * when it fits, less when the sum exceeds it: the OOM marker). */
int tui_bar_split(const uint64_t *v, int n, uint64_t capacity, int width, int *cells, int *cap_cell);

/* ---- Compare quantities -------------------------------------------------------------------------------- */
typedef enum { QK_BYTES = 0, QK_SECONDS, QK_RATE, QK_PCT, QK_FLAG, QK_BPP } TuiQtyKind;
typedef struct {
    PlanQty q;         /* the value: plan_qty() (reports/plan_report.h; bytes as bytes, not GB) */
    const char *label; /* "total memory" */
    const char *unit;  /* "GB" */
    TuiQtyKind kind;
    int rule_before; /* draw a separator above */
} TuiQty;

enum { TUI_NQTY = 23 };
extern const TuiQty tui_qty[TUI_NQTY];

/* ---- Table 1b shapes -------------------------------------------------------------------------------------- */

/* Shape presets of the Scales screen: 0 = the seed's 4096x4096; 1..4 = the
 * current model's QKV, proj, FC1, FC2 weights on one TP rank ([out, in]).
 * Returns 0, or -1 when i is out of range (or the model shape does not split). */
enum { TUI_NSCALE_PRESETS = 5 };
int tui_scale_preset(const TuiState *s, int i, const char **name, uint64_t *rows, uint64_t *cols);

/* ---- value -> code explorer ------------------------------------------------------------------------------ */
typedef enum { FX_ZERO = 0, FX_SUBNORMAL, FX_NORMAL, FX_SATURATED, FX_OVERFLOW, FX_NAN, FX_INF } TuiFxClass;
typedef struct {
    double x;          /* the input value */
    float scaled;      /* fl(x * scale), what the cast sees */
    uint8_t code;      /* the FP8 byte */
    char bits[16];     /* "0.0111.001" sign.exponent.mantissa */
    double value;      /* decoded code (scaled units) */
    double back;       /* value / scale: what the input comes back as */
    double abs_err;    /* |back - x| (NaN when not finite) */
    double rel_err;    /* abs_err / |x| (NaN for x = 0) */
    TuiFxClass cls;    /* where the value landed */
    double prev, next; /* neighbouring representable inputs (value of code -+1, / scale); NaN at the ends */
} TuiFx;

void tui_fx_compute(double x, Dtype fmt, float scale, Fp8Sat sat, TuiFx *out);
const char *tui_fx_class_name(TuiFxClass c);

/* ---- formatting ----------------------------------------------------------------------------------------- */
/* Bytes for people: "0 B", "6.9 kB", "113.2 MB", "65.04 GB", "2,164.7 GB" (1 kB = 1e3 B, as reports' GB). */
char *tui_fmt_bytes(uint64_t b, char *buf, size_t n);
/* Seconds: "39.73 s", "12.3 ms", "45 us". */
char *tui_fmt_seconds(double s, char *buf, size_t n);
/* A float compactly: up to `sig` significant digits, %g style but never "inf"/"nan" spelled oddly. */
char *tui_fmt_num(double v, int sig, char *buf, size_t n);

#endif
