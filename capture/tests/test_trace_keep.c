/* Unit tests of trace_keep.c's context at a window's start (--trace-keep spikes): synthetic decoded rows
 * through the real ring, notices and window writer, no tracefs and no file (the rows stay in the reader's
 * stage, read back from t->columns).  Prints "ok NAME" lines; exits 1 on a failure.  Built and run by
 * tests/capture/test_trace_keep_unit.py with every capture source but main.c. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static int test_failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			test_failures++;                                              \
			return;                                                       \
		}                                                                     \
	} while (0)

#define US 1000
#define JS 1000      /* the measuring thread */
#define SPIN 555     /* a FIFO 90 task */
#define COMM_JS 1
#define COMM_SPIN 2

struct test_env {
	struct config cfg;
	struct trace t;
	struct trace_late late;
	struct trace_late *lates[1];
};

/* A trace of CPU 3 only, --trace-window 100,50 and no background sample, its stage allocated by hand. */
static int test_env_open(struct test_env *e)
{
	memset(e, 0, sizeof(*e));
	e->cfg.trace = true;
	e->cfg.trace_keep = KEEP_SPIKES;
	e->cfg.ncpus = 1;
	e->cfg.cpus[0] = 3;
	e->cfg.trace_pre_ns = 100 * US;
	e->cfg.trace_post_ns = 50 * US;
	e->cfg.trace_bg_every_ns = 60 * (int64_t)1000000000;
	e->cfg.trace_bg_len_ns = 0;
	e->t.cfg = &e->cfg;
	for (int c = 0; c < TC_COUNT; c++)
		if (!(e->t.columns[c] = calloc(TRACE_STAGE_ROWS, TRACE_COLUMNS[c].type == PQ_INT64 ? 8 : 4)))
			return -1;
	if (trace_keep_open(&e->t))
		return -1;
	e->lates[0] = &e->late;
	e->t.late = e->lates;
	e->t.nlate = 1;
	trace_keep_begin(&e->t, 0);
	return 0;
}

static void test_env_close(struct test_env *e)
{
	trace_keep_close(&e->t);
	for (int c = 0; c < TC_COUNT; c++)
		free(e->t.columns[c]);
}

static int test_row(struct test_env *e, int64_t ts_us, int event, int32_t pid, int32_t comm, int32_t prio,
		    int32_t other_pid, int32_t other_comm, int32_t other_prio)
{
	struct trace_row r = {.ts_ns = ts_us * US, .cpu = 3, .event = event, .pid = pid, .comm = comm, .number = -1,
			      .name = -1, .other_pid = other_pid, .other_prio = other_prio, .other_comm = other_comm,
			      .prio = prio, .value = 0};
	return trace_keep_row(&e->t, &r);
}

/* A late wake-up programmed at expected_us, run at actual_us: posted as the measuring thread does, then every
 * pending window written. */
static int test_spike(struct test_env *e, int64_t expected_us, int64_t actual_us)
{
	trace_late_post(&e->late, expected_us * US, actual_us * US);
	trace_late_next(&e->late, INT64_MAX);
	return trace_keep_tick(&e->t, INT64_MAX, true);
}

/* The staged window row at or after index from: its index, or -1. */
static long test_window_row(const struct test_env *e, size_t from)
{
	const int32_t *event = e->t.columns[TC_EVENT];
	for (size_t i = from; i < e->t.nstaged; i++)
		if (event[i] == TRACE_EV_WINDOW)
			return (long)i;
	return -1;
}

static int32_t test_col(const struct test_env *e, int col, long i)
{
	return ((const int32_t *)e->t.columns[col])[i];
}

/* The kernel (this project's VM) dropped the switch from idle into the spinner: the last switch seen went to
 * idle, yet the first event inside the window (the timer interrupt) interrupted the spinner, which holds the
 * CPU from before the window.  The window names the spinner, its priority unknown (-1) as no switch said it. */
