/* planner/plan_comm.c — collectives per step and the bytes each GPU sends.
 *
 * Payload S is the total array size of one call as nccl-tests defines it; the
 * bytes a GPU sends (bus bytes) are 2(n-1)/n S for all-reduce, (n-1)/n S for
 * all-gather and reduce-scatter, S for point-to-point. Ranks are ordered
 * tp (fastest), cp, dp, pp (Megatron's default): a group of n ranks at stride s
 * has r = min(n, gpus_per_node / s) ranks on each node (1 when s fills a node).
 * Inside a node it runs at the NVLink (or PCIe) bandwidth; spanning nodes, its
 * r ranks per node share r NICs, so its rings run at min(link, r x NIC) (NCCL
 * builds one ring per NIC; DGX nodes have one NIC per GPU). Either is achieved
 * at eff_net of the link (nccl-tests on DGX H100: about 360 of 450 GB/s).
 * A call costs NCCL's ring latency (planner/arch.c: base + per step, intra- and
 * inter-node steps apart) plus bus bytes / bandwidth, with the better of NCCL's
 * LL protocol (low latency, 1/4 or 1/3 of the bandwidth) and Simple. A link whose
 * latency was measured (a host profile, fp8plan calibrate: MPI ranks of one
 * machine) costs steps x its latency per step + bus bytes / its measured bus
 * bandwidth: 2(n-1) steps for all-reduce, n-1 for all-gather/reduce-scatter, 1
 * for send/recv.
 *
 * Per layer and micro-batch, with S = tok*h*bytes:
 *   TP without SP  2 all-reduces forward (proj, FC2 outputs), 2 backward (QKV, FC1 input grads)
 *   TP with SP     forward: 2 all-gathers (QKV, FC1 inputs) + 2 reduce-scatters (proj, FC2);
 *                  backward: 2 all-gathers of output gradients, 2 re-gathers of the saved input
 *                  shards for wgrad (Megatron and TE keep the shard), 2 reduce-scatters
 *   CP             K,V all-gather forward, again backward, dK,dV reduce-scatter (ring P2P)
 *   full recompute repeats the forward collectives.
 * Outside the layers (plan_comm_vocab.c): the vocabulary-parallel embedding, LM head and loss per
 * micro-batch, the TP-replicated parameters' gradient all-reduce per step.
 * Per step: DP gradient all-reduce, or reduce-scatter + parameter all-gather when
 * states are sharded (two gathers per micro-batch at ZeRO-3; ZeRO-2/3 keep no whole
 * gradient, so they reduce-scatter every micro-batch); PP sends per micro-batch and chunk;
 * the tied-embedding gradient all-reduce between first and last stage; amax
 * all-reduces (one forward, one backward per micro-batch) for FP8 recipes. */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/arch.h"
#include "planner/plan_internal.h"

/* Each collective's labels, from its COLLECTIVES row: read by id, never copied into a plan. */
#define C(i, nm, g, o) [i] = {nm, g, o},
static const struct {
    const char *name;
    CommGroup group;
    CommOp op;
} coll_rows[CO_COUNT_] = {COLLECTIVES(C)};
#undef C

const char *coll_name(CollectiveId id) { return (unsigned)id < CO_COUNT_ ? coll_rows[id].name : "?"; }
CommGroup coll_group(CollectiveId id) { return (unsigned)id < CO_COUNT_ ? coll_rows[id].group : GROUP_COUNT_; }
CommOp coll_op(CollectiveId id) { return (unsigned)id < CO_COUNT_ ? coll_rows[id].op : OP_COUNT_; }

/* Bytes this GPU sends for one call of op over n ranks with payload S: the exact floor of S*2(n-1)/n or
 * S*(n-1)/n, that is k S - ceil(k S / n) = floor(k S (n - 1) / n) without the product, to stay in 64 bits (an
 * all-reduce payload past 2^63 bytes is an overflow). */
