/* tests/mpi/mpi_comm.c — the MPI communicator's collectives (exec/comm/comm_mpi.c) over 2 or 4 ranks: run by
 * tests/cli/mpi_comm.sh under mpirun -np 2 and -np 4; its sends and receives are mpi_comm_p2p.c's.
 *
 * Every rank runs every test; a test passes when it passes on every rank
 * (the failure counts are summed with MPI_Allreduce), and rank 0 prints
 * "ok - npN: name" / "FAIL - npN: name", then "checks: K" (the script counts
 * the lines against it) and the summary line. Expected values are worked by
 * hand in the comments. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include "exec/backend/backend.h"
#include "exec/backend/backend_desc.h"
#include "exec/comm/comm_mpi.h"
#include "exec/backend/elem.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "mpi_check.h"

static Comm *C;

/* Rank-order FP32 sum: x0 = 1, x1 = x2 = 2^-24, x3 = -1 (np 4). 1 + 2^-24 lies
 * halfway between 1 and 1 + 2^-23 and rounds to even, 1; again 1; 1 − 1 = 0.
 * (Summed from the last rank: −1 + 2^-24 + 2^-24 + 1 = 2^-23 exactly.) On 2
 * ranks x0 = 1, x1 = 2^-24: 1. Seven elements so the slices are uneven
 * (np 2: 3 and 4; np 4: 1, 2, 2, 2): element k adds (r + 1)·k/2 instead, whose
 * sum over r is k/2 · N(N+1)/2: np 2: 1.5k (k = 6: 9), np 4: 5k (k = 6: 30). */
static void test_all_reduce_fp32_rank_order(void)
{
    float x[8];
    const float tiny = ldexpf(1.0f, -24);
    x[0] = R == 0 ? 1.0f : R == N - 1 && N == 4 ? -1.0f : tiny;
    for (int k = 1; k < 8; k++) x[k] = 0.5f * (float)((R + 1) * k);
    Err e;
    CHECK_EQ_INT(C->all_reduce(C, CO_DP_GRAD_AR, NULL, x, 8, DT_FP32, COMM_SUM, &e), ST_OK);
    CHECKF(same_bits(x[0], N == 4 ? 0.0f : 1.0f), "x[0] = %a", (double)x[0]);
    for (int k = 1; k < 8; k++) CHECK_NEAR(x[k], (N == 2 ? 1.5 : 5.0) * k, 0.0);
    /* bytes: S = 8 · 4 = 32; bus S · 2(N−1)/N: np 2 32, np 4 48 */
    CHECK_EQ_U64(C->stats[CO_DP_GRAD_AR].payload_bytes, 32);
    CHECK_NEAR(C->stats[CO_DP_GRAD_AR].bus_bytes, N == 2 ? 32.0 : 48.0, 0.0);
    CHECK_EQ_U64(C->stats[CO_DP_GRAD_AR].calls, 1);
}

/* BF16 rounds once, after the FP32 sum: rank 0 holds 1, the others 3·2^-9 /
 * (N − 1) (np 2: 3·2^-9; np 4: 2^-9 each); FP32 sum 1 + 3·2^-9 = 1.005859375,
 * 0.75 of BF16's step 2^-7 above 1: rounds to 1.0078125. Rounding after each
 * add (np 4) would keep 1 (1 + 2^-9 is a quarter step). */
static void test_all_reduce_bf16_rounds_once(void)
{
    uint16_t v = bf16_encode(R == 0 ? 1.0f : ldexpf(3.0f, -9) / (float)(N - 1));
    Err e;
    CHECK_EQ_INT(C->all_reduce(C, CO_TP_AR_FWD, NULL, &v, 1, DT_BF16, COMM_SUM, &e), ST_OK);
    CHECK_NEAR(bf16_decode(v), 1.0078125, 0.0);
    CHECK_EQ_U64(C->stats[CO_TP_AR_FWD].payload_bytes, 2);
}

/* MAX of the amax: rank N−1 saw 640 (the seed's spike), the others their rank. */
static void test_all_reduce_max(void)
{
    float a[2] = {R == N - 1 ? 640.0f : (float)R, -(float)R};
    Err e;
    CHECK_EQ_INT(C->all_reduce(C, CO_AMAX_AR, NULL, a, 2, DT_FP32, COMM_MAX, &e), ST_OK);
    CHECK_NEAR(a[0], 640.0, 0.0);
    CHECK_NEAR(a[1], 0.0, 0.0); /* max of 0, −1, … */
    float m = (float)R;
    CHECK_EQ_INT(C->all_reduce(C, CO_AMAX_AR, NULL, &m, 1, DT_FP32, COMM_MIN, &e), ST_OK);
    CHECK_NEAR(m, 0.0, 0.0);
}

