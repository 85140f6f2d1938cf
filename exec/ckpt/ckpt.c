/* exec/ckpt/ckpt.c — checkpoint save and load (format in ckpt.h). */
#include "exec/ckpt/ckpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/ckpt/ckpt_layout.h"
#include "exec/ckpt/ckpt_stream.h"
#include "exec/comm/comm_mpi.h"
#include "util/fileio.h"

enum { NAME_BYTES = 32, CHUNK = 1 << 20 };

/* ---- the header: recipe, shape, hyper, step, data position ---- */

/* Every field that must match, as (name, value) pairs, in file order. */
typedef struct {
    const char *name;
    uint64_t v;
} Field;

enum { NRECIPE_FIELDS = 22, NFIELDS = NRECIPE_FIELDS + 34 };

static void fields(const Model *m, Field f[NFIELDS])
{
    const Recipe *r = &m->recipe;
    const ModelSpec *s = &m->spec;
    const StateSet *gs = &r->gemm, *os = &r->other;
    const uint64_t ep = m->ep ? m->ep : 1;
    Field v[NFIELDS] = {
        {"linear weight dtype", gs->dt[STATE_WEIGHT]},
        {"linear master dtype", gs->dt[STATE_MASTER]},
        {"linear gradient dtype", gs->dt[STATE_GRAD]},
        {"linear Adam m dtype", gs->dt[STATE_M]},
        {"linear Adam v dtype", gs->dt[STATE_V]},
        {"linear scaled states", gs->scaled_mask},
        {"other weight dtype", os->dt[STATE_WEIGHT]},
        {"other master dtype", os->dt[STATE_MASTER]},
        {"other gradient dtype", os->dt[STATE_GRAD]},
        {"other Adam m dtype", os->dt[STATE_M]},
        {"other Adam v dtype", os->dt[STATE_V]},
        {"other scaled states", os->scaled_mask},
        {"activation dtype", m->act_dtype},
        {"FP8 row-wise copies", r->fp8_row},
        {"FP8 transposed copies", r->fp8_col},
        {"forward GEMM dtype", r->gemm_fwd},
        {"backward GEMM dtype", r->gemm_bwd},
        {"saved-input dtype", r->saved_input},
        {"scaling", r->scaling},
        {"activation scale granularity", r->act_gran},
        {"weight scale granularity", r->weight_gran},
        {"amax history", exec_history_len(r)},
        {"layers", s->layers},
        {"hidden", s->hidden},
        {"heads", s->heads},
        {"KV heads", s->kv_heads},
        {"head_dim", s->head_dim},
        {"ffn", s->ffn_hidden},
        {"norm", s->norm},
        {"mlp", s->mlp},
        {"positions", s->pos},
        {"seq", m->seq},
        {"micro-batch", m->batch},
        {"micro-batches per step", m->microbatches},
        {"vocab", s->vocab},
        {"padded vocab", m->vocab_padded},
        {"tied embeddings", (uint64_t)s->tied_embeddings},
        {"linear biases", (uint64_t)s->linear_bias},
        {"rope base", (uint64_t)MODEL_ROPE_BASE},
        /* version 5: mixture of experts, latent attention, q/k norms, multi-token prediction, and which experts
         * the rank holds (expert parallelism: a layout checkpoint's part per EP rank, ckpt_layout.h) */
        {"experts", s->experts},
        {"experts per token", s->experts_per_token},
        {"shared experts", s->shared_experts},
        {"expert ffn", s->expert_ffn},
        {"dense layers", s->dense_layers},
        {"router", (uint64_t)s->router},
        {"router groups", s->router_groups},
        {"router group top-k", s->router_group_topk},
        {"q latent", s->q_lora_rank},
        {"kv latent", s->kv_lora_rank},
        {"qk_nope_head_dim", s->qk_nope_head_dim},
        {"qk_rope_head_dim", s->qk_rope_head_dim},
        {"v_head_dim", s->v_head_dim},
        {"q/k norms", (uint64_t)s->qk_norm},
        {"MTP depths", m->mtp},
        {"expert-parallel ranks (--ep)", ep},
        {"first expert held", (uint64_t)m->ep_rank * (s->experts / ep)},
    };
    memcpy(f, v, sizeof v);
}

static void put_name(Stream *s, const char *name, size_t cap)
{
    char buf[64] = {0}; /* cap ≤ 64: NUL-padded, truncated to cap − 1 characters */
    snprintf(buf, cap, "%s", name ? name : "");
    stream_put(s, buf, cap);
}

