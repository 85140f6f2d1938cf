/* tests/unit/test_oracle_plan_seed.c — planner rules that make mutate's fresh seeds found unguarded, each
 * checked by the rule's whole table (every clause, both sides of each bound) rather than the one line:
 * DualPipe's layout checks, block scales and transients, the per-collective exposure of the expert all-to-alls,
 * the optimizer's second pass over scaled states, layout refusals and overhead terms. The catalog rows' rules
 * are in test_oracle_catalog_rows.c, the sweep's in test_oracle_sweep_seed.c, the name tables and the
 * architecture table's curves in test_oracle_tables_seed.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static void test_dualpipe_layout(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 12;
    GpuSpec g = fx_gpu();
    Recipe r = ox_bf16(0);
    const struct {
        unsigned pp, vpp, dp, mbs, gbs, dualpipe;
        int ok;
    } rows[] = {
        {2, 1, 1, 1, 2, 1, 1}, /* m = 2 = pp: the smallest accepted */
        {2, 1, 1, 1, 4, 1, 1}, /* m = 4 */
        {4, 1, 1, 1, 4, 1, 1}, /* m = 4 = pp */
        {4, 1, 1, 1, 6, 1, 1}, /* m = 6, pp < m < 2 pp */
        {6, 1, 1, 1, 6, 1, 1}, /* m = 6 = pp */
        {2, 1, 2, 1, 4, 1, 1}, /* m = 4 / (1 x 2) = 2 */
        {2, 1, 1, 2, 4, 1, 1}, /* m = 4 / (2 x 1) = 2 */
        {1, 1, 1, 1, 2, 1, 0}, /* pp 1 */
        {3, 1, 1, 1, 6, 1, 0}, /* pp 3 odd, m = 6 even and >= pp */
        {2, 2, 1, 1, 4, 1, 0}, /* virtual stages (m = 4 divisible by pp, so the vpp check itself passes) */
        {2, 1, 1, 1, 3, 1, 0}, /* m = 3 odd, >= pp */
        {2, 1, 2, 1, 6, 1, 0}, /* m = 6 / 2 = 3 odd although gbs is even */
        {2, 1, 1, 2, 6, 1, 0}, /* m = 6 / 2 = 3 odd */
        {4, 1, 1, 1, 2, 1, 0}, /* m = 2 even, < pp 4 */
        {6, 1, 1, 1, 4, 1, 0}, /* m = 4 even, < pp 6 */
        {3, 1, 1, 1, 3, 0, 1}, /* no DualPipe: odd pp and odd m are fine */
        {2, 2, 1, 1, 2, 0, 1}, /* no DualPipe: vpp 2 with m = 2 */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        PlanInput in = fx_input(&m, &g, &r);
        in.pp = rows[i].pp, in.vpp = rows[i].vpp, in.dp = rows[i].dp, in.mbs = rows[i].mbs, in.gbs = rows[i].gbs;
        in.dualpipe = (int)rows[i].dualpipe;
        Err e = {0};
        PlanReject got = plan_validate(&in, &e);
        if (rows[i].ok) {
            CHECKF(got == REJECT_NONE, "row %zu: refused (%d): %s", i, (int)got, e.msg);
            continue;
        }
        CHECKF(got == REJECT_VPP, "row %zu: got %d", i, (int)got);
        char want[96];
        snprintf(want, sizeof want, "needs an even --pp (%u), no --vpp (%u) and an even number of micro-batches (%u)",
                 rows[i].pp, rows[i].vpp, rows[i].gbs / (rows[i].mbs * rows[i].dp));
        CHECK_CONTAINS(e.msg, want);
    }
}

/* ---- transients and block scales ---------------------------------------------------------------------- */

