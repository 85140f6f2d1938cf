/* tests/unit/test_exec_moe_checks.c — what the mixture-of-experts operations
 * refuse, through the CPU backend's table (the shared descriptor checks of
 * exec/backend/backend_check.c, then the CPU's checks of the data): each malformed
 * call is refused with its status and a message naming the operation and the
 * field or value at fault, and writes nothing. */
#include <math.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "test.h"

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

/* call (which passes &e) is refused with status and a message containing text. */
#define REFUSED(call, status, text)                                                            \
    do {                                                                                       \
        e = (Err){0};                                                                          \
        Status st_ = (call);                                                                   \
        CHECKF(st_ == (status), "status %d, expected %d (%s)", (int)st_, (int)(status), text); \
        CHECK_CONTAINS(e.msg, text);                                                           \
    } while (0)

enum { T = 2, E = 4, K = 2 };

static void test_router_refusals(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    Err e = {0};
    float z[T * E] = {0}, s[T * E], w[T * K];
    int32_t ids[T * K], counts[E];
    RouterDesc ok = {T, E, K, ROUTER_SOFTMAX, 1, 1.0f, 0, 0, z, NULL, s, ids, w, counts}, d;
    REFUSED(bk->router_topk(bk, NULL, &e), ST_USAGE, "router_topk: no descriptor");
    d = ok, d.k = E + 1;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: top-k 5 must be in [1, 4]");
    d = ok, d.k = 0;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: top-k 0 must be in [1, 4]");
    d = ok, d.tokens = 0;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: no tokens or no experts");
    d = ok, d.experts = 0;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: no tokens or no experts");
    d = ok, d.tokens = 1ull << 30; /* x 2 slots: 2^31 rows, one past int32 */
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE,
            "router_topk: 1073741824 tokens x top-2 exceed the int32 row indices");
    d = ok, d.score = ROUTER_NONE;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: unknown score function 0");
    d = ok, d.weight_scale = NAN;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: weight_scale nan is not finite");
    d = ok, d.groups = 3, d.group_topk = 1;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: 3 groups do not divide the 4 experts");
    d = ok, d.groups = 2, d.group_topk = 0;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: group_topk 0 must be in [1, 2] (the groups)");
    d.group_topk = 3;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: group_topk 3 must be in [1, 2] (the groups)");
    d = ok, d.groups = 4, d.group_topk = 1;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE,
            "router_topk: top-2 exceeds the 1 experts of the 1 groups open to a token");
    d.group_topk = 2; /* two groups of one expert each: top-2 fits */
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK, "%s", e.msg);
    d = ok, d.groups = 1, d.group_topk = 0; /* one group: no grouping, nothing checked */
    CHECKF(bk->router_topk(bk, &d, &e) == ST_OK, "%s", e.msg);
    d = ok, d.counts = NULL;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: missing pointer");
    d = ok, d.logits = NULL;
    REFUSED(bk->router_topk(bk, &d, &e), ST_USAGE, "router_topk: missing pointer");
    CHECKF(bk->router_topk(bk, &ok, &e) == ST_OK, "%s", e.msg);

    float dw[T * K] = {0}, dz[T * E], loss;
    RouterBwdDesc bok = {T, E, K, ROUTER_SIGMOID, 1, 1.0f, s, ids, dw, NULL, dz}, b;
    REFUSED(bk->router_bwd(bk, NULL, &e), ST_USAGE, "router_bwd: no descriptor");
    b = bok, b.k = 5;
    REFUSED(bk->router_bwd(bk, &b, &e), ST_USAGE, "router_bwd: top-k 5 must be in [1, 4]");
    b = bok, b.dlogits = NULL;
    REFUSED(bk->router_bwd(bk, &b, &e), ST_USAGE, "router_bwd: missing pointer");
    int32_t bad_ids[T * K] = {0, 1, 2, 4}; /* expert 4 of 4 */
    b = bok, b.ids = bad_ids;
    REFUSED(bk->router_bwd(bk, &b, &e), ST_USAGE, "router_bwd: token 1 slot 1: expert id 4 is outside [0, 4)");

    RouterAuxDesc aok = {T, E, K, ROUTER_SOFTMAX, 0.01f, s, ids, &loss, 1.0f, NULL, NULL, 0}, a;
    REFUSED(bk->router_aux_loss(bk, NULL, &e), ST_USAGE, "router_aux_loss: no descriptor");
    a = aok, a.loss = NULL;
    REFUSED(bk->router_aux_loss(bk, &a, &e), ST_USAGE, "router_aux_loss: missing pointer");
    a = aok, a.coeff = INFINITY;
    REFUSED(bk->router_aux_loss(bk, &a, &e), ST_USAGE, "router_aux_loss: coeff inf or dloss 1 is not finite");
    int32_t dup[T * K] = {0, 1, 3, 3};
    a = aok, a.ids = dup;
    REFUSED(bk->router_aux_loss(bk, &a, &e), ST_USAGE, "router_aux_loss: token 1 picks expert 3 twice (slots 0 and 1)");
    bad_ids[3] = -1;
    a = aok, a.ids = bad_ids;
    REFUSED(bk->router_aux_loss(bk, &a, &e), ST_USAGE, "token 1 slot 1: expert id -1 is outside [0, 4)");
    bk->destroy(bk);
}

