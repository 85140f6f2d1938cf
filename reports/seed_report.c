/* reports/seed_report.c — Tables 1a, 1b, 1c and 5 of the seed (see seed_report.h). */
#include "reports/seed_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8/granularity.h"
#include "planner/plan.h"
#include "reports/plan_report.h"
#include "util/num.h"

/* ---- Table 1a ----------------------------------------------------------------------------------------- */

Table *seed_table1a(const Catalog *c, const Recipe *only, uint64_t params, int sharded, uint32_t dp, Err *e)
{
    TableCol cols[24];
    int n = 0;
    cols[n++] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, 0};
    static const char *const dnames[STATE_COUNT_] = {"weight_dtype", "master_dtype", "grad_dtype", "adam_m_dtype",
                                                     "adam_v_dtype"};
    static const char *const bnames[STATE_COUNT_] = {"weight_bytes_per_param", "master_bytes_per_param",
                                                     "grad_bytes_per_param", "adam_m_bytes_per_param",
                                                     "adam_v_bytes_per_param"};
    static const char *const labels[STATE_COUNT_] = {"weight", "master", "grad", "adam m", "adam v"};
    for (int s = 0; s < STATE_COUNT_; s++) {
        cols[n++] = (TableCol){dnames[s], labels[s], NULL, TC_STR, 0, 0};
        cols[n++] = (TableCol){bnames[s], "B", "/param", TC_F64, 3, 0};
    }
    cols[n++] = (TableCol){"state_bytes_per_param", "states", "B/param", TC_F64, 3, 0};
    cols[n++] = (TableCol){"fp8_copy_bytes_per_param", "+fp8 copies", "B/param", TC_F64, 3, 0};
    cols[n++] = (TableCol){"dp_shards", "shards", NULL, TC_U64, 0, 0};
    if (params) {
        cols[n++] = (TableCol){"params", NULL, NULL, TC_U64, 0, TF_GROUP};
        cols[n++] = (TableCol){"state_bytes", "state bytes", "B", TC_U64, 0, TF_GROUP};
        cols[n++] = (TableCol){"state_gb", "states", "GB", TC_F64, 3, 0};
    }
    Table *t = table_new(cols, n);
    if (!t) {
        err_set(e, ST_NOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < c->nrecipes; i++) {
        const Recipe *r = &c->recipes[i];
        if (only && r != only) continue;
        double per[STATE_COUNT_];
        uint32_t d = sharded && dp > 1 ? dp : 1;
        double tot = recipe_state_bytes_per_param(&r->gemm, sharded, d, per);
        table_row(t);
        int k = 0;
        table_str(t, k++, r->name);
        uint64_t bytes = 0;
        int ovf = 0;
        for (int s = 0; s < STATE_COUNT_; s++) {
            table_str(t, k++, dtype_name(r->gemm.dt[s]));
            table_f64(t, k++, per[s]);
            if (params) { /* exact: ceil(P/d) elements of a sharded state, as the planner counts them */
                int sh = d > 1 && (r->gemm.shard_mask & (1u << s));
                uint64_t elems = sh ? params / d + (params % d != 0) : params, b;
                if (u64_mul(elems, dtype_bytes(r->gemm.dt[s]), &b) || u64_add(bytes, b, &bytes)) ovf = 1;
            }
        }
        table_f64(t, k++, tot);
        table_f64(t, k++, recipe_fp8_copy_bytes_per_param(r));
        table_u64(t, k++, d);
        if (params) {
            if (ovf) {
                table_free(t);
                err_set(e, ST_OVERFLOW, "--params %llu: the state bytes of recipe %s pass 2^64",
                        (unsigned long long)params, r->name);
                return NULL;
            }
            table_u64(t, k++, params);
            table_u64(t, k++, bytes);
            table_f64(t, k++, (double)bytes / 1e9);
        }
    }
    return t;
}

/* ---- Table 1b ----------------------------------------------------------------------------------------- */

