/* exec/backend/kernel_math.h — the per-element arithmetic of the executor's kernels, in
 * one place for both backends: compiled as host C by the CPU reference and its
 * tests, and as __host__ __device__ code by nvcc for the CUDA kernels.
 *
 * Bit-for-bit agreement where it is possible. On the device every product and
 * sum goes through the round-to-nearest intrinsics (__fmul_rn, __fadd_rn, ...),
 * which the compiler never contracts into a fused multiply-add; host C11 code
 * is not contracted either (ISO C mode, -ffp-contract=off). So a function here
 * that uses only + − × ÷ and sqrt gives the same float on the GPU as on the
 * CPU: the optimizers' updates and the scale rules are bit-identical. Functions
 * that call tanhf/expf inherit the two libraries' differences (CUDA's tanhf and
 * expf are within 2 ulp, glibc's within 1), which the GPU tests bound.
 *
 * Conventions as in exec/backend/backend.h: a scale is the quantization multiplier,
 * scale = fmax / amax / 2^margin. */
#ifndef FP8PLAN_EXEC_KERNEL_MATH_H
#define FP8PLAN_EXEC_KERNEL_MATH_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define KM_FN static __host__ __device__ __forceinline__
#else
#define KM_FN static inline
#endif

/* Correctly rounded float operations that are never fused. */
#if defined(__CUDA_ARCH__)
#define KM_MUL(a, b) __fmul_rn((a), (b))
#define KM_ADD(a, b) __fadd_rn((a), (b))
#define KM_SUB(a, b) __fsub_rn((a), (b))
#define KM_DIV(a, b) __fdiv_rn((a), (b))
#define KM_SQRT(a)   __fsqrt_rn(a)
#else
#define KM_MUL(a, b) ((a) * (b))
#define KM_ADD(a, b) ((a) + (b))
#define KM_SUB(a, b) ((a) - (b))
#define KM_DIV(a, b) ((a) / (b))
#define KM_SQRT(a)   sqrtf(a)
#endif

#define KM_FP16_MAX 65504.0f

/* ---- scale rules (fp8/scale.h's policies: TE's delayed and current scaling,
 * MS-AMP's power of two), as exec/backend/scaling.c applies them on the CPU ------------- */

/* The largest power of two at or below a positive scale (fp8/'s
 * scale_pow2_floor: the float's bits & 0xFF800000). */
KM_FN float km_pow2_floor(float s)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(__float_as_uint(s) & 0xFF800000u);
#else
    union {
        float f;
        uint32_t u;
    } b = {s};
    b.u &= 0xFF800000u;
    return b.f;
#endif
}

/* Delayed scaling (TE amax_and_scale_update, fp8/'s scale_update): fmax·2^-margin
 * / amax when amax is finite and > 0, else `prev` is kept; an infinite result
 * (tiny amax) becomes FLT_MAX. */
KM_FN float km_scale_delayed(float amax, float fmax, int margin, float prev)
{
    float s = (isfinite(amax) && amax > 0.0f) ? KM_DIV(ldexpf(fmax, -margin), amax) : prev;
    return isinf(s) ? FLT_MAX : s;
}

/* Current scaling (TE compute_scale_from_amax, fp8/'s scale_from_amax with
 * epsilon 0): 1 when amax is ≤ 0, Inf or NaN; FLT_MAX when the quotient
 * overflows. */
KM_FN float km_scale_current(float amax, float fmax, int margin)
{
    if (!(amax > 0.0f) || isinf(amax)) return 1.0f;
    float s = KM_DIV(ldexpf(fmax, -margin), amax);
    return isinf(s) ? FLT_MAX : s;
}

/* FP8-LM optimizer states (MS-AMP ScalingMeta): the delayed rule rounded down to
 * a power of two, 2^floor(log2(fmax·2^-margin / amax)) (2^127 for a tiny amax);
 * `prev` when amax is 0 or not finite. */
KM_FN float km_scale_pow2(float amax, float fmax, int margin, float prev)
{
    if (!(isfinite(amax) && amax > 0.0f)) return prev;
    float s = KM_DIV(ldexpf(fmax, -margin), amax);
    return km_pow2_floor(isinf(s) ? FLT_MAX : s);
}

/* ---- GELU, tanh approximation (GPT-2) ---------------------------------------------- */

#define KM_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define KM_GELU_C 0.044715f

/* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
KM_FN float km_gelu(float x)
{
    float cube = KM_MUL(KM_MUL(KM_MUL(KM_GELU_C, x), x), x);
    float th = tanhf(KM_MUL(KM_GELU_K, KM_ADD(x, cube)));
    return KM_MUL(KM_MUL(0.5f, x), KM_ADD(1.0f, th));
}

/* d gelu / dx at x. */
KM_FN float km_gelu_grad(float x)
{
    float cube = KM_MUL(KM_MUL(KM_MUL(KM_GELU_C, x), x), x);
    float th = tanhf(KM_MUL(KM_GELU_K, KM_ADD(x, cube)));
    float sech2 = KM_SUB(1.0f, KM_MUL(th, th));
    float inner = KM_ADD(1.0f, KM_MUL(KM_MUL(3.0f * KM_GELU_C, x), x));
    float left = KM_MUL(0.5f, KM_ADD(1.0f, th));
    return KM_ADD(left, KM_MUL(KM_MUL(KM_MUL(KM_MUL(0.5f, x), sech2), KM_GELU_K), inner));
}

/* ---- layer norm ---------------------------------------------------------------------- */

/* The normalized value x̂ = (x − mean)·rstd. */
KM_FN float km_ln_norm(float x, float mean, float rstd) { return KM_MUL(KM_SUB(x, mean), rstd); }

/* Output y = x̂·w + b. */
KM_FN float km_ln_out(float xhat, float w, float b) { return KM_ADD(KM_MUL(xhat, w), b); }

/* Input gradient of one element: (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))·rstd, with
 * dx̂ = w·dy. */
KM_FN float km_ln_dx(float dxhat, float dxhat_mean, float xhat, float dxhat_xhat_mean, float rstd)
{
    return KM_MUL(KM_SUB(KM_SUB(dxhat, dxhat_mean), KM_MUL(xhat, dxhat_xhat_mean)), rstd);
}

/* ---- RMSNorm (LLaMA): x̂ = x·rstd, rstd = 1/√(mean(x²) + eps) ----------------------- */

/* Output y = x̂·w (no mean, no bias). */
KM_FN float km_rms_out(float xhat, float w) { return KM_MUL(xhat, w); }

/* Input gradient of one element: (dx̂ − x̂·mean(dx̂·x̂))·rstd, with dx̂ = w·dy
 * (layer norm's without the mean terms). */
KM_FN float km_rms_dx(float dxhat, float xhat, float dxhat_xhat_mean, float rstd)
{
    return KM_MUL(KM_SUB(dxhat, KM_MUL(xhat, dxhat_xhat_mean)), rstd);
}

/* ---- SwiGLU (LLaMA's MLP): out = silu(gate)·up, silu(x) = x·σ(x) ----------------------- */

/* σ(x) = 1/(1 + e^−x) (e^−x overflowing to +Inf gives 0, as it should). */
KM_FN float km_sigmoid(float x) { return KM_DIV(1.0f, KM_ADD(1.0f, expf(-x))); }

KM_FN float km_swiglu(float gate, float up) { return KM_MUL(KM_MUL(gate, km_sigmoid(gate)), up); }

/* Gradients of one (gate, up) pair from dy: dup = dy·silu(gate);
 * dgate = dy·up·σ(gate)·(1 + gate·(1 − σ(gate))), silu's derivative. */
KM_FN void km_swiglu_bwd(float gate, float up, float dy, float *dgate, float *dup)
{
    float sg = km_sigmoid(gate);
    *dup = KM_MUL(dy, KM_MUL(gate, sg));
    float dsilu = KM_MUL(sg, KM_ADD(1.0f, KM_MUL(gate, KM_SUB(1.0f, sg))));
    *dgate = KM_MUL(KM_MUL(dy, up), dsilu);
}

/* ---- rotary position embedding --------------------------------------------------------- */

/* One rotated pair (x1, x2) by the angle whose cosine and sine are c and s:
 * (x1·c − x2·s, x2·c + x1·s). The inverse rotation is the same with −s. */
KM_FN void km_rope_pair(float x1, float x2, float c, float s, float *o1, float *o2)
{
    *o1 = KM_SUB(KM_MUL(x1, c), KM_MUL(x2, s));
    *o2 = KM_ADD(KM_MUL(x2, c), KM_MUL(x1, s));
}

/* ---- softmax, attention and cross-entropy ---------------------------------------------- */

/* Softmax backward of one element: p·(dp − Σ p·dp). */
KM_FN float km_softmax_bwd(float p, float dp, float dot) { return KM_MUL(p, KM_SUB(dp, dot)); }

/* d loss / d logit for one element of a row with max mx and Σ exp(x − mx) = sum:
 * (softmax − [is target])·dloss. */
KM_FN float km_xent_dlogit(float x, float mx, float sum, int is_target, float dloss)
{
    float p = KM_DIV(expf(KM_SUB(x, mx)), sum);
    return KM_MUL(KM_SUB(p, is_target ? 1.0f : 0.0f), dloss);
}

