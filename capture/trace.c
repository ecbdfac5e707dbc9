/* The tracefs instance of a --trace capture and its reader thread; see
 * trace.h.  Setup and teardown run on the main thread, the reader on the
 * writer's CPU; nothing here runs in, or waits for, a measuring thread.
 * The global trace (current_tracer, tracing_on, set_event, trace_clock) is
 * only ever read, for the environment note. */
#include "trace.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "timerloop.h"

#define PROG "jitterscope-capture"
#define TRACEFS "/sys/kernel/tracing"
/* The default events: what the attribution and the interrupt/thread split read, and no more.  Every event
 * on the wake-up path costs the measured latency (~0.35 us each on this project's VM): the measuring thread's
 * own sched_wakeup and its hrtimer's expire entry/exit were three of the six there, and the split needs only
 * the timer interrupt's entry (the first local_timer entry from the programmed time on: the interrupt whose
 * hrtimer loop expires the thread's timer).  Without irq_vectors (not x86) the hrtimer expiry is that mark. */
#define TRACE_DEFAULT_EVENTS                                                                                        \
	"irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit,irq_vectors,nmi:nmi_handler,"    \
	"sched:sched_switch"
#define TRACE_DEFAULT_EVENTS_NO_VECTORS                                                                             \
	"irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit,nmi:nmi_handler,"                \
	"sched:sched_switch,timer:hrtimer_expire_entry,timer:hrtimer_expire_exit"

static const char *trace_event_list(const struct config *cfg)
{
	if (cfg->trace_events)
		return cfg->trace_events;
	return access(TRACEFS "/events/irq_vectors/local_timer_entry", F_OK) == 0 ? TRACE_DEFAULT_EVENTS
										     : TRACE_DEFAULT_EVENTS_NO_VECTORS;
}

static int trace_write_file(const char *dir, const char *name, const char *value)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static bool trace_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

/* Mounts tracefs when it is not mounted yet (it stays mounted: others may use it). */
static int trace_mount(void)
{
	if (access(TRACEFS "/instances", F_OK) == 0)
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(TRACEFS "/instances", F_OK) ? -errno : 0;
}

/* Whether pid is a live jitterscope-capture (a reused pid is another program). */
static bool trace_owner_alive(long pid)
{
	char path[64], comm[64];
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	return trace_read_file(path, comm, sizeof(comm)) && strncmp(comm, "jitterscope-cap", 15) == 0;
}

int trace_clean_stale(bool quiet)
{
	DIR *d = opendir(TRACEFS "/instances");
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, TRACE_INSTANCE_PREFIX, strlen(TRACE_INSTANCE_PREFIX)) != 0)
			continue;
		long pid = strtol(e->d_name + strlen(TRACE_INSTANCE_PREFIX), &end, 10);
		if (*end != '\0' || pid <= 0 || pid == (long)getpid() || trace_owner_alive(pid))
			continue;
		char path[320];
		snprintf(path, sizeof(path), TRACEFS "/instances/%s", e->d_name);
		if (rmdir(path) == 0) {
			removed++;
			fprintf(stderr, PROG ": removed the tracefs instance %s left by a capture that was killed (pid %ld)\n",
				e->d_name, pid);
		} else if (!quiet) {
			fprintf(stderr, PROG ": warning: cannot remove the stale tracefs instance %s: %s\n", path,
				strerror(errno));
		}
	}
	closedir(d);
	return removed;
}

/* tracing_cpumask in the kernel's format: 32-bit hex words, highest first, comma-separated. */
static void trace_cpumask(const struct config *cfg, char *buf, size_t len)
{
	uint32_t words[CONFIG_MAX_CPUS / 32] = {0};
	int top = 0;
	for (int i = 0; i < cfg->ncpus; i++) {
		words[cfg->cpus[i] / 32] |= 1u << (cfg->cpus[i] % 32);
		top = cfg->cpus[i] / 32 > top ? cfg->cpus[i] / 32 : top;
	}
	size_t used = 0;
	for (int w = top; w >= 0 && used < len; w--) {
		int n = snprintf(buf + used, len - used, w == top ? "%x" : ",%08x", words[w]);
		used += n > 0 ? (size_t)n : 0;
	}
}

