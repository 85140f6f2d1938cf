/* planner/spec.c — names of the model enums (see spec.h). */
#include "planner/spec.h"

#include <strings.h>

static const char *const norm_names[] = {[NORM_LAYERNORM] = "layernorm", [NORM_RMSNORM] = "rmsnorm"};
static const char *const mlp_names[] = {[MLP_GELU] = "gelu", [MLP_SWIGLU] = "swiglu"};
static const char *const pos_names[] = {[POS_LEARNED] = "learned", [POS_ROPE] = "rope", [POS_NONE] = "none"};
static const char *const link_names[] = {[LINK_NVLINK] = "nvlink", [LINK_PCIE] = "pcie", [LINK_HOST] = "host"};
static const char *const router_names[] = {
    [ROUTER_NONE] = "none", [ROUTER_SOFTMAX] = "softmax", [ROUTER_SIGMOID] = "sigmoid"};
_Static_assert(sizeof router_names / sizeof *router_names == ROUTER_COUNT_, "router_names");
_Static_assert(sizeof link_names / sizeof *link_names == LINK_COUNT_, "link_names");
_Static_assert(sizeof norm_names / sizeof *norm_names == NORM_COUNT_, "norm_names");
_Static_assert(sizeof mlp_names / sizeof *mlp_names == MLP_COUNT_, "mlp_names");
_Static_assert(sizeof pos_names / sizeof *pos_names == POS_COUNT_, "pos_names");
static const char *const linear_names[] = {
    [LIN_QKV] = "qkv",         [LIN_PROJ] = "proj",     [LIN_FC1] = "fc1",
    [LIN_FC2] = "fc2",         [LIN_Q_DOWN] = "q_down", [LIN_Q_UP] = "q_up",
    [LIN_KV_DOWN] = "kv_down", [LIN_KV_UP] = "kv_up",   [LIN_EH_PROJ] = "eh_proj"};
_Static_assert(sizeof linear_names / sizeof *linear_names == LIN_KINDS, "linear_names");

const char *linear_name(LinearKind k) { return (unsigned)k < LIN_KINDS ? linear_names[k] : "?"; }

uint32_t spec_fc1_k(const ModelSpec *m) { return m->mlp == MLP_SWIGLU ? 2 : 1; }

void spec_linear_shape(const ModelSpec *m, LinearKind k, uint32_t tp, uint64_t *rows, uint64_t *cols)
{
    uint64_t t = tp ? tp : 1, h = m->hidden, q = (uint64_t)m->heads * m->head_dim / t;
    uint64_t kv = (uint64_t)m->kv_heads * m->head_dim / t, f = (uint64_t)m->ffn_hidden / t;
    uint64_t H = (uint64_t)m->heads / t, ql = m->q_lora_rank, kl = m->kv_lora_rank;
    switch (k) {
    case LIN_QKV: *rows = q + 2 * kv, *cols = h; break;
    case LIN_PROJ: *rows = h, *cols = spec_is_mla(m) ? H * m->v_head_dim : q; break;
    case LIN_FC1: *rows = spec_fc1_k(m) * f, *cols = h; break;
    case LIN_Q_DOWN: *rows = ql, *cols = h; break;
    case LIN_Q_UP: *rows = q, *cols = ql ? ql : h; break;
    case LIN_KV_DOWN: *rows = kl + m->qk_rope_head_dim, *cols = h; break;
    case LIN_KV_UP: *rows = H * ((uint64_t)m->qk_nope_head_dim + m->v_head_dim), *cols = kl; break;
    case LIN_EH_PROJ: *rows = h / t, *cols = 2 * h; break;
    default: *rows = h, *cols = f; break;
    }
}

static int parse_in(const char *const *names, int n, const char *s, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(s, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

const char *norm_name(NormType n) { return (unsigned)n < NORM_COUNT_ ? norm_names[n] : "?"; }
const char *mlp_name(MlpType m) { return (unsigned)m < MLP_COUNT_ ? mlp_names[m] : "?"; }
const char *pos_name(PosType p) { return (unsigned)p < POS_COUNT_ ? pos_names[p] : "?"; }
const char *link_name(IntraLink l) { return (unsigned)l < LINK_COUNT_ ? link_names[l] : "?"; }
const char *router_name(RouterType r) { return (unsigned)r < ROUTER_COUNT_ ? router_names[r] : "?"; }

int router_parse(const char *s, RouterType *out)
{
    int v;
    if (!*s) return *out = ROUTER_NONE, 0;
    if (parse_in(router_names, ROUTER_COUNT_, s, &v)) return -1;
    *out = (RouterType)v;
    return 0;
}

int link_parse(const char *s, IntraLink *out)
{
    int v;
    if (parse_in(link_names, LINK_COUNT_, s, &v)) return -1;
    *out = (IntraLink)v;
    return 0;
}

int norm_parse(const char *s, NormType *out)
{
    int v;
    if (parse_in(norm_names, NORM_COUNT_, s, &v)) return -1;
    *out = (NormType)v;
    return 0;
}

int mlp_parse(const char *s, MlpType *out)
{
    int v;
    if (parse_in(mlp_names, MLP_COUNT_, s, &v)) return -1;
    *out = (MlpType)v;
    return 0;
}

int pos_parse(const char *s, PosType *out)
{
    int v;
    if (parse_in(pos_names, POS_COUNT_, s, &v)) return -1;
    *out = (PosType)v;
    return 0;
}

static const char *const link_path_names[] = {
    [LINK_PATH_BYTES] = "bytes",         [LINK_PATH_FP32] = "fp32",
    [LINK_PATH_BF16] = "bf16",           [LINK_PATH_FP8] = "fp8",
    [LINK_PATH_EAGER] = "eager",         [LINK_PATH_RENDEZVOUS] = "rendezvous",
    [LINK_PATH_FP32_GRAD] = "fp32 grad", [LINK_PATH_FP32_EMB] = "fp32 emb"};
_Static_assert(sizeof link_path_names / sizeof *link_path_names == LINK_PATH_COUNT_, "link_path_names");
const char *link_path_name(LinkPath p) { return (unsigned)p < LINK_PATH_COUNT_ ? link_path_names[p] : "?"; }
