/* planner/plan_moe_routed.c — the expert all-to-alls and the expert-TP collectives of a plan under a measured
 * routing (plan_routed.h): each rank's bytes given the rows the run routed to every expert, beside the plan's
 * uniform expectation (plan_moe_comm.c), and the calls' times at the plan's per-call rate. */
#include <string.h>

#include "planner/plan_internal.h"
#include "planner/plan_routed.h"

const char *const ep_routed_names[EPR_COUNT_] = {"ep_counts", "ep_dispatch_fwd", "ep_combine_fwd", "ep_dispatch_bwd",
                                                 "ep_combine_bwd"};

CollectiveId ep_routed_coll(int i)
{
    static const CollectiveId ids[EPR_COUNT_] = {CO_COUNT_, CO_EP_DISPATCH_FWD, CO_EP_COMBINE_FWD, CO_EP_DISPATCH_BWD,
                                                 CO_EP_COMBINE_BWD};
    return i >= 0 && i < EPR_COUNT_ ? ids[i] : CO_COUNT_;
}

/* A call's counts: E int32 counts (E/ep stay) and five agreements of ep uint64 element counts (one stays). */
static void counts_row(uint64_t E, uint64_t ep, uint64_t calls, EpRouted *out, Ck *ck)
{
    uint64_t pay = ck_add(ck, ck_mul(ck, E, 4), ck_mul3(ck, 5, ep, 8));
    uint64_t sent = ck_add(ck, ck_mul(ck, E - E / ep, 4), ck_mul3(ck, 5, ep - 1, 8));
    out->payload[EPR_COUNTS] = ck_mul(ck, pay, calls);
    out->sent[EPR_COUNTS] = ck_mul(ck, sent, calls);
}

/* Bytes of one row of h elements in dt with the recipe's activation scales (whole bytes: ST_USAGE when the
 * scales make it a fraction). */
static Status row_bytes(const Recipe *rc, Dtype dt, uint64_t h, uint64_t *out, Err *e)
{
    double b = moe_copy_bytes(rc, dt, h);
    *out = (uint64_t)b;
    if ((double)*out != b)
        return err_set(e, ST_USAGE, "a routed row of %llu elements is %g bytes, not whole", (unsigned long long)h, b);
    return ST_OK;
}

/* The routing fits plan p and rank: the stage's tp x dp ranks, the model's experts, every rank's copies calls x
 * tokens x top-k (dropless). */
static Status routing_check(const Plan *p, const MoeRouting *rt, uint32_t rank, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    const uint64_t E = md->experts, ep = in->ep ? in->ep : 1, tp = in->tp ? in->tp : 1;
    const uint64_t xg = ep * (in->etp ? in->etp : 1);
    if (!rt || !rt->rows || rt->ranks != (uint64_t)in->dp * tp || rt->experts != E || rt->ranks % xg)
        return err_set(e, ST_USAGE,
                       "measured routing: %u ranks x %u experts given; the plan has tp %llu x dp %u and %llu experts",
                       rt ? rt->ranks : 0, rt ? rt->experts : 0, (unsigned long long)tp, in->dp, (unsigned long long)E);
    if (rank >= rt->ranks) return err_set(e, ST_USAGE, "measured routing: rank %u of %u", rank, rt->ranks);
    Ck ck = {0};
    /* dropless: every rank routes each of its tokens' top-k copies, calls x mbs x seq / tp x k */
    const uint64_t want = ck_mul(&ck, ck_mul(&ck, rt->calls, (uint64_t)in->mbs * p->seq / tp), md->experts_per_token);
    for (uint32_t r = 0; r < rt->ranks; r++) {
        uint64_t n = 0;
        for (uint64_t x = 0; x < E; x++) n = ck_add(&ck, n, rt->rows[(uint64_t)r * E + x]);
        if (n != want)
            return err_set(
                e, ST_DATA,
                "measured routing: rank %u routed %llu token copies over %llu dispatches; %llu x %llu tokens "
                "x top-%u = %llu expected",
                r, (unsigned long long)n, (unsigned long long)rt->calls, (unsigned long long)rt->calls,
                (unsigned long long)((uint64_t)in->mbs * p->seq / tp), md->experts_per_token, (unsigned long long)want);
    }
    return ST_OK;
}

/* The rows rank `rank`'s local experts received from its EP group (its peers etp apart with the same ETP and EDP
 * place: the ranks g0 + j·etp) over the routing's calls. */
static uint64_t expert_rows(const PlanInput *in, const MoeRouting *rt, uint32_t rank, Ck *ck)
{
    const uint64_t E = in->model->experts, ep = in->ep ? in->ep : 1, El = E / ep, et = in->etp ? in->etp : 1;
    const uint64_t g0 = rank / (ep * et) * ep * et + rank % et, x0 = rank / et % ep * El;
    uint64_t recv = 0;
    for (uint64_t x = x0; x < x0 + El; x++)
        for (uint64_t j = 0; j < ep; j++) recv = ck_add(ck, recv, rt->rows[(g0 + j * et) * E + x]);
    return recv;
}

