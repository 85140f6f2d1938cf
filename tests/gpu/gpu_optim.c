/* tests/gpu/gpu_optim.c — the CUDA backend's optimizers against the CPU
 * reference, and the NCCL Comm on one rank.
 *
 *   gpu_optim [CSV] [SEED]     exit 0 all pass, 1 a check failed, 69 no GPU
 *
 * Both optimizers must match the CPU bit for bit: the update of one element is
 * exec/backend/kernel_math.h's km_adam / km_adam_scaled on both sides (unfused IEEE
 * operations, bias corrections computed once on the host), the FP8/FP16/BF16
 * stores round to nearest even on both sides, and FP8-LM's new scales come from
 * amaxes that are exact maxima. A single-rank all-reduce, all-gather or
 * reduce-scatter must leave the data as it was and count zero bus bytes
 * (factors 2(n−1)/n and (n−1)/n at n = 1). */
#include "gpu_common.h"

static AdamHyper hyper(uint32_t step, float grad_scale)
{
    AdamHyper h = {.lr = 3e-4f,
                   .beta1 = 0.9f,
                   .beta2 = 0.95f,
                   .eps = 1e-8f,
                   .weight_decay = 0.1f,
                   .step = step,
                   .grad_scale = grad_scale};
    return h;
}

/* mdt: the moments' dtype (DT_FP32, or DT_BF16: DeepSeek-V3's, read exactly and stored back RNE). */
static void adamw_case(Gc *g, const char *name, Dtype gdt, int with_master, Dtype wdt, Dtype mdt)
{
    const uint64_t n = gc_n(g, 1000007, 65537), mb = n * dtype_bytes(mdt);
    float *master = gc_randn(g, DT_FP32, n, 0.05), *m32 = gc_randn(g, DT_FP32, n, 1e-3),
          *v32 = gc_randn(g, DT_FP32, n, 1e-3);
    void *m = gc_halloc(mb), *v = gc_halloc(mb);
    for (uint64_t i = 0; i < n; i++) {
        elem_store(m, mdt, i, m32[i]);
        elem_store(v, mdt, i, v32[i] * v32[i]);
    }
    float gsi = dtype_is_fp8(gdt) ? 1.0f / 4096.0f : 1.0f;
    void *grad = gc_randn(g, gdt, n, dtype_is_fp8(gdt) ? 40.0 : 0.01);
    void *w = with_master ? gc_halloc(n * dtype_bytes(wdt)) : NULL;
    uint64_t wb = n * dtype_bytes(wdt);
    /* device copies before the CPU updates in place */
    float *dmaster = gc_dup(g, master, n * 4);
    void *dm = gc_dup(g, m, mb), *dv = gc_dup(g, v, mb);
    void *dgrad = gc_dup(g, grad, n * dtype_bytes(gdt)), *dw = with_master ? gc_dalloc(g, wb) : NULL;
    float *dgsi = gc_dup(g, &gsi, sizeof gsi);
    if (dw) gc_poison(g, dw, wb);
    AdamWDesc d = {.n = n,
                   .h = hyper(5, 0.5f),
                   .master = with_master ? master : NULL,
                   .m = m,
                   .v = v,
                   .grad = grad,
                   .grad_dtype = gdt,
                   .grad_scale_inv = &gsi,
                   .weight = with_master ? w : master,
                   .weight_dtype = with_master ? wdt : DT_FP32,
                   .moment_dtype = mdt};
    GC_OK(g, g->cpu->adamw(g->cpu, &d, GE));
    d.master = with_master ? dmaster : NULL;
    d.m = dm;
    d.v = dv;
    d.grad = dgrad;
    d.grad_scale_inv = dgsi;
    d.weight = with_master ? dw : dmaster;
    GC_OK(g, g->gpu->adamw(g->gpu, &d, GE));
    float *r = gc_halloc(n * 4);
    gc_get(g, r, dmaster, n * 4);
    gc_check(g, "adamw master", name, DT_FP32, r, master, n, TOL_EXACT);
    gc_get(g, r, dm, mb);
    gc_check(g, "adamw m", name, mdt, r, m, n, TOL_EXACT);
    gc_get(g, r, dv, mb);
    gc_check(g, "adamw v", name, mdt, r, v, n, TOL_EXACT);
    if (with_master) {
        gc_get(g, r, dw, wb);
        gc_check(g, "adamw weight", name, wdt, r, w, n, TOL_EXACT);
        gc_dfree(g, dw);
    }
    gc_dfree(g, dmaster), gc_dfree(g, dm), gc_dfree(g, dv), gc_dfree(g, dgrad), gc_dfree(g, dgsi);
    free(master), free(m32), free(v32), free(m), free(v), free(grad), free(w), free(r);
}

