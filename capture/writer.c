/* Drain, statistics and flushing; see writer.h.  Only this thread touches
 * the output files, and only through the container (container.h), which
 * keeps every part-*.parquet complete at every instant. */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonw.h"
#include "setupinfo.h"

#include <signal.h>

#define WRITER_POP_CHUNK 4096
#define WRITER_MIN_DRAIN_NS 10000000 /* 10 ms */

/* The contract's columns of this mode (sample or poll) that this run writes: the counters the probe
 * found, and in poll mode tsc only when the loop reads the TSC. */
static void writer_columns(struct writer *w, const bool counter_column[CTR_COUNT])
{
	const struct schema_column *table = w->poll ? SCHEMA_POLL_COLUMNS : SCHEMA_SAMPLE_COLUMNS;
	int count = w->poll ? PCOL_COUNT : COL_COUNT;
	int first_counter = w->poll ? SCHEMA_POLL_FIRST_COUNTER : SCHEMA_FIRST_COUNTER;
	w->ncolumns = 0;
	for (int col = 0; col < COL_COUNT; col++)
		w->column_of[col] = -1;
	for (int col = 0; col < count; col++) {
		bool present = col < first_counter ? (!w->poll || col != PCOL_TSC || w->poll_tsc)
						   : counter_column[col - first_counter];
		w->column_of[col] = present ? w->ncolumns : -1;
		if (!present)
			continue;
		w->columns[w->ncolumns].name = table[col].name;
		w->columns[w->ncolumns].type = table[col].type;
		w->columns[w->ncolumns].encoding = table[col].encoding;
		w->columns[w->ncolumns].codec = PQ_UNCOMPRESSED; /* delta-packed samples do not compress */
		w->ncolumns++;
	}
}

uint64_t writer_total_rows(const struct writer *w)
{
	return w->ct.rows;
}

/* ---- metadata -------------------------------------------------------------------- */

/* Per-thread counts as of this flush.  drops are the seq gaps written so far
 * (so they add up exactly); at the end, samples dropped after the last
 * written one cannot show as gaps and are drops_after_last, and wakeups is
 * the thread's own count (= samples + drops + drops_after_last). */
static void writer_thread_json(struct jsonw *j, const struct writer_thread *t, bool final)
{
	uint64_t wakeups = (uint64_t)t->next_seq;
	bool loop_final = final && t->loop;
	if (loop_final)
		wakeups = atomic_load(&t->loop->wakeups);
	jsonw_object_begin(j, NULL);
	jsonw_int(j, "thread", t->thread);
	jsonw_int(j, "cpu", t->cpu);
	if (t->loop) {
		jsonw_int(j, "tid", t->loop->tid);
		jsonw_int(j, "timer_slack_ns", t->loop->timer_slack_ns);
		if (t->loop->timer_slack_errno)
			jsonw_string(j, "timer_slack_error", strerror(t->loop->timer_slack_errno));
	} else {
		jsonw_null(j, "tid");
	}
	jsonw_int(j, "interval_ns", t->interval_ns);
	jsonw_uint(j, "samples", t->samples + t->nstaged);
	jsonw_uint(j, "drops", t->gap_drops);
	if (t->loop && t->loop->poll) {
		/* poll: the interruptions seen (rows written + dropped) and the per-second table's totals */
		jsonw_uint(j, "interruptions", wakeups);
		jsonw_uint(j, "iterations", t->iterations);
		jsonw_int(j, "noise_ns", t->noise_ns);
		jsonw_uint(j, "windows", t->windows);
		jsonw_object_begin(j, "iteration_ns");
		jsonw_double(j, "min", t->loop->iteration_min_ns);
		jsonw_double(j, "median", t->loop->iteration_median_ns);
		jsonw_object_end(j);
		jsonw_double(j, "clock_read_ns", t->loop->clock_read_ns);
		jsonw_uint(j, "blind_ns", t->loop->blind_ns);
		jsonw_uint(j, "windows_dropped", atomic_load(&t->loop->windows.drops));
	} else {
		jsonw_uint(j, "overruns", t->overruns);
		jsonw_uint(j, "wakeups", wakeups);
	}
	if (loop_final) {
		jsonw_uint(j, "drops_after_last", ring_drops(&t->loop->ring) - t->gap_drops);
		jsonw_uint(j, "counter_read_errors", t->loop->counter_errors);
	}
	jsonw_object_end(j);
}

