/* cli/cmd_run_check.c — `fp8plan run`'s progress line (see cmd_run_check.h). */
#include "cli/cmd_run_check.h"

#include <stdio.h>
#include <unistd.h>

#include "util/num.h"

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
