/* tests/fuzz/fuzz_cli_opts.c — the subcommands' option parsers (and what they drive: catalog lookups,
 * plan, compare, the listings, the FP8 tables) on arbitrary argument vectors. The input is split at
 * NUL bytes into up to 24 arguments; the first byte picks the subcommand. Outputs go to /dev/null;
 * (diagnostics go to stderr); arguments that would touch the file system (-o, --output, --catalog, --input) are dropped, as are
 * sizes that make a command legitimately slow (quant-error's --shape), since the output writer and the
 * readers have fuzzers of their own. Nothing may crash, hang, leak or trip a sanitizer, and every exit
 * code must be one docs/cli.md lists. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_bytes_per_param(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_recipes(int argc, char **argv);
int cmd_formats(int argc, char **argv);
int cmd_scales(int argc, char **argv);

static const struct {
    const char *name;
    int (*fn)(int, char **);
} cmds[] = {{"plan", cmd_plan},       {"compare", cmd_compare}, {"bytes-per-param", cmd_bytes_per_param},
            {"models", cmd_models},   {"gpus", cmd_gpus},       {"recipes", cmd_recipes},
            {"formats", cmd_formats}, {"scales", cmd_scales}};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (!freopen("/dev/null", "w", stdout)) abort(); /* stderr stays: crash reports go there */
    setenv("FP8PLAN_CATALOG", "models", 0);          /* make fuzz runs in the repository root */
    return 0;
}

static int dropped(const char *a)
{
    static const char *const bad[] = {"-o", "--o", "--catalog", "--c", "--input", "--i", "--shape", "--sh"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (!strncmp(a, bad[i], strlen(bad[i]))) return 1;
    return a[0] == '-' && a[1] != '-' && strchr(a, 'o'); /* -o in a cluster of short options */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *buf = malloc(size + 1);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    int c = data[0] % (int)(sizeof cmds / sizeof *cmds);
    char *argv[26];
    int argc = 0;
    argv[argc++] = (char *)cmds[c].name;
    for (char *p = buf; p < buf + size - 1 && argc < 25; p += strlen(p) + 1)
        if (!dropped(p)) argv[argc++] = p;
    argv[argc] = NULL;
    cli_getopt_reset(argc, argv);
    int rc = cmds[c].fn(argc, argv);
    static const int listed[] = {0, 1, 64, 65, 66, 69, 70, 71, 73, 74};
    int ok = 0;
    for (size_t i = 0; i < sizeof listed / sizeof *listed; i++) ok |= rc == listed[i];
    if (!ok) abort(); /* an exit code docs/cli.md does not list */
    free(buf);
    return 0;
}
