/* exec/measure/calibrate.h — this machine measured the way the planner
 * describes a device (`fp8plan calibrate`): a host profile.
 *
 * What is measured, through the executor's own code (the backend's kernels and
 * the communicator the runs use), at the shapes of one layer of the model a run
 * will train:
 *   GEMM       the twelve GEMMs of a layer (fprop, dgrad, wgrad of QKV, proj,
 *              FC1, FC2) with the FP8 operands the FP8 recipes use (E4M3 x E4M3
 *              forward, E5M2 x E4M3 backward), the same twelve in BF16 plus
 *              the LM head's three (BF16 in every recipe), and in FP32 (FP32 outputs): per
 *              path the FLOPs of its shapes over the sum of their median times
 *              (so the planner's sum over those shapes reproduces the measured
 *              sum);
 *   memory     the memory-bound kernels of a step at the step's sizes: AdamW
 *              over the model's parameters (at most 16 Mi), a stream — its
 *              bytes over its median time (hbm_gbps, what the optimizer and the
 *              GEMMs' operands are timed at); a layer's norm, activation,
 *              residual add and FP8 cast + transpose and the loss's
 *              cross-entropy — their bytes over their median times, each
 *              weighted by its calls per micro-batch (elem_gbps: a CPU's
 *              element-wise kernels are compute-bound — tanh, exp, FP8
 *              rounding — at a fraction of the stream's rate);
 *   optimizer  FP8-LM's optimizer (fp8_adam: FP16 master, E4M3 m, FP16 v, E4M3
 *              gradients, each state re-scaled: two passes) over the same
 *              parameters: the planner's bytes of it (17 B per parameter:
 *              gradient 1, master 2 + m 1 + v 2 read and written, the second
 *              pass reading the four again) over its median time
 *              (scaled_optim_gbps: what the planner times the FP8-LM and
 *              MS-AMP optimizers at; a CPU's is compute-bound); MS-AMP O1's
 *              (fp8_adam with FP32 m and v: the scaled FP16 weight updated in
 *              place, E4M3 gradients) the same way, 32 B per parameter
 *              (gradient 1, weight 2 + m 4 + v 4 read and written, the second
 *              pass reading the four again: o1_optim_gbps);
 *   launch     the median time of the smallest calls a layer makes (a
 *              16x16x16 GEMM, a 256-element add, norm and activation): the
 *              fixed cost of a call, the planner's launch floor;
 *   link       with two or more ranks: the communicator's all-reduce at sizes
 *              from 64 B up to the model's gradient all-reduce (parameters x
 *              4 B; cal_link_sizes), FP32, its transfer time as a run counts
 *              it (after every rank has arrived), each call after the caches
 *              were evicted and (over MPI) with one rank arriving late, as a
 *              run's calls follow a step's kernels; bus bandwidth per size; the latency
 *              from the smallest, the bandwidth from the two largest — the
 *              regime of the run's largest collective (cal_fit_link).
 * The same code measures a GPU (`calibrate --backend cuda`): the backend's
 * kernels and cuBLASLt GEMMs, the NCCL all-reduce between GPU ranks.
 * Timing is the host's monotonic clock on the CPU backend and the device's
 * own timestamps (the backend's mark/elapsed: CUDA events around each call)
 * where the backend has them; every figure is a median over reps
 * repetitions, with its spread (max − min) / median. Never prints. */
#ifndef FP8PLAN_EXEC_CALIBRATE_H
#define FP8PLAN_EXEC_CALIBRATE_H

#include <stdint.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "planner/stack.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CAL_PATH_FP8 = 0, CAL_PATH_BF16, CAL_PATH_FP32, CAL_PATHS };
enum { CAL_EXPERT_GEMMS = 6, CAL_MAX_GEMMS = 48, CAL_MAX_KERNELS = 10, CAL_MAX_SIZES = 20, CAL_LINK_REPS_MAX = 64 };
/* The link sweep's largest payload, clamped (cal_link_sizes): at least 4 KiB (four sizes to fit), at most
 * 1 GiB (MPI counts bytes in an int); the buffer an element-wise kernel reads and writes before each call
 * to evict the caches: 64 MiB. */
#define CAL_LINK_TOP_MIN ((uint64_t)4096)
#define CAL_LINK_TOP_MAX ((uint64_t)1 << 30)
#define CAL_LINK_EVICT   ((uint64_t)64 << 20)