static void test_first_event_names_the_task(void)
{
	struct test_env e;
	CHECK(test_env_open(&e) == 0);
	CHECK(test_row(&e, 1000, TRACE_EV_SWITCH, JS, COMM_JS, 19, 0, 0, 120) == 0); /* js -> idle */
	/* (never traced: idle -> spinner at ~1500 us) */
	CHECK(test_row(&e, 2050, TRACE_EV_VECTOR_ENTRY, SPIN, COMM_SPIN, -1, -1, -1, -1) == 0);
	CHECK(test_row(&e, 2052, TRACE_EV_VECTOR_EXIT, SPIN, COMM_SPIN, -1, -1, -1, -1) == 0);
	CHECK(test_row(&e, 2290, TRACE_EV_SWITCH, SPIN, COMM_SPIN, 9, JS, COMM_JS, 19) == 0); /* spinner -> js */
	CHECK(test_row(&e, 2500, TRACE_EV_SWITCH, JS, COMM_JS, 19, 0, 0, 120) == 0);
	CHECK(test_spike(&e, 2000, 2300) == 0); /* window [1900, 2350] us */
	long w = test_window_row(&e, 0);
	CHECK(w >= 0 && ((const int64_t *)e.t.columns[TC_TS])[w] == 1900 * US);
	CHECK(test_col(&e, TC_PID, w) == SPIN);
	CHECK(test_col(&e, TC_COMM, w) == COMM_SPIN);
	CHECK(test_col(&e, TC_PRIO, w) == -1);
	test_env_close(&e);
	puts("ok first_event_names_the_task");
}

/* The same, with a switch out of the spinner as the window's first event: it names the spinner and its
 * priority (the switch's prev_prio). */
static void test_first_switch_names_the_task_and_prio(void)
{
	struct test_env e;
	CHECK(test_env_open(&e) == 0);
	CHECK(test_row(&e, 1000, TRACE_EV_SWITCH, JS, COMM_JS, 19, 0, 0, 120) == 0);
	CHECK(test_row(&e, 2290, TRACE_EV_SWITCH, SPIN, COMM_SPIN, 9, JS, COMM_JS, 19) == 0);
	CHECK(test_spike(&e, 2000, 2300) == 0);
	long w = test_window_row(&e, 0);
	CHECK(w >= 0);
	CHECK(test_col(&e, TC_PID, w) == SPIN);
	CHECK(test_col(&e, TC_PRIO, w) == 9);
	test_env_close(&e);
	puts("ok first_switch_names_the_task_and_prio");
}

/* Where the tracked task and the first event agree, the window names it with the priority its switch in said
 * (the rule replaces nothing); events naming no task (pid -1) are passed over. */
static void test_tracked_task_kept_where_they_agree(void)
{
	struct test_env e;
	CHECK(test_env_open(&e) == 0);
	CHECK(test_row(&e, 1000, TRACE_EV_SWITCH, JS, COMM_JS, 19, SPIN, COMM_SPIN, 9) == 0); /* js -> spinner */
	CHECK(test_row(&e, 1950, TRACE_EV_OTHER, -1, -1, -1, -1, -1, -1) == 0);
	CHECK(test_row(&e, 2050, TRACE_EV_VECTOR_ENTRY, SPIN, COMM_SPIN, -1, -1, -1, -1) == 0);
	CHECK(test_row(&e, 2290, TRACE_EV_SWITCH, SPIN, COMM_SPIN, 9, JS, COMM_JS, 19) == 0);
	CHECK(test_spike(&e, 2000, 2300) == 0);
	long w = test_window_row(&e, 0);
	CHECK(w >= 0);
	CHECK(test_col(&e, TC_PID, w) == SPIN && test_col(&e, TC_PRIO, w) == 9);
	test_env_close(&e);
	puts("ok tracked_task_kept_where_they_agree");
}

/* A window with no event that names a task keeps the tracked context (idle here). */
static void test_empty_window_keeps_the_tracked_task(void)
{
	struct test_env e;
	CHECK(test_env_open(&e) == 0);
	CHECK(test_row(&e, 1000, TRACE_EV_SWITCH, JS, COMM_JS, 19, 0, 0, 120) == 0);
	CHECK(test_row(&e, 3000, TRACE_EV_SWITCH, 0, 0, 120, JS, COMM_JS, 19) == 0);
	CHECK(test_spike(&e, 2000, 2300) == 0);
	long w = test_window_row(&e, 0);
	CHECK(w >= 0);
	CHECK(test_col(&e, TC_PID, w) == 0 && test_col(&e, TC_PRIO, w) == 120);
	test_env_close(&e);
	puts("ok empty_window_keeps_the_tracked_task");
}

int main(void)
{
	test_first_event_names_the_task();
	test_first_switch_names_the_task_and_prio();
	test_tracked_task_kept_where_they_agree();
	test_empty_window_keeps_the_tracked_task();
	return test_failures ? 1 : 0;
}
