/* cli/cli.c — shared subcommand plumbing: errors, usage, output. */
#include "cli/cli.h"

#include <getopt.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fileio.h"
#include "util/text.h"

static int cli_argc;
static char **cli_argv;

void cli_getopt_reset(int argc, char **argv)
{
    optind = 0;
    opterr = 0; /* cli_bad_option says what went wrong, with the argument escaped */
    cli_argc = argc, cli_argv = argv;
}

int cli_bad_option(const char *cmd)
{
    const char *arg = cli_argv && optind >= 1 && optind <= cli_argc ? cli_argv[optind - 1] : NULL;
    if (!arg || arg[0] != '-') arg = "";
    int name = (int)strcspn(arg, "=");
    if (arg[0] == '-' && arg[1] == '-') {
        if (!optopt) return cli_usage(cmd, "unrecognized option '%.*s'", name, arg);
        if (arg[name]) return cli_usage(cmd, "option '%.*s' takes no value", name, arg);
        return cli_usage(cmd, "option '%s' needs a value", arg);
    }
    if (optopt) return cli_usage(cmd, "unknown option '-%c', or it needs a value", optopt);
    return cli_usage(cmd, "bad option '%s'", arg);
}

/* "fp8plan CMD: msg" on stderr, with control bytes and invalid UTF-8 from the input shown as \xHH. */
static void say(const char *cmd, const char *msg)
{
    char safe[4 * sizeof((Err *)0)->msg];
    fprintf(stderr, "fp8plan %s: %s\n", cmd, text_escape(msg, safe, sizeof safe, 0));
}

int cli_fail(const char *cmd, const Err *e)
{
    say(cmd, e->msg[0] ? e->msg : status_str(e->st));
    if (e->st == ST_USAGE) fprintf(stderr, "Try 'fp8plan %s --help'.\n", cmd);
    return status_exit_code(e->st);
}

int cli_nomem(const char *cmd, const char *what)
{
    Err e;
    err_set(&e, ST_NOMEM, "out of memory for %s", what);
    return cli_fail(cmd, &e);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    char msg[sizeof((Err *)0)->msg * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    say(cmd, msg);
    fprintf(stderr, "Try 'fp8plan %s --help'.\n", cmd);
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

static int read_format(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    (void)o;
    return cli_parse_format(p->cmd, arg, t);
}

const CliOpt cli_out_opts[] = {
    {"format", OPT_FN, 0, .has_arg = 1, .fn = read_format},
    {"output", OPT_STR, offsetof(CliOut, path), .short_name = 'o'},
    {0},
};

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
    if (outfile_open(&of, out->path, &e) || outfile_finish(&of, fn(of.f, ctx, &e), &e)) return cli_fail(cmd, &e);
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