static uint64_t bus(CommOp op, uint64_t n, uint64_t S, Ck *ck)
{
    if (n <= 1) return 0;
    uint64_t k = comm_ring_k(op);
    if (!k || op == OP_ALL_TO_ALL) return S; /* an all-to-all's bytes are counted where it is planned */
    return S <= UINT64_MAX / k ? k * S - ceil_div(k * S, n) : (ck->ovf = 1, 0);
}

/* Elements * bytes of dtype, plus block scales for FP8 activations at act_gran (a [rows, h] tensor). */
static uint64_t act_bytes(Ck *ck, Dtype dt, Granularity gr, uint64_t rows, uint64_t cols)
{
    uint64_t b = ck_mul3(ck, rows, cols, dt_bytes(dt));
    if (dt_fp8(dt) && gr != GRAN_TENSOR) {
        uint64_t n, sb;
        if (gran_scale_count(gr, rows, cols, &n, &sb, NULL))
            ck->ovf = 1;
        else
            b = ck_add(ck, b, sb);
    }
    return b;
}

uint64_t plan_bus_bytes(CommOp op, uint64_t n, uint64_t S, Ck *ck) { return bus(op, n, S, ck); }

uint64_t plan_tp_regather_bytes(Ck *ck, Dtype dt, Granularity gr, uint64_t tok, uint64_t cols, uint64_t tp)
{
    uint64_t b = ck_mul3(ck, tok, cols, dt_bytes(dt));
    if (dt_fp8(dt) && gr != GRAN_TENSOR && tp) { /* each rank's transposed (cols, tok/tp) tiles, from its first token */
        uint64_t n, sb;
        if (gran_scale_count(gr, cols, tok / tp, &n, &sb, NULL))
            ck->ovf = 1;
        else
            b = ck_add(ck, b, ck_mul(ck, sb, tp));
    }
    return b;
}

/* plan_coll_call, inline in this file: every planned collective is timed through it */
static inline __attribute__((always_inline)) double coll_call(const PlanInput *in, CommOp op, uint64_t n,
                                                              uint64_t stride, double b, double *bwo, double *lato)
{
    const GpuSpec *gp = in->gpu;
    uint64_t gpn = gp->gpus_per_node, r = stride >= gpn ? 1 : udiv(gpn, stride);
    if (r > n) r = n;
    uint64_t nodes = ceil_div(n, r ? r : 1);
    double link = gp->intra_bw, bw = link;
    if (nodes > 1) {
        double nic = (double)r * gp->inter_bw;
        bw = nic < link ? nic : link;
    }
    bw *= gpu_net_eff(gp, in->eff_net);
    double steps = comm_ring_steps(op, n), isteps = op == OP_SEND_RECV ? nodes > 1 : comm_ring_steps(op, nodes);
    if (gp->link_lat > 0) { /* a measured link: one protocol, its latency per ring step */
        double lat = steps * gp->link_lat;
        if (bwo) *bwo = bw;
        if (lato) *lato = lat;
        return lat + b / bw;
    }
    const NcclLat *L = &nccl_lat;
    int hw = gp->link < LINK_COUNT_ ? (int)gp->link : LINK_NVLINK;
    double best = 0, bbw = bw, blat = 0;
    /* LL at 1/4 of the bandwidth: b / (bw / 4) is 4 (b / bw) bit for bit (a power of two scales without rounding,
     * while b / bw is a normal double: any bandwidth below ~1e307 B/s), so the two protocols share one division */
    const int quarter = op == OP_ALL_REDUCE || nodes > 1;
    const double q = b / bw;
    for (int p = 0; p < NCCL_PROTOS; p++) {
        double lat = L->base[p] + (steps - isteps) * L->hop[hw][p] + isteps * L->hop[LINK_COUNT_][p];
        double pbw = p == NCCL_SIMPLE ? bw : quarter ? bw * 0.25 : bw / 3.0;
        double t = lat + (p == NCCL_SIMPLE ? q : quarter ? 4.0 * q : b / pbw);
        if (p == 0 || t < best) best = t, bbw = pbw, blat = lat;
    }
    if (bwo) *bwo = bbw;
    if (lato) *lato = blat;
    return best;
}

