/* tests/mpi/mpi_comm_a2a.c — what expert parallelism asks of the MPI communicator (exec/comm/comm_mpi.c) over
 * 2 or 4 ranks: the uneven all-to-all, counts that disagree, non-finite values arriving from any rank through
 * the all-to-all, the all-reduces and the gradient buckets (exec/model/model_grad_bucket.c), and the FP8
 * dispatch payload's bits; run by tests/cli/mpi_comm.sh under mpirun -np 2 and -np 4, as mpi_comm.c
 * is (rank 0 prints "ok - npN: name" / "FAIL - npN: name", "checks: K" and the summary line). Expected values are
 * worked by hand in the comments. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "exec/backend/backend.h"
#include "exec/backend/backend_desc.h"
#include "exec/comm/comm_mpi.h"
#include "exec/backend/elem.h"
#include "exec/model/model_internal.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "mpi_check.h"

static Comm *C;

/* Uneven all-to-all (expert parallelism's dispatch): rank r sends r + j + 1 FP32 values to rank j, value
 * i of them 100·r + j + i/2, and receives r + j + 1 from each rank j. Bytes rank r sends: the sum over j
 * of r + j + 1 values = N·r + N(N−1)/2 + N, 4 B each — np 2: 2r + 3 (rank 0: 12 B, rank 1: 20 B), np 4:
 * 4r + 10 (rank 0: 40 B … rank 3: 88 B); of those, its own segment (2r + 1 values) stays: bus bytes
 * np 2: 4·(2r + 3 − 2r − 1) = 8 on both ranks, np 4: 4·(4r + 10 − 2r − 1) = 4·(2r + 9). */
static void test_all_to_all_v(void)
{
    uint64_t sc[4], rc[4], ns = 0, nr = 0;
    for (int j = 0; j < N; j++) sc[j] = rc[j] = (uint64_t)(R + j + 1), ns += sc[j], nr += rc[j];
    float snd[32], rcv[32]; /* at most 4·3 + 10 = 22 values */
    for (int j = 0, k = 0; j < N; j++)
        for (uint64_t i = 0; i < sc[j]; i++) snd[k++] = 100.0f * (float)R + (float)j + 0.5f * (float)i;
    for (uint64_t k = 0; k < nr; k++) rcv[k] = -1.0f;
    Err e;
    CHECK_EQ_INT(comm_all_to_all_v(C, CO_EP_DISPATCH_FWD, NULL, snd, sc, rcv, rc, DT_FP32, &e), ST_OK);
    for (int j = 0, k = 0; j < N; j++) /* from rank j: 100·j + R + i/2 */
        for (uint64_t i = 0; i < rc[j]; i++, k++) CHECK_NEAR(rcv[k], 100.0 * j + R + 0.5 * (double)i, 0.0);
    uint64_t want = N == 2 ? 4 * (2 * (uint64_t)R + 3) : 4 * (4 * (uint64_t)R + 10);
    double bus = N == 2 ? 8.0 : 4.0 * (2 * R + 9);
    CHECK_EQ_U64(C->stats[CO_EP_DISPATCH_FWD].payload_bytes, want);
    CHECK_REL(C->stats[CO_EP_DISPATCH_FWD].bus_bytes, bus, 1e-12); /* payload x (leaving / payload), in double */
    CHECK_EQ_U64(C->stats[CO_EP_DISPATCH_FWD].calls, 1);
}

/* Counts that disagree (the last rank expects one value more from rank 0 than rank 0 sends): every rank
 * fails with ST_DATA before any payload moves, the last rank naming the pair and the counts, the others
 * naming it; nobody hangs, nothing is counted on the row, and the next call works. */
