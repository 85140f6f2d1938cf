/* exec/model/model_shard.c — the distributed optimizer / ZeRO-1 over dp ranks,
 * as the plan shards it (planner/plan_mem.c plan_state_terms, plan_comm.c;
 * with experts plan_moe_mem.c, plan_moe_comm.c):
 *   - the parameters of a class (block linear weights; the others; the routed
 *     experts' weights) in parameter-table order form one flat range of E
 *     elements; every rank holds S = ceil(E / N) elements of each sharded state
 *     (master, Adam m and v: plan_state_sharded), N the class's group — the DP
 *     group, for the experts their expert-data-parallel group (dp / ep ranks ep
 *     apart holding the same experts), as Megatron-Core's distributed optimizer
 *     shards its expert-parallel buffers — place r owning [r·S, min((r+1)·S, E)),
 *     the last places' missing tail padding that nothing reads, so every rank's
 *     persistent bytes are the plan's ceil-rounded term byte for byte;
 *   - after the micro-batches each gradient (whole on every rank: ZeRO-1)
 *     is reduce-scattered in place over its class's group (CO_DP_GRAD_RS; the
 *     experts' CO_EDP_GRAD_RS, their weights CO_EDP_PARAM_AG; experts with
 *     nothing sharded — edp 1, or --dist-opt leaving the linears whole — are
 *     all-reduced whole over their group, model_step.c): the segment r owns
 *     becomes the sum over the ranks, folded in rank order like the
 *     all-reduce (exec/comm/comm_mpi.h), so the values are the DP all-reduce's;
 *   - the optimizer updates only the owned elements (master, m, v in the
 *     shard; gradient and working weight at the same elements);
 *   - every working weight is all-gathered in place in its own dtype
 *     (CO_DP_PARAM_AG: the recipe's param_gather_comm, which model_shard_check
 *     requires to be the weight's dtype).
 * One call per class and state (a bucket: the class's gradients, or its working
 * weights, lie back to back in one buffer, arena.h's packed terms; the plan
 * counts the same calls, planner/plan_comm.c plan_dp_buckets): the bytes per
 * step are the plan's, E · bytes · (N − 1)/N each.
 *
 * FP8-LM's linears (per-tensor scaled FP16 master, E4M3 m, FP16 v and E4M3
 * gradient, no working weight) shard the same way, with every per-tensor scale
 * the one the unsharded run computes, agreed over the ranks (MS-AMP):
 *   - the E4M3 gradients are reduce-scattered with a shared scale
 *     (comm_reduce_scatter_fp8_v: the all-reduce's codes on the owned segment);
 *   - the optimizer's two passes run apart (model_step.c): each rank's parts'
 *     new amaxes, one MAX all-reduce (model_shard_agree: the maximum of the
 *     parts' maxima is the tensor's, exactly), then each part stored with the
 *     scales those give — the codes and records of the whole tensor's update;
 *   - the GEMMs read the E4M3 copies, cast once per step after the update
 *     (exec/model/model_copies.c: a scale from the whole master's amax, agreed
 *     over the ranks): each rank casts its part of the master (cast_part:
 *     elementwise, so the codes of the whole cast) and the row-wise copy is
 *     all-gathered in E4M3 (the plan's param_gather_comm, once per step); the
 *     transposed copy is recast from it. The forward casts nothing.
 * MS-AMP O1's linears (scaled FP16 weight, no master, FP32 m and v sharded) take
 * the same road without the copies' gather: the optimizer's passes apart with the
 * weight's new amax agreed, each rank's elements of the weight stored with that
 * scale, the weights all-gathered in FP16 in one bucket, the copies cast whole
 * (model_copies.c).
 * So the loss curve is plain data parallelism's bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"

static const char *const class_name[2] = {"linear-weight", "other-parameter"}; /* the experts: linear */

