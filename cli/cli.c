/* cli/cli.c — shared subcommand plumbing: errors, usage, output. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fileio.h"

void cli_getopt_reset(void) { optind = 0; }

int cli_fail(const char *cmd, const Err *e)
{
    fprintf(stderr, "fp8plan %s: %s\n", cmd, e->msg[0] ? e->msg : status_str(e->st));
    if (e->st == ST_USAGE) fprintf(stderr, "Try 'fp8plan %s --help'.\n", cmd);
    return status_exit_code(e->st);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fp8plan %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'fp8plan %s --help'.\n", cmd);
    return status_exit_code(ST_USAGE);
}

int cli_no_operands(const char *cmd, int argc, char **argv)
{
    if (optind < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    return 0;
}

int cli_help(const char *text)
{
    fputs(text, stdout);
    return 0;
}

int cli_parse_format(const char *cmd, const char *arg, CliOut *out)
{
    Err e;
    if (table_format_parse(arg, &out->fmt, &e)) return cli_usage(cmd, "--format: %s", e.msg);
    return 0;
}

int cli_out_option(const char *cmd, int o, const char *help, CliOut *out)
{
    switch (o) {
    case 'f': return cli_parse_format(cmd, optarg, out) ? status_exit_code(ST_USAGE) : CLI_NEXT_OPTION;
    case 'o': out->path = optarg; return CLI_NEXT_OPTION;
    case 'h': return cli_help(help);
    default: return cli_usage(cmd, "unknown option");
    }
}

int cli_unicode(int ascii)
{
    const char *term = getenv("TERM"), *loc = getenv("LC_ALL");
    if (ascii || (term && !strcmp(term, "dumb"))) return 0;
    if (!loc || !*loc) loc = getenv("LC_CTYPE");
    if (!loc || !*loc) loc = getenv("LANG");
    if (!loc) return 0;
    const char *dot = strchr(loc, '.');
    return dot && (!strncasecmp(dot + 1, "utf-8", 5) || !strncasecmp(dot + 1, "utf8", 4));
}

int cli_emit_page(const char *cmd, const CliOut *out, CliPageFn fn, const void *ctx)
{
    Err e;
    OutFile of;
    if (outfile_open(&of, out->path, &e)) return cli_fail(cmd, &e);
    if (fn(of.f, ctx, &e)) {
        outfile_abort(&of);
        return cli_fail(cmd, &e);
    }
    if (outfile_commit(&of, &e)) return cli_fail(cmd, &e);
    return 0;
}

typedef struct {
    const Table *t;
    TableFormat fmt;
    CliTablePage page;
} TableJob;

static Status write_table(FILE *f, const void *ctx, Err *e)
{
    const TableJob *j = ctx;
    if (j->fmt == TABLE_HTML && j->page) return j->page(f, j->t, e);
    return table_write(j->t, j->fmt, f, e);
}

int cli_emit_charted(const char *cmd, const Table *t, const CliOut *out, CliTablePage page)
{
    TableJob j = {t, out->fmt, page};
    return cli_emit_page(cmd, out, write_table, &j);
}

int cli_emit_table(const char *cmd, const Table *t, const CliOut *out) { return cli_emit_charted(cmd, t, out, NULL); }
