/* tests/unit/test_calibrate_gpu.c — a GPU's profile (fp8plan calibrate --backend
 * cuda) as catalog rows, on the CPU: the row writing calibrate_rows.c shares with
 * the host profile gives a GPU row (the device's compute capability, SMs and
 * memory; the measured rates in the peak and MAMF columns, sustained 1; no
 * interconnect with one GPU, the NCCL link with two or more) that the
 * catalog parser reads back as a GPU, not a host. Figures chosen round, the
 * expected values written out by hand. */
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "catalog/catalog.h"
#include "test.h"

/* An H200-like profile: FP8 1.2e15, BF16 7e14, FP32 5e13 FLOP/s; AdamW 4e12 B/s, element-wise 3e12 B/s, FP8-LM's
 * optimizer 1.5e12 B/s;
 * launch 4 us; 150754820096 B of device memory; 132 SMs at compute capability 9.0. */
static Calibration gpu_figures(int ranks)
{
    Calibration c;
    memset(&c, 0, sizeof c);
    c.reps = 3;
    snprintf(c.backend, sizeof c.backend, "cuda");
    snprintf(c.device, sizeof c.device, "NVIDIA H200");
    c.cc_major = 9, c.cc_minor = 0, c.sms = 132;
    c.rate[CAL_PATH_FP8] = 1.2e15, c.rate[CAL_PATH_BF16] = 7e14, c.rate[CAL_PATH_FP32] = 5e13;
    c.mem_bw = 4e12, c.elem_bw = 3e12, c.scaled_optim_bw = 1.5e12, c.launch_s = 4e-6, c.mem_bytes = 150754820096ull,
    c.ranks = ranks;
    if (ranks > 1) c.link_bw = 3.5e11, c.link_lat = 5e-6;
    return c;
}

