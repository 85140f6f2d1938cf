/* exec/scaling.c — per-tensor scale arithmetic (see scaling.h). */
#include "exec/scaling.h"

#include <float.h>
#include <math.h>

void scaling_delayed_step(float *hist, uint32_t stride, uint32_t len, AmaxAlgo algo, float fmax, int margin,
                          float *scale)
{
    float recent = hist[0], amax = recent;
    if (algo == AMAX_ALGO_MAX)
        for (uint32_t j = 1; j < len; j++) amax = fmaxf(amax, hist[(uint64_t)j * stride]);
    if (isfinite(amax) && amax > 0.0f) {
        float s = ldexpf(fmax, -margin) / amax;
        *scale = isinf(s) ? FLT_MAX : s;
    }
    /* rotate: new[j] = old[j+1] for j < len-1, new[len-1] = old[0], new[0] = 0 */
    for (uint32_t j = 1; j + 1 < len; j++) hist[(uint64_t)j * stride] = hist[(uint64_t)(j + 1) * stride];
    if (len > 1) hist[(uint64_t)(len - 1) * stride] = recent;
    hist[0] = 0.0f;
}

float scaling_current(float amax, float fmax, int margin)
{
    if (!isfinite(amax) || amax == 0.0f) return 1.0f;
    float s = ldexpf(fmax, -margin) / amax;
    return isinf(s) ? FLT_MAX : s;
}

float scaling_pow2(float amax, float fmax, int margin, float prev)
{
    if (!isfinite(amax) || amax <= 0.0f) return prev;
    float q = fmax / amax;
    int ex = 127; /* q overflowed: the largest normal power of two, clamped below */
    if (isfinite(q)) {
        (void)frexpf(q, &ex); /* q = f·2^ex, f in [0.5, 1): floor(log2 q) = ex − 1, exactly */
        ex -= 1;
    }
    ex -= margin;
    if (ex > 126) ex = 126; /* keep the scale a normal float */
    if (ex < -126) ex = -126;
    return ldexpf(1.0f, ex);
}
