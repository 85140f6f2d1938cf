/* exec/run/run_session.c — a training run from its spec to its report (see run.h): the backend and
 * its measurement, the communicator and the ranks, the catalog rows, the plans, the model, the data and
 * a resumed checkpoint, the steps, the saved checkpoint, the ranks' gathering, and the side files that
 * land together with the report. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/catalog_find.h"
#include "exec/backend/par.h"
#include "exec/ckpt/ckpt.h"
#include "exec/comm/comm_mpi.h"
#include "exec/run/run.h"
#include "planner/plan_host.h"

/* ---- what the session shows, through the caller's hooks ---- */

static const RunHooks none;
static const RunHooks *hooks = &none;

const RunHooks *run_hooks(void) { return hooks; }

int run_fail(const Err *e)
{
    if (hooks->fail) hooks->fail(hooks->ctx, e->st, e->msg[0] ? e->msg : status_str(e->st));
    return status_exit_code(e->st);
}

typedef enum { SHOW_USAGE, SHOW_NOTE, SHOW_SAY } Show;

/* fmt's text to the hook for kind (a list of the catalog's names may pass an Err's 512 bytes). */
__attribute__((format(printf, 2, 0))) static void show(Show kind, const char *fmt, va_list ap)
{
    char text[sizeof((Err *)0)->msg * 2];
    vsnprintf(text, sizeof text, fmt, ap);
    if (kind == SHOW_USAGE && hooks->fail) hooks->fail(hooks->ctx, ST_USAGE, text);
    if (kind == SHOW_NOTE && hooks->note) hooks->note(hooks->ctx, text);
    if (kind == SHOW_SAY && hooks->say) hooks->say(hooks->ctx, text);
}

int run_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    show(SHOW_USAGE, fmt, ap);
    va_end(ap);
    return status_exit_code(ST_USAGE);
}

void run_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    show(SHOW_NOTE, fmt, ap);
    va_end(ap);
}

void run_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    show(SHOW_SAY, fmt, ap);
    va_end(ap);
}

double run_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the catalog rows and the plans ---- */

/* The GPU the plan is for: --gpu, else the device's catalog row, else h100-sxm. */
static const GpuSpec *plan_gpu(const RunSpec *a, const Catalog *cat, const Measurement *ms)
{
    if (a->gpu) return catalog_gpu(cat, a->gpu);
    if (ms->dev.have && ms->peak.gpu) return ms->peak.gpu;
    if (ms->dev.have)
        run_note("%s matches no row of gpus.csv; the plan is for h100-sxm (--gpu G to choose)", ms->dev.info.name);
    return catalog_gpu(cat, "h100-sxm");
}

/* The catalog rows the flags name; a usage exit code when one is unknown. */
static int lookup(const RunSpec *a, RunSession *s, const GpuSpec **gpu, const Recipe **recipe)
{
    char names[2048];
    s->base = catalog_model(s->cat, a->model);
    *gpu = plan_gpu(a, s->cat, &s->ms);
    *recipe = catalog_recipe(s->cat, a->recipe);
    if (!s->base) {
        catalog_model_names(s->cat, names, sizeof names);
        return run_usage("--model: unknown model '%s' (known: %s)", a->model, names);
    }
    if (!*gpu) {
        catalog_gpu_names(s->cat, names, sizeof names);
        return run_usage("--gpu: unknown GPU '%s' (known: %s)", a->gpu ? a->gpu : "h100-sxm", names);
    }
    if (!*recipe) {
        catalog_recipe_names(s->cat, names, sizeof names);
        return run_usage("--recipe: unknown recipe '%s' (known: %s)", a->recipe, names);
    }
    return 0;
}

/* The cores the ranks share: the union of their CPU sets (par_cpu_flags; a rank's own may be one core), by one
 * all-reduce (MAX) of every rank's flags before the steps (the steps' collectives are counted from their start). */
