/* planner/plan.c — input defaults, geometry and the plan_build orchestration (validation:
 * planner/plan_validate.c). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "planner/plan_internal.h"

void plan_input_defaults(PlanInput *in)
{
    memset(in, 0, sizeof *in);
    in->tp = in->pp = in->vpp = in->cp = in->dp = 1;
    in->mbs = 1;
    in->sp = 1;
    in->recompute = RECOMPUTE_NONE;
    in->sharding = SHARD_NONE;
    in->attn = ATTN_FLASH;
    in->vocab_pad = 128;
    in->main_grad = MAIN_GRAD_RECIPE;
    in->fp8_weight_cache = 1;
    in->fused_swiglu = 1;
    in->fusion = FUSE_TE;
    in->grad_acc_fusion = 1;
    in->launch_s = 0;
    in->loss_bytes = 10;
    in->overlap_dp = 1;
    in->cuda_context_bytes = 512ull << 20;
    in->workspace_bytes = 32ull << 20;
    /* NCCL per communicator: 2 ring connections x 32 channels x (4 MiB SIMPLE +
     * 4,915,200 B LL128 + 512 KiB LL), NCCL's default buffer sizes. */
    in->nccl_comm_bytes = 2ull * 32 * (4194304 + 4915200 + 524288);
    in->frag_frac = 0.05;
    in->max_mem_frac = 0.95;
    in->eff_hbm = 0.80;
    in->eff_net = 0.80;
    in->ep = in->etp = 1;
    in->moe_imbalance = 1.0;
}

void plan_input_use_stack(PlanInput *in, const StackSpec *s)
{
    in->stack = s;
    in->attn = s->attn;
    in->sp = s->sequence_parallel;
    in->fused_swiglu = s->fused_swiglu;
    in->main_grad = s->main_grad;
    in->fp8_weight_cache = s->fp8_weight_cache;
    in->fusion = s->fusion;
    in->permute_fusion = s->permute_fusion;
    in->grad_acc_fusion = s->fusion == FUSE_TE;
    in->launch_s = s->launch_s;
    in->host_op_s = s->host_op_s, in->moe_host_ops = s->moe_host_ops, in->expert_host_ops = s->expert_host_ops;
    in->loss_bytes = s->loss_bytes;
    in->overlap_tp = s->overlap_tp;
    in->overlap_dp = s->overlap_dp;
    in->overlap_pp = s->overlap_pp;
    in->overlap_cp = s->overlap_cp;
    in->overlap_ep = s->overlap_ep;
    in->frag_frac = s->alloc_reserve;
}

AttnImpl plan_attn_kernel(const PlanInput *in)
{
    uint32_t sm = in->gpu ? in->gpu->sm : 0;
    switch (in->attn) {
    case ATTN_TE: return sm >= 90 ? ATTN_CUDNN : ATTN_FLASH;
    case ATTN_FLASH3: return sm >= 90 && sm < 100 ? ATTN_FLASH3 : ATTN_FLASH;
    default: return in->attn;
    }
}

double plan_state_bytes_per_param(const PlanInput *in, double *per)
{
    StateSet s = in->recipe->gemm;
    s.dt[STATE_GRAD] = plan_grad_dt(in, s.dt[STATE_GRAD]);
    s.dt[STATE_M] = plan_moment_dt(in, s.dt[STATE_M]), s.dt[STATE_V] = plan_moment_dt(in, s.dt[STATE_V]);
    return recipe_state_bytes_per_param(&s, 0, 1, per);
}

/* ---- geometry ----------------------------------------------------------------------------------------- */

