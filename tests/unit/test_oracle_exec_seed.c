/* tests/unit/test_oracle_exec_seed.c — executor rules found unguarded by `make mutate` on fresh seeds, each
 * against a value or a verdict worked out by hand: the thread pool in a forked child (exec/backend/par.c), the CPU
 * GEMM past the BLAS's 32-bit leading dimensions (exec/cpu/cpu_gemm.c), the section every row of a run's report
 * is printed under (check/compare.h, reports/run_report.c), every field of the device-memory rows of a
 * comparison (check/compare.c), the staged embedding gradients zeroed at every backward
 * (exec/model/model_grad.c), a model with its scaling trace given back whole (exec/model/model_init.c), how
 * each memory term of a comparison is checked (check/compare.c), the bound on a micro-batch's tokens
 * (exec/model/model_layout.c). */
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "check/compare.h"
#include "exec/measure/device_measure.h"
#include "exec/measure/measurement.h"
#include "exec/backend/elem.h"
#include "exec/model/model_internal.h"
#include "exec/backend/par.h"
#include "reports/run_report.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* ---- the pool across fork() ------------------------------------------------------------------------------- */

enum { FORK_TASKS = 32, FORK_WAIT_MS = 10000, FORK_PATIENCE_S = 60 };

typedef struct {
    atomic_ullong sum;    /* the sum of task² over the tasks run */
    atomic_int ran;       /* tasks run */
    atomic_int by_worker; /* tasks run by a pool thread (worker != 0) */
    atomic_int waited;    /* the caller waited once for a pool thread */
} ForkJob;

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Task t adds t²; the caller (worker 0), in its first task, waits up to FORK_WAIT_MS for a pool thread to
 * have run one, so a pool that started its threads shows them, and one that has none shows that too. */
static void fork_task(void *ctx, uint64_t task, int worker)
{
    ForkJob *j = ctx;
    if (worker != 0) atomic_fetch_add(&j->by_worker, 1);
    if (worker == 0 && !atomic_exchange(&j->waited, 1))
        for (int ms = 0; ms < FORK_WAIT_MS && !atomic_load(&j->by_worker); ms++) sleep_ms(1);
    atomic_fetch_add(&j->sum, (unsigned long long)(task * task));
    atomic_fetch_add(&j->ran, 1);
}

/* One job of FORK_TASKS tasks: 0 when every task ran once (sum of t² for t < 32 = 31·32·63/6 = 10,416) and a
 * pool thread ran at least one; 1 for a wrong count or sum, 2 for no pool thread. */
static int fork_job(void)
{
    ForkJob j = {0};
    par_tasks(FORK_TASKS, fork_task, &j);
    if (atomic_load(&j.ran) != FORK_TASKS || atomic_load(&j.sum) != 10416ull) return 1;
    return atomic_load(&j.by_worker) ? 0 : 2;
}

/* A forked child has only the thread that called fork(): the pool must start afresh there (its own threads), not
 * believe it still has the parent's. FP8PLAN_THREADS = 3 (main), so the pool has 2 threads besides the caller.
 * The parent starts its pool, forks; the child runs a job and exits with fork_job's code (0: every task once,
 * the sum 10,416, and a thread of the child's pool ran a task); the parent's pool still runs jobs after. The child
 * runs its job again while no pool thread has run a task, for up to a minute: under the sanitizers with suites in
 * parallel, CI once saw no child thread run within the 10 s of one job. */