static Status shared_cores(Comm *c, Backend *bk, uint32_t *out, Err *e)
{
    static float f[PAR_CPU_FLAGS];
    int n = par_cpu_flags(f, PAR_CPU_FLAGS);
    if (c && c->size > 1) {
        void *d = NULL;
        Status st = bk->alloc(bk, sizeof f, &d, e);
        if (!st) st = bk->copy_to_device(bk, d, f, sizeof f, e);
        if (!st) st = c->all_reduce(c, COMM_UNPLANNED, bk, d, PAR_CPU_FLAGS, DT_FP32, COMM_MAX, e);
        if (!st) st = bk->copy_to_host(bk, f, d, sizeof f, e);
        if (d) bk->free(bk, d);
        if (st) return st;
        n = 0;
        for (int i = 0; i < PAR_CPU_FLAGS; i++) n += f[i] > 0;
    }
    *out = n > 0 ? (uint32_t)n : 1;
    return ST_OK;
}

/* The plans of a run: s->built, the one the executor lays its arena out from
 * (stacks.csv's fp8plan row: this executor), and s->plan, the one the run is
 * compared with — the same plan, or --stack's (which predicts that stack, so
 * the terms where the stacks differ are reported as differing). Both count the
 * communicator the process holds: a started NCCL one ("nccl 2.x.y") has its
 * buffers on the device even for one rank (578 MiB measured on an H200 against
 * the plan's 588 MiB per communicator); MPI and the local copies hold none there. */
static int make_plans(const RunSpec *a, RunSession *s, const GpuSpec *gpu, const Recipe *r)
{
    static Plan own_plan, other_plan;
    const StackSpec *own = catalog_stack(s->cat, "fp8plan"), *stack = a->stack ? catalog_stack(s->cat, a->stack) : own;
    if (!stack && a->stack) {
        char names[2048];
        catalog_stack_names(s->cat, names, sizeof names);
        return run_usage("--stack: unknown stack '%s' (known: %s)", a->stack, names);
    }
    /* ranks on the host's cores: with more ranks than cores they time-share them, and the plan takes the compute
     * rates each rank gets (planner/plan_host.c); the ranks of a CPU run are on one host, as calibrate's are */
    static GpuSpec shared;
    s->host_stretch = 1.0;
    if (gpu->host && !strcmp(s->bk->name, "cpu")) {
        Err e;
        s->host_ranks = s->comm ? (uint32_t)s->comm->size : 1;
        if (shared_cores(s->comm, s->bk, &s->host_cores, &e)) return run_fail(&e);
        s->host_stretch = plan_host_share(gpu, s->host_ranks, s->host_cores, &shared);
        gpu = &shared;
    }
    Plan *p[2] = {&own_plan, &other_plan};
    const StackSpec *st[2] = {own, stack};
    for (int i = 0; i < (stack == own ? 1 : 2); i++) {
        PlanInput in;
        Err e;
        exec_plan_input(&in, &s->model, gpu, r, a->mbs, a->gbs / (a->mbs * a->dp), st[i]);
        exec_plan_dp(&in, a->dp, a->sharding);
        in.comms_min = run_device_comms(s->comm);
        if (a->tp > 1) in.tp = a->tp, in.sp = 1; /* the executor's TP is sequence-parallel */
        if (a->pp > 1) in.pp = a->pp, in.stage_view = run_stage_of(a, a->rank) + 1; /* this rank's stage */
        in.first_stage_layers = a->first_stage_layers, in.last_stage_layers = a->last_stage_layers;
        if (a->ep > 1) in.ep = a->ep;    /* the planner checks it against the experts and the ranks */
        if (a->etp > 1) in.etp = a->etp; /* likewise (ep x etp | tp x dp); exec/model/model_moe_etp.c runs it */
        if (plan_build(&in, p[i], &e)) {
            err_prefix(&e, "plan");
            return run_fail(&e);
        }
    }
    s->built = &own_plan;
    s->plan = stack == own ? &own_plan : &other_plan;
    return 0;
}