void plan_geo(const PlanInput *in, uint64_t seq, uint64_t gbs, Geo *g)
{
    const ModelSpec *md = in->model;
    memset(g, 0, offsetof(Geo, x)); /* moe_geo writes g->x for models with experts, MLA or MTP */
    g->x.on = g->x.mla = 0, g->x.E = g->x.mtp = 0, g->x.dqk = g->x.dv = 0;
    g->h = md->hidden;
    g->F = md->ffn_hidden;
    g->k = spec_fc1_k(md);
    g->heads = md->heads;
    g->kv_heads = md->kv_heads;
    g->q_dim = (uint64_t)md->heads * md->head_dim;
    g->kv_dim = (uint64_t)md->kv_heads * md->head_dim;
    g->L = md->layers;
    g->V = md->vocab;
    g->seq = seq;
    g->tp = in->tp;
    g->pp = in->pp;
    g->vpp = in->vpp;
    g->cp = in->cp;
    g->dp = in->dp;
    g->d = (uint64_t)in->dp * in->cp;
    g->mbs = in->mbs;
    g->m = udiv(gbs, (uint64_t)in->mbs * in->dp);
    g->world = (uint64_t)in->tp * in->pp * in->cp * in->dp;
    g->rep = (in->sp && in->tp > 1) ? in->tp : 1;
    if (plan_stage_split(in, g->L, &g->Lf, &g->Lm, &g->Ll, NULL)) g->Lf = g->Lm = g->Ll = udiv(g->L, g->pp);
    g->Ls = g->Lf;
    g->s_local = udiv(seq, g->cp);
    g->tok = g->s_local * g->mbs;
    uint64_t mult = (uint64_t)(in->vocab_pad > 1 ? in->vocab_pad : 1) * g->tp;
    g->Vp = ceil_div(g->V, mult) * mult;
    uint64_t t = g->tp, h = g->h;
    g->q_t = udiv(g->q_dim, t), g->kv_t = udiv(g->kv_dim, t), g->F_t = udiv(g->F, t);
    g->heads_t = udiv(g->heads, t), g->Vp_t = udiv(g->Vp, t), g->tok_r = ceil_div(g->tok, g->rep);
    g->h_t = ceil_div(h, t);
    g->lin_rows[LIN_QKV] = g->q_t + 2 * g->kv_t, g->lin_cols[LIN_QKV] = h;
    g->lin_rows[LIN_PROJ] = h, g->lin_cols[LIN_PROJ] = g->q_t;
    g->lin_rows[LIN_FC1] = g->k * g->F_t, g->lin_cols[LIN_FC1] = h;
    g->lin_rows[LIN_FC2] = h, g->lin_cols[LIN_FC2] = g->F_t;
    for (int i = 0; i < LIN_COUNT; i++) g->gemm_layer += g->lin_rows[i] * g->lin_cols[i];
    g->norm_elems = md->norm == NORM_LAYERNORM ? 2 * h : h;
    g->other_layer = 2 * g->norm_elems;
    if (md->linear_bias) g->other_layer += g->lin_rows[LIN_QKV] + h + g->lin_rows[LIN_FC1] + h;
    if (md->qk_norm) g->other_layer += 2ull * md->head_dim; /* per-head q and k RMSNorm weights (Qwen3) */
    g->emb = g->Vp_t * h;
    g->pos = md->pos == POS_LEARNED ? (uint64_t)md->seq_len * h : 0;
    if (spec_is_moe(md) || spec_is_mla(md) || md->mtp_layers) moe_geo(in, g);
}

/* Micro-batches whose first model chunk on the stage holds activations at the peak (1F1B: pp - stage of them).
 * Interleaved 1F1B in Megatron's order runs the forwards in rounds of pp x vpp chunks: pp micro-batches through
 * chunk 0, the same pp through chunk 1, ..., then the next pp; the backwards in the same rounds with the chunks
 * reversed, so a micro-batch's chunk 0 is freed last, (vpp - 1) x pp backwards after its first. Counted along
 * that order, a stage holds at most min(2 pp, warm-up chunks + 1, m) micro-batches: stage 0 of pp 4, vpp 2 runs
 * 11 forwards before its first backward (micro-batches 0-3 on chunk 0, 0-3 on chunk 1, 4-6 on chunk 0), and the
 * next forward, chunk 0 of micro-batch 7, comes before the first chunk-0 backward (micro-batch 0's, the fifth):
 * 8. The 11 chunks are the layer units the stage holds (plan_inflight_layers); 8 is not ceil(11 / 2) = 6. */
