/* planner/sweep_rank.c — top-k lists of a sweep (see sweep_rank.h). */
#include "planner/sweep_rank.h"

#include <string.h>

static int same_layout(const Plan *a, const Plan *b);

int sweep_near_duplicate(const Plan *a, const Plan *b)
{
    if (!same_layout(a, b)) return 0;
    double hi = a->tokens_per_s > b->tokens_per_s ? a->tokens_per_s : b->tokens_per_s;
    double d = a->tokens_per_s - b->tokens_per_s;
    return (d < 0 ? -d : d) <= SWEEP_NEAR_PCT / 100 * hi;
}

static void drop(SweepList *l, int i)
{
    memmove(&l->v[i], &l->v[i + 1], sizeof *l->v * (size_t)(l->n - i - 1));
    if (l->variants) memmove(&l->variants[i], &l->variants[i + 1], sizeof *l->variants * (size_t)(l->n - i - 1));
    l->n--;
}

/* Insert p at its place by `better` (a before b when better(a, b)); the last plan falls off when full. */
static void insert(SweepList *l, const Plan *p, uint32_t variants, int (*better)(const Plan *, const Plan *))
{
    if (l->k <= 0 || (l->n == l->k && !better(p, &l->v[l->n - 1]))) return;
    int pos = l->n < l->k ? l->n : l->k - 1;
    while (pos > 0 && better(p, &l->v[pos - 1])) pos--;
    int last = l->n < l->k ? l->n : l->k - 1; /* the slot that falls off (or the new end) */
    if (last > pos) {
        memmove(&l->v[pos + 1], &l->v[pos], sizeof *l->v * (size_t)(last - pos));
        if (l->variants) memmove(&l->variants[pos + 1], &l->variants[pos], sizeof *l->variants * (size_t)(last - pos));
    }
    l->v[pos] = *p;
    if (l->variants) l->variants[pos] = variants;
    if (l->n < l->k) l->n++;
}

static int faster(const Plan *a, const Plan *b) { return a->tokens_per_s > b->tokens_per_s; }

int sweep_keep_best(SweepList *l, const Plan *p, int fold)
{
    uint32_t carry = 0;
    int folded = 0;
    for (int i = 0; fold && i < l->n; i++) {
        if (!sweep_near_duplicate(&l->v[i], p)) continue;
        if (p->tokens_per_s <= l->v[i].tokens_per_s) { /* the kept one stays: p is its variant */
            if (l->variants) l->variants[i]++;
            return 1;
        }
        carry = (l->variants ? l->variants[i] : 0) + 1; /* p replaces it and inherits its variants */
        drop(l, i);
        folded = 1;
        break;
    }
    insert(l, p, carry, faster);
    return folded;
}

/* Bytes past the memory limit (max_mem_frac of capacity) of a plan that does not fit. */
static uint64_t over(const Plan *p) { return p->total_bytes > p->limit_bytes ? p->total_bytes - p->limit_bytes : 0; }

static int closer(const Plan *a, const Plan *b)
{
    return over(a) < over(b) || (over(a) == over(b) && a->tokens_per_s > b->tokens_per_s);
}

static int same_layout(const Plan *a, const Plan *b)
{
    const PlanInput *x = &a->in, *y = &b->in;
    return x->stack == y->stack && x->recipe == y->recipe && x->tp == y->tp && x->pp == y->pp && x->cp == y->cp &&
           x->dp == y->dp && x->mbs == y->mbs;
}

void sweep_keep_nearest(SweepList *l, const Plan *p)
{
    for (int i = 0; i < l->n; i++)
        if (same_layout(&l->v[i], p) && l->v[i].total_bytes == p->total_bytes) {
            if (!closer(p, &l->v[i])) return;
            drop(l, i);
            break;
        }
    insert(l, p, 0, closer);
}
