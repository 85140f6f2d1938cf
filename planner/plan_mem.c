/* planner/plan_mem.c — per-GPU memory terms of one pipeline stage.
 *
 * The activations a layer saves (Korthikanti et al. 2022, itemized per saved tensor) are plan_mem_act.c's.
 */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/plan_internal.h"

#define MT_ROW_(id, nm, c, pers) [id] = {nm, c, pers},
static const struct {
    const char *name;
    MemCategory cat;
    int persistent;
} term_rows[MT_COUNT_] = {MEM_TERMS(MT_ROW_)};
#undef MT_ROW_

const char *mem_term_name(MemTermId id) { return (unsigned)id < MT_COUNT_ ? term_rows[id].name : "?"; }
MemCategory mem_term_category(MemTermId id) { return (unsigned)id < MT_COUNT_ ? term_rows[id].cat : MC_OVERHEAD; }
int mem_term_persistent(MemTermId id) { return (unsigned)id < MT_COUNT_ && term_rows[id].persistent; }

/* Every term empty (its labels are term_rows'): plan_mem_blank copies it once per stage, so plan_term writes only
 * what a stage decides. */
#define MT_BLANK_(i, nm, c, pers) [i] = {.shards = 1},
static const MemTerm blank_terms[MT_COUNT_] = {MEM_TERMS(MT_BLANK_)};
#undef MT_BLANK_

void plan_mem_blank(StageMem *sm) { memcpy(sm->mem, blank_terms, sizeof blank_terms); }

void plan_term(StageMem *sm, MemTermId id, Dtype dt, uint64_t elements, uint64_t bytes, uint32_t shards)
{
    MemTerm *t = &sm->mem[id];
    t->dtype = dt;
    t->elements = elements;
    t->bytes = bytes;
    t->shards = shards;
}

/* The states of s that shard over the DP group (bit 1u << StateId): the rule is decided once for the five states,
 * not once per state (plan_state_terms runs a few times per plan; plan_state_sharded reads one bit of it). */
static unsigned shard_bits(const PlanInput *in, const StateSet *s)
{
    switch (in->sharding) {
    case SHARD_NONE: return 0;
    case SHARD_DIST_OPT: return s->shard_mask;
    case SHARD_ZERO1:
    case SHARD_ZERO2:
        return 1u << STATE_M | 1u << STATE_V | (recipe_master_is_compute(s, in->recipe) ? 0u : 1u << STATE_MASTER) |
               (in->sharding == SHARD_ZERO2 ? 1u << STATE_GRAD : 0u);
    case SHARD_ZERO3: return ~0u;
    default: return 0;
    }
}

int plan_state_sharded(const PlanInput *in, const StateSet *s, StateId st) { return (shard_bits(in, s) >> st) & 1; }

unsigned plan_state_shard_bits(const PlanInput *in, const StateSet *s)
{
    unsigned b = shard_bits(in, s), held = 0; /* the states the set has */
    if (!b) return 0;
    for (int k = 0; k < STATE_COUNT_; k++) held |= (unsigned)(s->dt[k] != DT_NONE) << k;
    return b & held;
}

/* One state's term: sh (sharded) holds part of the elements on this rank, d ways. */
static inline void state_term(StageMem *sm, Ck *ck, MemTermId id, Dtype dt, unsigned sh, uint64_t part, uint64_t elems,
                              uint64_t d)
{
    sh = sh && dt != DT_NONE;
    uint64_t n = dt == DT_NONE ? 0 : sh ? part : elems;
    plan_term(sm, id, dt, n, ck_mul(ck, n, dt_bytes(dt)), sh ? (uint32_t)d : 1);
}

