/* exec/model/model_copies.c — FP8-LM's and MS-AMP O1's FP8 weight copies, cast
 * once per step from the FP16 tensor the optimizer has just written.
 *
 * FP8-LM (Peng et al. 2023; MS-AMP's distributed optimizer) keeps no working
 * weight: after each update the master is cast to the FP8 weight, with a
 * scale from that weight's own amax, the FP8 weight (and its scale_inv) is
 * all-gathered over the data-parallel ranks, and every micro-batch's GEMMs
 * read it as it is. So here, for each block linear whose GEMMs read kept FP8
 * copies of a per-tensor scaled FP16 master with no working weight (fp8lm):
 *   - amax: the master as stored (FP16 codes x scale_inv), the whole tensor's
 *     — each rank measures what it holds (its TP slice; under ZeRO-1 /
 *     --dist-opt its part of that), one MAX all-reduce of one float per copy
 *     over the ranks holding the other parts (TP, sharded DP; COMM_UNPLANNED:
 *     the plan counts no such call);
 *   - scale: the current-scaling rule (the bank's format: fmax / amax /
 *     2^margin), into the weight's forward slot; its amax-history row is left
 *     0, so the bank's delayed updates keep that scale all step (a tensor that
 *     did not run: exec/backend/scaling.c);
 *   - the copies: unsharded, the master cast into the row-wise and transposed
 *     copies; sharded, each rank casts its part into the row-wise copy (the
 *     codes the whole cast makes there: the cast is elementwise), all-gathered
 *     in FP8 under id (the plan's dp_param_allgather after a step), and the
 *     transposed copy recast from it (FP8 codes decoded with 1/scale and
 *     encoded with scale: the same codes).
 * MS-AMP O1 (msamp-o1: a scaled FP16 weight updated in place, no master) casts
 * its copies the same way from that weight — MS-AMP's FP8 linear casts the
 * FP16 weight in every forward with a scale from the weight's own amax
 * (msamp/nn/functional.py, in-time scaling), and the weight changes only at the
 * optimizer step, so one cast per step gives the same codes; under ZeRO-1 /
 * --dist-opt the weight is all-gathered whole (FP16) first, so each rank casts
 * it whole and no FP8 gather runs.
 * The forward casts nothing for these weights: one cast and one gather per
 * step. model_create casts the first copies (its gather COMM_UNPLANNED); a
 * checkpoint holds the copies and the bank, so --resume restores them. */
#include <stdlib.h>

#include "exec/model/model_internal.h"

int model_copies_once(const Model *m, const ModelParam *p)
{
    if (!p->gemm || !p->wq_row || !recipe_fp8_gemm(&m->recipe)) return 0;
    if (model_o1(m, p)) return p->weight_rec != NULL;
    return !p->weight && p->master_rec && m->recipe.gemm.dt[STATE_MASTER] == DT_FP16;
}

/* 1 when w's FP16 source is split over the DP ranks when the copies are cast: FP8-LM's sharded master
 * (MS-AMP O1's weight is whole again, all-gathered, before its copies are cast). */
static int split_src(const Model *m, const ModelParam *w) { return m->shard_ways > 1 && !model_o1(m, w); }

static float *hist0(Model *m, const ModelParam *w) { return m->sc.fwd.amax_history + w->wslot; }

/* The ranks holding other parts of a copy's tensor: TP slices, sharded DP parts; NULL when none. */
static Comm *parts_group(Model *m, const ModelParam *w)
{
    const int tp = m->tp > 1, dp = split_src(m, w);
    return tp && dp ? m->amaxc : tp ? m->tpc : dp ? m->dpc : NULL;
}

/* Into hist0: the amax of this rank's part of w's master, dequantized by its record (an empty part
 * measures nothing and leaves 0). */
static Status part_amax(Model *m, ModelParam *w, Err *e)
{
    float *rec;
    void *src = model_fp16_src(m, w, &rec);
    uint64_t lo = 0, n = split_src(m, w) ? model_own(m, w, &lo) : w->numel;
    CastDesc c = {.in = n ? (model_o1(m, w) ? src : model_state_at(m, w, STATE_MASTER, src)) : (void *)w->wq_row,
                  .in_dtype = n ? DT_FP16 : m->sc.fwd.fmt,
                  .in_scale_inv = rec + REC_SCALE_INV,
                  .rows = 1,
                  .cols = n,
                  .amax = hist0(m, w)};
    Status st = m->bk->memset0(m->bk, hist0(m, w), sizeof(float), e);
    return st ? st : m->bk->cast_transpose(m->bk, &c, e);
}

/* Every copy's whole-tensor amax in its hist0: one MAX all-reduce over the parts' ranks. */
static Status agree(Model *m, Comm *c, Err *e)
{
    float *a = calloc((size_t)m->nparams + 1, sizeof *a);
    if (!a) return err_set(e, ST_NOMEM, "out of memory");
    uint64_t n = 0;
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < m->nparams; i++)
        if (model_copies_once(m, &m->params[i]))
            st = m->bk->copy_to_host(m->bk, &a[n++], hist0(m, &m->params[i]), sizeof(float), e);
    if (!st) st = c->all_reduce(c, COMM_UNPLANNED, m->bk, a, n, DT_FP32, COMM_MAX, e);
    n = 0;
    for (uint32_t i = 0; !st && i < m->nparams; i++)
        if (model_copies_once(m, &m->params[i]))
            st = m->bk->copy_to_device(m->bk, hist0(m, &m->params[i]), &a[n++], sizeof(float), e);
    free(a);
    return st;
}

/* Unsharded: the whole master cast into both copies with the slot's scale (its scale_inv set). */
static Status cast_whole(Model *m, ModelParam *w, Err *e)
{
    ScalingBank *fb = &m->sc.fwd;
    float *rec;
    void *src = model_fp16_src(m, w, &rec);
    CastDesc c = {.in = src,
                  .in_dtype = DT_FP16,
                  .in_scale_inv = rec + REC_SCALE_INV,
                  .rows = w->rows,
                  .cols = w->cols,
                  .out_dtype = fb->fmt,
                  .out_row = w->wq_row,
                  .out_col = w->wq_col,
                  .scale = fb->scale + w->wslot,
                  .scale_inv = fb->scale_inv + w->wslot};
    return m->bk->cast_transpose(m->bk, &c, e);
}

Status model_copies_cast(Model *m, CollectiveId id, Err *e)
{
    ScalingBank *fb = &m->sc.fwd;
    Comm *group = NULL;
    int any = 0;
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < m->nparams; i++)
        if (model_copies_once(m, &m->params[i]))
            any = 1, group = parts_group(m, &m->params[i]), st = part_amax(m, &m->params[i], e);
    if (!any) return st;
    if (!st && group) st = agree(m, group, e);
    for (uint32_t i = 0; !st && i < m->nparams; i++) {
        ModelParam *w = &m->params[i];
        if (!model_copies_once(m, w)) continue;
        st = m->bk->scaling_from_amax(m->bk, 1, fb->fmt, EXEC_FP8_MARGIN, hist0(m, w), fb->scale + w->wslot, e);
        if (!st) st = m->bk->memset0(m->bk, hist0(m, w), sizeof(float), e); /* the delayed updates pass it by */
        if (!st) st = split_src(m, w) ? model_shard_copy(m, w, id, e) : cast_whole(m, w, e);
    }
    return st;
}
