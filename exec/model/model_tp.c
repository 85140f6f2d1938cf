/* exec/model/model_tp.c — tensor parallelism with sequence parallelism
 * (Megatron-LM's layout, Korthikanti et al. 2022) over the ranks of the
 * TP group (exec/model/model_groups.c: tp consecutive ranks of one DP rank and pipeline stage).
 *
 * Per block and micro-batch, with the B·T tokens of a micro-batch split into
 * tp contiguous shards of the flattened (B, T) order:
 *   norm 1 (B·T/tp tokens) → all-gather → QKV (column-parallel: this rank's
 *   H/tp heads and KV/tp KV heads) → attention of those heads (all tokens) →
 *   proj (row-parallel: partial sums) → reduce-scatter → residual (B·T/tp);
 *   the MLP likewise (FC1 column-parallel, this rank's F/tp columns, SwiGLU's
 *   gate and up both; FC2 row-parallel).
 * Backward reverses each: the row-parallel output gradient is all-gathered,
 * the column-parallel input gradient reduce-scattered, and the column-parallel
 * input the forward gathered is gathered again from the saved shard for the
 * weight gradient (Megatron and TE keep only the shard) — the collectives and
 * dtypes planner/plan_comm.c counts (tp_allgather_fwd, tp_reducescatter_fwd,
 * tp_allgather_bwd, tp_reducescatter_bwd). FP8 recipes gather the input's FP8
 * codes (recipes.csv tp_allgather_comm): each rank casts its shard with the
 * tensor's delayed scale, which the TP amax all-reduce keeps equal on every
 * rank; the row-parallel outputs and all gradients travel in BF16
 * (tp_reducescatter_comm).
 *
 * The embedding and LM head are vocabulary-parallel (each rank keeps Vp/tp
 * rows, the plan's MT_WEIGHT_OTHER), as Megatron-LM runs them and
 * planner/plan_comm_vocab.c counts them: every token is looked up in this
 * rank's rows (zeros for the others' tokens) and the partial embeddings
 * reduce-scattered to the sequence shards (tp_vocab_reducescatter) — with
 * learned positions all-reduced instead (tp_vocab_allreduce), the positions
 * added to the whole and this rank's shard kept; backward the shards' output
 * gradient is all-gathered (tp_vocab_allgather; the positions' gradient then
 * sums every token, the same on every rank). The LM head's input is gathered
 * forward and again backward (tp_vocab_allgather), its input gradient
 * reduce-scattered (tp_vocab_reducescatter); the cross-entropy all-reduces the
 * max logit, the target logit and the sum of exponentials (tp_loss_allreduce,
 * three FP32 calls of B·T). Parameters every rank holds whole but that see
 * only its tokens — norm weights and biases, the row-parallel biases (added
 * by rank 0 before the reduce-scatter, the same sum; their gradients from this
 * rank's shard of the output gradient) — have their gradients all-reduced after
 * the step, packed into one buffer and all-reduced in one call as Megatron
 * does (tp_norm_grad_allreduce). */
#include <string.h>

#include "exec/model/model_internal.h"
#include "exec/backend/rng.h"

