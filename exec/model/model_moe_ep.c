/* exec/model/model_moe_ep.c — expert parallelism: the routed experts of a MoE layer split over the ep
 * ranks of an EP group (model.h: epc), tokens carried to their experts and back by all-to-alls.
 *
 * Per MoE layer and micro-batch, forward:
 *   1. counts   every rank sends each EP peer j the rows it routed to j's experts, one int32 per
 *               expert (El = E/ep of them; an all-to-all of counts, CO_EP_COUNTS: a host plan's), so each
 *               rank knows rc[s][e]: the rows source s sends its local expert e;
 *   2. dispatch the permuted rows (R = B·T·k, expert by expert, so peer j's are one segment) go to
 *               their experts' rank (CO_EP_DISPATCH_FWD), arriving source by source and sorted
 *               into expert-major order (expert e's rows of every source together) for the grouped
 *               GEMMs over the El local experts;
 *   3. combine  the experts' outputs sorted back source by source and returned (CO_EP_COMBINE_FWD)
 *               to the rows they came from; the token side keeps them (R, C) for the combine
 *               weights' gradient (one rank recomputes them instead: here that would cost a second
 *               combine the plan does not count).
 * Backward mirrors it: d(expert outputs) out (CO_EP_DISPATCH_BWD), d(expert inputs) back
 * (CO_EP_COMBINE_BWD). The recipe's ep_dispatch_comm / ep_combine_comm dtypes must be the activation
 * dtype (model_moe_check); rows travel as they are. FP8 experts under current scaling (te-fp8-current)
 * cast the dispatched rows on the experts' side with each local expert's own scale (model_ep_f8 gives
 * model_moe_fp8.c the expert side's rows and buffers: the saved transposed FP8 inputs per layer, the
 * working FP8 copies shared); nothing about the scales crosses ranks. Under delayed scaling (te-fp8) a
 * local expert's amax records are MAX-reduced over the ranks holding a part of that expert (its EDP group,
 * with --etp its ETP group too) and over nothing else (model_moe_ep_amax.c).
 *
 * A rank may receive up to ep·R rows (every peer's tokens on its experts), so its expert-side tensors
 * hold ep·R rows; they are the backend's allocations outside the arena (the plan's act_moe counts the
 * uniform-routing rows times --moe-imbalance, a bound dropless routing does not keep). The rows this rank
 * sends to each expert accumulate in m->ep_rows for the planner's bytes with the measured routing.
 * Expert tensor parallelism (etp > 1, also at ep 1) runs through the same steps with the ETP group's rows
 * gathered after the dispatch and the partial outputs reduce-scattered before the combine
 * (exec/model/model_moe_etp.c); the experts' side then holds up to ep·etp·R rows. At ep 1 with BF16/FP32 experts
 * (model_etp_arena) it holds etp·R rows exactly, and those tensors are the arena's, as the plan counts them: the
 * saved inputs and outputs a layer's (la->x_in, x_fc1, x_fc2in), the experts' outputs, then their output and input
 * gradients, in x_y, d(activation) and d(FC1 output) in x_dh2 and x_dh1, the gathered and reduce-scattered rows in
 * etp_rows (forward) and x_dy (backward). FP8 experts alike (model_etp_arena covers every recipe): the layer's
 * x_fc1 and transposed FP8 inputs q_xin, q_xh (with their tiles), the gathered rows cast then spent in x_y, the
 * activation's output in x_h and the FP8 working copies t_qrow, d_qrow, d_qcol (model_layout.c); outside the arena
 * only the row counts (dcounts) and delayed scaling's amax buffer, reported at ep 1 too. The outputs kept at the
 * token copies are the arena's at any layout (la->y_tok). */
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"
#include "planner/plan_routed.h"

