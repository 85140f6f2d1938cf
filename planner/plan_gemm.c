/* planner/plan_gemm.c — the time of one GEMM from its M, N, K.
 *
 * A GEMM runs as tiles of tile_m x tile_n outputs (planner/arch.c), each tile on
 * one SM; the kernel takes ceil(tiles / SMs) waves (wave quantization), and a
 * tile costs 2 * tile_m * tile_n * (K + k0) FLOPs at one SM's saturated rate,
 * k0 being its fixed pipeline-fill and epilogue cost (the small-dimension
 * penalty). The saturated rate is the GPU's measured matmul ceiling (MAMF,
 * gpus.csv), BF16 or FP8, divided by its SMs and scaled by (1 + k0 / 2048),
 * so that a GEMM with K 2048 runs at exactly the MAMF. The ceilings were not
 * measured at that K: mamf-finder prints its best shape as MxNxK, and K is
 * 13312 (H100 BF16), 12032 (H200 FP8), 3072 (B200); the "K 1536-2816" once
 * cited here are the N of its v1 table. Normalizing at the measured K (Hopper
 * BF16 4.98 %, FP8 9.22 % slower) fits OpenXLA's measured H100 table better,
 * but with the shares refitted it worsens the dense fit through the
 * attention-bound rows, so it is not taken (docs/fidelity.md, "The GEMM
 * model's K normalization, checked"). cuBLAS chooses the tile orientation
 * (128x256 or 256x128) that needs fewer tiles, and splits K when the tiles
 * fill less than one wave (split-K / stream-K), writing fp32 partial sums that
 * one more pass adds. The result is at least the HBM time of the operands and the
 * output (a roofline) and at least one kernel launch. No loop over tiles:
 * every count is closed-form.
 *
 * Transformer Engine's grouped GEMM (GroupedLinear -> general_grouped_gemm ->
 * nvte_multi_tensor_gemm) is no grouped kernel: multi_stream_cublas_gemm
 * launches one cuBLAS GEMM per expert, expert i on compute stream i mod 4
 * (transformer_engine/common/gemm/cublaslt_gemm.cu and util/multi_stream.cpp,
 * get_num_compute_streams() = 4, v2.7-v2.12; the CUTLASS grouped kernel only
 * on Hopper with NVTE_USE_CUTLASS_GROUPED_GEMM=1, off by default and set by
 * neither Megatron-LM nor Megatron-Bridge). gemm_time_streams times that: at
 * most `streams` GEMMs run at once, their tiles sharing the SMs in waves,
 * each split over K as cuBLAS sizes it alone, count / streams rounds one
 * after another (and one round of the rest). */
#include "planner/arch.h"
#include "planner/plan_internal.h"

enum { K_REF = 2048, SPLIT_MIN_K = 256 };

/* floor(log2(x)), 0 for x <= 1: the highest set bit (no loop: gemm_gpu_init runs once per plan) */
static uint32_t log2u(uint32_t x) { return x > 1 ? 31u - (uint32_t)__builtin_clz(x) : 0; }

int plan_mx_gemm(const PlanInput *in)
{
    const Recipe *rc = in->recipe;
    return rc && recipe_fp8_gemm(rc) && rc->act_gran == GRAN_1X32 && rc->weight_gran == GRAN_1X32 && in->gpu &&
           !in->gpu->host && in->gpu->sm >= 100;
}

int plan_block_gemm(const PlanInput *in)
{
    const Recipe *rc = in->recipe;
    return rc && recipe_fp8_gemm(rc) && rc->act_gran == GRAN_1X128 && rc->weight_gran == GRAN_128X128 && in->gpu &&
           !in->gpu->host && in->gpu->sm >= 90 && in->gpu->sm < 100;
}

double plan_mx_gemm_rel(const GpuSpec *g) { return g->mx_gemm_rel > 0 ? g->mx_gemm_rel : arch_mxfp8_gemm_rel_sm100; }

