/* tests/bench/anchor_sgemm.c — the anchor of bench_exec_gemm: OpenBLAS's own
 * FP32 sgemm, its threaded build (Debian libopenblas-pthread-dev) with its own
 * threads, as numpy would call it. Linked on its own (nothing of fp8plan), so
 * the two OpenBLAS builds never meet in one process.
 *
 *   anchor_sgemm THREADS REPS M N K TA TB [M N K TA TB ...]
 *
 * For each shape: C (M, N) = op(A) · op(B) in row-major FP32, TA/TB 0 = as
 * stored (A (M, K), B (K, N)), 1 = transposed (A stored (K, M), B stored
 * (N, K)); one warm-up call, then REPS timed calls. Prints one line per shape:
 * "M N K median_ms median_cpu_ms" (wall clock, and this process's CPU time,
 * its threads' spinning included). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench_time.h"

int main(int argc, char **argv)
{
    if (argc < 8 || (argc - 3) % 5) {
        fprintf(stderr, "usage: anchor_sgemm THREADS REPS M N K TA TB [...]\n");
        return 64;
    }
    int threads = atoi(argv[1]), reps = atoi(argv[2]);
    if (threads < 1 || reps < 1 || reps > 1000) return 64;
    openblas_set_num_threads(threads);
    double *t = malloc(sizeof(double) * (size_t)reps), *ct = malloc(sizeof(double) * (size_t)reps);
    for (int s = 3; s < argc; s += 5) {
        long m = atol(argv[s]), n = atol(argv[s + 1]), k = atol(argv[s + 2]);
        int ta = atoi(argv[s + 3]), tb = atoi(argv[s + 4]);
        float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(n * k));
        float *c = malloc(sizeof(float) * (size_t)(m * n));
        if (!t || !ct || !a || !b || !c || m < 1 || n < 1 || k < 1) return 71;
        for (long i = 0; i < m * k; i++) a[i] = (float)(i % 13) * 0.125f - 0.75f;
        for (long i = 0; i < n * k; i++) b[i] = (float)(i % 11) * 0.125f - 0.625f;
        for (int r = -1; r < reps; r++) {
            double t0 = bench_now(), c0 = bench_cpu();
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                        (int)k, 1.0f, a, ta ? (int)m : (int)k, b, tb ? (int)k : (int)n, 0.0f, c, (int)n);
            if (r >= 0) t[r] = bench_now() - t0, ct[r] = bench_cpu() - c0;
        }
        qsort(t, (size_t)reps, sizeof *t, bench_cmp);
        qsort(ct, (size_t)reps, sizeof *ct, bench_cmp);
        printf("%ld %ld %ld %.6f %.6f\n", m, n, k, 1e3 * t[reps / 2], 1e3 * ct[reps / 2]);
        free(a), free(b), free(c);
    }
    free(t), free(ct);
    return 0;
}
