/* import/import.h — users' own training configurations in: a Megatron-LM argument list (a launch script
 * or the MODEL_ARGS of a functional-test model_config.yaml), a Megatron-Bridge / NeMo 2 YAML
 * (ConfigContainer) or a torchtitan TOML, read with packaged parsers (libyaml, toml++) and mapped onto
 * fp8plan's own plan flags plus, when the file gives the model's dimensions, a ModelSpec.
 *
 * The mapping is the contract: every setting read is noted with its line and what it became (an fp8plan
 * flag, a model dimension) or why it was ignored; a setting that would change the plan but that the
 * planner does not model is an error naming the file, line and setting, never dropped. */
#ifndef FP8PLAN_IMPORT_IMPORT_H
#define FP8PLAN_IMPORT_IMPORT_H

#include <stddef.h>

#include "planner/spec.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { IMPORT_AUTO = 0, IMPORT_MEGATRON, IMPORT_BRIDGE, IMPORT_TORCHTITAN, IMPORT_FORMAT_COUNT_ } ImportFormat;

const char *import_format_name(ImportFormat f);            /* "megatron", "bridge", "torchtitan" ("auto") */
int import_format_parse(const char *s, ImportFormat *out); /* 0 on success */

enum { IMPORT_KEY_MAX = 96, IMPORT_VAL_MAX = 256, IMPORT_MAP_MAX = 200, IMPORT_MAX_FLAGS = 64 };

/* One setting as the file says it: its 1-based line, the key as written (a flag "--num-layers", a dotted
 * path "parallelism.tensor_parallel_degree", "model.num_layers") and its value as text ("" for a
 * switch given with no value). */
typedef struct {
    int line;
    char key[IMPORT_KEY_MAX];
    char val[IMPORT_VAL_MAX];
} ImportKv;

typedef struct {
    ImportKv *kv;
    size_t n, cap;
} ImportKvList;

Status import_kv_add(ImportKvList *l, int line, const char *key, const char *val, Err *e);
void import_kv_free(ImportKvList *l);

/* The model fields a file can set, for naming where a value came from (ImportResult.src) when a model
 * with experts or latent attention matches no catalog row. */
typedef enum {
    IF_LAYERS = 0,
    IF_HIDDEN,
    IF_FFN,
    IF_HEADS,
    IF_KV_HEADS,
    IF_HEAD_DIM,
    IF_VOCAB,
    IF_SEQ,
    IF_NORM,
    IF_MLP,
    IF_POS,
    IF_TIED,
    IF_BIAS,
    IF_QK_NORM,
    IF_EXPERTS,
    IF_TOPK,
    IF_SHARED,
    IF_EXPERT_FFN,
    IF_DENSE,
    IF_ROUTER,
    IF_GROUPS,
    IF_GROUP_TOPK,
    IF_Q_LORA,
    IF_KV_LORA,
    IF_QK_NOPE,
    IF_QK_ROPE,
    IF_V_HEAD,
    IF_MTP,
    IF_COUNT_
} ImportField;

/* Where a model field was set: the line and key (line 0: the framework's default). */
typedef struct {
    int line;
    char key[IMPORT_KEY_MAX];
} ImportSrc;

/* One line of --explain: the setting, and what it mapped to ("--tp 2", "model hidden 4096") or, when
 * ignored, why ("ignored: logging"). */
typedef struct {
    int line;
    char key[IMPORT_KEY_MAX];
    char val[IMPORT_VAL_MAX];
    char mapped[IMPORT_MAP_MAX];
    int ignored;
} ImportNote;

