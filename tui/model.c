/* tui/model.c — numbers for the views, without a terminal (see model.h). */
#include "tui/model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/chart_term.h"
#include "util/num.h"

/* ---- stacked bar ------------------------------------------------------------------------------------------ */

int tui_bar_split(const uint64_t *v, int n, uint64_t capacity, int width, int *cells, int *cap_cell)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)v[i];
    double full = sum > (double)capacity ? sum : (double)capacity;
    *cap_cell = width;
    int used = term_bar_split(v, n, full, width, cells);
    if (full > 0 && width > 0 && sum > (double)capacity) *cap_cell = (int)floor((double)capacity * width / full + 0.5);
    return used;
}

/* ---- Compare quantities -------------------------------------------------------------------------------- */

const TuiQty tui_qty[TUI_NQTY] = {
    {PQ_WEIGHTS, "weights", "GB", QK_BYTES, 0},
    {PQ_FP8_COPIES, "FP8 copies", "GB", QK_BYTES, 0},
    {PQ_MASTER, "master weights", "GB", QK_BYTES, 0},
    {PQ_GRADS, "gradients", "GB", QK_BYTES, 0},
    {PQ_ADAM_M, "Adam m", "GB", QK_BYTES, 0},
    {PQ_ADAM_V, "Adam v", "GB", QK_BYTES, 0},
    {PQ_SCALES, "scales + amax", "GB", QK_BYTES, 0},
    {PQ_ACTIVATIONS, "activations", "GB", QK_BYTES, 0},
    {PQ_OVERHEADS, "overheads", "GB", QK_BYTES, 0},
    {PQ_TOTAL, "total memory", "GB", QK_BYTES, 0},
    {PQ_FITS, "fits", "", QK_FLAG, 0},
    {PQ_STATE_BPP, "state B/param", "B", QK_BPP, 1},
    {PQ_WEIGHT_COMM, "weight comm", "GB", QK_BYTES, 1},
    {PQ_DP_COMM, "DP comm", "GB", QK_BYTES, 0},
    {PQ_TP_COMM, "TP comm", "GB", QK_BYTES, 0},
    {PQ_PP_COMM, "PP comm", "GB", QK_BYTES, 0},
    {PQ_CP_COMM, "CP comm", "GB", QK_BYTES, 0},
    {PQ_STEP_S, "step time", "s", QK_SECONDS, 1},
    {PQ_SAMPLES_S, "samples/s", "1/s", QK_RATE, 0},
    {PQ_KTOKENS_S, "tokens/s", "k/s", QK_RATE, 0},
    {PQ_TFLOPS, "TFLOP/s per GPU", "", QK_RATE, 0},
    {PQ_MFU_BF16, "MFU of BF16 peak", "%", QK_PCT, 0},
    {PQ_MFU_FP8, "MFU of FP8 peak", "%", QK_PCT, 0},
};

/* ---- Table 1b ----------------------------------------------------------------------------------------- */

int tui_scale_preset(const TuiState *s, int i, const char **name, uint64_t *rows, uint64_t *cols)
{
    const ModelSpec *m = s->in.model;
    uint64_t tp = s->in.tp ? s->in.tp : 1, h = m->hidden, qkv = (uint64_t)(m->heads + 2u * m->kv_heads) * m->head_dim;
    uint64_t attn = (uint64_t)m->heads * m->head_dim, fc1 = (m->mlp == MLP_SWIGLU ? 2u : 1u) * (uint64_t)m->ffn_hidden;
    switch (i) {
    case 0: *name = "seed", *rows = 4096, *cols = 4096; return 0;
    case 1: *name = "QKV", *rows = qkv / tp, *cols = h; break;
    case 2: *name = "proj", *rows = h, *cols = attn / tp; break;
    case 3: *name = "FC1", *rows = fc1 / tp, *cols = h; break;
    case 4: *name = "FC2", *rows = h, *cols = m->ffn_hidden / tp; break;
    default: return -1;
    }
    return *rows && *cols ? 0 : -1;
}

/* ---- value -> code explorer ------------------------------------------------------------------------------ */

