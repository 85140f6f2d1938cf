/* tests/unit/test_par_no_threads.c — the thread pool (exec/backend/par.c) when the
 * system will not start a single worker thread (pthread_create fails with
 * EAGAIN, as at a process's thread limit): par_tasks still runs every task
 * exactly once, all on the calling thread as worker 0, and keeps doing so job
 * after job, without trying to start the workers again.
 *
 * This binary is linked with -Wl,--wrap=pthread_create (see the Makefile):
 * __wrap_pthread_create below refuses every thread and counts the attempts. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "exec/backend/par.h"
#include "test.h"

static atomic_int create_calls;

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    (void)t, (void)attr, (void)fn, (void)arg;
    atomic_fetch_add(&create_calls, 1);
    return EAGAIN;
}

typedef struct {
    atomic_int *seen;
    atomic_int not_zero; /* tasks handed a worker id other than 0 */
    pthread_t caller;
    atomic_int elsewhere; /* tasks run on a thread other than the caller's */
} NoThreadCheck;

static void note_task(void *ctx, uint64_t task, int worker)
{
    NoThreadCheck *c = ctx;
    atomic_fetch_add(&c->seen[task], 1);
    if (worker != 0) atomic_fetch_add(&c->not_zero, 1);
    if (!pthread_equal(pthread_self(), c->caller)) atomic_fetch_add(&c->elsewhere, 1);
}

/* FP8PLAN_THREADS=4 asks for 3 workers; the first refusal stops the starting (the pool never
 * asks again: one attempt in all, however many jobs follow). Jobs of 2, 7 and 1,000 tasks, three
 * times over: each task once, on worker 0, on this thread. */
static void test_every_task_runs_on_the_caller(void)
{
    CHECK_EQ_INT(par_threads(), 4);
    static const uint64_t ns[] = {2, 7, 1000};
    for (int rep = 0; rep < 3; rep++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            atomic_int *seen = calloc(ns[k] + 1, sizeof *seen);
            CHECK(seen != NULL);
            if (!seen) return;
            NoThreadCheck c = {.seen = seen, .caller = pthread_self()};
            par_tasks(ns[k], note_task, &c);
            int wrong = 0;
            for (uint64_t i = 0; i < ns[k]; i++) wrong += seen[i] != 1;
            CHECKF(!wrong && !seen[ns[k]], "n=%llu: %d tasks not run exactly once", (unsigned long long)ns[k], wrong);
            CHECK_EQ_INT(c.not_zero, 0);
            CHECK_EQ_INT(c.elsewhere, 0);
            free(seen);
        }
    CHECK_EQ_INT(create_calls, 1);
}

int main(void)
{
    if (setenv("FP8PLAN_THREADS", "4", 1)) return 1;
    RUN(test_every_task_runs_on_the_caller);
    return test_summary();
}
