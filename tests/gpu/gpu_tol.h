/* tests/gpu/gpu_tol.h — the tolerances the GPU checks compare with, and the
 * derivations behind the ones that depend on the hardware (pure: no backend,
 * so tests/unit/test_gpu_tol.c checks the derivations on the CPU).
 *
 * An element passes when
 *     |gpu − cpu| ≤ rel·|cpu| + abs_rms·rms(cpu) + abs
 * and the tensor passes when every element does and ‖gpu − cpu‖₂ ≤ norm·‖cpu‖₂
 * (rms over the finite reference values). */
#ifndef FP8PLAN_TESTS_GPU_TOL_H
#define FP8PLAN_TESTS_GPU_TOL_H

#include <math.h>
#include <stdint.h>

#include "fp8/dtype.h"

typedef struct {
    double rel, abs_rms, norm; /* see above */
    const char *why;           /* its derivation, printed on failure */
    double abs;                /* an absolute term, in the stored units (e.g. one FP8 subnormal step) */
} Tol;

static inline double tol_allowed(Tol t, double cpu, double rms) { return t.rel * fabs(cpu) + t.abs_rms * rms + t.abs; }

static inline int tol_element_ok(Tol t, double gpu, double cpu, double rms)
{
    return fabs(gpu - cpu) <= tol_allowed(t, cpu, rms);
}

/* ---- FP8 GEMM with fast accumulation (cuBLASLt FAST_ACCUM, TE's forward) --------------
 * Hopper's FP8 MMA keeps its running sum in about 14 significant bits (1 sign,
 * 8 exponent, 13 mantissa bits: the "FP22" accumulator measured by
 * SageAttention2; DeepSeek-V3 §3.3.2 "around 14 bits") and folds one k = 32
 * slice of products into it per instruction, so a dot product of length K
 * takes J = ⌈K/32⌉ lossy additions, each off by less than 2^-13 of the running
 * sum S_j. Two parts, relative to the output rms (the partial sums of N(0, σ²)
 * products are of the output's size):
 *   walk(K)  = 2^-13·√J   the random part (errors of either sign add as a
 *                         random walk over J steps);
 *   drift(K) = 2^-14·J    the truncation's bias: chopping toward zero loses
 *                         2^-14 of |S_j| on average per step, and on an element
 *                         whose partial sums keep their sign these add up.
 * Per element we allow 6·walk + 4·drift (6σ of the walk: at 10^5 elements a
 * larger excursion has probability < 10^-3; the drift's largest multiple in
 * the CPU emulation of test_gpu_tol.c is 2.2), on top of one BF16 ulp of the
 * output (2^-7 relative, 2^-7·rms near zero from cancellation); for the norm
 * walk + drift + one BF16 rounding (2^-8). At K = 512: J = 16, walk =
 * 4.9e-4, drift = 9.8e-4: 6.8e-3·rms per element beyond the BF16 ulp. */
static inline double tol_fp8_fast_steps(uint64_t k) { return (double)((k + 31) / 32); }
static inline double tol_fp8_walk(uint64_t k) { return 0x1p-13 * sqrt(tol_fp8_fast_steps(k)); }
static inline double tol_fp8_drift(uint64_t k) { return 0x1p-14 * tol_fp8_fast_steps(k); }

static inline Tol tol_fast(uint64_t k)
{
    double w = tol_fp8_walk(k), d = tol_fp8_drift(k);
    Tol t = {0x1p-7, 0x1p-7 + 6.0 * w + 4.0 * d, 0x1p-8 + w + d,
             "BF16 ulp + Hopper FP8 fast accumulation (13-bit running sum per k=32: 6*2^-13*sqrt(K/32) + "
             "4*2^-14*K/32 of rms)",
             0.0};
    return t;
}

/* ---- FP8 GEMM without fast accumulation (TE's dgrad and wgrad), FP32 output ----------
 * cuBLASLt then promotes the 13-bit running sum into FP32 periodically (its
 * FAST_ACCUM documentation, which does not give the period; DeepSeek-V3 §3.3.2
 * promotes every 128 = 4 WGMMAs, taken here as the longest). Each chunk of
 * c = min(K, 128) carries tol_fast's walk and drift over c, relative to the
 * chunk's sum (rms √(c/K) of the output's), and the K/c chunks' errors add in
 * FP32 as a walk: (walk(c) + drift(c))·rms in all, per element 6·walk + 4·drift,
 * plus the FP32 order's 2^-12 (norm 2^-14). At K = 256: c = 128, walk = drift =
 * 2^-12: per element 11·2^-12 = 2.7e-3 of rms, norm 9·2^-14 = 5.5e-4 (an H200
 * measured 1.0e-4 on 384x128x256, 2026-12-04; FP32 accumulation's 2^-14 failed). */
