/* jitterscope-bench-writer HOURS,CPUS,HZ [capture options]: pushes synthetic
 * samples at full speed through the real writer and Parquet encoder (no
 * measuring threads, no rings) and prints what the container costs.  Samples
 * look like a quiet real capture (latency 2 us plus up to 1 us of noise and a
 * rare 50 us spike, TSC at 2.6 GHz) so the encoded sizes are realistic; the
 * metadata is the real environment snapshot.  Without -o nothing is written.
 * A developer tool: built next to jitterscope-capture, never on PATH. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "envinfo.h"
#include "output.h"
#include "timerloop.h"
#include "writer.h"

static uint64_t bench_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static int bench_stage(struct writer_thread *t, size_t n, uint64_t *rng)
{
	if (writer_reserve(t, n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct sample *s = &t->staged[t->nstaged + i];
		uint64_t r = bench_random(rng);
		int64_t seq = t->next_seq + (int64_t)i;
		memset(s, 0, sizeof(*s));
		s->seq = seq;
		s->expected_ns = 1000000000 + (seq + 1) * t->interval_ns;
		s->actual_ns = s->expected_ns + 2000 + (int64_t)(r & 0x3ff) + ((r >> 20) % 10000 == 0 ? 50000 : 0);
		s->tsc = (uint64_t)s->actual_ns * 26 / 10;
		s->run_cpu = t->cpu;
		s->read_cycles = 60 + (int32_t)((r >> 40) & 0x3f);
	}
	writer_take(t, n);
	return 0;
}

struct bench_spec {
	double hours;
	int cpus;
	int64_t hz;
};

static double bench_thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* name value lines (benchmarks/capture_writer.py and the tests parse them). */
static void bench_report(const struct bench_spec *spec, const struct config *cfg, const struct writer *w,
			 double wall_s, double writer_cpu_s)
{
	uint64_t data, footers, groups, rows = writer_total_rows(w);
	int parts;
	container_sizes(&w->ct, &data, &footers, &groups, &parts);
	uint64_t file = data + footers + 4 * (uint64_t)parts; /* each part: magic, chunks, footer */
	double simulated_s = spec->hours * 3600;
	printf("bench-writer hours=%g cpus=%d hz=%ld flush_interval_s=%g sync=%s\n", spec->hours, spec->cpus,
	       (long)spec->hz, (double)cfg->flush_interval_ns / 1e9, config_sync_name(cfg->sync));
	printf("rows %" PRIu64 "\nflushes %" PRIu64 "\nparts %d\nrow_groups %" PRIu64 "\n", rows, w->flushes, parts,
	       groups);
	printf("data_bytes %" PRIu64 "\nfooter_bytes %" PRIu64 "\nfile_bytes %" PRIu64 "\n", data, footers, file);
	printf("overhead_ratio %.6f\n", (double)(file - data) / (double)data);
	printf("bytes_per_row %.3f\nwritten_bytes %" PRIu64 "\nwrite_amplification %.3f\nsyncs %" PRIu64 "\n",
	       (double)file / (double)rows, w->ct.bytes_written, (double)w->ct.bytes_written / (double)file,
	       w->ct.syncs);
	printf("parts_per_day %.2f\n", parts * 86400 / simulated_s);
	printf("wall_s %.3f\nrows_per_s %.0f\nwriter_cpu_s %.3f\nwriter_cpu_percent %.4f\n", wall_s,
	       (double)rows / wall_s, writer_cpu_s, writer_cpu_s / simulated_s * 100);
}

static int bench_writer(const struct bench_spec *spec, const struct config *cfg)
{
	static struct writer w;
	struct output_owner owner = {.set = false};
	int n = spec->cpus, dir_fd = -1, status = EXIT_OK;
	struct writer_thread *threads = calloc((size_t)n, sizeof(*threads));
	int64_t interval = 1000000000 / spec->hz;
	for (int i = 0; i < n; i++)
		threads[i] = (struct writer_thread){.thread = i, .cpu = i, .interval_ns = interval};
	bool created;
	if (cfg->output && (dir_fd = output_create(cfg->output, cfg->force, &owner, &created)) < 0)
		return EXIT_RUNTIME;
	char *env = envinfo_json();
	w.to_dev_null = dir_fd < 0;
	w.environment_json = env;
	w.counters_json = "{\"source\":\"none\",\"columns\":[],\"missing\":{}}";
	bool no_counters[CTR_COUNT] = {false};
	if (writer_init(&w, cfg, threads, n, no_counters, dir_fd))
		return EXIT_RUNTIME;
	double per_flush = (double)spec->hz * (double)cfg->flush_interval_ns / 1e9;
	uint64_t flushes = (uint64_t)(spec->hours * 3600e9 / (double)cfg->flush_interval_ns + 0.5);
	uint64_t rng = 0x9E3779B97F4A7C15u;
	int64_t start = timerloop_now_ns();
	double writer_cpu_s = 0; /* flushing only, not making up the samples */
	for (uint64_t f = 0; f < flushes && status == EXIT_OK; f++) {
		size_t rows = (size_t)((double)(f + 1) * per_flush) - (size_t)((double)f * per_flush);
		for (int i = 0; i < n && status == EXIT_OK; i++)
			status = bench_stage(&threads[i], rows, &rng) ? EXIT_RUNTIME : EXIT_OK;
		double before = bench_thread_cpu_s();
		if (status == EXIT_OK && writer_flush(&w, f + 1 == flushes ? "complete" : "running", ""))
			status = EXIT_RUNTIME;
		writer_cpu_s += bench_thread_cpu_s() - before;
	}
	if (w.error)
		fprintf(stderr, "%s\n", w.error_line);
	else
		bench_report(spec, cfg, &w, (double)(timerloop_now_ns() - start) / 1e9, writer_cpu_s);
	writer_free(&w);
	free(threads);
	free(env);
	return status;
}

static int bench_parse_spec(const char *arg, struct bench_spec *spec)
{
	char extra;
	if (!arg || sscanf(arg, "%lf,%d,%" SCNd64 "%c", &spec->hours, &spec->cpus, &spec->hz, &extra) != 3 ||
	    !(spec->hours > 0) || spec->cpus < 1 || spec->cpus > CONFIG_MAX_CPUS || spec->hz < 1 || spec->hz > 1000000) {
		fprintf(stderr, "jitterscope-bench-writer: invalid spec '%s': use HOURS,CPUS,HZ (e.g. 24,16,1000) "
			"followed by capture options (-o DIR, --flush-interval S, ...)\n", arg ? arg : "");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct config cfg; /* large: holds a CPU array */
	struct bench_spec spec;
	if (bench_parse_spec(argc > 1 ? argv[1] : NULL, &spec))
		return EXIT_USAGE;
	argv[1] = argv[0]; /* the capture options follow the spec */
	int parsed = config_parse(&cfg, argc - 1, argv + 1);
	if (parsed)
		return parsed > 0 ? EXIT_OK : EXIT_USAGE;
	return bench_writer(&spec, &cfg);
}