static int trace_write_event(int fd, const char *line, const char *token)
{
	if (write(fd, line, strlen(line)) >= 0)
		return 0;
	int err = errno;
	fprintf(stderr, PROG ": cannot enable the trace event '%s': %s (see %s/available_events)\n", token,
		strerror(err), TRACEFS);
	return -err;
}

/* irq_vectors without an event name: its interrupt entries and exits only.  The system also holds a
 * dozen vector_* events of vector allocation (no interrupt, nothing to attribute), and every event
 * enabled costs a text patch of its tracepoint on every CPU at setup and again at teardown. */
static int trace_enable_vectors(int fd, const char *events_dir)
{
	DIR *d = opendir(events_dir);
	if (!d)
		return trace_write_event(fd, "irq_vectors:*\n", "irq_vectors");
	int err = 0;
	struct dirent *e;
	while (!err && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		bool context = (n > 6 && strcmp(e->d_name + n - 6, "_entry") == 0) ||
			       (n > 5 && strcmp(e->d_name + n - 5, "_exit") == 0);
		char line[320];
		if (context && snprintf(line, sizeof(line), "irq_vectors:%s\n", e->d_name) < (int)sizeof(line))
			err = trace_write_event(fd, line, "irq_vectors");
	}
	closedir(d);
	return err;
}

/* Each event of the comma-separated list into set_event: "system", "system:event" or "event". */
static int trace_enable_events(struct trace *t, const char *list)
{
	char path[320], token[160], events_dir[512];
	snprintf(path, sizeof(path), "%s/set_event", t->dir);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	for (const char *p = list; *p && !err; p += *p == ',') {
		size_t n = strcspn(p, ",");
		snprintf(token, sizeof(token), "%.*s", (int)(n < 140 ? n : 140), p);
		p += n;
		snprintf(events_dir, sizeof(events_dir), "%s/events/%s", t->dir, token);
		bool system = !strchr(token, ':') && access(events_dir, F_OK) == 0;
		if (system && strcmp(token, "irq_vectors") == 0) {
			err = trace_enable_vectors(fd, events_dir);
			continue;
		}
		char line[200];
		snprintf(line, sizeof(line), system ? "%s:*\n" : "%s\n", token);
		err = trace_write_event(fd, line, token);
	}
	close(fd);
	return err;
}

/* The instance: made, tracing off, mono clock, buffer, CPU mask, events. */
static int trace_configure(struct trace *t, const struct config *cfg)
{
	char mask[300], kb[32];
	const char *what = "tracing_on";
	int err = trace_write_file(t->dir, "tracing_on", "0");
	if (!err && (err = trace_write_file(t->dir, what = "trace_clock", "mono")) == 0) {
		snprintf(kb, sizeof(kb), "%llu", (unsigned long long)cfg->trace_buffer_kb);
		err = trace_write_file(t->dir, what = "buffer_size_kb", kb);
	}
	if (!err) {
		trace_cpumask(cfg, mask, sizeof(mask));
		err = trace_write_file(t->dir, what = "tracing_cpumask", mask);
	}
	if (err) {
		fprintf(stderr, PROG ": cannot set %s/%s: %s\n", t->dir, what, strerror(-err));
		return err;
	}
	return trace_enable_events(t, trace_event_list(cfg));
}

static int trace_make_instance(struct trace *t)
{
	snprintf(t->dir, sizeof(t->dir), TRACEFS "/instances/" TRACE_INSTANCE_PREFIX "%ld", (long)getpid());
	int made = mkdir(t->dir, 0700);
	if (made && errno == EEXIST && rmdir(t->dir) == 0) /* a stale one of a process that had our pid */
		made = mkdir(t->dir, 0700);
	if (made) {
		int err = errno;
		fprintf(stderr, PROG ": cannot create the tracefs instance %s: %s (needs root)\n", t->dir, strerror(err));
		return -err;
	}
	t->made = true;
	return 0;
}