/* E5M2 sum saturates at the format's max: every rank 57344 → 57344. */
static void test_all_reduce_fp8_saturates(void)
{
    uint8_t q = fp8_encode_f32(DT_E5M2, 57344.0f, FP8_SATFINITE);
    Err e;
    CHECK_EQ_INT(C->all_reduce(C, CO_EMB_GRAD_AR, NULL, &q, 1, DT_E5M2, COMM_SUM, &e), ST_OK);
    CHECK_NEAR(fp8_decode(DT_E5M2, q), 57344.0, 0.0);
}

/* Reduce-scatter: rank r sends s[j] = 10r + j (j < 2N); rank q receives
 * elements 2q + i: Σ_r (10r + 2q + i) = 10·N(N−1)/2 + N(2q + i):
 * np 2: 10 + 2(2q + i) (rank 1, i = 1: 16); np 4: 60 + 4(2q + i). */
static void test_reduce_scatter(void)
{
    float s[8], out[2];
    for (int j = 0; j < 2 * N; j++) s[j] = (float)(10 * R + j);
    Err e;
    CHECK_EQ_INT(C->reduce_scatter(C, CO_DP_GRAD_RS, NULL, s, out, 2, DT_FP32, COMM_SUM, &e), ST_OK);
    for (int i = 0; i < 2; i++) CHECK_NEAR(out[i], 10.0 * N * (N - 1) / 2 + N * (2 * R + i), 0.0);
    /* S = 2N·4 bytes (np 2: 16, bus 8; np 4: 32, bus 24) */
    CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].payload_bytes, 8 * N);
    CHECK_NEAR(C->stats[CO_DP_GRAD_RS].bus_bytes, N == 2 ? 8.0 : 24.0, 0.0);
}

/* All-gather of BF16 pairs [r, r + 0.5], out of place and in place. */
static void test_all_gather(void)
{
    uint16_t mine[2] = {bf16_encode((float)R), bf16_encode((float)R + 0.5f)}, all[8] = {0};
    Err e;
    CHECK_EQ_INT(C->all_gather(C, CO_DP_PARAM_AG, NULL, mine, all, 2, DT_BF16, &e), ST_OK);
    for (int j = 0; j < 2 * N; j++) CHECK_NEAR(bf16_decode(all[j]), 0.5 * j, 0.0);
    uint16_t inplace[8] = {0};
    inplace[2 * R] = mine[0], inplace[2 * R + 1] = mine[1];
    CHECK_EQ_INT(C->all_gather(C, CO_DP_PARAM_AG, NULL, inplace + 2 * R, inplace, 2, DT_BF16, &e), ST_OK);
    CHECK(!memcmp(inplace, all, 2 * (size_t)N * sizeof *all));
    /* two calls of S = 2N · 2 bytes: payload 8N; bus (N−1)/N · 4N · 2 = 8(N−1) */
    CHECK_EQ_U64(C->stats[CO_DP_PARAM_AG].payload_bytes, 8 * N);
    CHECK_NEAR(C->stats[CO_DP_PARAM_AG].bus_bytes, 8.0 * (N - 1), 0.0);
}

/* Uneven in-place reduce-scatter (the sharded optimizer's): segment r has 2r elements (rank 0's is
 * empty): np 2 {0, 2}, np 4 {0, 2, 4, 6}, 12 elements at most. Rank q holds x[k] = q + k; after
 * the call rank r's own elements are the sum over q: N(N−1)/2 + N·k (np 2, rank 1, k = 1: 1 + 2 = 3;
 * np 4, rank 3, k = 11: 6 + 44 = 50); every other element keeps r + k. S = total · 4 B: np 2 8 B
 * (bus 4), np 4 48 B (bus 36). */
static void test_reduce_scatter_v(void)
{
    uint64_t counts[4], lo = 0, total = 0;
    for (int q = 0; q < N; q++) counts[q] = 2 * (uint64_t)q, total += counts[q], lo += q < R ? counts[q] : 0;
    float x[12];
    for (uint64_t k = 0; k < total; k++) x[k] = (float)(R + (int)k);
    Err e;
    CHECK_EQ_INT(comm_reduce_scatter_v(C, CO_DP_GRAD_RS, NULL, x, counts, DT_FP32, COMM_SUM, &e), ST_OK);
    for (uint64_t k = 0; k < total; k++) {
        int own = k >= lo && k < lo + counts[R];
        CHECK_NEAR(x[k], own ? N * (N - 1) / 2.0 + (double)N * (double)k : (double)R + (double)k, 0.0);
    }
    CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].payload_bytes, N == 2 ? 8 : 48);
    CHECK_NEAR(C->stats[CO_DP_GRAD_RS].bus_bytes, N == 2 ? 4.0 : 36.0, 0.0);
}