Status model_tp_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    const Recipe *r = in->recipe;
    uint32_t t = in->tp;
    if (t == 1) return ST_OK;
    if (!in->sp)
        return err_set(e, ST_UNAVAILABLE,
                       "--tp %u: the executor runs tensor parallelism with sequence parallelism only", t);
    if (in->cp != 1)
        return err_set(e, ST_UNAVAILABLE, "--tp %u with cp %u: the executor has no context parallelism", t, in->cp);
    if (s->heads % t || s->kv_heads % t || s->ffn_hidden % t)
        return err_set(e, ST_USAGE, "--tp %u must divide the heads %u, KV heads %u and FFN width %u of model %s", t,
                       s->heads, s->kv_heads, s->ffn_hidden, s->name);
    if (((uint64_t)in->mbs * p->seq) % t || p->vocab_padded % t)
        return err_set(e, ST_USAGE,
                       "--tp %u must divide the tokens of a micro-batch (%llu) and the padded vocabulary %u", t,
                       (unsigned long long)in->mbs * p->seq, p->vocab_padded);
    if (recipe_fp8_gemm(r) && !dtype_is_fp8(r->saved_input))
        return err_set(e, ST_UNAVAILABLE,
                       "--tp %u --recipe %s: FP8 tensor parallelism runs recipes that save FP8 GEMM inputs only (the "
                       "saved shard is what the backward gathers)",
                       t, r->name);
    if (r->other.dt[STATE_GRAD] != DT_FP32)
        return err_set(e, ST_UNAVAILABLE, "--tp %u --recipe %s: the embedding, norm and bias gradients must be FP32", t,
                       r->name);
    if (s->pos == POS_LEARNED && r->other.dt[STATE_WEIGHT] != exec_act_dtype(r))
        return err_set(e, ST_UNAVAILABLE,
                       "--tp %u --recipe %s: learned positions in %s added to %s activations after the scatter", t,
                       r->name, dtype_name(r->other.dt[STATE_WEIGHT]), dtype_name(exec_act_dtype(r)));
    return ST_OK;
}

Status model_tp_moe_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    const char *why = NULL;
    /* FP8 experts (te-fp8, te-fp8-current: model_moe_check) run on each rank's sequence shard as at dp > 1: their
     * delayed-scaling records MAX-reduced over the stage's TP x DP ranks (amaxc) or, at ep > 1, their EDP group;
     * a sigmoid router's bias is an FP32 buffer every rank moves alike from the TP x DP ranks' summed counts
     * (model_moe_after_step), outside the TP norm-gradient all-reduce as the plan has it; split over --etp as
     * well (model_moe_etp.c: the gathered rows, the ETP group's records) */
    if (((uint64_t)s->shared_experts * s->expert_ffn) % in->tp)
        why = "the shared experts' FFN width must be divisible by tp (it splits over TP as the dense FFN)";
    if (!why) return ST_OK;
    return err_set(e, ST_UNAVAILABLE, "model %s with --tp %u --ep %u --etp %u: %s", s->name, in->tp, in->ep, in->etp,
                   why);
}

void model_tp_spec(const Plan *p, Model *m)
{
    uint32_t t = p->in.tp ? p->in.tp : 1;
    m->tp = t;
    m->spec.heads /= t;
    m->spec.kv_heads /= t;
    m->spec.ffn_hidden /= t;
}

/* A parameter every rank holds whole whose gradient sums over this rank's tokens only: the norms, the
 * row-parallel biases, a MoE layer's router weight, latent attention's latent norms and duplicated
 * down-projections, an MTP depth's enorm, hnorm and final norm (Megatron's `sequence_parallel` parameters; the router runs on the sequence shard:
 * planner/plan_moe.c counts it with the norms, planner/plan_comm_vocab.c the down-projections beside them). */
static int sp_replicated(ParamKind k)
{
    return k == PK_NORM1_W || k == PK_NORM1_B || k == PK_NORM2_W || k == PK_NORM2_B || k == PK_NORMF_W ||
           k == PK_NORMF_B || k == PK_PROJ_B || k == PK_FC2_B || k == PK_ROUTER_W || k == PK_QLAT_W ||
           k == PK_KVLAT_W || k == PK_QDOWN_W || k == PK_KVDOWN_W || k == PK_ENORM_W || k == PK_ENORM_B ||
           k == PK_HNORM_W || k == PK_HNORM_B || k == PK_MTPNORM_W || k == PK_MTPNORM_B;
}