static void put_hyper(Stream *s, const ModelHyper *h)
{
    stream_put_f32(s, h->lr);
    stream_put_f32(s, h->beta1);
    stream_put_f32(s, h->beta2);
    stream_put_f32(s, h->eps);
    stream_put_f32(s, h->weight_decay);
    stream_put_u32(s, h->warmup);
    stream_put_f32(s, h->init_std);
    stream_put_u64(s, h->seed);
}

/* version 5: the MTP loss's weight in the objective (--mtp-weight), after the hyper-parameters */
static void put_mtp_weight(Stream *s, const Model *m) { stream_put_f32(s, m->mtp_weight); }

static int persistent_spec(const ArenaSpec *p) { return arena_term_persistent(p->term); }

/* A sharded state (ZeRO-1 / the distributed optimizer): the shards of its group (the DP group; the routed
 * experts' EDP group) gathered on each of the group's ranks that writes a part (ckpt_layout_root: the world's
 * rank 0 with data parallelism alone; with --ep every EP rank's place, so a dense state goes to each of them),
 * which writes the class's whole state, E elements (the padding of the last shard is not written). */
static Status put_shard(Stream *s, Model *m, const ArenaSpec *p, uint64_t whole, Err *e)
{
    const int writer = s->f != NULL;
    Comm *c = model_shard_group(m, p);
    int got = 0;
    uint8_t *mine = malloc(p->bytes + 1), *all = NULL;
    Status st = !c      ? err_set(e, ST_SOFTWARE, "checkpoint: %s is no sharded state", p->name)
                : !mine ? err_set(e, ST_NOMEM, "out of memory for the shards of %s", p->name)
                        : ST_OK;
    if (!st) st = m->bk->copy_to_host(m->bk, mine, (char *)m->arena.base + p->offset, p->bytes, e);
    for (int j = 0; !st && j < c->size; j++) {
        if (!ckpt_layout_root(m, c, j)) continue;
        if (j == c->rank && (all = malloc(p->bytes * (uint64_t)c->size + 1)) == NULL)
            st = err_set(e, ST_NOMEM, "out of memory for the shards of %s", p->name);
        if (!st) st = comm_gather_bytes_at(c, mine, (size_t)p->bytes, all, j, e);
        if (!st && j == c->rank && writer) stream_put(s, all, (size_t)whole), got = 1;
        free(all);
        all = NULL;
    }
    if (!st && writer && !got) /* a part writer no gather reached: the two rules disagree */
        st = err_set(e, ST_SOFTWARE, "checkpoint: rank %d of the group of %s writes a part but gathers no shards",
                     c->rank, p->name);
    free(mine);
    return st;
}

/* The persistent tensors; a rank that does not write (s->f NULL) only hands over its shards. */
static Status put_tensors(Stream *s, Model *m, Err *e)
{
    const int writer = s->f != NULL;
    Status st = ST_OK;
    void *buf = writer ? malloc(CHUNK) : NULL;
    if (writer && !buf) return err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t i = 0; !st && i < m->specs.n; i++) {
        const ArenaSpec *p = &m->specs.v[i];
        uint64_t whole = p->bytes, lo = 0;
        if (!persistent_spec(p)) continue;
        const int shard = model_shard_spec(m, p, &whole, &lo);
        if (writer) {
            stream_put_u32(s, p->term);
            stream_put_u32(s, p->dtype);
            stream_put_u32(s, (uint32_t)p->layer);
            stream_put_u64(s, whole);
            put_name(s, p->name, NAME_BYTES);
        }
        if (shard) {
            st = put_shard(s, m, p, whole, e);
            continue;
        }
        for (uint64_t off = 0; writer && !st && off < p->bytes; off += CHUNK) {
            uint64_t k = p->bytes - off < CHUNK ? p->bytes - off : CHUNK;
            st = m->bk->copy_to_host(m->bk, buf, (char *)m->arena.base + p->offset + off, k, e);
            if (!st) stream_put(s, buf, (size_t)k);
        }
    }
    free(buf);
    return st;
}

