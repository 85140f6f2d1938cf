/* check/fidelity.h — the planner against published measured runs (`fp8plan report fidelity`;
 * reports/fidelity_report.h renders the rows, summaries and pairs as tables).
 *
 * Every run of models/measured.csv is planned with its stack, model, GPU,
 * recipe and layout. Throughput: predicted tokens/s per GPU against the
 * published one (or gbs * seq / step time / GPUs), signed error
 * predicted / measured - 1. Memory: the published peak against the term it
 * counts — allocated (states, copies, scales, activations, workspace),
 * reserved (+ the allocator's reserve) or the device total (+ CUDA context and
 * NCCL buffers; also when the kind is not stated). A false OOM is a run that
 * really ran but whose predicted total exceeds the GPU's memory; "over the
 * limit" counts the ones above --max-mem-frac of it (0.95). A run whose notes
 * name choices its source leaves open (unknown=, plan --unknown) is judged at
 * both ends: UNCERTAIN (counted apart) when only its low end fits. Summaries: mean
 * absolute throughput error overall, per stack, and on a hold-out set of
 * sources (runs whose errors were never looked at while choosing parameters),
 * FP8-LM Table 5's rows, and memory error over the allocator-traced rows. Runs of models
 * with experts are summarised apart (overall and per source): the dense groups keep
 * the dense runs only. */
#ifndef FP8PLAN_CHECK_FIDELITY_H
#define FP8PLAN_CHECK_FIDELITY_H

#include "check/compare.h"
#include "check/fidelity_input.h"

/* The sources held out (source_id, or source_id@gpu for one GPU's rows of a source). */
#define FIDELITY_DEFAULT_HOLDOUT                                                                            \
    "mbridge-2511,mbridge-2602,korthikanti-2022,torchtitan-a100,torchtitan-h200,torchao-float8,mtnlg-2022," \
    "llm-foundry@a100-sxm"
/* Rows of FP8-LM Table 5. */
#define FIDELITY_TABLE5_SOURCE "fp8lm-2023"

typedef struct {
    const MeasuredRun *run;
    int planned; /* 0: the planner rejected the input (why says so) */
    char why[200];
    int holdout;
    double meas_tok, pred_tok, tok_err; /* tokens/s per GPU; NAN when not published */
    double meas_gib, pred_gib, mem_err; /* memory of the published kind, GiB; NAN when not published */
    double total_gib;                   /* predicted device total */
    int oom, over_limit; /* the plan's verdict OOM (above capacity at its low end); not FITS or UNCERTAIN */
    int uncertain;       /* UNCERTAIN: it fits only if some of the choices the source leaves open (unknown=) save */
    TimeBreakdown time;  /* the plan's step and its terms (planned rows; zero otherwise): which term carries an error */
} FidelityRow;

enum { FIDELITY_MAX_GROUPS = 32 };

typedef struct {
    char name[MEASURED_ID_MAX];
    int n;
    double mae, bias; /* mean |error|, mean signed error (fractions) */
} FidelityGroup;

typedef struct {
    FidelityGroup all, dev, holdout, table5, mem_traced, mem_all; /* dense models' runs */
    FidelityGroup moe, moe_dev, moe_holdout;                      /* runs of models with experts, apart */
    FidelityGroup moe_source[FIDELITY_MAX_GROUPS];
    int nmoe_sources, moe_false_oom, moe_uncertain;
    FidelityGroup moe_dev_gpu[FIDELITY_MAX_GROUPS]; /* the MoE dev runs per GPU (hold-out rows never in them) */
    int nmoe_dev_gpus;
    FidelityGroup stack[FIDELITY_MAX_GROUPS];
    int nstacks;
    FidelityGroup source[FIDELITY_MAX_GROUPS];
    int nsources;
    int false_oom, over_limit, unplanned, uncertain; /* uncertain rows are neither false OOMs nor over the limit */
    double mem_traced_max;                           /* largest |error| over the allocator-traced rows */
} FidelitySummary;

/* Plan every run. holdout: a caller's list (--holdout), ST_USAGE naming the item and listing the known source
 * ids when the list is empty or an item matches no run; or NULL: FIDELITY_DEFAULT_HOLDOUT, whose items hold
 * out the runs they match (a user's measured.csv need not have the shipped sources). max_mem_frac: the limit of
 * the over-limit count (plan_input's max_mem_frac), 0 = each plan's default. rows has room for n. */
Status fidelity_evaluate(const MeasuredRun *runs, int n, const char *holdout, double max_mem_frac, FidelityRow *rows,
                         FidelitySummary *sum, Err *e);

/* What FP8 buys over BF16 (check/fidelity_pairs.c): two planned runs with a measured throughput that
 * one source measured in the same configuration, one with BF16 GEMMs and one with FP8 GEMMs. Speed-up =
 * FP8 tokens/s over BF16 tokens/s; err = predicted / measured speed-up - 1. */
typedef struct {
    const FidelityRow *bf16, *fp8;
    double meas, pred, err;
} FidelityPair;
enum { FIDELITY_MAX_PAIRS = 256 };

/* The pairs among rows[0..n), BF16 rows in file order, each with its FP8 rows in file order; fills out[0..cap)
 * and returns how many there are (more than cap when out was too small). */
int fidelity_pairs(const FidelityRow *rows, int n, FidelityPair *out, int cap);
/* Speed-up MAE and bias over all pairs, the dev pairs and the held-out ones. */
void fidelity_pairs_summary(const FidelityPair *p, int n, FidelityGroup *all, FidelityGroup *dev,
                            FidelityGroup *holdout);

/* How far to trust a plan's throughput (check/fidelity_band.c): the planner's error on the planned runs
 * with a published throughput like in's — the same stack, GPU generation (SM major) and model kind (dense
 * or with experts) — and on the held-out ones among them. */
typedef struct {
    int n, n_hold;
    double mae, bias, mae_hold; /* fractions */
} FidelityBand;
void fidelity_band(const FidelityRow *rows, int n, const PlanInput *in, FidelityBand *b);
/* One line: "trust: on published runs like this one (...) the planner's throughput is off by ..." or that
 * none is like it. */
void fidelity_band_text(const FidelityBand *b, const PlanInput *in, char *buf, size_t size);
/* The same in under 50 columns, for the TUI: "trust +-5.2 % on 14 runs like it, held out 8.9 %". */
void fidelity_band_short(const FidelityBand *b, const PlanInput *in, char *buf, size_t size);

#endif