/* FP8-LM's block linears, what the executor shards of a class with scaled states: a scaled FP16
 * master (MS-AMP's Adam) and no working weight, so the GEMMs read FP8 copies, gathered in the forward
 * format (the recipe's param_gather_comm); delayed scaling with the amax reduced over every rank, so
 * the copy's amax can be each shard's (MAX over the ranks = the tensor's); gradients kept and
 * reduce-scattered in one dtype (FP8 ones with a scale agreed over the ranks). */
static int fp8lm_class(const Recipe *r, const StateSet *s, Dtype gather, Dtype reduce)
{
    return s == &r->gemm && s->dt[STATE_WEIGHT] == DT_NONE && s->dt[STATE_MASTER] == DT_FP16 && recipe_fp8_gemm(r) &&
           gather == r->gemm_fwd && r->fp8_row == r->gemm_fwd && r->scaling == SCALING_DELAYED &&
           r->amax_reduce == AMAX_ALL && s->dt[STATE_GRAD] == reduce &&
           (!dtype_is_fp8(reduce) || exec_state_scaled(s, STATE_GRAD));
}

/* MS-AMP O1's block linears (exec_o1_states): Adam m and v sharded, the scaled FP16 weight updated on each
 * rank's elements with the scale agreed over the ranks and all-gathered in FP16 (the recipe's
 * param_gather_comm), the FP8 gradients reduce-scattered with a shared scale in their own dtype. */
static int o1_class(const Recipe *r, const StateSet *s, Dtype gather, Dtype reduce)
{
    return exec_o1_states(r, s) && gather == s->dt[STATE_WEIGHT] && reduce == s->dt[STATE_GRAD];
}

Status model_shard_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    if (in->sharding == SHARD_NONE) return ST_OK;
    if (in->sharding != SHARD_ZERO1 && in->sharding != SHARD_DIST_OPT)
        return err_set(e, ST_UNAVAILABLE,
                       "--zero %d: the executor shards the optimizer states only (--zero 1 or --dist-opt); ZeRO-2/3 "
                       "are planned, not run",
                       (int)in->sharding - (int)SHARD_ZERO1 + 1);
    const Recipe *r = in->recipe;
    const StateSet *set[2] = {&r->gemm, &r->other};
    const Dtype gather[2] = {r->comm_param_gather, r->other_comm_param_gather};
    const Dtype reduce[2] = {r->comm_dp_grad, r->other_comm_dp_grad};
    for (int c = 0; c < 2; c++) {
        const StateSet *s = set[c];
        int any = 0;
        for (int k = 0; k < STATE_COUNT_; k++) any |= s->dt[k] != DT_NONE && plan_state_sharded(in, s, (StateId)k);
        if (!any) continue;
        if (plan_state_sharded(in, s, STATE_WEIGHT) || plan_state_sharded(in, s, STATE_GRAD))
            return err_set(e, ST_UNAVAILABLE, "recipe %s, %s: sharded weights or gradients are not run", r->name,
                           sharding_name(in->sharding));
        if (s->scaled_mask && !fp8lm_class(r, s, gather[c], reduce[c]) && !o1_class(r, s, gather[c], reduce[c]))
            return err_set(e, ST_UNAVAILABLE,
                           "recipe %s, %s: %s states with per-tensor scaling records are sharded only as FP8-LM's "
                           "linears are (scaled FP16 master, no working weight, FP8 copies gathered in the forward "
                           "format, delayed scaling with the amax reduced over all ranks, gradients reduced in "
                           "their own dtype) or MS-AMP O1's (scaled FP16 weight gathered in FP16, FP32 m and v "
                           "sharded, scaled FP8 gradients reduced in their own dtype)",
                           r->name, sharding_name(in->sharding), class_name[c]);
        if (s->scaled_mask) continue;
        if (s->dt[STATE_WEIGHT] == DT_NONE || s->dt[STATE_WEIGHT] != gather[c])
            return err_set(e, ST_UNAVAILABLE,
                           "recipe %s, %s: %s weights are gathered in %s but kept in %s; the executor gathers the "
                           "working weight in its own dtype",
                           r->name, sharding_name(in->sharding), class_name[c], dtype_name(gather[c]),
                           dtype_name(s->dt[STATE_WEIGHT]));
        if (s->dt[STATE_GRAD] != reduce[c] || dtype_is_fp8(s->dt[STATE_GRAD]))
            return err_set(e, ST_UNAVAILABLE,
                           "recipe %s, %s: %s gradients kept in %s, reduced in %s; the executor reduce-scatters "
                           "FP32/BF16 gradients in their own dtype",
                           r->name, sharding_name(in->sharding), class_name[c], dtype_name(s->dt[STATE_GRAD]),
                           dtype_name(reduce[c]));
    }
    return ST_OK;
}

