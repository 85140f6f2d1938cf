/* tui/model.c — numbers for the views, without a terminal (see model.h). */
#include "tui/model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/num.h"

/* ---- stacked bar ------------------------------------------------------------------------------------------ */

int tui_bar_split(const uint64_t *v, int n, uint64_t capacity, int width, int *cells, int *cap_cell)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)v[i], cells[i] = 0;
    double full = sum > (double)capacity ? sum : (double)capacity;
    *cap_cell = width;
    if (full <= 0 || width <= 0) return 0;
    int target = (int)floor(sum * width / full + 0.5), used = 0;
    double frac[64];
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
    if (sum > (double)capacity) *cap_cell = (int)floor((double)capacity * width / full + 0.5);
    return used;
}

/* ---- Compare quantities -------------------------------------------------------------------------------- */

const TuiQty tui_qty[TUI_NQTY] = {
    {"weights", "GB", QK_BYTES, 0},
    {"FP8 copies", "GB", QK_BYTES, 0},
    {"master weights", "GB", QK_BYTES, 0},
    {"gradients", "GB", QK_BYTES, 0},
    {"Adam m", "GB", QK_BYTES, 0},
    {"Adam v", "GB", QK_BYTES, 0},
    {"scales + amax", "GB", QK_BYTES, 0},
    {"activations", "GB", QK_BYTES, 0},
    {"overheads", "GB", QK_BYTES, 0},
    {"total memory", "GB", QK_BYTES, 0},
    {"fits", "", QK_FLAG, 0},
    {"state B/param", "B", QK_BPP, 1},
    {"weight comm", "GB", QK_BYTES, 1},
    {"DP comm", "GB", QK_BYTES, 0},
    {"TP comm", "GB", QK_BYTES, 0},
    {"PP comm", "GB", QK_BYTES, 0},
    {"CP comm", "GB", QK_BYTES, 0},
    {"step time", "s", QK_SECONDS, 1},
    {"samples/s", "1/s", QK_RATE, 0},
    {"tokens/s", "k/s", QK_RATE, 0},
    {"TFLOP/s per GPU", "", QK_RATE, 0},
    {"MFU of BF16 peak", "%", QK_PCT, 0},
    {"MFU of FP8 peak", "%", QK_PCT, 0},
};

static double terms(const Plan *p, MemTermId a, MemTermId b) { return (double)(p->mem[a].bytes + p->mem[b].bytes); }

double tui_qty_value(const Plan *p, int q)
{
    switch (q) {
    case 0: return terms(p, MT_WEIGHT_GEMM, MT_WEIGHT_OTHER);
    case 1: return terms(p, MT_FP8_ROWWISE, MT_FP8_COLWISE);
    case 2: return terms(p, MT_MASTER_GEMM, MT_MASTER_OTHER);
    case 3: return terms(p, MT_GRAD_GEMM, MT_GRAD_OTHER);
    case 4: return terms(p, MT_OPTIM_M_GEMM, MT_OPTIM_M_OTHER);
    case 5: return terms(p, MT_OPTIM_V_GEMM, MT_OPTIM_V_OTHER);
    case 6: return (double)p->cat_bytes[MC_SCALE];
    case 7: return (double)p->cat_bytes[MC_ACTIVATION];
    case 8: return (double)p->cat_bytes[MC_OVERHEAD];
    case 9: return (double)p->total_bytes;
    case 10: return p->fits;
    case 11: return recipe_state_bytes_per_param(&p->in.recipe->gemm, 0, 1, NULL);
    case 12: return (double)p->weight_comm_bytes;
    case 13: return (double)p->dp_comm_bytes;
    case 14: return (double)p->tp_comm_bytes;
    case 15: return (double)p->pp_comm_bytes;
    case 16: return (double)p->cp_comm_bytes;
    case 17: return p->time.step_s;
    case 18: return p->samples_per_s;
    case 19: return p->tokens_per_s / 1e3;
    case 20: return p->tflops_per_gpu;
    case 21: return p->mfu_bf16_pct;
    case 22: return p->mfu_fp8_pct;
    default: return NAN;
    }
}

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
