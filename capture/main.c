/* jitterscope-capture: options -> setup -> run -> drain -> finish.
 * Every failure during setup prints one line and exits non-zero; after
 * setup every exit goes through capture_cleanup().  SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * (and, under the jitterscope wrapper, PARENT_SIGNAL: the wrapper died) are blocked everywhere and taken synchronously by main with sigwaitinfo(), so
 * no handler runs at all; measuring threads and the writer wake main with
 * SIGUSR1 when they end or fail. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "envinfo.h"
#include "fault.h"
#include "idlestate.h"
#include "output.h"
#include "pollloop.h"
#include "setupinfo.h"
#include "timerloop.h"
#include "trace.h"
#include "writer.h"

#define PROG "jitterscope-capture"
#define MAX_DEGRADED 8
/* Small stacks: mlockall locks every page of them, and 8 MB each costs thousands of page faults. */
#define MEASURING_STACK (128 * 1024)
#define WRITER_STACK (512 * 1024)
/* The wrapper (jitterscope capture) puts its pid here: the capture must not outlive it (a SIGKILL of the
 * wrapper would otherwise leave a SCHED_FIFO 99 process running, forever without -D). */
#define PARENT_ENV "JITTERSCOPE_CAPTURE_PARENT"
#define PARENT_SIGNAL SIGUSR2 /* the kernel's PR_SET_PDEATHSIG signal: the wrapper died */
#define WRITER_PRIORITY 1 /* SCHED_FIFO priority of the writer: above ordinary load, below the measuring threads */

struct capture {
	struct config cfg;
	struct counters_probe probe;
	struct timerloop *loops;
	struct writer_thread *wthreads;
	pthread_t *tids;
	int started;                  /* measuring threads created */
	struct timerloop_gate gate;
	struct writer writer;
	pthread_t writer_tid;
	bool writer_started;
	int writer_cpu;               /* -1: not pinned */
	bool writer_shares;           /* the writer may run on a measured CPU */
	int writer_priority;          /* SCHED_FIFO priority of the writer; 0: SCHED_OTHER */
	char writer_note[320];        /* the live status line saying where the writer runs */
	atomic_bool stop;
	int dir_fd, dma_fd;
	bool mlocked;
	int mlock_errno, dma_errno;
	const char *degraded[MAX_DEGRADED];
	int ndegraded;
	char *environment_json, *settings_json, *counters_json;
	struct clock_setup clock;     /* the clocks at setup; the TSC calibrated over the run */
	struct trace trace;           /* --trace (trace.h) */
	struct idlestate idle;        /* --deepest-idle-state (idlestate.h) */
	struct timerloop_break brk;   /* --break */
	char stop_reason[256];
	pid_t parent;                 /* the wrapper watched with PR_SET_PDEATHSIG; 0: none */
	bool dir_created;             /* this run made the output directory (removed again if setup fails) */
};

static int capture_policy(enum config_policy p)
{
	return p == POLICY_FIFO ? SCHED_FIFO : p == POLICY_RR ? SCHED_RR : SCHED_OTHER;
}

static void capture_degrade(struct capture *c, const char *sentence)
{
	if (c->ndegraded < MAX_DEGRADED)
		c->degraded[c->ndegraded++] = sentence;
}

/* Tries the real-time policy on ourselves first, so a refusal is reported
 * before anything is created; then back to SCHED_OTHER. */
static int capture_check_policy(const struct config *cfg)
{
	if (cfg->policy == POLICY_OTHER)
		return 0;
	struct sched_param param = {.sched_priority = cfg->priority};
	if (sched_setscheduler(0, capture_policy(cfg->policy), &param)) {
		int err = errno;
		fprintf(stderr,
			PROG ": SCHED_%s priority %d refused: %s (needs root or CAP_SYS_NICE, and a cgroup with real-time "
			"budget); --policy other runs a degraded measurement\n",
			cfg->policy == POLICY_FIFO ? "FIFO" : "RR", cfg->priority, strerror(err));
		return -err;
	}
	struct sched_param normal = {.sched_priority = 0};
	sched_setscheduler(0, SCHED_OTHER, &normal);
	return 0;
}