/* ---- online softmax statistics (the CUDA cross-entropy's one read of a row) -----------------
 * A running pair (m, s) = (max seen, Σ exp(x − m) over what was seen), so a row's max and
 * sum come out of one pass: a larger maximum rescales the sum by exp(m_old − m_new).
 * m starts at −inf with s = 0. An x of −inf adds exactly 0 (as exp(−inf − finite) does in
 * the two-pass reference, and without the NaN of −inf − (−inf) while m is still −inf);
 * NaN never becomes the maximum (fmaxf) and reaches s through expf, as in the reference.
 * Against the two-pass sum each rescale costs expf's ≤ 2 ulp and one rounded product:
 * ≤ 3·2^-24 relative per change of the maximum, besides the order of the additions. */
KM_FN float km_online_term(float x, float m) { return x == -INFINITY ? 0.0f : expf(KM_SUB(x, m)); }

/* Fold a group of k values (a 16-byte vector) into (m, s): one rescale per group. */
KM_FN void km_online_add(float *m, float *s, const float *x, int k)
{
    float gm = *m;
    for (int i = 0; i < k; i++) gm = fmaxf(gm, x[i]);
    if (gm > *m) { /* *m == −inf leaves s = 0 (km_online_term's rule) */
        *s = KM_MUL(*s, km_online_term(*m, gm));
        *m = gm;
    }
    for (int i = 0; i < k; i++) *s = KM_ADD(*s, km_online_term(x[i], *m));
}

/* Merge (m2, s2) into (m, s): both sums brought to the larger maximum. */
KM_FN void km_online_merge(float *m, float *s, float m2, float s2)
{
    float mm = fmaxf(*m, m2);
    *s = KM_ADD(KM_MUL(*s, km_online_term(*m, mm)), KM_MUL(s2, km_online_term(m2, mm)));
    *m = mm;
}

/* ---- AdamW ----------------------------------------------------------------------------------
 * Decoupled weight decay; bc1 = 1 − beta1^t and bc2 = 1 − beta2^t are computed once per
 * call on the host (powf), so both backends divide by the same floats. */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float bc1, bc2;
} KmAdam;

/* m ← b1·m + (1−b1)·g; v ← b2·v + (1−b2)·g²; returns w − lr·(m̂/(√v̂ + eps) + wd·w). */
KM_FN float km_adam(const KmAdam *h, float w, float g, float *m, float *v)
{
    float mm = KM_ADD(KM_MUL(h->beta1, *m), KM_MUL(KM_SUB(1.0f, h->beta1), g));
    float vv = KM_ADD(KM_MUL(h->beta2, *v), KM_MUL(KM_MUL(KM_SUB(1.0f, h->beta2), g), g));
    *m = mm;
    *v = vv;
    float mhat = KM_DIV(mm, h->bc1), vhat = KM_DIV(vv, h->bc2);
    float step = KM_ADD(KM_DIV(mhat, KM_ADD(KM_SQRT(vhat), h->eps)), KM_MUL(h->weight_decay, w));
    return KM_SUB(w, KM_MUL(h->lr, step));
}

/* FP8-LM's update of one element from its stored (decoded, still scaled) states:
 * w = stored_w·dw, m = stored_m·dm, v = stored_v·dv (dw, dm, dv = 1/scale),
 * then km_adam. Sets *m and *v to the new unscaled moments; returns the new w. */
KM_FN float km_adam_scaled(const KmAdam *h, float stored_w, float dw, float g, float stored_m, float dm, float stored_v,
                           float dv, float *m, float *v)
{
    *m = KM_MUL(stored_m, dm);
    *v = KM_MUL(stored_v, dv);
    return km_adam(h, KM_MUL(stored_w, dw), g, m, v);
}

/* ---- the names the CPU reference calls (exec/cpu/cpu_norm.c, exec/cpu/cpu_optim.c) ---------- */

/* One AdamW element with the hyper-parameters spelled out: km_adam's arithmetic. */
KM_FN float km_adamw(float w, float g, float *m, float *v, float lr, float beta1, float beta2, float eps, float wd,
                     float bc1, float bc2)
{
    KmAdam h = {lr, beta1, beta2, eps, wd, bc1, bc2};
    return km_adam(&h, w, g, m, v);
}

/* Layer norm's input gradient of one element: km_ln_dx with the CPU's argument order. */
KM_FN float km_ln_dinput(float dnorm, float norm, float mean_dnorm, float mean_dnorm_norm, float rstd)
{
    return km_ln_dx(dnorm, mean_dnorm, norm, mean_dnorm_norm, rstd);
}

#endif
