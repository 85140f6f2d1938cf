/* tests/unit/test_calibrate_plan.c — what the planner does with a host profile's
 * row (compute_capability cpu), worked by hand: rows a host profile may not
 * hold refused, GEMMs at the measured rate without tiles and a measured link's
 * latency per ring step, whole host plans, the measured element-wise rates
 * (one, and per kind of kernel) and the scaled optimizer's, and the experts' grouped-GEMM cost per group
 * (exec/measure/calibrate_moe.c), and the rates a rank gets when the ranks outnumber the host's cores
 * (planner/plan_host.c). The fits and the rows themselves:
 * test_calibrate.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan_host.h"
#include "planner/plan_internal.h"
#include "support/fixtures.h"
#include "test.h"

static void test_host_rows_refused(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    if (!cat) return;
    Err e = {0};
    const char *bad[] = {
        /* a host whose link is not host */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,pcie,0,0,2,src,,,,,,,,,,,,,\n",
        /* a GPU with a host link */
        "h,9.0,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,1,1,2,src,,,,,,,,,,,,,\n",
        /* a measured link without its latency */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,3,2,src,,,,,,,,,,,,,\n",
        /* one of the two bandwidths 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,0,2,src,0.5,,,,,,,,,,,,\n",
        /* a latency of 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,3,2,src,0,,,,,,,,,,,,\n",
        /* a GPU keeps its positive link */
        "h,9.0,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,nvlink,0,0,2,src,,,,,,,,,,,,,\n",
        /* a grouped GEMM's cost per group below 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,0,0,2,src,,,,-1,,,,,,,,,\n",
        /* a last-level cache that is not a byte count */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,0,0,2,src,,,,,,,,,,,,,-5\n",
    };
    const char *col[] = {"intra_link",      "intra_link",      "link_latency_us", "inter_node_gbps",
                         "link_latency_us", "intra_node_gbps", "group_gemm_us",   "llc_bytes"};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s\n%s", cal_gpu_header, bad[i]);
        CHECKF(catalog_parse_gpus(cat, text, strlen(text), "gpus.csv", &e) == ST_DATA, "row %u accepted", i);
        CHECK_CONTAINS(e.msg, col[i]);
    }
    free(cat);
}

/* A host row by hand: 100 GFLOP/s BF16, 50 FP8, 10 GB/s, a 2-rank link of 1 GB/s and 1 us per step. */
static GpuSpec host_gpu(void)
{
    GpuSpec g = fx_gpu();
    g.host = 1, g.sm = 0, g.sms = 1, g.link = LINK_HOST;
    g.flops_bf16 = g.mamf_bf16 = 100e9, g.flops_fp8 = g.mamf_fp8 = 50e9, g.flops_fp32 = 100e9;
    g.hbm_bw = 10e9, g.sustained = 1, g.intra_bw = g.inter_bw = 1e9, g.link_lat = 1e-6, g.gpus_per_node = 2;
    return g;
}

