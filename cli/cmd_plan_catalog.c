/* cli/cmd_plan_catalog.c — finding and loading models/ (catalog/catalog_find.h) for a subcommand, and
 * `fp8plan models|gpus|recipes|stacks`. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_find.h"
#include "cli/cmd_plan.h"

int plan_catalog_find(const char *cmd, const char *dir, char *found, size_t size)
{
    Err e;
    return catalog_find(dir, found, size, &e) ? cli_fail(cmd, &e) : 0;
}

int plan_catalog_load(const char *cmd, const char *dir, Catalog **out)
{
    Err e;
    return catalog_load(dir, out, &e) ? cli_fail(cmd, &e) : 0;
}

/* ---- listings ----------------------------------------------------------------------------------------- */

typedef enum { LIST_MODELS, LIST_GPUS, LIST_RECIPES, LIST_STACKS } ListKind;

#define LIST_COLUMNS_HELP                                                                                \
    "\n"                                                                                                 \
    "  --columns A,B,...  only these columns, in this order (names as in --format csv's header), e.g.\n" \
    "                     --columns name,source; text wider than 100 columns wraps and splits otherwise\n"

static const char *const list_help[] = {
    [LIST_MODELS] = "usage: fp8plan models [--columns A,B,...] [--format table|csv|json] [-o FILE] [--catalog DIR]\n"
                    "\n"
                    "The models in models.csv: shape, parameter count and source.\n" LIST_COLUMNS_HELP,
    [LIST_GPUS] = "usage: fp8plan gpus [--columns A,B,...] [--format table|csv|json] [-o FILE] [--catalog DIR]\n"
                  "\n"
                  "The GPUs in gpus.csv: compute capability, memory, dense peak rates, link bandwidths, "
                  "source.\n" LIST_COLUMNS_HELP,
    [LIST_RECIPES] = "usage: fp8plan recipes [--columns A,B,...] [--format table|csv|json] [-o FILE] [--catalog DIR]\n"
                     "\n"
                     "The precision recipes in recipes.csv: dtype of every state, FP8 copies, GEMM formats,\n"
                     "scaling, communication dtypes, minimum SM and source.\n" LIST_COLUMNS_HELP,
    [LIST_STACKS] =
        "usage: fp8plan stacks [--format table|csv|json] [-o FILE] [--catalog DIR]\n"
        "\n"
        "The training software stacks in stacks.csv: attention kernel, SwiGLU fusion, main-gradient\n"
        "dtype, FP8 weight caching, kernel fusion and launch floor, overlaps, allocator reserve,\n"
        "whether the values are measured on a GPU, and source; alias: a second name that says what the\n"
        "row is (nvidia-recipes, megatron-lm-defaults). --stack NAME (or its alias) picks one.\n" LIST_COLUMNS_HELP,
};

