/* tests/unit/test_cpu_narrow.c — the CPU backend's norms at every narrow width (1 .. 70 columns), on
 * ONE thread, each width on a fresh backend.
 *
 * Why one thread and a fresh backend: the per-worker scratch (cpu_scratch_workers) is one block cut
 * into a stride per worker. With several workers a kernel that needs more than its stride spills into
 * its neighbour's part, which is often idle, and the result stays right; with one worker the spill is
 * past the block's end. A fresh backend has no larger scratch left over from an earlier call to hide
 * it. So this is where an undersized request shows: under ASan+UBSan (CI's second pass) as a heap
 * overflow, and otherwise as wrong sums when the spill lands on live data.
 *
 * The expected values are the formulas in double, written here (not the kernels' code):
 *   LayerNorm  mean = Σx/C, rstd = 1/sqrt(Σ(x−mean)²/C + eps), n = (x−mean)·rstd, y = n·w + b
 *   RMSNorm    rstd = 1/sqrt(Σx²/C + eps), n = x·rstd, y = n·w
 *   backward   dn = w·g, dm = Σdn/C (LayerNorm only), dnm = Σ dn·n / C,
 *              dx += (dn − dm − n·dnm)·rstd, dw += Σ_rows n·g, db += Σ_rows g (LayerNorm only)
 * Tolerance: each value is at most ~C + 8 FP32 roundings of terms no larger than Σ|terms|, so
 * (8 + 70)·2^-24 ≈ 4.6e-6 of Σ|terms| bounds the error; 1e-4·(Σ|terms| + 1) covers it and fails a
 * sum that loses or doubles one term of size ≥ 0.01·Σ|terms|. */
#include <math.h>
#include <stdlib.h>

#include "exec/backend/backend.h"
#include "exec/backend/rng.h"
#include "test.h"

enum { ROWS = 3, MAXC = 70 };

static int off(double got, double want, double scale) { return fabs(got - want) > 1e-4 * (scale + 1.0); }

/* One norm at width c: forward and backward against the formulas above; returns the mismatches. */
static int norm_at(NormType norm, int c)
{
    Backend *bk = NULL;
    Err e = {0};
    if (backend_cpu_create(&bk, &e)) {
        CHECKF(0, "backend: %s", e.msg);
        return 1;
    }
    const int ln = norm == NORM_LAYERNORM;
    Rng r = {.s = 100 + (uint64_t)c};
    float x[ROWS * MAXC], w[MAXC], b[MAXC], y[ROWS * MAXC], g[ROWS * MAXC], dx[ROWS * MAXC], dw[MAXC], db[MAXC];
    float mean[ROWS], rstd[ROWS];
    for (int i = 0; i < ROWS * c; i++) x[i] = (float)(rng_normal(&r) * 1.5 + 0.25), g[i] = (float)rng_normal(&r);
    for (int i = 0; i < ROWS * c; i++) dx[i] = 0.5f; /* the backward adds to din */
    for (int j = 0; j < c; j++) {
        w[j] = (float)(1.0 + 0.5 * rng_normal(&r)), b[j] = (float)(0.1 * rng_normal(&r));
        dw[j] = 0.25f, db[j] = -0.25f; /* and accumulates into dw, db */
    }
    int bad = 0;
    NormFwdDesc f = {.norm = norm,
                     .rows = ROWS,
                     .cols = (uint64_t)c,
                     .eps = 1e-5f,
                     .act_dtype = DT_FP32,
                     .weight_dtype = DT_FP32,
                     .in = x,
                     .weight = w,
                     .bias = ln ? b : NULL,
                     .out = y,
                     .mean = ln ? mean : NULL,
                     .rstd = rstd};
    NormBwdDesc d = {.norm = norm,
                     .rows = ROWS,
                     .cols = (uint64_t)c,
                     .act_dtype = DT_FP32,
                     .weight_dtype = DT_FP32,
                     .in = x,
                     .weight = w,
                     .mean = ln ? mean : NULL,
                     .rstd = rstd,
                     .dout = g,
                     .din = dx,
                     .dweight = dw,
                     .dbias = ln ? db : NULL};
    if (bk->norm_fwd(bk, &f, &e) || bk->norm_bwd(bk, &d, &e)) {
        CHECKF(0, "%s at %d columns: %s", ln ? "layernorm" : "rmsnorm", c, e.msg);
        bk->destroy(bk);
        return 1;
    }
    double sw[MAXC] = {0}, swa[MAXC] = {0}, sb[MAXC] = {0}, sba[MAXC] = {0};
    for (int i = 0; i < ROWS; i++) {
        const float *xr = x + i * c, *gr = g + i * c;
        double mu = 0, ss = 0;
        if (ln)
            for (int j = 0; j < c; j++) mu += xr[j] / (double)c;
        for (int j = 0; j < c; j++) ss += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1.0 / sqrt(ss / c + 1e-5), dm = 0, dnm = 0, dma = 0, dnma = 0;
        bad += off(rstd[i], rs, rs) + (ln ? off(mean[i], mu, fabs(mu) + 1.5) : 0);
        for (int j = 0; j < c; j++) {
            double n = (xr[j] - mu) * rs, dn = w[j] * gr[j];
            bad += off(y[i * c + j], n * w[j] + (ln ? b[j] : 0), fabs(n * w[j]) + fabs(b[j]));
            dm += dn / c, dma += fabs(dn) / c, dnm += dn * n / c, dnma += fabs(dn * n) / c;
            sw[j] += n * gr[j], swa[j] += fabs(n * gr[j]), sb[j] += gr[j], sba[j] += fabs(gr[j]);
        }
        for (int j = 0; j < c; j++) {
            double n = (xr[j] - mu) * rs, dn = w[j] * gr[j];
            double want = 0.5 + (dn - (ln ? dm : 0) - n * dnm) * rs;
            bad += off(dx[i * c + j], want, 0.5 + (fabs(dn) + dma + fabs(n) * dnma) * rs);
        }
    }
    for (int j = 0; j < c; j++) {
        bad += off(dw[j], 0.25 + sw[j], 0.25 + swa[j]);
        if (ln) bad += off(db[j], -0.25 + sb[j], 0.25 + sba[j]);
    }
    bk->destroy(bk);
    return bad;
}

static void test_norms_every_narrow_width(void)
{
    for (int k = 0; k < 2; k++) {
        NormType norm = k ? NORM_RMSNORM : NORM_LAYERNORM;
        for (int c = 1; c <= MAXC; c++) {
            int bad = norm_at(norm, c);
            CHECKF(!bad, "%s at %d columns, one thread: %d values off the formulas", k ? "rmsnorm" : "layernorm", c,
                   bad);
        }
    }
}

int main(void)
{
    if (setenv("FP8PLAN_THREADS", "1", 1)) return 1; /* before the pool's first use: one worker, no neighbour */
    RUN(test_norms_every_narrow_width);
    return test_summary();
}
