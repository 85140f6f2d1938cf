/* tests/unit/test_exec_nccl_rules.c — the NCCL communicator's host-side rules,
 * checked on the CPU (exec/comm/comm_nccl_rules.h): the GPU a rank drives,
 * the local rank from the launcher's environment, the padded layout of an
 * uneven collective, the order of stream operations of one call; and the
 * communicator helpers every library shares (comm_settle, comm_sendrecv's
 * pairwise order). Expected values worked by hand in the comments. */
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm.h"
#include "exec/comm/comm_nccl_rules.h"
#include "test.h"

/* local mod devices: 5 mod 4 = 1, 7 mod 8 = 7, 8 mod 8 = 0, any mod 1 = 0; no devices or no rank: -1. */
static void test_device_of_rank(void)
{
    CHECK_EQ_INT(comm_device_of_rank(0, 1), 0);
    CHECK_EQ_INT(comm_device_of_rank(3, 1), 0);
    CHECK_EQ_INT(comm_device_of_rank(5, 4), 1);
    CHECK_EQ_INT(comm_device_of_rank(7, 8), 7);
    CHECK_EQ_INT(comm_device_of_rank(8, 8), 0);
    CHECK_EQ_INT(comm_device_of_rank(-1, 4), -1);
    CHECK_EQ_INT(comm_device_of_rank(0, 0), -1);
}

static void clear_env(void)
{
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("MPI_LOCALRANKID");
    unsetenv("SLURM_LOCALID");
}

/* Open MPI's variable first, then MPICH's, then Slurm's; a value that is not a number in [0, 2^20) is -2. */
static void test_local_rank_env(void)
{
    const char *saved = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    char keep[32] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    clear_env();
    CHECK_EQ_INT(comm_local_rank_env(), -1);
    setenv("SLURM_LOCALID", "1", 1);
    CHECK_EQ_INT(comm_local_rank_env(), 1);
    setenv("MPI_LOCALRANKID", "2", 1);
    CHECK_EQ_INT(comm_local_rank_env(), 2); /* MPICH's before Slurm's */
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
    CHECK_EQ_INT(comm_local_rank_env(), 3); /* Open MPI's before both */
    const char *bad[] = {"", "x", "3x", "-1", " 3", "1048576"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("OMPI_COMM_WORLD_LOCAL_RANK", bad[i], 1);
        CHECKF(comm_local_rank_env() == -2, "'%s' gave %d", bad[i], comm_local_rank_env());
    }
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1048575", 1); /* 2^20 - 1: the largest taken */
    CHECK_EQ_INT(comm_local_rank_env(), 1048575);
    clear_env();
    if (saved) setenv("OMPI_COMM_WORLD_LOCAL_RANK", keep, 1);
}

/* counts {0, 2, 4, 6}: segments at 0, 0, 2, 6; the largest 6; total 12 (the payload: FP32 48 B, bus bytes
 * 48 · 3/4 = 36 as the plan counts them); padded 4 · 6 = 24 (NCCL moves 96 B of FP32). tiny-odd DP 4's
 * shards of E = 8778: S = ceil(8778/4) = 2195 for ranks 0..2 and 8778 − 3·2195 = 2193 for rank 3: total 8778,
 * padded 4 · 2195 = 8780 (the ZeRO-1 shard tensors' size, multirank STATUS). */
static void test_pad(void)
{
    Err e;
    uint64_t off[5] = {0};
    CommPad p;
    const uint64_t c4[4] = {0, 2, 4, 6};
    CHECK(!comm_pad(c4, 4, off, &p, &e));
    CHECK_EQ_U64(off[0], 0);
    CHECK_EQ_U64(off[1], 0);
    CHECK_EQ_U64(off[2], 2);
    CHECK_EQ_U64(off[3], 6);
    CHECK_EQ_U64(p.largest, 6);
    CHECK_EQ_U64(p.total, 12);
    CHECK_EQ_U64(p.padded, 24);
    const uint64_t odd[4] = {2195, 2195, 2195, 2193};
    CHECK(!comm_pad(odd, 4, NULL, &p, &e));
    CHECK_EQ_U64(p.total, 8778);
    CHECK_EQ_U64(p.largest, 2195);
    CHECK_EQ_U64(p.padded, 8780);
    const uint64_t one[1] = {7};
    CHECK(!comm_pad(one, 1, off, &p, &e));
    CHECK_EQ_U64(p.padded, 7);
    CHECK_EQ_U64(off[0], 0);
    const uint64_t empty[3] = {0, 0, 0};
    CHECK(!comm_pad(empty, 3, off, &p, &e));
    CHECK_EQ_U64(p.padded, 0);
    /* refusals */
    const uint64_t sum_over[2] = {UINT64_MAX, 1};
    CHECK_EQ_INT(comm_pad(sum_over, 2, off, &p, &e), ST_OVERFLOW);
    const uint64_t pad_over[5] = {1ull << 62, 0, 0, 0, 0}; /* sum fits, 5 · 2^62 does not */
    CHECK_EQ_INT(comm_pad(pad_over, 5, off, &p, &e), ST_OVERFLOW);
    CHECK(strstr(e.msg, "5 ranks") != NULL);
    CHECK_EQ_INT(comm_pad(NULL, 2, off, &p, &e), ST_USAGE);
    CHECK_EQ_INT(comm_pad(c4, 0, off, &p, &e), ST_USAGE);
}

