/* reports/seed_report.h — the seed document's tables, computed by the planner.
 *
 *   1a  bytes per parameter of each training state, per recipe (FP8-LM Eq. 7/8
 *       accounting; Megatron's 18 and 6 + 12/d with the distributed optimizer)
 *   1b  payload and scale storage of one R x C weight per scale granularity
 *       (fp8/granularity.h; the seed uses 4096 x 4096)
 *   1c  which precision each tensor of a training step has, per recipe
 *   5   FP8-LM Table 5: published memory, weight-related communication and
 *       throughput next to the plan's prediction and the relative error. */
#ifndef FP8PLAN_REPORTS_SEED_REPORT_H
#define FP8PLAN_REPORTS_SEED_REPORT_H

#include "planner/catalog.h"
#include "reports/table.h"

/* Table 1a. only = NULL for every recipe. params > 0 adds the state bytes of
 * that many parameters. With sharded, the states the recipe's distributed
 * optimizer shards are divided by dp (6 + 12/d for megatron-bf16). */
Table *seed_table1a(const Catalog *c, const Recipe *only, uint64_t params, int sharded, uint32_t dp, Err *e);
/* (NULL with ST_OVERFLOW in e when the bytes of `params` pass 2^64, ST_NOMEM when out of memory) */

/* Table 1b for an R x C tensor (BF16, then FP8 per tensor, per channel, 1x32 E8M0, 1x128, 128x128). */
Table *seed_table1b(uint64_t rows, uint64_t cols, Err *e);

/* Table 1c: one row per recipe and tensor of the step, in the seed's order. */
Table *seed_table1c(const Catalog *c);

/* Tolerances of the Table 5 check (relative). The published figures are single
 * measurements whose allocator slack, NCCL buffers and "GB" unit are not stated
 * (GB and GiB differ by 7.4 %); the acceptance bands are +-15 % for memory and
 * +-12 % for weight-related communication, whose payload is fixed by the
 * parameter count and dtypes and only the ring factor and bucketing vary. */
#define SEED_T5_MEMORY_TOL 0.15
#define SEED_T5_COMM_TOL   0.12

typedef struct {
    int checked; /* figures with a tolerance */
    int outside; /* of which outside it */
} SeedCheck;

/* Table 5 from the published rows (models/fp8lm_table5.csv text): one row per
 * figure with published, predicted, error and verdict; plus the derived check
 * that TE FP8 needs more memory than BF16 at 175B. */
Status seed_table5(const Catalog *c, const char *text, size_t len, const char *fname, Table **out, SeedCheck *chk,
                   Err *e);

#endif