/* adamw_multi with BF16 moments (DeepSeek-V3's): tensors ending inside, at and across the kernel's 4096-element
 * chunks, each bit-identical to the CPU's adamw() on it — master (FP32) and both moments (BF16). */
static void check_adamw_multi_bf16(Gc *g)
{
    enum { NT = 3 };
    static const uint64_t sizes[NT] = {4095, 4097, 10};
    AdamWDesc hl[NT], dl[NT];
    void *dev[NT][4];
    for (int t = 0; t < NT; t++) {
        const uint64_t n = sizes[t];
        float *master = gc_randn(g, DT_FP32, n, 0.05), *m32 = gc_randn(g, DT_FP32, n, 1e-3);
        void *m = gc_halloc(n * 2), *v = gc_halloc(n * 2), *grad = gc_randn(g, DT_BF16, n, 0.01);
        for (uint64_t i = 0; i < n; i++) {
            elem_store(m, DT_BF16, i, m32[i]);
            elem_store(v, DT_BF16, i, m32[i] * m32[i]);
        }
        dev[t][0] = gc_dup(g, master, n * 4), dev[t][1] = gc_dup(g, m, n * 2), dev[t][2] = gc_dup(g, v, n * 2);
        dev[t][3] = gc_dup(g, grad, n * 2);
        hl[t] = (AdamWDesc){.n = n,
                            .h = hyper(3, 1.0f),
                            .m = m,
                            .v = v,
                            .grad = grad,
                            .grad_dtype = DT_BF16,
                            .weight = master,
                            .weight_dtype = DT_FP32,
                            .moment_dtype = DT_BF16};
        dl[t] = hl[t];
        dl[t].weight = dev[t][0], dl[t].m = dev[t][1], dl[t].v = dev[t][2], dl[t].grad = dev[t][3];
        free(m32);
    }
    AdamWMultiDesc dc = {.count = NT, .list = hl, .list_dev = hl}, dg = {.count = NT, .list = dl, .list_dev = NULL};
    GC_OK(g, g->cpu->adamw_multi(g->cpu, &dc, GE));
    GC_OK(g, g->gpu->adamw_multi(g->gpu, &dg, GE));
    for (int t = 0; t < NT; t++) {
        const uint64_t n = sizes[t];
        float *r = gc_halloc(n * 4);
        char what[64];
        snprintf(what, sizeof what, "bf16 moments, tensor %d of 3 (%llu values)", t, (unsigned long long)n);
        gc_get(g, r, dev[t][0], n * 4);
        gc_check(g, "adamw_multi master", what, DT_FP32, r, hl[t].weight, n, TOL_EXACT);
        gc_get(g, r, dev[t][1], n * 2);
        gc_check(g, "adamw_multi m", what, DT_BF16, r, hl[t].m, n, TOL_EXACT);
        gc_get(g, r, dev[t][2], n * 2);
        gc_check(g, "adamw_multi v", what, DT_BF16, r, hl[t].v, n, TOL_EXACT);
        for (int k = 0; k < 4; k++) gc_dfree(g, dev[t][k]);
        free(r), free(hl[t].weight), free(hl[t].m), free(hl[t].v), free((void *)hl[t].grad);
    }
}

