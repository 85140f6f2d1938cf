/* planner/spec.h — what a model and a GPU are, as plain structs.
 *
 * A ModelSpec is one row of models/models.csv; a GpuSpec one row of
 * models/gpus.csv. Both are plain data: a caller may fill one by hand, or copy
 * a catalog row and edit it (the executor shrinks layers/hidden/heads/seq to
 * fit one GPU and plans that). Nothing here allocates or does I/O. */
#ifndef FP8PLAN_PLANNER_SPEC_H
#define FP8PLAN_PLANNER_SPEC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SPEC_NAME_MAX = 48, SPEC_SOURCE_MAX = 2048, STACK_SOURCE_MAX = 4096 };

typedef enum { NORM_LAYERNORM = 0, NORM_RMSNORM, NORM_COUNT_ } NormType;
typedef enum { MLP_GELU = 0, MLP_SWIGLU, MLP_COUNT_ } MlpType;
/* How token positions enter the model: a learned absolute table of
 * seq_len x hidden (GPT-2, Megatron GPT), rotary embeddings (no parameters),
 * or nothing. */
typedef enum { POS_LEARNED = 0, POS_ROPE, POS_NONE, POS_COUNT_ } PosType;

/* How a mixture-of-experts layer scores its experts: none (dense model), softmax over the
 * experts' logits (Mixtral, Qwen-MoE), or sigmoid scores with a per-expert bias that only
 * steers selection (DeepSeek-V3's auxiliary-loss-free balancing: E bias values per layer). */
typedef enum { ROUTER_NONE = 0, ROUTER_SOFTMAX, ROUTER_SIGMOID, ROUTER_COUNT_ } RouterType;

/* A decoder-only transformer. Per layer (pre-norm):
 *   norm1 -> QKV (one fused [(heads + 2*kv_heads)*head_dim, hidden] weight)
 *   -> attention -> proj ([hidden, heads*head_dim]) -> residual
 *   norm2 -> FC1 ([ffn_hidden, hidden]; [2*ffn_hidden, hidden] fused gate+up for
 *   SwiGLU) -> GeLU or SwiGLU -> FC2 ([hidden, ffn_hidden]) -> residual.
 * Then a final norm and the LM head ([vocab, hidden], shared with the token
 * embedding when tied_embeddings). A LayerNorm has a weight and a bias
 * (2*hidden), an RMSNorm a weight (hidden). With linear_bias every linear layer
 * except the LM head has a bias of its output size. */
typedef struct {
    char name[SPEC_NAME_MAX];
    uint32_t layers;
    uint32_t hidden;
    uint32_t ffn_hidden;
    uint32_t heads;
    uint32_t kv_heads; /* == heads without GQA */
    uint32_t head_dim; /* usually hidden / heads */
    uint32_t vocab;    /* tokenizer vocabulary, unpadded */
    uint32_t seq_len;  /* training context; the learned position table has this many rows */
    NormType norm;
    MlpType mlp;
    PosType pos;
    int tied_embeddings; /* 1: the LM head reuses the token embedding */
    int linear_bias;     /* 1: QKV, proj, FC1, FC2 carry biases */
    int qk_norm;         /* 1: RMSNorm over each head's query and key (Qwen3): 2 x head_dim weights per layer */

    /* Mixture of experts (experts = 0: a dense model, every field below 0). A MoE layer
     * replaces the FFN by `experts` routed experts of expert_ffn width each (same MLP type),
     * of which every token uses experts_per_token, plus shared_experts always-on experts of
     * the same width (one MLP of shared_experts x expert_ffn), and a router [experts, hidden].
     * The first dense_layers layers keep the dense FFN of ffn_hidden (DeepSeek-V3: 3). With
     * group-limited routing a token picks its experts from router_group_topk of router_groups
     * expert groups (DeepSeek-V3: 4 of 8; with one group per node, at most 4 nodes per token). */
    uint32_t experts, experts_per_token, shared_experts, expert_ffn, dense_layers;
    RouterType router;
    uint32_t router_groups, router_group_topk;

    /* Multi-head latent attention (kv_lora_rank = 0: standard attention, fields 0). Queries and
     * keys/values are projected down to q_lora_rank (0: no query compression) and kv_lora_rank
     * latents plus one shared qk_rope_head_dim RoPE key, then up to heads x (qk_nope + qk_rope)
     * queries, heads x qk_nope keys and heads x v_head_dim values: head_dim = qk_nope + qk_rope
     * is the query/key head dim, kv_heads = heads. */
    uint32_t q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;

    /* Multi-token prediction depth (DeepSeek-V3: 1): per depth a projection [hidden, 2 hidden], two
     * norms, one more transformer layer (a MoE layer when the model has experts) and a final norm,
     * sharing the embedding and the LM head; not part of the published main-model count. */
    uint32_t mtp_layers;
    char source[SPEC_SOURCE_MAX];

    /* The routed experts' details (models.csv's optional last columns; 0: none). expert_bias: the experts' FC1
     * and FC2 carry biases (GPT-OSS); glu_clamp: a clamped GLU's limit (GPT-OSS 7.0: the gated half clamped
     * above at 7, the linear half to [-7, 7]). Timed where the stack's MoE layer is Megatron-Core's
     * (plan_moe_time.c); the biases are not counted as parameters (GPT-OSS-120B: 36 layers x 128 experts x
     * (2 x 2880 + 2880) = 39.8 M of 117 B, 0.03 %). */
    int expert_bias;
    double glu_clamp;
} ModelSpec;