/* A MoE model whose linear gradients are FP8 (here the BF16 recipe with E5M2 linear gradients) computes each weight gradient in FP32 before its cast: the largest
 * linear weight of a layer, 4 B an element, joins the transient. ox_moe (dense FFN 512), loss_bytes 4: the MoE
 * layer's transient 3,846,144 (test_oracle_moe); the largest linear is the dense SwiGLU FC1, 1,024 x 256 =
 * 262,144 (QKV 768 x 256, FC2 256 x 512, an expert's 256 x 256 are smaller): + 1,048,576 = 4,894,720. With
 * loss_bytes 10 the loss's 512 x 1,000 x 6 = 3,072,000 does not exceed it either. */
static void test_moe_fp8_grad_transient(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    r.gemm.dt[STATE_GRAD] = DT_E5M2, r.comm_dp_grad = DT_E5M2;
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.loss_bytes = 4;
    for (int lb = 4; lb <= 10; lb += 6) {
        in.loss_bytes = (uint32_t)lb;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st == ST_OK) CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 4894720);
    }
}

/* Block scales of a working weight kept in FP8 (1x128: rows x ceil(cols / 128) FP32 scales) are sharded with
 * it under ZeRO-3 (ceil over d = dp), not otherwise. ox_tiny (4 layers): QKV 24 x 8 -> 24 scales, proj 8 x 8 ->
 * 8, FC1 16 x 8 -> 16, FC2 8 x 16 -> 8: 56 a layer, 224 in all; ZeRO-3 over dp 3: ceil(24/3) + ceil(8/3) +
 * ceil(16/3) + ceil(8/3) = 8 + 3 + 6 + 3 = 20 a layer, 80 in all. No FP8 weight copies. Bytes: 224 x 4 = 896
 * unsharded; under ZeRO-3 a rank holds whole scales, 80 x 4 = 320 B (sharding each tensor's bytes instead,
 * ceil(96/3) + ceil(32/3) + ceil(64/3) + ceil(32/3) = 76 a layer, 304 in all, would split a scale). With
 * 1x32 E8M0 scales (one byte each): QKV 24 x 1, proj 8, FC1 16, FC2 8 as above (8 columns: one block a row),
 * so the same counts and 224 / 80 B. */
static void test_zero3_fp8_weight_block_scales(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    r.gemm.dt[STATE_WEIGHT] = DT_E4M3, r.fp8_row = r.fp8_col = DT_NONE, r.weight_gran = GRAN_1X128;
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 3, in.gbs = 3;
    const Sharding sh[2] = {SHARD_NONE, SHARD_ZERO3};
    const uint64_t want[4] = {224, 80, 224, 80}, bytes[4] = {896, 320, 224, 80};
    for (int i = 0; i < 4; i++) {
        in.sharding = sh[i % 2];
        r.weight_gran = i < 2 ? GRAN_1X128 : GRAN_1X32;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st != ST_OK) continue;
        CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, want[i]);
        CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, bytes[i]);
    }
}

/* ---- optimizer bytes with scaled states ----------------------------------------------------------------- */

/* The optimizer's HBM traffic of ox_moe (dense FFN 512, ep 1: every expert on the one GPU, HBM 1e12 B/s at
 * efficiency 1) when the recipe scales some states (FP8-LM / MS-AMP): a scaled master, m or v makes that state
 * set's optimizer a second pass reading gradient, master, m and v again, FP32 each: 16 B a parameter; a scaled
 * gradient alone does not. The linear-weight set ("gemm") covers the dense linears and the experts, "other" the
 * rest. One pass of this recipe is 30 B a parameter, 69,527,040 B (test_oracle_moe); parameters:
 *   linear (non-expert): 2 x 262,144 attention + 393,216 dense FFN + 98,304 shared expert = 1,015,808
 *   experts 8 x 98,304 = 786,432; other (norms, router, embedding and head) 515,328
 *   m scaled in gemm:            69,527,040 + 16 x (1,015,808 + 786,432) = 69,527,040 + 28,835,840 =  98,362,880 B
 *   master scaled in gemm and v in other: 98,362,880 + 16 x 515,328 = 98,362,880 + 8,245,248 = 106,608,128 B
 *   gradient scaled only:        69,527,040 B */