/* Uneven in-place all-gather in BF16, segments as above: rank q's element i of its segment is
 * q + 0.5·i, every other element −1 before the call; after it every rank holds all of them.
 * S = total · 2 B: np 2 4 B (bus 2), np 4 24 B (bus 18). */
static void test_all_gather_v(void)
{
    uint64_t counts[4], total = 0;
    for (int q = 0; q < N; q++) counts[q] = 2 * (uint64_t)q, total += counts[q];
    uint16_t x[12];
    for (uint64_t k = 0, q = 0, i = 0; k < total; k++, i++) {
        while (i >= counts[q]) i = 0, q++;
        x[k] = bf16_encode((int)q == R ? (float)q + 0.5f * (float)i : -1.0f);
    }
    Err e;
    CHECK_EQ_INT(comm_all_gather_v(C, CO_DP_PARAM_AG, NULL, x, counts, DT_BF16, &e), ST_OK);
    for (uint64_t k = 0, q = 0, i = 0; k < total; k++, i++) {
        while (i >= counts[q]) i = 0, q++;
        CHECK_NEAR(bf16_decode(x[k]), (double)q + 0.5 * (double)i, 0.0);
    }
    CHECK_EQ_U64(C->stats[CO_DP_PARAM_AG].payload_bytes, N == 2 ? 4 : 24);
    CHECK_NEAR(C->stats[CO_DP_PARAM_AG].bus_bytes, N == 2 ? 2.0 : 18.0, 0.0);
}

