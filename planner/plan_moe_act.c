/* planner/plan_moe_act.c — the saved activations of one layer of each kind (dense, MoE) of a mixture-of-experts,
 * latent-attention or multi-token-prediction model (the geometry is plan_moe.c's; plan_moe_mem.c multiplies
 * them by the in-flight layer-micro-batches and adds the stage's terms).
 *
 * Activations per layer and micro-batch (recompute none):
 *   attention  standard: plan_attn_act. Latent: norm1 input and statistics; the
 *              down-projections' input [tok_r, h] (one tensor they share in BF16; in FP8
 *              each saves its own cast); the latents
 *              c_q [tok, q_lora] and c_kv [tok, kv_lora] with their norms' fp32
 *              statistics; the up-projections' inputs; Q, K [tok, heads/tp x dqk] and
 *              V [tok, heads/tp x dv] (dropped when the up-projections are recomputed:
 *              --recompute-modules mla_up_proj); the attention output and its fp32
 *              log-sum-exp (or the materialized scores); out-projection input.
 *   FFN        dense layers: plan_ffn_act with F/tp; MoE layers: plan_ffn_act with the
 *              shared experts' S Fe / tp (norm2 only without shared experts), and in
 *              MT_ACT_MOE: the router's fp32 probabilities [tok_r, experts] and its
 *              top-k indices and weights (4 + 4 B each); its BF16 input [tok_r, h] when
 *              no other copy of the norm output is kept (FP8 saved inputs, or no shared
 *              experts); the dispatched expert inputs [rows, h] (saved dtype); FC1's
 *              output [rows, k Fe/etp] (BF16; + silu(gate) unfused) and FC2's input
 *              [rows, Fe/etp] (saved dtype) — under --recompute-modules moe_act only
 *              FC1's output, in the saved dtype (DeepSeek-V3 section 3.3.2 caches the
 *              SwiGLU input in FP8 and recomputes its output); per row its fp32 routing
 *              weight, and the permutation's saved maps by stack (routed_act). The routing weights multiply the
 *              activation output (Megatron-Core's TEGroupedMLP weighted SwiGLU), so their
 *              gradient comes from FC2's backward and no expert output is kept. This
 *              executor's stack (fusion fp8plan) combines with the [tok_r, top-k] weights
 *              instead: per (token, slot) an id, a weight and a row map and the E counts
 *              (no top-k pair or row weight besides), and with ep x etp > 1 the experts'
 *              outputs at the token copies [tok_r x top-k, h] (routed_act).
 *              --offload-modules expert_fc1 / moe_act (Megatron-Core's fine-grained activation
 *              offloading) move the dispatched FC1 inputs / FC1's output, as saved, to host
 *              memory after the forward when they reach 2^20 elements; the transient holds
 *              two layers' worth (the backward running and the layer reloaded ahead of it).
 * Recompute modules (--recompute-modules) drop what they rebuild, and the bytes one layer rebuilds go to the
 * transient (ffn_part). */
#include <string.h>

#include "planner/plan_internal.h"

/* Latent attention's activations of one layer, into *a (recompute none; mla_up_proj drops Q, K, V; ln: the
 * layernorm module drops the input norm's output, which the down-projections save when they save BF16). */
