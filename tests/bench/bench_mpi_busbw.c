/* tests/bench/bench_mpi_busbw.c — the MPI all-reduce's bus bandwidth on this
 * machine, per size, beside a host profile's figure: measured with
 * `mpirun -np 2` (the program starts itself under mpirun when it was not), the
 * executor's communicator (exec/comm/comm_mpi.c) and calibrate's sweep
 * (exec/measure/calibrate_link.c: 64 B to 64 MiB FP32, the median of 9 calls
 * per size, 36 of 64 B, 16 MiB and 64 MiB, the slowest rank's transfer after
 * every rank arrived), bus bandwidth = S x 2(n-1)/n / t (nccl-tests). The
 * profile: the host row of the
 * calibrated catalog in $FP8PLAN_CALIBRATED (fp8plan calibrate -o DIR under
 * mpirun -np 2; row $FP8PLAN_HOST, default host) when set, else the link this
 * sweep itself gives (calibrate's rule, cal_fit_link: latency from the
 * smallest size, at most any size's time; bandwidth from the two largest);
 * its predicted bus bandwidth per size is
 * bus bytes / (2(n-1) x latency + bus bytes / bandwidth). The machine is
 * shared: the load average is printed, spreads are (max - min) / median. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_time.h"

#include "exec/backend/backend.h"
#include "exec/comm/comm_mpi.h"
#include "exec/measure/calibrate_link.h"
#include "catalog/catalog.h"
#include "util/fileio.h"

enum { REPS = 9 };

/* The host row of the calibrated catalog named by the environment; 0 when there is one. */
static int profile_row(GpuSpec *out)
{
    const char *dir = getenv("FP8PLAN_CALIBRATED"), *name = getenv("FP8PLAN_HOST");
    if (!dir || !*dir) return -1;
    char path[4200], *buf;
    size_t len;
    Err e;
    snprintf(path, sizeof path, "%s/gpus.csv", dir);
    Catalog *c = calloc(1, sizeof *c);
    if (!c || file_read_all(path, &buf, &len, &e)) {
        fprintf(stderr, "bench_mpi_busbw: %s\n", c ? e.msg : "out of memory");
        free(c);
        return -1;
    }
    int rc = -1;
    if (catalog_parse_gpus(c, buf, len, path, &e)) {
        fprintf(stderr, "bench_mpi_busbw: %s\n", e.msg);
    } else {
        const GpuSpec *g = catalog_gpu(c, name && *name ? name : "host");
        if (g && g->host && g->link_lat > 0) *out = *g, rc = 0;
        if (rc) fprintf(stderr, "bench_mpi_busbw: %s has no host row with a measured link\n", path);
    }
    free(buf);
    free(c);
    return rc;
}

static int under_mpirun(const char *self)
{
    if (system("command -v mpirun >/dev/null 2>&1")) {
        printf("MPI bus bandwidth: skipped (no mpirun: install openmpi-bin)\n");
        return 0;
    }
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "timeout 120 mpirun --oversubscribe -np 2 '%s'", self);
    int rc = system(cmd);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!comm_mpi_launched()) return under_mpirun(argv[0]);
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e;
    Calibration *c = calloc(1, sizeof *c);
    if (!c || backend_cpu_create(&bk, &e) || comm_create("mpi", bk, &comm, &e)) {
        fprintf(stderr, "bench_mpi_busbw: %s\n", c ? e.msg : "out of memory");
        return 1;
    }
    if (!comm->rank) {
        printf("MPI all-reduce bus bandwidth, %d ranks (the executor's communicator, FP32; median of %d, of %d at 64 B "
               "and the two largest)\n",
               comm->size, REPS, cal_link_reps(0, 2, REPS));
        bench_load("before");
    }
    int rc = 0;
    if (calibrate_link(bk, comm, (uint64_t)64 << 20, REPS, c, &e)) {
        fprintf(stderr, "bench_mpi_busbw: %s\n", e.msg);
        rc = 1;
    } else if (!comm->rank) {
        GpuSpec g;
        double lat = c->link_lat, bw = c->link_bw;
        const char *whose = "this sweep's own (no $FP8PLAN_CALIBRATED)";
        if (!profile_row(&g)) lat = g.link_lat, bw = g.intra_bw, whose = "the calibrated catalog's host row";
        printf("profile: %s: latency %.3f us per ring step, bus bandwidth %.3f GB/s\n", whose, lat * 1e6, bw * 1e-9);
        printf("%10s %10s %12s %8s %14s %8s\n", "bytes", "us", "busbw GB/s", "spread", "profile GB/s", "ratio");
        double steps = 2.0 * (c->ranks - 1), f = steps / c->ranks;
        for (int i = 0; i < c->ncoll; i++) {
            const CalColl *k = &c->coll[i];
            double bus = (double)k->payload * f, pb = bus / (steps * lat + bus / bw);
            printf("%10llu %10.1f %12.3f %7.0f%% %14.3f %7.0f%%\n", (unsigned long long)k->payload, k->seconds * 1e6,
                   k->busbw * 1e-9, 100.0 * k->spread, pb * 1e-9, 100.0 * k->busbw / pb);
        }
        bench_load("after");
    }
    comm->destroy(comm);
    bk->destroy(bk);
    free(c);
    return rc;
}
