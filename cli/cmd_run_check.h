/* cli/cmd_run_check.h — what `fp8plan run` checks and says before and while it trains, kept apart from
 * the run itself: paths validated before any work, outputs that would overwrite each other or an input
 * refused, a sequence beyond the model's context and a long CPU run announced, and a progress line with
 * an ETA on a terminal. */
#ifndef FP8PLAN_CLI_CMD_RUN_CHECK_H
#define FP8PLAN_CLI_CMD_RUN_CHECK_H

#include <stdint.h>

#include "cli/cmd_run.h"

/* Before anything is built: -o, --save, --scaling-trace and --loss-log can be written (73 if not), --data and
 * --resume can be read (66), no two outputs name the same file and no output names an input (64;
 * --save may name the --resume file: the checkpoint is replaced atomically after the run). Returns 0
 * or the exit code, the message printed. */
int run_check_paths(const RunSpec *a);

/* Warnings on stderr once the model and plan are known: --seq beyond the catalog model's context
 * (learned positions: the run trains a longer position table than the catalog's model has), and a
 * CPU run long enough to take minutes (its GEMM work, and how to shrink it). */
void run_warn_model(const RunSpec *a, const ModelSpec *base, const ModelSpec *m, const Plan *p, const char *backend);

/* What the run is doing, on stderr when it is a terminal: the model build ("building ...") and one
 * line per step rewritten in place with the step time and the ETA, erased at the end. */
void run_progress_build(const ModelSpec *m, const Plan *p, int threads);
void run_progress_step(uint32_t done, uint32_t total, double elapsed_s);
void run_progress_end(void);

#endif
