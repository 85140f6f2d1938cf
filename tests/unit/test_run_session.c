/* tests/unit/test_run_session.c — a run's session through its public API (exec/run/run.h), without the
 * CLI: the order in which it shows what it does (its hooks), the exit code it makes of a failure, a
 * failed step and the report's own code, and the side files landing with the report or not at all.
 *
 * The model is run_basic.sh's tiny GPT-2 (1 layer, hidden 32, 2 heads, seq 16, vocab 64, mbs 2) with
 * megatron-bf16 for 3 steps on the cpu backend, one rank. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/run/run.h"
#include "test.h"

/* What the hooks saw: one letter per call in order (P planned, B built, S started, b step_begin,
 * e step_end, K ranks, R report), the failures and notes, and the log's step lines. */
typedef struct {
    char ev[64];
    int nev, fails, notes, step_lines;
    Status fail_st;
    char fail_msg[1100], note_msg[1100];
    int report_rc;       /* what the report hook returns */
    uint32_t seen_steps; /* ms.steps when the report ran */
    int same_plan;       /* the plan held to is the one built (no --stack) */
} Seen;

static void ev(Seen *s, char c)
{
    if (s->nev < (int)sizeof s->ev - 1) s->ev[s->nev++] = c;
}
static void on_fail(void *ctx, Status st, const char *msg)
{
    Seen *s = ctx;
    s->fails++, s->fail_st = st;
    snprintf(s->fail_msg, sizeof s->fail_msg, "%s", msg);
}
static void on_note(void *ctx, const char *msg)
{
    Seen *s = ctx;
    s->notes++;
    snprintf(s->note_msg, sizeof s->note_msg, "%s", msg);
}
static void on_say(void *ctx, const char *text) { ((Seen *)ctx)->step_lines += !strncmp(text, "step ", 5); }
static void on_planned(void *ctx, const RunSession *r) { (void)r, ev(ctx, 'P'); }
static void on_built(void *ctx) { ev(ctx, 'B'); }
static void on_started(void *ctx, const RunSession *r) { (void)r, ev(ctx, 'S'); }
static void on_step_begin(void *ctx) { ev(ctx, 'b'); }
static void on_step_end(void *ctx, uint32_t done, uint32_t total, double t)
{
    (void)done, (void)total, (void)t, ev(ctx, 'e');
}
static int on_ranks(void *ctx, const RunSession *r) { return (void)r, ev(ctx, 'K'), 0; }
static int on_report(void *ctx, const RunSession *r)
{
    Seen *s = ctx;
    ev(s, 'R');
    s->seen_steps = r->ms.steps;
    s->same_plan = r->plan == r->built && r->comm->size == 1;
    return s->report_rc;
}

/* Every hook, in run.h's order. */
static RunHooks hooks_of(Seen *s)
{
    return (RunHooks){s,          on_fail,       on_note,     on_say,   on_planned, on_built,
                      on_started, on_step_begin, on_step_end, on_ranks, on_report};
}

static RunSpec tiny(void)
{
    RunSpec a = {.backend = "cpu",
                 .model = "gpt2-124m",
                 .recipe = "megatron-bf16",
                 .steps = 3,
                 .log_every = 1,
                 .mbs = 2,
                 .mtp_weight = -1, /* not given (run.h): 0 would set the MTP loss's weight, refused without MTP */
                 .hyper = model_hyper_default()};
    a.ov.layers = 1, a.ov.hidden = 32, a.ov.heads = 2, a.ov.seq = 16, a.ov.vocab = 64;
    return a;
}