static void fp8_adam_case(Gc *g, const char *name, Dtype gdt, int scaled_w, int scaled_v, int margin)
{
    const uint64_t n = gc_n(g, 1000003, 65539);
    float rw[3] = {1024.0f, 1.0f / 1024.0f, 0.0f}, rm[3] = {4096.0f, 1.0f / 4096.0f, 0.0f};
    float rv[3] = {1048576.0f, 1.0f / 1048576.0f, 0.0f};
    float sw = scaled_w ? rw[0] : 1.0f, sv = scaled_v ? rv[0] : 1.0f;
    uint16_t *master = gc_halloc(n * 2), *v = gc_halloc(n * 2), *wk = gc_halloc(n * 2);
    uint8_t *m = gc_halloc(n);
    for (uint64_t i = 0; i < n; i++) {
        elem_store(master, DT_FP16, i, (float)rng_normal(&g->rng) * 0.05f * sw);
        elem_store(m, DT_E4M3, i, (float)rng_normal(&g->rng) * 1e-3f * rm[0]);
        float s = (float)rng_normal(&g->rng) * 1e-3f;
        elem_store(v, DT_FP16, i, s * s * sv);
    }
    float gsi = dtype_is_fp8(gdt) ? 1.0f / 4096.0f : 1.0f;
    void *grad = gc_randn(g, gdt, n, dtype_is_fp8(gdt) ? 40.0 : 0.01);
    void *dmaster = gc_dup(g, master, n * 2), *dm = gc_dup(g, m, n), *dv = gc_dup(g, v, n * 2);
    void *dgrad = gc_dup(g, grad, n * dtype_bytes(gdt)), *dwk = gc_dalloc(g, n * 2);
    float *drec = gc_dup(g, (float[9]){rw[0], rw[1], rw[2], rm[0], rm[1], rm[2], rv[0], rv[1], rv[2]}, 36);
    float *dgsi = gc_dup(g, &gsi, sizeof gsi);
    gc_poison(g, dwk, n * 2);
    Fp8AdamDesc d = {.n = n,
                     .h = hyper(3, 1.0f),
                     .margin = margin,
                     .master = master,
                     .master_rec = scaled_w ? rw : NULL,
                     .m = m,
                     .m_rec = rm,
                     .v = v,
                     .v_rec = scaled_v ? rv : NULL,
                     .grad = grad,
                     .grad_dtype = gdt,
                     .grad_scale_inv = &gsi,
                     .weight = wk,
                     .weight_dtype = DT_BF16};
    GC_OK(g, g->cpu->fp8_adam(g->cpu, &d, GE));
    d.master = dmaster;
    d.master_rec = scaled_w ? drec : NULL;
    d.m = dm;
    d.m_rec = drec + 3;
    d.v = dv;
    d.v_rec = scaled_v ? drec + 6 : NULL;
    d.grad = dgrad;
    d.grad_scale_inv = dgsi;
    d.weight = dwk;
    GC_OK(g, g->gpu->fp8_adam(g->gpu, &d, GE));
    void *r = gc_halloc(n * 2);
    float rec_g[9], rec_c[9] = {rw[0], rw[1], rw[2], rm[0], rm[1], rm[2], rv[0], rv[1], rv[2]};
    gc_get(g, r, dmaster, n * 2);
    gc_check(g, "fp8_adam master fp16", name, DT_FP16, r, master, n, TOL_EXACT);
    gc_get(g, r, dm, n);
    gc_check(g, "fp8_adam m e4m3", name, DT_E4M3, r, m, n, TOL_EXACT);
    gc_get(g, r, dv, n * 2);
    gc_check(g, "fp8_adam v fp16", name, DT_FP16, r, v, n, TOL_EXACT);
    gc_get(g, r, dwk, n * 2);
    gc_check(g, "fp8_adam weight bf16", name, DT_BF16, r, wk, n, TOL_EXACT);
    gc_get(g, rec_g, drec, sizeof rec_g);
    gc_check(g, "fp8_adam records", name, DT_FP32, rec_g, rec_c, 9, TOL_EXACT);
    gc_dfree(g, dmaster), gc_dfree(g, dm), gc_dfree(g, dv), gc_dfree(g, dgrad), gc_dfree(g, dwk);
    gc_dfree(g, drec), gc_dfree(g, dgsi);
    free(master), free(m), free(v), free(wk), free(grad), free(r);
}

