/* tests/unit/test_calibrate_link.c — calibrate's collective sweep
 * (exec/measure/calibrate_link.c) against a scripted communicator and a
 * backend that records its operations: what precedes every timed call (the
 * caches evicted by an element-wise kernel over CAL_LINK_EVICT bytes — not a
 * memset, which the C library writes around the caches —, twice on the late
 * rank 0 over MPI, once over NCCL and on other ranks; then the payload touched,
 * as a run's gradient was just written), the calls per size (one warm-up, 4 x
 * reps for the smallest size and the two largest, reps for the others), and
 * the figures: each
 * size's median time is the communicator's seconds for the timed call, its bus
 * bandwidth S x 2(n-1)/n / t. Every op's sweep (calibrate_links) against a
 * scripted line per op and dtype: the kernel before each call, the sizes, the
 * lines recovered as fits. */
#include <math.h>
#include <string.h>

#include "exec/measure/calibrate_link.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* What the backend was asked to do, in order. */
enum { EV_ADD_EVICT = 1, EV_ADD_PAYLOAD, EV_MEMSET, EV_REDUCE, EV_SYNC };
enum { MAX_EVENTS = 8192 };

static struct {
    Backend *cpu;
    int ev[MAX_EVENTS];
    uint64_t arg[MAX_EVENTS]; /* elements (add, all-reduce) or bytes (memset) */
    int n;
    int over;
    int allocs, frees; /* the sweep's buffers: every one given back */
} rec;

static void record(int what, uint64_t arg)
{
    if (rec.n >= MAX_EVENTS) {
        rec.over = 1;
        return;
    }
    rec.ev[rec.n] = what;
    rec.arg[rec.n++] = arg;
}

/* The kernels are recorded, not run: the sequence is under test, not the caches. */
static Status r_add(Backend *bk, const void *a, const void *b, void *out, Dtype dt, uint64_t n, Err *e)
{
    (void)bk, (void)e;
    CHECK(a == b && b == out && dt == DT_FP32); /* x = x + x in place: zeros stay zeros */
    record(n == CAL_LINK_EVICT / 4 ? EV_ADD_EVICT : EV_ADD_PAYLOAD, n);
    return ST_OK;
}

static Status r_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    Status st = rec.cpu->alloc(bk, bytes, out, e);
    rec.allocs += !st;
    return st;
}

static void r_free(Backend *bk, void *p)
{
    rec.frees += p != NULL;
    rec.cpu->free(bk, p);
}

static Status r_memset0(Backend *bk, void *p, uint64_t bytes, Err *e)
{
    record(EV_MEMSET, bytes);
    return rec.cpu->memset0(bk, p, bytes, e);
}

/* The scripted link: a call of S bytes takes 2 us + S ns (0.5 us for the 1-float sync), counted as the
 * communicator counts a call; the sync's MAX over one real rank leaves the float as it is. */
static double script_s(uint64_t bytes) { return 2e-6 + (double)bytes * 1e-9; }

static Status r_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, CommReduce op,
                           Err *e)
{
    (void)id, (void)bk, (void)buf, (void)e;
    CHECK(dt == DT_FP32);
    int sync = op == COMM_MAX;
    record(sync ? EV_SYNC : EV_REDUCE, count);
    c->total.calls++;
    c->total.seconds += sync ? 0.5e-6 : script_s(count * 4);
    return ST_OK;
}

static void fake_comm(Comm *c, const char *name, int rank)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->rank = rank;
    c->size = 2;
    c->all_reduce = r_all_reduce;
}

/* The sweep over a 4 KiB top: 64, 256, 1024, 4096 B (cal_link_sizes); reps timed calls of 256 B, `big` of
 * the smallest (64 B, the latency) and of the two largest (1024 and 4096 B, the bandwidth): 4 x reps, at
 * most 64 (reps 3: 12; 16: 64; 17: 68, so 64). */
