/* tests/unit/test_plan_sweep.c — the layout sweep: counts, ranking, top-k. */
#include <stdlib.h>

#include "planner/sweep.h"
#include "support/fixtures.h"
#include "test.h"

static Catalog *cat;

static uint64_t calls;
static void count(uint64_t done, uint64_t total, void *ctx)
{
    (void)done, (void)total, (void)ctx;
    calls++;
}

static void test_sweep_counts_and_ranking(void)
{
    const Recipe *recs[] = {catalog_recipe(cat, "megatron-bf16"), catalog_recipe(cat, "fp8lm"),
                            catalog_recipe(cat, "mxfp8")};
    SweepSpec s = {.recipes = recs, .nrecipes = 3, .gpus = 64};
    plan_input_defaults(&s.base);
    s.base.model = catalog_model(cat, "gpt-13b"), s.base.gpu = catalog_gpu(cat, "h100-sxm");
    Plan *top = calloc(50, sizeof *top);
    int n = 0;
    SweepStats st;
    Err e;
    CHECK(sweep_run(&s, top, 50, &n, &st, count, NULL, &e) == ST_OK);
    CHECK_EQ_U64(st.evaluated, sweep_size(&s));
    uint64_t rej = 0;
    for (int r = 0; r < REJECT_COUNT_; r++) rej += st.rejected[r];
    CHECK_EQ_U64(st.valid + rej, st.evaluated);
    CHECK(st.rejected[REJECT_HW] > 0); /* mxfp8 needs Blackwell */
    CHECK(st.rejected[REJECT_LAYERS_PP] > 0);
    CHECK(st.valid > st.oom);
    CHECK(calls > 0);
    CHECK_EQ_INT(n, 50);
    for (int i = 0; i < n; i++) {
        CHECK(top[i].fits);
        CHECK_EQ_U64(top[i].world, 64);
        CHECK_EQ_U64(top[i].in.gbs, top[0].in.gbs); /* one global batch for every layout */
        if (i) CHECK(top[i - 1].tokens_per_s >= top[i].tokens_per_s);
        CHECK(top[i].in.recipe != recs[2]);
    }
    /* k larger than what fits keeps everything that fits */
    Plan *all = calloc(st.valid - st.oom + 5, sizeof *all);
    int m = 0;
    SweepStats st2;
    CHECK(sweep_run(&s, all, (int)(st.valid - st.oom + 5), &m, &st2, NULL, NULL, &e) == ST_OK);
    CHECK_EQ_U64((uint64_t)m, st.valid - st.oom);
    CHECK(all[0].tokens_per_s == top[0].tokens_per_s);
    free(all);
    free(top);
    s.gpus = 0;
    CHECK(sweep_run(&s, NULL, 0, &n, &st, NULL, NULL, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "--gpus 0");
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_sweep_counts_and_ranking);
    free(cat);
    return test_summary();
}