void plan_state_terms(const PlanInput *in, uint64_t d, StageMem *sm, Ck *ck, const StateSet *s, uint64_t elems,
                      MemTermId w, MemTermId master, MemTermId grad, MemTermId mm, MemTermId vv)
{
    unsigned b = d > 1 ? shard_bits(in, s) : 0;
    /* a sharded state's elements on this rank, divided once for the states that share it */
    uint64_t part = d > 1 && in->sharding != SHARD_NONE ? ceil_div(elems, d) : elems;
    state_term(sm, ck, w, s->dt[STATE_WEIGHT], (b >> STATE_WEIGHT) & 1, part, elems, d);
    state_term(sm, ck, master, s->dt[STATE_MASTER], (b >> STATE_MASTER) & 1, part, elems, d);
    state_term(sm, ck, grad, plan_grad_dt(in, s->dt[STATE_GRAD]), (b >> STATE_GRAD) & 1, part, elems, d);
    state_term(sm, ck, mm, plan_moment_dt(in, s->dt[STATE_M]), (b >> STATE_M) & 1, part, elems, d);
    state_term(sm, ck, vv, plan_moment_dt(in, s->dt[STATE_V]), (b >> STATE_V) & 1, part, elems, d);
}

/* Scales of one FP8-stored R x C tensor at the weight granularity (0 for per-tensor). */
uint64_t plan_block_scale_bytes(Granularity gr, uint64_t rows, uint64_t cols, uint64_t *count)
{
    if (gr == GRAN_TENSOR) return *count = 0, 0;
    uint64_t n = 0, b = 0;
    if (gran_scale_count(gr, rows, cols, &n, &b, NULL)) n = b = UINT64_MAX;
    *count = n;
    return b;
}

int plan_fp8_copies_held(const PlanInput *in)
{
    return in->sharding != SHARD_ZERO3 && !(in->mem_savings & PLAN_UNK_FP8_WEIGHT_CACHE);
}

int plan_fp8_tn_only(const PlanInput *in)
{
    uint32_t sm = in->gpu && !in->gpu->host ? in->gpu->sm : 0;
    return sm && !((sm >= 100 && sm < 120) || sm >= 130);
}

int plan_fp8_col_held(const PlanInput *in)
{
    const Recipe *rc = in->recipe;
    uint32_t sm = in->gpu && !in->gpu->host ? in->gpu->sm : 0;
    int non_tn = sm && !plan_fp8_tn_only(in);
    return rc->fp8_col != DT_NONE && !(non_tn && rc->weight_gran == GRAN_TENSOR);
}

uint64_t plan_fp8_copy_bytes_per_param(const PlanInput *in)
{
    return dt_bytes(in->recipe->fp8_row) + (plan_fp8_col_held(in) ? dt_bytes(in->recipe->fp8_col) : 0);
}

uint64_t plan_fp8_cast_bytes_per_param(const PlanInput *in)
{
    if (in->sharding == SHARD_ZERO3 || !(in->mem_savings & PLAN_UNK_FP8_WEIGHT_CACHE)) return 0;
    return plan_fp8_copy_bytes_per_param(in);
}

uint64_t plan_zero3_layer_bytes(const PlanInput *in, uint64_t gemm, uint64_t other, Ck *ck)
{
    const Recipe *rc = in->recipe;
    Dtype wd = rc->gemm.dt[STATE_WEIGHT] != DT_NONE ? rc->gemm.dt[STATE_WEIGHT] : DT_BF16;
    Dtype od = rc->other.dt[STATE_WEIGHT] != DT_NONE ? rc->other.dt[STATE_WEIGHT] : DT_BF16;
    uint64_t per = dt_bytes(wd) + plan_fp8_copy_bytes_per_param(in) + 2 + dt_bytes(plan_grad_dt(in, rc->comm_dp_grad));
    return ck_add(ck, ck_mul(ck, gemm, per), ck_mul(ck, other, dt_bytes(od) + 2 + 4));
}

uint64_t plan_weight_block_scales(const PlanInput *in, uint64_t rows, uint64_t cols, uint64_t d, int row, int col,
                                  Ck *ck, uint64_t *bytes)
{
    const Recipe *rc = in->recipe;
    uint64_t n1, b1 = plan_block_scale_bytes(rc->weight_gran, rows, cols, &n1);
    uint64_t n2, b2 = plan_block_scale_bytes(rc->weight_gran, cols, rows, &n2);
    if (n1 == UINT64_MAX || n2 == UINT64_MAX) ck->ovf = 1;
    uint64_t nn = 0, bb = 0;
    if (dt_fp8(rc->gemm.dt[STATE_WEIGHT])) { /* the working weight itself in FP8 (sharded under ZeRO-3) */
        if (in->sharding == SHARD_ZERO3) {   /* a rank holds whole scales: ceil(n / d) of them */
            uint64_t ns = ceil_div(n1, d);
            nn += ns, bb += ck_mul(ck, ns, dt_bytes(gran_scale_dtype(rc->weight_gran)));
        } else {
            nn += n1, bb += b1;
        }
    }
    if (row) nn += n1, bb += b1;
    if (col) nn += n2, bb += b2;
    *bytes = bb;
    return nn;
}

