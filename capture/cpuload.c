/* CPU load since the capture started; see cpuload.h. */
#include "cpuload.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timerloop.h"

/* Parses "cpuN user nice system idle iowait irq softirq steal ..." into ticks[N].
 * Returns the highest N + 1 seen, or -1 when /proc/stat cannot be read. */
static int cpuload_read(struct cpuload_ticks *ticks, int max)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	char line[512];
	int ncpus = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal = 0;
		int cpu;
		int n = sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys, &idle,
			       &iowait, &irq, &softirq, &steal);
		if (n < 8 || cpu < 0 || cpu >= max)
			continue; /* the "cpu " total line has no number */
		ticks[cpu] = (struct cpuload_ticks){user + nice + sys + irq + softirq, idle + iowait, steal};
		if (cpu + 1 > ncpus)
			ncpus = cpu + 1;
	}
	fclose(f);
	return ncpus;
}

void cpuload_begin(struct cpuload *load)
{
	load->ncpus = 0;
	load->start_ns = timerloop_now_ns();
	load->start = calloc(CPULOAD_MAX_CPUS, sizeof(*load->start));
	if (!load->start)
		return;
	int n = cpuload_read(load->start, CPULOAD_MAX_CPUS);
	load->ncpus = n > 0 ? n : 0;
}

void cpuload_free(struct cpuload *load)
{
	free(load->start);
	load->start = NULL;
	load->ncpus = 0;
}

static void cpuload_one(struct jsonw *w, int cpu, const struct cpuload_ticks *then, const struct cpuload_ticks *now)
{
	uint64_t busy = now->busy - then->busy, idle = now->idle - then->idle, steal = now->steal - then->steal;
	uint64_t total = busy + idle + steal;
	char key[16];
	snprintf(key, sizeof(key), "%d", cpu);
	jsonw_object_begin(w, key);
	jsonw_uint(w, "ticks", total);
	if (total) {
		jsonw_double(w, "busy", (double)busy / (double)total);
		jsonw_double(w, "steal", (double)steal / (double)total);
	} else {
		jsonw_null(w, "busy"); /* less than one tick since the start: nothing measured yet */
		jsonw_null(w, "steal");
	}
	jsonw_object_end(w);
}

void cpuload_json(struct jsonw *w, const char *key, const struct cpuload *load)
{
	struct cpuload_ticks *now = load->ncpus ? calloc((size_t)load->ncpus, sizeof(*now)) : NULL;
	int n = now ? cpuload_read(now, load->ncpus) : -1;
	if (n <= 0) {
		free(now);
		jsonw_null(w, key);
		return;
	}
	jsonw_object_begin(w, key);
	jsonw_string(w, "since", "capture start");
	jsonw_double(w, "seconds", (double)(timerloop_now_ns() - load->start_ns) / 1e9);
	jsonw_object_begin(w, "cpus");
	for (int cpu = 0; cpu < n; cpu++) {
		const struct cpuload_ticks *then = &load->start[cpu];
		bool present = then->busy + then->idle + then->steal > 0;
		/* a CPU taken offline (and back) restarts its counts: no load to report */
		bool counted_on = now[cpu].busy >= then->busy && now[cpu].idle >= then->idle &&
				  now[cpu].steal >= then->steal;
		if (present && counted_on)
			cpuload_one(w, cpu, then, &now[cpu]);
	}
	jsonw_object_end(w);
	jsonw_object_end(w);
	free(now);
}