static char *writer_threads_json(const struct writer *w, bool final)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_array_begin(&j, NULL);
	for (int i = 0; i < w->nthreads; i++)
		writer_thread_json(&j, &w->threads[i], final);
	jsonw_array_end(&j);
	return jsonw_take(&j);
}

static char *writer_status_json(const struct writer *w, const char *state, const char *reason)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_string(&j, "state", state);
	jsonw_string(&j, "reason", reason);
	jsonw_uint(&j, "flushes", w->flushes);
	cpuload_json(&j, "cpu_load", &w->load);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}

#define WRITER_NKV 11

/* jitterscope.poll (docs/dataset-format.md, "Poll metadata"): the loop's clock and its cost, the threshold,
 * the histogram's edges and the RT throttling in force.  iteration_ns is the slowest thread's (the
 * threshold's margin above it is what matters); each thread's own is in threads[]. */
static char *writer_poll_json(const struct writer *w)
{
	struct jsonw j;
	double it_min = 0, it_median = 0, read_ns = 0;
	uint64_t dropped = 0;
	for (int i = 0; i < w->nthreads; i++) {
		const struct timerloop *l = w->threads[i].loop;
		dropped += w->threads[i].gap_drops;
		if (!l)
			continue;
		it_min = l->iteration_min_ns > it_min ? l->iteration_min_ns : it_min;
		it_median = l->iteration_median_ns > it_median ? l->iteration_median_ns : it_median;
		read_ns = l->clock_read_ns > read_ns ? l->clock_read_ns : read_ns;
	}
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_int(&j, "threshold_ns", w->cfg->poll_threshold_ns);
	jsonw_string(&j, "clock", w->poll_tsc ? "tsc" : "vdso");
	jsonw_double(&j, "clock_read_ns", read_ns);
	jsonw_object_begin(&j, "iteration_ns");
	jsonw_double(&j, "min", it_min);
	jsonw_double(&j, "median", it_median);
	jsonw_object_end(&j);
	jsonw_array_begin(&j, "histogram_edges_ns");
	for (int k = 0; k <= POLL_BUCKETS; k++)
		jsonw_int(&j, NULL, pollwin_edge(k));
	jsonw_array_end(&j);
	jsonw_int(&j, "window_ns", POLL_WINDOW_NS);
	if (w->rt_runtime_us >= 0) {
		jsonw_object_begin(&j, "rt_throttling");
		jsonw_int(&j, "runtime_us", w->rt_runtime_us);
		jsonw_int(&j, "period_us", w->rt_period_us);
		jsonw_object_end(&j);
	} else {
		jsonw_null(&j, "rt_throttling"); /* off (-1) or unreadable */
	}
	jsonw_uint(&j, "rows_dropped", dropped);
	if (w->poll_tsc) {
		jsonw_double(&j, "tsc_hz", w->tsc_hz);
		jsonw_string(&j, "tsc_hz_source", w->tsc_source);
	}
	jsonw_object_end(&j);
	return jsonw_take(&j);
}

/* kv gets the keys (*nkv of them); the dynamic values are returned for freeing. */
static int writer_metadata(const struct writer *w, const char *state, const char *reason, struct pq_kv kv[WRITER_NKV],
			   char **threads, char **status, char **steal, char **poll, char **clock)
{
	*threads = writer_threads_json(w, strcmp(state, "running") != 0);
	*status = writer_status_json(w, state, reason);
	*steal = steal_json(&w->steal);
	*poll = w->poll ? writer_poll_json(w) : NULL;
	*clock = w->clock ? setupinfo_clock_json(w->clock) : NULL;
	if (!*threads || !*status || !*steal || (w->poll && !*poll) || (w->clock && !*clock)) {
		free(*threads);
		free(*status);
		free(*steal);
		free(*poll);
		free(*clock);
		*threads = *status = *steal = *poll = *clock = NULL; /* the caller frees them again */
		return -ENOMEM;
	}
	kv[0] = (struct pq_kv){"jitterscope.schema_version", "1"};
	kv[1] = (struct pq_kv){"jitterscope.kind", w->poll ? "\"poll\"" : "\"capture\""};
	kv[10] = (struct pq_kv){"jitterscope.poll", w->poll ? *poll : "null"};
	kv[2] = (struct pq_kv){"jitterscope.tool", "{\"name\":\"jitterscope-capture\",\"version\":\"" CONFIG_VERSION "\"}"};
	kv[3] = (struct pq_kv){"jitterscope.threads", *threads};
	kv[4] = (struct pq_kv){"jitterscope.settings", w->settings_json ? w->settings_json : "null"};
	kv[5] = (struct pq_kv){"jitterscope.environment", w->environment_json ? w->environment_json : "null"};
	kv[6] = (struct pq_kv){"jitterscope.counters", w->counters_json ? w->counters_json : "null"};
	kv[7] = (struct pq_kv){"jitterscope.clock", *clock ? *clock : "null"};
	kv[8] = (struct pq_kv){"jitterscope.status", *status};
	kv[9] = (struct pq_kv){"jitterscope.steal", *steal};
	return 0;
}

