/* exec/measure/calibrate_fit.c — the formulas of a host profile (see
 * calibrate.h): bus bandwidth, the latency + bandwidth line of a collective
 * sweep, medians. Pure arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate_link.h"

int cal_link_sizes(uint64_t top, uint64_t *sizes)
{
    if (top < CAL_LINK_TOP_MIN) top = CAL_LINK_TOP_MIN;
    if (top > CAL_LINK_TOP_MAX) top = CAL_LINK_TOP_MAX;
    top = (top + 3) / 4 * 4;
    int n = 0;
    for (uint64_t S = 64; S < top && n < CAL_MAX_SIZES - 1; S *= 4) sizes[n++] = S;
    sizes[n++] = top;
    return n;
}

int cal_ep_sizes(const ModelSpec *m, uint32_t mbs, uint64_t *out)
{
    if (!spec_is_moe(m)) return 0;
    out[0] = (uint64_t)m->experts * 4;
    out[1] = (uint64_t)mbs * m->seq_len * m->experts_per_token * m->hidden * 2;
    return 2;
}

int cal_tp_sizes(const ModelSpec *m, uint32_t mbs, uint64_t *out)
{
    const uint64_t tok = (uint64_t)mbs * m->seq_len, h = m->hidden;
    out[0] = tok * 4;     /* the loss's all-reduces: an FP32 statistic a token */
    out[1] = tok * h;     /* an FP8 activation's gather: a byte an element */
    out[2] = tok * h * 2; /* a BF16 activation: the layers' and the vocabulary's calls */
    /* the replicated parameters' gradients, one FP32 call (planner/plan_comm_vocab.c replicated_elems, sequence
     * parallel, one stage): a layer's two norms, its row-parallel biases and QK norms, and the final norm */
    const uint64_t norm = m->norm == NORM_LAYERNORM ? 2 * h : h, qk = m->qk_norm ? 2 * (uint64_t)m->head_dim : 0;
    out[3] = ((uint64_t)m->layers * (2 * norm + (m->linear_bias ? 2 * h : 0) + qk) + norm) * 4;
    return 4;
}

int cal_sweep_sizes(const uint64_t *sizes, int n, const uint64_t *run, int nrun, uint64_t unit, int from_unit,
                    uint64_t *out)
{
    uint64_t v[CAL_MAX_SIZES + 5];
    int k = 0;
    if (n < 1 || n > CAL_MAX_SIZES || !unit) return 0;
    if (from_unit) v[k++] = unit;
    for (int i = 0; i < n; i++) v[k++] = sizes[i] >= unit ? sizes[i] / unit * unit : unit;
    for (int i = 0; i < nrun && i < 4; i++)
        if (run[i] <= sizes[n - 1]) v[k++] = run[i] >= unit ? run[i] / unit * unit : unit;
    for (int i = 1; i < k; i++) /* insertion sort: a handful of sizes */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < k && m < CAL_MAX_SIZES; i++)
        if (!m || v[i] > out[m - 1]) out[m++] = v[i];
    return m;
}

double cal_p2p_gap(const CalGemm *gemm, int n, int bwd)
{
    double t = 0;
    for (int i = 0; i < n; i++) {
        const char *w = gemm[i].what, *pass = strchr(w, ' ');
        if (gemm[i].path != CAL_PATH_BF16 || !strncmp(w, "head", 4) || !pass || !(gemm[i].seconds > 0)) continue;
        if (bwd ? strcmp(pass, " dgrad") && strcmp(pass, " wgrad") : strcmp(pass, " fprop")) continue;
        t += gemm[i].seconds;
    }
    return t < CAL_P2P_GAP_MAX ? t : CAL_P2P_GAP_MAX;
}

double cal_coll_gap(double fwd_s) { return fwd_s > 0 ? fwd_s / 2 : 0; }

int cal_coll_gapped(CommOp op) { return op == OP_ALL_REDUCE || op == OP_REDUCE_SCATTER || op == OP_ALL_GATHER; }

void cal_a2a_counts(int r, int n, uint64_t N, uint64_t *scounts, uint64_t *rcounts)
{
    const uint64_t nn = (uint64_t)n * (uint64_t)n, u = N / nn;
    for (int j = 0; j < n; j++) {
        uint64_t ds = (uint64_t)((j - r + n) % n), dr = (uint64_t)((r - j + n) % n);
        scounts[j] = j == r ? N / (uint64_t)n : 2 * ds * u;
        rcounts[j] = j == r ? N / (uint64_t)n : 2 * dr * u;
    }
}

