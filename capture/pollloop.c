/* The poll loop; see pollloop.h.  Times are read raw (TSC cycles, or ns from
 * the vDSO clock) and converted to CLOCK_MONOTONIC ns against an anchor pair
 * (raw, CLOCK_MONOTONIC) taken at the start of every window, so the TSC
 * calibration's error and NTP's slewing cannot add up over a long run. */
#include "pollloop.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAL_ROUNDS 129
#define CAL_READS 256
/* --trace-keep spikes: how often the loop tells the trace reader how far it has got (trace_late_next).  A busy
 * loop has no next wake-up; its next notice is of a gap starting at or after its latest read, so that read is
 * what it publishes.  It rides on the boundary check the loop makes anyway (no new work per iteration): 1 ms
 * keeps a window final within a millisecond of its end, at one slow-path pass per ms (tens of ns). */
#define POLL_PUBLISH_NS 1000000
/* ... published this much early: re-anchoring at a window's start may step the conversion by the TSC
 * calibration's error over a second (well under a µs), and a notice must never start before what was said */
#define POLL_PUBLISH_SLACK_NS 10000

struct poll_state {
	uint64_t anchor_raw;
	int64_t anchor_ns;
	double scale;           /* ns per raw unit */
	int64_t window_end_ns;
	uint64_t end_raw;       /* raw time of the window's end or the run's end, whichever first */
	uint64_t boundary_raw;  /* end_raw, or the next progress report to the trace reader when that is sooner */
	uint64_t seq;
	struct poll_window win;
};

