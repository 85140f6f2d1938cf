/* exec/par.c — a parallel for over host threads (see par.h). */
#include "exec/par.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/num.h"

int par_threads(void)
{
    static int n;
    if (n) return n;
    const char *env = getenv("FP8PLAN_THREADS");
    int v;
    if (!env || num_parse_int_range(env, 1, PAR_MAX_THREADS, &v, NULL)) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        v = c < 1 ? 1 : c > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)c;
    }
    n = v;
    return n;
}

int par_pieces(uint64_t n, uint64_t grain)
{
    if (!grain) grain = 1;
    uint64_t by_size = n / grain;
    int t = par_threads();
    if (by_size < (uint64_t)t) t = by_size ? (int)by_size : 1;
    return t;
}

typedef struct {
    ParFn fn;
    void *ctx;
    int piece;
    uint64_t begin, end;
} ParJob;

static void *run_job(void *arg)
{
    ParJob *j = arg;
    j->fn(j->ctx, j->piece, j->begin, j->end);
    return NULL;
}

void par_for(uint64_t n, uint64_t grain, ParFn fn, void *ctx)
{
    int t = par_pieces(n, grain);
    ParJob job[PAR_MAX_THREADS];
    pthread_t tid[PAR_MAX_THREADS];
    int started[PAR_MAX_THREADS] = {0};
    for (int i = 0; i < t; i++) /* equal pieces, the remainder spread over the first ones */
        job[i] = (ParJob){
            fn, ctx, i, n / (uint64_t)t * (uint64_t)i + ((uint64_t)i < n % (uint64_t)t ? (uint64_t)i : n % (uint64_t)t),
            0};
    for (int i = 0; i < t; i++) job[i].end = i + 1 < t ? job[i + 1].begin : n;
    for (int i = 1; i < t; i++) started[i] = pthread_create(&tid[i], NULL, run_job, &job[i]) == 0;
    run_job(&job[0]);
    for (int i = 1; i < t; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_job(&job[i]);
    }
}
