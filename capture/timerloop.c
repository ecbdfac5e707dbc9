/* The measuring loop (timerloop_run) and the three ways of sleeping until an
 * absolute CLOCK_MONOTONIC target.  In the loop: no I/O besides the timer and
 * counter syscalls, no allocation, no locks, no printing; errors end the loop
 * and are reported by main after the join. */
#include "timerloop.h"
#include "pollloop.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

int timerloop_signal(void)
{
	return SIGRTMIN + 1;
}

int64_t timerloop_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec timerloop_timespec(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	return ts;
}

static int timerloop_setup_timer(struct timerloop *t)
{
	t->timer_fd = -1;
	if (t->timer == TIMER_TIMERFD) {
		t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		return t->timer_fd < 0 ? -errno : 0;
	}
	if (t->timer == TIMER_POSIX) {
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = timerloop_signal();
		sev.sigev_notify_thread_id = t->tid;
		if (timer_create(CLOCK_MONOTONIC, &sev, &t->posix_timer))
			return -errno;
		t->posix_timer_made = true;
	}
	return 0;
}

static void timerloop_teardown_timer(struct timerloop *t)
{
	if (t->timer_fd >= 0)
		close(t->timer_fd);
	if (t->posix_timer_made)
		timer_delete(t->posix_timer);
}

/* Sleeps until target_ns; 0 or -errno. */
static int timerloop_wait(struct timerloop *t, int64_t target_ns)
{
	struct timespec ts = timerloop_timespec(target_ns);
	if (t->timer == TIMER_ABS) {
		int err;
		while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
			;
		return -err;
	}
	struct itimerspec spec = {.it_value = ts};
	if (t->timer == TIMER_TIMERFD) {
		uint64_t expirations;
		if (timerfd_settime(t->timer_fd, TFD_TIMER_ABSTIME, &spec, NULL))
			return -errno;
		while (read(t->timer_fd, &expirations, sizeof(expirations)) < 0)
			if (errno != EINTR)
				return -errno;
		return 0;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, timerloop_signal());
	if (timer_settime(t->posix_timer, TIMER_ABSTIME, &spec, NULL))
		return -errno;
	while (sigwaitinfo(&set, NULL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static bool timerloop_more(const struct timerloop *t, uint64_t seq, int64_t target_ns)
{
	return !atomic_load_explicit(t->stop, memory_order_relaxed) && (t->loops == 0 || seq < t->loops) &&
	       target_ns <= t->end_ns;
}

/* The first wake-up over --break: recorded, every thread stopped, main woken (a signal, no I/O). */
static void timerloop_break_now(struct timerloop *t, const struct sample *s, int64_t late)
{
	struct timerloop_break *b = t->brk;
	if (atomic_exchange(&b->claimed, true))
		return;
	b->thread = t->thread;
	b->cpu = t->cpu;
	b->seq = s->seq;
	b->latency_ns = late;
	b->actual_ns = s->actual_ns;
	atomic_store(b->halt, true);
	pthread_kill(t->notify, SIGUSR1);
}

/* The measuring loop.  Timestamps first (CLOCK_MONOTONIC, then rdtscp), then
 * counters on this CPU; a thread that wakes after the next target skips the
 * whole periods it missed and records them in the next sample's overruns. */
static void timerloop_measure(struct timerloop *t, int64_t target_ns)
{
	int32_t overruns = 0;
	uint64_t seq = 0;
	for (; timerloop_more(t, seq, target_ns); seq++) {
		struct sample s;
		if ((t->error = timerloop_wait(t, target_ns)))
			break;
		s.actual_ns = timerloop_now_ns();
		s.tsc = counters_tsc(&s.run_cpu);
		t->counter_errors += (uint64_t)counters_read(&t->counters, s.counters);
		int32_t cpu_after;
		s.read_cycles = (int32_t)(counters_tsc(&cpu_after) - s.tsc);
		s.seq = (int64_t)seq;
		s.expected_ns = target_ns;
		s.overruns = overruns;
		/* full: dropped and counted; seq still advances, and the next sample
		 * carries this one's overruns so expected_ns stays explainable */
		int32_t carried = ring_push(&t->ring, &s) ? s.overruns : 0;
		atomic_store_explicit(&t->wakeups, seq + 1, memory_order_relaxed);
		int64_t late = s.actual_ns - target_ns;
		if (t->late.threshold_ns && late > t->late.threshold_ns)
			trace_late_post(&t->late, target_ns, s.actual_ns);
		if (t->brk->threshold_ns && late > t->brk->threshold_ns)
			timerloop_break_now(t, &s, late);
		int32_t skipped = late >= t->interval_ns ? (int32_t)(late / t->interval_ns) : 0;
		target_ns += t->interval_ns * (1 + (int64_t)skipped);
		overruns = skipped + carried;
		if (t->late.threshold_ns)
			trace_late_next(&t->late, target_ns);
	}
}

void timerloop_gate_init(struct timerloop_gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->ready = 0;
	g->state = 0;
	g->start_ns = 0;
}

void timerloop_gate_wait_ready(struct timerloop_gate *g, int n)
{
	pthread_mutex_lock(&g->lock);
	while (g->ready < n)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void timerloop_gate_open(struct timerloop_gate *g, bool go, int64_t start_ns)
{
	pthread_mutex_lock(&g->lock);
	g->start_ns = start_ns;
	g->state = go ? 1 : -1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Reports ready and waits for the gate; returns the start time, or 0 to abort. */
static int64_t timerloop_gate_pass(struct timerloop_gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (g->state == 0)
		pthread_cond_wait(&g->cond, &g->lock);
	int64_t start = g->state > 0 ? g->start_ns : 0;
	pthread_mutex_unlock(&g->lock);
	return start;
}

/* SCHED_OTHER sleeps get the thread's timer slack (50 us by default) added to
 * every expiry; 1 ns is the least (0 would mean "the default").  Real-time
 * policies get no slack whatever the value, but the value is recorded anyway. */
static void timerloop_min_slack(struct timerloop *t)
{
	t->timer_slack_errno = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) ? errno : 0;
	int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
	t->timer_slack_ns = slack < 0 ? -1 : slack;
}

void *timerloop_run(void *arg)
{
	struct timerloop *t = arg;
	t->tid = gettid();
	timerloop_min_slack(t);
	if (t->poll) {
		t->timer_fd = -1;
		pollloop_calibrate(t); /* before the gate: the iteration time is in the metadata from the start */
	} else {
		t->error = timerloop_setup_timer(t);
	}
	int64_t start_ns = timerloop_gate_pass(t->gate); /* main checks t->error before opening */
	if (!t->error && start_ns > 0 && t->poll)
		pollloop_measure(t, start_ns);
	else if (!t->error && start_ns > 0)
		timerloop_measure(t, start_ns + t->interval_ns);
	timerloop_teardown_timer(t);
	trace_late_next(&t->late, INT64_MAX); /* no more notices from this thread */
	atomic_store(&t->done, true);
	pthread_kill(t->notify, SIGUSR1); /* main waits in sigwaitinfo, no polling */
	return NULL;
}
