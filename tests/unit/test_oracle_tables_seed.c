/* tests/unit/test_oracle_tables_seed.c — planner tables that mutate's fresh seeds found unguarded: every
 * enum's name table both ways (names and parses) and the architecture table's shared curves. (Moved from
 * test_oracle_plan_seed.c, unchanged.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* ---- names ------------------------------------------------------------------------------------------- */

/* Every planner enum's names as reports print them, typed in here: each value's name, its parse back (any
 * case), and "?" for the count and for a value past it (an enum cast from -1). */
static void test_enum_names(void)
{
#define NAMES(fn, type, count, ...)                                                   \
    do {                                                                              \
        const char *const want_[] = {__VA_ARGS__};                                    \
        CHECK_EQ_INT(sizeof want_ / sizeof want_[0], count);                          \
        for (int i_ = 0; i_ < (int)(count); i_++) CHECK_STR(fn((type)i_), want_[i_]); \
        CHECK_STR(fn((type)(count)), "?");                                            \
        CHECK_STR(fn((type)-1), "?");                                                 \
    } while (0)
#define PARSES(fn, type, count, name_fn)                                 \
    for (int i_ = 0; i_ < (int)(count); i_++) {                          \
        char up_[40];                                                    \
        snprintf(up_, sizeof up_, "%s", name_fn((type)i_));              \
        for (char *c_ = up_; *c_; c_++)                                  \
            if (*c_ >= 'a' && *c_ <= 'z') *c_ = (char)(*c_ - 'a' + 'A'); \
        type v_ = (type)(count);                                         \
        CHECKF(fn(up_, &v_) == 0 && v_ == (type)i_, "%s", up_);          \
    }
    NAMES(linear_name, LinearKind, LIN_KINDS, "qkv", "proj", "fc1", "fc2", "q_down", "q_up", "kv_down", "kv_up",
          "eh_proj");
    NAMES(norm_name, NormType, NORM_COUNT_, "layernorm", "rmsnorm");
    NAMES(mlp_name, MlpType, MLP_COUNT_, "gelu", "swiglu");
    NAMES(pos_name, PosType, POS_COUNT_, "learned", "rope", "none");
    NAMES(link_name, IntraLink, LINK_COUNT_, "nvlink", "pcie", "host");
    NAMES(router_name, RouterType, ROUTER_COUNT_, "none", "softmax", "sigmoid");
    NAMES(state_name, StateId, STATE_COUNT_, "weight", "master", "grad", "m", "v");
    NAMES(scaling_name, ScalingMode, SCALING_COUNT_, "none", "delayed", "current");
    NAMES(amax_reduce_name, AmaxReduce, AMAX_REDUCE_COUNT_, "none", "tp", "all");
    NAMES(fp8_linear_name, Fp8Linear, LIN_IMPL_COUNT_, "none", "te", "torchao", "torchao-rowwise", "msamp");
    NAMES(mem_category_name, MemCategory, MC_COUNT_, "state", "fp8_copy", "scale", "activation", "overhead");
    NAMES(comm_group_name, CommGroup, GROUP_COUNT_, "tp", "cp", "dp", "pp", "emb", "amax", "ep", "etp", "edp");
    NAMES(comm_op_name, CommOp, OP_COUNT_, "all-reduce", "all-gather", "reduce-scatter", "send/recv", "all-to-all",
          "broadcast");
    NAMES(recompute_name, Recompute, RECOMPUTE_COUNT_, "none", "selective", "full", "op");
    NAMES(sharding_name, Sharding, SHARD_COUNT_, "none", "dist-opt", "zero1", "zero2", "zero3");
    NAMES(plan_reject_name, PlanReject, REJECT_COUNT_, "ok", "zero layout value",
          "heads or kv_heads not divisible by tp", "ffn_hidden not divisible by tp",
          "layers not divisible by pp*vpp (or uneven stage counts that do not add up)",
          "vpp needs pp > 1 and micro-batches divisible by pp", "seq not divisible by 2*cp (or seq/cp by tp with SP)",
          "seq longer than the learned position table", "world size != tp*pp*cp*dp",
          "global batch not divisible by mbs*dp", "recipe needs a newer GPU", "invalid model or GPU spec",
          "overhead or efficiency setting out of range", "byte count past 2^64",
          "ep/etp do not divide experts, expert FFN or tp*cp*dp", "step time or throughput not finite",
          "--moment-dtype on a recipe with scaled Adam moments");
    NAMES(moment_dtype_name, MomentDtype, MOMENT_COUNT_, "recipe", "fp32", "bf16");
    PARSES(norm_parse, NormType, NORM_COUNT_, norm_name);
    PARSES(mlp_parse, MlpType, MLP_COUNT_, mlp_name);
    PARSES(pos_parse, PosType, POS_COUNT_, pos_name);
    PARSES(link_parse, IntraLink, LINK_COUNT_, link_name);
    PARSES(router_parse, RouterType, ROUTER_COUNT_, router_name);
    PARSES(state_parse, StateId, STATE_COUNT_, state_name);
    PARSES(scaling_parse, ScalingMode, SCALING_COUNT_, scaling_name);
    PARSES(amax_reduce_parse, AmaxReduce, AMAX_REDUCE_COUNT_, amax_reduce_name);
    PARSES(fp8_linear_parse, Fp8Linear, LIN_IMPL_COUNT_, fp8_linear_name);
    PARSES(recompute_parse, Recompute, RECOMPUTE_COUNT_, recompute_name);
    PARSES(sharding_parse, Sharding, SHARD_COUNT_, sharding_name);
    PARSES(moment_dtype_parse, MomentDtype, MOMENT_COUNT_, moment_dtype_name);
#undef NAMES
#undef PARSES
    RouterType rt = ROUTER_SIGMOID;
    CHECK(router_parse("", &rt) == 0 && rt == ROUTER_NONE); /* an empty cell: no router */
    NormType nt = NORM_RMSNORM;
    CHECK(norm_parse("groupnorm", &nt) == -1 && nt == NORM_RMSNORM);
}

