/* tests/bench/bench_planner.c — planner speed on one core: full plans (memory,
 * communication, time) per second, and a full sweep of gpt-175b on 1,024 GPUs.
 * Targets (issues 3 and 9): >= 1,000,000 plans/s per core; the sweep, over every
 * stack of models/stacks.csv and uneven pipeline stages, under one second.
 * Prints the machine it ran on; run from the repository root (make bench).
 *
 * bench_planner --plans N [--no-sweep]: exactly N plans of the same mix instead of one second's worth (N = 0:
 * none), for an instruction count that the machine's load does not move (valgrind --tool=callgrind; per plan:
 * the count at N less the count at 0, over N). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "catalog/catalog.h"
#include "planner/sweep.h"
#include "util/fileio.h"

/* CPU time of this thread: the rate of one core even when the machine is shared
 * (time spent descheduled does not count). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void machine(void)
{
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) snprintf(model, sizeof model, "%s", c + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
    struct utsname u;
    uname(&u);
    printf("machine: %s; %s %s %s; compiler %s; one thread, rates per second of its CPU time\n", model, u.sysname,
           u.release, u.machine, __VERSION__);
}

static Catalog *load(void)
{
    Catalog *c = calloc(1, sizeof *c);
    const char *files[] = {"models/models.csv", "models/gpus.csv", "models/recipes.csv", "models/stacks.csv"};
    Status (*parse[])(Catalog *, const char *, size_t, const char *,
                      Err *) = {catalog_parse_models, catalog_parse_gpus, catalog_parse_recipes, catalog_parse_stacks};
    for (int i = 0; i < 4; i++) {
        char *buf;
        size_t len;
        Err e;
        if (file_read_all(files[i], &buf, &len, &e) || parse[i](c, buf, len, files[i], &e)) {
            fprintf(stderr, "bench_planner: %s\n", e.msg);
            exit(1);
        }
        free(buf);
    }
    return c;
}

int main(int argc, char **argv)
{
    long fixed = -1; /* --plans N: that many plans, untimed */
    int sweep = 1;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--plans") && i + 1 < argc && (fixed = strtol(argv[i + 1], &end, 10)) >= 0 && !*end)
            i++;
        else if (!strcmp(argv[i], "--no-sweep"))
            sweep = 0;
        else {
            fprintf(stderr, "usage: bench_planner [--plans N] [--no-sweep]\n");
            return 64;
        }
    }
    machine();
    Catalog *c = load();
    const GpuSpec *h100 = catalog_gpu(c, "h100-sxm");

    /* a mix of real plans: three models, all Hopper-capable recipes, several layouts */
    enum { NIN = 256 };
    static PlanInput ins[NIN];
    int n = 0;
    const char *models[] = {"gpt-175b", "llama3-70b", "gpt-7b"};
    const uint32_t tps[] = {8, 4, 8, 2}, pps[] = {4, 8, 1, 2}, dps[] = {4, 4, 16, 8};
    for (int mi = 0; mi < 3; mi++)
        for (int r = 0; r < c->nrecipes; r++)
            for (int l = 0; l < 4 && n < NIN; l++) {
                PlanInput in;
                plan_input_defaults(&in);
                plan_input_use_stack(&in, &c->stacks[(r + l) % c->nstacks]);
                in.model = catalog_model(c, models[mi]), in.gpu = h100, in.recipe = &c->recipes[r];
                in.tp = tps[l], in.pp = pps[l], in.dp = dps[l], in.mbs = 1 + (uint32_t)(l & 1);
                in.sharding = l & 1 ? SHARD_DIST_OPT : SHARD_NONE;
                in.recompute = (Recompute)(l % 3);
                Plan p;
                PlanReject why;
                if (plan_build_fast(&in, &p, &why) == ST_OK) ins[n++] = in;
            }
    static Plan p;
    uint64_t iters = 0, sink = 0;
    if (fixed >= 0) {
        for (long k = 0; k < fixed; k++) {
            PlanReject why;
            if (plan_build_fast(&ins[k % n], &p, &why) != ST_OK) {
                fprintf(stderr, "bench_planner: a valid plan failed\n");
                return 1;
            }
            sink += p.total_bytes;
        }
        printf("plans: %ld of the %d inputs, untimed (--plans)\n", fixed, n);
        if (!sweep) return sink == 42;
    }
    double t0, t1;
    if (fixed < 0) {
        t0 = now();
        do {
            for (int k = 0; k < 1024; k++) {
                PlanReject why;
                if (plan_build_fast(&ins[(iters + (uint64_t)k) % (uint64_t)n], &p, &why) != ST_OK) {
                    fprintf(stderr, "bench_planner: a valid plan failed\n");
                    return 1;
                }
                sink += p.total_bytes;
            }
            iters += 1024;
            t1 = now();
        } while (t1 - t0 < 1.0);
        double rate = (double)iters / (t1 - t0);
        printf("plans: %d distinct inputs (3 models x %d recipes x 4 layouts, stacks in turn), %llu full plans in "
               "%.3f s = %.0f plans/s (%.2f us per plan; target >= 1,000,000: %s)\n",
               n, c->nrecipes, (unsigned long long)iters, t1 - t0, rate, 1e6 / rate, rate >= 1e6 ? "met" : "NOT met");
    }

    if (!sweep) return sink == 42;
    /* the full sweep */
    const Recipe *recs[CATALOG_MAX_ROWS];
    for (int r = 0; r < c->nrecipes; r++) recs[r] = &c->recipes[r];
    const StackSpec *stacks[CATALOG_MAX_STACKS];
    for (int k = 0; k < c->nstacks; k++) stacks[k] = &c->stacks[k];
    SweepSpec s = {.recipes = recs, .nrecipes = c->nrecipes, .stacks = stacks, .nstacks = c->nstacks, .gpus = 1024};
    plan_input_defaults(&s.base);
    s.base.model = catalog_model(c, "gpt-175b"), s.base.gpu = h100;
    static Plan top[20];
    int ntop;
    SweepStats st;
    Err e;
    t0 = now();
    if (sweep_run(&s, top, 20, &ntop, &st, NULL, NULL, &e)) {
        fprintf(stderr, "bench_planner: %s\n", e.msg);
        return 1;
    }
    t1 = now();
    printf("sweep: gpt-175b on 1,024 h100-sxm, %d recipes x %d stacks: %llu rows (%llu built, %llu fit) in %.3f s = "
           "%.0f rows/s, %.0f built plans/s (target < 1 s: %s)\n",
           c->nrecipes, c->nstacks, (unsigned long long)st.evaluated, (unsigned long long)st.valid,
           (unsigned long long)(st.valid - st.oom), t1 - t0, (double)st.evaluated / (t1 - t0),
           (double)st.valid / (t1 - t0), t1 - t0 < 1.0 ? "met" : "NOT met");
    if (sink == 42) printf("\n"); /* keep the plans observable */
    free(c);
    return 0;
}