static inline Tol tol_split_f32(uint64_t k)
{
    uint64_t c = k < 128 ? k : 128;
    double w = tol_fp8_walk(c), d = tol_fp8_drift(c);
    Tol t = {0.0, 0x1p-12 + 6.0 * w + 4.0 * d, 0x1p-14 + w + d,
             "FP8 MMA's 13-bit running sum promoted to FP32 at least every k = 128 (6 walk + 4 drift over 128)", 0.0};
    return t;
}

/* ---- block-scaled FP8 GEMM (DeepSeek-V3: 1x128 tiles x 128x128 or 1x128 blocks), BF16 output ------------
 * cuBLASLt must apply each 128-wide K block's two scales before the block joins the FP32 sum, so the MMA's
 * running sum is promoted at least every k = 128: tol_split_f32's walk and drift over c = min(K, 128),
 * relative to the output rms, against the CPU's exact FP32 block sums (GEMM_ACC_SPLIT), plus one BF16 ulp of
 * the output (2^-7 relative and 2^-7 of rms near zero; norm 2^-8). At K = 512: c = 128, walk = drift =
 * 2^-12: per element 2^-7 + 10·2^-12 of rms, norm 2^-8 + 2·2^-12. */
static inline Tol tol_block_bf16(uint64_t k)
{
    uint64_t c = k < 128 ? k : 128;
    double w = tol_fp8_walk(c), d = tol_fp8_drift(c);
    Tol t = {0x1p-7, 0x1p-7 + 6.0 * w + 4.0 * d, 0x1p-8 + w + d,
             "BF16 ulp + the FP8 MMA's 13-bit running sum promoted at every 128-wide scale block (6 walk + 4 drift "
             "over 128)",
             0.0};
    return t;
}

/* ---- FP8 output ---------------------------------------------------------------------
 * Both sides form FP32 sums (in other orders) and round once to FP8: where the
 * two sums straddle a rounding boundary the codes differ by one step. One step
 * of a normal FP8 value is at most 2^-m of it (m mantissa bits: E4M3 2^-3,
 * E5M2 2^-2); below the smallest normal the step is the subnormal step (E4M3
 * 2^-9, E5M2 2^-16), an absolute term no relative bound covers (a value of
 * 1.5·2^-9 rounds to 2^-9 or 2^-8: a difference of 2^-9 = 2·2^-3·2^-8's
 * relative allowance). Straddles are rare: norm ≤ 2^-6. Values are compared in
 * the stored (scaled) units. */
static inline Tol tol_fp8_out(Dtype fmt)
{
    Tol t = {fmt == DT_E5M2 ? 0x1p-2 : 0x1p-3, 0.0, 0x1p-6,
             "one FP8 step where the FP32 sums straddle a boundary: 2^-m relative, one subnormal step absolute",
             fmt == DT_E5M2 ? 0x1p-16 : 0x1p-9};
    return t;
}

/* ---- router scores and combine weights (exec/cuda/k_moe.cu against exec/cpu/cpu_moe.c) -----------
 * Both sides run the same float operations in the same order except expf (CUDA's within 2 ulp, glibc's
 * within 1), so the two exponentials of one logit are at most 3 ulp apart, ≤ 6u relative (an ulp is at
 * most 2u of the value, u = 2^-24). Softmax s_e = e_e / Σ e: the E positive terms' sum moves by at most
 * 6u relative from its inputs plus 2u for each of the E − 1 additions whose roundings may differ, the
 * quotient by its inputs' and 2u more: (6 + 6 + 2(E − 1) + 2)u = (12 + 2E)u. Sigmoid 1 / (1 + e^-x): the
 * sum within 6u + 2u, the quotient 10u. The weights w_j = s_j / Σ_k s · c (norm_topk) add twice the
 * scores' bound (numerator and sum) and 2u for each of the k − 1 additions, the division and the scaling:
 * 2δ + 2(k + 1)u; without the normalisation δ + 2u. tests/unit/test_gpu_tol.c emulates the worst
 * expf difference (3 ulp either way) and checks these bounds hold. */
static inline double tol_router_score_rel(int sigmoid, uint32_t experts)
{
    return sigmoid ? 10 * 0x1p-24 : (12 + 2.0 * experts) * 0x1p-24;
}

static inline double tol_router_weight_rel(double score_rel, int norm_topk, uint32_t k)
{
    return norm_topk ? 2 * score_rel + 2.0 * (k + 1) * 0x1p-24 : score_rel + 2 * 0x1p-24;
}

#endif