double cal_group_cost(const CalGemm *g, int n, uint32_t groups, double rate)
{
    if (n <= 0 || !groups || !(rate > 0)) return 0;
    double over = 0;
    for (int i = 0; i < n; i++) over += g[i].seconds - 2.0 * (double)g[i].m * (double)g[i].n * (double)g[i].k / rate;
    return over > 0 ? over / ((double)n * (double)groups) : 0;
}

int cal_group_predict(const CalGemm *g, int n, uint32_t groups, double rate, double group_s, CalGemm *out)
{
    if (n <= 0 || !(rate > 0)) return 0;
    for (int i = 0; i < n; i++)
        out[i] = g[i],
        out[i].seconds = 2.0 * (double)g[i].m * (double)g[i].n * (double)g[i].k / rate + (double)groups * group_s;
    return n;
}

int cal_link_reps(int s, int n, int reps)
{
    if (s != 0 && s < n - 2) return reps;
    return 4 * reps < CAL_LINK_REPS_MAX ? 4 * reps : CAL_LINK_REPS_MAX;
}

double cal_allreduce_busbw(uint64_t S, int n, double t)
{
    if (n < 2 || !(t > 0)) return 0;
    return (double)S * comm_bus_factor(OP_ALL_REDUCE, (uint64_t)n) / t;
}

int cal_fit_line(const double *x, const double *y, const double *w, int n, double *a, double *b)
{
    if (n < 2) return -1;
    double sw = 0, sx = 0, sy = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sw += wi, sx += wi * x[i], sy += wi * y[i];
    }
    if (!(sw > 0)) return -1;
    double mx = sx / sw, my = sy / sw, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sxx += wi * (x[i] - mx) * (x[i] - mx), sxy += wi * (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0)) return -1;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return 0;
}

int cal_fit_link(const CalColl *c, int nc, int n, double *lat, double *bw)
{
    if (n < 2 || nc < 3 || nc > CAL_MAX_SIZES) return -1;
    double steps = 2.0 * (double)(n - 1), f = steps / (double)n; /* bus bytes = S x 2(n-1)/n */
    for (int i = 0; i < nc; i++)
        if (!(c[i].seconds > 0) || (i && c[i].payload <= c[i - 1].payload)) return -1;
    /* latency: the smallest size, its bytes at the bandwidth of the next one neglected (64 B: nanoseconds) —
     * at most any size's time (no call takes less than its fixed cost: a larger size measured faster means the
     * smallest's median met more of the ranks' arrival noise; calls are timed after a late arrival) */
    double l = c[0].seconds / steps;
    for (int i = 1; i < nc; i++)
        if (c[i].seconds / steps < l) l = c[i].seconds / steps;
    /* bandwidth: the two largest sizes, past the caches (nccl-tests' convention: bus bandwidth at large sizes) */
    double bytes = 0, t = 0;
    for (int i = nc - 2; i < nc; i++) bytes += (double)c[i].payload * f, t += c[i].seconds - steps * l;
    if (!(t > 0)) return -1;
    *lat = l > 1e-9 ? l : 1e-9;
    *bw = bytes / t;
    return 0;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The median of sorted s[0..n), n >= 1. */
static double mid(const double *s, int n) { return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]); }

