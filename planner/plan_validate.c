/* planner/plan_validate.c — plan_validate: the checks an input passes before it is built, and the layers
 * per pipeline stage they resolve. */
#include <stddef.h>

#include "planner/plan_internal.h"

/* ---- validation -------------------------------------------------------------------------------------- */

static int bad_eff(double x) { return !(x >= PLAN_EFF_MIN && x <= 1); }
static int bad_eff0(double x) { return x != 0 && bad_eff(x); } /* 0 = the model's value */
static int bad_share(double x) { return !(x > 0 && x <= 1); }
static int bad_frac(double x) { return !(x >= 0 && x <= 1); } /* 0 allowed (overlaps; 0 = the catalog's value) */

/* Layers per stage: the first and last as given (0 = an even share), the rest split evenly.
 * Returns 0, or -1 when the counts do not add up (e explains). */
int plan_stage_split(const PlanInput *in, uint64_t L, uint64_t *lf, uint64_t *lm, uint64_t *ll, Err *e)
{
    uint64_t pp = in->pp, v = in->vpp, f = in->first_stage_layers, l = in->last_stage_layers;
    if (!f && !l) {
        if (umod(L, pp * v)) {
            err_set(e, ST_USAGE,
                    "--pp %u --vpp %u: %s has %llu layers, not divisible by pp*vpp = %llu (--first-stage-layers / "
                    "--last-stage-layers give the end stages other counts)",
                    in->pp, in->vpp, in->model->name, (unsigned long long)L, (unsigned long long)(pp * v));
            return -1;
        }
        *lf = *lm = *ll = udiv(L, pp);
        return 0;
    }
    uint64_t rest_stages = pp - (f > 0) - (l > 0);
    if (pp < 2 || f + l > L || (!rest_stages && f + l != L) ||
        (rest_stages && (L - f - l < rest_stages || umod(L - f - l, rest_stages)))) {
        err_set(e, ST_USAGE,
                "--first-stage-layers %llu --last-stage-layers %llu: with --pp %u the other %llu stage(s) must share "
                "the remaining of %s's %llu layers evenly, at least one each",
                (unsigned long long)f, (unsigned long long)l, in->pp, (unsigned long long)rest_stages, in->model->name,
                (unsigned long long)L);
        return -1;
    }
    *lm = rest_stages ? udiv(L - f - l, rest_stages) : 0;
    *lf = f ? f : *lm;
    *ll = l ? l : *lm;
    /* with virtual stages every chunk needs a layer, except the chunk that holds the embedding or the loss in
     * Megatron's account_for_embedding / loss_in_pipeline_split (there an end stage is one layer short: 15 = 7 x 2
     * + 1, and at s = vpp its first or last chunk holds the embedding or the loss alone: Qwen3-235B's 94 layers on
     * pp 32 x vpp 3 as 2, 3 x 30, 2) */
    uint64_t ends =
        v > 1 && (!rest_stages || *lm >= v) && plan_vpp_split_ok(in->pp, in->vpp, *lf, *lm, *ll) ? v - 1 : v;
    if (v > 1 && (*lf < ends || *ll < ends || (rest_stages && *lm < v))) {
        err_set(e, ST_USAGE, "--vpp %u: every stage needs at least vpp layers (first %llu, middle %llu, last %llu)",
                in->vpp, (unsigned long long)*lf, (unsigned long long)*lm, (unsigned long long)*ll);
        return -1;
    }
    if (!in->custom_pp_layout && !plan_vpp_split_ok(in->pp, in->vpp, *lf, *lm, *ll)) {
        err_set(e, ST_USAGE,
                "--vpp %u: Megatron cannot interleave first %llu, middle %llu, last %llu layers: each stage's count "
                "must be a multiple of vpp, or (account_for_embedding/loss_in_pipeline_split) the middle stages a "
                "multiple s of vpp and the end stages s or s - 1 (--custom-pp-layout: a per-chunk layout)",
                in->vpp, (unsigned long long)*lf, (unsigned long long)*lm, (unsigned long long)*ll);
        return -1;
    }
    return 0;
}

/* Megatron-Core (TransformerConfig's checks) launches virtual stages on an uneven pipeline in two ways only:
 *  - explicit counts (--decoder-first/last-pipeline-num-layers): the first, the last and each middle stage's
 *    layers are each a multiple of vpp;
 *  - account_for_embedding / account_for_loss_in_pipeline_split (not combinable with explicit counts): the
 *    embedding and / or the loss count as one layer each, L + e + l splits evenly into s per stage with s a
 *    multiple of vpp, and the first stage holds s - e transformer layers, the last s - l (Llama 3.1 405B on
 *    pp 8 vpp 8: (126 + 2) / 8 = 16 per stage, so 15, 16 x 6, 15).
 * An even split (no uneven counts) is the first form with pp x vpp dividing L. */
