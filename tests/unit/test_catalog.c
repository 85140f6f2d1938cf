/* tests/unit/test_catalog.c — the shipped catalog, published parameter counts,
 * and strict CSV parsing: every bad cell names file, row and column. */
#include <stdlib.h>

#include "catalog/catalog.h"
#include "catalog/routing.h"
#include "planner/plan.h"
#include "test.h"
#include "util/fileio.h"

static Catalog *cat;

static Status load_file(const char *path, Status (*parse)(Catalog *, const char *, size_t, const char *, Err *), Err *e)
{
    char *buf;
    size_t len;
    Status st = file_read_all(path, &buf, &len, e);
    if (st) return st;
    st = parse(cat, buf, len, path, e);
    free(buf);
    return st;
}

static void test_shipped_catalog_loads(void)
{
    Err e = {0};
    CHECKF(load_file("models/models.csv", catalog_parse_models, &e) == ST_OK, "%s", e.msg);
    CHECKF(load_file("models/gpus.csv", catalog_parse_gpus, &e) == ST_OK, "%s", e.msg);
    CHECKF(load_file("models/recipes.csv", catalog_parse_recipes, &e) == ST_OK, "%s", e.msg);
    const char *models[] = {"gpt-7b",     "gpt-13b",    "gpt-175b",  "gpt2-124m",  "gpt2-1.5b",  "llama2-7b",
                            "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) CHECKF(catalog_model(cat, models[i]), "%s", models[i]);
    const char *gpus[] = {"h100-sxm", "h100-pcie", "h200", "h800", "a100-sxm", "l40s", "b200"};
    for (size_t i = 0; i < sizeof gpus / sizeof *gpus; i++) CHECKF(catalog_gpu(cat, gpus[i]), "%s", gpus[i]);
    const char *recipes[] = {"bf16",         "megatron-bf16", "te-fp8",      "te-fp8-current",
                             "te-fp8-param", "msamp-o1",      "fp8lm",       "msamp-o3",
                             "deepseek-v3",  "mxfp8",         "mxfp8-param", "te-fp8-current-param"};
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++)
        CHECKF(catalog_recipe(cat, recipes[i]), "%s", recipes[i]);
    CHECK(catalog_model(cat, "GPT-7B") != NULL); /* names are case-insensitive */
    CHECK(catalog_model(cat, "gpt-8b") == NULL);
    char names[2048];
    catalog_recipe_names(cat, names, sizeof names);
    CHECK_CONTAINS(names, "bf16, megatron-bf16, te-fp8");
    /* recipe details the planner relies on */
    const Recipe *f = catalog_recipe(cat, "fp8lm");
    CHECK(f->other.dt[STATE_GRAD] == DT_FP32); /* non-GEMM params on the BF16 path (megatron-bf16) */
    CHECK(f->other_comm_dp_grad == DT_FP32);
    CHECK(catalog_gpu(cat, "h100-sxm")->sm == 90);
    /* the 96 GB 500 W H100's matmul ceilings: torchao's roofline (pytorch/ao d8af7d7b8 .. 104f01a85) takes one
     * pct_achievable_gemm_tops, 0.78, for BF16 and FP8 alike: 989 x 0.78 = 771.42 -> 771.4 TFLOPS, 1979 x 0.78 =
     * 1543.62 -> 1543.6; the ratio FP8 / BF16 is then the peaks' 1979 / 989 = 2.001, not 1543.6 / 682.4 = 2.262 */
    const GpuSpec *tg = catalog_gpu(cat, "h100-hbm2e-96g");
    CHECK(tg != NULL);
    if (tg) {
        CHECK_REL(tg->mamf_bf16, 771.4e12, 1e-9);
        CHECK_REL(tg->mamf_fp8, 1543.6e12, 1e-9);
        CHECK_NEAR(tg->mamf_bf16 / tg->flops_bf16, 0.78, 1e-4); /* 771.4 / 989 = 0.77998 */
        CHECK_NEAR(tg->mamf_fp8 / tg->flops_fp8, 0.78, 1e-4);   /* 1543.6 / 1979 = 0.77999 */
    }
    CHECK(catalog_gpu(cat, "a100-sxm")->flops_fp8 == 0);
    CHECK(catalog_recipe(cat, "mxfp8")->min_sm == 100);
    /* Megatron-Bridge's FP8 parameters (fp8_param_gather): the working weight is the FP8 tensor, no BF16 copy; the
     * per-tensor parameters are all-gathered in FP8, the MXFP8 ones in BF16 (Megatron-Core gathers them in a BF16
     * view of the gradient buffer, reuse_grad_buf_for_mxfp8_param_ag); scaling as the recipe they derive from */
    static const struct {
        const char *param, *base;
        Dtype gather;
    } fp8_params[] = {{"mxfp8-param", "mxfp8", DT_BF16}, {"te-fp8-current-param", "te-fp8-current", DT_E4M3}};
    for (int i = 0; i < 2; i++) {
        const Recipe *p = catalog_recipe(cat, fp8_params[i].param), *b = catalog_recipe(cat, fp8_params[i].base);
        CHECK(p->gemm.dt[STATE_WEIGHT] == DT_E4M3 && b->gemm.dt[STATE_WEIGHT] == DT_BF16);
        CHECK(p->comm_param_gather == fp8_params[i].gather && b->comm_param_gather == DT_BF16);
        CHECK(p->scaling == b->scaling && p->act_gran == b->act_gran && p->min_sm == b->min_sm);
    }
}

