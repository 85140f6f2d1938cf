/* tests/bench/bench_planner.c — planner speed on one core: full plans (memory,
 * communication, time) per second, and a full sweep of gpt-175b on 1,024 GPUs.
 * Targets (issues 3 and 9): >= 1,000,000 plans/s per core; the sweep, over every
 * stack of models/stacks.csv and uneven pipeline stages, under one second.
 * Prints the machine it ran on; run from the repository root (make bench).
 *
 * The mix is timed twice: each plan from its input alone (plan_build_fast), and each from its input and the
 * context of its model, GPU, recipe and stack, made once before the clock starts (plan_build_ctx,
 * planner/plan_ctx.h), as a caller that plans many layouts of one catalog row does.
 *
 * bench_planner --plans N [--ctx] [--no-sweep]: exactly N plans of the same mix instead of one second's worth
 * (N = 0: none; --ctx: with the contexts), for an instruction count that the machine's load does not move
 * (valgrind --tool=callgrind; per plan: the count at N less the count at 0, over N).
 *
 * bench_planner --digest: no timing; a digest of every figure of every plan it builds (the mix above, and every
 * plan that fits in sweeps of a dense, an uneven-pipeline and two expert models, with their counts and top
 * lists), one line per part; the mix is planned with its contexts too, and a plan that differs fails the run. Two builds that print the same lines plan the same bits: run it on the tree before
 * and after a speed-up (docs/c-api.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "catalog/catalog.h"
#include "planner/plan_ctx.h"
#include "planner/sweep.h"
#include "util/fileio.h"

/* CPU time of this thread: the rate of one core even when the machine is shared
 * (time spent descheduled does not count). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void machine(void)
{
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) snprintf(model, sizeof model, "%s", c + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
    struct utsname u;
    uname(&u);
    printf("machine: %s; %s %s %s; compiler %s; one thread, rates per second of its CPU time\n", model, u.sysname,
           u.release, u.machine, __VERSION__);
}

static Catalog *load(void)
{
    Catalog *c = calloc(1, sizeof *c);
    const char *files[] = {"models/models.csv", "models/gpus.csv", "models/recipes.csv", "models/stacks.csv"};
    Status (*parse[])(Catalog *, const char *, size_t, const char *,
                      Err *) = {catalog_parse_models, catalog_parse_gpus, catalog_parse_recipes, catalog_parse_stacks};
    for (int i = 0; i < 4; i++) {
        char *buf;
        size_t len;
        Err e;
        if (file_read_all(files[i], &buf, &len, &e) || parse[i](c, buf, len, files[i], &e)) {
            fprintf(stderr, "bench_planner: %s\n", e.msg);
            exit(1);
        }
        free(buf);
    }
    return c;
}

/* ---- --digest ------------------------------------------------------------------------------------------------- */

/* FNV-1a over the bytes of each value fed in: every number a plan carries (its input's layout and settings, its
 * memory terms, collectives, time, rates and advice), never a pointer or a struct's padding. */
typedef struct {
    uint64_t h, n;
} Digest;

static void dg_bytes(Digest *d, const void *v, size_t len)
{
    const unsigned char *b = v;
    for (size_t i = 0; i < len; i++) d->h = (d->h ^ b[i]) * 1099511628211ull;
}
static void dg_u(Digest *d, uint64_t v) { dg_bytes(d, &v, sizeof v); }
static void dg_f(Digest *d, double v) { dg_bytes(d, &v, sizeof v); }

