/* exec/kernel_math.h — the per-element arithmetic of the executor's kernels,
 * shared by the CPU reference (C11) and the CUDA kernels (nvcc), so the CPU
 * tests exercise the very arithmetic the GPU runs. Each function is pure FP32
 * with a fixed operation order; under nvcc they are __host__ __device__. */
#ifndef FP8PLAN_EXEC_KERNEL_MATH_H
#define FP8PLAN_EXEC_KERNEL_MATH_H

#include <math.h>

#if defined(__CUDACC__)
#define KM_FN __host__ __device__ __forceinline__
#else
#define KM_FN static inline
#endif

#define KM_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define KM_GELU_C 0.044715f

/* GELU, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))). */
KM_FN float km_gelu(float x) { return 0.5f * x * (1.0f + tanhf(KM_GELU_K * (x + KM_GELU_C * x * x * x))); }

/* d gelu / dx of the same approximation. */
KM_FN float km_gelu_grad(float x)
{
    float th = tanhf(KM_GELU_K * (x + KM_GELU_C * x * x * x)), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * KM_GELU_K * (1.0f + 3.0f * KM_GELU_C * x * x);
}

/* One AdamW element (decoupled weight decay): updates *m and *v and returns
 * the new weight. bc1 = 1 − β1^t and bc2 = 1 − β2^t are the bias corrections. */
KM_FN float km_adamw(float w, float g, float *m, float *v, float lr, float beta1, float beta2, float eps, float wd,
                     float bc1, float bc2)
{
    *m = beta1 * *m + (1.0f - beta1) * g;
    *v = beta2 * *v + (1.0f - beta2) * g * g;
    float mhat = *m / bc1, vhat = *v / bc2;
    return w - lr * (mhat / (sqrtf(vhat) + eps) + wd * w);
}

/* Layer norm's input gradient for one element, given the row's
 * mean(dout·w) and mean(dout·w·norm): (dnorm − mean_dnorm − norm·mean_dnorm_norm)·rstd. */
KM_FN float km_ln_dinput(float dnorm, float norm, float mean_dnorm, float mean_dnorm_norm, float rstd)
{
    return (dnorm - mean_dnorm - norm * mean_dnorm_norm) * rstd;
}

#undef KM_FN
#endif
