/* import/map_moe.c — Megatron-LM's mixture-of-experts, latent-attention and MTP arguments (see map_moe.h). */
#include "import/map_moe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/layout.h"
#include "util/num.h"

#define TRY(x)               \
    do {                     \
        Status st_ = (x);    \
        if (st_) return st_; \
    } while (0)

enum { FREQ_MAX = 100000 }; /* layers a --moe-layer-freq pattern may spell out */

static int switch_on(const ImportKv *kv) { return import_true(kv->val) != 0; }

/* ---- --moe-layer-freq: an integer N (one MoE layer in N), or a Python list expression such as
 * "([0]*3+[1]*58)" (Megatron-LM's moe_freq_type), or a YAML list flattened to "0,0,0,1,..." ---------------- */

typedef struct {
    const char *p;
    unsigned char *out;
    size_t n;
    int bad;
} Freq;

static void skip_ws(Freq *f)
{
    while (*f->p == ' ') f->p++;
}

static unsigned long read_int(Freq *f)
{
    skip_ws(f);
    char *end;
    unsigned long v = strtoul(f->p, &end, 10);
    if (end == f->p || v > FREQ_MAX) f->bad = 1;
    f->p = end;
    return v;
}

static void freq_expr(Freq *f, int depth);

static void freq_term(Freq *f, int depth)
{
    size_t start = f->n;
    skip_ws(f);
    if (*f->p == '[') {
        f->p++;
        do {
            unsigned long v = read_int(f);
            if (f->bad || f->n >= FREQ_MAX) return (void)(f->bad = 1);
            f->out[f->n++] = (unsigned char)(v ? v : 0);
            if (v > 1) f->bad = 1;
            skip_ws(f);
        } while (*f->p == ',' && f->p++);
        if (*f->p++ != ']') f->bad = 1;
    } else if (*f->p == '(' && depth < 8) {
        f->p++;
        freq_expr(f, depth + 1);
        skip_ws(f);
        if (*f->p++ != ')') f->bad = 1;
    } else {
        f->bad = 1;
    }
    skip_ws(f);
    if (f->bad || *f->p != '*') return;
    f->p++;
    unsigned long k = read_int(f), len = f->n - start;
    if (f->bad || !k || start + len * k > FREQ_MAX) return (void)(f->bad = 1);
    for (unsigned long i = 1; i < k; i++) memcpy(f->out + start + i * len, f->out + start, len);
    f->n = start + len * k;
}

static void freq_expr(Freq *f, int depth)
{
    freq_term(f, depth);
    skip_ws(f);
    while (!f->bad && *f->p == '+') {
        f->p++;
        freq_term(f, depth);
        skip_ws(f);
    }
}

/* The pattern's leading dense layers and its length; 0, or an error naming the setting. */
static Status parse_freq(const ImportResult *r, const ImportKv *kv, ImportMoe *m, Err *e)
{
    uint64_t n;
    Err ne;
    if (!num_parse_u64(kv->val, &n, &ne)) { /* an integer N: layer i is a MoE layer when i % N == 0 */
        if (n == 1) return m->dense = 0, m->freq_layers = 0, ST_OK;
        return err_set(e, ST_DATA,
                       "%s:%d: %s %s: one MoE layer in every %s interleaves dense and MoE layers; the planner's dense "
                       "layers are the first ones (a pattern [0]*K+[1]*M)",
                       r->path, kv->line, kv->key, kv->val, kv->val);
    }
    char text[IMPORT_VAL_MAX + 2];
    snprintf(text, sizeof text, strchr(kv->val, '[') || strchr(kv->val, '(') ? "%s" : "[%s]", kv->val);
    Freq f = {text, malloc(FREQ_MAX), 0, 0};
    if (!f.out) return err_set(e, ST_NOMEM, "out of memory reading %s", r->path);
    freq_expr(&f, 0);
    skip_ws(&f);
    if (*f.p) f.bad = 1;
    size_t dense = 0;
    while (!f.bad && dense < f.n && !f.out[dense]) dense++;
    int interleaved = 0;
    for (size_t i = dense; !f.bad && i < f.n; i++) interleaved |= f.out[i] != 1;
    free(f.out);
    if (f.bad || !f.n)
        return err_set(e, ST_DATA,
                       "%s:%d: %s: '%s' is not an integer or a list of 0 (dense) and 1 (MoE) layers such as "
                       "([0]*3+[1]*58)",
                       r->path, kv->line, kv->key, kv->val);
    if (interleaved)
        return err_set(e, ST_DATA,
                       "%s:%d: %s: '%s' puts a dense layer after a MoE layer; the planner's dense layers are the "
                       "first ones (a pattern [0]*K+[1]*M)",
                       r->path, kv->line, kv->key, kv->val);
    m->dense = (unsigned)dense, m->freq_layers = (unsigned)f.n;
    return ST_OK;
}

