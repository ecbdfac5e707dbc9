/* How busy every CPU was since the capture started, from /proc/stat: the
 * share of time each CPU ran something (user, nice, system, irq, softirq)
 * and the share a hypervisor stole.  The analysis reads it to tell whether
 * the SMT siblings of the measured CPUs were busy (a sibling's load slows
 * its twin's wake-up) and how much a hypervisor took.  Writer thread only:
 * read at each flush, never in the measuring loop. */
#ifndef JITTERSCOPE_CPULOAD_H
#define JITTERSCOPE_CPULOAD_H

#include <stdint.h>

#include "jsonw.h"

#define CPULOAD_MAX_CPUS 4096

struct cpuload_ticks {
	uint64_t busy, idle, steal;  /* USER_HZ ticks since boot */
};

struct cpuload {
	int ncpus;                   /* highest CPU number seen + 1; 0: /proc/stat unreadable */
	struct cpuload_ticks *start; /* per CPU at cpuload_begin; idle = busy = 0 for absent CPUs */
	int64_t start_ns;            /* CLOCK_MONOTONIC when the starting counts were read */
};

/* Takes the starting counts; on failure ncpus stays 0 and the JSON says null. */
void cpuload_begin(struct cpuload *load);
void cpuload_free(struct cpuload *load);
/* "cpu_load": {"since": "capture start", "seconds": f, "cpus": {"N": {"ticks": n, "busy": f, "steal": f}, ...}}
 * or null; "seconds" is the CLOCK_MONOTONIC span of the counts (what their ticks should add up to). */
void cpuload_json(struct jsonw *w, const char *key, const struct cpuload *load);

#endif