static void trace_global_note(struct trace *t)
{
	char tracer[64] = "?", on[16] = "?", clock[200] = "?", path[320];
	trace_read_file(TRACEFS "/current_tracer", tracer, sizeof(tracer));
	trace_read_file(TRACEFS "/tracing_on", on, sizeof(on));
	trace_read_file(TRACEFS "/trace_clock", clock, sizeof(clock));
	int events = 0;
	FILE *f = fopen(TRACEFS "/set_event", "re");
	while (f && fgets(path, sizeof(path), f))
		events++;
	if (f)
		fclose(f);
	char *sel = strchr(clock, '['), *close_br = sel ? strchr(sel, ']') : NULL;
	if (close_br)
		*close_br = '\0';
	snprintf(t->global_before, sizeof(t->global_before),
		 "{\"current_tracer\":\"%s\",\"tracing_on\":%s,\"trace_clock\":\"%s\",\"set_event_count\":%d}", tracer,
		 strcmp(on, "1") == 0 ? "true" : "false", sel ? sel + 1 : clock, events);
}

/* ---- the events file -------------------------------------------------------------- */

static void trace_events_list(struct jsonw *j, const struct trace *t)
{
	const char *list = trace_event_list(t->cfg);
	jsonw_array_begin(j, "events");
	for (const char *p = list; *p; p += *p == ',') {
		size_t n = strcspn(p, ",");
		char token[160];
		snprintf(token, sizeof(token), "%.*s", (int)(n < 140 ? n : 140), p);
		jsonw_string(j, NULL, token);
		p += n;
	}
	jsonw_array_end(j);
}

static void trace_loss_json(struct jsonw *j, const struct trace *t)
{
	if (!t->overrun) {
		jsonw_null(j, "lost");
		return;
	}
	uint64_t total = 0;
	jsonw_object_begin(j, "lost");
	jsonw_array_begin(j, "per_cpu");
	for (int i = 0; i < t->cfg->ncpus; i++) {
		jsonw_object_begin(j, NULL);
		jsonw_int(j, "cpu", t->cfg->cpus[i]);
		jsonw_uint(j, "overrun", t->overrun[i]);
		jsonw_uint(j, "dropped", t->dropped[i]);
		jsonw_object_end(j);
		total += t->overrun[i] + t->dropped[i];
	}
	jsonw_array_end(j);
	jsonw_uint(j, "total", total);
	jsonw_object_end(j);
}

/* What --trace-keep kept of what was seen (docs/dataset-format.md, "Kept windows"). */
static void trace_keep_json(struct jsonw *j, const struct trace *t)
{
	const struct config *cfg = t->cfg;
	uint64_t dropped = 0;
	for (int i = 0; i < t->nlate; i++)
		dropped += atomic_load_explicit(&t->late[i]->dropped, memory_order_relaxed);
	jsonw_string(j, "keep", cfg->trace_keep == KEEP_ALL ? "all" : "spikes");
	jsonw_uint(j, "events_seen", t->events_seen);
	jsonw_uint(j, "events_kept", t->events_kept);
	if (cfg->trace_keep == KEEP_ALL)
		return;
	jsonw_object_begin(j, "windows");
	jsonw_int(j, "threshold_ns", cfg->trace_threshold_ns);
	jsonw_string(j, "threshold_mode", "fixed");
	jsonw_int(j, "pre_ns", cfg->trace_pre_ns);
	jsonw_int(j, "post_ns", cfg->trace_post_ns);
	jsonw_int(j, "background_every_ns", cfg->trace_bg_every_ns);
	jsonw_int(j, "background_length_ns", cfg->trace_bg_len_ns);
	jsonw_int(j, "background_first_ns", 1000000000);
	jsonw_uint(j, "total", t->windows_total);
	jsonw_uint(j, "spike", t->windows_spike);
	jsonw_uint(j, "background", t->windows_background);
	jsonw_uint(j, "marker", t->windows_marker);
	jsonw_uint(j, "incomplete", t->windows_incomplete);
	jsonw_uint(j, "late_notices", t->late_notices);
	jsonw_uint(j, "late_windows", t->windows_late);
	jsonw_uint(j, "late_dropped", dropped);
	jsonw_uint(j, "context_rows", t->context_rows);
	jsonw_uint(j, "ring_rows_per_cpu", t->keep_ring_rows);
	jsonw_object_end(j);
}

