/* tests/unit/test_exec_init.c — initial weights from a counter-based stream
 * (exec/backend/rng.h, exec/backend/rng_normal.c, exec/model/gpt_init.c, exec/backend/par.c): the normals
 * are standard normal, each value is a pure function of (seed, tensor, index)
 * whatever range or thread computes it, and the model's tensors hold exactly
 * those values (GPT-2's init: std 0.02, residual projections ÷ √(2L), LN 1,
 * biases 0, padded vocabulary rows 0). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/elem.h"
#include "exec/backend/par.h"
#include "exec/backend/rng.h"
#include "test.h"
#include "support/exec_fixtures.h"

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Moments, tail mass and the Kolmogorov–Smirnov distance to Φ of 2^18 normals.
 * Bounds are 5 standard errors (n = 262,144): mean 5/√n ≈ 0.0098, variance
 * 5·√(2/n) ≈ 0.0138, P(|z| > 3) = 0.0027 ± 5·√(p/n) ≈ 0.00051; KS at
 * α = 0.001 is 1.95/√n ≈ 0.0038. */
static void test_normals_are_standard_normal(void)
{
    enum { N = 1 << 18 };
    float *z = malloc(N * sizeof *z);
    rng_normal_fill(rng_key(42, 7), 0, N, 1.0f, z);
    double m = 0, v = 0;
    uint64_t tail = 0, far = 0;
    for (int i = 0; i < N; i++) m += z[i];
    m /= N;
    for (int i = 0; i < N; i++) {
        v += (z[i] - m) * (z[i] - m);
        tail += fabsf(z[i]) > 3.0f;
        far += fabsf(z[i]) > 3.44262f; /* beyond the ziggurat's tail start: the tail sampler ran */
    }
    v /= N - 1;
    CHECKF(fabs(m) < 0.0098, "mean %g", m);
    CHECKF(fabs(v - 1.0) < 0.0138, "variance %g", v);
    CHECKF(fabs((double)tail / N - 0.0026998) < 0.00051, "P(|z| > 3) = %g", (double)tail / N);
    CHECKF(far > 0, "no value beyond 3.44 in %d draws (expected about %d)", N, (int)(N * 5.76e-4));
    qsort(z, N, sizeof *z, cmp_f);
    double ks = 0;
    for (int i = 0; i < N; i++) {
        double cdf = 0.5 * erfc(-z[i] / sqrt(2.0));
        double d = fmax(fabs(cdf - (double)i / N), fabs(cdf - (double)(i + 1) / N));
        if (d > ks) ks = d;
    }
    CHECKF(ks < 0.0038, "KS distance %g", ks);
    free(z);
}

/* Any range gives the same value for an index as rng_normal_at alone. */
static void test_values_are_pure_functions_of_the_index(void)
{
    enum { N = 5000 };
    static float whole[N], part[N];
    uint64_t key = rng_key(1, 99);
    rng_normal_fill(key, 0, N, 0.5f, whole);
    int bad = 0;
    for (uint64_t b = 0; b < N; b += 1237) {
        uint64_t e = b + 777 < N ? b + 777 : N;
        rng_normal_fill(key, b, e, 0.5f, part);
        for (uint64_t i = b; i < e; i++) bad += part[i - b] != whole[i];
    }
    for (int i = 0; i < N; i += 97) bad += whole[i] != 0.5f * rng_normal_at(key, (uint64_t)i);
    CHECK_EQ_INT(bad, 0);
    /* other streams differ */
    float other = rng_normal_at(rng_key(1, 100), 0), again = rng_normal_at(rng_key(2, 99), 0);
    CHECK(other != whole[0] * 2.0f && again != whole[0] * 2.0f);
}

static void mark_piece(void *ctx, int piece, uint64_t b, uint64_t e)
{
    unsigned char *seen = ctx;
    (void)piece;
    for (uint64_t i = b; i < e; i++) seen[i]++;
}

static void test_par_for_covers_the_range_once(void)
{
    const uint64_t sizes[] = {0, 1, 7, 1000, 65537, 300001};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t n = sizes[k];
        unsigned char *seen = calloc(n + 1, 1);
        par_for(n, 100, mark_piece, seen);
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < n; i++) wrong += seen[i] != 1;
        CHECKF(!wrong && !seen[n], "n=%llu: %llu elements not visited exactly once", (unsigned long long)n,
               (unsigned long long)wrong);
        CHECK(par_pieces(n, 100) >= 1 && par_pieces(n, 100) <= par_threads());
        free(seen);
    }
}

/* FP32 values of a parameter's master copy (CPU backend: host memory). */
static float master_at(const Model *g, const ModelParam *p, uint64_t i)
{
    const StateSet *es = p->gemm ? &g->recipe.gemm : &g->recipe.other;
    float v = elem_load(p->master, es->dt[STATE_MASTER], i);
    return p->master_rec ? v * p->master_rec[REC_SCALE_INV] : v;
}

