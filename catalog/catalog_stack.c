/* catalog/catalog_stack.c — models/stacks.csv: one row per training software stack (see stack.h). */
#include <string.h>
#include <strings.h>

#include "catalog/catalog.h"
#include "catalog/catalog_cells.h"

/* stacks.csv's columns, in the file's order, and how each is read into StackSpec: adding a column is its
 * field in planner/stack.h and one row here (the header list and the parse both come from this list).
 * X(column, reader, field, lo, hi, opt): opt "?" marks a column the header may leave out. */
#define STACK_COLUMNS(X)                                        \
    X(name, NAME, name, 0, 0, "")                               \
    X(attention, ATTN, attn, 0, 0, "")                          \
    X(sequence_parallel, YESNO, sequence_parallel, 0, 0, "")    \
    X(fused_swiglu, YESNO, fused_swiglu, 0, 0, "")              \
    X(main_grad, MAIN_GRAD, main_grad, 0, 0, "")                \
    X(fp8_weight_cache, YESNO, fp8_weight_cache, 0, 0, "")      \
    X(kernel_fusion, FUSION, fusion, 0, 0, "")                  \
    X(launch_us, US, launch_s, 0, 1000, "")                     \
    X(loss_bytes, U32, loss_bytes, 2, 64, "")                   \
    X(tp_overlap, RANGE, overlap_tp, 0, 1, "")                  \
    X(tp_overlap_on, RANGE, overlap_tp_on, 0, 1, "")            \
    X(dp_overlap, RANGE, overlap_dp, 0, 1, "")                  \
    X(pp_overlap, RANGE, overlap_pp, 0, 1, "")                  \
    X(cp_overlap, RANGE, overlap_cp, 0, 1, "")                  \
    X(ep_overlap, RANGE, overlap_ep, 0, 1, "")                  \
    X(alloc_reserve, RANGE, alloc_reserve, 0, 1, "")            \
    X(host_op_us, OPT_US, host_op_s, 0, 1000, "")               \
    X(moe_host_ops, OPT_RANGE, moe_host_ops, 0, 1e5, "")        \
    X(expert_host_ops, OPT_RANGE, expert_host_ops, 0, 1000, "") \
    X(calibrated, YESNO, calibrated, 0, 0, "")                  \
    X(source, TEXT, source, 0, 0, "")                           \
    X(alias, OPT_NAME, alias, 0, 0, "?")

#define STACK_HEAD(col, rd, field, lo, hi, opt) "," opt #col
const char *const catalog_stack_columns = STACK_COLUMNS(STACK_HEAD) + 1; /* past the first comma */

/* The readers: the cell of column col into *field (size bytes when text), in [lo, hi] when a number. */
static Status rd_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    return cell_textcopy(c, col, f, size, 1);
}
static Status rd_OPT_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    return *cell_text(c, col) ? rd_NAME(c, col, f, size, lo, hi) : ST_OK; /* blank: none */
}
static Status rd_TEXT(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    return cell_textcopy(c, col, f, size, 0);
}
static Status rd_YESNO(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return cell_yesno(c, col, f);
}
static Status rd_U32(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size;
    return cell_u32(c, col, (uint32_t)lo, (uint32_t)hi, f);
}
static Status rd_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size;
    return cell_range(c, col, lo, hi, f);
}
/* A cell that may be blank (0: not modelled), else a number in [lo, hi]. */
static Status rd_OPT_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    *(double *)f = 0;
    return *cell_text(c, col) ? rd_RANGE(c, col, f, size, lo, hi) : ST_OK;
}
/* Microseconds in [lo, hi] into seconds. */
static Status rd_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    double us;
    Status st = rd_RANGE(c, col, &us, size, lo, hi);
    *(double *)f = us * 1e-6;
    return st;
}
static Status rd_OPT_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    *(double *)f = 0;
    return *cell_text(c, col) ? rd_US(c, col, f, size, lo, hi) : ST_OK;
}
static Status rd_ATTN(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    if (attn_parse(cell_text(c, col), f))
        return cell_bad(c, col, "'%s' is not flash2, flash3, cudnn, te or materialized", cell_text(c, col));
    return ST_OK;
}
static Status rd_MAIN_GRAD(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    if (main_grad_parse(cell_text(c, col), f))
        return cell_bad(c, col, "'%s' is not recipe, fp32 or bf16", cell_text(c, col));
    return ST_OK;
}
static Status rd_FUSION(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    if (fusion_parse(cell_text(c, col), f))
        return cell_bad(c, col, "'%s' is not te, compile, eager or fp8plan", cell_text(c, col));
    return ST_OK;
}

#define STACK_READ(col, rd, field, lo, hi, opt) \
    if ((st = rd_##rd(c, #col, &s->field, sizeof s->field, lo, hi))) return st;

static Status parse_stack(Cur *c, void *row)
{
    StackSpec *s = row;
    memset(s, 0, sizeof *s);
    Status st;
    STACK_COLUMNS(STACK_READ)
    return ST_OK;
}

Status catalog_parse_stacks(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    Status st = cell_parse_all(text, len, fname, catalog_stack_columns, "name", parse_stack, NULL, c->stacks,
                               sizeof *c->stacks, CATALOG_MAX_STACKS, &c->nstacks, e);
    /* an alias names one row: never another row's name or alias */
    for (int i = 0; !st && i < c->nstacks; i++)
        for (int j = 0; !st && *c->stacks[i].alias && j < c->nstacks; j++)
            if (!strcasecmp(c->stacks[i].alias, c->stacks[j].name) ||
                (j != i && !strcasecmp(c->stacks[i].alias, c->stacks[j].alias)))
                st = err_set(e, ST_DATA, "%s: row %d (%s), column alias: '%s' is already the %s of row %d (%s)", fname,
                             i + 2, c->stacks[i].name, c->stacks[i].alias,
                             strcasecmp(c->stacks[i].alias, c->stacks[j].name) ? "alias" : "name", j + 2,
                             c->stacks[j].name);
    return st;
}
