/* tests/unit/test_plan_bytes.c — the step-time terms counted from bytes
 * (planner/plan_bytes.h) by hand, and in the plan the GPU check compares with:
 * 8 layers of GPT-13B on an H200, micro-batch 2, sequence 2048, materialized
 * attention, as `fp8plan run` builds it (exec_plan_input). */
#include <stdlib.h>

#include "exec/measure/plan_link.h"
#include "planner/plan_bytes.h"
#include "support/fixtures.h"
#include "test.h"

/* GPT-13B, one layer, B = 2, H = 40, T = 2048: 2·40·2048² = 335,544,320 score
 * elements; BF16 (a = 2): forward 8 + 4 = 12 B each, backward 8 + 10 = 18 B. */
static void test_attention_bytes(void)
{
    const double E = 2.0 * 40 * 2048 * 2048;
    CHECK_NEAR(E, 335544320.0, 0.0);
    CHECK_NEAR(pb_attn_mat_bytes_fwd(E, 2.0), 4026531840.0, 0.0);
    CHECK_NEAR(pb_attn_mat_bytes_bwd(E, 2.0), 6039797760.0, 0.0);
    /* FP32 activations (a = 4): 16 and 28 B per element */
    CHECK_NEAR(pb_attn_mat_bytes_fwd(10.0, 4.0), 160.0, 0.0);
    CHECK_NEAR(pb_attn_mat_bytes_bwd(10.0, 4.0), 280.0, 0.0);
    /* roofline: 1e12 FLOPs at 1e15/s = 1 ms, 6e9 B at 3e12 B/s = 2 ms -> 2 ms; and the other way round */
    CHECK_NEAR(pb_roofline_s(1e12, 1e15, 6e9, 3e12), 2e-3, 1e-18);
    CHECK_NEAR(pb_roofline_s(3e12, 1e15, 6e9, 3e12), 3e-3, 1e-18);
}

/* 1000 elements into an E4M3 main gradient: 4 (zero) + 4 (amax read) + 4 (cast
 * read) + 1 (write) = 13 B each = 13,000 B; BF16 or FP32 gradients commit nothing. */
static void test_grad_commit_bytes(void)
{
    CHECK_NEAR(pb_grad_commit_bytes(1000.0, DT_E4M3), 13000.0, 0.0);
    CHECK_NEAR(pb_grad_commit_bytes(1000.0, DT_E5M2), 13000.0, 0.0);
    CHECK_NEAR(pb_grad_commit_bytes(1000.0, DT_BF16), 0.0, 0.0);
    CHECK_NEAR(pb_grad_commit_bytes(1000.0, DT_FP32), 0.0, 0.0);
}

/* Two passes for scaled optimizer states (fp8lm: master, grad, m, v scaled) and
 * for msamp-o1's linears (no master: the scaled FP16 weight is updated in place,
 * its new scale from its new amax), one for megatron-bf16 (nothing scaled): one
 * more read of grad + master + m + v = 1 + 2 + 1 + 2 = 6 B per parameter for
 * fp8lm's dtypes, 1e6 parameters -> 6e6 B; msamp-o1's, the weight in the
 * master's place (plan_time), 1 + 2 + 4 + 4 = 11 B -> 11e6 B. */
static void test_two_pass_optimizer(void)
{
    Catalog *c = fx_catalog();
    if (!c) return;
    const Recipe *fp8lm = catalog_recipe(c, "fp8lm"), *bf16 = catalog_recipe(c, "megatron-bf16"),
                 *o1 = catalog_recipe(c, "msamp-o1");
    if (!fp8lm || !bf16 || !o1) {
        CHECK(0);
        free(c);
        return;
    }
    CHECK(pb_optim_two_pass(&fp8lm->gemm));
    CHECK(!pb_optim_two_pass(&fp8lm->other)); /* non-GEMM params on the BF16 path */
    CHECK(!pb_optim_two_pass(&bf16->gemm));
    CHECK(pb_optim_two_pass(&o1->gemm));
    CHECK(!pb_optim_two_pass(&o1->other)); /* megatron-bf16's states */
    CHECK(pb_optim_inplace_weight(&o1->gemm));
    CHECK(!pb_optim_inplace_weight(&fp8lm->gemm) && !pb_optim_inplace_weight(&bf16->gemm));
    CHECK_NEAR(pb_optim_second_pass_bytes(&o1->gemm, 1e6, 2e6, 4e6, 4e6), 11e6, 0.0);
    CHECK_NEAR(pb_optim_second_pass_bytes(&fp8lm->gemm, 1e6, 2e6, 1e6, 2e6), 6e6, 0.0);
    CHECK_NEAR(pb_optim_second_pass_bytes(&bf16->gemm, 4e6, 4e6, 4e6, 4e6), 0.0, 0.0);
    free(c);
}

