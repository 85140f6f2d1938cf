/* reports/chart_plan.h — the tables the plan charts are drawn from (`plan`,
 * `compare` and `report html` with --format html):
 *   memory       one row per plan: per-GPU bytes in the seed's accounting groups
 *                (weights, FP8 copies, master, gradients, optimizer moments,
 *                scales/amax, activations, buffers, overheads), total, capacity;
 *   collectives  every row of `plan --view collectives` for each plan, after a
 *                recipe column (unused collectives have link "-");
 *   time         every row of `plan --view time` for each plan, after a recipe
 *                column (the last row of each is the step total).
 * The collectives and time rows are the very rows those CSV views write, so
 * the charts show their numbers exactly; the memory groups are sums of the
 * terms `plan --view terms` lists (tests/cli/html_charts.sh checks both). */
#ifndef FP8PLAN_REPORTS_CHART_PLAN_H
#define FP8PLAN_REPORTS_CHART_PLAN_H

#include "planner/plan.h"
#include "reports/table.h"

typedef enum {
    MG_WEIGHTS = 0, /* working weights (linear layers and the rest) */
    MG_FP8_COPIES,  /* cached FP8 weight copies, row-wise and transposed */
    MG_MASTER,
    MG_GRADS,
    MG_OPTIM,       /* Adam m and v */
    MG_SCALES,      /* scales, scale_inv, amax histories, block scales */
    MG_ACTIVATIONS, /* saved for backward, plus the transient working set */
    MG_BUFFERS,     /* NCCL buffers and the GEMM workspace */
    MG_OVERHEADS,   /* CUDA context and fragmentation */
    MG_COUNT_
} MemGroup;

MemGroup mem_group_of(MemTermId id);
const char *mem_group_col(MemGroup g);   /* the memory table's column: "weight_bytes" */
const char *mem_group_label(MemGroup g); /* "weights" */

/* NULL when out of memory (or a byte sum past 2^64, which plan_build already rules out). */
Table *chart_memory_table(const Plan *plans, int n);
Table *chart_collectives_table(const Plan *plans, int n);
Table *chart_time_table(const Plan *plans, int n);

#endif