void gemm_gpu_init(const PlanInput *in, GemmGpu *gg)
{
    const GpuSpec *gp = in->gpu;
    const ArchRow *a = arch_row_of(gp);
    double r16 = in->eff_gemm_bf16 > 0 ? gp->flops_bf16 * in->eff_gemm_bf16
                 : gp->mamf_bf16 > 0   ? gp->mamf_bf16
                                       : gp->flops_bf16;
    double r8 = in->eff_gemm_fp8 > 0 ? gp->flops_fp8 * in->eff_gemm_fp8
                : gp->mamf_fp8 > 0   ? gp->mamf_fp8
                                     : gp->flops_fp8;
    if (!(r8 > 0)) r8 = r16; /* no FP8 tensor cores: plan_validate rejects FP8 recipes before this matters */
    /* MXFP8's GEMMs run cuBLASLt's block-scaled kernels, at their fraction of the per-tensor FP8 rate (arch.c) */
    if (!(in->eff_gemm_fp8 > 0) && plan_mx_gemm(in)) r8 *= plan_mx_gemm_rel(gp);
    /* DeepSeek-style 1x128 / 128x128 block scales on Hopper: the scales are applied on the CUDA cores every 128 of
     * K, at their measured fraction of the per-tensor FP8 rate (arch.c) */
    if (!(in->eff_gemm_fp8 > 0) && plan_block_gemm(in)) r8 *= arch_blockwise_gemm_rel_sm90;
    gg->sms = gp->sms ? (double)gp->sms : 1.0; /* unknown SM count: one "SM" with the whole rate, no quantization */
    gg->inv_sms = 1.0 / gg->sms;
    gg->tm_sh = log2u(a->tile_m), gg->tn_sh = log2u(a->tile_n);
    gg->tile2 = 2.0 * (double)(1ull << (gg->tm_sh + gg->tn_sh));
    gg->k0_16 = a->k0_16, gg->k0_8 = a->k0_8;
    double sus = gpu_sustained(gp);
    double typ16 = in->eff_gemm_bf16 > 0 ? 1.0 : sus, typ8 = in->eff_gemm_fp8 > 0 ? 1.0 : sus;
    gg->sm_rate16 = r16 * typ16 * (1.0 + gg->k0_16 / K_REF) * gg->inv_sms;
    gg->sm_rate8 = r8 * typ8 * (1.0 + gg->k0_8 / K_REF) * gg->inv_sms;
    gg->inv_hbm = 1.0 / gpu_mem_bw(gp, in->eff_hbm);
    gg->inv_elem = 1.0 / gpu_elem_bw(gp, in->eff_hbm);
    gg->launch = in->launch_s;
}

/* `batch` GEMMs whose tiles share the SMs; the split of K is chosen from the tiles of `sized` of them (the batch
 * for one batched kernel, 1 for kernels launched one per GEMM, each sized by cuBLAS as if it ran alone). */
static inline __attribute__((always_inline)) double gemm_run(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K,
                                                             uint64_t batch, uint64_t sized, int fp8, double out_bytes)
{
    uint32_t a = gg->tm_sh, b = gg->tn_sh;
    uint64_t ma = (M + (1ull << a) - 1) >> a, nb = (N + (1ull << b) - 1) >> b;
    uint64_t mb = (M + (1ull << b) - 1) >> b, na = (N + (1ull << a) - 1) >> a;
    uint64_t t1 = ma * nb, t2 = mb * na;
    double one = (double)(t1 < t2 ? t1 : t2), tiles = one * (double)batch, seen = one * (double)sized;
    double k = (double)K, k0 = fp8 ? gg->k0_8 : gg->k0_16, rate = fp8 ? gg->sm_rate8 : gg->sm_rate16;
    double mn = (double)M * (double)N * (double)batch, extra = 0;
    if (seen < gg->sms) { /* less than one wave: split K over the idle SMs */
        /* whole parts through int64 (one instruction each way; uint64's conversions branch): sms / seen is at most
         * the SM count (seen >= 1), k / 256 below 2^56 */
        double split = (double)(int64_t)(gg->sms / seen), kmax = (double)(int64_t)(k / SPLIT_MIN_K);
        if (split > kmax) split = kmax;
        if (split > 1) {
            tiles *= split;
            k /= split;
            extra = mn * 4.0 * 2.0 * split; /* fp32 partials written, then read by the reduction */
        }
    }
    double w = tiles * gg->inv_sms, waves = w < 0x1p63 ? (double)(int64_t)w : (double)(uint64_t)w;
    if (waves < w) waves += 1.0;
    double tile_flops = gg->tile2 * (k + k0);
    double tc = waves * tile_flops / rate;
    double ib = fp8 ? 1.0 : 2.0;
    double bytes = ((double)M * (double)K + (double)K * (double)N) * (double)batch * ib + mn * out_bytes + extra;
    double tm = bytes * gg->inv_hbm;
    double t = tc > tm ? tc : tm;
    return t > gg->launch ? t : gg->launch;
}