static char dir[256];
static const char *path_in(const char *name)
{
    static char p[320];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* One rank, 3 steps: planned, built, the header, then per step the progress line goes (b), the step's line,
 * the progress line (e); once more after the last step (b); the report. Every step line is logged. */
static void test_hooks_in_order(void)
{
    Seen s = {0};
    RunSpec a = tiny();
    RunHooks h = hooks_of(&s);
    CHECK_EQ_INT(run_session(&a, &h), 0);
    CHECK_STR(s.ev, "PBSbebebebR");
    CHECK_EQ_INT(s.step_lines, 3);
    CHECK_EQ_INT(s.fails, 0);
    CHECK_EQ_INT(s.seen_steps, 3);
    CHECK(s.same_plan);
    /* quiet: no header, no step lines; the same steps and report */
    Seen q = {0};
    a.quiet = 1;
    h = hooks_of(&q);
    CHECK_EQ_INT(run_session(&a, &h), 0);
    CHECK_STR(q.ev, "PBbebebebR");
    CHECK_EQ_INT(q.step_lines, 0);
    /* no hooks: silent, the same outcome */
    CHECK_EQ_INT(run_session(&a, NULL), 0);
}

/* The report's code is the run's; the loss log lands with a report that was written (0 or 1: a value
 * outside its tolerance), and not at all when the report failed (73: its file could not be created). */
static void test_report_code_and_files(void)
{
    const struct {
        int report_rc, want_rc, want_file;
    } k[] = {{0, 0, 1}, {1, 1, 1}, {73, 73, 0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        Seen s = {.report_rc = k[i].report_rc};
        RunSpec a = tiny();
        a.quiet = 1, a.loss_log = path_in("loss.csv");
        unlink(a.loss_log);
        RunHooks h = hooks_of(&s);
        CHECKF(run_session(&a, &h) == k[i].want_rc, "report %d", k[i].report_rc);
        CHECKF((access(a.loss_log, F_OK) == 0) == k[i].want_file, "report %d: loss log %s", k[i].report_rc,
               k[i].want_file ? "missing" : "left behind");
        unlink(a.loss_log);
    }
}

/* Failures before anything runs: shown once through fail with their status, the exit code sysexits',
 * nothing else shown. */
static void test_failures_before_the_model(void)
{
    const struct {
        const char *model, *recipe, *stack, *backend;
        Status st;
        int rc;
        const char *says;
    } k[] = {
        {"nope", "megatron-bf16", NULL, "cpu", ST_USAGE, 64, "--model: unknown model 'nope' (known: gpt-7b, "},
        {"gpt2-124m", "nope", NULL, "cpu", ST_USAGE, 64, "--recipe: unknown recipe 'nope' (known: "},
        {"gpt2-124m", "megatron-bf16", "nope", "cpu", ST_USAGE, 64, "--stack: unknown stack 'nope' (known: "},
        {"gpt2-124m", "megatron-bf16", NULL, "tpu", ST_USAGE, 64, "--backend: unknown backend 'tpu'"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        Seen s = {0};
        RunSpec a = tiny();
        a.model = k[i].model, a.recipe = k[i].recipe, a.stack = k[i].stack, a.backend = k[i].backend;
        RunHooks h = hooks_of(&s);
        CHECKF(run_session(&a, &h) == k[i].rc, "case %zu", i);
        CHECK_EQ_INT(s.fails, 1);
        CHECK_EQ_INT(s.fail_st, k[i].st);
        CHECK_CONTAINS(s.fail_msg, k[i].says);
        CHECK_STR(s.ev, "");
    }
}

/* A failed step (FP8PLAN_FAULT_STEP=2, the test hook) on one rank: shown through fail (70), the report
 * still covers the step taken, --save refused with a note, and the run ends with the step's code. */
static void test_failed_step(void)
{
    Seen s = {0};
    RunSpec a = tiny();
    a.quiet = 1, a.save = path_in("s.ckpt");
    unlink(a.save);
    RunHooks h = hooks_of(&s);
    setenv("FP8PLAN_FAULT_STEP", "2", 1);
    int rc = run_session(&a, &h);
    unsetenv("FP8PLAN_FAULT_STEP");
    CHECK_EQ_INT(rc, 70);
    CHECK_EQ_INT(s.fails, 1);
    CHECK_EQ_INT(s.fail_st, ST_SOFTWARE);
    CHECK_CONTAINS(s.fail_msg, "step 2: fault injected");
    CHECK_EQ_INT(s.seen_steps, 1);
    CHECK_STR(s.note_msg, "--save: no checkpoint (step 2 failed)");
    CHECK(access(a.save, F_OK) != 0);
    CHECK_STR(s.ev, "PBbebbR"); /* step 1; step 2's progress line goes before its failure; after the loop */
}

int main(void)
{
    const char *td = getenv("TMPDIR"); /* the run's files: under $TMPDIR, else /tmp */
    snprintf(dir, sizeof dir, "%s/fp8plan-run-session-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FAIL - mkdtemp %s\n", dir);
        return 1;
    }
    RUN(test_hooks_in_order);
    RUN(test_report_code_and_files);
    RUN(test_failures_before_the_model);
    RUN(test_failed_step);
    rmdir(dir);
    return test_summary();
}
