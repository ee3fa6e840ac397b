/* metrics: GET /metrics, in Prometheus' text format: the kernels by state,
 * the kernels started, culled and dead, the requests and the refused ones,
 * and a histogram of the REST requests' latency. */
#ifndef SANDPIT_SERVE_METRICS_H
#define SANDPIT_SERVE_METRICS_H

#include "kernel/serve/server.h"

/* The text of the metrics now, new (caller frees), or NULL. */
char *metrics_text(const struct serve *s);

/* Counts a request that took seconds. */
void metrics_observe(struct serve *s, double seconds);

#endif
