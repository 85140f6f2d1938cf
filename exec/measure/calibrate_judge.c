/* exec/measure/calibrate_judge.c — whether a host profile can be written: its
 * figures' spreads and their agreement with a quick re-measure, against the
 * bounds stated in calibrate.h. Pure arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"

const char *const cal_fig_names[CAL_FIGS] = {
    "gemm fp8",      "gemm bf16",    "gemm fp32",    "stream (adamw)", "element-wise", "scaled optimizer",
    "a2a eager msg", "a2a rndv msg", "gemm experts", "elem norm",      "elem act",     "elem add",
    "elem cast",     "elem xent",    "elem amax",    "elem cast row",  "o1 optimizer"};
_Static_assert(ELEM_KINDS == 7, "a name for each element-wise kind's figure");
_Static_assert(CAL_FIG_O1_OPTIM == CAL_FIGS - 1, "MS-AMP O1's optimizer: the last figure named");
_Static_assert(CAL_FIG_A2A_RNDV == CAL_FIG_A2A_EAGER + 1, "the all-to-all's figures: eager, then rendezvous");

double cal_iqr_max(int n) { return n > 0 ? CAL_SE_MAX * 1.349 * sqrt((double)n) / 1.2533 : 0; }

int cal_warm_settled(double prev_s, double last_s)
{
    return prev_s > 0 && last_s > 0 && last_s >= (1.0 - CAL_SE_MAX) * prev_s;
}

int cal_sample_calls(double call_s, double min_s)
{
    if (!(call_s > 0)) return CAL_SAMPLE_CALLS_MAX;
    const double k = ceil(min_s / call_s);
    return !(k >= 1) ? 1 : k > CAL_SAMPLE_CALLS_MAX ? CAL_SAMPLE_CALLS_MAX : (int)k;
}

static int cmp_dbl(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cal_sample_median(double *t, int n)
{
    if (n < 1) return NAN;
    qsort(t, (size_t)n, sizeof *t, cmp_dbl);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int cal_again_slot(int k, int reps, int again)
{
    if (again <= 0 || reps < 0 || k < 0 || k >= reps + again) return 0;
    const long n = (long)reps + again;
    for (long j = 0; j < again; j++)
        if ((2 * j + 1) * n / (2L * again) == k) return 1;
    return 0;
}

void cal_figures(const Calibration *c, double rate[CAL_FIGS], double iqr[CAL_FIGS])
{
    for (int p = 0; p < CAL_PATHS; p++) rate[CAL_FIG_FP8 + p] = c->rate[p], iqr[CAL_FIG_FP8 + p] = c->rate_iqr[p];
    rate[CAL_FIG_STREAM] = c->mem_bw, iqr[CAL_FIG_STREAM] = c->mem_iqr;
    rate[CAL_FIG_ELEM] = c->elem_bw, iqr[CAL_FIG_ELEM] = c->elem_iqr;
    rate[CAL_FIG_SCALED_OPTIM] = c->scaled_optim_bw, iqr[CAL_FIG_SCALED_OPTIM] = c->scaled_optim_iqr;
    double fl = 0, secs = 0; /* the grouped expert GEMMs (0 0 without experts) */
    for (int i = 0; i < c->nxgemm; i++)
        fl += 2.0 * (double)c->xgemm[i].m * (double)c->xgemm[i].n * (double)c->xgemm[i].k, /* m: all groups' rows */
            secs += c->xgemm[i].seconds;
    rate[CAL_FIG_GROUP] = secs > 0 ? fl / secs : 0, iqr[CAL_FIG_GROUP] = secs > 0 ? c->group_iqr : 0;
    for (int k = 0; k < ELEM_KINDS; k++) /* 0 where not measured */
        rate[CAL_FIG_KIND + k] = c->elem_kind_bw[k],
                            iqr[CAL_FIG_KIND + k] = c->elem_kind_bw[k] > 0 ? c->elem_kind_iqr[k] : 0;
    rate[CAL_FIG_O1_OPTIM] = c->o1_optim_bw, iqr[CAL_FIG_O1_OPTIM] = c->o1_optim_bw > 0 ? c->o1_optim_iqr : 0;
    for (int k = 0; k < 2; k++) /* 0 0 where not measured */
        rate[CAL_FIG_A2A_EAGER + k] = c->a2a_judged ? c->a2a_bw[k] : 0,
                                 iqr[CAL_FIG_A2A_EAGER + k] = c->a2a_judged ? c->a2a_iqr[k] : 0;
}

double cal_sweep_iqr(const CalSweep *s)
{
    double secs = 0, w = 0;
    for (int i = 0; i < s->n; i++) secs += s->pt[i].seconds, w += s->pt[i].iqr * s->pt[i].seconds;
    return secs > 0 ? w / secs : NAN;
}

/* Each payload sweep's spread against its bound (j->link_*); the count past it. */
static int judge_links(const Calibration *c, CalJudge *j)
{
    double worst = 0;
    j->worst_link = -1;
    j->link_bound = cal_iqr_max(c->link_reps);
    for (int k = 0; c->link_reps > 0 && k < c->nsweep; k++) {
        if (c->sweep[k].per_msg) continue; /* judged as the two a2a figures */
        const double q = j->link_iqr[k] = cal_sweep_iqr(&c->sweep[k]);
        const double over = isfinite(q) ? q / j->link_bound : INFINITY;
        if (over > 1) {
            j->link_noisy++;
            if (over > worst) worst = over, j->worst_link = k;
        }
    }
    return j->link_noisy;
}

int cal_judge(const Calibration *c, const Calibration *again, CalJudge *j)
{
    memset(j, 0, sizeof *j);
    j->worst_noisy = j->worst_drift = -1;
    double tmp[CAL_FIGS], worst_n = 0, worst_d = 0;
    cal_figures(c, j->rate, j->iqr);
    j->cold = (c->warm_rounds > 0 && !c->warm_settled) || (again && again->warm_rounds > 0 && !again->warm_settled);
    if (again) cal_figures(again, j->again, tmp);
    for (int f = 0; f < CAL_FIGS; f++) {
        const int a2a = f == CAL_FIG_A2A_EAGER || f == CAL_FIG_A2A_RNDV;
        const double bound = j->bound[f] = cal_iqr_max(a2a ? c->a2a_reps : c->reps);
        if ((a2a && !c->a2a_judged) || (f == CAL_FIG_GROUP && !c->nxgemm) || (f >= CAL_FIG_KIND && !(j->rate[f] > 0))) {
            j->skip[f] = 1;
            continue;
        }
        /* past the bound by: the ratio to it (a rate that is not positive: without bound) */
        double over = j->rate[f] > 0 && isfinite(j->iqr[f]) ? j->iqr[f] / bound : INFINITY;
        if (over > 1) {
            j->noisy++;
            if (over > worst_n) worst_n = over, j->worst_noisy = f;
        }
        if (!again) continue;
        j->drift[f] = j->rate[f] > 0 && j->again[f] > 0 ? j->again[f] / j->rate[f] - 1 : INFINITY;
        double d = fabs(j->drift[f]) / CAL_DRIFT_MAX;
        if (d > 1) {
            j->drifted++;
            if (d > worst_d) worst_d = d, j->worst_drift = f;
        }
    }
    j->noisy += judge_links(c, j);
    return j->noisy + j->drifted + j->cold;
}
