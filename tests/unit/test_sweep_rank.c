/* tests/unit/test_sweep_rank.c — the lists a sweep keeps (planner/sweep_rank.h), step by step on
 * hand-made plans: ranking, eviction when full, near-duplicates folded into the faster plan with their
 * count carried, the nearest-to-fitting list ordered by bytes over the limit; the slots are put in rank
 * order at the end. */
#include <stdlib.h>

#include "planner/sweep_rank.h"
#include "test.h"

static Recipe r1, r2, r3;

static Plan mk(const Recipe *r, uint32_t tp, uint32_t dp, double tps)
{
    Plan p;
    memset(&p, 0, sizeof p);
    p.in.recipe = r, p.in.tp = tp, p.in.pp = 1, p.in.cp = 1, p.in.dp = dp, p.in.mbs = 1;
    p.tokens_per_s = tps;
    p.fits = 1;
    return p;
}

static void test_best_with_folding(void)
{
    Plan v[3];
    uint32_t var[3] = {0};
    int order[3];
    SweepList l = {v, var, order, 3, 0};
    Plan a = mk(&r1, 1, 8, 100), b = mk(&r1, 2, 4, 90), c = mk(&r1, 1, 8, 99), d = mk(&r2, 1, 8, 120);
    Plan e = mk(&r2, 1, 8, 121), f = mk(&r3, 1, 8, 95), g = mk(&r3, 1, 8, 50);
    CHECK_EQ_INT(sweep_keep_best(&l, &a, 1), 0);
    CHECK_EQ_INT(sweep_keep_best(&l, &b, 1), 0);
    CHECK_EQ_INT(sweep_keep_best(&l, &c, 1), 1); /* A's layout, 1 % slower (within 2 %): A's variant */
    CHECK_EQ_INT(sweep_keep_best(&l, &d, 1), 0); /* list D, A, B */
    CHECK_EQ_INT(sweep_keep_best(&l, &e, 1), 1); /* D's layout, faster: E takes D's place and its count + 1 */
    CHECK_EQ_INT(sweep_keep_best(&l, &f, 1), 0); /* full: F (95) beats B (90), which falls off */
    CHECK_EQ_INT(sweep_keep_best(&l, &g, 1), 0); /* F's layout but 47 % slower, and slower than every kept */
    CHECK_EQ_INT(l.n, 3);
    sweep_list_finish(&l);
    CHECK(v[0].tokens_per_s == 121 && v[0].in.recipe == &r2);
    CHECK(v[1].tokens_per_s == 100 && v[1].in.recipe == &r1);
    CHECK(v[2].tokens_per_s == 95 && v[2].in.recipe == &r3);
    CHECK_EQ_INT(var[0], 1); /* D */
    CHECK_EQ_INT(var[1], 1); /* C */
    CHECK_EQ_INT(var[2], 0);
    /* without folding: the three fastest, duplicates and all */
    SweepList m = {v, var, order, 3, 0};
    const Plan *all[] = {&a, &b, &c, &d, &e, &f, &g};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) CHECK_EQ_INT(sweep_keep_best(&m, all[i], 0), 0);
    sweep_list_finish(&m);
    CHECK(v[0].tokens_per_s == 121 && v[1].tokens_per_s == 120 && v[2].tokens_per_s == 100);
}

static void test_many_slots_end_in_rank_order(void)
{
    enum { K = 50, N = 500 };
    Plan *v = calloc(K, sizeof *v);
    int order[K];
    SweepList l = {v, NULL, order, K, 0};
    for (int i = 0; i < N; i++) { /* tokens/s in a scrambled order: (i * 7919) mod 500 + 1, all distinct */
        Plan p = mk(&r1, 1, (uint32_t)i + 1, (double)((i * 7919) % N + 1));
        sweep_keep_best(&l, &p, 0);
    }
    sweep_list_finish(&l);
    CHECK_EQ_INT(l.n, K);
    for (int i = 0; i < K; i++) CHECKF(v[i].tokens_per_s == N - i, "rank %d holds %g", i, v[i].tokens_per_s);
    free(v);
}

