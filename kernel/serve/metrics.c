/* metrics: the Prometheus text (metrics.h). The bucket bounds are the
 * seconds a REST request takes: a kernel's start is the slow one. */
#include "kernel/serve/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double bounds[SERVE_LATENCY_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

void metrics_observe(struct serve *s, double seconds)
{
    int i = 0;
    while (i < SERVE_LATENCY_BUCKETS && seconds > bounds[i])
        i++;
    s->metrics.latency_counts[i]++;
    s->metrics.latency_sum += seconds;
    s->metrics.requests++;
}

static void kernels_by_state(FILE *f, const struct serve *s)
{
    static const char *const states[] = {"starting", "idle", "busy", "restarting",
                                         "dead"};
    fprintf(f, "# HELP sandpit_kernels Kernels by execution state.\n"
               "# TYPE sandpit_kernels gauge\n");
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        int n = 0;
        for (const struct serve_kernel *k = s->reg.head; k; k = k->next)
            n += strcmp(k->state, states[i]) == 0;
        fprintf(f, "sandpit_kernels{state=\"%s\"} %d\n", states[i], n);
    }
}

static void counter(FILE *f, const char *name, const char *help, unsigned long v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %lu\n", name, help, name, name, v);
}

char *metrics_text(const struct serve *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    kernels_by_state(f, s);
    counter(f, "sandpit_kernels_started_total", "Kernels started.", s->reg.started);
    counter(f, "sandpit_kernels_culled_total", "Kernels ended for being idle.",
            s->reg.culled);
    counter(f, "sandpit_kernels_died_total", "Kernels that exited on their own.",
            s->reg.died);
    counter(f, "sandpit_cells_total", "Cells run.", s->reg.cells);
    counter(f, "sandpit_cells_timed_out_total", "Cells ended by the time limit.",
            s->reg.timeouts);
    counter(f, "sandpit_worker_restarts_total", "Workers lost while a request ran.",
            s->reg.worker_restarts);
    counter(f, "sandpit_memory_limit_ends_total", "Workers ended by the memory limit.",
            s->reg.memory_ends);
    fprintf(f,
            "# HELP sandpit_mcp_sessions MCP sessions over HTTP open.\n"
            "# TYPE sandpit_mcp_sessions gauge\nsandpit_mcp_sessions %d\n",
            s->mcp.count);
    counter(f, "sandpit_mcp_sessions_started_total", "MCP sessions started.",
            s->mcp.started);
    counter(f, "sandpit_mcp_sessions_culled_total", "MCP sessions ended for being idle.",
            s->mcp.culled);
    counter(f, "sandpit_http_unauthorised_total", "Requests refused for their token.",
            s->metrics.unauthorised);
    counter(f, "sandpit_websockets_opened_total", "WebSocket connections opened.",
            s->metrics.ws_opened);
    counter(f, "sandpit_websockets_refused_total", "WebSocket upgrades refused.",
            s->metrics.ws_rejected);
    counter(f, "sandpit_websocket_messages_dropped_total",
            "Client messages that were not Jupyter messages.",
            s->metrics.ws_dropped_msgs);
    fprintf(f, "# HELP sandpit_http_request_seconds REST requests' latency.\n"
               "# TYPE sandpit_http_request_seconds histogram\n");
    unsigned long cum = 0;
    for (int i = 0; i < SERVE_LATENCY_BUCKETS; i++) {
        cum += s->metrics.latency_counts[i];
        fprintf(f, "sandpit_http_request_seconds_bucket{le=\"%g\"} %lu\n", bounds[i],
                cum);
    }
    cum += s->metrics.latency_counts[SERVE_LATENCY_BUCKETS];
    fprintf(f, "sandpit_http_request_seconds_bucket{le=\"+Inf\"} %lu\n", cum);
    fprintf(f, "sandpit_http_request_seconds_sum %.6f\n", s->metrics.latency_sum);
    fprintf(f, "sandpit_http_request_seconds_count %lu\n", cum);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
