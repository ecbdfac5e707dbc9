/* The metadata of a capture's setup, as JSON: settings (asked and granted), counter sources, and the clock
 * pair with the TSC frequency (calibrated from setup to each metadata write). */
#ifndef JITTERSCOPE_SETUPINFO_H
#define JITTERSCOPE_SETUPINFO_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "counters.h"

/* What setup actually obtained (the "granted" half of the settings). */
struct setup_granted {
	bool mlocked;
	int mlock_errno;
	bool latency_held;          /* /dev/cpu_dma_latency held open */
	int latency_errno;
	int writer_cpu;             /* -1: not pinned */
	bool writer_shares;         /* the writer may run on a measured CPU */
	int writer_priority;        /* SCHED_FIFO priority of the writer; 0: SCHED_OTHER */
	size_t ring_capacity;
	int idle_states_disabled;   /* --deepest-idle-state: states disabled while measuring */
	enum counters_source counters;
	const char *const *degraded; /* plain sentences */
	int ndegraded;
};

/* Each returns a malloc'd JSON document, or NULL when out of memory. */
char *setupinfo_settings_json(const struct config *cfg, const struct setup_granted *granted);
char *setupinfo_counters_json(const struct counters_probe *p);
/* The clocks at setup, and the start of the TSC's calibration (no wait). */
struct clock_setup {
	int64_t realtime_ns, monotonic_ns;
	struct tsc_anchor anchor;
};

void setupinfo_clock_start(struct clock_setup *c);

/* The clock pair at setup with the TSC frequency measured from setup to now (each metadata write: the
 * calibration grows with the run; waits where less than TSC_MIN_SPAN_NS has passed), unless CPUID gives it. */
char *setupinfo_clock_json(const struct clock_setup *c);

#endif
