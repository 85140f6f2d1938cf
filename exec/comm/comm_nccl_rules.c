/* exec/comm/comm_nccl_rules.c — the NCCL communicator's host-side decisions
 * (see comm_nccl_rules.h). */
#include "exec/comm/comm_nccl_rules.h"

#include <stdlib.h>

int comm_device_of_rank(int local, int devices)
{
    if (devices < 1 || local < 0) return -1;
    return local % devices;
}

int comm_local_rank_env(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v) continue;
        char *end = NULL;
        long x = *v >= '0' && *v <= '9' ? strtol(v, &end, 10) : -1;
        return x >= 0 && x < (1L << 20) && end && !*end ? (int)x : -2;
    }
    return -1;
}

Status comm_pad(const uint64_t *counts, int size, uint64_t *off, CommPad *out, Err *e)
{
    *out = (CommPad){0, 0, 0};
    if (!counts || size < 1) return err_set(e, ST_USAGE, "nccl: an uneven collective needs counts for every rank");
    uint64_t t = 0, big = 0;
    for (int j = 0; j < size; j++) {
        if (off) off[j] = t;
        if (__builtin_add_overflow(t, counts[j], &t))
            return err_set(e, ST_OVERFLOW, "nccl: the counts per rank overflow");
        if (counts[j] > big) big = counts[j];
    }
    uint64_t padded;
    if (__builtin_mul_overflow(big, (uint64_t)size, &padded))
        return err_set(e, ST_OVERFLOW, "nccl: %d ranks x %llu elements overflow", size, (unsigned long long)big);
    *out = (CommPad){big, t, padded};
    return ST_OK;
}

int comm_nccl_order(int stage_in, int stage_out, NcclStep *out)
{
    int n = 0;
    if (stage_in) out[n++] = NCS_STAGE_IN;
    out[n++] = NCS_READY;
    out[n++] = NCS_WAIT_READY;
    out[n++] = NCS_START;
    out[n++] = NCS_ISSUE;
    out[n++] = NCS_END;
    out[n++] = NCS_WAIT_DONE;
    if (stage_out) out[n++] = NCS_STAGE_OUT;
    return n;
}

Status comm_a2a_layout(const uint64_t *counts, int size, uint64_t eb, uint64_t *bytes, uint64_t *dsp, uint64_t *total,
                       Err *e)
{
    uint64_t t = 0;
    *total = 0;
    if (!counts || size < 1) return err_set(e, ST_USAGE, "all_to_all_v: no counts for the %d ranks", size);
    for (int j = 0; j < size; j++) {
        uint64_t b = 0;
        if (__builtin_mul_overflow(counts[j], eb, &b) || __builtin_add_overflow(t, b, &t))
            return err_set(e, ST_OVERFLOW, "all_to_all_v: %llu elements of %llu bytes for rank %d overflow",
                           (unsigned long long)counts[j], (unsigned long long)eb, j);
        bytes[j] = b, dsp[j] = t - b;
    }
    *total = t;
    return ST_OK;
}

double comm_a2a_factor(uint64_t sent, uint64_t own)
{
    return sent && own <= sent ? (double)(sent - own) / (double)sent : 0.0;
}

int comm_a2a_disagree(const uint64_t *rcounts, const uint64_t *peer_sends, int size)
{
    for (int j = 0; j < size; j++)
        if (rcounts[j] != peer_sends[j]) return j;
    return -1;
}