/* Broadcast from the last rank: everyone ends with its [7, 8, 9]·N. */
static void test_broadcast(void)
{
    float b[3] = {7.0f * (R + 1), 8.0f * (R + 1), 9.0f * (R + 1)};
    Err e;
    CHECK_EQ_INT(C->broadcast(C, CO_CP_KV, NULL, b, 3, DT_FP32, N - 1, &e), ST_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(b[i], (7.0 + i) * N, 0.0);
    CHECK_EQ_INT(C->broadcast(C, CO_CP_KV, NULL, b, 3, DT_FP32, N, &e), ST_USAGE);
    char want[64];
    snprintf(want, sizeof want, "root %d is not a rank of %d", N, N);
    CHECK_CONTAINS(e.msg, want);
}

/* A collective's late arrival is counted apart from its transfer (comm_mpi_coll.c arrive): rank 0 sleeps 200 ms
 * after a barrier, then every rank all-reduces 1,024 FP32 (4 KiB), element i = r + i, so each ends with
 * N i + N (N - 1) / 2 (np 2: 2i + 1; np 4: 4i + 6). The other ranks' wait_s gains at least 100 ms (the 200 ms
 * sleep less what the barrier's exit skew could take from it); every rank's transfer less than 100 ms (4 KiB
 * moves in microseconds) and one call of 4,096 B; rank 0, the last to arrive, waits less than 100 ms (the
 * others' return to a core, the second barrier's). Which rank resumes late is the scheduler's, so the second
 * barrier's own share is not asserted here (docs/calibrate.md, "The step's first collective"). */
static void test_arrival_wait_apart(void)
{
    enum { NEL = 1024 };
    static float buf[NEL];
    const CommStats row = C->stats[CO_TP_VOCAB_AR];
    Err e = {0};
    for (int i = 0; i < NEL; i++) buf[i] = (float)(R + i);
    MPI_Barrier(MPI_COMM_WORLD);
    if (R == 0) nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    Status st = C->all_reduce(C, CO_TP_VOCAB_AR, NULL, buf, NEL, DT_FP32, COMM_SUM, &e);
    CHECKF(st == ST_OK, "all_reduce: %s", e.msg);
    const CommStats *now = &C->stats[CO_TP_VOCAB_AR];
    CHECK_NEAR(buf[0], N * (N - 1) / 2.0, 0.0);
    CHECK_NEAR(buf[7], 7.0 * N + N * (N - 1) / 2.0, 0.0);
    CHECK_EQ_U64(now->calls - row.calls, 1);
    CHECK_EQ_U64(now->payload_bytes - row.payload_bytes, 4096);
    CHECKF(now->seconds - row.seconds >= 0 && now->seconds - row.seconds < 0.1,
           "the transfer counted %.6f s (the wait in it?)", now->seconds - row.seconds);
    if (R)
        CHECKF(now->wait_s - row.wait_s >= 0.1, "waited %.6f s for rank 0, 200 ms late", now->wait_s - row.wait_s);
    else
        CHECKF(now->wait_s - row.wait_s < 0.1, "the last rank waited %.6f s", now->wait_s - row.wait_s);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The checks every call makes before it moves a byte, the same on every rank (so no rank waits on a
 * refused call): another backend's memory (MPI carries host memory), a dtype without a size, and more
 * bytes than one MPI call carries (an int count: INT_MAX = 2^31 - 1). 2^29 FP32 elements are
 * 2^29 x 4 = 2^31 bytes, one byte too many; for the gather and scatter the whole buffer counts
 * (N x 2^29 / N elements per rank), for the uneven ones the sum of the counts. Each refusal names
 * the call; nothing is counted. */
static void expect_refused(Status st, const Err *e, Status want, const char *what, const char *part)
{
    char msg[128];
    snprintf(msg, sizeof msg, "mpi %s: %s", what, part);
    CHECKF(st == want, "%s: status %d, expected %d (%s)", what, (int)st, (int)want, e->msg);
    if (!*part) return;
    if (!strncmp(part, "collective:", 11)) snprintf(msg, sizeof msg, "%s", part);
    CHECKF(strstr(e->msg, msg) != NULL, "%s: message '%s' lacks '%s'", what, e->msg, msg);
}

static void test_call_checks(void)
{
    Backend gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.name = "cuda";
    float x[4] = {1, 2, 3, 4}, y[16] = {0};
    const uint64_t big = 1ull << 29, part = big / (uint64_t)N;
    uint64_t counts[4] = {part, part, part, part}, small[4] = {1, 1, 1, 1};
    const int peer = (R + 1) % N;
    const char *over = "2147483648 bytes over";
    CommStats before = C->total;
    for (int k = 0; k < 3; k++) { /* 0: a cuda backend, 1: DT_NONE, 2: 2^31 bytes */
        Backend *bk = k == 0 ? &gpu : NULL;
        Dtype dt = k == 1 ? DT_NONE : DT_FP32;
        Status want = k == 2 ? ST_UNAVAILABLE : ST_USAGE;
        const char *why = k == 0   ? "carries host memory (the cpu backend's), not cuda's"
                          : k == 1 ? "collective: dtype none has no size"
                                   : over;
        uint64_t n = k == 2 ? big : 3, ng = k == 2 ? part : 1;
        const uint64_t *cv = k == 2 ? counts : small;
        Err e = {0};
        expect_refused(C->all_reduce(C, CO_DP_GRAD_AR, bk, x, n, dt, COMM_SUM, &e), &e, want, "all_reduce", why);
        e = (Err){0};
        expect_refused(C->all_gather(C, CO_DP_PARAM_AG, bk, x, y, ng, dt, &e), &e, want, "all_gather", why);
        e = (Err){0};
        expect_refused(C->reduce_scatter(C, CO_DP_GRAD_RS, bk, y, x, ng, dt, COMM_SUM, &e), &e, want, "reduce_scatter",
                       why);
        e = (Err){0};
        expect_refused(C->broadcast(C, CO_CP_KV, bk, x, n, dt, 0, &e), &e, want, "broadcast", why);
        e = (Err){0};
        expect_refused(C->send(C, CO_PP_P2P, bk, x, n, dt, peer, &e), &e, want, "send", why);
        e = (Err){0};
        expect_refused(C->recv(C, CO_PP_P2P, bk, x, n, dt, peer, &e), &e, want, "recv", why);
        e = (Err){0};
        expect_refused(C->reduce_scatter_v(C, CO_DP_GRAD_RS, bk, y, cv, dt, COMM_SUM, &e), &e, want, "reduce_scatter_v",
                       why);
        e = (Err){0};
        expect_refused(C->all_gather_v(C, CO_DP_PARAM_AG, bk, y, cv, dt, &e), &e, want, "all_gather_v", why);
    }
    /* the reductions: SUM, MAX and MIN only (3 and -1 are none), over the dtypes elem.h decodes (E8M0 scales
     * are not summed) */
    const int ops[2] = {3, -1};
    for (int k = 0; k < 2; k++) {
        Err e = {0};
        char want[48];
        snprintf(want, sizeof want, "mpi: unknown reduction %d", ops[k]);
        expect_refused(C->all_reduce(C, CO_DP_GRAD_AR, NULL, x, 4, DT_FP32, (CommReduce)ops[k], &e), &e, ST_USAGE,
                       "all_reduce", "");
        CHECK_CONTAINS(e.msg, want);
        e = (Err){0};
        expect_refused(C->reduce_scatter(C, CO_DP_GRAD_RS, NULL, y, x, 1, DT_FP32, (CommReduce)ops[k], &e), &e,
                       ST_USAGE, "reduce_scatter", "");
        CHECK_CONTAINS(e.msg, want);
        e = (Err){0};
        expect_refused(C->reduce_scatter_v(C, CO_DP_GRAD_RS, NULL, y, small, DT_FP32, (CommReduce)ops[k], &e), &e,
                       ST_USAGE, "reduce_scatter_v", "");
        CHECK_CONTAINS(e.msg, want);
    }
    /* a peer outside [0, N) is no rank: refused before MPI sees it, naming the peer, this rank and the size */
    const int outside[2] = {N, -1};
    for (int k = 0; k < 2; k++) {
        char why[64];
        snprintf(why, sizeof why, "peer %d is not another rank (rank %d of %d)", outside[k], R, N);
        Err e = {0};
        expect_refused(C->send(C, CO_PP_P2P, NULL, x, 1, DT_FP32, outside[k], &e), &e, ST_USAGE, "send", why);
        e = (Err){0};
        expect_refused(C->recv(C, CO_PP_P2P, NULL, x, 1, DT_FP32, outside[k], &e), &e, ST_USAGE, "recv", why);
    }
    uint8_t sc[4] = {127, 127, 127, 127};
    Err e8 = {0};
    CHECK_EQ_INT(C->all_reduce(C, CO_DP_GRAD_AR, NULL, sc, 4, DT_E8M0, COMM_MAX, &e8), ST_USAGE);
    CHECK_CONTAINS(e8.msg, "mpi: cannot reduce e8m0 values");
    CHECK_EQ_U64(C->total.calls, before.calls);
    CHECK_EQ_U64(C->total.payload_bytes, before.payload_bytes);
    /* the communicator still runs after the refusals: a broadcast of 3 BF16 from rank 0 */
    uint16_t h[3] = {bf16_encode(R == 0 ? 1.5f : 0.0f), 0, 0};
    Err e = {0};
    CHECKF(C->broadcast(C, CO_CP_KV, NULL, h, 3, DT_BF16, 0, &e) == ST_OK, "%s", e.msg);
    CHECK_NEAR(bf16_decode(h[0]), 1.5, 0.0);
}

/* FP8 with a shared scale (comm_all_reduce_fp8), by hand.
 * np 2: rank 0 holds values [1, −2, 0.3] at scale 1 (codes 1, −2, 0.3 →
 * E4M3 0.3125: [0.25, 0.5) steps 1/32, 0.3 → 0.3125); rank 1 holds [3.5, 0.5,
 * 0.4] at scale 2 (codes 7, 1, 0.8 → 0.8125: value 0.40625). Group amax 3.5,
 * shared scale 448 / (2·3.5) = 64: rank 0 re-encodes [64, −128, 20] (0.3125·64
 * = 20 exact), rank 1 [224, 32, 26] (0.40625·64 = 26); FP32 sums 288, −96, 46
 * round once to E4M3: 288 and −96 exact, 46 a tie between 44 (mantissa 011)
 * and 48 (100): 48. Record {64, 1/64, amax 288/64 = 4.5}.
 * np 4: rank r holds r + 1 at scale 1; amax 4, scale 448/16 = 28: 28, 56,
 * 84 → a tie between 80 (mantissa 010) and 88 (011): 80, 112; sum 276 → E4M3
 * [256, 512) steps 32: 288 (12 away, 256 is 20): value 288/28. */
static void test_all_reduce_fp8_shared_scale(void)
{
    Err e;
    if (N == 2) {
        const float v[2][3] = {{1.0f, -2.0f, 0.3f}, {7.0f, 1.0f, 0.8f}};
        uint8_t q[3];
        for (int i = 0; i < 3; i++) q[i] = fp8_encode_f32(DT_E4M3, v[R][i], FP8_SATFINITE);
        float rec[REC_FLOATS] = {R ? 2.0f : 1.0f, R ? 0.5f : 1.0f, 0.0f};
        CHECK_EQ_INT(comm_all_reduce_fp8(C, CO_DP_GRAD_AR, NULL, q, rec, 3, DT_E4M3, &e), ST_OK);
        CHECK_NEAR(fp8_decode(DT_E4M3, q[0]), 288.0, 0.0);
        CHECK_NEAR(fp8_decode(DT_E4M3, q[1]), -96.0, 0.0);
        CHECK_NEAR(fp8_decode(DT_E4M3, q[2]), 48.0, 0.0);
        CHECK_NEAR(rec[REC_SCALE], 64.0, 0.0);
        CHECK_NEAR(rec[REC_SCALE_INV], 0.015625, 0.0);
        CHECK_NEAR(rec[REC_AMAX], 4.5, 0.0);
    } else {
        uint8_t q = fp8_encode_f32(DT_E4M3, (float)(R + 1), FP8_SATFINITE);
        float rec[REC_FLOATS] = {1.0f, 1.0f, 0.0f};
        CHECK_EQ_INT(comm_all_reduce_fp8(C, CO_DP_GRAD_AR, NULL, &q, rec, 1, DT_E4M3, &e), ST_OK);
        CHECK_NEAR(fp8_decode(DT_E4M3, q), 288.0, 0.0);
        CHECK_NEAR(rec[REC_SCALE], 28.0, 0.0);
        CHECK_NEAR(rec[REC_AMAX], 288.0f * (1.0f / 28.0f), 0.0);
    }
}

/* The uneven reduce-scatter with a shared FP8 scale (comm_reduce_scatter_fp8_v): the values of
 * test_all_reduce_fp8_shared_scale, each rank summing only its own segment.
 * np 2, counts {1, 2}: the shared scale is 64 as there (group amax 3.5); rank 0 re-encodes
 * [64, -128, 20], rank 1 [224, 32, 26]; rank 0's element 0 becomes 64 + 224 = 288, rank 1's
 * elements 1, 2 become -96 and 46 -> 48 (the tie to even); the other elements keep the rank's own
 * re-encoded codes (rank 0: -128, 20; rank 1: 224). The record is the whole sum's on both ranks:
 * {64, 1/64, 288/64 = 4.5} — rank 1's own segment alone has amax 96/64 = 1.5.
 * np 4, counts {0, 1, 1, 2} (rank 0 owns nothing): rank r holds r + 1 at even and -(r + 1) at odd
 * elements, scale 1; amax 4, scale 448 / 16 = 28: codes 28, 56, 84 -> 80, 112 (signs kept); every
 * owned element sums to +-276 -> +-288; rank 2's element 0 (not its own) keeps 84 -> 80. The
 * record: amax 288/28 on every rank, rank 0's included. Payload S = 3 B (np 2), 4 B (np 4); bus
 * S (n-1)/n: 1.5 and 3. */
static void test_reduce_scatter_fp8_v(void)
{
    Err e;
    const CommStats before = C->stats[CO_DP_GRAD_RS];
    if (N == 2) {
        const float v[2][3] = {{1.0f, -2.0f, 0.3f}, {7.0f, 1.0f, 0.8f}};
        const uint64_t counts[2] = {1, 2};
        uint8_t q[3];
        for (int i = 0; i < 3; i++) q[i] = fp8_encode_f32(DT_E4M3, v[R][i], FP8_SATFINITE);
        float rec[REC_FLOATS] = {R ? 2.0f : 1.0f, R ? 0.5f : 1.0f, 0.0f};
        CHECK_EQ_INT(comm_reduce_scatter_fp8_v(C, CO_DP_GRAD_RS, NULL, q, rec, counts, DT_E4M3, &e), ST_OK);
        const double want[2][3] = {{288.0, -128.0, 20.0}, {224.0, -96.0, 48.0}};
        for (int i = 0; i < 3; i++) CHECK_NEAR(fp8_decode(DT_E4M3, q[i]), want[R][i], 0.0);
        CHECK_NEAR(rec[REC_SCALE], 64.0, 0.0);
        CHECK_NEAR(rec[REC_SCALE_INV], 0.015625, 0.0);
        CHECK_NEAR(rec[REC_AMAX], 4.5, 0.0);
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].payload_bytes - before.payload_bytes, 3);
        CHECK_NEAR(C->stats[CO_DP_GRAD_RS].bus_bytes - before.bus_bytes, 1.5, 1e-12);
    } else {
        const uint64_t counts[4] = {0, 1, 1, 2}, lo[4] = {0, 0, 1, 2};
        uint8_t q[4];
        for (int i = 0; i < 4; i++) q[i] = fp8_encode_f32(DT_E4M3, (float)((R + 1) * (i % 2 ? -1 : 1)), FP8_SATFINITE);
        float rec[REC_FLOATS] = {1.0f, 1.0f, 0.0f};
        CHECK_EQ_INT(comm_reduce_scatter_fp8_v(C, CO_DP_GRAD_RS, NULL, q, rec, counts, DT_E4M3, &e), ST_OK);
        const double mine[4] = {28.0, 56.0, 80.0, 112.0}; /* this rank's own codes at scale 28 */
        for (uint64_t i = 0; i < 4; i++) {
            int own = i >= lo[R] && i < lo[R] + counts[R];
            CHECK_NEAR(fp8_decode(DT_E4M3, q[i]), (own ? 288.0 : mine[R]) * (i % 2 ? -1.0 : 1.0), 0.0);
        }
        CHECK_NEAR(rec[REC_SCALE], 28.0, 0.0);
        CHECK_NEAR(rec[REC_AMAX], 288.0f * (1.0f / 28.0f), 0.0);
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].payload_bytes - before.payload_bytes, 4);
        CHECK_NEAR(C->stats[CO_DP_GRAD_RS].bus_bytes - before.bus_bytes, 3.0, 1e-12);
    }
}

