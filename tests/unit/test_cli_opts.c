/* tests/unit/test_cli_opts.c — the declarative option parser (cli/opts.h): each kind's value and range,
 * the usage errors (unknown flag, missing or extra value, out of range, not a number, a flag the mask
 * refuses, an operand) with their exit code and message, a repeated flag, blocks at an offset, the
 * given bits, and the help lines generated from the rows. One table of command lines. */
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/opts.h"
#include "test.h"

typedef struct {
    uint32_t n;
    int seen; /* marked by --k */
} Inner;

typedef struct {
    uint32_t steps;
    uint64_t bytes;
    double frac;
    float lr;
    const char *name;
    int quiet, mode, pick;
    unsigned given;
    Inner in;  /* the block's targets */
    Inner in2; /* the shared row's, through a use */
} Args;

static int read_mode(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    (void)p, (void)o;
    if (strcmp(arg, "a") && strcmp(arg, "b")) return 64;
    *(int *)t = arg[0];
    return 0;
}

static const CliOpt inner_opts[] = {
    {"n", OPT_U32, offsetof(Inner, n), 1, 4096, .given = 4, .arg = "N", .help = "a block's number"},
    {0},
};

/* a shared table: --k in [1, 10] marks seen */
static const CliOpt shared_opts[] = {
    {"j", OPT_U32, offsetof(Inner, n), 1, 10, .arg = "J", .help = "not used by the command"},
    {"k", OPT_U32, offsetof(Inner, n), 1, 10, .need = 16, .mark = CLI_MARK(Inner, seen), .arg = "K", .help = "k"},
    {0},
};

static const CliOpt opts[] = {
    {.kind = OPT_TEXT, .help = "group:"},
    {"steps", OPT_U32, offsetof(Args, steps), 1, 1e8, .arg = "N", .help = "training steps"},
    {"bytes", OPT_COUNT, offsetof(Args, bytes), .arg = "BYTES", .help = "a count, 2e6 allowed"},
    {"frac", OPT_F64, offsetof(Args, frac), 0, 1, .given = 1, .arg = "F", .help = "a fraction\n    continued"},
    {"lr", OPT_F32, offsetof(Args, lr), 0, 10, .arg = "X"},
    {"name", OPT_STR, offsetof(Args, name), .arg = "a-very-long-metavar", .help = "past the column"},
    {"quiet", OPT_FLAG, offsetof(Args, quiet), .set = 1, .need = 8, .help = "needs mask bit 8"},
    {"loud", OPT_FLAG, offsetof(Args, quiet), .set = 0, .hide = 2, .help = "hidden under mask bit 2"},
    {"mode", OPT_FN, offsetof(Args, mode), .has_arg = 1, .fn = read_mode, .given = 2},
    {"output", OPT_STR, offsetof(Args, name), .short_name = 'o', .arg = "FILE", .help = "short"},
    {"pick", OPT_CHOICE, offsetof(Args, pick), .words = (const char *const[]){"ceil", "floor", "near", NULL}},
    {"in", OPT_BLOCK, offsetof(Args, in), .block = inner_opts},
    {"k", OPT_USE, offsetof(Args, in2), 1, 5, .block = shared_opts, .help = "k, at most 5 here"},
    {0},
};

/* Parse the line (words split at spaces) under mask; rc, the Args and the stderr's first line back. */
static int parse(const char *line, unsigned mask, Args *a, char *err, size_t cap)
{
    static char store[512];
    char *argv[32] = {"fp8plan t"};
    int argc = 1;
    snprintf(store, sizeof store, "%s", line);
    for (char *w = strtok(store, " "); w && argc < 31; w = strtok(NULL, " ")) argv[argc++] = w;
    argv[argc] = NULL;
    memset(a, 0, sizeof *a);
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_cli_opts.%d", (int)getpid());
    fflush(stderr);
    int saved = dup(2), f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(f, 2);
    CliParse p = {.cmd = "t", .opts = opts, .help = "", .mask = mask, .given_off = offsetof(Args, given) + 1};
    int rc = cli_opts_parse(&p, argc, argv, a);
    fflush(stderr);
    dup2(saved, 2), close(saved), close(f);
    FILE *r = fopen(path, "r");
    err[0] = '\0';
    if (r && !fgets(err, (int)cap, r)) err[0] = '\0';
    if (r) fclose(r);
    unlink(path);
    err[strcspn(err, "\n")] = '\0';
    return rc;
}

