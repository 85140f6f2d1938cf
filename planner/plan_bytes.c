/* planner/plan_bytes.c — step-time terms from the bytes the work moves (see plan_bytes.h). */
#include "planner/plan_bytes.h"

double pb_attn_mat_bytes_fwd(double score_elems, double act_bytes) { return score_elems * (8.0 + 2.0 * act_bytes); }

double pb_attn_mat_bytes_bwd(double score_elems, double act_bytes) { return score_elems * (8.0 + 5.0 * act_bytes); }

double pb_roofline_s(double flops, double flop_rate, double bytes, double bytes_rate)
{
    double c = flop_rate > 0 ? flops / flop_rate : 0.0, m = bytes_rate > 0 ? bytes / bytes_rate : 0.0;
    return c > m ? c : m;
}

double pb_grad_commit_bytes(double elems, Dtype grad)
{
    if (grad != DT_E4M3 && grad != DT_E5M2) return 0.0;
    return elems * (12.0 + 1.0);
}

int pb_optim_inplace_weight(const StateSet *s)
{
    return s->dt[STATE_MASTER] == DT_NONE && s->dt[STATE_WEIGHT] != DT_NONE;
}

int pb_optim_two_pass(const StateSet *s)
{
    unsigned opt = (1u << STATE_MASTER) | (1u << STATE_M) | (1u << STATE_V);
    if (pb_optim_inplace_weight(s)) opt |= 1u << STATE_WEIGHT;
    return (s->scaled_mask & opt) != 0;
}

double pb_optim_second_pass_bytes(const StateSet *s, double grad, double master, double m, double v)
{
    return pb_optim_two_pass(s) ? grad + master + m + v : 0.0;
}
