/* Unit tests of ring.c: wrap-around, full ring drops and counts, and one
 * producer and one consumer on two threads.  Prints "ok N" lines; exits 1 on
 * the first failure.  Built and run by tests/capture/test_ring.py. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ring.h"

static int test_failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			test_failures++;                                              \
			return;                                                       \
		}                                                                     \
	} while (0)

static struct sample test_sample(int64_t seq)
{
	struct sample s = {.seq = seq, .expected_ns = seq * 1000, .actual_ns = seq * 1000 + 7};
	return s;
}

static void test_capacity_rounds_up(void)
{
	struct ring r;
	CHECK(ring_init(&r, 5) == 0);
	CHECK(ring_capacity(&r) == 8);
	ring_free(&r);
	CHECK(ring_init(&r, 0) == 0);
	CHECK(ring_capacity(&r) == 2);
	ring_free(&r);
	puts("ok capacity_rounds_up");
}

static void test_empty_pop(void)
{
	struct ring r;
	struct sample out[4];
	CHECK(ring_init(&r, 4) == 0);
	CHECK(ring_pop(&r, out, 4) == 0);
	CHECK(ring_count(&r) == 0 && ring_drops(&r) == 0);
	ring_free(&r);
	puts("ok empty_pop");
}

/* Many laps around a ring of 4, popping in odd-sized chunks. */
static void test_wrap_around(void)
{
	struct ring r;
	struct sample out[3];
	CHECK(ring_init(&r, 4) == 0);
	int64_t pushed = 0, popped = 0;
	for (int lap = 0; lap < 1000; lap++) {
		while (ring_count(&r) < 4)
			CHECK(ring_push(&r, &(struct sample){.seq = pushed++}) == 0);
		size_t n = ring_pop(&r, out, (size_t)(1 + lap % 3));
		for (size_t i = 0; i < n; i++)
			CHECK(out[i].seq == popped++);
	}
	CHECK(ring_drops(&r) == 0);
	CHECK(pushed - popped == (int64_t)ring_count(&r));
	CHECK(pushed > 2000);
	ring_free(&r);
	puts("ok wrap_around");
}

static void test_full_drops_and_counts(void)
{
	struct ring r;
	struct sample out[8];
	CHECK(ring_init(&r, 8) == 0);
	for (int64_t i = 0; i < 8; i++) {
		struct sample s = test_sample(i);
		CHECK(ring_push(&r, &s) == 0);
	}
	for (int64_t i = 8; i < 11; i++) {
		struct sample s = test_sample(i);
		CHECK(ring_push(&r, &s) == -ENOBUFS);
	}
	CHECK(ring_drops(&r) == 3);
	CHECK(ring_pop(&r, out, 8) == 8);
	for (int64_t i = 0; i < 8; i++)
		CHECK(out[i].seq == i && out[i].actual_ns == i * 1000 + 7); /* the dropped ones never overwrite */
	struct sample s = test_sample(11);
	CHECK(ring_push(&r, &s) == 0); /* room again after the pop */
	CHECK(ring_pop(&r, out, 8) == 1 && out[0].seq == 11);
	CHECK(ring_drops(&r) == 3);
	ring_free(&r);
	puts("ok full_drops_and_counts");
}

#define SPSC_TOTAL 2000000

static atomic_bool test_producer_done;

static void *test_producer(void *arg)
{
	struct ring *r = arg;
	for (int64_t seq = 0; seq < SPSC_TOTAL; seq++) {
		struct sample s = test_sample(seq);
		ring_push(r, &s); /* may drop: counted */
	}
	atomic_store(&test_producer_done, true);
	return NULL;
}

/* Every sample either arrives intact and in order or is counted as a drop:
 * the seq gaps the consumer sees (plus any after the last one) add up to the
 * drop counter exactly. */
static void test_spsc_threads(void)
{
	struct ring r;
	static struct sample out[256];
	CHECK(ring_init(&r, 1024) == 0);
	pthread_t producer;
	atomic_store(&test_producer_done, false);
	CHECK(pthread_create(&producer, NULL, test_producer, &r) == 0);
	int64_t next = 0, gaps = 0, received = 0, bad = 0;
	for (;;) {
		bool done = atomic_load(&test_producer_done); /* read before popping: nothing can follow */
		size_t n = ring_pop(&r, out, (size_t)(1 + received % 256));
		for (size_t i = 0; i < n; i++) {
			bad += out[i].seq < next || out[i].actual_ns != out[i].seq * 1000 + 7;
			gaps += out[i].seq - next;
			next = out[i].seq + 1;
			received++;
		}
		if (done && n == 0)
			break;
	}
	pthread_join(producer, NULL);
	CHECK(bad == 0);
	CHECK(received > 0);
	CHECK(received + (int64_t)ring_drops(&r) == SPSC_TOTAL);
	CHECK(gaps + (SPSC_TOTAL - next) == (int64_t)ring_drops(&r));
	printf("ok spsc_threads received=%lld drops=%llu\n", (long long)received, (unsigned long long)ring_drops(&r));
	ring_free(&r);
}

#define LOSSLESS_TOTAL 1000000

static void *test_patient_producer(void *arg)
{
	struct ring *r = arg;
	for (int64_t seq = 0; seq < LOSSLESS_TOTAL; seq++) {
		struct sample s = test_sample(seq);
		while (ring_push(r, &s) != 0)
			; /* retry: this test wants every sample through a small ring */
	}
	return NULL;
}

/* Producer and consumer truly interleaved through a 64-slot ring: every
 * sample arrives exactly once, in order, intact (the retries count as drops,
 * so only the contents are checked here). */
static void test_spsc_lossless(void)
{
	struct ring r;
	static struct sample out[16];
	CHECK(ring_init(&r, 64) == 0);
	pthread_t producer;
	CHECK(pthread_create(&producer, NULL, test_patient_producer, &r) == 0);
	int64_t next = 0, bad = 0;
	while (next < LOSSLESS_TOTAL) {
		size_t n = ring_pop(&r, out, 16);
		for (size_t i = 0; i < n; i++, next++)
			bad += out[i].seq != next || out[i].actual_ns != next * 1000 + 7;
	}
	pthread_join(producer, NULL);
	CHECK(bad == 0);
	CHECK(ring_count(&r) == 0);
	printf("ok spsc_lossless laps=%lld\n", (long long)(LOSSLESS_TOTAL / 64));
	ring_free(&r);
}

int main(void)
{
	test_capacity_rounds_up();
	test_empty_pop();
	test_wrap_around();
	test_full_drops_and_counts();
	test_spsc_threads();
	test_spsc_lossless();
	if (test_failures)
		fprintf(stderr, "%d failure(s)\n", test_failures);
	return test_failures ? 1 : 0;
}
