/* planner/plan_names.c — names of the plan's enums for reports, and their parsers (see plan.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "planner/plan_internal.h"

/* ---- names ------------------------------------------------------------------------------------------ */

static const char *const cat_names[] = {[MC_STATE] = "state",
                                        [MC_FP8_COPY] = "fp8_copy",
                                        [MC_SCALE] = "scale",
                                        [MC_ACTIVATION] = "activation",
                                        [MC_OVERHEAD] = "overhead"};
static const char *const group_names[] = {
    [GROUP_TP] = "tp",     [GROUP_CP] = "cp", [GROUP_DP] = "dp",   [GROUP_PP] = "pp",  [GROUP_EMB] = "emb",
    [GROUP_AMAX] = "amax", [GROUP_EP] = "ep", [GROUP_ETP] = "etp", [GROUP_EDP] = "edp"};
static const char *const op_names[] = {
    [OP_ALL_REDUCE] = "all-reduce", [OP_ALL_GATHER] = "all-gather", [OP_REDUCE_SCATTER] = "reduce-scatter",
    [OP_SEND_RECV] = "send/recv",   [OP_ALL_TO_ALL] = "all-to-all", [OP_BROADCAST] = "broadcast"};
static const char *const recompute_names[] = {
    [RECOMPUTE_NONE] = "none", [RECOMPUTE_SELECTIVE] = "selective", [RECOMPUTE_FULL] = "full", [RECOMPUTE_OP] = "op"};
static const char *const sharding_names[] = {[SHARD_NONE] = "none",
                                             [SHARD_DIST_OPT] = "dist-opt",
                                             [SHARD_ZERO1] = "zero1",
                                             [SHARD_ZERO2] = "zero2",
                                             [SHARD_ZERO3] = "zero3"};
static const char *const reject_names[] = {
    [REJECT_NONE] = "ok",
    [REJECT_ZERO] = "zero layout value",
    [REJECT_HEADS_TP] = "heads or kv_heads not divisible by tp",
    [REJECT_FFN_TP] = "ffn_hidden not divisible by tp",
    [REJECT_LAYERS_PP] = "layers not divisible by pp*vpp (or uneven stage counts that do not add up)",
    [REJECT_VPP] = "vpp needs pp > 1 and micro-batches divisible by pp",
    [REJECT_SEQ_CP] = "seq not divisible by 2*cp (or seq/cp by tp with SP)",
    [REJECT_SEQ_POS] = "seq longer than the learned position table",
    [REJECT_WORLD] = "world size != tp*pp*cp*dp",
    [REJECT_GBS] = "global batch not divisible by mbs*dp",
    [REJECT_HW] = "recipe needs a newer GPU",
    [REJECT_MODEL] = "invalid model or GPU spec",
    [REJECT_KNOB] = "overhead or efficiency setting out of range",
    [REJECT_OVERFLOW] = "byte count past 2^64",
    [REJECT_EP] = "ep/etp do not divide experts, expert FFN or tp*cp*dp",
    [REJECT_NONFINITE] = "step time or throughput not finite",
    [REJECT_MOMENTS] = "--moment-dtype on a recipe with scaled Adam moments",
};
_Static_assert(sizeof cat_names / sizeof *cat_names == MC_COUNT_, "cat_names");
_Static_assert(sizeof group_names / sizeof *group_names == GROUP_COUNT_, "group_names");
_Static_assert(sizeof op_names / sizeof *op_names == OP_COUNT_, "op_names");
_Static_assert(sizeof recompute_names / sizeof *recompute_names == RECOMPUTE_COUNT_, "recompute_names");
_Static_assert(sizeof sharding_names / sizeof *sharding_names == SHARD_COUNT_, "sharding_names");
static const char *const moment_names[] = {[MOMENT_RECIPE] = "recipe", [MOMENT_FP32] = "fp32", [MOMENT_BF16] = "bf16"};
_Static_assert(sizeof reject_names / sizeof *reject_names == REJECT_COUNT_, "reject_names");
_Static_assert(sizeof moment_names / sizeof *moment_names == MOMENT_COUNT_, "moment_names");

