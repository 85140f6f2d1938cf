/* tests/unit/test_oracle_optim.c — AdamW, FP8-LM's and MS-AMP O1's Adam, steps 1 and 2, by hand.
 *
 * An independent oracle for the optimizers the backends run: the expected
 * weights, moments, stored codes and scaling records below are worked out in
 * the comments from the update rule of exec/backend/backend.h,
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   w = w - lr ( (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd w ),
 * never by calling exec/backend/kernel_math.h (which both backends share). The
 * hyper-parameters are chosen so that most quantities are exact in binary and
 * every bug below changes the result: weight decay dropped or coupled into the
 * gradient, bias correction dropped or off by one step, eps under the square
 * root, the gradient scale ignored, moments not carried to step 2.
 *
 *   lr 0.125, beta1 0.5, beta2 0.75, eps 1, weight decay 0.5
 *   element 0: w 2, g 1 then 2.5; element 1: w -4, g -1 then 2.5; element 2: w 0, g 0 twice
 *
 * Step 1 (bias corrections 1 - 0.5 = 0.5 and 1 - 0.75 = 0.25):
 *   e0: m = 0.5, v = 0.25; m^ = 1, v^ = 1; 1 / (1 + 1) = 0.5; + 0.5 x 2 = 1.5;
 *       w = 2 - 0.125 x 1.5 = 1.8125
 *   e1: m = -0.5, v = 0.25; -1 / 2 = -0.5; + 0.5 x -4 = -2.5; w = -4 + 0.3125 = -3.6875
 *   e2: everything 0 stays 0
 * Step 2 (bias corrections 1 - 0.25 = 0.75 and 1 - 0.5625 = 0.4375), g = 2.5:
 *   e0: m = 0.25 + 1.25 = 1.5, v = 0.1875 + 1.5625 = 1.75; m^ = 2, v^ = 4, sqrt 2;
 *       2 / 3 + 0.5 x 1.8125 = 0.666667 + 0.90625; w = 1.8125 - 0.125 x 1.572917 = 1.6158854
 *   e1: m = -0.25 + 1.25 = 1, v = 1.75; m^ = 4/3, v^ = 4; (4/3) / 3 = 0.444444;
 *       + 0.5 x -3.6875 = -1.399306; w = -3.6875 + 0.174913 = -3.5125868 */
#include <math.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "test.h"

#define STEP2_W0 (1.8125 - 0.125 * (2.0 / 3.0 + 0.90625))          /* 1.6158854166... */
#define STEP2_W1 (-3.6875 - 0.125 * ((4.0 / 3.0) / 3.0 - 1.84375)) /* -3.5125868055... */
/* float32 arithmetic rounds each of the ~10 operations once: a few ulp of 2^-23 */
#define F32_REL 1e-6

static AdamHyper hyper(uint32_t step, float grad_scale)
{
    AdamHyper h = {.lr = 0.125f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1.0f, .weight_decay = 0.5f};
    h.step = step, h.grad_scale = grad_scale;
    return h;
}

/* The CPU backend; NULL, and a failed check naming why, when it cannot be made. */
static Backend *cpu_backend(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    return bk;
}

/* backend memory holding a copy of n bytes of host data */
static void *dev(Backend *bk, const void *host, uint64_t n)
{
    void *p = NULL;
    Err e;
    if (bk->alloc(bk, n, &p, &e) || bk->copy_to_device(bk, p, host, n, &e)) return NULL;
    return p;
}

static void host(Backend *bk, void *dst, const void *src, uint64_t n)
{
    Err e;
    CHECK(bk->copy_to_host(bk, dst, src, n, &e) == ST_OK);
}

