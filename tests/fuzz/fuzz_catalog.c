/* tests/fuzz/fuzz_catalog.c — the strict catalog CSV parsers on arbitrary bytes.
 * The first byte picks models, GPUs or recipes; the rest is the CSV text. A
 * parsed model is planned on a fixed GPU and recipe, so plan_build sees
 * arbitrary shapes too. Nothing may crash, leak or overflow silently. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/catalog.h"
#include "planner/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static Catalog cat;
    Err e;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 3) {
    case 0:
        if (catalog_parse_models(&cat, text, len, "fuzz.csv", &e) == ST_OK) {
            static const GpuSpec g = {.name = "g",
                                      .sm = 90,
                                      .hbm_bytes = 80ull << 30,
                                      .hbm_bw = 3e12,
                                      .flops_bf16 = 1e15,
                                      .flops_fp8 = 2e15,
                                      .flops_fp32 = 6e13,
                                      .intra_bw = 4e11,
                                      .inter_bw = 5e10,
                                      .gpus_per_node = 8};
            Recipe r = {.name = "r",
                        .gemm_fwd = DT_BF16,
                        .gemm_bwd = DT_BF16,
                        .comm_dp_grad = DT_FP32,
                        .comm_param_gather = DT_BF16,
                        .comm_tp_ag = DT_BF16,
                        .comm_tp_rs = DT_BF16,
                        .saved_input = DT_BF16,
                        .min_sm = 80};
            StateSet s = {.dt = {DT_BF16, DT_FP32, DT_FP32, DT_FP32, DT_FP32}, .shard_mask = 0xe};
            r.gemm = r.other = s;
            r.other_comm_dp_grad = DT_FP32, r.other_comm_param_gather = DT_BF16;
            for (int i = 0; i < cat.nmodels; i++) {
                PlanInput in;
                plan_input_defaults(&in);
                in.model = &cat.models[i], in.gpu = &g, in.recipe = &r;
                in.tp = 2, in.dp = 2, in.sharding = SHARD_DIST_OPT;
                static Plan p;
                plan_build(&in, &p, &e);
            }
        }
        break;
    case 1: catalog_parse_gpus(&cat, text, len, "fuzz.csv", &e); break;
    default: catalog_parse_recipes(&cat, text, len, "fuzz.csv", &e); break;
    }
    return 0;
}