void plan_scale_terms(const PlanInput *in, StageMem *sm, Ck *ck, uint64_t ntens, uint64_t block_n, uint64_t block_b)
{
    const Recipe *rc = in->recipe;
    int fwd8 = dt_fp8(rc->gemm_fwd), bwd8 = dt_fp8(rc->gemm_bwd);
    uint64_t recs = 0;
    if (rc->act_gran == GRAN_TENSOR) recs += (uint64_t)fwd8 + (uint64_t)bwd8; /* x, dy */
    if (rc->weight_gran == GRAN_TENSOR) recs += (uint64_t)fwd8;               /* w */
    uint64_t hist = rc->scaling == SCALING_DELAYED ? rc->amax_history : 1;
    uint64_t sg = rc_fp8_gemm(rc) ? ck_mul3(ck, ntens, recs, 2 + hist) : 0;
    plan_term(sm, MT_SCALE_GEMM, DT_FP32, sg, ck_mul(ck, sg, 4), 1);
    plan_term(sm, MT_SCALE_BLOCK, gran_scale_dtype(rc->weight_gran), block_n, block_b, 1);
    uint64_t nsc = 0;
    for (int st = 0; st < STATE_COUNT_; st++)
        if (((rc->gemm.scaled_mask >> st) & 1) && rc->gemm.dt[st] != DT_NONE) nsc++;
    uint64_t ss = ck_mul3(ck, ntens, nsc, 3);
    plan_term(sm, MT_SCALE_STATE, DT_FP32, ss, ck_mul(ck, ss, 4), 1);
}

/* The stage-independent terms: linear-layer states, FP8 copies, scales and the
 * fixed overheads (every stage holds the same number of layers). */
static void common_terms(const PlanInput *in, const Geo *g, StageMem *sm, Ck *ck, uint64_t gemm, uint64_t Ls)
{
    const Recipe *rc = in->recipe;
    int zero3 = in->sharding == SHARD_ZERO3;
    plan_state_terms(in, g->d, sm, ck, &rc->gemm, gemm, MT_WEIGHT_GEMM, MT_MASTER_GEMM, MT_GRAD_GEMM, MT_OPTIM_M_GEMM,
                     MT_OPTIM_V_GEMM);
    /* ---- FP8 copies (per-layer transients under ZeRO-3) ---- */
    /* without caching (in->fp8_weight_cache 0) the copies are cast per micro-batch and saved with the activations */
    int keep = !zero3 && in->fp8_weight_cache && plan_fp8_copies_held(in);
    uint64_t row = (rc->fp8_row != DT_NONE && keep) ? gemm : 0, col = (plan_fp8_col_held(in) && keep) ? gemm : 0;
    plan_term(sm, MT_FP8_ROWWISE, rc->fp8_row, row, ck_mul(ck, row, dt_bytes(rc->fp8_row)), 1);
    plan_term(sm, MT_FP8_COLWISE, rc->fp8_col, col, ck_mul(ck, col, dt_bytes(rc->fp8_col)), 1);

    /* ---- scales ---- */
    uint64_t sbn = 0, sbb = 0;
    if (rc->weight_gran != GRAN_TENSOR)
        for (int i = 0; i < LIN_COUNT; i++) {
            uint64_t bb, nn = plan_weight_block_scales(in, g->lin_rows[i], g->lin_cols[i], g->d, row, col, ck, &bb);
            sbn = ck_add(ck, sbn, ck_mul(ck, nn, Ls));
            sbb = ck_add(ck, sbb, ck_mul(ck, bb, Ls));
        }
    plan_scale_terms(in, sm, ck, LIN_COUNT * Ls, sbn, sbb);

    /* ---- overheads ---- */
    uint64_t ncomm = (g->tp > 1) + (g->cp > 1) + (g->d > 1) + (g->pp > 1);
    if (ncomm < in->comms_min) ncomm = in->comms_min;
    plan_term(sm, MT_COMM_BUFFER, DT_NONE, 0, ck_mul(ck, ncomm, in->nccl_comm_bytes), 1);
    plan_term(sm, MT_WORKSPACE, DT_NONE, 0, in->workspace_bytes, 1);
    plan_term(sm, MT_CUDA_CONTEXT, DT_NONE, 0, in->cuda_context_bytes, 1);
}

