/* cli/cmd_run.h — `fp8plan run`: its settings, shared by its files. */
#ifndef FP8PLAN_CLI_CMD_RUN_H
#define FP8PLAN_CLI_CMD_RUN_H

#include "cli/cli.h"
#include "exec/data.h"
#include "check/compare.h"
#include "exec/measure/measurement.h"
#include "exec/measure/plan_link.h"
#include "exec/model/model.h"
#include "planner/plan_routed.h"
#include "reports/table.h"
#include "util/fileio.h"

typedef struct {
    const char *backend, *model, *gpu, *recipe, *data, *catalog, *resume, *save, *trace, *loss_log;
    const char *routing_log; /* --routing-log FILE (rank 0 writes it; want_routing: every rank records its part) */
    int want_routing;
    CliOut out;        /* -o FILE: the comparison's rows, --format csv (default), json or html (a page with charts) */
    const char *stack; /* --stack NAME (NULL: fp8plan) */
    ExecOverrides ov;
    uint32_t mbs, gbs, steps, log_every;
    uint32_t dp;       /* --dp N (0: the number of ranks mpirun started; 1 without mpirun) */
    Sharding sharding; /* --zero 1 / --dist-opt (SHARD_NONE by default) */
    uint32_t tp;       /* --tp N (0 or 1: none) */
    uint32_t pp;       /* --pp N (0 or 1: none) */
    uint32_t ep;       /* --ep N: expert-parallel ranks (0 or 1: none) */
    int rank;          /* this process's rank; ranks other than 0 print and write nothing */
    ModelHyper hyper;
    int quiet;
} RunArgs;

/* The subcommand (listed in cli/commands.h). */
int cmd_run(int argc, char **argv);

extern const char *const RUN_CMD; /* "run" */
/* "fp8plan run: message" on stderr; the exit code for e->st. */
int run_fail(const Err *e);
/* Seconds on the monotonic clock (for the progress line and the build time). */
double run_now_s(void);

/* The run's CSV side files: the scaling trace and the loss log, written
 * atomically (open only when asked for). */
typedef struct {
    OutFile trace, loss, routing;
    int trace_open, loss_open, routing_open;
} RunFiles;

/* Open the files the flags ask for (a trace needs an FP8 recipe); an exit code. */
int run_files_open(const RunArgs *a, Model *m, RunFiles *f);
/* --routing-log: every rank's recorded routing gathered on rank 0 (every rank calls it after the steps) and
 * written: step,layer,rank,expert,token_copies; an exit code. */
int run_routing_write(const RunArgs *a, Model *m, RunFiles *f);
/* Commit them (rename into place); an exit code. */
int run_files_commit(RunFiles *f);
/* Drop what is open (on a failure). */
void run_files_abort(RunFiles *f);

/* The communicator (cli/cmd_run_ranks.c): MPI for CPU ranks (under mpirun, or --dp given), NCCL for a
 * GPU backend, the single-rank copy otherwise. */
Status run_make_comm(const RunArgs *a, Backend *bk, Comm **comm, Err *e);
/* The communicators the run's process holds on its device whatever the layout
 * (PlanInput.comms_min): 1 for a started NCCL one ("nccl 2.x.y ..."), whose
 * buffers are allocated even for one rank; 0 for MPI, the single-rank copies
 * and an NCCL that did not start ("nccl-local ..."). */
uint32_t run_device_comms(const Comm *comm);
/* --dp against the ranks started, the global batch a multiple of mbs x dp, ranks other than 0 quiet;
 * an exit code. */
int run_resolve_ranks(RunArgs *a, const Comm *comm);
/* The pipeline stage of rank r once the ranks are resolved: r / (tp x dp). */
uint32_t run_stage_of(const RunArgs *a, int r);

/* What every rank measured, gathered on rank 0 (cli/cmd_run_ranks.c): per rank r, its arena's bytes
 * per term (placed[r · ARENA_TERMS + t]), its communicator's counts over the steps (coll[r · CO_COUNT_
 * + c]) and the median over the timed steps of its seconds per step inside collective c (med_s). */
