/* cli/cmd_fp8_qerror.c — `fp8plan quant-error`: round-trip error of a tensor per
 * FP8 format and scale granularity. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "fp8/qerror.h"
#include "fp8/quant.h"
#include "fp8/synth.h"
#include "reports/html_fp8.h"
#include "util/fileio.h"
#include "util/num.h"

static const char HELP_HEAD[] =
    "usage: fp8plan quant-error [--shape RxC] [--dist normal|laplace|outliers] [--seed S]\n"
    "                           [--input FILE] [--fp8 e4m3|e5m2|both] [--block-scales fp32|pow2]\n"
    "                           [--mx-rule ceil|floor] [--nosat] [--format table|csv|json|html] [-o FILE]\n"
    "\n"
    "Quantize one RxC tensor (default 1024x4096; rows = tokens, columns = features) to FP8\n"
    "at every scale granularity with current scaling (each block's own amax; TE's\n"
    "policies), dequantize, and compare with the input.\n"
    "\n";

static const char HELP_TAIL[] =
    "\n"
    "Columns: rel RMS = sqrt(sum (x-y)^2 / sum x^2); SNR = 10 log10(sum x^2 / sum (x-y)^2);\n"
    "mean rel = mean over nonzero x of |x-y|/|x|; flushed = nonzero values that became 0;\n"
    "saturated = values beyond the format's range at their block's scale; max abs error;\n"
    "scale bytes per the granularity; NaN/Inf out = finite inputs whose round trip is NaN or Inf\n"
    "(an infinite error: the error figures are then n/a, with a warning). NaN and Inf inputs are\n"
    "left out of every figure and of the scales; percentages are of the finite inputs. rel RMS\n"
    "and SNR weigh values by energy, so a few large outliers that quantize well can dominate\n"
    "them; mean rel and flushed weigh every value the same and show what one per-tensor scale\n"
    "does to the many small values.\n"
    "\n"
    "exit status: 0 ok, 64 bad option or shape, 65 input file of the wrong size, 66 no file.\n";

enum { C_FMT, C_GRAN, C_SCALE, C_SBYTES, C_RELRMS, C_SNR, C_MEANREL, C_FLUSH, C_SAT, C_MAXABS, C_NONFIN, NCOLS };

static const TableCol COLS[NCOLS] = {
    {"format", NULL, NULL, TC_STR, 0, 0},
    {"granularity", NULL, NULL, TC_STR, 0, 0},
    {"scale", NULL, NULL, TC_STR, 0, 0},
    {"scale_bytes", "scale bytes", "B", TC_U64, 0, TF_GROUP},
    {"rel_rms_pct", "rel RMS", "%", TC_F64, 4, 0},
    {"snr_db", "SNR", "dB", TC_F64, 2, 0},
    {"mean_rel_pct", "mean rel", "%", TC_F64, 4, 0},
    {"flushed_pct", "flushed", "%", TC_F64, 4, 0},
    {"saturated_pct", "saturated", "%", TC_F64, 4, 0},
    {"max_abs_err", "max abs err", NULL, TC_F64, 4, TF_SCI},
    {"nonfinite_out", "NaN/Inf", "out", TC_U64, 0, 0},
};

enum { MAX_ELEMS = 1 << 28 }; /* 1 GiB of input floats */

static Status load_input(const char *path, uint64_t n, float *x, Err *e)
{
    char *buf;
    size_t len;
    Status st = file_read_max(path, (size_t)(n * 4), &buf, &len, e); /* n <= MAX_ELEMS: no overflow */
    if (st == ST_DATA)
        return err_set(e, ST_DATA, "%s: more than %llu bytes, but --shape needs %llu float32 values = %llu bytes", path,
                       (unsigned long long)(n * 4), (unsigned long long)n, (unsigned long long)(n * 4));
    if (st) return st;
    if ((uint64_t)len != n * 4) {
        free(buf);
        return err_set(e, ST_DATA, "%s: %zu bytes, but --shape needs %llu float32 values = %llu bytes", path, len,
                       (unsigned long long)n, (unsigned long long)(n * 4));
    }
    const unsigned char *p = (const unsigned char *)buf;
    for (uint64_t i = 0; i < n; i++, p += 4) {
        uint32_t b = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&x[i], &b, sizeof b);
    }
    free(buf);
    return ST_OK;
}

/* Quantize xq (the input with NaN/Inf set to 0, so that scales come from the finite values only), round trip
 * it and compare with the input x (whose NaN/Inf are left out of the figures). */
static Status measure(const QuantCfg *cfg, const float *xq, const float *x, uint64_t rows, uint64_t cols,
                      uint8_t *codes, float *y, QuantError *q, uint64_t *sbytes, Err *e)
{
    uint64_t ns;
    Status st = gran_scale_count(cfg->gran, rows, cols, &ns, sbytes, e);
    if (st) return st;
    float *scale = malloc(ns * sizeof *scale), *inv = malloc(ns * sizeof *inv);
    uint8_t *e8 = malloc(ns);
    if (!scale || !inv || !e8) {
        st = err_set(e, ST_NOMEM, "out of memory for %llu scales", (unsigned long long)ns);
    } else {
        QuantBufs b = {codes, scale, inv, e8, NULL};
        QuantCounts k;
        if (!(st = quant_tensor(cfg, xq, rows, cols, &b, &k, e)) && !(st = quant_dequant(cfg, &b, rows, cols, y, e)))
            qerr_compute(x, y, rows * cols, &k, q);
    }
    free(scale), free(inv), free(e8);
    return st;
}