static void test_all_to_all_v_disagree(void)
{
    uint64_t sc[4], rc[4];
    for (int j = 0; j < N; j++) sc[j] = rc[j] = 1;
    if (R == N - 1) rc[0] = 2;
    float snd[4] = {1, 2, 3, 4}, rcv[5] = {0};
    Err e = {0};
    CHECK_EQ_INT(comm_all_to_all_v(C, CO_EP_COMBINE_FWD, NULL, snd, sc, rcv, rc, DT_FP32, &e), ST_DATA);
    char want[160];
    if (R == N - 1)
        snprintf(want, sizeof want, "rank %d expects 2 elements from rank 0, which sends 1", N - 1);
    else
        snprintf(want, sizeof want, "rank %d's receive counts disagree with what its peers send", N - 1);
    CHECK_CONTAINS(e.msg, want);
    CHECK_EQ_U64(C->stats[CO_EP_COMBINE_FWD].calls, 0);
    rc[0] = 1;
    CHECK_EQ_INT(comm_all_to_all_v(C, CO_EP_COMBINE_FWD, NULL, snd, sc, rcv, rc, DT_FP32, &e), ST_OK);
    for (int j = 0; j < N; j++) CHECK_NEAR(rcv[j], (double)R + 1.0, 0.0); /* rank j's value for R: snd[R] */
}

/* deepseek-v3's FP8 dispatch payload (exec/model/model_moe_ep_fp8.c): a row of 64 E4M3 codes and one FP32
 * 1x128 scale_inv, 64 + 4 = 68 B, moved as 17 4-byte words. Rank r sends one row to every rank j: code k is
 * (16r + 4j + k) & 0xff, except that codes 0..3 are 01 00 80 7f — read as a little-endian float, the
 * signaling NaN 0x7f800001, which a float copy or an arithmetic step would quiet (0x7fc00001) — and code 4
 * is 0x80 (E4M3's -0); the scale is (r + j + 1) / 4. Every row arrives bit for bit; rank r's payload is
 * N x 68 B (np 2: 136, np 4: 272) and its bus bytes the (N - 1) rows that leave it (68, 204). */
static void test_fp8_payload_bits(void)
{
    enum { ROW = 68, WORDS = ROW / 4 };
    uint8_t snd[4 * ROW], rcv[4 * ROW], want[ROW];
    uint64_t cnt[4] = {WORDS, WORDS, WORDS, WORDS};
    for (int pass = 0; pass < 2; pass++) /* pass 0 builds the rows r sends, pass 1 those it expects */
        for (int j = 0; j < N; j++) {
            const int from = pass ? j : R, to = pass ? R : j;
            uint8_t *row = pass ? want : snd + j * ROW;
            for (int k = 0; k < 64; k++) row[k] = (uint8_t)((16 * from + 4 * to + k) & 0xff);
            row[0] = 0x01, row[1] = 0x00, row[2] = 0x80, row[3] = 0x7f, row[4] = 0x80;
            float sc = (float)(from + to + 1) / 4.0f;
            memcpy(row + 64, &sc, sizeof sc);
            if (pass) CHECKF(!memcmp(rcv + j * ROW, want, ROW), "np%d: the row from rank %d changed", N, j);
            if (!pass && j == N - 1) {
                Err e;
                CHECK_EQ_INT(comm_all_to_all_v(C, CO_EP_DISPATCH_BWD, NULL, snd, cnt, rcv, cnt, DT_FP32, &e), ST_OK);
            }
        }
    CHECK_EQ_U64(C->stats[CO_EP_DISPATCH_BWD].payload_bytes, (uint64_t)N * ROW);
    CHECK_REL(C->stats[CO_EP_DISPATCH_BWD].bus_bytes, (double)(N - 1) * ROW, 1e-12);
}

/* Non-finite values arriving from any rank, through what expert parallelism moves and reduces: for each
 * source rank s in turn, (1) the dispatch all-to-all (one value to every rank, s's a quiet NaN with payload
 * 0x7fc00123 to even ranks and -Inf to odd ones) delivers s's bits unchanged and every other rank's finite
 * value; (2) the expert-data-parallel all-reduce (SUM over the ranks of the same parity, a group split as
 * model_groups.c splits EDP at ep 2) gives NaN on every rank of s's group when s sends NaN, +Inf for +Inf,
 * NaN for +Inf beside another rank's -Inf (np 4), and the other group its finite sum; (3) the world's
 * gradient all-reduce (DP, and the routing counts' FP32 sum) gives NaN everywhere when s sends NaN; (4) the
 * experts' amax MAX over the EDP group carries s's NaN and +Inf to s's group only. */
