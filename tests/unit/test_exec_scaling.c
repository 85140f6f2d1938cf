/* tests/unit/test_exec_scaling.c — delayed scaling really runs in the step.
 *
 * A te-fp8 model (amax history 16, max) trains with the scaling trace on. For
 * several FP8 tensors the amax sequence the casts observed is replayed through
 * fp8/'s delayed-scaling state machine (fp8/delayed.h: the code `fp8plan
 * scaling` runs), and the scales the step used and computed must equal the
 * replay's bit for bit. A spike is planted in one weight (amax 640 for one
 * step): the next scale becomes 448/640 (the seed's 0.70), small weights flush
 * to zero in the FP8 copy, and the scale recovers exactly when the spike
 * leaves the 16-step window. The histories roll: after every step the last
 * row holds that step's amax and row 0 is clear. */
#include <math.h>
#include <stdlib.h>

#include "exec/backend/data.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "fp8/delayed.h"
#include "fp8/half.h"
#include "test.h"

enum { STEPS = 40, SPIKE = 10, HIST = 16 };

typedef struct {
    float amax[STEPS], used[STEPS], next[STEPS];
} Seq;

/* Replay amax through fp8/'s state machine; count the steps whose scales differ. */
static int replay(const Seq *q, Dtype fmt, const char *what)
{
    float hist[HIST];
    DelayedState ds;
    DelayedCfg cfg = {.fmt = fmt, .hist_len = HIST, .algo = AMAX_ALGO_MAX, .margin = 0};
    Err e;
    if (delayed_init(&ds, &cfg, hist, &e)) return STEPS;
    int bad = 0;
    for (int s = 0; s < STEPS; s++) {
        DelayedStep out;
        delayed_step(&ds, q->amax[s], &out);
        if (out.scale_used != q->used[s] || out.scale_next != q->next[s]) {
            if (!bad)
                fprintf(stderr, "  %s step %d: amax %.9g, executor scale %.9g -> %.9g, fp8/delayed %.9g -> %.9g\n",
                        what, s + 1, (double)q->amax[s], (double)q->used[s], (double)q->next[s], (double)out.scale_used,
                        (double)out.scale_next);
            bad++;
        }
    }
    return bad;
}

static void test_delayed_scaling_spike(void)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    CHECK_EQ_INT(r.amax_history, HIST);
    ModelHyper h = model_hyper_default();
    Model *g = NULL;
    CHECK(!fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e));
    if (!g) return;
    CHECK(!model_trace_enable(g, &e));
    DataStream d;
    CHECK(!data_synthetic(&d, s.vocab, 9, &e));
    ModelParam *w = model_find_param(g, PK_QKV_W, 0);
    const uint32_t sw = model_slot_w(g, 0, LIN_QKV), sx = model_slot_x(g, 1, LIN_FC1),
                   sd = model_slot_dy(g, 1, LIN_FC2);
    const uint32_t nf = g->sc.fwd.n, nb = g->sc.bwd.n;
    Seq qw, qx, qd;
    uint16_t saved_w = 0;
    float saved_m = 0.0f;
    int32_t in[64], tgt[64];
    int rolled = 1, zeros_before = 0, zeros_after = 0;
    for (int k = 0; k < STEPS; k++) {
        uint16_t *wb = w->weight;
        float *wm = w->master;
        if (k == SPIKE) { /* plant: one weight element becomes 640 (exact in BF16) for one step */
            saved_w = wb[0], saved_m = wm[0];
            wb[0] = bf16_encode(640.0f), wm[0] = 640.0f;
        } else if (k == SPIKE + 1) {
            wb[0] = saved_w, wm[0] = saved_m;
        }
        data_next(&d, g->batch, g->seq, in, tgt);
        float loss;
        CHECK(!model_step(g, in, tgt, &loss, &e));
        qw.amax[k] = g->tr_fwd.amax[sw], qw.used[k] = g->tr_fwd.scale_used[sw], qw.next[k] = g->tr_fwd.scale_next[sw];
        qx.amax[k] = g->tr_fwd.amax[sx], qx.used[k] = g->tr_fwd.scale_used[sx], qx.next[k] = g->tr_fwd.scale_next[sx];
        qd.amax[k] = g->tr_bwd.amax[sd], qd.used[k] = g->tr_bwd.scale_used[sd], qd.next[k] = g->tr_bwd.scale_next[sd];
        /* the history rolled: this step's amax is now the last row, row 0 is clear */
        rolled &= g->sc.fwd.amax_history[(HIST - 1) * nf + sw] == qw.amax[k] && g->sc.fwd.amax_history[sw] == 0.0f;
        rolled &= g->sc.bwd.amax_history[(HIST - 1) * nb + sd] == qd.amax[k];
        if (k >= 1 && k < HIST) rolled &= g->sc.fwd.amax_history[(HIST - 2) * nf + sw] == qw.amax[k - 1];
        /* the FP8 copy cast this step: count exact zeros (flushed weights) */
        int z = 0;
        for (uint64_t i = 0; i < w->numel; i++) z += (w->wq_row[i] & 0x7F) == 0;
        if (k == SPIKE - 1) zeros_before = z;
        if (k == SPIKE + 1) zeros_after = z;
    }
    CHECK(rolled);
    CHECK_EQ_INT(replay(&qw, DT_E4M3, "qkv.w layer 0"), 0);
    CHECK_EQ_INT(replay(&qx, DT_E4M3, "fc1 input layer 1"), 0);
    CHECK_EQ_INT(replay(&qd, DT_E5M2, "fc2 output gradient layer 1"), 0);
    /* the spike, as the seed describes it */
    CHECK(qw.amax[SPIKE] == 640.0f);
    CHECK(qw.next[SPIKE] == 448.0f / 640.0f);
    CHECK(fabsf(qw.next[SPIKE] - 0.70f) < 1e-6f);
    /* the window of step k covers steps k-15..k: the spike is in it through step SPIKE+15 */
    for (int k = SPIKE + 1; k <= SPIKE + HIST; k++) CHECK(qw.used[k] == 448.0f / 640.0f);
    CHECK(qw.next[SPIKE + HIST - 1] == 448.0f / 640.0f);
    CHECK(qw.next[SPIKE + HIST] > 100.0f); /* gone from the window: back to fmax / (a weight's amax) */
    printf("  qkv.w: scale %.1f before the spike, %.4f after; zero FP8 codes %d -> %d of %llu\n",
           (double)qw.used[SPIKE], (double)qw.used[SPIKE + 1], zeros_before, zeros_after, (unsigned long long)w->numel);
    CHECK(zeros_after > zeros_before + (int)(w->numel / 50)); /* small weights flush at scale 0.7 */
    data_free(&d);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

