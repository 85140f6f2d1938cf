/* reports/plan_report.c — Plan tables and the text report (see plan_report.h). */
#include "reports/plan_report.h"

#include <math.h>
#include <string.h>

#include "util/num.h"

/* ---- summary schema -------------------------------------------------------------------------------- */

enum {
    S_MODEL,
    S_GPU,
    S_RECIPE,
    S_STACK,
    S_TP,
    S_PP,
    S_VPP,
    S_CP,
    S_DP,
    S_GPUS,
    S_MBS,
    S_GBS,
    S_SEQ,
    S_SP,
    S_RECOMPUTE,
    S_SHARDING,
    S_STAGE,
    S_FIRST,
    S_LAST,
    S_PARAMS_TOTAL,
    S_PARAMS_GPU,
    S_WEIGHT,
    S_FP8COPY,
    S_MASTER,
    S_GRAD,
    S_M,
    S_V,
    S_SCALE,
    S_ACT,
    S_OVERHEAD,
    S_TOTAL,
    S_CAPACITY,
    S_FITS,
    S_DPC,
    S_TPC,
    S_PPC,
    S_CPC,
    S_WC,
    S_STEP,
    S_TOKS,
    S_SAMPS,
    S_TFLOPS,
    S_MFU16,
    S_MFU8,
    S_EP,
    S_ETP,
    S_PARAMS_ACTIVE,
    S_EPC,
    S_COUNT
};