/* plan_coll_time, with the bus bytes of (op, n, S) when the caller has them (busb; NULL: counted here). */
static inline __attribute__((always_inline)) double coll_time(const PlanInput *in, CommOp op, Dtype dt, uint64_t n,
                                                              uint64_t stride, uint64_t S, const uint64_t *busb, Ck *ck,
                                                              double *bw, double *lat)
{
    if (in->gpu->host && op == OP_ALL_TO_ALL) { /* per message, where the profile has those rows */
        double t = plan_a2a_call(in->gpu, n, S, bw, lat);
        if (t >= 0) return t;
    }
    const LinkFit *fit = in->gpu->host ? plan_link_fit(in->gpu, op, dt, S) : NULL;
    if (fit) return plan_link_call(fit, op, n, S, bw, lat); /* the op's own measured fit */
    return coll_call(in, op, n, stride, (double)(busb ? *busb : bus(op, n, S, ck)), bw, lat);
}

double plan_coll_time(const PlanInput *in, CommOp op, Dtype dt, uint64_t n, uint64_t stride, uint64_t S, Ck *ck,
                      double *bw, double *lat)
{
    return coll_time(in, op, dt, n, stride, S, NULL, ck, bw, lat);
}

double plan_coll_call(const PlanInput *in, CommOp op, uint64_t n, uint64_t stride, double b, double *bwo, double *lato)
{
    return coll_call(in, op, n, stride, b, bwo, lato);
}

/* A gradient's reduction after the backward on a host profile (miss > 0: the DP buckets' all-reduce or the
 * distributed optimizer's reduce-scatter, the experts' over EDP, the tied embedding's gradient): the call's hot time
 * (coll_time) plus miss x what the profile's FP32 all-reduce costs at S bytes from memory (its gradient fit, links.csv
 * "fp32 grad") above what it costs from the cache (its "fp32" fit). Both ops first touch the same two S-byte buffers
 * (exec/comm/comm_mpi_coll.c rs_v: the payload and the scratch), in FP32 or BF16 alike; miss is the share of them
 * in memory (plan_grad_miss, planner/plan_cache.c). An FP32 all-reduce all from memory (miss 1) is the gradient fit
 * itself. A profile without the gradient rows, an FP8 path (its own scratch) or miss <= 0: coll_time. */
static double coll_time_of(const PlanInput *in, double miss, CommOp op, Dtype dt, uint64_t n, uint64_t stride,
                           uint64_t S, const uint64_t *busb, Ck *ck, double *bw, double *lat)
{
    const LinkPath path = link_path_of(op, dt);
    const LinkFit *cold = miss > 0 && in->gpu->host && (op == OP_ALL_REDUCE || op == OP_REDUCE_SCATTER) &&
                                  (path == LINK_PATH_FP32 || path == LINK_PATH_BF16)
                              ? plan_link_fit_grad(in->gpu, OP_ALL_REDUCE, DT_FP32, S)
                              : NULL;
    if (!cold || cold->path != LINK_PATH_FP32_GRAD) return coll_time(in, op, dt, n, stride, S, busb, ck, bw, lat);
    if (op == OP_ALL_REDUCE && path == LINK_PATH_FP32 && miss >= 1) return plan_link_call(cold, op, n, S, bw, lat);
    const LinkFit *hot = plan_link_fit(in->gpu, OP_ALL_REDUCE, DT_FP32, S);
    const double t = coll_time(in, op, dt, n, stride, S, busb, ck, bw, lat);
    const double extra = hot ? plan_link_call(cold, OP_ALL_REDUCE, n, S, NULL, NULL) -
                                   plan_link_call(hot, OP_ALL_REDUCE, n, S, NULL, NULL)
                             : 0;
    return extra > 0 ? t + (miss < 1 ? miss : 1) * extra : t;
}

