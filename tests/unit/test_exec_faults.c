/* tests/unit/test_exec_faults.c — every failure on the way is an error, never a
 * crash, a leak or a half-written file.
 *
 * Fault injection, swept: an operation is run once to count its fallible
 * calls, then again with call k made to fail, for every k. Three kinds of call:
 *   - the backend's: every operation of BACKEND_OPS and the memory functions
 *     (alloc, memset0, copy_to_device, copy_to_host, sync) of the CPU backend,
 *     wrapped by the same X-macro list the backends are filled from;
 *   - the communicator's (a single-rank communicator told it is one of 2
 *     ranks — data-, tensor- or pipeline-parallel — so ZeRO-1's reduce-scatter
 *     and all-gather, TP's and PP's calls run; a peer's data arrives as zeros);
 *   - the C library's allocators: this binary is linked with
 *     -Wl,--wrap=malloc,... (Makefile), so every malloc, calloc, realloc,
 *     strdup and aligned_alloc the library makes comes here first.
 * For each k the operation must return the injected status with the injected
 * message (an error that is swallowed, or replaced by another, fails), free
 * everything it allocated once the caller has freed what it was handed (the
 * allocations of the sweep are tracked pointer by pointer, so a dropped free()
 * fails in a plain build too, not only under LeakSanitizer), and leave no file
 * behind where it writes one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/ckpt/ckpt.h"
#include "exec/comm/comm.h"
#include "exec/backend/data.h"
#include "check/compare.h"
#include "exec/measure/measurement.h"
#include "support/exec_fixtures.h"
#include "support/fixtures.h"
#include "support/fault_inject.h"
#include "test.h"
#include "util/fileio.h"

/* ---- the backend: the CPU one with every call wrapped ------------------------------- */

static Backend real; /* the CPU backend's functions, before wrapping */

#define FAULT_OP_(P, name, params, args)                             \
    static Status fault_##name params                                \
    {                                                                \
        if (fault_hit(K_BACKEND, #name)) return fault_err(e, #name); \
        return real.name args;                                       \
    }
BACKEND_OPS(FAULT_OP_, _)
#define FAULT_FILL_(P, name, params, args) bk->name = fault_##name;

static Status fault_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    if (fault_hit(K_BACKEND, "alloc")) {
        *out = NULL;
        return fault_err(e, "alloc");
    }
    Status st = real.alloc(bk, bytes, out, e);
    fault_held += !st;
    return st;
}

static void fault_free(Backend *bk, void *p)
{
    fault_held -= p != NULL;
    real.free(bk, p);
}

static Status fault_memset0(Backend *bk, void *p, uint64_t bytes, Err *e)
{
    return fault_hit(K_BACKEND, "memset0") ? fault_err(e, "memset0") : real.memset0(bk, p, bytes, e);
}

static Status fault_to_device(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return fault_hit(K_BACKEND, "copy_to_device") ? fault_err(e, "copy_to_device")
                                                  : real.copy_to_device(bk, dst, src, bytes, e);
}

static Status fault_to_host(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return fault_hit(K_BACKEND, "copy_to_host") ? fault_err(e, "copy_to_host")
                                                : real.copy_to_host(bk, dst, src, bytes, e);
}

static Status fault_sync(Backend *bk, Err *e)
{
    return fault_hit(K_BACKEND, "sync") ? fault_err(e, "sync") : real.sync(bk, e);
}

static Status fault_backend(Backend **out, Err *e)
{
    Status st = backend_cpu_create(out, e);
    if (st) return st;
    Backend *bk = *out;
    real = *bk;
    BACKEND_OPS(FAULT_FILL_, _)
    bk->alloc = fault_alloc;
    bk->free = fault_free;
    bk->memset0 = fault_memset0;
    bk->copy_to_device = fault_to_device;
    bk->copy_to_host = fault_to_host;
    bk->sync = fault_sync;
    return ST_OK;
}

/* ---- the communicator: collectives wrapped ----------------------------------------- */

static Comm comm_real; /* the single-rank communicator's functions */

static Status c_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, CommReduce op,
                           Err *e)
{
    return fault_hit(K_COMM, "all_reduce") ? fault_err(e, "all_reduce")
                                           : comm_real.all_reduce(c, id, bk, buf, count, dt, op, e);
}