void model_shard_plan(Model *m, const Plan *p)
{
    const PlanInput *in = &p->in;
    const StateSet *set[MODEL_CLASSES] = {&m->recipe.gemm, &m->recipe.other, &m->recipe.gemm};
    /* the expert side folds the stage's tp x dp ranks as etp x ep x edp (model_groups.c): edp = tp·dp / (ep·etp) */
    const uint32_t ep = m->ep ? m->ep : 1, tp = m->tp ? m->tp : 1, edp = tp * m->dp / (ep * (m->etp ? m->etp : 1));
    m->shard_ways = 1;
    memset(m->class_elems, 0, sizeof m->class_elems);
    for (uint32_t i = 0; i < m->nparams; i++) {
        ModelParam *q = &m->params[i];
        q->flat = m->class_elems[model_class(q)];
        m->class_elems[model_class(q)] += q->numel;
    }
    /* the dense classes over the DP group, the routed experts over their EDP group (planner/plan_moe_mem.c:
     * plan_state_terms over d and over edp) */
    for (int c = 0; c < MODEL_CLASSES; c++) { /* an empty class (a dense model's experts) holds no shard */
        const uint32_t n = c == MODEL_CLASS_EXPERT ? edp : m->dp;
        m->shard_mask[c] = 0;
        for (int k = 0; n > 1 && m->class_elems[c] && k < STATE_COUNT_; k++)
            if (set[c]->dt[k] != DT_NONE && plan_state_sharded(in, set[c], (StateId)k)) m->shard_mask[c] |= 1u << k;
    }
    /* a group reduce-scatters when any of its classes shards a state (the plan's shard_any; for the experts
     * its edp_grad_reducescatter), else all-reduces */
    const int dense = (m->shard_mask[MODEL_CLASS_GEMM] | m->shard_mask[MODEL_CLASS_OTHER]) != 0;
    m->class_ways[MODEL_CLASS_GEMM] = m->class_ways[MODEL_CLASS_OTHER] = dense ? m->dp : 1;
    m->class_ways[MODEL_CLASS_EXPERT] = m->shard_mask[MODEL_CLASS_EXPERT] ? edp : 1;
    m->class_rank[MODEL_CLASS_GEMM] = m->class_rank[MODEL_CLASS_OTHER] = m->dp_rank;
    /* the EDP group's ranks are ep·etp apart in the stage, ordered by their rank within it (model_groups.c) */
    m->class_rank[MODEL_CLASS_EXPERT] = (m->tp_rank + tp * m->dp_rank) / (ep * (m->etp ? m->etp : 1));
    for (int c = 0; c < MODEL_CLASSES; c++) /* the widest group a class shards over (1: nothing sharded) */
        if (m->class_ways[c] > m->shard_ways) m->shard_ways = m->class_ways[c];
    for (int c = 0; c < MODEL_CLASSES; c++) { /* ceil(E / N): each place's part of the class */
        const uint64_t n = m->class_ways[c];
        m->shard_elems[c] = n > 1 ? (m->class_elems[c] + n - 1) / n : 0;
    }
}

