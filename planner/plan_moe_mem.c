/* planner/plan_moe_mem.c — per-GPU memory of a stage of a mixture-of-experts,
 * latent-attention or multi-token-prediction model (the geometry is plan_moe.c's).
 *
 * Parameters. A stage holds its dense and MoE layers (MoeGeo.nd / nx), the
 * multi-token-prediction depths on the last stage (each: eh_proj, three norms and
 * one layer; with pp > 1 and untied embeddings also a copy of the embedding its
 * input lookup needs), and the embedding / final norm / LM head as a dense model's
 * stages do. Linear weights other than the experts' (attention, dense and shared
 * FFNs, eh_proj) are MT_*_GEMM, sharded over dp x cp; the routed experts' weights
 * are MT_*_EXPERT, sharded over the expert-data-parallel group (edp); norms and the
 * router are MT_*_OTHER. With DualPipe a GPU holds two stages (s and pp - 1 - s):
 * twice the weights and gradients, while the sharded states spread over both
 * copies' 2 x dp ranks (one ZeRO group per stage replica), so they stay as large
 * as one stage's.
 *
 * Scales, per FP8 linear tensor on the GPU (a grouped GEMM's local experts count one
 * each, the router none): the per-tensor records, block scales of every FP8-stored
 * copy and scaled-state records as plan.h states them for dense models.
 *
 * In-flight layer-micro-batches follow the schedule (plan_inflight_layers). DualPipe
 * feeds half the micro-batches from each end, so each stage a GPU holds sees 1F1B's
 * count for that stage, pp - s (at most m / 2): rank r holds pp - r micro-batches of
 * stage r and r + 1 of stage pp - 1 - r, DualPipe's "PP + 1" (DeepSeek-V3 Table 2), split between
 * the dense and MoE layers of the stage in proportion to their counts; MTP layers add
 * one micro-batch each on the last stage, whose logits and final norm they repeat.
 * Transient: the larger of the layer kinds' backward working sets (dX, in a buffer as wide as the attention
 * output's gradient [tok, heads/tp x dv] where that is wider, d(residual),
 * d(FFN hidden) — for a MoE layer d(FC1 output) of its rows plus the shared experts' —,
 * the SP re-gathered input, FP8 output gradients in both layouts (at least the widest other linear output, with
 * its 1x128 tiles), and for a MoE layer
 * the dispatch receive and combine send buffers [rows, h]; with latent attention its backward rows: d(kv_down
 * output), the widest up-projection output gradient and a latent's two), plus one layer's
 * recomputed tensors (full recompute, or Q/K/V under mla_up_proj), an FP8 gradient's
 * fp32 staging, ZeRO-3's gathered layers, or the loss on the last stage. */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/plan_internal.h"

void moe_held(const PlanInput *in, const Geo *g, uint32_t stage, Ck *ck, Held *o)
{
    const MoeGeo *x = &g->x;
    memset(o, 0, sizeof *o);
    uint32_t st[2] = {stage, (uint32_t)(g->pp - 1 - stage)};
    o->nst = in->dualpipe && st[1] != st[0] ? 2 : 1;
    int moe_mtp = x->E > 0;
    for (uint64_t i = 0; i < o->nst; i++) {
        uint32_t s = st[i];
        uint64_t Ls = geo_layers(g, s), nd, nx;
        moe_stage_kinds(in, g, s, &nd, &nx);
        uint64_t units = plan_inflight_layers(g, s);
        if (in->dualpipe) units = ck_mul(ck, Ls, g->pp - s < g->m / 2 ? g->pp - s : g->m / 2);
        uint64_t ud = Ls ? udiv(ck_mul(ck, units, nd), Ls) : 0;
        o->n[XK_DENSE] += nd, o->n[XK_MOE] += nx;
        o->units[XK_DENSE] += ud, o->units[XK_MOE] += units - ud;
        if (s == 0) o->first = 1;
        if (s == g->pp - 1) {
            o->last = 1, o->mtp = x->mtp;
            /* the MTP depths follow the model's last chunk, whose backward follows each forward at once in every
             * schedule (1F1B, interleaved, DualPipe): one micro-batch in flight */
            o->n[moe_mtp ? XK_MOE : XK_DENSE] += x->mtp;
            o->units[moe_mtp ? XK_MOE : XK_DENSE] += x->mtp;
        }
    }
}

/* With several micro-batches in flight (PP) under per-tensor FP8, each keeps the scale_inv its saved FP8 inputs
 * were cast with while later forwards recast the bank's, held the whole step: as plan_mem.c, 4 B x LIN_COUNT per
 * in-flight layer, and in a MoE layer 4 B for each local expert's FC1 and FC2 input; this executor (--stack
 * fp8plan) recomputes the experts' outputs in the backward at ep 1 and keeps FC2's input scale for that too.
 * At pp 1 the bank's scale_inv stay the forward's until the backward (the update moves only the scales), so the
 * one scale kept is that one, and only under delayed scaling (whose update after the forward moves it). */
