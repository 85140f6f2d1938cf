/* exec/model/model_slots.c — a block's linears and their places: each
 * linear's (N, K) on this rank, which linears block l has (plain or latent
 * attention, the MTP input projection, dense or expert FFN), and the FP8
 * slots (x, w, dy scales and amax histories) they and the routed experts use
 * in block order. */
#include <stdint.h>

#include "exec/model/model_internal.h"

uint64_t model_linear_n(const ModelSpec *s, LinearKind k)
{
    uint64_t rows, cols;
    spec_linear_shape(s, k, 1, &rows, &cols);
    return rows;
}

uint64_t model_linear_k(const ModelSpec *s, LinearKind k)
{
    uint64_t rows, cols;
    spec_linear_shape(s, k, 1, &rows, &cols);
    return cols;
}

uint64_t model_lin_n(const Model *m, uint32_t l, LinearKind k)
{
    if (k == LIN_EH_PROJ) return m->spec.hidden / (m->tp ? m->tp : 1); /* column-parallel (model_mtp.c) */
    if (k == LIN_FC1) return spec_fc1_k(&m->spec) * model_ffn_of(m, l);
    return k == LIN_FC2 ? m->spec.hidden : model_linear_n(&m->spec, k);
}

uint64_t model_lin_k(const Model *m, uint32_t l, LinearKind k)
{
    return k == LIN_FC2 ? model_ffn_of(m, l) : model_linear_k(&m->spec, k);
}
uint32_t model_block_linears(const Model *m, uint32_t l, LinearKind ks[LIN_KINDS])
{
    uint32_t n = 0;
    if (model_mtp_block(m, l)) ks[n++] = LIN_EH_PROJ; /* the MTP depth's input projection */
    if (!model_mla(m)) {
        ks[n++] = LIN_QKV;
    } else {
        if (m->spec.q_lora_rank) ks[n++] = LIN_Q_DOWN;
        ks[n++] = LIN_Q_UP, ks[n++] = LIN_KV_DOWN, ks[n++] = LIN_KV_UP;
    }
    ks[n++] = LIN_PROJ;
    if (model_ffn_of(m, l)) ks[n++] = LIN_FC1, ks[n++] = LIN_FC2;
    return n;
}

/* Linear k's place among block l's linears (model_block_linears); its count when the block has none. */
static uint32_t lin_place(const Model *m, uint32_t l, LinearKind k)
{
    LinearKind ks[LIN_KINDS];
    uint32_t n = model_block_linears(m, l, ks), i = 0;
    while (i < n && ks[i] != k) i++;
    return i;
}

int model_has_linear(const Model *m, uint32_t l, LinearKind k)
{
    LinearKind ks[LIN_KINDS];
    return lin_place(m, l, k) < model_block_linears(m, l, ks);
}

/* Block l's FP8 linear tensors: its linears, and 2·E routed experts on a MoE block. */
static uint32_t block_tensors(const Model *m, uint32_t l)
{
    LinearKind ks[LIN_KINDS];
    return model_block_linears(m, l, ks) +
           (model_moe_layer(m, l) ? 2 * (m->spec.experts / m->ep) : 0); /* this rank's experts */
}

/* t0(l): the tensors of the blocks before l. */
static uint32_t tensor0(const Model *m, uint32_t l)
{
    uint32_t t = 0;
    for (uint32_t j = 0; j < l; j++) t += block_tensors(m, j);
    return t;
}

uint32_t model_slot_x(const Model *m, uint32_t l, LinearKind k) { return 2 * (tensor0(m, l) + lin_place(m, l, k)); }
uint32_t model_slot_w(const Model *m, uint32_t l, LinearKind k) { return 2 * (tensor0(m, l) + lin_place(m, l, k)) + 1; }
uint32_t model_slot_dy(const Model *m, uint32_t l, LinearKind k) { return tensor0(m, l) + lin_place(m, l, k); }

uint32_t model_slot_expert(const Model *m, uint32_t l, int fc2, int op)
{
    LinearKind ks[LIN_KINDS];
    uint32_t t = tensor0(m, l) + model_block_linears(m, l, ks), E = m->spec.experts / m->ep;
    if (op == 2) return t + (uint32_t)fc2 * E;
    return 2 * t + (uint32_t)(2 * fc2 + op) * E;
}

uint32_t model_fp8_tensors(const Model *m) { return tensor0(m, m->spec.layers); }