static void test_host_gemm_and_link(void)
{
    GpuSpec g = host_gpu();
    PlanInput in;
    plan_input_defaults(&in); /* eff_hbm 0.8, eff_net 0.8: not applied to a host's achieved figures */
    in.gpu = &g;
    in.launch_s = 2e-6;
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    /* no tiles, no k0: 64 x 128 x 256 BF16 is 2 x 64 x 128 x 256 = 4,194,304 FLOP / 100e9 = 4.194304e-5 s;
     * its bytes (64 x 256 + 256 x 128) x 2 + 64 x 128 x 2 = 114,688 / 10e9 = 1.14688e-5 s, below */
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 0, 2), 4.194304e-5, 1e-12);
    /* 65 rows: 2 x 65 x 128 x 256 / 100e9 = 4.25984e-5 (a GPU would pay a whole 128-row tile) */
    CHECK_REL(gemm_time(&gg, 65, 128, 256, 1, 0, 2), 4.25984e-5, 1e-12);
    /* FP8: 4,194,304 / 50e9 = 8.388608e-5 s */
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 1, 2), 8.388608e-5, 1e-12);
    /* operand-bound: 1 x 1 x 1e6: 2e6 FLOP / 100e9 = 2e-5 s; bytes (1e6 + 1e6) x 2 + 2 = 4,000,002 / 10e9 = 4.000002e-4 */
    CHECK_REL(gemm_time(&gg, 1, 1, 1000000, 1, 0, 2), 4.000002e-4, 1e-12);
    /* the launch floor: 2 x 4^3 = 128 FLOP is nanoseconds: 2 us */
    CHECK_NEAR(gemm_time(&gg, 4, 4, 4, 1, 0, 2), 2e-6, 0);
    /* the link: all-reduce over 2 ranks of 1e6 bus bytes: 2 steps x 1 us + 1e6 / 1e9 = 1.002e-3 s, no LL/Simple
     * choice, no eff_net */
    double bw = 0, lat = 0;
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 2, 1, 1e6, &bw, &lat), 1.002e-3, 1e-12);
    CHECK_REL(bw, 1e9, 0);
    CHECK_REL(lat, 2e-6, 1e-12);
    /* all-gather over 2: 1 step: 1e-6 + 5e5 / 1e9 = 5.01e-4 */
    CHECK_REL(plan_coll_call(&in, OP_ALL_GATHER, 2, 1, 5e5, NULL, NULL), 5.01e-4, 1e-12);
    /* the same row as a GPU (not host): eff_net 0.8 scales the bandwidth: 2e-6 + 1e6 / 0.8e9 = 1.252e-3 */
    g.host = 0;
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 2, 1, 1e6, NULL, NULL), 1.252e-3, 1e-12);
}

static void test_host_plans(void)
{
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_te_recipe("te-fp8", 0); /* min_sm 89 */
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 2, in.dp = 2;
    Plan *p = calloc(1, sizeof *p);
    if (!p) return;
    Err e = {0};
    /* an FP8 recipe on a host (min_sm 89 against sm 0): emulated, planned */
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK(p->coll[CO_DP_GRAD_AR].calls > 0 && p->coll[CO_DP_GRAD_AR].time_s > 0);
    CHECK(p->time.fwd_s > 0 && p->time.bwd_s > 0 && p->time.fwd_s + p->time.bwd_s <= p->time.step_s);
    /* no interconnect measured: one rank plans, two are refused naming it */
    g.intra_bw = g.inter_bw = 0, g.link_lat = 0;
    CHECK(plan_build(&in, p, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "no interconnect");
    in.dp = 1, in.gbs = 1;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    free(p);
}

/* elem_gbps: the element-wise kernels at their own rate, the optimizer's stream at hbm_gbps. With no launch
 * floor every element-wise op is bytes / rate, so halving elem_bw doubles the non-GEMM time exactly and leaves
 * the optimizer (bytes / hbm_bw) as it was; 0 means hbm_bw (a GPU row's plan is unchanged). BF16 recipe: no FP8
 * commit or weight casts. */
static void test_elem_rate(void)
{
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 1, in.launch_s = 0;
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *z = calloc(1, sizeof *z);
    Err e = {0};
    if (!a || !b || !z) return;
    g.elem_bw = 10e9; /* = hbm_bw */
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    g.elem_bw = 5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    g.elem_bw = 0;
    CHECKF(plan_build(&in, z, &e) == ST_OK, "%s", e.msg);
    CHECK(a->time.nongemm_s > 0);
    CHECK_REL(b->time.nongemm_s, 2.0 * a->time.nongemm_s, 1e-12);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 0);
    CHECK_REL(z->time.step_s, a->time.step_s, 0);
    free(a), free(b), free(z);
}

