/* exec/model/model_pp.c — pipeline parallelism with the 1F1B schedule
 * (Narayanan et al. 2021, PipeDream-Flush) over pp stages of CPU ranks, each
 * stage tp x dp ranks (exec/model/model_groups.c: the pipeline group ppc holds
 * one rank of each stage with the same TP and DP coordinates).
 *
 * Stage s holds its layers (the plan's first, middle and last stage layers),
 * the first stage the embedding, the last the final norm, LM head and loss
 * (and the MTP depth, Megatron-Core's mtp_process stage); a tied head, or the
 * MTP depth's lookup, is the last stage's own copy of the embedding,
 * initialised with the same values, whose gradient the first and last stage
 * sum after the step (the plan's emb_grad_allreduce, over embc; a middle stage
 * takes no part; Megatron-Core core_v0.16.0 _allreduce_word_embedding_grads). A
 * micro-batch's activations (the last block's output, B·T/tp x C in the
 * activation dtype) go to the next stage and its input gradient back
 * (pp_send_recv: one send a micro-batch each way: the end stages send m, a
 * middle stage, which receives and sends both ways, 2m; the row's seconds are
 * the sends' and the recvs' transfers, a recv's wait for the other stage
 * counted apart in collective_wait: exec/comm/comm_mpi.c). Stage s runs min(pp − s − 1, m) warm-up forwards, then
 * one forward and one backward at a time, then the remaining backwards, so at
 * most pp − s micro-batches are in flight: their saved activations live in
 * that many slots (the plan's in-flight micro-batches). Receives block; sends
 * return at once (MPI: a buffered copy, exec/comm/comm_mpi.c), so neighbouring
 * stages sending to each other at the same moment never wait on each other.
 * Gradient accumulation order over micro-batches is one rank's (backwards run
 * 0, 1, ...).
 *
 * FP8: a bank's delayed update follows every forward and every backward (TE's
 * order), so forwards see the scales one rank would; a micro-batch's saved FP8
 * inputs keep the scale_inv they were cast with (pp_xsinv, per slot: a later
 * forward recasts the bank's), while the weights' FP8 copies are the latest
 * forward's (a backward after another micro-batch's forward reads the weight
 * cast at that forward's scale: the one difference from one rank's order).
 * The routed experts keep theirs likewise (pp_xesc: each expert's FC1 and FC2
 * input scale_inv, and at ep 1 FC2's input scale, with which the backward casts
 * the recomputed expert outputs as the forward did; at pp 1 under delayed
 * scaling that scale alone: the update after the forward moves it). */
#include "exec/model/model_internal.h"

#include <string.h>
#include <time.h>

Status model_pp_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    if (in->pp == 1) return ST_OK;
    if (in->cp != 1 || in->vpp > 1)
        return err_set(e, ST_UNAVAILABLE,
                       "--pp %u with cp %u, vpp %u: the executor's pipeline runs one chunk per stage (no interleaved "
                       "1F1B) and no context parallelism",
                       in->pp, in->cp, in->vpp);
    if (!p->first_layers || !p->last_layers || (in->pp > 2 && !p->mid_layers))
        return err_set(e, ST_USAGE, "--pp %u: a stage has no layers (first %u, middle %u, last %u)", in->pp,
                       p->first_layers, p->mid_layers, p->last_layers);
    return ST_OK;
}

void model_pp_stage(const Plan *p, Model *m)
{
    const uint32_t pp = p->in.pp ? p->in.pp : 1;
    m->pp = pp;
    m->layers_total = p->in.model->layers;
    model_groups_coords(p, m);
    if (pp == 1) m->stage = 0;
    m->layer0 = 0;
    if (pp > 1) {
        m->spec.layers = m->stage == 0 ? p->first_layers : m->stage + 1 == pp ? p->last_layers : p->mid_layers;
        m->layer0 = m->stage == 0 ? 0 : p->first_layers + (m->stage - 1) * p->mid_layers;
    }
    uint32_t inflight = pp - m->stage; /* 1F1B: plan_inflight_mbs */
    m->slots = inflight < p->microbatches ? inflight : p->microbatches;
    m->slot = 0;
}

/* The stage's first MoE block (the model's dense first layers come first) and the scales a MoE block keeps
 * per expert and in-flight micro-batch: FC1's and FC2's saved input's scale_inv, and at ep 1 the scale FC2's
 * input was cast with (the backward recomputes the experts' outputs there: model_moe_fp8_recompute). */
static uint32_t moe_first(const Model *m)
{
    uint32_t d0 = m->spec.dense_layers > m->layer0 ? m->spec.dense_layers - m->layer0 : 0;
    return d0 < m->spec.layers ? d0 : m->spec.layers;
}
static uint32_t expert_scales(const Model *m) { return m->pp == 1 ? 1 : 2 + (m->ep == 1); }

