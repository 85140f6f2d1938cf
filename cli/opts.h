/* cli/opts.h — declarative options: a subcommand describes each flag once, as a row of a table
 * {name, kind, target, range, help}, and one parser (getopt_long underneath) reads argv into the
 * command's argument struct from it; the option lines of --help are generated from the same rows.
 *
 * A row's target is an offset into the struct the caller hands the parser (`base`), so a table is a
 * `static const` array. A row of kind OPT_BLOCK includes another table whose targets sit at an
 * offset of their own; a row of kind OPT_USE takes one flag of a shared table by name, with the
 * command's own range and help: the plan inputs (plan_flags, cli/cmd_plan.h) are such a table, read
 * once for every command that plans or runs. Numbers are read with util/num.h; a bad value is a usage error (exit 64) that
 * names the flag and the value: "--mbs: '0' must be at least 1". A flag given twice keeps the last
 * value (a callback may refuse a second, different one).
 *
 *   static const CliOpt opts[] = {
 *       {"steps", OPT_U32, offsetof(Args, steps), 1, 1e8, .arg = "N", .help = "training steps (20)"},
 *       {"quick", OPT_FLAG, offsetof(Args, reps), .set = 3, .help = "--reps 3"},
 *       {0},
 *   };
 *   int rc = cli_opts_parse(&(CliParse){.cmd = "calibrate", .opts = opts, .help = help}, argc, argv, &args);
 */
#ifndef FP8PLAN_CLI_OPTS_H
#define FP8PLAN_CLI_OPTS_H

#include <stddef.h>

typedef struct CliOpt CliOpt;
typedef struct CliParse CliParse;

/* OPT_FN's reader: parse arg (NULL for a flag without a value) into target. Returns 0 or the exit code
 * after the message (cli_usage). */
typedef int (*CliOptFn)(const CliParse *p, const CliOpt *o, const char *arg, void *target);

/* The mark of a row: MARK(T, field) for an int field of T. */
#define CLI_MARK(T, field) (offsetof(T, field) + 1)

typedef enum {
    OPT_END = 0, /* ends a table */
    OPT_FLAG,    /* no value: the int at the target becomes o->set */
    OPT_STR,     /* const char *: the argument itself */
    OPT_U32,     /* uint32_t, a whole number in [lo, hi] */
    OPT_U64,     /* uint64_t, a whole number in [lo, hi] */
    OPT_COUNT,   /* uint64_t, a whole number also written 2e6 (num_parse_count), in [lo, hi] */
    OPT_F64,     /* double in [lo, hi], finite */
    OPT_F32,     /* float, read as a double in [lo, hi] */
    OPT_CHOICE,  /* int: the index of the argument in o->words (NULL-terminated), else "--NAME: 'ARG' is
                  * not A, B or C" */
    OPT_FN,      /* o->fn reads it (enums, lists, words); o->has_arg says whether it takes a value */
    OPT_BLOCK,   /* the rows of o->block, their targets at o->off + their own offsets */
    OPT_USE,     /* the row named o->name of the shared table o->block, its targets at o->off + its own
                  * offsets: the command takes that flag, in [lo, hi] when hi > 0 (else the shared
                  * row's range), described by o->help and o->arg when given (else the shared row's),
                  * under o->need and o->hide (the shared row's are not used) */
    OPT_TEXT,    /* no flag: o->help is a line of the generated help as written (headings, groups) */
} CliOptKind;

struct CliOpt {
    const char *name; /* the long name without "--" */
    CliOptKind kind;
    size_t off;      /* the target: offset into the parser's base */
    double lo, hi;   /* a number's range (hi 0: the type's largest) */
    int set;         /* OPT_FLAG: the value stored; OPT_FN: handed to fn as o->set */
    int has_arg;     /* OPT_FN: 1 when the flag takes a value */
    char short_name; /* 'o' for -o, else 0 */
    unsigned given;  /* bits or'd into the unsigned at the parser's given_off when the flag is read */
    size_t mark;     /* offset + 1 (beside off) of an int set to 1 when the flag is read (0: none) */
    unsigned need;   /* the command must accept one of these bits (CliParse.mask), else "does not apply" */
    unsigned hide;   /* help: the line is left out when the command's mask has one of these bits */
    CliOptFn fn;
    const CliOpt *block;
    const char *const *words; /* OPT_CHOICE */
    const char *arg;          /* the value's name in help: "N", "FILE" */
    const char *help;         /* the help line after the name (continuation lines indented in the text); NULL or
                       * "" (a use: "" only, NULL takes the shared row's): not listed, or listed by an
                       * OPT_TEXT row of its group */
};

struct CliParse {
    const char *cmd; /* "run": names the command in messages */
    const CliOpt *opts;
    const char *help;      /* what --help prints: all of it, or (help_tail given) what comes first */
    const char *help_tail; /* NULL, or --help prints help, the table's option lines, then this */
    unsigned mask;         /* the command's bits, for rows with need */
    size_t given_off;      /* offset + 1 of the unsigned that collects the rows' given bits (0: none) */
    int help_col;          /* generated help: the column the help text starts at */
    int operands;          /* 1: operands are the caller's, left at argv[optind..] (else refused) */
};

/* Parse argv[1..] (argv[0] names the command for getopt) into base. Returns 0, -1 after --help was
 * printed (exit 0), or the exit code (64) after the message: an unknown flag, a missing or extra
 * value, a value out of range or not a number, a flag the command's mask refuses, an operand (unless
 * p->operands). */
int cli_opts_parse(const CliParse *p, int argc, char **argv, void *base);

/* Read one value as row o says (its kind, range and messages) into target: for an OPT_FN that reads a
 * number the way a row would. Returns 0 or the exit code after the message. */
int cli_opts_read(const CliParse *p, const CliOpt *o, const char *arg, void *target);

/* The row named `name` (blocks and uses resolved; *off gets the offset its block adds), or NULL. */
const CliOpt *cli_opts_find(const CliOpt *opts, const char *name, size_t *off);

/* The option lines of --help: every row with help ("  --name ARG" padded to help_col, then the help)
 * and every OPT_TEXT row, in table order, leaving out rows whose need the mask lacks or whose hide it
 * has. Writes at most cap bytes with the NUL; returns buf. */
const char *cli_opts_help(const CliParse *p, char *buf, size_t cap);

/* A whole --help: head, the option lines (cli_opts_help), tail, into buf (cut to cap); buf returned. */
const char *cli_opts_usage(const CliParse *p, const char *head, const char *tail, char *buf, size_t cap);

/* The readers' message for a number v outside [lo, hi], for an OPT_FN that reads a number first: whole
 * numbers "--NAME: 'ARG' must be at least LO" or "... is too large (at most HI)", else "--NAME: 'ARG'
 * must be in [LO, HI]". Returns 64. */
int cli_opt_range(const CliParse *p, const CliOpt *o, const char *arg, double v, double lo, double hi, int whole);

#endif