static void dg_plan(Digest *d, const Plan *p)
{
    const PlanInput *in = &p->in;
    d->n++;
    uint64_t lay[] = {in->tp,
                      in->pp,
                      in->vpp,
                      in->cp,
                      in->dp,
                      in->world,
                      in->mbs,
                      in->gbs,
                      in->seq,
                      in->sp,
                      in->recompute,
                      in->sharding,
                      in->attn,
                      in->ep,
                      in->etp,
                      in->main_grad,
                      in->fusion,
                      in->first_stage_layers,
                      in->vocab_pad,
                      in->last_stage_layers,
                      in->fp8_weight_cache,
                      in->recompute_mods,
                      in->mem_unknown};
    for (size_t i = 0; i < sizeof lay / sizeof *lay; i++) dg_u(d, lay[i]);
    uint64_t u[] = {p->gbs_default,
                    p->world,
                    p->microbatches,
                    p->seq,
                    p->vocab_padded,
                    p->sp,
                    p->stage,
                    p->stage_layers,
                    p->first_layers,
                    p->mid_layers,
                    p->last_layers,
                    p->shard_ways,
                    p->params_total,
                    p->params_gpu,
                    p->params_gemm_gpu,
                    p->params_expert_gpu,
                    p->params_active,
                    p->linear_tensors,
                    p->total_bytes,
                    p->capacity_bytes,
                    p->limit_bytes,
                    p->alloc_bytes,
                    p->reserved_bytes,
                    (uint64_t)p->fits,
                    p->low_bytes,
                    p->low_stage,
                    p->verdict,
                    p->dp_comm_bytes,
                    p->tp_comm_bytes,
                    p->pp_comm_bytes,
                    p->cp_comm_bytes,
                    p->ep_comm_bytes,
                    p->weight_comm_bytes,
                    p->advice_mask};
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) dg_u(d, u[i]);
    for (int i = 0; i < PLAN_UNK_COUNT_; i++) dg_u(d, p->unknown_bytes[i]);
    for (int i = 0; i < MC_COUNT_; i++) dg_u(d, p->cat_bytes[i]);
    for (int i = 0; i < MT_COUNT_; i++) {
        /* a term's labels are its MEM_TERMS row's, fed in as when the plan held them (before and after agree) */
        const MemTerm *t = &p->mem[i];
        const char *name = mem_term_name((MemTermId)i);
        dg_u(d, (uint64_t)i), dg_u(d, mem_term_category((MemTermId)i)), dg_u(d, t->dtype), dg_u(d, t->elements);
        dg_u(d, t->bytes), dg_u(d, t->shards), dg_u(d, (uint64_t)mem_term_persistent((MemTermId)i));
        dg_bytes(d, name, strlen(name));
    }
    if (!plan_may_fit(p)) return; /* plan_build_memory_first: the rest is not filled */
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *c = &p->coll[i]; /* its labels: its COLLECTIVES row's, as for the terms */
        const char *name = coll_name((CollectiveId)i);
        dg_u(d, (uint64_t)i), dg_u(d, coll_group((CollectiveId)i)), dg_u(d, coll_op((CollectiveId)i));
        dg_u(d, c->dtype), dg_u(d, c->ranks);
        dg_u(d, (uint64_t)c->inter_node), dg_u(d, c->payload_bytes), dg_u(d, c->bus_bytes), dg_u(d, c->calls);
        dg_u(d, c->step_bytes), dg_f(d, c->bw), dg_f(d, c->latency_s), dg_f(d, c->time_s), dg_f(d, c->exposed_s);
        dg_bytes(d, name, strlen(name));
    }
    const TimeBreakdown *t = &p->time;
    double f[] = {t->gemm_s,       t->attn_s,        t->nongemm_s,      t->tp_comm_s,    t->cp_comm_s,
                  t->pp_comm_s,    t->bubble_s,      t->dp_comm_s,      t->optimizer_s,  t->weight_cast_s,
                  t->other_s,      t->expert_gemm_s, t->moe_route_s,    t->ep_comm_s,    t->moe_host_s,
                  t->step_s,       t->microbatch_s,  t->fwd_s,          t->bwd_s,        p->model_flops_step,
                  p->tokens_per_s, p->samples_per_s, p->tflops_per_gpu, p->mfu_bf16_pct, p->mfu_fp8_pct};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) dg_f(d, f[i]);
}

static void dg_on_fit(const Plan *p, void *ctx) { dg_plan(ctx, p); }

/* A sweep of every recipe and stack: the plans that fit (in evaluation order), the counts, the top 50 and the
 * 10 nearest misses. */
