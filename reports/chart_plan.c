/* reports/chart_plan.c — the tables plan charts are drawn from (see chart_plan.h). */
#include "reports/chart_plan.h"

#include "reports/plan_report.h"
#include "util/num.h"

MemGroup mem_group_of(MemTermId id)
{
    switch (id) {
    case MT_WEIGHT_GEMM:
    case MT_WEIGHT_OTHER:
    case MT_WEIGHT_EXPERT:
    case MT_ROUTER_BIAS: return MG_WEIGHTS; /* a buffer beside the router's weight */
    case MT_FP8_ROWWISE:
    case MT_FP8_COLWISE:
    case MT_FP8_EXPERT: return MG_FP8_COPIES;
    case MT_MASTER_GEMM:
    case MT_MASTER_OTHER:
    case MT_MASTER_EXPERT: return MG_MASTER;
    case MT_GRAD_GEMM:
    case MT_GRAD_OTHER:
    case MT_GRAD_EXPERT: return MG_GRADS;
    case MT_OPTIM_M_GEMM:
    case MT_OPTIM_M_OTHER:
    case MT_OPTIM_V_GEMM:
    case MT_OPTIM_V_OTHER:
    case MT_OPTIM_M_EXPERT:
    case MT_OPTIM_V_EXPERT: return MG_OPTIM;
    case MT_SCALE_GEMM:
    case MT_SCALE_BLOCK:
    case MT_SCALE_STATE: return MG_SCALES;
    case MT_ACT_LAYER_HP:
    case MT_ACT_LAYER_FP8:
    case MT_ACT_ATTN:
    case MT_ACT_MASK:
    case MT_ACT_OUTPUT:
    case MT_ACT_MOE:
    case MT_TRANSIENT: return MG_ACTIVATIONS;
    case MT_COMM_BUFFER:
    case MT_WORKSPACE: return MG_BUFFERS;
    case MT_CUDA_CONTEXT:
    case MT_FRAGMENTATION:
    case MT_COUNT_: break;
    }
    return MG_OVERHEADS;
}

static const struct {
    const char *col, *label;
} groups[MG_COUNT_] = {
    [MG_WEIGHTS] = {"weight_bytes", "weights"},
    [MG_FP8_COPIES] = {"fp8_weight_copy_bytes", "FP8 weight copies"},
    [MG_MASTER] = {"master_bytes", "master weights"},
    [MG_GRADS] = {"grad_bytes", "gradients"},
    [MG_OPTIM] = {"optim_bytes", "optimizer moments (m, v)"},
    [MG_SCALES] = {"scale_bytes", "scales and amax histories"},
    [MG_ACTIVATIONS] = {"activation_bytes", "activations (saved and transient)"},
    [MG_BUFFERS] = {"buffer_bytes", "buffers (NCCL, GEMM workspace)"},
    [MG_OVERHEADS] = {"other_overhead_bytes", "overheads (CUDA context, fragmentation)"},
};

const char *mem_group_col(MemGroup g) { return g < MG_COUNT_ ? groups[g].col : "?"; }
const char *mem_group_label(MemGroup g) { return g < MG_COUNT_ ? groups[g].label : "?"; }

enum { M_RECIPE = 0, M_GROUP0, M_TOTAL = M_GROUP0 + MG_COUNT_, M_CAPACITY, M_FITS, M_COUNT };

Table *chart_memory_table(const Plan *plans, int n)
{
    TableCol cols[M_COUNT];
    cols[M_RECIPE] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, 0};
    for (int g = 0; g < MG_COUNT_; g++) cols[M_GROUP0 + g] = (TableCol){groups[g].col, NULL, "B", TC_U64, 0, TF_GROUP};
    cols[M_TOTAL] = (TableCol){"total_bytes", NULL, "B", TC_U64, 0, TF_GROUP};
    cols[M_CAPACITY] = (TableCol){"capacity_bytes", NULL, "B", TC_U64, 0, TF_GROUP};
    cols[M_FITS] = (TableCol){"fits", NULL, NULL, TC_U64, 0, 0};
    Table *t = table_new(cols, M_COUNT);
    for (int i = 0; t && i < n; i++) {
        const Plan *p = &plans[i];
        uint64_t sum[MG_COUNT_] = {0};
        for (int m = 0; m < MT_COUNT_; m++)
            if (u64_add(sum[mem_group_of((MemTermId)m)], p->mem[m].bytes, &sum[mem_group_of((MemTermId)m)])) {
                table_free(t);
                return NULL;
            }
        table_row(t);
        table_str(t, M_RECIPE, p->in.recipe->name);
        for (int g = 0; g < MG_COUNT_; g++) table_u64(t, M_GROUP0 + g, sum[g]);
        table_u64(t, M_TOTAL, p->total_bytes);
        table_u64(t, M_CAPACITY, p->capacity_bytes);
        table_u64(t, M_FITS, (uint64_t)p->fits);
    }
    return t;
}

/* Every row of each plan's table (one builder), after a recipe column. */
static Table *keyed(const Plan *plans, int n, Table *(*build)(const Plan *))
{
    Table *first = n > 0 ? build(&plans[0]) : NULL, *t = NULL;
    if (!first) return NULL;
    TableCol cols[64];
    int nc = table_ncols(first);
    if (nc < 63) {
        cols[0] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, 0};
        for (int c = 0; c < nc; c++) cols[1 + c] = *table_col(first, c);
        t = table_new(cols, nc + 1);
    }
    for (int i = 0; t && i < n; i++) {
        Table *part = i ? build(&plans[i]) : first;
        if (!part) {
            table_free(t);
            t = NULL;
            break;
        }
        if (i) table_rule(t);
        table_append_keyed(t, 0, plans[i].in.recipe->name, 1, part);
        if (i) table_free(part);
    }
    table_free(first);
    return t;
}

Table *chart_collectives_table(const Plan *plans, int n) { return keyed(plans, n, plan_collectives_table); }
Table *chart_time_table(const Plan *plans, int n) { return keyed(plans, n, plan_time_table); }
