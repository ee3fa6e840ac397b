/* history: an in-memory list in execution order.
 *
 * The semantics follow IPython's history manager, which is what clients were
 * written against: "range" takes session 0 as the current one and negative
 * numbers counting back from it, start and stop are line numbers with stop
 * exclusive; "tail" returns the last n entries across sessions; "search"
 * matches a glob against the whole input and keeps the last n matches, with
 * "unique" dropping repeated inputs (the latest occurrence wins). */
#include "kernel/supervisor/history.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void history_init(struct history *h, size_t max_entries)
{
    memset(h, 0, sizeof *h);
    h->max_entries = max_entries ? max_entries : 100000;
    h->session = 1;
}

static void entry_release(struct history_entry *e)
{
    free(e->input);
    free(e->output);
}

void history_release(struct history *h)
{
    for (size_t i = 0; i < h->len; i++)
        entry_release(&h->entries[i]);
    free(h->entries);
    memset(h, 0, sizeof *h);
}

void history_new_session(struct history *h)
{
    h->session++;
}

int history_add(struct history *h, int line, const char *input)
{
    if (h->len == h->max_entries) {
        entry_release(&h->entries[0]);
        memmove(h->entries, h->entries + 1, (h->len - 1) * sizeof *h->entries);
        h->len--;
    }
    if (h->len == h->cap) {
        size_t ncap = h->cap ? h->cap * 2 : 64;
        struct history_entry *ne = realloc(h->entries, ncap * sizeof *ne);
        if (!ne)
            return -ENOMEM;
        h->entries = ne;
        h->cap = ncap;
    }
    char *copy = strdup(input);
    if (!copy)
        return -ENOMEM;
    h->entries[h->len++] =
        (struct history_entry){.session = h->session, .line = line, .input = copy};
    return 0;
}

int history_set_output(struct history *h, int line, const char *output)
{
    for (size_t i = h->len; i-- > 0;) {
        struct history_entry *e = &h->entries[i];
        if (e->session != h->session)
            break;
        if (e->line == line) {
            char *copy = strdup(output);
            if (!copy)
                return -ENOMEM;
            free(e->output);
            e->output = copy;
            return 0;
        }
    }
    return -ENOENT;
}

static json_t *entry_json(const struct history_entry *e, bool output)
{
    json_t *input = json_string(e->input);
    if (!input)
        input = json_string("");
    if (output)
        input =
            json_pack("[o, o]", input, e->output ? json_string(e->output) : json_null());
    return json_pack("[i, i, o]", e->session, e->line, input);
}

static long get_int(const json_t *req, const char *key, long dflt)
{
    json_t *v = json_object_get(req, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

json_t *history_query(const struct history *h, const json_t *req, char *err,
                      size_t errlen)
{
    const char *type = json_string_value(json_object_get(req, "hist_access_type"));
    bool output = json_is_true(json_object_get(req, "output"));
    json_t *list = json_array();
    if (!list)
        return NULL;
    if (!type || strcmp(type, "tail") == 0) {
        long n = get_int(req, "n", 10);
        size_t from = n >= 0 && (size_t)n < h->len ? h->len - (size_t)n : 0;
        for (size_t i = from; i < h->len; i++)
            json_array_append_new(list, entry_json(&h->entries[i], output));
    } else if (strcmp(type, "range") == 0) {
        long session = get_int(req, "session", 0);
        if (session <= 0)
            session += h->session;
        long start = get_int(req, "start", 1);
        json_t *stop_v = json_object_get(req, "stop");
        long stop = json_is_integer(stop_v) ? (long)json_integer_value(stop_v) : -1;
        for (size_t i = 0; i < h->len; i++) {
            const struct history_entry *e = &h->entries[i];
            if (e->session == session && e->line >= start && (stop < 0 || e->line < stop))
                json_array_append_new(list, entry_json(e, output));
        }
    } else if (strcmp(type, "search") == 0) {
        const char *pattern = json_string_value(json_object_get(req, "pattern"));
        bool unique = json_is_true(json_object_get(req, "unique"));
        json_t *n_v = json_object_get(req, "n");
        long n = json_is_integer(n_v) ? (long)json_integer_value(n_v) : -1;
        if (!pattern)
            pattern = "*";
        /* Walk from the newest so that "the last n" and "latest wins" are natural,
         * then reverse into execution order. With unique, the inputs met so far
         * (the newer matches) are kept in a hash table: a look-up per entry, not
         * a walk over every newer one, so a search stays linear in the history. */
        json_t *rev = json_array(), *seen = unique ? json_object() : NULL;
        for (size_t i = h->len; i-- > 0 && (n < 0 || (long)json_array_size(rev) < n);) {
            const struct history_entry *e = &h->entries[i];
            if (fnmatch(pattern, e->input, 0) != 0)
                continue;
            if (seen) {
                if (json_object_get(seen, e->input))
                    continue;
                json_object_set_new_nocheck(seen, e->input, json_true());
            }
            json_array_append_new(rev, entry_json(e, output));
        }
        for (size_t i = json_array_size(rev); i-- > 0;)
            json_array_append(list, json_array_get(rev, i));
        json_decref(rev);
        json_decref(seen);
    } else {
        json_decref(list);
        snprintf(err, errlen,
                 "unknown hist_access_type \"%s\" (use tail, range or search)", type);
        return NULL;
    }
    return list;
}