/* The same inputs give the same bits, twice, and the bits of a plain FP32
 * fold in rank order written here (rank r's values: a fixed LCG seeded by r). */
static void test_reproducible(void)
{
    enum { K = 1001 };
    static float a[K], b[K], ref[K];
    for (int k = 0; k < K; k++) ref[k] = 0.0f;
    for (int r = 0; r < N; r++) {
        uint32_t s = 12345u + 977u * (uint32_t)r;
        for (int k = 0; k < K; k++) {
            s = s * 1664525u + 1013904223u;
            float x = ldexpf((float)(s >> 8), -24 + (int)(s % 7)) - 0.5f;
            ref[k] = r == 0 ? x : ref[k] + x;
            if (r == R) a[k] = b[k] = x;
        }
    }
    Err e;
    CHECK_EQ_INT(C->all_reduce(C, COMM_UNPLANNED, NULL, a, K, DT_FP32, COMM_SUM, &e), ST_OK);
    CHECK_EQ_INT(C->all_reduce(C, COMM_UNPLANNED, NULL, b, K, DT_FP32, COMM_SUM, &e), ST_OK);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(!memcmp(a, ref, sizeof a));
}

/* The fold of every dtype and reduction, over more elements than it takes at a time (1001 = 3 x 256 + 233, the
 * all-reduce's slices uneven: 500 and 501 at np 2, 250 and 251 at np 4): the bytes of element k are those of
 * rank 0's value of k decoded to FP32, folded with rank 1's, 2's, ... in FP32 (SUM: added; MAX/MIN: the larger /
 * smaller, a NaN wins and stays) and rounded once to the dtype (elem_store: BF16/FP16 RNE, FP8 saturating), the
 * reference written here one element at a time. Rank N-1 holds a NaN at element 700 (a MAX/MIN keeps it, a SUM
 * too). The reduce-scatter folds the same way: count 1001 per rank, rank r keeps its block's reference. */
