/* exec/measure/plan_link.c — the executor's view of the planner's model, recipe and
 * plan, and the measured-versus-planned memory rows (see plan_link.h). */
#include "exec/measure/plan_link.h"

#include <stdio.h>
#include <string.h>

Status exec_model(const ModelSpec *base, const ExecOverrides *o, ModelSpec *out, Err *e)
{
    *out = *base;
    const char *n = base->name;
    if (spec_is_moe(base) || spec_is_mla(base) || base->mtp_layers || base->qk_norm)
        return err_set(e, ST_UNAVAILABLE,
                       "--model %s: experts, latent attention, multi-token prediction and q/k norms are planned "
                       "(fp8plan plan) but not run by the executor",
                       n);
    if (base->norm != NORM_LAYERNORM || base->mlp != MLP_GELU || base->pos != POS_LEARNED)
        return err_set(e, ST_UNAVAILABLE,
                       "--model %s: the executor builds GPT-2-style decoders (layernorm, gelu, learned positions); "
                       "this model uses %s, %s, %s positions",
                       n, norm_name(base->norm), mlp_name(base->mlp), pos_name(base->pos));
    if (base->kv_heads != base->heads)
        return err_set(e, ST_UNAVAILABLE,
                       "--model %s: grouped-query attention (%u KV heads for %u heads) is not run "
                       "by the executor",
                       n, base->kv_heads, base->heads);
    if (o->layers) out->layers = o->layers;
    if (o->heads) out->heads = out->kv_heads = o->heads;
    if (o->hidden) {
        out->hidden = o->hidden;
        if (!o->ffn) { /* keep the model's FFN ratio */
            uint64_t f = (uint64_t)base->ffn_hidden * o->hidden / base->hidden;
            if (f == 0 || f > UINT32_MAX || (uint64_t)base->ffn_hidden * o->hidden % base->hidden)
                return err_set(e, ST_USAGE, "--hidden %u: the FFN width %u x %u / %u is not a whole number; give --ffn",
                               o->hidden, base->ffn_hidden, o->hidden, base->hidden);
            out->ffn_hidden = (uint32_t)f;
        }
    }
    if (o->ffn) out->ffn_hidden = o->ffn;
    if (o->seq) out->seq_len = o->seq;
    if (o->vocab) out->vocab = o->vocab;
    if (!out->layers || !out->hidden || !out->heads || !out->ffn_hidden || !out->seq_len || !out->vocab)
        return err_set(e, ST_USAGE, "--model %s: sizes must be positive", n);
    if (out->hidden % out->heads)
        return err_set(e, ST_USAGE, "--hidden %u is not a multiple of --heads %u", out->hidden, out->heads);
    out->head_dim = out->hidden / out->heads;
    return ST_OK;
}

static void states(const StateSet *s, ExecStates *o)
{
    for (int i = 0; i < ES_COUNT; i++) o->dt[i] = s->dt[i]; /* the planner's StateId order */
    o->scaled = s->scaled_mask;
}

Status exec_recipe_from_plan(const Recipe *r, ExecRecipe *out, Err *e)
{
    _Static_assert((int)ES_WEIGHT == (int)STATE_WEIGHT && (int)ES_V == (int)STATE_V && (int)ES_COUNT == STATE_COUNT_,
                   "exec and planner state ids line up");
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", r->name);
    states(&r->gemm, &out->gemm);
    states(&r->other, &out->other);
    /* activations: 16-bit, as the plan counts them (the other parameters' working dtype) */
    Dtype w = r->other.dt[STATE_WEIGHT];
    out->act = (w == DT_BF16 || w == DT_FP16) ? w : DT_BF16;
    out->fp8_row = r->fp8_row;
    out->fp8_col = r->fp8_col;
    out->gemm_fwd = r->gemm_fwd;
    out->gemm_bwd = r->gemm_bwd;
    out->saved_input = r->saved_input;
    switch (r->scaling) {
    case SCALING_DELAYED: out->scaling = EXEC_SCALING_DELAYED; break;
    case SCALING_CURRENT: out->scaling = EXEC_SCALING_CURRENT; break;
    default: out->scaling = EXEC_SCALING_NONE; break;
    }
    out->act_gran = r->act_gran;
    out->weight_gran = r->weight_gran;
    out->amax_history = r->amax_history;
    out->amax_algo = AMAX_ALGO_MAX; /* TE's default; the catalog has no column for it */
    out->margin = 0;
    return exec_recipe_check(out, e);
}