static void test_adamw_two_steps(void)
{
    Backend *bk = cpu_backend();
    if (!bk) return;
    Err e = {0};
    const float w0[3] = {2, -4, 0}, zero[3] = {0, 0, 0};
    /* step 1 with grad_scale 0.5 and the gradients doubled: the same g = 1, -1, 0 */
    const float g1[3] = {2, -2, 0}, g2[3] = {2.5f, 2.5f, 0};
    const uint16_t bf0[3] = {0x4000, 0xC080, 0}; /* BF16 2, -4, 0 */
    float *master = dev(bk, w0, sizeof w0), *m = dev(bk, zero, sizeof zero), *v = dev(bk, zero, sizeof zero);
    float *grad = dev(bk, g1, sizeof g1);
    uint16_t *wbf = dev(bk, bf0, sizeof bf0);
    CHECK(master && m && v && grad && wbf);
    if (!master || !m || !v || !grad || !wbf) return;
    AdamWDesc d = {.n = 3,
                   .h = hyper(1, 0.5f),
                   .master = master,
                   .m = m,
                   .v = v,
                   .grad = grad,
                   .grad_dtype = DT_FP32,
                   .weight = wbf,
                   .weight_dtype = DT_BF16};
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(bk->sync(bk, &e) == ST_OK);
    float w[3], mm[3], vv[3];
    uint16_t b[3];
    host(bk, w, master, sizeof w), host(bk, mm, m, sizeof mm), host(bk, vv, v, sizeof vv), host(bk, b, wbf, sizeof b);
    CHECK(w[0] == 1.8125f && w[1] == -3.6875f && w[2] == 0.0f); /* exact in binary */
    CHECK(mm[0] == 0.5f && mm[1] == -0.5f && mm[2] == 0.0f);
    CHECK(vv[0] == 0.25f && vv[1] == 0.25f && vv[2] == 0.0f);
    /* the BF16 working copy: 1.8125 = 1.1101b x 2^0 -> 0x3FE8; -3.6875 = -1.11011b x 2^1 -> 0xC06C */
    CHECK_EQ_U64(b[0], 0x3FE8);
    CHECK_EQ_U64(b[1], 0xC06C);
    CHECK_EQ_U64(b[2], 0);

    /* step 2, grad_scale 1 */
    CHECK(bk->copy_to_device(bk, grad, g2, sizeof g2, &e) == ST_OK);
    d.h = hyper(2, 1.0f);
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    host(bk, w, master, sizeof w), host(bk, mm, m, sizeof mm), host(bk, vv, v, sizeof vv), host(bk, b, wbf, sizeof b);
    CHECK_REL(w[0], STEP2_W0, F32_REL);
    CHECK_REL(w[1], STEP2_W1, F32_REL);
    CHECK(w[2] == 0.0f);
    CHECK(mm[0] == 1.5f && mm[1] == 1.0f && vv[0] == 1.75f && vv[1] == 1.75f);
    /* BF16 of 1.6158854 = 1.1001110|11...b: rounds up to 1.1001111b = 1.6171875 -> 0x3FCF;
     * -3.5125868 = -1.1100000|11...b x 2: up to -1.1100001b x 2 = -3.515625 -> 0xC061 */
    CHECK_EQ_U64(b[0], 0x3FCF);
    CHECK_EQ_U64(b[1], 0xC061);

    /* without a master the FP32 working copy is the master: the same step 1 numbers */
    float *wf = dev(bk, w0, sizeof w0), *m2 = dev(bk, zero, sizeof zero), *v2 = dev(bk, zero, sizeof zero);
    CHECK(bk->copy_to_device(bk, grad, g1, sizeof g1, &e) == ST_OK);
    AdamWDesc d2 = {.n = 3,
                    .h = hyper(1, 0.5f),
                    .m = m2,
                    .v = v2,
                    .grad = grad,
                    .grad_dtype = DT_FP32,
                    .weight = wf,
                    .weight_dtype = DT_FP32};
    CHECKF(bk->adamw(bk, &d2, &e) == ST_OK, "%s", e.msg);
    host(bk, w, wf, sizeof w);
    CHECK(w[0] == 1.8125f && w[1] == -3.6875f);
    bk->free(bk, master), bk->free(bk, m), bk->free(bk, v), bk->free(bk, grad), bk->free(bk, wbf);
    bk->free(bk, wf), bk->free(bk, m2), bk->free(bk, v2);
    bk->destroy(bk);
}