uint64_t plan_inflight_mbs(const Geo *g, uint32_t stage)
{
    if (g->pp == 1) return 1;
    uint64_t n = g->pp - stage;
    if (g->vpp > 1) {
        uint64_t chunks = (g->pp - stage - 1) * 2 + (g->vpp - 1) * g->pp + 1;
        n = 2 * g->pp < chunks ? 2 * g->pp : chunks;
    }
    return n < g->m ? n : g->m;
}

uint64_t plan_inflight_layers(const Geo *g, uint32_t stage)
{
    uint64_t Ls = geo_layers(g, stage);
    if (g->pp == 1) return g->L;
    if (g->vpp == 1) return Ls * plan_inflight_mbs(g, stage);
    uint64_t chunks = (g->pp - stage - 1) * 2 + (g->vpp - 1) * g->pp + 1, cap = g->m * g->vpp;
    if (chunks > cap) chunks = cap;
    return chunks * ceil_div(Ls, g->vpp);
}

/* ---- build -------------------------------------------------------------------------------------------- */

/* The first step-time figure that is not a finite positive double (rates so small or large that the
 * arithmetic overflowed), or NULL: a plan never carries inf or NaN to a printer. */
static const char *nonfinite_figure(const Plan *p)
{
    const double *v[] = {&p->time.step_s, &p->tokens_per_s, &p->tflops_per_gpu, &p->mfu_bf16_pct};
    static const char *const names[] = {"step time (s)", "throughput (tokens/s)", "TFLOP/s per GPU", "MFU"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!(isfinite(*v[i]) && *v[i] > 0)) return names[i];
    return NULL;
}

/* sm[1] as sm[0]: its terms copied into its own storage. */
static void stage_copy(StageMem *dst, const StageMem *src)
{
    MemTerm *mem = dst->mem;
    *dst = *src;
    dst->mem = mem;
    memcpy(mem, src->mem, MT_COUNT_ * sizeof *mem);
}

/* sm[1] as far as plan_memory with reuse reads it: sm[0]'s header and each term's bytes (its labels, dtype, elements
 * and shards left as they were). A stage that is not reported needs only its total; the copy of the 1.6 KB of terms
 * held ~1.5 % of a plan's perf samples (make bench's mix with contexts). */
static void stage_bytes(StageMem *dst, const StageMem *src)
{
    MemTerm *mem = dst->mem;
    *dst = *src;
    dst->mem = mem;
    for (int i = 0; i < MT_COUNT_; i++) mem[i].bytes = src->mem[i].bytes;
}

/* The memory of the most-loaded stage (or of the stage asked for) into one of sm[0..4) (their terms where each
 * sm[i].mem points): returns it, *stage its index. Stage 0, the last stage and, where they can hold more, a middle
 * one and the last middle one. */
