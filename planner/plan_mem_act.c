/* planner/plan_mem_act.c — the activation bytes one layer saves for its backward (plan_mem.c sums the stage).
 *
 * Activation accounting follows Korthikanti et al. 2022 (arXiv 2205.05198),
 * itemized per saved tensor so FP8 recipes can change single items. Per layer
 * and micro-batch, with tok = mbs * seq / cp tokens, t = tp and r = t with
 * sequence parallelism (else 1), the tensors saved for backward are:
 *   norm inputs          2 x tok*h*2/r            (+ fp32 mean/rstd, or rstd for RMSNorm)
 *   Q, K, V              tok*(q_dim + 2 kv_dim)/t * 2
 *   attention            flash: fp32 softmax stats tok*heads/t*4 and the output tok*q_dim/t*2;
 *                        materialized: probabilities tok*heads/t*seq*2 (+ dropout mask 1 and
 *                        output 2 per element when dropout is on)
 *   FC1 output           tok*k*ffn/t*2 (GeLU / SwiGLU input)
 *   GEMM inputs          QKV tok*h/r, proj tok*q_dim/t (shared with the flash output when
 *                        high precision), FC1 tok*h/r, FC2 tok*ffn/t, in recipe.saved_input
 *                        (FP8: 1 B + block scales of the column-wise copy wgrad reads)
 *   dropout masks        2 x tok*h/r * 1 B when dropout is on
 * With recompute "selective" the attention row is recomputed (not stored); with
 * "full" only each layer's input tok*h*2/r is kept and one layer is rebuilt
 * during its backward (counted in the transient term). q/k norms (qk_norm) add
 * no saved tensor: Q, K, V is their input, and the backward rebuilds the
 * normalized, rotated copy the attention reads, which the transient holds
 * (plan_qk_norm_bytes). With dropout on, flash
 * off and BF16 inputs this is Korthikanti's sbh(34/t + 5as/(ht)) per layer. */
#include <string.h>

#include "planner/plan_internal.h"

static void saved_input(const Recipe *rc, Ck *ck, uint64_t rows, uint64_t cols, LayerAct *a, uint64_t *hp)
{
    uint64_t n = ck_mul(ck, rows, cols);
    if (dt_fp8(rc->saved_input)) {
        uint64_t cnt, sb = plan_block_scale_bytes(rc->act_gran, cols, rows, &cnt); /* column-wise: blocks along rows */
        if (cnt == UINT64_MAX) ck->ovf = 1;
        a->fp8 = ck_add(ck, a->fp8, ck_add(ck, n, sb));
        a->fp8_elems = ck_add(ck, a->fp8_elems, n);
    } else {
        *hp = ck_add(ck, *hp, ck_mul(ck, n, dt_bytes(rc->saved_input)));
    }
}

/* One norm's saved input and fp32 statistics over `rows` tokens. */
static uint64_t norm_act(const PlanInput *in, const Geo *g, Ck *ck, uint64_t rows)
{
    uint64_t stat = in->model->norm == NORM_LAYERNORM ? 8 : 4; /* fp32 mean + rstd, or rstd */
    return ck_mul3(ck, rows, g->h, 2) + ck_mul(ck, rows, stat);
}

static void attn_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a)
{
    const Recipe *rc = in->recipe;
    uint64_t tok = g->tok, tok_r = g->tok_r, ht = g->heads_t;
    int flash = in->attn != ATTN_MATERIALIZED;
    uint64_t hp = norm_act(in, g, ck, tok_r);
    hp = ck_add(ck, hp, ck_mul3(ck, tok, g->q_t + 2 * g->kv_t, 2));
    if (flash && !plan_attn_out_dropped(in)) hp = ck_add(ck, hp, ck_mul3(ck, tok, g->q_t, 2)); /* kept by flash bwd */
    saved_input(rc, ck, tok_r, g->h, a, &hp);                                                  /* QKV input */
    if (dt_fp8(rc->saved_input) || !flash) saved_input(rc, ck, tok, g->q_t, a, &hp);           /* proj input */
    a->hp = ck_add(ck, a->hp, hp);
    if (flash)
        a->attn = ck_mul3(ck, tok, ht, 4);
    else
        a->attn = ck_mul(ck, ck_mul3(ck, tok, ht, g->seq), in->dropout ? 5 : 2);
    if (in->dropout) a->mask = ck_add(ck, a->mask, ck_mul(ck, tok_r, g->h));
}

