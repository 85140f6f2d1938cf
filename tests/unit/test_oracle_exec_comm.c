/* tests/unit/test_oracle_exec_comm.c — the single-rank communicator's refusals
 * (exec/comm/comm_single.c), every call, by hand: a dtype without a size (ST_USAGE), a count whose
 * bytes overflow 2^64 (2^62 FP32 elements x 4 B = 2^64: ST_OVERFLOW, naming the count), a missing
 * buffer, a root or peer that is not rank 0 of 1. A refused call is not counted; the calls that run
 * count their payload (elements x dtype bytes) and no bus bytes (one rank moves nothing). */
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "test.h"

static Backend *bk;
static Comm *c;

static void expect(Status st, const Err *e, Status want, const char *what, const char *part)
{
    CHECKF(st == want, "%s: status %d, expected %d (%s)", what, (int)st, (int)want, e->msg);
    CHECKF(strstr(e->msg, part) != NULL, "%s: message '%s' lacks '%s'", what, e->msg, part);
}

static void test_refusals(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    const uint64_t huge = 1ull << 62, cv_huge[1] = {1ull << 62}, cv3[1] = {3};
    const char *ovf = "collective: 4611686018427387904 elements overflow", *none = "collective: dtype none has no size";
    for (int k = 0; k < 2; k++) {
        Dtype dt = k ? DT_FP32 : DT_NONE;
        uint64_t n = k ? huge : 3;
        const uint64_t *cv = k ? cv_huge : cv3;
        Status want = k ? ST_OVERFLOW : ST_USAGE;
        const char *why = k ? ovf : none;
        Err e = {0};
        expect(c->all_reduce(c, CO_DP_GRAD_AR, bk, x, n, dt, COMM_SUM, &e), &e, want, "all_reduce", why);
        e = (Err){0};
        expect(c->all_gather(c, CO_DP_PARAM_AG, bk, x, y, n, dt, &e), &e, want, "all_gather", why);
        e = (Err){0};
        expect(c->reduce_scatter(c, CO_DP_GRAD_RS, bk, x, y, n, dt, COMM_SUM, &e), &e, want, "reduce_scatter", why);
        e = (Err){0};
        expect(c->broadcast(c, CO_CP_KV, bk, x, n, dt, 0, &e), &e, want, "broadcast", why);
        e = (Err){0};
        expect(comm_reduce_scatter_v(c, CO_DP_GRAD_RS, bk, x, cv, dt, COMM_SUM, &e), &e, want, "reduce_scatter_v", why);
        e = (Err){0};
        expect(comm_all_gather_v(c, CO_DP_PARAM_AG, bk, x, cv, dt, &e), &e, want, "all_gather_v", why);
    }
    Err e = {0};
    expect(c->broadcast(c, CO_CP_KV, bk, x, 3, DT_FP32, 1, &e), &e, ST_USAGE, "broadcast", "root 1 is not a rank of 1");
    expect(c->broadcast(c, CO_CP_KV, bk, x, 3, DT_FP32, -1, &e), &e, ST_USAGE, "broadcast",
           "root -1 is not a rank of 1");
    expect(c->broadcast(c, CO_CP_KV, bk, NULL, 3, DT_FP32, 0, &e), &e, ST_USAGE, "broadcast", "broadcast: no buffer");
    expect(comm_all_gather_v(c, CO_DP_PARAM_AG, bk, NULL, cv3, DT_FP32, &e), &e, ST_USAGE, "all_gather_v",
           "no buffer or counts");
    expect(comm_reduce_scatter_v(c, CO_DP_GRAD_RS, bk, x, NULL, DT_FP32, COMM_SUM, &e), &e, ST_USAGE,
           "reduce_scatter_v", "no buffer or counts");
    expect(c->send(c, CO_PP_P2P, bk, x, 1, DT_FP32, 0, &e), &e, ST_USAGE, "send",
           "send: peer 0 is not another rank (one rank)");
    expect(c->recv(c, CO_PP_P2P, bk, x, 1, DT_FP32, 0, &e), &e, ST_USAGE, "recv",
           "recv: peer 0 is not another rank (one rank)");
    CHECK_EQ_U64(c->total.calls, 0);
    CHECK_EQ_U64(c->total.payload_bytes, 0);

    /* what runs: a broadcast of 3 BF16 (6 B) from rank 0 leaves the buffer as it was; an empty one without a
     * buffer is fine (0 B); uneven calls of 3 FP32 (12 B) — one rank's segment is the whole buffer */
    uint16_t h[3] = {0x3F80, 0x4000, 0x4040};
    CHECKF(c->broadcast(c, CO_CP_KV, bk, h, 3, DT_BF16, 0, &e) == ST_OK, "%s", e.msg);
    CHECK(h[0] == 0x3F80 && h[1] == 0x4000 && h[2] == 0x4040);
    CHECKF(c->broadcast(c, CO_CP_KV, bk, NULL, 0, DT_BF16, 0, &e) == ST_OK, "%s", e.msg);
    CHECKF(comm_reduce_scatter_v(c, CO_DP_GRAD_RS, bk, x, cv3, DT_FP32, COMM_SUM, &e) == ST_OK, "%s", e.msg);
    CHECKF(comm_all_gather_v(c, CO_DP_PARAM_AG, bk, x, cv3, DT_FP32, &e) == ST_OK, "%s", e.msg);
    CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3 && x[3] == 4);
    CHECK_EQ_U64(c->stats[CO_CP_KV].calls, 2);
    CHECK_EQ_U64(c->stats[CO_CP_KV].payload_bytes, 6);
    CHECK_EQ_U64(c->stats[CO_DP_GRAD_RS].payload_bytes, 12);
    CHECK_EQ_U64(c->stats[CO_DP_PARAM_AG].payload_bytes, 12);
    CHECK_EQ_U64(c->total.calls, 4);
    CHECK_EQ_U64(c->total.payload_bytes, 30); /* 6 + 0 + 12 + 12 */
    CHECK(c->total.bus_bytes == 0.0);
}

