/* exec/ckpt/ckpt_layout.c — checkpoints of TP, PP and EP ranks and their grids (format in ckpt_layout.h). */
#include "exec/ckpt/ckpt_layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exec/ckpt/ckpt.h"
#include "exec/ckpt/ckpt_stream.h"
#include "exec/comm/comm_mpi.h"
#include "util/fileio.h"

enum { CHUNK = 1 << 20, MAX_RANKS = 1 << 16 };

static uint32_t tp_of(const Model *m) { return m->tp ? m->tp : 1; }
static uint32_t pp_of(const Model *m) { return m->pp ? m->pp : 1; }
static uint32_t dp_of(const Model *m) { return m->dp ? m->dp : 1; }
static uint32_t ep_of(const Model *m) { return m->ep ? m->ep : 1; }
static uint32_t etp_of(const Model *m) { return m->etp ? m->etp : 1; }
/* The expert place's period: ep·etp ranks (exec/model/model_groups.c) */
static uint32_t xg_of(const Model *m) { return ep_of(m) * etp_of(m); }
/* The version this run writes: 8 at etp 1, 9 (etp in the header) otherwise. */
static uint32_t version_of(const Model *m) { return etp_of(m) > 1 ? CKPT_ETP_VERSION : CKPT_LAYOUT_VERSION; }
/* The places of a stage: the distinct (tp_rank, ep_rank, etp_rank) of its tp x dp ranks. Its rank `within` (=
 * tp_rank + tp·dp_rank, exec/model/model_groups.c) holds tp_rank = within mod tp and, the expert side folded over
 * the same ranks etp fastest, etp_rank = within mod etp, ep_rank = ⌊within / etp⌋ mod ep: they repeat with period
 * lcm(tp, ep·etp), which divides tp·dp (ep·etp divides it), so the first lcm ranks of a stage are its places, one
 * each (tp 1: the first ep·etp DP ranks; ep·etp 1: the TP group). */
static uint32_t gcd_u32(uint32_t a, uint32_t b) { return b ? gcd_u32(b, a % b) : a; }
static uint32_t places_of(const Model *m) { return tp_of(m) / gcd_u32(tp_of(m), xg_of(m)) * xg_of(m); }
static uint32_t parts_of(const Model *m) { return pp_of(m) * places_of(m); }

int ckpt_layout(const Model *m) { return tp_of(m) > 1 || pp_of(m) > 1 || xg_of(m) > 1; }

int ckpt_every_rank(const Model *m) { return m->shard_ways > 1 || ckpt_layout(m); }

/* 1 when world rank r writes a part: a stage's first places_of ranks, so in world rank order the parts come
 * stage by stage, then by the rank within the stage: part i = stage·places + within. */
static int part_writer(const Model *m, uint32_t r) { return r % (tp_of(m) * dp_of(m)) < places_of(m); }

int ckpt_layout_root(const Model *m, const Comm *c, int j)
{
    uint32_t within; /* group rank j's rank within the stage (model_groups_create's keys) */
    if (c == m->dpc)
        within = m->tp_rank + tp_of(m) * (uint32_t)j;
    else if (c == m->edpc && xg_of(m) > 1) /* the ranks ep·etp apart holding this rank's experts' shard */
        within = m->etp_rank + etp_of(m) * m->ep_rank + xg_of(m) * (uint32_t)j;
    else /* ep·etp 1: the EDP group is the DP group (tp 1) or the stage's tp x dp ranks */
        within = (uint32_t)j;
    return within < places_of(m);
}

/* Rank 0 writes the header, every part and the checksum. */
static Status write_parts(const char *path, const Model *m, const uint8_t *all, const uint64_t *lens, uint64_t max,
                          Err *e)
{
    const uint32_t n = (uint32_t)m->comm->size;
    OutFile of;
    Status st = outfile_open_flags(&of, path, OUT_DURABLE, e); /* fsync: a checkpoint must survive a crash */
    if (st) return st;
    Stream s = {.f = of.f, .fnv = STREAM_FNV_BASIS};
    stream_put(&s, CKPT_MAGIC, 8);
    stream_put_u32(&s, version_of(m));
    stream_put_u32(&s, tp_of(m));
    stream_put_u32(&s, pp_of(m));
    stream_put_u32(&s, dp_of(m));
    stream_put_u32(&s, ep_of(m));
    if (etp_of(m) > 1) stream_put_u32(&s, etp_of(m));
    stream_put_u32(&s, parts_of(m));
    for (uint32_t r = 0; r < n; r++) {
        if (!part_writer(m, r)) continue;
        stream_put_u64(&s, lens[r]);
        stream_put(&s, all + (uint64_t)r * max, (size_t)lens[r]);
    }
    uint64_t sum = s.fnv;
    stream_put_u64(&s, sum);
    if (s.err) {
        st = err_set(e, ST_IO, "%s: write failed: %s", path, strerror(errno));
        outfile_abort(&of);
        return st;
    }
    return outfile_commit(&of, e);
}

