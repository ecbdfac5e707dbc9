/* How a measuring thread tells the trace reader of a late wake-up (--trace-keep spikes): a single-producer
 * single-consumer queue per thread of (programmed, actual) times (--mode poll: a gap's start and end).  The
 * post is two relaxed atomic loads, two stores and a release store: no syscall, no lock, no allocation in the
 * measuring loop.  A full queue (the reader more than TRACE_LATE_SLOTS late wake-ups behind) counts the notice
 * as dropped: its spike gets no window, and the metadata says how many. */
#ifndef JITTERSCOPE_TRACE_LATE_H
#define JITTERSCOPE_TRACE_LATE_H

#include <stdatomic.h>
#include <stdint.h>

#define TRACE_LATE_SLOTS 1024

struct trace_late {
	int64_t threshold_ns;          /* 0: no notices (no --trace, or --trace-keep all) */
	_Atomic uint64_t head;         /* written by the measuring thread */
	_Atomic uint64_t tail;         /* written by the reader */
	_Atomic uint64_t dropped;      /* notices that found the queue full */
	_Atomic int64_t next_ns;       /* the thread's next target: every later notice is of a wake-up from there on
	                                * (INT64_MAX once it has ended), so the reader knows which windows are final;
	                                * a poll loop (no target) publishes its latest read every ms (pollloop.c) */
	int64_t expected[TRACE_LATE_SLOTS], actual[TRACE_LATE_SLOTS];
};

/* Measuring thread: a wake-up later than the threshold. */
static inline void trace_late_post(struct trace_late *q, int64_t expected_ns, int64_t actual_ns)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
	if (h - atomic_load_explicit(&q->tail, memory_order_acquire) >= TRACE_LATE_SLOTS) {
		atomic_fetch_add_explicit(&q->dropped, 1, memory_order_relaxed);
		return;
	}
	q->expected[h % TRACE_LATE_SLOTS] = expected_ns;
	q->actual[h % TRACE_LATE_SLOTS] = actual_ns;
	atomic_store_explicit(&q->head, h + 1, memory_order_release);
}

/* Measuring thread: every notice up to here is posted; the next wake-up is programmed for target_ns. */
static inline void trace_late_next(struct trace_late *q, int64_t target_ns)
{
	atomic_store_explicit(&q->next_ns, target_ns, memory_order_release);
}

#endif
