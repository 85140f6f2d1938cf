/* exec/comm_single.c — the single-rank communicator: every collective over one
 * rank is the identity (in place) or a copy, and moves zero bus bytes. It
 * still counts calls and payload so a run's collectives can be listed beside
 * the Plan's. */
#include <stdlib.h>

#include "exec/backend.h"

static void count(Comm *c, uint64_t payload)
{
    c->stats.calls++;
    c->stats.payload_bytes += payload;
    /* ring factors 2(n-1)/n and (n-1)/n are 0 for n = 1: no bus bytes */
}

static Status payload_bytes(uint64_t count, Dtype dtype, uint64_t *out, Err *e)
{
    unsigned b = dtype_bytes(dtype);
    if (!b) return err_set(e, ST_USAGE, "collective: dtype %s has no size", dtype_name(dtype));
    if (__builtin_mul_overflow(count, (uint64_t)b, out))
        return err_set(e, ST_OVERFLOW, "collective: %llu elements overflow", (unsigned long long)count);
    return ST_OK;
}

static Status single_all_reduce(Comm *c, Backend *bk, void *buf, uint64_t n, Dtype dtype, CommReduce op, Err *e)
{
    (void)bk, (void)op;
    uint64_t bytes = 0;
    Status st = payload_bytes(n, dtype, &bytes, e);
    if (st) return st;
    if (!buf && n) return err_set(e, ST_USAGE, "all_reduce: no buffer");
    count(c, bytes);
    return ST_OK;
}

static Status copy_if_needed(Backend *bk, const void *send, void *recv, uint64_t bytes, Err *e)
{
    if (send == recv || !bytes) return ST_OK;
    /* device-to-device copy through the host keeps this file backend-agnostic;
     * only the single-rank path uses it and only for out-of-place calls */
    void *tmp = malloc(bytes);
    if (!tmp) return err_set(e, ST_NOMEM, "collective: out of memory for %llu bytes", (unsigned long long)bytes);
    Status st = bk->copy_to_host(bk, tmp, send, bytes, e);
    if (!st) st = bk->copy_to_device(bk, recv, tmp, bytes, e);
    free(tmp);
    return st;
}

static Status single_all_gather(Comm *c, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dtype, Err *e)
{
    uint64_t bytes = 0;
    Status st = payload_bytes(n, dtype, &bytes, e);
    if (st) return st;
    count(c, bytes);
    return copy_if_needed(bk, send, recv, bytes, e);
}

static Status single_reduce_scatter(Comm *c, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dtype,
                                    CommReduce op, Err *e)
{
    (void)op;
    uint64_t bytes = 0;
    Status st = payload_bytes(n, dtype, &bytes, e);
    if (st) return st;
    count(c, bytes);
    return copy_if_needed(bk, send, recv, bytes, e);
}

static void single_destroy(Comm *c) { free(c); }

Status comm_single_create(Comm **out, Err *e)
{
    Comm *c = calloc(1, sizeof *c);
    if (!c) return err_set(e, ST_NOMEM, "out of memory");
    c->name = "single";
    c->rank = 0;
    c->size = 1;
    c->all_reduce = single_all_reduce;
    c->all_gather = single_all_gather;
    c->reduce_scatter = single_reduce_scatter;
    c->destroy = single_destroy;
    *out = c;
    return ST_OK;
}
