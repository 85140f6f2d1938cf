/* tests/unit/test_run_measure.c — the measurement path of `fp8plan run` on a
 * GPU (exec/measure/measurement.c with exec/measure/device_measure.c, judged by
 * check/compare.c), driven on the CPU: a "GPU" that is the CPU
 * reference backend with scripted measurement hooks — device memory that
 * grows with what the backend allocates, timestamps whose phase durations
 * follow a script (a slow warm-up step, one slower timed step), and
 * per-category device times — runs a tiny model through measure_step, the
 * same call the command makes. The rows must carry exactly the scripted figures:
 * memory per point, medians without the warm-up, spreads, tokens/s, model
 * TFLOP/s, MFU against the matched catalog GPU, and the step-time verdict. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/plan_link.h"
#include "check/compare.h"
#include "exec/measure/measurement.h"
#include "reports/run_report.h"
#include "test.h"
#include "support/exec_fixtures.h"
#include "support/fixtures.h"

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
 * model_step records them; step 0 (warm-up) takes 10x, step 3 takes 1.2x. */
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
    /* model_step: phase p runs from MODEL_MARK_FIRST + 2p to + 2p + 1; each begin
     * comes after a host wait, hook and launch gap (GAP), which no phase counts */
    uint32_t k = id - MODEL_MARK_FIRST, p = k / 2;
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

/* models/'s catalog, read once (support/fixtures.c: a file that does not parse ends the test program). */
static Catalog *load_catalog(void)
{
    static Catalog *c;
    if (!c) c = fx_catalog();
    return c;
}

typedef struct {
    Backend *bk;
    Comm *comm;
    Model *g;
    ModelSpec spec; /* the plan's model: it outlives run() (plan.in.model points here) */
    Plan plan;
    Measurement ms;
    Comparison cmp;
} Run;

/* The command's sequence: backend, device, catalog match, plan, communicator,
 * model, steps; then the comparison. */
