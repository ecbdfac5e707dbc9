/* Setup metadata as JSON; see setupinfo.h. */
#include "setupinfo.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonw.h"

static void setupinfo_asked(struct jsonw *j, const struct config *cfg)
{
	jsonw_object_begin(j, "asked");
	jsonw_int(j, "interval_ns", cfg->mode == MODE_POLL ? 0 : cfg->interval_ns); /* poll: none */
	jsonw_array_begin(j, "cpus");
	for (int i = 0; i < cfg->ncpus; i++)
		jsonw_int(j, NULL, cfg->cpus[i]);
	jsonw_array_end(j);
	jsonw_string(j, "policy", config_policy_name(cfg->policy));
	jsonw_int(j, "priority", cfg->priority);
	jsonw_int(j, "duration_ns", cfg->duration_ns);
	jsonw_uint(j, "loops", cfg->loops);
	jsonw_int(j, "latency_us", cfg->latency_us);
	jsonw_int(j, "deepest_idle_state", cfg->deepest_idle_state);
	jsonw_string(j, "timer", config_timer_name(cfg->timer));
	jsonw_string(j, "counters", config_counters_name(cfg->counters));
	jsonw_string(j, "msr_dir", cfg->msr_dir);
	jsonw_int(j, "flush_interval_ns", cfg->flush_interval_ns);
	jsonw_string(j, "sync", config_sync_name(cfg->sync));
	jsonw_int(j, "writer_cpu", cfg->writer_cpu);
	jsonw_int(j, "row_group_ns", cfg->group_ns);
	jsonw_uint(j, "row_group_rows", cfg->group_rows);
	jsonw_int(j, "part_ns", cfg->part_ns);
	jsonw_string(j, "output", cfg->output);
	jsonw_string(j, "mode", config_mode_name(cfg->mode));
	if (cfg->mode == MODE_POLL) {
		jsonw_int(j, "poll_threshold_ns", cfg->poll_threshold_ns);
		jsonw_string(j, "poll_clock", config_poll_clock_name(cfg->poll_clock));
		jsonw_bool(j, "allow_starvation", cfg->allow_starvation);
	}
	jsonw_object_end(j);
}

static void setupinfo_granted(struct jsonw *j, const struct config *cfg, const struct setup_granted *g)
{
	jsonw_object_begin(j, "granted");
	jsonw_string(j, "policy", config_policy_name(cfg->policy));
	jsonw_int(j, "priority", cfg->priority);
	jsonw_int(j, "latency_us", g->latency_held ? cfg->latency_us : -1);
	if (cfg->latency_us >= 0 && !g->latency_held)
		jsonw_string(j, "latency_error", strerror(g->latency_errno));
	jsonw_int(j, "idle_states_disabled", g->idle_states_disabled);
	jsonw_bool(j, "mlockall", g->mlocked);
	if (!g->mlocked)
		jsonw_string(j, "mlockall_error", strerror(g->mlock_errno));
	jsonw_string(j, "timer", config_timer_name(cfg->timer));
	jsonw_string(j, "counters", counters_source_name(g->counters));
	jsonw_int(j, "writer_cpu", g->writer_cpu);
	jsonw_bool(j, "writer_shares_measured_cpu", g->writer_shares);
	jsonw_int(j, "writer_priority", g->writer_priority);
	jsonw_string(j, "sync", config_sync_name(cfg->sync));
	jsonw_uint(j, "ring_capacity", g->ring_capacity);
	jsonw_array_begin(j, "degraded");
	for (int i = 0; i < g->ndegraded; i++)
		jsonw_string(j, NULL, g->degraded[i]);
	jsonw_array_end(j);
	jsonw_object_end(j);
}

char *setupinfo_settings_json(const struct config *cfg, const struct setup_granted *granted)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	setupinfo_asked(&j, cfg);
	setupinfo_granted(&j, cfg, granted);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}

char *setupinfo_counters_json(const struct counters_probe *p)
{
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_string(&j, "source", counters_source_name(p->source));
	jsonw_array_begin(&j, "columns");
	for (int ctr = 0; ctr < CTR_COUNT; ctr++)
		if (p->have[ctr])
			jsonw_string(&j, NULL, counters_names[ctr]);
	jsonw_array_end(&j);
	jsonw_object_begin(&j, "missing");
	for (int ctr = 0; ctr < CTR_COUNT; ctr++)
		if (!p->have[ctr])
			jsonw_string(&j, counters_names[ctr], p->missing[ctr]);
	jsonw_object_end(&j);
	if (p->source == SOURCE_MSR || p->source == SOURCE_FILE) {
		jsonw_object_begin(&j, "msr_addresses");
		for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
			char hex[16];
			snprintf(hex, sizeof(hex), "0x%X", p->msr_address[ctr]);
			if (p->have[ctr])
				jsonw_string(&j, counters_names[ctr], hex);
		}
		jsonw_object_end(&j);
	}
	jsonw_string(&j, "cpu_vendor", p->vendor);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}

void setupinfo_clock_start(struct clock_setup *c)
{
	struct timespec real, mono;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	c->realtime_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
	c->monotonic_ns = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec;
	counters_tsc_anchor(&c->anchor);
}

char *setupinfo_clock_json(const struct clock_setup *c)
{
	char source[160];
	double hz = counters_tsc_hz_since(&c->anchor, TSC_MIN_SPAN_NS, source, sizeof(source));
	struct jsonw j;
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_int(&j, "realtime_ns", c->realtime_ns);
	jsonw_int(&j, "monotonic_ns", c->monotonic_ns);
	jsonw_double(&j, "tsc_hz", hz);
	jsonw_string(&j, "tsc_hz_source", source);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}
