/* tests/unit/test_run_measure.c — the measurement path of `fp8plan run` on a
 * GPU (exec/measure/run_log.c with exec/measure/device_measure.c), driven on the CPU: a "GPU"
 * that is the CPU reference backend with scripted measurement hooks — device
 * memory that grows with what the backend allocates, timestamps whose phase
 * durations follow a script (a slow warm-up step, one slower timed step), and
 * per-category device times — runs a tiny model through run_step, the same
 * call the command makes. The rows must carry exactly the scripted figures:
 * memory per point, medians without the warm-up, spreads, tokens/s, model
 * TFLOP/s, MFU against the matched catalog GPU, and the step-time verdict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/plan_link.h"
#include "exec/measure/run_log.h"
#include "test.h"
#include "support/exec_fixtures.h"
#include "util/fileio.h"

static const uint64_t MiB = 1ull << 20;

/* The scripted device (one at a time). */
static struct {
    Backend *cpu;
    uint64_t total, used;
    double clock, at[BACKEND_MARKS];
    uint64_t scratch; /* private scratch the backend reports (device_info) */
    uint32_t step;    /* steps whose last timestamp was recorded */
    int timing;
} dev;

/* Phase durations (s): forward, backward, communication, optimizer, in the order
 * gpt_step records them; step 0 (warm-up) takes 10x, step 3 takes 1.2x. */
static const double DUR[4] = {0.010, 0.020, 0.001, 0.005};
static const double GAP = 0.0007; /* between phases: outside every phase time */
static const double CAT[BK_OPCAT_COUNT] = {0.025, 0.008, 0.004, 0.001};
static double factor(uint32_t step) { return step == 0 ? 10.0 : step == 3 ? 1.2 : 1.0; }

static Status f_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    (void)bk;
    Status st = dev.cpu->alloc(dev.cpu, bytes, out, e);
    if (!st) dev.used += bytes;
    return st;
}

static Status f_mem(Backend *bk, uint64_t *fr, uint64_t *tot, Err *e)
{
    (void)bk, (void)e;
    *tot = dev.total;
    *fr = dev.total - dev.used;
    return ST_OK;
}

static Status f_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)bk, (void)e;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "NVIDIA H200");
    out->cc_major = 9;
    out->sm_count = 132;
    out->total_bytes = dev.total;
    out->scratch_bytes = dev.scratch;
    return ST_OK;
}

static Status f_mark(Backend *bk, uint32_t id, Err *e)
{
    (void)bk;
    if (id >= BACKEND_MARKS) return err_set(e, ST_USAGE, "mark %u", id);
    /* gpt_step: phase p runs from GPT_MARK_FIRST + 2p to + 2p + 1; each begin
     * comes after a host wait, hook and launch gap (GAP), which no phase counts */
    uint32_t k = id - GPT_MARK_FIRST, p = k / 2;
    if (k < 8 && k % 2 == 0) dev.clock += GAP;
    if (k < 8 && k % 2 == 1) dev.clock += DUR[p] * factor(dev.step);
    if (k == 1 && dev.step == 0) dev.used += 5 * MiB; /* library kernels loaded lazily by the first forward */
    if (k == 3 && dev.step == 0) dev.used += 3 * MiB, dev.scratch = 3 * MiB; /* scratch grown in the first backward */
    dev.at[id] = dev.clock;
    if (k == 7) dev.step++;
    return ST_OK;
}

static Status f_elapsed(Backend *bk, uint32_t from, uint32_t to, double *s, Err *e)
{
    (void)bk, (void)e;
    *s = dev.at[to] - dev.at[from];
    return ST_OK;
}

static Status f_times(Backend *bk, int enable, double s[BK_OPCAT_COUNT], Err *e)
{
    (void)bk, (void)e;
    for (int i = 0; s && i < BK_OPCAT_COUNT; i++) s[i] = dev.timing ? CAT[i] * factor(dev.step - 1) : 0.0;
    dev.timing = enable;
    return ST_OK;
}

static Catalog *load_catalog(void)
{
    static Catalog c;
    const char *files[3] = {"models/models.csv", "models/gpus.csv", "models/recipes.csv"};
    for (int i = 0; i < 3; i++) {
        char *buf = NULL;
        size_t len = 0;
        Err e;
        Status st = file_read_all(files[i], &buf, &len, &e);
        if (!st)
            st = i == 0   ? catalog_parse_models(&c, buf, len, files[i], &e)
                 : i == 1 ? catalog_parse_gpus(&c, buf, len, files[i], &e)
                          : catalog_parse_recipes(&c, buf, len, files[i], &e);
        free(buf);
        if (st) {
            CHECKF(0, "%s: %s", files[i], e.msg);
            return NULL;
        }
    }
    return &c;
}

typedef struct {
    Backend *bk;
    Comm *comm;
    Gpt *g;
    Plan plan;
    DevMeasure dm;
    DevmPeak peak;
    RunLog log;
} Run;

/* The command's sequence: backend, device, catalog match, plan, communicator,
 * model, steps. */
