/* planner/sweep.c — layout enumeration and top-k ranking (see sweep.h). */
#include "planner/sweep.h"

#include "planner/plan_internal.h"

#include <stdlib.h>
#include <string.h>

/* A 32-bit number has at most 1,920 divisors (3,491,888,400 = 2^4 3^3 5^2 7 11 13 17 19:
 * 5*4*3*2^5 = 1,920), so a list holds all of them: no layout is skipped. */
enum { MAX_DIVISORS = 1920 };

typedef struct {
    uint32_t v[MAX_DIVISORS];
    int n;
} List;

/* The powers of two that divide n, up to max. 64-bit counter: no wrap at 2^31. */
static void pow2_divisors(uint32_t n, uint32_t max, List *l)
{
    l->n = 0;
    for (uint64_t x = 1; x <= n && x <= max; x *= 2)
        if (n % x == 0) l->v[l->n++] = (uint32_t)x;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Every divisor of n (n >= 1), ascending, from n's prime factors: trial division up to sqrt(n), at most
 * 65,536 steps for 32 bits (a loop over 1..n took minutes near 2^32 and wrapped at its end). */
static void divisors(uint32_t n, List *l)
{
    l->n = 1;
    l->v[0] = 1;
    uint64_t m = n;
    for (uint64_t p = 2; m > 1; p++) {
        if (p * p > m) p = m; /* no factor up to sqrt(m): m is prime */
        if (m % p) continue;
        int base = l->n;
        uint64_t pk = 1;
        while (m % p == 0) {
            m /= p;
            pk *= p;
            for (int i = 0; i < base; i++) l->v[l->n++] = (uint32_t)(l->v[i] * pk);
        }
    }
    qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_u32);
}

static uint32_t or_default(uint32_t v, uint32_t d) { return v ? v : d; }

/* Uneven pipelines for L layers on pp stages (vpp chunks each) when they do not divide: the middle stages
 * hold q = ceil(L/pp) or floor(L/pp) layers, the first and last split what is left (first <= last), kept
 * only where Megatron-Core can interleave them (plan_vpp_split_ok: 7/8/7 on vpp 5 cannot be launched).
 * Returns how many candidates it wrote (0 when the split is even or none is valid). */
static int uneven(uint32_t L, uint32_t pp, uint32_t vpp, uint32_t first[2], uint32_t last[2])
{
    if (pp < 2 || L % (pp * vpp) == 0) return 0;
    int n = 0;
    const uint32_t qs[2] = {(L + pp - 1) / pp, L / pp};
    for (int i = 0; i < 2; i++) {
        uint32_t q = qs[i];
        if (i && q == qs[0]) break;
        uint64_t mid = (uint64_t)(pp - 2) * q;
        if (mid >= L) continue;
        uint32_t rest = L - (uint32_t)mid, f = rest / 2, l = rest - f;
        if (f < vpp || l < vpp || (pp > 2 && q < vpp) || !plan_vpp_split_ok(pp, vpp, f, q, l)) continue;
        first[n] = f, last[n] = l, n++;
    }
    return n;
}

/* Expert layouts of a stage of `side` = tp*cp*dp ranks: EP in the powers of two dividing the experts and
 * side / etp, ETP 1 or tp (Megatron-Core's two common choices); one (1, 1) for dense models. */
typedef struct {
    uint32_t ep[64], etp[64];
    int n;
} Pair;

static void expert_layouts(const ModelSpec *m, uint32_t side, uint32_t tp, Pair *o)
{
    o->n = 0;
    if (!m || !m->experts) {
        o->ep[0] = o->etp[0] = 1, o->n = 1;
        return;
    }
    for (int k = 0; k < (tp > 1 ? 2 : 1); k++) {
        uint32_t etp = k ? tp : 1;
        for (uint32_t ep = 1; ep <= m->experts && o->n < 64; ep *= 2)
            if (m->experts % ep == 0 && side % ((uint64_t)ep * etp) == 0 && m->expert_ffn % etp == 0)
                o->ep[o->n] = ep, o->etp[o->n] = etp, o->n++;
    }
    if (!o->n) o->ep[0] = o->etp[0] = 1, o->n = 1; /* planned and rejected with its reason */
}

/* Walk the space; when `visit` is NULL only count. same_layout: the row differs from the one visited before it
 * only in recompute and sharding. A block of layouts that plan_validate_head rejects (every
 * CP, expert layout, micro-batch, recompute and sharding of one stack, recipe, TP, PP, VPP and stage split) goes to
 * `reject` as one call with its row count and reason, the reason plan_validate gives each of them. */
