/* exec/run/run_calibrate.c — `fp8plan calibrate`'s session (see run_calibrate.h). */
#include "exec/run/run_calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_nccl_boot.h"
#include "exec/measure/calibrate_link.h"

/* The ranks' communicator: MPI between CPU ranks, NCCL between GPU ranks (bootstrapped through MPI), under
 * mpirun; one rank otherwise (no link to measure). */
static Status make_comm(Backend *bk, Comm **comm, Err *e)
{
    if (!comm_mpi_launched()) return comm_single_create(comm, e);
    return strcmp(bk->name, "cpu") ? comm_nccl_mpi_create(bk, comm, e) : comm_create("mpi", bk, comm, e);
}

/* The profile's per-message fits in row g (eager, rendezvous: links.csv version 2) into fit; 0, or -1 without. */
static int row_msg_fits(const GpuSpec *g, LinkFit fit[2])
{
    int got = 0;
    for (int i = 0; g && i < g->nlink_fit; i++) {
        const LinkFit *f = &g->link_fit[i];
        if (f->op != OP_ALL_TO_ALL || (f->path != LINK_PATH_EAGER && f->path != LINK_PATH_RENDEZVOUS)) continue;
        fit[f->path == LINK_PATH_RENDEZVOUS] = *f, got |= 1 << (f->path == LINK_PATH_RENDEZVOUS);
    }
    return got == 3 && fit[0].to > 1 ? 0 : -1;
}

/* The all-to-all's per-message figures measured again into now (every rank): at the profile's sweep sizes (p's,
 * at reps calls each) for the quick re-measure, or for --check (p NULL) at the sizes the row's eager limit and the
 * model give (cal_msg_sizes). Nothing when there is nothing to compare with: one rank, no per-message fits. */
static Status msg_again(CalSession *s, const Calibration *p, const GpuSpec *row, uint32_t mbs, int reps,
                        Calibration *now, Err *e)
{
    uint64_t sizes[CAL_MAX_SIZES], L = 0, run[2];
    int ns = 0;
    LinkFit fit[2];
    if (s->comm->size < 2 || now->nsweep >= CAL_MAX_SWEEPS) return ST_OK;
    for (int i = 0; p && p->a2a_judged && i < p->nsweep; i++)
        if (p->sweep[i].per_msg) {
            for (int k = 0; k < p->sweep[i].n; k++) sizes[ns++] = p->sweep[i].pt[k].payload;
            L = p->eager_limit;
        }
    if (!p && !row_msg_fits(row, fit)) {
        const int na = cal_ep_sizes(&s->m, mbs, run);
        for (int i = 0; i < na; i++) run[i] /= (uint64_t)s->comm->size;
        L = fit[0].to - 1, ns = cal_msg_sizes(L, run, na, (uint64_t)1 << 20, sizes);
    }
    if (!ns) return ST_OK;
    const int per_size = 4 * reps < CAL_LINK_REPS_MAX ? 4 * reps : CAL_LINK_REPS_MAX;
    CalSweep *w = &now->sweep[now->nsweep];
    Status st = calibrate_msg_sweep(s->bk, s->comm, sizes, ns, per_size, w, e);
    if (st) return st;
    now->nsweep++, now->eager_limit = L, now->a2a_reps = per_size;
    now->a2a_judged = !cal_msg_figures(w->pt, w->n, L, s->comm->size, now->a2a_bw, now->a2a_iqr);
    return ST_OK;
}

int cal_again_reps(int reps) { return reps < 3 ? reps : (reps + 1) / 2 < 3 ? 3 : (reps + 1) / 2; }

