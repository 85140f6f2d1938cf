/* catalog/catalog_links.c — links.csv: a host profile's collectives, one fit per operation, reduction path
 * and payload range (fp8plan calibrate under mpirun writes it beside gpus.csv; planner/spec.h LinkFit).
 * Optional: a catalog without it (every shipped GPU, a profile of one rank or from an older calibrate)
 * times every collective as before. A row names its format version; a version this build does not read is
 * refused, naming the row, so an old binary never misreads a newer profile. Version 1: a fit per call's payload
 * range; version 2 (this build's calibrate, all-to-all only): a fit per message to one peer, paths eager and
 * rendezvous, from / to a message's bytes (planner/spec.h). Both are read; a file may hold both. */
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog/catalog_cells.h"
#include "util/num.h"

enum { LINKS_MAX_ROWS = 1024 };

typedef struct {
    uint32_t version;
    char device[SPEC_NAME_MAX];
    LinkFit f;
    char source[256];
} LinkRow;

static Status cell_col_VERSION(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    const char *v = cell_text(c, col);
    if (strcmp(v, "1") && strcmp(v, "2"))
        return cell_bad(c, col,
                        "'%s' is not a links.csv format this fp8plan reads (1, 2): measure the profile again with "
                        "fp8plan calibrate",
                        v);
    *(uint32_t *)f = (uint32_t)(v[0] - '0');
    return ST_OK;
}

static Status cell_col_OP(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    for (int o = 0; o < OP_COUNT_; o++)
        if (!strcmp(cell_text(c, col), comm_op_name((CommOp)o))) {
            *(uint8_t *)f = (uint8_t)o;
            return ST_OK;
        }
    return cell_bad(c, col, "'%s' is not all-reduce, all-gather, reduce-scatter, send/recv, all-to-all or broadcast",
                    cell_text(c, col));
}

static Status cell_col_PATH(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    for (int p = 0; p < LINK_PATH_COUNT_; p++)
        if (!strcmp(cell_text(c, col), link_path_name((LinkPath)p))) {
            *(uint8_t *)f = (uint8_t)p;
            return ST_OK;
        }
    return cell_bad(c, col, "'%s' is not bytes, fp32, bf16, fp8, eager, rendezvous, fp32 grad or fp32 emb",
                    cell_text(c, col));
}

/* Bytes: a whole number >= 0; OPT_BYTES: blank reads 0 (no upper end). */
static Status cell_col_BYTES(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return num_parse_u64(cell_text(c, col), f, NULL)
               ? cell_bad(c, col, "'%s' is not a whole number of bytes", cell_text(c, col))
               : ST_OK;
}
static Status cell_col_OPT_BYTES(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    *(uint64_t *)f = 0;
    return *cell_text(c, col) ? cell_col_BYTES(c, col, f, size, lo, hi) : ST_OK;
}

/* GB/s >= 0 into bytes/s (0: latency only). */
static Status cell_col_BUS_GBPS(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    double v = 0;
    Status st = cell_col_RANGE(c, col, &v, size, lo, hi);
    *(double *)f = v * 1e9;
    return st;
}

#define LINK_COLUMNS(X)                     \
    X(version, VERSION, version, 0, 0, "")  \
    X(device, NAME, device, 0, 0, "")       \
    X(op, OP, f.op, 0, 0, "")               \
    X(path, PATH, f.path, 0, 0, "")         \
    X(from_bytes, BYTES, f.from, 0, 0, "")  \
    X(to_bytes, OPT_BYTES, f.to, 0, 0, "")  \
    X(latency_us, US, f.lat, 0, 1e6, "")    \
    X(bus_gbps, BUS_GBPS, f.bw, 0, 1e6, "") \
    X(source, TEXT, source, 0, 0, "")

const char *const catalog_link_columns = &(LINK_COLUMNS(CELL_COL_HEAD))[1]; /* past the first comma */

