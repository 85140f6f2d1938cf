/* catalog/fp8lm_table5.h — FP8-LM Table 5 as published (models/fp8lm_table5.csv): one row per run of the
 * paper's table (model, layout, the column it is published in, the recipe the plan uses for it) with the
 * figures it gives. The one reader of the file: `report seed` checks the plans against it, the TUI's
 * Compare screen shows it and applies its layouts.
 *
 * The header must name exactly t5_columns; model and recipe must be in the catalog; tp, pp, dp, mbs and seq
 * are positive whole numbers, the figures positive numbers or blank (not published), checked yes or no.
 * Errors name the file, the row and the column and quote the value (ST_DATA). */
#ifndef FP8PLAN_CATALOG_FP8LM_TABLE5_H
#define FP8PLAN_CATALOG_FP8LM_TABLE5_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "util/status.h"

enum { T5_MAX_ROWS = 256, T5_COLUMN_MAX = 64 };

typedef struct {
    const ModelSpec *model;
    const Recipe *recipe;
    char model_name[SPEC_NAME_MAX], recipe_name[SPEC_NAME_MAX]; /* as the file spells them */
    char column[T5_COLUMN_MAX];                                 /* the paper's column: bf16, te, fp8-lm, ... */
    uint32_t tp, pp, dp, mbs, seq;
    double memory_gb, weight_comm_gb, samples_per_s, mfu_pct; /* NAN when blank (not published) */
    int checked;                                              /* the figures have a tolerance */
    int rowno;                                                /* the file row (the header is row 1) */
} T5Row;

extern const char *const t5_columns;

/* Parse the text into rows (room for T5_MAX_ROWS); *n = rows parsed (0 on error). */
Status t5_parse(const Catalog *c, const char *text, size_t len, const char *fname, T5Row *rows, int *n, Err *e);

#endif