Status ckpt_layout_save(const char *path, Model *m, const DataState *data, Err *e)
{
    Comm *c = m->comm;
    const size_t n = (size_t)c->size;
    char *img = NULL;
    size_t len = 0;
    uint64_t mine, max = 0, *lens = calloc(n, sizeof *lens);
    uint8_t *pad = NULL, *all = NULL;
    Status st = !lens                               ? err_set(e, ST_NOMEM, "out of memory")
                : part_writer(m, (uint32_t)c->rank) ? ckpt_image(m, data, &img, &len, e)
                                                    : ckpt_hand_shards(m, e); /* a DP replica: its shards only */
    mine = len;
    /* the parts' lengths to every rank (raw bytes: two FP32 words each; 0 from a rank that writes no
     * part), then the parts to rank 0, each padded to the longest (MPI_Gather moves equal blocks); not
     * plan collectives */
    if (!st) st = c->all_gather(c, COMM_UNPLANNED, m->bk, &mine, lens, 2, DT_FP32, e);
    for (size_t r = 0; !st && r < n; r++) max = lens[r] > max ? lens[r] : max;
    if (!st && (pad = calloc(max + 1, 1)) == NULL) st = err_set(e, ST_NOMEM, "out of memory");
    if (!st && c->rank == 0 && (all = malloc(max * n + 1)) == NULL)
        st = err_set(e, ST_NOMEM, "out of memory for %zu checkpoint parts of %llu bytes", n, (unsigned long long)max);
    if (!st) {
        if (len) memcpy(pad, img, len);
        st = comm_gather_bytes(c, pad, (size_t)max, all, e);
    }
    if (!st && c->rank == 0) st = write_parts(path, m, all, lens, max, e);
    free(img);
    free(pad);
    free(all);
    free(lens);
    return st;
}

/* "--tp T --pp P --dp D --ep E (R ranks)", " --etp X" after the --ep at etp > 1 */
static const char *layout_name(char *buf, size_t cap, uint32_t tp, uint32_t pp, uint32_t dp, uint32_t ep, uint32_t etp)
{
    uint64_t ranks = (uint64_t)tp * pp * dp;
    char x[24] = "";
    if (etp > 1) snprintf(x, sizeof x, " --etp %u", etp);
    snprintf(buf, cap, "--tp %u --pp %u --dp %u --ep %u%s (%llu rank%s)", tp, pp, dp, ep, x, (unsigned long long)ranks,
             ranks == 1 ? "" : "s");
    return buf;
}

/* The header after the magic: version, tp, pp, dp, ep, etp (version 9's; 1 for version 8), parts. */
typedef struct {
    uint32_t v, tp, pp, dp, ep, etp, parts;
} Head;
static Head get_head(Stream *s)
{
    Head h = {.v = stream_get_u32(s)};
    h.tp = stream_get_u32(s), h.pp = stream_get_u32(s), h.dp = stream_get_u32(s), h.ep = stream_get_u32(s);
    h.etp = h.v == CKPT_ETP_VERSION ? stream_get_u32(s) : 1;
    h.parts = stream_get_u32(s);
    return h;
}

Status ckpt_layout_peek(const char *path, const Model *m, uint32_t *version, Err *e)
{
    *version = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return ST_OK; /* the loader names the error */
    Stream s = {.f = fp, .fnv = STREAM_FNV_BASIS};
    char magic[8];
    stream_get(&s, magic, 8);
    const Head h = get_head(&s);
    const uint32_t v = h.v, tp = h.tp, pp = h.pp, dp = h.dp, ep = h.ep, parts = h.parts;
    fclose(fp);
    if (s.err || memcmp(magic, CKPT_MAGIC, 8)) return ST_OK; /* the loader says why */
    *version = v;
    char have[128], want[128];
    layout_name(want, sizeof want, tp_of(m), pp_of(m), dp_of(m), ep_of(m), etp_of(m));
    if (v != CKPT_VERSION && v != CKPT_LAYOUT_VERSION && v != CKPT_ETP_VERSION)
        return err_set(e, ST_DATA,
                       "%s: checkpoint format version %u; this fp8plan reads version %d (one model, or data-parallel "
                       "ranks alone), version %d (tensor, pipeline or expert parallelism, with data-parallel ranks "
                       "or without) and version %d (with expert tensor parallelism)%s",
                       path, v, CKPT_VERSION, CKPT_LAYOUT_VERSION, CKPT_ETP_VERSION,
                       v == 3   ? ": version 3, a part for every rank, came before rank grids; save it again"
                       : v == 2 ? ": version 2 came before the experts' fields; save it again"
                       : v == 4 ? ": version 4 came before expert-parallel parts; save it again"
                       : v == 5 || v == 6
                           ? ": versions 5 and 6 kept a sigmoid router's bias as a parameter with optimizer states, "
                             "not the FP32 buffer it is now; save it again"
                           : "");
    const int grid = v == CKPT_LAYOUT_VERSION || v == CKPT_ETP_VERSION;
    if (grid && (tp != tp_of(m) || pp != pp_of(m) || dp != dp_of(m) || ep != ep_of(m) || h.etp != etp_of(m)))
        return err_set(e, ST_DATA,
                       "%s: checkpoint (format version %u) of a %s run, each tensor/pipeline/expert-parallel rank's "
                       "part in that rank's layout; this run is %s: resume with the layout that wrote it",
                       path, v, layout_name(have, sizeof have, tp, pp, dp, ep, h.etp), want);
    if (grid && parts != parts_of(m)) { /* the layout is this run's (above) */
        char x[24] = "";
        if (h.etp > 1) snprintf(x, sizeof x, " --etp %u", h.etp);
        return err_set(e, ST_DATA,
                       "%s: the header says %u parts for --tp %u --pp %u --ep %u%s (%u expected): the file is "
                       "corrupted",
                       path, parts, tp, pp, ep, x, parts_of(m));
    }
    if (v == CKPT_ETP_VERSION && h.etp < 2) /* version 9 is written at etp > 1 only */
        return err_set(e, ST_DATA, "%s: format version 9 with etp %u in its header: the file is corrupted", path,
                       h.etp);
    if (v == CKPT_VERSION && ckpt_layout(m))
        return err_set(e, ST_DATA,
                       "%s: checkpoint (format version %d) of a run without tensor, pipeline or expert parallelism; "
                       "this run is %s: resume with the layout that wrote it",
                       path, CKPT_VERSION, want);
    return ST_OK;
}