/* jitterscope.trace: what was traced, how, and (at the end) what was lost. */
static char *trace_meta_json(const struct trace *t, const char *state)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_int(&j, "version", 1);
	jsonw_string(&j, "instance", strrchr(t->dir, '/') + 1);
	jsonw_string(&j, "clock", "mono");
	jsonw_int(&j, "resolution_ns", 1); /* trace_pipe_raw: the ring buffer's own ns time stamps */
	trace_events_list(&j, t);
	jsonw_array_begin(&j, "cpus");
	for (int i = 0; i < t->cfg->ncpus; i++)
		jsonw_int(&j, NULL, t->cfg->cpus[i]);
	jsonw_array_end(&j);
	jsonw_uint(&j, "buffer_size_kb", t->cfg->trace_buffer_kb);
	jsonw_int(&j, "reader_cpu", t->reader_cpu);
	jsonw_int(&j, "read_interval_ns", t->cfg->trace_read_ns);
	jsonw_int(&j, "flush_interval_ns", t->cfg->trace_flush_ns > t->cfg->flush_interval_ns ? t->cfg->trace_flush_ns
											    : t->cfg->flush_interval_ns);
	jsonw_string(&j, "state", state);
	jsonw_string(&j, "stop_reason", t->stop_reason);
	jsonw_uint(&j, "rows", t->rows + t->nstaged);
	jsonw_uint(&j, "markers", t->marker_rows);
	jsonw_uint(&j, "lost_reported", t->lost_reported);
	jsonw_uint(&j, "unparsed_lines", t->unparsed);
	trace_keep_json(&j, t);
	trace_loss_json(&j, t);
	jsonw_raw(&j, "global_before", t->global_before);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}

static char *trace_strings_json(const struct trace *t)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_array_begin(&j, NULL);
	for (size_t i = 0; i < t->strings.n; i++)
		jsonw_string(&j, NULL, t->strings.text[i]);
	jsonw_array_end(&j);
	return jsonw_take(&j);
}

/* Commits the staged rows (and what a full stage put in the open row group) as one flush of the
 * container, with the metadata as of now: after it, _trace/part-NNNNN.parquet holds every event so far. */
int trace_flush(struct trace *t, const char *state)
{
	char *meta = trace_meta_json(t, state), *strings = trace_strings_json(t);
	int err = -ENOMEM;
	if (meta && strings) {
		struct pq_kv kv[] = {{"jitterscope.trace", meta}, {"jitterscope.trace_strings", strings}};
		err = container_flush(&t->ct, (const void *const *)t->columns, t->nstaged, kv, 2);
	}
	free(meta);
	free(strings);
	if (!err) {
		t->rows += t->nstaged;
		t->nstaged = 0;
	}
	return err;
}