void cal_stats(const double *v, int n, CalStat *st)
{
    double s[64];
    if (n <= 0 || n > 64) {
        st->median = st->spread = st->iqr = NAN;
        return;
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = mid(s, n);
    int half = (n + 1) / 2; /* Tukey's hinges: each half holds the median when n is odd */
    double q1 = mid(s, half), q3 = mid(s + n - half, half);
    st->median = med;
    st->spread = med > 0 ? (s[n - 1] - s[0]) / med : NAN;
    st->iqr = med > 0 ? (q3 - q1) / med : NAN;
}

void cal_median(const double *v, int n, double *median, double *spread)
{
    CalStat st;
    cal_stats(v, n, &st);
    *median = st.median;
    *spread = st.spread;
}

int cal_fit_segment(const double *x, const double *y, int lo, int hi, double *a, double *b, double *err)
{
    if (hi - lo < 2 || hi - lo > CAL_MAX_SIZES) return -1;
    double w[CAL_MAX_SIZES] = {0};
    for (int i = lo; i < hi; i++) {
        if (!(y[i] > 0)) return -1;
        w[i - lo] = 1.0 / (y[i] * y[i]);
    }
    double A = 0, B = 0;
    if (cal_fit_line(x + lo, y + lo, w, hi - lo, &A, &B)) B = -1; /* the x all equal: a constant */
    if (B < 0) {                                                  /* time not growing with size: the weighted mean */
        double sw = 0, swy = 0;
        for (int i = lo; i < hi; i++) sw += w[i - lo], swy += w[i - lo] * y[i];
        A = swy / sw, B = 0;
    } else if (A < 0) { /* a line through 0 */
        double sxy = 0, sxx = 0;
        for (int i = lo; i < hi; i++) sxy += w[i - lo] * x[i] * y[i], sxx += w[i - lo] * x[i] * x[i];
        A = 0, B = sxx > 0 ? sxy / sxx : 0;
    }
    double worst = 0;
    for (int i = lo; i < hi; i++) {
        double r = fabs((A + B * x[i]) / y[i] - 1.0);
        if (r > worst) worst = r;
    }
    *a = A, *b = B, *err = worst;
    return 0;
}

/* One range of a sweep: points lo..hi-1 of (x, y), payloads [from, to). */
static int one_range(const CalColl *c, const double *x, const double *y, int lo, int hi, CommOp op, Dtype dt, int n,
                     CalRange *r)
{
    double a, b, err, steps = comm_ring_steps(op, (uint64_t)n);
    if (cal_fit_segment(x, y, lo, hi, &a, &b, &err) || !(steps > 0)) return -1;
    memset(r, 0, sizeof *r);
    r->fit.op = (uint8_t)op, r->fit.path = (uint8_t)link_path_of(op, dt);
    r->fit.from = lo ? c[lo].payload : 0;
    r->fit.to = 0;
    r->fit.lat = a / steps;
    r->fit.bw = b > 0 ? 1.0 / b : 0;
    r->first = lo, r->count = hi - lo, r->max_err = err;
    return 0;
}

/* The best split of range r (points lo..hi-1) into two of 2 points or more: the one whose worse half has the
 * least largest error, when that beats r's own; 0 and the halves in a, b, or -1. */
static int best_split(const CalColl *c, const double *x, const double *y, const CalRange *r, CommOp op, Dtype dt, int n,
                      CalRange *a, CalRange *b)
{
    int lo = r->first, hi = r->first + r->count, best = -1;
    double best_err = r->max_err;
    for (int k = lo + 2; k <= hi - 2; k++) {
        CalRange s, l;
        if (one_range(c, x, y, lo, k, op, dt, n, &s) || one_range(c, x, y, k, hi, op, dt, n, &l)) continue;
        double worse = s.max_err > l.max_err ? s.max_err : l.max_err;
        if (worse < best_err) best_err = worse, best = k;
    }
    if (best < 0) return -1;
    one_range(c, x, y, lo, best, op, dt, n, a);
    one_range(c, x, y, best, hi, op, dt, n, b);
    a->fit.from = r->fit.from; /* a forced cut's start (cal_fit_ranges), else r's first size's as before */
    a->fit.to = c[best].payload, b->fit.to = r->fit.to;
    return 0;
}

int cal_fit_ranges(const CalColl *c, int nc, CommOp op, Dtype dt, int n, uint64_t cut, CalRange *out)
{
    if (nc < 2 || nc > CAL_MAX_SIZES || n < 2) return 0;
    double x[CAL_MAX_SIZES], y[CAL_MAX_SIZES], f = comm_bus_factor(op, (uint64_t)n);
    for (int i = 0; i < nc; i++) x[i] = (double)c[i].payload * f, y[i] = c[i].seconds;
    int k = 0, nr = 1; /* k: the first size at or past the cut */
    while (cut && k < nc && c[k].payload < cut) k++;
    if (cut && k >= 2 && nc - k >= 2) { /* a line each side of the cut, the cut their boundary */
        if (one_range(c, x, y, 0, k, op, dt, n, &out[0]) || one_range(c, x, y, k, nc, op, dt, n, &out[1])) return 0;
        out[0].fit.to = out[1].fit.from = cut;
        nr = 2;
    } else if (one_range(c, x, y, 0, nc, op, dt, n, &out[0]))
        return 0;
    int stuck[CAL_FIT_RANGES_MAX] = {0}; /* stuck: no split of that range beats it */
    while (nr < CAL_FIT_RANGES_MAX) {    /* split the range that misses most, while one misses past the bound */
        int w = -1;
        for (int i = 0; i < nr; i++)
            if (!stuck[i] && out[i].max_err > CAL_FIT_ERR_MAX && (w < 0 || out[i].max_err > out[w].max_err)) w = i;
        if (w < 0) break;
        CalRange a, b;
        if (best_split(c, x, y, &out[w], op, dt, n, &a, &b)) { /* the next worst may still split */
            stuck[w] = 1;
            continue;
        }
        memmove(&out[w + 2], &out[w + 1], (size_t)(nr - w - 1) * sizeof *out);
        memmove(&stuck[w + 2], &stuck[w + 1], (size_t)(nr - w - 1) * sizeof *stuck);
        out[w] = a, out[w + 1] = b, stuck[w] = stuck[w + 1] = 0;
        nr++;
    }
    return nr;
}

LinkPath cal_sweep_path(const CalSweep *s)
{
    return s->grad == 2 ? LINK_PATH_FP32_EMB : s->grad ? LINK_PATH_FP32_GRAD : link_path_of(s->op, s->dtype);
}

const char *cal_sweep_label(const CalSweep *s)
{
    return s->grad ? link_path_name(cal_sweep_path(s)) : dtype_name(s->dtype);
}

int cal_fit_messages(const CalColl *c, int nc, uint64_t L, int n, CalRange *out)
{
    if (n < 2 || nc < 4 || nc > CAL_MAX_SIZES) return 0;
    double x[CAL_MAX_SIZES], y[CAL_MAX_SIZES];
    int split = 0; /* the first point past L */
    for (int i = 0; i < nc; i++) {
        x[i] = (double)c[i].payload, y[i] = c[i].seconds / (double)(n - 1);
        if (c[i].payload <= L) split = i + 1;
    }
    const int lo[2] = {0, split}, hi[2] = {split, nc};
    for (int k = 0; k < 2; k++) {
        double a, b, err;
        if (cal_fit_segment(x, y, lo[k], hi[k], &a, &b, &err)) return 0;
        CalRange *r = &out[k];
        memset(r, 0, sizeof *r);
        r->fit.op = OP_ALL_TO_ALL, r->fit.path = (uint8_t)(k ? LINK_PATH_RENDEZVOUS : LINK_PATH_EAGER);
        r->fit.from = k ? L + 1 : 0, r->fit.to = k ? 0 : L + 1;
        r->fit.lat = a, r->fit.bw = b > 0 ? 1.0 / b : 0;
        r->first = lo[k], r->count = hi[k] - lo[k], r->max_err = err;
    }
    return 2;
}

int cal_msg_sizes(uint64_t L, const uint64_t *run, int na, uint64_t max, uint64_t *out)
{
    uint64_t v[CAL_MAX_SIZES];
    int k = 0;
    const uint64_t fixed[8] = {L / 16, L / 4, L / 2, L, L + 1, 2 * L, 4 * L, 16 * L};
    for (int i = 0; i < 8; i++) v[k++] = fixed[i];
    for (int i = 0; i < na && k < CAL_MAX_SIZES; i++) v[k++] = run[i];
    for (int i = 1; i < k; i++) /* insertion sort: a handful of sizes */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < k; i++)
        if (v[i] && v[i] <= max && (!m || v[i] > out[m - 1])) out[m++] = v[i];
    return m;
}

