/* jitterscope-bench-trace HOURS,CPUS,HZ,SPIKES[,LAG] [capture options] -o DIR: pushes a synthetic kernel trace at
 * full speed through the real --trace-keep reader (rings, notices, windows, merging, background sample) and
 * the real events-table writer, and prints what the kept trace costs on disk.  Without tracefs: the rows are
 * what the binary decoder makes of an idle CPU at HZ wake-ups a second (per wake-up the timer vector, the
 * hrtimer callback, the wake-up and two switches, as this project's VM records them, plus a timer softirq
 * every 4th), and SPIKES late wake-ups a second on each CPU (a 200 us delay: a FIFO 90 task ran in between),
 * each posted to the reader as a measuring thread does (LAG 1: CPU 0's a read interval late, as a preempted
 * measuring thread would).  Simulated time; a read every --trace-read-interval,
 * a flush every --trace-flush.  A developer tool: built next to jitterscope-capture, never on PATH. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "output.h"
#include "trace.h"

struct bench_spec {
	double hours;
	int cpus;
	int64_t hz;
	double spikes;
	int lag;        /* 1: CPU 0's thread posts its notices a read interval late (a preempted measuring thread) */
};

struct bench_ids {
	int32_t idle, js, spinner, timer_vec, wakeup_fn, softirq;
};

static uint64_t bench_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static double bench_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_row(struct trace *t, int64_t ts, int cpu, int code, int32_t pid, int32_t comm, int32_t number,
		     int32_t name, int32_t opid, int32_t oprio, int32_t ocomm, int32_t prio, int64_t value)
{
	struct trace_row r = {.ts_ns = ts, .cpu = cpu, .event = code, .pid = pid, .comm = comm, .number = number,
			      .name = name, .other_pid = opid, .other_prio = oprio, .other_comm = ocomm, .prio = prio,
			      .value = value};
	return trace_keep_row(t, &r);
}

/* One wake-up of the measuring thread (pid 1000 + cpu) on an idle cpu, delay ns late; a spike has a FIFO 90
 * task (pid 99) running from before the programmed time until the thread runs. */
static int bench_wakeup(struct trace *t, const struct bench_ids *id, int cpu, int64_t expected, int64_t delay,
			uint64_t *rng, bool softirq)
{
	int32_t js = 1000 + cpu, held = delay > 50000 ? 99 : 0, held_comm = held ? id->spinner : id->idle;
	int64_t irq = expected + 1000 + (int64_t)(bench_random(rng) % 2000), run = expected + delay;
	int err = 0;
	if (held)
		err = bench_row(t, expected - 300000, cpu, TRACE_EV_SWITCH, 0, id->idle, -1, -1, 99, 9, id->spinner, 120,
				0);
	err = err ? err : bench_row(t, irq, cpu, TRACE_EV_VECTOR_ENTRY, held, held_comm, 236, id->timer_vec, -1, -1, -1,
				    -1, 0);
	err = err ? err : bench_row(t, irq + 700, cpu, TRACE_EV_HRTIMER, held, held_comm, -1, id->wakeup_fn, -1, -1, -1,
				    -1, 400 + (int64_t)(bench_random(rng) % 256));
	err = err ? err : bench_row(t, irq + 1400, cpu, TRACE_EV_WAKEUP, held, held_comm, cpu, -1, js, 19, id->js, -1, 0);
	err = err ? err : bench_row(t, irq + 1700, cpu, TRACE_EV_HRTIMER_EXIT, held, held_comm, -1, -1, -1, -1, -1, -1,
				    0);
	err = err ? err : bench_row(t, irq + 2500, cpu, TRACE_EV_VECTOR_EXIT, held, held_comm, 236, id->timer_vec, -1,
				    -1, -1, -1, 0);
	if (softirq) {
		err = err ? err : bench_row(t, irq + 2600, cpu, TRACE_EV_SOFTIRQ_ENTRY, held, held_comm, 1, id->softirq, -1,
					    -1, -1, -1, 0);
		err = err ? err : bench_row(t, irq + 4000, cpu, TRACE_EV_SOFTIRQ_EXIT, held, held_comm, 1, id->softirq, -1,
					    -1, -1, -1, 0);
	}
	err = err ? err : bench_row(t, run - 1000, cpu, TRACE_EV_SWITCH, held, held_comm, -1, -1, js, 19, id->js,
				    held ? 9 : 120, 0);
	return err ? err : bench_row(t, run + 8000, cpu, TRACE_EV_SWITCH, js, id->js, -1, -1, 0, 120, id->idle, 19, 0);
}

