/* exec/cpu/cpu_gemm_group.c — the CPU backend's grouped GEMM (GroupedGemmDesc
 * in exec/backend_desc.h): the experts' GEMMs of a mixture-of-experts layer in
 * one call, each group exactly the GemmDesc a per-expert loop of gemm() would
 * pass, computed by the same BLAS tiles (cpu_gemm.c), so every group's D is
 * bit-identical to that loop's.
 *
 * What differs is how the groups share the pool. A few hundred rows per expert
 * make GEMMs too small to split into many tiles, so the small groups run one
 * per task, each on its worker's thread alone (cpu_gemm_serial: all its tiles
 * there, in its own buffers), and the pool spreads the groups; a large group
 * (from GROUP_SERIAL_FLOP on, or K longer than one chunk) runs as gemm() does,
 * its tiles spread over the pool. Which way a group goes is a function of its
 * shape alone, and neither way changes its bits. */
#include <math.h>
#include <stdlib.h>

#include "exec/cpu/cpu_gemm.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/par.h"

/* From this many flops (2·m·N·K) a group's own tiles are spread over the pool. */
#define GROUP_SERIAL_FLOP 64e6

typedef struct {
    GemmDesc g;
    float amax;       /* the group's output amax (max-combined into the descriptor's at the end) */
    uint64_t need[2]; /* its serial buffers, 0 for a group run by gemm() */
    int serial;
} Group;

typedef struct {
    Group *groups;
    uint32_t *serial; /* indices of the serial groups */
    float *sbuf, *wbuf;
    uint64_t sstride, wstride;
} GroupJob;

static void group_task(void *ctx, uint64_t task, int worker)
{
    const GroupJob *j = ctx;
    const GemmDesc *g = &j->groups[j->serial[task]].g;
    float *sbuf = j->sbuf ? j->sbuf + (uint64_t)worker * j->sstride : NULL;
    cpu_gemm_serial(g, sbuf, j->wbuf + (uint64_t)worker * j->wstride);
}

/* The GemmDesc of group x, whose rows start at row0 of A and D. */
static GemmDesc group_desc(const GroupedGemmDesc *d, uint32_t x, uint64_t row0, uint64_t m, float *amax)
{
    uint64_t lda = d->a.ld ? d->a.ld : (d->a.layout == GEMM_K_INNER ? d->k : d->rows), ldd = d->d.ld ? d->d.ld : d->n;
    GemmDesc g = {.m = m, .n = d->n, .k = d->k, .a = d->a, .b = d->b, .d = d->d, .accum = d->accum};
    g.acc_precision = d->acc_precision;
    g.a.ptr = (const char *)d->a.ptr + (d->a.layout == GEMM_K_INNER ? row0 * lda : row0) * dtype_bytes(d->a.dtype);
    g.a.ld = lda;
    g.b.ptr = (const char *)d->b.ptr + (uint64_t)x * d->n * d->k * dtype_bytes(d->b.dtype);
    if (d->a.scale_inv) g.a.scale_inv = d->a.scale_inv + x;
    if (d->b.scale_inv) g.b.scale_inv = d->b.scale_inv + x;
    g.d.ptr = (char *)d->d.ptr + row0 * ldd * dtype_bytes(d->d.dtype);
    g.d.ld = ldd;
    g.d.amax = d->d.amax ? amax : NULL;
    return g;
}

Status cpu_grouped_gemm(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    uint32_t G = d->groups;
    uint64_t sum = 0;
    for (uint32_t x = 0; x < G; x++) {
        if (d->counts[x] < 0) return err_set(e, ST_USAGE, "grouped_gemm: group %u has %d rows", x, (int)d->counts[x]);
        sum += (uint64_t)d->counts[x];
    }
    if (sum != d->rows)
        return err_set(e, ST_USAGE, "grouped_gemm: the counts add up to %llu rows, the descriptor has %llu",
                       (unsigned long long)sum, (unsigned long long)d->rows);
    if (!d->rows) return ST_OK;
    Group *gr = calloc(G, sizeof *gr);
    uint32_t *serial = calloc(G, sizeof *serial);
    if (!gr || !serial) {
        free(gr), free(serial);
        return err_set(e, ST_NOMEM, "grouped_gemm: out of memory for %u groups", G);
    }
    Status st = ST_OK;
    uint32_t nserial = 0;
    uint64_t need0 = 0, need1 = 0, row0 = 0;
    for (uint32_t x = 0; x < G && !st; x++) {
        uint64_t m = (uint64_t)d->counts[x];
        gr[x].g = group_desc(d, x, row0, m, &gr[x].amax);
        row0 += m;
        if (!m) continue;
        /* a group gemm() would refuse (sizes beyond uint64) goes to gemm() for its message */
        gr[x].serial = 2.0 * (double)m * (double)d->n * (double)d->k < GROUP_SERIAL_FLOP &&
                       cpu_gemm_serial_plan(&gr[x].g, gr[x].need, NULL) == ST_OK;
        if (!gr[x].serial) {
            st = cpu_gemm(bk, &gr[x].g, e); /* its tiles on the pool, in the backend's scratch */
            continue;
        }
        serial[nserial++] = x;
        need0 = gr[x].need[0] > need0 ? gr[x].need[0] : need0;
        need1 = gr[x].need[1] > need1 ? gr[x].need[1] : need1;
    }
    if (!st && nserial) { /* after the large groups: they reuse the same scratch slots */
        uint64_t W = (uint64_t)par_threads();
        GroupJob j = {.groups = gr, .serial = serial, .sstride = need0, .wstride = need1};
        j.sbuf = need0 ? cpu_scratch(bk, 0, need0 * W, e) : NULL;
        j.wbuf = need0 && !j.sbuf ? NULL : cpu_scratch(bk, 1, need1 * W, e);
        if (!j.wbuf)
            st = e ? e->st : ST_NOMEM;
        else
            par_tasks(nserial, group_task, &j);
    }
    if (!st && d->d.amax)
        for (uint32_t x = 0; x < G; x++)
            if (d->counts[x]) *d->d.amax = fmaxf(*d->d.amax, gr[x].amax);
    free(gr), free(serial);
    return st;
}