typedef struct {
    ImportFormat fmt;
    const char *path;
    ImportNote *notes;
    size_t nnotes, capnotes;
    /* the equivalent fp8plan flags, in order: argv[0..argc) point into `text` */
    char *argv[IMPORT_MAX_FLAGS];
    int argc;
    char text[IMPORT_MAX_FLAGS * 48];
    size_t textlen;
    ModelSpec model; /* have_model: the file gave the model's dimensions (name: "custom-<L>l-<H>h") */
    int have_model;
    int model_line;                 /* where the dimensions start (the first of them) */
    char model_name[SPEC_NAME_MAX]; /* a catalog model's name the file names (torchtitan name + flavor) */
    int gbs_per_dp;                 /* no global batch in the file: it is micro-batch x DP (no accumulation) */
    int recipe_line; /* where the recipe comes from (the precision setting), with its key; 0: a default */
    char recipe_key[IMPORT_KEY_MAX];
    unsigned world; /* GPUs the file states (torchrun --nproc_per_node x --nnodes); 0: not said */
    int world_line;
    ImportSrc src[IF_COUNT_]; /* where each of model's fields came from (have_model) */
} ImportResult;

/* Read `path` as `fmt` (IMPORT_AUTO: told from the name and content: *.toml is torchtitan, a YAML
 * with MODEL_ARGS is Megatron-LM's functional test, another YAML is Megatron-Bridge, anything else a
 * Megatron-LM argument list). On failure *r holds nothing to free and *e names the file, line and
 * setting: ST_NOINPUT (cannot read), ST_DATA (the file or a value), ST_USAGE never. */
Status import_read(const char *path, ImportFormat fmt, ImportResult *r, Err *e);
void import_free(ImportResult *r);
/* The same on text already read (`path` names it and tells its kind under IMPORT_AUTO). */
Status import_parse(const char *path, const char *text, size_t len, ImportFormat fmt, ImportResult *r, Err *e);

/* The readers, each filling a flat key/value list (import/read_*.c); `path` only for messages. */
Status import_read_args(const char *path, const char *text, ImportKvList *out, Err *e);
Status import_read_yaml(const char *path, const char *text, size_t len, ImportKvList *out, Err *e);
Status import_read_toml(const char *path, const char *text, size_t len, ImportKvList *out, Err *e);

/* The mappers (import/map_*.c): from the flat list to flags, model and notes. */
Status import_map_megatron(const ImportKvList *kv, const char *prefix, ImportResult *r, Err *e);
/* The Megatron mapper under another naming (Megatron-Bridge's fields): arg_of gives a setting's Megatron-LM
 * argument name ("--num-layers"), rewriting kv->val when the sense differs, or NULL (ignored). */
typedef const char *(*ImportArgOf)(const void *ctx, ImportKv *kv);
Status import_map_megatron_with(const ImportKvList *kv, const char *stack, ImportArgOf arg_of, const void *ctx,
                                ImportResult *r, Err *e);
Status import_map_bridge(const ImportKvList *kv, ImportResult *r, Err *e);
Status import_map_torchtitan(const ImportKvList *kv, ImportResult *r, Err *e);

/* For the mappers (import/import.c). */
Status import_note(ImportResult *r, const ImportKv *kv, int ignored, Err *e, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
Status import_flag(ImportResult *r, const char *flag, const char *val, Err *e); /* val NULL: a switch */
/* A whole number in [lo, hi], or ST_DATA naming path:line and the key. */
Status import_u32(const ImportResult *r, const ImportKv *kv, unsigned lo, unsigned hi, unsigned *out, Err *e);
int import_true(const char *v); /* "", "true", "True", "1", "yes": 1; "false", "False", "0", "no": 0; else -1 */
void import_src(ImportResult *r, ImportField f, const ImportKv *kv);       /* field f was set by kv */
void import_src_arg(ImportResult *r, const char *arg, const ImportKv *kv); /* the field Megatron argument arg sets */
/* ModelSpec's value of field f (an enum as its number), and its models.csv column name. */
uint32_t import_field_value(const ModelSpec *m, ImportField f);
const char *import_field_name(ImportField f);
const char *import_field_text(const ModelSpec *m, ImportField f, char *buf, size_t n); /* "768", "sigmoid", "yes" */

#ifdef __cplusplus
}
#endif
#endif
