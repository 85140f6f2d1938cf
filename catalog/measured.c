/* catalog/measured.c — models/measured.csv into MeasuredRun rows (see measured.h). */
#include "catalog/measured.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/catalog_cells.h"
#include "util/num.h"

const char *const measured_columns =
    "id,source_id,stack,model,gpu,gpus,tp,pp,vpp,cp,dp,mbs,gbs,seq,recipe,sharding,recompute,first_stage_layers,"
    "last_stage_layers,sequence_parallel,dropout,attention,kernel_fusion,fused_swiglu,tp_overlap,main_grad,grad_acc_"
    "fusion,tokens_"
    "per_s_per_gpu,step_s,tflops_per_gpu,mfu_pct,mem_gib,mem_kind,notes,source";

static const char *const kind_names[] = {
    [MEMK_NONE] = "", [MEMK_ALLOCATED] = "allocated", [MEMK_RESERVED] = "reserved", [MEMK_SMI] = "smi"};
_Static_assert(sizeof kind_names / sizeof *kind_names == MEMK_COUNT_, "kind_names");

const char *mem_kind_name(MemKind k) { return (unsigned)k < MEMK_COUNT_ ? kind_names[k] : "?"; }

static int blank(Cur *c, const char *col) { return !cell_text(c, col)[0]; }

/* A whole number in [lo, hi], or def when blank. */
static Status opt_u32(Cur *c, const char *col, uint32_t def, uint32_t lo, uint32_t hi, uint32_t *out)
{
    if (blank(c, col)) return *out = def, ST_OK;
    return cell_u32(c, col, lo, hi, out);
}

/* What one GPU of a real training run can show: a measured cell outside is a typo or a unit slip (1e-300
 * tokens/s once printed a 300-digit error over six lines), refused with file, row, column and value (65).
 *  tokens/s per GPU [1e-3, 1e9]: below, one token per 17 minutes (a 2,048-token sequence a day on one GPU);
 *    above, a token's step costs at least 6 FLOPs per parameter, so even a 1M-parameter model would need
 *    6e15 FLOP/s, above every part's dense FP8 peak (B200: 4.5e15). A rate derived from step_s is held to it too.
 *  step_s [1e-6, 1e7]: a step launches at least one kernel (microseconds); 1e7 s is 116 days for one step.
 *  tflops_per_gpu [1e-6, 1e5]: 1 MFLOP/s is below any processor; 1e5 TFLOP/s is 20 x the densest FP8 peak.
 *  mfu_pct [1e-6, 100]: model FLOPs are a share of the peak, so never above 100 %.
 *  mem_gib [1e-6, 16384]: 1 KiB is less than any model's weights; 16 TiB is above any GPU's memory (B300:
 *    288 GB) and any single host's.
 *  gbs [1, 2^24] sequences: the largest published global batches are tens of thousands of sequences; 2^24
 *    is also the bound of every other count of the file. */
#define TOK_S_MIN 1e-3
#define TOK_S_MAX 1e9
#define GBS_MAX   (1u << 24)

/* A number in [lo, hi], or NAN when blank. */
static Status opt_range(Cur *c, const char *col, double lo, double hi, double *out)
{
    if (blank(c, col)) return *out = NAN, ST_OK;
    return cell_range(c, col, lo, hi, out);
}

/* yes, no, or blank (-1). */
static Status opt_yesno(Cur *c, const char *col, int *out)
{
    if (blank(c, col)) return *out = -1, ST_OK;
    return cell_yesno(c, col, out);
}

/* The run's own configuration cells (blank = its stack's value). */
static Status parse_config(Cur *c, MeasuredRun *r)
{
    Status st;
    if ((st = opt_yesno(c, "sequence_parallel", &r->sp)) || (st = opt_yesno(c, "dropout", &r->dropout)) ||
        (st = opt_yesno(c, "fused_swiglu", &r->swiglu)) || (st = opt_yesno(c, "tp_overlap", &r->tp_overlap)) ||
        (st = opt_yesno(c, "grad_acc_fusion", &r->grad_acc)))
        return st;
    r->attn = ATTN_COUNT_, r->fusion = FUSE_COUNT_, r->main_grad = MAIN_GRAD_COUNT_;
    if (!blank(c, "attention") && attn_parse(cell_text(c, "attention"), &r->attn))
        return cell_bad(c, "attention", "'%s' is not flash2, flash3, cudnn, te, materialized or blank",
                        cell_text(c, "attention"));
    if (!blank(c, "kernel_fusion") && fusion_parse(cell_text(c, "kernel_fusion"), &r->fusion))
        return cell_bad(c, "kernel_fusion", "'%s' is not te, compile, eager, fp8plan or blank",
                        cell_text(c, "kernel_fusion"));
    if (!blank(c, "main_grad") && main_grad_parse(cell_text(c, "main_grad"), &r->main_grad))
        return cell_bad(c, "main_grad", "'%s' is not recipe, fp32, bf16 or blank", cell_text(c, "main_grad"));
    return ST_OK;
}