static void sweep_reps(const char *name, int rank, int evicts, int reps, int big, Calibration *cal)
{
    Err e;
    Backend bk, *cpu = fx_cpu_copy(&bk);
    if (!cpu) return;
    memset(&rec, 0, sizeof rec);
    rec.cpu = cpu;
    bk.add = r_add;
    bk.memset0 = r_memset0;
    bk.alloc = r_alloc;
    bk.free = r_free;
    Comm c;
    fake_comm(&c, name, rank);
    memset(cal, 0, sizeof *cal);
    Status st = calibrate_link(&bk, &c, 4096, reps, cal, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK(!rec.over);
    /* before the sweep: the largest payload and the eviction buffer zeroed once, nothing else */
    CHECK(rec.n > 2 && rec.ev[0] == EV_MEMSET && rec.arg[0] == 4096);
    CHECK(rec.ev[1] == EV_MEMSET && rec.arg[1] == CAL_LINK_EVICT);
    /* then per call: `evicts` eviction kernels, the payload's S / 4 floats touched, the timed all-reduce
     * of S / 4 floats, the slowest-rank sync; 1 warm-up + `big` calls of 64, 1024 and 4096 B, 1 + reps of 256 */
    static const uint64_t sizes[4] = {64, 256, 1024, 4096};
    const int calls[4] = {1 + big, 1 + reps, 1 + big, 1 + big};
    static int want[MAX_EVENTS];
    static uint64_t warg[MAX_EVENTS];
    int n = 2;
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < calls[s]; i++) {
            for (int k = 0; k < evicts; k++) want[n] = EV_ADD_EVICT, warg[n++] = CAL_LINK_EVICT / 4;
            want[n] = EV_ADD_PAYLOAD, warg[n++] = sizes[s] / 4;
            want[n] = EV_REDUCE, warg[n++] = sizes[s] / 4;
            want[n] = EV_SYNC, warg[n++] = 1;
        }
    int at = 2;
    while (at < n && at < rec.n && rec.ev[at] == want[at] && rec.arg[at] == warg[at]) at++;
    CHECKF(at == n && rec.n == n, "%s rank %d: event %d of %d is %d (%llu), wanted %d (%llu) of %d", name, rank, at,
           rec.n, at < rec.n ? rec.ev[at] : -1, at < rec.n ? (unsigned long long)rec.arg[at] : 0ull,
           at < n ? want[at] : -1, at < n ? (unsigned long long)warg[at] : 0ull, n);
    /* its three buffers (the payload, the eviction buffer, the sync float), each given back */
    CHECK_EQ_INT(rec.allocs, 3);
    CHECK_EQ_INT(rec.frees, 3);
    cpu->destroy(cpu);
}

static void sweep(const char *name, int rank, int evicts, Calibration *cal)
{
    sweep_reps(name, rank, evicts, 3, 12, cal);
}

static void check_figures(const Calibration *cal)
{
    CHECK_EQ_INT(cal->ncoll, 4);
    CHECK_EQ_INT(cal->ranks, 2);
    /* 64 B: 2 us + 64 ns = 2.064 us; busbw 64 x 2(2-1)/2 / 2.064e-6 = 31.007... MB/s; 4096 B: 6.096 us,
     * 671.9 MB/s. The time passes through a float (the slowest-rank sync): relative 1e-6. */
    CHECK_EQ_INT((int)cal->coll[0].payload, 64);
    CHECK_REL(cal->coll[0].seconds, 2.064e-6, 1e-6);
    CHECK_REL(cal->coll[0].busbw, 64.0 / 2.064e-6, 1e-6);
    CHECK_NEAR(cal->coll[0].spread, 0.0, 1e-6);
    CHECK_EQ_INT((int)cal->coll[3].payload, 4096);
    CHECK_REL(cal->coll[3].seconds, 6.096e-6, 1e-6);
    CHECK_REL(cal->coll[3].busbw, 4096.0 / 6.096e-6, 1e-6);
}

/* Over MPI rank 0 arrives late: two eviction kernels before each call; rank 1 one. */
static void test_mpi_ranks(void)
{
    static Calibration cal;
    sweep("mpi", 0, 2, &cal);
    check_figures(&cal);
    sweep("mpi", 1, 1, &cal);
    check_figures(&cal);
}

/* Over NCCL every rank arrives together (its device time would count a wait): one eviction each. */
static void test_nccl_together(void)
{
    static Calibration cal;
    sweep("nccl", 0, 1, &cal);
    check_figures(&cal);
}

