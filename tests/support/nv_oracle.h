/* tests/support/nv_oracle.h — NVIDIA's host FP8/E8M0 conversions as the codec's
 * bit-exact oracle.
 *
 * nv_oracle.c includes cuda_fp8.h from $(CUDA_HOME)/include (never copied into
 * this repository) and wraps its C entry points. cuda_fp8.h compiles as plain
 * C11 with no GPU and no library: its host path is integer emulation of the
 * conversions that sm_89+ performs with `cvt.rn[.satfinite]`.
 *
 * When the header is absent at build time every nvo_*_available() returns 0 and
 * the wrappers return 0; tests then print "skip" instead of passing or failing.
 * The E8M0 functions arrived in CUDA 12.8, so they have their own probe.
 * Defining FP8PLAN_NO_NV_ORACLE forces the stubs (to exercise the skip path).
 *
 * BF16/FP16 conversions in cuda_bf16.h / cuda_fp16.h are C++ only (their
 * functions are declared under __cplusplus), so they are not wrapped here; the
 * 16-bit codecs are checked against an independent reference instead. */
#ifndef FP8PLAN_TESTS_NV_ORACLE_H
#define FP8PLAN_TESTS_NV_ORACLE_H

#include <stdint.h>

/* 1 when cuda_fp8.h was found at build time. */
int nvo_available(void);
/* 1 when it also has the E8M0 conversions (CUDA >= 12.8). */
int nvo_e8m0_available(void);
/* The CUDA runtime version the header came with (e.g. 13000), or 0. */
int nvo_cuda_version(void);

/* e5m2: 0 = E4M3, 1 = E5M2. nosat: 0 = __NV_SATFINITE, 1 = __NV_NOSAT. */
uint8_t nvo_f32_to_fp8(float x, int e5m2, int nosat);
uint8_t nvo_f64_to_fp8(double x, int e5m2, int nosat);
/* FP8 -> FP16 (exact) through __nv_cvt_fp8_to_halfraw, returned as raw bits. */
uint16_t nvo_fp8_to_halfraw(uint8_t code, int e5m2);

/* round_up: 0 = cudaRoundZero, 1 = cudaRoundPosInf. */
uint8_t nvo_f32_to_e8m0(float x, int round_up, int nosat);
uint8_t nvo_f64_to_e8m0(double x, int round_up, int nosat);
/* E8M0 -> BF16 raw bits through __nv_cvt_e8m0_to_bf16raw. */
uint16_t nvo_e8m0_to_bf16raw(uint8_t code);

#endif