/* Keeps /dev/cpu_dma_latency at latency_us for as long as the fd is open. */
static void capture_hold_latency(struct capture *c)
{
	c->dma_fd = -1;
	if (c->cfg.latency_us < 0)
		return;
	int32_t value = c->cfg.latency_us;
	c->dma_fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
	if (c->dma_fd >= 0 && write(c->dma_fd, &value, sizeof(value)) == (ssize_t)sizeof(value))
		return;
	c->dma_errno = errno;
	if (c->dma_fd >= 0)
		close(c->dma_fd);
	c->dma_fd = -1;
	capture_degrade(c, "/dev/cpu_dma_latency could not be held: deep idle states may add wake-up latency");
	if (!c->cfg.quiet)
		fprintf(stderr, PROG ": warning: cannot hold /dev/cpu_dma_latency: %s (recorded in the metadata)\n",
			strerror(c->dma_errno));
}

static void capture_lock_memory(struct capture *c)
{
	c->mlocked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
	if (c->mlocked)
		return;
	c->mlock_errno = errno;
	capture_degrade(c, "mlockall failed: page faults may add wake-up latency");
	if (!c->cfg.quiet)
		fprintf(stderr, PROG ": warning: mlockall: %s (recorded in the metadata)\n", strerror(c->mlock_errno));
}

static bool capture_measured(const struct config *cfg, int cpu)
{
	for (int i = 0; i < cfg->ncpus; i++)
		if (cfg->cpus[i] == cpu)
			return true;
	return false;
}

/* The first online CPU that is not measured, or -1. */
static int capture_pick_writer_cpu(const struct config *cfg)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && !capture_measured(cfg, cpu))
			return cpu;
	return -1;
}

/* --writer-cpu, else the first unmeasured CPU, else unpinned; a shared CPU is
 * a degradation (principle 2), said in the metadata and the live status. */
static void capture_place_writer(struct capture *c)
{
	const struct config *cfg = &c->cfg;
	char list[128];
	c->writer_cpu = cfg->writer_cpu >= 0 ? cfg->writer_cpu : capture_pick_writer_cpu(cfg);
	c->writer_shares = c->writer_cpu < 0 || capture_measured(cfg, c->writer_cpu);
	config_format_cpuset(cfg->cpus, cfg->ncpus, list, sizeof(list));
	if (c->writer_cpu < 0) {
		capture_degrade(c, "no unmeasured CPU: the writer thread shares the measured CPUs");
		snprintf(c->writer_note, sizeof(c->writer_note),
			 "W: writer unpinned, shares the measured CPUs %s (every CPU is measured; --writer-cpu N pins it)",
			 list);
	} else if (c->writer_shares) {
		capture_degrade(c, "--writer-cpu chose a measured CPU: the writer thread shares it");
		snprintf(c->writer_note, sizeof(c->writer_note), "W: writer on CPU %d, shared with its measuring thread",
			 c->writer_cpu);
	} else {
		snprintf(c->writer_note, sizeof(c->writer_note), "W: writer on CPU %d (not measured)", c->writer_cpu);
	}
	c->writer.cpu_note = c->writer_note;
	/* A flush delayed by ordinary load loses more than one flush interval in a crash: run the writer
	 * at SCHED_FIFO 1, below every measuring thread (which then preempts it on a shared CPU), when
	 * real-time priorities are in force and the measuring threads are above 1. */
	c->writer_priority = cfg->policy != POLICY_OTHER && cfg->priority > WRITER_PRIORITY ? WRITER_PRIORITY : 0;
}

static size_t capture_ring_capacity(const struct config *cfg)
{
	/* two seconds of samples: the writer drains every 10 ms, a flush or a slow disk may stall it */
	if (cfg->ring_samples)
		return (size_t)cfg->ring_samples;
	if (cfg->mode == MODE_POLL)
		return 1 << 16; /* two seconds at 32k interruptions a second (a tick is 100-1000) */
	double per_second = 1e9 / (double)cfg->interval_ns;
	double want = per_second * 2;
	if (want < 8192)
		want = 8192;
	return want > (1 << 22) ? (size_t)1 << 22 : (size_t)want;
}

