/* import/map_layout.c — Megatron-Core's custom pipeline layout (see map_layout.h). */
#include "import/map_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "planner/plan.h"

#define TRY(x)               \
    do {                     \
        Status st_ = (x);    \
        if (st_) return st_; \
    } while (0)

enum { LAYOUT_MAX = 1 << 20 }; /* letters a layout may unroll to (layers are at most 100000) */

/* ---- the string form: PipelineParallelLayerLayout.parse_str_to_list's three rewrites ------------------------ */

typedef struct {
    char *out;
    size_t n;
    int bad; /* 1: longer than LAYOUT_MAX */
} Buf;

static void put(Buf *b, const char *s, size_t len, unsigned long times)
{
    for (unsigned long t = 0; t < times && !b->bad; t++) {
        if (b->n + len > LAYOUT_MAX) return (void)(b->bad = 1);
        memcpy(b->out + b->n, s, len), b->n += len;
    }
}

/* digits at s: their value (0 when none or past LAYOUT_MAX, which is then too long anyway) and their end */
static unsigned long count_at(const char *s, const char **end)
{
    unsigned long v = 0;
    *end = s;
    while (**end >= '0' && **end <= '9') {
        if (v <= LAYOUT_MAX) v = v * 10 + (unsigned long)(**end - '0');
        (*end)++;
    }
    return *end == s ? 0 : v > LAYOUT_MAX ? LAYOUT_MAX + 1ul : v;
}

/* One left-to-right pass of re.sub: paren 1 rewrites "(x)*n" (x without ')'), paren 0 rewrites "c*n". */
static void unroll(const char *in, size_t len, int paren, Buf *b)
{
    size_t i = 0;
    while (i < len && !b->bad) {
        const char *end;
        if (paren && in[i] == '(') {
            const char *close = memchr(in + i + 1, ')', len - i - 1);
            if (close && close > in + i + 1 && close + 1 < in + len && close[1] == '*') {
                unsigned long k = count_at(close + 2, &end);
                if (end > close + 2) {
                    put(b, in + i + 1, (size_t)(close - in - i - 1), k);
                    i = (size_t)(end - in);
                    continue;
                }
            }
        } else if (!paren && i + 2 < len && in[i + 1] == '*') {
            unsigned long k = count_at(in + i + 2, &end);
            if (end > in + i + 2) {
                put(b, in + i, 1, k);
                i = (size_t)(end - in);
                continue;
            }
        }
        put(b, in + i, 1, 1);
        i++;
    }
}

/* The layout's letters ("Etttt|tttt|...|tmL") into *out (malloc'd), or ST_DATA naming the setting. */
static Status letters(const ImportResult *r, const ImportLayout *l, char **out, size_t *n, Err *e)
{
    const ImportKv *kv = l->kv;
    char *a = malloc(LAYOUT_MAX + 1), *b = malloc(LAYOUT_MAX + 1);
    if (!a || !b) return free(a), free(b), err_set(e, ST_NOMEM, "out of memory reading %s", r->path);
    if (l->nchunk) { /* the list form: the chunks' letters already */
        memcpy(a, l->list, l->nlist), *n = l->nlist;
        free(b);
        return *out = a, ST_OK;
    }
    size_t m = 0;
    for (const char *p = kv->val; *p; p++)
        if (*p != ',') a[m++] = *p; /* commas are cosmetic */
    a[m] = '\0';                    /* a count at the end is read up to a non-digit */
    Buf x = {b, 0, 0}, y = {a, 0, 0};
    unroll(a, m, 1, &x);
    b[x.n] = '\0';
    if (!x.bad) unroll(b, x.n, 0, &y);
    free(b);
    if (x.bad || y.bad)
        return free(a), err_set(e, ST_DATA, "%s:%d: %s: '%s' unrolls to more than %d layers and chunks", r->path,
                                kv->line, kv->key, kv->val, LAYOUT_MAX);
    for (size_t i = 0; i < y.n; i++)
        if (!a[i] || !strchr("ELtm|", a[i])) {
            char c = a[i];
            free(a);
            return err_set(e, ST_DATA,
                           "%s:%d: %s: '%s': '%c' is not a layer (E embedding, t decoder, m MTP, L loss; '|' ends a "
                           "chunk, (...)*n and x*n repeat; one level of parentheses)",
                           r->path, kv->line, kv->key, kv->val, c);
        }
    return *out = a, *n = y.n, ST_OK;
}

/* ---- the list form: one chunk a setting (Megatron-Bridge's YAML list of lists of LayerType names) ------------- */

