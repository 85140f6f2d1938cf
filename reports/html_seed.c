/* reports/html_seed.c — the seed's tables as charts (see html_seed.h). */
#include "reports/html_seed.h"

#include "reports/chart_bars.h"
#include "reports/html_fp8.h"

void html_t1a_chart(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "t1a",
        .title = "Bytes per parameter of each training state (Table 1a)",
        .desc = "Bytes per parameter of the linear layers' working weight, master, gradient and Adam m and v in each "
                "recipe's dtypes, then the cached FP8 weight copies; the seed's 16 (BF16 mixed precision), 18 "
                "(Megatron) and 6 (FP8-LM) are the states without the copies.",
        .axis = "bytes per parameter",
        .unit = "B/param",
        .decimals = 2,
        .cat_col = "recipe",
        .bars = {{.cols = {"weight_bytes_per_param", "master_bytes_per_param", "grad_bytes_per_param",
                           "adam_m_bytes_per_param", "adam_v_bytes_per_param", "fp8_copy_bytes_per_param"}}},
        .nbars = 1,
        .seg_labels = {"working weight", "master", "gradient", "Adam m", "Adam v", "FP8 weight copies"},
        .table_caption = "Table 1a: bytes per parameter, per recipe",
    };
    chart_bars(d, t, &s);
}

static void t5_charts(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "t5-memory",
        .title = "FP8-LM Table 5: memory per GPU, published and predicted",
        .desc = "GPT-7B, 13B and 175B on H100 as FP8-LM ran them; the whisker over each predicted bar is the band "
                "the check accepts (published +- tolerance). GB as the paper prints it, read as 1e9 B.",
        .axis = "memory per GPU (GB)",
        .unit = "GB",
        .decimals = 2,
        .cat_col = "model",
        .cat_col2 = "layout",
        .cat_col3 = "recipe",
        .only_col = "metric",
        .only_val = "memory",
        .bars = {{.label = "published", .cols = {"published"}},
                 {.label = "predicted",
                  .cols = {"predicted"},
                  .tol_pct_col = "tolerance_pct",
                  .tol_base_col = "published"}},
        .nbars = 2,
        .band_label = "accepted: published +- tolerance",
        .table_caption = "FP8-LM Table 5: published, predicted, error and tolerance (report seed's table5_fp8lm.csv)",
        .collapse_after = 1,
    };
    chart_bars(d, t, &s);
    BarSpec c = s;
    c.id = "t5-comm";
    c.title = "FP8-LM Table 5: weight-related communication, published and predicted";
    c.desc = "Bytes of the DP parameter all-gather and gradient reduce per GPU per step; the whisker is the accepted "
             "band. GB as the paper prints it, read as 1e9 B.";
    c.axis = "weight-related communication per GPU per step (GB)";
    c.only_val = "weight_comm";
    chart_bars(d, t, &c);
}

Status html_seed_page(FILE *f, const SeedPage *pg, Err *e)
{
    HtmlDoc d;
    html_begin(&d, f, "fp8plan report seed: the seed's tables, computed",
               "FP8-LM Table 5 against the planner, Table 1a bytes per parameter, Table 1b scale storage, the "
               "delayed-scaling example and Table 1c, each with the rows report seed writes as CSV");
    html_h2(&d, "table5", "FP8-LM Table 5");
    html_p(&d, "%d of %d checked figures within tolerance.", pg->checked - pg->outside, pg->checked);
    t5_charts(&d, pg->t5);
    html_h2(&d, "table1a", "Table 1a: bytes per parameter");
    html_t1a_chart(&d, pg->t1a);
    html_h2(&d, "table1b", "Table 1b: scale granularity");
    html_scales_chart(&d, pg->t1b);
    html_h2(&d, "scaling", "Delayed scaling: the spike to 640");
    html_scaling_charts(&d, pg->trace, NULL);
    html_h2(&d, "table1c", "Table 1c: the precision of every tensor");
    html_table(&d, pg->t1c, "t1c", "Table 1c, per recipe", 0);
    return html_end(&d, e);
}
