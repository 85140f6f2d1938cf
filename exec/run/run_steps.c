/* exec/run/run_steps.c — a run's training loop and its CSV side files (the
 * scaling trace, the loss log, the routing log), and the signals that stop
 * a one-rank run after the step in flight (see run.h). */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/run/run.h"

/* One CSV row per FP8 tensor of the step just taken (its last micro-batch). */
static void trace_rows(FILE *f, const Model *m)
{
    for (uint32_t l = 0; l < m->spec.layers; l++)
        for (int k = 0; k < LIN_KINDS; k++) {
            if (!model_has_linear(m, l, (LinearKind)k)) continue; /* not this block's attention, or no FFN */
            const struct {
                const char *bank, *operand;
                const ScalingBank *b;
                const BankTrace *t;
                uint32_t slot;
            } r[3] = {{"fwd", "x", &m->sc.fwd, &m->tr_fwd, model_slot_x(m, l, (LinearKind)k)},
                      {"fwd", "w", &m->sc.fwd, &m->tr_fwd, model_slot_w(m, l, (LinearKind)k)},
                      {"bwd", "dy", &m->sc.bwd, &m->tr_bwd, model_slot_dy(m, l, (LinearKind)k)}};
            for (int i = 0; i < 3; i++)
                fprintf(f, "%u,%s,%u,%s,%s,%s,%.17g,%.17g,%.17g\n", m->step, r[i].bank, l, linear_name((LinearKind)k),
                        r[i].operand, dtype_name(r[i].b->fmt), (double)r[i].t->amax[r[i].slot],
                        (double)r[i].t->scale_used[r[i].slot], (double)r[i].t->scale_next[r[i].slot]);
        }
    /* a MoE block's routed experts, one tensor each: linear experts.fc1.G / experts.fc2.G (G global; with
     * expert parallelism this rank's E/ep) */
    const uint32_t El = m->spec.experts / m->ep, g0 = m->ep_rank * El;
    for (uint32_t l = 0; l < m->spec.layers; l++)
        for (int f2 = 0; m->spec.experts && l + m->layer0 >= m->spec.dense_layers && f2 < 2; f2++)
            for (uint32_t g = 0; g < El; g++)
                for (int op = 0; op < 3; op++) {
                    const ScalingBank *b = op < 2 ? &m->sc.fwd : &m->sc.bwd;
                    const BankTrace *t = op < 2 ? &m->tr_fwd : &m->tr_bwd;
                    uint32_t slot = model_slot_expert(m, l, f2, op) + g;
                    fprintf(f, "%u,%s,%u,experts.fc%d.%u,%s,%s,%.17g,%.17g,%.17g\n", m->step, op < 2 ? "fwd" : "bwd", l,
                            f2 + 1, g0 + g,
                            op == 0   ? "x"
                            : op == 1 ? "w"
                                      : "dy",
                            dtype_name(b->fmt), (double)t->amax[slot], (double)t->scale_used[slot],
                            (double)t->scale_next[slot]);
                }
}

/* SIGINT or SIGTERM asks a one-rank run to stop: the step in flight finishes
 * and the report covers the steps taken; a second one ends the process at
 * once. Several ranks keep the default action (stopping would need the ranks
 * to agree on the last step: a collective the plan does not count). */
enum { MTP_LINE = 16 * MODEL_MTP_MAX };

/* Each MTP depth's last step loss, "%7.4f" apiece, space-separated, into buf (MTP_LINE bytes). */
static const char *mtp_losses(const Model *m, char *buf)
{
    size_t at = 0;
    for (uint32_t d = 0; d < m->mtp_model && at < MTP_LINE; d++)
        at += (size_t)snprintf(buf + at, MTP_LINE - at, d ? " %7.4f" : "%7.4f", m->mtp_loss[d]);
    return buf;
}

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
    if (stop_sig) outfile_die_of_signal(sig);
    stop_sig = sig;
}

