/* tests/support/nv_oracle.c — C shim over cuda_fp8.h's host conversions (see nv_oracle.h). */
#include "nv_oracle.h"

/* FP8PLAN_NO_NV_ORACLE builds the stubs even where the header exists (to check the skip path). */
#if defined(__has_include) && !defined(FP8PLAN_NO_NV_ORACLE)
#if __has_include(<cuda_fp8.h>) && __has_include(<cuda_runtime_api.h>)
#define NVO_HAVE_FP8 1
#endif
#endif

#ifdef NVO_HAVE_FP8
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#if CUDART_VERSION >= 12080
#define NVO_HAVE_E8M0 1
#endif
#endif

#ifndef NVO_HAVE_FP8

int nvo_available(void) { return 0; }
int nvo_e8m0_available(void) { return 0; }
int nvo_cuda_version(void) { return 0; }
uint8_t nvo_f32_to_fp8(float x, int e5m2, int nosat) { return (void)x, (void)e5m2, (void)nosat, 0; }
uint8_t nvo_f64_to_fp8(double x, int e5m2, int nosat) { return (void)x, (void)e5m2, (void)nosat, 0; }
uint16_t nvo_fp8_to_halfraw(uint8_t code, int e5m2) { return (void)code, (void)e5m2, 0; }

#else

int nvo_available(void) { return 1; }
int nvo_cuda_version(void) { return CUDART_VERSION; }

static __nv_fp8_interpretation_t kind(int e5m2) { return e5m2 ? __NV_E5M2 : __NV_E4M3; }
static __nv_saturation_t satmode(int nosat) { return nosat ? __NV_NOSAT : __NV_SATFINITE; }

uint8_t nvo_f32_to_fp8(float x, int e5m2, int nosat) { return __nv_cvt_float_to_fp8(x, satmode(nosat), kind(e5m2)); }
uint8_t nvo_f64_to_fp8(double x, int e5m2, int nosat) { return __nv_cvt_double_to_fp8(x, satmode(nosat), kind(e5m2)); }
uint16_t nvo_fp8_to_halfraw(uint8_t code, int e5m2) { return __nv_cvt_fp8_to_halfraw(code, kind(e5m2)).x; }

#endif

#ifdef NVO_HAVE_E8M0

int nvo_e8m0_available(void) { return 1; }
static enum cudaRoundMode rmode(int round_up) { return round_up ? cudaRoundPosInf : cudaRoundZero; }
uint8_t nvo_f32_to_e8m0(float x, int round_up, int nosat)
{
    return __nv_cvt_float_to_e8m0(x, satmode(nosat), rmode(round_up));
}
uint8_t nvo_f64_to_e8m0(double x, int round_up, int nosat)
{
    return __nv_cvt_double_to_e8m0(x, satmode(nosat), rmode(round_up));
}
uint16_t nvo_e8m0_to_bf16raw(uint8_t code) { return __nv_cvt_e8m0_to_bf16raw(code).x; }

#else

#ifdef NVO_HAVE_FP8
int nvo_e8m0_available(void) { return 0; }
#endif
uint8_t nvo_f32_to_e8m0(float x, int round_up, int nosat) { return (void)x, (void)round_up, (void)nosat, 0; }
uint8_t nvo_f64_to_e8m0(double x, int round_up, int nosat) { return (void)x, (void)round_up, (void)nosat, 0; }
uint16_t nvo_e8m0_to_bf16raw(uint8_t code) { return (void)code, 0; }

#endif
