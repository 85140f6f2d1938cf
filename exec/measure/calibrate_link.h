/* exec/measure/calibrate_link.h — the collective sweeps of fp8plan calibrate over MPI ranks (calibrate_link.c):
 * the payload sizes they measure, the compute they put around each call as a run's layers do, and the sweeps
 * themselves. The fits of their points and the judging are calibrate.h's. */
#ifndef FP8PLAN_EXEC_CALIBRATE_LINK_H
#define FP8PLAN_EXEC_CALIBRATE_LINK_H

#include "exec/measure/calibrate.h"

/* The collective sweep alone (every rank calls it) up to a payload of top
 * bytes (cal_link_sizes); fills out->coll, ncoll, link_bw, link_lat, ranks. */
Status calibrate_link(Backend *bk, Comm *comm, uint64_t top, int reps, Calibration *out, Err *e);

/* Every collective op the executor runs (all-reduce and reduce-scatter in FP32, BF16 and E4M3 — the MPI
 * reductions decode each element, so the path's cost differs —, all-gather, send/recv, broadcast, all-to-all)
 * swept over the link sweep's sizes up to top bytes (4 x reps calls per size, at most 64), each call timed as the communicator counts it for a run
 * after what precedes a run's per-layer collective: a kernel over layer_bytes (one of the layer's GEMMs'
 * operands and output; at most CAL_LINK_EVICT), repeated for cal_coll_gap(out->p2p_fwd_s) before each call of
 * the ops cal_coll_gapped names (out->coll_gap_s; once where it is 0), the ranks together (calibrate_link.c says
 * why not late), then
 * fitted (cal_fit_ranges; send/recv's cut at MPI's eager limit, probed first: out->eager_limit) into out->sweep and
 * out->range. The all-to-all also at its smallest call and at the
 * na2a payloads a2a (expert parallelism's calls of the model: cal_ep_sizes), every other op also at the nrun
 * payloads run (tensor parallelism's calls: cal_tp_sizes); cal_sweep_sizes merges them. a2a or run may be NULL
 * when its count is 0. Send/recv as 1F1B's neighbouring stages meet it instead: pairs of ranks exchange a message
 * each way with that kernel run for a layer's forward (out->p2p_fwd_s) or forward and backward (+ p2p_bwd_s)
 * around each send (calibrate_link.c p2p_call; set them, or leave them 0 for one pass each, before the call).
 * Every rank calls it. */
Status calibrate_links(Backend *bk, Comm *comm, uint64_t top, uint64_t layer_bytes, const uint64_t *a2a, int na2a,
                       const uint64_t *run, int nrun, int reps, Calibration *out, Err *e);

/* The payloads, into out (4), of the tensor-parallel collectives a run of model m at micro-batch mbs makes with
 * tok = mbs x seq tokens a micro-batch: the loss's all-reduces (tok FP32 statistics: tok x 4 B), an FP8
 * activation's all-gather (tok x hidden x 1 B), a BF16 activation's reduce-scatter, all-gather or
 * all-reduce (tok x hidden x 2 B: the layers' and the vocabulary-parallel embedding's and head's) and the
 * replicated parameters' gradients' all-reduce (FP32, once a step: per layer its two norms, row-parallel biases
 * and QK norms, and the final norm, as one stage of a sequence-parallel run holds them). Each is the whole
 * payload S of a call, whatever the TP size (planner/plan_comm.c, plan_comm_vocab.c). Returns 4. */
int cal_tp_sizes(const ModelSpec *m, uint32_t mbs, uint64_t *out);

/* A payload sweep's sizes: the n link sizes (cal_link_sizes, increasing) and the first 4 of the nrun run
 * payloads no larger than the largest link size, each rounded down to whole units (the bytes a call carries
 * whole: unit_of in calibrate_link.c; a size below one unit becomes one), with from_unit the unit itself (the
 * op's smallest call), increasing and once each into out (at most CAL_MAX_SIZES). Returns the count (0 when n
 * is outside [1, CAL_MAX_SIZES] or unit is 0). */
int cal_sweep_sizes(const uint64_t *sizes, int n, const uint64_t *run, int nrun, uint64_t unit, int from_unit,
                    uint64_t *out);

/* The compute a pipeline stage of one layer runs between its messages, as the send/recv sweep of calibrate_links
 * puts it around its calls: a micro-batch's forward (bwd 0: the sum of the median times of the layer's fprop
 * GEMMs on the BF16 path, not the head's, in gemm[0..n)) or backward (bwd 1: its dgrad and wgrad GEMMs) through
 * one layer, at most CAL_P2P_GAP_MAX; 0 when none was measured. */
#define CAL_P2P_GAP_MAX 0.02
double cal_p2p_gap(const CalGemm *gemm, int n, int bwd);

/* The compute a run puts before each of its tensor-parallel collectives, as the all-reduce, reduce-scatter and
 * all-gather sweeps of calibrate_links put it before every call (cal_coll_gapped): half a layer's forward,
 * fwd_s / 2 (fwd_s: cal_p2p_gap's forward), since a layer's forward GEMMs come in two halves (the attention's QKV
 * to its projection, the MLP's FC1 to FC2), each ending in a TP collective (a reduce-scatter with sequence
 * parallelism, an all-reduce without). A call after milliseconds of compute costs more than one after a
 * microsecond-long kernel on this project's host, and more the longer the gap (docs/calibrate.md, "TP 2's
 * collectives after a layer's compute"). 0 for fwd_s <= 0 or not a number (one pass, as before). */
double cal_coll_gap(double fwd_s);
/* 1 for the ops whose sweeps put cal_coll_gap's compute before each call (all-reduce, reduce-scatter,
 * all-gather: the collectives TP and DP make between kernels); 0 for send/recv (its own 1F1B gaps), broadcast
 * and the all-to-all (timed as before). */
int cal_coll_gapped(CommOp op);

/* The payloads a rank's expert all-to-alls carry for model m at micro-batch mbs under uniform routing, into
 * out (2): the count exchange's E int32 (E x 4 B) and a dispatch's (or combine's) mbs x seq x top-k token copies
 * of hidden BF16 elements (the executor's activations). Returns 2, or 0 for a model without experts. */
int cal_ep_sizes(const ModelSpec *m, uint32_t mbs, uint64_t *out);

#endif
