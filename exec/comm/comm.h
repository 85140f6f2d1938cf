/* exec/comm/comm.h — collectives: one struct of function pointers per
 * communication library (nccl-tests style), the place multi-rank runs plug in.
 *
 * Implementations: "single" (exec/comm/comm_single.c: one rank, collectives
 * degenerate to copies or nothing) and "nccl" (exec/cuda/comm_nccl.cu: GPU
 * ranks on the CUDA backend's stream; exec/comm/comm_wire.c decides the
 * dtype a buffer travels in from the NCCL the process loaded). A CPU-rank
 * implementation over MPI (issue 11: DP, TP+SP and PP on the CPU backend in
 * CI) adds a file here and a name in comm_create; the executor does not
 * change.
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
    void (*destroy)(Comm *c);
};

/* Add one call of payload bytes with bus factor to c's total and row id
 * (implementations call it; ids outside the plan's count only in the total). */
void comm_count(Comm *c, CollectiveId id, uint64_t payload, double factor);

/* payload = count · dtype size; ST_USAGE for a dtype without a size,
 * ST_OVERFLOW past 2^64. */
Status comm_payload(uint64_t count, Dtype dtype, uint64_t *payload, Err *e);

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
