/* exec/backend/backend_check_moe.c — the shared descriptor checks of the
 * mixture-of-experts operations (exec/backend/backend.h: router_topk ... grouped_gemm;
 * the descriptors are exec/backend/backend_desc_moe.h's), as exec/backend/backend_check.c does for
 * the others: ST_USAGE naming the operation and the field (ST_UNAVAILABLE for
 * a legal request not implemented yet: block-scaled groups). What needs the data
 * (expert ids in range and distinct within a token, counts adding up to the
 * rows, a row map inside the permuted rows) is the backends'. */
#include <math.h>
#include <stdint.h>

#include "exec/backend/backend.h"
#include "exec/backend/backend_check_internal.h"

/* T·k rows fit the int32 counts and row indices. */
static Status rows_check(uint64_t tokens, uint32_t k, const char *op, Err *e)
{
    if (tokens <= INT32_MAX / k) return ST_OK;
    return err_set(e, ST_USAGE, "%s: %llu tokens x top-%u exceed the int32 row indices", op, (unsigned long long)tokens,
                   k);
}

/* T, E and k of a routing: at least one token and one expert, 1 ≤ k ≤ E. */
static Status route_check(uint64_t tokens, uint32_t experts, uint32_t k, const char *op, Err *e)
{
    if (!tokens || !experts) return err_set(e, ST_USAGE, "%s: no tokens or no experts", op);
    if (!k || k > experts) return err_set(e, ST_USAGE, "%s: top-k %u must be in [1, %u] (the experts)", op, k, experts);
    return rows_check(tokens, k, op, e);
}

static Status score_check(RouterType s, const char *op, Err *e)
{
    if (s == ROUTER_SOFTMAX || s == ROUTER_SIGMOID) return ST_OK;
    return err_set(e, ST_USAGE, "%s: unknown score function %d (softmax or sigmoid)", op, (int)s);
}

Status backend_check_router_topk(Backend *bk, const RouterDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "router_topk: no descriptor");
    Status st = route_check(d->tokens, d->experts, d->k, "router_topk", e);
    if (!st) st = score_check(d->score, "router_topk", e);
    if (!st && !isfinite(d->weight_scale))
        st = err_set(e, ST_USAGE, "router_topk: weight_scale %g is not finite", (double)d->weight_scale);
    if (!st && d->groups > 1) {
        uint32_t g = d->groups, per = d->experts / g;
        if (d->experts % g)
            st = err_set(e, ST_USAGE, "router_topk: %u groups do not divide the %u experts", g, d->experts);
        else if (!d->group_topk || d->group_topk > g)
            st = err_set(e, ST_USAGE, "router_topk: group_topk %u must be in [1, %u] (the groups)", d->group_topk, g);
        else if (d->k > d->group_topk * per)
            st = err_set(e, ST_USAGE, "router_topk: top-%u exceeds the %u experts of the %u groups open to a token",
                         d->k, d->group_topk * per, d->group_topk);
    }
    if (st) return st;
    return need(d->logits && d->scores && d->ids && d->weights && d->counts, e, "router_topk", "missing pointer");
}

Status backend_check_router_bwd(Backend *bk, const RouterBwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "router_bwd: no descriptor");
    Status st = route_check(d->tokens, d->experts, d->k, "router_bwd", e);
    if (!st) st = score_check(d->score, "router_bwd", e);
    if (!st && !isfinite(d->weight_scale))
        st = err_set(e, ST_USAGE, "router_bwd: weight_scale %g is not finite", (double)d->weight_scale);
    if (st) return st;
    return need(d->scores && d->ids && d->dweights && d->dlogits, e, "router_bwd", "missing pointer");
}

Status backend_check_router_aux_loss(Backend *bk, const RouterAuxDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "router_aux_loss: no descriptor");
    Status st = route_check(d->tokens, d->experts, d->k, "router_aux_loss", e);
    if (!st) st = score_check(d->score, "router_aux_loss", e);
    if (!st && (!isfinite(d->coeff) || !isfinite(d->dloss)))
        st = err_set(e, ST_USAGE, "router_aux_loss: coeff %g or dloss %g is not finite", (double)d->coeff,
                     (double)d->dloss);
    if (!st && d->counts && !d->shards) st = err_set(e, ST_USAGE, "router_aux_loss: counts of 0 shards");
    if (st) return st;
    return need(d->scores && d->ids && d->loss, e, "router_aux_loss", "missing pointer");
}

Status backend_check_moe_permute(Backend *bk, const MoePermuteDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "moe_permute: no descriptor");
    Status st = route_check(d->tokens, d->experts, d->k, "moe_permute", e);
    if (!st && !is_float(d->dtype) && !dtype_is_fp8(d->dtype))
        st = err_set(e, ST_USAGE, "moe_permute: dtype %s is not supported", dtype_name(d->dtype));
    if (!st && !d->cols) st = err_set(e, ST_USAGE, "moe_permute: zero width");
    if (st) return st;
    return need(d->ids && d->in && d->out && d->row_of, e, "moe_permute", "missing pointer");
}

