/* cli/cmd_fp8_formats.c — `fp8plan formats`: FP8 Formats Table 1 and the normal
 * ranges of FP8-LM Table 9, every figure computed from the codecs. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "fp8/codec.h"
#include "fp8/format.h"
#include "util/fileio.h"

static const char HELP[] = "usage: fp8plan formats [--table fp8|ranges] [--format table|csv|json] [-o FILE]\n"
                           "\n"
                           "The number formats of FP8 training, every figure computed by decoding all codes of\n"
                           "fp8plan's own codecs (nothing typed in):\n"
                           "  --table fp8     FP8 Formats for Deep Learning, Table 1: E4M3 and E5M2 bit patterns,\n"
                           "                  bias, Inf/NaN/zero encodings, max/min normal and subnormal, plus the\n"
                           "                  binades covered, grid points per binade and the code census\n"
                           "  --table ranges  FP8-LM Table 9: the normal range of FP32, FP16, BF16, E4M3, E5M2;\n"
                           "                  INT8 is fixed point, its range set by its scale s: [-128 s, 127 s]\n"
                           "With no --table both are printed (text only; CSV and JSON hold one table, so they\n"
                           "need --table).\n"
                           "\n"
                           "Bit patterns read S.EEEE.MMM (sign, exponent, mantissa). E4M3 is the OCP 'fn'\n"
                           "variant: no Inf, NaN only at S.1111.111, which buys a 448 maximum and 18 binades\n"
                           "where an IEEE-style E4M3 would stop at 240 and 17.\n"
                           "\n"
                           "exit status: 0 ok, 64 bad option.\n";

/* "S.1111.110" for an E4M3/E5M2 code */
static void bit_pattern(Dtype fmt, unsigned code, char *buf)
{
    int m = fmt == DT_E4M3 ? 3 : 2, ebits = 7 - m, k = 0;
    buf[k++] = 'S', buf[k++] = '.';
    for (int i = ebits - 1; i >= 0; i--) buf[k++] = (char)('0' + ((code >> (m + i)) & 1));
    buf[k++] = '.';
    for (int i = m - 1; i >= 0; i--) buf[k++] = (char)('0' + ((code >> i) & 1));
    buf[k] = '\0';
}

/* "S.1111.110 = 1.75 * 2^8 = 448" */
static void value_text(Dtype fmt, unsigned code, char *buf, size_t size)
{
    char pat[16];
    bit_pattern(fmt, code, pat);
    double v = fp8_decode(fmt, (uint8_t)code);
    int e;
    double frac = frexp(v, &e) * 2; /* v = frac * 2^(e-1), frac in [1, 2) */
    FormatInfo fi;
    format_info(fmt, &fi, NULL);
    int exp2 = e - 1;
    if (v < fi.min_normal && frac != 1) { /* subnormal: a fraction of the min normal's power, as Table 1 writes it */
        exp2 = 1 - fi.bias;
        frac = v / ldexp(1, exp2);
    }
    if (frac == 1)
        snprintf(buf, size, "%s = 2^%d = %.12g", pat, exp2, v);
    else
        snprintf(buf, size, "%s = %g * 2^%d = %.12g", pat, frac, exp2, v);
}

/* NaN or Inf codes as patterns: one code, or "S.11111.{01, 10, 11}" */
static void special_text(Dtype fmt, int nan, char *buf, size_t size)
{
    unsigned codes[128], n = 0;
    for (unsigned c = 0; c < 128; c++)
        if (nan ? fp8_is_nan(fmt, (uint8_t)c) : fp8_is_inf(fmt, (uint8_t)c)) codes[n++] = c;
    if (!n) {
        snprintf(buf, size, "N/A");
        return;
    }
    char pat[16];
    bit_pattern(fmt, codes[0], pat);
    if (n == 1) {
        snprintf(buf, size, "%s", pat);
        return;
    }
    char *dot = strrchr(pat, '.');
    size_t k = (size_t)snprintf(buf, size, "%.*s.{", (int)(dot - pat), pat);
    for (unsigned i = 0; i < n && k < size; i++) {
        bit_pattern(fmt, codes[i], pat);
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", strrchr(pat, '.') + 1);
    }
    if (k < size) snprintf(buf + k, size - k, "}");
}

