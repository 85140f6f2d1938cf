/* tests/unit/test_cli_faults.c — a subcommand that runs out of memory says so
 * and exits 71, leaks nothing and leaves no file behind, wherever it happens.
 *
 * The subcommands run in this process (this binary links the CLI's objects,
 * all but main.o, and calls cmd_plan, cmd_run, ... as main() does), with the
 * C library's allocators wrapped (support/fault_inject.h; -Wl,--wrap in the
 * Makefile): each command line is run once to count the allocations the
 * project's code makes, then once per allocation with that one failing. Each
 * failing run must exit 71 (EX_OSERR, docs/cli.md's code for ST_NOMEM) with a
 * message naming memory on stderr, free every block it took and leave the
 * output folder empty: no report, no checkpoint, no temporary file. Without a
 * fault the command must exit 0 and write its -o (and --save) files, which
 * the sweep then removes.
 *
 * tier: full (make test-full, which .ci/run runs): every allocation of every command line fails
 * once, about 75 s, and 25 s more for the MoE line (2,684 allocator calls). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "exec/backend/elem.h"
#include "reports/table.h"
#include "support/fault_inject.h"
#include "test.h"
#include "util/fileio.h"

#define DECLARE(name, fn, summary) int fn(int argc, char **argv);
FP8PLAN_COMMANDS(DECLARE)
#undef DECLARE

static char dir[256]; /* the command lines' output folder */

/* A command line; "@" in an argument stands for the output folder. `made`: the files it writes there;
 * `kept`: one of them that a failure after it was written may leave, complete (the checkpoint --save
 * writes before the report: training state is not thrown away because a report could not be made). */
typedef struct {
    int (*fn)(int, char **);
    const char *args[32];
    const char *made[3];
    const char *kept;
} Line;

/* The kept file as the run without a fault wrote it (read in the warm-up, outside the sweeps' heap counts;
 * one line has a kept file): a file left by a failure must be byte-identical. */
static char *kept_ref;
static size_t kept_len;

static int expand(const char *a, char *buf, size_t size)
{
    const char *at = strchr(a, '@');
    if (!at) return snprintf(buf, size, "%s", a) < (int)size;
    return snprintf(buf, size, "%.*s%s%s", (int)(at - a), a, dir, at + 1) < (int)size;
}

/* Run the line with stdout to /dev/null and stderr to a file; the exit code as a status: 0 ST_OK,
 * 71 ST_NOMEM, anything else ST_SOFTWARE, with the last line of stderr as the message. Then the
 * folder: without a fault every `made` file is there and whole; after one, nothing but the kept file
 * as the good run wrote it. Either way the folder is emptied. */
static Status line_op(const void *arg, Err *e)
{
    const Line *l = arg;
    static char store[32][512];
    char *argv[33];
    int argc = 0;
    for (; l->args[argc]; argc++) {
        if (!expand(l->args[argc], store[argc], sizeof store[argc])) return err_set(e, ST_SOFTWARE, "long argument");
        argv[argc] = store[argc];
    }
    argv[argc] = NULL;
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s.stderr", dir);
    fflush(stdout), fflush(stderr);
    int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY),
        ef = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || null < 0 || ef < 0) return err_set(e, ST_SOFTWARE, "cannot redirect");
    dup2(null, 1), dup2(ef, 2);
    cli_getopt_reset(argc, argv);
    int rc = l->fn(argc, argv);
    /* the command is over: what follows is the test's own, neither counted nor tracked */
    __atomic_store_n(&tracking, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&F.kind, K_NONE, __ATOMIC_RELEASE);
    fflush(stdout), fflush(stderr);
    dup2(out, 1), dup2(err, 2);
    close(out), close(err), close(null), close(ef);
    char msg[512] = "", buf[512];
    FILE *f = fopen(errpath, "r");
    while (f && fgets(buf, sizeof buf, f))
        if (buf[0] != '\n') snprintf(msg, sizeof msg, "%s", buf);
    if (f) fclose(f);
    unlink(errpath);
    msg[strcspn(msg, "\n")] = '\0';
    Status st = rc == 0    ? ST_OK
                : rc == 71 ? err_set(e, ST_NOMEM, "exit 71: %s", msg)
                           : err_set(e, ST_SOFTWARE, "exit %d: %s", rc, msg);
    if (!st) /* every file it makes, whole */
        for (int i = 0; i < 3 && l->made[i]; i++) {
            char path[512];
            expand(l->made[i], path, sizeof path);
            struct stat sb;
            if (stat(path, &sb) || !S_ISREG(sb.st_mode) || !sb.st_size)
                st = err_set(e, ST_SOFTWARE, "%s: exit 0 without writing %s", argv[0], path);
            else if (l->kept && !strcmp(l->made[i], l->kept) && !kept_ref) {
                Err fe;
                if (file_read_all(path, &kept_ref, &kept_len, &fe)) st = err_set(e, ST_SOFTWARE, "%s", fe.msg);
            }
        }
    /* then nothing else: after a failure at most the kept file, as the good run wrote it */
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char path[512], kept[512] = "";
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (l->kept) expand(l->kept, kept, sizeof kept);
        int made = 0;
        for (int i = 0; i < 3 && l->made[i]; i++) {
            char m[512];
            expand(l->made[i], m, sizeof m);
            made |= !strcmp(m, path);
        }
        char *text = NULL;
        size_t len = 0;
        Err fe;
        int whole = !strcmp(path, kept) && kept_ref && !file_read_all(path, &text, &len, &fe) && len == kept_len &&
                    !memcmp(text, kept_ref, len);
        free(text);
        if (st ? !whole : !made) st = err_set(e, ST_SOFTWARE, "%s (exit %d) left %s", argv[0], rc, path);
        unlink(path);
    }
    if (d) closedir(d);
    return st;
}

