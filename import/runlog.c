/* import/runlog.c — training logs and golden values to steps and memory peaks (import/runlog.h). */
#include "import/runlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"
#include "util/fileio.h"
#include "util/num.h"

static const char *const kind_names[RUNLOG_KIND_COUNT_] = {"megatron log", "torchtitan log", "megatron golden values"};

const char *runlog_kind_name(RunLogKind k) { return (unsigned)k < RUNLOG_KIND_COUNT_ ? kind_names[k] : "?"; }

static Status add_step(RunLog *l, const char *path, RunLogStep s, Err *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        if (cap > ((size_t)1 << 24)) return err_set(e, ST_DATA, "%s: more than 2^24 logged steps", path);
        RunLogStep *p = realloc(l->steps, cap * sizeof *p);
        if (!p) return err_set(e, ST_NOMEM, "out of memory reading %s", path);
        l->steps = p, l->cap = cap;
    }
    l->steps[l->n++] = s;
    return ST_OK;
}

/* The number after `label` in line (up to a blank, '|', '(' or the end; commas dropped: "10,050"), or NaN
 * when the label is absent. ST_DATA naming the file, line and label when the figure does not read. */
static Status figure(const char *path, int lineno, const char *line, const char *label, double *out, Err *e)
{
    *out = NAN;
    const char *p = strstr(line, label);
    if (!p) return ST_OK;
    p += strlen(label);
    while (*p == ' ') p++;
    char num[64];
    size_t n = 0;
    for (; *p && !strchr(" |(%/\t", *p); p++) {
        if (*p == ',') continue;
        if (n + 1 >= sizeof num)
            return err_set(e, ST_DATA, "%s:%d: %s: a figure of more than 62 characters", path, lineno, label);
        num[n++] = *p;
    }
    num[n] = '\0';
    if (n >= 3 && !strcmp(num + n - 3, "GiB")) num[n - 3] = '\0';
    Err ne;
    if (num_parse_double(num, NUM_FINITE_ONLY, out, &ne) || *out < 0)
        return err_set(e, ST_DATA, "%s:%d: '%s' %s", path, lineno, label, *out < 0 ? "is negative" : ne.msg);
    return ST_OK;
}

/* Remove ANSI colour sequences (torchtitan colours its metrics) in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (*r == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !(*r >= '@' && *r <= '~')) r++;
            if (*r) r++;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

static Status megatron_line(RunLog *l, const char *path, int ln, const char *s, Err *e)
{
    Status st;
    double v;
    if (strstr(s, "elapsed time per iteration (ms):")) {
        const char *it = strstr(s, "iteration ");
        RunLogStep step = {0, NAN, NAN, NAN, ln};
        double ms;
        if (!it || (st = figure(path, ln, it, "iteration ", &v, e))) return it ? st : ST_OK;
        if (isnan(v) || v > UINT32_MAX || v != floor(v))
            return err_set(e, ST_DATA, "%s:%d: the iteration number does not read", path, ln);
        step.step = (uint32_t)v;
        if ((st = figure(path, ln, s, "elapsed time per iteration (ms):", &ms, e))) return st;
        if ((st = figure(path, ln, s, "throughput per GPU (TFLOP/s/GPU):", &step.tflops, e))) return st;
        step.step_s = ms / 1000;
        return add_step(l, path, step, e);
    }
    if (strstr(s, "memory (MB)") && strstr(s, "max allocated:")) {
        double a, r;
        if ((st = figure(path, ln, s, "max allocated:", &a, e)) || (st = figure(path, ln, s, "max reserved:", &r, e)))
            return st;
        a *= 1048576.0, r *= 1048576.0; /* MB here is MiB: torch's bytes / 1024^2 */
        if (!isnan(a) && (isnan(l->max_alloc_bytes) || a > l->max_alloc_bytes))
            l->max_alloc_bytes = a, l->alloc_line = ln;
        if (!isnan(r) && (isnan(l->max_reserved_bytes) || r > l->max_reserved_bytes))
            l->max_reserved_bytes = r, l->reserved_line = ln;
    }
    return ST_OK;
}

static Status titan_line(RunLog *l, const char *path, int ln, const char *s, Err *e)
{
    const char *p = strstr(s, "step:");
    if (!p || !strstr(p, "loss:")) return ST_OK;
    Status st;
    double v, gib;
    if ((st = figure(path, ln, p, "step:", &v, e))) return st;
    if (isnan(v) || v > UINT32_MAX || v != floor(v))
        return err_set(e, ST_DATA, "%s:%d: the step number does not read", path, ln);
    RunLogStep step = {(uint32_t)v, NAN, NAN, NAN, ln};
    if ((st = figure(path, ln, p, "tps:", &step.tps, e)) || (st = figure(path, ln, p, "tflops:", &step.tflops, e)) ||
        (st = figure(path, ln, p, "memory:", &gib, e)))
        return st;
    if (!isnan(gib) && (isnan(l->max_reserved_bytes) || gib * 1073741824.0 > l->max_reserved_bytes))
        l->max_reserved_bytes = gib * 1073741824.0, l->reserved_line = ln;
    return add_step(l, path, step, e);
}