double gemm_time(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K, uint64_t batch, int fp8, double out_bytes)
{
    if (!M || !N || !K || !batch) return 0;
    return gemm_run(gg, M, N, K, batch, batch, fp8, out_bytes);
}

double gemm_time_streams(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K, uint64_t count, uint64_t streams,
                         int fp8, double out_bytes)
{
    if (!M || !N || !K || !count) return 0;
    if (!streams) return gemm_run(gg, M, N, K, count, count, fp8, out_bytes);
    uint64_t c = count < streams ? count : streams, rounds = count / c, rest = count % c;
    double t = (double)rounds * gemm_run(gg, M, N, K, c, 1, fp8, out_bytes);
    return rest ? t + gemm_run(gg, M, N, K, rest, 1, fp8, out_bytes) : t;
}

/* One GEMM dimension x as gemm_run reads it: its tiles along either tile side and its value as a double, worked
 * out once for the GEMMs of a layer that share it (the tokens, a linear's rows and columns). */
typedef struct {
    uint64_t a, b; /* ceil(x / tile_m), ceil(x / tile_n) */
    double d;      /* x */
} Dim;

static inline Dim dim_of(const GemmGpu *gg, uint64_t x)
{
    uint32_t a = gg->tm_sh, b = gg->tn_sh;
    return (Dim){(x + (1ull << a) - 1) >> a, (x + (1ull << b) - 1) >> b, (double)x};
}

/* gemm_run at batch 1 from the dimensions' Dim: the same operations on the same values, so the same bits (a batch
 * of 1 multiplies by 1.0, which changes nothing and is left out). */
static inline __attribute__((always_inline)) double gemm_run1(const GemmGpu *gg, Dim M, Dim N, Dim K, int fp8,
                                                              double out_bytes)
{
    uint64_t t1 = M.a * N.b, t2 = M.b * N.a;
    double one = (double)(t1 < t2 ? t1 : t2), tiles = one;
    double k = K.d, k0 = fp8 ? gg->k0_8 : gg->k0_16, rate = fp8 ? gg->sm_rate8 : gg->sm_rate16;
    double mn = M.d * N.d, extra = 0;
    if (one < gg->sms) { /* less than one wave: split K over the idle SMs (gemm_run) */
        double split = (double)(int64_t)(gg->sms / one), kmax = (double)(int64_t)(k / SPLIT_MIN_K);
        if (split > kmax) split = kmax;
        if (split > 1) {
            tiles *= split;
            k /= split;
            extra = mn * 4.0 * 2.0 * split;
        }
    }
    double w = tiles * gg->inv_sms, waves = w < 0x1p63 ? (double)(int64_t)w : (double)(uint64_t)w;
    if (waves < w) waves += 1.0;
    double tile_flops = gg->tile2 * (k + k0);
    double tc = waves * tile_flops / rate;
    double ib = fp8 ? 1.0 : 2.0;
    double bytes = (M.d * K.d + K.d * N.d) * ib + mn * out_bytes + extra;
    double tm = bytes * gg->inv_hbm;
    double t = tc > tm ? tc : tm;
    return t > gg->launch ? t : gg->launch;
}

void gemm_time_linears(const GemmGpu *gg, uint64_t tok, const uint64_t *rows, const uint64_t *cols, int n, int f8,
                       int b8, double wout, unsigned no_dgrad, double *fp, double *dg, double *wg)
{
    const Dim T = dim_of(gg, tok);
    for (int i = 0; i < n; i++) {
        uint64_t nr = rows[i], kc = cols[i];
        if (!(tok && nr && kc)) { /* gemm_time's zero sizes: 0 s */
            fp[i] = wg[i] = 0;
            if (!((no_dgrad >> i) & 1)) dg[i] = 0;
            continue;
        }
        const Dim N = dim_of(gg, nr), K = dim_of(gg, kc);
        fp[i] = gemm_run1(gg, T, N, K, f8, 2);
        wg[i] = gemm_run1(gg, N, K, T, b8, wout);
        if (!((no_dgrad >> i) & 1)) dg[i] = gemm_run1(gg, T, K, N, b8, 2);
    }
}