Status plan_ep_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EpRouted *out, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    memset(out, 0, sizeof *out);
    if (!spec_is_moe(md) || in->ep <= 1 || in->cp != 1)
        return err_set(e, ST_USAGE,
                       "measured routing: the plan must be of a model with experts at ep > 1 and cp 1 (%s at ep %u, "
                       "cp %u)",
                       md->name, in->ep, in->cp);
    Status st = routing_check(p, rt, rank, e);
    if (st) return st;
    /* the stage's tp x dp ranks (tp fastest), regrouped etp x ep x edp (etp fastest: MoE folding); each routes
     * its sequence-parallel shard, mbs x seq / tp tokens a micro-batch */
    const uint64_t E = md->experts, ep = in->ep, El = E / ep, et = in->etp ? in->etp : 1, x0 = rank / et % ep * El;
    Ck ck = {0};
    uint64_t sent = 0, own = 0;
    for (uint64_t x = 0; x < E; x++) sent = ck_add(&ck, sent, rt->rows[(uint64_t)rank * E + x]);
    for (uint64_t x = x0; x < x0 + El; x++) own = ck_add(&ck, own, rt->rows[(uint64_t)rank * E + x]);
    const uint64_t recv = expert_rows(in, rt, rank, &ck);
    uint64_t Sd, Sc;
    st = row_bytes(in->recipe, in->recipe->comm_ep_dispatch, md->hidden, &Sd, e);
    if (!st) st = row_bytes(in->recipe, in->recipe->comm_ep_combine, md->hidden, &Sc, e);
    if (st) return st;
    out->payload[EPR_DISPATCH_FWD] = out->payload[EPR_DISPATCH_BWD] = ck_mul(&ck, sent, Sd);
    out->sent[EPR_DISPATCH_FWD] = out->sent[EPR_DISPATCH_BWD] = ck_mul(&ck, sent - own, Sd);
    out->payload[EPR_COMBINE_FWD] = out->payload[EPR_COMBINE_BWD] = ck_mul(&ck, recv, Sc);
    out->sent[EPR_COMBINE_FWD] = out->sent[EPR_COMBINE_BWD] = ck_mul(&ck, recv - own, Sc);
    counts_row(E, ep, rt->calls, out, &ck);
    if (ck.ovf) return err_set(e, ST_OVERFLOW, "measured routing: bytes past 2^64");
    return ST_OK;
}

Status plan_etp_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EtpRouted *out, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    memset(out, 0, sizeof *out);
    if (!spec_is_moe(md) || in->etp <= 1 || in->cp != 1)
        return err_set(e, ST_USAGE,
                       "measured routing: the plan must be of a model with experts at etp > 1 and cp 1 (%s at etp %u, "
                       "cp %u)",
                       md->name, in->etp, in->cp);
    Status st = routing_check(p, rt, rank, e);
    if (st) return st;
    /* the ETP group: etp consecutive ranks; each dispatch gathers every member's expert rows twice (forward
     * inputs, backward output gradients) as they arrived (moe_etp_gather_dtype) and reduce-scatters as many in the
     * combine dtype */
    const uint64_t et = in->etp, q0 = rank / et * et, h = md->hidden;
    Ck ck = {0};
    uint64_t rows = 0;
    for (uint64_t q = q0; q < q0 + et; q++) rows = ck_add(&ck, rows, expert_rows(in, rt, (uint32_t)q, &ck));
    const Dtype dt[ETPR_COUNT_] = {moe_etp_gather_dtype(in), in->recipe->comm_ep_combine};
    for (int i = 0; i < ETPR_COUNT_; i++) {
        uint64_t rb;
        st = row_bytes(in->recipe, dt[i], h, &rb, e); /* an FP8 row's 1x128 scales included */
        if (st) return st;
        out->payload[i] = ck_mul3(&ck, 2, rows, rb);
        out->sent[i] = out->payload[i] - (out->payload[i] + et - 1) / et; /* (etp - 1)/etp of it leaves */
    }
    if (ck.ovf) return err_set(e, ST_OVERFLOW, "measured routing: bytes past 2^64");
    return ST_OK;
}

void plan_ep_uniform(const Plan *p, uint64_t steps, EpRouted *out)
{
    Ck ck = {0};
    memset(out, 0, sizeof *out);
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        const Collective *c = &p->coll[ep_routed_coll(i)];
        out->payload[i] = ck_mul3(&ck, c->payload_bytes, c->calls, steps);
        out->sent[i] = ck_mul(&ck, c->step_bytes, steps);
    }
    const uint64_t ep = p->in.ep ? p->in.ep : 1;
    if (spec_is_moe(p->in.model) && ep > 1)
        counts_row(p->in.model->experts, ep, ck_mul(&ck, p->coll[CO_EP_DISPATCH_FWD].calls, steps), out, &ck);
}

double plan_ep_routed_time(const Plan *p, int i, double call_s)
{
    if (i < EPR_DISPATCH_FWD || i >= EPR_COUNT_) return 0; /* the counts have no payload row */
    const Collective *c = &p->coll[ep_routed_coll(i)];
    return call_s > 0 ? call_s * (double)c->calls : c->time_s;
}

void plan_ep_routed_times(Plan *p, const double call_s[EPR_COUNT_])
{
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        Collective *c = &p->coll[ep_routed_coll(i)];
        if (call_s[i] > 0) c->time_s = c->exposed_s = plan_ep_routed_time(p, i, call_s[i]);
    }
}
