/* Hypervisor steal time of the measured CPUs during the capture, sampled from
 * /proc/stat by the writer thread (never by a measuring thread) every
 * STEAL_PERIOD_NS, so that a stall can be matched to the hypervisor taking the
 * CPU at that time (docs/dataset-format.md, "steal").  Kept sparse: only the
 * sample intervals in which a measured CPU's steal counter rose are listed
 * (consecutive ones merged), so a capture on bare metal or a quiet guest
 * carries a few bytes, and the list is capped (the rest counted) so the
 * metadata each flush rewrites stays small. */
#ifndef JITTERSCOPE_STEAL_H
#define JITTERSCOPE_STEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonw.h"

#define STEAL_PERIOD_NS 10000000 /* 10 ms: one USER_HZ tick at HZ 100, the counter's own resolution */
#define STEAL_MAX_RISES 4096     /* ~150 KB of JSON at most; later rises are counted in left_out */
#define STEAL_MAX_CPUS 4096

struct steal_rise {
	int32_t cpu;
	int64_t from_ns, to_ns; /* CLOCK_MONOTONIC of the samples before and after the rise */
	uint64_t ticks;         /* USER_HZ ticks the counter rose by */
};

struct steal {
	bool available;         /* /proc/stat read at the start */
	int error;              /* errno of the failure when not available */
	int fd;
	char *buf;
	size_t cap;
	int ncpus;
	int *cpus;              /* measured CPUs */
	uint64_t *last;         /* their steal ticks at the last sample */
	uint64_t *now;          /* the sample being read (allocated once: the writer samples 100 times a second) */
	uint64_t *total;        /* ticks since the first sample */
	int64_t tick_ns;        /* 1e9 / sysconf(_SC_CLK_TCK) */
	int64_t period_ns;      /* sampling period: STEAL_PERIOD_NS, longer when a read is slow */
	int64_t first_ns, last_ns, max_gap_ns;
	uint64_t samples, failed;
	struct steal_rise *rises;
	size_t nrises;
	uint64_t left_out;      /* rises not listed (the list was full) */
};

/* Opens /proc/stat and takes the first sample of the n measured cpus; on
 * failure available stays false (the metadata says why), never fatal. */
void steal_begin(struct steal *s, const int *cpus, int n, int64_t now_ns);
/* One sample at now_ns (the writer's clock): records the rises since the last. */
void steal_sample(struct steal *s, int64_t now_ns);
/* Takes one sample's steal ticks of the measured CPUs (in cpus order), read at now_ns (steal_sample's second
 * half, apart for the unit tests). */
void steal_take(struct steal *s, const uint64_t *now, int64_t now_ns);
void steal_free(struct steal *s);
/* The "jitterscope.steal" value (malloc'd JSON), NULL on ENOMEM. */
char *steal_json(const struct steal *s);
/* Parses one /proc/stat image: steal ticks of cpus[i] into out[i]; false when a cpu is missing. */
bool steal_parse(const char *text, const int *cpus, int n, uint64_t *out);

#endif