/* 1 when the model has routed experts / latent attention. */
static inline int spec_is_moe(const ModelSpec *m) { return m->experts > 0; }
static inline int spec_is_mla(const ModelSpec *m) { return m->kv_lora_rank > 0; }

/* One GPU type. Bandwidths are bytes/s in one direction, per GPU; FLOP rates
 * are dense (no structured sparsity), in FLOP/s. The measured matmul ceilings
 * (MAMF: the best rate a brute-force search over large shapes reaches, at the
 * clock the part sustains under load) are what the GEMM model saturates at. */
/* LINK_HOST: the ranks of one machine (a measured host profile: fp8plan calibrate), exchanging through
 * shared memory; its latency is measured (link_lat), not NCCL's. */
typedef enum { LINK_NVLINK = 0, LINK_PCIE, LINK_HOST, LINK_COUNT_ } IntraLink;

/* A collective operation. OP_BROADCAST: no plan row uses it (the executor broadcasts only the loss,
 * unplanned); calibrate fits it. */
typedef enum {
    OP_ALL_REDUCE = 0,
    OP_ALL_GATHER,
    OP_REDUCE_SCATTER,
    OP_SEND_RECV,
    OP_ALL_TO_ALL,
    OP_BROADCAST,
    OP_COUNT_
} CommOp;
/* "all-reduce", "all-gather", "reduce-scatter", "send/recv", "all-to-all", "broadcast". */
const char *comm_op_name(CommOp o);

/* A collective's measured cost on a host profile (fp8plan calibrate under mpirun; catalog links.csv): one
 * operation, one reduction path, one range of payloads. A call of payload S over n ranks takes
 * steps(op, n) x lat + S x comm_bus_factor(op, n) / bw (planner/plan.h plan_link_call). The path is the
 * reduction's dtype where reducing costs differ (the executor's MPI reductions decode FP8 and BF16
 * element by element); LINK_PATH_BYTES for the operations that only move bytes. */
typedef enum {
    LINK_PATH_BYTES = 0,
    LINK_PATH_FP32,
    LINK_PATH_BF16,
    LINK_PATH_FP8,
    LINK_PATH_EAGER,
    LINK_PATH_RENDEZVOUS,
    LINK_PATH_FP32_GRAD,
    LINK_PATH_FP32_EMB,
    LINK_PATH_COUNT_
} LinkPath;
/* LINK_PATH_FP32_GRAD ("fp32 grad", all-reduce only): the FP32 all-reduce of a gradient after the backward, its
 * payload and the communicator's receive buffer in memory, not in the CPU's caches (calibrate_link.c, the gradient
 * sweep). A step passes every layer's weights, activations and states through the caches between a gradient's write
 * and its reduction; on this project's 2-vCPU host that makes a 1 MiB call 1.6x and a 6 MiB one 1.7x the time of the
 * same call on a payload just written (docs/calibrate.md, "Gradients reduced from memory"). */