static int capture_alloc(struct capture *c)
{
	int n = c->cfg.ncpus;
	c->loops = calloc((size_t)n, sizeof(*c->loops));
	c->wthreads = calloc((size_t)n, sizeof(*c->wthreads));
	c->tids = calloc((size_t)n, sizeof(*c->tids));
	if (!c->loops || !c->wthreads || !c->tids)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct timerloop *t = &c->loops[i];
		t->thread = i;
		t->cpu = c->cfg.cpus[i];
		t->interval_ns = c->cfg.interval_ns;
		t->loops = c->cfg.loops;
		t->timer = c->cfg.timer;
		t->stop = &c->stop;
		t->brk = &c->brk;
		t->gate = &c->gate;
		t->notify = pthread_self();
		t->counters.msr_fd = -1;
		if (ring_init(&t->ring, capture_ring_capacity(&c->cfg)))
			return -ENOMEM;
		int err = counters_open(&t->counters, &c->probe, &c->cfg, t->cpu);
		if (err)
			return err;
		if (c->cfg.mode == MODE_POLL) {
			t->poll = true;
			t->interval_ns = 0; /* the contract's interval_ns of kind poll: none */
			t->poll_tsc = c->writer.poll_tsc;
			t->ns_per_cycle = c->writer.poll_tsc ? 1e9 / c->writer.tsc_hz : 1.0;
			t->poll_threshold_ns = c->cfg.poll_threshold_ns;
			for (int ctr = 0; ctr < CTR_COUNT; ctr++)
				t->poll_counters = t->poll_counters || c->probe.have[ctr];
			if (pollwin_ring_init(&t->windows, 64)) /* a minute of windows: the writer drains every 10 ms */
				return -ENOMEM;
		}
		c->wthreads[i] = (struct writer_thread){.loop = t, .thread = i, .cpu = t->cpu, .interval_ns = t->interval_ns};
	}
	return 0;
}

/* --mode poll: which clock the loop reads (TSC when the kernel's clocksource is the TSC, else the vDSO
 * clock), the TSC's calibration, and the RT throttling in force, for the writer's jitterscope.poll. */
static int capture_poll_clock(struct capture *c)
{
	bool usable = pollloop_tsc_usable();
	if (c->cfg.poll_clock == POLL_CLOCK_TSC && !usable) {
		fprintf(stderr, PROG ": --poll-clock tsc, but the kernel's clocksource is not the TSC here (see "
			"/sys/devices/system/clocksource/clocksource0/current_clocksource); use --poll-clock vdso or auto\n");
		return -EINVAL;
	}
	c->writer.poll = true;
	c->writer.poll_tsc = c->cfg.poll_clock != POLL_CLOCK_VDSO && usable;
	if (c->writer.poll_tsc)
		c->writer.tsc_hz = counters_tsc_hz(&c->writer.tsc_source);
	c->writer.rt_runtime_us = config_rt_runtime_us(&c->cfg);
	c->writer.rt_period_us = -1;
	FILE *f = fopen("/proc/sys/kernel/sched_rt_period_us", "re");
	if (f) {
		if (fscanf(f, "%ld", &c->writer.rt_period_us) != 1)
			c->writer.rt_period_us = -1;
		fclose(f);
	}
	return 0;
}

/* ---- threads --------------------------------------------------------------------- */

static int capture_start_thread(struct capture *c, int i)
{
	pthread_attr_t attr;
	cpu_set_t cpus;
	struct sched_param param = {.sched_priority = c->cfg.priority};
	CPU_ZERO(&cpus);
	CPU_SET(c->loops[i].cpu, &cpus);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, MEASURING_STACK);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, capture_policy(c->cfg.policy));
	pthread_attr_setschedparam(&attr, &param);
	pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	int err = pthread_create(&c->tids[i], &attr, timerloop_run, &c->loops[i]);
	pthread_attr_destroy(&attr);
	if (!err) {
		char name[16]; /* for ps, top and the tests: which thread measures which CPU */
		snprintf(name, sizeof(name), "js-cpu%d", c->loops[i].cpu);
		pthread_setname_np(c->tids[i], name);
	}
	if (err)
		fprintf(stderr, PROG ": cannot start the thread for CPU %d: %s (check -a and --policy)\n",
			c->loops[i].cpu, strerror(err));
	return -err;
}

static int capture_start_writer(struct capture *c)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WRITER_STACK);
	if (c->writer_cpu >= 0) {
		cpu_set_t cpus;
		CPU_ZERO(&cpus);
		CPU_SET(c->writer_cpu, &cpus);
		pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	}
	struct sched_param param = {.sched_priority = c->writer_priority};
	if (c->writer_priority > 0) {
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &param);
	}
	int err = pthread_create(&c->writer_tid, &attr, writer_run, &c->writer);
	pthread_attr_destroy(&attr);
	if (!err)
		pthread_setname_np(c->writer_tid, "js-writer");
	if (err) {
		fprintf(stderr, PROG ": cannot start the writer thread: %s\n", strerror(err));
		return -err;
	}
	c->writer_started = true;
	return 0;
}

