/* exec/measure/calibrate_rows.c — a host profile as catalog rows: the device
 * row of gpus.csv (compute_capability "cpu", link "host") and the "fp8plan"
 * stack's row of stacks.csv with the measured launch floor (see calibrate.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec/measure/calibrate_link.h"
#include "catalog/catalog.h"

const char *const cal_gpu_header =
    "name,compute_capability,sms,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,mamf_bf16_tflops,"
    "mamf_fp8_tflops,sustained,intra_link,intra_node_gbps,inter_node_gbps,gpus_per_node,source,link_latency_us,"
    "elem_gbps,scaled_optim_gbps,group_gemm_us,elem_norm_gbps,elem_act_gbps,elem_add_gbps,elem_cast_gbps,"
    "elem_xent_gbps,elem_amax_gbps,elem_cast_row_gbps,o1_optim_gbps,llc_bytes";

typedef struct {
    char *p;
    size_t size, len;
    int over;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->size - b->len)
        b->over = 1;
    else
        b->len += (size_t)n;
}

/* A byte count as the sweep's sizes read: 64 B, 16 KiB, 64 MiB (whole units), 26.1 MiB (from 1 MiB up). */
static void put_size(Buf *b, uint64_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    uint64_t v = n;
    while (u < 3 && v >= 1024 && v % 1024 == 0) v /= 1024, u++;
    if (u < 2 && n >= ((uint64_t)1 << 20))
        put(b, "%.1f MiB", (double)n / (double)((uint64_t)1 << 20));
    else
        put(b, "%llu %s", (unsigned long long)v, unit[u]);
}

/* A CSV text cell in double quotes, quotes doubled. */
static void put_quoted(Buf *b, const char *s)
{
    put(b, "\"");
    for (; *s && !b->over; s++) put(b, *s == '"' ? "\"\"" : "%c", *s);
    put(b, "\"");
}

static Status done(const Buf *b, const char *what, Err *e)
{
    return b->over ? err_set(e, ST_USAGE, "calibrate: the %s row does not fit %zu bytes", what, b->size) : ST_OK;
}

static const char *const path_names[CAL_PATHS] = {"FP8 (E4M3/E5M2 decoded to FP32)", "BF16", "FP32"};

/* A GPU's profile (calibrate --backend cuda) rather than a host's. */
static int is_gpu(const Calibration *c) { return c->backend[0] && strcmp(c->backend, "cpu") != 0; }

