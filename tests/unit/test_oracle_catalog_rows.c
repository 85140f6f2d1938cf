/* tests/unit/test_oracle_catalog_rows.c — catalog rules that mutate's fresh seeds found unguarded, each
 * checked by the rule's whole table (every clause, both sides of each bound) rather than the one line: the
 * models.csv cell ranges and the MoE cells a dense row must leave empty, the gpus.csv fields and rules, the
 * recipes.csv cells' messages and consistency checks. (Moved from test_oracle_plan_seed.c, unchanged.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* ---- models.csv ------------------------------------------------------------------------------------------ */

typedef Status (*ParseFn)(Catalog *, const char *, size_t, const char *, Err *);

/* One CSV row in the column order `columns` lists: each cell from `base` ("column=value"), then the cells named in
 * `set` replaced (a later entry wins), a column in neither left empty (optional columns, "?name", included); parsed by `parse` as `fname` into a catalog
 * handed back in *keep (the caller frees it) or freed. */
static Status parse_one(const char *columns, const char *const *base, size_t nbase, const char *const *set, size_t nset,
                        ParseFn parse, const char *fname, Catalog **keep, Err *e)
{
    char text[4096], row[2048];
    text[0] = row[0] = 0;
    for (const char *col = columns; *col;) {
        col += *col == '?'; /* an optional column: written like the others */
        size_t n = strcspn(col, ",");
        const char *val = "";
        for (size_t i = 0; i < nbase + nset; i++) {
            const char *kv = i < nbase ? base[i] : set[i - nbase];
            if (!strncmp(kv, col, n) && kv[n] == '=') val = kv + n + 1;
        }
        const char *sep = row[0] || text[0] ? "," : "";
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%.*s", sep, (int)n, col);
        snprintf(row + strlen(row), sizeof row - strlen(row), "%s%s", sep, val);
        col += n + (col[n] == ',');
    }
    snprintf(text + strlen(text), sizeof text - strlen(text), "\n");
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s\n", row);
    Catalog *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    if (!c) return ST_NOMEM;
    Status st = parse(c, text, strlen(text), fname, e);
    if (keep)
        *keep = c;
    else
        free(c);
    return st;
}

/* A models.csv row (m.csv): a small dense SwiGLU model (4 layers, hidden 32, FFN 64, 4 heads of 8, vocabulary
 * 100, seq 16, RMSNorm, RoPE, untied, no biases), every MoE / MLA / MTP cell empty, `set` applied. */
static Status parse_row(const char *const *set, size_t nset, Err *e)
{
    static const char *const base[] = {"name=m",     "layers=4",       "hidden=32",         "ffn_hidden=64",
                                       "heads=4",    "kv_heads=4",     "head_dim=8",        "vocab=100",
                                       "seq_len=16", "norm=rmsnorm",   "mlp=swiglu",        "position=rope",
                                       "source=src", "linear_bias=no", "tied_embeddings=no"};
    return parse_one(catalog_model_columns, base, sizeof base / sizeof base[0], set, nset, catalog_parse_models,
                     "m.csv", NULL, e);
}

/* Every numeric column's range: one past the top (and 0 where the bottom is 1) is refused with a message that
 * names the column, the cell and the range; the top itself is accepted (with the cells it needs beside it).
 * Ranges: 2^16 = 65,536 for layers, heads, kv_heads, head_dim and the MoE / MLA head counts and dims; 2^30 =
 * 1,073,741,824 for widths, vocabulary, sequence, expert FFN and the latent ranks; 16 for MTP layers. */