static Status c_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t count, Dtype dt,
                           Err *e)
{
    return fault_hit(K_COMM, "all_gather") ? fault_err(e, "all_gather")
                                           : comm_real.all_gather(c, id, bk, s, r, count, dt, e);
}

static Status c_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *s, void *r, uint64_t count, Dtype dt,
                               CommReduce op, Err *e)
{
    return fault_hit(K_COMM, "reduce_scatter") ? fault_err(e, "reduce_scatter")
                                               : comm_real.reduce_scatter(c, id, bk, s, r, count, dt, op, e);
}

static Status c_broadcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, int root, Err *e)
{
    if (fault_hit(K_COMM, "broadcast")) return fault_err(e, "broadcast");
    /* from a rank that is not there (a pipeline's last stage): zeros */
    return root == c->rank ? comm_real.broadcast(c, id, bk, buf, count, dt, root, e)
                           : real.memset0(bk, buf, count * dtype_bytes(dt), e);
}

static Status c_rs_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt, CommReduce op,
                     Err *e)
{
    return fault_hit(K_COMM, "reduce_scatter_v") ? fault_err(e, "reduce_scatter_v")
                                                 : comm_real.reduce_scatter_v(c, id, bk, buf, counts, dt, op, e);
}

static Status c_ag_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt, Err *e)
{
    return fault_hit(K_COMM, "all_gather_v") ? fault_err(e, "all_gather_v")
                                             : comm_real.all_gather_v(c, id, bk, buf, counts, dt, e);
}

/* Point to point with a peer that is not there (the single-rank communicator has none): a send is
 * dropped, a recv gets zeros — enough for a pipeline stage's step to run its calls. */
static Status c_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t count, Dtype dt, int peer, Err *e)
{
    (void)c, (void)id, (void)bk, (void)buf, (void)count, (void)dt, (void)peer;
    return fault_hit(K_COMM, "send") ? fault_err(e, "send") : ST_OK;
}

static Status c_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t count, Dtype dt, int peer, Err *e)
{
    (void)c, (void)id, (void)peer;
    return fault_hit(K_COMM, "recv") ? fault_err(e, "recv") : real.memset0(bk, buf, count * dtype_bytes(dt), e);
}

static Status c_split(Comm *c, int color, int key, Comm **out, Err *e);

static void comm_wrap(Comm *c)
{
    c->all_reduce = c_all_reduce;
    c->all_gather = c_all_gather;
    c->reduce_scatter = c_reduce_scatter;
    c->broadcast = c_broadcast;
    c->reduce_scatter_v = comm_real.reduce_scatter_v ? c_rs_v : NULL;
    c->all_gather_v = comm_real.all_gather_v ? c_ag_v : NULL;
    c->split = comm_real.split ? c_split : NULL;
    c->send = c_send;
    c->recv = c_recv;
    c->sendrecv = NULL; /* comm_sendrecv: a send, then a recv */
}

/* A group split from a wrapped communicator is wrapped too. */
static Status c_split(Comm *c, int color, int key, Comm **out, Err *e)
{
    if (fault_hit(K_COMM, "split")) return fault_err(e, "split");
    Status st = comm_real.split(c, color, key, out, e);
    if (!st) comm_wrap(*out);
    return st;
}

/* A single-rank communicator told it is rank 0 of `size` (collectives move nothing). */
static Status fault_comm(int size, Comm **out, Err *e)
{
    Status st = comm_single_create(out, e);
    if (st) return st;
    Comm *c = *out;
    c->size = size, c->rank = 0;
    comm_real = *c;
    comm_wrap(c);
    return ST_OK;
}

/* ---- the operations swept ------------------------------------------------------------ */

/* A tiny fixture model (exec_fixtures.h) under `recipe` on rank 0 of dp
 * (ZeRO-1 when dp > 1), two sequences a step: created, trained `steps` steps,
 * saved to and loaded from a checkpoint in `dir` when dir is set, then freed
 * with its backend and communicator; with .measure, stepped and compared with
 * the plan through the measurement path `fp8plan run` takes. */
typedef struct {
    const char *recipe;
    int llama, dp, steps;
    const char *dir;
    int tp, pp;  /* 0: 1 */
    int measure; /* through the measurement path (measure_step, then compare) as `fp8plan run` does */
    int moe;     /* exec_fixtures.h's fx_moe instead: 1 softmax router, 2 sigmoid */
    int qk;      /* with q/k norms (Qwen3) */
} Job;

