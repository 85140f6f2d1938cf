/* tests/unit/test_report_plan.c — the plan CSV schema (golden), the text
 * report's content, and the compare table. */
#include <stdlib.h>

#include "reports/plan_report.h"
#include "support/fixtures.h"
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

static void test_text_report(void)
{
    Plan p = plan_for("te-fp8");
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    Err e;
    CHECK(plan_write_text(&p, f, &e) == ST_OK);
    fclose(f);
    for (int i = 0; i < MT_COUNT_; i++) CHECK_CONTAINS(s, p.mem[i].name); /* every term, even zero ones */
    for (int i = 0; i < CO_COUNT_; i++) CHECK_CONTAINS(s, p.coll[i].name);
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
    RUN(test_text_report);
    RUN(test_compare_table);
    free(cat);
    return test_summary();
}
