/* cli/cmd_plan.h — what the planner subcommands (plan, compare, sweep,
 * bytes-per-param, models, gpus, recipes, report) share: finding and loading
 * the catalog, and the layout/overhead options of plan, compare and sweep. */
#ifndef FP8PLAN_CLI_CMD_PLAN_H
#define FP8PLAN_CLI_CMD_PLAN_H

#include <getopt.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "import/import.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "check/fidelity.h"

/* catalog_load (catalog/catalog_find.h) for subcommand `cmd`: models.csv, gpus.csv, recipes.csv and
 * stacks.csv from the catalog directory (`dir` when given (--catalog), else $FP8PLAN_CATALOG, else
 * ./models, else models/ next to the binary's parent directory (build/fp8plan -> models/)).
 * On failure prints "fp8plan CMD: ..." and returns the exit code (66 missing,
 * 65 bad data); on success *out is a calloc'd catalog the caller frees. */
int plan_catalog_load(const char *cmd, const char *dir, Catalog **out);

/* The catalog directory the same search finds (exit code on failure). */
int plan_catalog_find(const char *cmd, const char *dir, char *found, size_t size);

/* "trust: ..." for the plans of `in` (reports/fidelity_report.h FidelityBand): the planner's error on the
 * runs of the catalog's measured.csv like it, or why there is none (no such run, no measured.csv, one that
 * does not read: the plan stands without it). Fails only when memory runs out (ST_NOMEM in *e). */
Status plan_trust_text(const char *catdir, const Catalog *cat, const PlanInput *in, char *buf, size_t size, Err *e);
/* The rows behind it, read once (the TUI bands each plan it draws): *rows (the caller frees it) and *n, or
 * *rows NULL and note saying why there are none. Fails only when memory runs out. */
Status plan_trust_rows(const char *catdir, const Catalog *cat, FidelityRow **rows, int *n, char *note, size_t size,
                       Err *e);

/* The longest --seq the planner takes: 2^24 = 16,777,216 tokens (published training contexts reach
 * a few million; past that a plan's figures mean nothing). */
enum { PLAN_MAX_SEQ = 1 << 24 };

/* The most GPUs a plan is for, the sweep's limit (planner/sweep.h): 2^20. */
enum { PLAN_MAX_GPUS = SWEEP_MAX_GPUS };

/* Which of the shared options a subcommand accepts. */
enum {
    PO_RECIPE = 1 << 0,  /* --recipe R */
    PO_RECIPES = 1 << 1, /* --recipes R1,R2 */
    PO_LAYOUT = 1 << 2,  /* --tp --pp --vpp --cp --dp --mbs --gbs --dist-opt --zero --recompute */
    PO_SWEEP = 1 << 3,   /* --top K, --stacks L, --per-recipe, --all; --gpus N becomes required */
    PO_VIEW = 1 << 4,    /* --view */
    PO_UNKNOWN = 1 << 5, /* --unknown LIST (plan) */
};

/* Stack-backed fields the command line set explicitly (they win over the stack's row). */
enum {
    PG_ATTN = 1 << 0,
    PG_MAIN_GRAD = 1 << 1,
    PG_FP8_CACHE = 1 << 2,
    PG_SWIGLU = 1 << 3,
    PG_FUSION = 1 << 4,
    PG_LAUNCH = 1 << 5,
    PG_OV_TP = 1 << 6,
    PG_OV_DP = 1 << 7,
    PG_OV_PP = 1 << 8,
    PG_OV_CP = 1 << 9,
    PG_RESERVE = 1 << 10,
    PG_SP = 1 << 11,
    PG_GRAD_ACC = 1 << 12,
    PG_OV_TP_ON = 1 << 13,
    PG_OV_EP = 1 << 14,
};