/* plan_grad_miss of this plan: its ranks on one host share the cache (all of them: a host profile is one machine) */
static double grad_miss(const PlanInput *in, const Geo *g, const Plan *p)
{
    const uint64_t node = in->gpu->gpus_per_node ? in->gpu->gpus_per_node : 1;
    return plan_grad_miss(in->gpu, p->mem, p->cat_bytes, g->world < node ? g->world : node);
}

/* Every field of plan_coll_set but the time (0): the collective, for its caller to time. */
static Collective *coll_bytes(const PlanInput *in, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t stride,
                              uint64_t payload, uint64_t calls, Ck *ck)
{
    Collective *c = &p->coll[id]; /* its name, group and op are coll_rows[id]'s */
    c->dtype = dt;
    if (ranks <= 1 || !calls) ranks = 0, calls = 0, payload = 0;
    c->ranks = (uint32_t)ranks;
    c->inter_node = ranks && stride * ranks > in->gpu->gpus_per_node;
    c->payload_bytes = payload;
    c->bus_bytes = bus(coll_rows[id].op, ranks, payload, ck);
    c->calls = calls;
    c->step_bytes = ck_mul(ck, c->bus_bytes, calls);
    c->step_payload = 0;
    c->bw = c->latency_s = c->time_s = c->exposed_s = 0;
    return c;
}

void plan_coll_set(const PlanInput *in, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t stride,
                   uint64_t payload, uint64_t calls, Ck *ck)
{
    Collective *c = coll_bytes(in, p, id, dt, ranks, stride, payload, calls, ck);
    if (c->calls)
        c->time_s = (double)c->calls * coll_time(in, coll_rows[id].op, dt, c->ranks, stride, payload, &c->bus_bytes, ck,
                                                 &c->bw, &c->latency_s);
    c->exposed_s = c->time_s; /* plan_time decides what overlaps */
}

void plan_coll_set_grad(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks,
                        uint64_t stride, uint64_t payload, uint64_t calls, Ck *ck)
{
    Collective *c = coll_bytes(in, p, id, dt, ranks, stride, payload, calls, ck);
    if (c->calls)
        c->time_s = (double)c->calls * coll_time_of(in, grad_miss(in, g, p), coll_rows[id].op, dt, c->ranks, stride,
                                                    payload, &c->bus_bytes, ck, &c->bw, &c->latency_s);
    c->exposed_s = c->time_s;
}

/* plan_coll_set of the tied embedding's gradient all-reduce between the first and the last stage: on a host profile
 * with its own fit (links.csv "fp32 emb": the gradient sweep from memory with the later stage waiting out the first
 * one's last backward, as the run meets it) timed at that fit; else as the other gradients (plan_coll_set_grad). */
static void coll_set_emb(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks,
                         uint64_t stride, uint64_t payload, uint64_t calls, Ck *ck)
{
    const LinkFit *f = in->gpu->host ? plan_link_fit_emb(in->gpu, OP_ALL_REDUCE, dt, payload) : NULL;
    if (!f || f->path != LINK_PATH_FP32_EMB) {
        plan_coll_set_grad(in, g, p, id, dt, ranks, stride, payload, calls, ck);
        return;
    }
    Collective *c = coll_bytes(in, p, id, dt, ranks, stride, payload, calls, ck);
    if (c->calls)
        c->time_s = (double)c->calls * plan_link_call(f, coll_rows[id].op, c->ranks, payload, &c->bw, &c->latency_s);
    c->exposed_s = c->time_s;
}

double plan_coll_again(const PlanInput *in, const Plan *p, CollectiveId id, CommOp op, uint64_t n, uint64_t S)
{
    const Collective *c = &p->coll[id];
    if (in->gpu->host || !c->calls || coll_rows[id].op != op || c->ranks != n || c->payload_bytes != S || !(c->bw > 0))
        return -1;
    return c->latency_s + (double)c->bus_bytes / c->bw;
}