/* Parameter counts the model cards publish. */
static void test_param_counts(void)
{
    const struct {
        const char *name;
        uint64_t params;
    } known[] = {
        {"gpt2-124m", 124439808ull},    /* GPT-2 small */
        {"gpt2-1.5b", 1557611200ull},   /* GPT-2 XL */
        {"llama2-7b", 6738415616ull},   /* Llama-2-7b-hf */
        {"llama3-8b", 8030261248ull},   /* Meta-Llama-3-8B */
        {"llama2-70b", 68976648192ull}, /* Llama-2-70b-hf */
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        const ModelSpec *m = catalog_model(cat, known[i].name);
        uint64_t n = 0;
        CHECK(m && model_param_count(m, &n) == 0);
        CHECKF(n == known[i].params, "%s: %llu != %llu", known[i].name, (unsigned long long)n,
               (unsigned long long)known[i].params);
    }
    /* on one GPU with the vocabulary padded to 50304, GPT-2 small holds the 124,475,904 parameters llm.c allocates */
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(cat, "gpt2-124m"), in.gpu = catalog_gpu(cat, "h100-sxm");
    in.recipe = catalog_recipe(cat, "megatron-bf16");
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.vocab_padded, 50304);
    CHECK_EQ_U64(p.params_gpu, 124475904ull);
}

/* ---- bad input ---------------------------------------------------------------------------------------- */

static const char *model_header = "name,layers,hidden,ffn_hidden,heads,kv_heads,head_dim,vocab,seq_len,norm,mlp,"
                                  "position,tied_embeddings,linear_bias,source,qk_norm,experts,experts_per_token,"
                                  "shared_experts,expert_ffn_hidden,dense_layers,router,router_groups,"
                                  "router_group_topk,q_lora_rank,kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,"
                                  "v_head_dim,mtp_layers\n";
/* the 15 MoE / latent-attention / MTP cells of a dense model, empty (tests/unit/test_moe_params.c fills them) */
#define DENSE ",,,,,,,,,,,,,,,"

static void expect_model_error(const char *rows, Status want, const char *part)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", model_header, rows);
    Catalog *c = calloc(1, sizeof *c);
    Err e = {0};
    Status st = catalog_parse_models(c, text, strlen(text), "m.csv", &e);
    CHECKF(st == want, "status %d for %s", st, rows);
    CHECK_CONTAINS(e.msg, part);
    CHECK_EQ_INT(c->nmodels, want == ST_OK ? 1 : 0);
    free(c);
}

