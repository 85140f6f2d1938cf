/* util/cache.c — see cache.h. Lines of 64 B (x86-64's, and AArch64's smallest data cache line on the cores this
 * project runs on): a line flushed twice costs a little, a line missed would stay cached. */
#include "util/cache.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

enum { LINE = 64 };

int cache_flush(const void *p, uint64_t bytes)
{
    if (!p || !bytes) return 1;
    const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)(LINE - 1)), *end = (const char *)p + bytes;
#if defined(__x86_64__)
    for (; c < end; c += LINE) _mm_clflush(c);
    _mm_mfence();
    return 1;
#elif defined(__aarch64__)
    for (; c < end; c += LINE) __asm__ volatile("dc civac, %0" ::"r"(c) : "memory");
    __asm__ volatile("dsb ish" ::: "memory");
    return 1;
#else
    (void)c, (void)end;
    return 0;
#endif
}