int cal_msg_figures(const CalColl *c, int nc, uint64_t L, int n, double bw[2], double iqr[2])
{
    double bytes[2] = {0, 0}, secs[2] = {0, 0}, wiqr[2] = {0, 0};
    if (n < 2) return -1;
    for (int i = 0; i < nc; i++) {
        const int k = c[i].payload > L;
        if (!(c[i].seconds > 0)) return -1;
        bytes[k] += (double)c[i].payload * (double)(n - 1), secs[k] += c[i].seconds;
        wiqr[k] += c[i].iqr * c[i].seconds;
    }
    for (int k = 0; k < 2; k++) {
        if (!(secs[k] > 0)) return -1;
        bw[k] = bytes[k] / secs[k], iqr[k] = wiqr[k] / secs[k];
    }
    return 0;
}

void cal_msg_predict(const LinkFit fit[2], int n, CalColl *c, int nc)
{
    for (int i = 0; i < nc; i++) {
        const uint64_t b = c[i].payload;
        const LinkFit *f = &fit[fit[0].to && b >= fit[0].to]; /* the eager row ends at L + 1 */
        c[i].seconds = (double)(n - 1) * (f->lat + (f->bw > 0 ? (double)b / f->bw : 0));
        c[i].spread = c[i].iqr = 0;
        c[i].busbw = c[i].seconds > 0 ? (double)b * (double)(n - 1) / c[i].seconds : 0;
    }
}