static int32_t tin[1024], ttgt[1024];

static Status job_ckpt(const Job *j, Model *m, Err *e)
{
    char path[512];
    snprintf(path, sizeof path, "%s/run.ckpt", j->dir);
    DataState ds = {.kind = DATA_SYNTHETIC};
    Status st = ckpt_save(path, m, &ds, e);
    if (st) return st; /* a failed save leaves no file: the sweep looks */
    st = ckpt_load(path, m, &ds, e);
    unlink(path);
    return st;
}

static Status job_run(const Job *j, Err *e)
{
    static Plan p;
    ModelSpec s = j->moe ? fx_moe(j->moe == 2 ? ROUTER_SIGMOID : ROUTER_SOFTMAX) : j->llama ? fx_llama() : fx_gpt();
    s.qk_norm = j->qk;
    Recipe r = fx_recipe(j->recipe);
    if (!strcmp(j->recipe, "fp8lm")) /* recipes.csv's fp8lm row: E4M3 gradients and copies (ZeRO-1 needs them) */
        r.comm_dp_grad = r.comm_param_gather = DT_E4M3;
    Backend *bk = NULL;
    Comm *c = NULL;
    Model *m = NULL;
    uint32_t tp = j->tp ? (uint32_t)j->tp : 1, pp = j->pp ? (uint32_t)j->pp : 1;
    Status st = fx_plan_layout(&s, &r, 2, pp, (uint32_t)j->dp, j->dp > 1 ? SHARD_ZERO1 : SHARD_NONE, tp, pp, &p, e);
    if (!st) { /* no 32 MiB cuBLASLt workspace in the arena (the CPU backend uses none): the runs stay cheap */
        PlanInput in = p.in;
        in.workspace_bytes = 0;
        st = plan_build(&in, &p, e);
    }
    if (!st) st = fault_backend(&bk, e);
    static Measurement ms;
    int measuring = 0;
    if (!st && j->measure) {
        st = measure_init(&ms, bk, (uint32_t)j->steps, e);
        measuring = !st;
    }
    if (!st) st = fault_comm(j->dp * (int)(tp * pp), &c, e);
    if (measuring && c) measure_after_comm(&ms, bk);
    if (!st) {
        m = (Model *)&m; /* model_create must clear it when it fails */
        st = model_create(&p, NULL, bk, c, &m, e);
        if (st && m) {
            CHECKF(0, "model_create failed (%s) but handed out a model", e->msg);
            m = NULL;
        }
    }
    CHECK(!m || model_step_tokens(m) <= sizeof tin / sizeof *tin);
    if (measuring && m) measure_after_model(&ms, m);
    for (int i = 0; !st && i < j->steps; i++) {
        float loss;
        fx_tokens(m, 11u + (unsigned)i, tin, ttgt);
        st = measuring ? measure_step(&ms, m, tin, ttgt, &loss, e) : model_step(m, tin, ttgt, &loss, e);
    }
    if (measuring && m) {
        static Comparison cmp;
        measure_finish(&ms, m);
        compare(&p, &ms, NULL, &cmp);
    }
    if (!st && j->dir) st = job_ckpt(j, m, e);
    if (measuring) measure_free(&ms);
    model_destroy(m);
    if (c) c->destroy(c);
    if (bk) bk->destroy(bk);
    return st;
}

static Status job_op(const void *arg, Err *e) { return job_run(arg, e); }

static void sweep_job(int kind, const Job *j)
{
    char what[128];
    snprintf(what, sizeof what, "%s %s%s dp %d tp %d pp %d, %d steps%s", j->recipe,
             j->moe     ? "moe"
             : j->llama ? "llama"
                        : "gpt",
             j->qk ? " q/k norms" : "", j->dp, j->tp ? j->tp : 1, j->pp ? j->pp : 1, j->steps,
             j->dir       ? ", checkpoint"
             : j->measure ? ", measured"
                          : "");
    sweep(kind, what, job_op, j, j->dir);
}

static char tmpdir[256];

