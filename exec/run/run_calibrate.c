/* exec/run/run_calibrate.c — `fp8plan calibrate`'s session (see run_calibrate.h). */
#include "exec/run/run_calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_nccl_boot.h"

/* The ranks' communicator: MPI between CPU ranks, NCCL between GPU ranks (bootstrapped through MPI), under
 * mpirun; one rank otherwise (no link to measure). */
static Status make_comm(Backend *bk, Comm **comm, Err *e)
{
    if (!comm_mpi_launched()) return comm_single_create(comm, e);
    return strcmp(bk->name, "cpu") ? comm_nccl_mpi_create(bk, comm, e) : comm_create("mpi", bk, comm, e);
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
    if (!st && !check_row) st = calibrate_host(s->bk, s->comm, &s->m, mbs, reps, s->c, e);
    if (!st && !check_row) st = calibrate_compute(s->bk, s->comm, &s->m, mbs, cal_again_reps(reps), s->again, e);
    if (!st) s->load1 = cal_loadavg();
    return st;
}

/* --check: the profile's figures as a Calibration (the catalog's row g), the spreads those of the re-measure
 * now — so cal_judge(profile, now) says noisy when now cannot tell, moved when the machine changed. */
static void profile_of_row(const GpuSpec *g, const Calibration *now, Calibration *p)
{
    memset(p, 0, sizeof *p);
    p->reps = now->reps;
    p->rate[CAL_PATH_FP8] = g->flops_fp8, p->rate[CAL_PATH_BF16] = g->flops_bf16,
    p->rate[CAL_PATH_FP32] = g->flops_fp32;
    p->mem_bw = g->hbm_bw, p->elem_bw = g->elem_bw;
    for (int i = 0; i < CAL_PATHS; i++) p->rate_iqr[i] = now->rate_iqr[i];
    p->scaled_optim_bw = g->scaled_optim_bw;
    p->mem_iqr = now->mem_iqr, p->elem_iqr = now->elem_iqr, p->scaled_optim_iqr = now->scaled_optim_iqr;
}

int cal_session_judge(CalSession *s, const GpuSpec *check_row, CalJudge *j)
{
    if (!check_row) return cal_judge(s->c, s->again, j);
    profile_of_row(check_row, s->c, s->again);
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
