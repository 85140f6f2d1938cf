/* tui/view_plan.c — the Plan screen: the input form, the memory bar against
 * capacity with the verdict, bytes per parameter, time and communication in
 * brief, and below them every memory term, collective, time item and advice. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/plan_report.h"
#include "tui/model.h"
#include "tui/view.h"
#include "util/num.h"

static const char *const cat_label[MC_COUNT_] = {"states", "FP8 copies", "scales+amax", "activations", "overheads"};

/* ---- summary beside the form ----------------------------------------------------------------------------------- */

static void bar(const Plan *p, const TuiPaint *pt, int y, int x, int w)
{
    uint64_t v[MC_COUNT_];
    int cells[MC_COUNT_], cap;
    for (int c = 0; c < MC_COUNT_; c++) v[c] = p->cat_bytes[c];
    int inner = w - 2, used = tui_bar_split(v, MC_COUNT_, p->capacity_bytes, inner, cells, &cap);
    paint_text(pt, y, x, 1, SY_PLAIN, "[");
    int cx = x + 1;
    for (int c = 0; c < MC_COUNT_; c++) {
        paint_repeat(pt, y, cx, cells[c], (TuiStyle)(SY_CAT0 + c), paint_glyph(pt, (TuiGlyph)(G_SEG0 + c)));
        cx += cells[c];
    }
    paint_repeat(pt, y, cx, inner - used, SY_FREE, paint_glyph(pt, G_FREE));
    if (cap < inner) paint_text(pt, y, x + 1 + cap, 1, SY_BAD, paint_glyph(pt, G_CAP)); /* where the GPU ends */
    paint_text(pt, y, x + inner + 1, 1, SY_PLAIN, "]");
}

static void summary_invalid(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    TuiLine buf[16];
    TuiLines L = {buf, 0, 16};
    lines_add(&L, SY_BAD, "Cannot plan these inputs:");
    lines_wrap(&L, SY_PLAIN, r.w - 2, 2, s->plan_err.msg);
    lines_add(&L, SY_PLAIN, "%s", "");
    lines_wrap(&L, SY_DIM, r.w - 2, 0,
               "No plan is shown until the inputs are valid. Step the field back (Left/Right) or type a value "
               "(Enter); the message names the input at fault.");
    lines_paint(&L, p, r, 0);
}

/* a state's linear-layer, other and expert terms (the expert one is 0 for dense models) */
static double gb2(const Plan *p, MemTermId a, MemTermId b, MemTermId x)
{
    return plan_gb(p->mem[a].bytes + p->mem[b].bytes + p->mem[x].bytes);
}