static void mla_act(const PlanInput *in, const Geo *g, Ck *ck, int ln, LayerAct *a)
{
    const ModelSpec *md = in->model;
    const Recipe *rc = in->recipe;
    const MoeGeo *x = &g->x;
    uint64_t tok = g->tok, tr = g->tok_r, ht = g->heads_t, ql = md->q_lora_rank, kl = md->kv_lora_rank;
    uint64_t stat = md->norm == NORM_LAYERNORM ? 8 : 4;
    int flash = in->attn != ATTN_MATERIALIZED;
    uint64_t hp = ck_add(ck, ck_mul3(ck, tr, g->h, 2), ck_mul(ck, tr, stat)); /* norm1 */
    /* q_down (or q_proj) and kv_down read the same tensor, the input norm's output (Megatron-Core's
     * get_query_key_value_tensors passes hidden_states to both): in BF16 each linear saves that tensor as it is,
     * one copy between them; in FP8 each casts and saves its own copy. */
    if (dt_fp8(rc->saved_input)) {
        plan_saved_input(rc, ck, tr, g->h, a, &hp); /* q_down (or q_proj) input */
        plan_saved_input(rc, ck, tr, g->h, a, &hp); /* kv_down input */
    } else if (!ln) {
        plan_saved_input(rc, ck, tr, g->h, a, &hp); /* the one shared by q_down (or q_proj) and kv_down */
    }
    /* the latents, their norms and the up-projections' saved inputs on the sequence shard (tr): the
     * down-projections run duplicated on it, and a column-parallel up-projection keeps the shard it gathers */
    if (ql) {
        hp = ck_add(ck, hp, ck_add(ck, ck_mul3(ck, tr, ql, 2), ck_mul(ck, tr, stat)));
        plan_saved_input(rc, ck, tr, ql, a, &hp); /* q_up input */
    }
    hp = ck_add(ck, hp, ck_add(ck, ck_mul3(ck, tr, kl, 2), ck_mul(ck, tr, stat)));
    plan_saved_input(rc, ck, tr, kl, a, &hp); /* kv_up input */
    if (!(in->recompute_mods & RECOMPUTE_MOD_MLA_UP))
        hp = ck_add(ck, hp, ck_mul3(ck, ck_mul(ck, tok, ht), 2 * x->dqk + x->dv, 2)); /* Q, K, V */
    if (flash && !plan_attn_out_dropped(in))
        hp = ck_add(ck, hp, ck_mul3(ck, ck_mul(ck, tok, ht), x->dv, 2));                      /* output */
    if (dt_fp8(rc->saved_input) || !flash) plan_saved_input(rc, ck, tok, ht * x->dv, a, &hp); /* out-proj input */
    a->hp = ck_add(ck, a->hp, hp);
    a->attn = flash ? ck_mul3(ck, tok, ht, 4) : ck_mul(ck, ck_mul3(ck, tok, ht, g->seq), in->dropout ? 5 : 2);
    if (in->dropout) a->mask = ck_add(ck, a->mask, ck_mul(ck, tr, g->h));
}

/* Megatron-Core's min_offloaded_tensor_size (TransformerConfig, default 1024 x 1024 elements): smaller saved tensors
 * of an offloaded module stay on the GPU. */
#define OFFLOAD_MIN_ELEMS (1024u * 1024u)

/* The most 1x128 tiles a column of an expert-grouped transposed copy (cols, rows) holds: each of the El
 * local experts' rows is tiled from its own first row, so n = min(El, rows) groups hold at most
 * n + floor((rows - n) / 128) tiles (n - 1 experts of one row and the rest in one reach it). */
uint64_t moe_expert_tiles(uint64_t rows, uint64_t El)
{
    uint64_t n = El < rows ? El : rows;
    return n + (rows - n) / 128;
}

/* A routed expert GEMM's saved input (rows, cols) as plan_saved_input counts it; with 1x128 tiles its
 * transposed copy's FP32 scales are the expert-grouped tiles (moe_expert_tiles) instead of ceil(rows / 128). */
static void expert_saved_input(const Recipe *rc, Ck *ck, uint64_t rows, uint64_t cols, uint64_t El, LayerAct *a,
                               uint64_t *hp)
{
    plan_saved_input(rc, ck, rows, cols, a, hp);
    if (!dt_fp8(rc->saved_input) || rc->act_gran != GRAN_1X128) return;
    uint64_t whole = ceil_div(rows, 128), t = moe_expert_tiles(rows, El);
    a->fp8 = ck_add(ck, a->fp8, ck_mul3(ck, cols, t - whole, 4)); /* t >= whole: a group's tiles cover its rows */
}

