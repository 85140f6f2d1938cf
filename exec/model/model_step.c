/* exec/model/model_step.c — the training step: forward and backward of every
 * micro-batch (gradient accumulation; scaling updates after each forward and
 * backward, TE's order), the gradient all-reduce and the optimizer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/model/model_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void model_moe_lap_start(Model *m)
{
    if (m->moe_timed) m->moe_mark = now_s();
}

Status model_moe_lap(Model *m, MoePart part, Status st)
{
    if (!m->moe_timed) return st;
    double t = now_s();
    m->moe_lap_s[part] += t - m->moe_mark;
    m->moe_mark = t;
    return st;
}

/* Copy a bank's row 0 (this step's amax) and scales to the trace. */
static Status trace_before(Model *m, ScalingBank *b, BankTrace *t, Err *e)
{
    if (!m->trace) return ST_OK;
    Status st = m->bk->copy_to_host(m->bk, t->amax, b->amax_history, b->n * sizeof(float), e);
    if (!st) st = m->bk->copy_to_host(m->bk, t->scale_used, b->scale, b->n * sizeof(float), e);
    if (!st) memcpy(t->scale_next, t->scale_used, b->n * sizeof(float));
    return st;
}

/* Amax all-reduce (MAX over the recipe's group) then TE's delayed update of a
 * bank; or, for current scaling, only the trace of what the casts used. With
 * data parallelism only the recipes whose amax_reduce is "all" reduce over
 * the ranks (the plan's amax group is TP·CP·DP for them, TP·CP = 1 rank for
 * "tp" and none for "none"); one rank keeps its call (it moves nothing). */
Status model_update_bank(Model *m, ScalingBank *b, BankTrace *t, Err *e)
{
    Status st = trace_before(m, b, t, e);
    if (st || m->recipe.scaling != SCALING_DELAYED) return st;
    /* the recipe's group: TP·DP ranks ("all") or TP ("tp") — never the pipeline stages, whose banks differ */
    uint32_t group = m->recipe.amax_reduce == AMAX_ALL ? m->tp * m->dp : m->recipe.amax_reduce == AMAX_TP ? m->tp : 1;
    Comm *c = m->recipe.amax_reduce == AMAX_ALL ? m->amaxc : m->tpc;
    st = model_ep_amax_begin(m, b, e); /* expert parallelism: the experts' records over their EDP group */
    if (!st && (m->comm->size == 1 || group > 1))
        st = c->all_reduce(c, CO_AMAX_AR, m->bk, b->amax_history, b->n, DT_FP32, COMM_MAX, e);
    if (!st) st = model_ep_amax_end(m, b, e);
    if (!st) st = m->bk->scaling_delayed_update(m->bk, b, e);
    if (!st && m->trace) st = m->bk->copy_to_host(m->bk, t->scale_next, b->scale, b->n * sizeof(float), e);
    return st;
}

Status model_trace_enable(Model *m, Err *e)
{
    if (!recipe_fp8_gemm(&m->recipe) || exec_block_scaled(&m->recipe) || m->trace) return ST_OK; /* no banks */
    BankTrace *t[2] = {&m->tr_fwd, &m->tr_bwd};
    uint32_t n[2] = {m->sc.fwd.n, m->sc.bwd.n};
    for (int i = 0; i < 2; i++) {
        t[i]->amax = calloc(n[i], sizeof(float));
        t[i]->scale_used = calloc(n[i], sizeof(float));
        t[i]->scale_next = calloc(n[i], sizeof(float));
        if (!t[i]->amax || !t[i]->scale_used || !t[i]->scale_next)
            return err_set(e, ST_NOMEM, "out of memory for the scaling trace");
    }
    m->trace = 1;
    return ST_OK;
}

/* Sharded FP8-LM states (model_shard.c): MS-AMP's two passes taken apart, the amaxes of every
 * tensor's new master, m and v (each rank's part) MAX-reduced over the ranks in between, so every
 * part is stored with the scales the whole tensor gets unsharded; MS-AMP O1's the same way, its FP16
 * weight in the master's place (each rank updates the weight's elements whose m and v it holds). */
static int agreed_states(const Model *m)
{
    const int o1 = exec_o1_states(&m->recipe, &m->recipe.gemm); /* MS-AMP O1: the weight's scale, m and v sharded */
    return m->shard_ways > 1 && (m->shard_mask[MODEL_CLASS_GEMM] >> (o1 ? STATE_M : STATE_MASTER) & 1) &&
           (o1 || m->recipe.gemm.dt[STATE_MASTER] == DT_FP16);
}

