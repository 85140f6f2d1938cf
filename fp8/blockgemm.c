/* fp8/blockgemm.c — the DeepSeek-V3 block-scaled FP8 GEMM reference (see blockgemm.h). */
#include "fp8/blockgemm.h"

#include <math.h>
#include <string.h>

#include "fp8/codec.h"

enum { TC14_FRAC = 13 }; /* 14 significant bits */

float block_acc_truncate(float x, int frac)
{
    if (frac >= 23 || !isfinite(x) || x == 0.0f) return x;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u &= ~((UINT32_C(1) << (23 - frac)) - 1u); /* the low fraction bits cleared: toward zero */
    memcpy(&x, &u, sizeof u);
    return x;
}

/* The sum of a 14-bit partial sum and an E4M3 x E4M3 product (8 significant bits, magnitudes 2^-18 ..
 * 448^2) spans fewer than 53 bits, so the double it is formed in holds it exactly; clearing the double's
 * low 52 - 13 fraction bits truncates it toward zero to 14 significant bits. */
float block_acc_tc14_add(float part, float p)
{
    double s = (double)part + (double)p; /* exact (trunc_sig's note) */
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    u &= ~((UINT64_C(1) << (52 - TC14_FRAC)) - 1u); /* trunc_sig(s, 14) for a normal double, by its bits */
    memcpy(&s, &u, sizeof u);
    return (float)s;
}

Status block_gemm(const BlockGemm *g, float *d, Err *e)
{
    if (!g || !d) return err_set(e, ST_USAGE, "block_gemm: no descriptor or output");
    if (!g->m || !g->n || !g->k)
        return err_set(e, ST_USAGE, "block_gemm: empty shape m=%llu n=%llu k=%llu", (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    if (!dtype_is_fp8(g->a_fmt) || !dtype_is_fp8(g->b_fmt))
        return err_set(e, ST_USAGE, "block_gemm: operands %s x %s (expected e4m3 or e5m2)", dtype_name(g->a_fmt),
                       dtype_name(g->b_fmt));
    if (!g->a || !g->b || !g->a_scale_inv || !g->b_scale_inv)
        return err_set(e, ST_USAGE, "block_gemm: missing codes or scales");
    if (g->acc != BLOCK_ACC_FP32 && g->acc != BLOCK_ACC_TC14)
        return err_set(e, ST_USAGE, "block_gemm: unknown accumulation mode %d", (int)g->acc);
    const uint64_t nkb = (g->k + BLOCK_GEMM_K - 1) / BLOCK_GEMM_K;
    for (uint64_t i = 0; i < g->m; i++)
        for (uint64_t j = 0; j < g->n; j++) {
            float acc = 0.0f;
            for (uint64_t kb = 0; kb < nkb; kb++) {
                uint64_t k0 = kb * BLOCK_GEMM_K, k1 = k0 + BLOCK_GEMM_K < g->k ? k0 + BLOCK_GEMM_K : g->k;
                float part = 0.0f;
                for (uint64_t k = k0; k < k1; k++) {
                    float p = fp8_decode(g->a_fmt, g->a[i * g->k + k]) * fp8_decode(g->b_fmt, g->b[j * g->k + k]);
                    if (g->acc == BLOCK_ACC_FP32) {
                        part += p;
                    } else { /* the exact sum, then truncated to 14 significant bits */
                        part = block_acc_tc14_add(part, p);
                    }
                }
                float s = g->a_scale_inv[i * nkb + kb] * g->b_scale_inv[(j / BLOCK_GEMM_K) * nkb + kb];
                acc += part * s;
            }
            d[i * g->n + j] = acc;
        }
    return ST_OK;
}
