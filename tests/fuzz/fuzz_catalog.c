/* tests/fuzz/fuzz_catalog.c — the strict catalog CSV parsers on arbitrary bytes.
 * The first byte picks models, GPUs or recipes; the rest is the CSV text. A
 * parsed model is planned on a fixed GPU and recipe, so plan_build sees
 * arbitrary shapes too. Nothing may crash, leak or overflow silently. */
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
    switch (data[0] % 3) {
    case 0:
        if (catalog_parse_models(&cat, text, len, "fuzz.csv", &e) == ST_OK) {
            GpuSpec g = fx_gpu();
            Recipe r = fx_bf16_recipe("r", 0xe);
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
