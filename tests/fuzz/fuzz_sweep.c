/* tests/fuzz/fuzz_sweep.c — the sweep's enumeration and ranking. Any 32-bit --gpus value is counted
 * (sweep_size) and checked against the number of divisors found by a separate trial division; sizes
 * up to 4,096 GPUs are also swept, with random limits, folding and nearest lists, and the results
 * checked: every evaluation counted once, the kept plans sorted, fitting and free of near-duplicates
 * when folded, the nearest ones sorted and over the memory limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/sweep.h"
#include "support/fixtures.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* d(n) by trial division, independent of planner/sweep.c's factorization */
static uint64_t ndiv(uint32_t n)
{
    uint64_t d = 0;
    for (uint64_t x = 1; x * x <= n; x++)
        if (n % x == 0) d += x * x == n ? 1 : 2;
    return d;
}

static uint32_t u32(const uint8_t *p) { return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9) return 0;
    static Catalog *cat;
    if (!cat) cat = fx_catalog();
    uint32_t gpus = u32(data);
    const Recipe *recs[2] = {&cat->recipes[data[4] % cat->nrecipes], &cat->recipes[data[5] % cat->nrecipes]};
    SweepSpec s = {.recipes = recs, .nrecipes = 1, .gpus = gpus, .max_tp = 1, .max_vpp = 1, .max_cp = 1, .max_mbs = 1};
    plan_input_defaults(&s.base);
    static ModelSpec one_layer; /* no uneven pipeline split exists: R = 2 x RECOMPUTE_COUNT_ per divisor */
    uint32_t mi = data[6] % cat->nmodels;
    while (cat->models[mi].experts) mi = (mi + 1) % cat->nmodels; /* a dense model: no EP x ETP factor */
    one_layer = cat->models[mi];
    one_layer.layers = 1;
    s.base.model = &one_layer;
    s.base.gpu = &cat->gpus[data[7] % cat->ngpus];
    if (gpus && sweep_size(&s) != 2u * RECOMPUTE_COUNT_ * ndiv(gpus)) abort(); /* ndiv: at most 65,536 steps */
    s.base.model = &cat->models[data[6] % cat->nmodels];
    gpus = gpus % 4096 + 1;
    s.gpus = gpus;
    s.nrecipes = 1 + (data[8] >> 1 & 1);
    s.max_tp = data[8] >> 2 & 15, s.max_vpp = size > 9 ? data[9] % 9 : 0, s.max_cp = size > 10 ? data[10] % 9 : 0;
    s.max_mbs = size > 11 ? data[11] % 9 : 0;
    s.fold = data[8] >> 6 & 1;
    if (sweep_size(&s) > 20000) return 0; /* keep each input quick */
    enum { K = 8 };
    static Plan top[K], near[4];
    uint32_t variants[K];
    s.variants = variants, s.nearest = near, s.k_nearest = 4;
    SweepStats st;
    int n = 0;
    Err e;
    if (sweep_run(&s, top, K, &n, &st, NULL, NULL, &e) != ST_OK) abort();
    uint64_t rej = 0;
    for (int r = 0; r < REJECT_COUNT_; r++) rej += st.rejected[r];
    if (st.evaluated != sweep_size(&s) || st.valid + rej != st.evaluated || st.oom > st.valid) abort();
    for (int i = 0; i < n; i++) {
        if (!top[i].fits || (i && top[i - 1].tokens_per_s < top[i].tokens_per_s)) abort();
        for (int j = 0; s.fold && j < i; j++)
            if (sweep_near_duplicate(&top[i], &top[j])) abort();
    }
    for (int i = 0; i < st.n_nearest; i++) /* over the limit (max_mem_frac of capacity), the least first */
        if (near[i].fits || near[i].total_bytes <= near[i].limit_bytes ||
            (i && near[i - 1].total_bytes - near[i - 1].limit_bytes > near[i].total_bytes - near[i].limit_bytes))
            abort();
    return 0;
}