/* LINK_PATH_FP32_EMB ("fp32 emb", all-reduce only): the tied embedding's gradient all-reduce between the first and
 * the last pipeline stage, as "fp32 grad" with the later rank of each pair arriving first and waiting out the
 * earlier one's last backward (calibrate_link.c, the embedding sweep): PP's cool-down bubble, which the last stage
 * spends in the call's arrival barrier while the first stage computes. On this project's 2-vCPU host one rank 8 ms
 * late made the gradient sweep's 1 MiB call 1.20x its time with both ranks arriving together (load 15), where PP 2's
 * run measured 1.12-1.33x the plan (docs/calibrate.md, "TP 2's and PP 2's last four"). */
/* LINK_PATH_EAGER and LINK_PATH_RENDEZVOUS (all-to-all only; links.csv version 2) are per message, not per
 * call: an MPI all-to-all on one node sends each peer its own message, and the message's size (not the call's
 * payload) decides the protocol. Up to the MPI library's eager limit the sender copies the message into a
 * shared-memory fragment and the receiver copies it out (eager); past it the sender announces it and the
 * receiver copies it in one go from the sender's memory (rendezvous, Open MPI's single copy by CMA/XPMEM).
 * Such a row's from / to are a message's bytes, lat the seconds of one message and bw its bytes/s: a call
 * takes the sum over its peers' messages (plan_a2a_call). The eager row's to is the eager limit measured. */
typedef struct {
    uint8_t op;        /* CommOp (planner/plan.h) */
    uint8_t path;      /* LinkPath */
    uint64_t from, to; /* payload bytes S in [from, to); to 0: no upper end */
    double lat;        /* s per ring step */
    double bw;         /* bus bytes/s (0: the range's time did not grow with its size: latency only) */
} LinkFit;
enum { GPU_LINK_FITS_MAX = 64 }; /* 12 payload sweeps x CAL_FIT_RANGES_MAX (5) + the 2 per-message fits */
/* "bytes", "fp32", "bf16", "fp8", "eager", "rendezvous" (links.csv's path column). */
const char *link_path_name(LinkPath p);

/* The kinds of element-wise kernel a profile may rate apart (GpuSpec.elem_kind_bw, gpus.csv's elem_<kind>_gbps): a
 * norm's forward, an activation's forward (SwiGLU, GeLU), an add, an FP8 cast (+ transpose), the loss's softmax
 * cross-entropy, current scaling's amax read (a max over the input, nothing written), an FP8 cast of FP32 values to
 * the row-wise copy alone (the FP8 main gradient's commit: no transpose); every other kernel (RoPE, permutes,
 * router, conversions) keeps the one rate. */
typedef enum { ELEM_NORM = 0, ELEM_ACT, ELEM_ADD, ELEM_CAST, ELEM_XENT, ELEM_AMAX, ELEM_CAST_ROW, ELEM_KINDS } ElemKind;