/* ---- reading ------------------------------------------------------------------------------------------- */

static Status u32(ImportResult *r, const ImportKv *kv, unsigned lo, unsigned hi, unsigned *out, const ImportKv **slot,
                  Err *e)
{
    TRY(import_u32(r, kv, lo, hi, out, e));
    *slot = kv;
    return ST_OK;
}

/* Model dimensions: {argument, field, note, lowest, highest}; the value lands in the ImportMoe at `off`. */
static const struct {
    const char *arg;
    ImportField f;
    const char *what;
    unsigned lo, hi;
    size_t off, kv_off;
} dims[] = {
#define D(a, f, w, lo, hi, v)                                                \
    {                                                                        \
        a, f, w, lo, hi, offsetof(ImportMoe, v), offsetof(ImportMoe, v##_kv) \
    }
    D("--num-experts", IF_EXPERTS, "experts", 1, 65536, experts),
    D("--moe-router-topk", IF_TOPK, "experts_per_token", 1, 65536, topk),
    D("--moe-ffn-hidden-size", IF_EXPERT_FFN, "expert_ffn_hidden", 1, 1u << 22, ffn),
    D("--moe-shared-expert-intermediate-size", IF_SHARED, "shared experts (of this width, below)", 1, 1u << 26, shared),
    D("--moe-router-num-groups", IF_GROUPS, "router_groups", 1, 65536, groups),
    D("--moe-router-group-topk", IF_GROUP_TOPK, "router_group_topk", 1, 65536, group_topk),
    D("--q-lora-rank", IF_Q_LORA, "q_lora_rank (with --multi-latent-attention)", 1, 1u << 20, q_lora),
    D("--kv-lora-rank", IF_KV_LORA, "kv_lora_rank (with --multi-latent-attention)", 1, 1u << 20, kv_lora),
    D("--qk-head-dim", IF_QK_NOPE, "qk_nope_head_dim (with --multi-latent-attention)", 1, 65536, qk_head),
    D("--qk-pos-emb-head-dim", IF_QK_ROPE, "qk_rope_head_dim (with --multi-latent-attention)", 1, 65536, qk_pos),
    D("--v-head-dim", IF_V_HEAD, "v_head_dim (with --multi-latent-attention)", 1, 65536, v_head),
    D("--mtp-num-layers", IF_MTP, "mtp_layers", 0, 64, mtp),
#undef D
};

/* Settings noted as not planned, with why (each is a few small kernels or a few rows per expert). */
static const char *const unplanned[][2] = {
    {"--moe-permute-fusion", "fused permute/unpermute kernels: the permutation's bytes are planned either way, its "
                             "host operations are the stack's moe_host_ops"},
    {"--moe-router-padding-for-fp8", "each expert's rows padded to a multiple of 16 for FP8 (at most 15 rows per "
                                     "expert and GEMM): not planned"},
    {"--moe-aux-loss-coeff", "the auxiliary loss: a few small kernels per MoE layer, not planned"},
    {"--moe-z-loss-coeff", "the router's z-loss: a few small kernels per MoE layer, not planned"},
    {"--moe-router-load-balancing-type", "the balancing loss's form: a few small kernels per MoE layer, not planned"},
    {"--moe-router-topk-scaling-factor", "a scale on the routing weights: no memory or time"},
    {"--moe-router-pre-softmax", "softmax before or after top-k: the same [tokens, experts] scores"},
    {"--moe-router-dtype", "the router's score dtype: the planner keeps FP32 probabilities"},
    {"--moe-router-bias-update-rate", "the expert bias's update rate: no memory or time"},
    {"--moe-token-drop-policy", "which tokens over capacity drop: the same buffers"},
    {"--moe-shared-expert-overlap", "shared experts run beside the dispatch: not planned (--overlap-ep covers the "
                                    "all-to-alls)"},
    {"--moe-pad-expert-input-to-capacity", "the plan sizes every expert at the capacity factor (the padded bound)"},
};

int import_moe_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportMoe *m, Status *st, Err *e)
{
    *st = ST_OK;
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        if (!strcmp(a, dims[i].arg)) {
            unsigned *v = (unsigned *)((char *)m + dims[i].off);
            const ImportKv **slot = (const ImportKv **)((char *)m + dims[i].kv_off);
            *st = u32(r, kv, dims[i].lo, dims[i].hi, v, slot, e);
            if (!*st) import_src(r, dims[i].f, kv);
            if (!*st) *st = import_note(r, kv, 0, e, "model %s %u", dims[i].what, *v);
            return 1;
        }
    for (size_t i = 0; i < sizeof unplanned / sizeof *unplanned; i++)
        if (!strcmp(a, unplanned[i][0])) return *st = import_note(r, kv, 1, e, "ignored: %s", unplanned[i][1]), 1;
    if (!strcmp(a, "--moe-layer-freq")) {
        *st = parse_freq(r, kv, m, e);
        if (!*st) m->freq_kv = kv, import_src(r, IF_DENSE, kv);
        if (!*st) *st = import_note(r, kv, 0, e, "model dense_layers %u (the first ones)", m->dense);
    } else if (!strcmp(a, "--moe-router-score-function")) {
        if (strcmp(kv->val, "softmax") && strcmp(kv->val, "sigmoid"))
            return *st = err_set(e, ST_DATA, "%s:%d: %s: '%s': the planner's routers are softmax and sigmoid", r->path,
                                 kv->line, kv->key, kv->val),
                   1;
        m->sigmoid = !strcmp(kv->val, "sigmoid"), m->score_kv = kv, import_src(r, IF_ROUTER, kv);
        *st = import_note(r, kv, 0, e, "model router %s", kv->val);
    } else if (!strcmp(a, "--moe-router-enable-expert-bias")) {
        m->expert_bias = switch_on(kv), m->bias_kv = kv;
        *st = import_note(r, kv, 0, e, "model router: %s", m->expert_bias ? "expert bias (sigmoid)" : "no expert bias");
    } else if (!strcmp(a, "--multi-latent-attention")) {
        m->mla = switch_on(kv), m->mla_kv = kv;
        *st = import_note(r, kv, 0, e, m->mla ? "model latent attention (MLA dimensions)" : "model standard attention");
    } else if (!strcmp(a, "--expert-model-parallel-size") || !strcmp(a, "--expert-tensor-parallel-size")) {
        int etp = strstr(a, "tensor") != NULL;
        *st = u32(r, kv, 1, 1u << 20, etp ? &m->etp : &m->ep, etp ? &m->etp_kv : &m->ep_kv, e);
    } else if (!strcmp(a, "--moe-token-dispatcher-type")) {
        m->dispatcher = kv->val, m->dispatcher_kv = kv;
    } else if (!strcmp(a, "--moe-flex-dispatcher-backend")) {
        m->backend = kv->val, m->backend_kv = kv;
    } else if (!strcmp(a, "--moe-enable-deepep")) {
        if (switch_on(kv))
            m->backend = "deepep", m->backend_kv = kv;
        else
            *st = import_note(r, kv, 1, e, "ignored: false");
    } else if (!strcmp(a, "--moe-grouped-gemm")) {
        m->grouped_gemm = switch_on(kv), m->grouped_kv = kv;
    } else if (!strcmp(a, "--use-transformer-engine-op-fuser")) {
        m->fuser = switch_on(kv), m->fuser_kv = kv;
    } else if (!strcmp(a, "--overlap-moe-expert-parallel-comm")) {
        m->overlap_kv = kv;
    } else if (!strcmp(a, "--moe-deepep-num-sms")) {
        m->sms_kv = kv;
    } else if (!strcmp(a, "--moe-expert-capacity-factor")) {
        m->capacity_kv = kv;
    } else if (!strcmp(a, "--recompute-modules")) {
        m->modules = kv->val, m->modules_kv = kv;
    } else {
        return 0;
    }
    return 1;
}