/* Place r's flat range [lo, hi) of class c. */
static void rank_range(const Model *m, int c, uint32_t r, uint64_t *lo, uint64_t *hi)
{
    const uint64_t S = m->shard_elems[c], E = m->class_elems[c];
    *lo = (uint64_t)r * S < E ? (uint64_t)r * S : E;
    *hi = *lo + S < E ? *lo + S : E;
}

/* Elements of p in place r's range: [*a, *a + n) within p. */
static uint64_t overlap(const Model *m, const ModelParam *p, uint32_t r, uint64_t *a)
{
    uint64_t lo, hi, b = p->flat, e = p->flat + p->numel;
    rank_range(m, model_class(p), r, &lo, &hi);
    uint64_t s = lo > b ? lo : b, t = hi < e ? hi : e;
    *a = s - b;
    return t > s ? t - s : (*a = 0, 0);
}

void model_shard_bind(Model *m)
{
    for (uint32_t i = 0; i < m->nparams; i++) {
        ModelParam *q = &m->params[i];
        const int c = model_class(q);
        const uint32_t r = m->class_rank[c]; /* the place in the class's group */
        if (m->class_ways[c] == 1) {
            q->own_lo = 0, q->own_n = q->numel;
            continue;
        }
        q->own_n = overlap(m, q, r, &q->own_lo);
        const StateSet *s = model_states(m, q);
        void **st[STATE_COUNT_] = {&q->weight, &q->master, &q->grad, &q->m, &q->v};
        uint64_t at = q->flat + q->own_lo - (uint64_t)r * m->shard_elems[c]; /* in this rank's shard */
        for (int k = 0; k < STATE_COUNT_; k++)
            if (m->shard_mask[c] >> k & 1)
                *st[k] = q->own_n ? (uint8_t *)m->shard_buf[c][k] + at * dtype_bytes(s->dt[k]) : NULL;
    }
}

uint64_t model_own(const Model *m, const ModelParam *p, uint64_t *lo)
{
    if (!model_sharded(m, p)) return *lo = 0, p->numel;
    *lo = p->own_lo;
    return p->own_n;
}

void *model_state_at(const Model *m, const ModelParam *p, StateId st, void *base)
{
    if (!base || !model_sharded(m, p) || (m->shard_mask[model_class(p)] >> st & 1)) return base;
    return (uint8_t *)base + p->own_lo * dtype_bytes(model_states(m, p)->dt[st]);
}

/* counts[r] = elements of p place r of its class's group owns (they lie in rank order). */
static void counts_of(const Model *m, const ModelParam *p, uint64_t *counts)
{
    for (uint32_t r = 0; r < m->class_ways[model_class(p)]; r++) {
        uint64_t a;
        counts[r] = overlap(m, p, r, &a);
    }
}

int model_shard_copies(const Model *m, const ModelParam *p)
{
    return m->shard_ways > 1 && p->gemm && !p->weight && (m->shard_mask[MODEL_CLASS_GEMM] >> STATE_MASTER & 1);
}

/* FP8-LM's copies (exec/model/model_copies.c): this rank's elements of w's master (dequantized by its
 * record) cast with the weight's forward slot into the same elements of the row-wise copy — the codes
 * the unsharded cast of the whole master makes there — the slot's scale_inv set. Every rank calls it
 * (an empty part casts nothing). */
static Status cast_part(Model *m, ModelParam *w, Err *e)
{
    ScalingBank *fb = &m->sc.fwd;
    CastDesc c = {.in = w->own_n ? w->master : (void *)w->wq_row,
                  .in_dtype = w->own_n ? m->recipe.gemm.dt[STATE_MASTER] : fb->fmt,
                  .in_scale_inv = w->master_rec ? w->master_rec + REC_SCALE_INV : NULL,
                  .rows = 1,
                  .cols = w->own_n,
                  .out_dtype = fb->fmt,
                  .out_row = w->wq_row + w->own_lo,
                  .scale = fb->scale + w->wslot,
                  .scale_inv = fb->scale_inv + w->wslot};
    return m->bk->cast_transpose(m->bk, &c, e);
}

