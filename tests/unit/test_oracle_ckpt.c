/* tests/unit/test_oracle_ckpt.c — every field of the checkpoint header, read
 * back from the bytes of the file at the offsets exec/ckpt/ckpt.h specifies.
 *
 * An independent oracle: the layout below is written from the format comment
 * in exec/ckpt/ckpt.h, the values are the ones the test put into the model, and
 * the checksum is recomputed here (FNV-1a 64). Then each field is changed in
 * a copy of the file (checksum fixed up, so only that field differs): a field
 * that must match the model is refused with a message naming it; the data
 * stream position and the step count are restored as written.
 *
 * Layout (little-endian):
 *   0    "FP8PCKPT"                      8 B
 *   8    u32 version = 5
 *   12   recipe name, NUL-padded        48 B
 *   60   56 x u64: 22 recipe fields, 17 model and run-size fields, 17 of experts, latent attention,
 *        q/k norms, MTP and the expert-parallel place (FIELDS below, in order)
 *   508  f32 lr, beta1, beta2, eps, weight decay; u32 warm-up; f32 init std; u64 seed   (36 B)
 *   544  f32 MTP weight
 *   548  u32 step
 *   552  u32 data kind, u32 prev, u64 rng, u64 pos, u64 batches, u64 source           (40 B)
 *   592  u32 tensor count
 *   596  per tensor: u32 term, u32 dtype, i32 layer, u64 bytes, 32 B name, data
 *   end  u64 FNV-1a of every byte before it
 * (60 + 56·8 = 508; 508 + 5·4 + 4 + 4 + 8 = 544; 552 + 4 + 4 + 4·8 = 592.) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/ckpt/ckpt.h"
#include "exec/ckpt/ckpt_layout.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum {
    OFF_VERSION = 8,
    OFF_NAME = 12,
    OFF_FIELDS = 60,
    NFIELDS = 56,
    OFF_HYPER = 508,
    OFF_MTP_WEIGHT = 544,
    OFF_STEP = 548,
    OFF_DATA = 552,
    OFF_NTENSORS = 592,
    OFF_TENSORS = 596
};

static char dir[512];

static uint32_t rd32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static float rdf(const unsigned char *p)
{
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void wr64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a 64: offset basis, prime 2^40 + 2^8 + 0xB3 */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = len > 0 ? malloc((size_t)len) : NULL;
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) free(b), b = NULL;
    fclose(f);
    *n = b ? (size_t)len : 0;
    return b;
}

/* write b with the checksum recomputed over everything before the last 8 bytes */
static void spit(const char *path, unsigned char *b, size_t n)
{
    wr64(b + n - 8, fnv1a(b, n - 8));
    FILE *f = fopen(path, "wb");
    if (f) fwrite(b, 1, n, f), fclose(f);
}

