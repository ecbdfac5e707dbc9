/* Single-producer/single-consumer sample ring; see ring.h.
 * Pop never blocks and never allocates; push lives in ring.h (inlined in the loop). */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int ring_init(struct ring *r, size_t capacity)
{
	size_t cap = 2;
	while (cap < capacity)
		cap <<= 1;
	memset(r, 0, sizeof(*r));
	r->slots = calloc(cap, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	/* Touch and lock now, so the first pushes never page-fault (mlockall may be off). */
	mlock(r->slots, cap * sizeof(*r->slots));
	r->mask = cap - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->drops, 0);
	return 0;
}

void ring_free(struct ring *r)
{
	if (r->slots)
		munlock(r->slots, (r->mask + 1) * sizeof(*r->slots));
	free(r->slots);
	r->slots = NULL;
}

size_t ring_pop(struct ring *r, struct sample *out, size_t max)
{
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	size_t n = head - tail;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = r->slots[(tail + i) & r->mask];
	atomic_store_explicit(&r->tail, tail + n, memory_order_release);
	return n;
}

size_t ring_count(struct ring *r)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	return head - atomic_load_explicit(&r->tail, memory_order_acquire);
}

uint64_t ring_drops(struct ring *r)
{
	return atomic_load_explicit(&r->drops, memory_order_acquire);
}

size_t ring_capacity(const struct ring *r)
{
	return r->mask + 1;
}
