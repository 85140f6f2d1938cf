/* exec/comm/comm.h — collectives: one struct of function pointers per
 * communication library (nccl-tests style), the place multi-rank runs plug in.
 *
 * Implementations: "single" (exec/comm/comm_single.c: one rank, collectives
 * degenerate to copies or nothing), "mpi" (exec/comm/comm_mpi.c: CPU ranks
 * launched by mpirun, host memory, reductions in a fixed rank order so results
 * are reproducible; see comm_mpi.h) and "nccl" (exec/cuda/comm_nccl.cu: GPU
 * ranks on the CUDA backend's stream; exec/comm/comm_wire.c decides the
 * dtype a buffer travels in from the NCCL the process loaded; under mpirun the
 * ranks are bootstrapped through MPI, exec/comm/comm_nccl_boot.h).
 *
 * Conventions:
 *  - Buffers are backend memory (device memory for CUDA); every call is issued
 *    in order with the backend's work.
 *  - Every call names the planner's collective it performs (CollectiveId,
 *    planner/plan.h: CO_DP_GRAD_AR, CO_AMAX_AR, ...), so what a run moves is
 *    counted per plan row and compared with the Plan's calls and bytes without
 *    any translation. The counts follow nccl-tests: payload S = total array
 *    bytes of a call; bus bytes = S · 2(n−1)/n for all-reduce, S · (n−1)/n for
 *    all-gather and reduce-scatter (0 on one rank).
 *  - FP8 payloads (DT_E4M3, DT_E5M2) travel as one byte per element; a
 *    reduction over FP8 values is the caller's business (FP8-LM reduces FP8
 *    gradients with a shared scale: all-reduce the amax first, MAX). */
#ifndef FP8PLAN_EXEC_COMM_COMM_H
#define FP8PLAN_EXEC_COMM_COMM_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "planner/plan.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Backend Backend;

typedef enum { COMM_SUM = 0, COMM_MAX, COMM_MIN } CommReduce;

typedef struct {
    uint64_t calls;
    uint64_t payload_bytes; /* total array bytes S summed over calls */
    double bus_bytes;       /* S · factor summed over calls */
    double seconds;         /* host monotonic-clock time inside the calls, summed (0 where not timed); over MPI
                               the collectives' from the moment every rank has arrived */
    double wait_s;          /* the collectives' time waiting for the other ranks to arrive (a barrier first: the
                               ranks' skew), summed */
} CommStats;

