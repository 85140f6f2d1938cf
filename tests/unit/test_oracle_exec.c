/* tests/unit/test_oracle_exec.c — small executor pieces against values worked
 * out by hand, through the public API: the single-rank communicator's
 * accounting (what `fp8plan run` lists beside the plan's collectives). */
#include <string.h>

#include "exec/backend.h"
#include "test.h"

/* One rank: an all-reduce is the identity, gathers and scatters are copies; every call counts its
 * payload (elements x dtype bytes) and no bus bytes (the ring factors 2(n-1)/n and (n-1)/n are 0).
 *   all_reduce of 10 FP32: 40 B; all_gather of 3 BF16 out of place: 6 B; reduce_scatter of 4 E4M3: 4 B
 *   -> 3 calls, 50 B payload, 0 bus bytes. */
static void test_single_rank_comm(void)
{
    Backend *bk = NULL;
    Comm *c = NULL;
    Err e = {0};
    CHECK(backend_cpu_create(&bk, &e) == ST_OK && comm_single_create(&c, &e) == ST_OK);
    if (!bk || !c) return;
    CHECK(c->rank == 0 && c->size == 1 && !strcmp(c->name, "single"));
    float *buf = NULL;
    uint16_t *src = NULL, *dst = NULL;
    uint8_t *q = NULL, *r = NULL;
    CHECK(!bk->alloc(bk, 40, (void **)&buf, &e) && !bk->alloc(bk, 6, (void **)&src, &e) &&
          !bk->alloc(bk, 6, (void **)&dst, &e) && !bk->alloc(bk, 4, (void **)&q, &e) &&
          !bk->alloc(bk, 4, (void **)&r, &e));
    if (!buf || !src || !dst || !q || !r) return;
    const float ten[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const uint16_t three[3] = {0x3F80, 0x4000, 0x4040}; /* BF16 1, 2, 3 */
    const uint8_t four[4] = {0x38, 0x40, 0x44, 0x48};   /* E4M3 1, 2, 3, 4 */
    CHECK(!bk->copy_to_device(bk, buf, ten, sizeof ten, &e) && !bk->copy_to_device(bk, src, three, 6, &e) &&
          !bk->copy_to_device(bk, q, four, 4, &e) && !bk->memset0(bk, dst, 6, &e) && !bk->memset0(bk, r, 4, &e));
    CHECKF(c->all_reduce(c, bk, buf, 10, DT_FP32, COMM_SUM, &e) == ST_OK, "%s", e.msg);
    CHECKF(c->all_gather(c, bk, src, dst, 3, DT_BF16, &e) == ST_OK, "%s", e.msg);
    CHECKF(c->reduce_scatter(c, bk, q, r, 4, DT_E4M3, COMM_MAX, &e) == ST_OK, "%s", e.msg);
    float back[10];
    uint16_t g[3];
    uint8_t s[4];
    CHECK(!bk->copy_to_host(bk, back, buf, sizeof back, &e) && !bk->copy_to_host(bk, g, dst, 6, &e) &&
          !bk->copy_to_host(bk, s, r, 4, &e));
    CHECK(!memcmp(back, ten, sizeof ten)); /* the sum over one rank is the value itself */
    CHECK(!memcmp(g, three, sizeof three));
    CHECK(!memcmp(s, four, sizeof four));
    CHECK_EQ_U64(c->stats.calls, 3);
    CHECK_EQ_U64(c->stats.payload_bytes, 50);
    CHECK(c->stats.bus_bytes == 0.0);
    /* a dtype without a size is refused by every collective, and is not counted */
    CHECK(c->all_reduce(c, bk, buf, 1, DT_NONE, COMM_SUM, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "has no size");
    CHECK(c->all_gather(c, bk, src, dst, 1, DT_NONE, &e) == ST_USAGE);
    CHECK(c->reduce_scatter(c, bk, q, r, 1, DT_NONE, COMM_SUM, &e) == ST_USAGE);
    CHECK(c->all_reduce(c, bk, NULL, 4, DT_FP32, COMM_SUM, &e) == ST_USAGE); /* no buffer */
    CHECK_EQ_U64(c->stats.calls, 3);
    bk->free(bk, buf), bk->free(bk, src), bk->free(bk, dst), bk->free(bk, q), bk->free(bk, r);
    c->destroy(c);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_single_rank_comm);
    return test_summary();
}
