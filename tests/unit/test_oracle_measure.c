/* tests/unit/test_oracle_measure.c — a run's measurement log gives back all
 * the memory it takes: measure_init's arrays (loss, step time, 4 phases and
 * every operation category, one double or float per step each) are freed by
 * measure_free, checked through glibc's own accounting (mallinfo2) so that a
 * forgotten free fails this build, not only the sanitizer build (the medians'
 * scratch too); and the step statistics (median, spread), which sort a copy
 * in that scratch and leave the steps as they were; the MoE parts' rows a CPU
 * run gets against a host profile's plan.
 *
 * The expected figure is by hand: with 2^16 steps each array is at least
 * 2^16 x 4 B = 256 KiB, so one array left behind is 256 KiB or more of heap
 * or mmap in use; the bound allows 4 KiB of allocator noise. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exec/backend/backend.h"
#include "exec/measure/measurement.h"
#include "support/exec_fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static size_t in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* bytes handed out from the heap and in mmap'd blocks */
}

static void test_measure_frees_its_log(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    Measurement ms;
    /* once first: whatever the first call allocates for good (stdio, locale) is not counted */
    CHECKF(measure_init(&ms, bk, 1u << 16, &e) == ST_OK, "%s", e.msg);
    measure_free(&ms);
    size_t before = in_use();
    for (int i = 0; i < 4; i++) {
        CHECKF(measure_init(&ms, bk, 1u << 16, &e) == ST_OK, "%s", e.msg);
        CHECK(ms.loss != NULL && ms.step_s != NULL && ms.sorted != NULL && ms.cap == 1u << 16);
        int have = 0, zero = 1;
        for (int k = 0; k < 4; k++) have += ms.phase[k] != NULL, zero &= !ms.phase[k] || !ms.phase[k][65535];
        for (int k = 0; k < BK_OPCAT_COUNT; k++) have += ms.cat[k] != NULL, zero &= !ms.cat[k] || !ms.cat[k][65535];
        CHECKF(have == 4 + BK_OPCAT_COUNT, "%d of the %d per-step arrays allocated", have, 4 + BK_OPCAT_COUNT);
        CHECK(zero); /* zeroed to the last step */
        measure_free(&ms);
        int left = ms.loss != NULL || ms.step_s != NULL || ms.sorted != NULL || ms.cap != 0;
        for (int k = 0; k < 4; k++) left |= ms.phase[k] != NULL;
        for (int k = 0; k < BK_OPCAT_COUNT; k++) left |= ms.cat[k] != NULL;
        CHECK(!left);
    }
    size_t after = in_use();
    CHECKF(after <= before + 4096, "4 logs of 2^16 steps initialised and freed: %zu bytes more in use (%zu -> %zu)",
           after - before, before, after);
    bk->destroy(bk);
}

/* measure_stats: the median and the spread (max - min) / median of the steps from `from` on, by hand:
 *   {9, 1, 4, 2, 8} from 1 -> {1, 2, 4, 8}: median (2 + 4) / 2 = 3, spread (8 - 1) / 3 = 7/3
 *   the same from 0 -> {1, 2, 4, 8, 9}: median 4, spread (9 - 1) / 4 = 2
 *   nothing after `from`: NaN, NaN.
 * The sorted copy is made in the scratch (its first n - from values; the rest untouched) and the
 * steps are left as they were. */
static void test_measure_stats(void)
{
    const double v[5] = {9, 1, 4, 2, 8};
    double med, spread, t[6] = {-1, -1, -1, -1, -1, -1};
    measure_stats(v, 1, 5, t, &med, &spread);
    CHECK(med == 3.0 && fabs(spread - 7.0 / 3.0) < 1e-15);
    CHECK(t[0] == 1 && t[1] == 2 && t[2] == 4 && t[3] == 8 && t[4] == -1);
    measure_stats(v, 0, 5, t, &med, &spread);
    CHECK(med == 4.0 && spread == 2.0);
    CHECK(t[0] == 1 && t[1] == 2 && t[2] == 4 && t[3] == 8 && t[4] == 9 && t[5] == -1);
    CHECK(v[0] == 9 && v[1] == 1 && v[2] == 4 && v[3] == 2 && v[4] == 8);
    measure_stats(v, 5, 5, t, &med, &spread);
    CHECK(isnan(med) && isnan(spread));
}