static int dg_sweep(const Catalog *c, const char *model, const char *gpu, uint32_t gpus)
{
    const Recipe *recs[CATALOG_MAX_ROWS];
    for (int r = 0; r < c->nrecipes; r++) recs[r] = &c->recipes[r];
    const StackSpec *stacks[CATALOG_MAX_STACKS];
    for (int k = 0; k < c->nstacks; k++) stacks[k] = &c->stacks[k];
    static Plan top[50], near[10];
    static uint32_t var[50];
    Digest fit = {14695981039346656037ull, 0}, rest = fit;
    SweepSpec s = {.recipes = recs,
                   .nrecipes = c->nrecipes,
                   .stacks = stacks,
                   .nstacks = c->nstacks,
                   .gpus = gpus,
                   .fold = 1,
                   .variants = var,
                   .nearest = near,
                   .k_nearest = 10,
                   .on_fit = dg_on_fit,
                   .on_fit_ctx = &fit};
    plan_input_defaults(&s.base);
    s.base.model = catalog_model(c, model), s.base.gpu = catalog_gpu(c, gpu);
    if (!s.base.model || !s.base.gpu) {
        fprintf(stderr, "bench_planner: no model %s or gpu %s in models/\n", model, gpu);
        return 1;
    }
    int ntop;
    SweepStats st;
    Err e;
    if (sweep_run(&s, top, 50, &ntop, &st, NULL, NULL, &e)) {
        fprintf(stderr, "bench_planner: %s\n", e.msg);
        return 1;
    }
    for (int i = 0; i < ntop; i++) dg_plan(&rest, &top[i]), dg_u(&rest, var[i]);
    for (int i = 0; i < st.n_nearest; i++) dg_plan(&rest, &near[i]);
    dg_u(&rest, st.evaluated), dg_u(&rest, st.valid), dg_u(&rest, st.oom), dg_u(&rest, st.folded);
    for (int i = 0; i < REJECT_COUNT_; i++) dg_u(&rest, st.rejected[i]);
    printf("digest sweep %s on %u %s: %llu rows, %llu built, %llu fit: fit plans %016llx, counts and lists %016llx\n",
           model, gpus, gpu, (unsigned long long)st.evaluated, (unsigned long long)st.valid, (unsigned long long)fit.n,
           (unsigned long long)fit.h, (unsigned long long)rest.h);
    return 0;
}

