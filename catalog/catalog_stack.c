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
    X(alias, OPT_NAME, alias, 0, 0, "?")                        \
    X(expert_tp, EXPERT_TP, expert_tp, 0, 0, "?")               \
    X(permute_fusion, YESNO_OR_NO, permute_fusion, 0, 0, "?")

const char *const catalog_stack_columns = &(STACK_COLUMNS(CELL_COL_HEAD))[1]; /* past the first comma */

CELL_COL_ENUM(ATTN, attn_parse, "flash2, flash3, cudnn, te or materialized")
CELL_COL_ENUM(MAIN_GRAD, main_grad_parse, "recipe, fp32 or bf16")
CELL_COL_ENUM(FUSION, fusion_parse, "te, compile, eager or fp8plan")

/* expert_tp: "tp" (the expert TP size defaults to the TP size), "1" or blank (to 1). */
static int expert_tp_parse(const char *s, int *out)
{
    if (!strcmp(s, "tp")) return *out = 1, 0;
    if (!*s || !strcmp(s, "1")) return *out = 0, 0;
    return -1;
}
CELL_COL_ENUM(EXPERT_TP, expert_tp_parse, "tp or 1")

static Status parse_stack(Cur *c, void *row)
{
    StackSpec *rowp = row;
    memset(rowp, 0, sizeof *rowp);
    Status st;
    STACK_COLUMNS(CELL_COL_READ)
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