/* elem_<kind>_gbps (GpuSpec.elem_kind_bw): a kind of element-wise kernel at its own rate, the others at elem_gbps.
 * The tiny model (2 layers, hidden 8, FFN 32 GeLU, vocabulary 10, LayerNorm, learned positions), one micro-batch of
 * 4 tokens, the fp8plan stack's kernel list, BF16 (no casts), no launch floor, elem_gbps 10 GB/s; one kind at 5 GB/s
 * adds its forward kernels' bytes x (1 / 5e9 - 1 / 10e9) = bytes x 1e-10 s:
 *   norm  2 norms a layer, 4 B x 4 x 8 = 128 B each, 2 layers: 512 B, the final norm 128 B: 640 B, 6.4e-8 s
 *   act   GeLU 4 B x 4 x 32 = 512 B a layer: 1,024 B, 1.024e-7 s
 *   add   2 residual adds a layer, 6 B x 32 = 192 B each: 768 B, 7.68e-8 s
 *   cast  none in BF16: 0
 *   xent  the loss's forward (the executor's kernel writes d(logits) too) 16 B x 4 x 10 = 640 B, 6.4e-8 s
 *   amax, cast_row  none in BF16 (no current scaling, no FP8 main gradient): 0
 * The optimizer is not touched. A row without the columns (an older calibrate's gpus.csv) loads with every kind 0:
 * elem_gbps for all. */
static void test_elem_kind_rates(void)
{
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 1, in.launch_s = 0, in.fusion = FUSE_FP8PLAN, in.dropout = 0;
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    Catalog *cat = calloc(1, sizeof *cat);
    Err e = {0};
    if (!a || !b || !cat) goto out;
    g.elem_bw = 10e9;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    static const double want[ELEM_KINDS] = {6.4e-8, 1.024e-7, 7.68e-8, 0, 6.4e-8, 0, 0};
    for (int k = 0; k < ELEM_KINDS; k++) {
        g.elem_kind_bw[k] = 5e9;
        CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
        CHECKF(fabs(b->time.nongemm_s - a->time.nongemm_s - want[k]) < 1e-15, "kind %d: %g s more, want %g", k,
               b->time.nongemm_s - a->time.nongemm_s, want[k]);
        CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 0);
        g.elem_kind_bw[k] = 0;
    }
    /* an older profile: the header and row as calibrate wrote them before the kinds */
    const char *old = "name,compute_capability,sms,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,"
                      "mamf_bf16_tflops,mamf_fp8_tflops,sustained,intra_link,intra_node_gbps,inter_node_gbps,"
                      "gpus_per_node,source,link_latency_us,elem_gbps,scaled_optim_gbps,group_gemm_us\n"
                      "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,0,0,2,src,,2.5,,\n";
    CHECKF(catalog_parse_gpus(cat, old, strlen(old), "gpus.csv", &e) == ST_OK, "%s", e.msg);
    const GpuSpec *h = catalog_gpu(cat, "h");
    CHECK(h != NULL);
    for (int k = 0; h && k < ELEM_KINDS; k++) CHECK_REL(gpu_kind_bw(h, (ElemKind)k, 1.0), 2.5e9, 0);
out:
    free(a), free(b), free(cat);
}

/* scaled_optim_gbps: FP8-LM's optimizer (its GEMM class two-pass: FP16 master, E4M3 m, FP16 v, E4M3 grads, no
 * working weight) at its own rate, the other class (megatron-bf16's FP32 states) still streamed at hbm_gbps.
 * The tiny model's GEMM weights: 2 layers x (QKV 8 x 24 + proj 8 x 8 + FC1 8 x 32 + FC2 32 x 8 = 192 + 64 +
 * 256 + 256 = 768) = 1,536; their optimizer bytes 17 x 1,536 = 26,112 (grad 1, master 2 + m 1 + v 2 read and
 * written 10, the second pass 6). At hbm_gbps / 4 (2.5 GB/s) the optimizer takes 26,112 x (1 / 2.5e9 -
 * 1 / 10e9) = 26,112 x 3 / 10e9 = 7.8336 us longer; at hbm_gbps exactly what it takes without the column;
 * a BF16 recipe (one pass) is not touched. */