static void test_optimizer_second_pass(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.hbm_bw = 1e12;
    const struct {
        unsigned gemm, other;
        double bytes;
    } rows[] = {
        {1u << STATE_M, 0, 98362880.0},
        {1u << STATE_MASTER, 1u << STATE_V, 106608128.0},
        {1u << STATE_GRAD, 1u << STATE_GRAD, 69527040.0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Recipe r = fx_bf16_recipe("bf16", 0);
        r.gemm.scaled_mask = rows[i].gemm, r.other.scaled_mask = rows[i].other;
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.eff_hbm = 1;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "row %zu: %s", i, e.msg);
        if (st != ST_OK) continue;
        CHECK_EQ_U64(p.params_gemm_gpu, 1015808);
        CHECK_EQ_U64(p.params_expert_gpu, 786432);
        CHECKF(fabs(p.time.optimizer_s - rows[i].bytes * 1e-12) <= 1e-12 * rows[i].bytes * 1e-12,
               "row %zu: optimizer %.12g s, expected %.12g", i, p.time.optimizer_s, rows[i].bytes * 1e-12);
    }
}

/* ---- expert all-to-all exposure ------------------------------------------------------------------------- */

/* Each expert all-to-all (and expert-TP) row's exposed time is its time times the share of the reported GPU's
 * expert communication the step exposes. Two ends follow by hand:
 *   - overlap_ep 0: nothing hides, every row with calls is exposed whole (exposed_s == time_s > 0), and the rows
 *     add up to the step's ep_comm_s (one GPU, pp 1: the step is m micro-batches of every layer);
 *   - overlap_ep 1 with a fast link behind a slow GPU: every merged layer hides them, the unmerged first forward and
 *     last backward (pp 1: 1 of the 4 micro-batches, plan_unmerged_share) do not: every row is exposed a quarter of
 *     its time (exposed_s == time_s / 4), and the rows add up to the step's ep_comm_s as well.
 * ox_moe (1 dense + 1 MoE layer), dp 4, ep 2 and etp 2 (sequence parallel tp 2 x dp 2 = 4 ranks hold ep x etp =
 * 4), gbs 8: 4 micro-batches. */
static void test_expert_exposure(void)
{
    ModelSpec m = ox_moe(512);
    Recipe r = ox_bf16(0);
    for (int hidden = 0; hidden < 2; hidden++) {
        GpuSpec g = fx_gpu();
        if (hidden) g.flops_bf16 = g.flops_fp32 = 1e9, g.hbm_bw = 1e9, g.intra_bw = g.inter_bw = 1e18;
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = 2, in.sp = 1, in.dp = 2, in.ep = 2, in.etp = 2, in.gbs = 8;
        in.overlap_ep = hidden ? 1.0 : 0.0;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st != ST_OK) continue;
        double sum = 0;
        int rows = 0;
        for (int id = CO_EP_DISPATCH_FWD; id <= CO_ETP_RS; id++) {
            const Collective *c = &p.coll[id];
            CHECKF(c->calls > 0 && c->time_s > 0, "collective %d: %llu calls, %g s", id, (unsigned long long)c->calls,
                   c->time_s);
            if (hidden)
                CHECKF(fabs(c->exposed_s - c->time_s / 4) <= 1e-12 * c->time_s,
                       "collective %d: %g of %g s exposed behind a slow GPU", id, c->exposed_s, c->time_s);
            else
                CHECKF(c->exposed_s == c->time_s, "collective %d: %g of %g s exposed", id, c->exposed_s, c->time_s);
            sum += c->exposed_s, rows++;
        }
        CHECK_EQ_INT(rows, 6);
        CHECK_REL(sum, p.time.ep_comm_s, 1e-12);
    }
}

/* ---- model FLOPs with multi-token prediction ------------------------------------------------------------ */