/* found, or "'X' is not a WHAT in the catalog (known: ...)" with the names `names` lists. */
static Status name_of(Cur *c, const char *col, const void *found, const char *what,
                      void (*names)(const Catalog *, char *, size_t))
{
    if (found) return ST_OK;
    char list[1024];
    names(c->ctx, list, sizeof list);
    return cell_bad(c, col, "'%.60s' is not a %s in the catalog (known: %.300s)", cell_text(c, col), what, list);
}

/* "... ep=64 etp=1 ..." in the notes: the expert layout (the header has no column for it). 0: found or absent. */
static Status note_u32(Cur *c, const char *key, uint32_t *out)
{
    const char *notes = cell_text(c, "notes"), *p = notes;
    size_t kl = strlen(key);
    while ((p = strstr(p, key))) {
        if (p == notes || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '_')) {
            char *end;
            unsigned long v = strtoul(p + kl, &end, 10);
            if (end == p + kl || v == 0 || v > (1u << 24))
                return cell_bad(c, "notes", "'%s' must be followed by a whole number in [1, 16777216]", key);
            *out = (uint32_t)v;
            return ST_OK;
        }
        p += kl;
    }
    return ST_OK;
}

/* The value of "KEY=value" in the notes, up to the first of `stops`, into buf: 1 found (0 absent); -1 when the
 * value is empty or longer than buf holds. */
static int note_value(Cur *c, const char *key, const char *stops, char *buf, size_t size)
{
    const char *p = strstr(cell_text(c, "notes"), key);
    if (!p) return 0;
    p += strlen(key);
    size_t n = strcspn(p, stops);
    if (!n || n >= size) return -1;
    memcpy(buf, p, n), buf[n] = '\0';
    return 1;
}

/* "... KEY=a,b ..." in the notes: a list of names the planner parses into bits (parse, with format listing the
 * known ones from all; `a` is the article a message puts before `what`); the list ends at a space, ';' or the
 * end. Absent: 0. Keys: recompute_modules= (Megatron's --recompute-modules), cuda_graph_scope=, offload_modules=
 * (Megatron's --offload-modules), unknown= (the implementation choices the source leaves open, plan --unknown). */
static Status note_bits(Cur *c, const char *key, const char *a, const char *what,
                        int (*parse)(const char *, unsigned *, size_t *, size_t *),
                        void (*format)(unsigned, char *, size_t), unsigned all, unsigned *out)
{
    char list[160];
    int got = note_value(c, key, " ;\t\n", list, sizeof list);
    *out = 0;
    if (got < 0) return cell_bad(c, "notes", "'%s' must be followed by a comma-separated list of %ss", key, what);
    size_t at, len;
    if (got && parse(list, out, &at, &len)) {
        char known[160];
        format(all, known, sizeof known);
        return cell_bad(c, "notes", "%s'%.60s': '%.*s' is not %s %s (known: %s)", key, list, (int)len, list + at, a,
                        what, known);
    }
    return ST_OK;
}

/* "... KEY=F ..." in the notes: a number in [lo, hi] (range: how a message says it); absent: *out = -1. */
static Status note_range(Cur *c, const char *key, double lo, double hi, const char *range, double *out)
{
    char num[32];
    int got = note_value(c, key, " ;:,)\t", num, sizeof num);
    double v;
    Err ne;
    *out = -1;
    if (got < 0) return cell_bad(c, "notes", "'%s' must be followed by %s", key, range);
    if (!got) return ST_OK;
    if (num_parse_double(num, NUM_FINITE_ONLY, &v, &ne) || !(v >= lo && v <= hi))
        return cell_bad(c, "notes", "'%s' must be followed by %s (got '%s')", key, range, num);
    *out = v;
    return ST_OK;
}

