/* planner/sweep_rank.c — top-k lists of a sweep (see sweep_rank.h).
 *
 * Plans stay in their slots while the sweep runs (a Plan is some 3 KB); the ranking lives in `order`, an
 * array of slot numbers best first, so keeping a plan moves ints, not plans. sweep_list_finish puts the
 * slots in rank order at the end. */
#include "planner/sweep_rank.h"

#include <string.h>

static int same_layout(const Plan *a, const Plan *b)
{
    const PlanInput *x = &a->in, *y = &b->in;
    return x->stack == y->stack && x->recipe == y->recipe && x->tp == y->tp && x->pp == y->pp && x->cp == y->cp &&
           x->dp == y->dp && x->mbs == y->mbs;
}

int sweep_near_duplicate(const Plan *a, const Plan *b)
{
    if (!same_layout(a, b)) return 0;
    double hi = a->tokens_per_s > b->tokens_per_s ? a->tokens_per_s : b->tokens_per_s;
    double d = a->tokens_per_s - b->tokens_per_s;
    return (d < 0 ? -d : d) <= SWEEP_NEAR_PCT / 100 * hi;
}

typedef int (*Better)(const Plan *a, const Plan *b); /* a ranks before b */

static const Plan *at(const SweepList *l, int rank) { return &l->v[l->order[rank]]; }

/* Where p ranks among the first n: the first rank whose plan p beats (binary search; ties go after). */
static int rank_of(const SweepList *l, int n, const Plan *p, Better better)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (better(p, at(l, mid)))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Put slot s at rank pos, the ranks from pos on moving down one. */
static void place(SweepList *l, int pos, int s)
{
    memmove(&l->order[pos + 1], &l->order[pos], sizeof *l->order * (size_t)(l->n - pos));
    l->order[pos] = s;
    l->n++;
}

static void unrank(SweepList *l, int rank)
{
    memmove(&l->order[rank], &l->order[rank + 1], sizeof *l->order * (size_t)(l->n - rank - 1));
    l->n--;
}

/* Keep p at its rank by `better`; when the list is full the last plan falls off and its slot takes p. */
static void insert(SweepList *l, const Plan *p, uint32_t variants, Better better)
{
    if (l->k <= 0 || (l->n == l->k && !better(p, at(l, l->n - 1)))) return;
    int s = l->n < l->k ? l->n : l->order[l->n - 1];
    if (l->n == l->k) l->n--; /* the last one falls off: its slot is reused */
    l->v[s] = *p;
    if (l->variants) l->variants[s] = variants;
    place(l, rank_of(l, l->n, p, better), s);
}

static int faster(const Plan *a, const Plan *b) { return a->tokens_per_s > b->tokens_per_s; }

int sweep_keep_best(SweepList *l, const Plan *p, int fold)
{
    for (int i = 0; fold && i < l->n; i++) {
        int s = l->order[i];
        if (!sweep_near_duplicate(&l->v[s], p)) continue;
        if (p->tokens_per_s <= l->v[s].tokens_per_s) { /* the kept one stays: p is its variant */
            if (l->variants) l->variants[s]++;
            return 1;
        }
        uint32_t carry = (l->variants ? l->variants[s] : 0) + 1; /* p takes its slot and inherits its variants */
        unrank(l, i);
        l->v[s] = *p;
        if (l->variants) l->variants[s] = carry;
        place(l, rank_of(l, i, p, faster), s); /* p is faster: it can only move up */
        return 1;
    }
    insert(l, p, 0, faster);
    return 0;
}

/* Bytes past the memory limit (max_mem_frac of capacity) of a plan that does not fit. */
static uint64_t over(const Plan *p) { return p->total_bytes > p->limit_bytes ? p->total_bytes - p->limit_bytes : 0; }

static int closer(const Plan *a, const Plan *b)
{
    return over(a) < over(b) || (over(a) == over(b) && a->tokens_per_s > b->tokens_per_s);
}

/* A full list keeps p only when p is over by no more than its last plan (p cannot be closer than a plan
 * over by less; the same layout with the same bytes is over by the same amount, so never further). */
int sweep_nearest_may_keep(const SweepList *l, const Plan *p)
{
    if (l->k <= 0) return 0;
    return l->n < l->k || over(p) <= over(&l->v[l->order[l->n - 1]]);
}

void sweep_keep_nearest(SweepList *l, const Plan *p)
{
    for (int i = 0; i < l->n; i++) {
        int s = l->order[i];
        if (!same_layout(&l->v[s], p) || l->v[s].total_bytes != p->total_bytes) continue;
        if (!closer(p, &l->v[s])) return;
        unrank(l, i);
        l->v[s] = *p;
        place(l, rank_of(l, i, p, closer), s);
        return;
    }
    insert(l, p, 0, closer);
}

void sweep_list_finish(SweepList *l)
{
    /* slot order[r] holds rank r: move each plan to slot r by following the permutation's cycles */
    static Plan tmp;
    for (int r = 0; r < l->n; r++) {
        if (l->order[r] == r || l->order[r] < 0) continue;
        int cur = r;
        tmp = l->v[r];
        uint32_t tv = l->variants ? l->variants[r] : 0;
        for (;;) { /* slot cur takes the plan of rank cur, which sits in slot order[cur] */
            int from = l->order[cur];
            l->order[cur] = -1 - cur; /* done */
            if (from == r) {
                l->v[cur] = tmp;
                if (l->variants) l->variants[cur] = tv;
                break;
            }
            l->v[cur] = l->v[from];
            if (l->variants) l->variants[cur] = l->variants[from];
            cur = from;
        }
    }
    for (int r = 0; r < l->n; r++) l->order[r] = r;
}
