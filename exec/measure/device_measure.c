/* exec/measure/device_measure.c — device memory and time beyond the arena (see device_measure.h). */
#include "exec/measure/device_measure.h"

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

/* Device bytes in use now; 0 on success. */
static int read_used(DevMeasure *m, Backend *bk, uint64_t *used)
{
    uint64_t fr = 0, tot = 0;
    Err e;
    Status st = bk->mem_info(bk, &fr, &tot, &e);
    if (st) {
        note_err(m, st, &e);
        return -1;
    }
    m->total_bytes = tot;
    *used = tot > fr ? tot - fr : 0;
    return 0;
}

static void keep(DevMeasure *m, DevmPoint at, uint64_t used)
{
    if (at != DEVM_STEP || !m->sampled[at] || used > m->used[at]) m->used[at] = used;
    m->sampled[at] = 1;
}

void devm_sample(DevMeasure *m, Backend *bk, DevmPoint at)
{
    uint64_t used;
    if (!m->have || at >= DEVM_POINTS || read_used(m, bk, &used)) return;
    keep(m, at, used);
}

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* Workspace and scratch the backend holds outside the arena now. */
static uint64_t private_bytes(DevMeasure *m, Backend *bk)
{
    BackendDeviceInfo info;
    Err e;
    Status st = bk->device_info(bk, &info, &e);
    note_err(m, st, &e);
    return st ? 0 : info.workspace_bytes + info.scratch_bytes;
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
    if (m->steps_seen == 0 && !read_used(m, bk, &m->first_begin)) m->private0 = private_bytes(m, bk);
}

int devm_step_end(DevMeasure *m, Backend *bk, double seconds[BK_OPCAT_COUNT])
{
    if (!m->have) return 0;
    Err e;
    Status st = bk->op_times(bk, 0, seconds, &e);
    note_err(m, st, &e);
    devm_sample(m, bk, DEVM_STEP);
    uint64_t used;
    if (m->steps_seen++ == 0 && m->first_begin && !read_used(m, bk, &used)) {
        uint64_t priv = minus(private_bytes(m, bk), m->private0);
        m->lazy = minus(minus(used, m->first_begin), m->grew[PHASE_COMM] + priv);
    }
    m->in_step = 0;
    return st == ST_OK;
}

void devm_phase(DevMeasure *m, Backend *bk, int phase)
{
    uint64_t used;
    if (!m->have || phase >= 4 || read_used(m, bk, &used)) return;
    keep(m, DEVM_STEP, used);
    if (phase >= 0) {
        if (m->in_step && used > m->last) m->grew[phase] += used - m->last;
        if (used > m->after[phase]) m->after[phase] = used;
    }
    m->last = used;
    m->in_step = 1;
}

void devm_on_phase(void *hook, int phase)
{
    DevmHook *h = hook;
    devm_phase(h->m, h->bk, phase);
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

void devm_peak(const Catalog *c, const BackendDeviceInfo *info, DevmPeak *out)
{
    memset(out, 0, sizeof *out);
    out->peak_bf16 = out->peak_fp8 = NAN;
    out->sm_share = 1.0;
    const GpuSpec *g = devm_match_gpu(c, info->name);
    if (!g) {
        snprintf(out->why, sizeof out->why, "unknown: no row of gpus.csv matches the device name '%.96s'", info->name);
        return;
    }
    int cc = info->cc_major * 10 + info->cc_minor, full = (int)g->sms;
    if (g->sm && (uint32_t)cc != g->sm) {
        snprintf(out->why, sizeof out->why, "unknown: '%.96s' has compute capability %d.%d, row %.32s says %u.%u",
                 info->name, info->cc_major, info->cc_minor, g->name, g->sm / 10, g->sm % 10);
        return;
    }
    if (full && info->sm_count > full) {
        snprintf(out->why, sizeof out->why, "unknown: '%.96s' has %d SMs, more than the %d of %.32s (another part)",
                 info->name, info->sm_count, full, g->name);
        return;
    }
    out->gpu = g;
    if (full && info->sm_count > 0 && info->sm_count < full) {
        out->sm_share = (double)info->sm_count / full;
        snprintf(out->why, sizeof out->why, "row %s: %d of its %d SMs (a MIG slice or a cut-down part) so peaks x %.3f",
                 g->name, info->sm_count, full, out->sm_share);
    } else if (!full) {
        snprintf(out->why, sizeof out->why, "row %s (SM count of the part not known: its full peaks)", g->name);
    } else {
        snprintf(out->why, sizeof out->why, "row %s (%d SMs)", g->name, full);
    }
    out->peak_bf16 = g->flops_bf16 > 0 ? g->flops_bf16 * out->sm_share : NAN;
    out->peak_fp8 = g->flops_fp8 > 0 ? g->flops_fp8 * out->sm_share : NAN;
}

void devm_mfu(const GpuSpec *gpu, double flops_per_s, double *bf16_pct, double *fp8_pct)
{
    *bf16_pct = gpu && gpu->flops_bf16 > 0 ? 100.0 * flops_per_s / gpu->flops_bf16 : NAN;
    *fp8_pct = gpu && gpu->flops_fp8 > 0 ? 100.0 * flops_per_s / gpu->flops_fp8 : NAN;
}
