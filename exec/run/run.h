/* exec/run/run.h — a training run's session: the backend, the communicator and the ranks, the catalog
 * rows and the plans, the model, the data, the steps, the checkpoints, the side files, what every rank
 * measured gathered on rank 0, and the signals that stop a run — everything `fp8plan run` does except
 * reading its flags and rendering its report.
 *
 * The session prints nothing itself: what a user sees (failures, notes, progress, the header, the tables,
 * the report) goes through the caller's RunHooks, called at the moment the run reaches that point, so the
 * output keeps its order. cli/cmd_run.c fills a RunSpec from the flags and renders through reports/. */
#ifndef FP8PLAN_EXEC_RUN_RUN_H
#define FP8PLAN_EXEC_RUN_RUN_H

#include "catalog/catalog.h"
#include "exec/backend/data.h"
#include "exec/measure/measurement.h"
#include "exec/measure/plan_link.h"
#include "exec/model/model.h"
#include "planner/plan_routed.h"
#include "util/fileio.h"

/* What a run is asked to do (the flags of `fp8plan run`). */
typedef struct {
    const char *backend, *model, *gpu, *recipe, *data, *catalog, *resume, *save, *trace, *loss_log;
    const char *routing_log; /* --routing-log FILE (rank 0 writes it; want_routing: every rank records its part) */
    int want_routing;
    const char *out;   /* -o FILE (the caller writes it; ranks other than 0 have it cleared) */
    const char *stack; /* --stack NAME (NULL: fp8plan) */
    ExecOverrides ov;
    uint32_t mbs, gbs, steps, log_every;
    uint32_t dp;       /* --dp N (0: the number of ranks mpirun started; 1 without mpirun) */
    Sharding sharding; /* --zero 1 / --dist-opt (SHARD_NONE by default) */
    uint32_t tp;       /* --tp N (0 or 1: none) */
    uint32_t pp;       /* --pp N (0 or 1: none) */
    uint32_t first_stage_layers, last_stage_layers; /* --first/--last-stage-layers N (0: an even share) */
    uint32_t ep;                                    /* --ep N: expert-parallel ranks (0 or 1: none) */
    uint32_t etp; /* --etp N: expert-tensor-parallel ranks (0 or 1: none; the CPU backend runs more, cuda exits 69) */
    int rank;     /* this process's rank; ranks other than 0 print and write nothing */
    ModelHyper hyper;
    float mtp_weight; /* --mtp-weight X: the MTP loss's weight (< 0: MODEL_MTP_WEIGHT, DeepSeek-V3's 0.3) */
    int quiet;
} RunSpec;

/* The run's CSV side files: the scaling trace, the loss log and the routing log, written atomically
 * (open only when asked for). */
typedef struct {
    OutFile trace, loss, routing;
    int trace_open, loss_open, routing_open;
} RunFiles;

/* What every rank measured, gathered on rank 0 (exec/run/run_ranks.c): per rank r, its arena's bytes
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
     * exchanges moved (ep_counts[2r] payload, [2r + 1] sent; exec/run/run_ranks_ep.c). */
    uint64_t *ep_rows, ep_calls, ep_buffer_bytes; /* ep_buffer_bytes: rank 0's EP buffers outside the arena */
    uint64_t *ep_rank_calls;                      /* (n) each rank's dispatches: its stage's MoE layers' */
    /* With pipeline stages and experts, on rank 0: the last step's routing of every MoE layer of the model
     * (route_layers x experts, each stage's DP-summed counts) and the auxiliary loss of rank 0's pipeline (its
     * stages' DP rank 0, summed stage by stage); NULL route_counts without stages. */
    uint64_t *route_counts;
    uint32_t route_layers;
    double moe_aux;
    /* (n) each rank's bytes outside the arena, on rank 0: its EP buffers (stages hold different layers, so
     * different amounts) */
    uint64_t *outside;
    uint32_t experts;
    uint32_t etp; /* expert tensor parallelism (> 1: its gather and reduce-scatter join the EP table) */
    double *ep_counts;
    /* With a host profile's per-message all-to-all fits, on rank 0: ep_call_s[r · EPR_COUNT_ + i] rank r's mean
     * planned seconds of one call of expert all-to-all i (EPR_*), each call planned from the messages it sent
     * and received (plan_a2a_peers_s; 0: not planned per message); NULL without EP. */
    double *ep_call_s;
} RankData;

