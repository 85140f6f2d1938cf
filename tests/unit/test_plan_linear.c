/* tests/unit/test_plan_linear.c — what the code running the FP8 linear layers
 * costs (recipe.h Fp8Linear), the weight-gradient accumulation kernel
 * (--grad-acc-fusion off) and the allocator reserve that grows only into free
 * memory, worked by hand on the tiny GPT (tests/support/fixtures.c: hidden 8,
 * FFN 32, 2 heads of 4, seq 4, GeLU, linear weights 192 + 64 + 256 + 256 = 768
 * per layer). With the launch floor at 0 every memory-bound op takes its bytes
 * over HBM x 0.80 = 3.35e12 x 0.8 = 2.68e12 B/s. */
#include <math.h>

#include "planner/arch.h"
#include "planner/plan_internal.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static const double BW = 3.35e12 * 0.8;

/* One layer's memory-bound seconds, forward and backward, for this input. */
static LayerElem elem(const PlanInput *in)
{
    Geo g;
    plan_geo(in, in->model->seq_len, 1, &g);
    LayerElem le;
    plan_layer_elem(in, &g, &le);
    return le;
}

static void test_msamp_linear(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec gpu = fx_gpu();
    Recipe te = fx_te_recipe("te", 0), ms = te;
    ms.linear = LIN_MSAMP;
    PlanInput in = fx_input(&m, &gpu, &te);
    in.launch_s = 0;
    LayerElem a = elem(&in);
    in.recipe = &ms;
    LayerElem b = elem(&in);
    /* 4 tokens, no TP: H = Hf = 4 x 8 = 32, Q = 32, F = 4 x 32 = 128. Forward: each linear input read once more
     * for its amax, 2 x (2H + Q + F) = 2 x (64 + 32 + 128) = 448 B. Backward: the FP8 weight transposed,
     * 2 x 768 = 1536 B; the gathered FP8 inputs transposed, 2 x (2Hf + Q + F) = 448 B; the FP8 gradient
     * dequantized, summed, requantized and copied, 16 x 768 = 12,288 B: 14,272 B in all. */
    CHECK_REL(b.fwd - a.fwd, 448 / BW, 1e-9);
    CHECK_REL(b.bwd - a.bwd, 14272 / BW, 1e-9);
    /* the launches count where the bytes are few: 4 + (4 + 4 + 20) kernels at 1 us each */
    in.launch_s = 1e-6;
    LayerElem c = elem(&in);
    in.recipe = &te;
    LayerElem d = elem(&in);
    CHECK_REL(c.fwd - d.fwd, 4e-6, 1e-9);
    CHECK_REL(c.bwd - d.bwd, 28e-6, 1e-9);
}

/* The TE recipe's formats run by torchao's linear: per-tensor or row-wise scaled. */
static Recipe torchao_recipe(Fp8Linear lin)
{
    Recipe r = fx_te_recipe(lin == LIN_TORCHAO ? "tw" : "rw", 0);
    r.linear = lin;
    return r;
}

static void test_rowwise_linear(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec gpu = fx_gpu();
    Recipe tw = torchao_recipe(LIN_TORCHAO), rw = torchao_recipe(LIN_TORCHAO_ROWWISE);
    PlanInput in = fx_input(&m, &gpu, &tw);
    in.launch_s = 0;
    LayerElem a = elem(&in);
    in.recipe = &rw;
    LayerElem b = elem(&in);
    /* backward: every dgrad output (Hf + Q + Hf + F = 32 + 32 + 32 + 128) and the weight gradients (768)
     * rescaled, read + write BF16: 4 x 992 = 3,968 B; every output gradient read once more for its other
     * axis's scales, 2 x (Q + 2K + Hf + kF + Hf) = 2 x (32 + 64 + 32 + 128 + 32) = 576 B */
    CHECK_NEAR(b.fwd - a.fwd, 0, 1e-18);
    CHECK_REL(b.bwd - a.bwd, 4544 / BW, 1e-9);

    /* the forward GEMMs run at arch_rowwise_gemm_rel (0.90) of the per-tensor kernel: the step's GEMM time
     * grows by m x layers x (1/0.9 - 1) x the four forward GEMMs, each timed by gemm_time (test_plan_time) */
    CHECK_NEAR(arch_rowwise_gemm_rel, 0.90, 0);
    in.gbs = 2; /* 2 micro-batches */
    Plan pt, pr;
    in.recipe = &tw;
    CHECK(plan_build(&in, &pt, NULL) == ST_OK);
    in.recipe = &rw;
    CHECK(plan_build(&in, &pr, NULL) == ST_OK);
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    const uint64_t N[4] = {24, 8, 32, 8}, K[4] = {8, 8, 8, 32};
    double f = 0;
    for (int i = 0; i < 4; i++) f += gemm_time(&gg, 4, N[i], K[i], 1, 1, 2);
    CHECK_REL(pr.time.gemm_s - pt.time.gemm_s, 2 * 2 * f * (1 / 0.9 - 1), 1e-9);
}

/* The same rule in a mixture-of-experts model (support/oracle_fixtures.h: a dense layer, then a MoE layer of 8
 * experts, top 2, one shared expert; hidden 256, seq 512): one layer and micro-batch of each kind, per-tensor
 * torchao against its row-wise linear. Every quantized forward GEMM takes 1 / 0.9 as long: the dense kind's
 * whole forward, the routed experts' grouped GEMMs; the router's GEMM [512 x 8 x 256] runs in BF16 and keeps its
 * time; no backward GEMM changes. */
