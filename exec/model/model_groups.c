/* exec/model/model_groups.c — the rank grid of a run over tp x dp x pp ranks
 * and the communicators of its groups.
 *
 * Rank r of the world holds the coordinates
 *   tp_rank = r mod tp,  dp_rank = ⌊r / tp⌋ mod dp,  stage = ⌊r / (tp·dp)⌋,
 * Megatron-LM's default order (tensor-parallel ranks adjacent, pipeline stages
 * farthest apart): the TP group is tp consecutive ranks, a DP group's ranks
 * are tp apart (the plan's DP stride), and the next stage of rank r is
 * r + tp·dp (the plan's PP stride world / pp). Every collective runs over the
 * group that owns it: TP's activations and the vocabulary-parallel embedding
 * and loss over tpc, the data-parallel gradient reduction and the distributed
 * optimizer over dpc, the pipeline's sends over ppc (peer stage ± 1), the tied
 * embedding's gradient over embc (first and last stage), an "all" amax over
 * amaxc (the stage's TP x DP ranks: never across stages, whose banks hold
 * other layers); with experts, epc and edpc (the EP and expert-data-parallel
 * groups, model.h). A group of every rank is the world communicator itself; the
 * others are split from it (comm_split: MPI_Comm_split), and count their calls
 * in the world's statistics, so a rank's bytes per collective are one table. */
#include <string.h>

#include "exec/model/model_internal.h"

void model_groups_coords(const Plan *p, Model *m)
{
    const uint32_t tp = m->tp ? m->tp : 1, dp = m->dp ? m->dp : 1;
    m->ep = p->in.ep ? p->in.ep : 1;
    m->etp = p->in.etp ? p->in.etp : 1;
    if (!m->comm) { /* no communicator (unit tests): the plan's stage, rank 0 of its groups */
        m->tp_rank = m->dp_rank = m->ep_rank = m->etp_rank = 0;
        m->stage = p->in.pp > 1 ? p->stage : 0;
        return;
    }
    const uint32_t r = (uint32_t)m->comm->rank;
    m->tp_rank = r % tp;
    m->dp_rank = r / tp % dp;
    m->stage = r / (tp * dp);
    /* the expert side etp x ep x edp over the stage's tp x dp ranks, etp fastest (Megatron-Core's MoE folding) */
    const uint32_t within = m->tp_rank + tp * m->dp_rank;
    m->etp_rank = within % m->etp;
    m->ep_rank = within / m->etp % m->ep;
}

/* A sub-communicator m owns: a free slot of m->owned, or NULL. */
static Comm **slot(Model *m)
{
    for (int n = 0; n < MODEL_GROUPS_MAX; n++)
        if (!m->owned[n]) return &m->owned[n];
    return NULL;
}

/* *out = this rank's group: the ranks passing color, ranked by key, `want` of them. `size`, the same on
 * every rank, decides how it is made: every rank (the world itself), one rank (a single-rank communicator:
 * nothing to split, whatever library the world uses), else comm_split, which every rank of the world calls. */
static Status group(Model *m, uint32_t size, uint32_t want, int color, int key, Comm **out, Err *e)
{
    if (m->comm->size == 1 || size == (uint32_t)m->comm->size) {
        *out = m->comm;
        return ST_OK;
    }
    Comm **c = slot(m);
    if (!c) return err_set(e, ST_SOFTWARE, "model: more than %d rank groups", MODEL_GROUPS_MAX);
    Status st = size == 1 ? comm_single_create(c, e) : comm_split(m->comm, color, key, c, e);
    if (!st && size == 1) (*c)->parent = m->comm; /* its calls (none move bytes) counted in the world's */
    if (!st && (uint32_t)(*c)->size != want)
        st = err_set(e, ST_SOFTWARE, "model: a rank group of %d ranks, %u expected", (*c)->size, want);
    if (!st) *out = *c;
    return st;
}

Status model_groups_create(Model *m, Err *e)
{
    const uint32_t tp = m->tp, dp = m->dp, pp = m->pp, r = (uint32_t)m->comm->rank;
    const uint32_t td = tp * dp, within = r % td; /* the rank's place within its stage */
    const int end = m->stage == 0 || m->stage + 1 == pp;
    /* colors: the coordinates the group's ranks share; keys: the coordinate that orders them */
    Status st = group(m, tp, tp, (int)(r / tp), (int)m->tp_rank, &m->tpc, e);
    if (!st) st = group(m, dp, dp, (int)(m->stage * tp + m->tp_rank), (int)m->dp_rank, &m->dpc, e);
    if (!st) st = group(m, pp, pp, (int)within, (int)m->stage, &m->ppc, e);
    if (!st) st = group(m, td, td, (int)m->stage, (int)within, &m->amaxc, e);
    if (!st && pp <= 2)
        m->embc = m->ppc; /* every stage is an end */
    else if (!st) /* the ends of each pipeline together; a middle stage alone (its color: past the pipelines') */
        st = group(m, 2, end ? 2 : 1, end ? (int)within : (int)(td + r), (int)m->stage, &m->embc, e);
    /* expert parallelism (Megatron-Core's MoE folding: the stage's tp x dp ranks regrouped as etp x ep x edp, etp
     * fastest): ETP groups of etp consecutive ranks, EP groups of the ranks etp apart with the same ETP and EDP
     * place, EDP groups of the ranks holding the same experts' same shard (ep·etp apart); the colors count the
     * stages' groups apart (stage s's ETP groups s·ep·edp .., EP groups s·etp·edp .., EDP groups s·ep·etp ..) */
    const uint32_t ep = m->ep, et = m->etp, xg = ep * et, edp = td / xg, xe = within / xg; /* xe: the EDP place */
    if (!st) st = group(m, ep, ep, (int)(m->stage * edp * et + xe * et + m->etp_rank), (int)m->ep_rank, &m->epc, e);
    if (!st) st = group(m, et, et, (int)(m->stage * edp * ep + within / et), (int)m->etp_rank, &m->etpc, e);
    if (!st && xg == 1) /* with TP every rank of the stage holds every expert and routes its own tokens */
        m->edpc = tp > 1 ? m->amaxc : m->dpc;
    else if (!st)
        st = group(m, edp, edp, (int)(m->stage * xg + within % xg), (int)xe, &m->edpc, e);
    return st;
}

void model_groups_destroy(Model *m)
{
    for (int i = MODEL_GROUPS_MAX; i-- > 0;)
        if (m->owned[i]) m->owned[i]->destroy(m->owned[i]);
    memset(m->owned, 0, sizeof m->owned);
}
