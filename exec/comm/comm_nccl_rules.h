/* exec/comm/comm_nccl_rules.h — what the NCCL communicator decides on the host,
 * as pure functions the CPU tests check (tests/unit/test_exec_nccl_rules.c):
 *
 *  - which GPU a rank drives: its local rank (the launcher's environment, or an
 *    MPI shared-memory split: exec/comm/comm_nccl_boot.c) modulo the devices it
 *    sees;
 *  - how an uneven collective (the distributed optimizer's shards) is carried
 *    by NCCL, which has none: every segment padded to the largest, L elements,
 *    so rank r's segment is slot r of a size·L buffer and ncclReduceScatter /
 *    ncclAllGather of L elements per rank do the work; NCCL moves size·L
 *    elements, the stats count the plan's convention (comm.h): payload S = the
 *    segments' sum, bus bytes S·(n−1)/n;
 *  - the order of stream operations of one call: NCCL runs on its own stream,
 *    after the compute stream's work by an event, and the compute stream waits
 *    for NCCL's end by an event — never a host synchronisation per call. The
 *    CUDA file (exec/cuda/comm_nccl.cu) executes exactly this list. */
#ifndef FP8PLAN_EXEC_COMM_COMM_NCCL_RULES_H
#define FP8PLAN_EXEC_COMM_COMM_NCCL_RULES_H

#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device a rank with local rank `local` uses among `devices` it sees:
 * local mod devices; −1 when devices < 1 or local < 0. */
int comm_device_of_rank(int local, int devices);

/* The local rank (the process's index among those on its node) the launcher
 * put in the environment: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI),
 * MPI_LOCALRANKID (MPICH, Intel MPI), SLURM_LOCALID (srun), the first one
 * set. −1 when none is set; −2 when the first one set is not a number in
 * [0, 2^20) (a broken launcher: say so rather than guess). */
int comm_local_rank_env(void);

/* An uneven buffer padded for NCCL: counts[0..size) elements per rank, laid
 * out one after the other (rank j's segment at off[j]). largest = the
 * biggest count (NCCL's per-rank count), total = their sum (the payload's
 * elements), padded = size · largest (the staging buffer's elements).
 * ST_USAGE without counts or size < 1, ST_OVERFLOW past 2^64. off may be NULL. */
typedef struct {
    uint64_t largest, total, padded;
} CommPad;
Status comm_pad(const uint64_t *counts, int size, uint64_t *off, CommPad *out, Err *e);

/* An uneven all-to-all (expert parallelism's dispatch and combine: comm.h all_to_all_v), as every
 * communicator carries and counts it, so NCCL's bytes are MPI's to the byte:
 *  - comm_a2a_layout: counts[0..size) elements of eb bytes per peer → bytes[j] and dsp[j] (byte
 *    offsets, peer j's segment after those of peers 0 .. j − 1) and their sum *total; ST_USAGE without
 *    counts, ST_OVERFLOW past 2^64;
 *  - comm_a2a_factor: the bus factor of a call that sends `sent` bytes, `own` of them to itself: the
 *    bytes that leave the rank, (sent − own) / sent (0 for an empty call);
 *  - comm_a2a_disagree: the first peer j whose announced send to this rank (peer_sends[j], from the
 *    counts' exchange) is not what this rank expects (rcounts[j]), or −1 when all agree. */
Status comm_a2a_layout(const uint64_t *counts, int size, uint64_t eb, uint64_t *bytes, uint64_t *dsp, uint64_t *total,
                       Err *e);
double comm_a2a_factor(uint64_t sent, uint64_t own);
int comm_a2a_disagree(const uint64_t *rcounts, const uint64_t *peer_sends, int size);
/* The counts' own exchange before every all-to-all: one uint64 per peer, counted COMM_UNPLANNED as
 * payload size·8 bytes with bus factor (size − 1)/size (MPI_Alltoall's). */
static inline uint64_t comm_a2a_counts_payload(int size) { return (uint64_t)size * sizeof(uint64_t); }
static inline double comm_a2a_counts_factor(int size) { return size > 0 ? (double)(size - 1) / (double)size : 0.0; }

/* The steps of one NCCL call, in order (comm_nccl_order). */
typedef enum {
    NCS_STAGE_IN = 1, /* compute stream: copy/convert into the staging buffer (padding, FP8 as BF16) */
    NCS_READY,        /* compute stream: record the "ready" event after the work the call reads */
    NCS_WAIT_READY,   /* NCCL stream: wait for "ready" */
    NCS_START,        /* NCCL stream: record the call's start event (its time) */
    NCS_ISSUE,        /* NCCL stream: the NCCL call(s), grouped when more than one */
    NCS_END,          /* NCCL stream: record the call's end event (its time, and "done") */
    NCS_WAIT_DONE,    /* compute stream: wait for "done" before anything after the call */
    NCS_STAGE_OUT     /* compute stream: copy/convert the result out of the staging buffer */
} NcclStep;
enum { NCS_MAX = 8 };

/* The steps of a call into out[NCS_MAX]; stage_in / stage_out: whether the
 * call goes through a staging buffer each way. Returns how many. No step is a
 * host synchronisation: the call's time is read later from its start and end
 * events (when the communicator is settled, comm_settle). */
int comm_nccl_order(int stage_in, int stage_out, NcclStep *out);

#ifdef __cplusplus
}
#endif
#endif
