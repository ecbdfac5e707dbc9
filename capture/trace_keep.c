/* --trace-keep spikes: the reader keeps each measured CPU's recent decoded events in a ring and writes only
 * windows around late wake-ups (and a background sample) to the events table; see trace.h and
 * docs/dataset-format.md ("Trace events", "Kept windows").  Reader thread only.
 *
 * A window [programmed - PRE, actual + POST] is written on every measured CPU once the reader has read
 * past its end (the kernel buffers were drained after that instant), in start order, overlapping ones
 * merged.  Each CPU's part opens with a `window` row naming the task that held the CPU at the window's
 * start and re-states the interrupts, vectors and softirqs in progress (ts_ns = the window's start,
 * value = their own entry time), so the window reads on its own; it closes with a `window_end` row.  The
 * context is carried exactly: every event leaving a ring, and every event before a window, is applied to
 * the CPU's context cursor.  A window whose start the ring no longer held is written, flagged incomplete
 * and counted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define KEEP_DEPTH 8              /* nested contexts re-stated at a window's start */
#define KEEP_RING_START 16384     /* rows per CPU at the start: 0.25 s of 65,000 events a second */
#define KEEP_RING_MAX (1u << 21)  /* rows per CPU at most (120 MB of rows) */
#define KEEP_BG_FIRST_NS 1000000000 /* the first background window, after the start */

struct keep_ctx {
	int32_t pid, comm, prio;
	int depth;
	struct trace_row open[KEEP_DEPTH];
};

struct keep_cpu {
	int cpu;
	struct trace_row *rows;
	uint64_t cap, head, tail;   /* logical indices; rows[i % cap] */
	uint64_t cursor;            /* ctx is the context just before row `cursor` */
	struct keep_ctx ctx;
	int64_t evicted_ts;         /* the newest row pushed out of the ring (INT64_MIN: none) */
	uint64_t tick_rows;         /* rows pushed since the last tick */
};

struct keep_win {
	int64_t start, end;
	int32_t flags;
};

struct trace_keep {
	int ncpus;
	struct keep_cpu *cpu;
	short index[CONFIG_MAX_CPUS]; /* cpu number -> index + 1 */
	struct keep_win *pending;
	size_t npending, cap_pending;
	int64_t emitted_end;        /* end of the last window written */
	int64_t next_bg_ns;
};

static void keep_ctx_reset(struct keep_ctx *c)
{
	c->pid = c->comm = c->prio = -1;
	c->depth = 0;
}

int trace_keep_open(struct trace *t)
{
	if (t->cfg->trace_keep != KEEP_SPIKES)
		return 0;
	struct trace_keep *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	t->keep = k;
	k->ncpus = t->cfg->ncpus;
	k->cpu = calloc((size_t)k->ncpus, sizeof(*k->cpu));
	if (!k->cpu)
		return -ENOMEM;
	for (int i = 0; i < k->ncpus; i++) {
		struct keep_cpu *c = &k->cpu[i];
		c->cpu = t->cfg->cpus[i];
		c->cap = t->cfg->trace_ring_rows ? t->cfg->trace_ring_rows : KEEP_RING_START;
		c->evicted_ts = INT64_MIN;
		keep_ctx_reset(&c->ctx);
		k->index[c->cpu] = (short)(i + 1);
		if (!(c->rows = calloc(c->cap, sizeof(*c->rows))))
			return -ENOMEM;
	}
	k->emitted_end = INT64_MIN;
	t->keep_ring_rows = k->cpu[0].cap;
	return 0;
}

void trace_keep_close(struct trace *t)
{
	struct trace_keep *k = t->keep;
	if (!k)
		return;
	for (int i = 0; k->cpu && i < k->ncpus; i++)
		free(k->cpu[i].rows);
	free(k->cpu);
	free(k->pending);
	free(k);
	t->keep = NULL;
}

void trace_keep_begin(struct trace *t, int64_t now_ns)
{
	if (t->keep)
		t->keep->next_bg_ns = now_ns + KEEP_BG_FIRST_NS;
}