typedef struct {
    void *x_in, *x_fc1, *x_fc2in; /* expert side, (cap, C), (cap, k·Fe), (cap, Fe): saved for backward */
    uint8_t *q_xin, *q_xh;        /* FP8 experts: the saved transposed inputs (C, rows), (Fe, rows) */
    float *q_xin_s, *q_xh_s;      /* block scaling: their tiles (model_moe_block.c) */
    void *y_tok;                  /* (R, C) the experts' outputs back at their token copies (the arena's) */
    int32_t *dcounts;             /* (El) backend memory: rows per local expert */
    uint64_t *sent;               /* (E) host: rows this rank routed to each expert */
    uint64_t *rc;                 /* (etp·ep, El) host: rows source s sends local expert e; with expert tensor
                                     parallelism every ETP peer's sources in ETP rank order (model_moe_etp.c) */
    uint64_t rows;                /* Σ rc: the expert-side rows (all the ETP group's) */
    uint64_t own0;                /* the first row of this rank's own sources (0 at etp 1) */
} EpLayer;

struct MoeEp {
    uint64_t cap;     /* ep·etp·R rows */
    EpLayer *layer;   /* (slots, MoE layers of the stage): a pipeline's in-flight micro-batches each */
    uint32_t nlayer;  /* slots x MoE layers */
    void *scr, *scrb; /* (cap, C) the rows in source order (the all-to-alls' side): forward's, backward's */
    void *ya, *yb;    /* (cap, C) the experts' outputs; in backward d(outputs) (ya) and d(inputs) (yb; in the arena
                         ya's: d(outputs) are spent when FC1's input gradient is made) */
    void *dh2, *dh1;  /* (cap, Fe), (cap, k·Fe) */
    uint8_t *t_q, *d_qrow, *d_qcol;     /* FP8 experts: the working copies (cap, max(C, Fe)), (cap, dmax) twice */
    float *t_q_s, *d_qrow_s, *d_qcol_s; /* block scaling: their tiles */
    uint8_t *pay;                       /* FP8 dispatch: the token side's payload (R rows of row_bytes; the arena's) */
    uint8_t *host;                      /* FP8 dispatch: the received payload on the host (cap rows) */
    float *amax;                        /* delayed scaling: the experts' current amaxes of a bank (4·El a layer) */
    void **mem;                         /* every allocation, for release */
    uint32_t nmem, capmem;
    int32_t *hc;      /* (E) host counts as the router wrote them */
    int32_t *xsend;   /* (E) host: the counts sent, peer by peer */
    int32_t *xrecv;   /* (ep·El) host: the counts received */
    uint64_t *scount; /* (ep) elements per peer, this rank's side */
    uint64_t *rcount; /* (ep) elements per peer, the experts' side */
};

/* MoE block l's state for the micro-batch in flight in the current slot (its expert-side rows and counts are
 * saved for its backward, which a pipeline runs after other micro-batches' forwards: model_pp.c). */
static EpLayer *ep_layer(Model *m, uint32_t l)
{
    return &m->moe_ep->layer[(uint64_t)m->slot * m->moe_layers + model_moe_index(m, l)];
}

static Status ep_alloc(Model *m, MoeEp *p, uint64_t bytes, void **out, Err *e)
{
    if (p->nmem == p->capmem) return err_set(e, ST_SOFTWARE, "expert parallelism: more buffers than counted");
    Status st = m->bk->alloc(m->bk, bytes ? bytes : 1, out, e);
    if (!st) p->mem[p->nmem++] = *out, m->ep_buffer_bytes += bytes;
    return st;
}

