/* tests/unit/test_fidelity_fit.c — the one value per GPU fitted to data (docs/planner.md, `sustained` in
 * models/gpus.csv) is the rule's optimum on models/measured.csv: for H100 SXM, B200, GB200, GB300 and the 96 GB H100
 * the 0.01-grid value with the lowest throughput MAE over that GPU's dense dev runs, checked against its neighbours on
 * the grid (docs/fidelity.md, "Dense Blackwell runs"). The other figures of `fp8plan report fidelity` are pinned in
 * test_fidelity.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/fidelity_report.h"
#include "support/fixtures.h"
#include "test.h"
#include "planner/arch.h"

static MeasuredRun runs[MEASURED_MAX_RUNS];
static FidelityRow rows[MEASURED_MAX_RUNS];

static int load(const Catalog *c, int *n) { return fx_measured(c, runs, n); }

/* MAE (percent) and row count of the dense dev runs on one GPU, with the plans as the catalog now gives them. */
static double dense_dev_mae(int n, const char *gpu, int *rows_out)
{
    FidelitySummary s;
    Err e;
    *rows_out = 0;
    if (fidelity_evaluate(runs, n, FIDELITY_DEFAULT_HOLDOUT, 0, rows, &s, &e) != ST_OK) return NAN;
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!rows[i].holdout && !runs[i].model->experts && !isnan(rows[i].tok_err) && !strcmp(runs[i].gpu->name, gpu))
            sum += fabs(rows[i].tok_err), k++;
    *rows_out = k;
    return k ? 100 * sum / k : NAN;
}

/* The one value per GPU fitted to data (docs/planner.md): gpus.csv's `sustained` of H100 SXM, B200, GB200, GB300 and
 * the 96 GB 500 W H100 is the value on the 0.01 grid with the lowest throughput MAE over that GPU's dense dev runs
 * (docs/fidelity.md, "Dense Blackwell runs", "Dense GB300 runs" and "The 96 GB H100's BF16 ceiling"). Pinned as the fit
 * gave it once mxfp8-param gathered its parameters in BF16 (every optimum unchanged): GB300 0.80 (6 runs, 1.900 %; 0.79
 * 2.272 %, 0.81 2.178 %; 1.893 % with the FP8 gather; 17.34 % at the H100 value 0.66 it had before), B200 0.60 (8 runs,
 * 5.828 %; 0.59 6.176 %, 0.61 5.877 %; 5.598 % with the FP8 gather), GB200 0.64 (18 runs, 6.016 %; 0.63 6.053 %, 0.65
 * 6.291 %; 6.017 % with the FP8 gather, 5.996 % before NeMo 25.04's and 25.07's FP8-CS runs took their FP8 parameters
 * too), refitted when Megatron-Bridge's FP8 runs were planned with FP8 parameters (recipes mxfp8-param,
 * te-fp8-current-param: B200 0.62 -> 0.60, GB200 stays), and before that when MXFP8's GEMMs were rated apart (B200 0.62
 * at 5.733 %, GB200 0.64 at 5.993 %; test_mxfp8_gemm_rate_fit; before: B200 0.59 at 5.656 %, GB200 0.60 at 6.528 %,
 * after MXFP8's kernels; first fit: 0.59 at 5.739 %, 0.61 at 6.525 %); h100-hbm2e-96g 0.64 (18 torchtitan December 2024
 * runs, 5.243 %; 0.63 5.452 %, 0.65 5.360 %); h100-sxm 0.65 (35 runs: NeMo 24.07, llm-foundry H100, FP8-LM Table 5;
 * 5.607 %; 0.64 5.785 %, 0.66 5.690 %; 0.66 over the 33 runs before FP8-LM's GPT-7B and 13B TE rows; docs/fidelity.md,
 * "H100 SXM's sustained share refitted by the rule"). A change to measured.csv or the model that moves the optimum off
 * these values fails here, and the value is refitted by the rule, not by hand. */
static void test_sustained_fit(void)
{
    Catalog *c = fx_catalog();
    int n = 0;
    CHECK(load(c, &n) == 0);
    static const struct {
        const char *gpu;
        double sustained, mae_pct;
        int rows;
    } fits[] = {{"b200", 0.60, 5.828, 8},
                {"gb200", 0.64, 6.016, 18},
                {"gb300", 0.80, 1.900, 6},
                {"h100-hbm2e-96g", 0.64, 5.243, 18},
                {"h100-sxm", 0.65, 5.607, 35}};
    for (size_t f = 0; f < sizeof fits / sizeof fits[0]; f++) {
        GpuSpec *g = (GpuSpec *)catalog_gpu(c, fits[f].gpu);
        CHECKF(g != NULL, "%s: not in the catalog", fits[f].gpu);
        if (!g) continue;
        CHECK_NEAR(g->sustained, fits[f].sustained, 0);
        int k = 0, k_lo = 0, k_hi = 0;
        double at = dense_dev_mae(n, fits[f].gpu, &k);
        g->sustained = fits[f].sustained - 0.01;
        double lo = dense_dev_mae(n, fits[f].gpu, &k_lo);
        g->sustained = fits[f].sustained + 0.01;
        double hi = dense_dev_mae(n, fits[f].gpu, &k_hi);
        g->sustained = fits[f].sustained;
        CHECK_EQ_INT(k, fits[f].rows);
        CHECK(k_lo == k && k_hi == k);
        CHECKF(fabs(at - fits[f].mae_pct) < 0.001, "%s: dense dev MAE %.4f %%, pinned %.3f %%", fits[f].gpu, at,
               fits[f].mae_pct);
        CHECKF(at < lo && at < hi,
               "%s: sustained %.2f is not the grid optimum (MAE %.3f; %.3f at -0.01, %.3f at +0.01)", fits[f].gpu,
               fits[f].sustained, at, lo, hi);
    }
    free(c);
}