typedef struct {
    char what[24]; /* "fc1 dgrad", "head fprop", ... */
    int path;      /* CAL_PATH_* */
    uint64_t m, n, k;
    Dtype out_dtype;        /* D's: BF16 (FP32 on the FP32 path), FP32 for a weight gradient and the logits */
    int accum;              /* 1: added into D (a weight gradient, as the executor accumulates), 0: D overwritten */
    double seconds, spread; /* median of one call, (max - min) / median */
    double iqr;             /* (q3 - q1) / median (cal_stats) */
    int calls;              /* calls a sample's mean is over (cal_sample_calls; 0: one, a call per sample) */
} CalGemm;

typedef struct {
    char what[24];
    double bytes;           /* read + written by one call */
    double seconds, spread; /* median of one call */
    double iqr;             /* (q3 - q1) / median */
    int calls;              /* calls a sample's mean is over (cal_sample_calls) */
} CalKernel;

typedef struct {
    uint64_t payload; /* bytes of the array (nccl-tests' S) */
    double seconds;   /* median over reps, the slowest rank's */
    double spread;    /* (max - min) / median */
    double busbw;     /* bytes/s: S · 2(n−1)/n / seconds */
    double iqr;       /* (q3 - q1) / median (cal_stats; calibrate_link's all-reduce sweep: 0) */
} CalColl;

/* One collective's sweep (calibrate_links): every op the executor runs, at the sizes of the all-reduce's sweep,
 * per reduction path where reducing costs differ. */
/* 11 payload sweeps x CAL_FIT_RANGES_MAX (5) ranges at most, and the all-to-all's per-message sweep (eager,
 * rendezvous: 2 fits) */
enum { CAL_MAX_SWEEPS = 13, CAL_MAX_FITS = GPU_LINK_FITS_MAX };
typedef struct {
    CommOp op;
    Dtype dtype; /* the elements moved (a reduction's path: link_path_of) */
    int grad;    /* 1: the FP32 all-reduce of a gradient, its payload from memory (LINK_PATH_FP32_GRAD); 2: the same,
                  * the even rank of each pair a layer's backward late (the tied embedding's: LINK_PATH_FP32_EMB) */
    int per_msg; /* 1: the all-to-all's per-message sweep (pt[].payload: the message to each peer, bytes) */
    int n;
    CalColl pt[CAL_MAX_SIZES]; /* payload, median of the slowest rank's time, spread, bus bandwidth (op's factor) */
} CalSweep;

/* A fitted range of one sweep (cal_fit_ranges): fit as the planner reads it, with what it was made from. */
typedef struct {
    LinkFit fit;
    int first, count; /* the sweep's points it was fitted to */
    double max_err;   /* the largest |fit / measured - 1| over them */
} CalRange;