/* ---- errors ---------------------------------------------------------------------- */

static void writer_fail(struct writer *w, int err, const char *what)
{
	w->error = err;
	snprintf(w->error_line, sizeof(w->error_line),
		 "jitterscope-capture: %s %s/part-%05d.parquet failed: %s; the dataset holds %" PRIu64
		 " samples up to the last flush",
		 what, w->cfg->output ? w->cfg->output : "(none)", w->ct.part, strerror(-err), writer_total_rows(w));
}

/* ---- staging and flushing -------------------------------------------------------- */

int writer_reserve(struct writer_thread *t, size_t more)
{
	if (t->nstaged + more <= t->cap)
		return 0;
	size_t cap = t->cap ? t->cap : 1024;
	while (cap < t->nstaged + more)
		cap *= 2;
	struct sample *grown = realloc(t->staged, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	t->staged = grown;
	t->cap = cap;
	return 0;
}

/* One wake-up's latency in µs as cyclictest's calcdiff(now, next): the same truncations, so the same numbers
 * (the mean of truncated µs is about 0.5 µs below the exact mean; cyclictest users compare against this). */
static int64_t writer_calcdiff_us(int64_t actual_ns, int64_t expected_ns)
{
	const int64_t second = 1000000000;
	return (actual_ns / second - expected_ns / second) * 1000000 + (actual_ns % second - expected_ns % second) / 1000;
}

static void writer_account(struct writer_thread *t, const struct sample *s)
{
	t->gap_drops += (uint64_t)(s->seq - t->next_seq);
	t->next_seq = s->seq + 1;
	if (t->loop && t->loop->poll) { /* an interruption: its duration in µs for the summary line */
		int64_t us = (s->actual_ns - s->expected_ns) / 1000;
		t->max_us = t->count == 0 || us > t->max_us ? us : t->max_us;
		t->count++;
		return;
	}
	int64_t latency_us = writer_calcdiff_us(s->actual_ns, s->expected_ns);
	t->overruns += (uint64_t)s->overruns;
	if (t->count == 0 || latency_us < t->min_us)
		t->min_us = latency_us;
	if (t->count == 0 || latency_us > t->max_us)
		t->max_us = latency_us;
	t->last_us = latency_us;
	t->sum_us += latency_us;
	t->count++;
}

void writer_take(struct writer_thread *t, size_t n)
{
	for (size_t i = t->nstaged; i < t->nstaged + n; i++)
		writer_account(t, &t->staged[i]);
	t->nstaged += n;
}

void writer_drain(struct writer *w)
{
	for (int i = 0; i < w->nthreads; i++) {
		struct writer_thread *t = &w->threads[i];
		size_t n;
		do {
			if (writer_reserve(t, WRITER_POP_CHUNK))
				return; /* out of memory: leave samples in the ring (it drops, counted) */
			n = ring_pop(&t->loop->ring, t->staged + t->nstaged, WRITER_POP_CHUNK);
			writer_take(t, n);
		} while (n == WRITER_POP_CHUNK);
		/* windows after rows: a window's interruptions are then never ahead of the rows drained */
		struct poll_window win;
		while (w->poll && pollwin_pop(&t->loop->windows, &win)) {
			if (polltable_stage(&w->poll_table, t->cpu, t->thread, &win)) {
				atomic_fetch_add(&t->loop->windows.drops, 1); /* out of memory: counted as a lost window */
				continue;
			}
			t->iterations += win.iterations;
			t->interruptions += win.interruptions;
			t->noise_ns += win.noise_ns;
			t->max_gap_ns = win.max_gap_ns > t->max_gap_ns ? win.max_gap_ns : t->max_gap_ns;
			t->polled_ns += win.window_ns;
			t->windows++;
		}
	}
}

static int writer_reserve_buffers(struct writer *w, size_t rows)
{
	if (rows <= w->buffer_rows)
		return 0;
	for (int col = 0; col < w->ncolumns; col++) {
		size_t width = w->columns[col].type == PQ_INT32 ? 4 : 8;
		void *grown = realloc(w->buffers[col], rows * width);
		if (!grown)
			return -ENOMEM;
		w->buffers[col] = grown;
	}
	w->buffer_rows = rows;
	return 0;
}

static void writer_put32(struct writer *w, int col, size_t row, int32_t v)
{
	if (w->column_of[col] >= 0)
		((int32_t *)w->buffers[w->column_of[col]])[row] = v;
}

static void writer_put64(struct writer *w, int col, size_t row, int64_t v)
{
	if (w->column_of[col] >= 0)
		((int64_t *)w->buffers[w->column_of[col]])[row] = v;
}

/* Rows grouped by thread, each thread's in seq order, so the int32 columns
 * are constant over long runs (they pack to 0 bits, see schema.h). */
static size_t writer_fill_poll(struct writer *w)
{
	size_t row = 0;
	for (int i = 0; i < w->nthreads; i++) {
		const struct writer_thread *t = &w->threads[i];
		for (size_t k = 0; k < t->nstaged; k++, row++) {
			const struct sample *s = &t->staged[k];
			writer_put32(w, PCOL_CPU, row, t->cpu);
			writer_put32(w, PCOL_THREAD, row, t->thread);
			writer_put64(w, PCOL_SEQ, row, s->seq);
			writer_put64(w, PCOL_START_NS, row, s->expected_ns);
			writer_put64(w, PCOL_DURATION_NS, row, s->actual_ns - s->expected_ns);
			writer_put64(w, PCOL_TSC, row, (int64_t)s->tsc);
			writer_put32(w, PCOL_RUN_CPU, row, s->run_cpu);
			for (int ctr = 0; ctr < CTR_COUNT; ctr++)
				writer_put64(w, SCHEMA_POLL_FIRST_COUNTER + ctr, row, (int64_t)s->counters[ctr]);
		}
	}
	return row;
}

static size_t writer_fill(struct writer *w)
{
	if (w->poll)
		return writer_fill_poll(w);
	size_t row = 0;
	for (int i = 0; i < w->nthreads; i++) {
		const struct writer_thread *t = &w->threads[i];
		for (size_t k = 0; k < t->nstaged; k++, row++) {
			const struct sample *s = &t->staged[k];
			writer_put32(w, COL_CPU, row, t->cpu);
			writer_put32(w, COL_THREAD, row, t->thread);
			writer_put64(w, COL_SEQ, row, s->seq);
			writer_put64(w, COL_EXPECTED_NS, row, s->expected_ns);
			writer_put64(w, COL_ACTUAL_NS, row, s->actual_ns);
			writer_put32(w, COL_OVERRUNS, row, s->overruns);
			writer_put64(w, COL_TSC, row, (int64_t)s->tsc);
			writer_put32(w, COL_RUN_CPU, row, s->run_cpu);
			writer_put32(w, COL_READ_CYCLES, row, s->read_cycles);
			for (int ctr = 0; ctr < CTR_COUNT; ctr++)
				writer_put64(w, SCHEMA_FIRST_COUNTER + ctr, row, (int64_t)s->counters[ctr]);
		}
	}
	return row;
}

static void writer_commit(struct writer *w)
{
	for (int i = 0; i < w->nthreads; i++) {
		w->threads[i].samples += w->threads[i].nstaged;
		w->threads[i].nstaged = 0;
	}
}

int writer_flush(struct writer *w, const char *state, const char *reason)
{
	size_t rows = 0;
	for (int i = 0; i < w->nthreads; i++)
		rows += w->threads[i].nstaged;
	if (!w->has_container) { /* statistics only */
		writer_commit(w);
		w->poll_table.nstaged = 0;
		return 0;
	}
	if (rows == 0 && strcmp(state, "running") == 0 && w->flushes > 0)
		return 0; /* nothing new to keep (the first flush writes part-00000 with the metadata) */
	if (writer_reserve_buffers(w, rows ? rows : 1)) {
		writer_fail(w, -ENOMEM, "buffering for");
		return -ENOMEM;
	}
	writer_fill(w);
	w->flushes++;
	struct pq_kv kv[WRITER_NKV];
	char *threads, *status, *steal, *poll, *clock;
	int err = writer_metadata(w, state, reason, kv, &threads, &status, &steal, &poll, &clock);
	size_t nkv = w->poll ? WRITER_NKV : WRITER_NKV - 1;
	if (!err)
		err = container_flush(&w->ct, (const void *const *)w->buffers, rows, kv, nkv);
	if (!err && w->poll) { /* the per-second table with the same metadata (kind, threads, poll, status) */
		err = polltable_flush(&w->poll_table, kv, nkv);
		if (err)
			snprintf(w->error_line, sizeof(w->error_line), "jitterscope-capture: write to %s/" POLLTABLE_DIR_NAME
				 "/part-%05d.parquet failed: %s", w->cfg->output ? w->cfg->output : "(none)",
				 w->poll_table.ct.part, strerror(-err));
	}
	if (err && !w->error_line[0])
		writer_fail(w, err, err == -ENOMEM ? "buffering for" : "write to");
	if (err)
		w->error = err;
	free(threads);
	free(status);
	free(steal);
	free(poll);
	free(clock);
	if (err) {
		w->flushes--;
		return err;
	}
	writer_commit(w);
	return 0;
}

/* ---- setup and thread ------------------------------------------------------------ */

static void writer_steal_begin(struct writer *w)
{
	int cpus[STEAL_MAX_CPUS], n = 0;
	for (int i = 0; i < w->nthreads && n < STEAL_MAX_CPUS; i++)
		cpus[n++] = w->threads[i].cpu;
	steal_begin(&w->steal, cpus, n, timerloop_now_ns());
}

int writer_init(struct writer *w, const struct config *cfg, struct writer_thread *threads, int nthreads,
		const bool counter_column[CTR_COUNT], int dir_fd)
{
	w->cfg = cfg;
	w->threads = threads;
	w->nthreads = nthreads;
	w->dir_fd = dir_fd;
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&w->lock, NULL);
	w->finish = false;
	w->drain_period_ns = WRITER_MIN_DRAIN_NS;
	if (nthreads > 0 && threads[0].loop) {
		/* half the time a ring takes to fill, within [10 ms, flush interval] */
		int64_t fill_ns = (int64_t)ring_capacity(&threads[0].loop->ring) * threads[0].interval_ns;
		w->drain_period_ns = fill_ns / 2 < WRITER_MIN_DRAIN_NS ? WRITER_MIN_DRAIN_NS : fill_ns / 2;
	}
	if (w->drain_period_ns > cfg->flush_interval_ns)
		w->drain_period_ns = cfg->flush_interval_ns;
	memcpy(w->counter_column, counter_column, sizeof(w->counter_column));
	writer_columns(w, counter_column);
	polltable_init(&w->poll_table);
	cpuload_begin(&w->load);
	writer_steal_begin(w);
	if (dir_fd < 0 && !w->to_dev_null)
		return 0;
	container_init(&w->ct, cfg, dir_fd, w->columns, (size_t)w->ncolumns);
	w->ct.chown_parts = w->chown_parts;
	w->ct.owner_uid = w->owner_uid;
	w->ct.owner_gid = w->owner_gid;
	w->has_container = true;
	int err = 0;
	if (w->poll && dir_fd >= 0 && (err = polltable_open(&w->poll_table, cfg, dir_fd, w->owner_uid, w->owner_gid,
							    w->chown_parts))) {
		snprintf(w->error_line, sizeof(w->error_line), "jitterscope-capture: cannot create %s/" POLLTABLE_DIR_NAME
			 ": %s", cfg->output ? cfg->output : "(none)", strerror(-err));
		fprintf(stderr, "%s\n", w->error_line);
		return err;
	}
	err = writer_flush(w, "running", ""); /* part-00000: no rows yet, the metadata */
	if (err)
		fprintf(stderr, "%s\n", w->error_line);
	return err;
}