/* The routed experts' activations of one MoE layer (MT_ACT_MOE); ln: the layernorm module drops the
 * pre-MLP norm's output the router saves. *off: of those, the bytes --offload-modules keeps in host memory
 * between the layer's forward and its backward (expert_fc1: the dispatched FC1 inputs; moe_act: FC1's output,
 * the activation's input, as it is saved). */
static uint64_t routed_act(const PlanInput *in, const Geo *g, Ck *ck, int ln, uint64_t *off)
{
    const Recipe *rc = in->recipe;
    const MoeGeo *x = &g->x;
    uint64_t tr = g->tok_r, rows = x->rows, h = g->h, hp = 0, act_in;
    LayerAct s = {0};
    const int own = in->fusion == FUSE_FP8PLAN;               /* this executor's bookkeeping (below) */
    uint64_t b = ck_mul3(ck, tr, x->E, 4);                    /* the probabilities */
    if (!own) b = ck_add(ck, b, ck_mul3(ck, tr, x->topk, 8)); /* top-k ids and weights */
    if (!ln && (dt_fp8(rc->saved_input) || !x->Fs_t)) b = ck_add(ck, b, ck_mul3(ck, tr, h, 2)); /* router input */
    expert_saved_input(rc, ck, rows, h, x->El, &s, &hp); /* dispatched FC1 inputs */
    uint64_t fc1_in = ck_add(ck, s.fp8, hp);
    if (in->recompute_mods & RECOMPUTE_MOD_MOE_ACT) {
        expert_saved_input(rc, ck, rows, g->k * x->Fe_t, x->El, &s, &hp); /* FC1 output, kept as a GEMM input is */
        act_in = ck_add(ck, s.fp8, hp) - fc1_in;
    } else {
        act_in = ck_mul3(ck, rows, g->k * x->Fe_t, 2); /* FC1 output, BF16 */
        b = ck_add(ck, b, act_in);
        if (g->k == 2 && !in->fused_swiglu) b = ck_add(ck, b, ck_mul3(ck, rows, x->Fe_t, 2));
        expert_saved_input(rc, ck, rows, x->Fe_t, x->El, &s, &hp); /* FC2 input */
    }
    if (own) {
        /* this executor (exec/model/model_moe.c model_moe_saved) applies the combine weights at the combine from
         * the [tok_r, top-k] weights, not in the activation, so it keeps no weight a row: per (token, slot) its
         * expert id, weight and row (one int32 map serves the permute's and the combine's backward), 4 + 4 + 4 B,
         * and the E int32 counts the grouped GEMMs' backward splits by. With the experts on other ranks (ep x etp
         * > 1) it keeps their outputs at the token copies [tok_r x top-k, h] for the weights' gradient, where one
         * rank recomputes them (model_ep_combine: a second combine would be a collective the plan has not) */
        b = ck_add(ck, b, ck_add(ck, ck_mul3(ck, tr, x->topk, 12), ck_mul(ck, x->E, 4)));
        if (x->ep * x->etp > 1) b = ck_add(ck, b, ck_mul(ck, ck_mul(ck, tr, x->topk), ck_mul(ck, h, 2)));
    } else {
        /* Megatron-Core's alltoall dispatcher (core_v0.15.3 token_dispatcher.py, moe_utils.py permute / unpermute /
         * sort_chunks_by_idxs). Every row keeps its fp32 routing weight, the weighted SwiGLU's input (4 B). Fused
         * (--moe-permute-fusion: Transformer Engine v2.6 through v2.12 permutation.py and triton/permutation.py):
         * the permute saves one int32 row_id_map [tok_r, 2 E + 1] (make_row_id_map), which the combine's unpermute
         * saves again (the same tensor); with more than one local expert the dispatch's and the combine's chunk
         * sorts each save an int32 map over the rows they reorder (make_chunk_sort_map), 2 x 4 B a row. Unfused:
         * tokens.index_select saves the int64 sorted_indices [tok_r x top-k] (the combine's scatter_add_ saves a
         * view of the same tensor), and probs.T.contiguous().masked_select(routing_map) saves its input, the fp32
         * probabilities transposed [experts, tok_r], and the bool mask [experts, tok_r] (PyTorch derivatives.yaml:
         * masked_select_backward(grad, self, mask)), 5 B a (token, expert); the chunk sorts (torch.split and cat)
         * save nothing. (TE v2.1 through v2.5 kept an int64 row_id_map [experts, tok_r] instead.) Which one a stack
         * runs is its permute_fusion column: megatron-core's yes, as Megatron-Bridge's MoE providers and recipes set
         * moe_permute_fusion (v0.2.0 models/deepseek/deepseek_provider.py, True with TE >= 2.1;
         * recipes/deepseek/deepseek_v3.py; models/qwen/qwen_provider.py Qwen3MoEModelProvider); megatron-lm's no,
         * --moe-permute-fusion being store_true (megatron/training/arguments.py, TransformerConfig False). */
        b = ck_add(ck, b, ck_mul(ck, rows, 4));
        if (in->fusion != FUSE_TE || (in->mem_savings & PLAN_UNK_ROUTING_MAP)) {
            /* the compile and eager stacks (torchtitan, llm-foundry, DeepSpeed) reorder tokens with their own code,
             * not read here: they keep the count this plan gave every non-executor stack, two int32 maps a row;
             * so does a run whose framework's permutation is not published where --unknown routing_map is taken
             * (planner/layout.h) */
            b = ck_add(ck, b, ck_mul(ck, rows, 8));
        } else if (in->permute_fusion) {
            b = ck_add(ck, b, ck_mul3(ck, tr, 2 * (uint64_t)x->E + 1, 4));
            if (x->El > 1) b = ck_add(ck, b, ck_mul(ck, rows, 8));
        } else {
            b = ck_add(ck, b, ck_add(ck, ck_mul3(ck, tr, x->topk, 8), ck_mul3(ck, tr, x->E, 5)));
        }
    }
    *off = 0;
    if ((in->offload_mods & OFFLOAD_MOD_EXPERT_FC1) && ck_mul(ck, rows, h) >= OFFLOAD_MIN_ELEMS) *off = fc1_in;
    if ((in->offload_mods & OFFLOAD_MOD_MOE_ACT) && ck_mul(ck, rows, g->k * x->Fe_t) >= OFFLOAD_MIN_ELEMS)
        *off = ck_add(ck, *off, act_in);
    return ck_add(ck, b, ck_add(ck, s.fp8, hp));
}