/* FLOPs per token = 6 x (the weights a token multiplies) + attention 6 x (layers + MTP depths) x heads x seq x
 * (dqk + dv); an MTP depth multiplies eh_proj [h, 2h], one more layer of the model's kind and the head again.
 *   ox_moe, MTP 1: dense layer 262,144 + 393,216 = 655,360; MoE layer 262,144 + shared 98,304 + top 2 x 98,304
 *     + router 8 x 256 = 559,104; head 256 x 1,000 = 256,000; the depth 2 x 256 x 256 = 131,072 + a MoE layer
 *     559,104 + head 256,000 = 946,176: weights 2,416,640, x 6 = 14,499,840; attention 6 x 3 x 2 x 512 x 256 =
 *     4,718,592: 19,218,432.
 *   ox_tiny (4 dense layers, hidden 8, 2 heads of 4, FFN 16, vocabulary 16, seq 4), MTP 1: a layer QKV 24 x 8 +
 *     proj 64 + FC1 128 + FC2 128 = 512, head 16 x 8 = 128; the depth 2 x 8 x 8 = 128 + a dense layer 512 + head
 *     128 = 768: 4 x 512 + 128 + 768 = 2,944, x 6 = 17,664; attention 6 x 5 x 2 x 4 x 8 = 1,920: 19,584.
 * model_flops_step is that per token x gbs x seq. */
static void test_mtp_flops(void)
{
    GpuSpec g = fx_gpu();
    Recipe r = ox_bf16(0);
    ModelSpec mo = ox_moe(512), t = ox_tiny(16, 4);
    mo.mtp_layers = 1, t.mtp_layers = 1;
    const struct {
        const ModelSpec *m;
        double seq, per_token;
    } rows[] = {{&mo, 512, 19218432.0}, {&t, 4, 19584.0}};
    for (int i = 0; i < 2; i++) {
        PlanInput in = fx_input(rows[i].m, &g, &r);
        in.gbs = 2;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s: %s", rows[i].m->name, e.msg);
        if (st != ST_OK) continue;
        CHECK_REL(p.model_flops_step, rows[i].per_token * 2 * rows[i].seq, 1e-12);
    }
}

/* ---- DP exposure behind the reported stage ------------------------------------------------------------- */

/* The DP gradient all-reduce hides behind the backward of the stage the plan reports (Plan.stage: the memory-
 * heaviest), up to overlap_dp, plus its last bucket: exposed = min(T, max(0, T - ov x B) + T / chunks), B that
 * stage's backward of one micro-batch, chunks its layers (no vpp). When the reported stage is also the slowest,
 * B = bwd_s / m. Two pipelines of ox_tiny on pp 2, dp 2, m = 4, ov 1: vocabulary 1,000 split 2 + 2 (the LM
 * head and the logits make the last stage the heaviest and the slowest) and vocabulary 16 split 3 + 1 (the
 * first). The link is set so that T = 1.5 x B (a partial exposure: it tells B from the other stage's); T is the
 * planner's, the rule applied to it is checked. */
