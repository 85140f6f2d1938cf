/* tests/unit/test_oracle_catalog.c — the catalog's limits and its CSV error
 * message, at the edges: each bounded model column accepts its maximum and
 * refuses one more, naming the file, row and column; a stray quote is named
 * as what it is. Expected values are the limits stated here, not read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog/csv_table.h"
#include "test.h"

static const char head[] = "name,layers,hidden,ffn_hidden,heads,kv_heads,head_dim,vocab,seq_len,norm,mlp,position,"
                           "tied_embeddings,linear_bias,qk_norm,experts,experts_per_token,shared_experts,"
                           "expert_ffn_hidden,dense_layers,router,router_groups,router_group_topk,q_lora_rank,"
                           "kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,v_head_dim,mtp_layers,source\n";

/* one model row with column `col` (1-based among the numbers: 1 layers .. 8 seq_len) set to v */
static Status parse_with(int col, unsigned long long v, Catalog *c, Err *e)
{
    unsigned long long n[8] = {2, 8, 32, 2, 2, 4, 16, 4};
    n[col - 1] = v;
    if (col == 5) n[3] = 65536; /* kv_heads must divide heads: give it the most heads */
    char text[1024];
    snprintf(text, sizeof text,
             "%sm,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,rmsnorm,gelu,rope,no,no,,,,,,,,,,,,,,,,src\n", head, n[0],
             n[1], n[2], n[3], n[4], n[5], n[6], n[7]);
    return catalog_parse_models(c, text, strlen(text), "models.csv", e);
}

static void test_model_column_limits(void)
{
    /* layers, heads, kv_heads and head_dim up to 2^16 = 65536; hidden, ffn_hidden, vocab and seq_len
     * up to 2^30 = 1073741824 */
    const struct {
        int col;
        const char *name;
        unsigned long long max;
    } lim[] = {{1, "layers", 65536},     {2, "hidden", 1073741824}, {3, "ffn_hidden", 1073741824},
               {4, "heads", 65536},      {5, "kv_heads", 65536},    {6, "head_dim", 65536},
               {7, "vocab", 1073741824}, {8, "seq_len", 1073741824}};
    Catalog *c = calloc(1, sizeof *c);
    for (size_t i = 0; c && i < sizeof lim / sizeof *lim; i++) {
        Err e = {0};
        CHECKF(parse_with(lim[i].col, lim[i].max, c, &e) == ST_OK, "%s = %llu refused: %s", lim[i].name, lim[i].max,
               e.msg);
        CHECKF(parse_with(lim[i].col, lim[i].max + 1, c, &e) == ST_DATA, "%s = %llu accepted", lim[i].name,
               lim[i].max + 1);
        char want[64];
        snprintf(want, sizeof want, "models.csv: row 2, column %s", lim[i].name);
        CHECK_CONTAINS(e.msg, want);
        CHECKF(parse_with(lim[i].col, 0, c, &e) == ST_DATA, "%s = 0 accepted", lim[i].name);
    }
    free(c);
}

static void test_stray_quote_is_named(void)
{
    Catalog *c = calloc(1, sizeof *c);
    if (!c) return;
    const char text[] = "name,compute_capability,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,"
                        "intra_node_gbps,inter_node_gbps,gpus_per_node,source\n"
                        "g,9.0\",1,1,1,1,1,1,1,8,src\n";
    Err e = {0};
    CHECK(catalog_parse_gpus(c, text, strlen(text), "gpus.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "gpus.csv: row 2");
    CHECK_CONTAINS(e.msg, "a quote inside an unquoted field or an unterminated quoted field");
    free(c);
}

/* A model with standard attention (kv_lora_rank empty) names no latent-attention column: each of q_lora_rank,
 * qk_nope_head_dim, qk_rope_head_dim and v_head_dim given alone is refused, naming itself and why. */
static void test_latent_columns_need_latent_attention(void)
{
    static const char *const cols[4] = {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
    Catalog *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    for (int i = 0; c && i < 4; i++) {
        const char *v[4] = {"", "", "", ""}; /* q_lora_rank, (kv_lora_rank empty), qk_nope, qk_rope, v_head */
        v[i] = "64";
        char text[1024];
        snprintf(text, sizeof text, "%sm,2,8,32,2,2,4,16,4,rmsnorm,gelu,rope,no,no,,,,,,,,,,%s,,%s,%s,%s,,src\n", head,
                 v[0], v[1], v[2], v[3]);
        Err e = {0};
        CHECKF(catalog_parse_models(c, text, strlen(text), "models.csv", &e) == ST_DATA, "%s = 64 accepted", cols[i]);
        char want[160];
        snprintf(want, sizeof want,
                 "models.csv: row 2, column %s: '64' is given, but kv_lora_rank is 0 (standard attention)", cols[i]);
        CHECK_CONTAINS(e.msg, want);
    }
    free(c);
    csv_table_free(NULL); /* freeing nothing is allowed, as free(NULL) is */
}

int main(void)
{
    RUN(test_model_column_limits);
    RUN(test_stray_quote_is_named);
    RUN(test_latent_columns_need_latent_attention);
    return test_summary();
}
