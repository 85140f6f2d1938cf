/* tests/unit/test_fidelity.c — the planner against models/measured.csv: the
 * figures `fp8plan report fidelity` prints are pinned here so that a change
 * that makes them worse fails. Each MAE may rise by at most SLACK percentage
 * points over the value measured when it was pinned (a model change that
 * improves them should lower the pins); row counts are exact so new measured
 * rows are noticed and the pins revisited. Also: measured.csv's parse errors. */
#include <math.h>
#include <stdlib.h>

#include "reports/fidelity_report.h"
#include "support/fixtures.h"
#include "test.h"

static const double SLACK_PP = 0.5; /* percentage points an MAE may worsen before this fails */

static MeasuredRun runs[MEASURED_MAX_RUNS];
static FidelityRow rows[MEASURED_MAX_RUNS];

static int load(const Catalog *c, int *n) { return fx_measured(c, runs, n); }

static const FidelityGroup *group(const FidelityGroup *g, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(g[i].name, name)) return &g[i];
    return NULL;
}

/* n rows exactly; MAE at most pinned + SLACK_PP (both in percent). */
static void pin(const FidelityGroup *g, const char *what, int n, double mae_pct)
{
    CHECKF(g != NULL, "%s: no such group", what);
    if (!g) return;
    CHECKF(g->n == n, "%s: %d rows, pinned %d (measured.csv changed: revisit the pins)", what, g->n, n);
    CHECKF(100 * g->mae <= mae_pct + SLACK_PP, "%s: MAE %.2f %% is worse than the pinned %.2f %% (+%.1f)", what,
           100 * g->mae, mae_pct, SLACK_PP);
}