#ifndef __SANITIZE_ADDRESS__ /* ASan reserves terabytes of address space: no room for a limit under it */
/* Bytes of address space this process has mapped (/proc/self/statm: size in pages). */
static size_t mapped(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f && fscanf(f, "%lu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* A log too large for the memory left: measure_init fails with ST_NOMEM naming the step count and frees what
 * it had allocated. The address space is capped at what is mapped + 384 MiB, so the loss array of 2^26 floats
 * (256 MiB) fits and the step times (2^26 doubles, 512 MiB) do not; a leaked loss array would stay in use. */
static void test_measure_init_out_of_memory(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_AS, &old) == 0);
    size_t cap = mapped() + (384u << 20), before = in_use();
    CHECK(cap > (384u << 20));
    struct rlimit lim = {cap, old.rlim_max};
    CHECK(old.rlim_cur == RLIM_INFINITY || old.rlim_cur > cap);
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
    Measurement ms;
    Status st = measure_init(&ms, bk, 1u << 26, &e);
    size_t during = in_use();
    CHECK(setrlimit(RLIMIT_AS, &old) == 0);
    CHECK_EQ_INT(st, ST_NOMEM);
    CHECK_CONTAINS(e.msg, "out of memory for a log of 67108864 steps");
    CHECKF(during <= before + 4096, "the failed log left %zu bytes in use", during - before);
    if (!st) measure_free(&ms);
    bk->destroy(bk);
}
#endif

/* measure_observe: the executor's log in the planner's vocabulary (check/observed.h). By hand: bus bytes
 * 300.0000002 over 3 steps are 100.00000007 per step, 100 whole bytes (the communicator's rounding); the
 * executor-only terms that held bytes are listed by name (io 64 B; rope_table held none, so it is left out);
 * each plan term keeps its bytes, and "held" says what the arena carves (the weights: yes; the CUDA
 * context, an overhead term the driver holds: no). */
static void test_measure_observe(void)
{
    static Measurement ms;
    memset(&ms, 0, sizeof ms);
    ms.steps = 3, ms.cap = 4, ms.first_step = 7, ms.tokens_per_step = 96;
    ms.placed[MT_WEIGHT_GEMM] = 4096, ms.placed[XT_IO] = 64;
    ms.coll[CO_DP_GRAD_AR].calls = 6, ms.coll[CO_DP_GRAD_AR].payload_bytes = 1200;
    ms.coll[CO_DP_GRAD_AR].bus_bytes = 300.0000002;
    ms.dev.grew[PHASE_BWD] = 512;
    snprintf(ms.comm, sizeof ms.comm, "single");
    Observed ob;
    measure_observe(&ms, &ob);
    CHECK_EQ_U64(ob.placed[MT_WEIGHT_GEMM], 4096);
    CHECK(ob.held[MT_WEIGHT_GEMM] == 1 && ob.held[MT_CUDA_CONTEXT] == 0);
    CHECK_EQ_INT(ob.nextra, 1);
    CHECK_STR(ob.extra[0].name, "io");
    CHECK_EQ_U64(ob.extra[0].bytes, 64);
    CHECK_EQ_U64(ob.coll[CO_DP_GRAD_AR].calls, 6);
    CHECK_EQ_U64(ob.coll[CO_DP_GRAD_AR].payload_bytes, 1200);
    CHECK(ob.coll[CO_DP_GRAD_AR].bus_step == 100.0);
    CHECK_EQ_U64(ob.dev.grew[PHASE_BWD], 512);
    CHECK(ob.steps == 3 && ob.cap == 4 && ob.first_step == 7 && ob.tokens_per_step == 96);
    CHECK_STR(ob.comm, "single");
}