typedef void (*Visit)(const PlanInput *in, int same_layout, void *ctx);
typedef void (*Reject)(uint64_t rows, PlanReject why, void *ctx);

static uint64_t walk(const SweepSpec *s, Visit visit, Reject reject, void *ctx)
{
    uint64_t n = 0;
    uint32_t max_tp = or_default(s->max_tp, s->base.gpu ? s->base.gpu->gpus_per_node : 8);
    uint32_t max_vpp = or_default(s->max_vpp, 8), max_cp = or_default(s->max_cp, 8),
             max_mbs = or_default(s->max_mbs, 8);
    uint32_t L = s->base.model ? s->base.model->layers : 1;
    List tps, pps, cps, mbss;
    pow2_divisors(s->gpus, max_tp, &tps);
    pow2_divisors(1u << 30, max_mbs, &mbss);
    PlanInput in = s->base;
    in.gbs = sweep_gbs(s);
    int nst = s->nstacks > 0 && s->stacks ? s->nstacks : 1;
    /* op-level recompute is modelled for dense models only: MoE / MLA / MTP models skip it */
    const ModelSpec *md = s->base.model;
    int nrc = md && (md->experts || md->kv_lora_rank || md->mtp_layers) ? RECOMPUTE_OP : RECOMPUTE_COUNT_;
    for (int k = 0; k < nst; k++) {
        if (s->nstacks > 0 && s->stacks) {
            plan_input_use_stack(&in, s->stacks[k]);
            if (s->after_stack) s->after_stack(&in, s->after_stack_ctx);
        }
        for (int r = 0; r < s->nrecipes; r++) {
            in.recipe = s->recipes[r];
            for (int a = 0; a < tps.n; a++) {
                uint32_t tp = tps.v[a];
                divisors(s->gpus / tp, &pps);
                for (int b = 0; b < pps.n; b++) {
                    uint32_t pp = pps.v[b];
                    pow2_divisors(s->gpus / (tp * pp), max_cp, &cps);
                    for (uint32_t vpp = 1; vpp <= (pp > 1 ? max_vpp : 1); vpp++) {
                        uint32_t fl[2], ll[2];
                        int nsplit = uneven(L, pp, vpp, fl, ll), nv = nsplit ? nsplit : 1;
                        for (int u = 0; u < nv; u++) {
                            in.tp = tp, in.pp = pp, in.vpp = vpp;
                            in.first_stage_layers = nsplit ? fl[u] : 0;
                            in.last_stage_layers = nsplit ? ll[u] : 0;
                            if (visit) { /* the rows below differ only in what plan_validate_head does not read */
                                in.cp = cps.v[0], in.dp = s->gpus / (tp * pp * cps.v[0]), in.mbs = mbss.v[0];
                                in.recompute = RECOMPUTE_NONE, in.sharding = SHARD_NONE;
                                PlanReject why = plan_validate_head(&in, NULL);
                                if (why != REJECT_NONE) {
                                    uint64_t rows = 0;
                                    for (int c = 0; c < cps.n; c++) {
                                        uint32_t cp = cps.v[c], dp = s->gpus / (tp * pp * cp);
                                        Pair eps;
                                        expert_layouts(s->base.model, tp * cp * dp, tp, &eps);
                                        rows += (uint64_t)eps.n * (uint64_t)mbss.n * (uint64_t)nrc * 2;
                                    }
                                    n += rows;
                                    reject(rows, why, ctx);
                                    continue;
                                }
                            }
                            for (int c = 0; c < cps.n; c++) {
                                uint32_t cp = cps.v[c], dp = s->gpus / (tp * pp * cp);
                                Pair eps;
                                expert_layouts(s->base.model, tp * cp * dp, tp, &eps);
                                for (int x = 0; x < eps.n; x++)
                                    for (int d = 0; d < mbss.n; d++)
                                        for (int rc = 0; rc < nrc; rc++)
                                            for (int dist = 0; dist < 2; dist++) {
                                                n++;
                                                if (!visit) continue;
                                                in.cp = cp, in.dp = dp;
                                                in.ep = eps.ep[x], in.etp = eps.etp[x];
                                                in.mbs = mbss.v[d];
                                                in.recompute = (Recompute)rc;
                                                in.sharding = dist ? SHARD_DIST_OPT : SHARD_NONE;
                                                in.world = s->gpus;
                                                visit(&in, rc || dist, ctx);
                                            }
                            }
                        }
                    }
                }
            }
        }
    }
    return n;
}

uint64_t sweep_size(const SweepSpec *s) { return walk(s, NULL, NULL, NULL); }