void plan_coll_set_same(const PlanInput *in, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t stride,
                        uint64_t payload, uint64_t calls, Ck *ck, const CollectiveId *same, int nsame)
{
    Collective *c = coll_bytes(in, p, id, dt, ranks, stride, payload, calls, ck);
    if (!c->calls) return;
    for (int i = 0; i < nsame; i++) {
        const Collective *s = &p->coll[same[i]];
        double t = plan_coll_again(in, p, same[i], coll_rows[id].op, c->ranks, payload);
        if (t >= 0) {
            c->bw = s->bw, c->latency_s = s->latency_s;
            c->time_s = c->exposed_s = (double)c->calls * t;
            return;
        }
    }
    c->time_s = c->exposed_s = (double)c->calls * coll_time(in, coll_rows[id].op, dt, c->ranks, stride, payload,
                                                            &c->bus_bytes, ck, &c->bw, &c->latency_s);
}

/* Two collectives of one op that make the same call (dtype, group, payload), each its own number of times (a
 * layer's forward and backward reduce-scatters): as two plan_coll_set, the call timed once. */
static void coll_set_twins(const PlanInput *in, Plan *p, CollectiveId a, CollectiveId b, Dtype dt, uint64_t ranks,
                           uint64_t payload, uint64_t calls_a, uint64_t calls_b, Ck *ck)
{
    Collective *c[2] = {coll_bytes(in, p, a, dt, ranks, 1, payload, calls_a, ck),
                        coll_bytes(in, p, b, dt, ranks, 1, payload, calls_b, ck)};
    int timed = 0;
    double t = 0, bw = 0, lat = 0;
    for (int i = 0; i < 2; i++) {
        if (!c[i]->calls) continue;
        if (!timed)
            t = coll_time(in, coll_rows[i ? b : a].op, dt, c[i]->ranks, 1, payload, &c[i]->bus_bytes, ck, &bw, &lat);
        timed = 1;
        c[i]->bw = bw, c[i]->latency_s = lat;
        c[i]->time_s = c[i]->exposed_s = (double)c[i]->calls * t;
    }
}

void plan_dp_buckets(const PlanInput *in, uint64_t eg, uint64_t eo, uint64_t ntens, uint64_t rs[2], uint64_t ag[2])
{
    const Recipe *rc = in->recipe;
    Dtype gg = rc->comm_dp_grad;
    if (in->main_grad != MAIN_GRAD_RECIPE) gg = plan_grad_dt(in, gg);
    const int fp8_grads = dt_fp8(gg) && (rc->gemm.scaled_mask >> STATE_GRAD & 1);
    const int copies = rc->gemm.dt[STATE_WEIGHT] == DT_NONE && plan_state_sharded(in, &rc->gemm, STATE_MASTER);
    rs[0] = eg ? (fp8_grads ? ntens : 1) : 0, rs[1] = eo != 0;
    ag[0] = eg ? (copies ? ntens : 1) : 0, ag[1] = eo != 0;
}

/* A DP all-reduce's, reduce-scatter's or all-gather's row of the executor's buckets: kg of the GEMM weights' class
 * moving Sg bytes a step (dtype dg) and ko of the other parameters' moving So (do). The row's payload is the calls'
 * mean, the payload and the sent bytes per step exact: bus() of the step's payload, k S - ceil(k S / n) (k = 2 for
 * the all-reduce, 1 for the others), as the executor counts k (n - 1)/n of each call's payload. Each class's calls
 * are timed at their own mean payload and dtype: a host profile's fit is a line per payload range, so two buckets
 * timed at their mean (the demo's 6.29 MB and 1.14 MB FP32 gradients at 3.72 MB) take the range of neither. The
 * all-reduce's buckets are gradients reduced after the backward, from memory (coll_time_of). */