/* The multi-tensor AdamW (one launch lays the tensors end to end, one updates them all) against
 * the CPU's adamw() on each tensor: the same km_adam per element with each tensor's weight decay,
 * grad scale and dtypes, so bit-identical. The list goes as the executor hands it over (host
 * memory only: the backend copies it; gpu_bench's timing passes a device copy). The sizes put
 * tensor ends inside, at and across the kernel's 4096-element chunks, with an empty tensor and
 * one-element ones among them. */
static void check_adamw_multi(Gc *g)
{
    enum { NT = 8 };
    static const uint64_t sizes[NT] = {5000, 0, 1, 4095, 4097, 3, 70001, 12};
    static const struct {
        Dtype gdt, wdt;
        int master;
        float decay, gscale;
    } cfg[4] = {{DT_FP32, DT_BF16, 1, 0.1f, 0.5f},
                {DT_BF16, DT_FP16, 1, 0.0f, 1.0f},
                {DT_E5M2, DT_BF16, 1, 0.1f, 0.25f},
                {DT_FP32, DT_FP32, 0, 0.1f, 0.5f}};
    uint64_t total = 0, at = 0;
    for (int t = 0; t < NT; t++) total += sizes[t];
    float *flat_c = gc_halloc(3 * total * 4), *flat_g = gc_halloc(3 * total * 4), gsi = 1.0f / 4096.0f;
    float *dgsi = gc_dup(g, &gsi, sizeof gsi);
    AdamWDesc hl[NT], dl[NT];
    void *hw[NT], *dw[NT], *dev[NT][5];
    for (int t = 0; t < NT; t++) {
        const uint64_t n = sizes[t], nb = n ? n : 1;
        const int c = t % 4;
        const Dtype gdt = cfg[c].gdt, wdt = cfg[c].wdt;
        float *master = gc_randn(g, DT_FP32, nb, 0.05), *m = gc_randn(g, DT_FP32, nb, 1e-3),
              *v = gc_randn(g, DT_FP32, nb, 1e-3);
        for (uint64_t i = 0; i < nb; i++) v[i] *= v[i];
        void *grad = gc_randn(g, gdt, nb, dtype_is_fp8(gdt) ? 40.0 : 0.01);
        hw[t] = cfg[c].master ? gc_halloc(nb * dtype_bytes(wdt)) : NULL;
        dev[t][0] = gc_dup(g, master, nb * 4), dev[t][1] = gc_dup(g, m, nb * 4), dev[t][2] = gc_dup(g, v, nb * 4);
        dev[t][3] = gc_dup(g, grad, nb * dtype_bytes(gdt));
        dev[t][4] = dw[t] = cfg[c].master ? gc_dalloc(g, nb * dtype_bytes(wdt)) : NULL;
        if (dw[t]) gc_poison(g, dw[t], nb * dtype_bytes(wdt));
        AdamHyper h = hyper(5, cfg[c].gscale);
        h.weight_decay = cfg[c].decay;
        hl[t] = (AdamWDesc){.n = n,
                            .h = h,
                            .master = cfg[c].master ? master : NULL,
                            .m = m,
                            .v = v,
                            .grad = grad,
                            .grad_dtype = gdt,
                            .grad_scale_inv = &gsi,
                            .weight = cfg[c].master ? hw[t] : master,
                            .weight_dtype = wdt};
        dl[t] = hl[t];
        dl[t].master = cfg[c].master ? dev[t][0] : NULL;
        dl[t].m = dev[t][1], dl[t].v = dev[t][2], dl[t].grad = dev[t][3], dl[t].grad_scale_inv = dgsi;
        dl[t].weight = cfg[c].master ? dw[t] : dev[t][0];
    }
    AdamWMultiDesc dc = {.count = NT, .list = hl, .list_dev = hl};
    GC_OK(g, g->cpu->adamw_multi(g->cpu, &dc, GE));
    AdamWMultiDesc dg = {.count = NT, .list = dl, .list_dev = NULL}; /* the executor's way: the backend copies it */
    GC_OK(g, g->gpu->adamw_multi(g->gpu, &dg, GE));
    for (int t = 0; t < NT; t++) {
        const uint64_t n = sizes[t];
        float *cm = hl[t].master ? hl[t].master : (float *)hl[t].weight;
        memcpy(flat_c + at, cm, n * 4), memcpy(flat_c + total + at, hl[t].m, n * 4);
        memcpy(flat_c + 2 * total + at, hl[t].v, n * 4);
        gc_get(g, flat_g + at, dev[t][0], n * 4), gc_get(g, flat_g + total + at, dev[t][1], n * 4);
        gc_get(g, flat_g + 2 * total + at, dev[t][2], n * 4);
        if (hw[t] && n) {
            void *r = gc_halloc(n * dtype_bytes(hl[t].weight_dtype));
            gc_get(g, r, dw[t], n * dtype_bytes(hl[t].weight_dtype));
            char what[48];
            snprintf(what, sizeof what, "tensor %d of 8 (%llu values)", t, (unsigned long long)n);
            gc_check(g, "adamw_multi weight", what, hl[t].weight_dtype, r, hw[t], n, TOL_EXACT);
            free(r);
        }
        at += n;
    }
    gc_check(g, "adamw_multi master", "8 tensors, 83,209 values", DT_FP32, flat_g, flat_c, total, TOL_EXACT);
    gc_check(g, "adamw_multi m", "8 tensors", DT_FP32, flat_g + total, flat_c + total, total, TOL_EXACT);
    gc_check(g, "adamw_multi v", "8 tensors", DT_FP32, flat_g + 2 * total, flat_c + 2 * total, total, TOL_EXACT);
    for (int t = 0; t < NT; t++) {
        for (int k = 0; k < 5; k++)
            if (dev[t][k]) gc_dfree(g, dev[t][k]);
        free(hl[t].master ? hl[t].master : hl[t].weight), free(hl[t].m), free(hl[t].v), free((void *)hl[t].grad);
        free(hw[t]);
    }
    gc_dfree(g, dgsi);
    free(flat_c), free(flat_g);
}

