/* planner/plan_comm_vocab.c — the tensor-parallel collectives outside the transformer layers (Megatron-LM's
 * layout: Shoeybi et al. 2019, with sequence parallelism Korthikanti et al. 2022).
 *
 * The token embedding is vocabulary-parallel (each TP rank holds Vp/tp rows: a token's row lives on one rank,
 * the others contribute zeros), the LM head column-parallel over the vocabulary. Per micro-batch, with
 * S = tok x h in the recipe's tp_reducescatter_comm dtype (BF16: the embedding and the LM head stay out of FP8):
 *   embedding, without SP      forward: all-reduce of the partial embeddings; backward: none (the gradient is
 *                              whole on every rank)
 *   embedding, SP              forward: reduce-scatter to the sequence shards, or with learned positions an
 *                              all-reduce (Megatron adds the positions to the whole, then splits it: its
 *                              LanguageModelEmbedding reduce-scatters only without them); backward: all-gather
 *                              of the shards' output gradient
 *   LM head, without SP        backward: all-reduce of its input gradient
 *   LM head, SP                forward: all-gather of its input; backward: all-gather again for the weight
 *                              gradient (the shard is what is kept) and reduce-scatter of the input gradient
 *   cross-entropy              all-reduces of the max logit (MAX), the target logit and the sum of exponentials
 *                              (SUM), tok FP32 each: 3 calls
 * An MTP depth on the last stage looks the next tokens up in the same embedding and passes through the same head:
 * its own embedding and head calls as above, and three loss all-reduces more.
 * Per step, one coalesced all-reduce of the gradients of the parameters every TP rank holds whole but that see
 * only part of the work: with SP the norms and the row-parallel (proj, FC2) biases of each layer and the final
 * norm (MoE layers: the norms, latent norms and the router, x.other; latent attention's duplicated q_down and
 * kv_down; an MTP depth's three norms); q/k norms with or without SP (each rank
 * normalises its own heads). Megatron marks these `sequence_parallel` and reduces them in
 * finalize_model_grads; they travel in the other parameters' main-gradient dtype.
 * The embedding's collectives run on the first stage, the head's and the loss's on the last. Nothing hides
 * them: plan_time.c puts them on the critical path. */
#include <stddef.h>

#include "planner/plan_internal.h"

typedef struct {
    uint64_t ar, ag, rs; /* [tok, h] calls per micro-batch */
} VocabCalls;

static int has_sp(const Geo *g) { return g->rep > 1; }

/* The TP collectives (all over the TP group, stride 1) that may make a vocabulary call's [tok, h] call: the
 * vocabulary one itself (plan_vocab_call_times runs after plan_comm_vocab), the layers' of the same op. */
static const CollectiveId same_ar[] = {CO_TP_AR_FWD, CO_TP_AR_BWD, CO_TP_VOCAB_AR};
static const CollectiveId same_ag[] = {CO_TP_AG_FWD, CO_TP_AG_BWD, CO_TP_VOCAB_AG};
static const CollectiveId same_rs[] = {CO_TP_RS_FWD, CO_TP_RS_BWD, CO_TP_VOCAB_RS};
static const CollectiveId same_loss[] = {CO_TP_LOSS_AR};

/* Forward (fwd = 1) or backward calls per micro-batch of a stage holding the embedding and/or the head; mtp:
 * the MTP depths the last stage holds, each its own lookup of the shared embedding and its own pass through the
 * shared head (Megatron-Core core_v0.16.0 MultiTokenPredictionLayer: embedding(input_ids rolled), output_layer). */