static void sweep_line(const char *what, const Line *l)
{
    sweep(K_MALLOC, what, line_op, l, NULL); /* line_op looks at the folder itself */
}

/* The planner's commands: catalog, plan, compare, sweep, the seed's tables, and the report writers (text,
 * CSV, JSON, HTML). */
static const Line PLAN_LINES[] = {
    {.fn = cmd_plan,
     .args = {"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--recipe", "te-fp8", "--tp", "2", "--dp", "4", "-o",
              "@/plan.txt", NULL},
     .made = {"@/plan.txt"}},
    {.fn = cmd_plan,
     .args = {"plan", "--model", "gpt-175b", "--gpu",  "h100-sxm", "--recipe", "fp8lm", "--tp", "8",           "--pp",
              "4",    "--dp",    "4",        "--view", "terms",    "--format", "csv",   "-o",   "@/terms.csv", NULL},
     .made = {"@/terms.csv"}},
    {.fn = cmd_plan, /* --unknown: the band's summary columns */
     .args = {"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--recipe", "te-fp8", "--unknown",
              "attn_out,dense_act", "--format", "csv", "-o", "@/band.csv", NULL},
     .made = {"@/band.csv"}},
    {.fn = cmd_plan, /* a routing a run measured (catalog/routing.c), each rank's all-to-alls for it */
     .args = {"plan",
              "--model",
              "mixtral-8x7b",
              "--gpu",
              "h100-sxm",
              "--recipe",
              "megatron-bf16",
              "--mbs",
              "1",
              "--gbs",
              "2",
              "--seq",
              "4096",
              "--dp",
              "2",
              "--ep",
              "2",
              "--routing",
              "tests/data/routing/mixtral_dp2_ep2.csv",
              "-o",
              "@/routed.txt",
              NULL},
     .made = {"@/routed.txt"}},
    {.fn = cmd_compare,
     .args = {"compare", "--model", "llama3-8b", "--gpu", "h100-sxm", "--recipes", "megatron-bf16,te-fp8,fp8lm",
              "--format", "json", "-o", "@/compare.json", NULL},
     .made = {"@/compare.json"}},
    {.fn = cmd_plan,
     .args = {"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--recipe", "te-fp8", "--format", "html", "-o",
              "@/plan.html", NULL},
     .made = {"@/plan.html"}},
    {.fn = cmd_sweep,
     .args = {"sweep", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "16", "--recipes", "te-fp8", "--top", "3",
              "--format", "csv", "-o", "@/sweep.csv", NULL},
     .made = {"@/sweep.csv"}},
    {.fn = cmd_report,
     .args = {"report", "seed", "--format", "html", "-o", "@/seed.html", NULL},
     .made = {"@/seed.html"}},
    /* a user's own configuration (--from, --explain) and a training log beside its plan (check-log) */
    {.fn = cmd_plan,
     .args = {"plan", "--from", "tests/data/import/mlm_gpt3_7b_tp4_pp1_memory_speed.yaml", "--gpu", "h100-sxm",
              "--gpus", "8", "--explain", "-o", "@/from.txt", NULL},
     .made = {"@/from.txt"}},
    {.fn = cmd_check_log,
     .args = {"check-log", "tests/data/import/logs/gpt3_7b_tp1_pp4_memory_speed__golden_values_dev_dgx_h100.json",
              "--from", "tests/data/import/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml", "--gpu", "h100-sxm", "--gpus", "8",
              "--format", "csv", "-o", "@/check.csv", NULL},
     .made = {"@/check.csv"}},
    {.fn = cmd_check_log,
     .args = {"check-log", "tests/data/import/logs/torchtitan_pr3393.log", "--from",
              "tests/data/import/tt_llama3_8b.toml", "--gpu", "h100-sxm", "--gpus", "8", "--measured-row", "mine", "-o",
              "@/row.csv", NULL},
     .made = {"@/row.csv"}},
};

