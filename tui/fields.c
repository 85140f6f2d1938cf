/* tui/fields.c — the editable fields of each screen (see fields.h). */
#include "tui/fields.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/model.h"
#include "util/num.h"

enum { LAYOUT_MAX = 1 << 20 }; /* largest TP, PP, ... a step or a typed value may reach */

/* ---- helpers ------------------------------------------------------------------------------------------------ */

static uint64_t dbl(uint64_t v, int dir, uint64_t lo, uint64_t hi)
{
    if (dir > 0) return v >= hi / 2 ? hi : v * 2;
    v /= 2;
    return v < lo ? lo : v;
}

static unsigned typed_u64(const char *typed, const char *what, uint64_t lo, uint64_t hi, uint64_t *out, Err *e)
{
    Err sub;
    if (num_parse_count(typed, out, &sub)) return err_set(e, ST_USAGE, "%s: %s", what, sub.msg), 0;
    if (*out < lo || *out > hi)
        return err_set(e, ST_USAGE, "%s: %llu is outside [%llu, %llu]", what, (unsigned long long)*out,
                       (unsigned long long)lo, (unsigned long long)hi),
               0;
    return 1;
}

/* ---- Plan: model, GPU, recipe ------------------------------------------------------------------------------ */

unsigned tui_set_model(TuiState *s, const ModelSpec *m) { return s->in.model = m, ACT_REPLAN | ACT_REDRAW; }
unsigned tui_set_gpu(TuiState *s, const GpuSpec *g) { return s->in.gpu = g, ACT_REPLAN | ACT_REDRAW; }
unsigned tui_set_recipe(TuiState *s, const Recipe *r) { return s->in.recipe = r, ACT_REPLAN | ACT_REDRAW; }

static int wrap(int i, int n) { return ((i % n) + n) % n; }

