/* exec/measure/measurement.c — filling a Measurement during a run (see
 * measurement.h). */
#include "exec/measure/measurement.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The record's enums are the executor's: check/observed.h's device-time categories are BackendOpCat's
 * order, and its executor-only terms have room for the arena's. */
_Static_assert((int)OBS_CATS == (int)BK_OPCAT_COUNT && BK_OPCAT_GEMM == 0 && BK_OPCAT_KERNEL == 1 &&
                   BK_OPCAT_OPTIM == 2 && BK_OPCAT_COMM == 3,
               "check/observed.h's OBS_CATS follow BackendOpCat");
_Static_assert((int)OBS_MOE_PARTS == (int)MOE_PARTS && MOE_PART_ROUTER == 0 && MOE_PART_PERMUTE == 1 &&
                   MOE_PART_XGEMM == 2 && MOE_PART_ACT == 3 && MOE_PART_EP == 4 && MOE_PART_OTHER == 5,
               "check/observed.h's OBS_MOE_* follow MoePart");
_Static_assert((int)ARENA_TERMS - (int)MT_COUNT_ <= (int)OBS_EXTRA_TERMS,
               "room for the executor-only terms in an Observed");

uint32_t measure_timed_from(const Measurement *ms) { return check_timed_from(ms->steps); }

void measure_free(Measurement *ms)
{
    free(ms->loss);
    free(ms->step_s);
    for (int i = 0; i < 4; i++) free(ms->phase[i]);
    for (int i = 0; i < BK_OPCAT_COUNT; i++) free(ms->cat[i]);
    for (int i = 0; i < MOE_PARTS; i++) free(ms->moe[i]);
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
    for (int i = 0; i < MOE_PARTS; i++) ok &= (ms->moe[i] = calloc(n, sizeof(double))) != NULL;
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
    if (m->moe_timed) {
        for (int k = 0; k < MOE_PARTS; k++) ms->moe[k][i] = m->moe_part_s[k];
        ms->moe_steps++;
    }
    return ST_OK;
}

static void coll_observe(ObsColl *o, const CommStats *m, uint32_t steps)
{
    o->calls = m->calls;
    o->payload_bytes = m->payload_bytes;
    o->bus_bytes = m->bus_bytes;
    o->bus_step = comm_whole_bytes(m->bus_bytes / (steps ? (double)steps : 1.0));
    o->wait_s = m->wait_s;
}

void measure_observe(const Measurement *ms, Observed *o)
{
    memset(o, 0, sizeof *o);
    o->backend = ms->backend, o->on_device = ms->on_device;
    o->gemm_workspace_bytes = ms->gemm_workspace_bytes, o->arena_bytes = ms->arena_bytes;
    for (int i = 0; i < MT_COUNT_; i++) {
        o->placed[i] = ms->placed[i];
        o->held[i] = (unsigned char)arena_holds((MemTermId)i);
    }
    for (ArenaTerm t = MT_COUNT_; t < ARENA_TERMS; t++)
        if (ms->placed[t]) o->extra[o->nextra].name = arena_term_name(t), o->extra[o->nextra++].bytes = ms->placed[t];
    const DevMeasure *d = &ms->dev;
    o->dev.have = d->have;
    memcpy(o->dev.used, d->used, sizeof o->dev.used);
    memcpy(o->dev.sampled, d->sampled, sizeof o->dev.sampled);
    memcpy(o->dev.grew, d->grew, sizeof o->dev.grew);
    o->dev.lazy = d->lazy;
    o->dev.peak_bf16 = ms->peak.peak_bf16, o->dev.peak_fp8 = ms->peak.peak_fp8, o->dev.peak_why = ms->peak.why;
    o->cap = ms->cap, o->steps = ms->steps, o->first_step = ms->first_step;
    o->tokens_per_step = ms->tokens_per_step;
    o->loss = ms->loss;
    for (int k = 0; k < PHASE_COUNT; k++) o->phase[k] = ms->phase[k];
    o->step_s = ms->step_s;
    for (int k = 0; k < OBS_CATS; k++) o->cat[k] = ms->cat[k];
    o->cat_steps = ms->cat_steps, o->phase_device = ms->phase_device;
    for (int k = 0; k < OBS_MOE_PARTS; k++) o->moe[k] = ms->moe[k];
    o->moe_steps = ms->moe_steps;
    o->comm = ms->comm, o->ranks = ms->ranks;
    for (int c = 0; c < CO_COUNT_; c++) coll_observe(&o->coll[c], &ms->coll[c], ms->steps);
    coll_observe(&o->coll_total, &ms->coll_total, ms->steps);
    o->coll_s = ms->coll_s;
    o->sorted = ms->sorted;
}

void compare(const Plan *p, const Measurement *ms, const Tolerances *tol, Comparison *out)
{
    Observed ob;
    measure_observe(ms, &ob);
    check_run(p, &ob, tol, out);
}