/* A session while it runs: what the hooks are shown. */
typedef struct {
    const RunSpec *spec; /* the spec as resolved against the ranks (dp, gbs, rank, quiet) */
    Backend *bk;
    Comm *comm;
    Catalog *cat;
    const ModelSpec *base; /* the catalog's model; model: with the size overrides */
    ModelSpec model;
    const Plan *built, *plan; /* what the executor builds; what the run is held to (--stack) */
    Model *m;
    DataStream d;
    Measurement ms;
    double build_s; /* seconds the model took to build */
    RankData rd;    /* several ranks: every rank's measurements (on rank 0) */
    /* a host profile's plan on the CPU backend: the ranks, the cores they share (the union of their CPU sets) and the stretch of
     * the compute rates the plan took for them (planner/plan_host.h; 1: none, ranks <= cores) */
    uint32_t host_ranks, host_cores;
    double host_stretch;
} RunSession;

/* What the caller shows. Every hook may be NULL (nothing shown); a hook that returns an int returns an
 * exit code (0 ok, 1 a measured value outside its tolerance). */
typedef struct {
    void *ctx;
    void (*fail)(void *ctx, Status st, const char *msg); /* a failure (the session returns its exit code) */
    void (*note)(void *ctx, const char *msg);            /* a warning or note, one line */
    void (*say)(void *ctx, const char *text);            /* text for the run's log (stdout), whole lines */
    void (*planned)(void *ctx, const RunSession *s);     /* the plans built; the model is about to be */
    void (*built)(void *ctx);                            /* the model built (or not) */
    void (*started)(void *ctx, const RunSession *s);     /* before the first step (not with quiet) */
    void (*step_begin)(void *ctx);                       /* a step's log line follows */
    void (*step_end)(void *ctx, uint32_t done, uint32_t total, double elapsed_s); /* after each step */
    int (*ranks)(void *ctx, const RunSession *s);  /* several ranks, every rank: after the gathering */
    int (*report)(void *ctx, const RunSession *s); /* rank 0: the report, while the side files are pending */
} RunHooks;

/* The whole run (exec/run/run_session.c): an exit code — 0, 1 (a measured value outside its tolerance,
 * a rank that differs), a failure's code (sysexits), or 128 + the signal that stopped a one-rank run
 * (the report then covers the steps taken). The side files, the checkpoint and what report writes land
 * together: all new, or all as they were. One session at a time in a process (signals are the process's). */
int run_session(const RunSpec *spec, const RunHooks *hooks);

/* For the session's parts (exec/run/): a failure shown through the hooks, and its exit code. */
int run_fail(const Err *e);
int run_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void run_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The session's hooks (never NULL once a session runs: hooks with no functions when none were given). */
const RunHooks *run_hooks(void);
/* Seconds on the monotonic clock (for the progress line and the build time). */
double run_now_s(void);

/* Before anything is built (exec/run/run_check.c): -o, --save, --scaling-trace and --loss-log can be written (73 if not), --data and
 * --resume can be read (66), no two outputs name the same file and no output names an input (64;
 * --save may name the --resume file: the checkpoint is replaced atomically after the run). Returns 0
 * or the exit code, the message shown. */
int run_check_paths(const RunSpec *a);

/* Warnings (notes) once the model and plan are known: --seq beyond the catalog model's context
 * (learned positions: the run trains a longer position table than the catalog's model has), and a
 * CPU run long enough to take minutes (its GEMM work, and how to shrink it). */
void run_warn_model(const RunSpec *a, const ModelSpec *base, const ModelSpec *m, const Plan *p, const char *backend);

/* Open the files the flags ask for (a trace needs an FP8 recipe); an exit code. */
int run_files_open(const RunSpec *a, Model *m, RunFiles *f);
/* --routing-log: every rank's recorded routing gathered on rank 0 (every rank calls it after the steps) and
 * written: step,layer,rank,expert,token_copies; an exit code. */