static void test_scaled_optim_rate(void)
{
    Catalog *cat = fx_catalog();
    CHECK(cat != NULL);
    if (!cat) return;
    const Recipe *r8 = catalog_recipe(cat, "fp8lm"), *r16 = catalog_recipe(cat, "megatron-bf16");
    CHECK(r8 != NULL && r16 != NULL);
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    Err e = {0};
    if (!a || !b || !c || !r8 || !r16) {
        free(a), free(b), free(c), free(cat);
        return;
    }
    PlanInput in = fx_input(&m, &g, r8);
    in.mbs = 1, in.gbs = 1;
    g.scaled_optim_bw = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(a->params_gemm_gpu, 1536);
    g.scaled_optim_bw = 10e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 1e-12);
    g.scaled_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, c, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(c->time.optimizer_s - a->time.optimizer_s, 7.8336e-6, 1e-9);
    in = fx_input(&m, &g, r16);
    in.mbs = 1, in.gbs = 1;
    g.scaled_optim_bw = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    g.scaled_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK(b->time.optimizer_s == a->time.optimizer_s && b->time.step_s == a->time.step_s);
    free(a), free(b), free(c), free(cat);
}

/* MS-AMP O1's optimizer (o1_optim_gbps) on the tiny model (1,536 GEMM weights; hbm_gbps 10): its linears' bytes
 * as the plan counts them, per parameter E4M3 gradient 1 + the FP16 weight 2, FP32 m 4 and v 4 read and written
 * (2 x 10 = 20) + the second pass reading the four again (1 + 2 + 4 + 4 = 11) = 32 B: 1,536 x 32 = 49,152 B. At
 * 2.5 GB/s instead of the stream's 10: 49,152 x (1 / 2.5e9 - 1 / 10e9) = 49,152 x 3e-10 = 1.47456e-5 s more; at
 * 10 GB/s the plan is the stream's to the bit; FP8-LM's rate (scaled_optim_gbps) alone leaves it streamed. */
static void test_o1_optim_rate(void)
{
    Catalog *cat = fx_catalog();
    CHECK(cat != NULL);
    if (!cat) return;
    const Recipe *o1 = catalog_recipe(cat, "msamp-o1");
    CHECK(o1 != NULL);
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    Err e = {0};
    if (!a || !b || !o1) {
        free(a), free(b), free(cat);
        return;
    }
    PlanInput in = fx_input(&m, &g, o1);
    in.mbs = 1, in.gbs = 1;
    g.scaled_optim_bw = 0, g.o1_optim_bw = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(a->params_gemm_gpu, 1536);
    g.o1_optim_bw = 10e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 1e-12);
    g.o1_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.optimizer_s - a->time.optimizer_s, 1.47456e-5, 1e-9);
    g.o1_optim_bw = 0, g.scaled_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK(b->time.optimizer_s == a->time.optimizer_s);
    free(a), free(b), free(cat);
}

