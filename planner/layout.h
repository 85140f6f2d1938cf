/* planner/layout.h — the layout vocabulary a plan's input and a published run share: recomputation (and its
 * modules), CUDA graph scope, the implementation choices a source may leave open, and state sharding, with
 * their names. Types and names only (defined in planner/plan_names.c), so catalog/ can read measured.csv's
 * layouts without including plan.h. */
#ifndef FP8PLAN_PLANNER_LAYOUT_H
#define FP8PLAN_PLANNER_LAYOUT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* none; selective: the attention core (Korthikanti); full: whole layers, keeping each layer's input;
 * op: torchtitan's op-level policy — keep the outputs of matmuls (except every second one of a layer)
 * and of attention, recompute every other op in backward. */
typedef enum { RECOMPUTE_NONE = 0, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_OP, RECOMPUTE_COUNT_ } Recompute;
/* Modules recomputed in backward on top of `recompute` (Megatron-Core --recompute-modules, whose
 * TransformerConfig.recompute_modules documents them; names as there, RECOMPUTE_MOD_NAMES):
 *   output-discarding (the module's output is dropped after use and rebuilt before the backward needs it):
 *     mla_up_proj  MLA's up-projections and RoPE: keep the latents, rebuild Q, K, V (DeepSeek-V3 3.2.3);
 *     moe_act      the experts' activation: keep FC1's output, rebuild FC2's input;
 *     layernorm    the norms that are modules of their own (MLA's input norm, a MoE layer's pre-MLP norm;
 *                  TE fuses the others into the next linear): their BF16 outputs are not kept — the saved
 *                  inputs of the linears they feed when those are BF16 and the router's input; a linear's own
 *                  FP8 copy stays (Transformer Engine quantizes and saves it apart);
 *   normal checkpointing (keep the module's input, run it forward again in backward):
 *     core_attn    the attention core, as --recompute selective;
 *     mlp          the dense FFN of dense layers;
 *     moe          the whole MoE FFN: router, dispatch and combine, experts, shared experts;
 *     shared_experts  the shared experts' FFN.
 * The planner models all but core_attn for MoE / latent-attention / MTP models only. */
enum {
    RECOMPUTE_MOD_MLA_UP = 1u << 0,
    RECOMPUTE_MOD_MOE_ACT = 1u << 1,
    RECOMPUTE_MOD_LAYERNORM = 1u << 2,
    RECOMPUTE_MOD_CORE_ATTN = 1u << 3,
    RECOMPUTE_MOD_MLP = 1u << 4,
    RECOMPUTE_MOD_MOE = 1u << 5,
    RECOMPUTE_MOD_SHARED = 1u << 6,
    RECOMPUTE_MOD_COUNT_ = 7,
    RECOMPUTE_MOD_ALL_ = (1u << RECOMPUTE_MOD_COUNT_) - 1
};
/* Modules whose saved input Megatron-Core's fine-grained activation offloading (--fine-grained-activation-offloading
 * --offload-modules; TransformerConfig.offload_modules documents them, names as there) copies to host memory after the
 * module's forward and back before its backward. The planner models the routed experts' two:
 *   expert_fc1  the dispatched tokens the experts' FC1 saves for its weight gradient;
 *   moe_act     the activation's input, FC1's output (kept whole, or as --recompute-modules moe_act keeps it).
 * Tensors under Megatron's min_offloaded_tensor_size (2^20 elements) stay on the GPU. */
enum {
    OFFLOAD_MOD_EXPERT_FC1 = 1u << 0,
    OFFLOAD_MOD_MOE_ACT = 1u << 1,
    OFFLOAD_MOD_COUNT_ = 2,
    OFFLOAD_MOD_ALL_ = (1u << OFFLOAD_MOD_COUNT_) - 1
};
/* The parts of a MoE model's layers captured as CUDA graphs (Megatron-Core's --cuda-graph-scope, bit i named
 * cuda_graph_scope_names[i]): a captured part is replayed with one launch instead of issuing its operations one by
 * one from the host (plan_moe_time.c, the host-issue term). attn: the attention block; moe_router: the router;
 * moe_preprocess: the dispatcher's preprocessing (token counts, permutation maps); full: whole layers, which
 * Megatron can capture only when every shape is static: a capacity factor with padding (--moe-capacity). */
enum {
    GRAPH_ATTN = 1u << 0,
    GRAPH_MOE_ROUTER = 1u << 1,
    GRAPH_MOE_PREPROCESS = 1u << 2,
    GRAPH_FULL = 1u << 3,
    GRAPH_SCOPE_COUNT_ = 4,
    GRAPH_SCOPE_ALL_ = (1u << GRAPH_SCOPE_COUNT_) - 1
};
/* How a MoE dispatcher sends a token's copies (plan --moe-dispatcher, measured.csv notes dispatcher=; PlanInput
 * moe_dedup): Megatron's all-to-all one per (token, expert); HybridEP once per remote node, then one per (token,
 * expert) over NVLink; DeepEP once per remote node and once per GPU that holds one of its experts (plan_moe_comm.c). */