static const TableCol summary_cols[S_COUNT] = {
    [S_MODEL] = {"model", NULL, NULL, TC_STR, 0, 0},
    [S_GPU] = {"gpu", NULL, NULL, TC_STR, 0, 0},
    [S_RECIPE] = {"recipe", NULL, NULL, TC_STR, 0, 0},
    [S_STACK] = {"stack", NULL, NULL, TC_STR, 0, 0},
    [S_TP] = {"tp", NULL, NULL, TC_U64, 0, 0},
    [S_PP] = {"pp", NULL, NULL, TC_U64, 0, 0},
    [S_VPP] = {"vpp", NULL, NULL, TC_U64, 0, 0},
    [S_CP] = {"cp", NULL, NULL, TC_U64, 0, 0},
    [S_DP] = {"dp", NULL, NULL, TC_U64, 0, 0},
    [S_GPUS] = {"gpus", NULL, NULL, TC_U64, 0, 0},
    [S_MBS] = {"mbs", NULL, NULL, TC_U64, 0, 0},
    [S_GBS] = {"gbs", NULL, NULL, TC_U64, 0, 0},
    [S_SEQ] = {"seq", NULL, NULL, TC_U64, 0, 0},
    [S_SP] = {"sp", NULL, NULL, TC_U64, 0, 0},
    [S_RECOMPUTE] = {"recompute", NULL, NULL, TC_STR, 0, 0},
    [S_SHARDING] = {"sharding", NULL, NULL, TC_STR, 0, 0},
    [S_STAGE] = {"stage", NULL, NULL, TC_U64, 0, 0},
    [S_FIRST] = {"first_stage_layers", NULL, NULL, TC_U64, 0, 0},
    [S_LAST] = {"last_stage_layers", NULL, NULL, TC_U64, 0, 0},
    [S_PARAMS_TOTAL] = {"params_total", NULL, NULL, TC_U64, 0, TF_GROUP},
    [S_PARAMS_GPU] = {"params_gpu", NULL, NULL, TC_U64, 0, TF_GROUP},
    [S_WEIGHT] = {"weight_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_FP8COPY] = {"fp8_weight_copy_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_MASTER] = {"master_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_GRAD] = {"grad_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_M] = {"optim_m_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_V] = {"optim_v_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_SCALE] = {"scale_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_ACT] = {"activation_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_OVERHEAD] = {"overhead_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_TOTAL] = {"total_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_CAPACITY] = {"capacity_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_FITS] = {"fits", NULL, NULL, TC_U64, 0, 0},
    [S_DPC] = {"dp_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_TPC] = {"tp_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_PPC] = {"pp_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_CPC] = {"cp_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_WC] = {"weight_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
    [S_STEP] = {"step_time_s", NULL, "s", TC_F64, 4, 0},
    [S_TOKS] = {"tokens_per_s", NULL, "tok/s", TC_F64, 0, 0},
    [S_SAMPS] = {"samples_per_s", NULL, "1/s", TC_F64, 2, 0},
    [S_TFLOPS] = {"tflops_per_gpu", NULL, "TFLOP/s", TC_F64, 1, 0},
    [S_MFU16] = {"mfu_bf16_pct", NULL, "%", TC_F64, 1, 0},
    [S_MFU8] = {"mfu_fp8_pct", NULL, "%", TC_F64, 1, 0},
    [S_EP] = {"ep", NULL, NULL, TC_U64, 0, 0},
    [S_ETP] = {"etp", NULL, NULL, TC_U64, 0, 0},
    [S_PARAMS_ACTIVE] = {"params_active", NULL, NULL, TC_U64, 0, TF_GROUP},
    [S_EPC] = {"ep_comm_bytes", NULL, "B", TC_U64, 0, TF_GROUP},
};

const char *plan_summary_columns(void)
{
    static char buf[1024];
    if (!buf[0]) {
        size_t used = 0;
        for (int i = 0; i < S_COUNT; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "", summary_cols[i].name);
    }
    return buf;
}

Table *plan_summary_new(int with_rank)
{
    TableCol cols[S_COUNT + 1];
    int n = 0;
    if (with_rank) cols[n++] = (TableCol){"rank", NULL, NULL, TC_U64, 0, 0};
    memcpy(cols + n, summary_cols, sizeof summary_cols);
    return table_new(cols, n + S_COUNT);
}

void plan_summary_row(Table *t, const Plan *p, int rank)
{
    const PlanInput *in = &p->in;
    int o = 0;
    table_row(t);
    if (rank > 0) {
        table_u64(t, 0, (uint64_t)rank);
        o = 1;
    }
    table_str(t, o + S_MODEL, in->model->name);
    table_str(t, o + S_GPU, in->gpu->name);
    table_str(t, o + S_RECIPE, in->recipe->name);
    table_str(t, o + S_STACK, in->stack ? in->stack->name : "none");
    table_u64(t, o + S_TP, in->tp);
    table_u64(t, o + S_PP, in->pp);
    table_u64(t, o + S_VPP, in->vpp);
    table_u64(t, o + S_CP, in->cp);
    table_u64(t, o + S_DP, in->dp);
    table_u64(t, o + S_GPUS, p->world);
    table_u64(t, o + S_MBS, in->mbs);
    table_u64(t, o + S_GBS, in->gbs);
    table_u64(t, o + S_SEQ, p->seq);
    table_u64(t, o + S_SP, p->sp);
    table_str(t, o + S_RECOMPUTE, recompute_name(in->recompute));
    table_str(t, o + S_SHARDING, sharding_name(in->sharding));
    table_u64(t, o + S_STAGE, p->stage);
    table_u64(t, o + S_FIRST, in->first_stage_layers);
    table_u64(t, o + S_LAST, in->last_stage_layers);
    table_u64(t, o + S_PARAMS_TOTAL, p->params_total);
    table_u64(t, o + S_PARAMS_GPU, p->params_gpu);
    table_u64(t, o + S_WEIGHT, plan_state_sum(p, MT_WEIGHT_GEMM, MT_WEIGHT_OTHER));
    table_u64(t, o + S_FP8COPY, plan_state_sum(p, MT_FP8_ROWWISE, MT_FP8_COLWISE));
    table_u64(t, o + S_MASTER, plan_state_sum(p, MT_MASTER_GEMM, MT_MASTER_OTHER));
    table_u64(t, o + S_GRAD, plan_state_sum(p, MT_GRAD_GEMM, MT_GRAD_OTHER));
    table_u64(t, o + S_M, plan_state_sum(p, MT_OPTIM_M_GEMM, MT_OPTIM_M_OTHER));
    table_u64(t, o + S_V, plan_state_sum(p, MT_OPTIM_V_GEMM, MT_OPTIM_V_OTHER));
    table_u64(t, o + S_SCALE, p->cat_bytes[MC_SCALE]);
    table_u64(t, o + S_ACT, p->cat_bytes[MC_ACTIVATION]);
    table_u64(t, o + S_OVERHEAD, p->cat_bytes[MC_OVERHEAD]);
    table_u64(t, o + S_TOTAL, p->total_bytes);
    table_u64(t, o + S_CAPACITY, p->capacity_bytes);
    table_u64(t, o + S_FITS, (uint64_t)p->fits);
    table_u64(t, o + S_DPC, p->dp_comm_bytes);
    table_u64(t, o + S_TPC, p->tp_comm_bytes);
    table_u64(t, o + S_PPC, p->pp_comm_bytes);
    table_u64(t, o + S_CPC, p->cp_comm_bytes);
    table_u64(t, o + S_WC, p->weight_comm_bytes);
    table_f64(t, o + S_STEP, p->time.step_s);
    table_f64(t, o + S_TOKS, p->tokens_per_s);
    table_f64(t, o + S_SAMPS, p->samples_per_s);
    table_f64(t, o + S_TFLOPS, p->tflops_per_gpu);
    table_f64(t, o + S_MFU16, p->mfu_bf16_pct);
    table_f64(t, o + S_MFU8, p->mfu_fp8_pct);
    table_u64(t, o + S_EP, in->ep);
    table_u64(t, o + S_ETP, in->etp);
    table_u64(t, o + S_PARAMS_ACTIVE, p->params_active);
    table_u64(t, o + S_EPC, p->ep_comm_bytes);
}

Table *plan_summary_table(const Plan *p)
{
    if (!p->in.mem_unknown) {
        Table *t = plan_summary_new(0);
        if (t) plan_summary_row(t, p, 0);
        return t;
    }
    static char names[PLAN_UNK_COUNT_][64];
    TableCol cols[S_COUNT + 3 + PLAN_UNK_COUNT_];
    memcpy(cols, summary_cols, sizeof summary_cols);
    int n = S_COUNT;
    cols[n++] = (TableCol){"unknown", NULL, NULL, TC_STR, 0, 0};
    cols[n++] = (TableCol){"low_bytes", NULL, "B", TC_U64, 0, TF_GROUP};
    cols[n++] = (TableCol){"verdict", NULL, NULL, TC_STR, 0, 0};
    for (int i = 0; i < PLAN_UNK_COUNT_; i++) {
        snprintf(names[i], sizeof names[i], "%s_saving_bytes", plan_unknowns[i].name);
        cols[n++] = (TableCol){names[i], NULL, "B", TC_U64, 0, TF_GROUP};
    }
    Table *t = table_new(cols, n);
    if (!t) return NULL;
    plan_summary_row(t, p, 0);
    char list[160];
    plan_unknown_format(p->in.mem_unknown, list, sizeof list);
    table_str(t, S_COUNT, list);
    table_u64(t, S_COUNT + 1, p->low_bytes);
    table_str(t, S_COUNT + 2, plan_verdict_name(p->verdict));
    for (int i = 0; i < PLAN_UNK_COUNT_; i++) table_u64(t, S_COUNT + 3 + i, p->unknown_bytes[i]);
    return t;
}

/* ---- per-term, per-collective and time tables -------------------------------------------------------- */

enum { T_TERM, T_CAT, T_DTYPE, T_ELEM, T_BYTES, T_GB, T_SHARDS, T_PERSIST, T_COUNT };
static const TableCol term_cols[T_COUNT] = {
    [T_TERM] = {"term", NULL, NULL, TC_STR, 0, 0},         [T_CAT] = {"category", NULL, NULL, TC_STR, 0, 0},
    [T_DTYPE] = {"dtype", NULL, NULL, TC_STR, 0, 0},       [T_ELEM] = {"elements", NULL, NULL, TC_U64, 0, TF_GROUP},
    [T_BYTES] = {"bytes", NULL, "B", TC_U64, 0, TF_GROUP}, [T_GB] = {"gb", "GB", "1e9 B", TC_F64, 3, 0},
    [T_SHARDS] = {"shards", NULL, NULL, TC_U64, 0, 0},     [T_PERSIST] = {"persistent", NULL, NULL, TC_U64, 0, 0},
};

static const char *dtype_label(Dtype d) { return d == DT_NONE ? "-" : dtype_name(d); }

/* A term's row under its name and category's; persistent < 0: no persistent column. */
static void term_row(Table *t, const char *name, const char *cat, const MemTerm *m, int persistent)
{
    table_row(t);
    table_str(t, T_TERM, name);
    table_str(t, T_CAT, cat);
    table_str(t, T_DTYPE, m->bytes ? dtype_label(m->dtype) : "-");
    table_u64(t, T_ELEM, m->elements);
    table_u64(t, T_BYTES, m->bytes);
    table_f64(t, T_GB, plan_gb(m->bytes));
    table_u64(t, T_SHARDS, m->shards);
    if (persistent >= 0) table_u64(t, T_PERSIST, (uint64_t)persistent);
}

static void total_row(Table *t, const char *name, uint64_t bytes)
{
    table_row(t);
    table_str(t, T_TERM, name);
    table_u64(t, T_BYTES, bytes);
    table_f64(t, T_GB, plan_gb(bytes));
}

Table *plan_terms_table(const Plan *p)
{
    Table *t = table_new(term_cols, T_COUNT);
    if (!t) return NULL;
    for (int i = 0; i < MT_COUNT_; i++) {
        const MemTermId id = (MemTermId)i;
        term_row(t, mem_term_name(id), mem_category_name(mem_term_category(id)), &p->mem[i], mem_term_persistent(id));
    }
    if (!p->in.mem_unknown) return t;
    static char names[PLAN_UNK_COUNT_][64];
    for (int i = 0; i <= PLAN_UNK_COUNT_; i++) { /* the open choices' rows, and the low end */
        if (i < PLAN_UNK_COUNT_) snprintf(names[i], sizeof names[i], "unknown_%s", plan_unknowns[i].name);
        uint64_t b = i < PLAN_UNK_COUNT_ ? p->unknown_bytes[i] : p->low_bytes;
        MemTerm m = {.dtype = DT_NONE, .bytes = b, .shards = 1};
        term_row(t, i < PLAN_UNK_COUNT_ ? names[i] : "low_total", "unknown", &m, 0);
    }
    return t;
}

/* Terms grouped by category with subtotals (text report). */
static Table *grouped_terms(const Plan *p)
{
    Table *t = table_new(term_cols, T_PERSIST); /* the persistent flag is implied by the category */
    if (!t) return NULL;
    for (int c = 0; c < MC_COUNT_; c++) {
        for (int i = 0; i < MT_COUNT_; i++)
            if (mem_term_category((MemTermId)i) == (MemCategory)c && plan_term_applies(p, (MemTermId)i))
                term_row(t, mem_term_name((MemTermId)i), mem_category_name((MemCategory)c), &p->mem[i], -1);
        char name[64];
        snprintf(name, sizeof name, "= %s", mem_category_name((MemCategory)c));
        total_row(t, name, p->cat_bytes[c]);
        table_rule(t);
    }
    total_row(t, "total", p->total_bytes);
    total_row(t, "capacity", p->capacity_bytes);
    table_row(t);
    int over = p->total_bytes > p->capacity_bytes;
    table_str(t, T_TERM, over ? "shortfall" : "headroom");
    uint64_t d = over ? p->total_bytes - p->capacity_bytes : p->capacity_bytes - p->total_bytes;
    table_u64(t, T_BYTES, d);
    table_f64(t, T_GB, plan_gb(d));
    return t;
}

enum {
    C_NAME,
    C_GROUP,
    C_OP,
    C_DTYPE,
    C_RANKS,
    C_LINK,
    C_PAYLOAD,
    C_BUS,
    C_CALLS,
    C_STEP,
    C_BW,
    C_TIME,
    C_EXPOSED,
    C_COUNT
};
static const TableCol coll_cols[C_COUNT] = {
    [C_NAME] = {"collective", NULL, NULL, TC_STR, 0, 0},
    [C_GROUP] = {"group", NULL, NULL, TC_STR, 0, 0},
    [C_OP] = {"op", NULL, NULL, TC_STR, 0, 0},
    [C_DTYPE] = {"dtype", NULL, NULL, TC_STR, 0, 0},
    [C_RANKS] = {"ranks", NULL, NULL, TC_U64, 0, 0},
    [C_LINK] = {"link", NULL, NULL, TC_STR, 0, 0},
    [C_PAYLOAD] = {"payload_bytes", "payload", "B/call", TC_U64, 0, TF_GROUP},
    [C_BUS] = {"bus_bytes", "sent", "B/call", TC_U64, 0, TF_GROUP},
    [C_CALLS] = {"calls", NULL, "/step", TC_U64, 0, TF_GROUP},
    [C_STEP] = {"step_bytes", "sent/step", "B", TC_U64, 0, TF_GROUP},
    [C_BW] = {"bus_gbps", "bus bw", "GB/s", TC_F64, 0, 0},
    [C_TIME] = {"time_s", "time", "s", TC_F64, 4, 0},
    [C_EXPOSED] = {"exposed_s", "exposed", "s", TC_F64, 4, 0},
};

Table *plan_collectives_table(const Plan *p)
{
    Table *t = table_new(coll_cols, C_COUNT);
    if (!t) return NULL;
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *c = &p->coll[i];
        if (!plan_coll_applies(p, (CollectiveId)i)) continue;
        table_row(t);
        table_str(t, C_NAME, coll_name((CollectiveId)i));
        table_str(t, C_GROUP, comm_group_name(coll_group((CollectiveId)i)));
        table_str(t, C_OP, comm_op_name(coll_op((CollectiveId)i)));
        table_str(t, C_DTYPE, c->ranks ? (c->dtype == DT_NONE ? "mixed" : dtype_name(c->dtype)) : "-");
        table_u64(t, C_RANKS, c->ranks);
        table_str(t, C_LINK, !c->ranks ? "-" : c->inter_node ? "inter" : "intra");
        table_u64(t, C_PAYLOAD, c->payload_bytes);
        table_u64(t, C_BUS, c->bus_bytes);
        table_u64(t, C_CALLS, c->calls);
        table_u64(t, C_STEP, c->step_bytes);
        table_f64(t, C_BW, c->bw / 1e9);
        table_f64(t, C_TIME, c->time_s);
        table_f64(t, C_EXPOSED, c->exposed_s);
    }
    return t;
}

enum { TM_ITEM, TM_S, TM_PCT, TM_COUNT };
static const TableCol time_cols[TM_COUNT] = {
    [TM_ITEM] = {"item", NULL, NULL, TC_STR, 0, 0},
    [TM_S] = {"seconds", NULL, "s", TC_F64, 4, 0},
    [TM_PCT] = {"share_pct", "share", "%", TC_F64, 1, 0},
};

Table *plan_time_table(const Plan *p)
{
    const TimeBreakdown *tb = &p->time;
    const struct {
        const char *name;
        double v;
    } items[] = {
        {"gemm", tb->gemm_s},
        {"attention", tb->attn_s},
        {"non_gemm", tb->nongemm_s},
        {"tp_comm_exposed", tb->tp_comm_s},
        {"cp_comm_exposed", tb->cp_comm_s},
        {"pp_send_recv", tb->pp_comm_s},
        {"pipeline_bubble", tb->bubble_s},
        {"dp_comm_exposed", tb->dp_comm_s},
        {"optimizer", tb->optimizer_s},
        {"fp8_weight_cast", tb->weight_cast_s},
        {"amax_and_embedding_sync", tb->other_s}, /* and the TP-replicated gradients (the name kept stable) */
        {"expert_gemm", tb->expert_gemm_s},       /* the MoE rows (the last 4): only for models with experts */
        {"moe_route_permute", tb->moe_route_s},
        {"ep_comm_exposed", tb->ep_comm_s},
        {"moe_host_issue", tb->moe_host_s},
    };
    Table *t = table_new(time_cols, TM_COUNT);
    if (!t) return NULL;
    size_t n = sizeof items / sizeof *items - (plan_coll_applies(p, CO_EP_DISPATCH_FWD) ? 0 : 4);
    for (size_t i = 0; i < n; i++) {
        table_row(t);
        table_str(t, TM_ITEM, items[i].name);
        table_f64(t, TM_S, items[i].v);
        table_f64(t, TM_PCT, tb->step_s > 0 ? 100.0 * items[i].v / tb->step_s : 0);
    }
    table_rule(t);
    table_row(t);
    table_str(t, TM_ITEM, "step");
    table_f64(t, TM_S, tb->step_s);
    table_f64(t, TM_PCT, 100.0);
    return t;
}

/* ---- text report -------------------------------------------------------------------------------------- */

static Status put_table(Table *t, FILE *f, Err *e)
{
    if (!t) return err_set(e, ST_NOMEM, "out of memory building a table");
    Status st = table_write(t, TABLE_TEXT, f, e);
    table_free(t);
    return st;
}

static const char *grouped(uint64_t v, char *buf) { return num_fmt_grouped(v, buf, 40); }

/* A fraction as the text shows it: two decimals, or %g when that would round a nonzero value to 0.00
 * (an efficiency of 1e-300 is shown as given). */
static const char *frac(double v, char buf[24])
{
    snprintf(buf, 24, v != 0 && v < 0.005 ? "%.3g" : "%.2f", v);
    return buf;
}

/* The open choices (--unknown) after the verdict: what each saving alone takes off the total, and the low end. */
static Status band_text(const Plan *p, FILE *f)
{
    table_put_prose(f,
                    "open choices (--unknown; the terms above take none): GB each saving alone takes off the total\n");
    for (int i = 0; i < PLAN_UNK_COUNT_; i++)
        if (p->in.mem_unknown & plan_unknowns[i].bit)
            table_put_prose(f, "  %-16s %6.2f  %s\n", plan_unknowns[i].name, plan_gb(p->unknown_bytes[i]),
                            plan_unknowns[i].saving);
    table_put_prose(f, "  %-16s %6.2f  the low end: %.2f GB, on PP stage %u\n\n", "all of them",
                    plan_gb(p->total_bytes - p->low_bytes), plan_gb(p->low_bytes), p->low_stage);
    return ferror(f) ? ST_IO : ST_OK;
}

Status plan_write_text(const Plan *p, FILE *f, Err *e)
{
    char fb[7][24];
    const PlanInput *in = &p->in;
    char b1[40], b2[40], b3[40];
    char sl[STACK_LABEL_MAX];
    table_put_prose(f, "plan: %s on %s, recipe %s, stack %s\n", in->model->name, in->gpu->name, in->recipe->name,
                    stack_label(in->stack, sl, sizeof sl));
    table_put_prose(f, "layout: TP %u x PP %u (vpp %u) x CP %u x DP %u = %u GPUs, seq %u\n", in->tp, in->pp, in->vpp,
                    in->cp, in->dp, p->world, p->seq);
    char dflt[64] = ""; /* the default: about 2M tokens, rounded up to a multiple of mbs x DP */
    if (p->gbs_default) snprintf(dflt, sizeof dflt, " (default: %s tokens)", grouped(in->gbs * (uint64_t)p->seq, b1));
    table_put_prose(f, "        micro-batch %u, global batch %llu%s = %u micro-batches\n", in->mbs,
                    (unsigned long long)in->gbs, dflt, p->microbatches);
    char mods[160] = "";
    if (in->recompute_mods) { /* --recompute-modules, on top of --recompute */
        memcpy(mods, " + modules ", 12);
        recompute_mods_format(in->recompute_mods, mods + 11, sizeof mods - 11);
    }
    table_put_prose(f, "        SP %s, recompute %s%s, sharding %s over %u ranks, %s attention, dropout %s\n",
                    p->sp ? "on" : "off", recompute_name(in->recompute), mods, sharding_name(in->sharding),
                    p->shard_ways, attn_name(plan_attn_kernel(in)), in->dropout ? "on" : "off");
    table_put_prose(f,
                    "params: %s in the model; %s on this GPU (%s in linear layers), PP stage %u of %u (%u layers), "
                    "vocabulary padded to %u\n",
                    grouped(p->params_total, b1), grouped(p->params_gpu, b2), grouped(p->params_gemm_gpu, b3), p->stage,
                    in->pp, p->stage_layers, p->vocab_padded);
    if (p->first_layers != p->mid_layers || p->last_layers != p->mid_layers)
        table_put_prose(f, "        uneven stages: first %u, middle %u, last %u layers\n", p->first_layers,
                        p->mid_layers, p->last_layers);
    char moe[1024];
    if (plan_moe_text(p, 0, moe, sizeof moe)) table_put_prose(f, "%s", moe);
    table_put_prose(f, "\n");
    Status st = put_table(grouped_terms(p), f, e);
    if (st) return st;
    if (p->low_bytes < p->total_bytes) /* open choices that save something: the band */
        table_put_prose(f,
                        "verdict: %s — %.2f to %.2f GB of %.2f GB (%.1f to %.1f %%; the limit is %.0f %%, %.2f GB)\n",
                        plan_verdict_name(p->verdict), plan_gb(p->low_bytes), plan_gb(p->total_bytes),
                        plan_gb(p->capacity_bytes), 100.0 * (double)p->low_bytes / (double)p->capacity_bytes,
                        100.0 * (double)p->total_bytes / (double)p->capacity_bytes, 100 * in->max_mem_frac,
                        plan_gb(p->limit_bytes));
    else
        table_put_prose(f, "verdict: %s — %.2f GB of %.2f GB (%.1f %%; the limit is %.0f %%, %.2f GB)\n",
                        plan_verdict_name(p->verdict), plan_gb(p->total_bytes), plan_gb(p->capacity_bytes),
                        100.0 * (double)p->total_bytes / (double)p->capacity_bytes, 100 * in->max_mem_frac,
                        plan_gb(p->limit_bytes));
    if (p->verdict == PLAN_UNCERTAIN)
        table_put_prose(f, "         it fits if the open savings that hold take at least %.2f GB off the %.2f GB\n",
                        plan_gb(p->total_bytes - p->limit_bytes), plan_gb(p->total_bytes));
    table_put_prose(
        f, "         allocated %.2f GB, reserved by the allocator %.2f GB (what torch.cuda max_memory_* report)\n\n",
        plan_gb(p->alloc_bytes), plan_gb(p->reserved_bytes));
    if (in->mem_unknown && (st = band_text(p, f))) return err_set(e, st, "write error");
    table_put_prose(f, "collectives per step (bytes this GPU sends; ring factors as nccl-tests):\n");
    if ((st = put_table(plan_collectives_table(p), f, e))) return st;
    if (plan_moe_text(p, 1, moe, sizeof moe)) table_put_prose(f, "%s", moe);
    table_put_prose(f,
                    "communication per step: DP %.3f GB, TP %.3f GB, PP %.3f GB, CP %.3f GB; weight-related (DP "
                    "all-gather + gradient reduce) %.3f GB\n\n",
                    plan_gb(p->dp_comm_bytes), plan_gb(p->tp_comm_bytes), plan_gb(p->pp_comm_bytes),
                    plan_gb(p->cp_comm_bytes), plan_gb(p->weight_comm_bytes));
    table_put_prose(f, "time per step:\n");
    if ((st = put_table(plan_time_table(p), f, e))) return st;
    table_put_prose(
        f,
        "throughput: %.0f tokens/s, %.2f samples/s, %.1f TFLOP/s per GPU; MFU %.1f %% of BF16 peak, %.1f %% of "
        "FP8 peak\n",
        p->tokens_per_s, p->samples_per_s, p->tflops_per_gpu, p->mfu_bf16_pct, p->mfu_fp8_pct);
    if (p->advice_mask) {
        table_put_prose(f, "\nadvice:\n");
        for (int a = 0; a < ADV_COUNT_; a++)
            if (p->advice_mask & (1u << a)) table_put_prose(f, "  - %s\n", advice_text((AdviceId)a));
    }
    table_put_prose(
        f,
        "\nassumptions: GB = 1e9 B. Activations per Korthikanti et al. 2022, itemized (saved GEMM inputs in "
        "%s). Overheads: CUDA context %.3f GB, GEMM workspace %.3f GB, NCCL %.3f GB per communicator, "
        "allocator reserve %.0f %% of the activation bytes. Stack %s: main gradients %s, FP8 weight copies %s, "
        "SwiGLU %s, %s kernels at least %.1f us each, %u B per logit at the loss. GEMMs from their shapes at "
        "%s of the GPU's measured matmul ceiling (BF16 %.0f, FP8 %.0f TFLOP/s; --eff-bf16/--eff-fp8 override); "
        "HBM %s, network %s of peak. Overlap (fraction of the concurrent compute that hides them): TP %s, "
        "DP %s, PP %s (interleaved schedules only), CP %s.\n",
        dtype_name(in->recipe->saved_input), plan_gb(in->cuda_context_bytes), plan_gb(in->workspace_bytes),
        plan_gb(in->nccl_comm_bytes), 100 * in->frag_frac, in->stack ? in->stack->name : "none",
        main_grad_name(in->main_grad), in->fp8_weight_cache ? "cached per step" : "recast per micro-batch",
        in->fused_swiglu ? "fused" : "unfused", fusion_name(in->fusion), in->launch_s * 1e6, in->loss_bytes,
        frac(gpu_sustained(in->gpu), fb[0]), in->gpu->mamf_bf16 / 1e12, in->gpu->mamf_fp8 / 1e12,
        frac(in->eff_hbm, fb[1]), frac(in->eff_net, fb[2]), frac(in->overlap_tp, fb[3]), frac(in->overlap_dp, fb[4]),
        frac(in->overlap_pp, fb[5]), frac(in->overlap_cp, fb[6]));
    if (in->moment_dt != MOMENT_RECIPE) /* --moment-dtype: what the recipe's row says beside it */
        table_put_prose(f, "Adam moments in %s for every parameter (--moment-dtype; recipe %s keeps m %s, v %s).\n",
                        moment_dtype_name(in->moment_dt), in->recipe->name, dtype_name(in->recipe->gemm.dt[STATE_M]),
                        dtype_name(in->recipe->gemm.dt[STATE_V]));
    if (in->eff_gemm_bf16 > 0 || in->eff_gemm_fp8 > 0 || in->eff_attn > 0) /* the values given, as given */
        table_put_prose(
            f,
            "Efficiencies given (fractions of the dense peak; 0 = the shape model): BF16 GEMM %.3g, FP8 GEMM "
            "%.3g, attention %.3g.\n",
            in->eff_gemm_bf16, in->eff_gemm_fp8, in->eff_attn);
    if (in->stack && !in->stack->calibrated)
        table_put_prose(f,
                        "Stack %s's kernel values are not yet measured on a GPU (models/stacks.csv calibrated = no).\n",
                        in->stack->name);
    if (ferror(f)) return err_set(e, ST_IO, "write error");
    return ST_OK;
}
