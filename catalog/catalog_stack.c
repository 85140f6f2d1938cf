/* catalog/catalog_stack.c — models/stacks.csv: one row per training software stack (see stack.h). */
#include <string.h>
#include <strings.h>

#include "catalog/catalog.h"
#include "catalog/catalog_cells.h"

const char *const catalog_stack_columns =
    "name,attention,sequence_parallel,fused_swiglu,main_grad,fp8_weight_cache,kernel_fusion,"
    "launch_us,loss_bytes,tp_overlap,tp_overlap_on,dp_overlap,pp_overlap,cp_overlap,ep_overlap,alloc_reserve,"
    "host_op_us,moe_host_ops,expert_host_ops,calibrated,source,?alias";

/* A cell that may be blank (0: not modelled), else a number in [lo, hi]. */
static Status opt_range(Cur *c, const char *col, double lo, double hi, double *out)
{
    *out = 0;
    return *cell_text(c, col) ? cell_range(c, col, lo, hi, out) : ST_OK;
}

static Status parse_stack(Cur *c, void *row)
{
    StackSpec *s = row;
    memset(s, 0, sizeof *s);
    double us, hus;
    Status st;
    if ((st = cell_textcopy(c, "name", s->name, sizeof s->name, 1)) ||
        (st = cell_yesno(c, "sequence_parallel", &s->sequence_parallel)) ||
        (st = cell_yesno(c, "fused_swiglu", &s->fused_swiglu)) ||
        (st = cell_yesno(c, "fp8_weight_cache", &s->fp8_weight_cache)) ||
        (st = cell_range(c, "launch_us", 0, 1000, &us)) || (st = cell_u32(c, "loss_bytes", 2, 64, &s->loss_bytes)) ||
        (st = cell_range(c, "tp_overlap", 0, 1, &s->overlap_tp)) ||
        (st = cell_range(c, "tp_overlap_on", 0, 1, &s->overlap_tp_on)) ||
        (st = cell_range(c, "dp_overlap", 0, 1, &s->overlap_dp)) ||
        (st = cell_range(c, "pp_overlap", 0, 1, &s->overlap_pp)) ||
        (st = cell_range(c, "cp_overlap", 0, 1, &s->overlap_cp)) ||
        (st = cell_range(c, "ep_overlap", 0, 1, &s->overlap_ep)) ||
        (st = cell_range(c, "alloc_reserve", 0, 1, &s->alloc_reserve)) ||
        (st = opt_range(c, "host_op_us", 0, 1000, &hus)) ||
        (st = opt_range(c, "moe_host_ops", 0, 1e5, &s->moe_host_ops)) ||
        (st = opt_range(c, "expert_host_ops", 0, 1000, &s->expert_host_ops)) ||
        (st = cell_yesno(c, "calibrated", &s->calibrated)) ||
        (st = cell_textcopy(c, "source", s->source, sizeof s->source, 0)) ||
        (*cell_text(c, "alias") && (st = cell_textcopy(c, "alias", s->alias, sizeof s->alias, 1))))
        return st;
    if (attn_parse(cell_text(c, "attention"), &s->attn))
        return cell_bad(c, "attention", "'%s' is not flash2, flash3, cudnn, te or materialized",
                        cell_text(c, "attention"));
    if (main_grad_parse(cell_text(c, "main_grad"), &s->main_grad))
        return cell_bad(c, "main_grad", "'%s' is not recipe, fp32 or bf16", cell_text(c, "main_grad"));
    if (fusion_parse(cell_text(c, "kernel_fusion"), &s->fusion))
        return cell_bad(c, "kernel_fusion", "'%s' is not te, compile, eager or fp8plan", cell_text(c, "kernel_fusion"));
    s->launch_s = us * 1e-6;
    s->host_op_s = hus * 1e-6;
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