static void test_fold_dtypes(void)
{
    enum { K = 1001, NAN_AT = 700 };
    static const Dtype dts[] = {DT_FP32, DT_BF16, DT_FP16, DT_E4M3, DT_E5M2};
    static const CommReduce ops[] = {COMM_SUM, COMM_MAX, COMM_MIN};
    static uint8_t mine[4 * K * 4], want[4 * K * 4], ref[4 * K], got[4 * K];
    static float acc[4 * K];
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        const Dtype dt = dts[d];
        const uint64_t b = dtype_bytes(dt);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
            const CommReduce op = ops[o];
            for (int r = 0; r < N; r++) { /* rank r's N blocks of K values; the reference folded over r */
                uint32_t s = 4242u + 131u * (uint32_t)r;
                for (int k = 0; k < N * K; k++) {
                    s = s * 1664525u + 1013904223u;
                    float x = ldexpf((float)(s >> 16) - 32768.0f, -10 - (int)(s % 5));
                    if (r == N - 1 && k % K == NAN_AT) x = NAN;
                    uint8_t q[4] = {0}; /* written by elem_store (gcc --coverage cannot tell: maybe-uninitialized) */
                    elem_store(q, dt, 0, x);
                    if (r == R) memcpy(mine + (uint64_t)k * b, q, b);
                    float v = elem_load(q, dt, 0);
                    if (r == 0)
                        acc[k] = v;
                    else if (op == COMM_SUM)
                        acc[k] = acc[k] + v;
                    else if (v != v || (op == COMM_MAX ? v > acc[k] : v < acc[k]))
                        acc[k] = v;
                }
            }
            for (int k = 0; k < N * K; k++) elem_store(want, dt, (uint64_t)k, acc[k]);
            Err e;
            memcpy(got, mine, K * b);
            CHECK_EQ_INT(C->all_reduce(C, COMM_UNPLANNED, NULL, got, K, dt, op, &e), ST_OK);
            memcpy(ref, want, K * b);
            CHECKF(!memcmp(got, ref, K * b), "all_reduce %s op %d: bytes differ from the rank-order fold",
                   dtype_name(dt), (int)op);
            CHECK_EQ_INT(C->reduce_scatter(C, COMM_UNPLANNED, NULL, mine, got, K, dt, op, &e), ST_OK);
            CHECKF(!memcmp(got, want + (uint64_t)R * K * b, K * b),
                   "reduce_scatter %s op %d: bytes differ from the rank-order fold", dtype_name(dt), (int)op);
        }
    }
}

