/* tests/unit/test_plan_seed.c — the seed's checks computed by the planner:
 * 16 / 6 / 18 (6 + 12/d) bytes per parameter, 175B x 16 B = 2,800 GB, the
 * 4096x4096 scale-storage table, and FP8-LM Table 5 within its tolerances
 * with TE above BF16 at 175B. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/fp8lm_table5.h"
#include "planner/plan.h"
#include "reports/seed_report.h"
#include "support/fixtures.h"
#include "test.h"
#include "util/fileio.h"

static Catalog *cat;

/* Render a table as CSV into a string (caller frees). */
static char *csv_of(Table *t)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    Err e;
    if (!f || table_write(t, TABLE_CSV, f, &e)) return NULL;
    fclose(f);
    table_free(t);
    return s;
}

static void test_bytes_per_param(void)
{
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "bf16")->gemm, 0, 1, NULL), 16, 0);
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "fp8lm")->gemm, 0, 1, NULL), 6, 0);
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "megatron-bf16")->gemm, 0, 1, NULL), 18, 0);
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "msamp-o1")->gemm, 0, 1, NULL), 11, 0);
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "msamp-o3")->gemm, 0, 1, NULL), 7, 0);
    /* pure BF16 (NeMo AutoModel's default: parameters, gradients, Adam m and v in BF16): 2 + 2 + 2 + 2 = 8 */
    CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "bf16-params")->gemm, 0, 1, NULL), 8, 0);
    for (uint32_t d = 1; d <= 1024; d *= 2) {
        double per[STATE_COUNT_];
        double b = recipe_state_bytes_per_param(&catalog_recipe(cat, "megatron-bf16")->gemm, 1, d, per);
        CHECK_NEAR(b, 6.0 + 12.0 / d, 1e-12);
        CHECK_NEAR(per[STATE_GRAD], 4, 0); /* the distributed optimizer keeps full FP32 gradients */
        CHECK_NEAR(recipe_state_bytes_per_param(&catalog_recipe(cat, "msamp-o3")->gemm, 1, d, NULL), 2.0 + 5.0 / d,
                   1e-12);
    }
    CHECK_EQ_INT(recipe_fp8_copy_bytes_per_param(catalog_recipe(cat, "te-fp8")), 2);
    /* Table 1a with 175e9 parameters: BF16 states total 2,800 GB */
    char *csv = csv_of(seed_table1a(cat, catalog_recipe(cat, "bf16"), 175000000000ull, 0, 1, NULL));
    CHECK_CONTAINS(csv, "bf16,none,0,fp32,4,fp32,4,fp32,4,fp32,4,16,0,1,175000000000,2800000000000,2800\n");
    free(csv);
    csv = csv_of(seed_table1a(cat, catalog_recipe(cat, "megatron-bf16"), 0, 1, 8, NULL));
    CHECK_CONTAINS(csv, "megatron-bf16,bf16,2,fp32,0.5,fp32,4,fp32,0.5,fp32,0.5,7.5,0,8\n");
    free(csv);
    Err e;
    CHECK(seed_table1a(cat, NULL, 2000000000000000000ull, 0, 1, &e) == NULL); /* 2e18 x 16 B > 2^64 */
    CHECK(e.st == ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "pass 2^64");
}