static Status golden(RunLog *l, const char *path, const char *text, size_t len, Err *e)
{
    ImportKvList kv = {0};
    Status st = import_read_yaml(path, text, len, &kv, e);
    for (size_t i = 0; !st && i < kv.n; i++) {
        const ImportKv *k = &kv.kv[i];
        const char *dot = strrchr(k->key, '.');
        int time = !strncmp(k->key, "iteration-time.values.", 22),
            peak = !strncmp(k->key, "mem-max-allocated-bytes.values.", 31);
        if ((!time && !peak) || !strcmp(k->val, "nan")) continue;
        Err ne;
        uint64_t stepn;
        double v;
        if (num_parse_u64(dot + 1, &stepn, &ne) || stepn > UINT32_MAX) {
            st = err_set(e, ST_DATA, "%s:%d: %s: the step '%s' is not a number", path, k->line, k->key, dot + 1);
        } else if (num_parse_double(k->val, NUM_FINITE_ONLY, &v, &ne) || v < 0) {
            st = err_set(e, ST_DATA, "%s:%d: %s: '%s' %s", path, k->line, k->key, k->val,
                         v < 0 ? "is negative" : ne.msg);
        } else if (time) {
            st = add_step(l, path, (RunLogStep){(uint32_t)stepn, v, NAN, NAN, k->line}, e);
        } else if (isnan(l->max_alloc_bytes) || v > l->max_alloc_bytes) {
            l->max_alloc_bytes = v, l->alloc_line = k->line;
        }
    }
    import_kv_free(&kv);
    return st;
}

Status runlog_read(const char *path, RunLog *l, Err *e)
{
    memset(l, 0, sizeof *l);
    char *text;
    size_t len;
    Status st = file_read_max(path, (size_t)256 << 20, &text, &len, e);
    if (st) return st;
    st = runlog_parse(path, text, len, l, e);
    free(text);
    return st;
}

Status runlog_parse(const char *path, char *text, size_t len, RunLog *l, Err *e)
{
    memset(l, 0, sizeof *l);
    l->max_alloc_bytes = l->max_reserved_bytes = NAN;
    Status st = ST_OK;
    const char *first = text + strspn(text, " \t\r\n");
    if (memchr(text, '\0', len)) {
        st = err_set(e, ST_DATA, "%s: a NUL byte: not a text log", path);
    } else if (*first == '{') {
        l->kind = RUNLOG_GOLDEN;
        st = golden(l, path, text, len, e);
    } else {
        l->kind = strstr(text, "elapsed time per iteration") ? RUNLOG_MEGATRON : RUNLOG_TORCHTITAN;
        int ln = 0;
        for (char *s = text, *next; !st && s < text + len; s = next) {
            char *nl = memchr(s, '\n', (size_t)(text + len - s));
            next = nl ? nl + 1 : text + len;
            if (nl) *nl = '\0';
            ln++;
            if (l->kind == RUNLOG_MEGATRON)
                st = megatron_line(l, path, ln, s, e);
            else
                strip_ansi(s), st = titan_line(l, path, ln, s, e);
        }
    }
    if (!st && l->n == 0)
        st = err_set(e, ST_DATA,
                     "%s: no iteration lines (Megatron's 'iteration ... elapsed time per iteration (ms)', "
                     "torchtitan's 'step: ... loss: ...' or golden values' iteration-time)",
                     path);
    if (st) runlog_free(l);
    return st;
}

void runlog_free(RunLog *l)
{
    free(l->steps);
    l->steps = NULL;
    l->n = l->cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Status runlog_median_step(const RunLog *l, uint32_t warmup, double *median_s, size_t *used, Err *e)
{
    *used = 0;
    double *t = malloc((l->n ? l->n : 1) * sizeof *t);
    if (!t) return err_set(e, ST_NOMEM, "out of memory");
    size_t n = 0, seen = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (isnan(l->steps[i].step_s)) continue;
        if (seen++ < warmup) continue;
        t[n++] = l->steps[i].step_s;
    }
    if (!n) {
        free(t);
        return err_set(e, ST_DATA, "%zu timed steps, all within the %u warm-up steps skipped (--warmup)", seen, warmup);
    }
    qsort(t, n, sizeof *t, cmp_double);
    *median_s = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    *used = n;
    free(t);
    return ST_OK;
}