/* ---- after the last setting ---------------------------------------------------------------------------- */

/* Rewrite the note a setting got when read (its meaning known only now). */
static Status renote(ImportResult *r, const ImportKv *kv, const char *why, Err *e)
{
    for (size_t i = r->nnotes; i-- > 0;) {
        ImportNote *n = &r->notes[i];
        if (n->line != kv->line || strcmp(n->key, kv->key)) continue;
        n->ignored = 1;
        snprintf(n->mapped, sizeof n->mapped, "%s", why);
        return ST_OK;
    }
    return err_set(e, ST_SOFTWARE, "%s:%d: %s: its note is missing", r->path, kv->line, kv->key);
}

static Status flag_u(ImportResult *r, const char *flag, unsigned v, Err *e)
{
    char s[16];
    snprintf(s, sizeof s, "%u", v);
    return import_flag(r, flag, s, e);
}

/* "FILE:LINE: KEY VALUE" of a setting, or of the default it stands for ("FILE: --moe-router-topk 2 (the default)"). */
static Status bad(const ImportResult *r, const ImportKv *kv, const char *arg, unsigned v, Err *e, const char *why)
{
    if (kv) return err_set(e, ST_DATA, "%s:%d: %s %s: %s", r->path, kv->line, kv->key, kv->val, why);
    return err_set(e, ST_DATA, "%s: %s %u (Megatron's default): %s", r->path, arg, v, why);
}