static uint64_t pp_saved_scales(const PlanInput *in, const Geo *g, const Held *hd, uint64_t f8e, Ck *ck)
{
    if (!f8e || in->recipe->act_gran != GRAN_TENSOR) return 0;
    const MoeGeo *x = &g->x;
    int recompute = in->fusion == FUSE_FP8PLAN && x->ep == 1;
    if (g->pp == 1)
        return recompute && in->recipe->scaling == SCALING_DELAYED ? ck_mul3(ck, hd->units[XK_MOE], x->El, 4) : 0;
    uint64_t per = 2 + (uint64_t)recompute;
    uint64_t b = ck_mul(ck, ck_add(ck, hd->units[XK_DENSE], hd->units[XK_MOE]), 4 * LIN_COUNT);
    return ck_add(ck, b, ck_mul3(ck, hd->units[XK_MOE], ck_mul(ck, x->El, per), 4));
}

/* Scale terms of the FP8 linear tensors the GPU holds (the router is BF16; an MTP depth adds eh_proj). */
static void scale_terms(const PlanInput *in, const Geo *g, const Held *hd, StageMem *sm, Ck *ck, int keep)
{
    const Recipe *rc = in->recipe;
    const MoeGeo *x = &g->x;
    int row = rc->fp8_row != DT_NONE && keep, col = plan_fp8_col_held(in) && keep;
    uint64_t ntens = hd->mtp, sbn = 0, sbb = 0, bb, nn;
    for (int k = 0; k < XK_COUNT; k++)
        for (int i = 0; i < x->nlin[k]; i++) {
            const Lin *l = &x->lin[k][i];
            if (l->kind == XL_ROUTER || !hd->n[k]) continue;
            uint64_t tens = ck_mul(ck, l->count, hd->n[k]);
            ntens = ck_add(ck, ntens, tens);
            if (rc->weight_gran == GRAN_TENSOR) continue;
            nn =
                plan_weight_block_scales(in, l->rows, l->cols, l->kind == XL_EXPERT ? x->edp : g->d, row, col, ck, &bb);
            sbn = ck_add(ck, sbn, ck_mul(ck, nn, tens)), sbb = ck_add(ck, sbb, ck_mul(ck, bb, tens));
        }
    if (hd->mtp && rc->weight_gran != GRAN_TENSOR) {
        nn = plan_weight_block_scales(in, g->h_t, 2 * g->h, g->d, row, col, ck, &bb);
        sbn = ck_add(ck, sbn, ck_mul(ck, nn, hd->mtp)), sbb = ck_add(ck, sbb, ck_mul(ck, bb, hd->mtp));
    }
    plan_scale_terms(in, sm, ck, ntens, sbn, sbb);
}

/* The widest output gradient of a layer kind's linears other than the router and the routed experts (elements),
 * and the most 1x128 tile bytes one of them has in both layouts (row-wise along its output, transposed along the
 * tokens), as that linear's backward casts it to FP8; fs > 0: this executor's shared FFN at that width. */
static void other_dy(const PlanInput *in, const Geo *g, Ck *ck, int k, uint64_t fs, uint64_t *elems, uint64_t *tiles)
{
    const MoeGeo *x = &g->x;
    uint64_t m[X_MAX_LIN + 1], n[X_MAX_LIN + 1];
    int c = 0;
    for (int i = 0; i < x->nlin[k]; i++)
        if (x->lin[k][i].kind == XL_GEMM) m[c] = x->lin[k][i].m, n[c++] = x->lin[k][i].rows;
    if (fs) m[c] = g->tok, n[c++] = g->k * fs;
    *elems = *tiles = 0;
    for (int i = 0; i < c; i++) {
        uint64_t e = ck_mul(ck, m[i], n[i]), c1, c2;
        uint64_t t = ck_add(ck, plan_block_scale_bytes(in->recipe->act_gran, m[i], n[i], &c1),
                            plan_block_scale_bytes(in->recipe->act_gran, n[i], m[i], &c2));
        if (g->rep > 1 && m[i] == g->tok) { /* SP: a column-parallel wgrad's copy tiled along each rank's tokens */
            uint64_t c3,
                t3 = ck_mul(ck, plan_block_scale_bytes(in->recipe->act_gran, n[i], m[i] / g->rep, &c3), g->rep);
            if (c3 == UINT64_MAX) ck->ovf = 1;
            t3 = ck_add(ck, t3, plan_block_scale_bytes(in->recipe->act_gran, m[i], n[i], &c3));
            if (t3 > t) t = t3;
        }
        if (c1 == UINT64_MAX || c2 == UINT64_MAX) ck->ovf = 1;
        if (e > *elems) *elems = e;
        if (t > *tiles) *tiles = t;
    }
}