static Table *models_table(const Catalog *c)
{
    const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"params", NULL, NULL, TC_U64, 0, TF_GROUP},
        {"active_params", "active", NULL, TC_U64, 0, TF_GROUP},
        {"experts", NULL, "top-k", TC_STR, 0, 0},
        {"layers", NULL, NULL, TC_U64, 0, 0},
        {"hidden", NULL, NULL, TC_U64, 0, 0},
        {"ffn_hidden", NULL, NULL, TC_U64, 0, 0},
        {"heads", NULL, NULL, TC_U64, 0, 0},
        {"kv_heads", NULL, NULL, TC_U64, 0, 0},
        {"head_dim", NULL, NULL, TC_U64, 0, 0},
        {"vocab", NULL, NULL, TC_U64, 0, 0},
        {"seq_len", NULL, NULL, TC_U64, 0, 0},
        {"norm", NULL, NULL, TC_STR, 0, 0},
        {"mlp", NULL, NULL, TC_STR, 0, 0},
        {"position", NULL, NULL, TC_STR, 0, 0},
        {"tied_embeddings", "tied", NULL, TC_STR, 0, 0},
        {"linear_bias", "bias", NULL, TC_STR, 0, 0},
        {"source", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    for (int i = 0; i < c->nmodels; i++) {
        const ModelSpec *m = &c->models[i];
        ModelParams mp;
        if (model_params(m, &mp)) mp.total = mp.active = 0;
        char moe[48] = "-";
        if (spec_is_moe(m))
            snprintf(moe, sizeof moe, "%u/%u%s", m->experts, m->experts_per_token, m->shared_experts ? "+shared" : "");
        table_row(t);
        int k = 0;
        table_str(t, k++, m->name);
        table_u64(t, k++, mp.total);
        table_u64(t, k++, mp.active);
        table_str(t, k++, moe);
        table_u64(t, k++, m->layers);
        table_u64(t, k++, m->hidden);
        table_u64(t, k++, m->ffn_hidden);
        table_u64(t, k++, m->heads);
        table_u64(t, k++, m->kv_heads);
        table_u64(t, k++, m->head_dim);
        table_u64(t, k++, m->vocab);
        table_u64(t, k++, m->seq_len);
        table_str(t, k++, norm_name(m->norm));
        table_str(t, k++, mlp_name(m->mlp));
        table_str(t, k++, pos_name(m->pos));
        table_str(t, k++, m->tied_embeddings ? "yes" : "no");
        table_str(t, k++, m->linear_bias ? "yes" : "no");
        table_str(t, k++, m->source);
    }
    return t;
}

static Table *gpus_table(const Catalog *c)
{
    const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"compute_capability", "sm", NULL, TC_STR, 0, 0},
        {"hbm_bytes", "memory", "B", TC_U64, 0, TF_GROUP},
        {"hbm_gbps", "HBM", "GB/s", TC_F64, 0, 0},
        {"bf16_tflops", "BF16", "TFLOP/s", TC_F64, 0, 0},
        {"fp8_tflops", "FP8", "TFLOP/s", TC_F64, 0, 0},
        {"fp32_tflops", "FP32", "TFLOP/s", TC_F64, 1, 0},
        {"sms", "SMs", NULL, TC_U64, 0, 0},
        {"mamf_bf16_tflops", "MAMF BF16", "TFLOP/s", TC_F64, 1, 0},
        {"mamf_fp8_tflops", "MAMF FP8", "TFLOP/s", TC_F64, 1, 0},
        {"intra_link", "link", NULL, TC_STR, 0, 0},
        {"intra_node_gbps", "intra", "GB/s", TC_F64, 0, 0},
        {"inter_node_gbps", "inter", "GB/s", TC_F64, 0, 0},
        {"gpus_per_node", "per node", NULL, TC_U64, 0, 0},
        {"source", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    for (int i = 0; i < c->ngpus; i++) {
        const GpuSpec *g = &c->gpus[i];
        table_row(t);
        table_str(t, 0, g->name);
        table_strf(t, 1, "%u.%u", g->sm / 10, g->sm % 10);
        table_u64(t, 2, g->hbm_bytes);
        table_f64(t, 3, g->hbm_bw / 1e9);
        table_f64(t, 4, g->flops_bf16 / 1e12);
        table_f64(t, 5, g->flops_fp8 / 1e12);
        table_f64(t, 6, g->flops_fp32 / 1e12);
        table_u64(t, 7, g->sms);
        table_f64(t, 8, g->mamf_bf16 / 1e12);
        table_f64(t, 9, g->mamf_fp8 / 1e12);
        table_str(t, 10, link_name(g->link));
        table_f64(t, 11, g->intra_bw / 1e9);
        table_f64(t, 12, g->inter_bw / 1e9);
        table_u64(t, 13, g->gpus_per_node);
        table_str(t, 14, g->source);
    }
    return t;
}

static void states_str(unsigned mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < STATE_COUNT_; s++)
        if (mask & (1u << s)) {
            int n = snprintf(buf + used, size - used, "%s%s", used ? "+" : "", state_name((StateId)s));
            if (n > 0 && used + (size_t)n < size) used += (size_t)n;
        }
    if (!used) snprintf(buf, size, "none");
}

