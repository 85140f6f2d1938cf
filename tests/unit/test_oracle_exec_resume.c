/* tests/unit/test_oracle_exec_resume.c — resuming a sharded optimizer state larger than the
 * loader's 1 MiB read chunk (exec/ckpt/ckpt.c): each rank takes exactly its own bytes of the whole-class
 * record, written once each, nothing outside the persistent tensors written at all.
 *
 * Ranks without MPI, as tests/unit/test_exec_shard.c does: a single-rank communicator told it is rank
 * r of 2 (its "gather" of the shards keeps rank 0's, which is all rank 0 reads back). The model, by hand:
 * one layer, C 256, 4 heads of 64 (KV 4), FFN 1024 (GELU), seq 16, V 64, megatron-bf16 (FP32 master, m,
 * v), ZeRO-1 over dp 2. Linear weights (out x in): QKV (256 + 2 x 256 = 768) x 256 = 196,608, proj
 * 256 x 256 = 65,536, FC1 1,024 x 256 = 262,144, FC2 256 x 1,024 = 262,144: E = 786,432; S = E / 2 =
 * 393,216 elements per rank; the FP32 master shard 393,216 x 4 = 1,572,864 B = 1.5 MiB, its record
 * the whole class 3 MiB. Rank 0 reads file bytes [0, 1.5 MiB): all of chunk 0 and the first half of
 * chunk 1; rank 1 [1.5 MiB, 3 MiB): chunk 1's second half and chunk 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/ckpt/ckpt.h"
#include "exec/ckpt/ckpt_layout.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* The backend's copy_to_device, watched: how many times each arena byte is written. */
static Status (*real_copy)(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e);
static const char *watch_base;
static uint64_t watch_bytes, stray;
static uint8_t *writes;

static Status spy_copy(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    const char *d = dst;
    for (uint64_t i = 0; i < bytes; i++) {
        if (d + i < watch_base || d + i >= watch_base + watch_bytes) {
            stray++;
            continue;
        }
        uint8_t *w = &writes[d + i - watch_base];
        if (*w < 255) (*w)++;
    }
    return real_copy(bk, dst, src, bytes, e);
}

static ModelSpec wide(void)
{
    ModelSpec m = fx_gpt();
    m.layers = 1, m.hidden = 256, m.heads = m.kv_heads = 4, m.head_dim = 64, m.ffn_hidden = 1024;
    return m;
}

static const ArenaSpec *spec_named(const Model *m, const char *name)
{
    for (uint32_t i = 0; i < m->specs.n; i++)
        if (!strcmp(m->specs.v[i].name, name)) return &m->specs.v[i];
    return NULL;
}

/* Load img into m with every write watched: every persistent byte written once, nothing else. */
static void load_watched(Backend *bk, Model *m, const char *img, size_t len)
{
    writes = calloc(m->arena.bytes, 1);
    CHECK(writes != NULL);
    if (!writes) return;
    watch_base = m->arena.base, watch_bytes = m->arena.bytes, stray = 0;
    real_copy = bk->copy_to_device;
    bk->copy_to_device = spy_copy;
    DataState ds;
    Err e = {0};
    CHECKF(ckpt_load_image("image", img, len, m, &ds, &e) == ST_OK, "%s", e.msg);
    bk->copy_to_device = real_copy;
    CHECK_EQ_U64(stray, 0);
    uint64_t once = 0, twice = 0, persistent = 0, outside = 0;
    for (uint32_t i = 0; i < m->specs.n; i++) {
        const ArenaSpec *p = &m->specs.v[i];
        if (!arena_term_persistent(p->term)) continue;
        persistent += p->bytes;
        for (uint64_t b = 0; b < p->bytes; b++) {
            once += writes[p->offset + b] == 1;
            twice += writes[p->offset + b] > 1;
        }
    }
    for (uint64_t b = 0; b < m->arena.bytes; b++) outside += writes[b] != 0;
    CHECK_EQ_U64(twice, 0);
    CHECK_EQ_U64(once, persistent);
    CHECK_EQ_U64(outside, once); /* no byte outside the persistent tensors */
    free(writes);
    writes = NULL;
}

