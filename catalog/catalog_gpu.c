/* catalog/catalog_gpu.c — models/gpus.csv: one row per GPU, or per host a CPU run is measured on (see
 * catalog.h); the column list, each column's reader and the rules between columns. */
#include <stddef.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog/catalog_cells.h"
#include "util/num.h"

/* The GpuSpec a reader's field belongs to (the readers that depend on compute_capability). */
#define GPU_OF(f, field) ((GpuSpec *)((char *)(f)-offsetof(GpuSpec, field)))

/* compute_capability: "9.0" style, or "cpu" for a host profile (GpuSpec.host). */
static Status cell_col_SM_OR_CPU(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    if (!strcmp(cell_text(c, col), "cpu")) return GPU_OF(f, sm)->host = 1, *(uint32_t *)f = 0, ST_OK;
    return cell_sm(c, col, f);
}

/* A rate in units of `unit` per second into per second: positive, or also 0 when allow_zero. */
static Status rate(Cur *c, const char *col, int allow_zero, double unit, double *out)
{
    double v = 0;
    Status st = cell_rate(c, col, allow_zero, &v);
    *out = v * unit;
    return st;
}
/* GB/s and dense TFLOP/s; lo 1: 0 is allowed (a GPU without FP8 tensor cores). */
static Status cell_col_GBPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)hi;
    return rate(c, col, lo > 0, 1e9, f);
}
static Status cell_col_TFLOPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)hi;
    return rate(c, col, lo > 0, 1e12, f);
}
/* The node links' GB/s: positive on a GPU; a host's may be 0 (no interconnect measured). */
static Status cell_col_INTRA_GBPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return rate(c, col, GPU_OF(f, intra_bw)->host, 1e9, f);
}
static Status cell_col_INTER_GBPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return rate(c, col, GPU_OF(f, inter_bw)->host, 1e9, f);
}
/* An optional rate column in GB/s (empty: 0, the GPU's hbm_gbps is used): elem_gbps, what the element-wise
 * kernels achieve; scaled_optim_gbps, the two-pass scaled-state optimizer's rate; o1_optim_gbps, MS-AMP O1's. */
static Status cell_col_OPT_GBPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    return *cell_text(c, col) ? cell_col_GBPS(c, col, f, size, lo, hi) : ST_OK;
}
static Status cell_col_COUNT(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return cell_count(c, col, f);
}
/* An optional byte count (empty: 0, not known): llc_bytes, a host's last-level cache. */
static Status cell_col_OPT_COUNT(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    return *cell_text(c, col) ? cell_col_COUNT(c, col, f, size, lo, hi) : ST_OK;
}
/* link_latency_us (optional column; empty: NCCL's latency model): the measured latency of one ring step. */
static Status cell_col_LATENCY(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    double us = 0;
    if (!*cell_text(c, col)) return ST_OK;
    Status st = cell_col_RANGE(c, col, &us, size, lo, hi);
    if (st) return st;
    if (!(us > 0)) return cell_bad(c, col, "'%s' must be positive (empty: NCCL's model)", cell_text(c, col));
    *(double *)f = us * 1e-6;
    return ST_OK;
}
CELL_COL_ENUM(LINK, link_parse, "nvlink, pcie or host")

/* gpus.csv's columns, in the file's order (catalog_cells.h: X(column, reader, field, lo, hi, opt)). The
 * rules between columns follow the list (parse_gpu). */