/* The mean |planned / measured - 1| (percent) of the MXFP8 / FP8-CS throughput ratio over the dense dev runs published
 * both ways (a "-mxfp8-" id and its "-fp8cs-" twin: the same release, GPU and model), *pairs_out their count. */
static double mx_pair_mae(int n, int *pairs_out)
{
    FidelitySummary s;
    Err e;
    *pairs_out = 0;
    if (fidelity_evaluate(runs, n, FIDELITY_DEFAULT_HOLDOUT, 0, rows, &s, &e) != ST_OK) return NAN;
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *mx = strstr(runs[i].id, "-mxfp8-");
        if (!mx || rows[i].holdout || runs[i].model->experts || isnan(rows[i].tok_err)) continue;
        char twin[MEASURED_ID_MAX];
        snprintf(twin, sizeof twin, "%.*s-fp8cs-%s", (int)(mx - runs[i].id), runs[i].id, mx + strlen("-mxfp8-"));
        for (int j = 0; j < n; j++)
            if (!strcmp(runs[j].id, twin) && !rows[j].holdout && !isnan(rows[j].tok_err)) {
                double meas = runs[i].tok_s_gpu / runs[j].tok_s_gpu;
                double pred = rows[i].pred_tok / rows[j].pred_tok;
                sum += fabs(pred / meas - 1), k++;
            }
    }
    *pairs_out = k;
    return k ? 100 * sum / k : NAN;
}

/* The MXFP8 GEMM rate on Blackwell (planner/arch.c arch_mxfp8_gemm_rel_sm100, GpuSpec.mx_gemm_rel): the 0.01-grid
 * value with the lowest MAE of the planned MXFP8 / FP8-CS throughput ratio over the 8 dense dev pairs (Megatron-Bridge
 * 25.09 Llama 3 8B and 3.1 405B on B200, 8B on GB200; 26.02.01, 26.04.01 and 26.06 405B on GB200; 26.04.01 and 26.06
 * 405B on GB300), the same value for B200, GB200 and GB300 (the same cuBLAS kernels on SM 10.x). The ratio cancels the sustained share, which scales both runs of
 * a pair; fitted after the kernels MXFP8 runs were planned (plan_kernels.c) and before the shares were refitted, and
 * still the optimum after, after the FP8 parameters of Megatron-Bridge's runs (recipes mxfp8-param and
 * te-fp8-current-param: 1.15 %; 1.30 at 0.89, 1.16 at 0.91; before them 1.11 %, 1.26 and 1.12) and with GB300's two
 * dense pairs (26.04.01 and 26.06 Llama 3.1 405B; GB300 is SM 10.3, the same cuBLAS kernels): 8 pairs, pinned as the
 * fit gives it: 0.90 (1.26 %; 1.37 at 0.89, 1.26 at 0.91 (1.264)); since mxfp8-param gathers its parameters in BF16
 * (Megatron-Core's BF16 view of the gradient buffer): 0.90, 1.49 % (1.60 at 0.89, 1.50 at 0.91). */
static void test_mxfp8_gemm_rate_fit(void)
{
    Catalog *c = fx_catalog();
    int n = 0;
    CHECK(load(c, &n) == 0);
    const char *gpus[] = {"b200", "gb200", "gb300"};
    GpuSpec *g[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (GpuSpec *)catalog_gpu(c, gpus[i]);
        CHECKF(g[i] != NULL, "%s: not in the catalog", gpus[i]);
        if (!g[i]) return free(c);
    }
    CHECK_NEAR(arch_mxfp8_gemm_rel_sm100, 0.90, 0);
    int k = 0, k_lo = 0, k_hi = 0;
    double at = mx_pair_mae(n, &k);
    for (int i = 0; i < 3; i++) g[i]->mx_gemm_rel = 0.89;
    double lo = mx_pair_mae(n, &k_lo);
    for (int i = 0; i < 3; i++) g[i]->mx_gemm_rel = 0.91;
    double hi = mx_pair_mae(n, &k_hi);
    CHECK_EQ_INT(k, 8);
    CHECK(k_lo == k && k_hi == k);
    CHECKF(fabs(at - 1.49) < 0.005, "MXFP8 / FP8-CS dev pairs: MAE %.4f %%, pinned 1.49 %%", at);
    CHECKF(at < lo && at < hi, "MXFP8 GEMM rate 0.90 is not the grid optimum (MAE %.3f; %.3f at 0.89, %.3f at 0.91)",
           at, lo, hi);
    free(c);
}

int main(void)
{
    RUN(test_sustained_fit);
    RUN(test_mxfp8_gemm_rate_fit);
    return test_summary();
}
