/* exec/device_measure.c — device memory and time beyond the arena (see device_measure.h). */
#include "exec/device_measure.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void note_err(DevMeasure *m, Status st, const Err *e)
{
    if (!st || m->st) return;
    m->st = st;
    snprintf(m->msg, sizeof m->msg, "%s", e->msg);
}

void devm_sample(DevMeasure *m, Backend *bk, DevmPoint at)
{
    if (!m->have || at >= DEVM_POINTS) return;
    uint64_t fr = 0, tot = 0;
    Err e;
    Status st = bk->mem_info(bk, &fr, &tot, &e);
    if (st) {
        note_err(m, st, &e);
        return;
    }
    uint64_t used = tot > fr ? tot - fr : 0;
    m->total_bytes = tot;
    if (at != DEVM_STEP || !m->sampled[at] || used > m->used[at]) m->used[at] = used;
    m->sampled[at] = 1;
}

void devm_init(DevMeasure *m, Backend *bk)
{
    memset(m, 0, sizeof *m);
    m->have = bk && bk->mem_info && bk->device_info && bk->op_times;
    if (!m->have) return;
    Err e;
    note_err(m, bk->device_info(bk, &m->info, &e), &e);
    devm_sample(m, bk, DEVM_AFTER_BACKEND);
}

void devm_step_begin(DevMeasure *m, Backend *bk)
{
    if (!m->have) return;
    Err e;
    note_err(m, bk->op_times(bk, 1, NULL, &e), &e); /* drops what ran before, times from here */
}

void devm_step_end(DevMeasure *m, Backend *bk)
{
    if (!m->have) return;
    double s[BK_OPCAT_COUNT] = {0};
    Err e;
    Status st = bk->op_times(bk, 0, s, &e);
    note_err(m, st, &e);
    if (!st) {
        for (int i = 0; i < BK_OPCAT_COUNT; i++) m->op_s[i] += s[i];
        m->op_steps++;
    }
    devm_sample(m, bk, DEVM_STEP);
}

static MeasureRow *row(MeasureRow *rows, int *n, const char *name, const char *cat, MeasureMode mode, const char *note)
{
    MeasureRow *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->category = cat;
    r->mode = mode;
    r->note = note;
    return r;
}

static void set(MeasureRow *r, double planned, int has_measured, double measured)
{
    r->has_planned = 1;
    r->planned = planned;
    r->has_measured = has_measured;
    r->measured = measured;
}

int devm_rows(const DevMeasure *m, const Plan *p, const Gpt *g, MeasureRow *rows)
{
    int n = 0;
    if (!m->have || !m->sampled[DEVM_AFTER_BACKEND]) return 0;
    const uint64_t *u = m->used;
    uint64_t comm = m->sampled[DEVM_AFTER_COMM] ? u[DEVM_AFTER_COMM] : u[DEVM_AFTER_BACKEND];
    uint64_t peak = m->sampled[DEVM_STEP] ? u[DEVM_STEP] : (m->sampled[DEVM_AFTER_MODEL] ? u[DEVM_AFTER_MODEL] : 0);
    MeasureRow *r =
        row(rows, &n, "device_used", "overhead", MEASURE_TOL, "cudaMemGetInfo peak vs the plan's total, every term");
    set(r, (double)p->total_bytes, peak > 0, (double)peak);
    r->tol = 0.05;
    r = row(rows, &n, "device_cuda_context", "overhead", MEASURE_INFO, "used after the backend came up");
    set(r, (double)p->mem[MT_CUDA_CONTEXT].bytes, 1, (double)u[DEVM_AFTER_BACKEND]);
    r = row(rows, &n, "device_comm_buffer", "overhead", MEASURE_INFO, "added by creating the communicator");
    set(r, (double)p->mem[MT_COMM_BUFFER].bytes, m->sampled[DEVM_AFTER_COMM],
        (double)(comm > u[DEVM_AFTER_BACKEND] ? comm - u[DEVM_AFTER_BACKEND] : 0));
    r = row(rows, &n, "device_outside_arena", "overhead", MEASURE_INFO, "peak - communicator - arena (scratch, slack)");
    uint64_t outside = peak > comm + g->arena.bytes ? peak - comm - g->arena.bytes : 0;
    set(r, (double)p->mem[MT_FRAGMENTATION].bytes, peak > 0, (double)outside);
    if (m->op_steps) {
        static const char *const names[BK_OPCAT_COUNT] = {"gpu_gemm", "gpu_kernels", "gpu_optimizer", "gpu_comm"};
        static const char *const notes[BK_OPCAT_COUNT] = {
            "device time per step; plan: linear + head GEMMs (attention GEMMs are counted here)",
            "device time per step; plan: attention + non-GEMM", "device time per step",
            "device time per step; plan: exposed DP communication"};
        const double planned[BK_OPCAT_COUNT] = {p->time.gemm_s, p->time.attn_s + p->time.nongemm_s, p->time.optimizer_s,
                                                p->time.dp_comm_s};
        for (int i = 0; i < BK_OPCAT_COUNT; i++) {
            r = row(rows, &n, names[i], "time", MEASURE_INFO, notes[i]);
            set(r, planned[i], 1, m->op_s[i] / m->op_steps);
        }
    }
    return n;
}

/* 1 when tok (length len) occurs in hay, case-insensitively. */
static int has_token(const char *hay, const char *tok, size_t len)
{
    if (!len) return 0;
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < len && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)tok[i])) i++;
        if (i == len) return 1;
    }
    return 0;
}

const GpuSpec *devm_match_gpu(const Catalog *c, const char *device_name)
{
    const GpuSpec *best = NULL;
    int best_score = -1;
    if (!c || !device_name) return NULL;
    for (int i = 0; i < c->ngpus; i++) {
        const char *name = c->gpus[i].name, *dash = strchr(name, '-');
        size_t first = dash ? (size_t)(dash - name) : strlen(name);
        if (!has_token(device_name, name, first)) continue;
        /* score: 2 when the rest of the name appears ("pcie"), 1 for the SXM default */
        int score = 0;
        if (dash && has_token(device_name, dash + 1, strlen(dash + 1)))
            score = 2;
        else if (!dash || !strcmp(dash + 1, "sxm"))
            score = 1;
        if (score > best_score) best = &c->gpus[i], best_score = score;
    }
    return best;
}

void devm_mfu(const GpuSpec *gpu, double flops_per_s, double *bf16_pct, double *fp8_pct)
{
    *bf16_pct = gpu && gpu->flops_bf16 > 0 ? 100.0 * flops_per_s / gpu->flops_bf16 : NAN;
    *fp8_pct = gpu && gpu->flops_fp8 > 0 ? 100.0 * flops_per_s / gpu->flops_fp8 : NAN;
}
