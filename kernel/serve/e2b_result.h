/* e2b_result: what a cell's Jupyter messages become on E2B's POST /execute,
 * one JSON object per line (NDJSON), as E2B's code-interpreter server makes
 * them and E2B's SDKs parse them: "number_of_executions" from execute_input,
 * "stdout"/"stderr" from stream, "result" from execute_result (the main one)
 * and display_data, "error" from error (once a cell), then the route's own
 * "keepalive" and "end_of_execution". The data flow: the kernel's iopub (and
 * the execute_reply) -> e2b_result_convert -> e2b_result_line -> the HTTP
 * response. Every message is hostile: a member of the wrong JSON type is left
 * out, never passed on, and what is kept is bounded. Pure: no I/O. Every
 * json_t returned is new (caller decrefs); its values may be shared with the
 * content it came from (jansson references): change neither afterwards. */
#ifndef SANDPIT_SERVE_E2B_RESULT_H
#define SANDPIT_SERVE_E2B_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* MIME types of a result beyond the known ones, kept in its "extra". */
#define E2B_RESULT_MAX_EXTRA 64
/* Lines of a traceback joined into the error's "traceback". */
#define E2B_RESULT_MAX_TRACEBACK 4096

/* What one POST /execute has seen of its cell so far; it lives in the request. */
struct e2b_result_cell {
    bool input_accepted; /* the kernel took the cell (busy or execute_input) */
    bool errored;        /* an error was sent: E2B sends one a cell */
    bool ended;          /* idle after the cell was taken, an abort, a restart */
};

void e2b_result_cell_init(struct e2b_result_cell *c);

/* The E2B object for one message of the cell's: msg_type and date from its
 * header (date may be NULL: no "timestamp" then), its content. *out is new,
 * or NULL when the message has nothing for the client (status, clear_output,
 * a stream that is neither stdout nor stderr, a second error, a reply that
 * is ok). c is updated: c->ended says the cell is over, and the route then
 * sends e2b_result_end(). 0; -EINVAL when msg_type is NULL, content is not
 * an object or lacks what its type needs (*out NULL: nothing to send);
 * -ENOMEM. */
int e2b_result_convert(struct e2b_result_cell *c, const char *msg_type, const char *date,
                       const json_t *content, json_t **out);

/* {"type": "error", "name", "value", "traceback"}, for an error the route
 * makes itself (the cell cut short, the context gone). NULL when out of
 * memory or a string is not UTF-8. */
json_t *e2b_result_error(const char *name, const char *value, const char *traceback);

/* {"type": "keepalive"} (every 5 s of silence) and {"type": "end_of_execution"}
 * (always the last line). NULL when out of memory. */
json_t *e2b_result_keepalive(void);
json_t *e2b_result_end(void);

/* obj as one line: compact JSON, every character past ASCII as \u escapes,
 * then "\n". ASCII because E2B's JavaScript SDK decodes each chunk of the
 * response on its own: a UTF-8 character split between two chunks would
 * reach the user as two replacement characters. *line is new (caller
 * frees), NUL-terminated; *len is its length without the NUL. 0, -EINVAL
 * (obj is NULL), -ENOMEM. */
int e2b_result_line(const json_t *obj, char **line, size_t *len);

#endif