#define NAME_FN(fn, type, table, count) \
    const char *fn(type v) { return (unsigned)v < (count) ? table[v] : "?"; }
NAME_FN(mem_category_name, MemCategory, cat_names, MC_COUNT_)
NAME_FN(comm_group_name, CommGroup, group_names, GROUP_COUNT_)
NAME_FN(comm_op_name, CommOp, op_names, OP_COUNT_)
NAME_FN(recompute_name, Recompute, recompute_names, RECOMPUTE_COUNT_)
NAME_FN(sharding_name, Sharding, sharding_names, SHARD_COUNT_)
NAME_FN(plan_reject_name, PlanReject, reject_names, REJECT_COUNT_)
NAME_FN(moment_dtype_name, MomentDtype, moment_names, MOMENT_COUNT_)

static int parse_in(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(s, names[i])) return i;
    return -1;
}

int recompute_parse(const char *s, Recompute *out)
{
    int i = parse_in(recompute_names, RECOMPUTE_COUNT_, s);
    return i < 0 ? -1 : (*out = (Recompute)i, 0);
}

int sharding_parse(const char *s, Sharding *out)
{
    int i = parse_in(sharding_names, SHARD_COUNT_, s);
    return i < 0 ? -1 : (*out = (Sharding)i, 0);
}

int moment_dtype_parse(const char *s, MomentDtype *out)
{
    int i = parse_in(moment_names, MOMENT_COUNT_, s);
    return i < 0 ? -1 : (*out = (MomentDtype)i, 0);
}

const char *const recompute_mod_names[RECOMPUTE_MOD_COUNT_] = {"mla_up_proj", "moe_act", "layernorm",     "core_attn",
                                                               "mlp",         "moe",     "shared_experts"};

typedef const char *(*NameAt)(int i);
static const char *mod_name(int i) { return recompute_mod_names[i]; }
static const char *unknown_name(int i) { return plan_unknowns[i].name; }

/* A comma-separated list of the names name(0 .. n-1) into bits (bit i for name(i)); "none" = 0. */
static int parse_list(NameAt name, int n, const char *list, unsigned *out, size_t *bad_at, size_t *bad_len)
{
    *out = 0;
    if (!strcasecmp(list, "none")) return 0;
    for (const char *p = list;;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int i = 0;
        while (i < n && !(strlen(name(i)) == len && !strncmp(name(i), p, len))) i++;
        if (i == n) {
            *bad_at = (size_t)(p - list), *bad_len = len;
            return -1;
        }
        *out |= 1u << i;
        if (!q) return 0;
        p = q + 1;
    }
}

static void format_list(NameAt name, int count, unsigned bits, char *buf, size_t n)
{
    size_t k = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < count && n; i++)
        if (bits & (1u << i)) {
            int w = snprintf(buf + k, n - k, "%s%s", k ? "," : "", name(i));
            if (w < 0 || (size_t)w >= n - k) return;
            k += (size_t)w;
        }
    if (!k && n) snprintf(buf, n, "none");
}

int recompute_mods_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len)
{
    return parse_list(mod_name, RECOMPUTE_MOD_COUNT_, list, out, bad_at, bad_len);
}

void recompute_mods_format(unsigned mods, char *buf, size_t n)
{
    format_list(mod_name, RECOMPUTE_MOD_COUNT_, mods, buf, n);
}

const char *const offload_mod_names[OFFLOAD_MOD_COUNT_] = {"expert_fc1", "moe_act"};
static const char *offload_name(int i) { return offload_mod_names[i]; }

int offload_mods_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len)
{
    return parse_list(offload_name, OFFLOAD_MOD_COUNT_, list, out, bad_at, bad_len);
}

