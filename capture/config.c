/* Strict command-line parsing into struct config (config.h).
 * Every number is parsed whole (trailing junk refused) and range-checked;
 * each refusal is one line on stderr naming the option and what is allowed. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "jitterscope-capture"

enum long_only {
	OPT_POLICY = 256, OPT_LATENCY, OPT_NO_LATENCY, OPT_TIMER, OPT_COUNTERS,
	OPT_MSR_DIR, OPT_FLUSH, OPT_FORCE, OPT_VERSION, OPT_RING, OPT_SYNC, OPT_WRITER_CPU, OPT_GROUP_SECONDS,
	OPT_GROUP_ROWS, OPT_PART_SECONDS, OPT_TRACE, OPT_TRACE_BUFFER, OPT_BREAK, OPT_TRACE_READ, OPT_TRACE_FLUSH,
	OPT_DEEPEST_IDLE, OPT_CPU_SYSFS, OPT_STATE_DIR, OPT_MODE, OPT_POLL_THRESHOLD, OPT_POLL_CLOCK,
	OPT_ALLOW_STARVATION, OPT_RT_RUNTIME_FILE, OPT_TRACE_KEEP, OPT_TRACE_THRESHOLD, OPT_TRACE_WINDOW,
	OPT_TRACE_BACKGROUND, OPT_TRACE_RING,
	OPT_LAST, /* one past the last option code (the size of config_parse's seen[]) */
};

static const struct option config_options[] = {
	{"interval", required_argument, NULL, 'i'},
	{"frequency", required_argument, NULL, 'f'},
	{"affinity", required_argument, NULL, 'a'},
	{"priority", required_argument, NULL, 'p'},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"duration", required_argument, NULL, 'D'},
	{"loops", required_argument, NULL, 'l'},
	{"latency", required_argument, NULL, OPT_LATENCY},
	{"no-latency", no_argument, NULL, OPT_NO_LATENCY},
	{"timer", required_argument, NULL, OPT_TIMER},
	{"counters", required_argument, NULL, OPT_COUNTERS},
	{"msr-dir", required_argument, NULL, OPT_MSR_DIR},
	{"output", required_argument, NULL, 'o'},
	{"flush-interval", required_argument, NULL, OPT_FLUSH},
	{"force", no_argument, NULL, OPT_FORCE},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{"ring", required_argument, NULL, OPT_RING},
	{"sync", required_argument, NULL, OPT_SYNC},
	{"writer-cpu", required_argument, NULL, OPT_WRITER_CPU},
	{"group-seconds", required_argument, NULL, OPT_GROUP_SECONDS},
	{"group-rows", required_argument, NULL, OPT_GROUP_ROWS},
	{"part-seconds", required_argument, NULL, OPT_PART_SECONDS},
	{"trace", optional_argument, NULL, OPT_TRACE},
	{"trace-buffer", required_argument, NULL, OPT_TRACE_BUFFER},
	{"break", required_argument, NULL, OPT_BREAK},
	{"trace-read-interval", required_argument, NULL, OPT_TRACE_READ},
	{"trace-flush", required_argument, NULL, OPT_TRACE_FLUSH},
	{"trace-keep", required_argument, NULL, OPT_TRACE_KEEP},
	{"trace-threshold", required_argument, NULL, OPT_TRACE_THRESHOLD},
	{"trace-window", required_argument, NULL, OPT_TRACE_WINDOW},
	{"trace-background", required_argument, NULL, OPT_TRACE_BACKGROUND},
	{"trace-ring", required_argument, NULL, OPT_TRACE_RING},
	{"deepest-idle-state", required_argument, NULL, OPT_DEEPEST_IDLE},
	{"cpu-sysfs", required_argument, NULL, OPT_CPU_SYSFS},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"mode", required_argument, NULL, OPT_MODE},
	{"poll-threshold", required_argument, NULL, OPT_POLL_THRESHOLD},
	{"poll-clock", required_argument, NULL, OPT_POLL_CLOCK},
	{"allow-starvation", no_argument, NULL, OPT_ALLOW_STARVATION},
	{"rt-runtime-file", required_argument, NULL, OPT_RT_RUNTIME_FILE},
	{NULL, 0, NULL, 0},
};