static void test_dp_exposure_reported_stage(void)
{
    Recipe r = ox_bf16(0);
    for (int last = 1; last >= 0; last--) {
        ModelSpec t = ox_tiny(last ? 1000 : 16, 64);
        GpuSpec g = ox_big_gpu(1ull << 40);
        g.flops_bf16 = 1e12, g.hbm_bw = 1e11, g.link_lat = 1e-12; /* a bandwidth-bound all-reduce */
        PlanInput in = fx_input(&t, &g, &r);
        in.pp = 2, in.dp = 2, in.gbs = 8, in.seq = 64, in.overlap_dp = 1;
        in.first_stage_layers = last ? 0 : 3, in.last_stage_layers = last ? 0 : 1;
        Plan p;
        Err e = {0};
        for (int pass = 0; pass < 2; pass++) {
            Status st = plan_build(&in, &p, &e);
            CHECKF(st == ST_OK, "%s", e.msg);
            if (st != ST_OK) return;
            double B = p.time.bwd_s / 4, T = p.coll[CO_DP_GRAD_AR].time_s;
            /* pass 0: scale both links so the all-reduce takes about 1.5 B */
            if (!pass) g.intra_bw *= T / (1.5 * B), g.inter_bw *= T / (1.5 * B);
        }
        CHECK_EQ_INT(p.stage, last ? 1 : 0);
        CHECK_EQ_INT(p.stage_layers, last ? 2 : 3);
        const Collective *ar = &p.coll[CO_DP_GRAD_AR];
        double B = p.time.bwd_s / 4, T = ar->time_s;
        CHECK_EQ_U64(ar->calls, 1);
        CHECKF(T > 1.2 * B && T < 1.8 * B, "premise: T %g s, B %g s", T, B);
        double want = T - B + T / (last ? 2 : 3);
        if (want > T) want = T;
        CHECK_REL(ar->exposed_s, want, 1e-9);
        CHECK_REL(p.time.dp_comm_s, want, 1e-9);
    }
}

/* ---- layout checks without a test of their own --------------------------------------------------------- */

/* plan_validate's refusals that no other suite reaches, each with its whole message, and the layout one step
 * inside accepted. The model: ox_tiny (2 heads, FFN 16, 4 layers, seq 4) or ox_moe, BF16. */
static void test_layout_refusals(void)
{
    GpuSpec g = fx_gpu();
    Recipe r = ox_bf16(0);
    Err e = {0};
    ModelSpec t = ox_tiny(16, 64);
    PlanInput in = fx_input(&t, &g, &r);
    /* the vocabulary padded to vocab-pad x tp: 2^31 x 2 = 2^32, ceil(16 / 2^32) x 2^32 = 2^32 > 2^32 - 1; at tp 1
     * the multiple 2^31 itself fits, and so does 2^32 - 1 */
    in.vocab_pad = 1u << 31, in.tp = 2;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "--vocab-pad 2147483648: the vocabulary padded to a multiple of 4294967296 (vocab-pad x tp) "
                          "passes 2^32");
    in.tp = 1;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "%s", e.msg);
    in.vocab_pad = 4294967295u; /* the multiple 2^32 - 1 is the largest 32-bit count: accepted */
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "vocab-pad 2^32 - 1: %s", e.msg);
    /* --vocab-pad 0 pads to nothing more than 1 does: a vocabulary of 17 stays 17 at tp 1, and at tp 2 rounds up
     * to the even 18 only (a multiple of 0 x tp would be no multiple at all) */
    ModelSpec v17 = ox_tiny(17, 64);
    in = fx_input(&v17, &g, &r);
    in.vocab_pad = 0;
    Plan pv;
    CHECKF(plan_build(&in, &pv, &e) == ST_OK, "vocab-pad 0: %s", e.msg);
    CHECK_EQ_U64(pv.vocab_padded, 17);
    in.tp = 2;
    CHECKF(plan_build(&in, &pv, &e) == ST_OK, "vocab-pad 0, tp 2: %s", e.msg);
    CHECK_EQ_U64(pv.vocab_padded, 18);
    /* FFN 17 over tp 2 (2 heads divide) */
    in = fx_input(&t, &g, &r);
    t.ffn_hidden = 17, in.tp = 2;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_FFN_TP);
    CHECK_CONTAINS(e.msg, "--tp 2: ffn_hidden 17 of oracle-tiny is not divisible by tp");
    t.ffn_hidden = 18;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "%s", e.msg);
    t.ffn_hidden = 16;
    /* sequence parallelism splits seq / cp tokens over tp: 4 heads so tp 4 divides them; seq 12 with cp 2 (12 is
     * a multiple of 2 cp = 4) leaves 6 tokens a CP rank, not a multiple of tp 4; cp 3 leaves 4; without --sp any */
    t.heads = t.kv_heads = 4, t.head_dim = 2;
    in = fx_input(&t, &g, &r);
    in.tp = 4, in.sp = 1, in.seq = 12, in.cp = 2;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_SEQ_CP);
    CHECK_CONTAINS(e.msg, "--sp: seq/cp = 6 is not divisible by tp = 4 (sequence parallelism splits tokens)");
    in.cp = 3;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "cp 3: %s", e.msg);
    in.cp = 2, in.sp = 0;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "no sp: %s", e.msg);
    /* the interleaved schedule: m = gbs / (mbs dp) = 3 micro-batches over pp 2; 4 are divisible */
    t = ox_tiny(16, 64);
    in = fx_input(&t, &g, &r);
    in.pp = 2, in.vpp = 2, in.gbs = 3;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_VPP);
    CHECK_CONTAINS(e.msg, "--vpp 2: the interleaved schedule needs micro-batches (3) divisible by pp (2)");
    in.dp = 3, in.gbs = 6; /* m = 6 / 3 = 2 */
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "m 2: %s", e.msg);
    in.gbs = 12, in.mbs = 2; /* m = 12 / (2 x 3) = 2 */
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "mbs 2: %s", e.msg);
    in.gbs = 18; /* m = 18 / 6 = 3 */
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_VPP);
    CHECK_CONTAINS(e.msg, "micro-batches (3) divisible by pp (2)");
    /* a dense model has no expert activations to recompute */
    in = fx_input(&t, &g, &r);
    in.recompute_mods = RECOMPUTE_MOD_MOE_ACT;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "--recompute-modules moe_act: oracle-tiny has no experts");
    /* the shared experts' FFN (shared x expert FFN) over tp: 1 x 129 over 2 refused; 2 x 129 = 258 and
     * 1 x 128 divide (the product, not either factor) */
    ModelSpec mo = ox_moe(512);
    mo.expert_ffn = 129;
    in = fx_input(&mo, &g, &r);
    in.tp = 2, in.sp = 1;
    CHECK_EQ_INT(plan_validate(&in, &e), REJECT_EP);
    CHECK_CONTAINS(e.msg, "--tp 2: the shared experts' FFN 1 x 129 of oracle-moe is not divisible by tp");
    mo.shared_experts = 2;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "2 x 129: %s", e.msg);
    mo.shared_experts = 1, mo.expert_ffn = 128;
    CHECKF(plan_validate(&in, &e) == REJECT_NONE, "1 x 128: %s", e.msg);
}

