/* catalog/routing.c — `fp8plan run --routing-log` read back (see routing.h). */
#include "catalog/routing.h"

#include <stdlib.h>
#include <string.h>

#include "catalog/csv_table.h"
#include "util/fileio.h"
#include "util/num.h"

enum { C_STEP = 0, C_LAYER, C_RANK, C_EXPERT, C_COPIES, C_COUNT_ };
static const char *const col_names[C_COUNT_] = {"step", "layer", "rank", "expert", "token_copies"};

void routing_log_free(RoutingLog *r)
{
    free(r->rows);
    free(r->layer_rows);
    free(r->layer_ids);
    memset(r, 0, sizeof *r);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The index of v in the sorted distinct values d[0..n). */
static uint32_t index_of(const uint64_t *d, uint32_t n, uint64_t v)
{
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (d[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Sorted distinct values of column c into d (n of them). */
static uint32_t distinct(const uint64_t *v, int rows, int c, uint64_t *d)
{
    for (int r = 0; r < rows; r++) d[r] = v[(size_t)r * C_COUNT_ + c];
    qsort(d, (size_t)rows, sizeof *d, cmp_u64);
    uint32_t n = 0;
    for (int r = 0; r < rows; r++)
        if (!n || d[n - 1] != d[r]) d[n++] = d[r];
    return n;
}

Status routing_log_parse(const char *text, size_t len, const char *fname, RoutingLog *out, Err *e)
{
    memset(out, 0, sizeof *out);
    CsvTable t = {0};
    uint64_t *v = NULL, *d = NULL;
    uint8_t *seen = NULL;
    Status st = csv_table_parse(text, len, fname, &t, e);
    if (!st) st = csv_table_expect(&t, "step,layer,rank,expert,token_copies", e);
    if (st) goto done;
    v = malloc((size_t)t.nrows * C_COUNT_ * sizeof *v);
    d = malloc((size_t)t.nrows * sizeof *d);
    if (!v || !d) {
        st = err_set(e, ST_NOMEM, "out of memory");
        goto done;
    }
    static const uint64_t max[C_COUNT_] = {UINT32_MAX, UINT32_MAX, ROUTING_MAX_RANKS - 1, ROUTING_MAX_EXPERTS - 1,
                                           UINT64_MAX};
    for (int r = 0; !st && r < t.nrows; r++)
        for (int c = 0; !st && c < C_COUNT_; c++) {
            const char *cell = csv_table_cell(&t, r, col_names[c]);
            uint64_t *x = &v[(size_t)r * C_COUNT_ + c];
            Err ne;
            if (num_parse_u64(cell, x, &ne))
                st = err_set(e, ST_DATA, "%s: row %d, column %s: '%s': %s", fname, csv_table_rowno(r), col_names[c],
                             cell, ne.msg);
            else if (*x > max[c])
                st = err_set(e, ST_DATA, "%s: row %d, column %s: '%s' is above %llu", fname, csv_table_rowno(r),
                             col_names[c], cell, (unsigned long long)max[c]);
        }
    if (st) goto done;
    uint64_t *steps = d; /* the distinct steps and layers, then ranks and experts 0 .. max */
    out->steps = distinct(v, t.nrows, C_STEP, steps);
    uint64_t *ls = malloc((size_t)t.nrows * sizeof *ls);
    if (!ls) {
        st = err_set(e, ST_NOMEM, "out of memory");
        goto done;
    }
    out->layers = distinct(v, t.nrows, C_LAYER, ls);
    for (int r = 0; r < t.nrows; r++) {
        uint64_t rk = v[(size_t)r * C_COUNT_ + C_RANK] + 1, x = v[(size_t)r * C_COUNT_ + C_EXPERT] + 1;
        out->ranks = rk > out->ranks ? (uint32_t)rk : out->ranks;
        out->experts = x > out->experts ? (uint32_t)x : out->experts;
    }
    const uint64_t cells = (uint64_t)out->steps * out->layers * out->ranks * out->experts;
    if (out->layers > ROUTING_MAX_LAYERS || cells != (uint64_t)t.nrows) {
        st = err_set(e, ST_DATA,
                     "%s: %d rows for %u steps x %u layers x %u ranks x %u experts (%llu): every step, layer, rank "
                     "and expert must appear once",
                     fname, t.nrows, out->steps, out->layers, out->ranks, out->experts, (unsigned long long)cells);
        free(ls);
        goto done;
    }
    seen = calloc((size_t)cells, 1);
    out->rows = calloc((size_t)out->ranks * out->experts, sizeof *out->rows);
    out->layer_rows = calloc((size_t)out->layers * out->ranks * out->experts, sizeof *out->layer_rows);
    out->layer_ids = calloc(out->layers, sizeof *out->layer_ids);
    if (!seen || !out->rows || !out->layer_rows || !out->layer_ids) st = err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t i = 0; !st && i < out->layers; i++) out->layer_ids[i] = (uint32_t)ls[i]; /* at most UINT32_MAX */
    for (int r = 0; !st && r < t.nrows; r++) {
        const uint64_t *x = &v[(size_t)r * C_COUNT_];
        uint64_t at =
            (((uint64_t)index_of(steps, out->steps, x[C_STEP]) * out->layers + index_of(ls, out->layers, x[C_LAYER])) *
                 out->ranks +
             x[C_RANK]) *
                out->experts +
            x[C_EXPERT];
        uint64_t *sum = &out->rows[x[C_RANK] * out->experts + x[C_EXPERT]];
        uint64_t *lsum =
            &out->layer_rows[((uint64_t)index_of(ls, out->layers, x[C_LAYER]) * out->ranks + x[C_RANK]) * out->experts +
                             x[C_EXPERT]];
        if (seen[at]++)
            st = err_set(e, ST_DATA, "%s: row %d: step %llu, layer %llu, rank %llu, expert %llu appears twice", fname,
                         csv_table_rowno(r), (unsigned long long)x[C_STEP], (unsigned long long)x[C_LAYER],
                         (unsigned long long)x[C_RANK], (unsigned long long)x[C_EXPERT]);
        else if (__builtin_add_overflow(*sum, x[C_COPIES], sum) || __builtin_add_overflow(*lsum, x[C_COPIES], lsum))
            st = err_set(e, ST_DATA, "%s: row %d: the token copies sum past 2^64", fname, csv_table_rowno(r));
    }
    free(ls);
done:
    free(seen);
    free(v);
    free(d);
    csv_table_free(&t);
    if (st) {
        free(out->rows);
        free(out->layer_rows);
        free(out->layer_ids);
        out->rows = out->layer_rows = NULL;
        out->layer_ids = NULL;
    }
    return st;
}

Status routing_log_load(const char *path, RoutingLog *out, Err *e)
{
    char *buf = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    Status st = file_read_text(path, FILE_READ_MAX, &buf, &len, e);
    if (!st) st = routing_log_parse(buf, len, path, out, e);
    free(buf);
    return st;
}