/* AdamW with BF16 moments (DeepSeek-V3's states): the update in FP32, the moments stored RNE in BF16 (8
 * significant bits). Step 1 as above (lr 0.125, beta1 0.5, beta2 0.75, eps 1, wd 0.5), w 2, gradient 2 x
 * (1 + 2^-8) with grad_scale 0.5, so g = 1 + 2^-8 (exact):
 *   m = 0.5 g = 0.5 (1 + 2^-8): halfway between BF16 0.5 and 0.5 (1 + 2^-7) -> to even, 0.5 = 0x3F00
 *   v = 0.25 g^2 = 0.25 (1 + 2^-7 + 2^-16): 2^-16 is below half a BF16 step (2^-8) -> 0.25 (1 + 2^-7)
 *       = 0.251953125 = 0x3E81
 *   w (from the FP32 moments, before storing): m^ = 1 + 2^-8, v^ = (1 + 2^-8)^2, sqrt exact; 257 / 513 =
 *       0.500974659 + 0.5 x 2 = 1.500974659; w = 2 - 0.125 x 1.500974659 = 1.812378168, the FP32-moment
 *       update's bits exactly (the rounding touches only what is stored)
 *   element 1: g = -2 x 0.5 = -1: m -0.5 (0xBF00), v 0.25 (0x3E80), exact. */
