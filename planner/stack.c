/* planner/stack.c — names of the stack enums (see stack.h). */
#include "planner/stack.h"

#include <stdio.h>
#include <strings.h>

static const char *const attn_names[] = {[ATTN_FLASH] = "flash2",
                                         [ATTN_MATERIALIZED] = "materialized",
                                         [ATTN_FLASH3] = "flash3",
                                         [ATTN_CUDNN] = "cudnn",
                                         [ATTN_TE] = "te"};
static const char *const main_grad_names[] = {
    [MAIN_GRAD_RECIPE] = "recipe", [MAIN_GRAD_FP32] = "fp32", [MAIN_GRAD_BF16] = "bf16"};
static const char *const fusion_names[] = {
    [FUSE_TE] = "te", [FUSE_COMPILE] = "compile", [FUSE_EAGER] = "eager", [FUSE_FP8PLAN] = "fp8plan"};
_Static_assert(sizeof attn_names / sizeof *attn_names == ATTN_COUNT_, "attn_names");
_Static_assert(sizeof main_grad_names / sizeof *main_grad_names == MAIN_GRAD_COUNT_, "main_grad_names");
_Static_assert(sizeof fusion_names / sizeof *fusion_names == FUSE_COUNT_, "fusion_names");

static int find(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(s, names[i])) return i;
    return -1;
}

const char *attn_name(AttnImpl a) { return (unsigned)a < ATTN_COUNT_ ? attn_names[a] : "?"; }
const char *stack_label(const StackSpec *s, char *buf, size_t size)
{
    if (!s) return "none";
    if (!*s->alias) return s->name;
    snprintf(buf, size, "%s (%s)", s->name, s->alias);
    return buf;
}

const char *main_grad_name(MainGrad g) { return (unsigned)g < MAIN_GRAD_COUNT_ ? main_grad_names[g] : "?"; }
const char *fusion_name(KernelFusion f) { return (unsigned)f < FUSE_COUNT_ ? fusion_names[f] : "?"; }

int attn_parse(const char *s, AttnImpl *out)
{
    int i = !strcasecmp(s, "flash") ? ATTN_FLASH : find(attn_names, ATTN_COUNT_, s);
    return i < 0 ? -1 : (*out = (AttnImpl)i, 0);
}

int main_grad_parse(const char *s, MainGrad *out)
{
    int i = find(main_grad_names, MAIN_GRAD_COUNT_, s);
    return i < 0 ? -1 : (*out = (MainGrad)i, 0);
}

int fusion_parse(const char *s, KernelFusion *out)
{
    int i = find(fusion_names, FUSE_COUNT_, s);
    return i < 0 ? -1 : (*out = (KernelFusion)i, 0);
}
