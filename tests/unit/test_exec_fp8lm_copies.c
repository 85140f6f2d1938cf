/* tests/unit/test_exec_fp8lm_copies.c — FP8-LM's FP8 weight copies are cast
 * once per step from the master the optimizer wrote (exec/model/model_copies.c),
 * at a scale from that master's amax, and the forward casts nothing.
 *
 * By hand (E4M3: bias 7, max 448 = 1.75 x 2^8; margin 0): layer 0's QKV
 * master set to the FP16 codes of 4, -8, 1 and zeros, its record scale 2 /
 * scale_inv 0.5, so the stored values are 2, -4, 0.5. amax 4, scale
 * 448 / 4 = 112, scale_inv 1/112:
 *   2 x 112 = 224 = 1.75 x 2^7: exponent 7 + 7 = 14 (1110), mantissa .75
 *     (110): 0 1110 110 = 0x76;
 *   -4 x 112 = -448 = -1.75 x 2^8: 1 1111 110 = 0xFE;
 *   0.5 x 112 = 56 = 1.75 x 2^5: 0 1100 110 = 0x66; zeros 0x00.
 * The transposed copy holds the same codes at (column, row). The slot's
 * amax-history row stays 0, so the bank's delayed update leaves the scale (a
 * tensor that did not run: exec/backend/scaling.c), and a forward changes neither the
 * copies nor the slot.
 *
 * After a step every linear's copies are the cast of its new master, each
 * value recomputed here with fp8/'s codecs (x = fp16 code x scale_inv, then
 * E4M3 of x x scale, scale = 448 / amax). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/data.h"
#include "exec/model/model_internal.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* A one-rank fp8lm model of fx_gpt (micro-batch 2, 2 micro-batches per step) on the cpu backend. */
typedef struct {
    Backend *bk;
    Comm *comm;
    Model *g;
} Fx;

static Model *fx_open(Fx *f)
{
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("fp8lm");
    ModelHyper h = model_hyper_default();
    Err e;
    memset(f, 0, sizeof *f);
    CHECKF(!backend_cpu_create(&f->bk, &e) && !comm_single_create(&f->comm, &e), "%s", e.msg);
    if (f->bk && f->comm) CHECKF(!fx_model(&s, &r, 2, 2, &h, f->bk, f->comm, &f->g, &e), "%s", e.msg);
    return f->g;
}

static void fx_close(Fx *f)
{
    model_destroy(f->g);
    if (f->comm) f->comm->destroy(f->comm);
    if (f->bk) f->bk->destroy(f->bk);
}

/* Every gemm weight's copies and slot as the cast of its master at 448 / amax; returns the failures. */
static int copies_match(Model *g)
{
    int bad = 0;
    ScalingBank *fb = &g->sc.fwd;
    for (uint32_t i = 0; i < g->nparams; i++) {
        ModelParam *w = &g->params[i];
        if (!w->gemm) continue;
        CHECK(model_copies_once(g, w));
        const uint16_t *code = w->master;
        const float sinv = w->master_rec[REC_SCALE_INV];
        float amax = 0.0f;
        for (uint64_t k = 0; k < w->numel; k++) amax = fmaxf(amax, fabsf(fp16_decode(code[k]) * sinv));
        const float scale = 448.0f / amax;
        bad += fb->scale[w->wslot] != scale;
        bad += fb->scale_inv[w->wslot] != 1.0f / scale;
        bad += fb->amax_history[w->wslot] != 0.0f;
        for (uint64_t r = 0; r < w->rows; r++)
            for (uint64_t c = 0; c < w->cols; c++) {
                float x = fp16_decode(code[r * w->cols + c]) * sinv;
                uint8_t q = fp8_encode_f32(DT_E4M3, x * scale, FP8_SATFINITE);
                bad += w->wq_row[r * w->cols + c] != q;
                bad += w->wq_col[c * w->rows + r] != q;
            }
    }
    return bad;
}

