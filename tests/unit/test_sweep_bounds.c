/* tests/unit/test_sweep_bounds.c — the sweep's enumeration at the limits of its numbers: every divisor
 * of --gpus is a pipeline size (none dropped at 64), values near 2^32 neither wrap (SIGFPE) nor take
 * long, and --gpus past the stated maximum is refused. Expected counts are worked from the prime
 * factorizations by hand. */
#include <stdlib.h>
#include <time.h>

#include "planner/sweep.h"
#include "support/fixtures.h"
#include "test.h"

static Catalog *cat;
static const Recipe *recs[1];

/* One recipe, TP = CP = VPP = micro-batch = 1, a one-layer model (no uneven pipeline split exists: a
 * stage needs a layer): the space is PP (a divisor of N) x RECOMPUTE_COUNT_ recompute choices x 2
 * sharding choices, so sweep_size = R d(N) with R = 2 x RECOMPUTE_COUNT_. */
static ModelSpec one_layer;
enum { R = 2 * RECOMPUTE_COUNT_ };

static SweepSpec narrow(uint32_t gpus)
{
    SweepSpec s = {.recipes = recs, .nrecipes = 1, .gpus = gpus, .max_tp = 1, .max_vpp = 1, .max_cp = 1, .max_mbs = 1};
    plan_input_defaults(&s.base);
    s.base.model = &one_layer, s.base.gpu = catalog_gpu(cat, "h100-sxm");
    return s;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_every_divisor_is_a_pipeline_size(void)
{
    SweepSpec s = narrow(720720); /* 2^4 3^2 5 7 11 13: d = 5*3*2*2*2*2 = 240 (the old list stopped at 64) */
    CHECK_EQ_U64(sweep_size(&s), R * 240);
    s = narrow(64); /* 2^6: d = 7 */
    CHECK_EQ_U64(sweep_size(&s), R * 7);
    s = narrow(1);
    CHECK_EQ_U64(sweep_size(&s), R);
    s = narrow(97); /* prime: 1 and 97 */
    CHECK_EQ_U64(sweep_size(&s), 2 * R);
}

static void test_numbers_near_2_32_are_quick(void)
{
    double t0 = now();
    SweepSpec s = narrow(4294967295u); /* 3 5 17 257 65537: d = 2^5 = 32 (the old loop wrapped to 0: SIGFPE) */
    CHECK_EQ_U64(sweep_size(&s), R * 32);
    s = narrow(4294967291u); /* the largest 32-bit prime: d = 2 */
    CHECK_EQ_U64(sweep_size(&s), 2 * R);
    s = narrow(3491888400u); /* 2^4 3^3 5^2 7 11 13 17 19: d = 5*4*3*2^5 = 1,920, the most of any 32-bit number */
    CHECK_EQ_U64(sweep_size(&s), R * 1920);
    s = narrow(2147483648u); /* 2^31: d = 32 */
    CHECK_EQ_U64(sweep_size(&s), R * 32);
    /* the default TP range (powers of two up to a node) at 2^31: TP 1, 2, 4, 8, and for each PP a divisor
     * of 2^31/TP (32, 31, 30, 29 of them) */
    s.max_tp = 0;
    CHECK_EQ_U64(sweep_size(&s), R * (32 + 31 + 30 + 29));
    double dt = now() - t0;
    CHECKF(dt < 1.0, "six enumerations near 2^32 took %.3f s", dt); /* trial division: ~65,536 steps each */
}

static void test_gpus_past_the_maximum_are_refused(void)
{
    SweepSpec s = narrow(SWEEP_MAX_GPUS + 1);
    SweepStats st;
    int n = 0;
    Err e;
    CHECK(sweep_run(&s, NULL, 0, &n, &st, NULL, NULL, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "at most 1048576 GPUs");
    CHECK_EQ_U64(st.evaluated, 0);
    s = narrow(SWEEP_MAX_GPUS); /* 2^20 itself is planned: 21 pipeline sizes */
    CHECK(sweep_run(&s, NULL, 0, &n, &st, NULL, NULL, &e) == ST_OK);
    CHECK_EQ_U64(st.evaluated, R * 21);
}

int main(void)
{
    cat = fx_catalog();
    recs[0] = catalog_recipe(cat, "megatron-bf16");
    one_layer = *catalog_model(cat, "gpt-13b");
    one_layer.layers = 1;
    RUN(test_every_divisor_is_a_pipeline_size);
    RUN(test_numbers_near_2_32_are_quick);
    RUN(test_gpus_past_the_maximum_are_refused);
    free(cat);
    return test_summary();
}
