/* exec/par.h — a parallel for over host threads, for the executor's host-side
 * bulk work (filling initial weights, converting them to the states' dtypes).
 *
 * The range [0, n) is cut into one contiguous piece per thread; the calling
 * thread runs the first piece itself. Callers write only their own piece, so a
 * result can never depend on how many threads ran: every element must be a
 * function of its index alone (or reductions must be order-free, like max). */
#ifndef FP8PLAN_EXEC_PAR_H
#define FP8PLAN_EXEC_PAR_H

#include <stdint.h>

enum { PAR_MAX_THREADS = 64 };

/* Threads par_for uses: $FP8PLAN_THREADS when it is a number in
 * [1, PAR_MAX_THREADS], else the online CPUs (at most PAR_MAX_THREADS). */
int par_threads(void);

/* fn(ctx, piece, begin, end) for pieces of [0, n); piece numbers are
 * 0 .. par_pieces(n, grain) − 1. Ranges shorter than `grain` elements are not
 * split further (thread start-up costs ~10 µs). A thread that cannot be
 * started has its piece run by the caller; par_for never fails. */
typedef void (*ParFn)(void *ctx, int piece, uint64_t begin, uint64_t end);
void par_for(uint64_t n, uint64_t grain, ParFn fn, void *ctx);

/* How many pieces par_for(n, grain, ...) makes (≥ 1, ≤ par_threads()), for
 * per-piece partial results. */
int par_pieces(uint64_t n, uint64_t grain);

#endif