typedef struct {
    int reps;
    CalGemm gemm[CAL_MAX_GEMMS];
    int ngemm;
    double rate[CAL_PATHS], rate_spread[CAL_PATHS]; /* FLOP/s per path; the largest spread of its shapes */
    double rate_iqr[CAL_PATHS];                     /* its shapes' (q3 - q1) / median weighted by their median times */
    /* a model with experts: the MoE layer's grouped expert GEMMs on the BF16 path (cal_expert_gemms), xgroups
     * experts of the uniform routing's rows; group_s, their cost per group beyond their FLOPs at rate[BF16]
     * (cal_group_cost: gpus.csv's group_gemm_us), group_iqr their (q3 - q1) / median weighted by their times */
    CalGemm xgemm[CAL_EXPERT_GEMMS];
    int nxgemm;
    uint32_t xgroups;
    double group_s, group_iqr;
    CalKernel kern[CAL_MAX_KERNELS];
    int nkern;
    double mem_bw, mem_spread;        /* bytes/s AdamW streams (hbm_gbps) */
    double elem_bw, elem_spread;      /* bytes/s of the element-wise kernels, weighted by their calls (elem_gbps) */
    double elem_kind_bw[ELEM_KINDS];  /* bytes/s of each kind's kernel alone (elem_norm_gbps ...; ElemKind) */
    double elem_kind_iqr[ELEM_KINDS]; /* and its (q3 - q1) / median */
    double scaled_optim_bw, scaled_optim_spread, scaled_optim_iqr; /* FP8-LM's fp8_adam: the planner's bytes / s */
    double o1_optim_bw, o1_optim_spread,
        o1_optim_iqr;   /* MS-AMP O1's fp8_adam (FP32 moments): the planner's bytes / s */
    uint64_t llc_bytes; /* the CPU's last-level cache (util/cache.c, sysfs; gpus.csv llc_bytes), 0: not read or a GPU */
    double mem_iqr, elem_iqr; /* (q3 - q1) / median: AdamW's; the element-wise kernels' weighted as elem_bw */
    double launch_s, launch_spread;
    /* the checked warm-up before the GEMMs (calibrate_compute_again): rounds of every layer GEMM once, until a
     * round's summed time is no more than CAL_SE_MAX below the previous round's (cal_warm_settled) on every rank,
     * at most CAL_WARM_ROUNDS_MAX; warm_first_s / warm_prev_s / warm_last_s the first, next-to-last and last
     * rounds' times (0 rounds: none made — an older profile, a catalog row) */
    int warm_rounds, warm_settled;
    double warm_first_s, warm_prev_s, warm_last_s;
    int ranks; /* the communicator's */
    CalColl coll[CAL_MAX_SIZES];
    int ncoll;
    double link_bw, link_lat;       /* fitted: bytes/s of bus bytes, s per ring step (0 0 with one rank) */
    CalSweep sweep[CAL_MAX_SWEEPS]; /* every collective op (calibrate_links; ranks > 1) */
    int nsweep;
    CalRange range[CAL_MAX_FITS]; /* their fits, per sweep 1..CAL_FIT_RANGES_MAX size ranges (links.csv) */
    int nrange;
    uint64_t eager_limit;        /* bytes: the largest message MPI sends eagerly (comm_mpi_eager_limit; 0: not found) */
    uint64_t msg_evict;          /* bytes each per-message call followed (2 x the core's L2 cache) */
    double p2p_fwd_s, p2p_bwd_s; /* the send/recv sweep's compute around its messages (cal_p2p_gap; 0: one pass) */
    double coll_gap_s;           /* the compute before each call of the all-reduce, reduce-scatter and all-gather sweeps
                          (cal_coll_gap of p2p_fwd_s; 0: one pass) */
    /* the per-message sweep judged as a figure per protocol (cal_msg_figures; a2a_judged 0: not measured — one
     * rank, or no eager limit — and not judged): message bytes/s, and the interquartile spread it was judged on */
    double a2a_bw[2], a2a_iqr[2];
    int a2a_judged, a2a_reps; /* a2a_reps: the calls per message size its spreads are over (4 x reps, <= 64) */
    int link_reps;            /* the calls per size of every op's payload sweep (4 x reps, <= 64; 0: none, one rank) */
    uint64_t mem_bytes;       /* physical memory of the host; a GPU's device memory */
    /* the backend measured: "cpu" (a host profile) or "cuda" (a GPU's: its name, compute capability and
     * multiprocessors from the backend's device_info; timing by its stream's timestamps) */
    char backend[8];
    char device[64];
    int cc_major, cc_minor, sms;
    /* how the profile was judged, quoted in its source text (empty: not judged): the load average before
     * and after, the quick re-measure's worst drift, a NOISY mark when written past the bounds on purpose */
    char judged[480];
} Calibration;

/* Measure GEMM, memory and launch on bk at the shapes of one layer of m (calibrate_host without the link):
 * what `calibrate --check` compares a profile with. calibrate_compute_again(..., again_reps, again) also fills
 * again (NULL: none) with again_reps repetitions (1..32) taken in the same session, interleaved with out's
 * (cal_again_slot): the GEMMs in rounds, every shape once a round, after a checked warm-up (Calibration's
 * warm_*, copied into again); the element-wise kernels and the optimizers the same way, in rounds of one sample of
 * every kind (each kind its own buffers); every sample the median of cal_sample_calls calls in a row; the grouped
 * expert GEMMs (a model with experts) again after out's. So the profile and its quick re-measure see the same
 * machine, and each shape's or kind's samples span the whole measurement, not one moment of it. */
Status calibrate_compute(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e);
Status calibrate_compute_again(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out,
                               int again_reps, Calibration *again, Err *e);

/* The 1-minute load average of this machine (/proc/loadavg's first field); -1 where it cannot be read. */
double cal_loadavg(void);

/* Measure GEMM, memory and launch on bk (the CPU or the CUDA backend) at the shapes of one
 * layer of m with tokens = mbs · seq rows, then the collectives when comm has
 * two or more ranks (every rank must call it; each measures the same things). */
Status calibrate_host(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out, Err *e);
/* The same with the quick re-measure of its compute figures in again (calibrate_compute_again). */
Status calibrate_host_again(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *out,
                            int again_reps, Calibration *again, Err *e);