/* The 4x sizes' repetitions are capped at 64 (the sweep keeps at most 64 times per size): reps 16 gives
 * exactly 64, reps 17 and 20 would give 68 and 80 and are cut to 64; 256 B keeps reps. */
static void test_reps_capped(void)
{
    static Calibration cal;
    sweep_reps("mpi", 1, 1, 16, 64, &cal);
    check_figures(&cal);
    sweep_reps("mpi", 1, 1, 17, 64, &cal);
    check_figures(&cal);
    sweep_reps("nccl", 0, 1, 20, 64, &cal);
    check_figures(&cal);
}

/* ---- every op (calibrate_links) against a scripted link: a call of op in dtype dt with payload S takes
 * A(op) + S x comm_bus_factor(op, 2) / B(op, dt), counted in the stats of the row it names ---- */
static double script_a(CommOp op) { return 1e-6 * (1.0 + (double)op); } /* 1, 2, 3, 4, 5, 6 us */
static double script_b(CommOp op, Dtype dt) /* GB/s: op + 1, halved for BF16, quartered for E4M3 */
{
    double b = 1e9 * (1.0 + (double)op);
    return dt == DT_BF16 ? b / 2 : dt == DT_E4M3 ? b / 4 : b;
}
static void script_call(Comm *c, CollectiveId id, CommOp op, Dtype dt, uint64_t S)
{
    c->stats[id].calls++;
    c->stats[id].seconds += script_a(op) + (double)S * comm_bus_factor(op, 2) / script_b(op, dt);
}
static Status s_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, CommReduce op,
                           Err *e)
{
    (void)bk, (void)buf, (void)op, (void)e;
    if (id != COMM_UNPLANNED) script_call(c, id, OP_ALL_REDUCE, dt, count * dtype_bytes(dt));
    return ST_OK;
}
static Status s_rs(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t n, Dtype dt, CommReduce op,
                   Err *e)
{
    (void)bk, (void)s, (void)r, (void)op, (void)e;
    script_call(c, id, OP_REDUCE_SCATTER, dt, 2 * n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_ag(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t n, Dtype dt, Err *e)
{
    (void)bk, (void)s, (void)r, (void)e;
    script_call(c, id, OP_ALL_GATHER, dt, 2 * n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_bcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int root, Err *e)
{
    (void)bk, (void)buf, (void)e;
    CHECK(root == 0);
    script_call(c, id, OP_BROADCAST, dt, n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    (void)bk, (void)buf, (void)e;
    CHECK(peer == (c->rank ^ 1));
    script_call(c, id, OP_SEND_RECV, dt, n * dtype_bytes(dt));
    return ST_OK;
}
static Status s_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    (void)c, (void)id, (void)bk, (void)buf, (void)n, (void)dt, (void)peer, (void)e;
    return ST_OK; /* counted nothing, as a run's recv */
}
static Status s_a2a(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *sc, void *recv,
                    const uint64_t *rc, Dtype dt, Err *e)
{
    (void)bk, (void)send, (void)recv, (void)e;
    CHECK(sc[0] == sc[1] && rc[0] == sc[0] && rc[1] == sc[1]); /* S / 2 to each rank */
    script_call(c, id, OP_ALL_TO_ALL, dt, (sc[0] + sc[1]) * dtype_bytes(dt));
    return ST_OK;
}

/* The gradient sweep's flushes of the communicator's receive buffer: how many, and the bytes of the last. */
static int flushes;
static uint64_t flushed;
static void s_flush(Comm *c, uint64_t bytes)
{
    (void)c;
    flushes++, flushed = bytes;
}

/* A 4 KiB top, 3 reps (12 timed calls per size), one layer of 1 MiB: 12 sweeps (all-reduce and reduce-scatter per
 * dtype path, the byte movers once, the FP32 all-reduce again as a gradient from memory, and again as the tied
 * embedding's gradient with the even rank a layer's backward late) of 64, 256, 1024, 4096 B and the run's TP payloads
 * 512 and 3,000 B (8,192 B, past the top, dropped); each timed call after one kernel over the layer's bytes and one
 * over the payload, and followed by another kernel over the layer's bytes; the scripted lines recovered exactly, one
 * range each: latency A(op) / steps (all-reduce 2 steps over 2 ranks, the others 1), bandwidth B(op, dt). Run as
 * rank 0 and as rank 1: only the even rank runs the embedding sweep's backward. */
static void every_op(int rank)
{
    Err e;
    Backend bk, *cpu = fx_cpu_copy(&bk);
    if (!cpu) return;
    memset(&rec, 0, sizeof rec);
    rec.cpu = cpu;
    bk.add = r_add, bk.memset0 = r_memset0, bk.alloc = r_alloc, bk.free = r_free;
    Comm c;
    fake_comm(&c, "mpi", rank);
    c.all_reduce = s_all_reduce, c.reduce_scatter = s_rs, c.all_gather = s_ag, c.broadcast = s_bcast;
    c.send = s_send, c.recv = s_recv, c.all_to_all_v = s_a2a, c.flush = s_flush;
    flushes = 0, flushed = 0;
    static Calibration cal;
    memset(&cal, 0, sizeof cal);
    const uint64_t layer = 1 << 20;
    /* the run's all-to-all payloads: 32 B (8 experts' counts, a size of the sweep's unit 8 B: kept) and 2,000 B
     * (carried as 2,000: 250 units of 8 B) — and 8,192 B, past the sweep's top, dropped */
    const uint64_t ep[3] = {32, 2000, 8192};
    /* the run's TP payloads: 512 B and 3,000 B (a whole unit of every sweep but the all-to-all's: 3,000 = 375 x 8 B,
     * the FP32 reduce-scatter's share of 2 ranks x 4 B) between the link sizes, and 8,192 B past the top */
    const uint64_t tp[3] = {512, 3000, 8192};
    Status st = calibrate_links(&bk, &c, 4096, layer, ep, 3, tp, 3, 3, &cal, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK(!rec.over);
    CHECK_EQ_INT(cal.nsweep, 12);
    CHECK_EQ_INT(cal.nrange, 12);
    /* calls (1 warm-up + 4 x 3 timed = 13 a size): 11 sweeps x 6 sizes (64, 256, 512, 1024, 3000, 4096) = 66 and the
     * all-to-all's 7 (its smallest call, 8 B over 2 ranks: 2 x 2 BF16 elements; 32 B; 64, 256, 1024; 2,000 B;
     * 4096) = 73 sizes, 949 calls; each the payload's kernel (S / 4 floats) once and the layer's (2^18 floats)
     * twice, before and after (a send/recv's both around its send, a gap of 0: one pass each): 1,898; on rank 0 the
     * embedding sweep's 6 x 13 calls one pass more each (its backward, a gap of 0: one pass): 1,976 */
    int kernels = 0, payloads = 0;
    for (int i = 0; i < rec.n; i++) {
        kernels += rec.ev[i] == EV_ADD_PAYLOAD && rec.arg[i] == layer / 4;
        payloads += rec.ev[i] == EV_ADD_PAYLOAD && rec.arg[i] <= 1024;
    }
    CHECK_EQ_INT(kernels, rank == 0 ? 1976 : 1898);
    CHECK_EQ_INT(payloads, 949);
    /* the two gradient sweeps' 6 sizes x 13 calls flush the receive buffer's first S bytes: 156, the last of
     * 4,096 B */
    CHECK_EQ_INT(flushes, 156);
    CHECK(flushed == 4096);
    static const Dtype want_dt[12] = {DT_FP32, DT_BF16, DT_E4M3, DT_FP32, DT_BF16, DT_E4M3,
                                      DT_BF16, DT_BF16, DT_BF16, DT_BF16, DT_FP32, DT_FP32};
    static const CommOp want_op[12] = {OP_ALL_REDUCE,     OP_ALL_REDUCE,     OP_ALL_REDUCE, OP_REDUCE_SCATTER,
                                       OP_REDUCE_SCATTER, OP_REDUCE_SCATTER, OP_ALL_GATHER, OP_SEND_RECV,
                                       OP_BROADCAST,      OP_ALL_TO_ALL,     OP_ALL_REDUCE, OP_ALL_REDUCE};
    static const LinkPath grad_path[12] = {[10] = LINK_PATH_FP32_GRAD, [11] = LINK_PATH_FP32_EMB};
    for (int k = 0; k < 12 && k < cal.nsweep; k++) {
        const CalSweep *s = &cal.sweep[k];
        CHECKF(s->op == want_op[k] && s->dtype == want_dt[k], "sweep %d: %s %s", k, comm_op_name(s->op),
               dtype_name(s->dtype));
        CHECK_EQ_INT(s->grad, k == 11 ? 2 : k == 10);
        const int a2a = want_op[k] == OP_ALL_TO_ALL, np = a2a ? 7 : 6;
        CHECK_EQ_INT(s->n, np);
        CHECK_EQ_INT((int)s->pt[np - 1].payload, 4096);
        static const int want_a2a[7] = {8, 32, 64, 256, 1024, 2000, 4096},
                         want_tp[6] = {64, 256, 512, 1024, 3000, 4096};
        for (int i = 0; i < np && i < s->n; i++) CHECK_EQ_INT((int)s->pt[i].payload, a2a ? want_a2a[i] : want_tp[i]);
        const CalRange *r = &cal.range[k];
        double steps = want_op[k] == OP_ALL_REDUCE ? 2 : 1;
        CHECK(r->fit.op == want_op[k] && r->fit.from == 0 && r->fit.to == 0 && r->count == np);
        CHECK(r->fit.path == (k >= 10 ? grad_path[k] : link_path_of(want_op[k], want_dt[k])));
        /* the times pass through a float (the slowest-rank sync): relative 1e-5 */
        CHECKF(fabs(r->fit.lat / (script_a(want_op[k]) / steps) - 1) < 1e-5, "sweep %d: latency %g", k, r->fit.lat);
        CHECKF(fabs(r->fit.bw / script_b(want_op[k], want_dt[k]) - 1) < 1e-5, "sweep %d: bandwidth %g", k, r->fit.bw);
    }
    /* its four buffers (payload, destination, the layer's, the sync float), each given back */
    CHECK_EQ_INT(rec.allocs, 4);
    CHECK_EQ_INT(rec.frees, 4);
    cpu->destroy(cpu);
}
static void test_every_op(void)
{
    every_op(0);
    every_op(1);
}

/* A communicator that knows its eager limit (scripted: 1,000 B) cuts send/recv's fit there and adds the all-to-all's
 * per-message sweep after the twelve: the run's messages are its payloads / 2 ranks (16, 1,000 and 4,096 B) beside L/16 = 62, L/4 = 250, L/2 =
 * 500, L, L + 1, 2L, 4L and 16L = 16,000 B, each call one E4M3 message of b bytes a rank (the script: 5 us +
 * 2b x 1/2 / (5 GB/s / 4)), so both protocols' lines come out at 5 us a message and 1.25 GB/s, split at 1,001 B. */
static Status s_eager(Comm *c, uint64_t max, uint64_t *out, Err *e)
{
    (void)c, (void)e;
    CHECK(max == (uint64_t)1 << 20);
    *out = 1000;
    return ST_OK;
}
static void test_per_message(void)
{
    Err e;
    Backend bk, *cpu = fx_cpu_copy(&bk);
    if (!cpu) return;
    memset(&rec, 0, sizeof rec);
    rec.cpu = cpu;
    bk.add = r_add, bk.memset0 = r_memset0, bk.alloc = r_alloc, bk.free = r_free;
    Comm c;
    fake_comm(&c, "mpi", 0);
    c.all_reduce = s_all_reduce, c.reduce_scatter = s_rs, c.all_gather = s_ag, c.broadcast = s_bcast;
    c.send = s_send, c.recv = s_recv, c.all_to_all_v = s_a2a, c.eager_limit = s_eager;
    static Calibration cal;
    memset(&cal, 0, sizeof cal);
    const uint64_t ep[3] = {32, 2000, 8192};
    Status st = calibrate_links(&bk, &c, 4096, 1 << 20, ep, 3, NULL, 0, 3, &cal, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(cal.nsweep, 13);
    CHECK_EQ_INT(cal.nrange, 15);
    CHECK(cal.eager_limit == 1000 && cal.msg_evict > 0);
    /* send/recv's sweep (the eighth: 64, 256, 1024, 4096 B, the script's one line) in two ranges cut at the limit,
     * L + 1 = 1001: 64 and 256 B eager, 1024 and 4096 B rendezvous, each the script's line */
    const CalRange *p = &cal.range[7];
    CHECK(p[0].fit.op == OP_SEND_RECV && p[0].fit.from == 0 && p[0].fit.to == 1001 && p[0].count == 2);
    CHECK(p[1].fit.op == OP_SEND_RECV && p[1].fit.from == 1001 && p[1].fit.to == 0 && p[1].count == 2);
    for (int k = 0; k < 2; k++) {
        CHECKF(fabs(p[k].fit.lat / script_a(OP_SEND_RECV) - 1) < 1e-5, "send/recv %d: latency %g", k, p[k].fit.lat);
        CHECKF(fabs(p[k].fit.bw / script_b(OP_SEND_RECV, DT_BF16) - 1) < 1e-5, "send/recv %d: bandwidth %g", k,
               p[k].fit.bw);
    }
    const CalSweep *s = &cal.sweep[12];
    CHECK(s->per_msg && s->op == OP_ALL_TO_ALL);
    static const int want[10] = {16, 62, 250, 500, 1000, 1001, 2000, 4000, 4096, 16000};
    CHECK_EQ_INT(s->n, 10);
    for (int i = 0; i < 10 && i < s->n; i++) CHECK_EQ_INT((int)s->pt[i].payload, want[i]);
    const CalRange *r = &cal.range[13];
    CHECK(r[0].fit.path == LINK_PATH_EAGER && r[0].fit.from == 0 && r[0].fit.to == 1001 && r[0].count == 5);
    CHECK(r[1].fit.path == LINK_PATH_RENDEZVOUS && r[1].fit.from == 1001 && r[1].fit.to == 0 && r[1].count == 5);
    for (int k = 0; k < 2; k++) { /* the times pass through a float (the slowest-rank sync): relative 1e-5 */
        CHECKF(fabs(r[k].fit.lat / 5e-6 - 1) < 1e-5, "range %d: latency %g", k, r[k].fit.lat);
        CHECKF(fabs(r[k].fit.bw / 1.25e9 - 1) < 1e-5, "range %d: bandwidth %g", k, r[k].fit.bw);
    }
    /* judged per protocol (cal_msg_figures) at 4 x 3 = 12 calls a size: message bytes over summed call times, the
     * script's constant times an iqr of 0. Eager: 16 + 62 + 250 + 500 + 1000 = 1,828 B over 5 x 5 us + 1,828 B /
     * 1.25 GB/s = 26.4624 us: 69.079 MB/s; rendezvous: 1001 + 2000 + 4000 + 4096 + 16000 = 27,097 B over 25 us +
     * 21.6776 us = 46.6776 us: 580.51 MB/s */
    CHECK(cal.a2a_judged && cal.a2a_reps == 12);
    CHECKF(fabs(cal.a2a_bw[0] / (1828 / 26.4624e-6) - 1) < 1e-5, "eager %g", cal.a2a_bw[0]);
    CHECKF(fabs(cal.a2a_bw[1] / (27097 / 46.6776e-6) - 1) < 1e-5, "rendezvous %g", cal.a2a_bw[1]);
    CHECK(cal.a2a_iqr[0] == 0 && cal.a2a_iqr[1] == 0);
    /* the twelve sweeps' four buffers and the per-message sweep's four, each given back */
    CHECK_EQ_INT(rec.allocs, 8);
    CHECK_EQ_INT(rec.frees, 8);
    cpu->destroy(cpu);
}

/* A noisy clock: each size's 9 calls (1 warm-up, 8 timed) at the script's time x noise[call % 9]. With two slow
 * calls {5 (warm-up), 1, 1, 1, 1.5, 1, 1, 1.5, 1} the 8 timed sort 1 1 1 1 1 1 1.5 1.5: median 1, q1 = 1 of the
 * lower 4, q3 = (1 + 1.5) / 2 = 1.25 of the upper 4, iqr 0.25 / 1 = 25 %, past cal_iqr_max(8) = 15.2 %: the
 * profile's eager figure is NOISY. With one slow call (1.5 at the end only), q3 = 1: iqr 0, it holds. A re-measure
 * (the same sizes, all calls 1.2x slower) drifts by 1 / 1.2 - 1 = -16.7 %: past +-10 %. */
static double noise[9];
static int noise_calls;
static Status s_a2a_noisy(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *sc, void *recv,
                          const uint64_t *rc, Dtype dt, Err *e)
{
    const double before = c->stats[id].seconds;
    Status st = s_a2a(c, id, bk, send, sc, recv, rc, dt, e);
    c->stats[id].seconds = before + (c->stats[id].seconds - before) * noise[noise_calls++ % 9];
    return st;
}
static void noisy_sweep(const double *f, CalSweep *s, Calibration *cal)
{
    Err e;
    Backend *cpu = NULL;
    if (backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    Comm c;
    fake_comm(&c, "mpi", 0);
    c.all_to_all_v = s_a2a_noisy;
    memcpy(noise, f, sizeof noise), noise_calls = 0;
    const uint64_t sizes[4] = {100, 1000, 1001, 4000}; /* L = 1000: two eager, two rendezvous */
    Status st = calibrate_msg_sweep(cpu, &c, sizes, 4, 8, s, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(noise_calls, 36);
    memset(cal, 0, sizeof *cal);
    cal->reps = 7, cal->eager_limit = 1000, cal->a2a_reps = 8;
    cal->a2a_judged = !cal_msg_figures(s->pt, s->n, 1000, 2, cal->a2a_bw, cal->a2a_iqr);
    cal->rate[CAL_PATH_FP8] = cal->rate[CAL_PATH_BF16] = cal->rate[CAL_PATH_FP32] = 1e9; /* the rest: steady */
    cal->mem_bw = cal->elem_bw = cal->scaled_optim_bw = 1e9;
    cpu->destroy(cpu);
}
static void test_msg_judged(void)
{
    static CalSweep s;
    static Calibration cal, again;
    CalJudge j;
    const double two_slow[9] = {5, 1, 1, 1, 1.5, 1, 1, 1.5, 1}, one_slow[9] = {5, 1, 1, 1, 1, 1, 1, 1, 1.5};
    noisy_sweep(two_slow, &s, &cal);
    CHECK(cal.a2a_judged && s.n == 4);
    CHECKF(fabs(s.pt[0].iqr - 0.25) < 1e-6, "iqr %g", s.pt[0].iqr); /* through a float: 1e-6 */
    /* every point 25 %: the eager figure's iqr, weighted by the points' times, 25 % too */
    CHECKF(fabs(cal.a2a_iqr[0] - 0.25) < 1e-6 && fabs(cal.a2a_iqr[1] - 0.25) < 1e-6, "%g %g", cal.a2a_iqr[0],
           cal.a2a_iqr[1]);
    CHECK(cal_judge(&cal, NULL, &j) == 2 && j.noisy == 2 && j.worst_noisy >= CAL_FIG_A2A_EAGER);
    CHECK_REL(j.bound[CAL_FIG_A2A_EAGER], cal_iqr_max(8), 1e-15);
    noisy_sweep(one_slow, &s, &cal);
    CHECK(cal.a2a_iqr[0] == 0 && cal.a2a_iqr[1] == 0);
    CHECK(cal_judge(&cal, NULL, &j) == 0);
    const double slower[9] = {1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2};
    noisy_sweep(slower, &s, &again);
    CHECK(cal_judge(&cal, &again, &j) == 2 && j.drifted == 2 && j.noisy == 0);
    CHECKF(fabs(j.drift[CAL_FIG_A2A_EAGER] - (1 / 1.2 - 1)) < 1e-6, "drift %g", j.drift[CAL_FIG_A2A_EAGER]);
    /* not measured in the profile (one rank): skipped, whatever the re-measure says */
    cal.a2a_judged = 0;
    CHECK(cal_judge(&cal, &again, &j) == 0 && j.skip[CAL_FIG_A2A_EAGER] && j.skip[CAL_FIG_A2A_RNDV]);
    /* measured in the profile, missing in the re-measure: drifted, never a pass */
    cal.a2a_judged = 1, again.a2a_judged = 0;
    CHECK(cal_judge(&cal, &again, &j) == 2 && j.drifted == 2);
}

int main(void)
{
    RUN(test_every_op);
    RUN(test_per_message);
    RUN(test_msg_judged);
    RUN(test_mpi_ranks);
    RUN(test_nccl_together);
    RUN(test_reps_capped);
    return test_summary();
}
