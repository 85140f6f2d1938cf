/* import/import.c — reading a user's configuration file: the format (named or told from the file), the
 * reader, the mapper, and the notes and flags the mappers write. */
#include "import/import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "util/num.h"

static const char *const format_names[IMPORT_FORMAT_COUNT_] = {"auto", "megatron", "bridge", "torchtitan"};

const char *import_format_name(ImportFormat f) { return (unsigned)f < IMPORT_FORMAT_COUNT_ ? format_names[f] : "?"; }

int import_format_parse(const char *s, ImportFormat *out)
{
    for (int i = 0; i < IMPORT_FORMAT_COUNT_; i++)
        if (!strcmp(s, format_names[i])) return *out = (ImportFormat)i, 0;
    return -1;
}

Status import_kv_add(ImportKvList *l, int line, const char *key, const char *val, Err *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        ImportKv *kv = realloc(l->kv, cap * sizeof *kv);
        if (!kv) return err_set(e, ST_NOMEM, "out of memory reading a configuration");
        l->kv = kv, l->cap = cap;
    }
    ImportKv *k = &l->kv[l->n++];
    k->line = line;
    snprintf(k->key, sizeof k->key, "%s", key);
    snprintf(k->val, sizeof k->val, "%s", val ? val : "");
    return ST_OK;
}

void import_kv_free(ImportKvList *l)
{
    free(l->kv);
    memset(l, 0, sizeof *l);
}

Status import_note(ImportResult *r, const ImportKv *kv, int ignored, Err *e, const char *fmt, ...)
{
    if (r->nnotes == r->capnotes) {
        size_t cap = r->capnotes ? 2 * r->capnotes : 64;
        ImportNote *n = realloc(r->notes, cap * sizeof *n);
        if (!n) return err_set(e, ST_NOMEM, "out of memory reading %s", r->path);
        r->notes = n, r->capnotes = cap;
    }
    ImportNote *n = &r->notes[r->nnotes++];
    n->line = kv->line;
    snprintf(n->key, sizeof n->key, "%s", kv->key);
    snprintf(n->val, sizeof n->val, "%s", kv->val);
    n->ignored = ignored;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->mapped, sizeof n->mapped, fmt, ap);
    va_end(ap);
    return ST_OK;
}

static Status put_text(ImportResult *r, const char *s, Err *e)
{
    size_t n = strlen(s) + 1;
    if (r->argc == IMPORT_MAX_FLAGS || r->textlen + n > sizeof r->text)
        return err_set(e, ST_SOFTWARE, "%s: more settings than fp8plan's %d flags hold", r->path, IMPORT_MAX_FLAGS);
    memcpy(r->text + r->textlen, s, n);
    r->argv[r->argc++] = r->text + r->textlen;
    r->textlen += n;
    return ST_OK;
}

Status import_flag(ImportResult *r, const char *flag, const char *val, Err *e)
{
    /* a later setting of the same flag wins, as on a command line: getopt reads them in order */
    Status st = put_text(r, flag, e);
    return st ? st : val ? put_text(r, val, e) : ST_OK;
}

Status import_u32(const ImportResult *r, const ImportKv *kv, unsigned lo, unsigned hi, unsigned *out, Err *e)
{
    uint64_t v;
    Err ne;
    if (num_parse_u64(kv->val, &v, &ne))
        return err_set(e, ST_DATA, "%s:%d: %s: %s", r->path, kv->line, kv->key, ne.msg);
    if (v < lo || v > hi)
        return err_set(e, ST_DATA, "%s:%d: %s: %llu is out of range (%u to %u)", r->path, kv->line, kv->key,
                       (unsigned long long)v, lo, hi);
    *out = (unsigned)v;
    return ST_OK;
}