/* Blocks the signals main waits for (in every thread: they inherit the mask). */
static void capture_block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP); /* a closed terminal ends the run like SIGINT: final flush, status interrupted */
	sigaddset(set, SIGQUIT); /* Ctrl-\\ too: a core dump would lose the last flush */
	sigaddset(set, PARENT_SIGNAL);
	sigaddset(set, SIGUSR1);
	sigaddset(set, timerloop_signal());
	pthread_sigmask(SIG_BLOCK, set, NULL);
	sigdelset(set, timerloop_signal()); /* main waits for the others */
}

/* Starts every measuring thread, waits until each has set up its timer, then
 * opens the gate (or aborts it). */
static int capture_start(struct capture *c)
{
	timerloop_gate_init(&c->gate);
	int err = 0;
	for (int i = 0; i < c->cfg.ncpus && !err; i++)
		if (!(err = capture_start_thread(c, i)))
			c->started++;
	timerloop_gate_wait_ready(&c->gate, c->started);
	for (int i = 0; i < c->started && !err; i++) {
		if ((err = c->loops[i].error))
			fprintf(stderr, PROG ": cannot set up the %s timer on CPU %d: %s\n", config_timer_name(c->cfg.timer),
				c->loops[i].cpu, strerror(-err));
	}
	if (!err)
		err = capture_start_writer(c);
	if (!err)
		err = trace_start(&c->trace); /* before the gate: the first wake-up is traced */
	int64_t start_ns = timerloop_now_ns() + 10000000; /* 10 ms: every thread is asleep before the first target */
	for (int i = 0; i < c->started; i++)
		c->loops[i].end_ns = c->cfg.duration_ns ? start_ns + c->cfg.duration_ns : INT64_MAX;
	timerloop_gate_open(&c->gate, err == 0, start_ns);
	return err;
}

static bool capture_threads_done(const struct capture *c)
{
	for (int i = 0; i < c->started; i++)
		if (!atomic_load(&c->loops[i].done))
			return false;
	return true;
}

/* After a --break: the reason the dataset gives, and the marker in the trace
 * (written here, by main, never in the measuring loop).  False when no break. */
static bool capture_break_reason(struct capture *c)
{
	const struct timerloop_break *b = &c->brk;
	if (!atomic_load(&b->claimed))
		return false;
	char marker[200];
	snprintf(marker, sizeof(marker), "jitterscope break: thread %d cpu %d seq %lld latency_ns %lld threshold_ns %lld",
		 b->thread, b->cpu, (long long)b->seq, (long long)b->latency_ns, (long long)b->threshold_ns);
	snprintf(c->stop_reason, sizeof(c->stop_reason),
		 "break: thread %d (CPU %d) seq %lld woke %.1f us late, over --break %lld us", b->thread, b->cpu,
		 (long long)b->seq, (double)b->latency_ns / 1e3, (long long)(b->threshold_ns / 1000));
	int err = trace_mark(&c->trace, marker, b->cpu);
	if (err)
		fprintf(stderr, PROG ": warning: cannot write the break marker: %s\n", strerror(-err));
	if (!c->cfg.quiet)
		fprintf(stderr, PROG ": stopped: %s\n", c->stop_reason);
	return true;
}

/* Waits for the end (duration, loops, signal or a writer error), then stops
 * and joins the threads and lets the writer make its final flush. */