int run_routing_write(const RunSpec *a, Model *m, RunFiles *f);
/* Commit them (rename into place); an exit code. */
int run_files_commit(RunFiles *f);
/* Drop what is open (on a failure). */
void run_files_abort(RunFiles *f);

/* The communicator (exec/run/run_ranks.c): MPI for CPU ranks (under mpirun, or --dp given), NCCL for a
 * GPU backend, the single-rank copy otherwise. */
Status run_make_comm(const RunSpec *a, Backend *bk, Comm **comm, Err *e);
/* The communicators the run's process holds on its device whatever the layout
 * (PlanInput.comms_min): 1 for a started NCCL one ("nccl 2.x.y ..."), whose
 * buffers are allocated even for one rank; 0 for MPI, the single-rank copies
 * and an NCCL that did not start ("nccl-local ..."). */
uint32_t run_device_comms(const Comm *comm);
/* --dp against the ranks started, the global batch a multiple of mbs x dp, ranks other than 0 quiet;
 * an exit code. */
int run_resolve_ranks(RunSpec *a, const Comm *comm);
/* The pipeline stage of rank r once the ranks are resolved: r / (tp x dp). */
uint32_t run_stage_of(const RunSpec *a, int r);

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
/* Expert parallelism (exec/run/run_ranks_ep.c): every rank's routing and counts' bytes gathered on rank 0
 * (nothing without experts split over ranks; every rank takes part), and the whole router biases' bytes
 * outside the arena; rank r's expert all-to-alls over the
 * run as the plan has them with that routing (planner/plan_routed.h) and as measured (0, or -1 with e set
 * when the routing does not fit the plan). */
Status run_ranks_gather_ep(Comm *comm, const Model *m, RankData *rd, Err *e);
/* Every rank's routing of the last step and auxiliary loss into rd on rank 0 (pipeline stages with experts;
 * nothing without stages). Every rank calls it. */
Status run_ranks_gather_routing(Comm *comm, const Model *m, RankData *rd, Err *e);
/* The whole model's counts from every rank's row (hdr: per rank its moe_first, moe_layers and DP rank; counts:
 * per rank layers x experts, its stage's rows filled): each stage's rows from its DP rank 0, and the sum of those
 * ranks' aux in rank order (a NaN or Inf of any of them stays in it). */
void run_routing_stages(const uint64_t *hdr, const uint64_t *counts, const double *aux, int ranks, uint64_t layers,
                        uint64_t experts, uint64_t *out, double *aux_out);
int run_rank_ep(const Plan *p, const RankData *rd, int r, EpRouted *planned, EpRouted *measured, Err *e);
/* Rank r's expert all-to-alls' planned seconds a step (EPR_*; out[EPR_COUNTS] its stage plan's) from its own calls'
 * messages (rd->ep_call_s, through plan_ep_routed_time on its stage's plan); 1 when they were planned so, 0 when
 * out holds the uniform routing's plan (no per-message fits, or no EP). */
int run_rank_ep_times(const Plan *p, const RankData *rd, int r, double out[EPR_COUNT_]);
/* Collective c is an expert all-to-all the EP table compares (rd holds the routing), or at etp > 1 the ETP
 * group's gather or reduce-scatter, whose bytes follow the routing too. */
int run_rank_ep_coll(const RankData *rd, int c);
/* Rank r's etp_allgather and etp_reducescatter over the run, measured and as planned with the measured routing
 * (plan_etp_routed on its stage's plan): 0, or -1 with e set (rd has no ETP rows, or the routing does not fit). */
int run_rank_etp(const Plan *p, const RankData *rd, int r, EtpRouted *planned, EtpRouted *measured, Err *e);

/* a->steps training steps, showing each (unless quiet) and writing the side
 * files; an exit code: 0, a failed step's, or 128 + the signal that stopped
 * the run (ms holds the steps taken either way). */
int run_train(const RunSpec *a, Model *m, DataStream *d, Measurement *ms, RunFiles *f);

/* With one rank, SIGINT/SIGTERM stop run_train after the step in flight (a
 * second signal ends the process); several ranks keep the default action. */
void run_stop_on_signals(int ranks);

#endif
