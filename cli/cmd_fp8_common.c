/* cli/cmd_fp8_common.c — helpers shared by the fp8 subcommands (see cmd_fp8.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_fp8.h"
#include "util/num.h"
#include "util/text.h"

Status fp8cli_parse_f32(const char *s, int allow_nonfinite, float *out, Err *e)
{
    double d;
    Status st = num_parse_double(s, allow_nonfinite ? NUM_ALLOW_NONFINITE : NUM_FINITE_ONLY, &d, e);
    if (st) return st;
    errno = 0;
    *out = strtof(s, NULL); /* the same text, rounded once to fp32 */
    return ST_OK;
}

Status fp8cli_each_line(char *text, size_t len, const char *name, Fp8LineFn fn, void *ctx, Err *e)
{
    size_t bom = utf8_bom_len(text, len); /* a byte-order mark is skipped everywhere */
    text += bom, len -= bom;
    if (memchr(text, '\0', len)) {
        unsigned long line = 1;
        for (const char *p = text; *p; p++) line += *p == '\n';
        return err_set(e, ST_DATA, "%s:%lu: NUL byte in the input", name, line);
    }
    unsigned long lineno = 0;
    char *p = text;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        lineno++;
        num_trim(p);
        if (*p) {
            Status st = fn(ctx, lineno, p, e);
            if (st) return st;
        }
        if (!nl) break;
        p = nl + 1;
    }
    return ST_OK;
}

int fp8cli_parse_elem(const char *s, int allow_e8m0, Dtype *out)
{
    Dtype t;
    if (dtype_parse(s, &t) || !(dtype_is_fp8(t) || (allow_e8m0 && t == DT_E8M0))) return -1;
    *out = t;
    return 0;
}