static int capture_wait(struct capture *c, const sigset_t *signals)
{
	int signo = 0;
	while (!signo && !capture_threads_done(c) && !atomic_load(&c->stop)) {
		int got = sigwaitinfo(signals, NULL);
		if (got == SIGINT || got == SIGTERM || got == SIGHUP || got == SIGQUIT ||
		    (got == PARENT_SIGNAL && c->parent))
			signo = got;
	}
	atomic_store(&c->stop, true);
	for (int i = 0; i < c->started; i++)
		pthread_join(c->tids[i], NULL);
	c->started = 0;
	int thread_err = 0;
	for (int i = 0; i < c->cfg.ncpus && !thread_err; i++)
		thread_err = c->loops[i].error;
	if (signo == PARENT_SIGNAL)
		snprintf(c->stop_reason, sizeof(c->stop_reason),
			 "parent died: the jitterscope wrapper (pid %ld) ended, and a capture never outlives it", (long)c->parent);
	const char *reason = signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : signo == SIGHUP ? "SIGHUP"
			     : signo == SIGQUIT ? "SIGQUIT" : signo == PARENT_SIGNAL ? c->stop_reason
			     : thread_err ? "a timer failed in a measuring thread"
			     : capture_break_reason(c) ? c->stop_reason
			     : c->cfg.duration_ns ? "duration reached" : "loop count reached";
	int trace_err = trace_finish(&c->trace, reason);
	writer_finish(&c->writer, signo ? "interrupted" : thread_err ? "error" : "complete", reason);
	pthread_join(c->writer_tid, NULL);
	c->writer_started = false;
	if (c->writer.error) {
		fprintf(stderr, "%s\n", c->writer.error_line);
		return EXIT_RUNTIME;
	}
	if (trace_err)
		return EXIT_RUNTIME;
	if (thread_err) {
		fprintf(stderr, PROG ": the %s timer failed: %s\n", config_timer_name(c->cfg.timer), strerror(-thread_err));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

/* ---- setup, run, cleanup --------------------------------------------------------- */

static int capture_setup(struct capture *c)
{
	struct output_owner owner;
	output_owner(&owner);
	setupinfo_clock_start(&c->clock); /* first: the rest of setup runs inside the TSC's calibration */
	if (fault_init())
		return EXIT_USAGE;
	trace_clean_stale(c->cfg.quiet); /* any capture cleans up after a killed --trace run */
	idlestate_repair(&c->cfg);        /* ... and after a killed --deepest-idle-state run */
	if (capture_check_policy(&c->cfg))
		return EXIT_RUNTIME;
	if (c->cfg.policy == POLICY_OTHER)
		capture_degrade(c, "policy other: wake-ups compete with ordinary tasks; not a real-time measurement");
	if (counters_probe(&c->probe, &c->cfg))
		return EXIT_RUNTIME;
	if (c->cfg.mode == MODE_POLL && capture_poll_clock(c))
		return EXIT_USAGE;
	if (c->cfg.output && (c->dir_fd = output_create(c->cfg.output, c->cfg.force, &owner, &c->dir_created)) < 0)
		return EXIT_RUNTIME;
	capture_lock_memory(c);
	capture_hold_latency(c);
	if (idlestate_apply(&c->idle, &c->cfg))
		return EXIT_RUNTIME;
	if (capture_alloc(c)) {
		fprintf(stderr, PROG ": cannot set up the measuring threads (out of memory or counters failed)\n");
		return EXIT_RUNTIME;
	}
	capture_place_writer(c);
	if (trace_setup(&c->trace, &c->cfg, c->dir_fd, c->writer_shares ? -1 : c->writer_cpu, owner.uid, owner.gid,
			owner.set))
		return EXIT_RUNTIME;
	if (trace_listen(&c->trace, &c->loops[0].late, sizeof(c->loops[0]), c->cfg.ncpus)) {
		fprintf(stderr, PROG ": out of memory for the --trace-keep notices\n");
		return EXIT_RUNTIME;
	}
	struct setup_granted granted = {
		.mlocked = c->mlocked, .mlock_errno = c->mlock_errno,
		.latency_held = c->dma_fd >= 0, .latency_errno = c->dma_errno,
		
		.writer_cpu = c->writer_cpu, .writer_shares = c->writer_shares, .writer_priority = c->writer_priority,
		.ring_capacity = ring_capacity(&c->loops[0].ring),
		.idle_states_disabled = idlestate_disabled(&c->idle),
		.counters = c->probe.source, .degraded = c->degraded, .ndegraded = c->ndegraded,
	};
	char *tracing_json = trace_environment_json(&c->trace, &c->cfg);
	c->environment_json = tracing_json ? envinfo_json_tracing(tracing_json) : NULL;
	free(tracing_json);
	c->counters_json = setupinfo_counters_json(&c->probe);
	c->settings_json = setupinfo_settings_json(&c->cfg, &granted);
	if (!c->environment_json || !c->counters_json || !c->settings_json) {
		fprintf(stderr, PROG ": out of memory building the metadata\n");
		return EXIT_RUNTIME;
	}
	c->writer.settings_json = c->settings_json;
	c->writer.environment_json = c->environment_json;
	c->writer.counters_json = c->counters_json;
	c->writer.clock = &c->clock;
	c->writer.stop = &c->stop;
	c->writer.notify = pthread_self();
	c->writer.notify_set = true;
	c->writer.owner_uid = owner.uid;
	c->writer.owner_gid = owner.gid;
	c->writer.chown_parts = owner.set;
	bool counter_column[CTR_COUNT];
	memcpy(counter_column, c->probe.have, sizeof(counter_column));
	if (writer_init(&c->writer, &c->cfg, c->wthreads, c->cfg.ncpus, counter_column, c->dir_fd))
		return EXIT_RUNTIME;
	return EXIT_OK;
}

static int capture_run(struct capture *c, const sigset_t *signals)
{
	if (capture_start(c))
		return EXIT_RUNTIME;
	int status = capture_wait(c, signals);
	if (c->writer.status_lines && isatty(STDERR_FILENO) && isatty(STDOUT_FILENO))
		fprintf(stderr, "\033[%dA", c->writer.status_lines); /* the final lines replace the live ones */
	writer_print_summary(&c->writer, stdout);
	return status;
}

static void capture_cleanup(struct capture *c)
{
	if (c->started) {
		atomic_store(&c->stop, true);
		for (int i = 0; i < c->started; i++)
			pthread_join(c->tids[i], NULL);
	}
	if (c->writer_started) {
		writer_finish(&c->writer, "error", "setup failed");
		pthread_join(c->writer_tid, NULL);
	}
	trace_close(&c->trace);
	idlestate_restore(&c->idle); /* after the threads stopped, on every path out of setup or run */
	writer_free(&c->writer);
	for (int i = 0; c->loops && i < c->cfg.ncpus; i++) {
		counters_close(&c->loops[i].counters);
		ring_free(&c->loops[i].ring);
		pollwin_ring_free(&c->loops[i].windows);
	}
	free(c->loops);
	free(c->wthreads);
	free(c->tids);
	free(c->environment_json);
	free(c->settings_json);
	free(c->counters_json);
	if (c->dma_fd >= 0)
		close(c->dma_fd);
	if (c->dir_fd >= 0)
		close(c->dir_fd);
}

/* Under the wrapper: the kernel sends PARENT_SIGNAL when it dies (even of SIGKILL), and the run stops as on
 * SIGTERM (final flush, state interrupted, the reason says why).  A wrapper that died before the prctl is seen
 * by getppid(): false then, and nothing is started.  Run directly (no PARENT_ENV), a capture may outlive its
 * shell (nohup, setsid), as before. */
static bool capture_watch_parent(struct capture *c)
{
	const char *text = getenv(PARENT_ENV);
	if (!text || !*text)
		return true;
	char *end;
	errno = 0;
	long pid = strtol(text, &end, 10);
	if (errno || *end || pid <= 1) {
		fprintf(stderr, PROG ": warning: ignoring " PARENT_ENV "=%s (not a process id)\n", text);
		return true;
	}
	c->parent = (pid_t)pid;
	if (prctl(PR_SET_PDEATHSIG, PARENT_SIGNAL))
		fprintf(stderr, PROG ": warning: cannot watch the wrapper (pid %ld): %s\n", pid, strerror(errno));
	if (getppid() == c->parent)
		return true;
	fprintf(stderr, PROG ": the jitterscope wrapper (pid %ld) has already ended; not starting\n", pid);
	return false;
}

int main(int argc, char **argv)
{
	static struct capture c; /* large (the config holds a CPU array); zeroed */
	int parsed = config_parse(&c.cfg, argc, argv);
	if (parsed)
		return parsed > 0 ? EXIT_OK : EXIT_USAGE;
	c.dir_fd = -1;
	c.dma_fd = -1;
	atomic_init(&c.stop, false);
	c.brk.threshold_ns = c.cfg.break_ns;
	c.brk.halt = &c.stop;
	atomic_init(&c.brk.claimed, false);
	/* status lines to a pipe that closed (| head -1) fail with EPIPE instead of killing the capture:
	 * the run goes on to its final flush and the dataset ends complete */
	signal(SIGPIPE, SIG_IGN);
	sigset_t signals;
	capture_block_signals(&signals); /* a SIGINT during setup waits, then ends the run cleanly */
	if (!capture_watch_parent(&c))
		return EXIT_RUNTIME;
	int status = capture_setup(&c);
	bool setup_failed = status != EXIT_OK;
	if (!setup_failed)
		status = capture_run(&c, &signals);
	capture_cleanup(&c);
	if (setup_failed && c.dir_created)
		output_remove_empty(c.cfg.output); /* a failed capture leaves no directory it made */
	return status;
}