static void test_permute_refusals(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    Err e = {0};
    enum { C = 3 };
    const int32_t ids[T * K] = {0, 2, 1, 2};
    float x[T * C] = {1, 2, 3, 4, 5, 6}, px[T * K * C], y[T * C], w[T * K] = {1, 1, 1, 1}, dw[T * K];
    int32_t row_of[T * K] = {-7, -7, -7, -7};
    MoePermuteDesc pok = {T, E, K, C, DT_FP32, ids, x, px, row_of}, p;
    REFUSED(bk->moe_permute(bk, NULL, &e), ST_USAGE, "moe_permute: no descriptor");
    p = pok, p.k = 9;
    REFUSED(bk->moe_permute(bk, &p, &e), ST_USAGE, "moe_permute: top-k 9 must be in [1, 4]");
    p = pok, p.cols = 0;
    REFUSED(bk->moe_permute(bk, &p, &e), ST_USAGE, "moe_permute: zero width");
    p = pok, p.row_of = NULL;
    REFUSED(bk->moe_permute(bk, &p, &e), ST_USAGE, "moe_permute: missing pointer");
    p = pok, p.dtype = (Dtype)99;
    REFUSED(bk->moe_permute(bk, &p, &e), ST_USAGE, "moe_permute: dtype");
    const int32_t far[T * K] = {0, 2, 1, 7};
    p = pok, p.ids = far;
    REFUSED(bk->moe_permute(bk, &p, &e), ST_USAGE, "moe_permute: token 1 slot 1: expert id 7 is outside [0, 4)");
    CHECK(row_of[0] == -7); /* nothing written before the data was checked */
    CHECKF(bk->moe_permute(bk, &pok, &e) == ST_OK, "%s", e.msg);

    MoeUnpermuteDesc uok = {T, K, C, DT_FP32, row_of, w, px, y}, u;
    REFUSED(bk->moe_unpermute(bk, NULL, &e), ST_USAGE, "moe_unpermute: no descriptor");
    u = uok, u.dtype = DT_E4M3;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: activation dtype e4m3 is not fp32, fp16 or bf16");
    u = uok, u.tokens = 0;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: no tokens, no slots (k) or zero width");
    u = uok, u.tokens = (1ull << 30) - 1; /* x 2 = 2^31 - 2 rows fit: refused only for the missing pointer */
    u.out = NULL;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: missing pointer");
    u.tokens = 1ull << 30;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: 1073741824 tokens x top-2 exceed");
    u = uok, u.out = NULL;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: missing pointer");
    int32_t bad_map[T * K] = {0, 1, 2, 4}; /* 4 rows: 0 .. 3 */
    u = uok, u.row_of = bad_map;
    REFUSED(bk->moe_unpermute(bk, &u, &e), ST_USAGE, "moe_unpermute: token 1 slot 1 maps to row 4, outside [0, 4)");

    MoeUnpermuteBwdDesc bok = {T, K, C, DT_FP32, row_of, w, y, px, px, dw}, b;
    REFUSED(bk->moe_unpermute_bwd(bk, NULL, &e), ST_USAGE, "moe_unpermute_bwd: no descriptor");
    b = bok, b.weights = NULL;
    REFUSED(bk->moe_unpermute_bwd(bk, &b, &e), ST_USAGE, "moe_unpermute_bwd: missing pointer");
    b = bok, b.row_of = bad_map;
    REFUSED(bk->moe_unpermute_bwd(bk, &b, &e), ST_USAGE, "moe_unpermute_bwd: token 1 slot 1 maps to row 4");
    /* 2^30 tokens x top-2 = 2^31 rows pass int32 whatever the width (1 here): refused before the pointers */
    b = bok, b.tokens = 1ull << 30, b.cols = 1, b.weights = NULL;
    REFUSED(bk->moe_unpermute_bwd(bk, &b, &e), ST_USAGE, "moe_unpermute_bwd: 1073741824 tokens x top-2 exceed");
    bk->destroy(bk);
}

