/* Every setting of jitterscope-capture in one struct, with its default.
 * config_parse() fills it strictly from argv (no atoi: "-i 10x" is refused)
 * and validates it once; nothing else in the program reads argv. */
#ifndef JITTERSCOPE_CONFIG_H
#define JITTERSCOPE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define CONFIG_MAX_CPUS 1024
#define CONFIG_VERSION "0.1.0"

enum config_policy { POLICY_FIFO, POLICY_RR, POLICY_OTHER };
enum config_timer { TIMER_ABS, TIMER_TIMERFD, TIMER_POSIX };
enum config_counters { COUNTERS_AUTO, COUNTERS_MSR, COUNTERS_PERF, COUNTERS_NONE };
enum config_sync { SYNC_DATA, SYNC_NONE };
enum config_mode { MODE_TIMER, MODE_POLL };
enum config_poll_clock { POLL_CLOCK_AUTO, POLL_CLOCK_TSC, POLL_CLOCK_VDSO };

#define CONFIG_POLL_THRESHOLD_NS 1000 /* --poll-threshold default: 1 µs */
#define CONFIG_POLL_MIN_THRESHOLD_NS 100
/* --mode poll --trace-threshold default: 100 µs, as the timer mode's, and above the scheduler tick's gap: 2 µs
 * on a quiet host, but 11-54 µs (median 28) here with the VM exits of a loaded host (1-5 µs on bare metal).
 * The tick interrupts a busy CPU HZ times a second, and the rows and the spectrum name it without a trace; a
 * window costs two rows per measured CPU even when nothing is in it, so a threshold that catches the tick or
 * the hypervisor's short exits keeps more than --trace-keep all: measured here (benchmarks/trace_keep.py storage
 * --mode poll, 30 s per arm) 164 % of all at 10 µs, 35 % at 30 µs, 26 % at 100 µs.  Every longer interruption
 * (a thread, RT throttling, a long IRQ or softirq, an SMI or a hypervisor stall) gets its window; lower it
 * (down to --poll-threshold) to keep shorter ones. */
#define CONFIG_POLL_TRACE_THRESHOLD_NS 100000
enum config_trace_keep { KEEP_SPIKES, KEEP_ALL };

struct config {
	enum config_mode mode;      /* --mode timer|poll; default timer */
	int64_t poll_threshold_ns;  /* --poll-threshold NS: a gap this long is an interruption (a row) */
	enum config_poll_clock poll_clock; /* --poll-clock auto|tsc|vdso */
	bool allow_starvation;      /* --allow-starvation: poll every CPU at FIFO/RR with RT throttling off */
	/* hidden, for tests: --rt-runtime-file PATH (default /proc/sys/kernel/sched_rt_runtime_us) */
	const char *rt_runtime_file;
	int64_t interval_ns;        /* -i µs / -f Hz; default 1000 µs */
	int cpus[CONFIG_MAX_CPUS];  /* -a; default every online CPU */
	int ncpus;
	enum config_policy policy;  /* --policy; default fifo */
	int priority;               /* -p; default 99 (cyclictest: 0) */
	int64_t duration_ns;        /* -D; 0 = until SIGINT/SIGTERM */
	uint64_t loops;             /* -l; 0 = no limit */
	int latency_us;             /* --latency; -1 = --no-latency */
	enum config_timer timer;    /* --timer; default abs */
	enum config_counters counters; /* --counters; default auto */
	const char *msr_dir;        /* --msr-dir; NULL = /dev/cpu */
	const char *output;         /* -o; NULL = statistics only */
	int64_t flush_interval_ns;  /* --flush-interval s; default 1 s */
	enum config_sync sync;      /* --sync data|none; default data: fdatasync every flush */
	int writer_cpu;             /* --writer-cpu N; -1 = the first unmeasured CPU, else unpinned */
	bool force;                 /* --force: replace an existing output */
	bool quiet;                 /* -q: no live status */
	bool trace;                 /* --trace[=EVENTS]: kernel events into the dataset (trace.h) */
	const char *trace_events;   /* NULL = the default list */
	uint64_t trace_buffer_kb;   /* --trace-buffer KB per CPU; default 1024 */
	enum config_trace_keep trace_keep; /* --trace-keep spikes (default) | all */
	int64_t trace_threshold_ns; /* --trace-threshold US: a wake-up later than this gets a window; default 100 us */
	int64_t trace_pre_ns, trace_post_ns; /* --trace-window PRE,POST us around [programmed, actual]; 100,50 */
	int64_t trace_bg_every_ns, trace_bg_len_ns; /* --trace-background S,MS: a window of MS every S; 60,100 */
	uint64_t trace_ring_rows;   /* hidden, for tests: --trace-ring N rows per CPU, fixed (0: sized by rate) */
	bool trace_keep_given;      /* a --trace-keep/-threshold/-window/-background option (needs --trace) */
	int64_t break_ns;           /* --break US: stop after the first wake-up later than this; 0 = never */
	int64_t trace_flush_ns;     /* --trace-flush S: commit the events table this often; default 5 s (each
	                             * flush rewrites the open row group: at 1 s it doubled the reader's CPU) */
	/* hidden, for tests: --trace-read-interval S between reads of trace_pipe_raw; default 0.25 s */
	int64_t trace_read_ns;
	/* hidden, for tests: --ring N samples per thread (0 = two seconds' worth) */
	uint64_t ring_samples;
	/* hidden, for tests: the container's limits (docs/dataset-format.md) */
	int64_t group_ns;           /* --group-seconds: close a row group after this long; default 20 s */
	uint64_t group_rows;        /* --group-rows: ... or this many rows; default 1048576 */
	int64_t part_ns;            /* --part-seconds: start a new part after this long; default 3600 s */
	int deepest_idle_state;     /* --deepest-idle-state N: states deeper than N disabled while measuring; -1 = off */
	/* hidden, for tests: --cpu-sysfs DIR (default /sys/devices/system/cpu) and --state-dir DIR (where the
	 * idle-state journal lives; default /run/jitterscope-capture) */
	const char *cpu_sysfs;
	const char *state_dir;
};

/* Exit statuses. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Parses argv into cfg.  Returns 0 to run, 1 when --help/--version was
 * printed (exit 0), or -EINVAL after printing one line on stderr. */
int config_parse(struct config *cfg, int argc, char **argv);

/* Parses a CPU list like "0-3,5" into cpus (sorted, unique).  -EINVAL if malformed. */
int config_parse_cpuset(const char *text, int *cpus, int *ncpus);

/* Prints a CPU list back in range form ("0-3,5") into buf. */
void config_format_cpuset(const int *cpus, int ncpus, char *buf, unsigned long len);

const char *config_policy_name(enum config_policy policy);
const char *config_timer_name(enum config_timer timer);
const char *config_counters_name(enum config_counters counters);
const char *config_sync_name(enum config_sync sync);
const char *config_mode_name(enum config_mode mode);
const char *config_poll_clock_name(enum config_poll_clock clock);
/* /proc/sys/kernel/sched_rt_runtime_us (or --rt-runtime-file): -1 = throttling off; -2 unreadable. */
long config_rt_runtime_us(const struct config *cfg);

#endif