/* Sub-communicators: the even and the odd ranks (color r mod 2, key −r: the highest rank first). np 2:
 * two groups of one; np 4: {2, 0} and {3, 1}, this rank's place (N/2 − 1 − ⌊r/2⌋). An all-reduce of
 * r + 1 over a group: np 4 evens 1 + 3 = 4, odds 2 + 4 = 6; np 2 alone: r + 1. Its bytes count in the
 * world's rows, not in the group's: S = 4, bus S·2(n−1)/n = 4 over 2 ranks, 0 over one; and a send from
 * the group's rank 0 to its rank 1 (np 4: ranks 2 → 0 and 3 → 1) arrives from the group's peer. */
static void test_split(void)
{
    Err e;
    Comm *g = NULL;
    memset(C->stats, 0, sizeof C->stats);
    CHECK_EQ_INT(comm_split(C, R % 2, -R, &g, &e), ST_OK);
    if (!g) return;
    CHECK_EQ_INT(g->size, N / 2);
    CHECK_EQ_INT(g->rank, N / 2 - 1 - R / 2);
    CHECK(g->parent == C);
    float x = (float)(R + 1);
    CHECK_EQ_INT(g->all_reduce(g, CO_EMB_GRAD_AR, NULL, &x, 1, DT_FP32, COMM_SUM, &e), ST_OK);
    CHECK_NEAR(x, N == 4 ? (R % 2 ? 6.0 : 4.0) : (double)(R + 1), 0.0);
    CHECK_EQ_U64(C->stats[CO_EMB_GRAD_AR].calls, 1);
    CHECK_EQ_U64(C->stats[CO_EMB_GRAD_AR].payload_bytes, 4);
    CHECK_NEAR(C->stats[CO_EMB_GRAD_AR].bus_bytes, N == 4 ? 4.0 : 0.0, 0.0);
    CHECK_EQ_U64(g->stats[CO_EMB_GRAD_AR].calls, 0);
    if (N == 4) {
        float v = (float)(10 * R);
        if (g->rank == 0)
            CHECK_EQ_INT(g->send(g, CO_PP_P2P, NULL, &v, 1, DT_FP32, 1, &e), ST_OK);
        else
            CHECK_EQ_INT(g->recv(g, CO_PP_P2P, NULL, &v, 1, DT_FP32, 0, &e), ST_OK);
        CHECK_NEAR(v, 10.0 * (R < 2 ? R + 2 : R), 0.0); /* ranks 0, 1 receive 20, 30; 2, 3 keep their own */
        CHECK_EQ_U64(C->stats[CO_PP_P2P].payload_bytes, R >= 2 ? 4u : 0u);
    }
    g->destroy(g);
    memset(C->stats, 0, sizeof C->stats);
}

