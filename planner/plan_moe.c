/* planner/plan_moe.c — layout checks and per-rank geometry of mixture-of-experts,
 * latent-attention and multi-token-prediction models (see plan.h, MoeGeo in
 * plan_internal.h).
 *
 * Expert parallelism follows Megatron-Core's "MoE parallel folding": the attention
 * side of every pipeline stage is tp x cp x dp ranks (tp fastest), the expert side
 * the same ranks regrouped as etp x ep x edp (etp fastest), so ep * etp must divide
 * tp * cp * dp and edp = tp * cp * dp / (ep * etp) = world / (etp * ep * pp). Each
 * rank holds experts / ep experts, each split over etp ranks; tokens reach their
 * experts by all-to-all over the ep ranks (etp apart) and are gathered over etp.
 *
 * Per rank and micro-batch a MoE layer receives rows = etp x tok_r x top_k x f
 * expert rows (tok_r: the sequence-parallel shard of the micro-batch's tokens;
 * f: the capacity factor when one is set, else the dropless imbalance allowance,
 * the most-loaded rank over the mean), rows / (experts / ep) per local expert.
 *
 * Linear layers of one layer, per rank (Lin: [rows, cols] x count, m GEMM rows):
 *   standard attention  QKV [(heads + 2 kv) hd / tp, h] and proj [h, heads hd / tp]
 *   latent attention    q_down [q_lora, h] and kv_down [kv_lora + rope, h] replicated
 *                       over TP and run on the SP shard (their latents, not h, are
 *                       gathered), q_up [heads/tp (nope + rope), q_lora] (without
 *                       q_lora one [heads/tp (nope + rope), h]), kv_up [heads/tp (nope +
 *                       v), kv_lora], out [h, heads/tp v]
 *   dense FFN           FC1 [k F / tp, h], FC2 [h, F / tp]
 *   MoE FFN             router [experts, h] (BF16, replicated; on the SP shard), shared
 *                       FC1 [k S Fe / tp, h] and FC2 [h, S Fe / tp], and per local expert
 *                       FC1 [k Fe / etp, h] and FC2 [h, Fe / etp] over rows_e rows.
 * A multi-token-prediction depth adds eh_proj [h / tp, 2h] (column-parallel), three
 * norms and one layer (MoE when the model has experts) on the last stage. */
#include <string.h>

#include "planner/plan_internal.h"

static int ctz_u(unsigned v)
{
    int i = 0;
    while (v && !(v & 1u)) v >>= 1, i++;
    return i;
}

/* --recompute-modules beyond core_attn on models the MoE path plans, and each module on a model that has what
 * it recomputes. */
static PlanReject modules_validate(const PlanInput *in, Err *e)
{
    const ModelSpec *md = in->model;
    unsigned mods = in->recompute_mods;
    unsigned path = mods & (RECOMPUTE_MOD_MLP | RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_SHARED | RECOMPUTE_MOD_LAYERNORM);
    if (path && !(spec_is_moe(md) || spec_is_mla(md) || md->mtp_layers))
        err_set(e, ST_USAGE,
                "--recompute-modules %s: modelled for mixture-of-experts, latent-attention and MTP models; %s is dense "
                "(its attention core: --recompute selective or the core_attn module; whole layers: --recompute full)",
                recompute_mod_names[ctz_u(path)], md->name);
    else if (mods && in->recompute == RECOMPUTE_FULL)
        err_set(e, ST_USAGE,
                "--recompute-modules %s with --recompute full: full recompute already runs every layer's forward "
                "again (the modules are Megatron's selective recompute)",
                recompute_mod_names[ctz_u(mods)]);
    else if ((mods & RECOMPUTE_MOD_CORE_ATTN) && in->recompute == RECOMPUTE_OP)
        err_set(e, ST_USAGE,
                "--recompute-modules core_attn with --recompute op: the op-level policy already decides "
                "what the attention keeps");
    else if ((mods & RECOMPUTE_MOD_SHARED) && spec_is_moe(md) && !md->shared_experts)
        err_set(e, ST_USAGE, "--recompute-modules shared_experts: %s has no shared experts", md->name);
    else if ((mods & RECOMPUTE_MOD_MLP) && spec_is_moe(md) && !md->dense_layers)
        err_set(e, ST_USAGE,
                "--recompute-modules mlp: %s has no dense FFN layers (its FFNs are MoE: moe, shared_experts, moe_act)",
                md->name);
    else if ((mods & RECOMPUTE_MOD_LAYERNORM) && !spec_is_moe(md) && !spec_is_mla(md))
        err_set(e, ST_USAGE,
                "--recompute-modules layernorm: %s has neither latent attention nor experts (Transformer Engine fuses "
                "each of its norms into the next linear: no norm output to discard)",
                md->name);
    else
        return REJECT_NONE;
    return REJECT_KNOB;
}