static void test_backend_faults(void)
{
    const Job jobs[] = {
        {.recipe = "megatron-bf16", .dp = 1, .steps = 2},
        {.recipe = "te-fp8", .dp = 1, .steps = 2},
        {.recipe = "te-fp8-current", .llama = 1, .dp = 1, .steps = 2},
        {.recipe = "fp8lm", .dp = 1, .steps = 2},
        {.recipe = "te-fp8", .llama = 1, .dp = 2, .steps = 1},
        {.recipe = "fp8lm", .llama = 1, .dp = 2, .steps = 1, .dir = tmpdir},
        {.recipe = "te-fp8", .llama = 1, .dp = 1, .steps = 1, .dir = tmpdir, .tp = 2},
        {.recipe = "te-fp8", .dp = 1, .steps = 1, .pp = 2},
        {.recipe = "fp8lm", .dp = 1, .steps = 3, .measure = 1},
        {.recipe = "megatron-bf16", .dp = 1, .steps = 2, .dir = tmpdir, .moe = 1},
        {.recipe = "megatron-bf16", .dp = 1, .steps = 2, .measure = 1, .moe = 2},
        {.recipe = "te-fp8", .dp = 1, .steps = 2, .dir = tmpdir, .moe = 1}, /* the experts' FP8 GEMMs */
        {.recipe = "te-fp8-current", .dp = 1, .steps = 1, .moe = 2},
        {.recipe = "deepseek-v3", .llama = 1, .dp = 1, .steps = 2, .dir = tmpdir},   /* block scales, BF16 m, v */
        {.recipe = "te-fp8", .dp = 1, .steps = 1, .dir = tmpdir, .moe = 1, .qk = 1}, /* q/k norms' rope and scratch */
        {.recipe = "megatron-bf16", .dp = 2, .steps = 1, .dir = tmpdir, .moe = 2}, /* sharded: the whole router bias */
    };
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) sweep_job(K_BACKEND, &jobs[i]);
}

static void test_comm_faults(void)
{
    const Job jobs[] = {{.recipe = "megatron-bf16", .dp = 2, .steps = 2},
                        {.recipe = "te-fp8", .llama = 1, .dp = 2, .steps = 2},
                        {.recipe = "fp8lm", .dp = 2, .steps = 2, .dir = tmpdir},
                        {.recipe = "te-fp8", .llama = 1, .dp = 1, .steps = 1, .tp = 2},
                        {.recipe = "megatron-bf16", .dp = 1, .steps = 1, .pp = 2},
                        {.recipe = "te-fp8", .dp = 2, .steps = 3, .measure = 1},
                        {.recipe = "megatron-bf16", .dp = 2, .steps = 1, .dir = tmpdir, .moe = 2}};
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) sweep_job(K_COMM, &jobs[i]);
}

static void test_alloc_faults(void)
{
    const Job jobs[] = {
        {.recipe = "megatron-bf16", .dp = 1, .steps = 1, .dir = tmpdir},
        {.recipe = "te-fp8", .llama = 1, .dp = 1, .steps = 1},
        {.recipe = "fp8lm", .dp = 2, .steps = 1, .dir = tmpdir},
        {.recipe = "te-fp8-current", .dp = 1, .steps = 1},
        {.recipe = "megatron-bf16", .llama = 1, .dp = 1, .steps = 1, .dir = tmpdir, .tp = 2},
        {.recipe = "te-fp8", .dp = 1, .steps = 1, .pp = 2},
        {.recipe = "te-fp8", .dp = 2, .steps = 3, .measure = 1},
        {.recipe = "megatron-bf16", .dp = 1, .steps = 2, .dir = tmpdir, .moe = 2},
        {.recipe = "te-fp8", .dp = 1, .steps = 1, .measure = 1, .moe = 1},
        {.recipe = "deepseek-v3", .dp = 1, .steps = 1, .measure = 1},
    };
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) sweep_job(K_MALLOC, &jobs[i]);
}

/* A MoE step allocates nothing once the first has run: the grouped GEMMs' group tables come from the CPU
 * backend's kept scratch (grown on the first call, reused), the FP8 experts' counts are read into the model's
 * host scratch. Every malloc, calloc, realloc and aligned_alloc of steps 2 and 3 counted (the wrapped allocators,
 * counting only): none, for the softmax and sigmoid routers, BF16 and every FP8 recipe the experts run, and
 * latent attention with MTP's MoE block. Before, each grouped GEMM allocated its table (two blocks a call) and
 * each FP8 expert pass its host counts: steps 2 and 3 made 56 allocations (megatron-bf16), 68 (each FP8 recipe),
 * 112 (MLA with MTP). */
