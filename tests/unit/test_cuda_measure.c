/* tests/unit/test_cuda_measure.c — the device measurements of a GPU run
 * (exec/measure/device_measure.c) and their rows in the comparison
 * (check/compare.c), driven by a scripted backend whose hooks return
 * known numbers, and the match of device names to the shipped GPU catalog
 * (its sms column for the SM share). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/measurement.h"
#include "exec/measure/device_measure.h"
#include "test.h"
#include "util/fileio.h"

/* A backend with only the measurement hooks: memory in use follows a script,
 * op_times reports fixed seconds per category. */
typedef struct {
    uint64_t total, used;
    int timing, calls;
} Fake;

static Status fake_mem(Backend *bk, uint64_t *fr, uint64_t *tot, Err *e)
{
    (void)e;
    Fake *f = bk->impl;
    *tot = f->total;
    *fr = f->total - f->used;
    return ST_OK;
}

static Status fake_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)bk, (void)e;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "NVIDIA H200");
    out->sm_count = 132;
    return ST_OK;
}

static Status fake_times(Backend *bk, int enable, double s[BK_OPCAT_COUNT], Err *e)
{
    (void)e;
    Fake *f = bk->impl;
    if (s) {
        double v[BK_OPCAT_COUNT] = {0.100, 0.020, 0.010, 0.001};
        for (int i = 0; i < BK_OPCAT_COUNT; i++) s[i] = f->timing ? v[i] : 0.0;
    }
    f->timing = enable;
    f->calls++;
    return ST_OK;
}

static void test_rows_from_the_driver_counts(void)
{
    const uint64_t MiB = 1ull << 20;
    Fake f = {.total = 140000 * MiB, .used = 600 * MiB};
    Backend bk = {.name = "fake", .impl = &f, .mem_info = fake_mem, .device_info = fake_info, .op_times = fake_times};
    static Plan p;
    static Measurement ms;
    static GpuSpec gpu = {.name = "h200"};
    memset(&p, 0, sizeof p);
    memset(&ms, 0, sizeof ms);
    p.in.gpu = &gpu;
    p.total_bytes = 20000 * MiB;
    p.mem[MT_CUDA_CONTEXT].bytes = 512 * MiB;
    p.mem[MT_COMM_BUFFER].bytes = 0;
    p.mem[MT_FRAGMENTATION].bytes = 900 * MiB;
    ms.arena_bytes = 18000 * MiB;
    ms.on_device = 1;

    DevMeasure m;
    devm_init(&m, &bk); /* context: 600 MiB */
    CHECK(m.have && m.st == ST_OK);
    CHECK_STR(m.info.name, "NVIDIA H200");
    f.used += 10 * MiB; /* NCCL */
    devm_sample(&m, &bk, DEVM_AFTER_COMM);
    f.used += 18000 * MiB; /* arena */
    devm_sample(&m, &bk, DEVM_AFTER_MODEL);
    for (int k = 0; k < 3; k++) {
        double s[BK_OPCAT_COUNT] = {0};
        devm_step_begin(&m, &bk);
        devm_phase(&m, &bk, -1);
        devm_phase(&m, &bk, PHASE_FWD);
        f.used += k == 1 ? 700 * MiB : 0; /* scratch grows in the second step's backward */
        devm_phase(&m, &bk, PHASE_BWD);
        f.used += k == 0 ? 64 * MiB : 0; /* NCCL connects at its first collective */
        devm_phase(&m, &bk, PHASE_COMM);
        devm_phase(&m, &bk, PHASE_OPT);
        CHECK(devm_step_end(&m, &bk, s));
        CHECK_NEAR(s[BK_OPCAT_GEMM], 0.100, 0.0);
        CHECK_NEAR(s[BK_OPCAT_COMM], 0.001, 0.0);
    }
    CHECK_EQ_U64(m.used[DEVM_STEP], (600 + 10 + 18000 + 700 + 64) * MiB);
    CHECK_EQ_U64(m.grew[PHASE_BWD], 700 * MiB);
    CHECK_EQ_U64(m.grew[PHASE_COMM], 64 * MiB);
    CHECK_EQ_U64(m.grew[PHASE_FWD] + m.grew[PHASE_OPT], 0);
    static Comparison c;
    ms.dev = m;
    compare(&p, &ms, NULL, &c);
    MeasureRow *rows = NULL;
    int n = 0;
    for (int i = 0; i < c.n; i++)
        if (!strcmp(c.rows[i].category, "device")) {
            if (!rows) rows = &c.rows[i];
            n++;
        }
    CHECK_EQ_INT(n, 6);
    if (n != 6) return;
    CHECK_STR(rows[0].name, "device_used");
    CHECK(rows[0].mode == MEASURE_TOL && rows[0].tol == 0.05);
    CHECK_NEAR(rows[0].measured, (double)(19374 * MiB), 0.0);
    CHECK_NEAR(rows[1].measured, (double)(600 * MiB), 0.0);   /* context */
    CHECK_NEAR(rows[2].measured, (double)(74 * MiB), 0.0);    /* communicator + its first collective */
    CHECK_NEAR(rows[3].measured, (double)(18000 * MiB), 0.0); /* the arena */
    CHECK_NEAR(rows[4].measured, (double)(700 * MiB), 0.0);   /* outside the arena */
    CHECK_STR(rows[5].name, "device_grew_backward");
    CHECK_NEAR(rows[5].measured, (double)(700 * MiB), 0.0);
    for (int i = 1; i < n; i++) CHECK(rows[i].mode == MEASURE_INFO);
    /* 19374 MiB against a 20000 MiB plan is 3.1 % under: inside ±5 % */
    CHECK(rows[0].verdict == VERDICT_OK);
    f.used += 2000 * MiB;
    devm_sample(&m, &bk, DEVM_STEP);
    ms.dev = m;
    compare(&p, &ms, NULL, &c);
    for (int i = 0; i < c.n; i++) /* 21374 MiB: 6.9 % over */
        if (!strcmp(c.rows[i].name, "device_used")) CHECK(c.rows[i].verdict == VERDICT_OUTSIDE);
}