/* ---- the session's phases; each an exit code ---- */

/* The backend, its measurement, the communicator, the ranks, the catalog and the plans. */
static int open_plans(RunSpec *a, RunSession *s)
{
    Err e;
    int rc;
    const GpuSpec *gpu;
    const Recipe *recipe;
    if ((rc = run_check_paths(a))) return rc; /* before anything is built */
    if (backend_create(a->backend, &s->bk, &e)) return run_fail(&e);
    /* a GPU: the device, and memory in use with the context up */
    if (measure_init(&s->ms, s->bk, a->steps, &e) || run_make_comm(a, s->bk, &s->comm, &e)) return run_fail(&e);
    measure_after_comm(&s->ms, s->bk);
    if ((rc = run_resolve_ranks(a, s->comm))) return rc;
    if (catalog_load(a->catalog, &s->cat, &e)) return run_fail(&e);
    measure_match(&s->ms, s->cat);
    if ((rc = lookup(a, s, &gpu, &recipe))) return rc;
    if (exec_model(s->base, &a->ov, &s->model, &e)) return run_fail(&e);
    if (a->want_routing && !spec_is_moe(&s->model))
        return run_usage("--routing-log: model %s has no experts", s->model.name);
    return make_plans(a, s, gpu, recipe);
}

/* The model, the checks a checkpoint needs, the data, and a resumed checkpoint. */
static int build_model(const RunSpec *a, RunSession *s)
{
    Err e;
    if (!a->rank) run_warn_model(a, s->base, &s->model, s->built, s->bk->name);
    if (a->mtp_weight >= 0 && !s->built->in.model->mtp_layers)
        return run_usage("--mtp-weight %g: model %s has no multi-token prediction (mtp_layers 0)",
                         (double)a->mtp_weight, s->built->in.model->name);
    if (hooks->planned) hooks->planned(hooks->ctx, s);
    double t0 = run_now_s();
    Status st = model_create(s->built, &a->hyper, s->bk, s->comm, &s->m, &e);
    if (hooks->built) hooks->built(hooks->ctx);
    if (st) return run_fail(&e);
    if (a->mtp_weight >= 0) s->m->mtp_weight = a->mtp_weight;
    if (s->plan->in.gpu->host && plan_a2a_msg_fit(s->plan->in.gpu, 0)) s->m->a2a_fits = s->plan->in.gpu;
    s->build_s = run_now_s() - t0;
    if ((a->save || a->resume) && ckpt_check(s->m, &e)) return run_fail(&e); /* before the steps, not after them */
    st = a->data ? data_bytes_file(&s->d, a->data, s->model.vocab, s->built->seq, &e)
                 : data_synthetic(&s->d, s->model.vocab, a->hyper.seed, &e);
    if (st) return run_fail(&e);
    if (a->resume) {
        DataState ds;
        if (ckpt_load(a->resume, s->m, &ds, &e) || data_restore(&s->d, &ds, &e)) return run_fail(&e);
        if (!a->quiet) run_say("resumed from %s at step %u\n", a->resume, s->m->step);
    }
    measure_after_model(&s->ms, s->m);
    if (!a->quiet && hooks->started) hooks->started(hooks->ctx, s);
    return 0;
}

/* --save after the steps: rank 0 writes; with sharded states or TP/PP ranks every rank hands its part
 * over (exec/ckpt/ckpt.h). stopped: the steps' code. */
static int save(const RunSpec *a, RunSession *s, int stopped)
{
    Err e;
    Model *m = s->m;
    if (stopped > 128 && a->save) run_note("--save: the checkpoint is of step %u", m->step);
    if (stopped && stopped < 128 && a->save)
        run_note("--save: no checkpoint (step %u failed)", m->step + 1);
    else if (a->save && (!a->rank || ckpt_every_rank(m)) && ckpt_save(a->rank ? NULL : a->save, m, &s->d.st, &e))
        return run_fail(&e);
    if (a->save && !a->quiet) run_say("checkpoint: %s (step %u)\n", a->save, m->step);
    if (s->ms.dev.st) run_note("warning: a device measurement failed: %s", s->ms.dev.msg);
    return 0;
}