Status model_ep_create(Model *m, Err *e)
{
    const ModelSpec *s = &m->spec;
    if (!model_ep_on(m) || !m->moe_layers) return ST_OK;
    const uint64_t E = s->experts, El = E / m->ep, R = model_moe_rows(m), C = s->hidden, Fe = model_xffn(m);
    const uint64_t kf = spec_fc1_k(s), eb = dtype_bytes(m->act_dtype);
    MoeEp *p = calloc(1, sizeof *p);
    if (!p) return err_set(e, ST_NOMEM, "out of memory");
    m->moe_ep = p;
    p->cap = (uint64_t)m->ep * m->etp * R;
    p->nlayer = (m->slots ? m->slots : 1) * m->moe_layers; /* model_pp_stage set the slots */
    p->capmem = 12 + 9 * p->nlayer;
    p->layer = calloc(p->nlayer, sizeof *p->layer);
    p->mem = calloc(p->capmem, sizeof *p->mem);
    p->hc = malloc(E * sizeof *p->hc);
    p->xsend = malloc(E * sizeof *p->xsend);
    p->xrecv = malloc((size_t)m->ep * El * sizeof *p->xrecv);
    p->scount = malloc((size_t)m->ep * 2 * sizeof *p->scount);
    m->ep_rows = calloc(E, sizeof *m->ep_rows);
    m->etp_seg = calloc(m->etp, sizeof *m->etp_seg);
    if (!p->layer || !p->mem || !p->hc || !p->xsend || !p->xrecv || !p->scount || !m->ep_rows || !m->etp_seg)
        return err_set(e, ST_NOMEM, "out of memory");
    p->rcount = p->scount + m->ep;
    const uint64_t cap = p->cap;
    const int in_arena = model_etp_arena(m);
    Status st = ST_OK;
    if (in_arena) { /* the arena's (model_moe_transient), at cap = etp·R rows: the forward's outputs, then the
                       backward's d(outputs) and, those spent once FC2's gradients are made, d(inputs) in x_y */
        ModelActs *a = &m->act;
        p->scr = a->etp_rows, p->scrb = a->x_dy, p->ya = p->yb = a->x_y, p->dh2 = a->x_dh2, p->dh1 = a->x_dh1;
        if (!p->scr || !p->scrb || !p->ya || !p->dh2 || !p->dh1)
            st = err_set(e, ST_SOFTWARE, "expert tensor parallelism: no expert rows in the arena");
    } else {
        st = ep_alloc(m, p, cap * C * eb, &p->scr, e);
        if (!st) st = ep_alloc(m, p, cap * C * eb, &p->ya, e);
        if (!st) st = ep_alloc(m, p, cap * C * eb, &p->yb, e);
        if (!st) st = ep_alloc(m, p, cap * Fe * eb, &p->dh2, e);
        if (!st) st = ep_alloc(m, p, cap * kf * Fe * eb, &p->dh1, e);
        p->scrb = p->scr;
    }
    const int f8 = recipe_fp8_gemm(&m->recipe); /* per-tensor scales only (model_moe_check) */
    const uint64_t qw = C > Fe ? C : Fe, dmax = qw > kf * Fe ? qw : kf * Fe;
    const int blk = exec_block_scaled(&m->recipe); /* 1x128 tiles: rows x ceil(cols/128), transposed per expert */
    const uint64_t xt = model_moe_tiles(cap, El), t1 = (qw + 127) / 128, td = (dmax + 127) / 128;
    if (!st && f8 && in_arena) { /* the arena's FP8 copies (model_layout.c), sized for the group's cap rows */
        const ModelActs *a = &m->act;
        p->t_q = a->t_qrow, p->d_qrow = a->d_qrow, p->d_qcol = a->d_qcol;
        p->t_q_s = a->t_qrow_s, p->d_qrow_s = a->d_qrow_s, p->d_qcol_s = a->d_qcol_s;
        if (!p->t_q || !p->d_qrow || !p->d_qcol || (blk && (!p->t_q_s || !p->d_qrow_s || !p->d_qcol_s)))
            st = err_set(e, ST_SOFTWARE, "expert tensor parallelism: no FP8 expert copies in the arena");
    } else if (f8) {
        if (!st) st = ep_alloc(m, p, cap * qw, (void **)&p->t_q, e);
        if (!st) st = ep_alloc(m, p, cap * dmax, (void **)&p->d_qrow, e);
        if (!st) st = ep_alloc(m, p, cap * dmax, (void **)&p->d_qcol, e);
        if (!st && blk) st = ep_alloc(m, p, cap * t1 * 4, (void **)&p->t_q_s, e);
        if (!st && blk) st = ep_alloc(m, p, cap * td * 4, (void **)&p->d_qrow_s, e);
        if (!st && blk) st = ep_alloc(m, p, dmax * xt * 4, (void **)&p->d_qcol_s, e);
    }
    if (!st && f8 && m->recipe.scaling == SCALING_DELAYED)
        st = ep_alloc(m, p, (uint64_t)m->moe_layers * 4 * El * sizeof(float), (void **)&p->amax, e);
    if (!st && model_moe_ep_fp8_dispatch(m)) { /* at ep > 1 only: at ep 1 x etp > 1 nothing is dispatched */
        p->pay = m->act.ep_pay;                /* the arena's (model_moe_transient: the plan's dispatch buffer) */
        if (!p->pay) st = err_set(e, ST_SOFTWARE, "expert parallelism: no FP8 dispatch buffer in the arena");
        p->host = st ? NULL : malloc((size_t)(cap * model_ep_fp8_row_bytes(m)));
        if (!st && !p->host) st = err_set(e, ST_NOMEM, "out of memory");
        m->ep_buffer_bytes += p->host ? cap * model_ep_fp8_row_bytes(m) : 0; /* host memory, counted likewise */
    }
    for (uint32_t i = 0; !st && i < p->nlayer; i++) {
        EpLayer *L = &p->layer[i];
        L->sent = calloc(E + (size_t)m->etp * m->ep * El, sizeof *L->sent);
        if (!L->sent) return err_set(e, ST_NOMEM, "out of memory");
        L->rc = L->sent + E;
        if (!in_arena) st = ep_alloc(m, p, cap * C * eb, &L->x_in, e); /* else the layer's (model_ep_dispatch) */
        if (!st && !in_arena) st = ep_alloc(m, p, cap * kf * Fe * eb, &L->x_fc1, e);
        if (!st && !in_arena) st = ep_alloc(m, p, cap * Fe * eb, &L->x_fc2in, e);
        if (!st) st = ep_alloc(m, p, El * sizeof(int32_t), (void **)&L->dcounts, e);
        if (in_arena) continue; /* the FP8 copies saved too: the layer's (model_ep_dispatch) */
        if (!st && f8) st = ep_alloc(m, p, cap * C, (void **)&L->q_xin, e);
        if (!st && f8) st = ep_alloc(m, p, cap * Fe, (void **)&L->q_xh, e);
        if (!st && blk) st = ep_alloc(m, p, C * xt * 4, (void **)&L->q_xin_s, e);
        if (!st && blk) st = ep_alloc(m, p, Fe * xt * 4, (void **)&L->q_xh_s, e);
    }
    return st;
}

