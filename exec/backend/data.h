/* exec/backend/data.h — token streams for the executor: deterministic synthetic text
 * with learnable structure, or the bytes of a text file.
 *
 * Synthetic: K = min(V, 256) symbols, each mapped to a fixed random token of
 * the vocabulary, follow a first-order Markov chain: with probability 0.9 the
 * next symbol is the current one's fixed successor, otherwise any of the K
 * symbols uniformly. Its entropy (data_entropy_floor) is the loss a perfect
 * model reaches: 0.90 nats for K = 256 (vs ln V = 10.8 for GPT-2's vocabulary),
 * so a learning model's loss must fall far below ln V.
 * Bytes: each byte is a token (vocabulary 256); rows are consecutive windows
 * of T + 1 bytes that wrap around the file.
 * Both are deterministic from their seed / file and a position, which a
 * checkpoint stores (DataState) so a resumed run sees the same batches. */
#ifndef FP8PLAN_EXEC_DATA_H
#define FP8PLAN_EXEC_DATA_H

#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DATA_SYNTHETIC = 1, DATA_BYTES = 2 } DataKind;

/* Where a stream is: enough to continue it exactly. */
typedef struct {
    uint32_t kind;    /* DataKind */
    uint32_t prev;    /* synthetic: current symbol */
    uint64_t rng;     /* synthetic: generator state */
    uint64_t pos;     /* bytes: next window start */
    uint64_t batches; /* batches drawn so far */
    uint64_t source;  /* which stream: FNV-1a of the file's bytes, or of the synthetic seed */
} DataState;

typedef struct {
    DataKind kind;
    uint64_t vocab;
    DataState st;
    /* synthetic */
    uint32_t k;
    int32_t *sym;   /* (k) symbol → token */
    uint32_t *succ; /* (k) symbol → its likely successor */
    /* bytes */
    uint8_t *text;
    uint64_t len;
    char name[256];
} DataStream;

enum { DATA_SYNTH_SYMBOLS = 256 };
#define DATA_SYNTH_FOLLOW 0.9

/* Synthetic stream over a vocabulary of `vocab` tokens (≥ 2) from `seed`. */
Status data_synthetic(DataStream *d, uint64_t vocab, uint64_t seed, Err *e);
/* The bytes of `path` as tokens; the file must hold more than seq bytes and
 * vocab must be at least 256. Errors name the file. */
Status data_bytes_file(DataStream *d, const char *path, uint64_t vocab, uint32_t seq, Err *e);
/* Next batch: in and tgt (batch·seq) with tgt[i] the token after in[i]. */
void data_next(DataStream *d, uint32_t batch, uint32_t seq, int32_t *in, int32_t *tgt);
/* Continue from a saved position; ST_DATA when it belongs to another kind of stream. */
Status data_restore(DataStream *d, const DataState *s, Err *e);
/* Entropy of the source in nats per token (synthetic), or −1 when unknown (bytes). */
double data_entropy_floor(const DataStream *d);
void data_free(DataStream *d);

#ifdef __cplusplus
}
#endif
#endif