static const StageMem *stage_memory(const PlanInput *in, const Geo *g, Ck *ck, StageMem sm[4], uint32_t *stage)
{
    PlanInput full; /* the act_ckpt saving: the memory of --recompute full (the time stays the input's) */
    if ((in->mem_savings & PLAN_UNK_ACT_CKPT) && in->recompute != RECOMPUTE_FULL) {
        full = *in;
        full.recompute = RECOMPUTE_FULL, full.recompute_mods = 0;
        in = &full;
    }
    LayerAct la;
    plan_layer_act(in, g, ck, &la);
    plan_mem_blank(&sm[0]); /* sm[1] is a copy of sm[0] */
    plan_memory(in, g, &la, 0, &sm[0], ck, 0);
    const StageMem *pick = &sm[0];
    *stage = 0;
    int uneven = g->Lf != g->Lm || g->Ll != g->Lm;
    if (g->pp > 1) {
        int reuse = !uneven && !g->x.on;
        if (reuse) /* what a reuse call reads of stage 0: its header and its terms' bytes (mem_sums), not the terms */
            stage_bytes(&sm[1], &sm[0]);
        else
            stage_copy(&sm[1], &sm[0]);
        plan_memory(in, g, &la, (uint32_t)(g->pp - 1), &sm[1], ck, reuse);
        if (sm[1].total > pick->total) {
            if (reuse) { /* the last stage is reported: its terms whole, from a copy of stage 0's (the same bits) */
                stage_copy(&sm[1], &sm[0]);
                plan_memory(in, g, &la, (uint32_t)(g->pp - 1), &sm[1], ck, 1);
            }
            pick = &sm[1], *stage = (uint32_t)(g->pp - 1);
        }
    }
    if (g->pp > 2 && (uneven || g->x.on)) { /* a middle stage can hold more layers (or more MoE layers) than the ends */
        plan_mem_blank(&sm[2]);
        plan_memory(in, g, &la, 1, &sm[2], ck, 0);
        if (sm[2].total > pick->total) pick = &sm[2], *stage = 1;
    }
    /* the last middle stage: the first to hold only MoE layers when the first layers are dense */
    if (g->x.on && g->pp > 3) {
        plan_mem_blank(&sm[3]);
        plan_memory(in, g, &la, (uint32_t)(g->pp - 2), &sm[3], ck, 0);
        if (sm[3].total > pick->total) pick = &sm[3], *stage = (uint32_t)(g->pp - 2);
    }
    if (in->stage_view) { /* the stage asked for, whatever its load */
        *stage = in->stage_view - 1;
        plan_mem_blank(&sm[3]);
        plan_memory(in, g, &la, *stage, &sm[3], ck, 0);
        pick = &sm[3];
    }
    return pick;
}

/* The band of the open choices (in->mem_unknown less what mem_savings takes already): the low end with every
 * one taken, and what each alone takes off the high end's total. */
static void memory_band(const PlanInput *in, const Geo *g, Ck *ck, Plan *p)
{
    unsigned open = in->mem_unknown & ~in->mem_savings;
    p->low_bytes = p->total_bytes, p->low_stage = p->stage;
    memset(p->unknown_bytes, 0, sizeof p->unknown_bytes);
    if (!open) return;
    StageMem sm[4];
    MemTerm terms[4][MT_COUNT_];
    for (int i = 0; i < 4; i++) sm[i].mem = terms[i];
    PlanInput v = *in;
    v.mem_savings |= open;
    const StageMem *lo = stage_memory(&v, g, ck, sm, &p->low_stage);
    p->low_bytes = lo->total < p->total_bytes ? lo->total : p->total_bytes;
    for (int i = 0; i < PLAN_UNK_COUNT_; i++) {
        if (!(open & plan_unknowns[i].bit)) continue;
        uint32_t st;
        v = *in;
        v.mem_savings |= plan_unknowns[i].bit;
        uint64_t t = stage_memory(&v, g, ck, sm, &st)->total;
        p->unknown_bytes[i] = p->total_bytes > t ? p->total_bytes - t : 0;
    }
}

/* Build a validated input; memory_first 1: plan_build_memory_first's, 2: plan_sweep_build's. geo: NULL, or where
 * its geometry is kept across calls; have_geo: *geo already holds it (plan_sweep_build). cx: the input's context
 * (plan_ctx_matches 1), or NULL: its parts are worked out here; cache (with cx NULL): a context kept across calls,
 * made again for this input where it does not match (plan_sweep_build). Either is read only for a plan that gets
 * past its memory. */
