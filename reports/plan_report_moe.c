/* reports/plan_report_moe.c — the mixture-of-experts lines of the plan's text report (see plan_report.h). */
#include <stdio.h>
#include <string.h>

#include "reports/plan_report.h"
#include "util/num.h"

int plan_moe_text(const Plan *p, int part, char *buf, size_t size)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    buf[0] = '\0';
    if (!plan_coll_applies(p, CO_EP_DISPATCH_FWD)) return 0;
    char a[40], b[40];
    if (part == 1) {
        snprintf(buf, size,
                 "expert all-to-alls and expert TP per step: %.3f GB (expert-DP gradients and parameters "
                 "are counted in DP below)\n",
                 plan_gb(p->ep_comm_bytes));
        return 1;
    }
    uint64_t side = (uint64_t)in->tp * in->cp * in->dp, eg = (uint64_t)in->ep * in->etp;
    snprintf(buf, size,
             "experts: %u routed (top %u) + %u shared per MoE layer, %u on this GPU; EP %u x ETP %u, expert-DP %llu; "
             "%s of %s parameters active per token\n"
             "         %s %.2f; all-to-all dispatch %s, combine %s; EP overlap %.2f%s; %u SMs held by the "
             "all-to-all kernels\n",
             md->experts, md->experts_per_token, md->shared_experts, md->experts / (in->ep ? in->ep : 1), in->ep,
             in->etp, (unsigned long long)(eg ? side / eg : 0), num_fmt_grouped(p->params_active, a, sizeof a),
             num_fmt_grouped(p->params_total, b, sizeof b),
             in->moe_capacity > 0 ? "capacity factor" : "dropless, imbalance allowance",
             in->moe_capacity > 0 ? in->moe_capacity : in->moe_imbalance, dtype_name(in->recipe->comm_ep_dispatch),
             dtype_name(in->recipe->comm_ep_combine), in->dualpipe ? 1.0 : in->overlap_ep,
             in->dualpipe ? " (DualPipe)" : "", plan_ep_comm_sms(in));
    if (in->host_op_s > 0) {
        char sc[80];
        graph_scope_format(in->graph_scope, sc, sizeof sc);
        size_t n = strlen(buf);
        snprintf(buf + n, size > n ? size - n : 0,
                 "         host issue per MoE layer and micro-batch: %.0f + %.0f x %u local experts operations at "
                 "%.1f us; CUDA graphs: %s\n",
                 in->moe_host_ops, in->expert_host_ops, md->experts / (in->ep ? in->ep : 1), in->host_op_s * 1e6, sc);
    }
    return 1;
}