/* The one-model image (format in ckpt.h) to f; *ioerr set when a write failed. */
static Status write_image(FILE *f, Model *m, const DataState *data, int *ioerr, Err *e)
{
    Stream s = {.f = f, .fnv = STREAM_FNV_BASIS};
    Field fl[NFIELDS];
    fields(m, fl);
    stream_put(&s, CKPT_MAGIC, 8);
    stream_put_u32(&s, CKPT_VERSION);
    put_name(&s, m->recipe.name, sizeof m->recipe.name);
    for (int i = 0; i < NFIELDS; i++) stream_put_u64(&s, fl[i].v);
    put_hyper(&s, &m->hyper);
    put_mtp_weight(&s, m);
    stream_put_u32(&s, m->step);
    stream_put_u32(&s, data->kind);
    stream_put_u32(&s, data->prev);
    stream_put_u64(&s, data->rng);
    stream_put_u64(&s, data->pos);
    stream_put_u64(&s, data->batches);
    stream_put_u64(&s, data->source);
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->specs.n; i++) n += (uint32_t)persistent_spec(&m->specs.v[i]);
    stream_put_u32(&s, n);
    Status st = put_tensors(&s, m, e);
    if (!st) {
        uint64_t sum = s.fnv;
        stream_put_u64(&s, sum);
    }
    *ioerr = s.err;
    return st;
}

Status ckpt_image(Model *m, const DataState *data, char **img, size_t *len, Err *e)
{
    *img = NULL, *len = 0;
    FILE *f = open_memstream(img, len);
    if (!f) return err_set(e, ST_NOMEM, "out of memory for the checkpoint image");
    int ioerr = 0;
    Status st = write_image(f, m, data, &ioerr, e);
    if (fclose(f) && !st) st = err_set(e, ST_NOMEM, "out of memory for the checkpoint image");
    if (!st && ioerr) st = err_set(e, ST_NOMEM, "out of memory for the checkpoint image");
    if (st) free(*img), *img = NULL, *len = 0;
    return st;
}

Status ckpt_check(const Model *m, Err *e)
{
    const Recipe *r = &m->recipe;
    if (m->dp > 1 && r->scaling == SCALING_DELAYED && r->amax_reduce != AMAX_ALL)
        return err_set(e, ST_USAGE,
                       "--save/--resume: recipe %s reduces its delayed-scaling amaxes over '%s' only, so each of the "
                       "%u data-parallel ranks keeps its own amax history, scales and FP8 copies; a checkpoint holds "
                       "one copy per data-parallel group (not implemented: run it with amax_reduce all, or one "
                       "data-parallel rank)",
                       r->name, amax_reduce_name(r->amax_reduce), m->dp);
    return ST_OK;
}

Status ckpt_hand_shards(Model *m, Err *e)
{
    Stream none = {0};
    return put_tensors(&none, m, e);
}

Status ckpt_save(const char *path, Model *m, const DataState *data, Err *e)
{
    Status st = ckpt_check(m, e);
    if (st) return st;
    if (ckpt_layout(m)) return ckpt_layout_save(path, m, data, e);
    if (!path) return ckpt_hand_shards(m, e); /* a rank other than 0 of a sharded run */
    OutFile of;
    st = outfile_open_flags(&of, path, OUT_DURABLE, e); /* fsync: a checkpoint must survive a crash */
    if (st) return st;
    int ioerr = 0;
    st = write_image(of.f, m, data, &ioerr, e);
    if (!st && ioerr) st = err_set(e, ST_IO, "%s: write failed: %s", path, strerror(errno));
    if (st) {
        outfile_abort(&of);
        return st;
    }
    return outfile_commit(&of, e);
}

static int name_eq(const char stored[NAME_BYTES], const char *name)
{
    char want[NAME_BYTES] = {0};
    snprintf(want, sizeof want, "%s", name ? name : "");
    return !memcmp(stored, want, NAME_BYTES);
}

