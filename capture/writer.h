/* The writer: drains the rings into per-thread staging buffers, keeps the
 * live statistics, and flushes what it staged into the container (the part
 * files, container.h) with the metadata as of now.  Runs on its own thread,
 * off the measured CPUs when it can.  Never touches the measuring threads
 * except through the rings. */
#ifndef JITTERSCOPE_WRITER_H
#define JITTERSCOPE_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "container.h"
#include "cpuload.h"
#include "parquet.h"
#include "polltable.h"
#include "schema.h"
#include "steal.h"
#include "timerloop.h"

struct writer_thread {
	struct timerloop *loop;  /* NULL in the writer benchmark */
	int thread, cpu;
	int64_t interval_ns;
	struct sample *staged;   /* drained, not yet flushed */
	size_t nstaged, cap;
	int64_t next_seq;        /* seq expected next: gaps are drops */
	uint64_t samples, gap_drops, overruns;
	/* latency statistics over every written sample, in µs as cyclictest's calcdiff() computes each
	 * wake-up's (whole seconds x 1e6 + the nanosecond fields' difference / 1000, C division): the final
	 * T: line is then the line cyclictest would print, and the one jitterscope summary prints */
	uint64_t count;
	int64_t min_us, max_us, last_us, sum_us;
	/* poll mode: totals of the windows drained (the per-second table) */
	uint64_t iterations, interruptions, windows;
	int64_t noise_ns, max_gap_ns, polled_ns;
};

struct clock_setup; /* setupinfo.h */

struct writer {
	const struct config *cfg;
	int nthreads;
	struct writer_thread *threads;
	bool counter_column[CTR_COUNT];
	struct pq_column_def columns[COL_COUNT];
	int column_of[COL_COUNT];   /* schema index -> written column, -1 if absent */
	int ncolumns;
	void *buffers[COL_COUNT];   /* column buffers of one row group */
	size_t buffer_rows;
	/* metadata fixed at setup (JSON) */
	const char *settings_json, *environment_json, *counters_json;
	const struct clock_setup *clock; /* jitterscope.clock: the TSC's rate measured up to each write */
	/* output; dir_fd < 0 and !to_dev_null: statistics only */
	int dir_fd;
	bool to_dev_null;           /* writer benchmark without -o: bytes counted, nothing written */
	uid_t owner_uid;
	gid_t owner_gid;
	bool chown_parts;
	bool has_container;
	struct container ct;
	uint64_t flushes;
	struct cpuload load;        /* /proc/stat at the start, for the status's cpu_load */
	struct steal steal;         /* the measured CPUs' steal time, sampled every STEAL_PERIOD_NS */
	const char *cpu_note;       /* where the writer runs, for the live status (NULL: say nothing) */
	/* thread control */
	pthread_mutex_t lock;       /* guards finish; the writer sleeps on wake */
	pthread_cond_t wake;        /* CLOCK_MONOTONIC */
	bool finish;                /* set by main (writer_finish) after the measuring threads are joined */
	atomic_bool *stop;          /* set by the writer on a write error, to stop the capture */
	pthread_t notify;           /* main thread: gets SIGUSR1 when the writer sets stop */
	bool notify_set;
	const char *final_state, *final_reason;
	int error;                  /* -errno of the failed write, 0 if none */
	char error_line[1024];      /* the one line main prints */
	int64_t drain_period_ns;    /* often enough that a ring never fills from waiting */
	int status_lines;           /* live status lines printed (tty redraw) */
	/* poll mode (--mode poll): kind poll, the poll columns, and the per-second table in DIR/_poll */
	bool poll;
	bool poll_tsc;              /* rows carry tsc; the clock read is rdtsc (else the vDSO clock) */
	double tsc_hz;
	const char *tsc_source;
	long rt_runtime_us, rt_period_us; /* at setup; runtime -1: throttling off, -2: unknown */
	struct polltable poll_table;
};

/* w must be zeroed first (to_dev_null, owner fields and the metadata
 * strings may be set before).  Sets up columns and buffers; writes part-00000 (empty, with the
 * metadata) when dir_fd is the output directory, already created.  -errno after printing one line. */
int writer_init(struct writer *w, const struct config *cfg, struct writer_thread *threads, int nthreads,
		const bool counter_column[CTR_COUNT], int dir_fd);
void writer_free(struct writer *w);
void *writer_run(void *arg);
/* Main: ask the writer thread for its final drain and flush (then join it). */
void writer_finish(struct writer *w, const char *state, const char *reason);
/* Room for more staged samples of t; -ENOMEM. */
int writer_reserve(struct writer_thread *t, size_t more);
/* Accounts the n samples written at t->staged[t->nstaged..] (by drain, or by the benchmark). */
void writer_take(struct writer_thread *t, size_t n);
/* Pops what the rings hold into the staging buffers. */
void writer_drain(struct writer *w);
/* Writes the staged samples as one row group with the metadata as of now. */
int writer_flush(struct writer *w, const char *state, const char *reason);
/* cyclictest's per-thread line ("T: 0 ( 1234) P:99 I:1000 C: ..."), one per thread. */
void writer_print_summary(const struct writer *w, FILE *out);
/* Rows on disk as of the last flush. */
uint64_t writer_total_rows(const struct writer *w);

#endif
