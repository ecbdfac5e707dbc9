/* One wake-up as the measuring thread records it: plain values, no pointers,
 * copied by value through the ring.  cpu and thread are per ring, not here. */
#ifndef JITTERSCOPE_SAMPLE_H
#define JITTERSCOPE_SAMPLE_H

#include <stdint.h>

enum sample_counter { CTR_APERF, CTR_MPERF, CTR_SMI, CTR_PERF_STATUS, CTR_COUNT };

struct sample {
	int64_t seq;         /* wake-up index from 0, also for dropped samples */
	int64_t expected_ns; /* programmed target, CLOCK_MONOTONIC */
	int64_t actual_ns;   /* CLOCK_MONOTONIC right after waking */
	uint64_t tsc;        /* rdtscp right after actual_ns */
	int32_t overruns;    /* whole periods skipped before this wake-up */
	int32_t run_cpu;     /* TSC_AUX (or getcpu) */
	int32_t read_cycles; /* TSC cycles spent reading the counters */
	int32_t pad;
	uint64_t counters[CTR_COUNT]; /* enum sample_counter order */
};

#endif