/* The entry an exit closes: the innermost open context of its kind and everything above it. */
static void keep_ctx_close(struct keep_ctx *c, int entry_code)
{
	for (int d = c->depth - 1; d >= 0; d--) {
		if (c->open[d].event == entry_code) {
			c->depth = d;
			return;
		}
	}
}

static void keep_ctx_apply(struct keep_ctx *c, const struct trace_row *r)
{
	switch (r->event) {
	case TRACE_EV_SWITCH:
		c->pid = r->other_pid, c->comm = r->other_comm, c->prio = r->other_prio;
		c->depth = 0; /* no switch happens inside an interrupt */
		return;
	case TRACE_EV_LOST: keep_ctx_reset(c); return;
	case TRACE_EV_IRQ_ENTRY: case TRACE_EV_SOFTIRQ_ENTRY: case TRACE_EV_VECTOR_ENTRY: case TRACE_EV_HRTIMER:
		if (c->depth < KEEP_DEPTH)
			c->open[c->depth++] = *r;
		break;
	case TRACE_EV_IRQ_EXIT: keep_ctx_close(c, TRACE_EV_IRQ_ENTRY); break;
	case TRACE_EV_SOFTIRQ_EXIT: keep_ctx_close(c, TRACE_EV_SOFTIRQ_ENTRY); break;
	case TRACE_EV_VECTOR_EXIT: keep_ctx_close(c, TRACE_EV_VECTOR_ENTRY); break;
	case TRACE_EV_HRTIMER_EXIT: keep_ctx_close(c, TRACE_EV_HRTIMER); break;
	default: break;
	}
	if (r->pid >= 0 && r->pid != c->pid) { /* every event names the task it interrupted or ran in */
		c->pid = r->pid, c->comm = r->comm, c->prio = -1;
	}
}

static struct trace_row *keep_at(struct keep_cpu *c, uint64_t i)
{
	return &c->rows[i % c->cap];
}