typedef struct {
    char name[SPEC_NAME_MAX];
    uint32_t sm;        /* compute capability x 10: 80 = SM 8.0 (A100), 89, 90, 100 */
    uint32_t sms;       /* streaming multiprocessors (0: unknown, no wave quantization) */
    double mamf_bf16;   /* maximum achievable BF16 matmul FLOP/s (0: the BF16 peak) */
    double mamf_fp8;    /* maximum achievable FP8 matmul FLOP/s (0: the FP8 peak) */
    double sustained;   /* share of the kernel benchmarks (MAMF, attention) a training step sustains (0: 1) */
    double mx_gemm_rel; /* MXFP8 GEMM rate / per-tensor FP8 rate (0: the architecture's, planner/arch.c) */
    IntraLink link;     /* what joins the GPUs of a node (NCCL's latency class) */
    uint64_t hbm_bytes; /* device memory capacity, bytes */
    double hbm_bw;      /* bytes/s */
    double flops_bf16;  /* dense BF16 tensor-core FLOP/s */
    double flops_fp8;   /* dense FP8 tensor-core FLOP/s (0: no FP8 tensor cores) */
    double flops_fp32;  /* dense FP32 (CUDA-core) FLOP/s */
    double intra_bw;    /* within a node (NVLink/PCIe), bytes/s per GPU per direction */
    double inter_bw;    /* across nodes (NIC), bytes/s per GPU per direction */
    uint32_t gpus_per_node;
    /* A measured host profile (compute_capability "cpu", written by fp8plan calibrate): a CPU running the
     * executor, FP8 emulated. Its rates are what its kernels achieved, so eff_hbm and eff_net do not
     * scale them; its GEMMs have no tiles to quantize (arch_host). intra_bw 0: no interconnect measured
     * (one rank), plans of several ranks are refused. */
    int host;
    double link_lat;        /* measured latency per ring step of a collective, s (0: NCCL's model by link class) */
    double elem_bw;         /* bytes/s the element-wise kernels (norms, activations, casts, softmax, loss) achieve where
                        it differs from hbm_bw (a CPU's are compute-bound: tanh, exp, FP8 rounding); 0: hbm_bw */
    double scaled_optim_bw; /* bytes/s (the planner's count of its bytes) of the two-pass scaled-state optimizer
                               (FP8-LM, MS-AMP: FP8/FP16 states re-scaled each step) where measured — a CPU's is
                               compute-bound (FP8 rounding, two passes), 3x slower than AdamW's stream; 0: hbm_bw */
    double o1_optim_bw; /* bytes/s (the planner's count) of MS-AMP O1's optimizer where measured: the same two passes
                           over a scaled FP16 weight updated in place beside FP32 m and v; 0: hbm_bw */
    uint64_t llc_bytes; /* a host profile's last-level cache, bytes (calibrate reads it from sysfs; gpus.csv llc_bytes):
                           how much of a step's traffic it holds says whether a gradient's all-reduce finds its
                           buffers there or in memory (planner/plan_cache.c); 0: not known, from memory */
    /* bytes/s of each kind of element-wise kernel where measured apart (ElemKind; calibrate's elem_norm_gbps ...):
     * a CPU's cost per byte differs by kind (SwiGLU's or GeLU's exp / tanh and FP8 rounding against a norm's or an
     * add's stream); 0: elem_bw, the one rate (gpu_kind_bw) */
    double elem_kind_bw[ELEM_KINDS];
    double group_gemm_s; /* a host's grouped GEMM: its cost per group (expert) beyond the group's FLOPs at the
                               BF16 rate, s (calibrate: each expert's GEMM is its own pool task, its weight decoded
                               and packed for a few rows); 0: none (a GPU's grouped GEMM is timed by its tiles) */
    char source[SPEC_SOURCE_MAX];
    LinkFit link_fit[GPU_LINK_FITS_MAX]; /* a host profile's per-collective fits (links.csv); none: every op at
                                            link_lat and intra_bw, the all-reduce's */
    int nlink_fit;
} GpuSpec;

/* The linear layers of a block (the planner's itemization and the executor's tensors share these ids): a
 * standard-attention block's four in execution order, then latent attention's (DeepSeek-V2/V3), which take
 * QKV's place — q down-projection to the q latent (absent with q_lora_rank 0), q up-projection from it (from
 * the block input without a q latent), kv down-projection to the kv latent plus the RoPE key shared by the
 * heads, kv up-projection from the kv latent to every head's k_nope and v — with PROJ their output projection
 * (from heads x v_head_dim). */
typedef enum {
    LIN_QKV = 0,
    LIN_PROJ,
    LIN_FC1,
    LIN_FC2,
    LIN_Q_DOWN,
    LIN_Q_UP,
    LIN_KV_DOWN,
    LIN_KV_UP,
    LIN_EH_PROJ, /* multi-token prediction: [enorm(embedding); hnorm(hidden)] (2h) -> h */
    LIN_KINDS
} LinearKind;
/* A standard-attention block's linears: QKV, PROJ, FC1, FC2. */
enum { LIN_COUNT = LIN_Q_DOWN };

/* "qkv", "proj", "fc1", "fc2", "q_down", "q_up", "kv_down", "kv_up", "eh_proj". */
const char *linear_name(LinearKind k);