static void test_hand_cast(void)
{
    Fx f;
    Err e;
    Model *g = fx_open(&f);
    ModelParam *w = g ? model_find_param(g, PK_QKV_W, 0) : NULL;
    CHECK(w && w->wq_row && w->wq_col && w->master_rec);
    if (!w || !w->wq_col || !w->master_rec) {
        fx_close(&f);
        return;
    }
    uint16_t *code = w->master;
    memset(code, 0, w->numel * sizeof *code);
    code[0] = fp16_encode(4.0f), code[1] = fp16_encode(-8.0f), code[2] = fp16_encode(1.0f);
    w->master_rec[REC_SCALE] = 2.0f, w->master_rec[REC_SCALE_INV] = 0.5f, w->master_rec[REC_AMAX] = 8.0f;
    CHECKF(model_copies_cast(g, COMM_UNPLANNED, &e) == ST_OK, "%s", e.msg);
    ScalingBank *fb = &g->sc.fwd;
    CHECK(fb->scale[w->wslot] == 112.0f);
    CHECK(fb->scale_inv[w->wslot] == 1.0f / 112.0f);
    CHECK(fb->amax_history[w->wslot] == 0.0f);
    CHECK_EQ_INT(w->wq_row[0], 0x76);
    CHECK_EQ_INT(w->wq_row[1], 0xFE);
    CHECK_EQ_INT(w->wq_row[2], 0x66);
    uint64_t nz = 0;
    for (uint64_t k = 3; k < w->numel; k++) nz += w->wq_row[k] != 0;
    CHECK_EQ_U64(nz, 0);
    /* (row 0, column c) of the (N, K) copy is (column c, row 0) of the (K, N) one: index c·N */
    CHECK_EQ_INT(w->wq_col[0], 0x76);
    CHECK_EQ_INT(w->wq_col[w->rows], 0xFE);
    CHECK_EQ_INT(w->wq_col[2 * w->rows], 0x66);
    /* a forward and the bank's delayed update (a micro-batch's forward half) leave copies and slot */
    uint8_t row0[3] = {w->wq_row[0], w->wq_row[1], w->wq_row[2]};
    int32_t in[64], tgt[64];
    for (int k = 0; k < 64; k++) in[k] = k % 64, tgt[k] = (k + 1) % 64;
    CHECKF(model_forward(g, in, tgt, model_dloss(g), &e) == ST_OK, "%s", e.msg);
    CHECK(fb->amax_history[w->wslot] == 0.0f); /* no cast of W in the forward (a cast would record 4) */
    CHECKF(model_update_bank(g, fb, &g->tr_fwd, &e) == ST_OK, "%s", e.msg);
    CHECK(!memcmp(row0, w->wq_row, 3));
    CHECK(fb->scale[w->wslot] == 112.0f);
    CHECK(fb->scale_inv[w->wslot] == 1.0f / 112.0f);
    fx_close(&f);
}

static void test_after_steps(void)
{
    Fx f;
    Err e;
    Model *g = fx_open(&f);
    if (!g) {
        fx_close(&f);
        return;
    }
    CHECK_EQ_INT(copies_match(g), 0); /* model_create's first copies */
    DataStream d;
    CHECK(!data_synthetic(&d, g->spec.vocab, 3, &e));
    uint64_t n = model_step_tokens(g);
    int32_t *in = malloc(n * sizeof *in), *tgt = malloc(n * sizeof *tgt);
    for (int s = 0; in && tgt && s < 3; s++) {
        for (uint32_t k = 0; k < g->microbatches; k++)
            data_next(&d, g->batch, g->seq, in + k * g->batch * g->seq, tgt + k * g->batch * g->seq);
        float loss;
        CHECKF(model_step(g, in, tgt, &loss, &e) == ST_OK, "%s", e.msg);
        CHECKF(copies_match(g) == 0, "step %d: copies not the cast of the new master", s + 1);
    }
    free(in);
    free(tgt);
    data_free(&d);
    fx_close(&f);
}

int main(void)
{
    RUN(test_hand_cast);
    RUN(test_after_steps);
    return test_summary();
}
