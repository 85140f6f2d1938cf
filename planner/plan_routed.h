/* planner/plan_routed.h — the expert all-to-alls one rank sends under a routing a run measured.
 *
 * The plan's expert collectives (plan_moe_comm.c) assume uniform routing: every rank sends and receives
 * tokens x top-k x f rows per call. A run routes unevenly, and with its measured routing each rank's bytes
 * are known exactly: given, for every data-parallel rank r of the stage and expert x, the token copies
 * rows[r][x] that r routed to x over `calls` dispatches (MoE layers x micro-batches x steps), rank r of the
 * stage (its tp x dp ranks regrouped etp x ep x edp, etp fastest, as the planner's MoE folding: expert rank
 * q = ⌊r / etp⌋ mod ep holding experts q·E/ep .. (q + 1)·E/ep − 1, its EP peers etp apart) sends, over the
 * calls:
 *   dispatch (forward and backward, the recipe's ep_dispatch_comm dtype, Sd bytes a row):
 *       payload Σ_x rows[r][x] · Sd, of which the rows for other ranks' experts leave it;
 *   combine (forward and backward, ep_combine_comm, Sc bytes a row): the rows its experts received,
 *       payload Σ_{s in its group} Σ_{x local} rows[s][x] · Sc, of which those of the other ranks leave;
 *   counts: per call its E int32 counts (E/ep to each peer; its own E/ep stay) and, before each of the five
 *       all-to-alls of a call (counts, two dispatches, two combines), one uint64 element count per peer
 *       (the communicator's agreement, exec/comm/comm.h): E·4 + 5·ep·8 bytes, (E − E/ep)·4 + 5·(ep − 1)·8
 *       leaving.
 * With expert tensor parallelism (etp > 1) each ETP group (etp consecutive ranks) gathers the rows its members'
 * experts received, G = Σ over its members of the combine's rows above, twice a dispatch (the forward's inputs,
 * the backward's output gradients): etp_allgather payload 2·G·h·(ep_dispatch_comm bytes), etp_reducescatter
 * 2·G·h·(ep_combine_comm bytes), (etp − 1)/etp of each leaving (the ring convention, as the run counts them).
 * Pure, as the rest of planner/. */
#ifndef FP8PLAN_PLANNER_PLAN_ROUTED_H
#define FP8PLAN_PLANNER_PLAN_ROUTED_H

#include <stdint.h>

#include "planner/plan.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A run's routing: rows[r · experts + x] token copies rank r sent expert x over `calls` dispatches. */
typedef struct {
    uint32_t ranks, experts;
    uint64_t calls;
    const uint64_t *rows;
} MoeRouting;

enum { EPR_COUNTS = 0, EPR_DISPATCH_FWD, EPR_COMBINE_FWD, EPR_DISPATCH_BWD, EPR_COMBINE_BWD, EPR_COUNT_ };
/* Bytes over the calls: payload (what the rank's calls carry, its own segment included) and sent (what
 * leaves it: the plan's bus bytes of an all-to-all). */
typedef struct {
    uint64_t payload[EPR_COUNT_], sent[EPR_COUNT_];
} EpRouted;
/* p's four expert all-to-alls timed at call_s[i] (EPR_* order: the mean of plan_a2a_peers_s over the calls a run
 * made, each from its own messages) x their calls a step, where call_s[i] > 0; the rest of p as it was (its
 * step keeps the uniform routing's). */
void plan_ep_routed_times(Plan *p, const double call_s[EPR_COUNT_]);
/* One of them, per step: call_s x p's calls a step of row i (EPR_DISPATCH_FWD .. EPR_COMBINE_BWD), or p's own
 * time where call_s <= 0; 0 for another i. */
double plan_ep_routed_time(const Plan *p, int i, double call_s);
/* "ep_counts", then the plan's names of the four all-to-alls. */
extern const char *const ep_routed_names[EPR_COUNT_];
/* The collective of row i (COMM_UNPLANNED-like CO_COUNT_ for the counts). */
CollectiveId ep_routed_coll(int i);

/* Rank `rank`'s bytes under routing rt for plan p (a MoE model at ep > 1, cp 1: the layouts the executor runs; with pipeline stages, p is one stage's plan, rt that stage's dp ranks and its calls that stage's
 * MoE layers' dispatches, `rank` the DP rank): ST_USAGE when the plan is not such a layout or rt's ranks, experts or rank
 * do not fit it, ST_DATA naming the rank when a rank's copies are not calls x tokens x top-k (dropless
 * routing), ST_OVERFLOW past 2^64. */
Status plan_ep_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EpRouted *out, Err *e);
/* The same collectives as the plan has them (uniform routing) over `steps` steps: payload_bytes x calls and
 * step_bytes per step; the counts' row as plan_ep_routed's (it does not depend on the routing). */
void plan_ep_uniform(const Plan *p, uint64_t steps, EpRouted *out);

/* Expert tensor parallelism's gather and reduce-scatter under a routing (above), over the calls. */
enum { ETPR_AG = 0, ETPR_RS, ETPR_COUNT_ };
typedef struct {
    uint64_t payload[ETPR_COUNT_], sent[ETPR_COUNT_];
} EtpRouted;
/* Rank `rank`'s etp_allgather and etp_reducescatter bytes under rt for plan p (a MoE model at etp > 1, cp 1; any
 * ep): ST_USAGE / ST_DATA / ST_OVERFLOW as plan_ep_routed's. */
Status plan_etp_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EtpRouted *out, Err *e);

#ifdef __cplusplus
}
#endif
#endif