/* The executor's plan for the GPU check's steps stage, by hand (H200: 989e12
 * BF16 FLOP/s dense, 4.8e12 B/s HBM; defaults eff_gemm_bf16 0.70, eff_hbm 0.80,
 * so 692.3e12 FLOP/s and 3.84e12 B/s):
 *  - attention, per layer: forward 4,026,531,840 B / 3.84e12 = 1.048576 ms
 *    (its FLOPs, 4·4096·2048·5120 = 1.718e11 at 692.3e12, take 0.248 ms:
 *    memory-bound), backward 6,039,797,760 B -> 1.572864 ms; 8 layers, one
 *    micro-batch: 8 · 2.62144 = 20.97152 ms;
 *  - fp8lm's gradient commit: 8 layers · 12·5120² = 2,516,582,400 GEMM weights
 *    · 13 B = 32,715,571,200 B / 3.84e12 = 8.5197 ms, in non-GEMM time and the step;
 *  - fp8lm's second optimizer pass: 6 B · 2,516,582,400 = 15,099,494,400 B /
 *    3.84e12 = 3.93216 ms more optimizer time than the one-pass count. */
static void test_executor_plan_h200(void)
{
    Catalog *c = fx_catalog();
    if (!c) return;
    ExecOverrides ov = {.layers = 8};
    ModelSpec m;
    Err e;
    const GpuSpec *h200 = catalog_gpu(c, "h200");
    if (!h200 || exec_model(catalog_model(c, "gpt-13b"), &ov, &m, &e)) {
        CHECKF(0, "%s", e.msg);
        free(c);
        return;
    }
    static Plan p8, p16;
    PlanInput in;
    exec_plan_input(&in, &m, h200, catalog_recipe(c, "fp8lm"), 2, 1, catalog_stack(c, "fp8plan"));
    CHECK(in.frag_frac == 0.0); /* one arena never fragments */
    CHECK(!plan_build(&in, &p8, &e));
    exec_plan_input(&in, &m, h200, catalog_recipe(c, "megatron-bf16"), 2, 1, catalog_stack(c, "fp8plan"));
    CHECK(!plan_build(&in, &p16, &e));
    CHECK_EQ_U64(p8.mem[MT_FRAGMENTATION].bytes, 0);
    CHECK_REL(p16.time.attn_s, 20.97152e-3, 1e-9);
    CHECK_REL(p8.time.attn_s, 20.97152e-3, 1e-9); /* attention is BF16 in every recipe */
    CHECK_EQ_U64(p8.params_gemm_gpu, 2516582400ull);
    /* the commit: fp8lm's non-GEMM time minus the same work without it */
    double commit = 32715571200.0 / 3.84e12;
    CHECK_NEAR(commit, 8.5197e-3, 1e-7);
    /* the optimizer: one pass reads grad (1) + master, m, v (2+1+2) and writes them (5): 11 B per GEMM weight,
     * plus the second pass's 6; the other parameters (6,4e8 of them: embeddings, norms, biases) one pass of
     * megatron-bf16's FP32 states */
    double gemm_one = 11.0 * 2516582400.0, gemm_two = gemm_one + 6.0 * 2516582400.0;
    double other = (double)(p8.params_gpu - p8.params_gemm_gpu);
    double other_b = other * (4 + 2 * (4 + 4 + 4) + 2); /* grad read; master, m, v read+write; BF16 weight write */
    CHECK_REL(p8.time.optimizer_s, (gemm_two + other_b) / 3.84e12, 1e-9);
    CHECK(p8.time.optimizer_s - (gemm_one + other_b) / 3.84e12 > 3.93e-3);
    /* the step includes the commit: the parts still add up */
    double parts = p8.time.gemm_s + p8.time.attn_s + p8.time.nongemm_s + p8.time.tp_comm_s + p8.time.cp_comm_s +
                   p8.time.pp_comm_s + p8.time.bubble_s + p8.time.dp_comm_s + p8.time.optimizer_s +
                   p8.time.weight_cast_s + p8.time.other_s;
    CHECK_REL(parts, p8.time.step_s, 1e-9);
    CHECK(p8.time.nongemm_s > commit);
    free(c);
}

int main(void)
{
    RUN(test_attention_bytes);
    RUN(test_grad_commit_bytes);
    RUN(test_two_pass_optimizer);
    RUN(test_executor_plan_h200);
    return test_summary();
}