static void test_adamw_bf16_moments(void)
{
    Backend *bk = cpu_backend();
    if (!bk) return;
    Err e = {0};
    const float w0[2] = {2, -4}, g[2] = {2.0f * (1.0f + 0x1p-8f), -2.0f}, zf[2] = {0, 0};
    const uint16_t z16[2] = {0, 0};
    float *master = dev(bk, w0, sizeof w0), *grad = dev(bk, g, sizeof g), *master32 = dev(bk, w0, sizeof w0);
    uint16_t *m = dev(bk, z16, sizeof z16), *v = dev(bk, z16, sizeof z16);
    float *m32 = dev(bk, zf, sizeof zf), *v32 = dev(bk, zf, sizeof zf);
    CHECK(master && grad && master32 && m && v && m32 && v32);
    if (!master || !grad || !master32 || !m || !v || !m32 || !v32) return;
    AdamWDesc d = {.n = 2,
                   .h = hyper(1, 0.5f),
                   .master = master,
                   .m = m,
                   .v = v,
                   .grad = grad,
                   .grad_dtype = DT_FP32,
                   .moment_dtype = DT_BF16};
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    AdamWDesc d32 = d;
    d32.master = master32, d32.m = m32, d32.v = v32, d32.moment_dtype = DT_FP32;
    CHECKF(bk->adamw(bk, &d32, &e) == ST_OK, "%s", e.msg);
    uint16_t mm[2], vv[2];
    float w[2], w32[2];
    host(bk, mm, m, sizeof mm), host(bk, vv, v, sizeof vv), host(bk, w, master, sizeof w);
    host(bk, w32, master32, sizeof w32);
    CHECK_EQ_U64(mm[0], 0x3F00);
    CHECK_EQ_U64(vv[0], 0x3E81);
    CHECK_EQ_U64(mm[1], 0xBF00);
    CHECK_EQ_U64(vv[1], 0x3E80);
    CHECK_REL(w[0], 1.812378168, F32_REL);
    CHECK(!memcmp(w, w32, sizeof w));
    d.moment_dtype = DT_E4M3;
    CHECK_EQ_INT(bk->adamw(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "adamw: moments in e4m3 (fp32 or bf16)");
    bk->free(bk, master), bk->free(bk, grad), bk->free(bk, master32), bk->free(bk, m), bk->free(bk, v);
    bk->free(bk, m32), bk->free(bk, v32);
    bk->destroy(bk);
}

/* FP8-LM's Adam (MS-AMP): master FP16, m E4M3, v FP16, each stored scaled by a power of two
 * chosen after the update from the new amax, scale = 2^floor(log2(fmax / amax)) (margin 0).
 * Elements 0 and 1 as above, starting from stored master 2, -4 with scale 1 and zero moments.
 *
 * Step 1 (FP32 gradients 1, -1): new w 1.8125, -3.6875; m 0.5, -0.5; v 0.25, 0.25.
 *   master: amax 3.6875, 65504 / 3.6875 = 17763.5 -> 2^14 = 16384; stored 1.8125 x 16384 = 29696
 *           = 1.1101b x 2^14 -> FP16 0x7740; -3.6875 x 16384 = -60416 = -1.11011b x 2^15 -> 0xFB60
 *   m:      amax 0.5, 448 / 0.5 = 896 -> 2^9 = 512; 0.5 x 512 = 256 = 2^8 -> E4M3 0x78, -256 -> 0xF8
 *   v:      amax 0.25, 65504 / 0.25 = 262016 < 2^18 -> 2^17 = 131072; 0.25 x 2^17 = 2^15 -> 0x7800
 *   records {scale, 1/scale, amax}: {16384, 2^-14, 3.6875}, {512, 2^-9, 0.5}, {131072, 2^-17, 0.25}
 * Step 2 (E5M2 gradients 0x45 = 1.01b x 2^2 = 5 with scale_inv 0.5: g = 2.5): decoding the stored
 *   states gives back 1.8125, -3.6875, 0.5, -0.5, 0.25 exactly, so the new values are AdamW's:
 *   w 1.6158854, -3.5125868; m 1.5, 1; v 1.75, 1.75.
 *   master: amax 3.5125868, 65504 / 3.51 = 18648 -> 2^14; 1.6158854 x 16384 = 26474.67, FP16 steps
 *           of 16 there: 1654.67 x 16 rounds to 1655 x 16 = 26480 -> 0x7677 (1.6162109375);
 *           -3.5125868 x 16384 = -57550.2, steps of 32: -1798.44 x 32 -> -1798 x 32 = -57536 -> 0xFB06
 *   m:      amax 1.5, 448 / 1.5 = 298.7 -> 2^8 = 256; 1.5 x 256 = 384 = 1.1b x 2^8 -> 0x7C; 256 -> 0x78
 *   v:      amax 1.75, 65504 / 1.75 = 37431 -> 2^15; 1.75 x 2^15 = 57344 -> 0x7B00 (both)
 *   BF16 working copy from the stored master: 26480 / 16384 = 1.6162109375 = 1.1001110111b -> rounds
 *   up to 1.1001111b -> 0x3FCF; -57536 / 16384 = -3.51171875 = -1.110000011b x 2 -> 0xC061 */
/* A record as read back, {scale, scale_inv, amax}, against want: exact, but the amax to F32_REL when amax_rel
 * (an FP32 update's amax that no short binary fraction gives). */
static void check_rec(const float got[3], const double want[3], int amax_rel, const char *what)
{
    CHECKF(got[0] == want[0] && got[1] == want[1], "%s: scale %g, scale_inv %g", what, (double)got[0], (double)got[1]);
    if (amax_rel)
        CHECK_REL(got[2], want[2], F32_REL);
    else
        CHECKF(got[2] == want[2], "%s: amax %.9g, wanted %.9g", what, (double)got[2], want[2]);
}

/* The step-2 gradient, FP8 codes {code, code} (FP8-LM E5M2, MS-AMP O1 E4M3) dequantized by scale_inv 0.5, into
 * d; the two buffers in g[0] and g[1] (the test frees them). 0 when they could not be made. */
static int fp8_grad(Backend *bk, Fp8AdamDesc *d, Dtype dt, uint8_t code, void *g[2])
{
    const uint8_t q[2] = {code, code};
    const float inv = 0.5f;
    g[0] = dev(bk, q, sizeof q), g[1] = dev(bk, &inv, sizeof inv);
    CHECK(g[0] && g[1]);
    d->grad = g[0], d->grad_dtype = dt, d->grad_scale_inv = g[1];
    return g[0] && g[1];
}

static void test_fp8lm_adam_two_steps(void)
{
    /* after step 1 and step 2, by hand above: the stored master, m and v codes, the BF16 working copy, and the
     * records of master, m and v */
    static const struct {
        uint16_t master[2];
        uint8_t m[2];
        uint16_t v[2], w[2];
        double rec[3][3];
    } want[2] = {
        {{0x7740, 0xFB60},
         {0x78, 0xF8},
         {0x7800, 0x7800},
         {0x3FE8, 0xC06C}, /* BF16 1.8125, -3.6875 */
         {{16384.0f, 0x1p-14f, 3.6875f}, {512.0f, 0x1p-9f, 0.5f}, {131072.0f, 0x1p-17f, 0.25f}}},
        {{0x7677, 0xFB06},
         {0x7C, 0x78},
         {0x7B00, 0x7B00},
         {0x3FCF, 0xC061}, /* BF16 of the stored master: 1.6171875, -3.515625 */
         /* the master's amax: the FP32 update's, before FP16 rounding */
         {{16384.0f, 0x1p-14f, -STEP2_W1}, {256.0f, 0x1p-8f, 1.5f}, {32768.0f, 0x1p-15f, 1.75f}}},
    };
    Backend *bk = cpu_backend();
    if (!bk) return;
    Err e = {0};
    const uint16_t master0[2] = {0x4000, 0xC400}; /* FP16 2, -4 */
    const uint8_t m0[2] = {0, 0};
    const uint16_t v0[2] = {0, 0}, w0[2] = {0x4000, 0xC080};
    const float rec1[3] = {1, 1, 0}, g1[2] = {1, -1};
    uint16_t *master = dev(bk, master0, sizeof master0), *v = dev(bk, v0, sizeof v0), *wbf = dev(bk, w0, sizeof w0);
    uint8_t *m = dev(bk, m0, sizeof m0);
    float *mrec = dev(bk, rec1, sizeof rec1), *mmrec = dev(bk, rec1, sizeof rec1), *vrec = dev(bk, rec1, sizeof rec1);
    float *grad = dev(bk, g1, sizeof g1);
    CHECK(master && v && wbf && m && mrec && mmrec && vrec && grad);
    if (!master || !v || !wbf || !m || !mrec || !mmrec || !vrec || !grad) return;
    Fp8AdamDesc d = {.n = 2,
                     .h = hyper(1, 1.0f),
                     .margin = 0,
                     .master = master,
                     .master_rec = mrec,
                     .m = m,
                     .m_rec = mmrec,
                     .v = v,
                     .v_rec = vrec,
                     .grad = grad,
                     .grad_dtype = DT_FP32,
                     .weight = wbf,
                     .weight_dtype = DT_BF16};
    void *g2[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++) {
        /* step 2: E5M2 gradient codes 0x45 (5) dequantized by scale_inv 0.5 */
        if (s == 1 && !fp8_grad(bk, &d, DT_E5M2, 0x45, g2)) break;
        d.h = hyper((uint32_t)s + 1, 1.0f);
        CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "step %d: %s", s + 1, e.msg);
        CHECK(bk->sync(bk, &e) == ST_OK);
        uint16_t ms[2], vs[2], ws[2];
        uint8_t mq[2];
        float r[3][3];
        host(bk, ms, master, sizeof ms), host(bk, vs, v, sizeof vs), host(bk, mq, m, sizeof mq);
        host(bk, ws, wbf, sizeof ws);
        host(bk, r[0], mrec, sizeof r[0]), host(bk, r[1], mmrec, sizeof r[1]), host(bk, r[2], vrec, sizeof r[2]);
        for (int i = 0; i < 2; i++) {
            CHECKF(ms[i] == want[s].master[i], "step %d master[%d]: 0x%04x", s + 1, i, ms[i]);
            CHECKF(mq[i] == want[s].m[i], "step %d m[%d]: 0x%02x", s + 1, i, mq[i]);
            CHECKF(vs[i] == want[s].v[i], "step %d v[%d]: 0x%04x", s + 1, i, vs[i]);
            CHECKF(ws[i] == want[s].w[i], "step %d weight[%d]: 0x%04x", s + 1, i, ws[i]);
        }
        check_rec(r[0], want[s].rec[0], s == 1, "master record");
        check_rec(r[1], want[s].rec[1], 0, "m record");
        check_rec(r[2], want[s].rec[2], 0, "v record");
    }
    bk->free(bk, master), bk->free(bk, v), bk->free(bk, wbf), bk->free(bk, m), bk->free(bk, mrec);
    bk->free(bk, mmrec), bk->free(bk, vrec), bk->free(bk, grad), bk->free(bk, g2[0]), bk->free(bk, g2[1]);
    bk->destroy(bk);
}