/* round 0: the whole update; 1: the FP8-LM first pass (amaxes into amax[3i ..]); 2: the rest.
 * With `queue` set, an AdamW update is not run but appended to queue[*queued] (the step runs
 * the queue as one adamw_multi); FP8-LM updates always run here. */
static Status update(Model *m, ModelParam *p, uint32_t i, float lr, int round, float *amax, AdamWDesc *queue,
                     uint32_t *queued, Err *e)
{
    const ModelHyper *h = &m->hyper;
    const StateSet *es = model_states(m, p);
    uint64_t lo, n = model_own(m, p, &lo); /* sharded states: this rank's part (model_shard.c) */
    const int o1 = model_o1(m, p), fp16 = es->dt[STATE_MASTER] == DT_FP16 || o1, c = model_class(p);
    if (round == 1 && !fp16) return ST_OK;
    if (!n && !(round && fp16)) return ST_OK; /* an empty part still takes the agreed scales */
    void *master = model_state_at(m, p, STATE_MASTER, p->master), *mm = model_state_at(m, p, STATE_M, p->m),
         *vv = model_state_at(m, p, STATE_V, p->v), *grad = model_state_at(m, p, STATE_GRAD, p->grad),
         *weight = model_state_at(m, p, STATE_WEIGHT, p->weight);
    AdamHyper ah = {.lr = lr,
                    .beta1 = h->beta1,
                    .beta2 = h->beta2,
                    .eps = h->eps,
                    .weight_decay = p->decay ? h->weight_decay : 0.0f,
                    .step = m->step + 1,
                    .grad_scale = 1.0f};
    const float *ginv = p->grad_rec ? p->grad_rec + REC_SCALE_INV : NULL;
    if (fp16) {
        /* MS-AMP O1 (msamp/optim/adamw.py, FP32 moments): the FP16 weight is the master, updated in place */
        void *w16 = o1 ? weight : master ? master : m->shard_buf[c][STATE_MASTER]; /* n 0: nothing read */
        Fp8AdamDesc d = {.n = n,
                         .h = ah,
                         .margin = EXEC_FP8_MARGIN,
                         .master = w16,
                         .master_rec = o1 ? p->weight_rec : p->master_rec,
                         .m = mm ? mm : m->shard_buf[c][STATE_M],
                         .m_rec = p->m_rec,
                         .v = vv ? vv : m->shard_buf[c][STATE_V],
                         .v_rec = p->v_rec,
                         .moment_dtype = o1 ? DT_FP32 : DT_NONE,
                         .grad = grad,
                         .grad_dtype = es->dt[STATE_GRAD],
                         .grad_scale_inv = ginv,
                         .weight = o1 ? NULL : weight,
                         .weight_dtype = es->dt[STATE_WEIGHT],
                         .amax_out = round == 1 ? amax + 3 * (uint64_t)i : NULL,
                         .amax_in = round == 2 ? amax + 3 * (uint64_t)i : NULL};
        return m->bk->fp8_adam(m->bk, &d, e);
    }
    AdamWDesc d = {.n = n,
                   .h = ah,
                   .master = master,
                   .m = mm,
                   .v = vv,
                   .grad = grad,
                   .grad_dtype = es->dt[STATE_GRAD],
                   .grad_scale_inv = ginv,
                   .weight = weight,
                   .weight_dtype = es->dt[STATE_WEIGHT],
                   .moment_dtype = es->dt[STATE_M]};
    if (queue) {
        queue[(*queued)++] = d;
        return ST_OK;
    }
    return m->bk->adamw(m->bk, &d, e);
}