/* elem_amax_gbps and elem_cast_row_gbps (ElemKind ELEM_AMAX, ELEM_CAST_ROW) on the fp8plan stack, the tiny model
 * (2 layers, hidden 8, FFN 32 GeLU; 1,536 GEMM weights, test_scaled_optim_rate), 4 tokens a micro-batch, no launch
 * floor, elem_gbps = hbm_gbps = 10 GB/s; a kind at 5 GB/s costs 1 / 5e9 - 1 / 10e9 = 1e-10 s a byte more:
 *   te-fp8-current, the amax at 5 GB/s. Per layer the casts' inputs, forward H + Q + H + F = 32 + 32 + 32 + 128 =
 *     224 elements, backward Hf + kF + Hf + (Q + 2K) = 32 + 128 + 32 + 96 = 288; 2 layers: 448 and 576, their amax
 *     reads 2 B each: forward 896 B -> 8.96e-8 s, backward 1,152 B -> 1.152e-7 s. The weight casts' amax reads the
 *     BF16 weights, 1,536 x 2 = 3,072 B -> 3.072e-7 s, in the forward (the executor casts them there, every
 *     micro-batch): forward 8.96e-8 + 3.072e-7 = 3.968e-7 s more, backward 1.152e-7. Without the column the amax
 *     bytes are the cast's (at its rate, elem_gbps here): the plan is the same to the bit at amax = elem.
 *   fp8lm, the FP8 main gradient's row-wise cast (read 4 B, write 1 B) at 2.5 GB/s: 1 / 2.5e9 - 1 / 10e9 = 3e-10 s
 *     a byte more, 1,536 x 5 x 3e-10 = 2.304e-6 s in the backward and the step (once); its amax (read 4 B) at
 *     5 GB/s, 1,536 x 4 x 1e-10 = 6.144e-7 s in the backward (delayed scaling: no other amax); 2 micro-batches
 *     commit twice: 4.608e-6 and 1.2288e-6 s. */
static void test_amax_and_commit_kinds(void)
{
    Catalog *cat = fx_catalog();
    CHECK(cat != NULL);
    if (!cat) return;
    const Recipe *cur = catalog_recipe(cat, "te-fp8-current"), *lm = catalog_recipe(cat, "fp8lm");
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    Err e = {0};
    CHECK(cur != NULL && lm != NULL);
    if (!a || !b || !cur || !lm) goto out;
    g.elem_bw = 10e9;
    PlanInput in = fx_input(&m, &g, cur);
    in.mbs = 1, in.gbs = 1, in.launch_s = 0, in.fusion = FUSE_FP8PLAN, in.dropout = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    g.elem_kind_bw[ELEM_AMAX] = 10e9; /* measured, at the cast's rate: the same plan */
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.fwd_s, a->time.fwd_s, 1e-12);
    CHECK_REL(b->time.bwd_s, a->time.bwd_s, 1e-12);
    g.elem_kind_bw[ELEM_AMAX] = 5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.fwd_s - a->time.fwd_s, 3.968e-7, 1e-9);
    CHECK_REL(b->time.bwd_s - a->time.bwd_s, 1.152e-7, 1e-9);
    CHECK_REL(b->time.weight_cast_s - a->time.weight_cast_s, 3.072e-7, 1e-9);
    g.elem_kind_bw[ELEM_AMAX] = 0;
    for (uint32_t mb = 1; mb <= 2; mb++) {
        in = fx_input(&m, &g, lm);
        in.mbs = 1, in.gbs = mb, in.launch_s = 0, in.fusion = FUSE_FP8PLAN, in.dropout = 0;
        CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
        g.elem_kind_bw[ELEM_AMAX] = 5e9; /* delayed scaling: only the commit's amax read, 4 B */
        CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
        CHECK_REL(b->time.bwd_s - a->time.bwd_s, mb * 6.144e-7, 1e-9);
        CHECK_REL(b->time.fwd_s, a->time.fwd_s, 0);
        g.elem_kind_bw[ELEM_AMAX] = 0;
        g.elem_kind_bw[ELEM_CAST_ROW] = 2.5e9;
        CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
        CHECK_REL(b->time.bwd_s - a->time.bwd_s, mb * 2.304e-6, 1e-9);
        CHECK_REL(b->time.step_s - a->time.step_s, mb * 2.304e-6, 1e-9);
        CHECK_REL(b->time.fwd_s, a->time.fwd_s, 0);
        g.elem_kind_bw[ELEM_CAST_ROW] = 0;
    }
out:
    free(a), free(b), free(cat);
}

