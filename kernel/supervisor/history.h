/* history: the inputs (and text outputs) of executed cells, kept by the
 * supervisor so they outlive any worker. Numbered as IPython does: a session
 * number per kernel start or restart, line numbers from 1 within it. The
 * history owns its strings; queries return new JSON (caller releases). */
#ifndef SANDPIT_HISTORY_H
#define SANDPIT_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct history_entry {
    int session;
    int line;
    char *input;
    char *output; /* text/plain of the cell's result, or NULL */
};

struct history {
    struct history_entry *entries;
    size_t len, cap;
    size_t max_entries; /* oldest are dropped beyond this */
    int session;        /* the current session number, from 1 */
};

void history_init(struct history *h, size_t max_entries);
void history_release(struct history *h);

/* Starts a new session (after a restart); lines count from 1 again. */
void history_new_session(struct history *h);

/* Records an input as line `line` of the current session. 0 or -ENOMEM. */
int history_add(struct history *h, int line, const char *input);

/* Records the text output of a line of the current session (replacing any). */
int history_set_output(struct history *h, int line, const char *output);

/* Answers a history_request's content with the reply's "history" list:
 * tail (n), range (session, start, stop), search (pattern, n, unique).
 * Returns a new JSON array, or NULL with a sentence in err. */
json_t *history_query(const struct history *h, const json_t *request, char *err,
                      size_t errlen);

#endif