static const char config_usage_text[] =
	"usage: " PROG " [options]\n"
	"Measure timer wake-up latency (and CPU frequency counters) on every chosen CPU\n"
	"and record every wake-up to a crash-safe Parquet dataset.\n"
	"\n"
	"      --mode M            timer (default): sleep and measure each wake-up; poll: a busy loop per\n"
	"                          CPU records every gap >= --poll-threshold (an interruption: tick, IRQ,\n"
	"                          kworker, RT throttling, SMI, hypervisor) and a per-second table (oslat)\n"
	"      --poll-threshold NS gap that counts as an interruption, in ns (default 1000, at least 100)\n"
	"      --poll-clock C      auto (default: TSC when it is the kernel's clocksource), tsc or vdso\n"
	"                          (counters: none unless --counters asks; each read is a syscall)\n"
	"      --allow-starvation  poll every online CPU at fifo/rr although RT throttling is off\n"
	"                          (sched_rt_runtime_us -1): nothing else would ever run\n"
	"  -i, --interval US       wake-up interval in microseconds (default 1000)\n"
	"  -f, --frequency HZ      wake-up frequency instead of -i (e.g. -f 2000)\n"
	"  -a, --affinity CPUSET   CPUs to measure, one thread each, e.g. 0-3,5 (default: all online)\n"
	"  -p, --priority N        real-time priority 1-99 (default 99; cyclictest's default is 0,\n"
	"                          we default to a correct measurement)\n"
	"      --policy P          fifo, rr or other (default fifo)\n"
	"  -D, --duration T        stop after T seconds; suffixes s, m, h, d (e.g. 10, 5m, 1.5h)\n"
	"  -l, --loops N           stop after N wake-ups per thread\n"
	"      --latency US        hold /dev/cpu_dma_latency at US while measuring (default 0)\n"
	"      --no-latency        leave /dev/cpu_dma_latency alone (to study idle states)\n"
	"      --deepest-idle-state N  disable the idle states deeper than N on the measured CPUs while\n"
	"                          measuring (as rtla's); journaled and put back on every exit, and a\n"
	"                          killed capture's states are put back by the next capture\n"
	"      --timer T           abs (clock_nanosleep, default), timerfd or posix\n"
	"      --counters C        auto (default), msr, perf or none\n"
	"      --msr-dir DIR       read MSRs from DIR/N/msr instead of /dev/cpu/N/msr (tests)\n"
	"  -o, --output DIR        write the dataset into directory DIR (part-00000.parquet, ...)\n"
	"      --flush-interval S  seconds between flushes to disk (default 1); a crash, power cut or\n"
	"                          kernel hang loses at most the last interval\n"
	"      --sync MODE         data (default): fdatasync every flush; none: leave it to the page\n"
	"                          cache (survives a killed capture, not a power cut or a kernel hang)\n"
	"      --writer-cpu N      pin the writer thread to CPU N (default: the first CPU not measured;\n"
	"                          when every CPU is measured it shares them, and the metadata says so)\n"
	"      --trace[=EVENTS]    record kernel events on the measured CPUs into DIR/_trace/part-*.parquet,\n"
	"                          in an own tracefs instance (root); EVENTS: comma-separated system or\n"
	"                          system:event (default: irq handlers, softirqs, irq_vectors, nmi,\n"
	"                          sched_switch; hrtimer_expire_entry/exit where irq_vectors is missing)\n"
	"      --trace-keep K      spikes (default): keep only windows around wake-ups later than\n"
	"                          --trace-threshold (poll: around gaps at least that long), on every\n"
	"                          measured CPU, plus a background sample; all: keep every event\n"
	"      --trace-threshold US  late enough to keep a window (default 100, fixed for the run; poll:\n"
	"                          a gap this long, at least --poll-threshold)\n"
	"      --trace-window PRE,POST  microseconds kept before the programmed and after the actual\n"
	"                          wake-up (poll: the gap's start and end) (default 100,50)\n"
	"      --trace-background S,MS  a background window of MS milliseconds every S seconds,\n"
	"                          the first 1 s after the start (default 60,100; MS 0: none)\n"
	"      --trace-buffer KB   per-CPU trace buffer of --trace in KiB (default 1024)\n"
	"      --trace-flush S     seconds between flushes of the trace to disk (default 5, at least\n"
	"                          --flush-interval); a killed capture loses at most the last interval\n"
	"      --break US          stop after the first wake-up later than US microseconds, writing a\n"
	"                          trace_marker that names the thread and seq (like cyclictest -b)\n"
	"      --force             replace an existing output\n"
	"  -q, --quiet             no live status; only the final line per thread\n"
	"  -h, --help              this text\n"
	"      --version           print the version\n"
	"\n"
	"Exit status: 0 ok, 1 runtime error, 2 usage error.\n"
	"\n"
	"Examples:\n"
	"  " PROG " -D 10 -o run1                   10 s, 1 kHz, all CPUs, FIFO 99\n"
	"  " PROG " -i 100 -a 2-3 -D 1h -o night    10 kHz on CPUs 2 and 3 for an hour\n"
	"  " PROG " --policy other -D 30 -o test    without real-time rights (degraded)\n"
	"  " PROG " -l 10000 -q                     cyclictest-style summary, no dataset\n"
	"  " PROG " --mode poll -a 1 -D 60 -o noise  busy-poll CPU 1 for a minute (like oslat)\n";

static int config_fail(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return -EINVAL;
}

