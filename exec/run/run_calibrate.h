/* exec/run/run_calibrate.h — `fp8plan calibrate`'s session below the CLI: the backend and the ranks'
 * communicator, the measurements of exec/measure/calibrate.h (a profile and its quick re-measure, or for
 * --check the re-measure alone) with the load average around them, the judgement of one against the other,
 * and, on failure over several ranks, stopping every rank. Prints nothing: cli/cmd_calibrate.c shows it. */
#ifndef FP8PLAN_EXEC_RUN_RUN_CALIBRATE_H
#define FP8PLAN_EXEC_RUN_RUN_CALIBRATE_H

#include "exec/comm/comm.h"
#include "exec/measure/calibrate.h"
#include "exec/measure/plan_link.h"

typedef struct {
    Backend *bk;
    Comm *comm;
    ModelSpec m;            /* one layer of it is measured */
    Calibration *c, *again; /* the measurement; the quick re-measure (--check: the profile's row) */
    double load0, load1;    /* the load average before and after (-1: unknown) */
} CalSession;

/* Measure on backend at one layer of base (sized by ov) with mbs sequences a rank: with check_row NULL,
 * a profile (calibrate_host_again: compute, memory, launch and the links) at reps repetitions and a quick
 * re-measure of its compute figures at again_reps(reps), taken interleaved with the profile's (calibrate.h:
 * calibrate_compute_again), the all-to-all's messages after it; with check_row, a measurement alone at reps. Every
 * rank calls it. Fills s (close it with cal_session_close even on failure). */
Status cal_session_measure(CalSession *s, const char *backend, const ModelSpec *base, const ExecOverrides *ov,
                           uint32_t mbs, int reps, const GpuSpec *check_row, Err *e);

/* The quick re-measure's repetitions: half the profile's, at least 3 (all of them below 3). */
int cal_again_reps(int reps);

/* The judgement (cal_judge into j): with check_row, the row's figures (the spreads those of the re-measure
 * now: noisy when now cannot tell, moved when the machine changed) against the measurement — s->again
 * then holds the row's figures; without, the profile against its re-measure. 1 past the bounds. */
int cal_session_judge(CalSession *s, const GpuSpec *check_row, CalJudge *j);

/* Stop every rank (MPI_Abort) when rc is a failure that may leave peers waiting in a collective, then free what s
 * holds (MPI finalized: a verdict rank 0 gives after the last collective is a plain exit). */
void cal_session_close(CalSession *s, int rc);

#endif
