/* reports/html_seed.h — `report seed --format html`: the seed's tables as
 * charts, each above the table it is drawn from (the rows report seed writes
 * as CSV):
 *   t5-memory, t5-comm  FP8-LM Table 5: published against predicted, per model
 *                       and column, with the accepted band (published +-
 *                       tolerance) over the predicted bar;
 *   t1a                 bytes per parameter of every state, per recipe (Table 1a);
 *   scales              Table 1b for 4096x4096;
 *   scaling-*           the delayed-scaling trace of the seed's worked example (the
 *                       spike to 640 with the history and format given);
 * then Table 1c (precision of every tensor, per recipe) as a table. */
#ifndef FP8PLAN_REPORTS_HTML_SEED_H
#define FP8PLAN_REPORTS_HTML_SEED_H

#include <stdio.h>

#include "reports/html_page.h"

/* Table 1a (seed_table1a) as stacked bars of bytes per parameter, one per recipe. */
void html_t1a_chart(HtmlDoc *d, const Table *t1a);

typedef struct {
    const Table *t5, *t1a, *t1b, *t1c, *trace;
    int checked, outside; /* Table 5 figures checked, and outside their tolerance */
} SeedPage;

Status html_seed_page(FILE *f, const SeedPage *pg, Err *e);

#endif
