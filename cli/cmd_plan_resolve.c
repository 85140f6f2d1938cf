/* cli/cmd_plan_resolve.c — from parsed options to a plan's input: the catalog rows named on the command
 * line, the stack's values under the ones given explicitly, and the headline example's layout. */
#include <stdio.h>

#include "cli/cmd_plan.h"

void plan_args_keep_given(const PlanArgs *a, const PlanInput *given, PlanInput *in)
{
    unsigned g = a->given;
    if (g & PG_ATTN) in->attn = given->attn;
    if (g & PG_SP) in->sp = given->sp;
    if (g & PG_OV_EP) in->overlap_ep = given->overlap_ep;
    if (g & PG_MAIN_GRAD) in->main_grad = given->main_grad;
    if (g & PG_FP8_CACHE) in->fp8_weight_cache = given->fp8_weight_cache;
    if (g & PG_SWIGLU) in->fused_swiglu = given->fused_swiglu;
    if (g & PG_FUSION) in->fusion = given->fusion, in->grad_acc_fusion = in->fusion == FUSE_TE;
    if (g & PG_GRAD_ACC) in->grad_acc_fusion = given->grad_acc_fusion;
    if (g & PG_LAUNCH) in->launch_s = given->launch_s;
    if (g & PG_OV_TP) in->overlap_tp = given->overlap_tp;
    if (g & PG_OV_TP_ON) in->overlap_tp = in->stack ? in->stack->overlap_tp_on : 1;
    if (g & PG_OV_DP) in->overlap_dp = given->overlap_dp;
    if (g & PG_OV_PP) in->overlap_pp = given->overlap_pp;
    if (g & PG_OV_CP) in->overlap_cp = given->overlap_cp;
    if (g & PG_RESERVE) in->frag_frac = given->frag_frac;
}

/* Apply the stack's row, then put back what the command line set explicitly; a MoE model's --etp, when not
 * given, is the stack's default (Megatron-Core's: the TP size). */
static void apply_stack(PlanArgs *a, const StackSpec *st)
{
    PlanInput given = a->in;
    plan_input_use_stack(&a->in, st);
    plan_args_keep_given(a, &given, &a->in);
    if (!a->layout_given[9]) a->in.etp = stack_default_etp(st, a->in.model, a->in.tp);
}

int plan_args_resolve(const char *cmd, const Catalog *c, PlanArgs *a, const char *recipe)
{
    char names[2048];
    if (a->from_given && a->from.have_model && a->model == a->from.model.name) {
        Err e;
        if (!(a->in.model = plan_from_model(c, a, &e))) return cli_fail(cmd, &e);
    } else
        a->in.model = catalog_model(c, a->model);
    if (!a->in.model) {
        catalog_model_names(c, names, sizeof names);
        if (a->from_given && a->model == a->from.model_name) {
            Err e;
            err_set(&e, ST_DATA, "%s:%d: model.name and model.flavor: no catalog model '%s' (known: %s); give --model",
                    a->from.path, a->from.model_line, a->model, names);
            return cli_fail(cmd, &e);
        }
        return cli_usage(cmd, "--model: unknown model '%s' (known: %s)", a->model, names);
    }
    if (a->in.seq > a->in.model->seq_len && a->in.model->pos != POS_LEARNED) /* learned: the planner refuses */
        fprintf(stderr,
                "fp8plan %s: warning: --seq %u is beyond %s's context of %u tokens; the plan counts memory and time "
                "at that\n  length, as for a context-extension run (the model was not trained for it)\n",
                cmd, a->in.seq, a->in.model->name, a->in.model->seq_len);
    a->in.gpu = catalog_gpu(c, a->gpu);
    if (!a->in.gpu) {
        catalog_gpu_names(c, names, sizeof names);
        return cli_usage(cmd, "--gpu: unknown GPU '%s' (known: %s)", a->gpu, names);
    }
    if (a->in.stack == NULL) {
        const char *sn = a->stack ? a->stack : CATALOG_DEFAULT_STACK;
        const StackSpec *st = catalog_stack(c, sn);
        if (!st) {
            catalog_stack_names(c, names, sizeof names);
            return cli_usage(cmd, "--stack: unknown stack '%s' (known: %s)", sn, names);
        }
        apply_stack(a, st);
    }
    if (recipe) {
        a->in.recipe = catalog_recipe(c, recipe);
        if (!a->in.recipe) {
            catalog_recipe_names(c, names, sizeof names);
            return cli_usage(cmd, "unknown recipe '%s' (known: %s)", recipe, names);
        }
    }
    return 0;
}

const char plan_headline_model[] = "gpt-175b", plan_headline_gpu[] = "h100-sxm";

void plan_args_headline(PlanArgs *a)
{
    if (a->model != plan_headline_model) return;
    if (!a->layout_given[0]) a->in.tp = 8;
    if (!a->layout_given[1]) a->in.pp = 4;
    if (!a->layout_given[4]) a->in.dp = 4;
    if (!a->layout_given[7]) a->in.sharding = SHARD_DIST_OPT;
}