/* The MoE layer's grouped GEMMs calibrate times (cal_expert_shapes) and the cost per group fitted from them
 * (cal_group_cost). A model of hidden 64, seq 32, 8 experts top-2 of FFN 224, SwiGLU, mbs 1: 32 x 2 = 64 rows;
 * FC1 (2 x 224 = 448, 64), FC2 (64, 224):
 *   fc1 fprop (64, 448, 64), dgrad (64, 64, 448), wgrad (448, 64, 64) accumulated; fc2 fprop (64, 64, 224),
 *   dgrad (64, 224, 64), wgrad (64, 224, 64); GELU: FC1 224 wide.
 * Cost per group: two calls of 2 x 64 x 448 x 64 = 3,670,016 FLOPs at 1e10 FLOP/s (367.0016 us each) that took
 * 500 and 600 us, 8 groups: (500 + 600 - 2 x 367.0016) / (2 x 8) = 22.8748 us; calls faster than their FLOPs
 * give 0, never a negative cost; no rate or no groups: 0. */
static void test_group_cost(void)
{
    ModelSpec m = {.name = "x", .layers = 2, .hidden = 64, .ffn_hidden = 224, .heads = 4, .kv_heads = 4};
    m.head_dim = 16, m.vocab = 256, m.seq_len = 32, m.mlp = MLP_SWIGLU, m.experts = 8, m.experts_per_token = 2;
    m.expert_ffn = 224;
    CalGemm s[CAL_EXPERT_GEMMS];
    uint32_t G = 0;
    uint64_t R = 0;
    CHECK(cal_expert_shapes(&m, 1, &G, &R, s) == 6);
    CHECK(G == 8 && R == 64);
    const uint64_t want[6][3] = {{64, 448, 64}, {64, 64, 448}, {448, 64, 64},
                                 {64, 64, 224}, {64, 224, 64}, {64, 224, 64}};
    for (int i = 0; i < 6; i++) {
        CHECKF(s[i].m == want[i][0] && s[i].n == want[i][1] && s[i].k == want[i][2], "%s: %llu %llu %llu", s[i].what,
               (unsigned long long)s[i].m, (unsigned long long)s[i].n, (unsigned long long)s[i].k);
        CHECK(s[i].accum == (i % 3 == 2) && s[i].path == CAL_PATH_BF16);
    }
    CHECK_STR(s[0].what, "experts fc1 fprop");
    CHECK_STR(s[5].what, "experts fc2 wgrad");
    m.mlp = MLP_GELU;
    CHECK(cal_expert_shapes(&m, 2, &G, &R, s) == 6 && R == 128 && s[0].n == 224 && s[1].k == 224);
    m.experts = 0;
    CHECK(cal_expert_shapes(&m, 1, &G, &R, s) == 0);
    CalGemm g[2] = {{.m = 64, .n = 448, .k = 64, .seconds = 500e-6}, {.m = 64, .n = 448, .k = 64, .seconds = 600e-6}};
    CHECK_REL(cal_group_cost(g, 2, 8, 1e10), (1100e-6 - 2 * 367.0016e-6) / 16, 1e-12);
    CHECK_NEAR(cal_group_cost(g, 2, 8, 1e9), 0, 0); /* 3.67 ms of FLOPs at 1e9: faster than that, 0 */
    CHECK_NEAR(cal_group_cost(g, 2, 0, 1e10), 0, 0);
    CHECK_NEAR(cal_group_cost(g, 2, 8, 0), 0, 0);
    CHECK_NEAR(cal_group_cost(g, 0, 8, 1e10), 0, 0);
    /* judged as a figure: the two calls' FLOPs (m is all 8 groups' rows), 2 x 3,670,016, over their 1.1 ms:
     * 7,340,032 / 1.1e-3 = 6.6727564e9 FLOP/s, with their weighted spread; a profile without experts skips it */
    Calibration c;
    memset(&c, 0, sizeof c);
    c.nxgemm = 2, c.xgroups = 8, c.xgemm[0] = g[0], c.xgemm[1] = g[1], c.group_iqr = 0.05;
    double rate[CAL_FIGS], iqr[CAL_FIGS];
    cal_figures(&c, rate, iqr);
    CHECK_REL(rate[CAL_FIG_GROUP], 7340032.0 / 1.1e-3, 1e-12);
    CHECK_NEAR(iqr[CAL_FIG_GROUP], 0.05, 0);
    CalJudge j;
    c.nxgemm = 0;
    cal_judge(&c, NULL, &j);
    CHECK(j.skip[CAL_FIG_GROUP]);
    CHECK_STR(cal_fig_names[CAL_FIG_GROUP], "gemm experts");
    /* what a row plans them at (calibrate --check): each call's 3,670,016 FLOPs at 1e10 (367.0016 us) plus 8 groups
     * x 20 us = 527.0016 us; judged as the figure 7,340,032 / 1.0540032e-3 = 6.9639e9 FLOP/s against the 6.6728e9
     * measured: the drift (now / row - 1) 6.6727564 / 6.9639... - 1 = 1.0540032 / 1.1 - 1 = -4.18 %, within +-10 %.
     * A row without the column (group_s 0) plans FLOPs alone, 2 x 367.0016 = 734.0032 us: 0.7340032 / 1.1 - 1 =
     * -33.3 %, moved */
    CalGemm row[2];
    CHECK(cal_group_predict(g, 2, 8, 1e10, 20e-6, row) == 2);
    CHECK_REL(row[0].seconds, 527.0016e-6, 1e-12);
    CHECK(row[1].m == 64 && row[1].n == 448 && row[1].k == 64);
    Calibration p;
    memset(&p, 0, sizeof p);
    c.nxgemm = 2, p.reps = c.reps = 7, p.nxgemm = 2, p.xgroups = 8, p.xgemm[0] = row[0], p.xgemm[1] = row[1];
    p.group_iqr = 0.05;
    cal_judge(&p, &c, &j); /* the row as the profile, now as its re-measure (as run_calibrate.c's --check) */
    CHECK(!j.skip[CAL_FIG_GROUP]);
    CHECK_REL(j.drift[CAL_FIG_GROUP], 1.0540032e-3 / 1.1e-3 - 1, 1e-12);
    CHECK(cal_group_predict(g, 2, 8, 1e10, 0, row) == 2);
    p.xgemm[0] = row[0], p.xgemm[1] = row[1];
    cal_judge(&p, &c, &j);
    CHECK_REL(j.drift[CAL_FIG_GROUP], 734.0032e-6 / 1.1e-3 - 1, 1e-12);
    CHECK(j.drifted >= 1 && fabs(j.drift[CAL_FIG_GROUP]) > CAL_DRIFT_MAX);
    CHECK(cal_group_predict(g, 2, 8, 0, 20e-6, row) == 0); /* no BF16 rate: not predicted, the figure skipped */
}