static int where(const NcclStep *s, int n, NcclStep x)
{
    for (int i = 0; i < n; i++)
        if (s[i] == x) return i;
    return -1;
}

/* ready recorded on the compute stream before NCCL waits for it; the start event after that wait (so the
 * call's time excludes the compute before it); the call between start and end; the compute stream waits
 * for the end before anything after; staging only around all of it. */
static void test_order(void)
{
    NcclStep s[NCS_MAX];
    const NcclStep plain[] = {NCS_READY, NCS_WAIT_READY, NCS_START, NCS_ISSUE, NCS_END, NCS_WAIT_DONE};
    int n = comm_nccl_order(0, 0, s);
    CHECK_EQ_INT(n, 6);
    for (int i = 0; i < 6 && i < n; i++) CHECK_EQ_INT(s[i], plain[i]);
    for (int in = 0; in < 2; in++)
        for (int out = 0; out < 2; out++) {
            n = comm_nccl_order(in, out, s);
            CHECK_EQ_INT(n, 6 + in + out);
            CHECK_EQ_INT(where(s, n, NCS_STAGE_IN), in ? 0 : -1);
            CHECK_EQ_INT(where(s, n, NCS_STAGE_OUT), out ? n - 1 : -1);
            const NcclStep chain[] = {NCS_READY, NCS_WAIT_READY, NCS_START, NCS_ISSUE, NCS_END, NCS_WAIT_DONE};
            for (int k = 1; k < 6; k++) CHECK(where(s, n, chain[k - 1]) < where(s, n, chain[k]));
        }
}

/* A fake communicator that records its point-to-point calls. */
static char trace[64];
static Status fake_send(Comm *c, CollectiveId id, Backend *bk, const void *b, uint64_t n, Dtype d, int peer, Err *e)
{
    (void)c, (void)id, (void)bk, (void)b, (void)n, (void)d, (void)e;
    size_t l = strlen(trace);
    snprintf(trace + l, sizeof trace - l, "s%d ", peer);
    return ST_OK;
}
static Status fake_recv(Comm *c, CollectiveId id, Backend *bk, void *b, uint64_t n, Dtype d, int peer, Err *e)
{
    (void)c, (void)id, (void)bk, (void)b, (void)n, (void)d, (void)e;
    size_t l = strlen(trace);
    snprintf(trace + l, sizeof trace - l, "r%d ", peer);
    return ST_OK;
}
static Status fake_pair(Comm *c, CollectiveId id, Backend *bk, const void *sb, uint64_t sn, int to, void *rb,
                        uint64_t rn, int from, Dtype d, Err *e)
{
    (void)c, (void)id, (void)bk, (void)sb, (void)sn, (void)rb, (void)rn, (void)d, (void)e;
    snprintf(trace, sizeof trace, "group s%d r%d", to, from);
    return ST_OK;
}
static int settled;
static Status fake_settle(Comm *c, Err *e)
{
    (void)c, (void)e;
    settled++;
    return ST_OK;
}

/* Without a grouped call the lower rank of a pair sends first and the higher receives first, so two
 * blocking calls never wait on each other; with one, it is used as it is. comm_settle calls settle. */