static void test_pool_after_fork(void)
{
    CHECK_EQ_INT(par_threads(), 3);
    CHECK_EQ_INT(fork_job(), 0); /* the parent's pool is up */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) return;
    if (pid == 0) { /* a loaded machine may run the child's new threads late: jobs again until one ran a task, up
                     * to FORK_PATIENCE_S of wall time (a pool that kept the parent's threads never gets one) */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc;
        do {
            rc = fork_job();
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (rc == 2 && (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) < FORK_PATIENCE_S);
        _exit(rc);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "child: %s %d (1: a task lost or run twice, 2: no pool thread ran a task)",
           WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK_EQ_INT(fork_job(), 0); /* and the parent's still is */
}

/* ---- the CPU GEMM past 32-bit leading dimensions ----------------------------------------------------------- */

/* The BLAS takes sizes and leading dimensions as int: an operand whose rows are 2^31 elements apart (one past
 * INT_MAX) must be multiplied by the reference GEMM, not handed to the BLAS truncated. M = 2, N = 3, K = 4,
 * FP32, both operands K-inner; one of them (far = 'a' or 'b') stored with ld = 2^31, its rows 8 GiB apart in
 * a reserved-but-untouched mapping (only the pages the rows sit in are ever backed), the other packed.
 *   A = [1 2 3 4; 0.5 -1 2 0.25], B = [1 0 0 0; 1 1 1 1; 0 2 0 -4] (rows of B are D's columns):
 *   D[0] = [1, 1 + 2 + 3 + 4 = 10, 2·2 + 4·(−4) = −12]
 *   D[1] = [0.5, 0.5 − 1 + 2 + 0.25 = 1.75, 2·(−1) + 0.25·(−4) = −3], every product and sum exact in FP32. */
static void gemm_far(char far)
{
    static const float A[2][4] = {{1, 2, 3, 4}, {0.5f, -1, 2, 0.25f}};
    static const float B[3][4] = {{1, 0, 0, 0}, {1, 1, 1, 1}, {0, 2, 0, -4}};
    static const float want[6] = {1, 10, -12, 0.5f, 1.75f, -3};
    const uint64_t ld = 1ull << 31, rows = far == 'a' ? 2 : 3;
    const size_t span = (size_t)((rows - 1) * ld + 4) * sizeof(float);
    float *big = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECKF(big != MAP_FAILED, "mmap of %zu bytes failed", span);
    if (big == MAP_FAILED) return;
    for (uint64_t r = 0; r < rows; r++) memcpy(big + r * ld, far == 'a' ? A[r] : B[r], 4 * sizeof(float));
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (bk) {
        float d[6] = {99, 99, 99, 99, 99, 99};
        GemmDesc g = {.m = 2, .n = 3, .k = 4, .accum = GEMM_OVERWRITE};
        g.a = (GemmOperand){
            .ptr = far == 'a' ? big : &A[0][0], .dtype = DT_FP32, .layout = GEMM_K_INNER, .ld = far == 'a' ? ld : 0};
        g.b = (GemmOperand){
            .ptr = far == 'b' ? big : &B[0][0], .dtype = DT_FP32, .layout = GEMM_K_INNER, .ld = far == 'b' ? ld : 0};
        g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
        CHECKF(bk->gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
        for (int i = 0; i < 6; i++)
            CHECKF(d[i] == want[i], "ld of %c 2^31: D[%d][%d] = %g, want %g", far, i / 3, i % 3, (double)d[i],
                   (double)want[i]);
        bk->destroy(bk);
    }
    munmap(big, span);
}

static void test_gemm_ld_past_int(void)
{
    gemm_far('a');
    gemm_far('b');
}

/* ---- the section of a report's rows ------------------------------------------------------------------------ */

/* What compare() is handed below: the GPT fixture's plan (recipe, dp ranks) in p and an empty measurement of 2
 * steps on a new CPU backend in ms. Returns the backend, or NULL (a failed check) when any of them cannot be
 * made; cmp_done gives the measurement and the backend back. */
static Backend *cmp_fixture(const char *recipe, uint32_t dp, Plan *p, Measurement *ms)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe(recipe);
    Err e = {0};
    Backend *bk = NULL;
    if (fx_plan_dp(&m, &r, 1, 1, dp, SHARD_NONE, p, &e) || backend_cpu_create(&bk, &e)) {
        CHECKF(0, "%s", e.msg);
        return NULL;
    }
    if (measure_init(ms, bk, 2, &e)) {
        CHECKF(0, "%s", e.msg);
        bk->destroy(bk);
        return NULL;
    }
    return bk;
}

static void cmp_done(Backend *bk, Measurement *ms)
{
    measure_free(ms);
    bk->destroy(bk);
}

/* Every row of a run's comparison is printed under the section its kind belongs to: category "time" under
 * "time", "rate" under "rate", "comm" under "comm", and the memory categories (state, activation, ...) under
 * "memory". The GPT fixture, megatron-bf16, dp 2 (so the data-parallel gradient all-reduce is planned: comm
 * rows), a measurement of 2 steps that took none; each of the four sections holds at least one row. */
static void test_report_sections(void)
{
    static Plan p;
    static Measurement ms;
    static Comparison c;
    Backend *bk = cmp_fixture("megatron-bf16", 2, &p, &ms);
    if (!bk) return;
    compare(&p, &ms, NULL, &c);
    Table *t = run_report_table(&c, RUN_TABLE_ALL);
    CHECK(t != NULL);
    if (t) {
        int sec = table_col_find(t, "section"), term = table_col_find(t, "term"), cat = table_col_find(t, "category");
        CHECK(sec >= 0 && term >= 0 && cat >= 0);
        int seen[4] = {0}, wrong = 0;
        static const char *const names[4] = {"memory", "time", "rate", "comm"};
        CHECK_EQ_INT(table_lines(t), c.n);
        for (int i = 0; sec >= 0 && term >= 0 && cat >= 0 && i < table_lines(t); i++) {
            const char *s = table_get_str(t, i, sec), *k = table_get_str(t, i, cat);
            CHECK(s && k);
            if (!s || !k) continue;
            int want = !strcmp(k, "time") ? 1 : !strcmp(k, "rate") ? 2 : !strcmp(k, "comm") ? 3 : 0;
            if (strcmp(s, names[want]) && wrong++ < 3)
                CHECKF(0, "row %s (category %s) under section %s, want %s", table_get_str(t, i, term), k, s,
                       names[want]);
            seen[want]++;
        }
        CHECK_EQ_INT(wrong, 0);
        for (int k = 0; k < 4; k++) CHECKF(seen[k] > 0, "no row under %s", names[k]);
        table_free(t);
    }
    cmp_done(bk, &ms);
}

/* ---- the device-memory rows of a comparison ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    int has_planned;
    double planned;
    int has_measured;
    double measured;
} DevRow;

/* The device rows follow one another, in this order, each field as listed, and there are no others; every one
 * in the memory section, category "device", bytes; device_used checked within the default 5 %, the others
 * shown (INFO). */
static void check_dev_rows(const Comparison *c, const DevRow *want, int n)
{
    int first = -1, count = 0;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->rows[i].category, "device")) {
            if (first < 0) first = i;
            count++;
        }
    CHECK_EQ_INT(count, n);
    CHECK(first >= 0 && first + n <= c->n);
    if (count != n || first < 0 || first + n > c->n) return;
    for (int i = 0; i < n; i++) {
        const MeasureRow *r = &c->rows[first + i];
        CHECK_STR(r->name, want[i].name);
        CHECK_EQ_INT(r->section, CMP_MEMORY);
        CHECK_STR(r->category, "device");
        CHECK_EQ_INT(r->kind, UNIT_BYTES);
        CHECK_EQ_INT(r->mode, i == 0 ? MEASURE_TOL : MEASURE_INFO);
        if (i == 0) CHECK_NEAR(r->tol, 0.05, 0.0);
        CHECKF(r->has_planned == want[i].has_planned && r->planned == want[i].planned,
               "%s: planned %d %.0f, want %d %.0f", want[i].name, r->has_planned, r->planned, want[i].has_planned,
               want[i].planned);
        CHECKF(r->has_measured == want[i].has_measured && r->measured == want[i].measured,
               "%s: measured %d %.0f, want %d %.0f", want[i].name, r->has_measured, r->measured, want[i].has_measured,
               want[i].measured);
        CHECK(r->note != NULL);
    }
}

