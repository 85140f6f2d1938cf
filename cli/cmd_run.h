/* cli/cmd_run.h — `fp8plan run`'s rendering, shared by its files: the session itself (exec/run/run.h)
 * shows what it does through the hooks cli/cmd_run.c gives it. */
#ifndef FP8PLAN_CLI_CMD_RUN_H
#define FP8PLAN_CLI_CMD_RUN_H

#include "cli/cli.h"
#include "check/compare.h"
#include "exec/run/run.h"
#include "reports/table.h"
#include "util/fileio.h"

/* The subcommand (listed in cli/commands.h). */
int cmd_run(int argc, char **argv);

extern const char *const RUN_CMD; /* "run" */

/* Rank 0 prints every rank's persistent memory terms and bytes per collective (and its payload)
 * beside the plan's, and the seconds per collective (cli/cmd_run_tables.c); an exit code, 1 when a rank
 * differs. */
int run_rank_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd);
/* Expert parallelism: rank r's expert all-to-alls over the run as the plan has them with the measured
 * routing, as measured, and at the plan's uniform routing; rank 0 prints them (an exit code: 1 when a
 * rank differs), after the per-rank tables, which leave these collectives to it. */
int run_rank_ep_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd);
/* The -o table of a multi-rank run (cli/cmd_run_ranks_csv.c): a leading rank column; rank 0's
 * comparison rows (rank 0), then per rank a rank_memory row per persistent term and rank_comm rows
 * per collective (bus bytes with the median seconds per step, and its payload). NULL: no memory. */
Table *run_rank_csv(const Table *rows0, const Plan *p, const RankData *rd);

/* The comparison with the plan (cli/cmd_run_report.c): summary lines and tables on stdout, every row
 * to out (CSV, JSON, or the HTML page; with ranks, a multi-rank run, the CSV and JSON hold
 * run_rank_csv's rows); 0, 1 when a checked row is outside its tolerance, or an output error's code. */
int run_report(const RunSpec *a, const CliOut *out, const Plan *p, const Model *m, const Measurement *ms,
               const DataStream *d, const RankData *ranks);

/* --format html: write the run as an HTML page to out->path (cli/cmd_run_html.c): the comparison's
 * memory, time and collective rows charted against their accepted bands, every step's loss and phases,
 * then csv (the rows -o writes as CSV). summary and verdict: the text report's closing lines. Returns
 * an exit code. */
int run_html(const RunSpec *a, const CliOut *out, const Plan *p, const Model *m, const Measurement *l,
             const Comparison *c, const Table *csv, const char *summary, const char *verdict);

#endif