/* The collective sweeps, their sizes and the compute put around their calls: exec/measure/calibrate_link.h. */

/* The grouped expert GEMMs of model m's MoE layer at micro-batch mbs, as the executor calls them
 * (exec/model/model_moe.c: FC1 and FC2 fprop, dgrad with the weight K-outer, wgrad accumulated in FP32; BF16
 * operands), at the uniform routing: *groups = the experts, *rows = mbs x seq x top-k token copies, each
 * expert rows / experts of them. Fills s[0..6) (m, n, k as CalGemm reads them, seconds 0) and returns 6, or 0
 * for a model without experts. */
int cal_expert_shapes(const ModelSpec *m, uint32_t mbs, uint32_t *groups, uint64_t *rows, CalGemm *s);

/* Time those six calls on bk (median of reps, one warm-up; the ranks start each call together) into
 * c->xgemm and fit c->group_s from them with c->rate[CAL_PATH_BF16] (measured first: calibrate_compute);
 * nothing (nxgemm 0) for a model without experts. */
Status cal_expert_gemms(Backend *bk, Comm *comm, const ModelSpec *m, uint32_t mbs, int reps, Calibration *c, Err *e);

/* ---- the formulas (calibrate_fit.c; pure) ---- */

/* A grouped GEMM's cost per group beyond its FLOPs at rate (FLOP/s): over the n calls g[] of `groups` groups
 * each, (sum of seconds - sum of 2 m n k / rate) / (n x groups), at least 0 (0 too for no calls, no groups or
 * a rate <= 0). Worked by hand in tests/unit/test_calibrate.c. */
double cal_group_cost(const CalGemm *g, int n, uint32_t groups, double rate);
/* Its inverse, what a row plans the grouped GEMMs at (calibrate --check): each of g's n shapes (m: all groups'
 * rows) its FLOPs at the row's BF16 rate plus groups x group_s (gpus.csv's group_gemm_us, 0 where empty) into
 * out[i].seconds, the rest of out[i] g[i]'s. Nothing for a rate <= 0 (returns 0; else n). */
int cal_group_predict(const CalGemm *g, int n, uint32_t groups, double rate, double group_s, CalGemm *out);

/* The largest |fit / measured - 1| of one size range's line at which the sweep is kept in one range: 10 %,
 * the drift a profile may have (CAL_DRIFT_MAX). Past it, cal_fit_ranges splits the sizes in two. */
#define CAL_FIT_ERR_MAX 0.10

/* A line t = a + b x through the points lo..hi-1 of (x, y), weighted 1 / y^2 (each point's relative error
 * counts alike), held to a >= 0 and b >= 0: a negative slope (a range whose time does not grow with its
 * size) gives b = 0 and a the weighted mean sum(w y) / sum(w); a negative intercept gives a = 0 and b =
 * sum(w x y) / sum(w x^2) (a line through 0). *err = the largest |a + b x / y - 1| over the points. -1 when
 * fewer than 2 points or a y <= 0. */
int cal_fit_segment(const double *x, const double *y, int lo, int hi, double *a, double *b, double *err);

/* The ranges of one sweep of op over n ranks (c: nc points, payloads increasing): bus bytes x = S x
 * comm_bus_factor(op, n), the time per call t = steps x lat + x / bw (steps = comm_ring_steps(op, n)). One
 * line over every size while it fits within CAL_FIT_ERR_MAX; else the range that misses most (of those a split
 * improves: one of 3 sizes or fewer, or whose every split misses as much, is kept and the next one tried) is split in
 * two (each of 2 sizes or more) where the worse half has the least largest error, when that beats the range
 * — [from, S_k) and [S_k, to), S_k the upper half's first size, the first range from 0 and the last with no
 * end — up to CAL_FIT_RANGES_MAX ranges (on a CPU the caches change the bandwidth: L2, L3, memory; and the
 * MPI transport changes protocol at its eager limit). Three ranges were not enough: on this project's 2-core
 * host the FP32 all-reduce's [0, 256 KiB) line missed a size by 23 % (and put 512 B at 2.6 us, below the sweep's
 * 3.1 us at 256 B), the FP32 reduce-scatter's ranges by 26 and 35 %, and the plan of TP's small all-reduces (the
 * loss's, the norms' gradients) inherited it.
 * cut > 0: a boundary the sizes are first split at whatever the lines' errors, [0, cut) and [cut, no end), when
 * each side holds 2 sizes or more (else no cut), each side then split as above: send/recv at MPI's eager limit L
 * (cut L + 1), a protocol change the sizes' errors may place elsewhere (a size past the limit on the eager line)
 * or not at all (calibrate_link.c calibrate_links).
 * out (CAL_FIT_RANGES_MAX): op, path (link_path_of(op, dt)), from, to, lat = a / steps, bw = 1 / b (0 when b
 * is 0). Returns the count, 0 when no line fits (fewer than 2 points, a time <= 0). */