static void test_model_cell_ranges(void)
{
    const struct {
        const char *col;
        unsigned lo, hi;
    } cols[] = {
        {"layers", 1, 65536},
        {"hidden", 1, 1073741824},
        {"ffn_hidden", 1, 1073741824},
        {"heads", 1, 65536},
        {"kv_heads", 1, 65536},
        {"head_dim", 1, 65536},
        {"vocab", 1, 1073741824},
        {"seq_len", 1, 1073741824},
        {"experts", 0, 65536},
        {"experts_per_token", 0, 65536},
        {"shared_experts", 0, 65536},
        {"expert_ffn_hidden", 0, 1073741824},
        {"dense_layers", 0, 65536},
        {"router_groups", 0, 65536},
        {"router_group_topk", 0, 65536},
        {"q_lora_rank", 0, 1073741824},
        {"kv_lora_rank", 0, 1073741824},
        {"qk_nope_head_dim", 0, 65536},
        {"qk_rope_head_dim", 0, 65536},
        {"v_head_dim", 0, 65536},
        {"mtp_layers", 0, 16},
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        char cell[64], want[160];
        const char *set[1] = {cell};
        for (int below = 0; below < 2; below++) {
            if (below && !cols[i].lo) continue;
            unsigned long long v = below ? cols[i].lo - 1ull : cols[i].hi + 1ull;
            snprintf(cell, sizeof cell, "%s=%llu", cols[i].col, v);
            Err e = {0};
            CHECKF(parse_row(set, 1, &e) == ST_DATA, "%s accepted", cell);
            snprintf(want, sizeof want, "m.csv: row 2, column %s: '%llu' is out of range [%u, %u]", cols[i].col, v,
                     cols[i].lo, cols[i].hi);
            CHECK_CONTAINS(e.msg, want);
        }
    }
    /* the tops accepted: each row sets one column to its top and what that needs to be a valid model */
    const char *const ok[][6] = {
        {"layers=65536"},
        {"hidden=1073741824", "layers=1"},
        {"ffn_hidden=1073741824", "layers=1"},
        {"heads=65536"},
        {"kv_heads=65536", "heads=65536"},
        {"head_dim=65536"},
        {"vocab=1073741824"},
        {"seq_len=1073741824"},
        {"experts=65536", "experts_per_token=65536", "expert_ffn_hidden=1", "router=softmax"},
        {"experts=8", "experts_per_token=2", "shared_experts=65536", "expert_ffn_hidden=1073741824", "router=sigmoid"},
        {"experts=65536", "experts_per_token=1", "expert_ffn_hidden=1", "router=softmax", "router_groups=65536",
         "router_group_topk=65536"},
        {"q_lora_rank=1073741824", "kv_lora_rank=1073741824", "qk_nope_head_dim=4", "qk_rope_head_dim=4",
         "v_head_dim=65536"},
        {"mtp_layers=16"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n = 0;
        while (n < 6 && ok[i][n]) n++;
        Err e = {0};
        CHECKF(parse_row(ok[i], n, &e) == ST_OK, "%s: %s", ok[i][0], e.msg);
    }
}

/* A dense row (experts empty or 0) names no MoE cell: each of experts_per_token, shared_experts,
 * expert_ffn_hidden, dense_layers, router and router_groups given alone is refused, naming that column and the
 * reason; router "none" is the unset value and passes. router_group_topk needs router_groups (its own reason). */
static void test_dense_row_moe_cells(void)
{
    const char *const given[][2] = {
        {"experts_per_token=2", "experts_per_token: '2'"},
        {"shared_experts=1", "shared_experts: '1'"},
        {"expert_ffn_hidden=16", "expert_ffn_hidden: '16'"},
        {"dense_layers=1", "dense_layers: '1'"},
        {"router=softmax", "router: 'softmax'"},
        {"router=sigmoid", "router: 'sigmoid'"},
        {"router_groups=2", "router_groups: '2'"},
    };
    for (int zero = 0; zero < 2; zero++)
        for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
            const char *set[2] = {given[i][0], zero ? "experts=0" : "experts="};
            Err e = {0};
            CHECKF(parse_row(set, 2, &e) == ST_DATA, "%s accepted", given[i][0]);
            char want[160];
            snprintf(want, sizeof want, "m.csv: row 2, column %s is given, but experts is 0 (a dense model)",
                     given[i][1]);
            CHECK_CONTAINS(e.msg, want);
        }
    const char *none[2] = {"router=none", "experts=0"};
    Err e = {0};
    CHECKF(parse_row(none, 2, &e) == ST_OK, "router none on a dense row: %s", e.msg);
    const char *topk[1] = {"router_group_topk=1"};
    CHECK(parse_row(topk, 1, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "column router_group_topk: '1' is given, but router_groups is 0 (no group-limited routing)");
}

/* The word cells of a model row: a bad norm, mlp or position is refused quoting the cell and the words taken. */
static void test_model_words(void)
{
    const char *const bad[][2] = {
        {"norm=batchnorm", "column norm: 'batchnorm' is not layernorm or rmsnorm"},
        {"mlp=relu", "column mlp: 'relu' is not gelu or swiglu"},
        {"position=alibi", "column position: 'alibi' is not learned, rope or none"},
        {"tied_embeddings=maybe", "column tied_embeddings: 'maybe' is not yes or no"},
        {"kv_heads=3", "column kv_heads: '3' must divide heads (grouped-query attention)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *set[1] = {bad[i][0]};
        Err e = {0};
        CHECKF(parse_row(set, 1, &e) == ST_DATA, "%s accepted", bad[i][0]);
        char want[160];
        snprintf(want, sizeof want, "m.csv: row 2, %s", bad[i][1]);
        CHECK_CONTAINS(e.msg, want);
    }
    const char *ok[3] = {"norm=layernorm", "mlp=gelu", "position=learned"};
    Err e = {0};
    CHECKF(parse_row(ok, 3, &e) == ST_OK, "%s", e.msg);
}

/* ---- gpus.csv -------------------------------------------------------------------------------------------- */

/* A gpus.csv row (g.csv): an H100-like part, every rate distinct, both optional columns given; `set` applied. */
static Status parse_gpu_row(const char *const *set, size_t nset, Catalog **keep, Err *e)
{
    static const char *const base[] = {"name=g",
                                       "compute_capability=9.0",
                                       "sms=132",
                                       "hbm_bytes=80000000000",
                                       "hbm_gbps=3350",
                                       "bf16_tflops=989",
                                       "fp8_tflops=1979",
                                       "fp32_tflops=67",
                                       "mamf_bf16_tflops=700",
                                       "mamf_fp8_tflops=1300",
                                       "sustained=0.9",
                                       "intra_link=nvlink",
                                       "intra_node_gbps=450",
                                       "inter_node_gbps=50",
                                       "gpus_per_node=8",
                                       "source=s",
                                       "link_latency_us=2.5",
                                       "elem_gbps=3000"};
    return parse_one(catalog_gpu_columns, base, sizeof base / sizeof base[0], set, nset, catalog_parse_gpus, "g.csv",
                     keep, e);
}

/* Every field of a parsed GPU, units converted by hand: GB/s x 1e9 = B/s, TFLOP/s x 1e12 = FLOP/s, us x 1e-6 = s,
 * compute capability 9.0 -> 90. A host profile (compute_capability cpu, intra_link host) with a measured link. */
static void test_gpu_row_fields(void)
{
    Catalog *c = NULL;
    Err e = {0};
    CHECKF(parse_gpu_row(NULL, 0, &c, &e) == ST_OK, "%s", e.msg);
    CHECK(c != NULL && c->ngpus == 1);
    if (c && c->ngpus == 1) {
        const GpuSpec *g = &c->gpus[0];
        CHECK_STR(g->name, "g");
        CHECK_EQ_INT(g->sm, 90);
        CHECK_EQ_INT(g->sms, 132);
        CHECK_EQ_U64(g->hbm_bytes, 80000000000ull);
        CHECK(g->hbm_bw == 3.35e12 && g->flops_bf16 == 9.89e14 && g->flops_fp8 == 1.979e15);
        CHECK(g->flops_fp32 == 6.7e13 && g->mamf_bf16 == 7e14 && g->mamf_fp8 == 1.3e15);
        CHECK(g->sustained == 0.9 && g->link == LINK_NVLINK && g->intra_bw == 4.5e11 && g->inter_bw == 5e10);
        CHECK_EQ_INT(g->gpus_per_node, 8);
        CHECK_EQ_INT(g->host, 0);
        CHECK_REL(g->link_lat, 2.5e-6, 1e-15);
        CHECK(g->elem_bw == 3e12);
        CHECK_STR(g->source, "s");
    }
    free(c);
    c = NULL;
    const char *host[] = {"compute_capability=cpu", "intra_link=host",   "fp8_tflops=0.5",
                          "mamf_fp8_tflops=0.25",   "intra_node_gbps=4", "inter_node_gbps=2"};
    CHECKF(parse_gpu_row(host, 6, &c, &e) == ST_OK, "host: %s", e.msg);
    CHECK(c != NULL && c->ngpus == 1);
    if (c && c->ngpus == 1) {
        const GpuSpec *g = &c->gpus[0];
        CHECK(g->host == 1 && g->sm == 0 && g->link == LINK_HOST);
        CHECK(g->flops_fp8 == 5e11 && g->mamf_fp8 == 2.5e11 && g->intra_bw == 4e9 && g->inter_bw == 2e9);
    }
    free(c);
    c = NULL;
    const char *pcie[] = {"intra_link=pcie", "compute_capability=8.9", "link_latency_us=", "elem_gbps="};
    CHECKF(parse_gpu_row(pcie, 4, &c, &e) == ST_OK, "pcie: %s", e.msg);
    if (c && c->ngpus == 1) {
        const GpuSpec *g = &c->gpus[0];
        CHECK(g->sm == 89 && g->link == LINK_PCIE && g->link_lat == 0 && g->elem_bw == 0);
    }
    free(c);
}

/* Each rule on a GPU cell, refused with the message naming the column, the cell and the rule, and accepted at its
 * edge: the ranges (sms [1, 65536], gpus_per_node [1, 2^20 = 1,048,576], sustained [0.05, 1], link latency
 * [0, 1e6] us and positive), positive and non-negative rates, the compute capability's form, FP8 below SM 8.9,
 * MAMF above its peak, the host link rules. */
static void test_gpu_row_rules(void)
{
    const char *const bad[][3] = {
        {"sms=0", "", "column sms: '0' is out of range [1, 65536]"},
        {"sms=65537", "", "column sms: '65537' is out of range [1, 65536]"},
        {"gpus_per_node=0", "", "column gpus_per_node: '0' is out of range [1, 1048576]"},
        {"gpus_per_node=1048577", "", "column gpus_per_node: '1048577' is out of range [1, 1048576]"},
        {"sustained=0.04", "", "column sustained: '0.04' is out of range [0.05, 1]"},
        {"sustained=1.01", "", "column sustained: '1.01' is out of range [0.05, 1]"},
        {"link_latency_us=0", "", "column link_latency_us: '0' must be positive (empty: NCCL's model)"},
        {"link_latency_us=1000001", "", "column link_latency_us: '1000001' is out of range [0, 1e+06]"},
        {"hbm_gbps=0", "", "column hbm_gbps: '0' must be positive"},
        {"bf16_tflops=-1", "", "column bf16_tflops: '-1' must be positive"},
        {"fp32_tflops=0", "", "column fp32_tflops: '0' must be positive"},
        {"mamf_bf16_tflops=0", "", "column mamf_bf16_tflops: '0' must be positive"},
        {"intra_node_gbps=0", "", "column intra_node_gbps: '0' must be positive"},
        {"inter_node_gbps=0", "", "column inter_node_gbps: '0' must be positive"},
        {"elem_gbps=0", "", "column elem_gbps: '0' must be positive"},
        {"scaled_optim_gbps=0", "", "column scaled_optim_gbps: '0' must be positive"},
        {"link_latency_us=-1", "", "column link_latency_us: '-1' is out of range [0, 1e+06]"},
        {"fp8_tflops=-1", "", "column fp8_tflops: '-1' must not be negative"},
        {"mamf_fp8_tflops=-1", "", "column mamf_fp8_tflops: '-1' must not be negative"},
        {"hbm_bytes=0", "", "column hbm_bytes: '0' must be positive"},
        {"compute_capability=9", "", "column compute_capability: '9' is not a compute capability like 9.0"},
        {"compute_capability=100.0", "", "column compute_capability: '100.0' is not a compute capability like 9.0"},
        {"compute_capability=9.10", "", "column compute_capability: '9.10' is not a compute capability like 9.0"},
        {"compute_capability=+9.0", "", "column compute_capability: '+9.0' is not a compute capability like 9.0"},
        {"compute_capability=8.6", "",
         "column fp8_tflops: '1979' is given for a GPU below SM 8.9, which has no FP8 tensor cores"},
        {"mamf_bf16_tflops=990", "", "column mamf_bf16_tflops: '990' is above the BF16 peak 989"},
        {"mamf_fp8_tflops=1980", "", "column mamf_fp8_tflops: '1980' must be positive and at most the FP8 peak 1979"},
        {"mamf_fp8_tflops=0", "", "column mamf_fp8_tflops: '0' must be positive and at most the FP8 peak 1979"},
        {"intra_link=host", "", "column intra_link: 'host': the link is host exactly when compute_capability is cpu"},
        {"compute_capability=cpu", "",
         "column intra_link: 'nvlink': the link is host exactly when compute_capability is cpu"},
        {"intra_link=ib", "", "column intra_link: 'ib' is not nvlink, pcie or host"},
        {"compute_capability=cpu", "intra_link=host,inter_node_gbps=0",
         "column inter_node_gbps: '0': a host has no interconnect (both 0) or a measured one (both > 0)"},
        {"compute_capability=cpu", "intra_link=host,link_latency_us=",
         "column link_latency_us: '': a host's measured link needs its measured latency"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *set[3] = {bad[i][0], "", ""};
        size_t n = 1;
        char more[96];
        snprintf(more, sizeof more, "%s", bad[i][1]);
        for (char *tok = strtok(more, ","); tok; tok = strtok(NULL, ",")) set[n++] = tok;
        Err e = {0};
        CHECKF(parse_gpu_row(set, n, NULL, &e) == ST_DATA, "%s accepted", bad[i][0]);
        char want[200];
        snprintf(want, sizeof want, "g.csv: row 2, %s", bad[i][2]);
        CHECK_CONTAINS(e.msg, want);
    }
    const char *const ok[][2] = {
        {"sms=1", ""},
        {"sms=65536", ""},
        {"gpus_per_node=1", ""},
        {"gpus_per_node=1048576", ""},
        {"sustained=0.05", ""},
        {"sustained=1", ""},
        {"link_latency_us=1000000", ""},
        {"mamf_bf16_tflops=989", ""},
        {"mamf_fp8_tflops=1979", ""},
        {"fp8_tflops=0", "mamf_fp8_tflops=0"}, /* no FP8: both 0 */
        {"compute_capability=8.0", "fp8_tflops=0"},
        {"compute_capability=8.9", ""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *set[3] = {ok[i][0], ok[i][1], "mamf_fp8_tflops=0"};
        /* an SM 8.0 part has no FP8: its MAMF FP8 is 0 as well */
        size_t n = !strcmp(ok[i][0], "compute_capability=8.0") ? 3 : *ok[i][1] ? 2 : 1;
        Err e = {0};
        CHECKF(parse_gpu_row(set, n, NULL, &e) == ST_OK, "%s %s: %s", ok[i][0], ok[i][1], e.msg);
    }
}

/* ---- recipes.csv ----------------------------------------------------------------------------------------- */

/* A recipes.csv row (r.csv): Megatron BF16 (BF16 weight and GEMMs, FP32 master, gradient, m and v, the
 * distributed optimizer sharding master, m and v, itself for the other parameters, no FP8), `set` applied. */
static Status parse_recipe_row(const char *const *set, size_t nset, Err *e)
{
    static const char *const base[] = {"name=r",
                                       "weight=bf16",
                                       "fp8_rowwise=none",
                                       "fp8_colwise=none",
                                       "master=fp32",
                                       "grad=fp32",
                                       "adam_m=fp32",
                                       "adam_v=fp32",
                                       "dist_opt_shards=master+m+v",
                                       "scaled_states=none",
                                       "other_params=r",
                                       "gemm_fwd=bf16",
                                       "gemm_bwd=bf16",
                                       "scaling=none",
                                       "act_granularity=tensor",
                                       "weight_granularity=tensor",
                                       "amax_history=0",
                                       "amax_reduce=none",
                                       "dp_grad_comm=fp32",
                                       "param_gather_comm=bf16",
                                       "tp_allgather_comm=bf16",
                                       "tp_reducescatter_comm=bf16",
                                       "ep_dispatch_comm=bf16",
                                       "ep_combine_comm=bf16",
                                       "saved_gemm_input=bf16",
                                       "fp8_linear=none",
                                       "min_sm=8.0",
                                       "source=s"};
    return parse_one(catalog_recipe_columns, base, sizeof base / sizeof base[0], set, nset, catalog_parse_recipes,
                     "r.csv", NULL, e);
}

/* Every word-valued recipe cell refused with a message that quotes the cell as written (not an empty or another
 * cell) and lists what it takes: the sixteen dtype columns, the two state lists, the two granularities, scaling,
 * amax_reduce, fp8_linear; and amax_history one past its top 2^20 = 1,048,576. The base row itself parses, and
 * amax_reduce takes none, tp and all. */
static void test_recipe_cell_words(void)
{
    static const char *const dtypes[] = {"weight",
                                         "fp8_rowwise",
                                         "fp8_colwise",
                                         "master",
                                         "grad",
                                         "adam_m",
                                         "adam_v",
                                         "gemm_fwd",
                                         "gemm_bwd",
                                         "dp_grad_comm",
                                         "param_gather_comm",
                                         "tp_allgather_comm",
                                         "tp_reducescatter_comm",
                                         "ep_dispatch_comm",
                                         "ep_combine_comm",
                                         "saved_gemm_input"};
    char cell[96], want[200];
    const char *set[1] = {cell};
    Err e = {0};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        snprintf(cell, sizeof cell, "%s=fp12", dtypes[i]);
        CHECKF(parse_recipe_row(set, 1, &e) == ST_DATA, "%s accepted", cell);
        snprintf(want, sizeof want,
                 "r.csv: row 2, column %s: unknown dtype 'fp12' (known: fp32 fp16 bf16 e4m3 e5m2 e8m0 none)",
                 dtypes[i]);
        CHECK_CONTAINS(e.msg, want);
    }
    const char *const words[][2] = {
        {"dist_opt_shards=master+mom",
         "column dist_opt_shards: unknown state 'mom' in 'master+mom' (known: weight master grad m v, or none)"},
        {"scaled_states=v+w",
         "column scaled_states: unknown state 'w' in 'v+w' (known: weight master grad m v, or none)"},
        {"act_granularity=2x2",
         "column act_granularity: '2x2' is not a granularity (tensor, channel, 1x32, 1x128, 128x128)"},
        {"weight_granularity=1x64",
         "column weight_granularity: '1x64' is not a granularity (tensor, channel, 1x32, 1x128, 128x128)"},
        {"scaling=static", "column scaling: 'static' is not none, delayed or current"},
        {"amax_reduce=dp", "column amax_reduce: 'dp' is not none, tp or all"},
        {"fp8_linear=cutlass", "column fp8_linear: 'cutlass' is not none, te, torchao, torchao-rowwise or msamp"},
        {"amax_history=1048577", "column amax_history: '1048577' is out of range [0, 1048576]"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        set[0] = words[i][0];
        CHECKF(parse_recipe_row(set, 1, &e) == ST_DATA, "%s accepted", words[i][0]);
        snprintf(want, sizeof want, "r.csv: row 2, %s", words[i][1]);
        CHECK_CONTAINS(e.msg, want);
    }
    const char *const ok[] = {"amax_reduce=none", "amax_reduce=tp", "amax_reduce=all", "amax_history=1048576"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        set[0] = ok[i];
        CHECKF(parse_recipe_row(set, 1, &e) == ST_OK, "%s: %s", ok[i], e.msg);
    }
}

/* The recipe's consistency rules, each refused with its message: nothing holding the weights, scaling without
 * FP8 GEMMs, FP8 GEMMs without scaling, delayed scaling without a history, a scaled state the recipe does not
 * keep; and the FP8 row (TE-like: E4M3 / E5M2 GEMMs, delayed, history 16) accepted. */
static void test_recipe_consistency(void)
{
    const char *const fp8[] = {"gemm_fwd=e4m3",   "gemm_bwd=e5m2", "scaling=delayed",
                               "amax_history=16", "fp8_linear=te", "min_sm=8.9"};
    const struct {
        const char *set[3];
        int fp8;
        const char *part;
    } rows[] = {
        {{"weight=none", "master=none"},
         0,
         "column weight: 'none': with no master and no FP8 row-wise copy nothing holds the weights"},
        {{"scaling=delayed"}, 0, "column scaling: 'delayed': scaling is set but gemm_fwd and gemm_bwd are not FP8"},
        {{"scaling=none"}, 1, "column scaling: 'none': FP8 GEMMs need delayed or current scaling"},
        {{"amax_history=0"}, 1, "column amax_history: '0': delayed scaling needs a history of at least 1"},
        {{"scaled_states=m", "adam_m=none"}, 0, "column scaled_states: 'm' names a state the recipe does not keep"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *set[9];
        size_t n = 0;
        for (size_t k = 0; rows[i].fp8 && k < sizeof fp8 / sizeof fp8[0]; k++) set[n++] = fp8[k];
        for (int k = 0; k < 3 && rows[i].set[k]; k++) set[n++] = rows[i].set[k];
        Err e = {0};
        CHECKF(parse_recipe_row(set, n, &e) == ST_DATA, "row %zu accepted", i);
        char want[200];
        snprintf(want, sizeof want, "r.csv: row 2, %s", rows[i].part);
        CHECK_CONTAINS(e.msg, want);
    }
    Err e = {0};
    CHECKF(parse_recipe_row(fp8, sizeof fp8 / sizeof fp8[0], &e) == ST_OK, "FP8 row: %s", e.msg);
    const char *cur[2] = {"scaling=current", "amax_history=0"}, *both[8];
    for (size_t k = 0; k < 6; k++) both[k] = fp8[k];
    both[6] = cur[0], both[7] = cur[1];
    CHECKF(parse_recipe_row(both, 8, &e) == ST_OK, "current scaling, no history: %s", e.msg);
}

/* The header lists models.csv and gpus.csv are read with, generated from their X-macro column lists
 * (catalog/catalog.c MODEL_COLUMNS, GPU_COLUMNS): the shipped files' order, the optional columns marked. */
static void test_column_lists(void)
{
    CHECK_STR(catalog_model_columns,
              "name,layers,hidden,ffn_hidden,heads,kv_heads,head_dim,vocab,seq_len,norm,mlp,position,tied_embeddings,"
              "linear_bias,qk_norm,experts,experts_per_token,shared_experts,expert_ffn_hidden,dense_layers,router,"
              "router_groups,router_group_topk,q_lora_rank,kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,v_head_dim,"
              "mtp_layers,source,?expert_bias,?glu_clamp");
    CHECK_STR(
        catalog_gpu_columns,
        "name,compute_capability,sms,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,mamf_bf16_tflops,"
        "mamf_fp8_tflops,sustained,intra_link,intra_node_gbps,inter_node_gbps,gpus_per_node,source,"
        "?link_latency_us,?elem_gbps,?scaled_optim_gbps,?group_gemm_us,?elem_norm_gbps,?elem_act_gbps,?elem_add_gbps,"
        "?elem_cast_gbps,?elem_xent_gbps,?elem_amax_gbps,?elem_cast_row_gbps,?o1_optim_gbps,?llc_bytes");
}

int main(void)
{
    RUN(test_column_lists);
    RUN(test_model_cell_ranges);
    RUN(test_dense_row_moe_cells);
    RUN(test_model_words);
    RUN(test_gpu_row_fields);
    RUN(test_gpu_row_rules);
    RUN(test_recipe_cell_words);
    RUN(test_recipe_consistency);
    return test_summary();
}
