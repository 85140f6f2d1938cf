/* planner/plan_host.c — ranks that time-share a host's cores (issue 47: 4 ranks on a 2-core machine).
 *
 * The executor's CPU ranks each run a pool of as many threads as the cores they may use (exec/backend/par.c:
 * sched_getaffinity), so one rank alone keeps every core busy while it computes. R ranks on C cores, all
 * computing, then hold R x C threads on C cores, and the kernel's fair scheduler (CFS / EEVDF) gives each
 * runnable thread an equal share of the cores over any stretch longer than its time slice (a few ms; Linux
 * Documentation/scheduler/sched-design-CFS.rst, sched-eevdf.rst): a rank's compute runs at 1/R of the machine.
 *
 * A host profile's rates are not that share. calibrate starts every sample on all its ranks at once
 * (exec/measure/calibrate_bufs.h together()), but a sample (one layer's GEMM, one kernel: 0.1-1 ms) is shorter
 * than a slice, so the ranks that get the cores first finish it before the others are scheduled: the rates a
 * profile of R_p >= C ranks measures are those of C ranks sharing the cores, not R_p. Measured on this project's
 * 2-vCPU host (load 2.9-5.6, one profile each, GPT-2 demo of tests/bench/time_survey.sh): the 4-rank profile's
 * GEMM rates were 0.48 of the 1-rank profile's (BF16 100 against 210 GFLOP/s), its element-wise rate 0.49 (0.784
 * against 1.60 GB/s): the share of 2 ranks, 1/2. A 2-rank profile holds 1/2 by construction (Open MPI binds each
 * rank to a core of its own, its pool one thread there). A step (tens of ms, every rank synchronized by its
 * collectives) is far longer than a slice, so a run of R > C ranks gets 1/R: its compute takes R / C times the
 * profile's. At R <= C every rank has its cores and nothing changes.
 *
 * Not stretched: the memory stream (AdamW's states, a GEMM's operand traffic, hbm_bw). Sharing cores does not
 * divide memory bandwidth by the ranks the way it divides cycles: the 4-rank profile's AdamW stream was 0.89 of
 * the 1-rank profile's (20.7 against 23.4 GB/s), and the runs' optimizer came within -19...+12 % of the profile's
 * rate at a load of 5-7 (DP 4, TP 2 x DP 2, PP 2 x DP 2: docs/calibrate.md, "The ranks' share of the cores").
 * The collectives keep the link fits calibrate measured with every rank in the call; the time a rank waits in a
 * collective for a peer that is off its core (the run's collective_wait) is not planned. */
#include "planner/plan_host.h"

double plan_host_stretch(uint32_t ranks, uint32_t cores)
{
    return cores && ranks > cores ? (double)ranks / (double)cores : 1.0;
}

double plan_host_share(const GpuSpec *g, uint32_t ranks, uint32_t cores, GpuSpec *out)
{
    *out = *g;
    const double s = g->host ? plan_host_stretch(ranks, cores) : 1.0;
    if (s == 1.0) return 1.0;
    out->mamf_bf16 = g->mamf_bf16 / s, out->mamf_fp8 = g->mamf_fp8 / s;
    out->flops_bf16 = g->flops_bf16 / s, out->flops_fp8 = g->flops_fp8 / s, out->flops_fp32 = g->flops_fp32 / s;
    out->elem_bw = g->elem_bw / s;
    for (int k = 0; k < ELEM_KINDS; k++) out->elem_kind_bw[k] = g->elem_kind_bw[k] / s;
    out->scaled_optim_bw = g->scaled_optim_bw / s, out->o1_optim_bw = g->o1_optim_bw / s;
    out->group_gemm_s = g->group_gemm_s * s;
    return s;
}