static Status build(const PlanInput *in, Plan *p, PlanReject *why, int memory_first, Geo *geo, int have_geo,
                    const PlanCtx *cx, PlanCtx *cache)
{
    uint64_t seq = resolve_seq(in), gbs = resolve_gbs(in, seq);
    Geo local, *g = geo ? geo : &local;
    if (!have_geo) plan_geo(in, seq, gbs, g);
    Ck ck = {0};

    StageMem sm[4];
    MemTerm terms[3][MT_COUNT_];
    sm[0].mem = p->mem; /* stage 0's terms in the plan's own: not copied again when it is the largest */
    for (int i = 1; i < 4; i++) sm[i].mem = terms[i - 1];
    uint32_t stage;
    const StageMem *pick = stage_memory(in, g, &ck, sm, &stage);
    if (ck.ovf) {
        *why = REJECT_OVERFLOW;
        return ST_OVERFLOW;
    }
    p->stage = stage;
    p->total_bytes = pick->total;
    p->capacity_bytes = in->gpu->hbm_bytes;
    double lim = (double)p->capacity_bytes * in->max_mem_frac;
    p->limit_bytes = lim >= (double)p->capacity_bytes ? p->capacity_bytes : (uint64_t)lim;
    p->fits = p->total_bytes <= p->limit_bytes;
    memory_band(in, g, &ck, p);
    if (ck.ovf) {
        *why = REJECT_OVERFLOW;
        return ST_OVERFLOW;
    }
    p->verdict = p->fits                            ? PLAN_FITS
                 : p->low_bytes <= p->limit_bytes   ? PLAN_UNCERTAIN
                 : p->low_bytes > p->capacity_bytes ? PLAN_OOM
                                                    : PLAN_OVER_LIMIT;
    if (memory_first == 2 && !plan_may_fit(p)) { /* plan_sweep_build: a sweep reads a miss's totals only */
        *why = REJECT_NONE;
        return ST_OK;
    }
    p->in = *in;
    p->in.seq = (uint32_t)seq;
    p->in.gbs = gbs;
    p->gbs_default = !in->gbs;
    p->world = (uint32_t)g->world;
    p->microbatches = (uint32_t)g->m;
    p->seq = (uint32_t)seq;
    p->vocab_padded = (uint32_t)g->Vp;
    p->sp = g->rep > 1;
    p->stage_layers = (uint32_t)geo_layers(g, stage);
    p->first_layers = (uint32_t)g->Lf, p->mid_layers = (uint32_t)g->Lm, p->last_layers = (uint32_t)g->Ll;
    p->shard_ways = (uint32_t)g->d;
    if (pick->mem != p->mem) memcpy(p->mem, pick->mem, sizeof p->mem);
    memcpy(p->cat_bytes, pick->cat, sizeof p->cat_bytes);
    p->reserved_bytes = p->total_bytes - p->mem[MT_CUDA_CONTEXT].bytes - p->mem[MT_COMM_BUFFER].bytes;
    p->alloc_bytes = p->reserved_bytes - p->mem[MT_FRAGMENTATION].bytes;
    p->params_gpu = pick->params;
    p->params_gemm_gpu = pick->params_gemm;
    p->params_expert_gpu = pick->params_expert;
    p->linear_tensors = pick->linear_tensors;
    if (memory_first && !plan_may_fit(p)) { /* plan_build_memory_first: the rest only for a plan that may fit */
        *why = REJECT_NONE;
        return ST_OK;
    }

    PlanCtx own;
    if (cache) {
        if (!plan_ctx_matches(cache, in)) plan_ctx_init(cache, in);
        cx = cache;
    } else if (!cx) {
        plan_ctx_parts(&own, in);
        cx = &own;
    }
    if (cx->params_ovf) ck.ovf = 1;
    p->params_total = cx->params.total, p->params_active = cx->params.active;

    plan_comm(in, g, p, &ck);
    if (ck.ovf) {
        *why = REJECT_OVERFLOW;
        return ST_OVERFLOW;
    }
    plan_time(in, g, &cx->gg, p);
    if (nonfinite_figure(p)) {
        *why = REJECT_NONFINITE;
        return ST_OVERFLOW;
    }
    plan_advise(in, p);
    *why = REJECT_NONE;
    return ST_OK;
}

