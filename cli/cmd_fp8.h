/* cli/cmd_fp8.h — helpers shared by the fp8 subcommands (formats, cast,
 * scales, scaling, quant-error): input lines, fp32 number parsing, option
 * values. CLI-only; the numeric work is in fp8/. */
#ifndef FP8PLAN_CLI_CMD_FP8_H
#define FP8PLAN_CLI_CMD_FP8_H

#include <stddef.h>

#include "fp8/dtype.h"
#include "util/status.h"

/* The entry points (listed in cli/commands.h). */
int cmd_formats(int argc, char **argv);
int cmd_cast(int argc, char **argv);
int cmd_scales(int argc, char **argv);
int cmd_scaling(int argc, char **argv);
int cmd_quant_error(int argc, char **argv);

/* A decimal number (strict syntax: util/num.h; nan, inf, -inf accepted when
 * allow_nonfinite) rounded once to fp32 (strtof is correctly rounded; a
 * finite decimal beyond fp32's range becomes ±inf, as an fp32 conversion
 * does). The message quotes the text; the caller adds the line or flag. */
Status fp8cli_parse_f32(const char *s, int allow_nonfinite, float *out, Err *e);

/* Called for each non-blank line, trimmed of surrounding whitespace (so CRLF
 * input works); lineno is 1-based. Return non-OK to stop. */
typedef Status (*Fp8LineFn)(void *ctx, unsigned long lineno, const char *line, Err *e);

/* Split text (len bytes, NUL-terminated) into lines and call fn for each
 * non-blank one. A NUL byte inside the text is bad data ("NAME:LINE: ..."). */
Status fp8cli_each_line(char *text, size_t len, const char *name, Fp8LineFn fn, void *ctx, Err *e);

/* DT_E4M3 / DT_E5M2 (and DT_E8M0 when allow_e8m0) from a name; 0 ok, -1 not one of them. */
int fp8cli_parse_elem(const char *s, int allow_e8m0, Dtype *out);

#endif
