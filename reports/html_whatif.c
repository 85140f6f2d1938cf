/* reports/html_whatif.c — the what-if page of `report html` (see html_whatif.h). */
#include "reports/html_whatif.h"

#include "reports/html_fp8.h"
#include "reports/html_page.h"
#include "reports/html_plan.h"
#include "reports/html_seed.h"
#include "reports/plan_report.h"

Status html_whatif_page(FILE *f, const WhatIfPage *pg, Err *e)
{
    HtmlDoc d;
    char title[256], sub[512];
    const Plan *p0 = &pg->plans[0];
    snprintf(title, sizeof title, "fp8plan what-if: %s on %s", p0->in.model->name, p0->in.gpu->name);
    html_plan_layout_line(p0, sub, sizeof sub);
    html_begin(&d, f, title, sub);
    html_list_begin(&d);
    for (int i = 0; i < pg->n; i++) {
        const Plan *p = &pg->plans[i];
        html_li(&d, "%s: %s, %.2f of %.2f GB per GPU; %.0f tokens/s, %.3f s per step, MFU %.1f %% of the BF16 peak",
                p->in.recipe->name, p->fits ? "FITS" : "OOM", plan_gb(p->total_bytes), plan_gb(p->capacity_bytes),
                p->tokens_per_s, p->time.step_s, p->mfu_bf16_pct);
    }
    html_list_end(&d);
    html_plan_charts(&d, pg->plans, pg->n, pg->headroom_frac);
    html_h2(&d, "side-by-side", "Side by side");
    Table *t = plan_compare_table(pg->plans, pg->n);
    if (t) {
        html_table(&d, t, "compare", "as fp8plan compare prints it; change against the first recipe", 0);
        table_free(t);
    }
    html_h2(&d, "bytes-per-param", "Bytes per parameter");
    html_t1a_chart(&d, pg->t1a);
    html_h2(&d, "scale-granularity", "Scale granularity");
    html_p(&d, "%s.", pg->t1b_what);
    html_scales_chart(&d, pg->t1b);
    html_h2(&d, "delayed-scaling", "Delayed scaling");
    if (pg->trace) {
        html_p(&d, "The seed's worked example, an amax near 1 with one spike to 640, through %s.", pg->trace_what);
        html_scaling_charts(&d, pg->trace, NULL);
    } else {
        html_p(&d, "None of these recipes uses delayed scaling (fp8plan scaling --format html shows any trace).");
    }
    html_h2(&d, "more", "More");
    html_list_begin(&d);
    html_li(
        &d,
        "Quantization error by scale granularity: fp8plan quant-error --dist outliers --format html -o qerror.html");
    html_li(&d, "Every layout for N GPUs: fp8plan sweep --model %s --gpu %s --gpus %u --format html -o sweep.html",
            p0->in.model->name, p0->in.gpu->name, p0->world);
    html_list_end(&d);
    return html_end(&d, e);
}
