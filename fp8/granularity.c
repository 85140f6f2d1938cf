/* fp8/granularity.c — scale counts per granularity (see granularity.h). */
#include "fp8/granularity.h"

#include <string.h>
#include <strings.h>

#include "util/num.h"

static const struct {
    const char *name;
    Dtype scale;
    uint64_t brows, bcols; /* block extent; 0 = whole dimension */
} grans[] = {
    [GRAN_TENSOR] = {"tensor", DT_FP32, 0, 0},       [GRAN_CHANNEL] = {"channel", DT_FP32, 1, 0},
    [GRAN_1X32] = {"1x32", DT_E8M0, 1, 32},          [GRAN_1X128] = {"1x128", DT_FP32, 1, 128},
    [GRAN_128X128] = {"128x128", DT_FP32, 128, 128},
};
_Static_assert(sizeof grans / sizeof grans[0] == GRAN_COUNT_, "grans must describe every Granularity");

const char *gran_name(Granularity g) { return (unsigned)g < GRAN_COUNT_ ? grans[g].name : "?"; }

int gran_parse(const char *s, Granularity *out)
{
    for (int i = 0; i < GRAN_COUNT_; i++)
        if (!strcasecmp(s, grans[i].name)) {
            *out = (Granularity)i;
            return 0;
        }
    if (!strcasecmp(s, "per-tensor")) return *out = GRAN_TENSOR, 0;
    if (!strcasecmp(s, "per-channel")) return *out = GRAN_CHANNEL, 0;
    if (!strcasecmp(s, "mx")) return *out = GRAN_1X32, 0;
    return -1;
}

Dtype gran_scale_dtype(Granularity g) { return (unsigned)g < GRAN_COUNT_ ? grans[g].scale : DT_NONE; }

void gran_block(Granularity g, uint64_t *block_rows, uint64_t *block_cols)
{
    *block_rows = (unsigned)g < GRAN_COUNT_ ? grans[g].brows : 0;
    *block_cols = (unsigned)g < GRAN_COUNT_ ? grans[g].bcols : 0;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

Status gran_scale_count(Granularity g, uint64_t rows, uint64_t cols, uint64_t *n_scales, uint64_t *scale_bytes, Err *e)
{
    if ((unsigned)g >= GRAN_COUNT_) return err_set(e, ST_SOFTWARE, "unknown granularity %d", (int)g);
    if (!rows || !cols)
        return err_set(e, ST_USAGE, "tensor shape %llux%llu has a zero dimension", (unsigned long long)rows,
                       (unsigned long long)cols);
    uint64_t br = grans[g].brows, bc = grans[g].bcols;
    uint64_t nr = br ? ceil_div(rows, br) : 1, nc = bc ? ceil_div(cols, bc) : 1, n, bytes;
    if (u64_mul(nr, nc, &n) || u64_mul(n, dtype_bytes(grans[g].scale), &bytes))
        return err_set(e, ST_OVERFLOW, "scale count for %llux%llu passes 2^64", (unsigned long long)rows,
                       (unsigned long long)cols);
    *n_scales = n;
    *scale_bytes = bytes;
    return ST_OK;
}
