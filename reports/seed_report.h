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

#include "fp8/granularity.h"
#include "catalog/catalog.h"
#include "check/table5.h"
#include "reports/table.h"

/* Table 1a. only = NULL for every recipe. params > 0 adds the state bytes of
 * that many parameters. With sharded, the states the recipe's distributed
 * optimizer shards are divided by dp (6 + 12/d for megatron-bf16). */
Table *seed_table1a(const Catalog *c, const Recipe *only, uint64_t params, int sharded, uint32_t dp, Err *e);
/* (NULL with ST_OVERFLOW in e when the bytes of `params` pass 2^64, ST_NOMEM when out of memory) */

/* Table 1b: one R x C tensor (R rows = output channels, C columns = the GEMM's
 * K) in BF16, then in FP8 (1 B per value) with each scale granularity of
 * fp8/granularity.h, scales counted as stored (no GEMM padding). The one
 * builder behind `fp8plan scales`, `fp8plan report seed` and the TUI's Scales
 * screen and export. */
typedef struct {
    int is_bf16;       /* the BF16 reference row: 2 B per value, no scales (gran unused) */
    Granularity gran;  /* FP8 rows: the scale granularity */
    Dtype scale_dtype; /* DT_NONE for BF16 */
    uint64_t scale_count, payload_bytes, scale_bytes, total_bytes;
    double payload_of_bf16_pct;  /* payload / BF16's bytes (100 for BF16, 50 for FP8) */
    double scale_of_payload_pct; /* scale bytes / payload */
    double saving_vs_bf16_pct;   /* 1 - total / BF16's bytes (negative when scales outweigh the saving) */
} SeedScaleRow;

/* Row 0 is BF16; row 1 + g is FP8 with Granularity g. */
enum { SEED_T1B_ROWS = 1 + GRAN_COUNT_ };

/* The rows for an R x C tensor. ST_OVERFLOW ("RxC: BF16 bytes pass 2^64", or
 * the total, or the scale count) past 2^64; ST_USAGE for a zero dimension. */
Status seed_table1b_rows(uint64_t rows, uint64_t cols, SeedScaleRow out[SEED_T1B_ROWS], Err *e);

/* The same rows as a table with a text title naming the shape; columns format
 * (bf16, fp8), granularity, scale_dtype (none for BF16), scale_count,
 * payload_bytes, scale_bytes, total_bytes, payload_of_bf16_pct,
 * scale_of_payload_pct, saving_vs_bf16_pct. NULL with e set (seed_table1b_rows'
 * errors, or ST_NOMEM). */
Table *seed_table1b(uint64_t rows, uint64_t cols, Err *e);

/* Table 1c: one row per recipe and tensor of the step, in the seed's order. */
Table *seed_table1c(const Catalog *c);

/* Table 5 from the published rows (models/fp8lm_table5.csv text): one row per
 * figure of check_table5 (check/table5.h) with published, predicted, error and
 * verdict; plus the derived check that TE FP8 needs more memory than BF16 at
 * 175B. */
Status seed_table5(const Catalog *c, const char *text, size_t len, const char *fname, Table **out, SeedCheck *chk,
                   Err *e);

#endif
