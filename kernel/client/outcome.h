/* outcome: what one cell did, gathered from its iopub messages.
 * client_wait hands each message of the request to outcome_add; the result
 * is the cell's streams, result, error, displays and images in the order the
 * kernel sent them, ready to print as JSON (`sandpit run --json`) or to turn
 * into MCP content. Images go to a sink the caller gives (a file for `run`);
 * without one they are kept as base64. The struct owns its JSON values. */
#ifndef SANDPIT_OUTCOME_H
#define SANDPIT_OUTCOME_H

#include <jansson.h>
#include <stddef.h>

#include "protocol/msg.h"

/* Saves one image (base64 text of MIME type mime) and writes where it went
 * into path (len bytes). Returns 0, or -errno to record no file. */
typedef int (*outcome_image_fn)(void *arg, int execution_count, int index,
                                const char *mime, const char *b64, char *path,
                                size_t len);

struct outcome {
    int execution_count; /* from execute_input, then the reply; 0 if unknown */
    json_t *outputs;     /* array: one object per output, in order */
    json_t *result;      /* string: the result's text/plain, or NULL */
    json_t *error;       /* {ename, evalue, traceback}, colour codes removed */
    json_t *files;       /* array of strings: where images were saved */
    json_t *images;      /* array of {mime, data}: images kept (no sink); each
                          * output lists the indexes of its own in "images" */
    char *stdout_text;   /* all of a stream, owned, never NULL after init */
    char *stderr_text;
    size_t stdout_len, stderr_len;
    int nimages; /* images seen so far (numbers cell-N-K) */
    outcome_image_fn save_image;
    void *save_arg;
};

/* 0 or -ENOMEM; release frees everything and accepts a failed init. */
int outcome_init(struct outcome *o);
void outcome_release(struct outcome *o);

/* Records one iopub message (borrowed) of the request: stream, execute_input,
 * execute_result, display_data, update_display_data, error, clear_output.
 * Other types are ignored. Fields of the wrong type are ignored, never
 * trusted. */
void outcome_add(struct outcome *o, const struct msg *m);

/* Takes the execute_reply's status and count into account. *status is set
 * to "ok", "error" or "aborted" (borrowed static string). */
void outcome_finish(struct outcome *o, const struct msg *reply, const char **status);

/* The JSON object `sandpit run --json` prints: status, execution_count,
 * stdout, stderr, result, error, outputs, files, every text cut to max_chars
 * (0: no limit). New reference (caller releases); NULL when out of memory. */
json_t *outcome_json(const struct outcome *o, const char *status, size_t max_chars);

/* A copy of text without terminal escape sequences (colour codes). New
 * string (caller frees), or NULL when out of memory. */
char *outcome_strip_ansi(const char *text);

/* A copy of text cut to at most max_chars characters (UTF-8 code points):
 * its beginning and its end, and between them a line saying how many
 * characters were cut. With max_chars 0, or a short text, a plain copy. New
 * string (caller frees), or NULL when out of memory. */
char *outcome_cut(const char *text, size_t max_chars);

/* The traceback as one string of lines (colour codes removed). New string. */
char *outcome_traceback_text(const json_t *error);

#endif