/* What the driver counted, turned into rows (compare.c device_rows). The GPT fixture's plan with its context,
 * communicator, fragmentation terms and total set by hand to 111, 222, 333 and 4,444 bytes; a measurement with
 * an arena of 1,990 bytes and these counts (bytes in use):
 *   after the backend 600, after the communicator 610, after the model 2,610, the steps' peak 2,700; the first
 *   step's lazy loads 40; growth per phase: forward 5, backward 0, optimizer 7, communication 4.
 *   device_used          planned 4,444  measured the peak 2,700 (above the 2,610 after the model)
 *   device_cuda_context  planned 111    measured 600 + 40 lazy = 640
 *   device_comm_buffer   planned 222    measured (610 − 600) + 4 grown in the communication phase = 14
 *   device_arena         planned 1,990  measured 2,610 − 610 = 2,000
 *   device_outside_arena planned 333    measured 2,700 − (640 + 14 + 1,990) = 56
 *   device_grew_forward  no plan        measured 5   (no backward row: it grew 0)
 *   device_grew_optimizer no plan       measured 7
 * Then only the sample after the backend (no communicator, model or step sample): the peak is 0, so device_used,
 * the communicator, the arena and outside-the-arena rows have no measured value; the context still has 640. And
 * a measurement whose backend has no hooks (have = 0) has no device row at all. */