void writer_free(struct writer *w)
{
	if (w->has_container)
		container_close(&w->ct);
	polltable_close(&w->poll_table);
	cpuload_free(&w->load);
	steal_free(&w->steal);
	for (int col = 0; col < COL_COUNT; col++)
		free(w->buffers[col]);
	for (int i = 0; i < w->nthreads; i++)
		free(w->threads[i].staged);
}

static void writer_print_line(const struct writer *w, const struct writer_thread *t, FILE *out)
{
	if (w->poll) { /* oslat-like: interruptions (>= threshold), the largest, and the time lost to them */
		double polled_s = (double)t->polled_ns / 1e9;
		fprintf(out, "T:%2d (%5d) P:%2d poll CPU%d C:%7lu Max:%8ld us Noise:%10.1f us (%.4f %%) Loops:%lu\n",
			t->thread, t->loop ? (int)t->loop->tid : 0, w->cfg->priority, t->cpu, (unsigned long)t->count,
			(long)t->max_us, (double)t->noise_ns / 1e3,
			polled_s > 0 ? 100.0 * (double)t->noise_ns / (polled_s * 1e9) : 0.0, (unsigned long)t->iterations);
		return;
	}
	/* cyclictest: (long)(avg / cycles) of its double sum; the int64 sum is exact and divides the same way */
	int64_t avg = t->count ? t->sum_us / (int64_t)t->count : 0;
	fprintf(out, "T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld\n", t->thread,
		t->loop ? (int)t->loop->tid : 0, w->cfg->priority, (long)(t->interval_ns / 1000),
		(unsigned long)t->count, (long)t->min_us, (long)t->last_us, (long)avg, (long)t->max_us);
}