void model_ep_destroy(Model *m)
{
    MoeEp *p = m->moe_ep;
    free(m->ep_rows);
    free(m->etp_seg);
    m->ep_rows = NULL;
    m->etp_seg = NULL;
    if (!p) return;
    for (uint32_t i = 0; i < p->nmem; i++) m->bk->free(m->bk, p->mem[i]);
    for (uint32_t i = 0; p->layer && i < p->nlayer; i++) free(p->layer[i].sent);
    free(p->layer);
    free(p->mem);
    free(p->hc);
    free(p->xsend);
    free(p->xrecv);
    free(p->scount);
    free(p->host);
    free(p);
    m->moe_ep = NULL;
}

/* An all-to-all over the EP group under id; what it moves outside the plan's rows (the counts, and the
 * communicator's agreement on the element counts before every call) added to m->ep_counts_bytes. The counts'
 * own call is counted under CO_EP_COUNTS too (its time: a host plan's ep_counts row). */
_Static_assert(sizeof((Model *)0)->ep_msg_s / sizeof(double) == EPR_COUNT_, "ep_msg_s: one per EPR_* row");
static Status a2a(Model *m, CollectiveId id, const void *send, const uint64_t *sc, void *recv, const uint64_t *rc,
                  Dtype dt, Err *e)
{
    const Comm *root = m->comm;
    const int planned = (unsigned)id < CO_COUNT_ && id != CO_EP_COUNTS; /* a payload row: dispatch or combine */
    CommStats t0 = root->total, s0 = planned ? root->stats[id] : (CommStats){0};
    Status st = comm_all_to_all_v(m->epc, id, m->bk, send, sc, recv, rc, dt, e);
    const double plan_s =
        !st && planned && m->a2a_fits ? plan_a2a_peers_s(m->a2a_fits, sc, rc, dtype_bytes(dt), m->ep, m->ep_rank) : -1;
    if (plan_s >= 0) { /* the plan of this call's own messages (the measured routing's), for the report */
        m->ep_msg_s[id - CO_EP_DISPATCH_FWD + 1] += plan_s;
        m->ep_msg_calls[id - CO_EP_DISPATCH_FWD + 1]++;
    }
    if (st) { /* the group's ranks are its own 0 .. ep - 1: name the world's */
        const uint32_t g0 = (uint32_t)m->comm->rank - m->ep_rank;
        err_prefix(e, "expert parallelism, %s (EP group of ranks %u..%u; its rank j is rank %u + j)",
                   planned ? ep_routed_names[id - CO_EP_DISPATCH_FWD + 1] : "counts", g0, g0 + m->ep - 1, g0);
    }
    const CommStats *t1 = &root->total, *s1 = planned ? &root->stats[id] : &s0;
    m->ep_counts_bytes[0] +=
        (double)(t1->payload_bytes - t0.payload_bytes) - (double)(s1->payload_bytes - s0.payload_bytes);
    m->ep_counts_bytes[1] += (t1->bus_bytes - t0.bus_bytes) - (s1->bus_bytes - s0.bus_bytes);
    return st;
}

