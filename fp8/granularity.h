/* fp8/granularity.h — how many scales a quantized tensor carries, and their bytes.
 *
 * A row-major tensor of R rows and C columns (for a weight: R output channels,
 * C input channels = the GEMM's K) is quantized with one scale per:
 *   GRAN_TENSOR    the whole tensor                      1 FP32
 *   GRAN_CHANNEL   output row                            R FP32
 *   GRAN_1X32      32 consecutive values along a row     R*ceil(C/32) E8M0 (MXFP8)
 *   GRAN_1X128     128 consecutive values along a row    R*ceil(C/128) FP32 (DeepSeek-V3 activations)
 *   GRAN_128X128   128x128 tile                          ceil(R/128)*ceil(C/128) FP32 (DeepSeek-V3 weights)
 * A partial block at an edge still needs its own scale, hence the ceilings.
 * These are the storage counts of the seed's Table 1b; GEMM-ready padding or
 * swizzling of scale arrays is not included. */
#ifndef FP8PLAN_FP8_GRANULARITY_H
#define FP8PLAN_FP8_GRANULARITY_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GRAN_TENSOR = 0, GRAN_CHANNEL, GRAN_1X32, GRAN_1X128, GRAN_128X128, GRAN_COUNT_ } Granularity;

/* "tensor", "channel", "1x32", "1x128", "128x128". */
const char *gran_name(Granularity g);
/* Parse gran_name's spelling (also "per-tensor", "per-channel", "mx"); 0 ok, -1 unknown. */
int gran_parse(const char *s, Granularity *out);

/* The dtype each granularity stores its scales in (FP32, or E8M0 for 1x32). */
Dtype gran_scale_dtype(Granularity g);

/* Block extent along rows and along columns (tensor/channel: the whole extent, reported as 0). */
void gran_block(Granularity g, uint64_t *block_rows, uint64_t *block_cols);

/* Number of scales and their bytes for an R x C tensor. ST_OVERFLOW past 2^64. */
Status gran_scale_count(Granularity g, uint64_t rows, uint64_t cols, uint64_t *n_scales, uint64_t *scale_bytes, Err *e);

#ifdef __cplusplus
}
#endif
#endif