void writer_print_summary(const struct writer *w, FILE *out)
{
	for (int i = 0; i < w->nthreads; i++)
		writer_print_line(w, &w->threads[i], out);
	fflush(out);
}

static void writer_print_status(struct writer *w)
{
	if (w->status_lines && isatty(STDERR_FILENO))
		fprintf(stderr, "\033[%dA", w->status_lines);
	writer_print_summary(w, stderr);
	if (w->cpu_note)
		fprintf(stderr, "%s\n", w->cpu_note);
	w->status_lines = w->nthreads + (w->cpu_note != NULL);
}

void writer_finish(struct writer *w, const char *state, const char *reason)
{
	pthread_mutex_lock(&w->lock);
	w->final_state = state;
	w->final_reason = reason;
	w->finish = true;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

/* Sleeps until deadline_ns or until main asks to finish; true when asked. */
static bool writer_wait_until(struct writer *w, int64_t deadline_ns)
{
	struct timespec ts = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
	pthread_mutex_lock(&w->lock);
	while (!w->finish && pthread_cond_timedwait(&w->wake, &w->lock, &ts) == 0)
		;
	bool finish = w->finish;
	pthread_mutex_unlock(&w->lock);
	return finish;
}

static int64_t writer_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static void writer_stop_capture(struct writer *w)
{
	atomic_store(w->stop, true);
	if (w->notify_set)
		pthread_kill(w->notify, SIGUSR1);
}

/* Wakes only at deadlines: each flush (on a fixed schedule, so a kill loses at
 * most one flush interval), each second of live status, as often as the
 * rings need draining, and each steal sample (~10 ms).  Drains on every wake. */
void *writer_run(void *arg)
{
	struct writer *w = arg;
	int64_t now = timerloop_now_ns();
	int64_t next_flush = now + w->cfg->flush_interval_ns, next_status = now + 1000000000;
	int64_t next_drain = now + w->drain_period_ns, next_steal = now + w->steal.period_ns;
	for (;;) {
		int64_t deadline = writer_min(next_flush, next_drain);
		if (w->steal.available)
			deadline = writer_min(deadline, next_steal);
		if (!w->cfg->quiet)
			deadline = writer_min(deadline, next_status);
		if (writer_wait_until(w, deadline))
			break;
		now = timerloop_now_ns();
		if (now >= next_steal) {
			steal_sample(&w->steal, now);
			next_steal = now + w->steal.period_ns;
		}
		if (now < next_drain && now < next_flush && (w->cfg->quiet || now < next_status))
			continue; /* a steal sample only: the rings can wait for their own deadline */
		writer_drain(w);
		next_drain = now + w->drain_period_ns;
		if (now >= next_flush) {
			next_flush += w->cfg->flush_interval_ns;
			if (next_flush <= now) /* fell behind (slow disk): restart the schedule */
				next_flush = now + w->cfg->flush_interval_ns;
			if (!w->error && writer_flush(w, "running", ""))
				writer_stop_capture(w);
		}
		if (!w->cfg->quiet && now >= next_status) {
			next_status += 1000000000;
			writer_print_status(w);
		}
	}
	writer_drain(w);
	steal_sample(&w->steal, timerloop_now_ns());
	if (!w->error)
		writer_flush(w, w->final_state, w->final_reason);
	return NULL;
}