static void *row_at(const Model *m, const void *base, uint64_t row, uint64_t cols)
{
    return (char *)base + row * cols * dtype_bytes(m->act_dtype);
}

/* Copy n rows of cols from src to dst (the activation dtype) through the backend. */
static Status rows_copy(Model *m, const void *src, void *dst, uint64_t n, uint64_t cols, Err *e)
{
    if (!n) return ST_OK;
    return m->bk->convert(m->bk, src, m->act_dtype, dst, m->act_dtype, n * cols, NULL, e);
}

/* Between the source-major order of the all-to-all (source s's rows, expert by expert) in src_order and the
 * expert-major order of the grouped GEMMs (expert e's rows, source by source) in exp_order: to_exp 1 copies
 * src_order → exp_order, 0 the other way. */
static Status sort_rows(Model *m, const EpLayer *L, void *src_order, void *exp_order, int to_exp, uint64_t cols, Err *e)
{
    const uint64_t El = m->spec.experts / m->ep, ep = (uint64_t)m->ep * m->etp; /* sources: every ETP peer's */
    Status st = ST_OK;
    uint64_t at = 0; /* expert-major row */
    for (uint64_t x = 0; x < El; x++)
        for (uint64_t s = 0; s < ep; s++) {
            uint64_t from = 0; /* source-major row: s's segment, then its experts before x */
            for (uint64_t t = 0; t < s; t++)
                for (uint64_t y = 0; y < El; y++) from += L->rc[t * El + y];
            for (uint64_t y = 0; y < x; y++) from += L->rc[s * El + y];
            uint64_t n = L->rc[s * El + x];
            void *a = row_at(m, src_order, from, cols), *b = row_at(m, exp_order, at, cols);
            if (!st) st = rows_copy(m, to_exp ? a : b, to_exp ? b : a, n, cols, e);
            at += n;
        }
    return st;
}

/* The element counts of the layer's all-to-alls: this rank's (token) side scount[j] = rows it routed to
 * peer j's experts · cols, the experts' side rcount[s] = rows source s sends here · cols. */
static void a2a_counts(Model *m, const EpLayer *L, uint64_t cols)
{
    MoeEp *p = m->moe_ep;
    const uint64_t ep = m->ep, El = m->spec.experts / ep;
    const uint64_t *rc = L->rc + (uint64_t)m->etp_rank * ep * El; /* this rank's own sources */
    for (uint64_t j = 0; j < ep; j++) {
        uint64_t sr = 0, rr = 0;
        for (uint64_t x = 0; x < El; x++) sr += L->sent[j * El + x], rr += rc[j * El + x];
        p->scount[j] = sr * cols, p->rcount[j] = rr * cols;
    }
}

/* Token side (R, C) in global expert order → the experts' side (rows, C) in expert-major order. */
static Status to_experts(Model *m, const EpLayer *L, CollectiveId id, const void *tok, void *exp, Err *e)
{
    MoeEp *p = m->moe_ep;
    const uint64_t C = m->spec.hidden;
    void *scr = id == CO_EP_DISPATCH_BWD ? p->scrb : p->scr;
    void *own = row_at(m, scr, L->own0, C); /* this rank's sources among the ETP group's */
    a2a_counts(m, L, C);
    /* ep 1: its own rows stay (already in place where the backward's d(outputs) were made in x_dy's first rows) */
    Status st = m->ep > 1    ? a2a(m, id, tok, p->scount, own, p->rcount, m->act_dtype, e)
                : tok != own ? rows_copy(m, tok, own, model_moe_rows(m), C, e)
                             : ST_OK;
    if (!st && m->etp > 1) st = model_etp_gather(m, scr, L->rc, C, m->act_dtype, e);
    return st ? st : sort_rows(m, L, scr, exp, 1, C, e);
}