/* "weights 11.08  master 5.54 ..." — the terms of one category, in GB */
static void breakdown(const Plan *p, MemCategory c, char *buf, size_t n)
{
    switch (c) {
    case MC_STATE:
        snprintf(buf, n, "weights %.2f  master %.2f  grads %.2f  Adam m %.2f  v %.2f",
                 gb2(p, MT_WEIGHT_GEMM, MT_WEIGHT_OTHER, MT_WEIGHT_EXPERT),
                 gb2(p, MT_MASTER_GEMM, MT_MASTER_OTHER, MT_MASTER_EXPERT),
                 gb2(p, MT_GRAD_GEMM, MT_GRAD_OTHER, MT_GRAD_EXPERT),
                 gb2(p, MT_OPTIM_M_GEMM, MT_OPTIM_M_OTHER, MT_OPTIM_M_EXPERT),
                 gb2(p, MT_OPTIM_V_GEMM, MT_OPTIM_V_OTHER, MT_OPTIM_V_EXPERT));
        break;
    case MC_FP8_COPY:
        snprintf(buf, n, "row-wise %.2f  transposed %.2f", plan_gb(p->mem[MT_FP8_ROWWISE].bytes),
                 plan_gb(p->mem[MT_FP8_COLWISE].bytes));
        if (plan_term_applies(p, MT_FP8_EXPERT)) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "  experts %.2f", plan_gb(p->mem[MT_FP8_EXPERT].bytes));
        }
        break;
    case MC_SCALE:
        snprintf(buf, n, "GEMM operands %.4f  block %.4f  states %.4f", plan_gb(p->mem[MT_SCALE_GEMM].bytes),
                 plan_gb(p->mem[MT_SCALE_BLOCK].bytes), plan_gb(p->mem[MT_SCALE_STATE].bytes));
        break;
    case MC_ACTIVATION:
        snprintf(buf, n, "saved %.2f (FP8 %.2f)  attention %.2f  transient %.2f",
                 plan_gb(p->mem[MT_ACT_LAYER_HP].bytes + p->mem[MT_ACT_LAYER_FP8].bytes),
                 plan_gb(p->mem[MT_ACT_LAYER_FP8].bytes), plan_gb(p->mem[MT_ACT_ATTN].bytes),
                 plan_gb(p->mem[MT_TRANSIENT].bytes));
        break;
    default:
        snprintf(buf, n, "NCCL %.2f  context %.2f  workspace %.3f  fragmentation %.2f",
                 plan_gb(p->mem[MT_COMM_BUFFER].bytes), plan_gb(p->mem[MT_CUDA_CONTEXT].bytes),
                 plan_gb(p->mem[MT_WORKSPACE].bytes), plan_gb(p->mem[MT_FRAGMENTATION].bytes));
        break;
    }
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, " GB");
}