PlanReject moe_validate(const PlanInput *in, Err *e)
{
    const ModelSpec *md = in->model;
    if (!in->ep || !in->etp) {
        err_set(e, ST_USAGE, "--%s 0: must be at least 1", in->ep ? "etp" : "ep");
        return REJECT_ZERO;
    }
    /* each limit named alone, with the value at fault */
    const char *flag = NULL, *range = NULL;
    double v = 0;
    if (!(in->moe_imbalance >= 1 && in->moe_imbalance <= 64))
        flag = "--moe-imbalance", range = "[1, 64]", v = in->moe_imbalance;
    else if (!(in->moe_capacity >= 0 && in->moe_capacity <= 64))
        flag = "--moe-capacity", range = "[0, 64] (0: dropless)", v = in->moe_capacity;
    else if (!(in->overlap_ep >= 0 && in->overlap_ep <= 1))
        flag = "--overlap-ep", range = "[0, 1]", v = in->overlap_ep;
    if (flag) {
        err_set(e, ST_USAGE, "%s %g: must be in %s", flag, v, range);
        return REJECT_KNOB;
    }
    if (in->ep_comm_sms >= (in->gpu->sms ? in->gpu->sms : 1u)) {
        if (in->gpu->sms)
            err_set(e, ST_USAGE, "--ep-comm-sms %u: must be below the %u SMs of %s", in->ep_comm_sms, in->gpu->sms,
                    in->gpu->name);
        else
            err_set(e, ST_USAGE, "--ep-comm-sms %u: must be 0 on %s (no SM count)", in->ep_comm_sms, in->gpu->name);
        return REJECT_KNOB;
    }
    if (in->recompute_mods & ~(unsigned)RECOMPUTE_MOD_ALL_) {
        err_set(e, ST_USAGE, "--recompute-modules: unknown module bits 0x%x", in->recompute_mods);
        return REJECT_KNOB;
    }
    if (in->offload_mods & ~(unsigned)OFFLOAD_MOD_ALL_) {
        err_set(e, ST_USAGE, "--offload-modules: unknown module bits 0x%x", in->offload_mods);
        return REJECT_KNOB;
    }
    if (in->offload_mods && !spec_is_moe(md)) {
        err_set(e, ST_USAGE, "--offload-modules %s: offloads the routed experts' inputs; %s has no experts",
                offload_mod_names[ctz_u(in->offload_mods)], md->name);
        return REJECT_KNOB;
    }
    if (in->offload_mods && (in->recompute_mods & RECOMPUTE_MOD_MOE) && in->recompute != RECOMPUTE_FULL) {
        err_set(e, ST_USAGE,
                "--offload-modules %s with --recompute-modules moe: the MoE layer is rebuilt whole in backward, so "
                "nothing inside it is saved to offload (Megatron-Core refuses the pair too)",
                offload_mod_names[ctz_u(in->offload_mods)]);
        return REJECT_KNOB;
    }
    if (in->graph_scope & ~(unsigned)GRAPH_SCOPE_ALL_) {
        err_set(e, ST_USAGE, "--cuda-graph-scope: unknown scope bits 0x%x", in->graph_scope);
        return REJECT_KNOB;
    }
    if (in->graph_scope && !spec_is_moe(md)) {
        err_set(e, ST_USAGE,
                "--cuda-graph-scope %s: the host-issue term it changes is modelled for the MoE layers of models with "
                "experts; %s has none",
                cuda_graph_scope_names[ctz_u(in->graph_scope)], md->name);
        return REJECT_KNOB;
    }
    if (in->moe_dedup && !spec_is_moe(md)) {
        err_set(e, ST_USAGE, "--moe-dispatcher %s: %s has no experts to dispatch to",
                in->moe_dedup == MOE_DISPATCH_DEEPEP ? "deepep" : "hybridep", md->name);
        return REJECT_KNOB;
    }
    if (in->moe_fused_mlp && !spec_is_moe(md)) {
        err_set(e, ST_USAGE, "--moe-fused-mlp: fuses the routed experts' MLP; %s has no experts", md->name);
        return REJECT_KNOB;
    }
    if ((in->graph_scope & GRAPH_FULL) && !(in->moe_capacity > 0)) {
        err_set(e, ST_USAGE,
                "--cuda-graph-scope full: dropless routing gives every expert a data-dependent number of tokens, so "
                "a MoE layer cannot be captured whole; Megatron-Core captures whole layers only with a capacity "
                "factor and padding (--moe-capacity F)");
        return REJECT_KNOB;
    }
    if (!(in->host_op_s >= 0 && in->host_op_s < 1e-3) || !(in->moe_host_ops >= 0 && in->moe_host_ops <= 1e5) ||
        !(in->expert_host_ops >= 0 && in->expert_host_ops <= 1e3)) {
        err_set(e, ST_USAGE,
                "host issue: the time per operation must be in [0, 1000) us, the MoE layer's operations in [0, "
                "100000] and those per local expert in [0, 1000]");
        return REJECT_KNOB;
    }
    if (!spec_is_moe(md)) {
        if (in->ep > 1 || in->etp > 1) {
            err_set(e, ST_USAGE, "--ep %u --etp %u: %s has no experts", in->ep, in->etp, md->name);
            return REJECT_EP;
        }
        unsigned xm = in->recompute_mods & (RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_SHARED);
        if (xm) {
            err_set(e, ST_USAGE, "--recompute-modules %s: %s has no experts", recompute_mod_names[ctz_u(xm)], md->name);
            return REJECT_KNOB;
        }
    } else {
        uint64_t side = (uint64_t)in->tp * in->cp * in->dp, eg = (uint64_t)in->ep * in->etp;
        if (md->experts % in->ep || md->expert_ffn % in->etp) {
            err_set(e, ST_USAGE,
                    "--ep %u --etp %u: %s's %u experts must be divisible by ep and its expert FFN %u by etp", in->ep,
                    in->etp, md->name, md->experts, md->expert_ffn);
            return REJECT_EP;
        }
        if (side % eg) {
            err_set(e, ST_USAGE,
                    "--ep %u --etp %u: ep*etp = %llu must divide tp*cp*dp = %llu (expert groups are carved from the "
                    "ranks of a pipeline stage)",
                    in->ep, in->etp, (unsigned long long)eg, (unsigned long long)side);
            return REJECT_EP;
        }
        if ((uint64_t)md->shared_experts * md->expert_ffn % in->tp) {
            err_set(e, ST_USAGE, "--tp %u: the shared experts' FFN %u x %u of %s is not divisible by tp", in->tp,
                    md->shared_experts, md->expert_ffn, md->name);
            return REJECT_EP;
        }
        if (in->tp > 1 && !in->sp) {
            err_set(e, ST_USAGE, "--tp %u: MoE layers with tensor parallelism need sequence parallelism (--sp)",
                    in->tp);
            return REJECT_EP;
        }
    }
    PlanReject mr = modules_validate(in, e);
    if (mr) return mr;
    if ((in->recompute_mods & RECOMPUTE_MOD_MLA_UP) && !spec_is_mla(md)) {
        err_set(e, ST_USAGE, "--recompute-modules mla_up_proj: %s has no latent attention", md->name);
        return REJECT_KNOB;
    }
    if (in->recompute == RECOMPUTE_OP && (spec_is_moe(md) || spec_is_mla(md) || md->mtp_layers)) {
        err_set(e, ST_USAGE, "--recompute op: torchtitan's op-level policy is modelled for dense models only (%s)",
                md->name);
        return REJECT_KNOB;
    }
    if (in->dualpipe && !(spec_is_moe(md) || spec_is_mla(md) || md->mtp_layers)) {
        err_set(e, ST_USAGE, "--dualpipe: modelled for MoE / latent-attention models (%s is dense)", md->name);
        return REJECT_KNOB;
    }
    return REJECT_NONE;
}