static void test_plan_faults(void)
{
    for (size_t i = 0; i < sizeof PLAN_LINES / sizeof *PLAN_LINES; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s ... -o %s", PLAN_LINES[i].args[0], PLAN_LINES[i].made[0] + 2);
        sweep_line(what, &PLAN_LINES[i]);
    }
}

/* The executor: a tiny model trained two steps, its comparison written as CSV, a checkpoint saved. */
static const Line RUN_LINE = {.fn = cmd_run,
                              .args = {"run",    "--backend", "cpu",       "--model", "gpt2-124m",  "--layers",
                                       "1",      "--hidden",  "32",        "--heads", "2",          "--seq",
                                       "16",     "--vocab",   "64",        "--steps", "2",          "--recipe",
                                       "te-fp8", "-o",        "@/run.csv", "--save",  "@/run.ckpt", NULL},
                              .made = {"@/run.csv", "@/run.ckpt"},
                              .kept = "@/run.ckpt"};

/* The same run with the page `--format html` writes (charts of the comparison and the loss). */
static const Line RUN_HTML = {
    .fn = cmd_run,
    .args = {"run",      "--backend",  "cpu",     "--model",  "gpt2-124m",     "--layers", "1",
             "--hidden", "32",         "--heads", "2",        "--seq",         "16",       "--vocab",
             "64",       "--steps",    "2",       "--recipe", "megatron-bf16", "--format", "html",
             "-o",       "@/run.html", NULL},
    .made = {"@/run.html"}};

/* A mixture-of-experts model (Mixtral's row shrunk: 4 experts of FFN 16, top-2) under te-fp8, its FP8 experts'
 * grouped GEMMs and scaling records, with the routing log the run writes beside its comparison. */
static const Line RUN_MOE = {.fn = cmd_run,
                             .args = {"run",
                                      "--backend",
                                      "cpu",
                                      "--model",
                                      "mixtral-8x7b",
                                      "--layers",
                                      "1",
                                      "--hidden",
                                      "32",
                                      "--heads",
                                      "2",
                                      "--kv-heads",
                                      "1",
                                      "--seq",
                                      "16",
                                      "--vocab",
                                      "64",
                                      "--experts",
                                      "4",
                                      "--topk",
                                      "2",
                                      "--expert-ffn",
                                      "16",
                                      "--steps",
                                      "2",
                                      "--recipe",
                                      "te-fp8",
                                      "-o",
                                      "@/moe.csv",
                                      "--routing-log",
                                      "@/routing.csv",
                                      NULL},
                             .made = {"@/moe.csv", "@/routing.csv"}};

static void test_run_faults(void)
{
    sweep_line("run ... -o run.csv --save run.ckpt", &RUN_LINE);
    sweep_line("run ... --format html -o run.html", &RUN_HTML);
    sweep_line("run mixtral (experts) ... -o moe.csv --routing-log routing.csv", &RUN_MOE);
}

/* The sweeps number a command's allocations in one run and fail each in the next ones, so a command must
 * make the same allocator calls whatever the values it prints: a run's measured times change the widths of
 * its text tables from one run to the next. A text table's allocations therefore must not depend on its
 * cells' widths: the same calls for a one-digit value, a 20-digit one, a number in %g, prose that wraps onto
 * several lines and a table split into column groups (the line buffer grown by realloc as a line got longer
 * made one call more or fewer, and a sweep's last fault found no call to fail: the html-run flake). */
