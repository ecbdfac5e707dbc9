/* --bench-writer HOURS,CPUS,HZ: pushes synthetic samples at full speed
 * through the writer and the Parquet encoder and prints the bytes of old
 * footers against the data.  No measuring threads, no rings. */
#ifndef JITTERSCOPE_BENCH_H
#define JITTERSCOPE_BENCH_H

#include "config.h"

/* Returns an exit status. */
int bench_writer(const struct config *cfg);

#endif