static void test_nonfinite_from_any_rank(void)
{
    Err e;
    Comm *g = NULL;
    CHECK_EQ_INT(comm_split(C, R % 2, R, &g, &e), ST_OK); /* ranks 0, 2 and 1, 3 (np 2: each alone) */
    if (!g) return;
    uint32_t qnan_bits = 0x7fc00123u;
    float qnan;
    memcpy(&qnan, &qnan_bits, sizeof qnan);
    for (int s = 0; s < N; s++) {
        uint64_t one[4] = {1, 1, 1, 1};
        float snd[4], rcv[4];
        for (int j = 0; j < N; j++) snd[j] = R == s ? (j % 2 ? -INFINITY : qnan) : (float)(10 * R + j);
        CHECK_EQ_INT(comm_all_to_all_v(C, CO_EP_DISPATCH_FWD, NULL, snd, one, rcv, one, DT_FP32, &e), ST_OK);
        for (int j = 0; j < N; j++) {
            if (j != s)
                CHECK_NEAR(rcv[j], 10.0 * j + R, 0.0);
            else if (R % 2)
                CHECKF(isinf(rcv[j]) && rcv[j] < 0, "np%d from rank %d: %a", N, s, (double)rcv[j]);
            else
                CHECKF(same_bits(rcv[j], qnan), "np%d from rank %d: NaN bits %a", N, s, (double)rcv[j]);
        }
        float x[3] = {R == s ? qnan : 1.0f, R == s ? INFINITY : 1.0f,
                      R == s             ? INFINITY
                      : R == (s + 2) % N ? -INFINITY
                                         : 1.0f};
        CHECK_EQ_INT(g->all_reduce(g, CO_EDP_GRAD_AR, NULL, x, 3, DT_FP32, COMM_SUM, &e), ST_OK);
        const int mine = R % 2 == s % 2; /* s is in this rank's group */
        const double n = (double)g->size;
        if (mine) {
            CHECKF(isnan(x[0]), "np%d EDP NaN from rank %d: %a", N, s, (double)x[0]);
            CHECKF(isinf(x[1]) && x[1] > 0, "np%d EDP +Inf from rank %d: %a", N, s, (double)x[1]);
            if (N == 4) CHECKF(isnan(x[2]), "np%d EDP +Inf - Inf: %a", N, (double)x[2]);
        } else {
            CHECK_NEAR(x[0], n, 0.0);
            CHECK_NEAR(x[1], n, 0.0);
        }
        float y = R == s ? qnan : 2.0f;
        CHECK_EQ_INT(C->all_reduce(C, CO_DP_GRAD_AR, NULL, &y, 1, DT_FP32, COMM_SUM, &e), ST_OK);
        CHECKF(isnan(y), "np%d DP NaN from rank %d: %a", N, s, (double)y);
        /* (4) delayed scaling's expert amax records, MAX over the same EDP group (model_ep_amax_begin): s's NaN
         * and +Inf reach its group's ranks and no other; the other group keeps its max, 1 + its top rank */
        float am[2] = {R == s ? qnan : (float)(R + 1), R == s ? INFINITY : (float)(R + 1)};
        CHECK_EQ_INT(g->all_reduce(g, COMM_UNPLANNED, NULL, am, 2, DT_FP32, COMM_MAX, &e), ST_OK);
        if (mine) {
            CHECKF(isnan(am[0]), "np%d EDP amax NaN from rank %d: %a", N, s, (double)am[0]);
            CHECKF(isinf(am[1]) && am[1] > 0, "np%d EDP amax +Inf from rank %d: %a", N, s, (double)am[1]);
        } else { /* np 2: this rank alone (R + 1); np 4: ranks R % 2 and R % 2 + 2, max R % 2 + 3 */
            const double top = N == 2 ? R + 1 : R % 2 + 3;
            CHECK_NEAR(am[0], top, 0.0);
            CHECK_NEAR(am[1], top, 0.0);
        }
    }
    g->destroy(g);
}

