/* tests/unit/test_run_comms.c — which communicator a run's plan counts on the device
 * (exec/run/run_ranks.c, run_device_comms -> PlanInput.comms_min).
 *
 * A started NCCL communicator holds its buffers on the GPU even for one rank: the first H200
 * run measured 578.0 MiB of them beside a plan that counted none at one GPU (the small model's
 * device memory came out 76 % over the plan). Its name is "nccl X.Y.Z" plus notes
 * (exec/cuda/comm_nccl.cu); an NCCL that did not start is "nccl-local (...)" and copies in
 * place, MPI's ranks keep their buffers in host memory, and the single-rank communicator has
 * none. */
#include <string.h>

#include "exec/comm/comm.h"
#include "exec/run/run.h"
#include "test.h"

static void test_device_comms_by_name(void)
{
    Comm c;
    memset(&c, 0, sizeof c);
    const struct {
        const char *name;
        uint32_t want;
    } k[] = {{"nccl 2.28.3", 1},
             {"nccl 2.28.3 (ranks bootstrapped through MPI)", 1},
             {"nccl 2.19.3 (FP8 travels as BF16)", 1},
             {"nccl-local (one rank; NCCL did not start: no GPU)", 0},
             {"mpi", 0},
             {"single", 0},
             {"nccl", 0},
             {"", 0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        c.name = k[i].name;
        CHECKF(run_device_comms(&c) == k[i].want, "'%s': %u, expected %u", k[i].name, run_device_comms(&c), k[i].want);
    }
    c.name = NULL;
    CHECK_EQ_INT(run_device_comms(&c), 0);
    CHECK_EQ_INT(run_device_comms(NULL), 0);
}

int main(void)
{
    RUN(test_device_comms_by_name);
    return test_summary();
}