Status model_shard_copy(Model *m, ModelParam *w, CollectiveId id, Err *e)
{
    ScalingBank *fb = &m->sc.fwd;
    uint64_t *counts = calloc((size_t)m->dp, sizeof *counts);
    if (!counts) return err_set(e, ST_NOMEM, "out of memory");
    counts_of(m, w, counts);
    /* the row-wise copy gathered (every rank's part, in the forward format, counted under id), its
     * transposed copy recast from it */
    Status st = cast_part(m, w, e);
    if (!st) st = comm_all_gather_v(m->dpc, id, m->bk, w->wq_row, counts, fb->fmt, e);
    CastDesc c = {.in = w->wq_row,
                  .in_dtype = fb->fmt,
                  .in_scale_inv = fb->scale_inv + w->wslot,
                  .rows = w->rows,
                  .cols = w->cols,
                  .out_dtype = fb->fmt,
                  .out_col = w->wq_col,
                  .scale = fb->scale + w->wslot};
    if (!st && w->wq_col) st = m->bk->cast_transpose(m->bk, &c, e);
    free(counts);
    return st;
}

/* The class's first parameter (flat 0) and whether every parameter of it lies at base + flat elements of dtype
 * dt in state st's buffer (model_layout packs a sharded class's gradients and weights: arena.h). */
static ModelParam *class_base(Model *m, int c, StateId st, Dtype dt, int *contiguous)
{
    ModelParam *first = NULL;
    *contiguous = 1;
    for (uint32_t i = 0; i < m->nparams; i++) {
        ModelParam *p = &m->params[i];
        if (model_class(p) != c) continue;
        if (!first) first = p;
        const uint8_t *b = st == STATE_GRAD ? first->grad : first->weight, *a = st == STATE_GRAD ? p->grad : p->weight;
        if (a != b + p->flat * dtype_bytes(dt)) *contiguous = 0;
    }
    return first;
}

/* One bucket: class c's whole buffer of state st (its gradients or its working weights), reduce-scattered or
 * all-gathered in one call over the class's group, place r's segment its flat range [r·S, min((r+1)·S, E)) —
 * Megatron-Core's distributed optimizer (core_v0.16.0 megatron/core/distributed/param_and_grad_buffer.py,
 * _ParamAndGradBuffer: the parameters of a buffer lie back to back in one contiguous grad and one param buffer,
 * cut into buckets of bucket_size elements — None, one bucket per buffer, when overlap_grad_reduce is off, as
 * here —, each bucket padded to divide by the DP size and shard_buffer giving rank r the r-th of dp equal slices;
 * reduce_scatter_tensor over the grad bucket, all_gather_into_tensor over the param bucket). Our buffers are the
 * state classes (their shards are the plan's per-class terms); the last place's missing tail is padding in its
 * shard (model_shard_plan), not in the whole buffer. */
static Status bucket(Model *m, int c, StateId st, CollectiveId id, uint64_t *counts, Err *e)
{
    const StateSet *s = c == MODEL_CLASS_OTHER ? &m->recipe.other : &m->recipe.gemm;
    const Dtype dt = s->dt[st];
    int contiguous;
    ModelParam *p = class_base(m, c, st, dt, &contiguous);
    if (!p) return ST_OK;
    if (!contiguous)
        return err_set(e, ST_SOFTWARE, "the %s class's %s are not one buffer (model_layout packs them)",
                       c == MODEL_CLASS_EXPERT ? "expert" : class_name[c], st == STATE_GRAD ? "gradients" : "weights");
    Comm *cm = c == MODEL_CLASS_EXPERT ? m->edpc : m->dpc;
    for (uint32_t r = 0; r < m->class_ways[c]; r++) {
        uint64_t lo, hi;
        rank_range(m, c, r, &lo, &hi);
        counts[r] = hi - lo;
    }
    return st == STATE_GRAD ? comm_reduce_scatter_v(cm, id, m->bk, p->grad, counts, dt, COMM_SUM, e)
                            : comm_all_gather_v(cm, id, m->bk, p->weight, counts, dt, e);
}