static Status list_chunk(ImportResult *r, const ImportKv *kv, ImportLayout *l, Err *e)
{
    static const char *const names[][2] = {{"embedding", "E"}, {"decoder", "t"}, {"mtp", "m"}, {"loss", "L"}};
    if (!l->kv) l->kv = kv;
    if (l->nchunk && l->nlist + 1 < sizeof l->list) l->list[l->nlist++] = '|';
    l->nchunk++;
    char v[IMPORT_VAL_MAX];
    snprintf(v, sizeof v, "%s", kv->val);
    for (char *w = strtok(v, ","); w; w = strtok(NULL, ",")) {
        while (*w == ' ') w++;
        size_t k = strlen(w);
        while (k && w[k - 1] == ' ') w[--k] = '\0';
        const char *c = NULL;
        for (size_t i = 0; i < sizeof names / sizeof *names && !c; i++)
            if (!strcasecmp(w, names[i][0])) c = names[i][1];
        if (!c)
            return err_set(e, ST_DATA,
                           "%s:%d: %s: '%s' is not a layer Megatron-Core places (embedding, decoder, mtp, "
                           "loss; encoder layers are not supported in a custom layout)",
                           r->path, kv->line, kv->key, w);
        if (l->nlist + 1 >= sizeof l->list)
            return err_set(e, ST_DATA, "%s:%d: %s: the layout has more than %d layers and chunks", r->path, kv->line,
                           kv->key, IMPORT_LAYOUT_LIST_MAX - 1);
        l->list[l->nlist++] = *c;
    }
    return import_note(r, kv, 0, e, "layout chunk %u (the layout below)", l->nchunk - 1);
}

int import_layout_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportLayout *l, Status *st, Err *e)
{
    if (!strcmp(a, "--decoder-first-pipeline-num-layers") || !strcmp(a, "--first-pipeline-num-layers"))
        return l->first_kv = kv, 0;
    if (!strcmp(a, "--decoder-last-pipeline-num-layers") || !strcmp(a, "--last-pipeline-num-layers"))
        return l->last_kv = kv, 0;
    if (!strcmp(a, "--num-layers-per-virtual-pipeline-stage")) return l->vstage_kv = kv, 0;
    if (!strcmp(a, "--virtual-pipeline-model-parallel-size")) return l->vpp_kv = kv, 0;
    if (!strcmp(a, "--num-virtual-stages-per-pipeline-rank")) { /* arguments.py: the virtual stages, as --vpp */
        l->nvs_kv = kv;
        if ((*st = import_u32(r, kv, 1, 100000, &l->nvs, e))) return 1;
        char v[16];
        snprintf(v, sizeof v, "%u", l->nvs);
        if ((*st = import_flag(r, "--vpp", v, e))) return 1;
        return *st = import_note(r, kv, 0, e, "--vpp %u", l->nvs), 1;
    }
    if (!strcmp(a, "--bridge-layout-chunk")) return *st = list_chunk(r, kv, l, e), 1;
    if (!strcmp(a, "--account-for-embedding-in-pipeline-split") || !strcmp(a, "--account-for-loss-in-pipeline-split")) {
        if (import_true(kv->val) == 0) return *st = import_note(r, kv, 1, e, "ignored: false"), 1;
        if (strstr(a, "embedding"))
            l->emb_kv = kv;
        else
            l->loss_kv = kv;
        return *st = ST_OK, 1; /* noted with the split after every setting */
    }
    if (strcmp(a, "--pipeline-model-parallel-layout")) return 0;
    if (!kv->val[0] && l->nchunk)               /* the list form's own key, after its chunks */
        return l->list_kv = kv, *st = ST_OK, 1; /* noted with its flags after every setting */
    if (!kv->val[0]) return *st = err_set(e, ST_DATA, "%s:%d: %s: an empty layout", r->path, kv->line, kv->key), 1;
    l->kv = kv; /* noted with its flags after every setting */
    return *st = ST_OK, 1;
}

/* ---- after every setting ------------------------------------------------------------------------------------ */

static Status conflict(const ImportResult *r, const ImportLayout *l, Err *e)
{
    const ImportKv *o = l->first_kv    ? l->first_kv
                        : l->last_kv   ? l->last_kv
                        : l->vstage_kv ? l->vstage_kv
                        : l->nvs_kv    ? l->nvs_kv
                        : l->emb_kv    ? l->emb_kv
                                       : l->loss_kv;
    if (!o) return ST_OK;
    return err_set(e, ST_DATA,
                   "%s:%d: %s: not with a pipeline layout (line %d, %s): Megatron-Core takes the stages from one of "
                   "them",
                   r->path, o->line, o->key, l->kv->line, l->kv->key);
}

/* Megatron-Core's validate_layer_layout: the embedding first, the loss last, each once; the decoder and MTP counts
 * the model's; MTP after every decoder layer and in the last chunk, with the loss. */