/* More ranks than cores (planner/plan_host.c): R ranks time-sharing C cores stretch a host profile's compute by
 * R / C when R > C. host_gpu() at 4 ranks on 2 cores: BF16 100 -> 50 GFLOP/s, FP8 50 -> 25, FP32 100 -> 50,
 * elem_bw 10 -> 5 GB/s; hbm_bw (the optimizer's stream, GEMM operands) and the link as measured. */
static void test_oversubscribed_host(void)
{
    /* ranks / cores above 1, else 1; 0 cores: not known, 1 */
    const struct {
        uint32_t r, c;
        double s;
    } cs[] = {{4, 2, 2.0}, {3, 2, 1.5}, {8, 2, 4.0}, {2, 2, 1.0}, {1, 2, 1.0}, {4, 0, 1.0}, {16, 12, 16.0 / 12.0}};
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        CHECKF(plan_host_stretch(cs[i].r, cs[i].c) == cs[i].s, "case %zu: %g", i, plan_host_stretch(cs[i].r, cs[i].c));
    GpuSpec g = host_gpu(), o;
    g.elem_bw = 10e9, g.elem_kind_bw[ELEM_ACT] = 4e9, g.scaled_optim_bw = 2e9, g.group_gemm_s = 3e-6;
    CHECK(plan_host_share(&g, 4, 2, &o) == 2.0);
    CHECK(o.flops_bf16 == 50e9 && o.mamf_bf16 == 50e9 && o.flops_fp8 == 25e9 && o.mamf_fp8 == 25e9);
    CHECK(o.flops_fp32 == 50e9 && o.elem_bw == 5e9 && o.elem_kind_bw[ELEM_ACT] == 2e9 &&
          o.elem_kind_bw[ELEM_NORM] == 0);
    CHECK(o.scaled_optim_bw == 1e9 && o.group_gemm_s == 6e-6);
    CHECK(o.hbm_bw == 10e9 && o.link_lat == 1e-6 && o.intra_bw == 1e9 && !strcmp(o.name, g.name));
    /* as many ranks as cores, or a GPU row: an unchanged copy */
    CHECK(plan_host_share(&g, 2, 2, &o) == 1.0 && !memcmp(&o, &g, sizeof g));
    GpuSpec gpu = fx_gpu();
    CHECK(plan_host_share(&gpu, 8, 2, &o) == 1.0 && !memcmp(&o, &gpu, sizeof gpu));

    /* the GEMM: 64 x 128 x 256 BF16, 4,194,304 FLOP / 50e9 = 8.388608e-5 s (1.14688e-5 s of operands at 10 GB/s
     * stay below); FP8 4,194,304 / 25e9 = 1.6777216e-4 s */
    g = host_gpu();
    plan_host_share(&g, 4, 2, &o);
    PlanInput in;
    plan_input_defaults(&in);
    in.gpu = &o, in.launch_s = 2e-6;
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 0, 2), 8.388608e-5, 1e-12);
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 1, 2), 1.6777216e-4, 1e-12);
    /* operand-bound 1 x 1 x 1e6: 2e6 FLOP / 50e9 = 4e-5 s, still below the 4.000002e-4 s of its bytes at 10 GB/s */
    CHECK_REL(gemm_time(&gg, 1, 1, 1000000, 1, 0, 2), 4.000002e-4, 1e-12);

    /* a whole plan, DP 4 of the tiny model, BF16, no launch floor: the element-wise time doubles with elem_bw (as
     * test_elem_rate), the optimizer's stream and the gradient all-reduce (the measured link) do not move */
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    g = host_gpu(), g.elem_bw = 10e9;
    plan_host_share(&g, 4, 2, &o);
    PlanInput pa = fx_input(&m, &g, &r), pb;
    pa.mbs = 1, pa.gbs = 4, pa.dp = 4, pa.launch_s = 0;
    pb = pa, pb.gpu = &o;
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    Err e = {0};
    if (!a || !b) {
        free(a), free(b);
        return;
    }
    CHECKF(plan_build(&pa, a, &e) == ST_OK, "%s", e.msg);
    CHECKF(plan_build(&pb, b, &e) == ST_OK, "%s", e.msg);
    CHECK(a->time.nongemm_s > 0 && a->coll[CO_DP_GRAD_AR].time_s > 0);
    CHECK_REL(b->time.nongemm_s, 2.0 * a->time.nongemm_s, 1e-12);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 0);
    CHECK_REL(b->coll[CO_DP_GRAD_AR].time_s, a->coll[CO_DP_GRAD_AR].time_s, 0);
    CHECK(b->time.step_s > a->time.step_s);
    free(a), free(b);
}

int main(void)
{
    RUN(test_host_rows_refused);
    RUN(test_host_gemm_and_link);
    RUN(test_host_plans);
    RUN(test_elem_rate);
    RUN(test_elem_kind_rates);
    RUN(test_scaled_optim_rate);
    RUN(test_o1_optim_rate);
    RUN(test_amax_and_commit_kinds);
    RUN(test_group_cost);
    RUN(test_oversubscribed_host);
    return test_summary();
}
