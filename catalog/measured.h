/* catalog/measured.h — published measured training runs (models/measured.csv).
 *
 * One row per run: which stack ran which model on which GPUs with which layout
 * and recipe, and what it measured (tokens/s per GPU or step time, memory with
 * its kind). The header must name exactly measured_columns; names must exist in
 * the catalog; numbers follow util/num.h; blank cells are "not published".
 * Errors name the file, row and column and quote the value (ST_DATA). */
#ifndef FP8PLAN_CATALOG_MEASURED_H
#define FP8PLAN_CATALOG_MEASURED_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "planner/layout.h"
#include "util/status.h"

enum { MEASURED_MAX_RUNS = 512, MEASURED_ID_MAX = 64 };

/* What a published memory figure counts: the caching allocator's allocated or
 * reserved peak, or the device total (nvidia-smi, or not stated). */
typedef enum { MEMK_NONE = 0, MEMK_ALLOCATED, MEMK_RESERVED, MEMK_SMI, MEMK_COUNT_ } MemKind;

typedef struct {
    char id[MEASURED_ID_MAX], source_id[MEASURED_ID_MAX];
    const StackSpec *stack;
    const ModelSpec *model;
    const GpuSpec *gpu;
    const Recipe *recipe;
    uint32_t gpus, tp, pp, vpp, cp, dp, mbs, seq, first, last; /* mbs 0 = not published (1 is planned) */
    uint32_t ep, etp;     /* expert layout, from "ep=N" / "etp=N" in the notes (1 when absent; required with experts) */
    int custom_pp_layout; /* "pp_layout=custom" in the notes: layers placed chunk by chunk (--custom-pp-layout) */
    uint64_t gbs;         /* 0 = not published */
    Sharding sharding;
    Recompute recompute;
    unsigned recompute_mods; /* RECOMPUTE_MOD_* from "recompute_modules=LIST" in the notes (0 when absent) */
    unsigned unknown;    /* PLAN_UNK_* from "unknown=LIST" in the notes: what the source leaves open (plan --unknown) */
    double overlap_ep;   /* "overlap_ep=F" in the notes: plan --overlap-ep; -1 = the stack's */
    double moe_capacity; /* "moe_capacity=F": a capacity factor with padding (plan --moe-capacity); -1 = dropless */
    unsigned graph_scope;  /* GRAPH_* from "cuda_graph_scope=LIST" (plan --cuda-graph-scope); 0 when absent */
    unsigned offload_mods; /* OFFLOAD_MOD_* from "offload_modules=LIST" (plan --offload-modules); 0 when absent */
    int moe_dedup; /* "dispatcher=deepep|hybridep" (MOE_DISPATCH_*) or alltoall / absent (0): plan --moe-dispatcher */
    uint32_t fused_mlp;   /* "te_op_fuser=1": the experts as Transformer Engine's fused ops (plan --moe-fused-mlp) */
    uint32_t dualpipe;    /* "dualpipe=1": DeepSeek-V3's DualPipe schedule (plan --dualpipe); 0 = 1F1B */
    uint32_t ep_comm_sms; /* "ep_comm_sms=N": SMs the all-to-all kernels hold (plan --ep-comm-sms); 0 */
    double tok_s_gpu, step_s, tflops, mfu_pct, mem_gib; /* NAN when blank */
    MemKind mem_kind;
    /* what the run's configuration sets where it differs from its stack's row (blank = the stack's):
     * sequence parallelism, dropout, the attention kernel, the kernel fusion, a fused SwiGLU, the stack's
     * optional TP overlap (yes: its tp_overlap_on, no: 0), the main-gradient dtype, the weight-gradient
     * accumulation fused into the GEMM */
    int sp, dropout, swiglu, tp_overlap, grad_acc; /* -1 = the stack's (dropout: off) */
    AttnImpl attn;                                 /* ATTN_COUNT_ = the stack's */
    KernelFusion fusion;                           /* FUSE_COUNT_ = the stack's */
    MainGrad main_grad;                            /* MAIN_GRAD_COUNT_ = the stack's */
} MeasuredRun;

extern const char *const measured_columns;
const char *mem_kind_name(MemKind k);

/* Parse measured.csv text into runs (caller-owned, room for MEASURED_MAX_RUNS). */
Status measured_parse(const Catalog *c, const char *text, size_t len, const char *fname, MeasuredRun *runs, int *n,
                      Err *e);

/* The measured tokens/s per GPU: published, or gbs * seq / step_s / gpus; NAN when neither is there. */
double measured_tokens(const MeasuredRun *r);

#endif