static int keep_add_window(struct trace_keep *k, int64_t start, int64_t end, int32_t flags)
{
	if (k->npending == k->cap_pending) {
		size_t cap = k->cap_pending ? k->cap_pending * 2 : 64;
		struct keep_win *p = realloc(k->pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->pending = p;
		k->cap_pending = cap;
	}
	k->pending[k->npending++] = (struct keep_win){.start = start, .end = end, .flags = flags};
	return 0;
}

int trace_keep_row(struct trace *t, const struct trace_row *row)
{
	t->events_seen++;
	struct trace_keep *k = t->keep;
	if (!k) {
		t->events_kept++;
		return trace_stage(t, row);
	}
	short at = row->cpu >= 0 && row->cpu < CONFIG_MAX_CPUS ? k->index[row->cpu] : 0;
	if (!at)
		return 0;
	struct keep_cpu *c = &k->cpu[at - 1];
	if (c->head - c->tail == c->cap) { /* full: the oldest row leaves, into the context cursor */
		struct trace_row *old = keep_at(c, c->tail);
		if (c->cursor == c->tail) {
			keep_ctx_apply(&c->ctx, old);
			c->cursor++;
		}
		c->evicted_ts = old->ts_ns;
		c->tail++;
	}
	*keep_at(c, c->head++) = *row;
	c->tick_rows++;
	/* a trace_marker (--break) is kept with the events around it */
	return row->event == TRACE_EV_MARKER
		       ? keep_add_window(k, row->ts_ns - t->cfg->trace_pre_ns, row->ts_ns + t->cfg->trace_post_ns,
					 TRACE_WINDOW_MARKER)
		       : 0;
}

/* The first logical index at or after tail whose row is at or after ts. */
static uint64_t keep_find(struct keep_cpu *c, int64_t ts)
{
	uint64_t lo = c->tail, hi = c->head;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (keep_at(c, mid)->ts_ns < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A window or window_end row.  Its `number` (the window's id) is written as -1: windows are numbered 0, 1, ...
 * in the order they are written, each on every measured CPU, so a reader counts them per CPU (jitterscope.dataset
 * does); a number unique to every window, in two rows per CPU, cost more on disk than the other columns of
 * those rows together (it defeats the delta encoding of every value near it). */
static int keep_stage_marker(struct trace *t, int code, int64_t ts, int cpu, const struct keep_ctx *ctx,
			     int32_t flags)
{
	struct trace_row r = {.ts_ns = ts, .cpu = cpu, .event = code, .pid = ctx ? ctx->pid : -1,
			      .comm = ctx ? ctx->comm : -1, .number = -1, .name = -1, .other_pid = -1,
			      .other_prio = -1, .other_comm = -1, .prio = ctx ? ctx->prio : -1, .value = flags};
	t->context_rows++;
	return trace_stage(t, &r);
}

/* The context at a window's start, with the task named by the window's own first event where they differ.
 * Tasks change only at a switch, and every event names the task it ran in or interrupted (a switch: the task
 * it leaves), so the first event inside the window names the task that held the CPU at its start.  The
 * tracked context can be wrong there: on some kernels (this project's VM) the switch from idle into a woken
 * task is never traced, so the last switch seen went to idle while the woken task has run since. */
static const struct keep_ctx *keep_task_at_start(struct keep_cpu *c, uint64_t first, uint64_t last)
{
	static struct keep_ctx at;
	at = c->ctx;
	for (uint64_t i = first; i < last; i++) {
		const struct trace_row *r = keep_at(c, i);
		if (r->pid < 0)
			continue;
		if (r->pid != at.pid)
			at.pid = r->pid, at.comm = r->comm, at.prio = r->event == TRACE_EV_SWITCH ? r->prio : -1;
		break;
	}
	return &at;
}

/* One window on one CPU: its context, its events, its end. */
static int keep_emit_cpu(struct trace *t, struct keep_cpu *c, const struct keep_win *w, bool *incomplete)
{
	uint64_t first = keep_find(c, w->start), last = first;
	while (c->cursor < first) /* the context at the window's start */
		keep_ctx_apply(&c->ctx, keep_at(c, c->cursor++));
	int32_t flags = w->flags;
	if (c->evicted_ts >= w->start)
		flags |= TRACE_WINDOW_INCOMPLETE; /* the ring no longer held the window's start */
	for (; last < c->head && keep_at(c, last)->ts_ns <= w->end; last++)
		if (keep_at(c, last)->event == TRACE_EV_LOST)
			flags |= TRACE_WINDOW_INCOMPLETE;
	*incomplete = *incomplete || (flags & TRACE_WINDOW_INCOMPLETE);
	int err = keep_stage_marker(t, TRACE_EV_WINDOW, w->start, c->cpu, keep_task_at_start(c, first, last),
				    flags);
	for (int d = 0; !err && d < c->ctx.depth; d++) { /* re-stated: at the window's start, value = entry time */
		struct trace_row r = c->ctx.open[d];
		r.value = r.ts_ns;
		r.ts_ns = w->start;
		t->context_rows++;
		err = trace_stage(t, &r);
	}
	for (uint64_t i = first; !err && i < last; i++) {
		t->events_kept++;
		err = trace_stage(t, keep_at(c, i));
	}
	return err ? err : keep_stage_marker(t, TRACE_EV_WINDOW_END, w->end, c->cpu, NULL, flags);
}

static int keep_emit(struct trace *t, struct keep_win w)
{
	struct trace_keep *k = t->keep;
	/* a window starting inside one already written: a notice later than the next targets said (none should) */
	t->windows_late += w.start <= k->emitted_end;
	if (w.end <= k->emitted_end)
		return 0; /* inside the window written last: covered */
	if (w.start <= k->emitted_end)
		w.start = k->emitted_end + 1; /* the rows up to there are written: each CPU's rows stay in order */
	bool incomplete = false;
	int err = 0;
	for (int i = 0; !err && i < k->ncpus; i++)
		err = keep_emit_cpu(t, &k->cpu[i], &w, &incomplete);
	k->emitted_end = w.end;
	t->windows_total++;
	t->windows_spike += (w.flags & TRACE_WINDOW_SPIKE) != 0;
	t->windows_background += (w.flags & TRACE_WINDOW_BACKGROUND) != 0;
	t->windows_marker += (w.flags & TRACE_WINDOW_MARKER) != 0;
	t->windows_incomplete += incomplete;
	return err;
}

static int keep_cmp(const void *a, const void *b)
{
	const struct keep_win *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The late wake-ups the measuring threads posted since the last tick. */
static int keep_collect(struct trace *t)
{
	int err = 0;
	for (int i = 0; i < t->nlate; i++) {
		struct trace_late *q = t->late[i];
		uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
		uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
		for (; !err && tail < head; tail++) {
			t->late_notices++;
			err = keep_add_window(t->keep, q->expected[tail % TRACE_LATE_SLOTS] - t->cfg->trace_pre_ns,
					      q->actual[tail % TRACE_LATE_SLOTS] + t->cfg->trace_post_ns,
					      TRACE_WINDOW_SPIKE);
		}
		atomic_store_explicit(&q->tail, tail, memory_order_release);
	}
	return err;
}

/* A CPU that filled a quarter of its ring in one read interval gets a bigger ring (a window must outlive a
 * read interval in it); rows are moved in order, the context cursor with them. */
static int keep_grow(struct trace *t, struct keep_cpu *c)
{
	uint64_t want = c->cap;
	while (!t->cfg->trace_ring_rows && want < KEEP_RING_MAX && c->tick_rows * 4 > want)
		want *= 2;
	c->tick_rows = 0;
	if (want == c->cap)
		return 0;
	struct trace_row *rows = calloc(want, sizeof(*rows));
	if (!rows)
		return 0; /* keep the ring as it is: windows it cannot hold are flagged */
	for (uint64_t i = c->tail; i < c->head; i++)
		rows[i % want] = *keep_at(c, i);
	free(c->rows);
	c->rows = rows;
	c->cap = want;
	if (want > t->keep_ring_rows)
		t->keep_ring_rows = want;
	return 0;
}

int trace_keep_tick(struct trace *t, int64_t horizon_ns, bool final)
{
	struct trace_keep *k = t->keep;
	if (!k)
		return 0;
	/* a window is final once no notice can still extend it: each thread's next notice is of a wake-up at or
	 * after its next target (read before the notices: what was posted before it is in the queue) */
	for (int i = 0; i < t->nlate; i++) {
		int64_t next = atomic_load_explicit(&t->late[i]->next_ns, memory_order_acquire);
		if (next - t->cfg->trace_pre_ns < horizon_ns)
			horizon_ns = next - t->cfg->trace_pre_ns;
	}
	int err = keep_collect(t);
	int64_t every = t->cfg->trace_bg_every_ns, len = t->cfg->trace_bg_len_ns;
	/* a background window is pending from its start on: the spike windows inside it merge into it */
	while (!err && len > 0 && k->next_bg_ns <= horizon_ns) {
		err = keep_add_window(k, k->next_bg_ns, k->next_bg_ns + len, TRACE_WINDOW_BACKGROUND);
		k->next_bg_ns += every;
	}
	if (err)
		return err;
	qsort(k->pending, k->npending, sizeof(*k->pending), keep_cmp);
	size_t merged = 0; /* overlapping windows merge */
	for (size_t i = 0; i < k->npending; i++) {
		struct keep_win *m = merged ? &k->pending[merged - 1] : NULL;
		if (m && k->pending[i].start <= m->end) {
			m->end = k->pending[i].end > m->end ? k->pending[i].end : m->end;
			m->flags |= k->pending[i].flags;
		} else {
			k->pending[merged++] = k->pending[i];
		}
	}
	size_t done = 0; /* in start order, each once the reader has read past its end */
	while (!err && done < merged && (final || k->pending[done].end <= horizon_ns))
		err = keep_emit(t, k->pending[done++]);
	memmove(k->pending, k->pending + done, (merged - done) * sizeof(*k->pending));
	k->npending = merged - done;
	for (int i = 0; !err && i < k->ncpus; i++)
		err = keep_grow(t, &k->cpu[i]);
	return err;
}