void model_pp_layout(Model *m, int bind, ArenaSpecs *sp)
{
    if (!recipe_fp8_gemm(&m->recipe) || !dtype_is_fp8(m->recipe.saved_input)) return;
    /* block scales: a saved input's 1x128 tiles keep their scales beside its codes, in the micro-batch's own
     * slot (model_layout.c's saved()), and no per-tensor bank moves between a forward and its backward */
    if (exec_block_scaled(&m->recipe)) return;
    if (m->pp > 1)
        arena_add(sp, MT_TRANSIENT, DT_FP32, (uint64_t)m->slots * m->spec.layers * LIN_COUNT,
                  bind ? &m->act.pp_xsinv : NULL, "pp_saved_scale_inv", -1);
    const uint32_t nmoe = m->spec.experts ? m->spec.layers - moe_first(m) : 0;
    if (!nmoe) return;
    /* pp 1: the bank's scale_inv stay the forward's until the backward (the update moves only the scales);
     * the scale FC2's input was cast with is kept where the update after the forward moves it (delayed) and
     * the backward recomputes the experts' outputs (ep 1) */
    if (m->pp == 1 && (m->ep > 1 || m->recipe.scaling != SCALING_DELAYED)) return;
    arena_add(sp, MT_TRANSIENT, DT_FP32, (uint64_t)m->slots * nmoe * expert_scales(m) * (m->spec.experts / m->ep),
              bind ? &m->act.pp_xesc : NULL, "pp_expert_scales", -1);
}

float *model_pp_expert_scales(Model *m, uint32_t l, int which)
{
    if (!m->act.pp_xesc || (m->pp == 1 && which != 2)) return NULL;
    const uint64_t E = m->spec.experts / m->ep, n = expert_scales(m),
                   blk = (uint64_t)m->slot * (m->spec.layers - moe_first(m)) + (l - moe_first(m));
    return m->act.pp_xesc + (blk * n + (m->pp == 1 ? 0 : (uint64_t)which)) * E;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Forward (bwd 0) or backward (1) of micro-batch i, timed into ph. */
static Status pass(Model *m, uint32_t i, int bwd, const int32_t *in, const int32_t *tgt, double *ph, double *sum,
                   Err *e)
{
    const uint64_t BT = model_tokens(m);
    m->mb = i;
    m->slot = i % m->slots;
    double t0 = now_s();
    Status st = bwd ? model_backward(m, e) : model_forward(m, in + i * BT, tgt + i * BT, model_dloss(m), e);
    if (!st && recipe_fp8_gemm(&m->recipe)) /* TE's order: a bank's update after each forward / backward */
        st = bwd ? model_update_bank(m, &m->sc.bwd, &m->tr_bwd, e) : model_update_bank(m, &m->sc.fwd, &m->tr_fwd, e);
    if (!st) st = m->bk->sync(m->bk, e);
    ph[bwd ? PHASE_BWD : PHASE_FWD] += now_s() - t0;
    if (!st && !bwd && model_last(m)) st = model_add_losses(m, sum, e);
    return st;
}

Status model_pp_run(Model *m, const int32_t *inputs, const int32_t *targets, double *ph, double *sum, Err *e)
{
    const uint32_t M = m->microbatches, W = m->slots - 1; /* warm-up forwards: min(pp − s, M) − 1 */
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < W; i++) st = pass(m, i, 0, inputs, targets, ph, sum, e);
    for (uint32_t i = 0; !st && i + W < M; i++) {
        st = pass(m, i + W, 0, inputs, targets, ph, sum, e);
        if (!st) st = pass(m, i, 1, inputs, targets, ph, sum, e);
    }
    for (uint32_t i = M - W; !st && i < M; i++) st = pass(m, i, 1, inputs, targets, ph, sum, e);
    m->mb = m->slot = 0;
    return st;
}

Status model_pp_finish_grads(Model *m, Err *e)
{
    if (m->pp == 1 || !(m->spec.tied_embeddings || m->mtp_model) || !(model_first(m) || model_last(m))) return ST_OK;
    ModelParam *w = model_find_param(m, PK_WTE, -1); /* stage 0's embedding, the last stage's head or MTP copy */
    return m->embc->all_reduce(m->embc, CO_EMB_GRAD_AR, m->bk, w->grad, w->numel, model_states(m, w)->dt[STATE_GRAD],
                               COMM_SUM, e);
}

Status model_pp_share_loss(Model *m, float *loss, Err *e)
{
    if (m->pp == 1) return ST_OK;
    /* the loss, then with MTP the last stage's mean of each depth: its double's 8 bytes as two FP32 words (a
     * broadcast moves bytes, no arithmetic), so every stage logs one rank's value; act.losses holds B·T >= 2
     * floats */
    float w[2] = {*loss, 0.0f};
    Status st = ST_OK;
    for (uint32_t k = 0; !st && k < 1 + m->mtp_model; k++) {
        const uint64_t n = k ? 2 : 1;
        if (k) memcpy(w, &m->mtp_loss[k - 1], sizeof m->mtp_loss[0]);
        st = m->bk->copy_to_device(m->bk, m->act.losses, w, n * sizeof *w, e);
        if (!st) st = m->ppc->broadcast(m->ppc, COMM_UNPLANNED, m->bk, m->act.losses, n, DT_FP32, (int)m->pp - 1, e);
        if (!st) st = m->bk->copy_to_host(m->bk, w, m->act.losses, n * sizeof *w, e);
        if (!st && !k) *loss = w[0];
        if (!st && k) memcpy(&m->mtp_loss[k - 1], w, sizeof m->mtp_loss[0]);
    }
    return st;
}