const char *tui_fx_class_name(TuiFxClass c)
{
    static const char *const n[] = {"zero (flushed)",     "subnormal", "normal", "saturated to max",
                                    "overflow (NaN/Inf)", "NaN",       "Inf"};
    return (unsigned)c < sizeof n / sizeof *n ? n[c] : "?";
}

void tui_fx_compute(double x, Dtype fmt, float scale, Fp8Sat sat, TuiFx *o)
{
    memset(o, 0, sizeof *o);
    o->x = x;
    o->scaled = (float)x * scale; /* TE casts fl(fl(x) * scale) */
    o->code = fp8_encode_f32(fmt, o->scaled, sat);
    int m = fmt == DT_E4M3 ? 3 : 2, eb = 7 - m, k = 0;
    o->bits[k++] = (char)('0' + (o->code >> 7));
    o->bits[k++] = '.';
    for (int i = eb - 1; i >= 0; i--) o->bits[k++] = (char)('0' + ((o->code >> (m + i)) & 1));
    o->bits[k++] = '.';
    for (int i = m - 1; i >= 0; i--) o->bits[k++] = (char)('0' + ((o->code >> i) & 1));
    o->bits[k] = '\0';
    o->value = fp8_decode(fmt, o->code);
    o->back = o->value / (double)scale;
    o->abs_err = isfinite(o->back) && isfinite(x) ? fabs(o->back - x) : NAN;
    o->rel_err = x != 0 && isfinite(o->abs_err) ? o->abs_err / fabs(x) : NAN;
    double fmax = fp8_max(fmt), mag = fabs(o->value);
    double min_normal = ldexp(1.0, fmt == DT_E4M3 ? -6 : -14);
    if (isnan(x) || fp8_is_nan(fmt, o->code))
        o->cls = isnan(x) || isnan(o->scaled) ? FX_NAN : FX_OVERFLOW;
    else if (fp8_is_inf(fmt, o->code))
        o->cls = isinf(x) ? FX_INF : FX_OVERFLOW;
    else if (fabsf(o->scaled) > fmax)
        o->cls = FX_SATURATED;
    else if (mag == 0)
        o->cls = FX_ZERO;
    else
        o->cls = mag < min_normal ? FX_SUBNORMAL : FX_NORMAL;
    /* neighbours on the grid, in the input's units */
    o->prev = o->next = NAN;
    if (isnan(o->value)) return;
    double lo = -INFINITY, hi = INFINITY;
    for (unsigned c = 0; c < 256; c++) {
        double v = fp8_decode(fmt, (uint8_t)c);
        if (!isfinite(v)) continue;
        if (v < o->value && v > lo) lo = v;
        if (v > o->value && v < hi) hi = v;
    }
    if (isfinite(lo)) o->prev = lo / (double)scale;
    if (isfinite(hi)) o->next = hi / (double)scale;
}

/* ---- formatting ----------------------------------------------------------------------------------------- */

char *tui_fmt_bytes(uint64_t b, char *buf, size_t n)
{
    double v = (double)b;
    if (b < 1000)
        snprintf(buf, n, "%llu B", (unsigned long long)b);
    else if (v < 1e6)
        snprintf(buf, n, "%.1f kB", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, n, "%.1f MB", v / 1e6);
    else if (v < 1e12)
        snprintf(buf, n, "%.2f GB", v / 1e9);
    else { /* thousands of GB: group the whole part */
        char g[40];
        uint64_t whole = b / 1000000000u;
        snprintf(buf, n, "%s.%01u GB", num_fmt_grouped(whole, g, sizeof g), (unsigned)(b % 1000000000u / 100000000u));
    }
    return buf;
}

char *tui_fmt_seconds(double s, char *buf, size_t n)
{
    if (!isfinite(s))
        snprintf(buf, n, "-");
    else if (s == 0)
        snprintf(buf, n, "0 s");
    else if (s >= 1)
        snprintf(buf, n, "%.2f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.1f ms", s * 1e3);
    else
        snprintf(buf, n, "%.0f us", s * 1e6);
    return buf;
}

char *tui_fmt_num(double v, int sig, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "nan");
    else if (isinf(v))
        snprintf(buf, n, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(buf, n, "%.*g", sig, v);
    return buf;
}
