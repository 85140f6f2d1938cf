/* exec/backend/scaling.c — the executor's scale updates on fp8/'s policies (see scaling.h). */
#include "exec/backend/scaling.h"

#include <float.h>
#include <math.h>

#include "fp8/scale.h"

static ScaleCfg cfg(Dtype fmt, int margin, int pow2)
{
    ScaleCfg c = scale_cfg(fmt);
    c.margin = margin;
    c.pow2 = pow2;
    return c;
}

void scaling_delayed_step(float *hist, uint32_t stride, uint32_t len, AmaxAlgo algo, Dtype fmt, int margin,
                          float *scale)
{
    float recent = hist[0], amax = recent;
    /* TE's bulk update (amax_and_scale_update_after_reduction): a tensor whose
     * amax is 0 did not run this step; its history does not roll and its
     * scale stays */
    if (recent == 0.0f) return;
    if (algo == AMAX_ALGO_MAX)
        for (uint32_t j = 1; j < len; j++) amax = fmaxf(amax, hist[(uint64_t)j * stride]);
    ScaleCfg c = cfg(fmt, margin, 0);
    *scale = scale_update(amax, *scale, &c, NULL);
    /* rotate: new[j] = old[j+1] for 0 < j < len-1, new[len-1] = old[0], new[0] = 0 */
    for (uint32_t j = 1; j + 1 < len; j++) hist[(uint64_t)j * stride] = hist[(uint64_t)(j + 1) * stride];
    if (len > 1) hist[(uint64_t)(len - 1) * stride] = recent;
    hist[0] = 0.0f;
}

float scaling_current(float amax, Dtype fmt, int margin)
{
    ScaleCfg c = cfg(fmt, margin, 0);
    return scale_from_amax(amax, &c, NULL);
}

float scaling_pow2(float amax, Dtype fmt, int margin, float prev)
{
    if (dtype_is_fp8(fmt)) {
        ScaleCfg c = cfg(fmt, margin, 1);
        return scale_update(amax, prev, &c, NULL);
    }
    /* FP16 states: the same rule with fmax = 65504 (fp8/ scales target FP8 formats only) */
    if (!isfinite(amax) || amax <= 0.0f) return prev;
    float q = ldexpf(65504.0f, -margin) / amax;
    return scale_pow2_floor(isinf(q) ? FLT_MAX : q);
}