int import_true(const char *v)
{
    static const char *const yes[] = {"", "true", "True", "TRUE", "1", "yes"};
    static const char *const no[] = {"false", "False", "FALSE", "0", "no"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!strcmp(v, yes[i])) return 1;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!strcmp(v, no[i])) return 0;
    return -1;
}

void import_src(ImportResult *r, ImportField f, const ImportKv *kv)
{
    r->src[f].line = kv->line;
    snprintf(r->src[f].key, sizeof r->src[f].key, "%s", kv->key);
}

/* The arguments that set a model field (for naming it when no catalog row has the model). */
static const struct {
    const char *arg;
    ImportField f;
} model_args[] = {
    {"--num-layers", IF_LAYERS},
    {"--hidden-size", IF_HIDDEN},
    {"--ffn-hidden-size", IF_FFN},
    {"--num-attention-heads", IF_HEADS},
    {"--num-query-groups", IF_KV_HEADS},
    {"--group-query-attention", IF_KV_HEADS},
    {"--kv-channels", IF_HEAD_DIM},
    {"--vocab-size", IF_VOCAB},
    {"--tokenizer-type", IF_VOCAB},
    {"--max-position-embeddings", IF_SEQ},
    {"--normalization", IF_NORM},
    {"--swiglu", IF_MLP},
    {"--position-embedding-type", IF_POS},
    {"--use-rotary-position-embeddings", IF_POS},
    {"--untie-embeddings-and-output-weights", IF_TIED},
    {"--disable-bias-linear", IF_BIAS},
    {"--qk-layernorm", IF_QK_NORM},
};

void import_src_arg(ImportResult *r, const char *arg, const ImportKv *kv)
{
    for (size_t i = 0; i < sizeof model_args / sizeof *model_args; i++)
        if (!strcmp(arg, model_args[i].arg)) import_src(r, model_args[i].f, kv);
}

static const char *const field_names[IF_COUNT_] = {"layers",
                                                   "hidden",
                                                   "ffn_hidden",
                                                   "heads",
                                                   "kv_heads",
                                                   "head_dim",
                                                   "vocab",
                                                   "seq_len",
                                                   "norm",
                                                   "mlp",
                                                   "position",
                                                   "tied_embeddings",
                                                   "linear_bias",
                                                   "qk_norm",
                                                   "experts",
                                                   "experts_per_token",
                                                   "shared_experts",
                                                   "expert_ffn_hidden",
                                                   "dense_layers",
                                                   "router",
                                                   "router_groups",
                                                   "router_group_topk",
                                                   "q_lora_rank",
                                                   "kv_lora_rank",
                                                   "qk_nope_head_dim",
                                                   "qk_rope_head_dim",
                                                   "v_head_dim",
                                                   "mtp_layers"};

const char *import_field_name(ImportField f) { return (unsigned)f < IF_COUNT_ ? field_names[f] : "?"; }

uint32_t import_field_value(const ModelSpec *m, ImportField f)
{
    switch (f) {
    case IF_LAYERS: return m->layers;
    case IF_HIDDEN: return m->hidden;
    case IF_FFN: return m->ffn_hidden;
    case IF_HEADS: return m->heads;
    case IF_KV_HEADS: return m->kv_heads;
    case IF_HEAD_DIM: return m->head_dim;
    case IF_VOCAB: return m->vocab;
    case IF_SEQ: return m->seq_len;
    case IF_NORM: return (uint32_t)m->norm;
    case IF_MLP: return (uint32_t)m->mlp;
    case IF_POS: return (uint32_t)m->pos;
    case IF_TIED: return (uint32_t)m->tied_embeddings;
    case IF_BIAS: return (uint32_t)m->linear_bias;
    case IF_QK_NORM: return (uint32_t)m->qk_norm;
    case IF_EXPERTS: return m->experts;
    case IF_TOPK: return m->experts_per_token;
    case IF_SHARED: return m->shared_experts;
    case IF_EXPERT_FFN: return m->expert_ffn;
    case IF_DENSE: return m->dense_layers;
    case IF_ROUTER: return (uint32_t)m->router;
    case IF_GROUPS: return m->router_groups;
    case IF_GROUP_TOPK: return m->router_group_topk;
    case IF_Q_LORA: return m->q_lora_rank;
    case IF_KV_LORA: return m->kv_lora_rank;
    case IF_QK_NOPE: return m->qk_nope_head_dim;
    case IF_QK_ROPE: return m->qk_rope_head_dim;
    case IF_V_HEAD: return m->v_head_dim;
    case IF_MTP: return m->mtp_layers;
    default: return 0;
    }
}