typedef struct Comm Comm;
struct Comm {
    const char *name; /* "single", "nccl" */
    int rank, size;
    void *impl;
    CommStats total;            /* every call */
    CommStats stats[CO_COUNT_]; /* per planner collective */
    /* In place on buf (count elements of dtype). */
    Status (*all_reduce)(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dtype, CommReduce op,
                         Err *e);
    /* recv (size·count) gathers every rank's send (count). */
    Status (*all_gather)(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t count,
                         Dtype dtype, Err *e);
    /* recv (count) = this rank's slice of the reduction of send (size·count). */
    Status (*reduce_scatter)(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t count,
                             Dtype dtype, CommReduce op, Err *e);
    /* buf (count) on every rank = root's buf. Counted S · 1 (nccl-tests' broadcast factor). */
    Status (*broadcast)(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dtype, int root,
                        Err *e);
    /* Point to point with rank peer (≠ this rank); a send is matched by the
     * peer's recv of the same id, count and dtype, in order. recv blocks until
     * the data is there; send may return before the peer receives (MPI: a
     * buffered copy, so two ranks may send to each other at once), the caller's
     * buffer free for reuse either way. A send counts S · 1 (bytes this rank
     * sends) and its seconds; a recv no call and no bytes, but (MPI) its time
     * waiting for the peer's send apart (wait_s: the peer stage's compute, a
     * pipeline bubble) and the seconds its bytes then take to arrive in the
     * row's seconds: a row's seconds are both ends of its messages. */
    Status (*send)(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t count, Dtype dtype, int peer,
                   Err *e);
    Status (*recv)(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dtype, int peer, Err *e);
    /* Uneven, in place (the distributed optimizer's shards): buf holds counts[0] + … + counts[size − 1]
     * elements, rank r's segment after those of ranks 0 … r − 1. reduce_scatter_v: this rank's segment
     * becomes the reduction of every rank's values of it (the other segments are left as they were);
     * all_gather_v: every rank's segment r becomes rank r's. Payload S = the whole buffer's bytes, bus
     * bytes S · (n−1)/n (the plan's convention; a segment may be empty). NULL where the library has
     * none yet (call them through comm_reduce_scatter_v / comm_all_gather_v, which say so). */
    Status (*reduce_scatter_v)(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype,
                               CommReduce op, Err *e);
    Status (*all_gather_v)(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype,
                           Err *e);
    /* A sub-communicator: the ranks of c that pass the same color, ranked by key (MPI_Comm_split; every
     * rank of c calls it). Its calls are counted in the stats of c's root (the communicator over every
     * rank, parent NULL), so a rank's bytes per collective stay one table whatever group moved them.
     * Destroy it before c. NULL where the library has none (call it through comm_split, which says so). */
    Status (*split)(Comm *c, int color, int key, Comm **out, Err *e);
    Comm *parent; /* the communicator this one was split from; NULL for the root */
    void (*destroy)(Comm *c);
    /* Optional (NULL: not known). The largest message, in bytes up to max, the library sends eagerly between
     * two of c's ranks (MPI: comm_mpi_eager_limit); every rank calls it and gets the same value. Calibrate
     * splits the all-to-all's per-message fits there. */
    Status (*eager_limit)(Comm *c, uint64_t max, uint64_t *out, Err *e);
    /* Optional (NULL: it keeps none). Push the part of c's own host buffers a reduction of `bytes` uses (MPI: the
     * first bytes of its receive scratch) out of the CPU's caches to memory, as a step's other traffic leaves them
     * between two gradient reductions (calibrate's gradient sweep). */
    void (*flush)(Comm *c, uint64_t bytes);
    /* Optional (NULL: nothing to do). Fold the times of calls that ran asynchronously into seconds (NCCL:
     * each call's start and end events, read once they are done); waits for the calls issued so far. A run
     * settles after each step, before it reads stats. */
    Status (*settle)(Comm *c, Err *e);
    /* Optional (NULL: comm_sendrecv orders a send and a recv). Send scount elements to rank `to` and receive
     * rcount from rank `from` at once (NCCL: one group), so two ranks exchanging never wait on each other.
     * Counted as send and recv are. */
    Status (*sendrecv)(Comm *c, CollectiveId id, Backend *bk, const void *sendbuf, uint64_t scount, int to,
                       void *recvbuf, uint64_t rcount, int from, Dtype dtype, Err *e);
    /* Optional (NULL: none yet; call it through comm_all_to_all_v, which says so). Uneven all-to-all (expert
     * parallelism's dispatch and combine): send holds scounts[0] + … + scounts[size − 1] elements, the
     * segment for rank j after those for ranks 0 … j − 1; recv receives rank j's segment for this rank at
     * the same place in rcounts' layout. The ranks first exchange what they will send (counted
     * COMM_UNPLANNED): a rank whose rcounts disagree with its peers' scounts makes every rank fail with
     * ST_DATA naming the lowest such rank and the pair, before any payload moves (no rank waits on a
     * transfer that will not come). Payload S = the bytes this rank sends, its own segment included; bus
     * bytes = those that leave it (S minus its own segment). */
    Status (*all_to_all_v)(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts, void *recv,
                           const uint64_t *rcounts, Dtype dtype, Err *e);
    /* The MPI communicator over the same ranks when this one was bootstrapped through MPI (NCCL ranks
     * under mpirun: the report's host-side gathers and the abort use it); NULL otherwise. Owned: destroy
     * frees it after this communicator. */
    Comm *host;
};

/* c->settle when it has one; ST_OK otherwise. */
Status comm_settle(Comm *c, Err *e);
/* c->sendrecv, or (none) the send and the recv one after the other: the lower rank of the pair sends
 * first, the other receives first (pairwise exchange without a deadlock over blocking calls). */
Status comm_sendrecv(Comm *c, CollectiveId id, Backend *bk, const void *sendbuf, uint64_t scount, int to, void *recvbuf,
                     uint64_t rcount, int from, Dtype dtype, Err *e);

/* Add one call of payload bytes with bus factor to c's total and row id
 * (implementations call it; ids outside the plan's count only in the total). */
