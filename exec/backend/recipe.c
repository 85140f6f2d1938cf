/* exec/backend/recipe.c — which recipe combinations the executor runs (see recipe.h). */
#include "exec/backend/recipe.h"

static int is_float(Dtype t) { return t == DT_FP32 || t == DT_FP16 || t == DT_BF16; }

Dtype exec_act_dtype(const Recipe *r)
{
    Dtype w = r->other.dt[STATE_WEIGHT];
    return is_float(w) ? w : DT_BF16;
}

uint32_t exec_history_len(const Recipe *r) { return r->scaling == SCALING_DELAYED ? r->amax_history : 1; }

int exec_o1_states(const Recipe *r, const StateSet *s)
{
    return s == &r->gemm && recipe_fp8_gemm(r) && s->dt[STATE_WEIGHT] == DT_FP16 && s->dt[STATE_MASTER] == DT_NONE &&
           exec_state_scaled(s, STATE_WEIGHT) && dtype_is_fp8(s->dt[STATE_GRAD]) && exec_state_scaled(s, STATE_GRAD) &&
           s->dt[STATE_M] == DT_FP32 && s->dt[STATE_V] == DT_FP32 && !exec_state_scaled(s, STATE_M) &&
           !exec_state_scaled(s, STATE_V);
}

/* One state set; `gemm` is 1 for the linear weights (FP8-LM and MS-AMP O1 states allowed). */
static Status check_states(const Recipe *r, const StateSet *s, int gemm, Err *e)
{
    const char *n = r->name[0] ? r->name : "(unnamed)", *cls = gemm ? "linear-weight" : "other-parameter";
    Dtype w = s->dt[STATE_WEIGHT], ma = s->dt[STATE_MASTER], g = s->dt[STATE_GRAD], m = s->dt[STATE_M],
          v = s->dt[STATE_V];
    Dtype act = exec_act_dtype(r);
    int fp8 = recipe_fp8_gemm(r);
    if (w == DT_NONE && (!gemm || !fp8))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: %s working weights 'none' need FP8 GEMMs that read FP8 copies of the master; "
                       "the recipe's BF16 GEMMs would cast the master per op (FP8-LM's 16 B/param accounting, as "
                       "FSDP's mixed precision does), which the executor does not: it keeps a BF16 working weight "
                       "(megatron-bf16, 18 B/param, runs BF16)",
                       n, cls);
    if (w != DT_NONE && !is_float(w))
        return err_set(e, ST_UNAVAILABLE, "recipe %s: %s working weights in %s are not supported", n, cls,
                       dtype_name(w));
    if (w != DT_NONE && w != act && (!gemm || !fp8))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: %s working weights in %s but activations in %s (the executor's non-FP8 GEMMs and "
                       "embeddings take both in one dtype)",
                       n, cls, dtype_name(w), dtype_name(act));
    if (ma != DT_FP32 && ma != DT_NONE && !(gemm && ma == DT_FP16))
        return err_set(e, ST_UNAVAILABLE, "recipe %s: %s master weights in %s are not supported (fp32%s or none)", n,
                       cls, dtype_name(ma), gemm ? ", fp16" : "");
    const int o1 = exec_o1_states(r, s);
    if (ma == DT_NONE && w != DT_FP32 && !o1)
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: %s states keep no master, so the optimizer would update %s weights in place; "
                       "the executor does that for fp32 weights, and for MS-AMP O1's linears (a scaled fp16 weight "
                       "read by FP8 GEMMs, scaled FP8 gradients, fp32 Adam m and v)",
                       n, cls, dtype_name(w));
    if (g != DT_FP32 && g != DT_BF16 && !dtype_is_fp8(g))
        return err_set(e, ST_UNAVAILABLE, "recipe %s: %s gradients in %s are not supported", n, cls, dtype_name(g));
    if (dtype_is_fp8(g) && !exec_state_scaled(s, STATE_GRAD))
        return err_set(e, ST_USAGE, "recipe %s: %s gradients in %s need a scaling record (scaled states)", n, cls,
                       dtype_name(g));
    if (ma == DT_FP16) {
        if (m != DT_E4M3 || v != DT_FP16)
            return err_set(e, ST_UNAVAILABLE,
                           "recipe %s: an fp16 master runs with FP8-LM's optimizer only (m e4m3, v fp16; got m %s, "
                           "v %s)",
                           n, dtype_name(m), dtype_name(v));
    } else if (!(m == DT_FP32 && v == DT_FP32) && !(m == DT_BF16 && v == DT_BF16 && ma == DT_FP32)) {
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: %s Adam states m %s, v %s need FP8-LM's optimizer (an fp16 master); with a %s "
                       "master they must be fp32 (or both bf16 with an fp32 master, as DeepSeek-V3's)",
                       n, cls, dtype_name(m), dtype_name(v), dtype_name(ma));
    }
    for (int i = 0; i < STATE_COUNT_; i++) {
        if (!exec_state_scaled(s, (StateId)i)) continue;
        if (!gemm)
            return err_set(e, ST_UNAVAILABLE, "recipe %s: scaled %s states of other parameters are not supported", n,
                           state_name((StateId)i));
        if (s->dt[i] == DT_FP32 || s->dt[i] == DT_BF16 || (i == STATE_WEIGHT && !o1))
            return err_set(e, ST_UNAVAILABLE, "recipe %s: a scaling record on the %s %s state is not supported", n,
                           dtype_name(s->dt[i]), state_name((StateId)i));
    }
    return ST_OK;
}