static Status check_order(const ImportResult *r, const ImportLayout *l, const char *s, size_t n, size_t last_chunk,
                          int have_dims, unsigned layers, unsigned mtp, Err *e)
{
    size_t nE = 0, nL = 0, nt = 0, nm = 0, first_m = n;
    for (size_t i = 0; i < n; i++) {
        nE += s[i] == 'E', nL += s[i] == 'L', nt += s[i] == 't';
        if (s[i] == 'm' && !nm++) first_m = i;
    }
    const ImportKv *kv = l->kv;
    const char *why = NULL;
    char buf[160];
    if (!n || s[0] != 'E')
        why = "the first layer must be the embedding (E)";
    else if (s[n - 1] != 'L')
        why = "the last layer must be the loss (L)";
    else if (nE != 1 || nL != 1)
        why = "the embedding and the loss each appear once";
    else if (memchr(s + first_m, 't', n - first_m))
        why = "a decoder layer after an MTP layer";
    else if (nm && first_m < last_chunk) /* core_v0.16.0 lets them end another rank's chunks (MTP standalone) */
        why = "MTP layers before the last chunk: the planner places MTP on the last stage, with the loss";
    else if (have_dims && nt != layers)
        snprintf(buf, sizeof buf, "%zu decoder layers, not --num-layers %u", nt, layers), why = buf;
    else if (have_dims && nm != mtp)
        snprintf(buf, sizeof buf, "%zu MTP layers, not --mtp-num-layers %u", nm, mtp), why = buf;
    if (!why) return ST_OK;
    return err_set(e, ST_DATA, "%s:%d: %s: %s (Megatron-Core's validate_layer_layout)", r->path, kv->line, kv->key,
                   why);
}

/* Decoder layers per pipeline rank (chunk c on rank c mod pp) into cnt[0..pp). */
static size_t per_rank(const char *s, size_t n, unsigned pp, unsigned *cnt, size_t *last_chunk)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '|')
            c++, *last_chunk = i;
        else if (s[i] == 't')
            cnt[c % pp]++;
    return c + 1;
}

static Status refuse_split(const ImportResult *r, const ImportKv *kv, const char *why, unsigned f, unsigned mid,
                           unsigned l, unsigned vpp, Err *e)
{
    return err_set(e, ST_DATA, "%s:%d: %s: %s (first rank %u, middle %u, last %u decoder layers over %u chunk%s each)",
                   r->path, kv->line, kv->key, why, f, mid, l, vpp, vpp > 1 ? "s" : "");
}

static Status split_flags(ImportResult *r, const ImportLayout *l, const unsigned *cnt, unsigned pp, unsigned vpp,
                          Err *e)
{
    const ImportKv *kv = l->kv;
    unsigned f = cnt[0], last = cnt[pp - 1], mid = pp > 2 ? cnt[1] : 0;
    for (unsigned i = 2; i + 1 < pp; i++)
        if (cnt[i] != mid)
            return err_set(e, ST_DATA,
                           "%s:%d: %s: pipeline ranks 1 and %u hold %u and %u decoder layers: the planner's middle "
                           "stages are equal (only the first and the last may differ)",
                           r->path, kv->line, kv->key, i, mid, cnt[i]);
    if (!f || !last)
        return refuse_split(r, kv,
                            "an end rank without decoder layers: the planner's first and last stages hold one at least",
                            f, mid, last, vpp, e);
    /* plan_stage_split's rule: a middle rank holds vpp layers at least, an end rank vpp - 1 where the split is one
     * Megatron can interleave (an embedding- or loss-only chunk), else vpp */
    unsigned ends = vpp > 1 && (pp < 3 || mid >= vpp) && plan_vpp_split_ok(pp, vpp, f, mid, last) ? vpp - 1 : vpp;
    if (vpp > 1 && (f < ends || last < ends || (pp > 2 && mid < vpp)))
        return refuse_split(r, kv, "a rank with fewer decoder layers than chunks: the planner needs one a chunk", f,
                            mid, last, vpp, e);
    char v[16];
    snprintf(v, sizeof v, "%u", f);
    TRY(import_flag(r, "--first-stage-layers", v, e));
    snprintf(v, sizeof v, "%u", last);
    TRY(import_flag(r, "--last-stage-layers", v, e));
    TRY(import_flag(r, "--custom-pp-layout", NULL, e));
    char vp[24] = "";
    if (vpp > 1) snprintf(vp, sizeof vp, "--vpp %u ", vpp);
    if (vpp > 1 && !l->vpp_kv) {
        snprintf(v, sizeof v, "%u", vpp);
        TRY(import_flag(r, "--vpp", v, e));
    }
    return import_note(r, l->list_kv ? l->list_kv : kv, 0, e,
                       "%u chunks on %u ranks: %s--first-stage-layers %u --last-stage-layers %u (the middle ranks %u "
                       "each) --custom-pp-layout",
                       pp * vpp, pp, vp, f, last, mid);
}