static Status finish_dispatcher(ImportResult *r, const ImportMoe *m, Err *e)
{
    const char *d = m->dispatcher ? m->dispatcher : "allgather", *to = NULL;
    const ImportKv *kv = m->dispatcher_kv ? m->dispatcher_kv : m->experts_kv;
    if (!strcmp(d, "alltoall")) {
        to = "alltoall";
    } else if (!strcmp(d, "flex")) {
        const char *b = m->backend ? m->backend : "deepep";
        if (strcmp(b, "deepep") && strcmp(b, "hybridep"))
            return err_set(e, ST_DATA, "%s:%d: %s %s: the flex dispatcher's deepep and hybridep are modelled", r->path,
                           m->backend_kv->line, m->backend_kv->key, b);
        to = b;
        if (m->backend_kv) TRY(import_note(r, m->backend_kv, 0, e, "--moe-dispatcher %s", to));
    } else {
        return err_set(e, ST_DATA, "%s:%d: %s %s%s: the planner's dispatchers are alltoall and flex (deepep, hybridep)",
                       r->path, kv->line, m->dispatcher_kv ? kv->key : "--moe-token-dispatcher-type", d,
                       m->dispatcher_kv ? "" : " (Megatron's default when not given)");
    }
    if (m->dispatcher_kv) TRY(import_note(r, m->dispatcher_kv, 0, e, "--moe-dispatcher %s", to));
    if (m->backend_kv && strcmp(d, "flex"))
        TRY(import_note(r, m->backend_kv, 1, e, "ignored: not the flex dispatcher"));
    return import_flag(r, "--moe-dispatcher", to, e);
}

/* --recompute-modules under --recompute-granularity selective (Megatron reads the list there only; core_attn
 * is selective recomputation itself, and the default list). */