static void test_sharded_resume(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    ModelSpec ms = wide();
    Recipe rc = fx_recipe("megatron-bf16");
    Model *a = fx_rank_model(bk, &ms, &rc, 0, 2);
    CHECK(a != NULL);
    if (!a) {
        bk->destroy(bk);
        return;
    }
    CHECK(a->class_elems[0] == 786432 && a->shard_elems[0] == 393216);
    const ArenaSpec *sa = spec_named(a, "master.shard");
    CHECK(sa != NULL && sa->bytes == 1572864);
    if (!sa) {
        fx_rank_drop(a);
        bk->destroy(bk);
        return;
    }
    /* rank 0's master shard: element i holds (i mod 1,000) / 4 — a pattern the initialisation cannot give */
    float *ma = (float *)((char *)a->arena.base + sa->offset);
    for (uint64_t i = 0; i < 393216; i++) ma[i] = (float)(i % 1000) * 0.25f;
    DataState ds = {.kind = DATA_SYNTHETIC, .batches = 3};
    char *img = NULL;
    size_t len = 0;
    a->step = 3;
    CHECKF(ckpt_image(a, &ds, &img, &len, &e) == ST_OK, "%s", e.msg);
    CHECK(len > 3u << 20); /* the master record alone is 3 MiB */

    /* rank 0 again: takes file bytes [0, 1.5 MiB) of the record — the pattern, every byte once */
    Model *b = fx_rank_model(bk, &ms, &rc, 0, 2);
    CHECK(b != NULL);
    if (b && img) {
        load_watched(bk, b, img, len);
        const ArenaSpec *sb = spec_named(b, "master.shard");
        const float *mb = (const float *)((char *)b->arena.base + sb->offset);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < 393216; i++) bad += mb[i] != (float)(i % 1000) * 0.25f;
        CHECK_EQ_U64(bad, 0);
        CHECK_EQ_INT(b->step, 3);
    }
    fx_rank_drop(b);
    /* rank 1: its shard starts inside chunk 1 (file byte 1,572,864 = 1 MiB + 524,288) and runs to the end of
     * chunk 2; still every byte once */
    Model *c = fx_rank_model(bk, &ms, &rc, 1, 2);
    CHECK(c != NULL);
    if (c && img) load_watched(bk, c, img, len);
    fx_rank_drop(c);
    free(img);
    fx_rank_drop(a);
    bk->destroy(bk);
}

/* One byte flipped in a saved file's header (byte 12: the recipe's name, after the 8-byte magic and the u32
 * version) reads as another recipe; the loader sees the magic and a checksum that no longer holds, so it
 * names the file corrupted rather than reporting a recipe the file never had. */
static void test_header_flip_is_corruption(void)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    Model *m = NULL;
    CHECKF(bk && comm && !fx_model(&s, &r, 1, 1, NULL, bk, comm, &m, &e), "%s", e.msg);
    char good[480], bad[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(good, sizeof good, "%s/fp8plan-flip-%d.ckpt", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    snprintf(bad, sizeof bad, "%s.bad", good);
    DataState ds = {.kind = DATA_SYNTHETIC};
    if (m) CHECKF(ckpt_save(good, m, &ds, &e) == ST_OK, "%s", e.msg);
    FILE *in = fopen(good, "rb"), *out = fopen(bad, "wb");
    CHECK(in && out);
    for (long i = 0; in && out; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(i == 12 ? c ^ 0x01 : c, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    if (m) {
        DataState back;
        e = (Err){0};
        CHECKF(ckpt_load(good, m, &back, &e) == ST_OK, "%s", e.msg);
        e = (Err){0};
        CHECK_EQ_INT(ckpt_load(bad, m, &back, &e), ST_DATA);
        CHECK_CONTAINS(e.msg, "checksum mismatch");
        CHECK_CONTAINS(e.msg, "the file is corrupted");
        CHECK_CONTAINS(e.msg, bad);
        model_destroy(m);
    }
    unlink(good);
    unlink(bad);
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

int main(void)
{
    RUN(test_sharded_resume);
    RUN(test_header_flip_is_corruption);
    return test_summary();
}