/* Every line: its exit code and the message (empty: none). */
static void test_lines(void)
{
    static const struct {
        const char *line;
        unsigned mask;
        int rc;
        const char *err;
    } t[] = {
        {"--steps 7 --bytes 2e6 --frac 0.5 --lr 0.125 --name x --mode b --n 4096", 0, 0, ""},
        {"--steps 0", 0, 64, "fp8plan t: --steps: '0' must be at least 1"},
        {"--steps 100000001", 0, 64, "fp8plan t: --steps: '100000001' is too large (at most 100000000)"},
        {"--steps -1", 0, 64, "fp8plan t: --steps: "},
        {"--steps 1.5", 0, 64, "fp8plan t: --steps: "},
        {"--bytes 1e400", 0, 64, "fp8plan t: --bytes: '1e400' is out of range"},
        {"--frac 1.5", 0, 64, "fp8plan t: --frac: '1.5' must be in [0, 1]"},
        {"--frac nan", 0, 64, "fp8plan t: --frac: "},
        {"--lr 11", 0, 64, "fp8plan t: --lr: '11' must be in [0, 10]"},
        {"--n 4097", 0, 64, "fp8plan t: --n: '4097' is too large (at most 4096)"},
        {"--k 6", 0, 64, "fp8plan t: --k: '6' is too large (at most 5)"}, /* the use's range, not the shared 10 */
        {"--j 1", 0, 64, "fp8plan t: unrecognized option '--j'"},         /* a shared row the command does not use */
        {"--colour red", 0, 64, "fp8plan t: unrecognized option '--colour'"},
        {"--steps", 0, 64, "fp8plan t: option '--steps' needs a value"},
        {"--quiet=1", 8, 64, "fp8plan t: option '--quiet' takes no value"},
        {"--quiet", 0, 64, "fp8plan t: --quiet does not apply here"},
        {"--quiet", 8, 0, ""},
        {"--mode c", 0, 64, ""}, /* the callback's own code (it printed nothing) */
        {"--pick up", 0, 64, "fp8plan t: --pick: 'up' is not ceil, floor or near"},
        {"--pick Ceil", 0, 64, "fp8plan t: --pick: 'Ceil' is not ceil, floor or near"},
        {"extra", 0, 64, "fp8plan t: unexpected argument 'extra'"},
        {"--help", 0, -1, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        Args a;
        char err[256];
        int rc = parse(t[i].line, t[i].mask, &a, err, sizeof err);
        CHECKF(rc == t[i].rc, "'%s': rc %d, want %d", t[i].line, rc, t[i].rc);
        if (t[i].err[0])
            CHECKF(!strncmp(err, t[i].err, strlen(t[i].err)), "'%s': '%s', want '%s'", t[i].line, err, t[i].err);
        else
            CHECKF(!err[0], "'%s': unexpected message '%s'", t[i].line, err);
    }
}

/* The values of the good line land in their fields, the block's at its offset, the given bits or'd. */
static void test_values(void)
{
    Args a;
    char err[256];
    CHECK(parse("--steps 7 --bytes 2e6 --frac 0.5 --lr 0.125 -o out --mode b --n 4096", 0, &a, err, sizeof err) == 0);
    CHECK_EQ_U64(a.steps, 7);
    CHECK_EQ_U64(a.bytes, 2000000);
    CHECK(a.frac == 0.5 && a.lr == 0.125f);
    CHECK_STR(a.name, "out");
    CHECK_EQ_INT(a.mode, 'b');
    CHECK_EQ_U64(a.in.n, 4096);
    CHECK_EQ_U64(a.given, 1u | 2u | 4u); /* --frac 1, --mode 2, --n 4 */
    CHECK(a.in2.seen == 0);
    CHECK(parse("--k 5", 0, &a, err, sizeof err) == 0); /* the shared row's need (16) does not bind a use */
    CHECK_EQ_U64(a.in2.n, 5);
    CHECK_EQ_INT(a.in2.seen, 1);
    CHECK_EQ_U64(a.in.n, 0);
    CHECK(parse("--pick near", 0, &a, err, sizeof err) == 0);
    CHECK_EQ_INT(a.pick, 2);
    CHECK(parse("--pick near --pick ceil", 0, &a, err, sizeof err) == 0);
    CHECK_EQ_INT(a.pick, 0);
    /* a repeated flag keeps the last value; a flag's set value, last one wins */
    CHECK(parse("--steps 3 --steps 5 --quiet --loud", 8, &a, err, sizeof err) == 0);
    CHECK_EQ_U64(a.steps, 5);
    CHECK_EQ_INT(a.quiet, 0);
    CHECK_EQ_U64(a.given, 0);
    CHECK(parse("--loud --quiet", 8, &a, err, sizeof err) == 0);
    CHECK_EQ_INT(a.quiet, 1);
}

/* The help lines: padded to column 23, a long head on the same line after one space, a row without help
 * left out, need and hide honoured, the block's rows in place, OPT_TEXT as written. */
static void test_help(void)
{
    char buf[1024];
    CliParse p = {.cmd = "t", .opts = opts, .mask = 2};
    cli_opts_help(&p, buf, sizeof buf);
    CHECK_STR(buf, "group:\n"
                   "  --steps N            training steps\n"
                   "  --bytes BYTES        a count, 2e6 allowed\n"
                   "  --frac F             a fraction\n"
                   "    continued\n"
                   "  --name a-very-long-metavar past the column\n"
                   "  -o FILE              short\n"
                   "  --n N                a block's number\n"
                   "  --k K                k, at most 5 here\n");
    p.mask = 8, p.help_col = 10;
    cli_opts_help(&p, buf, sizeof buf);
    CHECK_CONTAINS(buf, "  --quiet needs mask bit 8\n  --loud  hidden under mask bit 2\n");
    char page[64];
    p.mask = 0;
    CHECK_STR(cli_opts_usage(&(CliParse){.opts = inner_opts}, "usage: t\n", "exit 0\n", page, sizeof page),
              "usage: t\n  --n N                a block's number\nexit 0\n");
    CHECK_STR(cli_opts_usage(&(CliParse){.opts = inner_opts}, "usage: t\n", "exit 0\n", page, 12), "usage: t\n  ");
    char small[8];
    CHECK_STR(cli_opts_help(&p, small, sizeof small), "group:\n"); /* cut to the buffer, NUL-terminated */
}

/* With operands allowed they stay for the caller, after the flags (getopt moves them last). */
static void test_operands(void)
{
    char w0[] = "fp8plan t", w1[] = "seed", w2[] = "--steps", w3[] = "4", w4[] = "extra";
    char *argv[] = {w0, w1, w2, w3, w4, NULL};
    Args a;
    memset(&a, 0, sizeof a);
    CliParse p = {.cmd = "t", .opts = opts, .operands = 1};
    CHECK(cli_opts_parse(&p, 5, argv, &a) == 0);
    CHECK_EQ_U64(a.steps, 4);
    CHECK(optind == 3 && !strcmp(argv[optind], "seed") && !strcmp(argv[optind + 1], "extra"));
}

/* A table that is wrong (a use of a name the shared table lacks, more rows than the parser holds) is the
 * program's defect: exit 70 with a message, whatever the command line. */
static void test_bad_tables(void)
{
    char w0[] = "fp8plan t";
    char *argv[] = {w0, NULL};
    Args a;
    static const CliOpt lost[] = {{"nope", OPT_USE, 0, .block = shared_opts}, {0}};
    CHECK_EQ_INT(cli_opts_parse(&(CliParse){.cmd = "t", .opts = lost}, 1, argv, &a), 70);
    enum { N = 200 };
    CliOpt *many = calloc(N + 1, sizeof *many);
    CHECK(many != NULL);
    if (!many) return;
    for (int i = 0; i < N; i++) many[i] = (CliOpt){"steps", OPT_FLAG, offsetof(Args, quiet), .set = i};
    CHECK_EQ_INT(cli_opts_parse(&(CliParse){.cmd = "t", .opts = many}, 1, argv, &a), 70);
    many[192].kind = OPT_END; /* 192 rows: the most it holds */
    CHECK_EQ_INT(cli_opts_parse(&(CliParse){.cmd = "t", .opts = many}, 1, argv, &a), 0);
    free(many);
}

static void test_find(void)
{
    size_t off = 1;
    const CliOpt *o = cli_opts_find(opts, "n", &off);
    CHECK(o && o->kind == OPT_U32 && off == offsetof(Args, in));
    CHECK(cli_opts_find(opts, "nope", NULL) == NULL);
    o = cli_opts_find(opts, "k", &off);
    CHECK(o && o->hi == 10 && off == offsetof(Args, in2)); /* the shared row itself */
    CHECK(cli_opts_find(opts, "j", NULL) == NULL);
}

int main(void)
{
    RUN(test_lines);
    RUN(test_values);
    RUN(test_help);
    RUN(test_operands);
    RUN(test_bad_tables);
    RUN(test_find);
    return test_summary();
}