Status import_moe_modules(ImportResult *r, const ImportMoe *m, const char *rc_gran, int *selective_done, Err *e)
{
    *selective_done = 0;
    if (!m->modules_kv) return ST_OK;
    if (!rc_gran || strcmp(rc_gran, "selective"))
        return import_note(r, m->modules_kv, 1, e,
                           "ignored: Megatron reads it under --recompute-granularity selective");
    char list[IMPORT_VAL_MAX], *p;
    snprintf(list, sizeof list, "%s", m->modules);
    for (p = list; *p; p++)
        if (*p == ' ') *p = ',';
    unsigned mods;
    size_t at, len;
    if (recompute_mods_parse(list, &mods, &at, &len))
        return err_set(e, ST_DATA, "%s:%d: %s: '%.*s' is not a module the planner recomputes (%s%s)", r->path,
                       m->modules_kv->line, m->modules_kv->key, (int)len, list + at,
                       "mla_up_proj, moe_act, layernorm, ", "core_attn, mlp, moe, shared_experts");
    if (mods == RECOMPUTE_MOD_CORE_ATTN) return import_note(r, m->modules_kv, 0, e, "--recompute selective");
    recompute_mods_format(mods, list, sizeof list);
    *selective_done = 1;
    TRY(import_flag(r, "--recompute-modules", list, e));
    return import_note(r, m->modules_kv, 0, e, "--recompute-modules %s (core_attn: selective)", list);
}

/* The run options of a model with experts: EP, ETP, the dispatcher, grouped GEMMs, capacity. */
static Status finish_run(ImportResult *r, const ImportMoe *m, Err *e)
{
    if (m->ep_kv && m->experts % m->ep)
        return err_set(e, ST_DATA, "%s:%d: %s %u does not divide --num-experts %u (line %d)", r->path, m->ep_kv->line,
                       m->ep_kv->key, m->ep, m->experts, m->experts_kv->line);
    if (!m->grouped_gemm)
        return bad(r, m->grouped_kv ? m->grouped_kv : m->experts_kv, NULL, 0, e,
                   m->grouped_kv ? "Megatron's SequentialMLP (a loop over the local experts) is not modelled: the "
                                   "stacks' expert_host_ops are Transformer Engine's GroupedLinear (--moe-grouped-gemm)"
                                 : "without --moe-grouped-gemm Megatron runs SequentialMLP (a loop over the local "
                                   "experts), which is not modelled: the stacks' expert_host_ops are Transformer "
                                   "Engine's GroupedLinear");
    if (m->grouped_kv) TRY(import_note(r, m->grouped_kv, 0, e, "the planner's grouped expert GEMMs"));
    TRY(finish_dispatcher(r, m, e));
    if (m->overlap_kv && switch_on(m->overlap_kv)) { /* one micro-batch's all-to-alls behind another's compute */
        TRY(import_flag(r, "--overlap-ep", "1", e));
        TRY(import_note(r, m->overlap_kv, 0, e, "--overlap-ep 1"));
    } else if (m->overlap_kv) {
        TRY(import_note(r, m->overlap_kv, 1, e, "ignored: false (the stack's)"));
    }
    if (m->sms_kv) { /* the SMs DeepEP's kernels take: --ep-comm-sms */
        unsigned n;
        TRY(import_u32(r, m->sms_kv, 1, 1024, &n, e));
        TRY(flag_u(r, "--ep-comm-sms", n, e));
        TRY(import_note(r, m->sms_kv, 0, e, "--ep-comm-sms %u", n));
    }
    if (m->capacity_kv) {
        double f;
        Err ne;
        if (num_parse_double(m->capacity_kv->val, NUM_FINITE_ONLY, &f, &ne) || !(f > 0 && f <= 64))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not a capacity factor in (0, 64]", r->path,
                           m->capacity_kv->line, m->capacity_kv->key, m->capacity_kv->val);
        TRY(import_flag(r, "--moe-capacity", m->capacity_kv->val, e));
        TRY(import_note(r, m->capacity_kv, 0, e, "--moe-capacity %s (token dropping)", m->capacity_kv->val));
    }
    return ST_OK;
}

