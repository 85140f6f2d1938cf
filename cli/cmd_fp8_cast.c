/* cli/cmd_fp8_cast.c — `fp8plan cast`: numbers on stdin -> FP8 / E8M0 codes. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "fp8/codec.h"
#include "util/fileio.h"
#include "util/num.h"

static const char HELP_HEAD[] =
    "usage: fp8plan cast [--format e4m3|e5m2|e8m0] [--nosat] [--scale S] [--round ceil|floor]\n"
    "                    [--from f32|f64] [-o FILE]\n"
    "\n"
    "Read one decimal number per line on stdin (blank lines are skipped; nan, inf, -inf\n"
    "are accepted) and print CSV: input,code,decoded.\n"
    "\n";

static const char HELP_TAIL[] =
    "\n"
    "code is the raw byte as 0xHH (sign in bit 7). decoded = value(code) / S, computed in\n"
    "double from the fp32 S and printed with 17 significant digits (with no --scale,\n"
    "decoded is the exact FP8 value). The cast is round-to-nearest-even, bit-exact with\n"
    "NVIDIA's cuda_fp8.h (__nv_cvt_float_to_fp8 / __nv_cvt_double_to_fp8 /\n"
    "__nv_cvt_float_to_e8m0). NaN encodes as 0x7F (0xFF for e8m0) with the input's sign.\n"
    "\n"
    "example: printf '0.001395089319\\n0.001395089435\\n' | fp8plan cast --format e4m3 --scale 0.7\n"
    "  input,code,decoded\n"
    "  0.001395089319,0x00,0\n"
    "  0.001395089435,0x01,0.0027901786189450301\n"
    "\n"
    "exit status: 0 ok, 64 bad option, 65 a line that is not a number (named with its\n"
    "line number), 73/74 output errors.\n";

typedef struct {
    Dtype fmt;
    Fp8Sat sat;
    E8m0Round rnd;
    int f64;
    float scale;
} CastCfg;

/* Every input line, parsed before anything is written. */
typedef struct {
    const char *text; /* points into the input buffer */
    double xd;
    float xf;
} CastIn;

typedef struct {
    CastIn *v;
    size_t n, cap;
} CastList;

static Status collect(void *vctx, unsigned long lineno, const char *line, Err *e)
{
    CastList *l = vctx;
    Err sub;
    CastIn in = {line, 0, 0};
    if (num_parse_double(line, NUM_ALLOW_NONFINITE, &in.xd, &sub) || fp8cli_parse_f32(line, 1, &in.xf, &sub))
        return err_set(e, ST_DATA, "stdin:%lu: %s", lineno, sub.msg);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        CastIn *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return err_set(e, ST_NOMEM, "out of memory at stdin line %lu", lineno);
        l->v = nv, l->cap = cap;
    }
    l->v[l->n++] = in;
    return ST_OK;
}

static void cast_one(const CastCfg *c, const CastIn *in, FILE *out)
{
    uint8_t code;
    if (c->f64) {
        double xs = in->xd * (double)c->scale;
        code = c->fmt == DT_E8M0 ? e8m0_encode_f64(xs, c->rnd, c->sat) : fp8_encode_f64(c->fmt, xs, c->sat);
    } else {
        float xs = in->xf * c->scale;
        code = c->fmt == DT_E8M0 ? e8m0_encode_f32(xs, c->rnd, c->sat) : fp8_encode_f32(c->fmt, xs, c->sat);
    }
    double value = c->fmt == DT_E8M0 ? e8m0_decode(code) : fp8_decode(c->fmt, code);
    double decoded = value / (double)c->scale;
    if (isnan(decoded))
        fprintf(out, "%s,0x%02X,nan\n", in->text, code);
    else if (isinf(decoded))
        fprintf(out, "%s,0x%02X,%s\n", in->text, code, decoded < 0 ? "-inf" : "inf");
    else
        fprintf(out, "%s,0x%02X,%.17g\n", in->text, code, decoded);
}

/* What cast's flags fill. */
typedef struct {
    CastCfg c;
    const char *outpath;
    int nosat, round, round_given, from; /* round: an index of rounds; from: of froms (1: f64) */
} CastArgs;