Status exec_recipe_check(const Recipe *r, Err *e)
{
    const char *n = r->name[0] ? r->name : "(unnamed)";
    const Dtype act = exec_act_dtype(r);
    if (recipe_fp8_gemm(r) && (r->act_gran != GRAN_TENSOR || r->weight_gran != GRAN_TENSOR) &&
        (r->act_gran != GRAN_1X128 || r->weight_gran != GRAN_128X128))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: %s/%s scale granularity is not run by the executor yet (per-tensor, or "
                       "DeepSeek-V3's 1x128/128x128)",
                       n, gran_name(r->act_gran), gran_name(r->weight_gran));
    if (exec_block_scaled(r) && (r->scaling != SCALING_CURRENT || r->fp8_row == DT_NONE || r->fp8_col == DT_NONE ||
                                 !dtype_is_fp8(r->saved_input)))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: block scales run with current scaling, kept FP8 weight copies in both layouts "
                       "and FP8 saved inputs (DeepSeek-V3's combination)",
                       n);
    Status st = check_states(r, &r->gemm, 1, e);
    if (!st) st = check_states(r, &r->other, 0, e);
    if (st) return st;
    if (!recipe_fp8_gemm(r)) {
        if (r->gemm_fwd != act || r->gemm_bwd != act)
            return err_set(e, ST_UNAVAILABLE, "recipe %s: GEMMs in %s/%s with %s activations are not supported", n,
                           dtype_name(r->gemm_fwd), dtype_name(r->gemm_bwd), dtype_name(act));
        if (r->fp8_row != DT_NONE || r->fp8_col != DT_NONE)
            return err_set(e, ST_USAGE, "recipe %s: FP8 weight copies without FP8 GEMMs", n);
        if (r->saved_input != act)
            return err_set(e, ST_USAGE, "recipe %s: saved GEMM inputs in %s without FP8 GEMMs", n,
                           dtype_name(r->saved_input));
        return ST_OK;
    }
    if (r->gemm_fwd != DT_E4M3)
        return err_set(e, ST_UNAVAILABLE, "recipe %s: forward GEMMs in %s (the executor runs e4m3)", n,
                       dtype_name(r->gemm_fwd));
    if (!dtype_is_fp8(r->gemm_bwd))
        return err_set(e, ST_USAGE, "recipe %s: FP8 forward GEMMs need FP8 gradients (e5m2 or e4m3), got %s", n,
                       dtype_name(r->gemm_bwd));
    if (r->scaling != SCALING_DELAYED && r->scaling != SCALING_CURRENT)
        return err_set(e, ST_USAGE, "recipe %s: FP8 GEMMs need delayed or current scaling", n);
    if (r->scaling == SCALING_DELAYED && r->amax_history == 0)
        return err_set(e, ST_USAGE, "recipe %s: delayed scaling needs an amax history of at least 1", n);
    if ((r->fp8_row != DT_NONE && r->fp8_row != r->gemm_fwd) || (r->fp8_col != DT_NONE && r->fp8_col != r->gemm_fwd))
        return err_set(e, ST_USAGE, "recipe %s: FP8 weight copies in %s/%s but forward GEMMs in %s", n,
                       dtype_name(r->fp8_row), dtype_name(r->fp8_col), dtype_name(r->gemm_fwd));
    if (r->saved_input != act && r->saved_input != r->gemm_fwd)
        return err_set(e, ST_USAGE, "recipe %s: saved GEMM inputs in %s (%s or %s)", n, dtype_name(r->saved_input),
                       dtype_name(act), dtype_name(r->gemm_fwd));
    return ST_OK;
}