static void dp_bucketed(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, uint64_t n,
                        uint64_t stride, const uint64_t S[2], const Dtype cdt[2], const uint64_t k[2], Ck *ck)
{
    const double miss = id == CO_DP_GRAD_AR || id == CO_DP_GRAD_RS ? grad_miss(in, g, p) : 0;
    const uint64_t total = ck_add(ck, S[0], S[1]), calls = k[0] + k[1];
    plan_coll_set(in, p, id, dt, n, stride, calls ? total / calls : 0, calls, ck);
    Collective *c = &p->coll[id];
    if (!c->calls) return;
    c->step_payload = total;
    c->step_bytes = bus(coll_rows[id].op, n, total, ck); /* not bus(mean) x calls: that rounds once per call */
    double t = 0;
    for (int i = 0; i < 2; i++)
        if (k[i] && S[i])
            t += (double)k[i] * coll_time_of(in, miss, coll_rows[id].op, cdt[i], c->ranks, stride, S[i] / k[i], NULL,
                                             ck, &c->bw, &c->latency_s);
    c->time_s = c->exposed_s = t;
}

void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck)
{
    const Recipe *rc = in->recipe;
    /* every collective unused until set (its labels are coll_rows'), in two halves: glibc clears 2.6 KB with `rep
     * stosb` (past its threshold, 2,048 B), whose start-up held 1.9 % of a plan's perf samples on the AMD EPYC of
     * our build machine; a half is below it, cleared with vector stores */
    enum { HALF = CO_COUNT_ / 2 };
    memset(p->coll, 0, HALF * sizeof *p->coll);
    memset(p->coll + HALF, 0, (CO_COUNT_ - HALF) * sizeof *p->coll);
    uint64_t m = g->m, Ls = p->stage_layers, t = g->tp, h = g->h;
    int full = in->recompute == RECOMPUTE_FULL;
    uint64_t per_layer_calls = ck_mul(ck, Ls, m); /* layer passes per step on this stage */

    /* TP */
    uint64_t S_ag = act_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, h);
    uint64_t S_rs = act_bytes(ck, rc->comm_tp_rs, GRAN_TENSOR, g->tok, h);
    if (t > 1 && g->rep == 1) {
        coll_set_twins(in, p, CO_TP_AR_FWD, CO_TP_AR_BWD, rc->comm_tp_rs, t, S_rs,
                       ck_mul(ck, per_layer_calls, full ? 4 : 2), ck_mul(ck, per_layer_calls, 2), ck);
    } else if (t > 1) {
        uint64_t f = full ? 4 : 2;
        plan_coll_set(in, p, CO_TP_AG_FWD, rc->comm_tp_ag, t, 1, S_ag, ck_mul(ck, per_layer_calls, f), ck);
        /* backward gathers: 2 output gradients (comm_tp_rs dtype) + 2 saved-input re-gathers (comm_tp_ag; the
         * saved copy is the transposed one, block scales tiled along each rank's tokens) */
        uint64_t S_bag = ck_add(ck, S_rs, plan_tp_regather_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, h, t));
        plan_coll_set(in, p, CO_TP_AG_BWD, rc->comm_tp_rs == rc->comm_tp_ag ? rc->comm_tp_ag : DT_NONE, t, 1, S_bag / 2,
                      ck_mul(ck, per_layer_calls, 4), ck);
        p->coll[CO_TP_AG_BWD].payload_bytes = S_bag / 2; /* mean payload of the two kinds */
        coll_set_twins(in, p, CO_TP_RS_FWD, CO_TP_RS_BWD, rc->comm_tp_rs, t, S_rs, ck_mul(ck, per_layer_calls, f),
                       ck_mul(ck, per_layer_calls, 2), ck);
    }

    plan_comm_vocab(in, g, p, ck); /* embedding, LM head, loss, TP-replicated gradients */

    /* CP: K and V of the whole sequence, this rank's kv heads, BF16 */
    if (g->cp > 1) {
        uint64_t S = ck_mul3(ck, ck_mul(ck, g->mbs, g->seq), 2 * g->kv_t, 2);
        plan_coll_set(in, p, CO_CP_KV, DT_BF16, g->cp, t, S, ck_mul(ck, per_layer_calls, full ? 4 : 3), ck);
    }

    /* PP: the reported stage's sends, per micro-batch and chunk, activations forward and gradients backward:
     * a middle stage sends both ways, 2v per micro-batch; the first stage's first chunk sends no gradient and
     * the last stage's last chunk no activation, m*(2v-1) each */
    int boundary = p->stage == 0 || p->stage + 1 == g->pp;
    if (g->pp > 1) {
        uint64_t S = ck_mul3(ck, g->tok, g->h_t, 2); /* Megatron sends the 1/tp scatter */
        plan_coll_set(in, p, CO_PP_P2P, DT_BF16, 2, g->world / g->pp, S, ck_mul(ck, m, 2 * g->vpp - (uint64_t)boundary),
                      ck);
        p->coll[CO_PP_P2P].bus_bytes = S, p->coll[CO_PP_P2P].step_bytes = ck_mul(ck, S, p->coll[CO_PP_P2P].calls);
    }

    /* DP (over dp x cp: context-parallel ranks hold the same weights) */
    uint64_t d = g->d, stride_dp = t; /* the distributed optimizer shards over DP x CP: ranks tp apart */
    uint64_t eg = p->params_gemm_gpu, eo = p->params_gpu - p->params_gemm_gpu - p->params_expert_gpu;
    Dtype gg = rc->comm_dp_grad, go = rc->other_comm_dp_grad;
    if (in->main_grad != MAIN_GRAD_RECIPE) gg = plan_grad_dt(in, gg), go = plan_grad_dt(in, go); /* reduced as kept */
    Dtype pg = rc->comm_param_gather, po = rc->other_comm_param_gather;
    uint64_t S_grad = ck_add(ck, ck_mul(ck, eg, dt_bytes(gg)), ck_mul(ck, eo, dt_bytes(go)));
    uint64_t S_par = ck_add(ck, ck_mul(ck, eg, dt_bytes(pg)), ck_mul(ck, eo, dt_bytes(po)));
    const uint64_t Sg[2] = {ck_mul(ck, eg, dt_bytes(gg)), ck_mul(ck, eo, dt_bytes(go))}; /* per class: GEMM, other */
    const uint64_t Sp[2] = {ck_mul(ck, eg, dt_bytes(pg)), ck_mul(ck, eo, dt_bytes(po))};
    const Dtype gdt[2] = {gg, go}, pdt[2] = {pg, po};
    int shard_any = in->sharding != SHARD_NONE;
    if (in->sharding == SHARD_DIST_OPT) shard_any = (rc->gemm.shard_mask | rc->other.shard_mask) != 0;
    if (d > 1 && !shard_any && in->fusion == FUSE_FP8PLAN) {
        uint64_t ar[2],
            ag[2]; /* the executor's buckets (exec/model/model_grad_bucket.c): a class each, FP8-LM's alone */
        plan_dp_buckets(in, eg, eo, p->linear_tensors, ar, ag);
        dp_bucketed(in, g, p, CO_DP_GRAD_AR, gg == go ? gg : DT_NONE, d, stride_dp, Sg, gdt, ar, ck);
    } else if (d > 1 && !shard_any) {
        plan_coll_set(in, p, CO_DP_GRAD_AR, gg == go ? gg : DT_NONE, d, stride_dp, S_grad, 1, ck);
    } else if (d > 1 && in->fusion == FUSE_FP8PLAN && (in->sharding == SHARD_ZERO1 || in->sharding == SHARD_DIST_OPT)) {
        uint64_t rs[2], ag[2]; /* the executor's buckets (exec/model/model_shard.c) */
        plan_dp_buckets(in, eg, eo, p->linear_tensors, rs, ag);
        dp_bucketed(in, g, p, CO_DP_GRAD_RS, gg == go ? gg : DT_NONE, d, stride_dp, Sg, gdt, rs, ck);
        dp_bucketed(in, g, p, CO_DP_PARAM_AG, pg == po ? pg : DT_NONE, d, stride_dp, Sp, pdt, ag, ck);
    } else if (d > 1) {
        int per_mb = in->sharding == SHARD_ZERO2 || in->sharding == SHARD_ZERO3;
        plan_coll_set(in, p, CO_DP_GRAD_RS, gg == go ? gg : DT_NONE, d, stride_dp, S_grad, per_mb ? m : 1, ck);
        plan_coll_set(in, p, CO_DP_PARAM_AG, pg == po ? pg : DT_NONE, d, stride_dp, S_par,
                      in->sharding == SHARD_ZERO3 ? ck_mul(ck, 2, m) : 1, ck);
    }

    /* tied embedding: first and last stage sum their gradients (a middle stage holds neither copy). Multi-token
     * prediction too, tied or not: the MTP depths sit on the last stage with their own copy of the embedding (their
     * next tokens' lookup), kept in sync with the first stage's as a tied head is (Megatron-Core core_v0.16.0:
     * GPTModel builds the embedding where mtp_process, shared_embedding_or_output_weight returns it, and
     * finalize_model_grads' _allreduce_word_embedding_grads all-reduces it over the embedding group) */
    if ((in->model->tied_embeddings || in->model->mtp_layers) && g->pp > 1 && boundary)
        coll_set_emb(in, g, p, CO_EMB_GRAD_AR, go, 2, g->world / g->pp * (g->pp - 1), ck_mul(ck, g->emb, dt_bytes(go)),
                     1, ck);

    /* amax: x and w maxima forward, dy backward, per micro-batch */
    if (rc_fp8_gemm(rc) && rc->amax_reduce != AMAX_NONE) {
        uint64_t n = rc->amax_reduce == AMAX_TP ? t * g->cp : t * g->cp * g->dp;
        uint64_t S = ck_mul(ck, LIN_COUNT * Ls, 3 * 4) / 2; /* mean of 2 (fwd) and 1 (bwd) fp32 per linear */
        plan_coll_set(in, p, CO_AMAX_AR, DT_FP32, n, 1, S, ck_mul(ck, 2, m), ck);
    }

    if (g->x.on) moe_comm(in, g, p, ck);

    p->tp_comm_bytes = p->cp_comm_bytes = p->pp_comm_bytes = p->dp_comm_bytes = p->ep_comm_bytes = 0;
    int n = g->x.on ? CO_COUNT_ : CO_EP_DISPATCH_FWD; /* the expert collectives are unused without experts */
    for (int i = 0; i < n; i++) {
        const Collective *c = &p->coll[i];
        if (!c->step_bytes) continue; /* unused (or empty): adds nothing */
        switch (coll_rows[i].group) {
        case GROUP_TP: p->tp_comm_bytes = ck_add(ck, p->tp_comm_bytes, c->step_bytes); break;
        case GROUP_CP: p->cp_comm_bytes = ck_add(ck, p->cp_comm_bytes, c->step_bytes); break;
        case GROUP_PP:
        case GROUP_EMB: p->pp_comm_bytes = ck_add(ck, p->pp_comm_bytes, c->step_bytes); break;
        case GROUP_DP:
        case GROUP_EDP: p->dp_comm_bytes = ck_add(ck, p->dp_comm_bytes, c->step_bytes); break;
        case GROUP_EP:
        case GROUP_ETP: p->ep_comm_bytes = ck_add(ck, p->ep_comm_bytes, c->step_bytes); break;
        default: break;
        }
    }
    p->weight_comm_bytes = ck_add(ck, ck_add(ck, p->coll[CO_DP_GRAD_AR].step_bytes, p->coll[CO_DP_GRAD_RS].step_bytes),
                                  p->coll[CO_DP_PARAM_AG].step_bytes);
    if (g->x.on)
        p->weight_comm_bytes =
            ck_add(ck, p->weight_comm_bytes,
                   ck_add(ck, ck_add(ck, p->coll[CO_EDP_GRAD_AR].step_bytes, p->coll[CO_EDP_GRAD_RS].step_bytes),
                          p->coll[CO_EDP_PARAM_AG].step_bytes));
}
