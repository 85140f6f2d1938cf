/* tests/unit/test_oracle_exec_step.c — what one training step hands the optimizer
 * (exec/model/model_step.c), watched at the backend's adamw: the learning rate of the linear warm-up
 * (lr · t / warmup for steps t <= warmup, lr after it), the 1-based step of the bias correction, the
 * betas and eps as given, weight decay on the matrices only, every parameter once per step, all of them
 * in one adamw_multi call (the multi-tensor optimizer) and none through adamw one by one.
 *
 * tests/support's tiny GPT (2 layers, C 32, FFN 128, T 16, V 64; tied embeddings, learned positions,
 * biases), megatron-bf16, one micro-batch of one sequence: 28 tensors (wte, wpe, per layer LN1 w+b, QKV
 * w+b, proj w+b, LN2 w+b, FC1 w+b, FC2 w+b = 12, final LN w+b) holding 28,032 parameters
 * (test_oracle_exec.c works the count); decayed: wte, wpe and the 4 linear weights of each layer = 10
 * tensors, 2,048 + 512 + 2 x (3,072 + 1,024 + 4,096 + 4,096 = 12,288) = 27,136 parameters.
 *
 * lr 0.25: warm-up 2 gives steps 1..4 0.25 x 1/2 = 0.125, 0.25, 0.25, 0.25; warm-up 4 gives 0.0625,
 * 0.125, 0.1875, 0.25; no warm-up 0.25 throughout. A run resumed at step 8 with warm-up 10 takes
 * t = 9: 0.25 x 9/10 = 0.225, then t = 10: 0.25, t = 11: 0.25. */
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

typedef struct {
    uint32_t calls, single_calls, multi_calls, decayed, steps_wrong, hyper_wrong;
    uint64_t elems, decayed_elems;
    float lr_min, lr_max;
    uint32_t step;
} Seen;

static Status (*real_adamw)(Backend *bk, const AdamWDesc *d, Err *e);
static Status (*real_adamw_multi)(Backend *bk, const AdamWMultiDesc *d, Err *e);
static Seen seen;
static AdamHyper want; /* betas, eps, weight decay to see */

/* One tensor's update as the optimizer hands it over. */
static void see(const AdamWDesc *d)
{
    if (!seen.calls) seen.lr_min = seen.lr_max = d->h.lr, seen.step = d->h.step;
    seen.calls++;
    seen.elems += d->n;
    if (d->h.lr < seen.lr_min) seen.lr_min = d->h.lr;
    if (d->h.lr > seen.lr_max) seen.lr_max = d->h.lr;
    seen.steps_wrong += d->h.step != seen.step;
    if (d->h.weight_decay != 0.0f) {
        seen.decayed++;
        seen.decayed_elems += d->n;
        seen.hyper_wrong += d->h.weight_decay != want.weight_decay;
    }
    seen.hyper_wrong +=
        d->h.beta1 != want.beta1 || d->h.beta2 != want.beta2 || d->h.eps != want.eps || d->h.grad_scale != 1.0f;
}

static Status spy_adamw(Backend *bk, const AdamWDesc *d, Err *e)
{
    seen.single_calls++;
    see(d);
    return real_adamw(bk, d, e);
}

static Status spy_adamw_multi(Backend *bk, const AdamWMultiDesc *d, Err *e)
{
    seen.multi_calls++;
    for (uint32_t i = 0; i < d->count; i++) see(&d->list[i]);
    return real_adamw_multi(bk, d, e);
}

/* Steps from `from` (the model's step count before the first), warm-up `warmup`; lr[i] expected at step i. */
static void run(uint32_t warmup, uint32_t from, int steps, const float *lr)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    ModelHyper h = {.lr = 0.25f,
                    .beta1 = 0.5f,
                    .beta2 = 0.75f,
                    .eps = 0x1p-10f,
                    .weight_decay = 0.125f,
                    .warmup = warmup,
                    .init_std = 0.02f,
                    .seed = 7};
    want = (AdamHyper){.beta1 = 0.5f, .beta2 = 0.75f, .eps = 0x1p-10f, .weight_decay = 0.125f};
    Model *m = NULL;
    CHECKF(bk && comm && !fx_model(&s, &r, 1, 1, &h, bk, comm, &m, &e), "%s", e.msg);
    if (m) {
        real_adamw = bk->adamw, real_adamw_multi = bk->adamw_multi;
        bk->adamw = spy_adamw, bk->adamw_multi = spy_adamw_multi;
        m->step = from;
        int32_t in[16], tgt[16];
        for (int i = 0; i < 16; i++) in[i] = (i * 5) % 64, tgt[i] = (i * 5 + 1) % 64;
        for (int k = 0; k < steps; k++) {
            memset(&seen, 0, sizeof seen);
            float loss = 0;
            CHECKF(model_step(m, in, tgt, &loss, &e) == ST_OK, "%s", e.msg);
            uint32_t t = from + (uint32_t)k + 1;
            CHECKF(seen.lr_min == lr[k] && seen.lr_max == lr[k], "warm-up %u, step %u: lr %.9g .. %.9g, expected %.9g",
                   warmup, t, (double)seen.lr_min, (double)seen.lr_max, (double)lr[k]);
            CHECKF(seen.step == t && seen.steps_wrong == 0, "step %u: the optimizer saw step %u", t, seen.step);
            CHECK_EQ_INT(seen.hyper_wrong, 0);
            CHECK_EQ_INT(seen.calls, 28);
            CHECK_EQ_INT(seen.multi_calls, 1);
            CHECK_EQ_INT(seen.single_calls, 0);
            CHECK_EQ_U64(seen.elems, 28032);
            CHECK_EQ_INT(seen.decayed, 10);
            CHECK_EQ_U64(seen.decayed_elems, 27136);
            CHECK_EQ_INT(m->step, t);
        }
        bk->adamw = real_adamw, bk->adamw_multi = real_adamw_multi;
        model_destroy(m);
    }
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

static void test_warmup_2(void)
{
    const float lr[4] = {0.125f, 0.25f, 0.25f, 0.25f};
    run(2, 0, 4, lr);
}

static void test_warmup_4(void)
{
    const float lr[5] = {0.0625f, 0.125f, 0.1875f, 0.25f, 0.25f};
    run(4, 0, 5, lr);
}

static void test_no_warmup(void)
{
    const float lr[3] = {0.25f, 0.25f, 0.25f};
    run(0, 0, 3, lr);
}

static void test_warmup_resumed(void)
{
    const float lr[3] = {0.225f, 0.25f, 0.25f}; /* 0.25 x 9 / 10 rounds to the float nearest 0.225 */
    run(10, 8, 3, lr);
}

int main(void)
{
    RUN(test_warmup_2);
    RUN(test_warmup_4);
    RUN(test_no_warmup);
    RUN(test_warmup_resumed);
    return test_summary();
}
