/* import/read_args.c — a Megatron-LM argument list: the flags of a launch script or a file of arguments.
 *
 * Not a shell: words are split at blanks, '...' and "..." quote, a backslash at the end of a line
 * continues it, '#' starts a comment at the start of a word. `NAME=value` words define variables that a
 * later whole word `$NAME` or `${NAME}` takes; any other word with a '$' stays as written (the mapper
 * refuses it where the plan needs the value). Every word starting with "--" is a setting; the next word
 * is its value unless it starts with "--" too. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"

enum { WORD_MAX = IMPORT_VAL_MAX, VARS_MAX = 128 };

typedef struct {
    char name[48];
    char val[WORD_MAX];
} Var;

typedef struct {
    const char *p, *end;
    int line;
} Lexer;

/* The next word into w (its line in *line); 0 at the end. Quotes are removed. */
static int next_word(Lexer *lx, char *w, size_t cap, int *line, int *truncated)
{
    for (;;) {
        while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r' || *lx->p == ';')) lx->p++;
        if (lx->p < lx->end && *lx->p == '\\' && lx->p + 1 < lx->end && lx->p[1] == '\n') {
            lx->p += 2, lx->line++;
            continue;
        }
        if (lx->p < lx->end && *lx->p == '\n') {
            lx->p++, lx->line++;
            continue;
        }
        if (lx->p < lx->end && *lx->p == '#') {
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
            continue;
        }
        break;
    }
    if (lx->p >= lx->end) return 0;
    *line = lx->line;
    size_t n = 0;
    char q = 0;
    *truncated = 0;
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (!q && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';')) break;
        if (!q && c == '\\' && lx->p + 1 < lx->end && lx->p[1] == '\n') break;
        lx->p++;
        if (c == '\n') lx->line++;
        if (q && c == q) {
            q = 0;
            continue;
        }
        if (!q && (c == '"' || c == '\'')) {
            q = c;
            continue;
        }
        if (n + 1 < cap)
            w[n++] = c;
        else
            *truncated = 1;
    }
    w[n] = '\0';
    return 1;
}

static const char *lookup(const Var *v, int nv, const char *w)
{
    char name[48];
    size_t n;
    if (w[0] != '$') return NULL;
    if (w[1] == '{') {
        n = strcspn(w + 2, "}");
        if (w[2 + n] != '}' || w[3 + n] || n >= sizeof name) return NULL;
        memcpy(name, w + 2, n);
    } else {
        n = strlen(w + 1);
        if (n >= sizeof name) return NULL;
        memcpy(name, w + 1, n);
    }
    name[n] = '\0';
    for (int i = nv - 1; i >= 0; i--)
        if (!strcmp(v[i].name, name)) return v[i].val;
    return NULL;
}

static int is_assignment(const char *w, size_t *eq)
{
    if (!(isalpha((unsigned char)w[0]) || w[0] == '_')) return 0;
    size_t i = 1;
    while (isalnum((unsigned char)w[i]) || w[i] == '_') i++;
    return w[i] == '=' ? (*eq = i, 1) : 0;
}

/* Megatron-LM arguments that take a list of names (argparse nargs='*'): the words after them, up to the
 * next flag or a word that is not a name, are one comma-separated value. */
static int is_list_flag(const char *k)
{
    return !strcmp(k, "--recompute-modules") || !strcmp(k, "--offload-modules") || !strcmp(k, "--cuda-graph-scope");
}

static int is_name(const char *w)
{
    if (!*w) return 0;
    for (; *w; w++)
        if (!((*w >= 'a' && *w <= 'z') || *w == '_' || (*w >= '0' && *w <= '9'))) return 0;
    return 1;
}

Status import_read_args(const char *path, const char *text, ImportKvList *out, Err *e)
{
    Lexer lx = {text, text + strlen(text), 1};
    Var *vars = calloc(VARS_MAX, sizeof *vars);
    char *w = malloc(WORD_MAX), *key = malloc(IMPORT_KEY_MAX);
    Status st = ST_OK;
    if (!vars || !w || !key) {
        st = err_set(e, ST_NOMEM, "out of memory reading %s", path);
        goto done;
    }
    int nv = 0, line = 0, have_key = 0, key_line = 0, trunc = 0, list = 0;
    while (!st && next_word(&lx, w, WORD_MAX, &line, &trunc)) {
        if (trunc) {
            st = err_set(e, ST_DATA, "%s:%d: a word of more than %d bytes", path, line, WORD_MAX - 1);
            break;
        }
        size_t eq;
        if (!have_key && is_assignment(w, &eq)) { /* NAME=value (the value of an array "( ..." is not kept) */
            if (nv < VARS_MAX && eq < sizeof vars[0].name && w[eq + 1] != '(') {
                memcpy(vars[nv].name, w, eq);
                vars[nv].name[eq] = '\0';
                const char *v = lookup(vars, nv, w + eq + 1);
                snprintf(vars[nv].val, sizeof vars[nv].val, "%s", v ? v : w + eq + 1);
                nv++;
            }
            continue;
        }
        const char *sub = lookup(vars, nv, w);
        if (sub) snprintf(w, WORD_MAX, "%s", sub);
        if (!strncmp(w, "--", 2) && w[2]) {
            list = 0;
            if (have_key) st = import_kv_add(out, key_line, key, NULL, e);
            if (strlen(w) >= IMPORT_KEY_MAX) {
                st = err_set(e, ST_DATA, "%s:%d: a flag of more than %d bytes", path, line, IMPORT_KEY_MAX - 1);
                break;
            }
            char *v = strchr(w, '=');
            char *sp = strchr(w, ' ');
            if (sp && (!v || sp < v)) v = sp; /* a quoted "--flag value" (an array element of a script) */
            if (v) {                          /* --flag=value */
                *v = '\0';
                if (!st) st = import_kv_add(out, line, w, v + 1, e);
                have_key = 0;
            } else {
                snprintf(key, IMPORT_KEY_MAX, "%s", w);
                have_key = 1, key_line = line;
            }
        } else if (have_key) {
            st = import_kv_add(out, key_line, key, w, e);
            have_key = 0;
            list = is_list_flag(key);
        } else if (list && is_name(w)) { /* the next name of a list (nargs='*'): "moe_act,layernorm" */
            ImportKv *k = &out->kv[out->n - 1];
            size_t n = strlen(k->val);
            if (n + 1 + strlen(w) >= sizeof k->val) {
                st = err_set(e, ST_DATA, "%s:%d: %s: a list longer than %d bytes", path, k->line, k->key,
                             IMPORT_VAL_MAX - 1);
                break;
            }
            snprintf(k->val + n, sizeof k->val - n, ",%s", w);
        }
        /* other words (the program, torchrun's positional arguments, ")") are not settings */
    }
    if (!st && have_key) st = import_kv_add(out, key_line, key, NULL, e);
    if (!st && out->n == 0)
        st = err_set(e, ST_DATA, "%s: no Megatron-LM argument (--name value) in the file (--from-format?)", path);
done:
    free(vars);
    free(w);
    free(key);
    return st;
}
