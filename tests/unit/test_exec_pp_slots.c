/* tests/unit/test_exec_pp_slots.c — what 1F1B keeps per micro-batch in flight (exec/model/model_internal.h):
 * with slots micro-batches in flight on a stage of L blocks, each (slot, block) has its own saved
 * activations, each slot its own token ids, and with FP8 each (slot, block, linear) its own saved input's
 * scale_inv: no two of them share storage and none lies outside the buffer of slots x L (x LIN_COUNT)
 * entries the layout gave. A later micro-batch's forward must not overwrite the scale_inv an earlier one's
 * backward still needs (delayed scaling updates the forward scales after every micro-batch's forward).
 * Without PP (no per-slot buffer) every slot reads the bank's one scale_inv per block and linear. */
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"

enum { SLOTS = 3, LAYERS = 4, B = 2, T = 5 };

static void test_each_slot_its_own_storage(void)
{
    static float sinv[SLOTS * LAYERS * LIN_COUNT];
    static LayerActs acts[SLOTS * LAYERS];
    static int32_t toks[SLOTS * B * T];
    int seen_s[SLOTS * LAYERS * LIN_COUNT] = {0}, seen_a[SLOTS * LAYERS] = {0}, seen_t[SLOTS] = {0};
    static Model m;
    memset(&m, 0, sizeof m);
    m.spec.layers = LAYERS, m.slots = SLOTS, m.batch = B, m.seq = T;
    m.act.pp_xsinv = sinv, m.act.layer = acts, m.act.tokens = toks;
    int outside = 0;
    for (uint32_t s = 0; s < SLOTS; s++) {
        m.slot = s;
        long t = model_tok(&m) - toks;
        if (t < 0 || t > SLOTS * B * T - B * T || t % (B * T))
            outside++;
        else
            seen_t[t / (B * T)]++;
        for (uint32_t l = 0; l < LAYERS; l++) {
            long a = model_la(&m, l) - acts;
            if (a < 0 || a >= SLOTS * LAYERS)
                outside++;
            else
                seen_a[a]++;
            for (int k = 0; k < LIN_COUNT; k++) {
                long i = model_saved_sinv(&m, l, (LinearKind)k) - sinv;
                if (i < 0 || i >= SLOTS * LAYERS * LIN_COUNT)
                    outside++;
                else
                    seen_s[i]++;
            }
        }
    }
    CHECK_EQ_INT(outside, 0);
    int twice = 0;
    for (int i = 0; i < SLOTS * LAYERS * LIN_COUNT; i++) twice += seen_s[i] != 1;
    for (int i = 0; i < SLOTS * LAYERS; i++) twice += seen_a[i] != 1;
    for (int i = 0; i < SLOTS; i++) twice += seen_t[i] != 1;
    CHECK_EQ_INT(twice, 0);
}

/* pp 1: no per-slot copy; the saved input's scale_inv is the forward bank's, the same for every slot */
static void test_no_pp_reads_the_bank(void)
{
    static float bank[LAYERS * LIN_COUNT * 8];
    static Model m;
    memset(&m, 0, sizeof m);
    m.spec.layers = LAYERS, m.spec.ffn_hidden = 8, m.slots = 1; /* dense: every block has its 4 linears */
    m.sc.fwd.scale_inv = bank;
    float *first = model_saved_sinv(&m, 1, LIN_FC1);
    m.slot = 2; /* not used without PP */
    CHECK(model_saved_sinv(&m, 1, LIN_FC1) == first);
    CHECK(first == bank + 12); /* X of block 1's FC1: 2 x (block 0's 4 tensors + FC1's index 2) = 12 */
    CHECK_EQ_INT(model_slot_x(&m, 1, LIN_FC1), 12);
}

/* Block scales, latent attention and MTP over stages (issue 42) lay out: under deepseek-v3 a saved input's 1x128
 * tiles keep their scales beside its codes in the micro-batch's slot and no per-tensor bank moves between a
 * forward and its backward, so no per-slot scale_inv is kept (the plan counts none: plan_mem.c and
 * plan_moe_mem.c, GRAN_TENSOR only); te-fp8 keeps one for stage 0's 2 slots x 1 layer (of fx_llama's 2) x 4 linears = 8. Runs: mpi_pp.sh. */
static void test_block_scales_mla_mtp_over_stages(void)
{
    static Plan p;
    Err e;
    ArenaSpecs sp = {0};
    ModelSpec lm = fx_llama(), mla = fx_mla(1, 16);
    lm.mtp_layers = 1;
    const char *recs[2] = {"deepseek-v3", "te-fp8"};
    for (int r = 0; r < 2; r++) {
        Recipe rc = fx_recipe(recs[r]);
        CHECK(!fx_plan_par(&lm, &rc, 2, 4, 1, 2, &p, &e));
        CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
        uint64_t n = 0;
        for (uint32_t i = 0; i < sp.n; i++)
            if (!strcmp(sp.v[i].name, "pp_saved_scale_inv") || !strcmp(sp.v[i].name, "pp_expert_scales"))
                n += sp.v[i].elements;
        CHECK_EQ_U64(n, r ? 8 : 0);
        arena_specs_free(&sp);
    }
    Recipe bf16 = fx_recipe("megatron-bf16");
    CHECK(!fx_plan_par(&mla, &bf16, 2, 2, 1, 2, &p, &e));
    CHECKF(model_layout(&p, &sp, &e) == ST_OK, "%s", e.msg);
    arena_specs_free(&sp);
}

int main(void)
{
    RUN(test_each_slot_its_own_storage);
    RUN(test_no_pp_reads_the_bank);
    RUN(test_block_scales_mla_mtp_over_stages);
    return test_summary();
}