void comm_count(Comm *c, CollectiveId id, uint64_t payload, double factor);
/* The same with the call's seconds (comm_now_s() at its start to its end). */
void comm_count_s(Comm *c, CollectiveId id, uint64_t payload, double factor, double seconds);
/* Add seconds to c's total and row id without a call or bytes (a recv's share of its message's transfer). */
void comm_add_s(Comm *c, CollectiveId id, double seconds);
/* Add the seconds one call waited for the other ranks to c's total and row id (as comm_count). */
void comm_wait(Comm *c, CollectiveId id, double seconds);
/* The monotonic clock in seconds (CLOCK_MONOTONIC). */
double comm_now_s(void);

/* c->all_to_all_v, or ST_UNAVAILABLE naming the communicator when it has none. */
Status comm_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts, void *recv,
                         const uint64_t *rcounts, Dtype dtype, Err *e);
/* c->reduce_scatter_v / c->all_gather_v, or ST_UNAVAILABLE naming the communicator when it has none. */
Status comm_reduce_scatter_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype,
                             CommReduce op, Err *e);
Status comm_all_gather_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype, Err *e);

/* c->split, or ST_UNAVAILABLE naming the communicator when it has none. */
Status comm_split(Comm *c, int color, int key, Comm **out, Err *e);

/* Bus bytes as whole bytes: S · 2(n−1)/n and S · (n−1)/n are fractions when n does not divide S
 * (the sharded states' uneven segments); the plan keeps their integer part (planner/plan_comm.c
 * bus(): S − ceil(S/n)), so a measured sum is compared as floor(x) (+1e-6 absorbs the binary
 * rounding of a sum of fractions). The payload S itself is whole and is checked exactly beside it. */
static inline double comm_whole_bytes(double x)
{
    double w = (double)(uint64_t)(x + 1e-6);
    return x < 0 ? x : w;
}

/* payload = count · dtype size; ST_USAGE for a dtype without a size,
 * ST_OVERFLOW past 2^64. */
Status comm_payload(uint64_t count, Dtype dtype, uint64_t *payload, Err *e);

/* Not a collective of the plan: counted in total only (the loss gathered
 * for the report, the shared FP8 scale's amax). */
#define COMM_UNPLANNED CO_COUNT_

/* FP8 all-reduce with a scale agreed first (MS-AMP's FP8 gradient
 * all-reduce): buf holds count codes of dtype (DT_E4M3 or DT_E5M2) that decode
 * to value · rec[REC_SCALE] on this rank (rec: {scale, scale_inv, amax},
 * backend memory; exec/backend/backend_desc.h). The group's amax A (MAX over the
 * ranks of |code| · scale_inv, counted COMM_UNPLANNED) gives the shared
 * scale s = fmax / (size · A) (1 when A is 0 or not finite), so a sum of size
 * values each at most A in magnitude stays within the format; each rank
 * re-encodes its values at s (RNE, saturating), the codes are summed with
 * all_reduce (dtype SUM: decoded, summed in FP32, rounded once; counted under
 * id, one byte per element) and rec becomes {s, 1/s, amax of the sum}. */
Status comm_all_reduce_fp8(Comm *c, CollectiveId id, Backend *bk, void *buf, float *rec, uint64_t count, Dtype dtype,
                           Err *e);
/* The same agreement before an uneven in-place reduce-scatter (the distributed optimizer's FP8
 * gradients: buf holds the whole tensor, counts as comm_reduce_scatter_v's): every rank's codes
 * re-encoded at the shared s, this rank's segment becomes the sum (counted under id), and rec
 * {s, 1/s, amax of the whole sum} on every rank: the segment's amax MAX-reduced over the group
 * (COMM_UNPLANNED), so the record is the all-reduce's. The other segments keep this rank's codes. */
Status comm_reduce_scatter_fp8_v(Comm *c, CollectiveId id, Backend *bk, void *buf, float *rec, const uint64_t *counts,
                                 Dtype dtype, Err *e);

/* The single-rank implementation: collectives degenerate to copies (or
 * nothing, in place) and count zero bus bytes. */
Status comm_single_create(Comm **out, Err *e);

/* The communicator a one-process run uses on backend bk: "single"
 * (comm_single_create) or "nccl" (one NCCL rank on bk's device and stream;
 * ST_UNAVAILABLE, with the reason, when this build has no CUDA backend or NCCL
 * cannot start). Unknown names are ST_USAGE. */
Status comm_create(const char *name, Backend *bk, Comm **out, Err *e);

#ifdef __cplusplus
}
#endif
#endif