static void test_pinned_figures(void)
{
    Catalog *c = fx_catalog();
    int n = 0;
    CHECK(load(c, &n) == 0);
    FidelitySummary s;
    Err e;
    CHECK(fidelity_evaluate(runs, n, FIDELITY_DEFAULT_HOLDOUT, 0, rows, &s, &e) == ST_OK);
    /* pinned from `fp8plan report fidelity` (throughput MAE, percent); Megatron-Bridge's FP8 runs with FP8 parameters
     * (recipes mxfp8-param, te-fp8-current-param) and B200's share refitted (0.62 -> 0.60): all 7.42 -> 7.46, dev
     * 6.37 -> 6.35, hold-out 9.76 -> 9.91 (25.11's B200 rows slower with the share), megatron-core 5.45 -> 5.56;
     * with 6 dense GB300 dev runs (Megatron-Bridge 26.02.01-26.06) and GB300's share fitted on them (0.66 -> 0.80):
     * all 7.23 over 148, dev 6.10 over 104, megatron-core 5.17 over 56; with FP8-LM's GPT-7B and 13B TE rows (Table 5
     * as revised): all 7.19 over 150, dev 6.04 over 106, megatron-lm 7.35 -> 6.77 over 18, Table 5 4.24 -> 3.82 over 10;
     * with llm-foundry's FP8 input casts no longer doubled in the eager backward (plan_kernels.c): all 7.16, dev 6.00,
     * llm-foundry 9.76 -> 9.66; H100 SXM's share refitted by the rule on its 35 dense dev runs (gpus.csv 0.66 -> 0.65,
 * with H100 PCIe, H200, H800 and L40S, which take its value): all 7.16 -> 7.14, dev 6.00 -> 5.97, hold-out 9.95 ->
 * 9.96 (torchtitan's two H200 rows, torchtitan-2025 12.21 -> 13.37), megatron-core 5.24 -> 5.30, megatron-lm 6.77 ->
 * 6.96 and Table 5 3.82 -> 4.17 (FP8-LM's rows, mostly too slow already, slower), torchtitan 6.79 -> 6.63 (the
 * pin was 7.78), llm-foundry 9.66 -> 9.49 */
    pin(&s.all, "all", 150, 7.14);
    pin(&s.dev, "dev", 106, 5.97);
    pin(&s.holdout, "hold-out", 44, 9.96);
    pin(group(s.stack, s.nstacks, "megatron-core"), "megatron-core", 56, 5.30);
    pin(group(s.stack, s.nstacks, "megatron-lm"), "megatron-lm", 18, 6.96);
    pin(group(s.stack, s.nstacks, "torchtitan"), "torchtitan", 27, 6.63);
    pin(group(s.stack, s.nstacks, "torchtitan-2025"), "torchtitan-2025", 2, 13.37);
    pin(group(s.stack, s.nstacks, "llm-foundry"), "llm-foundry", 44, 9.49);
    pin(group(s.stack, s.nstacks, "deepspeed"), "deepspeed", 3, 9.05);
    pin(&s.table5, "FP8-LM Table 5", 10, 4.17);
    pin(&s.mem_traced, "memory, allocator-traced", 27, 6.97);
    CHECK_EQ_INT(s.false_oom, 0); /* no run that really ran is predicted above its GPU's memory */
    /* every run is a valid plan, the Megatron-Core MoE ModelZoo's PP 32 x VPP 3 Qwen3-235B run too: its end chunks
     * hold the embedding or the loss alone (account_for_embedding/loss_in_pipeline_split: 2, 3 x 30, 2 layers) */
    CHECK_EQ_INT(s.unplanned, 0);
    for (int i = 0; i < n; i++) CHECKF(rows[i].planned, "%s not planned: %s", runs[i].id, rows[i].why);
    /* ran, but above 0.95 of capacity in the plan: 11 dense and MoE runs, and 12 of the dense Blackwell runs added
     * for the sustained-share fit (Llama 3.1 405B at PP 16 and Llama 3 70B under Megatron-FSDP on GB200, 405B MXFP8
     * on B200: benchmark layouts that fill the GPU); 23 -> 17 with Megatron-Bridge's FP8 parameters (no BF16 weight
     * copy: 405B MXFP8 on GB200 185.8 -> 174.0 GiB) */
    CHECK(s.over_limit <= 17);
    /* row by row: FP8-LM Table 5 throughput within +-15 % (10 of 10: the micro-batch 4 row -11 %) and
     * allocator-traced memory within +-8 % (20 of 29: the dense 27 and torchao's two MoE runs on 4 B200) */
    int t5 = 0, t5_in = 0, mem = 0, mem_in = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(runs[i].source_id, FIDELITY_TABLE5_SOURCE) && !isnan(rows[i].tok_err))
            t5++, t5_in += fabs(rows[i].tok_err) <= 0.15;
        if ((runs[i].mem_kind == MEMK_ALLOCATED || runs[i].mem_kind == MEMK_RESERVED) && !isnan(rows[i].mem_err))
            mem++, mem_in += fabs(rows[i].mem_err) <= 0.08;
    }
    CHECK_EQ_INT(t5, 10);
    CHECK(t5_in >= 10);
    CHECK_EQ_INT(mem, 29);
    CHECK(mem_in >= 20);
    /* a row's error is predicted / measured - 1, and the MAE is the mean of |error| over the rows with
     * a published throughput */
    double sum = 0, xsum = 0;
    int k = 0, xk = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(rows[i].tok_err)) {
            CHECK_REL(rows[i].tok_err, rows[i].pred_tok / rows[i].meas_tok - 1, 1e-12);
            if (rows[i].run->model->experts) /* mixture-of-experts runs are summarised apart */
                xsum += fabs(rows[i].tok_err), xk++;
            else
                sum += fabs(rows[i].tok_err), k++;
        }
    CHECK_EQ_INT(k, s.all.n);
    CHECK_REL(s.all.mae, sum / k, 1e-12);
    CHECK_EQ_INT(xk, s.moe.n);
    CHECK_REL(s.moe.mae, xsum / xk, 1e-12);
    /* the mixture-of-experts runs (Megatron-Bridge 25.09-26.06, NeMo 25.02-25.07, NeMo AutoModel, the Megatron-Core
     * MoE ModelZoo, torchao/torchtitan, the DeepSeek-V3 report): pinned as the planner gives them; the fine-grained
     * Qwen3-30B-A3B rows wait on the host (plan_moe_time.c's host issue, its time per operation chosen on the dev
     * rows); the runs whose release's preset overlaps the all-to-alls (moe_a2a_overlap, A2A_1F1B) say so in their notes
     * (overlap_ep=1), which the hold-out figure pays for (28.60 -> 30.57: 25.11's Qwen3-30B-A3B on H100 +134 -> +176 %);
     * overlapped, they run in the merged 1F1B schedule and, on H100 with TP, without TE's TP overlap (20.52 -> 20.29),
     * its warm-up and cool-down unmerged (20.29 -> 19.95); since then rows checked against their releases' presets
     * and the host time re-chosen on the dev rows (-> 14.95, dev 14.72, hold-out 15.46), and PyTorch's grouped GEMMs
     * on Blackwell at their measured rates (planner/arch.c: torchao's four runs, -> 14.74, dev 14.40); B200's and GB200's
     * sustained shares fitted to their dense dev runs (gpus.csv: 0.66 -> 0.59 and 0.61; -> 12.34, dev 11.60, hold-out
     * 13.95), no value chosen on a MoE row; MXFP8's quantize and scale-swizzle kernels as Transformer Engine runs
     * them (plan_kernels.c, plan_moe_time.c) and GB200's share refitted by the rule (0.61 -> 0.60; -> 12.28, dev
     * 11.56, hold-out 13.86; MoE dev on B200 13.22 -> 13.37, on GB200 10.58 -> 10.11); MXFP8's GEMMs at 0.90 of the
     * per-tensor FP8 rate (fitted on the dense FP8-CS / MXFP8 dev pairs: test_fidelity_fit.c) and B200's and GB200's
     * shares refitted by the rule on their dense dev runs (0.59 -> 0.62, 0.60 -> 0.64: the MXFP8 rows no longer pull
     * them down) -> 12.94, dev 12.57, hold-out 13.74: the Blackwell MoE rows, too fast already, get faster with the
     * shares (MoE dev on B200 -> 15.55, GB200 -> 11.19; docs/fidelity.md); Megatron-Bridge's FP8 runs with FP8
     * parameters and B200's share refitted by the rule (0.62 -> 0.60) -> 12.50, dev 12.10, hold-out 13.38 (MoE dev
     * on B200 14.02); GB300's share fitted on its dense dev runs (0.66 -> 0.80: its four MoE rows, -15 to -11 %,
     * to -2.5 to +13.3 %) -> 12.16, dev 11.89, hold-out 12.75; query/key norms as kernels (-> 12.11, dev 11.84),
     * the all-to-all dispatcher's sort by local expert and back (-> 11.64, dev 11.25, hold-out 12.50) and two dev
     * rows naming the dispatcher their sources give (-> 11.53, dev 11.09); torchao's MXFP8 grouped GEMMs quantizing
     * each operand one dim per pass and rearranging their scales (-> 11.51, dev 11.07); H100 SXM's share refitted by
     * the rule (0.66 -> 0.65) -> 11.41, dev 10.97, hold-out 12.37 (MoE dev on H100 10.81 -> 10.59); GPT-OSS's clamped
     * GLU and biased experts as Megatron-Core runs them (plan_moe_extra.c; 26.06's run with the fused expert MLP,
     * te_op_fuser=1, without) -> 10.34, dev 10.06, hold-out 10.95; DeepSeek-style block-scaled FP8 GEMMs on Hopper at
     * 0.96 of the per-tensor rate (planner/arch.c arch_blockwise_gemm_rel_sm90: the 25.09 blockwise H100 row +13.0 ->
     * +11.3 %, DeepSeek-V3's H800 report +6.6 -> +5.0 %) -> 10.29, dev 9.99 */
    pin(&s.moe, "mixture of experts", 67, 10.29);
    /* the MoE runs split by the same hold-out list: Megatron-Bridge 25.11 and 26.02 held out */
    CHECK_EQ_INT(s.moe_dev.n + s.moe_holdout.n, s.moe.n);
    /* 11.89 -> 11.88 -> 11.90: the ModelZoo MXFP8 rows, then NeMo 25.04 / 25.07 FP8-CS rows, with FP8 parameters;
     * -> 11.09 with the kernels and dispatcher facts above, 11.07 with torchao's MXFP8 quantize passes, 10.97 with
     * H100's share at 0.65, 10.06 with GPT-OSS's clamps and expert biases, 9.99 with the block-scaled Hopper rate */
    pin(&s.moe_dev, "mixture of experts, dev", 46, 9.99);
    pin(&s.moe_holdout, "mixture of experts, hold-out", 21, 10.95);
    /* the MoE dev runs per GPU: every dev row in exactly one, no held-out row in any; pinned as the planner gives
     * them (the Blackwell rows carry the bias: docs/fidelity.md) */
    int ngpu = 0;
    for (int i = 0; i < s.nmoe_dev_gpus; i++) ngpu += s.moe_dev_gpu[i].n;
    CHECK_EQ_INT(ngpu, s.moe_dev.n);
    pin(group(s.moe_dev_gpu, s.nmoe_dev_gpus, "h100-sxm"), "MoE dev on H100", 18, 9.66);
    pin(group(s.moe_dev_gpu, s.nmoe_dev_gpus, "b200"), "MoE dev on B200", 14, 12.58);
    pin(group(s.moe_dev_gpu, s.nmoe_dev_gpus, "gb200"), "MoE dev on GB200", 12, 8.51);
    /* each planned row's time terms add up to its step (fidelity_terms.csv's shares to 100 %): no term is lost or
     * counted twice between plan_time.c and the report */
    for (int i = 0; i < n; i++) {
        if (!rows[i].planned) continue;
        const TimeBreakdown *b = &rows[i].time;
        double terms = b->gemm_s + b->attn_s + b->nongemm_s + b->tp_comm_s + b->cp_comm_s + b->pp_comm_s + b->bubble_s +
                       b->dp_comm_s + b->optimizer_s + b->weight_cast_s + b->other_s + b->expert_gemm_s +
                       b->moe_route_s + b->ep_comm_s + b->moe_host_s;
        CHECKF(fabs(terms / b->step_s - 1) < 1e-9, "%s: the terms add up to %.9g s, the step is %.9g s",
               rows[i].run->id, terms, b->step_s);
    }
    Table *tt = fidelity_terms_table(rows, n);
    CHECK(tt != NULL);
    table_free(tt);
    /* no MoE run that really trained is planned above its GPU's memory; two are uncertain (the DeepSeek-V3 report's
     * pre-training, and NeMo AutoModel's DeepSeek-V3 on 1,024 H100, whose configurations disagree on activation
     * checkpointing: unknown=act_ckpt) */
    CHECK_EQ_INT(s.moe_false_oom, 0);
    CHECK_EQ_INT(s.moe_uncertain, 2);
    /* what FP8 buys over BF16: every configuration measured in both precisions (torchtitan 2412 x 2,
     * llm-foundry H100 x 5, FP8-LM x 4 with GPT-175B's TE and MS-AMP, torchao x 2) */
    static FidelityPair pairs[FIDELITY_MAX_PAIRS];
    int np = fidelity_pairs(rows, n, pairs, FIDELITY_MAX_PAIRS);
    FidelityGroup pa, pd, ph;
    fidelity_pairs_summary(pairs, np, &pa, &pd, &ph);
    /* 7.70 -> 7.95 with PyTorch's grouped GEMMs on Blackwell: torchao's Llama 4 Scout pair on GB200 +4.9 -> +12.0 %;
     * -> 7.49 with MXFP8's GEMMs rated apart (DeepSeek-V3 on 256 GB300 +22.2 -> +16.9 %, Scout +11.3 -> +9.2 %);
     * 6.49 since (docs/fidelity.md), 6.49 with Megatron-Bridge's FP8 parameters (DeepSeek-V3 on GB300 +17.1 %),
     * 6.35 with GB300's fitted share (+14.7 %: its BF16 run -14.9 -> -1.3 %, its MXFP8 run -0.4 -> +13.3 %);
     * 6.12 over 18 with FP8-LM's GPT-7B and 13B TE pairs (+3.5, +5.2 %), then 6.60 with the eager backward no longer
     * doubling the forward's input casts: llm-foundry's MPT pairs 3B 512 +3.6 -> +10.1, 3B 8k +4.0 -> +7.7, 3B 32k
     * +9.5 -> +10.7, 1B 32k +1.3 -> +2.8, 1B 512 -5.6 -> +1.2 % (the doubled casts had hidden an FP8 cost of these runs
     * that is not found: docs/fidelity.md); 6.54 with Megatron's all-to-all dispatcher sorting its received rows
     * (DeepSeek-V3 on GB300 +14.6 -> +13.6 %); 6.51 with torchao's MXFP8 grouped quantize passes and scale
     * rearranges (Llama 4 Scout on GB200 +8.9 -> +8.2 %, the 2-layer run on B200 -18.9 -> -19.1 %); 6.54 at this
 * pin's revision, 6.65 with H100 SXM's share refitted by the rule (0.66 -> 0.65: the 13 H100 pairs' FP8 side gains
 * more, e.g. FP8-LM GPT-175B TE +14.7 -> +14.9 %, llm-foundry MPT-3B 512 +10.1 -> +10.3 %) */
    pin(&pa, "FP8/BF16 speed-up", 18, 6.65);
    CHECK_EQ_INT(ph.n, 3);       /* torchao's float8 README; Megatron-Bridge 25.11's DeepSeek-V3 on 256 GB300 */
    for (int i = 0; i < np; i++) /* the micro-batch-4 FP8-LM row changes more than the precision */
        CHECKF(strcmp(pairs[i].fp8->run->id, "fp8lm-gpt175b-fp8lm-mbs4"), "pair %d takes the mbs-4 row", i);
    free(c);
}

