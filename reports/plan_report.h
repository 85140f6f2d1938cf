/* reports/plan_report.h — a Plan rendered as tables: the full text report of
 * `fp8plan plan`, the one-row-per-plan summary schema shared by plan, compare
 * and sweep CSV/JSON output, and the per-term, per-collective and time tables.
 *
 * Summary columns (CSV header, units in the names; bytes per GPU, communication
 * = bytes each GPU sends per step; see plan_summary_columns()):
 *   model,gpu,recipe,tp,pp,vpp,cp,dp,gpus,mbs,gbs,seq,sp,recompute,sharding,stage,
 *   params_total,params_gpu,weight_bytes,fp8_weight_copy_bytes,master_bytes,grad_bytes,
 *   optim_m_bytes,optim_v_bytes,scale_bytes,activation_bytes,overhead_bytes,total_bytes,
 *   capacity_bytes,fits,dp_comm_bytes,tp_comm_bytes,pp_comm_bytes,cp_comm_bytes,
 *   weight_comm_bytes,step_time_s,tokens_per_s,samples_per_s,tflops_per_gpu,
 *   mfu_bf16_pct,mfu_fp8_pct */
#ifndef FP8PLAN_REPORTS_PLAN_REPORT_H
#define FP8PLAN_REPORTS_PLAN_REPORT_H

#include <stdio.h>

#include "planner/plan.h"
#include "reports/table.h"

/* A new summary table, optionally with a leading "rank" column (sweeps). NULL when out of memory. */
Table *plan_summary_new(int with_rank);
/* Append one plan (rank ignored unless the table has the rank column). */
void plan_summary_row(Table *t, const Plan *p, int rank);
/* The summary header as one comma-separated line (for the schema golden test). */
const char *plan_summary_columns(void);

/* `plan --view summary`: one plan's summary row. With open choices (in.mem_unknown) the columns go on:
 * unknown (the list), low_bytes, verdict (FITS, UNCERTAIN, OVER LIMIT, OOM) and <name>_saving_bytes for every name
 * of plan_unknowns (0 when not open); without them it is plan_summary_new + plan_summary_row. */
Table *plan_summary_table(const Plan *p);

/* One row per memory term / collective / time item. With open choices (in.mem_unknown) the terms table goes on
 * with a row per name of plan_unknowns, unknown_<name> (category "unknown": what that saving alone takes off the
 * total; 0 when not open), and low_total (the low end): not terms of the total. */
Table *plan_terms_table(const Plan *p);
Table *plan_collectives_table(const Plan *p);
Table *plan_time_table(const Plan *p);

/* The full human-readable report: inputs and assumptions, memory terms grouped
 * with subtotals, total versus capacity and the verdict, collectives, time and
 * advice. */
Status plan_write_text(const Plan *p, FILE *f, Err *e);

/* The quantities plans are compared on (`fp8plan compare`, the TUI's Compare screen). */
typedef enum {
    PQ_WEIGHTS = 0,
    PQ_FP8_COPIES,
    PQ_MASTER,
    PQ_GRADS,
    PQ_ADAM_M,
    PQ_ADAM_V,
    PQ_SCALES,
    PQ_ACTIVATIONS,
    PQ_OVERHEADS,
    PQ_TOTAL,
    PQ_FITS,
    PQ_STATE_BPP,
    PQ_WEIGHT_COMM,
    PQ_DP_COMM,
    PQ_TP_COMM,
    PQ_PP_COMM,
    PQ_CP_COMM,
    PQ_STEP_S,
    PQ_SAMPLES_S,
    PQ_KTOKENS_S,
    PQ_TFLOPS,
    PQ_MFU_BF16,
    PQ_MFU_FP8,
    PQ_EP_COMM, /* expert all-to-alls and expert TP (MoE models only) */
    PQ_COUNT_
} PlanQty;

/* Quantity q of a plan: bytes per GPU for memory (weights .. total) and for
 * communication per step; 1 or 0 for fits; bytes per parameter of the linear
 * layers' states (unsharded); seconds per step; samples/s; thousands of
 * tokens/s; TFLOP/s per GPU; MFU in % of the BF16 or the FP8 peak. */
/* The bytes of a state held as a linear-layer term a, an other-parameters term b and the experts' term
 * (0 for dense models): weights, FP8 copies, master, gradients, Adam m or v. */
uint64_t plan_state_sum(const Plan *p, MemTermId a, MemTermId b);
double plan_qty(const Plan *p, PlanQty q);

/* Recipes side by side (text): one row per quantity, one column per plan and a
 * change-versus-the-first-plan column for each later one. */
Table *plan_compare_table(const Plan *plans, int n);

/* The mixture-of-experts lines of the text report (reports/plan_report_moe.c): part 0 the expert layout
 * (after the params line), part 1 the expert traffic (before the communication summary). Returns 0 (buf
 * empty) for models without experts. */
int plan_moe_text(const Plan *p, int part, char *buf, size_t size);

/* Bytes to GB (1e9), for text columns. */
static inline double plan_gb(uint64_t b) { return (double)b / 1e9; }

#endif