/* Read the header and verify it against m. */
static Status read_header(Stream *s, const char *path, Model *m, DataState *data, uint32_t *step, uint32_t *ntensors,
                          Err *e)
{
    char magic[8];
    stream_get(s, magic, 8);
    if (s->err || memcmp(magic, CKPT_MAGIC, 8))
        return err_set(e, ST_DATA, "%s: not an fp8plan checkpoint (bad magic)", path);
    uint32_t ver = stream_get_u32(s);
    if (ver != CKPT_VERSION)
        return err_set(e, ST_DATA, "%s: checkpoint format version %u, this fp8plan reads version %d", path, ver,
                       CKPT_VERSION);
    char name[sizeof m->recipe.name];
    stream_get(s, name, sizeof name);
    name[sizeof name - 1] = 0;
    Field f[NFIELDS];
    fields(m, f);
    for (int i = 0; i < NFIELDS; i++) {
        uint64_t v = stream_get_u64(s);
        if (s->err) break;
        if (v != f[i].v) {
            if (i < NRECIPE_FIELDS)
                return err_set(
                    e, ST_DATA, "%s: checkpoint is from recipe '%s', this run uses '%s' (%s differs: %llu vs %llu)",
                    path, name, m->recipe.name, f[i].name, (unsigned long long)v, (unsigned long long)f[i].v);
            return err_set(e, ST_DATA, "%s: checkpoint has %s %llu, this run has %llu", path, f[i].name,
                           (unsigned long long)v, (unsigned long long)f[i].v);
        }
    }
    if (!s->err && strcmp(name, m->recipe.name))
        return err_set(e, ST_DATA, "%s: checkpoint is from recipe '%s', this run uses '%s'", path, name,
                       m->recipe.name);
    ModelHyper h = {0};
    h.lr = stream_get_f32(s);
    h.beta1 = stream_get_f32(s);
    h.beta2 = stream_get_f32(s);
    h.eps = stream_get_f32(s);
    h.weight_decay = stream_get_f32(s);
    h.warmup = stream_get_u32(s);
    h.init_std = stream_get_f32(s);
    h.seed = stream_get_u64(s);
    const ModelHyper *mh = &m->hyper;
    if (!s->err && (h.lr != mh->lr || h.beta1 != mh->beta1 || h.beta2 != mh->beta2 || h.eps != mh->eps ||
                    h.weight_decay != mh->weight_decay || h.warmup != mh->warmup || h.init_std != mh->init_std ||
                    h.seed != mh->seed))
        return err_set(e, ST_DATA,
                       "%s: checkpoint was trained with lr %g, wd %g, warmup %u, seed %llu; this run has lr %g, "
                       "wd %g, warmup %u, seed %llu (resume with the same settings)",
                       path, (double)h.lr, (double)h.weight_decay, h.warmup, (unsigned long long)h.seed, (double)mh->lr,
                       (double)mh->weight_decay, mh->warmup, (unsigned long long)mh->seed);
    float mtp_weight = stream_get_f32(s);
    if (!s->err && mtp_weight != m->mtp_weight)
        return err_set(e, ST_DATA,
                       "%s: checkpoint was trained with MTP weight %g (--mtp-weight); this run has %g (resume with the "
                       "same settings)",
                       path, (double)mtp_weight, (double)m->mtp_weight);
    *step = stream_get_u32(s);
    data->kind = stream_get_u32(s);
    data->prev = stream_get_u32(s);
    data->rng = stream_get_u64(s);
    data->pos = stream_get_u64(s);
    data->batches = stream_get_u64(s);
    data->source = stream_get_u64(s);
    *ntensors = stream_get_u32(s);
    if (s->err) return err_set(e, ST_DATA, "%s: truncated checkpoint header", path);
    return ST_OK;
}

/* Where a pass reads: the file at path, or an image in memory (a rank's part of a layout
 * checkpoint, ckpt_layout.c; path then names the file in messages). */
typedef struct {
    const char *path;
    const void *img;
    size_t len;
} Src;