void exec_plan_input(PlanInput *in, const ModelSpec *m, const GpuSpec *gpu, const Recipe *r, uint32_t mbs)
{
    plan_input_defaults(in);
    in->model = m;
    in->gpu = gpu;
    in->recipe = r;
    in->mbs = mbs;
    in->seq = m->seq_len;
    in->gbs = mbs; /* one micro-batch per step */
    in->attn = ATTN_MATERIALIZED;
    in->dropout = 0;
    in->frag_frac = 0.0; /* one arena, allocated once, never fragments: the device total compares like with like */
}

void exec_shape_from_plan(const Plan *p, GptShape *s)
{
    const ModelSpec *m = p->in.model;
    memset(s, 0, sizeof *s);
    s->layers = p->stage_layers;
    s->hidden = m->hidden;
    s->heads = m->heads;
    s->ffn = m->ffn_hidden;
    s->seq = p->seq;
    s->batch = p->in.mbs;
    s->vocab = m->vocab;
    s->vocab_padded = p->vocab_padded;
    s->tied = m->tied_embeddings;
    s->biases = m->linear_bias;
}

/* The executor term with the same name as a plan term, or −1. */
static int exec_term_of(const char *name)
{
    for (int t = 0; t < TERM_COUNT; t++)
        if (!strcmp(exec_term_name((ExecTerm)t), name)) return t;
    return -1;
}

void exec_planned_bytes(const Plan *p, uint64_t planned[TERM_COUNT])
{
    memset(planned, 0, sizeof(uint64_t) * TERM_COUNT);
    for (int i = 0; i < MT_COUNT_; i++) {
        int t = exec_term_of(p->mem[i].name);
        if (t >= 0) planned[t] = p->mem[i].bytes;
    }
}

int exec_memory_rows(const Plan *p, const Gpt *g, MeasureRow *rows, int *failed)
{
    int n = 0;
    const int cpu = !strcmp(g->bk->name, "cpu");
    for (int i = 0; i < MT_COUNT_; i++) {
        const MemTerm *m = &p->mem[i];
        MeasureRow *r = &rows[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", m->name);
        r->category = mem_category_name(m->cat);
        r->has_planned = 1;
        r->planned = (double)m->bytes;
        int t = exec_term_of(m->name);
        if (t >= 0) {
            r->has_measured = 1;
            r->measured = (double)g->arena.placed[t];
        }
        if (m->persistent && t >= 0 && t != TERM_GEMM_WORKSPACE) {
            r->mode = MEASURE_EXACT; /* states, copies, scales: byte for byte */
        } else if (i == MT_TRANSIENT) {
            r->mode = MEASURE_BOUND;
        } else if (m->cat == MC_ACTIVATION && t >= 0) {
            r->mode = MEASURE_EXACT; /* the plan itemizes the saved tensors; the executor saves exactly those */
        } else if (t == TERM_GEMM_WORKSPACE && g->bk->gemm_workspace_bytes) {
            r->mode = MEASURE_EXACT; /* the backend's workspace is carved from the arena */
        } else {
            r->mode = MEASURE_INFO;
            r->has_measured = 0;
            r->note = t == TERM_GEMM_WORKSPACE ? "n/a: backend has no GEMM workspace"
                      : cpu                    ? "n/a on the cpu backend"
                                               : "not measured in the arena";
        }
    }
    /* high-water per category: the sums of the checked terms above */
    int nterms = n;
    for (int c = 0; c < MC_OVERHEAD; c++) {
        MeasureRow *r = &rows[n];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "total_%s", mem_category_name((MemCategory)c));
        r->category = mem_category_name((MemCategory)c);
        int any = 0;
        for (int i = 0; i < nterms; i++) {
            if (p->mem[i].cat != (MemCategory)c || rows[i].mode == MEASURE_INFO) continue;
            r->planned += rows[i].planned;
            r->measured += rows[i].measured;
            any = 1;
        }
        if (!any) continue;
        r->has_planned = r->has_measured = 1;
        r->mode = c == MC_ACTIVATION ? MEASURE_BOUND : MEASURE_EXACT; /* the transient term is a bound */
        n++;
    }
    for (int t = 0; t < TERM_COUNT; t++) { /* executor terms the plan does not have */
        int found = 0;
        for (int i = 0; i < MT_COUNT_ && !found; i++) found = !strcmp(p->mem[i].name, exec_term_name((ExecTerm)t));
        if (found || !g->arena.placed[t]) continue;
        MeasureRow *r = &rows[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", exec_term_name((ExecTerm)t));
        r->category = "activation";
        r->has_measured = 1;
        r->measured = (double)g->arena.placed[t];
        r->mode = MEASURE_INFO;
        r->note = "not in the plan";
    }
    *failed = measure_judge(rows, n);
    return n;
}
