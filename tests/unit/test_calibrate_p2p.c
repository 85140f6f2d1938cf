/* tests/unit/test_calibrate_p2p.c — calibrate's send/recv sweep as a pipeline meets it
 * (exec/measure/calibrate_link.c p2p_call) against a backend that records its kernels and a communicator that
 * records its calls, with the time each began: the order at both ranks of a pair and the compute around each
 * send; and the compute it puts there (cal_p2p_gap); the compute before every call of the all-reduce, reduce-scatter
 * and all-gather sweeps (cal_coll_gap), and none beyond one pass before the broadcast's and the all-to-all's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exec/measure/calibrate_link.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum { EV_ADD_PAYLOAD = 1, EV_SYNC, EV_SEND, EV_RECV, EV_COLL }; /* EV_COLL: arg = its CommOp */
enum { MAX_EVENTS = 8192 };

static struct {
    Backend *cpu;
    int ev[MAX_EVENTS];
    uint64_t arg[MAX_EVENTS]; /* elements */
    double t[MAX_EVENTS];     /* when it began (comm_now_s) */
    int n, over;
} rec;

static void record(int what, uint64_t arg)
{
    if (rec.n >= MAX_EVENTS) {
        rec.over = 1;
        return;
    }
    rec.ev[rec.n] = what, rec.t[rec.n] = comm_now_s();
    rec.arg[rec.n++] = arg;
}

/* A kernel is recorded, not run, and takes add_s (the clock spun; 0: none). */
static double add_s;
static Status r_add(Backend *bk, const void *a, const void *b, void *out, Dtype dt, uint64_t n, Err *e)
{
    (void)bk, (void)e;
    CHECK(a == b && b == out && dt == DT_FP32);
    record(EV_ADD_PAYLOAD, n);
    for (double t0 = comm_now_s(); comm_now_s() - t0 < add_s;) {
    }
    return ST_OK;
}
static Status r_memset0(Backend *bk, void *p, uint64_t bytes, Err *e) { return rec.cpu->memset0(bk, p, bytes, e); }