/* The FP8 dispatch (model_moe_ep_fp8.c): the token side (R, C) quantized peer by peer, its codes and scales
 * moved as 4-byte words (with expert tensor parallelism into this rank's segment, then gathered over the ETP
 * group), sorted expert-major into q / qs on the experts' side and dequantized into exp. */
static Status to_experts_fp8(Model *m, const EpLayer *L, CollectiveId id, const void *tok, void *exp, uint8_t *q,
                             float *qs, Err *e)
{
    MoeEp *p = m->moe_ep;
    const uint64_t ep = m->ep, El = m->spec.experts / ep, rb = model_ep_fp8_row_bytes(m);
    uint64_t *rows = p->scount; /* rows per peer first, then its words */
    for (uint64_t j = 0; j < ep; j++) {
        rows[j] = 0;
        for (uint64_t x = 0; x < El; x++) rows[j] += L->sent[j * El + x];
    }
    Status st = model_ep_fp8_pack(m, rows, tok, p->pay, e);
    a2a_counts(m, L, rb / 4);
    if (!st) st = a2a(m, id, p->pay, p->scount, (uint8_t *)p->scr + L->own0 * rb, p->rcount, DT_FP32, e);
    /* expert tensor parallelism: the ETP peers' payloads gathered as they arrived, codes and scales */
    if (!st && m->etp > 1) st = model_etp_gather(m, p->scr, L->rc, rb / 4, DT_FP32, e);
    if (!st) st = model_ep_fp8_unpack(m, L->rc, p->scr, p->host, q, qs, e);
    if (!st) st = model_ep_fp8_dequant(m, q, qs, L->rows, exp, e);
    return st;
}

/* The experts' side (rows, C) → the token side (R, C): the mirror of to_experts. */
static Status to_tokens(Model *m, const EpLayer *L, CollectiveId id, const void *exp, void *tok, Err *e)
{
    MoeEp *p = m->moe_ep;
    const uint64_t C = m->spec.hidden;
    void *scr = id == CO_EP_COMBINE_BWD ? p->scrb : p->scr;
    const void *own = row_at(m, scr, L->own0, C);
    a2a_counts(m, L, C);
    Status st = sort_rows(m, L, scr, (void *)exp, 0, C, e);
    /* expert tensor parallelism: the partial outputs (row-parallel FC2's, FC1's input gradient) summed over the
     * ETP group, each rank keeping its own sources' rows */
    if (!st && m->etp > 1) st = model_etp_scatter(m, id == CO_EP_COMBINE_FWD, scr, L->rc, C, e);
    if (!st && m->ep > 1) st = a2a(m, id, own, p->rcount, tok, p->scount, m->act_dtype, e);
    if (!st && m->ep == 1) st = rows_copy(m, own, tok, model_moe_rows(m), C, e);
    return st;
}

/* The layer's counts: what this rank routed (la->r_counts, E) into L->sent and m->ep_rows; the counts
 * exchanged over the EP group (ep 1: its own) into its block of L->rc, with expert tensor parallelism every
 * ETP peer's gathered beside it; the local experts' rows to the backend. */