static void test_rowwise_linear_moe(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec gpu = fx_gpu();
    Recipe tw = torchao_recipe(LIN_TORCHAO), rw = torchao_recipe(LIN_TORCHAO_ROWWISE);
    PlanInput in = fx_input(&m, &gpu, &tw);
    in.gbs = 1;
    Plan p;
    if (plan_build(&in, &p, NULL) != ST_OK) {
        CHECK(!"plan_build");
        return;
    }
    Geo g;
    plan_geo(&in, m.seq_len, 1, &g);
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    LayerT a[XK_COUNT], b[XK_COUNT];
    moe_layer_times(&in, &g, &gg, &p, a);
    in.recipe = &rw;
    moe_layer_times(&in, &g, &gg, &p, b);
    CHECK(a[XK_DENSE].gemm_f > 0 && a[XK_MOE].xg_f > 0);
    CHECK_REL(b[XK_DENSE].gemm_f, a[XK_DENSE].gemm_f / 0.9, 1e-12);
    CHECK_REL(b[XK_MOE].xg_f, a[XK_MOE].xg_f / 0.9, 1e-12);
    double router = gemm_time(&gg, 512, 8, 256, 1, 0, 2);
    CHECK(router > 0);
    CHECK_REL(b[XK_MOE].gemm_f - router, (a[XK_MOE].gemm_f - router) / 0.9, 1e-12);
    for (int k = 0; k < XK_COUNT; k++) {
        CHECK_REL(b[k].gemm_b, a[k].gemm_b, 1e-15);
        CHECK_REL(b[k].xg_b, a[k].xg_b, 1e-15);
    }
}

static void test_grad_acc_fusion(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec gpu = fx_gpu();
    Recipe r = fx_bf16_recipe("megatron-bf16", 0); /* fp32 main gradients */
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = 0;
    CHECK_EQ_INT(in.grad_acc_fusion, 1);
    LayerElem a = elem(&in);
    in.grad_acc_fusion = 0;
    LayerElem b = elem(&in);
    /* main_grad.add_(grad) per micro-batch: read the BF16 gradient (2) and the fp32 main gradient (4), write
     * it (4): 10 B x 768 = 7,680 B */
    CHECK_NEAR(b.fwd - a.fwd, 0, 1e-18);
    CHECK_REL(b.bwd - a.bwd, 7680 / BW, 1e-9);
    /* the compile and eager lists accumulate with autograd whatever the flag says */
    in.fusion = FUSE_COMPILE;
    LayerElem c = elem(&in);
    in.grad_acc_fusion = 1;
    LayerElem d = elem(&in);
    CHECK_NEAR(c.bwd, d.bwd, 0);
}

/* The allocator's reserve is cached free memory: it fills what the GPU has left and no more. */
static void test_reserve_into_free_memory(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec gpu = fx_gpu();
    Recipe r = fx_bf16_recipe("megatron-bf16", 0);
    PlanInput in = fx_input(&m, &gpu, &r);
    in.frag_frac = 1;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    uint64_t frag = p.mem[MT_FRAGMENTATION].bytes, need = p.total_bytes - frag;
    /* 80 GiB is plenty: the reserve is the whole churn, activations + the 32 MiB workspace */
    CHECK_EQ_U64(frag, p.cat_bytes[MC_ACTIVATION] + p.mem[MT_WORKSPACE].bytes);
    /* a GPU with 100 bytes beyond what the plan needs: the reserve is those 100 bytes, the total the capacity */
    gpu.hbm_bytes = need + 100;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_FRAGMENTATION].bytes, 100);
    CHECK_EQ_U64(p.total_bytes, gpu.hbm_bytes);
    /* less than it needs: no reserve, and the plan is over the capacity by the same bytes as before */
    gpu.hbm_bytes = need - 100;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_FRAGMENTATION].bytes, 0);
    CHECK_EQ_U64(p.total_bytes, need);
    CHECK(!p.fits);
}

/* The planner's unsigned division helpers (plan_internal.h), which take a 32-bit path when both operands fit:
 * by hand, 7 / 2 = 3 r 1; 2^32 + 5 = 4,294,967,301 over 3 = 1,431,655,767 r 0 (3 x 1,431,655,767 =
 * 4,294,967,301); 2^40 = 1,099,511,627,776 over 2^32 + 1 = 255 r 1,099,511,627,776 - 255 x 4,294,967,297 =
 * 4,294,967,041; ceil(2^40 / (2^32 + 1)) = 256; anything over 1 is itself r 0. */
static void test_division_helpers(void)
{
    CHECK_EQ_U64(udiv(7, 2), 3);
    CHECK_EQ_U64(umod(7, 2), 1);
    CHECK_EQ_U64(udiv(4294967301ull, 3), 1431655767ull);
    CHECK_EQ_U64(umod(4294967301ull, 3), 0);
    CHECK_EQ_U64(udiv(1ull << 40, 4294967297ull), 255);
    CHECK_EQ_U64(umod(1ull << 40, 4294967297ull), 4294967041ull);
    CHECK_EQ_U64(ceil_div(1ull << 40, 4294967297ull), 256);
    CHECK_EQ_U64(ceil_div(7, 2), 4);
    CHECK_EQ_U64(udiv(5000000000ull, 1), 5000000000ull);
    CHECK_EQ_U64(umod(5000000000ull, 1), 0);
}

int main(void)
{
    RUN(test_msamp_linear);
    RUN(test_rowwise_linear);
    RUN(test_rowwise_linear_moe);
    RUN(test_grad_acc_fusion);
    RUN(test_reserve_into_free_memory);
    RUN(test_division_helpers);
    return test_summary();
}