static void test_grouped_gemm_refusals(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    Err e = {0};
    enum { G = 3, N = 2, KK = 4, ROWS = 3 };
    int32_t counts[G] = {1, 0, 2};
    uint16_t a[ROWS * KK] = {0}, b[G * N * KK] = {0}, d[ROWS * N];
    uint8_t a8[ROWS * KK] = {0}, b8[G * N * KK] = {0};
    float sc[G] = {1, 1, 1};
    GroupedGemmDesc ok = {.groups = G,
                          .rows = ROWS,
                          .n = N,
                          .k = KK,
                          .counts = counts,
                          .a = {.ptr = a, .dtype = DT_BF16},
                          .b = {.ptr = b, .dtype = DT_BF16},
                          .d = {.ptr = d, .dtype = DT_BF16}},
                    g;
    REFUSED(bk->grouped_gemm(bk, NULL, &e), ST_USAGE, "grouped_gemm: no descriptor");
    g = ok, g.groups = 0;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: empty shape groups=0 n=2 k=4");
    g = ok, g.k = 0;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: empty shape groups=3 n=2 k=0");
    g = ok, g.counts = NULL;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: no counts");
    g = ok, g.a.ptr = NULL;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: operand A has no data pointer");
    g = ok, g.d.ptr = NULL;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: output D has no data pointer");
    g = ok, g.b.ld = 8;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: operand B must be packed");
    g = ok, g.d.dtype = DT_E4M3, g.d.scale = sc;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: output D is e4m3 with a scale");
    g = ok, g.b.ptr = b8, g.b.dtype = DT_E4M3, g.b.scale_inv = sc;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: mixing FP8 and bf16 operands");
    g = ok, g.a = (GemmOperand){.ptr = a8, .dtype = DT_E4M3}, g.b = (GemmOperand){.ptr = b8, .dtype = DT_E4M3};
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: FP8 operand A has no scale_inv");
    g.a.scale_inv = g.b.scale_inv = sc, g.b.layout = GEMM_K_OUTER;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: FP8 operand B is stored K-outer");
    g.b.layout = GEMM_K_INNER, g.a.scale_gran = GRAN_128X128, g.b.scale_gran = GRAN_1X128;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE,
            "grouped_gemm: operand A has 128x128 scales; its groups are ragged along the rows, so its blocks would "
            "cross them (1x128 or per-tensor)");
    g.a.scale_gran = GRAN_TENSOR, g.b.scale_gran = GRAN_TENSOR;
    CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
    /* DeepSeek-V3's experts: A in 1x128 tiles (one scale a row here: K 4), B 128x128 (one block a group) */
    g.a.scale_gran = GRAN_1X128, g.b.scale_gran = GRAN_128X128;
    CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
    /* the data: counts must add up to the rows, none negative */
    g = ok, g.rows = 4;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: the counts add up to 3 rows, the descriptor has 4");
    counts[1] = -1, counts[2] = 3;
    g = ok;
    REFUSED(bk->grouped_gemm(bk, &g, &e), ST_USAGE, "grouped_gemm: group 1 has -1 rows");
    counts[0] = counts[1] = counts[2] = 0;
    g = ok, g.rows = 0; /* every group empty: nothing to do */
    CHECKF(bk->grouped_gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
    bk->destroy(bk);
}