static void check_model(const char *recipe, uint32_t layers, uint64_t seed)
{
    ModelSpec s = fx_gpt();
    s.layers = layers;
    s.vocab = 60; /* 4 padded rows */
    Recipe r = fx_recipe(recipe);
    ModelHyper h = model_hyper_default();
    h.seed = seed;
    Backend *bk = NULL;
    Comm *comm = NULL;
    Model *g = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e) || comm_single_create(&comm, &e) || fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e)) {
        CHECKF(0, "%s: %s", recipe, e.msg);
        return;
    }
    uint64_t bad = 0, checked = 0;
    for (uint32_t k = 0; k < g->nparams; k++) {
        const ModelParam *p = &g->params[k];
        float std = h.init_std;
        if (p->kind == PK_PROJ_W || p->kind == PK_FC2_W) std /= sqrtf(2.0f * (float)layers);
        uint64_t key = rng_key(seed, (uint64_t)p->kind << 32 | (uint32_t)(p->layer + 1));
        uint64_t live = p->kind == PK_WTE || p->kind == PK_LM_HEAD ? s.vocab * p->cols : p->numel;
        const StateSet *es = p->gemm ? &g->recipe.gemm : &g->recipe.other;
        float amax = 0.0f;
        for (uint64_t i = 0; i < p->numel; i++) {
            float want;
            switch (p->kind) {
            case PK_NORM1_W:
            case PK_NORM2_W:
            case PK_NORMF_W: want = 1.0f; break;
            case PK_WTE:
            case PK_WPE:
            case PK_QKV_W:
            case PK_PROJ_W:
            case PK_FC1_W:
            case PK_FC2_W:
            case PK_LM_HEAD: want = i < live ? std * rng_normal_at(key, i) : 0.0f; break;
            default: want = 0.0f; break;
            }
            amax = fmaxf(amax, fabsf(want));
            float got = master_at(g, p, i);
            /* FP8-LM keeps an FP16 master scaled by a power of two: the value rounds once */
            if (es->dt[STATE_MASTER] == DT_FP16)
                want = elem_round(want * p->master_rec[REC_SCALE], DT_FP16) * p->master_rec[REC_SCALE_INV];
            bad += got != want;
            if (p->weight)
                bad += elem_load(p->weight, es->dt[STATE_WEIGHT], i) != elem_round(got, es->dt[STATE_WEIGHT]);
            checked++;
        }
        { /* FP8-LM's gradient, m and v records start at scale 1, inverse 1, no amax yet */
            const float *recs[3] = {p->grad_rec, p->m_rec, p->v_rec};
            for (int q = 0; q < 3; q++)
                if (recs[q])
                    CHECKF(recs[q][REC_SCALE] == 1.0f && recs[q][REC_SCALE_INV] == 1.0f && recs[q][REC_AMAX] == 0.0f,
                           "%s param %u record %d: {%g, %g, %g}, expected {1, 1, 0}", recipe, k, q, (double)recs[q][0],
                           (double)recs[q][1], (double)recs[q][2]);
        }
        /* FP8-LM's FP16 master record: the tensor's amax and the largest power of two that keeps it
         * under 65504, 2^floor(log2(65504 / amax)) (std 0.02 draws reach ~0.08: 65504 / 0.08 = 818,800,
         * so 2^19 = 524,288), and its inverse; a tensor of ones or zeros by the same rule */
        if (es->dt[STATE_MASTER] == DT_FP16 && p->master_rec && amax > 0.0f) {
            double sc = exp2(floor(log2(65504.0 / (double)amax)));
            CHECKF(p->master_rec[REC_AMAX] == amax, "%s param %u: amax %g, expected %g", recipe, k,
                   (double)p->master_rec[REC_AMAX], (double)amax);
            CHECKF(p->master_rec[REC_SCALE] == (float)sc && p->master_rec[REC_SCALE_INV] == (float)(1.0 / sc),
                   "%s param %u (amax %g): scale %g, expected %g", recipe, k, (double)amax,
                   (double)p->master_rec[REC_SCALE], sc);
        }
    }
    CHECKF(!bad, "%s L=%u seed %llu: %llu of %llu values differ from the stream", recipe, layers,
           (unsigned long long)seed, (unsigned long long)bad, (unsigned long long)checked);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

static void test_model_holds_the_stream_values(void)
{
    check_model("megatron-bf16", 2, 1);
    check_model("te-fp8", 1, 1);
    check_model("fp8lm", 2, 77);
}

int main(void)
{
    RUN(test_normals_are_standard_normal);
    RUN(test_values_are_pure_functions_of_the_index);
    RUN(test_par_for_covers_the_range_once);
    RUN(test_model_holds_the_stream_values);
    return test_summary();
}