/* Current scaling: every cast's scale is fmax over that step's own amax. */
static void test_current_scaling(void)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8-current");
    ModelHyper h = model_hyper_default();
    Model *g = NULL;
    CHECK(!fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e));
    if (!g) return;
    CHECK(!model_trace_enable(g, &e));
    DataStream d;
    CHECK(!data_synthetic(&d, s.vocab, 2, &e));
    int32_t in[64], tgt[64];
    int bad = 0;
    for (int k = 0; k < 5; k++) {
        data_next(&d, g->batch, g->seq, in, tgt);
        float loss;
        CHECK(!model_step(g, in, tgt, &loss, &e));
        for (uint32_t i = 0; i < g->sc.fwd.n; i++)
            bad += g->tr_fwd.scale_used[i] != 448.0f / g->tr_fwd.amax[i] || !(g->tr_fwd.amax[i] > 0.0f);
        for (uint32_t i = 0; i < g->sc.bwd.n; i++)
            bad += g->tr_bwd.scale_used[i] != 57344.0f / g->tr_bwd.amax[i] || !(g->tr_bwd.amax[i] > 0.0f);
    }
    CHECK_EQ_INT(bad, 0);
    data_free(&d);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

/* The scaling banks model_create sets up, by recipe, on fx_gpt (L = 2, four linears a layer): an FP8
 * recipe's forward bank holds X and W of every linear, 2 x 4 x 2 = 16 tensors, its backward bank dY,
 * 4 x 2 = 8, E4M3 forward and E5M2 backward, amax reduced by max with margin 0; the history is the recipe's
 * window under delayed scaling (te-fp8: 16 here, fp8lm: 1) and 1 under current scaling. A BF16 recipe has
 * no FP8 tensor: both banks are empty. */
static void test_banks_by_recipe(void)
{
    static const struct {
        const char *recipe;
        uint32_t nf, nb, hist;
    } want[] = {{"megatron-bf16", 0, 0, 0}, {"te-fp8", 16, 8, 16}, {"te-fp8-current", 16, 8, 1}, {"fp8lm", 16, 8, 1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        Backend *bk;
        Comm *comm;
        Err e;
        CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
        ModelSpec s = fx_gpt();
        Recipe r = fx_recipe(want[i].recipe);
        Model *g = NULL;
        CHECKF(!fx_model(&s, &r, 4, 1, NULL, bk, comm, &g, &e), "%s: %s", want[i].recipe, e.msg);
        if (g) {
            const ScalingBank *f = &g->sc.fwd, *b = &g->sc.bwd;
            CHECKF(f->n == want[i].nf && b->n == want[i].nb, "%s: banks of %u and %u tensors, want %u and %u",
                   want[i].recipe, f->n, b->n, want[i].nf, want[i].nb);
            if (want[i].nf) {
                CHECK_EQ_INT(f->history_len, want[i].hist);
                CHECK_EQ_INT(b->history_len, want[i].hist);
                CHECK(f->algo == AMAX_ALGO_MAX && b->algo == AMAX_ALGO_MAX);
                CHECK_EQ_INT(f->margin, 0);
                CHECK_EQ_INT(b->margin, 0);
                CHECK(f->fmt == DT_E4M3 && b->fmt == DT_E5M2);
            }
        }
        model_destroy(g);
        comm->destroy(comm);
        bk->destroy(bk);
    }
}

int main(void)
{
    RUN(test_delayed_scaling_spike);
    RUN(test_current_scaling);
    RUN(test_banks_by_recipe);
    return test_summary();
}