int main(int argc, char **argv)
{
    long fixed = -1; /* --plans N: that many plans, untimed */
    int sweep = 1, digest = 0, use_ctx = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--plans") && i + 1 < argc && (fixed = strtol(argv[i + 1], &end, 10)) >= 0 && !*end)
            i++;
        else if (!strcmp(argv[i], "--no-sweep"))
            sweep = 0;
        else if (!strcmp(argv[i], "--digest"))
            digest = 1;
        else if (!strcmp(argv[i], "--ctx"))
            use_ctx = 1;
        else {
            fprintf(stderr, "usage: bench_planner [--plans N] [--ctx] [--no-sweep] | --digest\n");
            return 64;
        }
    }
    machine();
    Catalog *c = load();
    const GpuSpec *h100 = catalog_gpu(c, "h100-sxm");

    /* a mix of real plans: three models, all Hopper-capable recipes, several layouts */
    enum { NIN = 256 };
    static PlanInput ins[NIN];
    int n = 0;
    const char *models[] = {"gpt-175b", "llama3-70b", "gpt-7b"};
    const uint32_t tps[] = {8, 4, 8, 2}, pps[] = {4, 8, 1, 2}, dps[] = {4, 4, 16, 8};
    for (int mi = 0; mi < 3; mi++)
        for (int r = 0; r < c->nrecipes; r++)
            for (int l = 0; l < 4 && n < NIN; l++) {
                PlanInput in;
                plan_input_defaults(&in);
                plan_input_use_stack(&in, &c->stacks[(r + l) % c->nstacks]);
                in.model = catalog_model(c, models[mi]), in.gpu = h100, in.recipe = &c->recipes[r];
                in.tp = tps[l], in.pp = pps[l], in.dp = dps[l], in.mbs = 1 + (uint32_t)(l & 1);
                in.sharding = l & 1 ? SHARD_DIST_OPT : SHARD_NONE;
                in.recompute = (Recompute)(l % 3);
                Plan p;
                PlanReject why;
                if (plan_build_fast(&in, &p, &why) == ST_OK) ins[n++] = in;
            }
    static PlanCtx cxs[NIN]; /* one per input: each has its own model, recipe and stack */
    for (int k = 0; k < n; k++) plan_ctx_init(&cxs[k], &ins[k]);
    static Plan p;
    uint64_t iters = 0, sink = 0;
    if (digest) { /* every plan of the mix, then the sweeps */
        Digest d = {14695981039346656037ull, 0}, dc = d;
        for (int k = 0; k < n; k++) {
            PlanReject why;
            if (plan_build_ctx(&cxs[k], &ins[k], &p, &why) != ST_OK) {
                fprintf(stderr, "bench_planner: a valid plan failed\n");
                return 1;
            }
            dg_plan(&dc, &p);
            if (plan_build_fast(&ins[k], &p, &why) != ST_OK) {
                fprintf(stderr, "bench_planner: a valid plan failed\n");
                return 1;
            }
            dg_plan(&d, &p);
        }
        if (dc.h != d.h) {
            fprintf(stderr, "bench_planner: the mix planned with contexts differs (%016llx, without %016llx)\n",
                    (unsigned long long)dc.h, (unsigned long long)d.h);
            return 1;
        }
        printf("digest mix: %llu plans %016llx\n", (unsigned long long)d.n, (unsigned long long)d.h);
        int bad = dg_sweep(c, "gpt-175b", "h100-sxm", 1024) || dg_sweep(c, "llama3-405b", "h100-sxm", 2048) ||
                  dg_sweep(c, "mixtral-8x7b", "h100-sxm", 64) || dg_sweep(c, "deepseek-v3", "h800", 256);
        free(c);
        return bad;
    }
    if (fixed >= 0) {
        for (long k = 0; k < fixed; k++) {
            PlanReject why;
            if ((use_ctx ? plan_build_ctx(&cxs[k % n], &ins[k % n], &p, &why)
                         : plan_build_fast(&ins[k % n], &p, &why)) != ST_OK) {
                fprintf(stderr, "bench_planner: a valid plan failed\n");
                return 1;
            }
            sink += p.total_bytes;
        }
        printf("plans: %ld of the %d inputs%s, untimed (--plans)\n", fixed, n, use_ctx ? " with their contexts" : "");
        if (!sweep) return sink == 42;
    }
    double t0, t1;
    for (int with = 0; fixed < 0 && with < 2; with++) {
        iters = 0;
        t0 = now();
        do {
            for (int k = 0; k < 1024; k++) {
                PlanReject why;
                uint64_t i = (iters + (uint64_t)k) % (uint64_t)n;
                if ((with ? plan_build_ctx(&cxs[i], &ins[i], &p, &why) : plan_build_fast(&ins[i], &p, &why)) != ST_OK) {
                    fprintf(stderr, "bench_planner: a valid plan failed\n");
                    return 1;
                }
                sink += p.total_bytes;
            }
            iters += 1024;
            t1 = now();
        } while (t1 - t0 < 1.0);
        double rate = (double)iters / (t1 - t0);
        if (!with)
            printf("plans: %d distinct inputs (3 models x %d recipes x 4 layouts, stacks in turn), %llu full plans in "
                   "%.3f s = %.0f plans/s (%.2f us per plan; target >= 1,000,000: %s)\n",
                   n, c->nrecipes, (unsigned long long)iters, t1 - t0, rate, 1e6 / rate,
                   rate >= 1e6 ? "met" : "NOT met");
        else
            printf("plans with contexts: the same inputs, each with its context (plan_build_ctx), %llu full plans in "
                   "%.3f s = %.0f plans/s (%.2f us per plan; target >= 1,000,000: %s)\n",
                   (unsigned long long)iters, t1 - t0, rate, 1e6 / rate, rate >= 1e6 ? "met" : "NOT met");
    }

    if (!sweep) return sink == 42;
    /* the full sweep */
    const Recipe *recs[CATALOG_MAX_ROWS];
    for (int r = 0; r < c->nrecipes; r++) recs[r] = &c->recipes[r];
    const StackSpec *stacks[CATALOG_MAX_STACKS];
    for (int k = 0; k < c->nstacks; k++) stacks[k] = &c->stacks[k];
    SweepSpec s = {.recipes = recs, .nrecipes = c->nrecipes, .stacks = stacks, .nstacks = c->nstacks, .gpus = 1024};
    plan_input_defaults(&s.base);
    s.base.model = catalog_model(c, "gpt-175b"), s.base.gpu = h100;
    static Plan top[20];
    int ntop;
    SweepStats st;
    Err e;
    t0 = now();
    if (sweep_run(&s, top, 20, &ntop, &st, NULL, NULL, &e)) {
        fprintf(stderr, "bench_planner: %s\n", e.msg);
        return 1;
    }
    t1 = now();
    printf("sweep: gpt-175b on 1,024 h100-sxm, %d recipes x %d stacks: %llu rows (%llu built, %llu fit) in %.3f s = "
           "%.0f rows/s, %.0f built plans/s (target < 1 s: %s)\n",
           c->nrecipes, c->nstacks, (unsigned long long)st.evaluated, (unsigned long long)st.valid,
           (unsigned long long)(st.valid - st.oom), t1 - t0, (double)st.evaluated / (t1 - t0),
           (double)st.valid / (t1 - t0), t1 - t0 < 1.0 ? "met" : "NOT met");
    if (sink == 42) printf("\n"); /* keep the plans observable */
    free(c);
    return 0;
}