const char *import_field_text(const ModelSpec *m, ImportField f, char *buf, size_t n)
{
    static const char *const norm[] = {"layernorm", "rmsnorm"}, *const mlp[] = {"gelu", "swiglu"},
                             *const pos[] = {"learned", "rope", "none"},
                             *const router[] = {"none", "softmax", "sigmoid"};
    uint32_t v = import_field_value(m, f);
    const char *t = f == IF_NORM && v < 2                               ? norm[v]
                    : f == IF_MLP && v < 2                              ? mlp[v]
                    : f == IF_POS && v < 3                              ? pos[v]
                    : f == IF_ROUTER && v < 3                           ? router[v]
                    : (f == IF_TIED || f == IF_BIAS || f == IF_QK_NORM) ? (v ? "yes" : "no")
                                                                        : NULL;
    if (t)
        snprintf(buf, n, "%s", t);
    else
        snprintf(buf, n, "%u", v);
    return buf;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int has_key_prefix(const ImportKvList *kv, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < kv->n; i++)
        if (!strncmp(kv->kv[i].key, prefix, n)) return 1;
    return 0;
}

Status import_read(const char *path, ImportFormat fmt, ImportResult *r, Err *e)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    char *text = NULL;
    size_t len = 0;
    Status st = file_read_max(path, (size_t)16 << 20, &text, &len, e);
    if (st) return st;
    st = import_parse(path, text, len, fmt, r, e);
    free(text);
    return st;
}

Status import_parse(const char *path, const char *text, size_t len, ImportFormat fmt, ImportResult *r, Err *e)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (memchr(text, '\0', len)) return err_set(e, ST_DATA, "%s: a NUL byte: not a text configuration file", path);
    int yaml = ends_with(path, ".yaml") || ends_with(path, ".yml");
    int toml = ends_with(path, ".toml");
    ImportKvList kv = {0};
    Status st;
    if (fmt == IMPORT_TORCHTITAN || (fmt == IMPORT_AUTO && toml)) {
        st = import_read_toml(path, text, len, &kv, e);
        fmt = IMPORT_TORCHTITAN;
    } else if (fmt == IMPORT_BRIDGE || (fmt == IMPORT_AUTO && yaml) || (fmt == IMPORT_MEGATRON && yaml)) {
        st = import_read_yaml(path, text, len, &kv, e);
        if (!st && fmt == IMPORT_AUTO) fmt = has_key_prefix(&kv, "MODEL_ARGS.") ? IMPORT_MEGATRON : IMPORT_BRIDGE;
    } else {
        st = import_read_args(path, text, &kv, e);
        fmt = IMPORT_MEGATRON;
        yaml = 0;
    }
    r->fmt = fmt;
    if (!st) {
        if (fmt == IMPORT_TORCHTITAN)
            st = import_map_torchtitan(&kv, r, e);
        else if (fmt == IMPORT_BRIDGE)
            st = import_map_bridge(&kv, r, e);
        else
            st = import_map_megatron(&kv, yaml ? "MODEL_ARGS." : "", r, e);
    }
    import_kv_free(&kv);
    if (st) import_free(r);
    return st;
}

void import_free(ImportResult *r)
{
    free(r->notes);
    r->notes = NULL;
    r->nnotes = r->capnotes = 0;
}