/* The single rank's all-to-all: its own segment copied (3 FP32 = 12 B payload, 0 bus bytes: nothing leaves),
 * counts that disagree refused as bad data naming the pair, and the wrapper's refusal for a communicator
 * without the call (NCCL today). */
static void test_all_to_all_v(void)
{
    float x[3] = {1.5f, 2.5f, 3.5f}, y[4] = {0};
    const uint64_t three[1] = {3}, four[1] = {4};
    Err e = {0};
    CommStats before = c->stats[CO_EP_DISPATCH_FWD];
    CHECKF(comm_all_to_all_v(c, CO_EP_DISPATCH_FWD, bk, x, three, y, three, DT_FP32, &e) == ST_OK, "%s", e.msg);
    CHECK(y[0] == 1.5f && y[1] == 2.5f && y[2] == 3.5f && y[3] == 0.0f);
    CHECK_EQ_U64(c->stats[CO_EP_DISPATCH_FWD].calls - before.calls, 1);
    CHECK_EQ_U64(c->stats[CO_EP_DISPATCH_FWD].payload_bytes - before.payload_bytes, 12);
    CHECK(c->stats[CO_EP_DISPATCH_FWD].bus_bytes == before.bus_bytes);
    expect(comm_all_to_all_v(c, CO_EP_DISPATCH_FWD, bk, x, three, y, four, DT_FP32, &e), &e, ST_DATA, "all_to_all_v",
           "rank 0 expects 4 elements from rank 0, which sends 3");
    Comm none = *c;
    none.all_to_all_v = NULL, none.name = "nccl";
    expect(comm_all_to_all_v(&none, CO_EP_DISPATCH_FWD, bk, x, three, y, three, DT_FP32, &e), &e, ST_UNAVAILABLE,
           "all_to_all_v", "communicator nccl: no all-to-all (expert parallelism) yet");
}

int main(void)
{
    Err e = {0};
    if (backend_cpu_create(&bk, &e) || comm_single_create(&c, &e)) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return 1;
    }
    RUN(test_refusals);
    RUN(test_all_to_all_v);
    c->destroy(c);
    bk->destroy(bk);
    return test_summary();
}
