/* fp8/quant.c — block-scaled quantization at every granularity (see quant.h). */
#include "fp8/quant.h"

#include <math.h>

QuantCfg quant_cfg(Dtype fmt, Granularity gran)
{
    QuantCfg c = {fmt, gran, FP8_SATFINITE, 0, 0, 0.0f, E8M0_RULE_CEIL, 0};
    c.pow2 = gran == GRAN_1X128 || gran == GRAN_128X128;
    return c;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* block extent: 0 in gran_block means the whole dimension */
static void extent(Granularity g, uint64_t rows, uint64_t cols, uint64_t *br, uint64_t *bc)
{
    gran_block(g, br, bc);
    if (!*br) *br = rows;
    if (!*bc) *bc = cols;
}

/* the block extent under cfg: a per-column channel scale covers a whole column */
static void cfg_extent(const QuantCfg *cfg, uint64_t rows, uint64_t cols, uint64_t *br, uint64_t *bc)
{
    if (cfg->gran == GRAN_CHANNEL && cfg->chan_cols) {
        *br = rows, *bc = 1;
        return;
    }
    extent(cfg->gran, rows, cols, br, bc);
}

uint64_t quant_scale_index_cfg(const QuantCfg *cfg, uint64_t cols, uint64_t r, uint64_t c)
{
    if (cfg->gran == GRAN_CHANNEL && cfg->chan_cols) return c;
    return quant_scale_index(cfg->gran, cols, r, c);
}

Status quant_scale_count(const QuantCfg *cfg, uint64_t rows, uint64_t cols, uint64_t *n_scales, Err *e)
{
    uint64_t bytes;
    Status st = gran_scale_count(cfg->gran, rows, cols, n_scales, &bytes, e);
    if (!st && cfg->gran == GRAN_CHANNEL && cfg->chan_cols) *n_scales = cols;
    return st;
}

uint64_t quant_scale_index(Granularity g, uint64_t cols, uint64_t r, uint64_t c)
{
    uint64_t br, bc;
    extent(g, UINT64_MAX, cols, &br, &bc);
    if (g == GRAN_TENSOR) return 0;
    return (r / br) * ceil_div(cols, bc) + c / bc;
}

static Status check(const QuantCfg *cfg, uint64_t rows, uint64_t cols, uint64_t *n, Err *e)
{
    if (!dtype_is_fp8(cfg->fmt))
        return err_set(e, ST_USAGE, "quantization needs an FP8 format (e4m3 or e5m2), not '%s'", dtype_name(cfg->fmt));
    if ((unsigned)cfg->gran >= GRAN_COUNT_) return err_set(e, ST_USAGE, "unknown granularity %d", (int)cfg->gran);
    if (!rows || !cols)
        return err_set(e, ST_USAGE, "tensor shape %llux%llu has a zero dimension", (unsigned long long)rows,
                       (unsigned long long)cols);
    if (__builtin_mul_overflow(rows, cols, n) || *n > SIZE_MAX)
        return err_set(e, ST_OVERFLOW, "tensor %llux%llu has more elements than fit in memory",
                       (unsigned long long)rows, (unsigned long long)cols);
    if (cfg->margin < -64 || cfg->margin > 64)
        return err_set(e, ST_USAGE, "margin %d is outside [-64, 64]", cfg->margin);
    return ST_OK;
}

static void count(Dtype fmt, float x, float xs, uint8_t code, QuantCounts *k)
{
    k->n++;
    if (fp8_is_nan(fmt, code) || fp8_is_inf(fmt, code)) k->nonfinite++;
    if (!isfinite(x)) return;
    /* only a code at or past the largest finite magnitude can be a saturated value */
    if ((code & 0x7F) >= fp8_max_code(fmt) && (isinf(xs) || fp8_overflows(fmt, xs))) k->saturated++;
    if (x != 0.0f && (code & 0x7F) == 0) k->flushed++;
}

Status quant_tensor(const QuantCfg *cfg, const float *x, uint64_t rows, uint64_t cols, const QuantBufs *out,
                    QuantCounts *counts, Err *e)
{
    uint64_t n, br, bc, nscales;
    Status st = check(cfg, rows, cols, &n, e);
    if (st) return st;
    if ((st = quant_scale_count(cfg, rows, cols, &nscales, e))) return st;
    int mx = cfg->gran == GRAN_1X32;
    if (!out || !out->codes || (mx && !out->e8m0) || (!mx && !out->scale))
        return err_set(e, ST_SOFTWARE, "quant_tensor: missing output buffer for %s scales", gran_name(cfg->gran));
    cfg_extent(cfg, rows, cols, &br, &bc);
    uint64_t nbc = ceil_div(cols, bc);
    ScaleCfg sc = {cfg->fmt, cfg->margin, cfg->pow2, cfg->epsilon};
    QuantCounts k = {0, 0, 0, 0};
    for (uint64_t r0 = 0; r0 < rows; r0 += br) {
        uint64_t r1 = r0 + br < rows ? r0 + br : rows;
        for (uint64_t c0 = 0; c0 < cols; c0 += bc) {
            uint64_t c1 = c0 + bc < cols ? c0 + bc : cols, si = (r0 / br) * nbc + c0 / bc;
            float amax = 0.0f;
            for (uint64_t r = r0; r < r1; r++)
                for (uint64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[r * cols + c]));
            float scale, scale_inv;
            if (mx) {
                uint8_t code = e8m0_scale_from_amax(amax, cfg->fmt, cfg->rule);
                out->e8m0[si] = code;
                scale = e8m0_decode_rcp(code);
                scale_inv = e8m0_decode(code);
            } else {
                scale = scale_from_amax(amax, &sc, NULL);
                scale_inv = scale_inv_of(scale);
            }
            if (out->scale) out->scale[si] = scale;
            if (out->scale_inv) out->scale_inv[si] = scale_inv;
            if (out->amax) out->amax[si] = amax;
            for (uint64_t r = r0; r < r1; r++)
                for (uint64_t c = c0; c < c1; c++) {
                    float v = x[r * cols + c], xs = v * scale;
                    uint8_t code = fp8_encode_f32(cfg->fmt, xs, cfg->sat);
                    out->codes[r * cols + c] = code;
                    count(cfg->fmt, v, xs, code, &k);
                }
        }
    }
    if (counts) *counts = k;
    return ST_OK;
}