/* The widest column-parallel input a layer's backward gathers again from its sequence shards (SP): h, an MTP
 * depth's eh_proj 2h, latent attention's up-projections their latents (q_lora_rank, kv_lora_rank wide: Megatron-Core
 * runs the down-projections and the latents' norms on the shard, core_v0.16.0 multi_latent_attention.py, so
 * linear_q_up_proj / linear_kv_up_proj gather their inputs as any column-parallel linear; exec/model/model_tp.c
 * tp_full). */
static uint64_t sp_gather_w(const PlanInput *in, const Geo *g, int mtp)
{
    const ModelSpec *md = in->model;
    uint64_t w = mtp ? 2 * g->h : g->h;
    if (g->x.mla && md->q_lora_rank > w) w = md->q_lora_rank;
    if (g->x.mla && md->kv_lora_rank > w) w = md->kv_lora_rank;
    return w;
}

/* Buffers this executor (fusion fp8plan) keeps the whole step on a stage holding a MoE layer: one router-logit
 * buffer [tok_r, experts] fp32 and one of the experts' output rows [own, h] BF16 for every MoE layer's forward and
 * backward, and an FP8 dispatch's payload (codes and 1x128 scales) (exec/model/model_moe.c model_moe_transient).
 * With ep > 1 these are the token side's: a row per routed copy of the rank's own tokens, own = rows / etp (tok_r x
 * top-k), not the ETP group's rows the experts run on after the gather (those are the dispatch and combine buffers).
 * At ep 1 the outputs' buffer is the experts' side, the ETP group's rows (etp x tok_r x top-k, exactly: every peer
 * routes its own tokens), which the ETP gather and reduce-scatter leave the rank's own rows in
 * (exec/model/model_moe_ep.c, model_etp_arena). */
static uint64_t moe_step_bufs(const PlanInput *in, const Geo *g, const Held *hd, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    if (in->fusion != FUSE_FP8PLAN || !hd->n[XK_MOE] || !x->E) return 0;
    uint64_t own = x->ep == 1 ? x->rows : ceil_div(x->rows, x->etp ? x->etp : 1);
    uint64_t b = ck_add(ck, ck_mul3(ck, g->tok_r, x->E, 4), ck_mul3(ck, own, g->h, 2)), n, sb;
    if (x->ep > 1 && dt_fp8(rc->comm_ep_dispatch) && rc->act_gran != GRAN_TENSOR &&
        !gran_scale_count(rc->act_gran, 1, g->h, &n, &sb, NULL))
        b = ck_add(ck, b, ck_mul(ck, own, ck_add(ck, g->h, sb)));
    return b;
}

/* The backward working set of one layer of kind k (before recompute and staging). dense_f: the FFN width of the
 * dense layers the stage also holds (0 if none). */