/* What quant-error's flags fill. */
typedef struct {
    const char *shape, *input;
    uint64_t seed;
    SynthDist dist;
    E8m0Rule rule;
    int fp8, blocks, nosat, have_dist; /* fp8: an index of fp8s; blocks: of block_scales */
    CliOut out;
} QerrArgs;

static const char *const fp8s[] = {"e4m3", "e5m2", "both", NULL}, *const block_scales[] = {"pow2", "fp32", NULL};

static int read_dist(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    if (synth_parse(arg, t)) return cli_usage(p->cmd, "--%s: '%s' is not normal, laplace or outliers", o->name, arg);
    return 0;
}

static int read_rule(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    if (e8m0_rule_parse(arg, t)) return cli_usage(p->cmd, "--%s: '%s' is not ceil or floor", o->name, arg);
    return 0;
}

static const CliOpt opts[] = {
    {"shape", OPT_STR, offsetof(QerrArgs, shape), .arg = "RxC"},
    {"dist", OPT_FN, offsetof(QerrArgs, dist), .has_arg = 1, .fn = read_dist, .mark = CLI_MARK(QerrArgs, have_dist),
     .arg = "D",
     .help = "synthetic input (default normal), seeded by --seed (default 1):\n"
             "                    normal   N(0, 1)\n"
             "                    laplace  Laplace with unit variance\n"
             "                    outliers LLM-like activations: N(0, 1) body; outlier feature\n"
             "                             channels (0.1% of columns, at least 1) scaled by 20, as\n"
             "                             LLM.int8() reports (Dettmers et al. 2022); massive\n"
             "                             activations (Sun et al. 2024) of random sign and magnitude\n"
             "                             uniform in [500, 1000] (750-1500x the body's median |x|) in\n"
             "                             the first two outlier channels at row 0 and every 1024th row"},
    {"seed", OPT_U64, offsetof(QerrArgs, seed), .arg = "S"},
    {"input", OPT_STR, offsetof(QerrArgs, input), .arg = "FILE",
     .help = "raw little-endian float32, R*C values row-major (instead of --dist)"},
    {"fp8", OPT_CHOICE, offsetof(QerrArgs, fp8), .words = fp8s, .arg = "F",
     .help = "e4m3, e5m2 or both (default both)"},
    {"block-scales", OPT_CHOICE, offsetof(QerrArgs, blocks), .words = block_scales, .arg = "B",
     .help = "1x128 / 128x128 scales: fp32 (default; plain FP32 scales, as DeepSeek-V3)\n"
             "                    or pow2 (power-of-two scales, TE Float8BlockScaling's default)"},
    {"mx-rule", OPT_FN, offsetof(QerrArgs, rule), .has_arg = 1, .fn = read_rule, .arg = "R",
     .help = "1x32 E8M0 scale rule: ceil (default; cuBLAS/TE) or floor (OCP MX)"},
    {"nosat", OPT_FLAG, offsetof(QerrArgs, nosat), .set = 1,
     .help = "out-of-range values become NaN/Inf instead of +-max"},
    {"out", OPT_BLOCK, offsetof(QerrArgs, out), .block = cli_out_opts},
    {0},
};

/* One row per format and granularity the flags ask for: x measured (xq: x with the non-finite values
 * zeroed, or x itself); codes and y are (rows * cols) scratch. Returns 0 or the exit code. */