void run_stop_on_signals(int ranks)
{
    if (ranks != 1) return;
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction sa;
        if (sigaction(sigs[i], NULL, &sa) || sa.sa_handler == SIG_IGN) continue; /* nohup, a background job */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Before a line about the steps: the caller's progress line goes. */
static void step_begin(void)
{
    if (run_hooks()->step_begin) run_hooks()->step_begin(run_hooks()->ctx);
}

/* FP8PLAN_FAULT_STEP=N (a test hook): step N fails as a backend error would. */
static uint32_t fault_step(void)
{
    const char *v = getenv("FP8PLAN_FAULT_STEP");
    return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

/* FP8PLAN_FAULT_EP_COUNTS=R (a test hook): with expert parallelism, rank R announces to its next EP peer one
 * row more than it dispatches, so the peers' counts disagree (exec/model/model_moe_ep.c). */
static int fault_ep_counts(const Model *m)
{
    const char *v = getenv("FP8PLAN_FAULT_EP_COUNTS");
    return v && *v && m->comm && strtol(v, NULL, 10) == m->comm->rank;
}

/* FP8PLAN_FAULT_ETP=R[:inf] (a test hook): with expert tensor parallelism, rank R puts a NaN (or +Inf) into
 * every forward ETP reduce-scatter it takes part in (exec/model/model_moe_etp.c). */
static int fault_etp(const Model *m)
{
    const char *v = getenv("FP8PLAN_FAULT_ETP");
    if (!v || !*v || !m->comm || strtol(v, NULL, 10) != m->comm->rank) return 0;
    return strstr(v, ":inf") ? 2 : 1;
}

int run_train(const RunSpec *a, Model *m, DataStream *d, Measurement *ms, RunFiles *sf)
{
    m->ep_fault = fault_ep_counts(m);
    m->etp_fault = fault_etp(m);
    /* every rank draws the whole global batch (dp x n tokens: the stream stays
     * the same on every rank, and in a checkpoint) and trains on its share */
    const uint64_t bt = (uint64_t)m->batch * m->seq, n = model_step_tokens(m), all = n * m->dp;
    const uint64_t mine = n * (uint64_t)m->dp_rank; /* TP/PP ranks share their DP rank's */
    int32_t *in = malloc(all * sizeof *in), *tgt = malloc(all * sizeof *tgt);
    Err e;
    int rc = 0;
    double t0 = run_now_s();
    const uint32_t fault = fault_step();
    if (!in || !tgt) rc = run_fail((err_set(&e, ST_NOMEM, "out of memory"), &e));
    for (uint32_t i = 0; !rc && i < a->steps; i++) {
        float loss;
        if (stop_sig) {
            step_begin();
            run_note("%s: stopped after %u of the %u steps asked for", stop_sig == SIGINT ? "SIGINT" : "SIGTERM", i,
                     a->steps);
            rc = 128 + stop_sig;
            break;
        }
        for (uint64_t k = 0; k < (uint64_t)m->microbatches * m->dp; k++)
            data_next(d, m->batch, m->seq, in + k * bt, tgt + k * bt);
        if (fault && m->step + 1 == fault) {
            err_set(&e, ST_SOFTWARE, "step %u: fault injected (FP8PLAN_FAULT_STEP=%u)", fault, fault);
            step_begin();
            rc = run_fail(&e);
            break;
        }
        if (measure_step(ms, m, in + mine, tgt + mine, &loss, &e)) {
            err_prefix(&e, "step %u", m->step + 1);
            rc = run_fail(&e);
            break;
        }
        if (sf->trace_open) trace_rows(sf->trace.f, m);
        if (sf->loss_open) { /* each MTP depth's loss after the main one */
            fprintf(sf->loss.f, "%u,%.9g", m->step, (double)loss);
            for (uint32_t k = 0; k < m->mtp_model; k++) fprintf(sf->loss.f, ",%.9g", m->mtp_loss[k]);
            fputc('\n', sf->loss.f);
        }
        if (!isfinite(loss)) {
            rc = run_fail(
                (err_set(&e, ST_DATA, "step %u: the loss is %g (training diverged)", m->step, (double)loss), &e));
            break;
        }
        step_begin(); /* the progress line goes, the log line comes, the progress line returns */
        if (!a->quiet && (i % a->log_every == 0 || i + 1 == a->steps) && m->mtp_model) /* each depth's loss beside */
            run_say("step %6u  loss %8.4f  mtp %s  %9.0f tok/s  fwd %8.2f ms  bwd %8.2f ms  opt %7.2f ms\n", m->step,
                    (double)loss, mtp_losses(m, (char[MTP_LINE]){0}), (double)n / ms->step_s[i],
                    1e3 * m->phase_s[PHASE_FWD], 1e3 * m->phase_s[PHASE_BWD], 1e3 * m->phase_s[PHASE_OPT]);
        else if (!a->quiet && (i % a->log_every == 0 || i + 1 == a->steps))
            run_say("step %6u  loss %8.4f  %9.0f tok/s  fwd %8.2f ms  bwd %8.2f ms  opt %7.2f ms\n", m->step,
                    (double)loss, (double)n / ms->step_s[i], 1e3 * m->phase_s[PHASE_FWD], 1e3 * m->phase_s[PHASE_BWD],
                    1e3 * m->phase_s[PHASE_OPT]);
        if (run_hooks()->step_end) run_hooks()->step_end(run_hooks()->ctx, i + 1, a->steps, run_now_s() - t0);
    }
    step_begin();
    free(in);
    free(tgt);
    return rc;
}

/* Open the side files the flags ask for (a trace needs an FP8 recipe). */
int run_files_open(const RunSpec *a, Model *m, RunFiles *sf)
{
    Err e;
    if (a->trace) {
        if (!recipe_fp8_gemm(&m->recipe))
            return run_usage("--scaling-trace: recipe %s has no FP8 tensors", m->recipe.name);
        if (exec_block_scaled(&m->recipe))
            return run_usage("--scaling-trace: recipe %s scales per block; the trace lists per-tensor scales",
                             m->recipe.name);
        if (model_trace_enable(m, &e) || outfile_open(&sf->trace, a->trace, &e)) return run_fail(&e);
        sf->trace_open = 1;
        fprintf(sf->trace.f, "step,bank,layer,linear,operand,format,amax,scale_used,scale_next\n");
    }
    if (a->loss_log) {
        if (outfile_open(&sf->loss, a->loss_log, &e)) return run_fail(&e);
        sf->loss_open = 1;
        fputs("step,loss", sf->loss.f); /* each MTP depth's loss (its DP mean too): mtp_loss, or mtp_loss_1 ... */
        for (uint32_t d = 0; d < m->mtp_model; d++)
            m->mtp_model == 1 ? fputs(",mtp_loss", sf->loss.f) : fprintf(sf->loss.f, ",mtp_loss_%u", d + 1);
        fputc('\n', sf->loss.f);
    }
    if (a->want_routing) { /* every rank records its routing */
        if (!m->moe_layers_all) return run_usage("--routing-log: model %s has no MoE layers", m->spec.name);
        uint64_t n = (uint64_t)m->moe_layers_all * m->spec.experts; /* every stage's layers: one length a rank */
        if (!(m->route_log = calloc((size_t)a->steps * n, sizeof *m->route_log)))
            return run_fail((err_set(&e, ST_NOMEM, "out of memory for the routing log"), &e));
        m->route_cap = a->steps;
    }
    if (a->routing_log) {
        if (outfile_open(&sf->routing, a->routing_log, &e)) return run_fail(&e);
        sf->routing_open = 1;
        fprintf(sf->routing.f, "step,layer,rank,expert,token_copies\n");
    }
    return 0;
}

/* Rank 0 writes every rank's log: per step, MoE layer (the model's index: dense_layers + its index among the
 * MoE layers) and rank of the stage holding it (tp_rank + tp x dp_rank, as `plan --routing` counts ranks), the copies per
 * expert. Every rank's log is moe_layers_all x E a step (its stage's rows at moe_first); a header says which. */
int run_routing_write(const RunSpec *a, Model *m, RunFiles *sf)
{
    if (!a->want_routing) return 0;
    Err e;
    const uint64_t E = m->spec.experts, n = (uint64_t)m->moe_layers_all * E, S = m->route_steps;
    const int R = m->comm->size;
    /* the rank's place in its stage, tp_rank + tp x dp_rank (its DP rank at tp 1): with TP each rank routes its
     * own sequence shard */
    const uint64_t mine[3] = {m->moe_first, m->moe_layers, (uint64_t)m->tp_rank + (uint64_t)m->tp * m->dp_rank};
    uint64_t *all = sf->routing_open ? calloc((size_t)R * S * n + 1, sizeof *all) : NULL;
    uint64_t *hdr = sf->routing_open ? calloc((size_t)R * 3, sizeof *hdr) : NULL;
    Status st = sf->routing_open && (!all || !hdr) ? err_set(&e, ST_NOMEM, "out of memory for the routing log") : ST_OK;
    if (!st) st = comm_gather_bytes(m->comm, m->route_log, S * n * sizeof *all, all, &e);
    if (!st) st = comm_gather_bytes(m->comm, mine, sizeof mine, hdr, &e);
    for (uint64_t t = 0; !st && sf->routing_open && t < S; t++)
        for (uint64_t g = 0; g < m->moe_layers_all; g++)
            for (int r = 0; r < R; r++) {
                const uint64_t *h = hdr + 3 * (uint64_t)r;
                if (g < h[0] || g >= h[0] + h[1]) continue; /* not a layer of r's stage */
                for (uint64_t x = 0; x < E; x++)
                    fprintf(sf->routing.f, "%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)(m->step - S + t + 1),
                            (unsigned long long)(m->spec.dense_layers + g), (unsigned long long)h[2],
                            (unsigned long long)x, (unsigned long long)all[((uint64_t)r * S + t) * n + g * E + x]);
            }
    free(all);
    free(hdr);
    return st ? run_fail(&e) : 0;
}

int run_files_commit(RunFiles *sf)
{
    Err e;
    OutFile *f[3] = {&sf->trace, &sf->loss, &sf->routing};
    int *open[3] = {&sf->trace_open, &sf->loss_open, &sf->routing_open};
    for (int i = 0; i < 3; i++) {
        if (!*open[i]) continue;
        *open[i] = 0;
        if (outfile_commit(f[i], &e)) return run_fail(&e);
    }
    return 0;
}

void run_files_abort(RunFiles *sf)
{
    if (sf->trace_open) outfile_abort(&sf->trace);
    if (sf->loss_open) outfile_abort(&sf->loss);
    if (sf->routing_open) outfile_abort(&sf->routing);
    sf->trace_open = sf->loss_open = sf->routing_open = 0;
}