int plan_vpp_split_ok(uint32_t pp, uint32_t vpp, uint64_t first, uint64_t middle, uint64_t last)
{
    if (vpp <= 1) return 1;
    int mids = pp > 2;
    if (!umod(first, vpp) && !umod(last, vpp) && (!mids || !umod(middle, vpp))) return 1;
    for (uint64_t emb = 0; emb < 2; emb++)
        for (uint64_t loss = 0; loss < 2; loss++) {
            uint64_t s = first + emb;
            if (last + loss == s && !umod(s, vpp) && (!mids || middle == s)) return 1;
        }
    return 0;
}

static const char *hw_reason(const Recipe *r)
{
    if (r->min_sm >= 100) return "MXFP8 (1x32 E8M0 block scales) needs Blackwell, SM 10.0+";
    if (r->min_sm >= 90) return "blockwise FP8 scaling needs Hopper, SM 9.0+";
    if (r->min_sm >= 89) return "FP8 tensor cores need SM 8.9+ (Ada, Hopper); A100 (SM 8.0) cannot run FP8 GEMMs";
    return "the recipe's min_sm";
}

static const char knob_msg[] =
    "efficiencies must be in [0.001, 1] (GEMM and attention ones may be 0: the model's), overlaps and the allocator "
    "reserve fractions in [0, 1], the memory limit in (0, 1], the launch floor in [0, 1) s";

/* The checks of the model, the GPU and the settings: what a plan context decides once (planner/plan_ctx.h). */
static inline PlanReject validate_setup(const PlanInput *in, Err *e)
{
    if (!in || !in->model || !in->gpu || !in->recipe) {
        err_set(e, ST_SOFTWARE, "plan input without a model, GPU or recipe");
        return REJECT_MODEL;
    }
    const ModelSpec *md = in->model;
    const GpuSpec *gp = in->gpu;
    if (!md->layers || !md->hidden || !md->ffn_hidden || !md->heads || !md->kv_heads || !md->head_dim || !md->vocab ||
        !md->seq_len || md->heads % md->kv_heads) {
        err_set(e, ST_USAGE,
                "model %s: layers, hidden, ffn_hidden, heads, kv_heads (dividing heads), head_dim, vocab "
                "and seq_len must be positive",
                md->name);
        return REJECT_MODEL;
    }
    int no_link = gp->host && !(gp->intra_bw > 0) && !(gp->inter_bw > 0); /* a host profile of one rank */
    if (!gp->hbm_bytes || !(gp->hbm_bw > 0) || !(gp->flops_bf16 > 0) || (!no_link && !(gp->intra_bw > 0)) ||
        (!no_link && !(gp->inter_bw > 0)) || !gp->gpus_per_node) {
        err_set(e, ST_USAGE, "gpu %s: memory, bandwidths, BF16 rate and gpus_per_node must be positive", gp->name);
        return REJECT_MODEL;
    }
    if (bad_eff0(in->eff_gemm_bf16) || bad_eff0(in->eff_gemm_fp8) || bad_eff0(in->eff_attn) || bad_eff(in->eff_hbm) ||
        bad_eff(in->eff_net) || bad_frac(in->frag_frac) || bad_share(in->max_mem_frac) || bad_frac(in->overlap_tp) ||
        bad_frac(in->overlap_dp) || bad_frac(in->overlap_pp) || bad_frac(in->overlap_cp) ||
        !(in->launch_s >= 0 && in->launch_s < 1) || (unsigned)in->attn >= ATTN_COUNT_ ||
        (unsigned)in->main_grad >= MAIN_GRAD_COUNT_ || (unsigned)in->fusion >= FUSE_COUNT_ ||
        ((in->mem_savings | in->mem_unknown) & ~(unsigned)PLAN_UNK_ALL_)) {
        err_set(e, ST_USAGE, "%s", knob_msg);
        return REJECT_KNOB;
    }
    return REJECT_NONE;
}