static int fill_rows(const char *cmd, const QerrArgs *a, const float *xq, const float *x, uint64_t rows, uint64_t cols,
                     uint8_t *codes, float *y, Table *t)
{
    int fmts = a->fp8 + 1, block_pow2 = a->blocks == 0;
    E8m0Rule rule = a->rule;
    Err e;
    for (int f = 0; f < 2; f++) {
        if (!(fmts & (1 << f))) continue;
        Dtype fmt = f ? DT_E5M2 : DT_E4M3;
        if (fmts == 3 && f == 1) table_rule(t);
        for (int g = 0; g < GRAN_COUNT_; g++) {
            QuantCfg cfg = quant_cfg(fmt, (Granularity)g);
            cfg.sat = a->nosat ? FP8_NOSAT : FP8_SATFINITE;
            cfg.rule = rule;
            if (g == GRAN_1X128 || g == GRAN_128X128) cfg.pow2 = block_pow2;
            QuantError q;
            uint64_t sbytes;
            if (measure(&cfg, xq, x, rows, cols, codes, y, &q, &sbytes, &e)) return cli_fail(cmd, &e);
            table_row(t);
            table_str(t, C_FMT, dtype_name(fmt));
            table_str(t, C_GRAN, gran_name(cfg.gran));
            table_str(t, C_SCALE,
                      g == GRAN_1X32 ? (rule == E8M0_RULE_CEIL ? "e8m0 ceil" : "e8m0 floor")
                      : cfg.pow2     ? "fp32 pow2"
                                     : "fp32");
            table_u64(t, C_SBYTES, sbytes);
            table_f64(t, C_RELRMS, 100 * q.rel_rms);
            table_f64(t, C_SNR, q.snr_db);
            table_f64(t, C_MEANREL, 100 * q.mean_rel);
            table_f64(t, C_FLUSH, 100 * q.flushed_frac);
            table_f64(t, C_SAT, 100 * q.saturated_frac);
            table_f64(t, C_MAXABS, q.max_abs);
            table_u64(t, C_NONFIN, q.nonfinite);
            if (q.nonfinite)
                fprintf(stderr,
                        "fp8plan %s: warning: %s %s: %llu finite inputs came back NaN or Inf (the dequantized value "
                        "passes the float range); their error is infinite, so rel RMS, SNR, mean rel and max abs "
                        "err are n/a\n",
                        cmd, dtype_name(fmt), gran_name(cfg.gran), (unsigned long long)q.nonfinite);
        }
    }
    return 0;
}

int cmd_quant_error(int argc, char **argv)
{
    const char *cmd = "quant-error";
    QerrArgs a = {.shape = "1024x4096",
                  .seed = 1,
                  .dist = SYNTH_NORMAL,
                  .rule = E8M0_RULE_CEIL,
                  .fp8 = 2,
                  .blocks = 1,
                  .out = {TABLE_TEXT, NULL}};
    int rc =
        cli_opts_parse(&(CliParse){.cmd = cmd, .opts = opts, .help = HELP_HEAD, .help_tail = HELP_TAIL, .help_col = 20},
                       argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    const char *shape = a.shape, *input = a.input;
    CliOut out = a.out;
    SynthDist dist = a.dist;
    uint64_t seed = a.seed, rows, cols;
    int have_dist = a.have_dist;
    Err e;
    if (input && have_dist) return cli_usage(cmd, "--input and --dist are alternatives; give one");
    Status st = num_parse_shape(shape, &rows, &cols, &e);
    if (st) return cli_usage(cmd, "--shape: %s", e.msg);
    if (rows * cols > MAX_ELEMS)
        return cli_usage(cmd, "--shape %s: %llu values is more than this command handles (%d)", shape,
                         (unsigned long long)(rows * cols), MAX_ELEMS);
    uint64_t n = rows * cols;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *xq = NULL;
    uint8_t *codes = malloc(n);
    Table *t = table_new(COLS, NCOLS);
    rc = 0;
    if (!x || !y || !codes || !t) {
        rc = cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
        goto done;
    }
    st = input ? load_input(input, n, x, &e) : synth_fill(dist, seed, rows, cols, x, &e);
    if (st) {
        rc = cli_fail(cmd, &e);
        goto done;
    }
    uint64_t nan = 0, inf = 0; /* non-finite inputs: left out of every figure (and of the scales), and said so */
    for (uint64_t i = 0; i < n; i++) nan += isnan(x[i]) != 0, inf += isinf(x[i]) != 0;
    if (nan || inf) {
        if (!(xq = malloc(n * sizeof *xq))) {
            rc = cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
            goto done;
        }
        for (uint64_t i = 0; i < n; i++) xq[i] = isfinite(x[i]) ? x[i] : 0.0f; /* 0: no amax, no flush, exact */
    }
    char title[400], skipped[160] = "";
    if (nan || inf) {
        snprintf(skipped, sizeof skipped, "; %llu NaN and %llu Inf of %llu inputs left out%s", (unsigned long long)nan,
                 (unsigned long long)inf, (unsigned long long)n, nan + inf == n ? ": nothing to measure" : "");
        fprintf(stderr, "fp8plan %s: warning: %s holds %llu NaN and %llu Inf values of %llu; %s\n", cmd, input,
                (unsigned long long)nan, (unsigned long long)inf, (unsigned long long)n,
                nan + inf == n ? "no finite value is left to measure (the figures are n/a)"
                               : "the figures are over the finite values only");
    }
    if (input)
        snprintf(title, sizeof title, "quantization error: %.200s (%llux%llu), current scaling%s", input,
                 (unsigned long long)rows, (unsigned long long)cols, skipped);
    else
        snprintf(title, sizeof title, "quantization error: %llux%llu %s (seed %llu), current scaling",
                 (unsigned long long)rows, (unsigned long long)cols, synth_name(dist), (unsigned long long)seed);
    table_set_title(t, title);
    if ((rc = fill_rows(cmd, &a, xq ? xq : x, x, rows, cols, codes, y, t))) goto done;
    rc = cli_emit_charted(cmd, t, &out, html_qerror_page);
done:
    free(x), free(y), free(xq), free(codes);
    table_free(t);
    return rc;
}
