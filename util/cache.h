/* util/cache.h — pushing a buffer out of the CPU's caches to memory, as a step's other traffic leaves a gradient by
 * the time it is reduced (fp8plan calibrate's gradient sweep, exec/measure/calibrate_link.c); and the last-level
 * cache's size, which says how much of that traffic the cache holds (planner/plan_cache.c). */
#ifndef FP8PLAN_UTIL_CACHE_H
#define FP8PLAN_UTIL_CACHE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write back and invalidate every cache line of [p, p + bytes) (x86-64: clflush; AArch64: dc civac), then a fence,
 * so the next access reads memory. Returns 1, or 0 on a CPU where this build cannot (nothing done). */
int cache_flush(const void *p, uint64_t bytes);

/* The bytes of the last-level cache CPU 0 sees: of the highest-level data or unified cache Linux lists under
 * cpu_dir (sysfs: /sys/devices/system/cpu/cpu0/cache, one indexN directory per cache with files level, type and
 * size, the size as "32768K", "1024K" or "2M"). 0 when none can be read (no such directory, another OS). */
uint64_t cache_llc_bytes_at(const char *cpu_dir);

/* cache_llc_bytes_at of this machine's sysfs (calibrate's llc_bytes column). */
uint64_t cache_llc_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
