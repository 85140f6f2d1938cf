/* exec/cuda/comm_nccl_impl.h — the NCCL communicator's private state and the
 * one routine every call goes through (C++, nvcc only; comm_nccl.cu makes,
 * orders and times the calls, comm_nccl_ops.cu is the Comm operations).
 *
 * NCCL runs on a stream of its own. A call is a list of stream operations in
 * the order exec/comm/comm_nccl_rules.h gives (comm_nccl_order): staging on
 * the compute stream, "ready" recorded there, the NCCL stream waits for it,
 * the call between its start and end events on the NCCL stream, the compute
 * stream waits for the end event, staging back. No host synchronisation per
 * call: the start/end pairs are kept and read by settle (once a step, or when
 * NCCL_PAIRS are pending), which adds each call's device time to the row of
 * its collective id. */
#ifndef FP8PLAN_EXEC_CUDA_COMM_NCCL_IMPL_H
#define FP8PLAN_EXEC_CUDA_COMM_NCCL_IMPL_H

#include <nccl.h>

#include "exec/comm/comm_nccl_rules.h"
#include "exec/cuda/cuda_impl.h"

enum { NCCL_PAIRS = 1024 };   /* calls whose times are held before settle reads them */
enum { NCCL_UNCOUNTED = -1 }; /* pair_id of a recv: neither counted nor timed (its time is the sender's) */

typedef struct {
    ncclComm_t comm;     /* NULL: one rank without NCCL (local copies) */
    int loaded;          /* ncclGetVersion of the library in use; 0 unknown */
    int device;          /* the backend's */
    cudaStream_t stream; /* NCCL's own */
    cudaEvent_t ready;   /* compute stream -> NCCL stream (no timing) */
    cudaEvent_t ev[2 * NCCL_PAIRS];
    int ev_made;             /* events created */
    int pair_id[NCCL_PAIRS]; /* the collective id of each pending pair */
    int pending;
    char name[200];
} NcclImpl;

/* What one call does on the NCCL stream (data already in the wire dtype). */
typedef enum { NC_AR, NC_AG, NC_RS, NC_BC, NC_SEND, NC_RECV, NC_SENDRECV } NcKind;

typedef struct {
    NcKind k;
    const void *send;
    void *recv;
    uint64_t n;  /* elements: NCCL's count (per rank for all-gather/reduce-scatter; what is sent) */
    uint64_t n2; /* sendrecv: elements received */
    Dtype wire;
    CommReduce op;
    int peer, peer2; /* root for broadcast; send peer / recv peer */
} NcCall;

/* One copy or conversion on the compute stream (staging). */
typedef struct {
    const void *src;
    Dtype sdt;
    void *dst;
    Dtype ddt;
    uint64_t n;
} NcMove;

/* Run call on c's stream in comm_nccl_order's order, with nin moves before and nout after on the compute
 * stream; counts payload bytes with bus factor under id (its seconds come at settle; a lone recv counts
 * nothing, as over MPI). */
Status nccl_run(Comm *c, Backend *bk, CollectiveId id, const NcCall *call, const NcMove *in, int nin, const NcMove *out,
                int nout, uint64_t payload, double factor, Err *e);

/* The Comm operations (comm_nccl_ops.cu) into c. */
void nccl_fill_ops(Comm *c);

static inline NcclImpl *nccl_impl(Comm *c) { return (NcclImpl *)c->impl; }

#endif
