/* fp8/dtype.c — element type names and sizes. */
#include "fp8/dtype.h"

#include <strings.h>

static const struct {
    const char *name;
    unsigned bytes;
} dtypes[] = {
    [DT_NONE] = {"none", 0}, [DT_FP32] = {"fp32", 4}, [DT_FP16] = {"fp16", 2}, [DT_BF16] = {"bf16", 2},
    [DT_E4M3] = {"e4m3", 1}, [DT_E5M2] = {"e5m2", 1}, [DT_E8M0] = {"e8m0", 1},
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == DT_COUNT_, "dtypes must name every Dtype");

unsigned dtype_bytes(Dtype t) { return (unsigned)t < DT_COUNT_ ? dtypes[t].bytes : 0; }

const char *dtype_name(Dtype t) { return (unsigned)t < DT_COUNT_ ? dtypes[t].name : "?"; }

int dtype_parse(const char *s, Dtype *out)
{
    for (int i = 0; i < DT_COUNT_; i++)
        if (!strcasecmp(s, dtypes[i].name)) {
            *out = (Dtype)i;
            return 0;
        }
    return -1;
}

int dtype_is_fp8(Dtype t) { return t == DT_E4M3 || t == DT_E5M2; }
