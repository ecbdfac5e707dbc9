/* Poll mode (--mode poll): the busy loop that replaces the timer loop on a
 * measured CPU.  It reads a cheap clock back to back; every gap between two
 * reads of at least the threshold is an interruption, pushed as a row through
 * the sample ring (expected_ns = start, actual_ns = start + gap); every gap of
 * any size goes into the window's log histogram, and each second's window
 * goes to the writer through its own ring.  No syscalls, I/O, allocation or
 * locks in the loop (the counters' reads after an interruption excepted, as
 * in timer mode, and their time is kept out of the gaps). */
#ifndef JITTERSCOPE_POLLLOOP_H
#define JITTERSCOPE_POLLLOOP_H

#include "timerloop.h"

/* Measures the loop's own iteration time and the clock's read cost (on the
 * thread's CPU, at its priority, before the gate). */
void pollloop_calibrate(struct timerloop *t);
/* Polls from start_ns until t->end_ns or the stop flag; the last window is partial. */
void pollloop_measure(struct timerloop *t, int64_t start_ns);
/* True when rdtsc can stand in for CLOCK_MONOTONIC: x86 and the kernel's clocksource is the TSC. */
bool pollloop_tsc_usable(void);

#endif
