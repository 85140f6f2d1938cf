/* reports/plan_report_compare.c — the quantities of a plan by name (plan_qty) and the side-by-side
 * table of `fp8plan compare` (see plan_report.h). */
#include "reports/plan_report.h"

#include <math.h>

/* The two terms of a state (linear layers, other parameters) and the experts' (0 for dense models); the weights
 * with a sigmoid router's FP32 bias buffer beside them (MT_ROUTER_BIAS, 0 for other models), as the charts group
 * it. */
uint64_t plan_state_sum(const Plan *p, MemTermId a, MemTermId b)
{
    MemTermId x = a == MT_WEIGHT_GEMM    ? MT_WEIGHT_EXPERT
                  : a == MT_FP8_ROWWISE  ? MT_FP8_EXPERT
                  : a == MT_MASTER_GEMM  ? MT_MASTER_EXPERT
                  : a == MT_GRAD_GEMM    ? MT_GRAD_EXPERT
                  : a == MT_OPTIM_M_GEMM ? MT_OPTIM_M_EXPERT
                                         : MT_OPTIM_V_EXPERT;
    return p->mem[a].bytes + p->mem[b].bytes + p->mem[x].bytes +
           (a == MT_WEIGHT_GEMM ? p->mem[MT_ROUTER_BIAS].bytes : 0);
}

/* ---- compare ------------------------------------------------------------------------------------------ */

double plan_qty(const Plan *p, PlanQty q)
{
    switch (q) {
    case PQ_WEIGHTS: return (double)plan_state_sum(p, MT_WEIGHT_GEMM, MT_WEIGHT_OTHER);
    case PQ_FP8_COPIES: return (double)plan_state_sum(p, MT_FP8_ROWWISE, MT_FP8_COLWISE);
    case PQ_MASTER: return (double)plan_state_sum(p, MT_MASTER_GEMM, MT_MASTER_OTHER);
    case PQ_GRADS: return (double)plan_state_sum(p, MT_GRAD_GEMM, MT_GRAD_OTHER);
    case PQ_ADAM_M: return (double)plan_state_sum(p, MT_OPTIM_M_GEMM, MT_OPTIM_M_OTHER);
    case PQ_ADAM_V: return (double)plan_state_sum(p, MT_OPTIM_V_GEMM, MT_OPTIM_V_OTHER);
    case PQ_SCALES: return (double)p->cat_bytes[MC_SCALE];
    case PQ_ACTIVATIONS: return (double)p->cat_bytes[MC_ACTIVATION];
    case PQ_OVERHEADS: return (double)p->cat_bytes[MC_OVERHEAD];
    case PQ_TOTAL: return (double)p->total_bytes;
    case PQ_FITS: return (double)p->fits;
    case PQ_STATE_BPP: return plan_state_bytes_per_param(&p->in, NULL);
    case PQ_WEIGHT_COMM: return (double)p->weight_comm_bytes;
    case PQ_DP_COMM: return (double)p->dp_comm_bytes;
    case PQ_TP_COMM: return (double)p->tp_comm_bytes;
    case PQ_PP_COMM: return (double)p->pp_comm_bytes;
    case PQ_CP_COMM: return (double)p->cp_comm_bytes;
    case PQ_STEP_S: return p->time.step_s;
    case PQ_SAMPLES_S: return p->samples_per_s;
    case PQ_KTOKENS_S: return p->tokens_per_s / 1000.0;
    case PQ_TFLOPS: return p->tflops_per_gpu;
    case PQ_MFU_BF16: return p->mfu_bf16_pct;
    case PQ_MFU_FP8: return p->mfu_fp8_pct;
    case PQ_EP_COMM: return (double)p->ep_comm_bytes;
    default: return NAN;
    }
}

typedef enum { Q_BYTES, Q_OTHER, Q_FLAG } QKind;

/* The compare table's rows: every quantity but the bytes per parameter (Table 1a's). */
static const struct {
    PlanQty q;
    const char *name, *unit;
    QKind kind;
} quantities[] = {
    {PQ_WEIGHTS, "weights", "GB", Q_BYTES},
    {PQ_FP8_COPIES, "fp8_weight_copies", "GB", Q_BYTES},
    {PQ_MASTER, "master", "GB", Q_BYTES},
    {PQ_GRADS, "gradients", "GB", Q_BYTES},
    {PQ_ADAM_M, "adam_m", "GB", Q_BYTES},
    {PQ_ADAM_V, "adam_v", "GB", Q_BYTES},
    {PQ_SCALES, "scales", "GB", Q_BYTES},
    {PQ_ACTIVATIONS, "activations", "GB", Q_BYTES},
    {PQ_OVERHEADS, "overheads", "GB", Q_BYTES},
    {PQ_TOTAL, "total_memory", "GB", Q_BYTES},
    {PQ_FITS, "fits", "1=yes", Q_FLAG},
    {PQ_WEIGHT_COMM, "weight_comm", "GB", Q_BYTES},
    {PQ_DP_COMM, "dp_comm", "GB", Q_BYTES},
    {PQ_TP_COMM, "tp_comm", "GB", Q_BYTES},
    {PQ_PP_COMM, "pp_comm", "GB", Q_BYTES},
    {PQ_CP_COMM, "cp_comm", "GB", Q_BYTES},
    {PQ_EP_COMM, "ep_comm", "GB", Q_BYTES}, /* listed for models with experts */
    {PQ_STEP_S, "step_time", "s", Q_OTHER},
    {PQ_SAMPLES_S, "samples_per_s", "1/s", Q_OTHER},
    {PQ_KTOKENS_S, "tokens_per_s", "1000 tok/s", Q_OTHER},
    {PQ_TFLOPS, "tflops_per_gpu", "TFLOP/s", Q_OTHER},
    {PQ_MFU_BF16, "mfu_bf16", "%", Q_OTHER},
    {PQ_MFU_FP8, "mfu_fp8", "%", Q_OTHER},
};
enum { NQ = sizeof quantities / sizeof *quantities };

Table *plan_compare_table(const Plan *plans, int n)
{
    if (n < 1 || n > 16) return NULL;
    TableCol cols[2 + 2 * 16];
    int nc = 0;
    cols[nc++] = (TableCol){"quantity", NULL, NULL, TC_STR, 0, 0};
    cols[nc++] = (TableCol){"unit", NULL, NULL, TC_STR, 0, 0};
    for (int i = 0; i < n; i++) {
        cols[nc++] = (TableCol){plans[i].in.recipe->name, NULL, NULL, TC_F64, 3, 0};
        if (i) cols[nc++] = (TableCol){"change", "vs first", "%", TC_F64, 1, 0};
    }
    Table *t = table_new(cols, nc);
    if (!t) return NULL;
    for (int q = 0; q < NQ; q++) {
        if (quantities[q].q == PQ_EP_COMM && !plan_coll_applies(&plans[0], CO_EP_DISPATCH_FWD)) continue;
        if (quantities[q].q == PQ_WEIGHT_COMM || quantities[q].q == PQ_STEP_S) table_rule(t);
        table_row(t);
        table_str(t, 0, quantities[q].name);
        table_str(t, 1, quantities[q].unit);
        double base = plan_qty(&plans[0], quantities[q].q);
        for (int i = 0, c = 2; i < n; i++) {
            double v = plan_qty(&plans[i], quantities[q].q), shown = quantities[q].kind == Q_BYTES ? v / 1e9 : v;
            table_f64(t, c++, shown);
            if (i) {
                if (base != 0 && quantities[q].kind != Q_FLAG) table_f64(t, c, 100.0 * (v - base) / base);
                c++;
            }
        }
    }
    return t;
}
