/* tests/unit/test_report_plan.c — the plan CSV schema (golden), the text
 * report's content, and the compare table. */
#include <stdlib.h>

#include "reports/plan_report.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"
#include "util/fileio.h"

static Catalog *cat;

static char *render(Table *t, TableFormat fmt)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    Err e;
    CHECK(f && table_write(t, fmt, f, &e) == ST_OK);
    fclose(f);
    table_free(t);
    return s;
}

static Plan plan_for(const char *recipe)
{
    PlanInput in = fx_headline(cat, recipe);
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    return p;
}

static void test_summary_schema_golden(void)
{
    char *golden;
    size_t len;
    Err e;
    CHECK(file_read_all("tests/golden/plan_summary_columns.txt", &golden, &len, &e) == ST_OK);
    char want[2048];
    snprintf(want, sizeof want, "%s\n", plan_summary_columns());
    CHECK_STR(want, golden);
    /* the CSV a plan writes starts with exactly that header, then one row of the same width */
    Plan p = plan_for("te-fp8");
    Table *t = plan_summary_new(0);
    plan_summary_row(t, &p, 0);
    char *csv = render(t, TABLE_CSV);
    CHECK(!strncmp(csv, golden, len));
    int commas_head = 0, commas_row = 0;
    const char *row = strchr(csv, '\n') + 1;
    for (const char *c = csv; c < row; c++) commas_head += *c == ',';
    for (const char *c = row; *c && *c != '\n'; c++) commas_row += *c == ',';
    CHECK_EQ_INT(commas_head, commas_row);
    /* stack none (the fixture applies no stack row); stage 0, even stages (first/last 0) */
    CHECK_CONTAINS(row, "gpt-175b,h100-sxm,te-fp8,none,8,4,1,1,4,128,1,1024,2048,1,none,dist-opt,0,0,0,174604259328,");
    free(csv);
    free(golden);
    /* the required columns are all there */
    const char *req[] = {"model",
                         "gpu",
                         "recipe",
                         "stack",
                         "first_stage_layers",
                         "last_stage_layers",
                         "tp",
                         "pp",
                         "vpp",
                         "cp",
                         "dp",
                         "mbs",
                         "seq",
                         "params_total",
                         "params_gpu",
                         "weight_bytes",
                         "fp8_weight_copy_bytes",
                         "master_bytes",
                         "grad_bytes",
                         "optim_m_bytes",
                         "optim_v_bytes",
                         "scale_bytes",
                         "activation_bytes",
                         "overhead_bytes",
                         "total_bytes",
                         "capacity_bytes",
                         "fits",
                         "dp_comm_bytes",
                         "tp_comm_bytes",
                         "pp_comm_bytes",
                         "cp_comm_bytes",
                         "weight_comm_bytes",
                         "step_time_s",
                         "tokens_per_s",
                         "samples_per_s",
                         "tflops_per_gpu",
                         "mfu_bf16_pct",
                         "mfu_fp8_pct"};
    char cols[2048];
    snprintf(cols, sizeof cols, ",%s,", plan_summary_columns());
    for (size_t i = 0; i < sizeof req / sizeof *req; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, ",%s,", req[i]);
        CHECKF(strstr(cols, needle) != NULL, "missing column %s", req[i]);
    }
}

/* The cell under `name` in a one-row CSV (static buffer; "" when the column is missing). */
static const char *csv_cell(const char *csv, const char *name)
{
    static char out[64];
    const char *row = strchr(csv, '\n');
    out[0] = '\0';
    if (!row) return out;
    row++;
    for (const char *h = csv; h < row - 1;) {
        size_t n = strcspn(h, ",\n");
        if (n == strlen(name) && !strncmp(h, name, n)) {
            size_t m = strcspn(row, ",\n");
            snprintf(out, sizeof out, "%.*s", (int)m, row);
            return out;
        }
        h += n + 1;
        row += strcspn(row, ",\n") + 1;
    }
    return out;
}

