/* tests/support/fixtures.h — planner inputs the unit and fuzz tests share: the
 * shipped catalog, the seed's headline layout, and a GPU and a BF16 recipe
 * typed in (for tests that must not depend on models/). Linked into every test
 * and fuzz binary with the rest of tests/support/. */
#ifndef FP8PLAN_TESTS_SUPPORT_FIXTURES_H
#define FP8PLAN_TESTS_SUPPORT_FIXTURES_H

#include "catalog/catalog.h"
#include "catalog/measured.h"
#include "planner/plan.h"

/* models/models.csv, gpus.csv, recipes.csv and stacks.csv, read relative to the working
 * directory (tests run from the repository root). A file that cannot be read
 * or parsed prints its message on stderr and exits 1, so no test runs on a
 * half-loaded catalog. The caller frees the result. */
Catalog *fx_catalog(void);

/* models/measured.csv's runs, against c, into runs[0..*n) (MEASURED_MAX_RUNS of room). 0, or -1 with the file's
 * message on stderr. */
int fx_measured(const Catalog *c, MeasuredRun *runs, int *n);

/* The seed's headline layout: gpt-175b on h100-sxm with `recipe`, TP 8 x PP 4
 * x DP 4 with the distributed optimizer, everything else plan_input_defaults().
 * A name the catalog lacks leaves that pointer NULL (plan_build refuses it). */
PlanInput fx_headline(const Catalog *c, const char *recipe);

/* An H100 SXM-like GPU ("g"): SM 9.0, 80 GiB, 3.35 TB/s HBM, 989 / 1979 / 67
 * TFLOP/s BF16 / FP8 / FP32, 450 GB/s within a node of 8, 50 GB/s between. */
GpuSpec fx_gpu(void);

/* BF16 mixed precision: BF16 weights and GEMMs, FP32 master, gradients and
 * Adam m and v, for the linear layers and the other parameters alike; FP32
 * DP gradient reduction, BF16 parameter gathers, TP collectives and expert all-to-alls; SM 8.0.
 * shard_mask: the states (1u << StateId) the distributed optimizer shards. */
Recipe fx_bf16_recipe(const char *name, unsigned shard_mask);

/* fx_bf16_recipe with TE delayed scaling: FP8 row-wise and transposed weight
 * copies (E4M3), E4M3 forward / E5M2 backward GEMMs, amax history 1024 reduced
 * over all ranks, FP8 TP all-gathers and saved inputs; SM 8.9. */
Recipe fx_te_recipe(const char *name, unsigned shard_mask);

/* A tiny GPT worked by hand in the planner tests: 2 layers, hidden 8, 2 heads
 * of 4, FFN 32, vocab 10, seq 4, LayerNorm, GeLU, learned positions, tied
 * embeddings, biases. */
ModelSpec fx_tiny_model(void);

/* plan_input_defaults() with model, GPU and recipe set and the vocabulary
 * unpadded (vocab_pad 1), as the hand-worked planner tests count it. */
PlanInput fx_input(const ModelSpec *m, const GpuSpec *g, const Recipe *r);

#endif
