/* registry_ring: the iopub kept for the sessions that are away
 * (registry_ring.h). A message is kept only while some session of the
 * kernel is away, within REGISTRY_REPLAY_MAX messages and
 * REGISTRY_REPLAY_BYTES, oldest dropped first. */
#include "kernel/serve/registry_ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/monotime.h"

void registry_ring_clear(struct serve_kernel *k)
{
    for (size_t i = 0; i < k->ring_len; i++)
        msg_free(k->ring[(k->ring_start + i) % REGISTRY_REPLAY_MAX].m);
    k->ring_start = k->ring_len = k->ring_bytes = 0;
}

bool registry_someone_away(const struct serve_kernel *k)
{
    return k->nsessions > 0;
}

void registry_ring_push(struct serve_kernel *k, struct msg **m, size_t bytes)
{
    if (!k->ring && !(k->ring = calloc(REGISTRY_REPLAY_MAX, sizeof *k->ring)))
        return;
    while (k->ring_len && (k->ring_len == REGISTRY_REPLAY_MAX ||
                           k->ring_bytes + bytes > REGISTRY_REPLAY_BYTES)) {
        struct registry_replay_item *old = &k->ring[k->ring_start];
        k->ring_bytes -= old->bytes;
        msg_free(old->m);
        old->m = NULL;
        k->ring_start = (k->ring_start + 1) % REGISTRY_REPLAY_MAX;
        k->ring_len--;
    }
    if (bytes > REGISTRY_REPLAY_BYTES)
        return;
    struct registry_replay_item *it =
        &k->ring[(k->ring_start + k->ring_len) % REGISTRY_REPLAY_MAX];
    it->m = *m;
    *m = NULL;
    it->seq = k->seq;
    it->bytes = bytes;
    k->ring_bytes += bytes;
    k->ring_len++;
}

void registry_session_away(struct serve_kernel *k, const char *session_id,
                           unsigned long long last_seq)
{
    if (!session_id || !*session_id || strlen(session_id) >= sizeof k->sessions[0].id)
        return;
    size_t i = 0;
    while (i < k->nsessions && strcmp(k->sessions[i].id, session_id) != 0)
        i++;
    if (i == REGISTRY_SESSIONS_MAX) { /* forget the oldest */
        memmove(k->sessions, k->sessions + 1,
                (REGISTRY_SESSIONS_MAX - 1) * sizeof k->sessions[0]);
        i = REGISTRY_SESSIONS_MAX - 1;
        k->nsessions--;
    }
    if (i == k->nsessions)
        k->nsessions++;
    snprintf(k->sessions[i].id, sizeof k->sessions[i].id, "%s", session_id);
    k->sessions[i].last_seq = last_seq;
    k->sessions[i].left_at = monotime_now();
}

void registry_forget_old_sessions(struct serve_kernel *k, double mono)
{
    size_t kept = 0;
    for (size_t i = 0; i < k->nsessions; i++)
        if (mono - k->sessions[i].left_at <= REGISTRY_AWAY_S)
            k->sessions[kept++] = k->sessions[i];
    k->nsessions = kept;
    if (!registry_someone_away(k))
        registry_ring_clear(k);
}

size_t registry_replay(struct serve_kernel *k, const char *session_id,
                       void (*fn)(void *arg, const struct msg *m, unsigned long long seq),
                       void *arg)
{
    size_t i = 0, sent = 0;
    while (session_id && i < k->nsessions && strcmp(k->sessions[i].id, session_id) != 0)
        i++;
    if (!session_id || i == k->nsessions)
        return 0;
    unsigned long long last = k->sessions[i].last_seq;
    memmove(k->sessions + i, k->sessions + i + 1,
            (k->nsessions - i - 1) * sizeof k->sessions[0]);
    k->nsessions--;
    for (size_t j = 0; j < k->ring_len; j++) {
        const struct registry_replay_item *it =
            &k->ring[(k->ring_start + j) % REGISTRY_REPLAY_MAX];
        if (it->seq > last) {
            fn(arg, it->m, it->seq);
            sent++;
        }
    }
    if (!registry_someone_away(k))
        registry_ring_clear(k);
    return sent;
}