static void test_compare_device_rows(void)
{
    static Plan p;
    static Measurement ms;
    static Comparison c;
    Backend *bk = cmp_fixture("megatron-bf16", 1, &p, &ms);
    if (!bk) return;
    p.mem[MT_CUDA_CONTEXT].bytes = 111, p.mem[MT_COMM_BUFFER].bytes = 222, p.mem[MT_FRAGMENTATION].bytes = 333;
    p.total_bytes = 4444;
    ms.arena_bytes = 1990;
    DevMeasure *d = &ms.dev;
    d->have = 1;
    d->used[DEVM_AFTER_BACKEND] = 600, d->used[DEVM_AFTER_COMM] = 610;
    d->used[DEVM_AFTER_MODEL] = 2610, d->used[DEVM_STEP] = 2700;
    for (int k = 0; k < DEVM_POINTS; k++) d->sampled[k] = 1;
    d->lazy = 40;
    d->grew[PHASE_FWD] = 5, d->grew[PHASE_BWD] = 0, d->grew[PHASE_OPT] = 7, d->grew[PHASE_COMM] = 4;
    compare(&p, &ms, NULL, &c);
    const DevRow all[] = {{"device_used", 1, 4444, 1, 2700},       {"device_cuda_context", 1, 111, 1, 640},
                          {"device_comm_buffer", 1, 222, 1, 14},   {"device_arena", 1, 1990, 1, 2000},
                          {"device_outside_arena", 1, 333, 1, 56}, {"device_grew_forward", 0, 0, 1, 5},
                          {"device_grew_optimizer", 0, 0, 1, 7}};
    check_dev_rows(&c, all, 7);

    d->sampled[DEVM_AFTER_COMM] = d->sampled[DEVM_AFTER_MODEL] = d->sampled[DEVM_STEP] = 0;
    d->grew[PHASE_FWD] = d->grew[PHASE_OPT] = 0, d->grew[PHASE_BWD] = 9;
    compare(&p, &ms, NULL, &c);
    /* comm: (600 − 600) + 4 = 4; arena: 2,610 − 600 = 2,010 (not shown); outside: 0 − ... clamps to 0 */
    const DevRow backend_only[] = {{"device_used", 1, 4444, 0, 0},         {"device_cuda_context", 1, 111, 1, 640},
                                   {"device_comm_buffer", 1, 222, 0, 4},   {"device_arena", 1, 1990, 0, 2010},
                                   {"device_outside_arena", 1, 333, 0, 0}, {"device_grew_backward", 0, 0, 1, 9}};
    check_dev_rows(&c, backend_only, 6);

    d->have = 0;
    compare(&p, &ms, NULL, &c);
    for (int i = 0; i < c.n; i++) CHECKF(strcmp(c.rows[i].category, "device"), "row %s", c.rows[i].name);
    cmp_done(bk, &ms);
}