static inline int64_t pollloop_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no syscall with a TSC or kvm-clock clocksource */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t pollloop_rdtsc(void)
{
#if COUNTERS_HAVE_TSC
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

static inline uint64_t pollloop_read(const struct timerloop *t)
{
	return t->poll_tsc ? pollloop_rdtsc() : (uint64_t)pollloop_mono_ns();
}

static inline int64_t pollloop_ns(const struct poll_state *st, uint64_t raw)
{
	return st->anchor_ns + (int64_t)((double)(int64_t)(raw - st->anchor_raw) * st->scale);
}

bool pollloop_tsc_usable(void)
{
#if COUNTERS_HAVE_TSC
	char name[64] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	bool ok = fgets(name, sizeof(name), f) && strncmp(name, "tsc\n", 4) == 0;
	fclose(f);
	return ok; /* the kernel keeps CLOCK_MONOTONIC on it: constant, synchronised across CPUs */
#else
	return false;
#endif
}

/* One loop iteration's bookkeeping of a gap (any size): the histogram and the maximum. */
static inline uint64_t pollloop_account(struct poll_window *w, uint64_t raw_gap, double scale)
{
	uint64_t gap = (uint64_t)((double)raw_gap * scale);
	w->iterations++;
	w->hist[pollwin_bucket(gap)]++;
	if ((int64_t)gap > w->max_gap_ns)
		w->max_gap_ns = (int64_t)gap;
	return gap;
}

static void pollloop_anchor(const struct timerloop *t, struct poll_state *st)
{
	st->anchor_raw = pollloop_read(t);
	st->anchor_ns = t->poll_tsc ? pollloop_mono_ns() : (int64_t)st->anchor_raw;
	int64_t end = t->end_ns < st->window_end_ns ? t->end_ns : st->window_end_ns;
	double ahead = (double)(end - st->anchor_ns) / st->scale;
	st->end_raw = st->anchor_raw + (ahead > 0 ? (uint64_t)ahead : 0);
	st->boundary_raw = st->end_raw;
}

/* --trace-keep spikes: every gap posted so far is in the queue; the next starts at or after `now`. */
static void pollloop_publish(struct timerloop *t, struct poll_state *st, uint64_t now)
{
	if (!t->late.threshold_ns)
		return;
	trace_late_next(&t->late, pollloop_ns(st, now) - POLL_PUBLISH_SLACK_NS);
	uint64_t next = now + (uint64_t)((double)POLL_PUBLISH_NS / st->scale);
	st->boundary_raw = next < st->end_raw ? next : st->end_raw;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void pollloop_calibrate(struct timerloop *t)
{
	static _Thread_local double iter[CAL_ROUNDS], reads[CAL_ROUNDS];
	struct poll_state st = {.scale = t->poll_tsc ? t->ns_per_cycle : 1.0};
	for (int r = 0; r < CAL_ROUNDS; r++) {
		uint64_t t0 = pollloop_read(t), prev = t0, sink = 0;
		for (int i = 0; i < CAL_READS; i++)
			sink += pollloop_read(t);
		uint64_t t1 = pollloop_read(t);
		reads[r] = (double)(t1 - t0) * st.scale / (CAL_READS + 1);
		prev = t1;
		for (int i = 0; i < CAL_READS; i++) { /* the loop's own body, thresholds compared as in the loop */
			uint64_t now = pollloop_read(t);
			uint64_t gap = pollloop_account(&st.win, now - prev, st.scale);
			sink += gap >= (uint64_t)t->poll_threshold_ns;
			prev = now;
		}
		iter[r] = (double)(prev - t1) * st.scale / CAL_READS;
		__asm__ volatile("" : : "r"(sink));
	}
	qsort(iter, CAL_ROUNDS, sizeof(double), cmp_double);
	qsort(reads, CAL_ROUNDS, sizeof(double), cmp_double);
	t->iteration_min_ns = iter[0];
	t->iteration_median_ns = iter[CAL_ROUNDS / 2];
	t->clock_read_ns = reads[CAL_ROUNDS / 2];
}

/* A gap >= threshold: one row (seq advances even when the ring is full: the gap shows the drop).
 * Returns the raw time the loop goes on from (after the counters' reads, whose time is not a gap). */
static uint64_t pollloop_interruption(struct timerloop *t, struct poll_state *st, uint64_t prev, uint64_t gap,
				      uint64_t now)
{
	struct sample s;
	memset(&s, 0, sizeof(s));
	s.seq = (int64_t)st->seq++;
	s.expected_ns = pollloop_ns(st, prev);
	s.actual_ns = s.expected_ns + (int64_t)gap;
	st->win.noise_ns += (int64_t)gap;
	st->win.interruptions++;
	if (t->poll_tsc) {
		s.tsc = prev;
		(void)counters_tsc(&s.run_cpu);
	} else {
		s.run_cpu = sched_getcpu(); /* the vDSO getcpu */
	}
	if (t->poll_counters) {
		t->counter_errors += (uint64_t)counters_read(&t->counters, s.counters);
		uint64_t after = pollloop_read(t);
		t->blind_ns += (uint64_t)((double)(after - now) * st->scale);
		now = after;
	}
	ring_push(&t->ring, &s);
	atomic_store_explicit(&t->wakeups, st->seq, memory_order_relaxed);
	/* --trace-keep spikes: the gap is its window (start as "programmed", end as "actual"); a queue slot, no
	 * syscall (a gap below the threshold, or no --trace-keep spikes: threshold_ns 0, nothing posted) */
	if (t->late.threshold_ns && (int64_t)gap >= t->late.threshold_ns)
		trace_late_post(&t->late, s.expected_ns, s.actual_ns);
	return now;
}

static void pollloop_emit(struct timerloop *t, struct poll_state *st, int64_t window_ns)
{
	st->win.window_ns = window_ns;
	pollwin_push(&t->windows, &st->win); /* full only when the writer has stopped draining: counted */
	int64_t next = st->win.start_ns + POLL_WINDOW_NS;
	memset(&st->win, 0, sizeof(st->win));
	st->win.start_ns = next;
}

/* The loop reached the window's end, the run's end, the stop flag or a progress report: emit the window(s),
 * report; false to stop. */
static bool pollloop_boundary(struct timerloop *t, struct poll_state *st, uint64_t now)
{
	if (now < st->end_raw && !atomic_load_explicit(t->stop, memory_order_relaxed)) {
		pollloop_publish(t, st, now);
		return true;
	}
	int64_t now_ns = pollloop_ns(st, now);
	if (atomic_load_explicit(t->stop, memory_order_relaxed) || now_ns >= t->end_ns) {
		int64_t last = now_ns < t->end_ns ? now_ns : t->end_ns;
		if (last > st->window_end_ns)
			last = st->window_end_ns;
		pollloop_emit(t, st, last - st->win.start_ns);
		return false;
	}
	while (now_ns >= st->window_end_ns) { /* a gap longer than a second leaves empty windows between */
		pollloop_emit(t, st, POLL_WINDOW_NS);
		st->window_end_ns += POLL_WINDOW_NS;
	}
	pollloop_anchor(t, st);
	pollloop_publish(t, st, now); /* the loop goes on from `now` (its prev), read before the anchor */
	return true;
}

void pollloop_measure(struct timerloop *t, int64_t start_ns)
{
	struct poll_state st;
	memset(&st, 0, sizeof(st));
	st.scale = t->poll_tsc ? t->ns_per_cycle : 1.0;
	while (pollloop_mono_ns() < start_ns && !atomic_load_explicit(t->stop, memory_order_relaxed))
		;
	st.window_end_ns = INT64_MAX;
	pollloop_anchor(t, &st);
	st.win.start_ns = st.anchor_ns;
	st.window_end_ns = st.anchor_ns + POLL_WINDOW_NS;
	pollloop_anchor(t, &st);
	pollloop_publish(t, &st, st.anchor_raw);
	const uint64_t threshold = (uint64_t)t->poll_threshold_ns;
	uint64_t prev = pollloop_read(t);
	for (;;) {
		uint64_t now = pollloop_read(t);
		uint64_t gap = pollloop_account(&st.win, now - prev, st.scale);
		if (gap >= threshold)
			now = pollloop_interruption(t, &st, prev, gap, now);
		if (now >= st.boundary_raw || atomic_load_explicit(t->stop, memory_order_relaxed))
			if (!pollloop_boundary(t, &st, now))
				break;
		prev = now;
	}
}