/* `mpi_comm abort` (tests/cli/mpi_comm.sh): the last rank fails and calls comm_mpi_abort(C, 7) while every
 * other rank waits in a barrier it will never pass; the call must end the whole job with exit status 7, on
 * any number of ranks from 2 up (the script runs 2 and 3), and never return. */
static int abort_mode(void)
{
    if (R == N - 1) {
        comm_mpi_abort(C, 7);
        printf("rank %d: comm_mpi_abort returned\n", R);
        fflush(stdout);
        return 99;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: the barrier passed\n", R);
    fflush(stdout);
    return 98;
}

int main(int argc, char **argv)
{
    C = mpi_world(&argc, &argv);
    if (argc > 1 && !strcmp(argv[1], "abort")) return abort_mode();
    mpi_need_2_or_4();
    if (R == 0) printf("checks: 16\n");
    MRUN(test_all_reduce_fp32_rank_order);
    MRUN(test_all_reduce_bf16_rounds_once);
    MRUN(test_all_reduce_max);
    MRUN(test_all_reduce_fp8_saturates);
    MRUN(test_reduce_scatter);
    MRUN(test_all_gather);
    MRUN(test_broadcast);
    MRUN(test_arrival_wait_apart);
    MRUN(test_call_checks);
    MRUN(test_all_reduce_fp8_shared_scale);
    MRUN(test_reproducible);
    MRUN(test_fold_dtypes);
    MRUN(test_split);
    memset(C->stats, 0, sizeof C->stats); /* the uneven calls count on rows of their own */
    MRUN(test_reduce_scatter_v);
    MRUN(test_all_gather_v);
    MRUN(test_reduce_scatter_fp8_v);
    return mpi_done(C);
}