static void test_nearest(void)
{
    Plan v[2];
    int order[2];
    SweepList l = {v, NULL, order, 2, 0};
    Plan x = mk(&r1, 1, 8, 10), y = mk(&r1, 2, 4, 10), z = mk(&r2, 1, 8, 10), w = mk(&r1, 2, 4, 20);
    x.fits = y.fits = z.fits = w.fits = 0;
    x.limit_bytes = y.limit_bytes = z.limit_bytes = w.limit_bytes = 1000;
    x.total_bytes = 1010, y.total_bytes = 1005, z.total_bytes = 1020, w.total_bytes = 1005;
    sweep_keep_nearest(&l, &x);
    sweep_keep_nearest(&l, &y);
    sweep_keep_nearest(&l, &z); /* 20 over: after both, falls off */
    sweep_keep_nearest(&l, &w); /* Y's layout and bytes, faster: replaces Y instead of taking a place */
    sweep_list_finish(&l);
    CHECK_EQ_INT(l.n, 2);
    CHECK(v[0].total_bytes == 1005 && v[0].tokens_per_s == 20); /* W */
    CHECK(v[1].total_bytes == 1010);                            /* X */
}

/* Whether the nearest list could keep a plan, from its bytes alone: k = 2, limit 1000. Empty and half
 * full: anything. Full with plans over by 5 and 10: over by 10 (a tie with the last: tokens/s decide,
 * so the rest of the plan is needed) or less, yes; 11 over, no. A list of no room keeps nothing. */
static void test_nearest_may_keep(void)
{
    Plan v[2];
    int order[2];
    SweepList l = {v, NULL, order, 2, 0};
    Plan a = mk(&r1, 1, 8, 10), b = mk(&r1, 2, 4, 10), q = mk(&r2, 1, 8, 10);
    a.fits = b.fits = q.fits = 0;
    a.limit_bytes = b.limit_bytes = q.limit_bytes = 1000;
    a.total_bytes = 1005, b.total_bytes = 1010, q.total_bytes = 5000;
    CHECK(sweep_nearest_may_keep(&l, &q)); /* empty */
    sweep_keep_nearest(&l, &a);
    CHECK(sweep_nearest_may_keep(&l, &q)); /* one of two places taken */
    sweep_keep_nearest(&l, &b);
    q.total_bytes = 1010;
    CHECK(sweep_nearest_may_keep(&l, &q)); /* 10 over = the last's 10 */
    q.total_bytes = 1009;
    CHECK(sweep_nearest_may_keep(&l, &q));
    q.total_bytes = 1011;
    CHECK(!sweep_nearest_may_keep(&l, &q)); /* 11 over > 10 */
    SweepList none = {v, NULL, order, 0, 0};
    q.total_bytes = 1001;
    CHECK(!sweep_nearest_may_keep(&none, &q));
}

/* Near-duplicates: within SWEEP_NEAR_PCT = 2 % of the faster plan's tokens/s. 100 and 98 differ by 2 =
 * 2 % of 100 (folded; 2 % of the slower, 1.96, would not fold them); 100 and 97.9 differ by 2.1 (kept
 * apart); the order of the two does not matter; another TP is never a near-duplicate. */
static void test_near_duplicate_bound(void)
{
    Plan a = mk(&r1, 2, 4, 100.0), b = mk(&r1, 2, 4, 98.0), c = mk(&r1, 2, 4, 97.9), d = mk(&r1, 4, 2, 100.0);
    CHECK(sweep_near_duplicate(&a, &b));
    CHECK(sweep_near_duplicate(&b, &a));
    CHECK(!sweep_near_duplicate(&a, &c));
    CHECK(!sweep_near_duplicate(&c, &a));
    CHECK(!sweep_near_duplicate(&a, &d));
}

int main(void)
{
    RUN(test_best_with_folding);
    RUN(test_many_slots_end_in_rank_order);
    RUN(test_nearest);
    RUN(test_nearest_may_keep);
    RUN(test_near_duplicate_bound);
    return test_summary();
}