/* The bytes of an open file (0 when it cannot be told: every part length then reads as too long). */
static uint64_t file_size(FILE *fp)
{
    long here = ftell(fp), end = fseek(fp, 0, SEEK_END) ? -1 : ftell(fp);
    if (here < 0 || fseek(fp, here, SEEK_SET) || end < here) return 0;
    return (uint64_t)end;
}

/* Read the file through, its checksum over all of it, keeping this rank's place's part in *img. */
static Status read_part(const char *path, const Model *m, uint8_t **img, uint64_t *len, Err *e)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return err_set(e, ST_NOINPUT, "%s: cannot open checkpoint: %s", path, strerror(errno));
    Stream s = {.f = fp, .fnv = STREAM_FNV_BASIS};
    uint8_t magic[8], *buf = malloc(CHUNK);
    stream_get(&s, magic, sizeof magic);
    (void)get_head(&s); /* version, tp, pp, dp, ep, (etp,) parts: ckpt_layout_peek checked them */
    Status st = buf ? ST_OK : err_set(e, ST_NOMEM, "out of memory");
    const uint32_t L = places_of(m), n = parts_of(m);
    const uint32_t me = m->stage * L + (m->tp_rank + tp_of(m) * m->dp_rank) % L;
    const uint32_t et = etp_of(m);
    uint64_t size = file_size(fp);
    for (uint32_t r = 0; !st && !s.err && r < n && r < MAX_RANKS; r++) {
        uint64_t bytes = stream_get_u64(&s);
        if (s.err) break;
        if (s.pos > size || bytes > size - s.pos) { /* a corrupted length: said before it is allocated */
            char ep_rank[48] = "";
            if (et > 1)
                snprintf(ep_rank, sizeof ep_rank, ", ep rank %u, etp rank %u", r % L / et % ep_of(m), r % L % et);
            else if (ep_of(m) > 1)
                snprintf(ep_rank, sizeof ep_rank, ", ep rank %u", r % L % ep_of(m));
            st =
                err_set(e, ST_DATA,
                        "%s: part %u (stage %u%s, tp rank %u) is %llu bytes, past the file's end (%llu bytes): the "
                        "file is corrupted or truncated",
                        path, r, r / L, ep_rank, r % L % tp_of(m), (unsigned long long)bytes, (unsigned long long)size);
            break;
        }
        if (r == me && (*img = malloc(bytes + 1)) == NULL) {
            st = err_set(e, ST_NOMEM, "%s: out of memory for part %u (%llu bytes)", path, r, (unsigned long long)bytes);
            break;
        }
        if (r == me) *len = bytes;
        for (uint64_t off = 0; !s.err && off < bytes; off += CHUNK) {
            size_t k = (size_t)(bytes - off < CHUNK ? bytes - off : CHUNK);
            stream_get(&s, r == me ? *img + off : buf, k);
        }
    }
    free(buf);
    if (!st) st = stream_check_end(&s, path, e);
    fclose(fp);
    return st;
}

Status ckpt_layout_load(const char *path, Model *m, DataState *data, Err *e)
{
    uint8_t *img = NULL;
    uint64_t len = 0;
    Status st = read_part(path, m, &img, &len, e);
    if (!st && !img)
        st = err_set(e, ST_DATA, "%s: no part for stage %u, ep rank %u, etp rank %u, tp rank %u", path, m->stage,
                     m->ep_rank, m->etp_rank, m->tp_rank);
    if (!st) st = ckpt_load_image(path, img, (size_t)len, m, data, e);
    free(img);
    return st;
}