/* ---- staged gradients start from zero at every backward --------------------------------------------------- */

/* Main gradients kept in BF16 for the non-GEMM parameters are accumulated in FP32 staging; the embeddings' (wte,
 * wpe when positions are learned, lm_head when untied) share one staging buffer, zeroed at the first
 * micro-batch of every backward. model_grads leaves the parameters as they are, so running it twice on the same
 * tokens must give every gradient bit for bit the same: a staging region not zeroed the second time adds the
 * first call's gradient again (twice the value). 2 micro-batches of 1 sequence (the second loads what the first
 * stored), on GPT with learned positions tied and untied, and on LLaMA (rotary, untied). Every gradient of the
 * embedding side is non-zero the first time (each token's row and each position get a share). The staging is
 * zeroed exactly, no further: seen at the backend's memset0, (Vp·C [+ Vp·C untied] [+ T·C learned]) x 4 bytes
 * with Vp = 64 (64 padded to a multiple of 64), C = 32, T = 16: GPT tied (2,048 + 512) x 4 = 10,240 B, GPT
 * untied (2 x 2,048 + 512) x 4 = 18,432 B, LLaMA (2 x 2,048) x 4 = 16,384 B, once per model_grads. */
static void *zero_at;
static uint64_t zero_bytes;
static int zero_calls;
static Status (*zero_orig)(Backend *, void *, uint64_t, Err *);

static Status zero_watch(Backend *bk, void *p, uint64_t bytes, Err *e)
{
    if (p == zero_at) zero_bytes = bytes, zero_calls++;
    return zero_orig(bk, p, bytes, e);
}

static void grads_twice(ModelSpec spec, uint64_t stage_bytes)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECKF(comm_single_create(&comm, &e) == ST_OK, "%s", e.msg);
    Recipe r = fx_recipe("megatron-bf16");
    r.other.dt[STATE_GRAD] = DT_BF16; /* staged: the embeddings, norms and biases */
    Model *g = NULL;
    if (bk && comm) CHECKF(fx_model(&spec, &r, 1, 2, NULL, bk, comm, &g, &e) == ST_OK, "%s", e.msg);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->microbatches, 2);
        zero_at = g->act.gstage_emb, zero_calls = 0, zero_bytes = 0;
        CHECK(zero_at != NULL);
        zero_orig = bk->memset0, bk->memset0 = zero_watch;
        int32_t in[2 * 16], tgt[2 * 16];
        CHECK_EQ_U64(model_step_tokens(g), 2 * 16);
        fx_tokens(g, 5, in, tgt);
        float l1 = 0, l2 = 0;
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < g->nparams; i++)
            bytes += g->params[i].numel * dtype_bytes(model_states(g, &g->params[i])->dt[STATE_GRAD]);
        uint8_t *first = malloc(bytes);
        CHECK(first != NULL);
        CHECKF(model_grads(g, in, tgt, &l1, &e) == ST_OK, "%s", e.msg);
        uint64_t off = 0;
        for (uint32_t i = 0; first && i < g->nparams; i++) {
            const ModelParam *p = &g->params[i];
            Dtype gd = model_states(g, p)->dt[STATE_GRAD];
            memcpy(first + off, p->grad, p->numel * dtype_bytes(gd)); /* CPU backend: host memory */
            if (p->kind == PK_WTE || p->kind == PK_WPE || p->kind == PK_LM_HEAD) {
                CHECK_EQ_INT(gd, DT_BF16);
                uint64_t nz = 0;
                for (uint64_t j = 0; j < p->numel; j++) nz += elem_load(p->grad, gd, j) != 0.0;
                CHECKF(nz > 0, "%s: %s gradient all zero", spec.name, model_param_name(p->kind));
            }
            off += p->numel * dtype_bytes(gd);
        }
        CHECKF(model_grads(g, in, tgt, &l2, &e) == ST_OK, "%s", e.msg);
        CHECK(l1 == l2);
        CHECK_EQ_INT(zero_calls, 2);
        CHECK_EQ_U64(zero_bytes, stage_bytes);
        bk->memset0 = zero_orig;
        off = 0;
        for (uint32_t i = 0; first && i < g->nparams; i++) {
            const ModelParam *p = &g->params[i];
            uint64_t b = p->numel * dtype_bytes(model_states(g, p)->dt[STATE_GRAD]);
            CHECKF(!memcmp(first + off, p->grad, b), "%s %s (layer %d): the second backward's gradient differs",
                   spec.name, model_param_name(p->kind), p->layer);
            off += b;
        }
        free(first);
        model_destroy(g);
    }
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

