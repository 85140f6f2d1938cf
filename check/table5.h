/* check/table5.h — FP8-LM Table 5 against the plan: every published figure of models/fp8lm_table5.csv
 * (memory and weight-related communication, judged within a stated band; throughput and MFU shown)
 * beside the planner's prediction for the same model, recipe and layout, with the one judge of
 * check/compare.h (check_verdict of the prediction against the published figure), and the derived
 * check the seed explains: TE FP8 needs more memory than BF16 at 175B. reports/seed_report.c renders
 * the figures as `fp8plan report seed`'s Table 5. */
#ifndef FP8PLAN_CHECK_TABLE5_H
#define FP8PLAN_CHECK_TABLE5_H

#include "catalog/catalog.h"
#include "catalog/fp8lm_table5.h"
#include "check/compare.h"

/* Tolerances of the Table 5 check (relative). The published figures are single
 * measurements whose allocator slack, NCCL buffers and "GB" unit are not stated
 * (GB and GiB differ by 7.4 %); the acceptance bands are +-15 % for memory and
 * +-12 % for weight-related communication, whose payload is fixed by the
 * parameter count and dtypes and only the ring factor and bucketing vary. */
#define SEED_T5_MEMORY_TOL 0.15
/* The stack the FP8-LM runs used: Megatron-LM's defaults (stacks.csv); without that row, none. */
#define SEED_T5_STACK    "megatron-lm"
#define SEED_T5_COMM_TOL 0.12

typedef struct {
    int checked; /* figures with a tolerance */
    int outside; /* of which outside it */
} SeedCheck;

/* One published figure beside its prediction. */
typedef struct {
    char model[SPEC_NAME_MAX], recipe[SPEC_NAME_MAX]; /* the recipe the prediction used */
    char column[T5_COLUMN_MAX];                       /* the paper's column ("te - bf16" for the derived row) */
    char layout[96];                                  /* "TP8 PP4 DP4 mbs1" */
    const char *metric, *unit;                        /* "memory" "GB", "weight_comm" "GB", ... */
    double published, predicted;
    double tol;      /* relative; 0: shown, not checked (MEASURE_INFO) */
    int derived;     /* the memory difference TE FP8 - BF16 at 175B: a MEASURE_BOUND, BF16 at most TE */
    Verdict verdict; /* VERDICT_OK, VERDICT_OUTSIDE, or VERDICT_INFO */
} T5Figure;

/* The plan input of FP8-LM's runs for one Table 5 setup (the one place it is said; `fp8plan report seed`
 * and the TUI's `t` key both plan with it): defaults, the megatron-lm stack's row where the catalog has
 * one, then the runs' own settings (distributed optimizer, sequence parallelism, flash attention, the
 * weight-gradient accumulation in its own kernel, no recompute, no collective overlapped), the model,
 * recipe (may be NULL, set later), GPU and layout given. */
void table5_plan_input(PlanInput *in, const Catalog *c, const ModelSpec *m, const Recipe *r, const GpuSpec *g,
                       unsigned tp, unsigned pp, unsigned dp, unsigned mbs, unsigned seq);

/* Every figure of the published rows (models/fp8lm_table5.csv text, named fname in errors), planned and
 * judged, in file order, then the derived check. *out (free it) has *n figures; chk counts the checked
 * ones and those outside. ST_DATA for a bad file or a catalog without h100-sxm, the planner's errors
 * prefixed "fname: row N", ST_NOMEM. */
Status check_table5(const Catalog *c, const char *text, size_t len, const char *fname, T5Figure **out, int *n,
                    SeedCheck *chk, Err *e);

#endif
