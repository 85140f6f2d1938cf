/* tests/bench/bench_exec_gemm.c — the CPU reference backend's speed on the
 * GEMMs and the training step of the CPU demo run (fp8plan run --layers 2
 * --hidden 128 --heads 4 --seq 64 on gpt2-124m's vocabulary). Prints figures;
 * targets are stated, not asserted: the CPU backend is the numerics oracle,
 * its speed only decides how long the CI demo takes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/backend.h"
#include "exec/rng.h"
#include "fp8/half.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(Backend *bk, const char *what, uint64_t m, uint64_t n, uint64_t k, Dtype dt, GemmLayout la,
                  GemmLayout lb)
{
    uint64_t ea = m * k, eb = n * k;
    void *a = calloc(ea, 4), *b = calloc(eb, 4);
    float *d = calloc(m * n, 4), one = 1.0f;
    Rng r = {.s = 1};
    for (uint64_t i = 0; i < ea; i++) {
        if (dt == DT_BF16)
            ((uint16_t *)a)[i] = bf16_encode((float)rng_normal(&r));
        else
            ((uint8_t *)a)[i] = (uint8_t)rng_below(&r, 0x7E);
    }
    for (uint64_t i = 0; i < eb; i++) {
        if (dt == DT_BF16)
            ((uint16_t *)b)[i] = bf16_encode((float)rng_normal(&r));
        else
            ((uint8_t *)b)[i] = (uint8_t)rng_below(&r, 0x7E);
    }
    int fp8 = dt != DT_BF16;
    GemmDesc g = {.m = m, .n = n, .k = k};
    g.a = (GemmOperand){.ptr = a, .dtype = dt, .layout = la, .scale_inv = fp8 ? &one : NULL};
    g.b = (GemmOperand){.ptr = b, .dtype = dt, .layout = lb, .scale_inv = fp8 ? &one : NULL};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    Err e;
    int reps = 0;
    double t0 = now(), t = 0.0;
    do {
        if (bk->gemm(bk, &g, &e)) {
            printf("%s: %s\n", what, e.msg);
            break;
        }
        reps++;
    } while ((t = now() - t0) < 1.0);
    printf("  %-34s m=%-6llu n=%-6llu k=%-6llu %8.2f ms  %6.2f GFLOP/s\n", what, (unsigned long long)m,
           (unsigned long long)n, (unsigned long long)k, 1e3 * t / reps, 2.0 * m * n * k * reps / t / 1e9);
    free(a), free(b), free(d);
}

int main(void)
{
    Backend *bk;
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    printf("CPU reference GEMM (FP32 accumulation, %ld online CPUs; FP8PLAN_THREADS sets the workers)\n",
           sysconf(_SC_NPROCESSORS_ONLN));
    bench(bk, "LM head fwd (BF16, TN)", 64, 50304, 128, DT_BF16, GEMM_K_INNER, GEMM_K_INNER);
    bench(bk, "LM head dgrad (BF16, NN)", 64, 128, 50304, DT_BF16, GEMM_K_INNER, GEMM_K_OUTER);
    bench(bk, "LM head wgrad (BF16, NT)", 50304, 128, 64, DT_BF16, GEMM_K_OUTER, GEMM_K_OUTER);
    bench(bk, "FC1 fprop (E4M3, TN)", 64, 512, 128, DT_E4M3, GEMM_K_INNER, GEMM_K_INNER);
    bench(bk, "square 512 (E4M3, TN)", 512, 512, 512, DT_E4M3, GEMM_K_INNER, GEMM_K_INNER);
    bk->destroy(bk);
    return 0;
}