/* T and k of a combine (the experts do not matter there), its width and dtype. */
static Status combine_check(uint64_t tokens, uint32_t k, uint64_t cols, Dtype dt, const char *op, Err *e)
{
    if (!tokens || !k || !cols) return err_set(e, ST_USAGE, "%s: no tokens, no slots (k) or zero width", op);
    Status st = rows_check(tokens, k, op, e);
    if (st || is_float(dt)) return st;
    return err_set(e, ST_USAGE, "%s: activation dtype %s is not fp32, fp16 or bf16", op, dtype_name(dt));
}

Status backend_check_moe_unpermute(Backend *bk, const MoeUnpermuteDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "moe_unpermute: no descriptor");
    Status st = combine_check(d->tokens, d->k, d->cols, d->dtype, "moe_unpermute", e);
    return st ? st : need(d->row_of && d->in && d->out, e, "moe_unpermute", "missing pointer");
}

Status backend_check_moe_unpermute_bwd(Backend *bk, const MoeUnpermuteBwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "moe_unpermute_bwd: no descriptor");
    Status st = combine_check(d->tokens, d->k, d->cols, d->dtype, "moe_unpermute_bwd", e);
    if (st) return st;
    return need(d->row_of && d->weights && d->dout && d->in && d->din, e, "moe_unpermute_bwd", "missing pointer");
}

/* What both grouped GEMMs require beyond gemm's rules (said by `all`, a stand-in GemmDesc of all the
 * rows, with gemm_desc_check's messages under the operation's name): counts, a float D without scale,
 * FP8 scales per group — per-tensor, or blocks that do not cross groups: the ragged operands (grouped_gemm's
 * A, both of the weight gradient's, ragged along K) in 1x128 tiles, the packed weights in 1x128 or 128x128
 * (ragged: which operands are cut into groups along their rows). */
static Status group_check(const char *op, const int32_t *counts, const GemmDesc *all, int ragged_b, Err *e)
{
    if (!counts) return err_set(e, ST_USAGE, "%s: no counts (rows per group)", op);
    if (all->d.scale || !is_float(all->d.dtype))
        return err_set(e, ST_USAGE, "%s: output D is %s%s (expected fp32, fp16 or bf16, unscaled)", op,
                       dtype_name(all->d.dtype), all->d.scale ? " with a scale" : "");
    Err sub = {0};
    if (gemm_desc_check(all, &sub)) return err_set(e, ST_USAGE, "%s: %s", op, sub.msg + sizeof "gemm: " - 1);
    const GemmOperand *ops[2] = {&all->a, &all->b};
    for (int i = 0; i < 2; i++) {
        Granularity gr = ops[i]->scale_gran;
        if (dtype_is_fp8(ops[i]->dtype) && gr == GRAN_128X128 && (i == 0 || ragged_b))
            return err_set(e, ST_USAGE,
                           "%s: operand %s has 128x128 scales; its groups are ragged along %s, so its blocks "
                           "would cross them (1x128 or per-tensor)",
                           op, i ? "B" : "A", ragged_b ? "K" : "the rows");
    }
    return ST_OK;
}

/* A grouped GEMM: its own shape, B packed (the groups' weights follow each other), then group_check. */
Status backend_check_grouped_gemm(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "grouped_gemm: no descriptor");
    if (!d->groups || !d->n || !d->k)
        return err_set(e, ST_USAGE, "grouped_gemm: empty shape groups=%u n=%llu k=%llu", d->groups,
                       (unsigned long long)d->n, (unsigned long long)d->k);
    if (d->counts && d->b.ld)
        return err_set(e, ST_USAGE, "grouped_gemm: operand B must be packed (ld 0): groups follow each other");
    GemmDesc all = {.m = d->rows ? d->rows : 1, .n = d->n, .k = d->k, .a = d->a, .b = d->b, .d = d->d};
    all.accum = d->accum;
    return group_check("grouped_gemm", d->counts, &all, 0, e);
}

/* The weight gradient: its own shape, D packed (the groups' gradients follow each other), then group_check
 * (K, the rows, ragged). */
Status backend_check_grouped_gemm_wgrad(Backend *bk, const GroupedWgradDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "grouped_gemm_wgrad: no descriptor");
    if (!d->groups || !d->m || !d->n)
        return err_set(e, ST_USAGE, "grouped_gemm_wgrad: empty shape groups=%u m=%llu n=%llu", d->groups,
                       (unsigned long long)d->m, (unsigned long long)d->n);
    if (d->counts && d->d.ld)
        return err_set(e, ST_USAGE, "grouped_gemm_wgrad: output D must be packed (ld 0): groups follow each other");
    GemmDesc all = {.m = d->m, .n = d->n, .k = d->rows ? d->rows : 1, .a = d->a, .b = d->b, .d = d->d};
    all.accum = d->accum;
    return group_check("grouped_gemm_wgrad", d->counts, &all, 1, e);
}
