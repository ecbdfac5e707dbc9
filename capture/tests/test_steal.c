/* Unit tests of the steal series (steal.c): /proc/stat parsing, rises merged per CPU, the cap. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steal.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

static void parse_picks_the_steal_field_of_each_cpu(void)
{
	const char *text = "cpu  9 9 9 9 9 9 9 99 0 0\n"
			   "cpu0 1 0 1 1 0 0 0 5 0 0\n"
			   "cpu1 1 0 1 1 0 0 0 9 0 0\n"
			   "cpu10 1 0 1 1 0 0 0 77 0 0\n"
			   "intr 1 2 3\nctxt 4\n";
	int cpus[] = {1, 0, 10};
	uint64_t out[3] = {0};
	CHECK(steal_parse(text, cpus, 3, out));
	CHECK(out[0] == 9 && out[1] == 5 && out[2] == 77);
	int missing[] = {2};
	CHECK(!steal_parse(text, missing, 1, out));
	printf("ok parse\n");
}

static void take(struct steal *s, uint64_t a, uint64_t b, int64_t t)
{
	uint64_t now[2] = {a, b};
	steal_take(s, now, t);
}

static void rises_merge_per_cpu(void)
{
	struct steal s;
	int cpus[] = {0, 1};
	steal_begin(&s, cpus, 2, 0);
	CHECK(s.available);
	s.last[0] = s.last[1] = 100;
	take(&s, 100, 100, 10);
	CHECK(s.nrises == 0);
	take(&s, 102, 100, 20);
	take(&s, 103, 101, 30); /* CPU 0 goes on rising: one rise (10, 30]; CPU 1 starts (20, 30] */
	take(&s, 103, 101, 40);
	take(&s, 104, 101, 50); /* after a quiet sample: a new rise */
	take(&s, 0, 101, 60);   /* the count restarted (CPU offline and back): no rise */
	take(&s, 1, 101, 70);
	CHECK(s.nrises == 4);
	CHECK(s.rises[0].cpu == 0 && s.rises[0].from_ns == 10 && s.rises[0].to_ns == 30 && s.rises[0].ticks == 3);
	CHECK(s.rises[1].cpu == 1 && s.rises[1].from_ns == 20 && s.rises[1].to_ns == 30 && s.rises[1].ticks == 1);
	CHECK(s.rises[2].cpu == 0 && s.rises[2].from_ns == 40 && s.rises[2].to_ns == 50 && s.rises[2].ticks == 1);
	CHECK(s.rises[3].cpu == 0 && s.rises[3].from_ns == 60 && s.rises[3].to_ns == 70 && s.rises[3].ticks == 1);
	CHECK(s.total[0] == 5 && s.total[1] == 1 && s.samples == 8 && s.max_gap_ns == 10);
	char *json = steal_json(&s);
	char expect[128];
	snprintf(expect, sizeof(expect), "\"rises\":[[0,10,30,%" PRId64 "],[1,20,30,%" PRId64 "],", 3 * s.tick_ns,
		 s.tick_ns);
	CHECK(json && strstr(json, expect));
	CHECK(strstr(json, "\"left_out\":0"));
	free(json);
	steal_free(&s);
	printf("ok merge\n");
}

static void the_list_is_capped_and_the_rest_counted(void)
{
	struct steal s;
	int cpus[] = {0, 1};
	steal_begin(&s, cpus, 2, 0);
	CHECK(s.available);
	s.last[0] = s.last[1] = 0;
	uint64_t ticks = 0;
	for (int64_t k = 1; k <= 2 * (STEAL_MAX_RISES + 10); k++) /* a rise every other sample: never merged */
		take(&s, k % 2 ? ++ticks : ticks, 0, k);
	CHECK(s.nrises == STEAL_MAX_RISES && s.left_out == 10 && s.total[0] == STEAL_MAX_RISES + 10);
	steal_free(&s);
	printf("ok cap\n");
}

int main(void)
{
	parse_picks_the_steal_field_of_each_cpu();
	rises_merge_per_cpu();
	the_list_is_capped_and_the_rest_counted();
	return 0;
}