enum { CAL_FIT_RANGES_MAX = 5 };
_Static_assert((CAL_MAX_SWEEPS - 1) * CAL_FIT_RANGES_MAX + 2 <= CAL_MAX_FITS,
               "links.csv holds every payload sweep's ranges and the two per-message fits");
int cal_fit_ranges(const CalColl *c, int nc, CommOp op, Dtype dt, int n, uint64_t cut, CalRange *out);
/* The links.csv path of sweep s's fits: LINK_PATH_FP32_GRAD for the gradient sweep, LINK_PATH_FP32_EMB for the tied
 * embedding's, else link_path_of(op, dtype). */
LinkPath cal_sweep_path(const CalSweep *s);
/* Its name in calibrate's tables: "fp32 grad" / "fp32 emb" for the gradient sweeps, else the dtype's. */
const char *cal_sweep_label(const CalSweep *s);

/* The per-message fits of the all-to-all (c: nc points, payload = the message to each peer in bytes, increasing;
 * seconds = one call over n ranks) with eager limit L bytes: a call sends n - 1 messages one after another, so
 * t / (n - 1) = lat + b / bw, a line (cal_fit_segment, weighted 1/t^2, held to lat >= 0, bw >= 0) per protocol:
 * eager through the points b <= L into out[0] (path LINK_PATH_EAGER, [0, L + 1)), rendezvous through b > L into
 * out[1] (LINK_PATH_RENDEZVOUS, [L + 1, no end)); the message's own share of the call (the rank's segment to
 * itself, one more message's bytes) is folded in. Returns 2, or 0 when a protocol has fewer than 2 points or
 * n < 2. */
int cal_fit_messages(const CalColl *c, int nc, uint64_t L, int n, CalRange *out);

/* The per-message sweep's messages for eager limit L (> 0): L/16, L/4, L/2 and L (eager), L + 1, 2L, 4L and 16L
 * (rendezvous), and each of the na run messages run[] (the model's expert all-to-alls' payload a rank / n), up to
 * max bytes, increasing, once each, into out (CAL_MAX_SIZES); returns the count. */
int cal_msg_sizes(uint64_t L, const uint64_t *run, int na, uint64_t max, uint64_t *out);

/* The per-message sweep (c: nc points, payload = a message's bytes, seconds = one call over n ranks, iqr its
 * points') as two judged figures, as a GEMM path's rate is built from its shapes: per protocol k (0 eager: b <= L,
 * 1 rendezvous: b > L) the message bytes the calls moved over their summed median times, bw[k] = sum b (n - 1) /
 * sum t, and iqr[k] the points' iqr weighted by their median times. Returns 0, or -1 when a protocol has no point,
 * a time is not positive or n < 2. */
int cal_msg_figures(const CalColl *c, int nc, uint64_t L, int n, double bw[2], double iqr[2]);

/* The times a profile's per-message fits (eager, rendezvous: links.csv version 2; fit[k].lat s a message, bw its
 * bytes/s) give the sweep's points c[0..nc) over n ranks: seconds = (n - 1) x (lat + b / bw) of the protocol
 * holding b (the inverse of cal_fit_messages), iqr 0 — what `calibrate --check` compares a re-measure with. */
void cal_msg_predict(const LinkFit fit[2], int n, CalColl *c, int nc);

/* Measure the per-message sweep at the ns message sizes (every rank calls it; reps calls each, at most 64):
 * s->pt[] the median of the slowest rank's time with its spread and iqr, each call after what a run's follows
 * (calibrate_link.c). s is the all-to-all's per-message sweep (per_msg 1). */
Status calibrate_msg_sweep(Backend *bk, Comm *comm, const uint64_t *sizes, int ns, int reps, CalSweep *s, Err *e);

/* The payloads of the link sweep up to top bytes: 64 · 4^i below top, then top itself (clamped to
 * [CAL_LINK_TOP_MIN, CAL_LINK_TOP_MAX] and rounded up to whole FP32 elements) — so its two largest sizes,
 * which the bandwidth is fitted to, are the regime of the largest collective a run makes (calibrate passes
 * the model's FP32 gradient all-reduce: parameters x 4 B). sizes holds CAL_MAX_SIZES; returns the count. */