typedef struct {
    PlanInput in;            /* defaults, then every flag applied (model/gpu/recipe still NULL) */
    const char *model, *gpu; /* names */
    const char *recipe;      /* --recipe */
    const char *recipes;     /* --recipes, comma-separated */
    const char *catalog;     /* --catalog DIR */
    const char *view;        /* --view summary|terms|collectives|time */
    const char *routing;     /* --routing FILE: a run's --routing-log (plan: each rank's expert all-to-alls) */
    const char *stack;       /* --stack NAME (NULL: CATALOG_DEFAULT_STACK) */
    const char *stacks;      /* --stacks L1,L2|all (sweep) */
    unsigned given;          /* PG_* bits */
    uint32_t gpus;           /* --gpus N */
    uint32_t top;            /* --top K */
    int top_given;           /* --top was given */
    int per_recipe;          /* sweep --per-recipe: the best of each recipe */
    int all;                 /* sweep --all: list near-duplicates too */
    int layout_given[10];    /* which of tp,pp,vpp,cp,dp,mbs,recompute,sharding,ep,etp were given */
    int ascii;               /* --ascii: ASCII memory bars in text output */
    int zero;                /* --zero's stage (-1: not given) */
    int dist_opt;            /* --dist-opt */
    int gbs_given;           /* --gbs was given */
    CliOut out;
    int from_given;    /* --from FILE was read (cli/cmd_plan_from.c) */
    ImportResult from; /* its flags' text, model and batch rule (the notes are freed after --explain) */
    int from_explain;  /* --explain was given with it */
} PlanArgs;

/* The plan inputs (cli/plan_flags.c): --model --gpu --recipe --recipes --stack --catalog --tp --pp --vpp
 * --cp --dp --ep --etp --mbs --gbs --seq --zero --dist-opt, read into a PlanArgs, one row each. Every
 * command that plans or runs takes them from here with OPT_USE rows (cli/opts.h): plan, compare, sweep,
 * report html, tui and check-log (plan_args_parse), run, calibrate, report seed|fidelity, bytes-per-param
 * and the catalog listings (into a PlanArgs of their own). A new plan input is a row there. */
extern const CliOpt plan_flags[];
/* A command's row (cli/opts.h) taking the plan input NAME from plan_flags into the PlanArgs at offset
 * OFF of what it parses, in [LO, HI] (HI 0: the planner's range), described by ARG and HELP (NULL: the
 * shared row's words; "": listed by a line of the command's own). */
// clang-format off
#define PLAN_FLAG(OFF, NAME, LO, HI, ARG, HELP) \
    {NAME, OPT_USE, OFF, .lo = LO, .hi = HI, .block = plan_flags, .arg = ARG, .help = HELP}
// clang-format on
/* An OPT_FN reader (cli/cmd_plan_opts.c): a fraction in (0, 1] into the double at t, [0, 1] when o->set
 * (zero allowed); "--NAME: 'ARG' must be in (0, 1]" otherwise. */
int plan_read_frac(const CliParse *p, const CliOpt *o, const char *arg, void *t);
/* A PlanArgs before parsing: zeros, the planner's defaults in in, no --zero. */
void plan_flags_defaults(PlanArgs *a);
/* After parsing: refuse --dist-opt with --zero, apply --dist-opt. Returns 0 or 64 after the message. */
int plan_flags_finish(const char *cmd, PlanArgs *a);

/* Parse argv for `cmd` accepting the options in `mask`. Returns 0 on success,
 * -1 when --help was printed (exit 0), or an exit code (64) after printing the
 * message. `help` is the subcommand's help text. */
int plan_args_parse(const char *cmd, int argc, char **argv, unsigned mask, const char *help, PlanArgs *a);

/* --from FILE [--from-format F] [--explain] (cli/cmd_plan_from.c): read the file into a->from and make
 * *out = argv[0], the file's flags that `mask` takes, then the user's arguments but those three (a malloc'd
 * array the caller frees; NULL without --from). Returns 0 or the exit code after the message. */