static uint64_t kind_transient(const PlanInput *in, const Geo *g, Ck *ck, int k, uint64_t dense_f)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    const ModelSpec *md = in->model;
    /* the attention's output gradient d(Q, K, V): latent attention's heads are qk_nope + qk_rope wide for q and k,
     * v_head_dim for v */
    uint64_t att = x->mla ? ck_mul(ck, g->heads_t, 2 * x->dqk + x->dv) : g->lin_rows[LIN_QKV];
    /* this executor (fp8plan run) keeps one set of block backward buffers for every layer of the stage, sized at
     * its widest layer (exec/model/model_layout.c transient()): in a MoE layer the shared experts' d(FC1 output)
     * and d(activation) are the dense layers' when those are wider. Real stacks allocate per layer. */
    int one_set = in->fusion == FUSE_FP8PLAN && k == XK_MOE && dense_f > x->Fs_t;
    uint64_t fs = one_set ? dense_f : x->Fs_t;
    uint64_t h = g->h, tok = g->tok, hid = k == XK_DENSE ? ck_mul(ck, tok, g->k * g->F_t) : ck_mul(ck, tok, g->k * fs);
    if (k == XK_MOE) hid = ck_add(ck, hid, ck_mul(ck, x->rows, g->k * x->Fe_t));
    /* dX, d(residual), d(hidden). dX's buffer also holds the attention output's gradient [tok, heads/tp x v head
     * dim] (the output projection's input gradient, read by the attention's backward): wider than h where the
     * heads are (latent attention's 128 x 128 against 7,168; Qwen3-30B-A3B's 32 x 128 against 2,048) */
    uint64_t dx = ck_mul(ck, tok, ck_mul(ck, g->heads_t, x->dv)), dr = ck_mul(ck, g->tok_r, h);
    if (dr > dx) dx = dr;
    uint64_t b = ck_add(ck, ck_mul(ck, ck_add(ck, dr, dx), 2), ck_mul(ck, hid, 2));
    if (g->k == 2) { /* SwiGLU: d(its output) is read while d(FC1 output) is written (as plan_mem.c) */
        uint64_t act = k == XK_DENSE ? ck_mul(ck, tok, g->F_t) : ck_mul(ck, tok, fs);
        if (k == XK_MOE) act = ck_add(ck, act, ck_mul(ck, x->rows, x->Fe_t));
        b = ck_add(ck, b, ck_mul(ck, act, 2));
    }
    if (k == XK_MOE && x->E) {
        /* the router's backward: its logits and d(scores) fp32 and d(logits) BF16 a (token, expert), d(weights) fp32 a
         * (token, slot); the MoE block's input gradient [tok_r, h] (router and combine summed before the residual).
         * d(scores) is the score function's output gradient over every expert: Megatron-Core's sigmoid router
         * (core_v0.16.0 moe_utils.py topk_routing_with_score_function: scores = torch.gather(sigmoid(logits), 1,
         * top_indices)) gets it from the gather's backward, a [tok, experts] tensor beside SigmoidBackward's output;
         * TE's fused router takes the [tok, experts] gradient of routing_probs. This executor's sigmoid router
         * (fusion fp8plan) keeps none: its router_bwd goes from d(weights) [tok, top-k] through the normalisation
         * and the sigmoid row by row into the logits' buffer (exec/model/model_moe_route.c; a softmax router keeps
         * one for its auxiliary loss's gradient, exec/model/model_moe.c model_moe_transient) */
        uint64_t per_e = in->fusion == FUSE_FP8PLAN && md->router == ROUTER_SIGMOID ? 6 : 10;
        b = ck_add(ck, b, ck_mul(ck, g->tok_r, ck_add(ck, per_e * x->E, 4 * (uint64_t)x->topk)));
        b = ck_add(ck, b, ck_mul3(ck, g->tok_r, h, 2));
        /* the attention's widest output gradient, d(QKV), which a layer without a dense FFN has not counted (with
         * latent attention the up-projections' output gradients below); this executor's d(Q, K, V) is the buffer
         * of d(FC1 output), counted above, and its columns beyond those */
        if (in->fusion == FUSE_FP8PLAN && x->mla && att > g->k * fs)
            b = ck_add(ck, b, ck_mul3(ck, tok, att - g->k * fs, 2));
        else if (!x->mla)
            b = ck_add(ck, b, ck_mul3(ck, tok, att, 2));
    }
    /* a dense layer: this executor's d(Q, K, V) is d(FC1 output)'s buffer too (exec/model/model_layout.c: d_a, the
     * widest of both), so its columns beyond FC1's count where the attention's are wider — latent attention's
     * 2 x 192 + 128 = 512 a head against a shrunk FFN's 2 x 128 (issue 42: DeepSeek-V3's dense first layer alone on
     * a pipeline stage, where no head or MoE layer's larger transient hid it) */
    if (k == XK_DENSE && in->fusion == FUSE_FP8PLAN && att > g->k * g->F_t)
        b = ck_add(ck, b, ck_mul3(ck, tok, att - g->k * g->F_t, 2));
    if (x->mla) {
        /* latent attention's backward rows (Megatron-Core core_v0.16.0 multi_latent_attention.py,
         * get_query_key_value_tensors: linear_kv_down_proj, torch.split into kv_compressed and k_pos_emb,
         * kv_layernorm, linear_kv_up_proj, and q's linear_q_down_proj, q_layernorm, linear_q_up_proj; autograd
         * holds each op's output gradient while the next one back runs): d(kv_down output) [tok_r, kv_lora + rope],
         * the wider of d(q_up output), d(kv_up output) [tok, heads/tp x ...] and the down-projections' input gradient
         * [tok_r, h], and a latent's norm output and input gradients [tok_r, max(q_lora, kv_lora)]. Under SP the
         * duplicated down-projections and the latents' norms run on the sequence shard (kv_compressed "[s / TP, b,
         * kv_lora_rank]", k_pos_emb gathered alone), so their rows are tok_r; the column-parallel up-projections'
         * outputs are every token's */
        uint64_t up = ck_mul(ck, g->heads_t, x->dqk), kvu = ck_mul(ck, g->heads_t, md->qk_nope_head_dim + x->dv),
                 lat = md->q_lora_rank > md->kv_lora_rank ? md->q_lora_rank : md->kv_lora_rank;
        if (kvu > up) up = kvu;
        up = ck_mul(ck, tok, up);
        if (ck_mul(ck, g->tok_r, h) > up) up = ck_mul(ck, g->tok_r, h);
        uint64_t shard = ck_add(ck, (uint64_t)md->kv_lora_rank + md->qk_rope_head_dim, 2 * lat);
        b = ck_add(ck, b, ck_mul(ck, ck_add(ck, ck_mul(ck, g->tok_r, shard), up), 2));
    }
    if (in->attn == ATTN_MATERIALIZED) /* d(probabilities) of one layer's attention backward, fp32 (as plan_mem.c) */
        b = ck_add(ck, b, ck_mul(ck, ck_mul3(ck, tok, g->heads_t, g->seq), 4));
    if (!x->mla) b = ck_add(ck, b, plan_qk_norm_bytes(in, g, ck)); /* q/k norms' rebuilt attention input */
    if (g->rep > 1) b = ck_add(ck, b, ck_mul3(ck, tok, sp_gather_w(in, g, 0), 2)); /* SP re-gathered input */
    uint64_t hid8 = hid; /* the FP8 output gradients: a routed expert's widest is FC1's (k x Fe) or FC2's (h) */
    if (k == XK_MOE && x->E && h > g->k * x->Fe_t) hid8 = ck_add(ck, hid8, ck_mul(ck, x->rows, h - g->k * x->Fe_t));
    /* or the layer's widest other linear output (the attention's projections: latent attention's q_down output,
     * q_lora wide, is wider than a small FFN's), cast as that linear's backward runs */
    uint64_t lw8 = 0, lt8 = 0;
    other_dy(in, g, ck, k, one_set ? fs : 0, &lw8, &lt8);
    if (lw8 > hid8) hid8 = lw8;
    if (dt_fp8(rc->gemm_bwd)) b = ck_add(ck, b, 2 * hid8); /* dY in FP8, both layouts */
    if (dt_fp8(rc->gemm_bwd) && rc->act_gran == GRAN_1X128) {
        /* the dY tiles of the linear whose backward runs: the routed experts' (the widest of their outputs: h or
         * k x Fe), row-wise along it and in the transposed copy along the rows, each expert's from its first row;
         * or another linear's, whichever has more */
        uint64_t dw = h > g->k * x->Fe_t ? h : g->k * x->Fe_t, xt = 0;
        if (k == XK_MOE && x->E)
            xt = ck_mul(
                ck,
                ck_add(ck, ck_mul(ck, x->rows, ceil_div(dw, 128)), ck_mul(ck, dw, moe_expert_tiles(x->rows, x->El))),
                4);
        b = ck_add(ck, b, xt > lt8 ? xt : lt8);
    }
    if (k == XK_MOE && x->E) { /* dispatch / combine buffers; with ep 1 nothing crosses a wire and the permuted
                                  rows stay in the activations' dtype (BF16) */
        uint64_t disp = x->ep > 1 ? dt_bytes(rc->comm_ep_dispatch) : 2,
                 comb = x->ep > 1 ? dt_bytes(rc->comm_ep_combine) : 2;
        b = ck_add(ck, b, ck_mul3(ck, x->rows, h, disp + comb));
        /* an FP8 dispatch's rows carry their scales (1x128: one fp32 a 128 values), as the payload the collectives
         * plan: DeepEP-style stacks quantize the hidden states into (codes, scales) and dispatch that pair (vLLM
         * deepep_ht_prepare_finalize.py: moe_kernel_quantize_input, then Buffer.dispatch(x=(tokens, scales))) */
        uint64_t n, sb;
        if (x->ep > 1 && dt_fp8(rc->comm_ep_dispatch) && rc->act_gran != GRAN_TENSOR &&
            !gran_scale_count(rc->act_gran, 1, h, &n, &sb, NULL))
            b = ck_add(ck, b, ck_mul(ck, x->rows, sb));
    }
    if (k == XK_DENSE && (in->mem_savings & PLAN_UNK_DENSE_ACT) && in->recompute != RECOMPUTE_FULL &&
        !(in->recompute_mods & RECOMPUTE_MOD_MLP))
        b = ck_add(ck, b, ck_mul3(ck, tok, g->F_t, 2)); /* FC2's input, rebuilt for its backward (dense_act) */
    return b;
}