int cal_link_sizes(uint64_t top, uint64_t *sizes);

/* The all-to-all sweep's element counts on rank r of n for a payload of N elements a rank (N a multiple of
 * n^2): uneven per peer, as expert parallelism's MPI_Alltoallv calls are, with the uniform routing's share
 * leaving the rank. r keeps N/n; the (n - 1)/n that leave go to the peer at distance d = (j - r) mod n in
 * proportion to d: scounts[j] = 2 d N / n^2 (the weights 1 .. n - 1 sum to n(n - 1)/2). Rank r receives
 * from s what s sends to it, rcounts[s] = 2 ((r - s) mod n) N / n^2, so every rank sends and receives N
 * elements. At n = 2 the one peer takes N/2: the even split. */
void cal_a2a_counts(int r, int n, uint64_t N, uint64_t *scounts, uint64_t *rcounts);

/* Repetitions of size s of an n-size link sweep at reps per size: the sizes whose figures every planned
 * collective is charged — the smallest (the latency) and the two largest (the bandwidth) — get 4 · reps,
 * at most CAL_LINK_REPS_MAX (their medians steadier against the ranks' arrival and a shared machine's
 * noise); the others reps. */
int cal_link_reps(int s, int n, int reps);

/* nccl-tests' bus bandwidth of an all-reduce of S bytes over n ranks in t
 * seconds: S · 2(n−1)/n / t (0 when n < 2 or t <= 0). */
double cal_allreduce_busbw(uint64_t S, int n, double t);

/* Weighted least-squares line y = a + b·x through n >= 2 points (weights w,
 * NULL: all 1): b = Σw(x−x̄)(y−ȳ) / Σw(x−x̄)², a = ȳ − b·x̄ with weighted means;
 * 0 ok, -1 when the x are all equal, the weights sum to 0 or n < 2. */
int cal_fit_line(const double *x, const double *y, const double *w, int n, double *a, double *b);

/* The link from an all-reduce sweep over n ranks (sizes increasing, at least
 * 3), for the planner's t = 2(n−1)·lat + bus bytes / bw: lat = t(smallest) /
 * 2(n−1) (its few bytes neglected; at least 1 ns), but at most the least t of
 * any size / 2(n−1) (under load the smallest's median can exceed a larger
 * size's: no call takes less than its latency); bw = the bus bytes of the
 * two largest sizes over their times less their latency (nccl-tests quote bus
 * bandwidth at large sizes: on a CPU those are past the caches, where a
 * gradient all-reduce runs). -1 when the sweep gives no positive bandwidth. */
int cal_fit_link(const CalColl *c, int nc, int n, double *lat, double *bw);

/* Median and (max − min) / median of v[0..n) (n <= 64); sorts a copy. */
void cal_median(const double *v, int n, double *median, double *spread);

/* The robust statistics of v[0..n) (n <= 64; NaN for all with n outside [1, 64] or a median <= 0): the
 * median, (max − min) / median, and the interquartile spread (q3 − q1) / median with Tukey's hinges — q1
 * the median of the lower half, q3 of the upper half, both halves holding the median when n is odd
 * (n = 5 sorted {1, 2, 3, 4, 5}: q1 = 2 of {1, 2, 3}, q3 = 4 of {3, 4, 5}). One slow outlier among n >= 4
 * moves q3 by one rank, not by its size: the spread a profile is judged on. */
typedef struct {
    double median, spread, iqr;
} CalStat;
void cal_stats(const double *v, int n, CalStat *s);

/* ---- judging a profile (calibrate_judge.c; pure) ---- */

/* The figures of a profile the planner times a step with, in the catalog's units of a rate: GEMM per path
 * (FLOP/s), AdamW's stream, the element-wise kernels and the scaled-state optimizer (bytes/s). The launch floor (microseconds, the
 * stack's row) and the link (ranks > 1 only) are printed but not judged. */
/* Over MPI ranks, also the all-to-all's per-message sweep per protocol (message bytes/s: cal_msg_figures), judged
 * only where measured (Calibration.a2a_judged). */