static Table *recipes_table(const Catalog *c)
{
    const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"state_bytes_per_param", "B/param", NULL, TC_F64, 3, 0},
        {"weight", NULL, NULL, TC_STR, 0, 0},
        {"fp8_rowwise", "fp8 row", NULL, TC_STR, 0, 0},
        {"fp8_colwise", "fp8 col", NULL, TC_STR, 0, 0},
        {"master", NULL, NULL, TC_STR, 0, 0},
        {"grad", NULL, NULL, TC_STR, 0, 0},
        {"adam_m", "m", NULL, TC_STR, 0, 0},
        {"adam_v", "v", NULL, TC_STR, 0, 0},
        {"dist_opt_shards", "dist-opt shards", NULL, TC_STR, 0, 0},
        {"gemm", "gemm fwd/bwd", NULL, TC_STR, 0, 0},
        {"scaling", NULL, NULL, TC_STR, 0, 0},
        {"granularity", "gran act/w", NULL, TC_STR, 0, 0},
        {"comm", "comm dp/gather/ag/rs", NULL, TC_STR, 0, 0},
        {"saved_gemm_input", "saved x", NULL, TC_STR, 0, 0},
        {"fp8_linear", "fp8 linear", NULL, TC_STR, 0, 0},
        {"min_sm", NULL, NULL, TC_STR, 0, 0},
        {"source", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    for (int i = 0; i < c->nrecipes; i++) {
        const Recipe *r = &c->recipes[i];
        char sh[64];
        states_str(r->gemm.shard_mask, sh, sizeof sh);
        table_row(t);
        int k = 0;
        table_str(t, k++, r->name);
        table_f64(t, k++, recipe_state_bytes_per_param(&r->gemm, 0, 1, NULL));
        table_str(t, k++, dtype_name(r->gemm.dt[STATE_WEIGHT]));
        table_str(t, k++, dtype_name(r->fp8_row));
        table_str(t, k++, dtype_name(r->fp8_col));
        table_str(t, k++, dtype_name(r->gemm.dt[STATE_MASTER]));
        table_str(t, k++, dtype_name(r->gemm.dt[STATE_GRAD]));
        table_str(t, k++, dtype_name(r->gemm.dt[STATE_M]));
        table_str(t, k++, dtype_name(r->gemm.dt[STATE_V]));
        table_str(t, k++, sh);
        table_strf(t, k++, "%s/%s", dtype_name(r->gemm_fwd), dtype_name(r->gemm_bwd));
        if (r->scaling == SCALING_DELAYED)
            table_strf(t, k++, "delayed(%u)", r->amax_history);
        else
            table_str(t, k++, scaling_name(r->scaling));
        table_strf(t, k++, "%s/%s", gran_name(r->act_gran), gran_name(r->weight_gran));
        table_strf(t, k++, "%s/%s/%s/%s", dtype_name(r->comm_dp_grad), dtype_name(r->comm_param_gather),
                   dtype_name(r->comm_tp_ag), dtype_name(r->comm_tp_rs));
        table_str(t, k++, dtype_name(r->saved_input));
        table_str(t, k++, fp8_linear_name(r->linear));
        table_strf(t, k++, "%u.%u", r->min_sm / 10, r->min_sm % 10);
        table_str(t, k++, r->source);
    }
    return t;
}

