/* catalog/fp8lm_table5.c — models/fp8lm_table5.csv into T5Row rows (see fp8lm_table5.h). */
#include "catalog/fp8lm_table5.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog_cells.h"
#include "util/num.h"

/* A published number, or NaN for an empty cell. */
static Status cell_col_PUB_NUM(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    const char *s = cell_text(c, col);
    double *out = f;
    if (!*s) return *out = NAN, ST_OK;
    if (num_parse_double(s, NUM_FINITE_ONLY, out, NULL) || *out <= 0)
        return cell_bad(c, col, "'%s' is not a positive number", s);
    return ST_OK;
}

static Status cell_col_POS_U32(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    const char *s = cell_text(c, col);
    uint64_t v;
    if (num_parse_u64(s, &v, NULL) || v == 0 || v > UINT32_MAX)
        return cell_bad(c, col, "'%s' is not a positive whole number", s);
    *(uint32_t *)f = (uint32_t)v;
    return ST_OK;
}

/* Text as written (may be empty), refused past size - 1 bytes. */
static Status cell_col_ANY_TEXT(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    const char *s = cell_text(c, col);
    size_t n = strlen(s);
    if (n >= size) return cell_bad(c, col, "'%.40s...' is longer than %zu characters", s, size - 1);
    memcpy(f, s, n + 1);
    return ST_OK;
}

/* A catalog name, judged after the list (an unknown one is named whole): kept only when it fits. */
static Status cell_col_CAT_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    snprintf(f, size, "%s", strlen(cell_text(c, col)) < size ? cell_text(c, col) : "");
    return ST_OK;
}

static Status cell_col_CHECKED(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    const char *ck = cell_text(c, col);
    if (strcmp(ck, "yes") && strcmp(ck, "no")) return cell_bad(c, col, "'%s' is not yes or no", ck);
    *(int *)f = !strcmp(ck, "yes");
    return ST_OK;
}

/* fp8lm_table5.csv's columns, in the file's order (catalog_cells.h: X(column, reader, field, lo, hi, opt)). */
#define T5_COLUMNS(X)                                    \
    X(model, CAT_NAME, model_name, 0, 0, "")             \
    X(tp, POS_U32, tp, 0, 0, "")                         \
    X(pp, POS_U32, pp, 0, 0, "")                         \
    X(dp, POS_U32, dp, 0, 0, "")                         \
    X(mbs, POS_U32, mbs, 0, 0, "")                       \
    X(seq, POS_U32, seq, 0, 0, "")                       \
    X(column, ANY_TEXT, column, 0, 0, "")                \
    X(recipe, CAT_NAME, recipe_name, 0, 0, "")           \
    X(memory_gb, PUB_NUM, memory_gb, 0, 0, "")           \
    X(weight_comm_gb, PUB_NUM, weight_comm_gb, 0, 0, "") \
    X(samples_per_s, PUB_NUM, samples_per_s, 0, 0, "")   \
    X(mfu_pct, PUB_NUM, mfu_pct, 0, 0, "")               \
    X(checked, CHECKED, checked, 0, 0, "")               \
    X(source, ANY_TEXT, source, 0, 0, "")

const char *const t5_columns = T5_COLUMNS(CELL_COL_HEAD) + 1; /* past the first comma */

static Status parse_t5(Cur *c, void *row)
{
    const Catalog *cat = c->ctx;
    T5Row *rowp = row;
    Status st;
    T5_COLUMNS(CELL_COL_READ)
    const char *mname = cell_text(c, "model"), *rname = cell_text(c, "recipe");
    rowp->model = catalog_model(cat, mname);
    rowp->recipe = catalog_recipe(cat, rname);
    if (!rowp->model || !rowp->recipe)
        return err_set(c->e, ST_DATA, "%s: row %d: unknown %s '%s'", c->t->fname, csv_table_rowno(c->r),
                       rowp->model ? "recipe" : "model", rowp->model ? rname : mname);
    rowp->rowno = csv_table_rowno(c->r);
    return ST_OK;
}

Status t5_parse(const Catalog *c, const char *text, size_t len, const char *fname, T5Row *rows, int *n, Err *e)
{
    return cell_parse_all(text, len, fname, t5_columns, NULL, parse_t5, c, rows, sizeof *rows, T5_MAX_ROWS, n, e);
}