typedef struct {
    int n;        /* ranks */
    double steps; /* measured steps (at least 1) */
    uint64_t *placed;
    CommStats *coll;
    double *med_s;
    uint32_t
        stages; /* pipeline stages: rank r is stage r / (n / stages) (Megatron's order, exec/model/model_groups.c) */
    Plan *stage_plan; /* with stages > 1, on rank 0: stage s's plan (the run's plan with stage_view s + 1) */
    /* Expert parallelism (NULL ep_rows without it), on rank 0: every rank's routing over the run, ep_rows[r ·
     * experts + x] token copies rank r sent expert x, in ep_calls dispatches a rank, and the bytes its counts'
     * exchanges moved (ep_counts[2r] payload, [2r + 1] sent; cli/cmd_run_ranks_ep.c). */
    uint64_t *ep_rows, ep_calls, ep_buffer_bytes; /* ep_buffer_bytes: rank 0's EP buffers outside the arena */
    uint32_t experts;
    double *ep_counts;
} RankData;

/* Every rank takes part; rank 0's rd holds every rank's (the others' only their own) and, with
 * pipeline stages, the plan p for each stage. */
Status run_ranks_gather(Comm *comm, const Plan *p, const Measurement *ms, RankData *rd, Err *e);
/* The pipeline stage of rank r, and the plan its terms and bytes are compared with (p without stages). */
uint32_t run_rank_stage(const RankData *rd, int r);
const Plan *run_rank_plan(const Plan *p, const RankData *rd, int r);
void run_ranks_free(RankData *rd);
/* Rank r's bytes sent per step on collective c (whole bytes) and its payload per step. */
double run_rank_bus(const RankData *rd, int r, int c);
double run_rank_payload(const RankData *rd, int r, int c);
/* The persistent terms and the collectives the per-rank tables list. */
int run_rank_term_listed(const Plan *p, int t);
int run_rank_coll_listed(const Plan *p, const RankData *rd, int c);
/* Rank 0 prints every rank's persistent memory terms and bytes per collective (and its payload)
 * beside the plan's, and the seconds per collective; an exit code, 1 when a rank differs. */
int run_rank_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd);
/* Expert parallelism (cli/cmd_run_ranks_ep.c): every rank's routing and counts' bytes gathered on rank 0
 * (nothing without experts split over ranks; every rank takes part); rank r's expert all-to-alls over the
 * run as the plan has them with that routing (planner/plan_routed.h), as measured, and at the plan's
 * uniform routing; rank 0 prints them (an exit code: 1 when a rank differs), after the per-rank tables,
 * which leave these collectives to it. */
Status run_ranks_gather_ep(Comm *comm, const Model *m, RankData *rd, Err *e);
int run_rank_ep(const Plan *p, const RankData *rd, int r, EpRouted *planned, EpRouted *measured, Err *e);
int run_rank_ep_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd);
/* Collective c is an expert all-to-all the EP table compares (rd holds the routing). */
int run_rank_ep_coll(const RankData *rd, int c);
/* The -o table of a multi-rank run (cli/cmd_run_ranks_csv.c): a leading rank column; rank 0's
 * comparison rows (rank 0), then per rank a rank_memory row per persistent term and rank_comm rows
 * per collective (bus bytes with the median seconds per step, and its payload). NULL: no memory. */
Table *run_rank_csv(const Table *rows0, const Plan *p, const RankData *rd);

/* a->steps training steps, printing each (unless quiet) and writing the side
 * files; an exit code: 0, a failed step's, or 128 + the signal that stopped
 * the run (ms holds the steps taken either way). */
int run_train(const RunArgs *a, Model *m, DataStream *d, Measurement *ms, RunFiles *f);

/* With one rank, SIGINT/SIGTERM stop run_train after the step in flight (a
 * second signal ends the process); several ranks keep the default action. */
void run_stop_on_signals(int ranks);

/* The comparison with the plan: summary lines and tables on stdout, every row
 * to -o (CSV, JSON, or the HTML page; with ranks, a multi-rank run, the CSV and
 * JSON hold run_rank_csv's rows); 0, 1 when a checked row is outside its
 * tolerance, or an output error's code. */
int run_report(const RunArgs *a, const Plan *p, const Model *m, const Measurement *ms, const DataStream *d,
               const RankData *ranks);

/* --format html: write the run as an HTML page to a->out.path (cli/cmd_run_html.c): the comparison's
 * memory, time and collective rows charted against their accepted bands, every step's loss and phases,
 * then csv (the rows -o writes as CSV). summary and verdict: the text report's closing lines. Returns
 * an exit code. */
int run_html(const RunArgs *a, const Plan *p, const Model *m, const Measurement *l, const Comparison *c,
             const Table *csv, const char *summary, const char *verdict);

#endif