static int run_tiny(Run *r, Backend *bk, uint32_t steps)
{
    Catalog *cat = load_catalog();
    if (!cat) return -1;
    Err e;
    memset(r, 0, sizeof *r);
    r->bk = bk;
    if (measure_init(&r->ms, bk, steps, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    measure_match(&r->ms, cat);
    ExecOverrides ov = {.layers = 1, .hidden = 32, .heads = 2, .seq = 16, .vocab = 64};
    PlanInput in;
    const GpuSpec *gpu = r->ms.peak.gpu ? r->ms.peak.gpu : catalog_gpu(cat, "h100-sxm");
    ModelHyper h = model_hyper_default();
    if (exec_model(catalog_model(cat, "gpt2-124m"), &ov, &r->spec, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    exec_plan_input(&in, &r->spec, gpu, catalog_recipe(cat, "te-fp8"), 2, 1, catalog_stack(cat, "fp8plan"));
    if (plan_build(&in, &r->plan, &e) || comm_single_create(&r->comm, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    measure_after_comm(&r->ms, bk);
    if (model_create(&r->plan, &h, bk, r->comm, &r->g, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    measure_after_model(&r->ms, r->g);
    uint64_t n = model_step_tokens(r->g);
    int32_t *tok = malloc(n * sizeof *tok), *tgt = malloc(n * sizeof *tgt);
    for (uint32_t k = 0; k < steps; k++) {
        float loss;
        fx_tokens(r->g, k + 1, tok, tgt);
        if (measure_step(&r->ms, r->g, tok, tgt, &loss, &e)) {
            CHECKF(0, "step %u: %s", k + 1, e.msg);
            break;
        }
    }
    free(tok), free(tgt);
    measure_finish(&r->ms, r->g);
    compare(&r->plan, &r->ms, NULL, &r->cmp);
    return 0;
}

static void run_free(Run *r)
{
    measure_free(&r->ms);
    model_destroy(r->g);
    if (r->comm) r->comm->destroy(r->comm);
}

/* Rows of one section. */
static int count(const Comparison *c, CompareSection sec, const char *category)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        n += c->rows[i].section == sec && (!category || !strcmp(c->rows[i].category, category));
    return n;
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
    CHECK(r.ms.dev.have && r.ms.dev.st == ST_OK);
    CHECK_EQ_INT(r.ms.steps, 5);
    CHECK_EQ_INT(r.ms.cat_steps, 5);
    CHECK(r.ms.phase_device);
    CHECK(r.ms.peak.gpu && !strcmp(r.ms.peak.gpu->name, "h200"));
    CHECK_STR(r.plan.in.gpu->name, "h200");
    const Comparison *c = &r.cmp;

    /* memory: the driver's counts at each point */
    uint64_t arena = r.g->arena.bytes;
    CHECK_EQ_INT(count(c, CMP_MEMORY, "device"), 7);
    CHECK_NEAR(fx_row(c, "device_used")->measured, (double)(600 * MiB + arena + 8 * MiB), 0.0);
    CHECK_NEAR(fx_row(c, "device_used")->planned, (double)r.plan.total_bytes, 0.0);
    CHECK_STR(fx_row(c, "device_used")->note, "cudaMemGetInfo peak vs the plan's total, every term");
    /* the context counts the kernels the first step loaded, not the scratch it grew */
    CHECK_NEAR(fx_row(c, "device_cuda_context")->measured, (double)(605 * MiB), 0.0);
    CHECK_NEAR(fx_row(c, "device_comm_buffer")->measured, 0.0, 0.0);
    CHECK_NEAR(fx_row(c, "device_arena")->measured, (double)arena, 0.0);
    CHECK_NEAR(fx_row(c, "device_outside_arena")->measured, (double)(3 * MiB), 0.0);
    CHECK_NEAR(fx_row(c, "device_grew_backward")->measured, (double)(3 * MiB), 0.0);
    CHECK_NEAR(fx_row(c, "device_grew_forward")->measured, (double)(5 * MiB), 0.0);

    /* time: medians of steps 2..5 (factors 1, 1, 1.2, 1 → median 1, spread 0.2) */
    CHECK_EQ_INT(count(c, CMP_TIME, NULL), 9);
    const char *phase[4] = {"forward", "backward", "communication", "optimizer"};
    for (int k = 0; k < 4; k++) {
        const MeasureRow *x = fx_row(c, phase[k]);
        CHECK_NEAR(x->measured, DUR[k], 1e-12);
        CHECK(x->has_spread);
        CHECK_NEAR(x->spread, 0.2, 1e-9);
    }
    /* what each phase row is compared with, and how it was timed */
    const MeasureRow *fw = fx_row(c, "forward"), *cm = fx_row(c, "communication"), *op = fx_row(c, "optimizer");
    const TimeBreakdown *tb = &r.plan.time;
    CHECK(!fw->has_planned && !strcmp(fw->note, "phase not split in the plan"));
    CHECK(cm->has_planned &&
          cm->planned == tb->dp_comm_s + tb->tp_comm_s + tb->pp_comm_s + tb->cp_comm_s + tb->other_s);
    CHECK(op->has_planned && op->planned == tb->optimizer_s);
    CHECK_STR(cm->note, "device time (timestamps)");
    CHECK_STR(op->note, "device time (timestamps)");
    const char *cat[BK_OPCAT_COUNT] = {"gpu_gemm", "gpu_kernels", "gpu_optimizer", "gpu_comm"};
    for (int k = 0; k < BK_OPCAT_COUNT; k++) {
        const MeasureRow *x = fx_row(c, cat[k]);
        CHECK_NEAR(x->measured, CAT[k], 1e-12);
        CHECK_NEAR(x->spread, 0.2, 1e-9);
    }
    CHECK_NEAR(fx_row(c, "gpu_gemm")->planned, r.plan.time.gemm_s, 0.0);
    const MeasureRow *step = fx_row(c, "step");
    const double STEP = DUR[0] + DUR[1] + DUR[2] + DUR[3];
    CHECK_NEAR(step->measured, STEP, 1e-12);
    CHECK(step->mode == MEASURE_TOL && step->tol == 0.15);
    CHECK(step->verdict == VERDICT_OUTSIDE); /* a tiny model's plan is microseconds */
    CHECK(c->failed >= 1);
    static Comparison c2;
    r.plan.time.step_s = STEP / 1.10; /* the plan 10 % fast: inside ±15 % */
    compare(&r.plan, &r.ms, NULL, &c2);
    CHECK(fx_row(&c2, "step")->verdict == VERDICT_OK);
    r.plan.time.step_s = STEP / 1.20; /* 20 % fast: outside */
    compare(&r.plan, &r.ms, NULL, &c2);
    CHECK(fx_row(&c2, "step")->verdict == VERDICT_OUTSIDE);
    Tolerances loose = {.step_time = 0.25, .device_used = 0.05}; /* the tolerance is the caller's */
    compare(&r.plan, &r.ms, &loose, &c2);
    CHECK(fx_row(&c2, "step")->verdict == VERDICT_OK);

    /* throughput and MFU against the H200's dense peaks (989 and 1979 TFLOP/s), and the steps taken */
    CHECK_EQ_INT(count(c, CMP_RATE, NULL), 5);
    double flops = r.plan.model_flops_step / STEP;
    CHECK_NEAR(fx_row(c, "tokens_per_s")->measured, 2.0 * 16 / STEP, 1e-6);
    CHECK_NEAR(fx_row(c, "model_tflops")->measured, flops * 1e-12, 1e-12);
    CHECK_NEAR(fx_row(c, "mfu_bf16")->measured, 100.0 * flops / 989e12, 1e-12);
    CHECK_NEAR(fx_row(c, "mfu_fp8")->measured, 100.0 * flops / 1979e12, 1e-12);
    CHECK_STR(fx_row(c, "mfu_bf16")->unit, "%");
    CHECK(fx_row(c, "mfu_bf16")->verdict == VERDICT_INFO); /* shown, never failing */
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
    CHECK(!r.ms.dev.have && !r.ms.phase_device && r.ms.cat_steps == 0);
    const Comparison *c = &r.cmp;
    CHECK_EQ_INT(count(c, CMP_MEMORY, "device"), 0);
    CHECK_EQ_INT(count(c, CMP_TIME, NULL), 5);
    CHECK(fx_row(c, "step")->mode == MEASURE_INFO);
    CHECK(fx_row(c, "forward")->has_measured && fx_row(c, "forward")->has_spread);
    CHECK_EQ_INT(count(c, CMP_RATE, NULL), 3); /* tokens/s, model TFLOP/s, steps taken */
    /* all 3 steps asked for were taken: shown as such, never failing */
    const MeasureRow *st = fx_row(c, "completed_steps");
    CHECK_NEAR(st->planned, 3.0, 0.0);
    CHECK_NEAR(st->measured, 3.0, 0.0);
    CHECK(st->mode == MEASURE_INFO && st->verdict == VERDICT_INFO);
    CHECK_STR(measure_verdict_text(st), "every requested step was taken");
    /* a run stopped after 2 of them says so (the measurement's cap is the steps asked for) */
    static Comparison part;
    r.ms.steps = 2;
    compare(&r.plan, &r.ms, NULL, &part);
    CHECK_NEAR(fx_row(&part, "completed_steps")->measured, 2.0, 0.0);
    CHECK_STR(measure_verdict_text(fx_row(&part, "completed_steps")),
              "STOPPED EARLY: every row covers only the steps taken");
    r.ms.steps = 3;
    CHECK_EQ_INT(c->failed, 0);
    CHECK(c->exact_ok);
    /* planned on a host profile (calibrate --backend cpu): every phase has its own planned figure and is checked
     * within the step's tolerance, as the step (the communication phase shown: each collective has its row) */
    static GpuSpec hostg;
    static Comparison hc;
    const GpuSpec *was = r.plan.in.gpu;
    hostg = *was, hostg.host = 1, r.plan.in.gpu = &hostg;
    compare(&r.plan, &r.ms, NULL, &hc);
    const TimeBreakdown *tb = &r.plan.time;
    const char *ph[4] = {"forward", "backward", "optimizer", "communication"};
    const double want[4] = {tb->fwd_s, tb->bwd_s, tb->optimizer_s,
                            tb->dp_comm_s + tb->tp_comm_s + tb->pp_comm_s + tb->cp_comm_s + tb->other_s};
    CHECK(want[0] != want[2] && want[1] != want[2] && want[0] != want[3]); /* the rows can tell them apart */
    for (int k = 0; k < 4; k++) {
        const MeasureRow *x = fx_row(&hc, ph[k]);
        CHECKF(x->has_planned && x->planned == want[k], "%s: planned %g, expected %g", ph[k], x->planned, want[k]);
        if (k < 3) {
            CHECK_STR(x->note, "host clock; checked (each phase, as the step)");
            CHECK(x->mode == MEASURE_TOL && x->tol == fx_row(&hc, "step")->tol);
        } else {
            CHECK(x->mode == MEASURE_INFO);
            CHECK_STR(x->note, "host clock; shown (each planned collective is checked on its own row)");
        }
    }
    /* FP8-LM's copies, cast once per step in the executor's optimizer phase (TimeBreakdown.opt_cast_s): the
     * optimizer row plans them beside the optimizer, 4.096e-6 s more; the step is not touched */
    r.plan.time.opt_cast_s = 4.096e-6;
    compare(&r.plan, &r.ms, NULL, &hc);
    CHECK_REL(fx_row(&hc, "optimizer")->planned, tb->optimizer_s + 4.096e-6, 1e-12);
    CHECK(fx_row(&hc, "step")->planned == tb->step_s);
    r.plan.time.opt_cast_s = 0;
    /* a step that agrees by cancellation is not a pass: every step's forward 30 % over the plan, its backward
     * and optimizer as planned, the step exactly the plan's — the step ok, the forward OUTSIDE, the run failed */
    static Measurement canc;
    canc = r.ms;
    for (uint32_t i = 0; i < canc.steps; i++) {
        canc.phase[PHASE_FWD][i] = 1.3 * tb->fwd_s, canc.phase[PHASE_BWD][i] = tb->bwd_s;
        canc.phase[PHASE_OPT][i] = tb->optimizer_s, canc.step_s[i] = tb->step_s;
    }
    compare(&r.plan, &canc, NULL, &hc);
    CHECK(fx_row(&hc, "step")->verdict == VERDICT_OK);
    CHECK(fx_row(&hc, "forward")->verdict == VERDICT_OUTSIDE);
    CHECK(fx_row(&hc, "backward")->verdict == VERDICT_OK && fx_row(&hc, "optimizer")->verdict == VERDICT_OK);
    CHECK(hc.failed >= 1);
    /* a pipeline stage's phases are not the plan's (its schedule interleaves them with waits): only the step */
    const uint32_t pp_was = r.plan.in.pp;
    r.plan.in.pp = 2;
    compare(&r.plan, &canc, NULL, &hc);
    CHECK(fx_row(&hc, "forward")->mode == MEASURE_INFO && fx_row(&hc, "step")->mode == MEASURE_TOL);
    CHECK_STR(fx_row(&hc, "forward")->note, "host clock; shown (a pipeline stage: the step is checked)");
    r.plan.in.pp = pp_was;
    CHECK(fx_row(&hc, "step")->mode == MEASURE_TOL);
    r.plan.in.gpu = was;
    /* every persistent term of the plan is checked byte for byte against the arena */
    CHECK(fx_row(c, "weight_gemm")->mode == MEASURE_EXACT && fx_row(c, "weight_gemm")->verdict == VERDICT_OK);
    CHECK_NEAR(fx_row(c, "weight_gemm")->measured, (double)r.plan.mem[MT_WEIGHT_GEMM].bytes, 0.0);
    CHECK(fx_row(c, "cuda_context")->mode == MEASURE_INFO); /* the CPU has none */
    /* collectives: the plan has none on one GPU, the run's are counted per plan row */
    CHECK_NEAR(fx_row(c, "amax_allreduce")->measured, 0.0, 0.0); /* bus bytes on one rank */
    CHECK(fx_row(c, "amax_allreduce")->verdict == VERDICT_OK);
    CHECK_NEAR(fx_row(c, "amax_allreduce.calls")->measured, 2.0, 0.0); /* forward and backward bank */
    /* 1 layer: forward bank 2·4 floats, backward 4: (8 + 4)·4 bytes per step */
    CHECK_NEAR(fx_row(c, "amax_allreduce.payload")->measured, 48.0, 0.0);
    /* the 16 FP32 gradients in two calls (exec/model/model_grad_bucket.c), a class each: grad_gemm qkv.w 96x32,
     * proj.w 32x32, fc1.w 128x32, fc2.w 32x128: (3072 + 1024 + 4096 + 4096) x 4 = 49,152 B = 192 x 256, a region
     * its bytes fill, so grad_other (wte, wpe, the norms and biases, back to back) starts where it ends, but the
     * classes stay apart (as the plan counts them, planner/plan_comm.c plan_dp_buckets) */
    CHECK(r.g->nparams == 16);
    CHECK_NEAR(fx_row(c, "dp_grad_allreduce.calls")->measured, 2.0, 0.0);
    /* the executor's own buffers the plan does not model: token ids, targets and losses of 2 x 16
     * tokens, 4 B each = 384 B, shown for information, never failing */
    const MeasureRow *io = fx_row(c, "io");
    CHECK(io->mode == MEASURE_INFO && io->has_measured == 1 && !io->has_planned);
    CHECK(io->measured == 384.0 && io->note && !strcmp(io->note, "not in the plan"));
    run_free(&r);
    cpu->destroy(cpu);
}

static void test_stats(void)
{
    const double v[6] = {9.0, 3.0, 1.0, 2.0, 4.0, 100.0};
    double m, s, t[6];
    measure_stats(v, 1, 5, t, &m, &s); /* 3 1 2 4 → median 2.5, spread 3/2.5 */
    CHECK_NEAR(m, 2.5, 0.0);
    CHECK_NEAR(s, 1.2, 1e-15);
    measure_stats(v, 1, 4, t, &m, &s); /* 3 1 2 → 2, spread 1 */
    CHECK_NEAR(m, 2.0, 0.0);
    CHECK_NEAR(s, 1.0, 0.0);
    measure_stats(v, 3, 3, t, &m, &s);
    CHECK(isnan(m) && isnan(s));
}

/* A host profile's plan over 2 DP ranks: each planned collective's time row is the median of its seconds per
 * step over the timed steps (the warm-up step left out, as the step row), beside the plan's calls x (latency +
 * bus bytes / bandwidth), checked within the step tolerance. Scripted per step (s), step 0 the warm-up:
 *   dp_grad_allreduce  1.00 | 0.20 0.30 0.25 0.90   timed sorted 0.20 0.25 0.30 0.90: median (0.25 + 0.30) / 2
 *                                                    = 0.275, spread (0.90 - 0.20) / 0.275 = 2.5454...
 *   amax_allreduce     0.05 | 0.01 0.01 0.03 0.02   sorted 0.01 0.01 0.02 0.03: median 0.015, spread 0.02 / 0.015
 * (The mean over the 5 steps would be 2.65 / 5 = 0.53 and 0.12 / 5 = 0.024.) collective_wait stays the mean wait
 * per step: 0.5 s over 5 steps = 0.1; each collective's own part of it beside its time row, shown, not planned:
 * dp_grad_allreduce.wait 0.35 s / 5 = 0.07, amax_allreduce.wait 0.15 s / 5 = 0.03. */
static void test_collective_time_rows(void)
{
    Catalog *cat = load_catalog();
    Backend *cpu = NULL;
    Err e;
    if (!cat || backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "setup: %s", cat ? e.msg : "catalog");
        return;
    }
    GpuSpec h = fx_gpu();
    h.host = 1, h.sm = 0, h.sms = 1, h.link = LINK_HOST, h.gpus_per_node = 2, h.link_lat = 2e-6;
    h.intra_bw = h.inter_bw = 1.5e9, h.elem_bw = 4e9;
    ExecOverrides ov = {.layers = 1, .hidden = 32, .heads = 2, .seq = 16, .vocab = 64};
    ModelSpec m;
    PlanInput in;
    static Plan p;
    if (exec_model(catalog_model(cat, "gpt2-124m"), &ov, &m, &e)) {
        CHECKF(0, "%s", e.msg);
        cpu->destroy(cpu);
        return;
    }
    exec_plan_input(&in, &m, &h, catalog_recipe(cat, "te-fp8"), 1, 1, catalog_stack(cat, "fp8plan"));
    exec_plan_dp(&in, 2, SHARD_NONE);
    static Measurement ms;
    if (plan_build(&in, &p, &e) || measure_init(&ms, cpu, 5, &e)) {
        CHECKF(0, "%s", e.msg);
        cpu->destroy(cpu);
        return;
    }
    CHECK(p.coll[CO_DP_GRAD_AR].ranks == 2 && p.coll[CO_AMAX_AR].ranks == 2 && p.world == 2);
    const double grad[5] = {1.0, 0.2, 0.3, 0.25, 0.9}, amax[5] = {0.05, 0.01, 0.01, 0.03, 0.02};
    ms.steps = 5;
    ms.ranks = 2;
    for (int i = 0; i < 5; i++) {
        ms.coll_s[(size_t)CO_DP_GRAD_AR * ms.cap + (size_t)i] = grad[i];
        ms.coll_s[(size_t)CO_AMAX_AR * ms.cap + (size_t)i] = amax[i];
        ms.step_s[i] = 1.0;
    }
    ms.coll[CO_DP_GRAD_AR].calls = 5, ms.coll[CO_DP_GRAD_AR].seconds = 2.65;
    ms.coll[CO_AMAX_AR].calls = 10, ms.coll[CO_AMAX_AR].seconds = 0.12;
    ms.coll_total.calls = 15, ms.coll_total.wait_s = 0.5;
    ms.coll[CO_DP_GRAD_AR].wait_s = 0.35, ms.coll[CO_AMAX_AR].wait_s = 0.15;
    static Comparison c;
    compare(&p, &ms, NULL, &c);
    const MeasureRow *g = fx_row(&c, "dp_grad_allreduce.time"), *a = fx_row(&c, "amax_allreduce.time");
    CHECK_NEAR(g->measured, 0.275, 1e-15);
    CHECK_NEAR(g->spread, 0.7 / 0.275, 1e-12);
    CHECK(g->has_planned && g->planned == p.coll[CO_DP_GRAD_AR].time_s && g->planned > 0);
    CHECK(g->mode == MEASURE_TOL && fabs(g->tol - 0.15) < 1e-12);
    CHECK_NEAR(a->measured, 0.015, 1e-15);
    CHECK_NEAR(a->spread, 0.02 / 0.015, 1e-12);
    CHECK(a->has_planned && a->planned == p.coll[CO_AMAX_AR].time_s);
    CHECK_NEAR(fx_row(&c, "collective_wait")->measured, 0.1, 1e-15);
    CHECK(fx_row(&c, "collective_wait")->has_measured && !fx_row(&c, "collective_wait")->has_planned);
    const MeasureRow *gw = fx_row(&c, "dp_grad_allreduce.wait"), *aw = fx_row(&c, "amax_allreduce.wait");
    CHECK_NEAR(gw->measured, 0.07, 1e-15);
    CHECK_NEAR(aw->measured, 0.03, 1e-15);
    CHECK(gw->has_measured && !gw->has_planned && gw->mode == MEASURE_INFO);
    CHECK(aw->has_measured && !aw->has_planned && aw->mode == MEASURE_INFO);
    CHECK(gw == g + 1 && aw == a + 1); /* each right after its time row */
    /* a collective the run never called is not measured (0 s per step is no figure) */
    ms.coll[CO_AMAX_AR].calls = 0;
    compare(&p, &ms, NULL, &c);
    CHECK(!fx_row(&c, "amax_allreduce.time")->has_measured);
    CHECK(!fx_row(&c, "amax_allreduce.wait")->has_measured);
    measure_free(&ms);
    cpu->destroy(cpu);
}

/* A rate row in the text tables: planned and measured values to 6 significant digits (%.6g), the full value
 * in the CSV (%.17g). Planned 1234.5678 -> "1234.57", measured 2000/3 = 666.666... -> "666.667" (7 digits
 * would give "666.6667"); the CSV keeps 666.66666666666663 (2000/3's double to 17 digits). */
static void test_report_rate_digits(void)
{
    static Comparison c;
    memset(&c, 0, sizeof c);
    c.n = 1;
    MeasureRow *r = &c.rows[0];
    r->section = CMP_RATE;
    snprintf(r->name, sizeof r->name, "tokens_per_s");
    r->category = "rate";
    r->kind = UNIT_VALUE;
    r->has_planned = r->has_measured = 1;
    r->planned = 1234.5678;
    r->measured = 2000.0 / 3.0;
    r->mode = MEASURE_INFO;
    r->note = "shown";
    r->unit = "tok/s";
    for (int fmt = 0; fmt < 2; fmt++) {
        Table *t = run_report_table(&c, fmt ? RUN_TABLE_ALL : RUN_TABLE_RATES);
        CHECK(t != NULL);
        if (!t) return;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        Err e;
        CHECK(f && table_write(t, fmt ? TABLE_CSV : TABLE_TEXT, f, &e) == ST_OK);
        if (f) fclose(f);
        if (buf && !fmt) {
            CHECK_CONTAINS(buf, "1234.57");
            CHECK_CONTAINS(buf, "666.667");
            CHECK(strstr(buf, "666.6667") == NULL);
        } else if (buf) {
            CHECK_CONTAINS(buf, ",1234.5678,666.66666666666663,tok/s,");
        }
        free(buf);
        table_free(t);
    }
}

/* The text tables' layout does not move with what a run measured (README quotes them; two runs of one
 * command print one layout): measured bytes as wide as the planned bytes column (here 1,233,125,376: 13
 * characters), measured seconds 10 ("%.6f" up to 999.999999 s), measured values 11 (the longest "%.6g" of
 * a positive number, "0.000123457"). Two runs: a step of 8.692874 s (8 characters) and of 49.463589 s (9),
 * 768 and 8,192 bytes, 3.68118 and 0.000516123 tokens/s. */
static void test_report_layout_fixed(void)
{
    static Comparison c;
    const double step[2] = {8.692874, 49.463589}, bytes[2] = {768, 8192}, tok[2] = {3.68118, 0.000516123};
    char *out[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int run = 0; run < 2; run++) {
        memset(&c, 0, sizeof c);
        cmp_set(cmp_row(&c, CMP_MEMORY, "comm_buffers", "overhead", UNIT_BYTES, MEASURE_INFO, "n/a"), 1, 1233125376.0,
                0, 0);
        cmp_set(cmp_row(&c, CMP_MEMORY, "io", "activation", UNIT_BYTES, MEASURE_INFO, "x"), 0, 0, 1, bytes[run]);
        cmp_set(cmp_row(&c, CMP_TIME, "step", "time", UNIT_SECONDS, MEASURE_INFO, "x"), 1, 0.001177, 1, step[run]);
        MeasureRow *r = cmp_row(&c, CMP_RATE, "tokens_per_s", "rate", UNIT_VALUE, MEASURE_INFO, "x");
        cmp_set(r, 1, 108720, 1, tok[run]);
        r->unit = "tok/s";
        measure_judge(c.rows, c.n);
        for (int k = 0; k < 2; k++) {
            Table *t = run_report_table(&c, k ? RUN_TABLE_RATES : RUN_TABLE_TERMS);
            size_t len = 0;
            FILE *f = open_memstream(&out[run][k], &len);
            Err e;
            CHECK(t && f && table_write(t, TABLE_TEXT, f, &e) == ST_OK);
            if (f) fclose(f);
            table_free(t);
        }
    }
    /* section 7, term 12 ("comm_buffers"), category 10 ("activation"), planned B 13, measured B 13, planned
     * s 8 ("0.001177"), measured s 10, spread 6 ("spread"; these rows have none), two blanks between:
     * "  8.692874" and " 49.463589" end at one column */
    CHECK_CONTAINS(out[0][0],
                   "memory   io            activation              -            768         -           -       -\n");
    CHECK_CONTAINS(out[1][0],
                   "memory   io            activation              -          8,192         -           -       -\n");
    CHECK_CONTAINS(out[0][0],
                   "time     step          time                    -              -  0.001177    8.692874       -\n");
    CHECK_CONTAINS(out[1][0],
                   "time     step          time                    -              -  0.001177   49.463589       -\n");
    /* term 12, unit 5, planned 7 ("planned"; 108720 is 6), measured 11 */
    CHECK_CONTAINS(out[0][1], "tokens_per_s  tok/s   108720      3.68118  x\n");
    CHECK_CONTAINS(out[1][1], "tokens_per_s  tok/s   108720  0.000516123  x\n");
    for (int k = 0; k < 2; k++) {
        /* every line of the header (up to the rule) the same both times */
        const char *a = out[0][k] ? out[0][k] : "", *b = out[1][k] ? out[1][k] : "";
        const char *ra = strstr(a, "\n-"), *rb = strstr(b, "\n-");
        CHECK(ra && rb && ra - a == rb - b && !strncmp(a, b, (size_t)(ra - a)));
        free(out[0][k]);
        free(out[1][k]);
    }
}

int main(void)
{
    RUN(test_stats);
    RUN(test_scripted_gpu);
    RUN(test_cpu_has_no_device_rows);
    RUN(test_collective_time_rows);
    RUN(test_report_rate_digits);
    RUN(test_report_layout_fixed);
    return test_summary();
}