static void lin(MoeGeo *x, int kind, uint64_t rows, uint64_t cols, uint64_t count, uint64_t m, uint64_t saved,
                int states)
{
    Lin *l = &x->lin[kind][x->nlin[kind]++];
    *l = (Lin){rows, cols, count, m, saved, (uint8_t)states, 0, XP_ATTN};
}

/* Dense layers on the layers [start, start + n) when the first `dense` layers are dense. */
static uint64_t dense_on(uint64_t dense, uint64_t start, uint64_t n)
{
    if (dense <= start) return 0;
    return dense - start < n ? dense - start : n;
}

void moe_stage_kinds(const PlanInput *in, const Geo *g, uint32_t s, uint64_t *nd, uint64_t *nx)
{
    uint64_t D = spec_is_moe(in->model) ? in->model->dense_layers : g->L, n = geo_layers(g, s);
    uint64_t start = s == 0 ? 0 : s == g->pp - 1 ? g->L - g->Ll : g->Lf + (uint64_t)(s - 1) * g->Lm;
    *nd = dense_on(D, start, n), *nx = n - *nd;
}

void moe_geo(const PlanInput *in, Geo *g)
{
    const ModelSpec *md = in->model;
    MoeGeo *x = &g->x;
    memset(x, 0, sizeof *x);
    x->on = 1;
    x->mla = spec_is_mla(md);
    uint64_t t = g->tp, h = g->h, tok = g->tok, tr = g->tok_r, ht = g->heads_t;
    x->ep = in->ep, x->etp = in->etp, x->ep_stride = in->etp;
    x->edp = udiv((uint64_t)in->tp * in->cp * in->dp, x->ep * x->etp);
    if (!x->edp) x->edp = 1;
    x->dqk = md->head_dim;
    x->dv = x->mla ? md->v_head_dim : md->head_dim;
    uint64_t D = spec_is_moe(md) ? md->dense_layers : g->L;

    /* attention linears, both kinds */
    for (int k = 0; k < XK_COUNT; k++) {
        if (x->mla) {
            uint64_t ql = md->q_lora_rank, kl = md->kv_lora_rank, r = md->qk_rope_head_dim;
            if (ql) {
                lin(x, k, ql, h, 1, tr, tr, XL_GEMM);
                lin(x, k, ht * x->dqk, ql, 1, tok, tr, XL_GEMM);
                x->lin[k][x->nlin[k] - 1].up = 1;
            } else {
                lin(x, k, ht * x->dqk, h, 1, tok, tr, XL_GEMM);
            }
            lin(x, k, kl + r, h, 1, tr, tr, XL_GEMM);
            lin(x, k, ht * (md->qk_nope_head_dim + x->dv), kl, 1, tok, tr, XL_GEMM);
            x->lin[k][x->nlin[k] - 1].up = 1;
            lin(x, k, h, ht * x->dv, 1, tok, tok, XL_GEMM);
            x->latent = (ql ? ql : h) + kl;
            x->other[k] = 2 * g->norm_elems + ql + kl;
        } else {
            lin(x, k, g->lin_rows[LIN_QKV], h, 1, tok, tr, XL_GEMM);
            lin(x, k, h, g->q_t, 1, tok, tok, XL_GEMM);
            x->other[k] = 2 * g->norm_elems + (md->qk_norm ? 2ull * md->head_dim : 0);
            /* linear biases (plan.c other_layer): QKV's column-parallel shard and the out-projection's whole h */
            if (md->linear_bias) x->other[k] += g->lin_rows[LIN_QKV] + h;
        }
    }
    /* FFNs */
    lin(x, XK_DENSE, g->k * g->F_t, h, 1, tok, tr, XL_GEMM);
    lin(x, XK_DENSE, h, g->F_t, 1, tok, tok, XL_GEMM);
    x->lin[XK_DENSE][x->nlin[XK_DENSE] - 2].part = x->lin[XK_DENSE][x->nlin[XK_DENSE] - 1].part = XP_FFN;
    /* a dense FFN's biases: FC1's shard k F / tp, FC2's whole h. A MoE layer's experts and shared experts have none
     * (plan_params.c counts none: the executor refuses biases with experts, no MoE row of the catalog has them) */
    if (md->linear_bias) x->other[XK_DENSE] += g->lin_rows[LIN_FC1] + h;
    if (spec_is_moe(md)) {
        x->E = md->experts, x->topk = md->experts_per_token, x->El = udiv(x->E, x->ep);
        x->Fe_t = udiv(md->expert_ffn, x->etp), x->Fs_t = udiv((uint64_t)md->shared_experts * md->expert_ffn, t);
        double f = in->moe_capacity > 0 ? in->moe_capacity : in->moe_imbalance;
        double rows = (double)x->etp * (double)tr * (double)x->topk * f;
        x->rows = rows >= 1.8e19 ? UINT64_MAX / 4 : (uint64_t)rows + ((double)(uint64_t)rows < rows);
        x->rows_e = ceil_div(x->rows, x->El ? x->El : 1);
        lin(x, XK_MOE, x->E, h, 1, tr, tr, XL_ROUTER);
        x->lin[XK_MOE][x->nlin[XK_MOE] - 1].part = XP_MOE;
        if (x->Fs_t) {
            lin(x, XK_MOE, g->k * x->Fs_t, h, 1, tok, tr, XL_GEMM);
            lin(x, XK_MOE, h, x->Fs_t, 1, tok, tok, XL_GEMM);
            x->lin[XK_MOE][x->nlin[XK_MOE] - 2].part = x->lin[XK_MOE][x->nlin[XK_MOE] - 1].part = XP_SHARED;
        }
        lin(x, XK_MOE, g->k * x->Fe_t, h, x->El, x->rows_e, x->rows_e, XL_EXPERT);
        lin(x, XK_MOE, h, x->Fe_t, x->El, x->rows_e, x->rows_e, XL_EXPERT);
        x->lin[XK_MOE][x->nlin[XK_MOE] - 2].part = x->lin[XK_MOE][x->nlin[XK_MOE] - 1].part = XP_MOE;
        x->other[XK_MOE] += x->E * h; /* the router weight; a sigmoid router's bias is a buffer (x->rbias) */
        x->rbias = md->router == ROUTER_SIGMOID ? x->E : 0;
    }
    for (int k = 0; k < XK_COUNT; k++)
        for (int i = 0; i < x->nlin[k]; i++) {
            const Lin *l = &x->lin[k][i];
            uint64_t n = l->rows * l->cols * l->count;
            if (l->kind == XL_GEMM) x->gemm[k] += n, x->ngemm[k]++;
            if (l->kind == XL_EXPERT && k == XK_MOE) x->expert += n;
        }
    /* the router counts as "other" (its row above is for its GEMM and saved input) */
    x->mtp = md->mtp_layers;
    x->mtp_gemm = g->h_t * 2 * h;
    x->mtp_other = 3 * g->norm_elems;

    /* dense and MoE layers per stage: the first stage holds layers [0, Lf), the last [L - Ll, L), the MoE-heaviest
     * middle stage (pp - 2) [Lf + (pp - 3) Lm, + Lm) */
    x->nd[0] = dense_on(D, 0, g->Lf);
    x->nd[2] = dense_on(D, g->L - g->Ll, g->Ll);
    x->nd[1] = g->pp > 2 ? dense_on(D, g->Lf + (g->pp - 3) * g->Lm, g->Lm) : x->nd[0];
    x->nx[0] = g->Lf - x->nd[0], x->nx[1] = (g->pp > 2 ? g->Lm : g->Lf) - x->nd[1], x->nx[2] = g->Ll - x->nd[2];
}
