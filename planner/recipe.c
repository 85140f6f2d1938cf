/* planner/recipe.c — recipe names and the per-parameter byte arithmetic. */
#include "planner/recipe.h"

#include <strings.h>

static const char *const state_names[] = {
    [STATE_WEIGHT] = "weight", [STATE_MASTER] = "master", [STATE_GRAD] = "grad", [STATE_M] = "m", [STATE_V] = "v",
};
static const char *const scaling_names[] = {
    [SCALING_NONE] = "none", [SCALING_DELAYED] = "delayed", [SCALING_CURRENT] = "current"};
static const char *const amax_names[] = {[AMAX_NONE] = "none", [AMAX_TP] = "tp", [AMAX_ALL] = "all"};
static const char *const linear_names[] = {[LIN_NONE] = "none",
                                           [LIN_TE] = "te",
                                           [LIN_TORCHAO] = "torchao",
                                           [LIN_TORCHAO_ROWWISE] = "torchao-rowwise",
                                           [LIN_MSAMP] = "msamp"};
_Static_assert(sizeof linear_names / sizeof *linear_names == LIN_IMPL_COUNT_, "linear_names");
_Static_assert(sizeof state_names / sizeof *state_names == STATE_COUNT_, "state_names");
_Static_assert(sizeof scaling_names / sizeof *scaling_names == SCALING_COUNT_, "scaling_names");
_Static_assert(sizeof amax_names / sizeof *amax_names == AMAX_REDUCE_COUNT_, "amax_names");

static int parse_in(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(s, names[i])) return i;
    return -1;
}

const char *state_name(StateId s) { return (unsigned)s < STATE_COUNT_ ? state_names[s] : "?"; }
const char *scaling_name(ScalingMode m) { return (unsigned)m < SCALING_COUNT_ ? scaling_names[m] : "?"; }
const char *amax_reduce_name(AmaxReduce a) { return (unsigned)a < AMAX_REDUCE_COUNT_ ? amax_names[a] : "?"; }

int state_parse(const char *s, StateId *out)
{
    int i = parse_in(state_names, STATE_COUNT_, s);
    if (i < 0) return -1;
    *out = (StateId)i;
    return 0;
}

int scaling_parse(const char *s, ScalingMode *out)
{
    int i = parse_in(scaling_names, SCALING_COUNT_, s);
    if (i < 0) return -1;
    *out = (ScalingMode)i;
    return 0;
}

int amax_reduce_parse(const char *s, AmaxReduce *out)
{
    int i = parse_in(amax_names, AMAX_REDUCE_COUNT_, s);
    if (i < 0) return -1;
    *out = (AmaxReduce)i;
    return 0;
}

const char *fp8_linear_name(Fp8Linear l) { return (unsigned)l < LIN_IMPL_COUNT_ ? linear_names[l] : "?"; }

int fp8_linear_parse(const char *s, Fp8Linear *out)
{
    int i = parse_in(linear_names, LIN_IMPL_COUNT_, s);
    if (i < 0) return -1;
    *out = (Fp8Linear)i;
    return 0;
}

int recipe_fp8_gemm(const Recipe *r) { return dtype_is_fp8(r->gemm_fwd) || dtype_is_fp8(r->gemm_bwd); }

int recipe_master_is_compute(const StateSet *s, const Recipe *r)
{
    return s->dt[STATE_WEIGHT] == DT_NONE && r->fp8_row == DT_NONE;
}

double recipe_state_bytes_per_param(const StateSet *s, int sharded, uint32_t dp_shards, double *states_out)
{
    double total = 0;
    for (int i = 0; i < STATE_COUNT_; i++) {
        double b = dtype_bytes(s->dt[i]);
        if (sharded && dp_shards > 1 && (s->shard_mask & (1u << i))) b /= dp_shards;
        if (states_out) states_out[i] = b;
        total += b;
    }
    return total;
}

unsigned recipe_fp8_copy_bytes_per_param(const Recipe *r) { return dtype_bytes(r->fp8_row) + dtype_bytes(r->fp8_col); }
