/*
 * tool_stats.h: figures from a tool's samples.
 */
#ifndef UWARP_TOOL_STATS_H
#define UWARP_TOOL_STATS_H

#include <stddef.h>

/* The @p quantile (0 to 1) of @n samples, nearest rank; sorts @v. 0 when
 * there are none. */
double tool_percentile(double *v, size_t n, double p);

#endif
