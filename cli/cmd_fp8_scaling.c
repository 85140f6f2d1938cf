/* cli/cmd_fp8_scaling.c — `fp8plan scaling`: the delayed-scaling state machine
 * step by step, with where small and large values land at each step's scale. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "catalog/csv_column.h"
#include "fp8/delayed.h"
#include "reports/scaling_report.h"
#include "reports/html_fp8.h"
#include "util/fileio.h"
#include "util/num.h"

static const char HELP_HEAD[] =
    "usage: fp8plan scaling --history N --algo max|most_recent [--margin M] [--format e4m3|e5m2]\n"
    "                       [--trace FILE] [--format table|csv|json|html] [-o FILE]\n"
    "\n"
    "Run Transformer Engine's delayed scaling for one tensor over a sequence of observed\n"
    "amax values: one per line on stdin (nan and inf allowed), or the 'amax' column of a\n"
    "CSV file with a header row (--trace FILE).\n"
    "\n";

static const char HELP_TAIL[] = "\n"
                                "Each step casts with the scale computed at the end of the previous step (1 at step\n"
                                "1), records its amax, computes the next scale from the window *including* this\n"
                                "amax, and then rotates the window (TE's order). When the window's amax is 0, Inf or\n"
                                "NaN the previous scale is kept; when fmax/amax overflows fp32 the scale is FLT_MAX.\n"
                                "\n"
                                "Columns, per step (magnitudes in the tensor's own units, at this step's scale S):\n"
                                "  amax, scale (S, the scale this step cast with), cast (ok, or 'saturates' when\n"
                                "  amax*S is beyond the format's range), next scale, window amax, update (ok, kept:\n"
                                "  zero|inf|nan, or tiny: FLT_MAX), flush <= ((min subnormal/2)/S: at or below it a\n"
                                "  value becomes 0), min sub < (min subnormal/S: below it a value is under the grid\n"
                                "  and becomes 0 or the minimum subnormal), saturates > (fmax/S: above it a value is\n"
                                "  clipped to fmax). Round-to-nearest-even decides the ties.\n"
                                "\n"
                                "example: printf '1\\n640\\n2\\n' | fp8plan scaling --history 4 --algo max\n"
                                "  step 3 casts with scale 448/640 = 0.7: values up to ~0.00140 flush to zero and\n"
                                "  values up to ~0.00279 become the minimum subnormal (the seed's worked example).\n"
                                "\n"
                                "exit status: 0 ok, 64 bad option, 65 a bad amax (named by line or row), 66 no file.\n";

typedef struct {
    float *v;
    size_t n, cap;
} Amaxes;

static Status push(Amaxes *a, float v, Err *e)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        float *nv = realloc(a->v, cap * sizeof *nv);
        if (!nv) return err_set(e, ST_NOMEM, "out of memory reading amax values");
        a->v = nv, a->cap = cap;
    }
    a->v[a->n++] = v;
    return ST_OK;
}

/* an amax: a number, nan or inf, not negative */
static Status parse_amax(const char *s, float *out, Err *e)
{
    Status st = fp8cli_parse_f32(s, 1, out, e);
    if (st) return ST_DATA;
    if (*out < 0) return err_set(e, ST_DATA, "amax '%s' is negative", s);
    return ST_OK;
}

static Status stdin_line(void *ctx, unsigned long lineno, const char *line, Err *e)
{
    float v;
    Err sub;
    if (parse_amax(line, &v, &sub)) return err_set(e, ST_DATA, "stdin:%lu: %s", lineno, sub.msg);
    return push(ctx, v, e);
}

/* ---- CSV trace ------------------------------------------------------------------------ */

typedef struct {
    const char *path;
    Amaxes *out;
} TraceCtx;

/* One cell of the 'amax' column (catalog/csv_column.h streams it). */
static Status trace_amax(void *ctx, unsigned long row, const char *s, size_t len, Err *e)
{
    TraceCtx *t = ctx;
    char cell[128];
    size_t n = len < sizeof cell - 1 ? len : sizeof cell - 1;
    memcpy(cell, s, n);
    cell[n] = '\0';
    num_trim(cell);
    float v;
    Err sub;
    if (len >= sizeof cell - 1 || parse_amax(cell, &v, &sub))
        return err_set(e, ST_DATA, "%s:%lu: column amax: %s", t->path, row,
                       len >= sizeof cell - 1 ? "value too long" : sub.msg);
    return push(t->out, v, e);
}

