/* cli/cmd_run.h — what `fp8plan run` shares between its files: the run's
 * settings, its per-step measurements, and the end-of-run report. */
#ifndef FP8PLAN_CLI_CMD_RUN_H
#define FP8PLAN_CLI_CMD_RUN_H

#include "cli/cli.h"
#include "exec/data.h"
#include "exec/model/gpt.h"
#include "exec/measure/plan_link.h"
#include "exec/measure/run_log.h"

typedef struct {
    const char *backend, *model, *gpu, *recipe, *data, *catalog, *resume, *save, *out, *trace;
    const char *stack; /* --stack NAME (NULL: fp8plan) */
    ExecOverrides ov;
    uint32_t mbs, steps, log_every;
    GptHyper hyper;
    int quiet;
    int html; /* --format html: -o FILE is the HTML page instead of the CSV */
} RunArgs;

/* The subcommand (listed in cli/commands.h). */
int cmd_run(int argc, char **argv);

/* Print the memory, time and throughput tables (text, stdout) and write the
 * same rows as one CSV to a->out when set. dm: the device measurements (NULL
 * or without hooks on the CPU); peak: the device's catalog match for MFU (NULL
 * on the CPU). Returns an exit code: 0, 1 when a checked term is outside its
 * tolerance, or the output error's code. */
int run_report(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *log, const DataStream *d,
               const DevMeasure *dm, const DevmPeak *peak);

/* The memory and time rows of the report (exec/measure/measure.h). */
typedef struct {
    const MeasureRow *mem;
    int nm;
    const MeasureRow *tim;
    int nt;
} RunRows;

/* --format html: write the run as an HTML page to a->out (cli/cmd_run_html.c). csv: the rows -o
 * writes as CSV; summary and verdict: the text report's closing lines. Returns an exit code. */
int run_html(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *l, RunRows rows, const Table *csv,
             const char *summary, const char *verdict);

#endif