/* --use-transformer-engine-op-fuser on a model with experts: --moe-fused-mlp where Megatron-Core builds the fused
 * ops, refused where it asserts they are not supported (core_v0.18.0 experts.py _is_fused_impl_supported: no expert
 * tensor parallelism, TE's GroupedLinear, SwiGLU, quick-GeGLU or weighted squared ReLU; the offloading check is
 * map_features.c's). s: the file's model, NULL when --model gives it (the planner checks the flag against it). */
static Status finish_fuser(ImportResult *r, const ImportMoe *m, const ModelSpec *s, Err *e)
{
    const ImportKv *kv = m->fuser_kv;
    if (!kv) return ST_OK;
    if (!m->fuser) return import_note(r, kv, 1, e, "ignored: false");
    const char *on = kv->val[0] ? " " : "", *why = NULL;
    if (m->etp_kv && m->etp > 1)
        why = "with expert tensor parallelism (--expert-tensor-parallel-size above 1): Megatron-Core's fused expert "
              "ops take none (core_v0.18.0 experts.py asserts it)";
    else if (s && s->mlp != MLP_SWIGLU)
        why = "GeLU experts (no --swiglu): Megatron-Core's fused expert ops run SwiGLU, quick-GeGLU or a weighted "
              "squared ReLU only (core_v0.18.0 experts.py asserts it)";
    if (why) return err_set(e, ST_DATA, "%s:%d: %s%s%s: %s", r->path, kv->line, kv->key, on, kv->val, why);
    TRY(import_flag(r, "--moe-fused-mlp", NULL, e));
    return import_note(r, kv, 0, e, "--moe-fused-mlp (TE's fused FC1, activation and FC2 of the experts)");
}

/* The model's expert fields from the settings and Megatron's defaults. */
static Status finish_experts(ImportResult *r, const ImportMoe *m, ModelSpec *s, unsigned layers, unsigned ffn, Err *e)
{
    unsigned topk = m->topk_kv ? m->topk : 2, effn = m->ffn_kv ? m->ffn : ffn;
    if (topk > m->experts)
        return bad(r, m->topk_kv, "--moe-router-topk", topk, e, "more experts per token than --num-experts");
    if (m->shared_kv && m->shared % effn)
        return bad(r, m->shared_kv, NULL, 0, e,
                   "not a multiple of the expert FFN width: the planner's shared experts are whole experts of it");
    if (m->freq_kv && m->freq_layers && m->freq_layers != layers)
        return bad(r, m->freq_kv, NULL, 0, e, "the pattern's length is not --num-layers");
    if (m->freq_kv && m->dense >= layers) return bad(r, m->freq_kv, NULL, 0, e, "no MoE layer");
    if (!m->groups_kv != !m->group_topk_kv) {
        const ImportKv *kv = m->groups_kv ? m->groups_kv : m->group_topk_kv;
        return bad(r, kv, NULL, 0, e, "--moe-router-num-groups and --moe-router-group-topk go together");
    }
    if (m->groups_kv &&
        (m->experts % m->groups || m->group_topk > m->groups || topk > m->group_topk * (m->experts / m->groups)))
        return bad(r, m->groups_kv, NULL, 0, e,
                   "the groups must divide --num-experts and hold --moe-router-topk experts in "
                   "--moe-router-group-topk of them");
    if (m->expert_bias && !m->sigmoid)
        return bad(r, m->bias_kv, NULL, 0, e,
                   "an expert bias on softmax scores: the planner's routers are softmax, or sigmoid with an expert "
                   "bias (--moe-router-score-function sigmoid)");
    s->experts = m->experts, s->experts_per_token = topk, s->expert_ffn = effn;
    s->shared_experts = m->shared_kv ? m->shared / effn : 0;
    s->dense_layers = m->dense;
    s->router = m->sigmoid ? ROUTER_SIGMOID : ROUTER_SOFTMAX;
    s->router_groups = m->groups_kv ? m->groups : 0, s->router_group_topk = m->groups_kv ? m->group_topk : 0;
    if (!m->ffn_kv) r->src[IF_EXPERT_FFN] = r->src[IF_FFN];
    return ST_OK;
}

