/* exec/cpu/cpu_gemm_group.c — the CPU backend's grouped GEMM (GroupedGemmDesc
 * in exec/backend/backend_desc.h): the experts' GEMMs of a mixture-of-experts layer in
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
 * shape alone, and neither way changes its bits.
 *
 * grouped_gemm_wgrad is the same machinery with the groups ragged along K (an
 * expert's weight gradient sums over its rows); an expert without rows gets a
 * zero gradient, or keeps the one it had when accumulating.
 *
 * The group table (a Group per group, then the serial groups' indices) is the
 * backend's kept scratch (CPU_SLOT_GROUPS): sized from the group count first,
 * carved once, reused by every later call with as many groups or fewer — a MoE
 * step after the first allocates nothing here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cpu/cpu_gemm.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/backend/par.h"

/* From this many flops (2·m·N·K) a group's own tiles are spread over the pool. */
#define GROUP_SERIAL_FLOP 64e6

typedef struct {
    GemmDesc g;       /* m, n or k 0: an empty group */
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

static uint64_t ld_or(uint64_t ld, uint64_t packed) { return ld ? ld : packed; }

static uint64_t tiles(uint64_t n) { return (n + GEMM_SCALE_BLOCK - 1) / GEMM_SCALE_BLOCK; }

/* Group x's first scale in a (G, N, K) weight operand: a per-tensor scale each, or its own blocks. */
static const float *group_scales(const GemmOperand *o, uint32_t x, uint64_t n, uint64_t k)
{
    if (o->scale_gran == GRAN_1X128) return o->scale_inv + (uint64_t)x * n * tiles(k);
    if (o->scale_gran == GRAN_128X128) return o->scale_inv + (uint64_t)x * tiles(n) * tiles(k);
    return o->scale_inv + x;
}

/* Group x of a grouped GEMM: rows [row0, row0 + m) of A and D. */
static GemmDesc group_desc(const GroupedGemmDesc *d, uint32_t x, uint64_t row0, uint64_t m, float *amax)
{
    uint64_t lda = ld_or(d->a.ld, d->a.layout == GEMM_K_INNER ? d->k : d->rows), ldd = ld_or(d->d.ld, d->n);
    GemmDesc g = {.m = m, .n = d->n, .k = d->k, .a = d->a, .b = d->b, .d = d->d, .accum = d->accum};
    g.acc_precision = d->acc_precision;
    g.a.ptr = (const char *)d->a.ptr + (d->a.layout == GEMM_K_INNER ? row0 * lda : row0) * dtype_bytes(d->a.dtype);
    g.a.ld = lda;
    g.b.ptr = (const char *)d->b.ptr + (uint64_t)x * d->n * d->k * dtype_bytes(d->b.dtype);
    if (d->a.scale_inv) /* 1x128 tiles: rows [row0, row0 + m) of the (rows, ceil(K/128)) scales */
        g.a.scale_inv = d->a.scale_inv + (d->a.scale_gran == GRAN_1X128 ? row0 * tiles(d->k) : x);
    if (d->b.scale_inv) g.b.scale_inv = group_scales(&d->b, x, d->n, d->k);
    g.d.ptr = (char *)d->d.ptr + row0 * ldd * dtype_bytes(d->d.dtype);
    g.d.ld = ldd;
    g.d.amax = d->d.amax ? amax : NULL;
    return g;
}

/* Operand o's rows [k0, k0 + kg) along K, of `rows` in all, its M/N extent mn; t0 the 128-row tiles of the
 * groups before (1x128: group x's (mn, ceil(kg/128)) scales follow theirs, at mn·t0). */
static GemmOperand k_slice(GemmOperand o, uint64_t rows, uint64_t mn, uint64_t k0, uint64_t t0, uint32_t x)
{
    uint64_t ld = ld_or(o.ld, o.layout == GEMM_K_INNER ? rows : mn);
    o.ptr = (const char *)o.ptr + (o.layout == GEMM_K_INNER ? k0 : k0 * ld) * dtype_bytes(o.dtype);
    o.ld = ld;
    if (o.scale_inv) o.scale_inv += o.scale_gran == GRAN_1X128 ? mn * t0 : x;
    return o;
}

/* Group x of a weight gradient: K rows [k0, k0 + kg) of A and B, D_x at x·M·N. */
static GemmDesc wgrad_desc(const GroupedWgradDesc *d, uint32_t x, uint64_t k0, uint64_t t0, uint64_t kg, float *amax)
{
    GemmDesc g = {.m = d->m, .n = d->n, .k = kg, .d = d->d, .accum = d->accum, .acc_precision = d->acc_precision};
    g.a = k_slice(d->a, d->rows, d->m, k0, t0, x);
    g.b = k_slice(d->b, d->rows, d->n, k0, t0, x);
    g.d.ptr = (char *)d->d.ptr + (uint64_t)x * d->m * d->n * dtype_bytes(d->d.dtype);
    g.d.amax = d->d.amax ? amax : NULL;
    return g;
}

/* The counts: none negative, adding up to `rows`. */
static Status counts_check(const int32_t *counts, uint32_t G, uint64_t rows, const char *op, Err *e)
{
    uint64_t sum = 0;
    for (uint32_t x = 0; x < G; x++) {
        if (counts[x] < 0) return err_set(e, ST_USAGE, "%s: group %u has %d rows", op, x, (int)counts[x]);
        sum += (uint64_t)counts[x];
    }
    if (sum != rows)
        return err_set(e, ST_USAGE, "%s: the counts add up to %llu rows, the descriptor has %llu", op,
                       (unsigned long long)sum, (unsigned long long)rows);
    return ST_OK;
}

/* The group table of G groups in the backend's kept scratch: G Groups (zeroed), then room for G uint32
 * indices at *serial. NULL and e set when it cannot grow. */
static Group *group_table(Backend *bk, uint32_t G, uint32_t **serial, const char *op, Err *e)
{
    const uint64_t bytes = (uint64_t)G * (sizeof(Group) + sizeof(uint32_t)); /* G < 2^32: no overflow */
    Group *gr = (Group *)(void *)cpu_scratch(bk, CPU_SLOT_GROUPS, bytes / sizeof(float) + 1, e); /* 1: G = 0 */
    if (!gr) {
        err_prefix(e, "%s (%u groups)", op, G);
        return NULL;
    }
    memset(gr, 0, (size_t)G * sizeof *gr);
    *serial = (uint32_t *)(void *)(gr + G);
    return gr;
}

/* Every non-empty group of gr: the large ones through gemm() one after the other, then the small ones
 * one per pool task (their indices in serial, G slots); their amax max-combined into *amax (when set), in
 * group order. */
static Status run_groups(Backend *bk, Group *gr, uint32_t *serial, uint32_t G, float *amax, Err *e)
{
    Status st = ST_OK;
    uint32_t nserial = 0;
    uint64_t need0 = 0, need1 = 0;
    for (uint32_t x = 0; x < G && !st; x++) {
        const GemmDesc *g = &gr[x].g;
        if (!g->m || !g->n || !g->k) continue;
        /* a group gemm() would refuse (sizes beyond uint64) goes to gemm() for its message */
        gr[x].serial = 2.0 * (double)g->m * (double)g->n * (double)g->k < GROUP_SERIAL_FLOP &&
                       cpu_gemm_serial_plan(g, gr[x].need, NULL) == ST_OK;
        if (!gr[x].serial) {
            st = cpu_gemm(bk, g, e); /* its tiles on the pool, in the backend's scratch */
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
    if (!st && amax)
        for (uint32_t x = 0; x < G; x++)
            if (gr[x].g.m && gr[x].g.n && gr[x].g.k) *amax = fmaxf(*amax, gr[x].amax);
    return st;
}

Status cpu_grouped_gemm(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    Status st = counts_check(d->counts, d->groups, d->rows, "grouped_gemm", e);
    if (st || !d->rows) return st;
    uint32_t *serial = NULL;
    Group *gr = group_table(bk, d->groups, &serial, "grouped_gemm", e);
    if (!gr) return e ? e->st : ST_NOMEM;
    for (uint64_t x = 0, row0 = 0; x < d->groups; row0 += (uint64_t)d->counts[x], x++)
        gr[x].g = group_desc(d, (uint32_t)x, row0, (uint64_t)d->counts[x], &gr[x].amax);
    return run_groups(bk, gr, serial, d->groups, d->d.amax, e);
}

Status cpu_grouped_gemm_wgrad(Backend *bk, const GroupedWgradDesc *d, Err *e)
{
    Status st = counts_check(d->counts, d->groups, d->rows, "grouped_gemm_wgrad", e);
    if (st) return st;
    uint32_t *serial = NULL;
    Group *gr = group_table(bk, d->groups, &serial, "grouped_gemm_wgrad", e);
    if (!gr) return e ? e->st : ST_NOMEM;
    uint64_t bytes = d->m * d->n * dtype_bytes(d->d.dtype);
    for (uint64_t x = 0, k0 = 0, t0 = 0; x < d->groups;
         k0 += (uint64_t)d->counts[x], t0 += tiles((uint64_t)d->counts[x]), x++) {
        gr[x].g = wgrad_desc(d, (uint32_t)x, k0, t0, (uint64_t)d->counts[x], &gr[x].amax);
        if (!d->counts[x] && d->accum == GEMM_OVERWRITE) /* the sum over no rows */
            memset(gr[x].g.d.ptr, 0, (size_t)bytes);
    }
    return run_groups(bk, gr, serial, d->groups, d->d.amax, e);
}
