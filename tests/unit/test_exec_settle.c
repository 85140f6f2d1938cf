/* tests/unit/test_exec_settle.c — a communicator whose collective times arrive
 * late (NCCL: read from CUDA events when it is settled, not inside the call) is
 * settled after every step, before measure_step reads the seconds per
 * collective, so each step's times are its own. A CPU model with the
 * single-rank communicator whose settle stands in for NCCL's. */
#include <stdlib.h>
#include <string.h>

#include "exec/measure/measurement.h"
#include "support/exec_fixtures.h"
#include "test.h"

static int settles;

/* What NCCL's settle does with one call's events: 0.25 s onto a collective's row and the total. */
static Status late_times(Comm *c, Err *e)
{
    (void)e;
    settles++;
    c->stats[CO_DP_GRAD_AR].seconds += 0.25;
    c->total.seconds += 0.25;
    return ST_OK;
}

static void test_steps_settle_before_reading(void)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Model *m = NULL;
    Err e;
    static Measurement ms;
    memset(&ms, 0, sizeof ms);
    ModelSpec spec = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    if (backend_cpu_create(&bk, &e) || comm_single_create(&comm, &e) ||
        fx_model(&spec, &r, 1, 1, NULL, bk, comm, &m, &e) || measure_init(&ms, bk, 3, &e)) {
        CHECKF(0, "%s", e.msg);
        goto done;
    }
    comm->settle = late_times;
    settles = 0;
    uint64_t n = model_step_tokens(m);
    int32_t *in = malloc(n * sizeof *in), *tgt = malloc(n * sizeof *tgt);
    for (uint32_t k = 0; in && tgt && k < 3; k++) {
        float loss;
        fx_tokens(m, k + 1, in, tgt);
        CHECKF(measure_step(&ms, m, in, tgt, &loss, &e) == ST_OK, "%s", e.msg);
    }
    free(in), free(tgt);
    /* one settle per step; each step's row holds exactly the 0.25 s that arrived at its settle */
    CHECK_EQ_INT(settles, 3);
    CHECK_EQ_U64(ms.steps, 3);
    for (uint32_t i = 0; i < ms.steps; i++) CHECK_NEAR(ms.coll_s[(size_t)CO_DP_GRAD_AR * ms.cap + i], 0.25, 0.0);
    CHECK_NEAR(ms.coll_s[(size_t)CO_AMAX_AR * ms.cap], 0.0, 0.0);
done:
    measure_free(&ms);
    model_destroy(m);
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

int main(void)
{
    RUN(test_steps_settle_before_reading);
    return test_summary();
}
