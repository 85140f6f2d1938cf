/* import/read_yaml.c — a YAML file (Megatron-LM's model_config.yaml, a Megatron-Bridge ConfigContainer)
 * through libyaml's document loader, flattened to dotted keys: MODEL_ARGS.--num-layers,
 * model.tensor_model_parallel_size. A sequence of scalars becomes one comma-separated value; mappings
 * inside sequences are not settings fp8plan reads (their keys are kept, indexed, for --explain). */
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "import/import.h"

enum { YAML_DEPTH_MAX = 16 };

static Status walk(yaml_document_t *doc, yaml_node_t *node, char *key, size_t klen, int depth, const char *path,
                   ImportKvList *out, Err *e)
{
    int line = (int)node->start_mark.line + 1;
    if (depth > YAML_DEPTH_MAX)
        return err_set(e, ST_DATA, "%s:%d: %s: nested deeper than %d levels", path, line, key, YAML_DEPTH_MAX);
    if (node->type == YAML_SCALAR_NODE) {
        if (node->data.scalar.length >= IMPORT_VAL_MAX)
            return err_set(e, ST_DATA, "%s:%d: %s: a value of %zu bytes (at most %d)", path, line, key,
                           node->data.scalar.length, IMPORT_VAL_MAX - 1);
        return import_kv_add(out, line, key, (const char *)node->data.scalar.value, e);
    }
    if (node->type == YAML_SEQUENCE_NODE) {
        char val[IMPORT_VAL_MAX] = "";
        size_t n = 0;
        int i = 0;
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++, i++) {
            yaml_node_t *c = yaml_document_get_node(doc, *it);
            if (!c) continue;
            if (c->type != YAML_SCALAR_NODE) { /* a list of mappings: each under key.i */
                int k = snprintf(key + klen, IMPORT_KEY_MAX - klen, ".%d", i);
                if (k < 0 || klen + (size_t)k >= IMPORT_KEY_MAX)
                    return err_set(e, ST_DATA, "%s:%d: a key path longer than %d bytes", path, line,
                                   IMPORT_KEY_MAX - 1);
                Status st = walk(doc, c, key, klen + (size_t)k, depth + 1, path, out, e);
                key[klen] = '\0';
                if (st) return st;
                continue;
            }
            int k = snprintf(val + n, sizeof val - n, "%s%s", n ? "," : "", (const char *)c->data.scalar.value);
            if (k < 0 || n + (size_t)k >= sizeof val)
                return err_set(e, ST_DATA, "%s:%d: %s: a list longer than %d bytes", path, line, key,
                               IMPORT_VAL_MAX - 1);
            n += (size_t)k;
        }
        return import_kv_add(out, line, key, val, e);
    }
    if (node->type != YAML_MAPPING_NODE) return ST_OK;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key), *v = yaml_document_get_node(doc, p->value);
        if (!k || !v) continue;
        if (k->type != YAML_SCALAR_NODE)
            return err_set(e, ST_DATA, "%s:%d: a key that is not a plain name", path, (int)k->start_mark.line + 1);
        int n =
            snprintf(key + klen, IMPORT_KEY_MAX - klen, "%s%s", klen ? "." : "", (const char *)k->data.scalar.value);
        if (n < 0 || klen + (size_t)n >= IMPORT_KEY_MAX)
            return err_set(e, ST_DATA, "%s:%d: a key path longer than %d bytes", path, (int)k->start_mark.line + 1,
                           IMPORT_KEY_MAX - 1);
        Status st = walk(doc, v, key, klen + (size_t)n, depth + 1, path, out, e);
        key[klen] = '\0';
        if (st) return st;
    }
    return ST_OK;
}

Status import_read_yaml(const char *path, const char *text, size_t len, ImportKvList *out, Err *e)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return err_set(e, ST_NOMEM, "out of memory reading %s", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        Status st = err_set(e, ST_DATA, "%s:%zu: not YAML: %s%s%s", path, parser.problem_mark.line + 1,
                            parser.problem ? parser.problem : "unreadable", parser.context ? " " : "",
                            parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return st;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    Status st = ST_OK;
    char key[IMPORT_KEY_MAX] = "";
    if (!root || root->type != YAML_MAPPING_NODE)
        st = err_set(e, ST_DATA, "%s: %s, not a mapping of settings", path, root ? "a YAML scalar or list" : "empty");
    else
        st = walk(&doc, root, key, 0, 0, path, out, e);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return st;
}