/* The MoE layers' parts (check/compare_time.c moe_part_rows): scripted per step, step 0 the warm-up, each part's
 * median over steps 1-3 against the plan's term, checked within +-15 %. The oracle MoE model on a host row, the
 * fp8plan stack, one rank, one micro-batch; each part measured as planned x (the scripted factor), steps 1-3 at
 * x f, x f and x 3 f (median x f):
 *   moe_router 1.10 (+10 %: ok), moe_permute 1.20 (+20 %: OUTSIDE), expert_gemm 0.90 (-10 %: ok), moe_act_cast
 *   0.80 (-20 %: OUTSIDE); at 1 rank no ep_comm_exposed row; moe_other (the FP8 weights' casts) 0 in every step:
 *   no row. A run whose steps were not lapped (a GPU backend: moe_steps 0) gets none of them. */
static void test_moe_part_rows(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = {.name = "host", .host = 1, .sms = 1, .hbm_bytes = 1ull << 40, .hbm_bw = 1e11, .flops_bf16 = 1e10};
    g.flops_fp8 = g.flops_fp32 = g.mamf_bf16 = g.mamf_fp8 = 1e10, g.sustained = 1, g.link = LINK_HOST;
    g.gpus_per_node = 4, g.elem_bw = 1e9;
    Recipe r = ox_bf16(0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.mbs = 1, in.fusion = FUSE_FP8PLAN;
    static Plan p;
    p = ox_build(&in);
    Backend *cpu = NULL;
    Err e;
    static Measurement ms;
    if (backend_cpu_create(&cpu, &e) || measure_init(&ms, cpu, 4, &e)) {
        CHECKF(0, "setup: %s", e.msg);
        if (cpu) cpu->destroy(cpu);
        return;
    }
    const struct {
        const char *name;
        int part;
        double planned, f;
        Verdict v;
    } rows[] = {{"moe_router", MOE_PART_ROUTER, p.time.moe_router_s, 1.10, VERDICT_OK},
                {"moe_permute", MOE_PART_PERMUTE, p.time.moe_permute_s, 1.20, VERDICT_OUTSIDE},
                {"expert_gemm", MOE_PART_XGEMM, p.time.expert_gemm_s, 0.90, VERDICT_OK},
                {"moe_act_cast", MOE_PART_ACT, p.time.moe_act_s, 0.80, VERDICT_OUTSIDE}};
    ms.steps = 4, ms.moe_steps = 4;
    for (int i = 0; i < 4; i++) ms.step_s[i] = 1.0;
    for (unsigned k = 0; k < sizeof rows / sizeof *rows; k++) {
        const double v[4] = {9.0, rows[k].f, rows[k].f, 3.0 * rows[k].f};
        for (int i = 0; i < 4; i++) ms.moe[rows[k].part][i] = v[i] * rows[k].planned;
    }
    static Comparison c;
    compare(&p, &ms, NULL, &c);
    for (unsigned k = 0; k < sizeof rows / sizeof *rows; k++) {
        const MeasureRow *row = fx_row(&c, rows[k].name);
        CHECKF(rows[k].planned > 0 && row->has_planned && row->planned == rows[k].planned, "%s planned %g",
               rows[k].name, row->planned);
        CHECK_REL(row->measured, rows[k].f * rows[k].planned, 1e-12);
        CHECKF(row->mode == MEASURE_TOL && fabs(row->tol - 0.15) < 1e-12 && row->verdict == rows[k].v,
               "%s: verdict %d, want %d", rows[k].name, (int)row->verdict, (int)rows[k].v);
    }
    int extra = 0;
    for (int i = 0; i < c.n; i++)
        extra += !strcmp(c.rows[i].name, "ep_comm_exposed") || !strcmp(c.rows[i].name, "moe_other");
    CHECK_EQ_INT(extra, 0);
    ms.moe_steps = 0;
    compare(&p, &ms, NULL, &c);
    for (int i = 0; i < c.n; i++) CHECKF(strcmp(c.rows[i].name, "moe_router"), "row %d: moe_router unlapped", i);
    measure_free(&ms);
    cpu->destroy(cpu);
}

int main(void)
{
    RUN(test_measure_frees_its_log);
    RUN(test_measure_observe);
#ifndef __SANITIZE_ADDRESS__
    RUN(test_measure_init_out_of_memory);
#endif
    RUN(test_measure_stats);
    RUN(test_moe_part_rows);
    return test_summary();
}
