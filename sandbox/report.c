/* The sandbox's report: what each layer is (a state and a sentence), filled in place
 * by the layers as they are applied, and printed or looked up by the callers.
 *
 * The layers (rlimits.c, namespaces.c, capabilities.c, landlock.c, seccomp.c) write
 * their state here and sandbox.c calls them in order: with the helpers in a file of
 * their own, a layer never needs the file that calls it.
 */
#include "sandbox/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const layer_names[SANDBOX_LAYER_COUNT] = {
    [SANDBOX_LAYER_CGROUP] = "cgroup",
    [SANDBOX_LAYER_RLIMITS] = "rlimits",
    [SANDBOX_LAYER_USERNS] = "user-namespace",
    [SANDBOX_LAYER_NETNS] = "network-namespace",
    [SANDBOX_LAYER_MOUNTNS] = "mount-namespace",
    [SANDBOX_LAYER_CAPS] = "capabilities",
    [SANDBOX_LAYER_LANDLOCK] = "landlock",
    [SANDBOX_LAYER_SECCOMP] = "seccomp",
};

void sandbox_report_init(struct sandbox_report *r)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < SANDBOX_LAYER_COUNT; i++) {
        r->layers[i].name = layer_names[i];
        r->layers[i].state = SANDBOX_PENDING;
    }
    r->n = SANDBOX_LAYER_COUNT;
}

const char *sandbox_state_name(enum sandbox_state s)
{
    switch (s) {
    case SANDBOX_PENDING:
        return "pending";
    case SANDBOX_ACTIVE:
        return "active";
    case SANDBOX_UNAVAILABLE:
        return "unavailable";
    case SANDBOX_DISABLED:
        return "disabled";
    case SANDBOX_FAILED:
        return "failed";
    }
    return "unknown";
}

const struct sandbox_layer *sandbox_report_find(const struct sandbox_report *r,
                                                const char *name)
{
    for (size_t i = 0; i < r->n && i < SANDBOX_LAYERS_MAX; i++)
        if (r->layers[i].name && strcmp(r->layers[i].name, name) == 0)
            return &r->layers[i];
    return NULL;
}

void sandbox_report_print(const struct sandbox_report *r, FILE *f)
{
    for (size_t i = 0; i < r->n && i < SANDBOX_LAYERS_MAX; i++) {
        const struct sandbox_layer *l = &r->layers[i];
        fprintf(f, "sandbox: %-17s %s%s%s\n", l->name ? l->name : "?",
                sandbox_state_name(l->state), l->detail[0] ? ": " : "", l->detail);
    }
}

void sandbox__layer_set(struct sandbox_layer *l, enum sandbox_state s, const char *fmt,
                        ...)
{
    va_list ap;
    l->state = s;
    va_start(ap, fmt);
    vsnprintf(l->detail, sizeof l->detail, fmt, ap);
    va_end(ap);
}

void sandbox__layer_note(struct sandbox_layer *l, const char *fmt, ...)
{
    char text[SANDBOX_DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);

    size_t len = strlen(l->detail);
    int n =
        snprintf(l->detail + len, sizeof l->detail - len, "%s%s", len ? "; " : "", text);
    if (n < 0 || (size_t)n >= sizeof l->detail - len)
        memcpy(l->detail + sizeof l->detail - 4, "...", 4);
}

void sandbox__format_size(char *buf, size_t size, uint64_t n)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && n >= 1024 && n % 1024 == 0) {
        n /= 1024;
        u++;
    }
    snprintf(buf, size, "%llu %s", (unsigned long long)n, units[u]);
}