/* ---- the architecture table's shared curves --------------------------------------------------------------- */

/* What planner/arch.c's sources say the rows share, field by field (every one of the six): Blackwell runs cuDNN at
 * the H100 cuDNN fractions (an assumption arch.c states) and, with no FlashAttention-3, FA3 falls back to its FA2
 * curve; Ada / Ampere (and a host) use one curve for all three kernels; a host's curves are the Ada / Ampere ones. Each pair compared
 * field by field, so one changed constant (a saturation length, an asymptote) shows which curve broke. */
static void test_arch_shared_curves(void)
{
    const ArchRow *h = arch_row(90), *b = arch_row(100), *a = arch_row(80);
    const struct {
        const AttnCurve *x, *y;
        const char *what;
    } same[] = {
        {&b->cudnn, &h->cudnn, "Blackwell cuDNN = Hopper cuDNN"},
        {&b->flash3, &b->flash2, "Blackwell FA3 = its FA2"},
        {&a->flash3, &a->flash2, "Ampere FA3 = FA2"},
        {&a->cudnn, &a->flash2, "Ampere cuDNN = FA2"},
        {&arch_host.flash2, &a->flash2, "host FA2 = Ampere FA2"},
        {&arch_host.flash3, &a->flash2, "host FA3 = Ampere FA2"},
        {&arch_host.cudnn, &a->flash2, "host cuDNN = Ampere FA2"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const AttnCurve *x = same[i].x, *y = same[i].y;
        CHECKF(x->e_fwd == y->e_fwd && x->s_half == y->s_half && x->bwd == y->bwd && x->s_half_bwd == y->s_half_bwd &&
                   x->hd64 == y->hd64 && x->hd256 == y->hd256,
               "%s: {%g, %g, %g, %g, %g, %g} vs {%g, %g, %g, %g, %g, %g}", same[i].what, x->e_fwd, x->s_half, x->bwd,
               x->s_half_bwd, x->hd64, x->hd256, y->e_fwd, y->s_half, y->bwd, y->s_half_bwd, y->hd64, y->hd256);
    }
    /* Blackwell FA2 is the SM 8.0 code at H100 FA2's absolute rate: 0.347 x 989 = 343 TFLOPS of B200's 2,250 =
     * 0.1525 (kept as 0.152), the rest of the curve H100 FA2's; Ampere / Ada FA2 takes H100 FA2's saturation
     * lengths and head-dim factors with its own asymptotes (backward 63 % / forward 73 % = 0.863 of the forward; the
     * forward asymptote itself is a fit) */
    CHECK(fabs(b->flash2.e_fwd - h->flash2.e_fwd * 989.0 / 2250.0) <= 1e-3);
    const AttnCurve *bf = &b->flash2, *hf = &h->flash2, *af = &a->flash2;
    CHECK(bf->s_half == hf->s_half && bf->bwd == hf->bwd && bf->s_half_bwd == hf->s_half_bwd && bf->hd64 == hf->hd64 &&
          bf->hd256 == hf->hd256);
    CHECK(af->s_half == hf->s_half && af->s_half_bwd == hf->s_half_bwd && af->hd64 == hf->hd64 &&
          af->hd256 == hf->hd256);
    CHECK(fabs(af->bwd - 63.0 / 73.0) <= 5e-3); /* 0.863 kept to two decimals */
    CHECK(h->has_flash3 == 1 && b->has_flash3 == 0 && a->has_flash3 == 0 && arch_host.has_flash3 == 0);
    CHECK(arch_attn(b, ATTN_FLASH3) == &b->flash2 && arch_attn(h, ATTN_FLASH3) == &h->flash3);
}

int main(void)
{
    RUN(test_enum_names);
    RUN(test_arch_shared_curves);
    return test_summary();
}