static void test_gpu_row_text(void)
{
    Err e = {0};
    char row[8192];
    Calibration c = gpu_figures(1);
    CHECKF(cal_gpu_row(&c, "gpu", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    /* name, cc, SMs, bytes, hbm GB/s 4000, BF16 700, FP8 1200, FP32 50 TFLOP/s, MAMF 700 1200, sustained 1,
     * link class, intra 0, inter 0 (one GPU: no bus), GPUs per node 1 */
    CHECK_CONTAINS(row, "gpu,9.0,132,150754820096,4000,700,1200,50,700,1200,1,nvlink,0,0,1,\"");
    CHECK_CONTAINS(row, "--backend cuda on NVIDIA H200");
    CHECK_CONTAINS(row, "FP8 (cuBLASLt E4M3/E5M2) 1.2e+06 GFLOP/s");
    CHECK_CONTAINS(row, "one GPU has no bus to measure");
    CHECK(strstr(row, "decoded to FP32") == NULL); /* the host's FP8 path, not a GPU's */
    /* the last columns: no latency (one GPU), element-wise 3000 GB/s, the scaled optimizer 1500 GB/s, no grouped GEMM's
     * cost, no element-wise kind measured apart, no MS-AMP O1 optimizer (these figures have none) */
    const char *tail = strrchr(row, '"');
    CHECK(tail && !strcmp(tail, "\",,3000,1500,,,,,,,,,,")); /* ... and no last-level cache (a GPU's) */
    Calibration none = gpu_figures(1); /* the scaled optimizer not measured: empty, not 0 (which no row takes) */
    none.scaled_optim_bw = 0;
    CHECKF(cal_gpu_row(&none, "gpu", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    tail = strrchr(row, '"');
    CHECK(tail && !strcmp(tail, "\",,3000,,,,,,,,,,,"));
    Calibration two = gpu_figures(2);
    CHECKF(cal_gpu_row(&two, "gpu", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, ",nvlink,350,350,2,\""); /* 3.5e11 B/s = 350 GB/s, two GPUs measured */
    CHECK_CONTAINS(row, "NCCL all-reduce over 2 ranks");
    tail = strrchr(row, '"');
    CHECK(tail && !strcmp(tail, "\",5,3000,1500,,,,,,,,,,")); /* latency 5 us */
    /* CPU ranks: the last-level cache calibrate read, 32 MiB = 33,554,432 B, the last column */
    two.llc_bytes = 33554432;
    CHECKF(cal_gpu_row(&two, "gpu", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    tail = strrchr(row, '"');
    CHECK(tail && !strcmp(tail, "\",5,3000,1500,,,,,,,,,,33554432"));
}

static void test_gpu_row_parses_as_gpu(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    if (!cat) return;
    Err e = {0};
    char row[8192], text[9000];
    Calibration c = gpu_figures(2);
    CHECK(cal_gpu_row(&c, "gpu", row, sizeof row, &e) == ST_OK);
    snprintf(text, sizeof text, "%s\n%s\n", cal_gpu_header, row);
    CHECKF(catalog_parse_gpus(cat, text, strlen(text), "gpus.csv", &e) == ST_OK, "%s", e.msg);
    const GpuSpec *g = catalog_gpu(cat, "gpu");
    CHECK(g != NULL);
    if (g) {
        CHECK(!g->host && g->link == LINK_NVLINK && g->sms == 132);
        CHECK_EQ_U64(g->hbm_bytes, 150754820096ull);
        CHECK_REL(g->flops_fp8, 1.2e15, 1e-6);
        CHECK_REL(g->scaled_optim_bw, 1.5e12, 1e-6);
        CHECK_REL(g->mamf_fp8, 1.2e15, 1e-6);
        CHECK_REL(g->flops_bf16, 7e14, 1e-6);
        CHECK_REL(g->flops_fp32, 5e13, 1e-6);
        CHECK_REL(g->hbm_bw, 4e12, 1e-6);
        CHECK_REL(g->elem_bw, 3e12, 1e-6);
        CHECK_REL(g->intra_bw, 3.5e11, 1e-6);
        CHECK_REL(g->link_lat, 5e-6, 1e-6);
        CHECK_REL(g->sustained, 1.0, 0);
        CHECK_EQ_U64(g->llc_bytes, 0); /* empty: not known */
    }
    /* the cache's bytes read back, and a cell that is not a byte count refused by its column */
    c.llc_bytes = 33554432;
    CHECK(cal_gpu_row(&c, "gpu", row, sizeof row, &e) == ST_OK);
    snprintf(text, sizeof text, "%s\n%s\n", cal_gpu_header, row);
    Catalog *c2 = calloc(1, sizeof *c2);
    if (c2 && catalog_parse_gpus(c2, text, strlen(text), "gpus.csv", &e) == ST_OK) {
        const GpuSpec *h = catalog_gpu(c2, "gpu");
        CHECK(h && h->llc_bytes == 33554432);
    } else {
        CHECKF(0, "%s", e.msg);
    }
    free(c2);
    char *end = strrchr(text, ',');
    if (end) snprintf(end, sizeof text - (size_t)(end - text), ",32M\n");
    c2 = calloc(1, sizeof *c2);
    if (c2) {
        CHECK(catalog_parse_gpus(c2, text, strlen(text), "gpus.csv", &e) != ST_OK);
        CHECK_CONTAINS(e.msg, "llc_bytes");
        CHECK_CONTAINS(e.msg, "32M");
    }
    free(c2);
    /* the stack row names the backend that measured the launch floor */
    StackSpec s = {.attn = ATTN_MATERIALIZED, .fusion = FUSE_FP8PLAN, .loss_bytes = 10, .launch_s = 3e-6};
    strcpy(s.name, "fp8plan");
    strcpy(s.source, "catalog text");
    CHECK(cal_stack_row(&s, &c, row, sizeof row, &e) == ST_OK);
    CHECK_CONTAINS(row, "fp8plan,materialized,");
    CHECK_CONTAINS(row, "calibrate --backend cuda");
    free(cat);
}

int main(void)
{
    RUN(test_gpu_row_text);
    RUN(test_gpu_row_parses_as_gpu);
    return test_summary();
}