Status quant_dequant(const QuantCfg *cfg, const QuantBufs *in, uint64_t rows, uint64_t cols, float *y, Err *e)
{
    uint64_t n, br, bc;
    Status st = check(cfg, rows, cols, &n, e);
    if (st) return st;
    int mx = cfg->gran == GRAN_1X32;
    if (!in || !in->codes || (mx && !in->e8m0) || (!mx && !in->scale && !in->scale_inv))
        return err_set(e, ST_SOFTWARE, "quant_dequant: missing input buffer for %s scales", gran_name(cfg->gran));
    cfg_extent(cfg, rows, cols, &br, &bc);
    uint64_t nbc = ceil_div(cols, bc);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            uint64_t si = (r / br) * nbc + c / bc;
            float inv = mx              ? e8m0_decode(in->e8m0[si])
                        : in->scale_inv ? in->scale_inv[si]
                                        : scale_inv_of(in->scale[si]);
            y[r * cols + c] = fp8_decode(cfg->fmt, in->codes[r * cols + c]) * inv;
        }
    return ST_OK;
}

float quant_cast(Dtype fmt, Fp8Sat sat, float scale, const float *x, size_t n, uint8_t *codes, QuantCounts *counts)
{
    QuantCounts k = {0, 0, 0, 0};
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float xs = x[i] * scale;
        codes[i] = fp8_encode_f32(fmt, xs, sat);
        amax = fmaxf(amax, fabsf(x[i]));
        count(fmt, x[i], xs, codes[i], &k);
    }
    if (counts) *counts = k;
    return amax;
}

void quant_uncast(Dtype fmt, float scale_inv, const uint8_t *codes, size_t n, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] = fp8_decode(fmt, codes[i]) * scale_inv;
}
