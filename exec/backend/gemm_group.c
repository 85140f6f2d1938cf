/* exec/backend/gemm_group.c — the groups of a grouped GEMM as GemmDescs (gemm_group.h). */
#include "exec/backend/gemm_group.h"

#include "fp8/dtype.h"

static uint64_t ld_or(uint64_t ld, uint64_t packed) { return ld ? ld : packed; }

Status gemm_group_counts_check(const int32_t *counts, uint32_t groups, uint64_t rows, const char *op, Err *e)
{
    uint64_t sum = 0;
    for (uint32_t x = 0; x < groups; x++) {
        if (counts[x] < 0) return err_set(e, ST_USAGE, "%s: group %u has %d rows", op, x, (int)counts[x]);
        sum += (uint64_t)counts[x]; /* ≤ 2^32 · 2^31: no overflow */
    }
    if (sum != rows)
        return err_set(e, ST_USAGE, "%s: the counts add up to %llu rows, the descriptor has %llu", op,
                       (unsigned long long)sum, (unsigned long long)rows);
    return ST_OK;
}

/* Group x's first scale in a (G, N, K) weight operand: a per-tensor scale each, or its own blocks. */
static const float *weight_scales(const GemmOperand *o, uint32_t x, uint64_t n, uint64_t k)
{
    if (o->scale_gran == GRAN_1X128) return o->scale_inv + (uint64_t)x * n * gemm_group_tiles(k);
    if (o->scale_gran == GRAN_128X128) return o->scale_inv + (uint64_t)x * gemm_group_tiles(n) * gemm_group_tiles(k);
    return o->scale_inv + x;
}

GemmDesc gemm_group_desc(const GroupedGemmDesc *d, uint32_t x, uint64_t row0, uint64_t m)
{
    uint64_t lda = ld_or(d->a.ld, d->a.layout == GEMM_K_INNER ? d->k : d->rows), ldd = ld_or(d->d.ld, d->n);
    GemmDesc g = {.m = m, .n = d->n, .k = d->k, .a = d->a, .b = d->b, .d = d->d, .accum = d->accum};
    g.acc_precision = d->acc_precision;
    /* K_INNER: rows row0.. of (rows, K); K_OUTER: columns row0.. of (K, rows) */
    g.a.ptr = (const char *)d->a.ptr + (d->a.layout == GEMM_K_INNER ? row0 * lda : row0) * dtype_bytes(d->a.dtype);
    g.a.ld = lda;
    g.b.ptr = (const char *)d->b.ptr + (uint64_t)x * d->n * d->k * dtype_bytes(d->b.dtype);
    if (d->a.scale_inv)
        g.a.scale_inv = d->a.scale_inv + (d->a.scale_gran == GRAN_1X128 ? row0 * gemm_group_tiles(d->k) : x);
    if (d->b.scale_inv) g.b.scale_inv = weight_scales(&d->b, x, d->n, d->k);
    g.d.ptr = (char *)d->d.ptr + row0 * ldd * dtype_bytes(d->d.dtype);
    g.d.ld = ldd;
    return g;
}

/* Operand o's rows [k0, k0 + kg) along K, of `rows` in all, its M/N extent mn. */
static GemmOperand k_slice(GemmOperand o, uint64_t rows, uint64_t mn, uint64_t k0, uint64_t t0, uint32_t x)
{
    uint64_t ld = ld_or(o.ld, o.layout == GEMM_K_INNER ? rows : mn);
    o.ptr = (const char *)o.ptr + (o.layout == GEMM_K_INNER ? k0 : k0 * ld) * dtype_bytes(o.dtype);
    o.ld = ld;
    if (o.scale_inv) o.scale_inv += o.scale_gran == GRAN_1X128 ? mn * t0 : x;
    return o;
}

GemmDesc gemm_group_wgrad_desc(const GroupedWgradDesc *d, uint32_t x, uint64_t k0, uint64_t t0, uint64_t kg)
{
    GemmDesc g = {.m = d->m, .n = d->n, .k = kg, .d = d->d, .accum = d->accum, .acc_precision = d->acc_precision};
    g.a = k_slice(d->a, d->rows, d->m, k0, t0, x);
    g.b = k_slice(d->b, d->rows, d->n, k0, t0, x);
    g.d.ptr = (char *)d->d.ptr + (uint64_t)x * d->m * d->n * dtype_bytes(d->d.dtype);
    return g;
}