Status cal_gpu_row(const Calibration *c, const char *name, char *buf, size_t size, Err *e)
{
    Buf b = {buf, size, 0, 0};
    char src[1600];
    Buf s = {src, sizeof src, 0, 0};
    const int gpu = is_gpu(c);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t per_node = gpu ? (uint32_t)c->ranks : (uint32_t)(cores > c->ranks ? cores : c->ranks);
    if (!strncmp(c->judged, "NOISY", 5)) put(&s, "%s; ", c->judged); /* first: a user reading the row sees it */
    put(&s, "measured by fp8plan calibrate --backend %s%s%s (medians of %d repetitions%s): GEMM at one layer's shapes",
        gpu ? c->backend : "cpu", gpu ? " on " : "", gpu ? c->device : "", c->reps,
        gpu ? ", device time between CUDA events" : "");
    for (int p = 0; p < CAL_PATHS; p++)
        put(&s, "%s %s %.3g GFLOP/s (spread up to %.0f %%)", p ? ";" : ":",
            gpu && p == CAL_PATH_FP8 ? "FP8 (cuBLASLt E4M3/E5M2)" : path_names[p], c->rate[p] * 1e-9,
            100.0 * c->rate_spread[p]);
    put(&s,
        "; memory: AdamW streams %.3g GB/s (spread %.0f %%); element-wise kernels (norm, activation, residual add, "
        "FP8 cast+transpose, cross-entropy; weighted by their calls per micro-batch) %.3g GB/s (spread up to %.0f "
        "%%); FP8-LM's two-pass scaled-state optimizer %.3g GB/s of the planner's bytes (spread %.0f %%); launch floor "
        "%.3g us; ",
        c->mem_bw * 1e-9, 100.0 * c->mem_spread, c->elem_bw * 1e-9, 100.0 * c->elem_spread, c->scaled_optim_bw * 1e-9,
        100.0 * c->scaled_optim_spread, c->launch_s * 1e6);
    if (c->ranks > 1) {
        const int n = c->ncoll;
        put(&s, "link: the executor's %s all-reduce over %d ranks", gpu ? "NCCL" : "MPI", c->ranks);
        if (n >= 2) {
            put(&s, ", ");
            put_size(&s, c->coll[0].payload);
            put(&s, "-");
            put_size(&s, c->coll[n - 1].payload);
            put(&s, " (each call after the caches were evicted%s)", gpu ? "" : ", one rank arriving late");
        }
        put(&s, ": latency %.3g us per ring step", c->link_lat * 1e6);
        if (n >= 2) {
            put(&s, " (");
            put_size(&s, c->coll[0].payload);
            put(&s, ")");
        }
        put(&s, ", bus bandwidth %.3g GB/s", c->link_bw * 1e-9);
        if (n >= 2) {
            put(&s, " (");
            put_size(&s, c->coll[n - 2].payload);
            put(&s, " and ");
            put_size(&s, c->coll[n - 1].payload);
            put(&s, ", the largest the model's gradient all-reduce)");
        }
        if (gpu) put(&s, "; link class written as nvlink, not measured");
    } else {
        put(&s, "link: not measured (one rank%s; run under mpirun -np 2 or more): no interconnect",
            gpu ? ": one GPU has no bus to measure" : "");
    }
    if (c->judged[0] && strncmp(c->judged, "NOISY", 5)) put(&s, "; %s", c->judged);
    if (s.over) return done(&s, "source", e);
    /* rates: achieved, so peak = MAMF = measured and sustained 1; the BF16 column is the BF16 path */
    if (gpu)
        put(&b, "%s,%d.%d,%d,", name, c->cc_major, c->cc_minor, c->sms);
    else
        put(&b, "%s,cpu,1,", name);
    put(&b, "%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,1,%s,", (unsigned long long)c->mem_bytes, c->mem_bw * 1e-9,
        c->rate[CAL_PATH_BF16] * 1e-12, c->rate[CAL_PATH_FP8] * 1e-12, c->rate[CAL_PATH_FP32] * 1e-12,
        c->rate[CAL_PATH_BF16] * 1e-12, c->rate[CAL_PATH_FP8] * 1e-12, gpu ? "nvlink" : "host");
    if (c->ranks > 1)
        put(&b, "%.6g,%.6g,", c->link_bw * 1e-9, c->link_bw * 1e-9); /* one machine: no other node measured */
    else
        put(&b, "0,0,");
    put(&b, "%u,", per_node);
    put_quoted(&b, src);
    if (c->ranks > 1)
        put(&b, ",%.6g", c->link_lat * 1e6);
    else
        put(&b, ",");
    put(&b, ",%.6g", c->elem_bw * 1e-9);
    if (c->scaled_optim_bw > 0) /* empty: not measured (the planner then streams it at hbm_gbps) */
        put(&b, ",%.6g", c->scaled_optim_bw * 1e-9);
    else
        put(&b, ",");
    if (c->nxgemm && !gpu) /* a model with experts on a host: the grouped GEMM's cost per group (may be 0) */
        put(&b, ",%.6g", c->group_s * 1e6);
    else
        put(&b, ",");
    for (int k = 0; k < ELEM_KINDS; k++) /* each kind's rate (empty: not measured, elem_gbps then) */
        if (c->elem_kind_bw[k] > 0)
            put(&b, ",%.6g", c->elem_kind_bw[k] * 1e-9);
        else
            put(&b, ",");
    if (c->o1_optim_bw > 0) /* empty: not measured (the planner then streams it at hbm_gbps) */
        put(&b, ",%.6g", c->o1_optim_bw * 1e-9);
    else
        put(&b, ",");
    if (c->llc_bytes) /* empty: not read (the planner then takes a gradient's buffers from memory) */
        put(&b, ",%llu", (unsigned long long)c->llc_bytes);
    else
        put(&b, ",");
    return done(&b, "gpus.csv", e);
}

