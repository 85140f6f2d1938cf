/* tests/fuzz/fuzz_catalog.c — the strict catalog CSV parsers on arbitrary bytes.
 * The first byte picks models, GPUs, recipes or stacks; the rest is the CSV
 * text. A parsed model is planned on a fixed GPU and recipe, a parsed GPU or
 * stack under a fixed model, so plan_build sees arbitrary shapes, SM counts,
 * matmul ceilings, overlaps and kernel choices too. Nothing may crash, leak or overflow silently. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/fixtures.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static Catalog cat;
    Err e;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("r", 0xe);
    ModelSpec m = fx_tiny_model();
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = &r;
    in.tp = 2, in.dp = 2, in.sharding = SHARD_DIST_OPT;
    static Plan p;
    switch (data[0] % 4) {
    case 0:
        if (catalog_parse_models(&cat, text, len, "fuzz.csv", &e) == ST_OK)
            for (int i = 0; i < cat.nmodels; i++) in.model = &cat.models[i], plan_build(&in, &p, &e);
        break;
    case 1:
        if (catalog_parse_gpus(&cat, text, len, "fuzz.csv", &e) == ST_OK)
            for (int i = 0; i < cat.ngpus; i++) in.gpu = &cat.gpus[i], plan_build(&in, &p, &e);
        break;
    case 2: catalog_parse_recipes(&cat, text, len, "fuzz.csv", &e); break;
    default:
        if (catalog_parse_stacks(&cat, text, len, "fuzz.csv", &e) == ST_OK)
            for (int i = 0; i < cat.nstacks; i++) plan_input_use_stack(&in, &cat.stacks[i]), plan_build(&in, &p, &e);
        break;
    }
    return 0;
}
