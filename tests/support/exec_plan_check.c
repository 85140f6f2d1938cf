/* tests/support/exec_plan_check.c — see exec_plan_check.h. */
#include "exec_plan_check.h"

#include <stdio.h>

#include "exec/measure/plan_link.h"
#include "exec/model/model.h"

void exec_plan_in(const Catalog *cat, const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro,
                  PlanInput *in)
{
    exec_plan_input(in, m, catalog_gpu(cat, "h100-sxm"), catalog_recipe(cat, recipe), mbs, micro,
                    catalog_stack(cat, "fp8plan"));
}

int exec_plan_layout(const PlanInput *in, Plan *p, uint64_t have[ARENA_TERMS])
{
    Err e;
    const char *what = in->recipe ? in->recipe->name : "(no recipe)";
    if (plan_build(in, p, &e)) return fprintf(stderr, "  plan %s/%s: %s\n", in->model->name, what, e.msg), 1;
    ArenaSpecs specs = {0};
    int bad = model_layout(p, &specs, &e) || arena_specs_bytes(&specs, have, &e);
    if (bad) fprintf(stderr, "  layout %s/%s: %s\n", in->model->name, what, e.msg);
    arena_specs_free(&specs);
    return bad;
}

int exec_plan_mismatches(const Catalog *cat, const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro)
{
    if (!catalog_recipe(cat, recipe)) return fprintf(stderr, "  %s: not in the catalog\n", recipe), 1;
    PlanInput in;
    static Plan p;
    exec_plan_in(cat, m, recipe, mbs, micro, &in);
    uint64_t have[ARENA_TERMS];
    if (exec_plan_layout(&in, &p, have)) return 1;
    if (p.microbatches != micro) return fprintf(stderr, "  plan %s: %u micro-batches\n", m->name, p.microbatches), 1;
    int bad = 0;
    for (int t = 0; t < MT_COUNT_; t++) {
        if (!arena_holds((MemTermId)t) || t == MT_WORKSPACE) continue; /* overheads; not in a count-only layout */
        uint64_t want = p.mem[t].bytes;
        /* MoE: the routed part's saved tensors are a bound (the plan counts per row a routing weight and two
         * maps, the executor one map per (token, slot) and the counts); its transient is not compared: the
         * plan's MoE path leaves out the attention backward's scratch and counts one expert-hidden gradient
         * where the executor holds d(FC1 output) and d(activation output) together (docs/executor-moe.md) */
        if (t == MT_TRANSIENT && (spec_is_moe(m) || spec_is_mla(m))) continue; /* MLA: test_mla_terms_match_plan */
        int ok = t == MT_TRANSIENT || t == MT_ACT_MOE ? have[t] <= want : have[t] == want;
        if (!ok) {
            fprintf(stderr, "  %s L%u C%u T%u mbs %u, %s: %s executor %llu, plan %llu\n", m->name, m->layers, m->hidden,
                    m->seq_len, mbs, recipe, mem_term_name((MemTermId)t), (unsigned long long)have[t],
                    (unsigned long long)want);
            bad++;
        }
    }
    return bad;
}