/* The context figure is taken after the first step has loaded the library's
 * kernels (CUDA loads modules lazily): by hand, 600 MiB with the backend up;
 * the first forward loads 40 MiB of kernels, the first backward grows 8 MiB of
 * private scratch (reported by device_info) and the first collective 64 MiB of
 * NCCL buffers. Context 600 + 40 = 640 MiB; communicator 10 + 64 = 74 MiB;
 * outside the arena 8 MiB (the scratch); peak 600+10+1000+40+8+64 = 1722 MiB. */
static uint64_t lazy_scratch;

static Status fake_info_scratch(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    Status st = fake_info(bk, out, e);
    out->scratch_bytes = lazy_scratch;
    return st;
}

static void test_context_after_lazy_loading(void)
{
    const uint64_t MiB = 1ull << 20;
    Fake f = {.total = 140000 * MiB, .used = 600 * MiB};
    Backend bk = {
        .name = "fake", .impl = &f, .mem_info = fake_mem, .device_info = fake_info_scratch, .op_times = fake_times};
    static Plan p;
    static Measurement ms;
    static Comparison c;
    static GpuSpec gpu = {.name = "h200"};
    memset(&p, 0, sizeof p);
    memset(&ms, 0, sizeof ms);
    p.in.gpu = &gpu;
    p.total_bytes = 1700 * MiB;
    ms.arena_bytes = 1000 * MiB;
    lazy_scratch = 0;
    DevMeasure m;
    devm_init(&m, &bk);
    f.used += 10 * MiB;
    devm_sample(&m, &bk, DEVM_AFTER_COMM);
    f.used += 1000 * MiB;
    devm_sample(&m, &bk, DEVM_AFTER_MODEL);
    for (int k = 0; k < 2; k++) {
        double s[BK_OPCAT_COUNT];
        devm_step_begin(&m, &bk);
        devm_phase(&m, &bk, -1);
        f.used += k == 0 ? 40 * MiB : 0; /* lazily loaded kernels */
        devm_phase(&m, &bk, PHASE_FWD);
        if (k == 0) f.used += 8 * MiB, lazy_scratch = 8 * MiB;
        devm_phase(&m, &bk, PHASE_BWD);
        f.used += k == 0 ? 64 * MiB : 0;
        devm_phase(&m, &bk, PHASE_COMM);
        devm_phase(&m, &bk, PHASE_OPT);
        CHECK(devm_step_end(&m, &bk, s));
    }
    CHECK_EQ_U64(m.lazy, 40 * MiB);
    ms.dev = m;
    compare(&p, &ms, NULL, &c);
    static const struct {
        const char *name;
        uint64_t mib;
    } want[] = {{"device_used", 1722},
                {"device_cuda_context", 640},
                {"device_comm_buffer", 74},
                {"device_arena", 1000},
                {"device_outside_arena", 8}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const MeasureRow *r = NULL;
        for (int i = 0; i < c.n; i++)
            if (!strcmp(c.rows[i].name, want[k].name)) r = &c.rows[i];
        CHECKF(r, "row %s", want[k].name);
        if (r) CHECK_NEAR(r->measured, (double)(want[k].mib * MiB), 0.0);
    }
}

static void test_no_hooks_no_rows(void)
{
    Backend bk = {.name = "cpu"};
    DevMeasure m;
    devm_init(&m, &bk);
    devm_sample(&m, &bk, DEVM_AFTER_MODEL);
    devm_step_begin(&m, &bk);
    devm_phase(&m, &bk, PHASE_FWD);
    double sec[BK_OPCAT_COUNT];
    CHECK(!devm_step_end(&m, &bk, sec));
    static Plan p;
    static Measurement ms;
    static Comparison c;
    static GpuSpec gpu = {.name = "h100-sxm"};
    p.in.gpu = &gpu;
    CHECK(!m.have);
    ms.dev = m;
    compare(&p, &ms, NULL, &c);
    for (int i = 0; i < c.n; i++) CHECKF(strcmp(c.rows[i].category, "device"), "device row %s", c.rows[i].name);
}