static VocabCalls vocab_calls(const PlanInput *in, const Geo *g, int first, int last, int fwd, uint64_t mtp)
{
    VocabCalls v = {0, 0, 0};
    int sp = has_sp(g), learned = in->model->pos == POS_LEARNED;
    if (g->tp <= 1) return v;
    for (uint64_t d = 0; last && d < mtp; d++) {
        if (fwd && sp && !learned) v.rs++; /* the depth's embedding */
        if (fwd && (!sp || learned)) v.ar++;
        if (!fwd && sp) v.ag++;
        if (fwd && sp) v.ag++; /* its head */
        if (!fwd && sp) v.ag++, v.rs++;
        if (!fwd && !sp) v.ar++;
    }
    if (first && fwd) {
        if (sp && !learned)
            v.rs++;
        else
            v.ar++;
    }
    if (first && !fwd && sp) v.ag++;
    if (last && fwd && sp) v.ag++;
    if (last && !fwd) {
        if (sp)
            v.ag++, v.rs++;
        else
            v.ar++;
    }
    return v;
}

/* Elements of the parameters whose gradients are all-reduced over TP once a step, on this stage. */
static uint64_t replicated_elems(const PlanInput *in, const Geo *g, uint32_t stage, int last, Ck *ck)
{
    const ModelSpec *md = in->model;
    int sp = has_sp(g);
    uint64_t qk = md->qk_norm ? 2ull * md->head_dim : 0, e = 0;
    if (g->x.on) {
        Held hd;
        moe_held(in, g, stage, ck, &hd);
        /* latent attention's down-projections: duplicated over TP, each rank's gradient from its sequence shard
         * (Megatron-Core core_v0.16.0 TELinear parallel_mode "duplicated" marks them sequence_parallel) */
        uint64_t down = 0;
        if (sp && g->x.mla)
            down = ck_mul(ck, ck_add(ck, md->q_lora_rank, (uint64_t)md->kv_lora_rank + md->qk_rope_head_dim), g->h);
        for (int k = 0; k < XK_COUNT; k++)
            e = ck_add(ck, e, ck_mul(ck, hd.n[k], ck_add(ck, sp ? g->x.other[k] : qk, down)));
        if (sp) e = ck_add(ck, e, ck_mul(ck, hd.mtp, g->x.mtp_other));
    } else {
        uint64_t per = sp ? 2 * g->norm_elems + (md->linear_bias ? 2 * g->h : 0) + qk : qk;
        e = ck_mul(ck, geo_layers(g, stage), per);
    }
    if (sp && last) e = ck_add(ck, e, g->norm_elems);
    return e;
}

uint64_t plan_tp_flat_grad_bytes(const PlanInput *in, const Geo *g, uint32_t stage, int last, Ck *ck)
{
    if (g->tp <= 1) return 0;
    uint64_t e = replicated_elems(in, g, stage, last, ck);
    return ck_mul(ck, e, dt_bytes(plan_grad_dt(in, in->recipe->other.dt[STATE_GRAD])));
}

static void stage_ends(const PlanInput *in, const Geo *g, uint32_t stage, Ck *ck, int *first, int *last)
{
    *first = stage == 0, *last = stage + 1 == g->pp;
    if (g->x.on) { /* DualPipe: a GPU may hold both ends */
        Held hd;
        moe_held(in, g, stage, ck, &hd);
        *first = hd.first, *last = hd.last;
    }
}

