/* exec/model/grad_bucket.h — the gradient all-reduce's buckets (model_grad_bucket.c): the gradients of one
 * communicator, one class and one dtype that lie back to back in memory are reduced in one call. */
#ifndef FP8PLAN_EXEC_MODEL_GRAD_BUCKET_H
#define FP8PLAN_EXEC_MODEL_GRAD_BUCKET_H

#include <stdint.h>

typedef struct GradSpan {
    uint32_t param; /* the parameter's index */
    int group;      /* the communicator: 0 data-parallel, 1 expert data-parallel */
    int cls;        /* the state class (ModelClass: block linear weights, the others, the routed experts) */
    int dtype;      /* the gradient's dtype (Dtype) */
    int alone;      /* 1: reduced in a call of its own (an FP8 gradient with its own scaling record) */
    uintptr_t addr; /* the gradient's address */
    uint64_t bytes; /* its bytes */
} GradSpan;

/* Sort v by (group, class, dtype, address) and cut it into buckets: a span joins the previous one's bucket when
 * both are of one group, class and dtype, neither is alone and it starts where the previous one ends. first[b]
 * (room for n) is bucket b's first span; returns the number of buckets. */
uint32_t grad_buckets(GradSpan *v, uint32_t n, uint32_t *first);

#endif
