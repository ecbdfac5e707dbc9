/* See pollwin.h. */
#include "pollwin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int64_t pollwin_edge(int k)
{
	if (k >= POLL_BUCKETS)
		return INT64_MAX;
	if (k < POLL_LINEAR)
		return k;
	int octave = 3 + (k - POLL_LINEAR) / 4, sub = (k - POLL_LINEAR) % 4;
	return ((int64_t)1 << octave) + (int64_t)sub * ((int64_t)1 << (octave - 2));
}

int pollwin_ring_init(struct pollwin_ring *r, size_t capacity)
{
	size_t n = 2;
	while (n < capacity)
		n *= 2;
	r->slots = calloc(n, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	r->mask = n - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->drops, 0);
	return 0;
}

void pollwin_ring_free(struct pollwin_ring *r)
{
	free(r->slots);
	r->slots = NULL;
}

int pollwin_push(struct pollwin_ring *r, const struct poll_window *w)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (head - tail > r->mask) {
		atomic_store_explicit(&r->drops, atomic_load_explicit(&r->drops, memory_order_relaxed) + 1,
				      memory_order_release);
		return -ENOBUFS;
	}
	memcpy(&r->slots[head & r->mask], w, sizeof(*w));
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
	return 0;
}

int pollwin_pop(struct pollwin_ring *r, struct poll_window *out)
{
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	if (head == tail)
		return 0;
	memcpy(out, &r->slots[tail & r->mask], sizeof(*out));
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	return 1;
}
