/* cli/cli.h — what every `fp8plan <subcommand>` entry point shares.
 *
 * A subcommand is one function `int cmd_NAME(int argc, char **argv)` listed in
 * cli/commands.h. It parses its options from a table of rows (cli/opts.h; argv[0]
 * is "fp8plan NAME"), writes data to stdout or -o FILE, diagnostics to stderr,
 * and returns an exit code:
 *   0 ok, 1 measured outside tolerance, 64 usage, 65 bad data, 66 no input,
 *   69 unavailable, 70 internal, 71 out of memory, 73 cannot create output, 74 i/o. */
#ifndef FP8PLAN_CLI_CLI_H
#define FP8PLAN_CLI_CLI_H

#include <stdio.h>

#include "cli/opts.h"
#include "reports/table.h"
#include "util/status.h"

#define FP8PLAN_VERSION "0.1.0"

typedef int (*CmdFn)(int argc, char **argv);

typedef struct {
    const char *name;
    CmdFn fn;
    const char *summary;
} Command;

/* Reset getopt before a subcommand parses (glibc: optind = 0 reinitialises) and
 * silence its own messages: cli_bad_option() prints them, escaped. */
void cli_getopt_reset(int argc, char **argv);

/* After getopt_long returned '?': "unrecognized option '--x'", "option '--tp'
 * needs a value" or "option '--sp' takes no value" with usage; returns 64. */
int cli_bad_option(const char *cmd);

/* "fp8plan CMD: message" on stderr; returns the exit code for e->st. */
int cli_fail(const char *cmd, const Err *e);

/* "fp8plan CMD: out of memory for WHAT" on stderr; returns 71 (ST_NOMEM). */
int cli_nomem(const char *cmd, const char *what);

/* "fp8plan CMD: message" + "Try 'fp8plan CMD --help'." on stderr; returns 64. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reject leftover positional arguments after getopt; returns 0 or 64. */
int cli_no_operands(const char *cmd, int argc, char **argv);

/* Print help text (stdout) and return 0. */
int cli_help(const char *text);

/* Output choice shared by subcommands: --format table|csv|json|html and -o FILE. */
typedef struct {
    TableFormat fmt;
    const char *path; /* NULL or "-" = stdout */
} CliOut;

/* Parse a --format value; on error prints usage and returns 64, else 0. */
int cli_parse_format(const char *cmd, const char *arg, CliOut *out);

/* The rows (cli/opts.h) of --format table|csv|json|html and -o/--output FILE into a CliOut: a command's
 * table takes them as {"out", OPT_BLOCK, offsetof(Args, out), .block = cli_out_opts}. No help lines. */
extern const CliOpt cli_out_opts[];

/* Write t to out (atomically when a file); returns an exit code. */
int cli_emit_table(const char *cmd, const Table *t, const CliOut *out);

/* Unicode block glyphs for text charts: not with --ascii (ascii != 0), not under TERM=dumb, and only
 * when the locale ($LC_ALL, else $LC_CTYPE, else $LANG) is UTF-8. */
int cli_unicode(int ascii);

/* Write a page (an HTML report) to out->path through the same atomic writer: fn writes the whole
 * page to f; nothing is left behind when it fails. Returns an exit code. */
typedef Status (*CliPageFn)(FILE *f, const void *ctx, Err *e);
int cli_emit_page(const char *cmd, const CliOut *out, CliPageFn fn, const void *ctx);

/* cli_emit_table, except that --format html writes page(t): the table with its charts. */
typedef Status (*CliTablePage)(FILE *f, const Table *t, Err *e);
int cli_emit_charted(const char *cmd, const Table *t, const CliOut *out, CliTablePage page);

#endif