static Table *stacks_table(const Catalog *c)
{
    const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"alias", NULL, NULL, TC_STR, 0, 0},
        {"attention", NULL, NULL, TC_STR, 0, 0},
        {"sequence_parallel", "SP", NULL, TC_STR, 0, 0},
        {"fused_swiglu", "swiglu", NULL, TC_STR, 0, 0},
        {"main_grad", "main grad", NULL, TC_STR, 0, 0},
        {"fp8_weight_cache", "fp8 cache", NULL, TC_STR, 0, 0},
        {"kernel_fusion", "kernels", NULL, TC_STR, 0, 0},
        {"launch_us", "launch", "us", TC_F64, 1, 0},
        {"loss_bytes", "loss", "B/logit", TC_U64, 0, 0},
        {"tp_overlap", "TP ov", NULL, TC_F64, 2, 0},
        {"tp_overlap_on", "TP ov on", NULL, TC_F64, 2, 0},
        {"dp_overlap", "DP ov", NULL, TC_F64, 2, 0},
        {"pp_overlap", "PP ov", NULL, TC_F64, 2, 0},
        {"cp_overlap", "CP ov", NULL, TC_F64, 2, 0},
        {"alloc_reserve", "reserve", NULL, TC_F64, 2, 0},
        {"calibrated", NULL, NULL, TC_STR, 0, 0},
        {"source", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    for (int i = 0; i < c->nstacks; i++) {
        const StackSpec *s = &c->stacks[i];
        table_row(t);
        int k = 0;
        table_str(t, k++, s->name);
        table_str(t, k++, s->alias);
        table_str(t, k++, attn_name(s->attn));
        table_str(t, k++, s->sequence_parallel ? "yes" : "no");
        table_str(t, k++, s->fused_swiglu ? "fused" : "unfused");
        table_str(t, k++, main_grad_name(s->main_grad));
        table_str(t, k++, s->fp8_weight_cache ? "yes" : "no");
        table_str(t, k++, fusion_name(s->fusion));
        table_f64(t, k++, s->launch_s * 1e6);
        table_u64(t, k++, s->loss_bytes);
        table_f64(t, k++, s->overlap_tp);
        table_f64(t, k++, s->overlap_tp_on);
        table_f64(t, k++, s->overlap_dp);
        table_f64(t, k++, s->overlap_pp);
        table_f64(t, k++, s->overlap_cp);
        table_f64(t, k++, s->alloc_reserve);
        table_str(t, k++, s->calibrated ? "yes" : "no");
        table_str(t, k++, s->source);
    }
    return t;
}

/* What a listing's flags fill. */
typedef struct {
    const char *columns; /* --columns A,B,... */
    CliOut out;
    PlanArgs p; /* --catalog (cli/plan_flags.c) */
} ListArgs;

static const CliOpt list_opts[] = {
    {"columns", OPT_STR, offsetof(ListArgs, columns), .arg = "A,B,..."},
    {"out", OPT_BLOCK, offsetof(ListArgs, out), .block = cli_out_opts},
    PLAN_FLAG(offsetof(ListArgs, p), "catalog", 0, 0, NULL, NULL),
    {0},
};

static int list(ListKind kind, const char *cmd, int argc, char **argv)
{
    ListArgs la = {.out = {TABLE_TEXT, NULL}};
    plan_flags_defaults(&la.p);
    int rc = cli_opts_parse(&(CliParse){.cmd = cmd, .opts = list_opts, .help = list_help[kind]}, argc, argv, &la);
    if (rc) return rc < 0 ? 0 : rc;
    const char *dir = la.p.catalog, *columns = la.columns;
    CliOut out = la.out;
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, dir, &cat))) return rc;
    Table *t = kind == LIST_MODELS   ? models_table(cat)
               : kind == LIST_GPUS   ? gpus_table(cat)
               : kind == LIST_STACKS ? stacks_table(cat)
                                     : recipes_table(cat);
    free(cat);
    if (!t) {
        Err e;
        err_set(&e, ST_NOMEM, "out of memory");
        return cli_fail(cmd, &e);
    }
    Err e;
    Table *sel = columns ? table_select(t, columns, &e) : t;
    if (!sel) {
        table_free(t);
        return e.st == ST_USAGE ? cli_usage(cmd, "%s", e.msg) : cli_fail(cmd, &e);
    }
    rc = cli_emit_table(cmd, sel, &out);
    if (sel != t) table_free(sel);
    table_free(t);
    return rc;
}

int cmd_models(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_recipes(int argc, char **argv);
int cmd_models(int argc, char **argv) { return list(LIST_MODELS, "models", argc, argv); }
int cmd_gpus(int argc, char **argv) { return list(LIST_GPUS, "gpus", argc, argv); }
int cmd_recipes(int argc, char **argv) { return list(LIST_RECIPES, "recipes", argc, argv); }
int cmd_stacks(int argc, char **argv);
int cmd_stacks(int argc, char **argv) { return list(LIST_STACKS, "stacks", argc, argv); }
