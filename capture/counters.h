/* Time-stamp counter and frequency counters, read by a measuring thread on
 * its own CPU: rdtscp (TSC + TSC_AUX), MSRs through that CPU's msr device (or
 * files laid out like it), or the perf "msr" PMU.  The probe decides at setup
 * which columns exist and records why any is missing; reads in the loop never
 * print or fail the capture. */
#ifndef JITTERSCOPE_COUNTERS_H
#define JITTERSCOPE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "sample.h"

#if defined(__x86_64__) || defined(__i386__)
#define COUNTERS_HAVE_TSC 1
#else
#define COUNTERS_HAVE_TSC 0
#include <sched.h>
#endif

enum counters_source { SOURCE_NONE, SOURCE_MSR, SOURCE_FILE, SOURCE_PERF };

struct counters_probe {
	enum counters_source source;
	bool have[CTR_COUNT];
	uint32_t msr_address[CTR_COUNT];  /* msr/file source */
	uint64_t perf_config[CTR_COUNT];  /* perf source */
	uint32_t perf_type;
	char missing[CTR_COUNT][200];     /* why a column is absent ("" when present) */
	char vendor[13];                  /* CPUID vendor string */
};

/* One measuring thread's handles, opened at setup. */
struct counters_cpu {
	enum counters_source source;
	int msr_fd;
	int perf_fd[CTR_COUNT];
	uint32_t msr_address[CTR_COUNT];
	bool have[CTR_COUNT];
};

extern const char *const counters_names[CTR_COUNT];

/* Decides the source and columns for cfg->counters on cfg's CPUs.  An explicit
 * source that cannot work returns -errno after printing one line. */
int counters_probe(struct counters_probe *p, const struct config *cfg);
/* Opens the handles of one CPU (msr fd or cpu-bound perf events).  -errno after printing one line. */
int counters_open(struct counters_cpu *c, const struct counters_probe *p, const struct config *cfg, int cpu);
void counters_close(struct counters_cpu *c);
const char *counters_source_name(enum counters_source s);

/* The start of a TSC calibration that lasts as long as the capture: a (CLOCK_MONOTONIC_RAW ns, TSC) pair. */
struct tsc_anchor {
	int64_t raw_ns;
	uint64_t tsc;
};

/* The shortest span of a capture's metadata calibration: only the part written before the first wake-up asks
 * sooner (setup takes a few ms of it), and 20 ms give 1e-5 at worst (a pair is read to within about 100 ns);
 * every later write measures over the run so far, and the last over all of it. */
#define TSC_MIN_SPAN_NS 20000000
/* The calibration of counters_tsc_hz, made before a run that needs the rate (--mode poll). */
#define TSC_CALIBRATION_NS 100000000

void counters_tsc_anchor(struct tsc_anchor *a);

/* TSC frequency: CPUID 0x15 when it gives the crystal, else the TSC's rate from the anchor to now against
 * CLOCK_MONOTONIC_RAW (over at least min_span_ns: waits for the rest where less has passed).  source (n
 * chars) says which, and over how long.  The TSC is taken as synchronised across CPUs (constant_tsc). */
double counters_tsc_hz_since(const struct tsc_anchor *a, int64_t min_span_ns, char *source, size_t n);

/* The same from an anchor taken now, over TSC_CALIBRATION_NS; source is static. */
double counters_tsc_hz(const char **source);

/* TSC and the CPU it was read on (TSC_AUX; getcpu() where there is no TSC). */
static inline uint64_t counters_tsc(int32_t *cpu)
{
#if COUNTERS_HAVE_TSC
	uint32_t lo, hi, aux;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	*cpu = (int32_t)(aux & 0xfff); /* Linux stores (node << 12) | cpu */
	return ((uint64_t)hi << 32) | lo;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	*cpu = sched_getcpu();
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Reads the present counters into values; returns how many reads failed (value 0). */
int counters_read(const struct counters_cpu *c, uint64_t values[CTR_COUNT]);

#endif