/* ---- DualPipe on two stages --------------------------------------------------------------------------------- */

/* On pp 2 DualPipe's rank 0 runs stage 0 for half the micro-batches and stage pp - 1 = 1 for the other half, so
 * per step it does each stage's work m / 2 times: (stage 0 + stage 1) x m / 2, whichever stage is heavier. The
 * two stages together are the whole model, so every compute term of the step is half the one-stage plan's (m
 * times the whole model), and the exposed expert all-to-alls (the same for every MoE layer; DualPipe hides
 * them behind the paired chunk, 1F1B by overlap_ep) and the forward and backward they join are the same for
 * either split. ox_moe with 3 layers (the first dense), dp 2, ep 2, m = 4 micro-batches, a 100 MB/s link (the
 * all-to-alls outlast the compute they hide behind), split 2 + 1 (the first stage heavier) and 1 + 2 (the last
 * heavier). */
static void test_dualpipe_two_stages(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 3;
    GpuSpec g = fx_gpu();
    g.intra_bw = g.inter_bw = 1e8;
    Recipe r = ox_bf16(0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.ep = 2, in.gbs = 8;
    Plan one, two;
    Err e = {0};
    Status st = plan_build(&in, &one, &e);
    CHECKF(st == ST_OK, "pp 1: %s", e.msg);
    if (st != ST_OK) return;
    double ep[2] = {0, 0}, fwd[2] = {0, 0}, bwd[2] = {0, 0};
    for (int first = 1; first <= 2; first++) {
        in.pp = 2, in.dualpipe = 1, in.first_stage_layers = (uint32_t)first, in.last_stage_layers = 3u - first;
        st = plan_build(&in, &two, &e);
        CHECKF(st == ST_OK, "first %d: %s", first, e.msg);
        if (st != ST_OK) continue;
        CHECK_REL(two.time.gemm_s, one.time.gemm_s / 2, 1e-12);
        CHECK_REL(two.time.expert_gemm_s, one.time.expert_gemm_s / 2, 1e-12);
        CHECK_REL(two.time.attn_s, one.time.attn_s / 2, 1e-12);
        CHECK_REL(two.time.moe_route_s, one.time.moe_route_s / 2, 1e-12);
        CHECK(one.time.expert_gemm_s > 0 && one.time.moe_route_s > 0);
        ep[first - 1] = two.time.ep_comm_s, fwd[first - 1] = two.time.fwd_s, bwd[first - 1] = two.time.bwd_s;
    }
    CHECKF(ep[0] > 0, "premise: exposed all-to-alls %g s", ep[0]);
    CHECK_REL(ep[1], ep[0], 1e-12);
    CHECK_REL(fwd[1], fwd[0], 1e-12);
    CHECK_REL(bwd[1], bwd[0], 1e-12);
}

/* ---- explicit GEMM efficiencies and the sustained share ---------------------------------------------- */

/* A GEMM rate is the peak times an explicit efficiency, or (efficiency 0) the MAMF / peak times the share of it
 * the GPU sustains under load: an explicit efficiency already says what a training step reaches, so the sustained
 * share must not scale it again. An FP8 recipe on fx_gpu (no MAMF): with explicit BF16 and FP8 efficiencies
 * (0.5, 0.6) the step's GEMM time is the same for sustained 0.8 and 1 (the FP8 linears and the BF16 head alike);
 * with the model's (0) it grows by 1 / 0.8 as the rates shrink. */
static void test_explicit_efficiency_not_sustained(void)
{
    ModelSpec m = ox_tiny(1000, 64);
    Recipe r = fx_te_recipe("te", 0);
    double gemm[2][2];
    for (int expl = 0; expl < 2; expl++)
        for (int sus = 0; sus < 2; sus++) {
            GpuSpec g = fx_gpu();
            g.sustained = sus ? 0.8 : 1.0;
            PlanInput in = fx_input(&m, &g, &r);
            in.eff_gemm_bf16 = expl ? 0.5 : 0, in.eff_gemm_fp8 = expl ? 0.6 : 0;
            Plan p;
            Err e = {0};
            Status st = plan_build(&in, &p, &e);
            CHECKF(st == ST_OK, "%s", e.msg);
            gemm[expl][sus] = st == ST_OK ? p.time.gemm_s : -1;
        }
    CHECK(gemm[1][0] > 0);
    CHECK_REL(gemm[1][1], gemm[1][0], 1e-12);
    CHECKF(gemm[0][1] > gemm[0][0] * 1.01, "sustained 0.8: %g s, 1: %g s", gemm[0][1], gemm[0][0]);
}

/* ---- expert-DP placement ---------------------------------------------------------------------------------- */

/* The expert-data-parallel group's ranks sit ep x etp apart (an expert group is carved from consecutive ranks), so
 * its collectives leave the node once stride x ranks passes gpus_per_node. ox_moe, tp 2 (sp), dp 4, ep 2, etp 2:
 * edp = 2 x 4 / (2 x 2) = 2 ranks, stride 4: 4 x 2 = 8 ranks apart end to end, inside a node of 8, across nodes of
 * 4 (where the all-reduce takes the 1 GB/s NIC instead of the 1 TB/s link). */
static void test_edp_stride(void)
{
    ModelSpec m = ox_moe(512);
    Recipe r = ox_bf16(0);
    double t[2] = {0, 0};
    for (int small = 0; small < 2; small++) {
        GpuSpec g = fx_gpu();
        g.gpus_per_node = small ? 4 : 8, g.intra_bw = 1e12, g.inter_bw = 1e9;
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = 2, in.sp = 1, in.dp = 4, in.ep = 2, in.etp = 2, in.gbs = 4;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st != ST_OK) continue;
        const Collective *c = &p.coll[CO_EDP_GRAD_AR];
        CHECK_EQ_U64(c->ranks, 2);
        CHECK_EQ_INT(c->inter_node, small);
        t[small] = c->time_s;
    }
    CHECKF(t[1] > 100 * t[0], "across nodes %g s, inside %g s", t[1], t[0]);
}

