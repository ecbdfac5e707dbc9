/* One measuring thread per CPU: sleep until an absolute target, take the
 * timestamps and counters, push the sample into the ring.  The loop does no
 * I/O (beyond the timer and counter syscalls), no allocation, no locks and
 * no printing. */
#ifndef JITTERSCOPE_TIMERLOOP_H
#define JITTERSCOPE_TIMERLOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "counters.h"
#include "pollwin.h"
#include "ring.h"
#include "trace_late.h"

/* Start gate: threads report ready, then wait until main opens it (setup only). */
struct timerloop_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;      /* threads that finished their own setup */
	int state;      /* 0 closed, 1 go, -1 abort */
	int64_t start_ns; /* first target = start_ns + interval */
};

/* --break: the first wake-up later than the threshold, recorded by the thread
 * that saw it (no I/O there); main writes the trace marker after the join. */
struct timerloop_break {
	int64_t threshold_ns;    /* 0: no --break */
	atomic_bool claimed;     /* the first thread over the threshold takes it */
	atomic_bool *halt;       /* the capture's stop flag: every thread ends within one interval */
	int thread, cpu;
	int64_t seq, latency_ns, actual_ns;
};

struct timerloop {
	/* set by main before start */
	int thread, cpu;
	int64_t interval_ns;
	int64_t end_ns;          /* last allowed target; INT64_MAX = no duration */
	uint64_t loops;          /* 0 = no limit */
	enum config_timer timer;
	struct ring ring;
	struct counters_cpu counters;
	const atomic_bool *stop;
	struct timerloop_break *brk;
	struct timerloop_gate *gate;
	struct trace_late late;  /* --trace-keep spikes: late wake-ups for the trace reader (threshold 0: off) */
	pthread_t notify;        /* main thread: gets SIGUSR1 when this thread ends */
	/* set by the thread */
	pid_t tid;
	int error;               /* -errno of a timer setup/wait failure, 0 if none */
	_Atomic uint64_t wakeups; /* wake-ups so far, dropped ones included */
	uint64_t counter_errors;  /* counter reads that failed (value stored as 0) */
	long timer_slack_ns;      /* in force while measuring (prctl PR_GET_TIMERSLACK), -1 unknown */
	int timer_slack_errno;    /* why it could not be set to the minimum, 0 if it was */
	atomic_bool done;
	/* poll mode (pollloop.c); set by main */
	bool poll;
	bool poll_tsc;            /* rdtsc converted with ns_per_cycle; false: the vDSO CLOCK_MONOTONIC */
	double ns_per_cycle;      /* the recorded TSC calibration (1 for the vDSO clock) */
	int64_t poll_threshold_ns;
	bool poll_counters;       /* a counter column exists: read after each interruption */
	struct pollwin_ring windows;
	/* poll mode, set by the thread before the gate */
	double iteration_min_ns, iteration_median_ns, clock_read_ns;
	uint64_t blind_ns;        /* spent reading counters after interruptions (not polled, not a gap) */
	/* timer handles */
	int timer_fd;
	timer_t posix_timer;
	bool posix_timer_made;
};

/* The signal the posix timer mode delivers; blocked in every thread. */
int timerloop_signal(void);
void *timerloop_run(void *arg);
void timerloop_gate_init(struct timerloop_gate *g);
/* Main: waits until n threads are ready, then opens with go (start at start_ns) or abort. */
void timerloop_gate_wait_ready(struct timerloop_gate *g, int n);
void timerloop_gate_open(struct timerloop_gate *g, bool go, int64_t start_ns);
int64_t timerloop_now_ns(void);

#endif
