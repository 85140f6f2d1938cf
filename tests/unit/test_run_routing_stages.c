/* tests/unit/test_run_routing_stages.c — the routing report of a run over pipeline stages
 * (exec/run/run_ranks_ep.c, run_routing_stages): rank 0 builds the whole model's last-step counts from every
 * rank's row (its stage's MoE layers filled, DP-summed already) and sums the auxiliary loss of its own
 * pipeline (each stage's DP rank 0), stage by stage. */
#include <math.h>

#include "exec/run/run.h"
#include "test.h"

/* 4 ranks, pp 2 x dp 2: ranks 0, 1 on stage 0 (MoE layer 0), ranks 2, 3 on stage 1 (MoE layers 1 and 2);
 * 2 experts. Every rank's row is 3 layers x 2 experts, its stage's rows filled. */
static const uint64_t hdr[4 * 3] = {0, 1, 0, 0, 1, 1, 1, 2, 0, 1, 2, 1}; /* moe_first, moe_layers, DP rank */
static const uint64_t counts[4 * 6] = {
    40, 24, 0,  0,  0,  0,  /* rank 0: layer 0 */
    40, 24, 0,  0,  0,  0,  /* rank 1: the same (the DP ranks' sum) */
    0,  0,  10, 54, 33, 31, /* rank 2: layers 1, 2 */
    0,  0,  10, 54, 33, 31, /* rank 3 */
};

static void test_whole_model(void)
{
    const double aux[4] = {0.25, 99.0, 0.5, 99.0}; /* DP rank 1's own micro-batches: not rank 0's pipeline */
    uint64_t out[6] = {7, 7, 7, 7, 7, 7};
    double a = -1.0;
    run_routing_stages(hdr, counts, aux, 4, 3, 2, out, &a);
    const uint64_t want[6] = {40, 24, 10, 54, 33, 31}; /* layer 0 from rank 0, layers 1-2 from rank 2 */
    for (int i = 0; i < 6; i++) CHECK_EQ_U64(out[i], want[i]);
    CHECK(a == 0.75); /* 0.25 + 0.5, exact in binary */
}

/* A NaN or an infinity from either stage's rank reaches the sum (nothing clamps or skips it). */
static void test_nonfinite_from_any_stage(void)
{
    uint64_t out[6];
    double a;
    const double nan0[4] = {NAN, 0.0, 0.5, 0.0}, inf2[4] = {0.25, 0.0, INFINITY, 0.0};
    const double ninf0[4] = {-INFINITY, 0.0, 0.5, 0.0}, nan2[4] = {0.25, 0.0, NAN, 0.0};
    run_routing_stages(hdr, counts, nan0, 4, 3, 2, out, &a);
    CHECK(isnan(a));
    run_routing_stages(hdr, counts, nan2, 4, 3, 2, out, &a);
    CHECK(isnan(a));
    run_routing_stages(hdr, counts, inf2, 4, 3, 2, out, &a);
    CHECK(isinf(a) && a > 0);
    run_routing_stages(hdr, counts, ninf0, 4, 3, 2, out, &a);
    CHECK(isinf(a) && a < 0);
}

int main(void)
{
    RUN(test_whole_model);
    RUN(test_nonfinite_from_any_stage);
    return test_summary();
}