/* FP8-LM's Adam with no scaling records: every state keeps scale 1 (backend_desc.h). Step 1 as above:
 *   master 1.8125 = 1.1101b -> FP16 0x3F40; -3.6875 = -1.11011b x 2 -> 0xC360
 *   m 0.5 = 2^-1 -> E4M3 0.0110.000 = 0x30; -0.5 -> 0xB0;  v 0.25 = 2^-2 -> FP16 0x3400 */
static void test_fp8lm_adam_unscaled(void)
{
    Backend *bk = cpu_backend();
    if (!bk) return;
    Err e = {0};
    uint16_t master[2] = {0x4000, 0xC400}, v[2] = {0, 0}, wb[2] = {0x4000, 0xC080};
    uint8_t m[2] = {0, 0};
    const float g[2] = {1, -1};
    Fp8AdamDesc d = {.n = 2,
                     .h = hyper(1, 1.0f),
                     .master = master,
                     .m = m,
                     .v = v,
                     .grad = g,
                     .grad_dtype = DT_FP32,
                     .weight = wb,
                     .weight_dtype = DT_BF16};
    CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(bk->sync(bk, &e) == ST_OK);
    CHECK_EQ_U64(master[0], 0x3F40);
    CHECK_EQ_U64(master[1], 0xC360);
    CHECK_EQ_U64(m[0], 0x30);
    CHECK_EQ_U64(m[1], 0xB0);
    CHECK_EQ_U64(v[0], 0x3400);
    CHECK_EQ_U64(v[1], 0x3400);
    CHECK_EQ_U64(wb[0], 0x3FE8); /* BF16 1.8125 */
    CHECK_EQ_U64(wb[1], 0xC06C); /* BF16 -3.6875 */
    bk->destroy(bk);
}

