/* fp8/delayed.c — TE's delayed-scaling update, one tensor (see delayed.h). */
#include "fp8/delayed.h"

#include <math.h>
#include <string.h>
#include <strings.h>

const char *amax_algo_name(AmaxAlgo a) { return a == AMAX_ALGO_MOST_RECENT ? "most_recent" : "max"; }

int amax_algo_parse(const char *s, AmaxAlgo *out)
{
    if (!strcasecmp(s, "max")) return *out = AMAX_ALGO_MAX, 0;
    if (!strcasecmp(s, "most_recent") || !strcasecmp(s, "most-recent")) return *out = AMAX_ALGO_MOST_RECENT, 0;
    return -1;
}

Status delayed_init(DelayedState *s, const DelayedCfg *cfg, float *history, Err *e)
{
    if (!dtype_is_fp8(cfg->fmt))
        return err_set(e, ST_USAGE, "delayed scaling needs an FP8 format (e4m3 or e5m2), not '%s'",
                       dtype_name(cfg->fmt));
    if (cfg->hist_len < 1) return err_set(e, ST_USAGE, "amax history length must be at least 1");
    if (cfg->margin < -64 || cfg->margin > 64)
        return err_set(e, ST_USAGE, "margin %d is outside [-64, 64]", cfg->margin);
    if (cfg->algo != AMAX_ALGO_MAX && cfg->algo != AMAX_ALGO_MOST_RECENT)
        return err_set(e, ST_USAGE, "unknown amax algorithm %d", (int)cfg->algo);
    if (!history) return err_set(e, ST_SOFTWARE, "delayed_init: no history buffer");
    s->cfg = *cfg;
    s->history = history;
    memset(history, 0, sizeof *history * cfg->hist_len);
    s->scale = s->scale_inv = 1.0f;
    s->steps = 0;
    return ST_OK;
}

void delayed_step(DelayedState *s, float amax, DelayedStep *out)
{
    uint32_t L = s->cfg.hist_len;
    float *h = s->history;
    DelayedStep st = {.step = ++s->steps, .amax = amax, .scale_used = s->scale};
    h[0] = amax;
    /* 1. the window's amax, including this step's */
    float a = 0.0f;
    if (s->cfg.algo == AMAX_ALGO_MOST_RECENT)
        a = h[0];
    else
        for (uint32_t i = 0; i < L; i++) a = fmaxf(a, h[i]);
    st.window_amax = a;
    /* 2. next scale */
    ScaleCfg sc = scale_cfg(s->cfg.fmt);
    sc.margin = s->cfg.margin;
    s->scale = scale_update(a, s->scale, &sc, &st.why);
    s->scale_inv = scale_inv_of(s->scale);
    st.scale_next = s->scale;
    /* 3. rotate left by one, zero the slot for the next step's amax */
    if (L > 1) {
        float first = h[0];
        memmove(h, h + 1, sizeof *h * (L - 1));
        h[L - 1] = first;
    }
    h[0] = 0.0f;
    if (out) *out = st;
}
