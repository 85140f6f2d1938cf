/* exec/run/run_check.c — what a run checks before it builds anything and the warnings it gives once the
 * model and plan are known (see run.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/run/run.h"
#include "util/num.h"

/* An input that must be a readable file (a FIFO or /dev/stdin too, but a checkpoint only as a regular file):
 * 66 when not. */
static int check_input(const char *flag, const char *path)
{
    struct stat st;
    Err e;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0)
        return run_fail((err_set(&e, ST_NOINPUT, "%s %s: %s", flag, path, strerror(errno)), &e));
    if (S_ISDIR(st.st_mode)) return run_fail((err_set(&e, ST_NOINPUT, "%s %s: is a directory", flag, path), &e));
    if (!strcmp(flag, "--resume") && !S_ISREG(st.st_mode)) /* exec/ckpt/ckpt.c reads the header, then the file again */
        return run_fail(
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
            return run_fail(&e);
        }
        if (!p[i].output && (rc = check_input(p[i].flag, p[i].path))) return rc;
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            if (!p[i].path || !p[j].path || (!p[i].output && !p[j].output)) continue;
            if (!strcmp(p[i].flag, "--save") && !strcmp(p[j].flag, "--resume")) continue; /* continue in place */
            if (!strcmp(p[i].path, "-") && !strcmp(p[j].path, "-"))
                return run_usage("%s and %s both go to standard output; give one of them a file", p[i].flag, p[j].flag);
            if (path_same_file(p[i].path, p[j].path))
                return run_usage("%s %s and %s %s name the same file; %s", p[i].flag, p[i].path, p[j].flag, p[j].path,
                                 p[j].output ? "each output needs its own" : "the output would replace the input");
        }
    return 0;
}

void run_warn_model(const RunSpec *a, const ModelSpec *base, const ModelSpec *m, const Plan *p, const char *backend)
{
    if (a->ov.seq && a->ov.seq > base->seq_len)
        run_note("warning: --seq %u is beyond %s's context of %u tokens;\n"
                 "  the run trains %s positions (a longer position table than the catalog's model has)",
                 a->ov.seq, base->name, base->seq_len, num_fmt_grouped(m->seq_len, (char[32]){0}, 32));
    /* A CPU does a few tens of GFLOP/s on these GEMMs (make bench measures it): past a TFLOP of work
     * the run takes minutes, so say so before it starts. */
    double total = p->model_flops_step * (double)a->steps;
    if (!strcmp(backend, "cpu") && total > 1e12)
        run_note("note: %s at this size is %.2f TFLOP per step, %.1f TFLOP for %u steps on the\n"
                 "  CPU backend: expect minutes (the ETA follows the first step). --layers, --hidden, --seq or\n"
                 "  --steps make it smaller, e.g. --layers 2 --hidden 256 --seq 128",
                 base->name, p->model_flops_step / 1e12, total / 1e12, a->steps);
}