enum {
    CAL_FIG_FP8 = 0,
    CAL_FIG_BF16,
    CAL_FIG_FP32,
    CAL_FIG_STREAM,
    CAL_FIG_ELEM,
    CAL_FIG_SCALED_OPTIM,
    CAL_FIG_A2A_EAGER,
    CAL_FIG_A2A_RNDV,
    CAL_FIG_GROUP, /* a MoE model's grouped expert GEMMs: their FLOPs over their summed medians (nxgemm 0: skipped) */
    CAL_FIG_KIND,  /* each element-wise kind's own rate (ElemKind order: elem_norm_gbps ...), the plan times its
                      kernels at; skipped where not measured (0: a row of an older calibrate under --check) */
    CAL_FIG_O1_OPTIM = CAL_FIG_KIND + ELEM_KINDS, /* MS-AMP O1's optimizer (o1_optim_gbps); skipped where not
                                                     measured (0: a row without the column under --check) */
    CAL_FIGS
};
extern const char *const cal_fig_names[CAL_FIGS];

/* Bounds a written profile is held to.
 * CAL_DRIFT_MAX: a quick re-measure (or `calibrate --check`) may differ from a profile's figure by at most
 *   10 %: the target for successive profiles, and what leaves a run's per-part check (+-15 %) 5 points
 *   for the plan's own error.
 * CAL_SE_MAX: a figure's median must be known to 5 % (two standard errors inside the 10 % above): the
 *   standard error of a median of n samples is 1.2533 σ / √n, with σ = IQR / 1.349 for a normal spread,
 *   so its interquartile spread may be at most 0.05 · 1.349 · √n / 1.2533 = 0.0538 √n (cal_iqr_max:
 *   n = 3: 9.3 %, n = 7: 14.2 %, n = 16: 21.5 %). */
#define CAL_DRIFT_MAX 0.10
#define CAL_SE_MAX    0.05
double cal_iqr_max(int n);

/* The checked warm-up (calibrate_compute_again): at least CAL_WARM_ROUNDS_MIN rounds, at most CAL_WARM_ROUNDS_MAX.
 * A round is warm when its time last_s is no more than CAL_SE_MAX below the previous round's prev_s: last_s >=
 * (1 - CAL_SE_MAX) prev_s — a machine still speeding up (a core's clock, a thread that still spins, pages still
 * faulting in) gives rounds that keep getting faster; a loaded one gives rounds that differ either way, which is
 * noise, left to the spread bound. 1 warm, 0 not (or a time that is not positive). */
enum { CAL_WARM_ROUNDS_MIN = 2, CAL_WARM_ROUNDS_MAX = 16 };
int cal_warm_settled(double prev_s, double last_s);

/* A timed sample: one call is short on a CPU (an element-wise kernel of one layer 0.02-1 ms, a GEMM 0.2-3 ms)
 * beside what a shared 2-core host does to it: the pool's worker either runs beside the caller or is waiting for a
 * core (a call then takes ~2x, all on the caller), and the scheduler hands a core out in slices of
 * 0.75 ms x (1 + log2 CPUs) = 1.5 ms here (Linux EEVDF's base slice). Single calls therefore come in two modes,
 * and a median of 7 of them flips between the modes from one profile to the next (a te-fp8 cast rate 1.8x apart).
 * So a sample is the median (cal_sample_median) of cal_sample_calls back-to-back calls lasting at least
 * CAL_SAMPLE_S (the GEMMs: CAL_GEMM_SAMPLE_S, 13 shapes a path a round): several scheduler slices, 10^3 pool
 * wake-ups (~10 us), 10^5 clock reads (~30 ns). A call a slice of another process lands in is one of many, not
 * the sample; the figure is the median of reps such samples taken in rounds (calibrate_compute_again), its
 * spread theirs. A mean would put the slices' share in every sample: tried, its profiles spread as widely. */
#define CAL_SAMPLE_S      0.010
#define CAL_GEMM_SAMPLE_S 0.002
enum { CAL_SAMPLE_CALLS_MAX = 1024 };
/* The calls a sample of at least min_s takes at call_s seconds a call: ceil(min_s / call_s), in
 * [1, CAL_SAMPLE_CALLS_MAX] (CAL_SAMPLE_CALLS_MAX for a call_s <= 0 or not a number: below the clock). */
int cal_sample_calls(double call_s, double min_s);
/* The median of a sample's n call times t (sorted in place; the mean of the two middle ones for an even n): NaN
 * for n < 1. */
double cal_sample_median(double *t, int n);

/* The quick re-measure's repetitions taken among the profile's: of the reps + again samples in a row (k from 0),
 * 1 when sample k goes to the re-measure, 0 when to the profile. The re-measure's j-th (j from 0) is sample
 * floor((2j + 1) (reps + again) / (2 again)): spread evenly (reps 7, again 4: samples 1, 4, 6 and 9). 0 for
 * again <= 0 or k outside [0, reps + again). */