static Status optimizer(Model *m, Err *e)
{
    const ModelHyper *h = &m->hyper;
    uint32_t t = m->step + 1;
    float lr = h->lr;
    if (h->warmup && t <= h->warmup) lr = h->lr * (float)t / (float)h->warmup;
    const int agree = agreed_states(m);
    float *amax = agree ? calloc(3 * (size_t)m->nparams + 1, sizeof *amax) : NULL;
    if (agree && !amax) return err_set(e, ST_NOMEM, "out of memory");
    /* the AdamW tensors of the step go to the backend as one list (adamw_multi: the CUDA backend
     * updates them all in two launches); the backend copies the list (list_dev NULL). The list is the model's
     * (allocated with it): a step allocates nothing, so a step cannot fail for memory */
    AdamWDesc *queue = agree ? NULL : m->opt_queue;
    uint32_t queued = 0;
    Status st = ST_OK;
    for (int round = agree ? 1 : 0; !st && round <= (agree ? 2 : 0); round++) {
        if (round == 2) st = model_shard_agree(m, amax, 3 * (uint64_t)m->nparams, e);
        for (uint32_t i = 0; !st && i < m->nparams; i++)
            st = update(m, &m->params[i], i, lr, round, amax, queue, &queued, e);
    }
    if (!st && queued) {
        AdamWMultiDesc md = {.count = queued, .list = queue, .list_dev = NULL};
        st = m->bk->adamw_multi(m->bk, &md, e);
    }
    free(amax);
    return st;
}

/* Depth d's part of step_mtp_losses: every DP rank's token losses of the step, in global order. */
static float *mtp_part(const Model *m, uint32_t d)
{
    return m->step_mtp_losses + (uint64_t)d * model_step_tokens(m) * m->dp;
}

/* Add the micro-batch's per-token losses to *sum (double, token order) and
 * keep them in this rank's part of step_losses. */
Status model_add_losses(Model *m, double *sum, Err *e)
{
    uint64_t BT = model_tokens(m);
    Status st = m->bk->copy_to_host(m->bk, m->host_losses, m->act.losses, BT * sizeof(float), e);
    if (st) return st;
    for (uint64_t i = 0; i < BT; i++) *sum += m->host_losses[i];
    float *keep = m->step_losses + ((uint64_t)m->dp_rank * m->microbatches + m->mb) * BT;
    memcpy(keep, m->host_losses, BT * sizeof(float));
    /* each MTP depth's (masked positions 0), kept in this rank's part of its step_mtp_losses (m->mtp: 0 before
     * the last stage) */
    for (uint32_t d = 0; !st && d < m->mtp; d++) {
        keep = mtp_part(m, d) + ((uint64_t)m->dp_rank * m->microbatches + m->mb) * BT;
        st = m->bk->copy_to_host(m->bk, keep, m->act.mtp[d].losses, BT * sizeof(float), e);
    }
    return st;
}

static float mean_of(const Model *m, double sum) { return (float)(sum / (double)model_step_tokens(m)); }

/* This rank's MTP objective of its micro-batches: each depth's mean over its valid positions (B·(T − k) a
 * micro-batch at depth k), weighted mtp_weight / depths. */
static double mtp_objective(const Model *m)
{
    const uint64_t n = model_step_tokens(m);
    double obj = 0.0;
    for (uint32_t d = 0; d < m->mtp; d++) {
        const float *part = mtp_part(m, d) + (uint64_t)m->dp_rank * n;
        double sum = 0.0;
        for (uint64_t i = 0; i < n; i++) sum += part[i];
        obj += (double)m->mtp_weight / m->mtp * (sum / ((double)model_mtp_valid(m, d) * m->microbatches));
    }
    return obj;
}

uint64_t model_step_tokens(const Model *m) { return model_tokens(m) * m->microbatches; }

/* d(mean loss)/d(loss of one token): 1 / tokens of the global step (every
 * rank's), so the ranks' summed gradients are the mean's. */
float model_dloss(const Model *m) { return 1.0f / (float)(model_step_tokens(m) * m->dp); }

/* The step's mean loss over the global batch: with several ranks, every
 * rank's token losses gathered (not a plan collective) and summed in global
 * token order in double — the very sum one rank running the whole batch
 * makes. */
static Status global_loss(Model *m, double local_sum, float *loss, Err *e)
{
    if (m->dp == 1) {
        *loss = mean_of(m, local_sum);
        return ST_OK;
    }
    const uint64_t n = model_step_tokens(m);
    float *mine = m->step_losses + (uint64_t)m->dp_rank * n; /* over the DP group (one pipeline stage's) */
    Status st = m->dpc->all_gather(m->dpc, COMM_UNPLANNED, m->bk, mine, m->step_losses, n, DT_FP32, e);
    if (st) return st;
    double sum = 0.0;
    for (uint64_t i = 0; i < n * m->dp; i++) sum += m->step_losses[i];
    *loss = (float)(sum / (double)(n * m->dp));
    return ST_OK;
}