static void test_table1b(void)
{
    Err e;
    char *csv = csv_of(seed_table1b(4096, 4096, &e));
    CHECK(csv != NULL);
    CHECK_CONTAINS(csv, "format,granularity,scale_dtype,scale_count,payload_bytes,scale_bytes,total_bytes,"
                        "payload_of_bf16_pct,scale_of_payload_pct,saving_vs_bf16_pct\n");
    /* payload 16,777,216 B = half of BF16's 33,554,432 */
    CHECK_CONTAINS(csv, "bf16,none,none,0,33554432,0,33554432,100,0,0\n");
    CHECK_CONTAINS(csv, "fp8,tensor,fp32,1,16777216,4,16777220,50,");
    CHECK_CONTAINS(csv, "fp8,channel,fp32,4096,16777216,16384,16793600,50,");
    /* 1x32 E8M0: 524,288 scales of 1 B = 3.125 % of the payload; saving 48.4375 % */
    CHECK_CONTAINS(csv, "fp8,1x32,e8m0,524288,16777216,524288,17301504,50,3.125,48.4375\n");
    free(csv);
    CHECK(seed_table1b(1ull << 62, 1ull << 62, &e) == NULL);
    CHECK(e.st == ST_OVERFLOW);
    /* one column: per-channel FP32 scales are 4x the payload, so FP8 costs 150 % more than BF16 */
    SeedScaleRow r[SEED_T1B_ROWS];
    CHECK(seed_table1b_rows(4096, 1, r, &e) == ST_OK);
    CHECK_EQ_U64(r[1 + GRAN_CHANNEL].total_bytes, 4096 + 4 * 4096);
    CHECK_NEAR(r[1 + GRAN_CHANNEL].saving_vs_bf16_pct, -150.0, 0);
}

