/* tests/unit/test_fp8_cast_cli.c — `fp8plan cast` end to end against NVIDIA's
 * conversion: random inputs across the whole float (and double) range, both
 * FP8 formats, both saturation modes, and E8M0 with both roundings, written as
 * text, run through the real binary ($FP8PLAN, set by tests/run.sh), and every
 * output code compared with cuda_fp8.h. Floats are printed with %.9g and
 * doubles with %.17g, which read back exactly. */
#include <stdlib.h>
#include <unistd.h>

#include "support/nv_oracle.h"
#include "test.h"

enum { N = 40000 };

static const char *bin;
static char dir[512];
static uint64_t rng = 0x853C49E6748FEA9Bu;

static uint64_t next64(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* Random bit patterns, plus the values that matter: ties, edges, specials. */
static float pick_f32(int i)
{
    static const float special[] = {0.0f,    -0.0f,    1.0f / 0.0f, -1.0f / 0.0f, 464.0f,
                                    480.0f,  61440.0f, 57344.0f,    0x1p-10f,     0x1p-17f,
                                    1.0625f, 1.1875f,  0x1.4p-8f,   3e38f,        1e-45f};
    if (i < (int)(sizeof special / sizeof special[0])) return special[i];
    uint32_t b = (uint32_t)next64();
    if (i % 3 == 0) b = (b & 0x80000000u) | (0x38000000u + (b & 0x0FFFFFFFu)); /* FP8-relevant magnitudes */
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Runs `fp8plan cast ARGS < in` and returns the number of codes that differ from want[]. */
/* kind: 0 E4M3, 1 E5M2, 2 E8M0 (NaN codes: S.1111.111; S.11111.{01,10,11}; 0xFF) */
static int nan_code(int kind, unsigned code)
{
    return kind == 0 ? (code & 0x7F) == 0x7F : kind == 1 ? (code & 0x7F) > 0x7C : code == 0xFF;
}

static long run_and_compare(const char *args, const char *in_text_path, const uint8_t *want, int n, int kind)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s cast %s < %s", bin, args, in_text_path);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[256];
    long bad = 0;
    int i = -1;
    while (fgets(line, sizeof line, p)) {
        if (i < 0) { /* header */
            i = 0;
            continue;
        }
        char *c = strstr(line, ",0x");
        unsigned code = 0;
        if (!c || sscanf(c + 1, "0x%2X", &code) != 1 || i >= n) {
            bad++;
            continue;
        }
        int ok = nan_code(kind, want[i]) ? nan_code(kind, code) : code == want[i];
        if (!ok && bad++ < 5)
            CHECKF(0, "cast %s line %d: %s -> 0x%02X, NVIDIA 0x%02X", args, i + 2, line, code, want[i]);
        i++;
    }
    int rc = pclose(p);
    CHECKF(rc == 0, "`%s` exited with status %d", cmd, rc);
    CHECKF(i == n, "`%s` printed %d rows for %d inputs", cmd, i, n);
    return bad;
}

static void test_cast_matches_nvidia(void)
{
    static float xf[N];
    static double xd[N];
    static uint8_t want[N];
    char pf[600], pd[600];
    snprintf(pf, sizeof pf, "%s/f32.txt", dir);
    snprintf(pd, sizeof pd, "%s/f64.txt", dir);
    FILE *ff = fopen(pf, "w"), *fd = fopen(pd, "w");
    CHECK(ff && fd);
    if (!ff || !fd) return;
    for (int i = 0; i < N; i++) {
        xf[i] = pick_f32(i);
        uint64_t b = next64();
        memcpy(&xd[i], &b, sizeof xd[i]);
        if (i % 2) xd[i] = (double)xf[i] * (1 + 0x1p-30); /* doubles just off float values: the double path */
        fprintf(ff, "%.9g\n", (double)xf[i]);
        fprintf(fd, "%.17g\n", xd[i]);
    }
    fclose(ff), fclose(fd);
    long bad = 0, runs = 0;
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            char args[96];
            for (int i = 0; i < N; i++) want[i] = nvo_f32_to_fp8(xf[i], f, s);
            snprintf(args, sizeof args, "--format %s%s", f ? "e5m2" : "e4m3", s ? " --nosat" : "");
            bad += run_and_compare(args, pf, want, N, f), runs++;
            for (int i = 0; i < N; i++) want[i] = nvo_f64_to_fp8(xd[i], f, s);
            snprintf(args, sizeof args, "--format %s%s --from f64", f ? "e5m2" : "e4m3", s ? " --nosat" : "");
            bad += run_and_compare(args, pd, want, N, f), runs++;
        }
    if (nvo_e8m0_available())
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++) {
                char args[96];
                for (int i = 0; i < N; i++) want[i] = nvo_f32_to_e8m0(xf[i], r, s);
                snprintf(args, sizeof args, "--format e8m0 --round %s%s", r ? "ceil" : "floor", s ? " --nosat" : "");
                bad += run_and_compare(args, pf, want, N, 2), runs++;
            }
    printf("  %ld runs of fp8plan cast x %d inputs compared with cuda_fp8.h\n", runs, N);
    CHECK_EQ_INT(bad, 0);
    unlink(pf), unlink(pd);
}

int main(void)
{
    bin = getenv("FP8PLAN");
    if (!bin || access(bin, X_OK)) {
        SKIP(test_cast_matches_nvidia, "FP8PLAN does not name the fp8plan binary (run through make test)");
    } else if (!nvo_available()) {
        SKIP(test_cast_matches_nvidia, "cuda_fp8.h not found at build time");
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fp8plan-cast-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
        if (!mkdtemp(dir)) {
            printf("FAIL - cannot make a temporary directory\n");
            return 1;
        }
        RUN(test_cast_matches_nvidia);
        rmdir(dir);
    }
    return test_summary();
}
