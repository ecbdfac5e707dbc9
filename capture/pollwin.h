/* Poll mode's per-second table as the polling thread builds it: one window per
 * thread per second (kind poll, docs/dataset-format.md "Poll windows"), passed
 * to the writer through its own single-producer/single-consumer ring (the same
 * lock-free pattern as ring.h; a second is long, so the ring is small). */
#ifndef JITTERSCOPE_POLLWIN_H
#define JITTERSCOPE_POLLWIN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Log buckets of every gap: [0,8) one per ns, then 4 per octave from 8 ns up to
 * 2^36 ns, the last bucket [2^36 ns, INT64_MAX) open.  Bucket k = [edge(k), edge(k+1)). */
#define POLL_LINEAR 8
#define POLL_TOP_OCTAVE 36
#define POLL_BUCKETS (POLL_LINEAR + (POLL_TOP_OCTAVE - 3) * 4 + 1)
#define POLL_WINDOW_NS 1000000000LL

struct poll_window {
	int64_t start_ns;      /* CLOCK_MONOTONIC start of the window */
	int64_t window_ns;     /* length polled (1 s except the last) */
	uint64_t iterations;   /* loop iterations whose gap started in the window */
	int64_t noise_ns;      /* sum of the gaps >= threshold starting in the window */
	uint64_t interruptions; /* gaps >= threshold starting in the window (rows, dropped ones included) */
	int64_t max_gap_ns;    /* largest gap starting in the window, any size */
	uint64_t hist[POLL_BUCKETS];
};

/* The bucket of a gap of ns nanoseconds: a clz and two shifts (in the loop). */
static inline int pollwin_bucket(uint64_t ns)
{
	if (ns < POLL_LINEAR)
		return (int)ns;
	int octave = 63 - __builtin_clzll(ns);
	if (octave >= POLL_TOP_OCTAVE)
		return POLL_BUCKETS - 1;
	return POLL_LINEAR + (octave - 3) * 4 + (int)((ns >> (octave - 2)) & 3);
}

/* The lower edge of bucket k (k = POLL_BUCKETS gives the open end, INT64_MAX). */
int64_t pollwin_edge(int k);

struct pollwin_ring {
	_Alignas(64) _Atomic size_t head;
	_Alignas(64) _Atomic size_t tail;
	_Alignas(64) _Atomic uint64_t drops;
	size_t mask;
	struct poll_window *slots;
};

/* capacity rounded up to a power of two; -ENOMEM */
int pollwin_ring_init(struct pollwin_ring *r, size_t capacity);
void pollwin_ring_free(struct pollwin_ring *r);
/* Producer: 0, or -ENOBUFS when full (counted). */
int pollwin_push(struct pollwin_ring *r, const struct poll_window *w);
/* Consumer: one window into *out; 1 if there was one, else 0. */
int pollwin_pop(struct pollwin_ring *r, struct poll_window *out);

#endif