void model_tp_layout(Model *m, int bind, ArenaSpecs *sp)
{
    if (m->tp == 1) return;
    const Recipe *r = &m->recipe;
    const uint64_t BT = model_tokens(m), C = m->spec.hidden;
    ModelActs *a = bind ? &m->act : NULL;
    const Dtype A = m->act_dtype;
    /* one (B·T, C) buffer per role and phase: the forward's gathered input / partial output, the head
     * backward's gathered input and partial input gradient, the blocks' gathered output gradient / partial
     * input gradient / the column-parallel input gathered again for wgrad (after the input gradient left) */
    /* the widest column-parallel input: an MTP depth's eh_proj gathers its (B·T, 2C) input, and backward its input
     * gradient and input again; latent attention's up-projections gather their latents (q_lora_rank,
     * kv_lora_rank wide, which a shrunk hidden size does not shrink) */
    uint64_t W = m->mtp ? 2 * C : C;
    if (m->spec.q_lora_rank > W) W = m->spec.q_lora_rank;
    if (m->spec.kv_lora_rank > W) W = m->spec.kv_lora_rank;
    /* block scaling: the gathered codes and scales of the widest input (model_tp_block.c), bytes as A's */
    const int blk = exec_block_scaled(r);
    const uint64_t seg = model_tp_block_seg(model_sp_tokens(m), W), ab = dtype_bytes(A);
    uint64_t fw = BT * W;
    if (blk && (seg * m->tp + ab - 1) / ab > fw) fw = (seg * m->tp + ab - 1) / ab;
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, fw, a ? &a->tp_fwd : NULL, "tp_fwd");
    if (model_last(m)) { /* the head and the loss: the last pipeline stage's */
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_HEAD, A, BT * C, a ? &a->tp_head_x : NULL, "tp_head_x");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_HEAD, A, BT * C, a ? &a->tp_head_d : NULL, "tp_head_d");
    }
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, fw, a ? &a->tp_full : NULL, "tp_full");
    if (model_last(m))
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, DT_FP32, 3 * BT, a ? &a->tp_xstats : NULL, "tp_xent_stats");
    if (recipe_fp8_gemm(r))
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, r->gemm_fwd, blk ? seg : model_sp_tokens(m) * W,
                        a ? &a->tp_qloc : NULL, "tp_q_local");
    /* the replicated parameters' gradients flattened into one FP32 buffer after the backward (Megatron's
     * finalize_model_grads flattens them all, whatever their size, and all-reduces that once) */
    uint64_t rep = 0;
    for (uint32_t i = 0; i < m->nparams; i++) rep += sp_replicated(m->params[i].kind) ? m->params[i].numel : 0;
    if (rep)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FINISH, DT_FP32, rep, a ? &a->tp_norm : NULL, "tp_norm_grads");
}

/* ---- initial values: this rank's slice of the one-rank tensor ---- */

/* Row i of the rank's shard of p: the one-rank row it is, the one-rank width
 * and the column it starts at. */
static void global_row(const Model *m, const ModelParam *p, uint64_t i, uint64_t *row, uint64_t *width, uint64_t *col0)
{
    const uint64_t t = m->tp, r = (uint64_t)m->tp_rank, D = m->spec.head_dim;
    const uint64_t q = m->spec.heads * D, kv = m->spec.kv_heads * D;             /* local widths */
    const uint64_t F = p->kind == PK_FC1_W ? p->rows / spec_fc1_k(&m->spec) : 0; /* the dense FFN's or shared's */
    *width = p->cols, *col0 = 0, *row = i;
    switch (p->kind) {
    case PK_WTE:
    case PK_LM_HEAD: *row = r * p->rows + i; break;
    case PK_QKV_W: /* [Q (H·D) | K (KV·D) | V (KV·D)] of the whole; this rank's heads of each */
        if (i < q)
            *row = r * q + i;
        else if (i < q + kv)
            *row = t * q + r * kv + (i - q);
        else
            *row = t * q + t * kv + r * kv + (i - q - kv);
        break;
    case PK_QUP_W:  /* latent attention's up-projections: this rank's heads, [head 0 | head 1 | ...] */
    case PK_KVUP_W: /* (and MTP's eh_proj, column-parallel: this rank's C/tp output columns) */
    case PK_EHPROJ_W: *row = r * p->rows + i; break;
    case PK_FC1_W: /* GELU: [F]; SwiGLU: [gate F | up F] of the whole */
        *row = i < F ? r * F + i : t * F + r * F + (i - F);
        break;
    case PK_PROJ_W:
    case PK_FC2_W: *width = p->cols * t, *col0 = r * p->cols; break;
    default: break;
    }
}

