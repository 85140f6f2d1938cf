/* cli/cmd_calibrate_tables.c — the tables `fp8plan calibrate` prints of what it measured (cli/cmd_calibrate.h),
 * apart from cmd_calibrate.c's options, judging and writing. */
#include <stdio.h>
#include <string.h>

#include "cli/cmd_calibrate.h"

void cal_print_tables(const Calibration *c)
{
    static const char *const paths[CAL_PATHS] = {"fp8", "bf16", "fp32"};
    printf("GEMM (median of %d samples, each the median of `calls` calls in a row; GFLOP/s = 2mnk / time)\n", c->reps);
    printf("  %-11s %-4s %6s %6s %6s %10s %9s %7s %5s\n", "gemm", "path", "m", "n", "k", "ms", "GFLOP/s", "spread",
           "calls");
    for (int i = 0; i < c->ngemm; i++) {
        const CalGemm *g = &c->gemm[i];
        double fl = 2.0 * (double)g->m * (double)g->n * (double)g->k;
        printf("  %-11s %-4s %6llu %6llu %6llu %10.3f %9.2f %6.0f%% %5d\n", g->what, paths[g->path],
               (unsigned long long)g->m, (unsigned long long)g->n, (unsigned long long)g->k, g->seconds * 1e3,
               fl / g->seconds * 1e-9, 100.0 * g->spread, g->calls);
    }
    for (int p = 0; p < CAL_PATHS; p++)
        printf("  path %-4s %.2f GFLOP/s (the shapes' FLOPs over their summed medians)\n", paths[p], c->rate[p] * 1e-9);
    for (int i = 0; i < c->nxgemm; i++) { /* a model with experts: its grouped GEMMs, m n k per group's rows */
        const CalGemm *g = &c->xgemm[i];
        printf("  %-17s %u groups, %6llu %6llu %6llu %10.3f ms %6.0f%%\n", g->what, c->xgroups,
               (unsigned long long)g->m, (unsigned long long)g->n, (unsigned long long)g->k, g->seconds * 1e3,
               100.0 * g->spread);
    }
    if (c->nxgemm)
        printf("  grouped GEMM %.2f us per group beyond its FLOPs at the bf16 path's rate (group_gemm_us)\n",
               c->group_s * 1e6);
    printf("memory-bound kernels (median of %d samples in rounds of every kernel, each the median of `calls` calls)\n",
           c->reps);
    for (int i = 0; i < c->nkern; i++)
        printf("  %-19s %12.0f bytes %9.3f ms %7.2f GB/s %6.0f%% %5d calls\n", c->kern[i].what, c->kern[i].bytes,
               c->kern[i].seconds * 1e3, c->kern[i].bytes / c->kern[i].seconds * 1e-9, 100.0 * c->kern[i].spread,
               c->kern[i].calls);
    printf("  stream (AdamW) %.2f GB/s; element-wise %.2f GB/s (weighted by calls per micro-batch); FP8-LM's scaled\n"
           "  optimizer %.2f GB/s (17 B per parameter as the plan counts it); launch floor %.2f us (spread %.0f%%)\n",
           c->mem_bw * 1e-9, c->elem_bw * 1e-9, c->scaled_optim_bw * 1e-9, c->launch_s * 1e6, 100.0 * c->launch_spread);
    const int gpu = strcmp(c->backend, "cpu") != 0;
    if (c->ranks < 2) {
        printf("collectives: not measured (one rank%s; run under mpirun -np 2 or more): no interconnect\n",
               gpu ? ": one GPU has no bus to measure" : "");
        return;
    }
    printf("%s all-reduce over %d ranks (FP32, median of %d (the smallest and the two largest: %d), the slowest\n"
           "  rank's, each call after the caches were evicted%s; busbw = S x 2(n-1)/n / t)\n",
           gpu ? "NCCL" : "MPI", c->ranks, c->reps, cal_link_reps(0, c->ncoll, c->reps),
           gpu ? "" : " and rank 0 arrived late");
    printf("  %10s %10s %10s %7s\n", "bytes", "us", "busbw GB/s", "spread");
    for (int i = 0; i < c->ncoll; i++)
        printf("  %10llu %10.1f %10.3f %6.0f%%\n", (unsigned long long)c->coll[i].payload, c->coll[i].seconds * 1e6,
               c->coll[i].busbw * 1e-9, 100.0 * c->coll[i].spread);
    printf("  link: latency %.3f us per ring step (the smallest size, at most any size's time), bus bandwidth %.3f\n"
           "  GB/s (the two largest; the largest is the model's gradient all-reduce, parameters x 4 B)\n",
           c->link_lat * 1e6, c->link_bw * 1e-9);
    if (!c->nsweep) return;
    printf("every collective op (median of %d, the slowest rank's, timed as a run counts it; us per call at each\n"
           "  payload in bytes)\n",
           c->reps);
    for (int k = 0; k < c->nsweep; k++) {
        const CalSweep *s = &c->sweep[k];
        if (s->per_msg)
            printf("  all-to-all per message to a peer (eager limit %llu B; each call after %llu KiB of other data;\n"
                   "    bytes a message:us a call)\n   ",
                   (unsigned long long)c->eager_limit, (unsigned long long)(c->msg_evict >> 10));
        else
            printf("  %-14s %-4s", comm_op_name(s->op), cal_sweep_label(s));
        for (int i = 0; i < s->n; i++)
            printf(" %llu:%.1f", (unsigned long long)s->pt[i].payload, s->pt[i].seconds * 1e6);
        printf("\n");
    }
    printf("fits (links.csv: t = steps x latency + S x bus factor / bus bandwidth per payload range; one range unless\n"
           "  a line misses a size by more than %.0f %%, then the range that misses most split where its worse half "
           "misses least, up to %d ranges)\n",
           100.0 * CAL_FIT_ERR_MAX, CAL_FIT_RANGES_MAX);
    printf("  (eager and rendezvous: per message to one peer, from / to a message's bytes, latency a message)\n");
    printf("  %-14s %-5s %10s %10s %12s %10s %9s\n", "op", "path", "from B", "to B", "latency us", "bus GB/s",
           "max err");
    for (int i = 0; i < c->nrange; i++) {
        const CalRange *r = &c->range[i];
        char to[24];
        if (r->fit.to)
            snprintf(to, sizeof to, "%llu", (unsigned long long)r->fit.to);
        else
            snprintf(to, sizeof to, "-");
        printf("  %-14s %-5s %10llu %10s %12.3f %10.3f %8.1f%%\n", comm_op_name((CommOp)r->fit.op),
               link_path_name((LinkPath)r->fit.path), (unsigned long long)r->fit.from, to, r->fit.lat * 1e6,
               r->fit.bw * 1e-9, 100.0 * r->max_err);
    }
}