static uint64_t act_sum(Ck *ck, const LayerAct *a)
{
    return ck_add(ck, ck_add(ck, a->hp, a->fp8), ck_add(ck, a->mask, a->moe));
}

/* A layer's FFN part (norm2, then the dense FFN, or a MoE layer's shared experts and routed part) under the
 * modules (plan.h RECOMPUTE_MOD_*), into *f; the bytes they drop, which one layer rebuilds, into f->rebuilt.
 *   mlp (dense layers): the MLP module's input is kept — the residual [tok_r, h] in BF16, TE's norm being fused
 *       into FC1 — and everything else of the FFN is rebuilt;
 *   moe: norm2's saved input and statistics stay, the module's input (norm2's BF16 output [tok_r, h]) is kept
 *       unless the layernorm module discards it, the rest (shared and routed) is rebuilt;
 *   shared_experts: the shared experts' FC1 output, FC2 input and FC1's FP8 copy are rebuilt; their BF16 input
 *       is norm2's output, which the router keeps as well;
 *   layernorm: norm2's BF16 output is not kept — the shared FC1's saved input when BF16 (the router's copy:
 *       routed_act). Dense layers' norm2 is fused into FC1 (nothing to discard).
 * What one layer rebuilds is what the modules drop, measured against the FFN part without any module. */