static void test_sendrecv_and_settle(void)
{
    Comm c;
    Err e;
    float x = 0, y = 0;
    memset(&c, 0, sizeof c);
    c.size = 2, c.send = fake_send, c.recv = fake_recv;
    c.rank = 0, trace[0] = 0;
    CHECK(!comm_sendrecv(&c, CO_PP_P2P, NULL, &x, 1, 1, &y, 1, 1, DT_FP32, &e));
    CHECK(!strcmp(trace, "s1 r1 "));
    c.rank = 1, trace[0] = 0;
    CHECK(!comm_sendrecv(&c, CO_PP_P2P, NULL, &x, 1, 0, &y, 1, 0, DT_FP32, &e));
    CHECK(!strcmp(trace, "r0 s0 "));
    c.sendrecv = fake_pair, trace[0] = 0;
    CHECK(!comm_sendrecv(&c, CO_PP_P2P, NULL, &x, 1, 0, &y, 1, 0, DT_FP32, &e));
    CHECK(!strcmp(trace, "group s0 r0"));
    settled = 0;
    CHECK(!comm_settle(&c, &e));
    CHECK_EQ_INT(settled, 0);
    c.settle = fake_settle;
    CHECK(!comm_settle(&c, &e));
    CHECK_EQ_INT(settled, 1);
    CHECK(!comm_settle(NULL, &e));
}

/* The all-to-all's bookkeeping, every communicator's (MPI's and NCCL's): counts {3, 0, 5, 2} BF16 elements
 * (2 bytes) are bytes {6, 0, 10, 4} at offsets {0, 6, 6, 16}, 20 in all; on rank 2, whose own segment is
 * 10 bytes, the bus factor is (20 − 10)/20 = 0.5 (what leaves the rank). The counts' exchange over 4 ranks:
 * 4 · 8 = 32 bytes at (4 − 1)/4 = 0.75, 24 bus bytes; over one rank 8 bytes at 0. Disagreement: the
 * first peer whose announced send differs from the expected count. */
static void test_a2a(void)
{
    Err e;
    uint64_t b[4], d[4], t = 0;
    const uint64_t c4[4] = {3, 0, 5, 2};
    CHECK(!comm_a2a_layout(c4, 4, 2, b, d, &t, &e));
    const uint64_t wb[4] = {6, 0, 10, 4}, wd[4] = {0, 6, 6, 16};
    for (int j = 0; j < 4; j++) {
        CHECK_EQ_U64(b[j], wb[j]);
        CHECK_EQ_U64(d[j], wd[j]);
    }
    CHECK_EQ_U64(t, 20);
    CHECK(comm_a2a_factor(20, 10) == 0.5);
    CHECK(comm_a2a_factor(20, 0) == 1.0);
    CHECK(comm_a2a_factor(0, 0) == 0.0);
    CHECK(comm_a2a_factor(7, 7) == 0.0); /* one rank: nothing leaves it */
    CHECK_EQ_U64(comm_a2a_counts_payload(4), 32);
    CHECK(comm_a2a_counts_factor(4) == 0.75);
    CHECK_EQ_U64(comm_a2a_counts_payload(1), 8);
    CHECK(comm_a2a_counts_factor(1) == 0.0);
    const uint64_t want[3] = {1, 2, 3}, same[3] = {1, 2, 3}, off1[3] = {1, 9, 3}, off02[3] = {0, 2, 4};
    CHECK_EQ_INT(comm_a2a_disagree(want, same, 3), -1);
    CHECK_EQ_INT(comm_a2a_disagree(want, off1, 3), 1);
    CHECK_EQ_INT(comm_a2a_disagree(want, off02, 3), 0);
    /* refusals */
    const uint64_t big[2] = {1ull << 62, 1};
    CHECK_EQ_INT(comm_a2a_layout(big, 2, 8, b, d, &t, &e), ST_OVERFLOW); /* 2^62 · 8 */
    CHECK(strstr(e.msg, "rank 0") != NULL);
    const uint64_t sum[2] = {UINT64_MAX / 2, UINT64_MAX / 2 + 2};
    CHECK_EQ_INT(comm_a2a_layout(sum, 2, 1, b, d, &t, &e), ST_OVERFLOW);
    CHECK_EQ_INT(comm_a2a_layout(NULL, 2, 1, b, d, &t, &e), ST_USAGE);
}

int main(void)
{
    RUN(test_device_of_rank);
    RUN(test_local_rank_env);
    RUN(test_pad);
    RUN(test_order);
    RUN(test_a2a);
    RUN(test_sendrecv_and_settle);
    return test_summary();
}