/* ---- overhead terms ------------------------------------------------------------------------------------ */

/* The fixed overheads are whole on every GPU (shards 1), live across steps (persistent), have no dtype or element
 * count and hold what the input says: a communicator buffer per group the GPU is in, the GEMM workspace, the CUDA
 * context; the allocator's reserve is not persistent. nccl_comm_bytes 1,000, workspace 2,000, context 3,000.
 * Dense ox_tiny, tp 2, dp 2: groups tp and dp -> 2,000 B. ox_moe, tp 2 (sp), dp 2, ep 2: tp, dp, ep and expert
 * DP (tp x dp / ep = 2 ranks) -> 4,000 B. */
static void test_overhead_terms(void)
{
    ModelSpec t = ox_tiny(16, 4), mo = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = ox_bf16(0);
    const ModelSpec *ms[2] = {&t, &mo};
    const uint64_t comm[2] = {2000, 4000};
    for (int i = 0; i < 2; i++) {
        PlanInput in = fx_input(ms[i], &g, &r);
        in.tp = 2, in.sp = 1, in.dp = 2, in.ep = i ? 2 : 1, in.gbs = 2;
        in.nccl_comm_bytes = 1000, in.workspace_bytes = 2000, in.cuda_context_bytes = 3000;
        Plan p;
        Err e = {0};
        Status st = plan_build(&in, &p, &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st != ST_OK) continue;
        const MemTermId id[3] = {MT_COMM_BUFFER, MT_WORKSPACE, MT_CUDA_CONTEXT};
        const uint64_t bytes[3] = {comm[i], 2000, 3000};
        const char *const name[3] = {"comm_buffers", "gemm_workspace", "cuda_context"};
        for (int k = 0; k < 3; k++) {
            const MemTerm *m = &p.mem[id[k]];
            const int persistent = mem_term_persistent(id[k]);
            const MemCategory cat = mem_term_category(id[k]);
            CHECKF(m->bytes == bytes[k] && m->elements == 0 && m->shards == 1 && persistent == 1 &&
                       cat == MC_OVERHEAD && m->dtype == DT_NONE,
                   "%s %s: %llu B, %llu elements, shards %u, persistent %d, cat %d, dtype %d", ms[i]->name, name[k],
                   (unsigned long long)m->bytes, (unsigned long long)m->elements, m->shards, persistent, (int)cat,
                   (int)m->dtype);
            CHECK_STR(mem_term_name(id[k]), name[k]);
        }
        CHECK(mem_term_persistent(MT_FRAGMENTATION) == 0 && mem_term_category(MT_FRAGMENTATION) == MC_OVERHEAD);
    }
}

int main(void)
{
    RUN(test_dualpipe_layout);
    RUN(test_expert_exposure);
    RUN(test_moe_fp8_grad_transient);
    RUN(test_zero3_fp8_weight_block_scales);
    RUN(test_optimizer_second_pass);
    RUN(test_mtp_flops);
    RUN(test_dp_exposure_reported_stage);
    RUN(test_layout_refusals);
    RUN(test_dualpipe_two_stages);
    RUN(test_explicit_efficiency_not_sustained);
    RUN(test_edp_stride);
    RUN(test_overhead_terms);
    return test_summary();
}