static Table *fp8_table(void)
{
    static const TableCol cols[] = {
        {"property", NULL, NULL, TC_STR, 0, 0},
        {"e4m3", "E4M3", NULL, TC_STR, 0, 0},
        {"e5m2", "E5M2", NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, 3);
    if (!t) return NULL;
    table_set_title(t, "FP8 Formats Table 1 (computed from the codecs)");
    FormatInfo fi[2];
    const Dtype f[2] = {DT_E4M3, DT_E5M2};
    for (int i = 0; i < 2; i++) format_info(f[i], &fi[i], NULL);
    char buf[2][96];
    enum { BITS, BIAS, INF, NAN_, ZERO, MAXN, MINN, MAXS, MINS, BIN, PPB, FIN, NANC, INFC, NROWS };
    static const char *const names[NROWS] = {
        "exponent / mantissa bits",
        "exponent bias",
        "infinities",
        "NaN",
        "zeros",
        "max normal",
        "min normal",
        "max subnormal",
        "min subnormal",
        "binades (normal + subnormal)",
        "grid points per binade",
        "finite codes",
        "NaN codes",
        "Inf codes",
    };
    for (int r = 0; r < NROWS; r++) {
        table_row(t);
        table_str(t, 0, names[r]);
        for (int i = 0; i < 2; i++) {
            char *b = buf[i];
            size_t sz = sizeof buf[i];
            const FormatInfo *x = &fi[i];
            switch (r) {
            case BITS: snprintf(b, sz, "%d / %d", x->exp_bits, x->man_bits); break;
            case BIAS: snprintf(b, sz, "%d", x->bias); break;
            case INF: special_text(f[i], 0, b, sz); break;
            case NAN_: special_text(f[i], 1, b, sz); break;
            case ZERO: bit_pattern(f[i], 0, b); break;
            case MAXN: value_text(f[i], x->max_code, b, sz); break;
            case MINN: value_text(f[i], x->min_normal_code, b, sz); break;
            case MAXS: value_text(f[i], x->max_subnormal_code, b, sz); break;
            case MINS: value_text(f[i], x->min_subnormal_code, b, sz); break;
            case BIN:
                snprintf(b, sz, "%d (%d + %d)", x->binades, x->normal_binades, x->binades - x->normal_binades);
                break;
            case PPB: snprintf(b, sz, "%d", x->points_per_binade); break;
            case FIN: snprintf(b, sz, "%llu", (unsigned long long)x->finite_codes); break;
            case NANC: snprintf(b, sz, "%llu", (unsigned long long)x->nan_codes); break;
            case INFC: snprintf(b, sz, "%llu", (unsigned long long)x->inf_codes); break;
            }
            table_str(t, 1 + i, b);
        }
    }
    return t;
}

static Table *ranges_table(void)
{
    enum { FMT, BITS, EBITS, MBITS, MINN, MAXN, BIN, REPR, NC };
    static const TableCol cols[NC] = {
        {"format", NULL, NULL, TC_STR, 0, 0},
        {"bits", NULL, NULL, TC_U64, 0, 0},
        {"exp_bits", "exp", NULL, TC_U64, 0, 0},
        {"man_bits", "man", NULL, TC_U64, 0, 0},
        {"min_normal", "min normal", NULL, TC_F64, 6, TF_SCI | TF_EXACT},
        {"max_normal", "max normal", NULL, TC_F64, 6, TF_SCI | TF_EXACT},
        {"normal_binades", "binades", NULL, TC_U64, 0, 0},
        {"representation", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, NC);
    if (!t) return NULL;
    table_set_title(t, "FP8-LM Table 9: normal ranges (computed from the codecs)");
    const Dtype f[5] = {DT_FP32, DT_FP16, DT_BF16, DT_E4M3, DT_E5M2};
    const char *const label[5] = {"FP32", "FP16", "BF16", "E4M3", "E5M2"};
    for (int i = 0; i < 5; i++) {
        FormatInfo fi;
        format_info(f[i], &fi, NULL);
        table_row(t);
        table_str(t, FMT, label[i]);
        table_u64(t, BITS, (uint64_t)fi.bits);
        table_u64(t, EBITS, (uint64_t)fi.exp_bits);
        table_u64(t, MBITS, (uint64_t)fi.man_bits);
        table_f64(t, MINN, fi.min_normal);
        table_f64(t, MAXN, fi.max_normal);
        table_u64(t, BIN, (uint64_t)fi.normal_binades);
        table_str(t, REPR, "floating point");
    }
    table_row(t);
    table_str(t, FMT, "INT8");
    table_u64(t, BITS, 8);
    table_u64(t, EBITS, 0);
    table_u64(t, MBITS, 7);
    table_str(t, REPR, "fixed point: [-128 s, 127 s] in steps of s, range set by the scale s");
    return t;
}

/* Both tables as one text document, written atomically like cli_emit_table. */
static int emit_both(const char *cmd, const Table *a, const Table *b, const CliOut *out)
{
    Err e = {ST_OK, ""};
    OutFile of;
    if (outfile_open(&of, out->path, &e)) return cli_fail(cmd, &e);
    Status st = table_write(a, TABLE_TEXT, of.f, &e);
    if (!st && fputc('\n', of.f) == EOF) st = err_set(&e, ST_IO, "write error");
    if (!st) st = table_write(b, TABLE_TEXT, of.f, &e);
    return outfile_finish(&of, st, &e) ? cli_fail(cmd, &e) : 0;
}

static const char *const tables[] = {"fp8", "ranges", NULL};

typedef struct {
    int table; /* --table: an index of tables, -1 both */
    CliOut out;
} FormatsArgs;

static const CliOpt opts[] = {
    {"table", OPT_CHOICE, offsetof(FormatsArgs, table), .words = tables},
    {"out", OPT_BLOCK, offsetof(FormatsArgs, out), .block = cli_out_opts},
    {0},
};

int cmd_formats(int argc, char **argv)
{
    const char *cmd = "formats";
    FormatsArgs a = {-1, {TABLE_TEXT, NULL}};
    int rc = cli_opts_parse(&(CliParse){.cmd = cmd, .opts = opts, .help = HELP}, argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    const char *which = a.table >= 0 ? tables[a.table] : NULL;
    CliOut out = a.out;
    if (!which && out.fmt != TABLE_TEXT)
        return cli_usage(cmd, "--format csv/json writes one table: add --table fp8 or --table ranges");
    Table *t1 = !which || !strcmp(which, "fp8") ? fp8_table() : NULL;
    Table *t9 = !which || !strcmp(which, "ranges") ? ranges_table() : NULL;
    if ((!which && (!t1 || !t9)) || (which && !t1 && !t9)) {
        rc = cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    } else if (which) {
        rc = cli_emit_table(cmd, t1 ? t1 : t9, &out);
    } else { /* both, as one text document */
        rc = emit_both(cmd, t1, t9, &out);
    }
    table_free(t1);
    table_free(t9);
    return rc;
}