Status cal_gpu_row_of(const GpuSpec *g, char *buf, size_t size, Err *e)
{
    Buf b = {buf, size, 0, 0};
    if (g->host)
        put(&b, "%s,cpu,", g->name);
    else
        put(&b, "%s,%u.%u,", g->name, g->sm / 10, g->sm % 10);
    put(&b, "%u,%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,%.9g,%.9g,%u,", g->sms, (unsigned long long)g->hbm_bytes,
        g->hbm_bw * 1e-9, g->flops_bf16 * 1e-12, g->flops_fp8 * 1e-12, g->flops_fp32 * 1e-12, g->mamf_bf16 * 1e-12,
        g->mamf_fp8 * 1e-12, g->sustained, link_name(g->link), g->intra_bw * 1e-9, g->inter_bw * 1e-9,
        g->gpus_per_node);
    put_quoted(&b, g->source);
    if (g->link_lat > 0)
        put(&b, ",%.9g", g->link_lat * 1e6);
    else
        put(&b, ",");
    if (g->elem_bw > 0)
        put(&b, ",%.9g", g->elem_bw * 1e-9);
    else
        put(&b, ",");
    if (g->scaled_optim_bw > 0)
        put(&b, ",%.9g", g->scaled_optim_bw * 1e-9);
    else
        put(&b, ",");
    if (g->group_gemm_s > 0)
        put(&b, ",%.9g", g->group_gemm_s * 1e6);
    else
        put(&b, ",");
    for (int k = 0; k < ELEM_KINDS; k++)
        if (g->elem_kind_bw[k] > 0)
            put(&b, ",%.9g", g->elem_kind_bw[k] * 1e-9);
        else
            put(&b, ",");
    if (g->o1_optim_bw > 0)
        put(&b, ",%.9g", g->o1_optim_bw * 1e-9);
    else
        put(&b, ",");
    if (g->llc_bytes)
        put(&b, ",%llu", (unsigned long long)g->llc_bytes);
    else
        put(&b, ",");
    return done(&b, "gpus.csv", e);
}

static const char *yes(int v) { return v ? "yes" : "no"; }

void cal_stack_header(char *buf, size_t size)
{
    size_t n = 0;
    for (const char *h = catalog_stack_columns; *h && n + 1 < size; h++)
        if (*h != '?') buf[n++] = *h;
    if (size) buf[n] = '\0';
}

Status cal_stack_row(const StackSpec *s, const Calibration *c, char *buf, size_t size, Err *e)
{
    Buf b = {buf, size, 0, 0};
    double launch_us = c ? c->launch_s * 1e6 : s->launch_s * 1e6;
    put(&b, "%s,%s,%s,%s,%s,%s,%s,%.6g,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,", s->name, attn_name(s->attn),
        yes(s->sequence_parallel), yes(s->fused_swiglu), main_grad_name(s->main_grad), yes(s->fp8_weight_cache),
        fusion_name(s->fusion), launch_us, s->loss_bytes, s->overlap_tp, s->overlap_tp_on, s->overlap_dp, s->overlap_pp,
        s->overlap_cp, s->overlap_ep, s->alloc_reserve);
    /* the MoE host-issue cells, blank when not modelled (a host profile measures none of them) */
    const double host[3] = {s->host_op_s * 1e6, s->moe_host_ops, s->expert_host_ops};
    for (int i = 0; i < 3; i++)
        if (host[i] > 0)
            put(&b, "%.9g,", host[i]);
        else
            put(&b, ",");
    put(&b, "%s,", yes(c ? 1 : s->calibrated));
    if (c) {
        char src[STACK_SOURCE_MAX + 200];
        snprintf(src, sizeof src,
                 "launch_us measured by fp8plan calibrate --backend %s (the median of the smallest calls a "
                 "layer makes: 16x16x16 GEMM, 256-wide add, norm, activation); the rest as the catalog's row: %.3500s",
                 is_gpu(c) ? c->backend : "cpu", s->source);
        put_quoted(&b, src);
    } else {
        put_quoted(&b, s->source);
    }
    put(&b, ",%s,%s,%s", s->alias, s->expert_tp ? "tp" : "1", yes(s->permute_fusion));
    return done(&b, "stacks.csv", e);
}

const char *const cal_links_header = "version,device,op,path,from_bytes,to_bytes,latency_us,bus_gbps,source";

/* One links.csv row of fit f (to 0: blank, no upper end): version 2 for an all-to-all's per-message fit, 1 for
 * the others (catalog/catalog_links.c). */
