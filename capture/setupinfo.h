/* The metadata fixed at setup, as JSON: settings (asked and granted),
 * counter sources, and the clock pair with the TSC frequency.  Setup only. */
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
/* Calibrates the TSC (about 100 ms) unless CPUID gives its frequency. */
char *setupinfo_clock_json(void);

#endif