/* Non-finite values from any rank through the sharded experts' gradient reduce-scatter over their EDP group
 * (model_shard.c: comm_reduce_scatter_v on the splits model_groups.c makes): `halves` 0, the ranks of one
 * parity (ep 2 over the world); 1, two consecutive ranks (a pipeline stage's tp 2 ranks at pp 2, ep 1, where
 * the EDP group is the stage's TP x DP ranks; np 2: the world). For each source rank s, 3 elements in uneven
 * segments by place (groups of 2: {1, 2}; of one: {3}); s sends a quiet NaN at even elements and +Inf at odd
 * ones, its group peer (if any) -Inf at odd ones, every other value 1. The owner of an element in s's group
 * gets NaN at even elements and at odd ones +Inf (a group of one) or NaN (+Inf - Inf); the other group its
 * finite sum, 2; elements a rank does not own keep its own values. Then the same through the group's
 * all-reduce (the experts' gradients unsharded: at tp 2 x pp 2 over the stage's TP ranks). */
static void test_nonfinite_edp_reduce_scatter(int halves)
{
    Err e;
    Comm *g = NULL;
    const int color = halves ? R / 2 : R % 2;
    CHECK_EQ_INT(comm_split(C, color, R, &g, &e), ST_OK);
    if (!g) return;
    uint32_t qnan_bits = 0x7fc00123u;
    float qnan;
    memcpy(&qnan, &qnan_bits, sizeof qnan);
    const uint64_t counts[2] = {g->size == 1 ? 3 : 1, 2};
    const uint64_t lo = g->rank == 0 ? 0 : counts[0], n_own = counts[g->rank];
    for (int s = 0; s < N; s++) {
        const int mine = (halves ? s / 2 : s % 2) == color;
        const int peer = g->size == 1 ? -1 : halves ? s ^ 1 : (s + 2) % N; /* s's group peer */
        float x[3], x0[3];
        for (int k = 0; k < 3; k++) {
            x[k] = R == s ? (k % 2 ? INFINITY : qnan) : R == peer && k % 2 ? -INFINITY : 1.0f;
            x0[k] = x[k];
        }
        CHECK_EQ_INT(comm_reduce_scatter_v(g, CO_EDP_GRAD_RS, NULL, x, counts, DT_FP32, COMM_SUM, &e), ST_OK);
        for (uint64_t k = 0; k < 3; k++) {
            if (k < lo || k >= lo + n_own) {
                CHECKF(same_bits(x[k], x0[k]), "np%d from rank %d: element %d not owned changed", N, s, (int)k);
            } else if (!mine) {
                CHECK_NEAR(x[k], (double)g->size, 0.0);
            } else if (k % 2 == 0 || g->size == 2) {
                CHECKF(isnan(x[k]), "np%d EDP reduce-scatter NaN from rank %d, element %d: %a", N, s, (int)k,
                       (double)x[k]);
            } else {
                CHECKF(isinf(x[k]) && x[k] > 0, "np%d EDP reduce-scatter +Inf from rank %d: %a", N, s, (double)x[k]);
            }
        }
        /* the unsharded experts' gradient all-reduce over the same group (edp_grad_allreduce): s's NaN and +Inf
         * reach every rank of its group (+Inf - Inf: NaN where the peer sends -Inf), the other group sums 1s */
        float y[2] = {R == s ? qnan : 1.0f, R == s ? INFINITY : R == peer ? -INFINITY : 1.0f};
        CHECK_EQ_INT(g->all_reduce(g, CO_EDP_GRAD_AR, NULL, y, 2, DT_FP32, COMM_SUM, &e), ST_OK);
        if (!mine) {
            CHECK_NEAR(y[0], (double)g->size, 0.0);
            CHECK_NEAR(y[1], (double)g->size, 0.0);
        } else {
            CHECKF(isnan(y[0]), "np%d EDP all-reduce NaN from rank %d: %a", N, s, (double)y[0]);
            CHECKF(g->size == 2 ? isnan(y[1]) : isinf(y[1]) && y[1] > 0, "np%d EDP all-reduce Inf from rank %d: %a", N,
                   s, (double)y[1]);
        }
    }
    g->destroy(g);
}