/* Every call takes 1 us + 1 ns a byte in the op's own counter; the slowest-rank sync (a MAX) is recorded. */
static void script_call(Comm *c, CollectiveId id, uint64_t S)
{
    c->stats[id].calls++;
    c->stats[id].seconds += 1e-6 + (double)S * 1e-9;
}
static Status s_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, CommReduce op,
                           Err *e)
{
    (void)bk, (void)buf, (void)e;
    if (op == COMM_MAX) record(EV_SYNC, count);
    if (id != COMM_UNPLANNED) record(EV_COLL, OP_ALL_REDUCE);
    if (id != COMM_UNPLANNED) script_call(c, id, count * dtype_bytes(dt));
    return ST_OK;
}
static Status s_rs(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t n, Dtype dt, CommReduce op,
                   Err *e)
{
    (void)bk, (void)s, (void)r, (void)op, (void)e;
    record(EV_COLL, OP_REDUCE_SCATTER);
    script_call(c, id, 2 * n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_ag(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t n, Dtype dt, Err *e)
{
    (void)bk, (void)s, (void)r, (void)e;
    record(EV_COLL, OP_ALL_GATHER);
    script_call(c, id, 2 * n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_bcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int root, Err *e)
{
    (void)bk, (void)buf, (void)root, (void)e;
    record(EV_COLL, OP_BROADCAST);
    script_call(c, id, n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_a2a(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *sc, void *recv,
                    const uint64_t *rc, Dtype dt, Err *e)
{
    (void)bk, (void)send, (void)recv, (void)rc, (void)e;
    record(EV_COLL, OP_ALL_TO_ALL);
    script_call(c, id, (sc[0] + sc[1]) * dtype_bytes(dt));
    return ST_OK;
}
static Status s_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    (void)bk, (void)buf, (void)e;
    CHECK(peer == (c->rank ^ 1));
    record(EV_SEND, n);
    script_call(c, id, n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    (void)id, (void)bk, (void)buf, (void)dt, (void)e;
    CHECK(peer == (c->rank ^ 1));
    record(EV_RECV, n);
    return ST_OK;
}

/* Send/recv as 1F1B's neighbouring stages meet it (calibrate_link.c p2p_call), at both ranks of a pair: rank 0
 * (the earlier stage) computes a forward (the layer's kernel for fwd seconds, at least one pass), writes the
 * payload, sends, computes the next forward while rank 1 receives, receives; rank 1 receives, computes a forward
 * and a backward (fwd + bwd), writes the payload, sends, computes the next forward; then the slowest-rank sync.
 * Each send/recv call carries S / 2 BF16 elements. With fwd 0.25 ms, bwd 0.3 ms and kernels of 0.1 ms: rank 0's
 * compute before and after its send 0.25 ms at least (3 passes), rank 1's 0.55 before (6) and 0.25 after. */
static void p2p_rank(int rank, double fwd, double bwd, double kernel)
{
    Err e;
    Backend bk, *cpu = fx_cpu_copy(&bk);
    if (!cpu) return;
    memset(&rec, 0, sizeof rec);
    rec.cpu = cpu;
    bk.add = r_add, bk.memset0 = r_memset0;
    Comm c;
    memset(&c, 0, sizeof c);
    c.name = "mpi", c.rank = rank, c.size = 2;
    c.all_reduce = s_all_reduce, c.reduce_scatter = s_rs, c.all_gather = s_ag, c.broadcast = s_bcast;
    c.send = s_send, c.recv = s_recv, c.all_to_all_v = s_a2a;
    static Calibration cal;
    memset(&cal, 0, sizeof cal);
    cal.p2p_fwd_s = fwd, cal.p2p_bwd_s = bwd;
    const double before = rank ? fwd + bwd : fwd, after = fwd;
    add_s = kernel;
    const uint64_t layer = 1 << 16; /* 16,384 floats */
    Status st = calibrate_links(&bk, &c, 4096, layer, NULL, 0, NULL, 0, 1, &cal, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK(!rec.over);
    /* the calls of the send/recv sweep (4 sizes x (1 warm-up + 4 timed) = 20), each from its send or recv back to
     * the one before it: kernels of the layer (K), the payload's pass (P, S / 4 floats), send (S) and recv (R) of
     * S / 2 elements in that order */
    static const int lo[] = {EV_ADD_PAYLOAD, EV_ADD_PAYLOAD, EV_SEND, EV_ADD_PAYLOAD, EV_RECV};
    static const int hi[] = {EV_RECV, EV_ADD_PAYLOAD, EV_ADD_PAYLOAD, EV_SEND, EV_ADD_PAYLOAD};
    const int *want = rank ? hi : lo;
    int calls = 0;
    for (int i = 0; i < rec.n; i++) {
        if (rec.ev[i] != EV_SEND || calls >= 20) continue;
        const uint64_t n = rec.arg[i], S = 2 * n;
        calls++;
        /* back from the send to the call's first event: rank 0's compute (one or more K), P, S; rank 1's R, K.., P */
        int j = i - 1;
        CHECK(j >= 0 && rec.ev[j] == EV_ADD_PAYLOAD && rec.arg[j] == S / 4);
        int k = j - 1;
        while (k >= 0 && rec.ev[k] == EV_ADD_PAYLOAD && rec.arg[k] == layer / 4) k--;
        CHECKF(j - 1 - k >= 1, "call %d: no compute before its send", calls);
        /* recorded as each begins: from the event before the compute to the payload's pass, the gap at least */
        CHECKF(k >= 0 && rec.t[j] - rec.t[k] >= before, "call %d: %g s of compute before its send", calls,
               k >= 0 ? rec.t[j] - rec.t[k] : -1.0);
        CHECK(k >= 0 && rec.ev[k] == (rank ? want[0] : EV_SYNC) && (!rank || rec.arg[k] == n));
        /* forward from the send: the compute on (K.. for the gap), then rank 0's R, rank 1's sync */
        int m = i + 1;
        while (m < rec.n && rec.ev[m] == EV_ADD_PAYLOAD && rec.arg[m] == layer / 4) m++;
        CHECKF(m - i - 1 >= 1, "call %d: no compute after its send", calls);
        CHECKF(m < rec.n && rec.t[m] - rec.t[i] >= after, "call %d: %g s of compute after its send", calls,
               m < rec.n ? rec.t[m] - rec.t[i] : -1.0);
        CHECK(m < rec.n && rec.ev[m] == (rank ? EV_SYNC : want[4]));
        if (!rank) CHECK(m < rec.n && rec.arg[m] == n);
    }
    CHECK_EQ_INT(calls, 20);
    add_s = 0;
    cpu->destroy(cpu);
}
static void test_p2p_pipelined(void)
{
    p2p_rank(0, 0, 0, 0);
    p2p_rank(1, 0, 0, 0);
    p2p_rank(0, 0.25e-3, 0.3e-3, 0.1e-3);
    p2p_rank(1, 0.25e-3, 0.3e-3, 0.1e-3);
}

/* The gaps: a micro-batch's forward (the fprop GEMMs) or backward (dgrad and wgrad) through one layer on the BF16
 * path, not the head's, each at most CAL_P2P_GAP_MAX (20 ms). */
static void test_p2p_gap(void)
{
    CalGemm g[7];
    memset(g, 0, sizeof g);
    static const struct {
        const char *what;
        int path;
        double s;
    } rows[7] = {
        {"qkv fprop", CAL_PATH_BF16, 1e-3},  {"fc1 dgrad", CAL_PATH_BF16, 2.5e-3}, {"fc2 wgrad", CAL_PATH_BF16, 0.5e-3},
        {"head fprop", CAL_PATH_BF16, 7e-3}, {"qkv fprop", CAL_PATH_FP8, 3e-3},    {"proj fprop", CAL_PATH_FP32, 4e-3},
        {"fc2 fprop", CAL_PATH_BF16, 2e-3},
    };
    for (int i = 0; i < 7; i++) {
        snprintf(g[i].what, sizeof g[i].what, "%s", rows[i].what);
        g[i].path = rows[i].path, g[i].seconds = rows[i].s;
    }
    /* forward 1 + 2 = 3 ms, backward 2.5 + 0.5 = 3 ms: the head's 7, the FP8 3 and the FP32 4 left out */
    CHECK_REL(cal_p2p_gap(g, 7, 0), 3e-3, 1e-12);
    CHECK_REL(cal_p2p_gap(g, 7, 1), 3e-3, 1e-12);
    CHECK(cal_p2p_gap(g, 0, 0) == 0 && cal_p2p_gap(g, 0, 1) == 0);
    /* forward 15 + 2 = 17 ms: under the cap; 25 + 2 = 27: capped at 20 (the backward's 3 as it was) */
    g[0].seconds = 15e-3;
    CHECK_REL(cal_p2p_gap(g, 7, 0), 17e-3, 1e-12);
    g[0].seconds = 25e-3;
    CHECK_REL(cal_p2p_gap(g, 7, 0), CAL_P2P_GAP_MAX, 1e-12);
    CHECK_REL(cal_p2p_gap(g, 7, 1), 3e-3, 1e-12);
}

/* The compute before each call of the payload sweeps (calibrate_link.c sweep_size), at rank 0 of 2: the layer's
 * kernel (K, layer / 4 floats) repeated for cal_coll_gap(p2p_fwd_s) = fwd / 2 where cal_coll_gapped (all-reduce,
 * reduce-scatter, all-gather), then the payload's pass (P), then the call. With fwd 0.4 ms and kernels of 0.1 ms:
 * 0.2 ms of K before each such call, its last pass begun inside the 0.2 ms (2 passes on an idle core; one where
 * the scheduler stretched the first past it); the broadcast's and the all-to-all's one K. The tied embedding's
 * gradient sweep (the last all-reduce one) at rank 0, the earlier stage, runs K for a layer's backward, bwd 0.3 ms,
 * more: the gap's passes, then from the end of the first pass that ends 0.2 ms in, 0.3 ms of passes more, the last
 * begun inside it.
 * Every call of the eleven sweeps but send/recv is looked at: 4 sizes (64 B x 4^i up to 4,096) x (1 warm-up + 4)
 * calls each, the all-to-all's from its smallest call too (2 x 2 BF16 elements, 8 B: 5 sizes), so 9 x 20 gapped
 * (the gradient sweeps too: their flush falls between P and the call, no backend event), 20 + 25 not. */
static void test_coll_gap_calls(void)
{
    Err e;
    Backend *cpu = NULL;
    if (backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    memset(&rec, 0, sizeof rec);
    rec.cpu = cpu;
    Backend bk = *cpu;
    bk.add = r_add, bk.memset0 = r_memset0;
    Comm c;
    memset(&c, 0, sizeof c);
    c.name = "mpi", c.rank = 0, c.size = 2;
    c.all_reduce = s_all_reduce, c.reduce_scatter = s_rs, c.all_gather = s_ag, c.broadcast = s_bcast;
    c.send = s_send, c.recv = s_recv, c.all_to_all_v = s_a2a;
    static Calibration cal;
    memset(&cal, 0, sizeof cal);
    cal.p2p_fwd_s = 0.4e-3, cal.p2p_bwd_s = 0.3e-3;
    add_s = 0.1e-3;
    const uint64_t layer = 1 << 16;
    Status st = calibrate_links(&bk, &c, 4096, layer, NULL, 0, NULL, 0, 1, &cal, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK(!rec.over);
    CHECK_REL(cal.coll_gap_s, 0.2e-3, 1e-12);
    int gapped = 0, other = 0, ar = 0;
    for (int i = 0; i < rec.n; i++) {
        if (rec.ev[i] != EV_COLL) continue;
        const int op = (int)rec.arg[i], gap = cal_coll_gapped((CommOp)op);
        const int emb = op == OP_ALL_REDUCE && ar++ >= 4 * 20; /* the fifth all-reduce sweep's calls */
        int from = 0;  /* emb: the first pass of the backward's loop, after the gap's (a pass ends at the next event) */
        int j = i - 1; /* P, then the K before it */
        CHECKF(j >= 0 && rec.ev[j] == EV_ADD_PAYLOAD && rec.arg[j] != layer / 4, "op %d: no payload pass", op);
        int k = j - 1;
        while (k >= 0 && rec.ev[k] == EV_ADD_PAYLOAD && rec.arg[k] == layer / 4) k--;
        const int passes = j - 1 - k;
        for (from = k + 2; emb && from < j && rec.t[from] - rec.t[k + 1] < 0.2e-3;) from++;
        if (emb) { /* the gap's loop as below, then the backward's from its end */
            CHECKF(from < j && rec.t[j] - rec.t[from] >= 0.3e-3 && rec.t[j - 1] - rec.t[from] < 0.3e-3,
                   "op %d (embedding): %d passes, %g s after the gap's", op, passes,
                   from < j ? rec.t[j] - rec.t[from] : -1.0);
            gapped++;
        } else if (gap) { /* from the first K's start to P's: the gap at least; the last K began inside it */
            CHECKF(passes >= 1 && rec.t[j] - rec.t[k + 1] >= 0.2e-3 && rec.t[j - 1] - rec.t[k + 1] < 0.2e-3,
                   "op %d: %d passes over %g s", op, passes, rec.t[j] - rec.t[k + 1]);
            gapped++;
        } else {
            CHECKF(passes == 1, "op %d: %d passes", op, passes);
            other++;
        }
    }
    CHECK_EQ_INT(gapped, 9 * 20);
    CHECK_EQ_INT(ar, 5 * 20);
    CHECK_EQ_INT(other, 20 + 25);
    add_s = 0;
    cpu->destroy(cpu);
}

/* cal_coll_gap: half a layer's forward, fwd_s / 2 (3 ms -> 1.5 ms; the 20 ms cap of cal_p2p_gap -> 10 ms), 0 for
 * none; cal_coll_gapped: the three ops TP and DP make between kernels. */
static void test_coll_gap(void)
{
    static const struct {
        double fwd, gap;
    } g[] = {{3e-3, 1.5e-3}, {CAL_P2P_GAP_MAX, 10e-3}, {0.5e-3, 0.25e-3}, {0, 0}, {-1e-3, 0}, {NAN, 0}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        CHECKF(fabs(cal_coll_gap(g[i].fwd) - g[i].gap) <= 1e-15, "row %zu: %g", i, cal_coll_gap(g[i].fwd));
    static const struct {
        CommOp op;
        int gapped;
    } o[] = {{OP_ALL_REDUCE, 1}, {OP_REDUCE_SCATTER, 1}, {OP_ALL_GATHER, 1},
             {OP_SEND_RECV, 0},  {OP_BROADCAST, 0},      {OP_ALL_TO_ALL, 0}};
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) CHECK_EQ_INT(cal_coll_gapped(o[i].op), o[i].gapped);
}

int main(void)
{
    RUN(test_p2p_pipelined);
    RUN(test_p2p_gap);
    RUN(test_coll_gap_calls);
    RUN(test_coll_gap);
    return test_summary();
}