static Status exchange_counts(Model *m, EpLayer *L, const LayerActs *la, Err *e)
{
    MoeEp *p = m->moe_ep;
    const uint64_t E = m->spec.experts, ep = m->ep, El = E / ep;
    Status st = m->bk->copy_to_host(m->bk, p->hc, la->r_counts, E * sizeof *p->hc, e);
    if (st) return st;
    for (uint64_t i = 0; i < E; i++) {
        L->sent[i] = (uint64_t)p->hc[i];
        m->ep_rows[i] += (uint64_t)p->hc[i];
        p->xsend[i] = p->hc[i];
    }
    m->ep_calls++;
    if (m->ep_fault) /* the test hook: one row more announced to the next peer than the dispatch sends */
        p->xsend[(m->ep_rank + 1) % ep * El]++;
    for (uint64_t j = 0; j < ep; j++) p->scount[j] = p->rcount[j] = El;
    /* int32 counts travel as 4-byte elements (MPI moves bytes); a host plan's ep_counts (ep 1: its own stay) */
    if (ep > 1)
        st = a2a(m, CO_EP_COUNTS, p->xsend, p->scount, p->xrecv, p->rcount, DT_FP32, e);
    else
        memcpy(p->xrecv, p->xsend, E * sizeof *p->xrecv);
    if (st) return st;
    uint64_t *own = L->rc + (uint64_t)m->etp_rank * ep * El; /* this rank's sources among its ETP group's */
    for (uint64_t i = 0; i < ep * El; i++) {
        if (p->xrecv[i] < 0)
            return err_set(e, ST_DATA, "expert parallelism: rank %d announced %d rows for an expert of rank %d",
                           (int)(i / El), p->xrecv[i], m->epc->rank);
        own[i] = (uint64_t)p->xrecv[i];
    }
    if (m->etp > 1) st = model_etp_counts(m, own, L->rc, ep * El, e); /* every ETP peer's sources */
    if (st) return st;
    int32_t *loc = p->hc; /* reused: (El) rows per local expert */
    L->rows = L->own0 = 0;
    for (uint64_t x = 0; x < El; x++) loc[x] = 0;
    for (uint64_t i = 0; i < (uint64_t)m->etp * ep * El; i++) {
        L->rows += L->rc[i];
        loc[i % El] += (int32_t)L->rc[i];
        if (i < (uint64_t)m->etp_rank * ep * El) L->own0 += L->rc[i];
    }
    if (L->rows > p->cap)
        return err_set(e, ST_DATA,
                       "expert parallelism: %llu rows announced to rank %d, more than the %llu its peers hold",
                       (unsigned long long)L->rows, m->epc->rank, (unsigned long long)p->cap);
    return m->bk->copy_to_device(m->bk, L->dcounts, loc, El * sizeof *loc, e);
}

static void rows_of(Model *m, const EpLayer *L, MoeRows *xr)
{
    xr->groups = m->spec.experts / m->ep;
    xr->rows = L->rows;
    xr->counts = L->dcounts;
    xr->x_in = L->x_in, xr->x_fc1 = L->x_fc1, xr->x_fc2in = L->x_fc2in;
}

/* After the forward dispatch, where disagreeing counts show (the communicator checks them within the EP group
 * before any payload moves): every rank of the stage (amaxc: its TP x DP ranks, the world without a pipeline)
 * learns whether some rank failed, the lowest such world rank (MIN over the ranks, one FP32 value, not a plan
 * collective), so a failure in one EP group stops every group of the stage at this point instead of leaving the
 * others waiting in their next collective. Other stages run other micro-batches then and take no part: with a
 * pipeline the failed stage's ranks stop the world (MPI_Abort, run_session.c; failed_together stays 0). */
static Status agree(Model *m, Status st, Err *e)
{
    Comm *g = m->amaxc;
    if (g->size == 1) return st;
    const float none = (float)m->comm->size; /* no world rank failed */
    float low = st ? (float)m->comm->rank : none;
    Err ae;
    Status as = g->all_reduce(g, COMM_UNPLANNED, m->bk, &low, 1, DT_FP32, COMM_MIN, &ae);
    if (as) {
        if (!st && e) *e = ae;
        return st ? st : as;
    }
    if (low < none) {
        m->failed_together = m->pp == 1;
        if (!st)
            st = err_set(e, ST_DATA,
                         "expert parallelism: rank %d's dispatch failed (its message says why); every rank "
                         "stops",
                         (int)low);
    }
    return st;
}