static void test_table5(void)
{
    char *buf;
    size_t len;
    Err e = {0};
    CHECK(file_read_all("models/fp8lm_table5.csv", &buf, &len, &e) == ST_OK);
    Table *t;
    SeedCheck chk;
    CHECKF(seed_table5(cat, buf, len, "models/fp8lm_table5.csv", &t, &chk, &e) == ST_OK, "%s", e.msg);
    free(buf);
    /* 6 memory + 6 weight-communication figures + TE at 175B + "TE above BF16" */
    CHECK_EQ_INT(chk.checked, 14);
    CHECK_EQ_INT(chk.outside, 0);
    char *csv = csv_of(t);
    CHECK_CONTAINS(csv, "gpt-175b,TP8 PP4 DP4 mbs1,te - bf16,te-fp8 - megatron-bf16,memory_difference,GB,3.5,");
    CHECK_CONTAINS(csv, "yes (TE above BF16)");
    free(csv);

    /* the same through plan_build, explicitly, for the effect the seed explains */
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(cat, "gpt-175b"), in.gpu = catalog_gpu(cat, "h100-sxm");
    in.tp = 8, in.pp = 4, in.dp = 4, in.mbs = 1, in.seq = 2048, in.sharding = SHARD_DIST_OPT;
    Plan bf, te, lm;
    in.recipe = catalog_recipe(cat, "megatron-bf16");
    CHECK(plan_build(&in, &bf, NULL) == ST_OK);
    in.recipe = catalog_recipe(cat, "te-fp8");
    CHECK(plan_build(&in, &te, NULL) == ST_OK);
    in.recipe = catalog_recipe(cat, "fp8lm");
    CHECK(plan_build(&in, &lm, NULL) == ST_OK);
    CHECK(te.total_bytes > bf.total_bytes);
    /* named terms explain it: TE adds FP8 copies and keeps every BF16/FP32 state */
    CHECK(te.cat_bytes[MC_FP8_COPY] > te.total_bytes - bf.total_bytes);
    CHECK_EQ_U64(te.cat_bytes[MC_STATE], bf.cat_bytes[MC_STATE]);
    CHECK(lm.total_bytes < bf.total_bytes);
    CHECK(te.advice_mask & (1u << ADV_COMPUTE_ONLY));
    CHECK(!(lm.advice_mask & (1u << ADV_COMPUTE_ONLY)));

    /* three published figures doubled, each far outside its band (predicted about half of it: -50 %, past
     * -15 % for memory and -12 % for communication): GPT-7B BF16 memory 69.6 -> 139 GB (written "139." to keep
     * the text's width) and its weight communication 37.2 -> 74.4 GB, GPT-7B FP8-LM memory 49.4 -> 98.8 GB.
     * Still 14 checked; 3 outside. */
    CHECK(file_read_all("models/fp8lm_table5.csv", &buf, &len, &e) == ST_OK);
    char *edit[2] = {strstr(buf, ",69.6,37.2,"), strstr(buf, ",49.4,13.9,")};
    CHECK(edit[0] && edit[1]);
    if (edit[0] && edit[1]) {
        memcpy(edit[0], ",139.,74.4,", 11);
        memcpy(edit[1], ",98.8,13.9,", 11);
        Table *t2 = NULL;
        CHECKF(seed_table5(cat, buf, len, "t5.csv", &t2, &chk, &e) == ST_OK, "%s", e.msg);
        CHECK_EQ_INT(chk.checked, 14);
        CHECK_EQ_INT(chk.outside, 3);
        table_free(t2);
        /* the same figures from check/table5.h, which the table renders: 14 judged (a band, or the derived
         * sign), 3 OUTSIDE; the doubled BF16 memory of GPT-7B is predicted within +-15 % of 69.6 GB (the
         * shipped row passes), so against 139 GB its error is between 59.16 / 139 - 1 = -0.574 and
         * 80.04 / 139 - 1 = -0.424 */
        T5Figure *f = NULL;
        int n = 0, judged = 0, outside = 0, found = 0;
        CHECKF(check_table5(cat, buf, len, "t5.csv", &f, &n, &chk, &e) == ST_OK, "%s", e.msg);
        for (int i = 0; i < n; i++) {
            judged += f[i].tol > 0 || f[i].derived;
            outside += f[i].verdict == VERDICT_OUTSIDE;
            if (!strcmp(f[i].model, "gpt-7b") && !strcmp(f[i].column, "bf16") && !strcmp(f[i].metric, "memory")) {
                double err = check_rel_err(f[i].predicted, f[i].published);
                CHECKF(f[i].verdict == VERDICT_OUTSIDE && err > -0.574 && err < -0.424, "gpt-7b bf16 memory: %g", err);
                found++;
            }
        }
        CHECK_EQ_INT(found, 1);
        CHECK_EQ_INT(judged, 14);
        CHECK_EQ_INT(outside, 3);
        CHECK(n > 0 && f[n - 1].derived && f[n - 1].verdict == VERDICT_OK); /* TE above BF16 still holds */
        free(f);
    }
    free(buf);

    /* malformed published data is a data error naming the file */
    const char *bad = "model,tp\ngpt-7b,1\n";
    CHECK(seed_table5(cat, bad, strlen(bad), "t5.csv", &t, &chk, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "t5.csv: row 1: missing column");
}

/* catalog/fp8lm_table5.c, the one reader of Table 5 (report seed and the TUI): one good row, then that row
 * with one cell spoilt, each refused naming the file, the row (the header is row 1, so the row is 2) and
 * the column, in the order the row is read (names, whole numbers, figures, checked). */
static void test_table5_rows(void)
{
    static const char head[] =
        "model,tp,pp,dp,mbs,seq,column,recipe,memory_gb,weight_comm_gb,samples_per_s,mfu_pct,checked,source\n";
    static const struct {
        const char *row, *msg; /* msg NULL: parses */
    } cases[] = {
        {"gpt-7b,1,1,32,2,2048,bf16,megatron-bf16,69.6,,159.2,,yes,s", NULL},
        {"gpt-nope,1,1,32,2,2048,bf16,megatron-bf16,69.6,,,,yes,s", "t.csv: row 2: unknown model 'gpt-nope'"},
        {"gpt-7b,1,1,32,2,2048,bf16,nope,69.6,,,,yes,s", "t.csv: row 2: unknown recipe 'nope'"},
        {"gpt-7b,0,1,32,2,2048,bf16,megatron-bf16,69.6,,,,yes,s",
         "t.csv: row 2, column tp: '0' is not a positive whole number"},
        {"gpt-7b,1,1,32,2,4294967296,bf16,megatron-bf16,69.6,,,,yes,s", /* 2^32: past uint32 */
         "t.csv: row 2, column seq: '4294967296' is not a positive whole number"},
        {"gpt-7b,1,1,32,2,2048,bf16,megatron-bf16,-1,,,,yes,s",
         "t.csv: row 2, column memory_gb: '-1' is not a positive number"},
        {"gpt-7b,1,1,32,2,2048,bf16,megatron-bf16,69.6,,nan,,yes,s",
         "t.csv: row 2, column samples_per_s: 'nan' is not a positive number"},
        {"gpt-7b,1,1,32,2,2048,bf16,megatron-bf16,69.6,,,,maybe,s",
         "t.csv: row 2, column checked: 'maybe' is not yes or no"},
        /* a name past the catalog's 47 characters is named whole */
        {"gpt-7b-with-a-name-far-longer-than-any-catalog-name,1,1,32,2,2048,bf16,megatron-bf16,69.6,,,,yes,s",
         "t.csv: row 2: unknown model 'gpt-7b-with-a-name-far-longer-than-any-catalog-name'"},
    };
    /* the header the parser expects: the shipped file's */
    CHECK_STR(t5_columns, "model,tp,pp,dp,mbs,seq,column,recipe,memory_gb,weight_comm_gb,samples_per_s,mfu_pct,checked,"
                          "source");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s\n", head, cases[i].row);
        T5Row *rows = calloc(T5_MAX_ROWS, sizeof *rows);
        if (!rows) return;
        int n = -1;
        Err e = {0};
        Status st = t5_parse(cat, text, strlen(text), "t.csv", rows, &n, &e);
        if (!cases[i].msg) {
            CHECKF(st == ST_OK, "%s", e.msg);
            CHECK_EQ_INT(n, 1);
            /* blank figures are NaN (not published); the names are the catalog's rows */
            CHECK(rows[0].tp == 1 && rows[0].dp == 32 && rows[0].mbs == 2 && rows[0].seq == 2048);
            CHECK(rows[0].memory_gb == 69.6 && isnan(rows[0].weight_comm_gb) && isnan(rows[0].mfu_pct));
            CHECK(rows[0].checked == 1 && rows[0].rowno == 2 && rows[0].model == catalog_model(cat, "gpt-7b"));
            CHECK(!strcmp(rows[0].column, "bf16") && !strcmp(rows[0].recipe_name, "megatron-bf16"));
            CHECK(!strcmp(rows[0].model_name, "gpt-7b"));
        } else {
            CHECKF(st == ST_DATA, "case %zu", i);
            CHECK_EQ_INT(n, 0);
            CHECKF(!strcmp(e.msg, cases[i].msg), "case %zu: %s", i, e.msg);
        }
        free(rows);
    }
}

static void test_hardware_gates(void)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(cat, "gpt2-124m");
    Plan p;
    Err e = {0};
    in.gpu = catalog_gpu(cat, "a100-sxm"), in.recipe = catalog_recipe(cat, "te-fp8");
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "SM 8.9+");
    in.gpu = catalog_gpu(cat, "l40s"), in.recipe = catalog_recipe(cat, "deepseek-v3");
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "blockwise FP8 scaling needs Hopper");
    in.gpu = catalog_gpu(cat, "h100-sxm"), in.recipe = catalog_recipe(cat, "mxfp8");
    CHECK(plan_build(&in, &p, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "MXFP8");
    in.gpu = catalog_gpu(cat, "b200");
    CHECK(plan_build(&in, &p, &e) == ST_OK);
    in.gpu = catalog_gpu(cat, "l40s"), in.recipe = catalog_recipe(cat, "te-fp8");
    CHECK(plan_build(&in, &p, &e) == ST_OK);
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_bytes_per_param);
    RUN(test_table1b);
    RUN(test_table5);
    RUN(test_table5_rows);
    RUN(test_hardware_gates);
    free(cat);
    return test_summary();
}
