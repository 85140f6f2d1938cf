/* cli/cmd_fp8_scales.c — `fp8plan scales`: the seed's Table 1b for any shape. */
#include <stddef.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cmd_fp8.h"
#include "reports/seed_report.h"
#include "reports/html_fp8.h"
#include "util/num.h"

static const char HELP[] =
    "usage: fp8plan scales --shape RxC [--format table|csv|json|html] [-o FILE]\n"
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
    "Columns: format (bf16, fp8), granularity, scale_dtype, scale_count, payload_bytes,\n"
    "scale_bytes, total_bytes; payload_of_bf16_pct = payload / BF16's bytes;\n"
    "scale_of_payload_pct = scale bytes / FP8 payload; saving_vs_bf16_pct = 1 - total / BF16's.\n"
    "\n"
    "example: fp8plan scales --shape 4096x4096\n"
    "  FP8 payload 16,777,216 B = 50.000 % of BF16's 33,554,432 B; per-channel scales\n"
    "  16,384 B; 1x32 E8M0 scales 524,288 B = 3.125 % of payload; saving 48.438 %.\n"
    "\n"
    "exit status: 0 ok, 64 bad shape or option, 65 byte counts past 2^64.\n";

typedef struct {
    const char *shape; /* --shape RxC */
    CliOut out;
} ScalesArgs;

static const CliOpt opts[] = {
    {"shape", OPT_STR, offsetof(ScalesArgs, shape), .arg = "RxC"},
    {"out", OPT_BLOCK, offsetof(ScalesArgs, out), .block = cli_out_opts},
    {0},
};

int cmd_scales(int argc, char **argv)
{
    const char *cmd = "scales";
    ScalesArgs a = {NULL, {TABLE_TEXT, NULL}};
    int rc = cli_opts_parse(&(CliParse){.cmd = cmd, .opts = opts, .help = HELP}, argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    const char *shape = a.shape;
    CliOut out = a.out;
    if (!shape) return cli_usage(cmd, "--shape RxC is required (e.g. --shape 4096x4096)");
    uint64_t rows, cols;
    Err e;
    Status st = num_parse_shape(shape, &rows, &cols, &e);
    if (st == ST_USAGE) return cli_usage(cmd, "--shape: %s", e.msg);
    if (st) return cli_fail(cmd, &e);
    Table *t = seed_table1b(rows, cols, &e);
    if (!t) {
        err_prefix(&e, "--shape");
        return cli_fail(cmd, &e);
    }
    rc = cli_emit_charted(cmd, t, &out, html_scales_page);
    table_free(t);
    return rc;
}
