/* The environment snapshot (docs/dataset-format.md, "environment"): kernel,
 * configuration, clocks, CPU, frequency and idle settings, as read from /proc
 * and /sys at setup.  A value that cannot be read is null, never guessed. */
#ifndef JITTERSCOPE_ENVINFO_H
#define JITTERSCOPE_ENVINFO_H

/* Returns the JSON object as a malloc'd string (NULL when out of memory). */
char *envinfo_json(void);
/* The same with a "tracing" member (the kernel tracing in force, trace.c). */
char *envinfo_json_tracing(const char *tracing_json);

#endif
