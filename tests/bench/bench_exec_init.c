/* tests/bench/bench_exec_init.c — how fast a model's initial weights are
 * written (exec/model/model_init.c), in ns per parameter: the GPU check creates eight
 * GPT-13B layers (2.8 billion parameters incl. the embedding) per recipe, so
 * this decides whether that fits its time budget.
 *
 *   bench_exec_init [LAYERS] [HIDDEN]     default 2 layers of hidden 1536
 *
 * The model has GPT-2's vocabulary (50,257, padded to 50,304) and seq 1024, on
 * the CPU reference backend, whose copy_to_device is a memcpy (a GPU adds the
 * host-to-device copy). Timed: model_init_weights alone (the arena is already
 * allocated and zeroed), best of three, for a BF16 recipe (FP32 master + BF16
 * weights) and FP8-LM (scaled FP16 master, one more pass for its amax).
 * Targets are stated, not asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_time.h"
#include "exec/model/model.h"
#include "support/exec_fixtures.h"

static int bench(Backend *bk, const char *recipe, uint32_t layers, uint32_t hidden)
{
    ModelSpec s = fx_gpt(); /* GPT-2 style; vocabulary padded to a multiple of 64: 50,304 */
    s.layers = layers, s.hidden = hidden, s.heads = s.kv_heads = hidden / 64, s.head_dim = 64;
    s.ffn_hidden = 4 * hidden, s.seq_len = 1024, s.vocab = 50257;
    Recipe r = fx_recipe(recipe);
    ModelHyper h = model_hyper_default();
    Comm *comm = NULL;
    Model *g = NULL;
    Err e;
    if (comm_single_create(&comm, &e) || fx_model(&s, &r, 1, 1, &h, bk, comm, &g, &e)) {
        printf("  %s: %s\n", recipe, e.msg);
        if (comm) comm->destroy(comm);
        return 1;
    }
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        if (model_init_weights(g, &e)) {
            printf("  %s: %s\n", recipe, e.msg);
            break;
        }
        double t = bench_now() - t0;
        if (t < best) best = t;
    }
    uint64_t n = model_weight_count(g);
    printf("  %-14s %u layers, hidden %5u: %11llu params  %8.3f s  %7.2f ns/param\n", recipe, layers, hidden,
           (unsigned long long)n, best, 1e9 * best / (double)n);
    model_destroy(g);
    comm->destroy(comm);
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t layers = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2;
    uint32_t hidden = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1536;
    if (!layers || hidden < 64 || hidden % 64) {
        fprintf(stderr, "usage: bench_exec_init [LAYERS] [HIDDEN (a multiple of 64)]\n");
        return 64;
    }
    Backend *bk;
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    printf("weight initialization (model_init_weights on the CPU backend, %ld online CPUs; target: 8 GPT-13B\n"
           "layers, 2.8e9 params, in a few seconds per recipe, i.e. about 1 ns/param on the GPU machine)\n",
           sysconf(_SC_NPROCESSORS_ONLN));
    int rc = bench(bk, "megatron-bf16", layers, hidden);
    rc |= bench(bk, "fp8lm", layers, hidden);
    bk->destroy(bk);
    return rc;
}
