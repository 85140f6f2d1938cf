/* cli/cmd_fp8_scales.c — `fp8plan scales`: the seed's Table 1b for any shape. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "fp8/granularity.h"
#include "util/num.h"

static const char HELP[] = "usage: fp8plan scales --shape RxC [--format table|csv|json] [-o FILE]\n"
                           "\n"
                           "Bytes of one RxC tensor (R rows = output channels, C columns = the GEMM's K) stored\n"
                           "in BF16 and in FP8 with each scale granularity: the seed's Table 1b for any shape.\n"
                           "Weights only: no gradients, optimizer state, activations or transposed copies.\n"
                           "\n"
                           "  BF16            2 B per value, no scale\n"
                           "  FP8 per-tensor  1 B per value + 1 FP32 scale\n"
                           "  per-channel     1 B per value + 1 FP32 scale per row\n"
                           "  1x32 E8M0       1 B per value + 1 E8M0 byte per 32 values along a row (MXFP8)\n"
                           "  1x128 FP32      1 B per value + 1 FP32 scale per 128 values along a row\n"
                           "  128x128 FP32    1 B per value + 1 FP32 scale per 128x128 tile (DeepSeek-V3 weights)\n"
                           "A partial block at an edge needs its own scale. Scale arrays are counted as stored,\n"
                           "without the padding or swizzling a GEMM library may want.\n"
                           "\n"
                           "Columns: payload bytes; scale bytes; total; payload as % of BF16's bytes; scale bytes\n"
                           "as % of the FP8 payload; saving = 1 - total / BF16 total.\n"
                           "\n"
                           "example: fp8plan scales --shape 4096x4096\n"
                           "  FP8 payload 16,777,216 B = 50.000 % of BF16's 33,554,432 B; per-channel scales\n"
                           "  16,384 B; 1x32 E8M0 scales 524,288 B = 3.125 % of payload; saving 48.438 %.\n"
                           "\n"
                           "exit status: 0 ok, 64 bad shape or option, 65 byte counts past 2^64.\n";

enum { C_LAYOUT, C_SDTYPE, C_NSCALES, C_PAYLOAD, C_SCALE, C_TOTAL, C_PCT_BF16, C_OVERHEAD, C_SAVING, NCOLS };

static const TableCol COLS[NCOLS] = {
    {"layout", NULL, NULL, TC_STR, 0, 0},
    {"scale_dtype", "scale dtype", NULL, TC_STR, 0, 0},
    {"n_scales", "scales", NULL, TC_U64, 0, TF_GROUP},
    {"payload_bytes", "payload", "B", TC_U64, 0, TF_GROUP},
    {"scale_bytes", "scale bytes", "B", TC_U64, 0, TF_GROUP},
    {"total_bytes", "total", "B", TC_U64, 0, TF_GROUP},
    {"payload_pct_of_bf16", "payload/BF16", "%", TC_F64, 3, 0},
    {"scale_overhead_pct", "scales/payload", "%", TC_F64, 3, 0},
    {"saving_vs_bf16_pct", "saving vs BF16", "%", TC_F64, 3, 0},
};

static const struct {
    Granularity g;
    const char *name;
} ROWS[] = {
    {GRAN_TENSOR, "FP8 per-tensor"}, {GRAN_CHANNEL, "FP8 per-channel"},  {GRAN_1X32, "FP8 1x32 E8M0"},
    {GRAN_1X128, "FP8 1x128 FP32"},  {GRAN_128X128, "FP8 128x128 FP32"},
};

int cmd_scales(int argc, char **argv)
{
    static const struct option opts[] = {
        {"shape", required_argument, 0, 's'},
        {"format", required_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *cmd = "scales", *shape = NULL;
    CliOut out = {TABLE_TEXT, NULL};
    int o;
    while ((o = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (o) {
        case 's': shape = optarg; break;
        case 'f':
            if (cli_parse_format(cmd, optarg, &out)) return 64;
            break;
        case 'o': out.path = optarg; break;
        case 'h': return cli_help(HELP);
        default: return cli_usage(cmd, "unknown option");
        }
    }
    if (cli_no_operands(cmd, argc, argv)) return 64;
    if (!shape) return cli_usage(cmd, "--shape RxC is required (e.g. --shape 4096x4096)");
    uint64_t rows, cols, n, bf16, fp8;
    Err e;
    Status st = num_parse_shape(shape, &rows, &cols, &e);
    if (st == ST_USAGE) return cli_usage(cmd, "--shape: %s", e.msg);
    if (st) return cli_fail(cmd, &e);
    if (u64_mul(rows, cols, &n) || u64_mul(n, 2, &bf16)) {
        err_set(&e, ST_OVERFLOW, "--shape %s: BF16 bytes pass 2^64", shape);
        return cli_fail(cmd, &e);
    }
    fp8 = n;
    Table *t = table_new(COLS, NCOLS);
    if (!t) return cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    char title[160];
    snprintf(title, sizeof title, "Table 1b: one %llux%llu tensor, payload + scale storage (weights only)",
             (unsigned long long)rows, (unsigned long long)cols);
    table_set_title(t, title);
    table_row(t);
    table_str(t, C_LAYOUT, "BF16");
    table_str(t, C_SDTYPE, dtype_name(DT_NONE));
    table_u64(t, C_NSCALES, 0);
    table_u64(t, C_PAYLOAD, bf16);
    table_u64(t, C_SCALE, 0);
    table_u64(t, C_TOTAL, bf16);
    table_f64(t, C_PCT_BF16, 100.0);
    table_f64(t, C_OVERHEAD, 0.0);
    table_f64(t, C_SAVING, 0.0);
    for (unsigned i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
        uint64_t ns, sb, total;
        if ((st = gran_scale_count(ROWS[i].g, rows, cols, &ns, &sb, &e)) || u64_add(fp8, sb, &total)) {
            if (!st) err_set(&e, ST_OVERFLOW, "--shape %s: total bytes pass 2^64", shape);
            table_free(t);
            return cli_fail(cmd, &e);
        }
        table_row(t);
        table_str(t, C_LAYOUT, ROWS[i].name);
        table_str(t, C_SDTYPE, dtype_name(gran_scale_dtype(ROWS[i].g)));
        table_u64(t, C_NSCALES, ns);
        table_u64(t, C_PAYLOAD, fp8);
        table_u64(t, C_SCALE, sb);
        table_u64(t, C_TOTAL, total);
        table_f64(t, C_PCT_BF16, 100.0 * (double)fp8 / (double)bf16);
        table_f64(t, C_OVERHEAD, 100.0 * (double)sb / (double)fp8);
        table_f64(t, C_SAVING, 100.0 * ((double)bf16 - (double)total) / (double)bf16);
    }
    int rc = cli_emit_table(cmd, t, &out);
    table_free(t);
    return rc;
}