/* The rest of plan_validate_head: what it reads of the layout. */
static inline PlanReject validate_layout_head(const PlanInput *in, Err *e)
{
    const ModelSpec *md = in->model;
    if ((unsigned)in->recompute >= RECOMPUTE_COUNT_ || (unsigned)in->sharding >= SHARD_COUNT_) {
        err_set(e, ST_USAGE, "%s", knob_msg); /* the settings' message: the enums were checked with them */
        return REJECT_KNOB;
    }
    { /* the padded vocabulary is a 32-bit count: a huge --vocab-pad x tp would wrap it (to 0) */
        uint64_t mult = (uint64_t)(in->vocab_pad > 1 ? in->vocab_pad : 1) * (in->tp ? in->tp : 1);
        if (ceil_div(md->vocab, mult) * mult > UINT32_MAX) {
            err_set(e, ST_USAGE,
                    "--vocab-pad %u: the vocabulary padded to a multiple of %llu (vocab-pad x tp) passes 2^32",
                    in->vocab_pad, (unsigned long long)mult);
            return REJECT_KNOB;
        }
    }
    if (!in->tp || !in->pp || !in->vpp || !in->cp || !in->dp || !in->mbs) { /* which one, in this order */
        static const char *const names[] = {"--tp", "--pp", "--vpp", "--cp", "--dp", "--mbs"};
        const uint32_t vals[] = {in->tp, in->pp, in->vpp, in->cp, in->dp, in->mbs};
        for (int i = 0; i < 6; i++)
            if (!vals[i]) {
                err_set(e, ST_USAGE, "%s 0: must be at least 1", names[i]);
                return REJECT_ZERO;
            }
    }
    if (umod(md->heads, in->tp) || umod(md->kv_heads, in->tp)) {
        err_set(e, ST_USAGE, "--tp %u: %s has %u heads and %u kv_heads; both must be divisible by tp", in->tp, md->name,
                md->heads, md->kv_heads);
        return REJECT_HEADS_TP;
    }
    if (umod(md->ffn_hidden, in->tp)) {
        err_set(e, ST_USAGE, "--tp %u: ffn_hidden %u of %s is not divisible by tp", in->tp, md->ffn_hidden, md->name);
        return REJECT_FFN_TP;
    }
    uint64_t lf, lm, ll;
    if (plan_stage_split(in, md->layers, &lf, &lm, &ll, e)) return REJECT_LAYERS_PP;
    return REJECT_NONE;
}