static Status parse_link(Cur *c, void *row)
{
    LinkRow *rowp = row;
    memset(rowp, 0, sizeof *rowp);
    Status st;
    LINK_COLUMNS(CELL_COL_READ)
    const LinkFit *f = &rowp->f;
    if (f->to && f->to <= f->from)
        return cell_bad(c, "to_bytes", "'%s' must be above from_bytes %s (blank: no upper end)",
                        cell_text(c, "to_bytes"), cell_text(c, "from_bytes"));
    const int per_msg = f->path == LINK_PATH_EAGER || f->path == LINK_PATH_RENDEZVOUS;
    if (per_msg != (rowp->version == 2))
        return cell_bad(c, "path",
                        "'%s' in a version %u row: version 2 rows are an all-to-all's per-message fits (eager, "
                        "rendezvous), version 1 rows the others",
                        cell_text(c, "path"), rowp->version);
    if (per_msg && f->op != OP_ALL_TO_ALL)
        return cell_bad(c, "path", "'%s': per-message fits are an all-to-all's", cell_text(c, "path"));
    if ((f->path == LINK_PATH_FP32_GRAD || f->path == LINK_PATH_FP32_EMB) && f->op != OP_ALL_REDUCE)
        return cell_bad(c, "path", "'%s': a gradient's fit is an all-reduce's", cell_text(c, "path"));
    if (!per_msg && (f->op == OP_ALL_REDUCE || f->op == OP_REDUCE_SCATTER) != (f->path != LINK_PATH_BYTES))
        return cell_bad(c, "path",
                        "'%s': a reduction (all-reduce, reduce-scatter) names fp32, bf16 or fp8, the other "
                        "operations bytes",
                        cell_text(c, "path"));
    const Catalog *cat = c->ctx;
    const GpuSpec *g = catalog_gpu(cat, rowp->device);
    if (!g) return cell_bad(c, "device", "'%s' is not a row of gpus.csv", rowp->device);
    if (!g->host) return cell_bad(c, "device", "'%s' is a GPU's row: links.csv holds host profiles' fits", g->name);
    return ST_OK;
}

/* Two ranges of the same device, op and path that share a payload. */
static int overlap(const LinkFit *a, const LinkFit *b)
{
    if (a->op != b->op || a->path != b->path) return 0;
    return (!a->to || b->from < a->to) && (!b->to || a->from < b->to);
}

Status catalog_parse_links(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    LinkRow *rows = calloc(LINKS_MAX_ROWS, sizeof *rows);
    if (!rows) return err_set(e, ST_NOMEM, "out of memory for %s", fname);
    int n = 0;
    Status st = cell_parse_all(text, len, fname, catalog_link_columns, NULL, parse_link, c, rows, sizeof *rows,
                               LINKS_MAX_ROWS, &n, e);
    for (int i = 0; i < c->ngpus; i++) c->gpus[i].nlink_fit = 0;
    for (int r = 0; !st && r < n; r++) {
        GpuSpec *g = (GpuSpec *)catalog_gpu(c, rows[r].device);
        for (int j = 0; !st && j < g->nlink_fit; j++)
            if (overlap(&g->link_fit[j], &rows[r].f))
                st = err_set(e, ST_DATA,
                             "%s: row %d, column from_bytes: %s %s of %s: its range overlaps an earlier "
                             "row's",
                             fname, r + 2, comm_op_name((CommOp)rows[r].f.op), link_path_name((LinkPath)rows[r].f.path),
                             g->name);
        if (!st && g->nlink_fit == GPU_LINK_FITS_MAX)
            st = err_set(e, ST_DATA, "%s: row %d: %s has more than %d fits", fname, r + 2, g->name, GPU_LINK_FITS_MAX);
        if (!st) g->link_fit[g->nlink_fit++] = rows[r].f;
    }
    if (st)
        for (int i = 0; i < c->ngpus; i++) c->gpus[i].nlink_fit = 0;
    free(rows);
    return st;
}