static Status read_trace(const char *path, Amaxes *out, Err *e)
{
    char *text;
    size_t len;
    Status st = file_read_text(path, FILE_READ_MAX, &text, &len, e);
    if (st) return st;
    TraceCtx t = {path, out};
    unsigned long rows;
    st = csv_column_each(text, len, path, "amax", trace_amax, &t, &rows, e);
    free(text);
    if (st) return st;
    if (!rows) return err_set(e, ST_DATA, "%s: empty file; expected a header row with an 'amax' column", path);
    if (!out->n) return err_set(e, ST_DATA, "%s: a header row but no amax values", path);
    return ST_OK;
}

/* ---- the trace ---------------------------------------------------------------------- */

/* What scaling's flags fill. */
typedef struct {
    DelayedCfg cfg;
    const char *trace;
    CliOut out;
    int hist, have_hist, have_algo;
} ScalingArgs;

/* A whole number in [o->lo, o->hi] into an int (util/num.h's message). */
static int read_int(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    if (num_parse_int_range(arg, (long)o->lo, (long)o->hi, t, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    return 0;
}

static int read_algo(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    if (amax_algo_parse(arg, t)) return cli_usage(p->cmd, "--%s: '%s' is not max or most_recent", o->name, arg);
    return 0;
}

/* --format: the FP8 format scaled to, or the table's output format. */
static int read_format(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    ScalingArgs *a = t;
    Err e;
    if (fp8cli_parse_elem(arg, 0, &a->cfg.fmt) && table_format_parse(arg, &a->out.fmt, &e))
        return cli_usage(p->cmd, "--%s: '%s' is not e4m3, e5m2, table, csv, json or html", o->name, arg);
    return 0;
}

static const CliOpt opts[] = {
    {"history", OPT_FN, offsetof(ScalingArgs, hist), 1, 1 << 24, .has_arg = 1, .fn = read_int,
     .mark = CLI_MARK(ScalingArgs, have_hist), .arg = "N",
     .help = "amax history length (TE default 1024; Megatron-Core default 1)"},
    {"algo", OPT_FN, offsetof(ScalingArgs, cfg.algo), .has_arg = 1, .fn = read_algo,
     .mark = CLI_MARK(ScalingArgs, have_algo), .arg = "A",
     .help = "max: the largest amax in the window (fmaxf, NaN ignored);\n"
             "                most_recent: this step's amax"},
    {"margin", OPT_FN, offsetof(ScalingArgs, cfg.margin), -64, 64, .has_arg = 1, .fn = read_int, .arg = "M",
     .help = "scale = fmax / amax / 2^M (default 0)"},
    {"format", OPT_FN, 0, .has_arg = 1, .fn = read_format, .arg = "F",
     .help = "e4m3 (default, fmax 448) or e5m2 (fmax 57344); --format also takes\n"
             "                table|csv|json for the output, so it may be given twice"},
    {"trace", OPT_STR, offsetof(ScalingArgs, trace), .arg = "FILE"},
    {"output", OPT_STR, offsetof(ScalingArgs, out.path), .short_name = 'o'},
    {0},
};

int cmd_scaling(int argc, char **argv)
{
    const char *cmd = "scaling";
    ScalingArgs sa = {.cfg = {DT_E4M3, 0, AMAX_ALGO_MAX, 0}, .out = {TABLE_TEXT, NULL}};
    int prc =
        cli_opts_parse(&(CliParse){.cmd = cmd, .opts = opts, .help = HELP_HEAD, .help_tail = HELP_TAIL, .help_col = 16},
                       argc, argv, &sa);
    if (prc) return prc < 0 ? 0 : prc;
    DelayedCfg cfg = sa.cfg;
    cfg.hist_len = (uint32_t)sa.hist;
    const char *trace = sa.trace;
    CliOut out = sa.out;
    int have_hist = sa.have_hist, have_algo = sa.have_algo;
    Err e;
    if (!have_hist) return cli_usage(cmd, "--history N is required (TE's default is 1024, Megatron-Core's 1)");
    if (!have_algo) return cli_usage(cmd, "--algo max|most_recent is required");
    Amaxes a = {NULL, 0, 0};
    Status st;
    if (trace) {
        st = read_trace(trace, &a, &e);
    } else {
        char *text;
        size_t len;
        st = stream_read_text(stdin, "stdin", &text, &len, &e);
        if (!st) {
            st = fp8cli_each_line(text, len, "stdin", stdin_line, &a, &e);
            free(text);
        }
        if (!st && !a.n) st = err_set(&e, ST_DATA, "stdin: no amax values (one per line expected)");
    }
    Table *t = st ? NULL : scaling_trace_table(&cfg, a.v, a.n, &e);
    free(a.v);
    if (!t) return cli_fail(cmd, &e);
    int rc = cli_emit_charted(cmd, t, &out, html_scaling_page);
    table_free(t);
    return rc;
}