/* Several ranks: what each measured gathered on rank 0 (every rank takes part); a failure's exit code. */
static int gather_ranks(RunSession *s)
{
    Err e;
    if (run_ranks_gather(s->comm, s->plan, &s->ms, &s->rd, &e) || run_ranks_gather_ep(s->comm, s->m, &s->rd, &e) ||
        run_ranks_gather_routing(s->comm, s->m, &s->rd, &e))
        return run_fail(&e);
    return 0;
}

/* The steps, the side files, the checkpoint, the ranks and the report; *keep: the report was written
 * (the output group is whole). */
static int train_report(const RunSpec *a, RunSession *s, RunFiles *sf, int *keep)
{
    int rc;
    if ((rc = run_files_open(a, s->m, sf))) return rc;
    /* a run stopped by a signal or a failed step still reports the steps it
     * took (one rank: several are stopped together, see run_session) */
    int stopped = run_train(a, s->m, &s->d, &s->ms, sf);
    if (stopped && (s->comm->size > 1 || !s->ms.steps)) return stopped;
    if ((rc = run_routing_write(a, s->m, sf)) || (rc = run_files_commit(sf))) return rc;
    measure_finish(&s->ms, s->m);
    if ((rc = save(a, s, stopped))) return rc;
    int ranks_rc = 0; /* several ranks: 1 when a rank differs from the plan */
    if (s->comm->size > 1) {
        if ((rc = gather_ranks(s))) return rc;
        ranks_rc = hooks->ranks ? hooks->ranks(hooks->ctx, s) : 0;
    }
    rc = !a->rank && hooks->report ? hooks->report(hooks->ctx, s) : 0;
    *keep = !rc || rc == status_exit_code(ST_TOLERANCE); /* the report written: the set is whole */
    if (!rc && ranks_rc) rc = ranks_rc;
    if (stopped && (!rc || rc == 1)) rc = stopped; /* the stop's code, unless the report could not be written */
    return rc;
}

int run_session(const RunSpec *spec, const RunHooks *h)
{
    static RunSession s; /* the measurement is large */
    RunSpec a = *spec;
    RunFiles sf = {0};
    Err e;
    int grouped = 0, keep = 0; /* the output group begun; its files to be put in place */
    memset(&s, 0, sizeof s);
    s.spec = &a;
    hooks = h ? h : &none;
    int rc = open_plans(&a, &s);
    if (!rc) rc = build_model(&a, &s);
    if (!rc) {
        run_stop_on_signals(s.comm->size);
        /* the run's files land together: loss log, trace, checkpoint and report all new, or all as they
         * were (a second signal while they are written; a failure) */
        outfile_group_begin();
        grouped = 1;
        rc = train_report(&a, &s, &sf, &keep);
    }
    run_files_abort(&sf);
    if (grouped && outfile_group_end(keep, &e) && keep) rc = run_fail(&e);
    /* never leave the other ranks waiting in a collective (unless every rank failed at one agreed point) */
    if (rc && rc != 1 && s.comm && s.comm->size > 1 && !(s.m && s.m->failed_together)) {
        run_note("rank %d of %d failed (exit %d): stopping every rank", s.comm->rank, s.comm->size, rc);
        comm_mpi_abort(s.comm, rc);
    }
    run_ranks_free(&s.rd);
    measure_free(&s.ms);
    data_free(&s.d);
    model_destroy(s.m);
    if (s.comm) s.comm->destroy(s.comm);
    if (s.bk) s.bk->destroy(s.bk);
    free(s.cat);
    hooks = &none;
    return rc;
}
