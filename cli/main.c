/* cli/main.c — `fp8plan <subcommand> [options]`: dispatch through the table in
 * cli/commands.h. The only main(); the only place an exit code leaves. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "util/fileio.h"
#include "util/text.h"

#define DECLARE(name, fn, summary) int fn(int argc, char **argv);
FP8PLAN_COMMANDS(DECLARE)
#undef DECLARE

#define ENTRY(name, fn, summary) {name, fn, summary},
static const Command commands[] = {FP8PLAN_COMMANDS(ENTRY)};
#undef ENTRY
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

/* `fp8plan version [--help]`: takes no other option and no argument (argc 0: from --version). */
int cmd_version(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    if (argc > 0) {
        int o = getopt_long(argc, argv, "h", opts, NULL);
        if (o == 'h') {
            printf("usage: fp8plan version\n"
                   "Print fp8plan's version (also: fp8plan --version).\n");
            return 0;
        }
        if (o != -1) return cli_bad_option("version");
        if (optind < argc)
            return cli_usage("version", "takes no arguments ('%s' given)",
                             text_escape(argv[optind], (char[256]){0}, 256, 0));
    }
    printf("fp8plan %s\n", FP8PLAN_VERSION);
    return 0;
}

static void list_commands(FILE *f)
{
    for (int i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
}

static int usage(FILE *f, int code)
{
    fprintf(f, "usage: fp8plan <subcommand> [options]\n"
               "\n"
               "Plan and check BF16 -> FP8 training: per-GPU memory, collective bytes and step time.\n"
               "\n"
               "Subcommands:\n");
    list_commands(f);
    fprintf(f, "\n"
               "fp8plan <subcommand> --help   options of one subcommand\n"
               "fp8plan --version             version\n");
    return code;
}

static const Command *find(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

static int run(const Command *c, int argc, char **argv)
{
    char argv0[64];
    snprintf(argv0, sizeof argv0, "fp8plan %s", c->name);
    argv[0] = argv0;
    cli_getopt_reset(argc, argv);
    return c->fn(argc, argv);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) return usage(stderr, 64);
    const char *a = argv[1];
    /* `--version ARGS` is `version ARGS` (which refuses them), `--help SUB` is `help SUB`, as git reads them. */
    if (!strcmp(a, "--version") || !strcmp(a, "-V"))
        return argc > 2 ? run(find("version"), argc - 1, argv + 1) : cmd_version(0, NULL);
    if (!strcmp(a, "help") || !strcmp(a, "--help") || !strcmp(a, "-h")) {
        if (argc < 3) return usage(stdout, 0);
        const Command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "fp8plan: unknown subcommand '%s'\n", text_escape(argv[2], (char[256]){0}, 256, 0));
            return usage(stderr, 64);
        }
        char *hargv[] = {argv[2], "--help", NULL};
        return run(c, 2, hargv);
    }
    const Command *c = find(a);
    if (!c) {
        fprintf(stderr, "fp8plan: unknown subcommand '%s'\n\n", text_escape(a, (char[256]){0}, 256, 0));
        return usage(stderr, 64);
    }
    return run(c, argc - 1, argv + 1);
}

/* Output to stdout that was lost (a full disk, a closed pipe) fails the command: exit 74 unless it failed already.
 * SIGPIPE is ignored so that a write to a closed pipe (`fp8plan models | head -c 10`) fails with EPIPE and is
 * reported like any other lost write ("cannot write standard output: Broken pipe", 74), not a silent death. */
int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    char sub[64];
    snprintf(sub, sizeof sub, "%s%s", argc > 1 ? " " : "", argc > 1 ? argv[1] : "");
    int rc = dispatch(argc, argv);
    Err e;
    if (stdout_close_check(&e) && !rc) {
        fprintf(stderr, "fp8plan%s: %s\n", sub, e.msg);
        rc = status_exit_code(e.st);
    }
    return rc;
}
