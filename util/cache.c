/* util/cache.c — see cache.h. Lines of 64 B (x86-64's, and AArch64's smallest data cache line on the cores this
 * project runs on): a line flushed twice costs a little, a line missed would stay cached. */
#include "util/cache.h"

#include <stdio.h>
#include <string.h>

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

/* One line of file dir/indexI/name into buf (its newline dropped); 0 when it cannot be read. */
static int read_line(const char *dir, int i, const char *name, char *buf, size_t size)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/index%d/%s", dir, i, name) >= (int)sizeof path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = 0;
    return ok;
}

/* "32768K", "2M", "1G" or a plain byte count: the bytes; 0 when it is not one of those. */
static uint64_t size_bytes(const char *s)
{
    unsigned long long v = 0;
    char unit = 0, rest = 0;
    int n = sscanf(s, "%llu%c%c", &v, &unit, &rest);
    if (n == 1) return v;
    if (n != 2) return 0;
    switch (unit) {
    case 'K': return (uint64_t)v << 10;
    case 'M': return (uint64_t)v << 20;
    case 'G': return (uint64_t)v << 30;
    default: return 0;
    }
}

uint64_t cache_llc_bytes_at(const char *cpu_dir)
{
    uint64_t best = 0;
    int best_level = 0;
    for (int i = 0; cpu_dir && i < 16; i++) { /* index0 .. : a gap ends nothing (read what is there) */
        char level[32], type[32], size[32];
        if (!read_line(cpu_dir, i, "level", level, sizeof level) || !read_line(cpu_dir, i, "type", type, sizeof type) ||
            !read_line(cpu_dir, i, "size", size, sizeof size))
            continue;
        int lv = 0;
        if (sscanf(level, "%d", &lv) != 1 || !strcmp(type, "Instruction")) continue;
        uint64_t b = size_bytes(size);
        if (b && lv > best_level) best = b, best_level = lv;
    }
    return best;
}

uint64_t cache_llc_bytes(void) { return cache_llc_bytes_at("/sys/devices/system/cpu/cpu0/cache"); }
