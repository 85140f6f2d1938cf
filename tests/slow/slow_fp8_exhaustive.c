/* tests/slow/slow_fp8_exhaustive.c — `make test-slow`: every one of the 2^32
 * float bit patterns through every codec.
 *   E4M3, E5M2 x SATFINITE, NOSAT       vs NVIDIA cuda_fp8.h (NaN compared as "is NaN")
 *   E8M0 x RZ, RP x SATFINITE, NOSAT    vs NVIDIA cuda_fp8.h
 *   BF16                                vs the nearer of the two neighbouring BF16 values (exact in double)
 *   FP16                                vs the compiler's _Float16 conversion, where it has one
 * About 18 CPU-minutes, spread over all cores; prints the counts and ends with the
 * harness's "N passed, M failed". */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fp8/codec.h"
#include "fp8/half.h"
#include "support/nv_oracle.h"
#include "test.h"

enum { K_FP8, K_E8M0, K_BF16, K_FP16, NK };

typedef struct {
    uint64_t lo, hi; /* [lo, hi) of the 2^32 patterns */
    uint64_t bad[NK], n[NK];
    uint32_t first_bad[NK];
} Slice;

static int fp8_same(Dtype f, uint8_t a, uint8_t b) { return fp8_is_nan(f, a) ? fp8_is_nan(f, b) : a == b; }

/* BF16 reference: choose between truncation and the next BF16 up by exact distance, ties to even. */
static uint16_t bf16_ref(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    uint16_t lo = (uint16_t)(b >> 16), hi = (uint16_t)(lo + 1);
    if ((b & 0xFFFFu) == 0) return lo;
    /* past BF16's max the upper neighbour is Inf, which RNE treats as 2^128 */
    double vh = (hi & 0x7FFFu) == 0x7F80u ? copysign(0x1p128, (double)x) : bf16_decode(hi);
    double dl = fabs((double)x - bf16_decode(lo)), dh = fabs((double)x - vh);
    return dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
}

static void *work(void *arg)
{
    Slice *s = arg;
    for (uint64_t p = s->lo; p < s->hi; p++) {
        uint32_t bits = (uint32_t)p;
        float x;
        memcpy(&x, &bits, sizeof x);
        if (nvo_available())
            for (int f = 0; f < 2; f++)
                for (int m = 0; m < 2; m++) {
                    Dtype fmt = f ? DT_E5M2 : DT_E4M3;
                    s->n[K_FP8]++;
                    if (!fp8_same(fmt, fp8_encode_f32(fmt, x, (Fp8Sat)m), nvo_f32_to_fp8(x, f, m)) && !s->bad[K_FP8]++)
                        s->first_bad[K_FP8] = bits;
                }
        if (nvo_e8m0_available())
            for (int r = 0; r < 2; r++)
                for (int m = 0; m < 2; m++) {
                    s->n[K_E8M0]++;
                    if (e8m0_encode_f32(x, (E8m0Round)r, (Fp8Sat)m) != nvo_f32_to_e8m0(x, r, m) && !s->bad[K_E8M0]++)
                        s->first_bad[K_E8M0] = bits;
                }
        s->n[K_BF16]++;
        if (bf16_encode(x) != bf16_ref(x) && !s->bad[K_BF16]++) s->first_bad[K_BF16] = bits;
#ifdef __FLT16_MAX__
        _Float16 h = (_Float16)x;
        uint16_t want;
        memcpy(&want, &h, sizeof want);
        uint16_t got = fp16_encode(x);
        s->n[K_FP16]++;
        if ((x == x ? got != want : got != HALF_NAN_CODE) && !s->bad[K_FP16]++) s->first_bad[K_FP16] = bits;
#endif
    }
    return NULL;
}

static Slice total;

static void test_exhaustive(void)
{
    long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
    if (nthreads < 1) nthreads = 1;
    if (nthreads > 64) nthreads = 64;
    Slice s[64];
    pthread_t th[64];
    uint64_t all = UINT64_C(1) << 32, step = all / (uint64_t)nthreads;
    for (long i = 0; i < nthreads; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].lo = (uint64_t)i * step;
        s[i].hi = i == nthreads - 1 ? all : (uint64_t)(i + 1) * step;
        CHECK(pthread_create(&th[i], NULL, work, &s[i]) == 0);
    }
    memset(&total, 0, sizeof total);
    for (long i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        for (int k = 0; k < NK; k++) {
            if (s[i].bad[k] && !total.bad[k]) total.first_bad[k] = s[i].first_bad[k];
            total.bad[k] += s[i].bad[k], total.n[k] += s[i].n[k];
        }
    }
    static const char *const names[NK] = {"E4M3/E5M2 x SAT/NOSAT vs cuda_fp8.h",
                                          "E8M0 x RZ/RP x SAT/NOSAT vs cuda_fp8.h", "BF16 vs nearest neighbour",
                                          "FP16 vs _Float16"};
    for (int k = 0; k < NK; k++) {
        if (!total.n[k]) {
            printf("  %-40s not run here (no oracle)\n", names[k]);
            continue;
        }
        printf("  %-40s %llu conversions, %llu mismatches", names[k], (unsigned long long)total.n[k],
               (unsigned long long)total.bad[k]);
        if (total.bad[k]) printf(" (first at bits 0x%08X)", total.first_bad[k]);
        printf("\n");
        CHECK(total.bad[k] == 0);
    }
    CHECK(total.n[K_BF16] == (UINT64_C(1) << 32));
}

int main(void)
{
    if (!nvo_available()) printf("  note: cuda_fp8.h not found at build time; FP8/E8M0 sweeps are skipped\n");
    RUN(test_exhaustive);
    return test_summary();
}