#define GPU_COLUMNS(X)                                                      \
    X(name, NAME, name, 0, 0, "")                                           \
    X(compute_capability, SM_OR_CPU, sm, 0, 0, "")                          \
    X(sms, U32, sms, 1, 1u << 16, "")                                       \
    X(hbm_bytes, COUNT, hbm_bytes, 0, 0, "")                                \
    X(hbm_gbps, GBPS, hbm_bw, 0, 0, "")                                     \
    X(bf16_tflops, TFLOPS, flops_bf16, 0, 0, "")                            \
    X(fp8_tflops, TFLOPS, flops_fp8, 1, 0, "")                              \
    X(fp32_tflops, TFLOPS, flops_fp32, 0, 0, "")                            \
    X(mamf_bf16_tflops, TFLOPS, mamf_bf16, 0, 0, "")                        \
    X(mamf_fp8_tflops, TFLOPS, mamf_fp8, 1, 0, "")                          \
    X(sustained, RANGE, sustained, 0.05, 1, "")                             \
    X(intra_link, LINK, link, 0, 0, "")                                     \
    X(intra_node_gbps, INTRA_GBPS, intra_bw, 0, 0, "")                      \
    X(inter_node_gbps, INTER_GBPS, inter_bw, 0, 0, "")                      \
    X(gpus_per_node, U32, gpus_per_node, 1, 1u << 20, "")                   \
    X(source, TEXT, source, 0, 0, "")                                       \
    X(link_latency_us, LATENCY, link_lat, 0, 1e6, "?")                      \
    X(elem_gbps, OPT_GBPS, elem_bw, 0, 0, "?")                              \
    X(scaled_optim_gbps, OPT_GBPS, scaled_optim_bw, 0, 0, "?")              \
    X(group_gemm_us, OPT_US, group_gemm_s, 0, 1e6, "?")                     \
    X(elem_norm_gbps, OPT_GBPS, elem_kind_bw[ELEM_NORM], 0, 0, "?")         \
    X(elem_act_gbps, OPT_GBPS, elem_kind_bw[ELEM_ACT], 0, 0, "?")           \
    X(elem_add_gbps, OPT_GBPS, elem_kind_bw[ELEM_ADD], 0, 0, "?")           \
    X(elem_cast_gbps, OPT_GBPS, elem_kind_bw[ELEM_CAST], 0, 0, "?")         \
    X(elem_xent_gbps, OPT_GBPS, elem_kind_bw[ELEM_XENT], 0, 0, "?")         \
    X(elem_amax_gbps, OPT_GBPS, elem_kind_bw[ELEM_AMAX], 0, 0, "?")         \
    X(elem_cast_row_gbps, OPT_GBPS, elem_kind_bw[ELEM_CAST_ROW], 0, 0, "?") \
    X(o1_optim_gbps, OPT_GBPS, o1_optim_bw, 0, 0, "?")                      \
    X(llc_bytes, OPT_COUNT, llc_bytes, 0, 0, "?")

const char *const catalog_gpu_columns = &(GPU_COLUMNS(CELL_COL_HEAD))[1]; /* past the first comma */

/* A number a reader took: its cell's value as written (the rules compare what the file says). */
static double cell_value(Cur *c, const char *col)
{
    double v = 0;
    return num_parse_double(cell_text(c, col), NUM_FINITE_ONLY, &v, NULL) ? 0 : v;
}

static Status parse_gpu(Cur *c, void *row)
{
    GpuSpec *rowp = row, *g = rowp;
    memset(g, 0, sizeof *g);
    Status st;
    GPU_COLUMNS(CELL_COL_READ)
    double bf16 = cell_value(c, "bf16_tflops"), fp8 = cell_value(c, "fp8_tflops");
    double mb = cell_value(c, "mamf_bf16_tflops"), mf = cell_value(c, "mamf_fp8_tflops");
    double intra = cell_value(c, "intra_node_gbps"), inter = cell_value(c, "inter_node_gbps");
    if ((g->link == LINK_HOST) != g->host)
        return cell_bad(c, "intra_link", "'%s': the link is host exactly when compute_capability is cpu",
                        cell_text(c, "intra_link"));
    if (g->host && (intra > 0) != (inter > 0))
        return cell_bad(c, "inter_node_gbps", "'%s': a host has no interconnect (both 0) or a measured one (both > 0)",
                        cell_text(c, "inter_node_gbps"));
    if (g->host && intra > 0 && !(g->link_lat > 0))
        return cell_bad(c, "link_latency_us", "'%s': a host's measured link needs its measured latency",
                        cell_text(c, "link_latency_us"));
    if (fp8 > 0 && g->sm < 89 && !g->host)
        return cell_bad(c, "fp8_tflops", "'%s' is given for a GPU below SM 8.9, which has no FP8 tensor cores",
                        cell_text(c, "fp8_tflops"));
    if (mb > bf16)
        return cell_bad(c, "mamf_bf16_tflops", "'%s' is above the BF16 peak %s", cell_text(c, "mamf_bf16_tflops"),
                        cell_text(c, "bf16_tflops"));
    if (mf > fp8 || (fp8 > 0 && mf == 0))
        return cell_bad(c, "mamf_fp8_tflops", "'%s' must be positive and at most the FP8 peak %s (0 without FP8)",
                        cell_text(c, "mamf_fp8_tflops"), cell_text(c, "fp8_tflops"));
    return ST_OK;
}

Status catalog_parse_gpus(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    return cell_parse_all(text, len, fname, catalog_gpu_columns, "name", parse_gpu, NULL, c->gpus, sizeof *c->gpus,
                          CATALOG_MAX_ROWS, &c->ngpus, e);
}