static void ffn_part(const PlanInput *in, const Geo *g, Ck *ck, int k, unsigned mods, LayerAct *f)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    int ln = !!(mods & RECOMPUTE_MOD_LAYERNORM), f8 = dt_fp8(rc->saved_input);
    uint64_t nout = ck_mul3(ck, g->tok_r, g->h, 2),
             sib = f8 ? 0 : ck_mul3(ck, g->tok_r, g->h, dt_bytes(rc->saved_input));
    LayerAct full = {0}, norm = {0};
    plan_ffn_act(in, g, ck, k == XK_DENSE ? g->F_t : x->Fs_t, k == XK_DENSE, &full);
    if (k == XK_MOE && x->E) full.moe = routed_act(in, g, ck, 0, &full.moe_off);
    plan_ffn_act(in, g, ck, 0, 0, &norm); /* norm2's saved input and statistics (and a dropout mask) */
    *f = full;
    if (k == XK_MOE && x->E) f->moe = routed_act(in, g, ck, ln, &f->moe_off);
    if (k == XK_DENSE && (mods & RECOMPUTE_MOD_MLP)) {
        *f = (LayerAct){0};
        f->hp = nout, f->mask = norm.mask;
    } else if (k == XK_MOE && (mods & RECOMPUTE_MOD_MOE)) {
        *f = norm;
        if (!ln) f->hp = ck_add(ck, f->hp, nout);
    } else if (k == XK_MOE && x->Fs_t && (mods & RECOMPUTE_MOD_SHARED)) {
        *f = norm;
        f->moe = full.moe, f->moe_off = full.moe_off;
        if (!ln) f->hp = ck_add(ck, f->hp, sib);
    } else if (k == XK_MOE && x->Fs_t && ln) {
        f->hp -= sib;
    }
    uint64_t kept = act_sum(ck, f), all = act_sum(ck, &full);
    f->rebuilt = all > kept ? all - kept : 0; /* norm2's output among them once, when something held it */
}

/* Activations of one layer of each kind (recompute none / selective / modules applied inside; under full
 * recompute the modules change nothing). */
void moe_kind_acts(const PlanInput *in, const Geo *g, Ck *ck, LayerAct la[XK_COUNT])
{
    const MoeGeo *x = &g->x;
    unsigned mods = in->recompute == RECOMPUTE_FULL ? 0 : in->recompute_mods;
    int ln = !!(mods & RECOMPUTE_MOD_LAYERNORM);
    memset(la, 0, sizeof(LayerAct) * XK_COUNT);
    for (int k = 0; k < XK_COUNT; k++) {
        LayerAct *a = &la[k], f;
        a->input = ck_mul3(ck, g->tok_r, g->h, 2);
        if (x->mla)
            mla_act(in, g, ck, ln, a);
        else
            plan_attn_act(in, g, ck, a);
        if (x->mla && ln) a->rebuilt = a->input; /* the input norm's output, rebuilt once */
        ffn_part(in, g, ck, k, mods, &f);
        a->hp = ck_add(ck, a->hp, f.hp), a->fp8 = ck_add(ck, a->fp8, f.fp8);
        a->fp8_elems = ck_add(ck, a->fp8_elems, f.fp8_elems), a->mask = ck_add(ck, a->mask, f.mask);
        a->moe = f.moe, a->moe_off = f.moe_off, a->rebuilt = ck_add(ck, a->rebuilt, f.rebuilt);
        if (!in->fp8_weight_cache && plan_fp8_copies_held(in))
            a->wcopy = ck_mul(ck, x->gemm[k] + (k == XK_MOE ? x->expert : 0), plan_fp8_copy_bytes_per_param(in));
    }
}