static void check_optimizers(Gc *g)
{
    adamw_case(g, "fp32 grad, bf16 weight", DT_FP32, 1, DT_BF16, DT_FP32);
    adamw_case(g, "bf16 grad, fp16 weight", DT_BF16, 1, DT_FP16, DT_FP32);
    adamw_case(g, "e5m2 grad with scale_inv", DT_E5M2, 1, DT_BF16, DT_FP32);
    adamw_case(g, "no master: fp32 weight", DT_FP32, 0, DT_FP32, DT_FP32);
    adamw_case(g, "bf16 moments, bf16 grad and weight", DT_BF16, 1, DT_BF16, DT_BF16);
    fp8_adam_case(g, "all scaled, e4m3 grad", DT_E4M3, 1, 1, 0);
    fp8_adam_case(g, "m scaled only, fp32 grad, margin 1", DT_FP32, 0, 0, 1);
    check_adamw_multi(g);
    check_adamw_multi_bf16(g);
}

/* ---- NCCL, one rank --------------------------------------------------------------------------- */

/* Expert parallelism's all-to-all over one NCCL rank (exec/cuda/comm_nccl_a2a.cu), in a group split from c
 * (ncclCommSplit): E4M3 codes on the device (bytes: nothing converted, whatever NCCL this is) and the model's
 * int32 counts in host memory, each arriving as sent; the counts' exchange counted COMM_UNPLANNED (8 bytes at
 * factor 0 on one rank), the payload in the root's row as over MPI (S = the bytes sent, bus 0: its own
 * segment); a receive count the peer does not announce fails with ST_DATA before any payload moves. More
 * ranks need as many GPUs (NCCL refuses two ranks on one device): tests/cli/mpi_ep.sh runs the same
 * bookkeeping over MPI. */