/* Each sharded class's buffer of state st in one call (bucket), over the DP group (id) or, for the routed
 * experts, their EDP group (xid); one call per tensor where each tensor carries its own scale: FP8-LM's E4M3
 * gradients (comm_reduce_scatter_fp8_v agrees on each one's scale first) — its FP8 weight copies are gathered
 * per tensor after their casts (model_shard_copy). */
static Status each_class(Model *m, StateId st, CollectiveId id, CollectiveId xid, Err *e)
{
    uint64_t *counts = calloc((size_t)m->shard_ways, sizeof *counts);
    if (!counts) return err_set(e, ST_NOMEM, "out of memory");
    Status s = ST_OK;
    for (int c = 0; !s && c < MODEL_CLASSES; c++) {
        if (m->class_ways[c] <= 1 || !m->class_elems[c]) continue; /* all-reduced whole (model_step.c) */
        const CollectiveId cid = c == MODEL_CLASS_EXPERT ? xid : id;
        int alone = 0;
        for (uint32_t i = 0; !s && i < m->nparams; i++) {
            ModelParam *p = &m->params[i];
            if (model_class(p) != c) continue;
            Dtype dt = model_states(m, p)->dt[st];
            if (st == STATE_WEIGHT && model_shard_copies(m, p)) { /* FP8-LM: its copies (model_copies_cast) */
                alone = 1;
            } else if (st == STATE_GRAD && dtype_is_fp8(dt) && p->grad_rec) {
                alone = 1;
                counts_of(m, p, counts);
                s = comm_reduce_scatter_fp8_v(c == MODEL_CLASS_EXPERT ? m->edpc : m->dpc, cid, m->bk, p->grad,
                                              p->grad_rec, counts, dt, e);
            }
        }
        if (!s && !alone) s = bucket(m, c, st, cid, counts, e);
    }
    free(counts);
    return s;
}

Status model_shard_reduce(Model *m, Err *e) { return each_class(m, STATE_GRAD, CO_DP_GRAD_RS, CO_EDP_GRAD_RS, e); }

Status model_shard_gather(Model *m, Err *e) { return each_class(m, STATE_WEIGHT, CO_DP_PARAM_AG, CO_EDP_PARAM_AG, e); }

Status model_shard_agree(Model *m, float *amax, uint64_t n, Err *e)
{
    return m->dpc->all_reduce(m->dpc, COMM_UNPLANNED, m->bk, amax, n, DT_FP32, COMM_MAX, e);
}

int model_shard_spec(const Model *m, const ArenaSpec *spec, uint64_t *whole, uint64_t *lo)
{
    for (int c = 0; c < MODEL_CLASSES; c++)
        for (int k = 0; k < STATE_COUNT_; k++)
            if ((m->shard_mask[c] >> k & 1) && spec->dst.v == &m->shard_buf[c][k]) {
                uint64_t b = dtype_bytes(spec->dtype), r = m->class_rank[c];
                *whole = m->class_elems[c] * b;
                *lo = r * m->shard_elems[c] * b;
                return 1;
            }
    return 0;
}

Comm *model_shard_group(const Model *m, const ArenaSpec *spec)
{
    for (int c = 0; c < MODEL_CLASSES; c++)
        for (int k = 0; k < STATE_COUNT_; k++)
            if ((m->shard_mask[c] >> k & 1) && spec->dst.v == &m->shard_buf[c][k])
                return c == MODEL_CLASS_EXPERT ? m->edpc : m->dpc;
    return NULL;
}