int plan_from_expand(const char *cmd, int argc, char **argv, unsigned mask, PlanArgs *a, char ***out, int *outc);
/* The model a->from describes: the catalog's row of the same dimensions (with --explain, the fields that
 * decided it on stderr), else a->from.model itself; NULL and *e (ST_DATA naming the file, line, setting and
 * the nearest row) for a model with experts, latent attention or MTP that no catalog row has. */
const ModelSpec *plan_from_model(const Catalog *c, const PlanArgs *a, Err *e);
/* After a plan of the file's recipe failed (a GPU without FP8): say which line of the file chose it. */
void plan_from_blame(const char *cmd, const PlanArgs *a);
/* The value the file gave `flag` ("--recipe"), or NULL. */
const char *plan_from_flag(const PlanArgs *a, const char *flag);
/* 1 when the shared option `name` (without "--") applies under mask (PO_*). */
int plan_option_applies(const char *name, unsigned mask);

/* Resolve --model, --gpu and --stack (the first time: its row is applied, then the
 * options given explicitly again) and one recipe name against the catalog into
 * a->in; prints "unknown model 'x' (known: ...)" and returns 64 on failure. */
int plan_args_resolve(const char *cmd, const Catalog *c, PlanArgs *a, const char *recipe);

/* Copy into `in` the stack-backed fields the command line set explicitly
 * (a->given) from `given`, so that they win over a stack row applied later. */
void plan_args_keep_given(const PlanArgs *a, const PlanInput *given, PlanInput *in);

/* The mixture-of-experts options that need more than a number (cli/cmd_plan_moe.c): which is 'i'
 * --moe-imbalance, 'c' --moe-capacity, 's' --ep-comm-sms, 'd' --dualpipe, 'r' --recompute-modules, 'g' --cuda-graph-scope, 'D' --moe-dispatcher.
 * Returns 0 or the usage exit code after the message. */
/* A --flag taking a comma-separated list of planner names (recompute modules, CUDA graph scopes, unknowns):
 * parse into bits, or a usage error naming the flag and the bad (or empty) name with the known ones. */
typedef struct {
    int (*parse)(const char *, unsigned *, size_t *, size_t *);
    void (*format)(unsigned, char *, size_t);
    unsigned all;
    const char *empty; /* "module name": what an empty entry is */
    const char *what;  /* "a module the planner knows": what a bad entry is not */
} PlanNameList;
int plan_name_list(const char *cmd, const char *name, const char *arg, const PlanNameList *l, unsigned *out);
int plan_moe_option(const char *cmd, const char *name, int which, const char *arg, PlanInput *in);
/* plan --routing FILE (cli/cmd_plan_routing.c): each rank's expert all-to-all bytes for the routing in FILE
 * (`fp8plan run --routing-log`), as a table through out; an exit code (65 for a bad file, naming it). */
int plan_routing_emit(const char *cmd, const Plan *p, const char *path, const CliOut *out);

/* The help of the options plan_args_parse takes under mask (PO_*), generated from its table (the lines
 * of the options it refuses left out); buf returned. */
const char *plan_options_help(unsigned mask, char *buf, size_t cap);

/* The seed's headline run, the default of `tui` and `report html`: gpt-175b on h100-sxm, TP 8 x PP 4
 * x DP 4 with the distributed optimizer. A command puts "--model plan_headline_model --gpu
 * plan_headline_gpu" before the user's own options (so theirs win) and, after parsing, calls
 * plan_args_headline: when the model is still the default (the same pointer), the layout flags the
 * user did not give take the headline's values. */
extern const char plan_headline_model[], plan_headline_gpu[];
void plan_args_headline(PlanArgs *a);

/* Split --recipes (two to sixteen names), resolve each against the catalog and build its plan with
 * a's layout: *plans (calloc'd, the caller frees it even on failure) holds *n plans. Returns 0 or the
 * exit code after printing the message. */
int plan_build_recipes(const char *cmd, const Catalog *cat, PlanArgs *a, Plan **plans, int *n);

/* fp8plan check-log LOG --from CONFIG (cli/cmd_check_log.c). */
int cmd_check_log(int argc, char **argv);

#endif