static void summary(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    const Plan *pl = &s->plan;
    char a[40], b[40], c[40];
    int y = r.y, w = r.w;
    int hw = paint_textf(p, y, r.x, w, SY_HEAD, "Memory per GPU, stage %u/%u", pl->stage, pl->in.pp);
    snprintf(a, sizeof a, "%.2f/%.2f GB ", plan_gb(pl->total_bytes), plan_gb(pl->capacity_bytes));
    int over = pl->total_bytes > pl->capacity_bytes;
    const char *verdict = pl->fits ? " FITS " : over ? " OOM " : " LIMIT ";
    int vw = paint_cols(a) + paint_cols(verdict);
    if (hw + 1 + vw <= w) {
        paint_text(p, y, r.x + w - vw, vw, SY_PLAIN, a);
        paint_text(p, y, r.x + w - paint_cols(verdict), paint_cols(verdict), pl->fits ? SY_GOOD : SY_BAD, verdict);
    }
    bar(pl, p, ++y, r.x, w);
    uint64_t free_b = over ? pl->total_bytes - pl->capacity_bytes : pl->capacity_bytes - pl->total_bytes;
    for (int k = 0; k <= MC_COUNT_; k++) {
        y++;
        int cat = k < MC_COUNT_;
        uint64_t bytes = cat ? pl->cat_bytes[k] : free_b;
        paint_repeat(p, y, r.x, 2, cat ? (TuiStyle)(SY_CAT0 + k) : SY_FREE,
                     paint_glyph(p, cat ? (TuiGlyph)(G_SEG0 + k) : G_FREE));
        const char *name = cat ? cat_label[k] : over ? "over capacity" : "headroom";
        int used =
            3 + paint_textf(p, y, r.x + 3, w - 3, !cat && !pl->fits ? SY_BAD : SY_PLAIN, "%-13s%10s %5.1f %%", name,
                            tui_fmt_bytes(bytes, a, sizeof a), 100.0 * (double)bytes / (double)pl->capacity_bytes);
        if (cat && w - used >= 40) { /* wide terminals: what the category is made of */
            char what[160];
            breakdown(pl, (MemCategory)k, what, sizeof what);
            paint_text(p, y, r.x + used + 2, w - used - 2, SY_DIM, what);
        }
    }
    /* The plan's own bytes per parameter (the stack's main-grad dtype and --moment-dtype applied), as the compare screen's
     * 'state B/param' row reads it; the recipe's accounting beneath when the stack keeps another dtype. */
    double per[STATE_COUNT_], kept[STATE_COUNT_];
    double bpp = recipe_state_bytes_per_param(&s->in.recipe->gemm, 0, 1, per);
    double bpp_kept = plan_state_bytes_per_param(&s->in, kept);
    unsigned copies = (unsigned)plan_fp8_copy_bytes_per_param(&s->in);
    paint_textf(p, ++y, r.x, w, SY_PLAIN, "B/param %.2f: weight %g master %g grad %g m %g v %g", bpp_kept,
                kept[STATE_WEIGHT], kept[STATE_MASTER], kept[STATE_GRAD], kept[STATE_M], kept[STATE_V]);
    uint64_t st_bytes = (uint64_t)llround((double)pl->params_total * bpp_kept);
    if (kept[STATE_GRAD] != per[STATE_GRAD]) /* the stack keeps main grads in another dtype */
        paint_textf(p, ++y, r.x, w, SY_DIM, "  x %.1fe9 = %s; recipe's grad %g: %.2f", (double)pl->params_total / 1e9,
                    tui_fmt_bytes(st_bytes, a, sizeof a), per[STATE_GRAD], bpp);
    else if (kept[STATE_M] != per[STATE_M] || kept[STATE_V] != per[STATE_V]) /* --moment-dtype */
        paint_textf(p, ++y, r.x, w, SY_DIM, "  x %.1fe9 = %s; recipe's m %g v %g: %.2f", (double)pl->params_total / 1e9,
                    tui_fmt_bytes(st_bytes, a, sizeof a), per[STATE_M], per[STATE_V], bpp);
    else
        paint_textf(p, ++y, r.x, w, SY_DIM, "  +%u FP8 copies; x %.1fe9 params = %s", copies,
                    (double)pl->params_total / 1e9, tui_fmt_bytes(st_bytes, a, sizeof a));
    paint_textf(p, ++y, r.x, w, SY_PLAIN, "Step %s  %.2f samples/s  %.1f k tokens/s",
                tui_fmt_seconds(pl->time.step_s, a, sizeof a), pl->samples_per_s, pl->tokens_per_s / 1e3);
    char trust[160];
    if (s->trust_rows) {
        FidelityBand band;
        fidelity_band(s->trust_rows, s->ntrust, &s->in, &band);
        fidelity_band_short(&band, &s->in, trust, sizeof trust);
    } else {
        snprintf(trust, sizeof trust, "trust: %s", s->trust_note[0] ? "measured.csv not read" : "not computed");
    }
    paint_textf(p, ++y, r.x, w, SY_DIM, "%s", trust);
    paint_textf(p, ++y, r.x, w, SY_PLAIN, "MFU %.1f%% BF16 peak, %.1f%% FP8 peak; %.0f TFLOP/s", pl->mfu_bf16_pct,
                pl->mfu_fp8_pct, pl->tflops_per_gpu);
    paint_textf(p, ++y, r.x, w, SY_PLAIN, "Sent/step DP %s  TP %s  PP %s", tui_fmt_bytes(pl->dp_comm_bytes, a, 40),
                tui_fmt_bytes(pl->tp_comm_bytes, b, 40), tui_fmt_bytes(pl->pp_comm_bytes, c, 40));
    paint_textf(p, ++y, r.x, w, SY_PLAIN, "Weight comm (DP gather + grad reduce) %s",
                tui_fmt_bytes(pl->weight_comm_bytes, a, 40));
    int nadv = 0;
    for (int i = 0; i < ADV_COUNT_; i++) nadv += (pl->advice_mask >> i) & 1;
    paint_textf(p, ++y, r.x, w, nadv ? SY_WARN : SY_DIM, "%d advice line%s below (PgDn)", nadv, nadv == 1 ? "" : "s");
}

/* ---- details ------------------------------------------------------------------------------------------------------- */