static void put_link(Buf *b, const char *name, const LinkFit *f)
{
    const int per_msg = f->path == LINK_PATH_EAGER || f->path == LINK_PATH_RENDEZVOUS;
    put(b, "%d,%s,%s,%s,%llu,", per_msg ? 2 : 1, name, comm_op_name((CommOp)f->op), link_path_name((LinkPath)f->path),
        (unsigned long long)f->from);
    if (f->to) put(b, "%llu", (unsigned long long)f->to);
    put(b, ",%.6g,%.6g,", f->lat * 1e6, f->bw * 1e-9);
}

Status cal_link_row(const Calibration *c, int i, const char *name, char *buf, size_t size, Err *e)
{
    Buf b = {buf, size, 0, 0};
    const CalRange *r = &c->range[i];
    const CalSweep *s = NULL;
    const int per_msg = r->fit.path == LINK_PATH_EAGER || r->fit.path == LINK_PATH_RENDEZVOUS;
    for (int k = 0; k < c->nsweep; k++)
        if (c->sweep[k].op == (CommOp)r->fit.op && c->sweep[k].per_msg == per_msg &&
            (per_msg || cal_sweep_path(&c->sweep[k]) == r->fit.path))
            s = &c->sweep[k];
    char src[400];
    Buf t = {src, sizeof src, 0, 0};
    if (per_msg)
        put(&t,
            "fp8plan calibrate: MPI all-to-all over %d ranks, a message to a peer, %s (limit %llu B: the largest "
            "MPI_Isend done before its receive), calls after %llu KiB of other data; ",
            c->ranks, r->fit.path == LINK_PATH_EAGER ? "eager" : "rendezvous", (unsigned long long)c->eager_limit,
            (unsigned long long)(c->msg_evict >> 10));
    else
        put(&t, "fp8plan calibrate: the executor's MPI %s (%s) over %d ranks, ", comm_op_name((CommOp)r->fit.op),
            s ? dtype_name(s->dtype) : "?", c->ranks);
    if (s && s->grad == 2) /* calibrate_link.c EMB_SWEEP */
        put(&t,
            "each call after %.3g ms of compute, each even rank %.3g ms later (a last stage waiting), buffers "
            "flushed, ",
            1e3 * c->coll_gap_s, 1e3 * c->p2p_bwd_s);
    else if (s && s->grad) /* calibrate_link.c GRAD_SWEEP */
        put(&t, "each call after %.3g ms of compute, its payload and receive buffer then flushed (a gradient), ",
            1e3 * c->coll_gap_s);
    else if (!per_msg && r->fit.op == OP_SEND_RECV) { /* calibrate_link.c p2p_call */
        put(&t, "as 1F1B's neighbouring stages meet it (a send after %.1f ms of compute, or %.1f, then %.1f on), ",
            1e3 * c->p2p_fwd_s, 1e3 * (c->p2p_fwd_s + c->p2p_bwd_s), 1e3 * c->p2p_fwd_s);
        const uint64_t L = c->eager_limit; /* the ranges cut at L + 1 (calibrate_links) */
        if (L && r->fit.to && r->fit.to <= L + 1) put(&t, "eager (<= %llu B), ", (unsigned long long)L);
        if (L && r->fit.from > L) put(&t, "rendezvous (> %llu B), ", (unsigned long long)L);
    } else if (!per_msg && cal_coll_gapped((CommOp)r->fit.op) && c->coll_gap_s > 0) /* calibrate_link.c sweep_size */
        put(&t, "each call after %.3g ms of compute, as a layer's collectives follow its GEMMs, ", 1e3 * c->coll_gap_s);
    if (s && r->count > 0 && r->first + r->count <= s->n) {
        put_size(&t, s->pt[r->first].payload);
        put(&t, "-");
        put_size(&t, s->pt[r->first + r->count - 1].payload);
    }
    put(&t, " (%d sizes, medians of %d), largest error %.1f %%", r->count, c->reps, 100.0 * r->max_err);
    if (t.over) return done(&t, "links.csv source", e);
    put_link(&b, name, &r->fit);
    put_quoted(&b, src);
    return done(&b, "links.csv", e);
}

Status cal_link_row_of(const GpuSpec *g, int i, char *buf, size_t size, Err *e)
{
    Buf b = {buf, size, 0, 0};
    put_link(&b, g->name, &g->link_fit[i]);
    put_quoted(&b, "as the catalog's links.csv had it");
    return done(&b, "links.csv", e);
}
