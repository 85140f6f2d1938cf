/* cli/cmd_run.h — what `fp8plan run` shares between its files: the run's
 * settings, its per-step measurements, and the end-of-run report. */
#ifndef FP8PLAN_CLI_CMD_RUN_H
#define FP8PLAN_CLI_CMD_RUN_H

#include "cli/cli.h"
#include "exec/data.h"
#include "exec/gpt.h"
#include "exec/plan_link.h"

typedef struct {
    const char *backend, *model, *gpu, *recipe, *data, *catalog, *resume, *save, *out, *trace;
    ExecOverrides ov;
    uint32_t mbs, steps, log_every;
    GptHyper hyper;
    int quiet;
} RunArgs;

/* The subcommand (listed in cli/commands.h). */
int cmd_run(int argc, char **argv);

/* Per-step measurements of a run (steps entries). */
typedef struct {
    uint32_t steps, first_step; /* steps run, global index of the first */
    float *loss;
    double *phase[4]; /* seconds per step: forward, backward, optimizer, communication */
    double *step_s;
} RunLog;

/* Print the memory and time tables (text, stdout) and write the same rows as
 * one CSV to a->out when set. Returns an exit code: 0, 1 when a checked term
 * is outside its tolerance, or the output error's code. */
int run_report(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *log, const DataStream *d);

#endif