static void check_a2a(Gc *g, Comm *c)
{
    Err e;
    Comm *grp = NULL;
    Status st = comm_split(c, 0, 0, &grp, &e);
    if (!gc_expect(g, "nccl split", "one group of the one rank", st == ST_OK && grp && grp->size == 1, e.msg)) return;
    const uint64_t n = 4099;
    uint8_t *x = gc_halloc(n), *r = gc_halloc(n);
    for (uint64_t i = 0; i < n; i++) x[i] = (uint8_t)(i * 37 + 11);
    void *dx = gc_dup(g, x, n), *dy = gc_dalloc(g, n);
    gc_poison(g, dy, n);
    const CommStats t0 = c->total, s0 = c->stats[CO_EP_DISPATCH_FWD];
    st = comm_all_to_all_v(grp, CO_EP_DISPATCH_FWD, g->gpu, dx, &n, dy, &n, DT_E4M3, &e);
    if (gc_expect(g, "nccl all_to_all_v", "e4m3 codes, device buffers", st == ST_OK, e.msg)) {
        gc_get(g, r, dy, n);
        gc_expect(g, "nccl all_to_all_v data", "e4m3 codes arrive as sent", !memcmp(r, x, n), "bytes differ");
    }
    const CommStats *t1 = &c->total, *s1 = &c->stats[CO_EP_DISPATCH_FWD];
    gc_expect(g, "nccl all_to_all_v stats", "the root's row: 1 call of 4099 B, 0 bus bytes; counts 8 B unplanned",
              s1->calls == s0.calls + 1 && s1->payload_bytes == s0.payload_bytes + n && s1->bus_bytes == 0.0 &&
                  t1->calls == t0.calls + 2 && t1->payload_bytes == t0.payload_bytes + n + 8,
              "counts differ");
    int32_t hc[3] = {5, -7, 1 << 30}, hr[3] = {0, 0, 0};
    uint64_t k = 3;
    st = comm_all_to_all_v(grp, CO_EP_COUNTS, g->gpu, hc, &k, hr, &k, DT_FP32, &e);
    gc_expect(g, "nccl all_to_all_v host", "the model's int32 counts in host memory, staged",
              st == ST_OK && !memcmp(hc, hr, sizeof hc), st ? e.msg : "counts differ");
    uint64_t more = n + 1;
    st = comm_all_to_all_v(grp, CO_EP_DISPATCH_FWD, g->gpu, dx, &n, dy, &more, DT_E4M3, &e);
    gc_expect(g, "nccl all_to_all_v disagree", "4100 expected, 4099 announced: ST_DATA naming both",
              st == ST_DATA && strstr(e.msg, "rank 0 expects 4100 elements from rank 0, which sends 4099"), e.msg);
    gc_dfree(g, dx), gc_dfree(g, dy);
    free(x), free(r);
    grp->destroy(grp);
}

