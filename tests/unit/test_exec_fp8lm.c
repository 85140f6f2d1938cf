/* tests/unit/test_exec_fp8lm.c — FP8-LM's state really is FP8 and FP16.
 *
 * After one step from zero moments, Adam's states are m = (1−β1)·g and
 * v = (1−β2)·g², where g is the FP8 main gradient dequantized with its scale.
 * We recompute both from the stored gradient with fp8/'s codecs and MS-AMP's
 * power-of-two scale rule, and require the stored m (E4M3) and v (FP16) codes
 * to match exactly; and the arena's byte counts for the m and v terms to be
 * 1 and 2 bytes per linear-weight parameter. */
#include <math.h>
#include <stdlib.h>

#include "exec/backend/data.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "test.h"

/* 2^(floor(log2(fmax/amax))): MS-AMP's scale (margin 0), computed independently. */
static float pow2_scale(float amax, float fmax) { return exp2f(floorf(log2f(fmax / amax))); }

static void test_fp8lm_states(void)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("fp8lm");
    ModelHyper h = model_hyper_default();
    Model *g = NULL;
    CHECK(!fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e));
    if (!g) return;
    DataStream d;
    CHECK(!data_synthetic(&d, s.vocab, 3, &e));
    int32_t in[64], tgt[64];
    data_next(&d, g->batch, g->seq, in, tgt);
    float loss;
    CHECK(!model_step(g, in, tgt, &loss, &e));

    uint64_t gemm_params = 0;
    int checked = 0, bad_m = 0, bad_v = 0;
    for (uint32_t i = 0; i < g->nparams; i++) {
        ModelParam *p = &g->params[i];
        if (!p->gemm) {
            CHECK(p->m_rec == NULL && p->v_rec == NULL); /* other parameters: FP32 Adam */
            continue;
        }
        gemm_params += p->numel;
        const uint8_t *gq = p->grad, *mq = p->m;
        const uint16_t *vq = p->v;
        float ginv = p->grad_rec[REC_SCALE_INV];
        float amax_m = 0.0f, amax_v = 0.0f;
        for (uint64_t j = 0; j < p->numel; j++) {
            float gj = fp8_decode(DT_E4M3, gq[j]) * ginv;
            amax_m = fmaxf(amax_m, fabsf((1.0f - h.beta1) * gj));
            amax_v = fmaxf(amax_v, (1.0f - h.beta2) * gj * gj);
        }
        float sm = pow2_scale(amax_m, 448.0f), sv = pow2_scale(amax_v, 65504.0f);
        CHECK(p->m_rec[REC_SCALE] == sm && p->v_rec[REC_SCALE] == sv);
        CHECK(p->m_rec[REC_SCALE_INV] == 1.0f / sm);
        for (uint64_t j = 0; j < p->numel; j++) {
            float gj = fp8_decode(DT_E4M3, gq[j]) * ginv;
            /* β·0 + …: Adam's own expression from zero moments (it makes −0 into +0) */
            float m = h.beta1 * 0.0f + (1.0f - h.beta1) * gj, v = h.beta2 * 0.0f + (1.0f - h.beta2) * gj * gj;
            bad_m += mq[j] != fp8_encode_f32(DT_E4M3, m * sm, FP8_SATFINITE);
            bad_v += vq[j] != fp16_encode(v * sv);
        }
        /* decoding a few values gives back m and v to the formats' precision
         * (E4M3: 3 mantissa bits, relative step 2^-3; FP16: 10 bits) */
        for (uint64_t j = 0; j < p->numel; j += p->numel / 4) {
            float gj = fp8_decode(DT_E4M3, gq[j]) * ginv, m = (1.0f - h.beta1) * gj;
            float mdec = fp8_decode(DT_E4M3, mq[j]) / sm, vdec = fp16_decode(vq[j]) / sv;
            if (fabsf(m) * sm >= 0.015625f) CHECK(fabsf(mdec - m) <= 0x1p-4f * fabsf(m)); /* normal range */
            float v = (1.0f - h.beta2) * gj * gj;
            if (v * sv >= 0x1p-14f) CHECK(fabsf(vdec - v) <= 0x1p-11f * v);
            checked++;
        }
    }
    CHECK_EQ_INT(bad_m, 0);
    CHECK_EQ_INT(bad_v, 0);
    CHECK(checked >= 8);
    /* byte sizes: E4M3 m = 1 B, FP16 v = 2 B, FP16 master = 2 B, E4M3 grad = 1 B per parameter */
    CHECK_EQ_U64(g->arena.placed[MT_OPTIM_M_GEMM], gemm_params);
    CHECK_EQ_U64(g->arena.placed[MT_OPTIM_V_GEMM], 2 * gemm_params);
    CHECK_EQ_U64(g->arena.placed[MT_MASTER_GEMM], 2 * gemm_params);
    CHECK_EQ_U64(g->arena.placed[MT_GRAD_GEMM], gemm_params);
    CHECK_EQ_U64(g->arena.placed[MT_WEIGHT_GEMM], 0); /* the GEMMs read FP8 copies of the master */
    data_free(&d);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_fp8lm_states);
    return test_summary();
}
