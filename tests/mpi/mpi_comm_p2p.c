/* tests/mpi/mpi_comm_p2p.c — the MPI communicator's sends and receives (exec/comm/comm_mpi.c) over 2 or 4
 * ranks: a ring, empty messages, a receive's wait counted apart from its transfer, buffered sends freed as they
 * complete; run by tests/cli/mpi_comm.sh under mpirun -np 2 and -np 4, as mpi_comm.c is (rank 0 prints
 * "ok - npN: name" / "FAIL - npN: name", "checks: K" and the summary line). Expected values are worked by hand
 * in the comments. */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include "exec/comm/comm_mpi.h"
#include "fp8/codec.h"
#include "mpi_check.h"

static Comm *C;

/* A ring of E4M3 sends: rank r sends 1.5·r (exact in E4M3: 0, 1.5, 3, 4.5) to
 * r + 1 and receives 1.5·(r − 1 mod N); a send counts S = 1 byte, a recv nothing. */
static void test_send_recv_ring(void)
{
    uint8_t out = fp8_encode_f32(DT_E4M3, 1.5f * (float)R, FP8_SATFINITE), in = 0xff;
    int to = (R + 1) % N, from = (R + N - 1) % N;
    Err e;
    Status a, b;
    if (R % 2 == 0) {
        a = C->send(C, CO_PP_P2P, NULL, &out, 1, DT_E4M3, to, &e);
        b = C->recv(C, CO_PP_P2P, NULL, &in, 1, DT_E4M3, from, &e);
    } else {
        b = C->recv(C, CO_PP_P2P, NULL, &in, 1, DT_E4M3, from, &e);
        a = C->send(C, CO_PP_P2P, NULL, &out, 1, DT_E4M3, to, &e);
    }
    CHECK_EQ_INT(a, ST_OK);
    CHECK_EQ_INT(b, ST_OK);
    CHECK_NEAR(fp8_decode(DT_E4M3, in), 1.5 * from, 0.0);
    CHECK_EQ_U64(C->stats[CO_PP_P2P].payload_bytes, 1);
    CHECK_EQ_U64(C->stats[CO_PP_P2P].calls, 1);
    CHECK_EQ_INT(C->send(C, CO_PP_P2P, NULL, &out, 1, DT_E4M3, R, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "is not another rank");
}

/* An empty message is a message: rank r sends 0 FP32 to r + 1, then 3 (r, r + 0.5, r + 0.25, exact), and
 * receives the same two from r − 1 mod N in that order (MPI keeps a peer's order per id). Both sends count:
 * calls + 2, payload + 0 + 3·4 = 12 bytes, on the row and the total alike; a recv counts nothing. The ranks agree
 * on the sends' outcome before anyone receives, so a refused send fails the test instead of hanging a recv. */
static void test_send_recv_empty(void)
{
    const int to = (R + 1) % N, from = (R + N - 1) % N;
    const CommStats row = C->stats[CO_PP_P2P], total = C->total;
    float none = -1.0f, out[3] = {(float)R, (float)R + 0.5f, (float)R + 0.25f}, in[3] = {-1.0f, -1.0f, -1.0f};
    Err e = {0};
    Status a = C->send(C, CO_PP_P2P, NULL, &none, 0, DT_FP32, to, &e);
    CHECKF(a == ST_OK, "empty send: %s", e.msg);
    Status b = C->send(C, CO_PP_P2P, NULL, out, 3, DT_FP32, to, &e);
    CHECKF(b == ST_OK, "send of 3: %s", e.msg);
    int mine = a || b, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any) return;
    CHECKF(C->recv(C, CO_PP_P2P, NULL, &none, 0, DT_FP32, from, &e) == ST_OK, "empty recv: %s", e.msg);
    CHECK_NEAR(none, -1.0, 0.0); /* nothing written */
    CHECKF(C->recv(C, CO_PP_P2P, NULL, in, 3, DT_FP32, from, &e) == ST_OK, "recv of 3: %s", e.msg);
    CHECK_NEAR(in[0], from, 0.0);
    CHECK_NEAR(in[1], from + 0.5, 0.0);
    CHECK_NEAR(in[2], from + 0.25, 0.0);
    CHECK_EQ_U64(C->stats[CO_PP_P2P].calls - row.calls, 2);
    CHECK_EQ_U64(C->stats[CO_PP_P2P].payload_bytes - row.payload_bytes, 12);
    CHECK_NEAR(C->stats[CO_PP_P2P].bus_bytes - row.bus_bytes, 12.0, 0.0);
    CHECK_EQ_U64(C->total.calls - total.calls, 2);
    CHECK_EQ_U64(C->total.payload_bytes - total.payload_bytes, 12);
}