void moe_memory(const PlanInput *in, const Geo *g, uint32_t stage, StageMem *sm, Ck *ck)
{
    const Recipe *rc = in->recipe;
    const ModelSpec *md = in->model;
    const MoeGeo *x = &g->x;
    int zero3 = in->sharding == SHARD_ZERO3;
    Held hd;
    moe_held(in, g, stage, ck, &hd);

    /* ---- parameters ---- */
    uint64_t gemm = ck_mul(ck, hd.mtp, x->mtp_gemm), other = ck_mul(ck, hd.mtp, x->mtp_other);
    for (int k = 0; k < XK_COUNT; k++) {
        gemm = ck_add(ck, gemm, ck_mul(ck, hd.n[k], x->gemm[k]));
        other = ck_add(ck, other, ck_mul(ck, hd.n[k], x->other[k]));
    }
    uint64_t expert = ck_mul(ck, hd.n[XK_MOE], x->expert);
    sm->linear_tensors = hd.mtp; /* each MTP depth's eh_proj, besides its layer's */
    for (int k = 0; k < XK_COUNT; k++)
        sm->linear_tensors = ck_add(ck, sm->linear_tensors, ck_mul(ck, hd.n[k], x->ngemm[k]));
    if (hd.first) other = ck_add(ck, other, ck_add(ck, g->emb, g->pos));
    if (hd.last) {
        other = ck_add(ck, other, g->norm_elems);
        if (!md->tied_embeddings || g->pp > 1) other = ck_add(ck, other, g->emb); /* LM head or its tied copy */
        if (hd.mtp && !hd.first && !md->tied_embeddings) other = ck_add(ck, other, g->emb); /* MTP's lookup */
    }
    sm->params_gemm = gemm, sm->params_expert = expert;
    sm->params = ck_add(ck, ck_add(ck, gemm, other), expert);
    uint64_t d = g->d * hd.nst, ed = x->edp * hd.nst;
    plan_state_terms(in, d, sm, ck, &rc->other, other, MT_WEIGHT_OTHER, MT_MASTER_OTHER, MT_GRAD_OTHER,
                     MT_OPTIM_M_OTHER, MT_OPTIM_V_OTHER);
    plan_state_terms(in, d, sm, ck, &rc->gemm, gemm, MT_WEIGHT_GEMM, MT_MASTER_GEMM, MT_GRAD_GEMM, MT_OPTIM_M_GEMM,
                     MT_OPTIM_V_GEMM);
    plan_state_terms(in, ed, sm, ck, &rc->gemm, expert, MT_WEIGHT_EXPERT, MT_MASTER_EXPERT, MT_GRAD_EXPERT,
                     MT_OPTIM_M_EXPERT, MT_OPTIM_V_EXPERT);
    /* a sigmoid router's expert bias: FP32, whole on every rank, one per MoE layer held (plan.h MT_ROUTER_BIAS) */
    uint64_t rb = ck_mul(ck, hd.n[XK_MOE], x->rbias);
    plan_term(sm, MT_ROUTER_BIAS, DT_FP32, rb, ck_mul(ck, rb, 4), 1);
    int keep = !zero3 && in->fp8_weight_cache && plan_fp8_copies_held(in);
    uint64_t row = (rc->fp8_row != DT_NONE && keep) ? gemm : 0, col = (plan_fp8_col_held(in) && keep) ? gemm : 0;
    plan_term(sm, MT_FP8_ROWWISE, rc->fp8_row, row, ck_mul(ck, row, dt_bytes(rc->fp8_row)), 1);
    plan_term(sm, MT_FP8_COLWISE, rc->fp8_col, col, ck_mul(ck, col, dt_bytes(rc->fp8_col)), 1);
    uint64_t xcopies = (rc->fp8_row != DT_NONE) + (uint64_t)plan_fp8_col_held(in),
             xe = keep ? ck_mul(ck, expert, xcopies) : 0;
    plan_term(sm, MT_FP8_EXPERT, rc->fp8_row != DT_NONE ? rc->fp8_row : rc->fp8_col, xe,
              ck_mul(ck, xe, dt_bytes(rc->fp8_row != DT_NONE ? rc->fp8_row : rc->fp8_col)), 1);
    scale_terms(in, g, &hd, sm, ck, keep);

    /* ---- overheads: a communicator per group the GPU takes part in ---- */
    uint64_t ncomm = (g->tp > 1) + (g->cp > 1) + (g->d > 1) + (g->pp > 1) + (x->ep > 1) + (x->etp > 1) + (x->edp > 1);
    if (ncomm < in->comms_min) ncomm = in->comms_min;
    plan_term(sm, MT_COMM_BUFFER, DT_NONE, 0, ck_mul(ck, ncomm, in->nccl_comm_bytes), 1);
    plan_term(sm, MT_WORKSPACE, DT_NONE, 0, in->workspace_bytes, 1);
    plan_term(sm, MT_CUDA_CONTEXT, DT_NONE, 0, in->cuda_context_bytes, 1);

    /* ---- activations ---- */
    LayerAct la[XK_COUNT];
    moe_kind_acts(in, g, ck, la);
    uint64_t hp = 0, f8 = 0, f8e = 0, at = 0, mk = 0, moe = 0, tr = 0;
    for (int k = 0; k < XK_COUNT; k++) {
        const LayerAct *a = &la[k];
        uint64_t u = hd.units[k], ahp = a->hp, af8 = ck_add(ck, a->fp8, a->wcopy), af8e = a->fp8_elems;
        uint64_t aat = recompute_attn_core(in->recompute, in->recompute_mods) ? 0 : a->attn, amk = a->mask,
                 amoe = a->moe - a->moe_off; /* what --offload-modules moves to host memory leaves the GPU */
        if (in->recompute == RECOMPUTE_FULL) ahp = a->input, af8 = af8e = aat = amk = amoe = 0;
        hp = ck_add(ck, hp, ck_mul(ck, ahp, u)), f8 = ck_add(ck, f8, ck_mul(ck, af8, u));
        f8e = ck_add(ck, f8e, ck_mul(ck, af8e, u)), at = ck_add(ck, at, ck_mul(ck, aat, u));
        mk = ck_add(ck, mk, ck_mul(ck, amk, u)), moe = ck_add(ck, moe, ck_mul(ck, amoe, u));
        if (!hd.n[k]) continue;
        uint64_t b = kind_transient(in, g, ck, k, hd.n[XK_DENSE] ? g->F_t : 0);
        /* an MTP depth's layer (this kind's) under SP: the input its eh_proj gathers, and its input gradient before
         * the reduce-scatter, are 2h wide, not h (plan_moe_comm.c) */
        if (hd.mtp && g->rep > 1 && k == (x->E ? XK_MOE : XK_DENSE))
            b = ck_add(ck, b, ck_mul3(ck, g->tok, sp_gather_w(in, g, 1) - sp_gather_w(in, g, 0), 2));
        if (in->recompute == RECOMPUTE_FULL)
            b = ck_add(ck, b, ck_add(ck, ck_add(ck, a->hp, a->fp8), ck_add(ck, ck_add(ck, a->attn, a->mask), a->moe)));
        if (in->recompute_mods & RECOMPUTE_MOD_MLA_UP) /* one layer's rebuilt Q, K, V */
            b = ck_add(ck, b, ck_mul3(ck, ck_mul(ck, g->tok, g->heads_t), 2 * x->dqk + x->dv, 2));
        b = ck_add(ck, b, a->rebuilt); /* what the other modules rebuild of one layer */
        /* offloaded inputs on the GPU: the layer whose backward runs and the next one, reloaded ahead of it */
        if (in->recompute != RECOMPUTE_FULL) b = ck_add(ck, b, 2 * a->moe_off);
        if (b > tr) tr = b;
    }
    /* embedding dropout: one mask per micro-batch in flight on stage 0 (as plan_mem.c; not one per layer) */
    if (hd.first && in->dropout) {
        uint64_t mb0 = in->dualpipe ? (g->pp < g->m / 2 ? g->pp : g->m / 2) : plan_inflight_mbs(g, 0);
        mk = ck_add(ck, mk, ck_mul3(ck, g->tok_r, g->h, mb0));
    }
    if (hd.mtp && in->recompute != RECOMPUTE_FULL) {
        /* per MTP depth besides its layer (Megatron-Core core_v0.16.0 MultiTokenPredictionLayer: enorm of the
         * next tokens' embedding, hnorm of the main model's output, eh_proj over their concatenation): enorm's
         * input (tok x h BF16; hnorm's is the final norm's, counted in act_output), both norms' statistics, and
         * eh_proj's saved input (tok x 2h, in the recipe's saved-input dtype) */
        LayerAct ma;
        memset(&ma, 0, sizeof ma);
        uint64_t mst = md->norm == NORM_LAYERNORM ? 8 : 4;
        uint64_t mh = ck_add(ck, ck_mul3(ck, g->tok_r, g->h, 2), ck_mul3(ck, g->tok_r, 2, mst));
        plan_saved_input(rc, ck, g->tok_r, 2 * g->h, &ma, &mh);
        hp = ck_add(ck, hp, ck_mul(ck, mh, hd.mtp)), f8 = ck_add(ck, f8, ck_mul(ck, ma.fp8, hd.mtp));
        f8e = ck_add(ck, f8e, ck_mul(ck, ma.fp8_elems, hd.mtp));
    }
    plan_term(sm, MT_ACT_LAYER_HP, DT_NONE, 0, hp, 1);
    plan_term(sm, MT_ACT_LAYER_FP8, rc->saved_input, f8e, f8, 1);
    plan_term(sm, MT_ACT_ATTN, DT_NONE, 0, at, 1);
    plan_term(sm, MT_ACT_MASK, DT_NONE, mk, mk, 1);
    plan_term(sm, MT_ACT_MOE, DT_NONE, 0, moe, 1);
    uint64_t out = 0, logit_elems = ck_mul(ck, g->tok, g->Vp_t), stat = md->norm == NORM_LAYERNORM ? 8 : 4;
    if (hd.last) { /* final norm in, LM-head input, fp32 softmax of the logits; again per MTP depth */
        out = ck_add(ck, 2 * ck_mul3(ck, g->tok_r, g->h, 2), ck_mul(ck, g->tok_r, stat));
        out = ck_mul(ck, ck_add(ck, out, ck_mul(ck, logit_elems, 4)), 1 + hd.mtp);
    }
    plan_term(sm, MT_ACT_OUTPUT, DT_NONE, 0, out, 1);

    /* ---- transient ---- */
    if (dt_fp8(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]))) { /* a weight gradient in fp32 before its cast */
        uint64_t lmax = 0;
        for (int k = 0; k < XK_COUNT; k++)
            for (int i = 0; i < x->nlin[k]; i++)
                if (ck_mul(ck, x->lin[k][i].rows, x->lin[k][i].cols) > lmax)
                    lmax = x->lin[k][i].rows * x->lin[k][i].cols;
        tr = ck_add(ck, tr, ck_mul(ck, lmax, 4));
    }
    uint64_t cast = plan_fp8_cast_bytes_per_param(in);
    if (cast) { /* the fp8_weight_cache saving: the FP8 copies of the largest GEMM's weights (a grouped GEMM's local
                   experts together), cast while it runs */
        uint64_t wmax = 0;
        for (int k = 0; k < XK_COUNT; k++)
            for (int i = 0; i < x->nlin[k]; i++) {
                const Lin *l = &x->lin[k][i];
                uint64_t w = ck_mul3(ck, l->rows, l->cols, l->count);
                if (hd.n[k] && l->kind != XL_ROUTER && w > wmax) wmax = w;
            }
        tr = ck_add(ck, tr, ck_mul(ck, wmax, cast));
    }
    /* ZeRO-3 over stages: the stage's weights and gradients, held all step */
    uint64_t step = 0;
    if (zero3) { /* as for dense models (plan_mem.c), with the larger layer kind's weights. The routed experts are
                    left out where nothing is gathered or cast for them: an expert-data-parallel group of one (EP over
                    every data-parallel rank of the stage) holding BF16 parameters keeps them whole, in the compute
                    dtype, in their state terms (NeMo AutoModel's MoE parallelizer leaves them out of FSDP then: ep_shard
                    1). An FP32 master is still cast to a BF16 copy each step, as FSDP2 does over a mesh of one. */
        const StateSet *gs = &rc->gemm;
        int whole = ed == 1 && gs->dt[STATE_WEIGHT] == DT_NONE && gs->dt[STATE_MASTER] == DT_BF16;
        uint64_t lw = 0, xg = whole ? 0 : x->expert;
        for (int k = 0; k < XK_COUNT; k++) {
            uint64_t w = plan_zero3_layer_bytes(in, x->gemm[k] + (k == XK_MOE ? xg : 0), x->other[k], ck);
            if (hd.n[k] && w > lw) lw = w;
        }
        tr = ck_add(ck, tr, 2 * lw);
        if (g->pp > 1) step = ck_mul(ck, whole ? sm->params - sm->params_expert : sm->params, 2 + 2);
        tr = ck_add(ck, tr, step);
    }
    uint64_t dr = ck_mul(ck, g->tok_r, g->h), dx = ck_mul(ck, g->tok, ck_mul(ck, g->heads_t, x->dv));
    if (dr > dx) dx = dr;
    /* this executor's MoE buffers, live through the head's backward too */
    uint64_t bufs = moe_step_bufs(in, g, &hd, ck);
    if (hd.last) { /* the loss, or this executor's LM-head backward (plan_loss_bytes) */
        uint64_t lg = ck_add(ck, plan_loss_bytes(in, g, dx, ck), bufs);
        if (lg > tr) tr = lg;
    }
    /* after the backward, the replicated gradients' flattened copy (plan_tp_flat_grad_bytes) beside what is held all
     * step: this executor's dX and d(residual) buffers and its MoE buffers too (exec/model/model_tp.c, tp_norm_grads) */
    uint64_t fl = plan_tp_flat_grad_bytes(in, g, stage, hd.last, ck);
    if (fl) {
        fl = ck_add(ck, fl, step);
        if (in->fusion == FUSE_FP8PLAN) fl = ck_add(ck, fl, ck_add(ck, ck_mul(ck, ck_add(ck, dr, dx), 2), bufs));
        if (fl > tr) tr = fl;
    }
    tr = ck_add(ck, tr, pp_saved_scales(in, g, &hd, f8e, ck));
    plan_term(sm, MT_TRANSIENT, DT_NONE, 0, tr, 1);
    plan_mem_sums(in, sm, ck);
}
