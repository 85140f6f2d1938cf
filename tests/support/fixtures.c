/* tests/support/fixtures.c — shared planner inputs for tests (see fixtures.h). */
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/fileio.h"

typedef Status (*ParseFn)(Catalog *, const char *, size_t, const char *, Err *);

static void load(Catalog *c, const char *path, ParseFn parse)
{
    char *text;
    size_t len;
    Err e;
    if (file_read_all(path, &text, &len, &e) || parse(c, text, len, path, &e)) {
        fprintf(stderr, "cannot load the catalog: %s\n", e.msg);
        exit(1);
    }
    free(text);
}

Catalog *fx_catalog(void)
{
    Catalog *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "cannot load the catalog: out of memory\n");
        exit(1);
    }
    load(c, "models/models.csv", catalog_parse_models);
    load(c, "models/gpus.csv", catalog_parse_gpus);
    load(c, "models/recipes.csv", catalog_parse_recipes);
    load(c, "models/stacks.csv", catalog_parse_stacks);
    return c;
}

int fx_measured(const Catalog *c, MeasuredRun *runs, int *n)
{
    char *text;
    size_t len;
    Err e;
    if (file_read_all("models/measured.csv", &text, &len, &e)) return fprintf(stderr, "%s\n", e.msg), -1;
    Status st = measured_parse(c, text, len, "models/measured.csv", runs, n, &e);
    free(text);
    if (st) fprintf(stderr, "%s\n", e.msg);
    return st ? -1 : 0;
}

PlanInput fx_headline(const Catalog *c, const char *recipe)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(c, "gpt-175b");
    in.gpu = catalog_gpu(c, "h100-sxm");
    in.recipe = catalog_recipe(c, recipe);
    in.tp = 8, in.pp = 4, in.dp = 4, in.sharding = SHARD_DIST_OPT;
    return in;
}

GpuSpec fx_gpu(void)
{
    GpuSpec g = {.name = "g",
                 .sm = 90,
                 .hbm_bytes = 80ull << 30,
                 .hbm_bw = 3.35e12,
                 .flops_bf16 = 989e12,
                 .flops_fp8 = 1979e12,
                 .flops_fp32 = 67e12,
                 .intra_bw = 450e9,
                 .inter_bw = 50e9,
                 .gpus_per_node = 8};
    return g;
}

Recipe fx_bf16_recipe(const char *name, unsigned shard_mask)
{
    Recipe r = {.gemm_fwd = DT_BF16,
                .gemm_bwd = DT_BF16,
                .comm_dp_grad = DT_FP32,
                .comm_param_gather = DT_BF16,
                .comm_tp_ag = DT_BF16,
                .comm_tp_rs = DT_BF16,
                .comm_ep_dispatch = DT_BF16,
                .comm_ep_combine = DT_BF16,
                .saved_input = DT_BF16,
                .min_sm = 80};
    snprintf(r.name, sizeof r.name, "%s", name);
    StateSet s = {.dt = {DT_BF16, DT_FP32, DT_FP32, DT_FP32, DT_FP32}, .shard_mask = shard_mask};
    r.gemm = r.other = s;
    r.other_comm_dp_grad = DT_FP32;
    r.other_comm_param_gather = DT_BF16;
    return r;
}

Recipe fx_te_recipe(const char *name, unsigned shard_mask)
{
    Recipe r = fx_bf16_recipe(name, shard_mask);
    r.fp8_row = r.fp8_col = DT_E4M3;
    r.gemm_fwd = DT_E4M3, r.gemm_bwd = DT_E5M2;
    r.scaling = SCALING_DELAYED, r.amax_history = 1024, r.amax_reduce = AMAX_ALL;
    r.comm_tp_ag = DT_E4M3, r.saved_input = DT_E4M3, r.min_sm = 89;
    r.linear = LIN_TE;
    return r;
}

ModelSpec fx_tiny_model(void)
{
    ModelSpec m = {.name = "tiny",
                   .layers = 2,
                   .hidden = 8,
                   .ffn_hidden = 32,
                   .heads = 2,
                   .kv_heads = 2,
                   .head_dim = 4,
                   .vocab = 10,
                   .seq_len = 4,
                   .norm = NORM_LAYERNORM,
                   .mlp = MLP_GELU,
                   .pos = POS_LEARNED,
                   .tied_embeddings = 1,
                   .linear_bias = 1};
    return m;
}

PlanInput fx_input(const ModelSpec *m, const GpuSpec *g, const Recipe *r)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r;
    in.vocab_pad = 1;
    return in;
}