static void test_moe_steps_allocate_nothing(void)
{
    static const struct {
        const char *recipe;
        RouterType router;
        int mla;
    } cases[] = {{"megatron-bf16", ROUTER_SOFTMAX, 0},
                 {"te-fp8", ROUTER_SIGMOID, 0},
                 {"te-fp8-current", ROUTER_SOFTMAX, 0},
                 {"deepseek-v3", ROUTER_SIGMOID, 0},
                 {"megatron-bf16", ROUTER_SIGMOID, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Err e = {0};
        Backend *bk = NULL;
        Comm *c = NULL;
        Model *m = NULL;
        ModelSpec s = cases[i].mla ? fx_mla(1, 16) : fx_moe(cases[i].router);
        if (cases[i].mla) s.mtp_layers = 1; /* its depth's block is one more MoE layer */
        Recipe r = fx_recipe(cases[i].recipe);
        Status st = backend_cpu_create(&bk, &e);
        if (!st) st = comm_single_create(&c, &e);
        if (!st) st = fx_model(&s, &r, 2, 2, NULL, bk, c, &m, &e);
        CHECKF(!st && m, "%s: %s", cases[i].recipe, e.msg);
        CHECK(!m || model_step_tokens(m) <= sizeof tin / sizeof *tin);
        float loss;
        for (int k = 0; !st && m && k < 3; k++) {
            fx_tokens(m, 5u + (unsigned)k, tin, ttgt);
            if (k == 1) F.kind = K_MALLOC, F.at = -1, F.n = 0; /* count, from step 2 on */
            st = model_step(m, tin, ttgt, &loss, &e);
        }
        F.kind = K_NONE;
        CHECKF(!st, "%s: %s", cases[i].recipe, e.msg);
        CHECKF(F.n == 0, "%s%s: steps 2 and 3 made %ld allocations", cases[i].recipe, cases[i].mla ? " (MLA, MTP)" : "",
               F.n);
        model_destroy(m);
        if (c) c->destroy(c);
        if (bk) bk->destroy(bk);
    }
}

/* The catalog's four files parsed (csv_table over libcsv, then the rows checked), each into a fresh Catalog. */
typedef struct {
    const char *path;
    Status (*parse)(Catalog *, const char *, size_t, const char *, Err *);
    char *text;
    size_t len;
} CatFile;

static Status cat_op(const void *arg, Err *e)
{
    const CatFile *f = arg;
    static Catalog c;
    memset(&c, 0, sizeof c);
    return f->parse(&c, f->text, f->len, f->path, e);
}

static void test_catalog_alloc_faults(void)
{
    CatFile files[] = {{"models/models.csv", catalog_parse_models, NULL, 0},
                       {"models/gpus.csv", catalog_parse_gpus, NULL, 0},
                       {"models/recipes.csv", catalog_parse_recipes, NULL, 0},
                       {"models/stacks.csv", catalog_parse_stacks, NULL, 0}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        Err e;
        if (file_read_all(files[i].path, &files[i].text, &files[i].len, &e)) {
            CHECKF(0, "%s", e.msg);
            continue;
        }
        sweep(K_MALLOC, files[i].path, cat_op, &files[i], NULL);
        free(files[i].text);
    }
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "1", 1); /* one thread: the sweeps run the step thousands of times */
    const char *td = getenv("TMPDIR"); /* the checkpoints' folder: under $TMPDIR, else /tmp */
    snprintf(tmpdir, sizeof tmpdir, "%s/fp8plan-faults-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    Err e; /* start the thread pool and the backend's lazies outside the sweeps */
    Job warm = {.recipe = "te-fp8", .dp = 1, .steps = 1};
    if (job_run(&warm, &e)) fprintf(stderr, "warm-up: %s\n", e.msg);
    RUN(test_backend_faults);
    RUN(test_comm_faults);
    RUN(test_alloc_faults);
    RUN(test_moe_steps_allocate_nothing);
    RUN(test_catalog_alloc_faults);
    rmdir(tmpdir);
    return test_summary();
}