void offload_mods_format(unsigned mods, char *buf, size_t n)
{
    format_list(offload_name, OFFLOAD_MOD_COUNT_, mods, buf, n);
}

const char *const cuda_graph_scope_names[GRAPH_SCOPE_COUNT_] = {"attn", "moe_router", "moe_preprocess", "full"};
static const char *scope_name(int i) { return cuda_graph_scope_names[i]; }

int graph_scope_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len)
{
    return parse_list(scope_name, GRAPH_SCOPE_COUNT_, list, out, bad_at, bad_len);
}

void graph_scope_format(unsigned scope, char *buf, size_t n)
{
    format_list(scope_name, GRAPH_SCOPE_COUNT_, scope, buf, n);
}

/* ---- implementation choices a plan's sources leave open (plan.h PLAN_UNK_*) ---------------------------- */

const PlanUnknown plan_unknowns[PLAN_UNK_COUNT_] = {
    {"fp8_weight_cache", PLAN_UNK_FP8_WEIGHT_CACHE, "no FP8 weight copy held: each GEMM casts its weight as it runs"},
    {"attn_out", PLAN_UNK_ATTN_OUT, "no BF16 attention output beside the out-projection's FP8 input"},
    {"dense_act", PLAN_UNK_DENSE_ACT, "dense FFN saves FC1's output like moe_act, rebuilds FC2's input"},
    {"act_ckpt", PLAN_UNK_ACT_CKPT, "every layer checkpointed (as --recompute full): its input kept, rebuilt"},
    {"routing_map", PLAN_UNK_ROUTING_MAP, "MoE permutation keeps two int32 maps a row, not TE's [tok, 2E+1] map"},
};
_Static_assert(sizeof plan_unknowns / sizeof *plan_unknowns == PLAN_UNK_COUNT_, "plan_unknowns");

int plan_unknown_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len)
{
    return parse_list(unknown_name, PLAN_UNK_COUNT_, list, out, bad_at, bad_len);
}

void plan_unknown_format(unsigned bits, char *buf, size_t n)
{
    format_list(unknown_name, PLAN_UNK_COUNT_, bits, buf, n);
}

static const char *const verdict_names[] = {
    [PLAN_FITS] = "FITS", [PLAN_UNCERTAIN] = "UNCERTAIN", [PLAN_OVER_LIMIT] = "OVER LIMIT", [PLAN_OOM] = "OOM"};
_Static_assert(sizeof verdict_names / sizeof *verdict_names == PLAN_VERDICT_COUNT_, "verdict_names");
NAME_FN(plan_verdict_name, PlanVerdict, verdict_names, PLAN_VERDICT_COUNT_)

int recompute_attn_core(Recompute r, unsigned mods)
{
    return r == RECOMPUTE_SELECTIVE || (r == RECOMPUTE_NONE && (mods & RECOMPUTE_MOD_CORE_ATTN));
}

/* A plan put together by hand (an executor's measurement, a test) may name no model: a dense one. */
int plan_term_applies(const Plan *p, MemTermId id)
{
    if ((unsigned)id >= MT_COUNT_) return 0;
    if (id < MT_WEIGHT_EXPERT) return 1;
    const ModelSpec *md = p->in.model;
    return md && spec_is_moe(md) && (id != MT_ROUTER_BIAS || md->router == ROUTER_SIGMOID);
}

int plan_coll_applies(const Plan *p, CollectiveId id)
{
    if ((unsigned)id >= CO_COUNT_) return 0;
    if (id == CO_EP_COUNTS && !(p->in.gpu && p->in.gpu->host)) return 0; /* the executor's, on a host profile */
    if ((id == CO_EDP_AMAX_AR || id == CO_ETP_AMAX_AR) && p->in.fusion != FUSE_FP8PLAN) return 0; /* the executor's */
    CommGroup g = coll_group(id);
    return !(g == GROUP_EP || g == GROUP_ETP || g == GROUP_EDP) || (p->in.model && spec_is_moe(p->in.model));
}