static void test_header_fields(void)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    ModelHyper h = {.lr = 0.0625f,
                    .beta1 = 0.875f,
                    .beta2 = 0.9375f,
                    .eps = 0x1p-20f,
                    .weight_decay = 0.25f,
                    .warmup = 3,
                    .init_std = 0.03125f,
                    .seed = 0x0123456789ABCDEFull};
    Model *g = NULL;
    CHECKF(bk && comm && !fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e), "%s", e.msg);
    if (!g) return;
    g->step = 7;
    DataState ds = {.kind = DATA_SYNTHETIC,
                    .prev = 0x11223344u,
                    .rng = 0x0102030405060708ull,
                    .pos = 0xA1A2A3A4A5A6A7A8ull,
                    .batches = 9,
                    .source = 0xFEEDFACECAFEBEEFull};
    char path[600], bad[600];
    snprintf(path, sizeof path, "%s/h.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    CHECKF(ckpt_save(path, g, &ds, &e) == ST_OK, "%s", e.msg);
    size_t n = 0;
    unsigned char *b = slurp(path, &n);
    CHECK(b && n > OFF_TENSORS + 8);
    if (!b || n <= OFF_TENSORS + 8) return;

    CHECK(!memcmp(b, "FP8PCKPT", 8));
    CHECK_EQ_U64(rd32(b + OFF_VERSION), 7);
    char name[48] = "te-fp8"; /* NUL-padded to 48 bytes */
    CHECK(!memcmp(b + OFF_NAME, name, sizeof name));
    /* the 56 fields that must match, in file order, with the values this model has (a dense GPT on one rank:
     * no experts, latents, q/k norms or MTP; one expert-parallel rank, holding from expert 0) */
    const struct {
        const char *name;
        uint64_t v;
    } FIELDS[NFIELDS] = {
        {"linear weight dtype", r.gemm.dt[STATE_WEIGHT]},
        {"linear master dtype", r.gemm.dt[STATE_MASTER]},
        {"linear gradient dtype", r.gemm.dt[STATE_GRAD]},
        {"linear Adam m dtype", r.gemm.dt[STATE_M]},
        {"linear Adam v dtype", r.gemm.dt[STATE_V]},
        {"linear scaled states", r.gemm.scaled_mask},
        {"other weight dtype", r.other.dt[STATE_WEIGHT]},
        {"other master dtype", r.other.dt[STATE_MASTER]},
        {"other gradient dtype", r.other.dt[STATE_GRAD]},
        {"other Adam m dtype", r.other.dt[STATE_M]},
        {"other Adam v dtype", r.other.dt[STATE_V]},
        {"other scaled states", r.other.scaled_mask},
        {"activation dtype", DT_BF16},
        {"FP8 row-wise copies", DT_E4M3},
        {"FP8 transposed copies", DT_E4M3},
        {"forward GEMM dtype", DT_E4M3},
        {"backward GEMM dtype", DT_E5M2},
        {"saved-input dtype", DT_E4M3},
        {"scaling", SCALING_DELAYED},
        {"activation scale granularity", GRAN_TENSOR},
        {"weight scale granularity", GRAN_TENSOR},
        {"amax history", 16},
        {"layers", 2},
        {"hidden", 32},
        {"heads", 4},
        {"KV heads", 4},
        {"head_dim", 8},
        {"ffn", 128},
        {"norm", NORM_LAYERNORM},
        {"mlp", MLP_GELU},
        {"positions", POS_LEARNED},
        {"seq", 16},
        {"micro-batch", 4},
        {"micro-batches per step", 1},
        {"vocab", 64},
        {"padded vocab", 64},
        {"tied embeddings", 1},
        {"linear biases", 1},
        {"rope base", 10000},
        {"experts", 0},
        {"experts per token", 0},
        {"shared experts", 0},
        {"expert ffn", 0},
        {"dense layers", 0},
        {"router", ROUTER_NONE},
        {"router groups", 0},
        {"router group top-k", 0},
        {"q latent", 0},
        {"kv latent", 0},
        {"qk_nope_head_dim", 0},
        {"qk_rope_head_dim", 0},
        {"v_head_dim", 0},
        {"q/k norms", 0},
        {"MTP depths", 0},
        {"expert-parallel ranks (--ep)", 1},
        {"first expert held", 0},
    };
    for (int i = 0; i < NFIELDS; i++)
        CHECKF(rd64(b + OFF_FIELDS + 8 * i) == FIELDS[i].v, "field %d (%s) = %llu, expected %llu", i, FIELDS[i].name,
               (unsigned long long)rd64(b + OFF_FIELDS + 8 * i), (unsigned long long)FIELDS[i].v);
    CHECK(rdf(b + OFF_HYPER) == 0.0625f && rdf(b + OFF_HYPER + 4) == 0.875f && rdf(b + OFF_HYPER + 8) == 0.9375f);
    CHECK(rdf(b + OFF_HYPER + 12) == 0x1p-20f && rdf(b + OFF_HYPER + 16) == 0.25f);
    CHECK_EQ_U64(rd32(b + OFF_HYPER + 20), 3);
    CHECK(rdf(b + OFF_HYPER + 24) == 0.03125f);
    CHECK_EQ_U64(rd64(b + OFF_HYPER + 28), 0x0123456789ABCDEFull);
    CHECK(rdf(b + OFF_MTP_WEIGHT) == 0.3f); /* MODEL_MTP_WEIGHT, DeepSeek-V3's (written for every model) */
    CHECK_EQ_U64(rd32(b + OFF_STEP), 7);
    CHECK_EQ_U64(rd32(b + OFF_DATA), DATA_SYNTHETIC);
    CHECK_EQ_U64(rd32(b + OFF_DATA + 4), 0x11223344u);
    CHECK_EQ_U64(rd64(b + OFF_DATA + 8), 0x0102030405060708ull);
    CHECK_EQ_U64(rd64(b + OFF_DATA + 16), 0xA1A2A3A4A5A6A7A8ull);
    CHECK_EQ_U64(rd64(b + OFF_DATA + 24), 9);
    CHECK_EQ_U64(rd64(b + OFF_DATA + 32), 0xFEEDFACECAFEBEEFull);
    /* the tensor records fill the file exactly up to the checksum, which is FNV-1a of the rest */
    uint32_t nt = rd32(b + OFF_NTENSORS);
    size_t off = OFF_TENSORS;
    uint32_t seen = 0;
    while (seen < nt && off + 52 <= n - 8) {
        uint64_t bytes = rd64(b + off + 12);
        CHECK(b[off + 20] != 0 && b[off + 51] == 0); /* a name, NUL-terminated within 32 bytes */
        if (bytes > n) break;
        off += 52 + bytes, seen++;
    }
    CHECK(nt > 0);
    CHECK_EQ_U64(seen, nt);
    /* which terms the records carry: for te-fp8 every state (BF16 weights, FP32 master, grad, m, v), both
     * FP8 copies and the GEMM scaling records; no activation, workspace or I/O buffer */
    unsigned have = 0;
    for (size_t o = OFF_TENSORS, k = 0; k < nt && o + 52 <= n - 8; k++) {
        uint32_t term = rd32(b + o);
        if (term < 32) have |= 1u << term;
        o += 52 + rd64(b + o + 12);
    }
    unsigned want = 0;
    for (int t = MT_WEIGHT_GEMM; t <= MT_OPTIM_V_OTHER; t++) want |= 1u << t;
    want |= 1u << MT_SCALE_GEMM;
    CHECKF(have == want, "terms in the checkpoint %#x, expected %#x", have, want);
    CHECK_EQ_U64(off, n - 8);
    CHECK_EQ_U64(rd64(b + n - 8), fnv1a(b, n - 8));

    /* a fresh model of the same recipe and shape loads it: step and data position as written */
    Model *g2 = NULL;
    CHECK(!fx_model(&s, &r, 4, 1, &h, bk, comm, &g2, &e));
    DataState got = {0};
    CHECKF(g2 && ckpt_load(path, g2, &got, &e) == ST_OK, "%s", e.msg);
    CHECK(g2 && g2->step == 7);
    CHECK(got.kind == ds.kind && got.prev == ds.prev && got.rng == ds.rng && got.pos == ds.pos &&
          got.batches == ds.batches && got.source == ds.source);

    /* each of the 56 fields, changed alone, is refused naming the field */
    unsigned char *c = malloc(n);
    for (int i = 0; g2 && c && i < NFIELDS; i++) {
        memcpy(c, b, n);
        wr64(c + OFF_FIELDS + 8 * i, FIELDS[i].v + 1);
        spit(bad, c, n);
        Status st = ckpt_load(bad, g2, &got, &e);
        CHECKF(st == ST_DATA, "field %s changed: status %d", FIELDS[i].name, st);
        CHECKF(strstr(e.msg, FIELDS[i].name) != NULL, "field %s changed: '%s'", FIELDS[i].name, e.msg);
    }
    /* each hyper-parameter and the MTP weight, changed alone, is refused (resume with the same settings) */
    const int hyper_off[] = {0, 4, 8, 12, 16, 20, 24, 28, 36};
    for (size_t i = 0; g2 && c && i < sizeof hyper_off / sizeof *hyper_off; i++) {
        memcpy(c, b, n);
        c[OFF_HYPER + hyper_off[i]] ^= 0x01;
        spit(bad, c, n);
        CHECKF(ckpt_load(bad, g2, &got, &e) == ST_DATA, "hyper-parameter at +%d changed", hyper_off[i]);
        CHECKF(strstr(e.msg, "resume with the same settings") != NULL, "hyper +%d: '%s'", hyper_off[i], e.msg);
    }
    /* the recipe name alone, the version, the magic */
    if (g2 && c) {
        memcpy(c, b, n), memcpy(c + OFF_NAME, "te-fp9", 6), spit(bad, c, n);
        CHECK(ckpt_load(bad, g2, &got, &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "checkpoint is from recipe 'te-fp9', this run uses 'te-fp8'");
        memcpy(c, b, n), c[OFF_VERSION] = 3, spit(bad, c, n);
        CHECK(ckpt_load(bad, g2, &got, &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "version 3");
        /* a layout checkpoint's part is read from memory without the file's peek: its own header refuses it */
        CHECK(ckpt_load_image("part", c, n, g2, &got, &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "part: checkpoint format version 3, this fp8plan reads version 7");
        memcpy(c, b, n);
        CHECKF(ckpt_load_image("part", c, n, g2, &got, &e) == ST_OK, "%s", e.msg); /* as written, it loads */
        memcpy(c, b, n), c[0] = 'X', spit(bad, c, n);
        CHECK(ckpt_load(bad, g2, &got, &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "bad magic");
        /* step and data position are restored, not compared: changed, they load as written */
        memcpy(c, b, n), c[OFF_STEP] = 42, c[OFF_DATA + 24] = 77, spit(bad, c, n);
        CHECKF(ckpt_load(bad, g2, &got, &e) == ST_OK, "%s", e.msg);
        CHECK(g2->step == 42 && got.batches == 77);
        /* one more tensor than the model has */
        memcpy(c, b, n), c[OFF_NTENSORS] ^= 0x01, spit(bad, c, n);
        CHECK(ckpt_load(bad, g2, &got, &e) == ST_DATA);
        CHECK_CONTAINS(e.msg, "tensors, this model has");
        /* each field of a tensor record (term u32, dtype u32, layer i32, bytes u64, name[32]), one more and one
         * less than written, alone, in the second record, is refused naming the record; the record as written
         * loads (above) */
        const size_t rec = OFF_TENSORS + 52 + (size_t)rd64(b + OFF_TENSORS + 12);
        const int field_off[5] = {0, 4, 8, 12, 20};
        for (int i = 0; i < 10 && rec + 52 <= n - 8; i++) {
            const int at = field_off[i / 2], d = i % 2 ? -1 : 1;
            memcpy(c, b, n);
            if (at == 12) {
                wr64(c + rec + at, rd64(c + rec + at) + (uint64_t)(int64_t)d);
            } else if (at == 20) {
                c[rec + at] = (unsigned char)(c[rec + at] + d);
            } else {
                uint32_t v = rd32(c + rec + at) + (uint32_t)d; /* little-endian, as the file */
                for (int k = 0; k < 4; k++) c[rec + at + k] = (unsigned char)(v >> 8 * k);
            }
            spit(bad, c, n);
            CHECKF(ckpt_load(bad, g2, &got, &e) == ST_DATA, "record field at +%d %+d", at, d);
            CHECKF(strstr(e.msg, "tensor 1 is ") && strstr(e.msg, "this model expects"), "record +%d %+d: '%s'", at, d,
                   e.msg);
        }
    }
    free(c);
    free(b);
    unlink(path);
    unlink(bad);
    if (g2) model_destroy(g2);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

/* The arena's terms are the planner's memory terms with the planner's names, then the executor's own
 * two; exactly the states, FP8 copies and scales persist (plan.h: what lives across steps is what a
 * checkpoint must hold). */
static void test_term_names_and_persistence(void)
{
    static const char *const names[ARENA_TERMS] = {"weight_gemm",      "weight_other",
                                                   "fp8_rowwise",      "fp8_colwise",
                                                   "master_gemm",      "master_other",
                                                   "grad_gemm",        "grad_other",
                                                   "adam_m_gemm",      "adam_m_other",
                                                   "adam_v_gemm",      "adam_v_other",
                                                   "scale_gemm",       "scale_block",
                                                   "scale_state",      "act_layer_hp",
                                                   "act_layer_fp8",    "act_attention",
                                                   "act_dropout_mask", "act_output",
                                                   "transient",        "comm_buffers",
                                                   "gemm_workspace",   "cuda_context",
                                                   "fragmentation",    "weight_expert",
                                                   "fp8_expert",       "master_expert",
                                                   "grad_expert",      "adam_m_expert",
                                                   "adam_v_expert",    "act_moe",
                                                   "router_bias",      "io",
                                                   "rope_table"};
    /* the planner's terms in its order (the expert ones too: the executor holds none of them), then the
     * executor's own two; states, FP8 copies and scales persist across steps, the rest does not */
    for (ArenaTerm t = 0; t < ARENA_TERMS; t++) {
        int persistent =
            t <= MT_SCALE_STATE || (t >= MT_WEIGHT_EXPERT && t <= MT_OPTIM_V_EXPERT) || t == MT_ROUTER_BIAS;
        CHECKF(names[t] && !strcmp(arena_term_name(t), names[t]), "term %u is '%s'", t, arena_term_name(t));
        CHECKF(arena_term_persistent(t) == persistent, "term %s persistence", names[t]);
    }
    CHECK(!arena_term_persistent(ARENA_TERMS));
    CHECK_STR(arena_term_name(ARENA_TERMS), "?");
}

/* Which ranks of a sharded state's group gather its shards for a part (ckpt_layout_root), by hand. A stage's
 * rank within = tp_rank + tp x dp_rank is TP rank within mod tp and EP rank within mod ep (exec/model/
 * model_groups.c), so its places are the first L = lcm(tp, ep) ranks (exec/ckpt/ckpt_layout.h). Rank j of the
 * DP group is within = tp_rank + tp x j; rank j of an EDP group (ep > 1) within = ep_rank + ep x j; at ep 1 the
 * EDP group is the DP group (tp 1) or the stage's tp x dp ranks, rank j = within j. Only the group pointers and
 * the coordinates are read. */
static void test_part_roots(void)
{
    static const struct {
        uint32_t tp, dp, ep, tp_rank, dp_rank, ep_rank;
        const char *dp_roots, *edp_roots; /* '1' where group rank j writes a part */
    } cases[] = {
        /* tp 1 x dp 4 x ep 2 (L 2), dp_rank 3 (EP rank 1): DP ranks 0 and 1 are the two EP ranks' places;
         * its EDP group {1, 3}: rank 0 (within 1 < 2), not rank 1 (within 3) */
        {1, 4, 2, 0, 3, 1, "1100", "10"},
        /* tp 2 x dp 2 x ep 4 (L 4), tp_rank 1, dp_rank 0 (within 1, EP rank 1): DP group within 1 and 3, both
         * places; its EDP group (tp x dp / ep = 1 rank) is itself */
        {2, 2, 4, 1, 0, 1, "11", "1"},
        /* tp 2 x dp 2 at ep 1 (L 2), tp_rank 0, dp_rank 1 (within 2): DP group within 0 (a place) and 2; the
         * EDP group is the stage's 4 ranks, within 0 and 1 the places */
        {2, 2, 1, 0, 1, 0, "10", "1100"},
        /* tp 2 x dp 4 x ep 2 (L 2), tp_rank 1, dp_rank 2 (within 5, EP rank 1): DP group within 1, 3, 5, 7, only
         * 1 a place; EDP group within 1, 3, 5, 7 (ep_rank 1 + 2j) likewise */
        {2, 4, 2, 1, 2, 1, "1000", "1000"},
        /* plain data parallelism at dp 2 (L 1): DP rank 0, which is the world's rank 0 */
        {1, 2, 1, 0, 1, 0, "10", "10"},
    };
    Model *m = calloc(1, sizeof *m);
    Comm dpc = {0}, edpc = {0}, stage = {0};
    if (!m) {
        CHECK(m != NULL);
        return;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m->tp = cases[i].tp, m->dp = cases[i].dp, m->ep = cases[i].ep, m->pp = 1;
        m->tp_rank = cases[i].tp_rank, m->dp_rank = cases[i].dp_rank, m->ep_rank = cases[i].ep_rank;
        m->dpc = &dpc;
        m->edpc = m->ep > 1 ? &edpc : m->tp > 1 ? &stage : &dpc; /* model_groups_create's */
        char got[2][8] = {{0}};
        for (int j = 0; j < (int)strlen(cases[i].dp_roots); j++) got[0][j] = ckpt_layout_root(m, m->dpc, j) ? '1' : '0';
        for (int j = 0; j < (int)strlen(cases[i].edp_roots); j++)
            got[1][j] = ckpt_layout_root(m, m->edpc, j) ? '1' : '0';
        CHECKF(!strcmp(got[0], cases[i].dp_roots), "case %zu: DP roots %s, want %s", i, got[0], cases[i].dp_roots);
        CHECKF(!strcmp(got[1], cases[i].edp_roots), "case %zu: EDP roots %s, want %s", i, got[1], cases[i].edp_roots);
    }
    free(m);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fp8plan-ckpt-oracle-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
    if (!mkdtemp(dir)) {
        printf("FAIL - mkdtemp %s\n0 passed, 1 failed, 0 skipped\n", dir);
        return 1;
    }
    RUN(test_header_fields);
    RUN(test_term_names_and_persistence);
    RUN(test_part_roots);
    rmdir(dir);
    return test_summary();
}