/* FC1's output rows per FFN unit: 2 for SwiGLU (gate and up fused in one
 * weight), else 1. */
uint32_t spec_fc1_k(const ModelSpec *m);

/* The weight of linear k on one of tp tensor-parallel ranks, stored [out, in]
 * = (*rows, *cols): QKV (heads + 2 kv_heads)·head_dim/tp x hidden, proj hidden
 * x heads·head_dim/tp (latent attention: heads·v_head_dim/tp), FC1 k·ffn/tp x
 * hidden (k = 2: SwiGLU's fused gate and up projections), FC2 hidden x ffn/tp;
 * latent attention's q_down q_lora x hidden, q_up heads·head_dim/tp x q_lora
 * (x hidden without a q latent), kv_down (kv_lora + qk_rope) x hidden (both
 * down-projections whole on every rank), kv_up heads·(qk_nope + v_head_dim)/tp
 * x kv_lora. The GEMM's output width N is *rows, its reduction width K is *cols. */
void spec_linear_shape(const ModelSpec *m, LinearKind k, uint32_t tp, uint64_t *rows, uint64_t *cols);

/* Names as written in models.csv ("layernorm", "swiglu", "rope", ...). */
const char *norm_name(NormType n);
const char *mlp_name(MlpType m);
const char *pos_name(PosType p);
const char *link_name(IntraLink l);
const char *router_name(RouterType r);
int router_parse(const char *s, RouterType *out); /* none (or empty), softmax, sigmoid */
/* The sustained fraction of a GPU (1 when not given). */
static inline double gpu_sustained(const GpuSpec *g) { return g->sustained > 0 ? g->sustained : 1.0; }
/* The achieved memory / link bandwidth the time model divides by: the catalog's peak x the plan's
 * efficiency, or a host profile's measured (already achieved) figure as it is. */
static inline double gpu_mem_bw(const GpuSpec *g, double eff_hbm) { return g->host ? g->hbm_bw : g->hbm_bw * eff_hbm; }
static inline double gpu_net_eff(const GpuSpec *g, double eff_net) { return g->host ? 1.0 : eff_net; }
/* The bandwidth the element-wise kernels are timed at: elem_bw when measured (as achieved, like a host's
 * rates), else gpu_mem_bw. Streaming work (optimizer, GEMM operands) stays at gpu_mem_bw. */
static inline double gpu_elem_bw(const GpuSpec *g, double eff_hbm)
{
    return g->elem_bw > 0 ? g->elem_bw : gpu_mem_bw(g, eff_hbm);
}
/* The bandwidth kernels of kind k are timed at: the kind's where measured, else gpu_elem_bw. */
static inline double gpu_kind_bw(const GpuSpec *g, ElemKind k, double eff_hbm)
{
    return g->elem_kind_bw[k] > 0 ? g->elem_kind_bw[k] : gpu_elem_bw(g, eff_hbm);
}
int link_parse(const char *s, IntraLink *out);
/* Parse those names (case-insensitive); 0 ok, -1 unknown. */
int norm_parse(const char *s, NormType *out);
int mlp_parse(const char *s, MlpType *out);
int pos_parse(const char *s, PosType *out);

/* Parameters of the whole model (tp = 1, unpadded vocabulary, tied embedding
 * counted once): the figure model cards quote (gpt2-124m: 124,439,808).
 * Returns 0, or 1 when the count passes 2^64. Defined in planner/plan_params.c, declared beside ModelSpec
 * so that catalog/ refuses a row whose count passes 2^64 without including plan.h. */
int model_param_count(const ModelSpec *m, uint64_t *out);

/* The same count itemized (planner/plan_params.c states every term): */
typedef struct {
    uint64_t total;     /* the main model, as model_param_count (DeepSeek-V3: 671,026,419,200) */
    uint64_t active;    /* used per token: total less the routed experts a token skips (dense: total) */
    uint64_t embedding; /* token embedding table (+ learned positions) */
    uint64_t mtp;       /* multi-token-prediction modules, not in total (they share embedding and head) */
} ModelParams;
int model_params(const ModelSpec *m, ModelParams *out);

#ifdef __cplusplus
}
#endif
#endif
