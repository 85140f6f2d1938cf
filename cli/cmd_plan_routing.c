/* cli/cmd_plan_routing.c — `fp8plan plan --routing FILE`: each rank's expert all-to-all bytes for the
 * routing a run measured (catalog/routing.h reads `fp8plan run --routing-log`; planner/plan_routed.h
 * counts), beside the plan's uniform-routing expectation over the same steps. */
#include <stdlib.h>

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

int plan_routing_emit(const char *cmd, const Plan *p, const char *path, const CliOut *out)
{
    RoutingLog rl;
    Err e;
    if (routing_log_load(path, &rl, &e)) {
        routing_log_free(&rl);
        return cli_fail(cmd, &e);
    }
    /* the layers the log names are the plan's MoE layers (one stage: the model's after its dense ones, then each
     * multi-token-prediction depth's, a MoE layer on a model with experts) */
    const ModelSpec *md = p->in.model;
    const uint32_t moe =
        (md->layers > md->dense_layers ? md->layers - md->dense_layers : 0) + (md->experts ? md->mtp_layers : 0);
    int rc = 0;
    if (p->in.pp > 1) { /* the log's rows are summed over every layer; a stage's ranks route its own layers only */
        err_set(
            &e, ST_USAGE,
            "--routing %s with --pp %u: the log is read summed over the model's layers, not per stage yet (`fp8plan "
            "run` compares each stage's ranks with their stage's plan itself)",
            path, p->in.pp);
        rc = cli_fail(cmd, &e);
    } else if (rl.layers != moe) {
        err_set(&e, ST_DATA, "--routing %s: %u MoE layers logged; %s planned here has %u", path, rl.layers, md->name,
                moe);
        rc = cli_fail(cmd, &e);
    }
    MoeRouting rt = {.ranks = rl.ranks,
                     .experts = rl.experts,
                     .calls = (uint64_t)rl.steps * rl.layers * p->microbatches,
                     .rows = rl.rows};
    EpRouted up, o;
    plan_ep_uniform(p, rl.steps, &up);
    Table *t = rc ? NULL : table_new(cols, (int)(sizeof cols / sizeof cols[0]));
    if (!rc && !t) rc = cli_nomem(cmd, "the routing table");
    for (uint32_t r = 0; !rc && r < rl.ranks; r++) {
        if (plan_ep_routed(p, &rt, r, &o, &e)) {
            err_prefix(&e, "--routing %s", path);
            rc = cli_fail(cmd, &e);
            break;
        }
        for (int i = 0; i < EPR_COUNT_; i++) {
            table_row(t);
            table_u64(t, 0, r);
            table_str(t, 1, ep_routed_names[i]);
            table_u64(t, 2, o.sent[i]);
            table_u64(t, 3, o.payload[i]);
            table_u64(t, 4, up.sent[i]);
            table_u64(t, 5, up.payload[i]);
        }
    }
    if (!rc) {
        char title[300];
        snprintf(title, sizeof title,
                 "Expert all-to-alls per rank over %u steps (%llu dispatches a rank) of %s at dp %u, ep %u: the "
                 "routing in %s, and the plan's uniform routing",
                 rl.steps, (unsigned long long)rt.calls, md->name, p->in.dp, p->in.ep, path);
        table_set_title(t, title);
        rc = cli_emit_table(cmd, t, out);
    }
    table_free(t);
    routing_log_free(&rl);
    return rc;
}
