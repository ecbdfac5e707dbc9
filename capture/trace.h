/* Kernel-trace capture (--trace): our own tracefs instance
 * (instances/jitterscope-PID), trace_clock mono, events enabled on the
 * measured CPUs only (the instance's tracing_cpumask), read off them (binary
 * per-CPU trace_pipe_raw, trace_raw.c) by a reader thread on the writer's CPU and stored inside the dataset as the
 * events table _trace/part-NNNNN.parquet: the samples' part container (container.h, same --part-seconds,
 * --group-seconds, --flush-interval and --sync), so a day of trace has bounded footers and no dead bytes
 * (docs/dataset-format.md, "Trace events").  Never touches the global trace or another tool's instance; never
 * runs in the measuring loop.  Setup failures print one line; functions
 * return 0 or -errno. */
#ifndef JITTERSCOPE_TRACE_H
#define JITTERSCOPE_TRACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "container.h"
#include "parquet.h"
#include "trace_late.h"

#define TRACE_INSTANCE_PREFIX "jitterscope-"
#define TRACE_DIR_NAME "_trace"

/* The C mirror of the trace-column table in docs/dataset-format.md (same
 * names, types and order; tests/test_contract.py compares).  Every column is
 * required; -1 means "not applicable to this event".
 * contract:trace-columns (order matters) */
