/* cli/cmd_run_check.h — what `fp8plan run` shows while it builds and trains, kept apart from the run
 * itself: a progress line with an ETA on a terminal. (What a run checks before any work and the warnings
 * about its model: exec/run/run.h.) */
#ifndef FP8PLAN_CLI_CMD_RUN_CHECK_H
#define FP8PLAN_CLI_CMD_RUN_CHECK_H

#include <stdint.h>

#include "cli/cmd_run.h"

/* What the run is doing, on stderr when it is a terminal: the model build ("building ...") and one
 * line per step rewritten in place with the step time and the ETA, erased at the end. */
void run_progress_build(const ModelSpec *m, const Plan *p, int threads);
void run_progress_step(uint32_t done, uint32_t total, double elapsed_s);
void run_progress_end(void);

#endif