int cal_again_slot(int k, int reps, int again);

/* A figure's rate per CAL_FIG_* and the interquartile spread its median was judged on (GEMM: its path's
 * shapes' weighted by their median times; element-wise: its kernels' weighted by calls x time). */
void cal_figures(const Calibration *c, double rate[CAL_FIGS], double iqr[CAL_FIGS]);

typedef struct {
    int cold;                             /* 1: the warm-up did not settle (warm_settled 0 after warm_rounds) */
    double rate[CAL_FIGS], iqr[CAL_FIGS]; /* the profile's */
    double again[CAL_FIGS];               /* the re-measure's rate (0: none) */
    double drift[CAL_FIGS];               /* again / rate − 1 */
    int skip[CAL_FIGS];                   /* 1: not measured in the profile (the all-to-all's on one rank) */
    double bound[CAL_FIGS];               /* the iqr bound: cal_iqr_max of the figure's repetitions */
    int noisy, drifted;                   /* figures past cal_iqr_max(reps), past CAL_DRIFT_MAX */
    int worst_noisy, worst_drift;         /* the figure furthest past each bound (-1: none) */
    /* every op's payload sweep (c->sweep, not the per-message one) judged on its spread alone (cal_sweep_iqr
     * against link_bound = cal_iqr_max(c->link_reps)): the plan times each collective with its fit, so a sweep a
     * load burst spread is as wrong a profile as a noisy GEMM; link_noisy of them past the bound (counted in
     * noisy too), worst_link the sweep furthest past it (-1: none) */
    double link_iqr[CAL_MAX_SWEEPS], link_bound;
    int link_noisy, worst_link;
} CalJudge;

/* A payload sweep's interquartile spread: its sizes' (q3 - q1) / median weighted by their median times, as a
 * figure's rate is built from summed medians (the largest calls weigh most: the DP gradient all-reduce); NAN when
 * it has no positive time. */
double cal_sweep_iqr(const CalSweep *s);

/* Judge profile c (measured with c->reps repetitions) against a re-measure (NULL: spreads only):
 * a figure is noisy when its iqr passes cal_iqr_max(c->reps) (the all-to-all's: cal_iqr_max(c->a2a_reps), its
 * calls per size), drifted when |again / rate − 1| passes
 * CAL_DRIFT_MAX; returns the count of both (0: the profile holds). A rate <= 0 counts as noisy. The
 * all-to-all's figures are skipped (j->skip) when c did not measure them (a2a_judged 0); measured in c and not
 * in again, they count as drifted. A warm-up that did not settle (c's or again's: warm_rounds > 0, warm_settled
 * 0) sets j->cold and counts once more: the figures were measured on a machine still speeding up. Each payload
 * sweep of c (c->link_reps > 0) whose cal_sweep_iqr passes cal_iqr_max(c->link_reps) counts as noisy too
 * (j->link_noisy, worst_link); it has no re-measure. */
int cal_judge(const Calibration *c, const Calibration *again, CalJudge *j);

/* ---- the catalog rows (calibrate_rows.c) ---- */

/* links.csv's header and one row per fitted range of c (device name), for a catalog written with -o. */
extern const char *const cal_links_header;
Status cal_link_row(const Calibration *c, int i, const char *name, char *buf, size_t size, Err *e);
/* A catalog's fit (a row of another device's links.csv) in the same columns. */
Status cal_link_row_of(const GpuSpec *g, int i, char *buf, size_t size, Err *e);

/* The gpus.csv header this writes (the catalog's columns with link_latency_us). */
extern const char *const cal_gpu_header;

/* One gpus.csv row for the host named name (quoted source text included) into
 * buf; ST_USAGE when it does not fit. */
Status cal_gpu_row(const Calibration *c, const char *name, char *buf, size_t size, Err *e);

/* A catalog GPU row in the same columns (to rewrite a catalog's gpus.csv with the new column). */
Status cal_gpu_row_of(const GpuSpec *g, char *buf, size_t size, Err *e);

/* A stacks.csv row: s with launch_us replaced by the measured launch floor and
 * calibrated = yes (the "fp8plan" stack: this executor on this host). */
Status cal_stack_row(const StackSpec *s, const Calibration *c, char *buf, size_t size, Err *e);
/* stacks.csv's header line as cal_stack_row's rows need it: catalog_stack_columns with the optional
 * columns' '?' dropped (no newline). */
void cal_stack_header(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