static void mem_sums(const PlanInput *in, StageMem *sm, Ck *ck, int experts)
{
    /* category sums by term id (explicit chains: no loop-carried store/load through an array) */
    const MemTerm *t = sm->mem;
    uint64_t st = ck_add(ck, t[MT_WEIGHT_GEMM].bytes, t[MT_WEIGHT_OTHER].bytes);
    for (int i = MT_MASTER_GEMM; i <= MT_OPTIM_V_OTHER; i++) st = ck_add(ck, st, t[i].bytes);
    uint64_t cp = ck_add(ck, t[MT_FP8_ROWWISE].bytes, t[MT_FP8_COLWISE].bytes), ac = 0;
    if (experts) { /* the expert terms (written empty for other models, and not read back) */
        st = ck_add(ck, st, ck_add(ck, t[MT_WEIGHT_EXPERT].bytes, t[MT_MASTER_EXPERT].bytes));
        st = ck_add(ck, st, ck_add(ck, t[MT_GRAD_EXPERT].bytes, t[MT_OPTIM_M_EXPERT].bytes));
        st = ck_add(ck, st, t[MT_OPTIM_V_EXPERT].bytes);
        st = ck_add(ck, st, t[MT_ROUTER_BIAS].bytes);
        cp = ck_add(ck, cp, t[MT_FP8_EXPERT].bytes), ac = t[MT_ACT_MOE].bytes;
    }
    uint64_t sc = ck_add(ck, ck_add(ck, t[MT_SCALE_GEMM].bytes, t[MT_SCALE_BLOCK].bytes), t[MT_SCALE_STATE].bytes);
    for (int i = MT_ACT_LAYER_HP; i <= MT_TRANSIENT; i++) ac = ck_add(ck, ac, t[i].bytes);
    /* the caching allocator's slack comes from tensors freed and re-requested at other sizes every step
     * (activations, transients); states and copies are allocated once and stay */
    uint64_t churn = ck_add(ck, ac, in->workspace_bytes);
    double fr = (double)churn * in->frag_frac;
    uint64_t frag = fr >= 1.8e19 ? (ck->ovf = 1, 0) : (uint64_t)fr;
    uint64_t ov = ck_add(ck, ck_add(ck, t[MT_COMM_BUFFER].bytes, t[MT_WORKSPACE].bytes), t[MT_CUDA_CONTEXT].bytes);
    /* the reserve is cached, free memory: it grows only into what the GPU has left, because the caching
     * allocator releases its free cached segments and retries before it reports out of memory (PyTorch
     * c10/cuda/CUDACachingAllocator.cpp), so it never makes a plan OOM by itself */
    uint64_t rest = ck_add(ck, ck_add(ck, ck_add(ck, st, cp), ck_add(ck, sc, ac)), ov);
    uint64_t cap = in->gpu->hbm_bytes;
    if (frag > (cap > rest ? cap - rest : 0)) frag = cap > rest ? cap - rest : 0;
    plan_term(sm, MT_FRAGMENTATION, DT_NONE, 0, frag, 1);
    ov = ck_add(ck, ov, frag);
    sm->cat[MC_STATE] = st, sm->cat[MC_FP8_COPY] = cp, sm->cat[MC_SCALE] = sc, sm->cat[MC_ACTIVATION] = ac;
    sm->cat[MC_OVERHEAD] = ov;
    sm->total = ck_add(ck, ck_add(ck, ck_add(ck, st, cp), ck_add(ck, sc, ac)), ov);
}

/* The transient peak working set of one layer's backward, the same on every stage (plan_memory adds the
 * stage's own: ZeRO-3's whole stage under PP, the loss on the last, per-tensor scales in flight). */
