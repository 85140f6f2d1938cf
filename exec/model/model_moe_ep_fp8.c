/* exec/model/model_moe_ep_fp8.c — the FP8 dispatch payload of expert parallelism (DeepSeek-V3 section
 * 3.3.4: the activations before the up-projections, and the output gradients before the down-projections,
 * are quantized to FP8 before the dispatch all-to-all; the combine stays BF16), for a recipe whose
 * ep_dispatch_comm is FP8 with 1x128 activation tiles (deepseek-v3; model_moe_check).
 *
 * A dispatched row is its C E4M3 codes and its ceil(C/128) FP32 scale_inv, C + 4·ceil(C/128) bytes (the
 * planner's row_bytes for the measured routing, planner/plan_moe_routed.c). Peer j's segment of the send
 * buffer holds its n_j rows' codes, then their scales (both whole 4-byte words: C % 4 == 0, checked), so one
 * all-to-all of 4-byte words moves them (MPI moves bytes) and a segment is quantized by one cast. The experts' side sorts the
 * codes and scales into expert-major order — the row-wise FP8 copy the grouped GEMM reads as it is (the
 * 1x128 tiles run along a row, so they are the ones the experts' side would cast) — and dequantizes them
 * for the transposed copy wgrad reads (re-tiled along the tokens from each expert's first row), as the
 * report does for its cached FP8 activations.
 *
 * With expert tensor parallelism (etp > 1) the received payload is what the ETP group gathers
 * (etp_allgather): each rank's segment, its EP peers' codes and scales as they arrived, so a gathered row is
 * C + 4·ceil(C/128) bytes too and no rank quantizes again (model_moe_ep.c to_experts_fp8). */
#include "exec/model/model_internal.h"

static uint64_t tiles(uint64_t n) { return (n + 127) / 128; }

uint64_t model_ep_fp8_row_bytes(const Model *m) { return m->spec.hidden + 4 * tiles(m->spec.hidden); }

Status model_ep_fp8_pack(Model *m, const uint64_t *rows, const void *tok, uint8_t *pay, Err *e)
{
    const uint64_t C = m->spec.hidden, esz = dtype_bytes(m->act_dtype), rb = model_ep_fp8_row_bytes(m);
    Status st = ST_OK;
    for (uint64_t j = 0, r0 = 0, off = 0; !st && j < m->ep; r0 += rows[j], off += rows[j] * rb, j++) {
        if (!rows[j]) continue;
        CastDesc c = {.in = (const char *)tok + r0 * C * esz,
                      .in_dtype = m->act_dtype,
                      .rows = rows[j],
                      .cols = C,
                      .out_dtype = m->recipe.comm_ep_dispatch,
                      .gran = m->recipe.act_gran,
                      .out_row = pay + off,
                      .row_scale_inv = (float *)(void *)(pay + off + rows[j] * C)};
        st = m->bk->cast_transpose(m->bk, &c, e);
    }
    return st;
}

/* n bytes of the host copy to dst (backend memory): the codes and scales move as the bits they are. */
static Status bytes_to(Model *m, const uint8_t *host, void *dst, uint64_t n, Err *e)
{
    return n ? m->bk->copy_to_device(m->bk, dst, host, (size_t)n, e) : ST_OK;
}

Status model_ep_fp8_unpack(Model *m, const uint64_t *rc, const uint8_t *scr, uint8_t *host, uint8_t *q, float *qs,
                           Err *e)
{
    /* the sources: the EP peers, every ETP peer's in ETP rank order with expert tensor parallelism */
    const uint64_t El = m->spec.experts / m->ep, ep = (uint64_t)m->ep * m->etp, C = m->spec.hidden, nt = tiles(C);
    const uint64_t rb = model_ep_fp8_row_bytes(m);
    uint64_t rows = 0;
    for (uint64_t i = 0; i < ep * El; i++) rows += rc[i];
    Status st = rows ? m->bk->copy_to_host(m->bk, host, scr, (size_t)(rows * rb), e) : ST_OK;
    uint64_t at = 0; /* expert-major row */
    for (uint64_t x = 0; x < El; x++)
        for (uint64_t s = 0; s < ep; s++) {
            uint64_t q0 = 0, ns = 0, before = 0; /* source s's segment, its rows, its rows for experts < x */
            for (uint64_t t = 0; t < s; t++)
                for (uint64_t y = 0; y < El; y++) q0 += rc[t * El + y] * rb;
            for (uint64_t y = 0; y < El; y++) ns += rc[s * El + y], before += y < x ? rc[s * El + y] : 0;
            const uint64_t n = rc[s * El + x];
            if (!st) st = bytes_to(m, host + q0 + before * C, q + at * C, n * C, e);
            if (!st) st = bytes_to(m, host + q0 + ns * C + before * nt * 4, qs + at * nt, n * nt * 4, e);
            at += n;
        }
    return st;
}

Status model_ep_fp8_dequant(Model *m, const uint8_t *q, const float *qs, uint64_t rows, void *out, Err *e)
{
    const uint64_t C = m->spec.hidden, nt = tiles(C), esz = dtype_bytes(m->act_dtype);
    const Dtype f = m->recipe.comm_ep_dispatch;
    Status st = ST_OK;
    for (uint64_t r = 0; !st && r < rows; r++)
        for (uint64_t t = 0; !st && t < nt; t++) {
            const uint64_t c0 = t * 128, n = C - c0 < 128 ? C - c0 : 128;
            st = m->bk->convert(m->bk, q + r * C + c0, f, (char *)out + (r * C + c0) * esz, m->act_dtype, n,
                                qs + r * nt + t, e);
        }
    return st;
}