float model_tp_fill(const Model *m, const ModelParam *p, uint64_t key, float std, float *w)
{
    const uint64_t live_rows = (uint64_t)m->spec.vocab;
    const int vocab = p->kind == PK_WTE || p->kind == PK_LM_HEAD;
    float amax = 0.0f;
    for (uint64_t i = 0; i < p->rows; i++) {
        uint64_t row, width, col0;
        global_row(m, p, i, &row, &width, &col0);
        float *out = w + i * p->cols;
        if (vocab && row >= live_rows) {
            memset(out, 0, p->cols * sizeof *out);
            continue;
        }
        uint64_t b = row * width + col0;
        rng_normal_fill(key, b, b + p->cols, std, out);
        for (uint64_t c = 0; c < p->cols; c++) {
            float v = out[c] < 0 ? -out[c] : out[c];
            amax = v > amax ? v : amax;
        }
    }
    return amax;
}

Status model_tp_amax(Model *m, float *amax, Err *e)
{
    if (m->tp == 1) return ST_OK;
    return m->tpc->all_reduce(m->tpc, CO_AMAX_AR, m->bk, amax, 1, DT_FP32, COMM_MAX, e);
}

/* ---- activations ---- */

Status model_tp_gather(Model *m, CollectiveId id, const void *local, void *full, uint64_t cols, Dtype dt, Err *e)
{
    return m->tpc->all_gather(m->tpc, id, m->bk, local, full, model_sp_tokens(m) * cols, dt, e);
}

Status model_tp_scatter(Model *m, CollectiveId id, const void *full, void *local, uint64_t cols, Err *e)
{
    return m->tpc->reduce_scatter(m->tpc, id, m->bk, full, local, model_sp_tokens(m) * cols, m->act_dtype, COMM_SUM, e);
}

/* ---- embedding and head: vocabulary-parallel ---- */

static uint64_t first_row(const Model *m) { return (uint64_t)m->tp_rank * model_vocab_rows(m); }

Status model_tp_embed_fwd(Model *m, void *out, Err *e) { return model_tp_embed_tok_fwd(m, model_tok(m), out, e); }

Status model_tp_embed_tok_fwd(Model *m, const int32_t *tok, void *out, Err *e)
{
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    const uint64_t C = s->hidden, es = dtype_bytes(A);
    ModelParam *wte = model_find_param(m, PK_WTE, -1), *wpe = model_find_param(m, PK_WPE, -1);
    /* every token looked up in this rank's rows (0 for the others), summed over the ranks into the tokens' owners */
    Status st = m->bk->embed_shard_fwd(m->bk, tok, model_tokens(m), first_row(m), wte->rows, C, wte->weight,
                                       m->recipe.other.dt[STATE_WEIGHT], m->act.tp_fwd, A, e);
    if (!wpe) return st ? st : model_tp_scatter(m, CO_TP_VOCAB_RS, m->act.tp_fwd, out, C, e);
    /* learned positions (model_tp_check: same dtype): the whole all-reduced, positions added, this rank's shard */
    char *full = m->act.tp_fwd;
    const uint64_t T = m->seq, n = model_sp_tokens(m);
    if (!st) st = m->tpc->all_reduce(m->tpc, CO_TP_VOCAB_AR, m->bk, full, model_tokens(m) * C, A, COMM_SUM, e);
    for (uint32_t b = 0; !st && b < m->batch; b++)
        st = m->bk->add(m->bk, full + b * T * C * es, wpe->weight, full + b * T * C * es, A, T * C, e);
    if (!st) st = m->bk->convert(m->bk, full + (uint64_t)m->tp_rank * n * C * es, A, out, A, n * C, NULL, e);
    return st;
}

Status model_tp_embed_bwd(Model *m, const void *dout, Err *e)
{
    return model_tp_embed_tok_bwd(m, model_tok(m), dout, e);
}