static void t_model(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", s->in.model->name); }
static void t_gpu(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", s->in.gpu->name); }
static void t_recipe(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", s->in.recipe->name); }

static unsigned st_model(TuiState *s, int d)
{
    int i = (int)(s->in.model - s->cat->models);
    return tui_set_model(s, &s->cat->models[wrap(i + d, s->cat->nmodels)]);
}
static unsigned st_gpu(TuiState *s, int d)
{
    int i = (int)(s->in.gpu - s->cat->gpus);
    return tui_set_gpu(s, &s->cat->gpus[wrap(i + d, s->cat->ngpus)]);
}
static unsigned st_recipe(TuiState *s, int d)
{
    int i = (int)(s->in.recipe - s->cat->recipes);
    return tui_set_recipe(s, &s->cat->recipes[wrap(i + d, s->cat->nrecipes)]);
}

/* ---- Plan: layout numbers ------------------------------------------------------------------------------------ */

#define LAYOUT_FIELD(fld, what)                                                                    \
    static void t_##fld(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%u", s->in.fld); } \
    static unsigned st_##fld(TuiState *s, int d)                                                   \
    {                                                                                              \
        s->in.fld = (uint32_t)dbl(s->in.fld, d, 1, LAYOUT_MAX);                                    \
        return ACT_REPLAN | ACT_REDRAW;                                                            \
    }                                                                                              \
    static unsigned set_##fld(TuiState *s, const char *t, Err *e)                                  \
    {                                                                                              \
        uint64_t v;                                                                                \
        if (!typed_u64(t, what, 1, LAYOUT_MAX, &v, e)) return ACT_NONE;                            \
        s->in.fld = (uint32_t)v;                                                                   \
        return ACT_REPLAN | ACT_REDRAW;                                                            \
    }

LAYOUT_FIELD(tp, "TP")
LAYOUT_FIELD(pp, "PP")
LAYOUT_FIELD(vpp, "VPP")
LAYOUT_FIELD(cp, "CP")
LAYOUT_FIELD(dp, "DP")
LAYOUT_FIELD(mbs, "micro-batch")
LAYOUT_FIELD(ep, "EP")
#undef LAYOUT_FIELD

/* EP with the expert-TP size beside it for a model with experts (it follows the stack and TP unless --etp). */
static void t_ep_etp(const TuiState *s, char *b, size_t n)
{
    if (s->in.model->experts)
        snprintf(b, n, "%u, ETP %u", s->in.ep, s->in.etp);
    else
        t_ep(s, b, n);
}

static void t_gbs(const TuiState *s, char *b, size_t n)
{
    if (s->in.gbs)
        snprintf(b, n, "%llu", (unsigned long long)s->in.gbs);
    else if (s->plan_ok)
        snprintf(b, n, "auto %llu", (unsigned long long)s->plan.in.gbs);
    else
        snprintf(b, n, "auto");
}
static unsigned st_gbs(TuiState *s, int d)
{
    uint64_t cur = s->in.gbs ? s->in.gbs : s->plan_ok ? s->plan.in.gbs : 0;
    if (!cur) return tui_status(s, 1, "the global batch is automatic; press Enter to type one"), ACT_REDRAW;
    s->in.gbs = dbl(cur, d, 1, (uint64_t)1 << 40);
    return ACT_REPLAN | ACT_REDRAW;
}
static unsigned set_gbs(TuiState *s, const char *t, Err *e)
{
    uint64_t v;
    if (!typed_u64(t, "global batch (0 = automatic)", 0, (uint64_t)1 << 40, &v, e)) return ACT_NONE;
    s->in.gbs = v;
    return ACT_REPLAN | ACT_REDRAW;
}

static void t_seq(const TuiState *s, char *b, size_t n)
{
    if (s->in.seq)
        snprintf(b, n, "%u", s->in.seq);
    else
        snprintf(b, n, "%u (model)", s->in.model->seq_len);
}
static unsigned st_seq(TuiState *s, int d)
{
    s->in.seq = (uint32_t)dbl(s->in.seq ? s->in.seq : s->in.model->seq_len, d, 1, 1u << 24);
    return ACT_REPLAN | ACT_REDRAW;
}
static unsigned set_seq(TuiState *s, const char *t, Err *e)
{
    uint64_t v;
    if (!typed_u64(t, "seq (0 = the model's)", 0, 1u << 24, &v, e)) return ACT_NONE;
    s->in.seq = (uint32_t)v;
    return ACT_REPLAN | ACT_REDRAW;
}

/* ---- Plan: switches ----------------------------------------------------------------------------------------- */

static void t_recompute(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", recompute_name(s->in.recompute)); }
static unsigned st_recompute(TuiState *s, int d)
{
    s->in.recompute = (Recompute)wrap((int)s->in.recompute + d, RECOMPUTE_COUNT_);
    return ACT_REPLAN | ACT_REDRAW;
}
static void t_sp(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", s->in.sp ? "on" : "off"); }
static unsigned st_sp(TuiState *s, int d) { return (void)d, s->in.sp = !s->in.sp, ACT_REPLAN | ACT_REDRAW; }
static void t_sharding(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", sharding_name(s->in.sharding)); }
static unsigned st_sharding(TuiState *s, int d)
{
    s->in.sharding = (Sharding)wrap((int)s->in.sharding + d, SHARD_COUNT_);
    return ACT_REPLAN | ACT_REDRAW;
}
static void t_overlap(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", s->in.overlap_dp ? "on" : "off"); }
static unsigned st_overlap(TuiState *s, int d)
{
    return (void)d, s->in.overlap_dp = !s->in.overlap_dp, ACT_REPLAN | ACT_REDRAW;
}

static void t_stack(const TuiState *s, char *b, size_t n)
{
    snprintf(b, n, "%s", s->in.stack ? s->in.stack->name : "none");
}
static unsigned st_stack(TuiState *s, int d)
{
    if (!s->cat->nstacks) return tui_status(s, 1, "the catalog has no stacks.csv rows"), ACT_REDRAW;
    int i = s->in.stack ? (int)(s->in.stack - s->cat->stacks) : (d > 0 ? -1 : 0);
    plan_input_use_stack(&s->in, &s->cat->stacks[wrap(i + d, s->cat->nstacks)]);
    return ACT_REPLAN | ACT_REDRAW;
}

static const TuiField plan_fields[PF_COUNT] = {
    [PF_MODEL] = {"model", "model architecture (models.csv); Enter or / finds one by name", FIND_MODEL, t_model,
                  st_model, NULL},
    [PF_GPU] = {"GPU", "GPU type (gpus.csv): memory, HBM bandwidth, BF16/FP8 peak, links", FIND_GPU, t_gpu, st_gpu,
                NULL},
    [PF_RECIPE] = {"recipe", "precision recipe (recipes.csv): dtypes of weights, grads, Adam", FIND_RECIPE, t_recipe,
                   st_recipe, NULL},
    [PF_TP] = {"TP", "tensor parallel: splits each layer over N GPUs; heads must divide by N", FIND_NONE, t_tp, st_tp,
               set_tp},
    [PF_PP] = {"PP", "pipeline parallel: N stages of layers; layers must divide by PP x VPP", FIND_NONE, t_pp, st_pp,
               set_pp},
    [PF_VPP] = {"VPP", "virtual pipeline stages per PP rank (interleaved 1F1B); 1 = none", FIND_NONE, t_vpp, st_vpp,
                set_vpp},
    [PF_CP] = {"CP", "context parallel: splits sequences over N GPUs; seq must divide by 2 x CP", FIND_NONE, t_cp,
               st_cp, set_cp},
    [PF_DP] = {"DP", "data-parallel replicas; dist-opt shards states over DP x CP", FIND_NONE, t_dp, st_dp, set_dp},
    [PF_MBS] = {"micro-batch", "sequences per micro-batch on one GPU (activations grow with it)", FIND_NONE, t_mbs,
                st_mbs, set_mbs},
    [PF_GBS] = {"global batch", "sequences per optimizer step; 0 = about 2M tokens (auto)", FIND_NONE, t_gbs, st_gbs,
                set_gbs},
    [PF_SEQ] = {"seq", "sequence length in tokens; 0 = the model's context", FIND_NONE, t_seq, st_seq, set_seq},
    [PF_RECOMPUTE] = {"recompute", "activation recomputation: none, selective (attention) or full layers", FIND_NONE,
                      t_recompute, st_recompute, NULL},
    [PF_SP] = {"seq parallel", "with TP: norms and dropouts split over the TP ranks", FIND_NONE, t_sp, st_sp, NULL},
    [PF_SHARDING] = {"sharding", "dist-opt: Megatron's distributed optimizer; zero-1/2/3: ZeRO stages", FIND_NONE,
                     t_sharding, st_sharding, NULL},
    [PF_STACK] = {"stack", "software stack (stacks.csv): kernels, overlaps, grads, FP8 caching", FIND_NONE, t_stack,
                  st_stack, NULL},
    [PF_OVERLAP] = {"DP overlap", "DP collectives hidden under compute (FP8-LM's 2023 runs: off)", FIND_NONE, t_overlap,
                    st_overlap, NULL},
    [PF_EP] = {"EP", "expert parallel over N GPUs; ETP beside it: the stack's (TP or 1) or --etp", FIND_NONE, t_ep_etp,
               st_ep, set_ep},
};

/* ---- Scales ------------------------------------------------------------------------------------------------- */

static void t_preset(const TuiState *s, char *b, size_t n)
{
    const char *name;
    uint64_t r, c;
    if (!tui_scale_preset(s, s->sc_preset, &name, &r, &c) && r == s->sc_rows && c == s->sc_cols)
        snprintf(b, n, "%s", name);
    else
        snprintf(b, n, "custom");
}
static unsigned st_preset(TuiState *s, int d)
{
    for (int k = 1; k <= TUI_NSCALE_PRESETS; k++) {
        int i = wrap(s->sc_preset + d * k, TUI_NSCALE_PRESETS);
        const char *name;
        uint64_t r, c;
        if (!tui_scale_preset(s, i, &name, &r, &c)) {
            s->sc_preset = i, s->sc_rows = r, s->sc_cols = c;
            return ACT_RESCALE | ACT_REDRAW;
        }
    }
    return ACT_NONE;
}
static void t_rows(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%llu", (unsigned long long)s->sc_rows); }
static void t_cols(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%llu", (unsigned long long)s->sc_cols); }
static unsigned st_rows(TuiState *s, int d)
{
    return s->sc_rows = dbl(s->sc_rows, d, 1, 1u << 30), ACT_RESCALE | ACT_REDRAW;
}
static unsigned st_cols(TuiState *s, int d)
{
    return s->sc_cols = dbl(s->sc_cols, d, 1, 1u << 30), ACT_RESCALE | ACT_REDRAW;
}
static unsigned set_rows(TuiState *s, const char *t, Err *e)
{
    return typed_u64(t, "rows", 1, 1u << 30, &s->sc_rows, e) ? ACT_RESCALE | ACT_REDRAW : ACT_NONE;
}
static unsigned set_cols(TuiState *s, const char *t, Err *e)
{
    return typed_u64(t, "columns", 1, 1u << 30, &s->sc_cols, e) ? ACT_RESCALE | ACT_REDRAW : ACT_NONE;
}

static const TuiField scale_fields[SF_COUNT] = {
    [SF_PRESET] = {"shape", "seed 4096x4096, or the Plan model's QKV/proj/FC1/FC2 per TP rank", FIND_NONE, t_preset,
                   st_preset, NULL},
    [SF_ROWS] = {"rows", "output channels R (one per-channel scale each)", FIND_NONE, t_rows, st_rows, set_rows},
    [SF_COLS] = {"columns", "input channels C = the GEMM's K (blocks run along a row)", FIND_NONE, t_cols, st_cols,
                 set_cols},
};

/* ---- Scaling -------------------------------------------------------------------------------------------------- */

static void t_scn(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", tui_scenario_name(s->scenario)); }
static unsigned st_scn(TuiState *s, int d)
{
    tui_scenario_load(s, (TuiScenario)wrap((int)s->scenario + d, SCN_CUSTOM)); /* custom is reached by editing */
    return ACT_RESIM | ACT_REDRAW;
}
static void t_dfmt(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", dtype_name(s->dcfg.fmt)); }
static unsigned st_dfmt(TuiState *s, int d)
{
    (void)d;
    s->dcfg.fmt = s->dcfg.fmt == DT_E4M3 ? DT_E5M2 : DT_E4M3;
    return ACT_RESIM | ACT_REDRAW;
}
static void t_hist(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%u", s->dcfg.hist_len); }
static unsigned st_hist(TuiState *s, int d)
{
    return s->dcfg.hist_len = (uint32_t)dbl(s->dcfg.hist_len, d, 1, 1u << 24), ACT_RESIM | ACT_REDRAW;
}
static unsigned set_hist(TuiState *s, const char *t, Err *e)
{
    uint64_t v;
    if (!typed_u64(t, "history", 1, 1u << 24, &v, e)) return ACT_NONE;
    return s->dcfg.hist_len = (uint32_t)v, ACT_RESIM | ACT_REDRAW;
}
static void t_algo(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", amax_algo_name(s->dcfg.algo)); }
static unsigned st_algo(TuiState *s, int d)
{
    (void)d;
    s->dcfg.algo = s->dcfg.algo == AMAX_ALGO_MAX ? AMAX_ALGO_MOST_RECENT : AMAX_ALGO_MAX;
    return ACT_RESIM | ACT_REDRAW;
}
static void t_margin(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%d", s->dcfg.margin); }
static unsigned st_margin(TuiState *s, int d)
{
    int m = s->dcfg.margin + d;
    s->dcfg.margin = m < -64 ? -64 : m > 64 ? 64 : m;
    return ACT_RESIM | ACT_REDRAW;
}
static unsigned set_margin(TuiState *s, const char *t, Err *e)
{
    int v;
    Err sub;
    if (num_parse_int_range(t, -64, 64, &v, &sub)) return err_set(e, ST_USAGE, "margin: %s", sub.msg), ACT_NONE;
    return s->dcfg.margin = v, ACT_RESIM | ACT_REDRAW;
}
static void t_step(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%d of %d", s->step_cur + 1, s->ntrace); }
static unsigned st_step(TuiState *s, int d)
{
    s->step_cur = wrap(s->step_cur + d, s->ntrace);
    return ACT_REDRAW;
}
static unsigned set_step(TuiState *s, const char *t, Err *e)
{
    uint64_t v;
    if (!typed_u64(t, "step", 1, (uint64_t)s->ntrace, &v, e)) return ACT_NONE;
    return s->step_cur = (int)v - 1, ACT_REDRAW;
}
static void t_amax(const TuiState *s, char *b, size_t n) { tui_fmt_num(s->trace[s->step_cur], 6, b, n); }
static unsigned st_amax(TuiState *s, int d)
{
    float *a = &s->trace[s->step_cur];
    if (!isfinite(*a) || *a == 0) *a = 1.0f;
    *a = d > 0 ? *a * 2 : *a / 2;
    s->scenario = SCN_CUSTOM;
    return ACT_RESIM | ACT_REDRAW;
}
static unsigned set_amax(TuiState *s, const char *t, Err *e)
{
    double v;
    Err sub;
    if (num_parse_double(t, NUM_ALLOW_NONFINITE, &v, &sub)) return err_set(e, ST_USAGE, "amax: %s", sub.msg), 0;
    if (v < 0 || (isfinite(v) && v > FLT_MAX))
        return err_set(e, ST_USAGE, "amax: '%s' must be a non-negative fp32 value (or inf, nan)", t), ACT_NONE;
    s->trace[s->step_cur] = (float)v;
    s->scenario = SCN_CUSTOM;
    return ACT_RESIM | ACT_REDRAW;
}

static const TuiField scaling_fields[DF_COUNT] = {
    [DF_SCENARIO] = {"scenario", "amax trace: the seed's spike to 640, steady, growing, 0/inf/nan", FIND_NONE, t_scn,
                     st_scn, NULL},
    [DF_FORMAT] = {"format", "e4m3 (max 448; forward) or e5m2 (max 57344; gradients in HYBRID)", FIND_NONE, t_dfmt,
                   st_dfmt, NULL},
    [DF_HISTORY] = {"history", "amax history length: TE's default 1024, Megatron-Core's 1", FIND_NONE, t_hist, st_hist,
                    set_hist},
    [DF_ALGO] = {"algorithm", "max: the window's largest (TE); most_recent: this step's (Megatron)", FIND_NONE, t_algo,
                 st_algo, NULL},
    [DF_MARGIN] = {"margin", "scale = fmax / amax / 2^margin (headroom against growth)", FIND_NONE, t_margin, st_margin,
                   set_margin},
    [DF_STEP] = {"step", "the step shown in detail (the chart's marked column)", FIND_NONE, t_step, st_step, set_step},
    [DF_AMAX] = {"amax", "amax seen at that step: Left/Right halve/double, Enter types (inf, nan)", FIND_NONE, t_amax,
                 st_amax, set_amax},
};

/* ---- Formats ------------------------------------------------------------------------------------------------- */

static void t_val(const TuiState *s, char *b, size_t n) { tui_fmt_num(s->fx_value, 10, b, n); }
static unsigned st_val(TuiState *s, int d)
{
    TuiFx fx;
    tui_fx_compute(s->fx_value, s->fx_fmt, s->fx_scale, s->fx_sat, &fx);
    double v = d > 0 ? fx.next : fx.prev;
    if (isnan(v)) return tui_status(s, 1, "no representable value further %s", d > 0 ? "up" : "down"), ACT_REDRAW;
    s->fx_value = v;
    return ACT_REFMT | ACT_REDRAW;
}
static unsigned set_val(TuiState *s, const char *t, Err *e)
{
    double v;
    Err sub;
    if (num_parse_double(t, NUM_ALLOW_NONFINITE, &v, &sub)) return err_set(e, ST_USAGE, "value: %s", sub.msg), 0;
    return s->fx_value = v, ACT_REFMT | ACT_REDRAW;
}
static void t_xfmt(const TuiState *s, char *b, size_t n) { snprintf(b, n, "%s", dtype_name(s->fx_fmt)); }
static unsigned st_xfmt(TuiState *s, int d)
{
    (void)d;
    s->fx_fmt = s->fx_fmt == DT_E4M3 ? DT_E5M2 : DT_E4M3;
    return ACT_REFMT | ACT_REDRAW;
}
static void t_scale(const TuiState *s, char *b, size_t n) { tui_fmt_num(s->fx_scale, 9, b, n); }
static unsigned st_scale(TuiState *s, int d)
{
    float v = d > 0 ? s->fx_scale * 2 : s->fx_scale / 2;
    if (!isfinite(v) || v < FLT_MIN) return ACT_NONE;
    return s->fx_scale = v, ACT_REFMT | ACT_REDRAW;
}
static unsigned set_scale(TuiState *s, const char *t, Err *e)
{
    double v;
    Err sub;
    if (num_parse_double(t, NUM_FINITE_ONLY, &v, &sub)) return err_set(e, ST_USAGE, "scale: %s", sub.msg), 0;
    if (!(v >= FLT_MIN && v <= FLT_MAX))
        return err_set(e, ST_USAGE, "scale: '%s' must be a positive normal fp32 value", t), ACT_NONE;
    return s->fx_scale = (float)v, ACT_REFMT | ACT_REDRAW;
}
static void t_sat(const TuiState *s, char *b, size_t n)
{
    snprintf(b, n, "%s", s->fx_sat == FP8_SATFINITE ? "saturate" : "NaN/Inf");
}
static unsigned st_sat(TuiState *s, int d)
{
    (void)d;
    s->fx_sat = s->fx_sat == FP8_SATFINITE ? FP8_NOSAT : FP8_SATFINITE;
    return ACT_REFMT | ACT_REDRAW;
}

static const TuiField format_fields[XF_COUNT] = {
    [XF_VALUE] = {"value", "Left/Right: the neighbouring FP8 value; Enter types any number", FIND_NONE, t_val, st_val,
                  set_val},
    [XF_FORMAT] = {"format", "e4m3 (bias 7, max 448, no Inf) or e5m2 (bias 15, max 57344, Inf)", FIND_NONE, t_xfmt,
                   st_xfmt, NULL},
    [XF_SCALE] = {"scale", "the cast sees value x scale (TE: scale = fmax/amax); halve/double", FIND_NONE, t_scale,
                  st_scale, set_scale},
    [XF_SAT] = {"overflow", "saturate to max (TE's casts) or give NaN (E4M3) / Inf (E5M2)", FIND_NONE, t_sat, st_sat,
                NULL},
};

int tui_fields(TuiScreen scr, const TuiField **out)
{
    switch (scr) {
    case SCR_PLAN: return *out = plan_fields, PF_COUNT;
    case SCR_SCALES: return *out = scale_fields, SF_COUNT;
    case SCR_SCALING: return *out = scaling_fields, DF_COUNT;
    case SCR_FORMATS: return *out = format_fields, XF_COUNT;
    default: return *out = NULL, 0;
    }
}

const TuiField *tui_focused_field(const TuiState *s)
{
    const TuiField *f;
    int n = tui_fields(s->screen, &f), i = s->field[s->screen];
    return n && i >= 0 && i < n ? &f[i] : NULL;
}