static inline PlanReject validate_tail(const PlanInput *in, Err *e)
{
    const ModelSpec *md = in->model;
    const GpuSpec *gp = in->gpu;
    const Recipe *r = in->recipe;
    int no_link = gp->host && !(gp->intra_bw > 0) && !(gp->inter_bw > 0); /* a host profile of one rank */
    if (in->stage_view > in->pp) {
        err_set(e, ST_USAGE, "stage %u: --pp %u has stages 0 .. %u", in->stage_view - 1, in->pp, in->pp - 1);
        return REJECT_LAYERS_PP;
    }
    if (in->vpp > 1 && in->pp == 1) {
        err_set(e, ST_USAGE, "--vpp %u: virtual pipeline stages need --pp > 1", in->vpp);
        return REJECT_VPP;
    }
    uint64_t seq = resolve_seq(in);
    if (!seq) {
        err_set(e, ST_USAGE, "--seq 0: must be at least 1");
        return REJECT_ZERO;
    }
    if (in->cp > 1 && umod(seq, 2ull * in->cp)) {
        err_set(e, ST_USAGE, "--cp %u: seq %llu is not divisible by 2*cp = %u (load-balanced context parallelism)",
                in->cp, (unsigned long long)seq, 2 * in->cp);
        return REJECT_SEQ_CP;
    }
    if (in->sp && in->tp > 1 && umod(udiv(seq, in->cp), in->tp)) {
        err_set(e, ST_USAGE, "--sp: seq/cp = %llu is not divisible by tp = %u (sequence parallelism splits tokens)",
                (unsigned long long)(seq / in->cp), in->tp);
        return REJECT_SEQ_CP;
    }
    if (md->pos == POS_LEARNED && seq > md->seq_len) {
        err_set(e, ST_USAGE, "--seq %llu: %s has learned position embeddings for %u positions", (unsigned long long)seq,
                md->name, md->seq_len);
        return REJECT_SEQ_POS;
    }
    uint64_t world = (uint64_t)in->tp * in->pp * in->cp * in->dp;
    if (world > UINT32_MAX || (in->world && in->world != world)) {
        err_set(e, ST_USAGE, "world size %u != tp*pp*cp*dp = %u*%u*%u*%u = %llu", in->world, in->tp, in->pp, in->cp,
                in->dp, (unsigned long long)world);
        return REJECT_WORLD;
    }
    if (no_link && world > 1) {
        err_set(e, ST_USAGE,
                "gpu %s: no interconnect was measured (calibrated on one rank); a plan of %llu ranks needs one: "
                "run fp8plan calibrate under mpirun -np 2 or more",
                gp->name, (unsigned long long)world);
        return REJECT_WORLD;
    }
    PlanReject mr = moe_validate(in, e);
    if (mr != REJECT_NONE) return mr;
    uint64_t unit = (uint64_t)in->mbs * in->dp, gbs = resolve_gbs(in, seq);
    if (umod(gbs, unit) || gbs < unit) {
        err_set(e, ST_USAGE, "--gbs %llu: not a positive multiple of mbs*dp = %u*%u = %llu", (unsigned long long)gbs,
                in->mbs, in->dp, (unsigned long long)unit);
        return REJECT_GBS;
    }
    uint64_t m = udiv(gbs, unit);
    if (in->vpp > 1 && umod(m, in->pp)) {
        err_set(e, ST_USAGE, "--vpp %u: the interleaved schedule needs micro-batches (%llu) divisible by pp (%u)",
                in->vpp, (unsigned long long)m, in->pp);
        return REJECT_VPP;
    }
    if (in->dualpipe && (in->pp < 2 || umod(in->pp, 2) || in->vpp > 1 || umod(m, 2) || m < in->pp)) {
        err_set(e, ST_USAGE,
                "--dualpipe: needs an even --pp (%u), no --vpp (%u) and an even number of micro-batches (%llu) "
                "of at least pp",
                in->pp, in->vpp, (unsigned long long)m);
        return REJECT_VPP;
    }
    /* a host emulates FP8 exactly: every recipe runs there, at its measured FP8-path rate */
    if ((!gp->host && r->min_sm > gp->sm) || (rc_fp8_gemm(r) && !(gp->flops_fp8 > 0))) {
        err_set(e, ST_USAGE, "recipe %s needs SM %u.%u, %s is SM %u.%u: %s", r->name, r->min_sm / 10, r->min_sm % 10,
                gp->name, gp->sm / 10, gp->sm % 10, hw_reason(r));
        return REJECT_HW;
    }
    if (in->moment_dt != MOMENT_RECIPE) { /* scaled moments (FP8-LM's, MS-AMP's) are their optimizer's own */
        unsigned mv = 1u << STATE_M | 1u << STATE_V;
        if ((unsigned)in->moment_dt >= MOMENT_COUNT_) {
            err_set(e, ST_USAGE, "--moment-dtype: %d is not recipe, fp32 or bf16", (int)in->moment_dt);
            return REJECT_KNOB;
        }
        if ((r->gemm.scaled_mask | r->other.scaled_mask) & mv) {
            err_set(e, ST_USAGE,
                    "--moment-dtype %s: recipe %s keeps scaled Adam moments (m %s, v %s, each with a per-tensor "
                    "scale: its optimizer's own); the option sets unscaled fp32 or bf16 ones, for recipes whose "
                    "moments are unscaled",
                    moment_dtype_name(in->moment_dt), r->name, dtype_name(r->gemm.dt[STATE_M]),
                    dtype_name(r->gemm.dt[STATE_V]));
            return REJECT_MOMENTS;
        }
    }
    return REJECT_NONE;
}

static inline PlanReject validate_head(const PlanInput *in, Err *e)
{
    PlanReject r = validate_setup(in, e);
    return r != REJECT_NONE ? r : validate_layout_head(in, e);
}

/* one function each for the sweep (planner/sweep.c, plan_sweep_build) and the context (plan_ctx.c, plan.c), all
 * in line in plan_validate */
PlanReject plan_validate_head(const PlanInput *in, Err *e) { return validate_head(in, e); }
PlanReject plan_validate_setup(const PlanInput *in, Err *e) { return validate_setup(in, e); }
PlanReject plan_validate_layout(const PlanInput *in, Err *e)
{
    PlanReject head = validate_layout_head(in, e);
    return head != REJECT_NONE ? head : validate_tail(in, e);
}
PlanReject plan_validate_tail(const PlanInput *in, Err *e) { return validate_tail(in, e); }

PlanReject plan_validate(const PlanInput *in, Err *e)
{
    PlanReject head = validate_head(in, e);
    return head != REJECT_NONE ? head : validate_tail(in, e);
}