static void test_nonfinite_edp_reduce_scatter_ep(void) { test_nonfinite_edp_reduce_scatter(0); }

static void test_nonfinite_edp_reduce_scatter_stage(void) { test_nonfinite_edp_reduce_scatter(1); }

/* Latent attention at TP (exec/model/model_mla.c, model_tp.c): the RoPE key's gradient, each TP rank's heads' sum
 * in the activations' BF16, reduce-scattered over the TP group (CO_TP_RS_BWD), and the duplicated
 * down-projections' FP32 gradients all-reduced with the norms' (CO_TP_NORM_GRAD_AR). TP groups of 2 consecutive
 * ranks (model_groups.c: tp fastest; np 2 one, np 4 {0, 1} and {2, 3}). For each source rank s: 4 BF16 values,
 * 2 a rank's segment, s sending a quiet NaN at 0 and 2, +Inf at 1 and 3, its group peer -Inf at 3, every other
 * value 1.5; the owner of a segment in s's group gets NaN at its first element and, at its second, +Inf (rank 0's
 * segment: element 1, +Inf + 1.5) or NaN (element 3: +Inf - Inf); the other group (np 4) 3.0 everywhere. The FP32
 * all-reduce of {s: NaN, +Inf; others 2}: NaN and +Inf in s's group, 4 in the other. */
static void test_nonfinite_tp_mla(void)
{
    Err e;
    Comm *g = NULL;
    CHECK_EQ_INT(comm_split(C, R / 2, R, &g, &e), ST_OK);
    if (!g) return;
    uint32_t qnan_bits = 0x7fc00123u;
    float qnan;
    memcpy(&qnan, &qnan_bits, sizeof qnan);
    for (int s = 0; s < N; s++) {
        const int mine = R / 2 == s / 2, peer = mine && R != s;
        uint16_t x[4], y[2];
        for (int k = 0; k < 4; k++)
            x[k] = bf16_encode(R == s ? (k % 2 ? INFINITY : qnan) : peer && k == 3 ? -INFINITY : 1.5f);
        CHECK_EQ_INT(g->reduce_scatter(g, CO_TP_RS_BWD, NULL, x, y, 2, DT_BF16, COMM_SUM, &e), ST_OK);
        float y0 = bf16_decode(y[0]), y1 = bf16_decode(y[1]);
        if (!mine) {
            CHECK_NEAR(y0, 3.0, 0.0);
            CHECK_NEAR(y1, 3.0, 0.0);
        } else {
            CHECKF(isnan(y0), "np%d TP reduce-scatter NaN from rank %d: %a", N, s, (double)y0);
            if (g->rank == 0)
                CHECKF(isinf(y1) && y1 > 0, "np%d TP reduce-scatter +Inf from rank %d: %a", N, s, (double)y1);
            else
                CHECKF(isnan(y1), "np%d TP reduce-scatter +Inf - Inf from rank %d: %a", N, s, (double)y1);
        }
        float gr[2] = {R == s ? qnan : 2.0f, R == s ? INFINITY : 2.0f};
        CHECK_EQ_INT(g->all_reduce(g, CO_TP_NORM_GRAD_AR, NULL, gr, 2, DT_FP32, COMM_SUM, &e), ST_OK);
        if (mine) {
            CHECKF(isnan(gr[0]), "np%d TP gradient NaN from rank %d: %a", N, s, (double)gr[0]);
            CHECKF(isinf(gr[1]) && gr[1] > 0, "np%d TP gradient +Inf from rank %d: %a", N, s, (double)gr[1]);
        } else {
            CHECK_NEAR(gr[0], 4.0, 0.0);
            CHECK_NEAR(gr[1], 4.0, 0.0);
        }
    }
    g->destroy(g);
}

