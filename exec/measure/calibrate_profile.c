/* exec/measure/calibrate_profile.c — a profile's measurements in order (see
 * calibrate.h): the GEMMs (calibrate_gemm.c), the element-wise kernels and the
 * launch floor (calibrate_host.c), the experts' (calibrate_moe.c) and the
 * link's (calibrate_link.c); and the host's load average beside them. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec/measure/calibrate_bufs.h"
#include "exec/measure/calibrate_link.h"
#include "exec/model/model.h"
#include "util/cache.h"

double cal_loadavg(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1 || !(l >= 0)) l = -1;
        fclose(f);
    }
    return l;
}

Status calibrate_host(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e)
{
    return calibrate_host_again(bk, comm, m, mbs, reps, out, 0, NULL, e);
}

Status calibrate_host_again(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out,
                            int again_reps, Calibration *again, Err *e)
{
    Status st = calibrate_compute_again(bk, comm, m, mbs, reps, out, again_reps, again, e);
    /* the link up to the model's gradient all-reduce (FP32 gradients: the largest collective of a DP run) */
    uint64_t params = 0;
    if (!st && comm && comm->size > 1 && model_param_count(m, &params))
        st = err_set(e, ST_USAGE, "calibrate: the parameter count of %s passes 2^64", m->name);
    const uint64_t top = params > CAL_LINK_TOP_MAX / 4 ? CAL_LINK_TOP_MAX : params * 4;
    if (!st && comm && comm->size > 1) st = calibrate_link(bk, comm, top, reps, out, e);
    /* what a run's per-layer collective follows: one of the layer's GEMMs (the largest BF16 one: A, B and D) */
    uint64_t layer = 0;
    for (int i = 0; i < out->ngemm; i++) {
        const CalGemm *g = &out->gemm[i];
        uint64_t b = (g->m * g->k + g->n * g->k + g->m * g->n) * 2;
        if (g->path == CAL_PATH_BF16 && strncmp(g->what, "head", 4) && b > layer) layer = b;
    }
    if (!st && comm && comm->size > 1 && !strcmp(comm->name, "mpi")) {
        uint64_t a2a[2], tp[4]; /* expert parallelism's count exchange and dispatch (a model with experts); TP's */
        out->p2p_fwd_s = cal_p2p_gap(out->gemm, out->ngemm, 0); /* a stage's compute between its messages */
        out->p2p_bwd_s = cal_p2p_gap(out->gemm, out->ngemm, 1);
        st = calibrate_links(bk, comm, top, layer, a2a, cal_ep_sizes(m, mbs, a2a), tp, cal_tp_sizes(m, mbs, tp), reps,
                             out, e);
    }
    out->ranks = comm ? comm->size : 1;
    return st;
}

Status calibrate_compute(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e)
{
    return calibrate_compute_again(bk, comm, m, mbs, reps, out, 0, NULL, e);
}

Status calibrate_compute_again(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out,
                               int again_reps, Calibration *again, Err *e)
{
    memset(out, 0, sizeof *out);
    if (again) memset(again, 0, sizeof *again);
    if (reps < 1 || reps > 64) return err_set(e, ST_USAGE, "calibrate: repetitions %d outside [1, 64]", reps);
    if (again && (again_reps < 1 || again_reps > 32))
        return err_set(e, ST_USAGE, "calibrate: re-measure repetitions %d outside [1, 32]", again_reps);
    out->reps = reps;
    uint64_t T = (uint64_t)mbs * m->seq_len;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    out->mem_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    out->llc_bytes = strcmp(bk->name, "cpu") ? 0 : cache_llc_bytes(); /* CPU ranks: the cache a gradient meets */
    snprintf(out->backend, sizeof out->backend, "%s", bk->name);
    BackendDeviceInfo info;
    Status st = ST_OK;
    if (strcmp(bk->name, "cpu") && bk->device_info && !(st = bk->device_info(bk, &info, e))) {
        snprintf(out->device, sizeof out->device, "%.63s", info.name);
        out->cc_major = info.cc_major, out->cc_minor = info.cc_minor, out->sms = info.sm_count;
        out->mem_bytes = info.total_bytes;
    }
    if (!st) st = cal_gemms(bk, comm, m, T, reps, out, again_reps, again, e);
    if (!st) st = cal_kernels(bk, comm, m, T, reps, out, again_reps, again, e);
    if (!st) st = cal_expert_gemms(bk, comm, m, mbs, reps, out, e);
    if (!st && again) st = cal_expert_gemms(bk, comm, m, mbs, again_reps, again, e);
    out->ranks = comm ? comm->size : 1;
    if (again) { /* what it was measured on, as out */
        again->reps = again_reps, again->mem_bytes = out->mem_bytes, again->ranks = out->ranks;
        again->llc_bytes = out->llc_bytes;
        memcpy(again->backend, out->backend, sizeof again->backend);
        memcpy(again->device, out->device, sizeof again->device);
        again->cc_major = out->cc_major, again->cc_minor = out->cc_minor, again->sms = out->sms;
    }
    return st;
}