/* MS-AMP O1's Adam (msamp/optim/adamw.py with FP32 moments): the scaled FP16 weight is the master, updated in
 * place, Adam m and v FP32 with no record (moment_dtype DT_FP32), no working copy. Elements 0 and 1 as above.
 * Step 1 (FP32 gradients 1, -1): the weight as FP8-LM's master above — 0x7740, 0xFB60, record {16384, 2^-14,
 *   3.6875}; m 0.5, -0.5 and v 0.25, 0.25 stored as FP32, exactly.
 * Step 2 (E4M3 gradients, O1's dtype: 0x4A = 0.1001.010 = 1.01b x 2^(9 - 7) = 5, scale_inv 0.5: g = 2.5): the
 *   stored weight decodes to 1.8125, -3.6875 and the moments are exact, so AdamW's values: w 1.6158854,
 *   -3.5125868 -> amax 3.5125868, scale 2^14 again, codes 0x7677 and 0xFB06 (as FP8-LM's master above);
 *   m 0.5·0.5 + 0.5·2.5 = 1.5 and -0.25 + 1.25 = 1; v 0.75·0.25 + 0.25·6.25 = 1.75 (both), exact in FP32. */
static void test_msamp_o1_adam_two_steps(void)
{
    /* after step 1 and step 2, by hand above: the weight's codes and record {scale, scale_inv, amax}, m and v */
    static const struct {
        uint16_t w[2];
        double rec[3];
        float m[2], v[2];
    } want[2] = {
        {{0x7740, 0xFB60}, {16384.0f, 0x1p-14f, 3.6875f}, {0.5f, -0.5f}, {0.25f, 0.25f}},
        {{0x7677, 0xFB06}, {16384.0f, 0x1p-14f, -STEP2_W1}, {1.5f, 1.0f}, {1.75f, 1.75f}},
    };
    Backend *bk = cpu_backend();
    if (!bk) return;
    Err e = {0};
    const uint16_t w0[2] = {0x4000, 0xC400}; /* FP16 2, -4, scale 1 */
    const float z[2] = {0, 0}, rec1[3] = {1, 1, 0}, g1[2] = {1, -1};
    uint16_t *w = dev(bk, w0, sizeof w0);
    float *m = dev(bk, z, sizeof z), *v = dev(bk, z, sizeof z), *wrec = dev(bk, rec1, sizeof rec1);
    float *grad = dev(bk, g1, sizeof g1);
    CHECK(w && m && v && wrec && grad);
    if (!w || !m || !v || !wrec || !grad) return;
    Fp8AdamDesc d = {.n = 2,
                     .h = hyper(1, 1.0f),
                     .master = w,
                     .master_rec = wrec,
                     .m = m,
                     .v = v,
                     .moment_dtype = DT_FP32,
                     .grad = grad,
                     .grad_dtype = DT_FP32};
    void *g2[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++) {
        /* step 2: E4M3 gradient codes 0x4A (5) dequantized by scale_inv 0.5 */
        if (s == 1 && !fp8_grad(bk, &d, DT_E4M3, 0x4A, g2)) break;
        d.h = hyper((uint32_t)s + 1, 1.0f);
        CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "step %d: %s", s + 1, e.msg);
        uint16_t ws[2];
        float ms[2], vs[2], r[3];
        host(bk, ws, w, sizeof ws), host(bk, ms, m, sizeof ms), host(bk, vs, v, sizeof vs), host(bk, r, wrec, sizeof r);
        for (int i = 0; i < 2; i++) {
            CHECKF(ws[i] == want[s].w[i], "step %d weight[%d]: 0x%04x", s + 1, i, ws[i]);
            CHECKF(ms[i] == want[s].m[i] && vs[i] == want[s].v[i], "step %d m[%d] %g, v %g", s + 1, i, (double)ms[i],
                   (double)vs[i]);
        }
        check_rec(r, want[s].rec, s == 1, "weight record");
    }
    /* FP32 moments carry no record; moments in another dtype are not an MS-AMP layout */
    d.m_rec = wrec;
    CHECK_EQ_INT(bk->fp8_adam(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "FP32 moments carry no scaling record");
    d.m_rec = NULL, d.moment_dtype = DT_BF16;
    CHECK_EQ_INT(bk->fp8_adam(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "moments in bf16");
    bk->free(bk, w), bk->free(bk, m), bk->free(bk, v), bk->free(bk, wrec), bk->free(bk, grad), bk->free(bk, g2[0]);
    bk->free(bk, g2[1]);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_adamw_two_steps);
    RUN(test_adamw_bf16_moments);
    RUN(test_fp8lm_adam_two_steps);
    RUN(test_fp8lm_adam_unscaled);
    RUN(test_msamp_o1_adam_two_steps);
    return test_summary();
}
