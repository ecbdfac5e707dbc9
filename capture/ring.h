/* Single-producer/single-consumer ring of samples (C11 atomics, no locks).
 * The measuring thread pushes, the writer pops; a full ring drops the new
 * sample and counts it.  Memory is allocated once at setup and locked. */
#ifndef JITTERSCOPE_RING_H
#define JITTERSCOPE_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

struct ring {
	_Alignas(64) _Atomic size_t head; /* written by the producer only */
	_Alignas(64) _Atomic size_t tail; /* written by the consumer only */
	_Alignas(64) _Atomic uint64_t drops; /* written by the producer only */
	size_t mask;
	struct sample *slots;
};

/* capacity is rounded up to a power of two (>= 2).  -ENOMEM on failure. */
int ring_init(struct ring *r, size_t capacity);
void ring_free(struct ring *r);

/* Producer: copy *s in; 0, or -ENOBUFS when full (the drop is counted). */
static inline int ring_push(struct ring *r, const struct sample *s)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (head - tail > r->mask) {
		atomic_store_explicit(&r->drops, atomic_load_explicit(&r->drops, memory_order_relaxed) + 1,
				      memory_order_release);
		return -ENOBUFS;
	}
	r->slots[head & r->mask] = *s;
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
	return 0;
}

/* Consumer: copy up to max samples out; returns how many. */
size_t ring_pop(struct ring *r, struct sample *out, size_t max);

/* Samples waiting and drops so far (consumer or any observer). */
size_t ring_count(struct ring *r);
uint64_t ring_drops(struct ring *r);
size_t ring_capacity(const struct ring *r);

#endif