/* The step's mean loss of each MTP depth over the global batch, as global_loss makes the main one: every DP
 * rank's token losses gathered (not a plan collective) and summed in global token order in double, over the
 * depth's valid positions, B·(T − k) a micro-batch at depth k (the masked last k are 0). */
static Status global_mtp_loss(Model *m, Err *e)
{
    const uint64_t n = model_step_tokens(m);
    for (uint32_t d = 0; d < m->mtp; d++) {
        float *part = mtp_part(m, d);
        if (m->dp > 1) {
            Status st =
                m->dpc->all_gather(m->dpc, COMM_UNPLANNED, m->bk, part + (uint64_t)m->dp_rank * n, part, n, DT_FP32, e);
            if (st) return st;
        }
        double sum = 0.0;
        for (uint64_t i = 0; i < n * m->dp; i++) sum += part[i];
        m->mtp_loss[d] = sum / ((double)model_mtp_valid(m, d) * m->microbatches * m->dp);
    }
    return ST_OK;
}

static void phase_done(Model *m, int phase)
{
    if (m->on_phase) m->on_phase(m->on_phase_ctx, phase);
}

/* Phase k's device time runs from timestamp MODEL_MARK_FIRST + 2k (recorded
 * when the host is back from the previous phase's sync and hooks) to + 2k + 1
 * (recorded before this phase's sync): the host wait, the on_phase hook's
 * cudaMemGetInfo and the launch gap between phases fall outside every phase.
 * k: 0 forward, 1 backward, 2 communication, 3 optimizer. */
static Status phase_begin(Model *m, int ev, uint32_t k, Err *e)
{
    return ev ? m->bk->mark(m->bk, MODEL_MARK_FIRST + 2 * k, e) : ST_OK;
}

/* The end of phase k: its end timestamp, wait for the work, read the host clock. */
static Status phase_end(Model *m, int ev, uint32_t k, double *t, Err *e)
{
    Status st = ev ? m->bk->mark(m->bk, MODEL_MARK_FIRST + 2 * k + 1, e) : ST_OK;
    if (!st) st = m->bk->sync(m->bk, e);
    *t = now_s();
    return st;
}

/* Add phase k's seconds to *out: device time between its timestamps, or the
 * host clocks ta, tb. */
static Status span(Model *m, int ev, uint32_t k, double ta, double tb, double *out, Err *e)
{
    if (!ev) {
        *out += tb - ta;
        return ST_OK;
    }
    double d = 0.0;
    Status st = m->bk->elapsed(m->bk, MODEL_MARK_FIRST + 2 * k, MODEL_MARK_FIRST + 2 * k + 1, &d, e);
    *out += d;
    return st;
}

/* Forward and backward of micro-batch m->mb, timed into ph[PHASE_FWD/BWD]; its losses into *sum. */
static Status microbatch(Model *m, const int32_t *in, const int32_t *tgt, int ev, double *ph, double *sum, Err *e)
{
    int fp8 = recipe_fp8_gemm(&m->recipe) && !exec_block_scaled(&m->recipe); /* the per-tensor banks' updates */
    double t[3];
    t[0] = now_s();
    Status st = phase_begin(m, ev, 0, e);
    if (!st) st = model_forward(m, in, tgt, model_dloss(m), e);
    /* TE: forward tensors' scales are updated when the forward ends */
    if (!st && fp8) st = model_update_bank(m, &m->sc.fwd, &m->tr_fwd, e);
    if (!st) st = phase_end(m, ev, 0, &t[1], e);
    if (!st) phase_done(m, PHASE_FWD);
    if (!st) st = phase_begin(m, ev, 1, e);
    if (!st) st = model_backward(m, e);
    if (!st && fp8) st = model_update_bank(m, &m->sc.bwd, &m->tr_bwd, e);
    if (!st) st = phase_end(m, ev, 1, &t[2], e);
    if (!st) phase_done(m, PHASE_BWD);
    if (!st) st = span(m, ev, 0, t[0], t[1], &ph[PHASE_FWD], e);
    if (!st) st = span(m, ev, 1, t[1], t[2], &ph[PHASE_BWD], e);
    if (!st) st = model_add_losses(m, sum, e);
    return st;
}