/* Megatron-Core's even split with the embedding and / or the loss counted as a layer: (L + e + l) / pp = s a rank,
 * the first rank s - e decoder layers, the last s - l. */
static Status accounted(ImportResult *r, const ImportLayout *l, unsigned pp, unsigned layers, Err *e)
{
    const ImportKv *kv = l->emb_kv ? l->emb_kv : l->loss_kv, *o = l->first_kv ? l->first_kv : l->last_kv;
    unsigned ne = l->emb_kv != NULL, nl = l->loss_kv != NULL;
    if (o)
        return err_set(e, ST_DATA, "%s:%d: %s: not with %s (line %d): Megatron-Core takes one of them", r->path,
                       kv->line, kv->key, o->key, o->line);
    if (pp == 1) {
        if (l->emb_kv) TRY(import_note(r, l->emb_kv, 1, e, "ignored: one pipeline stage"));
        return l->loss_kv ? import_note(r, l->loss_kv, 1, e, "ignored: one pipeline stage") : ST_OK;
    }
    if (!layers)
        return err_set(e, ST_DATA, "%s:%d: %s: the file gives no --num-layers to split", r->path, kv->line, kv->key);
    uint64_t total = (uint64_t)layers + ne + nl, s = total / pp;
    if (total % pp)
        return err_set(e, ST_DATA, "%s:%d: %s: --num-layers %u + %u is not a multiple of the pipeline's %u ranks",
                       r->path, kv->line, kv->key, layers, ne + nl, pp);
    if (s <= 1)
        return err_set(e, ST_DATA, "%s:%d: %s: %llu layers a rank leave an end rank without decoder layers", r->path,
                       kv->line, kv->key, (unsigned long long)s);
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)(s - ne));
    TRY(import_flag(r, "--first-stage-layers", v, e));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(s - nl));
    TRY(import_flag(r, "--last-stage-layers", v, e));
    const ImportKv *both[2] = {l->emb_kv, l->loss_kv};
    for (int i = 0; i < 2; i++)
        if (both[i])
            TRY(import_note(r, both[i], 0, e,
                            "(%u + %u) / %u = %llu a rank: --first-stage-layers %llu --last-stage-layers %llu", layers,
                            ne + nl, pp, (unsigned long long)s, (unsigned long long)(s - ne),
                            (unsigned long long)(s - nl)));
    return ST_OK;
}

Status import_layout_finish(ImportResult *r, const ImportLayout *l, unsigned pp, int have_dims, unsigned layers,
                            unsigned mtp, Err *e)
{
    if (!l->kv && (l->emb_kv || l->loss_kv)) return accounted(r, l, pp, layers, e);
    if (!l->kv) return ST_OK;
    TRY(conflict(r, l, e));
    char *s = NULL;
    size_t n = 0;
    TRY(letters(r, l, &s, &n, e));
    unsigned *cnt = calloc(pp, sizeof *cnt);
    if (!cnt) return free(s), err_set(e, ST_NOMEM, "out of memory reading %s", r->path);
    size_t last_chunk = 0, chunks = per_rank(s, n, pp, cnt, &last_chunk);
    const ImportKv *kv = l->kv;
    Status st = check_order(r, l, s, n, last_chunk, have_dims, layers, mtp, e);
    unsigned vpp = (unsigned)(chunks / pp), given = l->vpp_kv ? (unsigned)strtoul(l->vpp_kv->val, NULL, 10) : 0;
    if (!st && chunks % pp)
        st = err_set(e, ST_DATA, "%s:%d: %s: %zu chunks is not a multiple of the pipeline's %u ranks", r->path,
                     kv->line, kv->key, chunks, pp);
    else if (!st && l->vpp_kv && given != vpp)
        st = err_set(e, ST_DATA, "%s:%d: %s %u: the layout (line %d) has %zu chunks on %u ranks, %u each", r->path,
                     l->vpp_kv->line, l->vpp_kv->key, given, kv->line, chunks, pp, vpp);
    else if (!st && pp == 1 && vpp > 1)
        st = err_set(e, ST_DATA, "%s:%d: %s: %u chunks on one pipeline rank: virtual stages need a pipeline", r->path,
                     kv->line, kv->key, vpp);
    else if (!st && pp == 1)
        st = import_note(r, l->list_kv ? l->list_kv : kv, 0, e, "one stage: every layer (no flag)");
    else if (!st)
        st = split_flags(r, l, cnt, pp, vpp, e);
    free(cnt);
    free(s);
    return st;
}