/* plan_build_fast and plan_build_memory_first: validate, then build. */
static Status build_checked(const PlanInput *in, Plan *out, PlanReject *why, int memory_first)
{
    PlanReject r = plan_validate(in, NULL);
    if (r != REJECT_NONE) {
        *why = r;
        return (!in || !in->model || !in->gpu || !in->recipe) ? ST_SOFTWARE : ST_USAGE;
    }
    return build(in, out, why, memory_first, NULL, 0, NULL, NULL);
}

Status plan_build_fast(const PlanInput *in, Plan *out, PlanReject *why) { return build_checked(in, out, why, 0); }

Status plan_build_memory_first(const PlanInput *in, Plan *out, PlanReject *why)
{
    return build_checked(in, out, why, 1);
}

Status plan_build_ctx(const PlanCtx *cx, const PlanInput *in, Plan *out, PlanReject *why)
{
    PlanCtx fresh;
    if (!plan_ctx_matches(cx, in)) {
        plan_ctx_init(&fresh, in);
        cx = &fresh;
    }
    PlanReject r = cx->setup != REJECT_NONE ? cx->setup : plan_validate_layout(in, NULL);
    if (r != REJECT_NONE) {
        *why = r;
        return (!in || !in->model || !in->gpu || !in->recipe) ? ST_SOFTWARE : ST_USAGE;
    }
    return build(in, out, why, 0, NULL, 0, cx, NULL);
}

Status plan_sweep_build(const PlanInput *in, PlanSweepGeo *c, int same_layout, int memory_first, Plan *out,
                        PlanReject *why)
{
    PlanReject r = plan_validate_tail(in, NULL);
    if (r != REJECT_NONE) {
        *why = r;
        c->have = 0;
        return ST_USAGE;
    }
    int have = same_layout && c->have;
    c->have = 1;
    return build(in, out, why, memory_first ? 2 : 0, &c->g, have, NULL, &c->cx);
}

Status plan_build(const PlanInput *in, Plan *out, Err *e)
{
    Err local;
    PlanReject r = plan_validate(in, e ? e : &local);
    if (r != REJECT_NONE) return e ? e->st : local.st;
    PlanReject why;
    Status st = build(in, out, &why, 0, NULL, 0, NULL, NULL);
    if (st == ST_OVERFLOW && why == REJECT_NONFINITE)
        return err_set(e, ST_OVERFLOW,
                       "the %s of %s on %s with %s is not a finite positive number (a rate or efficiency of gpus.csv "
                       "row '%s'%s%s%s too small or too large for the arithmetic)",
                       nonfinite_figure(out), in->model->name, in->gpu->name, in->recipe->name, in->gpu->name,
                       in->stack ? " or stacks.csv row '" : "", in->stack ? in->stack->name : "", in->stack ? "'" : "");
    if (st == ST_OVERFLOW) { /* the overhead bytes a user sets, when the plan fits 2^64 without them */
        PlanInput none = *in;
        none.cuda_context_bytes = none.workspace_bytes = none.nccl_comm_bytes = 0;
        PlanReject w2;
        if (build(&none, out, &w2, 0, NULL, 0, NULL, NULL) != ST_OVERFLOW)
            return err_set(e, ST_OVERFLOW,
                           "a byte count for %s on %s with %s passes 2^64 with the overheads given: --context %llu, "
                           "--workspace %llu, --nccl-mem %llu (bytes)",
                           in->model->name, in->gpu->name, in->recipe->name, (unsigned long long)in->cuda_context_bytes,
                           (unsigned long long)in->workspace_bytes, (unsigned long long)in->nccl_comm_bytes);
    }
    if (st == ST_OVERFLOW) /* the sizes a user sets: global batch, micro-batch, sequence */
        return err_set(e, ST_OVERFLOW,
                       "a byte count for %s on %s with %s passes 2^64 at global batch %llu%s, micro-batch %u, "
                       "sequence %llu (gbs, mbs, seq)",
                       in->model->name, in->gpu->name, in->recipe->name,
                       (unsigned long long)resolve_gbs(in, resolve_seq(in)), in->gbs ? "" : " (the default)", in->mbs,
                       (unsigned long long)resolve_seq(in));
    return st;
}
