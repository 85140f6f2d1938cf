/* catalog/fp8lm_table5.c — models/fp8lm_table5.csv into T5Row rows (see fp8lm_table5.h). */
#include "catalog/fp8lm_table5.h"

#include <math.h>
#include <string.h>

#include "catalog/catalog_cells.h"
#include "util/num.h"

const char *const t5_columns =
    "model,tp,pp,dp,mbs,seq,column,recipe,memory_gb,weight_comm_gb,samples_per_s,mfu_pct,checked,source";

/* A published number, or NaN for an empty cell. */
static Status t5_num(Cur *c, const char *col, double *out)
{
    const char *s = cell_text(c, col);
    if (!*s) return *out = NAN, ST_OK;
    if (num_parse_double(s, NUM_FINITE_ONLY, out, NULL) || *out <= 0)
        return cell_bad(c, col, "'%s' is not a positive number", s);
    return ST_OK;
}

static Status t5_u32(Cur *c, const char *col, uint32_t *out)
{
    const char *s = cell_text(c, col);
    uint64_t v;
    if (num_parse_u64(s, &v, NULL) || v == 0 || v > UINT32_MAX)
        return cell_bad(c, col, "'%s' is not a positive whole number", s);
    *out = (uint32_t)v;
    return ST_OK;
}

static Status parse_t5(Cur *c, void *row)
{
    const Catalog *cat = c->ctx;
    T5Row *t = row;
    const char *mname = cell_text(c, "model"), *rname = cell_text(c, "recipe"), *col = cell_text(c, "column");
    t->model = catalog_model(cat, mname);
    t->recipe = catalog_recipe(cat, rname);
    if (!t->model || !t->recipe)
        return err_set(c->e, ST_DATA, "%s: row %d: unknown %s '%s'", c->t->fname, csv_table_rowno(c->r),
                       t->model ? "recipe" : "model", t->model ? rname : mname);
    memcpy(t->model_name, mname, strlen(mname) + 1); /* a catalog name: shorter than SPEC_NAME_MAX */
    memcpy(t->recipe_name, rname, strlen(rname) + 1);
    if (strlen(col) >= sizeof t->column)
        return cell_bad(c, "column", "'%.40s...' is longer than %zu characters", col, sizeof t->column - 1);
    memcpy(t->column, col, strlen(col) + 1);
    t->rowno = csv_table_rowno(c->r);
    Status st;
    if ((st = t5_u32(c, "tp", &t->tp)) || (st = t5_u32(c, "pp", &t->pp)) || (st = t5_u32(c, "dp", &t->dp)) ||
        (st = t5_u32(c, "mbs", &t->mbs)) || (st = t5_u32(c, "seq", &t->seq)) ||
        (st = t5_num(c, "memory_gb", &t->memory_gb)) || (st = t5_num(c, "weight_comm_gb", &t->weight_comm_gb)) ||
        (st = t5_num(c, "samples_per_s", &t->samples_per_s)) || (st = t5_num(c, "mfu_pct", &t->mfu_pct)))
        return st;
    const char *ck = cell_text(c, "checked");
    if (strcmp(ck, "yes") && strcmp(ck, "no")) return cell_bad(c, "checked", "'%s' is not yes or no", ck);
    t->checked = !strcmp(ck, "yes");
    return ST_OK;
}

Status t5_parse(const Catalog *c, const char *text, size_t len, const char *fname, T5Row *rows, int *n, Err *e)
{
    return cell_parse_all(text, len, fname, t5_columns, NULL, parse_t5, c, rows, sizeof *rows, T5_MAX_ROWS, n, e);
}