/* One pass over the file: verify everything; when `apply`, also copy the data in. */
static Status pass(const Src *src, Model *m, DataState *data, uint32_t *step, int apply, int *short_read, Err *e)
{
    const char *path = src->path;
    FILE *fp = src->img ? fmemopen((void *)src->img, src->len, "rb") : fopen(path, "rb");
    if (!fp) return err_set(e, ST_NOINPUT, "%s: cannot open checkpoint: %s", path, strerror(errno));
    Stream s = {.f = fp, .fnv = STREAM_FNV_BASIS};
    uint32_t n = 0, want = 0;
    Status st = read_header(&s, path, m, data, step, &n, e);
    for (uint32_t i = 0; i < m->specs.n; i++) want += (uint32_t)persistent_spec(&m->specs.v[i]);
    if (!st && n != want) st = err_set(e, ST_DATA, "%s: checkpoint holds %u tensors, this model has %u", path, n, want);
    void *buf = st ? NULL : malloc(CHUNK);
    if (!st && !buf) st = err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t i = 0; !st && i < m->specs.n; i++) {
        const ArenaSpec *p = &m->specs.v[i];
        if (!persistent_spec(p)) continue;
        uint64_t want_bytes = p->bytes, lo = 0; /* a shard: the file holds the whole state, this rank reads its part */
        const int shard = model_shard_spec(m, p, &want_bytes, &lo);
        uint32_t term = stream_get_u32(&s), dtype = stream_get_u32(&s);
        int32_t layer = (int32_t)stream_get_u32(&s);
        uint64_t bytes = stream_get_u64(&s);
        char name[NAME_BYTES];
        stream_get(&s, name, NAME_BYTES);
        if (s.err) break;
        if (term != (uint32_t)p->term || dtype != (uint32_t)p->dtype || layer != p->layer || bytes != want_bytes ||
            !name_eq(name, p->name)) {
            name[NAME_BYTES - 1] = 0;
            st = err_set(e, ST_DATA,
                         "%s: tensor %u is %s '%.31s' (layer %d, %llu bytes); this model expects %s '%s' (layer %d, "
                         "%llu bytes)",
                         path, i, arena_term_name(term), name, layer, (unsigned long long)bytes,
                         arena_term_name(p->term), p->name, p->layer, (unsigned long long)want_bytes);
            break;
        }
        for (uint64_t off = 0; !st && !s.err && off < bytes; off += CHUNK) {
            uint64_t k = bytes - off < CHUNK ? bytes - off : CHUNK;
            stream_get(&s, buf, (size_t)k);
            if (!apply || s.err) continue;
            uint64_t a = shard ? (off > lo ? off : lo) : off,
                     b = shard ? (off + k < lo + p->bytes ? off + k : lo + p->bytes)
                               : off + k; /* file bytes [a, b) are this rank's */
            if (b > a)
                st = m->bk->copy_to_device(m->bk, (char *)m->arena.base + p->offset + (a - lo), (char *)buf + (a - off),
                                           b - a, e);
        }
    }
    free(buf);
    if (!st) st = stream_check_end(&s, path, e);
    fclose(fp);
    *short_read = s.err;
    return st;
}

/* After a failed check: when the file has our magic but its checksum does not hold, the difference
 * found is corruption (a flipped byte in the header reads as another recipe or shape), so say that. */
static Status explain(const char *path, Status st, Err *e)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return st;
    Stream s = {.f = fp, .fnv = STREAM_FNV_BASIS};
    unsigned char last[8], *buf = malloc(CHUNK);
    size_t n, have = 0; /* the file's last 8 bytes so far, outside the checksum */
    char magic[8] = {0};
    int ours = fread(magic, 1, 8, fp) == 8 && !memcmp(magic, CKPT_MAGIC, 8);
    if (ours) stream_fnv(&s, magic, 8), s.pos = 8;
    while (ours && buf && (n = fread(buf, 1, CHUNK, fp)) > 0) {
        size_t keep = n < 8 ? n : 8, old = have + keep > 8 ? have + keep - 8 : 0; /* bytes leaving `last` */
        stream_fnv(&s, last, old);
        memmove(last, last + old, have - old);
        have -= old;
        stream_fnv(&s, buf, n - keep);
        memcpy(last + have, buf + n - keep, keep);
        have += keep;
    }
    free(buf);
    fclose(fp);
    if (!ours || have < 8) return st;
    uint64_t stored = 0;
    for (int i = 7; i >= 0; i--) stored = stored << 8 | last[i];
    if (stored == s.fnv) return st; /* intact: the difference is real */
    return err_set(e, ST_DATA, "%s: checksum mismatch (stored %016llx, computed %016llx): the file is corrupted", path,
                   (unsigned long long)stored, (unsigned long long)s.fnv);
}

/* Verify everything, then apply: m stays untouched on error. */
static Status load(const Src *src, Model *m, DataState *data, Err *e)
{
    DataState d;
    uint32_t step;
    int short_read;
    Status st = pass(src, m, &d, &step, 0, &short_read, e);
    if (st == ST_DATA && !short_read && !src->img) st = explain(src->path, st, e);
    if (!st) st = pass(src, m, &d, &step, 1, &short_read, e);
    if (st) return st;
    m->step = step;
    *data = d;
    return ST_OK;
}

Status ckpt_load_image(const char *path, const void *img, size_t len, Model *m, DataState *data, Err *e)
{
    Src src = {.path = path, .img = img, .len = len};
    return load(&src, m, data, e);
}

Status ckpt_load(const char *path, Model *m, DataState *data, Err *e)
{
    uint32_t version = 0;
    Status st = ckpt_check(m, e);
    if (!st) st = ckpt_layout_peek(path, m, &version, e); /* a layout checkpoint, or one for another layout */
    if (st || version == CKPT_LAYOUT_VERSION || version == CKPT_ETP_VERSION)
        return st ? st : ckpt_layout_load(path, m, data, e);
    Src src = {.path = path};
    return load(&src, m, data, e);
}