/* The summary's state columns, by value, on the oracle's tiny model (support/oracle_fixtures.h; arithmetic
 * in test_oracle_memory.c): 2048 linear + 232 other = 2280 parameters, dp 3, a distributed optimizer that
 * shards Adam v only. Replicated: weights 2280 x 2 B = 4560, master, gradients and m 2280 x 4 B = 9120 each;
 * v sharded ceil(2048 / 3) + ceil(232 / 3) = 683 + 78 = 761 elements x 4 B = 3044. No FP8 copy: 0. */
static void test_summary_state_columns(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(1u << STATE_V);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = &r;
    in.dp = 3, in.gbs = 6, in.sharding = SHARD_DIST_OPT, in.vocab_pad = 1;
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    Table *t = plan_summary_new(0);
    plan_summary_row(t, &p, 0);
    char *csv = render(t, TABLE_CSV);
    const struct {
        const char *col, *want;
    } cells[] = {
        {"params_total", "2280"},       {"params_gpu", "2280"},    {"weight_bytes", "4560"},
        {"fp8_weight_copy_bytes", "0"}, {"master_bytes", "9120"},  {"grad_bytes", "9120"},
        {"optim_m_bytes", "9120"},      {"optim_v_bytes", "3044"}, {"dp", "3"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        CHECKF(!strcmp(csv_cell(csv, cells[i].col), cells[i].want), "%s: '%s', expected %s", cells[i].col,
               csv_cell(csv, cells[i].col), cells[i].want);
    free(csv);
}

static void test_text_report(void)
{
    Plan p = plan_for("te-fp8");
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    Err e;
    CHECK(plan_write_text(&p, f, &e) == ST_OK);
    fclose(f);
    /* every term and collective the model has, even zero ones; a dense model lists no expert ones */
    for (int i = 0; i < MT_COUNT_; i++)
        if (plan_term_applies(&p, (MemTermId)i))
            CHECK_CONTAINS(s, mem_term_name((MemTermId)i));
        else
            CHECKF(!strstr(s, mem_term_name((MemTermId)i)), "%s listed", mem_term_name((MemTermId)i));
    for (int i = 0; i < CO_COUNT_; i++)
        if (plan_coll_applies(&p, (CollectiveId)i))
            CHECK_CONTAINS(s, coll_name((CollectiveId)i));
        else
            CHECKF(!strstr(s, coll_name((CollectiveId)i)), "%s listed", coll_name((CollectiveId)i));
    CHECK(!plan_term_applies(&p, MT_WEIGHT_EXPERT) && !plan_coll_applies(&p, CO_EP_DISPATCH_FWD));
    CHECK(plan_term_applies(&p, MT_TRANSIENT) && plan_coll_applies(&p, CO_DP_GRAD_RS));
    CHECK_CONTAINS(s, "verdict: FITS");
    CHECK_CONTAINS(s, "capacity");
    CHECK_CONTAINS(s, "pipeline_bubble");
    CHECK_CONTAINS(s, "compute-only FP8");
    CHECK_CONTAINS(s, "assumptions: GB = 1e9 B");
    free(s);
    /* per-term JSON names every term with its bytes */
    char *json = render(plan_terms_table(&p), TABLE_JSON);
    CHECK_CONTAINS(json, "{\"term\": \"fp8_rowwise\", \"category\": \"fp8_copy\", \"dtype\": \"e4m3\"");
    free(json);
}

static void test_compare_table(void)
{
    Plan ps[3] = {plan_for("megatron-bf16"), plan_for("te-fp8"), plan_for("fp8lm")};
    char *txt = render(plan_compare_table(ps, 3), TABLE_TEXT);
    CHECK_CONTAINS(txt, "megatron-bf16");
    CHECK_CONTAINS(txt, "fp8_weight_copies");
    CHECK_CONTAINS(txt, "total_memory");
    CHECK_CONTAINS(txt, "vs first");
    free(txt);
    CHECK(plan_compare_table(ps, 0) == NULL);
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_summary_schema_golden);
    RUN(test_summary_state_columns);
    RUN(test_text_report);
    RUN(test_compare_table);
    free(cat);
    return test_summary();
}