static uint64_t layer_bwd(const PlanInput *in, const Geo *g, const LayerAct *la, Ck *ck)
{
    const Recipe *rc = in->recipe;
    uint64_t h = g->h, tok_r = g->tok_r;
    /* the widest column-parallel output's gradient: FC1's k x F, or QKV's (heads + 2 KV heads) x head_dim
     * where the FFN is narrower than that (a small FFN); the row-parallel outputs' (tok, h) gradients are
     * dX / d(residual) and, with SP, the re-gathered (tok, h) buffer below */
    uint64_t dwide = g->lin_rows[LIN_FC1] > g->lin_rows[LIN_QKV] ? g->lin_rows[LIN_FC1] : g->lin_rows[LIN_QKV];
    /* dX, d(residual); dX's buffer also holds the attention output's gradient [tok, heads/tp x head_dim] (the output
     * projection's input gradient, which the attention's backward reads), wider where the heads are wider than h */
    uint64_t dr = ck_mul(ck, tok_r, h), dx = ck_mul(ck, g->tok, g->lin_cols[LIN_PROJ]);
    uint64_t bwd = ck_mul(ck, ck_add(ck, dr, dx > dr ? dx : dr), 2);
    bwd = ck_add(ck, bwd, ck_mul3(ck, g->tok, dwide, 2)); /* d(widest output) */
    if (g->k == 2) /* SwiGLU: d(its output) (tok, F) is read while d(FC1 output) (tok, 2F) is written */
        bwd = ck_add(ck, bwd, ck_mul3(ck, g->tok, g->F_t, 2));
    if (g->rep > 1) bwd = ck_add(ck, bwd, ck_mul3(ck, g->tok, h, 2)); /* SP re-gathered input */
    if (dt_fp8(rc->gemm_bwd)) { /* dY in FP8, both layouts, and their block scales (the transposed copy's
                                   tiles run along the tokens) */
        uint64_t n1, n2, s1 = plan_block_scale_bytes(rc->act_gran, g->tok, dwide, &n1),
                         s2 = plan_block_scale_bytes(rc->act_gran, dwide, g->tok, &n2);
        if (g->rep > 1) { /* SP: a column-parallel wgrad's copy tiled along each rank's tokens from its first */
            uint64_t n3, s3 = ck_mul(ck, plan_block_scale_bytes(rc->act_gran, dwide, g->tok / g->rep, &n3), g->rep);
            if (n3 == UINT64_MAX) ck->ovf = 1;
            s2 = s3 > s2 ? s3 : s2;
        }
        if (n1 == UINT64_MAX || n2 == UINT64_MAX) ck->ovf = 1;
        bwd = ck_add(ck, bwd, ck_add(ck, 2 * ck_mul(ck, g->tok, dwide), ck_add(ck, s1, s2)));
    }
    if (in->recompute == RECOMPUTE_FULL)
        bwd = ck_add(ck, bwd, ck_add(ck, ck_add(ck, la->hp, la->fp8), ck_add(ck, la->attn, la->mask)));
    if (in->recompute == RECOMPUTE_OP) /* one layer's recomputed tensors while its backward runs */
        bwd = ck_add(ck, bwd, ck_add(ck, la->hp, la->fp8));
    if (in->attn == ATTN_MATERIALIZED) /* d(probabilities) of one layer's attention backward, fp32 */
        bwd = ck_add(ck, bwd, ck_mul(ck, ck_mul3(ck, g->tok, g->heads / g->tp, g->seq), 4));
    bwd = ck_add(ck, bwd, plan_qk_norm_bytes(in, g, ck));
    int f8grad = dt_fp8(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]));
    uint64_t cast = plan_fp8_cast_bytes_per_param(in);
    if (f8grad || cast) {
        uint64_t lmax = 0; /* the largest linear weight of a layer */
        for (int i = 0; i < LIN_COUNT; i++)
            if (ck_mul(ck, g->lin_rows[i], g->lin_cols[i]) > lmax) lmax = g->lin_rows[i] * g->lin_cols[i];
        if (f8grad) bwd = ck_add(ck, bwd, ck_mul(ck, lmax, 4)); /* a weight gradient in fp32 before its cast */
        bwd = ck_add(ck, bwd, ck_mul(ck, lmax, cast));          /* its FP8 copies, cast for the GEMM running */
    }
    if ((in->mem_savings & PLAN_UNK_DENSE_ACT) && in->recompute != RECOMPUTE_FULL && in->recompute != RECOMPUTE_OP)
        bwd = ck_add(ck, bwd, ck_mul3(ck, g->tok, g->F_t, 2)); /* FC2's input, rebuilt for its backward */
    if (in->sharding == SHARD_ZERO3) /* FSDP: a layer's gathered weights (the compute dtype: BF16 when the master
                                      * is the state), its FP8 copies, and its unsharded gradient with the
                                      * reduce-scatter input in the reduction dtype; for the current and the
                                      * prefetched layer */
        bwd = ck_add(ck, bwd, 2 * plan_zero3_layer_bytes(in, g->gemm_layer, g->other_layer, ck));
    return bwd;
}