/* Non-finite values from any rank through the gradient all-reduce's buckets (model_reduce_grads): four FP32
 * gradients, a GEMM one g[0..3), another g[3..7) right after it (one class and dtype, back to back: one bucket of
 * 7 elements; an "other" one there would be its own class's bucket), g[7] a gap no parameter holds, a GEMM one
 * g[8..10) (its own bucket), and an expert one x[0..2) over the EDP group (ranks of one parity; np 2: each rank alone beside another, so not reduced). For each
 * source rank s: s sends a quiet NaN at g[1], +Inf at g[4], -Inf at g[9] and NaN at x[0]; every other element is
 * R + 1. Every rank gets NaN at g[1], +Inf at g[4], -Inf at g[9]; the other elements the sum of R + 1 over the
 * ranks, N(N + 1)/2: np 2 3, np 4 10; the gap keeps 100 + R. The experts: np 4, NaN at x[0] in s's group and
 * x[1] its group's sum (R % 2 + 1) + (R % 2 + 3) = 2·(R % 2) + 4, the other group both that; np 2 unchanged.
 * Counted (on the world communicator, where a split group counts): 2 calls on dp_grad_allreduce, 9 x 4 = 36 B
 * of payload; np 4 1 call of 2 x 4 = 8 B on edp_grad_allreduce. */
static void test_nonfinite_grad_buckets(void)
{
    Err e;
    Comm *g2 = NULL;
    CHECK_EQ_INT(comm_split(C, R % 2, R, &g2, &e), ST_OK);
    if (!g2) return;
    static Model m; /* every field zero but the ones the reduction reads */
    ModelParam p[4];
    memset(p, 0, sizeof p);
    float g[10], x[2];
    m.params = p, m.nparams = 4, m.comm = C, m.dpc = C, m.edpc = g2, m.bk = NULL;
    m.recipe.gemm.dt[STATE_GRAD] = DT_FP32, m.recipe.other.dt[STATE_GRAD] = DT_FP32;
    p[0] = (ModelParam){.grad = g, .numel = 3, .gemm = 1};
    p[1] = (ModelParam){.grad = g + 3, .numel = 4, .gemm = 1};
    p[2] = (ModelParam){.grad = g + 8, .numel = 2, .gemm = 1};
    p[3] = (ModelParam){.grad = x, .numel = 2, .gemm = 1, .expert = 1};
    uint32_t qnan_bits = 0x7fc00123u;
    float qnan;
    memcpy(&qnan, &qnan_bits, sizeof qnan);
    const double sum = N == 2 ? 3.0 : 10.0, esum = 2.0 * (R % 2) + 4.0;
    for (int s = 0; s < N; s++) {
        for (int k = 0; k < 10; k++) g[k] = (float)(R + 1);
        g[7] = (float)(100 + R);
        x[0] = x[1] = (float)(R + 1);
        if (R == s) g[1] = qnan, g[4] = INFINITY, g[9] = -INFINITY, x[0] = qnan;
        const CommStats d0 = C->stats[CO_DP_GRAD_AR], e0 = C->stats[CO_EDP_GRAD_AR];
        CHECK_EQ_INT(model_reduce_grads(&m, &e), ST_OK);
        for (int k = 0; k < 10; k++) {
            if (k == 1)
                CHECKF(isnan(g[k]), "np%d bucket NaN from rank %d: %a", N, s, (double)g[k]);
            else if (k == 4)
                CHECKF(isinf(g[k]) && g[k] > 0, "np%d bucket +Inf from rank %d: %a", N, s, (double)g[k]);
            else if (k == 9)
                CHECKF(isinf(g[k]) && g[k] < 0, "np%d bucket -Inf from rank %d: %a", N, s, (double)g[k]);
            else
                CHECK_NEAR(g[k], k == 7 ? 100.0 + R : sum, 0.0);
        }
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_AR].calls - d0.calls, 2);
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_AR].payload_bytes - d0.payload_bytes, 36);
        if (N == 2) {
            CHECKF(R == s ? isnan(x[0]) : x[0] == (float)(R + 1), "np2 expert alone: %a", (double)x[0]);
            CHECK_NEAR(x[1], R + 1.0, 0.0);
            CHECK_EQ_U64(C->stats[CO_EDP_GRAD_AR].calls - e0.calls, 0);
        } else {
            if (R % 2 == s % 2)
                CHECKF(isnan(x[0]), "np4 expert NaN from rank %d: %a", s, (double)x[0]);
            else
                CHECK_NEAR(x[0], esum, 0.0);
            CHECK_NEAR(x[1], esum, 0.0);
            CHECK_EQ_U64(C->stats[CO_EDP_GRAD_AR].calls - e0.calls, 1);
            CHECK_EQ_U64(C->stats[CO_EDP_GRAD_AR].payload_bytes - e0.payload_bytes, 8);
        }
    }
    free(m.grad_spans), free(m.grad_first); /* the buckets model_reduce_grads made at its first call */
    g2->destroy(g2);
}

