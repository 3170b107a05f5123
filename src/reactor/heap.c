/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Min-heap of time sources ordered by deadline. Each source remembers its
 * index so removal and re-arming are O(log n); 10,000 pending timers cost
 * one array, not one kernel timer each.
 */
#include "heap.h"

#include "ao/alloc.h"

static bool earlier(const struct ao_source *a, const struct ao_source *b)
{
        return a->time.usec < b->time.usec;
}

static void place(struct ao_reactor *r, size_t i, struct ao_source *s)
{
        r->heap[i] = s;
        s->time.heap_index = i;
}

static void sift_up(struct ao_reactor *r, size_t i)
{
        struct ao_source *s = r->heap[i];
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!earlier(s, r->heap[parent]))
                        break;
                place(r, i, r->heap[parent]);
                i = parent;
        }
        place(r, i, s);
}

static void sift_down(struct ao_reactor *r, size_t i)
{
        struct ao_source *s = r->heap[i];
        for (;;) {
                size_t child = 2 * i + 1;
                if (child >= r->heap_len)
                        break;
                if (child + 1 < r->heap_len && earlier(r->heap[child + 1], r->heap[child]))
                        child++;
                if (!earlier(r->heap[child], s))
                        break;
                place(r, i, r->heap[child]);
                i = child;
        }
        place(r, i, s);
}

void reactor_heap_push(struct ao_reactor *r, struct ao_source *s)
{
        if (r->heap_len == r->heap_cap) {
                r->heap_cap = r->heap_cap ? r->heap_cap * 2 : 64;
                r->heap = ao_xreallocarray(r->heap, r->heap_cap, sizeof(*r->heap));
        }
        place(r, r->heap_len++, s);
        sift_up(r, s->time.heap_index);
}

void reactor_heap_remove(struct ao_reactor *r, struct ao_source *s)
{
        size_t i = s->time.heap_index;
        if (i == SIZE_MAX)
                return;
        s->time.heap_index = SIZE_MAX;
        struct ao_source *last = r->heap[--r->heap_len];
        if (i == r->heap_len)
                return;
        place(r, i, last);
        /* The moved element may belong above or below its new place. */
        sift_up(r, i);
        sift_down(r, last->time.heap_index);
}

struct ao_source *reactor_heap_top(const struct ao_reactor *r)
{
        return r->heap_len ? r->heap[0] : NULL;
}