static const struct {
    const char *what, *text;
    uint64_t count;
    double seconds;
    int ncols; /* columns of `count` (more than 8 split the table into groups) */
} TEXT_CASES[] = {
    {"one-digit values", "a", 1, 0.5, 1},
    {"20-digit values", "a", 18446744073709551615ull, 123456789.25, 1},
    {"a number in %g", "a", 1, 8.4587908706738861e124, 1},
    {"prose that wraps onto 3 lines",
     "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss tttt uuuu vvvv "
     "wwww xxxx yyyy zzzz 1111 2222 3333 4444 5555 6666 7777 8888 9999 0000 abcd efgh ijkl mnop qrst uvwx yzab cdef "
     "ghij klmn opqr stuv",
     1, 0.5, 1},
    {"12 columns of 20 digits: 2 groups", "a", 18446744073709551615ull, 0.5, 12},
};

static long text_table_calls(int i)
{
    TableCol cols[14] = {{"name", NULL, NULL, TC_STR, 0, 0}, {"seconds", NULL, "s", TC_F64, 4, 0}};
    int n = 2 + TEXT_CASES[i].ncols;
    for (int c = 2; c < n; c++) cols[c] = (TableCol){"count", NULL, NULL, TC_U64, 0, TF_GROUP};
    Table *t = table_new(cols, n);
    table_row(t);
    table_str(t, 0, TEXT_CASES[i].text);
    table_f64(t, 1, TEXT_CASES[i].seconds);
    for (int c = 2; c < n; c++) table_u64(t, c, TEXT_CASES[i].count);
    FILE *f = fopen("/dev/null", "w");
    Err e;
    F.kind = K_MALLOC, F.at = -1, F.n = 0;
    Status st = f ? table_write(t, TABLE_TEXT, f, &e) : ST_IO;
    F.kind = K_NONE;
    long calls = F.n;
    CHECKF(st == ST_OK, "%s: the table was not written", TEXT_CASES[i].what);
    if (f) fclose(f);
    table_free(t);
    return calls;
}

static void test_text_table_allocations_fixed(void)
{
    long first = text_table_calls(0);
    CHECK(first > 0); /* the writer's column arrays (widths, minimum widths, the group's columns, the keys) */
    for (size_t i = 1; i < sizeof TEXT_CASES / sizeof *TEXT_CASES; i++) {
        long calls = text_table_calls((int)i);
        CHECKF(calls == first, "%s: %ld allocator calls writing the text table, %ld for %s", TEXT_CASES[i].what, calls,
               first, TEXT_CASES[0].what);
    }
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "1", 1); /* one thread: the sweeps run each command hundreds of times */
    /* run's arena (34 MB with the plan's 32 MiB cuBLASLt workspace) from the heap and kept there between
     * runs: mmap'd afresh its pages would fault in again on each of the sweep's 2,000 runs */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    if (elem_init()) { /* the executor's decode tables are made once per process, outside the sweeps */
        fprintf(stderr, "elem_init failed\n");
        return 1;
    }
    const char *td = getenv("TMPDIR"); /* the output folder: under $TMPDIR, else /tmp */
    snprintf(dir, sizeof dir, "%s/fp8plan-clifaults-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* once each first, untracked: what the libraries set up once per process (stdio, OpenBLAS) is not
     * counted as the first sweep's */
    Err e;
    for (size_t i = 0; i < sizeof PLAN_LINES / sizeof *PLAN_LINES; i++)
        if (line_op(&PLAN_LINES[i], &e)) fprintf(stderr, "warm-up: %s\n", e.msg);
    if (line_op(&RUN_LINE, &e)) fprintf(stderr, "warm-up: %s\n", e.msg);
    if (line_op(&RUN_HTML, &e)) fprintf(stderr, "warm-up: %s\n", e.msg);
    if (line_op(&RUN_MOE, &e)) fprintf(stderr, "warm-up: %s\n", e.msg);
    RUN(test_text_table_allocations_fixed);
    RUN(test_plan_faults);
    RUN(test_run_faults);
    free(kept_ref);
    rmdir(dir);
    return test_summary();
}
