/* cli/cmd_plan_moe.c — the mixture-of-experts options of plan, compare and sweep
 * (--ep, --etp and --overlap-ep are parsed with the other layout options). */
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/num.h"

int plan_name_list(const char *cmd, const char *name, const char *arg, const PlanNameList *l, unsigned *out)
{
    size_t at = 0, len = 0;
    if (!l->parse(arg, out, &at, &len)) return 0;
    char known[160];
    l->format(l->all, known, sizeof known);
    if (!len) return cli_usage(cmd, "--%s '%s': an empty %s (known: %s, or none)", name, arg, l->empty, known);
    return cli_usage(cmd, "--%s: '%.*s' is not %s (known: %s, or none)", name, (int)len, arg + at, l->what, known);
}

static const PlanNameList modules = {recompute_mods_parse, recompute_mods_format, RECOMPUTE_MOD_ALL_, "module name",
                                     "a module the planner knows"};
static const PlanNameList scopes = {graph_scope_parse, graph_scope_format, GRAPH_SCOPE_ALL_, "scope name",
                                    "a CUDA graph scope"};
static const PlanNameList offloads = {offload_mods_parse, offload_mods_format, OFFLOAD_MOD_ALL_, "module name",
                                      "a module the planner offloads"};

int plan_moe_option(const char *cmd, const char *name, int which, const char *arg, PlanInput *in)
{
    Err e;
    double v;
    switch (which) {
    case 'd': in->dualpipe = 1; return 0;
    case 'r': return plan_name_list(cmd, name, arg, &modules, &in->recompute_mods);
    case 'g': return plan_name_list(cmd, name, arg, &scopes, &in->graph_scope);
    case 'o': return plan_name_list(cmd, name, arg, &offloads, &in->offload_mods);
    case 'D':
        if (!strcmp(arg, "alltoall") || !strcmp(arg, "deepep") || !strcmp(arg, "hybridep")) {
            in->moe_dedup = !strcmp(arg, "deepep")     ? MOE_DISPATCH_DEEPEP
                            : !strcmp(arg, "hybridep") ? MOE_DISPATCH_HYBRIDEP
                                                       : MOE_DISPATCH_ALLTOALL;
            return 0;
        }
        return cli_usage(cmd, "--%s: '%s' is not alltoall, deepep or hybridep", name, arg);
    case 's': {
        int n;
        if (num_parse_int_range(arg, 0, 1024, &n, &e)) return cli_usage(cmd, "--%s: %s", name, e.msg);
        in->ep_comm_sms = (uint32_t)n;
        return 0;
    }
    default:
        if (num_parse_double(arg, NUM_FINITE_ONLY, &v, &e)) return cli_usage(cmd, "--%s: %s", name, e.msg);
        if (which == 'i' && !(v >= 1 && v <= 64))
            return cli_usage(cmd, "--%s: '%s' must be in [1, 64] (the busiest expert rank over the mean)", name, arg);
        if (which == 'c' && !(v >= 0 && v <= 64))
            return cli_usage(cmd, "--%s: '%s' must be in [0, 64] (0: dropless)", name, arg);
        if (which == 'i')
            in->moe_imbalance = v;
        else
            in->moe_capacity = v;
        return 0;
    }
}