uint64_t plan_loss_bytes(const PlanInput *in, const Geo *g, uint64_t dx, Ck *ck)
{
    uint64_t lb = in->loss_bytes > 4 ? in->loss_bytes - 4 : 0, b = ck_mul3(ck, g->tok, g->Vp_t, lb);
    if (in->fusion != FUSE_FP8PLAN) return b;
    b = ck_add(ck, b, ck_mul(ck, ck_add(ck, dx, ck_mul(ck, g->tok_r, g->h)), 2)); /* dX's buffer, d(residual) */
    if (g->rep > 1) b = ck_add(ck, b, ck_mul3(ck, g->tok, g->h, 2 + 2)); /* SP: the head's input and d(input) */
    return b;
}

/* All terms of one stage. With reuse, sm holds another stage's header and the bytes of its terms (all that is read
 * here; plan.c's stage_memory copies no more) and only the stage-specific terms (other params, activations,
 * fragmentation, sums) are written. */
void plan_memory(const PlanInput *in, const Geo *g, const LayerAct *lap, uint32_t stage, StageMem *sm, Ck *ck,
                 int reuse)
{
    if (g->x.on) return moe_memory(in, g, stage, sm, ck);
    const Recipe *rc = in->recipe;
    const ModelSpec *md = in->model;
    /* every term below is written, and the sums at the end */
    int first = stage == 0, last = stage == g->pp - 1;
    int zero3 = in->sharding == SHARD_ZERO3;

    /* ---- parameters on this stage ---- */
    uint64_t Ls = geo_layers(g, stage);
    uint64_t gemm = ck_mul(ck, g->gemm_layer, Ls);
    uint64_t other = ck_mul(ck, g->other_layer, Ls);
    if (first) other = ck_add(ck, other, ck_add(ck, g->emb, g->pos));
    if (last) {
        other = ck_add(ck, other, g->norm_elems);
        if (!md->tied_embeddings || g->pp > 1) other = ck_add(ck, other, g->emb); /* LM head or its tied copy */
    }
    sm->params_gemm = gemm;
    sm->linear_tensors = ck_mul(ck, LIN_COUNT, Ls); /* QKV, the projection, FC1 and FC2 of each layer */
    sm->params = ck_add(ck, gemm, other);

    plan_state_terms(in, g->d, sm, ck, &rc->other, other, MT_WEIGHT_OTHER, MT_MASTER_OTHER, MT_GRAD_OTHER,
                     MT_OPTIM_M_OTHER, MT_OPTIM_V_OTHER);
    if (!reuse) common_terms(in, g, sm, ck, gemm, Ls);

    /* ---- activations ---- */
    const LayerAct la = *lap;
    uint64_t units = plan_inflight_layers(g, stage), mbs_in = plan_inflight_mbs(g, stage);
    uint64_t hp = la.hp, f8 = ck_add(ck, la.fp8, la.wcopy), f8e = la.fp8_elems, at = la.attn, mk = la.mask;
    if (recompute_attn_core(in->recompute, in->recompute_mods)) at = 0;
    if (in->recompute == RECOMPUTE_FULL) hp = la.input, f8 = f8e = at = mk = 0;
    if (in->recompute == RECOMPUTE_OP) hp = la.op, f8 = la.wcopy, f8e = at = mk = 0;
    uint64_t hpb = ck_mul(ck, hp, units), f8b = ck_mul(ck, f8, units);
    uint64_t tok_r = g->tok_r, h = g->h;
    uint64_t mask = ck_mul(ck, mk, units);
    if (first && in->dropout) mask = ck_add(ck, mask, ck_mul3(ck, tok_r, h, mbs_in)); /* embedding dropout */
    plan_term(sm, MT_ACT_LAYER_HP, DT_NONE, 0, hpb, 1); /* BF16 tensors + fp32 norm stats */
    plan_term(sm, MT_ACT_LAYER_FP8, rc->saved_input, ck_mul(ck, f8e, units), f8b, 1);
    plan_term(sm, MT_ACT_ATTN, DT_NONE, 0, ck_mul(ck, at, units), 1);
    plan_term(sm, MT_ACT_MASK, DT_NONE, mask, mask, 1);
    uint64_t out = 0, logit_elems = ck_mul(ck, g->tok, g->Vp_t);
    uint64_t stat = md->norm == NORM_LAYERNORM ? 8 : 4;
    if (last) {
        out = ck_add(ck, 2 * ck_mul3(ck, tok_r, h, 2), ck_mul(ck, tok_r, stat)); /* final norm in, LM-head input */
        out = ck_add(ck, out, ck_mul(ck, logit_elems, 4));                       /* fp32 softmax of the logits */
    }
    plan_term(sm, MT_ACT_OUTPUT, DT_NONE, 0, out, 1);

    /* transient peak working set: a layer's backward (computed once per plan: a reuse call takes sm's) */
    uint64_t bwd = reuse ? sm->layer_bwd : layer_bwd(in, g, &la, ck);
    sm->layer_bwd = bwd;
    /* with PP, FSDP keeps the stage's gathered weights from forward to backward and syncs gradients only on the
     * last micro-batch (torchtitan apply_fsdp: no reshard_after_forward under PP), so the stage's BF16 weights
     * and BF16 gradients stay whole all step */
    uint64_t step = zero3 && g->pp > 1 ? ck_mul(ck, sm->params, 2 + 2) : 0; /* held all step */
    uint64_t tr = ck_add(ck, bwd, step);
    uint64_t dr = ck_mul(ck, tok_r, h), dx = ck_mul(ck, g->tok, g->lin_cols[LIN_PROJ]);
    if (dr > dx) dx = dr;
    if (last) { /* the loss, or this executor's LM-head backward, with dX's buffer as wide as a layer's */
        uint64_t lg = plan_loss_bytes(in, g, dx, ck);
        if (lg > tr) tr = lg;
    }
    /* after the backward, the replicated gradients' flattened copy (plan_tp_flat_grad_bytes) beside what is held all
     * step: this executor's dX and d(residual) buffers too (exec/model/model_tp.c, tp_norm_grads) */
    uint64_t fl = plan_tp_flat_grad_bytes(in, g, stage, last, ck);
    if (fl) {
        fl = ck_add(ck, fl, step);
        if (in->fusion == FUSE_FP8PLAN) fl = ck_add(ck, fl, ck_mul(ck, ck_add(ck, dr, dx), 2));
        if (fl > tr) tr = fl;
    }
    /* with several micro-batches in flight (PP), each keeps the scale_inv its saved FP8 inputs were cast
     * with (one FP32 per linear's input under per-tensor scaling) while later forwards recast the bank's:
     * 4 B x LIN_COUNT per in-flight layer, held the whole step */
    if (g->pp > 1 && f8e && rc->act_gran == GRAN_TENSOR) tr = ck_add(ck, tr, ck_mul(ck, units, 4 * LIN_COUNT));
    plan_term(sm, MT_TRANSIENT, DT_NONE, 0, tr, 1);
    /* the expert terms of a model without experts stay as plan_mem_blank wrote them: empty (DT_NONE, 0 elements,
     * 0 bytes, 1 shard; a reuse call's sm is a copy of such a stage) */
    sm->params_expert = 0;
    mem_sums(in, sm, ck, 0);
}

void plan_mem_sums(const PlanInput *in, StageMem *sm, Ck *ck) { mem_sums(in, sm, ck, 1); }