static void test_staged_grads_zeroed(void)
{
    ModelSpec m = fx_gpt();
    grads_twice(m, 10240);
    m.tied_embeddings = 0;
    grads_twice(m, 18432);
    grads_twice(fx_llama(), 16384);
}

/* ---- a traced model gives back everything ------------------------------------------------------------------ */

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2(); /* glibc's count for the main arena (this thread's allocations) */
    return mi.uordblks + mi.hblkhd;
}

/* model_trace_enable (an FP8 recipe) allocates the scaling trace: per bank (forward: 2 x 4 linears x 2 layers =
 * 16 slots, backward 8) three float arrays, amax, scale_used and scale_next: 3 x (16 + 8) x 4 = 288 B a model.
 * model_destroy frees them all: 64 models of the GPT fixture (te-fp8) created, traced and destroyed after the first 8
 * one must leave at most 4 KiB (allocator noise) more in use. Freeing only the forward amax would leave 64 x
 * (288 - 64) = 14,336 B; leaving both scale_next arrays, 64 x (64 + 32) = 6,144 B (malloc's chunk headers
 * besides). */
static void test_trace_freed(void)
{
    ModelSpec spec = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECKF(comm_single_create(&comm, &e) == ST_OK, "%s", e.msg);
    CHECK(bk && comm);
    size_t before = 0;
    for (int i = 0; bk && comm && i < 72; i++) {
        Model *g = NULL;
        CHECKF(fx_model(&spec, &r, 1, 1, NULL, bk, comm, &g, &e) == ST_OK, "%s", e.msg);
        if (!g) break;
        if (i == 0) {
            CHECK_EQ_U64(g->sc.fwd.n, 16);
            CHECK_EQ_U64(g->sc.bwd.n, 8);
        }
        CHECKF(model_trace_enable(g, &e) == ST_OK, "%s", e.msg);
        CHECK(g->trace && g->tr_bwd.scale_next != NULL);
        model_destroy(g);
        /* after 8 models: what stays for good (measured: the heap grows by 4,416 B over the first 5 models as the
         * CPU backend's and the C library's lazily sized buffers settle, then not at all over the next 60) */
        if (i == 7) before = heap_in_use();
    }
    size_t after = heap_in_use();
    CHECKF(after <= before + 4096, "64 traced models: %zu bytes more in use (%zu -> %zu)", after - before, before,
           after);
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

/* ---- how each memory term is checked ----------------------------------------------------------------------- */

/* The 25 terms of a dense plan, each a row of the comparison, checked as the executor can measure it (the
 * measurement places 1,000 + t bytes for term t):
 *   states, FP8 copies, scales (persistent, in the arena)   exact, measured 1,000 + t
 *   the saved activations                                  exact (the plan itemizes what the executor saves)
 *   the transient peak                                     a bound
 *   the GEMM workspace (carved from the arena)             exact when the backend has one (measured its
 *                                                          1,022 B), else shown: "n/a: backend has no GEMM
 *                                                          workspace", nothing measured
 *   communicator buffers, CUDA context, fragmentation      shown, nothing measured: "n/a on the cpu backend"
 *      (outside the arena)                                 on the CPU, "not measured in the arena" on a device
 * Every row: planned = the plan's bytes (has_planned), section memory, bytes. The executor's own terms with
 * bytes placed (XT_IO = MT_COUNT_ = 33: token ids 1,033 B, the rotary table 1,034 B) follow as shown rows without a plan: "not in
 * the plan". */
typedef enum { M_EXACT_PLACED = 0, M_BOUND, M_WORKSPACE, M_OUTSIDE } TermRule;

static void check_memory_rows(const Plan *p, Measurement *ms, int on_device, uint64_t workspace)
{
    static const TermRule rule[MT_WEIGHT_EXPERT] = {
        [MT_WEIGHT_GEMM] = M_EXACT_PLACED,   [MT_WEIGHT_OTHER] = M_EXACT_PLACED,  [MT_FP8_ROWWISE] = M_EXACT_PLACED,
        [MT_FP8_COLWISE] = M_EXACT_PLACED,   [MT_MASTER_GEMM] = M_EXACT_PLACED,   [MT_MASTER_OTHER] = M_EXACT_PLACED,
        [MT_GRAD_GEMM] = M_EXACT_PLACED,     [MT_GRAD_OTHER] = M_EXACT_PLACED,    [MT_OPTIM_M_GEMM] = M_EXACT_PLACED,
        [MT_OPTIM_M_OTHER] = M_EXACT_PLACED, [MT_OPTIM_V_GEMM] = M_EXACT_PLACED,  [MT_OPTIM_V_OTHER] = M_EXACT_PLACED,
        [MT_SCALE_GEMM] = M_EXACT_PLACED,    [MT_SCALE_BLOCK] = M_EXACT_PLACED,   [MT_SCALE_STATE] = M_EXACT_PLACED,
        [MT_ACT_LAYER_HP] = M_EXACT_PLACED,  [MT_ACT_LAYER_FP8] = M_EXACT_PLACED, [MT_ACT_ATTN] = M_EXACT_PLACED,
        [MT_ACT_MASK] = M_EXACT_PLACED,      [MT_ACT_OUTPUT] = M_EXACT_PLACED,    [MT_TRANSIENT] = M_BOUND,
        [MT_COMM_BUFFER] = M_OUTSIDE,        [MT_WORKSPACE] = M_WORKSPACE,        [MT_CUDA_CONTEXT] = M_OUTSIDE,
        [MT_FRAGMENTATION] = M_OUTSIDE};
    static Comparison c;
    ms->on_device = on_device, ms->gemm_workspace_bytes = workspace;
    for (int t = 0; t < ARENA_TERMS; t++) ms->placed[t] = 1000 + (uint64_t)t;
    compare(p, ms, NULL, &c);
    for (int t = 0; t < MT_WEIGHT_EXPERT; t++) {
        const MeasureRow *r = fx_row(&c, mem_term_name((MemTermId)t));
        const char *what = mem_term_name((MemTermId)t);
        TermRule k = rule[t];
        MeasureMode mode = k == M_BOUND                     ? MEASURE_BOUND
                           : k == M_OUTSIDE                 ? MEASURE_INFO
                           : k == M_WORKSPACE && !workspace ? MEASURE_INFO
                                                            : MEASURE_EXACT;
        const char *note = k == M_WORKSPACE && !workspace ? "n/a: backend has no GEMM workspace"
                           : k != M_OUTSIDE               ? NULL
                           : on_device                    ? "not measured in the arena"
                                                          : "n/a on the cpu backend";
        CHECKF(r->section == CMP_MEMORY && r->kind == UNIT_BYTES, "%s: section %d kind %d", what, r->section, r->kind);
        CHECKF(r->mode == mode, "%s (device %d, workspace %llu): mode %d, want %d", what, on_device,
               (unsigned long long)workspace, r->mode, mode);
        CHECKF(r->has_planned && r->planned == (double)p->mem[t].bytes, "%s: planned %d %.0f", what, r->has_planned,
               r->planned);
        int measured = mode != MEASURE_INFO;
        CHECKF(r->has_measured == measured && (!measured || r->measured == 1000.0 + t), "%s: measured %d %.0f", what,
               r->has_measured, r->measured);
        CHECKF(note ? r->note && !strcmp(r->note, note) : !r->note, "%s: note '%s', want '%s'", what,
               r->note ? r->note : "(none)", note ? note : "(none)");
    }
    static const char *const own[2] = {"io", "rope"};
    for (int k = 0; k < 2; k++) {
        const MeasureRow *r = NULL;
        for (int i = 0; i < c.n; i++)
            if (c.rows[i].section == CMP_MEMORY && c.rows[i].has_measured && c.rows[i].measured == 1033.0 + k)
                r = &c.rows[i];
        CHECKF(r != NULL, "no row for the executor's %s term", own[k]);
        if (!r) continue;
        CHECK(!r->has_planned && r->mode == MEASURE_INFO && r->note && !strcmp(r->note, "not in the plan"));
        CHECK_STR(r->category, "activation");
    }
}

static void test_compare_memory_rows(void)
{
    static Plan p;
    static Measurement ms;
    Backend *bk = cmp_fixture("te-fp8", 1, &p, &ms); /* FP8 copies and scales: every term's rule in play */
    if (!bk) return;
    CHECK_EQ_INT(MT_WEIGHT_EXPERT, 25);
    CHECK_EQ_INT(XT_IO, 33); /* after router_bias, the planner's last term */
    check_memory_rows(&p, &ms, 0, 0);
    check_memory_rows(&p, &ms, 1, 0);
    check_memory_rows(&p, &ms, 1, 4096);
    cmp_done(bk, &ms);
}

/* ---- a micro-batch's tokens fit 32 bits ------------------------------------------------------------------- */

/* The executor counts a micro-batch's tokens (mbs x seq) in 32 bits: more than 2^32 - 1 is refused by name. A GPT
 * fixture plan with mbs and seq set by hand (the planner is not asked: model_check alone):
 *   65,537 x 65,536 = 2^32 + 2^16 = 4,295,032,832 > 4,294,967,295: refused (ST_USAGE), the product in the message;
 *   65,535 x 65,537 = (2^16 - 1)(2^16 + 1) = 2^32 - 1 = 4,294,967,295: the largest accepted;
 *   131,072 x 2 = 262,144 (a sum mbs + seq would be 131,074): accepted; 2 x 2^31 = 2^32: refused. */
static void test_microbatch_tokens_bound(void)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    Err e = {0};
    CHECKF(fx_plan(&m, &r, 1, 1, &p, &e) == ST_OK, "%s", e.msg);
    CHECKF(model_check(&p, &e) == ST_OK, "%s", e.msg);
    static const struct {
        uint32_t mbs, seq;
        Status want;
        const char *msg;
    } c[] = {{65537, 65536, ST_USAGE, "--mbs x --seq = 4295032832 tokens per micro-batch is too many"},
             {65535, 65537, ST_OK, NULL},
             {131072, 2, ST_OK, NULL},
             {2, 2147483648u, ST_USAGE, "--mbs x --seq = 4294967296 tokens per micro-batch is too many"}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        p.in.mbs = c[k].mbs, p.seq = c[k].seq;
        e = (Err){0};
        Status st = model_check(&p, &e);
        CHECKF(st == c[k].want, "mbs %u seq %u: status %d (%s), want %d", c[k].mbs, c[k].seq, st, e.msg, c[k].want);
        if (c[k].msg) CHECK_STR(e.msg, c[k].msg);
    }
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "3", 1); /* before the pool's first use: test_pool_after_fork counts 3 */
    RUN(test_pool_after_fork);
    RUN(test_gemm_ld_past_int);
    RUN(test_report_sections);
    RUN(test_compare_device_rows);
    RUN(test_staged_grads_zeroed);
    RUN(test_trace_freed);
    RUN(test_compare_memory_rows);
    RUN(test_microbatch_tokens_bound);
    return test_summary();
}
