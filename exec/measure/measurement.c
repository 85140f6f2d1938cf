/* exec/measure/measurement.c — filling a Measurement during a run (see
 * measurement.h). */
#include "exec/measure/measurement.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t measure_timed_from(const Measurement *ms)
{
    return ms->steps > MEASURE_WARMUP_STEPS ? MEASURE_WARMUP_STEPS : 0;
}

void measure_free(Measurement *ms)
{
    free(ms->loss);
    free(ms->step_s);
    for (int i = 0; i < 4; i++) free(ms->phase[i]);
    for (int i = 0; i < BK_OPCAT_COUNT; i++) free(ms->cat[i]);
    free(ms->coll_s);
    free(ms->sorted);
    memset(ms, 0, sizeof *ms);
}

Status measure_init(Measurement *ms, Backend *bk, uint32_t steps, Err *e)
{
    memset(ms, 0, sizeof *ms);
    size_t n = steps ? steps : 1;
    ms->loss = calloc(n, sizeof *ms->loss);
    ms->step_s = calloc(n, sizeof *ms->step_s);
    ms->coll_s = calloc(n * CO_COUNT_, sizeof *ms->coll_s);
    ms->sorted = calloc(n, sizeof *ms->sorted);
    int ok = ms->loss && ms->step_s && ms->coll_s && ms->sorted;
    for (int i = 0; i < 4; i++) ok &= (ms->phase[i] = calloc(n, sizeof(double))) != NULL;
    for (int i = 0; i < BK_OPCAT_COUNT; i++) ok &= (ms->cat[i] = calloc(n, sizeof(double))) != NULL;
    if (!ok) {
        measure_free(ms);
        return err_set(e, ST_NOMEM, "out of memory for a log of %u steps", steps);
    }
    ms->cap = steps;
    snprintf(ms->backend, sizeof ms->backend, "%s", bk->name);
    ms->on_device = strcmp(bk->name, "cpu") != 0;
    devm_init(&ms->dev, bk);
    return ST_OK;
}

void measure_after_comm(Measurement *ms, Backend *bk) { devm_sample(&ms->dev, bk, DEVM_AFTER_COMM); }

void measure_after_model(Measurement *ms, const Model *m)
{
    devm_sample(&ms->dev, m->bk, DEVM_AFTER_MODEL);
    ms->arena_bytes = m->arena.bytes;
    memcpy(ms->placed, m->arena.placed, sizeof ms->placed);
    ms->gemm_workspace_bytes = m->bk->gemm_workspace_bytes;
    ms->tokens_per_step = model_step_tokens(m);
    snprintf(ms->comm, sizeof ms->comm, "%s", m->comm->name);
    ms->ranks = m->comm->size;
    memcpy(ms->coll_start, m->comm->stats, sizeof ms->coll_start);
    ms->coll_total_start = m->comm->total;
}

void measure_match(Measurement *ms, const Catalog *c)
{
    if (ms->dev.have) devm_peak(c, &ms->dev.info, &ms->peak);
}

static void stats_minus(CommStats *d, const CommStats *now, const CommStats *then)
{
    d->calls = now->calls - then->calls;
    d->payload_bytes = now->payload_bytes - then->payload_bytes;
    d->bus_bytes = now->bus_bytes - then->bus_bytes;
    d->seconds = now->seconds - then->seconds;
    d->wait_s = now->wait_s - then->wait_s;
}

void measure_finish(Measurement *ms, const Model *m)
{
    for (int i = 0; i < CO_COUNT_; i++) stats_minus(&ms->coll[i], &m->comm->stats[i], &ms->coll_start[i]);
    stats_minus(&ms->coll_total, &m->comm->total, &ms->coll_total_start);
}

Status measure_step(Measurement *ms, Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    if (ms->steps >= ms->cap) return err_set(e, ST_USAGE, "measurement: all %u steps are taken", ms->cap);
    DevMeasure *dm = &ms->dev;
    DevmHook hook = {dm, m->bk};
    if (dm->have) {
        m->on_phase = devm_on_phase;
        m->on_phase_ctx = &hook;
        devm_step_begin(dm, m->bk);
    }
    double coll0[CO_COUNT_];
    for (int c = 0; c < CO_COUNT_; c++) coll0[c] = m->comm->stats[c].seconds;
    Status st = model_step(m, inputs, targets, loss, e);
    if (!st) st = comm_settle(m->comm, e); /* NCCL: the step's collective times, read from their events */
    double cat[BK_OPCAT_COUNT] = {0};
    int have_cat = dm->have ? devm_step_end(dm, m->bk, cat) : 0;
    m->on_phase = NULL;
    m->on_phase_ctx = NULL;
    if (st) return st;
    uint32_t i = ms->steps++;
    if (i == 0) ms->first_step = m->step - 1;
    ms->loss[i] = *loss;
    double t = 0.0;
    for (int k = 0; k < 4; k++) t += (ms->phase[k][i] = m->phase_s[k]);
    ms->step_s[i] = t;
    for (int c = 0; c < CO_COUNT_; c++) ms->coll_s[(size_t)c * ms->cap + i] = m->comm->stats[c].seconds - coll0[c];
    ms->phase_device = m->phase_device;
    if (have_cat) {
        for (int k = 0; k < BK_OPCAT_COUNT; k++) ms->cat[k][i] = cat[k];
        ms->cat_steps++;
    }
    return ST_OK;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void measure_stats(const double *v, uint32_t from, uint32_t n, double *t, double *median, double *spread)
{
    *median = *spread = NAN;
    if (n <= from) return;
    uint32_t k = n - from;
    memcpy(t, v + from, k * sizeof *t);
    qsort(t, k, sizeof *t, cmp_double);
    *median = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    if (*median != 0.0) *spread = (t[k - 1] - t[0]) / *median;
}
