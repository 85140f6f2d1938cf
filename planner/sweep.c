/* planner/sweep.c — layout enumeration and top-k ranking (see sweep.h). */
#include "planner/sweep.h"

#include <string.h>

typedef struct {
    uint32_t v[64];
    int n;
} List;

static void pow2_divisors(uint32_t n, uint32_t max, List *l)
{
    l->n = 0;
    for (uint32_t x = 1; x <= n && x <= max && l->n < 64; x *= 2)
        if (n % x == 0) l->v[l->n++] = x;
}

static void divisors(uint32_t n, List *l)
{
    l->n = 0;
    for (uint32_t x = 1; x <= n && l->n < 64; x++)
        if (n % x == 0) l->v[l->n++] = x;
}

static uint32_t or_default(uint32_t v, uint32_t d) { return v ? v : d; }

/* Uneven pipelines for L layers on pp stages (vpp chunks each) when they do not divide: the middle stages
 * hold q = ceil(L/pp) or floor(L/pp) layers, the first and last split what is left (first <= last).
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
        if (f < vpp || l < vpp || (pp > 2 && q < vpp)) continue;
        first[n] = f, last[n] = l, n++;
    }
    return n;
}

/* Walk the space; when `visit` is NULL only count. */
typedef void (*Visit)(const PlanInput *in, void *ctx);

static uint64_t walk(const SweepSpec *s, Visit visit, void *ctx)
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
    if (!in.gbs && in.model) { /* one global batch for the whole sweep: about 2M tokens */
        uint64_t seq = in.seq ? in.seq : in.model->seq_len;
        in.gbs = ((1ull << 21) + seq - 1) / seq;
    }
    int nst = s->nstacks > 0 && s->stacks ? s->nstacks : 1;
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
                        for (int u = 0; u < nv; u++)
                            for (int c = 0; c < cps.n; c++) {
                                uint32_t cp = cps.v[c], dp = s->gpus / (tp * pp * cp);
                                for (int d = 0; d < mbss.n; d++)
                                    for (int rc = 0; rc < RECOMPUTE_COUNT_; rc++)
                                        for (int dist = 0; dist < 2; dist++) {
                                            n++;
                                            if (!visit) continue;
                                            in.tp = tp, in.pp = pp, in.vpp = vpp, in.cp = cp, in.dp = dp;
                                            in.first_stage_layers = nsplit ? fl[u] : 0;
                                            in.last_stage_layers = nsplit ? ll[u] : 0;
                                            in.mbs = mbss.v[d];
                                            in.recompute = (Recompute)rc;
                                            in.sharding = dist ? SHARD_DIST_OPT : SHARD_NONE;
                                            in.world = s->gpus;
                                            visit(&in, ctx);
                                        }
                            }
                    }
                }
            }
        }
    }
    return n;
}

uint64_t sweep_size(const SweepSpec *s) { return walk(s, NULL, NULL); }

typedef struct {
    const SweepSpec *s;
    Plan *top;
    int k, n;
    SweepStats *st;
    Plan scratch;
    SweepProgress progress;
    void *ctx;
    uint64_t total;
} Run;

static void visit(const PlanInput *in, void *vctx)
{
    Run *r = vctx;
    SweepStats *st = r->st;
    st->evaluated++;
    if (r->progress && (st->evaluated & 4095) == 0) r->progress(st->evaluated, r->total, r->ctx);
    PlanReject why;
    if (plan_build_fast(in, &r->scratch, &why)) {
        st->rejected[why]++;
        return;
    }
    st->valid++;
    if (!r->scratch.fits) {
        st->oom++;
        return;
    }
    if (r->s->on_fit) r->s->on_fit(&r->scratch, r->s->on_fit_ctx);
    if (r->k <= 0) return;
    double v = r->scratch.tokens_per_s;
    if (r->n == r->k && v <= r->top[r->n - 1].tokens_per_s) return;
    int pos = r->n < r->k ? r->n : r->k - 1;
    while (pos > 0 && r->top[pos - 1].tokens_per_s < v) pos--;
    int last = r->n < r->k ? r->n : r->k - 1; /* slot that falls off (or the new end) */
    if (last > pos) memmove(&r->top[pos + 1], &r->top[pos], sizeof *r->top * (size_t)(last - pos));
    r->top[pos] = r->scratch;
    if (r->n < r->k) r->n++;
}

Status sweep_run(const SweepSpec *s, Plan *top, int k, int *n_top, SweepStats *stats, SweepProgress progress, void *ctx,
                 Err *e)
{
    memset(stats, 0, sizeof *stats);
    *n_top = 0;
    if (!s->gpus) return err_set(e, ST_USAGE, "--gpus 0: a sweep needs at least one GPU");
    if (s->nrecipes <= 0 || !s->recipes) return err_set(e, ST_USAGE, "a sweep needs at least one recipe");
    if (!s->base.model || !s->base.gpu) return err_set(e, ST_SOFTWARE, "sweep without a model or GPU");
    Run r = {.s = s, .top = top, .k = k, .st = stats, .progress = progress, .ctx = ctx};
    r.total = sweep_size(s);
    walk(s, visit, &r);
    if (progress) progress(stats->evaluated, r.total, ctx);
    *n_top = r.n;
    return ST_OK;
}