static void terms_lines(const Plan *p, TuiLines *L)
{
    char g[32], b[40];
    lines_section(L, "Memory terms on this GPU (GB = 1e9 B)");
    lines_add(L, SY_DIM, "   %-18s %-5s %16s %10s %6s", "term", "dtype", "elements", "bytes", "shards");
    for (int c = 0; c < MC_COUNT_; c++) {
        for (int i = 0; i < MT_COUNT_; i++) {
            const MemTerm *m = &p->mem[i];
            if (mem_term_category((MemTermId)i) != (MemCategory)c || !plan_term_applies(p, (MemTermId)i)) continue;
            lines_add_glyph(L, G_SEG0 + c, (TuiStyle)(SY_CAT0 + c), m->bytes ? SY_PLAIN : SY_DIM,
                            "%-18s %-5s %16s %10s %6u", mem_term_name((MemTermId)i),
                            m->bytes && m->dtype != DT_NONE ? dtype_name(m->dtype) : "-",
                            m->elements ? num_fmt_grouped(m->elements, g, sizeof g) : "-",
                            tui_fmt_bytes(m->bytes, b, sizeof b), m->shards);
        }
        lines_add(L, SY_HEAD, "   %-18s %34s", cat_label[c], tui_fmt_bytes(p->cat_bytes[c], b, sizeof b));
    }
    lines_add(L, SY_HEAD, "   %-18s %34s", "total", tui_fmt_bytes(p->total_bytes, b, sizeof b));
    lines_add(L, SY_PLAIN, "   %-18s %34s", "capacity", tui_fmt_bytes(p->capacity_bytes, b, sizeof b));
    lines_add(L, SY_PLAIN, "%s", "");
}

static void comm_lines(const Plan *p, TuiLines *L)
{
    char a[40], b[40], c[40], t[40];
    lines_section(L, "Collectives per step (bus: bytes this GPU sends per call, nccl-tests factors)");
    lines_add(L, SY_DIM, "%-21s %-5s %5s %9s %9s %6s %10s %8s", "collective", "dtype", "ranks", "payload", "bus",
              "calls", "sent/step", "time");
    int any = 0;
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *co = &p->coll[i];
        if (!co->ranks) continue;
        any = 1;
        lines_add(L, SY_PLAIN, "%-21s %-5s %5u %9s %9s %6llu %10s %8s", coll_name((CollectiveId)i),
                  co->dtype == DT_NONE ? "mixed" : dtype_name(co->dtype), co->ranks,
                  tui_fmt_bytes(co->payload_bytes, a, sizeof a), tui_fmt_bytes(co->bus_bytes, b, sizeof b),
                  (unsigned long long)co->calls, tui_fmt_bytes(co->step_bytes, c, sizeof c),
                  tui_fmt_seconds(co->time_s, t, sizeof t));
    }
    if (!any) lines_add(L, SY_DIM, "(none: a single GPU)");
    lines_add(L, SY_PLAIN, "%s", "");
}

static void time_lines(const Plan *p, TuiLines *L)
{
    const TimeBreakdown *t = &p->time;
    const struct {
        const char *name;
        double v;
    } items[] = {
        {"GEMMs", t->gemm_s},
        {"attention", t->attn_s},
        {"non-GEMM", t->nongemm_s},
        {"TP comm (exposed)", t->tp_comm_s},
        {"CP comm (exposed)", t->cp_comm_s},
        {"PP send/recv", t->pp_comm_s},
        {"pipeline bubble", t->bubble_s},
        {"DP comm (exposed)", t->dp_comm_s},
        {"optimizer", t->optimizer_s},
        {"FP8 weight cast", t->weight_cast_s},
        {"amax + gradient syncs", t->other_s},
        {"expert GEMMs", t->expert_gemm_s}, /* the MoE rows: only for models with experts */
        {"router + permute", t->moe_route_s},
        {"EP all-to-all (exp.)", t->ep_comm_s},
        {"MoE host issue", t->moe_host_s},
    };
    char a[40];
    lines_section(L, "Step time");
    size_t n = sizeof items / sizeof *items - (plan_coll_applies(p, CO_EP_DISPATCH_FWD) ? 0 : 4);
    for (size_t i = 0; i < n; i++)
        lines_add(L, items[i].v > 0 ? SY_PLAIN : SY_DIM, "%-22s %10s %6.1f %%", items[i].name,
                  tui_fmt_seconds(items[i].v, a, sizeof a), t->step_s > 0 ? 100.0 * items[i].v / t->step_s : 0.0);
    lines_add(L, SY_HEAD, "%-22s %10s  %.0f tokens/s", "step", tui_fmt_seconds(t->step_s, a, sizeof a),
              p->tokens_per_s);
    lines_add(L, SY_PLAIN, "%s", "");
}