/* Whole-string unsigned integer; refuses signs, spaces, junk and overflow. */
static int config_uint(const char *text, uint64_t *out)
{
	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Whole-string positive decimal (e.g. "0.2"), with an optional one-letter suffix. */
static int config_decimal(const char *text, const char *suffixes, double *out, char *suffix)
{
	if (!((text[0] >= '0' && text[0] <= '9') || text[0] == '.'))
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || !isfinite(v) || v <= 0)
		return -EINVAL;
	*suffix = '\0';
	if (*end != '\0') {
		if (!suffixes || end[1] != '\0' || !strchr(suffixes, *end))
			return -EINVAL;
		*suffix = *end;
	}
	*out = v;
	return 0;
}

static int config_cpu_number(const char **p, int *out)
{
	if (**p < '0' || **p > '9')
		return -EINVAL;
	long v = 0;
	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		if (v >= CONFIG_MAX_CPUS)
			return -EINVAL;
		(*p)++;
	}
	*out = (int)v;
	return 0;
}

int config_parse_cpuset(const char *text, int *cpus, int *ncpus)
{
	static bool seen[CONFIG_MAX_CPUS];
	memset(seen, 0, sizeof(seen));
	const char *p = text;
	for (;;) {
		int lo, hi;
		if (config_cpu_number(&p, &lo))
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (config_cpu_number(&p, &hi) || hi < lo)
				return -EINVAL;
		}
		for (int c = lo; c <= hi; c++)
			seen[c] = true;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	*ncpus = 0;
	for (int c = 0; c < CONFIG_MAX_CPUS; c++)
		if (seen[c])
			cpus[(*ncpus)++] = c;
	return 0;
}

void config_format_cpuset(const int *cpus, int ncpus, char *buf, unsigned long len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < ncpus && used < len; i++) {
		int j = i;
		while (j + 1 < ncpus && cpus[j + 1] == cpus[j] + 1)
			j++;
		int n = j > i ? snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "", cpus[i], cpus[j])
			      : snprintf(buf + used, len - used, "%s%d", i ? "," : "", cpus[i]);
		used += n > 0 ? (size_t)n : 0;
		i = j;
	}
}

