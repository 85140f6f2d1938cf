/* cli/plan_flags.c — the plan inputs every command that plans or runs takes (plan, compare, sweep,
 * report, tui, check-log, run, calibrate; bytes-per-param and the catalog listings some of them): one
 * row per flag, read into a PlanArgs. A command takes a
 * flag with an OPT_USE row of its own table (cli/opts.h), narrowing the range to what it can do (run's
 * --mbs at most 65,536) and saying what the flag means there (the help here is the planner's); the
 * reading and its messages are here. */
#include <stddef.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/num.h"

#define IN(f)    offsetof(PlanArgs, in.f)
#define GIVEN(i) (offsetof(PlanArgs, layout_given) + (i) * sizeof(int) + 1)

/* --seq: past the planner's longest context a plan's figures mean nothing; a command's own bound (a
 * run's) is a plain range. */
static int read_seq(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    uint64_t v;
    if (num_parse_u64(arg, &v, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (v > PLAN_MAX_SEQ && o->hi == PLAN_MAX_SEQ)
        return cli_usage(p->cmd,
                         "--seq %llu: at most %u tokens (the longest published training contexts are a few million)",
                         (unsigned long long)v, PLAN_MAX_SEQ);
    if ((double)v < o->lo || (double)v > o->hi) return cli_opt_range(p, o, arg, (double)v, o->lo, o->hi, 1);
    *(uint32_t *)t = (uint32_t)v;
    return 0;
}

/* --zero 0..3: the ZeRO stage; a second, different one is refused (--dist-opt: after parsing). */
static int read_zero(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    PlanArgs *a = t;
    Err e;
    int z;
    if (num_parse_int_range(arg, 0, 3, &z, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (a->zero >= 0 && z != a->zero)
        return cli_usage(p->cmd, "--zero %d and --zero %d: give one ZeRO stage", a->zero, z);
    a->in.sharding = z == 0 ? SHARD_NONE : (Sharding)(SHARD_ZERO1 + z - 1);
    a->zero = z;
    return 0;
}

// clang-format off
const CliOpt plan_flags[] = {
    {"model", OPT_STR, offsetof(PlanArgs, model), .arg = "M"},
    {"gpu", OPT_STR, offsetof(PlanArgs, gpu), .arg = "G"},
    {"recipe", OPT_STR, offsetof(PlanArgs, recipe), .arg = "R"},
    {"recipes", OPT_STR, offsetof(PlanArgs, recipes), .arg = "R1,R2"},
    {"stack", OPT_STR, offsetof(PlanArgs, stack), .arg = "NAME"},
    {"catalog", OPT_STR, offsetof(PlanArgs, catalog), .arg = "DIR",
     .help = "directory holding models.csv, gpus.csv, recipes.csv, stacks.csv (./models)"},
    {"tp", OPT_U32, IN(tp), 1, .mark = GIVEN(0), .arg = "N"},
    {"pp", OPT_U32, IN(pp), 1, .mark = GIVEN(1), .arg = "N"},
    {"vpp", OPT_U32, IN(vpp), 1, .mark = GIVEN(2), .arg = "N"},
    {"cp", OPT_U32, IN(cp), 1, .mark = GIVEN(3), .arg = "N"},
    {"dp", OPT_U32, IN(dp), 1, .mark = GIVEN(4), .arg = "N"},
    {"ep", OPT_U32, IN(ep), 1, .mark = GIVEN(8), .arg = "N"},
    {"etp", OPT_U32, IN(etp), 1, .mark = GIVEN(9), .arg = "N"},
    {"mbs", OPT_U32, IN(mbs), 1, .mark = GIVEN(5), .arg = "N",
     .help = "micro-batch size in sequences (1)"},
    {"gbs", OPT_COUNT, IN(gbs), 1, .mark = CLI_MARK(PlanArgs, gbs_given), .arg = "N",
     .help = "global batch in sequences (about 2M tokens, rounded up to a multiple of mbs*dp)"},
    {"seq", OPT_FN, IN(seq), 1, PLAN_MAX_SEQ, .has_arg = 1, .fn = read_seq, .arg = "N",
     .help = "sequence length (the model's; at most 16777216, a warning past its context)"},
    {"zero", OPT_FN, 0, .has_arg = 1, .fn = read_zero, .mark = GIVEN(7), .arg = "0|1|2|3",
     .help = "ZeRO stage instead (1: master and Adam, 2: + gradients, 3: + weights; not with\n"
             "                     --dist-opt)"},
    {"dist-opt", OPT_FLAG, offsetof(PlanArgs, dist_opt), .set = 1, .mark = GIVEN(7),
     .help = "Megatron distributed optimizer: shard the states the recipe lists over DP x CP"},
    {0},
};
// clang-format on

/* After parsing: --dist-opt and --zero are alternatives; --dist-opt's sharding. Returns 0 or 64. */
int plan_flags_finish(const char *cmd, PlanArgs *a)
{
    if (a->dist_opt && a->zero >= 0)
        return cli_usage(cmd, "--dist-opt and --zero %d are alternatives; give one", a->zero);
    if (a->dist_opt) a->in.sharding = SHARD_DIST_OPT;
    return 0;
}

void plan_flags_defaults(PlanArgs *a)
{
    memset(a, 0, sizeof *a);
    plan_input_defaults(&a->in);
    a->zero = -1;
}
