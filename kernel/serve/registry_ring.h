/* registry_ring: the registry's memory of iopub for the sessions that are
 * away (registry_session_away and registry_replay in registry.h are here
 * too). Internal to the registry. */
#ifndef SANDPIT_SERVE_REGISTRY_RING_H
#define SANDPIT_SERVE_REGISTRY_RING_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/serve/registry.h"

/* Whether some session of k is away (and iopub is to be kept). */
bool registry_someone_away(const struct serve_kernel *k);

/* Keeps *m (taken over; set to NULL when kept) as message k->seq, of bytes
 * bytes, within the bounds. */
void registry_ring_push(struct serve_kernel *k, struct msg **m, size_t bytes);

/* Forgets every kept message. */
void registry_ring_clear(struct serve_kernel *k);

/* Sessions away longer than REGISTRY_AWAY_S are forgotten (mono: now, on the
 * monotonic clock), and the ring once none is left. */
void registry_forget_old_sessions(struct serve_kernel *k, double mono);

#endif