Status seed_table1b_rows(uint64_t rows, uint64_t cols, SeedScaleRow out[SEED_T1B_ROWS], Err *e)
{
    uint64_t n, bf16;
    if (u64_mul(rows, cols, &n) || u64_mul(n, 2, &bf16))
        return err_set(e, ST_OVERFLOW, "%llux%llu: BF16 bytes pass 2^64", (unsigned long long)rows,
                       (unsigned long long)cols);
    memset(out, 0, sizeof *out * SEED_T1B_ROWS);
    out[0] = (SeedScaleRow){.is_bf16 = 1, .scale_dtype = DT_NONE, .payload_bytes = bf16, .total_bytes = bf16};
    out[0].payload_of_bf16_pct = 100.0;
    for (int g = 0; g < GRAN_COUNT_; g++) {
        SeedScaleRow *r = &out[1 + g];
        r->gran = (Granularity)g;
        r->scale_dtype = gran_scale_dtype(r->gran);
        r->payload_bytes = n;
        Status st = gran_scale_count(r->gran, rows, cols, &r->scale_count, &r->scale_bytes, e);
        if (st) return st;
        if (u64_add(n, r->scale_bytes, &r->total_bytes))
            return err_set(e, ST_OVERFLOW, "%llux%llu: total bytes pass 2^64", (unsigned long long)rows,
                           (unsigned long long)cols);
        r->payload_of_bf16_pct = 100.0 * (double)n / (double)bf16;
        r->scale_of_payload_pct = 100.0 * (double)r->scale_bytes / (double)n;
        r->saving_vs_bf16_pct = 100.0 * ((double)bf16 - (double)r->total_bytes) / (double)bf16;
    }
    return ST_OK;
}

Table *seed_table1b(uint64_t rows, uint64_t cols, Err *e)
{
    enum { C_FMT, C_GRAN, C_SDTYPE, C_NSCALES, C_PAYLOAD, C_SCALE, C_TOTAL, C_OF_BF16, C_OF_PAYLOAD, C_SAVING, NC };
    static const TableCol tcols[NC] = {
        [C_FMT] = {"format", NULL, NULL, TC_STR, 0, 0},
        [C_GRAN] = {"granularity", NULL, NULL, TC_STR, 0, 0},
        [C_SDTYPE] = {"scale_dtype", "scale", "dtype", TC_STR, 0, 0},
        [C_NSCALES] = {"scale_count", "scales", NULL, TC_U64, 0, TF_GROUP},
        [C_PAYLOAD] = {"payload_bytes", "payload", "B", TC_U64, 0, TF_GROUP},
        [C_SCALE] = {"scale_bytes", "scale", "B", TC_U64, 0, TF_GROUP},
        [C_TOTAL] = {"total_bytes", "total", "B", TC_U64, 0, TF_GROUP},
        [C_OF_BF16] = {"payload_of_bf16_pct", "payload", "% BF16", TC_F64, 3, 0},
        [C_OF_PAYLOAD] = {"scale_of_payload_pct", "scale", "% payload", TC_F64, 3, 0},
        [C_SAVING] = {"saving_vs_bf16_pct", "saving", "% vs BF16", TC_F64, 3, 0},
    };
    SeedScaleRow r[SEED_T1B_ROWS];
    if (seed_table1b_rows(rows, cols, r, e)) return NULL;
    Table *t = table_new(tcols, NC);
    if (!t) return err_set(e, ST_NOMEM, "out of memory"), NULL;
    char title[160];
    snprintf(title, sizeof title, "Table 1b: one %llux%llu tensor, payload + scale storage (weights only)",
             (unsigned long long)rows, (unsigned long long)cols);
    table_set_title(t, title);
    for (int i = 0; i < SEED_T1B_ROWS; i++) {
        table_row(t);
        table_str(t, C_FMT, r[i].is_bf16 ? "bf16" : "fp8");
        table_str(t, C_GRAN, r[i].is_bf16 ? "none" : gran_name(r[i].gran));
        table_str(t, C_SDTYPE, dtype_name(r[i].scale_dtype));
        table_u64(t, C_NSCALES, r[i].scale_count);
        table_u64(t, C_PAYLOAD, r[i].payload_bytes);
        table_u64(t, C_SCALE, r[i].scale_bytes);
        table_u64(t, C_TOTAL, r[i].total_bytes);
        table_f64(t, C_OF_BF16, r[i].payload_of_bf16_pct);
        table_f64(t, C_OF_PAYLOAD, r[i].scale_of_payload_pct);
        table_f64(t, C_SAVING, r[i].saving_vs_bf16_pct);
    }
    return t;
}

