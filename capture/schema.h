/* The C mirror of the sample-column table in docs/dataset-format.md (same
 * names, types and order; tests/test_contract.py parses this file and
 * compares).  The capture writes cpu..read_cycles always and a counter
 * column only when its source was readable.
 *
 * Encodings: DELTA_BINARY_PACKED everywhere.  For seq/expected_ns/actual_ns/
 * tsc and the counters the deltas are small and regular; the int32 columns
 * (cpu, thread, run_cpu, overruns) are constant over each thread's block of
 * a row group (the writer groups rows by thread), so their miniblocks pack to
 * 0 bits instead of PLAIN's 4 bytes a row -- 12 bytes/row saved, which is
 * 16 GB a day at 1 kHz on 16 CPUs; read_cycles varies by a few hundred
 * cycles and packs to ~9 bits. */
#ifndef JITTERSCOPE_SCHEMA_H
#define JITTERSCOPE_SCHEMA_H

#include "parquet.h"

#define SCHEMA_VERSION 1

struct schema_column {
	const char *name;
	enum pq_type type;
	enum pq_encoding encoding;
	int required;
};

/* contract:sample-columns (order matters) */
static const struct schema_column SCHEMA_SAMPLE_COLUMNS[] = {
	{"cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"thread", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"seq", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"expected_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"actual_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"overruns", PQ_INT32, PQ_DELTA_BINARY_PACKED, 0},
	{"tsc", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"run_cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, 0},
	{"read_cycles", PQ_INT32, PQ_DELTA_BINARY_PACKED, 0},
	{"aperf", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"mperf", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"smi", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"perf_status", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
};
/* /contract:sample-columns */

enum schema_column_index {
	COL_CPU, COL_THREAD, COL_SEQ, COL_EXPECTED_NS, COL_ACTUAL_NS, COL_OVERRUNS, COL_TSC,
	COL_RUN_CPU, COL_READ_CYCLES, COL_APERF, COL_MPERF, COL_SMI, COL_PERF_STATUS, COL_COUNT
};

/* The first counter column; COL_APERF + CTR_x is counter x's column (sample.h). */
#define SCHEMA_FIRST_COUNTER COL_APERF

/* Kind poll (--mode poll): one row per interruption, a gap >= --poll-threshold between two reads of the
 * busy loop.  cpu/thread are constant per thread block as above; start_ns and duration_ns delta-pack. */
/* contract:poll-columns (order matters) */
static const struct schema_column SCHEMA_POLL_COLUMNS[] = {
	{"cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"thread", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"seq", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"start_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"duration_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"tsc", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"run_cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, 0},
	{"aperf", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"mperf", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"smi", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
	{"perf_status", PQ_INT64, PQ_DELTA_BINARY_PACKED, 0},
};
/* /contract:poll-columns */

enum schema_poll_column_index {
	PCOL_CPU, PCOL_THREAD, PCOL_SEQ, PCOL_START_NS, PCOL_DURATION_NS, PCOL_TSC, PCOL_RUN_CPU, PCOL_APERF,
	PCOL_MPERF, PCOL_SMI, PCOL_PERF_STATUS, PCOL_COUNT
};
#define SCHEMA_POLL_FIRST_COUNTER PCOL_APERF

/* The per-second table _poll/part-NNNNN.parquet: these columns, then h00, h01, ... one per histogram bucket
 * (POLL_BUCKETS, pollwin.h; the name is "h" and the bucket index with at least two digits). */
/* contract:poll-window-columns (order matters) */
static const struct schema_column SCHEMA_POLL_WINDOW_COLUMNS[] = {
	{"cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"thread", PQ_INT32, PQ_DELTA_BINARY_PACKED, 1},
	{"window_start_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"window_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"iterations", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"noise_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"interruptions", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
	{"max_gap_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED, 1},
};
/* /contract:poll-window-columns */

enum schema_poll_window_index {
	WCOL_CPU, WCOL_THREAD, WCOL_START_NS, WCOL_WINDOW_NS, WCOL_ITERATIONS, WCOL_NOISE_NS, WCOL_INTERRUPTIONS,
	WCOL_MAX_GAP_NS, WCOL_FIXED
};

#endif