static void advice_lines(const Plan *p, TuiLines *L, int width)
{
    char buf[600];
    lines_section(L, "Advice");
    int any = 0;
    for (int a = 0; a < ADV_COUNT_; a++) {
        if (!(p->advice_mask & (1u << a))) continue;
        snprintf(buf, sizeof buf, "- %s", advice_text((AdviceId)a));
        lines_wrap(L, SY_PLAIN, width, 2, buf);
        any = 1;
    }
    if (!any) lines_add(L, SY_DIM, "(none for this plan)");
    lines_add(L, SY_PLAIN, "%s", "");
    snprintf(buf, sizeof buf,
             "Assumptions: GB = 1e9 B; activations per Korthikanti et al. 2022; CUDA context %.2f GB, workspace "
             "%.3f GB, NCCL %.2f GB per communicator, allocator reserve %.0f %% of activations; stack %s; GEMMs "
             "from their shapes at %.2f of the GPU's matmul ceiling; HBM %.2f, network %.2f; fits below %.0f %% "
             "of memory. The CLI prints the same plan: fp8plan plan --help.",
             plan_gb(p->in.cuda_context_bytes), plan_gb(p->in.workspace_bytes), plan_gb(p->in.nccl_comm_bytes),
             100 * p->in.frag_frac, p->in.stack ? p->in.stack->name : "none", gpu_sustained(p->in.gpu), p->in.eff_hbm,
             p->in.eff_net, 100 * p->in.max_mem_frac);
    lines_wrap(L, SY_DIM, width, 0, buf);
}

int view_plan(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    view_form(s, p, l->form);
    if (!s->plan_ok) {
        summary_invalid(s, p, l->summary);
        return 0;
    }
    summary(s, p, l->summary);
    enum { NL = 200 };
    TuiLine a[NL], b[NL];
    TuiLines L0 = {a, 0, NL}, L1 = {b, 0, NL};
    TuiLines *right = l->ndetails == 2 ? &L1 : &L0;
    int w = l->details[l->ndetails - 1].w - 1;
    terms_lines(&s->plan, &L0);
    comm_lines(&s->plan, right);
    time_lines(&s->plan, right);
    advice_lines(&s->plan, right, w);
    int first = 0;
    for (int i = 0; i < l->ndetails; i++) {
        TuiRect r = l->details[i], body = {r.y + 1, r.x, r.h - 1, r.w};
        const TuiLines *L = i ? &L1 : &L0;
        int f = lines_paint(L, p, body, s->scroll[SCR_PLAN]);
        first = f > first ? f : first;
        /* the rule above says where the view is and that there is more */
        paint_repeat(p, r.y, r.x, r.w, SY_DIM, paint_glyph(p, G_HRULE));
        if (f > 0 && !L->v[f].section)
            paint_textf(p, r.y, r.x + 2, r.w - 16, SY_DIM, " %s (cont.) ", lines_section_of(L, f));
        const char *more = f + body.h < L->n ? (f > 0 ? " PgUp/PgDn " : " PgDn: more ") : f > 0 ? " PgUp " : "";
        if (*more) paint_text(p, r.y, r.x + r.w - paint_cols(more) - 1, r.w, SY_DIM, more);
    }
    return first;
}