static int config_online_cpus(int *cpus, int *ncpus)
{
	char line[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	char *ok = fgets(line, sizeof(line), f);
	fclose(f);
	if (!ok)
		return -EIO;
	line[strcspn(line, "\n")] = '\0';
	return config_parse_cpuset(line, cpus, ncpus);
}

static bool config_is_online(const int *online, int nonline, int cpu)
{
	for (int j = 0; j < nonline; j++)
		if (online[j] == cpu)
			return true;
	return false;
}

static int config_not_online(const int *online, int nonline, int cpu, const char *hint)
{
	char list[256];
	config_format_cpuset(online, nonline, list, sizeof(list));
	fprintf(stderr, PROG ": CPU %d is not online (online CPUs: %s); %s\n", cpu, list, hint);
	return -EINVAL;
}

static int config_check_online(struct config *cfg)
{
	static int online[CONFIG_MAX_CPUS];
	int nonline = 0;
	int err = config_online_cpus(online, &nonline);
	if (err) {
		fprintf(stderr, PROG ": cannot read /sys/devices/system/cpu/online: %s (is /sys mounted?)\n",
			strerror(-err));
		return err;
	}
	if (cfg->writer_cpu >= 0 && !config_is_online(online, nonline, cfg->writer_cpu))
		return config_not_online(online, nonline, cfg->writer_cpu, "choose the writer's CPU with --writer-cpu");
	if (cfg->ncpus == 0) {
		memcpy(cfg->cpus, online, sizeof(int) * (size_t)nonline);
		cfg->ncpus = nonline;
		return 0;
	}
	for (int i = 0; i < cfg->ncpus; i++)
		if (!config_is_online(online, nonline, cfg->cpus[i]))
			return config_not_online(online, nonline, cfg->cpus[i], "choose CPUs with -a");
	return 0;
}

static int config_duration(const char *arg, int64_t *out)
{
	double v;
	char suffix;
	if (config_decimal(arg, "smhd", &v, &suffix))
		return config_fail("invalid duration '%s': use a positive number of seconds with an optional "
				   "suffix s, m, h or d (e.g. -D 10, -D 5m)", arg);
	double scale = suffix == 'm' ? 60 : suffix == 'h' ? 3600 : suffix == 'd' ? 86400 : 1;
	double ns = v * scale * 1e9;
	if (ns < 1 || ns > 9e18)
		return config_fail("duration '%s' is out of range (1 ns to 100 years)", arg);
	*out = (int64_t)(ns + 0.5); /* positive: rounds without libm */
	return 0;
}

static int config_interval(const char *arg, int64_t *out)
{
	uint64_t us;
	if (config_uint(arg, &us) || us < 1 || us > 3600ULL * 1000000)
		return config_fail("invalid interval '%s': use a whole number of microseconds from 1 to "
				   "3600000000 (e.g. -i 1000)", arg);
	*out = (int64_t)us * 1000;
	return 0;
}

static int config_frequency(const char *arg, int64_t *out)
{
	double hz;
	char suffix;
	if (config_decimal(arg, NULL, &hz, &suffix) || hz > 1e6 || hz < 1.0 / 3600)
		return config_fail("invalid frequency '%s': use a number of Hz from 0.0003 to 1000000 "
				   "(e.g. -f 1000)", arg);
	*out = (int64_t)(1e9 / hz + 0.5); /* positive: rounds without libm */
	return 0;
}

static int config_priority(const char *arg, int *out)
{
	uint64_t v;
	if (config_uint(arg, &v) || v > 99)
		return config_fail("invalid priority '%s': use a whole number from 1 to 99 (0 with --policy other)",
				   arg);
	*out = (int)v;
	return 0;
}

static int config_choice(const char *arg, const char *const *names, int n, int *out, const char *what)
{
	for (int i = 0; i < n; i++) {
		if (strcmp(arg, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	fprintf(stderr, PROG ": invalid %s '%s': use", what, arg);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s %s", i == 0 ? "" : i == n - 1 ? " or" : ",", names[i]);
	fputc('\n', stderr);
	return -EINVAL;
}

static const char *const config_policies[] = {"fifo", "rr", "other"};
static const char *const config_timers[] = {"abs", "timerfd", "posix"};
static const char *const config_counter_sources[] = {"auto", "msr", "perf", "none"};
static const char *const config_syncs[] = {"data", "none"};
static const char *const config_modes[] = {"timer", "poll"};
static const char *const config_poll_clocks[] = {"auto", "tsc", "vdso"};

const char *config_policy_name(enum config_policy p) { return config_policies[p]; }
const char *config_timer_name(enum config_timer t) { return config_timers[t]; }
const char *config_counters_name(enum config_counters c) { return config_counter_sources[c]; }
const char *config_sync_name(enum config_sync y) { return config_syncs[y]; }
const char *config_mode_name(enum config_mode m) { return config_modes[m]; }
const char *config_poll_clock_name(enum config_poll_clock c) { return config_poll_clocks[c]; }

static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->interval_ns = 1000000;
	cfg->policy = POLICY_FIFO;
	cfg->priority = 99;
	cfg->latency_us = 0;
	cfg->timer = TIMER_ABS;
	cfg->counters = COUNTERS_AUTO;
	cfg->flush_interval_ns = 1000000000;
	cfg->sync = SYNC_DATA;
	cfg->writer_cpu = -1;
	cfg->deepest_idle_state = -1;
	cfg->cpu_sysfs = "/sys/devices/system/cpu";
	cfg->state_dir = "/run/jitterscope-capture";
	cfg->group_ns = 20 * (int64_t)1000000000;
	cfg->group_rows = 1 << 20;
	cfg->part_ns = 3600 * (int64_t)1000000000;
	cfg->trace_buffer_kb = 1024;
	cfg->trace_read_ns = 250000000;
	cfg->trace_flush_ns = 5 * (int64_t)1000000000;
	cfg->poll_threshold_ns = CONFIG_POLL_THRESHOLD_NS;
	cfg->rt_runtime_file = "/proc/sys/kernel/sched_rt_runtime_us";
	cfg->trace_keep = KEEP_SPIKES;
	cfg->trace_threshold_ns = 100000;
	cfg->trace_pre_ns = 100000;
	cfg->trace_post_ns = 50000;
	cfg->trace_bg_every_ns = 60 * (int64_t)1000000000;
	cfg->trace_bg_len_ns = 100000000;
}

/* Seconds from 0.001 to max_s into ns; what names the option in the refusal. */
static int config_seconds(const char *arg, double max_s, int64_t *out, const char *what)
{
	double seconds;
	char suffix;
	if (config_decimal(arg, "s", &seconds, &suffix) || seconds < 0.001 || seconds > max_s) {
		fprintf(stderr, PROG ": invalid %s '%s': use seconds from 0.001 to %g (e.g. 0.5)\n", what, arg, max_s);
		return -EINVAL;
	}
	*out = (int64_t)(seconds * 1e9 + 0.5); /* positive: rounds without libm */
	return 0;
}

/* "A,B": two whole numbers, each at most max. */
static int config_pair(const char *arg, uint64_t max, uint64_t *a, uint64_t *b)
{
	char first[32];
	const char *comma = strchr(arg, ',');
	if (!comma || (size_t)(comma - arg) >= sizeof(first))
		return -EINVAL;
	snprintf(first, sizeof(first), "%.*s", (int)(comma - arg), arg);
	if (config_uint(first, a) || config_uint(comma + 1, b) || *a > max || *b > max)
		return -EINVAL;
	return 0;
}

static const char *const config_keeps[] = {"spikes", "all"};

/* The options of --trace-keep and its windows. */
static int config_keep_option(struct config *cfg, int opt, const char *arg)
{
	uint64_t a, b;
	int choice = 0, err;
	cfg->trace_keep_given = true;
	switch (opt) {
	case OPT_TRACE_KEEP:
		err = config_choice(arg, config_keeps, 2, &choice, "--trace-keep");
		cfg->trace_keep = (enum config_trace_keep)choice;
		return err;
	case OPT_TRACE_THRESHOLD:
		if (config_uint(arg, &a) || a < 1 || a > 3600ULL * 1000000)
			return config_fail("invalid --trace-threshold '%s': use a whole number of microseconds from 1 to "
					   "3600000000", arg);
		cfg->trace_threshold_ns = (int64_t)a * 1000;
		return 0;
	case OPT_TRACE_WINDOW:
		if (config_pair(arg, 1000000, &a, &b))
			return config_fail("invalid --trace-window '%s': use PRE,POST in whole microseconds from 0 to "
					   "1000000 (e.g. 100,50)", arg);
		cfg->trace_pre_ns = (int64_t)a * 1000;
		cfg->trace_post_ns = (int64_t)b * 1000;
		return 0;
	case OPT_TRACE_BACKGROUND:
		if (config_pair(arg, 86400000, &a, &b) || a < 1 || a > 86400 || b > a * 1000)
			return config_fail("invalid --trace-background '%s': use S,MS: a window of MS milliseconds (0: "
					   "none) every S seconds (1 to 86400), MS at most S * 1000 (e.g. 60,100)", arg);
		cfg->trace_bg_every_ns = (int64_t)a * 1000000000;
		cfg->trace_bg_len_ns = (int64_t)b * 1000000;
		return 0;
	case OPT_TRACE_RING:
		if (config_uint(arg, &a) || a < 16 || a > (1u << 21))
			return config_fail("invalid --trace-ring '%s': use rows per CPU from 16 to 2097152", arg);
		cfg->trace_ring_rows = a;
		return 0;
	default: return -EINVAL;
	}
}

/* The options of --trace and --break. */
static int config_trace_option(struct config *cfg, int opt, const char *arg)
{
	uint64_t u;
	switch (opt) {
	case OPT_TRACE:
		if (arg && (!*arg || strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789_:,*") != strlen(arg)))
			return config_fail("invalid --trace events '%s': use comma-separated system or system:event names "
					   "(e.g. --trace=irq,sched:sched_switch)", arg);
		cfg->trace = true;
		cfg->trace_events = arg;
		return 0;
	case OPT_TRACE_BUFFER:
		if (config_uint(arg, &u) || u < 1 || u > (1u << 22))
			return config_fail("invalid --trace-buffer '%s': use KiB per CPU from 1 to 4194304", arg);
		cfg->trace_buffer_kb = u;
		return 0;
	case OPT_BREAK:
		if (config_uint(arg, &u) || u < 1 || u > 3600ULL * 1000000)
			return config_fail("invalid --break '%s': use a whole number of microseconds from 1 to 3600000000",
					   arg);
		cfg->break_ns = (int64_t)u * 1000;
		return 0;
	case OPT_DEEPEST_IDLE:
		if (config_uint(arg, &u) || u > 63)
			return config_fail("invalid --deepest-idle-state '%s': use an idle state number from 0 to 63", arg);
		cfg->deepest_idle_state = (int)u;
		return 0;
	case OPT_CPU_SYSFS: cfg->cpu_sysfs = arg; return 0;
	case OPT_STATE_DIR: cfg->state_dir = arg; return 0;
	case OPT_TRACE_READ: return config_seconds(arg, 10, &cfg->trace_read_ns, "--trace-read-interval");
	case OPT_TRACE_FLUSH: return config_seconds(arg, 3600, &cfg->trace_flush_ns, "--trace-flush");
	default: return config_keep_option(cfg, opt, arg);
	}
}

/* The options of --mode poll. */
static int config_poll_option(struct config *cfg, int opt, const char *arg)
{
	int choice = 0, err;
	uint64_t u;
	switch (opt) {
	case OPT_MODE:
		err = config_choice(arg, config_modes, 2, &choice, "--mode");
		cfg->mode = (enum config_mode)choice;
		return err;
	case OPT_POLL_THRESHOLD:
		if (config_uint(arg, &u) || u < CONFIG_POLL_MIN_THRESHOLD_NS || u > 1000000000)
			return config_fail("invalid --poll-threshold '%s': use a whole number of ns from 100 to 1000000000 "
					   "(e.g. --poll-threshold 1000)", arg);
		cfg->poll_threshold_ns = (int64_t)u;
		return 0;
	case OPT_POLL_CLOCK:
		err = config_choice(arg, config_poll_clocks, 3, &choice, "--poll-clock");
		cfg->poll_clock = (enum config_poll_clock)choice;
		return err;
	case OPT_ALLOW_STARVATION: cfg->allow_starvation = true; return 0;
	case OPT_RT_RUNTIME_FILE: cfg->rt_runtime_file = arg; return 0;
	default: return config_trace_option(cfg, opt, arg);
	}
}

/* The options of the writer and the container (one switch per group keeps each screen-sized). */
static int config_writer_option(struct config *cfg, int opt, const char *arg)
{
	int choice = 0, err;
	uint64_t u;
	switch (opt) {
	case OPT_FLUSH: return config_seconds(arg, 3600, &cfg->flush_interval_ns, "--flush-interval");
	case OPT_SYNC:
		err = config_choice(arg, config_syncs, 2, &choice, "--sync mode");
		cfg->sync = (enum config_sync)choice;
		return err;
	case OPT_WRITER_CPU:
		if (config_uint(arg, &u) || u >= CONFIG_MAX_CPUS)
			return config_fail("invalid --writer-cpu '%s': use an online CPU number (e.g. --writer-cpu 0)", arg);
		cfg->writer_cpu = (int)u;
		return 0;
	case OPT_GROUP_SECONDS: return config_seconds(arg, 86400, &cfg->group_ns, "--group-seconds");
	case OPT_PART_SECONDS: return config_seconds(arg, 7 * 86400, &cfg->part_ns, "--part-seconds");
	case OPT_GROUP_ROWS:
		if (config_uint(arg, &u) || u < 1 || u > (1u << 30))
			return config_fail("invalid --group-rows '%s': use a number of rows from 1 to 1073741824", arg);
		cfg->group_rows = u;
		return 0;
	default: return config_poll_option(cfg, opt, arg);
	}
}

/* One option; returns 0, 1 (printed help/version), or -EINVAL. */
static int config_option(struct config *cfg, int opt, const char *arg, bool *priority_given)
{
	int choice = 0, err = 0;
	uint64_t u;
	switch (opt) {
	case 'i': return config_interval(arg, &cfg->interval_ns);
	case 'f': return config_frequency(arg, &cfg->interval_ns);
	case 'a':
		if (config_parse_cpuset(arg, cfg->cpus, &cfg->ncpus))
			return config_fail("invalid CPU set '%s': use CPU numbers and ascending ranges like 0-3,5", arg);
		return 0;
	case 'p': *priority_given = true; return config_priority(arg, &cfg->priority);
	case OPT_POLICY:
		err = config_choice(arg, config_policies, 3, &choice, "policy");
		cfg->policy = (enum config_policy)choice;
		return err;
	case 'D': return config_duration(arg, &cfg->duration_ns);
	case 'l':
		if (config_uint(arg, &u) || u < 1)
			return config_fail("invalid loop count '%s': use a whole number >= 1", arg);
		cfg->loops = u;
		return 0;
	case OPT_LATENCY:
		if (config_uint(arg, &u) || u > 2000000000)
			return config_fail("invalid --latency '%s': use a whole number of microseconds >= 0", arg);
		cfg->latency_us = (int)u;
		return 0;
	case OPT_NO_LATENCY: cfg->latency_us = -1; return 0;
	case OPT_TIMER:
		err = config_choice(arg, config_timers, 3, &choice, "timer");
		cfg->timer = (enum config_timer)choice;
		return err;
	case OPT_COUNTERS:
		err = config_choice(arg, config_counter_sources, 4, &choice, "counter source");
		cfg->counters = (enum config_counters)choice;
		return err;
	case OPT_MSR_DIR: cfg->msr_dir = arg; return 0;
	case 'o': cfg->output = arg; return 0;
	case OPT_FORCE: cfg->force = true; return 0;
	case 'q': cfg->quiet = true; return 0;
	case 'h': fputs(config_usage_text, stdout); return 1;
	case OPT_VERSION: printf(PROG " %s\n", CONFIG_VERSION); return 1;
	case OPT_RING:
		if (config_uint(arg, &u) || u < 2 || u > (1u << 24))
			return config_fail("invalid --ring '%s': use a number of samples from 2 to 16777216", arg);
		cfg->ring_samples = u;
		return 0;
	default: return config_writer_option(cfg, opt, arg);
	}
}

/* cyclictest's letters that mean something else here or nothing at all: say what jitterscope does instead */
static const struct {
	char letter;
	const char *instead;
} config_cyclictest_letters[] = {
	{ 'm', "memory is always locked (mlockall); drop -m" },
	{ 't', "one thread per CPU of -a CPUSET (default: all online); use -a" },
	{ 'S', "one pinned thread per CPU is the default (what -S asks for); drop -S" },
	{ 'n', "clock_nanosleep(TIMER_ABSTIME) is the default timer (--timer abs); drop -n" },
	{ 'd', "every thread uses the same interval -i (no per-thread distance); drop -d" },
	{ 'v', "every wake-up is recorded in the dataset; use -o DIR, then jitterscope export --format csv" },
	{ 'N', "the dataset is in ns; jitterscope summary prints µs" },
	{ 'b', "no break trace: spikes are found afterwards (jitterscope summary, report)" },
};

static int config_unknown(int argc, char **argv)
{
	const char *bad = (optind - 1 < argc && optind >= 1) ? argv[optind - 1] : "?";
	for (size_t i = 0; optopt && i < sizeof(config_cyclictest_letters) / sizeof(config_cyclictest_letters[0]); i++) {
		if (config_cyclictest_letters[i].letter == optopt) {
			fprintf(stderr, PROG ": cyclictest's -%c is not an option here: %s\n", optopt,
				config_cyclictest_letters[i].instead);
			return -EINVAL;
		}
	}
	if (optopt && strchr("ifapDlo", optopt))
		fprintf(stderr, PROG ": option -%c needs a value; see --help\n", optopt);
	else
		fprintf(stderr, PROG ": unknown option or missing value '%s'; see --help\n", bad);
	return -EINVAL;
}

long config_rt_runtime_us(const struct config *cfg)
{
	char line[64];
	FILE *f = fopen(cfg->rt_runtime_file, "re");
	if (!f)
		return -2;
	char *ok = fgets(line, sizeof(line), f);
	fclose(f);
	char *end;
	long v = ok ? strtol(line, &end, 10) : -2;
	return ok && end != line && v >= -1 ? v : -2;
}

/* Options that mean nothing without a timer, or nothing without --mode poll: one line each. */
static int config_check_mode_options(const struct config *cfg, const bool seen[])
{
	static const struct { int opt; const char *what; } timer_only[] = {
		{ 'i', "-i/--interval" }, { 'f', "-f/--frequency" }, { OPT_TIMER, "--timer" }, { 'l', "-l/--loops" },
		{ OPT_BREAK, "--break" },
	};
	static const struct { int opt; const char *what; } poll_only[] = {
		{ OPT_POLL_THRESHOLD, "--poll-threshold" }, { OPT_POLL_CLOCK, "--poll-clock" },
		{ OPT_ALLOW_STARVATION, "--allow-starvation" },
	};
	for (size_t i = 0; cfg->mode == MODE_POLL && i < sizeof(timer_only) / sizeof(timer_only[0]); i++)
		if (seen[timer_only[i].opt]) {
			fprintf(stderr, PROG ": %s sets the timer, and --mode poll has none (it never sleeps); drop %s or "
				"use --mode timer; a poll run ends with -D or a signal\n", timer_only[i].what, timer_only[i].what);
			return -EINVAL;
		}
	for (size_t i = 0; cfg->mode != MODE_POLL && i < sizeof(poll_only) / sizeof(poll_only[0]); i++)
		if (seen[poll_only[i].opt]) {
			fprintf(stderr, PROG ": %s needs --mode poll\n", poll_only[i].what);
			return -EINVAL;
		}
	return 0;
}

/* A busy FIFO/RR loop on every online CPU with RT throttling off never lets anything else run (the writer, the
 * shell, the kernel's own threads): refused unless --allow-starvation.  And the writer never shares a polled CPU
 * while another one exists (it would run only in RT throttling's gaps). */
static int config_check_poll_safety(const struct config *cfg)
{
	static int online[CONFIG_MAX_CPUS];
	int nonline = 0;
	if (cfg->mode != MODE_POLL || config_online_cpus(online, &nonline))
		return 0;
	bool all = true;
	for (int j = 0; j < nonline; j++) {
		bool polled = false;
		for (int i = 0; i < cfg->ncpus && !polled; i++)
			polled = cfg->cpus[i] == online[j];
		all = all && polled;
	}
	if (cfg->writer_cpu >= 0 && !all)
		for (int i = 0; i < cfg->ncpus; i++)
			if (cfg->cpus[i] == cfg->writer_cpu) {
				fprintf(stderr, PROG ": --writer-cpu %d is polled by a busy loop, and the writer would starve "
					"under it; choose a CPU not in -a, or leave --writer-cpu out\n", cfg->writer_cpu);
				return -EINVAL;
			}
	long runtime = config_rt_runtime_us(cfg);
	if (all && cfg->policy != POLICY_OTHER && runtime == -1 && !cfg->allow_starvation) {
		fprintf(stderr, PROG ": --mode poll on every online CPU at %s with RT throttling off (%s is -1) would "
			"starve the machine; leave a CPU out of -a, use --policy other, or say --allow-starvation\n",
			cfg->policy == POLICY_FIFO ? "fifo" : "rr", cfg->rt_runtime_file);
		return -EINVAL;
	}
	return 0;
}

/* --mode poll --trace-keep spikes: a kept window is an interruption's gap, so the threshold is a gap length,
 * and a gap shorter than --poll-threshold is no row (the loop never posts it).  The default is
 * CONFIG_POLL_TRACE_THRESHOLD_NS (see config.h for why) or the poll threshold when that is higher. */
static int config_check_poll_keep(struct config *cfg, const bool seen[])
{
	if (cfg->mode != MODE_POLL || !cfg->trace || cfg->trace_keep != KEEP_SPIKES)
		return 0;
	if (!seen[OPT_TRACE_THRESHOLD]) {
		cfg->trace_threshold_ns = cfg->poll_threshold_ns > CONFIG_POLL_TRACE_THRESHOLD_NS
						  ? cfg->poll_threshold_ns
						  : CONFIG_POLL_TRACE_THRESHOLD_NS;
		return 0;
	}
	if (cfg->trace_threshold_ns < cfg->poll_threshold_ns) {
		fprintf(stderr, PROG ": --trace-threshold %lld us is below --poll-threshold %lld ns: a shorter gap is no "
			"interruption to keep a window for; use at least the poll threshold\n",
			(long long)(cfg->trace_threshold_ns / 1000), (long long)cfg->poll_threshold_ns);
		return -EINVAL;
	}
	return 0;
}

static int config_validate(struct config *cfg, bool priority_given, const bool seen[])
{
	if (cfg->policy == POLICY_OTHER) {
		if (priority_given && cfg->priority != 0)
			return config_fail("%s", "--policy other has no priority; drop -p or use --policy fifo|rr");
		cfg->priority = 0;
	} else if (cfg->priority < 1) {
		return config_fail("%s", "priority 0 needs --policy other; use -p 1..99 with fifo or rr");
	}
	if (cfg->trace && !cfg->output)
		return config_fail("%s", "--trace needs -o DIR: the events are stored inside the dataset");
	if (cfg->trace_keep_given && !cfg->trace)
		return config_fail("%s", "--trace-keep, --trace-threshold, --trace-window and --trace-background "
				   "need --trace");
	if (cfg->msr_dir && cfg->counters != COUNTERS_AUTO && cfg->counters != COUNTERS_MSR)
		return config_fail("%s", "--msr-dir needs --counters msr or auto");
	/* poll: the counters' read after every interruption is a syscall whose own cost shows as more
	 * interruptions (measured here: twice the rate with perf's smi); read only when asked for */
	if (cfg->mode == MODE_POLL && !seen[OPT_COUNTERS])
		cfg->counters = COUNTERS_NONE;
	int err = config_check_poll_keep(cfg, seen);
	if (!err)
		err = config_check_mode_options(cfg, seen);
	if (!err)
		err = config_check_online(cfg);
	return err ? err : config_check_poll_safety(cfg);
}

/* "-a/--affinity" or "--policy": how the user may have spelled option opt. */
static const char *config_option_name(int opt)
{
	static char name[64];
	for (const struct option *o = config_options; o->name; o++) {
		if (o->val != opt)
			continue;
		if (opt < 256)
			snprintf(name, sizeof(name), "-%c/--%s", opt, o->name);
		else
			snprintf(name, sizeof(name), "--%s", o->name);
		return name;
	}
	return "?";
}

/* Options that set the same thing two ways (cyclictest lets the last one win, silently). */
static const struct {
	int first, second;
	const char *why;
} config_contradictions[] = {
	{ 'i', 'f', "-i sets the interval in microseconds and -f the same interval as a frequency; give one of them" },
	{ OPT_LATENCY, OPT_NO_LATENCY, "--latency holds /dev/cpu_dma_latency and --no-latency leaves it alone; give "
				       "one of them" },
};

/* Every option at most once, and no two that contradict each other: one line, before any value is used. */
static int config_check_repeats(int opt, bool seen[])
{
	if (seen[opt]) {
		fprintf(stderr, PROG ": option %s is given twice; give it once%s\n", config_option_name(opt),
			opt == 'a' ? " (one CPU set names several CPUs, e.g. -a 0-3,5)" : "");
		return -EINVAL;
	}
	seen[opt] = true;
	for (size_t i = 0; i < sizeof(config_contradictions) / sizeof(config_contradictions[0]); i++) {
		int other = opt == config_contradictions[i].first ? config_contradictions[i].second
			  : opt == config_contradictions[i].second ? config_contradictions[i].first : -1;
		if (other >= 0 && seen[other])
			return config_fail("%s", config_contradictions[i].why);
	}
	return 0;
}

int config_parse(struct config *cfg, int argc, char **argv)
{
	bool priority_given = false;
	bool seen[OPT_LAST] = { false };
	config_defaults(cfg);
	opterr = 0;
	optind = 1;
	int opt;
	while ((opt = getopt_long(argc, argv, ":i:f:a:p:D:l:o:qh", config_options, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return config_unknown(argc, argv);
		if (opt > 0 && opt < OPT_LAST && config_check_repeats(opt, seen))
			return -EINVAL;
		int r = config_option(cfg, opt, optarg, &priority_given);
		if (r)
			return r;
	}
	if (optind < argc)
		return config_fail("unexpected argument '%s'; see --help", argv[optind]);
	return config_validate(cfg, priority_given, seen);
}