Status model_tp_embed_tok_bwd(Model *m, const int32_t *tok, const void *dout, Err *e)
{
    const uint64_t C = m->spec.hidden;
    ModelParam *wte = model_find_param(m, PK_WTE, -1), *wpe = model_find_param(m, PK_WPE, -1);
    Status st = model_tp_gather(m, CO_TP_VOCAB_AG, dout, m->act.tp_full, C, m->act_dtype, e);
    if (!st)
        st = m->bk->embed_shard_bwd(m->bk, tok, model_tokens(m), first_row(m), wte->rows, C, m->act.tp_full,
                                    m->act_dtype, model_grad_target(m, wte, 0), e);
    /* the positions' gradient: every token's, summed over the sequences (the same on every rank) */
    if (!st && wpe)
        st = m->bk->bias_grad(m->bk, m->act.tp_full, m->act_dtype, m->batch, (uint64_t)m->seq * C,
                              model_grad_target(m, wpe, 0), e);
    return st;
}

Status model_tp_xent(Model *m, float dloss, Err *e)
{
    return model_tp_xent_of(m, m->act.logits, m->act.targets, m->act.losses, dloss, e);
}

Status model_tp_xent_of(Model *m, float *logits, const int32_t *targets, float *losses, float dloss, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const uint64_t BT = model_tokens(m), V = model_vocab_rows(m), first = first_row(m);
    float *st3 = a->tp_xstats;
    Status st = bk->xent_shard(bk, logits, BT, V, first, m->spec.vocab, targets, st3, 0, dloss, losses, e);
    /* Megatron's three all-reduces: max logit, then sum of exponentials and target logit */
    if (!st) st = m->tpc->all_reduce(m->tpc, CO_TP_LOSS_AR, bk, st3, BT, DT_FP32, COMM_MAX, e);
    if (!st) st = bk->xent_shard(bk, logits, BT, V, first, m->spec.vocab, targets, st3, 1, dloss, losses, e);
    if (!st) st = m->tpc->all_reduce(m->tpc, CO_TP_LOSS_AR, bk, st3 + BT, BT, DT_FP32, COMM_SUM, e);
    if (!st) st = m->tpc->all_reduce(m->tpc, CO_TP_LOSS_AR, bk, st3 + 2 * BT, BT, DT_FP32, COMM_SUM, e);
    if (!st) st = bk->xent_shard(bk, logits, BT, V, first, m->spec.vocab, targets, st3, 2, dloss, losses, e);
    return st;
}

/* ---- gradients after the step ---- */

/* Copy n floats (FP32 to FP32 through the backend: host or device memory alike). */
static Status copy_f32(Model *m, const float *from, float *to, uint64_t n, Err *e)
{
    return m->bk->convert(m->bk, from, DT_FP32, to, DT_FP32, n, NULL, e);
}

/* The replicated gradients of params [i, j) copied into buf one after another (to_buf) or back from it. */
static Status pack(Model *m, uint32_t i, uint32_t j, float *buf, int to_buf, Err *e)
{
    Status st = ST_OK;
    uint64_t o = 0;
    for (uint32_t k = i; !st && k < j; k++) {
        ModelParam *p = &m->params[k];
        if (!sp_replicated(p->kind)) continue;
        st = to_buf ? copy_f32(m, p->grad, buf + o, p->numel, e) : copy_f32(m, buf + o, p->grad, p->numel, e);
        o += p->numel;
    }
    return st;
}

/* Megatron's coalesced all-reduce (finalize_model_grads): the gradients packed into one FP32 buffer (tp_norm,
 * its own phase once the backward is done) and all-reduced in one call. */
Status model_tp_finish_grads(Model *m, Err *e)
{
    if (m->tp == 1) return ST_OK;
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->nparams; i++) n += sp_replicated(m->params[i].kind) ? m->params[i].numel : 0;
    if (!n) return ST_OK;
    arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_FINISH); /* ASan builds: only this phase's overlay */
    Status st = pack(m, 0, m->nparams, m->act.tp_norm, 1, e);
    if (!st) st = m->tpc->all_reduce(m->tpc, CO_TP_NORM_GRAD_AR, m->bk, m->act.tp_norm, n, DT_FP32, COMM_SUM, e);
    if (!st) st = pack(m, 0, m->nparams, m->act.tp_norm, 0, e);
    arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_BLOCKS);
    return st;
}