/* as_old: behave as NCCL 2.23 (FP8PLAN_NCCL_AS_VERSION), so FP8 takes the BF16 path on this GPU too. */
static void check_comm(Gc *g, int as_old)
{
    Comm *c = NULL;
    Err e;
    if (as_old) setenv("FP8PLAN_NCCL_AS_VERSION", "22304", 1);
    Status st = comm_nccl_create(g->gpu, 0, 1, &c, &e);
    unsetenv("FP8PLAN_NCCL_AS_VERSION");
    if (!gc_expect(g, "nccl", as_old ? "create 1 rank, as NCCL 2.23" : "create 1 rank", st == ST_OK, e.msg)) return;
    printf("communicator: %s\n", c->name);
    /* FP8 travels as BF16 (2 bytes) where this NCCL has no FP8 types; a one-rank local communicator moves nothing */
    int fp8_as_bf16 = strstr(c->name, "FP8 travels as BF16") != NULL;
    if (as_old)
        gc_expect(g, "nccl", "FP8 falls back to BF16 below 2.24", fp8_as_bf16 || !strncmp(c->name, "nccl-local", 10),
                  c->name);
    const uint64_t n = 1 << 20;
    Dtype dts[3] = {DT_FP32, DT_BF16, DT_E4M3};
    for (int k = 0; k < 3; k++) {
        uint64_t bytes = n * dtype_bytes(dts[k]);
        void *x = gc_randn(g, dts[k], n, 3.0), *r = gc_halloc(bytes);
        void *dx = gc_dup(g, x, bytes), *dy = gc_dalloc(g, bytes);
        char cas[48];
        snprintf(cas, sizeof cas, "%s x %llu", dtype_name(dts[k]), (unsigned long long)n);
        st = c->all_reduce(c, CO_DP_GRAD_AR, g->gpu, dx, n, dts[k], COMM_SUM, &e);
        if (gc_expect(g, "nccl all_reduce sum", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dx, bytes);
            gc_check(g, "nccl all_reduce data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        gc_poison(g, dy, bytes);
        st = c->all_gather(c, CO_DP_PARAM_AG, g->gpu, dx, dy, n, dts[k], &e);
        if (gc_expect(g, "nccl all_gather", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dy, bytes);
            gc_check(g, "nccl all_gather data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        gc_poison(g, dy, bytes);
        st = c->reduce_scatter(c, CO_DP_GRAD_RS, g->gpu, dx, dy, n, dts[k], COMM_MAX, &e);
        if (gc_expect(g, "nccl reduce_scatter max", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dy, bytes);
            gc_check(g, "nccl reduce_scatter data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        /* broadcast from rank 0 and the uneven pair (one segment of n: the padded staging path, in place) leave
         * the data as it was over one rank */
        st = c->broadcast(c, CO_DP_PARAM_AG, g->gpu, dx, n, dts[k], 0, &e);
        if (gc_expect(g, "nccl broadcast", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dx, bytes);
            gc_check(g, "nccl broadcast data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        st = comm_reduce_scatter_v(c, CO_DP_GRAD_RS, g->gpu, dx, &n, dts[k], COMM_SUM, &e);
        if (gc_expect(g, "nccl reduce_scatter_v", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dx, bytes);
            gc_check(g, "nccl reduce_scatter_v data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        st = comm_all_gather_v(c, CO_DP_PARAM_AG, g->gpu, dx, &n, dts[k], &e);
        if (gc_expect(g, "nccl all_gather_v", cas, st == ST_OK, e.msg)) {
            gc_get(g, r, dx, bytes);
            gc_check(g, "nccl all_gather_v data", cas, dts[k], r, x, n, TOL_EXACT);
        }
        gc_dfree(g, dx), gc_dfree(g, dy);
        free(x), free(r);
    }
    /* six calls per dtype, n elements each: payload 6 n (4 + 2 + 1 or 2) */
    uint64_t payload = 6 * n * (4 + 2 + (fp8_as_bf16 ? 2 : 1));
    gc_expect(g, "nccl stats", "18 calls, payload counted in the bytes that travel, 0 bus bytes at n = 1",
              c->total.calls == 18 && c->total.payload_bytes == payload && c->total.bus_bytes == 0.0,
              "call/payload/bus counts differ");
    gc_expect(g, "nccl stats per plan row", "per dtype: 1 all-reduce, 3 gathers (+ broadcast), 2 reduce-scatters",
              c->stats[CO_DP_GRAD_AR].calls == 3 && c->stats[CO_DP_PARAM_AG].calls == 9 &&
                  c->stats[CO_DP_GRAD_RS].calls == 6 && c->stats[CO_AMAX_AR].calls == 0,
              "per-collective counts differ");
    /* the calls' device times come from their start/end events once settled: none before, all after */
    double before = c->total.seconds;
    st = comm_settle(c, &e);
    gc_expect(g, "nccl settle", "no time before settle, positive device time after, per plan row",
              st == ST_OK && before == 0.0 && c->total.seconds > 0.0 && c->stats[CO_DP_PARAM_AG].seconds > 0.0 &&
                  c->stats[CO_AMAX_AR].seconds == 0.0,
              st ? e.msg : "seconds not as expected");
    /* one rank has no peer: point to point is refused, naming the peer */
    float one = 0;
    st = comm_sendrecv(c, CO_PP_P2P, g->gpu, &one, 1, 0, &one, 1, 0, DT_FP32, &e);
    gc_expect(g, "nccl sendrecv", "refused on one rank", st == ST_USAGE && strstr(e.msg, "peer 0"), e.msg);
    check_a2a(g, c);
    c->destroy(c);
}

int main(int argc, char **argv)
{
    gc_version_flag("gpu_optim", argc, argv);
    Gc g;
    gc_init_check(&g, "gpu_optim", argc, argv);
    check_optimizers(&g);
    if (g.selftest)
        printf("skip - nccl (selftest: NCCL needs the cuda backend)\n");
    else
        check_comm(&g, 0), check_comm(&g, 1);
    return gc_finish(&g);
}