int trace_stage(struct trace *t, const struct trace_row *r)
{
	size_t i = t->nstaged;
	((int64_t *)t->columns[TC_TS])[i] = r->ts_ns;
	((int32_t *)t->columns[TC_CPU])[i] = r->cpu;
	((int32_t *)t->columns[TC_EVENT])[i] = r->event;
	((int32_t *)t->columns[TC_PID])[i] = r->pid;
	((int32_t *)t->columns[TC_COMM])[i] = r->comm;
	((int32_t *)t->columns[TC_NUMBER])[i] = r->number;
	((int32_t *)t->columns[TC_NAME])[i] = r->name;
	((int32_t *)t->columns[TC_OTHER_PID])[i] = r->other_pid;
	((int32_t *)t->columns[TC_OTHER_PRIO])[i] = r->other_prio;
	((int32_t *)t->columns[TC_OTHER_COMM])[i] = r->other_comm;
	((int32_t *)t->columns[TC_PRIO])[i] = r->prio;
	((int64_t *)t->columns[TC_VALUE])[i] = r->value;
	if (++t->nstaged < TRACE_STAGE_ROWS)
		return 0;
	/* a full stage between flushes: encode it into the open row group now, commit at the next flush */
	int err = container_add(&t->ct, (const void *const *)t->columns, t->nstaged);
	if (!err) {
		t->rows += t->nstaged;
		t->nstaged = 0;
	}
	return err;
}

int trace_open_file(struct trace *t, int dir_fd, uid_t uid, gid_t gid, bool chown_file)
{
	if (mkdirat(dir_fd, TRACE_DIR_NAME, 0755) && errno != EEXIST)
		return -errno;
	t->dir_fd = openat(dir_fd, TRACE_DIR_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->dir_fd < 0)
		return -errno;
	if (chown_file && fchown(t->dir_fd, uid, gid))
		return -errno;
	if (t->cfg->sync == SYNC_DATA && fsync(dir_fd)) /* the _trace entry itself, before any part in it */
		return -errno;
	for (int c = 0; c < TC_COUNT; c++)
		if (!(t->columns[c] = calloc(TRACE_STAGE_ROWS, TRACE_COLUMNS[c].type == PQ_INT64 ? 8 : 4)))
			return -ENOMEM;
	t->last_ts = calloc(CONFIG_MAX_CPUS, sizeof(*t->last_ts));
	if (!t->last_ts)
		return -ENOMEM;
	/* the samples' container rules, flushed every --trace-flush (never more often than the samples) */
	t->ct_cfg = *t->cfg;
	if (t->ct_cfg.trace_flush_ns > t->ct_cfg.flush_interval_ns)
		t->ct_cfg.flush_interval_ns = t->ct_cfg.trace_flush_ns;
	container_init(&t->ct, &t->ct_cfg, t->dir_fd, TRACE_COLUMNS, TC_COUNT);
	t->ct.chown_parts = chown_file;
	t->ct.owner_uid = uid;
	t->ct.owner_gid = gid;
	t->has_container = true;
	return trace_flush(t, "running"); /* part-00000: no events yet, the settings */
}

int trace_setup(struct trace *t, const struct config *cfg, int dir_fd, int reader_cpu, uid_t uid, gid_t gid,
		bool chown_file)
{
	t->marker_fd = t->dir_fd = -1;
	t->cfg = cfg;
	t->reader_cpu = reader_cpu;
	atomic_init(&t->finish, false);
	if (!cfg->trace)
		return 0;
	t->enabled = true;
	int err = trace_mount();
	if (err) {
		fprintf(stderr, PROG ": cannot mount tracefs on " TRACEFS ": %s (needs root; --trace needs tracefs)\n",
			strerror(-err));
		return err;
	}
	trace_global_note(t);
	if ((err = trace_make_instance(t)) || (err = trace_configure(t, cfg)))
		return err;
	char path[320];
	if ((err = trace_raw_open(t))) {
		fprintf(stderr, PROG ": cannot open the per-CPU trace_pipe_raw files of %s: %s\n", t->dir, strerror(-err));
		return err;
	}
	if ((err = trace_keep_open(t))) {
		fprintf(stderr, PROG ": out of memory for the --trace-keep rings\n");
		return err;
	}
	snprintf(path, sizeof(path), "%s/trace_marker", t->dir);
	t->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (t->marker_fd < 0) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if ((err = trace_open_file(t, dir_fd, uid, gid, chown_file)))
		fprintf(stderr, PROG ": cannot create %s/" TRACE_DIR_NAME "/part-00000.parquet: %s\n", cfg->output,
			strerror(-err));
	return err;
}

