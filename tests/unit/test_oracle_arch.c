/* tests/unit/test_oracle_arch.c — the time model's per-architecture constants
 * against the published figures planner/arch.c cites.
 *
 * An independent oracle: each expected value is computed here from the
 * source's own numbers (the ratio of two published throughputs, a latency
 * from NCCL's tuning table), not copied from arch.c. The fitted asymptotes
 * and saturation lengths are fits, checked through the step-time oracle
 * (test_oracle_time.c) instead.
 *
 * Head-dimension factors (forward throughput at head dim 64 or 256 relative to
 * 128; Shah et al. 2024, FlashAttention-3, arXiv 2407.08608, H100 SXM5 BF16
 * forward figures): FlashAttention-2 324 / 370 and 298 / 370, cuDNN 413 / 595
 * and 509 / 595, FlashAttention-3 497 / 648 and 642 / 648. arch.c keeps them
 * to three decimals (two for 642 / 648 = 0.9907 -> 0.99): within 1.5e-3. */
#include <math.h>
#include <string.h>

#include "planner/arch.h"
#include "test.h"

#define ROUNDED 1.5e-3

static void check_hd(const AttnCurve *c, double r64, double r256, const char *what)
{
    CHECKF(fabs(c->hd64 - r64) <= ROUNDED, "%s: head dim 64 factor %g, published ratio %.4f", what, c->hd64, r64);
    CHECKF(fabs(c->hd256 - r256) <= ROUNDED, "%s: head dim 256 factor %g, published ratio %.4f", what, c->hd256, r256);
}

/* Hopper: each kernel its own figures. Blackwell: FlashAttention-2 runs its SM 8.0 code (the FA2 factors; no
 * FlashAttention-3, whose curve falls back to FA2's) and cuDNN at the H100 cuDNN fractions. Ada / Ampere (and a
 * host): the FA2 factors for all three (cuDNN and FA3 fall back to FA2 there). */
static void test_head_dim_factors(void)
{
    const double fa2_64 = 324.0 / 370, fa2_256 = 298.0 / 370, cu_64 = 413.0 / 595, cu_256 = 509.0 / 595;
    const double fa3_64 = 497.0 / 648, fa3_256 = 642.0 / 648;
    const ArchRow *h = arch_row(90), *b = arch_row(100), *a = arch_row(80), *ada = arch_row(89);
    check_hd(&h->flash2, fa2_64, fa2_256, "H100 FA2");
    check_hd(&h->cudnn, cu_64, cu_256, "H100 cuDNN");
    check_hd(&h->flash3, fa3_64, fa3_256, "H100 FA3");
    check_hd(&b->flash2, fa2_64, fa2_256, "Blackwell FA2");
    check_hd(&b->flash3, fa2_64, fa2_256, "Blackwell FA3 (FA2 fallback)");
    check_hd(&b->cudnn, cu_64, cu_256, "Blackwell cuDNN");
    const ArchRow *older[3] = {a, ada, &arch_host};
    for (int i = 0; i < 3; i++) {
        check_hd(&older[i]->flash2, fa2_64, fa2_256, "Ampere/Ada/host FA2");
        check_hd(&older[i]->flash3, fa2_64, fa2_256, "Ampere/Ada/host FA3");
        check_hd(&older[i]->cudnn, fa2_64, fa2_256, "Ampere/Ada/host cuDNN");
    }
    CHECK(h->has_flash3 && !b->has_flash3 && !a->has_flash3);
    /* where FA3 does not run, the row's FA3 slot holds the FA2 curve it falls back to, whole (arch_attn picks
     * flash2 there; a row whose has_flash3 were turned on would otherwise time a curve nobody fitted) */
    const ArchRow *no3[4] = {b, a, ada, &arch_host};
    for (int i = 0; i < 4; i++)
        CHECKF(!memcmp(&no3[i]->flash3, &no3[i]->flash2, sizeof(AttnCurve)), "row %d: FA3 slot differs from FA2", i);
    /* before Hopper (and on a host) cuDNN's fused attention falls back to FA2 as well: the cuDNN slot holds it */
    for (int i = 0; i < 3; i++)
        CHECKF(!memcmp(&older[i]->cudnn, &older[i]->flash2, sizeof(AttnCurve)), "row %d: cuDNN slot differs from FA2",
               i);
    /* A100 (Dao 2023, section 4.1): forward up to 73 %, backward up to 63 % of the peak: backward at 63 / 73 =
     * 0.863 of the forward (two decimals: 0.86) */
    CHECK_NEAR(a->flash2.bwd, 63.0 / 73, 5e-3);
    CHECK_NEAR(a->flash2.e_fwd, 0.73, 0.031); /* "up to 73 %": the fit's asymptote 0.70 */
}

/* Between the published head dims the factor follows log2(head dim): at 128 it is 1; at 2^6.5 = 90.5 (x = -0.5)
 * it is 1 - 0.5 (1 - hd64); at 2^7.5 = 181 (x = +0.5) 1 + 0.5 (hd256 - 1); at or beyond 64 and 256 the published
 * factors themselves. H100 cuDNN: hd64 = 0.694, hd256 = 0.855 -> head dim 90: log2 90 = 6.4919, x = -0.5081,
 * 1 - 0.5081 x 0.306 = 0.84451; head dim 181: log2 181 = 7.4998, x = 0.4998, 1 - 0.4998 x 0.145 = 0.92752. */
static void test_head_dim_interpolation(void)
{
    const AttnCurve *c = &arch_row(90)->cudnn;
    CHECK_NEAR(arch_hd_factor(c, 128), 1.0, 1e-15);
    CHECK(arch_hd_factor(c, 128) == 1.0); /* 2^7: x = 7 - 7 = 0 exactly (the exponent, no log2 call) */
    CHECK_NEAR(arch_hd_factor(c, 32), c->hd64, 1e-15);
    CHECK_NEAR(arch_hd_factor(c, 64), c->hd64, 1e-15);
    CHECK_NEAR(arch_hd_factor(c, 256), c->hd256, 1e-15);
    CHECK_NEAR(arch_hd_factor(c, 512), c->hd256, 1e-15);
    CHECK_NEAR(arch_hd_factor(c, 90), 1.0 - (7.0 - log2(90.0)) * (1.0 - 0.694), 2e-3);
    CHECK_NEAR(arch_hd_factor(c, 90), 0.84451, 1e-4);
    CHECK_NEAR(arch_hd_factor(c, 181), 0.92752, 1e-4);
}

/* NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc): base latency of a ring call LL 3.6 us, Simple 8.4 us;
 * per ring step NVLink 0.47 / 3.4 us, PCIe 1.0 / 5.7 us, network 2.7 / 9.6 us. */
static void test_nccl_latencies(void)
{
    const double us = 1e-6;
    CHECK_NEAR(nccl_lat.base[0], 3.6 * us, 1e-15);
    CHECK_NEAR(nccl_lat.base[1], 8.4 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_NVLINK][0], 0.47 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_NVLINK][1], 3.4 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_PCIE][0], 1.0 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_PCIE][1], 5.7 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_COUNT_][0], 2.7 * us, 1e-15);
    CHECK_NEAR(nccl_lat.hop[LINK_COUNT_][1], 9.6 * us, 1e-15);
    /* row-wise-scaled FP8 GEMMs: "most shapes are within 90-100 % of tensor-wise" -> the lower end, 0.90 */
    CHECK_NEAR(arch_rowwise_gemm_rel, 0.90, 1e-15);
}

int main(void)
{
    RUN(test_head_dim_factors);
    RUN(test_head_dim_interpolation);
    RUN(test_nccl_latencies);
    return test_summary();
}