Status model_ep_dispatch(Model *m, uint32_t l, const LayerActs *la, const void *tok, MoeRows *xr, Err *e)
{
    EpLayer *L = ep_layer(m, l);
    MoeEp *p = m->moe_ep;
    L->y_tok = la->y_tok; /* the arena's: this slot's layer (a pipeline's micro-batch in flight) */
    if (model_etp_arena(m) && !recipe_fp8_gemm(&m->recipe))
        L->x_in = la->x_in, L->x_fc1 = la->x_fc1, L->x_fc2in = la->x_fc2in;
    else if (model_etp_arena(m)) { /* FP8: the gathered rows cast, then spent, in x_y (the outputs after them, as
                                      one rank's permuted rows); the activation's output before its cast in x_h;
                                      the layer's FC1 output and transposed FP8 inputs saved */
        L->x_in = m->act.x_y, L->x_fc1 = la->x_fc1, L->x_fc2in = m->act.x_h;
        L->q_xin = la->q_xin, L->q_xh = la->q_xh, L->q_xin_s = la->q_xin_s, L->q_xh_s = la->q_xh_s;
    }
    Status st = exchange_counts(m, L, la, e);
    if (!st && p->pay)
        st = to_experts_fp8(m, L, CO_EP_DISPATCH_FWD, tok, L->x_in, p->t_q, p->t_q_s, e);
    else if (!st)
        st = to_experts(m, L, CO_EP_DISPATCH_FWD, tok, L->x_in, e);
    st = agree(m, st, e);
    if (!st) rows_of(m, L, xr);
    return st;
}

Status model_ep_combine(Model *m, uint32_t l, const void *y, void *tok, Err *e)
{
    EpLayer *L = ep_layer(m, l);
    Status st = to_tokens(m, L, CO_EP_COMBINE_FWD, y, L->y_tok, e);
    if (!st) st = rows_copy(m, L->y_tok, tok, model_moe_rows(m), m->spec.hidden, e);
    return st;
}

Status model_ep_backward_rows(Model *m, uint32_t l, MoeRows *xr, MoeEpBwd *b)
{
    MoeEp *p = m->moe_ep;
    EpLayer *L = ep_layer(m, l);
    rows_of(m, L, xr);
    b->y_tok = L->y_tok;
    b->dy = p->ya, b->dh2 = p->dh2, b->dh1 = p->dh1, b->dx = p->yb;
    return ST_OK;
}

Status model_ep_dispatch_bwd(Model *m, uint32_t l, const void *dy_tok, void *dy, Err *e)
{
    MoeEp *p = m->moe_ep;
    EpLayer *L = ep_layer(m, l);
    if (p->pay) return to_experts_fp8(m, L, CO_EP_DISPATCH_BWD, dy_tok, dy, p->d_qrow, p->d_qrow_s, e);
    return to_experts(m, L, CO_EP_DISPATCH_BWD, dy_tok, dy, e);
}

Status model_ep_combine_bwd(Model *m, uint32_t l, const void *dx, void *dx_tok, Err *e)
{
    return to_tokens(m, ep_layer(m, l), CO_EP_COMBINE_BWD, dx, dx_tok, e);
}

void *model_ep_fwd_out(Model *m) { return m->moe_ep->ya; }

MoeF8 model_ep_f8(Model *m, uint32_t l, const MoeRows *xr, int bwd)
{
    MoeEp *p = m->moe_ep;
    EpLayer *L = ep_layer(m, l);
    return (MoeF8){.groups = xr->groups,
                   .rows = xr->rows,
                   .counts = xr->counts,
                   .x_in = L->x_in,
                   .x_fc1 = L->x_fc1,
                   .x_h = L->x_fc2in, /* the activation's output before its cast */
                   .y = bwd ? p->yb : p->ya,
                   .dy = p->ya,
                   .dh2 = p->dh2,
                   .dh1 = p->dh1,
                   .q_xin = L->q_xin,
                   .q_xh = L->q_xh,
                   .q_xin_s = L->q_xin_s,
                   .q_xh_s = L->q_xh_s,
                   .t_qrow = p->t_q,
                   .d_qrow = p->d_qrow,
                   .d_qcol = p->d_qcol,
                   .t_qrow_s = p->t_q_s,
                   .d_qrow_s = p->d_qrow_s,
                   .d_qcol_s = p->d_qcol_s,
                   .x_q = p->pay != NULL,
                   .dy_q = p->pay != NULL};
}

float *model_ep_amax_buf(Model *m) { return m->moe_ep ? m->moe_ep->amax : NULL; }