static void test_model_errors(void)
{
    const char *ok = "a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n";
    Catalog *c = calloc(1, sizeof *c);
    Err e = {0};
    char text[1024];
    snprintf(text, sizeof text, "\xEF\xBB\xBF%s%s", model_header, ok); /* a byte-order mark is fine */
    CHECKF(catalog_parse_models(c, text, strlen(text), "m.csv", &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(c->nmodels, 1);
    free(c);

    /* a name is a CLI word: letters, digits, '.', '_' and '-' only; a slash is refused (a space below), naming it */
    expect_model_error("a/b,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA,
                       "m.csv: row 2, column name: 'a/b' may only hold letters, digits, '.', '_' and '-'");
    /* a dense model (no experts) names no first dense layers */
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src,,,,,,3,,,,,,,,,\n", ST_DATA,
                       "m.csv: row 2, column dense_layers");
    expect_model_error("a,-1,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA,
                       "m.csv: row 2, column layers: '-1' is negative");
    expect_model_error("a,2,1e400,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA,
                       "column hidden");
    expect_model_error("a,2,8,nan,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA,
                       "column ffn_hidden");
    expect_model_error("a,2,8,32,2,2,4,99999999999999999999,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n",
                       ST_OVERFLOW, "column vocab");
    expect_model_error("a,0,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA, "out of range");
    expect_model_error("a,2,8,32,2,3,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA, "column kv_heads");
    expect_model_error("a,2,8,32,2,2,4,10,4,batchnorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA,
                       "column norm: 'batchnorm'");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,maybe,yes,src" DENSE "\n", ST_DATA,
                       "tied_embeddings");
    expect_model_error(ok, ST_OK, "");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes" DENSE "\n", ST_DATA,
                       "row 2: 29 fields, but the header has 30"); /* ragged */
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n"
                       "b,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src,extra" DENSE "\n",
                       ST_DATA, "row 3: 31 fields");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n"
                       "A,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n",
                       ST_DATA, "row 3, column name: 'A' repeats row 2");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,s\"rc" DENSE "\n", ST_DATA,
                       "row 2: malformed CSV");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,\"unterminated" DENSE "\n", ST_DATA,
                       "malformed CSV");
    expect_model_error("a b,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes,src" DENSE "\n", ST_DATA, "column name");
    expect_model_error("a,2,8,32,2,2,4,10,4,layernorm,gelu,learned,yes,yes," DENSE "\n", ST_DATA,
                       "column source: empty");
    expect_model_error("", ST_DATA, "no data rows");
    /* every cell in range, but the parameters pass 2^64: 65536 layers x (attention 4 x h^2 = 2^50 with
     * h = 2^24, plus the MLP 2 x h x F = 2^51 with F = 2^26) = 2^16 x 3 x 2^50 = 3 x 2^66 > 2^64. It was
     * listed with 0 parameters; refused at load, naming file, row and column. */
    expect_model_error("p3,65536,16777216,67108864,65536,65536,256,50257,2048,layernorm,gelu,learned,yes,yes,src" DENSE
                       "\n",
                       ST_DATA, "m.csv: row 2, column hidden: '16777216': the parameter count passes 2^64");

    Catalog *c2 = calloc(1, sizeof *c2);
    const char *bad_header = "name,layers,hidden\na,1,2\n";
    CHECK(catalog_parse_models(c2, bad_header, strlen(bad_header), "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "m.csv: row 1: missing column 'ffn_hidden'");
    const char *extra = "name,layers,colour\na,1,2\n";
    CHECK(catalog_parse_models(c2, extra, strlen(extra), "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "unknown column 'colour'");
    CHECK(catalog_parse_models(c2, "", 0, "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "empty file");
    free(c2);
}

static void test_gpu_errors(void)
{
    /* columns: name,cc,sms,hbm_bytes,hbm_gbps,bf16,fp8,fp32,mamf_bf16,mamf_fp8,sustained,link,intra,inter,per node */
    const char *head = "name,compute_capability,sms,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,"
                       "mamf_bf16_tflops,mamf_fp8_tflops,sustained,intra_link,intra_node_gbps,inter_node_gbps,"
                       "gpus_per_node,source\n";
    const struct {
        const char *row, *part;
    } cases[] = {
        {"g,nine,132,80,1,1,1,1,1,1,1,nvlink,1,1,8,s\n", "column compute_capability: 'nine'"},
        {"g,8.0,132,80,1,1,1,1,1,1,1,nvlink,1,1,8,s\n", "no FP8 tensor cores"},
        {"g,9.0,132,-5,1,1,1,1,1,1,1,nvlink,1,1,8,s\n", "column hbm_bytes"},
        {"g,9.0,132,80,1,0,1,1,1,1,1,nvlink,1,1,8,s\n", "column bf16_tflops: '0' must be positive"},
        {"g,9.0,132,80,0,1,1,1,1,1,1,nvlink,1,1,8,s\n", "column hbm_gbps: '0' must be positive"},
        {"g,9.0,132,80,1,1,inf,1,1,1,1,nvlink,1,1,8,s\n", "column fp8_tflops"},
        {"g,9.0,132,80,1,1,1,1,1,1,1,nvlink,1,1,0,s\n", "column gpus_per_node"},
        {"g,9.0,0,80,1,1,1,1,1,1,1,nvlink,1,1,8,s\n", "column sms: '0' is out of range"},
        {"g,9.0,132,80,1,1,1,1,2,1,1,nvlink,1,1,8,s\n", "column mamf_bf16_tflops: '2' is above the BF16 peak"},
        {"g,9.0,132,80,1,1,2,1,1,3,1,nvlink,1,1,8,s\n", "column mamf_fp8_tflops"},
        {"g,9.0,132,80,1,1,2,1,1,0,1,nvlink,1,1,8,s\n", "column mamf_fp8_tflops"},
        {"g,9.0,132,80,1,1,1,1,1,1,1.5,nvlink,1,1,8,s\n", "column sustained: '1.5' is out of range"},
        {"h100 sxm,9.0,132,80,1,1,1,1,1,1,1,nvlink,1,1,8,s\n", "column name: 'h100 sxm' may only hold letters, digits"},
        {"g,9.0,132,80,1,1,1,1,1,1,1,infiniband,1,1,8,s\n",
         "column intra_link: 'infiniband' is not nvlink, pcie or host"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, cases[i].row);
        Catalog *c = calloc(1, sizeof *c);
        Err e = {0};
        CHECK(catalog_parse_gpus(c, text, strlen(text), "g.csv", &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "g.csv: row 2");
        CHECK_CONTAINS(e.msg, cases[i].part);
        free(c);
    }
}

static void test_recipe_errors(void)
{
    char *buf;
    size_t len;
    Err e = {0};
    CHECK(file_read_all("models/recipes.csv", &buf, &len, &e) == ST_OK);
    /* take the header and the megatron-bf16 row, then break one cell at a time */
    char *nl1 = strchr(buf, '\n'), *nl2 = strchr(nl1 + 1, '\n'), *nl3 = strchr(nl2 + 1, '\n');
    char head[1024], row[2048];
    snprintf(head, sizeof head, "%.*s", (int)(nl1 - buf + 1), buf);
    snprintf(row, sizeof row, "%.*s", (int)(nl3 - nl2 - 1), nl2 + 1); /* megatron-bf16, no newline */
    free(buf);
    CHECK_CONTAINS(row, "megatron-bf16,bf16,none,none,fp32");
    const struct {
        const char *from, *to, *part;
    } cases[] = {
        {"megatron-bf16,bf16,none,none,fp32", "megatron-bf16,bf16,none,none,fp12",
         "column master: unknown dtype 'fp12'"},
        {"megatron-bf16,bf16,none,none,fp32", "megatron-bf16,e8m0,none,none,fp32",
         "column weight: dtype 'e8m0' is not allowed here (expected fp32, fp16, bf16, e4m3 or e5m2 or none)"},
        /* a gradient must be kept: none is not offered for it */
        {"megatron-bf16,bf16,none,none,fp32,fp32", "megatron-bf16,bf16,none,none,fp32,none",
         "column grad: dtype 'none' is not allowed here (expected fp32, fp16, bf16, e4m3 or e5m2)"},
        /* an FP8 copy is FP8 or none */
        {"megatron-bf16,bf16,none", "megatron-bf16,bf16,bf16",
         "column fp8_rowwise: dtype 'bf16' is not allowed here (expected e4m3, e5m2 or none)"},
        {"master+m+v", "master+mom+v", "unknown state 'mom'"},
        {",megatron-bf16,bf16,bf16,none", ",nosuch,bf16,bf16,none", "column other_params: 'nosuch'"},
        {",bf16,bf16,none,", ",e4m3,bf16,none,", "column scaling: 'none': FP8 GEMMs need delayed or current scaling"},
        {"megatron-bf16,bf16,none,none", "megatron-bf16,bf16,e4m3,none", "FP8 weight copies without FP8 GEMMs"},
        {",8.0,", ",8,", "column min_sm"},
        {",bf16,none,8.0,", ",bf16,te,8.0,", "column fp8_linear: 'te': none exactly when"},
        {",bf16,none,8.0,", ",bf16,cutlass,8.0,", "column fp8_linear: 'cutlass' is not none, te, torchao"},
        /* other_params names the row itself: Adam m in E4M3 is an FP8 state the embeddings and norms must not
         * take — refused for that, although its master (no weight: the GEMMs read it) is sharded too */
        {"megatron-bf16,bf16,none,none,fp32,fp32,fp32,fp32", "megatron-bf16,none,none,none,fp32,fp32,e4m3,fp32",
         "column other_params: 'megatron-bf16' keeps scaled or FP8 states"},
        /* the recipe's name and the other_params one it names are CLI words: letters, digits, '.', '_', '-' */
        {"megatron-bf16,bf16,none,none,fp32", "megatron bf16,bf16,none,none,fp32",
         "column name: 'megatron bf16' may only hold letters, digits, '.', '_' and '-'"},
        {",megatron-bf16,bf16,bf16,none", ",megatron+bf16,bf16,bf16,none",
         "column other_params: 'megatron+bf16' may only hold letters, digits"},
        /* no FP8 state, but no weight either: the other parameters' GEMMs would read a sharded master */
        {"megatron-bf16,bf16,none,none,fp32", "megatron-bf16,none,none,none,fp32",
         "column other_params: 'megatron-bf16' shards a master the GEMMs read"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char bad[2048], text[4096];
        const char *at = strstr(row, cases[i].from);
        CHECKF(at != NULL, "case %zu: '%s' not in row", i, cases[i].from);
        if (!at) continue;
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - row), row, cases[i].to, at + strlen(cases[i].from));
        snprintf(text, sizeof text, "%s%s\n", head, bad);
        Catalog *c = calloc(1, sizeof *c);
        Status st = catalog_parse_recipes(c, text, strlen(text), "r.csv", &e);
        CHECKF(st == ST_DATA, "case %zu: status %d", i, st);
        CHECK_CONTAINS(e.msg, "r.csv: row 2");
        CHECK_CONTAINS(e.msg, cases[i].part);
        CHECK_EQ_INT(c->nrecipes, 0);
        free(c);
    }
}

/* A run's routing log (catalog/routing.h) summed per rank and expert over its steps and layers: 2 steps x 2 layers
 * (0 and 3) x 2 ranks x 2 experts. Rank 0 sends expert 0 1 + 2 + 3 + 4 = 10 and expert 1 4 x 1 = 4; rank 1 expert 0
 * 4 x 5 = 20 and expert 1 100 + 0 + 0 + 0. Then every way the file can be wrong, named by row and column. */
static void test_routing_log(void)
{
    static const char good[] = "step,layer,rank,expert,token_copies\n"
                               "7,0,0,0,1\n7,0,0,1,1\n7,0,1,0,5\n7,0,1,1,100\n"
                               "7,3,0,0,2\n7,3,0,1,1\n7,3,1,0,5\n7,3,1,1,0\n"
                               "8,0,0,0,3\n8,0,0,1,1\n8,0,1,0,5\n8,0,1,1,0\n"
                               "8,3,0,0,4\n8,3,0,1,1\n8,3,1,0,5\n8,3,1,1,0\n";
    RoutingLog r;
    Err e = {0};
    CHECKF(routing_log_parse(good, strlen(good), "r.csv", &r, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(r.steps, 2);
    CHECK_EQ_INT(r.layers, 2);
    CHECK_EQ_INT(r.ranks, 2);
    CHECK_EQ_INT(r.experts, 2);
    if (r.rows) {
        CHECK_EQ_U64(r.rows[0], 10);
        CHECK_EQ_U64(r.rows[1], 4);
        CHECK_EQ_U64(r.rows[2], 20);
        CHECK_EQ_U64(r.rows[3], 100);
    }
    /* per layer (a pipeline stage's ranks route its own layers), summed over the 2 steps: layer 0 rank 0 1 + 3 = 4
     * and 1 + 1 = 2, rank 1 5 + 5 = 10 and 100 + 0; layer 3 rank 0 2 + 4 = 6 and 2, rank 1 10 and 0 */
    CHECK(r.layer_ids && r.layer_rows);
    if (r.layer_ids && r.layer_rows) {
        CHECK_EQ_INT(r.layer_ids[0], 0);
        CHECK_EQ_INT(r.layer_ids[1], 3);
        static const uint64_t want[8] = {4, 2, 10, 100, 6, 2, 10, 0};
        for (int i = 0; i < 8; i++) CHECK_EQ_U64(r.layer_rows[i], want[i]);
    }
    routing_log_free(&r);
    const struct {
        const char *from, *to, *part;
    } cases[] = {
        {"8,3,1,1,0\n", "", "15 rows for 2 steps x 2 layers x 2 ranks x 2 experts (16)"},
        {"8,3,1,1,0\n", "8,3,1,0,0\n", "row 17: step 8, layer 3, rank 1, expert 0 appears twice"},
        {"7,0,1,1,100", "7,0,1,1,1e2", "row 5, column token_copies: '1e2'"},
        {"7,0,1,1,100", "7,0,1,1,-1", "row 5, column token_copies: '-1'"},
        {"7,0,1,1,100", "7,0,1,x,100", "row 5, column expert: 'x'"},
        {"7,0,1,1,100", "7,0,4096,1,100", "row 5, column rank: '4096' is above 4095"},
        {"step,layer,rank,expert,token_copies", "step,layer,rank,expert,copies", "copies"},
        {"7,0,0,0,1\n", "7,0,0,0,18446744073709551615\n", "the token copies sum past 2^64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        const char *at = strstr(good, cases[i].from);
        CHECKF(at != NULL, "case %zu", i);
        if (!at) continue;
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, cases[i].to, at + strlen(cases[i].from));
        Status st = routing_log_parse(text, strlen(text), "r.csv", &r, &e);
        CHECKF(st == ST_DATA, "case %zu: status %d", i, st);
        CHECKF(strstr(e.msg, "r.csv") && strstr(e.msg, cases[i].part), "case %zu: %s", i, e.msg);
        CHECK(r.rows == NULL);
        routing_log_free(&r);
    }
    CHECK_EQ_INT(routing_log_parse("step,layer,rank,expert,token_copies\n", 36, "r.csv", &r, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "r.csv: no data rows after the header");
    CHECK_EQ_INT(routing_log_load("no/such/routing.csv", &r, &e), ST_NOINPUT);
    CHECK_CONTAINS(e.msg, "no/such/routing.csv");
}

int main(void)
{
    cat = calloc(1, sizeof *cat);
    RUN(test_shipped_catalog_loads);
    RUN(test_param_counts);
    RUN(test_model_errors);
    RUN(test_gpu_errors);
    RUN(test_recipe_errors);
    RUN(test_routing_log);
    free(cat);
    return test_summary();
}
