/* exec/backend/par.c — the persistent pool of host threads (see par.h).
 *
 * One job at a time. The dispatching thread publishes (fn, ctx, ntasks),
 * opens the job (a new job number with the open bit set in `state`) and wakes
 * the workers; everyone who joins, the dispatcher included, takes task numbers
 * from one atomic counter until they run out. The dispatcher then closes the
 * job and waits only for the workers that joined it: on a busy machine a
 * worker that wakes late finds the job closed and goes back to sleep without
 * touching it, so no call ever waits for a thread the scheduler has not run.
 * Joining is "count myself in, then check the job is still open"; closing is
 * "mark it closed, then read the count" (sequentially consistent atomics), so
 * either the dispatcher sees the worker or the worker sees the closed job.
 * Between jobs a worker spins briefly (a training step issues kernels back to
 * back), then sleeps on a condition variable. */
#include "exec/backend/par.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/num.h"

/* Busy-wait rounds before sleeping (a round is one pause instruction, tens of
 * cycles): long enough to bridge the gap between consecutive kernels, short
 * enough not to burn a core that other processes could use. */
enum { SPIN_ROUNDS = 4000 };

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    sched_yield();
#endif
}

static struct {
    pthread_mutex_t run; /* held by the dispatching thread for a whole job */
    pthread_mutex_t mu;  /* guards the sleeps on wake and done */
    pthread_cond_t wake, done;
    int workers; /* started, besides the dispatcher */
    int tried;   /* workers have been started (or failed to) */
    ParTaskFn fn;
    void *ctx;
    uint64_t ntasks;
    atomic_uint_fast64_t state; /* job number << 1 | open */
    atomic_uint_fast64_t next;  /* next task to hand out */
    atomic_int active;          /* workers inside the current job */
} P = {.run = PTHREAD_MUTEX_INITIALIZER,
       .mu = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER};

static _Thread_local int tl_worker = -1; /* this thread's worker id while it runs tasks */

static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)c;
}

int par_cpu_flags(float *flag, int n)
{
    cpu_set_t set;
    int ok = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0, count = 0, first = online_cpus();
    for (int i = 0; i < n; i++) {
        flag[i] = (ok ? CPU_ISSET(i, &set) : i < first) ? 1.0f : 0.0f;
        count += flag[i] > 0;
    }
    return count;
}

int par_threads(void)
{
    static int n;
    if (n) return n;
    const char *env = getenv("FP8PLAN_THREADS");
    int v;
    if (!env || num_parse_int_range(env, 1, PAR_MAX_THREADS, &v, NULL)) {
        v = online_cpus();
        if (v > PAR_MAX_THREADS) v = PAR_MAX_THREADS;
    }
    n = v;
    return n;
}

static void run_tasks(int worker)
{
    uint64_t t;
    while ((t = atomic_fetch_add_explicit(&P.next, 1, memory_order_relaxed)) < P.ntasks) P.fn(P.ctx, t, worker);
}

/* Leave the job; the last one out of a closed job wakes the dispatcher. */
static void leave(void)
{
    if (atomic_fetch_sub(&P.active, 1) == 1 && !(atomic_load(&P.state) & 1)) {
        pthread_mutex_lock(&P.mu);
        pthread_cond_signal(&P.done);
        pthread_mutex_unlock(&P.mu);
    }
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seen = 0; /* the last job number this worker has looked at */
    tl_worker = id;
    for (;;) {
        uint64_t st;
        for (int i = 0; ((st = atomic_load(&P.state)) >> 1) == seen && i < SPIN_ROUNDS; i++) cpu_relax();
        if ((st >> 1) == seen) {
            pthread_mutex_lock(&P.mu);
            while (((st = atomic_load(&P.state)) >> 1) == seen) pthread_cond_wait(&P.wake, &P.mu);
            pthread_mutex_unlock(&P.mu);
        }
        seen = st >> 1;
        if (!(st & 1)) continue; /* already closed */
        atomic_fetch_add(&P.active, 1);
        if (atomic_load(&P.state) == st) run_tasks(id); /* still open: the job cannot end under us */
        leave();
    }
    return NULL;
}