static void ffn_act(const PlanInput *in, const Geo *g, Ck *ck, uint64_t F_t, int dense, LayerAct *a)
{
    const Recipe *rc = in->recipe;
    uint64_t tok = g->tok, tok_r = g->tok_r;
    uint64_t hp = norm_act(in, g, ck, tok_r);
    if (F_t && dense && (in->mem_savings & PLAN_UNK_DENSE_ACT)) {
        saved_input(rc, ck, tok, g->k * F_t, a, &hp); /* FC1 output, kept as a GEMM input is; FC2's is rebuilt */
        saved_input(rc, ck, tok_r, g->h, a, &hp);     /* FC1 input */
    } else if (F_t) {
        hp = ck_add(ck, hp, ck_mul3(ck, tok, g->k * F_t, 2));
        if (g->k == 2 && !in->fused_swiglu) hp = ck_add(ck, hp, ck_mul3(ck, tok, F_t, 2)); /* silu(gate) kept too */
        saved_input(rc, ck, tok_r, g->h, a, &hp);                                          /* FC1 input */
        saved_input(rc, ck, tok, F_t, a, &hp);                                             /* FC2 input */
    }
    a->hp = ck_add(ck, a->hp, hp);
    if (in->dropout) a->mask = ck_add(ck, a->mask, ck_mul(ck, tok_r, g->h));
}

void plan_saved_input(const Recipe *rc, Ck *ck, uint64_t rows, uint64_t cols, LayerAct *a, uint64_t *hp)
{
    saved_input(rc, ck, rows, cols, a, hp);
}
void plan_attn_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a) { attn_act(in, g, ck, a); }

uint64_t plan_qk_norm_bytes(const PlanInput *in, const Geo *g, Ck *ck)
{
    const ModelSpec *md = in->model;
    if (!md->qk_norm || !md->head_dim) return 0;
    uint64_t w = g->q_t + 2 * g->kv_t, heads = (g->q_t + g->kv_t) / md->head_dim; /* a rank's q and k heads */
    return ck_add(ck, ck_mul3(ck, g->tok, w, 2), ck_mul3(ck, g->tok, heads, 4));
}
void plan_ffn_act(const PlanInput *in, const Geo *g, Ck *ck, uint64_t F_t, int dense, LayerAct *a)
{
    ffn_act(in, g, ck, F_t, dense, a);
}

int plan_attn_out_dropped(const PlanInput *in)
{
    return (in->mem_savings & PLAN_UNK_ATTN_OUT) && dt_fp8(in->recipe->saved_input);
}

/* Per layer and micro-batch activation bytes for recompute none/selective. */
void plan_layer_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a)
{
    uint64_t tok = g->tok, h = g->h, ht = g->heads_t;
    memset(a, 0, sizeof *a);
    a->input = ck_mul3(ck, g->tok_r, h, 2);
    attn_act(in, g, ck, a);
    ffn_act(in, g, ck, g->F_t, 1, a);
    /* op-level recompute (torchtitan _save_list policy): the layer input, the outputs of the 1st, 3rd, 5th
     * (and 7th) matmul of the layer — Q, V, FC1's gate (w1), and w2's output with SwiGLU (7 matmuls) — and
     * the attention output with its fp32 log-sum-exp; everything else is recomputed in backward. */
    uint64_t op = ck_add(ck, a->input, ck_mul3(ck, tok, g->q_t + g->kv_t, 2));
    op = ck_add(ck, op, ck_add(ck, ck_mul3(ck, tok, g->q_t, 2), ck_mul3(ck, tok, ht, 4)));
    op = ck_add(ck, op, ck_mul3(ck, tok, g->F_t, 2));
    if (g->k == 2) op = ck_add(ck, op, ck_mul3(ck, tok, h, 2));
    a->op = op;
    if (!in->fp8_weight_cache && plan_fp8_copies_held(in))
        a->wcopy = ck_mul(ck, g->gemm_layer, plan_fp8_copy_bytes_per_param(in));
}
