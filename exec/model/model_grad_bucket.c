/* exec/model/model_grad_bucket.c — the data-parallel gradient all-reduce in buckets, as Megatron-Core's DDP makes
 * it: the gradients of one class (the block linear weights, the others, the routed experts) lie back to back in
 * one buffer (the arena's packed gradient term of the class, in parameter order, no gap: exec/model/model_layout.c),
 * and one call reduces each class's buffer. The executor reduces after the backward, with no overlap: Megatron
 * then keeps one bucket per buffer (megatron/training/training.py, get_model: bucket_size is set to None when
 * overlap_grad_reduce is off; core_v0.7.0), so a buffer is not cut at any size. The classes stay apart even when
 * their dtypes agree (Megatron's one buffer per dtype would join them), as the distributed optimizer's buckets do
 * (model_shard.c); the plan counts the same calls (planner/plan_comm.c plan_dp_buckets). An FP8 gradient with its
 * own scaling record is reduced alone (comm_all_reduce_fp8 agrees on its scale first). Every element is summed in
 * rank order whatever call it travels in (comm_mpi_coll.c's all-reduce folds each slice rank by rank), so the buckets
 * leave the sums bit for bit as one call per tensor made them. */
#include "exec/model/grad_bucket.h"

#include <stdlib.h>

#include "exec/model/model_internal.h"

static int span_order(const void *a, const void *b)
{
    const GradSpan *x = a, *y = b;
    if (x->group != y->group) return x->group - y->group;
    if (x->cls != y->cls) return x->cls - y->cls;
    if (x->dtype != y->dtype) return x->dtype - y->dtype;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

uint32_t grad_buckets(GradSpan *v, uint32_t n, uint32_t *first)
{
    if (n) qsort(v, n, sizeof *v, span_order);
    uint32_t nb = 0;
    for (uint32_t k = 0; k < n; k++) {
        const GradSpan *p = k ? &v[k - 1] : NULL;
        int joins = p && !p->alone && !v[k].alone && p->group == v[k].group && p->cls == v[k].cls &&
                    p->dtype == v[k].dtype && p->addr + p->bytes == v[k].addr;
        if (!joins) first[nb++] = k;
    }
    return nb;
}

/* Whether parameter p's gradient is all-reduced here (not the distributed optimizer's reduce-scatter, not a
 * group of one beside other ranks), and over which communicator. */
static Comm *grad_comm(const Model *m, const ModelParam *p)
{
    if (model_sharded(m, p)) return NULL;
    Comm *c = p->expert ? m->edpc : m->dpc;
    if (c->size == 1 && m->comm->size > 1) return NULL; /* TP or PP alone (dp 1), EP alone: no such group */
    return c;
}

/* One bucket: spans v[0..n), of one group and dtype, back to back from v[0].addr (or one span alone). */
static Status reduce_bucket(Model *m, const GradSpan *v, uint32_t n, Err *e)
{
    ModelParam *p = &m->params[v[0].param];
    Comm *c = grad_comm(m, p);
    CollectiveId id = p->expert ? CO_EDP_GRAD_AR : CO_DP_GRAD_AR;
    Dtype dt = (Dtype)v[0].dtype;
    if (v[0].alone) return comm_all_reduce_fp8(c, id, m->bk, p->grad, p->grad_rec, p->numel, dt, e);
    uint64_t count = 0;
    for (uint32_t k = 0; k < n; k++) count += m->params[v[k].param].numel;
    return c->all_reduce(c, id, m->bk, p->grad, count, dt, COMM_SUM, e);
}

/* The buckets, made once (the gradients stay where the arena put them): a step allocates nothing. */
static Status make_buckets(Model *m, Err *e)
{
    GradSpan *v = malloc(sizeof *v * (m->nparams ? m->nparams : 1));
    uint32_t *first = malloc(sizeof *first * (m->nparams + 1u)), n = 0;
    if (!v || !first) {
        free(v), free(first);
        return err_set(e, ST_NOMEM, "out of memory listing %u gradients", m->nparams);
    }
    for (uint32_t i = 0; i < m->nparams; i++) {
        ModelParam *p = &m->params[i];
        Comm *c = grad_comm(m, p);
        if (!c) continue;
        Dtype dt = model_states(m, p)->dt[STATE_GRAD];
        v[n++] = (GradSpan){.param = i,
                            .group = p->expert,
                            .cls = (int)model_class(p),
                            .dtype = (int)dt,
                            .alone = dtype_is_fp8(dt) && p->grad_rec && c->size > 1,
                            .addr = (uintptr_t)p->grad,
                            .bytes = p->numel * dtype_bytes(dt)};
    }
    m->grad_buckets = grad_buckets(v, n, first);
    first[m->grad_buckets] = n;
    m->grad_spans = v, m->grad_first = first;
    return ST_OK;
}

Status model_reduce_grads(Model *m, Err *e)
{
    Status st = m->grad_spans ? ST_OK : make_buckets(m, e);
    const uint32_t *f = m->grad_first;
    for (uint32_t b = 0; !st && b < m->grad_buckets; b++)
        st = reduce_bucket(m, m->grad_spans + f[b], f[b + 1] - f[b], e);
    return st;
}
