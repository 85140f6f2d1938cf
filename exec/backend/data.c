/* exec/backend/data.c — synthetic and byte-level token streams (see data.h). */
#include "exec/backend/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/rng.h"
#include "util/fileio.h"

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

Status data_synthetic(DataStream *d, uint64_t vocab, uint64_t seed, Err *e)
{
    memset(d, 0, sizeof *d);
    if (vocab < 2) return err_set(e, ST_USAGE, "synthetic data needs a vocabulary of at least 2 tokens");
    d->kind = DATA_SYNTHETIC;
    d->vocab = vocab;
    d->k = vocab < DATA_SYNTH_SYMBOLS ? (uint32_t)vocab : DATA_SYNTH_SYMBOLS;
    d->sym = malloc(d->k * sizeof *d->sym);
    d->succ = malloc(d->k * sizeof *d->succ);
    if (!d->sym || !d->succ) {
        data_free(d);
        return err_set(e, ST_NOMEM, "out of memory");
    }
    snprintf(d->name, sizeof d->name, "synthetic (seed %llu)", (unsigned long long)seed);
    Rng r = {.s = seed ^ 0x5EED0DA7A5EEDull};
    /* distinct tokens for the symbols: a partial Fisher-Yates over [0, vocab) by rejection */
    for (uint32_t i = 0; i < d->k; i++) {
        int32_t t;
        int dup;
        do {
            t = (int32_t)rng_below(&r, vocab);
            dup = 0;
            for (uint32_t j = 0; j < i && !dup; j++) dup = d->sym[j] == t;
        } while (dup);
        d->sym[i] = t;
        d->succ[i] = (uint32_t)rng_below(&r, d->k);
    }
    d->st.kind = DATA_SYNTHETIC;
    d->st.source = fnv1a(&seed, sizeof seed) ^ vocab;
    d->st.prev = (uint32_t)rng_below(&r, d->k);
    d->st.rng = r.s;
    return ST_OK;
}

Status data_bytes_file(DataStream *d, const char *path, uint64_t vocab, uint32_t seq, Err *e)
{
    memset(d, 0, sizeof *d);
    if (vocab < 256)
        return err_set(e, ST_USAGE, "--data %s: byte-level text needs a vocabulary of at least 256 (got %llu)", path,
                       (unsigned long long)vocab);
    char *buf;
    size_t len;
    Status st = file_read_all(path, &buf, &len, e);
    if (st) return st;
    if (len <= seq) {
        free(buf);
        return err_set(e, ST_DATA, "--data %s: %zu bytes is too short for --seq %u (need at least %u)", path, len, seq,
                       seq + 1);
    }
    d->kind = DATA_BYTES;
    d->vocab = vocab;
    d->text = (uint8_t *)buf;
    d->len = len;
    d->st.kind = DATA_BYTES;
    d->st.source = fnv1a(buf, len);
    snprintf(d->name, sizeof d->name, "%s", path);
    return ST_OK;
}

void data_next(DataStream *d, uint32_t batch, uint32_t seq, int32_t *in, int32_t *tgt)
{
    if (d->kind == DATA_SYNTHETIC) {
        Rng r = {.s = d->st.rng};
        uint32_t cur = d->st.prev;
        for (uint64_t b = 0; b < batch; b++)
            for (uint64_t t = 0; t <= seq; t++) {
                /* each row continues the chain; row b's last token is row b+1's first */
                if (t > 0) {
                    if (rng_unit(&r) < DATA_SYNTH_FOLLOW)
                        cur = d->succ[cur];
                    else
                        cur = (uint32_t)rng_below(&r, d->k);
                }
                if (t < seq) in[b * seq + t] = d->sym[cur];
                if (t > 0) tgt[b * seq + t - 1] = d->sym[cur];
            }
        d->st.prev = cur;
        d->st.rng = r.s;
    } else {
        for (uint64_t b = 0; b < batch; b++) {
            if (d->st.pos + seq + 1 > d->len) d->st.pos = 0;
            for (uint64_t t = 0; t < seq; t++) {
                in[b * seq + t] = d->text[d->st.pos + t];
                tgt[b * seq + t] = d->text[d->st.pos + t + 1];
            }
            d->st.pos += seq;
        }
    }
    d->st.batches++;
}

Status data_restore(DataStream *d, const DataState *s, Err *e)
{
    if (s->kind != (uint32_t)d->kind)
        return err_set(e, ST_DATA, "the checkpoint was trained on %s data, this run uses %s data",
                       s->kind == DATA_BYTES ? "byte-level text" : "synthetic",
                       d->kind == DATA_BYTES ? "byte-level text" : "synthetic");
    if (s->source != d->st.source)
        return err_set(e, ST_DATA, "the checkpoint was trained on other data than %s (its content differs)", d->name);
    if (d->kind == DATA_SYNTHETIC && s->prev >= d->k)
        return err_set(e, ST_DATA, "the checkpoint's data position is invalid (symbol %u of %u)", s->prev, d->k);
    if (d->kind == DATA_BYTES && s->pos >= d->len)
        return err_set(e, ST_DATA, "the checkpoint's data position %llu is beyond %s (%llu bytes)",
                       (unsigned long long)s->pos, d->name, (unsigned long long)d->len);
    d->st = *s;
    return ST_OK;
}

double data_entropy_floor(const DataStream *d)
{
    if (d->kind != DATA_SYNTHETIC) return -1.0;
    double k = d->k, q = (1.0 - DATA_SYNTH_FOLLOW) / k, p = DATA_SYNTH_FOLLOW + q;
    return -(p * log(p)) - (k - 1.0) * q * log(q);
}

void data_free(DataStream *d)
{
    free(d->sym);
    free(d->succ);
    free(d->text);
    memset(d, 0, sizeof *d);
}