Status cal_session_measure(CalSession *s, const char *backend, const ModelSpec *base, const ExecOverrides *ov,
                           uint32_t mbs, int reps, const GpuSpec *check_row, Err *e)
{
    memset(s, 0, sizeof *s);
    s->load1 = -1;
    s->c = calloc(2, sizeof *s->c);
    s->again = s->c ? s->c + 1 : NULL;
    s->load0 = cal_loadavg();
    if (!s->c) return err_set(e, ST_NOMEM, "out of memory");
    Status st = exec_model(base, ov, &s->m, e);
    if (!st) st = backend_create(backend, &s->bk, e);
    if (!st) st = make_comm(s->bk, &s->comm, e);
    if (!st && check_row) st = calibrate_compute(s->bk, s->comm, &s->m, mbs, reps, s->c, e);
    if (!st && !check_row) /* the profile and its quick re-measure, interleaved */
        st = calibrate_host_again(s->bk, s->comm, &s->m, mbs, reps, s->c, cal_again_reps(reps), s->again, e);
    if (!st && check_row) st = msg_again(s, NULL, check_row, mbs, reps, s->c, e);
    if (!st && !check_row) st = msg_again(s, s->c, NULL, mbs, cal_again_reps(reps), s->again, e);
    if (!st) s->load1 = cal_loadavg();
    return st;
}

/* --check: the profile's figures as a Calibration (the catalog's row g), the spreads those of the re-measure
 * now — so cal_judge(profile, now) says noisy when now cannot tell, moved when the machine changed. */
static void profile_of_row(const GpuSpec *g, const Calibration *now, int n, Calibration *p)
{
    LinkFit fit[2];
    memset(p, 0, sizeof *p);
    p->reps = now->reps;
    p->rate[CAL_PATH_FP8] = g->flops_fp8, p->rate[CAL_PATH_BF16] = g->flops_bf16,
    p->rate[CAL_PATH_FP32] = g->flops_fp32;
    p->mem_bw = g->hbm_bw, p->elem_bw = g->elem_bw;
    for (int i = 0; i < CAL_PATHS; i++) p->rate_iqr[i] = now->rate_iqr[i];
    p->scaled_optim_bw = g->scaled_optim_bw, p->o1_optim_bw = g->o1_optim_bw;
    p->mem_iqr = now->mem_iqr, p->elem_iqr = now->elem_iqr, p->scaled_optim_iqr = now->scaled_optim_iqr;
    p->o1_optim_iqr = now->o1_optim_iqr;
    /* the grouped expert GEMMs (a model with experts): now's shapes at the row's BF16 rate and group_gemm_us */
    p->nxgemm = cal_group_predict(now->xgemm, now->nxgemm, now->xgroups, g->flops_bf16, g->group_gemm_s, p->xgemm);
    p->xgroups = now->xgroups, p->group_iqr = now->group_iqr;
    for (int k = 0; k < ELEM_KINDS; k++) /* each kind the row rates (0: an older row, the figure skipped) */
        p->elem_kind_bw[k] = g->elem_kind_bw[k], p->elem_kind_iqr[k] = now->elem_kind_iqr[k];
    /* the all-to-all: the row's fits at the sizes measured now, with now's spreads */
    const CalSweep *w = now->nsweep ? &now->sweep[now->nsweep - 1] : NULL;
    if (!now->a2a_judged || !w || !w->per_msg || row_msg_fits(g, fit)) return;
    CalColl pt[CAL_MAX_SIZES];
    memcpy(pt, w->pt, sizeof pt);
    cal_msg_predict(fit, n, pt, w->n);
    for (int i = 0; i < w->n; i++) pt[i].iqr = w->pt[i].iqr;
    p->eager_limit = now->eager_limit, p->a2a_reps = now->a2a_reps;
    p->a2a_judged = !cal_msg_figures(pt, w->n, now->eager_limit, n, p->a2a_bw, p->a2a_iqr);
}

int cal_session_judge(CalSession *s, const GpuSpec *check_row, CalJudge *j)
{
    if (!check_row) return cal_judge(s->c, s->again, j);
    profile_of_row(check_row, s->c, s->comm ? s->comm->size : 1, s->again);
    return cal_judge(s->again, s->c, j);
}

void cal_session_close(CalSession *s, int rc)
{
    if (rc && s->comm && s->comm->size > 1) comm_mpi_abort(s->comm, rc);
    if (s->comm) s->comm->destroy(s->comm);
    if (s->bk) s->bk->destroy(s->bk);
    free(s->c);
    memset(s, 0, sizeof *s);
}