/* ---- the reader thread ------------------------------------------------------------ */

/* Every read interval: drain the per-CPU trace_pipe_raw; every --trace-flush (5 s; at least --flush-interval):
 * commit a flush of the events container, the same rules as the samples (row groups of --group-seconds, parts
 * of --part-seconds, each flush one rename of a complete file, --sync), so a killed capture keeps every event
 * up to its last flush and the files hold no superseded footers (see docs, "Trace events").  Not every second
 * like the samples: each flush rewrites the open row group, which at 1 s doubled the reader's CPU time. */
#define TRACE_KEEP_MARGIN_NS 2000000

static void *trace_reader_run(void *arg)
{
	struct trace *t = arg;
	int64_t every = t->ct_cfg.flush_interval_ns;
	t->next_flush_ns = timerloop_now_ns() + every;
	for (;;) {
		bool last = atomic_load(&t->finish);
		int64_t before = timerloop_now_ns();
		int err = trace_raw_read(t);
		/* every event before `before` is read now, but one a CPU is still committing: a margin */
		if (!err)
			err = trace_keep_tick(t, last ? before : before - TRACE_KEEP_MARGIN_NS, last);
		int64_t now = timerloop_now_ns();
		if (!err && !last && now >= t->next_flush_ns) {
			t->next_flush_ns += every;
			if (t->next_flush_ns <= now) /* a stall of more than an interval: no burst of catch-up flushes */
				t->next_flush_ns = now + every;
			err = trace_flush(t, "running");
		}
		if (err || last) {
			t->error = err;
			return NULL;
		}
		struct timespec pause = {.tv_sec = t->cfg->trace_read_ns / 1000000000,
					 .tv_nsec = t->cfg->trace_read_ns % 1000000000};
		nanosleep(&pause, NULL);
	}
}

int trace_listen(struct trace *t, struct trace_late *queues, size_t stride, int n)
{
	if (!t->enabled || !t->keep)
		return 0;
	if (!(t->late = calloc((size_t)n, sizeof(*t->late))))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		t->late[i] = (struct trace_late *)((char *)queues + stride * (size_t)i);
		t->late[i]->threshold_ns = t->cfg->trace_threshold_ns;
	}
	t->nlate = n;
	return 0;
}

int trace_start(struct trace *t)
{
	if (!t->enabled)
		return 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (t->reader_cpu >= 0) {
		cpu_set_t cpus;
		CPU_ZERO(&cpus);
		CPU_SET(t->reader_cpu, &cpus);
		pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	}
	trace_keep_begin(t, timerloop_now_ns()); /* the background sample's clock, before the reader reads it */
	int err = pthread_create(&t->reader, &attr, trace_reader_run, t);
	pthread_attr_destroy(&attr);
	if (err) {
		fprintf(stderr, PROG ": cannot start the trace reader thread: %s\n", strerror(err));
		return -err;
	}
	pthread_setname_np(t->reader, "js-trace");
	t->reader_started = true;
	err = trace_write_file(t->dir, "tracing_on", "1");
	if (err)
		fprintf(stderr, PROG ": cannot turn tracing on in %s: %s\n", t->dir, strerror(-err));
	return err;
}

int trace_mark(struct trace *t, const char *text, int cpu)
{
	if (!t->enabled || t->marker_fd < 0)
		return 0;
	/* only the measured CPUs record (tracing_cpumask): write from cpu, then move back */
	cpu_set_t was, on;
	bool moved = sched_getaffinity(0, sizeof(was), &was) == 0;
	CPU_ZERO(&on);
	CPU_SET(cpu, &on);
	moved = moved && sched_setaffinity(0, sizeof(on), &on) == 0;
	int err = write(t->marker_fd, text, strlen(text)) < 0 ? -errno : 0;
	if (moved)
		sched_setaffinity(0, sizeof(was), &was);
	return err;
}