/* Non-finite values from any rank through the distributed optimizer's buckets (model_shard_reduce, then
 * model_shard_gather): a class's gradients in one buffer, one reduce-scatter each, rank r's segment its flat
 * range. The GEMM class: two FP32 gradients back to back, g[0..3) and g[3..7), E = 7; the others one, o[0..3),
 * E = 3. S = ceil(E / N): np 2 4 and 2 (rank 1 owns g[4..7), o[2..3)); np 4 2 and 1 (rank 3 owns g[6..7) and
 * nothing of o). For each source rank s: s sends a quiet NaN at g[1], +Inf at g[5], -Inf at o[2]; every other
 * element is R + 1. The owner of g[1], g[5], o[2] gets NaN, +Inf, -Inf; every other owned element the sum,
 * N(N + 1)/2; an element a rank does not own keeps its value. Counted: 2 calls on dp_grad_reducescatter
 * (one per class), (7 + 3) x 4 = 40 B. Then the weights (BF16, their own buffer): rank s writes NaN into
 * every element it owns, every other rank its own rank; after the 2 all-gathers every rank holds s's NaN
 * in s's segments and rank r's value in r's. */
static void test_nonfinite_shard_buckets(void)
{
    Err e;
    static Model m; /* every field zero but the ones the reduce-scatter and the all-gather read */
    ModelParam p[3];
    memset(p, 0, sizeof p);
    float g[7], o[3];
    uint16_t w[7], wo[3];
    m.params = p, m.nparams = 3, m.comm = C, m.dpc = C, m.edpc = C, m.bk = NULL, m.shard_ways = (uint32_t)N;
    m.recipe.gemm.dt[STATE_GRAD] = m.recipe.other.dt[STATE_GRAD] = DT_FP32;
    m.recipe.gemm.dt[STATE_WEIGHT] = m.recipe.other.dt[STATE_WEIGHT] = DT_BF16;
    p[0] = (ModelParam){.grad = g, .weight = w, .numel = 3, .gemm = 1, .flat = 0};
    p[1] = (ModelParam){.grad = g + 3, .weight = w + 3, .numel = 4, .gemm = 1, .flat = 3};
    p[2] = (ModelParam){.grad = o, .weight = wo, .numel = 3, .flat = 0};
    m.class_elems[MODEL_CLASS_GEMM] = 7, m.class_elems[MODEL_CLASS_OTHER] = 3;
    m.class_ways[MODEL_CLASS_GEMM] = m.class_ways[MODEL_CLASS_OTHER] = (uint32_t)N;
    m.class_ways[MODEL_CLASS_EXPERT] = 1;
    m.shard_elems[MODEL_CLASS_GEMM] = N == 2 ? 4 : 2, m.shard_elems[MODEL_CLASS_OTHER] = N == 2 ? 2 : 1;
    uint32_t qnan_bits = 0x7fc00123u;
    float qnan;
    memcpy(&qnan, &qnan_bits, sizeof qnan);
    const uint64_t Sg = m.shard_elems[MODEL_CLASS_GEMM], So = m.shard_elems[MODEL_CLASS_OTHER];
    const double sum = N * (N + 1) / 2.0;
    for (int s = 0; s < N; s++) {
        for (int k = 0; k < 7; k++) g[k] = (float)(R + 1);
        for (int k = 0; k < 3; k++) o[k] = (float)(R + 1);
        if (R == s) g[1] = qnan, g[5] = INFINITY, o[2] = -INFINITY;
        float g0[7], o0[3];
        memcpy(g0, g, sizeof g), memcpy(o0, o, sizeof o);
        const CommStats d0 = C->stats[CO_DP_GRAD_RS];
        CHECK_EQ_INT(model_shard_reduce(&m, &e), ST_OK);
        for (uint64_t k = 0; k < 7; k++) {
            if (k / Sg != (uint64_t)R) {
                CHECKF(same_bits(g[k], g0[k]), "np%d from rank %d: gradient %d not owned changed", N, s, (int)k);
            } else if (k == 1) {
                CHECKF(isnan(g[k]), "np%d bucket reduce-scatter NaN from rank %d: %a", N, s, (double)g[k]);
            } else if (k == 5) {
                CHECKF(isinf(g[k]) && g[k] > 0, "np%d bucket reduce-scatter +Inf from rank %d: %a", N, s, (double)g[k]);
            } else {
                CHECK_NEAR(g[k], sum, 0.0);
            }
        }
        for (uint64_t k = 0; k < 3; k++) {
            if (k / So != (uint64_t)R)
                CHECKF(same_bits(o[k], o0[k]), "np%d from rank %d: gradient o%d not owned changed", N, s, (int)k);
            else if (k == 2)
                CHECKF(isinf(o[k]) && o[k] < 0, "np%d bucket reduce-scatter -Inf from rank %d: %a", N, s, (double)o[k]);
            else
                CHECK_NEAR(o[k], sum, 0.0);
        }
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].calls - d0.calls, 2);
        CHECK_EQ_U64(C->stats[CO_DP_GRAD_RS].payload_bytes - d0.payload_bytes, 40);
        /* the weights: each rank's own segments written, then gathered */
        const uint16_t nan16 = bf16_encode(qnan), mine = R == s ? nan16 : bf16_encode((float)R);
        for (uint64_t k = 0; k < 7; k++) w[k] = k / Sg == (uint64_t)R ? mine : 0;
        for (uint64_t k = 0; k < 3; k++) wo[k] = k / So == (uint64_t)R ? mine : 0;
        const CommStats a0 = C->stats[CO_DP_PARAM_AG];
        CHECK_EQ_INT(model_shard_gather(&m, &e), ST_OK);
        for (uint64_t k = 0; k < 10; k++) {
            const uint64_t owner = k < 7 ? k / Sg : (k - 7) / So;
            const float v = bf16_decode(k < 7 ? w[k] : wo[k - 7]);
            if ((int)owner == s)
                CHECKF(isnan(v), "np%d bucket all-gather NaN from rank %d, element %d: %a", N, s, (int)k, (double)v);
            else
                CHECK_NEAR(v, (double)owner, 0.0);
        }
        CHECK_EQ_U64(C->stats[CO_DP_PARAM_AG].calls - a0.calls, 2);
        CHECK_EQ_U64(C->stats[CO_DP_PARAM_AG].payload_bytes - a0.payload_bytes, 20);
    }
}

int main(int argc, char **argv)
{
    C = mpi_world(&argc, &argv);
    mpi_need_2_or_4();
    if (R == 0) printf("checks: 9\n");
    MRUN(test_all_to_all_v);
    MRUN(test_all_to_all_v_disagree);
    MRUN(test_nonfinite_from_any_rank);
    MRUN(test_nonfinite_edp_reduce_scatter_ep);
    MRUN(test_nonfinite_edp_reduce_scatter_stage);
    MRUN(test_fp8_payload_bits);
    MRUN(test_nonfinite_tp_mla);
    MRUN(test_nonfinite_grad_buckets);
    MRUN(test_nonfinite_shard_buckets);
    return mpi_done(C);
}