enum { MOE_DISPATCH_ALLTOALL = 0, MOE_DISPATCH_HYBRIDEP = 1, MOE_DISPATCH_DEEPEP = 2 };
/* Implementation choices a plan's sources may leave open (plan --unknown; the vocabulary is plan_unknowns, one
 * table in plan_names.c). Each is a memory saving some training frameworks make and others do not:
 *   fp8_weight_cache  no FP8 weight copy is held: each FP8 GEMM casts its weight operand from the working weight
 *                     when it runs (forward, and again for the backward's transposed use), instead of caching
 *                     the row-wise and column-wise copies for the step (or, --fp8-weight-cache off, saving them
 *                     with every micro-batch's activations); one layer's largest linear's copies stay in the
 *                     transient while its GEMM runs. Nothing changes under ZeRO-3 (its copies are per-layer
 *                     transients already) or for a recipe without FP8 copies;
 *   attn_out          the attention backward reads the out-projection's saved FP8 input (DeepSeek-V3 3.3.3:
 *                     E5M6) instead of a BF16 attention output kept beside it (flash attention with FP8-saved
 *                     inputs; with high-precision saved inputs the two are one tensor already);
 *   dense_act         the dense layers' FFN keeps its activation input (FC1's output) in the saved-input dtype
 *                     and rebuilds the activation output in backward, as --recompute-modules moe_act does for
 *                     the routed experts: FC2's input is not kept, one layer's rebuilt FC2 input [tok, F/tp]
 *                     BF16 joins the transient (a shared expert's FFN is left as it is);
 *   act_ckpt          every layer checkpointed (--recompute full; PyTorch activation checkpointing of each block):
 *                     only each layer's input is kept and one layer is rebuilt in its backward — for runs whose
 *                     own configurations disagree on whether they checkpointed;
 *   routing_map       the MoE token permutation keeps a compact map, two int32 indices a routed row beside its
 *                     routing weight, instead of what Megatron-Core's permute saves (Transformer Engine's fused
 *                     row_id_map [tokens, 2 E + 1] int32, or unfused the int64 sorted indices and the [E, tokens]
 *                     probabilities and mask): for runs on a framework of their own (DeepSeek-V3's) whose
 *                     permutation's saved tensors are not published.
 * They change memory only: a plan's time is the one built without the open ones. */
enum {
    PLAN_UNK_FP8_WEIGHT_CACHE = 1u << 0,
    PLAN_UNK_ATTN_OUT = 1u << 1,
    PLAN_UNK_DENSE_ACT = 1u << 2,
    PLAN_UNK_ACT_CKPT = 1u << 3,
    PLAN_UNK_ROUTING_MAP = 1u << 4,
    PLAN_UNK_COUNT_ = 5,
    PLAN_UNK_ALL_ = (1u << PLAN_UNK_COUNT_) - 1
};
typedef struct {
    const char *name;   /* as --unknown and measured.csv's unknown= spell it */
    unsigned bit;       /* PLAN_UNK_* */
    const char *saving; /* what the saving does, one line */
} PlanUnknown;
/* The vocabulary, in bit order (plan_unknowns[i].bit == 1u << i). */
extern const PlanUnknown plan_unknowns[PLAN_UNK_COUNT_];
/* "attn_out,dense_act" -> PLAN_UNK_* bits; "none" -> 0. -1 on an unknown or empty name, with its offset in
 * *bad_at (its length in *bad_len). */
int plan_unknown_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len);
/* The bits as a comma-separated list in bit order ("none" for 0), into buf[0..n). */
void plan_unknown_format(unsigned bits, char *buf, size_t n);

/* Which training states are sharded over the DP x CP group. */
typedef enum {
    SHARD_NONE = 0, /* plain data parallel: every state replicated */
    SHARD_DIST_OPT, /* Megatron distributed optimizer: the states in recipe *.shard_mask */
    SHARD_ZERO1,    /* master, m, v (a master the GEMMs read stays whole) */
    SHARD_ZERO2,    /* + gradients */
    SHARD_ZERO3,    /* + working weights (gathered per layer; FP8 copies become per-layer transients) */
    SHARD_COUNT_
} Sharding;

const char *recompute_name(Recompute r);
/* Module names as Megatron spells them: bit i of RECOMPUTE_MOD_* is recompute_mod_names[i]. */
extern const char *const recompute_mod_names[RECOMPUTE_MOD_COUNT_];
/* "moe_act,layernorm" -> RECOMPUTE_MOD_* bits; "none" -> 0. -1 on an unknown or empty name, with its offset
 * in *bad_at (its length in *bad_len). */
int recompute_mods_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len);
/* The bits as a comma-separated list in bit order ("none" for 0), into buf[0..n). */
void recompute_mods_format(unsigned mods, char *buf, size_t n);
/* Offload module names as Megatron spells them: bit i of OFFLOAD_MOD_* is offload_mod_names[i]. */
extern const char *const offload_mod_names[OFFLOAD_MOD_COUNT_];
/* "expert_fc1,moe_act" -> OFFLOAD_MOD_* bits; "none" -> 0. -1 on an unknown or empty name, as recompute_mods_parse. */
int offload_mods_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len);
/* The bits as a comma-separated list in bit order ("none" for 0), into buf[0..n). */
void offload_mods_format(unsigned mods, char *buf, size_t n);
/* CUDA graph scope names as Megatron spells them: bit i of GRAPH_* is cuda_graph_scope_names[i]. */
extern const char *const cuda_graph_scope_names[GRAPH_SCOPE_COUNT_];
/* "attn,moe_router" -> GRAPH_* bits; "none" -> 0. -1 on an unknown or empty name, as recompute_mods_parse. */
int graph_scope_parse(const char *list, unsigned *out, size_t *bad_at, size_t *bad_len);
/* The bits as a comma-separated list in bit order ("none" for 0), into buf[0..n). */
void graph_scope_format(unsigned scope, char *buf, size_t n);
/* Does the plan recompute the attention core (--recompute selective, or the core_attn module)? */
int recompute_attn_core(Recompute r, unsigned mods);
int recompute_parse(const char *s, Recompute *out);
const char *sharding_name(Sharding s);
int sharding_parse(const char *s, Sharding *out);

#ifdef __cplusplus
}
#endif
#endif
