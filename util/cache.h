/* util/cache.h — pushing a buffer out of the CPU's caches to memory, as a step's other traffic leaves a gradient by
 * the time it is reduced (fp8plan calibrate's gradient sweep, exec/measure/calibrate_link.c). */
#ifndef FP8PLAN_UTIL_CACHE_H
#define FP8PLAN_UTIL_CACHE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write back and invalidate every cache line of [p, p + bytes) (x86-64: clflush; AArch64: dc civac), then a fence,
 * so the next access reads memory. Returns 1, or 0 on a CPU where this build cannot (nothing done). */
int cache_flush(const void *p, uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