static int run_tiny(Run *r, Backend *bk, uint32_t steps)
{
    Catalog *cat = load_catalog();
    if (!cat) return -1;
    Err e;
    memset(r, 0, sizeof *r);
    r->bk = bk;
    devm_init(&r->dm, bk);
    if (r->dm.have) devm_peak(cat, &r->dm.info, &r->peak);
    ExecOverrides ov = {.layers = 1, .hidden = 32, .heads = 2, .seq = 16, .vocab = 64};
    ModelSpec m;
    ExecRecipe er;
    PlanInput in;
    GptShape shape;
    uint64_t planned[TERM_COUNT];
    const GpuSpec *gpu = r->peak.gpu ? r->peak.gpu : catalog_gpu(cat, "h100-sxm");
    GptHyper h = gpt_hyper_default();
    if (exec_model(catalog_model(cat, "gpt2-124m"), &ov, &m, &e) ||
        exec_recipe_from_plan(catalog_recipe(cat, "te-fp8"), &er, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    exec_plan_input(&in, &m, gpu, catalog_recipe(cat, "te-fp8"), 2);
    if (plan_build(&in, &r->plan, &e) || comm_single_create(&r->comm, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    devm_sample(&r->dm, bk, DEVM_AFTER_COMM);
    exec_shape_from_plan(&r->plan, &shape);
    exec_planned_bytes(&r->plan, planned);
    if (gpt_create(&shape, &er, &h, bk, r->comm, planned, &r->g, &e) || run_log_init(&r->log, steps, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    devm_sample(&r->dm, bk, DEVM_AFTER_MODEL);
    uint64_t n = (uint64_t)shape.batch * shape.seq;
    int32_t *tok = malloc(n * sizeof *tok), *tgt = malloc(n * sizeof *tgt);
    for (uint32_t k = 0; k < steps; k++) {
        float loss;
        fx_tokens(&shape, k + 1, tok, tgt);
        if (run_step(r->g, &r->dm, &r->log, tok, tgt, &loss, &e)) {
            CHECKF(0, "step %u: %s", k + 1, e.msg);
            break;
        }
    }
    free(tok), free(tgt);
    return 0;
}

static void run_free(Run *r)
{
    run_log_free(&r->log);
    gpt_destroy(r->g);
    if (r->comm) r->comm->destroy(r->comm);
}

static const MeasureRow *find(const MeasureRow *rows, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name)) return &rows[i];
    CHECKF(0, "no row %s", name);
    return NULL;
}

static void test_scripted_gpu(void)
{
    Backend *cpu = NULL;
    Err e;
    if (backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    Backend fake = *cpu; /* the CPU's operations (and its impl), the device's hooks */
    fake.name = "fakegpu";
    fake.alloc = f_alloc;
    fake.mem_info = f_mem;
    fake.device_info = f_info;
    fake.mark = f_mark;
    fake.elapsed = f_elapsed;
    fake.op_times = f_times;
    memset(&dev, 0, sizeof dev);
    dev.cpu = cpu;
    dev.total = 140000 * MiB;
    dev.used = 600 * MiB; /* context */
    static Run r;
    if (run_tiny(&r, &fake, 5)) return;
    CHECK(r.dm.have && r.dm.st == ST_OK);
    CHECK_EQ_INT(r.log.steps, 5);
    CHECK_EQ_INT(r.log.cat_steps, 5);
    CHECK(r.log.phase_device);
    CHECK(r.peak.gpu && !strcmp(r.peak.gpu->name, "h200"));
    CHECK_STR(r.plan.in.gpu->name, "h200");

    /* memory: the driver's counts at each point */
    MeasureRow mem[DEVM_MAX_ROWS];
    int nm = devm_rows(&r.dm, &r.plan, r.g, mem);
    uint64_t arena = r.g->arena.bytes;
    CHECK_NEAR(find(mem, nm, "device_used")->measured, (double)(600 * MiB + arena + 8 * MiB), 0.0);
    CHECK_NEAR(find(mem, nm, "device_used")->planned, (double)r.plan.total_bytes, 0.0);
    /* the context counts the kernels the first step loaded, not the scratch it grew */
    CHECK_NEAR(find(mem, nm, "device_cuda_context")->measured, (double)(605 * MiB), 0.0);
    CHECK_NEAR(find(mem, nm, "device_comm_buffer")->measured, 0.0, 0.0);
    CHECK_NEAR(find(mem, nm, "device_arena")->measured, (double)arena, 0.0);
    CHECK_NEAR(find(mem, nm, "device_outside_arena")->measured, (double)(3 * MiB), 0.0);
    CHECK_NEAR(find(mem, nm, "device_grew_backward")->measured, (double)(3 * MiB), 0.0);
    CHECK_NEAR(find(mem, nm, "device_grew_forward")->measured, (double)(5 * MiB), 0.0);

    /* time: medians of steps 2..5 (factors 1, 1, 1.2, 1 → median 1, spread 0.2) */
    MeasureRow tim[RUN_MAX_TIME_ROWS];
    int nt = run_time_rows(&r.log, &r.plan, r.g, tim);
    CHECK_EQ_INT(nt, 9);
    const char *phase[4] = {"forward", "backward", "communication", "optimizer"};
    for (int k = 0; k < 4; k++) {
        const MeasureRow *x = find(tim, nt, phase[k]);
        CHECK_NEAR(x->measured, DUR[k], 1e-12);
        CHECK(x->has_spread);
        CHECK_NEAR(x->spread, 0.2, 1e-9);
    }
    const char *cat[BK_OPCAT_COUNT] = {"gpu_gemm", "gpu_kernels", "gpu_optimizer", "gpu_comm"};
    for (int k = 0; k < BK_OPCAT_COUNT; k++) {
        const MeasureRow *x = find(tim, nt, cat[k]);
        CHECK_NEAR(x->measured, CAT[k], 1e-12);
        CHECK_NEAR(x->spread, 0.2, 1e-9);
    }
    CHECK_NEAR(find(tim, nt, "gpu_gemm")->planned, r.plan.time.gemm_s, 0.0);
    const MeasureRow *step = find(tim, nt, "step");
    const double STEP = DUR[0] + DUR[1] + DUR[2] + DUR[3];
    CHECK_NEAR(step->measured, STEP, 1e-12);
    CHECK(step->mode == MEASURE_TOL && step->tol == 0.15);
    CHECK(step->verdict == VERDICT_OUTSIDE); /* a tiny model's plan is microseconds */
    r.plan.time.step_s = STEP / 1.10;        /* the plan 10 % fast: inside ±15 % */
    nt = run_time_rows(&r.log, &r.plan, r.g, tim);
    CHECK(find(tim, nt, "step")->verdict == VERDICT_OK);
    r.plan.time.step_s = STEP / 1.20; /* 20 % fast: outside */
    nt = run_time_rows(&r.log, &r.plan, r.g, tim);
    CHECK(find(tim, nt, "step")->verdict == VERDICT_OUTSIDE);

    /* throughput and MFU against the H200's dense peaks (989 and 1979 TFLOP/s) */
    MeasureRow rate[RUN_MAX_RATE_ROWS];
    int nr = run_rate_rows(&r.log, &r.plan, r.g, &r.peak, rate);
    CHECK_EQ_INT(nr, 4);
    double flops = r.plan.model_flops_step / STEP;
    CHECK_NEAR(find(rate, nr, "tokens_per_s")->measured, 2.0 * 16 / STEP, 1e-6);
    CHECK_NEAR(find(rate, nr, "model_tflops")->measured, flops * 1e-12, 1e-12);
    CHECK_NEAR(find(rate, nr, "mfu_bf16")->measured, 100.0 * flops / 989e12, 1e-12);
    CHECK_NEAR(find(rate, nr, "mfu_fp8")->measured, 100.0 * flops / 1979e12, 1e-12);
    CHECK_STR(find(rate, nr, "mfu_bf16")->unit, "%");
    CHECK_EQ_INT(measure_judge(rate, nr), 0); /* shown, never failing */
    run_free(&r);
    cpu->destroy(cpu);
}

/* The CPU reference: phases by host clock, no device rows, no MFU. */
static void test_cpu_has_no_device_rows(void)
{
    Backend *cpu = NULL;
    Err e;
    if (backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    static Run r;
    if (run_tiny(&r, cpu, 3)) return;
    CHECK(!r.dm.have && !r.log.phase_device && r.log.cat_steps == 0);
    MeasureRow mem[DEVM_MAX_ROWS], tim[RUN_MAX_TIME_ROWS], rate[RUN_MAX_RATE_ROWS];
    CHECK_EQ_INT(devm_rows(&r.dm, &r.plan, r.g, mem), 0);
    int nt = run_time_rows(&r.log, &r.plan, r.g, tim);
    CHECK_EQ_INT(nt, 5);
    CHECK(find(tim, nt, "step")->mode == MEASURE_INFO);
    CHECK(find(tim, nt, "forward")->has_measured && find(tim, nt, "forward")->has_spread);
    CHECK_EQ_INT(run_rate_rows(&r.log, &r.plan, r.g, NULL, rate), 2);
    run_free(&r);
    cpu->destroy(cpu);
}

static void test_stats(void)
{
    const double v[6] = {9.0, 3.0, 1.0, 2.0, 4.0, 100.0};
    double m, s;
    run_stats(v, 1, 5, &m, &s); /* 3 1 2 4 → median 2.5, spread 3/2.5 */
    CHECK_NEAR(m, 2.5, 0.0);
    CHECK_NEAR(s, 1.2, 1e-15);
    run_stats(v, 1, 4, &m, &s); /* 3 1 2 → 2, spread 1 */
    CHECK_NEAR(m, 2.0, 0.0);
    CHECK_NEAR(s, 1.0, 0.0);
    run_stats(v, 3, 3, &m, &s);
    CHECK(isnan(m) && isnan(s));
}

int main(void)
{
    RUN(test_stats);
    RUN(test_scripted_gpu);
    RUN(test_cpu_has_no_device_rows);
    return test_summary();
}