static const struct pq_column_def TRACE_COLUMNS[] = {
	{"ts_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"event", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"pid", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"comm", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"number", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"name", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"other_pid", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"other_prio", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"other_comm", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"prio", PQ_INT32, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
	{"value", PQ_INT64, PQ_DELTA_BINARY_PACKED, PQ_SNAPPY},
};
/* /contract:trace-columns */
enum trace_column_index {
	TC_TS, TC_CPU, TC_EVENT, TC_PID, TC_COMM, TC_NUMBER, TC_NAME, TC_OTHER_PID, TC_OTHER_PRIO, TC_OTHER_COMM,
	TC_PRIO, TC_VALUE, TC_COUNT
};

/* Event codes of the `event` column (docs/dataset-format.md, "Trace events").
 * contract:trace-events */
enum trace_event_code {
	TRACE_EV_OTHER = 0,         /* name = the event's name */
	TRACE_EV_IRQ_ENTRY = 1,     /* number = irq, name = handler name */
	TRACE_EV_IRQ_EXIT = 2,      /* number = irq */
	TRACE_EV_SOFTIRQ_ENTRY = 3, /* number = vec, name = action */
	TRACE_EV_SOFTIRQ_EXIT = 4,
	TRACE_EV_SOFTIRQ_RAISE = 5,
	TRACE_EV_VECTOR_ENTRY = 6,  /* number = vector, name = e.g. local_timer */
	TRACE_EV_VECTOR_EXIT = 7,
	TRACE_EV_NMI = 8,           /* name = handler, value = delta_ns (ts_ns is its end) */
	TRACE_EV_SWITCH = 9,        /* pid/comm/prio = prev, other_* = next, value = 1 when prev was runnable */
	TRACE_EV_WAKEUP = 10,       /* other_* = the woken task, number = target cpu */
	TRACE_EV_WAKING = 11,
	TRACE_EV_HRTIMER = 12,      /* hrtimer_expire_entry, name = function, value = ts_ns - its `now` (ns) */
	TRACE_EV_MARKER = 13,       /* name = the text written to trace_marker */
	TRACE_EV_LOST = 14,         /* value = events lost on cpu after the previous event of cpu (ts_ns) */
	TRACE_EV_HRTIMER_EXIT = 15, /* hrtimer_expire_exit */
	TRACE_EV_WINDOW = 16,       /* a kept window opens on cpu: pid/comm/prio = the task holding it, number = id,
	                             * value = TRACE_WINDOW_* flags */
	TRACE_EV_WINDOW_END = 17,   /* ... and closes: number = id, value = flags */
};
/* /contract:trace-events */

/* The flags of a kept window (the value of its window and window_end rows). */
enum trace_window_flag {
	TRACE_WINDOW_SPIKE = 1,      /* around a wake-up later than --trace-threshold */
	TRACE_WINDOW_BACKGROUND = 2, /* the background sample */
	TRACE_WINDOW_MARKER = 4,     /* around a trace_marker (--break) */
	TRACE_WINDOW_INCOMPLETE = 8, /* on this CPU: the ring no longer held its start, or events were lost in it */
};

/* Rows staged between flushes before they go into the open row group: a second of a busy CPU's
 * events; small, since the capture mlocks its memory and every staged page is zeroed at setup. */
#define TRACE_STAGE_ROWS 8192

/* One parsed event, a row of the events table. */
struct trace_row {
	int64_t ts_ns, value;
	int32_t cpu, event, pid, comm, number, name, other_pid, other_prio, other_comm, prio;
};

#define TRACE_RECENT 64
struct trace_strings {
	char **text;
	size_t n, cap;
	uint32_t *slot;             /* open-addressing hash of indices + 1 */
	size_t nslots;
	int32_t recent_id[TRACE_RECENT];  /* memo of recent lookups: index + 1 (0: empty) */
	uint32_t recent_len[TRACE_RECENT];
};

struct trace_raw;
struct trace_keep;

struct trace {
	bool enabled;
	char dir[200];              /* the instance directory */
	bool made;
	int marker_fd, dir_fd;      /* dir_fd: the dataset's _trace directory */
	struct trace_raw *raw;      /* the per-CPU binary readers */
	struct container ct;        /* the events parts (reader thread only once started) */
	struct config ct_cfg;       /* the container's settings: the capture's, flushed every --trace-flush */
	bool has_container;
	const struct config *cfg;
	int reader_cpu;             /* -1: unpinned */
	pthread_t reader;
	bool reader_started;
	atomic_bool finish;         /* main: tracing is off, drain what is left and stop */
	/* reader state */
	void *columns[TC_COUNT];
	size_t nstaged;
	int64_t *last_ts;           /* per CPU, for LOST rows */
	struct trace_strings strings;
	uint64_t rows, lost_reported, unparsed, marker_rows;
	/* --trace-keep (trace_keep.c) */
	struct trace_keep *keep;    /* NULL: --trace-keep all */
	struct trace_late **late;   /* the measuring threads' notices of late wake-ups */
	int nlate;
	uint64_t events_seen, events_kept, context_rows, late_notices, keep_ring_rows, windows_late;
	uint64_t windows_total, windows_spike, windows_background, windows_marker, windows_incomplete;
	int64_t next_flush_ns;
	int error;                  /* -errno of a read or write failure */
	/* at the end */
	uint64_t *overrun, *dropped; /* per measured CPU, from per_cpu/cpuN/stats */
	const char *stop_reason;
	char global_before[512];    /* the global trace settings as found, for the environment note */
};

/* Removes instances named jitterscope-PID whose process is gone (a killed
 * capture) and says so on stderr; any capture runs it.  Returns how many. */
int trace_clean_stale(bool quiet);
/* Makes and configures the instance and creates _trace/part-00000.parquet (no
 * events yet) in dir_fd; tracing stays off until trace_start().  One line on failure. */
int trace_setup(struct trace *t, const struct config *cfg, int dir_fd, int reader_cpu, uid_t uid, gid_t gid,
		bool chown_file);
/* --trace-keep spikes: the n measuring threads' late-wake-up queues (queues, queues + stride bytes, ...) get
 * the threshold, and the reader reads them.  Nothing for --trace-keep all. */
int trace_listen(struct trace *t, struct trace_late *queues, size_t stride, int n);
/* Turns tracing on and starts the reader thread. */
int trace_start(struct trace *t);
/* The events table alone (no tracefs; the trace benchmark): creates _trace/part-00000.parquet in dir_fd for
 * t->cfg, and commits a flush of the staged rows with the metadata as of now. */
int trace_open_file(struct trace *t, int dir_fd, uid_t uid, gid_t gid, bool chown_file);
int trace_flush(struct trace *t, const char *state);
/* Writes text into the instance's trace_marker from the measured CPU cpu (the
 * main thread moves there for the write: it runs after the loop has ended). */
int trace_mark(struct trace *t, const char *text, int cpu);
/* Turns tracing off, lets the reader drain the rest, reads the per-CPU loss
 * counters and commits the last flush with reason.  Idempotent. */
int trace_finish(struct trace *t, const char *reason);
/* Closes the files and removes the instance. Idempotent; safe after a failed setup. */
void trace_close(struct trace *t);
/* trace_raw.c: the per-CPU trace_pipe_raw readers (formats loaded from the instance's set_event). */
int trace_raw_open(struct trace *t);
/* Decodes every page the measured CPUs' buffers hold now (non-blocking) into staged rows. */
int trace_raw_read(struct trace *t);
/* Names the addresses (NMI handlers, hrtimer functions) in the dictionary from /proc/kallsyms. */
void trace_raw_symbolize(struct trace *t);
void trace_raw_close(struct trace *t);
/* trace_keep.c: --trace-keep spikes (nothing for all).  The reader's decoded rows go through trace_keep_row
 * (staged at once with all; into the CPU's ring with spikes); trace_keep_tick writes the windows whose end is
 * at or before horizon_ns (every pending one when final). */
int trace_keep_open(struct trace *t);
void trace_keep_begin(struct trace *t, int64_t now_ns);
int trace_keep_row(struct trace *t, const struct trace_row *row);
int trace_keep_tick(struct trace *t, int64_t horizon_ns, bool final);
void trace_keep_close(struct trace *t);
/* trace_strings.c: the dictionary id of text[0..len) (added when new); -ENOMEM. */
int32_t trace_string_id(struct trace_strings *s, const char *text, size_t len);
/* The same without the memo (the hash lookup itself). */
int32_t trace_string_lookup(struct trace_strings *s, const char *text, size_t len);
void trace_strings_free(struct trace_strings *s);
/* trace.c: stages one row; a full stage goes into the open row group (committed by the next flush). */
int trace_stage(struct trace *t, const struct trace_row *row);

/* What the environment snapshot says about tracing (JSON object, malloc'd). */
char *trace_environment_json(const struct trace *t, const struct config *cfg);

#endif