Status import_moe_finish(ImportResult *r, const ImportMoe *m, ModelSpec *s, unsigned layers, unsigned ffn, Err *e)
{
    if (m->ep_kv) {
        TRY(flag_u(r, "--ep", m->ep, e));
        TRY(import_note(r, m->ep_kv, 0, e, "--ep %u", m->ep));
    }
    if (m->etp_kv) {
        TRY(flag_u(r, "--etp", m->etp, e));
        TRY(import_note(r, m->etp_kv, 0, e, "--etp %u", m->etp));
    }
    const ImportKv *arch = m->experts_kv ? m->experts_kv : m->mla ? m->mla_kv : m->mtp_kv && m->mtp ? m->mtp_kv : NULL;
    if (arch && !s)
        return bad(r, arch, NULL, 0, e,
                   "the file gives no model dimensions for it (--num-layers, --hidden-size, "
                   "--num-attention-heads): give them, or --model and leave the architecture out");
    if (!m->experts_kv) { /* a dense model: its expert settings stand for nothing (Megatron ignores them too) */
        const ImportKv *noted[] = {m->topk_kv,   m->ffn_kv,        m->shared_kv, m->freq_kv,
                                   m->groups_kv, m->group_topk_kv, m->score_kv,  m->bias_kv};
        const ImportKv *run[] = {m->dispatcher_kv, m->backend_kv, m->grouped_kv,
                                 m->capacity_kv,   m->overlap_kv, m->sms_kv};
        for (size_t i = 0; i < sizeof noted / sizeof *noted; i++)
            if (noted[i]) TRY(renote(r, noted[i], "ignored: no --num-experts (a dense model)", e));
        for (size_t i = 0; i < sizeof run / sizeof *run; i++)
            if (run[i]) TRY(import_note(r, run[i], 1, e, "ignored: no --num-experts (a dense model)"));
        if (m->fuser_kv && s) /* core_v0.18.0 reads it in the grouped experts only; core_v0.19.0's dense TEFusedMLP
                                 is not planned */
            TRY(import_note(r, m->fuser_kv, 1, e,
                            "ignored: no --num-experts (a dense model; the planner's fused MLP is the experts')"));
        else
            TRY(finish_fuser(r, m, NULL, e)); /* the model from --model: the planner checks it */
    } else {
        if (s) TRY(finish_experts(r, m, s, layers, ffn, e));
        TRY(finish_run(r, m, e));
        TRY(finish_fuser(r, m, s, e));
    }
    if (!m->mla) {
        const ImportKv *noted[] = {m->q_lora_kv, m->kv_lora_kv, m->qk_head_kv, m->qk_pos_kv, m->v_head_kv};
        for (size_t i = 0; i < sizeof noted / sizeof *noted; i++)
            if (noted[i]) TRY(renote(r, noted[i], "ignored: no --multi-latent-attention", e));
    }
    if (s && m->mla) {
        s->q_lora_rank = m->q_lora_kv ? m->q_lora : 0;
        s->kv_lora_rank = m->kv_lora_kv ? m->kv_lora : 32;
        s->qk_nope_head_dim = m->qk_head_kv ? m->qk_head : 128;
        s->qk_rope_head_dim = m->qk_pos_kv ? m->qk_pos : 64;
        s->v_head_dim = m->v_head_kv ? m->v_head : 128;
        s->head_dim = s->qk_nope_head_dim + s->qk_rope_head_dim;
        s->kv_heads = s->heads;
        s->qk_norm = 0; /* --qk-layernorm under MLA: the latents' norms, part of the MLA terms */
        r->src[IF_HEAD_DIM] = r->src[IF_QK_NOPE];
    }
    if (s) s->mtp_layers = m->mtp_kv ? m->mtp : 0;
    return ST_OK;
}