static int bench_ids(struct trace *t, struct bench_ids *id)
{
	const char *text[] = {"swapper", "js-cpu", "js-spinner", "local_timer", "hrtimer_wakeup", "TIMER"};
	int32_t *slot[] = {&id->idle, &id->js, &id->spinner, &id->timer_vec, &id->wakeup_fn, &id->softirq};
	for (size_t i = 0; i < 6; i++)
		if ((*slot[i] = trace_string_id(&t->strings, text[i], strlen(text[i]))) < 0)
			return -ENOMEM;
	return 0;
}

static int bench_run(const struct bench_spec *spec, struct trace *t, struct trace_late *late)
{
	const struct config *cfg = t->cfg;
	struct bench_ids id;
	int err = bench_ids(t, &id);
	int64_t interval = 1000000000 / spec->hz, step = cfg->trace_read_ns, start = 1000000000;
	int64_t end = start + (int64_t)(spec->hours * 3600e9), next_flush = start + cfg->trace_flush_ns;
	uint64_t rng = 0x9E3779B97F4A7C15u;
	double spike_p = spec->spikes / (double)spec->hz; /* per wake-up */
	uint64_t seq = 0;
	int64_t held[TRACE_LATE_SLOTS]; /* --lag: CPU 0's notices of the last interval, posted in the next */
	size_t nheld = 0;
	trace_keep_begin(t, start);
	for (int64_t now = start; !err && now < end; now += step) {
		uint64_t first = seq, last = (uint64_t)((now + step - start) / interval);
		for (size_t h = 0; h < nheld; h++)
			trace_late_post(&late[0], held[h], held[h] + 200000);
		nheld = 0;
		for (int c = 0; !err && c < spec->cpus; c++) {
			for (uint64_t s = first; !err && s < last; s++) {
				bool spike = (double)(bench_random(&rng) % 1000000) < spike_p * 1e6;
				int64_t expected = start + (int64_t)s * interval, delay = spike ? 200000 : 5000;
				err = bench_wakeup(t, &id, c, expected, delay, &rng, s % 4 == 0);
				if (!err && spike && spec->lag && c == 0 && nheld < TRACE_LATE_SLOTS)
					held[nheld++] = expected;
				else if (!err && spike)
					trace_late_post(&late[c], expected, expected + delay);
			}
			/* a thread that has not posted yet is still at its first wake-up of the interval */
			trace_late_next(&late[c], start + (int64_t)(spec->lag && c == 0 ? first : last) * interval);
		}
		seq = last;
		err = err ? err : trace_keep_tick(t, now + step - 2000000, false);
		if (!err && now + step >= next_flush) {
			next_flush += cfg->trace_flush_ns;
			err = trace_flush(t, "running");
		}
	}
	err = err ? err : trace_keep_tick(t, end, true);
	return err ? err : trace_flush(t, "complete");
}