/* A recv's wait for its peer's send is counted apart from its transfer: pairs (2k, 2k + 1), the even rank
 * sleeps 200 ms after a barrier and sends 1,024 FP32 (4 KiB); the odd rank receives at once. Its row gains no
 * call and no byte (the send is counted at the sender), wait_s at least 100 ms (the 200 ms sleep less what
 * the barrier's exit skew could take from it), and seconds less than 100 ms: the sleep is not in the
 * transfer (4 KiB copied in microseconds). The sender's wait_s does not move (a send waits for nobody). */
static void test_recv_wait_apart(void)
{
    enum { NEL = 1024 };
    static float buf[NEL];
    const int peer = R ^ 1;
    const CommStats row = C->stats[CO_PP_P2P];
    Err e = {0};
    for (int i = 0; i < NEL; i++) buf[i] = (float)(R + i);
    MPI_Barrier(MPI_COMM_WORLD);
    Status st;
    if (R % 2 == 0) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        st = C->send(C, CO_PP_P2P, NULL, buf, NEL, DT_FP32, peer, &e);
    } else {
        st = C->recv(C, CO_PP_P2P, NULL, buf, NEL, DT_FP32, peer, &e);
    }
    CHECKF(st == ST_OK, "%s: %s", R % 2 ? "recv" : "send", e.msg);
    const CommStats *now = &C->stats[CO_PP_P2P];
    if (R % 2) {
        CHECK_NEAR(buf[7], (double)(peer + 7), 0.0);
        CHECK_EQ_U64(now->calls - row.calls, 0);
        CHECK_EQ_U64(now->payload_bytes - row.payload_bytes, 0);
        CHECKF(now->wait_s - row.wait_s >= 0.1, "recv waited %.6f s for a send 200 ms late", now->wait_s - row.wait_s);
        CHECKF(now->seconds - row.seconds >= 0 && now->seconds - row.seconds < 0.1,
               "recv's transfer counted %.6f s (the wait in it?)", now->seconds - row.seconds);
    } else {
        CHECK_EQ_U64(now->calls - row.calls, 1);
        CHECK_NEAR(now->wait_s - row.wait_s, 0.0, 0.0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Buffered sends are freed as they complete, not only at destroy: rank r sends K = 3 messages of 1 MiB
 * (2^18 FP32) to r + 1, and every rank receives its K after a barrier. Before the receives some or all of
 * the sends may be in flight (MPI may also have buffered them: no count is asserted there). Once every
 * rank has received its K (and a barrier), each send is complete, and the pending count must fall to 0
 * while MPI_Test drives progress (10 s bound; it takes microseconds). Message j holds j + 1 + r/8 in every
 * element (exact in FP32); each is checked at both ends. */
static void test_send_copies_freed(void)
{
    enum { K = 3, NEL = 1 << 18 };
    const int to = (R + 1) % N, from = (R + N - 1) % N;
    float *buf = malloc(NEL * sizeof *buf);
    CHECK(buf != NULL);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 70);
    Err e = {0};
    int bad = 0;
    for (int j = 0; j < K; j++) {
        for (int i = 0; i < NEL; i++) buf[i] = (float)(j + 1) + (float)R / 8.0f;
        if (C->send(C, CO_PP_P2P, NULL, buf, NEL, DT_FP32, to, &e)) bad = 1;
    }
    CHECKF(!bad, "send: %s", e.msg);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int j = 0; j < K && !bad; j++) {
        memset(buf, 0, NEL * sizeof *buf);
        if (C->recv(C, CO_PP_P2P, NULL, buf, NEL, DT_FP32, from, &e)) bad = 1;
        const float want = (float)(j + 1) + (float)from / 8.0f;
        CHECK_NEAR(buf[0], want, 0.0);
        CHECK_NEAR(buf[NEL - 1], want, 0.0);
    }
    CHECKF(!bad, "recv: %s", e.msg);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = comm_mpi_pending(C);
    for (const double t0 = MPI_Wtime(); left && MPI_Wtime() - t0 < 10.0;) left = comm_mpi_pending(C);
    CHECKF(left == 0, "%d completed sends still held", left);
    CHECK_EQ_INT(comm_mpi_pending(NULL), 0);
    free(buf);
}

int main(int argc, char **argv)
{
    C = mpi_world(&argc, &argv);
    mpi_need_2_or_4();
    if (R == 0) printf("checks: 4\n");
    MRUN(test_send_recv_ring);
    MRUN(test_send_recv_empty);
    MRUN(test_send_copies_freed);
    MRUN(test_recv_wait_apart);
    return mpi_done(C);
}
