/* cli/cmd_run_check.c — `fp8plan run`'s checks, warnings and progress line (see cmd_run_check.h). */
#include "cli/cmd_run_check.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/num.h"

static const char *CMD = "run";

/* An input that must be a readable file (a FIFO or /dev/stdin too, but a checkpoint only as a regular file):
 * 66 when not. */
static int check_input(const char *flag, const char *path)
{
    struct stat st;
    Err e;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0)
        return cli_fail(CMD, (err_set(&e, ST_NOINPUT, "%s %s: %s", flag, path, strerror(errno)), &e));
    if (S_ISDIR(st.st_mode)) return cli_fail(CMD, (err_set(&e, ST_NOINPUT, "%s %s: is a directory", flag, path), &e));
    if (!strcmp(flag, "--resume") && !S_ISREG(st.st_mode)) /* exec/ckpt/ckpt.c reads the header, then the file again */
        return cli_fail(
            CMD,
            (err_set(&e, ST_NOINPUT, "%s %s: a checkpoint must be a regular file (it is read twice)", flag, path), &e));
    return 0;
}

int run_check_paths(const RunSpec *a)
{
    const struct {
        const char *flag, *path;
        int output;
    } p[] = {{"-o", a->out, 1},
             {"--save", a->save, 1},
             {"--scaling-trace", a->trace, 1},
             {"--loss-log", a->loss_log, 1},
             {"--routing-log", a->routing_log, 1},
             {"--data", a->data, 0},
             {"--resume", a->resume, 0}};
    enum { N = sizeof p / sizeof *p };
    Err e;
    int rc;
    for (int i = 0; i < N; i++) {
        if (!p[i].path) continue;
        if (p[i].output && outfile_check(p[i].path, &e)) {
            err_prefix(&e, "%s", p[i].flag);
            return cli_fail(CMD, &e);
        }
        if (!p[i].output && (rc = check_input(p[i].flag, p[i].path))) return rc;
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            if (!p[i].path || !p[j].path || (!p[i].output && !p[j].output)) continue;
            if (!strcmp(p[i].flag, "--save") && !strcmp(p[j].flag, "--resume")) continue; /* continue in place */
            if (!strcmp(p[i].path, "-") && !strcmp(p[j].path, "-"))
                return cli_usage(CMD, "%s and %s both go to standard output; give one of them a file", p[i].flag,
                                 p[j].flag);
            if (path_same_file(p[i].path, p[j].path))
                return cli_usage(CMD, "%s %s and %s %s name the same file; %s", p[i].flag, p[i].path, p[j].flag,
                                 p[j].path,
                                 p[j].output ? "each output needs its own" : "the output would replace the input");
        }
    return 0;
}

void run_warn_model(const RunSpec *a, const ModelSpec *base, const ModelSpec *m, const Plan *p, const char *backend)
{
    if (a->ov.seq && a->ov.seq > base->seq_len)
        fprintf(stderr,
                "fp8plan run: warning: --seq %u is beyond %s's context of %u tokens;\n"
                "  the run trains %s positions (a longer position table than the catalog's model has)\n",
                a->ov.seq, base->name, base->seq_len, num_fmt_grouped(m->seq_len, (char[32]){0}, 32));
    /* A CPU does a few tens of GFLOP/s on these GEMMs (make bench measures it): past a TFLOP of work
     * the run takes minutes, so say so before it starts. */
    double total = p->model_flops_step * (double)a->steps;
    if (!strcmp(backend, "cpu") && total > 1e12)
        fprintf(stderr,
                "fp8plan run: note: %s at this size is %.2f TFLOP per step, %.1f TFLOP for %u steps on the\n"
                "  CPU backend: expect minutes (the ETA follows the first step). --layers, --hidden, --seq or\n"
                "  --steps make it smaller, e.g. --layers 2 --hidden 256 --seq 128\n",
                base->name, p->model_flops_step / 1e12, total / 1e12, a->steps);
}

static int progress_on(void) { return isatty(STDERR_FILENO); }

void run_progress_build(const ModelSpec *m, const Plan *p, int threads)
{
    if (!progress_on()) return;
    fprintf(stderr,
            "\r\033[Kbuilding %s: %u layers, hidden %u, %s parameters; allocating the arena and "
            "initializing the weights on %d threads ...",
            m->name, m->layers, m->hidden, num_fmt_grouped(p->params_total, (char[32]){0}, 32), threads);
    fflush(stderr);
}

static void put_duration(char *buf, size_t n, double s)
{
    if (s < 60)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

void run_progress_step(uint32_t done, uint32_t total, double elapsed_s)
{
    if (!progress_on() || !done) return;
    double per = elapsed_s / done, left = per * (total - done);
    char eta[32], el[32];
    put_duration(eta, sizeof eta, left);
    put_duration(el, sizeof el, elapsed_s);
    fprintf(stderr, "\r\033[Kstep %u/%u  %.2f s/step  elapsed %s  ETA %s", done, total, per, el, eta);
    fflush(stderr);
}

void run_progress_end(void)
{
    if (!progress_on()) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}
