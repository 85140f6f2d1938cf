/* tests/gpu/gpu_plan.c — what the plan expects of the GPU check's steps stage,
 * before anything runs: for each recipe, the step time and its parts that
 * `fp8plan run` will compare the measured step with (the same PlanInput:
 * exec_plan_input with stacks.csv's fp8plan row — one GPU, materialized
 * attention, no dropout, no fragmentation allowance). Needs no GPU.
 *
 *   gpu_plan [GPU] [LAYERS] [TOKENS] [MODEL]   defaults h200 8 4096 gpt-13b
 *
 * Prints one CSV row per recipe (recipe,gpu,model,layers,tokens,step_ms,
 * gemm_ms,attention_ms,other_kernels_ms,optimizer_ms,tokens_per_s) after a
 * header, read from models/ under the working directory. */
#include <stdlib.h>
#include <string.h>

#include "exec/measure/plan_link.h"
#include "gpu_common.h"
#include "catalog/catalog.h"

static Catalog *load(void)
{
    static Catalog c;
    const char *files[4] = {"models/models.csv", "models/gpus.csv", "models/recipes.csv", "models/stacks.csv"};
    for (int i = 0; i < 4; i++) {
        char *buf = NULL;
        size_t len = 0;
        Err e;
        Status st = file_read_all(files[i], &buf, &len, &e);
        if (!st)
            st = i == 0   ? catalog_parse_models(&c, buf, len, files[i], &e)
                 : i == 1 ? catalog_parse_gpus(&c, buf, len, files[i], &e)
                 : i == 2 ? catalog_parse_recipes(&c, buf, len, files[i], &e)
                          : catalog_parse_stacks(&c, buf, len, files[i], &e);
        free(buf);
        if (st) {
            fprintf(stderr, "gpu_plan: %s\n", e.msg);
            exit(status_exit_code(st));
        }
    }
    return &c;
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_plan", argc, argv);
    const char *gpu_name = argc > 1 ? argv[1] : "h200", *model = argc > 4 ? argv[4] : "gpt-13b";
    uint32_t layers = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 8;
    uint64_t tokens = argc > 3 ? strtoull(argv[3], NULL, 10) : 4096;
    Catalog *c = load();
    const GpuSpec *gpu = catalog_gpu(c, gpu_name);
    const ModelSpec *base = catalog_model(c, model);
    if (!gpu || !base || !layers || !tokens || tokens % base->seq_len) {
        fprintf(stderr,
                "gpu_plan: need a known GPU (%s), model (%s), layers > 0 and tokens a multiple of its sequence\n",
                gpu_name, model);
        return 64;
    }
    ExecOverrides ov = {.layers = layers};
    ModelSpec m;
    Err e;
    if (exec_model(base, &ov, &m, &e)) {
        fprintf(stderr, "gpu_plan: %s\n", e.msg);
        return status_exit_code(e.st);
    }
    static const char *const recipes[] = {"megatron-bf16", "te-fp8", "fp8lm"};
    printf("recipe,gpu,model,layers,tokens,step_ms,gemm_ms,attention_ms,other_kernels_ms,optimizer_ms,tokens_per_s\n");
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) {
        const Recipe *r = catalog_recipe(c, recipes[i]);
        static Plan p;
        PlanInput in;
        if (!r) {
            fprintf(stderr, "gpu_plan: no recipe %s in models/recipes.csv\n", recipes[i]);
            return 66;
        }
        exec_plan_input(&in, &m, gpu, r, (uint32_t)(tokens / m.seq_len), 1, catalog_stack(c, "fp8plan"));
        if (plan_build(&in, &p, &e)) {
            fprintf(stderr, "gpu_plan: %s: %s\n", recipes[i], e.msg);
            return status_exit_code(e.st);
        }
        const TimeBreakdown *t = &p.time;
        printf("%s,%s,%s,%u,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.0f\n", recipes[i], gpu->name, model, layers,
               (unsigned long long)tokens, 1e3 * t->step_s, 1e3 * t->gemm_s, 1e3 * t->attn_s,
               1e3 * (t->nongemm_s + t->weight_cast_s), 1e3 * t->optimizer_s, p.tokens_per_s);
    }
    return 0;
}