static const char *const rounds[] = {"ceil", "floor", NULL}, *const froms[] = {"f32", "f64", NULL};

static int read_fmt(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    if (fp8cli_parse_elem(arg, 1, t)) return cli_usage(p->cmd, "--%s: '%s' is not e4m3, e5m2 or e8m0", o->name, arg);
    return 0;
}

static int read_scale(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    float *scale = t;
    if (fp8cli_parse_f32(arg, 0, scale, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (!(*scale > 0) || isinf(*scale))
        return cli_usage(p->cmd, "--%s: '%s' must be positive and within fp32's range", o->name, arg);
    return 0;
}

static const CliOpt opts[] = {
    {"format", OPT_FN, offsetof(CastArgs, c.fmt), .has_arg = 1, .fn = read_fmt, .arg = "F",
     .help = "e4m3 (default; OCP fn: max 448, no Inf), e5m2 (max 57344, IEEE Inf/NaN)\n"
             "                 or e8m0 (MX scale: unsigned powers of two 2^-127..2^127, 0xFF NaN)"},
    {"nosat", OPT_FLAG, offsetof(CastArgs, nosat), .set = 1,
     .help = "out-of-range values become NaN (e4m3) or Inf (e5m2) instead of +-max;\n"
             "                 for e8m0, values past 2^127 rounded up become 0xFF instead of 0xFE"},
    {"scale", OPT_FN, offsetof(CastArgs, c.scale), .has_arg = 1, .fn = read_scale, .arg = "S",
     .help = "multiply each value by S before the cast (TE's quantization scale);\n"
             "                 S > 0, rounded to the nearest fp32 (0.7 is 0.699999988079071)"},
    {"round", OPT_CHOICE, offsetof(CastArgs, round), .words = rounds, .mark = CLI_MARK(CastArgs, round_given),
     .arg = "R",
     .help = "e8m0 only: ceil (default; round up, as cuBLAS/TE scales) or floor\n"
             "                 (toward zero, the OCP MX rule)"},
    {"from", OPT_CHOICE, offsetof(CastArgs, from), .words = froms, .arg = "P",
     .help = "f32 (default): each input is rounded to fp32, the product x*S is\n"
             "                 rounded to fp32 (as TE casts), then RNE-cast once to the format;\n"
             "                 f64: input and x*S in double, then one RNE cast from double"},
    {"output", OPT_STR, offsetof(CastArgs, outpath), .short_name = 'o', .arg = "FILE",
     .help = "write the CSV to FILE (atomically) instead of stdout"},
    {0},
};

int cmd_cast(int argc, char **argv)
{
    const char *cmd = "cast";
    CastArgs a = {.c = {DT_E4M3, FP8_SATFINITE, E8M0_RP, 0, 1.0f}};
    int rc =
        cli_opts_parse(&(CliParse){.cmd = cmd, .opts = opts, .help = HELP_HEAD, .help_tail = HELP_TAIL, .help_col = 17},
                       argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    CastCfg c = a.c;
    if (a.nosat) c.sat = FP8_NOSAT;
    c.rnd = a.round ? E8M0_RZ : E8M0_RP, c.f64 = a.from;
    const char *outpath = a.outpath;
    if (a.round_given && c.fmt != DT_E8M0) return cli_usage(cmd, "--round applies to --format e8m0 only");
    Err e;
    /* read and check every line before writing anything */
    char *text;
    size_t len;
    if (stream_read_text(stdin, "stdin", &text, &len, &e)) return cli_fail(cmd, &e);
    CastList l = {NULL, 0, 0};
    OutFile of;
    if (fp8cli_each_line(text, len, "stdin", collect, &l, &e) || outfile_open(&of, outpath, &e)) {
        rc = cli_fail(cmd, &e);
    } else {
        fputs("input,code,decoded\n", of.f);
        for (size_t i = 0; i < l.n; i++) cast_one(&c, &l.v[i], of.f);
        rc = outfile_commit(&of, &e) ? cli_fail(cmd, &e) : 0;
    }
    free(l.v);
    free(text);
    return rc;
}