/* "... dispatcher=deepep ..." in the notes: the run's MoE token dispatcher (plan --moe-dispatcher): alltoall,
 * deepep or hybridep (the last two hierarchical: once per remote node; DeepEP once per GPU too); absent: alltoall. */
static Status note_dispatcher(Cur *c, int *dedup)
{
    static const char key[] = "dispatcher=";
    char v[32];
    int got = note_value(c, key, " ;:,)\t", v, sizeof v);
    *dedup = 0;
    if (!got) return ST_OK;
    if (got > 0 && (!strcmp(v, "alltoall") || !strcmp(v, "deepep") || !strcmp(v, "hybridep"))) {
        *dedup = !strcmp(v, "deepep") ? MOE_DISPATCH_DEEPEP : !strcmp(v, "hybridep") ? MOE_DISPATCH_HYBRIDEP : 0;
        return ST_OK;
    }
    return cell_bad(c, "notes", "'%s' must be followed by alltoall, deepep or hybridep", key);
}

static Status parse_run(Cur *c, void *row)
{
    const Catalog *cat = c->ctx;
    MeasuredRun *r = row;
    memset(r, 0, sizeof *r);
    Status st;
    if ((st = cell_textcopy(c, "id", r->id, sizeof r->id, 1)) ||
        (st = cell_textcopy(c, "source_id", r->source_id, sizeof r->source_id, 1)))
        return st;
    r->stack = catalog_stack(cat, cell_text(c, "stack"));
    r->model = catalog_model(cat, cell_text(c, "model"));
    r->gpu = catalog_gpu(cat, cell_text(c, "gpu"));
    r->recipe = catalog_recipe(cat, cell_text(c, "recipe"));
    if ((st = name_of(c, "stack", r->stack, "stack", catalog_stack_names)) ||
        (st = name_of(c, "model", r->model, "model", catalog_model_names)) ||
        (st = name_of(c, "gpu", r->gpu, "GPU", catalog_gpu_names)) ||
        (st = name_of(c, "recipe", r->recipe, "recipe", catalog_recipe_names)))
        return st;
    const uint32_t BIG = 1u << 24;
    if ((st = cell_u32(c, "gpus", 1, BIG, &r->gpus)) || (st = cell_u32(c, "tp", 1, BIG, &r->tp)) ||
        (st = cell_u32(c, "pp", 1, BIG, &r->pp)) || (st = opt_u32(c, "vpp", 1, 1, BIG, &r->vpp)) ||
        (st = opt_u32(c, "cp", 1, 1, BIG, &r->cp)) || (st = cell_u32(c, "dp", 1, BIG, &r->dp)) ||
        (st = opt_u32(c, "mbs", 0, 1, BIG, &r->mbs)) || (st = cell_u32(c, "seq", 1, BIG, &r->seq)) ||
        (st = opt_u32(c, "first_stage_layers", 0, 1, BIG, &r->first)) ||
        (st = opt_u32(c, "last_stage_layers", 0, 1, BIG, &r->last)) ||
        (st = opt_range(c, "tokens_per_s_per_gpu", TOK_S_MIN, TOK_S_MAX, &r->tok_s_gpu)) ||
        (st = opt_range(c, "step_s", 1e-6, 1e7, &r->step_s)) ||
        (st = opt_range(c, "tflops_per_gpu", 1e-6, 1e5, &r->tflops)) ||
        (st = opt_range(c, "mfu_pct", 1e-6, 100, &r->mfu_pct)) ||
        (st = opt_range(c, "mem_gib", 1e-6, 16384, &r->mem_gib)))
        return st;
    if (!blank(c, "gbs") && (st = cell_count(c, "gbs", &r->gbs))) return st;
    if (r->gbs > GBS_MAX) return cell_bad(c, "gbs", "'%s' is out of range [1, %u]", cell_text(c, "gbs"), GBS_MAX);
    if (sharding_parse(cell_text(c, "sharding"), &r->sharding))
        return cell_bad(c, "sharding", "'%s' is not none, dist-opt, zero1, zero2 or zero3", cell_text(c, "sharding"));
    if (recompute_parse(cell_text(c, "recompute"), &r->recompute))
        return cell_bad(c, "recompute", "'%s' is not none, selective, full or op", cell_text(c, "recompute"));
    const char *k = cell_text(c, "mem_kind");
    r->mem_kind = MEMK_COUNT_;
    for (int i = 0; i < MEMK_COUNT_; i++)
        if (!strcasecmp(k, kind_names[i])) r->mem_kind = (MemKind)i;
    if (r->mem_kind == MEMK_COUNT_) return cell_bad(c, "mem_kind", "'%s' is not allocated, reserved, smi or blank", k);
    if ((st = parse_config(c, r))) return st;
    if ((uint64_t)r->tp * r->pp * r->cp * r->dp != r->gpus)
        return cell_bad(c, "gpus", "'%s' != tp*pp*cp*dp = %u*%u*%u*%u", cell_text(c, "gpus"), r->tp, r->pp, r->cp,
                        r->dp);
    r->ep = r->etp = 1;
    if ((st = note_u32(c, "ep=", &r->ep)) || (st = note_u32(c, "etp=", &r->etp)) ||
        (st = note_bits(c, "recompute_modules=", "a", "module", recompute_mods_parse, recompute_mods_format,
                        RECOMPUTE_MOD_ALL_, &r->recompute_mods)) ||
        (st = note_bits(c, "cuda_graph_scope=", "a", "CUDA graph scope", graph_scope_parse, graph_scope_format,
                        GRAPH_SCOPE_ALL_, &r->graph_scope)) ||
        (st = note_bits(c, "offload_modules=", "an", "offload module", offload_mods_parse, offload_mods_format,
                        OFFLOAD_MOD_ALL_, &r->offload_mods)) ||
        (st = note_range(c, "overlap_ep=", 0, 1, "a fraction in [0, 1]", &r->overlap_ep)) ||
        (st = note_range(c, "moe_capacity=", 1e-3, 64, "a capacity factor in (0, 64]", &r->moe_capacity)) ||
        (st = note_dispatcher(c, &r->moe_dedup)) ||
        (st = note_bits(c, "unknown=", "an", "implementation choice", plan_unknown_parse, plan_unknown_format,
                        PLAN_UNK_ALL_, &r->unknown)) ||
        (st = note_u32(c, "dualpipe=", &r->dualpipe)) || (st = note_u32(c, "ep_comm_sms=", &r->ep_comm_sms)) ||
        (st = note_u32(c, "te_op_fuser=", &r->fused_mlp)))
        return st;
    if (r->dualpipe > 1) return cell_bad(c, "notes", "'dualpipe=' must be 1 (DeepSeek-V3's DualPipe schedule)");
    if (r->fused_mlp > 1)
        return cell_bad(c, "notes", "'te_op_fuser=' must be 1 (the experts as Transformer Engine's fused ops)");
    r->custom_pp_layout = strstr(cell_text(c, "notes"), "pp_layout=custom") != NULL;
    if (r->model->experts && !strstr(cell_text(c, "notes"), "ep="))
        return cell_bad(c, "notes",
                        "a run of %s (a model with experts) states its expert layout as 'ep=N' (and "
                        "'etp=N' when not 1)",
                        r->model->name);
    if (isnan(r->tok_s_gpu) && isnan(r->step_s) && isnan(r->mem_gib))
        return cell_bad(c, "tokens_per_s_per_gpu", "the row publishes neither throughput, step time nor memory");
    double derived = measured_tokens(r);
    if (isnan(r->tok_s_gpu) && !isnan(derived) && !(derived >= TOK_S_MIN && derived <= TOK_S_MAX))
        return cell_bad(c, "step_s",
                        "'%s' gives gbs x seq / step_s / gpus = %g tokens/s per GPU, out of range [%g, %g]",
                        cell_text(c, "step_s"), derived, TOK_S_MIN, TOK_S_MAX);
    return ST_OK;
}

Status measured_parse(const Catalog *c, const char *text, size_t len, const char *fname, MeasuredRun *runs, int *n,
                      Err *e)
{
    return cell_parse_all(text, len, fname, measured_columns, "id", parse_run, c, runs, sizeof *runs, MEASURED_MAX_RUNS,
                          n, e);
}

double measured_tokens(const MeasuredRun *r)
{
    if (!isnan(r->tok_s_gpu)) return r->tok_s_gpu;
    if (!isnan(r->step_s) && r->gbs) return (double)r->gbs * r->seq / r->step_s / r->gpus;
    return NAN;
}
