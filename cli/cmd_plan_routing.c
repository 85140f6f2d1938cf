/* cli/cmd_plan_routing.c — `fp8plan plan --routing FILE`: each rank's expert all-to-all bytes for the
 * routing a run measured (catalog/routing.h reads `fp8plan run --routing-log`; planner/plan_routed.h
 * counts; with --etp > 1 the ETP group's gather and reduce-scatter too), beside the plan's uniform-routing expectation over the same steps. With pipeline stages each
 * stage's ranks (the log's ranks, DP ranks within a stage) route that stage's MoE layers: each stage is
 * counted with its own plan and its layers' rows, rank s x dp + r as `fp8plan run` numbers them. */
#include <stdlib.h>
#include <string.h>

#include "catalog/routing.h"
#include "cli/cmd_plan.h"
#include "planner/plan_routed.h"

static const TableCol cols[] = {
    {"rank", NULL, NULL, TC_U64, 0, TF_KEY},
    {"collective", NULL, NULL, TC_STR, 0, TF_LEFT | TF_KEY},
    {"sent_bytes", "sent", "B", TC_U64, 0, TF_GROUP},
    {"payload_bytes", "payload", "B", TC_U64, 0, TF_GROUP},
    {"uniform_sent_bytes", "uniform sent", "B", TC_U64, 0, TF_GROUP},
    {"uniform_payload_bytes", "uniform payload", "B", TC_U64, 0, TF_GROUP},
};

/* Rows of the ranks rank0 .. of one stage (its plan sp, its routing rt) into t. */
static Status stage_rows(Table *t, const Plan *sp, const MoeRouting *rt, uint32_t steps, uint32_t rank0, Err *e)
{
    EpRouted up, o;
    plan_ep_uniform(sp, steps, &up);
    for (uint32_t r = 0; r < rt->ranks; r++) {
        Status st = plan_ep_routed(sp, rt, r, &o, e);
        if (st) return st;
        for (int i = 0; i < EPR_COUNT_; i++) {
            table_row(t);
            table_u64(t, 0, rank0 + r);
            table_str(t, 1, ep_routed_names[i]);
            table_u64(t, 2, o.sent[i]);
            table_u64(t, 3, o.payload[i]);
            table_u64(t, 4, up.sent[i]);
            table_u64(t, 5, up.payload[i]);
        }
        EtpRouted x;
        if (sp->in.etp > 1 && (st = plan_etp_routed(sp, rt, r, &x, e)) != ST_OK) return st;
        for (int i = 0; sp->in.etp > 1 && i < ETPR_COUNT_; i++) { /* the ETP group's gather and reduce-scatter */
            const CollectiveId id = i == ETPR_AG ? CO_ETP_AG : CO_ETP_RS;
            const Collective *c = &sp->coll[id];
            table_row(t);
            table_u64(t, 0, rank0 + r);
            table_str(t, 1, coll_name(id));
            table_u64(t, 2, x.sent[i]);
            table_u64(t, 3, x.payload[i]);
            table_u64(t, 4, c->step_bytes * steps);
            table_u64(t, 5, plan_coll_step_payload(c) * steps);
        }
    }
    return ST_OK;
}

/* Stage s of plan p: its plan into *sp, and into rows (ranks x experts) its MoE layers' copies from rl (*nl of
 * them); ST_DATA when the log lacks one of them. */
static Status stage_of(const Plan *p, uint32_t s, const RoutingLog *rl, Plan *sp, uint64_t *rows, uint32_t *nl, Err *e)
{
    PlanInput in = p->in;
    in.stage_view = s + 1;
    Status st = plan_build(&in, sp, e);
    if (st) return st;
    const uint32_t pp = p->in.pp, d = p->in.model->dense_layers;
    const uint32_t L0 = s ? sp->first_layers + (s - 1) * sp->mid_layers : 0;
    const uint32_t n = s == 0 ? sp->first_layers : s + 1 == pp ? sp->last_layers : sp->mid_layers;
    const uint64_t re = (uint64_t)rl->ranks * rl->experts;
    memset(rows, 0, re * sizeof *rows);
    *nl = 0;
    for (uint32_t L = L0 > d ? L0 : d; L < L0 + n; L++) { /* the stage's MoE layers */
        uint32_t i = 0;
        while (i < rl->layers && rl->layer_ids[i] != L) i++;
        if (i == rl->layers) return err_set(e, ST_DATA, "no rows for MoE layer %u (stage %u's)", L, s);
        for (uint64_t j = 0; j < re; j++) rows[j] += rl->layer_rows[(uint64_t)i * re + j];
        ++*nl;
    }
    return ST_OK;
}

static Status emit_rows(Table *t, const Plan *p, const RoutingLog *rl, Err *e)
{
    MoeRouting rt = {.ranks = rl->ranks, .experts = rl->experts, .rows = rl->rows};
    if (p->in.pp <= 1) {
        rt.calls = (uint64_t)rl->steps * rl->layers * p->microbatches;
        return stage_rows(t, p, &rt, rl->steps, 0, e);
    }
    Plan *sp = malloc(sizeof *sp);
    uint64_t *rows = calloc((size_t)rl->ranks * rl->experts + 1, sizeof *rows);
    Status st = sp && rows ? ST_OK : err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t s = 0, nl = 0; !st && s < p->in.pp; s++) {
        st = stage_of(p, s, rl, sp, rows, &nl, e);
        rt.rows = rows, rt.calls = (uint64_t)rl->steps * nl * sp->microbatches;
        if (!st) st = stage_rows(t, sp, &rt, rl->steps, s * rl->ranks, e);
    }
    free(sp);
    free(rows);
    return st;
}

int plan_routing_emit(const char *cmd, const Plan *p, const char *path, const CliOut *out)
{
    RoutingLog rl;
    Err e;
    if (routing_log_load(path, &rl, &e)) {
        routing_log_free(&rl);
        return cli_fail(cmd, &e);
    }
    /* the layers the log names are the plan's MoE layers (the model's after its dense ones, then each
     * multi-token-prediction depth's, a MoE layer on a model with experts) */
    const ModelSpec *md = p->in.model;
    const uint32_t moe =
        (md->layers > md->dense_layers ? md->layers - md->dense_layers : 0) + (md->experts ? md->mtp_layers : 0);
    int rc = 0;
    if (rl.layers != moe) {
        err_set(&e, ST_DATA, "--routing %s: %u MoE layers logged; %s planned here has %u", path, rl.layers, md->name,
                moe);
        rc = cli_fail(cmd, &e);
    }
    Table *t = rc ? NULL : table_new(cols, (int)(sizeof cols / sizeof cols[0]));
    if (!rc && !t) rc = cli_nomem(cmd, "the routing table");
    if (!rc && emit_rows(t, p, &rl, &e)) {
        err_prefix(&e, "--routing %s", path);
        rc = cli_fail(cmd, &e);
    }
    if (!rc) {
        char title[300];
        snprintf(title, sizeof title,
                 "Expert all-to-alls per rank over %u steps (%u MoE layers x %u micro-batches a step) of %s at dp %u, "
                 "ep %u, pp %u: the routing in %s, and the plan's uniform routing",
                 rl.steps, rl.layers, p->microbatches, md->name, p->in.dp, p->in.ep, p->in.pp ? p->in.pp : 1, path);
        table_set_title(t, title);
        rc = cli_emit_table(cmd, t, out);
    }
    table_free(t);
    routing_log_free(&rl);
    return rc;
}