void plan_comm_vocab(const PlanInput *in, const Geo *g, Plan *p, Ck *ck)
{
    const Recipe *rc = in->recipe;
    uint64_t t = g->tp, m = g->m;
    if (t <= 1) return;
    int first, last;
    stage_ends(in, g, p->stage, ck, &first, &last);
    uint64_t mtp = last ? in->model->mtp_layers : 0;
    VocabCalls f = vocab_calls(in, g, first, last, 1, mtp), b = vocab_calls(in, g, first, last, 0, mtp);
    Dtype dt = rc->comm_tp_rs;
    uint64_t S = ck_mul3(ck, g->tok, g->h, dt_bytes(dt));
    /* the layers' TP collectives over the same group (stride 1), timed already where their payload is the same */
    plan_coll_set_same(in, p, CO_TP_VOCAB_AR, dt, t, 1, S, ck_mul(ck, f.ar + b.ar, m), ck, same_ar, 2);
    plan_coll_set_same(in, p, CO_TP_VOCAB_AG, dt, t, 1, S, ck_mul(ck, f.ag + b.ag, m), ck, same_ag, 2);
    plan_coll_set_same(in, p, CO_TP_VOCAB_RS, dt, t, 1, S, ck_mul(ck, f.rs + b.rs, m), ck, same_rs, 2);
    if (last) /* the loss's three all-reduces, and each MTP depth's */
        plan_coll_set(in, p, CO_TP_LOSS_AR, DT_FP32, t, 1, ck_mul(ck, g->tok, 4), ck_mul3(ck, 3, m, 1 + mtp), ck);
    Dtype gd = plan_grad_dt(in, rc->other.dt[STATE_GRAD]);
    uint64_t fb = plan_tp_flat_grad_bytes(in, g, p->stage, last, ck);
    plan_coll_set(in, p, CO_TP_NORM_GRAD_AR, gd, t, 1, fb, fb ? 1 : 0, ck);
}

/* Seconds of one call of op over the TP group for payload S: a collective of same[0..n) timed it already, or
 * timed here. */
static double call(const PlanInput *in, const Geo *g, const Plan *p, CommOp op, Dtype dt, uint64_t S, Ck *ck,
                   const CollectiveId *same, int n)
{
    for (int i = 0; i < n; i++) {
        double t = plan_coll_again(in, p, same[i], op, g->tp, S);
        if (t >= 0) return t;
    }
    return plan_coll_time(in, op, dt, g->tp, 1, S, ck, NULL, NULL);
}

/* Every op some stage calls: vocab_calls only adds calls for first or last, so a stage holding both ends calls
 * each op any stage calls. */
void plan_vocab_call_times(const PlanInput *in, const Geo *g, const Plan *p, VocabCallT *vt)
{
    vt->ar = vt->ag = vt->rs = vt->loss = 0;
    if (g->tp <= 1) return;
    Ck ck = {0};
    Dtype dt = in->recipe->comm_tp_rs;
    uint64_t S = ck_mul3(&ck, g->tok, g->h, dt_bytes(dt));
    VocabCalls f = vocab_calls(in, g, 1, 1, 1, 0), b = vocab_calls(in, g, 1, 1, 0, 0);
    if (f.ar + b.ar) vt->ar = call(in, g, p, OP_ALL_REDUCE, dt, S, &ck, same_ar, 3);
    if (f.ag + b.ag) vt->ag = call(in, g, p, OP_ALL_GATHER, dt, S, &ck, same_ag, 3);
    if (f.rs + b.rs) vt->rs = call(in, g, p, OP_REDUCE_SCATTER, dt, S, &ck, same_rs, 3);
    vt->loss = call(in, g, p, OP_ALL_REDUCE, DT_FP32, ck_mul(&ck, g->tok, 4), &ck, same_loss, 1);
}

/* An op with no calls adds +0.0 (a call's time is finite: plan_validate wants positive bandwidths). */
static double calls_s(VocabCalls v, const VocabCallT *vt)
{
    double ar = v.ar ? (double)v.ar * vt->ar : 0;
    double ag = v.ag ? (double)v.ag * vt->ag : 0;
    double rs = v.rs ? (double)v.rs * vt->rs : 0;
    return ar + ag + rs;
}

void plan_vocab_time(const PlanInput *in, const Geo *g, const VocabCallT *vt, int first, int last, double *fwd,
                     double *bwd)
{
    *fwd = *bwd = 0;
    if (g->tp <= 1 || (!first && !last)) return; /* a middle stage makes no vocabulary call */
    uint64_t mtp = last ? in->model->mtp_layers : 0;
    *fwd = calls_s(vocab_calls(in, g, first, last, 1, mtp), vt);
    *bwd = calls_s(vocab_calls(in, g, first, last, 0, mtp), vt);
    if (last) *fwd += 3 * (double)(1 + mtp) * vt->loss;
}
