/* tests/unit/test_exec_groups.c — the rank grid (exec/model/model_groups.c): a rank's TP rank, DP rank
 * and pipeline stage from its world rank, Megatron's order (TP fastest, stages slowest), written out by
 * hand for tp 2 x dp 2 x pp 2 = 8 ranks:
 *   rank      0 1 2 3 4 5 6 7
 *   tp_rank   0 1 0 1 0 1 0 1
 *   dp_rank   0 0 1 1 0 0 1 1
 *   stage     0 0 0 0 1 1 1 1
 * so rank r's TP group is {r, r ^ 1}, its DP group {r, r ^ 2} (tp = 2 apart, the plan's DP stride) and
 * its next stage r + 4 (tp x dp apart, the plan's PP stride world / pp). */
#include <string.h>

#include "exec/model/model_internal.h"
#include "test.h"

static void test_coords_tp2_dp2_pp2(void)
{
    const uint32_t tp_rank[8] = {0, 1, 0, 1, 0, 1, 0, 1}, dp_rank[8] = {0, 0, 1, 1, 0, 0, 1, 1},
                   stage[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    Plan p;
    memset(&p, 0, sizeof p);
    p.in.pp = 2;
    for (int r = 0; r < 8; r++) {
        Comm c;
        Model m;
        memset(&c, 0, sizeof c);
        memset(&m, 0, sizeof m);
        c.rank = r, c.size = 8;
        m.comm = &c, m.tp = 2, m.dp = 2, m.pp = 2;
        model_groups_coords(&p, &m);
        CHECKF(m.tp_rank == tp_rank[r] && m.dp_rank == dp_rank[r] && m.stage == stage[r],
               "rank %d: tp %u dp %u stage %u", r, m.tp_rank, m.dp_rank, m.stage);
    }
}

/* tp 1 x dp 2 x pp 3 (6 ranks): dp_rank = r mod 2, stage = r / 2; no communicator: the plan's stage. */
static void test_coords_dp2_pp3(void)
{
    const uint32_t dp_rank[6] = {0, 1, 0, 1, 0, 1}, stage[6] = {0, 0, 1, 1, 2, 2};
    Plan p;
    memset(&p, 0, sizeof p);
    p.in.pp = 3, p.stage = 2;
    for (int r = 0; r < 6; r++) {
        Comm c;
        Model m;
        memset(&c, 0, sizeof c);
        memset(&m, 0, sizeof m);
        c.rank = r, c.size = 6;
        m.comm = &c, m.tp = 1, m.dp = 2, m.pp = 3;
        model_groups_coords(&p, &m);
        CHECKF(m.tp_rank == 0 && m.dp_rank == dp_rank[r] && m.stage == stage[r], "rank %d: tp %u dp %u stage %u", r,
               m.tp_rank, m.dp_rank, m.stage);
    }
    Model m;
    memset(&m, 0, sizeof m);
    m.tp = 1, m.dp = 2, m.pp = 3;
    model_groups_coords(&p, &m);
    CHECK(m.tp_rank == 0 && m.dp_rank == 0 && m.stage == 2);
}

int main(void)
{
    RUN(test_coords_tp2_dp2_pp2);
    RUN(test_coords_dp2_pp3);
    return test_summary();
}
