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
 * its collective id (the root's: split groups share its stream and pairs).
 * Two exceptions wait on the host, as MPI does: the all-to-all's counts and
 * agreement come back before its payload moves (comm_nccl_a2a.cu), and a
 * buffer in host memory is staged through a device buffer and waited for. */
#ifndef FP8PLAN_EXEC_CUDA_COMM_NCCL_IMPL_H
#define FP8PLAN_EXEC_CUDA_COMM_NCCL_IMPL_H

#include <nccl.h>

#include "exec/comm/comm_nccl_rules.h"
#include "exec/cuda/cuda_impl.h"

enum { NCCL_PAIRS = 1024 };   /* calls whose times are held before settle reads them */
enum { NCCL_UNCOUNTED = -1 }; /* pair_id of a recv: neither counted nor timed (its time is the sender's) */

/* The NCCL stream, its events and the calls' pending start/end pairs: the root communicator's, shared
 * by the communicators split from it (their calls run on the same stream, in program order as every
 * rank issues them, and settle reads every group's pairs at once). */
typedef struct {
    cudaStream_t stream; /* NCCL's own */
    cudaEvent_t ready;   /* compute stream -> NCCL stream (no timing) */
    cudaEvent_t ev[2 * NCCL_PAIRS];
    int ev_made;             /* events created */
    int pair_id[NCCL_PAIRS]; /* the collective id of each pending pair */
    int pending;
} NcclStream;

typedef struct {
    ncclComm_t comm; /* NULL: one rank without NCCL (local copies) */
    int loaded;      /* ncclGetVersion of the library in use; 0 unknown */
    int device;      /* the backend's */
    NcclStream *ns;  /* the root's */
    int owns_ns;     /* this is the root: ns is freed with it */
    void *dev;       /* device staging of host buffers and of the all-to-all's counts, grown on demand */
    size_t dev_bytes;
    char name[200];
} NcclImpl;

/* What one call does on the NCCL stream (data already in the wire dtype). */
typedef enum { NC_AR, NC_AG, NC_RS, NC_BC, NC_SEND, NC_RECV, NC_SENDRECV, NC_A2A } NcKind;

typedef struct {
    NcKind k;
    const void *send;
    void *recv;
    uint64_t n;  /* elements: NCCL's count (per rank for all-gather/reduce-scatter; what is sent) */
    uint64_t n2; /* sendrecv: elements received */
    Dtype wire;
    CommReduce op;
    int peer, peer2; /* root for broadcast; send peer / recv peer */
    /* NC_A2A (bytes, whatever the dtype: nothing is reduced): size entries each of the bytes sent to
     * peer j, their offsets in send, the bytes received from j, their offsets in recv */
    const uint64_t *seg;
    int rank, size;
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

/* comm_nccl_a2a.cu: the uneven all-to-all (comm.h all_to_all_v: counts exchanged first over NCCL, every
 * rank agreeing they match before any payload moves; bytes counted as over MPI) ... */
Status nccl_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts, void *recv,
                         const uint64_t *rcounts, Dtype dt, Err *e);
/* ... and the staging of buffers in host memory (the model's counts, its failure agreement): whether p is
 * host memory (pageable or pinned) the device cannot hand to NCCL, and ni's device buffer of at least
 * `bytes` (grown after the device is idle; every user waits for its own work before returning). */
int nccl_host_side(const void *p);
Status nccl_dev_buf(NcclImpl *ni, size_t bytes, void **out, Err *e);
/* One NCCL call of the group in flight: the failure in the house style (comm_nccl.cu). */
Status nccl_fail(Err *e, ncclComm_t comm, const char *file, int line, const char *call, ncclResult_t r);
#define NCCL_TRY(comm, call, e)                                            \
    do {                                                                   \
        ncclResult_t nc_r_ = (call);                                       \
        if (nc_r_ != ncclSuccess) {                                        \
            st = nccl_fail((e), (comm), __FILE__, __LINE__, #call, nc_r_); \
            goto done;                                                     \
        }                                                                  \
    } while (0)

static inline NcclImpl *nccl_impl(Comm *c) { return (NcclImpl *)c->impl; }

#endif