/* ---- Table 1c ----------------------------------------------------------------------------------------- */

static const char *gran_phrase(Granularity g)
{
    switch (g) {
    case GRAN_TENSOR: return "per-tensor scale";
    case GRAN_CHANNEL: return "per-channel scales";
    case GRAN_1X32: return "1x32 E8M0 block scales";
    case GRAN_1X128: return "1x128 FP32 tile scales";
    case GRAN_128X128: return "128x128 FP32 block scales";
    default: return "?";
    }
}

Table *seed_table1c(const Catalog *c)
{
    const TableCol cols[] = {
        {"recipe", NULL, NULL, TC_STR, 0, 0}, {"step", NULL, NULL, TC_U64, 0, 0},
        {"tensor", NULL, NULL, TC_STR, 0, 0}, {"precision", NULL, NULL, TC_STR, 0, 0},
        {"note", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    for (int i = 0; i < c->nrecipes; i++) {
        const Recipe *r = &c->recipes[i];
        int fp8 = recipe_fp8_gemm(r);
        char scale[160], note[256];
        if (!fp8)
            snprintf(scale, sizeof scale, "no scaling");
        else if (r->scaling == SCALING_DELAYED)
            snprintf(scale, sizeof scale, "delayed: scale from an amax history of %u, reduced over %s", r->amax_history,
                     r->amax_reduce == AMAX_ALL  ? "TP, CP and DP"
                     : r->amax_reduce == AMAX_TP ? "TP and CP"
                                                 : "nothing");
        else
            snprintf(scale, sizeof scale, "current: amax read from the tensor before the cast (an extra pass)%s",
                     r->amax_reduce == AMAX_NONE ? ", scales local" : "");
#define ROW(step, tensor, prec, nt) \
    do {                            \
        table_row(t);               \
        table_str(t, 0, r->name);   \
        table_u64(t, 1, step);      \
        table_str(t, 2, tensor);    \
        table_str(t, 3, prec);      \
        table_str(t, 4, nt);        \
    } while (0)
        ROW(1, "scale of each FP8 operand", fp8 ? "fp32 scale and scale_inv" : "-", scale);
        snprintf(note, sizeof note, "%s", fp8 ? gran_phrase(r->act_gran) : "BF16 GEMM");
        ROW(2, "GEMM input x (activation)", dtype_name(r->gemm_fwd), note);
        snprintf(note, sizeof note, "%s; read from %s", fp8 ? gran_phrase(r->weight_gran) : "BF16 GEMM",
                 r->fp8_row != DT_NONE                 ? "the cached FP8 row-wise copy"
                 : r->gemm.dt[STATE_WEIGHT] != DT_NONE ? "the working weight"
                                                       : "the master, cast per op");
        ROW(2, "GEMM input w (weight)", fp8 ? dtype_name(r->gemm_fwd) : "bf16", note);
        ROW(2, "GEMM accumulation and output", "fp32 accumulate, bf16 output",
            fp8 ? "output rescaled by 1/(sx*sw)" : "-");
        ROW(3, "softmax, norms, loss, residual adds", "bf16/fp32", "memory-bound; never FP8");
        ROW(4, "output gradient dy (dgrad, wgrad)", fp8 ? dtype_name(r->gemm_bwd) : "bf16",
            fp8 ? gran_phrase(r->act_gran) : "BF16 GEMMs");
        ROW(4, "saved GEMM inputs (for wgrad)", dtype_name(r->saved_input), "kept from forward to backward");
        snprintf(note, sizeof note, "all-gather %s, reduce-scatter %s", dtype_name(r->comm_tp_ag),
                 dtype_name(r->comm_tp_rs));
        ROW(4, "TP/SP activations", "see note", note);
        ROW(5, "amax reduction", fp8 && r->amax_reduce != AMAX_NONE ? "fp32" : "-", scale);
        ROW(6, "working weight", dtype_name(r->gemm.dt[STATE_WEIGHT]), "linear layers");
        snprintf(note, sizeof note, "row-wise %s, transposed %s", dtype_name(r->fp8_row), dtype_name(r->fp8_col));
        ROW(6, "cached FP8 weight copies", fp8 ? "e4m3/e5m2" : "-", note);
        ROW(6, "master weight", dtype_name(r->gemm.dt[STATE_MASTER]),
            (r->gemm.scaled_mask >> STATE_MASTER) & 1 ? "with a per-tensor scale" : "-");
        ROW(6, "main gradient", dtype_name(r->gemm.dt[STATE_GRAD]),
            (r->gemm.scaled_mask >> STATE_GRAD) & 1 ? "with a per-tensor scale" : "-");
        snprintf(note, sizeof note, "reduced in %s; parameters gathered in %s", dtype_name(r->comm_dp_grad),
                 dtype_name(r->comm_param_gather));
        ROW(6, "data-parallel communication", dtype_name(r->comm_dp_grad), note);
        ROW(6, "Adam first moment m", dtype_name(r->gemm.dt[STATE_M]),
            (r->gemm.scaled_mask >> STATE_M) & 1 ? "with a per-tensor scale" : "-");
        ROW(6, "Adam second moment v", dtype_name(r->gemm.dt[STATE_V]),
            dtype_is_fp8(r->gemm.dt[STATE_V]) ? "FP8 v diverges (FP8-LM Table 6)" : "-");
#undef ROW
    }
    return t;
}

/* ---- Table 5 ------------------------------------------------------------------------------------------ */

enum { F_MODEL, F_LAYOUT, F_COLUMN, F_RECIPE, F_METRIC, F_UNIT, F_PUB, F_PRED, F_ERR, F_TOL, F_WITHIN, F_COUNT };

static Table *t5_new(void)
{
    const TableCol cols[F_COUNT] = {
        [F_MODEL] = {"model", NULL, NULL, TC_STR, 0, TF_KEY},
        [F_LAYOUT] = {"layout", NULL, NULL, TC_STR, 0, TF_KEY},
        [F_COLUMN] = {"column", "published as", NULL, TC_STR, 0, 0},
        [F_RECIPE] = {"recipe", "predicted with", NULL, TC_STR, 0, TF_KEY},
        [F_METRIC] = {"metric", NULL, NULL, TC_STR, 0, TF_KEY},
        [F_UNIT] = {"unit", NULL, NULL, TC_STR, 0, 0},
        [F_PUB] = {"published", NULL, NULL, TC_F64, 1, 0},
        [F_PRED] = {"predicted", NULL, NULL, TC_F64, 2, 0},
        [F_ERR] = {"error_pct", "error", "%", TC_F64, 1, 0},
        [F_TOL] = {"tolerance_pct", "tolerance", "+-%", TC_F64, 0, 0},
        [F_WITHIN] = {"within", NULL, NULL, TC_STR, 0, 0},
    };
    return table_new(cols, F_COUNT);
}

/* One figure as a row: published, predicted, the error against the published figure, and the check. */
static void t5_row(Table *t, const T5Figure *f)
{
    const char *keys[F_PUB] = {[F_MODEL] = f->model,   [F_LAYOUT] = f->layout, [F_COLUMN] = f->column,
                               [F_RECIPE] = f->recipe, [F_METRIC] = f->metric, [F_UNIT] = f->unit};
    table_row(t);
    for (int k = 0; k < F_PUB; k++) table_str(t, k, keys[k]);
    table_f64(t, F_PUB, f->published);
    table_f64(t, F_PRED, f->predicted);
    if (f->derived) { /* a sign, not an error */
        table_str(t, F_WITHIN, f->verdict == VERDICT_OK ? "yes (TE above BF16)" : "no");
        return;
    }
    table_f64(t, F_ERR, 100.0 * check_rel_err(f->predicted, f->published));
    if (f->tol > 0) {
        table_f64(t, F_TOL, 100.0 * f->tol);
        table_str(t, F_WITHIN, f->verdict == VERDICT_OK ? "yes" : "no");
    } else {
        table_str(t, F_WITHIN, "info");
    }
}

Status seed_table5(const Catalog *c, const char *text, size_t len, const char *fname, Table **out, SeedCheck *chk,
                   Err *e)
{
    *out = NULL;
    T5Figure *f = NULL;
    int n = 0;
    Status st = check_table5(c, text, len, fname, &f, &n, chk, e);
    if (st) return st;
    Table *t = t5_new();
    for (int i = 0; t && i < n; i++) t5_row(t, &f[i]);
    free(f);
    if (!t) return err_set(e, ST_NOMEM, "out of memory");
    *out = t;
    return ST_OK;
}