uint64_t sweep_gbs(const SweepSpec *s)
{
    const PlanInput *in = &s->base;
    if (in->gbs || !in->model) return in->gbs;
    uint64_t seq = in->seq ? in->seq : in->model->seq_len; /* one global batch for the whole sweep: ~2M tokens */
    return ((1ull << 21) + seq - 1) / seq;
}

typedef struct {
    const SweepSpec *s;
    SweepList top, nearest;
    int fold;
    SweepStats *st;
    Plan scratch;
    PlanSweepGeo geo; /* the geometry of the last row built, for the rows that differ in recompute or sharding */
    SweepProgress progress;
    void *ctx;
    uint64_t total;
} Run;

static void visit(const PlanInput *in, int same_layout, void *vctx)
{
    Run *r = vctx;
    SweepStats *st = r->st;
    st->evaluated++;
    if (r->progress && (st->evaluated & 4095) == 0) r->progress(st->evaluated, r->total, r->ctx);
    PlanReject why;
    /* most layouts of a large model do not fit: their collectives and time are built only when the
     * list of the nearest misses could keep them */
    if (plan_sweep_build(in, &r->geo, same_layout, 1, &r->scratch, &why)) {
        st->rejected[why]++;
        return;
    }
    if (!plan_may_fit(&r->scratch)) { /* an UNCERTAIN plan (base.mem_unknown) is ranked with the ones that fit */
        int keep = sweep_nearest_may_keep(&r->nearest, &r->scratch);
        if (keep && plan_sweep_build(in, &r->geo, 1, 0, &r->scratch, &why)) {
            st->rejected[why]++;
            return;
        }
        st->valid++;
        st->oom++;
        if (keep) sweep_keep_nearest(&r->nearest, &r->scratch);
        return;
    }
    st->valid++;
    if (r->s->on_fit) r->s->on_fit(&r->scratch, r->s->on_fit_ctx);
    st->folded += (uint64_t)sweep_keep_best(&r->top, &r->scratch, r->fold);
}

static void reject_rows(uint64_t rows, PlanReject why, void *vctx)
{
    Run *r = vctx;
    SweepStats *st = r->st;
    uint64_t before = st->evaluated;
    st->evaluated += rows;
    st->rejected[why] += rows;
    if (r->progress) /* what visit would have reported row by row: each multiple of 4,096 passed */
        for (uint64_t m = (before >> 12) + 1; m <= st->evaluated >> 12; m++) r->progress(m << 12, r->total, r->ctx);
}

Status sweep_run(const SweepSpec *s, Plan *top, int k, int *n_top, SweepStats *stats, SweepProgress progress, void *ctx,
                 Err *e)
{
    memset(stats, 0, sizeof *stats);
    *n_top = 0;
    if (!s->gpus) return err_set(e, ST_USAGE, "--gpus 0: a sweep needs at least one GPU");
    if (s->gpus > SWEEP_MAX_GPUS)
        return err_set(e, ST_USAGE, "--gpus %u: a sweep plans for at most %u GPUs", s->gpus, (unsigned)SWEEP_MAX_GPUS);
    if (s->nrecipes <= 0 || !s->recipes) return err_set(e, ST_USAGE, "a sweep needs at least one recipe");
    if (!s->base.model || !s->base.gpu) return err_set(e, ST_SOFTWARE, "sweep without a model or GPU");
    Run r = {.s = s,
             .top = {top, s->variants, NULL, k, 0},
             .nearest = {s->nearest, NULL, NULL, s->nearest ? s->k_nearest : 0, 0},
             .fold = s->fold,
             .st = stats,
             .progress = progress,
             .ctx = ctx};
    if (s->variants && k > 0) memset(s->variants, 0, sizeof *s->variants * (size_t)k);
    /* the lists' ranks, slot numbers best first (the plans stay in the caller's arrays) */
    int kt = k > 0 ? k : 0, kn = r.nearest.k > 0 ? r.nearest.k : 0;
    r.top.order = malloc(sizeof(int) * (size_t)(kt + kn + 1));
    if (!r.top.order) return err_set(e, ST_NOMEM, "out of memory for the ranks of %d plans", kt + kn);
    r.nearest.order = r.top.order + kt;
    r.total = sweep_size(s);
    walk(s, visit, reject_rows, &r);
    sweep_list_finish(&r.top);
    sweep_list_finish(&r.nearest);
    free(r.top.order);
    if (progress) progress(stats->evaluated, r.total, ctx);
    *n_top = r.top.n;
    stats->n_nearest = r.nearest.n;
    return ST_OK;
}