/* A forked child has only the thread that forked: start afresh there. */
static void after_fork_child(void)
{
    pthread_mutex_init(&P.run, NULL);
    pthread_mutex_init(&P.mu, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done, NULL);
    P.workers = 0;
    P.tried = 0;
    atomic_store(&P.active, 0);
    tl_worker = -1;
}

/* Called with P.run held. Workers that cannot be started are simply absent:
 * the dispatcher runs whatever they would have. */
static void start_workers(void)
{
    P.tried = 1;
    pthread_atfork(NULL, NULL, after_fork_child);
    pthread_attr_t attr;
    if (pthread_attr_init(&attr)) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 1; i < par_threads(); i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)i)) break;
        P.workers++;
    }
    pthread_attr_destroy(&attr);
}

void par_tasks(uint64_t ntasks, ParTaskFn fn, void *ctx)
{
    if (!ntasks) return;
    int self = tl_worker >= 0 ? tl_worker : 0;
    /* inline: a single task, one thread, a call from inside a task, or another
     * thread's job in progress */
    if (ntasks == 1 || par_threads() == 1 || tl_worker >= 0 || pthread_mutex_trylock(&P.run)) {
        for (uint64_t t = 0; t < ntasks; t++) fn(ctx, t, self);
        return;
    }
    if (!P.tried) start_workers();
    if (!P.workers) {
        pthread_mutex_unlock(&P.run);
        for (uint64_t t = 0; t < ntasks; t++) fn(ctx, t, 0);
        return;
    }
    P.fn = fn;
    P.ctx = ctx;
    P.ntasks = ntasks;
    atomic_store(&P.next, 0);
    uint64_t job = (atomic_load(&P.state) >> 1) + 1;
    pthread_mutex_lock(&P.mu);
    atomic_store(&P.state, job << 1 | 1);
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);

    tl_worker = 0;
    run_tasks(0);
    tl_worker = -1;
    atomic_store(&P.state, job << 1); /* closed: no one joins any more */
    for (int i = 0; atomic_load(&P.active) && i < SPIN_ROUNDS; i++) cpu_relax();
    if (atomic_load(&P.active)) {
        pthread_mutex_lock(&P.mu);
        while (atomic_load(&P.active)) pthread_cond_wait(&P.done, &P.mu);
        pthread_mutex_unlock(&P.mu);
    }
    pthread_mutex_unlock(&P.run);
}

typedef struct {
    ParRangeFn fn;
    void *ctx;
    uint64_t n, chunk;
} ChunkJob;

static void chunk_task(void *ctx, uint64_t task, int worker)
{
    const ChunkJob *j = ctx;
    uint64_t b = task * j->chunk, e = j->n - b < j->chunk ? j->n : b + j->chunk;
    j->fn(j->ctx, b, e, worker);
}

void par_chunks(uint64_t n, uint64_t chunk, ParRangeFn fn, void *ctx)
{
    if (!chunk) chunk = 1;
    if (n <= chunk) {
        fn(ctx, 0, n, tl_worker >= 0 ? tl_worker : 0);
        return;
    }
    ChunkJob j = {fn, ctx, n, chunk};
    par_tasks((n - 1) / chunk + 1, chunk_task, &j);
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
    uint64_t n;
    int pieces;
} PieceJob;

/* Equal pieces, the remainder spread over the first ones. */
static uint64_t piece_begin(uint64_t n, int pieces, uint64_t i)
{
    uint64_t t = (uint64_t)pieces, r = n % t;
    return n / t * i + (i < r ? i : r);
}

static void piece_task(void *ctx, uint64_t task, int worker)
{
    (void)worker;
    const PieceJob *j = ctx;
    j->fn(j->ctx, (int)task, piece_begin(j->n, j->pieces, task), piece_begin(j->n, j->pieces, task + 1));
}

void par_for(uint64_t n, uint64_t grain, ParFn fn, void *ctx)
{
    PieceJob j = {fn, ctx, n, par_pieces(n, grain)};
    par_tasks((uint64_t)j.pieces, piece_task, &j);
}