/* fidelity_pairs on rows typed in: which runs pair, and each speed-up and error worked by hand. */
static void test_pairs_oracle(void)
{
    Catalog *c = fx_catalog();
    static const char csv[] =
        "id,source_id,stack,model,gpu,gpus,tp,pp,vpp,cp,dp,mbs,gbs,seq,recipe,sharding,recompute,"
        "first_stage_layers,last_stage_layers,sequence_parallel,dropout,attention,kernel_fusion,fused_swiglu,"
        "tp_overlap,main_grad,grad_acc_fusion,tokens_per_s_per_gpu,step_s,tflops_per_gpu,mfu_pct,mem_gib,mem_kind,"
        "notes,source\n"
        /* 0: the BF16 run */
        "a,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,1000,,,,,,n,s\n"
        /* 1: FP8, the same configuration: pairs with a */
        "b,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,torchao-fp8-tensorwise,zero3,none,,,,,,,,,,,1500,,,,,,"
        "n,s\n"
        /* 2: FP8 at micro-batch 2: another configuration */
        "c,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,2,128,8192,torchao-fp8-tensorwise,zero3,none,,,,,,,,,,,1700,,,,,,"
        "n,s\n"
        /* 3: a second FP8 recipe of a's configuration: pairs with a too */
        "d,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,torchao-fp8-rowwise,zero3,none,,,,,,,,,,,1200,,,,,,"
        "n,s\n"
        /* 4: the same configuration from another source */
        "e,t,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,torchao-fp8-tensorwise,zero3,none,,,,,,,,,,,1600,,,,,,"
        "n,s\n"
        /* 5: FP8 eager (the run's kernel fusion differs from the stack's compile) */
        "f,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,torchao-fp8-tensorwise,zero3,none,,,,,,eager,,,,,1400,,"
        ","
        ",,,n,s\n"
        /* 6: FP8, a's configuration, but the planner refused it (planned = 0 below) */
        "g,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,torchao-fp8-tensorwise,zero3,none,,,,,,,,,,,1500,,,,,,"
        "n,s\n";
    int n = 0;
    Err e;
    CHECKF(measured_parse(c, csv, strlen(csv), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(n, 7);
    static const struct {
        double meas, pred;
        int planned, holdout;
    } set[7] = {
        {1000, 1100, 1, 0}, {1500, 1980, 1, 0}, {1700, 2000, 1, 0}, {1200, 1210, 1, 1},
        {1600, 1500, 1, 0}, {1400, 1800, 1, 0}, {1500, 1900, 0, 0},
    };
    FidelityRow fr[7];
    memset(fr, 0, sizeof fr);
    for (int i = 0; i < n; i++)
        fr[i].run = &runs[i], fr[i].meas_tok = set[i].meas, fr[i].pred_tok = set[i].pred,
        fr[i].planned = set[i].planned, fr[i].holdout = set[i].holdout;
    FidelityPair p[8];
    CHECK_EQ_INT(fidelity_pairs(fr, n, p, 8), 2);
    /* a-b: measured 1500 / 1000 = 1.5, predicted 1980 / 1100 = 1.8, error 1.8 / 1.5 - 1 = +0.2 */
    CHECK(p[0].bf16 == &fr[0] && p[0].fp8 == &fr[1]);
    CHECK_REL(p[0].meas, 1.5, 1e-15);
    CHECK_REL(p[0].pred, 1.8, 1e-15);
    CHECK_REL(p[0].err, 0.2, 1e-14);
    /* a-d: measured 1200 / 1000 = 1.2, predicted 1210 / 1100 = 1.1, error 1.1 / 1.2 - 1 = -1/12 */
    CHECK(p[1].bf16 == &fr[0] && p[1].fp8 == &fr[3]);
    CHECK_REL(p[1].err, -1.0 / 12.0, 1e-14);
    /* MAE (0.2 + 1/12) / 2 = 17/120, bias (0.2 - 1/12) / 2 = 7/120; dev a-b alone, hold-out a-d alone */
    FidelityGroup all, dev, ho;
    fidelity_pairs_summary(p, 2, &all, &dev, &ho);
    CHECK_EQ_INT(all.n, 2);
    CHECK_REL(all.mae, 17.0 / 120.0, 1e-14);
    CHECK_REL(all.bias, 7.0 / 120.0, 1e-14);
    CHECK(dev.n == 1 && ho.n == 1);
    CHECK_REL(dev.bias, 0.2, 1e-14);
    CHECK_REL(ho.bias, -1.0 / 12.0, 1e-14);
    /* a room for one: the count says two, the one filled is a-b */
    FidelityPair one[1];
    CHECK_EQ_INT(fidelity_pairs(fr, n, one, 1), 2);
    CHECK(one[0].fp8 == &fr[1]);
    /* a BF16 run without a published throughput pairs with nothing */
    fr[0].meas_tok = NAN;
    CHECK_EQ_INT(fidelity_pairs(fr, n, p, 8), 0);
    Table *t = fidelity_pairs_table(p, 0);
    CHECK(t != NULL && table_rows(t) == 0);
    table_free(t);
    free(c);
}

static void test_measured_errors(void)
{
    Catalog *c = fx_catalog();
    static const char head[] =
        "id,source_id,stack,model,gpu,gpus,tp,pp,vpp,cp,dp,mbs,gbs,seq,recipe,sharding,recompute,"
        "first_stage_layers,last_stage_layers,sequence_parallel,dropout,attention,kernel_fusion,fused_swiglu,tp_"
        "overlap,"
        "main_grad,grad_acc_fusion,tokens_per_s_per_gpu,step_s,tflops_per_gpu,mfu_pct,mem_gib,mem_kind,notes,source\n";
    struct {
        const char *row, *want;
    } bad[] = {
        {"r,s,megatron-x,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "row 2, column stack: 'megatron-x' is not a stack"},
        {"r,s,torchtitan,llama9,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n", "column model"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf99,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "column recipe"},
        {"r,s,torchtitan,llama3-8b,h999,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "row 2, column gpu: 'h999' is not a GPU in the catalog (known: "},
        /* stack, model, GPU and recipe are judged in that order: the first unknown one is named */
        {"r,s,megatron-x,llama9,h999,8,1,1,,,8,1,128,8192,bf99,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "row 2, column stack: 'megatron-x' is not a stack in the catalog (known: "},
        {"r,s,torchtitan,llama9,h999,8,1,1,,,8,1,128,8192,bf99,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "row 2, column model: 'llama9' is not a model in the catalog (known: "},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,4,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "tp*pp*cp*dp"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,zero9,none,,,,,,,,,,,100,,,,,,n,s\n", "sharding"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,some,,,,,,,,,,,100,,,,,,n,s\n", "recompute"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,-5,,,,,,n,s\n",
         "tokens_per_s_per_gpu"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,70,peak,n,s\n",
         "mem_kind"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,,,,,,,n,s\n", "neither"},
        {"r,s,megatron-core,mixtral-8x7b,b200,8,1,1,,,8,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "column notes: a run of mixtral-8x7b (a model with experts) states its expert layout as 'ep=N'"},
        {"r,s,megatron-core,mixtral-8x7b,b200,8,1,1,,,8,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,ep=x,s\n",
         "column notes: 'ep=' must be followed by a whole number"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n"
         "r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "repeats row 2"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,maybe,,,,,,,,100,,,,,,n,s\n",
         "column sequence_parallel: 'maybe' is not yes or no"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,flash9,,,,,,100,,,,,,n,s\n",
         "column attention: 'flash9'"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,jit,,,,,100,,,,,,n,s\n",
         "column kernel_fusion: 'jit'"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,0.5,,,100,,,,,,n,s\n",
         "column tp_overlap: '0.5' is not yes or no"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,fp16,,100,,,,,,n,s\n",
         "column main_grad: 'fp16'"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,on,100,,,,,,n,s\n",
         "column grad_acc_fusion: 'on'"},
        /* physical bounds (catalog/measured.c says why): tokens/s per GPU [1e-3, 1e9], step_s [1e-6, 1e7],
         * tflops_per_gpu [1e-6, 1e5], mfu_pct [1e-6, 100], mem_gib [1e-6, 16384], gbs [1, 2^24]; a rate
         * derived from step_s as well: 128 x 8192 / 1e-6 s / 8 GPUs = 1.31072e11 tokens/s */
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,1e-300,,,,,,n,s\n",
         "column tokens_per_s_per_gpu: '1e-300' is out of range [0.001, 1e+09]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,1e308,,,,,,n,s\n",
         "column tokens_per_s_per_gpu: '1e308' is out of range [0.001, 1e+09]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,18446744073709551616,,,,,,n,"
         "s\n",
         "column tokens_per_s_per_gpu: '18446744073709551616' is out of range"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,,1e-9,,,,,n,s\n",
         "column step_s: '1e-9' is out of range [1e-06, 1e+07]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,,0.000001,,,,,n,s\n",
         "column step_s: '0.000001' gives gbs x seq / step_s / gpus = 1.31072e+11 tokens/s per GPU"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,1e6,,,,n,s\n",
         "column tflops_per_gpu: '1e6' is out of range [1e-06, 100000]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,101,,,n,s\n",
         "column mfu_pct: '101' is out of range [1e-06, 100]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,1e5,allocated,n,s\n",
         "column mem_gib: '1e5' is out of range [1e-06, 16384]"},
        {"r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,16777217,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s\n",
         "column gbs: '16777217' is out of range [1, 16777216]"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s", head, bad[i].row);
        int n = 0;
        Err e = {0};
        CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_DATA, "row %u accepted", i);
        CHECKF(strstr(e.msg, "m.csv") && strstr(e.msg, bad[i].want), "row %u: %s", i, e.msg);
    }
    /* a good row: blank vpp/cp are 1, blank mbs is "not published" (0, planned as 1); step time and gbs give
     * tokens/s per GPU = 128 x 8192 / 2 s / 8 GPUs = 65,536 */
    const char *good =
        "r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,,128,8192,bf16,zero3,op,,,,,,,,,,,,2,,,70.5,reserved,n,s\n";
    char text[2048];
    snprintf(text, sizeof text, "%s%s", head, good);
    int n = 0;
    Err e;
    CHECK(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(runs[0].vpp, 1);
    CHECK_EQ_INT(runs[0].cp, 1);
    CHECK_EQ_INT(runs[0].mbs, 0);
    CHECK(runs[0].sharding == SHARD_ZERO3 && runs[0].recompute == RECOMPUTE_OP && runs[0].mem_kind == MEMK_RESERVED);
    CHECK_NEAR(measured_tokens(&runs[0]), 65536, 1e-9);
    PlanInput in;
    measured_plan_input(&runs[0], &in);
    CHECK(in.stack == catalog_stack(c, "torchtitan") && in.mbs == 1 && in.world == 8 && in.gbs == 128);
    CHECK(in.attn == ATTN_FLASH && in.fusion == FUSE_COMPILE); /* the stack's row applied */
    CHECK(in.fused_swiglu && !in.grad_acc_fusion && in.overlap_tp == 0 && in.sp && !in.dropout);
    CHECK(in.ep == 1 && in.etp == 1);
    /* a MoE run: its expert layout from the notes */
    const char *moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
                      "\"EP: ep=8 etp=2, as published\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECK(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK);
    measured_plan_input(&runs[0], &in);
    CHECK_EQ_INT(in.ep, 8);
    CHECK_EQ_INT(in.etp, 2);
    CHECK_EQ_INT(in.recompute_mods, 0); /* no recompute_modules= in the notes */
    /* Megatron's --recompute-modules of a run, from the notes: parsed into the plan's input, a bad name refused */
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
          "\"ep=8; recompute_modules=moe_act,layernorm; GA 8\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    measured_plan_input(&runs[0], &in);
    CHECK_EQ_INT(in.recompute_mods, RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_LAYERNORM);
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
          "\"ep=8; recompute_modules=moe,attn\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECK(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "row 2, column notes: recompute_modules='moe,attn': 'attn' is not a module");
    /* Megatron's --offload-modules of a run: parsed the same way */
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
          "\"ep=8; offload_modules=expert_fc1,moe_act; GA 8\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    measured_plan_input(&runs[0], &in);
    CHECK_EQ_INT(in.offload_mods, OFFLOAD_MOD_EXPERT_FC1 | OFFLOAD_MOD_MOE_ACT);
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
          "\"ep=8; offload_modules=expert_fc1,qkv_linear\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECK(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "row 2, column notes: offload_modules='expert_fc1,qkv_linear': 'qkv_linear' is not an "
                          "offload module");
    /* the schedule a MoE run used: its all-to-all overlap, DualPipe and the SMs its all-to-alls hold; its experts as
     * Transformer Engine's fused ops */
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,2,,,8,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,"
          "\"ep=8; overlap_ep=0.5: a2a overlap; dualpipe=1 ep_comm_sms=20 te_op_fuser=1\",s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    measured_plan_input(&runs[0], &in);
    CHECK(in.overlap_ep == 0.5 && in.dualpipe == 1 && in.ep_comm_sms == 20 && in.moe_fused_mlp == 1);
    moe = "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,ep=8,s\n";
    snprintf(text, sizeof text, "%s%s", head, moe);
    CHECK(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK);
    measured_plan_input(&runs[0], &in);
    CHECK(in.overlap_ep == catalog_stack(c, "megatron-core")->overlap_ep && !in.dualpipe && !in.ep_comm_sms &&
          !in.moe_fused_mlp);
    static const struct {
        const char *note, *want;
    } badn[] = {{"ep=8 overlap_ep=1.5", "'overlap_ep=' must be followed by a fraction in [0, 1]"},
                {"ep=8 overlap_ep=x", "'overlap_ep=' must be followed by a fraction in [0, 1]"},
                {"ep=8 overlap_ep=0x1", "'overlap_ep=' must be followed by a fraction in [0, 1] (got '0x1')"},
                {"ep=8 overlap_ep=inf", "(got 'inf')"},
                {"ep=8 dualpipe=2", "'dualpipe=' must be 1"},
                {"ep=8 te_op_fuser=2", "'te_op_fuser=' must be 1"},
                {"ep=8 ep_comm_sms=0", "'ep_comm_sms=' must be followed by a whole number"}};
    for (unsigned i = 0; i < sizeof badn / sizeof *badn; i++) {
        char row[512];
        snprintf(
            row, sizeof row,
            "r,s,megatron-core,mixtral-8x7b,b200,16,1,1,,,16,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,\"%s\",s\n",
            badn[i].note);
        snprintf(text, sizeof text, "%s%s", head, row);
        CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_DATA, "note %u accepted", i);
        CHECKF(strstr(e.msg, "row 2, column notes") && strstr(e.msg, badn[i].want), "note %u: %s", i, e.msg);
    }

    /* the run's own configuration over its stack's row: Megatron-LM of 2022 with SP, dropout, materialized
     * attention and a separate gradient accumulation; torchtitan eager with SwiGLU unfused, async TP (the
     * stack's tp_overlap_on) and BF16 gradient reduction */
    const char *cfg =
        "a,s,megatron-lm,llama3-8b,h100-sxm,8,8,1,,,1,1,8,8192,bf16,none,selective,,,yes,yes,materialized,,,,,"
        "no,100,,,,,,n,s\n"
        "b,s,torchtitan,llama3-8b,h100-sxm,8,8,1,,,1,1,8,8192,bf16,zero3,op,,,no,,,eager,no,yes,bf16,,100,,,,,,"
        "n,s\n";
    snprintf(text, sizeof text, "%s%s", head, cfg);
    CHECKF(measured_parse(c, text, strlen(text), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(n, 2);
    measured_plan_input(&runs[0], &in);
    CHECK(in.stack == catalog_stack(c, "megatron-lm") && in.sp == 1 && in.dropout == 1);
    CHECK(in.attn == ATTN_MATERIALIZED && in.fusion == FUSE_TE && in.grad_acc_fusion == 0);
    measured_plan_input(&runs[1], &in);
    CHECK(in.sp == 0 && in.fusion == FUSE_EAGER && in.fused_swiglu == 0 && in.main_grad == MAIN_GRAD_BF16);
    CHECK_NEAR(in.overlap_tp, catalog_stack(c, "torchtitan")->overlap_tp_on, 0);
    free(c);
}

/* fidelity_band on rows typed in: which published runs are "like" a plan (same stack, GPU generation, model kind),
 * and their error worked by hand. */
static void test_band_oracle(void)
{
    Catalog *c = fx_catalog();
    static const char csv[] =
        "id,source_id,stack,model,gpu,gpus,tp,pp,vpp,cp,dp,mbs,gbs,seq,recipe,sharding,recompute,"
        "first_stage_layers,last_stage_layers,sequence_parallel,dropout,attention,kernel_fusion,fused_swiglu,"
        "tp_overlap,main_grad,grad_acc_fusion,tokens_per_s_per_gpu,step_s,tflops_per_gpu,mfu_pct,mem_gib,mem_kind,"
        "notes,source\n"
        "a,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,1000,,,,,,n,s\n"
        "b,t,torchtitan,llama3-70b,h200,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,1000,,,,,,n,s\n"
        "c,s,torchtitan,llama3-8b,a100-sxm,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,1000,,,,,,n,s\n"
        "d,s,megatron-core,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,dist-opt,none,,,,,,,,,,,1000,,,,,,n,s\n"
        "e,s,torchtitan,mixtral-8x7b,h100-sxm,8,1,1,,,8,1,128,4096,bf16,zero3,none,,,,,,,,,,,1000,,,,,,ep=1,s\n"
        "f,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,1000,,,,,,n,s\n"
        "g,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,zero3,none,,,,,,,,,,,,,,,40,reserved,n,s\n";
    int n = 0;
    Err e;
    CHECKF(measured_parse(c, csv, strlen(csv), "m.csv", runs, &n, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(n, 7);
    /* errors: a +0.10, b -0.20 (held out), c +0.5 (SM 8.0: another generation), d +0.3 (another stack),
     * e +0.9 (a model with experts), f not planned, g no published throughput */
    static const struct {
        double err;
        int planned, holdout;
    } set[7] = {{0.10, 1, 0}, {-0.20, 1, 1}, {0.5, 1, 0}, {0.3, 1, 0}, {0.9, 1, 0}, {0.4, 0, 0}, {NAN, 1, 0}};
    FidelityRow fr[7];
    memset(fr, 0, sizeof fr);
    for (int i = 0; i < n; i++)
        fr[i].run = &runs[i], fr[i].tok_err = set[i].err, fr[i].planned = set[i].planned,
        fr[i].holdout = set[i].holdout;
    PlanInput in;
    plan_input_defaults(&in);
    in.stack = catalog_stack(c, "torchtitan"), in.gpu = catalog_gpu(c, "h100-sxm");
    in.model = catalog_model(c, "llama3-8b");
    FidelityBand b;
    fidelity_band(fr, n, &in, &b);
    /* a and b (H100 and H200 are both SM 9.x): MAE (0.1 + 0.2) / 2 = 0.15, bias (0.1 - 0.2) / 2 = -0.05; held out b
     * alone: 0.2 */
    CHECK_EQ_INT(b.n, 2);
    CHECK_REL(b.mae, 0.15, 1e-15);
    CHECK_REL(b.bias, -0.05, 1e-14);
    CHECK_EQ_INT(b.n_hold, 1);
    CHECK_REL(b.mae_hold, 0.2, 1e-15);
    char line[600];
    fidelity_band_text(&b, &in, line, sizeof line);
    CHECK_CONTAINS(line, "(stack torchtitan, SM 9.x GPUs, dense models) the planner's throughput is off by 15.0 % "
                         "on average (bias -5.0 %) over 2 runs; 20.0 % over the 1 of them held out");
    /* a model with experts: e alone */
    in.model = catalog_model(c, "mixtral-8x7b");
    fidelity_band(fr, n, &in, &b);
    CHECK(b.n == 1 && b.n_hold == 0);
    CHECK_REL(b.mae, 0.9, 1e-15);
    /* Blackwell: none */
    in.model = catalog_model(c, "llama3-8b"), in.gpu = catalog_gpu(c, "b200");
    fidelity_band(fr, n, &in, &b);
    CHECK_EQ_INT(b.n, 0);
    fidelity_band_text(&b, &in, line, sizeof line);
    CHECK_CONTAINS(line, "trust: no published run like this one (stack torchtitan, SM 10.x GPUs, dense models)");
    free(c);
}

int main(void)
{
    RUN(test_pinned_figures);
    RUN(test_measured_errors);
    RUN(test_pairs_oracle);
    RUN(test_band_oracle);
    return test_summary();
}