static void test_wgrad_refusals(void)
{
    Backend *bk = cpu();
    CHECK(bk != NULL);
    if (!bk) return;
    Err e = {0};
    enum { G = 2, M = 2, N = 3, ROWS = 4 };
    int32_t counts[G] = {3, 1};
    uint16_t a[ROWS * M] = {0}, b[ROWS * N] = {0}, d[G * M * N];
    uint8_t a8[ROWS * M] = {0}, b8[ROWS * N] = {0};
    float sc[G] = {1, 1};
    GroupedWgradDesc ok = {.groups = G,
                           .rows = ROWS,
                           .m = M,
                           .n = N,
                           .counts = counts,
                           .a = {.ptr = a, .dtype = DT_BF16, .layout = GEMM_K_OUTER},
                           .b = {.ptr = b, .dtype = DT_BF16, .layout = GEMM_K_OUTER},
                           .d = {.ptr = d, .dtype = DT_FP32}},
                     g;
    float d32[G * M * N];
    ok.d.ptr = d32;
    REFUSED(bk->grouped_gemm_wgrad(bk, NULL, &e), ST_USAGE, "grouped_gemm_wgrad: no descriptor");
    g = ok, g.m = 0;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE, "grouped_gemm_wgrad: empty shape groups=2 m=0 n=3");
    g = ok, g.counts = NULL;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE, "grouped_gemm_wgrad: no counts");
    g = ok, g.d.ld = 4;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE, "grouped_gemm_wgrad: output D must be packed");
    g = ok, g.d.ptr = d, g.d.dtype = DT_E4M3;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE, "grouped_gemm_wgrad: output D is e4m3");
    g = ok, g.b.ld = 2; /* below N = 3, the packed length of a K-outer B's rows */
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE,
            "grouped_gemm_wgrad: operand B leading dimension 2 is below its row length 3");
    g = ok, g.a = (GemmOperand){.ptr = a8, .dtype = DT_E5M2, .layout = GEMM_K_OUTER, .scale_inv = sc};
    g.b = (GemmOperand){.ptr = b8, .dtype = DT_E4M3, .scale_inv = sc};
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE, "grouped_gemm_wgrad: FP8 operand A is stored K-outer");
    g.a.layout = GEMM_K_INNER; /* the transposed copies: legal */
    CHECKF(bk->grouped_gemm_wgrad(bk, &g, &e) == ST_OK, "%s", e.msg);
    /* DeepSeek-V3's experts: both in 1x128 tiles along K (the rows, one tile a group here: B (N, 2 tiles), 6
     * scales); 128x128 blocks would cross the groups' K ranges */
    float sc6[N * G] = {1, 1, 1, 1, 1, 1};
    g.a.scale_inv = g.b.scale_inv = sc6, g.a.scale_gran = GRAN_1X128, g.b.scale_gran = GRAN_128X128;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE,
            "grouped_gemm_wgrad: operand B has 128x128 scales; its groups are ragged along K");
    g.b.scale_gran = GRAN_1X128;
    CHECKF(bk->grouped_gemm_wgrad(bk, &g, &e) == ST_OK, "%s", e.msg);
    g = ok, g.rows = 5;
    REFUSED(bk->grouped_gemm_wgrad(bk, &g, &e), ST_USAGE,
            "grouped_gemm_wgrad: the counts add up to 4 rows, the descriptor has 5");
    CHECKF(bk->grouped_gemm_wgrad(bk, &ok, &e) == ST_OK, "%s", e.msg);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_router_refusals);
    RUN(test_permute_refusals);
    RUN(test_grouped_gemm_refusals);
    RUN(test_wgrad_refusals);
    return test_summary();
}