Status model_step(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    Backend *bk = m->bk;
    const int ev = bk->mark && bk->elapsed;
    const uint64_t BT = model_tokens(m);
    double ph[4] = {0}, t[3], sum = 0.0;
    Status st = ST_OK;
    phase_done(m, -1);
    m->moe_timed = !ev && m->moe_layers > 0; /* the MoE parts by host clock laps (a backend without timestamps) */
    memset(m->moe_lap_s, 0, sizeof m->moe_lap_s);
    if (m->pp > 1) /* 1F1B (model_pp.c) */
        st = model_pp_run(m, inputs, targets, ph, &sum, e);
    for (m->mb = 0; !st && m->pp == 1 && m->mb < m->microbatches; m->mb++)
        st = microbatch(m, inputs + m->mb * BT, targets + m->mb * BT, ev, ph, &sum, e);
    m->mb = 0;
    t[0] = now_s();
    if (!st) st = phase_begin(m, ev, 2, e);
    if (!st) st = model_tp_finish_grads(m, e);
    if (!st) st = model_pp_finish_grads(m, e);
    if (!st && m->shard_ways > 1) st = model_shard_reduce(m, e); /* the distributed optimizer: reduce-scatter */
    if (!st) st = model_reduce_grads(m, e); /* the classes not sharded (experts at edp 1): all-reduced in buckets */
    if (!st) st = phase_end(m, ev, 2, &t[1], e);
    if (!st) phase_done(m, PHASE_COMM);
    if (!st) st = phase_begin(m, ev, 3, e);
    if (!st) st = optimizer(m, e);
    if (!st) st = model_moe_after_step(m, e); /* a sigmoid router's bias, from the step's loads */
    if (!st && m->shard_ways == 1) st = model_copies_cast(m, COMM_UNPLANNED, e); /* FP8-LM: the new copies */
    if (!st) st = phase_end(m, ev, 3, &t[2], e);
    if (!st) phase_done(m, PHASE_OPT);
    if (!st) st = span(m, ev, 2, t[0], t[1], &ph[PHASE_COMM], e);
    if (!st) st = span(m, ev, 3, t[1], t[2], &ph[PHASE_OPT], e);
    if (!st && m->shard_ways > 1) { /* the updated parts all-gathered (host clock: MPI ranks are CPU ranks) */
        st = model_shard_gather(m, e);
        if (!st) st = model_copies_cast(m, CO_DP_PARAM_AG, e); /* FP8-LM: cast once, gathered once */
        ph[PHASE_COMM] += now_s() - t[2];
    }
    if (!st) st = global_loss(m, sum, loss, e);
    if (!st && m->mtp) st = global_mtp_loss(m, e);
    if (!st) st = model_pp_share_loss(m, loss, e); /* the last stage's losses, MTP's too, to every stage */
    if (st) return st;
    m->step++;
    memcpy(m->phase_s, ph, sizeof ph);
    memcpy(m->moe_part_s, m->moe_lap_s, sizeof m->moe_part_s);
    m->phase_device = ev;
    return ST_OK;
}

static Status clear_amax_rows(Model *m, Err *e)
{
    if (!recipe_fp8_gemm(&m->recipe) || m->recipe.scaling != SCALING_DELAYED) return ST_OK;
    Status st = m->bk->memset0(m->bk, m->sc.fwd.amax_history, m->sc.fwd.n * sizeof(float), e);
    if (!st) st = m->bk->memset0(m->bk, m->sc.bwd.amax_history, m->sc.bwd.n * sizeof(float), e);
    return st;
}

/* Forward (and backward when `grads`) of every micro-batch, no update. */
static Status passes(Model *m, const int32_t *inputs, const int32_t *targets, int grads, float *loss, Err *e)
{
    const uint64_t BT = model_tokens(m);
    double sum = 0.0;
    Status st = ST_OK;
    for (m->mb = 0; !st && m->mb < m->microbatches; m->mb++) {
        st = model_forward(m, inputs + m->mb * BT, targets + m->mb * BT, model_dloss(m), e);
        if (!st && grads) st = model_backward(m, e);
        if (!st) st = m->bk->sync(m->bk, e);
        if (!st) st = model_add_losses(m, &sum, e);
    }
    m->mb = 0;
    if (!st) st = clear_amax_rows(m, e);
    if (!st) st = m->bk->sync(m->bk, e);
    /* the objective the gradients are of: the main mean loss plus the depths' weighted means */
    if (!st) *loss = (float)((double)mean_of(m, sum) + (m->mtp ? mtp_objective(m) : 0.0));
    return st;
}

Status model_loss(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    return passes(m, inputs, targets, 0, loss, e);
}

Status model_grads(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    return passes(m, inputs, targets, 1, loss, e);
}
