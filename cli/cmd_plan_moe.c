/* cli/cmd_plan_moe.c — the mixture-of-experts options of plan, compare and sweep
 * (--ep, --etp and --overlap-ep are parsed with the other layout options). */
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/num.h"

/* "mla_up_proj,moe_act" -> RECOMPUTE_MOD_* bits ("none" = 0): the planner's list of names. */
static int modules(const char *cmd, const char *name, const char *arg, unsigned *out)
{
    size_t at = 0, len = 0;
    if (!recompute_mods_parse(arg, out, &at, &len)) return 0;
    char known[160];
    recompute_mods_format(RECOMPUTE_MOD_ALL_, known, sizeof known);
    if (!len) return cli_usage(cmd, "--%s '%s': an empty module name (known: %s, or none)", name, arg, known);
    return cli_usage(cmd, "--%s: '%.*s' is not a module the planner knows (known: %s, or none)", name, (int)len,
                     arg + at, known);
}

/* "attn,moe_router" -> GRAPH_* bits ("none" = 0). */
static int scopes(const char *cmd, const char *name, const char *arg, unsigned *out)
{
    size_t at = 0, len = 0;
    if (!graph_scope_parse(arg, out, &at, &len)) return 0;
    char known[80];
    graph_scope_format(GRAPH_SCOPE_ALL_, known, sizeof known);
    if (!len) return cli_usage(cmd, "--%s '%s': an empty scope name (known: %s, or none)", name, arg, known);
    return cli_usage(cmd, "--%s: '%.*s' is not a CUDA graph scope (known: %s, or none)", name, (int)len, arg + at,
                     known);
}

int plan_moe_option(const char *cmd, const char *name, int which, const char *arg, PlanInput *in)
{
    Err e;
    double v;
    switch (which) {
    case 'd': in->dualpipe = 1; return 0;
    case 'r': return modules(cmd, name, arg, &in->recompute_mods);
    case 'g': return scopes(cmd, name, arg, &in->graph_scope);
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