static void bench_report(const struct bench_spec *spec, const struct trace *t, double wall_s, double cpu_s)
{
	uint64_t data, footers, groups;
	int parts;
	container_sizes(&t->ct, &data, &footers, &groups, &parts);
	uint64_t file = data + footers + 4 * (uint64_t)parts;
	printf("bench-trace hours=%g cpus=%d hz=%ld spikes_per_s=%g keep=%s\n", spec->hours, spec->cpus,
	       (long)spec->hz, spec->spikes, t->cfg->trace_keep == KEEP_ALL ? "all" : "spikes");
	printf("events_seen %" PRIu64 "\nevents_kept %" PRIu64 "\nrows %" PRIu64 "\n", t->events_seen, t->events_kept,
	       t->rows);
	printf("windows %" PRIu64 "\nwindows_spike %" PRIu64 "\nwindows_background %" PRIu64 "\n", t->windows_total,
	       t->windows_spike, t->windows_background);
	printf("windows_incomplete %" PRIu64 "\nlate_notices %" PRIu64 "\nlate_windows %" PRIu64 "\n",
	       t->windows_incomplete, t->late_notices, t->windows_late);
	printf("file_bytes %" PRIu64 "\nparts %d\nbytes_per_day %.0f\nbytes_per_kept_row %.3f\n", file, parts,
	       (double)file * 24 / spec->hours, (double)file / (double)(t->rows ? t->rows : 1));
	printf("wall_s %.3f\nreader_cpu_s %.3f\nreader_cpu_percent %.4f\n", wall_s, cpu_s,
	       cpu_s / (spec->hours * 3600) * 100);
}

static int bench_trace(const struct bench_spec *spec, struct config *cfg)
{
	static struct trace t;
	struct output_owner owner = {.set = false};
	bool created;
	cfg->ncpus = spec->cpus;
	for (int i = 0; i < spec->cpus; i++)
		cfg->cpus[i] = i;
	int dir_fd = output_create(cfg->output, cfg->force, &owner, &created);
	if (dir_fd < 0)
		return EXIT_RUNTIME;
	struct trace_late *late = calloc((size_t)spec->cpus, sizeof(*late));
	t.cfg = cfg;
	t.enabled = true;
	t.reader_cpu = -1;
	t.stop_reason = "bench";
	snprintf(t.dir, sizeof(t.dir), "bench/jitterscope-bench");
	snprintf(t.global_before, sizeof(t.global_before), "{}");
	int err = late ? trace_keep_open(&t) : -ENOMEM;
	if (!err && t.keep && !(t.late = calloc((size_t)spec->cpus, sizeof(*t.late))))
		err = -ENOMEM;
	for (int i = 0; !err && t.keep && i < spec->cpus; i++)
		t.late[i] = &late[i];
	t.nlate = t.keep ? spec->cpus : 0;
	double cpu0 = bench_cpu_s();
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	err = err ? err : trace_open_file(&t, dir_fd, 0, 0, false);
	err = err ? err : bench_run(spec, &t, late);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	if (err)
		fprintf(stderr, "jitterscope-bench-trace: %s\n", strerror(-err));
	else
		bench_report(spec, &t, (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9,
			     bench_cpu_s() - cpu0);
	trace_close(&t);
	free(late);
	close(dir_fd);
	return err ? EXIT_RUNTIME : EXIT_OK;
}

int main(int argc, char **argv)
{
	static struct config cfg; /* large: holds a CPU array */
	struct bench_spec spec;
	char extra;
	spec.lag = 0;
	int got = argc < 2 ? 0 : sscanf(argv[1], "%lf,%d,%" SCNd64 ",%lf,%d%c", &spec.hours, &spec.cpus, &spec.hz,
					&spec.spikes, &spec.lag, &extra);
	if ((got != 4 && got != 5) || !(spec.hours > 0) || spec.cpus < 1 || spec.cpus > CONFIG_MAX_CPUS ||
	    spec.hz < 1 || spec.hz > 100000 || spec.spikes < 0) {
		fprintf(stderr, "jitterscope-bench-trace: use HOURS,CPUS,HZ,SPIKES_PER_S[,LAG] (e.g. 24,16,1000,1) followed by "
			"capture options, --trace and -o DIR among them\n");
		return EXIT_USAGE;
	}
	argv[1] = argv[0]; /* the capture options follow the spec */
	int parsed = config_parse(&cfg, argc - 1, argv + 1);
	if (parsed)
		return parsed > 0 ? EXIT_OK : EXIT_USAGE;
	if (!cfg.trace || !cfg.output) {
		fprintf(stderr, "jitterscope-bench-trace: give --trace and -o DIR\n");
		return EXIT_USAGE;
	}
	return bench_trace(&spec, &cfg);
}
