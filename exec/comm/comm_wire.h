/* exec/comm/comm_wire.h — the dtype a collective's buffer travels in, decided from
 * the NCCL library the process loaded (pure; the NCCL communicator asks it per
 * call, tests/unit/test_exec_gpuready.c checks it on the CPU).
 *
 * NCCL has FP8 types (ncclFloat8e4m3, ncclFloat8e5m2) from 2.24.0 on; its FP8
 * reductions add pairs in half precision on compute capability 9.0 and newer
 * only. An FP8 buffer travels as FP8 where the loaded library (ncclGetVersion,
 * which may be older than the headers: PyTorch's nvidia-nccl wheel, a
 * system libnccl2), the headers the binary was built with and, for a
 * reduction, the GPU all have them. Otherwise it is cast to BF16 for the
 * collective and back — exact on the way there (every E4M3 and E5M2 value is a
 * BF16 value: 8 exponent bits ≥ 5, 7 mantissa bits ≥ 3), one RNE rounding with
 * saturation on the way back for a reduction — and the bytes that travel, and
 * that the stats count, are BF16's. Other dtypes travel as they are. */
#ifndef FP8PLAN_EXEC_COMM_COMM_WIRE_H
#define FP8PLAN_EXEC_COMM_COMM_WIRE_H

#include "fp8/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL_VERSION_CODE of a release (NCCL ≥ 2.9: major·10000 + minor·100 + patch). */
int comm_nccl_code(int major, int minor, int patch);

/* The first release with FP8 types: 2.24.0. */
enum { COMM_NCCL_FP8_CODE = 22400 };

/* The wire dtype of a collective on dt: reduces = 1 for all-reduce and
 * reduce-scatter, 0 for all-gather; nccl_loaded and nccl_built are version
 * codes (0 = unknown, treated as too old); cc_major is the GPU's compute
 * capability major. */
Dtype comm_wire_dtype(Dtype dt, int reduces, int nccl_loaded, int nccl_built, int cc_major);

#ifdef __cplusplus
}
#endif
#endif