/* "overrun: N" and "dropped events: N" of per_cpu/cpuN/stats. */
static void trace_read_stats(struct trace *t)
{
	t->overrun = calloc((size_t)t->cfg->ncpus, sizeof(*t->overrun));
	t->dropped = calloc((size_t)t->cfg->ncpus, sizeof(*t->dropped));
	for (int i = 0; t->overrun && t->dropped && i < t->cfg->ncpus; i++) {
		char path[320], line[128];
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", t->dir, t->cfg->cpus[i]);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long v;
			if (sscanf(line, "overrun: %llu", &v) == 1)
				t->overrun[i] = v;
			else if (sscanf(line, "dropped events: %llu", &v) == 1)
				t->dropped[i] = v;
		}
		if (f)
			fclose(f);
	}
	if (!t->overrun || !t->dropped) {
		free(t->overrun);
		free(t->dropped);
		t->overrun = t->dropped = NULL;
	}
}

int trace_finish(struct trace *t, const char *reason)
{
	if (!t->enabled || !t->reader_started)
		return 0;
	trace_write_file(t->dir, "tracing_on", "0");
	atomic_store(&t->finish, true);
	pthread_join(t->reader, NULL);
	t->reader_started = false;
	t->stop_reason = reason;
	trace_read_stats(t);
	trace_raw_symbolize(t);
	int err = t->error ? t->error : trace_flush(t, "complete");
	if (err)
		fprintf(stderr, PROG ": the trace events could not all be stored: %s (%s/" TRACE_DIR_NAME
			"/part-*.parquet hold those of the last good flush)\n", strerror(-err), t->cfg->output);
	return err;
}

void trace_close(struct trace *t)
{
	if (!t->cfg) /* setup never reached it: nothing was opened */
		return;
	if (t->reader_started)
		trace_finish(t, "setup failed");
	if (t->has_container)
		container_close(&t->ct); /* the hidden twins go; every visible part stays */
	t->has_container = false;
	trace_raw_close(t);
	trace_keep_close(t);
	free(t->late);
	t->late = NULL;
	t->nlate = 0;
	int *fds[] = {&t->marker_fd, &t->dir_fd};
	for (size_t i = 0; i < 2; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	if (t->made && rmdir(t->dir) && errno != ENOENT)
		fprintf(stderr, PROG ": warning: cannot remove the tracefs instance %s: %s (rmdir it by hand)\n", t->dir,
			strerror(errno));
	t->made = false;
	for (int c = 0; c < TC_COUNT; c++) {
		free(t->columns[c]);
		t->columns[c] = NULL;
	}
	free(t->last_ts);
	free(t->overrun);
	free(t->dropped);
	t->last_ts = NULL;
	t->overrun = t->dropped = NULL;
	trace_strings_free(&t->strings);
}

char *trace_environment_json(const struct trace *t, const struct config *cfg)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_bool(&j, "enabled", t->enabled);
	if (t->enabled) {
		jsonw_string(&j, "instance", strrchr(t->dir, '/') + 1);
		jsonw_string(&j, "clock", "mono");
		trace_events_list(&j, t);
		jsonw_uint(&j, "buffer_size_kb", cfg->trace_buffer_kb);
		jsonw_int(&j, "reader_cpu", t->reader_cpu);
		jsonw_string(&j, "table", TRACE_DIR_NAME "/part-*.parquet");
		jsonw_string(&j, "keep", cfg->trace_keep == KEEP_ALL ? "all" : "spikes");
		if (cfg->trace_keep == KEEP_SPIKES) {
			jsonw_int(&j, "threshold_ns", cfg->trace_threshold_ns);
			jsonw_int(&j, "window_pre_ns", cfg->trace_pre_ns);
			jsonw_int(&j, "window_post_ns", cfg->trace_post_ns);
		}
		jsonw_raw(&j, "global", t->global_before);
	}
	jsonw_int(&j, "break_ns", cfg->break_ns);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}