static void test_device_names_match_the_catalog(void)
{
    Catalog *c = calloc(1, sizeof *c);
    char *buf = NULL;
    size_t len = 0;
    Err e;
    if (!c || file_read_all("models/gpus.csv", &buf, &len, &e) || catalog_parse_gpus(c, buf, len, "gpus.csv", &e)) {
        CHECKF(0, "loading models/gpus.csv: %s", e.msg);
        free(c), free(buf);
        return;
    }
    struct {
        const char *device, *row;
    } cases[] = {
        {"NVIDIA H200", "h200"},        {"NVIDIA H100 80GB HBM3", "h100-sxm"}, {"NVIDIA H100 PCIe", "h100-pcie"},
        {"NVIDIA H800", "h800"},        {"NVIDIA A100-SXM4-80GB", "a100-sxm"}, {"NVIDIA L40S", "l40s"},
        {"Tesla V100-SXM2-16GB", NULL}, {"NVIDIA GeForce RTX 4090", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const GpuSpec *gpu = devm_match_gpu(c, cases[i].device);
        if (cases[i].row)
            CHECKF(gpu && !strcmp(gpu->name, cases[i].row), "%s -> %s", cases[i].device, gpu ? gpu->name : "none");
        else
            CHECKF(!gpu, "%s matched %s", cases[i].device, gpu ? gpu->name : "");
    }
    double b, f;
    const GpuSpec *h200 = devm_match_gpu(c, "NVIDIA H200");
    devm_mfu(h200, 494.5e12, &b, &f); /* half the dense BF16 peak of 989 TFLOP/s */
    CHECK_NEAR(b, 50.0, 1e-9);
    CHECK_NEAR(f, 100.0 * 494.5 / 1979.0, 1e-9);
    devm_mfu(NULL, 1e12, &b, &f);
    CHECK(isnan(b) && isnan(f));

    /* by name, compute capability and SM count */
    struct {
        const char *device;
        int cc, sms;
        const char *row; /* NULL: unknown */
        double share;
    } dev[] = {
        {"NVIDIA H200", 90, 132, "h200", 1.0},
        {"NVIDIA H100 80GB HBM3", 90, 132, "h100-sxm", 1.0},
        {"NVIDIA H100 80GB HBM3 MIG 3g.40gb", 90, 60, "h100-sxm", 60.0 / 132.0}, /* a MIG slice */
        {"NVIDIA H100 PCIe", 90, 114, "h100-pcie", 1.0},
        {"NVIDIA H100 80GB HBM3", 90, 0, "h100-sxm", 1.0},  /* SM count not reported: the part's full peaks */
        {"NVIDIA H100 80GB HBM3", 90, -1, "h100-sxm", 1.0}, /* nor a negative one (never a negative share) */
        {"NVIDIA H100 80GB HBM3", 90, 200, NULL, 0},        /* more SMs than the part: another part */
        {"NVIDIA H100 80GB HBM3", 80, 132, NULL, 0},        /* capability of another generation */
        {"NVIDIA GeForce RTX 4090", 89, 128, NULL, 0},      /* no row */
    };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        BackendDeviceInfo info;
        memset(&info, 0, sizeof info);
        snprintf(info.name, sizeof info.name, "%s", dev[i].device);
        info.cc_major = dev[i].cc / 10;
        info.cc_minor = dev[i].cc % 10;
        info.sm_count = dev[i].sms;
        DevmPeak pk;
        devm_peak(c, &info, &pk);
        if (!dev[i].row) {
            CHECKF(!pk.gpu && isnan(pk.peak_bf16) && isnan(pk.peak_fp8) && !strncmp(pk.why, "unknown", 7),
                   "%s (%d SMs, cc %d): %s", dev[i].device, dev[i].sms, dev[i].cc, pk.why);
            continue;
        }
        CHECKF(pk.gpu && !strcmp(pk.gpu->name, dev[i].row), "%s -> %s", dev[i].device, pk.why);
        if (!pk.gpu) continue;
        CHECK_NEAR(pk.sm_share, dev[i].share, 1e-12);
        CHECK_NEAR(pk.peak_bf16, pk.gpu->flops_bf16 * dev[i].share, 1.0);
        CHECK_NEAR(pk.peak_fp8, pk.gpu->flops_fp8 * dev[i].share, 1.0);
    }
    free(buf);
    free(c);
}

int main(void)
{
    RUN(test_rows_from_the_driver_counts);
    RUN(test_context_after_lazy_loading);
    RUN(test_no_hooks_no_rows);
    RUN(test_device_names_match_the_catalog);
    return test_summary();
}
