/* exec/cpu/cpu_shard.c — the CPU reference of the vocabulary-parallel
 * operations tensor parallelism needs (exec/model/model_tp.c): a vocabulary
 * shard's embedding lookup and its gradient, and the softmax cross-entropy of
 * logits split over the vocabulary (Megatron-LM's vocab-parallel
 * cross-entropy). The arithmetic is cpu_nn.c's for the one-rank operations
 * (FP32, expf/logf, one rounding per stored value); only the sum over the
 * vocabulary is split, by shard. Rows on the thread pool in fixed pieces, the
 * embedding gradient by column chunks with the tokens in order (deterministic). */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"

enum { SHARD_ROWS = 16, SHARD_COLS = 64 };

static Status check_tokens(const int32_t *tokens, uint64_t n, const char *op, Err *e)
{
    for (uint64_t i = 0; i < n; i++)
        if (tokens[i] < 0)
            return err_set(e, ST_USAGE, "%s: token %lld at position %llu is negative", op, (long long)tokens[i],
                           (unsigned long long)i);
    return ST_OK;
}

typedef struct {
    const int32_t *tokens;
    uint64_t first, rows, c, n;
    const void *wte, *dout;
    Dtype wdt, act;
    void *out;
    float *dwte;
    float *buf;
    uint64_t stride;
} ShardEmb;

/* the shard's row of token t, or −1 */
static int64_t shard_row(const ShardEmb *j, int32_t t)
{
    uint64_t u = (uint64_t)t;
    return u >= j->first && u - j->first < j->rows ? (int64_t)(u - j->first) : -1;
}

static void emb_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const ShardEmb *j = ctx;
    float *x = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t r = r0; r < r1; r++) {
        int64_t k = shard_row(j, j->tokens[r]);
        if (k < 0)
            memset(x, 0, j->c * sizeof *x);
        else
            elem_load_run(j->wte, j->wdt, (uint64_t)k * j->c, x, j->c);
        elem_store_run(j->out, j->act, r * j->c, x, j->c);
    }
}

Status cpu_embed_shard_fwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                           uint64_t channels, const void *wte, Dtype weight_dtype, void *out, Dtype act_dtype, Err *e)
{
    Status st = check_tokens(tokens, n, "embed_shard_fwd", e);
    if (st) return st;
    ShardEmb j = {.tokens = tokens,
                  .first = first,
                  .rows = rows,
                  .c = channels,
                  .wte = wte,
                  .wdt = weight_dtype,
                  .act = act_dtype,
                  .out = out};
    j.buf = cpu_scratch_workers(bk, 0, channels, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(n, SHARD_ROWS, emb_rows, &j);
    return ST_OK;
}

static void emb_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const ShardEmb *j = ctx;
    uint64_t w = c1 - c0;
    float *g = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t r = 0; r < j->n; r++) {
        int64_t k = shard_row(j, j->tokens[r]);
        if (k < 0) continue;
        float *te = j->dwte + (uint64_t)k * j->c + c0;
        elem_load_run(j->dout, j->act, r * j->c + c0, g, w);
        for (uint64_t i = 0; i < w; i++) te[i] += g[i];
    }
}

Status cpu_embed_shard_bwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                           uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, Err *e)
{
    Status st = check_tokens(tokens, n, "embed_shard_bwd", e);
    if (st) return st;
    ShardEmb j = {.tokens = tokens,
                  .first = first,
                  .rows = rows,
                  .c = channels,
                  .n = n,
                  .dout = dout,
                  .act = act_dtype,
                  .dwte = dwte};
    j.buf = cpu_scratch_workers(bk, 0, SHARD_COLS, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(channels, SHARD_COLS, emb_cols, &j);
    return ST_OK;
}

/* ---- vocabulary-parallel cross-entropy ---- */

typedef struct {
    float *logits, *stats, *losses;
    const int32_t *targets;
    uint64_t rows, cols, first, live; /* live: the shard's columns below the vocabulary */
    int phase;
    float dloss;
} ShardXent;

static void xent_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    (void)worker;
    const ShardXent *j = ctx;
    float *mx = j->stats, *sum = j->stats + j->rows, *xt = j->stats + 2 * j->rows;
    for (uint64_t r = r0; r < r1; r++) {
        float *z = j->logits + r * j->cols;
        uint64_t t = (uint64_t)j->targets[r];
        int mine = t >= j->first && t - j->first < j->live;
        if (j->phase == 0) {
            float m = -INFINITY;
            for (uint64_t i = 0; i < j->live; i++) m = z[i] > m ? z[i] : m;
            mx[r] = m;
        } else if (j->phase == 1) {
            float s = 0.0f;
            for (uint64_t i = 0; i < j->live; i++) s += expf(z[i] - mx[r]);
            sum[r] = s;
            xt[r] = mine ? z[t - j->first] : 0.0f;
        } else {
            j->losses[r] = logf(sum[r]) + mx[r] - xt[r];
            float pt = 0.0f;
            for (uint64_t i = 0; i < j->live; i++) z[i] = expf(z[i] - mx[r]);
            if (mine) pt = z[t - j->first] / sum[r];
            for (uint64_t i = 0; i < j->live; i++) z[i] = z[i] / sum[r] * j->dloss; /* (p − 0)·dloss */
            if (mine) z[t - j->first] = (pt - 1.0f) * j->dloss;
            for (uint64_t i = j->live; i < j->cols; i++) z[i] = 0.0f; /* padding */
        }
    }
}

Status cpu_xent_shard(Backend *bk, float *logits, uint64_t rows, uint64_t cols, uint64_t first, uint64_t vocab,
                      const int32_t *targets, float *stats, int phase, float dloss, float *losses, Err *e)
{
    (void)bk;
    for (uint64_t r = 0; r < rows; r++)
        if (targets[r] < 0 || (uint64_t)targets[r] >= vocab)
            return err_set(e, ST_USAGE, "xent_shard: target %lld at position %llu is outside the vocabulary [0, %llu)",
                           (long long)targets[r], (unsigned long long)r, (unsigned long long)vocab);
    ShardXent j = {.logits = logits,
                   .stats = stats,
                   .losses = losses,
                   .targets = targets,
                   .rows = rows,
                   .cols = cols,
                   .first = first,
                   .live = first >= vocab ? 0 : (vocab - first < cols ? vocab - first : cols),
                   .phase = phase,
                   .dloss = dloss};
    par_chunks(rows, SHARD_ROWS, xent_rows, &j);
    return ST_OK;
}
